/*
 * kvlink.h -- a KV transfer link: one directed pipe between a prefill
 * replica and a decode replica (or a shared fabric port) with a bandwidth
 * and a latency, on which KV transfers queue first-in first-out.
 *
 * Model.  A link has bandwidth W (bytes/s) and latency L (ns).  Putting B
 * bytes on the wire takes ser(B) = ceil(B * 1e9 / W) ns (exact, 128-bit).
 * A transfer k submitted with its bytes ready at r_k starts at
 *
 *   s_k = max(r_k, f_{k-1})         f: the time the link finishes the previous one
 *   e_k = s_k + ser(B_k)            the last byte leaves (the link is free again)
 *   d_k = e_k + L                   the last byte arrives: the transfer is done
 *
 * The latency is propagation and setup: it does not hold the link, so back
 * to back transfers pipeline (LogP's L against its gap g).
 *
 * Layer-wise streaming (pieces P > 1): the KV of a P-layer model exists
 * layer by layer while the prefill runs, the first layer's at r_k (first_ns)
 * and the last layer's at q_k (last_ns).  The transfer is P equal pieces;
 * piece p may leave once its layer exists and the previous piece has left,
 * so the last byte leaves at
 *
 *   e_k = max(s_k + ser(B_k), q_k + ser(B_k - (P-1) * floor(B_k / P)))
 *
 * (the pipeline's end: the link's work from the start, or the last piece
 * from its readiness; with ready times and remaining bytes both linear in
 * the piece index no interior piece can end later).  With P = 1 the caller
 * passes r_k = q_k and the first form is all there is.
 *
 * Why FIFO and not a fair share of bandwidth: under FIFO a transfer's
 * completion d_k is fixed when it is submitted (later transfers queue
 * behind it and cannot slow it), so the simulator schedules one event per
 * transfer and never moves it, and macro-stepping can treat it as a fixed
 * cut point.  Processor sharing would move every in-flight completion on
 * each arrival.  Both are work-conserving: the link's busy time, the bytes
 * it moves and the time the last transfer ends are the same under either;
 * only the order in which concurrent transfers finish differs.
 *
 * Storage: in-flight transfers live in a ring buffer whose capacity doubles
 * when full (no allocation once the high-water mark is reached).
 *
 * Invariants (checked by kv_kvlink_check, always on):
 *   bytes_in == bytes_out + bytes_dropped + bytes in flight   (conservation)
 *   completions pop in submission order with non-decreasing d_k
 *   busy_ns == sum of ser(B_k) over every transfer submitted
 */
#ifndef KV_KVLINK_H
#define KV_KVLINK_H

#include <stddef.h>
#include <stdint.h>

#include "kv_common.h"

/* One transfer's request. */
struct kv_kvlink_xfer {
	uint64_t bytes; /* KV bytes to move, >= 0 */
	kv_ns first_ns; /* the first byte (first layer's KV) exists, ns */
	kv_ns last_ns; /* the last layer's KV exists (== first_ns when pieces <= 1), ns */
	uint32_t pieces; /* 0 or 1: one piece; P > 1: P layer-wise pieces */
	uint64_t tag; /* the caller's handle, returned on completion */
};

/* One transfer in flight (a ring slot). */
struct kv_kvlink_slot {
	uint64_t tag; /* the caller's handle */
	uint64_t bytes; /* its bytes */
	kv_ns done_ns; /* d_k: its last byte arrives */
};

struct kv_kvlink {
	uint64_t bw_bytes_s; /* W, bytes/s, > 0 */
	kv_ns latency_ns; /* L, ns */
	kv_ns free_ns; /* f: the link finishes serialising the last queued transfer */
	kv_ns last_submit_ns; /* the latest last_ns submitted (submissions are in time order) */
	struct kv_kvlink_slot *ring; /* in-flight transfers, oldest at head */
	size_t cap; /* ring capacity, a power of two */
	size_t head; /* index of the oldest in-flight transfer */
	size_t n; /* transfers in flight */
	/* counters, since init */
	uint64_t n_submitted; /* transfers submitted */
	uint64_t n_done; /* transfers completed (popped) */
	uint64_t n_dropped; /* transfers dropped (kv_kvlink_drop_all) */
	uint64_t bytes_in; /* bytes submitted */
	uint64_t bytes_out; /* bytes delivered */
	uint64_t bytes_dropped; /* bytes dropped on purpose */
	kv_ns busy_ns; /* sum of ser(B): time the link carried bytes, ns */
	kv_ns queue_ns; /* sum of s_k - first_ns: time transfers waited for the link, ns */
	kv_ns max_queue_ns; /* the longest such wait, ns */
	kv_ns xfer_ns; /* sum of d_k - last_ns: time from the last KV to its arrival, ns */
	size_t max_in_flight; /* the most transfers in flight at once */
};

/* What kv_kvlink_submit decided for one transfer. */
struct kv_kvlink_times {
	kv_ns start_ns; /* s_k: the first byte leaves */
	kv_ns end_ns; /* e_k: the last byte leaves */
	kv_ns done_ns; /* d_k: the last byte arrives */
};

/* Sets up a link; bw_bytes_s must be > 0.  initial_cap: ring slots to start with. */
void kv_kvlink_init(struct kv_kvlink *l, uint64_t bw_bytes_s, kv_ns latency_ns,
		  size_t initial_cap);
void kv_kvlink_release(struct kv_kvlink *l);

/* ser(B): ns to put bytes on a link of bw_bytes_s bytes/s, rounded up. */
kv_ns kv_kvlink_ser_ns(uint64_t bw_bytes_s, uint64_t bytes);

/*
 * Queues a transfer behind every earlier one and returns its times in *out
 * (may be NULL).  Submissions come in non-decreasing x->last_ns; first_ns
 * <= last_ns.  Amortised O(1), no allocation once the ring is big enough.
 */
void kv_kvlink_submit(struct kv_kvlink *l, const struct kv_kvlink_xfer *x,
		    struct kv_kvlink_times *out);

/* d_k of the oldest transfer in flight, or KV_NS_NEVER when none. */
kv_ns kv_kvlink_next_done_ns(const struct kv_kvlink *l);

/*
 * A whole transfer of `bytes` ready at now that nobody waits for (a tier's
 * asynchronous write): the link's time and every counter as
 * kv_kvlink_submit's, but delivered at once (bytes_out, n_done), so it takes
 * no ring slot and is never popped; max_in_flight does not count it.
 * ser_ns must be kv_kvlink_ser_ns(bw_bytes_s, bytes), which a caller sending
 * blocks of one size computes once (a 128-bit division saved per transfer).
 * Returns d_k.
 */
kv_ns kv_kvlink_submit_untracked(struct kv_kvlink *l, uint64_t bytes, kv_ns ser_ns, kv_ns now);

/*
 * Pops the oldest transfer if it is done by now_ns: returns 1 and its tag
 * and bytes (either pointer may be NULL), or 0 when none is done.
 */
int kv_kvlink_pop(struct kv_kvlink *l, kv_ns now_ns, uint64_t *tag, uint64_t *bytes);

/* Drops every transfer in flight (counted in n_dropped, bytes_dropped); returns how many. */
size_t kv_kvlink_drop_all(struct kv_kvlink *l);

/* busy_ns / horizon_ns: the fraction of the horizon the link carried bytes (0 when horizon 0). */
double kv_kvlink_utilisation(const struct kv_kvlink *l, kv_ns horizon_ns);

/* The conservation invariant; aborts with a message when broken. */
void kv_kvlink_check(const struct kv_kvlink *l);

#endif /* KV_KVLINK_H */
