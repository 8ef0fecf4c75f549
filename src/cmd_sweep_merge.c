/* cmd_sweep_merge.c -- `kvsim sweep-merge`: join the sweep.csv files of shards; see sweep.h. */
#include "sweep.h"
#include "opts.h"
#include "status.h"

#if KV_HAVE_MPI
#include <mpi.h>
#endif

#if KV_HAVE_MPI
#include <mpi.h>
#endif
#include "lib/cfg.h"
#include "lib/csv.h"
#include "lib/output.h"
#include "lib/workload.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <signal.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* --- kvsim sweep-merge --------------------------------------------------- */

/* One row of a shard's sweep.csv. */
struct mrow {
	unsigned long long index; /* point index (first column) */
	char key[17]; /* second column */
	char *line; /* the whole line with its newline */
	size_t order; /* input order, for a stable sort */
};

static int cmp_row(const void *x, const void *y)
{
	const struct mrow *a = x, *b = y;

	if (a->index != b->index)
		return a->index < b->index ? -1 : 1;
	return a->order < b->order ? -1 : a->order > b->order;
}

static int cmp_key(const void *x, const void *y)
{
	const struct mrow *a = x, *b = y;
	int c = strcmp(a->key, b->key);

	return c ? c : (a->order < b->order ? -1 : a->order > b->order);
}

static const char *const merge_synopsis[] = { "OUT_DIR DIR...", NULL };

static const char merge_desc[] =
	"Merges the sweep.csv files of the shards DIR... (`kvsim sweep --shard I/N`)\n"
	"into OUT_DIR/sweep.csv: the same header is required, rows are ordered by\n"
	"point index, a point (key) present in several inputs is kept once.\n";

/* A copy of text[from, to) ending with a newline. */
static char *line_dup(const char *text, size_t from, size_t to)
{
	size_t n = to - from;
	char *l = kv_xmalloc(n + 2);

	memcpy(l, text + from, n);
	if (!n || l[n - 1] != '\n')
		l[n++] = '\n';
	l[n] = 0;
	return l;
}

/* Fills m from record r (point index, key) and its text; 0, or 2 with a message. */
static int merge_row(struct mrow *m, const struct kv_csv_rec *r, size_t n_cols, const char *path)
{
	char *end;

	m->index = strtoull(r->field[0], &end, 10);
	if (r->n != n_cols || end == r->field[0] || *end || strlen(r->field[1]) != 16) {
		fprintf(stderr, "kvsim: %s:%lu: bad row: %zu fields (the header has %zu), point '%.20s', key '%.20s'\n",
			path, r->line, r->n, n_cols, r->field[0], r->n > 1 ? r->field[1] : "");
		return 2;
	}
	memcpy(m->key, r->field[1], 17);
	return 0;
}

/*
 * Appends the rows of dir/sweep.csv to *rows (each with its text as read);
 * checks its header against *header.  Rows are read as CSV records (csv.h),
 * so a quoted axis value with commas is one field.
 */
static int merge_read(const char *dir, char **header, struct mrow **rows, size_t *n)
{
	char path[PT_PATH], *text;
	struct kv_csv_rec r;
	struct kv_diag d = { 0 };
	unsigned long line = 1;
	size_t len, pos = 0, start, n_cols;
	int rc;

	snprintf(path, sizeof(path), "%s/sweep.csv", dir);
	text = kv__sweep_slurp(path, &len);
	if (!text) {
		fprintf(stderr, "kvsim: %s: cannot read: %s\n", path, strerror(errno));
		return 2;
	}
	kv_csv_rec_init(&r);
	rc = kv_csv_rec_parse(&r, text, len, &pos, &line, path, &d);
	if (rc != 1 || r.n < 2) {
		if (rc < 0)
			kv_diag_print(&d, stderr);
		else
			fprintf(stderr, "kvsim: %s:1: expected a header line\n", path);
		rc = 2;
		goto out;
	}
	n_cols = r.n;
	text[pos - (text[pos - 1] == '\n')] = 0; /* the header without its newline */
	if (!*header) {
		*header = kv_xstrdup(text);
	} else if (strcmp(*header, text)) {
		fprintf(stderr, "kvsim: %s:1: header differs from the first input's\n", path);
		rc = 2;
		goto out;
	}
	for (start = pos; (rc = kv_csv_rec_parse(&r, text, len, &pos, &line, path, &d)) == 1;
	     start = pos) {
		struct mrow *m;

		*rows = kv_xrealloc(*rows, (*n + 1) * sizeof(**rows));
		m = &(*rows)[*n];
		if ((rc = merge_row(m, &r, n_cols, path)))
			goto out;
		m->line = line_dup(text, start, pos);
		m->order = (*n)++;
	}
	if (rc < 0)
		kv_diag_print(&d, stderr);
	rc = rc < 0 ? 2 : 0;
out:
	kv_csv_rec_release(&r);
	free(text);
	return rc;
}

/* Drops the later copies of each key; returns the new count (rows stay in key order). */
static size_t merge_dedup(struct mrow *rows, size_t n)
{
	size_t i, k = 0;

	qsort(rows, n, sizeof(*rows), cmp_key);
	for (i = 0; i < n; i++) {
		if (k && !strcmp(rows[k - 1].key, rows[i].key)) {
			free(rows[i].line);
			continue;
		}
		rows[k++] = rows[i];
	}
	return k;
}

int kv_cmd_sweep_merge(int argc, char **argv)
{
	struct mrow *rows = NULL;
	struct sbuf b = { 0 };
	char *header = NULL, *text;
	size_t n = 0, i;
	int rc = 0, k;

	static const struct kv_cli_opt opts[] = { { .name = NULL } };
	static const struct kv_cli_cmd cmd = {
		.name = "sweep-merge", .synopsis = merge_synopsis, .desc = merge_desc,
		.notes = "exit status: 0 merged, 1 output error, 2 bad input or usage\n",
		.positional = "directories (OUT_DIR, then the shards' DIRs)", .min_operands = 2,
		.max_operands = -1,
	};

	if ((rc = kv_cli_parse(&cmd, opts, argc, argv, NULL)))
		return rc < 0 ? 0 : rc;
	argc -= optind - 1; /* the operands: argv[optind..argc) as argv[1..] */
	argv += optind - 1;
	for (k = 2; k < argc && !rc; k++)
		rc = merge_read(argv[k], &header, &rows, &n);
	if (!rc) {
		n = merge_dedup(rows, n);
		qsort(rows, n, sizeof(*rows), cmp_row);
		kv__sweep_sb_puts(&b, header);
		kv__sweep_sb_puts(&b, "\n");
		for (i = 0; i < n; i++)
			kv__sweep_sb_puts(&b, rows[i].line);
		text = kv__sweep_sb_take(&b);
		if (kv_mkdirs(argv[1])) {
			fprintf(stderr, "kvsim: %s: cannot create: %s\n", argv[1], strerror(errno));
			rc = 1;
		} else {
			rc = kv__sweep_write_atomic(argv[1], text) ? 1 : 0;
		}
		free(text);
	}
	for (i = 0; i < n; i++)
		free(rows[i].line);
	free(rows);
	free(header);
	return rc;
}
