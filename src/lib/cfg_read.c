/*
 * cfg_read.c -- the typed, validating readers of a config tree and its
 * structure checks (see cfg.h); numbers through cfg_units.c.
 */
#include "cfg_impl.h"

#include <ctype.h>
#include <errno.h>
#include <float.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* ---- typed readers ---- */

/*
 * The child `key` of m for a typed reader: returns 1 with *n set when it is
 * there, 0 when absent (m NULL or null too), or KV_EINVAL when m is not a
 * mapping or the child is null ("key:", "--set key="): `what` names the
 * value expected.  A null value is not taken for the default: someone who
 * wrote the key meant a value, and a default silently standing in for it
 * (a run of the built-in model, an unbounded run) changes what they asked.
 */
static int reader_get(struct kv_cfg_node *m, const char *key, const char *what,
		      struct kv_cfg_node **n, struct kv_diag *d)
{
	int err = kv_cfg_expect_map(m, d);
	char v[64];

	*n = NULL;
	if (err)
		return err;
	*n = kv_cfg_get(m, key);
	if (*n && is_null(*n))
		return node_err(*n, d, KV_EINVAL, 0,
				"no value%s%s%s: expected %s (leave the key out for the default)",
				(*n)->value[0] ? " ('" : "", shown((*n)->value, v, sizeof(v)),
				(*n)->value[0] ? "' is YAML's null)" : "", what);
	return *n != NULL;
}

/* A scalar value is required: fills d naming `what` otherwise. */
static int need_scalar(struct kv_cfg_node *n, const char *what, struct kv_diag *d)
{
	char buf[80];

	if (n->type == KV_CFG_SCALAR)
		return 0;
	return node_err(n, d, KV_EINVAL, 0, "expected %s, got %s", what,
			describe(n, buf, sizeof(buf)));
}

void kv_cfg_wrap_scalar(struct kv_cfg_node *m, const char *key, const char *inner)
{
	struct kv_cfg_node *sc = m && m->type == KV_CFG_MAP ? map_find(m, key, strlen(key)) : NULL;
	struct kv_cfg_node *map, **link;

	if (!sc || sc->type != KV_CFG_SCALAR || is_null(sc))
		return;
	map = node_new(KV_CFG_MAP, sc->file, sc->line, sc->col);
	map->key_line = sc->key_line;
	map->key_col = sc->key_col;
	for (link = &m->child; *link != sc; link = &(*link)->next)
		;
	*link = map;
	map->next = sc->next;
	map->parent = m;
	if (m->last == sc)
		m->last = map;
	map->key = sc->key;
	sc->key = kv_xstrdup(inner);
	sc->key_line = sc->line;
	sc->key_col = sc->col;
	node_append(map, sc);
}

struct kv_cfg_node *kv_cfg_get(struct kv_cfg_node *m, const char *key)
{
	struct kv_cfg_node *n;

	if (!m || m->type != KV_CFG_MAP)
		return NULL;
	n = map_find(m, key, strlen(key));
	if (n)
		n->used = 1;
	return n;
}

int kv_cfg_u64(struct kv_cfg_node *m, const char *key, uint64_t def, uint64_t min,
	       uint64_t max, uint64_t *out, struct kv_diag *d)
{
	struct kv_cfg_node *n;
	int got = reader_get(m, key, conv_u64.what, &n, d);

	if (got <= 0) {
		if (!got)
			*out = def;
		return got;
	}
	return node_conv(n, &conv_u64, min, max, out, d);
}

int kv_cfg_dbl(struct kv_cfg_node *m, const char *key, double def, double min, double max,
	       double *out, struct kv_diag *d)
{
	struct kv_cfg_node *n;
	int got = reader_get(m, key, "a number", &n, d);

	if (got <= 0) {
		if (!got)
			*out = def;
		return got;
	}
	return kv_cfg_node_dbl(n, min, max, out, d);
}

int kv_cfg_bytes(struct kv_cfg_node *m, const char *key, uint64_t def, uint64_t min,
		 uint64_t max, uint64_t *out, struct kv_diag *d)
{
	struct kv_cfg_node *n;
	int got = reader_get(m, key, conv_bytes.what, &n, d);

	if (got <= 0) {
		if (!got)
			*out = def;
		return got;
	}
	return node_conv(n, &conv_bytes, min, max, out, d);
}

int kv_cfg_ns(struct kv_cfg_node *m, const char *key, kv_ns def, kv_ns min, kv_ns max,
	      kv_ns *out, struct kv_diag *d)
{
	struct kv_cfg_node *n;
	int got = reader_get(m, key, conv_ns.what, &n, d);

	if (got <= 0) {
		if (!got)
			*out = def;
		return got;
	}
	return node_conv(n, &conv_ns, min, max, out, d);
}

/* Index of s in names[] (case-insensitive), or -1. */
static int find_name(const char *const *names, const char *s)
{
	int i;

	for (i = 0; names[i]; i++)
		if (!strcasecmp(names[i], s))
			return i;
	return -1;
}

int kv_cfg_bool(struct kv_cfg_node *m, const char *key, int def, int *out,
		struct kv_diag *d)
{
	static const char *const yes[] = { "true", "yes", "on", NULL };
	static const char *const no[] = { "false", "no", "off", NULL };
	static const char expect[] = "true/false, yes/no or on/off";
	struct kv_cfg_node *n;
	char v[64];
	int got = reader_get(m, key, expect, &n, d);

	if (got <= 0) {
		if (!got)
			*out = !!def;
		return got;
	}
	got = need_scalar(n, expect, d);
	if (got)
		return got;
	if (!n->quoted && (find_name(yes, n->value) >= 0 || find_name(no, n->value) >= 0)) {
		*out = find_name(yes, n->value) >= 0;
		return 0;
	}
	return node_err(n, d, KV_EINVAL, 0, "bad value '%s'%s: expected %s%s",
			shown(n->value, v, sizeof(v)), n->quoted ? " (quoted)" : "", expect,
			n->quoted ? " without quotes" : "");
}

int kv_cfg_str(struct kv_cfg_node *m, const char *key, const char *def, char *buf,
	       size_t len, struct kv_diag *d)
{
	struct kv_cfg_node *n;
	size_t vlen;
	int got = reader_get(m, key, "a string (quote it, '', for an empty one)", &n, d);

	if (got <= 0) {
		if (!got)
			snprintf(buf, len, "%s", def ? def : "");
		return got;
	}
	got = need_scalar(n, "a string", d);
	if (got)
		return got;
	vlen = strlen(n->value);
	if (vlen >= len)
		return node_err(n, d, KV_ERANGE, 0, "value too long (%zu bytes): at most %zu bytes",
				vlen, len - 1);
	memcpy(buf, n->value, vlen + 1);
	return 0;
}

int kv_cfg_enum(struct kv_cfg_node *m, const char *key, const char *const *names, int def,
		int *out, struct kv_diag *d)
{
	char list[512], v[64], what[540];
	struct kv_cfg_node *n;
	int i, got;

	join(names, list, sizeof(list));
	snprintf(what, sizeof(what), "one of: %s", list);
	got = reader_get(m, key, what, &n, d);
	if (got <= 0) {
		if (!got)
			*out = def;
		return got;
	}
	if (n->type != KV_CFG_SCALAR)
		return node_err(n, d, KV_EINVAL, 0, "expected one of: %s; got %s", list,
				describe(n, v, sizeof(v)));
	for (i = 0; names[i]; i++) {
		if (!strcmp(names[i], n->value)) {
			*out = i;
			return 0;
		}
	}
	return node_err(n, d, KV_EINVAL, 0, "bad value '%s': expected one of: %s",
			shown(n->value, v, sizeof(v)), list);
}

/* ---- structure checks ---- */

int kv_cfg_expect_map(struct kv_cfg_node *n, struct kv_diag *d)
{
	char what[80];

	if (!n || n->type == KV_CFG_MAP || is_null(n))
		return 0;
	return node_err(n, d, KV_EINVAL, 0, "expected a mapping (key: value), got %s",
			describe(n, what, sizeof(what)));
}

int kv_cfg_expect_seq(struct kv_cfg_node *n, struct kv_diag *d)
{
	char what[80];

	if (!n || n->type == KV_CFG_SEQ || is_null(n))
		return 0;
	return node_err(n, d, KV_EINVAL, 0, "expected a sequence ([a, b] or '- ' items), got %s",
			describe(n, what, sizeof(what)));
}

int kv_cfg_check_keys(struct kv_cfg_node *m, const char *const *allowed, struct kv_diag *d)
{
	char list[512], k[64];
	struct kv_cfg_node *n;
	size_t i;
	int err = kv_cfg_expect_map(m, d);

	if (err || !m || m->type != KV_CFG_MAP)
		return err;
	for (n = m->child; n; n = n->next) {
		for (i = 0; allowed[i] && strcmp(allowed[i], n->key); i++)
			;
		if (allowed[i]) {
			n->used = 1;
			continue;
		}
		shown(n->key, k, sizeof(k));
		if (!allowed[0])
			return node_err(n, d, KV_EINVAL, 1,
					"unknown key '%s': this section takes no keys", k);
		return node_err(n, d, KV_EINVAL, 1, "unknown key '%s': expected one of: %s", k,
				join(allowed, list, sizeof(list)));
	}
	return 0;
}

int kv_cfg_check_unused(struct kv_cfg_node *m, struct kv_diag *d)
{
	struct kv_cfg_node *n;
	char k[64];

	if (!m)
		return 0;
	for (n = preorder_next(m, m); n; n = preorder_next(n, m))
		if (n->key && !n->used)
			return node_err(n, d, KV_EINVAL, 1, "unknown key '%s'",
					shown(n->key, k, sizeof(k)));
	return 0;
}

int kv_cfg_resolve_path(const struct kv_cfg_doc *doc, const struct kv_cfg_node *n,
			const char *rel, char *buf, size_t len)
{
	const char *dir = doc->dir;
	int r;

	if (rel[0] == '/' || (n && n->file == set_file) || !dir || !strcmp(dir, "."))
		r = snprintf(buf, len, "%s", rel);
	else
		r = snprintf(buf, len, "%s%s%s", dir, dir[strlen(dir) - 1] == '/' ? "" : "/", rel);
	return r < 0 || (size_t)r >= len ? KV_ERANGE : 0;
}

