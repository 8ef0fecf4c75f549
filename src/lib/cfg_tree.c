/*
 * cfg_tree.c -- a YAML document as a tree of nodes with source positions:
 * building, freeing and walking nodes (all iterative: deeply nested input
 * cannot exhaust the C stack), and the messages that locate a node (its
 * file, line, column and key path).  See cfg.h and cfg_impl.h.
 *
 * A plain (unquoted) "", "~" or "null" is YAML's null: the typed readers
 * treat it as an absent key, so `key:` or `--set key=` selects the default.
 */
#include "cfg_impl.h"

#include <ctype.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

/* File name of nodes made by kv_cfg_set(); compared by address. */
const char set_file[] = "--set";

/* ---- nodes ---- */

struct kv_cfg_node *node_new(enum kv_cfg_type type, const char *file,
				    unsigned long line, unsigned long col)
{
	struct kv_cfg_node *n = kv_xcalloc(1, sizeof(*n));

	n->type = type;
	n->file = file;
	n->line = line;
	n->col = col;
	return n;
}

void node_append(struct kv_cfg_node *parent, struct kv_cfg_node *n)
{
	n->parent = parent;
	n->next = NULL;
	if (parent->last)
		parent->last->next = n;
	else
		parent->child = n;
	parent->last = n;
	parent->n_children++;
}

/* Frees top and its subtree, without recursion (top must be unlinked). */
void node_free(struct kv_cfg_node *top)
{
	struct kv_cfg_node *n = top, *p;

	while (n) {
		if (n->child) {
			p = n->child;
			n->child = p->next;
			n = p;
			continue;
		}
		p = n == top ? NULL : n->parent;
		free(n->key);
		free(n->value);
		free(n);
		n = p;
	}
}

/* Puts new in old's place among its siblings (keeping old's key) and frees old. */
void node_replace(struct kv_cfg_node *old, struct kv_cfg_node *new)
{
	struct kv_cfg_node *p = old->parent, **link = &p->child;

	while (*link != old)
		link = &(*link)->next;
	*link = new;
	new->next = old->next;
	new->parent = p;
	if (p->last == old)
		p->last = new;
	free(new->key);
	new->key = old->key;
	old->key = NULL;
	if (!new->key)
		new->key_line = new->key_col = 0;
	old->next = NULL;
	node_free(old);
}

/* Child of m whose key is the klen bytes at key, or NULL; does not mark it used. */
struct kv_cfg_node *map_find(const struct kv_cfg_node *m, const char *key,
				    size_t klen)
{
	struct kv_cfg_node *n;

	for (n = m->child; n; n = n->next)
		if (strlen(n->key) == klen && !memcmp(n->key, key, klen))
			return n;
	return NULL;
}

/* Next node after n in document order within top's subtree, or NULL. */
struct kv_cfg_node *preorder_next(struct kv_cfg_node *n,
					 const struct kv_cfg_node *top)
{
	if (n->child)
		return n->child;
	for (; n != top; n = n->parent)
		if (n->next)
			return n->next;
	return NULL;
}

/* YAML null: a plain "", "~", "null", "Null" or "NULL" (never a quoted scalar). */
int is_null(const struct kv_cfg_node *n)
{
	static const char *const nulls[] = { "", "~", "null", "Null", "NULL" };
	size_t i;

	if (n->type != KV_CFG_SCALAR || n->quoted)
		return 0;
	for (i = 0; i < KV_ARRAY_LEN(nulls); i++)
		if (!strcmp(n->value, nulls[i]))
			return 1;
	return 0;
}

/* ---- messages ---- */

/* s for a message: at most 60 bytes, control characters as '?', "..." when cut. */
const char *shown(const char *s, char *buf, size_t len)
{
	size_t i, max = KV_MIN(len - 4, (size_t)60);

	for (i = 0; s[i] && i < max; i++)
		buf[i] = iscntrl((unsigned char)s[i]) ? '?' : s[i];
	strcpy(buf + i, s[i] ? "..." : "");
	return buf;
}

/* What a node is, for "expected X, got Y". */
const char *describe(const struct kv_cfg_node *n, char *buf, size_t len)
{
	char v[64];

	if (n->type == KV_CFG_MAP)
		return "a mapping";
	if (n->type == KV_CFG_SEQ)
		return "a sequence";
	if (is_null(n))
		return "null (no value)";
	snprintf(buf, len, "'%s'", shown(n->value, v, sizeof(v)));
	return buf;
}

/* Writes names[] as "a, b, c" into buf. */
const char *join(const char *const *names, char *buf, size_t len)
{
	size_t off = 0;
	int r;

	buf[0] = '\0';
	for (; *names && off < len; names++) {
		r = snprintf(buf + off, len - off, "%s%s", off ? ", " : "", *names);
		off += r > 0 ? (size_t)r : 0;
	}
	return buf;
}

__attribute__((format(printf, 5, 0)))
static int node_verr(const struct kv_cfg_node *n, struct kv_diag *d, int err,
		     int at_key, const char *fmt, va_list ap)
{
	char path[sizeof(d->field)], msg[sizeof(d->msg)];

	vsnprintf(msg, sizeof(msg), fmt, ap);
	if (!n)
		return kv_diag_set(d, err, "", 0, 0, "", "%s", msg);
	return kv_diag_set(d, err, n->file, at_key ? n->key_line : n->line,
			   at_key ? n->key_col : n->col, kv_cfg_path(n, path, sizeof(path)),
			   "%s", msg);
}

/* Error err located at the value of n (at_key 0) or at its key (1). */
__attribute__((format(printf, 5, 6)))
int node_err(const struct kv_cfg_node *n, struct kv_diag *d, int err, int at_key,
		    const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	err = node_verr(n, d, err, at_key, fmt, ap);
	va_end(ap);
	return err;
}

int kv_cfg_error(struct kv_cfg_node *n, struct kv_diag *d, const char *fmt, ...)
{
	va_list ap;
	int err;

	va_start(ap, fmt);
	err = node_verr(n, d, KV_EINVAL, 0, fmt, ap);
	va_end(ap);
	return err;
}

/* Prepends the slen bytes at s before buf[*pos]; 0, or -1 leaving 3 bytes free fails. */
static int prepend(char *buf, size_t *pos, const char *s, size_t slen)
{
	if (*pos < slen + 3)
		return -1;
	*pos -= slen;
	memcpy(buf + *pos, s, slen);
	return 0;
}

/* One path segment of n: "[i]" in a sequence, else ".key" (no dot under the root). */
static int path_seg(const struct kv_cfg_node *n, char *buf, size_t *pos)
{
	const struct kv_cfg_node *p = n->parent, *c;
	char idx[32];
	size_t i = 0;

	if (p->type == KV_CFG_SEQ) {
		for (c = p->child; c != n; c = c->next)
			i++;
		snprintf(idx, sizeof(idx), "[%zu]", i);
		return prepend(buf, pos, idx, strlen(idx));
	}
	if (prepend(buf, pos, n->key, strlen(n->key)))
		return -1;
	return p->parent ? prepend(buf, pos, ".", 1) : 0;
}

/*
 * Built from the node up, at the end of buf, then moved to its start; a path
 * too long for buf keeps its tail behind "...".
 */
const char *kv_cfg_path(const struct kv_cfg_node *n, char *buf, size_t len)
{
	size_t pos = len - 1;

	if (len < 5) {
		if (len)
			buf[0] = '\0';
		return buf;
	}
	buf[pos] = '\0';
	for (; n && n->parent; n = n->parent) {
		if (path_seg(n, buf, &pos)) {
			pos += buf[pos] == '.';
			pos -= 3;
			memcpy(buf + pos, "...", 3);
			break;
		}
	}
	memmove(buf, buf + pos, len - pos);
	return buf;
}
