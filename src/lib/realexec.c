/* realexec.c -- the real executor; see realexec.h. */
#include "realexec.h"
#include "../../sim/replica.h"

#include <stdlib.h>
#include <string.h>

uint32_t kv_exec_kind_dtype(const char *kind)
{
	/* the CPU backend computes and stores fp32; the CUDA one fp16 */
	return !strcmp(kind, "cuda") ? 2 : 4;
}

static int exec_fail(struct kv_diag *d, int err, const char *fmt, unsigned long long a,
		     unsigned long long b)
{
	return kv_diag_set(d, err, "", 0, 0, "backend", fmt, a, b);
}

static void log_iter(struct kv_real_exec *e, const struct kv_batch_shape *sh, kv_ns model,
		     kv_ns real)
{
	struct kv_iter_rec *r;

	if (e->n_log == e->cap_log) {
		/* amortised doubling: a real step takes milliseconds, this is noise */
		e->cap_log = e->cap_log ? 2 * e->cap_log : 1024;
		e->log = kv_xrealloc(e->log, e->cap_log * sizeof(*e->log));
	}
	r = &e->log[e->n_log++];
	r->shape = *sh;
	r->model_ns = model;
	r->real_ns = real;
}

static int exec_iter(void *ctx, struct kv_replica *r, kv_ns model_ns, kv_ns *ns)
{
	struct kv_real_exec *e = ctx;
	uint32_t i;
	uint64_t t = 0;
	int rc;

	for (i = 0; i < r->n_batch; i++) {
		const struct kv_req *q = r->batch[i];
		uint32_t *u = e->units + (size_t)i * e->max_units;
		uint64_t end = q->kv_tokens + q->batch_tokens;
		uint64_t n = r->cache->units(r->cache_priv, q, u, e->max_units);

		if (n == UINT64_MAX || n * e->page_tokens < end)
			return exec_fail(&r->sim->diag, KV_EINVARIANT,
					 "request %llu holds fewer pages than its %llu tokens need",
					 (unsigned long long)q->id, (unsigned long long)end);
		e->seqs[i].pages = (const int32_t *)u;
		/* only the pages the tokens use: a full reservation lists more */
		e->seqs[i].n_pages = (uint32_t)kv_div_ceil(end, e->page_tokens);
		e->seqs[i].ctx = (uint32_t)q->kv_tokens;
		e->seqs[i].n_new = q->batch_tokens;
		/* as the engine counts n_sample: decodes, and the chunk ending a prefill */
		e->seqs[i].sample = q->kv_tokens >= q->prefill_target || end >= q->prefill_target;
	}
	rc = kv_backend_rc(kv_backend_step(e->be, e->seqs, r->n_batch, &t));
	if (rc)
		return kv_diag_set(&r->sim->diag, rc, "", 0, 0, "backend",
				   "a %u-sequence step failed on the %s backend: %s", r->n_batch,
				   e->info.kind, kv_backend_last_error(e->be));
	*ns = t ? t : 1;
	log_iter(e, &r->shape, model_ns, *ns);
	return 0;
}

int kv_real_exec_open(struct kv_real_exec *e, const char *kind, struct kv_sim *s,
		      struct kv_sim_config *cfg, int threads, int cpu_clock, struct kv_diag *d)
{
	struct kv_backend_opts o = { 0 };
	const struct kv_replica *r = &s->rep[0];
	uint64_t unit = s->grp[0].pool_unit_bytes, tb = s->grp[0].token_bytes;
	int rc;

	memset(e, 0, sizeof(*e));
	if (s->n_rep != 1 || cfg->tp != 1 || cfg->pp > 1)
		return kv_diag_set(d, KV_EINVAL, "", 0, 0, "backend",
				   "runs one replica of one device: got %llu replicas, tp %llu, pp %llu",
				   (unsigned long long)s->n_rep, (unsigned long long)cfg->tp,
				   (unsigned long long)(cfg->pp ? cfg->pp : 1));
	if (!cfg->cache->units)
		return kv_diag_set(d, KV_EINVAL, "", 0, 0, "cache",
				   "cache model '%s' cannot run on a backend: expected full or chunked",
				   cfg->cache->name);
	if (!r->cache->units) /* an engine's prefix cache replaced the configured model */
		return kv_diag_set(d, KV_EINVAL, "", 0, 0, "engine",
				   "engine '%s' runs the cache model '%s' (its prefix cache), which "
				   "cannot run on a backend: expected engine.prefix_caching: false or "
				   "engine: vllm-v0",
				   cfg->engine ? cfg->engine->name : "vllm-v0", r->cache->name);
	if (r->offload != KV_OFFLOAD_NONE)
		return kv_diag_set(d, KV_EINVAL, "", 0, 0, "cache.offload",
				   "offload is simulated only: expected offload: false with a backend");
	if (cfg->model.dtype_bytes != kv_exec_kind_dtype(kind))
		return kv_diag_set(d, KV_EINVAL, "", 0, 0, "model.dtype_bytes",
				   "bad value %u: the %s backend stores %u-byte elements",
				   cfg->model.dtype_bytes, kind, kv_exec_kind_dtype(kind));
	if (unit % tb)
		return kv_diag_set(d, KV_EINVAL, "", 0, 0, "memory.min_block",
				   "the pool unit (%llu bytes) is not a whole number of %llu-byte "
				   "tokens: a backend page must be one unit; expected a unit of "
				   "16 tokens (%llu bytes) when that is a power of two",
				   (unsigned long long)unit, (unsigned long long)tb,
				   (unsigned long long)(16 * tb));
	e->page_tokens = (uint32_t)(unit / tb);
	e->max_seqs = cfg->max_batch_seqs;
	/* a full reservation rounded to a power of two can hold twice the context */
	e->max_units = 2 * kv_div_ceil(cfg->model.max_ctx_tokens, e->page_tokens) + 1;
	o.model = &cfg->model;
	o.kv_pages = s->grp[0].pool_bytes / unit;
	o.page_tokens = e->page_tokens;
	o.max_batch_tokens = (uint32_t)KV_MIN(cfg->max_batch_tokens, (uint64_t)UINT32_MAX);
	o.max_batch_seqs = cfg->max_batch_seqs;
	o.max_ctx_tokens = cfg->model.max_ctx_tokens;
	o.seed = cfg->seed;
	o.threads = threads;
	o.cpu_clock = cpu_clock;
	rc = kv_backend_open(kind, &o, &e->be, d);
	if (rc)
		return kv_backend_rc(rc);
	kv_backend_get_info(e->be, &e->info);
	if (e->info.page_bytes != unit) {
		kv_real_exec_close(e);
		return exec_fail(d, KV_EINVAL,
				 "the backend's page is %llu bytes but the pool unit is %llu",
				 e->info.page_bytes, unit);
	}
	e->units = kv_xmalloc((size_t)e->max_seqs * e->max_units * sizeof(*e->units));
	e->seqs = kv_xmalloc((size_t)e->max_seqs * sizeof(*e->seqs));
	e->x.ctx = e;
	e->x.iter = exec_iter;
	cfg->exec = &e->x;
	return 0;
}

void kv_real_exec_close(struct kv_real_exec *e)
{
	if (e->be)
		kv_backend_close(e->be);
	free(e->units);
	free(e->seqs);
	free(e->log);
	memset(e, 0, sizeof(*e));
}

int kv_backend_rc(int rc)
{
	return rc == 0 || rc == KV_EINVAL || rc == KV_ERANGE ? rc : KV_EBACKEND;
}
