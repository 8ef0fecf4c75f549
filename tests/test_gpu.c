/*
 * test_gpu.c -- the CUDA kernels against their CPU twins on random inputs:
 * relative error below 1e-3, never NaN, outputs poisoned before each run.
 * Exits 77 (skipped) when the build has no CUDA or no GPU is present.
 */
#include "backend.h"
#include "kernels.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#if KV_HAVE_CUDA
static uint64_t state = 0x9E3779B97F4A7C15ULL;

static float frand(void)
{
	state ^= state << 13;
	state ^= state >> 7;
	state ^= state << 17;
	return (float)((double)(state >> 11) / 9007199254740992.0 * 2.0 - 1.0);
}

/* One random case: the twin and the kernel on the same paged arena. */
static int one_case(const struct kv_paged_shape *sh, int ctx)
{
	int n_blocks = (ctx + sh->block_tokens - 1) / sh->block_tokens, i, bad = 0;
	size_t bf = kv_ref_block_floats(sh), nf = (size_t)n_blocks * bf;
	size_t qf = (size_t)sh->heads * sh->head_dim;
	float *arena = malloc(nf * sizeof(float)), *q = malloc(qf * sizeof(float));
	float *ref = malloc(qf * sizeof(float)), *got = malloc(qf * sizeof(float));
	int32_t *table = malloc((size_t)n_blocks * sizeof(int32_t));
	double err = 0, mag = 1e-30;

	for (i = 0; i < n_blocks; i++)
		table[i] = n_blocks - 1 - i; /* reversed: not the identity */
	for (i = 0; i < (int)nf; i++)
		arena[i] = frand();
	for (i = 0; i < (int)qf; i++) {
		q[i] = frand();
		ref[i] = got[i] = NAN;
	}
	kv_ref_paged_decode(ref, q, arena, sh, table, ctx, 1.0f / sqrtf((float)sh->head_dim));
	if (kv_cuda_paged_decode(got, q, arena, nf, sh, table, n_blocks, ctx,
				 1.0f / sqrtf((float)sh->head_dim)))
		bad = 1;
	for (i = 0; i < (int)qf && !bad; i++) {
		if (!isfinite(got[i]))
			bad = 1;
		err = fmax(err, fabs((double)got[i] - ref[i]));
		mag = fmax(mag, fabs((double)ref[i]));
	}
	if (bad || err / mag > 1e-3) {
		fprintf(stderr, "FAIL: heads %d/%d dim %d block %d ctx %d: relative error %g%s\n",
			sh->heads, sh->kv_heads, sh->head_dim, sh->block_tokens, ctx, err / mag,
			bad ? " (or NaN / launch failure)" : "");
		bad = 1;
	} else {
		printf("ok: heads %d/%d dim %d block %d ctx %d: relative error %.2e\n", sh->heads,
		       sh->kv_heads, sh->head_dim, sh->block_tokens, ctx, err / mag);
	}
	free(arena), free(q), free(ref), free(got), free(table);
	return bad;
}
#endif

int main(void)
{
	struct kv_gpu_info info;

	if (kv_gpu_query(&info)) {
		printf("%s: skipped\n", info.why);
		return 77;
	}
#if KV_HAVE_CUDA
	{
		static const struct kv_paged_shape shapes[] = {
			{ 32, 32, 128, 16 }, { 32, 8, 128, 16 }, { 8, 1, 64, 32 }, { 16, 4, 256, 16 },
		};
		static const int ctxs[] = { 1, 17, 512, 4000 };
		unsigned s, c;
		int fails = 0, n = 0;

		printf("device: %s\n", info.name);
		for (s = 0; s < sizeof(shapes) / sizeof(shapes[0]); s++)
			for (c = 0; c < sizeof(ctxs) / sizeof(ctxs[0]); c++, n++)
				fails += one_case(&shapes[s], ctxs[c]);
		printf("%d passed, %d failed\n", n - fails, fails);
		return fails ? 1 : 0;
	}
#else
	return 77;
#endif
}
