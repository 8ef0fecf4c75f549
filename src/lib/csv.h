/*
 * csv.h -- the CSV fields kvsim writes and reads back, as RFC 4180 has them.
 *
 * Writing: kv_csv_put() (a stream) or kv_csv_escape() (a buffer) writes one
 * field; the caller writes the commas and the "\n" between them.  A field
 * holding a comma, a double quote, CR or LF is enclosed in double quotes
 * with each inner quote doubled; any other field is written as it is, so
 * names and numbers without those characters come out byte for byte as
 * before.
 *
 * Reading: struct kv_csv_rec holds one record split into fields, unquoted.
 * kv_csv_rec_parse() takes the next record from text in memory,
 * kv_csv_rec_read() from a stream; a quoted field may span lines.  Records
 * end with LF or CRLF (or the end of the text).  Quoting that RFC 4180 does
 * not allow -- a quote inside an unquoted field, text after a closing quote,
 * a quote never closed, a bare CR -- is an error naming the line and column.
 *
 * Invariant: for any fields without a NUL byte, writing them with
 * kv_csv_put() separated by commas and reading the record back gives the
 * same fields (tests/test_csv.c, tests/fuzz/fuzz_csv.c).
 */
#ifndef KV_CSV_H
#define KV_CSV_H

#include "../../sim/kv_common.h"

#include <stddef.h>
#include <stdio.h>

/* The longest record kv_csv_rec_read() accepts, in bytes (1 MiB). */
#define KV_CSV_MAX_RECORD_BYTES ((size_t)1 << 20)

/* 1 if field must be quoted (it holds a comma, a double quote, CR or LF). */
int kv_csv_needs_quotes(const char *field);

/*
 * Writes field to f, quoted when kv_csv_needs_quotes().  Returns 0, or -1
 * when a write failed (the stream's error flag is set too).
 */
int kv_csv_put(FILE *f, const char *field);

/*
 * The escaped field into dst (cap bytes, NUL-terminated when cap > 0),
 * snprintf-style: returns the length of the whole escaped field, so a
 * result >= cap means dst was too small.  dst may be NULL when cap is 0.
 */
size_t kv_csv_escape(char *dst, size_t cap, const char *field);

/* One record: n fields, each NUL-terminated, unquoted. */
struct kv_csv_rec {
	char **field; /* n pointers into buf */
	size_t n; /* fields in the record */
	unsigned long line; /* 1-based line of the text where the record starts */
	char *buf; /* the fields' text, owned */
	size_t buf_cap; /* bytes allocated at buf */
	size_t field_cap; /* pointers allocated at field */
	char *raw; /* kv_csv_rec_read(): the record's bytes as read, owned */
	size_t raw_cap; /* bytes allocated at raw */
};

/* Makes r an empty record owning nothing. */
void kv_csv_rec_init(struct kv_csv_rec *r);

/* Frees what r holds; r may be initialised again. */
void kv_csv_rec_release(struct kv_csv_rec *r);

/*
 * Parses the record at text[*pos], len bytes in all (NULs are data), into r
 * (its earlier fields are overwritten) and moves *pos past the record and
 * its line end.  *line is the 1-based line at *pos, advanced past the lines
 * the record spans; file names the text in messages.  Returns 1 when a record
 * was read, 0 at the end of the text (*pos == len), or KV_EINVAL with d
 * filled for malformed quoting.
 */
int kv_csv_rec_parse(struct kv_csv_rec *r, const char *text, size_t len, size_t *pos,
		     unsigned long *line, const char *file, struct kv_diag *d);

/*
 * Reads the next record of f into r: the bytes up to the end of the line
 * that closes the record, in r->raw, then kv_csv_rec_parse() over them.
 * *line counts lines as for kv_csv_rec_parse().  Returns 1, 0 at the end
 * of the stream, KV_EINVAL (malformed, or longer than
 * KV_CSV_MAX_RECORD_BYTES) or KV_EIO (a read error) with d filled.
 */
int kv_csv_rec_read(struct kv_csv_rec *r, FILE *f, unsigned long *line, const char *file,
		    struct kv_diag *d);

/* The 0-based index of the field equal to name, or -1. */
long kv_csv_rec_find(const struct kv_csv_rec *r, const char *name);

#endif /* KV_CSV_H */
