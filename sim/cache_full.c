/*
 * cache_full.c -- full preallocation, the naive static layout.
 *
 * Each admitted request reserves, at once, the KV cache of `max_len` tokens
 * (the model's context when 0), as a `(batch, heads, max_seq_len, head_dim)`
 * tensor does, or of its own prompt + output length with `reserve: request`
 * (an oracle that knows the output length: the best static allocation can
 * do).  A request longer than max_len reserves its own length.  The
 * reservation is one extent of the pool (blocks.h): whole units, or with
 * `round: pow2` a power of two of units, as a single buddy block would be:
 *
 *   kv_bytes = unit * ceil(R * b / unit)            (round: exact)
 *   kv_bytes = unit * 2^ceil(log2(ceil(R * b / unit)))   (round: pow2)
 *
 * with R the reserved tokens and b the fp16 KV bytes per token; beta = b.
 * Internal waste is kv_bytes - kv_tokens * b: the over-reservation the vLLM
 * paper measured in static systems (20-38% of KV memory holding live
 * tokens; Kwon et al., SOSP'23, Fig. 2).  Nothing grows after admission, so
 * `full` never preempts.
 *
 * Sliding window (a model with sliding_window W on Lw of its L layers):
 * a windowed layer's static buffer is a ring of min(R, W) tokens, as
 * Hugging Face transformers' StaticSlidingWindowLayer allocates
 * min(sliding_window, max_cache_len) slots (src/transformers/cache_utils.py),
 * so the reservation is
 *
 *   R * b * (L - Lw) / L + min(R, W) * b * Lw / L   (= kv_model_kv_bytes(R))
 *
 * rounded to units as above.  The ring holds the W tokens a decode attends
 * to (the new one included).
 *
 * Per-request words: cache[0] the block chain.
 */
#include "blocks.h"
#include "engine.h"

#include <stddef.h>

enum { RESERVE_MAX_LEN, RESERVE_REQUEST };
enum { ROUND_EXACT, ROUND_POW2 };

struct full {
	uint64_t max_len; /* option: tokens reserved per request, 0 = model context */
	int reserve; /* option: max_len or request */
	int round; /* option: exact or pow2 */
	struct kv_blocks blocks; /* chains over the pool */
	uint64_t token_bytes; /* b */
	uint64_t win_tokens; /* the model's sliding window W, tokens; 0: none */
	uint64_t win_layers; /* layers with the window, Lw */
	uint64_t layers; /* the model's layers, L */
};

static const char *const reserve_names[] = { "max_len", "request", NULL };
static const char *const round_names[] = { "exact", "pow2", NULL };

static const struct kv_option full_options[] = {
	{ .name = "max_len", .type = KV_OPT_U64, .offset = offsetof(struct full, max_len),
	  .def = 0, .min = 0, .max = 1 << 24, .units = "tokens",
	  .help = "tokens reserved per request; 0 = the model's context length" },
	{ .name = "reserve", .type = KV_OPT_ENUM, .offset = offsetof(struct full, reserve),
	  .def = RESERVE_MAX_LEN, .units = "", .names = reserve_names,
	  .help = "max_len: reserve max_len tokens; request: the request's own prompt+output" },
	{ .name = "round", .type = KV_OPT_ENUM, .offset = offsetof(struct full, round),
	  .def = ROUND_EXACT, .units = "", .names = round_names,
	  .help = "exact: whole pool units; pow2: a power of two of units, as one buddy block" },
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
	kv_blocks_init(&f->blocks, env->pool);
	f->blocks.park = 1; /* requests of one extent take freed tables back whole (blocks.h) */
	f->token_bytes = env->token_bytes;
	if (env->model->sliding_window && f->token_bytes % env->model->layers == 0) {
		f->win_tokens = env->model->sliding_window;
		f->win_layers = kv_model_window_layers(env->model);
		f->layers = env->model->layers;
	}
	return 0;
}

static void full_fini(void *priv)
{
	struct full *f = priv;

	kv_blocks_release(&f->blocks);
}

static int full_reserve(void *priv, struct kv_req *q, uint64_t tokens)
{
	struct full *f = priv;
	uint64_t want, chain = KV_BLOCKS_EMPTY, held = 0;

	if (q->kv_bytes)
		return KV_ENOMEM; /* beyond its reservation: cannot grow */
	want = f->reserve == RESERVE_REQUEST ? q->prompt_tokens + q->output_tokens : f->max_len;
	want = KV_MAX(want, q->prompt_tokens + q->output_tokens);
	want = KV_MAX(want, tokens);
	/* b divides by L here: the windowed layers' share is exact */
	if (kv_blocks_append(&f->blocks, &chain,
			     kv_window_bytes(want, f->token_bytes, f->win_tokens, f->win_layers,
					     f->layers ? f->layers : 1),
			     f->round == ROUND_POW2,
			     &held))
		return KV_ENOMEM;
	q->cache[0] = chain;
	q->kv_cap_tokens = want;
	q->kv_bytes = held;
	return 0;
}

static void full_release(void *priv, struct kv_req *q)
{
	struct full *f = priv;

	if (q->kv_bytes)
		kv_blocks_free(&f->blocks, &q->cache[0]);
	q->kv_bytes = 0;
	q->kv_cap_tokens = 0;
	q->cache[0] = KV_BLOCKS_EMPTY;
}

static double full_bytes_per_token(const void *priv)
{
	const struct full *f = priv;

	return (double)f->token_bytes;
}

static uint64_t full_units(const void *priv, const struct kv_req *q, uint32_t *out, uint64_t max)
{
	const struct full *f = priv;

	if (f->win_tokens)
		return UINT64_MAX; /* windowed layers are rings: no page table in token order */
	return q->kv_bytes ? kv_blocks_list_units(&f->blocks, q->cache[0], out, max) : 0;
}

const struct kv_cache_ops kv_cache_full = {
	.name = "full",
	.flags = KV_PLUGIN_F_MACRO_STEPS, /* no per-step hook; a decode inside its reservation calls nothing */
	.desc = "preallocate max_len tokens per request at admission: kv_bytes = extent(max_len * b), beta = b",
	.priv_size = sizeof(struct full),
	.options = full_options,
	.init = full_init,
	.fini = full_fini,
	.reserve = full_reserve,
	.release = full_release,
	.bytes_per_token = full_bytes_per_token,
	.units = full_units,
};
