/*
 * engine_vllm.c -- vLLM's scheduling semantics: V1 (`vllm`, the default) and
 * V0 (`vllm-v0`, kvsim's behaviour before engines were selectable, kept for
 * comparison and for the golden digests).  docs/engines.md cites the source
 * of every rule (vllm/v1/core/sched/scheduler.py Scheduler.schedule,
 * vllm/v1/core/kv_cache_manager.py KVCacheManager.allocate_slots and
 * get_computed_blocks).
 *
 * V1, one step:
 *   - one token budget, max_num_batched_tokens (batching.max_tokens), shared
 *     by running and waiting requests; the running ones go first (the
 *     schedulers all call kv_replica_keep_running() before admitting);
 *   - a request's next tokens are one decode token or its next prefill
 *     chunk, cut to the budget and to long_prefill_token_threshold;
 *   - KV blocks are allocated for the tokens scheduled this step only, on
 *     admission too (V0 reserved the whole prompt);
 *   - when allocation fails, the scheduler's victim (fifo: the newest
 *     running request, V1's running.pop()) is preempted by recompute until
 *     it fits; in a step that preempted, no waiting request is admitted;
 *   - at most max_num_seqs (batching.max_seqs) requests run;
 *   - with prefix caching (default on, as in V1), freed blocks keep their
 *     hashes until evicted LRU (serving.c).
 * V0 has no hook: the replica's default rules (replica.c) are V0's.
 */
#include "serving_impl.h"

#include "engine.h"
#include "replica.h"

struct vllm {
	struct kv__engine_base base; /* front end, prefix cache, GEMM ramp */
	uint64_t long_prefill_token_threshold; /* largest prefill chunk, tokens; 0 = the budget (V1's default) */
};

static const struct kv_option vllm_options[] = {
	KV__ENGINE_BASE_OPTIONS(struct vllm, 128),
	{ .name = "long_prefill_token_threshold", .type = KV_OPT_U64,
	  .offset = offsetof(struct vllm, long_prefill_token_threshold), .def = 0, .min = 0,
	  .max = 1 << 24, .units = "tokens",
	  .help = "largest prefill chunk a request takes in one step (0: the token budget)" },
	{ .name = NULL },
};

static int vllm_init(void *priv, struct kv_replica *r, struct kv_diag *d)
{
	struct vllm *v = priv;

	(void)d;
	kv__engine_base_init(&v->base, r);
	r->chunk_cap_tokens = v->long_prefill_token_threshold;
	return 0;
}

static const struct kv_cache_ops *vllm_cache(const void *priv, const struct kv_sim_config *c,
					     void **opts)
{
	const struct vllm *v = priv;

	return kv__engine_base_cache(&v->base, c, opts);
}

static void vllm_perf(const void *priv, struct kv_perf *pf)
{
	const struct vllm *v = priv;

	kv__engine_base_perf(&v->base, pf);
}

/*
 * V1 admits a waiting request for the tokens of this step only, never in a
 * step that preempted, and not past max_num_seqs running requests.
 */
static int vllm_admit(void *priv, struct kv_replica *r, struct kv_req *q, uint64_t take,
		      uint64_t *want)
{
	(void)priv;
	if (r->step_preempted || r->n_running >= r->sim->cfg->max_batch_seqs)
		return KV_ERANGE;
	*want = q->kv_tokens + take;
	return 0;
}

const struct kv_engine_ops kv_engine_vllm = {
	.name = "vllm",
	.flags = KV_PLUGIN_F_MACRO_STEPS, /* no step or formed hook; admit is never asked with nobody waiting */
	.desc = "vLLM V1: one token budget per step, running requests first; KV allocated per step; on allocation failure preempt the scheduler's victim by recompute and admit nobody that step; prefix cache keeps freed blocks until evicted LRU",
	.priv_size = sizeof(struct vllm),
	.options = vllm_options,
	.init = vllm_init,
	.cache = vllm_cache,
	.perf = vllm_perf,
	.admit = vllm_admit,
};

struct vllm_v0 {
	struct kv__engine_base base; /* only the front end's cost is used */
};

static const struct kv_option vllm_v0_options[] = {
	KV__ENGINE_FRONTEND_OPTION(struct vllm_v0),
	{ .name = NULL },
};

static int vllm_v0_init(void *priv, struct kv_replica *r, struct kv_diag *d)
{
	struct vllm_v0 *v = priv;

	(void)d;
	kv__engine_base_init(&v->base, r);
	return 0;
}

const struct kv_engine_ops kv_engine_vllm_v0 = {
	.name = "vllm-v0",
	.flags = KV_PLUGIN_F_MACRO_STEPS, /* no step, formed or admit hook */
	.desc = "vLLM V0 (kvsim before engines): admission reserves the whole prefill; the configured cache model as is; no GEMM ramp",
	.priv_size = sizeof(struct vllm_v0),
	.options = vllm_v0_options,
	.init = vllm_v0_init,
};
