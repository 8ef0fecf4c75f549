/*
 * serving.c -- what the engine plugins share (serving.h): the front end's
 * per-request cost, the GEMM ramp handed to the perf model, and the prefix
 * cache the vllm and sglang engines run on.
 *
 * The prefix cache is the `shared` cache model (cache_shared.c) with
 * request_blocks on and blocks of block_size tokens: a running request's
 * complete prompt blocks are findable as the engine makes them so (its
 * `publish`: vLLM V1 when allocated, SGLang when computed), the blocks a
 * request frees (finished, or preempted by recompute) stay cached under
 * their hash chain until evicted LRU, and a later request with the same
 * prefix (a Mooncake hash id chain, a system prompt), a concurrent one, or
 * the same request resuming finds them.  Chosen over a new model: it already keeps reference counts,
 * the LRU list and a flat index, and its invariants are tested.  Only the
 * default `full` model (and `shared` itself) is replaced; a `full` with
 * non-default options and the other models (quantized, sparse, chunked)
 * keep their own memory equation and run without a prefix cache.
 */
#include "serving_impl.h"

#include "cache.h"
#include "engine.h"
#include "perf.h"
#include "replica.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

extern const struct kv_cache_ops kv_cache_full, kv_cache_shared;

void kv__engine_base_init(const struct kv__engine_base *b, struct kv_replica *r)
{
	kv__frontend_init(&r->fe, &b->fe, b->frontend_ns);
}

const char *const kv__engine_car_names[] = { "off", "vllm", "sglang", NULL };
const char *const kv__engine_executor_names[] = { "mp", "ray", NULL };
const char *const kv__engine_inputs_names[] = { "broadcast", "metadata", NULL };

void kv__engine_base_perf(const struct kv__engine_base *b, struct kv_perf *pf)
{
	struct kv_comm_car car = { .impl = b->custom_ar, .max_bytes = (double)b->custom_ar_max };
	double sync = (double)b->worker_sync_ns + (b->executor ? (double)b->ray_step_ns : 0.0);

	pf->gemm_half_tokens = b->gemm_half_tokens;
	kv_perf_set_embed_lookup(pf, b->embed_lookup);
	kv_perf_set_comm(pf, &car, sync);
}

double kv__engine_worker_seq_ns(const struct kv__engine_base *b, const struct kv_perf *pf)
{
	double workers = (double)pf->tp * (double)pf->pp;

	return b->worker_inputs && workers > 1 ? (double)b->worker_seq_ns * workers : 0.0;
}

const char *const kv__async_names[] = { "version", "off", "on", NULL };

/* Coefficient i: an option >= 0, else the host profile's, else the version's / cpu_speed. */
static double host_coef_value(const struct kv__engine_base *b, const struct kv_host_version *v,
			      const struct kv_host_profile *hp, enum kv_host_coef i)
{
	double speed = hp && hp->cpu_speed > 0 ? hp->cpu_speed : 1.0;

	if (b->coef[i] >= 0)
		return b->coef[i];
	if (hp && hp->set >> i & 1)
		return hp->coef[i];
	return v->coef[i] / speed;
}

/* host_coef_value, times exp(rel_sd * z) under an --uncertainty draw (uncert.h). */
static double host_coef(const struct kv__engine_base *b, const struct kv_host_version *v,
			const struct kv_host_profile *hp, enum kv_host_coef i)
{
	double x = host_coef_value(b, v, hp, i);

	if (hp && hp->unc_z[i] != 0 && v->rel_sd[i] > 0)
		x *= exp(v->rel_sd[i] * hp->unc_z[i]);
	return x;
}

void kv__engine_host_perf(const struct kv__engine_base *b, const struct kv_host_version *v,
			  struct kv_perf *pf)
{
	struct kv_host *h = &pf->host;
	uint64_t block = b->block_tokens ? b->block_tokens : 16;
	double wsync = h->worker_sync_ns; /* kv_perf_set_comm's, kept */
	int i;

	memset(h, 0, sizeof(*h));
	h->worker_sync_ns = wsync;
	h->worker_seq_ns = kv__engine_worker_seq_ns(b, pf);
	if (!b->host_model || !v->on)
		return; /* the GPU model alone, as before the host model */
	h->on = 1;
	h->mode = b->async_sched == 2 ? KV_HOST_ASYNC : b->async_sched == 1 ? KV_HOST_SYNC : v->mode;
	h->output_async = v->output_async;
	h->steps = (double)(b->sched_steps ? b->sched_steps : 1);
	if (h->mode == KV_HOST_SYNC && h->steps > 1)
		h->mode = KV_HOST_MULTISTEP;
	for (i = 0; i < KV_HOST_NCOEF; i++)
		*kv_host_coef(h, i) = host_coef(b, v, pf->host_prof, i);
	if (!b->prefix_caching)
		h->hash_ns = 0; /* nothing is hashed without a prefix cache */
	h->inv_block_tokens = 1.0 / (double)block;
	h->graph_max = b->cuda_graphs ? (uint32_t)(b->graph_max ? b->graph_max : v->graph_max) : 0;
	h->eager_ns = (double)pf->layers * b->kernels_per_layer * h->launch_ns;
}

void kv__engine_host_init(struct kv__engine_base *b, const struct kv_host_version *v)
{
	int async = b->async_sched == 2 || (b->async_sched == 0 && v->mode == KV_HOST_ASYNC);

	b->async_on = b->host_model && v->on && async;
}

void kv__engine_host_step(struct kv__engine_base *b, const struct kv_replica *r)
{
	b->running_at_step = r->n_running;
}

int kv__engine_lagged(struct kv__engine_base *b, const struct kv_replica *r,
		      const struct kv_req *q)
{
	if (!b->async_on || !b->running_at_step || r->iter_end_ns != r->sim->now ||
	    q->arrival_ns + q->fe_in_ns <= r->iter_start_ns) /* reached the scheduler (front end passed) */
		return 0;
	b->lagged++;
	return 1;
}

/* Whether c runs `full` with every option at its default. */
static int plain_full(const struct kv_sim_config *c)
{
	void *def;
	int same;

	if (c->cache != &kv_cache_full)
		return 0;
	def = kv_xcalloc(1, kv_cache_full.priv_size ? kv_cache_full.priv_size : 1);
	kv_options_defaults(kv_cache_full.options, def);
	same = !c->cache_opts || !memcmp(def, c->cache_opts, kv_cache_full.priv_size);
	free(def);
	return same;
}

const struct kv_cache_ops *kv__engine_base_cache(const struct kv__engine_base *b,
						 const struct kv_sim_config *c, void **opts,
						 unsigned publish)
{
	const struct kv_cache_ops *sh = &kv_cache_shared;

	if (!b->prefix_caching || (c->cache != sh && !plain_full(c)))
		return NULL;
	*opts = kv_xcalloc(1, sh->priv_size);
	if (c->cache == sh && c->cache_opts) {
		memcpy(*opts, c->cache_opts, sh->priv_size); /* the user's blocks and system prompt */
	} else {
		kv_options_defaults(sh->options, *opts);
		kv_option_set(sh->options, *opts, "prefix_block_tokens", (double)b->block_tokens);
		kv_option_set(sh->options, *opts, "block_tokens", (double)b->block_tokens);
	}
	kv_option_set(sh->options, *opts, "request_blocks", 1);
	kv_option_set(sh->options, *opts, "publish", (double)publish);
	return sh;
}

uint64_t kv__engine_ended(const struct kv_sim *s)
{
	uint64_t n = 1;
	int e;

	for (e = 0; e < KV_END_N; e++)
		n += s->ended[e];
	return n;
}
