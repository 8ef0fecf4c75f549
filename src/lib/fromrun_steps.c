/*
 * fromrun_steps.c -- a recorded run's engine steps (fromrun.h, struct
 * kv_steps): read them, write them, and record a replay's.
 *
 * The format is the one `kvsim validate` writes as iterations.csv: a header
 * naming the columns n_seqs, n_decode, n_prefill_tokens, n_sample,
 * attn_pairs, kv_read_bytes and the step's duration, measured_ms (or
 * step_ms, or step_s); other columns are ignored.  Each row is one step: its
 * batch composition and how long it took.  A step predicted from its row
 * (kv_perf_iter_ns) sees the shape a single replica's plain step has: the
 * six counts, nothing swapped, loaded or recomputed outside the batch.
 *
 * Invariant: a loaded record has 1 <= n <= KV_STEPS_MAX steps, each with
 * n_decode <= n_seqs, n_sample <= n_seqs, n_decode + n_prefill_tokens >= 1
 * and a duration in [1 ns, 1 day].
 */
#include "fromrun.h"
#include "atomic.h"
#include "csv.h"
#include "../../sim/replica.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

enum { C_SEQS, C_DECODE, C_PREFILL, C_SAMPLE, C_PAIRS, C_KV, C_TIME, C_N };

static const char *const col_name[C_N] = { "n_seqs", "n_decode", "n_prefill_tokens", "n_sample",
					   "attn_pairs", "kv_read_bytes", "measured_ms" };

/* The columns of header r into col[]; the duration's scale to ns into *scale.  0 or KV_EINVAL. */
static int find_cols(const struct kv_csv_rec *r, const char *path, long *col, double *scale,
		     struct kv_diag *d)
{
	static const char *const time_cols[] = { "measured_ms", "step_ms", "step_s" };
	static const double time_scale[] = { 1e6, 1e6, 1e9 };
	int i;

	for (i = 0; i < C_TIME; i++)
		if ((col[i] = kv_csv_rec_find(r, col_name[i])) < 0)
			return kv_diag_set(d, KV_EINVAL, path, r->line, 0, col_name[i],
					   "missing column: expected a header naming n_seqs, "
					   "n_decode, n_prefill_tokens, n_sample, attn_pairs, "
					   "kv_read_bytes and measured_ms (or step_ms, step_s)");
	for (i = 0; i < 3; i++)
		if ((col[C_TIME] = kv_csv_rec_find(r, time_cols[i])) >= 0) {
			*scale = time_scale[i];
			return 0;
		}
	return kv_diag_set(d, KV_EINVAL, path, r->line, 0, "measured_ms",
			   "missing column: expected the step's duration as measured_ms, "
			   "step_ms or step_s");
}

/* Field i of r as a count in [0, 2^53) into *v; 0 or KV_EINVAL naming line and column. */
static int count_of(const struct kv_csv_rec *r, long i, const char *path, const char *name,
		    uint64_t *v, struct kv_diag *d)
{
	const char *s = (size_t)i < r->n ? r->field[i] : "";
	char *end;
	double x;

	errno = 0;
	x = strtod(s, &end);
	if (!*s || *end || errno || !(x >= 0 && x < 9007199254740992.0) || x != floor(x))
		return kv_diag_set(d, KV_EINVAL, path, r->line, 0, name,
				   "bad value '%s': expected a whole number >= 0", s);
	*v = (uint64_t)x;
	return 0;
}

/* Row r into st's next step; 0 or KV_EINVAL. */
static int read_step(struct kv_steps *st, const struct kv_csv_rec *r, const long *col,
		     double scale, struct kv_diag *d)
{
	uint64_t v[C_TIME];
	struct kv_iter_rec *s;
	const char *ts = (size_t)col[C_TIME] < r->n ? r->field[col[C_TIME]] : "";
	char *end;
	double t;
	int i, err;

	for (i = 0; i < C_TIME; i++)
		if ((err = count_of(r, col[i], st->path, col_name[i], &v[i], d)))
			return err;
	if (v[C_SEQS] > UINT32_MAX || v[C_DECODE] > v[C_SEQS] || v[C_SAMPLE] > v[C_SEQS] ||
	    v[C_DECODE] + v[C_PREFILL] == 0)
		return kv_diag_set(d, KV_EINVAL, st->path, r->line, 0, "n_seqs",
				   "bad step: %llu sequences, %llu decoding, %llu sampling, %llu "
				   "prefill tokens: expected n_decode and n_sample <= n_seqs and "
				   "at least one token", (unsigned long long)v[C_SEQS],
				   (unsigned long long)v[C_DECODE], (unsigned long long)v[C_SAMPLE],
				   (unsigned long long)v[C_PREFILL]);
	errno = 0;
	t = strtod(ts, &end) * scale;
	if (!*ts || *end || errno || !(t >= 1 && t <= KV_RUN_MAX_TIME_S * 1e9))
		return kv_diag_set(d, KV_EINVAL, st->path, r->line, 0, "duration",
				   "bad value '%s': expected a step time from 1 ns to 1 day", ts);
	if (st->n == KV_STEPS_MAX)
		return kv_diag_set(d, KV_EINVAL, st->path, r->line, 0, "",
				   "more than %zu steps: expected at most that many", KV_STEPS_MAX);
	if (st->n == st->cap) {
		st->cap = st->cap ? 2 * st->cap : 1024;
		st->rec = kv_xrealloc(st->rec, st->cap * sizeof(*st->rec));
	}
	s = &st->rec[st->n++];
	memset(s, 0, sizeof(*s));
	s->shape.n_seqs = (uint32_t)v[C_SEQS];
	s->shape.n_decode = (uint32_t)v[C_DECODE];
	s->shape.n_sample = (uint32_t)v[C_SAMPLE];
	s->shape.n_prefill_tokens = v[C_PREFILL];
	s->shape.attn_pairs = v[C_PAIRS];
	s->shape.kv_read_bytes = v[C_KV];
	s->real_ns = (kv_ns)llround(t);
	return 0;
}

int kv_steps_load(struct kv_steps *st, const char *path, struct kv_diag *d)
{
	struct kv_csv_rec r;
	unsigned long line = 1;
	long col[C_N];
	double scale = 1e6;
	FILE *f;
	int rc, header = 1;

	memset(st, 0, sizeof(*st));
	snprintf(st->path, sizeof(st->path), "%s", path);
	if (!(f = fopen(path, "r")))
		return kv_diag_set(d, KV_EIO, path, 0, 0, "", "cannot open: %s", strerror(errno));
	kv_csv_rec_init(&r);
	while ((rc = kv_csv_rec_read(&r, f, &line, path, d)) == 1) {
		if (r.n == 1 && !r.field[0][0])
			continue; /* a blank line */
		if (header) {
			if ((rc = find_cols(&r, path, col, &scale, d)))
				break;
			header = 0;
		} else if ((rc = read_step(st, &r, col, scale, d))) {
			break;
		}
	}
	kv_csv_rec_release(&r);
	fclose(f);
	if (!rc && !st->n)
		rc = kv_diag_set(d, KV_EINVAL, path, line, 0, "",
				 "no steps: expected a header and at least one row");
	return rc;
}

void kv_steps_release(struct kv_steps *st)
{
	free(st->rec);
	memset(st, 0, sizeof(*st));
}

/* st's steps; with pred_ns, each one's fitted_ms and rel_error after them. */
static int steps_write(const char *path, const struct kv_steps *st, const double *pred_ns,
		       struct kv_diag *d)
{
	struct kv_atomic a;
	size_t i;
	int rc;

	if ((rc = kv_atomic_open(&a, path, d)))
		return rc;
	fprintf(a.f, "what,n_seqs,n_decode,n_prefill_tokens,n_sample,attn_pairs,kv_read_bytes,"
		     "measured_ms%s\n", pred_ns ? ",fitted_ms,rel_error" : "");
	for (i = 0; i < st->n; i++) {
		const struct kv_batch_shape *b = &st->rec[i].shape;
		double real = (double)st->rec[i].real_ns;

		fprintf(a.f, "%s,%u,%u,%llu,%u,%llu,%llu,%.6f",
			b->n_prefill_tokens ? (b->n_decode ? "mixed" : "prefill") : "decode",
			b->n_seqs, b->n_decode, (unsigned long long)b->n_prefill_tokens, b->n_sample,
			(unsigned long long)b->attn_pairs, (unsigned long long)b->kv_read_bytes,
			real * 1e-6);
		if (pred_ns)
			fprintf(a.f, ",%.6f,%.6f", pred_ns[i] * 1e-6, pred_ns[i] / real - 1);
		fputc('\n', a.f);
	}
	return kv_atomic_commit(&a, d);
}

int kv_steps_write(const char *path, const struct kv_steps *st, struct kv_diag *d)
{
	return steps_write(path, st, NULL, d);
}

int kv_steps_write_fitted(const char *path, const struct kv_steps *st, const double *pred_ns,
			  struct kv_diag *d)
{
	return steps_write(path, st, pred_ns, d);
}

/* The recording executor: the perf model's time, each step appended to the log. */
static int log_step(void *ctx, struct kv_replica *r, kv_ns model_ns, kv_ns *ns)
{
	struct kv_steps *st = ctx;
	struct kv_iter_rec *s;

	if (st->n == st->cap) { /* amortised doubling: once per replay, never in a fit */
		st->cap = st->cap ? 2 * st->cap : 1024;
		st->rec = kv_xrealloc(st->rec, st->cap * sizeof(*st->rec));
	}
	s = &st->rec[st->n++];
	s->shape = r->shape;
	s->model_ns = s->real_ns = model_ns;
	*ns = model_ns;
	return 0;
}

int kv_replay_steps(struct kv_replay *rp, const struct kv_device *dev, struct kv_steps *st,
		    struct kv_diag *d)
{
	struct kv_executor x = { .ctx = st, .iter = log_step };
	struct kv_run_result res;
	int rc;

	memset(st, 0, sizeof(*st));
	snprintf(st->path, sizeof(st->path), "%s", rp->run->path);
	rp->exec = &x;
	rc = kv_replay_run(rp, dev, &res, d);
	rp->exec = NULL;
	rp->w->cfg.exec = NULL;
	kv_run_result_free(&res);
	return rc;
}

int kv_steps_perf(struct kv_replay *rp, const struct kv_device *dev, const struct kv_steps *st,
		  double *pred_ns, struct kv_diag *d)
{
	struct kv_sink sink = { 0 };
	struct kv_sim s;
	size_t i;
	int rc;

	rp->w->cfg.device = *dev;
	rp->w->cfg.exec = NULL;
	if (!(rc = kv_sim_init(&s, &rp->w->cfg, &sink)))
		for (i = 0; i < st->n; i++)
			pred_ns[i] = (double)kv_perf_iter_ns(&s.grp[0].perf, &st->rec[i].shape);
	else
		*d = s.diag;
	kv_sim_release(&s);
	return rc;
}
