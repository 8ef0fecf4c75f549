/*
 * metrics.h -- constant-memory latency histograms and run statistics.
 *
 * A kv_hist records non-negative integer values (ns) in log-linear buckets:
 * values below 2^KV_HIST_SUB are exact; above, each power of two is split
 * into 2^KV_HIST_SUB buckets, so a reported quantile is within a relative
 * error of 2^-KV_HIST_SUB (0.2% for 9) of the exact order statistic.  That
 * keeps a run's memory independent of its request count (the design's
 * streaming rule) while quantiles stay far finer than any latency target.
 * Quantiles use the nearest-rank definition and report the bucket's
 * midpoint (exact values below 2^KV_HIST_SUB).
 */
#ifndef KV_METRICS_H
#define KV_METRICS_H

#include "kv_common.h"

#define KV_HIST_SUB 9
#define KV_HIST_BUCKETS ((64 - KV_HIST_SUB + 1) << KV_HIST_SUB)

struct kv_hist {
	uint64_t n; /* values recorded */
	double sum; /* sum of values */
	uint64_t min, max; /* extremes, exact */
	uint32_t *count; /* KV_HIST_BUCKETS counters, allocated by init */
};

void kv_hist_init(struct kv_hist *h);
void kv_hist_release(struct kv_hist *h);
void kv_hist_add(struct kv_hist *h, uint64_t v);

/* Nearest-rank quantile q in [0, 1] (0 when empty). */
uint64_t kv_hist_quantile(const struct kv_hist *h, double q);

/* Mean (0 when empty). */
double kv_hist_mean(const struct kv_hist *h);

/* Jain's fairness index (sum x)^2 / (n * sum x^2) over n values; 1 when n == 0 or all zero. */
double kv_jain(const double *x, size_t n);

#endif /* KV_METRICS_H */
