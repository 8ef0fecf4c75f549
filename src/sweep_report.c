/*
 * sweep_report.c -- what a finished sweep answers: the capacity target
 * (conditions judged over seeds on the 95% interval's pessimistic end, or
 * the mean), sweep_stats.csv (each metric's mean and 95% interval over the
 * seeds of each combination of axis values) and pareto.csv (the
 * combinations no other beats on two metrics) with its chart.  The
 * arithmetic is in lib/target.c.  A "group" is one combination of axis
 * values: n_seeds consecutive points, since seeds vary fastest.
 */
#include "sweep.h"
#include "lib/chart.h"
#include "lib/metric_doc.h"
#include "lib/output.h"
#include "lib/workload.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Column of name in header point h, or SIZE_MAX. */
static size_t column(const struct point *h, const char *name)
{
	size_t j;

	for (j = 0; h && j < h->n_fields; j++)
		if (!strcmp(h->names[j], name))
			return j;
	return SIZE_MAX;
}

/* Column j of p as a number, NaN when empty or not a number. */
static double value(const struct point *p, const struct point *h, size_t j)
{
	const char *f = kv__sweep_field(p, h, j);
	char *end;
	double x = strtod(f, &end);

	return *f && !*end ? x : NAN;
}

/* Number of groups (combinations of axis values). */
static size_t n_groups(const struct sweep *sw)
{
	return sw->n_pt / sw->n_seeds;
}

/* The group's column-j values of its finished points into x; returns how many, or -1 if a point failed. */
static long group_values(const struct sweep *sw, size_t g, size_t j, double *x)
{
	const struct point *h = kv__sweep_header_point(sw);
	size_t k, n = 0;

	for (k = 0; k < sw->n_seeds; k++) {
		const struct point *p = &sw->pt[g * sw->n_seeds + k];

		if (p->state == ST_TODO)
			continue; /* another shard's */
		if (p->state != ST_OK && p->state != ST_SKIP)
			return -1;
		x[n++] = value(p, h, j);
	}
	return (long)n;
}

/* --- the target ------------------------------------------------------------ */

/* How group g fares against the target. */
struct verdict {
	enum kv_verdict verdict; /* meets, fails, or cannot be judged (why says why) */
	int meets; /* verdict == KV_VERDICT_MEETS */
	char why[160]; /* when it cannot be judged: "a seed failed", "M: no finished seed", ... */
	size_t seeds, seeds_ok; /* finished seeds, and those meeting every condition alone */
	struct kv_ci ci[KV_MAX_CONDS]; /* per condition */
};

/*
 * Judges group g: meets or fails on the evidence, or cannot be judged (a
 * failed seed, no finished seed, an empty value) with the reason in v->why.
 */
static void judge(const struct sweep *sw, size_t g, const size_t *col, struct verdict *v)
{
	double *x = kv_xcalloc(sw->n_cond * sw->n_seeds, sizeof(*x));
	size_t k, s, ns = sw->n_seeds;
	long n = 0;

	memset(v, 0, sizeof(*v));
	v->verdict = KV_VERDICT_UNKNOWN;
	for (k = 0; k < sw->n_cond; k++) {
		n = group_values(sw, g, col[k], x + k * ns);
		if (n <= 0) {
			snprintf(v->why, sizeof(v->why), "%s", n < 0 ? "a seed failed" : "no finished seed");
			free(x);
			return;
		}
		kv_ci95(x + k * ns, (size_t)n, &v->ci[k]);
	}
	v->seeds = (size_t)n;
	v->verdict = kv_conds_verdict(sw->cond, v->ci, sw->n_cond, sw->t_mean, v->why,
				      sizeof(v->why));
	v->meets = v->verdict == KV_VERDICT_MEETS;
	for (s = 0; s < (size_t)n; s++) {
		int ok = 1;

		for (k = 0; k < sw->n_cond; k++)
			ok &= kv_cond_holds(&sw->cond[k], x[k * ns + s]);
		v->seeds_ok += (size_t)ok;
	}
	free(x);
}

/* "A <= 1 and B >= 0.99" */
static void put_conds(struct sbuf *b, const struct sweep *sw)
{
	size_t k;

	for (k = 0; k < sw->n_cond; k++)
		kv__sweep_sb_printf(b, "%s%s %s %g", k ? " and " : "", sw->cond[k].metric,
				    kv_cmp_name(sw->cond[k].op), sw->cond[k].x);
}

/* "(k of n seeds; A 0.31 [0.29, 0.33], ...)": the counts and the figures judged. */
static void put_figures(struct sbuf *b, const struct sweep *sw, const struct verdict *v)
{
	size_t k;

	kv__sweep_sb_printf(b, " (%zu of %zu seed%s", v->seeds_ok, v->seeds, v->seeds == 1 ? "" : "s");
	for (k = 0; k < sw->n_cond; k++) {
		kv__sweep_sb_printf(b, "%s %s %.4g", k ? "," : ";", sw->cond[k].metric, v->ci[k].mean);
		if (v->seeds > 1)
			kv__sweep_sb_printf(b, " [%.4g, %.4g]", v->ci[k].lo, v->ci[k].hi);
	}
	kv__sweep_sb_puts(b, ")");
}

/*
 * The target axis's value v as a number (its list position when not a
 * number), negated when the target maximizes it, so smaller is always better.
 */
static double axis_x(const struct sweep *sw, const struct axis *a, size_t v)
{
	char *end;
	double x = strtod(a->vals[v], &end);

	if (*end || end == a->vals[v])
		x = (double)v;
	return sw->t_max ? -x : x;
}

/* 1 when groups g and f have the same values on every axis outside dimension dim. */
static int same_others(const struct sweep *sw, size_t g, size_t f, size_t dim)
{
	const size_t *a = sw->pt[g * sw->n_seeds].val, *b = sw->pt[f * sw->n_seeds].val;
	size_t i;

	for (i = 0; i < sw->n_axes; i++)
		if (sw->axis[i].dim != dim && a[i] != b[i])
			return 0;
	return 1;
}

/* "k = v, k = v" of the axes outside dimension dim for group g. */
static void put_others(struct sbuf *b, const struct sweep *sw, size_t g, size_t dim)
{
	const size_t *val = sw->pt[g * sw->n_seeds].val;
	size_t i, n = 0;

	for (i = 0; i < sw->n_axes; i++)
		if (sw->axis[i].dim != dim)
			kv__sweep_sb_printf(b, "%s%s = %s", n++ ? ", " : "", sw->axis[i].key,
					    sw->axis[i].vals[val[i]]);
}

/* 1 when group g has a finished or failed point of this shard. */
static int group_ran(const struct sweep *sw, size_t g)
{
	size_t k;

	for (k = 0; k < sw->n_seeds; k++)
		if (sw->pt[g * sw->n_seeds + k].state != ST_TODO)
			return 1;
	return 0;
}

/*
 * Per combination of the other axes: the best value of the target
 * axis meeting the target, one indented line each (only when there are
 * other axes).  Marks every group of the combination done.
 */
static void report_others(const struct sweep *sw, size_t ax, const size_t *col, unsigned char *done)
{
	size_t g, f, best = SIZE_MAX, dim = sw->axis[ax].dim, n_unknown, n_fail;
	struct verdict v, bv;
	struct sbuf b = { 0 }, unknown = { 0 };

	for (g = 0; g < n_groups(sw); g++) {
		if (done[g] || !group_ran(sw, g))
			continue;
		best = SIZE_MAX;
		n_unknown = n_fail = 0;
		for (f = g; f < n_groups(sw); f++) {
			if (done[f] || !same_others(sw, g, f, dim))
				continue;
			done[f] = 1;
			judge(sw, f, col, &v);
			n_fail += v.verdict == KV_VERDICT_FAILS;
			if (v.verdict == KV_VERDICT_UNKNOWN) {
				kv__sweep_sb_puts(&unknown, "  cannot judge at ");
				put_others(&unknown, sw, f, dim);
				kv__sweep_sb_printf(&unknown, ", %s = %s (%s)\n", sw->t_axis,
						    sw->axis[ax].vals[sw->pt[f * sw->n_seeds].val[ax]], v.why);
				n_unknown++;
			}
			if (v.meets && (best == SIZE_MAX ||
					axis_x(sw, &sw->axis[ax], sw->pt[f * sw->n_seeds].val[ax]) <
						axis_x(sw, &sw->axis[ax], sw->pt[best * sw->n_seeds].val[ax]))) {
				best = f;
				bv = v;
			}
		}
		kv__sweep_sb_puts(&b, "  at ");
		put_others(&b, sw, g, dim);
		if (best == SIZE_MAX) {
			kv__sweep_sb_printf(&b, ": no value of %s meets the target", sw->t_axis);
			if (n_unknown)
				kv__sweep_sb_printf(&b, " (%zu miss%s, %zu cannot be judged)", n_fail,
						    n_fail == 1 ? "" : "es", n_unknown);
		} else {
			kv__sweep_sb_printf(&b, ": %s = %s", sw->t_axis,
					    sw->axis[ax].vals[sw->pt[best * sw->n_seeds].val[ax]]);
			put_figures(&b, sw, &bv);
		}
		kv__sweep_sb_printf(&b, "\n%s", unknown.s ? unknown.s : "");
		if (unknown.s)
			unknown.s[unknown.len = 0] = 0;
	}
	free(unknown.s);
	if (b.s)
		fputs(b.s, stdout);
	free(b.s);
}

/*
 * Whether every group with value v of axis ax (of this shard) meets the
 * target: fails when one fails, else cannot be judged when one cannot
 * (all->why: its axes and reason), else meets (none of this shard: fails);
 * *all sums their seeds and the seeds meeting alone.
 */
static enum kv_verdict value_meets(const struct sweep *sw, size_t ax, size_t val,
				   const size_t *col, struct verdict *all)
{
	struct verdict v;
	struct sbuf why = { 0 };
	size_t g, n = 0;

	memset(all, 0, sizeof(*all));
	for (g = 0; g < n_groups(sw); g++) {
		if (sw->pt[g * sw->n_seeds].val[ax] != val || !group_ran(sw, g))
			continue;
		judge(sw, g, col, &v);
		if (v.verdict == KV_VERDICT_FAILS) {
			free(why.s);
			return KV_VERDICT_FAILS;
		}
		if (v.verdict == KV_VERDICT_UNKNOWN && !why.s) {
			put_others(&why, sw, g, sw->axis[ax].dim);
			kv__sweep_sb_printf(&why, "%s%s", why.s ? ": " : "", v.why);
		}
		if (!n++) {
			*all = v; /* its figures when it is the only group */
		} else {
			all->seeds += v.seeds;
			all->seeds_ok += v.seeds_ok;
			all->ci[0].n = 0; /* several groups: counts only */
		}
	}
	if (why.s) {
		snprintf(all->why, sizeof(all->why), "%s", why.s);
		free(why.s);
		return KV_VERDICT_UNKNOWN;
	}
	return n ? KV_VERDICT_MEETS : KV_VERDICT_FAILS;
}

/* The mean of column j over group g's finished seeds; NAN when one failed or none finished. */
static double group_mean(const struct sweep *sw, size_t g, size_t j)
{
	double *x = kv_xcalloc(sw->n_seeds, sizeof(*x)), m = 0;
	long n = group_values(sw, g, j, x), k;

	for (k = 0; k < n; k++)
		m += x[k];
	m = n > 0 ? m / (double)n : NAN;
	free(x);
	return m;
}

/*
 * The best group for a metric target (sw->t_metric): among the
 * combinations of axis values meeting every condition, the one with the
 * least mean of the metric (the greatest when maximized; the first on
 * ties); SIZE_MAX when none meets.  *metric is its column.
 */
static size_t best_by_metric(const struct sweep *sw, const size_t *col, size_t *metric,
			     struct verdict *bv, size_t *n_unknown, size_t *n_empty)
{
	const struct point *h = kv__sweep_header_point(sw);
	size_t g, best = SIZE_MAX;
	double bx = 0, x;
	struct verdict v;

	*n_unknown = *n_empty = 0;
	*metric = column(h, sw->t_axis);
	for (g = 0; *metric != SIZE_MAX && g < n_groups(sw); g++) {
		if (!group_ran(sw, g))
			continue;
		judge(sw, g, col, &v);
		*n_unknown += v.verdict == KV_VERDICT_UNKNOWN;
		x = group_mean(sw, g, *metric);
		*n_empty += v.meets && isnan(x); /* meets, but the metric has no value (no price) */
		if (!v.meets || isnan(x))
			continue;
		x = sw->t_max ? -x : x;
		if (best == SIZE_MAX || x < bx) {
			best = g;
			bx = x;
			*bv = v;
		}
	}
	return best;
}

/* "k = v, k = v" of every axis for group g. */
static void put_axes_of(struct sbuf *b, const struct sweep *sw, size_t g)
{
	size_t i;

	for (i = 0; i < sw->n_axes; i++)
		kv__sweep_sb_printf(b, "%s%s = %s", i ? ", " : "", sw->axis[i].key,
				    sw->axis[i].vals[sw->pt[g * sw->n_seeds].val[i]]);
}

/*
 * The answer to a metric target: "cheapest: cost_usd 12.3 at AXIS = v,
 * ... meets CONDS (figures)", or that no combination meets it.
 */
static void report_metric(const struct sweep *sw, const size_t *col)
{
	size_t best, metric, n_unknown, n_empty;
	struct verdict bv;
	struct sbuf b = { 0 };

	best = best_by_metric(sw, col, &metric, &bv, &n_unknown, &n_empty);
	if (metric == SIZE_MAX) {
		printf("%s: no result: '%s' is not a summary.csv column of a finished point\n",
		       sw->t_max ? "best" : "cheapest", sw->t_axis);
		return;
	}
	if (best == SIZE_MAX) {
		kv__sweep_sb_printf(&b, "%s: no combination meets ", sw->t_max ? "best" : "cheapest");
		put_conds(&b, sw);
		if (n_unknown)
			kv__sweep_sb_printf(&b, " (%zu cannot be judged)", n_unknown);
	} else {
		kv__sweep_sb_printf(&b, "%s: %s %.6g at ", sw->t_max ? "best" : "cheapest", sw->t_axis,
				    group_mean(sw, best, metric));
		put_axes_of(&b, sw, best);
		kv__sweep_sb_puts(&b, " meets ");
		put_conds(&b, sw);
		put_figures(&b, sw, &bv);
	}
	if (n_empty) /* left out: a cost needs every group's device to have a list price */
		kv__sweep_sb_printf(&b, "\n  %zu combination%s meeting it left out: %s has no value "
				    "there%s", n_empty, n_empty == 1 ? "" : "s", sw->t_axis,
				    strncmp(sw->t_axis, "cost_usd", 8) ? "" :
				    " (a group's device has no list price: `kvsim list devices` says "
				    "which; set cluster.groups[i].cost_per_gpu_hour)");
	printf("%s\n", b.s);
	free(b.s);
}

void kv__sweep_report_target(const struct sweep *sw)
{
	const struct point *h = kv__sweep_header_point(sw);
	size_t ax, v, k, col[KV_MAX_CONDS], best = SIZE_MAX, others = 0, n_fail = 0, n_unknown = 0;
	struct verdict all, bv;
	struct sbuf b = { 0 }, unknown = { 0 };
	enum kv_verdict vv;
	unsigned char *done;

	for (k = 0; k < sw->n_cond; k++) {
		col[k] = column(h, sw->cond[k].metric);
		if (col[k] == SIZE_MAX) {
			printf("capacity: no result: metric '%s' is not a summary.csv column of a finished "
			       "point%s\n", sw->cond[k].metric, h ? " (SLO columns need slo: in the base)" : "");
			return;
		}
	}
	if (sw->t_metric) {
		report_metric(sw, col);
		return;
	}
	for (ax = 0; strcmp(sw->axis[ax].key, sw->t_axis); ax++)
		;
	for (v = 0; v < sw->axis[ax].n_vals; v++) {
		vv = value_meets(sw, ax, v, col, &all);
		n_fail += vv == KV_VERDICT_FAILS;
		if (vv == KV_VERDICT_UNKNOWN) {
			kv__sweep_sb_printf(&unknown, "\n  cannot judge at %s = %s (%s)", sw->t_axis,
					    sw->axis[ax].vals[v], all.why);
			n_unknown++;
		}
		if (vv == KV_VERDICT_MEETS &&
		    (best == SIZE_MAX || axis_x(sw, &sw->axis[ax], v) < axis_x(sw, &sw->axis[ax], best))) {
			best = v;
			bv = all;
		}
	}
	for (k = 0; k < sw->n_axes; k++)
		others += sw->axis[k].dim != sw->axis[ax].dim;
	if (best == SIZE_MAX) {
		kv__sweep_sb_printf(&b, "capacity: no value of %s meets ", sw->t_axis);
		put_conds(&b, sw);
		if (n_unknown)
			kv__sweep_sb_printf(&b, " (%zu miss%s, %zu cannot be judged)", n_fail,
					    n_fail == 1 ? "" : "es", n_unknown);
	} else {
		kv__sweep_sb_printf(&b, "capacity: %s = %s meets ", sw->t_axis, sw->axis[ax].vals[best]);
		put_conds(&b, sw);
		if (others)
			kv__sweep_sb_puts(&b, " at every value of the other axes");
		if (bv.ci[0].n)
			put_figures(&b, sw, &bv);
		else
			kv__sweep_sb_printf(&b, " (%zu of %zu seeds)", bv.seeds_ok, bv.seeds);
	}
	if (sw->n_seeds > 1)
		kv__sweep_sb_printf(&b, "\n  (figures: mean [95%% confidence interval] over seeds; the "
				    "target is judged on %s)", sw->t_mean ? "the mean" :
				    "the interval's pessimistic end");
	printf("%s%s\n", b.s, unknown.s ? unknown.s : "");
	free(b.s);
	free(unknown.s);
	if (!others)
		return;
	done = kv_xcalloc(n_groups(sw), 1);
	report_others(sw, ax, col, done);
	free(done);
}

static int write_file(const char *dir, const char *name, const char *text);

/* --- target.csv (the sweep charts' target lines and chosen points) ------------- */

/* target.csv's header and condition rows into b. */
static void target_head(struct sbuf *b, const struct sweep *sw)
{
	size_t i, k;

	kv__sweep_sb_puts(b, "kind,metric,op,limit");
	for (i = 0; i < sw->n_axes; i++) {
		kv__sweep_sb_puts(b, ",");
		kv__sweep_sb_csv(b, sw->axis[i].key);
	}
	kv__sweep_sb_puts(b, "\n");
	for (k = 0; k < sw->n_cond; k++) {
		kv__sweep_sb_printf(b, "condition,%s,%s,%.15g", sw->cond[k].metric,
				    kv_cmp_name(sw->cond[k].op), sw->cond[k].x);
		for (i = 0; i < sw->n_axes; i++)
			kv__sweep_sb_puts(b, ",");
		kv__sweep_sb_puts(b, "\n");
	}
}

/* target.csv of a metric target: the conditions and the one chosen combination (if any). */
static int write_target_metric(const struct sweep *sw, const char *dir, const size_t *col)
{
	size_t best, metric, n_unknown, n_empty, i;
	struct verdict bv;
	struct sbuf b = { 0 };
	int rc;

	target_head(&b, sw);
	best = best_by_metric(sw, col, &metric, &bv, &n_unknown, &n_empty);
	if (best != SIZE_MAX) {
		kv__sweep_sb_puts(&b, "chosen,");
		kv__sweep_sb_csv(&b, sw->t_axis);
		kv__sweep_sb_printf(&b, ",min,%.15g", group_mean(sw, best, metric));
		for (i = 0; i < sw->n_axes; i++) {
			kv__sweep_sb_puts(&b, ",");
			kv__sweep_sb_csv(&b, sw->axis[i].vals[sw->pt[best * sw->n_seeds].val[i]]);
		}
		kv__sweep_sb_puts(&b, "\n");
	}
	rc = write_file(dir, "target.csv", b.s);
	free(b.s);
	return rc;
}

int kv__sweep_write_target(const struct sweep *sw, const char *dir)
{
	const struct point *h = kv__sweep_header_point(sw);
	size_t ax, k, i, g, f, best, col[KV_MAX_CONDS], n = n_groups(sw);
	unsigned char *done;
	struct verdict v;
	struct sbuf b = { 0 };
	int rc;

	for (k = 0; k < sw->n_cond; k++)
		if ((col[k] = column(h, sw->cond[k].metric)) == SIZE_MAX)
			return 0; /* reported by kv__sweep_report_target */
	if (sw->t_metric)
		return write_target_metric(sw, dir, col);
	for (ax = 0; strcmp(sw->axis[ax].key, sw->t_axis); ax++)
		;
	target_head(&b, sw);
	done = kv_xcalloc(n ? n : 1, 1);
	for (g = 0; g < n; g++) {
		if (done[g] || !group_ran(sw, g))
			continue;
		best = SIZE_MAX;
		for (f = g; f < n; f++) {
			if (done[f] || !same_others(sw, g, f, sw->axis[ax].dim))
				continue;
			done[f] = 1;
			judge(sw, f, col, &v);
			if (v.meets && (best == SIZE_MAX ||
					axis_x(sw, &sw->axis[ax], sw->pt[f * sw->n_seeds].val[ax]) <
						axis_x(sw, &sw->axis[ax], sw->pt[best * sw->n_seeds].val[ax])))
				best = f;
		}
		if (best == SIZE_MAX)
			continue;
		kv__sweep_sb_puts(&b, "chosen,");
		kv__sweep_sb_csv(&b, sw->t_axis);
		kv__sweep_sb_puts(&b, ",,");
		for (i = 0; i < sw->n_axes; i++) {
			kv__sweep_sb_puts(&b, ",");
			kv__sweep_sb_csv(&b, sw->axis[i].vals[sw->pt[best * sw->n_seeds].val[i]]);
		}
		kv__sweep_sb_puts(&b, "\n");
	}
	free(done);
	rc = write_file(dir, "target.csv", b.s);
	free(b.s);
	return rc;
}

/* --- sweep_stats.csv ----------------------------------------------------------- */

/* The axis values of group g as CSV fields, each followed by a comma. */
static void put_axes(struct sbuf *b, const struct sweep *sw, size_t g)
{
	size_t i;

	for (i = 0; i < sw->n_axes; i++) {
		kv__sweep_sb_csv(b, sw->axis[i].vals[sw->pt[g * sw->n_seeds].val[i]]);
		kv__sweep_sb_puts(b, ",");
	}
}

static void put_axis_header(struct sbuf *b, const struct sweep *sw)
{
	size_t i;

	for (i = 0; i < sw->n_axes; i++) {
		kv__sweep_sb_csv(b, sw->axis[i].key);
		kv__sweep_sb_puts(b, ",");
	}
}

/* Mean and 95% interval of column j over group g's finished seeds; -1 when none or one failed. */
static int group_ci(const struct sweep *sw, size_t g, size_t j, struct kv_ci *ci)
{
	double *x = kv_xcalloc(sw->n_seeds, sizeof(*x));
	long n = group_values(sw, g, j, x), i, m = 0;
	int rc = -1;

	for (i = 0; i < n; i++)
		if (!isnan(x[i]))
			x[m++] = x[i];
	if (m)
		rc = kv_ci95(x, (size_t)m, ci);
	free(x);
	return rc;
}

/* Finished seeds of group g (counted on column 0), -1 when one failed. */
static long group_seeds(const struct sweep *sw, size_t g)
{
	double *x = kv_xcalloc(sw->n_seeds, sizeof(*x));
	long n = group_values(sw, g, 0, x);

	free(x);
	return n;
}

/* Writes text to DIR/name atomically; 0 or -1 (message printed). */
static int write_file(const char *dir, const char *name, const char *text)
{
	char path[PT_PATH];
	struct kv_atomic a;
	struct kv_diag d = { 0 };

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	if (kv_atomic_open(&a, path, &d)) {
		kv_diag_print(&d, stderr);
		return -1;
	}
	fputs(text, a.f);
	if (kv_atomic_commit(&a, &d)) {
		kv_diag_print(&d, stderr);
		return -1;
	}
	return 0;
}

int kv__sweep_write_labels(const struct sweep *sw, const char *dir)
{
	struct sbuf b = { 0 };
	size_t i;
	int rc;

	kv__sweep_sb_puts(&b, "axis,label\n");
	for (i = 0; i < sw->n_axes; i++) {
		kv__sweep_sb_csv(&b, sw->axis[i].key);
		kv__sweep_sb_puts(&b, ",");
		kv__sweep_sb_csv(&b, sw->axis[i].label ? sw->axis[i].label
						       : kv_sweep_axis_label(sw->axis[i].key));
		kv__sweep_sb_puts(&b, "\n");
	}
	rc = write_file(dir, "axis_labels.csv", b.s);
	free(b.s);
	return rc;
}

int kv__sweep_write_stats(const struct sweep *sw, const char *dir)
{
	const struct point *h = kv__sweep_header_point(sw);
	struct sbuf b = { 0 };
	struct kv_ci ci;
	size_t g, j;
	int rc;

	if (!h || sw->n_seeds < 2)
		return 0;
	put_axis_header(&b, sw);
	kv__sweep_sb_puts(&b, "seeds");
	for (j = 0; j < h->n_fields; j++)
		if (strcmp(h->names[j], "workload")) /* the name: not a figure */
			kv__sweep_sb_printf(&b, ",%s_mean,%s_ci95_lo,%s_ci95_hi", h->names[j],
					    h->names[j], h->names[j]);
	kv__sweep_sb_puts(&b, "\n");
	for (g = 0; g < n_groups(sw); g++) {
		long n = group_seeds(sw, g);

		if (n <= 0)
			continue; /* not run here, or a seed failed */
		put_axes(&b, sw, g);
		kv__sweep_sb_printf(&b, "%ld", n);
		for (j = 0; j < h->n_fields; j++) {
			if (!strcmp(h->names[j], "workload"))
				continue;
			if (group_ci(sw, g, j, &ci))
				kv__sweep_sb_puts(&b, ",,,");
			else
				kv__sweep_sb_printf(&b, ",%.6g,%.6g,%.6g", ci.mean, ci.lo, ci.hi);
		}
		kv__sweep_sb_puts(&b, "\n");
	}
	rc = write_file(dir, "sweep_stats.csv", b.s);
	free(b.s);
	return rc;
}

/* --- pareto.csv ------------------------------------------------------------------ */

/*
 * The dimensions a Pareto front runs over (in[dim] = 1): the target axis's
 * with a target; otherwise every dimension without a workload.* axis.
 * Groups that differ on another dimension (the load) are on different fronts.
 */
static void front_dims(const struct sweep *sw, unsigned char *in)
{
	size_t i;

	for (i = 0; i < sw->n_axes; i++)
		in[sw->axis[i].dim] = !sw->has_target;
	for (i = 0; i < sw->n_axes; i++) {
		if (sw->has_target && !strcmp(sw->axis[i].key, sw->t_axis))
			in[sw->axis[i].dim] = 1; /* with the axes zipped with it */
		if (!sw->has_target && !strncmp(sw->axis[i].key, "workload.", 9))
			in[sw->axis[i].dim] = 0;
	}
}

/* 1 when groups g and f have the same values on every axis outside the front's dimensions. */
static int same_front(const struct sweep *sw, size_t g, size_t f, const unsigned char *in)
{
	const size_t *a = sw->pt[g * sw->n_seeds].val, *b = sw->pt[f * sw->n_seeds].val;
	size_t i;

	for (i = 0; i < sw->n_axes; i++)
		if (!in[sw->axis[i].dim] && a[i] != b[i])
			return 0;
	return 1;
}

/*
 * "k = v, k = v" of group g's axes outside the front's dimensions ("all"
 * when none); words 1: each axis by its chart label (the chart's legend).
 */
static void put_front_name(struct sbuf *b, const struct sweep *sw, size_t g, const unsigned char *in,
			   int words)
{
	const size_t *val = sw->pt[g * sw->n_seeds].val;
	size_t i, n = 0;

	for (i = 0; i < sw->n_axes; i++)
		if (!in[sw->axis[i].dim])
			kv__sweep_sb_printf(b, "%s%s = %s", n++ ? ", " : "",
					    !words ? sw->axis[i].key : sw->axis[i].label ? sw->axis[i].label
					    : kv_sweep_axis_label(sw->axis[i].key), sw->axis[i].vals[val[i]]);
	if (!n)
		kv__sweep_sb_puts(b, "all");
}

/*
 * Renders pareto.png with plots/pareto.gp: every combination from
 * pareto_all.csv, and one line per front from a data file of blocks (x,y
 * sorted by x, two blank lines apart) whose titles pass as a gnuplot array;
 * a logarithmic y axis when b spans over two decades (all positive).
 */
/* The setups of the sweep's finished points, merged (kv_chart_merge_setups) into buf. */
static void points_setup(const struct sweep *sw, const char *dir, char *buf, size_t len)
{
	char **lines = kv_xcalloc(sw->n_pt ? sw->n_pt : 1, sizeof(*lines)), line[512];
	size_t i, n = 0;

	for (i = 0; i < sw->n_pt; i++) {
		char *path = kv_xasprintf("%s/points/%s/manifest.txt", dir, sw->pt[i].key);
		FILE *f = fopen(path, "r"); /* points that failed have none */

		while (f && fgets(line, sizeof(line), f))
			if (!strncmp(line, "setup ", 6)) {
				line[strcspn(line, "\n")] = 0;
				lines[n++] = kv_xstrdup(line + 6);
				break;
			}
		if (f)
			fclose(f);
		free(path);
	}
	kv_chart_merge_setups((const char *const *)lines, n, buf, len);
	for (i = 0; i < n; i++)
		free(lines[i]);
	free(lines);
}

static void pareto_chart(const struct sweep *sw, const char *dir, const double *a, const double *b,
			 size_t n, const char *blocks, const char *const *labels, const size_t *fcount,
			 size_t n_fronts, int quiet)
{
	double lo = INFINITY, hi = -INFINITY;
	size_t i;
	int xint = 1;
	char setup[600], *qs;
	char *script = kv_xasprintf("%s/plots/pareto.gp", KV_SOURCE_DIR);
	char *qa = kv_gp_quote(sw->pareto[0]), *qb = kv_gp_quote(sw->pareto[1]);
	char *qt = kv_gp_quote(sw->name), *qd = kv_gp_quote(".pareto-fronts.dat.tmp"), la[300], lb[300];
	char *qla = kv_gp_quote(kv_metric_axis_label("summary.csv", sw->pareto[0], la, sizeof(la)));
	char *qlb = kv_gp_quote(kv_metric_axis_label("summary.csv", sw->pareto[1], lb, sizeof(lb)));
	char *path = kv_xasprintf("%s/.pareto-fronts.dat.tmp", dir);
	struct sbuf defs = { 0 };
	FILE *f = fopen(path, "w");

	if (!f || fputs(blocks, f) < 0 || fclose(f)) {
		fprintf(stderr, "kvsim: %s: cannot write gnuplot's data: %s; no Pareto chart\n", path,
			strerror(errno));
		goto out;
	}
	for (i = 0; i < n; i++) {
		if (!isnan(b[i])) {
			lo = KV_MIN(lo, b[i]);
			hi = KV_MAX(hi, b[i]);
		}
		if (!isnan(a[i]) && a[i] != floor(a[i]))
			xint = 0; /* GPUs, replicas: integer tics */
	}
	points_setup(sw, dir, setup, sizeof(setup));
	qs = kv_gp_quote(setup);
	kv__sweep_sb_printf(&defs, "xm=%s; ym=%s; title=%s; xcol=%zu; ycol=%zu; seeds=%zu; logy=%d; "
			    "xl=%s; yl=%s; fronts=%s; nf=%zu; xint=%d; setup=%s; array flab[%zu]; "
			    "array fcount[%zu]", qa, qb, qt, sw->n_axes + 1,
			    sw->n_axes + 2, sw->n_seeds, lo > 0 && hi > 100 * lo, qla, qlb, qd, n_fronts,
			    xint, qs, n_fronts ? n_fronts : 1, n_fronts ? n_fronts : 1);
	free(qs);
	for (i = 0; i < n_fronts; i++) {
		char *q = kv_gp_quote(labels[i]);

		kv__sweep_sb_printf(&defs, "; flab[%zu]=%s; fcount[%zu]=%zu", i + 1, q, i + 1, fcount[i]);
		free(q);
	}
	if (!kv_gnuplot(dir, script, defs.s, "pareto.png") && !quiet)
		printf("pareto: chart %s/pareto.png\n", dir);
out:
	unlink(path);
	free(defs.s);
	free(path);
	free(qla);
	free(qlb);
	free(qd);
	free(qt);
	free(qb);
	free(qa);
	free(script);
}

/*
 * pareto.csv: per front (one per combination of the axes outside the
 * front's dimensions, front_dims), the groups no other group of the same
 * front beats on the two metrics (means over seeds), sorted by the first,
 * with a `front` column naming the combination; pareto_all.csv: every
 * group with on_front and front.
 */
int kv__sweep_pareto(const struct sweep *sw, const char *dir, int quiet)
{
	const struct point *h = kv__sweep_header_point(sw);
	size_t ca = column(h, sw->pareto[0]), cb = column(h, sw->pareto[1]), g, f, i, n = n_groups(sw);
	double *a = kv_xcalloc(n, sizeof(*a)), *b = kv_xcalloc(n, sizeof(*b));
	double *sa = kv_xcalloc(n, sizeof(*sa)), *sb = kv_xcalloc(n, sizeof(*sb));
	unsigned char *front = kv_xcalloc(n, 1), *sf = kv_xcalloc(n, 1), *done = kv_xcalloc(n, 1);
	unsigned char in[SWEEP_MAX_AXES] = { 0 };
	size_t *order = kv_xcalloc(n, sizeof(*order)), *member = kv_xcalloc(n, sizeof(*member));
	size_t *front_of = kv_xcalloc(n, sizeof(*front_of)), n_fronts = 0, m = 0;
	char **labels = kv_xcalloc(n, sizeof(*labels)), **clabels = kv_xcalloc(n, sizeof(*clabels));
	size_t *fcount = kv_xcalloc(n, sizeof(*fcount));
	struct sbuf all = { 0 }, fr = { 0 }, blocks = { 0 };
	struct kv_ci ci;
	int rc;

	if (ca == SIZE_MAX || cb == SIZE_MAX) {
		printf("pareto: no result: '%s' is not a summary.csv column of a finished point\n",
		       ca == SIZE_MAX ? sw->pareto[0] : sw->pareto[1]);
		free(a), free(b), free(sa), free(sb), free(front), free(sf), free(done);
		free(order), free(member), free(front_of), free(labels), free(clabels), free(fcount);
		return 0;
	}
	front_dims(sw, in);
	for (g = 0; g < n; g++) {
		a[g] = group_ci(sw, g, ca, &ci) ? NAN : ci.mean;
		b[g] = group_ci(sw, g, cb, &ci) ? NAN : ci.mean;
	}
	put_axis_header(&all, sw);
	kv__sweep_sb_printf(&all, "%s,%s", sw->pareto[0], sw->pareto[1]);
	kv__sweep_sb_puts(&fr, all.s);
	kv__sweep_sb_puts(&all, ",on_front,front\n");
	kv__sweep_sb_puts(&fr, ",front\n");
	for (g = 0; g < n; g++) {
		size_t k = 0, nf;
		struct sbuf name = { 0 };

		if (done[g])
			continue;
		for (f = g; f < n; f++)
			if (!done[f] && same_front(sw, g, f, in)) {
				done[f] = 1;
				member[k] = f;
				sa[k] = a[f];
				sb[k++] = b[f];
			}
		nf = kv_pareto(sa, sb, k, kv_metric_higher_better(sw->pareto[0]),
			       kv_metric_higher_better(sw->pareto[1]), sf);
		put_front_name(&name, sw, g, in, 0);
		labels[n_fronts] = name.s;
		name = (struct sbuf){ 0 };
		put_front_name(&name, sw, g, in, 1);
		clabels[n_fronts] = name.s;
		fcount[n_fronts] = nf;
		for (i = 0; i < k; i++) {
			front[member[i]] = sf[i];
			front_of[member[i]] = n_fronts;
		}
		if (nf) {
			size_t j0 = m, j;

			for (i = 0; i < k; i++) /* insertion sort of this front by a, then b */
				if (sf[i]) {
					size_t x = member[i];

					for (j = m++; j > j0 && (a[order[j - 1]] > a[x] ||
								 (a[order[j - 1]] == a[x] &&
								  b[order[j - 1]] > b[x])); j--)
						order[j] = order[j - 1];
					order[j] = x;
				}
			for (j = j0; j < m; j++) {
				put_axes(&fr, sw, order[j]);
				kv__sweep_sb_printf(&fr, "%.6g,%.6g,", a[order[j]], b[order[j]]);
				kv__sweep_sb_csv(&fr, labels[n_fronts]);
				kv__sweep_sb_puts(&fr, "\n");
				kv__sweep_sb_printf(&blocks, "%.17g,%.17g\n", a[order[j]], b[order[j]]);
			}
		} else {
			kv__sweep_sb_puts(&blocks, "NaN,NaN\n");
		}
		kv__sweep_sb_puts(&blocks, "\n\n");
		n_fronts++;
	}
	for (g = 0; g < n; g++)
		if (!isnan(a[g]) && !isnan(b[g])) {
			put_axes(&all, sw, g);
			kv__sweep_sb_printf(&all, "%.6g,%.6g,%d,", a[g], b[g], front[g]);
			kv__sweep_sb_csv(&all, labels[front_of[g]]);
			kv__sweep_sb_puts(&all, "\n");
		}
	rc = write_file(dir, "pareto.csv", fr.s) || write_file(dir, "pareto_all.csv", all.s) ? -1 : 0;
	if (!rc && !quiet)
		printf("pareto: %zu of %zu configurations on the %s / %s front%s (%zu front%s: one per "
		       "value of the axes outside the front's); %s/pareto.csv\n", m, n, sw->pareto[0],
		       sw->pareto[1], n_fronts == 1 ? "" : "s", n_fronts, n_fronts == 1 ? "" : "s", dir);
	if (!rc && m)
		pareto_chart(sw, dir, a, b, n, blocks.s, (const char *const *)clabels, fcount,
			     n_fronts, quiet);
	for (i = 0; i < n_fronts; i++)
		free(labels[i]), free(clabels[i]);
	free(clabels), free(fcount);
	free(all.s), free(fr.s), free(blocks.s), free(a), free(b), free(sa), free(sb), free(front);
	free(sf), free(done), free(order), free(member), free(front_of), free(labels);
	return rc;
}
