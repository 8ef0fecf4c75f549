/*
 * json.h -- a small strict JSON reader (RFC 8259) into a flat tree, for the
 * recorded serving runs `kvsim calibrate --from-run` reads.
 *
 * kv_json_parse() reads one JSON value from text and stores every node in
 * one array: a container's children follow it (first child at index + 1,
 * then each child's `next`), so the tree is freed with one free().  Strings
 * are not decoded: a node points at the bytes between its quotes, whose
 * escapes were checked (the reader needs numbers, keys and whether an error
 * string is empty, never a string's text).  Every node keeps the 1-based
 * line and column where it starts, for messages.
 *
 * Strict: no trailing commas, no comments, no leading zeros or '+', no raw
 * control bytes in strings, no duplicate keys in an object, nesting at most
 * KV_JSON_MAX_DEPTH.  One extension: NaN, Infinity and -Infinity as
 * numbers, because Python's json.dumps writes them (allow_nan is its
 * default) and vLLM's benchmark client saves `"request_rate": Infinity`.
 *
 * Why not libyaml, which the project already links and which reads most
 * JSON as YAML flow: it rejects the UTF-16 surrogate-pair escapes
 * ("\ud83d\ude00") that json.dumps writes for every character outside the
 * BMP (ensure_ascii is its default), so a vLLM result whose generated_texts
 * hold one emoji would not load; and it accepts what JSON forbids (duplicate
 * keys, trailing commas), so a damaged file would be read, not refused.
 * The allowed dependencies (GSL, libyaml, Check) hold no JSON parser.
 */
#ifndef KV_JSON_H
#define KV_JSON_H

#include "kv_common.h"

#include <stddef.h>

#define KV_JSON_MAX_DEPTH 64 /* deepest nesting accepted */

enum kv_json_type { KV_JSON_NULL, KV_JSON_BOOL, KV_JSON_NUM, KV_JSON_STR, KV_JSON_ARR, KV_JSON_OBJ };

struct kv_json {
	enum kv_json_type type;
	unsigned long line, col; /* 1-based position of the value's first byte */
	double num; /* NUM: the value (NaN, +-inf allowed); BOOL: 0 or 1 */
	const char *str; /* STR: the bytes between the quotes, escapes undecoded */
	size_t len; /* STR: bytes at str */
	const char *key; /* member of an object: the key's bytes, escapes undecoded */
	size_t key_len; /* bytes at key */
	size_t n; /* ARR, OBJ: children */
	size_t next; /* index of the next sibling, 0 when last */
};

/* A parsed document: node 0 is the root. */
struct kv_json_doc {
	struct kv_json *node; /* n_node nodes, owned */
	size_t n_node, cap_node;
	size_t end; /* offset just past the value in the text */
	size_t max_nodes; /* most values kv_json_parse() stores (KV_ERANGE past it); 0: no bound */
};

/*
 * Parses one JSON value at text[*pos] (len bytes in all), after optional
 * white space, into doc (emptied first), and leaves *pos past the value and
 * its trailing blanks and tabs (not past a newline, so JSON lines can be
 * read one value after another); *line and *col track the 1-based position
 * of *pos.  Returns 0, or KV_EINVAL with d naming file:line:col and what
 * was expected, or KV_ERANGE at the value past doc->max_nodes.
 */
int kv_json_parse(struct kv_json_doc *doc, const char *text, size_t len, size_t *pos,
		  unsigned long *line, unsigned long *col, const char *file, struct kv_diag *d);

/* Frees the nodes (max_nodes is kept); doc may be parsed into again. */
void kv_json_release(struct kv_json_doc *doc);

/* The member of object o (an index into doc) named key, or 0 when absent. */
size_t kv_json_get(const struct kv_json_doc *doc, size_t o, const char *key);

/* The first child of a container (0 when empty). */
static inline size_t kv_json_first(const struct kv_json_doc *doc, size_t i)
{
	return doc->node[i].n ? i + 1 : 0;
}

/* A JSON type's name for messages ("number", "array", ...). */
const char *kv_json_type_name(enum kv_json_type t);

#endif /* KV_JSON_H */
