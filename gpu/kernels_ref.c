/* kernels_ref.c -- the CPU reference KV kernels; see kernels.h. */
#include "kernels.h"

#include <math.h>
#include <string.h>

size_t kv_ref_block_floats(const struct kv_paged_shape *sh)
{
	return (size_t)2 * (size_t)sh->kv_heads * (size_t)sh->block_tokens * (size_t)sh->head_dim;
}

/* Offset of K (kv = 0) or V (kv = 1) of head h, slot t, in block b. */
static size_t kv_offset(const struct kv_paged_shape *sh, int32_t b, int kv, int h, int t)
{
	return (((size_t)b * 2 + (size_t)kv) * (size_t)sh->kv_heads + (size_t)h) *
		       (size_t)sh->block_tokens * (size_t)sh->head_dim +
	       (size_t)t * (size_t)sh->head_dim;
}

void kv_ref_kv_append(float *arena, const struct kv_paged_shape *sh, const int32_t *block_table,
		      int pos, const float *k, const float *v)
{
	int32_t b = block_table[pos / sh->block_tokens];
	int t = pos % sh->block_tokens, h;
	size_t bytes = (size_t)sh->head_dim * sizeof(float);

	for (h = 0; h < sh->kv_heads; h++) {
		memcpy(arena + kv_offset(sh, b, 0, h, t), k + (size_t)h * sh->head_dim, bytes);
		memcpy(arena + kv_offset(sh, b, 1, h, t), v + (size_t)h * sh->head_dim, bytes);
	}
}

/* One query head against the context: the online softmax, out = sum p_i V_i. */
static void decode_head(float *out, const float *q, const float *arena,
			const struct kv_paged_shape *sh, const int32_t *block_table, int ctx_len,
			int kvh, float scale)
{
	float m = -INFINITY, l = 0.0f;
	int i, d;

	for (d = 0; d < sh->head_dim; d++)
		out[d] = 0.0f;
	for (i = 0; i < ctx_len; i++) {
		int32_t b = block_table[i / sh->block_tokens];
		const float *k = arena + kv_offset(sh, b, 0, kvh, i % sh->block_tokens);
		const float *v = arena + kv_offset(sh, b, 1, kvh, i % sh->block_tokens);
		float s = 0.0f, m_new, corr, p;

		for (d = 0; d < sh->head_dim; d++)
			s += q[d] * k[d];
		s *= scale;
		m_new = s > m ? s : m;
		corr = expf(m - m_new); /* 0 on the first token: m = -inf */
		p = expf(s - m_new);
		l = l * corr + p;
		for (d = 0; d < sh->head_dim; d++)
			out[d] = out[d] * corr + p * v[d];
		m = m_new;
	}
	for (d = 0; d < sh->head_dim && l > 0.0f; d++)
		out[d] /= l;
}

void kv_ref_paged_decode(float *out, const float *q, const float *arena,
			 const struct kv_paged_shape *sh, const int32_t *block_table, int ctx_len,
			 float scale)
{
	int group = sh->heads / sh->kv_heads, h;

	for (h = 0; h < sh->heads; h++)
		decode_head(out + (size_t)h * sh->head_dim, q + (size_t)h * sh->head_dim, arena, sh,
			    block_table, ctx_len, h / group, scale);
}

void kv_ref_compact(float *arena, const struct kv_paged_shape *sh, const int32_t *from,
		    const int32_t *to, int n)
{
	size_t floats = kv_ref_block_floats(sh);
	int i;

	for (i = 0; i < n; i++)
		if (from[i] != to[i])
			memmove(arena + (size_t)to[i] * floats, arena + (size_t)from[i] * floats,
				floats * sizeof(float));
}
