/*
 * cmd_sweep.c -- `kvsim sweep`: run a base workload over a grid of --set
 * overrides in parallel worker processes, and `kvsim sweep-merge`: join
 * the sweep.csv files of shards.
 *
 * A sweep file (docs/sweeps.md) names a base workload, axes (a cartesian
 * product, first axis slowest), zip groups (axes that vary together, one
 * more dimension each) and seeds (fastest).  Every point is one run of the
 * base workload with its overrides, exactly as `kvsim run -q --seed S
 * --set k=v...` would do it, in a forked child, into DIR/points/<key>/ where
 * key is the FNV-1a hash (with splitmix64's finaliser) of the base file's bytes, the sorted overrides and
 * the seed: a rerun finds a finished point (its summary.csv exists) and does
 * not run it again.  The parent keeps -j children busy and writes
 * DIR/sweep.csv (temporary file + rename) with one row per finished point
 * in point order, so the file does not depend on -j or on the order in which
 * children finish.  Invariant: sweep.csv holds only whole rows of points
 * whose run ended (ok or error); an interrupted point has no row.
 */
#include "commands.h"
#include "opts.h"
#include "status.h"

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

/* Room for any path under the output directory, whose length is checked once against KV_PATH_MAX. */
#define PT_DIR (KV_PATH_MAX + 32) /* a point's directory */
#define PT_PATH (PT_DIR + 32) /* a file in it */
/* The longest suffix a sweep adds to its directory: "/points/KEY/tenant_timeseries.csv" and so on. */
#define SWEEP_SUFFIX_MAX 64

#define SWEEP_MAX_AXES 64 /* axes plus zipped axes */
#define SWEEP_MAX_SETS 200 /* overrides of one point (kvsim run takes 256) */
#define SWEEP_MAX_POINTS 1000000

/* --- growable string ----------------------------------------------------- */

struct sbuf {
	char *s; /* NUL-terminated text, NULL when empty */
	size_t len, cap; /* length and capacity in bytes */
};

static void sb_putn(struct sbuf *b, const char *p, size_t n)
{
	if (b->len + n + 1 > b->cap) {
		b->cap = (b->len + n + 1) * 2;
		b->s = kv_xrealloc(b->s, b->cap);
	}
	memcpy(b->s + b->len, p, n);
	b->len += n;
	b->s[b->len] = 0;
}

static void sb_puts(struct sbuf *b, const char *s)
{
	sb_putn(b, s, strlen(s));
}

static void sb_printf(struct sbuf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void sb_printf(struct sbuf *b, const char *fmt, ...)
{
	char tmp[1024];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(tmp, sizeof(tmp), fmt, ap);
	va_end(ap);
	sb_puts(b, tmp);
}

/* Returns the text (never NULL) and leaves b empty; the caller frees it. */
static char *sb_take(struct sbuf *b)
{
	char *s = b->s ? b->s : kv_xstrdup("");

	memset(b, 0, sizeof(*b));
	return s;
}

/*
 * Appends s as one CSV field (csv.h), its line breaks as spaces: every row
 * of sweep.csv stays one line, which gnuplot needs (error messages are the
 * only fields that could hold one).
 */
static void sb_csv(struct sbuf *b, const char *s)
{
	char *flat = kv_xstrdup(s), *c, *esc;
	size_t n;

	for (c = flat; *c; c++)
		if (*c == '\n' || *c == '\r')
			*c = ' ';
	n = kv_csv_escape(NULL, 0, flat);
	esc = kv_xmalloc(n + 1);
	kv_csv_escape(esc, n + 1, flat);
	sb_putn(b, esc, n);
	free(esc);
	free(flat);
}

/* --- a YAML node back to flow text, for --set ---------------------------- */

/* 1 if a plain scalar's text reads back as the same plain scalar in flow context. */
static int plain_ok(const char *s)
{
	if (!*s)
		return 1;
	if (strchr("&*!|>%@`'\"?#, ", s[0]) || (s[0] == '-' && (s[1] == ' ' || !s[1])))
		return 0;
	return !strpbrk(s, ",[]{}#\"\n\\") && !strstr(s, ": ") && s[strlen(s) - 1] != ':';
}

static void emit_scalar(struct sbuf *b, const char *s, int quoted)
{
	if (!quoted && plain_ok(s)) {
		sb_puts(b, s);
		return;
	}
	sb_putn(b, "\"", 1);
	for (; *s; s++) {
		if (*s == '"' || *s == '\\')
			sb_putn(b, "\\", 1);
		if (*s == '\n')
			sb_puts(b, "\\n");
		else
			sb_putn(b, s, 1);
	}
	sb_putn(b, "\"", 1);
}

/* Writes n as YAML flow text: a scalar, [a, b] or {k: v, ...}. */
static void emit_node(struct sbuf *b, struct kv_cfg_node *n)
{
	struct kv_cfg_node *c;

	n->used = 1;
	if (n->type == KV_CFG_SCALAR) {
		emit_scalar(b, n->value, n->quoted);
		return;
	}
	sb_puts(b, n->type == KV_CFG_MAP ? "{" : "[");
	for (c = n->child; c; c = c->next) {
		if (c != n->child)
			sb_puts(b, ", ");
		if (n->type == KV_CFG_MAP) {
			emit_scalar(b, c->key, 0);
			sb_puts(b, ": ");
		}
		emit_node(b, c);
	}
	sb_puts(b, n->type == KV_CFG_MAP ? "}" : "]");
}

static char *node_text(struct kv_cfg_node *n)
{
	struct sbuf b = { 0 };

	emit_node(&b, n);
	return sb_take(&b);
}

/* --- the sweep file ------------------------------------------------------ */

/* FNV-1a 64 of n bytes at p, continuing from h (the offset basis to start). */
static uint64_t fnv1a(uint64_t h, const char *p, size_t n)
{
	while (n--) {
		h ^= (unsigned char)*p++;
		h *= 0x100000001b3ULL;
	}
	return h;
}

/* One axis: a key path and its values as flow text. */
struct axis {
	char *key; /* e.g. "scheduler.name" */
	char **vals; /* n_vals values */
	char **kv; /* n_vals overrides "key=value", made once for every point's key */
	size_t n_vals;
	size_t dim; /* the dimension it varies in (zipped axes share one) */
};

/* One point of the grid. */
struct point {
	size_t index; /* 0-based position in point order */
	size_t *val; /* value index per axis */
	uint64_t seed;
	char key[17]; /* 16 hex digits */
	uint64_t hash; /* the same key as a number */
	int state; /* ST_* */
	char *err; /* one-line message of a failed run */
	char **fields; /* summary.csv values (ST_OK), n_fields of them */
	char **names; /* summary.csv header names, n_fields */
	size_t n_fields;
};

enum { ST_TODO, ST_SKIP, ST_RUNNING, ST_OK, ST_ERR };

struct sweep {
	struct kv_cfg_doc doc;
	char name[128]; /* `name:` or the file stem */
	char base[1024]; /* base workload path, resolved */
	char *base_bytes; /* its contents, for the key */
	size_t base_len;
	uint64_t base_hash; /* FNV-1a of base_bytes: where every point's key starts */
	struct axis axis[SWEEP_MAX_AXES];
	size_t n_axes, n_dims;
	size_t dim_len[SWEEP_MAX_AXES]; /* values per dimension */
	char **sets; /* `set:` overrides "k=v" */
	size_t n_sets;
	uint64_t *seeds;
	size_t n_seeds;
	int has_target;
	char t_metric[128], t_axis[256]; /* target: metric column and axis to minimize */
	double t_max; /* target: metric <= t_max */
	struct point *pt;
	size_t n_pt;
};

static void sweep_release(struct sweep *sw)
{
	size_t i, j;

	for (i = 0; i < sw->n_axes; i++) {
		for (j = 0; j < sw->axis[i].n_vals; j++) {
			free(sw->axis[i].vals[j]);
			free(sw->axis[i].kv[j]);
		}
		free(sw->axis[i].vals);
		free(sw->axis[i].kv);
		free(sw->axis[i].key);
	}
	for (i = 0; i < sw->n_sets; i++)
		free(sw->sets[i]);
	for (i = 0; i < sw->n_pt; i++) {
		struct point *p = &sw->pt[i];

		for (j = 0; j < p->n_fields; j++) {
			free(p->fields[j]);
			free(p->names[j]);
		}
		free(p->fields);
		free(p->names);
		free(p->val);
		free(p->err);
	}
	free(sw->pt);
	free(sw->sets);
	free(sw->seeds);
	free(sw->base_bytes);
	kv_cfg_free(&sw->doc);
}

/* Reads a whole file; returns its bytes (NUL-terminated) or NULL with errno set. */
static char *slurp(const char *path, size_t *len)
{
	FILE *f = kv_xfopen(path, "rb");
	struct sbuf b = { 0 };
	char buf[8192];
	size_t n;

	if (!f)
		return NULL;
	while ((n = fread(buf, 1, sizeof(buf), f)) > 0)
		sb_putn(&b, buf, n);
	if (ferror(f)) {
		fclose(f);
		free(b.s);
		return NULL;
	}
	fclose(f);
	*len = b.len;
	return sb_take(&b);
}

/* Adds axis key (located at n) with the values of sequence seq in dimension dim. */
static int add_axis(struct sweep *sw, struct kv_cfg_node *n, size_t dim, struct kv_diag *d)
{
	struct kv_cfg_node *c;
	struct axis *a;
	size_t i;

	if (n->type != KV_CFG_SEQ || !n->n_children)
		return kv_cfg_error(n, d, "expected a non-empty list of values");
	if (sw->n_axes == SWEEP_MAX_AXES)
		return kv_cfg_error(n, d, "more than %d axes", SWEEP_MAX_AXES);
	for (i = 0; i < sw->n_axes; i++)
		if (!strcmp(sw->axis[i].key, n->key))
			return kv_diag_set(d, KV_EINVAL, n->file, n->key_line, n->key_col, n->key,
					   "axis '%s' appears twice", n->key);
	a = &sw->axis[sw->n_axes++];
	a->key = kv_xstrdup(n->key);
	a->vals = kv_xcalloc(n->n_children, sizeof(*a->vals));
	a->kv = kv_xcalloc(n->n_children, sizeof(*a->kv));
	a->dim = dim;
	for (c = n->child; c; c = c->next) {
		struct sbuf b = { 0 };

		a->vals[a->n_vals] = node_text(c);
		sb_printf(&b, "%s=", a->key);
		sb_puts(&b, a->vals[a->n_vals]);
		a->kv[a->n_vals++] = sb_take(&b);
	}
	n->used = 1;
	return 0;
}

static int read_axes(struct sweep *sw, struct kv_diag *d)
{
	struct kv_cfg_node *m = kv_cfg_get(sw->doc.root, "axes"), *c;
	int rc;

	if ((rc = kv_cfg_expect_map(m, d)))
		return rc;
	for (c = m ? m->child : NULL; c; c = c->next) {
		if ((rc = add_axis(sw, c, sw->n_dims, d)))
			return rc;
		sw->dim_len[sw->n_dims++] = c->n_children;
	}
	return 0;
}

static int read_zip(struct sweep *sw, struct kv_diag *d)
{
	struct kv_cfg_node *s = kv_cfg_get(sw->doc.root, "zip"), *g, *c;
	int rc;

	if ((rc = kv_cfg_expect_seq(s, d)))
		return rc;
	for (g = s ? s->child : NULL; g; g = g->next) {
		g->used = 1;
		if (g->type != KV_CFG_MAP || !g->n_children)
			return kv_cfg_error(g, d, "expected a mapping of axes with equal-length lists");
		for (c = g->child; c; c = c->next) {
			if ((rc = add_axis(sw, c, sw->n_dims, d)))
				return rc;
			if (c->n_children != g->child->n_children)
				return kv_cfg_error(c, d, "%zu values, but '%s' has %zu: zipped axes need equal lengths",
						    c->n_children, g->child->key, g->child->n_children);
		}
		sw->dim_len[sw->n_dims++] = g->child->n_children;
	}
	return 0;
}

static int read_seeds(struct sweep *sw, struct kv_diag *d)
{
	struct kv_cfg_node *n = kv_cfg_get(sw->doc.root, "seeds"), *c;
	uint64_t k = 1, i;
	int rc;

	if (n && n->type == KV_CFG_SEQ) {
		if (!n->n_children)
			return kv_cfg_error(n, d, "expected a non-empty list of seeds");
		sw->seeds = kv_xcalloc(n->n_children, sizeof(*sw->seeds));
		for (c = n->child; c; c = c->next)
			if ((rc = kv_cfg_node_u64(c, 0, UINT64_MAX, &sw->seeds[sw->n_seeds++], d)))
				return rc;
		return 0;
	}
	if ((rc = kv_cfg_u64(sw->doc.root, "seeds", 1, 1, 100000, &k, d)))
		return rc;
	sw->seeds = kv_xcalloc(k, sizeof(*sw->seeds));
	for (i = 0; i < k; i++)
		sw->seeds[sw->n_seeds++] = i + 1;
	return 0;
}

/* Flattens mapping m under prefix into "a.b=value" overrides. */
static int read_sets(struct sweep *sw, struct kv_cfg_node *m, const char *prefix,
		     struct kv_diag *d)
{
	struct kv_cfg_node *c;
	char key[512];
	size_t i;
	int rc;

	for (c = m->child; c; c = c->next) {
		c->used = 1;
		/* a cut path would override some other key: an error, not a truncation */
		if ((size_t)snprintf(key, sizeof(key), "%s%s%s", prefix, *prefix ? "." : "",
				     c->key) >= sizeof(key))
			return kv_diag_set(d, KV_ERANGE, c->file, c->key_line, c->key_col, c->key,
					   "key path longer than %zu bytes", sizeof(key) - 1);
		if (c->type == KV_CFG_MAP && c->n_children) {
			if ((rc = read_sets(sw, c, key, d)))
				return rc;
			continue;
		}
		for (i = 0; i < sw->n_axes; i++)
			if (!strcmp(sw->axis[i].key, key))
				return kv_diag_set(d, KV_EINVAL, c->file, c->key_line, c->key_col, key,
						   "'%s' is both an axis and in set:", key);
		if (sw->n_sets + sw->n_axes >= SWEEP_MAX_SETS)
			return kv_cfg_error(c, d, "more than %d overrides", SWEEP_MAX_SETS);
		{
			char *v = node_text(c);
			struct sbuf b = { 0 };

			sb_printf(&b, "%s=", key);
			sb_puts(&b, v);
			free(v);
			sw->sets = kv_xrealloc(sw->sets, (sw->n_sets + 1) * sizeof(*sw->sets));
			sw->sets[sw->n_sets++] = sb_take(&b);
		}
	}
	return 0;
}

/* 0 when target.metric is a summary.csv metric, else an error listing them. */
static int check_metric(struct sweep *sw, struct kv_cfg_node *t, struct kv_diag *d)
{
	struct sbuf b = { 0 };
	size_t i;
	int rc;

	for (i = 0; kv_summary_names[i]; i++)
		if (!strcmp(kv_summary_names[i], sw->t_metric))
			return 0;
	for (i = 0; kv_summary_names[i]; i++)
		sb_printf(&b, "%s%s", i ? ", " : "", kv_summary_names[i]);
	rc = kv_cfg_error(kv_cfg_get(t, "metric"), d, "unknown metric '%s': expected one of: %s",
			  sw->t_metric, b.s);
	free(b.s);
	return rc;
}

static int read_target(struct sweep *sw, struct kv_diag *d)
{
	static const char *const keys[] = { "metric", "max", "minimize", NULL };
	struct kv_cfg_node *t = kv_cfg_get(sw->doc.root, "target");
	size_t i;
	int rc;

	if (!t || (t->type == KV_CFG_SCALAR && !t->quoted && (!*t->value || !strcmp(t->value, "~") ||
							       !strcmp(t->value, "null"))))
		return 0;
	if ((rc = kv_cfg_expect_map(t, d)) || (rc = kv_cfg_check_keys(t, keys, d)))
		return rc;
	if (!kv_cfg_get(t, "metric") || !kv_cfg_get(t, "max") || !kv_cfg_get(t, "minimize"))
		return kv_cfg_error(t, d, "a target needs metric, max and minimize");
	if ((rc = kv_cfg_str(t, "metric", NULL, sw->t_metric, sizeof(sw->t_metric), d)) ||
	    (rc = kv_cfg_dbl(t, "max", 0, -1e300, 1e300, &sw->t_max, d)) ||
	    (rc = kv_cfg_str(t, "minimize", NULL, sw->t_axis, sizeof(sw->t_axis), d)) ||
	    (rc = check_metric(sw, t, d)))
		return rc;
	for (i = 0; i < sw->n_axes; i++)
		if (!strcmp(sw->axis[i].key, sw->t_axis))
			break;
	if (i == sw->n_axes)
		return kv_cfg_error(kv_cfg_get(t, "minimize"), d, "'%s' is not an axis of the sweep",
				    sw->t_axis);
	sw->has_target = 1;
	return 0;
}

static int read_base(struct sweep *sw, struct kv_diag *d)
{
	struct kv_cfg_node *n = kv_cfg_get(sw->doc.root, "base");
	struct kv_diag e;
	char rel[1024];
	int rc;

	if (!n)
		return kv_diag_set(d, KV_EINVAL, sw->doc.path, 1, 1, "base",
				   "missing: expected the base workload file");
	if ((rc = kv_cfg_str(sw->doc.root, "base", NULL, rel, sizeof(rel), d)))
		return rc;
	if (kv_cfg_resolve_path(&sw->doc, n, rel, sw->base, sizeof(sw->base)))
		return kv_cfg_error(n, d, "path too long");
	if ((rc = kv_input_read(sw->base, KV_INPUT_MAX_YAML_BYTES, &sw->base_bytes, &sw->base_len,
				&e))) /* a regular file, bounded, as kv_cfg_load() reads */
		return kv_cfg_error(n, d, "cannot read '%s': %s", sw->base, e.msg);
	sw->base_hash = fnv1a(0xcbf29ce484222325ULL, sw->base_bytes, sw->base_len);
	return 0;
}

static void default_name(struct sweep *sw, const char *path)
{
	const char *b = strrchr(path, '/'), *dot;
	size_t n;

	b = b ? b + 1 : path;
	dot = strrchr(b, '.');
	n = dot && dot != b ? (size_t)(dot - b) : strlen(b);
	if (n >= sizeof(sw->name))
		n = sizeof(sw->name) - 1;
	memcpy(sw->name, b, n);
	sw->name[n] = 0;
}

/*
 * Checks the sweep file already in sw->doc (not the points); path names it
 * for the default name.  Returns 0 or a code with d filled.
 */
static int sweep_read(struct sweep *sw, const char *path, struct kv_diag *d)
{
	static const char *const keys[] = { "name", "description", "base", "axes", "zip",
					    "seeds", "set", "target", NULL };
	struct kv_cfg_node *set;
	char def[128];
	int rc;

	if ((rc = kv_cfg_check_keys(sw->doc.root, keys, d)))
		return rc;
	default_name(sw, path);
	snprintf(def, sizeof(def), "%s", sw->name);
	if ((rc = kv_cfg_str(sw->doc.root, "name", def, sw->name, sizeof(sw->name), d)) ||
	    (rc = read_base(sw, d)) || (rc = read_axes(sw, d)) || (rc = read_zip(sw, d)) ||
	    (rc = read_seeds(sw, d)))
		return rc;
	set = kv_cfg_get(sw->doc.root, "set");
	if ((rc = kv_cfg_expect_map(set, d)))
		return rc;
	if (set && set->type == KV_CFG_MAP && (rc = read_sets(sw, set, "", d)))
		return rc;
	return read_target(sw, d);
}

/* Loads and checks the sweep file (not the points). Returns 0 or a code with d filled. */
static int sweep_load(struct sweep *sw, const char *path, struct kv_diag *d)
{
	int rc;

	memset(sw, 0, sizeof(*sw));
	if ((rc = kv_cfg_load(&sw->doc, path, d)))
		return rc;
	return sweep_read(sw, path, d);
}

/* --- points -------------------------------------------------------------- */

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The overrides of point p ("k=v", `set:` first, then the axes); returns the count. */
static size_t point_sets(const struct sweep *sw, const struct point *p, char **out)
{
	size_t i, n = 0;

	for (i = 0; i < sw->n_sets; i++)
		out[n++] = kv_xstrdup(sw->sets[i]);
	for (i = 0; i < sw->n_axes; i++)
		out[n++] = kv_xstrdup(sw->axis[i].kv[p->val[i]]);
	return n;
}

/*
 * The key of a point: FNV-1a 64 of the base file's bytes, the sorted
 * overrides and the seed.  Sorting makes it independent of the order of
 * the axes in the sweep file (a reordered file finds the same points).
 * Split in two so the expensive part is not repeated: overrides_hash()
 * continues from the base file's hash (taken once) and is shared by the
 * points that differ only in their seed, which comes last; point_key()
 * adds the seed.  Hashing everything again per point made loading a
 * million-point grid take seconds per kilobyte of base file.
 */
static uint64_t overrides_hash(const struct sweep *sw, const struct point *p)
{
	char *sets[SWEEP_MAX_SETS];
	uint64_t h = sw->base_hash;
	size_t i, n = 0;

	for (i = 0; i < sw->n_sets; i++)
		sets[n++] = sw->sets[i];
	for (i = 0; i < sw->n_axes; i++)
		sets[n++] = sw->axis[i].kv[p->val[i]];
	qsort(sets, n, sizeof(*sets), cmp_str);
	for (i = 0; i < n; i++) {
		h = fnv1a(h, "\n", 1);
		h = fnv1a(h, sets[i], strlen(sets[i]));
	}
	return h;
}

/* Finishes p->key from overrides_hash() h and p's seed. */
static void point_key(struct point *p, uint64_t h)
{
	char seed[32];

	snprintf(seed, sizeof(seed), "\nseed=%llu\n", (unsigned long long)p->seed);
	h = fnv1a(h, seed, strlen(seed));
	h = (h ^ (h >> 30)) * 0xbf58476d1ce4e5b9ULL; /* splitmix64's finaliser: nearby */
	h = (h ^ (h >> 27)) * 0x94d049bb133111ebULL; /* points get unrelated keys */
	h ^= h >> 31;
	p->hash = h;
	snprintf(p->key, sizeof(p->key), "%016llx", (unsigned long long)h);
}

/* A point's key as a number, and the point: what check_unique() sorts. */
struct key_index {
	uint64_t key; /* the 64-bit hash whose hex digits are the point's key */
	size_t index; /* the point's index */
};

static int cmp_key_index(const void *a, const void *b)
{
	const struct key_index *x = a, *y = b;

	if (x->key != y->key)
		return x->key < y->key ? -1 : 1;
	return x->index < y->index ? -1 : x->index > y->index;
}

/*
 * Two points with one key (a value or seed listed twice) would share a
 * directory.  Sorts (hash, index) pairs rather than pointers to the points'
 * hex strings: for a million points, a strcmp through a pointer per
 * comparison took most of the load time (the order and the duplicates found
 * are the same, hex digits of a fixed width sorting as the numbers do).
 */
static int check_unique(const struct sweep *sw, struct kv_diag *d)
{
	struct key_index *by_key = kv_xcalloc(sw->n_pt ? sw->n_pt : 1, sizeof(*by_key));
	struct kv_cfg_node *at = kv_cfg_get(sw->doc.root, "axes");
	size_t i;
	int rc = 0;

	if (!at || !at->n_children)
		at = kv_cfg_get(sw->doc.root, "seeds");

	for (i = 0; i < sw->n_pt; i++) {
		by_key[i].key = sw->pt[i].hash;
		by_key[i].index = i;
	}
	qsort(by_key, sw->n_pt, sizeof(*by_key), cmp_key_index);
	for (i = 1; i < sw->n_pt && !rc; i++)
		if (by_key[i - 1].key == by_key[i].key)
			rc = kv_diag_set(d, KV_EINVAL, sw->doc.path, at ? at->key_line : 0,
					 at ? at->key_col : 0, at ? at->key : "",
					 "points %zu and %zu are the same run (a value or seed listed twice?)",
					 by_key[i - 1].index, by_key[i].index);
	free(by_key);
	return rc;
}

/* Expands the grid: dimensions in order (first slowest), seeds fastest. */
static int sweep_expand(struct sweep *sw, struct kv_diag *d)
{
	size_t n = sw->n_seeds, i, k, r;
	uint64_t h = 0;

	for (k = 0; k < sw->n_dims; k++) {
		if (n > SWEEP_MAX_POINTS / sw->dim_len[k])
			return kv_diag_set(d, KV_ERANGE, sw->doc.path, 0, 0, "axes",
					   "more than %d points", SWEEP_MAX_POINTS);
		n *= sw->dim_len[k];
	}
	sw->pt = kv_xcalloc(n, sizeof(*sw->pt));
	sw->n_pt = n;
	for (i = 0; i < n; i++) {
		struct point *p = &sw->pt[i];
		size_t dv[SWEEP_MAX_AXES];

		r = i;
		p->index = i;
		p->seed = sw->seeds[r % sw->n_seeds];
		r /= sw->n_seeds;
		for (k = sw->n_dims; k-- > 0;) {
			dv[k] = r % sw->dim_len[k];
			r /= sw->dim_len[k];
		}
		p->val = kv_xcalloc(sw->n_axes ? sw->n_axes : 1, sizeof(*p->val));
		for (k = 0; k < sw->n_axes; k++)
			p->val[k] = dv[sw->axis[k].dim];
		if (i % sw->n_seeds == 0) /* a new combination of values */
			h = overrides_hash(sw, p);
		point_key(p, h);
	}
	return check_unique(sw, d);
}

/* --- running ------------------------------------------------------------- */

static volatile sig_atomic_t sweep_stop;

static void on_signal(int sig)
{
	sweep_stop = sig;
}

struct sweep_args {
	const char *path; /* sweep file */
	const char *out; /* -o DIR, or NULL */
	long jobs; /* -j, default the online CPUs */
	long shard, n_shards; /* --shard I/N (1-based), 1/1 by default */
	int quiet;
};

/* Child: runs point p like `kvsim run -q` with stderr in error.txt; never returns. */
static void child_run(const struct sweep *sw, const struct point *p, const char *dir)
{
	char *argv[2 * SWEEP_MAX_SETS + 16], *sets[SWEEP_MAX_SETS], seed[32], err[PT_PATH];
	size_t i, n = point_sets(sw, p, sets);
	int argc = 0, fd;

	signal(SIGINT, SIG_DFL);
	signal(SIGTERM, SIG_DFL);
	kv_run_in_sweep(); /* the sweep holds the lock and owns points/ */
	snprintf(err, sizeof(err), "%s/error.txt", dir);
	fd = open(err, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	if (fd >= 0) {
		dup2(fd, STDERR_FILENO);
		close(fd);
	}
	fd = open("/dev/null", O_WRONLY);
	if (fd >= 0) {
		dup2(fd, STDOUT_FILENO);
		close(fd);
	}
	snprintf(seed, sizeof(seed), "%llu", (unsigned long long)p->seed);
	argv[argc++] = (char *)"run";
	argv[argc++] = (char *)"-q";
	argv[argc++] = (char *)"-o";
	argv[argc++] = (char *)dir;
	argv[argc++] = (char *)"--seed";
	argv[argc++] = seed;
	for (i = 0; i < n; i++) {
		argv[argc++] = (char *)"--set";
		argv[argc++] = sets[i];
	}
	argv[argc++] = (char *)sw->base;
	argv[argc] = NULL;
	_exit(kv_cmd_run(argc, argv));
}

static void point_dir(const char *out, const struct point *p, char *buf, size_t len)
{
	snprintf(buf, len, "%s/points/%s", out, p->key);
}

/* The last non-empty line of the point's error.txt, or a description of st. */
static char *read_error(const char *dir, int st)
{
	char path[PT_PATH], *text, *line, *end;
	struct sbuf b = { 0 };
	size_t len;

	snprintf(path, sizeof(path), "%s/error.txt", dir);
	text = slurp(path, &len);
	if (text) {
		for (end = text + len; end > text && (end[-1] == '\n' || end[-1] == ' '); end--)
			;
		*end = 0;
		line = strrchr(text, '\n');
		line = line ? line + 1 : text;
		if (!strncmp(line, "kvsim: ", 7))
			line += 7;
		if (*line)
			sb_puts(&b, line);
		free(text);
	}
	if (!b.s) {
		if (WIFSIGNALED(st))
			sb_printf(&b, "killed by signal %d", WTERMSIG(st));
		else
			sb_printf(&b, "exit status %d", WEXITSTATUS(st));
	}
	return sb_take(&b);
}

/* A copy of the n fields of r. */
static char **rec_dup(const struct kv_csv_rec *r)
{
	char **out = kv_xcalloc(r->n, sizeof(*out));
	size_t i;

	for (i = 0; i < r->n; i++)
		out[i] = kv_xstrdup(r->field[i]);
	return out;
}

/*
 * Reads the point's summary.csv (a header and one row, csv.h quoting) into
 * p->names/p->fields.  Returns 0, or -1 when it is absent, not two whole
 * lines, or its row has another number of fields than its header; then d
 * says why.
 */
static int read_summary(const char *dir, struct point *p, struct kv_diag *d)
{
	char path[PT_PATH], *text;
	struct kv_csv_rec h, v;
	unsigned long line = 1;
	size_t len, pos = 0;
	int ok;

	snprintf(path, sizeof(path), "%s/summary.csv", dir);
	text = slurp(path, &len);
	if (!text) {
		kv_diag_set(d, KV_EIO, path, 0, 0, "", "cannot read: %s", strerror(errno));
		return -1;
	}
	kv_csv_rec_init(&h);
	kv_csv_rec_init(&v);
	ok = kv_csv_rec_parse(&h, text, len, &pos, &line, path, d) == 1 &&
	     kv_csv_rec_parse(&v, text, len, &pos, &line, path, d) == 1;
	if (ok && (pos != len || text[len - 1] != '\n' || h.n != v.n)) {
		kv_diag_set(d, KV_EINVAL, path, 0, 0, "",
			    "expected a header and one row of as many fields, %zu and %zu", h.n, v.n);
		ok = 0;
	} else if (!ok && !d->msg[0]) {
		kv_diag_set(d, KV_EINVAL, path, 0, 0, "", "expected a header and one row");
	}
	if (ok) {
		p->names = rec_dup(&h);
		p->fields = rec_dup(&v);
		p->n_fields = h.n;
	}
	kv_csv_rec_release(&h);
	kv_csv_rec_release(&v);
	free(text);
	return ok ? 0 : -1;
}

struct runner {
	struct sweep *sw;
	const struct sweep_args *a;
	char out[KV_PATH_MAX]; /* output directory */
	int lock_fd; /* the output directory's lock, -1 when not held */
	pid_t *pid; /* child per running slot, 0 when free */
	size_t *slot_pt; /* point of each slot */
	size_t running, done, total, ran, failed;
	struct timespec start;
};

static double elapsed_s(const struct runner *r)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)(t.tv_sec - r->start.tv_sec) + (double)(t.tv_nsec - r->start.tv_nsec) * 1e-9;
}

static void progress(const struct runner *r, int final)
{
	double el = elapsed_s(r);
	size_t left = r->total - r->done;

	if (r->a->quiet || !isatty(STDERR_FILENO))
		return;
	fprintf(stderr, "\rkvsim: sweep: %zu/%zu points, %zu failed, %.0f s elapsed", r->done,
		r->total, r->failed, el);
	if (r->ran && left)
		fprintf(stderr, ", ETA %.0f s   ", el / (double)r->ran * (double)left);
	else
		fputs("           ", stderr);
	if (final)
		fputc('\n', stderr);
}

/* Records the end of a child. */
static void reap(struct runner *r, pid_t pid, int st)
{
	struct point *p;
	char dir[PT_DIR], err[PT_PATH];
	struct kv_diag d = { 0 };
	struct stat sb;
	size_t k;

	for (k = 0; k < (size_t)r->a->jobs && r->pid[k] != pid; k++)
		;
	if (k == (size_t)r->a->jobs)
		return;
	r->pid[k] = 0;
	r->running--;
	p = &r->sw->pt[r->slot_pt[k]];
	point_dir(r->out, p, dir, sizeof(dir));
	if (sweep_stop && (WIFSIGNALED(st) || (WIFEXITED(st) && (WEXITSTATUS(st) == 130 ||
								   WEXITSTATUS(st) == 143)))) {
		p->state = ST_TODO; /* interrupted: no row */
		return;
	}
	r->done++;
	r->ran++;
	if (WIFEXITED(st) && WEXITSTATUS(st) == 0 && !read_summary(dir, p, &d)) {
		p->state = ST_OK;
		snprintf(err, sizeof(err), "%s/error.txt", dir);
		if (!stat(err, &sb) && sb.st_size == 0)
			unlink(err);
	} else {
		p->state = ST_ERR;
		p->err = read_error(dir, st);
		if (WIFEXITED(st) && WEXITSTATUS(st) == 0) { /* the run ended well: say what is wrong */
			struct sbuf b = { 0 };

			sb_printf(&b, "the run exited 0 but its %s:%lu: %s", d.file, d.line, d.msg);
			free(p->err);
			p->err = sb_take(&b);
		}
		r->failed++;
	}
	progress(r, 0);
}

/* Starts point i in a free slot; returns 0, or -1 when fork or mkdir failed (then ST_ERR). */
static int launch(struct runner *r, size_t i)
{
	struct point *p = &r->sw->pt[i];
	char dir[PT_DIR];
	size_t k;
	pid_t pid;

	point_dir(r->out, p, dir, sizeof(dir));
	if (kv_mkdirs(dir)) {
		struct sbuf b = { 0 };

		sb_printf(&b, "%s: cannot create: %s", dir, strerror(errno));
		p->err = sb_take(&b);
		p->state = ST_ERR;
		r->done++;
		r->failed++;
		return -1;
	}
	for (k = 0; r->pid[k]; k++)
		;
	fflush(stdout);
	fflush(stderr);
	pid = fork();
	if (pid < 0) {
		p->err = kv_xstrdup("fork failed");
		p->state = ST_ERR;
		r->done++;
		r->failed++;
		return -1;
	}
	if (pid == 0)
		child_run(r->sw, p, dir);
	r->pid[k] = pid;
	r->slot_pt[k] = i;
	r->running++;
	p->state = ST_RUNNING;
	return 0;
}

static void kill_children(struct runner *r)
{
	long k;

	for (k = 0; k < r->a->jobs; k++)
		if (r->pid[k])
			kill(r->pid[k], SIGTERM);
}

static int in_shard(const struct sweep_args *a, size_t i)
{
	return (long)(i % (size_t)a->n_shards) == a->shard - 1;
}

/*
 * The scheduling loop: skip finished points (their summary.csv is read
 * back), keep `jobs` children running, reap them in whatever order they
 * end.  On a signal it stops launching, forwards SIGTERM to the children
 * (which abort cleanly and exit 143) and waits for all of them.
 */
static void run_points(struct runner *r)
{
	size_t next = 0, n = r->sw->n_pt;
	int killed = 0, st;
	struct kv_diag d = { 0 };
	char dir[PT_DIR];
	pid_t pid;

	for (;;) {
		while (!sweep_stop && r->running < (size_t)r->a->jobs && next < n) {
			struct point *p = &r->sw->pt[next++];

			if (!in_shard(r->a, p->index))
				continue;
			point_dir(r->out, p, dir, sizeof(dir));
			if (!read_summary(dir, p, &d)) {
				p->state = ST_SKIP;
				r->done++;
				continue;
			}
			launch(r, p->index);
		}
		if (!r->running && (sweep_stop || next >= n))
			break;
		if (!r->running)
			continue;
		pid = waitpid(-1, &st, 0);
		if (sweep_stop && !killed) {
			kill_children(r);
			killed = 1;
		}
		if (pid > 0)
			reap(r, pid, st);
		else if (errno != EINTR)
			break;
	}
	progress(r, 1);
}

/* --- sweep.csv ----------------------------------------------------------- */

/* The summary column names: those of the first point (in point order) that has them. */
static struct point *header_point(const struct sweep *sw)
{
	size_t i;

	for (i = 0; i < sw->n_pt; i++)
		if (sw->pt[i].n_fields)
			return &sw->pt[i];
	return NULL;
}

/* The value of column name in p, or "" (points with another header map by name). */
static const char *field_of(const struct point *p, const struct point *h, size_t j)
{
	size_t i;

	if (!p->n_fields)
		return "";
	if (j < p->n_fields && !strcmp(p->names[j], h->names[j]))
		return p->fields[j];
	for (i = 0; i < p->n_fields; i++)
		if (!strcmp(p->names[i], h->names[j]))
			return p->fields[i];
	return "";
}

static void row(struct sbuf *b, const struct sweep *sw, const struct point *p,
		const struct point *h)
{
	size_t i;

	sb_printf(b, "%zu,%s", p->index, p->key);
	for (i = 0; i < sw->n_axes; i++) {
		sb_puts(b, ",");
		sb_csv(b, sw->axis[i].vals[p->val[i]]);
	}
	sb_printf(b, ",%llu,%s,", (unsigned long long)p->seed, p->state == ST_ERR ? "error" : "ok");
	if (p->err)
		sb_csv(b, p->err);
	for (i = 0; h && i < h->n_fields; i++) {
		sb_puts(b, ",");
		sb_csv(b, field_of(p, h, i));
	}
	sb_puts(b, "\n");
}

/*
 * Writes text to dir/sweep.csv through a temporary and a rename, both through
 * the output layer's fault hook (KVSIM_FAIL_WRITE); 0 or -1 (message printed,
 * the temporary removed, an earlier sweep.csv intact).
 */
static int write_atomic(const char *dir, const char *text)
{
	char final[PT_PATH];
	struct kv_atomic a;
	struct kv_diag d = { 0 };

	snprintf(final, sizeof(final), "%s/sweep.csv", dir);
	if (kv_atomic_open(&a, final, &d)) {
		kv_diag_print(&d, stderr);
		return -1;
	}
	fputs(text, a.f); /* a failure sets the stream's error flag: commit reports it */
	if (kv_atomic_commit(&a, &d)) {
		kv_diag_print(&d, stderr);
		return -1;
	}
	return 0;
}

static int write_sweep_csv(const struct sweep *sw, const char *dir)
{
	const struct point *h = header_point(sw);
	struct sbuf b = { 0 };
	size_t i;
	char *text;
	int rc;

	sb_puts(&b, "point,key");
	for (i = 0; i < sw->n_axes; i++) {
		sb_puts(&b, ",");
		sb_csv(&b, sw->axis[i].key);
	}
	sb_puts(&b, ",seed,status,error");
	for (i = 0; h && i < h->n_fields; i++) {
		sb_puts(&b, ",");
		sb_csv(&b, h->names[i]);
	}
	sb_puts(&b, "\n");
	for (i = 0; i < sw->n_pt; i++) {
		int s = sw->pt[i].state;

		if (s == ST_OK || s == ST_SKIP || s == ST_ERR)
			row(&b, sw, &sw->pt[i], h);
	}
	text = sb_take(&b);
	rc = write_atomic(dir, text);
	free(text);
	return rc;
}

/* --- target -------------------------------------------------------------- */

/* 1 if every point of the shard with value v of axis ax is ok and meets the target. */
static int value_meets(const struct sweep *sw, size_t ax, size_t v, size_t mcol, size_t *count)
{
	const struct point *h = header_point(sw);
	size_t i;

	*count = 0;
	for (i = 0; i < sw->n_pt; i++) {
		const struct point *p = &sw->pt[i];
		const char *f;
		char *end;
		double x;

		if (p->val[ax] != v || p->state == ST_TODO)
			continue;
		if (p->state == ST_ERR || p->state == ST_RUNNING)
			return 0;
		f = field_of(p, h, mcol);
		x = strtod(f, &end);
		if (!*f || *end || !(x <= sw->t_max))
			return 0;
		(*count)++;
	}
	return *count > 0;
}

/* Prints the smallest value of the minimized axis whose points all meet the target. */
static void report_target(const struct sweep *sw)
{
	const struct point *h = header_point(sw);
	size_t ax, v, mcol, cnt, best_cnt = 0, best = SIZE_MAX;
	double bx = 0;

	for (ax = 0; strcmp(sw->axis[ax].key, sw->t_axis); ax++)
		;
	for (mcol = 0; h && mcol < h->n_fields && strcmp(h->names[mcol], sw->t_metric); mcol++)
		;
	if (!h || mcol == h->n_fields) {
		printf("capacity: no result: metric '%s' is not a summary.csv column of a finished point\n",
		       sw->t_metric);
		return;
	}
	for (v = 0; v < sw->axis[ax].n_vals; v++) {
		char *end;
		double x = strtod(sw->axis[ax].vals[v], &end);

		if (*end)
			x = (double)v; /* not a number: axis order */
		if (value_meets(sw, ax, v, mcol, &cnt) && (best == SIZE_MAX || x < bx)) {
			best = v;
			bx = x;
			best_cnt = cnt;
		}
	}
	if (best == SIZE_MAX)
		printf("capacity: no value of %s meets %s <= %g\n", sw->t_axis, sw->t_metric,
		       sw->t_max);
	else
		printf("capacity: %s = %s meets %s <= %g (all %zu points)\n", sw->t_axis,
		       sw->axis[ax].vals[best], sw->t_metric, sw->t_max, best_cnt);
}

/* --- kvsim sweep --------------------------------------------------------- */

static void sweep_usage(FILE *f)
{
	fputs("usage: kvsim sweep SWEEP.yaml [-j N] [-o DIR] [--shard I/N] [--quiet]\n"
	      "\n"
	      "Runs the base workload of the sweep file once per point of its grid (axes\n"
	      "x zip groups x seeds), each point as `kvsim run -q --seed S --set k=v...`\n"
	      "in its own process, into DIR/points/KEY/; writes DIR/sweep.csv with one row\n"
	      "per point (its axis values, seed, status, error and summary.csv columns).\n"
	      "Points already finished (DIR/points/KEY/summary.csv exists) are not rerun.\n"
	      "Under `mpirun -n R` (kvsim built with MPI) the points are spread over the R\n"
	      "ranks and rank 0 writes sweep.csv.  See docs/sweeps.md.\n"
	      "\n"
	      "options:\n"
	      "  -j, --jobs N         worker processes (default: the online CPUs)\n"
	      "  -o, --output DIR     output directory (default: out/NAME)\n"
	      "      --shard I/N      run only the points whose index mod N is I-1\n"
	      "  -q, --quiet          no progress line and no closing line\n"
	      "  -h, --help           this help\n"
	      "\n"
	      "exit status: 0 every point ok, 1 some point failed (sweep.csv written),\n"
	      "2 bad sweep file or usage, 3 out of memory, 130 interrupted by SIGINT and\n"
	      "143 by SIGTERM (rerun to complete)\n",
	      f);
}

/* --shard I/N into the sweep_args at dst; -1 unless 1 <= I <= N. */
static int parse_shard(const char *s, void *dst)
{
	struct sweep_args *a = dst;
	char *end;

	errno = 0;
	a->shard = strtol(s, &end, 10);
	if (errno || *end != '/' || end == s)
		return -1;
	s = end + 1;
	a->n_shards = strtol(s, &end, 10);
	if (errno || *end || end == s || a->n_shards < 1 || a->shard < 1 || a->shard > a->n_shards)
		return -1;
	return 0;
}

static int sweep_parse_args(int argc, char **argv, struct sweep_args *a)
{
	const struct kv_cli_opt opts[] = {
		{ .name = "jobs", .short_name = 'j', .kind = KV_CLI_LONG, .dst = &a->jobs, .min = 1,
		  .max = 4096, .what = "1..4096", .label = "-j" },
		{ .name = "output", .short_name = 'o', .kind = KV_CLI_PATH, .dst = &a->out,
		  .what = "a directory path", .label = "-o" },
		{ .name = "shard", .kind = KV_CLI_FN, .dst = a, .fn = parse_shard,
		  .what = "I/N with 1 <= I <= N" },
		{ .name = "quiet", .short_name = 'q', .kind = KV_CLI_FLAG, .dst = &a->quiet },
		{ .name = NULL },
	};
	const struct kv_cli_cmd cmd = { "sweep", sweep_usage, "sweep file" };

	memset(a, 0, sizeof(*a));
	a->jobs = sysconf(_SC_NPROCESSORS_ONLN);
	if (a->jobs < 1)
		a->jobs = 1;
	a->shard = a->n_shards = 1;
	return kv_cli_parse(&cmd, opts, argc, argv, &a->path);
}

/* Loads the base workload with the `set:` overrides, so a broken base is a bad sweep file. */
static int check_base(const struct sweep *sw, struct kv_diag *d)
{
	struct kv_workload w;
	int rc = kv_workload_load(&w, sw->base, sw->sets, sw->n_sets, 0, 0, d);

	kv_workload_release(&w);
	return rc;
}

int kv_sweep_check_mem(const char *name, const char *text, size_t len, size_t *n_points,
		       struct kv_diag *d)
{
	struct sweep sw;
	int rc;

	memset(&sw, 0, sizeof(sw));
	rc = kv_cfg_load_mem(&sw.doc, name, text, len, d);
	if (!rc)
		rc = sweep_read(&sw, name, d);
	if (!rc)
		rc = sweep_expand(&sw, d);
	if (!rc)
		rc = check_base(&sw, d);
	*n_points = rc ? 0 : sw.n_pt;
	sweep_release(&sw);
	return rc;
}

static void install_handlers(void)
{
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal; /* no SA_RESTART: waitpid returns EINTR */
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
}

static int sweep_finish(struct runner *r)
{
	struct sweep *sw = r->sw;
	int rc = write_sweep_csv(sw, r->out);

	if (sweep_stop) {
		fprintf(stderr, "kvsim: sweep: interrupted by %s after %zu of %zu points; %s/sweep.csv has them, rerun to complete\n",
			sweep_stop == SIGINT ? "SIGINT" : "SIGTERM", r->done, r->total, r->out);
		return KV_EXIT_SIGNAL(sweep_stop);
	}
	if (rc)
		return 1;
	if (r->failed)
		fprintf(stderr, "kvsim: sweep: %zu of %zu points failed (see the error column of %s/sweep.csv)\n",
			r->failed, r->total, r->out);
	if (!r->a->quiet)
		printf("sweep %s: %zu points (%zu run, %zu already done), %zu failed; %s/sweep.csv\n",
		       sw->name, r->total, r->ran, r->done - r->ran, r->failed, r->out);
	if (sw->has_target)
		report_target(sw);
	/* the default charts (gnuplot absent: a note saying how to install it) */
	if (r->done > r->failed && sw->n_axes > 0) {
		kv_plot_sweep(r->out, sw->name, "ttft_p99_s", NULL, NULL, r->a->quiet);
		kv_plot_sweep(r->out, sw->name, "throughput_tok_s", NULL, NULL, r->a->quiet);
	}
	return fflush(stdout) || ferror(stdout) || r->failed ? 1 : 0;
}

/*
 * The sweep's output directory into out (KV_PATH_MAX bytes): -o, else
 * out/NAME.  Refuses a path too long for its points' files and a name that
 * would leave out/.  Returns 0 or 2 with d filled.
 */
static int sweep_out_dir(const struct sweep *sw, const struct sweep_args *a, char *out,
			 struct kv_diag *d)
{
	size_t n;

	if (!a->out && (strchr(sw->name, '/') || !strcmp(sw->name, ".") ||
			!strcmp(sw->name, "..") || !sw->name[0])) {
		kv_diag_set(d, KV_EINVAL, sw->doc.path, 0, 0, "name",
			    "bad value '%s': the default output directory is out/NAME, so expected a "
			    "name without '/' that is not '.' or '..' (or give -o DIR)", sw->name);
		return 2;
	}
	n = a->out ? strlen(a->out) : 4 + strlen(sw->name);
	if (n + SWEEP_SUFFIX_MAX >= KV_PATH_MAX) {
		kv_diag_set(d, KV_EINVAL, "-o", 0, 0, "",
			    "path of %zu bytes is too long: expected at most %d bytes", n,
			    KV_PATH_MAX - SWEEP_SUFFIX_MAX - 1);
		return 2;
	}
	snprintf(out, KV_PATH_MAX, a->out ? "%s" : "out/%s", a->out ? a->out : sw->name);
	return 0;
}

/*
 * Locks the sweep's directory for the whole sweep (outdir.h's lock beside
 * it) and removes the staging directories of points whose runs were killed
 * (points/.KEY.tmp-*): their runs are this sweep's, so holding the lock
 * makes them stale.  Returns the lock's descriptor or -1 with d filled.
 */
static int lock_sweep_dir(const char *out, struct kv_diag *d)
{
	char pts[PT_PATH];
	int fd = kv_path_lock(out, d);
	struct dirent *e;
	DIR *dp;

	if (fd < 0)
		return -1;
	snprintf(pts, sizeof(pts), "%s/points", out);
	dp = opendir(pts);
	while (dp && (e = readdir(dp))) {
		char *p;

		if (e->d_name[0] != '.' || !strstr(e->d_name, ".tmp-"))
			continue;
		p = kv_xasprintf("%s/%s", pts, e->d_name);
		kv_rmtree(p);
		free(p);
	}
	if (dp)
		closedir(dp);
	return fd;
}

/*
 * Runs the sweep's points (those of a's shard) and, when finish is set,
 * writes sweep.csv, the charts and the report.  lock: take the output
 * directory's lock (an MPI rank other than 0 runs under rank 0's).
 * Returns the exit status.
 */
static int sweep_once(struct sweep_args *a, int finish, int lock)
{
	struct sweep sw;
	struct runner r;
	struct kv_diag d;
	size_t i;
	int rc;

	if (sweep_load(&sw, a->path, &d) || sweep_expand(&sw, &d) || check_base(&sw, &d)) {
		kv_diag_print(&d, stderr);
		sweep_release(&sw);
		return 2;
	}
	memset(&r, 0, sizeof(r));
	r.sw = &sw;
	r.a = a;
	if ((rc = sweep_out_dir(&sw, a, r.out, &d))) {
		kv_diag_print(&d, stderr);
		sweep_release(&sw);
		return rc;
	}
	if (kv_mkdirs(r.out)) {
		fprintf(stderr, "kvsim: %s: cannot create: %s\n", r.out, strerror(errno));
		sweep_release(&sw);
		return 1;
	}
	r.lock_fd = -1;
	if (lock && (r.lock_fd = lock_sweep_dir(r.out, &d)) < 0) {
		kv_diag_print(&d, stderr);
		sweep_release(&sw);
		return 1;
	}
	for (i = 0; i < sw.n_pt; i++)
		r.total += in_shard(a, i);
	r.pid = kv_xcalloc((size_t)a->jobs, sizeof(*r.pid));
	r.slot_pt = kv_xcalloc((size_t)a->jobs, sizeof(*r.slot_pt));
	clock_gettime(CLOCK_MONOTONIC, &r.start);
	install_handlers();
	run_points(&r);
	if (finish)
		rc = sweep_finish(&r);
	else
		rc = sweep_stop ? KV_EXIT_SIGNAL(sweep_stop) : 0;
	free(r.pid);
	free(r.slot_pt);
	if (r.lock_fd >= 0)
		close(r.lock_fd);
	sweep_release(&sw);
	return rc;
}

#if KV_HAVE_MPI
/*
 * Rank 0's lock of the sweep's directory for the whole MPI sweep; *fd the
 * descriptor (kept open until exit).  Returns 0 or the exit status.
 */
static int sweep_lock_only(const struct sweep_args *a, int *fd)
{
	char out[KV_PATH_MAX];
	struct sweep sw;
	struct kv_diag d;
	int rc = 2;

	*fd = -1;
	if (!sweep_load(&sw, a->path, &d) && !(rc = sweep_out_dir(&sw, a, out, &d))) {
		rc = 1;
		if (kv_mkdirs(out))
			kv_diag_set(&d, KV_EIO, out, 0, 0, "", "cannot create: %s", strerror(errno));
		else if ((*fd = lock_sweep_dir(out, &d)) >= 0)
			rc = 0;
	}
	if (rc)
		kv_diag_print(&d, stderr);
	sweep_release(&sw);
	return rc;
}

/*
 * Under mpirun: rank k runs the points of shard k+1 of R (each with its -j
 * worker processes), then, after a barrier, rank 0 completes the sweep from
 * the points' directories -- every point is done by then, so it only reads
 * them back -- and writes sweep.csv and the charts, exactly as a single
 * process would.  The ranks share the output directory (one machine, or a
 * shared filesystem).
 */
static int sweep_mpi(struct sweep_args *a)
{
	int rank, size, rc, worst, lock_fd = -1;

	MPI_Init(NULL, NULL);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &size);
	if (size > 1 && a->n_shards > 1) {
		if (rank == 0)
			fprintf(stderr, "kvsim: sweep: --shard and mpirun exclude each other: expected one of them\n");
		MPI_Finalize();
		return 2;
	}
	if (size == 1) {
		rc = sweep_once(a, 1, 1);
		MPI_Finalize();
		return rc;
	}
	rc = rank == 0 ? sweep_lock_only(a, &lock_fd) : 0;
	MPI_Bcast(&rc, 1, MPI_INT, 0, MPI_COMM_WORLD);
	if (rc) {
		MPI_Finalize();
		return rc;
	}
	a->shard = rank + 1;
	a->n_shards = size;
	rc = sweep_once(a, 0, 0);
	MPI_Allreduce(&rc, &worst, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
	if (rank == 0 && worst != 2 && worst < 128) {
		a->shard = a->n_shards = 1;
		rc = sweep_once(a, 1, 0);
	} else if (rank == 0) {
		rc = worst;
	}
	MPI_Finalize();
	if (lock_fd >= 0)
		close(lock_fd);
	return rank == 0 ? rc : (worst == 2 || worst >= 128 ? worst : 0);
}
#endif

/* 1 when this process was started by mpirun (Open MPI or a PMI launcher). */
static int under_mpirun(void)
{
	return getenv("OMPI_COMM_WORLD_SIZE") || getenv("PMI_SIZE");
}

int kv_cmd_sweep(int argc, char **argv)
{
	struct sweep_args a;
	int rc = sweep_parse_args(argc, argv, &a);

	if (rc)
		return rc < 0 ? 0 : rc;
	if (under_mpirun()) {
#if KV_HAVE_MPI
		return sweep_mpi(&a);
#else
		fprintf(stderr, "kvsim: sweep: started by mpirun, but this kvsim was built without MPI (install libopenmpi-dev and reconfigure)\n");
		return 2;
#endif
	}
	return sweep_once(&a, 1, 1);
}

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

static void merge_usage(FILE *f)
{
	fputs("usage: kvsim sweep-merge OUT_DIR DIR...\n"
	      "\n"
	      "Merges the sweep.csv files of the shards DIR... (`kvsim sweep --shard I/N`)\n"
	      "into OUT_DIR/sweep.csv: the same header is required, rows are ordered by\n"
	      "point index, a point (key) present in several inputs is kept once.\n"
	      "\n"
	      "exit status: 0 merged, 1 output error, 2 bad input or usage\n",
	      f);
}

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
	text = slurp(path, &len);
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

	if (argc > 1 && (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h"))) {
		merge_usage(stdout);
		return 0;
	}
	if (argc < 3) {
		merge_usage(stderr);
		return 2;
	}
	for (k = 2; k < argc && !rc; k++)
		rc = merge_read(argv[k], &header, &rows, &n);
	if (!rc) {
		n = merge_dedup(rows, n);
		qsort(rows, n, sizeof(*rows), cmp_row);
		sb_puts(&b, header);
		sb_puts(&b, "\n");
		for (i = 0; i < n; i++)
			sb_puts(&b, rows[i].line);
		text = sb_take(&b);
		if (kv_mkdirs(argv[1])) {
			fprintf(stderr, "kvsim: %s: cannot create: %s\n", argv[1], strerror(errno));
			rc = 1;
		} else {
			rc = write_atomic(argv[1], text) ? 1 : 0;
		}
		free(text);
	}
	for (i = 0; i < n; i++)
		free(rows[i].line);
	free(rows);
	free(header);
	return rc;
}
