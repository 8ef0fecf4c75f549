/*
 * kernels.cu -- the CUDA KV kernels, twins of gpu/kernels_ref.c (same
 * layout and indexing; see kernels.h), and the copy-in/copy-out wrappers
 * the tests call.
 *
 * Attention (decode, and prefill one query at a time): one thread block of
 * ATT_WARPS warps per (query head, query token).  Warp w takes context
 * tokens w*2, w*2+1, then w*2 + 2*ATT_WARPS, ...: it loads K and V of two
 * tokens before using either (two loads in flight hide DRAM latency), lane
 * j owns elements j*E .. j*E+E-1 of the head (E = head_dim / 32), a score
 * is a warp shuffle sum, and the warp keeps its own online-softmax state
 * (m, l, acc).  The warps' states merge at the end in shared memory:
 * M = max m_w, out = sum_w acc_w exp(m_w - M) / sum_w l_w exp(m_w - M).
 * Elements are widened to fp32 as they are loaded (F16: __half2float;
 * I8: q * scale of the group) and all arithmetic is fp32.  The rejected
 * alternative, one thread block reduction per token (the first version of
 * this kernel), spent ten __syncthreads per context token.
 *
 * Append: one warp per (K or V, KV head, group of 32 elements); lane j
 * takes element j.  I8: the group's max |x| is a shuffle max (exact, order
 * free), s = max / 127, q = rintf(x / s) -- IEEE division and rintf, the
 * twin's arithmetic, so the bytes match kv_ref_kv_append_i8's exactly.
 *
 * Compaction: one wave of independent moves (kv_ref_compact_waves) per
 * launch; grid.x walks the moves, grid.y splits a unit, 16-byte words when
 * the unit allows.
 */
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <math.h>
#include <stdio.h>

#include "kernels_cuda.h"

extern "C" {
#include "../sim/kv_common.h"
}

#define ATT_WARPS 8
#define ATT_THREADS (ATT_WARPS * 32)
#define APPEND_THREADS 256
#define COMPACT_THREADS 256

int kv__cuda_shape_ok(const struct kv_paged_shape *sh)
{
	return sh->heads > 0 && sh->kv_heads > 0 && sh->heads % sh->kv_heads == 0 &&
	       sh->head_dim > 0 && sh->head_dim % 32 == 0 && sh->head_dim <= KV_ATTN_MAX_DIM &&
	       sh->block_tokens > 0 && sh->layer >= 0 && sh->layer < (sh->layers > 1 ? sh->layers : 1);
}

/* kv_ref_block_bytes on either side. */
__host__ __device__ static size_t block_bytes(const struct kv_paged_shape &sh, enum kv_kv_type t)
{
	size_t elems = (size_t)2 * sh.kv_heads * sh.block_tokens * sh.head_dim;

	return t == KV_KV_F32 ? elems * 4 : t == KV_KV_F16 ? elems * 2 : elems + elems / KV_GROUP * 4;
}

size_t kv__cuda_block_bytes(const struct kv_paged_shape *sh, enum kv_kv_type t)
{
	return block_bytes(*sh, t);
}

/* Where a layer's KV of one sequence lives: the block rule of kernels.h. */
struct geom {
	const int32_t *table; /* this token's page table */
	size_t layers; /* blocks per page (>= 1) */
	size_t layer; /* this kernel's block of the page */
	size_t block_bytes; /* bytes of one block */
	size_t data_elems; /* elements of one block (I8: where the scales start) */
	int bt; /* tokens per block */
};

__device__ __forceinline__ const char *block_at(const struct geom &g, const char *arena, int i)
{
	size_t b = (size_t)g.table[i / g.bt] * g.layers + g.layer;

	return arena + b * g.block_bytes;
}

/* Element index of (kv, h, t, 0) inside a block: kernels_ref.c's in_block. */
__device__ __forceinline__ size_t in_block(const struct kv_paged_shape &sh, int kv, int h, int t)
{
	return (((size_t)kv * sh.kv_heads + h) * sh.block_tokens + t) * sh.head_dim;
}

/*
 * Loads a lane's n (<= CAP) elements d = lane*n + e of the row starting at
 * element `elem` of block blk, widened to float; zeros past n.
 */
template <int TYPE, int CAP>
__device__ __forceinline__ void load_row(float (&x)[CAP], const char *blk, size_t elem,
					 size_t data_elems, int lane, int n)
{
	size_t d0 = elem + (size_t)lane * n;

#pragma unroll
	for (int e = 0; e < CAP; e++)
		x[e] = 0.0f;
	if (TYPE == KV_KV_F32) {
		const float *p = (const float *)blk + d0;
#pragma unroll
		for (int e = 0; e < CAP; e++)
			if (e < n)
				x[e] = p[e];
	} else if (TYPE == KV_KV_F16) {
		const __half *p = (const __half *)blk + d0;

		if (CAP % 2 == 0 && n == CAP) { /* d0 even: 4-byte aligned pairs */
#pragma unroll
			for (int e = 0; e < CAP; e += 2) {
				float2 f = __half22float2(*(const __half2 *)(p + e));

				x[e] = f.x;
				x[e + 1] = f.y;
			}
		} else {
#pragma unroll
			for (int e = 0; e < CAP; e++)
				if (e < n)
					x[e] = __half2float(p[e]);
		}
	} else {
		const signed char *p = (const signed char *)blk + d0;
		const float *scales = (const float *)(blk + data_elems);

		if (CAP % 4 == 0 && n == CAP) { /* d0 a multiple of 4: char4 loads, one group */
			float s = scales[d0 / KV_GROUP];
#pragma unroll
			for (int e = 0; e < CAP; e += 4) {
				char4 c = *(const char4 *)(p + e);

				x[e] = (float)c.x * s;
				x[e + 1] = (float)c.y * s;
				x[e + 2] = (float)c.z * s;
				x[e + 3] = (float)c.w * s;
			}
		} else {
#pragma unroll
			for (int e = 0; e < CAP; e++)
				if (e < n)
					x[e] = (float)p[e] * scales[(d0 + e) / KV_GROUP];
		}
	}
}

__device__ __forceinline__ float warp_sum(float x)
{
#pragma unroll
	for (int o = 16; o > 0; o >>= 1)
		x += __shfl_xor_sync(0xffffffffu, x, o);
	return x;
}

__device__ __forceinline__ float warp_max(float x)
{
#pragma unroll
	for (int o = 16; o > 0; o >>= 1)
		x = fmaxf(x, __shfl_xor_sync(0xffffffffu, x, o));
	return x;
}

__device__ __forceinline__ void store(float *p, float x)
{
	*p = x;
}

__device__ __forceinline__ void store(__half *p, float x)
{
	*p = __float2half_rn(x);
}

/*
 * Attention for query head blockIdx.x of token blockIdx.y.  EPL is the
 * elements per lane when fixed at compile time, 0 for any head_dim up to
 * KV_ATTN_MAX_DIM (predicated loops of 16).
 */
template <int TYPE, int EPL, typename OUT>
__global__ void __launch_bounds__(ATT_THREADS) attention_kernel(struct kv__attn a)
{
	constexpr int CAP = EPL ? EPL : KV_ATTN_MAX_DIM / 32;
	__shared__ float sm_acc[ATT_WARPS * KV_ATTN_MAX_DIM], sm_m[ATT_WARPS], sm_l[ATT_WARPS];
	const struct kv_paged_shape &sh = a.sh;
	const int n = EPL ? EPL : sh.head_dim / 32, dim = sh.head_dim;
	int h = blockIdx.x, tok = blockIdx.y, warp = threadIdx.x / 32, lane = threadIdx.x % 32;
	int kvh = h / (sh.heads / sh.kv_heads), len = a.tok_pos[tok] + 1;
	struct geom g = { a.tables + a.tok_table[tok], (size_t)(sh.layers > 1 ? sh.layers : 1),
			  (size_t)sh.layer, block_bytes(sh, a.type),
			  (size_t)2 * sh.kv_heads * sh.block_tokens * dim, sh.block_tokens };
	const float *qp = a.q + (size_t)tok * a.q_stride + (size_t)h * dim + (size_t)lane * n;
	float q[CAP], acc[CAP], k0[CAP], v0[CAP], k1[CAP], v1[CAP], m = -INFINITY, l = 0.0f;

#pragma unroll
	for (int e = 0; e < CAP; e++) {
		q[e] = e < n ? qp[e] : 0.0f;
		acc[e] = 0.0f;
	}
	for (int t = warp * 2; t < len; t += ATT_WARPS * 2) {
		const char *b0 = block_at(g, (const char *)a.arena, t);
		int has1 = t + 1 < len;
		float s0 = 0.0f, s1 = 0.0f, m_new, corr, p0, p1;

		load_row<TYPE, CAP>(k0, b0, in_block(sh, 0, kvh, t % g.bt), g.data_elems, lane, n);
		load_row<TYPE, CAP>(v0, b0, in_block(sh, 1, kvh, t % g.bt), g.data_elems, lane, n);
		if (has1) {
			const char *b1 = block_at(g, (const char *)a.arena, t + 1);

			load_row<TYPE, CAP>(k1, b1, in_block(sh, 0, kvh, (t + 1) % g.bt), g.data_elems,
					    lane, n);
			load_row<TYPE, CAP>(v1, b1, in_block(sh, 1, kvh, (t + 1) % g.bt), g.data_elems,
					    lane, n);
		} else {
#pragma unroll
			for (int e = 0; e < CAP; e++)
				k1[e] = v1[e] = 0.0f; /* read by no one: p1 = 0 */
		}
#pragma unroll
		for (int e = 0; e < CAP; e++) {
			s0 += q[e] * k0[e];
			s1 += has1 ? q[e] * k1[e] : 0.0f;
		}
		s0 = warp_sum(s0) * a.scale;
		s1 = has1 ? warp_sum(s1) * a.scale : -INFINITY;
		m_new = fmaxf(m, fmaxf(s0, s1));
		corr = expf(m - m_new); /* 0 on the warp's first token: m = -inf */
		p0 = expf(s0 - m_new);
		p1 = has1 ? expf(s1 - m_new) : 0.0f;
		l = l * corr + p0 + p1;
#pragma unroll
		for (int e = 0; e < CAP; e++)
			acc[e] = acc[e] * corr + p0 * v0[e] + (has1 ? p1 * v1[e] : 0.0f);
		m = m_new;
	}
	if (lane == 0) {
		sm_m[warp] = m;
		sm_l[warp] = l;
	}
#pragma unroll
	for (int e = 0; e < CAP; e++)
		if (e < n)
			sm_acc[warp * dim + lane * n + e] = acc[e];
	__syncthreads();
	{
		float big = -INFINITY, lsum = 0.0f;
		OUT *out = (OUT *)a.out + (size_t)tok * a.out_stride + (size_t)h * dim;

		for (int w = 0; w < ATT_WARPS; w++)
			big = fmaxf(big, sm_m[w]);
		for (int w = 0; w < ATT_WARPS; w++)
			lsum += sm_m[w] > -INFINITY ? sm_l[w] * expf(sm_m[w] - big) : 0.0f;
		for (int d = threadIdx.x; d < dim; d += ATT_THREADS) {
			float o = 0.0f;

			for (int w = 0; w < ATT_WARPS; w++)
				if (sm_m[w] > -INFINITY)
					o += sm_acc[w * dim + d] * expf(sm_m[w] - big);
			store(out + d, lsum > 0.0f ? o / lsum : 0.0f);
		}
	}
}

/* Appends token blockIdx.x: one warp per (K or V, KV head, group of 32), lane = element. */
template <int TYPE>
__global__ void __launch_bounds__(APPEND_THREADS) append_kernel(struct kv__append a)
{
	const struct kv_paged_shape &sh = a.sh;
	int tok = blockIdx.x, warp = threadIdx.x / 32, lane = threadIdx.x % 32;
	int groups = sh.head_dim / KV_GROUP, rows = 2 * sh.kv_heads * groups, pos = a.tok_pos[tok];
	struct geom g = { a.tables + a.tok_table[tok], (size_t)(sh.layers > 1 ? sh.layers : 1),
			  (size_t)sh.layer, block_bytes(sh, a.type),
			  (size_t)2 * sh.kv_heads * sh.block_tokens * sh.head_dim, sh.block_tokens };
	char *blk = (char *)a.arena + (block_at(g, (const char *)a.arena, pos) - (const char *)a.arena);

	for (int r = warp; r < rows; r += APPEND_THREADS / 32) {
		int kv = r / (sh.kv_heads * groups), h = r / groups % sh.kv_heads, grp = r % groups;
		const float *src = (kv ? a.v : a.k) + (size_t)tok * a.stride +
				   (size_t)h * sh.head_dim + (size_t)grp * KV_GROUP;
		size_t e = in_block(sh, kv, h, pos % sh.block_tokens) + (size_t)grp * KV_GROUP + lane;
		float x = src[lane];

		if (TYPE == KV_KV_F32) {
			((float *)blk)[e] = x;
		} else if (TYPE == KV_KV_F16) {
			((__half *)blk)[e] = __float2half_rn(x);
		} else {
			float s = warp_max(fabsf(x)) / 127.0f; /* kv_ref_quantize_group */
			float q = s > 0.0f ? rintf(x / s) : 0.0f;

			blk[e] = (signed char)fminf(fmaxf(q, -127.0f), 127.0f);
			if (lane == 0)
				((float *)(blk + g.data_elems))[e / KV_GROUP] = s;
		}
	}
}

/* Move blockIdx.x of a wave: grid.y threads share the unit's 16-byte words (or bytes). */
__global__ void __launch_bounds__(COMPACT_THREADS)
compact_kernel(char *arena, size_t unit_bytes, const int32_t *from, const int32_t *to)
{
	int i = blockIdx.x;
	size_t step = (size_t)gridDim.y * blockDim.x, w = (size_t)blockIdx.y * blockDim.x + threadIdx.x;
	const char *src = arena + (size_t)from[i] * unit_bytes;
	char *dst = arena + (size_t)to[i] * unit_bytes;

	if (from[i] == to[i])
		return;
	if (unit_bytes % 16 == 0) {
		for (; w < unit_bytes / 16; w += step)
			((uint4 *)dst)[w] = ((const uint4 *)src)[w];
	} else {
		for (; w < unit_bytes; w += step)
			dst[w] = src[w];
	}
}

template <int TYPE, typename OUT>
static void launch_attention(const struct kv__attn *a, cudaStream_t st)
{
	dim3 grid((unsigned)a->sh.heads, (unsigned)a->n_tok);

	switch (a->sh.head_dim / 32) {
	case 2:
		attention_kernel<TYPE, 2, OUT><<<grid, ATT_THREADS, 0, st>>>(*a);
		break;
	case 4:
		attention_kernel<TYPE, 4, OUT><<<grid, ATT_THREADS, 0, st>>>(*a);
		break;
	case 8:
		attention_kernel<TYPE, 8, OUT><<<grid, ATT_THREADS, 0, st>>>(*a);
		break;
	default:
		attention_kernel<TYPE, 0, OUT><<<grid, ATT_THREADS, 0, st>>>(*a);
		break;
	}
}

template <int TYPE>
static void launch_attention_out(const struct kv__attn *a, cudaStream_t st)
{
	if (a->out_half)
		launch_attention<TYPE, __half>(a, st);
	else
		launch_attention<TYPE, float>(a, st);
}

cudaError_t kv__cuda_attention(const struct kv__attn *a, cudaStream_t st)
{
	if (!kv__cuda_shape_ok(&a->sh) || a->n_tok < 0 || a->n_tok > 65535)
		return cudaErrorInvalidValue;
	if (a->n_tok == 0)
		return cudaSuccess;
	if (a->type == KV_KV_F32)
		launch_attention_out<KV_KV_F32>(a, st);
	else if (a->type == KV_KV_F16)
		launch_attention_out<KV_KV_F16>(a, st);
	else
		launch_attention_out<KV_KV_I8>(a, st);
	return cudaGetLastError();
}

cudaError_t kv__cuda_append(const struct kv__append *a, cudaStream_t st)
{
	if (!kv__cuda_shape_ok(&a->sh) || a->n_tok < 0)
		return cudaErrorInvalidValue;
	if (a->n_tok == 0)
		return cudaSuccess;
	if (a->type == KV_KV_F32)
		append_kernel<KV_KV_F32><<<a->n_tok, APPEND_THREADS, 0, st>>>(*a);
	else if (a->type == KV_KV_F16)
		append_kernel<KV_KV_F16><<<a->n_tok, APPEND_THREADS, 0, st>>>(*a);
	else
		append_kernel<KV_KV_I8><<<a->n_tok, APPEND_THREADS, 0, st>>>(*a);
	return cudaGetLastError();
}

cudaError_t kv__cuda_compact_wave(void *arena, size_t unit_bytes, const int32_t *from,
				  const int32_t *to, int n, cudaStream_t st)
{
	size_t work = unit_bytes % 16 == 0 ? unit_bytes / 16 : unit_bytes;
	size_t per_block = (size_t)COMPACT_THREADS * 4, y = (work + per_block - 1) / per_block;
	dim3 grid((unsigned)n, (unsigned)(y < 1 ? 1 : y > 65535 ? 65535 : y));

	if (n <= 0)
		return n == 0 ? cudaSuccess : cudaErrorInvalidValue;
	compact_kernel<<<grid, COMPACT_THREADS, 0, st>>>((char *)arena, unit_bytes, from, to);
	return cudaGetLastError();
}

/* ---- the test twins: copy in, run on the default stream, copy out ---- */

/*
 * Prints a failed CUDA call and returns nonzero, consuming the error from
 * the runtime's last-error slot (a failed cudaMalloc would otherwise show
 * up again at the next launch check, as backend_cuda.cu's cu_ok says).
 */
static int failed(cudaError_t e, const char *what)
{
	if (e == cudaSuccess)
		return 0;
	(void)cudaGetLastError();
	fprintf(stderr, "kvsim: CUDA: %s: %s\n", what, cudaGetErrorString(e));
	return 1;
}

/* cudaMalloc(bytes) and, when src, copies src in; nonzero on failure (printed). */
static int put(void **dev, const void *src, size_t bytes, const char *what)
{
	*dev = NULL;
	if (failed(cudaMalloc(dev, bytes ? bytes : 1), what))
		return 1;
	return src && failed(cudaMemcpy(*dev, src, bytes, cudaMemcpyHostToDevice), what);
}

/* 0 when every table entry's block of the layer lies inside an arena of `blocks` blocks. */
static int table_ok(const struct kv_paged_shape *sh, const int32_t *table, int n, size_t blocks)
{
	size_t layers = (size_t)(sh->layers > 1 ? sh->layers : 1);

	for (int i = 0; i < n; i++)
		if (table[i] < 0 || (size_t)table[i] * layers + (size_t)sh->layer >= blocks)
			return 0;
	return 1;
}

extern "C" int kv_cuda_paged_decode_kv(float *out, const float *q, int n_q, const int32_t *lens,
				       const void *arena, size_t arena_bytes, enum kv_kv_type t,
				       const struct kv_paged_shape *sh, const int32_t *table,
				       int n_blocks, float scale)
{
	size_t qf = (size_t)n_q * sh->heads * sh->head_dim, bb;
	int32_t *pos = NULL;
	void *d_out = NULL, *d_q = NULL, *d_arena = NULL, *d_table = NULL, *d_tt = NULL, *d_pos = NULL;
	struct kv__attn a;
	int rc = KV_EIO, i;

	if (!kv__cuda_shape_ok(sh) || n_q < 1 || n_q > 65535)
		return KV_EINVAL;
	bb = kv__cuda_block_bytes(sh, t);
	if (!table_ok(sh, table, n_blocks, arena_bytes / bb))
		return KV_EINVAL;
	for (i = 0; i < n_q; i++)
		if (lens[i] < 1 || lens[i] > n_blocks * sh->block_tokens)
			return KV_EINVAL;
	pos = (int32_t *)kv_xcalloc((size_t)n_q, 2 * sizeof(int32_t)); /* positions, then zeros */
	for (i = 0; i < n_q; i++)
		pos[i] = lens[i] - 1;
	if (put(&d_out, NULL, qf * sizeof(float), "cudaMalloc out") ||
	    put(&d_q, q, qf * sizeof(float), "copy q") ||
	    put(&d_arena, arena, arena_bytes, "copy arena") ||
	    put(&d_table, table, (size_t)n_blocks * sizeof(int32_t), "copy table") ||
	    put(&d_pos, pos, (size_t)n_q * sizeof(int32_t), "copy positions") ||
	    put(&d_tt, pos + n_q, (size_t)n_q * sizeof(int32_t), "copy table offsets"))
		goto fail;
	a.q = (const float *)d_q;
	a.q_stride = (size_t)sh->heads * sh->head_dim;
	a.out = d_out;
	a.out_stride = a.q_stride;
	a.out_half = 0;
	a.arena = d_arena;
	a.type = t;
	a.tables = (const int32_t *)d_table;
	a.tok_table = (const int32_t *)d_tt;
	a.tok_pos = (const int32_t *)d_pos;
	a.n_tok = n_q;
	a.sh = *sh;
	a.scale = scale;
	if (failed(kv__cuda_attention(&a, 0), "launch attention_kernel") ||
	    failed(cudaDeviceSynchronize(), "attention_kernel") ||
	    failed(cudaMemcpy(out, d_out, qf * sizeof(float), cudaMemcpyDeviceToHost), "copy out"))
		goto fail;
	rc = 0;
fail:
	cudaFree(d_out), cudaFree(d_q), cudaFree(d_arena), cudaFree(d_table), cudaFree(d_tt);
	cudaFree(d_pos);
	free(pos);
	return rc;
}

extern "C" int kv_cuda_paged_decode(float *out, const float *q, const float *arena,
				    size_t arena_floats, const struct kv_paged_shape *sh,
				    const int32_t *table, int n_blocks, int ctx_len, float scale)
{
	return kv_cuda_paged_decode_kv(out, q, 1, &ctx_len, arena, arena_floats * sizeof(float),
				       KV_KV_F32, sh, table, n_blocks, scale);
}

extern "C" int kv_cuda_kv_append(void *arena, size_t arena_bytes, enum kv_kv_type t,
				 const struct kv_paged_shape *sh, const int32_t *table, int n_blocks,
				 const int32_t *pos, int n_tok, const float *k, const float *v)
{
	size_t row = (size_t)sh->kv_heads * sh->head_dim, bb;
	void *d_arena = NULL, *d_table = NULL, *d_tt = NULL, *d_pos = NULL, *d_k = NULL, *d_v = NULL;
	int32_t *zeros = NULL;
	struct kv__append a;
	int rc = KV_EIO, i;

	if (!kv__cuda_shape_ok(sh) || n_tok < 1)
		return KV_EINVAL;
	bb = kv__cuda_block_bytes(sh, t);
	if (!table_ok(sh, table, n_blocks, arena_bytes / bb))
		return KV_EINVAL;
	for (i = 0; i < n_tok; i++)
		if (pos[i] < 0 || pos[i] >= n_blocks * sh->block_tokens)
			return KV_EINVAL;
	zeros = (int32_t *)kv_xcalloc((size_t)n_tok, sizeof(int32_t));
	if (put(&d_arena, arena, arena_bytes, "copy arena") ||
	    put(&d_table, table, (size_t)n_blocks * sizeof(int32_t), "copy table") ||
	    put(&d_tt, zeros, (size_t)n_tok * sizeof(int32_t), "copy table offsets") ||
	    put(&d_pos, pos, (size_t)n_tok * sizeof(int32_t), "copy positions") ||
	    put(&d_k, k, (size_t)n_tok * row * sizeof(float), "copy k") ||
	    put(&d_v, v, (size_t)n_tok * row * sizeof(float), "copy v"))
		goto fail;
	a.k = (const float *)d_k;
	a.v = (const float *)d_v;
	a.stride = row;
	a.arena = d_arena;
	a.type = t;
	a.tables = (const int32_t *)d_table;
	a.tok_table = (const int32_t *)d_tt;
	a.tok_pos = (const int32_t *)d_pos;
	a.n_tok = n_tok;
	a.sh = *sh;
	if (failed(kv__cuda_append(&a, 0), "launch append_kernel") ||
	    failed(cudaDeviceSynchronize(), "append_kernel") ||
	    failed(cudaMemcpy(arena, d_arena, arena_bytes, cudaMemcpyDeviceToHost), "copy arena back"))
		goto fail;
	rc = 0;
fail:
	cudaFree(d_arena), cudaFree(d_table), cudaFree(d_tt), cudaFree(d_pos), cudaFree(d_k);
	cudaFree(d_v);
	free(zeros);
	return rc;
}

extern "C" int kv_cuda_compact(void *arena, size_t arena_bytes, size_t block_bytes,
			       const int32_t *from, const int32_t *to, int n)
{
	size_t blocks = block_bytes ? arena_bytes / block_bytes : 0;
	void *d_arena = NULL, *d_from = NULL, *d_to = NULL;
	int *end = NULL, waves, w, start = 0, rc = KV_EIO, i;

	if (n < 1 || !block_bytes)
		return KV_EINVAL;
	for (i = 0; i < n; i++)
		if (from[i] < 0 || to[i] < 0 || (size_t)from[i] >= blocks || (size_t)to[i] >= blocks)
			return KV_EINVAL;
	end = (int *)kv_xmalloc((size_t)n * sizeof(int));
	waves = kv_ref_compact_waves(from, to, n, end);
	if (put(&d_arena, arena, arena_bytes, "copy arena") ||
	    put(&d_from, from, (size_t)n * sizeof(int32_t), "copy from") ||
	    put(&d_to, to, (size_t)n * sizeof(int32_t), "copy to"))
		goto fail;
	for (w = 0; w < waves; start = end[w++])
		if (failed(kv__cuda_compact_wave(d_arena, block_bytes, (const int32_t *)d_from + start,
						 (const int32_t *)d_to + start, end[w] - start, 0),
			   "launch compact_kernel"))
			goto fail;
	if (failed(cudaDeviceSynchronize(), "compact_kernel") ||
	    failed(cudaMemcpy(arena, d_arena, arena_bytes, cudaMemcpyDeviceToHost), "copy arena back"))
		goto fail;
	rc = 0;
fail:
	cudaFree(d_arena), cudaFree(d_from), cudaFree(d_to);
	free(end);
	return rc;
}
