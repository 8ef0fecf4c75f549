/*
 * cfg_yaml.c -- a YAML document built into a node tree (cfg_tree.c) from
 * libyaml's events, and the documents loaded from a file, a string or
 * memory (see cfg.h).
 *
 * libyaml's event API drives an iterative builder (no recursion, so deeply
 * nested input cannot exhaust the C stack).  The builder keeps one open
 * collection `cur` and, inside a mapping, one pending key: a scalar event
 * in a mapping with no pending key becomes the key; any other node event
 * appends a child to `cur`, and a collection start makes that child the new
 * `cur`.  libyaml marks are 0-based; nodes store them 1-based.  Nesting is
 * capped at MAX_DEPTH: libyaml's own cost grows with the square of
 * the flow depth, and no configuration needs more than a handful of levels.
 */
#include "cfg_impl.h"

#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <yaml.h>

#define MAX_DEPTH 1000 /* deepest nesting of collections accepted */

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
int parse_text(const char *file, const char *text, size_t len, unsigned long col_off,
	       const char *field, struct kv_cfg_node **root, struct kv_diag *d)
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
