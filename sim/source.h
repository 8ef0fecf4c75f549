/*
 * source.h -- the stream of arriving requests a run replays.
 *
 * A source combines an arrival process with a length distribution and a
 * tenant mix, or reads all three (times and lengths) from a trace:
 *
 *   arrival   poisson(rate)            exponential gaps, mean 1/rate
 *             gamma(rate, cv)          gamma gaps, mean 1/rate, coefficient of variation cv
 *             trace(time_scale)        the trace's own timestamps multiplied by time_scale
 *             closed                   every request due at 0 (a closed loop: the engine's
 *                                      client gate, gate.h, sends each when a user is free)
 *             poisson and gamma take rate = inf: every gap 0 without a draw (all due at 0)
 *             diurnal(rate, trough, peak_at, period)
 *                                      Poisson with a daily rate curve: lambda(t) =
 *                                      rate * (trough + (1 - trough) * (1 + cos(2 pi
 *                                      (t - peak_at) / period)) / 2), rate the peak;
 *                                      drawn by thinning (Lewis and Shedler 1979):
 *                                      candidates at rate, each kept with probability
 *                                      lambda(t) / rate (one uniform draw after its gap)
 *   lengths   fixed(prompt, output)
 *             uniform(prompt_min..max, output_min..max)  inclusive integers
 *             lognormal(prompt_mean, prompt_sigma, output_mean, output_sigma)
 *                 mean of the distribution in tokens and sigma of the underlying normal;
 *                 clipped to [1, max] (prompt) and [1, max] (output)
 *             trace                    lengths from a trace file (cycled when it ends
 *                                      before the request count)
 *   tenants   each arrival draws a tenant with probability share/sum(shares); a
 *             tenant may override the lengths.
 *
 * The run ends after `requests` arrivals or when the next arrival would be
 * at or after `duration_ns` (whichever is set; a trace also ends at EOF).
 * All draws come from one seeded GSL generator in a fixed order (tenant,
 * gap, lengths), so a seed fixes the stream.  Memory is constant: one trace
 * row is buffered.
 *
 * Details a caller may rely on:
 *  - a generated stream starts at 0 and its first arrival is at the first
 *    gap; each gap is drawn in double seconds and added to an integer ns
 *    clock as llround(gap_s * 1e9), so times are exact and reproducible;
 *  - gamma with cv == 0 is the degenerate case: constant gaps of 1/rate;
 *  - lognormal draws round to the nearest integer, then clip to [1, clip]
 *    (prompt and output alike; clip 0 means [1, inf));
 *  - with a timestamped trace and !lengths_set the row supplies the lengths
 *    and hash ids; a tenant with has_lengths overrides them (then no hashes);
 *  - every trace length spec (workload's, each tenant's) gets its own reader
 *    cycled with kv_trace_rewind(); a trace with no rows (a header alone)
 *    is an error at open, for arrivals as for lengths (a run of zero
 *    requests from an empty file is more likely a mistake than a wish);
 *  - a trace arrival at or after horizon_ns (after time_scale, and when
 *    duration_ns has not ended the stream first) is an error naming the
 *    row: the workload sets the horizon so that the timeseries, sampled
 *    every sample interval until the last request ends, stays within
 *    KV_MAX_SAMPLES rows (a stray year-2200 timestamp would otherwise make
 *    the run write billions of samples of an idle cluster);
 *  - a request's priority (kv_arrival.priority, vLLM's: lower first) is its
 *    arrival row's `priority` field when the arrival trace has one, else its
 *    lengths row's, else its tenant's request_priority (0 by default); it
 *    takes no draw, so streams without priorities are unchanged;
 *  - origin_file/origin_line name the row that supplied the lengths, or the
 *    arrival row when the lengths were drawn; NULL/0 when all was drawn;
 *  - a draw of the tenant happens only when there are two or more tenants;
 *  - the 64-bit seed is folded to the generator's 32 bits as
 *    seed ^ (seed >> 32), so seeds below 2^32 are used unchanged.
 */
#ifndef KV_SOURCE_H
#define KV_SOURCE_H

#include "trace.h"

#include <gsl/gsl_rng.h>

#define KV_MAX_TENANTS 64
/*
 * Timeseries samples a run may take: 1e8 rows (several GB of CSV).  A
 * generated workload spanning more is rejected at load (src/lib/workload.c), a
 * trace at the first row beyond it (horizon_ns).
 */
#define KV_MAX_SAMPLES 100000000ULL

/* closed: every request is due at 0 (as rate inf) and the client gate (gate.h) paces them */
enum kv_arrival_kind {
	KV_ARRIVAL_POISSON,
	KV_ARRIVAL_GAMMA,
	KV_ARRIVAL_TRACE,
	KV_ARRIVAL_DIURNAL,
	KV_ARRIVAL_CLOSED,
};
enum kv_length_kind { KV_LEN_FIXED, KV_LEN_UNIFORM, KV_LEN_LOGNORMAL, KV_LEN_TRACE };

struct kv_length_spec {
	enum kv_length_kind kind; /* default KV_LEN_FIXED */
	uint64_t prompt, output; /* fixed: tokens */
	uint64_t prompt_min, prompt_max; /* uniform: inclusive bounds, tokens */
	uint64_t output_min, output_max; /* uniform: inclusive bounds, tokens */
	double prompt_mean, prompt_sigma; /* lognormal: mean tokens, sigma of log */
	double output_mean, output_sigma; /* lognormal: mean tokens, sigma of log */
	uint64_t prompt_clip, output_clip; /* lognormal: upper clip, tokens (0 = none) */
	char path[1024]; /* trace: absolute or resolved path */
	enum kv_trace_format format; /* trace: format, default auto */
};

struct kv_tenant_spec {
	char name[32]; /* tenant name, unique */
	double share; /* share of arrivals, > 0 (normalised over tenants) */
	double weight; /* fairness weight, > 0, default 1 */
	int priority; /* scheduling priority, higher first, default 0 */
	int32_t request_priority; /* priority its requests carry when no trace row gives one (vLLM's: lower first), default 0 */
	int has_lengths; /* 1 if `lengths` overrides the workload's */
	struct kv_length_spec lengths; /* per-tenant lengths */
	char model[64]; /* the model its requests ask for (a group's model name); "": the first group's */
};

struct kv_source_spec {
	uint64_t requests; /* number of arrivals, 0 = unbounded (then duration_ns is required) */
	kv_ns duration_ns; /* stop arrivals at this time, 0 = unbounded */
	enum kv_arrival_kind arrival; /* default poisson */
	double rate_per_s; /* poisson/gamma: mean arrivals per second; INFINITY: every gap 0 (no draw) */
	double cv; /* gamma: coefficient of variation of gaps, >= 0, default 1 (0: constant gaps) */
	double time_scale; /* trace: multiply timestamps by this, default 1 */
	double trough; /* diurnal: the least rate over the peak rate, in [0, 1], default 0.25 */
	kv_ns peak_at_ns; /* diurnal: time of the peak within the period, default 14 h */
	kv_ns period_ns; /* diurnal: the curve's period, default 24 h */
	uint64_t max_concurrency; /* requests the client keeps outstanding at most (gate.h), 0 = no limit */
	kv_ns think_ns; /* closed: a user's completion -> its next request, ns, default 0 */
	char trace_path[1024]; /* trace arrival: the timestamped trace (its lengths are used unless overridden) */
	enum kv_trace_format trace_format; /* default auto */
	kv_ns horizon_ns; /* trace: an arrival at or after this is an error naming the row; 0 = none */
	struct kv_length_spec lengths; /* workload-wide lengths (ignored for a timestamped trace unless set) */
	int lengths_set; /* 1 when lengths were given explicitly */
	uint32_t n_tenants; /* <= KV_MAX_TENANTS; 0 is taken as one tenant of share 1 without overrides */
	struct kv_tenant_spec tenants[KV_MAX_TENANTS];
};

/* One arrival. */
struct kv_arrival {
	uint64_t id; /* 0, 1, 2, ... in arrival order */
	kv_ns t_ns; /* arrival time */
	uint64_t prompt_tokens; /* >= 1 */
	uint64_t output_tokens; /* >= 0 */
	uint32_t tenant; /* index into spec tenants */
	int32_t priority; /* request priority, lower first: the trace row's, else the tenant's request_priority */
	uint32_t n_hashes; /* prefix-block hashes (trace only) */
	const uint64_t *hashes; /* valid until the next kv_source_next() */
	const char *origin_file; /* file of the row (for error messages), or NULL */
	unsigned long origin_line; /* line of the row, 0 when generated */
};

struct kv_source;

/*
 * Copies and checks spec, opens its trace files and seeds the generator.
 * Returns 0 and *out, or a negative code with d filled (a bad spec field:
 * KV_EINVAL naming it; a trace: the reader's errors).
 */
int kv_source_open(const struct kv_source_spec *spec, uint64_t seed, struct kv_source **out,
		   struct kv_diag *d);

/* Next arrival: 1 read, 0 when the stream has ended, negative with d filled on a bad row. */
int kv_source_next(struct kv_source *s, struct kv_arrival *a, struct kv_diag *d);

/* Closes the trace files and frees the source; NULL is a no-op. */
void kv_source_close(struct kv_source *s);

#endif /* KV_SOURCE_H */
