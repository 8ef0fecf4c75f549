/*
 * fromrun.c -- recorded serving runs: the readers, the replay and the
 * score; see fromrun.h.  The fit is in fromrun_fit.c.
 */
#include "fromrun.h"

#include "csv.h"
#include "json.h"
#include "output.h"

#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <signal.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* ---- signals ---- */

static volatile sig_atomic_t stop_sig; /* SIGINT or SIGTERM once one came, else 0 */

static void on_signal(int sig)
{
	stop_sig = sig;
}

void kv_run_catch_signals(void)
{
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;
	sa.sa_flags = SA_RESTART | SA_RESETHAND; /* a second signal kills: nothing is left on disk */
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
}

int kv_run_stopped(void)
{
	return stop_sig;
}

static int interrupted(const struct kv_run *r, unsigned long line, struct kv_diag *d)
{
	return kv_diag_set(d, KV_EINTR, r->path, line, 0, "",
			   "interrupted by %s while reading; no output written",
			   stop_sig == SIGINT ? "SIGINT" : "SIGTERM");
}

/* ---- rows, whatever the format ---- */

enum { F_ARRIVAL, F_PROMPT, F_OUTPUT, F_TTFT, F_E2E, F_ITL, N_RAW };

/* One row's fields before checking, each with where it came from. */
struct raw_row {
	double v[N_RAW]; /* seconds or tokens; NaN when absent */
	double scale[N_RAW]; /* the file's unit in seconds (1e-3 for _ms; 1 for counts) */
	const char *name[N_RAW]; /* the field's name in the file, for messages */
	unsigned long line[N_RAW], col[N_RAW]; /* where it is (col 0: the row's line only) */
	int e2e_sum; /* 1: v[F_E2E] is the TTFT plus the sum of vLLM's itls */
	int has_e2e; /* 1: the row gives its E2E (even NaN), so itl is not used */
	unsigned given; /* bit i: v[i] was in the row */
};

/* A field of csv and jsonl rows: its name, its scale to seconds (1 for counts), its slot. */
struct field {
	const char *name;
	double scale;
	int idx;
};

static const struct field fields[] = {
	{ "arrival_s", 1, F_ARRIVAL }, { "arrival_ms", 1e-3, F_ARRIVAL },
	{ "prompt_tokens", 1, F_PROMPT }, { "output_tokens", 1, F_OUTPUT },
	{ "ttft_s", 1, F_TTFT },       { "ttft_ms", 1e-3, F_TTFT },
	{ "e2e_s", 1, F_E2E },         { "e2e_ms", 1e-3, F_E2E },
	{ "itl_s", 1, F_ITL },         { "itl_ms", 1e-3, F_ITL },
	{ "tpot_s", 1, F_ITL },        { "tpot_ms", 1e-3, F_ITL },
};
#define N_FIELDS KV_ARRAY_LEN(fields)
#define COLUMNS_EXPECTED                                                                   \
	"arrival_s (or arrival_ms), prompt_tokens, output_tokens, ttft_s (or ttft_ms) and " \
	"e2e_s or itl_s (or tpot_s; each time may end in _ms)"

static const char *const csv_what[N_RAW] = { "arrival", "prompt_tokens", "output_tokens", "ttft",
					      "e2e", "itl" };
static const char *const vllm_what[N_RAW] = { "start_times", "input_lens", "output_lens", "ttfts",
					       "latencies", "itls" };

static void raw_init(struct raw_row *x, unsigned long line, const char *const what[N_RAW])
{
	int i;

	for (i = 0; i < N_RAW; i++) {
		x->v[i] = NAN;
		x->scale[i] = 1;
		x->name[i] = what[i];
		x->line[i] = line;
		x->col[i] = 0;
	}
	x->e2e_sum = x->has_e2e = 0;
	x->given = 0;
}

/* Field f of x is v in the file's unit, found at line:col. */
static void raw_set(struct raw_row *x, const struct field *f, double v, unsigned long line,
		    unsigned long col)
{
	x->v[f->idx] = v * f->scale;
	x->scale[f->idx] = f->scale;
	x->name[f->idx] = f->name;
	x->line[f->idx] = line;
	x->col[f->idx] = col;
	x->has_e2e |= f->idx == F_E2E;
	x->given |= 1u << f->idx;
}

static int is_count(double v)
{
	return v >= 1 && v <= KV_RUN_MAX_TOKENS && v == floor(v);
}

/* "a time in [lo, max] s" in the unit of scale (s, or ms for 1e-3), into buf. */
static const char *time_range(char *buf, size_t len, const char *what, double scale, double lo)
{
	snprintf(buf, len, "%s in [%.10g, %.10g] %s", what, lo / scale, KV_RUN_MAX_TIME_S / scale,
		 scale == 1 ? "s" : "ms");
	return buf;
}

/* The error for field i of x: its value as the file has it, and what was expected. */
static int bad(const struct kv_run *r, const struct raw_row *x, int i, const char *exp,
	       struct kv_diag *d)
{
	if (!(x->given & (1u << i)))
		return kv_diag_set(d, KV_EINVAL, r->path, x->line[i], x->col[i], x->name[i],
				   "absent: expected %s", exp);
	return kv_diag_set(d, KV_EINVAL, r->path, x->line[i], x->col[i], x->name[i],
			   "bad value %.10g: expected %s", x->v[i] / x->scale[i], exp);
}

/* x's E2E (from itl when absent) checked: >= the TTFT, <= KV_RUN_MAX_TIME_S. */
static int row_e2e(const struct kv_run *r, const struct raw_row *x, double *e2e, struct kv_diag *d)
{
	char exp[96];
	int at = F_E2E;

	*e2e = x->v[F_E2E];
	if (!x->has_e2e) {
		if (!(x->given & (1u << F_ITL)))
			return kv_diag_set(d, KV_EINVAL, r->path, x->line[F_E2E], 0, "e2e",
					   "absent, and so is itl: expected e2e_s or itl_s (or tpot_s; "
					   "each may end in _ms)");
		if (!(x->v[F_ITL] >= 0 && x->v[F_ITL] <= KV_RUN_MAX_TIME_S))
			return bad(r, x, F_ITL,
				   time_range(exp, sizeof(exp), "an inter-token latency", x->scale[F_ITL], 0),
				   d);
		*e2e = x->v[F_TTFT] + x->v[F_ITL] * (x->v[F_OUTPUT] - 1);
		at = F_ITL;
	}
	if (*e2e >= x->v[F_TTFT] && *e2e <= KV_RUN_MAX_TIME_S)
		return 0;
	if (at == F_E2E && !x->e2e_sum)
		return kv_diag_set(d, KV_EINVAL, r->path, x->line[at], x->col[at], x->name[at],
				   "bad value %.10g: expected a time from the TTFT %.10g to %.10g %s",
				   *e2e / x->scale[at], x->v[F_TTFT] / x->scale[at],
				   KV_RUN_MAX_TIME_S / x->scale[at], x->scale[at] == 1 ? "s" : "ms");
	return kv_diag_set(d, KV_EINVAL, r->path, x->line[at], x->col[at], x->name[at],
			   "gives an E2E latency of %.10g s (the TTFT plus %s): expected one from the "
			   "TTFT %.10g s to %.10g s", *e2e,
			   at == F_ITL ? "the ITL times (output - 1)" : "the sum of itls", x->v[F_TTFT],
			   KV_RUN_MAX_TIME_S);
}

/* Keeps the first KV_RUN_MAX_REQUESTS requests by send time (ties: file order). */
static int cmp_arrival(const void *a, const void *b);

static void trim(struct kv_run *r)
{
	if (r->n <= KV_RUN_MAX_REQUESTS)
		return;
	qsort(r->req, r->n, sizeof(*r->req), cmp_arrival);
	r->n_dropped += r->n - KV_RUN_MAX_REQUESTS;
	r->n = KV_RUN_MAX_REQUESTS;
}

/* Checks a completed row (the run's row r->n_rows - 1) and appends it. */
static int add_row(struct kv_run *r, const struct raw_row *x, unsigned long line,
		   struct kv_diag *d)
{
	struct kv_run_req *q;
	double e2e;
	char exp[96];
	int rc;

	if (!isfinite(x->v[F_ARRIVAL]))
		return bad(r, x, F_ARRIVAL, "a finite send time", d);
	if (!is_count(x->v[F_PROMPT]))
		return bad(r, x, F_PROMPT, "an integer count of tokens in [1, 16777216]", d);
	if (!is_count(x->v[F_OUTPUT]))
		return bad(r, x, F_OUTPUT, "an integer count of tokens in [1, 16777216]", d);
	if (!(x->v[F_TTFT] >= KV_RUN_MIN_TIME_S && x->v[F_TTFT] <= KV_RUN_MAX_TIME_S))
		return bad(r, x, F_TTFT,
			   time_range(exp, sizeof(exp), "a time", x->scale[F_TTFT], KV_RUN_MIN_TIME_S), d);
	if ((rc = row_e2e(r, x, &e2e, d)))
		return rc;
	if (r->n == 2 * KV_RUN_MAX_REQUESTS)
		trim(r); /* memory stays under 2 * KV_RUN_MAX_REQUESTS rows */
	if (r->n == r->cap) {
		r->cap = r->cap ? 2 * r->cap : 256;
		r->req = kv_xrealloc(r->req, r->cap * sizeof(*r->req));
	}
	q = &r->req[r->n++];
	/* arrival_ns holds the send time in seconds until run_finish() */
	memcpy(&q->arrival_ns, &x->v[F_ARRIVAL], sizeof(double));
	q->prompt_tokens = (uint64_t)x->v[F_PROMPT];
	q->output_tokens = (uint64_t)x->v[F_OUTPUT];
	q->ttft_s = x->v[F_TTFT];
	q->e2e_s = e2e;
	q->tpot_s = q->output_tokens > 1 ? (e2e - q->ttft_s) / (double)(q->output_tokens - 1) : NAN;
	q->line = line;
	q->seq = r->n_rows - 1;
	return 0;
}

static double arrival_s_of(const struct kv_run_req *q)
{
	double s;

	memcpy(&s, &q->arrival_ns, sizeof(s));
	return s;
}

static int cmp_arrival(const void *a, const void *b)
{
	const struct kv_run_req *x = a, *y = b;
	double sx = arrival_s_of(x), sy = arrival_s_of(y);

	if (sx != sy)
		return sx < sy ? -1 : 1;
	return x->seq < y->seq ? -1 : x->seq > y->seq; /* file order: a stable sort */
}

/* Keeps the first requests, sorts by send time, makes times relative to the first, in ns. */
static int run_finish(struct kv_run *r, struct kv_diag *d)
{
	double t0;
	size_t i;

	if (!r->n)
		return kv_diag_set(d, KV_EINVAL, r->path, 0, 0, "",
				   "no request completed in the run (%zu failed): expected at least one",
				   r->n_failed);
	if (r->n > KV_RUN_MAX_REQUESTS)
		trim(r);
	else
		qsort(r->req, r->n, sizeof(*r->req), cmp_arrival);
	t0 = arrival_s_of(&r->req[0]);
	for (i = 0; i < r->n; i++) {
		double dt = arrival_s_of(&r->req[i]) - t0;

		if (!(dt <= 1e9)) /* 30 years: a time column in another unit */
			return kv_diag_set(d, KV_EINVAL, r->path, r->req[i].line, 0, "arrival",
					   "a send time %.6g s after the first: expected a run "
					   "shorter than 1e9 s", dt);
		r->req[i].arrival_ns = (kv_ns)llround(dt * 1e9);
	}
	return 0;
}

/* ---- csv ---- */

static int csv_number(const char *s, double *v)
{
	char *end;

	if (!*s)
		return -1;
	errno = 0;
	*v = strtod(s, &end);
	return *end || errno == ERANGE ? -1 : 0;
}

/* Maps the header's columns to fields; col_of[f] is the column of fields[f] or -1. */
static int csv_header(struct kv_run *r, const struct kv_csv_rec *h, long *col_of, long *status,
		      struct kv_diag *d)
{
	static const char *const need[] = { "arrival", "prompt_tokens", "output_tokens", "ttft" };
	size_t f, k;

	for (f = 0; f < N_FIELDS; f++)
		col_of[f] = kv_csv_rec_find(h, fields[f].name);
	*status = kv_csv_rec_find(h, "status");
	for (k = 0; k < KV_ARRAY_LEN(need); k++) {
		int found = 0;

		for (f = 0; f < N_FIELDS; f++)
			found |= col_of[f] >= 0 && !strncmp(fields[f].name, need[k], strlen(need[k]));
		if (!found)
			return kv_diag_set(d, KV_EINVAL, r->path, h->line, 0, need[k],
					   "no %s column in the header: expected columns %s", need[k],
					   COLUMNS_EXPECTED);
	}
	for (f = 0, k = 0; f < N_FIELDS; f++)
		k += col_of[f] >= 0 && (fields[f].idx == F_E2E || fields[f].idx == F_ITL);
	if (!k)
		return kv_diag_set(d, KV_EINVAL, r->path, h->line, 0, "e2e",
				   "no e2e or itl column in the header: expected columns %s",
				   COLUMNS_EXPECTED);
	return 0;
}

static int csv_row(struct kv_run *r, const struct kv_csv_rec *rec, const long *col_of,
		   long status, size_t n_cols, struct kv_diag *d)
{
	struct raw_row x;
	size_t f;

	if (rec->n != n_cols)
		return kv_diag_set(d, KV_EINVAL, r->path, rec->line, 0, "",
				   "%zu fields: expected %zu, as in the header", rec->n, n_cols);
	r->n_rows++;
	if (status >= 0 && strcmp(rec->field[status], "completed") && strcmp(rec->field[status], "ok")) {
		r->n_failed++;
		return 0;
	}
	raw_init(&x, rec->line, csv_what);
	for (f = 0; f < N_FIELDS; f++) {
		double v;

		if (col_of[f] < 0)
			continue;
		if (csv_number(rec->field[col_of[f]], &v))
			return kv_diag_set(d, KV_EINVAL, r->path, rec->line, 0, fields[f].name,
					   "bad value '%.40s': expected a number", rec->field[col_of[f]]);
		raw_set(&x, &fields[f], v, rec->line, 0);
	}
	return add_row(r, &x, rec->line, d);
}

/* CSV from f, one record at a time. */
static int load_csv(struct kv_run *r, FILE *f, struct kv_diag *d)
{
	struct kv_csv_rec rec;
	long col_of[N_FIELDS], status = -1;
	size_t n_cols = 0;
	unsigned long line = 1;
	int rc, first = 1;

	kv_csv_rec_init(&rec);
	r->format = "csv";
	while ((rc = kv_csv_rec_read(&rec, f, &line, r->path, d)) == 1) {
		if (rec.n == 1 && !rec.field[0][0])
			continue; /* a blank line */
		if (first) {
			if ((rc = csv_header(r, &rec, col_of, &status, d)))
				break;
			n_cols = rec.n;
			first = 0;
		} else if ((rc = csv_row(r, &rec, col_of, status, n_cols, d))) {
			break;
		}
		if (stop_sig) {
			rc = interrupted(r, rec.line, d);
			break;
		}
	}
	if (!rc && first)
		rc = kv_diag_set(d, KV_EINVAL, r->path, 0, 0, "", "an empty file: expected a header naming %s",
				 COLUMNS_EXPECTED);
	kv_csv_rec_release(&rec);
	return rc;
}

/* ---- JSON lines ---- */

static int json_num(struct kv_run *r, const struct kv_json_doc *doc, size_t i, const char *field,
		    double *v, struct kv_diag *d)
{
	const struct kv_json *n = &doc->node[i];

	*v = NAN;
	if (n->type == KV_JSON_NUM) {
		*v = n->num;
		return 0;
	}
	return kv_diag_set(d, KV_EINVAL, r->path, n->line, n->col, field,
			   "a %s: expected a number", kv_json_type_name(n->type));
}

static int jsonl_row(struct kv_run *r, const struct kv_json_doc *doc, struct kv_diag *d)
{
	const struct kv_json *o = &doc->node[0];
	struct raw_row x;
	size_t f, k;
	int rc;

	if (o->type != KV_JSON_OBJ)
		return kv_diag_set(d, KV_EINVAL, r->path, o->line, o->col, "", "a %s: expected an object with %s",
				   kv_json_type_name(o->type), COLUMNS_EXPECTED);
	r->n_rows++;
	if ((k = kv_json_get(doc, 0, "status")) && doc->node[k].type == KV_JSON_STR &&
	    !(doc->node[k].len == 9 && !memcmp(doc->node[k].str, "completed", 9)) &&
	    !(doc->node[k].len == 2 && !memcmp(doc->node[k].str, "ok", 2))) {
		r->n_failed++;
		return 0;
	}
	raw_init(&x, o->line, csv_what);
	for (f = 0; f < N_FIELDS; f++) {
		double v;

		if (!(k = kv_json_get(doc, 0, fields[f].name)))
			continue;
		if ((rc = json_num(r, doc, k, fields[f].name, &v, d)))
			return rc;
		raw_set(&x, &fields[f], v, doc->node[k].line, doc->node[k].col);
	}
	return add_row(r, &x, o->line, d);
}

/*
 * The objects of one line of JSON lines (len bytes at text, the '\n' kept),
 * line its 1-based number.  An object that does not end on its line is an
 * error: JSON lines hold one object per line.
 */
static int jsonl_line(struct kv_run *r, struct kv_json_doc *doc, const char *text, size_t len,
		      unsigned long line, struct kv_diag *d)
{
	size_t pos = 0;
	unsigned long col = 1, ln = line;
	int rc;

	while (pos < len) {
		if (strchr(" \t\r\n", text[pos]) && text[pos]) {
			pos++, col++;
			continue;
		}
		if ((rc = kv_json_parse(doc, text, len, &pos, &ln, &col, r->path, d))) {
			if (pos >= len || ln > line)
				return kv_diag_set(d, KV_EINVAL, r->path, line, 0, "",
						   "an object that does not end on its line: "
						   "expected one JSON object per line");
			return rc;
		}
		if ((rc = jsonl_row(r, doc, d)))
			return rc;
		if (pos < len && text[pos] != '\n')
			return kv_diag_set(d, KV_EINVAL, r->path, ln, col, "",
					   "text after the object: expected one JSON object per line");
	}
	return 0;
}

/*
 * Reads the next line of f, its '\n' kept, into *buf (*len bytes; NULs are
 * data).  Returns 1, 0 at the end, 2 when the line is longer than
 * KV_CSV_MAX_RECORD_BYTES (the rest unread), or KV_EIO with d filled.
 */
static int read_line(const struct kv_run *r, FILE *f, char **buf, size_t *cap, size_t *len,
		     unsigned long line, struct kv_diag *d)
{
	int ch = 0;

	*len = 0;
	if (!*cap) {
		*cap = 4096;
		*buf = kv_xmalloc(*cap);
	}
	while (ch != '\n' && (ch = getc_unlocked(f)) != EOF) {
		if (*len + 1 >= *cap) {
			if (*cap >= KV_CSV_MAX_RECORD_BYTES)
				return 2;
			*cap = *cap ? 2 * *cap : 4096;
			*buf = kv_xrealloc(*buf, *cap);
		}
		(*buf)[(*len)++] = (char)ch;
	}
	(*buf)[*len] = 0;
	if (ferror(f))
		return kv_diag_set(d, KV_EIO, r->path, line, 0, "", "cannot read: %s",
				   strerror(errno ? errno : EIO));
	return *len > 0;
}

/* JSON lines from f, one line at a time. */
static int load_jsonl(struct kv_run *r, FILE *f, struct kv_diag *d)
{
	struct kv_json_doc doc = { 0 };
	char *buf = NULL;
	size_t cap = 0, len;
	unsigned long line = 1;
	int rc;

	r->format = "jsonl";
	while ((rc = read_line(r, f, &buf, &cap, &len, line, d)) == 1) {
		if ((rc = jsonl_line(r, &doc, buf, len, line, d)))
			break;
		if (stop_sig) {
			rc = interrupted(r, line, d);
			break;
		}
		line++;
	}
	if (rc == 2)
		rc = kv_diag_set(d, KV_EINVAL, r->path, line, 0, "",
				 "a line longer than %zu bytes: expected one JSON object per line",
				 KV_CSV_MAX_RECORD_BYTES);
	free(buf);
	kv_json_release(&doc);
	return rc;
}

/* ---- vLLM's benchmark result ---- */

/* The array member key of the root (0 when absent) checked to hold n elements. */
static int vllm_array(struct kv_run *r, const struct kv_json_doc *doc, const char *key,
		      size_t n, size_t *out, struct kv_diag *d)
{
	size_t k = kv_json_get(doc, 0, key);

	*out = k;
	if (!k)
		return 0;
	if (doc->node[k].type != KV_JSON_ARR)
		return kv_diag_set(d, KV_EINVAL, r->path, doc->node[k].line, doc->node[k].col, key,
				   "a %s: expected an array with one element per request",
				   kv_json_type_name(doc->node[k].type));
	if (doc->node[k].n != n)
		return kv_diag_set(d, KV_EINVAL, r->path, doc->node[k].line, doc->node[k].col, key,
				   "%zu elements: expected %zu, one per request as in input_lens",
				   doc->node[k].n, n);
	return 0;
}

/* The sum of the numbers of array a (one request's itls), each checked. */
static int vllm_sum(struct kv_run *r, const struct kv_json_doc *doc, size_t a, double *sum,
		    struct kv_diag *d)
{
	size_t k;
	double v;
	int rc;

	if (doc->node[a].type != KV_JSON_ARR)
		return kv_diag_set(d, KV_EINVAL, r->path, doc->node[a].line, doc->node[a].col, "itls",
				   "a %s: expected an array of inter-token latencies",
				   kv_json_type_name(doc->node[a].type));
	*sum = 0;
	for (k = kv_json_first(doc, a); k; k = doc->node[k].next) {
		if ((rc = json_num(r, doc, k, "itls", &v, d)))
			return rc;
		if (!(v >= 0 && v <= KV_RUN_MAX_TIME_S))
			return kv_diag_set(d, KV_EINVAL, r->path, doc->node[k].line, doc->node[k].col,
					   "itls", "bad value %.10g: expected an inter-token latency "
					   "in [0, %.10g] s", v, KV_RUN_MAX_TIME_S);
		*sum += v;
	}
	return 0;
}

/* 1 when request i failed: a non-empty error string (vLLM writes "" for success). */
static int vllm_failed(const struct kv_json_doc *doc, size_t err)
{
	return err && doc->node[err].type == KV_JSON_STR && doc->node[err].len;
}

/* Where send times come from when start_times is absent: all at 0 when the rate was infinite. */
static int vllm_no_start(struct kv_run *r, const struct kv_json_doc *doc, struct kv_diag *d)
{
	size_t rate = kv_json_get(doc, 0, "request_rate"), mc = kv_json_get(doc, 0, "max_concurrency");
	int inf = rate && ((doc->node[rate].type == KV_JSON_NUM && isinf(doc->node[rate].num)) ||
			   (doc->node[rate].type == KV_JSON_STR && doc->node[rate].len == 3 &&
			    !memcmp(doc->node[rate].str, "inf", 3)));

	if (inf && (!mc || doc->node[mc].type == KV_JSON_NULL))
		return 0;
	return kv_diag_set(d, KV_EINVAL, r->path, 1, 1, "start_times",
			   "absent, and the run %s: expected start_times (saved by `vllm bench serve` "
			   "--save-detailed), or a CSV with an arrival_s column",
			   !inf ? "was not sent all at once (request_rate is not inf)" :
				  "capped concurrency (max_concurrency)");
}

/* One request of the parallel arrays: k[j] the element of array j (0: absent), k[6] errors. */
static int vllm_row(struct kv_run *r, const struct kv_json_doc *doc, const size_t k[7],
		    struct kv_diag *d)
{
	static const struct field vf[5] = { { "", 1, F_ARRIVAL }, { "", 1, F_PROMPT },
					    { "", 1, F_OUTPUT },  { "", 1, F_TTFT },
					    { "", 1, F_E2E } };
	struct raw_row x;
	double v;
	size_t j;
	int rc;

	r->n_rows++;
	if (vllm_failed(doc, k[6])) {
		r->n_failed++;
		return 0;
	}
	raw_init(&x, doc->node[k[1]].line, vllm_what);
	x.v[F_ARRIVAL] = 0; /* no start_times: all sent at once (vllm_no_start) */
	x.given = 1u << F_ARRIVAL;
	for (j = 0; j < 5; j++) {
		if (!k[j])
			continue;
		if ((rc = json_num(r, doc, k[j], vllm_what[j], &v, d)))
			return rc;
		raw_set(&x, &vf[j], v, doc->node[k[j]].line, doc->node[k[j]].col);
		x.name[j] = vllm_what[j];
	}
	if (!k[4]) { /* E2E = TTFT + sum(itls) */
		if ((rc = vllm_sum(r, doc, k[5], &v, d)))
			return rc;
		x.v[F_E2E] = x.v[F_TTFT] + v;
		x.name[F_E2E] = "itls";
		x.line[F_E2E] = doc->node[k[5]].line;
		x.col[F_E2E] = doc->node[k[5]].col;
		x.e2e_sum = x.has_e2e = 1;
	}
	return add_row(r, &x, doc->node[k[1]].line, d);
}

static int load_vllm(struct kv_run *r, const struct kv_json_doc *doc, struct kv_diag *d)
{
	size_t in = kv_json_get(doc, 0, "input_lens"), n = doc->node[in].n;
	size_t out, ttft, start, lat, e2els, itls, errs, i, j, k[7];
	int rc;

	r->format = "vllm-json";
	if ((rc = vllm_array(r, doc, "input_lens", n, &in, d)) ||
	    (rc = vllm_array(r, doc, "output_lens", n, &out, d)) ||
	    (rc = vllm_array(r, doc, "ttfts", n, &ttft, d)) ||
	    (rc = vllm_array(r, doc, "start_times", n, &start, d)) ||
	    (rc = vllm_array(r, doc, "latencies", n, &lat, d)) ||
	    (rc = vllm_array(r, doc, "e2els", n, &e2els, d)) ||
	    (rc = vllm_array(r, doc, "itls", n, &itls, d)) ||
	    (rc = vllm_array(r, doc, "errors", n, &errs, d)))
		return rc;
	if (!out || !ttft)
		return kv_diag_set(d, KV_EINVAL, r->path, 1, 1, out ? "ttfts" : "output_lens",
				   "absent: expected vLLM's benchmark result saved with --save-result "
				   "--save-detailed (input_lens, output_lens, ttfts, start_times, latencies or itls)");
	if (!lat)
		lat = e2els;
	if (!lat && !itls)
		return kv_diag_set(d, KV_EINVAL, r->path, 1, 1, "latencies",
				   "absent, and so is itls: expected one of them to give each request's E2E");
	if (!start && (rc = vllm_no_start(r, doc, d)))
		return rc;
	/* walk the parallel arrays together */
	k[0] = start ? kv_json_first(doc, start) : 0;
	k[1] = kv_json_first(doc, in);
	k[2] = kv_json_first(doc, out);
	k[3] = kv_json_first(doc, ttft);
	k[4] = lat ? kv_json_first(doc, lat) : 0;
	k[5] = itls ? kv_json_first(doc, itls) : 0;
	k[6] = errs ? kv_json_first(doc, errs) : 0;
	for (i = 0; i < n; i++) {
		if ((rc = vllm_row(r, doc, k, d)))
			return rc;
		if (stop_sig)
			return interrupted(r, doc->node[k[1]].line, d);
		for (j = 0; j < 7; j++)
			if (k[j])
				k[j] = doc->node[k[j]].next;
	}
	return 0;
}

/* ---- loading ---- */

/* The rest of f (at most KV_RUN_MAX_BYTES) into a heap buffer. */
static int read_all(const struct kv_run *r, FILE *f, char **text, size_t *len, struct kv_diag *d)
{
	size_t cap = 1 << 16, got;
	struct stat st;

	*text = NULL;
	*len = 0;
	if (fileno(f) >= 0 && !fstat(fileno(f), &st) && (uint64_t)st.st_size > KV_RUN_MAX_BYTES)
		return kv_diag_set(d, KV_ERANGE, r->path, 0, 0, "",
				   "a JSON document of %llu bytes: expected vLLM's result of at most "
				   "1 GiB (a larger run can be written as CSV or JSON lines, which are "
				   "read as streams)", (unsigned long long)st.st_size);
	*text = kv_xmalloc(cap);
	while ((got = fread(*text + *len, 1, cap - *len, f)) > 0) {
		*len += got;
		if (*len > KV_RUN_MAX_BYTES)
			return kv_diag_set(d, KV_ERANGE, r->path, 0, 0, "",
					   "a JSON document larger than %zu bytes: expected vLLM's result "
					   "of at most 1 GiB (a larger run can be written as CSV or JSON "
					   "lines, which are read as streams)", KV_RUN_MAX_BYTES);
		if (*len == cap) {
			cap *= 2;
			*text = kv_xrealloc(*text, cap);
		}
	}
	if (ferror(f))
		return kv_diag_set(d, KV_EIO, r->path, 0, 0, "", "cannot read: %s",
				   strerror(errno ? errno : EIO));
	return 0;
}

/* vLLM's result: one JSON document, read whole from f (at its start). */
static int load_document(struct kv_run *r, FILE *f, struct kv_diag *d)
{
	struct kv_json_doc doc = { .max_nodes = KV_RUN_MAX_VALUES };
	char *text = NULL;
	size_t len, pos = 0;
	unsigned long line = 1, col = 1;
	int rc;

	if ((rc = read_all(r, f, &text, &len, d))) {
		/* too large or unreadable */
	} else if ((rc = kv_json_parse(&doc, text, len, &pos, &line, &col, r->path, d))) {
		/* malformed */
	} else if (!kv_json_get(&doc, 0, "input_lens")) {
		rc = kv_diag_set(d, KV_EINVAL, r->path, doc.node[0].line, doc.node[0].col, "",
				 "an object over lines %lu-%lu without input_lens: expected vLLM's "
				 "benchmark result (input_lens, output_lens, ttfts, ...) or JSON lines "
				 "(one object per line)", doc.node[0].line, line);
	} else {
		while (pos < len && strchr(" \t\r\n", text[pos]) && text[pos]) {
			if (text[pos] == '\n')
				line++, col = 0;
			pos++, col++;
		}
		rc = pos < len ? kv_diag_set(d, KV_EINVAL, r->path, line, col, "",
					     "text after the result object: expected the end of the file") :
				 load_vllm(r, &doc, d);
	}
	kv_json_release(&doc);
	free(text);
	return rc;
}

/*
 * The format from the first line that is not blank: CSV unless it opens
 * with '{'; JSON lines when it holds one whole object without input_lens;
 * else vLLM's result (one document over the whole file).  A syntax error
 * inside the first line is reported as it is.
 */
static int load_stream(struct kv_run *r, FILE *f, struct kv_diag *d)
{
	struct kv_json_doc doc = { 0 };
	char bom[3], *buf = NULL;
	size_t cap = 0, len = 0, pos = 0;
	unsigned long line = 1, col = 1;
	long start = 0;
	int rc, jsonl = 0;

	if (fread(bom, 1, 3, f) == 3 && !memcmp(bom, "\xef\xbb\xbf", 3))
		start = 3; /* a UTF-8 byte-order mark */
	if (fseek(f, start, SEEK_SET))
		return kv_diag_set(d, KV_EIO, r->path, 0, 0, "", "cannot seek: %s", strerror(errno));
	while ((rc = read_line(r, f, &buf, &cap, &len, line, d)) == 1 && strspn(buf, " \t\r\n") >= len)
		line++;
	if (rc < 0)
		goto out;
	pos = rc ? strspn(buf, " \t\r\n") : 0;
	col += pos;
	if (rc && buf[pos] == '{') {
		unsigned long l0 = line;

		if (rc == 1) { /* one line: JSON lines, or a one-line vLLM result */
			rc = kv_json_parse(&doc, buf, len, &pos, &line, &col, r->path, d);
			if (rc && pos < len && line == l0)
				goto out; /* a syntax error inside the first line */
			jsonl = !rc && !kv_json_get(&doc, 0, "input_lens");
		}
		rc = 2; /* else one JSON document over lines (or over 1 MiB) */
	} else {
		rc = 0;
	}
	if (rc < 0)
		goto out;
	if (fseek(f, start, SEEK_SET)) {
		rc = kv_diag_set(d, KV_EIO, r->path, 0, 0, "", "cannot seek: %s", strerror(errno));
		goto out;
	}
	if (jsonl)
		rc = load_jsonl(r, f, d);
	else if (rc == 2)
		rc = load_document(r, f, d);
	else
		rc = load_csv(r, f, d);
out:
	free(buf);
	kv_json_release(&doc);
	return rc;
}

int kv_run_load_mem(struct kv_run *r, const char *name, const char *text, size_t len,
		    struct kv_diag *d)
{
	static char empty[1];
	FILE *f;
	int rc;

	memset(r, 0, sizeof(*r));
	snprintf(r->path, sizeof(r->path), "%s", name);
	/* fmemopen: the one stream code path files take; reading never writes the buffer */
	f = fmemopen(len ? (void *)(uintptr_t)text : empty, len, "r");
	if (!f)
		kv_oom(0);
	rc = load_stream(r, f, d);
	fclose(f);
	return rc ? rc : run_finish(r, d);
}

int kv_run_load(struct kv_run *r, const char *path, struct kv_diag *d)
{
	FILE *f;
	int rc;

	memset(r, 0, sizeof(*r));
	snprintf(r->path, sizeof(r->path), "%s", path);
	if ((rc = kv_input_open(path, &f, d)))
		return rc;
	rc = load_stream(r, f, d);
	fclose(f);
	return rc ? rc : run_finish(r, d);
}

void kv_run_release(struct kv_run *r)
{
	free(r->req);
	r->req = NULL;
	r->n = r->cap = 0;
}

/* ---- the replay ---- */

/*
 * An unnamed temporary file in dir: O_TMPFILE where the file system has it,
 * else mkstemp() and unlink() at once.  Returns the descriptor, or -1 with
 * errno set.
 */
static int unnamed_tmp(const char *dir)
{
	char *path;
	int fd;

#ifdef O_TMPFILE
	fd = open(dir, O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
	if (fd >= 0 || (errno != EOPNOTSUPP && errno != EISDIR && errno != EINVAL))
		return fd;
#endif
	path = kv_xasprintf("%s/kvsim-run-XXXXXX", dir);
	fd = mkstemp(path);
	if (fd >= 0)
		unlink(path);
	free(path);
	return fd;
}

/* The run's requests as a vidur trace on fd; 0 or -1 (errno). */
static int write_trace(int fd, const struct kv_run *run)
{
	FILE *f = fdopen(dup(fd), "w");
	size_t i;
	int bad;

	if (!f)
		return -1;
	fprintf(f, "arrived_at,num_prefill_tokens,num_decode_tokens\n");
	for (i = 0; i < run->n; i++)
		fprintf(f, "%llu.%09llu,%llu,%llu\n",
			(unsigned long long)(run->req[i].arrival_ns / KV_NS_PER_S),
			(unsigned long long)(run->req[i].arrival_ns % KV_NS_PER_S),
			(unsigned long long)run->req[i].prompt_tokens,
			(unsigned long long)run->req[i].output_tokens);
	bad = fflush(f) != 0;
	bad |= ferror(f) != 0;
	bad |= fclose(f) != 0;
	return bad ? -1 : 0;
}

/*
 * Where the simulator finds the trace: /proc/self/fd/FD, when /proc shows
 * it; else (no /proc) a named copy, which kv_replay_release() removes.
 */
static int trace_name(struct kv_replay *rp, const char *dir)
{
	int fd;

	snprintf(rp->trace, sizeof(rp->trace), "/proc/self/fd/%d", rp->fd);
	if (!access(rp->trace, R_OK))
		return 0;
	snprintf(rp->trace, sizeof(rp->trace), "%s/kvsim-run-XXXXXX", dir);
	if ((fd = mkstemp(rp->trace)) < 0)
		return -1;
	rp->named = 1;
	close(rp->fd);
	rp->fd = fd;
	return 0;
}

int kv_replay_init(struct kv_replay *rp, struct kv_workload *w, const struct kv_run *run,
		   struct kv_diag *d)
{
	struct kv_source_spec *s = &w->cfg.source;
	const char *tmp = getenv("TMPDIR");
	const char *dir = tmp && *tmp ? tmp : "/tmp";

	memset(rp, 0, sizeof(*rp));
	rp->w = w;
	rp->run = run;
	errno = 0;
	if ((rp->fd = unnamed_tmp(dir)) < 0 || trace_name(rp, dir) || write_trace(rp->fd, run)) {
		kv_diag_set(d, KV_EIO, dir, 0, 0, "", "cannot write the replay's trace there: %s",
			    strerror(errno ? errno : EIO));
		kv_replay_release(rp);
		return KV_EIO;
	}
	memset(s, 0, sizeof(*s));
	s->arrival = KV_ARRIVAL_TRACE;
	s->time_scale = 1;
	s->requests = run->n;
	s->trace_format = KV_TRACE_VIDUR;
	snprintf(s->trace_path, sizeof(s->trace_path), "%s", rp->trace);
	s->n_tenants = 1; /* the engine counts per tenant: one, as a workload without tenants has */
	snprintf(s->tenants[0].name, sizeof(s->tenants[0].name), "default");
	s->tenants[0].share = s->tenants[0].weight = 1;
	w->cfg.sample_interval_ns = 0;
	return 0;
}

/* A replayed request's latencies, stored by id (= row of the run). */
static int on_request(void *ctx, const struct kv_sim *s, const struct kv_req *q, enum kv_end e)
{
	struct kv_run_result *res = ctx;

	(void)s;
	if (q->id >= res->n_req)
		return 0; /* res holds the run's rows; the trace has no more */
	kv_req_out_record(&res->req[q->id], q, e);
	return 0;
}

/*
 * A message about a line of the trace (a request beyond the model's
 * context, say) names the run's file and row instead: the trace is
 * unnamed, its line i + 2 is request i.
 */
static void at_run_row(const struct kv_replay *rp, struct kv_diag *d)
{
	if (strcmp(d->file, rp->trace))
		return;
	snprintf(d->file, sizeof(d->file), "%.*s", (int)sizeof(d->file) - 1, rp->run->path);
	d->line = d->line >= 2 && d->line - 2 < rp->run->n ? rp->run->req[d->line - 2].line : 0;
	d->col = 0;
}

/*
 * Rejected: kv_calib_run(), which runs the same simulation, takes no stop
 * flag, so a signal could only kill it; here *s.stop ends the replay at
 * its next 16384th event.
 */
int kv_replay_run(struct kv_replay *rp, const struct kv_device *dev, struct kv_run_result *res,
		  struct kv_diag *d)
{
	struct kv_sink sink = { .ctx = res, .request = on_request, .progress = kv_progress_cb };
	struct kv_sim s;
	int rc;

	memset(res, 0, sizeof(*res));
	res->n_req = res->cap_req = rp->run->n;
	res->req = kv_xcalloc(rp->run->n, sizeof(*res->req));
	rp->w->cfg.device = *dev;
	rp->w->cfg.exec = rp->exec; /* NULL but while kv_replay_steps records */
	if ((rc = kv_sim_init(&s, &rp->w->cfg, &sink))) {
		*d = s.diag;
		kv_sim_release(&s);
		return rc;
	}
	s.stop = &stop_sig;
	kv_progress_restart();
	rc = stop_sig ? KV_EINTR : kv_sim_run(&s);
	kv_progress_done();
	if (rc == KV_EINTR)
		kv_diag_set(d, rc, rp->run->path, 0, 0, "",
			    "interrupted by %s while replaying; no output written",
			    stop_sig == SIGINT ? "SIGINT" : "SIGTERM");
	else if (rc && !(*d = s.diag).msg[0])
		kv_diag_set(d, rc, rp->w->path, 0, 0, "", "the replay failed: %s", kv_strerror(rc));
	else if (rc)
		at_run_row(rp, d);
	kv_sim_release(&s);
	return rc;
}

void kv_replay_release(struct kv_replay *rp)
{
	if (!rp->run)
		return; /* never set up (a zeroed struct) or released */
	if (rp->named && rp->trace[0])
		unlink(rp->trace);
	if (rp->fd >= 0)
		close(rp->fd);
	rp->run = NULL;
	rp->fd = -1;
	rp->named = 0;
	rp->trace[0] = 0;
}

/* ---- the score ---- */

const char *const kv_run_metric_name[KV_RUN_METRICS] = { "ttft", "tpot", "e2e" };
const char *const kv_run_stat_name[KV_RUN_STATS] = { "mean", "p90", "p99" };

static int cmp_dbl(const void *x, const void *y)
{
	double a = *(const double *)x, b = *(const double *)y;

	return a < b ? -1 : a > b;
}

/* mean, p90, p99 (nearest rank) of v[0..n), sorting v; NaN when empty. */
static void stats(double *v, size_t n, double *out)
{
	double sum = 0;
	size_t i;

	if (!n) {
		out[0] = out[1] = out[2] = NAN;
		return;
	}
	qsort(v, n, sizeof(*v), cmp_dbl);
	for (i = 0; i < n; i++)
		sum += v[i];
	out[KV_RUN_MEAN] = sum / (double)n;
	out[KV_RUN_P90] = v[(size_t)ceil(0.90 * (double)n) - 1];
	out[KV_RUN_P99] = v[(size_t)ceil(0.99 * (double)n) - 1];
}

static double metric_of(const struct kv_run_req *q, int m)
{
	return m == KV_RUN_TTFT ? q->ttft_s : m == KV_RUN_TPOT ? q->tpot_s : q->e2e_s;
}

static double sim_metric_of(const struct kv_req_out *o, int m)
{
	return m == KV_RUN_TTFT ? o->ttft_s : m == KV_RUN_TPOT ? o->tpot_s : o->e2e_s;
}

void kv_run_score(const struct kv_run *run, const struct kv_run_result *res, size_t from,
		  size_t to, struct kv_run_score *sc)
{
	double *p = kv_xmalloc((to > from ? to - from : 1) * sizeof(*p));
	double *m = kv_xmalloc((to > from ? to - from : 1) * sizeof(*m));
	size_t i, n;
	int k;

	memset(sc, 0, sizeof(*sc));
	sc->from = from;
	sc->to = to;
	for (i = from; i < to; i++)
		sc->n_missing += i >= res->n_req || !res->req[i].completed;
	for (k = 0; k < KV_RUN_METRICS; k++) {
		double ape = 0;

		for (i = from, n = 0; i < to; i++) {
			double x = i < res->n_req && res->req[i].completed ? sim_metric_of(&res->req[i], k) : NAN;
			double y = metric_of(&run->req[i], k);

			if (isnan(x) || isnan(y) || y <= 0)
				continue;
			p[n] = x;
			m[n++] = y;
			ape += fabs(x / y - 1);
		}
		sc->n[k] = n;
		sc->mape[k] = n ? ape / (double)n : NAN;
		stats(p, n, sc->pred[k]);
		stats(m, n, sc->meas[k]);
	}
	free(p);
	free(m);
}

double kv_run_score_err(const struct kv_run_score *sc, int metric, int stat)
{
	double y = sc->meas[metric][stat];

	return y > 0 ? 100 * (sc->pred[metric][stat] / y - 1) : NAN;
}

/* Why a statistic cannot be judged (NULL when it can): nothing scored, or a measured 0. */
static const char *score_na(const struct kv_run_score *sc, int k, int s)
{
	if (!sc->n[k])
		return "no requests scored";
	if (s >= 0 && !(sc->meas[k][s] > 0))
		return "measured 0";
	return NULL;
}

/* A CSV number cell: empty for NaN. */
static void put_cell(FILE *f, const char *fmt, double x)
{
	fputc(',', f);
	if (!isnan(x))
		fprintf(f, fmt, x);
}

void kv_run_score_csv(FILE *f, const char *label, const struct kv_run_score *sc)
{
	int k, s;

	for (k = 0; k < KV_RUN_METRICS; k++) {
		for (s = 0; s < KV_RUN_STATS; s++) {
			kv_csv_put(f, label);
			fprintf(f, ",%s,%s", kv_run_metric_name[k], kv_run_stat_name[s]);
			put_cell(f, "%.9g", sc->pred[k][s]);
			put_cell(f, "%.9g", sc->meas[k][s]);
			put_cell(f, "%.4f", score_na(sc, k, s) ? NAN : kv_run_score_err(sc, k, s));
			fprintf(f, ",%zu\n", sc->n[k]);
		}
		kv_csv_put(f, label);
		fprintf(f, ",%s,mape,,", kv_run_metric_name[k]);
		put_cell(f, "%.4f", sc->n[k] ? 100 * sc->mape[k] : NAN);
		fprintf(f, ",%zu\n", sc->n[k]);
	}
}

void kv_run_score_print(FILE *f, const struct kv_run_score *sc)
{
	int k, s;

	fprintf(f, "  %-10s %12s %12s %9s\n", "metric", "predicted", "measured", "error");
	for (k = 0; k < KV_RUN_METRICS; k++) {
		const char *na = score_na(sc, k, -1);

		for (s = 0; s < KV_RUN_STATS; s++) {
			if (na) {
				fprintf(f, "  %-4s %-5s n/a (%s)\n", kv_run_metric_name[k],
					kv_run_stat_name[s], na);
				continue;
			}
			fprintf(f, "  %-4s %-5s %10.2f ms %10.2f ms ", kv_run_metric_name[k],
				kv_run_stat_name[s], 1e3 * sc->pred[k][s], 1e3 * sc->meas[k][s]);
			if (score_na(sc, k, s))
				fprintf(f, "n/a (%s)\n", score_na(sc, k, s));
			else
				fprintf(f, "%+8.2f%%\n", kv_run_score_err(sc, k, s));
		}
		if (na)
			fprintf(f, "  %-4s %-5s n/a (%s)\n", kv_run_metric_name[k], "mape", na);
		else
			fprintf(f, "  %-4s %-5s %27s %8.2f%%  (per request, |error|)\n",
				kv_run_metric_name[k], "mape", "", 100 * sc->mape[k]);
	}
	if (sc->n_missing)
		fprintf(f, "  %zu of the %zu requests scored did not complete in the simulation\n",
			sc->n_missing, sc->to - sc->from);
}
