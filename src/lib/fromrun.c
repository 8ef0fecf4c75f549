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
#include <math.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* ---- rows, whatever the format ---- */

/* One row's fields before checking: NaN when absent. */
struct raw_row {
	double arrival_s, prompt, output, ttft_s, e2e_s, itl_s;
	unsigned long line;
};

/* A field of csv and jsonl rows: its name and its scale to seconds (1 for counts). */
struct field {
	const char *name;
	double scale;
	size_t off; /* offset of the double in struct raw_row */
};

#define RAW(f) offsetof(struct raw_row, f)
static const struct field fields[] = {
	{ "arrival_s", 1, RAW(arrival_s) },     { "arrival_ms", 1e-3, RAW(arrival_s) },
	{ "prompt_tokens", 1, RAW(prompt) },     { "output_tokens", 1, RAW(output) },
	{ "ttft_s", 1, RAW(ttft_s) },           { "ttft_ms", 1e-3, RAW(ttft_s) },
	{ "e2e_s", 1, RAW(e2e_s) },             { "e2e_ms", 1e-3, RAW(e2e_s) },
	{ "itl_s", 1, RAW(itl_s) },             { "itl_ms", 1e-3, RAW(itl_s) },
	{ "tpot_s", 1, RAW(itl_s) },            { "tpot_ms", 1e-3, RAW(itl_s) },
};
#define N_FIELDS KV_ARRAY_LEN(fields)
#define COLUMNS_EXPECTED                                                                   \
	"arrival_s (or arrival_ms), prompt_tokens, output_tokens, ttft_s (or ttft_ms) and " \
	"e2e_s or itl_s (or tpot_s; each time may end in _ms)"

static double *raw_at(struct raw_row *r, const struct field *f)
{
	return (double *)(void *)((char *)r + f->off);
}

static void raw_init(struct raw_row *r, unsigned long line)
{
	r->arrival_s = r->prompt = r->output = r->ttft_s = r->e2e_s = r->itl_s = NAN;
	r->line = line;
}

static int is_count(double v)
{
	return isfinite(v) && v >= 1 && v == floor(v) && v <= 9007199254740992.0;
}

/*
 * Checks a row and appends it.  what names the row's fields in messages
 * (a column or an array); col is the row's column for messages (0: none).
 */
static int add_row(struct kv_run *r, const struct raw_row *x, unsigned long col,
		   const char *const what[6], struct kv_diag *d)
{
	struct kv_run_req *q;
	double e2e = x->e2e_s;

#define BAD(i, v, exp)                                                                       \
	kv_diag_set(d, KV_EINVAL, r->path, x->line, col, what[i], "bad value %.10g: expected %s", \
		    (v), (exp))
	if (!isfinite(x->arrival_s))
		return BAD(0, x->arrival_s, "a finite send time in seconds");
	if (!is_count(x->prompt))
		return BAD(1, x->prompt, "an integer of at least 1 token");
	if (!is_count(x->output))
		return BAD(2, x->output, "an integer of at least 1 token");
	if (!isfinite(x->ttft_s) || x->ttft_s <= 0)
		return BAD(3, x->ttft_s, "a positive finite time");
	if (isnan(e2e)) {
		if (!isfinite(x->itl_s) || x->itl_s < 0)
			return BAD(5, x->itl_s, "a finite time >= 0 (or give the E2E latency)");
		e2e = x->ttft_s + x->itl_s * (x->output - 1);
	}
	if (!isfinite(e2e) || e2e < x->ttft_s)
		return kv_diag_set(d, KV_EINVAL, r->path, x->line, col, what[4],
				   "bad value %.10g: expected a finite time >= the TTFT %.10g", e2e,
				   x->ttft_s);
#undef BAD
	if (r->n == r->cap) {
		r->cap = r->cap ? 2 * r->cap : 256;
		r->req = kv_xrealloc(r->req, r->cap * sizeof(*r->req));
	}
	q = &r->req[r->n++];
	/* arrival_ns holds the send time in seconds until kv_run_finish() */
	memcpy(&q->arrival_ns, &x->arrival_s, sizeof(double));
	q->prompt_tokens = (uint64_t)x->prompt;
	q->output_tokens = (uint64_t)x->output;
	q->ttft_s = x->ttft_s;
	q->e2e_s = e2e;
	q->tpot_s = q->output_tokens > 1 ? (e2e - x->ttft_s) / (double)(q->output_tokens - 1) : NAN;
	q->line = x->line;
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
	return x->line < y->line ? -1 : x->line > y->line; /* file order: a stable sort */
}

/* Sorts by send time, makes times relative to the first and converts them to ns. */
static int run_finish(struct kv_run *r, struct kv_diag *d)
{
	double t0;
	size_t i;

	if (!r->n)
		return kv_diag_set(d, KV_EINVAL, r->path, 0, 0, "",
				   "no request completed in the run (%zu failed): expected at least one",
				   r->n_failed);
	qsort(r->req, r->n, sizeof(*r->req), cmp_arrival);
	t0 = arrival_s_of(&r->req[0]);
	for (i = 0; i < r->n; i++) {
		double dt = arrival_s_of(&r->req[i]) - t0;

		if (dt > 1e9) /* 30 years: a time column in another unit */
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
		k += col_of[f] >= 0 && (fields[f].off == RAW(e2e_s) || fields[f].off == RAW(itl_s));
	if (!k)
		return kv_diag_set(d, KV_EINVAL, r->path, h->line, 0, "e2e",
				   "no e2e or itl column in the header: expected columns %s",
				   COLUMNS_EXPECTED);
	return 0;
}

static const char *const csv_what[6] = { "arrival", "prompt_tokens", "output_tokens", "ttft",
					  "e2e", "itl" };

static int csv_row(struct kv_run *r, const struct kv_csv_rec *rec, const long *col_of,
		   long status, size_t n_cols, struct kv_diag *d)
{
	struct raw_row x;
	size_t f;

	if (rec->n != n_cols)
		return kv_diag_set(d, KV_EINVAL, r->path, rec->line, 0, "",
				   "%zu fields: expected %zu, as in the header", rec->n, n_cols);
	if (status >= 0 && strcmp(rec->field[status], "completed") && strcmp(rec->field[status], "ok")) {
		r->n_failed++;
		return 0;
	}
	raw_init(&x, rec->line);
	for (f = 0; f < N_FIELDS; f++) {
		double v;

		if (col_of[f] < 0)
			continue;
		if (csv_number(rec->field[col_of[f]], &v))
			return kv_diag_set(d, KV_EINVAL, r->path, rec->line, 0, fields[f].name,
					   "bad value '%s': expected a number", rec->field[col_of[f]]);
		*raw_at(&x, &fields[f]) = v * fields[f].scale;
	}
	return add_row(r, &x, 0, csv_what, d);
}

static int load_csv(struct kv_run *r, const char *text, size_t len, struct kv_diag *d)
{
	struct kv_csv_rec rec;
	long col_of[N_FIELDS], status = -1;
	size_t pos = 0, n_cols = 0;
	unsigned long line = 1;
	int rc, first = 1;

	kv_csv_rec_init(&rec);
	r->format = "csv";
	while ((rc = kv_csv_rec_parse(&rec, text, len, &pos, &line, r->path, d)) == 1) {
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
	if ((k = kv_json_get(doc, 0, "status")) && doc->node[k].type == KV_JSON_STR &&
	    !(doc->node[k].len == 9 && !memcmp(doc->node[k].str, "completed", 9)) &&
	    !(doc->node[k].len == 2 && !memcmp(doc->node[k].str, "ok", 2))) {
		r->n_failed++;
		return 0;
	}
	raw_init(&x, o->line);
	for (f = 0; f < N_FIELDS; f++) {
		double v;

		if (!(k = kv_json_get(doc, 0, fields[f].name)))
			continue;
		if ((rc = json_num(r, doc, k, fields[f].name, &v, d)))
			return rc;
		*raw_at(&x, &fields[f]) = v * fields[f].scale;
	}
	return add_row(r, &x, o->col, csv_what, d);
}

static int load_jsonl(struct kv_run *r, const char *text, size_t len, struct kv_diag *d)
{
	struct kv_json_doc doc = { 0 };
	size_t pos = 0;
	unsigned long line = 1, col = 1;
	int rc = 0;

	r->format = "jsonl";
	while (pos < len) {
		if (text[pos] == '\n' || text[pos] == '\r' || text[pos] == ' ' || text[pos] == '\t') {
			if (text[pos] == '\n')
				line++, col = 1;
			else
				col++;
			pos++;
			continue;
		}
		if ((rc = kv_json_parse(&doc, text, len, &pos, &line, &col, r->path, d)) ||
		    (rc = jsonl_row(r, &doc, d)))
			break;
		if (pos < len && text[pos] != '\n') {
			rc = kv_diag_set(d, KV_EINVAL, r->path, line, col, "",
					 "text after the object: expected one JSON object per line");
			break;
		}
	}
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

/* The sum of the numbers of array a (one request's itls). */
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

static const char *const vllm_what[6] = { "start_times", "input_lens", "output_lens", "ttfts",
					   "latencies", "itls" };

static int load_vllm(struct kv_run *r, const struct kv_json_doc *doc, struct kv_diag *d)
{
	size_t in = kv_json_get(doc, 0, "input_lens"), n = doc->node[in].n;
	size_t out, ttft, start, lat, e2els, itls, errs, i, k[7];
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
		struct raw_row x;
		double *v[5] = { &x.arrival_s, &x.prompt, &x.output, &x.ttft_s, &x.e2e_s };
		size_t j;

		raw_init(&x, doc->node[k[1]].line);
		x.arrival_s = 0;
		if (vllm_failed(doc, k[6])) {
			r->n_failed++;
		} else {
			for (j = 0; j < 5; j++)
				if (k[j] && (rc = json_num(r, doc, k[j], vllm_what[j], v[j], d)))
					return rc;
			if (!k[4] && (rc = vllm_sum(r, doc, k[5], &x.e2e_s, d)))
				return rc;
			if (!k[4])
				x.e2e_s += x.ttft_s;
			if ((rc = add_row(r, &x, doc->node[k[1]].col, vllm_what, d)))
				return rc;
		}
		for (j = 0; j < 7; j++)
			if (k[j])
				k[j] = doc->node[k[j]].next;
	}
	return 0;
}

/* ---- loading ---- */

int kv_run_load_mem(struct kv_run *r, const char *name, const char *text, size_t len,
		    struct kv_diag *d)
{
	struct kv_json_doc doc = { 0 };
	size_t pos = 0;
	unsigned long line = 1, col = 1;
	int rc;

	memset(r, 0, sizeof(*r));
	snprintf(r->path, sizeof(r->path), "%s", name);
	if (len >= 3 && !memcmp(text, "\xef\xbb\xbf", 3))
		pos = 3; /* a UTF-8 byte-order mark */
	while (pos < len && strchr(" \t\r\n", text[pos]) && text[pos]) {
		if (text[pos] == '\n')
			line++;
		pos++;
	}
	if (pos >= len || text[pos] != '{') {
		rc = load_csv(r, text, len, d);
	} else if ((rc = kv_json_parse(&doc, text, len, &pos, &line, &col, r->path, d))) {
		/* a bad first object */
	} else if (kv_json_get(&doc, 0, "input_lens")) {
		while (pos < len && strchr(" \t\r\n", text[pos]) && text[pos]) {
			if (text[pos] == '\n')
				line++, col = 0;
			pos++, col++;
		}
		rc = pos < len ? kv_diag_set(d, KV_EINVAL, r->path, line, col, "",
					     "text after the result object: expected the end of the file") :
				 load_vllm(r, &doc, d);
	} else {
		rc = load_jsonl(r, text, len, d);
	}
	kv_json_release(&doc);
	return rc ? rc : run_finish(r, d);
}

int kv_run_load(struct kv_run *r, const char *path, struct kv_diag *d)
{
	char *text;
	size_t len;
	int rc;

	memset(r, 0, sizeof(*r));
	snprintf(r->path, sizeof(r->path), "%s", path);
	if ((rc = kv_input_read(path, KV_RUN_MAX_BYTES, &text, &len, d)))
		return rc;
	rc = kv_run_load_mem(r, path, text, len, d);
	free(text);
	return rc;
}

void kv_run_release(struct kv_run *r)
{
	free(r->req);
	r->req = NULL;
	r->n = r->cap = 0;
}

/* ---- the replay ---- */

int kv_replay_init(struct kv_replay *rp, struct kv_workload *w, const struct kv_run *run,
		   struct kv_diag *d)
{
	struct kv_source_spec *s = &w->cfg.source;
	const char *tmp = getenv("TMPDIR");
	FILE *f;
	size_t i;
	int fd, bad;

	memset(rp, 0, sizeof(*rp));
	rp->w = w;
	rp->run = run;
	snprintf(rp->trace, sizeof(rp->trace), "%s/kvsim-run-XXXXXX", tmp && *tmp ? tmp : "/tmp");
	if ((fd = mkstemp(rp->trace)) < 0 || !(f = fdopen(fd, "w"))) {
		kv_diag_set(d, KV_EIO, rp->trace, 0, 0, "", "cannot create the replay's trace: %s",
			    strerror(errno));
		if (fd >= 0)
			close(fd), unlink(rp->trace);
		rp->trace[0] = 0;
		return KV_EIO;
	}
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
	if (bad) {
		kv_diag_set(d, KV_EIO, rp->trace, 0, 0, "", "cannot write the replay's trace: %s",
			    strerror(errno));
		unlink(rp->trace);
		rp->trace[0] = 0;
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

int kv_replay_run(struct kv_replay *rp, const struct kv_device *dev, struct kv_run_result *res,
		  struct kv_diag *d)
{
	rp->w->cfg.device = *dev;
	return kv_calib_run(rp->w, NULL, 0, 0, NULL, res, !rp->show_progress, d);
}

void kv_replay_release(struct kv_replay *rp)
{
	if (rp->trace[0])
		unlink(rp->trace);
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

void kv_run_score_csv(FILE *f, const char *label, const struct kv_run_score *sc)
{
	int k, s;

	for (k = 0; k < KV_RUN_METRICS; k++) {
		for (s = 0; s < KV_RUN_STATS; s++) {
			kv_csv_put(f, label);
			fprintf(f, ",%s,%s,%.9g,%.9g,%.4f,%zu\n", kv_run_metric_name[k], kv_run_stat_name[s],
				sc->pred[k][s], sc->meas[k][s], kv_run_score_err(sc, k, s), sc->n[k]);
		}
		kv_csv_put(f, label);
		fprintf(f, ",%s,mape,,,%.4f,%zu\n", kv_run_metric_name[k], 100 * sc->mape[k], sc->n[k]);
	}
}

void kv_run_score_print(FILE *f, const struct kv_run_score *sc)
{
	int k, s;

	fprintf(f, "  %-10s %12s %12s %9s\n", "metric", "predicted", "measured", "error");
	for (k = 0; k < KV_RUN_METRICS; k++) {
		for (s = 0; s < KV_RUN_STATS; s++)
			fprintf(f, "  %-4s %-5s %10.2f ms %10.2f ms %+8.2f%%\n", kv_run_metric_name[k],
				kv_run_stat_name[s], 1e3 * sc->pred[k][s], 1e3 * sc->meas[k][s],
				kv_run_score_err(sc, k, s));
		fprintf(f, "  %-4s %-5s %27s %8.2f%%  (per request, |error|)\n", kv_run_metric_name[k],
			"mape", "", 100 * sc->mape[k]);
	}
	if (sc->n_missing)
		fprintf(f, "  %zu of the %zu requests scored did not complete in the simulation\n",
			sc->n_missing, sc->to - sc->from);
}
