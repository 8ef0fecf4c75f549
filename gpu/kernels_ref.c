/* kernels_ref.c -- the CPU reference KV kernels; see kernels.h. */
#include "kernels.h"

#include "../sim/kv_common.h"

#include <assert.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

size_t kv_ref_block_floats(const struct kv_paged_shape *sh)
{
	return (size_t)2 * (size_t)sh->kv_heads * (size_t)sh->block_tokens * (size_t)sh->head_dim;
}

size_t kv_ref_block_bytes(const struct kv_paged_shape *sh, enum kv_kv_type t)
{
	size_t elems = kv_ref_block_floats(sh);

	switch (t) {
	case KV_KV_F32:
		return elems * 4;
	case KV_KV_F16:
		return elems * 2;
	case KV_KV_I8:
		return elems + elems / KV_GROUP * sizeof(float);
	}
	return 0;
}

int64_t kv_ref_block_of(const struct kv_paged_shape *sh, const int32_t *table, int i)
{
	int64_t layers = sh->layers > 1 ? sh->layers : 1;

	return (int64_t)table[i / sh->block_tokens] * layers + sh->layer;
}

/* Element index of (kv, h, t, 0) inside a block: the same for every type. */
static size_t in_block(const struct kv_paged_shape *sh, int kv, int h, int t)
{
	return (((size_t)kv * (size_t)sh->kv_heads + (size_t)h) * (size_t)sh->block_tokens +
		(size_t)t) * (size_t)sh->head_dim;
}

uint16_t kv_ref_f32_to_f16(float x)
{
	uint32_t u, sign, h, rem;

	memcpy(&u, &x, sizeof(u));
	sign = (u >> 16) & 0x8000u;
	u &= 0x7fffffffu;
	if (u > 0x7f800000u) /* NaN: keep it quiet and non-zero */
		return (uint16_t)(sign | 0x7e00u | ((u >> 13) & 0x3ffu));
	if (u >= 0x477ff000u) /* >= 65520 rounds to infinity (and infinity stays) */
		return (uint16_t)(sign | 0x7c00u);
	if (u < 0x38800000u) { /* below 2^-14: a subnormal half m * 2^-24, or zero */
		uint32_t e = u >> 23, mant, shift, m, half;

		if (e < 102) /* below 2^-25: rounds to zero */
			return (uint16_t)sign;
		mant = (u & 0x7fffffu) | 0x800000u;
		shift = 126 - e;
		m = mant >> shift;
		rem = mant & ((1u << shift) - 1);
		half = 1u << (shift - 1);
		if (rem > half || (rem == half && (m & 1)))
			m++; /* may carry into the smallest normal: the right encoding */
		return (uint16_t)(sign | m);
	}
	h = (u >> 13) - 0x1c000u; /* rebias 127 -> 15, keep 10 mantissa bits */
	rem = u & 0x1fffu;
	if (rem > 0x1000u || (rem == 0x1000u && (h & 1)))
		h++; /* a carry into the exponent is the right rounding */
	return (uint16_t)(sign | h);
}

float kv_ref_f16_to_f32(uint16_t h)
{
	uint32_t sign = (uint32_t)(h & 0x8000u) << 16, e = (h >> 10) & 0x1fu, m = h & 0x3ffu, u;
	float f;

	if (e == 31)
		u = sign | 0x7f800000u | (m << 13);
	else if (e)
		u = sign | ((e + 112) << 23) | (m << 13);
	else {
		f = (float)m * 5.9604644775390625e-8f; /* m * 2^-24, exact */
		return sign ? -f : f;
	}
	memcpy(&f, &u, sizeof(f));
	return f;
}

float kv_ref_quantize_group(int8_t *q, const float *x, int n)
{
	float amax = 0.0f, s;
	int i;

	for (i = 0; i < n; i++)
		amax = fmaxf(amax, fabsf(x[i]));
	s = amax / 127.0f;
	for (i = 0; i < n; i++) {
		float r = s > 0.0f ? rintf(x[i] / s) : 0.0f;

		q[i] = (int8_t)(r > 127.0f ? 127.0f : r < -127.0f ? -127.0f : r);
	}
	return s;
}

void kv_ref_kv_append(float *arena, const struct kv_paged_shape *sh, const int32_t *block_table,
		      int pos, const float *k, const float *v)
{
	size_t bf = kv_ref_block_floats(sh), bytes = (size_t)sh->head_dim * sizeof(float);
	float *blk = arena + (size_t)kv_ref_block_of(sh, block_table, pos) * bf;
	int t = pos % sh->block_tokens, h;

	for (h = 0; h < sh->kv_heads; h++) {
		memcpy(blk + in_block(sh, 0, h, t), k + (size_t)h * sh->head_dim, bytes);
		memcpy(blk + in_block(sh, 1, h, t), v + (size_t)h * sh->head_dim, bytes);
	}
}

void kv_ref_kv_append_f16(uint16_t *arena, const struct kv_paged_shape *sh,
			  const int32_t *block_table, int pos, const float *k, const float *v)
{
	uint16_t *blk = arena + (size_t)kv_ref_block_of(sh, block_table, pos) * kv_ref_block_floats(sh);
	int t = pos % sh->block_tokens, h, d;

	for (h = 0; h < sh->kv_heads; h++)
		for (d = 0; d < sh->head_dim; d++) {
			size_t src = (size_t)h * sh->head_dim + d;

			blk[in_block(sh, 0, h, t) + d] = kv_ref_f32_to_f16(k[src]);
			blk[in_block(sh, 1, h, t) + d] = kv_ref_f32_to_f16(v[src]);
		}
}

/* The I8 block of token pos: its data bytes and its scales. */
static void i8_block(void *arena, const struct kv_paged_shape *sh, const int32_t *table, int pos,
		     int8_t **data, float **scales)
{
	size_t bytes = kv_ref_block_bytes(sh, KV_KV_I8);

	*data = (int8_t *)arena + (size_t)kv_ref_block_of(sh, table, pos) * bytes;
	*scales = (float *)(void *)(*data + kv_ref_block_floats(sh));
}

void kv_ref_kv_append_i8(void *arena, const struct kv_paged_shape *sh, const int32_t *block_table,
			 int pos, const float *k, const float *v)
{
	int t = pos % sh->block_tokens, groups = sh->head_dim / KV_GROUP, h, g, kv;
	int8_t *data;
	float *scales;

	assert(sh->head_dim % KV_GROUP == 0);
	i8_block(arena, sh, block_table, pos, &data, &scales);
	for (kv = 0; kv < 2; kv++)
		for (h = 0; h < sh->kv_heads; h++)
			for (g = 0; g < groups; g++) {
				size_t e = in_block(sh, kv, h, t) + (size_t)g * KV_GROUP;
				const float *x = (kv ? v : k) + (size_t)h * sh->head_dim +
						 (size_t)g * KV_GROUP;

				scales[e / KV_GROUP] = kv_ref_quantize_group(data + e, x, KV_GROUP);
			}
}

/* Reads K (kv = 0) or V (kv = 1) of KV head h, token i, widened to float. */
static void read_row(float *dst, const void *arena, enum kv_kv_type type,
		     const struct kv_paged_shape *sh, const int32_t *table, int i, int kv, int h)
{
	int64_t b = kv_ref_block_of(sh, table, i);
	size_t e = in_block(sh, kv, h, i % sh->block_tokens), bf = kv_ref_block_floats(sh);
	int d;

	if (type == KV_KV_F32) {
		memcpy(dst, (const float *)arena + (size_t)b * bf + e,
		       (size_t)sh->head_dim * sizeof(float));
	} else if (type == KV_KV_F16) {
		const uint16_t *src = (const uint16_t *)arena + (size_t)b * bf + e;

		for (d = 0; d < sh->head_dim; d++)
			dst[d] = kv_ref_f16_to_f32(src[d]);
	} else {
		const int8_t *data = (const int8_t *)arena + (size_t)b * kv_ref_block_bytes(sh, type);
		const float *scales = (const float *)(const void *)(data + bf);

		for (d = 0; d < sh->head_dim; d++)
			dst[d] = (float)data[e + d] * scales[(e + d) / KV_GROUP];
	}
}

/* One query head against the context: the online softmax, out = sum p_i V_i. */
static void decode_head(float *out, const float *q, const void *arena, enum kv_kv_type type,
			const struct kv_paged_shape *sh, const int32_t *block_table, int ctx_len,
			int kvh, float scale, float *k, float *v)
{
	float m = -INFINITY, l = 0.0f;
	int i, d;

	for (d = 0; d < sh->head_dim; d++)
		out[d] = 0.0f;
	for (i = 0; i < ctx_len; i++) {
		float s = 0.0f, m_new, corr, p;

		read_row(k, arena, type, sh, block_table, i, 0, kvh);
		read_row(v, arena, type, sh, block_table, i, 1, kvh);
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

void kv_ref_paged_decode_kv(float *out, const float *q, const void *arena, enum kv_kv_type t,
			    const struct kv_paged_shape *sh, const int32_t *block_table, int ctx_len,
			    float scale)
{
	int group = sh->heads / sh->kv_heads, h;
	float *k = kv_xmalloc(2 * (size_t)sh->head_dim * sizeof(float));

	for (h = 0; h < sh->heads; h++)
		decode_head(out + (size_t)h * sh->head_dim, q + (size_t)h * sh->head_dim, arena, t,
			    sh, block_table, ctx_len, h / group, scale, k, k + sh->head_dim);
	free(k);
}

void kv_ref_paged_decode(float *out, const float *q, const float *arena,
			 const struct kv_paged_shape *sh, const int32_t *block_table, int ctx_len,
			 float scale)
{
	kv_ref_paged_decode_kv(out, q, arena, KV_KV_F32, sh, block_table, ctx_len, scale);
}

void kv_ref_compact_bytes(void *arena, size_t block_bytes, const int32_t *from,
			  const int32_t *to, int n)
{
	char *base = arena;
	int i;

	for (i = 0; i < n; i++)
		if (from[i] != to[i])
			memmove(base + (size_t)to[i] * block_bytes,
				base + (size_t)from[i] * block_bytes, block_bytes);
}

void kv_ref_compact(float *arena, const struct kv_paged_shape *sh, const int32_t *from,
		    const int32_t *to, int n)
{
	kv_ref_compact_bytes(arena, kv_ref_block_floats(sh) * sizeof(float), from, to, n);
}

/*
 * The set of blocks a wave touches: open addressing over a table of at
 * least 4n slots; a slot belongs to the current wave when its stamp equals
 * the wave's, so starting a wave empties the set in O(1).
 */
struct touched {
	int32_t *key; /* block in the slot */
	int *stamp; /* wave that filled the slot, 0 never */
	size_t mask; /* slots - 1, slots a power of two */
	int wave; /* the current wave's stamp */
};

/* 1 when b is in the set; otherwise inserts it when insert is set, returns 0. */
static int touched_has(struct touched *t, int32_t b, int insert)
{
	size_t i = ((uint32_t)b * 2654435761u) & t->mask;

	for (; t->stamp[i] == t->wave; i = (i + 1) & t->mask)
		if (t->key[i] == b)
			return 1;
	if (insert) {
		t->stamp[i] = t->wave;
		t->key[i] = b;
	}
	return 0;
}

int kv_ref_compact_waves(const int32_t *from, const int32_t *to, int n, int *wave_end)
{
	struct touched t;
	size_t slots = 16;
	int waves = 0, i;

	while (slots < 4 * (size_t)n)
		slots <<= 1;
	t.key = kv_xmalloc(slots * sizeof(*t.key));
	t.stamp = kv_xcalloc(slots, sizeof(*t.stamp));
	t.mask = slots - 1;
	t.wave = 1;
	for (i = 0; i < n; i++) {
		if (from[i] == to[i])
			continue;
		if (touched_has(&t, from[i], 0) || touched_has(&t, to[i], 0)) {
			wave_end[waves++] = i;
			t.wave++;
		}
		touched_has(&t, from[i], 1);
		touched_has(&t, to[i], 1);
	}
	if (n > 0)
		wave_end[waves++] = n;
	free(t.key);
	free(t.stamp);
	return waves;
}
