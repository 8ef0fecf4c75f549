/*
 * engine_sglang.c -- SGLang's scheduling semantics.  docs/engines.md cites
 * the source of every rule (python/sglang/srt/managers/scheduler.py
 * Scheduler.get_next_batch_to_run and update_running_batch,
 * schedule_policy.py PrefillAdder, schedule_batch.py retract_decode,
 * mem_cache/radix_cache.py).
 *
 * One step is a prefill batch or a decode batch, not both (unless
 * enable_mixed_chunk): when requests wait (or one is mid-prefill), the step
 * first tries a prefill batch of at most chunked_prefill_size new tokens;
 * if nothing could be added it runs a decode batch of every running request.
 * A waiting request is admitted only if its remaining prefill plus its
 * clipped remaining output, min(max_new, clip), is below
 *
 *   free + evictable - sum over running r of ratio * min(max_new_r - out_r, clip)
 *                    - what this step admitted already,
 *
 * in tokens (the conservative new-token estimate), and allocates KV for
 * its chunk only.  The ratio starts at init_new_token_ratio, falls by
 * (init - min) / decay_steps per decode step down to min_new_token_ratio,
 * and when a decode step runs out of memory the scheduler's victims are
 * retracted (preempted by recompute) and the ratio is raised to
 * min(1, (decoded + retract_decode_steps * n) / (max_new + 1)) over the
 * requests left running.  With no request running it is reset to init.
 * One rule is kvsim's own: after a retraction no request is admitted until
 * some request ends (or none runs), so a scheduler whose victims alternate
 * (drf, vtc) cannot retract and re-admit the same requests forever; SGLang
 * needs no such rule because its own victim order (fewest outputs first)
 * keeps the most advanced request running.
 * The radix cache is approximated by block hashes (serving.c): a matched
 * prefix is a whole number of blocks, where SGLang matches tokens.
 */
#include "serving_impl.h"

#include "engine.h"
#include "replica.h"

struct sglang {
	struct kv__engine_base base; /* front end, radix cache (prefix_caching), GEMM ramp */
	uint64_t chunked_prefill_size; /* new prefill tokens per prefill batch; 0 = batching.max_tokens */
	int enable_mixed_chunk; /* decodes join prefill batches; default off */
	double init_ratio; /* init_new_token_ratio, default 0.7 */
	double min_ratio; /* min_new_token_ratio, default 0.7 * 0.14 = 0.098 */
	uint64_t decay_steps; /* decode steps from init to min, default 600 */
	uint64_t retract_steps; /* retract_decode_steps, default 20 */
	uint64_t clip_tokens; /* clip of a request's remaining output estimate, default 4096 */
	/* state */
	double ratio; /* new_token_ratio now */
	double reserved_tokens; /* subtracted by the admission test this step, tokens: the running requests' ratio estimates and the unallocated rest of this batch's admissions */
	int prefill_step; /* the step being formed is a prefill batch */
	uint64_t retractions; /* decode steps that retracted (statistics, tests) */
	uint64_t closed_at; /* requests ended in the run when admission closed after a retraction; 0: open */
};

/*
 * SGLang's versions (docs/engines.md, "Versions"): 0.3 runs every step in
 * sequence; 0.4 runs the overlap scheduler (on by default since v0.4,
 * Scheduler.event_loop_overlap: the next batch is scheduled while this one
 * runs).  Graphs are captured for 1, 2, 4 and multiples of 8 up to 160
 * (cuda_graph_runner.py get_batch_sizes_to_capture).
 */
static const char *const sglang_version_names[] = { "0.4", "0.3", NULL };
static const struct kv_host_version sglang_versions[] = {
	{ .name = "0.4", .on = 1, .mode = KV_HOST_ASYNC, .graph_max = 160, .coef = { KV__HOST_SGLANG_COEFS },
	  .rel_sd = { KV__HOST_SGLANG_REL_SD }, .source = KV__HOST_FIT_SOURCE },
	{ .name = "0.3", .on = 1, .mode = KV_HOST_SYNC, .graph_max = 160, .coef = { KV__HOST_SGLANG_COEFS },
	  .rel_sd = { KV__HOST_SGLANG_REL_SD }, .source = KV__HOST_FIT_SOURCE },
	{ .name = NULL },
};

static const struct kv_option sglang_options[] = {
	KV__ENGINE_FRONTEND_OPTION(struct sglang, 1000, 2, 7880000, "7.88 ms, fitted by configs/fidelity/fit.sh on 2026-12-02 to SGLang 0.3.0's rows"),
	KV__ENGINE_BASE_OPTIONS(struct sglang, 128, "128, fitted by configs/fidelity/fit.sh on 2026-12-02 to SGLang 0.3.0's rows (0 and 384 fit worse)"),
	KV__ENGINE_COMM_OPTIONS(struct sglang, KV_CAR_SGLANG, 2000000, "2 ms, fitted by configs/fidelity/fit.sh on 2026-12-02 to SGLang 0.3.0's TP 4 rows"),
	KV__ENGINE_HOST_OPTIONS(struct sglang, sglang_version_names, 0),
	{ .name = "chunked_prefill_size", .type = KV_OPT_U64,
	  .offset = offsetof(struct sglang, chunked_prefill_size), .def = 0, .min = 0,
	  .max = 1 << 24, .units = "tokens",
	  .help = "new prefill tokens per prefill batch (0: batching.max_tokens)" },
	{ .name = "enable_mixed_chunk", .type = KV_OPT_BOOL,
	  .offset = offsetof(struct sglang, enable_mixed_chunk), .def = 0, .min = 0, .max = 1,
	  .units = "", .help = "run decodes in the prefill batch (mixed chunked prefill)" },
	{ .name = "init_new_token_ratio", .type = KV_OPT_DBL,
	  .offset = offsetof(struct sglang, init_ratio), .def = 0.7, .min = 0, .max = 1,
	  .units = "", .help = "share of a running request's remaining output reserved at admission, at start" },
	{ .name = "min_new_token_ratio", .type = KV_OPT_DBL,
	  .offset = offsetof(struct sglang, min_ratio), .def = 0.098, .min = 0, .max = 1,
	  .units = "", .help = "the floor the ratio decays to (0.7 * 0.14)" },
	{ .name = "new_token_ratio_decay_steps", .type = KV_OPT_U64,
	  .offset = offsetof(struct sglang, decay_steps), .def = 600, .min = 1, .max = 1 << 30,
	  .units = "steps", .help = "decode steps for the ratio to decay from init to min" },
	{ .name = "retract_decode_steps", .type = KV_OPT_U64,
	  .offset = offsetof(struct sglang, retract_steps), .def = 20, .min = 0, .max = 1 << 20,
	  .units = "steps", .help = "decode steps per request the raised ratio provisions after a retraction" },
	{ .name = "clip_max_new_tokens", .type = KV_OPT_U64,
	  .offset = offsetof(struct sglang, clip_tokens), .def = 4096, .min = 1, .max = 1 << 30,
	  .units = "tokens", .help = "clip of a request's remaining output in the estimate" },
	KV__ENGINE_INPUTS_OPTIONS(struct sglang),
	{ .name = NULL },
};

static int sglang_init(void *priv, struct kv_replica *r, struct kv_diag *d)
{
	struct sglang *g = priv;

	if (g->min_ratio > g->init_ratio)
		return kv_diag_set(d, KV_EINVAL, "", 0, 0, "engine.min_new_token_ratio",
				   "bad value %g: expected at most init_new_token_ratio (%g)",
				   g->min_ratio, g->init_ratio);
	kv__engine_base_init(&g->base, r);
	kv__engine_host_init(&g->base, &sglang_versions[g->base.version]);
	g->ratio = g->init_ratio;
	return 0;
}

static const struct kv_cache_ops *sglang_cache(const void *priv, const struct kv_sim_config *c,
					       void **opts)
{
	const struct sglang *g = priv;

	return kv__engine_base_cache(&g->base, c, opts, 1); /* cache_unfinished_req (cache_shared.c publish) */
}

static void sglang_perf(const void *priv, struct kv_perf *pf)
{
	const struct sglang *g = priv;

	kv__engine_base_perf(&g->base, pf);
	kv__engine_host_perf(&g->base, &sglang_versions[g->base.version], pf);
}

/* q's remaining output, clipped: SGLang's min(max_new_tokens - output_len, clip). */
static uint64_t out_left(const struct sglang *g, const struct kv_req *q)
{
	return KV_MIN(q->output_tokens - q->generated, g->clip_tokens);
}

/* Whether a prefill batch can be tried: requests wait, or one is mid-prefill. */
static int prefill_pending(const struct kv_replica *r)
{
	uint32_t i;

	if (r->sched->waiting(r->sched_priv))
		return 1;
	for (i = 0; i < r->n_running; i++)
		if (r->running[i]->kv_tokens < r->running[i]->prefill_target)
			return 1;
	return 0;
}

static void sglang_step(void *priv, struct kv_replica *r, int again)
{
	struct sglang *g = priv;
	const struct kv_sim_config *c = r->cfg;
	uint32_t i;

	kv__engine_host_step(&g->base, r); /* the async mode's view of this formation */
	if (r->n_running == 0)
		g->ratio = g->init_ratio; /* idle: the estimate starts over */
	if (g->closed_at && (r->n_running == 0 || kv__engine_ended(r->sim) != g->closed_at))
		g->closed_at = 0; /* a request ended: admission reopens */
	g->prefill_step = !again && !g->closed_at && prefill_pending(r);
	if (!g->prefill_step) {
		r->step_flags = KV_STEP_NO_ADMIT;
		r->budget_tokens = KV_MAX(c->max_batch_tokens, (uint64_t)c->max_batch_seqs);
		return;
	}
	if (!g->enable_mixed_chunk) /* a prefill batch never retracts: it is just not formed */
		r->step_flags = KV_STEP_NO_DECODE | KV_STEP_NO_PREEMPT;
	if (g->chunked_prefill_size)
		r->budget_tokens = g->chunked_prefill_size;
	g->reserved_tokens = 0;
	for (i = 0; i < r->n_running; i++)
		g->reserved_tokens += g->ratio * (double)out_left(g, r->running[i]);
}

/* PrefillAdder's test: the request's whole estimate must fit what is left. */
static int sglang_admit(void *priv, struct kv_replica *r, struct kv_req *q, uint64_t take,
			uint64_t *want)
{
	struct sglang *g = priv;
	double need = (double)(q->prefill_target - q->kv_tokens) + (double)out_left(g, q);

	/* a waiting request makes sglang_macro_steps return 0: no macro step to keep exact */
	if (kv__engine_lagged(&g->base, r, q))
		return KV_ERANGE;
	if (r->n_running || r->n_batch) { /* alone, only memory decides */
		double bytes = (double)r->pool.free_bytes +
			       (r->cache->evictable_bytes ?
					(double)r->cache->evictable_bytes(r->cache_priv) :
					0.0);

		if (need >= bytes / r->beta_bytes - g->reserved_tokens)
			return KV_ERANGE;
	}
	/*
	 * The replica allocates this step's `take` tokens right after, so the
	 * pool's free bytes will count them: reserve only the rest (SGLang
	 * subtracts the whole estimate from the free size it read before the
	 * batch allocated anything; subtracting it from the free size after
	 * would count the chunk twice).
	 */
	g->reserved_tokens += need - (double)take;
	*want = q->kv_tokens + take;
	return 0;
}

/* The ratio after a retraction, over the requests left running. */
static double retract_ratio(const struct sglang *g, const struct kv_replica *r)
{
	double decoded = 0, max_new = 0;
	uint32_t i;

	for (i = 0; i < r->n_running; i++) {
		decoded += (double)r->running[i]->generated;
		max_new += (double)r->running[i]->output_tokens;
	}
	decoded += (double)g->retract_steps * r->n_running;
	return KV_MIN(1.0, decoded / (max_new + 1));
}

static int sglang_formed(void *priv, struct kv_replica *r)
{
	struct sglang *g = priv;

	if (g->prefill_step && !g->enable_mixed_chunk && r->n_batch == 0 && r->n_running)
		return 1; /* nothing to prefill: run the decode batch */
	if (!r->shape.n_decode)
		return 0;
	if (r->step_preempted) {
		g->ratio = retract_ratio(g, r);
		g->retractions++;
		g->closed_at = kv__engine_ended(r->sim);
	} else {
		g->ratio -= (g->init_ratio - g->min_ratio) / (double)g->decay_steps;
		g->ratio = KV_MAX(g->ratio, g->min_ratio);
	}
	return 0;
}

/*
 * Macro steps (serving.h): a decode batch with nobody waiting (a waiting
 * request makes every formation try a prefill batch first, whose admission
 * test reads the decaying ratio and the free memory) and nobody retracted
 * is formed again the same at every step end: step() sets the decode
 * step's flags and budget (clearing closed_at when a request ended anywhere,
 * which only a prefill formation reads: the formation after the run clears
 * it the same way, the ended count only grows) and formed() decays the
 * ratio, which macro_apply repeats.
 */
static uint32_t sglang_macro_steps(void *priv, struct kv_replica *r, uint32_t K)
{
	const struct sglang *g = priv;

	if (g->prefill_step || r->step_preempted || r->sched->waiting(r->sched_priv))
		return 0;
	return K;
}

/* The ratio's decay of n decode formations, as sglang_formed computes it. */
static void sglang_macro_apply(void *priv, struct kv_replica *r, uint32_t n)
{
	struct sglang *g = priv;
	uint32_t k;

	(void)r;
	for (k = 0; k < n; k++) {
		g->ratio -= (g->init_ratio - g->min_ratio) / (double)g->decay_steps;
		g->ratio = KV_MAX(g->ratio, g->min_ratio);
	}
}

double kv_engine_sglang_ratio(const void *priv)
{
	return ((const struct sglang *)priv)->ratio;
}

uint64_t kv_engine_sglang_retractions(const void *priv)
{
	return ((const struct sglang *)priv)->retractions;
}

const struct kv_engine_ops kv_engine_sglang = {
	.name = "sglang",
	.flags = KV_PLUGIN_F_MACRO_STEPS, /* decode batches with nobody waiting: macro_steps, macro_apply */
	.desc = "SGLang: prefill and decode batches apart (unless mixed chunk); admit while prefill + min(max_new, clip) < free + evictable - ratio * running outputs; ratio decays per decode step, raised on retraction; radix cache as block hashes",
	.priv_size = sizeof(struct sglang),
	.options = sglang_options,
	.versions = sglang_versions,
	.init = sglang_init,
	.cache = sglang_cache,
	.perf = sglang_perf,
	.step = sglang_step,
	.admit = sglang_admit,
	.formed = sglang_formed,
	.macro_steps = sglang_macro_steps,
	.macro_apply = sglang_macro_apply,
};
