/*
 * test_calib.c -- the calibration grid and the arena it is run in
 * (src/lib/calib.c): the arena holds the largest point's pages and no more;
 * for llama-2-7b on CUDA at the default --kv-memory it fits an H200
 * (139 GiB) beside the weights, where sizing it as the most sequences
 * times the longest context asked for a 256 GiB cudaMalloc (issue 12);
 * every point's batch lies inside the arena, one disjoint page range per
 * sequence, each covering its tokens.
 */
#include "testutil.h"

#include <check.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "calib.h"
#include "realexec.h"
#include "profile_load.h"

#define PT 16 /* tokens per page, as calibrate opens the backend */
#define H200_BYTES (139ULL << 30) /* the H200's usable memory, rounded down */

/* Loads model name at the backend's precision; fails the test when it cannot. */
static void load(const char *name, const char *kind, struct kv_model *m)
{
	struct kv_diag d = { 0 };

	ck_assert_msg(!kv_profile_load_model(name, m, &d), "model %s: %s", name, d.msg);
	m->dtype_bytes = kv_exec_kind_dtype(kind);
}

/* The grid of kind at its default --kv-memory; returns the point count. */
static size_t default_grid(const char *kind, int quick, const struct kv_model *m,
			   struct kv_calib_point *g)
{
	uint64_t max_tokens = kv_calib_default_kv_memory(kind) / kv_model_kv_bytes_per_token(m);

	return kv_calib_grid(kind, quick, m->max_ctx_tokens, max_tokens, PT, g);
}

START_TEST(llama_7b_cuda_arena_fits_an_h200)
{
	struct kv_calib_point g[KV_CALIB_MAX_GRID];
	struct kv_calib_arena a;
	struct kv_model m;
	uint64_t page, arena, weights, old;
	size_t n;

	load("llama-2-7b", "cuda", &m);
	n = default_grid("cuda", 1, &m, g);
	ck_assert_msg(n >= 10, "%zu grid points: the fit needs at least 10", n);
	kv_calib_arena(g, n, PT, &a);
	page = PT * kv_model_kv_bytes_per_token(&m);
	arena = a.kv_pages * page;
	weights = kv_model_weight_bytes(&m);
	ck_assert_msg(page == 8ULL << 20, "page %llu bytes, expected 8 MiB", (unsigned long long)page);
	ck_assert_msg(arena <= kv_calib_default_kv_memory("cuda"),
		      "arena %llu pages = %.1f GiB, over the 40 GiB --kv-memory",
		      (unsigned long long)a.kv_pages, arena / 1073741824.0);
	/* weights, arena and 8 GiB of workspace, runtime and cuBLAS */
	ck_assert_msg(arena + weights + (8ULL << 30) < H200_BYTES,
		      "arena %.1f GiB + weights %.1f GiB do not fit 139 GiB", arena / 1073741824.0,
		      weights / 1073741824.0);
	/* the old sizing: the most sequences times the pages of the longest context */
	old = (uint64_t)a.max_seqs * kv_div_ceil(a.max_ctx, PT) * page;
	ck_assert_msg(old > H200_BYTES, "old sizing %.1f GiB: the regression this pins is gone",
		      old / 1073741824.0);
	printf("llama-2-7b cuda grid: %zu points, arena %llu pages = %.1f GiB (old sizing %.1f GiB), "
	       "max %u seqs, %u new tokens, context %u\n",
	       n, (unsigned long long)a.kv_pages, arena / 1073741824.0, old / 1073741824.0,
	       a.max_seqs, a.max_new, a.max_ctx);
}
END_TEST

/* Every point of kind's grid for model: its batch inside the arena, as the backend checks it. */
static void check_batches(const char *model, const char *kind, int quick)
{
	struct kv_calib_point g[KV_CALIB_MAX_GRID];
	struct kv_calib_arena a;
	struct kv_model m;
	struct kv_backend_seq *seqs;
	int32_t *pages;
	unsigned char *seen;
	size_t n, i;

	load(model, kind, &m);
	n = default_grid(kind, quick, &m, g);
	ck_assert_msg(n >= 10, "%s %s: %zu grid points", model, kind, n);
	kv_calib_arena(g, n, PT, &a);
	seqs = malloc(a.max_seqs * sizeof(*seqs));
	pages = malloc(a.kv_pages * sizeof(*pages));
	seen = malloc(a.kv_pages);
	for (i = 0; i < n; i++) {
		struct kv_batch_shape sh;
		uint32_t ns = kv_calib_point_batch(&g[i], PT, 1, pages, seqs, &sh), s, k, new_tok = 0;

		ck_assert_msg(ns == g[i].nd + g[i].np && ns <= a.max_seqs && sh.n_seqs == ns,
			      "%s point %zu: %u sequences, arena for %u", g[i].what, i, ns, a.max_seqs);
		memset(seen, 0, a.kv_pages);
		for (s = 0; s < ns; s++) {
			const struct kv_backend_seq *q = &seqs[s];

			new_tok += q->n_new;
			ck_assert_msg((uint64_t)q->n_pages * PT >= (uint64_t)q->ctx + q->n_new &&
					      q->ctx + q->n_new <= a.max_ctx,
				      "%s point %zu seq %u: %u pages for %u + %u tokens (max %u)",
				      g[i].what, i, s, q->n_pages, q->ctx, q->n_new, a.max_ctx);
			for (k = 0; k < q->n_pages; k++) {
				int32_t p = q->pages[k];

				ck_assert_msg(p >= 0 && (uint64_t)p < a.kv_pages && !seen[p],
					      "%s point %zu seq %u: page %d outside %llu pages or shared",
					      g[i].what, i, s, p, (unsigned long long)a.kv_pages);
				seen[p] = 1;
			}
		}
		ck_assert_msg(new_tok <= a.max_new, "%s point %zu: %u new tokens, arena for %u",
			      g[i].what, i, new_tok, a.max_new);
	}
	free(seqs);
	free(pages);
	free(seen);
}

START_TEST(batches_inside_the_arena)
{
	check_batches("llama-2-7b", "cuda", 1);
	check_batches("tiny", "cpu", 0);
	check_batches("tiny", "cpu", 1);
}
END_TEST

START_TEST(arena_is_the_largest_point)
{
	struct kv_calib_point g[2] = { { "decode", 3, 16, 0, 0, 0 }, { "prefill", 0, 0, 1, 40, 9 } };
	struct kv_calib_arena a;

	/* 3 x ceil(17 / 16) = 6 pages, 1 x ceil(49 / 16) = 4 pages */
	ck_assert_uint_eq(kv_calib_point_pages(&g[0], PT), 6);
	ck_assert_uint_eq(kv_calib_point_pages(&g[1], PT), 4);
	kv_calib_arena(g, 2, PT, &a);
	ck_assert_msg(a.kv_pages == 6 && a.max_seqs == 3 && a.max_new == 40 && a.max_ctx == 49,
		      "pages %llu seqs %u new %u ctx %u", (unsigned long long)a.kv_pages, a.max_seqs,
		      a.max_new, a.max_ctx);
}
END_TEST

START_TEST(grid_drops_points_over_the_budget)
{
	struct kv_calib_point g[KV_CALIB_MAX_GRID];
	size_t n, i;

	/* 1100 tokens: decode 1 x 1025 is 65 pages = 1040 tokens, 4 x 129 is 36 pages */
	n = kv_calib_grid("cpu", 1, 4096, 1100, PT, g);
	for (i = 0; i < n; i++)
		ck_assert_msg(kv_calib_point_pages(&g[i], PT) * PT <= 1100,
			      "%s point %zu: %llu pages over 1100 tokens", g[i].what, i,
			      (unsigned long long)kv_calib_point_pages(&g[i], PT));
	ck_assert_msg(n > 0 && n < kv_calib_grid("cpu", 1, 4096, UINT64_MAX, PT, g),
		      "%zu points kept of the full grid", n);
}
END_TEST

/*
 * The load warning: quiet before and during, no warning; a load of 9 on 2
 * cores, or a process that got 40% of its core, warns, naming the load,
 * the cores and what to do.
 */
START_TEST(load_warning)
{
	struct kv_calib_load l = { .before = 0.3, .during = 1.2, .cpu_s = 9.5, .wall_s = 10,
				   .cores = 2, .threads = 1, .stopped = 1 };
	char w[512];

	ck_assert_int_eq(kv_calib_load_warning(&l, 0, w, sizeof(w)), 0);
	ck_assert_double_eq_tol(kv_calib_load_share(&l), 0.95, 1e-9);
	l.before = 9.31;
	ck_assert_int_eq(kv_calib_load_warning(&l, 0, w, sizeof(w)), 1);
	ck_assert_ptr_nonnull(strstr(w, "load average 9.31 before, 1.20 while measuring on 2 cores"));
	ck_assert_ptr_nonnull(strstr(w, "wall time includes the wait"));
	ck_assert_ptr_nonnull(strstr(w, "--clock cpu --threads 1"));
	l.before = 0.2;
	l.cpu_s = 4; /* 40% of the core: the others show in the share alone */
	ck_assert_int_eq(kv_calib_load_warning(&l, 1, w, sizeof(w)), 1);
	ck_assert_ptr_nonnull(strstr(w, "got 40% of them"));
	ck_assert_ptr_nonnull(strstr(w, "CPU time leaves out the wait"));
	/* before a stop, only the load before is judged */
	l = (struct kv_calib_load){ .before = 2.6, .during = NAN, .cores = 2, .threads = 1 };
	ck_assert_int_eq(kv_calib_load_warning(&l, 0, w, sizeof(w)), 1);
	ck_assert(isnan(kv_calib_load_share(&l)));
	l.before = 1.0;
	ck_assert_int_eq(kv_calib_load_warning(&l, 0, w, sizeof(w)), 0);
	/* a real start and stop: a share and a load */
	kv_calib_load_start(&l, 0);
	ck_assert_int_eq(l.threads, l.cores);
	kv_calib_load_stop(&l);
	ck_assert(l.stopped && l.wall_s >= 0 && l.cpu_s >= 0);
}
END_TEST

static Suite *calib_suite(void)
{
	Suite *s = suite_create("calib");
	TCase *tc = tcase_create("grid");

	tcase_add_test(tc, llama_7b_cuda_arena_fits_an_h200);
	tcase_add_test(tc, batches_inside_the_arena);
	tcase_add_test(tc, arena_is_the_largest_point);
	tcase_add_test(tc, grid_drops_points_over_the_budget);
	tcase_add_test(tc, load_warning);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return kv_test_run_suite(calib_suite());
}
