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
 *     replica's batch loop, replica.c form_batch(), keeps them going before
 *     it admits);
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

#include <stdlib.h>
#include <string.h>

struct vllm {
	struct kv__engine_base base; /* front end, prefix cache, GEMM ramp */
	uint64_t long_prefill_token_threshold; /* largest prefill chunk, tokens; 0 = the budget (V1's default) */
	/* state */
	struct kv_req **snap; /* the running set (admission order) as the step began; max_seqs slots */
	uint32_t n_snap, snap_cap; /* requests in snap, its slots */
	uint64_t closed_at; /* kv__engine_ended() when an older victim closed admission; 0: open */
	uint64_t closures; /* steps that closed admission (statistics, tests) */
	int lag_refused; /* this formation refused a request it could not see yet (async mode) */
};

/*
 * V1's versions (docs/engines.md, "Versions"): synchronous steps, CUDA
 * graphs captured for 1, 2, 4 and multiples of 8 up to 512
 * (SchedulerConfig.cuda_graph_sizes); v1-async schedules the next step
 * while this one runs (--async-scheduling, vllm/v1/core/sched/async_scheduler.py).
 */
static const char *const vllm_version_names[] = { "v1", "0.10", "v1-async", NULL };
static const struct kv_host_version vllm_versions[] = {
	{ .name = "v1", .on = 1, .mode = KV_HOST_SYNC, .graph_max = 512, .coef = { KV__HOST_VLLM_V1_COEFS },
	  .rel_sd = { KV__HOST_VLLM_V1_REL_SD }, .source = KV__HOST_FIT_SOURCE },
	{ .name = "0.10", .on = 1, .mode = KV_HOST_SYNC, .graph_max = 512, .coef = { KV__HOST_VLLM_V1_COEFS },
	  .rel_sd = { KV__HOST_VLLM_V1_REL_SD }, .source = KV__HOST_FIT_SOURCE },
	{ .name = "v1-async", .on = 1, .mode = KV_HOST_ASYNC, .graph_max = 512, .coef = { KV__HOST_VLLM_V1_COEFS },
	  .rel_sd = { KV__HOST_VLLM_V1_REL_SD }, .source = KV__HOST_FIT_SOURCE },
	{ .name = NULL },
};

static const struct kv_option vllm_options[] = {
	KV__ENGINE_FRONTEND_OPTION(struct vllm, 1000, 1, 1969000, "1.969 ms: 4 uvicorn workers / 2031 req/s (FastAPI hello world, wrk: gist patx/1269e389), kept by configs/fidelity/fit.sh on 2026-12-02"),
	KV__ENGINE_BASE_OPTIONS(struct vllm, 0, "removed (0): fitted by configs/fidelity/fit.sh on 2026-12-02 to vLLM V1's rows (one MoE source) it ran to its bound, a MoE prefill deficit rather than a ramp; 128 reproduces Sarathi-Serve's chunking overhead (docs/engines.md)"),
	KV__ENGINE_COMM_OPTIONS(struct vllm, KV_CAR_VLLM, 0, "not measured apart and no vLLM V1 multi-GPU row to fit: 0"),
	KV__ENGINE_HOST_OPTIONS(struct vllm, vllm_version_names, 0),
	{ .name = "long_prefill_token_threshold", .type = KV_OPT_U64,
	  .offset = offsetof(struct vllm, long_prefill_token_threshold), .def = 0, .min = 0,
	  .max = 1 << 24, .units = "tokens",
	  .help = "largest prefill chunk a request takes in one step (0: the token budget)" },
	KV__ENGINE_INPUTS_OPTIONS(struct vllm),
	{ .name = NULL },
};

static int vllm_init(void *priv, struct kv_replica *r, struct kv_diag *d)
{
	struct vllm *v = priv;

	(void)d;
	kv__engine_base_init(&v->base, r);
	kv__engine_host_init(&v->base, &vllm_versions[v->base.version]);
	r->chunk_cap_tokens = v->long_prefill_token_threshold;
	/* admission stops at max_seqs running, so the running set never holds more */
	v->snap_cap = KV_MAX(r->cfg->max_batch_seqs, 1u);
	v->snap = kv_xcalloc(v->snap_cap, sizeof(*v->snap));
	return 0;
}

static void vllm_fini(void *priv)
{
	struct vllm *v = priv;

	free(v->snap);
	v->snap = NULL;
}

/*
 * The progress guard.  vLLM preempts by priority (FCFS: the last admitted),
 * a static order, so its first request always runs on and the run makes
 * progress.  kvsim lets the scheduler pick the victim (docs/engines.md, "The
 * split"); drf, wdrf and vtc pick by service, which changes as requests run,
 * so with small chunks (long_prefill_token_threshold) a pool full of partial
 * prefills can preempt and readmit the same requests forever (the random
 * suite found one: wdrf, threshold 41).  So: when a step preempted a request
 * older than one it kept (not the newest-first order vLLM follows), no waiting
 * request is admitted until some request ends or nothing runs.  Under fifo
 * the victims are always the newest and the guard never closes; under
 * priority (a KEYED order) the victims are vLLM's own, by a key each request
 * keeps, so the guard stays open there too.
 */
static void vllm_step(void *priv, struct kv_replica *r, int again)
{
	struct vllm *v = priv;

	(void)again;
	v->lag_refused = 0;
	kv__engine_host_step(&v->base, r);
	if (v->closed_at && (r->n_running == 0 || kv__engine_ended(r->sim) != v->closed_at))
		v->closed_at = 0;
	v->n_snap = KV_MIN(r->n_running, v->snap_cap);
	if (v->n_snap) /* r->running may be NULL before the first admission */
		memcpy(v->snap, r->running, v->n_snap * sizeof(*v->snap));
}

static int vllm_formed(void *priv, struct kv_replica *r)
{
	struct vllm *v = priv;
	uint32_t n = r->n_running;

	/* kept = the first n of the step's start iff every victim was newer than every survivor */
	if (r->step_preempted && !v->closed_at && n && n <= v->n_snap &&
	    r->sched->order != KV_ORDER_KEYED &&
	    r->running[n - 1] != v->snap[n - 1]) {
		v->closed_at = kv__engine_ended(r->sim);
		v->closures++;
	}
	return 0;
}

uint64_t kv_engine_vllm_closures(const void *priv)
{
	const struct vllm *v = priv;

	return v->closures;
}

static const struct kv_cache_ops *vllm_cache(const void *priv, const struct kv_sim_config *c,
					     void **opts)
{
	const struct vllm *v = priv;

	return kv__engine_base_cache(&v->base, c, opts, 1); /* cache_full_blocks: when allocated */
}

static void vllm_perf(const void *priv, struct kv_perf *pf)
{
	const struct vllm *v = priv;

	kv__engine_base_perf(&v->base, pf);
	kv__engine_host_perf(&v->base, &vllm_versions[v->base.version], pf);
}

/*
 * V1 admits a waiting request for the tokens of this step only, never in a
 * step that preempted, and not past max_num_seqs running requests.
 */
static int vllm_admit(void *priv, struct kv_replica *r, struct kv_req *q, uint64_t take,
		      uint64_t *want)
{
	struct vllm *v = priv;

	if (r->step_preempted || v->closed_at || r->n_running >= r->cfg->max_batch_seqs)
		return KV_ERANGE;
	if (kv__engine_lagged(&v->base, r, q)) {
		v->lag_refused = 1;
		return KV_ERANGE;
	}
	*want = q->kv_tokens + take;
	return 0;
}

/*
 * Macro steps (serving.h): a formation that refused a request only because
 * it had not seen it yet (async mode) admits it at the next step end, so its
 * batch does not repeat: no macro step.  Any other formation repeats as is.
 */
static uint32_t vllm_macro_steps(void *priv, struct kv_replica *r, uint32_t K)
{
	const struct vllm *v = priv;

	(void)r;
	return v->lag_refused ? 0 : K;
}

uint64_t kv_engine_lagged(const void *priv)
{
	return ((const struct kv__engine_base *)priv)->lagged;
}

const struct kv_engine_ops kv_engine_vllm = {
	.name = "vllm",
	.flags = KV_PLUGIN_F_MACRO_STEPS, /* no step or formed hook; admit is never asked with nobody waiting */
	.desc = "vLLM V1: one token budget per step, running requests first; KV allocated per step; on allocation failure preempt the scheduler's victim by recompute and admit nobody that step; prefix cache keeps freed blocks until evicted LRU",
	.priv_size = sizeof(struct vllm),
	.options = vllm_options,
	.versions = vllm_versions,
	.init = vllm_init,
	.fini = vllm_fini,
	.cache = vllm_cache,
	.perf = vllm_perf,
	.step = vllm_step,
	.admit = vllm_admit,
	.formed = vllm_formed,
	.macro_steps = vllm_macro_steps,
};

struct vllm_v0 {
	struct kv__engine_base base; /* the front end's cost, embed_lookup and worker_sync are used */
	/* state: multi-step scheduling (num_scheduler_steps = n > 1) */
	uint64_t pass_pos; /* decode steps of the current pass already formed, mod n; 0: a pass boundary */
	uint64_t pass_gated; /* formations that refused waiting requests mid-pass (statistics, tests) */
};

/*
 * V0's versions: "legacy" is kvsim before the host model (no host time, no
 * graph padding: the golden digests' behaviour); 0.5 runs every step in
 * sequence, detokenising in the engine; 0.6 overlaps output processing with
 * the next step (the async output processor) and takes num_scheduler_steps.
 * Graphs are captured for 1, 2, 4 and multiples of 8 up to 256
 * (vllm/worker/model_runner.py _BATCH_SIZES_TO_CAPTURE).
 */
static const char *const vllm_v0_version_names[] = { "legacy", "0.5", "0.6", NULL };
static const struct kv_host_version vllm_v0_versions[] = {
	{ .name = "legacy", .on = 0 },
	{ .name = "0.5", .on = 1, .mode = KV_HOST_SYNC, .graph_max = 256, .coef = { KV__HOST_VLLM_V0_COEFS },
	  .rel_sd = { KV__HOST_VLLM_V0_REL_SD }, .source = KV__HOST_FIT_SOURCE },
	{ .name = "0.6", .on = 1, .mode = KV_HOST_SYNC, .output_async = 1, .graph_max = 256, .coef = { KV__HOST_VLLM_V0_COEFS },
	  .rel_sd = { KV__HOST_VLLM_V0_REL_SD }, .source = KV__HOST_FIT_SOURCE },
	{ .name = NULL },
};

static const struct kv_option vllm_v0_options[] = {
	KV__ENGINE_FRONTEND_OPTION(struct vllm_v0, 0, 1, 1969000, "1.969 ms: 4 uvicorn workers / 2031 req/s (FastAPI hello world, wrk: gist patx/1269e389); configs/fidelity/fit.sh on 2026-12-02 fits 31.6 ms to vLLM 0.3-0.6 at light load, a latency rather than API-server time (docs/fidelity.md)"), /* V0 detokenises in the engine process */
	KV__ENGINE_EMBED_OPTION(struct vllm_v0),
	{ .name = "worker_sync", .type = KV_OPT_NS, .offset = offsetof(struct vllm_v0, base.worker_sync_ns),
	  .def = 0, .min = 0, .max = 1e9, .units = "ns",
	  .help = "per-step host cost of driving the TP/PP workers (multi-GPU replicas): V0's driver broadcasts each step's inputs to its workers (broadcast_tensor_dict) before the forward pass; 0 (docs/fidelity.md fits it)" },
	KV__ENGINE_HOST_OPTIONS(struct vllm_v0, vllm_v0_version_names, 0),
	{ .name = "executor", .type = KV_OPT_ENUM, .offset = offsetof(struct vllm_v0, base.executor),
	  .def = 0, .units = "", .names = kv__engine_executor_names,
	  .help = "how a multi-GPU replica drives its workers: mp (worker processes, or one in-process worker) or ray (Ray actors: adds ray_step_overhead per step)" },
	{ .name = "ray_step_overhead", .type = KV_OPT_NS, .offset = offsetof(struct vllm_v0, base.ray_step_ns),
	  .def = 274000, .min = 0, .max = 1e9, .units = "ns",
	  .help = "added per step by executor ray: 0.27 ms, vLLM PR 11107 (V1 Ray vs mp, Llama-3.1-8B TP2)" },
	KV__ENGINE_INPUTS_OPTIONS(struct vllm_v0),
	{ .name = NULL },
};

static int vllm_v0_init(void *priv, struct kv_replica *r, struct kv_diag *d)
{
	struct vllm_v0 *v = priv;

	(void)d;
	kv__engine_base_init(&v->base, r);
	return 0;
}

/*
 * Multi-step scheduling (vLLM 0.6, --num-scheduler-steps n; docs/host-model.md):
 * the scheduler runs once per pass and the workers run the pass's n decode
 * steps from that one output, so a request that arrives mid-pass waits for the
 * pass to end (vllm/engine/llm_engine.py step(): a new SchedulerOutput only
 * when the cached one has no steps left; the vLLM 0.6.0 release post,
 * "Multi-step scheduling").  A step with prefill runs alone as a pass of one
 * step (multi-step prefill was not supported in 0.6.0).  pass_pos counts the
 * decode steps formed in the current pass, mod n: a formation with requests
 * running is refused admission unless pass_pos is 0.  Inert with n = 1.
 */
static uint64_t v0_steps(const struct vllm_v0 *v)
{
	return v->base.sched_steps > 1 ? v->base.sched_steps : 1;
}

static void vllm_v0_step(void *priv, struct kv_replica *r, int again)
{
	struct vllm_v0 *v = priv;

	(void)again;
	if (v->pass_pos && r->n_running) {
		r->step_flags |= KV_STEP_NO_ADMIT;
		if (r->sched->waiting(r->sched_priv))
			v->pass_gated++;
	}
}

static int vllm_v0_formed(void *priv, struct kv_replica *r)
{
	struct vllm_v0 *v = priv;

	if (r->n_batch == 0)
		return 0; /* nothing ran: the pass does not advance */
	v->pass_pos = r->shape.n_prefill_tokens ? 0 : (v->pass_pos + 1) % v0_steps(v);
	return 0;
}

/*
 * The formations at t[1..] of a macro step repeat the decode batch while the
 * pass lasts: with requests waiting, up to the next boundary (pass_pos 0 after
 * t[0]'s formed(): the next formation is one); with none waiting, the batch
 * repeats whatever the pass position (an arrival ends the macro step).  The
 * formations inside a pass try no admission (vllm_v0_step), so the memory
 * refusals of t[0]'s formation, a boundary's, are not made again in them
 * (macro.no_admit).
 */
static uint32_t vllm_v0_macro_steps(void *priv, struct kv_replica *r, uint32_t K)
{
	const struct vllm_v0 *v = priv;
	uint64_t n = v0_steps(v), left;

	if (n == 1 || r->sched->waiting(r->sched_priv) == 0)
		return K;
	left = v->pass_pos ? n - v->pass_pos + 1 : 1;
	r->macro.no_admit = 1; /* t[1..left - 1] fall inside the pass */
	return (uint32_t)KV_MIN((uint64_t)K, left);
}

static void vllm_v0_macro_apply(void *priv, struct kv_replica *r, uint32_t n)
{
	struct vllm_v0 *v = priv;
	uint64_t steps = v0_steps(v), i;

	for (i = 0; i < n; i++) { /* each formation: step() then formed() of a decode batch */
		if (v->pass_pos && r->n_running && r->sched->waiting(r->sched_priv))
			v->pass_gated++;
		v->pass_pos = (v->pass_pos + 1) % steps;
	}
}

uint64_t kv_engine_vllm_v0_pass_gated(const void *priv)
{
	return ((const struct vllm_v0 *)priv)->pass_gated;
}

/* worker_sync, plus ray_step_overhead with executor ray, ns (x + 0.0 is x: mp unchanged). */
static double v0_sync_ns(const struct kv__engine_base *b)
{
	return (double)b->worker_sync_ns + (b->executor ? (double)b->ray_step_ns : 0.0);
}

/* The embedding model and the workers' per-step cost: V0 has no GEMM ramp. */
static void vllm_v0_perf(const void *priv, struct kv_perf *pf)
{
	const struct vllm_v0 *v = priv;

	kv_perf_set_embed_lookup(pf, v->base.embed_lookup);
	/* the workers' per-step cost, a host term (host.h), as kv_perf_set_comm sets it; the all-reduce as it is */
	pf->host.worker_sync_ns = pf->tp * pf->pp > 1 ? v0_sync_ns(&v->base) : 0.0;
	kv__engine_host_perf(&v->base, &vllm_v0_versions[v->base.version], pf);
}

const struct kv_engine_ops kv_engine_vllm_v0 = {
	.name = "vllm-v0",
	.flags = KV_PLUGIN_F_MACRO_STEPS, /* no admit hook; step and formed keep the multi-step pass */
	.desc = "vLLM V0 (kvsim before engines): admission reserves the whole prefill; the configured cache model as is; no GEMM ramp",
	.priv_size = sizeof(struct vllm_v0),
	.options = vllm_v0_options,
	.versions = vllm_v0_versions,
	.init = vllm_v0_init,
	.perf = vllm_v0_perf,
	.step = vllm_v0_step,
	.formed = vllm_v0_formed,
	.macro_steps = vllm_v0_macro_steps,
	.macro_apply = vllm_v0_macro_apply,
};
