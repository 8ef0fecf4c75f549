/*
 * test_vtc.c -- the Virtual Token Counter scheduler: the paper's bound on
 * the service difference of two backlogged tenants (against fifo, whose
 * difference grows with time), fifo equivalence with one tenant,
 * determinism, token conservation, bad options.
 *
 * Service is measured the way the paper defines it and the scheduler
 * charges it: W = w_p * prompt tokens computed + w_q * output tokens
 * generated, summed over a tenant's completed and running requests at each
 * timeseries sample (the `full` cache with `reserve: request` never
 * preempts, so running requests' progress is exact).
 */
#include "output.h"
#include "simtest.h"
#include "testutil.h"

#include <check.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* What a run left: per request ends, and the service samples. */
struct rec {
	struct ends ends;
	/* service sampling (two tenants, weights w_p, w_q) */
	double wp, wq;
	double tw[2]; /* tenant weights: the difference is W_0 / tw[0] - W_1 / tw[1] */
	int sampling;
	uint64_t n_samples, n_back; /* samples, samples with both tenants backlogged */
	double d_min, d_max; /* W_0 - W_1 over backlogged samples */
	double d_last; /* at the last backlogged sample */
	double raw_last; /* W_0 - W_1 unweighted, at the last backlogged sample */
	kv_ns t_first_back, t_last_back; /* first and last backlogged sample */
	double d_at[8192]; /* W_0 - W_1 at every backlogged sample */
	kv_ns t_at[8192];
};

static int rec_request(void *ctx, const struct kv_sim *s, const struct kv_req *q, enum kv_end e)
{
	struct rec *r = ctx;

	return ends_request(&r->ends, s, q, e);
}

/* W of tenant t now: completed requests plus the progress of running ones. */
static double service(const struct rec *r, const struct kv_sim *s, uint32_t t, uint64_t *running)
{
	const struct kv_replica *rep = &s->rep[0];
	double w = r->wp * (double)s->tenant[t].prompt_tokens + r->wq * (double)s->tenant[t].output_tokens;
	uint32_t i;

	*running = 0;
	for (i = 0; i < rep->n_running; i++) {
		const struct kv_req *q = rep->running[i];

		if (q->tenant != t)
			continue;
		++*running;
		w += r->wp * (double)KV_MIN(q->kv_tokens, q->prompt_tokens) + r->wq * (double)q->generated;
	}
	return w;
}

static int rec_sample(void *ctx, const struct kv_sim *s, kv_ns t_ns)
{
	struct rec *r = ctx;
	uint64_t run0, run1, wait0, wait1;
	double w0, w1, d;

	if (!r->sampling)
		return 0;
	w0 = service(r, s, 0, &run0);
	w1 = service(r, s, 1, &run1);
	wait0 = s->tenant[0].arrived - s->tenant[0].completed - s->tenant[0].rejected - run0;
	wait1 = s->tenant[1].arrived - s->tenant[1].completed - s->tenant[1].rejected - run1;
	r->n_samples++;
	if (!wait0 || !wait1 || r->n_back == KV_ARRAY_LEN(r->d_at))
		return 0;
	d = w0 / r->tw[0] - w1 / r->tw[1];
	if (!r->n_back++) {
		r->d_min = r->d_max = d;
		r->t_first_back = t_ns;
	}
	r->d_min = fmin(r->d_min, d);
	r->d_max = fmax(r->d_max, d);
	r->d_last = d;
	r->raw_last = w0 - w1;
	r->t_last_back = t_ns;
	r->d_at[r->n_back - 1] = d;
	r->t_at[r->n_back - 1] = t_ns;
	return 0;
}

static void run(struct kv_workload *w, struct rec *r, struct kv_sim *s, int check_pool)
{
	struct kv_sink sink = { .ctx = r, .request = rec_request, .sample = rec_sample };

	sim_start(w, s, &sink, check_pool);
	sim_finish(s);
	ends_check(&r->ends);
}

static struct rec *rec_new(double wp, double wq)
{
	struct rec *r = calloc(1, sizeof(*r));

	ck_assert_ptr_nonnull(r);
	r->wp = wp;
	r->wq = wq;
	r->tw[0] = r->tw[1] = 1;
	r->sampling = 1;
	return r;
}

/*
 * Two tenants, one sending twice the other's rate, both far above their
 * share of one replica (13B on a 40 GB card at a 0.8 share: a pool of a few
 * thousand tokens, so the bound is small next to the service).
 */
#define OVERLOAD(sched)                                                              \
	"model: llama-2-13b\ndevice: a100-40g\nmemory: {share: 0.8}\n"                \
	"scheduler: " sched "\ncache: {name: full, reserve: request}\n"              \
	"workload:\n  requests: 3000\n  arrival: {process: poisson, rate: 30}\n"     \
	"  lengths: {dist: uniform, prompt_min: 20, prompt_max: 400, output_min: 20, " \
	"output_max: 400}\n"                                                         \
	"  tenants:\n    - {name: heavy, share: 2}\n    - {name: light, share: 1}\n" \
	"outputs: {sample_interval: 0.25s}\n"

#define L_INPUT 400.0 /* the longest prompt above */

/* The paper's bound 2U, U = max(w_p L, max(w_p, w_q) M), for a run's pool. */
static double vtc_bound(const struct kv_sim *s, double wp, double wq)
{
	double M = (double)s->grp[0].pool_bytes / s->rep[0].beta_bytes;

	return 2 * fmax(wp * L_INPUT, fmax(wp, wq) * M);
}

/* The difference at the backlogged sample closest to time t. */
static double d_near(const struct rec *r, kv_ns t)
{
	uint64_t i;

	for (i = 0; i + 1 < r->n_back && r->t_at[i] < t; i++)
		;
	return r->d_at[i];
}

/* VTC keeps the service difference of backlogged tenants within the paper's bound; fifo does not. */
START_TEST(vtc_bounded_fifo_grows)
{
	struct kv_workload w;
	struct kv_sim s;
	struct rec *r = rec_new(1, 2);
	double bound, vtc_spread, fifo_end, fifo_quarter;
	kv_ns span;

	load(&w, OVERLOAD("vtc"));
	run(&w, r, &s, 0);
	bound = vtc_bound(&s, 1, 2);
	vtc_spread = r->d_max - r->d_min;
	ck_assert_uint_eq(r->ends.completed, 3000);
	ck_assert_msg(r->n_back > 400, "only %llu backlogged samples: raise the load",
		      (unsigned long long)r->n_back);
	fprintf(stderr,
		"vtc: M = %.0f tokens, bound 2U = %.0f; over %llu backlogged samples (%.1f s) "
		"W_heavy - W_light in [%.0f, %.0f], spread %.0f\n",
		(double)s.grp[0].pool_bytes / s.rep[0].beta_bytes, bound, (unsigned long long)r->n_back,
		(double)(r->t_last_back - r->t_first_back) / 1e9, r->d_min, r->d_max, vtc_spread);
	ck_assert_msg(vtc_spread <= bound, "VTC service difference spread %.0f above the bound %.0f",
		      vtc_spread, bound);
	kv_sim_release(&s);
	kv_workload_release(&w);

	free(r);
	r = rec_new(1, 2);
	load(&w, OVERLOAD("fifo"));
	run(&w, r, &s, 0);
	span = r->t_last_back - r->t_first_back;
	fifo_end = r->d_last;
	fifo_quarter = d_near(r, r->t_first_back + span / 4);
	fprintf(stderr,
		"fifo: over %llu backlogged samples (%.1f s) W_heavy - W_light %.0f at a quarter, "
		"%.0f at the end (%.1f x the vtc bound)\n",
		(unsigned long long)r->n_back, (double)span / 1e9, fifo_quarter, fifo_end,
		fifo_end / bound);
	ck_assert_msg(fifo_end > 2.5 * fifo_quarter && fifo_quarter > 0,
		      "fifo difference %.0f at the end, %.0f at a quarter: expected growth",
		      fifo_end, fifo_quarter);
	ck_assert_msg(fifo_end > 10 * bound, "fifo difference %.0f, not 10 x the bound %.0f",
		      fifo_end, bound);
	kv_sim_release(&s);
	kv_workload_release(&w);
	free(r);
}
END_TEST

/* Weights: a tenant of weight 2 gets twice the service of one of weight 1, within the bound. */
START_TEST(vtc_weighted)
{
	struct kv_workload w;
	struct kv_sim s;
	struct rec *r = rec_new(1, 2);
	double bound, spread;

	load(&w, "model: llama-2-13b\ndevice: a100-40g\nmemory: {share: 0.8}\n"
		 "scheduler: vtc\ncache: {name: full, reserve: request}\n"
		 "workload:\n  requests: 2000\n  arrival: {process: poisson, rate: 30}\n"
		 "  lengths: {dist: uniform, prompt_min: 20, prompt_max: 400, output_min: 20, output_max: 400}\n"
		 "  tenants:\n    - {name: gold, share: 1, weight: 2}\n    - {name: base, share: 1}\n"
		 "outputs: {sample_interval: 0.25s}\n");
	r->tw[0] = 2;
	run(&w, r, &s, 0);
	bound = vtc_bound(&s, 1, 2); /* divided by the smaller weight, 1 */
	spread = r->d_max - r->d_min;
	ck_assert_msg(r->n_back > 200, "only %llu backlogged samples", (unsigned long long)r->n_back);
	fprintf(stderr, "weighted vtc: W_gold/2 - W_base in [%.0f, %.0f] over %.1f s, bound %.0f\n",
		r->d_min, r->d_max, (double)(r->t_last_back - r->t_first_back) / 1e9, bound);
	ck_assert_msg(spread <= bound, "weighted spread %.0f above the bound %.0f", spread, bound);
	/* and the split is 2:1, not 1:1: the unweighted difference left the bound */
	ck_assert_msg(r->raw_last > 4 * bound, "W_gold - W_base %.0f: gold not served twice base",
		      r->raw_last);
	kv_sim_release(&s);
	kv_workload_release(&w);
	free(r);
}
END_TEST

#define PRESSURE(sched, tenants)                                                     \
	"model: llama-2-13b\ndevice: a100-40g\nscheduler: " sched "\n"                \
	"cache: chunked\nmemory: {min_block: 8MiB}\n"                                \
	"workload:\n  requests: 150\n  arrival: {process: poisson, rate: 40}\n"      \
	"  lengths: {dist: uniform, prompt_min: 200, prompt_max: 1200, output_min: 200, " \
	"output_max: 900}\n" tenants "outputs: {sample_interval: 0}\n"

/* One tenant: vtc is fifo, preemptions included (identical finish times). */
START_TEST(vtc_single_tenant_is_fifo)
{
	struct kv_workload w;
	struct kv_sim s;
	struct rec *a = rec_new(1, 2), *b = rec_new(1, 2);
	uint64_t i, pre;

	load(&w, PRESSURE("fifo", ""));
	run(&w, a, &s, 1);
	pre = s.preemptions;
	ck_assert_msg(pre > 0, "no preemption: raise the load");
	kv_sim_release(&s);
	kv_workload_release(&w);
	load(&w, PRESSURE("vtc", ""));
	run(&w, b, &s, 1);
	ck_assert_uint_eq(s.preemptions, pre);
	ck_assert_uint_eq(b->ends.completed, 150);
	for (i = 0; i < 150; i++)
		ck_assert_msg(a->ends.finish[i] == b->ends.finish[i],
			      "request %llu: fifo %llu ns, vtc %llu ns", (unsigned long long)i,
			      (unsigned long long)a->ends.finish[i],
			      (unsigned long long)b->ends.finish[i]);
	kv_sim_release(&s);
	kv_workload_release(&w);
	free(a);
	free(b);
}
END_TEST

/* Same config and seed: identical runs (three tenants, memory pressure, preemptions). */
START_TEST(vtc_deterministic)
{
	static const char *const yaml = PRESSURE("{name: vtc, input_weight: 1, output_weight: 3}",
		"  tenants:\n    - {name: a, share: 3}\n    - {name: b, share: 1, weight: 2}\n"
		"    - {name: c, share: 1}\n");
	struct kv_workload w;
	struct kv_sim s;
	struct rec *a = rec_new(1, 3), *b = rec_new(1, 3);
	uint64_t pre;

	a->sampling = b->sampling = 0;
	load(&w, yaml);
	run(&w, a, &s, 1);
	pre = s.preemptions;
	ck_assert_msg(pre > 0, "no preemption");
	kv_sim_release(&s);
	kv_workload_release(&w);
	load(&w, yaml);
	run(&w, b, &s, 1);
	ck_assert_uint_eq(s.preemptions, pre);
	ck_assert_uint_eq(a->ends.completed, 150);
	ck_assert_int_eq(memcmp(a->ends.finish, b->ends.finish, sizeof(a->ends.finish)), 0);
	ck_assert_int_eq(memcmp(a->ends.first, b->ends.first, sizeof(a->ends.first)), 0);
	kv_sim_release(&s);
	kv_workload_release(&w);
	free(a);
	free(b);
}
END_TEST


/* Bad options stop the run with a message naming the field. */
START_TEST(vtc_bad_options)
{
	expect_bad_sched("{name: vtc, input_weight: -1}", 1, "scheduler.input_weight", "-1");
	expect_bad_sched("{name: vtc, output_weight: nope}", 1, "scheduler.output_weight", "nope");
	expect_bad_sched("{name: vtc, weight: 2}", 1, "scheduler.weight", "");
	expect_bad_sched("{name: vtc, input_weight: 0, output_weight: 0}", 0, "scheduler.input_weight",
		   "expected at least one above 0");
}
END_TEST

static Suite *vtc_suite(void)
{
	Suite *s = suite_create("vtc");
	TCase *tc = tcase_create("core");

	tcase_add_test(tc, vtc_bounded_fifo_grows);
	tcase_add_test(tc, vtc_weighted);
	tcase_add_test(tc, vtc_single_tenant_is_fifo);
	tcase_add_test(tc, vtc_deterministic);
	tcase_add_test(tc, vtc_bad_options);
	tcase_set_timeout(tc, 300);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return kv_test_run_suite(vtc_suite());
}
