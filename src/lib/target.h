/*
 * target.h -- the arithmetic behind a sweep's capacity answer: target
 * conditions, confidence intervals over seeds, and the Pareto front.
 *
 * A target is conditions on summary columns joined by "and"
 * ("ttft_p99_s <= 1 and tpot_p99_s <= 0.1"); kv_cond_parse() reads one.
 * Over several seeds a metric is reported as its mean with a 95%
 * confidence interval from Student's t distribution (mean +- t(0.975,
 * n-1) s / sqrt(n), s the sample standard deviation; quantile from GSL's
 * gsl_cdf_tdist_Pinv), and a condition is judged on the interval's
 * pessimistic end (the upper end for <=, the lower for >=) unless the
 * caller asks for the mean.  A verdict is three-valued (kv_cond_verdict):
 * a condition with no value to judge (no finished seed, an empty column
 * such as a latency percentile of a run that completed nothing, or an
 * interval GSL could not compute) is "cannot judge", never a miss or a
 * pass; several conditions fail when one fails, else cannot be judged when
 * one cannot, else meet.  kv_pareto() marks the points no other point
 * dominates on two metrics, each with its direction (kv_metric_higher_better).
 * Pure functions: no I/O, no allocation.
 */
#ifndef KV_TARGET_H
#define KV_TARGET_H

#include <stddef.h>

enum kv_cmp { KV_CMP_LE, KV_CMP_LT, KV_CMP_GE, KV_CMP_GT };

#define KV_MAX_CONDS 16

/* One condition: metric op x. */
struct kv_cond {
	char metric[64]; /* a summary.csv column */
	enum kv_cmp op; /* comparison */
	double x; /* the bound, in the metric's unit */
};

/*
 * Parses text, "METRIC OP NUMBER [and METRIC OP NUMBER]..." with OP one of
 * <=, <, >=, >, into c[0..max).  metrics: the valid names (NULL-terminated)
 * or NULL for any.  Returns the number of conditions (>= 1), or -1 with a
 * one-line message in err naming the bad part and what was expected.
 */
int kv_cond_parse(const char *text, const char *const *metrics, struct kv_cond *c, size_t max,
		  char *err, size_t errlen);

/* "<=", "<", ">=" or ">". */
const char *kv_cmp_name(enum kv_cmp op);

/* 1 when v satisfies c (NaN never does). */
int kv_cond_holds(const struct kv_cond *c, double v);

/* A mean and its 95% confidence interval over n values. */
struct kv_ci {
	double mean; /* sample mean */
	double lo, hi; /* interval ends; both the mean when n < 2 */
	size_t n; /* values */
};

/*
 * Fills ci from x[0..n); returns 0, or -1 when n == 0 or GSL fails (ci is
 * then NaN).  A NaN in x (an empty value) makes the mean and ends NaN.
 */
int kv_ci95(const double *x, size_t n, struct kv_ci *ci);

/* The end of ci a condition is judged on: the pessimistic one for c, or the mean when use_mean. */
double kv_cond_judged(const struct kv_cond *c, const struct kv_ci *ci, int use_mean);

/* A target's verdict on some evidence. */
enum kv_verdict {
	KV_VERDICT_MEETS, /* every condition holds on its judged end */
	KV_VERDICT_FAILS, /* a condition does not hold on its judged end */
	KV_VERDICT_UNKNOWN /* no value to judge a condition on, and none fails */
};

/* "meets", "fails" or "cannot judge". */
const char *kv_verdict_name(enum kv_verdict v);

/*
 * The verdict of condition c on ci (judged on kv_cond_judged's end):
 * unknown when ci holds no value (n == 0) or that end is NaN, and then why
 * (if not NULL) gets the reason, e.g. "ttft_p99_s: no finished seed".
 */
enum kv_verdict kv_cond_verdict(const struct kv_cond *c, const struct kv_ci *ci, int use_mean,
				char *why, size_t whylen);

/*
 * The verdict of the conditions c[0..n) on ci[0..n): fails when one fails
 * (a definite miss stands whatever the others), else unknown when one is
 * unknown (why: the first such reason), else meets.
 */
enum kv_verdict kv_conds_verdict(const struct kv_cond *c, const struct kv_ci *ci, size_t n,
				 int use_mean, char *why, size_t whylen);

/*
 * 1 when larger is better for summary column name (throughputs, goodput,
 * attainment, hit rate, fairness, completed requests), 0 when smaller is
 * (latencies, GPUs, memory, everything else).
 */
int kv_metric_higher_better(const char *name);

/*
 * Marks in front[i] (1/0) the points (a[i], b[i]) that no other point
 * dominates (at least as good on both metrics and better on one; a_high,
 * b_high: larger is better).  Points with a NaN are never on the front.
 * Returns the number on the front.  O(n^2), for sweep-sized sets.
 */
size_t kv_pareto(const double *a, const double *b, size_t n, int a_high, int b_high,
		 unsigned char *front);

#endif /* KV_TARGET_H */
