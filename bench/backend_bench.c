/*
 * backend_bench.c -- step times of the "cpu" execution backend: prefill
 * chunks of 256 and 512 tokens, and decode batches of 1, 8 and 32
 * sequences at a context of 512, each the median of 5 timed steps after
 * one warm-up; plus the CBLAS sgemm rate the GEMMs run against.
 *
 * usage: backend_bench [MODEL ...] [-t THREADS]   (default: tiny tinyllama-1.1b)
 *
 * Each line gives the step's wall time (the backend's own timer) and the
 * process CPU time it took: on a shared machine the wall time includes
 * waiting for a core, the CPU time does not (with -t 1 it is the step's
 * cost; with more BLAS threads it also counts their spinning).
 *
 * Decode sequences hold real KV: one 512-token prefill is copied page by
 * page (kv_backend_move_pages) into every sequence's pages, so attention
 * reads as many distinct resident bytes as 32 separate sequences would.
 */
#include "exec_impl.h"
#include "profile_load.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define PAGE_TOKENS 16
#define CTX 512
#define MAX_SEQS 32
#define REPS 5

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return (x > y) - (x < y);
}

static uint64_t cpu_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return (uint64_t)ts.tv_sec * KV_NS_PER_S + (uint64_t)ts.tv_nsec;
}

/*
 * Median wall ms of REPS steps after a warm-up one, and in *cpu_ms the
 * median process CPU ms; exits on a refused step.
 */
static double median_ms(struct kv_backend *b, const struct kv_backend_seq *s, uint32_t n,
			double *cpu_ms)
{
	uint64_t t[REPS], c[REPS];
	int r;

	for (r = -1; r < REPS; r++) {
		uint64_t ns, c0 = cpu_ns();

		if (kv_backend_step(b, s, n, &ns)) {
			fprintf(stderr, "backend_bench: step: %s\n", kv_backend_last_error(b));
			exit(1);
		}
		if (r >= 0) {
			t[r] = ns;
			c[r] = cpu_ns() - c0;
		}
	}
	qsort(t, REPS, sizeof(t[0]), cmp_u64);
	qsort(c, REPS, sizeof(c[0]), cmp_u64);
	*cpu_ms = (double)c[REPS / 2] / 1e6;
	return (double)t[REPS / 2] / 1e6;
}

/* Pages of sequence i: CTX / PAGE_TOKENS + 1 consecutive ones. */
static void seq_pages(int32_t *pages, uint32_t i)
{
	uint32_t per = CTX / PAGE_TOKENS + 1, p;

	for (p = 0; p < per; p++)
		pages[p] = (int32_t)(i * per + p);
}

static void bench_prefill(struct kv_backend *b, const struct kv_model *m, int32_t *pages)
{
	uint32_t chunks[] = { 256, 512 }, i;

	for (i = 0; i < KV_ARRAY_LEN(chunks); i++) {
		struct kv_backend_seq s = { .pages = pages, .n_pages = chunks[i] / PAGE_TOKENS,
					    .n_new = chunks[i], .sample = 1 };
		double cpu, ms = median_ms(b, &s, 1, &cpu);
		double flops = kv_model_linear_flops_per_token(m) * chunks[i] +
			       kv_model_attn_flops_per_pair(m) * chunks[i] * (chunks[i] + 1) / 2;

		printf("  prefill %3u tokens      %9.1f ms (cpu %9.1f ms) %7.0f tokens/s %6.1f GFLOP/s\n",
		       chunks[i], ms, cpu, chunks[i] / ms * 1e3, flops / ms / 1e6);
	}
}

/* Copies sequence 0's first CTX tokens (already prefilled) into sequences 1..MAX_SEQS-1. */
static void replicate_kv(struct kv_backend *b)
{
	uint32_t per = CTX / PAGE_TOKENS, i, p;

	for (i = 1; i < MAX_SEQS; i++)
		for (p = 0; p < per; p++) {
			int32_t from = (int32_t)p, to = (int32_t)(i * (per + 1) + p);
			uint64_t ns;

			if (kv_backend_move_pages(b, &from, &to, 1, &ns)) {
				fprintf(stderr, "backend_bench: move: %s\n", kv_backend_last_error(b));
				exit(1);
			}
		}
}

static void bench_decode(struct kv_backend *b, const struct kv_model *m, int32_t *pages)
{
	struct kv_backend_seq s[MAX_SEQS];
	uint32_t batches[] = { 1, 8, 32 }, i, per = CTX / PAGE_TOKENS + 1;

	replicate_kv(b);
	for (i = 0; i < MAX_SEQS; i++)
		s[i] = (struct kv_backend_seq){ .pages = pages + i * per, .n_pages = per, .ctx = CTX,
						.n_new = 1, .sample = 1 };
	for (i = 0; i < KV_ARRAY_LEN(batches); i++) {
		double cpu, ms = median_ms(b, s, batches[i], &cpu);
		double flops = batches[i] * (kv_model_linear_flops_per_token(m) +
					     kv_model_attn_flops_per_pair(m) * (CTX + 1));

		printf("  decode batch %2u ctx %u %9.1f ms (cpu %9.1f ms) %7.0f tokens/s %6.1f GFLOP/s\n",
		       batches[i], CTX, ms, cpu, batches[i] / ms * 1e3, flops / ms / 1e6);
	}
}

static int bench_model(const char *name, int threads)
{
	struct kv_model m;
	struct kv_diag d;
	struct kv_backend_opts o = { .model = &m, .kv_pages = MAX_SEQS * (CTX / PAGE_TOKENS + 1),
				     .page_tokens = PAGE_TOKENS, .max_batch_tokens = CTX,
				     .max_batch_seqs = MAX_SEQS, .max_ctx_tokens = CTX + 1,
				     .seed = 1, .threads = threads };
	struct kv_backend *b;
	struct kv_backend_info info;
	struct kv_backend_mem mem;
	int32_t *pages = malloc(o.kv_pages * sizeof(int32_t));
	uint32_t i;

	if (kv_profile_load_model(name, &m, &d) || kv_backend_open("cpu", &o, &b, &d)) {
		kv_diag_print(&d, stderr);
		free(pages);
		return 1;
	}
	kv_backend_get_info(b, &info);
	printf("%s: %.1f MiB of fp32 weights, %.1f MiB of KV arena (%llu pages of %llu bytes)\n",
	       name, (double)info.weight_bytes / KV_MiB,
	       (double)(info.page_bytes * info.kv_pages) / KV_MiB,
	       (unsigned long long)info.kv_pages, (unsigned long long)info.page_bytes);
	for (i = 0; i < MAX_SEQS; i++)
		seq_pages(pages + i * (CTX / PAGE_TOKENS + 1), i);
	bench_prefill(b, &m, pages);
	bench_decode(b, &m, pages);
	kv_backend_memory(b, &mem);
	printf("  resident: weights %.1f MiB, KV %.1f MiB, workspace %.1f MiB\n",
	       (double)mem.weights / KV_MiB, (double)mem.kv / KV_MiB,
	       (double)mem.workspace / KV_MiB);
	kv_backend_close(b);
	free(pages);
	return 0;
}

int main(int argc, char **argv)
{
	const char *models[16] = { 0 };
	char blas[512];
	int threads = 0, n = 0, i, err = 0;

	for (i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "-t") && i + 1 < argc)
			threads = atoi(argv[++i]);
		else if (argv[i][0] != '-' && n < 15)
			models[n++] = argv[i];
		else {
			fprintf(stderr, "usage: backend_bench [MODEL ...] [-t THREADS]\n");
			return 2;
		}
	}
	if (!n) {
		models[n++] = "tiny";
		models[n++] = "tinyllama-1.1b";
	}
	kv_backend_cpu_blas(blas, sizeof(blas));
	printf("BLAS: %s (threads: %d, 0 = library default)\n", blas, threads);
	for (i = 0; i < n && !err; i++)
		err = bench_model(models[i], threads);
	/* After an open: the backend has set the BLAS thread count. */
	printf("sgemm 512x2048x2048: %.1f GFLOP/s; 32x2048x2048: %.1f; 1x2048x2048: %.1f\n",
	       kv_backend_cpu_sgemm_rate(512, 2048, 2048, 5) / 1e9,
	       kv_backend_cpu_sgemm_rate(32, 2048, 2048, 5) / 1e9,
	       kv_backend_cpu_sgemm_rate(1, 2048, 2048, 5) / 1e9);
	return err || fflush(stdout) || ferror(stdout) ? 1 : 0;
}
