/*
 * chart.c -- the chart of one run (run.png or run.svg, drawn by plots/run.gp)
 * from the run's CSVs.  kvsim reads the CSVs and reduces them to what a
 * picture can show; gnuplot only draws:
 *  - latency CDFs at most about 700 points each (500 evenly spaced ranks
 *    and 200 log-spaced into the tail, so p99 and p99.9 stay visible), the
 *    last point at exactly 1;
 *  - time series in at most KV_CHART_BINS bins per line, each the mean of
 *    its samples (the panel says so when a bin holds more than one);
 *  - more than KV_CHART_MAX_LINES replicas collapsed to the min, median and
 *    max across replicas at each sample (a band and a line, no spaghetti).
 * So a run of a million requests charts in about the time its CSVs take to
 * read, and the SVG stays small.
 */
#include "chart.h"
#include "csv.h"
#include "gnuplot.h"
#include "outdir.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* A growable array of doubles. */
struct dvec {
	double *v;
	size_t n, cap;
};

static void dvec_push(struct dvec *d, double x)
{
	if (d->n == d->cap) {
		d->cap = d->cap ? 2 * d->cap : 1024;
		d->v = kv_xrealloc(d->v, d->cap * sizeof(*d->v));
	}
	d->v[d->n++] = x;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

void kv_gp_log_tics(FILE *g, const char *axis, double lo, double hi)
{
	static const double m[3] = { 1, 2, 5 };
	double e, decades, lo_b, hi_b;
	int k, first = 1, nm;

	if (!(lo > 0) || !(hi >= lo) || !isfinite(hi))
		return;
	decades = log10(hi / lo);
	nm = decades <= 2 ? 3 : decades <= 4 ? 2 : 1; /* 1-2-5, 1-2, 1: labels that do not collide */
	/* gnuplot autoscales a log axis out to whole decades: tics over all of them */
	lo_b = pow(10, floor(log10(lo))) * (1 - 1e-9), hi_b = pow(10, ceil(log10(hi))) * (1 + 1e-9);
	fprintf(g, "set %stics (", axis);
	for (e = pow(10, floor(log10(lo))); e <= hi * 10; e *= 10)
		for (k = 0; k < nm; k++)
			if (m[k] * e >= KV_MIN(lo / 2, lo_b) && m[k] * e <= KV_MAX(hi * 2, hi_b)) {
				fprintf(g, "%s'%g' %g", first ? "" : ", ", m[k] * e, m[k] * e);
				first = 0;
			}
	fputc(')', g);
}

/* Writes the CDF of d (sorted here) as one data block: "value share" rows, then two blank lines. */
static void write_cdf(FILE *f, struct dvec *d, double *lo, double *hi)
{
	size_t i, last = (size_t)-1, k;
	double n = (double)d->n;

	if (!d->n) {
		fputs("NaN NaN\n\n\n", f);
		return;
	}
	qsort(d->v, d->n, sizeof(*d->v), cmp_double);
	if (d->v[0] > 0)
		*lo = KV_MIN(*lo, d->v[0]);
	*hi = KV_MAX(*hi, d->v[d->n - 1]);
	for (k = 0; k < 700; k++) {
		if (d->n <= 700) {
			i = k < d->n ? k : d->n - 1;
		} else if (k < 500) {
			i = (size_t)((double)k * (n - 1) / 499.0);
		} else { /* the tail: 1 - p from 1e-2 down to 1/n, log-spaced */
			double q = 1.0 - pow(10, -2.0 - (double)(k - 500) * (log10(n) - 2.0) / 199.0);

			i = (size_t)KV_MIN(n - 1, KV_MAX(0.0, ceil(q * n) - 1));
		}
		if (last != (size_t)-1 && i <= last)
			continue;
		fprintf(f, "%.9g %.9g\n", d->v[i], (double)(i + 1) / n);
		last = i;
	}
	fputs("\n\n", f);
}

/* The index of name in the space-separated list names ('_' for a space), or -1. */
static long tenant_index(const char *names, const char *name)
{
	const char *p = names;
	long i = 0;

	while (*p) {
		size_t n = strcspn(p, " "), k;

		for (k = 0; k < n && name[k]; k++)
			if (name[k] != p[k] && !(name[k] == ' ' && p[k] == '_'))
				break;
		if (k == n && !name[k])
			return i;
		p += n + (p[n] == ' ');
		i++;
	}
	return -1;
}

/*
 * Reads requests.csv: the TTFT, TPOT and E2E of every completed request,
 * all tenants, then TTFT and E2E per tenant; writes their CDFs to f
 * (blocks 0-2, then 3 + 2 i and 4 + 2 i for tenant i).  0 or -1.
 */
static int cdfs(const struct kv_chart_run *c, FILE *f, double *lo, double *hi, size_t *done)
{
	struct dvec all[3] = { { 0 } }, *ten = kv_xcalloc(2 * (c->tenants ? c->tenants : 1), sizeof(*ten));
	struct kv_csv_rec r;
	struct kv_diag d;
	unsigned long line = 1;
	char *path = kv_xasprintf("%s/requests.csv", c->dir);
	FILE *in = fopen(path, "r");
	long col[4] = { -1, -1, -1, -1 };
	unsigned i;
	int rc = in ? 0 : -1;

	kv_csv_rec_init(&r);
	if (in && kv_csv_rec_read(&r, in, &line, path, &d) == 1) {
		col[0] = kv_csv_rec_find(&r, "ttft_s"), col[1] = kv_csv_rec_find(&r, "tpot_s");
		col[2] = kv_csv_rec_find(&r, "e2e_s"), col[3] = kv_csv_rec_find(&r, "tenant");
	}
	while (!rc && col[0] >= 0 && col[1] >= 0 && col[2] >= 0 && col[3] >= 0 &&
	       (rc = kv_csv_rec_read(&r, in, &line, path, &d)) == 1) {
		long t;

		rc = 0;
		if (r.n <= (size_t)KV_MAX(KV_MAX(col[0], col[1]), KV_MAX(col[2], col[3])) ||
		    !r.field[col[0]][0])
			continue; /* rejected: no latency */
		t = c->tenants > 1 ? tenant_index(c->tenant_names, r.field[col[3]]) : -1;
		for (i = 0; i < 3; i++)
			if (r.field[col[i]][0])
				dvec_push(&all[i], strtod(r.field[col[i]], NULL));
		if (t >= 0) {
			dvec_push(&ten[2 * t], strtod(r.field[col[0]], NULL));
			dvec_push(&ten[2 * t + 1], strtod(r.field[col[2]], NULL));
		}
	}
	if (rc < 0 && in)
		kv_diag_print(&d, stderr);
	*done = all[0].n;
	for (i = 0; i < 3; i++)
		write_cdf(f, &all[i], lo, hi);
	for (i = 0; c->tenants > 1 && i < 2 * c->tenants; i++)
		write_cdf(f, &ten[i], lo, hi);
	for (i = 0; i < 3; i++)
		free(all[i].v);
	for (i = 0; i < 2 * (c->tenants ? c->tenants : 1); i++)
		free(ten[i].v);
	free(ten);
	kv_csv_rec_release(&r);
	if (in)
		fclose(in);
	free(path);
	return rc < 0 ? -1 : 0;
}

/*
 * Bins of one file's time series: series lines (replicas, tenants, or the
 * 3 bands), KV_CHART_BINS bins each, cols values per bin.
 */
struct bins {
	size_t series, cols, nbins, samples; /* lines; values per row; bins; samples per line */
	double *sum; /* [series][bin][1 + cols]: t, then the values */
	size_t *n; /* [series][bin] samples added */
};

static void bins_init(struct bins *b, size_t series, size_t cols, size_t samples)
{
	b->series = series, b->cols = cols, b->samples = samples;
	b->nbins = KV_MAX((size_t)1, KV_MIN(samples, (size_t)KV_CHART_BINS));
	b->sum = kv_xcalloc(series * b->nbins * (1 + cols), sizeof(*b->sum));
	b->n = kv_xcalloc(series * b->nbins, sizeof(*b->n));
}

/* Adds sample number s (0-based, per line) of line k: t and cols values. */
static void bins_add(struct bins *b, size_t k, size_t s, double t, const double *v)
{
	size_t bin = KV_MIN(b->nbins - 1, s * b->nbins / KV_MAX(b->samples, (size_t)1)), j;
	double *p = &b->sum[(k * b->nbins + bin) * (1 + b->cols)];

	p[0] += t;
	for (j = 0; j < b->cols; j++)
		p[1 + j] += v[j];
	b->n[k * b->nbins + bin]++;
}

/* Writes each line as a block of bin means: "t v1 v2 ..." rows. */
static void bins_write(const struct bins *b, FILE *f)
{
	size_t k, i, j;

	for (k = 0; k < b->series; k++) {
		for (i = 0; i < b->nbins; i++) {
			const double *p = &b->sum[(k * b->nbins + i) * (1 + b->cols)];
			size_t n = b->n[k * b->nbins + i];

			if (!n)
				continue;
			for (j = 0; j <= b->cols; j++)
				fprintf(f, "%s%.9g", j ? " " : "", p[j] / (double)n);
			putc('\n', f);
		}
		fputs("NaN", f);
		for (j = 0; j < b->cols; j++)
			fputs(" NaN", f);
		fputs("\n\n\n", f);
	}
}

static void bins_release(struct bins *b)
{
	free(b->sum);
	free(b->n);
}

/* Lines of path after its header; 0 when unreadable. */
static size_t count_rows(const char *path)
{
	FILE *f = fopen(path, "r");
	size_t n = 0;
	int ch, prev = '\n';

	if (!f)
		return 0;
	while ((ch = getc(f)) != EOF) {
		n += ch == '\n';
		prev = ch;
	}
	n += prev != '\n';
	fclose(f);
	return n ? n - 1 : 0;
}

/* Sorts n values and returns min, median and max in out[0..2]. */
static void min_med_max(double *v, size_t n, double *out)
{
	qsort(v, n, sizeof(*v), cmp_double);
	out[0] = v[0];
	out[1] = n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
	out[2] = v[n - 1];
}

/*
 * timeseries.csv into f: per replica a block of rows "t waiting running
 * used_GiB reserved_GiB"; with bands one block of rows "t" then min,
 * median and max across replicas of each of those four.  *bin_s: the bin width
 * in seconds when a bin holds more than one sample, else 0.  0 or -1.
 */
static int replica_series(const struct kv_chart_run *c, FILE *f, int bands, double *bin_s,
			  double *max_req)
{
	char *path = kv_xasprintf("%s/timeseries.csv", c->dir), line[512];
	size_t rows = count_rows(path), samples = rows / KV_MAX(c->replicas, 1u), s = 0, k, j;
	double *v = kv_xcalloc((size_t)c->replicas * 5, sizeof(*v)), t = 0, t0 = 0, t1 = 0;
	FILE *in = fopen(path, "r");
	struct bins b;
	unsigned got = 0;

	bins_init(&b, bands ? 1 : c->replicas, bands ? 12 : 4, samples);
	if (in && fgets(line, sizeof(line), in)) {
		while (fgets(line, sizeof(line), in)) { /* numbers only: t,replica,waiting,running,used,reserved,... */
			char *p = line;
			double x[6];

			for (j = 0; j < 6; j++) {
				x[j] = strtod(p, &p);
				if (*p == ',')
					p++;
			}
			k = (size_t)x[1];
			if (k >= c->replicas)
				continue;
			t = x[0];
			v[k * 4 + 0] = x[2], v[k * 4 + 1] = x[3];
			max_req[0] = KV_MAX(max_req[0], x[2]), max_req[1] = KV_MAX(max_req[1], x[3]);
			v[k * 4 + 2] = x[4] / 1073741824.0, v[k * 4 + 3] = x[5] / 1073741824.0;
			if (++got < c->replicas)
				continue;
			got = 0;
			if (!s)
				t0 = t;
			t1 = t;
			if (bands) { /* min, median, max across replicas, column by column */
				double col[12], *w = v + (size_t)c->replicas * 4; /* scratch */

				for (j = 0; j < 4; j++) {
					for (k = 0; k < c->replicas; k++)
						w[k] = v[k * 4 + j];
					min_med_max(w, c->replicas, &col[3 * j]);
				}
				bins_add(&b, 0, s, t, col);
			} else {
				for (k = 0; k < c->replicas; k++)
					bins_add(&b, k, s, t, &v[k * 4]);
			}
			s++;
		}
	}
	bins_write(&b, f);
	*bin_s = samples > b.nbins && samples > 1 ? (t1 - t0) / (double)(samples - 1) *
		 (double)samples / (double)b.nbins : 0;
	bins_release(&b);
	free(v);
	free(path);
	if (in)
		fclose(in);
	return in ? 0 : -1;
}

/* tenant_timeseries.csv into f: per tenant "t waiting service" rows; *max_wait: the most waiting. */
static int tenant_series(const struct kv_chart_run *c, FILE *f, double *max_wait)
{
	char *path = kv_xasprintf("%s/tenant_timeseries.csv", c->dir);
	size_t samples = count_rows(path) / KV_MAX(c->tenants, 1u), s = 0;
	FILE *in = fopen(path, "r");
	struct kv_csv_rec r;
	struct kv_diag d;
	unsigned long line = 1;
	unsigned got = 0;
	struct bins b;
	int rc = 0;

	kv_csv_rec_init(&r);
	bins_init(&b, c->tenants, 2, samples);
	if (in && kv_csv_rec_read(&r, in, &line, path, &d) == 1) {
		while ((rc = kv_csv_rec_read(&r, in, &line, path, &d)) == 1) {
			double v[2];
			long t;

			rc = 0;
			if (r.n < 4 || (t = tenant_index(c->tenant_names, r.field[1])) < 0)
				continue;
			v[0] = strtod(r.field[2], NULL), v[1] = strtod(r.field[3], NULL);
			*max_wait = KV_MAX(*max_wait, v[0]);
			bins_add(&b, (size_t)t, s, strtod(r.field[0], NULL), v);
			if (++got == c->tenants)
				got = 0, s++;
		}
	}
	if (rc < 0)
		kv_diag_print(&d, stderr);
	bins_write(&b, f);
	bins_release(&b);
	kv_csv_rec_release(&r);
	free(path);
	if (in)
		fclose(in);
	return in && rc >= 0 ? 0 : -1;
}

int kv_chart_parse_slo(struct kv_chart_run *c, const char *text)
{
	static const char *const m[3] = { "ttft", "tpot", "e2e" };
	const char *p = text;
	int n = 0, i;

	while (*p) {
		char name[64], *end;
		size_t k = strcspn(p, "= "), len = strcspn(p, " ");
		double v, q;

		if (p[k] == '=' && k < sizeof(name)) {
			memcpy(name, p, k);
			name[k] = 0;
			v = strtod(p + k + 1, &end);
			for (i = 0; i < 3 && end > p + k + 1 && v > 0; i++) {
				size_t ml = strlen(m[i]);

				if (strncmp(name, m[i], ml))
					continue;
				if (!strcmp(name + ml, "_s")) {
					c->slo_req_s[i] = v, n++;
				} else if (name[ml] == '_' && name[ml + 1] == 'p' &&
					   (q = strtod(name + ml + 2, &end)) > 0 && !strcmp(end, "_s")) {
					/* p99 -> 0.99, p999 -> 0.999, p50 -> 0.5 */
					while (q >= 1)
						q /= 10;
					c->slo_pct_s[i] = v, c->slo_pct_q[i] = q, n++;
				}
			}
		}
		p += len;
		while (*p == ' ')
			p++;
	}
	return n;
}

/* The variables file of run.gp. */
static int write_vars(const struct kv_chart_run *c, const char *path, int bands, double bin_s,
		      size_t done, double lo, double hi, const double *max_req)
{
	FILE *g = fopen(path, "w");
	char *q, note[128] = "";
	const char *p;
	unsigned i;

	if (!g)
		return -1;
	if (bin_s > 0)
		snprintf(note, sizeof(note), " (means over %.3g s bins)", bin_s);
	fprintf(g, "svg = %d\nreplicas = %u\nbands = %d\ntenants = %u\nreqs = %d\ncompleted = %zu\n"
		"pool_gib = %.9g\n", c->svg, c->replicas, bands, c->tenants, c->with_requests, done,
		(double)c->pool_bytes / 1073741824.0);
	/* the request panels' largest counts: integer tics below 8 (gnuplot would tick at 0.2) */
	fprintf(g, "array reqmax[3] = [%.9g, %.9g, %.9g]\n", max_req[0], max_req[1], max_req[2]);
	q = kv_gp_quote(c->title), fprintf(g, "title = %s\n", q), free(q);
	q = kv_gp_quote(c->setup ? c->setup : ""), fprintf(g, "setup = %s\n", q), free(q);
	q = kv_gp_quote(note), fprintf(g, "binnote = %s\n", q), free(q);
	fprintf(g, "array tname[%u]\n", c->tenants ? c->tenants : 1);
	for (i = 0, p = c->tenant_names; *p && i < c->tenants; i++) {
		size_t n = strcspn(p, " ");
		char *name = kv_xasprintf("%.*s", (int)n, p);

		q = kv_gp_quote(name), fprintf(g, "tname[%u] = %s\n", i + 1, q), free(q), free(name);
		p += n + (p[n] == ' ');
	}
	fprintf(g, "array slo_req[3]\narray slo_pct[3]\narray slo_q[3]\n");
	for (i = 0; i < 3; i++)
		fprintf(g, "slo_req[%u] = %.9g\nslo_pct[%u] = %.9g\nslo_q[%u] = %.9g\n", i + 1,
			c->slo_req_s[i], i + 1, c->slo_pct_s[i], i + 1, c->slo_pct_q[i]);
	for (i = 0; i < 3; i++) /* the CDFs' x range includes the SLO limits */
		if (c->slo_req_s[i] > 0 || c->slo_pct_s[i] > 0) {
			double v = c->slo_req_s[i] > 0 ? c->slo_req_s[i] : c->slo_pct_s[i];

			lo = KV_MIN(lo, v), hi = KV_MAX(hi, KV_MAX(v, c->slo_pct_s[i]));
		}
	fputs("xtcmd = \"", g); /* the CDFs' x tics, a macro run.gp expands where it needs them */
	if (lo <= hi)
		kv_gp_log_tics(g, "x", lo, hi);
	else
		fputs("set xtics auto", g);
	fputs("\"\n", g);
	return ferror(g) | fclose(g) ? -1 : 0;
}

int kv_chart_run(const struct kv_chart_run *c)
{
	char *script = kv_xasprintf("%s/plots/run.gp", KV_SOURCE_DIR);
	char *cdf = kv_xasprintf("%s/.run-cdf.dat.tmp", c->dir), *ts = kv_xasprintf("%s/.run-ts.dat.tmp", c->dir);
	char *ten = kv_xasprintf("%s/.run-ten.dat.tmp", c->dir), *vars = kv_xasprintf("%s/.run-vars.gp.tmp", c->dir);
	char *ts_csv = kv_xasprintf("%s/timeseries.csv", c->dir);
	int bands = c->replicas > KV_CHART_MAX_LINES, rc = 0;
	double lo = INFINITY, hi = 0, bin_s = 0, max_req[3] = { 0, 0, 0 }; /* waiting, running, per tenant waiting */
	size_t done = 0;
	FILE *f;

	if (!count_rows(ts_csv)) { /* outputs.sample_interval 0: the time panels have nothing */
		fprintf(stderr, "kvsim: no %s: the run has no timeseries samples (outputs.sample_interval: 0); "
				"set a sample interval to chart it, or outputs.chart: false\n",
			c->svg == 1 ? "run.svg" : "run.png");
		rc = 0;
		goto out;
	}
	if ((f = fopen(cdf, "w"))) {
		if (c->with_requests)
			rc |= cdfs(c, f, &lo, &hi, &done);
		rc |= ferror(f) | fclose(f);
	} else {
		rc = -1;
	}
	if ((f = fopen(ts, "w"))) {
		rc |= replica_series(c, f, bands, &bin_s, max_req);
		rc |= ferror(f) | fclose(f);
	} else {
		rc = -1;
	}
	if ((f = fopen(ten, "w"))) {
		rc |= tenant_series(c, f, &max_req[2]);
		rc |= ferror(f) | fclose(f);
	} else {
		rc = -1;
	}
	rc |= write_vars(c, vars, bands, bin_s, done, lo, hi, max_req);
	if (rc) {
		fprintf(stderr, "kvsim: %s/%s: gnuplot not run: cannot read the run's CSVs or write its inputs: %s; no chart written\n",
			c->dir, c->svg == 1 ? "run.svg" : "run.png", strerror(errno ? errno : EIO));
		rc = KV_EIO;
	} else {
		int svg;

		for (svg = c->svg == 1; svg <= (c->svg != 0) && !rc; svg++)
			rc = kv_gnuplot(c->dir, script, svg ? "load '.run-vars.gp.tmp'; svg=1; cdf='.run-cdf.dat.tmp'; "
					"ts='.run-ts.dat.tmp'; ten='.run-ten.dat.tmp'" : "load '.run-vars.gp.tmp'; svg=0; "
					"cdf='.run-cdf.dat.tmp'; ts='.run-ts.dat.tmp'; ten='.run-ten.dat.tmp'",
					svg ? "run.svg" : "run.png");
	}
	unlink(cdf), unlink(ts), unlink(ten), unlink(vars);
out:
	free(cdf), free(ts), free(ten), free(vars), free(script), free(ts_csv);
	return rc;
}

/* The kind of a fit point (calibration.gp's order): 1 decode, 2 prefill, 3 mixed, 4 replay-full, 5 replay-chunked. */
static int fit_kind(const char *what)
{
	return strstr(what, "replay-full") ? 4 : strstr(what, "replay-chunked") ? 5 :
	       strstr(what, "decode") ? 1 : strstr(what, "prefill") ? 2 : 3;
}

int kv_chart_fit(const char *dir, const char *csv, const char *name, const char *title,
		 const char *setup, const char *batches)
{
	char *path = kv_xasprintf("%s/%s", dir, csv), *script, *defs, *qf, *qt, *qs, *qb;
	size_t cnt[6] = { 0 };
	unsigned long line = 1;
	struct kv_csv_rec r;
	struct kv_diag d;
	FILE *in = fopen(path, "r");
	int rc;

	kv_csv_rec_init(&r);
	if (in && kv_csv_rec_read(&r, in, &line, path, &d) == 1)
		while (kv_csv_rec_read(&r, in, &line, path, &d) == 1)
			if (r.n > 8 && strtod(r.field[7], NULL) > 0 && strtod(r.field[8], NULL) > 0)
				cnt[fit_kind(r.field[0])]++; /* a point the log-log chart can show */
	if (in)
		fclose(in);
	kv_csv_rec_release(&r);
	script = kv_xasprintf("%s/plots/calibration.gp", KV_SOURCE_DIR);
	qf = kv_gp_quote(csv), qt = kv_gp_quote(title), qs = kv_gp_quote(setup ? setup : "");
	qb = kv_gp_quote(batches);
	defs = kv_xasprintf("file=%s; title=%s; setup=%s; batches=%s; "
			    "array cnt[5] = [%zu, %zu, %zu, %zu, %zu]",
			    qf, qt, qs, qb, cnt[1], cnt[2], cnt[3], cnt[4], cnt[5]);
	rc = kv_gnuplot(dir, script, defs, name);
	free(defs), free(qf), free(qt), free(qs), free(qb), free(script), free(path);
	return rc;
}

#define SETUP_WORDS 32 /* words of a setup line merged one by one */
#define SETUP_VALUES 12 /* distinct values shown per word; more: "..." */

/* One word position of the setups: its distinct values in order of appearance. */
struct setup_word {
	char *v[SETUP_VALUES];
	size_t n;
	int more; /* values beyond SETUP_VALUES */
	int comma; /* the word ended in ',' (kept out of the values) */
};

static void setup_word_add(struct setup_word *w, const char *s, size_t len)
{
	size_t i;

	for (i = 0; i < w->n; i++)
		if (strlen(w->v[i]) == len && !strncmp(w->v[i], s, len))
			return;
	if (w->n == SETUP_VALUES) {
		w->more = 1;
		return;
	}
	w->v[w->n] = kv_xmalloc(len + 1);
	memcpy(w->v[w->n], s, len);
	w->v[w->n++][len] = 0;
}

/* Splits s into w (at most SETUP_WORDS words); returns the word count. */
static size_t setup_words(const char *s, struct setup_word *w)
{
	size_t n = 0;

	while (*s && n < SETUP_WORDS) {
		size_t len;

		s += strspn(s, " ");
		if (!(len = strcspn(s, " ")))
			break;
		w[n].comma = len > 1 && s[len - 1] == ',';
		setup_word_add(&w[n], s, len - (size_t)w[n].comma);
		n++;
		s += len;
	}
	return n;
}

void kv_chart_merge_setups(const char *const *setups, size_t n, char *buf, size_t len)
{
	struct setup_word w[SETUP_WORDS], one[SETUP_WORDS];
	const char *first = NULL;
	size_t nw = 0, i, k, off = 0;

	memset(w, 0, sizeof(w));
	buf[0] = 0;
	for (k = 0; k < n; k++) {
		size_t m;

		if (!setups[k][0])
			continue;
		memset(one, 0, sizeof(one));
		m = setup_words(setups[k], one); /* counted apart: another shape must not mix in */
		for (i = 0; i < m; i++)
			free(one[i].v[0]);
		if (first && m != nw) { /* tensor parallel in some points: no word-by-word merge */
			snprintf(buf, len, "%s (first point; the axes vary it)", first);
			goto out;
		}
		if (!first)
			first = setups[k];
		nw = setup_words(setups[k], w);
	}
	for (i = 0; i < nw && off < len; i++) {
		for (k = 0; k < w[i].n && off < len; k++)
			off += (size_t)snprintf(buf + off, len - off, "%s%s", k ? "/" : i ? " " : "", w[i].v[k]);
		if (off < len)
			off += (size_t)snprintf(buf + off, len - off, "%s%s", w[i].more ? "/..." : "",
						w[i].comma ? "," : "");
	}
out:
	for (i = 0; i < SETUP_WORDS; i++)
		for (k = 0; k < w[i].n; k++)
			free(w[i].v[k]);
}

int kv_chart_autoscale(const char *dir, const char *title, int with_slo, unsigned group,
		       double gpu_hours, double end_s)
{
	char *script, *defs, *qt;
	int rc;

	script = kv_xasprintf("%s/plots/autoscale.gp", KV_SOURCE_DIR);
	qt = kv_gp_quote(title);
	defs = kv_xasprintf("file='autoscale.csv'; title=%s; with_slo=%d; grp=%u; gpu_hours=%.6g; hours=%d",
			    qt, with_slo, group, gpu_hours, end_s >= 7200);
	rc = kv_gnuplot(dir, script, defs, "autoscale.png");
	free(defs), free(qt), free(script);
	return rc;
}
