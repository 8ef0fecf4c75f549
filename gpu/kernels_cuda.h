/*
 * kernels_cuda.h -- the CUDA KV kernels' launchers, for the CUDA units
 * (backend_cuda.cu and kernels.cu's test twins); C++ only.
 *
 * Every launcher queues its kernel on the given stream and returns the
 * launch status (cudaGetLastError), never synchronising.  Pointers are
 * device pointers.  Tokens carry two integers each: tok_table, the offset
 * of their sequence's page table inside `tables`, and tok_pos, their
 * position in the sequence (append writes slot tok_pos; attention reads
 * tokens 0..tok_pos).  Indexing is kernels.h's, twin for twin.
 */
#ifndef KV_KERNELS_CUDA_H
#define KV_KERNELS_CUDA_H

#include <cuda_runtime.h>

extern "C" {
#include "kernels.h"
}

#define KV_ATTN_MAX_DIM 512 /* head_dim limit: 32 lanes x 16 elements */

/* One batch of attention queries. */
struct kv__attn {
	const float *q; /* query of token t, head h at q + t * q_stride + h * head_dim */
	size_t q_stride; /* floats between tokens' queries */
	void *out; /* float or __half (out_half); token t, head h at out + t * out_stride + h * head_dim */
	size_t out_stride; /* elements between tokens' outputs */
	int out_half; /* 1: out is __half */
	const void *arena; /* the KV blocks */
	enum kv_kv_type type; /* element type of the arena */
	const int32_t *tables; /* page tables, concatenated */
	const int32_t *tok_table; /* per token: offset of its table in tables */
	const int32_t *tok_pos; /* per token: position; attends tokens 0..pos */
	int n_tok; /* tokens (grid rows) */
	struct kv_paged_shape sh; /* shape and layer */
	float scale; /* score scale, 1/sqrt(head_dim) */
};

/* One batch of KV appends. */
struct kv__append {
	const float *k, *v; /* token t's K at k + t * stride, [kv_heads][head_dim]; V likewise */
	size_t stride; /* floats between tokens */
	void *arena; /* the KV blocks */
	enum kv_kv_type type; /* element type of the arena */
	const int32_t *tables; /* page tables, concatenated */
	const int32_t *tok_table; /* per token: offset of its table in tables */
	const int32_t *tok_pos; /* per token: position, the slot written */
	int n_tok; /* tokens */
	struct kv_paged_shape sh; /* shape and layer */
};

/* 1 when the kernels support the shape (head_dim a multiple of 32, <= 512; GQA divides). */
int kv__cuda_shape_ok(const struct kv_paged_shape *sh);

/* Bytes of one block of type t (kv_ref_block_bytes, computed here). */
size_t kv__cuda_block_bytes(const struct kv_paged_shape *sh, enum kv_kv_type t);

cudaError_t kv__cuda_attention(const struct kv__attn *a, cudaStream_t st);
cudaError_t kv__cuda_append(const struct kv__append *a, cudaStream_t st);

/*
 * One wave of compaction: copies unit from[i] to unit to[i], i < n, all at
 * once (the moves must touch distinct units: kv_ref_compact_waves); units
 * are unit_bytes long.  No-op moves are skipped.
 */
cudaError_t kv__cuda_compact_wave(void *arena, size_t unit_bytes, const int32_t *from,
				  const int32_t *to, int n, cudaStream_t st);

#endif /* KV_KERNELS_CUDA_H */
