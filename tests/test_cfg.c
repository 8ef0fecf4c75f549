/*
 * test_cfg.c -- the YAML config tree: node positions, typed readers and
 * their diagnostics (file:line:col, field, message), sizes and durations,
 * --set overrides, syntax errors, duplicate and unknown keys, files.
 */
#include "testutil.h"

#include <check.h>
#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cfg.h"

static struct kv_cfg_doc doc; /* freed by the fixture after every test */
static struct kv_diag d;

static void teardown(void)
{
	kv_cfg_free(&doc);
}

#define DIAG_FMT "%s:%lu:%lu: [%s] %s"
#define DIAG_ARGS(x) (x).file, (x).line, (x).col, (x).field, (x).msg

/* Loads text as "t.yaml" into doc, which must succeed. */
static void load(const char *text)
{
	int err;

	kv_cfg_free(&doc);
	memset(&d, 0, sizeof(d));
	err = kv_cfg_load_string(&doc, "t.yaml", text, &d);
	ck_assert_msg(err == 0, "load of <<%.80s>> returned %d: " DIAG_FMT, text, err,
		      DIAG_ARGS(d));
}

/* Loads text as "t.yaml", which must fail with code; doc stays empty. */
static void load_fails(const char *text, int code)
{
	int err;

	kv_cfg_free(&doc);
	memset(&d, 0, sizeof(d));
	err = kv_cfg_load_string(&doc, "t.yaml", text, &d);
	ck_assert_msg(err == code, "load of <<%.80s>> returned %d, want %d: " DIAG_FMT, text,
		      err, code, DIAG_ARGS(d));
	ck_assert_msg(!doc.root && !doc.path, "failed load left a document behind");
}

/*
 * Checks err and the diagnostic: code, file, line, col, field, and msg
 * (exact when exact, else a substring).  what names the case.
 */
static void check_diag(const char *what, int err, int code, const char *file,
		       unsigned long line, unsigned long col, const char *field, const char *msg,
		       int exact)
{
	ck_assert_msg(err == code, "%s: returned %d, want %d: " DIAG_FMT, what, err, code,
		      DIAG_ARGS(d));
	ck_assert_msg(!strcmp(d.file, file) && d.line == line && d.col == col,
		      "%s: at %s:%lu:%lu, want %s:%lu:%lu (" DIAG_FMT ")", what, d.file, d.line,
		      d.col, file, line, col, DIAG_ARGS(d));
	ck_assert_msg(!strcmp(d.field, field), "%s: field '%s', want '%s'", what, d.field,
		      field);
	ck_assert_msg(exact ? !strcmp(d.msg, msg) : !!strstr(d.msg, msg),
		      "%s: message\n  '%s'\n%s\n  '%s'", what, d.msg,
		      exact ? "want" : "does not contain", msg);
}

/* Node at a dotted path of map keys from the root, which must exist. */
static struct kv_cfg_node *at(const char *path)
{
	struct kv_cfg_node *n = doc.root;
	char buf[256], *tok, *save = NULL;

	snprintf(buf, sizeof(buf), "%s", path);
	for (tok = strtok_r(buf, ".", &save); tok; tok = strtok_r(NULL, ".", &save))
		n = kv_cfg_get(n, tok);
	ck_assert_msg(n != NULL, "no node at '%s'", path);
	return n;
}

/* Item i of sequence s. */
static struct kv_cfg_node *item(struct kv_cfg_node *s, size_t i)
{
	struct kv_cfg_node *n = s->child;

	for (; n && i; i--)
		n = n->next;
	ck_assert_msg(n != NULL, "sequence has no item %zu", i);
	return n;
}

static void check_pos(const struct kv_cfg_node *n, unsigned long line, unsigned long col,
		      unsigned long key_line, unsigned long key_col)
{
	char path[128];

	kv_cfg_path(n, path, sizeof(path));
	ck_assert_msg(n->line == line && n->col == col && n->key_line == key_line &&
			      n->key_col == key_col,
		      "%s: value %lu:%lu key %lu:%lu, want value %lu:%lu key %lu:%lu", path,
		      n->line, n->col, n->key_line, n->key_col, line, col, key_line, key_col);
}

START_TEST(parse_nested)
{
	struct kv_cfg_node *w, *t, *share, *list;
	char path[128];

	load("name: demo\n"
	     "workload:\n"
	     "  arrival:\n"
	     "    rate: 5.5\n"
	     "  tenants:\n"
	     "    - name: a\n"
	     "      share: 1\n"
	     "    - {name: b, share: 2}\n"
	     "list: [1, \"two\", 'three']\n");
	ck_assert_int_eq(doc.root->type, KV_CFG_MAP);
	ck_assert_uint_eq(doc.root->n_children, 3);
	w = at("workload");
	ck_assert_int_eq(w->type, KV_CFG_MAP);
	check_pos(w, 3, 3, 2, 1);
	check_pos(at("workload.arrival.rate"), 4, 11, 4, 5);
	ck_assert_str_eq(at("workload.arrival.rate")->value, "5.5");
	t = at("workload.tenants");
	ck_assert_int_eq(t->type, KV_CFG_SEQ);
	ck_assert_uint_eq(t->n_children, 2);
	check_pos(t, 6, 5, 5, 3);
	check_pos(item(t, 0), 6, 7, 0, 0);
	ck_assert_ptr_null(item(t, 0)->key);
	check_pos(kv_cfg_get(item(t, 0), "share"), 7, 14, 7, 7);
	share = kv_cfg_get(item(t, 1), "share");
	check_pos(share, 8, 24, 8, 17);
	ck_assert_str_eq(share->value, "2");
	ck_assert_ptr_eq(share->parent, item(t, 1));
	ck_assert_str_eq(share->file, "t.yaml");
	ck_assert_str_eq(kv_cfg_path(share, path, sizeof(path)), "workload.tenants[1].share");
	ck_assert_str_eq(kv_cfg_path(doc.root, path, sizeof(path)), "");
	ck_assert_str_eq(kv_cfg_path(share, path, 12), "...share");
	list = at("list");
	ck_assert_int_eq(item(list, 0)->quoted, 0);
	ck_assert_int_eq(item(list, 1)->quoted, 1);
	ck_assert_int_eq(item(list, 2)->quoted, 1);
	ck_assert_str_eq(item(list, 2)->value, "three");
	ck_assert_str_eq(doc.dir, ".");
}
END_TEST

START_TEST(get_marks_used)
{
	struct kv_cfg_node *a;

	load("a: {b: 1}\nc: 2\n");
	a = doc.root->child;
	ck_assert_int_eq(a->used, 0);
	ck_assert_ptr_eq(kv_cfg_get(doc.root, "a"), a);
	ck_assert_int_eq(a->used, 1);
	ck_assert_ptr_null(kv_cfg_get(doc.root, "zz"));
	ck_assert_ptr_null(kv_cfg_get(NULL, "a"));
	ck_assert_ptr_null(kv_cfg_get(kv_cfg_get(doc.root, "c"), "a"));
}
END_TEST

START_TEST(u64_ok)
{
	static const struct {
		const char *text;
		uint64_t want;
	} cases[] = {
		{ "1000", 1000 },
		{ "1_000_000", 1000000 },
		{ "1e6", 1000000 },
		{ "1E6", 1000000 },
		{ "1.5e3", 1500 },
		{ "+7", 7 },
		{ "0", 0 },
		{ "-0", 0 },
		{ "007", 7 },
		{ "\"5\"", 5 },
		{ "18446744073709551615", UINT64_MAX },
		{ "1844674407370955161.5e1", UINT64_MAX },
		{ "100e-2", 1 },
	};
	char text[128];
	uint64_t x;
	size_t i;
	int err;

	for (i = 0; i < KV_ARRAY_LEN(cases); i++) {
		snprintf(text, sizeof(text), "k: %s\n", cases[i].text);
		load(text);
		x = 42;
		err = kv_cfg_u64(doc.root, "k", 9, 0, UINT64_MAX, &x, &d);
		ck_assert_msg(!err && x == cases[i].want, "'%s': err %d, got %llu, want %llu: %s",
			      cases[i].text, err, (unsigned long long)x,
			      (unsigned long long)cases[i].want, d.msg);
	}
	load("k:\nn: ~\n");
	ck_assert_int_eq(kv_cfg_u64(doc.root, "absent", 9, 0, 10, &x, &d), 0);
	ck_assert_uint_eq(x, 9);
	/* a key with no value is an error, not the default (issue 11) */
	x = 5;
	check_diag("empty", kv_cfg_u64(doc.root, "k", 8, 0, 10, &x, &d), KV_EINVAL, "t.yaml", 1, 3,
		   "k", "no value: expected a non-negative integer (leave the key out for the default)",
		   1);
	check_diag("null", kv_cfg_u64(doc.root, "n", 7, 0, 10, &x, &d), KV_EINVAL, "t.yaml", 2, 4,
		   "n", "no value ('~' is YAML's null): expected a non-negative integer", 0);
	ck_assert_uint_eq(x, 5);
	ck_assert_int_eq(kv_cfg_u64(NULL, "k", 6, 0, 10, &x, &d), 0);
	ck_assert_uint_eq(x, 6);
}
END_TEST

#define ANY 0, UINT64_MAX /* the full range of kv_cfg_u64() */

START_TEST(u64_errors)
{
	static const struct {
		const char *text;
		uint64_t min, max;
		int code;
		const char *msg;
	} cases[] = {
		{ "-5", ANY, KV_EINVAL, "bad value '-5': expected a non-negative integer" },
		{ "1.5", ANY, KV_EINVAL, "bad value '1.5': expected a non-negative integer" },
		{ "1e-1", ANY, KV_EINVAL, "bad value '1e-1': expected a non-negative integer" },
		{ "abc", ANY, KV_EINVAL, "bad value 'abc': expected a non-negative integer" },
		{ "1__0", ANY, KV_EINVAL, "bad value '1__0': expected a non-negative integer" },
		{ "_1", ANY, KV_EINVAL, "bad value '_1': expected a non-negative integer" },
		{ "1_", ANY, KV_EINVAL, "bad value '1_': expected a non-negative integer" },
		{ "0x10", ANY, KV_EINVAL, "bad value '0x10': expected a non-negative integer" },
		{ "1e", ANY, KV_EINVAL, "bad value '1e': expected a non-negative integer" },
		{ "''", ANY, KV_EINVAL, "bad value '': expected a non-negative integer" },
		{ "18446744073709551616", ANY, KV_ERANGE,
		  "bad value '18446744073709551616': expected a non-negative integer" },
		{ "1e20", ANY, KV_ERANGE, "bad value '1e20': expected a non-negative integer" },
		{ "101", 1, 100, KV_ERANGE,
		  "bad value '101': expected a non-negative integer in [1, 100]" },
		{ "0", 1, 100, KV_ERANGE,
		  "bad value '0': expected a non-negative integer in [1, 100]" },
		{ "0", 1, UINT64_MAX, KV_ERANGE,
		  "bad value '0': expected a non-negative integer of at least 1" },
		{ "[1, 2]", ANY, KV_EINVAL, "expected a non-negative integer, got a sequence" },
		{ "{a: 1}", 1, 100, KV_EINVAL,
		  "expected a non-negative integer in [1, 100], got a mapping" },
	};
	char text[128];
	uint64_t x;
	size_t i;
	int err;

	for (i = 0; i < KV_ARRAY_LEN(cases); i++) {
		snprintf(text, sizeof(text), "w:\n  x: 1\n  n: %s\n", cases[i].text);
		load(text);
		x = 42;
		err = kv_cfg_u64(at("w"), "n", 0, cases[i].min, cases[i].max, &x, &d);
		check_diag(cases[i].text, err, cases[i].code, "t.yaml", 3, 6, "w.n", cases[i].msg,
			   1);
		ck_assert_msg(x == 42, "'%s': *out written on error", cases[i].text);
	}
}
END_TEST

START_TEST(reader_on_non_map)
{
	uint64_t x;

	load("w: 5\n");
	check_diag("u64 in scalar", kv_cfg_u64(at("w"), "n", 0, 0, 9, &x, &d), KV_EINVAL,
		   "t.yaml", 1, 4, "w", "expected a mapping (key: value), got '5'", 1);
}
END_TEST

START_TEST(dbl_ok)
{
	static const struct {
		const char *text;
		double want;
	} cases[] = {
		{ "0.5", 0.5 }, { "1e9", 1e9 }, { ".5", 0.5 }, { "-2.5", -2.5 },
		{ "1_000.25", 1000.25 }, { "\"3\"", 3 }, { "5.", 5 }, { "+1E-3", 1e-3 },
	};
	char text[128];
	double x;
	size_t i;
	int err;

	for (i = 0; i < KV_ARRAY_LEN(cases); i++) {
		snprintf(text, sizeof(text), "k: %s\n", cases[i].text);
		load(text);
		err = kv_cfg_dbl(doc.root, "k", 0, -1e9, 1e9, &x, &d);
		ck_assert_msg(!err && x == cases[i].want, "'%s': err %d, got %g, want %g: %s",
			      cases[i].text, err, x, cases[i].want, d.msg);
	}
	ck_assert_int_eq(kv_cfg_dbl(doc.root, "absent", 2.5, 0, 1, &x, &d), 0);
	ck_assert(x == 2.5);
}
END_TEST

START_TEST(dbl_errors)
{
	static const struct {
		const char *text;
		double min, max;
		int code;
		const char *msg;
	} cases[] = {
		{ "fast", 0, 1e9, KV_EINVAL, "bad value 'fast': expected a number in [0, 1e+09]" },
		{ "2e9", 0, 1e9, KV_ERANGE, "bad value '2e9': expected a number in [0, 1e+09]" },
		{ "-1", 0, DBL_MAX, KV_ERANGE, "bad value '-1': expected a number >= 0" },
		{ ".nan", -DBL_MAX, DBL_MAX, KV_EINVAL, "bad value '.nan': expected a number" },
		{ ".inf", -DBL_MAX, DBL_MAX, KV_EINVAL, "bad value '.inf': expected a number" },
		{ "-.inf", -DBL_MAX, DBL_MAX, KV_EINVAL, "bad value '-.inf': expected a number" },
		{ "nan", -DBL_MAX, DBL_MAX, KV_EINVAL, "bad value 'nan': expected a number" },
		{ "inf", -DBL_MAX, DBL_MAX, KV_EINVAL, "bad value 'inf': expected a number" },
		{ "0x1p3", -DBL_MAX, DBL_MAX, KV_EINVAL, "bad value '0x1p3': expected a number" },
		{ "1e999", -DBL_MAX, DBL_MAX, KV_ERANGE, "bad value '1e999': expected a number" },
		{ "[1]", 0, 1, KV_EINVAL, "expected a number in [0, 1], got a sequence" },
	};
	char text[128];
	double x;
	size_t i;
	int err;

	for (i = 0; i < KV_ARRAY_LEN(cases); i++) {
		snprintf(text, sizeof(text), "workload:\n  arrival:\n    rate: %s\n",
			 cases[i].text);
		load(text);
		err = kv_cfg_dbl(at("workload.arrival"), "rate", 0, cases[i].min, cases[i].max, &x,
				 &d);
		check_diag(cases[i].text, err, cases[i].code, "t.yaml", 3, 11,
			   "workload.arrival.rate", cases[i].msg, 1);
	}
}
END_TEST

START_TEST(bool_reader)
{
	static const char *const yes[] = { "true", "True", "TRUE", "yes", "on" };
	static const char *const no[] = { "false", "no", "Off" };
	char text[64];
	size_t i;
	int x;

	for (i = 0; i < KV_ARRAY_LEN(yes) + KV_ARRAY_LEN(no); i++) {
		int t = i < KV_ARRAY_LEN(yes);

		snprintf(text, sizeof(text), "k: %s\n", t ? yes[i] : no[i - KV_ARRAY_LEN(yes)]);
		load(text);
		x = -1;
		ck_assert_int_eq(kv_cfg_bool(doc.root, "k", !t, &x, &d), 0);
		ck_assert_msg(x == t, "<<%s>> read as %d", text, x);
	}
	load("a: \"true\"\nb: maybe\nc:\n");
	check_diag("quoted", kv_cfg_bool(doc.root, "a", 0, &x, &d), KV_EINVAL, "t.yaml", 1, 4, "a",
		   "bad value 'true' (quoted): "
		   "expected true/false, yes/no or on/off without quotes", 1);
	check_diag("maybe", kv_cfg_bool(doc.root, "b", 0, &x, &d), KV_EINVAL, "t.yaml", 2, 4, "b",
		   "bad value 'maybe': expected true/false, yes/no or on/off", 1);
	check_diag("empty", kv_cfg_bool(doc.root, "c", 1, &x, &d), KV_EINVAL, "t.yaml", 3, 3, "c",
		   "no value: expected true/false, yes/no or on/off", 0);
}
END_TEST

START_TEST(str_reader)
{
	char buf[16];

	load("name: hello\nnum: '5'\nm: {a: 1}\nempty: ''\n");
	ck_assert_int_eq(kv_cfg_str(doc.root, "name", "x", buf, sizeof(buf), &d), 0);
	ck_assert_str_eq(buf, "hello");
	ck_assert_int_eq(kv_cfg_str(doc.root, "num", "x", buf, sizeof(buf), &d), 0);
	ck_assert_str_eq(buf, "5");
	ck_assert_int_eq(kv_cfg_str(doc.root, "empty", "x", buf, sizeof(buf), &d), 0);
	ck_assert_str_eq(buf, "");
	ck_assert_int_eq(kv_cfg_str(doc.root, "absent", "def", buf, sizeof(buf), &d), 0);
	ck_assert_str_eq(buf, "def");
	ck_assert_int_eq(kv_cfg_str(doc.root, "absent", NULL, buf, sizeof(buf), &d), 0);
	ck_assert_str_eq(buf, "");
	check_diag("too long", kv_cfg_str(doc.root, "name", NULL, buf, 4, &d), KV_ERANGE, "t.yaml",
		   1, 7, "name", "value too long (5 bytes): at most 3 bytes", 1);
	check_diag("map", kv_cfg_str(doc.root, "m", NULL, buf, sizeof(buf), &d), KV_EINVAL,
		   "t.yaml", 3, 4, "m", "expected a string, got a mapping", 1);
}
END_TEST

START_TEST(enum_reader)
{
	static const char *const names[] = { "fifo", "sjf", "lpm", NULL };
	int x;

	load("s: sjf\nt: rr\nu: [fifo]\n");
	ck_assert_int_eq(kv_cfg_enum(doc.root, "s", names, 0, &x, &d), 0);
	ck_assert_int_eq(x, 1);
	ck_assert_int_eq(kv_cfg_enum(doc.root, "absent", names, 2, &x, &d), 0);
	ck_assert_int_eq(x, 2);
	check_diag("rr", kv_cfg_enum(doc.root, "t", names, 0, &x, &d), KV_EINVAL, "t.yaml", 2, 4,
		   "t", "bad value 'rr': expected one of: fifo, sjf, lpm", 1);
	check_diag("seq", kv_cfg_enum(doc.root, "u", names, 0, &x, &d), KV_EINVAL, "t.yaml", 3, 4,
		   "u", "expected one of: fifo, sjf, lpm; got a sequence", 1);
}
END_TEST

START_TEST(node_readers)
{
	struct kv_cfg_node *s;
	uint64_t u;
	double x;

	load("s: [3, 0.25, x, ~]\n");
	s = at("s");
	ck_assert_int_eq(kv_cfg_node_u64(item(s, 0), 0, 10, &u, &d), 0);
	ck_assert_uint_eq(u, 3);
	ck_assert_int_eq(kv_cfg_node_dbl(item(s, 1), 0, 1, &x, &d), 0);
	ck_assert(x == 0.25);
	check_diag("item x", kv_cfg_node_u64(item(s, 2), 0, 10, &u, &d), KV_EINVAL, "t.yaml", 1,
		   14, "s[2]", "bad value 'x': expected a non-negative integer in [0, 10]", 1);
	check_diag("item null", kv_cfg_node_dbl(item(s, 3), 0, 1, &x, &d), KV_EINVAL, "t.yaml", 1,
		   17, "s[3]", "bad value '~': expected a number in [0, 1]", 1);
}
END_TEST

START_TEST(bytes_table)
{
	static const struct {
		const char *text;
		uint64_t want;
	} ok[] = {
		{ "80GB", 80000000000ULL },
		{ "64GiB", 64 * KV_GiB },
		{ "512 KiB", 512 * KV_KiB },
		{ "512KiB", 512 * KV_KiB },
		{ "1.5GiB", 1610612736ULL },
		{ "1e9", 1000000000ULL },
		{ "100", 100 },
		{ "0.1GB", 100000000ULL },
		{ "1.1GiB", 1181116006ULL },
		{ "2 TB", 2000000000000ULL },
		{ "1TiB", 1024 * KV_GiB },
		{ "3MB", 3000000 },
		{ "3MiB", 3 * KV_MiB },
		{ "1kb", 1000 },
		{ "1_000 MB", 1000000000ULL },
		{ "7B", 7 },
		{ "1.5B", 2 },
		{ "\"80GB\"", 80000000000ULL },
		{ "0", 0 },
		{ "16777215.9999999999TiB", UINT64_MAX - 109 },
	};
	static const struct {
		const char *text;
		int code;
		const char *msg;
	} bad[] = {
		{ "80 G", KV_EINVAL,
		  "bad value '80 G': expected a size "
		  "(a number with unit B, KB, MB, GB, TB, KiB, MiB, GiB or TiB; no unit: bytes)" },
		{ "GB", KV_EINVAL, "bad value 'GB': expected a size (" },
		{ "-1GB", KV_EINVAL, "bad value '-1GB': expected a size (" },
		{ "1.5.GB", KV_EINVAL, "bad value '1.5.GB': expected a size (" },
		{ "5 EiB", KV_EINVAL, "bad value '5 EiB': expected a size (" },
		{ "1e30 B", KV_ERANGE, "bad value '1e30 B': expected a size" },
		{ "16777216TiB", KV_ERANGE, "bad value '16777216TiB': expected a size" },
		{ "1.0000000000000000000000001GB", KV_EINVAL,
		  "bad value '1.0000000000000000000000001GB': more than 24 significant digits" },
		{ "1000000000000000000000000.1", KV_ERANGE, "expected a size" },
		{ "0.4B", KV_EINVAL,
		  "bad value '0.4B': nonzero but rounds to 0 (the resolution is 1B): expected 0 or at least 1B" },
		{ "1e-10GB", KV_EINVAL, "bad value '1e-10GB': nonzero but rounds to 0" },
		{ "~", KV_EINVAL, "no value ('~' is YAML's null): expected a size" },
	};
	char text[128];
	uint64_t x;
	size_t i;
	int err;

	for (i = 0; i < KV_ARRAY_LEN(ok); i++) {
		snprintf(text, sizeof(text), "k: %s\n", ok[i].text);
		load(text);
		err = kv_cfg_bytes(doc.root, "k", 1, 0, UINT64_MAX, &x, &d);
		ck_assert_msg(!err && x == ok[i].want, "'%s': err %d, got %llu, want %llu: %s",
			      ok[i].text, err, (unsigned long long)x,
			      (unsigned long long)ok[i].want, d.msg);
	}
	for (i = 0; i < KV_ARRAY_LEN(bad); i++) {
		snprintf(text, sizeof(text), "gpu:\n  mem: %s\n", bad[i].text);
		load(text);
		err = kv_cfg_bytes(at("gpu"), "mem", 1, 0, UINT64_MAX, &x, &d);
		check_diag(bad[i].text, err, bad[i].code, "t.yaml", 2, 8, "gpu.mem", bad[i].msg, 0);
	}
	load("mem: 2TiB\n");
	check_diag("range", kv_cfg_bytes(doc.root, "mem", 0, KV_GiB, 1024 * KV_GiB, &x, &d),
		   KV_ERANGE, "t.yaml", 1, 6, "mem",
		   "bad value '2TiB': expected a size in [1GiB, 1TiB]", 1);
	ck_assert_int_eq(kv_cfg_bytes(doc.root, "absent", 5, 0, 10, &x, &d), 0);
	ck_assert_uint_eq(x, 5);
}
END_TEST

START_TEST(ns_table)
{
	static const struct {
		const char *text;
		kv_ns want;
	} ok[] = {
		{ "1.5s", 1500000000ULL },
		{ "200ms", 200000000ULL },
		{ "250 ms", 250000000ULL },
		{ "10us", 10000 },
		{ "10\xc2\xb5s", 10000 },
		{ "5ns", 5 },
		{ "2min", 120000000000ULL },
		{ "1h", 3600000000000ULL },
		{ "3", 3000000000ULL },
		{ "0.5", 500000000ULL },
		{ "1.5ns", 2 },
		{ "0.5ns", 1 },
		{ "1e-9", 1 },
		{ "1e3ms", 1000000000ULL },
		{ "0", 0 },
	};
	static const struct {
		const char *text;
		int code;
		const char *msg;
	} bad[] = {
		{ "5m", KV_EINVAL,
		  "bad value '5m': expected a duration "
		  "(a number with unit ns, us, ms, s, min or h; no unit: seconds)" },
		{ "-1s", KV_EINVAL, "bad value '-1s': expected a duration (" },
		{ "1 fortnight", KV_EINVAL, "bad value '1 fortnight': expected a duration (" },
		{ "1MS", KV_EINVAL, "bad value '1MS': expected a duration (" },
		{ "1e20s", KV_ERANGE, "bad value '1e20s': expected a duration" },
		/* nonzero values must not round to 0, which means "off" or "unbounded" */
		{ "0.4ns", KV_EINVAL,
		  "bad value '0.4ns': nonzero but rounds to 0 (the resolution is 1ns): expected 0 or at least 1ns" },
		{ "1e-12s", KV_EINVAL, "bad value '1e-12s': nonzero but rounds to 0" },
		{ "1e-400", KV_EINVAL, "bad value '1e-400': nonzero but rounds to 0" },
		{ "null", KV_EINVAL, "no value ('null' is YAML's null): expected a duration" },
	};
	char text[128];
	kv_ns x;
	size_t i;
	int err;

	for (i = 0; i < KV_ARRAY_LEN(ok); i++) {
		snprintf(text, sizeof(text), "k: %s\n", ok[i].text);
		load(text);
		err = kv_cfg_ns(doc.root, "k", 1, 0, KV_NS_NEVER, &x, &d);
		ck_assert_msg(!err && x == ok[i].want, "'%s': err %d, got %llu, want %llu: %s",
			      ok[i].text, err, (unsigned long long)x,
			      (unsigned long long)ok[i].want, d.msg);
	}
	for (i = 0; i < KV_ARRAY_LEN(bad); i++) {
		snprintf(text, sizeof(text), "slo:\n  ttft: %s\n", bad[i].text);
		load(text);
		err = kv_cfg_ns(at("slo"), "ttft", 1, 0, KV_NS_NEVER, &x, &d);
		check_diag(bad[i].text, err, bad[i].code, "t.yaml", 2, 9, "slo.ttft", bad[i].msg,
			   0);
	}
	load("t:\n");
	check_diag("empty", kv_cfg_ns(doc.root, "t", 1, 0, KV_NS_NEVER, &x, &d), KV_EINVAL, "t.yaml",
		   1, 3, "t", "no value: expected a duration (leave the key out for the default)", 1);
	load("t: 2h\n");
	check_diag("range", kv_cfg_ns(doc.root, "t", 0, KV_NS_PER_MS, 3600 * KV_NS_PER_S, &x, &d),
		   KV_ERANGE, "t.yaml", 1, 4, "t",
		   "bad value '2h': expected a duration in [1ms, 1h]", 1);
}
END_TEST

START_TEST(set_new_path)
{
	struct kv_cfg_node *z;
	uint64_t x;

	load("a: 1\n");
	ck_assert_int_eq(kv_cfg_set(&doc, "x.y.z=5", &d), 0);
	ck_assert_int_eq(at("x")->type, KV_CFG_MAP);
	ck_assert_str_eq(at("x")->file, "--set");
	check_pos(at("x"), 1, 1, 1, 1);
	check_pos(at("x.y"), 1, 3, 1, 3);
	z = at("x.y.z");
	ck_assert_str_eq(z->value, "5");
	check_pos(z, 1, 7, 1, 5);
	ck_assert_uint_eq(doc.root->n_children, 2);
	ck_assert_int_eq(kv_cfg_u64(at("x.y"), "z", 0, 0, 10, &x, &d), 0);
	ck_assert_uint_eq(x, 5);
	ck_assert_int_eq(kv_cfg_set(&doc, "x.y.z=fast", &d), 0);
	check_diag("set value", kv_cfg_u64(at("x.y"), "z", 0, 0, 10, &x, &d), KV_EINVAL, "--set", 1,
		   7, "x.y.z", "bad value 'fast': expected a non-negative integer in [0, 10]", 1);
}
END_TEST

START_TEST(set_replace)
{
	struct kv_cfg_node *a, *l;

	load("a:\n  p: 1\n  b: {c: 1}\n  q: 2\n");
	ck_assert_int_eq(kv_cfg_set(&doc, "a.b=7", &d), 0);
	a = at("a");
	ck_assert_uint_eq(a->n_children, 3);
	ck_assert_str_eq(a->child->next->key, "b");
	ck_assert_str_eq(a->child->next->value, "7");
	ck_assert_str_eq(a->last->key, "q");
	ck_assert_int_eq(kv_cfg_set(&doc, "a.q=[1, 2]", &d), 0);
	l = at("a.q");
	ck_assert_int_eq(l->type, KV_CFG_SEQ);
	ck_assert_ptr_eq(a->last, l);
	ck_assert_uint_eq(l->n_children, 2);
	check_pos(item(l, 1), 1, 9, 0, 0);
	ck_assert_int_eq(kv_cfg_set(&doc, "a.m={x: 1}", &d), 0);
	ck_assert_int_eq(at("a.m")->type, KV_CFG_MAP);
	ck_assert_str_eq(at("a.m.x")->value, "1");
	ck_assert_int_eq(kv_cfg_set(&doc, "a.s='fifo'", &d), 0);
	ck_assert_int_eq(at("a.s")->quoted, 1);
	ck_assert_int_eq(kv_cfg_set(&doc, "a.b=", &d), 0);
	ck_assert_str_eq(at("a.b")->value, "");
	{ /* "--set k=" is null: the readers refuse it, naming --set and the column */
		uint64_t x;

		check_diag("--set a.b=", kv_cfg_u64(at("a"), "b", 1, 0, 10, &x, &d), KV_EINVAL,
			   "--set", 1, 5, "a.b", "no value: expected a non-negative integer", 0);
	}
	ck_assert_int_eq(kv_cfg_set(&doc, "a.p=x=y", &d), 0);
	ck_assert_str_eq(at("a.p")->value, "x=y");
}
END_TEST

START_TEST(set_index)
{
	struct kv_cfg_node *t;
	uint64_t x;

	load("workload:\n  tenants:\n    - {name: a, share: 1}\n    - {name: b, share: 1}\n");
	ck_assert_int_eq(kv_cfg_set(&doc, "workload.tenants[1].share=2", &d), 0);
	t = at("workload.tenants");
	ck_assert_int_eq(kv_cfg_u64(item(t, 1), "share", 0, 0, 9, &x, &d), 0);
	ck_assert_uint_eq(x, 2);
	ck_assert_int_eq(kv_cfg_u64(item(t, 0), "share", 0, 0, 9, &x, &d), 0);
	ck_assert_uint_eq(x, 1);
	ck_assert_int_eq(kv_cfg_set(&doc, "workload.tenants[0]={name: c}", &d), 0);
	ck_assert_uint_eq(t->n_children, 2);
	ck_assert_str_eq(kv_cfg_get(item(t, 0), "name")->value, "c");
	ck_assert_ptr_null(item(t, 0)->key);
	check_diag("no item", kv_cfg_set(&doc, "workload.tenants[2].share=2", &d), KV_EINVAL,
		   "--set", 1, 17, "workload.tenants[2].share",
		   "'workload.tenants' has no item [2] (it has 2)", 1);
	check_diag("negative", kv_cfg_set(&doc, "workload.tenants[-1].share=2", &d), KV_EINVAL,
		   "--set", 1, 17, "workload.tenants[-1].share",
		   "bad index: expected [N] with N a non-negative integer", 1);
	check_diag("not seq", kv_cfg_set(&doc, "workload[0]=1", &d), KV_EINVAL, "--set", 1, 9,
		   "workload[0]", "'workload' is a mapping at t.yaml:2:3, not a sequence", 1);
}
END_TEST

START_TEST(set_errors)
{
	load("a: {b: 1}\n");
	check_diag("no =", kv_cfg_set(&doc, "a.b", &d), KV_EINVAL, "--set", 1, 1, "",
		   "bad assignment 'a.b': expected key.path=value", 1);
	check_diag("empty key", kv_cfg_set(&doc, "=5", &d), KV_EINVAL, "--set", 1, 1, "",
		   "bad assignment '=5': expected key.path=value", 1);
	check_diag("empty segment", kv_cfg_set(&doc, "a..b=5", &d), KV_EINVAL, "--set", 1, 3,
		   "a..b", "empty key: expected key.path=value", 1);
	check_diag("through scalar", kv_cfg_set(&doc, "a.b.c=5", &d), KV_EINVAL, "--set", 1, 3,
		   "a.b.c", "'a.b' is a scalar at t.yaml:1:8, not a mapping", 1);
	check_diag("value syntax", kv_cfg_set(&doc, "a.x=[1,", &d), KV_EINVAL, "--set", 1, 8, "a.x",
		   "did not find expected node content", 0);
	check_diag("value alias", kv_cfg_set(&doc, "a.x=*y", &d), KV_EINVAL, "--set", 1, 5, "a.x",
		   "aliases (*y) are not supported", 1);
	ck_assert_str_eq(at("a.b")->value, "1");
	ck_assert_uint_eq(at("a")->n_children, 1);
}
END_TEST

START_TEST(set_empty_doc)
{
	ck_assert_int_eq(kv_cfg_set(&doc, "a=1", &d), 0);
	ck_assert_str_eq(at("a")->value, "1");
	load("w:\n");
	ck_assert_int_eq(kv_cfg_set(&doc, "w.rate=3", &d), 0);
	ck_assert_str_eq(at("w.rate")->value, "3");
}
END_TEST

START_TEST(syntax_errors)
{
	load_fails("a:\n\tb: 1\n", KV_EINVAL);
	check_diag("tab", KV_EINVAL, KV_EINVAL, "t.yaml", 2, 1, "",
		   "YAML does not allow tabs in indentation", 0);
	load_fails("a: [1, 2\nb: 3\n", KV_EINVAL);
	check_diag("bracket", KV_EINVAL, KV_EINVAL, "t.yaml", 2, 2, "",
		   "invalid YAML: did not find expected ',' or ']' (while parsing a flow sequence "
		   "at line 1, column 4)", 1);
	load_fails("a: 'open\n", KV_EINVAL);
	ck_assert_msg(strstr(d.msg, "quoted scalar at line 1, column 4"), "%s", d.msg);
	load_fails("ok: 1\nb: \x80\n", KV_EINVAL);
	check_diag("utf8", KV_EINVAL, KV_EINVAL, "t.yaml", 2, 4, "",
		   "invalid input: invalid leading UTF-8 octet (byte 0x80)", 1);
}
END_TEST

START_TEST(duplicate_key)
{
	load_fails("a: 1\nb: 2\na: 3\n", KV_EINVAL);
	check_diag("dup", KV_EINVAL, KV_EINVAL, "t.yaml", 3, 1, "",
		   "duplicate key 'a' (first defined at line 1)", 1);
	load_fails("t:\n  - x: 1\n    y: 2\n    x: 3\n", KV_EINVAL);
	check_diag("dup in item", KV_EINVAL, KV_EINVAL, "t.yaml", 4, 5, "",
		   "duplicate key 'x' (first defined at line 2)", 1);
}
END_TEST

START_TEST(unsupported_yaml)
{
	load_fails("a: &x 1\n", KV_EINVAL);
	check_diag("anchor", KV_EINVAL, KV_EINVAL, "t.yaml", 1, 4, "",
		   "anchors (&x) are not supported", 1);
	load_fails("a: 1\nb: *x\n", KV_EINVAL);
	check_diag("alias", KV_EINVAL, KV_EINVAL, "t.yaml", 2, 4, "",
		   "aliases (*x) are not supported", 1);
	load_fails("a: !!int 5\n", KV_EINVAL);
	ck_assert_msg(strstr(d.msg, "tags (tag:yaml.org,2002:int) are not supported"), "%s",
		      d.msg);
	load("a: !!str yes\n");
	ck_assert_int_eq(at("a")->quoted, 1);
	load_fails("a: 1\n---\nb: 2\n", KV_EINVAL);
	check_diag("two docs", KV_EINVAL, KV_EINVAL, "t.yaml", 2, 1, "",
		   "a second YAML document ('---') is not allowed", 1);
	load_fails("? [1]\n: 2\n", KV_EINVAL);
	ck_assert_msg(strstr(d.msg, "as a key is not supported"), "%s", d.msg);
	load_fails("a: \"x\\0y\"\n", KV_EINVAL);
	ck_assert_msg(strstr(d.msg, "NUL character"), "%s", d.msg);
}
END_TEST

START_TEST(root_shapes)
{
	load_fails("- 1\n- 2\n", KV_EINVAL);
	check_diag("seq root", KV_EINVAL, KV_EINVAL, "t.yaml", 1, 1, "",
		   "expected a mapping (key: value lines) at the top level, got a sequence", 1);
	load_fails("hello\n", KV_EINVAL);
	ck_assert_msg(strstr(d.msg, "got 'hello'"), "%s", d.msg);
	load("");
	ck_assert_int_eq(doc.root->type, KV_CFG_MAP);
	ck_assert_uint_eq(doc.root->n_children, 0);
	load("---\n");
	ck_assert_int_eq(doc.root->type, KV_CFG_MAP);
	load("# only a comment\n");
	ck_assert_int_eq(doc.root->type, KV_CFG_MAP);
}
END_TEST

START_TEST(check_keys)
{
	static const char *const allowed[] = { "name", "options", NULL };
	static const char *const none[] = { NULL };
	struct kv_cfg_node *s;

	load("sched:\n  name: fifo\n  foo: 1\nx: 1\n");
	s = at("sched");
	check_diag("foo", kv_cfg_check_keys(s, allowed, &d), KV_EINVAL, "t.yaml", 3, 3, "sched.foo",
		   "unknown key 'foo': expected one of: name, options", 1);
	check_diag("none", kv_cfg_check_keys(s, none, &d), KV_EINVAL, "t.yaml", 2, 3, "sched.name",
		   "unknown key 'name': this section takes no keys", 1);
	check_diag("scalar", kv_cfg_check_keys(at("x"), allowed, &d), KV_EINVAL, "t.yaml", 4, 4,
		   "x", "expected a mapping (key: value), got '1'", 1);
	ck_assert_int_eq(kv_cfg_check_keys(NULL, allowed, &d), 0);
	load("sched:\n  name: fifo\n");
	ck_assert_int_eq(kv_cfg_check_keys(at("sched"), allowed, &d), 0);
	ck_assert_int_eq(at("sched")->child->used, 1);
}
END_TEST

START_TEST(check_unused)
{
	struct kv_cfg_node *c;
	uint64_t x;

	load("a:\n  b: 1\n  c: [{d: 1, e: 2}]\nf: 3\n");
	ck_assert_int_eq(kv_cfg_u64(at("a"), "b", 0, 0, 9, &x, &d), 0);
	c = at("a.c");
	ck_assert_int_eq(kv_cfg_u64(item(c, 0), "d", 0, 0, 9, &x, &d), 0);
	check_diag("e", kv_cfg_check_unused(doc.root, &d), KV_EINVAL, "t.yaml", 3, 14, "a.c[0].e",
		   "unknown key 'e'", 1);
	kv_cfg_get(item(c, 0), "e");
	check_diag("f", kv_cfg_check_unused(doc.root, &d), KV_EINVAL, "t.yaml", 4, 1, "f",
		   "unknown key 'f'", 1);
	ck_assert_int_eq(kv_cfg_check_unused(at("a"), &d), 0);
	kv_cfg_get(doc.root, "f");
	ck_assert_int_eq(kv_cfg_check_unused(doc.root, &d), 0);
	ck_assert_int_eq(kv_cfg_check_unused(NULL, &d), 0);
}
END_TEST

START_TEST(expect_types)
{
	load("m: {a: 1}\ns: [1]\nv: 2\nn:\n");
	ck_assert_int_eq(kv_cfg_expect_map(at("m"), &d), 0);
	ck_assert_int_eq(kv_cfg_expect_map(NULL, &d), 0);
	ck_assert_int_eq(kv_cfg_expect_map(at("n"), &d), 0);
	ck_assert_int_eq(kv_cfg_expect_seq(at("s"), &d), 0);
	ck_assert_int_eq(kv_cfg_expect_seq(NULL, &d), 0);
	check_diag("map", kv_cfg_expect_map(at("s"), &d), KV_EINVAL, "t.yaml", 2, 4, "s",
		   "expected a mapping (key: value), got a sequence", 1);
	check_diag("seq", kv_cfg_expect_seq(at("v"), &d), KV_EINVAL, "t.yaml", 3, 4, "v",
		   "expected a sequence ([a, b] or '- ' items), got '2'", 1);
	check_diag("error", kv_cfg_error(at("m.a"), &d, "need %d more", 3), KV_EINVAL, "t.yaml", 1,
		   8, "m.a", "need 3 more", 1);
}
END_TEST

/* "a: " and depth nested flow sequences, in a new buffer. */
static char *nested(size_t depth)
{
	char *text = malloc(2 * depth + 4);
	size_t i;

	ck_assert_ptr_nonnull(text);
	memcpy(text, "a: ", 3);
	for (i = 0; i < depth; i++) {
		text[3 + i] = '[';
		text[3 + depth + i] = ']';
	}
	text[3 + 2 * depth] = '\0';
	return text;
}

START_TEST(deep_nesting)
{
	char *text = nested(999); /* with the root mapping: 1000 levels */

	load(text);
	free(text);
	ck_assert_int_eq(at("a")->type, KV_CFG_SEQ);
	text = nested(100000);
	load_fails(text, KV_EINVAL);
	free(text);
	check_diag("too deep", KV_EINVAL, KV_EINVAL, "t.yaml", 1, 1003, "",
		   "nested deeper than 1000 levels", 1);
}
END_TEST

/* $KVSIM_TEST_DATA/cfg/name into buf. */
static const char *data_path(const char *name, char *buf, size_t len)
{
	const char *dir = getenv("KVSIM_TEST_DATA");

	ck_assert_msg(dir != NULL, "KVSIM_TEST_DATA is not set");
	snprintf(buf, len, "%s/cfg/%s", dir, name);
	return buf;
}

/* Bandwidths: one parser for profiles and kv_transfer (cfg_rate.c), every unit, bad text refused. */
START_TEST(rate_units)
{
	static const struct {
		const char *text;
		double Bps;
	} ok[] = { { "2039", 2039e9 },	     { "2039GB/s", 2039e9 }, { "3.35 TB/s", 3.35e12 },
		   { "400Gb/s", 50e9 },	     { "400 Gbps", 50e9 },   { "900MB/s", 9e8 },
		   { "1GiB/s", 1073741824.0 }, { "2TiB/s", 2 * 1099511627776.0 }, { "0", 0 } };
	static const char *const bad[] = { "", "GB/s", "5 GB", "5GB/sec", "nan", "inf", "5 gb/s", "x5" };
	size_t i;
	double v;

	for (i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
		ck_assert_msg(kv_cfg_parse_rate(ok[i].text, &v) == 0, "'%s' refused", ok[i].text);
		ck_assert_msg(fabs(v - ok[i].Bps) <= 1e-9 * ok[i].Bps, "'%s': %g B/s, want %g",
			      ok[i].text, v, ok[i].Bps);
	}
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		ck_assert_msg(kv_cfg_parse_rate(bad[i], &v) == -1, "'%s' accepted", bad[i]);
}
END_TEST

START_TEST(missing_file)
{
	int err = kv_cfg_load(&doc, "/nonexistent/kvsim/x.yaml", &d);

	check_diag("missing", err, KV_ENOENT, "/nonexistent/kvsim/x.yaml", 0, 0, "",
		   "cannot open: No such file or directory", 1);
	ck_assert_ptr_null(doc.root);
}
END_TEST

START_TEST(file_load)
{
	char path[1024], dir[1024], buf[2048], want[2048];
	struct kv_cfg_node *trace;
	uint64_t x;

	data_path("basic.yaml", path, sizeof(path));
	ck_assert_msg(kv_cfg_load(&doc, path, &d) == 0, DIAG_FMT, DIAG_ARGS(d));
	ck_assert_str_eq(doc.path, path);
	data_path("", dir, sizeof(dir));
	dir[strlen(dir) - 1] = '\0';
	ck_assert_str_eq(doc.dir, dir);
	ck_assert_int_eq(kv_cfg_u64(at("workload"), "requests", 0, 0, UINT64_MAX, &x, &d), 0);
	ck_assert_uint_eq(x, 1000000);
	check_diag("file value", kv_cfg_u64(at("workload"), "seed", 0, 0, 100, &x, &d), KV_EINVAL,
		   path, 4, 9, "workload.seed",
		   "bad value 'lucky': expected a non-negative integer in [0, 100]", 1);
	snprintf(want, sizeof(want), "%s/traces/a.csv", dir);
	trace = at("workload.trace");
	ck_assert_int_eq(kv_cfg_resolve_path(&doc, trace, trace->value, buf, sizeof(buf)), 0);
	ck_assert_str_eq(buf, want);
	ck_assert_int_eq(kv_cfg_resolve_path(&doc, NULL, "/abs/x", buf, sizeof(buf)), 0);
	ck_assert_str_eq(buf, "/abs/x");
	ck_assert_int_eq(kv_cfg_resolve_path(&doc, NULL, "x.csv", buf, 4), KV_ERANGE);
	ck_assert_int_eq(kv_cfg_set(&doc, "workload.trace=here.csv", &d), 0);
	ck_assert_int_eq(kv_cfg_resolve_path(&doc, at("workload.trace"), "here.csv", buf,
					     sizeof(buf)), 0);
	ck_assert_str_eq(buf, "here.csv");
}
END_TEST

START_TEST(file_syntax_error)
{
	char path[1024];

	data_path("tabs.yaml", path, sizeof(path));
	check_diag("tabs file", kv_cfg_load(&doc, path, &d), KV_EINVAL, path, 3, 1, "",
		   "YAML does not allow tabs in indentation", 0);
	data_path("", path, sizeof(path));
	check_diag("directory", kv_cfg_load(&doc, path, &d), KV_EINVAL, path, 0, 0, "",
		   "a directory: expected a regular file", 0);
}
END_TEST

/* A FIFO without a writer is refused at once (no blocking open), a device too. */
START_TEST(special_files)
{
	char path[] = "/tmp/kvsim-cfg-XXXXXX", fifo[64];

	ck_assert_ptr_nonnull(mkdtemp(path));
	snprintf(fifo, sizeof(fifo), "%s/f.yaml", path);
	ck_assert_int_eq(mkfifo(fifo, 0600), 0);
	check_diag("fifo", kv_cfg_load(&doc, fifo, &d), KV_EINVAL, fifo, 0, 0, "",
		   "a FIFO (named pipe): expected a regular file", 0);
	unlink(fifo);
	rmdir(path);
	check_diag("/dev/zero", kv_cfg_load(&doc, "/dev/zero", &d), KV_EINVAL, "/dev/zero", 0, 0,
		   "", "a character device: expected a regular file", 0);
}
END_TEST

/* A YAML file over KV_INPUT_MAX_YAML_BYTES is refused by its size, before reading. */
START_TEST(file_too_big)
{
	char path[] = "/tmp/kvsim-cfg-XXXXXX";
	int fd = mkstemp(path);

	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(ftruncate(fd, (off_t)KV_INPUT_MAX_YAML_BYTES + 1), 0);
	close(fd);
	check_diag("big", kv_cfg_load(&doc, path, &d), KV_ERANGE, path, 0, 0, "",
		   "bytes: expected at most 16777216 bytes (16 MiB)", 0);
	unlink(path);
}
END_TEST

static Suite *cfg_suite(void)
{
	Suite *s = suite_create("cfg");
	TCase *tc = tcase_create("core");

	tcase_add_checked_fixture(tc, NULL, teardown);
	tcase_add_test(tc, parse_nested);
	tcase_add_test(tc, special_files);
	tcase_add_test(tc, file_too_big);
	tcase_add_test(tc, get_marks_used);
	tcase_add_test(tc, u64_ok);
	tcase_add_test(tc, u64_errors);
	tcase_add_test(tc, reader_on_non_map);
	tcase_add_test(tc, dbl_ok);
	tcase_add_test(tc, dbl_errors);
	tcase_add_test(tc, bool_reader);
	tcase_add_test(tc, str_reader);
	tcase_add_test(tc, enum_reader);
	tcase_add_test(tc, node_readers);
	tcase_add_test(tc, bytes_table);
	tcase_add_test(tc, ns_table);
	tcase_add_test(tc, set_new_path);
	tcase_add_test(tc, set_replace);
	tcase_add_test(tc, set_index);
	tcase_add_test(tc, set_errors);
	tcase_add_test(tc, set_empty_doc);
	tcase_add_test(tc, syntax_errors);
	tcase_add_test(tc, duplicate_key);
	tcase_add_test(tc, unsupported_yaml);
	tcase_add_test(tc, root_shapes);
	tcase_add_test(tc, check_keys);
	tcase_add_test(tc, check_unused);
	tcase_add_test(tc, expect_types);
	tcase_add_test(tc, deep_nesting);
	tcase_add_test(tc, rate_units);
	tcase_add_test(tc, missing_file);
	tcase_add_test(tc, file_load);
	tcase_add_test(tc, file_syntax_error);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return kv_test_run_suite(cfg_suite());
}
