/*
 * fromrun_fit.c -- fitting the perf coefficients to a recorded run by
 * replaying it (fromrun.h, kv_run_fit).
 *
 * Unknowns: eff_bw, eff_flops, overhead and per_seq of the device profile
 * (sim/perf.h: t = overhead + S*per_seq + t_lin + t_attn), and with step
 * records on request (fit_attn) eff_attn, t_attn's FLOP rate: a step's
 * attention pairs, which grow as a chunk's tokens times its context, tell
 * it from the per-token linear and host terms where attention is a visible
 * share of the steps (the CPU backend's prefill chunks: docs/calibration.md),
 * and nowhere else; each bounded and
 * reparametrised by a logistic, v = lo + (hi - lo) / (1 + exp(-x)), so the
 * unconstrained solver never leaves the bounds and a coefficient at a bound
 * (per_seq 0) is approached, not crossed.
 *
 * Residuals: the fit requests by send time in windows of WINDOW; for each
 * window and metric (TTFT, TPOT, E2E), log(sum pred / sum meas).  Relative,
 * so a 20 ms TTFT weighs as much as a 20 s E2E; logs, so over- and
 * under-prediction by the same factor cost the same.  Rejected: per
 * request (a 2% change of overhead re-phases every iteration and moves one
 * request's TTFT up by a whole iteration and another's down: the cost
 * moved by +-2% at random against a systematic 0.5%, and the solver stopped
 * at its start); per quantile of the whole fit part (9 residuals for 4
 * unknowns).  A window keeps the load's shape over time and cancels the
 * shuffling.  A request the replay did not complete counts MISS_FACTOR
 * times its measure.
 *
 * Solver: GSL multifit_nlinear, Levenberg-Marquardt trust region with
 * More's scaling.  Jacobian by forward differences of step FD_STEP in x,
 * computed here rather than by GSL (whose step is sqrt(DBL_EPSILON)|x|):
 * the simulator is a discrete-event model with integer-nanosecond times,
 * so a relative change of 1e-8 in a coefficient moves no event and gives a
 * zero derivative, and a somewhat larger step averages over the batching
 * decisions that flip.  Every replay counts towards max_evals; past it the
 * residual function refuses and the best point seen is kept.
 *
 * Multi-start (kv_run_fit's multi): round 0 screens a grid around the start
 * (one replay a point) and descends from the start and the best few; later
 * rounds screen a grid half as wide around the best point so far; the
 * lowest cost seen is kept (docs/calibration.md "Multi-start": on the
 * self-test's run it reaches a cost below the true coefficients' where one
 * descent stalls above it).
 *
 * Confidence: the covariance (J'J)^-1 at the last Jacobian, scaled by the
 * residual variance cost / (n - p), gives each x a standard error; the 95%
 * interval is x +- 1.96 sd mapped back through the logistic (asymmetric in
 * the coefficient, inside its bounds).
 *
 * Host terms (kv_run_fit's fit_host): sched, sched_seq, prep_token and
 * sample join the unknowns (softplus, like overhead and per_seq), set in the
 * settings' host profile each replay; the replay combines CPU and GPU time
 * as the engine's mode does (host.h), so an async engine's max(CPU, GPU) +
 * sync is fitted as it runs.  With CPU and GPU in sequence the per-step and
 * per-sequence host terms add to overhead and per_seq: the replayed
 * latencies see only the sums, and the split between host and device is
 * wherever the descent stops (docs/calibration.md, "Host terms").
 *
 * KVSIM_FIT_TRACE set in the environment prints every replay's
 * coefficients and cost on stderr (for studying a fit that stalls).
 *
 * Progress (kv_progress_note, in the mode the command chose): the replays
 * run of the cap and the best cost.
 */
#include "fromrun.h"
#include "output.h"

#include <gsl/gsl_blas.h>
#include <gsl/gsl_errno.h>
#include <gsl/gsl_multifit_nlinear.h>
#include <gsl/gsl_vector.h>

#include <assert.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#define FD_STEP 0.1 /* forward-difference step in the logistic coordinate */
#define WINDOW 10 /* requests (consecutive by send time) whose metrics are summed in one residual */
#define MISS_FACTOR 10.0 /* a request not completed in the replay counts as this many times its measure */
#define EDGE 1e-3 /* a logistic start is kept this share of its range inside the bounds */
#define SOFT_START_MIN -1.0 /* a softplus start is at x >= this: v >= 0.31 s */
#define HOST_START_MIN -6.0 /* a host term's start is at x >= this: v >= 0.0025 s, so a 0 stays near 0 */
#define RESTARTS 3 /* trust-region runs of one descent, each from its best point so far */
#define N_GRID 63 /* screened starts of round 0: 3 eff_bw x 3 eff_flops x 7 overhead */
#define N_DESCENTS 7 /* round 0's descents: from the start, and from its 6 best screened starts */
#define REFINE_DESCENTS 3 /* a later round's descents: from its 3 best screened starts */
#define ROUNDS 4 /* rounds of screen and descents, each grid half as wide as the one before */
#define DESCENT_EVALS 250 /* most replays one descent of a multi-start fit runs */
#define GRID_O_BASE 1e6 /* overhead (ns) the grid scales when the start's is 0 */
/*
 * Round 0's grid: the effs at logistic x offsets -1, 0, +1 (0.83 -> 0.64,
 * 0.93; 0.71 -> 0.47, 0.87), the overhead times 2^(i/2), i = -3..3 (0.35x to
 * 2.8x, log scale, both sides of the start).  Round r: offsets +-2^-r, the
 * overhead times 2^(+-2^-r).
 */

const char *const kv_run_fit_name[KV_RFIT_N] = { "eff_bw",  "eff_flops", "overhead",
						 "per_seq", "eff_attn",  "sched",
						 "sched_seq", "prep_token", "sample" };

/*
 * The maps from the solver's x to each coefficient.  eff_bw and eff_flops:
 * logistic into [0.01, 1] (shares of the datasheet peak); eff_attn into
 * [1e-5, 1]: attention on a CPU runs at 0.2% to 0.6% of the peak its
 * profile states (docs/calibration.md), and near its lower bound the
 * logistic is exp(x), so an FD step moves it by 10% wherever it is.
 * overhead and per_seq: softplus, v = s log(1 + e^x) >= 0, with s 1 ms and 10 us: linear
 * (steps of s per unit of x) away from 0, so an FD step moves them by an
 * amount that shows in the iteration time; a logistic over [0, 200 ms]
 * moved a 2 us per_seq by 0.2 us a step, below the replay's noise.  The
 * host's terms: softplus too, sched and sample at the scales of overhead and
 * per_seq (the same kind of term), sched_seq 10 us, prep_token 1 us (an FD
 * step adds 0.1 us a token: 50 us to a 512-token chunk).
 */
static const double lo_of[KV_RFIT_N] = { 0.01, 0.01, 0, 0, 1e-5, 0, 0, 0, 0 };
static const double hi_of[KV_RFIT_N] = { 1, 1, INFINITY, INFINITY, 1, INFINITY, INFINITY, INFINITY, INFINITY };
static const double soft_of[KV_RFIT_N] = { 0, 0, 1e6, 1e4, 0, 1e6, 1e4, 1e3, 1e4 }; /* softplus scale, ns; 0: logistic */
/* The host coefficient (host.h) each fitted host term sets. */
static const enum kv_host_coef host_of[KV_RFIT_N] = {
	[KV_RFIT_SCHED] = KV_HOSTC_SCHED, [KV_RFIT_SCHED_SEQ] = KV_HOSTC_SCHED_SEQ,
	[KV_RFIT_PREP_TOKEN] = KV_HOSTC_PREP_TOKEN, [KV_RFIT_SAMPLE] = KV_HOSTC_SAMPLE,
};

static double to_v(int k, double x)
{
	if (soft_of[k] > 0)
		return soft_of[k] * (x > 30 ? x : log1p(exp(x)));
	return lo_of[k] + (hi_of[k] - lo_of[k]) / (1 + exp(-x));
}

/* x of value v; a start at or near a bound is moved in (there the gradient in x vanishes). */
static double to_x(int k, double v)
{
	double u;

	if (soft_of[k] > 0) {
		u = v / soft_of[k];
		return u > 30 ? u : fmax(log(expm1(fmax(u, 1e-9))),
					 k >= KV_RFIT_DEV_N ? HOST_START_MIN : SOFT_START_MIN);
	}
	u = (v - lo_of[k]) / (hi_of[k] - lo_of[k]);
	u = fmin(fmax(u, EDGE), 1 - EDGE);
	return log(u / (1 - u));
}

/* Device coefficient k of dev; eff_attn the share attention runs at (eff_flops if 0: perf.h). */
static double get_v(const struct kv_device *dev, int k)
{
	if (k == KV_RFIT_ATTN)
		return dev->eff_attn > 0 ? dev->eff_attn : dev->eff_flops;
	return k == KV_RFIT_BW ? dev->eff_bw : k == KV_RFIT_FLOPS ? dev->eff_flops :
	       k == KV_RFIT_OVERHEAD ? (double)dev->overhead_ns : (double)dev->per_seq_ns;
}

static void set_v(struct kv_device *dev, int k, double v)
{
	if (k == KV_RFIT_BW)
		dev->eff_bw = v;
	else if (k == KV_RFIT_FLOPS)
		dev->eff_flops = v;
	else if (k == KV_RFIT_ATTN)
		dev->eff_attn = v;
	else if (k == KV_RFIT_OVERHEAD)
		dev->overhead_ns = (kv_ns)llround(v);
	else
		dev->per_seq_ns = (kv_ns)llround(v);
}

/* Host term k's value in h (ns). */
static double get_host(const struct kv_host_profile *h, int k)
{
	return h->coef[host_of[k]];
}

/* Sets host term k of h to v, whole ns (a host profile holds whole ns, so a rerun is exact). */
static void set_host(struct kv_host_profile *h, int k, double v)
{
	h->coef[host_of[k]] = (double)llround(v);
	h->set |= 1u << host_of[k];
}

struct fit_ctx {
	struct kv_replay *rp;
	struct kv_device base; /* the start device: everything not fitted */
	struct kv_host_profile host_base; /* the start host (fit_host): everything not fitted */
	int ks[KV_RFIT_N], np; /* x[j] is coefficient ks[j], j < np */
	size_t n_win; /* the window residuals; the steps' follow them */
	double *step_pred; /* rp->steps: each step's predicted time, ns */
	double *step_w; /* rp->steps: each step's residual weight, sqrt(its time / the mean) */
	size_t n_fit; /* requests [0, n_fit) are fitted */
	unsigned evals, max_evals;
	int capped;
	int err; /* a replay's error code, 0 when none */
	struct kv_diag *d;
	unsigned stop_at; /* the current descent's share of max_evals ends at this count */
	double best_cost, best_x[KV_RFIT_N]; /* the best point of the current descent */
	double top_cost, top_x[KV_RFIT_N]; /* the best point of the whole fit */
	gsl_vector *last_x, *last_f; /* the last point evaluated and its residuals (for df) */
	int have_last;
};

static double meas_of(const struct kv_run_req *q, int m)
{
	return m == KV_RUN_TTFT ? q->ttft_s : m == KV_RUN_TPOT ? q->tpot_s : q->e2e_s;
}

static double pred_of(const struct kv_req_out *o, int m)
{
	return m == KV_RUN_TTFT ? o->ttft_s : m == KV_RUN_TPOT ? o->tpot_s : o->e2e_s;
}

/*
 * Residuals of a replay into f: for each window of WINDOW requests and each
 * metric with a measured value in the window, log(sum pred / sum meas); a
 * request the replay did not complete counts MISS_FACTOR times its measure.
 * With f NULL, only counts them (the count depends on the run alone).
 */
static size_t residuals(const struct kv_run *run, const struct kv_run_result *res, size_t n_fit,
			gsl_vector *f)
{
	size_t w0, i, j = 0;
	int m;

	for (w0 = 0; w0 < n_fit; w0 += WINDOW) {
		size_t w1 = KV_MIN(w0 + WINDOW, n_fit);

		for (m = 0; m < KV_RUN_METRICS; m++) {
			double sp = 0, sm = 0;

			for (i = w0; i < w1; i++) {
				double y = meas_of(&run->req[i], m), x;

				if (!(y > 0))
					continue;
				sm += y;
				if (!f)
					continue;
				x = i < res->n_req && res->req[i].completed ? pred_of(&res->req[i], m) : NAN;
				sp += x > 0 ? x : MISS_FACTOR * y;
			}
			if (sm > 0 && f)
				gsl_vector_set(f, j, log(sp / sm));
			j += sm > 0;
		}
	}
	assert(!f || j <= f->size); /* the steps' residuals follow */
	return j;
}

/*
 * The steps' residuals into f after the windows': log(predicted / recorded)
 * of each step, weighted by sqrt(its time / the mean step's), so that its
 * squared residual weighs as its share of the run's time: a request's
 * latency is a sum of steps, and a 60 ms mixed step's error moves it three
 * times as much as a 20 ms decode's.  Rejected: equal weights, under which
 * the many decode steps of a run set the per-token terms and the few
 * prefill steps, which make TTFT, were left 10% off (docs/calibration.md).
 */
static int step_residuals(struct fit_ctx *c, const struct kv_device *dev, gsl_vector *f)
{
	const struct kv_steps *st = c->rp->steps;
	size_t i;
	int rc = kv_steps_perf(c->rp, dev, st, c->step_pred, c->d);

	for (i = 0; !rc && i < st->n; i++)
		gsl_vector_set(f, c->n_win + i, c->step_w[i] * log(c->step_pred[i] / (double)st->rec[i].real_ns));
	return rc;
}

/* c->step_pred allocated, c->step_w each step's weight (step_residuals). */
static void step_weights(struct fit_ctx *c, const struct kv_steps *st)
{
	double mean = 0;
	size_t i;

	c->step_pred = kv_xmalloc(st->n * sizeof(*c->step_pred));
	c->step_w = kv_xmalloc(st->n * sizeof(*c->step_w));
	for (i = 0; i < st->n; i++)
		mean += (double)st->rec[i].real_ns / (double)st->n;
	for (i = 0; i < st->n; i++)
		c->step_w[i] = sqrt((double)st->rec[i].real_ns / mean);
}

/* One replay at x; GSL_EMAXITER past the cap, GSL_EFAILED when the replay failed. */
static int eval(struct fit_ctx *c, const gsl_vector *x, gsl_vector *f)
{
	struct kv_device dev = c->base;
	struct kv_run_result res;
	double cost;
	int j, k, rc;

	if (c->evals >= c->max_evals || c->evals >= c->stop_at) {
		c->capped |= c->evals >= c->max_evals;
		return GSL_EMAXITER;
	}
	c->evals++;
	for (j = 0; j < c->np; j++) {
		double v = to_v(k = c->ks[j], gsl_vector_get(x, (size_t)j));

		if (k < KV_RFIT_DEV_N)
			set_v(&dev, k, v);
		else
			set_host(&c->rp->w->cfg.host, k, v);
	}
	if (c->rp->steps) { /* the steps alone: no replay */
		if ((rc = step_residuals(c, &dev, f))) {
			c->err = rc;
			return GSL_EFAILED;
		}
	} else {
		if ((rc = kv_replay_run(c->rp, &dev, &res, c->d))) {
			c->err = rc;
			kv_run_result_free(&res);
			return GSL_EFAILED;
		}
		residuals(c->rp->run, &res, c->n_fit, f);
		kv_run_result_free(&res);
	}
	gsl_blas_ddot(f, f, &cost);
	if (getenv("KVSIM_FIT_TRACE")) {
		fprintf(stderr, "eval %u: %.5f %.5f %.0f %.0f %.6g", c->evals, dev.eff_bw, dev.eff_flops,
			(double)dev.overhead_ns, (double)dev.per_seq_ns, dev.eff_attn);
		for (k = KV_RFIT_DEV_N; k < KV_RFIT_N; k++)
			fprintf(stderr, " %.0f", get_host(&c->rp->w->cfg.host, k));
		fprintf(stderr, " cost %.6g\n", cost);
	}
	if (cost < c->best_cost) {
		c->best_cost = cost;
		for (k = 0; k < c->np; k++)
			c->best_x[k] = gsl_vector_get(x, (size_t)k);
	}
	if (cost < c->top_cost) {
		c->top_cost = cost;
		for (k = 0; k < c->np; k++)
			c->top_x[k] = gsl_vector_get(x, (size_t)k);
	}
	gsl_vector_memcpy(c->last_x, x);
	gsl_vector_memcpy(c->last_f, f);
	c->have_last = 1;
	kv_progress_note(0, "calibrate: fit: replay %u of at most %u, best cost %.6g", c->evals,
			 c->max_evals, c->top_cost);
	return GSL_SUCCESS;
}

static int fit_f(const gsl_vector *x, void *p, gsl_vector *f)
{
	return eval(p, x, f);
}

/* Forward differences from f(x) (the last evaluation when it was at x). */
static int fit_df(const gsl_vector *x, void *p, gsl_matrix *J)
{
	struct fit_ctx *c = p;
	gsl_vector *f0 = gsl_vector_alloc(J->size1), *f1 = gsl_vector_alloc(J->size1);
	gsl_vector *xh = gsl_vector_alloc(x->size);
	size_t j, i;
	int rc = GSL_SUCCESS;

	if (!f0 || !f1 || !xh)
		kv_oom(0);
	if (c->have_last && gsl_vector_equal(c->last_x, x))
		gsl_vector_memcpy(f0, c->last_f);
	else
		rc = eval(c, x, f0);
	for (j = 0; j < x->size && rc == GSL_SUCCESS; j++) {
		gsl_vector_memcpy(xh, x);
		gsl_vector_set(xh, j, gsl_vector_get(x, j) + FD_STEP);
		if ((rc = eval(c, xh, f1)))
			break;
		for (i = 0; i < J->size1; i++)
			gsl_matrix_set(J, i, j, (gsl_vector_get(f1, i) - gsl_vector_get(f0, i)) / FD_STEP);
	}
	gsl_vector_free(f0);
	gsl_vector_free(f1);
	gsl_vector_free(xh);
	return rc;
}

/* The 95% intervals from the covariance at J, scaled by the residual variance. */
static void intervals(gsl_matrix *J, const double *x, double cost, size_t n, struct kv_run_fit *f)
{
	size_t np = (size_t)f->np;
	gsl_matrix *cov = gsl_matrix_alloc(np, np);
	double s2 = n > np ? cost / (double)(n - np) : NAN;
	int k;

	if (!cov)
		kv_oom(0);
	if (gsl_multifit_nlinear_covar(J, 0.0, cov))
		gsl_matrix_set_all(cov, NAN);
	for (k = 0; k < f->np; k++) {
		double sd = sqrt(s2 * gsl_matrix_get(cov, (size_t)k, (size_t)k));
		int kc = f->ks[k]; /* the coefficient of x[k] */
		gsl_vector_view col = gsl_matrix_column(J, (size_t)k);

		if (gsl_blas_dnrm2(&col.vector) == 0)
			sd = NAN; /* no residual moves with it: not determined, its whole range */

		f->lo[kc] = isfinite(sd) ? to_v(kc, x[k] - 1.96 * sd) : lo_of[kc];
		f->hi[kc] = isfinite(sd) ? to_v(kc, x[k] + 1.96 * sd) : hi_of[kc];
	}
	gsl_matrix_free(cov);
}

/* One descent from x0: trust-region runs, each from the descent's best point so far. */
static int descend(struct fit_ctx *c, gsl_multifit_nlinear_fdf *fdf,
		   gsl_multifit_nlinear_workspace *ws, gsl_vector *x0, unsigned budget,
		   unsigned *iters, int *info, double *cost_init)
{
	int k, r, status = GSL_SUCCESS;

	c->stop_at = c->evals + budget;
	c->best_cost = INFINITY;
	for (r = 0; r < RESTARTS && !c->err && c->evals < c->stop_at; r++) {
		double before = c->best_cost;

		if (r)
			for (k = 0; k < c->np; k++)
				gsl_vector_set(x0, (size_t)k, c->best_x[k]);
		status = gsl_multifit_nlinear_init(x0, fdf, ws);
		if (!r && cost_init)
			*cost_init = c->top_cost;
		if (status == GSL_SUCCESS)
			status = gsl_multifit_nlinear_driver(100, 1e-7, 1e-10, 1e-10, NULL, NULL, info, ws);
		*iters += (unsigned)gsl_multifit_nlinear_niter(ws);
		if (r && !(c->best_cost < 0.99 * before))
			break; /* a fresh trust region found nothing better */
	}
	return status;
}

/* A screened start: its cost and place in the grid (ties go to the earlier). */
struct screened {
	double cost, x[KV_RFIT_N];
	int idx;
};

static int by_cost(const void *a, const void *b)
{
	const struct screened *p = a, *q = b;

	return p->cost < q->cost ? -1 : p->cost > q->cost ? 1 : p->idx - q->idx;
}

/* The host the settings resolve to with device dev (engine version, host profile, options). */
static int resolved_host(struct kv_replay *rp, const struct kv_device *dev, struct kv_host *h,
			 struct kv_diag *d)
{
	struct kv_sink sink = { 0 };
	struct kv_sim s;
	int rc;

	rp->w->cfg.device = *dev;
	rp->w->cfg.exec = NULL;
	if (!(rc = kv_sim_init(&s, &rp->w->cfg, &sink)))
		*h = s.grp[0].perf.host;
	else
		*d = s.diag;
	kv_sim_release(&s);
	return rc;
}

/* The settings' host with every coefficient set to h's, the folded ones summed into the fitted four. */
static void fold_host(struct kv_host_profile *hp, const struct kv_host *h)
{
	int i, k;

	for (i = 0; i < KV_HOST_NCOEF; i++) {
		hp->coef[i] = *kv_host_coef((struct kv_host *)h, i);
		hp->set |= 1u << i;
	}
	hp->coef[KV_HOSTC_SCHED_SEQ] += h->prep_seq_ns;
	hp->coef[KV_HOSTC_PREP_TOKEN] += (h->block_ns + h->hash_ns) * h->inv_block_tokens;
	hp->coef[KV_HOSTC_SAMPLE] += h->detok_ns;
	hp->coef[KV_HOSTC_PREP_SEQ] = hp->coef[KV_HOSTC_BLOCK] = 0;
	hp->coef[KV_HOSTC_HASH] = hp->coef[KV_HOSTC_DETOK] = 0;
	for (k = KV_RFIT_DEV_N; k < KV_RFIT_N; k++)
		set_host(hp, k, get_host(hp, k));
}

/*
 * fit_host's start: c->host_base (and the settings' host) is the settings'
 * host resolved for dev, folded (fold_host), so the profile written is the
 * whole host.  KV_EINVAL (the settings' host kept) when the host model is
 * off, or when an engine option pins a fitted term: a probe with each term
 * moved by 1 us must see it move.
 */
static int host_start(struct fit_ctx *c, const struct kv_device *dev, struct kv_run_fit *f,
		      int *async, struct kv_diag *d)
{
	struct kv_host_profile *hp = &c->rp->w->cfg.host, keep = *hp;
	struct kv_host h, probe;
	int k, rc;

	if ((rc = resolved_host(c->rp, dev, &h, d)))
		return rc;
	if (!h.on)
		return kv_diag_set(d, KV_EINVAL, c->rp->w->path, 0, 0, "engine",
				   "the engine runs without the host model (host_model false, or a "
				   "version without one): no host terms to fit; drop --fit-host");
	fold_host(hp, &h);
	c->host_base = *hp;
	f->host_mode = kv_host_mode_name(h.mode);
	*async = h.mode == KV_HOST_ASYNC;
	for (k = KV_RFIT_DEV_N; k < KV_RFIT_N; k++)
		hp->coef[host_of[k]] += 1000;
	rc = resolved_host(c->rp, dev, &probe, d);
	*hp = c->host_base;
	for (k = KV_RFIT_DEV_N; k < KV_RFIT_N && !rc; k++)
		if (fabs(*kv_host_coef(&probe, host_of[k]) - get_host(hp, k) - 1000) > 0.5)
			rc = kv_diag_set(d, KV_EINVAL, c->rp->w->path, 0, 0, "engine",
					 "host_%s is set: an engine option overrides the host "
					 "profile the fit adjusts; remove it to fit the host terms",
					 kv_host_coef_key(host_of[k]));
	if (rc)
		*hp = keep;
	return rc;
}

/*
 * The coefficients fitted into c->ks (c->np of them): the device's four,
 * and eff_attn with fit_attn (held otherwise: where attention is a small
 * share of every step no residual tells it apart, and a free eff_attn
 * moves the host terms; docs/calibration.md); with fit_host the host's
 * four too, but for overhead and per_seq when CPU and GPU run in sequence
 * (not async): they add to sched and sched_seq in
 * every step, so no record tells them apart, and the device keeps its own
 * (the GPU side; docs/host-model.md "The device overhead") while the host
 * takes the rest.  fit_host 2: the host's alone.
 */
static void choose(struct fit_ctx *c, int fit_host, int async, int fit_attn)
{
	int k, seq;

	c->np = 0;
	for (k = 0; k < KV_RFIT_N; k++) {
		seq = k == KV_RFIT_OVERHEAD || k == KV_RFIT_PER_SEQ;
		if (k >= KV_RFIT_DEV_N ? !fit_host : fit_host == 2 || (fit_host && !async && seq))
			continue;
		if (k == KV_RFIT_ATTN && !fit_attn)
			continue;
		c->ks[c->np++] = k;
	}
}

int kv_run_fit(struct kv_replay *rp, const struct kv_device *start, size_t n_fit,
	       unsigned max_evals, int multi, int fit_host, int fit_attn, struct kv_run_fit *f,
	       struct kv_diag *d)
{
	const gsl_multifit_nlinear_type *T = gsl_multifit_nlinear_trust;
	gsl_multifit_nlinear_parameters params = gsl_multifit_nlinear_default_parameters();
	gsl_multifit_nlinear_fdf fdf;
	gsl_multifit_nlinear_workspace *ws;
	struct fit_ctx c = { 0 };
	struct screened grid[N_GRID];
	gsl_vector *x0, *fs;
	double xs[KV_RFIT_N];
	size_t n_res;
	int k, g, n_grid, n_desc, desc, round, info = 0, status = GSL_SUCCESS;
	int top_status = GSL_SUCCESS, top_info = 0, async = 0;
	double top_before;

	assert(n_fit >= 1 && n_fit <= rp->run->n);
	assert(!fit_attn || (rp->steps && fit_host != 2));
	memset(f, 0, sizeof(*f));
	c.rp = rp;
	if (fit_host && (status = host_start(&c, start, f, &async, d)))
		return status;
	choose(&c, fit_host, async, fit_attn);
	f->np = c.np;
	memcpy(f->ks, c.ks, sizeof(f->ks));
	if (!(c.np >= 3 && c.ks[KV_RFIT_OVERHEAD] == KV_RFIT_OVERHEAD))
		multi = 0; /* the grid moves eff_bw, eff_flops and overhead */
	/* with steps, only they are fitted: their residuals are smooth in the coefficients
	 * (no batching re-phases), the requests' are not (module comment) */
	c.n_win = rp->steps ? 0 : residuals(rp->run, NULL, n_fit, NULL);
	n_res = c.n_win + (rp->steps ? rp->steps->n : 0);
	if (n_res <= (size_t)c.np)
		return kv_diag_set(d, KV_EINVAL, rp->run->path, 0, 0, "",
				   "%zu residuals from %zu requests: expected more than %d", n_res,
				   n_fit, c.np);
	f->host0 = f->host = c.host_base;
	if (rp->steps)
		step_weights(&c, rp->steps);
	c.base = *start;
	c.n_fit = n_fit;
	c.max_evals = max_evals;
	c.stop_at = max_evals;
	c.d = d;
	c.best_cost = INFINITY;
	c.top_cost = INFINITY;
	c.last_x = gsl_vector_alloc((size_t)c.np);
	c.last_f = gsl_vector_alloc(n_res);
	x0 = gsl_vector_alloc((size_t)c.np);
	fs = gsl_vector_alloc(n_res);
	if (!c.last_x || !c.last_f || !x0 || !fs)
		kv_oom(0);
	for (k = 0; k < KV_RFIT_N; k++) /* the coefficients not fitted keep their start */
		f->start[k] = f->val[k] = f->lo[k] = f->hi[k] =
			k < KV_RFIT_DEV_N ? get_v(start, k) : get_host(&c.host_base, k);
	for (k = 0; k < c.np; k++) {
		xs[k] = to_x(c.ks[k], f->start[c.ks[k]]);
		gsl_vector_set(x0, (size_t)k, xs[k]);
	}
	fdf = (gsl_multifit_nlinear_fdf){ .f = fit_f, .df = fit_df, .n = n_res, .p = (size_t)c.np,
					   .params = &c };
	params.scale = gsl_multifit_nlinear_scale_more;
	ws = gsl_multifit_nlinear_alloc(T, &params, n_res, (size_t)c.np);
	if (!ws)
		kv_oom(0);
	/*
	 * Round 0 screens the grid around the start (one replay a point) and
	 * descends from the start and the best N_DESCENTS - 1 points; each
	 * further round screens a grid half as wide around the best point so
	 * far and descends from its best REFINE_DESCENTS, until a round gains
	 * less than 1% of the cost.  Without multi: one descent from the start.
	 */
	if (multi && eval(&c, x0, fs) == GSL_SUCCESS)
		f->cost0 = c.top_cost;
	for (round = 0; round < (multi ? ROUNDS : 1) && !c.err && !c.capped; round++) {
		double ctr[KV_RFIT_N], o_ctr, step = ldexp(1.0, -round), round_before = c.top_cost;
		int n_o = round ? 3 : 7;

		memcpy(ctr, round ? c.top_x : xs, sizeof(ctr));
		o_ctr = to_v(KV_RFIT_OVERHEAD, ctr[KV_RFIT_OVERHEAD]);
		if (!(o_ctr > 0))
			o_ctr = GRID_O_BASE;
		n_grid = 0;
		for (g = 0; multi && g < 9 * n_o && !c.err && !c.capped; g++) {
			int ib = g % 3 - 1, ifl = g / 3 % 3 - 1, io = g / 9 - (n_o - 1) / 2;

			if (!ib && !ifl && !io)
				continue; /* the centre itself */
			memcpy(grid[n_grid].x, ctr, sizeof(ctr));
			grid[n_grid].x[KV_RFIT_BW] += ib * step;
			grid[n_grid].x[KV_RFIT_FLOPS] += ifl * step;
			grid[n_grid].x[KV_RFIT_OVERHEAD] =
				to_x(KV_RFIT_OVERHEAD, o_ctr * exp2(io * step * (round ? 1 : 0.5)));
			for (k = 0; k < c.np; k++)
				gsl_vector_set(x0, (size_t)k, grid[n_grid].x[k]);
			grid[n_grid].cost = INFINITY;
			if (eval(&c, x0, fs) == GSL_SUCCESS)
				gsl_blas_ddot(fs, fs, &grid[n_grid].cost);
			grid[n_grid].idx = g;
			n_grid++;
		}
		qsort(grid, (size_t)n_grid, sizeof(grid[0]), by_cost);
		/* round 0 also descends from the start itself */
		n_desc = round ? KV_MIN(n_grid, REFINE_DESCENTS) : 1 + KV_MIN(n_grid, N_DESCENTS - 1);
		for (desc = 0; desc < n_desc && !c.err && !c.capped; desc++) {
			int from = round ? desc : desc - 1;

			for (k = 0; k < c.np; k++)
				gsl_vector_set(x0, (size_t)k, from >= 0 ? grid[from].x[k] : xs[k]);
			top_before = c.top_cost;
			status = descend(&c, &fdf, ws, x0,
					 multi ? KV_MIN(DESCENT_EVALS, c.max_evals - c.evals)
					       : c.max_evals - c.evals,
					 &f->iters, &info, multi ? NULL : &f->cost0);
			if (c.top_cost < top_before || (!round && !desc)) {
				top_status = status;
				top_info = info;
			}
		}
		if (round && !(c.top_cost < 0.99 * round_before))
			break;
	}
	c.stop_at = c.max_evals;
	f->evals = c.evals;
	f->capped = c.capped;
	f->n_res = n_res;
	f->why = c.capped ? "evaluation cap reached" :
		 top_status == GSL_SUCCESS ? (top_info == 1 ? "converged: small step" : "converged: small gradient") :
		 top_status == GSL_EMAXITER ? "iteration cap reached" :
		 gsl_strerror(top_status);
	if (c.err) {
		status = c.err;
	} else if (!isfinite(c.top_cost)) {
		status = kv_diag_set(d, KV_ERANGE, rp->run->path, 0, 0, "",
				     "the least-squares fit failed: %s", gsl_strerror(status));
	} else {
		/* no progress, a cap: the best point seen is the answer */
		status = 0;
		f->cost = c.top_cost;
		f->dev = *start;
		for (g = 0; g < c.np; g++) {
			k = c.ks[g];
			f->val[k] = to_v(k, c.top_x[g]);
			if (k < KV_RFIT_DEV_N)
				set_v(&f->dev, k, f->val[k]);
			else
				set_host(&f->host, k, f->val[k]);
		}
		/*
		 * The Jacobian at the optimum for the intervals: beyond the cap.
		 * Its replays may find a lower cost and move top_x, so the
		 * intervals are taken around the optimum reported, kept in xs.
		 */
		for (k = 0; k < c.np; k++) {
			xs[k] = c.top_x[k];
			gsl_vector_set(x0, (size_t)k, xs[k]);
		}
		c.max_evals = c.evals + (unsigned)c.np + 1;
		c.stop_at = c.max_evals;
		c.have_last = 0;
		if ((status = fit_df(x0, &c, gsl_multifit_nlinear_jac(ws))))
			status = c.err ? c.err : kv_diag_set(d, KV_ERANGE, rp->run->path, 0, 0, "",
							      "the Jacobian at the optimum failed");
		else
			intervals(gsl_multifit_nlinear_jac(ws), xs, f->cost, n_res, f);
	}
	kv_progress_done();
	if (fit_host)
		rp->w->cfg.host = c.host_base; /* the start host again */
	gsl_multifit_nlinear_free(ws);
	gsl_vector_free(x0);
	gsl_vector_free(fs);
	gsl_vector_free(c.last_x);
	gsl_vector_free(c.last_f);
	free(c.step_pred);
	free(c.step_w);
	return status;
}

/* Writes text as YAML comment lines, "# " before each of its lines. */
static void write_comment(FILE *f, const char *text)
{
	const char *p = text;

	while (p && *p) {
		const char *nl = strchr(p, '\n');
		int len = nl ? (int)(nl - p) : (int)strlen(p);

		fprintf(f, "# %.*s\n", len, p);
		p += len + (nl != NULL);
	}
}

int kv_run_write_profile(const char *path, const struct kv_device *dev, const char *header,
			 struct kv_diag *d)
{
	struct kv_atomic a;
	int rc;

	if ((rc = kv_atomic_open(&a, path, d)))
		return rc;
	write_comment(a.f, header);
	fprintf(a.f, "name: %s\nmemory: %llu\n", dev->name, (unsigned long long)dev->mem_bytes);
	if (dev->mem_cuda_bytes)
		fprintf(a.f, "memory_cuda: %llu\n", (unsigned long long)dev->mem_cuda_bytes);
	/* the base profile's link and fp8 rate round-trip (profile.h) */
	if (dev->link_type != KV_LINK_DATASHEET)
		fprintf(a.f, "interconnect: %s\ninterconnect_busbw: %.9gGB/s\n",
			kv_link_name(dev->link_type), dev->link_busbw_Bps / 1e9);
	if (dev->flops_fp8 > 0)
		fprintf(a.f, "fp8_tflops: %.9g\n", dev->flops_fp8 / 1e12);
	fprintf(a.f,
		"mem_bandwidth: %.9gGB/s\nfp16_tflops: %.9g\nhost_link_bandwidth: %.9gGB/s\n"
		"interconnect_bandwidth: %.9gGB/s\n"
		"perf:\n  eff_bw: %.17g\n  eff_flops: %.17g\n  eff_attn: %.17g\n  overhead: %lluns\n"
		"  per_seq: %lluns\n  allreduce_latency: %lluns\n  dequant_flops_per_byte: %.9g\n",
		dev->mem_bw_Bps / 1e9, dev->flops / 1e12, dev->host_link_Bps / 1e9,
		dev->interconnect_Bps / 1e9, dev->eff_bw, dev->eff_flops, dev->eff_attn,
		(unsigned long long)dev->overhead_ns, (unsigned long long)dev->per_seq_ns,
		(unsigned long long)dev->allreduce_latency_ns, dev->dequant_flops_per_byte);
	if (dev->collective_overhead_ns) /* the base profile's, round-tripped */
		fprintf(a.f, "  collective_overhead: %lluns\n",
			(unsigned long long)dev->collective_overhead_ns);
	fprintf(a.f, "cost:\n  alpha: %.9g\nsource: kvsim calibrate --from-run (see the comment above)\n",
		dev->alpha);
	return kv_atomic_commit(&a, d);
}

int kv_run_write_host(const char *path, const struct kv_host_profile *h, const char *header,
		      struct kv_diag *d)
{
	struct kv_atomic a;
	int rc, i;

	if ((rc = kv_atomic_open(&a, path, d)))
		return rc;
	write_comment(a.f, header);
	fprintf(a.f, "name: %s\nsource: \"kvsim calibrate --from-run --fit-host (see the comment above)\"\n"
		     "cpu_speed: %.9g\ncoefficients:\n",
		h->name, h->cpu_speed > 0 ? h->cpu_speed : 1.0);
	for (i = 0; i < KV_HOST_NCOEF; i++) /* whole ns: what the fit replayed */
		fprintf(a.f, "  %s: %lldns\n", kv_host_coef_key(i), (long long)llround(h->coef[i]));
	return kv_atomic_commit(&a, d);
}
