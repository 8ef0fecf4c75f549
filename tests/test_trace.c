/*
 * test_trace.c -- the streaming trace readers: each format on small
 * fixtures (tests/data/traces) and on the real traces in KVSIM_TRACES when
 * that folder exists; exact time conversion; every row error with its line,
 * column and field; rewind; constant memory while streaming.
 */
#include "trace.h"

#include "testutil.h"

#include <check.h>
#include <malloc.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static struct kv_trace_row row; /* 4 KiB: kept off the stack */


/* Writes n bytes (NULs included) to a fresh temporary file; returns its path (static buffer). */
static const char *temp_file_n(const char *text, size_t n)
{
	static char path[64];
	int fd;

	snprintf(path, sizeof(path), "/tmp/kvsim_trace_XXXXXX");
	fd = mkstemp(path);
	ck_assert_msg(fd >= 0, "mkstemp failed");
	ck_assert_msg(write(fd, text, n) == (ssize_t)n, "write failed");
	close(fd);
	return path;
}

/* Writes text to a fresh temporary file; returns its path (static buffer). */
static const char *temp_file(const char *text)
{
	return temp_file_n(text, strlen(text));
}

static struct kv_trace *open_ok(const char *path, enum kv_trace_format fmt)
{
	struct kv_trace *t = NULL;
	struct kv_diag d = { 0 };
	int err = kv_trace_open(path, fmt, &t, &d);

	ck_assert_msg(err == 0, "open %s: %d %s:%lu:%lu: %s: %s", path, err, d.file, d.line,
		      d.col, d.field, d.msg);
	return t;
}

static void next_ok(struct kv_trace *t)
{
	struct kv_diag d = { 0 };
	int r = kv_trace_next(t, &row, &d);

	EXPECT(r == 1, "next: %d %s:%lu:%lu: %s: %s", r, d.file, d.line, d.col, d.field,
	       d.msg);
}

static void expect_row(struct kv_trace *t, kv_ns t_ns, uint64_t prompt, uint64_t output,
		       unsigned long line)
{
	next_ok(t);
	EXPECT(row.t_ns == t_ns && row.prompt_tokens == prompt && row.output_tokens == output &&
		       row.line == line,
	       "row: t=%llu p=%llu o=%llu line=%lu; want t=%llu p=%llu o=%llu line=%lu",
	       (unsigned long long)row.t_ns, (unsigned long long)row.prompt_tokens,
	       (unsigned long long)row.output_tokens, row.line, (unsigned long long)t_ns,
	       (unsigned long long)prompt, (unsigned long long)output, line);
}

static void expect_eof(struct kv_trace *t)
{
	struct kv_diag d = { 0 };
	int r = kv_trace_next(t, &row, &d);

	ck_assert_msg(r == 0, "expected EOF, got %d (%s)", r, d.msg);
}

START_TEST(test_format_names)
{
	enum kv_trace_format f;
	const char *names[] = { "auto", "azure", "vidur", "lengths", "mooncake" };
	size_t i;

	for (i = 0; i < 5; i++) {
		ck_assert_int_eq(kv_trace_format_parse(names[i], &f), 0);
		ck_assert_str_eq(kv_trace_format_name(f), names[i]);
	}
	ck_assert_int_eq(kv_trace_format_parse("csv", &f), KV_EINVAL);
}
END_TEST

/* CRLF, no final newline, exact 7-digit fractions across a leap day. */
START_TEST(test_azure_fixture)
{
	struct kv_trace *t = open_ok(fixture("azure_small.csv"), KV_TRACE_AUTO);

	ck_assert_int_eq(kv_trace_format(t), KV_TRACE_AZURE);
	ck_assert_int_eq(kv_trace_has_times(t), 1);
	expect_row(t, 0, 10, 1, 2);
	/* 2023-11-16 18:17:03.97996 UTC is 1700158623.97996 s after the epoch */
	expect_row(t, 1700158623979960000ULL, 4808, 10, 3);
	expect_row(t, 1709164799999999900ULL, 5, 0, 4);
	expect_row(t, 1709164799999999900ULL + 200, 7, 3, 5);
	expect_eof(t);
	expect_eof(t);
	kv_trace_close(t);
}
END_TEST

/* Columns by name in any order, extra columns ignored, blank line skipped. */
START_TEST(test_vidur_fixture)
{
	struct kv_trace *t = open_ok(fixture("vidur_small.csv"), KV_TRACE_AUTO);

	ck_assert_int_eq(kv_trace_format(t), KV_TRACE_VIDUR);
	expect_row(t, 0, 395, 112, 2);
	expect_row(t, 348463042 - 340020096, 1030, 403, 3);
	/* 1.0000000005 s rounds half up to 1000000001 ns */
	expect_row(t, 1000000001 - 340020096, 9, 5, 5);
	expect_row(t, 2500000000 - 340020096, 9, 6, 6);
	expect_eof(t);
	kv_trace_close(t);
}
END_TEST

START_TEST(test_lengths_fixture)
{
	struct kv_trace *t = open_ok(fixture("lengths_small.csv"), KV_TRACE_AUTO);

	ck_assert_int_eq(kv_trace_format(t), KV_TRACE_LENGTHS);
	ck_assert_int_eq(kv_trace_has_times(t), 0);
	expect_row(t, 0, 74, 918, 2);
	expect_row(t, 0, 290, 905, 3);
	expect_row(t, 0, 1, 0, 4);
	expect_eof(t);
	kv_trace_close(t);
}
END_TEST

/* A vidur file read as lengths; an explicit format that does not fit fails. */
START_TEST(test_forced_format)
{
	struct kv_trace *t = open_ok(fixture("vidur_small.csv"), KV_TRACE_LENGTHS);
	struct kv_diag d = { 0 };

	ck_assert_int_eq(kv_trace_has_times(t), 0);
	expect_row(t, 0, 395, 112, 2);
	kv_trace_close(t);
	t = NULL;
	ck_assert_int_eq(kv_trace_open(fixture("lengths_small.csv"), KV_TRACE_AZURE, &t, &d),
			 KV_EINVAL);
	ck_assert_ptr_null(t);
	ck_assert_msg(strstr(d.msg, "format azure"), "msg: %s", d.msg);
	ck_assert_int_eq(kv_trace_open(fixture("vidur_small.csv"), KV_TRACE_MOONCAKE, &t, &d),
			 KV_EINVAL);
	ck_assert_int_eq(kv_trace_open(fixture("mooncake_small.jsonl"), KV_TRACE_VIDUR, &t, &d),
			 KV_EINVAL);
}
END_TEST

/* Keys in any order, whitespace, CRLF, hash_ids kept, fractional ms. */
START_TEST(test_mooncake_fixture)
{
	struct kv_trace *t = open_ok(fixture("mooncake_small.jsonl"), KV_TRACE_AUTO);

	ck_assert_int_eq(kv_trace_format(t), KV_TRACE_MOONCAKE);
	expect_row(t, 0, 6758, 500, 1);
	ck_assert_uint_eq(row.n_hashes, 3);
	ck_assert(row.hashes[0] == 0 && row.hashes[1] == 1 && row.hashes[2] == 2);
	expect_row(t, 1500 * KV_NS_PER_MS, 600, 1, 2);
	ck_assert_uint_eq(row.n_hashes, 2);
	ck_assert(row.hashes[0] == 7 && row.hashes[1] == 8);
	expect_row(t, 1500 * KV_NS_PER_MS + 1, 1, 0, 4);
	ck_assert_uint_eq(row.n_hashes, 0);
	expect_row(t, 2000 * KV_NS_PER_MS, 2, 0, 5);
	ck_assert_uint_eq(row.n_hashes, 0);
	expect_eof(t);
	kv_trace_close(t);
}
END_TEST

START_TEST(test_mooncake_many_hashes)
{
	static char text[8192];
	struct kv_trace *t;
	size_t n;
	int i;

	n = (size_t)snprintf(text, sizeof(text),
			     "{\"timestamp\": 0, \"input_length\": 9, \"output_length\": 1, \"hash_ids\": [");
	for (i = 0; i < KV_TRACE_MAX_HASHES + 10; i++)
		n += (size_t)snprintf(text + n, sizeof(text) - n, "%s%d", i ? ", " : "", i);
	snprintf(text + n, sizeof(text) - n, "]}\n");
	t = open_ok(temp_file(text), KV_TRACE_AUTO);
	next_ok(t);
	ck_assert_uint_eq(row.n_hashes, KV_TRACE_MAX_HASHES);
	ck_assert_uint_eq(row.n_hashes_dropped, 10);
	ck_assert(row.hashes[KV_TRACE_MAX_HASHES - 1] == KV_TRACE_MAX_HASHES - 1);
	kv_trace_close(t);
}
END_TEST

#define AZ_HDR "TIMESTAMP,ContextTokens,GeneratedTokens\n"
#define VI_HDR "arrived_at,num_prefill_tokens,num_decode_tokens\n"
#define MC_ROW "{\"timestamp\": 0, \"input_length\": 1, \"output_length\": 1}\n"

/*
 * A bad input: the error comes on line `line`, at the column where `at`
 * first occurs in that line ("$": one past its end), naming `field`, with
 * `msg` in the message.
 */
struct bad_case {
	const char *text;
	unsigned long line;
	const char *at;
	const char *field;
	const char *msg;
};

static const struct bad_case bad_cases[] = {
	{ AZ_HDR "2023-11-16 18:17:03.1,12x,3\n", 2, "12x", "ContextTokens",
	  "bad value '12x': expected a non-negative integer" },
	{ AZ_HDR "2023-11-16 18:17:03.1,12,-3\n", 2, "-3", "GeneratedTokens",
	  "bad value '-3'" },
	{ AZ_HDR "2023-11-16 18:17:03.1,0,3\n", 2, "0,", "ContextTokens",
	  "at least 1 token" },
	{ AZ_HDR "2023-11-16 18:17:03.1,,3\n", 2, ",3", "ContextTokens", "bad value ''" },
	{ AZ_HDR "2023-11-16 18:17:03.1,12\n", 2, "$", "GeneratedTokens", "missing field" },
	{ AZ_HDR "2023-11-16 18:17:03.1,12,3,9\r\n", 2, "9", "column 4", "extra field '9'" },
	{ AZ_HDR "2023-02-29 00:00:00,1,1\n", 2, "2023", "TIMESTAMP",
	  "bad value '2023-02-29 00:00:00': expected a datetime" },
	{ AZ_HDR "2023-11-16 24:00:00,1,1\n", 2, "2023", "TIMESTAMP", "expected a datetime" },
	{ AZ_HDR "2023-11-16 18:17:03.1234567890,1,1\n", 2, "2023", "TIMESTAMP",
	  "expected a datetime" },
	{ AZ_HDR "2023-11-16 18:17:03.,1,1\n", 2, "2023", "TIMESTAMP", "expected a datetime" },
	{ AZ_HDR "2023-11-16 18:17:03.2,1,1\n\n2023-11-16 18:17:03.1,1,1\n", 4, "2023",
	  "TIMESTAMP",
	  "unsorted timestamps: 2023-11-16 18:17:03.1 is before the previous row's "
	  "2023-11-16 18:17:03.2" },
	{ VI_HDR "1.5,1,1\n1.25,1,1\n", 3, "1.25", "arrived_at",
	  "unsorted timestamps: 1.25 is before the previous row's 1.5" },
	{ VI_HDR "-1.0,1,1\n", 2, "-1.0", "arrived_at", "bad value '-1.0'" },
	{ "arrived_at,num_prefill_tokens,num_decode_tokens,priority\n0,1,1,1.5\n", 2, "1.5",
	  "priority", "bad value '1.5': expected an integer priority" },
	{ "arrived_at,num_prefill_tokens,num_decode_tokens,priority\n0,1,1,2147483648\n", 2,
	  "2147483648", "priority", "from -2147483648 to 2147483647" },
	{ "arrived_at,num_prefill_tokens,num_decode_tokens,priority\n0,1,1,\n", 2, "$",
	  "priority", "bad value ''" },
	{ "{\"timestamp\": 0, \"input_length\": 1, \"output_length\": 1, \"priority\": \"2\"}\n",
	  1, "\"2\"}", "priority", "expected an integer priority" },
	{ "{\"timestamp\": 0, \"input_length\": 1, \"output_length\": 1, \"priority\": 1, \"priority\": 2}\n",
	  1, "\"priority\": 2", "priority", "duplicate key 'priority'" },
	{ VI_HDR "1.0,1.5,1\n", 2, "1.5", "num_prefill_tokens", "bad value '1.5'" },
	{ VI_HDR "1e999,1,1\n", 2, "1e999", "arrived_at", "bad value" },
	{ VI_HDR "1.0,99999999999999999999,1\n", 2, "9", "num_prefill_tokens", "bad value" },
	{ MC_ROW MC_ROW "{\"timestamp\": 0, \"input_length\": 1, \"output_length\": 1, \"foo\": 2}\n",
	  3, "\"foo\"", "foo", "unknown key 'foo'" },
	{ "{\"timestamp\": 0, \"input_length\": 1}\n", 1, "}", "output_length",
	  "missing field" },
	{ "{\"timestamp\": 0, \"input_length\": 1, \"output_length\": 1, \"hash_ids\": [1, -2]}\n",
	  1, "-2", "hash_ids", "bad value '-2'" },
	{ "{\"timestamp\": 5, \"input_length\": 1, \"output_length\": 1}\n"
	  "{\"timestamp\": 3, \"input_length\": 1, \"output_length\": 1}\n",
	  2, "3", "timestamp", "unsorted timestamps: 3 is before the previous row's 5" },
	{ "{\"timestamp\": 0, \"timestamp\": 1, \"input_length\": 1, \"output_length\": 1}\n", 1,
	  "\"timestamp\": 1", "timestamp", "duplicate key" },
	{ MC_ROW "{\"timestamp\": 0, \"input_length\": 1, \"output_length\": 1} x\n", 2, "x", "",
	  "expected the end of the line" },
	{ "{\"timestamp\": 0, \"input_length\": \"12\", \"output_length\": 1}\n", 1, "\"12\"",
	  "input_length", "bad value '\"12\"'" },
	{ "{\"timestamp\": 0, \"input_length\": 0, \"output_length\": 1}\n", 1, "0, \"output",
	  "input_length", "at least 1 token" },
	{ "{\"timestamp\": 0 \"input_length\": 1, \"output_length\": 1}\n", 1,
	  "\"input_length\"", "", "expected ',' or '}'" },
	{ "{\"timestamp\": 0, \"input_length\": 1, \"output_length\": 1,}\n", 1, "}", "",
	  "expected a quoted key" },
	{ "{\"timestamp\": 0, \"input_length\": 1, \"output_length\": 1, \"hash_ids\": 3}\n", 1,
	  "3}", "hash_ids", "expected an array" },
	{ "{\"timestamp\": 0, \"input_length\": 1, \"output_length\": null}\n", 1, "null",
	  "output_length", "bad value 'null'" },
	/* CSV quoting is not supported: said so, in a role column or an ignored one */
	{ VI_HDR "1.0,\"12\",4\n", 2, "\"12\"", "num_prefill_tokens",
	  "bad value '\"12\"': quoted CSV fields are not supported" },
	{ "request_id,arrived_at,num_prefill_tokens,num_decode_tokens\n\"a,b\",1.0,1,1\n", 2,
	  "\"a", "request_id", "quoted CSV fields are not supported" },
	/* control bytes in a bad value are shown escaped, the message stays one line */
	{ VI_HDR "1.0,1\t2,4\n", 2, "1\t2", "num_prefill_tokens", "bad value '1\\t2'" },
};

/* 1-based column of `at` in line `line` of text. */
static unsigned long expected_col(const struct bad_case *c)
{
	const char *p = c->text, *nl, *hit;
	unsigned long i;
	size_t len;

	for (i = 1; i < c->line; i++)
		p = strchr(p, '\n') + 1;
	nl = strchr(p, '\n');
	len = nl ? (size_t)(nl - p) : strlen(p);
	while (len > 0 && p[len - 1] == '\r')
		len--;
	if (!strcmp(c->at, "$"))
		return len + 1;
	hit = strstr(p, c->at);
	ck_assert_msg(hit && hit < p + len, "bad test: '%s' not in line %lu", c->at, c->line);
	return (unsigned long)(hit - p) + 1;
}

START_TEST(test_bad_rows)
{
	const struct bad_case *c = &bad_cases[_i];
	const char *path = temp_file(c->text);
	struct kv_trace *t = open_ok(path, KV_TRACE_AUTO);
	struct kv_diag d = { 0 };
	int r;

	while ((r = kv_trace_next(t, &row, &d)) == 1)
		;
	ck_assert_msg(r == KV_EINVAL, "case %d: got %d, want KV_EINVAL", _i, r);
	ck_assert_str_eq(d.file, path);
	ck_assert_msg(d.line == c->line && d.col == expected_col(c),
		      "case %d: at %lu:%lu, want %lu:%lu (%s)", _i, d.line, d.col, c->line,
		      expected_col(c), d.msg);
	ck_assert_msg(!strcmp(d.field, c->field), "case %d: field '%s', want '%s'", _i,
		      d.field, c->field);
	ck_assert_msg(strstr(d.msg, c->msg), "case %d: message '%s' lacks '%s'", _i, d.msg,
		      c->msg);
	kv_trace_close(t);
	unlink(path);
}
END_TEST

static int open_fails(const char *text, struct kv_diag *d)
{
	const char *path = temp_file(text);
	struct kv_trace *t = NULL;
	int err = kv_trace_open(path, KV_TRACE_AUTO, &t, d);

	ck_assert_ptr_null(t);
	unlink(path);
	return err;
}

/*
 * The optional priority field: a CSV column in any format (its rows all have
 * one), a JSON key per line; a row without one reads priority 0.
 */
START_TEST(test_priority_field)
{
	static const struct {
		const char *text;
		int32_t prio[3];
		int has[3];
	} cases[] = {
		{ "arrived_at,num_prefill_tokens,num_decode_tokens,priority\n0,5,1,3\n1,5,1,-2\n2,5,1,-2147483648\n",
		  { 3, -2, INT32_MIN }, { 1, 1, 1 } },
		{ "priority,num_prefill_tokens,num_decode_tokens\n2147483647,5,1\n0,5,1\n007,5,1\n",
		  { INT32_MAX, 0, 7 }, { 1, 1, 1 } },
		{ "arrived_at,num_prefill_tokens,num_decode_tokens\n0,5,1\n1,5,1\n2,5,1\n",
		  { 0, 0, 0 }, { 0, 0, 0 } },
		{ "{\"priority\": 4, \"timestamp\": 0, \"input_length\": 5, \"output_length\": 1}\n"
		  "{\"timestamp\": 1, \"input_length\": 5, \"output_length\": 1}\n"
		  "{\"timestamp\": 2, \"input_length\": 5, \"output_length\": 1, \"priority\": -1}\n",
		  { 4, 0, -1 }, { 1, 0, 1 } },
	};
	size_t i;
	int k;

	for (i = 0; i < KV_ARRAY_LEN(cases); i++) {
		const char *path = temp_file(cases[i].text);
		struct kv_trace *t = open_ok(path, KV_TRACE_AUTO);

		for (k = 0; k < 3; k++) {
			next_ok(t);
			ck_assert_msg(row.priority == cases[i].prio[k] && row.has_priority == cases[i].has[k],
				      "case %zu row %d: priority %d (has %d), want %d (has %d)", i, k,
				      row.priority, row.has_priority, cases[i].prio[k], cases[i].has[k]);
		}
		expect_eof(t);
		kv_trace_close(t);
		unlink(path);
	}
}
END_TEST

START_TEST(test_bad_headers)
{
	struct kv_diag d = { 0 };

	ck_assert_int_eq(open_fails("a,b,c\n1,2,3\n", &d), KV_EINVAL);
	ck_assert_msg(strstr(d.msg, "unknown header 'a,b,c'") && strstr(d.msg, "azure") &&
			      strstr(d.msg, "vidur") && strstr(d.msg, "lengths") &&
			      strstr(d.msg, "mooncake"),
		      "msg: %s", d.msg);
	ck_assert_uint_eq(d.line, 1);
	ck_assert_int_eq(open_fails("", &d), KV_EINVAL);
	ck_assert_msg(strstr(d.msg, "empty file"), "msg: %s", d.msg);
	ck_assert_int_eq(open_fails("num_prefill_tokens,num_decode_tokens,num_prefill_tokens\n",
				    &d),
			 KV_EINVAL);
	ck_assert_msg(strstr(d.msg, "duplicate column"), "msg: %s", d.msg);
}
END_TEST

/* The first error of the n bytes at text (at open or while reading rows) into d. */
static int first_error(const char *text, size_t n, struct kv_diag *d)
{
	const char *path = temp_file_n(text, n);
	struct kv_trace *t = NULL;
	int r = kv_trace_open(path, KV_TRACE_AUTO, &t, d);

	while (!r && (r = kv_trace_next(t, &row, d)) == 1)
		;
	kv_trace_close(t);
	unlink(path);
	return r;
}

/* A NUL inside a field is reported as a NUL, shown as \0, naming the field. */
START_TEST(test_nul_byte)
{
	static const char vi[] = VI_HDR "1.0,12\0003,4\n";
	static const char ignored[] = "request_id,arrived_at,num_prefill_tokens,num_decode_tokens\n"
				      "7\0,1.0,1,1\n";
	static const char mc[] = "{\"timestamp\": 0, \"input_length\": 1\0, \"output_length\": 1}\n";
	static const char hdr[] = "arrived_at,num_prefill\0_tokens,num_decode_tokens\n1,1,1\n";
	struct kv_diag d = { 0 };

	ck_assert_int_eq(first_error(vi, sizeof(vi) - 1, &d), KV_EINVAL);
	ck_assert_msg(d.line == 2 && d.col == 5 && !strcmp(d.field, "num_prefill_tokens") &&
			      !strcmp(d.msg, "bad value '12\\03': contains a NUL byte (a binary or corrupt file?)"),
		      "vidur: %lu:%lu %s: %s", d.line, d.col, d.field, d.msg);
	ck_assert_int_eq(first_error(ignored, sizeof(ignored) - 1, &d), KV_EINVAL);
	ck_assert_msg(d.line == 2 && d.col == 1 && !strcmp(d.field, "request_id") &&
			      strstr(d.msg, "bad value '7\\0': contains a NUL byte"),
		      "ignored column: %lu:%lu %s: %s", d.line, d.col, d.field, d.msg);
	ck_assert_int_eq(first_error(mc, sizeof(mc) - 1, &d), KV_EINVAL);
	ck_assert_msg(d.line == 1 && strstr(d.msg, "1\\0'") && strstr(d.msg, "contains a NUL byte"),
		      "mooncake: %lu:%lu %s: %s", d.line, d.col, d.field, d.msg);
	ck_assert_int_eq(first_error(hdr, sizeof(hdr) - 1, &d), KV_EINVAL);
	ck_assert_msg(d.line == 1 && !strcmp(d.field, "header") &&
			      strstr(d.msg, "'num_prefill\\0_tokens': contains a NUL byte"),
		      "header: %lu:%lu %s: %s", d.line, d.col, d.field, d.msg);
}
END_TEST

/*
 * A line may hold KV_INPUT_MAX_LINE_BYTES bytes; one more without a newline
 * is an error at that line (a file without newlines stops there, it does
 * not grow the buffer until memory runs out).
 */
START_TEST(test_line_length)
{
	size_t max = KV_INPUT_MAX_LINE_BYTES, hl = strlen(VI_HDR), n = hl + max + 1;
	char *text = malloc(n + 1);
	struct kv_diag d = { 0 };

	ck_assert_ptr_nonnull(text);
	memcpy(text, VI_HDR, hl);
	memset(text + hl, '1', max);
	memcpy(text + hl, "1.0,1,", 6);
	text[hl + max] = '\n'; /* a line of exactly max bytes: read, its value is too big */
	ck_assert_int_eq(first_error(text, n, &d), KV_EINVAL);
	ck_assert_msg(d.line == 2 && strstr(d.msg, "bad value '111") &&
			      !strcmp(d.field, "num_decode_tokens"),
		      "max line: %lu:%lu %s: %s", d.line, d.col, d.field, d.msg);
	text[hl + max] = '1'; /* max + 1 bytes, no newline */
	ck_assert_int_eq(first_error(text, n, &d), KV_EINVAL);
	ck_assert_msg(d.line == 2 && d.col == max + 1 &&
			      strstr(d.msg, "line longer than 1048576 bytes"),
		      "long line: %lu:%lu %s: %s", d.line, d.col, d.field, d.msg);
	memset(text, 'x', n); /* no newline at all: the header itself */
	ck_assert_int_eq(first_error(text, n, &d), KV_EINVAL);
	ck_assert_msg(d.line == 1 && strstr(d.msg, "line longer than"), "header: %lu: %s", d.line,
		      d.msg);
	free(text);
}
END_TEST

/* Only regular files are read: a FIFO without a writer fails at once, /dev/zero too. */
START_TEST(test_special_files)
{
	char dir[] = "/tmp/kvsim_trace_XXXXXX", fifo[64];
	struct kv_trace *t = NULL;
	struct kv_diag d = { 0 };

	ck_assert_ptr_nonnull(mkdtemp(dir));
	snprintf(fifo, sizeof(fifo), "%s/t.csv", dir);
	ck_assert_int_eq(mkfifo(fifo, 0600), 0);
	ck_assert_int_eq(kv_trace_open(fifo, KV_TRACE_AUTO, &t, &d), KV_EINVAL);
	ck_assert_msg(strstr(d.msg, "a FIFO (named pipe): expected a regular file"), "fifo: %s",
		      d.msg);
	unlink(fifo);
	ck_assert_int_eq(kv_trace_open("/dev/zero", KV_TRACE_AUTO, &t, &d), KV_EINVAL);
	ck_assert_msg(strstr(d.msg, "a character device"), "/dev/zero: %s", d.msg);
	ck_assert_int_eq(kv_trace_open(dir, KV_TRACE_AUTO, &t, &d), KV_EINVAL);
	ck_assert_msg(strstr(d.msg, "a directory"), "dir: %s", d.msg);
	ck_assert_ptr_null(t);
	rmdir(dir);
}
END_TEST

START_TEST(test_missing_file)
{
	struct kv_trace *t = NULL;
	struct kv_diag d = { 0 };

	ck_assert_int_eq(kv_trace_open("/nonexistent/kvsim.csv", KV_TRACE_AUTO, &t, &d),
			 KV_ENOENT);
	ck_assert_ptr_null(t);
	ck_assert_str_eq(d.file, "/nonexistent/kvsim.csv");
	ck_assert_msg(strstr(d.msg, "cannot open: No such file"), "msg: %s", d.msg);
	kv_trace_close(NULL);
}
END_TEST

/* Rewind returns to the first data row, times again relative to it. */
START_TEST(test_rewind)
{
	const char *names[] = { "azure_small.csv", "vidur_small.csv", "lengths_small.csv",
				"mooncake_small.jsonl" };
	kv_ns t1;
	int i;

	for (i = 0; i < 4; i++) {
		struct kv_trace *t = open_ok(fixture(names[i]), KV_TRACE_AUTO);
		unsigned long line1;
		uint64_t p1, o1;

		next_ok(t);
		t1 = row.t_ns;
		p1 = row.prompt_tokens;
		o1 = row.output_tokens;
		line1 = row.line;
		while (kv_trace_next(t, &row, NULL) == 1)
			;
		ck_assert_int_eq(kv_trace_rewind(t), 0);
		expect_row(t, t1, p1, o1, line1);
		kv_trace_close(t);
	}
}
END_TEST

/* Reads a real trace to the end; returns the rows, checks no error. */
static unsigned long read_all(struct kv_trace *t)
{
	struct kv_diag d = { 0 };
	unsigned long n = 0;
	int r;

	while ((r = kv_trace_next(t, &row, &d)) == 1)
		n++;
	ck_assert_msg(r == 0, "%s:%lu:%lu: %s: %s", d.file, d.line, d.col, d.field, d.msg);
	return n;
}

struct real_case {
	const char *name;
	enum kv_trace_format fmt;
	unsigned long rows; /* data rows, as `wc -l` counts them */
	kv_ns last_t_ns; /* time of the last row */
	uint64_t last_prompt, last_output;
};

static const struct real_case real_cases[] = {
	{ "AzureLLMInferenceTrace_code.csv", KV_TRACE_AZURE, 8819, 3435948056000ULL, 549, 173 },
	{ "AzureLLMInferenceTrace_conv.csv", KV_TRACE_AZURE, 19366, 3501721937000ULL, 197, 183 },
	{ "conversation_trace.jsonl", KV_TRACE_MOONCAKE, 12031, 3536999 * KV_NS_PER_MS, 20774,
	  508 },
	{ "sharegpt_8k_filtered_stats_llama2_tokenizer.csv", KV_TRACE_LENGTHS, 30731, 0, 2285,
	  363 },
	{ "azure_conv_poisson3_10k.csv", KV_TRACE_VIDUR, 10000, 3160132088508ULL - 340020096ULL,
	  685, 120 },
};

START_TEST(test_real_traces)
{
	const struct real_case *c = &real_cases[_i];
	const char *path = real_trace(c->name);
	struct kv_trace *t;

	if (!path)
		return; /* KVSIM_TRACES absent: nothing to check */
	t = open_ok(path, KV_TRACE_AUTO);
	ck_assert_int_eq(kv_trace_format(t), c->fmt);
	ck_assert_uint_eq(read_all(t), c->rows);
	ck_assert_msg(row.t_ns == c->last_t_ns && row.prompt_tokens == c->last_prompt &&
			      row.output_tokens == c->last_output,
		      "%s last row: t=%llu %llu/%llu", c->name, (unsigned long long)row.t_ns,
		      (unsigned long long)row.prompt_tokens,
		      (unsigned long long)row.output_tokens);
	kv_trace_close(t);
}
END_TEST

/* 18:17:03.9799600 -> 18:17:04.0319600 is exactly 52 ms. */
START_TEST(test_azure_real_gap)
{
	const char *path = real_trace("AzureLLMInferenceTrace_code.csv");
	struct kv_trace *t;

	if (!path)
		return;
	t = open_ok(path, KV_TRACE_AUTO);
	expect_row(t, 0, 4808, 10, 2);
	expect_row(t, 52000000, 3180, 8, 3);
	kv_trace_close(t);
}
END_TEST

START_TEST(test_mooncake_real_hashes)
{
	const char *path = real_trace("conversation_trace.jsonl");
	struct kv_trace *t;
	uint32_t i;

	if (!path)
		return;
	t = open_ok(path, KV_TRACE_AUTO);
	expect_row(t, 0, 6758, 500, 1);
	ck_assert_uint_eq(row.n_hashes, 14);
	for (i = 0; i < 14; i++)
		ck_assert_uint_eq(row.hashes[i], i);
	read_all(t);
	ck_assert_uint_eq(row.n_hashes, 41);
	ck_assert_uint_eq(row.hashes[1], 182750);
	kv_trace_close(t);
}
END_TEST

/* Bytes of heap in use (glibc); 0 where mallinfo2 is missing. */
static size_t heap_in_use(void)
{
#if defined(__GLIBC__) && (__GLIBC__ > 2 || __GLIBC_MINOR__ >= 33)
	return mallinfo2().uordblks;
#else
	return 0;
#endif
}

/*
 * Streaming: a second pass over the 19k-row trace allocates nothing (the
 * heap in use is unchanged; under ASan mallinfo2 reads glibc's idle arena,
 * so the check is weaker but still passes).
 */
START_TEST(test_streaming_memory)
{
	const char *path = real_trace("AzureLLMInferenceTrace_conv.csv");
	struct kv_trace *t;
	size_t before;

	if (!path)
		path = fixture("azure_small.csv");
	t = open_ok(path, KV_TRACE_AUTO);
	read_all(t);
	before = heap_in_use();
	ck_assert_int_eq(kv_trace_rewind(t), 0);
	read_all(t);
	ck_assert_uint_eq(heap_in_use(), before);
	kv_trace_close(t);
}
END_TEST

static Suite *trace_suite(void)
{
	Suite *s = suite_create("trace");
	TCase *tc = tcase_create("core");

	tcase_add_test(tc, test_format_names);
	tcase_add_test(tc, test_azure_fixture);
	tcase_add_test(tc, test_vidur_fixture);
	tcase_add_test(tc, test_lengths_fixture);
	tcase_add_test(tc, test_forced_format);
	tcase_add_test(tc, test_mooncake_fixture);
	tcase_add_test(tc, test_mooncake_many_hashes);
	tcase_add_loop_test(tc, test_bad_rows, 0, (int)KV_ARRAY_LEN(bad_cases));
	tcase_add_test(tc, test_bad_headers);
	tcase_add_test(tc, test_priority_field);
	tcase_add_test(tc, test_missing_file);
	tcase_add_test(tc, test_rewind);
	tcase_add_loop_test(tc, test_real_traces, 0, (int)KV_ARRAY_LEN(real_cases));
	tcase_add_test(tc, test_azure_real_gap);
	tcase_add_test(tc, test_mooncake_real_hashes);
	tcase_add_test(tc, test_streaming_memory);
	tcase_add_test(tc, test_nul_byte);
	tcase_add_test(tc, test_line_length);
	tcase_add_test(tc, test_special_files);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(trace_suite());
	int failures;

	srunner_run_all(sr, CK_NORMAL);
	failures = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failures ? 1 : 0;
}
