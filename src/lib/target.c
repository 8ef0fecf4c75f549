/* target.c -- target conditions, confidence intervals, Pareto front; see target.h. */
#include "target.h"

#include <ctype.h>
#include <gsl/gsl_cdf.h>
#include <gsl/gsl_errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const cmp_names[] = { "<=", "<", ">=", ">" };

const char *kv_cmp_name(enum kv_cmp op)
{
	return cmp_names[op];
}

static const char *skip_space(const char *p)
{
	while (*p == ' ' || *p == '\t')
		p++;
	return p;
}

/* 1 when name is in metrics[] (or metrics is NULL). */
static int known(const char *const *metrics, const char *name)
{
	size_t i;

	for (i = 0; metrics && metrics[i]; i++)
		if (!strcmp(metrics[i], name))
			return 1;
	return !metrics;
}

/* Parses one "METRIC OP NUMBER" at *pp into c; advances *pp past it.  0 or -1 with err set. */
static int parse_one(const char **pp, const char *const *metrics, struct kv_cond *c, char *err,
		     size_t errlen)
{
	const char *p = skip_space(*pp), *m = p;
	char *end;
	size_t n;

	while (isalnum((unsigned char)*p) || *p == '_' || *p == '.')
		p++;
	n = (size_t)(p - m);
	if (!n || n >= sizeof(c->metric)) {
		snprintf(err, errlen, "bad condition at '%s': expected a summary.csv column name",
			 *m ? m : "(end)");
		return -1;
	}
	memcpy(c->metric, m, n);
	c->metric[n] = 0;
	if (!known(metrics, c->metric)) {
		snprintf(err, errlen, "unknown metric '%s' in the target",
			 c->metric);
		return -1;
	}
	p = skip_space(p);
	if (p[0] == '<' || p[0] == '>') {
		c->op = p[0] == '<' ? (p[1] == '=' ? KV_CMP_LE : KV_CMP_LT) :
				      (p[1] == '=' ? KV_CMP_GE : KV_CMP_GT);
		p += p[1] == '=' ? 2 : 1;
	} else {
		snprintf(err, errlen, "bad condition at '%s': expected <=, <, >= or > after '%s'",
			 *p ? p : "(end)", c->metric);
		return -1;
	}
	p = skip_space(p);
	c->x = strtod(p, &end);
	if (end == p || !isfinite(c->x) || (*end && *end != ' ' && *end != '\t')) {
		snprintf(err, errlen, "bad condition at '%s': expected a number after '%s %s'",
			 *p ? p : "(end)", c->metric, kv_cmp_name(c->op));
		return -1;
	}
	*pp = skip_space(end);
	return 0;
}

int kv_cond_parse(const char *text, const char *const *metrics, struct kv_cond *c, size_t max,
		  char *err, size_t errlen)
{
	const char *p = text;
	size_t n = 0;

	for (;;) {
		if (n == max) {
			snprintf(err, errlen, "more than %zu conditions", max);
			return -1;
		}
		if (parse_one(&p, metrics, &c[n], err, errlen))
			return -1;
		n++;
		if (!*p)
			return (int)n;
		if (strncmp(p, "and", 3) || (p[3] && p[3] != ' ' && p[3] != '\t')) {
			snprintf(err, errlen, "bad condition at '%s': expected 'and' and another "
				 "condition, or the end (e.g. ttft_p99_s <= 1 and tpot_p99_s <= 0.1)", p);
			return -1;
		}
		p += 3;
	}
}

int kv_cond_holds(const struct kv_cond *c, double v)
{
	switch (c->op) {
	case KV_CMP_LE:
		return v <= c->x;
	case KV_CMP_LT:
		return v < c->x;
	case KV_CMP_GE:
		return v >= c->x;
	default:
		return v > c->x;
	}
}

int kv_ci95(const double *x, size_t n, struct kv_ci *ci)
{
	double s = 0, m2 = 0, half, t;
	size_t i;

	ci->n = n;
	ci->mean = ci->lo = ci->hi = NAN;
	if (!n)
		return -1;
	for (i = 0; i < n; i++)
		s += x[i];
	ci->mean = ci->lo = ci->hi = s / (double)n;
	if (n < 2)
		return 0;
	for (i = 0; i < n; i++)
		m2 += (x[i] - ci->mean) * (x[i] - ci->mean);
	gsl_set_error_handler_off();
	t = gsl_cdf_tdist_Pinv(0.975, (double)(n - 1));
	if (!isfinite(t)) {
		ci->mean = ci->lo = ci->hi = NAN; /* no interval: nothing to judge on */
		return -1;
	}
	half = t * sqrt(m2 / (double)(n - 1)) / sqrt((double)n);
	ci->lo = ci->mean - half;
	ci->hi = ci->mean + half;
	return 0;
}

double kv_cond_judged(const struct kv_cond *c, const struct kv_ci *ci, int use_mean)
{
	if (use_mean)
		return ci->mean;
	return c->op == KV_CMP_LE || c->op == KV_CMP_LT ? ci->hi : ci->lo;
}

const char *kv_verdict_name(enum kv_verdict v)
{
	return v == KV_VERDICT_MEETS ? "meets" : v == KV_VERDICT_FAILS ? "fails" : "cannot judge";
}

enum kv_verdict kv_cond_verdict(const struct kv_cond *c, const struct kv_ci *ci, int use_mean,
				char *why, size_t whylen)
{
	double v = kv_cond_judged(c, ci, use_mean);

	if (ci->n && !isnan(v))
		return kv_cond_holds(c, v) ? KV_VERDICT_MEETS : KV_VERDICT_FAILS;
	if (why && whylen)
		snprintf(why, whylen, "%s: %s", c->metric, !ci->n ? "no finished seed" :
			 isnan(ci->mean) ? "empty in a finished seed (nothing measured)" :
					   "no confidence interval");
	return KV_VERDICT_UNKNOWN;
}

enum kv_verdict kv_conds_verdict(const struct kv_cond *c, const struct kv_ci *ci, size_t n,
				 int use_mean, char *why, size_t whylen)
{
	enum kv_verdict v = KV_VERDICT_MEETS, k;
	size_t i;

	if (why && whylen)
		why[0] = 0;
	for (i = 0; i < n; i++) {
		k = kv_cond_verdict(&c[i], &ci[i], use_mean, v == KV_VERDICT_UNKNOWN ? NULL : why,
				    whylen);
		if (k == KV_VERDICT_FAILS)
			return KV_VERDICT_FAILS;
		if (k == KV_VERDICT_UNKNOWN)
			v = KV_VERDICT_UNKNOWN;
	}
	if (!n && why && whylen)
		snprintf(why, whylen, "no condition");
	return n ? v : KV_VERDICT_UNKNOWN;
}

int kv_metric_higher_better(const char *name)
{
	static const char *const high[] = { "throughput", "_tok_s", "requests_per_s", "goodput",
					    "attainment", "hit_rate", "jain", "completed",
					    "slo_met", "bytes_saved", NULL };
	size_t i;

	for (i = 0; high[i]; i++)
		if (strstr(name, high[i]))
			return 1;
	return 0;
}

/* 1 when point j dominates point i. */
static int dominates(const double *a, const double *b, size_t j, size_t i, int a_high, int b_high)
{
	double da = a_high ? a[j] - a[i] : a[i] - a[j]; /* > 0: j better on a */
	double db = b_high ? b[j] - b[i] : b[i] - b[j];

	return da >= 0 && db >= 0 && (da > 0 || db > 0);
}

size_t kv_pareto(const double *a, const double *b, size_t n, int a_high, int b_high,
		 unsigned char *front)
{
	size_t i, j, k = 0;

	for (i = 0; i < n; i++) {
		front[i] = !isnan(a[i]) && !isnan(b[i]);
		for (j = 0; j < n && front[i]; j++)
			if (j != i && !isnan(a[j]) && !isnan(b[j]) &&
			    dominates(a, b, j, i, a_high, b_high))
				front[i] = 0;
		k += front[i];
	}
	return k;
}
