/* metrics.c -- log-linear histograms and Jain's index; see metrics.h. */
#include "metrics.h"

#include <stdlib.h>
#include <string.h>

void kv_hist_init(struct kv_hist *h)
{
	memset(h, 0, sizeof(*h));
	h->min = UINT64_MAX;
	h->count = kv_xcalloc(KV_HIST_BUCKETS, sizeof(*h->count));
}

void kv_hist_release(struct kv_hist *h)
{
	free(h->count);
	h->count = NULL;
}

/* Bucket of v: exact below 2^SUB, else (exponent, top SUB bits after the leading one). */
static uint32_t bucket_of(uint64_t v)
{
	unsigned e;

	if (v < (1ULL << KV_HIST_SUB))
		return (uint32_t)v;
	e = 63u - (unsigned)__builtin_clzll(v); /* e >= SUB */
	return (uint32_t)(((e - KV_HIST_SUB + 1) << KV_HIST_SUB) |
			  ((v >> (e - KV_HIST_SUB)) & ((1u << KV_HIST_SUB) - 1)));
}

/* Midpoint of a bucket's value range. */
static uint64_t bucket_mid(uint32_t b)
{
	uint32_t hi = b >> KV_HIST_SUB, lo = b & ((1u << KV_HIST_SUB) - 1);
	unsigned shift;
	uint64_t base;

	if (hi == 0)
		return b;
	shift = hi - 1;
	base = ((1ULL << KV_HIST_SUB) | lo) << shift;
	return base + ((1ULL << shift) >> 1);
}

void kv_hist_add(struct kv_hist *h, uint64_t v)
{
	h->count[bucket_of(v)]++;
	h->n++;
	h->sum += (double)v;
	if (v < h->min)
		h->min = v;
	if (v > h->max)
		h->max = v;
}

uint64_t kv_hist_quantile(const struct kv_hist *h, double q)
{
	uint64_t rank, seen = 0, v;
	uint32_t b;

	if (!h->n)
		return 0;
	if (q <= 0)
		return h->min;
	if (q >= 1)
		return h->max;
	rank = (uint64_t)(q * (double)h->n);
	if ((double)rank < q * (double)h->n)
		rank++; /* nearest rank: ceil(q n) */
	if (rank == 0)
		rank = 1;
	for (b = 0; b < KV_HIST_BUCKETS; b++) {
		seen += h->count[b];
		if (seen >= rank)
			break;
	}
	v = bucket_mid(b);
	return v < h->min ? h->min : v > h->max ? h->max : v;
}

double kv_hist_mean(const struct kv_hist *h)
{
	return h->n ? h->sum / (double)h->n : 0.0;
}

double kv_jain(const double *x, size_t n)
{
	double s = 0, s2 = 0;
	size_t i;

	for (i = 0; i < n; i++) {
		s += x[i];
		s2 += x[i] * x[i];
	}
	return (n == 0 || s2 == 0) ? 1.0 : s * s / ((double)n * s2);
}
