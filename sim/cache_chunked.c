/*
 * cache_chunked.c -- paged KV cache: fixed-size blocks allocated on demand
 * (vLLM's PagedAttention, Kwon et al., SOSP'23).
 *
 * A request holds ceil(kv_tokens / block_tokens) blocks of block_tokens
 * tokens; a block is one extent of the pool (blocks.h), so
 *
 *   kv_bytes = ceil(n / B) * unit * ceil(B * b / unit)
 *
 * for n resident tokens, block size B and b fp16 KV bytes per token;
 * beta = b.  Internal waste is at most one partly filled block per request
 * (plus unit rounding).  When a block cannot be had, the scheduler preempts
 * (fifo: the newest running request, by recompute).
 *
 * warmup_share s in [0, 1): the first ceil(s * (prompt + output)) tokens of a
 * request are reserved at admission as one extent (the full layout), the
 * rest grows in blocks -- a hybrid that trades some over-reservation for
 * fewer allocations on the prefill path.
 *
 * offload: a request preempted under memory pressure keeps its KV: its
 * blocks are copied to host memory over the device's host link (bytes /
 * host_link_bandwidth) and copied back before it runs again, instead of
 * being dropped and recomputed by prefill.  With overlap the copies run on a
 * second stream: an iteration lasts max(compute, copies); without, their
 * sum.  Conservation: bytes out = bytes in + bytes dropped (requests ending
 * while on host), checked at the end of every run.
 *
 * Sliding window (a model with sliding_window W on Lw of its L layers, and
 * warmup_share 0): the layers form two groups with tables of their own, as
 * vLLM V1's hybrid KV-cache manager keeps one block table per group
 * (vllm/v1/core/single_type_kv_cache_manager.py).  The full-attention group
 * holds ceil(n / B) blocks of B * b * (L - Lw) / L bytes, as above.  The
 * windowed group frees the blocks wholly before the next token's window:
 * with c tokens computed when the holding grows to n, vLLM's
 * SlidingWindowManager.get_num_skipped_tokens(c) = max(0, c - W + 1) tokens
 * are skipped and SingleTypeKVCacheManager.remove_skipped_blocks frees the
 * first floor(skipped / B) blocks, so the group holds
 *
 *   ceil(n / B) - floor(max(0, c - W + 1) / B)
 *
 * blocks of B * b * Lw / L bytes (each rounded up to whole pool units), at
 * most ceil((W - 1) / B) + 1 in decode, at least the W - 1 tokens the next
 * one attends to.  The holding is brought up to date at every call that
 * changes it: kv_cap_tokens stops at the next block boundary or at the step
 * whose window leaves the oldest held block, whichever is first.  Growth is
 * allocated before the skipped blocks are freed (all or nothing, cache.h),
 * so a call that both grows and frees needs the growth free first, where
 * vLLM frees first: conservative, and it happens only in a prefill chunk
 * (in decode a block is added at n = 1 mod B, freed at n = W mod B).
 * The two groups are winblocks.h's, shared with the quantized, sparse and
 * shared caches.
 *
 * Per-request words: cache[0] the block table (of the full-attention group
 * with a window); with a window cache[1] the windowed group's table.
 */
#include "engine.h"
#include "winblocks.h"

#include <math.h>
#include <stddef.h>

struct chunked {
	uint64_t block_tokens; /* option: tokens per block, default 16 */
	double warmup_share; /* option: share of a request's tokens reserved upfront, default 0 */
	int offload; /* option: preempted requests' blocks go to host memory, default false */
	int overlap; /* option: host copies overlap compute on a second stream, default true */
	struct kv_blocks blocks; /* chains over the pool */
	uint64_t token_bytes; /* b */
	uint64_t max_ctx; /* the model's context */
	struct kv_winblocks win; /* the two layer groups of a windowed model (win_tokens 0: one group) */
};

static const struct kv_option chunked_options[] = {
	{ .name = "block_tokens", .type = KV_OPT_U64,
	  .offset = offsetof(struct chunked, block_tokens), .def = 16, .min = 1,
	  .max = 1 << 20, .units = "tokens", .help = "tokens per KV block" },
	{ .name = "warmup_share", .type = KV_OPT_DBL,
	  .offset = offsetof(struct chunked, warmup_share), .def = 0, .min = 0, .max = 0.999,
	  .units = "", .help = "share of a request's tokens reserved at admission in the full layout" },
	{ .name = "offload", .type = KV_OPT_BOOL, .offset = offsetof(struct chunked, offload),
	  .def = 0, .units = "",
	  .help = "preempted requests' blocks move to host memory over the host link and come back, instead of being recomputed" },
	{ .name = "overlap", .type = KV_OPT_BOOL, .offset = offsetof(struct chunked, overlap),
	  .def = 1, .units = "",
	  .help = "with offload: copies overlap compute on a second stream (else they add to the iteration)" },
	{ .name = NULL },
};

static int chunked_init(void *priv, const struct kv_cache_env *env, struct kv_diag *d)
{
	struct chunked *c = priv;

	if (c->block_tokens > env->model->max_ctx_tokens)
		return kv_diag_set(d, KV_EINVAL, "", 0, 0, "cache.block_tokens",
				   "bad value %llu: expected at most %s's context of %u tokens",
				   (unsigned long long)c->block_tokens, env->model->name,
				   env->model->max_ctx_tokens);
	kv_blocks_init(&c->blocks, env->pool);
	c->token_bytes = env->token_bytes;
	c->max_ctx = env->model->max_ctx_tokens;
	if (c->warmup_share == 0)
		kv_winblocks_init(&c->win, &c->blocks, env->model, c->token_bytes, c->block_tokens);
	return 0;
}

static void chunked_fini(void *priv)
{
	struct chunked *c = priv;

	kv_blocks_release(&c->blocks);
}

/* Grows q's chain to hold `tokens`; all or nothing. */
static int chunked_reserve(void *priv, struct kv_req *q, uint64_t tokens)
{
	struct chunked *c = priv;
	uint64_t chain = q->kv_bytes ? q->cache[0] : KV_BLOCKS_EMPTY;
	uint64_t cap = q->kv_cap_tokens, held = 0, saved = chain;

	if (c->win.win_tokens)
		return kv_winblocks_reserve(&c->win, q, tokens);
	if (!q->kv_bytes && c->warmup_share > 0) {
		cap = (uint64_t)ceil(c->warmup_share * (double)(q->prompt_tokens + q->output_tokens));
		if (cap && kv_blocks_append(&c->blocks, &chain, cap * c->token_bytes, 0, &held))
			return KV_ENOMEM;
	}
	if (kv_blocks_grow(&c->blocks, &chain, &cap, tokens, c->block_tokens,
			   c->block_tokens * c->token_bytes, &held)) {
		kv_blocks_truncate(&c->blocks, &chain, saved); /* the warm-up extent too */
		return KV_ENOMEM;
	}
	q->cache[0] = chain;
	q->kv_cap_tokens = cap;
	q->kv_bytes += held;
	return 0;
}

/*
 * Growing a holding by one token past `cap` appends one block of
 * block_tokens (kv_blocks_grow); when that block is exactly one pool unit,
 * the order-0 allocation succeeds exactly when a unit is free.
 */
static uint64_t chunked_grow_units(const void *priv, const struct kv_req *q, uint64_t cap,
				   uint64_t *cap_after)
{
	const struct chunked *c = priv;

	(void)q;
	if (c->win.win_tokens)
		return 0; /* two groups: not one unit a step (and macro steps are off with a window) */
	if (kv_blocks_units(&c->blocks, c->block_tokens * c->token_bytes, 0) != 1)
		return 0;
	*cap_after = cap + c->block_tokens;
	return 1;
}

static void chunked_release(void *priv, struct kv_req *q)
{
	struct chunked *c = priv;

	if (c->win.win_tokens)
		kv_winblocks_release(&c->win, q);
	else if (q->kv_bytes)
		kv_blocks_free(&c->blocks, &q->cache[0]);
	q->kv_bytes = 0;
	q->kv_cap_tokens = 0;
	q->cache[0] = KV_BLOCKS_EMPTY;
}

static enum kv_offload chunked_offload(const void *priv)
{
	const struct chunked *c = priv;

	if (!c->offload)
		return KV_OFFLOAD_NONE;
	return c->overlap ? KV_OFFLOAD_OVERLAP : KV_OFFLOAD_SERIAL;
}

static double chunked_bytes_per_token(const void *priv)
{
	const struct chunked *c = priv;

	return (double)c->token_bytes;
}

static uint64_t chunked_units(const void *priv, const struct kv_req *q, uint32_t *out,
			      uint64_t max)
{
	const struct chunked *c = priv;

	if (c->win.win_tokens)
		return UINT64_MAX; /* two groups, the windowed one with freed blocks: no single page table */
	return q->kv_bytes ? kv_blocks_list_units(&c->blocks, q->cache[0], out, max) : 0;
}

const struct kv_cache_ops kv_cache_chunked = {
	.name = "chunked",
	.grow_units = chunked_grow_units,
	.flags = KV_PLUGIN_F_MACRO_STEPS, /* no per-step hook; a decode inside its blocks calls nothing */
	.desc = "paged blocks of block_tokens allocated on demand: kv_bytes = ceil(n/B) * extent(B * b), beta = b",
	.priv_size = sizeof(struct chunked),
	.options = chunked_options,
	.init = chunked_init,
	.fini = chunked_fini,
	.reserve = chunked_reserve,
	.release = chunked_release,
	.bytes_per_token = chunked_bytes_per_token,
	.offload = chunked_offload,
	.units = chunked_units,
};
