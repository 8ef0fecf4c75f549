/*
 * test_kernels.c -- the CPU reference KV kernels (gpu/kernels_ref.c): paged
 * decode attention against a direct two-pass softmax over contiguous K and
 * V in double precision, with random shapes, block tables and contexts;
 * KV append through the block table; compaction; extreme scores.  The fp16
 * and 8-bit twins against fp32 (the bound derived in kernels.h), binary16
 * conversion, group quantisation, pages of several layers, and the
 * compaction wave planner.
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
		{ 8, 8, 64, 16, 1, 0 }, /* multi-head */
		{ 8, 2, 64, 16, 1, 0 }, /* grouped-query */
		{ 4, 1, 128, 32, 1, 0 }, /* multi-query */
		{ 6, 3, 32, 1, 1, 0 }, /* one token per block */
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
	struct kv_paged_shape sh = { 4, 2, 64, 16, 1, 0 };
	double e = check_case(&sh, 200, 400.0f, 0);

	ck_assert_msg(e < 1e-4, "relative error %g with scores of order 1e3", e);
}
END_TEST

/* Compaction moves blocks without changing what attention sees. */
START_TEST(compaction_preserves_attention)
{
	struct kv_paged_shape sh = { 8, 4, 64, 16, 1, 0 };
	double e = check_case(&sh, 300, 1.0f, 1);

	ck_assert_msg(e < 1e-5, "relative error %g after compaction", e);
}
END_TEST

/* Every binary16 value survives f16 -> f32 -> f16; floats round to a nearest half. */
START_TEST(f16_conversion)
{
	uint32_t h;
	int i;

	for (h = 0; h < 0x10000; h++) {
		float f = kv_ref_f16_to_f32((uint16_t)h);

		if (isnan(f))
			continue;
		ck_assert_msg(kv_ref_f32_to_f16(f) == h, "half 0x%04x -> %g -> 0x%04x", h, f,
			      kv_ref_f32_to_f16(f));
	}
	ck_assert_uint_eq(kv_ref_f32_to_f16(65520.0f), 0x7c00); /* ties to even: infinity */
	ck_assert_uint_eq(kv_ref_f32_to_f16(65519.0f), 0x7bff);
	ck_assert_uint_eq(kv_ref_f32_to_f16(2.9802322387695312e-8f), 0); /* 2^-25: tie to 0 */
	ck_assert(isnan(kv_ref_f16_to_f32(kv_ref_f32_to_f16(NAN))));
	for (i = 0; i < (under_valgrind() ? 20000 : 200000); i++) {
		float x = frand() * powf(2.0f, (float)((int)(frand() * 20.0f))), y;
		uint16_t r = kv_ref_f32_to_f16(x);
		double e = fabs((double)kv_ref_f16_to_f32(r) - x);

		if (fabsf(x) >= 65520.0f) { /* beyond the largest half: infinity */
			ck_assert_uint_eq(r & 0x7fff, 0x7c00);
			continue;
		}

		y = kv_ref_f16_to_f32((uint16_t)(r + 1)); /* the neighbours are no closer */
		ck_assert_msg(!isfinite(y) || e <= fabs((double)y - x), "%a -> 0x%04x", x, r);
		y = kv_ref_f16_to_f32((uint16_t)(r - 1));
		ck_assert_msg((r & 0x7fff) == 0 || e <= fabs((double)y - x), "%a -> 0x%04x", x, r);
	}
}
END_TEST

/* A group's elements come back within half a step, the extreme exactly. */
START_TEST(quantize_group_bound)
{
	float x[KV_GROUP], s;
	int8_t q[KV_GROUP];
	int i, rep, hit;

	for (rep = 0; rep < 1000; rep++) {
		float mag = powf(10.0f, frand() * 4.0f);

		for (i = 0; i < KV_GROUP; i++)
			x[i] = frand() * mag;
		s = kv_ref_quantize_group(q, x, KV_GROUP);
		for (i = 0, hit = 0; i < KV_GROUP; i++) {
			double e = fabs((double)q[i] * s - x[i]);

			ck_assert_msg(e <= 0.5 * s * (1 + 1e-6), "x %g q %d s %g: error %g", x[i],
				      q[i], s, e);
			hit |= q[i] == 127 || q[i] == -127;
		}
		ck_assert_msg(hit, "no element at +-127 (scale %g)", s);
	}
	memset(x, 0, sizeof(x));
	ck_assert(kv_ref_quantize_group(q, x, KV_GROUP) == 0.0f);
	for (i = 0; i < KV_GROUP; i++)
		ck_assert_int_eq(q[i], 0);
}
END_TEST

/* The same random K, V written as fp32, fp16 and int8 through one page table. */
struct typed_case {
	struct kv_paged_shape sh;
	int ctx;
	int32_t *table;
	float *q, *kv[3]; /* q [heads][dim]; arenas by enum kv_kv_type */
	float k_step, v_step; /* largest int8 half-step among K's and V's groups */
	float v_max; /* max |v| */
};

static void typed_case_init(struct typed_case *c, const struct kv_paged_shape *sh, int ctx)
{
	int pages = (ctx + sh->block_tokens - 1) / sh->block_tokens, i, t, kvi;
	int layers = sh->layers > 1 ? sh->layers : 1;
	size_t row = (size_t)sh->kv_heads * sh->head_dim;
	float *k = malloc(row * sizeof(float)), *v = malloc(row * sizeof(float));

	memset(c, 0, sizeof(*c));
	c->sh = *sh;
	c->ctx = ctx;
	c->table = malloc((size_t)pages * sizeof(int32_t));
	for (i = 0; i < pages; i++)
		c->table[i] = (int32_t)((i * 7 + 3) % pages); /* a permutation (7 and pages coprime) */
	for (kvi = 0; kvi < 3; kvi++)
		c->kv[kvi] = malloc((size_t)pages * layers *
				    kv_ref_block_bytes(sh, (enum kv_kv_type)kvi));
	c->q = malloc((size_t)sh->heads * sh->head_dim * sizeof(float));
	for (i = 0; i < sh->heads * sh->head_dim; i++)
		c->q[i] = frand();
	for (t = 0; t < ctx; t++) {
		for (i = 0; i < (int)row; i++) {
			k[i] = frand();
			v[i] = frand();
			c->v_max = fmaxf(c->v_max, fabsf(v[i]));
		}
		for (i = 0; i < (int)row; i += KV_GROUP) {
			float km = 0, vm = 0;
			int j;

			for (j = 0; j < KV_GROUP; j++) {
				km = fmaxf(km, fabsf(k[i + j]));
				vm = fmaxf(vm, fabsf(v[i + j]));
			}
			c->k_step = fmaxf(c->k_step, km / 127.0f / 2.0f);
			c->v_step = fmaxf(c->v_step, vm / 127.0f / 2.0f);
		}
		kv_ref_kv_append(c->kv[KV_KV_F32], sh, c->table, t, k, v);
		kv_ref_kv_append_f16((uint16_t *)(void *)c->kv[KV_KV_F16], sh, c->table, t, k, v);
		kv_ref_kv_append_i8(c->kv[KV_KV_I8], sh, c->table, t, k, v);
	}
	free(k);
	free(v);
}

static void typed_case_free(struct typed_case *c)
{
	free(c->table), free(c->q), free(c->kv[0]), free(c->kv[1]), free(c->kv[2]);
}

/*
 * Decodes with type t and with fp32; returns the largest absolute error and
 * stores the largest |fp32 output| in *mag and the kernels.h bound
 * (exp(2 eps) - 1) * max|v| + e_V, with eps from the head's ||q||_1, in
 * *bound (the worst over heads of bound minus error is what matters, so the
 * bound returned is the smallest one, paired with the largest error).
 */
static double typed_error(const struct typed_case *c, enum kv_kv_type t, double *mag,
			  double *bound)
{
	const struct kv_paged_shape *sh = &c->sh;
	size_t qf = (size_t)sh->heads * sh->head_dim;
	float *ref = malloc(qf * sizeof(float)), *got = malloc(qf * sizeof(float));
	float scale = 1.0f / sqrtf((float)sh->head_dim);
	double err = 0;
	int h, d;

	*mag = 1e-30;
	*bound = INFINITY;
	kv_ref_paged_decode(ref, c->q, c->kv[KV_KV_F32], sh, c->table, c->ctx, scale);
	kv_ref_paged_decode_kv(got, c->q, c->kv[t], t, sh, c->table, c->ctx, scale);
	for (h = 0; h < sh->heads; h++) {
		double q1 = 0, eps;

		for (d = 0; d < sh->head_dim; d++)
			q1 += fabs(c->q[(size_t)h * sh->head_dim + d]);
		eps = scale * q1 * c->k_step;
		*bound = fmin(*bound, expm1(2 * eps) * c->v_max + c->v_step + 1e-5);
		for (d = 0; d < sh->head_dim; d++) {
			size_t i = (size_t)h * sh->head_dim + d;

			ck_assert_msg(isfinite(got[i]), "head %d dim %d: %g", h, d, got[i]);
			err = fmax(err, fabs((double)got[i] - ref[i]));
			*mag = fmax(*mag, fabs((double)ref[i]));
		}
	}
	free(ref);
	free(got);
	return err;
}

static const struct kv_paged_shape typed_shapes[] = {
	{ 8, 8, 64, 16, 1, 0 }, { 8, 2, 128, 16, 1, 0 }, { 4, 1, 32, 8, 3, 1 }, { 6, 3, 64, 16, 2, 1 },
};
static const int typed_ctxs[] = { 1, 16, 33, 300, 1000 };

/*
 * Contexts tried: all, or under valgrind all but 1000 (three quarters of the
 * work; 300 tokens already span 19 to 38 blocks of every shape).
 */
static unsigned typed_n_ctxs(void)
{
	return under_valgrind() ? N_ELEMS(typed_ctxs) - 1 : N_ELEMS(typed_ctxs);
}

/* fp16 KV: within 1e-3 of fp32, relative to the largest output. */
START_TEST(decode_f16_matches_f32)
{
	unsigned s, c;

	for (s = 0; s < N_ELEMS(typed_shapes); s++)
		for (c = 0; c < typed_n_ctxs(); c++) {
			struct typed_case tc;
			double mag, bound, e;

			typed_case_init(&tc, &typed_shapes[s], typed_ctxs[c]);
			e = typed_error(&tc, KV_KV_F16, &mag, &bound);
			ck_assert_msg(e / mag < 1e-3, "shape %u ctx %d: relative error %g", s,
				      typed_ctxs[c], e / mag);
			typed_case_free(&tc);
		}
}
END_TEST

/* int8 KV: every element within the derived bound of fp32. */
START_TEST(decode_i8_within_bound)
{
	unsigned s, c;

	for (s = 0; s < N_ELEMS(typed_shapes); s++)
		for (c = 0; c < typed_n_ctxs(); c++) {
			struct typed_case tc;
			double mag, bound, e;

			typed_case_init(&tc, &typed_shapes[s], typed_ctxs[c]);
			e = typed_error(&tc, KV_KV_I8, &mag, &bound);
			ck_assert_msg(e <= bound, "shape %u ctx %d: error %g above the bound %g", s,
				      typed_ctxs[c], e, bound);
			ck_assert_msg(e / mag < 0.05, "shape %u ctx %d: relative error %g", s,
				      typed_ctxs[c], e / mag);
			typed_case_free(&tc);
		}
}
END_TEST

/* A page of several layers: writing layer 1 leaves layers 0 and 2 untouched. */
START_TEST(pages_of_layers)
{
	struct kv_paged_shape sh = { 4, 2, 32, 4, 3, 1 };
	size_t bb = kv_ref_block_bytes(&sh, KV_KV_I8), all = 6 * 3 * bb;
	int32_t table[2] = { 5, 2 };
	float k[64], v[64];
	unsigned char *arena = malloc(all);
	size_t i;
	int t;

	memset(arena, 0xa5, all);
	for (i = 0; i < 64; i++)
		k[i] = v[i] = frand();
	for (t = 0; t < 8; t++)
		kv_ref_kv_append_i8(arena, &sh, table, t, k, v);
	for (i = 0; i < all; i++) {
		size_t blk = i / bb;
		int written = (blk == 5 * 3 + 1 || blk == 2 * 3 + 1);

		if (!written)
			ck_assert_msg(arena[i] == 0xa5, "byte %zu of block %zu changed", i, blk);
	}
	ck_assert_int_eq(kv_ref_block_of(&sh, table, 5), 2 * 3 + 1);
	free(arena);
}
END_TEST

/* Moves applied wave by wave, all of a wave at once, equal moves in order. */
START_TEST(compaction_waves_equal_order)
{
	enum { BLOCKS = 64, BB = 8 };
	int rep;

	for (rep = 0; rep < 500; rep++) {
		int n = 1 + (int)((frand() + 1.0f) * 40.0f), waves, w, i, start = 0;
		int32_t *from = malloc((size_t)n * sizeof(int32_t)), *to = malloc((size_t)n * 4);
		int *end = malloc((size_t)n * sizeof(int));
		unsigned char seq[BLOCKS * BB], par[BLOCKS * BB], snap[BLOCKS * BB];

		for (i = 0; i < BLOCKS * BB; i++)
			seq[i] = par[i] = (unsigned char)i;
		for (i = 0; i < n; i++) { /* random moves, often chained through few blocks */
			from[i] = (int32_t)((frand() + 1.0f) * 8.0f) % 16;
			to[i] = (int32_t)((frand() + 1.0f) * 8.0f) % 16;
		}
		kv_ref_compact_bytes(seq, BB, from, to, n);
		waves = kv_ref_compact_waves(from, to, n, end);
		ck_assert(waves >= 1 && waves <= n && end[waves - 1] == n);
		for (w = 0; w < waves; start = end[w++]) {
			memcpy(snap, par, sizeof(par)); /* all reads of a wave see its start */
			for (i = start; i < end[w]; i++)
				if (from[i] != to[i]) /* no-ops are copied by no one */
					memcpy(par + (size_t)to[i] * BB, snap + (size_t)from[i] * BB, BB);
		}
		ck_assert_msg(!memcmp(seq, par, sizeof(seq)), "rep %d: %d moves in %d waves differ",
			      rep, n, waves);
		free(from), free(to), free(end);
	}
}
END_TEST

static Suite *kernels_suite(void)
{
	Suite *s = suite_create("kernels");
	TCase *tc = tcase_create("reference");

	tcase_add_test(tc, decode_matches_direct);
	tcase_add_test(tc, decode_extreme_scores);
	tcase_add_test(tc, compaction_preserves_attention);
	tcase_add_test(tc, f16_conversion);
	tcase_add_test(tc, quantize_group_bound);
	tcase_add_test(tc, decode_f16_matches_f32);
	tcase_add_test(tc, decode_i8_within_bound);
	tcase_add_test(tc, pages_of_layers);
	tcase_add_test(tc, compaction_waves_equal_order);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return kv_test_run_suite(kernels_suite());
}
