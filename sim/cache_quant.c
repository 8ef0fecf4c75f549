/*
 * cache_quant.c -- group-wise quantized KV cache: K and V stored at `bits`
 * (8, 4 or 2) per element with one fp16 scale and one fp16 zero point per
 * `group` consecutive elements of a head vector (asymmetric min-max
 * quantization).  FlexGen quantizes its KV cache this way, 4 bits in groups
 * of 64 along head_dim (Sheng et al., ICML'23, sec. 5; its code caches K
 * and V as (seq, batch * heads, head_dim) with CompressionConfig(num_bits=4,
 * group_size=64, group_dim=2, symmetric=False)); KIVI goes to 2 bits in
 * groups of 32, keys grouped per channel and values per token, with a short
 * window of recent fp16 tokens (Liu et al., ICML'24; its code offers 2 and
 * 4 bits, group_size 32).  This model groups along head_dim for K and V
 * alike and keeps no fp16 window: bytes are what matter here, not accuracy.
 *
 * Bytes per token, whole replica, exact integers:
 *
 *   E    = 2 * layers * kv_heads * head_dim  (kv_model_kv_elems_per_token();
 *          MLA: layers * (kv_lora_rank + qk_rope_head_dim), vectors of that width)
 *          (K and V elements per token; token_bytes is the fp16 b)
 *   data = ceil(E * bits / 8)                (the packed elements)
 *   meta = (E / head_dim) * ceil(head_dim / group) * 2 * 2
 *          (K and V vectors per token x groups per vector x scale and zero
 *           x 2 bytes of fp16)
 *   b_q  = data + meta
 *
 * so b_q = b * bits/16 + meta for an fp16 model.  Llama-2-7B (32 layers, 32
 * KV heads, head_dim 128, b = 524288): 8 bits, group 64 gives 262144 + 16384
 * = 278528 bytes; 4 bits 147456 (28.1% of b); 2 bits 81920.  b_q is
 * derived from token_bytes, so it splits over tensor parallelism exactly as
 * b does.
 *
 * Layouts: `chunked` (default) grows in blocks of block_tokens as
 * cache_chunked.c does, kv_bytes = ceil(n / B) * extent(B * b_q); `full`
 * reserves max_len tokens (the model's context when 0) at admission as
 * cache_full.c does, kv_bytes = extent(max(max_len, prompt + output) * b_q).
 * beta = b_q; attention reads ctx * b_q bytes and dequantises ctx * data
 * of them (scales and zeros are read, not expanded); on sliding-window
 * layers both stop at the window (kv_model_window_bytes).
 *
 * Sliding window (sliding_window W on Lw of L layers; b_q is a multiple of
 * L, as E and the scale count are): windowed layers hold only the window,
 * as under cache_chunked.c and cache_full.c.  The chunked layout keeps the
 * two layer groups in tables of their own (winblocks.h, vLLM V1's
 * SlidingWindowManager): blocks of B * b_q * (L - Lw) / L bytes for the
 * whole context, blocks of B * b_q * Lw / L freed once wholly before the
 * next token's window.  The full layout reserves R = max(max_len, prompt +
 * output) tokens on the full layers and a ring of min(R, W) on the windowed
 * ones: kv_window_bytes(R, b_q) (transformers' StaticSlidingWindowLayer, as
 * cache_full.c).  The summary's
 * cache_bytes_saved is sum over holdings of kv_tokens * (b - b_q): the fp16
 * bytes of the tokens each held, less what they took quantized.
 *
 * Per-request words: cache[0] the block table (the full group's with a
 * window); with a window, chunked layout, cache[1] the windowed group's.
 */
#include "engine.h"
#include "winblocks.h"

#include <stddef.h>

enum { LAYOUT_CHUNKED, LAYOUT_FULL };

struct quant {
	uint64_t bits; /* option: bits per stored K/V element, 8, 4 or 2; default 8 */
	uint64_t group; /* option: elements per fp16 scale/zero pair, 1..head_dim; default 64 */
	int layout; /* option: chunked (default) or full */
	uint64_t block_tokens; /* option (chunked): tokens per block, default 16 */
	uint64_t max_len; /* option (full): tokens reserved per request, 0 = model context */
	struct kv_blocks blocks; /* tables over the pool */
	uint64_t token_bytes; /* b_q: bytes per cached token, whole replica */
	uint64_t data_bytes; /* packed K/V bytes per token (what is dequantised) */
	uint64_t saved_per_token; /* b - b_q, 0 when quantizing saves nothing */
	uint64_t bytes_saved; /* sum over released holdings of kv_tokens * saved_per_token */
	uint64_t win_tokens; /* the model's sliding window W, tokens (0: none) */
	uint64_t win_layers; /* layers with the window, Lw (0: none) */
	uint64_t layers; /* the model's layers, L */
	struct kv_winblocks win; /* chunked layout: the two layer groups of a windowed model (win_tokens 0: one group) */
	int ring; /* full layout: windowed layers reserve a ring of min(R, W) tokens (b_q a multiple of L) */
};

static const char *const layout_names[] = { "chunked", "full", NULL };

static const struct kv_option quant_options[] = {
	{ .name = "bits", .type = KV_OPT_U64, .offset = offsetof(struct quant, bits),
	  .def = 8, .min = 2, .max = 8, .units = "bits",
	  .help = "bits per stored K/V element: 8, 4 or 2" },
	{ .name = "group", .type = KV_OPT_U64, .offset = offsetof(struct quant, group),
	  .def = 64, .min = 1, .max = 1 << 20, .units = "elements",
	  .help = "elements sharing one fp16 scale and zero point, at most head_dim" },
	{ .name = "layout", .type = KV_OPT_ENUM, .offset = offsetof(struct quant, layout),
	  .def = LAYOUT_CHUNKED, .units = "", .names = layout_names,
	  .help = "chunked: blocks of block_tokens on demand; full: max_len tokens at admission" },
	{ .name = "block_tokens", .type = KV_OPT_U64,
	  .offset = offsetof(struct quant, block_tokens), .def = 16, .min = 1,
	  .max = 1 << 20, .units = "tokens", .help = "tokens per KV block (chunked layout)" },
	{ .name = "max_len", .type = KV_OPT_U64, .offset = offsetof(struct quant, max_len),
	  .def = 0, .min = 0, .max = 1 << 24, .units = "tokens",
	  .help = "tokens reserved per request (full layout); 0 = the model's context length" },
	{ .name = NULL },
};

/* Checks the options against the model; 0 or KV_EINVAL with d filled. */
static int quant_validate(const struct quant *qc, const struct kv_model *m, struct kv_diag *d)
{
	if (qc->bits != 2 && qc->bits != 4 && qc->bits != 8)
		return kv_diag_set(d, KV_EINVAL, "", 0, 0, "cache.bits",
				   "bad value %llu: expected 2, 4 or 8",
				   (unsigned long long)qc->bits);
	if (qc->group == 0 || qc->group > m->head_dim)
		return kv_diag_set(d, KV_EINVAL, "", 0, 0, "cache.group",
				   "bad value %llu: expected 1 to %s's head_dim of %u elements",
				   (unsigned long long)qc->group, m->name, m->head_dim);
	if (qc->block_tokens == 0 || qc->block_tokens > m->max_ctx_tokens)
		return kv_diag_set(d, KV_EINVAL, "", 0, 0, "cache.block_tokens",
				   "bad value %llu: expected 1 to %s's context of %u tokens",
				   (unsigned long long)qc->block_tokens, m->name,
				   m->max_ctx_tokens);
	if (qc->max_len > m->max_ctx_tokens)
		return kv_diag_set(d, KV_EINVAL, "", 0, 0, "cache.max_len",
				   "bad value %llu: expected at most %s's context of %u tokens",
				   (unsigned long long)qc->max_len, m->name, m->max_ctx_tokens);
	return 0;
}

static int quant_init(void *priv, const struct kv_cache_env *env, struct kv_diag *d)
{
	struct quant *qc = priv;
	const struct kv_model *m = env->model;
	uint64_t elems, vectors;
	uint32_t vlen;
	int rc = quant_validate(qc, m, d);

	if (rc)
		return rc;
	elems = kv_model_kv_elems_per_token(m);
	vlen = kv_model_kv_vector_elems(m); /* head_dim; MLA: latent + RoPE key */
	KV_CHECK(elems % vlen == 0 && env->token_bytes == kv_model_kv_bytes_per_token(m),
		 "token_bytes %llu is not %llu elements in vectors of %u",
		 (unsigned long long)env->token_bytes, (unsigned long long)elems, vlen);
	vectors = elems / vlen; /* 2 * layers * kv_heads; MLA: layers */
	qc->data_bytes = kv_div_ceil(elems * qc->bits, 8);
	qc->token_bytes = qc->data_bytes + vectors * kv_div_ceil(vlen, qc->group) * 2 * 2;
	qc->saved_per_token = env->token_bytes > qc->token_bytes ?
				      env->token_bytes - qc->token_bytes : 0;
	qc->bytes_saved = 0;
	qc->win_tokens = m->sliding_window;
	qc->win_layers = kv_model_window_layers(m);
	qc->layers = m->layers;
	if (!qc->max_len)
		qc->max_len = m->max_ctx_tokens;
	kv_blocks_init(&qc->blocks, env->pool);
	if (qc->layout == LAYOUT_CHUNKED)
		kv_winblocks_init(&qc->win, &qc->blocks, m, qc->token_bytes, qc->block_tokens);
	qc->ring = qc->win_layers && qc->token_bytes % m->layers == 0;
	return 0;
}

static void quant_fini(void *priv)
{
	struct quant *qc = priv;

	kv_blocks_release(&qc->blocks);
}

/* Full layout: one extent of max(max_len, prompt + output, tokens) at admission. */
static int reserve_full(struct quant *qc, struct kv_req *q, uint64_t tokens)
{
	uint64_t want, table = KV_BLOCKS_EMPTY, held = 0;

	if (q->kv_bytes)
		return KV_ENOMEM; /* beyond its reservation: cannot grow */
	want = KV_MAX(qc->max_len, q->prompt_tokens + q->output_tokens);
	want = KV_MAX(want, tokens);
	/* windowed layers: a ring of min(want, W) tokens, as cache_full.c (b_q divides by L) */
	if (kv_blocks_append(&qc->blocks, &table,
			     qc->ring ? kv_window_bytes(want, qc->token_bytes, qc->win_tokens,
							qc->win_layers, qc->layers) :
					want * qc->token_bytes,
			     0, &held))
		return KV_ENOMEM;
	q->cache[0] = table;
	q->kv_cap_tokens = want;
	q->kv_bytes = held;
	return 0;
}

/* Chunked layout: grows q's table by whole blocks to hold `tokens`; all or nothing. */
static int reserve_chunked(struct quant *qc, struct kv_req *q, uint64_t tokens)
{
	uint64_t table = q->kv_bytes ? q->cache[0] : KV_BLOCKS_EMPTY;
	uint64_t cap = q->kv_cap_tokens, held = 0;

	if (qc->win.win_tokens)
		return kv_winblocks_reserve(&qc->win, q, tokens);
	if (kv_blocks_grow(&qc->blocks, &table, &cap, tokens, qc->block_tokens,
			   qc->block_tokens * qc->token_bytes, &held))
		return KV_ENOMEM;
	q->cache[0] = table;
	q->kv_cap_tokens = cap;
	q->kv_bytes += held;
	return 0;
}

static int quant_reserve(void *priv, struct kv_req *q, uint64_t tokens)
{
	struct quant *qc = priv;

	return qc->layout == LAYOUT_FULL ? reserve_full(qc, q, tokens) :
					   reserve_chunked(qc, q, tokens);
}

static void quant_release(void *priv, struct kv_req *q)
{
	struct quant *qc = priv;

	qc->bytes_saved += q->kv_tokens * qc->saved_per_token;
	if (qc->win.win_tokens)
		kv_winblocks_release(&qc->win, q);
	else if (q->kv_bytes)
		kv_blocks_free(&qc->blocks, &q->cache[0]);
	q->kv_bytes = 0;
	q->kv_cap_tokens = 0;
	q->cache[0] = KV_BLOCKS_EMPTY;
}

static double quant_bytes_per_token(const void *priv)
{
	const struct quant *qc = priv;

	return (double)qc->token_bytes;
}

/*
 * Attention reads the packed elements and their scales: ctx * b_q, less on
 * sliding-window layers the tokens older than the window (the replica's
 * fp16 read of profile.h kv_model_kv_bytes, at b_q).
 */
static uint64_t quant_read_bytes(const void *priv, uint64_t ctx_tokens)
{
	const struct quant *qc = priv;

	return kv_window_bytes(ctx_tokens, qc->token_bytes, qc->win_tokens, qc->win_layers,
			       qc->layers);
}

/*
 * Stored bytes attention dequantises for ctx_tokens of context: ctx * data,
 * as the perf model charges the device's dequant_flops_per_byte per stored
 * byte.  Counting the fp16 bytes produced instead (rejected) would charge
 * 2-bit and 8-bit caches the same work, against the per-stored-byte unit of
 * docs/perf-model.md.
 */
static uint64_t quant_dequant_bytes(const void *priv, uint64_t ctx_tokens)
{
	const struct quant *qc = priv;

	return kv_window_bytes(ctx_tokens, qc->data_bytes, qc->win_tokens, qc->win_layers,
			       qc->layers);
}

/*
 * Macro steps (cache.h grow_units): the chunked layout without a window
 * grows by one block of block_tokens; when that block is exactly one pool
 * unit (the auto unit follows b_q, memory.h), the order-0 allocation
 * succeeds exactly when a unit is free.  The full layout never grows.
 */
static uint64_t quant_grow_units(const void *priv, const struct kv_req *q, uint64_t cap,
				 uint64_t *cap_after)
{
	const struct quant *qc = priv;

	(void)q;
	if (qc->layout != LAYOUT_CHUNKED || qc->win.win_tokens ||
	    kv_blocks_units(&qc->blocks, qc->block_tokens * qc->token_bytes, 0) != 1)
		return 0;
	*cap_after = cap + qc->block_tokens;
	return 1;
}

/* Every token is kept (hit rate 1); bytes saved against fp16 as in the header. */
static void quant_stats(const void *priv, struct kv_cache_stats *st)
{
	const struct quant *qc = priv;

	st->hit_rate = 1.0;
	st->bytes_saved = qc->bytes_saved;
}

const struct kv_cache_ops kv_cache_quantized = {
	.name = "quantized",
	.desc = "K/V at bits per element plus fp16 scale and zero per group: b_q = E*bits/8 + (E/head_dim)*ceil(head_dim/group)*4, chunked or full layout, beta = b_q",
	.priv_size = sizeof(struct quant),
	.options = quant_options,
	.init = quant_init,
	.fini = quant_fini,
	.reserve = quant_reserve,
	.release = quant_release,
	.bytes_per_token = quant_bytes_per_token,
	.read_bytes = quant_read_bytes,
	.dequant_bytes = quant_dequant_bytes,
	.stats = quant_stats,
	.grow_units = quant_grow_units,
	/* per-step hooks read_bytes and dequant_bytes are pure functions of the context (macro.c step_bytes sums them per step) */
	.flags = KV_PLUGIN_F_MACRO_STEPS,
};
