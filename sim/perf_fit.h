/*
 * perf_fit.h -- fitting the perf model's coefficients to measured
 * iteration times (`kvsim calibrate`).
 *
 * The model is perf.h's roofline with every coefficient free:
 *
 *   t = o + s*S + max(M*ib, (F_lay*N + F_head*n_sample)*il) + max(KV*ib, F_attn*pairs*ia)
 *
 * o the fixed cost per iteration (ns), s the cost per sequence (ns), ib the
 * time per byte read from memory (ns/B, 1/(B*eff_bw)), il and ia the times
 * per FLOP of the linear layers and of attention (ns/FLOP, 1/(P*eff_flops)
 * and 1/(P*eff_attn)); M, F_* and KV come from the model and each point's
 * batch shape, as kv_perf_iter_ns() computes them.
 *
 * The fit minimises the squared *relative* residuals (t_model - t)/t, so a
 * 2 ms decode step weighs as much as a 200 ms prefill, by Levenberg-
 * Marquardt (GSL's multifit_nlinear) over the logarithms of the five
 * coefficients, which keeps them positive.  The max() terms make the model
 * piecewise linear in the coefficients; the Jacobian is the active branch's
 * (a subgradient at a kink).  Several starts are tried and the lowest cost
 * kept.  95% confidence intervals come from the covariance at the optimum
 * scaled by the residual variance (delta method back from logarithms).
 *
 * A coefficient the data cannot pin is flagged, not passed off as a value:
 * its term never more than 1% of any point's time (the solver drifts it
 * toward its bound 0: the value is wherever it stopped), an interval with no
 * variance (+- 0 means unknown, not exact) or one as wide as the value (the
 * data do not tell it from zero).  R^2 is NaN when the times do not vary.
 */
#ifndef KV_PERF_FIT_H
#define KV_PERF_FIT_H

#include "perf.h"
#include "profile.h"

#include <stddef.h>

/* One measured iteration. */
struct kv_fit_point {
	struct kv_batch_shape shape;
	double t_ns; /* measured duration (> 0) */
};

enum { KV_FIT_O, KV_FIT_S, KV_FIT_IB, KV_FIT_IL, KV_FIT_IA, KV_FIT_N };

/* Why a coefficient is not determined by the fit (bits of kv_fit.flag). */
enum {
	KV_FIT_AT_BOUND = 1, /* its term is under 1% of every point's time */
	KV_FIT_CI_DEGENERATE = 2, /* zero, negative or non-finite variance: "+- 0" */
	KV_FIT_LOOSE = 4, /* the 95% interval is as wide as the value */
};

struct kv_fit {
	double c[KV_FIT_N]; /* o (ns), s (ns), ib (ns/B), il (ns/FLOP), ia (ns/FLOP) */
	double ci[KV_FIT_N]; /* 95% confidence half-widths, same units */
	unsigned flag[KV_FIT_N]; /* KV_FIT_AT_BOUND | ...; 0 when determined */
	double share[KV_FIT_N]; /* largest share of a point's fitted time the term takes */
	double r2; /* 1 - SS_res/SS_tot over the times; NaN when they do not vary */
	double rms_rel; /* root mean square relative residual */
	double mape; /* mean |relative residual| */
	double max_rel; /* largest |relative residual| */
	size_t n; /* points */
	int iters; /* solver iterations of the kept start */
};

/* Model inputs of a point that do not depend on the coefficients. */
struct kv_fit_terms {
	double S, M, lin_flops, KV, attn_flops;
};

void kv_fit_terms(const struct kv_model *m, const struct kv_batch_shape *b,
		  struct kv_fit_terms *x);

/* The model's time for a point under coefficients c. */
double kv_fit_eval(const double c[KV_FIT_N], const struct kv_fit_terms *x);

/*
 * Fits m's coefficients to n >= 8 points.  Returns 0, KV_EINVAL (too few
 * points, a non-positive time) or KV_ERANGE (the solver failed on every
 * start), with d filled.
 */
int kv_fit_perf(const struct kv_model *m, const struct kv_fit_point *pts, size_t n,
		struct kv_fit *f, struct kv_diag *d);

/*
 * The flags f as words for a CSV cell or a table ("at_bound;ci_degenerate";
 * "" for none), into buf of n bytes; returns buf.
 */
char *kv_fit_flag_words(unsigned f, char *buf, size_t n);

/* One sentence saying what the flags f mean for the coefficient, or "". */
const char *kv_fit_flag_meaning(unsigned f);

/*
 * Writes the fit into a device's perf coefficients so that kv_perf_iter_ns()
 * reproduces kv_fit_eval(): mem_bw_Bps = 1e9/ib with eff_bw 1; flops =
 * 1e9/min(il, ia) with eff_flops and eff_attn the shares that give il and
 * ia; overhead and per_seq from o and s.  Datasheet fields other than those
 * are left alone.
 */
void kv_fit_to_device(const struct kv_fit *f, struct kv_device *dev);

#endif /* KV_PERF_FIT_H */
