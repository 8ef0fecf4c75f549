/*
 * cfg_tree.c -- a YAML document as a tree with source positions, and --set
 * overrides (see cfg.h).
 *
 * Building: libyaml's event API drives an iterative builder (no recursion,
 * so deeply nested input cannot exhaust the C stack; freeing and walking
 * are iterative for the same reason).  The builder keeps one open
 * collection `cur` and, inside a mapping, one pending key: a scalar event
 * in a mapping with no pending key becomes the key; any other node event
 * appends a child to `cur`, and a collection start makes that child the new
 * `cur`.  libyaml marks are 0-based; nodes store them 1-based.  Nesting is
 * capped at MAX_DEPTH: libyaml's own cost grows with the square of
 * the flow depth, and no configuration needs more than a handful of levels.
 *
 * A plain (unquoted) "", "~" or "null" is YAML's null: the typed readers
 * treat it as an absent key, so `key:` or `--set key=` selects the default.
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
#include <yaml.h>

#define MAX_DEPTH 1000 /* deepest nesting of collections accepted */

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
static void node_free(struct kv_cfg_node *top)
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
static void node_replace(struct kv_cfg_node *old, struct kv_cfg_node *new)
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

static char *xstrndup(const char *s, size_t n)
{
	char *d = kv_xmalloc(n + 1);

	memcpy(d, s, n);
	d[n] = '\0';
	return d;
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

/* ---- building from libyaml events ---- */

/*
 * The keyed children of every mapping built so far, for the duplicate-key
 * check: open addressing on (mapping, key), at most half full.  Scanning
 * the mapping's children instead made a mapping of n keys cost n^2 (20,000
 * keys took 2 s, 100,000 over a minute).
 */
struct keyset {
	struct kv_cfg_node **slot; /* cap slots; NULL is empty */
	size_t cap; /* a power of two, or 0 before the first key */
	size_t n; /* nodes in slot[] */
};

/* FNV-1a of the key, started from the mapping's address. */
static size_t keyset_hash(const struct kv_cfg_node *map, const char *key, size_t len)
{
	uint64_t h = 0xcbf29ce484222325ULL ^ (uint64_t)(uintptr_t)map;
	size_t i;

	for (i = 0; i < len; i++) {
		h ^= (unsigned char)key[i];
		h *= 0x100000001b3ULL;
	}
	return (size_t)(h ^ (h >> 32));
}

/* The child of map whose key is the len bytes at key, or NULL. */
static struct kv_cfg_node *keyset_find(const struct keyset *ks, const struct kv_cfg_node *map,
				       const char *key, size_t len)
{
	size_t i;

	if (!ks->cap)
		return NULL;
	for (i = keyset_hash(map, key, len) & (ks->cap - 1); ks->slot[i];
	     i = (i + 1) & (ks->cap - 1)) {
		const struct kv_cfg_node *n = ks->slot[i];

		if (n->parent == map && strlen(n->key) == len && !memcmp(n->key, key, len))
			return ks->slot[i];
	}
	return NULL;
}

/* Adds n (a child of a mapping, with its key), doubling the table when half full. */
static void keyset_add(struct keyset *ks, struct kv_cfg_node *n)
{
	size_t i;

	if (2 * (ks->n + 1) > ks->cap) {
		struct keyset big = { NULL, ks->cap ? 2 * ks->cap : 64, 0 };

		big.slot = kv_xcalloc(big.cap, sizeof(*big.slot));
		for (i = 0; i < ks->cap; i++)
			if (ks->slot[i])
				keyset_add(&big, ks->slot[i]);
		free(ks->slot);
		*ks = big;
	}
	for (i = keyset_hash(n->parent, n->key, strlen(n->key)) & (ks->cap - 1); ks->slot[i];
	     i = (i + 1) & (ks->cap - 1))
		;
	ks->slot[i] = n;
	ks->n++;
}

struct builder {
	yaml_parser_t parser;
	const char *file; /* reported file name (owned by the document, or set_file) */
	const char *text; /* the input, for the tab hint */
	size_t len; /* bytes of text */
	unsigned long col_off; /* added to columns on the first line (--set values) */
	const char *field; /* field of syntax errors: "" or the --set key path */
	struct kv_cfg_node *root; /* the first node, NULL until seen */
	struct kv_cfg_node *cur; /* innermost open collection, NULL outside */
	char *key; /* pending mapping key, NULL when a key comes next */
	unsigned long key_line, key_col; /* its position */
	int docs; /* documents started */
	int depth; /* open collections */
	struct keyset keys; /* keyed children built so far */
	struct kv_diag *d;
};

/*
 * 1-based position of mark m.  A one-line --set value stays on line 1:
 * libyaml reports its end of input on a line 2 of its own.
 */
static void b_pos(const struct builder *b, yaml_mark_t m, unsigned long *line,
		  unsigned long *col)
{
	if (b->file == set_file && !memchr(b->text, '\n', b->len)) {
		*line = 1;
		*col = b->col_off + KV_MIN(m.index, b->len) + 1;
		return;
	}
	*line = m.line + 1;
	*col = m.column + 1 + (m.line ? 0 : b->col_off);
}

__attribute__((format(printf, 3, 4)))
static int b_err(struct builder *b, yaml_mark_t m, const char *fmt, ...)
{
	char msg[sizeof(b->d->msg)];
	unsigned long line, col;
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	b_pos(b, m, &line, &col);
	return kv_diag_set(b->d, KV_EINVAL, b->file, line, col, b->field, "%s", msg);
}

/* Rejects anchors and tags other than !!str; sets *str for !!str. */
static int b_props(struct builder *b, yaml_mark_t m, const yaml_char_t *anchor,
		   const yaml_char_t *tag, int *str)
{
	if (anchor)
		return b_err(b, m, "anchors (&%s) are not supported", (const char *)anchor);
	*str = tag && !strcmp((const char *)tag, YAML_STR_TAG);
	if (tag && !*str)
		return b_err(b, m, "tags (%s) are not supported", (const char *)tag);
	return 0;
}

/* A scalar where a mapping expects a key: checks it is new and keeps it pending. */
static int b_key(struct builder *b, const yaml_event_t *ev)
{
	const char *k = (const char *)ev->data.scalar.value;
	struct kv_cfg_node *dup = keyset_find(&b->keys, b->cur, k, ev->data.scalar.length);
	char v[64];

	if (dup)
		return b_err(b, ev->start_mark, "duplicate key '%s' (first defined at line %lu)",
			     shown(k, v, sizeof(v)), dup->key_line);
	b->key = kv_xstrdup(k);
	b_pos(b, ev->start_mark, &b->key_line, &b->key_col);
	return 0;
}

/* Links a new node under the open collection (taking the pending key) or as root. */
static void b_attach(struct builder *b, struct kv_cfg_node *n)
{
	if (!b->cur) {
		b->root = n;
		return;
	}
	if (b->cur->type == KV_CFG_MAP) {
		n->key = b->key;
		n->key_line = b->key_line;
		n->key_col = b->key_col;
		b->key = NULL;
		node_append(b->cur, n);
		keyset_add(&b->keys, n);
		return;
	}
	node_append(b->cur, n);
}

static int b_want_key(const struct builder *b)
{
	return b->cur && b->cur->type == KV_CFG_MAP && !b->key;
}

static int b_scalar(struct builder *b, const yaml_event_t *ev)
{
	const char *v = (const char *)ev->data.scalar.value;
	size_t len = ev->data.scalar.length;
	struct kv_cfg_node *n;
	unsigned long line, col;
	int str, err;

	err = b_props(b, ev->start_mark, ev->data.scalar.anchor, ev->data.scalar.tag, &str);
	if (err)
		return err;
	if (memchr(v, '\0', len))
		return b_err(b, ev->start_mark, "NUL character in a string");
	if (b_want_key(b))
		return b_key(b, ev);
	b_pos(b, ev->start_mark, &line, &col);
	n = node_new(KV_CFG_SCALAR, b->file, line, col);
	n->value = kv_xstrdup(v);
	n->quoted = str || ev->data.scalar.style != YAML_PLAIN_SCALAR_STYLE;
	b_attach(b, n);
	return 0;
}

static int b_start(struct builder *b, const yaml_event_t *ev, enum kv_cfg_type type)
{
	const yaml_char_t *anchor, *tag;
	struct kv_cfg_node *n;
	unsigned long line, col;
	int str, err;

	anchor = type == KV_CFG_MAP ? ev->data.mapping_start.anchor :
				      ev->data.sequence_start.anchor;
	tag = type == KV_CFG_MAP ? ev->data.mapping_start.tag : ev->data.sequence_start.tag;
	err = b_props(b, ev->start_mark, anchor, tag, &str);
	if (err)
		return err;
	if (b_want_key(b))
		return b_err(b, ev->start_mark,
			     "a mapping or sequence as a key is not supported");
	if (++b->depth > MAX_DEPTH)
		return b_err(b, ev->start_mark, "nested deeper than %d levels",
			     MAX_DEPTH);
	b_pos(b, ev->start_mark, &line, &col);
	n = node_new(type, b->file, line, col);
	b_attach(b, n);
	b->cur = n;
	return 0;
}

static int b_event(struct builder *b, const yaml_event_t *ev)
{
	switch (ev->type) {
	case YAML_DOCUMENT_START_EVENT:
		if (b->docs++)
			return b_err(b, ev->start_mark,
				     "a second YAML document ('---') is not allowed");
		return 0;
	case YAML_ALIAS_EVENT:
		return b_err(b, ev->start_mark, "aliases (*%s) are not supported",
			     (const char *)ev->data.alias.anchor);
	case YAML_SCALAR_EVENT:
		return b_scalar(b, ev);
	case YAML_SEQUENCE_START_EVENT:
		return b_start(b, ev, KV_CFG_SEQ);
	case YAML_MAPPING_START_EVENT:
		return b_start(b, ev, KV_CFG_MAP);
	case YAML_SEQUENCE_END_EVENT:
	case YAML_MAPPING_END_EVENT:
		b->cur = b->cur->parent;
		b->depth--;
		return 0;
	default:
		return 0;
	}
}

/* 0-based line `line` of the text has a tab in its indentation. */
static int tab_indent(const struct builder *b, size_t line)
{
	size_t i = 0;

	for (; line && i < b->len; i++)
		if (b->text[i] == '\n')
			line--;
	for (; i < b->len && (b->text[i] == ' ' || b->text[i] == '\t'); i++)
		if (b->text[i] == '\t')
			return 1;
	return 0;
}

/* libyaml reader errors give a byte offset only: turn it into line and column. */
static int b_reader_err(struct builder *b)
{
	const yaml_parser_t *p = &b->parser;
	yaml_mark_t m = { 0, 0, 0 };
	size_t i;

	for (i = 0; i < p->problem_offset && i < b->len; i++, m.column++) {
		if (b->text[i] == '\n') {
			m.line++;
			m.column = (size_t)-1;
		}
	}
	if (p->problem_value != -1)
		return b_err(b, m, "invalid input: %s (byte 0x%02x)", p->problem,
			     (unsigned)p->problem_value);
	return b_err(b, m, "invalid input: %s", p->problem);
}

/* Fills b->d from libyaml's error: problem at its mark, context and where it began. */
static int b_syntax_err(struct builder *b)
{
	const yaml_parser_t *p = &b->parser;
	unsigned long line, col;
	char ctx[256] = "";

	if (p->error == YAML_MEMORY_ERROR) {
		fputs("kvsim: out of memory in libyaml\n", stderr);
		exit(3);
	}
	if (p->error == YAML_READER_ERROR)
		return b_reader_err(b);
	if (p->context) {
		b_pos(b, p->context_mark, &line, &col);
		snprintf(ctx, sizeof(ctx), " (%s at line %lu, column %lu)", p->context, line,
			 col);
	}
	return b_err(b, p->problem_mark, "invalid YAML: %s%s%s",
		     p->problem ? p->problem : "syntax error", ctx,
		     tab_indent(b, p->problem_mark.line) ?
			     "; YAML does not allow tabs in indentation" : "");
}

/*
 * Parses len bytes of text into *root (NULL for an empty stream).  Nodes
 * report `file`; columns on the first line are shifted by col_off.
 * Returns 0 or KV_EINVAL with d filled (field `field`).
 */
static int parse_text(const char *file, const char *text, size_t len,
		      unsigned long col_off, const char *field, struct kv_cfg_node **root,
		      struct kv_diag *d)
{
	struct builder b = { .file = file, .text = text, .len = len, .col_off = col_off,
			     .field = field, .d = d };
	yaml_event_t ev;
	int err = 0, done = 0;

	if (!yaml_parser_initialize(&b.parser)) {
		fputs("kvsim: out of memory in libyaml\n", stderr);
		exit(3);
	}
	yaml_parser_set_input_string(&b.parser, (const unsigned char *)text, len);
	while (!err && !done) {
		if (!yaml_parser_parse(&b.parser, &ev)) {
			err = b_syntax_err(&b);
			break;
		}
		done = ev.type == YAML_STREAM_END_EVENT;
		err = b_event(&b, &ev);
		yaml_event_delete(&ev);
	}
	yaml_parser_delete(&b.parser);
	free(b.key);
	free(b.keys.slot);
	if (err) {
		node_free(b.root);
		b.root = NULL;
	}
	*root = b.root;
	return err;
}

/* ---- documents ---- */

/* Directory part of path: "." without a '/', "/" for a top-level file. */
static char *dir_of(const char *path)
{
	const char *slash = strrchr(path, '/');
	size_t n;
	char *dir;

	if (!slash)
		return kv_xstrdup(".");
	n = slash == path ? 1 : (size_t)(slash - path);
	dir = kv_xmalloc(n + 1);
	memcpy(dir, path, n);
	dir[n] = '\0';
	return dir;
}

/* Installs root as the document root: empty or null gives an empty mapping. */
static int set_root(struct kv_cfg_doc *doc, struct kv_cfg_node *root, struct kv_diag *d)
{
	char what[80];

	if (!root || is_null(root)) {
		doc->root = node_new(KV_CFG_MAP, doc->path, root ? root->line : 1,
				     root ? root->col : 1);
		node_free(root);
		return 0;
	}
	doc->root = root;
	if (root->type == KV_CFG_MAP)
		return 0;
	return node_err(root, d, KV_EINVAL, 0,
			"expected a mapping (key: value lines) at the top level, got %s",
			describe(root, what, sizeof(what)));
}

static int load_text(struct kv_cfg_doc *doc, const char *name, const char *text,
		     size_t len, struct kv_diag *d)
{
	struct kv_cfg_node *root;
	int err;

	memset(doc, 0, sizeof(*doc));
	doc->path = kv_xstrdup(name);
	doc->dir = dir_of(name);
	err = parse_text(doc->path, text, len, 0, "", &root, d);
	if (!err)
		err = set_root(doc, root, d);
	if (err)
		kv_cfg_free(doc);
	return err;
}

int kv_cfg_load_string(struct kv_cfg_doc *doc, const char *name, const char *text,
		       struct kv_diag *d)
{
	return load_text(doc, name ? name : "<string>", text, strlen(text), d);
}

int kv_cfg_load_mem(struct kv_cfg_doc *doc, const char *name, const char *text, size_t len,
		    struct kv_diag *d)
{
	return load_text(doc, name, text, len, d);
}

int kv_cfg_load(struct kv_cfg_doc *doc, const char *path, struct kv_diag *d)
{
	char *text;
	size_t len;
	int e;

	memset(doc, 0, sizeof(*doc));
	e = kv_input_read(path, KV_INPUT_MAX_YAML_BYTES, &text, &len, d);
	if (e)
		return e;
	e = load_text(doc, path, text, len, d);
	free(text);
	return e;
}

void kv_cfg_free(struct kv_cfg_doc *doc)
{
	node_free(doc->root);
	free(doc->path);
	free(doc->dir);
	memset(doc, 0, sizeof(*doc));
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

