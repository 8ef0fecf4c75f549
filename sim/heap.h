/*
 * heap.h -- the event queue: a binary min-heap of events ordered by
 * (time, push time, sequence number assigned at insertion).
 *
 * Ties in time pop in insertion order, so a run is deterministic whatever
 * the heap's internal layout.  The push time is the time of the last event
 * popped when the event was pushed (kv_heap_push), so (push time, seq) is
 * the insertion order itself; kv_heap_push_at names an explicit push time:
 * the macro-stepping engine (macro.h) queues the end of a run of decode
 * steps where the per-step engine would have queued its last step, and the
 * order stays that of the per-step run; the engine queues arrivals at push
 * time 0, ahead of every other event of their instant (engine.h).  Events are small values stored inline in one
 * flat array that doubles when full (amortised O(1), no allocation once the
 * high-water mark is reached).  push and pop are O(log n).
 */
#ifndef KV_HEAP_H
#define KV_HEAP_H

#include "kv_common.h"

struct kv_event {
	kv_ns t_ns; /* when the event fires */
	kv_ns p_ns; /* push time: the last popped event's time at kv_heap_push, or kv_heap_push_at's */
	uint64_t seq; /* insertion sequence number, set by kv_heap_push */
	uint32_t kind; /* event kind (the engine's enum) */
	uint32_t target; /* replica index or other target */
	uint64_t arg; /* kind-specific argument */
};

struct kv_heap {
	struct kv_event *ev; /* ev[0..n) is a heap */
	size_t n; /* events queued */
	size_t cap; /* capacity of ev */
	uint64_t next_seq; /* sequence number for the next push */
	kv_ns now_ns; /* time of the last event popped (0 before the first) */
};

/* The heap's order: does a fire before b?  (time, push time, seq), lexicographic. */
static inline int kv_event_before(const struct kv_event *a, const struct kv_event *b)
{
	if (a->t_ns != b->t_ns)
		return a->t_ns < b->t_ns;
	if (a->p_ns != b->p_ns)
		return a->p_ns < b->p_ns;
	return a->seq < b->seq;
}

void kv_heap_init(struct kv_heap *h, size_t initial_cap);
void kv_heap_release(struct kv_heap *h);

/* Queues an event (its seq is overwritten). */
void kv_heap_push(struct kv_heap *h, kv_ns t_ns, uint32_t kind, uint32_t target,
		  uint64_t arg);

/*
 * Queues an event as if pushed at p_ns (<= t_ns; earlier than the last popped
 * time when a run of steps is cut short);
 * returns its seq.
 */
uint64_t kv_heap_push_at(struct kv_heap *h, kv_ns t_ns, kv_ns p_ns, uint32_t kind,
			 uint32_t target, uint64_t arg);

/* Removes the earliest event into *out; returns 0 when empty, 1 otherwise. */
int kv_heap_pop(struct kv_heap *h, struct kv_event *out);

/* The earliest event without removing it, or NULL when empty. */
static inline const struct kv_event *kv_heap_peek(const struct kv_heap *h)
{
	return h->n ? &h->ev[0] : NULL;
}

#endif /* KV_HEAP_H */
