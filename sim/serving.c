/*
 * serving.c -- what the engine plugins share (serving.h): the front end's
 * per-request cost, the GEMM ramp handed to the perf model, and the prefix
 * cache the vllm and sglang engines run on.
 *
 * The prefix cache is the `shared` cache model (cache_shared.c) with
 * request_blocks on and blocks of block_size tokens: the blocks a request
 * frees (finished, or preempted by recompute) stay cached under their hash
 * chain until evicted LRU, and a later request with the same prefix (a
 * Mooncake hash id chain, a system prompt) or the same request resuming
 * finds them.  Chosen over a new model: it already keeps reference counts,
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

#include <stdlib.h>
#include <string.h>

extern const struct kv_cache_ops kv_cache_full, kv_cache_shared;

void kv__engine_base_init(const struct kv__engine_base *b, struct kv_replica *r)
{
	kv__frontend_init(&r->fe, &b->fe, b->frontend_ns);
}

void kv__engine_base_perf(const struct kv__engine_base *b, struct kv_perf *pf)
{
	pf->gemm_half_tokens = b->gemm_half_tokens;
	kv_perf_set_embed_lookup(pf, b->embed_lookup);
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
						 const struct kv_sim_config *c, void **opts)
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
