/*
 * engine.h -- the discrete-event engine: the simulator (struct kv_sim), its
 * configuration and the request; a replica's state is in replica.h.
 *
 * One event queue (heap.h) drives everything: the next arrival, the end of
 * each replica's iteration, timeseries samples.  Each replica runs at most
 * one iteration at a time (continuous batching, iteration-level scheduling
 * as in Orca and vLLM).  When an iteration ends, its tokens are applied
 * (prefill chunks extend the KV cache; the iteration that completes a
 * prefill, and every decode step, emits one output token), finished
 * requests leave and release their memory, then the scheduler forms the next
 * batch under a token budget and a sequence cap, the cache model reserves
 * memory for it, and the perf model gives its duration.
 *
 * Token accounting, per request: kv_tokens is the KV held; a request is in
 * prefill while kv_tokens < prefill_target (the prompt, or prompt plus the
 * tokens generated so far after a preemption by recompute), else it decodes
 * one token per iteration.  So a lone request with prompt P and T >= 1
 * outputs takes ceil(P / budget) prefill iterations (1 when P fits) plus
 * T - 1 decode iterations, and its KV peaks at P + T - 1 tokens.
 *
 * Invariants checked always (KV_CHECK): time never goes backwards; every
 * arrival ends exactly once, completed or rejected with a reason; a
 * finished request holds no memory; at the end every pool is entirely free
 * and the live-token counters are zero.  Requests live in pages of stable
 * slots (pointers never move) recycled through a free list, so memory is
 * proportional to requests in flight, not to the trace; nothing is
 * allocated per event or per token once the high-water mark is reached.
 *
 * Macro-stepping (exact; off with cfg->exact_steps, `--exact-steps`): a
 * replica's run of identical decode steps is one event, its steps applied
 * lazily and exactly before anything reads the replica (macro.h).
 */
#ifndef KV_ENGINE_H
#define KV_ENGINE_H

#include "autoscale.h"
#include "cache.h"
#include "disagg.h"
#include "gate.h"
#include "heap.h"
#include "memory.h"
#include "metrics.h"
#include "mintree.h"
#include "perf.h"
#include "scheduler.h"
#include "serving.h"
#include "reuse.h"
#include "session.h"
#include "slots.h"
#include "source.h"

#include <signal.h>

#define KV_NIL UINT32_MAX

enum kv_req_state {
	KV_REQ_FREE = 0, /* slot unused */
	KV_REQ_WAITING, /* queued in its replica's scheduler */
	KV_REQ_RUNNING, /* admitted: in the replica's running set */
	KV_REQ_FRONTEND, /* routed, in its replica's front end: not yet queued (frontend.h) */
	KV_REQ_HANDOFF, /* its prefill done on a prefill replica: its KV waits for or is on a link (disagg.h) */
};

/* Why a request ended. */
#define KV_END_MAP(X)                                                         \
	X(COMPLETED, "completed")                                             \
	X(REJECTED_CONTEXT, "prompt plus output exceeds the model's context") \
	X(REJECTED_POOL, "KV cache larger than the whole memory pool")

enum kv_end {
#define KV__END_ENUM(name, msg) KV_END_##name,
	KV_END_MAP(KV__END_ENUM)
#undef KV__END_ENUM
	KV_END_N
};
const char *kv_end_name(enum kv_end e);

struct kv_req {
	/* Hot: read or written by every iteration; kept in the first cache line. */
	_Alignas(64) uint64_t kv_tokens; /* KV tokens held now */
	uint64_t prefill_target; /* KV tokens to build before decoding */
	uint64_t kv_cap_tokens; /* tokens the current holding fits (cache model sets; the engine skips reserve below it) */
	uint64_t generated; /* output tokens emitted so far */
	uint64_t output_tokens; /* tokens to generate */
	uint32_t batch_tokens; /* tokens scheduled in the current iteration, 0 if none */
	uint32_t state; /* enum kv_req_state */
	uint32_t run_idx; /* index in the replica's running array */
	uint32_t replica; /* replica index */
	kv_ns first_token_ns; /* when the first output token was emitted, KV_NS_NEVER before */
	/* Cold: arrival, completion, accounting. */
	uint64_t id; /* arrival order, from 0 */
	kv_ns arrival_ns; /* arrival time */
	kv_ns finish_ns; /* when it ended */
	uint64_t prompt_tokens; /* input tokens */
	uint64_t kv_bytes; /* pool bytes held now (maintained by the cache model) */
	uint64_t cache[4]; /* cache-model private words */
	kv_ns mem_t0_ns; /* time memtime was last brought up to date */
	double memtime_Bs; /* integral of kv_bytes over time, byte-seconds */
	double cost; /* Cost = alpha*M + beta*L*T, byte-steps (see docs/cost-model.md) */
	uint32_t tenant; /* tenant index */
	uint32_t preemptions; /* times preempted */
	uint32_t slot; /* own slot index */
	uint32_t q_prev, q_next; /* scheduler queue links (slots), KV_NIL at ends */
	int32_t priority; /* vLLM's request priority: lower is served first (sched priority), default 0 */
	uint32_t leaving; /* 1 while its replica releases it for good (it ended, or its KV went to a decode replica): cache.h release */
	unsigned long origin_line; /* trace line, 0 when generated */
	uint64_t swapped_bytes; /* KV bytes held in host memory after a swap-out, 0 when none */
	uint32_t hash_page; /* first page of its prefix-block hashes (KV_NIL: none) */
	uint32_t n_hashes; /* prefix-block hashes (Mooncake hash_ids), 512 tokens each */
	uint64_t batch_extra; /* extra_prefill_tokens its batch entry charged this iteration (a withdrawal gives them back) */
	kv_ns fe_in_ns; /* client arrival -> its scheduler: the front end's way in (frontend.h), ns */
	kv_ns queued_ns; /* when it last joined a scheduler's queue (queueing statistics), ns */
	/* prefill/decode disaggregation (disagg.h); all 0 when the run has none */
	uint64_t xfer_bytes; /* KV bytes landed from its transfer, not yet on the device; nonzero marks it */
	kv_ns xfer_done_ns; /* when its KV transfer completed: it is never scheduled before */
	kv_ns xfer_ns; /* its prefill's end -> its KV's arrival at the decode replica, ns */
	uint32_t session; /* its session: the slot of a generated one (session.h), or its prefix chain (the chain's first request's index, reuse.h); KV_NIL: none */
	uint32_t turn; /* its turn in its session, 0 first (0 outside sessions) */
};

struct kv_sim;


enum kv_oversize { KV_OVERSIZE_ERROR, KV_OVERSIZE_REJECT, KV_OVERSIZE_CLIP };

/* How fairness is measured (workload `fairness:`). */
struct kv_fairness_cfg {
	double input_weight; /* service per prompt token processed, default 1 */
	double output_weight; /* service per output token generated, default 2 (VTC's) */
	uint64_t short_tokens; /* prompt+output below this is "short"; 0 = the median */
	uint64_t long_tokens; /* prompt+output above this is "long"; 0 = the median */
};

/*
 * An executor runs each formed batch for real (an execution backend, see
 * gpu/exec.h and src/lib/realexec.c) instead of taking the perf model's figure.  It
 * sees r->batch[0..n_batch-1], each request q with q->batch_tokens new
 * tokens after q->kv_tokens cached ones, and r->shape; model_ns is the perf
 * model's prediction for the batch.  It stores the batch's duration in *ns
 * and returns 0, or returns an error code (with r->sim->diag filled) that
 * stops the run.  Host-link copies the engine queues still add to (or
 * overlap) the duration as they do in simulation.
 */
struct kv_executor {
	void *ctx;
	int (*iter)(void *ctx, struct kv_replica *r, kv_ns model_ns, kv_ns *ns);
};

/*
 * A group's role (cluster.groups[i].role): mixed groups prefill and
 * decode; prefill and decode groups hand requests over between them
 * (prefill/decode disaggregation, docs/cluster.md).
 */
enum kv_group_role { KV_ROLE_MIXED, KV_ROLE_PREFILL, KV_ROLE_DECODE };
#define KV_MAX_GROUPS 64 /* entries of cluster.groups */
#define KV_GROUP_WEIGHT_AUTO (-1.0) /* kv_sim_config.group_weight: from the perf model (docs/cluster.md) */
#define KV_GROUP_AUTO_PROMPT 512 /* tokens: weight auto's prompt when the lengths come from a trace (workload lengths' default) */
#define KV_GROUP_AUTO_OUTPUT 128 /* tokens: its output, likewise */
extern const char *const kv_group_role_names[]; /* "mixed", "prefill", "decode", NULL */

/* Everything a run needs; filled by the workload loader. */
/*
 * An observer of the engine's steps (the timeline, src/lib/timeline.c): called
 * when a replica starts an iteration (q NULL, dur_ns its duration; r->batch
 * holds the batch), when one ends before its tokens are applied (q NULL,
 * dur_ns 0), and on a request's state changes (arrive: queued; admit:
 * running; preempt: before it leaves the running set; end: it ended, e the
 * reason).  NULL fn: none, and no cost beyond one test per call site.
 */
enum kv_obs_event {
	KV_OBS_ITER_START, /* r starts an iteration of dur_ns */
	KV_OBS_ITER_END, /* r's iteration ends; tokens not yet applied */
	KV_OBS_ARRIVE, /* q queued at r */
	KV_OBS_ADMIT, /* q admitted to r's running set */
	KV_OBS_PREEMPT, /* q is about to be preempted */
	KV_OBS_END, /* q ended (completed or rejected) */
};
struct kv_observer {
	void (*fn)(void *ctx, const struct kv_sim *s, enum kv_obs_event ev,
		   const struct kv_replica *r, const struct kv_req *q, kv_ns dur_ns); /* NULL: none */
	void *ctx; /* passed back to fn */
};

struct kv_sim_config {
	struct kv_model model; /* served model */
	struct kv_device device; /* one replica's GPU */
	struct kv_host_profile host; /* the host CPU (host.h); all zero: the reference CPU */
	uint32_t replicas; /* replicas in the cluster, >= 1 */
	uint32_t tp; /* GPUs per replica (tensor parallel), >= 1 */
	uint32_t pp; /* pipeline stages per replica (GPUs = tp * pp), >= 1; 0 reads as 1 */
	uint32_t ep; /* expert-parallel degree, >= 1; 0 reads as 1 (perf.h kv_perf_set_moe_ep) */
	uint32_t dp; /* data-parallel attention ranks per replica in lockstep (ep = dp * tp); 0, 1: off */
	const struct kv_router_ops *router; /* arrival routing */
	void *router_opts; /* router->priv_size bytes with options filled (NULL: defaults) */
	const struct kv_sched_ops *sched; /* scheduler */
	void *sched_opts; /* sched->priv_size bytes with options filled */
	const struct kv_cache_ops *cache; /* cache model */
	void *cache_opts; /* cache->priv_size bytes with options filled */
	struct kv_mem_cfg mem; /* KV-cache sizing (memory.model and its terms), memory.h */
	const struct kv_engine_ops *engine; /* serving semantics; NULL = vllm-v0 */
	void *engine_opts; /* engine->priv_size bytes with options filled (NULL: defaults) */
	uint64_t pool_min_block_bytes; /* buddy unit; 0 = auto (kv_pool_auto_unit, pool.h), the default */
	uint64_t pool_max_block_bytes; /* largest contiguous block, default 8 MiB, 0 = no cap */
	uint64_t max_batch_tokens; /* token budget per iteration, default 2048 */
	uint32_t max_batch_seqs; /* sequences per iteration, default 256 */
	int chunked_prefill; /* split prompts over iterations, default 1 */
	enum kv_oversize oversize; /* prompt+output beyond context, default error */
	uint64_t max_context_tokens; /* served context (vLLM max_model_len), 0 = the model's */
	kv_ns sample_interval_ns; /* timeseries period, default 1 s, 0 = off */
	int check_pool; /* run the pool integrity check after every event */
	struct kv_source_spec source; /* arrivals */
	struct kv_fairness_cfg fairness; /* fairness metrics */
	uint64_t seed; /* random seed */
	const struct kv_executor *exec; /* NULL: the perf model times batches (the simulator) */
	struct kv_observer observer; /* step and request-state hook (the timeline), fn NULL: none */
	int exact_steps; /* 1: one event per iteration, no macro steps; set for any per-iteration consumer (an observer) */
	double step_scale; /* multiplies every step's time (perf.h kv_perf.step_scale); 0 reads as 1, the default */
	struct kv_autoscale_cfg autoscale; /* autoscaling of the group's replicas (autoscale.h; a group's own in groups[i]); on 0: off, the default */
	struct kv_session_spec sessions; /* multi-turn sessions (session.h); n_classes 0: none, the default */
	/*
	 * Replica groups (docs/cluster.md "Replica groups").  A group's
	 * configuration is a whole kv_sim_config: the run's, with the group's
	 * keys (model, device, host, parallelism, replicas, engine,
	 * scheduler, cache, memory, batching) in place of the top level's;
	 * its cluster-wide fields (source, router, fairness, seed, outputs,
	 * observer, exec, sample_interval, check_pool, exact_steps, groups)
	 * are the run's and unused.  A run with n_groups 0 is one group: this
	 * config.
	 */
	const struct kv_sim_config *groups; /* n_groups group configs, in replica order; NULL: one group, this config */
	uint32_t n_groups; /* entries of groups, 0: the single group */
	char group_name[32]; /* this group's name (cluster.groups[i].name), "" for the single group */
	enum kv_group_role role; /* this group's role, default mixed */
	struct kv_xfer_cfg xfer; /* a prefill group's KV transfer links (kv_transfer:, disagg.h); all 0: the defaults */
	uint32_t pd_prefill; /* replicas [0, pd_prefill) prefill, the rest decode (disagg.h); 0: no split */
	double group_weight; /* routing weight per replica (cluster.groups[i].weight); 0 reads as 1, the default; KV_GROUP_WEIGHT_AUTO: the replica's saturated capacity */
};

/* Where results go; any callback may be NULL.  Returning nonzero stops the run with KV_EIO. */
struct kv_sink {
	void *ctx;
	int (*request)(void *ctx, const struct kv_sim *s, const struct kv_req *q, enum kv_end e);
	int (*sample)(void *ctx, const struct kv_sim *s, kv_ns t_ns);
	void (*progress)(void *ctx, const struct kv_sim *s); /* every few thousand events */
	int (*scale)(void *ctx, const struct kv_sim *s, const struct kv_as_row *row); /* each autoscaling decision */
};

struct kv_tenant_stats {
	uint64_t arrived, completed, rejected; /* requests */
	uint64_t prompt_tokens, output_tokens; /* of completed requests */
	double cost; /* sum of Cost */
	struct kv_hist ttft, e2e; /* ns */
	double service; /* weighted tokens served: input_weight * prefill + output_weight * output */
	double vservice; /* service / tenant weight, lifted on becoming backlogged (VTC's counter) */
	uint64_t waiting; /* requests queued now, over all replicas */
};


/*
 * Events: few and explicit; the heap orders them by (time, push time,
 * insertion).  An arrival is queued with push time 0, so at equal times
 * every arrival pops before any iteration's end or sample: all requests
 * arriving at t are queued before a replica forms a batch at t (engine.c).
 */
enum kv_event_kind {
	KV_EV_ARRIVAL = 1, /* the pending arrival (s->pending) arrives; arg 1: a wake-up of the concurrency limit (gate.h) */
	KV_EV_ITER_DONE, /* replica `target` ends its iteration */
	KV_EV_SAMPLE, /* a timeseries sample is due */
	KV_EV_ENQUEUE, /* request in slot `arg` leaves the front end for replica `target` (frontend.h) */
	KV_EV_XFER_DONE, /* the oldest transfer on KV link `target` arrives (disagg.h) */
	KV_EV_SCALE, /* autoscaled range `target` (s->as[target]) has a decision due (autoscale.h) */
	KV_EV_SCALE_READY, /* replica `target` ends its cold start (autoscale.h) */
	KV_EV_TURN, /* the next turn of the session in slot `arg` arrives (session.h); pushed at time 0 as arrivals */
};

/* A plugin kind's per-request state: req_size bytes per slot, in pages parallel to the slots'. */
struct kv_plugin_reqs {
	unsigned char **pages; /* one block of KV_SLOT_PAGE * size bytes per slot page */
	size_t size; /* the plugin's req_size, 0 = none */
};

/*
 * A replica group's derived state: what its configuration gives every one
 * of its replicas (the perf model, the pool's size and unit, the context
 * bound), and its place among the replicas.  Groups are contiguous:
 * group g holds rep[first .. first + count), in cfg->groups order.
 */
struct kv_group {
	const struct kv_sim_config *cfg; /* its configuration (the run's for a single group) */
	uint32_t idx; /* index in s->grp */
	uint32_t first, count; /* its replicas: rep[first .. first + count) */
	struct kv_perf perf; /* iteration-time model */
	uint64_t token_bytes; /* fp16 KV bytes per token, whole replica */
	uint64_t pool_bytes; /* pool size per replica */
	struct kv_mem_budget mem; /* how pool_bytes was sized, its capacity in tokens and blocks */
	uint64_t pool_unit_bytes; /* buddy unit in use */
	uint64_t ctx_cap_tokens; /* tokens one replica's KV cache holds (the context check's bound) */
	int ctx_warn; /* 1: over-capacity contexts warn (SGLang); 0: they are an error (vLLM) */
	uint64_t router_state; /* the router's private word for this group */
	double weight; /* its share among the groups serving its model: replicas x weight per replica */
	struct kv_tier *tier_remote; /* the cache model's remote tier its replicas share (tiers.h), or NULL */
	double wrr_credit; /* smooth weighted round-robin credit among the groups serving its model */
	/* statistics (groups.h) */
	uint64_t arrived; /* requests routed to it */
	uint64_t completed, rejected; /* of those, ended so far */
	uint64_t prompt_tokens_done, output_tokens_done; /* of its completed requests */
	struct kv_hist ttft, e2e; /* of its completed requests, ns */
};

/*
 * The groups a request may go to: those serving its tenant's model
 * (docs/cluster.md "Replica groups").  cls[tenant] indexes a class; a
 * class lists its groups in grp_of[off .. off + n).
 */
struct kv_route_class {
	uint32_t off, n; /* its groups: s->grp_of[off .. off + n) */
	double weight_sum; /* sum of their weights (replica counts) */
};

struct kv_sim {
	const struct kv_sim_config *cfg;
	struct kv_group *grp; /* n_grp replica groups; grp[0] is the single group of a plain run */
	uint32_t n_grp;
	struct kv_route_class *cls; /* n_cls routing classes */
	uint32_t n_cls;
	uint32_t *tenant_cls; /* per tenant: its class */
	uint32_t *grp_of; /* the classes' groups, concatenated */
	struct kv_heap heap; /* the event queue */
	struct kv_replica *rep; /* replicas */
	uint32_t n_rep;
	struct kv_req **pages; /* request slot pages */
	uint32_t n_pages; /* pages allocated */
	uint32_t free_slot; /* head of the free-slot list (linked through q_next), KV_NIL */
	struct kv_plugin_reqs req_state[KV_PLUGIN_KINDS]; /* per-request plugin state, by kind */
	uint64_t n_live; /* requests arrived and not ended */
	uint64_t peak_live; /* high-water mark of n_live */
	struct kv_source *src; /* arrivals */
	struct kv_arrival pending; /* next arrival, when have_pending */
	int have_pending;
	kv_ns now; /* current simulated time */
	void *router_priv; /* the router's instance: priv_size bytes, options filled (scheduler.h) */
	uint32_t route_flags; /* what the router reads of the replicas: its flags, narrowed by its init */
	struct kv_sink sink; /* outputs */
	volatile sig_atomic_t *stop; /* set asynchronously to stop early (may be NULL) */
	/* statistics */
	uint64_t events; /* events processed */
	uint64_t arrived; /* requests arrived */
	uint64_t ended[KV_END_N]; /* requests ended, by reason */
	uint64_t prompt_tokens_done, output_tokens_done; /* of completed requests */
	double kv_token_steps_done; /* sum over completed requests of output * (prompt + output/2): KV held over their decode steps, token-steps (load.h) */
	uint64_t preemptions; /* total */
	struct kv_hist ttft, tpot, e2e; /* ns */
	struct kv_tenant_stats *tenant; /* cfg->source.n_tenants entries */
	double *inv_weight; /* 1 / tenant weight */
	double svc_diff_max, svc_diff_sum; /* service difference between backlogged tenants, over samples */
	uint64_t svc_diff_samples; /* samples with at least two tenants backlogged */
	kv_ns first_arrival_ns, last_finish_ns; /* makespan bounds */
	kv_ns last_arrival_ns; /* the latest arrival (load.h's offered rate) */
	struct kv_hash_page *hash_pages; /* arena of prefix-block hash pages */
	uint32_t n_hash_pages; /* pages in the arena */
	uint32_t free_hash_page; /* free list head, KV_NIL */
	struct kv_autoscale *as; /* the autoscaled ranges (autoscale.h), n_as of them; NULL: none */
	uint32_t n_as;
	uint8_t *rep_state; /* per replica, enum kv_rep_state; NULL when nothing autoscales (all active) */
	struct kv_diag diag; /* error detail when a run fails */
	int deferred_rc; /* error raised inside a scheduler hook, returned after it */
	int macro; /* macro-stepping allowed by the run's config (replicas also check their plugins) */
	kv_ns *macro_next; /* per replica: end of its next pending macro step, KV_NS_NEVER when none */
	kv_ns *macro_onext; /* per replica: that of the next step its outstanding_tokens does not show */
	struct kv_mintree out_tree; /* over the replicas' outstanding_tokens (views), tokens; key NULL: not kept */
	struct kv_mintree low_tree; /* lower bounds of those views (kv__out_bound), tokens; UINT64_MAX: exact */
	struct kv_mintree exp_tree; /* when each of those bounds lapses (kv__out_bound), ns; KV_NS_NEVER: never */
	uint32_t *due; /* n_rep scratch indices: the replicas an arrival brings up */
	uint32_t *kick; /* n_rep: idle replicas that got a request this instant, to form a batch after its last arrival */
	uint32_t n_kick; /* entries of kick */
	uint64_t macro_steps; /* iterations applied inside macro steps (statistics, in no output) */
	struct kv_event ev; /* the event being processed */
	struct kv_disagg *pd; /* prefill/decode disaggregation (disagg.h), NULL when no replica prefills only */
	/* the longest context against the KV cache (memory.h enum kv_ctx_check; bounds per group) */
	uint64_t ctx_over_requests; /* requests (warn) whose prompt + output exceeded ctx_cap_tokens */
	uint64_t ctx_over_max_tokens; /* the longest such context, or max_context when it exceeds the cache; 0: none */
	struct kv_sessions *sess; /* multi-turn sessions (cfg->sessions), NULL: none */
	struct kv_reuse *chains; /* cfg->sessions.chains: arrivals' prefix chains, NULL: off */
	uint32_t *chain_home; /* per chain (its first request's index): the replica of that request */
	uint32_t n_chain_home; /* entries of chain_home allocated */
	struct kv_gate gate; /* the client's concurrency limit (gate.h); limit 0: off */
};


/*
 * Replicas from which the engine keeps out_tree and low_tree for the
 * least-outstanding-tokens router, in a cluster of one replica group;
 * below, or with several groups, it scans the group's replicas (cheaper at
 * 16: measured in docs/benchmarks.md).
 */
#define KV_ROUTE_TREE_MIN_REPLICAS 64

/*
 * Builds the cluster: its replica groups (cfg->groups, or cfg as the one
 * group) with their replicas, pools and plugin instances, the routing
 * classes (which groups serve each tenant's model), the source.
 * Returns 0, or a negative code with s->diag filled (bad plugin options,
 * a pool that holds nothing, a tenant's model no group serves, an
 * unreadable trace).
 */
int kv_sim_init(struct kv_sim *s, const struct kv_sim_config *cfg, const struct kv_sink *sink);

/*
 * Runs to completion.  Returns 0; KV_EINVAL with s->diag filled for a bad
 * trace row or an oversize request under the "error" policy; KV_EIO when a
 * sink callback failed; KV_EINTR when *s->stop was set.
 */
int kv_sim_run(struct kv_sim *s);

void kv_sim_release(struct kv_sim *s);


/* Pool bytes over every replica of every group. */
static inline double kv_sim_pool_total_bytes(const struct kv_sim *s)
{
	double b = 0;
	uint32_t i;

	for (i = 0; i < s->n_grp; i++)
		b += (double)s->grp[i].pool_bytes * (double)s->grp[i].count;
	return b;
}

/* The request in a slot. */
static inline struct kv_req *kv_sim_req(const struct kv_sim *s, uint32_t slot)
{
	return &s->pages[slot >> KV_SLOT_PAGE_SHIFT][slot & (KV_SLOT_PAGE - 1)];
}

/* q's state of the plugin of kind k (its req_size bytes; zeroed when q arrived). */
static inline void *kv__req_state(const struct kv_sim *s, enum kv_plugin_kind k,
				  const struct kv_req *q)
{
	const struct kv_plugin_reqs *st = &s->req_state[k];

	return st->pages[q->slot >> KV_SLOT_PAGE_SHIFT] +
	       (size_t)(q->slot & (KV_SLOT_PAGE - 1)) * st->size;
}

/* q's scheduler state: the scheduler's req_size bytes, zeroed at arrival. */
static inline void *kv_req_sched(const struct kv_sim *s, const struct kv_req *q)
{
	return kv__req_state(s, KV_PLUGIN_SCHED, q);
}

/* q's cache-model state: the cache model's req_size bytes, zeroed at arrival. */
static inline void *kv_req_cache(const struct kv_sim *s, const struct kv_req *q)
{
	return kv__req_state(s, KV_PLUGIN_CACHE, q);
}

/* Starts reading q's prefix-block hashes (valid until q ends). */
static inline void kv_hash_iter_init(struct kv_hash_iter *it, const struct kv_sim *s,
				     const struct kv_req *q)
{
	it->pages = s->hash_pages;
	it->page = q->hash_page;
	it->i = 0;
	it->n = q->n_hashes;
}

/* Stores the next hash in *h and returns 1, or returns 0 after the last. */
static inline int kv_hash_iter_next(struct kv_hash_iter *it, uint64_t *h)
{
	uint32_t j;

	if (it->i == it->n)
		return 0;
	j = it->i++ % KV_HASHES_PER_PAGE;
	*h = it->pages[it->page].h[j];
	if (j == KV_HASHES_PER_PAGE - 1)
		it->page = (uint32_t)it->pages[it->page].next;
	return 1;
}


/* The replica that served q's session's first request, KV_NIL when none (or not in a session). */
static inline uint32_t kv_session_home(const struct kv_sim *s, const struct kv_req *q)
{
	if (q->session == KV_NIL)
		return KV_NIL;
	if (s->sess)
		return kv_sessions_home(s->sess, q->session);
	return s->chain_home ? s->chain_home[q->session] : KV_NIL;
}

/*
 * Request q (in a session) ended with e: when its session has another turn,
 * queues that turn's arrival at q's client-side finish plus the think time,
 * at push time 0 as every arrival (so it pops before the iteration ends and
 * samples of its instant, and same-instant arrivals keep their order).
 */
static inline void kv__session_end(struct kv_sim *s, const struct kv_req *q, enum kv_end e)
{
	kv_ns t;

	if (!s->sess || q->session == KV_NIL)
		return;
	if (kv_sessions_ended(s->sess, q->session, e == KV_END_COMPLETED, q->finish_ns, &t))
		kv_heap_push_at(&s->heap, t, 0, KV_EV_TURN, 0, q->session);
}

/*
 * Queues a wake-up of the concurrency limit's waiting arrival at the time t
 * a place frees (an arrival event, arg 1), unless one is queued at or before
 * t.  A wake-up that finds the places still taken queues the next.
 */
static inline void kv__gate_wake(struct kv_sim *s, kv_ns t)
{
	if (t == KV_NS_NEVER || t >= s->gate.wake_ns)
		return;
	s->gate.wake_ns = t;
	kv_heap_push_at(&s->heap, t, 0, KV_EV_ARRIVAL, 0, 1);
}

/*
 * Request q ended (kv__replica_end, after its client-side finish is set):
 * under a concurrency limit its place frees at that finish (plus think
 * time), and a request waiting for a place gets a wake-up then.
 */
static inline void kv__gate_end(struct kv_sim *s, const struct kv_req *q)
{
	kv_ns t = kv_gate_end(&s->gate, q->finish_ns);

	if (s->gate.blocked)
		kv__gate_wake(s, t);
}

/* Tokens past the window w of a request holding kv tokens: max(0, kv - w). */
static inline uint64_t kv_win_excess(uint64_t kv, uint64_t w)
{
	return kv > w ? kv - w : 0;
}

#endif /* KV_ENGINE_H */
