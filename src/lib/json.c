/* json.c -- the strict JSON reader of json.h. */
#include "json.h"

#include <assert.h>
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

struct rd {
	struct kv_json_doc *doc;
	const char *s;
	size_t len, pos;
	unsigned long line, col;
	const char *file;
	struct kv_diag *d;
};

static int fail(struct rd *r, const char *fmt, const char *what)
{
	char got[16];

	if (r->pos >= r->len)
		snprintf(got, sizeof(got), "end of file");
	else if ((unsigned char)r->s[r->pos] < 0x20 || (unsigned char)r->s[r->pos] >= 0x7f)
		snprintf(got, sizeof(got), "byte 0x%02x", (unsigned char)r->s[r->pos]);
	else
		snprintf(got, sizeof(got), "'%c'", r->s[r->pos]);
	kv_diag_set(r->d, KV_EINVAL, r->file, r->line, r->col, "", fmt, got, what);
	return KV_EINVAL;
}

static void adv(struct rd *r)
{
	if (r->s[r->pos] == '\n') {
		r->line++;
		r->col = 1;
	} else {
		r->col++;
	}
	r->pos++;
}

static void skip_ws(struct rd *r)
{
	while (r->pos < r->len && strchr(" \t\r\n", r->s[r->pos]) && r->s[r->pos])
		adv(r);
}

static size_t new_node(struct rd *r, enum kv_json_type t)
{
	struct kv_json_doc *doc = r->doc;

	if (doc->n_node == doc->cap_node) {
		doc->cap_node = doc->cap_node ? 2 * doc->cap_node : 64;
		doc->node = kv_xrealloc(doc->node, doc->cap_node * sizeof(*doc->node));
	}
	memset(&doc->node[doc->n_node], 0, sizeof(*doc->node));
	doc->node[doc->n_node].type = t;
	doc->node[doc->n_node].line = r->line;
	doc->node[doc->n_node].col = r->col;
	return doc->n_node++;
}

/* Scans a string at the opening quote; *str and *len get its undecoded bytes. */
static int scan_string(struct rd *r, const char **str, size_t *len)
{
	size_t start, k;

	adv(r); /* the quote */
	start = r->pos;
	for (;;) {
		unsigned char c;

		if (r->pos >= r->len)
			return fail(r, "found %s inside a string: expected %s", "a closing '\"'");
		c = (unsigned char)r->s[r->pos];
		if (c == '"')
			break;
		if (c < 0x20)
			return fail(r, "found %s inside a string: expected %s",
				    "a printable character (control bytes must be escaped)");
		if (c == '\\') {
			adv(r);
			if (r->pos >= r->len || !strchr("\"\\/bfnrtu", r->s[r->pos]) || !r->s[r->pos])
				return fail(r, "found %s after '\\': expected %s",
					    "one of \" \\ / b f n r t u");
			if (r->s[r->pos] == 'u')
				for (k = 0; k < 4; k++) {
					adv(r);
					if (r->pos >= r->len || !strchr("0123456789abcdefABCDEF", r->s[r->pos]) ||
					    !r->s[r->pos])
						return fail(r, "found %s in a \\u escape: expected %s",
							    "4 hexadecimal digits");
				}
		}
		adv(r);
	}
	*str = r->s + start;
	*len = r->pos - start;
	adv(r);
	return 0;
}

/* The length of the JSON number grammar's match at p (0: none). */
static size_t number_len(const char *p, const char *end)
{
	const char *q = p;

	if (q < end && *q == '-')
		q++;
	if (q < end && *q == '0')
		q++;
	else if (q < end && *q >= '1' && *q <= '9')
		while (q < end && *q >= '0' && *q <= '9')
			q++;
	else
		return 0;
	if (q < end && *q == '.') {
		if (++q >= end || *q < '0' || *q > '9')
			return 0;
		while (q < end && *q >= '0' && *q <= '9')
			q++;
	}
	if (q < end && (*q == 'e' || *q == 'E')) {
		q++;
		if (q < end && (*q == '+' || *q == '-'))
			q++;
		if (q >= end || *q < '0' || *q > '9')
			return 0;
		while (q < end && *q >= '0' && *q <= '9')
			q++;
	}
	return (size_t)(q - p);
}

/* Matches a literal word at the cursor; 1 when matched (and consumed). */
static int word(struct rd *r, const char *w)
{
	size_t n = strlen(w), k;

	if (r->len - r->pos < n || memcmp(r->s + r->pos, w, n))
		return 0;
	if (r->pos + n < r->len && (isalnum((unsigned char)r->s[r->pos + n]) || r->s[r->pos + n] == '_'))
		return 0;
	for (k = 0; k < n; k++)
		adv(r);
	return 1;
}

static int scan_number(struct rd *r, size_t i)
{
	char buf[64];
	size_t n = number_len(r->s + r->pos, r->s + r->len), k;

	if (!n || n >= sizeof(buf))
		return fail(r, "found %s: expected %s", "a JSON value");
	memcpy(buf, r->s + r->pos, n);
	buf[n] = 0;
	errno = 0;
	r->doc->node[i].num = strtod(buf, NULL);
	for (k = 0; k < n; k++)
		adv(r);
	return 0;
}

static int parse_value(struct rd *r, int depth, size_t *out);

/* A container at its opening bracket: members (obj) or elements, linked by next. */
static int parse_container(struct rd *r, int depth, size_t i, int obj)
{
	size_t prev = 0, child;
	char close = obj ? '}' : ']';
	int rc;

	adv(r);
	skip_ws(r);
	if (r->pos < r->len && r->s[r->pos] == close) {
		adv(r);
		return 0;
	}
	for (;;) {
		const char *key = NULL;
		size_t key_len = 0;
		unsigned long kl = r->line, kc = r->col;

		if (obj) {
			if (r->pos >= r->len || r->s[r->pos] != '"')
				return fail(r, "found %s: expected %s", "a key in double quotes");
			if ((rc = scan_string(r, &key, &key_len)))
				return rc;
			skip_ws(r);
			if (r->pos >= r->len || r->s[r->pos] != ':')
				return fail(r, "found %s after a key: expected %s", "':'");
			adv(r);
		}
		if ((rc = parse_value(r, depth + 1, &child)))
			return rc;
		if (obj) {
			size_t k;

			for (k = kv_json_first(r->doc, i); k; k = r->doc->node[k].next)
				if (r->doc->node[k].key_len == key_len &&
				    !memcmp(r->doc->node[k].key, key, key_len))
					return kv_diag_set(r->d, KV_EINVAL, r->file, kl, kc, "",
							   "duplicate key \"%.*s\": expected each key once in an object",
							   (int)KV_MIN(key_len, (size_t)100), key);
			r->doc->node[child].key = key;
			r->doc->node[child].key_len = key_len;
		}
		if (prev)
			r->doc->node[prev].next = child;
		prev = child;
		r->doc->node[i].n++;
		skip_ws(r);
		if (r->pos < r->len && r->s[r->pos] == ',') {
			adv(r);
			skip_ws(r);
			if (r->pos < r->len && r->s[r->pos] == close)
				return fail(r, "found %s after ',': expected %s",
					    obj ? "another member (no trailing comma)"
						: "another element (no trailing comma)");
			continue;
		}
		if (r->pos < r->len && r->s[r->pos] == close) {
			adv(r);
			return 0;
		}
		return fail(r, "found %s: expected %s", obj ? "',' or '}'" : "',' or ']'");
	}
}

static int parse_value(struct rd *r, int depth, size_t *out)
{
	size_t i;
	char c;

	skip_ws(r);
	if (depth > KV_JSON_MAX_DEPTH)
		return fail(r, "found %s: expected %s", "nesting at most 64 deep");
	if (r->pos >= r->len)
		return fail(r, "found %s: expected %s", "a JSON value");
	if (r->doc->max_nodes && r->doc->n_node >= r->doc->max_nodes)
		return kv_diag_set(r->d, KV_ERANGE, r->file, r->line, r->col, "",
				   "more than %zu values in the document: expected at most %zu (a "
				   "larger run can be written as CSV or JSON lines, which are read "
				   "as streams)", r->doc->max_nodes, r->doc->max_nodes);
	c = r->s[r->pos];
	if (c == '{' || c == '[') {
		*out = i = new_node(r, c == '{' ? KV_JSON_OBJ : KV_JSON_ARR);
		return parse_container(r, depth, i, c == '{');
	}
	if (c == '"') {
		*out = i = new_node(r, KV_JSON_STR);
		return scan_string(r, &r->doc->node[i].str, &r->doc->node[i].len);
	}
	*out = i = new_node(r, KV_JSON_NUM);
	if (word(r, "true") || word(r, "false")) {
		r->doc->node[i].type = KV_JSON_BOOL;
		r->doc->node[i].num = r->s[r->pos - 1] == 'e' && r->s[r->pos - 2] == 'u';
		return 0;
	}
	if (word(r, "null")) {
		r->doc->node[i].type = KV_JSON_NULL;
		return 0;
	}
	if (word(r, "NaN")) {
		r->doc->node[i].num = NAN;
		return 0;
	}
	if (word(r, "Infinity") || word(r, "-Infinity")) {
		r->doc->node[i].num = c == '-' ? -INFINITY : INFINITY;
		return 0;
	}
	return scan_number(r, i);
}

int kv_json_parse(struct kv_json_doc *doc, const char *text, size_t len, size_t *pos,
		  unsigned long *line, unsigned long *col, const char *file, struct kv_diag *d)
{
	struct rd r = { doc, text, len, *pos, *line, *col, file, d };
	size_t root;
	int rc;

	doc->n_node = 0;
	rc = parse_value(&r, 0, &root);
	if (!rc) {
		assert(root == 0);
		doc->end = r.pos;
		while (r.pos < r.len && (r.s[r.pos] == ' ' || r.s[r.pos] == '\t' || r.s[r.pos] == '\r'))
			adv(&r);
	}
	*pos = r.pos;
	*line = r.line;
	*col = r.col;
	return rc;
}

void kv_json_release(struct kv_json_doc *doc)
{
	size_t max = doc->max_nodes;

	free(doc->node);
	memset(doc, 0, sizeof(*doc));
	doc->max_nodes = max;
}

size_t kv_json_get(const struct kv_json_doc *doc, size_t o, const char *key)
{
	size_t k, n = strlen(key);

	if (doc->node[o].type != KV_JSON_OBJ)
		return 0;
	for (k = kv_json_first(doc, o); k; k = doc->node[k].next)
		if (doc->node[k].key_len == n && !memcmp(doc->node[k].key, key, n))
			return k;
	return 0;
}

const char *kv_json_type_name(enum kv_json_type t)
{
	static const char *const name[] = { "null", "boolean", "number", "string", "array", "object" };

	return name[t];
}
