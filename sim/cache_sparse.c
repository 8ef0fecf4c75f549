/*
 * cache_sparse.c -- a token-budget KV cache: each sequence keeps at most
 * `budget` tokens, a window of the `recent` newest plus the heavy hitters,
 * the tokens with the largest accumulated attention (H2O, Zhang et al.,
 * NeurIPS'23; its experiments keep 20% of the tokens, half heavy hitters and
 * half recent: heavy_ratio = recent_ratio = 0.1, hence recent defaults to
 * budget / 2).  Evicted tokens are gone; attention reads only what is kept.
 *
 * Memory is bounded: a request holding n tokens of KV keeps min(n, budget)
 * of them, in blocks of block_tokens grown on demand as cache_chunked.c
 * does, so
 *
 *   kv_bytes = ceil(min(n, budget) / B) * extent(B * b)  <=  ceil(budget / B) * extent(B * b)
 *
 * with b the fp16 bytes per token; beta = b; attention reads
 * min(ctx, budget) * b bytes, and on sliding-window layers at most the
 * window W of them: kv_model_window_bytes(min(ctx, budget)), i.e.
 * min(ctx, budget, W) tokens there.  Once the blocks cover the budget the holding
 * fits any length, so reserve sets kv_cap_tokens = UINT64_MAX and the engine
 * never calls it again for that request (until release).
 *
 * Hit rate: the share of the attention mass a decode step still sees.  The
 * `power` model ranks a sequence's n tokens by attention mass, the token of
 * rank i getting mass proportional to i^-alpha, so the top k carry
 * H(k)/H(n) of it, H(k) = sum_{i<=k} i^-alpha (generalised harmonic
 * numbers).  With h = budget - recent heavy hitters taken as the top h ranks
 * (H2O's accumulated score standing in for the oracle) and the recent window
 * chosen by position, hence carrying the mean mass of the n - h other tokens,
 *
 *   hit(n) = [ H(h) + recent * (H(n) - H(h)) / (n - h) ] / H(n)   for n > budget,
 *   hit(n) = 1                                                    for n <= budget,
 *
 * (alpha = 0, uniform attention: hit = budget / n; recent = budget, a pure
 * sliding window: recent / n).  H(n) is summed exactly up to n = 64 and
 * beyond by Euler-Maclaurin from 64:
 *
 *   H(n) = H(64) + int_64^n x^-a dx + (n^-a - 64^-a) / 2 + a (64^-a-1 - n^-a-1) / 12
 *
 * whose error is below a(a+1)(a+2) 64^(-a-3) / 720 (5e-10 at alpha = 1).
 * init tabulates the running sums of hit(n) for budget < n <= the model's
 * context (8 bytes per token of context per replica: 32 KiB at 4096), so a
 * hit, and the sum over any run of steps, costs O(1).  Decode steps are
 * counted when their request releases its holding (they ran at contexts
 * prefill_target + 1 .. kv_tokens), so the mean over decode steps, the
 * summary's cache_hit_rate (stats hook), costs the hot path nothing.
 * Evaluating the closed form per step at release (rejected) costs a log and
 * two exponentials per decode token.
 *
 * Recompute charge for misses: each decode step at context n owes
 * (1 - hit(n)) * recompute_tokens prefill tokens, an expected value (no
 * randomness), added to the replica's fixed-point credit and paid in whole
 * tokens through extra_prefill_tokens: the engine adds them to that
 * iteration's prefill work.  The summary's cache_bytes_saved is
 * sum over holdings of (kv_tokens - min(kv_tokens, budget)) * b, the bytes
 * of the tokens each holding dropped.
 *
 * Sliding window (sliding_window W on Lw of L layers, b a multiple of L):
 * a windowed layer keeps at most the window of the kept tokens, so the
 * layers form two groups with tables of their own (winblocks.h): the full
 * group ceil(min(n, budget) / B) blocks of B * b * (L - Lw) / L bytes, the
 * windowed group ceil(min(n, budget, W) / B) blocks of B * b * Lw / L:
 *
 *   kv_bytes = ceil(min(n, budget) / B) * extent(B * b * (L - Lw) / L)
 *            + ceil(min(n, budget, W) / B) * extent(B * b * Lw / L),
 *
 * the bytes it reads (kv_model_window_bytes(min(n, budget))) rounded up to
 * whole blocks.  A budget holding is compacted (evicted tokens' slots are
 * reused), so no block is ever freed before release.
 *
 * Per-request words: cache[0] the block table (the full group's with a
 * window); cache[1] the last context whose decode step was counted (kept
 * across releases, so a holding that comes back is not counted twice);
 * with a window cache[2] the windowed group's table.
 */
#include "engine.h"
#include "winblocks.h"

#include <math.h>
#include <stddef.h>
#include <stdlib.h>

#define HEAD_TOKENS 64 /* H(n) summed exactly up to here */
#define CREDIT_ONE 4294967296.0 /* one token of recompute credit: 2^32 */

enum { HIT_POWER };

struct sparse {
	uint64_t budget; /* option: tokens kept per sequence, default 1024 */
	uint64_t recent; /* option: recent-window tokens, 0 = budget / 2 */
	uint64_t block_tokens; /* option: tokens per block, default 16 */
	int hit_model; /* option: attention-mass model, power (only one) */
	double alpha; /* option: power-law exponent of mass over ranks, default 1 */
	uint64_t recompute_tokens; /* option: prefill tokens per fully missed step, default 0 */
	struct kv_blocks blocks; /* tables over the pool */
	uint64_t token_bytes; /* b */
	uint64_t win_tokens; /* the model's sliding window W, tokens (0: none) */
	uint64_t win_layers; /* layers with the window, Lw (0: none) */
	uint64_t layers; /* the model's layers, L */
	struct kv_winblocks win; /* the two layer groups of a windowed model (win_tokens 0: one group) */
	uint64_t heavy; /* heavy hitters kept: budget - recent */
	double head_h[HEAD_TOKENS + 1]; /* H(i) for i <= 64, exact */
	double log_head; /* log(64) */
	double head_pow_s; /* 64^(1 - alpha) */
	double head_pow_a; /* 64^-alpha */
	double heavy_h; /* H(heavy) */
	double *hit_cum; /* hit_cum[i] = hit(budget + 1) + ... + hit(budget + i) */
	uint64_t n_cum; /* entries past hit_cum[0]: context - budget */
	double hit_sum; /* sum of hit(n) over the decode steps of released holdings */
	uint64_t hit_steps; /* those decode steps */
	uint64_t credit; /* recompute owed but not yet charged, 2^-32 tokens */
	uint64_t recomputed_tokens; /* tokens charged through extra_prefill_tokens */
	uint64_t bytes_saved; /* sum over released holdings of dropped tokens * b */
};

static const char *const hit_names[] = { "power", NULL };

static const struct kv_option sparse_options[] = {
	{ .name = "budget", .type = KV_OPT_U64, .offset = offsetof(struct sparse, budget),
	  .def = 1024, .min = 1, .max = 1 << 24, .units = "tokens",
	  .help = "tokens kept per sequence (recent window plus heavy hitters), at most the context" },
	{ .name = "recent", .type = KV_OPT_U64, .offset = offsetof(struct sparse, recent),
	  .def = 0, .min = 0, .max = 1 << 24, .units = "tokens",
	  .help = "recent-window tokens, at most budget; 0 = budget / 2" },
	{ .name = "block_tokens", .type = KV_OPT_U64,
	  .offset = offsetof(struct sparse, block_tokens), .def = 16, .min = 1,
	  .max = 1 << 20, .units = "tokens", .help = "tokens per KV block" },
	{ .name = "hit_model", .type = KV_OPT_ENUM, .offset = offsetof(struct sparse, hit_model),
	  .def = HIT_POWER, .units = "", .names = hit_names,
	  .help = "power: attention mass of the rank-i token ~ i^-alpha" },
	{ .name = "alpha", .type = KV_OPT_DBL, .offset = offsetof(struct sparse, alpha),
	  .def = 1.0, .min = 0, .max = 8, .units = "",
	  .help = "power-law exponent of attention mass over token ranks" },
	{ .name = "recompute_tokens", .type = KV_OPT_U64,
	  .offset = offsetof(struct sparse, recompute_tokens), .def = 0, .min = 0,
	  .max = 1 << 20, .units = "tokens",
	  .help = "prefill tokens charged per decode step times its miss share; 0 = none" },
	{ .name = NULL },
};

/* H(n) = sum_{i=1}^{n} i^-alpha: exact up to 64, Euler-Maclaurin above (see the header). */
static double harmonic(const struct sparse *sp, uint64_t n)
{
	double a = sp->alpha, s = 1 - a, lx, x_pow_a, integral;

	if (n <= HEAD_TOKENS)
		return sp->head_h[n];
	lx = log((double)n);
	x_pow_a = exp(-a * lx);
	/* int_64^n x^-a dx = 64^s (e^(s log(n/64)) - 1) / s, stable as s -> 0 */
	integral = s == 0 ? lx - sp->log_head :
			    sp->head_pow_s * expm1(s * (lx - sp->log_head)) / s;
	return sp->head_h[HEAD_TOKENS] + integral + (x_pow_a - sp->head_pow_a) / 2 +
	       a * (sp->head_pow_a / HEAD_TOKENS - x_pow_a / (double)n) / 12;
}

/* Share of attention mass kept at context n > budget, from the closed form (see the header). */
static double hit_formula(const struct sparse *sp, uint64_t n)
{
	double hn = harmonic(sp, n);

	return (sp->heavy_h + (double)sp->recent * (hn - sp->heavy_h) / (double)(n - sp->heavy)) /
	       hn;
}

/*
 * Sum of hit(n) for budget < lo <= n <= hi, from the table.  hi is at most
 * the model's context: the engine ends or clips longer requests first.
 */
static double hit_range(const struct sparse *sp, uint64_t lo, uint64_t hi)
{
	KV_CHECK(sp->budget < lo && lo <= hi && hi - sp->budget <= sp->n_cum,
		 "hit range %llu..%llu outside budget %llu .. context %llu",
		 (unsigned long long)lo, (unsigned long long)hi, (unsigned long long)sp->budget,
		 (unsigned long long)(sp->budget + sp->n_cum));
	return sp->hit_cum[hi - sp->budget] - sp->hit_cum[lo - 1 - sp->budget];
}

/* Share of attention mass kept at context n. */
static double hit_at(const struct sparse *sp, uint64_t n)
{
	return n <= sp->budget ? 1.0 : hit_range(sp, n, n);
}

/* Checks the options against the model; 0 or KV_EINVAL with d filled. */
static int sparse_validate(const struct sparse *sp, const struct kv_model *m, struct kv_diag *d)
{
	if (sp->budget == 0 || sp->budget > m->max_ctx_tokens)
		return kv_diag_set(d, KV_EINVAL, "", 0, 0, "cache.budget",
				   "bad value %llu: expected 1 to %s's context of %u tokens",
				   (unsigned long long)sp->budget, m->name, m->max_ctx_tokens);
	if (sp->recent > sp->budget)
		return kv_diag_set(d, KV_EINVAL, "", 0, 0, "cache.recent",
				   "bad value %llu: expected at most the budget of %llu tokens",
				   (unsigned long long)sp->recent, (unsigned long long)sp->budget);
	if (sp->block_tokens == 0 || sp->block_tokens > m->max_ctx_tokens)
		return kv_diag_set(d, KV_EINVAL, "", 0, 0, "cache.block_tokens",
				   "bad value %llu: expected 1 to %s's context of %u tokens",
				   (unsigned long long)sp->block_tokens, m->name, m->max_ctx_tokens);
	if (!(sp->alpha >= 0 && sp->alpha <= 8))
		return kv_diag_set(d, KV_EINVAL, "", 0, 0, "cache.alpha",
				   "bad value %g: expected 0 to 8", sp->alpha);
	return 0;
}

/* Fills the constants of harmonic() and the running sums of hit(n) up to max_ctx. */
static void tabulate(struct sparse *sp, uint64_t max_ctx)
{
	uint64_t i;

	sp->head_h[0] = 0;
	for (i = 1; i <= HEAD_TOKENS; i++)
		sp->head_h[i] = sp->head_h[i - 1] + pow((double)i, -sp->alpha);
	sp->log_head = log(HEAD_TOKENS);
	sp->head_pow_s = pow(HEAD_TOKENS, 1 - sp->alpha);
	sp->head_pow_a = pow(HEAD_TOKENS, -sp->alpha);
	sp->heavy_h = harmonic(sp, sp->heavy);
	sp->n_cum = max_ctx - sp->budget;
	sp->hit_cum = kv_xmalloc((sp->n_cum + 1) * sizeof(*sp->hit_cum));
	sp->hit_cum[0] = 0;
	for (i = 1; i <= sp->n_cum; i++)
		sp->hit_cum[i] = sp->hit_cum[i - 1] + hit_formula(sp, sp->budget + i);
}

static int sparse_init(void *priv, const struct kv_cache_env *env, struct kv_diag *d)
{
	struct sparse *sp = priv;
	int rc = sparse_validate(sp, env->model, d);

	if (rc)
		return rc;
	if (!sp->recent)
		sp->recent = sp->budget / 2;
	sp->heavy = sp->budget - sp->recent;
	tabulate(sp, env->model->max_ctx_tokens);
	sp->hit_sum = 0;
	sp->hit_steps = 0;
	sp->credit = 0;
	sp->recomputed_tokens = 0;
	sp->bytes_saved = 0;
	sp->token_bytes = env->token_bytes;
	sp->win_tokens = env->model->sliding_window;
	sp->win_layers = kv_model_window_layers(env->model);
	sp->layers = env->model->layers;
	kv_blocks_init(&sp->blocks, env->pool);
	kv_winblocks_init(&sp->win, &sp->blocks, env->model, sp->token_bytes, sp->block_tokens);
	return 0;
}

static void sparse_fini(void *priv)
{
	struct sparse *sp = priv;

	kv_blocks_release(&sp->blocks);
	free(sp->hit_cum);
	sp->hit_cum = NULL;
}

/*
 * Grows q's table by whole blocks to hold min(tokens, budget); all or
 * nothing.  At the budget kv_cap_tokens becomes UINT64_MAX: the holding
 * fits any length from then on.
 */
/*
 * With a window (see the header): the full group grows to ceil(min(n,
 * budget) / B) blocks, the windowed one to ceil(min(n, budget, W) / B); the
 * holding fits any length once the group that grows longest is at its
 * bound (the budget, or min(budget, W) when every layer is windowed).
 */
static int sparse_reserve_window(struct sparse *sp, struct kv_req *q, uint64_t tokens)
{
	const struct kv_winblocks *w = &sp->win;
	uint64_t full = q->kv_bytes ? q->cache[0] : KV_BLOCKS_EMPTY;
	uint64_t win = q->kv_bytes ? q->cache[2] : KV_BLOCKS_EMPTY;
	uint64_t B = sp->block_tokens, kept = KV_MIN(tokens, sp->budget), got = 0, freed = 0;
	uint64_t nf = kv_div_ceil(kept, B), nw = kv_div_ceil(KV_MIN(kept, w->win_tokens), B);
	uint64_t bound = w->full_bytes ? sp->budget : KV_MIN(sp->budget, w->win_tokens);
	uint64_t cap = (w->full_bytes ? nf : nw) * B;

	if (q->kv_cap_tokens == UINT64_MAX)
		return 0; /* already at the bound */
	if (kv_winblocks_set(w, &full, &win, nf, nw, &got, &freed))
		return KV_ENOMEM;
	KV_CHECK(freed == 0, "sparse window freed %llu bytes", (unsigned long long)freed);
	q->cache[0] = full;
	q->cache[2] = win;
	q->kv_cap_tokens = cap >= bound ? UINT64_MAX : cap;
	q->kv_bytes += got;
	return 0;
}

static int sparse_reserve(void *priv, struct kv_req *q, uint64_t tokens)
{
	struct sparse *sp = priv;
	uint64_t table = q->kv_bytes ? q->cache[0] : KV_BLOCKS_EMPTY;
	uint64_t cap = q->kv_cap_tokens, held = 0;
	uint64_t want = KV_MIN(tokens, sp->budget);

	if (sp->win.win_tokens)
		return sparse_reserve_window(sp, q, tokens);
	if (cap == UINT64_MAX)
		return 0; /* already at the budget */
	if (kv_blocks_grow(&sp->blocks, &table, &cap, want, sp->block_tokens,
			   sp->block_tokens * sp->token_bytes, &held))
		return KV_ENOMEM;
	q->cache[0] = table;
	q->kv_cap_tokens = cap >= sp->budget ? UINT64_MAX : cap;
	q->kv_bytes += held;
	return 0;
}

/*
 * Adds q's decode steps not yet counted to the hit statistics: they ran at
 * contexts prefill_target + 1 .. kv_tokens (none while in prefill), past
 * the last one counted (cache[1]).  Steps at n <= budget hit fully and are
 * counted without evaluating hit().
 */
static void count_steps(struct sparse *sp, struct kv_req *q)
{
	uint64_t first = KV_MAX(q->prefill_target, q->cache[1]) + 1, full;

	if (q->kv_tokens < first)
		return;
	sp->hit_steps += q->kv_tokens - first + 1;
	full = KV_MIN(q->kv_tokens, sp->budget);
	if (full >= first)
		sp->hit_sum += (double)(full - first + 1);
	if (q->kv_tokens > sp->budget)
		sp->hit_sum += hit_range(sp, KV_MAX(first, sp->budget + 1), q->kv_tokens);
	q->cache[1] = q->kv_tokens;
}

static void sparse_release(void *priv, struct kv_req *q)
{
	struct sparse *sp = priv;

	count_steps(sp, q);
	sp->bytes_saved += (q->kv_tokens - KV_MIN(q->kv_tokens, sp->budget)) * sp->token_bytes;
	if (q->kv_bytes) {
		kv_blocks_free(&sp->blocks, &q->cache[0]);
		if (sp->win.win_tokens)
			kv_blocks_free(&sp->blocks, &q->cache[2]);
	}
	q->kv_bytes = 0;
	q->kv_cap_tokens = 0;
	q->cache[0] = KV_BLOCKS_EMPTY;
}

static double sparse_bytes_per_token(const void *priv)
{
	const struct sparse *sp = priv;

	return (double)sp->token_bytes;
}

/* Attention reads only the kept tokens: min(ctx, budget) * b. */
static uint64_t sparse_read_bytes(const void *priv, uint64_t ctx_tokens)
{
	const struct sparse *sp = priv;

	/* a windowed layer keeps at most the window of them */
	return kv_window_bytes(KV_MIN(ctx_tokens, sp->budget), sp->token_bytes, sp->win_tokens,
			       sp->win_layers, sp->layers);
}

/*
 * Prefill tokens to recompute with q's decode step at context n = kv_tokens
 * + 1: the expected (1 - hit(n)) * recompute_tokens, added to the replica's
 * credit and paid in whole tokens, so the tokens charged stay within one of
 * the expected total, deterministically.  Drawing whole tokens at random
 * with that mean (rejected) would make runs depend on the seed for no gain
 * in the means.  The credit is the replica's, not q's (the hook gets a const
 * q): the charge lands on the shared iteration either way.
 */
static uint64_t sparse_extra_prefill_tokens(void *priv, const struct kv_req *q)
{
	struct sparse *sp = priv;
	uint64_t n = q->kv_tokens + 1, x;

	if (!sp->recompute_tokens || q->kv_tokens < q->prefill_target || n <= sp->budget)
		return 0;
	sp->credit += (uint64_t)llround((1 - hit_at(sp, n)) * (double)sp->recompute_tokens *
					CREDIT_ONE);
	x = sp->credit >> 32;
	sp->credit &= 0xffffffffULL;
	sp->recomputed_tokens += x;
	return x;
}

/*
 * Macro steps (cache.h): without a recompute charge extra_prefill_tokens
 * returns 0 before touching the credit.
 */
static int sparse_no_extra(const void *priv)
{
	const struct sparse *sp = priv;

	return sp->recompute_tokens == 0;
}

/*
 * Growing a holding below the budget by one token past `cap` appends one
 * block of block_tokens (want = min(cap + 1, budget) = cap + 1); when that
 * block is exactly one pool unit the order-0 allocation succeeds exactly
 * when a unit is free.  The holding then fits cap + B tokens, or any length
 * once that covers the budget (kv_cap_tokens UINT64_MAX, as reserve sets).
 */
static uint64_t sparse_grow_units(const void *priv, const struct kv_req *q, uint64_t cap,
				  uint64_t *cap_after)
{
	const struct sparse *sp = priv;

	(void)q;
	if (sp->win.win_tokens || cap >= sp->budget ||
	    kv_blocks_units(&sp->blocks, sp->block_tokens * sp->token_bytes, 0) != 1)
		return 0;
	*cap_after = cap + sp->block_tokens >= sp->budget ? UINT64_MAX : cap + sp->block_tokens;
	return 1;
}

/*
 * hit_rate: mean share of attention mass kept over the decode steps of the
 * holdings released so far (all of them at the end of a run), 1 when there
 * were none; recompute and bytes saved as in the header.
 */
static void sparse_stats(const void *priv, struct kv_cache_stats *st)
{
	const struct sparse *sp = priv;

	st->hit_rate = sp->hit_steps ? sp->hit_sum / (double)sp->hit_steps : 1.0;
	st->recompute_tokens = sp->recomputed_tokens;
	st->bytes_saved = sp->bytes_saved;
}

const struct kv_cache_ops kv_cache_sparse = {
	.name = "sparse",
	.desc = "keep budget tokens per sequence (recent window + heavy hitters, H2O): kv_bytes = ceil(min(n, budget)/B) * extent(B * b), reads min(ctx, budget) * b, beta = b",
	.priv_size = sizeof(struct sparse),
	.options = sparse_options,
	.init = sparse_init,
	.fini = sparse_fini,
	.reserve = sparse_reserve,
	.release = sparse_release,
	.bytes_per_token = sparse_bytes_per_token,
	.read_bytes = sparse_read_bytes,
	.extra_prefill_tokens = sparse_extra_prefill_tokens,
	.stats = sparse_stats,
	.no_extra = sparse_no_extra,
	.grow_units = sparse_grow_units,
	/* read_bytes is pure in the context; extra_prefill_tokens only without a recompute charge (no_extra) */
	.flags = KV_PLUGIN_F_MACRO_STEPS,
};
