/*
 * perf_fit.c -- the grid search behind the A100-80GB coefficients of
 * docs/perf-model.md ("Coefficients"), and the comparison tables A-D there.
 *
 * Reads published measurements (configs/perf-fit/a100.csv: one row per
 * measurement with its table, kind, role and source) and predicts each with
 * the simulator's own perf model (sim/perf.c kv_perf_iter_ns, profiles
 * loaded as kvsim loads them), so a table is exactly what a run computes:
 *   decode   one decode step of `batch` sequences at context prompt +
 *            output/2 (the static batch's median token), ms;
 *   gen      batch-1 generation: the mean decode step at contexts prompt+1 ..
 *            prompt+output-1, ms per token (measured in tok/s);
 *   static   a prefill of `batch` prompts then output-1 decode steps at
 *            growing context, batch*output/total tok/s;
 *   prefill  a prefill of `prompt` tokens at batch 1, ms.
 * Error = predicted/measured - 1 (gen in ms per token, static in tok/s).
 *
 * `fit` runs the grid of the doc with eff_bw fixed by the profile (not
 * fitted): eff_flops 0.50..0.95 by 0.01, overhead 0..3 ms by 0.1 ms, per_seq
 * 0..20 us by 5 us, allreduce_latency 0..14 us by 1 us, and keeps the point
 * with the smallest largest |error| over the rows of role `fit`; a tie (the
 * largest error often sits on a row one coefficient does not touch) goes to
 * the smaller sum of squared errors, then to the first in that order.  Rows
 * of role `heldout` never enter the objective: their errors are reported at
 * the optimum.  Each step is integer ns as the simulator rounds it, so the
 * search is exhaustive (106 950 points), not a descent.
 *
 * usage: perf_fit fit|fit-table|table A|B|C|D [-d DATA] [--embed lookup|charged]
 *                [--head all] [--at F,O,S,A]
 *   fit        prints the optimum and the errors under it (both embedding
 *              models unless --embed names one)
 *   fit-table  the optima as a Markdown table (docs/perf-model.md): charged
 *              with the LM head on every prompt token (the model the first
 *              coefficients were chosen under), charged, looked up
 *   loo        each coefficient's interval: the fit redone without each fit
 *              row in turn, the jackknife sd (configs/perf-fit/intervals.csv,
 *              the device profiles' `uncertainty:` block)
 *   table X    table X at the shipped a100-80g profile, as Markdown
 *   --head all charge the LM head for every prompt token, as the model did
 *              when the shipped coefficients were first chosen (to reproduce them)
 *   --at       no search: the errors at eff_flops F, overhead O us, per_seq S us,
 *              allreduce_latency A us
 * DATA defaults to configs/perf-fit/a100.csv.  Exit 2 on bad input.
 */
#include "perf.h"
#include "profile_load.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum kind { K_DECODE, K_GEN, K_STATIC, K_PREFILL };
enum role { R_FIT, R_HELDOUT, R_SHOWN };

/* One published measurement. */
struct row {
	char table; /* 'A'..'D' */
	enum kind kind; /* what was measured (file header) */
	enum role role; /* fit, heldout or shown */
	char model[64]; /* model profile name */
	uint32_t tp; /* tensor-parallel degree */
	uint32_t batch; /* sequences */
	uint64_t prompt, output; /* tokens */
	double measured; /* ms (decode, prefill) or tok/s (gen, static) */
	char source[32]; /* key of the data file's source list */
	int mi; /* index into the loaded models */
};

#define MAX_ROWS 256
#define MAX_MODELS 8

static struct row rows[MAX_ROWS];
static size_t n_rows;
static struct kv_model models[MAX_MODELS];
static char model_names[MAX_MODELS][64];
static size_t n_models;
/* --head all: charge the LM head for every prompt token (the model before it was charged once per sampled token) */
static int head_all;
/* --at F,O,S,A: evaluate at eff_flops F, overhead O us, per_seq S us, allreduce_latency A us instead of searching */
static int at_set;
static double at[4];

static void die_input(const char *file, unsigned long line, int col, const char *field,
		      const char *val, const char *want)
{
	fprintf(stderr, "%s:%lu:%d: %s: bad value '%s': expected %s\n", file, line, col, field,
		val, want);
	exit(2);
}

static int find_model(const char *name)
{
	struct kv_diag d = { 0 };
	size_t i;
	int err;

	for (i = 0; i < n_models; i++)
		if (!strcmp(model_names[i], name))
			return (int)i;
	if (n_models == MAX_MODELS)
		return -1;
	err = kv_profile_load_model(name, &models[n_models], &d);
	if (err) {
		fprintf(stderr, "model %s: %s: %s:%lu: %s: %s\n", name, kv_strerror(err), d.file,
			d.line, d.field, d.msg);
		return -1;
	}
	snprintf(model_names[n_models], sizeof(model_names[0]), "%s", name);
	return (int)n_models++;
}

static int parse_u64(const char *s, uint64_t lo, uint64_t hi, uint64_t *out)
{
	char *end;
	unsigned long long v;

	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno || end == s || *end || s[0] == '-' || v < lo || v > hi)
		return -1;
	*out = v;
	return 0;
}

/* Parses one data line (fields split at commas) into r; exits 2 naming the field. */
static void parse_row(const char *file, unsigned long ln, char *line, struct row *r)
{
	static const char *names[] = { "table", "kind", "role", "model", "tp", "batch",
				       "prompt", "output", "measured", "source" };
	char *f[10], *p = line, *end;
	int col[10], i;
	uint64_t v;

	for (i = 0; i < 10; i++) {
		f[i] = p;
		col[i] = (int)(p - line) + 1;
		p = strchr(p, ',');
		if (!p && i < 9)
			die_input(file, ln, col[i], names[i + 1], "", "10 comma-separated fields");
		if (p)
			*p++ = '\0';
	}
	if (p)
		die_input(file, ln, col[9], "source", f[9], "10 fields, no more");
	if (strlen(f[0]) != 1 || f[0][0] < 'A' || f[0][0] > 'D')
		die_input(file, ln, col[0], names[0], f[0], "A, B, C or D");
	r->table = f[0][0];
	if (!strcmp(f[1], "decode"))
		r->kind = K_DECODE;
	else if (!strcmp(f[1], "gen"))
		r->kind = K_GEN;
	else if (!strcmp(f[1], "static"))
		r->kind = K_STATIC;
	else if (!strcmp(f[1], "prefill"))
		r->kind = K_PREFILL;
	else
		die_input(file, ln, col[1], names[1], f[1], "decode, gen, static or prefill");
	if (!strcmp(f[2], "fit"))
		r->role = R_FIT;
	else if (!strcmp(f[2], "heldout"))
		r->role = R_HELDOUT;
	else if (!strcmp(f[2], "shown"))
		r->role = R_SHOWN;
	else
		die_input(file, ln, col[2], names[2], f[2], "fit, heldout or shown");
	snprintf(r->model, sizeof(r->model), "%s", f[3]);
	if ((r->mi = find_model(f[3])) < 0)
		die_input(file, ln, col[3], names[3], f[3], "a model profile name");
	if (parse_u64(f[4], 1, 64, &v))
		die_input(file, ln, col[4], names[4], f[4], "an integer 1..64");
	r->tp = (uint32_t)v;
	if (parse_u64(f[5], 1, 4096, &v))
		die_input(file, ln, col[5], names[5], f[5], "an integer 1..4096");
	r->batch = (uint32_t)v;
	if (parse_u64(f[6], 1, 1 << 20, &r->prompt))
		die_input(file, ln, col[6], names[6], f[6], "an integer 1..1048576");
	if (parse_u64(f[7], 1, 1 << 20, &r->output) || (r->kind == K_GEN && r->output < 2))
		die_input(file, ln, col[7], names[7], f[7], "an integer 1..1048576 (gen: >= 2)");
	errno = 0;
	r->measured = strtod(f[8], &end);
	if (errno || end == f[8] || *end || !(r->measured > 0) || !isfinite(r->measured))
		die_input(file, ln, col[8], names[8], f[8], "a positive number");
	snprintf(r->source, sizeof(r->source), "%s", f[9]);
}

static void load_rows(const char *file)
{
	char line[512];
	unsigned long ln = 0;
	FILE *fp = fopen(file, "r");
	int header = 0;

	if (!fp) {
		fprintf(stderr, "%s: %s\n", file, strerror(errno));
		exit(2);
	}
	while (fgets(line, sizeof(line), fp)) {
		ln++;
		line[strcspn(line, "\r\n")] = '\0';
		if (line[0] == '#' || line[0] == '\0')
			continue;
		if (!header) {
			if (strcmp(line, "table,kind,role,model,tp,batch,prompt,output,measured,source"))
				die_input(file, ln, 1, "header", line,
					  "table,kind,role,model,tp,batch,prompt,output,measured,source");
			header = 1;
			continue;
		}
		if (n_rows == MAX_ROWS)
			die_input(file, ln, 1, "table", line, "at most 256 rows");
		parse_row(file, ln, line, &rows[n_rows++]);
	}
	fclose(fp);
	if (!n_rows)
		die_input(file, ln, 1, "table", "", "a header and at least one row");
}

/* ---- predictions: the simulator's perf model ---- */

static void perf(struct kv_perf *pf, const struct row *r, const struct kv_device *dev,
		 int lookup)
{
	kv_perf_init(pf, &models[r->mi], dev, r->tp);
	kv_perf_set_embed_lookup(pf, lookup);
}

/* n sequences each decoding one token at context ctx, ns. */
static double decode_ns(const struct kv_perf *pf, const struct kv_model *m, uint32_t n,
			uint64_t ctx)
{
	struct kv_batch_shape b = { 0 };

	b.n_seqs = b.n_decode = b.n_sample = n;
	b.attn_pairs = (uint64_t)n * ctx;
	b.kv_read_bytes = (uint64_t)n * ctx * kv_model_kv_bytes_per_token(m);
	return (double)kv_perf_iter_ns(pf, &b);
}

/* One prefill iteration of n prompts of p tokens each, ns. */
static double prefill_ns(const struct kv_perf *pf, const struct kv_model *m, uint32_t n,
			 uint64_t p)
{
	struct kv_batch_shape b = { 0 };

	b.n_seqs = n;
	b.n_sample = head_all ? (uint32_t)(n * p) : n;
	b.n_prefill_tokens = (uint64_t)n * p;
	b.attn_pairs = n * kv_perf_prefill_pairs(0, p);
	b.kv_read_bytes = (uint64_t)n * p * kv_model_kv_bytes_per_token(m);
	return (double)kv_perf_iter_ns(pf, &b);
}

/* The prediction of r in its measured unit. */
static double predict(const struct row *r, const struct kv_device *dev, int lookup)
{
	const struct kv_model *m = &models[r->mi];
	struct kv_perf pf;
	double ns = 0;
	uint64_t i;

	perf(&pf, r, dev, lookup);
	switch (r->kind) {
	case K_DECODE:
		return decode_ns(&pf, m, r->batch, r->prompt + r->output / 2) / 1e6;
	case K_GEN:
		for (i = 1; i < r->output; i++)
			ns += decode_ns(&pf, m, 1, r->prompt + i);
		return 1e12 / (ns / (double)(r->output - 1)) / 1e3; /* tok/s */
	case K_STATIC:
		ns = prefill_ns(&pf, m, r->batch, r->prompt);
		for (i = 1; i < r->output; i++)
			ns += decode_ns(&pf, m, r->batch, r->prompt + i);
		return (double)r->batch * (double)r->output / (ns / 1e9);
	case K_PREFILL:
		return prefill_ns(&pf, m, r->batch, r->prompt) / 1e6;
	}
	return NAN;
}

/* predicted/measured - 1; gen compares ms per token (the doc's table B). */
static double rel_err(const struct row *r, double pred)
{
	return r->kind == K_GEN ? r->measured / pred - 1 : pred / r->measured - 1;
}

/* ---- the grid ---- */

struct coef {
	double eff_flops; /* share of peak */
	kv_ns overhead_ns, per_seq_ns, allreduce_ns; /* ns */
};

struct score {
	double max_err, sse; /* over the rows of role fit */
	size_t worst; /* row of max_err */
};

/* The fit rows' errors; tp_sel 1: only tp 1 rows, 2: only tp > 1 rows, 0: all. */
static struct score evaluate(const struct kv_device *dev, int lookup, int tp_sel)
{
	struct score s = { 0, 0, 0 };
	size_t i;

	for (i = 0; i < n_rows; i++) {
		double e;

		if (rows[i].role != R_FIT || (tp_sel == 1 && rows[i].tp > 1) ||
		    (tp_sel == 2 && rows[i].tp == 1))
			continue;
		e = fabs(rel_err(&rows[i], predict(&rows[i], dev, lookup)));
		s.sse += e * e;
		if (e > s.max_err) {
			s.max_err = e;
			s.worst = i;
		}
	}
	return s;
}

static void set_coef(struct kv_device *dev, const struct coef *c)
{
	dev->eff_flops = c->eff_flops;
	dev->overhead_ns = c->overhead_ns;
	dev->per_seq_ns = c->per_seq_ns;
	dev->allreduce_latency_ns = c->allreduce_ns;
}

/*
 * The search.  allreduce_latency only moves the tp > 1 rows, so the tp 1
 * rows are scored once per (eff_flops, overhead, per_seq): the same numbers,
 * a quarter of the work.
 */
static struct coef grid(const struct kv_device *base, int lookup, struct score *best)
{
	struct kv_device dev = *base;
	struct coef c, opt = { 0 };
	int f, o, s, a;

	*best = (struct score){ INFINITY, INFINITY, 0 };
	for (f = 50; f <= 95; f++)
		for (o = 0; o <= 30; o++)
			for (s = 0; s <= 20; s += 5) {
				struct score one;

				c = (struct coef){ f / 100.0, (kv_ns)o * 100000, (kv_ns)s * 1000, 0 };
				set_coef(&dev, &c);
				one = evaluate(&dev, lookup, 1);
				for (a = 0; a <= 14; a++) {
					struct score sc, par;

					c.allreduce_ns = (kv_ns)a * 1000;
					set_coef(&dev, &c);
					par = evaluate(&dev, lookup, 2);
					sc = par.max_err > one.max_err ? par : one;
					sc.sse = one.sse + par.sse;
					if (sc.max_err < best->max_err - 1e-12 ||
					    (sc.max_err <= best->max_err + 1e-12 && sc.sse < best->sse)) {
						*best = sc;
						opt = c;
					}
				}
			}
	return opt;
}

/* Largest and mean |error| over the rows of table t (0: any) and role. */
static void role_errors(const struct kv_device *dev, int lookup, char t, enum role role,
			double *max, double *mean)
{
	size_t i, n = 0;

	*max = *mean = 0;
	for (i = 0; i < n_rows; i++) {
		double e;

		if (rows[i].role != role || (t && rows[i].table != t))
			continue;
		e = fabs(rel_err(&rows[i], predict(&rows[i], dev, lookup)));
		*max = fmax(*max, e);
		*mean += e;
		n++;
	}
	if (n)
		*mean /= (double)n;
}

static struct kv_device load_a100(void)
{
	struct kv_diag d = { 0 };
	struct kv_device dev;
	int err = kv_profile_load_device("a100-80g", &dev, &d);

	if (err) {
		fprintf(stderr, "device a100-80g: %s: %s:%lu: %s: %s\n", kv_strerror(err), d.file,
			d.line, d.field, d.msg);
		exit(2);
	}
	return dev;
}

static const char *embed_name(int lookup)
{
	return lookup ? "looked up" : "charged";
}

static void fit(int lookup, int markdown)
{
	struct kv_device dev = load_a100();
	struct score sc;
	struct coef c;
	const struct row *w;
	double amax, amean, dmax, dmean;

	if (at_set) {
		c = (struct coef){ at[0], (kv_ns)llround(at[1] * 1e3), (kv_ns)llround(at[2] * 1e3),
				   (kv_ns)llround(at[3] * 1e3) };
		set_coef(&dev, &c);
		sc = evaluate(&dev, lookup, 0);
	} else {
		c = grid(&dev, lookup, &sc);
		set_coef(&dev, &c);
	}
	w = &rows[sc.worst];
	role_errors(&dev, lookup, 'A', R_HELDOUT, &amax, &amean);
	role_errors(&dev, lookup, 'D', R_HELDOUT, &dmax, &dmean);
	if (markdown) {
		printf("| %s | %s | %.2f | %.2f | %.1f ms | %g µs | %g µs | %.1f%% (%c, %s, batch %u, %llu/%llu) | %.1f%% | %.1f%% | %.1f%% |\n",
		       embed_name(lookup), head_all ? "every prompt token" : "sampled tokens", dev.eff_bw, c.eff_flops, c.overhead_ns / 1e6,
		       c.per_seq_ns / 1e3, c.allreduce_ns / 1e3, 100 * sc.max_err, w->table,
		       w->model, w->batch, (unsigned long long)w->prompt,
		       (unsigned long long)w->output, 100 * amax, 100 * amean, 100 * dmax);
		return;
	}
	printf("embedding %s: eff_bw %.2f (fixed), eff_flops %.2f, overhead %.1f ms, per_seq %g us, "
	       "allreduce_latency %g us\n",
	       embed_name(lookup), dev.eff_bw, c.eff_flops, c.overhead_ns / 1e6,
	       c.per_seq_ns / 1e3, c.allreduce_ns / 1e3);
	printf("  largest fit error %.2f%% (table %c %s tp %u batch %u %llu/%llu)\n",
	       100 * sc.max_err, w->table, w->model, w->tp, w->batch,
	       (unsigned long long)w->prompt, (unsigned long long)w->output);
	printf("  held out: table A largest %.2f%%, mean |error| %.2f%%; table D (LMDeploy) largest %.2f%%\n",
	       100 * amax, 100 * amean, 100 * dmax);
}

/* ---- the coefficients' intervals (`loo`) ---- */

/* Jackknife standard deviation of x[0..n): sqrt((n-1)/n * sum (x_i - mean)^2). */
static double jackknife_sd(const double *x, size_t n)
{
	double mean = 0, ss = 0;
	size_t i;

	for (i = 0; i < n; i++)
		mean += x[i] / (double)n;
	for (i = 0; i < n; i++)
		ss += (x[i] - mean) * (x[i] - mean);
	return n > 1 ? sqrt((double)(n - 1) / (double)n * ss) : 0.0;
}

/* Root mean square relative error of the held-out decode rows (table A) under dev. */
static double decode_rms(const struct kv_device *dev, int lookup)
{
	double ss = 0;
	size_t i, n = 0;

	for (i = 0; i < n_rows; i++) {
		double e;

		if (rows[i].kind != K_DECODE || rows[i].role != R_HELDOUT)
			continue;
		e = rel_err(&rows[i], predict(&rows[i], dev, lookup));
		ss += e * e;
		n++;
	}
	return n ? sqrt(ss / (double)n) : 0.0;
}

static void loo_line(const char *name, double full, const double *x, size_t n, const char *unit,
		     double scale)
{
	double sd = jackknife_sd(x, n);

	printf("%s,%.6g,%.6g,%.6g,%s,%.4f,leave-one-out jackknife over the %zu fit rows\n", name,
	       full * scale, x[0] * scale, sd * scale, unit, full > 0 ? sd / full : 0.0, n);
}

/*
 * The interval of each fitted coefficient: the grid refitted without each
 * row of role fit in turn (leave-one-out), and the jackknife standard
 * deviation of the n refits (Efron & Stein; Quenouille): sd^2 = (n-1)/n *
 * sum (theta_i - mean)^2.  eff_bw is not fitted (gpt-fast's achieved
 * bandwidth): its relative sd is the rms relative error of the held-out
 * decode rows (table A, bandwidth-bound steps) at the full fit.  Prints a
 * CSV: coefficient, full-fit value, first refit, sd, unit, relative sd, method.
 */
static void loo(int lookup)
{
	struct kv_device dev = load_a100();
	double f[MAX_ROWS], o[MAX_ROWS], ps[MAX_ROWS], ar[MAX_ROWS];
	struct coef full, c;
	struct score sc;
	size_t i, n = 0;

	full = grid(&dev, lookup, &sc);
	for (i = 0; i < n_rows; i++) {
		if (rows[i].role != R_FIT)
			continue;
		rows[i].role = R_SHOWN;
		c = grid(&dev, lookup, &sc);
		rows[i].role = R_FIT;
		f[n] = c.eff_flops;
		o[n] = (double)c.overhead_ns;
		ps[n] = (double)c.per_seq_ns;
		ar[n] = (double)c.allreduce_ns;
		fprintf(stderr, "perf_fit loo: without row %zu (table %c %s tp %u batch %u): eff_flops %.2f overhead %.1f ms per_seq %g us allreduce_latency %g us\n",
			i, rows[i].table, rows[i].model, rows[i].tp, rows[i].batch, c.eff_flops,
			c.overhead_ns / 1e6, c.per_seq_ns / 1e3, c.allreduce_ns / 1e3);
		n++;
	}
	set_coef(&dev, &full);
	printf("coefficient,value,first_refit,sd,unit,rel_sd,method\n");
	loo_line("eff_flops", full.eff_flops, f, n, "", 1);
	loo_line("overhead", (double)full.overhead_ns, o, n, "us", 1e-3);
	loo_line("per_seq", (double)full.per_seq_ns, ps, n, "us", 1e-3);
	loo_line("allreduce_latency", (double)full.allreduce_ns, ar, n, "us", 1e-3);
	printf("eff_bw,%.6g,,,,%.4f,rms relative error of the held-out decode rows (table A) at the full fit\n",
	       dev.eff_bw, decode_rms(&dev, lookup));
}

/* ---- tables A-D at the shipped profile ---- */

static const char *role_mark(const struct row *r)
{
	return r->role == R_FIT ? "fit" : r->role == R_HELDOUT ? "held out" : "not fitted";
}

static void table(char t)
{
	struct kv_device dev = load_a100();
	int lookup = KV_PERF_EMBED_LOOKUP_DEFAULT;
	size_t i;

	switch (t) {
	case 'A':
		printf("| model | batch | prompt / output | context | measured | predicted | error |\n"
		       "| --- | --- | --- | --- | --- | --- | --- |\n");
		break;
	case 'B':
		printf("| model | tp | measured | predicted | error |\n| --- | --- | --- | --- | --- |\n");
		break;
	case 'C':
		printf("| model | batch | input / output | measured | predicted | error |\n"
		       "| --- | --- | --- | --- | --- | --- |\n");
		break;
	default:
		printf("| model | prompt | source | role | measured | predicted | error |\n"
		       "| --- | --- | --- | --- | --- | --- | --- |\n");
	}
	for (i = 0; i < n_rows; i++) {
		const struct row *r = &rows[i];
		double p, e;

		if (r->table != t)
			continue;
		p = predict(r, &dev, lookup);
		e = 100 * rel_err(r, p);
		switch (t) {
		case 'A':
			printf("| %s | %u | %llu / %llu | %llu | %g ms | %.2f ms | %+.1f%% |\n",
			       r->model, r->batch, (unsigned long long)r->prompt,
			       (unsigned long long)r->output,
			       (unsigned long long)(r->prompt + r->output / 2), r->measured, p, e);
			break;
		case 'B':
			printf("| %s | %u | %g tok/s = %.2f ms | %.2f ms | %+.1f%% |\n", r->model, r->tp,
			       r->measured, 1000 / r->measured, 1000 / p, e);
			break;
		case 'C':
			printf("| %s | %u | %llu / %llu | %g tok/s | %.0f tok/s | %+.1f%% |\n", r->model,
			       r->batch, (unsigned long long)r->prompt, (unsigned long long)r->output,
			       r->measured, p, e);
			break;
		default:
			printf("| %s | %llu | %s | %s | %g ms | %.1f ms | %+.1f%% |\n", r->model,
			       (unsigned long long)r->prompt, r->source, role_mark(r), r->measured, p,
			       e);
		}
	}
}

static void usage(void)
{
	fprintf(stderr, "usage: perf_fit fit|fit-table|loo|table A|B|C|D [-d DATA] "
			"[--embed lookup|charged] [--head all] [--at F,O,S,A]\n");
	exit(2);
}

int main(int argc, char **argv)
{
	const char *data = "configs/perf-fit/a100.csv", *cmd, *tab = NULL;
	int embed = -1, i = 2;

	if (argc < 2)
		usage();
	cmd = argv[1];
	if (!strcmp(cmd, "table")) {
		if (argc < 3 || strlen(argv[2]) != 1 || argv[2][0] < 'A' || argv[2][0] > 'D')
			usage();
		tab = argv[2];
		i = 3;
	} else if (strcmp(cmd, "fit") && strcmp(cmd, "fit-table") && strcmp(cmd, "loo")) {
		usage();
	}
	for (; i < argc; i++) {
		if (!strcmp(argv[i], "-d") && i + 1 < argc)
			data = argv[++i];
		else if (!strcmp(argv[i], "--embed") && i + 1 < argc && !strcmp(argv[i + 1], "lookup"))
			embed = 1, i++;
		else if (!strcmp(argv[i], "--embed") && i + 1 < argc && !strcmp(argv[i + 1], "charged"))
			embed = 0, i++;
		else if (!strcmp(argv[i], "--at") && i + 1 < argc &&
			 sscanf(argv[i + 1], "%lf,%lf,%lf,%lf", &at[0], &at[1], &at[2], &at[3]) == 4 &&
			 at[0] > 0 && at[1] >= 0 && at[2] >= 0 && at[3] >= 0)
			at_set = 1, i++;
		else if (!strcmp(argv[i], "--head") && i + 1 < argc && !strcmp(argv[i + 1], "all"))
			head_all = 1, i++;
		else
			usage();
	}
	load_rows(data);
	if (tab) {
		table(tab[0]);
	} else if (!strcmp(cmd, "loo")) {
		loo(embed == 0 ? 0 : KV_PERF_EMBED_LOOKUP_DEFAULT);
	} else if (!strcmp(cmd, "fit-table")) {
		printf("| embedding | LM head in a prefill | eff_bw (fixed) | eff_flops | overhead | per_seq | allreduce_latency | largest fit error (row) | held-out A: largest | held-out A: mean | held-out D (LMDeploy 2048): largest |\n"
		       "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |\n");
		if (!head_all && embed != 1) { /* the model the shipped coefficients were chosen under */
			head_all = 1;
			fit(0, 1);
			head_all = 0;
		}
		if (embed != 1)
			fit(0, 1);
		if (embed != 0)
			fit(1, 1);
	} else {
		if (embed != 1)
			fit(0, 0);
		if (embed != 0)
			fit(1, 0);
	}
	if (fflush(stdout) || ferror(stdout)) {
		perror("perf_fit: stdout");
		return 1;
	}
	return 0;
}
