/*
 * test_kernels.c -- the CPU reference KV kernels (gpu/kernels_ref.c): paged
 * decode attention against a direct two-pass softmax over contiguous K and
 * V in double precision, with random shapes, block tables and contexts;
 * KV append through the block table; compaction; extreme scores.
 */
#include "kernels.h"
#include "testutil.h"

#include <check.h>
#include <math.h>

#define N_ELEMS(a) (sizeof(a) / sizeof((a)[0]))
#include <stdlib.h>
#include <string.h>

/* A small deterministic generator (xorshift64*), uniform in [-1, 1). */
static uint64_t rng_state = 88172645463325252ULL;

static float frand(void)
{
	rng_state ^= rng_state >> 12;
	rng_state ^= rng_state << 25;
	rng_state ^= rng_state >> 27;
	return (float)((double)((rng_state * 2685821657736338717ULL) >> 11) / 9007199254740992.0 * 2.0 - 1.0);
}

/* Direct attention for one query head over contiguous K, V ([t][kv_heads][d]). */
static void direct(double *out, const float *q, const float *K, const float *V, int ctx,
		   int kv_heads, int kvh, int dim, float scale)
{
	double m = -INFINITY, l = 0, *s = malloc((size_t)ctx * sizeof(*s));
	int t, d;

	for (t = 0; t < ctx; t++) {
		double acc = 0;

		for (d = 0; d < dim; d++)
			acc += (double)q[d] * K[((size_t)t * kv_heads + kvh) * dim + d];
		s[t] = acc * scale;
		m = s[t] > m ? s[t] : m;
	}
	for (d = 0; d < dim; d++)
		out[d] = 0;
	for (t = 0; t < ctx; t++) {
		double p = exp(s[t] - m);

		l += p;
		for (d = 0; d < dim; d++)
			out[d] += p * V[((size_t)t * kv_heads + kvh) * dim + d];
	}
	for (d = 0; d < dim; d++)
		out[d] /= l;
	free(s);
}

/*
 * Fills a paged arena through kv_ref_kv_append with a random block table,
 * decodes, and compares with the direct computation; returns the worst
 * relative error (max abs error over max abs value per head).
 */
static double check_case(const struct kv_paged_shape *sh, int ctx, float qscale, int compact)
{
	int n_blocks = (ctx + sh->block_tokens - 1) / sh->block_tokens, pool = 2 * n_blocks + 3;
	size_t bf = kv_ref_block_floats(sh);
	float *arena = malloc((size_t)pool * bf * sizeof(float));
	float *K = malloc((size_t)ctx * sh->kv_heads * sh->head_dim * sizeof(float));
	float *V = malloc((size_t)ctx * sh->kv_heads * sh->head_dim * sizeof(float));
	float *q = malloc((size_t)sh->heads * sh->head_dim * sizeof(float));
	float *out = malloc((size_t)sh->heads * sh->head_dim * sizeof(float));
	double *ref = malloc((size_t)sh->head_dim * sizeof(double)), worst = 0;
	int32_t *table = malloc((size_t)n_blocks * sizeof(*table));
	int32_t *used = calloc((size_t)pool, sizeof(*used)), *from, *to;
	float scale = 1.0f / sqrtf((float)sh->head_dim);
	int i, h, d, t;

	for (i = 0; i < (int)((size_t)pool * bf); i++)
		arena[i] = NAN; /* poison: a read of an unwritten slot shows */
	for (i = 0; i < n_blocks; i++) { /* distinct random blocks below the top n_blocks */
		int lim = pool - n_blocks, b;

		do
			b = (int)((frand() + 1.0f) * 0.5f * (float)lim) % lim;
		while (used[b]);
		used[b] = 1;
		table[i] = b;
	}
	for (t = 0; t < ctx; t++) {
		float *k = K + (size_t)t * sh->kv_heads * sh->head_dim;
		float *v = V + (size_t)t * sh->kv_heads * sh->head_dim;

		for (d = 0; d < sh->kv_heads * sh->head_dim; d++) {
			k[d] = frand();
			v[d] = frand();
		}
		kv_ref_kv_append(arena, sh, table, t, k, v);
	}
	if (compact) { /* move the blocks down to 0..n-1 in table order, as compaction would */
		from = malloc((size_t)n_blocks * sizeof(*from));
		to = malloc((size_t)n_blocks * sizeof(*to));
		for (i = 0; i < n_blocks; i++) {
			from[i] = table[i];
			to[i] = pool - n_blocks + i; /* a free region first: no overlap */
			table[i] = to[i];
		}
		for (i = 0; i < n_blocks; i++)
			ck_assert_msg(!used[to[i]] || to[i] == from[i], "test setup: target in use");
		kv_ref_compact(arena, sh, from, to, n_blocks);
		free(from);
		free(to);
	}
	for (i = 0; i < sh->heads * sh->head_dim; i++) {
		q[i] = frand() * qscale;
		out[i] = NAN;
	}
	kv_ref_paged_decode(out, q, arena, sh, table, ctx, scale);
	for (h = 0; h < sh->heads; h++) {
		double err = 0, mag = 1e-30;

		direct(ref, q + (size_t)h * sh->head_dim, K, V, ctx, sh->kv_heads,
		       h / (sh->heads / sh->kv_heads), sh->head_dim, scale);
		for (d = 0; d < sh->head_dim; d++) {
			double o = out[(size_t)h * sh->head_dim + d];

			ck_assert_msg(isfinite(o), "head %d dim %d: %g", h, d, o);
			err = fmax(err, fabs(o - ref[d]));
			mag = fmax(mag, fabs(ref[d]));
		}
		worst = fmax(worst, err / mag);
	}
	free(arena), free(K), free(V), free(q), free(out), free(ref), free(table), free(used);
	return worst;
}

START_TEST(decode_matches_direct)
{
	static const struct kv_paged_shape shapes[] = {
		{ 8, 8, 64, 16 }, /* multi-head */
		{ 8, 2, 64, 16 }, /* grouped-query */
		{ 4, 1, 128, 32 }, /* multi-query */
		{ 6, 3, 32, 1 }, /* one token per block */
	};
	static const int ctxs[] = { 1, 2, 15, 16, 17, 100, 511 };
	unsigned s, c;

	for (s = 0; s < N_ELEMS(shapes); s++)
		for (c = 0; c < N_ELEMS(ctxs); c++) {
			double e = check_case(&shapes[s], ctxs[c], 1.0f, 0);

			ck_assert_msg(e < 1e-5, "shape %u ctx %d: relative error %g", s, ctxs[c], e);
		}
}
END_TEST

/* Scores far beyond exp()'s range stay finite and exact (the online maximum). */
START_TEST(decode_extreme_scores)
{
	struct kv_paged_shape sh = { 4, 2, 64, 16 };
	double e = check_case(&sh, 200, 400.0f, 0);

	ck_assert_msg(e < 1e-4, "relative error %g with scores of order 1e3", e);
}
END_TEST

/* Compaction moves blocks without changing what attention sees. */
START_TEST(compaction_preserves_attention)
{
	struct kv_paged_shape sh = { 8, 4, 64, 16 };
	double e = check_case(&sh, 300, 1.0f, 1);

	ck_assert_msg(e < 1e-5, "relative error %g after compaction", e);
}
END_TEST

static Suite *kernels_suite(void)
{
	Suite *s = suite_create("kernels");
	TCase *tc = tcase_create("reference");

	tcase_add_test(tc, decode_matches_direct);
	tcase_add_test(tc, decode_extreme_scores);
	tcase_add_test(tc, compaction_preserves_attention);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return kv_test_run_suite(kernels_suite());
}
