/*
 * kernels.h -- the execution backends' KV kernels as plain C: the CPU
 * reference ("twins") that the CUDA kernels must match index for index.
 *
 * Paged KV layout, shared by every backend: the arena is an array of
 * blocks; block b holds block_tokens tokens of one sequence, K then V, each
 * as [kv_heads][block_tokens][head_dim] contiguous floats:
 *
 *   K(b, h, t, d) = arena[((b * 2 + 0) * kv_heads + h) * block_tokens * head_dim + t * head_dim + d]
 *   V(b, h, t, d) = arena[((b * 2 + 1) * kv_heads + h) * block_tokens * head_dim + t * head_dim + d]
 *
 * A sequence's token i lives in block block_table[i / block_tokens] at slot
 * i % block_tokens.  Grouped-query attention: query head h reads KV head
 * h / (heads / kv_heads).
 *
 * Decode attention uses the online softmax (Milakov & Gimelshein, 2018, as
 * FlashAttention and vLLM's paged attention do): one pass over the context
 * keeping the running maximum m, the running sum l of exp(s - m) and the
 * running weighted sum of V, rescaled by exp(m_old - m_new) when the
 * maximum grows; out = acc / l.  Numerically safe for any score range.
 *
 * Everything is single precision; the CUDA kernels store fp16 and
 * accumulate in fp32, and are compared to these on random inputs.
 */
#ifndef KV_KERNELS_H
#define KV_KERNELS_H

#include <stddef.h>
#include <stdint.h>

struct kv_paged_shape {
	int heads; /* query heads */
	int kv_heads; /* KV heads (divides heads) */
	int head_dim; /* elements per head */
	int block_tokens; /* tokens per block */
};

/* Floats in one block: 2 * kv_heads * block_tokens * head_dim. */
size_t kv_ref_block_floats(const struct kv_paged_shape *sh);

/*
 * Writes token `pos` of a sequence: k and v are [kv_heads][head_dim]; the
 * slot is found through block_table.
 */
void kv_ref_kv_append(float *arena, const struct kv_paged_shape *sh, const int32_t *block_table,
		      int pos, const float *k, const float *v);

/*
 * One decode step of attention for one sequence: q is [heads][head_dim],
 * the context is tokens 0..ctx_len-1 through block_table, out is
 * [heads][head_dim].  scale multiplies the scores (1/sqrt(head_dim)).
 */
void kv_ref_paged_decode(float *out, const float *q, const float *arena,
			 const struct kv_paged_shape *sh, const int32_t *block_table, int ctx_len,
			 float scale);

/*
 * Compaction: copies block from[i] to block to[i] for i in 0..n-1, in order
 * (the caller orders moves so that no source is overwritten before it is
 * read: moving live blocks down into holes, lowest first, does).
 */
void kv_ref_compact(float *arena, const struct kv_paged_shape *sh, const int32_t *from,
		    const int32_t *to, int n);

#if KV_HAVE_CUDA
/*
 * The CUDA twin of kv_ref_paged_decode (gpu/kernels.cu): copies the inputs
 * to the device, runs the kernel, copies out back.  Returns 0, KV_EINVAL for
 * a shape it does not support (head_dim > 512), or KV_EIO when a CUDA call
 * failed (printed).
 */
int kv_cuda_paged_decode(float *out, const float *q, const float *arena, size_t arena_floats,
			 const struct kv_paged_shape *sh, const int32_t *table, int n_blocks,
			 int ctx_len, float scale);
#endif

#endif /* KV_KERNELS_H */
