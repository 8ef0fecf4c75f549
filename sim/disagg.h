/*
 * disagg.h -- prefill/decode disaggregation: prefill replicas hand each
 * request, after the prefill iteration that emits its first token, to a
 * decode replica over a KV transfer link (kvlink.h).
 *
 * The semantics are DistServe's (Zhong et al., OSDI 2024, section 4: the
 * prefill instance computes the prompt and the first token, the decoding
 * instance receives the KV cache and decodes) and vLLM's disaggregated
 * prefill (docs/features/disagg_prefill.md: the prefill instance runs with
 * max_tokens 1, its KV moves through a connector to the decode instance):
 *
 *   1. A request routed to a prefill-role replica runs its prefill there.
 *      The iteration that completes the prefill emits the first token
 *      (TTFT); the request then leaves the replica's running set and its
 *      scheduler's accounting (replica.c handoff), keeping its device
 *      holding.  A request with one output token ends there.
 *   2. The engine picks a decode replica among the decode groups serving
 *      the prefill group's model (placement: least-kv, the least
 *      (reserved + inbound) / pool fraction, lowest index on ties; or
 *      round-robin per prefill group) and submits the KV,
 *      B = prompt tokens x the model's KV bytes per token, to the link
 *      between them (topology: one link per prefill replica (its NIC,
 *      the default), per (prefill, decode) replica pair, or one shared
 *      by the whole prefill group).  With layerwise, the transfer streams
 *      the model's layers as the prefill iteration produces them (kvlink.h).
 *   3. When the last byte arrives (one KV_EV_XFER_DONE event per
 *      transfer, at a time fixed at submission) the prefill replica frees
 *      the request's blocks -- vLLM's NixlConnector and MooncakeConnector
 *      answer delay_free_blocks for a length-capped prefill and free the
 *      blocks once the decode side has read them -- and
 *      the request joins the decode replica's scheduler queue, its KV
 *      landed but not on the device (q->xfer_bytes).  It is admitted when
 *      the scheduler takes it and memory allows: its holding is reserved
 *      as for a swapped-in request, without a copy.  Then it decodes.
 *
 * Invariants (KV_CHECK): a request is never scheduled before its transfer
 * completes (replica.c kv__replica_schedule); every byte submitted to a
 * link arrives (link counters) and every byte that arrives is admitted on
 * its decode replica or dropped there and counted (a request rejected for
 * the pool before admission); at the end every link is empty.
 *
 * Macro-stepping: a transfer's completion is an event that cuts the decode
 * replica's run (kv__replica_arrive) and the prefill replica's
 * (kv__replica_xfer_release); least-kv placement picks as if every
 * candidate's pending steps were brought up to the event first (it brings
 * up those whose lower bound could win, below); prefill replicas never run
 * decode steps, so they never macro-step.
 *
 * least-kv without a scan: a decode replica's load only grows while its
 * pool frees nothing and no transfer to it lands (its pending macro steps
 * only reserve: macro.h), so a load read earlier is a lower bound of its
 * load now.  The placement keeps these bounds in a tournament tree
 * (mintree.h) over the candidates, lowered to the load read then whenever
 * a pool frees (pool.h kv__pool_freed) or a transfer lands, and takes the
 * root: brought up and read, its load either equals its bound (every other
 * candidate's load is at least its bound, which is at least this one, and
 * a tie goes to the lower index in both: exactly the scan's pick) or
 * exceeds it (the bound is raised, the next root tried).  With autoscaling
 * (a candidate's eligibility changes without an event here) it scans.
 */
#ifndef KV_DISAGG_H
#define KV_DISAGG_H

#include "kv_common.h"
#include "kvlink.h"
#include "mintree.h"
#include "pool.h"

struct kv_sim;
struct kv_replica;
struct kv_event;

/* Which link a transfer takes (cluster.kv_transfer.topology). */
enum kv_xfer_topo {
	KV_XFER_PREFILL, /* one link per prefill replica: its NIC (default) */
	KV_XFER_PAIR, /* one link per (prefill replica, decode replica) pair */
	KV_XFER_SHARED, /* one link for the whole prefill group: a shared fabric */
};
extern const char *const kv_xfer_topo_names[]; /* "prefill", "pair", "shared", NULL */

/* Where a prefill group sends a request to decode (cluster.kv_transfer.placement). */
enum kv_place {
	KV_PLACE_LEAST_KV, /* least (reserved + inbound bytes) / pool bytes (default) */
	KV_PLACE_ROUND_ROBIN, /* the decode replicas in turn */
};
extern const char *const kv_place_names[]; /* "least-kv", "round-robin", NULL */

/* 400 Gb/s: one NDR InfiniBand or 400GbE RoCE port (NVIDIA ConnectX-7), bytes/s */
#define KV_XFER_DEFAULT_BW_BYTES_S (50ULL * 1000 * 1000 * 1000)
/* per-transfer latency: RDMA round trip plus the connector's handshake, ns */
#define KV_XFER_DEFAULT_LATENCY_NS (20 * KV_NS_PER_US)

/* A prefill group's KV transfer settings (cluster.kv_transfer, or the group's). */
struct kv_xfer_cfg {
	uint64_t bw_bytes_s; /* one link's bandwidth, bytes/s; 0 reads as the default (50 GB/s) */
	kv_ns latency_ns; /* one transfer's latency, ns; default 20 us (set: has_latency) */
	int has_latency; /* latency_ns was given (0 is a valid latency) */
	int layerwise; /* 1: stream layer by layer during the prefill (default 0) */
	enum kv_xfer_topo topo; /* which link a transfer takes, default prefill */
	enum kv_place place; /* decode placement, default least-kv */
};

/* One prefill group's view: its replicas, its decode candidates and its links. */
struct kv_pd_group {
	const char *name; /* the group's name (cluster.groups[i].name) */
	uint32_t first, count; /* its replicas: rep[first .. first + count) */
	uint32_t *dec; /* decode replica indices it sends to */
	uint32_t n_dec; /* entries of dec */
	const char *dec_name; /* the (first) decode group's name */
	uint32_t link0; /* its first link in kv_disagg.link */
	uint32_t n_link; /* its links */
	uint32_t rr; /* round-robin position in dec */
	struct kv_xfer_cfg x; /* its settings, defaults resolved */
	uint32_t pieces; /* layer-wise pieces (the model's layers), 1 when off */
	uint64_t token_bytes; /* KV bytes per token moved (the group's model, fp16) */
	uint32_t tree; /* least-kv: its candidates' tree in kv_disagg.tree, UINT32_MAX: none (a scan); set with kv_disagg.trees_set */
};

/* The run's disaggregation state (kv_sim.pd). */
struct kv_disagg {
	struct kv_pd_group *pg; /* prefill groups */
	uint32_t n_pg;
	uint32_t *pg_of; /* by replica: its prefill group's index in pg, UINT32_MAX when none */
	struct kv_kvlink *link; /* every link, prefill groups' in order */
	uint32_t n_link;
	uint64_t sent, landed; /* transfers submitted, completed */
	kv_ns xfer_ns_sum; /* sum of the transfer times (prefill end -> KV arrival), ns */
	kv_ns xfer_ns_max; /* the longest, ns */
	/*
	 * least-kv without a scan (disagg.c place): per distinct candidate
	 * list, a tournament tree over its replicas of lower bounds of their
	 * loads (the double's bits: a non-negative double orders as its bits)
	 */
	struct kv_mintree *tree; /* n_tree trees, keys indexed as the list (kv_pd_group.dec) */
	uint32_t n_tree;
	uint32_t *tree_of; /* by replica: its tree, UINT32_MAX when none */
	uint32_t *pos_of; /* by replica: its leaf in that tree */
	struct kv_pool_watch watch; /* the decode pools freed since the last placement */
	int trees_set; /* the trees were set up (at the first placement: autoscaling is known) */
};

/*
 * Builds s->pd when a group has the prefill role (NULL otherwise, and
 * nothing else changes): checks that each prefill group has a decode group
 * serving its model (KV_EINVAL naming cluster.groups otherwise), makes the
 * links, marks the prefill replicas.  0 or a code with s->diag filled.
 */
int kv__disagg_init(struct kv_sim *s);
void kv__disagg_release(struct kv_sim *s);

/* Sends the requests prefill replica r handed off this iteration (r->handoff). */
void kv__disagg_send(struct kv_sim *s, struct kv_replica *r);

/*
 * Transfer ev (KV_EV_XFER_DONE) arrived: frees its prefill holding, queues
 * the request on its decode replica.  *p and *d: the two replicas, which
 * may form a batch now.
 */
void kv__disagg_done(struct kv_sim *s, const struct kv_event *ev, struct kv_replica **p,
		     struct kv_replica **d);

/* End-of-run conservation checks (aborts when broken). */
void kv__disagg_final(const struct kv_sim *s);

#endif /* KV_DISAGG_H */
