/*
 * cmd_plot.c -- `kvsim plot DIR`: renders the charts of a run directory
 * (run.png and run.svg) from its CSVs, without the user writing gnuplot.
 */
#include "commands.h"
#include "opts.h"
#include "lib/chart.h"
#include "lib/csv.h"
#include "lib/metric_doc.h"
#include "lib/output.h"

#include <libgen.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Room for a path under a directory given on the command line (checked against KV_PATH_MAX). */
#define PT_PATH (KV_PATH_MAX + 64)

/* Adds name to DIR's manifest (a run or sweep directory of this kvsim); 0 or 1 (message printed). */
static int add_to_manifest(const char *dir, const char *name)
{
	struct kv_diag d;

	if (!kv_manifest_add(dir, name, &d))
		return 0;
	kv_diag_print(&d, stderr);
	return 1;
}

/* --- kvsim's own CSVs, read with csv.h ------------------------------------------ */

/* One CSV file being read record by record. */
struct csv_in {
	char path[PT_PATH]; /* DIR/NAME */
	FILE *f; /* NULL when it could not be opened */
	struct kv_csv_rec rec; /* the last record read */
	unsigned long line; /* 1-based line of the next record */
};

/* Opens dir/name; 0, or -1 when it cannot be opened (nothing printed). */
static int csv_open(struct csv_in *c, const char *dir, const char *name)
{
	snprintf(c->path, sizeof(c->path), "%s/%s", dir, name);
	kv_csv_rec_init(&c->rec);
	c->line = 1;
	c->f = fopen(c->path, "r");
	return c->f ? 0 : -1;
}

/* The next record into c->rec: 1, 0 at the end, -1 when malformed (message printed). */
static int csv_next(struct csv_in *c)
{
	struct kv_diag d = { 0 };
	int rc = kv_csv_rec_read(&c->rec, c->f, &c->line, c->path, &d);

	if (rc < 0)
		kv_diag_print(&d, stderr);
	return rc < 0 ? -1 : rc;
}

static void csv_close(struct csv_in *c)
{
	if (c->f)
		fclose(c->f);
	kv_csv_rec_release(&c->rec);
}

/* Reads the first field of the second record of DIR/name into buf (the workload name). */
static int first_field(const char *dir, const char *name, char *buf, size_t len)
{
	struct csv_in c;
	int ok = 0;

	if (!csv_open(&c, dir, name) && csv_next(&c) == 1 && csv_next(&c) == 1) {
		snprintf(buf, len, "%s", c.rec.field[0]);
		ok = 1;
	}
	csv_close(&c);
	return ok;
}

/* Replicas in timeseries.csv: the largest replica index plus one. */
static unsigned count_replicas(const char *dir)
{
	char path[PT_PATH], line[512];
	unsigned n = 0, r;
	FILE *f;

	snprintf(path, sizeof(path), "%s/timeseries.csv", dir);
	if (!(f = fopen(path, "r")))
		return 0;
	while (fgets(line, sizeof(line), f)) /* numbers only: no quoting */
		if (sscanf(line, "%*[^,],%u", &r) == 1 && r + 1 > n)
			n = r + 1;
	fclose(f);
	return n;
}

/* Tenant names from tenants.csv, space-separated (spaces inside a name as '_'). */
static unsigned tenant_names(const char *dir, char *buf, size_t len)
{
	struct csv_in c;
	unsigned n = 0;
	size_t off = 0;

	buf[0] = 0;
	if (csv_open(&c, dir, "tenants.csv") || csv_next(&c) != 1) {
		csv_close(&c);
		return 0;
	}
	while (off + 2 < len && csv_next(&c) == 1) {
		char *name = c.rec.field[0], *p;

		for (p = name; *p; p++)
			if (*p == ' ')
				*p = '_';
		off += (size_t)snprintf(buf + off, len - off, "%s%s", n ? " " : "", name);
		n++;
	}
	csv_close(&c);
	return n;
}

/* The value of `key VALUE` in DIR/manifest.txt into buf ("" when absent). */
static void manifest_value(const char *dir, const char *key, char *buf, size_t len)
{
	char path[PT_PATH], line[1024];
	size_t k = strlen(key);
	FILE *f;

	buf[0] = 0;
	snprintf(path, sizeof(path), "%s/manifest.txt", dir);
	if (!(f = fopen(path, "r")))
		return;
	while (fgets(line, sizeof(line), f))
		if (!strncmp(line, key, k) && line[k] == ' ') {
			size_t n = KV_MIN(strcspn(line + k + 1, "\n"), len - 1);

			memcpy(buf, line + k + 1, n);
			buf[n] = 0;
			break;
		}
	fclose(f);
}

/* The integer column name of DIR/summary.csv, 0 when absent. */
static uint64_t summary_u64(const char *dir, const char *name)
{
	struct csv_in c;
	uint64_t v = 0;
	long i;

	if (!csv_open(&c, dir, "summary.csv") && csv_next(&c) == 1 &&
	    (i = kv_csv_rec_find(&c.rec, name)) >= 0 && csv_next(&c) == 1 && (size_t)i < c.rec.n)
		v = strtoull(c.rec.field[i], NULL, 10);
	csv_close(&c);
	return v;
}

/* --- sweeps ------------------------------------------------------------------ */

struct sweep_csv {
	struct kv_csv_rec hdr; /* the header: column names */
	int n_axes; /* axis columns: 3 .. 2 + n_axes (1-based; point, key first) */
};

static int sweep_read_header(const char *dir, struct sweep_csv *c)
{
	struct csv_in in;
	int ok;

	kv_csv_rec_init(&c->hdr);
	c->n_axes = 0;
	if (csv_open(&in, dir, "sweep.csv") || csv_next(&in) != 1) {
		csv_close(&in);
		return -1;
	}
	c->hdr = in.rec; /* taken over */
	kv_csv_rec_init(&in.rec);
	csv_close(&in);
	while (2 + (size_t)c->n_axes < c->hdr.n && strcmp(c->hdr.field[2 + c->n_axes], "seed"))
		c->n_axes++;
	ok = c->hdr.n > 7;
	return ok ? 0 : -1;
}

/* 1-based column of name, or 0. */
static int col_of(const struct sweep_csv *c, const char *name)
{
	return (int)kv_csv_rec_find(&c->hdr, name) + 1;
}

/* Distinct strings in first-seen order. */
struct strset {
	char **v;
	size_t n;
};

/* The 0-based index of s in set, added when new. */
static size_t strset_index(struct strset *set, const char *s)
{
	size_t i;

	for (i = 0; i < set->n; i++)
		if (!strcmp(set->v[i], s))
			return i;
	set->v = kv_xrealloc(set->v, (set->n + 1) * sizeof(*set->v));
	set->v[set->n] = kv_xstrdup(s);
	return set->n++;
}

static void strset_release(struct strset *set)
{
	size_t i;

	for (i = 0; i < set->n; i++)
		free(set->v[i]);
	free(set->v);
	memset(set, 0, sizeof(*set));
}

/* What the chart of one metric needs from sweep.csv. */
struct sweep_data {
	struct strset x, by; /* distinct values of the x and by columns, every row */
	size_t *xi, *bi; /* per ok row: x and by value indices */
	double *y; /* per ok row: the metric */
	size_t n, cap; /* ok rows with a value; entries allocated */
	int numeric; /* every x value is a number */
	char key[32]; /* the point key of the first ok row (its run: DIR/points/KEY), "" if none */
	struct strset keys; /* the point keys of every ok row, for the setup in the title */
};

#define PLOT_MAX_LIMITS 16

/* What a sweep chart draws besides the data: limits (target.csv, SLOs) and chosen points. */
struct sweep_marks {
	double lim[PLOT_MAX_LIMITS]; /* horizontal lines, in the metric's unit */
	char limlab[PLOT_MAX_LIMITS][128]; /* their legend entries */
	size_t nlim;
	char **cx, **cby; /* the chosen points' x and by values (cby[i] NULL without a by axis) */
	size_t nchosen;
	char chosen_lab[160]; /* their legend entry */
};

static void sweep_data_release(struct sweep_data *sd)
{
	strset_release(&sd->x);
	strset_release(&sd->by);
	strset_release(&sd->keys);
	free(sd->xi);
	free(sd->bi);
	free(sd->y);
}

/*
 * Reads the rows of sweep.csv into sd: the x and by values of every row,
 * and (x, by, y) of each "ok" row whose metric is a number.  Columns are
 * 1-based, bycol 0 when none.  Returns 0 or -1 (message printed).
 */
static int sweep_read_rows(const char *dir, int xcol, int bycol, int ycol, int statcol,
			   struct sweep_data *sd)
{
	struct csv_in c;
	int rc;

	memset(sd, 0, sizeof(*sd));
	sd->numeric = 1;
	if (csv_open(&c, dir, "sweep.csv") || csv_next(&c) != 1) {
		csv_close(&c);
		return -1;
	}
	while ((rc = csv_next(&c)) == 1) {
		char **f = c.rec.field, *end;
		size_t xi, bi = 0;
		double y;

		if (c.rec.n < (size_t)KV_MAX(KV_MAX(xcol, bycol), KV_MAX(ycol, statcol)))
			continue;
		xi = strset_index(&sd->x, f[xcol - 1]);
		strtod(f[xcol - 1], &end);
		if (!*f[xcol - 1] || *end)
			sd->numeric = 0;
		if (bycol)
			bi = strset_index(&sd->by, f[bycol - 1]) + 1;
		y = strtod(f[ycol - 1], &end);
		if (strcmp(f[statcol - 1], "ok") || !*f[ycol - 1] || *end)
			continue;
		if (!sd->key[0] && c.rec.n > 1)
			snprintf(sd->key, sizeof(sd->key), "%s", f[1]);
		strset_index(&sd->keys, f[1]);
		if (sd->n == sd->cap) {
			sd->cap = sd->cap ? 2 * sd->cap : 64;
			sd->xi = kv_xrealloc(sd->xi, sd->cap * sizeof(*sd->xi));
			sd->bi = kv_xrealloc(sd->bi, sd->cap * sizeof(*sd->bi));
			sd->y = kv_xrealloc(sd->y, sd->cap * sizeof(*sd->y));
		}
		sd->xi[sd->n] = xi;
		sd->bi[sd->n] = bi;
		sd->y[sd->n++] = y;
	}
	csv_close(&c);
	return rc < 0 ? -1 : 0;
}

/* Prints the metric columns of sweep.csv (after `workload`), for an unknown --metric. */
static void list_metrics(const struct sweep_csv *c, FILE *f)
{
	size_t i = kv_csv_rec_find(&c->hdr, "workload");

	fputs(": expected one of (kvsim list metrics defines them):", f);
	for (i = i == (size_t)-1 ? 0 : i + 1; i < c->hdr.n; i++)
		fprintf(f, " %s", c->hdr.field[i]);
	fputc('\n', f);
}

/* Writes s as a gnuplot double-quoted string. */
static void gp_str(FILE *f, const char *s)
{
	putc('"', f);
	for (; *s; s++) {
		if (*s == '\n') {
			fputs("\\n", f);
			continue;
		}
		if (*s == '"' || *s == '\\')
			putc('\\', f);
		putc(*s, f);
	}
	putc('"', f);
}

/* Writes `array name[n]` (at least 1) holding the strings of set. */
static void gp_array(FILE *f, const char *name, const struct strset *set)
{
	size_t i;

	fprintf(f, "array %s[%zu]\n", name, set->n ? set->n : 1);
	for (i = 0; i < set->n; i++) {
		fprintf(f, "%s[%zu] = ", name, i + 1);
		gp_str(f, set->v[i]);
		putc('\n', f);
	}
}

/* One chart's variables for plots/sweep.gp; the labels pass as gnuplot strings. */
struct sweep_vars {
	const char *data, *out, *title, *metric, *xname, *byname, *ylabel, *note;
	const char *xlabel, *bylabel; /* the axes' names on the chart (axis_labels.csv) */
	const char *setup; /* model, device, scheduler, cache, engine of the points */
	int svg, logy;
};

/* One point of the chart: the mean of the runs at one (by, x) value, with their range. */
struct cell {
	double sum, min, max; /* over the runs */
	size_t n; /* runs */
};

/* The cells of sd: [by group][x index], groups max(1, nby); a heap array. */
static struct cell *aggregate(const struct sweep_data *sd, size_t *groups)
{
	size_t g = sd->by.n ? sd->by.n : 1, i;
	struct cell *c = kv_xcalloc(g * (sd->x.n ? sd->x.n : 1), sizeof(*c));

	for (i = 0; i < sd->n; i++) {
		struct cell *k = &c[(sd->bi[i] ? sd->bi[i] - 1 : 0) * sd->x.n + sd->xi[i]];

		k->min = k->n ? KV_MIN(k->min, sd->y[i]) : sd->y[i];
		k->max = k->n ? KV_MAX(k->max, sd->y[i]) : sd->y[i];
		k->sum += sd->y[i];
		k->n++;
	}
	*groups = g;
	return c;
}

static void marks_release(struct sweep_marks *m)
{
	size_t i;

	for (i = 0; i < m->nchosen; i++) {
		free(m->cx[i]);
		free(m->cby[i]);
	}
	free(m->cx);
	free(m->cby);
	memset(m, 0, sizeof(*m));
}

/* Adds a horizontal line at v labelled fmt... (ignored beyond PLOT_MAX_LIMITS). */
static void add_limit(struct sweep_marks *m, double v, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static void add_limit(struct sweep_marks *m, double v, const char *fmt, ...)
{
	va_list ap;

	if (m->nlim == PLOT_MAX_LIMITS || !isfinite(v))
		return;
	va_start(ap, fmt);
	vsnprintf(m->limlab[m->nlim], sizeof(m->limlab[m->nlim]), fmt, ap);
	va_end(ap);
	m->lim[m->nlim++] = v;
}

/*
 * The chart name of sweep axis key into buf: its row of DIR/axis_labels.csv
 * (written by the sweep: the file's `label:` or kvsim's default), else
 * kv_sweep_axis_label's (a sweep directory from before the file existed).
 */
static const char *axis_name(const char *dir, const char *key, char *buf, size_t len)
{
	struct csv_in c;

	snprintf(buf, len, "%s", kv_sweep_axis_label(key));
	if (!csv_open(&c, dir, "axis_labels.csv") && csv_next(&c) == 1)
		while (csv_next(&c) == 1)
			if (c.rec.n == 2 && !strcmp(c.rec.field[0], key)) {
				snprintf(buf, len, "%s", c.rec.field[1]);
				break;
			}
	csv_close(&c);
	return buf;
}

/* The chart label of summary.csv column metric, or the name when undocumented. */
static const char *doc_label(const char *metric)
{
	const struct kv_metric_doc *doc = kv_metric_doc("summary.csv", metric);

	return doc ? doc->label : metric;
}

/*
 * The marks of the chart of metric against column xname (by byname, "" for
 * none): from DIR/target.csv (written by a sweep with a target) the
 * conditions on metric and the chosen points; from the first ok point's
 * manifest (DIR/points/KEY/manifest.txt, its slo_lines) the percentile SLO
 * on metric.  Missing files: no marks.
 */
static void read_marks(const char *dir, const char *metric, const char *xname, const char *byname,
		       const char *key, struct sweep_marks *m)
{
	char path[PT_PATH], slo[KV_CHART_MAX_SLO_LINE], *tok, *save, chosen_axis[100] = "", name[128];
	struct csv_in c;
	long xi = -1, bi = -1;

	memset(m, 0, sizeof(*m));
	if (!csv_open(&c, dir, "target.csv") && csv_next(&c) == 1) {
		xi = kv_csv_rec_find(&c.rec, xname);
		bi = byname[0] ? kv_csv_rec_find(&c.rec, byname) : -1;
		while (csv_next(&c) == 1 && c.rec.n >= 4) {
			char **f = c.rec.field;

			if (!strcmp(f[0], "condition") && !strcmp(f[1], metric)) {
				const struct kv_metric_doc *doc = kv_metric_doc("summary.csv", f[1]);

				add_limit(m, strtod(f[3], NULL), "target: %s %s %s%s%s", doc ? doc->label : f[1],
					  f[2], f[3], doc && doc->unit[0] ? " " : "", doc ? doc->unit : "");
			} else if (!strcmp(f[0], "chosen") && xi >= 0 && (size_t)xi < c.rec.n) {
				m->cx = kv_xrealloc(m->cx, (m->nchosen + 1) * sizeof(*m->cx));
				m->cby = kv_xrealloc(m->cby, (m->nchosen + 1) * sizeof(*m->cby));
				m->cx[m->nchosen] = kv_xstrdup(f[xi]);
				m->cby[m->nchosen++] = bi >= 0 && (size_t)bi < c.rec.n ? kv_xstrdup(f[bi]) : NULL;
				snprintf(chosen_axis, sizeof(chosen_axis), "%s", f[1]);
			}
		}
	}
	csv_close(&c);
	if (m->nchosen)
		snprintf(m->chosen_lab, sizeof(m->chosen_lab), "cheapest %s meeting the target",
			 axis_name(dir, chosen_axis, name, sizeof(name)));
	if (!key[0])
		return;
	snprintf(path, sizeof(path), "%s/points/%s", dir, key);
	manifest_value(path, "slo_lines", slo, sizeof(slo));
	for (tok = strtok_r(slo, " ", &save); tok; tok = strtok_r(NULL, " ", &save)) {
		char *eq = strchr(tok, '=');

		if (eq && (size_t)(eq - tok) == strlen(metric) && !strncmp(tok, metric, strlen(metric)))
			add_limit(m, strtod(eq + 1, NULL), "SLO: %s <= %s s", doc_label(metric), eq + 1);
	}
}

static const struct sweep_data *sort_sd; /* qsort's context: x values compared as numbers */

static int cmp_x(const void *a, const void *b)
{
	double x = strtod(sort_sd->x.v[*(const size_t *)a], NULL);
	double y = strtod(sort_sd->x.v[*(const size_t *)b], NULL);

	return (x > y) - (x < y);
}

/*
 * Writes the data file (one block per by value, two blank lines apart: x,
 * mean, min, max, runs per point, sorted by x when numeric, else x is the
 * value's 1-based position) and the variables file of sweep.gp.  Averaging
 * here, not in gnuplot: `smooth unique` over rows where other by values
 * were undefined broke every line into lone points when x was not the
 * sweep's fastest axis.  Returns 0 or -1 when either could not be written.
 */
/* Index of s in set, or SIZE_MAX. */
static size_t strset_find(const struct strset *set, const char *s)
{
	size_t i;

	for (i = 0; i < set->n; i++)
		if (!strcmp(set->v[i], s))
			return i;
	return SIZE_MAX;
}

/* Groups j and k have points at the same x values, every mean equal (relatively, 1e-9). */
static int same_line(const struct cell *c, size_t nx, size_t j, size_t k)
{
	size_t i, shared = 0;

	for (i = 0; i < nx; i++) {
		const struct cell *a = &c[j * nx + i], *b = &c[k * nx + i];
		double ma, mb;

		if (!a->n != !b->n)
			return 0;
		if (!a->n)
			continue;
		ma = a->sum / (double)a->n, mb = b->sum / (double)b->n;
		if (fabs(ma - mb) > 1e-9 * KV_MAX(fabs(ma), fabs(mb)))
			return 0;
		shared++;
	}
	return shared > 0;
}

/*
 * The chart's note on lines (what: "lines" or "bars") that lie on each
 * other (a line drawn over another hides it): "lines 4 and 8 coincide;
 * ..." into buf, "" when none.
 */
static void coincide_note(const struct cell *c, size_t groups, size_t nx, const struct strset *by,
			  const char *what, char *buf, size_t len)
{
	size_t *cls = kv_xcalloc(groups, sizeof(*cls)), j, k, m, n, off = 0;
	unsigned char *seen = kv_xcalloc(groups, 1);

	buf[0] = 0;
	for (j = 0; j < groups && by->n > 1; j++) {
		if (seen[j])
			continue;
		for (n = 0, cls[n++] = j, k = j + 1; k < groups; k++)
			if (!seen[k] && same_line(c, nx, j, k))
				cls[n++] = k, seen[k] = 1;
		for (m = 0; n > 1 && m < n && off < len; m++)
			off += (size_t)snprintf(buf + off, len - off, "%s%s%s%s%s",
						!m && off ? "; " : "", !m ? what : "",
						!m ? " " : m + 1 < n ? ", " : " and ", by->v[cls[m]],
						m + 1 == n ? " coincide (equal at every point)" : "");
	}
	free(seen);
	free(cls);
}

static int write_gp_inputs(const char *vars_path, const char *data_path,
			   const struct sweep_vars *v, const struct sweep_data *sd,
			   const struct sweep_marks *m)
{
	FILE *f = fopen(data_path, "w"), *g;
	size_t groups, i, j, *order = kv_xcalloc(sd->x.n ? sd->x.n : 1, sizeof(*order));
	struct cell *c = aggregate(sd, &groups);
	double lo = INFINITY, hi = -INFINITY;
	size_t nmin = SIZE_MAX, nmax = 0, nmark = 0, *count = kv_xcalloc(groups, sizeof(*count));
	int bad, yint = 1, xint = sd->numeric;
	char conote[400];

	for (i = 0; i < sd->x.n; i++)
		order[i] = i;
	sort_sd = sd;
	if (sd->numeric)
		qsort(order, sd->x.n, sizeof(*order), cmp_x);
	if (!f) {
		free(order), free(c), free(count);
		return -1;
	}
	for (i = 0; i < sd->x.n; i++)
		xint &= strtod(sd->x.v[i], NULL) == floor(strtod(sd->x.v[i], NULL));
	coincide_note(c, groups, sd->x.n, &sd->by, sd->numeric ? "lines" : "bars", conote,
		      sizeof(conote));
	for (j = 0; j < groups; j++) {
		int any = 0;

		for (i = 0; i < sd->x.n; i++) {
			const struct cell *k = &c[j * sd->x.n + order[i]];

			if (!k->n)
				continue;
			if (sd->numeric)
				fprintf(f, "%s", sd->x.v[order[i]]);
			else
				fprintf(f, "%zu", order[i] + 1);
			fprintf(f, " %.17g %.17g %.17g %zu\n", k->sum / (double)k->n, k->min, k->max, k->n);
			lo = KV_MIN(lo, k->min), hi = KV_MAX(hi, k->max);
			nmin = KV_MIN(nmin, k->n), nmax = KV_MAX(nmax, k->n);
			yint &= k->sum / (double)k->n == floor(k->sum / (double)k->n);
			count[j]++;
			any = 1;
		}
		if (!any)
			fputs("NaN NaN NaN NaN 0\n", f); /* a by value with no ok point: an empty line */
		fputs("\n\n", f);
	}
	for (i = 0; i < m->nchosen; i++) { /* the chosen points: the last block, x and the mean */
		size_t xi = strset_find(&sd->x, m->cx[i]);
		size_t bi = m->cby[i] ? strset_find(&sd->by, m->cby[i]) : 0;
		const struct cell *k;

		if (xi == SIZE_MAX || bi == SIZE_MAX || bi >= groups || !(k = &c[bi * sd->x.n + xi])->n)
			continue;
		if (sd->numeric)
			fprintf(f, "%s", sd->x.v[xi]);
		else
			fprintf(f, "%.17g", (double)(xi + 1) - 0.4 + 0.8 / (double)groups * ((double)bi + 0.5));
		fprintf(f, " %.17g\n", k->sum / (double)k->n);
		nmark++;
	}
	if (!nmark)
		fputs("NaN NaN\n", f);
	for (i = 0; i < m->nlim; i++)
		if (m->lim[i] > 0 || !v->logy)
			lo = KV_MIN(lo, m->lim[i]), hi = KV_MAX(hi, m->lim[i]);
	free(order);
	free(c);
	bad = ferror(f) | fclose(f);
	if (!(g = fopen(vars_path, "w"))) {
		free(count);
		return -1;
	}
	fprintf(g, "svg = %d\nnumeric = %d\nlogy = %d\nnx = %zu\nnby = %zu\nspread = %d\n"
		"xint = %d\nyint = %d\n", v->svg, sd->numeric, v->logy && lo > 0, sd->x.n, sd->by.n,
		nmax > 1, xint, yint && isfinite(lo));
	fprintf(g, "array bycount[%zu]\n", groups);
	for (j = 0; j < groups; j++) /* 0: a by value with no point, kept out of the legend */
		fprintf(g, "bycount[%zu] = %zu\n", j + 1, count[j]);
	fputs("xlabel = ", g), gp_str(g, v->xlabel);
	fputs("\nbylabel = ", g), gp_str(g, v->bylabel);
	fputs("\nsetup = ", g), gp_str(g, v->setup);
	fputs("\nconote = ", g), gp_str(g, conote);
	putc('\n', g);
	fputs("file = ", g), gp_str(g, v->data);
	fputs("\nout = ", g), gp_str(g, v->out);
	fputs("\ntitle = ", g), gp_str(g, v->title);
	fputs("\nxname = ", g), gp_str(g, v->xname);
	fputs("\nyname = ", g), gp_str(g, v->metric);
	fputs("\nylabel = ", g), gp_str(g, v->ylabel);
	fputs("\nbyname = ", g), gp_str(g, v->byname);
	fputs("\nnote = ", g);
	if (nmax > 1) {
		char note[160];

		if (nmin == nmax)
			snprintf(note, sizeof(note), "each point: the mean of %zu runs (seeds and axes not shown); bars: their min to max", nmax);
		else
			snprintf(note, sizeof(note), "each point: the mean of %zu to %zu runs (seeds and axes not shown); bars: their min to max", nmin, nmax);
		gp_str(g, note);
	} else {
		gp_str(g, "");
	}
	putc('\n', g);
	gp_array(g, "xlab", &sd->x);
	gp_array(g, "bylab", &sd->by);
	fprintf(g, "nlim = %zu\narray lim[%zu]\narray limlab[%zu]\n", m->nlim,
		m->nlim ? m->nlim : 1, m->nlim ? m->nlim : 1);
	for (i = 0; i < m->nlim; i++) {
		fprintf(g, "lim[%zu] = %.17g\nlimlab[%zu] = ", i + 1, m->lim[i], i + 1);
		gp_str(g, m->limlab[i]);
		putc('\n', g);
	}
	fprintf(g, "nmark = %zu\nmarklab = ", nmark);
	gp_str(g, m->chosen_lab);
	/* the y range holds the limits: gnuplot autoscales on the data only */
	fprintf(g, "\nylo = %.17g\nyhi = %.17g\n", lo, hi);
	if (v->logy && lo > 0 && sd->numeric) { /* bars keep a linear axis from 0 */
		kv_gp_log_tics(g, "y", lo, hi);
		putc('\n', g);
	}
	bad |= ferror(g) | fclose(g);
	free(count);
	return bad ? -1 : 0;
}

/*
 * Runs plots/sweep.gp once per format.  The rejected alternative, gnuplot
 * reading sweep.csv itself: gnuplot 5.4's strcol() cuts a quoted field at
 * its first comma, so axis values such as `[1, 2]` or flow mappings never
 * matched their labels; kvsim reads sweep.csv (csv.h) and hands gnuplot
 * numbers and, in a variables file, the labels as gnuplot strings.
 */
static int render_sweep(const char *dir, struct sweep_vars *v, const struct sweep_data *sd,
			const struct sweep_marks *m, int quiet)
{
	char *script = kv_xasprintf("%s/plots/sweep.gp", KV_SOURCE_DIR);
	char *data_rel = kv_xasprintf(".sweep-%s.dat.tmp", v->metric);
	char *vars_rel = kv_xasprintf(".sweep-%s.gp.tmp", v->metric);
	char *data = kv_xasprintf("%s/%s", dir, data_rel), *vars = kv_xasprintf("%s/%s", dir, vars_rel);
	char *qvars = kv_gp_quote(vars_rel), *load = kv_xasprintf("load %s", qvars);
	int st = 0;

	v->data = data_rel; /* gnuplot runs in dir */
	v->out = ""; /* kv_gnuplot sets out after the variables file */
	for (v->svg = 0; v->svg <= 1 && !st; v->svg++) {
		char *name = kv_xasprintf("sweep-%s.%s", v->metric, v->svg ? "svg" : "png");

		if (write_gp_inputs(vars, data, v, sd, m)) {
			fprintf(stderr, "kvsim: %s: cannot write gnuplot's inputs: %s; no chart written\n",
				dir, strerror(errno));
			st = KV_EIO;
		} else {
			st = kv_gnuplot(dir, script, load, name);
		}
		if (!st)
			st = add_to_manifest(dir, name) ? KV_EIO : 0;
		free(name);
	}
	unlink(data);
	unlink(vars);
	free(script);
	free(data_rel);
	free(vars_rel);
	free(data);
	free(vars);
	free(qvars);
	free(load);
	if (st == 1)
		return 0; /* gnuplot absent: a note, not an error */
	if (st)
		return 1;
	if (!quiet)
		printf("charts in %s/sweep-%s.png and .svg\n", dir, v->metric);
	return 0;
}

/* The setup of the sweep's ok points (their manifests' `setup` lines) merged into buf. */
static void sweep_setup(const char *dir, const struct strset *keys, char *buf, size_t len)
{
	char path[PT_PATH], **lines = kv_xcalloc(keys->n ? keys->n : 1, sizeof(*lines));
	size_t k;

	for (k = 0; k < keys->n; k++) {
		lines[k] = kv_xmalloc(512);
		snprintf(path, sizeof(path), "%s/points/%s", dir, keys->v[k]);
		manifest_value(path, "setup", lines[k], 512);
	}
	kv_chart_merge_setups((const char *const *)lines, keys->n, buf, len);
	for (k = 0; k < keys->n; k++)
		free(lines[k]);
	free(lines);
}

int kv_plot_sweep(const char *dir, const char *title, const char *metric, const char *x,
		  const char *by, int quiet)
{
	char ylabel[300], full_title[600], xlabel[160], bylabel[160], setup[600];
	struct sweep_csv c;
	struct sweep_data sd;
	struct sweep_vars v = { 0 };
	struct sweep_marks marks;
	const struct kv_metric_doc *doc;
	int xcol, ycol, bycol = 0, rc;
	size_t i;

	if (sweep_read_header(dir, &c) || c.n_axes == 0) {
		fprintf(stderr, "kvsim: plot: %s/sweep.csv: not a sweep.csv with axes\n", dir);
		kv_csv_rec_release(&c.hdr);
		return 2;
	}
	ycol = col_of(&c, metric);
	xcol = x ? col_of(&c, x) : 3 + c.n_axes - 1; /* default: the last (fastest) axis */
	if (by)
		bycol = col_of(&c, by);
	else if (c.n_axes > 1)
		bycol = 3 + (xcol == 3); /* default: the first axis other than x */
	if (!ycol || ycol <= 2 + c.n_axes + 4) {
		fprintf(stderr, "kvsim: plot: %s/sweep.csv: unknown metric '%s'", dir, metric);
		list_metrics(&c, stderr);
		kv_csv_rec_release(&c.hdr);
		return 2;
	}
	if (!xcol || (by && !bycol) || xcol == bycol || !col_of(&c, "status")) {
		fprintf(stderr, "kvsim: plot: %s/sweep.csv: unknown or repeated axis (x '%s', by '%s'): expected two different columns of:",
			dir, x ? x : c.hdr.field[xcol ? xcol - 1 : 0], by ? by : "");
		for (i = 2; i < 2 + (size_t)c.n_axes; i++)
			fprintf(stderr, " %s", c.hdr.field[i]);
		fputc('\n', stderr);
		kv_csv_rec_release(&c.hdr);
		return 2;
	}
	if (sweep_read_rows(dir, xcol, bycol, ycol, col_of(&c, "status"), &sd)) {
		kv_csv_rec_release(&c.hdr);
		sweep_data_release(&sd);
		return 2;
	}
	kv_metric_axis_label("summary.csv", metric, ylabel, sizeof(ylabel));
	doc = kv_metric_doc("summary.csv", metric);
	axis_name(dir, c.hdr.field[xcol - 1], xlabel, sizeof(xlabel));
	if (bycol)
		axis_name(dir, c.hdr.field[bycol - 1], bylabel, sizeof(bylabel));
	sweep_setup(dir, &sd.keys, setup, sizeof(setup));
	snprintf(full_title, sizeof(full_title), "%s%s: %s against %s",
		 strncmp(title, "sweep", 5) ? "sweep " : "", title, /* not "sweep sweep-slo" */
		 doc ? doc->label : metric, xlabel);
	v = (struct sweep_vars){ .title = full_title, .metric = metric, .ylabel = ylabel,
				 .xname = c.hdr.field[xcol - 1],
				 .byname = bycol ? c.hdr.field[bycol - 1] : "",
				 .xlabel = xlabel, .bylabel = bycol ? bylabel : "", .setup = setup,
				 .logy = doc && !strcmp(doc->unit, "s") };
	read_marks(dir, metric, v.xname, v.byname, sd.key, &marks);
	rc = render_sweep(dir, &v, &sd, &marks, quiet);
	marks_release(&marks);
	sweep_data_release(&sd);
	kv_csv_rec_release(&c.hdr);
	return rc;
}

/* Renders the charts of a run or sweep directory; returns the exit status. */
static int plot_dir(const char *dir, const char *metric, const char *x, const char *by)
{
	char title[256], names[2048], path[PT_PATH], setup[512] = "", slo[KV_CHART_MAX_SLO_LINE];
	struct kv_chart_run run;
	unsigned replicas, tenants;
	int rc, svg;

	snprintf(path, sizeof(path), "%s/sweep.csv", dir);
	if (access(path, R_OK) == 0) {
		char *name = kv_xstrdup(dir);

		rc = kv_plot_sweep(dir, basename(name), metric, x, by, 0);
		free(name);
		return rc;
	}
	if (!first_field(dir, "summary.csv", title, sizeof(title))) {
		fprintf(stderr, "kvsim: plot: %s: expected a run directory (summary.csv, timeseries.csv) or a sweep directory (sweep.csv)\n", dir);
		return 2;
	}
	if (!(replicas = count_replicas(dir))) {
		fprintf(stderr, "kvsim: plot: %s/timeseries.csv: no samples (the run's outputs.sample_interval was 0): "
				"nothing to chart; rerun with a sample interval\n", dir);
		return 2;
	}
	tenants = tenant_names(dir, names, sizeof(names));
	snprintf(path, sizeof(path), "%s/requests.csv", dir);
	run = (struct kv_chart_run){ .dir = dir, .title = title, .setup = setup,
				     .replicas = replicas, .tenants = tenants, .tenant_names = names,
				     .pool_bytes = summary_u64(dir, "kv_pool_bytes"),
				     .with_requests = access(path, R_OK) == 0 };
	manifest_value(dir, "setup", setup, sizeof(setup));
	manifest_value(dir, "slo_lines", slo, sizeof(slo));
	kv_chart_parse_slo(&run, slo);
	run.svg = 2; /* both formats from one reading of the CSVs */
	rc = kv_chart_run(&run);
	if (rc == 1)
		return 0; /* gnuplot absent: a note */
	for (svg = 0; svg <= 1; svg++) {
		snprintf(path, sizeof(path), "%s/run.%s", dir, svg ? "svg" : "png");
		if (access(path, F_OK) == 0 && add_to_manifest(dir, svg ? "run.svg" : "run.png"))
			rc = 1;
	}
	if (rc)
		return 1;
	printf("charts in %s/run.png and %s/run.svg\n", dir, dir);
	return 0;
}

static const char *const plot_synopsis[] = { "[options] DIR", NULL };

static const char plot_desc[] =
	"A run directory: renders DIR/run.png and DIR/run.svg from its CSVs, the\n"
	"setup in the title: latency CDFs (TTFT, TPOT, E2E), KV memory reserved and\n"
	"live against the pool's capacity, waiting and running requests per replica\n"
	"(min/median/max beyond 8 replicas); with several tenants, per-tenant latency\n"
	"CDFs, weighted service and waiting requests.  Long runs are binned (stated).\n"
	"A sweep directory (with sweep.csv): renders DIR/sweep-METRIC.png and .svg:\n"
	"the metric against the x axis, one line per value of the --by axis, each\n"
	"point the mean over seeds and the remaining axes with min-max bars; bars\n"
	"when x is not numeric.  Needs gnuplot.\n";

int kv_cmd_plot(int argc, char **argv)
{
	const char *dir = NULL, *metric = "ttft_p99_s", *x = NULL, *by = NULL;
	const struct kv_cli_opt opts[] = {
		{ .name = "metric", .kind = KV_CLI_STR, .dst = &metric, .max = 200, .arg = "NAME",
		  .help = "sweep: the summary column to plot (default ttft_p99_s;\n"
			  "`kvsim list metrics`)" },
		{ .name = "x", .kind = KV_CLI_STR, .dst = &x, .max = 200, .arg = "AXIS",
		  .help = "sweep: the x axis (default: the sweep's last axis)" },
		{ .name = "by", .kind = KV_CLI_STR, .dst = &by, .max = 200, .arg = "AXIS",
		  .help = "sweep: one line per value of this axis (default: the\n"
			  "first other axis)" },
		{ .name = NULL },
	};
	const struct kv_cli_cmd cmd = { .name = "plot", .synopsis = plot_synopsis, .desc = plot_desc,
					.positional = "run or sweep directory" };
	struct kv_diag d;
	int rc, lock;

	if ((rc = kv_cli_parse(&cmd, opts, argc, argv, &dir)))
		return rc < 0 ? 0 : rc;
	if (strlen(dir) + 64 >= KV_PATH_MAX) {
		fprintf(stderr, "kvsim: plot: %s: path of %zu bytes is too long: expected at most %d bytes\n",
			dir, strlen(dir), KV_PATH_MAX - 65);
		return 2;
	}
	if ((lock = kv_path_lock(dir, &d)) < 0) {
		kv_diag_print(&d, stderr);
		return 1;
	}
	rc = plot_dir(dir, metric, x, by);
	close(lock);
	return rc;
}
