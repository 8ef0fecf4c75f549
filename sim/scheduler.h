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
 * Macro steps (engine.h).  A scheduler with KV_PLUGIN_F_MACRO_STEPS
 * (plugin.h) says: when form_batch has scheduled every running request for
 * one decode token, in running (admission) order, and admitted nobody
 * because nobody waits or because the batch is full (sequence cap or token
 * budget spent: kv_replica_schedule() refuses with KV_ERANGE before looking
 * at the request), then form_batch called again with the same requests one
 * token further (their holdings grown as planned) forms the same batch,
 * preempts nobody and changes nothing of its state that another hook reads.
 * With KV_PLUGIN_F_MACRO_REFUSED it says the same when it admitted nobody
 * because the waiting requests it tried were refused (memory, or the
 * budget left): called again, it tries the same waiting requests in the same
 * order and stops (fifo: the head blocks the queue; vtc: while one tenant
 * is backlogged, its macro_steps hook refusing the run otherwise).  The engine repeats
 * their memory refusals at every formation of the run (replica.c
 * macro_refuse), so the pool's refusal counters are the per-step engine's.
 * The two optional hooks below widen or qualify that:
 *   macro_steps (optional) the batch just formed at t[0] qualifies as
 *               above, except perhaps for its order; the engine would call
 *               form_batch again at t[1], ..., t[K - 1] (each step's end).
 *               Return the K' <= K such that the calls at t[1..K'-1] form the
 *               same batch in the same order and admit and preempt nobody
 *               (e.g. K' is bounded by the step at which a waiting
 *               request's priority would overtake a running one).  The
 *               engine runs no macro step when K' < 2.  May record in its
 *               private state what macro_apply needs (the batch's counts).
 *               NULL: K' = K when the batch is in running order, else 1.
 *   macro_apply (optional) the calls of form_batch at t[0..n-1] (n >= 1, in
 *               a run macro_steps allowed, in order, each forming the same
 *               batch) happened: update the private state exactly as those
 *               n calls would, bit for bit (same floating-point operations
 *               in the same order, or sums proved exact: kv_sum_exact).
 *               The engine calls it lazily, before any hook of this
 *               replica runs and before a sample reads the state, with
 *               simulated time not at t[].  NULL: the calls change nothing.
 *
 * Hooks must not allocate per call, must not touch other replicas, and must
 * not change simulated time.
 */
#ifndef KV_SCHEDULER_H
#define KV_SCHEDULER_H

#include "plugin.h"

struct kv_req;
struct kv_replica;

struct kv_sched_ops {
	KV_PLUGIN_BASE; /* name ("fifo", ...), desc, priv_size, req_size, options */
	int (*init)(void *priv, struct kv_replica *r, struct kv_diag *d);
	void (*fini)(void *priv);
	void (*enqueue)(void *priv, struct kv_replica *r, struct kv_req *q);
	void (*form_batch)(void *priv, struct kv_replica *r);
	void (*dequeue)(void *priv, struct kv_replica *r, struct kv_req *q);
	void (*on_done)(void *priv, struct kv_replica *r, struct kv_req *q); /* optional */
	uint64_t (*waiting)(const void *priv);
	uint32_t (*macro_steps)(void *priv, struct kv_replica *r, const kv_ns *t, uint32_t K); /* optional */
	void (*macro_apply)(void *priv, struct kv_replica *r, const kv_ns *t, uint32_t n); /* optional */
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
