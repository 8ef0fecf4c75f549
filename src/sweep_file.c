/*
 * sweep_file.c -- the sweep file (docs/sweeps.md): base, axes, zip groups,
 * seeds, target; and the grid of points it expands to, each keyed by a hash
 * of the base file, its sorted overrides and its seed.  See sweep.h.
 */
#include "sweep.h"
#include "opts.h"
#include "status.h"

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





void kv__sweep_release(struct sweep *sw)
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
		free(sw->axis[i].label);
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
char *kv__sweep_slurp(const char *path, size_t *len)
{
	FILE *f = kv_xfopen(path, "rb");
	struct sbuf b = { 0 };
	char buf[8192];
	size_t n;

	if (!f)
		return NULL;
	while ((n = fread(buf, 1, sizeof(buf), f)) > 0)
		kv__sweep_sb_putn(&b, buf, n);
	if (ferror(f)) {
		fclose(f);
		free(b.s);
		return NULL;
	}
	fclose(f);
	*len = b.len;
	return kv__sweep_sb_take(&b);
}

#define AXIS_LABEL_MAX 100 /* longest `label:` of an axis, bytes: a chart's axis title */

/*
 * The `label:` of an axis in its mapping form into *out (a heap string):
 * one line of printable text, at most AXIS_LABEL_MAX bytes.  0 or KV_EINVAL
 * located at the label.
 */
static int axis_label(struct kv_cfg_node *l, char **out, struct kv_diag *d)
{
	const char *p;

	if (!l)
		return 0;
	if (l->type != KV_CFG_SCALAR || !l->value || !l->value[0])
		return kv_cfg_error(l, d, "expected the axis's name on charts, a non-empty string");
	if (strlen(l->value) > AXIS_LABEL_MAX)
		return kv_cfg_error(l, d, "label of %zu bytes: expected at most %d",
				    strlen(l->value), AXIS_LABEL_MAX);
	for (p = l->value; *p; p++)
		if ((unsigned char)*p < 0x20 || *p == 0x7f)
			return kv_cfg_error(l, d, "label with a control character at byte %zu: expected one line of text",
					    (size_t)(p - l->value) + 1);
	*out = kv_xstrdup(l->value);
	return 0;
}

/*
 * Adds axis key (located at n) in dimension dim: n is the list of values, or
 * a mapping {values: LIST, label: TEXT}.
 */
static int add_axis(struct sweep *sw, struct kv_cfg_node *n, size_t dim, struct kv_diag *d)
{
	static const char *const keys[] = { "values", "label", NULL };
	struct kv_cfg_node *c, *vals = n;
	char *label = NULL;
	struct axis *a;
	size_t i;
	int rc;

	if (n->type == KV_CFG_MAP) {
		if ((rc = kv_cfg_check_keys(n, keys, d)))
			return rc;
		if (!(vals = kv_cfg_get(n, "values")))
			return kv_cfg_error(n, d, "expected `values:`, a non-empty list, beside `label:`");
		if ((rc = axis_label(kv_cfg_get(n, "label"), &label, d)))
			return rc;
	}
	if (vals->type != KV_CFG_SEQ || !vals->n_children) {
		free(label);
		return kv_cfg_error(vals, d, "expected a non-empty list of values, or {values: LIST, label: TEXT}");
	}
	if (sw->n_axes == SWEEP_MAX_AXES)
		return kv_cfg_error(n, d, "more than %d axes", SWEEP_MAX_AXES);
	for (i = 0; i < sw->n_axes; i++)
		if (!strcmp(sw->axis[i].key, n->key)) {
			free(label);
			return kv_diag_set(d, KV_EINVAL, n->file, n->key_line, n->key_col, n->key,
					   "axis '%s' appears twice", n->key);
		}
	a = &sw->axis[sw->n_axes++];
	a->key = kv_xstrdup(n->key);
	a->label = label;
	a->vals = kv_xcalloc(vals->n_children, sizeof(*a->vals));
	a->kv = kv_xcalloc(vals->n_children, sizeof(*a->kv));
	a->dim = dim;
	for (c = vals->child; c; c = c->next) {
		struct sbuf b = { 0 };

		a->vals[a->n_vals] = kv__sweep_node_text(c);
		kv__sweep_sb_printf(&b, "%s=", a->key);
		kv__sweep_sb_puts(&b, a->vals[a->n_vals]);
		a->kv[a->n_vals++] = kv__sweep_sb_take(&b);
	}
	n->used = vals->used = 1;
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
		sw->dim_len[sw->n_dims++] = sw->axis[sw->n_axes - 1].n_vals;
	}
	return 0;
}

static int read_zip(struct sweep *sw, struct kv_diag *d)
{
	struct kv_cfg_node *s = kv_cfg_get(sw->doc.root, "zip"), *g, *c;
	size_t first;
	int rc;

	if ((rc = kv_cfg_expect_seq(s, d)))
		return rc;
	for (g = s ? s->child : NULL; g; g = g->next) {
		g->used = 1;
		if (g->type != KV_CFG_MAP || !g->n_children)
			return kv_cfg_error(g, d, "expected a mapping of axes with equal-length lists");
		first = sw->n_axes;
		for (c = g->child; c; c = c->next) {
			if ((rc = add_axis(sw, c, sw->n_dims, d)))
				return rc;
			if (sw->axis[sw->n_axes - 1].n_vals != sw->axis[first].n_vals)
				return kv_cfg_error(c, d, "%zu values, but '%s' has %zu: zipped axes need equal lengths",
						    sw->axis[sw->n_axes - 1].n_vals, g->child->key,
						    sw->axis[first].n_vals);
		}
		sw->dim_len[sw->n_dims++] = sw->axis[first].n_vals;
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
			char *v = kv__sweep_node_text(c);
			struct sbuf b = { 0 };

			kv__sweep_sb_printf(&b, "%s=", key);
			kv__sweep_sb_puts(&b, v);
			free(v);
			sw->sets = kv_xrealloc(sw->sets, (sw->n_sets + 1) * sizeof(*sw->sets));
			sw->sets[sw->n_sets++] = kv__sweep_sb_take(&b);
		}
	}
	return 0;
}

/* The summary.csv metrics a target may name, as one ", "-separated list (heap). */
static char *metric_list(void)
{
	struct sbuf b = { 0 };
	size_t i;

	for (i = 0; kv_summary_names[i]; i++)
		kv__sweep_sb_printf(&b, "%s%s", i ? ", " : "", kv_summary_names[i]);
	return kv__sweep_sb_take(&b);
}

/* Parses conditions text found at node n into sw->cond; a bad one is an error at n (exit 2). */
static int parse_conds(struct sweep *sw, struct kv_cfg_node *n, const char *text, struct kv_diag *d)
{
	char err[512], *list;
	int k = kv_cond_parse(text, kv_summary_names, sw->cond + sw->n_cond,
			      KV_MAX_CONDS - sw->n_cond, err, sizeof(err));
	int rc;

	if (k > 0) {
		sw->n_cond += (size_t)k;
		return 0;
	}
	if (!strstr(err, "unknown metric"))
		return kv_cfg_error(n, d, "%s", err);
	list = metric_list();
	rc = kv_cfg_error(n, d, "%s: expected one of: %s", err, list);
	free(list);
	return rc;
}

/* target.meet: a string of conditions joined by "and", or a list of such strings. */
static int read_meet(struct sweep *sw, struct kv_cfg_node *t, struct kv_diag *d)
{
	struct kv_cfg_node *m = kv_cfg_get(t, "meet"), *c;
	int rc;

	if (m->type == KV_CFG_SCALAR)
		return parse_conds(sw, m, m->value, d);
	if ((rc = kv_cfg_expect_seq(m, d)))
		return rc;
	if (!m->n_children)
		return kv_cfg_error(m, d, "expected conditions such as 'ttft_p99_s <= 1'");
	for (c = m->child; c; c = c->next) {
		c->used = 1;
		if (c->type != KV_CFG_SCALAR)
			return kv_cfg_error(c, d, "expected a condition such as 'ttft_p99_s <= 1'");
		if ((rc = parse_conds(sw, c, c->value, d)))
			return rc;
	}
	return 0;
}

/*
 * target: {meet: "A <= x and B >= y", minimize: AXIS, judge: ci|mean}, or
 * the older {metric: M, max: X, minimize: AXIS} (one condition M <= X);
 * maximize: AXIS instead of minimize asks for the largest value (DistServe's
 * highest rate meeting an attainment goal).
 */
static int read_target(struct sweep *sw, struct kv_diag *d)
{
	static const char *const keys[] = { "metric", "max", "meet", "minimize", "maximize", "judge",
					    NULL };
	static const char *const judges[] = { "ci", "mean", NULL };
	struct kv_cfg_node *t = kv_cfg_get(sw->doc.root, "target");
	char metric[sizeof(sw->cond[0].metric)];
	size_t i;
	int rc, judge;

	if (!t || (t->type == KV_CFG_SCALAR && !t->quoted && (!*t->value || !strcmp(t->value, "~") ||
							       !strcmp(t->value, "null"))))
		return 0;
	if ((rc = kv_cfg_expect_map(t, d)) || (rc = kv_cfg_check_keys(t, keys, d)))
		return rc;
	if (!kv_cfg_get(t, "minimize") == !kv_cfg_get(t, "maximize") ||
	    (!kv_cfg_get(t, "meet") == !kv_cfg_get(t, "metric")) ||
	    (!kv_cfg_get(t, "metric") != !kv_cfg_get(t, "max")))
		return kv_cfg_error(t, d, "a target needs minimize (or maximize) and either meet "
				    "(conditions such as 'ttft_p99_s <= 1 and tpot_p99_s <= 0.1') or "
				    "metric and max");
	sw->t_max = kv_cfg_get(t, "maximize") != NULL;
	if (kv_cfg_get(t, "meet")) {
		if ((rc = read_meet(sw, t, d)))
			return rc;
	} else {
		if ((rc = kv_cfg_str(t, "metric", NULL, metric, sizeof(metric), d)))
			return rc;
		memcpy(sw->cond[0].metric, metric, sizeof(metric));
		sw->cond[0].op = KV_CMP_LE;
		if ((rc = kv_cfg_dbl(t, "max", 0, -1e300, 1e300, &sw->cond[0].x, d)))
			return rc;
		for (i = 0; kv_summary_names[i] && strcmp(kv_summary_names[i], metric); i++)
			;
		if (!kv_summary_names[i]) {
			char *list = metric_list();

			rc = kv_cfg_error(kv_cfg_get(t, "metric"), d,
					  "unknown metric '%s': expected one of: %s", metric, list);
			free(list);
			return rc;
		}
		sw->n_cond = 1;
	}
	if ((rc = kv_cfg_enum(t, "judge", judges, 0, &judge, d)) ||
	    (rc = kv_cfg_str(t, sw->t_max ? "maximize" : "minimize", NULL, sw->t_axis,
			      sizeof(sw->t_axis), d)))
		return rc;
	sw->t_mean = judge == 1;
	for (i = 0; i < sw->n_axes; i++)
		if (!strcmp(sw->axis[i].key, sw->t_axis))
			break;
	if (i == sw->n_axes) { /* a summary column: the cheapest combination meeting the target */
		for (i = 0; kv_summary_names[i] && strcmp(kv_summary_names[i], sw->t_axis); i++)
			;
		if (!kv_summary_names[i])
			return kv_cfg_error(kv_cfg_get(t, sw->t_max ? "maximize" : "minimize"), d,
					    "'%s' is not an axis of the sweep nor a summary.csv "
					    "column: expected an axis key, or a metric such as cost_usd",
					    sw->t_axis);
		sw->t_metric = 1;
	}
	sw->has_target = 1;
	return 0;
}

/*
 * The Pareto metrics from text "A,B" into sw->pareto (from `pareto:` or
 * --pareto): two summary.csv column names.  0, or -1 with a message in err
 * (sw->pareto[0] then "").
 */
int kv__sweep_set_pareto(struct sweep *sw, const char *text, char *err, size_t errlen)
{
	const char *comma = strchr(text, ',');
	size_t i, k, n;

	if (!comma || strchr(comma + 1, ',')) {
		snprintf(err, errlen, "bad Pareto metrics '%s': expected two columns, A,B", text);
		return -1;
	}
	for (k = 0; k < 2; k++) {
		const char *s = k ? comma + 1 : text;

		n = k ? strlen(s) : (size_t)(comma - text);
		if (n >= sizeof(sw->pareto[k]))
			n = sizeof(sw->pareto[k]) - 1;
		memcpy(sw->pareto[k], s, n);
		sw->pareto[k][n] = 0;
		for (i = 0; kv_summary_names[i] && strcmp(kv_summary_names[i], sw->pareto[k]); i++)
			;
		if (!kv_summary_names[i]) {
			snprintf(err, errlen, "unknown Pareto metric '%s'", sw->pareto[k]);
			sw->pareto[0][0] = 0;
			return -1;
		}
	}
	return 0;
}

/* `pareto: [A, B]`: two summary columns. */
static int read_pareto(struct sweep *sw, struct kv_diag *d)
{
	struct kv_cfg_node *n = kv_cfg_get(sw->doc.root, "pareto"), *c;
	char text[256], err[512], *list;
	size_t off = 0;
	int rc;

	if (!n)
		return 0;
	if ((rc = kv_cfg_expect_seq(n, d)))
		return rc;
	if (n->n_children != 2)
		return kv_cfg_error(n, d, "%zu metrics: expected two summary.csv columns, e.g. [gpus, "
				    "ttft_p99_s]", n->n_children);
	for (c = n->child; c; c = c->next) {
		c->used = 1;
		if (c->type != KV_CFG_SCALAR)
			return kv_cfg_error(c, d, "expected a summary.csv column name");
		off += (size_t)snprintf(text + off, sizeof(text) - KV_MIN(off, sizeof(text)), "%s%s",
					off ? "," : "", c->value);
	}
	if (!kv__sweep_set_pareto(sw, text, err, sizeof(err)))
		return 0;
	list = metric_list();
	rc = kv_cfg_error(n, d, "%s: expected two of: %s", err, list);
	free(list);
	return rc;
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
int kv__sweep_read(struct sweep *sw, const char *path, struct kv_diag *d)
{
	static const char *const keys[] = { "name", "description", "base", "axes", "zip",
					    "seeds", "set", "target", "pareto", NULL };
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
	if ((rc = read_target(sw, d)))
		return rc;
	return read_pareto(sw, d);
}

/* Loads and checks the sweep file (not the points). Returns 0 or a code with d filled. */
int kv__sweep_load(struct sweep *sw, const char *path, struct kv_diag *d)
{
	int rc;

	memset(sw, 0, sizeof(*sw));
	if ((rc = kv_cfg_load(&sw->doc, path, d)))
		return rc;
	return kv__sweep_read(sw, path, d);
}

/* --- points -------------------------------------------------------------- */

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The overrides of point p ("k=v", `set:` first, then the axes); returns the count. */
size_t kv__sweep_point_sets(const struct sweep *sw, const struct point *p, char **out)
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
int kv__sweep_expand(struct sweep *sw, struct kv_diag *d)
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

/* --- a point's summary columns ------------------------------------------ */

/* The summary column names: those of the first point (in point order) that has them. */
const struct point *kv__sweep_header_point(const struct sweep *sw)
{
	size_t i;

	for (i = 0; i < sw->n_pt; i++)
		if (sw->pt[i].n_fields)
			return &sw->pt[i];
	return NULL;
}

/* The value of column name in p, or "" (points with another header map by name). */
const char *kv__sweep_field(const struct point *p, const struct point *h, size_t j)
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
