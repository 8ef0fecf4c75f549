/*
 * cmd_plot.c -- `kvsim plot DIR`: renders the charts of a run directory
 * (run.png and run.svg) from its CSVs, without the user writing gnuplot.
 */
#include "commands.h"
#include "output.h"

#include <libgen.h>
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

/* Reads the first field of the second line of DIR/name into buf (the workload name). */
static int first_field(const char *dir, const char *name, char *buf, size_t len)
{
	char path[PT_PATH], line[4096];
	FILE *f;
	int ok = 0;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	f = fopen(path, "r");
	if (!f)
		return 0;
	if (fgets(line, sizeof(line), f) && fgets(line, sizeof(line), f)) {
		size_t n = strcspn(line, ",\n");

		n = n < len - 1 ? n : len - 1;
		memcpy(buf, line, n);
		buf[n] = 0;
		ok = 1;
	}
	fclose(f);
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
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "%*[^,],%u", &r) == 1 && r + 1 > n)
			n = r + 1;
	fclose(f);
	return n;
}

/* Tenant names from tenants.csv, space-separated (spaces inside a name as '_'). */
static unsigned tenant_names(const char *dir, char *buf, size_t len)
{
	char path[PT_PATH], line[1024];
	unsigned n = 0;
	size_t off = 0;
	FILE *f;

	buf[0] = 0;
	snprintf(path, sizeof(path), "%s/tenants.csv", dir);
	if (!(f = fopen(path, "r")))
		return 0;
	if (fgets(line, sizeof(line), f)) {
		while (fgets(line, sizeof(line), f) && off + 2 < len) {
			char *c;

			line[strcspn(line, ",\n")] = 0;
			for (c = line; *c; c++)
				if (*c == ' ')
					*c = '_';
			off += (size_t)snprintf(buf + off, len - off, "%s%s", n ? " " : "", line);
			n++;
		}
	}
	fclose(f);
	return n;
}

/* --- sweeps ------------------------------------------------------------------ */

#define MAX_COLS 128

struct sweep_csv {
	char header[8192]; /* the header line, fields NUL-separated in place */
	char *col[MAX_COLS]; /* column names */
	int n_cols;
	int n_axes; /* axis columns: 3 .. 2 + n_axes (1-based; point, key first) */
};

static int sweep_read_header(const char *path, struct sweep_csv *c)
{
	FILE *f = fopen(path, "r");
	char *p;

	memset(c, 0, sizeof(*c));
	if (!f)
		return -1;
	if (!fgets(c->header, sizeof(c->header), f)) {
		fclose(f);
		return -1;
	}
	fclose(f);
	c->header[strcspn(c->header, "\r\n")] = 0;
	for (p = c->header; p && c->n_cols < MAX_COLS;) {
		c->col[c->n_cols++] = p;
		p = strchr(p, ',');
		if (p)
			*p++ = 0;
	}
	while (2 + c->n_axes < c->n_cols && strcmp(c->col[2 + c->n_axes], "seed"))
		c->n_axes++;
	return c->n_cols > 7 ? 0 : -1;
}

/* 1-based column of name, or 0. */
static int col_of(const struct sweep_csv *c, const char *name)
{
	int i;

	for (i = 0; i < c->n_cols; i++)
		if (!strcmp(c->col[i], name))
			return i + 1;
	return 0;
}

/*
 * The distinct values of a column, space-separated, in first-seen order,
 * into buf; sets *numeric when every value parses as a number.
 */
static void distinct(const char *path, int col, char *buf, size_t len, int *numeric)
{
	char line[16384];
	FILE *f = fopen(path, "r");
	size_t off = 0;

	buf[0] = 0;
	*numeric = 1;
	if (!f)
		return;
	if (!fgets(line, sizeof(line), f)) {
		fclose(f);
		return;
	}
	while (fgets(line, sizeof(line), f)) {
		char *p = line, *v = NULL, *end;
		int i;

		for (i = 1; p && i <= col; i++) {
			v = p;
			p = strchr(p, ',');
			if (p)
				*p++ = 0;
		}
		if (!v || i <= col)
			continue;
		v[strcspn(v, "\r\n")] = 0;
		strtod(v, &end);
		if (!*v || *end)
			*numeric = 0;
		if (!strstr(buf, v) && off + strlen(v) + 2 < len)
			off += (size_t)snprintf(buf + off, len - off, "%s%s", off ? " " : "", v);
	}
	fclose(f);
}

/* The unit of a summary column, from its name's suffix. */
static const char *unit_of(const char *metric)
{
	size_t n = strlen(metric);
	static const struct {
		const char *suffix, *unit;
	} u[] = { { "_tok_s", "tokens/s" }, { "_per_s", "per s" }, { "_bytes", "bytes" },
		  { "_util", "share of the pool" }, { "_share", "share" }, { "_s", "s" } };
	size_t i;

	for (i = 0; i < KV_ARRAY_LEN(u); i++) {
		size_t k = strlen(u[i].suffix);

		if (n > k && !strcmp(metric + n - k, u[i].suffix))
			return u[i].unit;
	}
	return "";
}

int kv_plot_sweep(const char *dir, const char *title, const char *metric, const char *x,
		  const char *by, int quiet)
{
	char ylabel[300];
	char path[PT_PATH], script[1100], byvals[4096], xv[4096];
	struct sweep_csv c;
	int xcol, ycol, bycol = 0, numeric, dummy, svg, st;

	snprintf(path, sizeof(path), "%s/sweep.csv", dir);
	if (sweep_read_header(path, &c) || c.n_axes == 0) {
		fprintf(stderr, "kvsim: plot: %s: not a sweep.csv with axes\n", path);
		return 2;
	}
	ycol = col_of(&c, metric);
	xcol = x ? col_of(&c, x) : 3 + c.n_axes - 1; /* default: the last (fastest) axis */
	if (by)
		bycol = col_of(&c, by);
	else if (c.n_axes > 1)
		bycol = 3; /* default: the first axis */
	if (!ycol || !xcol || (by && !bycol) || xcol == bycol) {
		fprintf(stderr, "kvsim: plot: %s: unknown or repeated column (metric '%s', x '%s', by '%s')\n",
			path, metric, x ? x : c.col[xcol ? xcol - 1 : 0], by ? by : "");
		return 2;
	}
	snprintf(ylabel, sizeof(ylabel), "%s%s%s%s", metric, *unit_of(metric) ? " (" : "",
		 unit_of(metric), *unit_of(metric) ? ")" : "");
	distinct(path, xcol, xv, sizeof(xv), &numeric);
	if (bycol)
		distinct(path, bycol, byvals, sizeof(byvals), &dummy);
	else
		byvals[0] = 0;
	snprintf(script, sizeof(script), "%s/plots/sweep.gp", KV_SOURCE_DIR);
	for (svg = 0; svg <= 1; svg++) {
		char *t = kv_xasprintf("%s: %s", title, metric), *q[7], *defs, *name;
		const char *str[7] = { t, c.col[xcol - 1], metric, ylabel, byvals,
				       bycol ? c.col[bycol - 1] : "", xv };
		int k;

		for (k = 0; k < 7; k++)
			q[k] = kv_gp_quote(str[k]);
		defs = kv_xasprintf("file='sweep.csv'; svg=%d; title=%s; xcol=%d; ycol=%d; bycol=%d; "
				    "xname=%s; yname=%s; ylabel=%s; byvals=%s; byname=%s; xvals=%s; "
				    "numeric=%d; logy=%d; statcol=%d",
				    svg, q[0], xcol, ycol, bycol, q[1], q[2], q[3], q[4], q[5], q[6],
				    numeric, !strcmp(unit_of(metric), "s"), col_of(&c, "status"));
		name = kv_xasprintf("sweep-%s.%s", metric, svg ? "svg" : "png");
		st = kv_gnuplot(dir, script, defs, name);
		if (!st)
			st = add_to_manifest(dir, name);
		for (k = 0; k < 7; k++)
			free(q[k]);
		free(t);
		free(defs);
		free(name);
		if (st == 1)
			return 0; /* gnuplot absent: a note, not an error */
		if (st)
			return 1;
	}
	if (!quiet)
		printf("charts in %s/sweep-%s.png and .svg\n", dir, metric);
	return 0;
}

/* Renders the charts of a run or sweep directory; returns the exit status. */
static int plot_dir(const char *dir, const char *metric, const char *x, const char *by)
{
	char title[256], names[2048], path[PT_PATH];
	unsigned replicas, tenants;
	int rc, svg;

	snprintf(path, sizeof(path), "%s/sweep.csv", dir);
	if (access(path, R_OK) == 0) {
		char *name = kv_xstrdup(dir);

		rc = kv_plot_sweep(dir, basename(name), metric, x, by, 0);
		free(name);
		return rc;
	}
	if (!first_field(dir, "summary.csv", title, sizeof(title)) ||
	    !(replicas = count_replicas(dir))) {
		fprintf(stderr, "kvsim: plot: %s: expected a run directory (summary.csv, timeseries.csv) or a sweep directory (sweep.csv)\n", dir);
		return 2;
	}
	tenants = tenant_names(dir, names, sizeof(names));
	snprintf(path, sizeof(path), "%s/requests.csv", dir);
	for (svg = 0; svg <= 1; svg++) {
		rc = kv_plot_run(dir, title, replicas, tenants, names, access(path, R_OK) == 0, svg);
		if (!rc)
			rc = add_to_manifest(dir, svg ? "run.svg" : "run.png");
		if (rc)
			return rc == 1 && !svg ? 0 : 1; /* 1 first: gnuplot absent, a note */
	}
	printf("charts in %s/run.png and %s/run.svg\n", dir, dir);
	return 0;
}

int kv_cmd_plot(int argc, char **argv)
{
	const char *dir = NULL, *metric = "ttft_p99_s", *x = NULL, *by = NULL;
	struct kv_diag d;
	int i, rc, lock;

	for (i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
			dir = NULL;
			break;
		} else if (!strcmp(argv[i], "--metric") && i + 1 < argc) {
			metric = argv[++i];
		} else if (!strcmp(argv[i], "--x") && i + 1 < argc) {
			x = argv[++i];
		} else if (!strcmp(argv[i], "--by") && i + 1 < argc) {
			by = argv[++i];
		} else if (argv[i][0] != '-' && !dir) {
			dir = argv[i];
		} else {
			fprintf(stderr, "kvsim: plot: unexpected argument '%s'\n", argv[i]);
			return 2;
		}
	}
	if (!dir) {
		int help = argc > 1 && (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h"));

		fputs("usage: kvsim plot DIR [--metric NAME] [--x AXIS] [--by AXIS]\n\n"
		      "A run directory: renders DIR/run.png and DIR/run.svg from its CSVs: latency\n"
		      "CDFs (TTFT, TPOT, E2E), KV memory reserved and live, waiting and running\n"
		      "requests per replica, weighted service and waiting requests per tenant.\n"
		      "A sweep directory (with sweep.csv): renders DIR/sweep-METRIC.png and .svg:\n"
		      "the metric (a summary column, default ttft_p99_s) against the x axis\n"
		      "(default: the sweep's last axis), one line per value of the --by axis\n"
		      "(default: its first), averaged over seeds; bars when x is not numeric.\n"
		      "Needs gnuplot.\n", help ? stdout : stderr);
		return help ? 0 : 2;
	}
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
