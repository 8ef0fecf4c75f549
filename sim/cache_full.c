/*
 * cache_full.c -- full contiguous preallocation, the naive static layout.
 *
 * Each admitted request reserves, in one contiguous pool block, the KV
 * cache of `max_len` tokens (the model's context when 0), as a
 * `(batch, heads, max_seq_len, head_dim)` tensor does, or of its own
 * prompt + output length with `reserve: request` (an oracle that knows the
 * output length; it bounds what static allocation can do).  A request
 * longer than max_len reserves its own length.  The buddy allocator rounds
 * the block up to a power of two of its unit, so the memory held is
 *
 *   kv_bytes = unit * 2^ceil(log2(ceil(R * b / unit)))   with R the reserved
 *              tokens and b the fp16 KV bytes per token,
 *
 * the cost model's beta is b, and internal waste is kv_bytes - kv_tokens * b:
 * the over-reservation the vLLM paper measured (only 20-38% of KV memory
 * holding live tokens in static systems, Kwon et al., SOSP'23, Fig. 2).
 * A reservation larger than the largest contiguous block never fits: the
 * engine rejects it.  Nothing grows after admission, so `full` never
 * preempts.
 *
 * Per-request words: cache[0] block offset (units), cache[1] block order,
 * cache[2] reserved tokens.
 */
#include "engine.h"

#include <stddef.h>

enum { RESERVE_MAX_LEN, RESERVE_REQUEST };

struct full {
	uint64_t max_len; /* option: tokens reserved per request, 0 = model context */
	int reserve; /* option: max_len or request */
	struct kv_pool *pool;
	uint64_t token_bytes;
};

static const char *const reserve_names[] = { "max_len", "request", NULL };

static const struct kv_option full_options[] = {
	{ .name = "max_len", .type = KV_OPT_U64, .offset = offsetof(struct full, max_len),
	  .def = 0, .min = 0, .max = 1 << 24, .units = "tokens",
	  .help = "tokens reserved per request; 0 = the model's context length" },
	{ .name = "reserve", .type = KV_OPT_ENUM, .offset = offsetof(struct full, reserve),
	  .def = RESERVE_MAX_LEN, .units = "", .names = reserve_names,
	  .help = "max_len: reserve max_len tokens; request: the request's own prompt+output" },
	{ .name = NULL },
};

static int full_init(void *priv, const struct kv_cache_env *env, struct kv_diag *d)
{
	struct full *f = priv;

	if (f->max_len > env->model->max_ctx_tokens)
		return kv_diag_set(d, KV_EINVAL, "", 0, 0, "cache.max_len",
				   "bad value %llu: expected at most %s's context of %u tokens",
				   (unsigned long long)f->max_len, env->model->name,
				   env->model->max_ctx_tokens);
	if (!f->max_len)
		f->max_len = env->model->max_ctx_tokens;
	f->pool = env->pool;
	f->token_bytes = env->token_bytes;
	return 0;
}

static int full_reserve(void *priv, struct kv_req *q, uint64_t tokens)
{
	struct full *f = priv;
	uint64_t want;
	uint32_t off;
	int order;

	if (q->kv_bytes)
		return tokens <= q->kv_cap_tokens ? 0 : KV_ENOMEM;
	want = f->reserve == RESERVE_REQUEST ? q->prompt_tokens + q->output_tokens : f->max_len;
	want = KV_MAX(want, q->prompt_tokens + q->output_tokens);
	want = KV_MAX(want, tokens);
	order = kv_pool_order_for(f->pool, want * f->token_bytes);
	if (order < 0 || kv_pool_alloc(f->pool, (unsigned)order, &off))
		return KV_ENOMEM;
	q->cache[0] = off;
	q->cache[1] = (uint64_t)order;
	q->cache[2] = want;
	q->kv_cap_tokens = want;
	q->kv_bytes = kv_pool_block_bytes(f->pool, (unsigned)order);
	return 0;
}

static void full_release(void *priv, struct kv_req *q)
{
	struct full *f = priv;

	if (q->kv_bytes)
		kv_pool_free(f->pool, (uint32_t)q->cache[0]);
	q->kv_bytes = 0;
	q->kv_cap_tokens = 0;
	q->cache[0] = q->cache[1] = q->cache[2] = 0;
}

static double full_bytes_per_token(const void *priv)
{
	const struct full *f = priv;

	return (double)f->token_bytes;
}

const struct kv_cache_ops kv_cache_full = {
	.name = "full",
	.desc = "contiguous preallocation of max_len tokens per request: kv_bytes = pow2(max_len * b), beta = b",
	.priv_size = sizeof(struct full),
	.options = full_options,
	.init = full_init,
	.reserve = full_reserve,
	.release = full_release,
	.bytes_per_token = full_bytes_per_token,
};
