/*
 * test_csv.c -- RFC 4180 fields: when the writer quotes, what it writes,
 * records read back from memory and from a stream (quoted commas, quotes,
 * line breaks, CRLF, empty fields), random round trips, and each kind of
 * malformed quoting rejected with its line and column.
 */
#include "testutil.h"

#include <check.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "csv.h"

/* Escapes s through the buffer writer, checking the stream writer agrees. */
static const char *esc(const char *s)
{
	static char buf[512];
	char *mem = NULL;
	size_t n, mlen = 0;
	FILE *f = open_memstream(&mem, &mlen);

	n = kv_csv_escape(buf, sizeof(buf), s);
	ck_assert_msg(n < sizeof(buf), "escape of '%s': %zu bytes", s, n);
	ck_assert_int_eq(kv_csv_put(f, s), 0);
	fclose(f);
	ck_assert_msg(mlen == n && !memcmp(mem, buf, n), "put '%s' gave '%s', escape '%s'", s,
		      mem, buf);
	free(mem);
	return buf;
}

START_TEST(test_escape)
{
	ck_assert_str_eq(esc(""), "");
	ck_assert_str_eq(esc("plain name_1.5"), "plain name_1.5");
	ck_assert_str_eq(esc("a,b"), "\"a,b\"");
	ck_assert_str_eq(esc("a,b \"c\""), "\"a,b \"\"c\"\"\"");
	ck_assert_str_eq(esc("\""), "\"\"\"\"");
	ck_assert_str_eq(esc("[1, 2]"), "\"[1, 2]\"");
	ck_assert_str_eq(esc("{a: 1}"), "{a: 1}");
	ck_assert_str_eq(esc("x\ny"), "\"x\ny\"");
	ck_assert_str_eq(esc("x\ry"), "\"x\ry\"");
	ck_assert_str_eq(esc("tab\there"), "tab\there");
	ck_assert(!kv_csv_needs_quotes("plain"));
	ck_assert(kv_csv_needs_quotes("a\"b"));
}
END_TEST

START_TEST(test_escape_truncates)
{
	char small[4];

	ck_assert_uint_eq(kv_csv_escape(small, sizeof(small), "a,b"), 5);
	ck_assert_str_eq(small, "\"a,");
	ck_assert_uint_eq(kv_csv_escape(NULL, 0, "a\"b"), 6);
}
END_TEST

/* Parses all of text; checks the records against want ("|" between fields, one string per record). */
static void parse_all(const char *text, size_t len, const char *const *want, size_t n_want)
{
	struct kv_csv_rec r;
	struct kv_diag d = { 0 };
	unsigned long line = 1;
	size_t pos = 0, k = 0, i;
	int rc;

	kv_csv_rec_init(&r);
	while ((rc = kv_csv_rec_parse(&r, text, len, &pos, &line, "t.csv", &d)) == 1) {
		char got[512] = "";

		for (i = 0; i < r.n; i++) {
			strcat(got, i ? "|" : "");
			strcat(got, r.field[i]);
		}
		ck_assert_msg(k < n_want, "extra record '%s' in '%s'", got, text);
		ck_assert_msg(!strcmp(got, want[k]), "record %zu of '%s': '%s', expected '%s'", k,
			      text, got, want[k]);
		k++;
	}
	ck_assert_msg(rc == 0, "'%s': rc %d: %s", text, rc, d.msg);
	ck_assert_msg(k == n_want, "'%s': %zu records, expected %zu", text, k, n_want);
	kv_csv_rec_release(&r);
}

#define PARSE(text, ...)                                                          \
	do {                                                                      \
		static const char *const w_[] = { __VA_ARGS__ };                  \
		parse_all(text, strlen(text), w_, sizeof(w_) / sizeof(w_[0]));    \
	} while (0)

START_TEST(test_parse)
{
	PARSE("a,b,c\n1,2,3\n", "a|b|c", "1|2|3");
	PARSE("a,b", "a|b"); /* no final newline */
	PARSE("\"a,b \"\"c\"\"\",2\n", "a,b \"c\"|2");
	PARSE("\"x\ny\",z\nnext\n", "x\ny|z", "next");
	PARSE("a,b\r\nc,d\r\n", "a|b", "c|d");
	PARSE(",,\n", "||");
	PARSE("\n\n", "", "");
	PARSE("\"\",\"\"\"\"\n", "|\"");
	PARSE("\"[1, 2]\",{a: 1}\n", "[1, 2]|{a: 1}");
	PARSE("\"a\r\nb\"\n", "a\r\nb");
}
END_TEST

START_TEST(test_parse_empty)
{
	struct kv_csv_rec r;
	unsigned long line = 1;
	size_t pos = 0;

	kv_csv_rec_init(&r);
	ck_assert_int_eq(kv_csv_rec_parse(&r, "", 0, &pos, &line, "t", NULL), 0);
	kv_csv_rec_release(&r);
}
END_TEST

START_TEST(test_line_numbers)
{
	const char *text = "h\n\"a\nb\nc\",1\nz\n";
	struct kv_csv_rec r;
	unsigned long line = 1;
	size_t pos = 0;

	kv_csv_rec_init(&r);
	ck_assert_int_eq(kv_csv_rec_parse(&r, text, strlen(text), &pos, &line, "t", NULL), 1);
	ck_assert_int_eq(kv_csv_rec_parse(&r, text, strlen(text), &pos, &line, "t", NULL), 1);
	ck_assert_uint_eq(r.line, 2);
	ck_assert_int_eq(kv_csv_rec_parse(&r, text, strlen(text), &pos, &line, "t", NULL), 1);
	ck_assert_msg(r.line == 5 && !strcmp(r.field[0], "z"), "line %lu field '%s'", r.line,
		      r.field[0]);
	ck_assert_int_eq(kv_csv_rec_find(&r, "z"), 0);
	ck_assert_int_eq(kv_csv_rec_find(&r, "y"), -1);
	kv_csv_rec_release(&r);
}
END_TEST

/* text must be rejected at line:col with msg_part in the message. */
static void bad(const char *text, unsigned long line, unsigned long col, const char *msg_part)
{
	struct kv_csv_rec r;
	struct kv_diag d = { 0 };
	unsigned long l = 1;
	size_t pos = 0;
	int rc;

	kv_csv_rec_init(&r);
	while ((rc = kv_csv_rec_parse(&r, text, strlen(text), &pos, &l, "t.csv", &d)) == 1)
		;
	ck_assert_msg(rc == KV_EINVAL, "'%s' accepted (rc %d)", text, rc);
	ck_assert_msg(d.line == line && d.col == col && strstr(d.msg, msg_part) &&
			      !strcmp(d.file, "t.csv"),
		      "'%s': %s:%lu:%lu: %s; expected %lu:%lu '%s'", text, d.file, d.line, d.col,
		      d.msg, line, col, msg_part);
	kv_csv_rec_release(&r);
}

START_TEST(test_malformed)
{
	bad("a,b\"c\n", 1, 4, "inside an unquoted field");
	bad("ok\n\"abc\n", 2, 1, "never closed");
	bad("\"ab\"c,d\n", 1, 5, "after the closing quote");
	bad("\"ab\" ,d\n", 1, 5, "after the closing quote");
	bad("a\rb\n", 1, 2, "carriage return");
	bad("x,\"a\nb\"z\n", 2, 3, "after the closing quote");
}
END_TEST

/* Writes the records through a tmpfile and reads them back with kv_csv_rec_read. */
START_TEST(test_stream)
{
	static const char *const rec[][3] = { { "name", "value", "note" },
					      { "a,b \"c\"", "1", "" },
					      { "multi\nline", "\"", "x\r\ny" } };
	struct kv_csv_rec r;
	struct kv_diag d = { 0 };
	unsigned long line = 1;
	FILE *f = tmpfile();
	size_t i, j;

	for (i = 0; i < 3; i++)
		for (j = 0; j < 3; j++) {
			ck_assert_int_eq(kv_csv_put(f, rec[i][j]), 0);
			fputc(j < 2 ? ',' : '\n', f);
		}
	rewind(f);
	kv_csv_rec_init(&r);
	for (i = 0; i < 3; i++) {
		ck_assert_int_eq(kv_csv_rec_read(&r, f, &line, "s.csv", &d), 1);
		ck_assert_uint_eq(r.n, 3);
		for (j = 0; j < 3; j++)
			ck_assert_msg(!strcmp(r.field[j], rec[i][j]), "record %zu field %zu: '%s'", i,
				      j, r.field[j]);
	}
	ck_assert_int_eq(kv_csv_rec_read(&r, f, &line, "s.csv", &d), 0);
	ck_assert_uint_eq(line, 6); /* 3 records, 2 embedded line feeds */
	fclose(f);
	kv_csv_rec_release(&r);
}
END_TEST

START_TEST(test_stream_malformed)
{
	struct kv_csv_rec r;
	struct kv_diag d = { 0 };
	unsigned long line = 1;
	FILE *f = tmpfile();

	fputs("a,b\n\"open,never closed\nmore\n", f);
	rewind(f);
	kv_csv_rec_init(&r);
	ck_assert_int_eq(kv_csv_rec_read(&r, f, &line, "s.csv", &d), 1);
	ck_assert_int_eq(kv_csv_rec_read(&r, f, &line, "s.csv", &d), KV_EINVAL);
	ck_assert_msg(d.line == 2 && strstr(d.msg, "never closed"), "%lu: %s", d.line, d.msg);
	fclose(f);
	kv_csv_rec_release(&r);
}
END_TEST

START_TEST(test_stream_too_long)
{
	struct kv_csv_rec r;
	struct kv_diag d = { 0 };
	unsigned long line = 1;
	FILE *f = tmpfile();
	size_t i;

	fputc('"', f);
	for (i = 0; i < KV_CSV_MAX_RECORD_BYTES; i++)
		fputc('x', f);
	rewind(f);
	kv_csv_rec_init(&r);
	ck_assert_int_eq(kv_csv_rec_read(&r, f, &line, "s.csv", &d), KV_EINVAL);
	ck_assert_msg(strstr(d.msg, "longer than"), "%s", d.msg);
	fclose(f);
	kv_csv_rec_release(&r);
}
END_TEST

/* Random records of bytes drawn from the characters that matter, written and read back. */
START_TEST(test_round_trip_random)
{
	static const char alphabet[] = "ab,\"\r\n \t;'x";
	char field[8][16];
	uint64_t seed = 0x9e3779b97f4a7c15u;
	struct kv_csv_rec r;
	int iter;

	kv_csv_rec_init(&r);
	for (iter = 0; iter < 2000; iter++) {
		size_t nf = 1 + rng_next(&seed) % 8, i, j, pos = 0, len = 0;
		unsigned long line = 1;
		char *text = NULL;
		FILE *f = open_memstream(&text, &len);

		for (i = 0; i < nf; i++) {
			size_t fl = rng_next(&seed) % 15;

			for (j = 0; j < fl; j++)
				field[i][j] = alphabet[rng_next(&seed) % (sizeof(alphabet) - 1)];
			field[i][fl] = 0;
			kv_csv_put(f, field[i]);
			fputc(i + 1 < nf ? ',' : '\n', f);
		}
		fclose(f);
		ck_assert_int_eq(kv_csv_rec_parse(&r, text, len, &pos, &line, "rt", NULL), 1);
		ck_assert_msg(pos == len && r.n == nf, "iteration %d: pos %zu of %zu, %zu fields of %zu",
			      iter, pos, len, r.n, nf);
		for (i = 0; i < nf; i++)
			ck_assert_msg(!strcmp(r.field[i], field[i]), "iteration %d field %zu", iter, i);
		free(text);
	}
	kv_csv_rec_release(&r);
}
END_TEST

static Suite *csv_suite(void)
{
	Suite *s = suite_create("csv");
	TCase *tc = tcase_create("core");

	tcase_add_test(tc, test_escape);
	tcase_add_test(tc, test_escape_truncates);
	tcase_add_test(tc, test_parse);
	tcase_add_test(tc, test_parse_empty);
	tcase_add_test(tc, test_line_numbers);
	tcase_add_test(tc, test_malformed);
	tcase_add_test(tc, test_stream);
	tcase_add_test(tc, test_stream_malformed);
	tcase_add_test(tc, test_stream_too_long);
	tcase_add_test(tc, test_round_trip_random);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return kv_test_run_suite(csv_suite());
}
