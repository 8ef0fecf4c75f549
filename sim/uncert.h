/*
 * uncert.h -- the fitted intervals of the step-time coefficients, and
 * draws from them (`kvsim run --uncertainty N`).
 *
 * Every device coefficient that enters the step time has a row in
 * KV_UNC_COEFS: its profile key, its field of struct kv_device, its kind
 * (a share in (0, 1], or a duration in ns) and its default interval, from
 * the leave-one-out refits of the A100-80GB grid fit
 * (configs/perf-fit/intervals.csv, written by `configs/perf-fit/run.sh
 * KVSIM loo`).  A device profile's `uncertainty:` block overrides any of
 * them.  Adding a coefficient is one line of KV_UNC_COEFS.
 *
 * An interval is a relative standard deviation r (a plain number) and/or
 * an absolute one a (a duration, for a coefficient fitted to 0, where no
 * relative spread can say anything).  A draw multiplies the value by
 * exp(r*z) and adds a*z', z and z' standard normal, independent across
 * coefficients and draws; the result is clipped to [0, 1] for a share
 * (above 0: a share of 0 would be an infinite step) and at 0 for a
 * duration.  exp(r*z) keeps the value positive and its median at the
 * fitted value, so the point estimate is the median draw.  Why
 * independent: the profile keeps one spread per coefficient, which the
 * leave-one-out refits estimate well; their correlations, from 8 refits,
 * would not be (docs/metrics.md "Uncertainty bands" lists them).
 */
#ifndef KV_UNCERT_H
#define KV_UNCERT_H

#include "host.h"
#include "profile.h"

#include <gsl/gsl_rng.h>
#include <stddef.h>

enum kv_unc_kind {
	KV_UNC_SHARE, /* a double in (0, 1] */
	KV_UNC_NS, /* a kv_ns duration */
};

/*
 * X(key, field, kind, relative sd, absolute sd in ns): the defaults are
 * configs/perf-fit/intervals.csv's rel_sd (sd for per_seq, fitted to 0).
 * eff_attn is drawn only when a profile sets it (0 means "eff_flops",
 * which is drawn).  collective_overhead and dequant_flops_per_byte were
 * never fitted: no default interval (a profile may give one).
 */
#define KV_UNC_COEFS(X)                                                  \
	X(eff_bw, eff_bw, KV_UNC_SHARE, 0.0691, 0)                       \
	X(eff_flops, eff_flops, KV_UNC_SHARE, 0.0930, 0)                 \
	X(eff_attn, eff_attn, KV_UNC_SHARE, 0.0930, 0)                   \
	X(overhead, overhead_ns, KV_UNC_NS, 0.4512, 0)                   \
	X(per_seq, per_seq_ns, KV_UNC_NS, 0, 4375)                       \
	X(allreduce_latency, allreduce_latency_ns, KV_UNC_NS, 0.6015, 0) \
	X(collective_overhead, collective_overhead_ns, KV_UNC_NS, 0, 0)

/* One row of KV_UNC_COEFS. */
struct kv_unc_coef {
	const char *name; /* profile key (in `perf:` and `uncertainty:`) */
	size_t offset; /* of the field in struct kv_device */
	enum kv_unc_kind kind; /* share or duration */
	double rel_sd; /* default relative sd */
	double abs_sd_ns; /* default absolute sd, ns */
};

/* The rows, in KV_UNC_COEFS order; kv_unc_n of them (<= KV_UNC_MAX). */
extern const struct kv_unc_coef kv_unc_coefs[];
extern const size_t kv_unc_n;

/* Index of the coefficient named name, or -1. */
int kv_unc_find(const char *name);

/* The coefficients' names, ", "-separated, for error messages. */
const char *kv_unc_names(void);

/* Fills dev->unc with the defaults of KV_UNC_COEFS. */
void kv_unc_defaults(struct kv_device *dev);

/*
 * Draws dev's coefficients from their intervals (dev->unc) into out (a copy
 * of dev with those fields replaced).  Always 2 * kv_unc_n normal draws
 * from rng, in table order, whatever the intervals: a seed fixes every draw.
 */
void kv_unc_draw(const struct kv_device *dev, gsl_rng *rng, struct kv_device *out);

/*
 * Draws the host coefficients (host.h): out is a copy of hp with one
 * standard normal per coefficient in out->unc_z (KV_HOST_NCOEF draws from
 * rng, always); the engine scales coefficient i by exp(rel_sd * z), rel_sd
 * the engine version's fitted interval (0: not drawn).
 */
void kv_unc_draw_host(const struct kv_host_profile *hp, gsl_rng *rng, struct kv_host_profile *out);

/* The seed of the draws' own generator for a workload seed (not the arrivals' stream). */
unsigned long kv_unc_seed(uint64_t seed);

#endif /* KV_UNCERT_H */
