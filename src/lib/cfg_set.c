/*
 * cfg_set.c -- --set overrides: "a.b[1].c=VALUE" parsed as YAML (cfg_yaml.c)
 * and placed into a document's tree at the key path, creating the mappings
 * on the way (see cfg.h kv_cfg_set).  Messages locate the fault in the
 * assignment by column, as file "--set".
 */
#include "cfg_impl.h"

#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

static char *xstrndup(const char *s, size_t n)
{
	char *d = kv_xmalloc(n + 1);

	memcpy(d, s, n);
	d[n] = '\0';
	return d;
}

/* ---- --set overrides ---- */

/* State of one kv_cfg_set() walk along "a.b[1].c". */
struct set_walk {
	const char *s; /* the assignment */
	const char *p; /* cursor in the key path */
	const char *eq; /* the '=' ending the key path */
	const char *field; /* the key path, for messages */
	struct kv_cfg_node *val; /* the parsed value, owned until placed */
	struct kv_diag *d;
};

__attribute__((format(printf, 3, 4)))
static int set_err(const struct set_walk *w, const char *at, const char *fmt, ...)
{
	char msg[sizeof(w->d->msg)];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	return kv_diag_set(w->d, KV_EINVAL, set_file, 1, (unsigned long)(at - w->s) + 1,
			   w->field, "%s", msg);
}

static unsigned long set_col(const struct set_walk *w, const char *at)
{
	return (unsigned long)(at - w->s) + 1;
}

/* Fails: n cannot be walked through, "'a.b' is a scalar at x.yaml:3:5, not a mapping". */
static int set_not(const struct set_walk *w, const char *at, const struct kv_cfg_node *n,
		   const char *want)
{
	static const char *const kind[] = {
		[KV_CFG_SCALAR] = "a scalar",
		[KV_CFG_MAP] = "a mapping",
		[KV_CFG_SEQ] = "a sequence",
	};
	char path[128];

	return set_err(w, at, "'%s' is %s at %s:%lu:%lu, not %s",
		       kv_cfg_path(n, path, sizeof(path)), kind[n->type], n->file, n->line, n->col,
		       want);
}

/* Parses "[N]" at w->p into *idx. */
static int set_index(struct set_walk *w, size_t *idx)
{
	const char *at = w->p;
	char *end;

	if (!isdigit((unsigned char)at[1]))
		return set_err(w, at, "bad index: expected [N] with N a non-negative integer");
	errno = 0;
	*idx = strtoul(at + 1, &end, 10);
	if (*end != ']' || end >= w->eq || errno)
		return set_err(w, at, "bad index: expected [N] with N a non-negative integer");
	w->p = end + 1;
	return 0;
}

/* Item idx of sequence n (at `at` in the key path), through *item. */
static int set_item(struct set_walk *w, const char *at, struct kv_cfg_node *n, size_t idx,
		    struct kv_cfg_node **item)
{
	char path[128];
	size_t i;

	if (!n)
		return set_err(w, at, "no sequence to index: '%.*s' is not set",
			       (int)(at - w->s), w->s);
	if (n->type != KV_CFG_SEQ)
		return set_not(w, at, n, "a sequence");
	*item = n->child;
	for (i = 0; i < idx && *item; i++)
		*item = (*item)->next;
	if (!*item)
		return set_err(w, at, "'%s' has no item [%zu] (it has %zu)",
			       kv_cfg_path(n, path, sizeof(path)), idx, n->n_children);
	return 0;
}

/* Places w->val as child `key` (klen bytes, at column of `at`) of map m. */
static void set_place(struct set_walk *w, struct kv_cfg_node *m, const char *at, size_t klen)
{
	struct kv_cfg_node *old = map_find(m, at, klen), *v = w->val;

	w->val = NULL;
	v->key_line = 1;
	v->key_col = set_col(w, at);
	if (old) {
		node_replace(old, v);
		return;
	}
	v->key = xstrndup(at, klen);
	node_append(m, v);
}

/*
 * *n, the node named by the segment at `at` (klen bytes; NULL when map m
 * lacks it), as a mapping to walk into: made when absent, replaced when null.
 */
static int set_descend(struct set_walk *w, struct kv_cfg_node *m, struct kv_cfg_node **n,
		       const char *at, size_t klen)
{
	struct kv_cfg_node *map;

	if (*n && (*n)->type == KV_CFG_MAP)
		return 0;
	if (*n && !is_null(*n))
		return set_not(w, at, *n, "a mapping");
	map = node_new(KV_CFG_MAP, set_file, 1, set_col(w, at));
	map->key_line = 1;
	map->key_col = set_col(w, at);
	if (*n) {
		node_replace(*n, map);
	} else {
		map->key = xstrndup(at, klen);
		node_append(m, map);
	}
	*n = map;
	return 0;
}

/*
 * Walks key segments from map m: "key", then any "[N]", then '.' or the
 * end.  Ends by placing w->val; returns 0 or KV_EINVAL with d filled.
 */
static int set_walk(struct set_walk *w, struct kv_cfg_node *m)
{
	struct kv_cfg_node *n, *item = NULL;
	const char *at;
	size_t klen, idx = 0;
	int err;

	for (;;) {
		at = w->p;
		klen = strcspn(at, ".[=");
		if (!klen)
			return set_err(w, at, "empty key: expected key.path=value");
		w->p = at + klen;
		if (w->p == w->eq) {
			set_place(w, m, at, klen);
			return 0;
		}
		n = map_find(m, at, klen);
		while (*w->p == '[') {
			const char *bra = w->p;

			err = set_index(w, &idx);
			if (!err)
				err = set_item(w, bra, n, idx, &item);
			if (err)
				return err;
			if (w->p == w->eq) {
				node_replace(item, w->val);
				w->val = NULL;
				return 0;
			}
			n = item;
		}
		if (*w->p != '.')
			return set_err(w, w->p, "expected '.', '[' or '=' after a key");
		err = set_descend(w, m, &n, at, klen);
		if (err)
			return err;
		m = n;
		w->p++;
	}
}

int kv_cfg_set(struct kv_cfg_doc *doc, const char *assignment, struct kv_diag *d)
{
	const char *eq = strchr(assignment, '=');
	struct set_walk w = { .s = assignment, .p = assignment, .eq = eq, .d = d };
	char field[sizeof(d->field)], v[64];
	int err;

	if (!eq || eq == assignment)
		return kv_diag_set(d, KV_EINVAL, set_file, 1, 1, "",
				   "bad assignment '%s': expected key.path=value",
				   shown(assignment, v, sizeof(v)));
	snprintf(field, sizeof(field), "%.*s", (int)(eq - assignment), assignment);
	w.field = field;
	err = parse_text(set_file, eq + 1, strlen(eq + 1), (unsigned long)(eq + 1 - assignment),
			 field, &w.val, d);
	if (err)
		return err;
	if (!w.val) {
		w.val = node_new(KV_CFG_SCALAR, set_file, 1, set_col(&w, eq + 1));
		w.val->value = kv_xstrdup("");
	}
	if (!doc->root)
		doc->root = node_new(KV_CFG_MAP, set_file, 1, 1);
	err = set_walk(&w, doc->root);
	node_free(w.val);
	return err;
}
