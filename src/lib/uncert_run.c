/*
 * uncert_run.c -- reruns without outputs: sensitivity and uncertainty bands
 * (uncert_run.h).
 */
#include "uncert_run.h"
#include "gnuplot.h"
#include "outdir.h"
#include "../../sim/uncert.h"

#include <errno.h>
#include <gsl/gsl_rng.h>
#include <gsl/gsl_sort.h>
#include <gsl/gsl_statistics_double.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

const char *const kv_band_names[KV_BAND_METRICS] = {
	"ttft_mean_s", "ttft_p50_s", "ttft_p90_s", "ttft_p99_s",
	"tpot_mean_s", "tpot_p50_s", "tpot_p90_s", "tpot_p99_s",
	"e2e_mean_s", "e2e_p50_s", "e2e_p90_s", "e2e_p99_s",
};

/* mean, p50, p90, p99 of h in s into v[0..3]; NaN when empty. */
static void hist_metrics(const struct kv_hist *h, double *v)
{
	static const double qs[3] = { 0.5, 0.9, 0.99 };
	int i;

	v[0] = h->n ? kv_hist_mean(h) * 1e-9 : NAN;
	for (i = 0; i < 3; i++)
		v[i + 1] = h->n ? (double)kv_hist_quantile(h, qs[i]) * 1e-9 : NAN;
}

void kv_band_metrics(const struct kv_sim *s, double *v)
{
	hist_metrics(&s->ttft, v);
	hist_metrics(&s->tpot, v + 4);
	hist_metrics(&s->e2e, v + 8);
}

int kv_rerun(const struct kv_sim_config *cfg, volatile sig_atomic_t *stop, double *v,
	     struct kv_diag *d)
{
	struct kv_sim_config c = *cfg;
	struct kv_sim s;
	int rc;

	c.observer = (struct kv_observer){ 0 };
	c.exec = NULL;
	c.check_pool = 0;
	rc = kv_sim_init(&s, &c, NULL);
	if (!rc) {
		s.stop = stop;
		rc = kv_sim_run(&s);
	}
	if (rc)
		*d = s.diag;
	else
		kv_band_metrics(&s, v);
	kv_sim_release(&s);
	return rc;
}

/*
 * Gives c (a copy of a run's config) its own copy of the replica groups'
 * configs, for a rerun to change each as it changes c; NULL when c has
 * none.  The caller frees it.
 */
static struct kv_sim_config *own_groups(struct kv_sim_config *c)
{
	struct kv_sim_config *g;

	if (!c->n_groups)
		return NULL;
	g = kv_xcalloc(c->n_groups, sizeof(*g));
	memcpy(g, c->groups, c->n_groups * sizeof(*g));
	c->groups = g;
	return g;
}

/* A step_scale of s (0 reads as 1) times f. */
static double scaled(double s, double f)
{
	return (s > 0 ? s : 1.0) * f;
}

int kv_sensitivity(const struct kv_sim_config *cfg, double rel, volatile sig_atomic_t *stop,
		   double ttft[2], struct kv_diag *d)
{
	struct kv_sim_config c = *cfg, *g = own_groups(&c);
	double v[KV_BAND_METRICS];
	uint32_t j;
	int i, rc = 0;

	for (i = 0; i < 2 && !rc; i++) {
		c.step_scale = scaled(cfg->step_scale, i ? 1 + rel : 1 - rel);
		for (j = 0; j < c.n_groups; j++) /* every group's steps, as the single group's */
			g[j].step_scale = scaled(cfg->groups[j].step_scale, i ? 1 + rel : 1 - rel);
		rc = kv_rerun(&c, stop, v, d);
		if (!rc)
			ttft[i] = v[1];
	}
	free(g);
	return rc;
}

/* The 5th, 50th and 95th percentiles of the finite values of x[0..n) (sorted in place). */
static void band(double *x, size_t n, double *lo, double *mid, double *hi)
{
	size_t i, m = 0;

	for (i = 0; i < n; i++)
		if (isfinite(x[i]))
			x[m++] = x[i];
	if (!m) {
		*lo = *mid = *hi = NAN;
		return;
	}
	gsl_sort(x, 1, m);
	*lo = gsl_stats_quantile_from_sorted_data(x, 1, m, 0.05);
	*mid = gsl_stats_quantile_from_sorted_data(x, 1, m, 0.5);
	*hi = gsl_stats_quantile_from_sorted_data(x, 1, m, 0.95);
}

int kv_bands_run(const struct kv_sim_config *cfg, uint32_t n, const double *point,
		 volatile sig_atomic_t *stop, struct kv_bands *b, struct kv_diag *d)
{
	struct kv_sim_config c = *cfg, *g = own_groups(&c);
	double *v = kv_xcalloc((size_t)n * KV_BAND_METRICS, sizeof(*v)), *col;
	gsl_rng *rng = gsl_rng_alloc(gsl_rng_mt19937);
	uint32_t k, m, j;
	int rc = 0;

	if (!rng)
		kv_oom(sizeof(*rng));
	gsl_rng_set(rng, kv_unc_seed(cfg->seed));
	for (k = 0; k < n && !rc; k++) {
		kv_unc_draw(&cfg->device, rng, &c.device);
		for (j = 0; j < c.n_groups; j++) /* each group's device drawn in turn */
			kv_unc_draw(&cfg->groups[j].device, rng, &g[j].device);
		kv_unc_draw_host(&cfg->host, rng, &c.host);
		for (j = 0; j < c.n_groups; j++) /* one host draw: every group's host coefficients move together */
			memcpy(g[j].host.unc_z, c.host.unc_z, sizeof(c.host.unc_z));
		rc = kv_rerun(&c, stop, v + (size_t)k * KV_BAND_METRICS, d);
	}
	free(g);
	gsl_rng_free(rng);
	b->draws = n;
	col = kv_xcalloc(n, sizeof(*col));
	for (m = 0; m < KV_BAND_METRICS && !rc; m++) {
		for (k = 0; k < n; k++)
			col[k] = v[(size_t)k * KV_BAND_METRICS + m];
		b->point[m] = point[m];
		band(col, n, &b->lo[m], &b->mid[m], &b->hi[m]);
	}
	free(col);
	free(v);
	return rc;
}

/* A cell: %.9g, or empty for NaN. */
static void cell(FILE *f, double v)
{
	if (isfinite(v))
		fprintf(f, ",%.9g", v);
	else
		fputc(',', f);
}

static int write_csv(const struct kv_bands *b, const char *path, struct kv_diag *d)
{
	FILE *f = fopen(path, "w");
	int m, bad;

	if (!f)
		return kv_diag_set(d, KV_EIO, path, 0, 0, "", "cannot create: %s", strerror(errno));
	fprintf(f, "metric,point,p5,p50,p95,draws\n");
	for (m = 0; m < KV_BAND_METRICS; m++) {
		fputs(kv_band_names[m], f);
		cell(f, b->point[m]);
		cell(f, b->lo[m]);
		cell(f, b->mid[m]);
		cell(f, b->hi[m]);
		fprintf(f, ",%u\n", b->draws);
	}
	bad = ferror(f);
	bad |= fclose(f) != 0;
	if (bad)
		return kv_diag_set(d, KV_EIO, path, 0, 0, "", "write failed: %s",
				   strerror(errno ? errno : EIO));
	return 0;
}

/* The chart: plots/uncertainty.gp on a data file of "index name point p5 p50 p95". */
static int write_chart(const struct kv_bands *b, const char *dir, const char *title)
{
	char *dat = kv_xasprintf("%s/.uncertainty.dat.tmp", dir);
	char *script = kv_xasprintf("%s/plots/uncertainty.gp", KV_SOURCE_DIR);
	char *q = kv_gp_quote(title), *defs;
	FILE *f = fopen(dat, "w");
	int m, rc = 0;

	if (f) {
		for (m = 0; m < KV_BAND_METRICS; m++)
			if (isfinite(b->point[m]) && isfinite(b->lo[m]) && b->point[m] > 0 && b->lo[m] > 0)
				fprintf(f, "%d %s %.9g %.9g %.9g %.9g\n", m, kv_band_names[m], b->point[m],
					b->lo[m], b->mid[m], b->hi[m]);
		rc = ferror(f) | (fclose(f) != 0);
	}
	if (!f || rc) {
		fprintf(stderr, "kvsim: %s: cannot write the chart's data: %s; no chart written\n", dat,
			strerror(errno ? errno : EIO));
		rc = KV_EIO;
	} else {
		defs = kv_xasprintf("dat='.uncertainty.dat.tmp'; title=%s; draws=%u", q, b->draws);
		rc = kv_gnuplot(dir, script, defs, "uncertainty.png");
		free(defs);
	}
	unlink(dat);
	free(dat);
	free(script);
	free(q);
	return rc;
}

int kv_bands_write(const struct kv_bands *b, const char *dir, const char *title, int chart,
		   int *chart_failed, struct kv_diag *d)
{
	char *path = kv_xasprintf("%s/uncertainty.csv", dir);
	int rc = write_csv(b, path, d);

	free(path);
	if (!rc && chart && write_chart(b, dir, title) < 0)
		*chart_failed = 1;
	return rc;
}

void kv_bands_print(const struct kv_bands *b, FILE *f)
{
	int m;

	fprintf(f, "uncertainty: 5-95%% band over %u draws of the step-time coefficients (uncertainty.csv)\n",
		b->draws);
	for (m = 0; m < KV_BAND_METRICS; m++) {
		if (!isfinite(b->point[m]))
			fprintf(f, "  %-12s %12s\n", kv_band_names[m], "-");
		else
			fprintf(f, "  %-12s %12.6g  [%.6g, %.6g] s\n", kv_band_names[m], b->point[m],
				b->lo[m], b->hi[m]);
	}
}
