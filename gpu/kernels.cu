/*
 * kernels.cu -- the CUDA KV kernels, twins of gpu/kernels_ref.c (same
 * layout and indexing; see kernels.h).  This first kernel is decode
 * attention over the paged arena: one thread block per query head, each
 * thread owning head_dim / blockDim elements; the score of each context
 * token is a block-wide reduction, then every thread applies the same
 * online-softmax update to its elements.  fp32 throughout (the fp16 and
 * 8-bit variants come with the executor).  Every CUDA call is checked.
 */
#include <cuda_runtime.h>
#include <math.h>
#include <stdio.h>

extern "C" {
#include "kernels.h"
#include "../sim/kv_common.h"
}

#define THREADS 128
#define MAX_PER_THREAD 4 /* head_dim up to THREADS * MAX_PER_THREAD = 512 */

__global__ void paged_decode_kernel(float *out, const float *q, const float *arena,
				    const int32_t *table, int ctx, int heads, int kv_heads,
				    int dim, int bt, float scale)
{
	__shared__ float red[THREADS];
	int h = blockIdx.x, kvh = h / (heads / kv_heads), tid = threadIdx.x;
	float acc[MAX_PER_THREAD], qv[MAX_PER_THREAD], m = -INFINITY, l = 0.0f;
	int j, t;

	for (j = 0; j < MAX_PER_THREAD; j++) {
		int d = tid + j * THREADS;

		acc[j] = 0.0f;
		qv[j] = d < dim ? q[(size_t)h * dim + d] : 0.0f;
	}
	for (t = 0; t < ctx; t++) {
		size_t b = (size_t)table[t / bt], slot = (size_t)(t % bt);
		const float *k = arena + ((b * 2 + 0) * kv_heads + kvh) * bt * dim + slot * dim;
		const float *v = arena + ((b * 2 + 1) * kv_heads + kvh) * bt * dim + slot * dim;
		float part = 0.0f, s, m_new, corr, p;
		int stride;

		for (j = 0; j < MAX_PER_THREAD; j++) {
			int d = tid + j * THREADS;

			if (d < dim)
				part += qv[j] * k[d];
		}
		red[tid] = part;
		__syncthreads();
		for (stride = THREADS / 2; stride > 0; stride >>= 1) {
			if (tid < stride)
				red[tid] += red[tid + stride];
			__syncthreads();
		}
		s = red[0] * scale;
		__syncthreads(); /* red[0] read by all before the next token overwrites it */
		m_new = fmaxf(m, s);
		corr = expf(m - m_new);
		p = expf(s - m_new);
		l = l * corr + p;
		for (j = 0; j < MAX_PER_THREAD; j++) {
			int d = tid + j * THREADS;

			if (d < dim)
				acc[j] = acc[j] * corr + p * v[d];
		}
		m = m_new;
	}
	for (j = 0; j < MAX_PER_THREAD; j++) {
		int d = tid + j * THREADS;

		if (d < dim)
			out[(size_t)h * dim + d] = l > 0.0f ? acc[j] / l : 0.0f;
	}
}

/* Prints a failed CUDA call and returns nonzero. */
static int failed(cudaError_t e, const char *what)
{
	if (e == cudaSuccess)
		return 0;
	fprintf(stderr, "kvsim: CUDA: %s: %s\n", what, cudaGetErrorString(e));
	return 1;
}

extern "C" int kv_cuda_paged_decode(float *out, const float *q, const float *arena,
				    size_t arena_floats, const struct kv_paged_shape *sh,
				    const int32_t *table, int n_blocks, int ctx_len, float scale)
{
	size_t qf = (size_t)sh->heads * sh->head_dim;
	float *d_out = NULL, *d_q = NULL, *d_arena = NULL;
	int32_t *d_table = NULL;
	int rc = KV_EIO;

	if (sh->head_dim > THREADS * MAX_PER_THREAD || sh->heads % sh->kv_heads)
		return KV_EINVAL;
	if (failed(cudaMalloc(&d_out, qf * sizeof(float)), "cudaMalloc out") ||
	    failed(cudaMalloc(&d_q, qf * sizeof(float)), "cudaMalloc q") ||
	    failed(cudaMalloc(&d_arena, arena_floats * sizeof(float)), "cudaMalloc arena") ||
	    failed(cudaMalloc(&d_table, (size_t)n_blocks * sizeof(int32_t)), "cudaMalloc table") ||
	    failed(cudaMemcpy(d_q, q, qf * sizeof(float), cudaMemcpyHostToDevice), "copy q") ||
	    failed(cudaMemcpy(d_arena, arena, arena_floats * sizeof(float), cudaMemcpyHostToDevice),
		   "copy arena") ||
	    failed(cudaMemcpy(d_table, table, (size_t)n_blocks * sizeof(int32_t),
			      cudaMemcpyHostToDevice), "copy table"))
		goto fail;
	paged_decode_kernel<<<sh->heads, THREADS>>>(d_out, d_q, d_arena, d_table, ctx_len, sh->heads,
						    sh->kv_heads, sh->head_dim, sh->block_tokens,
						    scale);
	if (failed(cudaGetLastError(), "launch paged_decode_kernel") ||
	    failed(cudaDeviceSynchronize(), "paged_decode_kernel") ||
	    failed(cudaMemcpy(out, d_out, qf * sizeof(float), cudaMemcpyDeviceToHost), "copy out"))
		goto fail;
	rc = 0;
fail:
	cudaFree(d_out);
	cudaFree(d_q);
	cudaFree(d_arena);
	cudaFree(d_table);
	return rc;
}
