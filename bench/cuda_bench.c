/*
 * cuda_bench.c -- times the CUDA backend on a model-sized configuration and
 * prints one table: decode steps at several batch sizes over a fixed
 * context, prefill chunks, and the gain from overlapping an async swap
 * with a decode step.  A benchmark, not a test: it asserts nothing beyond
 * the calls succeeding (gpu/check.sh runs it on a lent GPU).  It opens the
 * backend as kind "cuda" through exec.h, as the simulator's executor does.
 *
 * Timing is value-independent, so the context is not prefilled: decode
 * reads ctx tokens of (zeroed) KV through real page tables.  Each figure
 * is the median of `reps` steps after two warm-up steps, from the
 * backend's CUDA events.  Overlap: with S = a decode step alone, C = the
 * swap of N pages alone (synchronous) and W = the wall time of an async
 * swap queued just before the same step (the step returns once both are
 * done), the gain is 1 - W / (S + C).
 *
 * usage: cuda_bench [MODEL] [--kv-int8] [--ctx N] [--swap-pages N] [--reps N]
 * exit: 0, 77 without a GPU, 1 on a failure, 2 on bad arguments.
 */
#include "../gpu/exec.h"
#include "profile_load.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define PAGE_TOKENS 16
#define MAX_CHUNK 2048

static const uint32_t batches[] = { 1, 8, 32, 128 };
static const uint32_t chunks[] = { 512, 2048 };

struct bench {
	struct kv_model m; /* the model */
	struct kv_backend *b; /* the open backend */
	uint32_t ctx; /* decode context, tokens */
	uint32_t pages_per_seq; /* pages a decoding sequence owns */
	uint32_t swap_pages; /* N of the overlap row */
	int reps; /* measured steps per figure */
	int32_t *pages; /* [128 * pages_per_seq + swap_pages] page ids 0.. */
	struct kv_backend_seq *seqs; /* [128] */
};

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return (x > y) - (x < y);
}

/* Runs the step reps + 2 times; median of the last reps in *ms. Returns 0 or the error. */
static int time_step(struct bench *bn, uint32_t n, double *ms)
{
	uint64_t t[64], ns;
	int i, reps = bn->reps < 64 ? bn->reps : 64, rc;

	for (i = -2; i < reps; i++) {
		if ((rc = kv_backend_step(bn->b, bn->seqs, n, &ns)))
			return rc;
		if (i >= 0)
			t[i] = ns;
	}
	qsort(t, (size_t)reps, sizeof(t[0]), cmp_u64);
	*ms = (double)t[reps / 2] / 1e6;
	return 0;
}

static void set_decode(struct bench *bn, uint32_t batch)
{
	uint32_t i;

	for (i = 0; i < batch; i++)
		bn->seqs[i] = (struct kv_backend_seq){
			.pages = bn->pages + (size_t)i * bn->pages_per_seq,
			.n_pages = bn->pages_per_seq, .ctx = bn->ctx, .n_new = 1, .sample = 1
		};
}

static int decode_rows(struct bench *bn)
{
	double kv_tok = (double)kv_model_kv_bytes_per_token(&bn->m), w = (double)kv_model_weight_bytes(&bn->m);
	unsigned i;

	for (i = 0; i < sizeof(batches) / sizeof(batches[0]); i++) {
		double ms, bytes = w + kv_tok * batches[i] * (bn->ctx + 1.0);
		int rc;

		set_decode(bn, batches[i]);
		if ((rc = time_step(bn, batches[i], &ms)))
			return rc;
		printf("%-8s %6u %6u %10.3f %12.0f %10.1f\n", "decode", batches[i], bn->ctx, ms,
		       batches[i] / (ms / 1e3), bytes / (ms / 1e3) / 1e9);
	}
	return 0;
}

static int prefill_rows(struct bench *bn)
{
	unsigned i;

	for (i = 0; i < sizeof(chunks) / sizeof(chunks[0]); i++) {
		double ms, flops = kv_model_linear_flops_per_token(&bn->m) * chunks[i] +
				   kv_model_attn_flops_per_pair(&bn->m) * chunks[i] * (chunks[i] + 1) / 2.0;
		int rc;

		/* pages 0.. in order: the chunk's own pages, borrowed from the decode sequences */
		bn->seqs[0] = (struct kv_backend_seq){
			.pages = bn->pages, .n_pages = (chunks[i] + PAGE_TOKENS - 1) / PAGE_TOKENS,
			.ctx = 0, .n_new = chunks[i], .sample = 1
		};
		if ((rc = time_step(bn, 1, &ms)))
			return rc;
		printf("%-8s %6u %6u %10.3f %12.0f %10.1f\n", "prefill", chunks[i], 0, ms,
		       chunks[i] / (ms / 1e3), flops / (ms / 1e3) / 1e12);
	}
	return 0;
}

/* The overlap row: batch 32 decode with and without an async offload of N other pages. */
static int overlap_row(struct bench *bn)
{
	const int32_t *swap = bn->pages + (size_t)128 * bn->pages_per_seq;
	uint64_t copy_ns = 0, step_ns = 0, t0, wall = 0, alone_wall = 0;
	double step_ms;
	int rc, i;

	set_decode(bn, 32);
	if ((rc = time_step(bn, 32, &step_ms)) ||
	    (rc = kv_backend_swap(bn->b, swap, bn->swap_pages, 0, 1, 0, &copy_ns)))
		return rc;
	for (i = 0; i < 3; i++) { /* alone: the step, then the copy */
		t0 = now_ns();
		if ((rc = kv_backend_step(bn->b, bn->seqs, 32, &step_ns)) ||
		    (rc = kv_backend_swap(bn->b, swap, bn->swap_pages, 0, 1, 0, &copy_ns)))
			return rc;
		alone_wall += now_ns() - t0;
	}
	for (i = 0; i < 3; i++) { /* overlapped: the copy queued, then the step */
		t0 = now_ns();
		if ((rc = kv_backend_swap(bn->b, swap, bn->swap_pages, 0, 1, 1, &copy_ns)) ||
		    (rc = kv_backend_step(bn->b, bn->seqs, 32, &step_ns)))
			return rc;
		wall += now_ns() - t0;
	}
	printf("%-8s %6u %6u %10.3f %12s %10s  step alone %.3f ms, copy of %u pages %.3f ms "
	       "(%.1f GB/s), sequential wall %.3f ms, overlapped wall %.3f ms, step during copy "
	       "%.3f ms: gain %.1f%%\n",
	       "overlap", 32, bn->ctx, wall / 3 / 1e6, "-", "-", step_ms, bn->swap_pages,
	       copy_ns / 1e6,
	       (double)bn->swap_pages * 1e-9 * (double)kv_model_kv_bytes_per_token(&bn->m) *
		       PAGE_TOKENS / (copy_ns / 1e9),
	       alone_wall / 3 / 1e6, wall / 3 / 1e6, step_ns / 1e6,
	       100.0 * (1.0 - (double)wall / (double)alone_wall));
	return 0;
}

static int run(struct bench *bn, int int8)
{
	struct kv_backend_opts o;
	struct kv_backend_info info;
	struct kv_diag d;
	uint64_t total_pages = (uint64_t)128 * bn->pages_per_seq + bn->swap_pages, i;
	int rc;

	memset(&o, 0, sizeof(o));
	o.model = &bn->m;
	o.kv_pages = total_pages;
	o.page_tokens = PAGE_TOKENS;
	o.max_batch_tokens = MAX_CHUNK;
	o.max_batch_seqs = 128;
	o.max_ctx_tokens = bn->ctx + 1 > MAX_CHUNK ? bn->ctx + 1 : MAX_CHUNK;
	o.seed = 1;
	o.kv_int8 = int8;
	if ((rc = kv_backend_open("cuda", &o, &bn->b, &d))) {
		fprintf(stderr, "cuda_bench: open: %s\n", d.msg);
		return rc;
	}
	bn->pages = malloc(total_pages * sizeof(int32_t));
	bn->seqs = malloc(128 * sizeof(*bn->seqs));
	for (i = 0; i < total_pages; i++)
		bn->pages[i] = (int32_t)i;
	kv_backend_get_info(bn->b, &info);
	printf("# %s, %s, %s KV: page %llu bytes, %llu pages (%.1f GiB), weights %.1f GiB\n",
	       info.device, bn->m.name, int8 ? "int8" : "fp16", (unsigned long long)info.page_bytes,
	       (unsigned long long)info.kv_pages,
	       (double)info.page_bytes * (double)info.kv_pages / (double)KV_GiB,
	       (double)info.weight_bytes / (double)KV_GiB);
	printf("%-8s %6s %6s %10s %12s %10s\n", "phase", "batch", "ctx", "ms", "tokens/s",
	       "GB/s|TF/s");
	if (!(rc = decode_rows(bn)) && !(rc = prefill_rows(bn)))
		rc = overlap_row(bn);
	if (rc)
		fprintf(stderr, "cuda_bench: %s\n", kv_backend_last_error(bn->b));
	kv_backend_close(bn->b);
	free(bn->pages);
	free(bn->seqs);
	return rc;
}

int main(int argc, char **argv)
{
	struct bench bn;
	struct kv_diag d;
	const char *model = "llama-2-7b";
	int int8 = 0, i;

	memset(&bn, 0, sizeof(bn));
	bn.ctx = 1024;
	bn.swap_pages = 32;
	bn.reps = 10;
	for (i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--kv-int8"))
			int8 = 1;
		else if (!strcmp(argv[i], "--ctx") && i + 1 < argc)
			bn.ctx = (uint32_t)strtoul(argv[++i], NULL, 10);
		else if (!strcmp(argv[i], "--swap-pages") && i + 1 < argc)
			bn.swap_pages = (uint32_t)strtoul(argv[++i], NULL, 10);
		else if (!strcmp(argv[i], "--reps") && i + 1 < argc)
			bn.reps = atoi(argv[++i]);
		else if (argv[i][0] != '-')
			model = argv[i];
		else {
			fprintf(stderr, "usage: cuda_bench [MODEL] [--kv-int8] [--ctx N] "
					"[--swap-pages N] [--reps N]\n");
			return 2;
		}
	}
	if (bn.ctx < 1 || bn.ctx > 65536 || bn.swap_pages < 1 || bn.reps < 1) {
		fprintf(stderr, "cuda_bench: --ctx 1..65536, --swap-pages and --reps >= 1\n");
		return 2;
	}
	bn.pages_per_seq = (bn.ctx + 1 + PAGE_TOKENS - 1) / PAGE_TOKENS;
	if (bn.pages_per_seq * 128 < MAX_CHUNK / PAGE_TOKENS)
		bn.pages_per_seq = MAX_CHUNK / PAGE_TOKENS / 128 + 1; /* room for the longest chunk */
	if (kv_profile_load_model(model, &bn.m, &d)) {
		kv_diag_print(&d, stderr);
		return 2;
	}
	switch (run(&bn, int8)) {
	case 0:
		return fflush(stdout) || ferror(stdout) ? 1 : 0;
	case KV_ENOENT:
		return 77;
	default:
		return 1;
	}
}
