/*
 * serving.h -- serving-engine semantics as plugins: how a replica of a real
 * engine (vLLM V0, vLLM V1, SGLang) forms a step, reserves memory, preempts
 * and reuses cached prefixes.  docs/engines.md states each engine's rules
 * with the file and function of the engine's source they come from.
 *
 * The split: the engine plugin fixes the *mechanism* (the step's token
 * budget and kind, how much memory an admission reserves, whether waiting
 * requests may be admitted this step, the prefix cache, the front end's
 * per-request cost); the scheduler plugin (sched.h) fixes the *policy* (the
 * order requests are scheduled in and the victim preempted).  The replica
 * (replica.h) asks the engine at the points below; a NULL hook, or a NULL
 * engine, is vllm-v0: the behaviour every golden digest was recorded with.
 *
 * Hook by hook (all optional):
 *   init      once per replica, before its memory and scheduler are built.
 *             Validate options (fill d, return KV_EINVAL: exit status 2).
 *   cache     the cache model this engine runs on the replica instead of the
 *             configured one (its prefix cache): returns it with its options
 *             in *opts (a block the hook allocates and the replica frees), or
 *             NULL to keep the configured model.  Called at each replica
 *             memory build (set-up only).
 *   perf      adjusts the run's perf constants (once, at replica 0).
 *   step      a step is being formed: the batch is empty, r->budget_tokens
 *             is batching.max_tokens.  Sets r->step_flags and may change
 *             the budget.  `again` is 0 on the first form of a step, 1 after
 *             formed() asked for another.
 *   admit     waiting q is being scheduled for `take` tokens (its prefix
 *             hit already taken): store the tokens its KV must hold once
 *             the step ends in *want and return 0, or return KV_ERANGE to
 *             refuse it this step (q untouched).  NULL: vllm-v0's rule
 *             (reserve the whole prefill at admission).
 *   formed    the scheduler formed the step's batch: return 1 to drop it
 *             (it must be empty) and form again with step(again = 1); 0 to
 *             run it.  Engines update their step statistics here.
 *   macro_steps (optional; an engine with KV_PLUGIN_F_MACRO_STEPS) the
 *             batch just formed at t[0] is a macro step's first (macro.h:
 *             every running request decodes, in a run of K steps): return
 *             the K' <= K such that the formations at t[1..K'-1] give the
 *             same batch (0 or 1: none).  NULL: K.
 *   macro_apply (optional) the formations at the ends of n steps of such a
 *             run happened: update the private state exactly as their
 *             step() and formed() calls would, bit for bit.  Called lazily,
 *             before any hook of this replica runs.  NULL: they change
 *             nothing.
 *   fini      once at the end.
 * Hooks must not schedule, admit or preempt anything themselves, and must not
 * allocate per call.
 */
#ifndef KV_SERVING_H
#define KV_SERVING_H

#include "plugin.h"

struct kv_replica;
struct kv_req;
struct kv_perf;
struct kv_sim_config;
struct kv_cache_ops;

/* r->step_flags: what the step being formed may contain. */
enum {
	KV_STEP_NO_DECODE = 1, /* a prefill-only step: decode steps are refused (KV_ERANGE) */
	KV_STEP_NO_ADMIT = 2, /* a decode step: waiting requests are refused (KV_ERANGE) */
	KV_STEP_NO_PREEMPT = 4, /* a running request refused memory sits the step out (no victim) */
};

struct kv_host_version;

struct kv_engine_ops {
	KV_PLUGIN_BASE; /* name ("vllm", ...), desc, priv_size (per replica), options */
	const struct kv_host_version *versions; /* its `version:` values in option order, NULL-name-ended (host.h) */
	int (*init)(void *priv, struct kv_replica *r, struct kv_diag *d);
	void (*fini)(void *priv);
	const struct kv_cache_ops *(*cache)(const void *priv, const struct kv_sim_config *c,
					    void **opts);
	void (*perf)(const void *priv, struct kv_perf *pf);
	void (*step)(void *priv, struct kv_replica *r, int again);
	int (*admit)(void *priv, struct kv_replica *r, struct kv_req *q, uint64_t take,
		     uint64_t *want);
	int (*formed)(void *priv, struct kv_replica *r);
	uint32_t (*macro_steps)(void *priv, struct kv_replica *r, uint32_t K); /* optional */
	void (*macro_apply)(void *priv, struct kv_replica *r, uint32_t n); /* optional */
};

/* The engine with that name (kv_plugin_find), or NULL. */
const struct kv_engine_ops *kv_engine_find(const char *name);

/* sglang's new-token ratio now and its retracting decode steps so far (priv: r->eng_priv). */
double kv_engine_sglang_ratio(const void *priv);
uint64_t kv_engine_sglang_retractions(const void *priv);
/* vllm's steps that closed admission after an older victim (the progress guard; priv: r->eng_priv). */
uint64_t kv_engine_vllm_closures(const void *priv);
/* vllm-v0's formations that kept waiting requests out mid-pass (multi-step scheduling; priv: r->eng_priv). */
uint64_t kv_engine_vllm_v0_pass_gated(const void *priv);

/* Waiting requests an async engine's formations did not see yet (serving_impl.h kv__engine_lagged; priv: r->eng_priv of vllm or sglang). */
uint64_t kv_engine_lagged(const void *priv);

/* The engine a config without one runs: vllm-v0 (today's behaviour). */
extern const struct kv_engine_ops kv_engine_vllm_v0;

#endif /* KV_SERVING_H */
