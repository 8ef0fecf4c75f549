/*
 * csv.c -- RFC 4180 fields: the writer's quoting and a reader that honours
 * it.  See csv.h for the contract.
 */
#include "csv.h"

#include <assert.h>
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int kv_csv_needs_quotes(const char *field)
{
	return strpbrk(field, ",\"\r\n") != NULL;
}

int kv_csv_put(FILE *f, const char *field)
{
	const char *s;

	if (!kv_csv_needs_quotes(field))
		return *field && fputs(field, f) == EOF ? -1 : 0;
	if (putc('"', f) == EOF)
		return -1;
	for (s = field; *s; s++)
		if ((*s == '"' && putc('"', f) == EOF) || putc(*s, f) == EOF)
			return -1;
	return putc('"', f) == EOF ? -1 : 0;
}

size_t kv_csv_escape(char *dst, size_t cap, const char *field)
{
	int q = kv_csv_needs_quotes(field);
	size_t n = 0;
	const char *s;

#define PUT(c)                          \
	do {                            \
		if (n + 1 < cap)        \
			dst[n] = (c);   \
		n++;                    \
	} while (0)
	if (q)
		PUT('"');
	for (s = field; *s; s++) {
		if (*s == '"')
			PUT('"');
		PUT(*s);
	}
	if (q)
		PUT('"');
#undef PUT
	if (cap)
		dst[n < cap ? n : cap - 1] = 0;
	return n;
}

void kv_csv_rec_init(struct kv_csv_rec *r)
{
	memset(r, 0, sizeof(*r));
}

void kv_csv_rec_release(struct kv_csv_rec *r)
{
	free(r->field);
	free(r->buf);
	free(r->raw);
	kv_csv_rec_init(r);
}

/* Appends byte c to the record's text at *off. */
static void put_byte(struct kv_csv_rec *r, size_t *off, char c)
{
	if (*off == r->buf_cap) {
		r->buf_cap = r->buf_cap ? 2 * r->buf_cap : 256;
		r->buf = kv_xrealloc(r->buf, r->buf_cap);
	}
	r->buf[(*off)++] = c;
}

/*
 * Starts a field at offset off of r->buf: the offset is kept in r->field as
 * an integer until the record is whole (buf may still move), then turned
 * into a pointer.
 */
static void start_field(struct kv_csv_rec *r, size_t off)
{
	if (r->n == r->field_cap) {
		r->field_cap = r->field_cap ? 2 * r->field_cap : 16;
		r->field = kv_xrealloc(r->field, r->field_cap * sizeof(*r->field));
	}
	r->field[r->n++] = (char *)(uintptr_t)off;
}

/* The state of one parse: where it is in the text and in the line. */
struct cur {
	const char *text;
	size_t len, i; /* text length, next byte */
	unsigned long *line; /* the caller's line count */
	size_t bol; /* offset of the current line's first byte */
	const char *file;
};

/* 1 if the text at c->i ends a field (end of text, comma, LF or CRLF). */
static int at_field_end(const struct cur *c)
{
	const char *t = c->text + c->i;

	return c->i == c->len || *t == ',' || *t == '\n' ||
	       (*t == '\r' && c->i + 1 < c->len && t[1] == '\n');
}

/* Reads a quoted field (c->i at its opening quote) into r; 0 or KV_EINVAL. */
static int quoted(struct cur *c, struct kv_csv_rec *r, size_t *off, struct kv_diag *d)
{
	unsigned long line0 = *c->line, col0 = (unsigned long)(c->i - c->bol) + 1;

	for (c->i++;;) {
		char ch;

		if (c->i == c->len)
			return kv_diag_set(d, KV_EINVAL, c->file, line0, col0, "",
					   "the quoted field opened here is never closed");
		ch = c->text[c->i++];
		if (ch == '"' && c->i < c->len && c->text[c->i] == '"') {
			c->i++; /* "" inside quotes: one quote */
		} else if (ch == '"') {
			break;
		} else if (ch == '\n') {
			(*c->line)++;
			c->bol = c->i;
		}
		put_byte(r, off, ch);
	}
	if (!at_field_end(c))
		return kv_diag_set(d, KV_EINVAL, c->file, *c->line,
				   (unsigned long)(c->i - c->bol) + 1, "",
				   "'%c' after the closing quote of a field: expected ',' or the end of the line",
				   c->text[c->i]);
	return 0;
}

/* Reads an unquoted field into r; 0 or KV_EINVAL. */
static int unquoted(struct cur *c, struct kv_csv_rec *r, size_t *off, struct kv_diag *d)
{
	while (!at_field_end(c)) {
		char ch = c->text[c->i];
		unsigned long col = (unsigned long)(c->i - c->bol) + 1;

		if (ch == '"')
			return kv_diag_set(d, KV_EINVAL, c->file, *c->line, col, "",
					   "a double quote inside an unquoted field: a field with quotes must be enclosed in quotes, each inner quote doubled");
		if (ch == '\r')
			return kv_diag_set(d, KV_EINVAL, c->file, *c->line, col, "",
					   "a carriage return not followed by a line feed outside quotes");
		put_byte(r, off, ch);
		c->i++;
	}
	return 0;
}

int kv_csv_rec_parse(struct kv_csv_rec *r, const char *text, size_t len, size_t *pos,
		     unsigned long *line, const char *file, struct kv_diag *d)
{
	struct cur c = { text, len, *pos, line, *pos, file };
	size_t off = 0, k;
	int rc;

	assert(*pos <= len);
	if (*pos == len)
		return 0;
	r->n = 0;
	r->line = *line;
	for (;;) {
		start_field(r, off);
		rc = c.i < len && text[c.i] == '"' ? quoted(&c, r, &off, d) : unquoted(&c, r, &off, d);
		if (rc)
			return rc;
		put_byte(r, &off, 0);
		if (c.i == len || text[c.i] != ',')
			break;
		c.i++;
	}
	if (c.i < len && text[c.i] == '\r')
		c.i++;
	if (c.i < len && text[c.i] == '\n') {
		c.i++;
		(*line)++;
	}
	for (k = 0; k < r->n; k++)
		r->field[k] = r->buf + (uintptr_t)r->field[k];
	*pos = c.i;
	return 1;
}

/* Appends byte ch to r->raw; 0, or -1 past KV_CSV_MAX_RECORD_BYTES. */
static int put_raw(struct kv_csv_rec *r, size_t *n, char ch)
{
	if (*n + 1 >= KV_CSV_MAX_RECORD_BYTES)
		return -1;
	if (*n + 1 >= r->raw_cap) {
		r->raw_cap = r->raw_cap ? 2 * r->raw_cap : 256;
		r->raw = kv_xrealloc(r->raw, r->raw_cap);
	}
	r->raw[(*n)++] = ch;
	r->raw[*n] = 0;
	return 0;
}

/*
 * Rejected alternative: a parser over a stream, byte by byte, to spare the
 * copy in r->raw.  One parser over memory serves both readers, and a record
 * of kvsim's own CSVs is a few kilobytes.
 */
int kv_csv_rec_read(struct kv_csv_rec *r, FILE *f, unsigned long *line, const char *file,
		    struct kv_diag *d)
{
	size_t n = 0, pos = 0;
	int ch, in_quotes = 0, rc;

	while ((ch = getc(f)) != EOF) {
		if (put_raw(r, &n, (char)ch))
			return kv_diag_set(d, KV_EINVAL, file, *line, 0, "",
					   "a record longer than %zu bytes", KV_CSV_MAX_RECORD_BYTES);
		if (ch == '"')
			in_quotes = !in_quotes; /* "" inside quotes toggles twice */
		else if (ch == '\n' && !in_quotes)
			break;
	}
	if (ferror(f))
		return kv_diag_set(d, KV_EIO, file, *line, 0, "", "cannot read: %s",
				   strerror(errno ? errno : EIO));
	if (n == 0)
		return 0;
	rc = kv_csv_rec_parse(r, r->raw, n, &pos, line, file, d);
	assert(rc != 1 || pos == n); /* the quote parity agrees with the parser */
	return rc;
}

long kv_csv_rec_find(const struct kv_csv_rec *r, const char *name)
{
	size_t i;

	for (i = 0; i < r->n; i++)
		if (!strcmp(r->field[i], name))
			return (long)i;
	return -1;
}
