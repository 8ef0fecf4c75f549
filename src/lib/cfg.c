/*
 * cfg.c -- a YAML document as a tree with source positions, --set overrides
 * and typed, validating readers.
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
 * Numbers: integer readers (u64, sizes, durations) parse the decimal text
 * exactly -- at most 24 significant digits times a power of ten -- and
 * scale by the unit in 128-bit arithmetic (10^24 * 2^42 < 2^128), so "1e6"
 * is exactly 1000000 and 2^64 is rejected rather than rounded.  Rejected
 * alternative: strtod for everything, which is silently inexact above 2^53.
 * Doubles are checked against the same grammar (no "nan", "inf", hex) and
 * then converted with strtod.
 *
 * A plain (unquoted) "", "~" or "null" is YAML's null: the typed readers
 * treat it as an absent key, so `key:` or `--set key=` selects the default.
 */
#include "cfg.h"

#include <ctype.h>
#include <errno.h>
#include <float.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <yaml.h>

__extension__ typedef unsigned __int128 u128;

#define MAX_DEPTH 1000 /* deepest nesting of collections accepted */

/* File name of nodes made by kv_cfg_set(); compared by address. */
static const char set_file[] = "--set";

/* ---- nodes ---- */

static struct kv_cfg_node *node_new(enum kv_cfg_type type, const char *file,
				    unsigned long line, unsigned long col)
{
	struct kv_cfg_node *n = kv_xcalloc(1, sizeof(*n));

	n->type = type;
	n->file = file;
	n->line = line;
	n->col = col;
	return n;
}

static void node_append(struct kv_cfg_node *parent, struct kv_cfg_node *n)
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
static struct kv_cfg_node *map_find(const struct kv_cfg_node *m, const char *key,
				    size_t klen)
{
	struct kv_cfg_node *n;

	for (n = m->child; n; n = n->next)
		if (strlen(n->key) == klen && !memcmp(n->key, key, klen))
			return n;
	return NULL;
}

/* Next node after n in document order within top's subtree, or NULL. */
static struct kv_cfg_node *preorder_next(struct kv_cfg_node *n,
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
static int is_null(const struct kv_cfg_node *n)
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
static const char *shown(const char *s, char *buf, size_t len)
{
	size_t i, max = KV_MIN(len - 4, (size_t)60);

	for (i = 0; s[i] && i < max; i++)
		buf[i] = iscntrl((unsigned char)s[i]) ? '?' : s[i];
	strcpy(buf + i, s[i] ? "..." : "");
	return buf;
}

/* What a node is, for "expected X, got Y". */
static const char *describe(const struct kv_cfg_node *n, char *buf, size_t len)
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
static const char *join(const char *const *names, char *buf, size_t len)
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
static int node_err(const struct kv_cfg_node *n, struct kv_diag *d, int err, int at_key,
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

/* ---- numbers ---- */

#define DEC_DIGITS 24 /* significant digits kept: 10^24 * 2^42 < 2^128 */
#define DEC_TOOLONG 1 /* dec_to_u64(): in range but more than DEC_DIGITS digits */
#define DEC_TOZERO 2 /* dec_to_u64(): a nonzero value that rounds to 0 */

/* A decimal number: sign * dig * 10^e. */
struct dec {
	char dig[DEC_DIGITS]; /* significant digits, no leading or trailing zeros */
	int n; /* digits in dig[]; 0 for zero */
	long e; /* decimal exponent */
	int neg; /* a '-' sign was given */
	int toolong; /* more than DEC_DIGITS significant digits */
};

/* Appends a significant digit; past DEC_DIGITS it is dropped and e keeps the magnitude. */
static void dec_push(struct dec *v, char c)
{
	if (v->n < DEC_DIGITS) {
		v->dig[v->n++] = c;
		return;
	}
	v->toolong = 1;
	v->e++;
}

/* One mantissa digit: zeros after the last non-zero one wait in *zeros. */
static void dec_digit(struct dec *v, char c, long *zeros)
{
	if (c == '0') {
		if (v->n)
			(*zeros)++;
		return;
	}
	for (; *zeros; (*zeros)--)
		dec_push(v, '0');
	dec_push(v, c);
}

/* Digits with single '_' between them, from *s; returns how many. */
static int dec_run(const char **s, struct dec *v, long *zeros, int frac)
{
	const char *p = *s;
	int nd = 0;

	while (isdigit((unsigned char)*p)) {
		v->e -= frac;
		dec_digit(v, *p++, zeros);
		nd++;
		if (p[0] == '_' && isdigit((unsigned char)p[1]))
			p++;
	}
	*s = p;
	return nd;
}

/* Exponent "e[+-]digits" at *s, added to *e; left unread when malformed. */
static void dec_exp(const char **s, long *e)
{
	const char *p = *s + 1;
	long x = 0;
	int neg = 0;

	if (*p == '+' || *p == '-')
		neg = *p++ == '-';
	if (!isdigit((unsigned char)*p))
		return;
	for (; isdigit((unsigned char)*p); p++)
		if (x < 100000)
			x = x * 10 + (*p - '0');
	*e += neg ? -x : x;
	*s = p;
}

/*
 * Parses [+-]digits[.digits][e[+-]digits] ('_' allowed between digits; one
 * side of the point may be empty) at s.  Returns the end, or NULL when there
 * is no number.
 */
static const char *dec_parse(const char *s, struct dec *v)
{
	long zeros = 0;
	int nd;

	memset(v, 0, sizeof(*v));
	if (*s == '+' || *s == '-')
		v->neg = *s++ == '-';
	nd = dec_run(&s, v, &zeros, 0);
	if (*s == '.') {
		s++;
		nd += dec_run(&s, v, &zeros, 1);
	}
	if (!nd)
		return NULL;
	v->e += zeros;
	if (*s == 'e' || *s == 'E')
		dec_exp(&s, &v->e);
	return s;
}

/*
 * v * unit into *out.  Returns 0; KV_EINVAL when negative, or not integral
 * and !round; KV_ERANGE above UINT64_MAX; DEC_TOOLONG when more digits than
 * DEC_DIGITS were given and the value is not out of range (those digits
 * were dropped, so the result would not be exact).  With round the result
 * is rounded to nearest, halves up; DEC_TOZERO when a nonzero value rounds
 * to 0 (0 often means "off" or "unbounded": "1e-12s" must not become that).
 */
static int dec_to_u64(const struct dec *v, uint64_t unit, int round, uint64_t *out)
{
	u128 x = 0, p = 1, r;
	long e = v->e;
	int i;

	if (!v->n) {
		*out = 0;
		return 0;
	}
	if (v->neg)
		return KV_EINVAL;
	for (i = 0; i < v->n; i++)
		x = x * 10 + (unsigned)(v->dig[i] - '0');
	x *= unit;
	for (; e > 0; e--) {
		if (x > UINT64_MAX)
			return KV_ERANGE;
		x *= 10;
	}
	if (e < -38)
		return round ? DEC_TOZERO : KV_EINVAL;
	for (; e < 0; e++)
		p *= 10;
	r = x % p;
	x /= p;
	if (x > UINT64_MAX)
		return KV_ERANGE;
	if (v->toolong)
		return DEC_TOOLONG;
	if (r && !round)
		return KV_EINVAL;
	if (r && r >= p - r)
		x++;
	if (x > UINT64_MAX)
		return KV_ERANGE;
	if (!x)
		return DEC_TOZERO;
	*out = (uint64_t)x;
	return 0;
}

/* A unit suffix and its multiple. */
struct unit {
	const char *name; /* suffix; "" for a plain number */
	uint64_t mult; /* value of 1 unit in the base unit */
};

static const struct unit int_units[] = { { "", 1 }, { NULL, 0 } };

static const struct unit byte_units[] = {
	{ "", 1 },
	{ "B", 1 },
	{ "KB", 1000ULL },
	{ "MB", 1000000ULL },
	{ "GB", 1000000000ULL },
	{ "TB", 1000000000000ULL },
	{ "KiB", KV_KiB },
	{ "MiB", KV_MiB },
	{ "GiB", KV_GiB },
	{ "TiB", 1024 * KV_GiB },
	{ NULL, 0 },
};

static const struct unit ns_units[] = {
	{ "", KV_NS_PER_S },
	{ "ns", 1 },
	{ "us", KV_NS_PER_US },
	{ "\xc2\xb5s", KV_NS_PER_US },
	{ "ms", KV_NS_PER_MS },
	{ "s", KV_NS_PER_S },
	{ "min", 60 * KV_NS_PER_S },
	{ "h", 3600 * KV_NS_PER_S },
	{ NULL, 0 },
};

/* An integer conversion: what it accepts and how it is described. */
struct conv {
	const char *what; /* "a size", ... for "expected X" */
	const char *hint; /* added when the text is malformed, or "" */
	const struct unit *units; /* accepted suffixes (int_units: none) */
	int icase; /* suffixes match in any case */
	int round; /* round to nearest (else the value must be integral) */
	const char *res; /* the resolution, "1ns": a nonzero value rounding below is an error */
};

static const struct conv conv_u64 = { "a non-negative integer", "", int_units, 0, 0, "1" };

static const struct conv conv_bytes = {
	"a size", " (a number with unit B, KB, MB, GB, TB, KiB, MiB, GiB or TiB; "
		  "no unit: bytes)", byte_units, 1, 1, "1B",
};

static const struct conv conv_ns = {
	"a duration", " (a number with unit ns, us, ms, s, min or h; no unit: seconds)",
	ns_units, 0, 1, "1ns",
};

/* Parses s ("number [spaces] unit") as c describes. */
static int conv_parse(const struct conv *c, const char *s, uint64_t *out)
{
	const struct unit *u;
	struct dec v;
	const char *end = dec_parse(s, &v);

	if (!end)
		return KV_EINVAL;
	while (*end == ' ' && c->units != int_units)
		end++;
	for (u = c->units; u->name; u++)
		if (!(c->icase ? strcasecmp : strcmp)(end, u->name))
			return dec_to_u64(&v, u->mult, c->round, out);
	return KV_EINVAL;
}

/* x with the largest named unit dividing it ("80GB", "200ms"), else plain. */
static const char *conv_fmt(const struct conv *c, uint64_t x, char *buf, size_t len)
{
	const struct unit *u, *best = NULL;

	for (u = c->units; u->name && x; u++)
		if (u->name[0] && x % u->mult == 0 && (!best || u->mult > best->mult))
			best = u;
	if (best)
		snprintf(buf, len, "%llu%s", (unsigned long long)(x / best->mult), best->name);
	else
		snprintf(buf, len, "%llu", (unsigned long long)x);
	return buf;
}

/* " in [a, b]", " of at least a" or "" (full range). */
static const char *conv_range(const struct conv *c, uint64_t min, uint64_t max, char *buf,
			      size_t len)
{
	char a[48], b[48];

	conv_fmt(c, min, a, sizeof(a));
	conv_fmt(c, max, b, sizeof(b));
	if (max == UINT64_MAX && !min)
		buf[0] = '\0';
	else if (max == UINT64_MAX)
		snprintf(buf, len, " of at least %s", a);
	else
		snprintf(buf, len, " in [%s, %s]", a, b);
	return buf;
}

/* Scalar n converted by c and checked against [min, max]. */
static int node_conv(struct kv_cfg_node *n, const struct conv *c, uint64_t min, uint64_t max,
		     uint64_t *out, struct kv_diag *d)
{
	char range[128], what[80];
	uint64_t x = 0;
	int err;

	n->used = 1;
	conv_range(c, min, max, range, sizeof(range));
	if (n->type != KV_CFG_SCALAR)
		return node_err(n, d, KV_EINVAL, 0, "expected %s%s, got %s", c->what, range,
				describe(n, what, sizeof(what)));
	err = conv_parse(c, n->value, &x);
	if (err == DEC_TOOLONG)
		return node_err(n, d, KV_EINVAL, 0,
				"bad value '%s': more than %d significant digits",
				shown(n->value, what, sizeof(what)), DEC_DIGITS);
	if (err == DEC_TOZERO)
		return node_err(n, d, KV_EINVAL, 0,
				"bad value '%s': nonzero but rounds to 0 (the resolution is %s): expected 0 or at least %s",
				shown(n->value, what, sizeof(what)), c->res, c->res);
	if (!err && (x < min || x > max))
		err = KV_ERANGE;
	if (err)
		return node_err(n, d, err, 0, "bad value '%s': expected %s%s%s",
				shown(n->value, what, sizeof(what)), c->what, range,
				err == KV_EINVAL ? c->hint : "");
	*out = x;
	return 0;
}

int kv_cfg_node_u64(struct kv_cfg_node *n, uint64_t min, uint64_t max, uint64_t *out,
		    struct kv_diag *d)
{
	return node_conv(n, &conv_u64, min, max, out, d);
}

/* Parses a finite double in the dec_parse() grammar. */
static int parse_dbl(const char *s, double *out)
{
	struct dec v;
	const char *end = dec_parse(s, &v);
	char *buf, *q;

	if (!end || *end)
		return KV_EINVAL;
	buf = kv_xmalloc(strlen(s) + 1);
	for (q = buf; *s; s++)
		if (*s != '_')
			*q++ = *s;
	*q = '\0';
	*out = strtod(buf, NULL);
	free(buf);
	return isfinite(*out) ? 0 : KV_ERANGE;
}

/* " in [a, b]", " >= a", " <= b" or "" for infinite bounds. */
static const char *dbl_range(double min, double max, char *buf, size_t len)
{
	int lo = min > -DBL_MAX, hi = max < DBL_MAX;

	if (lo && hi)
		snprintf(buf, len, " in [%g, %g]", min, max);
	else if (lo || hi)
		snprintf(buf, len, " %s %g", lo ? ">=" : "<=", lo ? min : max);
	else
		buf[0] = '\0';
	return buf;
}

int kv_cfg_node_dbl(struct kv_cfg_node *n, double min, double max, double *out,
		    struct kv_diag *d)
{
	char range[128], what[80];
	double x = 0;
	int err;

	n->used = 1;
	dbl_range(min, max, range, sizeof(range));
	if (n->type != KV_CFG_SCALAR)
		return node_err(n, d, KV_EINVAL, 0, "expected a number%s, got %s", range,
				describe(n, what, sizeof(what)));
	err = parse_dbl(n->value, &x);
	if (!err && !(x >= min && x <= max))
		err = KV_ERANGE;
	if (err)
		return node_err(n, d, err, 0, "bad value '%s': expected a number%s",
				shown(n->value, what, sizeof(what)), range);
	*out = x;
	return 0;
}

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
