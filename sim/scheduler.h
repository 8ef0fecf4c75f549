/*
 * scheduler.h -- the scheduler interface: who runs in a replica's next iteration.
 *
 * A scheduler owns its replica's waiting requests (in its private state,
 * usually kv_reqq queues linked through the requests themselves); the
 * engine owns the running set.  Each replica has one instance: .priv_size
 * bytes, zeroed, options filled from YAML before .init.
 *
 * The replica owns the one batch-formation loop; the policy answers its
 * questions with plain data and is told what happened.  No scheduler forms
 * its own batch.  Forming a batch (the replica idle, the batch empty, no
 * running request scheduled):
 *   1. the running requests keep going, in admission order: each is
 *      scheduled (a decode step, or the next prefill chunk); one refused
 *      memory is made room for by preempting victims (pick_victim's, or
 *      the default below) until it fits or is itself the victim; one out of
 *      budget sits the iteration out.  Then kept(batch so far).
 *   2. admission: the replica asks next_waiting for a waiting request,
 *      schedules it, and on success calls took (the policy dequeues it)
 *      and moves it into the running set; on refusal it stops when
 *      head_blocks, or when the budget or the sequence cap is spent, else
 *      calls refused (the policy skips what it must) and asks again.  It
 *      stops when next_waiting returns NULL.
 *   3. formed(batch): the batch (r->batch[0..n), each with its
 *      batch_tokens) is final.  The replica applies it: times the
 *      iteration, runs it, applies its tokens at its end.
 * A ranked policy (rank set) has the same loop in descending rank: the
 * running requests are kept going one rank at a time, from the highest
 * (admission order within a rank), and before each rank the waiting
 * requests ranked above it are admitted (step 2, pausing at the first
 * that next_waiting hands out at or below that rank; a refusal under
 * head_blocks closes admission for the rest of the formation); then
 * kept, the waiting requests of any rank (step 2), the yields (below),
 * formed.  A ranked policy's victims, without pick_victim: the running
 * request not in the batch with the lowest rank, the newest on ties (the
 * grower included).  A preemptive one adds two rules:
 *   - a waiting request w refused memory evicts running requests not in
 *     the batch ranked below w, lowest rank first, newest on ties, until
 *     w is scheduled -- when the free memory plus theirs covers w's prefill
 *     target (at least its KV tokens + 1) at beta bytes a token; else none;
 *   - a request preempted in this formation (up to KV_FORM_EVICTED of
 *     them; a grower restarted alone is not one) is not admitted again in
 *     it: when next_waiting hands it out above the rank in hand, admission
 *     closes for the formation.
 * Yields (with rank and yields): when the sequence cap is what is full and
 * a request was admitted, each running request not in the batch that
 * yields and ranks below the highest rank admitted is preempted.  Every
 * request the policy's rules preempt (victims, evictions, yields; not a
 * grower restarted alone or rejected) leaves as victim_how says, unless
 * pick_victim said.
 * Hook by hook, when it is called, what the replica guarantees, and what
 * the hook must not do:
 *   init        once per replica, before any request.  Validate options:
 *               fill d and return KV_EINVAL to stop the run (exit 2).
 *   enqueue     a request arrived at this replica, or came back after a
 *               preemption (q->preemptions > 0, its memory already released
 *               when preempted by recompute).  Queue it; do not schedule here.
 *   next_waiting  (required) during step 2: the waiting request to try
 *               next, in the policy's order (a ranked policy: the highest
 *               rank first), or NULL to end admission.  Must not return a
 *               request it was told of by refused in this formation, nor
 *               one not in its queues.  May update the policy's own caches
 *               (drf's tally), nothing else.
 *   took        (required) q, returned by next_waiting, was scheduled
 *               (q->batch_tokens, q->kv_bytes are its share) and joins the
 *               running set right after: remove it from the queues, charge
 *               it if the policy charges at admission.
 *   refused     (optional; needed when head_blocks is 0) q, returned by
 *               next_waiting, cannot be scheduled in this formation (memory
 *               refused, or a whole prompt over the budget left): skip it
 *               (or its tenant) until the next formation.
 *   pick_victim (optional; NULL: the default victim: the newest running
 *               request, vLLM's FCFS rule, or a ranked policy's above)
 *               during step 1, running grower was refused memory: return a
 *               running request (grower itself when grower yields) and, if
 *               not the default, how it leaves (*how, KV_PREEMPT_AUTO on
 *               entry).  One already scheduled in this batch is taken back
 *               out of it first (its tokens return to the budget), as vLLM
 *               V1's PRIORITY rule does; the policies that pick by service
 *               return one not scheduled.  Reads r; must not schedule,
 *               admit or preempt (the replica does), may update only the
 *               policy's own caches.
 *   victim_how  (optional; used without pick_victim; NULL: KV_PREEMPT_AUTO)
 *               running q, not in the batch, is about to be preempted by
 *               the policy's rules: how it leaves.  Reads q as it is
 *               before the preemption (its KV held).
 *   rank        (optional; sets the ranked loop) q's rank now, >= 0, higher
 *               first: a running q's while the batch is formed (it must
 *               not change during a formation), or waiting q's, as
 *               next_waiting handed it out.  Called often: O(running) per
 *               rank present.
 *   preemptive  (plain field, with rank) 1: the two rules above.
 *   yields      (optional, with rank) running q, not in the batch, would
 *               give its seat to a request of a higher rank admitted in
 *               this formation (preempt: past its segment).
 *   kept        (optional) after step 1 (a ranked policy: after its
 *               lowest rank, admissions of higher ranks included):
 *               batch[0..n) are the requests scheduled so far (e.g. vtc
 *               charges them before admission is decided).
 *   formed      (optional) after step 2 (and the yields), every formation
 *               (n may be 0): the formed batch, for per-round accounting
 *               (drf closes a round when n > 0).
 *   dequeue     remove waiting q from your queues: the replica rejects it
 *               (it cannot fit even in an empty replica).
 *   on_done     (optional) a request of this replica finished: update
 *               accounting (e.g. per-tenant service).  NULL: no accounting.
 *   waiting     number of requests queued (for metrics and routing).
 *   fini        once at the end.
 * The loop's hooks (next_waiting to yields) read r and may update only the
 * policy's own caches; no hook schedules, admits, preempts or rejects (the
 * replica's mechanism is static to sim/replica.c).
 *
 * What a policy is.  Beside its hooks a scheduler declares, in plain
 * fields, what kind of policy it is, as vLLM V1 reduces a policy to the
 * order of its waiting queue.  The replica's macro-stepping (macro.h) reads
 * nothing else of the policy: from these it derives when a batch of decode
 * steps that the replica just formed would be formed again, unchanged, at the
 * next steps' ends, and how to account for those formations without
 * forming them again.  A declaration must be true of the policy's formations:
 *   order       how the waiting queue is ordered (enum kv_sched_order).
 *               FCFS, KEYED and FAIR policies keep the running requests
 *               going in admission order (step 1 above) and make no other
 *               decision while nobody can be admitted (a KEYED queue's
 *               order, by a key each request keeps, changes only when a
 *               request joins or leaves it, as FCFS's); a PRIORITY
 *               policy orders them by priorities that change over time and
 *               says for how long they hold (ranks_hold).  0
 *               (KV_ORDER_UNDECLARED): none of these; every iteration is
 *               an event of its own (a new policy works unchanged).
 *   yield_stops 1 when a running request that yields its own place (its
 *               pick_victim answer was itself) ends step 1: the running
 *               requests after it sit the iteration out (vLLM V1 breaks its
 *               running loop there; under fifo the grower that yields is
 *               the last running one, so it changes nothing).
 *   head_blocks 1 when a waiting request that cannot be scheduled stops
 *               admission for the iteration (no backfilling behind it:
 *               fifo, vtc, preempt); 0 when the policy tries others (drf
 *               skips the refused tenant).  With the queue's order fixed
 *               between formations (FCFS; FAIR while one tenant is
 *               backlogged) a blocked head is tried again, and refused
 *               again, by the next formation.
 * Service accounting, for a policy that charges what it
 * schedules (both optional; NULL: forming the same batch again changes
 * nothing of its state that another hook reads):
 *   charge_decodes  additive per token: n decode tokens of tenant's
 *               requests were scheduled (in the same decode-only batch,
 *               formed again); charge them exactly as the formations' n
 *               one-token charges, made one after another, would (same
 *               floating-point operations in the same order, or sums proved
 *               exact: kv_sum_exact).
 *   close_round per round: another round with the same batch as the last
 *               one formed closed at time t (a decayed history of rounds,
 *               drf): update exactly as forming it at t would (formed).
 * Accessors and bounds, required by some orders:
 *   backlogged  (FAIR with head_blocks) tenants with requests waiting on
 *               this replica: the queues are the policy's, and with one
 *               backlogged tenant its head is next whatever the service.
 *   ranks_hold  (PRIORITY) the batch just formed at t[0] is decodes of
 *               every running request, nobody admissible; the replica
 *               would form again at t[1], ..., t[K - 1], each request one
 *               token further.  Return the K' <= K such that up to
 *               t[K' - 1] the policy's priorities keep this batch's order
 *               (the order the formation gave it is the one it would give
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

enum kv_preempt {
	KV_PREEMPT_AUTO, /* swap when the cache model offloads, else recompute */
	KV_PREEMPT_RECOMPUTE, /* drop the KV; prefill prompt + generated tokens again */
	KV_PREEMPT_SWAP, /* copy the KV to host memory; copy it back to resume */
};

/*
 * Requests preempted in one formation that a preemptive policy's replica
 * remembers to keep out of it (scheduler.h above); later ones in the same
 * formation may come back in it.
 */
#define KV_FORM_EVICTED 256

/* The order of a policy's waiting queue. */
enum kv_sched_order {
	KV_ORDER_UNDECLARED = 0, /* none of the below (or not said): no macro steps */
	KV_ORDER_FCFS, /* one queue in arrival order, preempted requests back at its front (fifo) */
	KV_ORDER_FAIR, /* a FCFS queue per tenant; the backlogged tenant least served goes first (vtc, drf) */
	KV_ORDER_PRIORITY, /* by priorities that change as requests run and wait (preempt; ranks_hold) */
	KV_ORDER_KEYED, /* one queue by a key fixed per request (priority: vLLM's (priority, arrival)) */
};

struct kv_sched_ops {
	KV_PLUGIN_BASE; /* name ("fifo", ...), desc, priv_size, req_size, options */
	int (*init)(void *priv, struct kv_replica *r, struct kv_diag *d);
	void (*fini)(void *priv);
	void (*enqueue)(void *priv, struct kv_replica *r, struct kv_req *q);
	/* the replica's batch loop (above) */
	struct kv_req *(*next_waiting)(void *priv, const struct kv_replica *r);
	void (*took)(void *priv, const struct kv_replica *r, struct kv_req *q);
	void (*refused)(void *priv, const struct kv_replica *r, const struct kv_req *q); /* optional */
	struct kv_req *(*pick_victim)(void *priv, const struct kv_replica *r,
				      const struct kv_req *grower, enum kv_preempt *how); /* optional */
	void (*kept)(void *priv, const struct kv_replica *r, struct kv_req *const *batch,
		     uint32_t n); /* optional */
	void (*formed)(void *priv, const struct kv_replica *r, struct kv_req *const *batch,
		       uint32_t n); /* optional */
	enum kv_preempt (*victim_how)(void *priv, const struct kv_replica *r,
				      const struct kv_req *q); /* optional */
	/* a ranked policy (all optional; see above) */
	int (*rank)(void *priv, const struct kv_replica *r, const struct kv_req *q);
	int preemptive; /* 1: waiting requests evict lower ranks; the evicted stay out this formation */
	int (*yields)(void *priv, const struct kv_replica *r, const struct kv_req *q);
	void (*dequeue)(void *priv, struct kv_replica *r, struct kv_req *q);
	void (*on_done)(void *priv, struct kv_replica *r, struct kv_req *q); /* optional */
	uint64_t (*waiting)(const void *priv);
	/* what the policy is (see above) */
	enum kv_sched_order order; /* its waiting queue's order; 0: undeclared */
	int head_blocks; /* 1: a refused waiting request stops admission for the iteration */
	int yield_stops; /* 1: a running request that yields its place ends the running pass */
	void (*charge_decodes)(void *priv, uint32_t tenant, uint64_t n); /* optional: additive service */
	void (*close_round)(void *priv, struct kv_replica *r, kv_ns t); /* optional: per-round service */
	uint32_t (*backlogged)(const void *priv); /* FAIR with head_blocks: tenants waiting */
	uint32_t (*ranks_hold)(void *priv, struct kv_replica *r, const kv_ns *t, uint32_t K); /* PRIORITY */
};

/* The scheduler with that name (kv_plugin_find), or NULL. */
const struct kv_sched_ops *kv_sched_find(const char *name);

/*
 * Routers spread arrivals over replicas.  The engine keeps one instance per
 * run: .priv_size zeroed bytes (s->router_priv), options filled from
 * cluster.router, then init.  Hooks:
 *   pick     an arrival q (its prefix-block hashes stored) is placed: returns
 *            its replica.  The engine has brought up what the router reads
 *            of the replicas, by its flags (plugin.h KV_PLUGIN_F_ROUTE_*;
 *            s->route_flags, which init may narrow); with
 *            KV_PLUGIN_F_ROUTE_LEAST it brings up only the least outstanding
 *            view, and the router brings up any other replica's view it
 *            reads (kv__macro_sync_outstanding).  Must not change replicas.
 *   init     (optional) once, after s->n_rep is set and before the replicas
 *            are built; validates options (KV_EINVAL with d filled).
 *   fini     (optional) once at the end.
 *   on_block (optional) a KV event of a replica's cache model (cache.h):
 *            block key entered (held 1) or left (0) replica's index, with
 *            KV_BLOCK_OWN or'ed in for a key only its own request can match
 *            (an index for routing may skip those); ctx is s->router_priv.
 *            Must not touch the replicas.
 *   on_end   (optional) request q, placed on replica, ended (completed or
 *            rejected), at the event it ends.  Must not touch the replicas.
 */
struct kv_sim;
struct kv_diag;
struct kv_router_ops {
	KV_PLUGIN_BASE; /* name ("round-robin", ...), desc, priv_size, options */
	/*
	 * Returns the replica index for q, in [lo, hi): the replicas of the
	 * group the engine chose for q (engine.h struct kv_group; one group:
	 * every replica).  state is one 64-bit word per group, zero at start.
	 */
	uint32_t (*pick)(struct kv_sim *s, const struct kv_req *q, uint32_t lo, uint32_t hi,
			 uint64_t *state);
	int (*init)(void *priv, struct kv_sim *s, struct kv_diag *d); /* optional */
	void (*fini)(void *priv); /* optional */
	void (*on_block)(void *ctx, uint32_t replica, uint64_t key, int held); /* optional */
	void (*on_end)(void *priv, uint32_t replica, const struct kv_req *q); /* optional */
};

/* The router with that name (kv_plugin_find), or NULL. */
const struct kv_router_ops *kv_router_find(const char *name);

#endif /* KV_SCHEDULER_H */
