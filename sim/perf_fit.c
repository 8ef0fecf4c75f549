/* perf_fit.c -- least-squares fit of the perf model; see perf_fit.h. */
#include "perf_fit.h"

#include <gsl/gsl_blas.h>
#include <gsl/gsl_cdf.h>
#include <gsl/gsl_matrix.h>
#include <gsl/gsl_multifit_nlinear.h>
#include <gsl/gsl_vector.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

void kv_fit_terms(const struct kv_model *m, const struct kv_batch_shape *b,
		  struct kv_fit_terms *x)
{
	double head = kv_model_head_flops(m);
	double lay = kv_model_linear_flops_per_token(m) - head;

	x->S = b->n_seqs;
	/* the weights a step reads: the untied input embedding is looked up (perf.h) */
	x->M = (double)kv_model_weight_bytes(m) -
	       (KV_PERF_EMBED_LOOKUP_DEFAULT && !m->tie_embeddings
			? (double)m->vocab * m->hidden * m->dtype_bytes
			: 0.0);
	x->lin_flops = lay * (double)(b->n_decode + b->n_prefill_tokens) + head * b->n_sample;
	x->KV = (double)b->kv_read_bytes;
	x->attn_flops = kv_model_attn_flops_per_pair(m) * (double)b->attn_pairs;
}

double kv_fit_eval(const double c[KV_FIT_N], const struct kv_fit_terms *x)
{
	return c[KV_FIT_O] + c[KV_FIT_S] * x->S +
	       fmax(x->M * c[KV_FIT_IB], x->lin_flops * c[KV_FIT_IL]) +
	       fmax(x->KV * c[KV_FIT_IB], x->attn_flops * c[KV_FIT_IA]);
}

struct fit_data {
	const struct kv_fit_terms *x;
	const double *t;
	size_t n;
};

/* The coefficients c = exp(phi) of the point phi the solver works on. */
static void coeffs_at(const gsl_vector *phi, double *c)
{
	size_t i;

	for (i = 0; i < KV_FIT_N; i++)
		c[i] = exp(gsl_vector_get(phi, i));
}

/* Relative residuals at phi = log(coefficients). */
static int fit_f(const gsl_vector *phi, void *p, gsl_vector *r)
{
	const struct fit_data *fd = p;
	double c[KV_FIT_N];
	size_t i;

	coeffs_at(phi, c);
	for (i = 0; i < fd->n; i++)
		gsl_vector_set(r, i, kv_fit_eval(c, &fd->x[i]) / fd->t[i] - 1.0);
	return GSL_SUCCESS;
}

/*
 * g[k] = c_k * d t / d c_k at x: each coefficient's part of the model's time,
 * on the active branch of each max (a subgradient at a kink).
 */
static void term_parts(const double c[KV_FIT_N], const struct kv_fit_terms *x,
		       double g[KV_FIT_N])
{
	memset(g, 0, KV_FIT_N * sizeof(*g));
	g[KV_FIT_O] = c[KV_FIT_O];
	g[KV_FIT_S] = c[KV_FIT_S] * x->S;
	if (x->M * c[KV_FIT_IB] >= x->lin_flops * c[KV_FIT_IL])
		g[KV_FIT_IB] += x->M * c[KV_FIT_IB];
	else
		g[KV_FIT_IL] = x->lin_flops * c[KV_FIT_IL];
	if (x->KV * c[KV_FIT_IB] >= x->attn_flops * c[KV_FIT_IA])
		g[KV_FIT_IB] += x->KV * c[KV_FIT_IB];
	else
		g[KV_FIT_IA] = x->attn_flops * c[KV_FIT_IA];
}

/* d r_i / d phi_k = c_k * d t_i / d c_k / t_i. */
static int fit_df(const gsl_vector *phi, void *p, gsl_matrix *J)
{
	const struct fit_data *fd = p;
	double c[KV_FIT_N];
	size_t i;

	coeffs_at(phi, c);
	for (i = 0; i < fd->n; i++) {
		double g[KV_FIT_N], inv = 1.0 / fd->t[i];
		size_t k;

		term_parts(c, &fd->x[i], g);
		for (k = 0; k < KV_FIT_N; k++)
			gsl_matrix_set(J, i, k, g[k] * inv);
	}
	return GSL_SUCCESS;
}

/* Runs LM from start c0; returns the cost (sum of squares) or INFINITY. */
static double solve(const struct fit_data *fd, const double c0[KV_FIT_N], double c[KV_FIT_N],
		    gsl_matrix *covar, int *iters)
{
	gsl_multifit_nlinear_parameters prm = gsl_multifit_nlinear_default_parameters();
	gsl_multifit_nlinear_fdf fdf;
	gsl_multifit_nlinear_workspace *w;
	gsl_vector *phi = gsl_vector_alloc(KV_FIT_N);
	gsl_vector *f;
	double cost = INFINITY, chisq;
	int info, status;
	size_t k;

	prm.trs = gsl_multifit_nlinear_trs_lm;
	fdf.f = fit_f;
	fdf.df = fit_df;
	fdf.fvv = NULL;
	fdf.n = fd->n;
	fdf.p = KV_FIT_N;
	fdf.params = (void *)fd;
	for (k = 0; k < KV_FIT_N; k++)
		gsl_vector_set(phi, k, log(c0[k]));
	w = gsl_multifit_nlinear_alloc(gsl_multifit_nlinear_trust, &prm, fd->n, KV_FIT_N);
	gsl_multifit_nlinear_init(phi, &fdf, w);
	status = gsl_multifit_nlinear_driver(500, 1e-10, 1e-10, 1e-12, NULL, NULL, &info, w);
	f = gsl_multifit_nlinear_residual(w);
	gsl_blas_ddot(f, f, &chisq);
	if ((status == GSL_SUCCESS || status == GSL_EMAXITER) && isfinite(chisq)) {
		coeffs_at(gsl_multifit_nlinear_position(w), c);
		gsl_multifit_nlinear_covar(gsl_multifit_nlinear_jac(w), 0.0, covar);
		*iters = (int)gsl_multifit_nlinear_niter(w);
		cost = chisq;
	}
	gsl_multifit_nlinear_free(w);
	gsl_vector_free(phi);
	return cost;
}

/*
 * kv_fit.flag of a coefficient c +- ci whose covariance diagonal (log
 * space, before the residual variance) is cov, its term's largest share.
 */
static unsigned flags_of(double c, double ci, double cov, double share)
{
	unsigned fl = 0;

	if (!(share >= 0.01))
		fl |= KV_FIT_AT_BOUND;
	if (!(cov > 0) || !isfinite(cov) || !isfinite(ci))
		fl |= KV_FIT_CI_DEGENERATE;
	else if (ci >= c)
		fl |= KV_FIT_LOOSE;
	return fl;
}

char *kv_fit_flag_words(unsigned f, char *buf, size_t n)
{
	snprintf(buf, n, "%s%s%s%s%s", f & KV_FIT_AT_BOUND ? "at_bound" : "",
		 (f & KV_FIT_AT_BOUND) && (f & ~(unsigned)KV_FIT_AT_BOUND) ? ";" : "",
		 f & KV_FIT_CI_DEGENERATE ? "ci_degenerate" : "",
		 (f & KV_FIT_CI_DEGENERATE) && (f & KV_FIT_LOOSE) ? ";" : "",
		 f & KV_FIT_LOOSE ? "not_identified" : "");
	return buf;
}

const char *kv_fit_flag_meaning(unsigned f)
{
	if (f & KV_FIT_AT_BOUND)
		return "its term is under 1% of every point's time, so the data do not set it: "
		       "the value is wherever the solver left it near its bound 0";
	if (f & KV_FIT_CI_DEGENERATE)
		return "its interval has no variance (+- 0 means unknown, not exact): "
		       "the data do not constrain it";
	if (f & KV_FIT_LOOSE)
		return "its 95% interval is as wide as the value: the data do not tell it "
		       "from zero (it trades off against another term)";
	return "";
}

int kv_fit_perf(const struct kv_model *m, const struct kv_fit_point *pts, size_t n,
		struct kv_fit *f, struct kv_diag *d)
{
	struct kv_fit_terms *x;
	double *t, tmin = INFINITY, best = INFINITY, mean = 0, ss_tot = 0, ss_res = 0;
	double lin_max = 0, attn_max = 0, t_lin = 0, t_attn = 0;
	gsl_matrix *covar, *cv;
	struct fit_data fd;
	gsl_error_handler_t *old;
	size_t i, k;
	int a, b;

	memset(f, 0, sizeof(*f));
	if (n < 2 * KV_FIT_N)
		return kv_diag_set(d, KV_EINVAL, "", 0, 0, "points",
				   "%zu measured points: expected at least %d", n, 2 * KV_FIT_N);
	x = kv_xmalloc(n * sizeof(*x));
	t = kv_xmalloc(n * sizeof(*t));
	for (i = 0; i < n; i++) {
		if (!(pts[i].t_ns > 0) || !isfinite(pts[i].t_ns)) {
			free(x);
			free(t);
			return kv_diag_set(d, KV_EINVAL, "", 0, 0, "points",
					   "point %zu has time %g ns: expected a positive time", i,
					   pts[i].t_ns);
		}
		kv_fit_terms(m, &pts[i].shape, &x[i]);
		t[i] = pts[i].t_ns;
		tmin = fmin(tmin, t[i]);
		mean += t[i] / (double)n;
		if (x[i].lin_flops > lin_max) {
			lin_max = x[i].lin_flops;
			t_lin = t[i];
		}
		if (x[i].attn_flops > attn_max) {
			attn_max = x[i].attn_flops;
			t_attn = t[i];
		}
	}
	fd.x = x;
	fd.t = t;
	fd.n = n;
	covar = gsl_matrix_alloc(KV_FIT_N, KV_FIT_N);
	cv = gsl_matrix_alloc(KV_FIT_N, KV_FIT_N);
	old = gsl_set_error_handler_off();
	/*
	 * Starts: the fixed cost and the weight read share the smallest time in
	 * a few proportions; the FLOP rates are what the largest points would
	 * need alone, scaled down.  A grid of 3 x 3 starts is cheap (the points
	 * number in hundreds) and keeps the solver out of a branch's plateau.
	 */
	for (a = 0; a < 3; a++) {
		for (b = 0; b < 3; b++) {
			static const double share[3] = { 0.2, 0.5, 0.8 }, scale[3] = { 1, 0.3, 0.05 };
			double c0[KV_FIT_N], c[KV_FIT_N], cost;
			int it = 0;

			c0[KV_FIT_O] = tmin * (1 - share[a]) * 0.9;
			c0[KV_FIT_S] = tmin * 0.01;
			c0[KV_FIT_IB] = tmin * share[a] / x[0].M;
			c0[KV_FIT_IL] = lin_max > 0 ? t_lin * scale[b] / lin_max : 1e-3;
			c0[KV_FIT_IA] = attn_max > 0 ? t_attn * scale[b] / attn_max : 1e-3;
			cost = solve(&fd, c0, c, cv, &it);
			if (cost < best) {
				best = cost;
				memcpy(f->c, c, sizeof(c));
				gsl_matrix_memcpy(covar, cv);
				f->iters = it;
			}
		}
	}
	gsl_set_error_handler(old);
	if (!isfinite(best)) {
		gsl_matrix_free(covar);
		gsl_matrix_free(cv);
		free(x);
		free(t);
		return kv_diag_set(d, KV_ERANGE, "", 0, 0, "fit",
				   "the least-squares solver failed from every start on %zu points", n);
	}
	for (i = 0; i < n; i++) {
		double p = kv_fit_eval(f->c, &x[i]), rel = p / t[i] - 1, g[KV_FIT_N];

		term_parts(f->c, &x[i], g);
		for (k = 0; k < KV_FIT_N; k++)
			f->share[k] = fmax(f->share[k], p > 0 ? g[k] / p : 0);
		ss_res += (p - t[i]) * (p - t[i]);
		ss_tot += (t[i] - mean) * (t[i] - mean);
		f->rms_rel += rel * rel;
		f->mape += fabs(rel);
		f->max_rel = fmax(f->max_rel, fabs(rel));
	}
	f->n = n;
	f->r2 = ss_tot > 0 ? 1 - ss_res / ss_tot : NAN; /* no variation: nothing to explain */
	f->rms_rel = sqrt(f->rms_rel / (double)n);
	f->mape /= (double)n;
	{
		/* sigma^2 = cost / (n - p); half-width in log space, mapped back */
		double s2 = best / (double)(n - KV_FIT_N);
		double tq = gsl_cdf_tdist_Pinv(0.975, (double)(n - KV_FIT_N));

		for (k = 0; k < KV_FIT_N; k++) {
			double cov = gsl_matrix_get(covar, k, k), v = cov * s2;

			f->ci[k] = f->c[k] * tq * sqrt(v > 0 ? v : 0);
			f->flag[k] = flags_of(f->c[k], f->ci[k], cov, f->share[k]);
		}
	}
	gsl_matrix_free(covar);
	gsl_matrix_free(cv);
	free(x);
	free(t);
	return 0;
}

void kv_fit_to_device(const struct kv_fit *f, struct kv_device *dev)
{
	double fast = fmin(f->c[KV_FIT_IL], f->c[KV_FIT_IA]);

	dev->mem_bw_Bps = 1e9 / f->c[KV_FIT_IB];
	dev->eff_bw = 1.0;
	dev->flops = 1e9 / fast;
	dev->eff_flops = fast / f->c[KV_FIT_IL];
	dev->eff_attn = fast / f->c[KV_FIT_IA];
	dev->overhead_ns = (kv_ns)llround(f->c[KV_FIT_O]);
	dev->per_seq_ns = (kv_ns)llround(f->c[KV_FIT_S]);
}
