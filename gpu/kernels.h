/*
 * kernels.h -- the execution backends' KV kernels as plain C: the CPU
 * reference ("twins") that the CUDA kernels (kernels.cu) must match index
 * for index.
 *
 * Paged KV layout, shared by every backend: the arena is an array of
 * blocks; block b holds block_tokens tokens of one sequence, K then V, each
 * as [kv_heads][block_tokens][head_dim] contiguous elements:
 *
 *   K(b, h, t, d) = data[((b * 2 + 0) * kv_heads + h) * block_tokens * head_dim + t * head_dim + d]
 *   V(b, h, t, d) = data[((b * 2 + 1) * kv_heads + h) * block_tokens * head_dim + t * head_dim + d]
 *
 * A sequence's token i lives in block table[i / block_tokens] * layers +
 * layer at slot i % block_tokens: a table entry names a *page* of `layers`
 * consecutive blocks, one per layer (exec.h), and kernels for layer l read
 * block p * layers + l.  With layers = 1 (or 0) table entries are blocks.
 * Grouped-query attention: query head h reads KV head h / (heads / kv_heads).
 *
 * Three element types (enum kv_kv_type):
 *  - F32: data is float; a block is kv_ref_block_bytes() = 2*kv_heads*
 *    block_tokens*head_dim*4 bytes.
 *  - F16: data is IEEE binary16 (stored as uint16_t, rounded to nearest
 *    even by kv_ref_f32_to_f16, as CUDA's __float2half_rn does).
 *  - I8: data is int8, followed in the same block by one float scale per
 *    group of KV_GROUP = 32 consecutive elements of a head vector.  Block b
 *    starts at byte b * kv_ref_block_bytes(); inside it element (kv, h, t,
 *    d) is byte ((kv * kv_heads + h) * block_tokens + t) * head_dim + d (the
 *    formula above, block-relative) and the scale of its group g = d / 32
 *    is float ((kv * kv_heads + h) * block_tokens + t) * G + g, G =
 *    head_dim / 32, of the float array that starts right after the block's
 *    2*kv_heads*block_tokens*head_dim data bytes.  Symmetric quantisation:
 *    s = max|x| / 127 over the group, q = rintf(x / s) clamped to
 *    [-127, 127] (q = 0 when s = 0), x' = q * s.  head_dim must be a
 *    multiple of 32.  A group's metadata is 4 bytes, as cache_quant's fp16
 *    scale and zero point, so an I8 block is the simulator's 8-bit group-32
 *    block byte for byte.
 *
 * Decode attention uses the online softmax (Milakov & Gimelshein, 2018, as
 * FlashAttention and vLLM's paged attention do): one pass over the context
 * keeping the running maximum m, the running sum l of exp(s - m) and the
 * running weighted sum of V, rescaled by exp(m_old - m_new) when the
 * maximum grows; out = acc / l.  Numerically safe for any score range.
 * Arithmetic is fp32 for every element type; F16 and I8 elements are
 * widened (I8: q * s) as they are read.
 *
 * Error of the 8-bit cache (the bound tests/test_kernels.c asserts).  Let
 * every stored element err by at most e = s/2 (rounding to the nearest
 * step; s <= max|x| / 127).  A score s_i = scale * q.k_i then errs by at
 * most eps = scale * ||q||_1 * e_K, so each softmax weight p_i changes by a
 * factor within [exp(-2 eps), exp(2 eps)] and sum |p'_i - p_i| <= exp(2 eps)
 * - 1.  The output o = sum p_i v_i therefore errs by at most
 *
 *   |o' - o| <= (exp(2 eps) - 1) * max|v| + e_V
 *
 * per element, with e_K, e_V the largest half-steps among K's and V's
 * groups.  For |x| <= 1, head_dim 128 and |q| <= 1 (||q||_1 <= 128, scale
 * 1/sqrt(128)): e <= 1/254, eps <= 0.0445, bound 0.097; random data sits far
 * below it because the rounding errors cancel.  F16 elements err by at most
 * 2^-11 relatively, giving the same bound with e = 2^-11 max|x|: about
 * 1e-3 of max|v| in the worst case, ~1e-4 in practice.
 */
#ifndef KV_KERNELS_H
#define KV_KERNELS_H

#include <stddef.h>
#include <stdint.h>

#define KV_GROUP 32 /* elements per 8-bit quantisation group */

struct kv_paged_shape {
	int heads; /* query heads */
	int kv_heads; /* KV heads (divides heads) */
	int head_dim; /* elements per head */
	int block_tokens; /* tokens per block */
	int layers; /* blocks per table entry (a page of one block per layer); 0 means 1 */
	int layer; /* which block of the page, 0..layers-1 */
};

enum kv_kv_type {
	KV_KV_F32, /* float */
	KV_KV_F16, /* IEEE binary16 */
	KV_KV_I8, /* int8 with one float scale per group of KV_GROUP elements */
};

/* Floats in one F32 block: 2 * kv_heads * block_tokens * head_dim. */
size_t kv_ref_block_floats(const struct kv_paged_shape *sh);

/* Bytes of one block of type t (I8: data plus scales). */
size_t kv_ref_block_bytes(const struct kv_paged_shape *sh, enum kv_kv_type t);

/* Block holding token i through table (the page-of-layers rule above). */
int64_t kv_ref_block_of(const struct kv_paged_shape *sh, const int32_t *table, int i);

/* IEEE binary16 conversions: round to nearest even, subnormals, inf and NaN kept. */
uint16_t kv_ref_f32_to_f16(float x);
float kv_ref_f16_to_f32(uint16_t h);

/*
 * Quantises n (<= KV_GROUP) elements of x into q and returns their scale,
 * max|x| / 127 (0 for an all-zero group): q = rintf(x / s) clamped to
 * [-127, 127].  The CUDA append kernel computes exactly this.
 */
float kv_ref_quantize_group(int8_t *q, const float *x, int n);

/*
 * Writes token `pos` of a sequence: k and v are [kv_heads][head_dim]; the
 * slot is found through block_table.  _f16 rounds to binary16; _i8
 * quantises each group of 32 (head_dim must be a multiple of 32).
 */
void kv_ref_kv_append(float *arena, const struct kv_paged_shape *sh, const int32_t *block_table,
		      int pos, const float *k, const float *v);
void kv_ref_kv_append_f16(uint16_t *arena, const struct kv_paged_shape *sh,
			  const int32_t *block_table, int pos, const float *k, const float *v);
void kv_ref_kv_append_i8(void *arena, const struct kv_paged_shape *sh, const int32_t *block_table,
			 int pos, const float *k, const float *v);

/*
 * One decode step of attention for one sequence: q is [heads][head_dim],
 * the context is tokens 0..ctx_len-1 through block_table, out is
 * [heads][head_dim].  scale multiplies the scores (1/sqrt(head_dim)).
 * _kv reads an arena of any element type.
 */
void kv_ref_paged_decode(float *out, const float *q, const float *arena,
			 const struct kv_paged_shape *sh, const int32_t *block_table, int ctx_len,
			 float scale);
void kv_ref_paged_decode_kv(float *out, const float *q, const void *arena, enum kv_kv_type t,
			    const struct kv_paged_shape *sh, const int32_t *block_table, int ctx_len,
			    float scale);

/*
 * Compaction: copies block from[i] to block to[i] for i in 0..n-1, in order
 * (the caller orders moves so that no source is overwritten before it is
 * read: moving live blocks down into holes, lowest first, does).  _bytes
 * moves blocks of any size.
 */
void kv_ref_compact(float *arena, const struct kv_paged_shape *sh, const int32_t *from,
		    const int32_t *to, int n);
void kv_ref_compact_bytes(void *arena, size_t block_bytes, const int32_t *from,
			  const int32_t *to, int n);

/*
 * Splits the ordered moves into waves that may run in parallel: a wave is
 * a run of consecutive moves in which no block is touched (read or written)
 * by two moves, so copying all of a wave at once equals copying its moves
 * in order.  No-op moves (from == to) join any wave and are copied by no
 * one.  Writes the end index (exclusive) of each wave to wave_end and
 * returns the number of waves (0 for n = 0).  O(n) expected time.
 */
int kv_ref_compact_waves(const int32_t *from, const int32_t *to, int n, int *wave_end);

#if KV_HAVE_CUDA
/*
 * The CUDA twins (gpu/kernels.cu), inside kvsim-cuda.so (the only place
 * KV_HAVE_CUDA is defined); tests/test_gpu.c reaches them through the
 * module's table (cuda_module.h).  For the tests: each copies its inputs to
 * the device, runs the kernel on the default stream, copies the results
 * back and frees what it took.  They return 0, KV_EINVAL for a shape the
 * kernels do not support (head_dim not a multiple of 32 or above 512, or
 * heads not a multiple of kv_heads), or KV_EIO when a CUDA call failed
 * (printed to stderr).
 */

/* fp32 decode of one query (the first twin; kept for its callers). */
int kv_cuda_paged_decode(float *out, const float *q, const float *arena, size_t arena_floats,
			 const struct kv_paged_shape *sh, const int32_t *table, int n_blocks,
			 int ctx_len, float scale);

/*
 * n_q queries (q and out are [n_q][heads][head_dim]) of one sequence; query
 * i attends to tokens 0..lens[i]-1 of an arena of type t and arena_bytes.
 */
int kv_cuda_paged_decode_kv(float *out, const float *q, int n_q, const int32_t *lens,
			    const void *arena, size_t arena_bytes, enum kv_kv_type t,
			    const struct kv_paged_shape *sh, const int32_t *table, int n_blocks,
			    float scale);

/*
 * Appends n_tok tokens of one sequence at positions pos[] (k and v are
 * [n_tok][kv_heads][head_dim]) into arena (arena_bytes, type F16 or I8,
 * updated in place: uploaded, written, downloaded).
 */
int kv_cuda_kv_append(void *arena, size_t arena_bytes, enum kv_kv_type t,
		      const struct kv_paged_shape *sh, const int32_t *table, int n_blocks,
		      const int32_t *pos, int n_tok, const float *k, const float *v);

/* Compaction of an arena of arena_bytes in blocks of block_bytes, in place. */
int kv_cuda_compact(void *arena, size_t arena_bytes, size_t block_bytes, const int32_t *from,
		    const int32_t *to, int n);
#endif

#endif /* KV_KERNELS_H */
