/*
 * source.c -- the arrival stream: arrival process x length distribution x
 * tenant mix, or a replayed trace.
 *
 * Arrivals.  Poisson: gaps ~ Exp(mean 1/rate).  Gamma: gaps ~ Gamma(k, θ)
 * with k = 1/cv², θ = 1/(rate·k), so E[gap] = kθ = 1/rate and
 * CV = 1/sqrt(k) = cv (cv > 1 is burstier than Poisson, cv = 1 is Poisson).
 * Trace: t = llround(row.t_ns · time_scale).
 *
 * Lengths.  Lognormal is parametrised by its mean m and the sigma σ of the
 * underlying normal: μ = ln m − σ²/2 gives E[X] = exp(μ + σ²/2) = m.
 *
 * Determinism: one mt19937 generator, and per arrival the draws come in a
 * fixed order -- tenant (when more than one), gap, prompt, output -- so a
 * seed fixes the stream.  Time is an integer ns clock to which each gap is
 * added rounded (llround), never a running double, so the clock is exact
 * and the same on every IEEE-754 machine.
 *
 * Memory is constant: the spec copy, one buffered trace row (its hashes are
 * what kv_arrival.hashes points to) and one reader per trace file.
 */
#include "source.h"

#include <gsl/gsl_randist.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#define MAX_GAP_NS 9.2e18 /* below INT64_MAX: llround stays defined */

/* One length distribution in use, with what it needs at draw time. */
struct len_gen {
	const struct kv_length_spec *spec; /* in the source's spec copy; NULL: unused */
	struct kv_trace *trace; /* KV_LEN_TRACE: this generator's own reader */
	double prompt_mu, output_mu; /* lognormal: mean of the underlying normal */
};

struct kv_source {
	struct kv_source_spec spec; /* private copy of the caller's spec */
	gsl_rng *rng; /* mt19937, seeded once at open */
	struct kv_trace *arrivals; /* KV_ARRIVAL_TRACE: the timestamped trace */
	struct len_gen wl; /* workload lengths; spec NULL when the trace row or tenants supply them */
	struct len_gen tenant[KV_MAX_TENANTS]; /* per-tenant overrides; spec NULL when none */
	double cum_share[KV_MAX_TENANTS]; /* running sum of shares; last one is the total */
	uint32_t n_tenants; /* >= 1 */
	uint64_t next_id; /* id of the next arrival */
	kv_ns clock_ns; /* time of the last generated arrival */
	int done; /* the stream has ended; next() keeps returning 0 */
	struct kv_trace_row row; /* the one buffered trace row */
	int row_prio; /* the row that supplied this arrival's lengths gave its priority */
};

/* ---- checking the spec ------------------------------------------------- */

/* Fills d for field where.key ("" where: key alone).  Returns KV_EINVAL. */
static int spec_error(struct kv_diag *d, const char *where, const char *key, const char *fmt,
		      ...) __attribute__((format(printf, 4, 5)));

static int spec_error(struct kv_diag *d, const char *where, const char *key, const char *fmt,
		      ...)
{
	char field[128], msg[512];
	va_list ap;

	snprintf(field, sizeof(field), "%s%s%s", where, *where ? "." : "", key);
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	return kv_diag_set(d, KV_EINVAL, NULL, 0, 0, field, "%s", msg);
}

static int is_pos(double x)
{
	return isfinite(x) && x > 0;
}

static int check_uniform(const struct kv_length_spec *l, const char *where, struct kv_diag *d)
{
	if (l->prompt_min < 1 || l->prompt_min > l->prompt_max)
		return spec_error(d, where, "prompt_min",
				  "bad range %llu..%llu: expected 1 <= prompt_min <= prompt_max",
				  (unsigned long long)l->prompt_min,
				  (unsigned long long)l->prompt_max);
	if (l->output_min > l->output_max)
		return spec_error(d, where, "output_min",
				  "bad range %llu..%llu: expected output_min <= output_max",
				  (unsigned long long)l->output_min,
				  (unsigned long long)l->output_max);
	if (l->prompt_max - l->prompt_min >= UINT32_MAX ||
	    l->output_max - l->output_min >= UINT32_MAX)
		return spec_error(d, where, "prompt_max",
				  "range too wide: expected max - min < 2^32 - 1");
	return 0;
}

static int check_lognormal(const struct kv_length_spec *l, const char *where,
			   struct kv_diag *d)
{
	if (!is_pos(l->prompt_mean))
		return spec_error(d, where, "prompt_mean", "bad value %g: expected > 0 tokens",
				  l->prompt_mean);
	if (!is_pos(l->output_mean))
		return spec_error(d, where, "output_mean", "bad value %g: expected > 0 tokens",
				  l->output_mean);
	if (!isfinite(l->prompt_sigma) || l->prompt_sigma < 0)
		return spec_error(d, where, "prompt_sigma", "bad value %g: expected >= 0",
				  l->prompt_sigma);
	if (!isfinite(l->output_sigma) || l->output_sigma < 0)
		return spec_error(d, where, "output_sigma", "bad value %g: expected >= 0",
				  l->output_sigma);
	return 0;
}

static int check_lengths(const struct kv_length_spec *l, const char *where, struct kv_diag *d)
{
	switch (l->kind) {
	case KV_LEN_FIXED:
		if (l->prompt < 1)
			return spec_error(d, where, "prompt", "bad value 0: expected >= 1 token");
		return 0;
	case KV_LEN_UNIFORM:
		return check_uniform(l, where, d);
	case KV_LEN_LOGNORMAL:
		return check_lognormal(l, where, d);
	case KV_LEN_TRACE:
		if (!l->path[0])
			return spec_error(d, where, "path", "missing: a length trace needs a file");
		return 0;
	}
	return spec_error(d, where, "kind",
			  "bad value %d: expected fixed, uniform, lognormal or trace", (int)l->kind);
}

static int check_arrival(const struct kv_source_spec *sp, struct kv_diag *d)
{
	switch (sp->arrival) {
	case KV_ARRIVAL_DIURNAL:
		if (!(sp->trough >= 0 && sp->trough <= 1))
			return spec_error(d, "", "trough", "bad value %g: expected 0..1", sp->trough);
		if (!sp->period_ns)
			return spec_error(d, "", "period_ns", "bad value 0: expected > 0");
		/* fall through */
	case KV_ARRIVAL_GAMMA:
		if (sp->arrival == KV_ARRIVAL_GAMMA && (!isfinite(sp->cv) || sp->cv < 0))
			return spec_error(d, "", "cv", "bad value %g: expected >= 0", sp->cv);
		/* fall through */
	case KV_ARRIVAL_POISSON:
		if (sp->arrival != KV_ARRIVAL_DIURNAL && isinf(sp->rate_per_s) && sp->rate_per_s > 0) {
			if (!sp->requests)
				return spec_error(d, "", "requests",
						  "unbounded stream at rate inf: set requests");
			return 0;
		}
		if (!is_pos(sp->rate_per_s))
			return spec_error(d, "", "rate_per_s",
					  "bad value %g: expected > 0 arrivals per second",
					  sp->rate_per_s);
		if (!sp->requests && !sp->duration_ns)
			return spec_error(d, "", "requests",
					  "unbounded stream: set requests or duration_ns");
		return 0;
	case KV_ARRIVAL_CLOSED:
		if (!sp->max_concurrency)
			return spec_error(d, "", "max_concurrency",
					  "bad value 0: a closed loop needs its user count (>= 1)");
		if (!sp->requests)
			return spec_error(d, "", "requests", "unbounded closed loop: set requests");
		return 0;
	case KV_ARRIVAL_TRACE:
		if (!is_pos(sp->time_scale))
			return spec_error(d, "", "time_scale", "bad value %g: expected > 0",
					  sp->time_scale);
		if (!sp->trace_path[0])
			return spec_error(d, "", "trace_path",
					  "missing: a trace arrival needs a file");
		return 0;
	}
	return spec_error(d, "", "arrival", "bad value %d: expected poisson, gamma, trace, diurnal or closed",
			  (int)sp->arrival);
}

/* Tenant count and cumulative shares. */
static int setup_tenants(struct kv_source *s, struct kv_diag *d)
{
	const struct kv_source_spec *sp = &s->spec;
	double sum = 0;
	uint32_t i;

	if (sp->n_tenants > KV_MAX_TENANTS)
		return spec_error(d, "", "n_tenants", "bad value %u: expected at most %d",
				  sp->n_tenants, KV_MAX_TENANTS);
	s->n_tenants = sp->n_tenants ? sp->n_tenants : 1;
	for (i = 0; i < sp->n_tenants; i++) {
		char where[48];

		snprintf(where, sizeof(where), "tenants[%u]", i);
		if (!is_pos(sp->tenants[i].share))
			return spec_error(d, where, "share", "bad value %g: expected > 0",
					  sp->tenants[i].share);
		sum += sp->tenants[i].share;
		s->cum_share[i] = sum;
	}
	if (!sp->n_tenants)
		s->cum_share[0] = 1;
	return 0;
}

/* ---- opening traces ---------------------------------------------------- */

/*
 * Reads the first row of t (checking it) and rewinds: a trace without rows
 * is an error, whether it gives arrivals or lengths.  0 or < 0.
 */
static int first_row(struct kv_trace *t, const char *path, struct kv_trace_row *row,
		     struct kv_diag *d)
{
	int r = kv_trace_next(t, row, d);

	if (r < 0)
		return r;
	if (r == 0)
		return kv_diag_set(d, KV_EINVAL, path, 0, 0, "",
				   "no rows: expected at least one request after the header");
	if (kv_trace_rewind(t))
		return kv_diag_set(d, KV_EIO, path, 0, 0, "", "cannot rewind");
	return 0;
}

static int open_arrivals(struct kv_source *s, struct kv_diag *d)
{
	const struct kv_source_spec *sp = &s->spec;
	int err;

	if (sp->arrival != KV_ARRIVAL_TRACE)
		return 0;
	err = kv_trace_open(sp->trace_path, sp->trace_format, &s->arrivals, d);
	if (err)
		return err;
	if (!kv_trace_has_times(s->arrivals))
		return kv_diag_set(d, KV_EINVAL, sp->trace_path, 1, 0, "trace_path",
				   "a %s trace has no arrival times: use a poisson or gamma arrival with it as lengths",
				   kv_trace_format_name(kv_trace_format(s->arrivals)));
	return first_row(s->arrivals, sp->trace_path, &s->row, d);
}

/* Opens a length trace and makes sure it has a row (so cycling terminates). */
static int open_len_trace(struct kv_source *s, struct len_gen *g, struct kv_diag *d)
{
	int r = kv_trace_open(g->spec->path, g->spec->format, &g->trace, d);

	return r ? r : first_row(g->trace, g->spec->path, &s->row, d);
}

/* Checks l and binds it to g (opening its trace). */
static int bind_lengths(struct kv_source *s, struct len_gen *g,
			const struct kv_length_spec *l, const char *where, struct kv_diag *d)
{
	int err = check_lengths(l, where, d);

	if (err)
		return err;
	g->spec = l;
	g->prompt_mu = log(l->prompt_mean) - l->prompt_sigma * l->prompt_sigma / 2;
	g->output_mu = log(l->output_mean) - l->output_sigma * l->output_sigma / 2;
	return l->kind == KV_LEN_TRACE ? open_len_trace(s, g, d) : 0;
}

/* Binds the workload lengths when some tenant uses them, and each override. */
static int setup_lengths(struct kv_source *s, struct kv_diag *d)
{
	const struct kv_source_spec *sp = &s->spec;
	int wl_used = 0, err;
	uint32_t i;

	for (i = 0; i < s->n_tenants; i++) {
		char where[48];

		if (!sp->tenants[i].has_lengths || !sp->n_tenants) {
			wl_used = 1;
			continue;
		}
		snprintf(where, sizeof(where), "tenants[%u].lengths", i);
		err = bind_lengths(s, &s->tenant[i], &sp->tenants[i].lengths, where, d);
		if (err)
			return err;
	}
	if (!wl_used || (sp->arrival == KV_ARRIVAL_TRACE && !sp->lengths_set))
		return 0;
	return bind_lengths(s, &s->wl, &sp->lengths, "lengths", d);
}

int kv_source_open(const struct kv_source_spec *spec, uint64_t seed, struct kv_source **out,
		   struct kv_diag *d)
{
	struct kv_source *s = kv_xcalloc(1, sizeof(*s));
	int err;

	*out = NULL;
	s->spec = *spec;
	err = check_arrival(&s->spec, d);
	if (!err)
		err = setup_tenants(s, d);
	if (!err)
		err = open_arrivals(s, d);
	if (!err)
		err = setup_lengths(s, d);
	if (err)
		goto fail;
	s->rng = gsl_rng_alloc(gsl_rng_mt19937);
	if (!s->rng) /* its only failure is malloc's */
		kv_oom(0);
	gsl_rng_set(s->rng, (unsigned long)(seed ^ (seed >> 32)));
	*out = s;
	return 0;
fail:
	kv_source_close(s);
	return err;
}

void kv_source_close(struct kv_source *s)
{
	uint32_t i;

	if (!s)
		return;
	kv_trace_close(s->arrivals);
	kv_trace_close(s->wl.trace);
	for (i = 0; i < KV_MAX_TENANTS; i++)
		kv_trace_close(s->tenant[i].trace);
	if (s->rng)
		gsl_rng_free(s->rng);
	free(s);
}

/* ---- drawing ----------------------------------------------------------- */

/* Tenant i with probability share_i / sum: one uniform against the running sums. */
static uint32_t draw_tenant(struct kv_source *s)
{
	double u;
	uint32_t i;

	if (s->n_tenants == 1)
		return 0;
	u = gsl_rng_uniform(s->rng) * s->cum_share[s->n_tenants - 1];
	for (i = 0; i + 1 < s->n_tenants; i++)
		if (u < s->cum_share[i])
			return i;
	return s->n_tenants - 1;
}

/* One gap in seconds: exponential, gamma, or constant for gamma with cv 0. */
static double draw_gap_s(struct kv_source *s)
{
	double rate = s->spec.rate_per_s, k;

	if (s->spec.arrival == KV_ARRIVAL_CLOSED || isinf(rate))
		return 0; /* all due at once; no draw, so the lengths' stream is the same */
	if (s->spec.arrival == KV_ARRIVAL_POISSON || s->spec.arrival == KV_ARRIVAL_DIURNAL)
		return gsl_ran_exponential(s->rng, 1.0 / rate);
	if (s->spec.cv == 0)
		return 1.0 / rate;
	k = 1.0 / (s->spec.cv * s->spec.cv);
	return gsl_ran_gamma(s->rng, k, 1.0 / (rate * k));
}

/*
 * The arrival clock would leave the 64-bit nanosecond clock (292 years for
 * a trace's scaled times, 584 for generated ones): names the field that
 * set the pace.  The caller fills in the workload file (the source knows
 * no YAML).
 */
static int clock_overflow(struct kv_source *s, struct kv_diag *d)
{
	const struct kv_source_spec *sp = &s->spec;

	if (sp->arrival == KV_ARRIVAL_TRACE)
		return kv_diag_set(d, KV_ERANGE, NULL, 0, 0, "workload.arrival.time_scale",
				   "bad value %g: request %llu would arrive beyond the 64-bit nanosecond clock (292 years): expected a time_scale that keeps the trace within that",
				   sp->time_scale, (unsigned long long)s->next_id);
	return kv_diag_set(d, KV_ERANGE, NULL, 0, 0, "workload.arrival.rate",
			   "bad value %g: request %llu would arrive beyond the 64-bit nanosecond clock (584 years): expected a rate at which workload.requests or duration ends sooner (mean span = requests / rate)",
			   sp->rate_per_s, (unsigned long long)s->next_id);
}

/* Advances the generated clock by one gap.  0 or KV_ERANGE. */
static int advance_gap(struct kv_source *s, struct kv_diag *d)
{
	double gap_ns = draw_gap_s(s) * 1e9;
	kv_ns g;

	if (!(gap_ns < MAX_GAP_NS))
		return clock_overflow(s, d);
	g = (kv_ns)llround(gap_ns);
	if (g > KV_NS_NEVER - 1 - s->clock_ns)
		return clock_overflow(s, d);
	s->clock_ns += g;
	return 0;
}

/* The diurnal curve at t over its peak: lambda(t) / rate, in [trough, 1]. */
static double diurnal_share(const struct kv_source_spec *sp, kv_ns t)
{
	kv_ns x = (t + sp->period_ns - sp->peak_at_ns % sp->period_ns) % sp->period_ns;
	double phase = 2 * 3.14159265358979323846 * (double)x / (double)sp->period_ns;

	return sp->trough + (1 - sp->trough) * (1 + cos(phase)) / 2;
}

/*
 * Advances the generated clock to the next arrival: one gap, or under
 * diurnal candidates at the peak rate until one is kept (thinning).  0 or
 * KV_ERANGE.
 */
static int advance_clock(struct kv_source *s, struct kv_diag *d)
{
	int rc;

	while (!(rc = advance_gap(s, d)) && s->spec.arrival == KV_ARRIVAL_DIURNAL &&
	       gsl_rng_uniform(s->rng) >= diurnal_share(&s->spec, s->clock_ns))
		if (s->spec.duration_ns && s->clock_ns >= s->spec.duration_ns)
			break; /* past the end: the caller ends the stream */
	return rc;
}

/* A trace time times time_scale, rounded.  0 or KV_ERANGE. */
static int scale_time(struct kv_source *s, kv_ns t, kv_ns *out, struct kv_diag *d)
{
	double x;

	if (s->spec.time_scale == 1.0) {
		*out = t;
		return 0;
	}
	x = (double)t * s->spec.time_scale;
	if (!(x < MAX_GAP_NS))
		return clock_overflow(s, d);
	*out = (kv_ns)llround(x);
	return 0;
}

/* A trace row at t_ns, at or beyond the horizon: names the row. */
static int beyond_horizon(struct kv_source *s, kv_ns t, struct kv_diag *d)
{
	return kv_diag_set(d, KV_ERANGE, s->spec.trace_path, s->row.line, 0, "",
			   "arrival %.6g s after the first row (after time_scale) is beyond the horizon of %.6g s: the timeseries, sampled every outputs.sample_interval until the last request ends, would pass %llu samples; expected a timestamp before it (or a longer outputs.sample_interval, 0 for no timeseries, or workload.duration to stop the trace earlier)",
			   (double)t * 1e-9, (double)s->spec.horizon_ns * 1e-9,
			   (unsigned long long)KV_MAX_SAMPLES);
}

/* The next arrival time into a->t_ns.  1, 0 when the stream ends, or < 0. */
static int next_time(struct kv_source *s, struct kv_arrival *a, struct kv_diag *d)
{
	kv_ns t = 0;
	int r;

	if (s->arrivals) {
		r = kv_trace_next(s->arrivals, &s->row, d);
		if (r <= 0)
			return r;
		r = scale_time(s, s->row.t_ns, &t, d);
		a->origin_file = s->spec.trace_path;
		a->origin_line = s->row.line;
	} else {
		r = advance_clock(s, d);
		t = s->clock_ns;
	}
	if (r < 0)
		return r;
	if (s->spec.duration_ns && t >= s->spec.duration_ns)
		return 0;
	if (s->arrivals && s->spec.horizon_ns && t >= s->spec.horizon_ns)
		return beyond_horizon(s, t, d);
	a->t_ns = t;
	return 1;
}

/* Lengths, hash ids and origin from the buffered row. */
static void take_row(struct kv_source *s, struct kv_arrival *a, const char *path)
{
	a->prompt_tokens = s->row.prompt_tokens;
	a->output_tokens = s->row.output_tokens;
	a->n_hashes = s->row.n_hashes;
	a->hashes = s->row.n_hashes ? s->row.hashes : NULL;
	a->origin_file = path;
	a->origin_line = s->row.line;
	a->priority = s->row.priority;
	s->row_prio = s->row.has_priority;
}

/* Lengths from the next row of a length trace, rewinding at its end.  0 or < 0. */
static int trace_lengths(struct kv_source *s, const struct len_gen *g, struct kv_arrival *a,
			 struct kv_diag *d)
{
	int r = kv_trace_next(g->trace, &s->row, d);

	if (r == 0) {
		if (kv_trace_rewind(g->trace))
			return kv_diag_set(d, KV_EIO, g->spec->path, 0, 0, "", "cannot rewind");
		r = kv_trace_next(g->trace, &s->row, d);
		if (r == 0)
			return kv_diag_set(d, KV_EINVAL, g->spec->path, 0, 0, "",
					   "no rows: expected at least one request after the header");
	}
	if (r < 0)
		return r;
	take_row(s, a, g->spec->path);
	return 0;
}

/* llround(x) clipped to [1, clip] (clip 0: no upper bound). */
static uint64_t round_clip(double x, uint64_t clip)
{
	uint64_t v;

	if (!(x < MAX_GAP_NS))
		x = MAX_GAP_NS;
	v = x < 1 ? 1 : (uint64_t)llround(x);
	if (clip && v > clip)
		v = clip;
	return v;
}

/* Draws (or reads) prompt and output lengths from g into a.  0 or < 0. */
static int gen_lengths(struct kv_source *s, const struct len_gen *g, struct kv_arrival *a,
		       struct kv_diag *d)
{
	const struct kv_length_spec *l = g->spec;

	switch (l->kind) {
	case KV_LEN_FIXED:
		a->prompt_tokens = l->prompt;
		a->output_tokens = l->output;
		return 0;
	case KV_LEN_UNIFORM:
		a->prompt_tokens = l->prompt_min +
				   gsl_rng_uniform_int(s->rng, l->prompt_max - l->prompt_min + 1);
		a->output_tokens = l->output_min +
				   gsl_rng_uniform_int(s->rng, l->output_max - l->output_min + 1);
		return 0;
	case KV_LEN_LOGNORMAL:
		a->prompt_tokens = round_clip(gsl_ran_lognormal(s->rng, g->prompt_mu,
								l->prompt_sigma),
					      l->prompt_clip);
		a->output_tokens = round_clip(gsl_ran_lognormal(s->rng, g->output_mu,
								l->output_sigma),
					      l->output_clip);
		return 0;
	case KV_LEN_TRACE:
		return trace_lengths(s, g, a, d);
	}
	KV_CHECK(0, "length kind %d passed the spec check", (int)l->kind);
}

/* Lengths of arrival a: the tenant's override, the workload's, or the trace row's. */
static int draw_lengths(struct kv_source *s, struct kv_arrival *a, struct kv_diag *d)
{
	const struct len_gen *g = &s->tenant[a->tenant];

	if (!g->spec)
		g = &s->wl;
	if (g->spec)
		return gen_lengths(s, g, a, d);
	KV_CHECK(s->arrivals, "no length source for tenant %u", a->tenant);
	take_row(s, a, s->spec.trace_path);
	return 0;
}

/*
 * a's priority (source.h): its arrival row's, else its lengths row's (set by
 * take_row), else its tenant's request_priority.  arr: the arrival row gave one.
 */
static void set_priority(struct kv_source *s, struct kv_arrival *a, int arr, int32_t prio)
{
	if (arr)
		a->priority = prio;
	else if (!s->row_prio)
		a->priority = s->spec.tenants[a->tenant].request_priority;
}

int kv_source_next(struct kv_source *s, struct kv_arrival *a, struct kv_diag *d)
{
	int32_t prio;
	int r, arr;

	if (s->done || (s->spec.requests && s->next_id >= s->spec.requests))
		return 0;
	memset(a, 0, sizeof(*a));
	a->tenant = draw_tenant(s);
	r = next_time(s, a, d);
	if (r == 0)
		s->done = 1;
	if (r <= 0)
		return r;
	arr = s->arrivals && s->row.has_priority;
	prio = s->row.priority;
	s->row_prio = 0;
	r = draw_lengths(s, a, d);
	if (r < 0)
		return r;
	set_priority(s, a, arr, prio);
	a->id = s->next_id++;
	return 1;
}
