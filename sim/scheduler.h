/*
 * scheduler.h -- the scheduler interface: who runs in a replica's next iteration.
 *
 * A scheduler owns its replica's waiting requests (in its private state,
 * usually kv_reqq queues linked through the requests themselves); the
 * engine owns the running set.  Each replica has one instance: .priv_size
 * bytes, zeroed, options filled from YAML before .init.
 *
 * Hook by hook, what the engine guarantees and what the hook must do:
 *   init        once per replica, before any request.  Validate options:
 *               fill d and return KV_EINVAL to stop the run (exit 2).
 *   enqueue     a request arrived at this replica, or came back after a
 *               preemption (q->preemptions > 0, its memory already released
 *               when preempted by recompute).  Queue it; do not schedule here.
 *   form_batch  the replica is idle and must form its next iteration.
 *               The batch is empty and every running request is unscheduled.
 *               Call kv_replica_schedule() for the requests to run, in the
 *               order of your policy: running ones first to keep them going
 *               (or preempt with kv_replica_preempt()), then waiting ones to
 *               admit (kv_replica_admit() removes nothing from your queues:
 *               dequeue before you call it).  An empty batch with waiting
 *               requests means none can run now; the engine rejects a
 *               request that cannot fit even in an empty replica.
 *   dequeue     remove waiting q from your queues: the engine rejects it
 *               (it cannot fit even in an empty replica).
 *   on_done     (optional) a request of this replica finished: update
 *               accounting (e.g. per-tenant service).  NULL: no accounting.
 *   waiting     number of requests queued (for metrics and routing).
 *   fini        once at the end.
 *
 * What a policy is.  Beside its hooks a scheduler declares, in plain
 * fields, what kind of policy it is, as vLLM V1 reduces a policy to the
 * order of its waiting queue.  The replica's macro-stepping (macro.h) reads
 * nothing else of the policy: from these it derives when a batch of decode
 * steps that form_batch just formed would be formed again, unchanged, at the
 * next steps' ends, and how to account for those formations without
 * calling form_batch.  A declaration must be true of form_batch:
 *   order       how the waiting queue is ordered (enum kv_sched_order).
 *               FCFS and FAIR policies keep the running requests going in
 *               admission order (kv_replica_keep_running) and make no
 *               other decision while nobody can be admitted; a PRIORITY
 *               policy orders them by priorities that change over time and
 *               says for how long they hold (ranks_hold).  0
 *               (KV_ORDER_UNDECLARED): none of these; every iteration is
 *               an event of its own (a new policy works unchanged).
 *   head_blocks 1 when a waiting request that cannot be scheduled stops
 *               admission for the iteration (no backfilling behind it:
 *               fifo, vtc, preempt); 0 when the policy tries others (drf
 *               skips the refused tenant).  With the queue's order fixed
 *               between formations (FCFS; FAIR while one tenant is
 *               backlogged) a blocked head is tried again, and refused
 *               again, by the next formation.
 * Service accounting, for a policy whose form_batch charges what it
 * schedules (both optional; NULL: forming the same batch again changes
 * nothing of its state that another hook reads):
 *   charge_decodes  additive per token: n decode tokens of tenant's
 *               requests were scheduled (in the same decode-only batch,
 *               formed again); charge them exactly as form_batch's n
 *               one-token charges, made one after another, would (same
 *               floating-point operations in the same order, or sums proved
 *               exact: kv_sum_exact).
 *   close_round per round: another round with the same batch as the last
 *               one formed closed at time t (a decayed history of rounds,
 *               drf): update exactly as form_batch forming it at t would.
 * Accessors and bounds, required by some orders:
 *   backlogged  (FAIR with head_blocks) tenants with requests waiting on
 *               this replica: the queues are the policy's, and with one
 *               backlogged tenant its head is next whatever the service.
 *   ranks_hold  (PRIORITY) the batch just formed at t[0] is decodes of
 *               every running request, nobody admissible; the replica
 *               would form again at t[1], ..., t[K - 1], each request one
 *               token further.  Return the K' <= K such that up to
 *               t[K' - 1] the policy's priorities keep this batch's order
 *               (the order form_batch gave it is the one it would give
 *               again) and no waiting request's priority overtakes a
 *               running one's.  Not derivable from a declaration: the
 *               priorities move with each token run (demotions, segments)
 *               and each nanosecond waited (aging), by the policy's own
 *               rules.  0 or 1: no run.  Must not change the state.
 * ranks_hold is called as the run starts; charge_decodes and close_round
 * lazily, before any other hook of this replica runs and before a sample
 * reads the state, with simulated time not at t.
 *
 * Hooks must not allocate per call, must not touch other replicas, and must
 * not change simulated time.
 */
#ifndef KV_SCHEDULER_H
#define KV_SCHEDULER_H

#include "plugin.h"

struct kv_req;
struct kv_replica;

/* The order of a policy's waiting queue. */
enum kv_sched_order {
	KV_ORDER_UNDECLARED = 0, /* none of the below (or not said): no macro steps */
	KV_ORDER_FCFS, /* one queue in arrival order, preempted requests back at its front (fifo) */
	KV_ORDER_FAIR, /* a FCFS queue per tenant; the backlogged tenant least served goes first (vtc, drf) */
	KV_ORDER_PRIORITY, /* by priorities that change as requests run and wait (preempt; ranks_hold) */
};

struct kv_sched_ops {
	KV_PLUGIN_BASE; /* name ("fifo", ...), desc, priv_size, req_size, options */
	int (*init)(void *priv, struct kv_replica *r, struct kv_diag *d);
	void (*fini)(void *priv);
	void (*enqueue)(void *priv, struct kv_replica *r, struct kv_req *q);
	void (*form_batch)(void *priv, struct kv_replica *r);
	void (*dequeue)(void *priv, struct kv_replica *r, struct kv_req *q);
	void (*on_done)(void *priv, struct kv_replica *r, struct kv_req *q); /* optional */
	uint64_t (*waiting)(const void *priv);
	/* what the policy is (see above) */
	enum kv_sched_order order; /* its waiting queue's order; 0: undeclared */
	int head_blocks; /* 1: a refused waiting request stops admission for the iteration */
	void (*charge_decodes)(void *priv, uint32_t tenant, uint64_t n); /* optional: additive service */
	void (*close_round)(void *priv, struct kv_replica *r, kv_ns t); /* optional: per-round service */
	uint32_t (*backlogged)(const void *priv); /* FAIR with head_blocks: tenants waiting */
	uint32_t (*ranks_hold)(void *priv, struct kv_replica *r, const kv_ns *t, uint32_t K); /* PRIORITY */
};

/* The scheduler with that name (kv_plugin_find), or NULL. */
const struct kv_sched_ops *kv_sched_find(const char *name);

/* Routers spread arrivals over replicas. */
struct kv_sim;
struct kv_router_ops {
	KV_PLUGIN_BASE; /* name ("round-robin", ...), desc; no state, no options */
	/* Returns the replica index for q; state is one 64-bit word per sim. */
	uint32_t (*pick)(struct kv_sim *s, const struct kv_req *q, uint64_t *state);
};

/* The router with that name (kv_plugin_find), or NULL. */
const struct kv_router_ops *kv_router_find(const char *name);

#endif /* KV_SCHEDULER_H */
