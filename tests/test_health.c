/*
 * test_health.c -- the health report's verdicts (src/lib/health.c): a
 * check passes or warns only on the evidence for it, and says n/a with the
 * reason otherwise.  A small run gives the simulator state; the growth
 * check is fed hand-made samples (struct kv_mem_trend) so that the load
 * and the growth are exactly known; the fairness rules are driven through
 * the run's per-tenant counters, which kv_health_compute() only reads.
 */
#include "health.h"
#include "metrics.h"
#include "simtest.h"
#include "testutil.h"
#include "workload.h"

#include <check.h>
#include <math.h>
#include <string.h>

/* Two tenants, 150 requests at 10 req/s: enough completed requests for a p99. */
static const char *const RUN =
	"model: tiny\ndevice: a100-80g\ncache: chunked\nscheduler: fifo\n"
	"workload:\n  requests: 150\n  arrival: {process: poisson, rate: 10}\n"
	"  lengths: {dist: fixed, prompt: 64, output: 16}\n"
	"  tenants: [{name: a, share: 1}, {name: b, share: 1}]\n";

struct fixture {
	struct kv_workload w;
	struct kv_sim s;
	struct kv_summary sum;
	struct kv_health h;
};

static void run(struct fixture *f, const char *yaml)
{
	load(&f->w, yaml);
	sim_start(&f->w, &f->s, NULL, 0);
	sim_finish(&f->s);
	kv_summary_compute(&f->s, NULL, &f->sum);
}

static void release(struct fixture *f)
{
	kv_sim_release(&f->s);
	kv_workload_release(&f->w);
}

/* The check named name of h. */
static const struct kv_health_check *get(const struct kv_health *h, const char *name)
{
	size_t i;

	for (i = 0; i < h->n; i++)
		if (!strcmp(h->c[i].name, name))
			return &h->c[i];
	ck_abort_msg("no check %s", name);
	return NULL;
}

/* Asserts check name has status st and a cause containing part ("" for an empty cause). */
static void expect(const struct kv_health *h, const char *name, enum kv_health_status st,
		   const char *part)
{
	const struct kv_health_check *c = get(h, name);

	ck_assert_msg(c->status == st && (*part ? strstr(c->cause, part) != NULL : !c->cause[0]),
		      "%s: %s (value %g) '%s', expected %s with '%s'", name,
		      kv_health_status_name(c->status), c->value, c->cause, kv_health_status_name(st),
		      part);
	ck_assert_msg(st != KV_HEALTH_NA || (isnan(c->value) && c->cause[0]),
		      "%s: an n/a must have no value (%g) and a reason ('%s')", name, c->value, c->cause);
}

/*
 * n samples one second apart, 4 arrivals a second; reserved grows by
 * grow (a share of pool) a second; running is run1 before sample switch_at
 * and run2 from it; waiting wait.
 */
static void trend(struct kv_mem_trend *m, size_t n, double pool, double grow, double run1,
		  double run2, size_t switch_at, double wait)
{
	size_t i;

	memset(m, 0, sizeof(*m));
	for (i = 0; i < n; i++)
		kv_mem_trend_add(m, (double)i, grow * pool * (double)i, 0.5 * grow * pool * (double)i,
				 i < switch_at ? run1 : run2, wait, 4.0 * (double)i, 0);
}

/*
 * 40 samples: the window is samples 10..39, halves 10..24 and 25..39
 * (means at 17 and 32 s), so growing by 0.01 of the pool a second moves
 * the mean by 0.15 of it.
 */
START_TEST(growth_needs_flat_load)
{
	struct fixture *f = calloc(1, sizeof(*f));
	struct kv_mem_trend *m = malloc(sizeof(*m));
	double pool;

	run(f, RUN);
	pool = (double)f->s.grp[0].pool_bytes * f->s.n_rep;
	/* flat load, growth 0.15 > 0.10: warns */
	trend(m, 40, pool, 0.01, 10, 10, 0, 0);
	kv_health_compute(&f->s, &f->w, &f->sum, NULL, m, &f->h);
	expect(&f->h, "mem_growth", KV_HEALTH_WARN, "reserved KV rose 0.15 of the pool");
	ck_assert_double_eq_tol(get(&f->h, "mem_growth")->value, 0.15, 1e-9);
	/* the batch doubles between the halves: memory that follows it cannot be judged */
	trend(m, 40, pool, 0.01, 10, 20, 25, 0);
	kv_health_compute(&f->s, &f->w, &f->sum, NULL, m, &f->h);
	expect(&f->h, "mem_growth", KV_HEALTH_NA,
	       "load not flat: running 10 to 20 between the halves of the arrival window "
	       "(reserved KV moved +0.15 of the pool with it)");
	/* nor can no growth at a changing load pass: the target is defined at flat load */
	trend(m, 40, pool, 0, 20, 10, 25, 0);
	kv_health_compute(&f->s, &f->w, &f->sum, NULL, m, &f->h);
	expect(&f->h, "mem_growth", KV_HEALTH_NA, "load not flat: running 20 to 10");
	/* a queue of 0 vs 1 is flat (within 1 request); 2 vs 6 is not */
	trend(m, 40, pool, 0, 10, 10, 0, 1);
	kv_health_compute(&f->s, &f->w, &f->sum, NULL, m, &f->h);
	expect(&f->h, "mem_growth", KV_HEALTH_PASS, "");
	ck_assert_double_eq(get(&f->h, "mem_growth")->value, 0);
	trend(m, 40, pool, 0, 10, 10, 0, 2);
	m->waiting[m->n - 1] = 92; /* the second half's mean waiting: (14 * 2 + 92) / 15 = 8 */
	kv_health_compute(&f->s, &f->w, &f->sum, NULL, m, &f->h);
	expect(&f->h, "mem_growth", KV_HEALTH_NA, "load not flat: waiting 2 to 8");
	/* too few samples, one sample, none */
	trend(m, 6, pool, 0.01, 10, 10, 0, 0);
	kv_health_compute(&f->s, &f->w, &f->sum, NULL, m, &f->h);
	expect(&f->h, "mem_growth", KV_HEALTH_NA, "5 samples in the arrival window");
	trend(m, 1, pool, 0.01, 10, 10, 0, 0);
	kv_health_compute(&f->s, &f->w, &f->sum, NULL, m, &f->h);
	expect(&f->h, "mem_growth", KV_HEALTH_NA, "one timeseries sample");
	kv_health_compute(&f->s, &f->w, &f->sum, NULL, NULL, &f->h);
	expect(&f->h, "mem_growth", KV_HEALTH_NA, "no timeseries samples");
	release(f);
	free(m);
	free(f);
}
END_TEST

/* Fairness needs two tenants that asked for something, and some service to compare. */
START_TEST(fairness_needs_two_tenants_served)
{
	struct fixture *f = calloc(1, sizeof(*f));
	double jain;

	run(f, RUN);
	ck_assert_msg(f->s.tenant[0].arrived > 0 && f->s.tenant[1].arrived > 0, "both tenants arrive");
	kv_health_compute(&f->s, &f->w, &f->sum, NULL, NULL, &f->h);
	jain = get(&f->h, "fairness")->value;
	ck_assert_msg(!isnan(jain) && get(&f->h, "fairness")->status != KV_HEALTH_NA,
		      "two served tenants: judged (%g)", jain);
	f->s.tenant[1].arrived = 0; /* as if b had brought nothing */
	kv_health_compute(&f->s, &f->w, &f->sum, NULL, NULL, &f->h);
	expect(&f->h, "fairness", KV_HEALTH_NA, "1 of 2 tenants brought requests (a ");
	expect(&f->h, "fairness", KV_HEALTH_NA, ", b 0): nothing to share");
	f->s.tenant[1].arrived = 1;
	f->s.tenant[0].service = f->s.tenant[1].service = 0;
	kv_health_compute(&f->s, &f->w, &f->sum, NULL, NULL, &f->h);
	expect(&f->h, "fairness", KV_HEALTH_NA, "no service delivered to any tenant");
	release(f);
	free(f);
}
END_TEST

/* The tail ratio needs 100 completed requests; 150 are judged, 99 are not. */
START_TEST(tail_needs_a_hundred)
{
	struct fixture *f = calloc(1, sizeof(*f));
	size_t i;

	run(f, RUN);
	kv_health_compute(&f->s, &f->w, &f->sum, NULL, NULL, &f->h);
	ck_assert_msg(get(&f->h, "e2e_tail_ratio")->status != KV_HEALTH_NA, "150 completed: judged");
	for (i = 0; i < f->sum.n && strcmp(f->sum.item[i].name, "completed"); i++)
		;
	ck_assert_uint_lt(i, f->sum.n);
	f->sum.item[i].value = 99;
	kv_health_compute(&f->s, &f->w, &f->sum, NULL, NULL, &f->h);
	expect(&f->h, "e2e_tail_ratio", KV_HEALTH_NA, "99 completed requests: a p99 needs at least 100");
	f->sum.item[i].value = 0;
	kv_health_compute(&f->s, &f->w, &f->sum, NULL, NULL, &f->h);
	expect(&f->h, "e2e_tail_ratio", KV_HEALTH_NA, "no completed request");
	/* the pool's largest block is configuration: always judged */
	ck_assert_int_ne(get(&f->h, "max_block_bytes")->status, KV_HEALTH_NA);
	release(f);
	free(f);
}
END_TEST

/* A prefix cache that looked nothing up has no hit rate to judge; one that did is judged. */
START_TEST(hit_rate_needs_lookups)
{
	struct fixture *f = calloc(1, sizeof(*f));

	run(f, "model: tiny\ndevice: a100-80g\ncache: {name: shared, system_prompt_tokens: 32}\n"
	       "scheduler: fifo\nworkload:\n  requests: 150\n  arrival: {process: poisson, rate: 10}\n"
	       "  lengths: {dist: fixed, prompt: 64, output: 16}\n");
	kv_health_compute(&f->s, &f->w, &f->sum, NULL, NULL, &f->h);
	ck_assert_msg(get(&f->h, "cache_hit_rate")->status != KV_HEALTH_NA, "lookups: judged ('%s')",
		      get(&f->h, "cache_hit_rate")->cause);
	release(f);
	run(f, "model: tiny\ndevice: a100-80g\ncache: {name: quantized}\nscheduler: fifo\n"
	       "workload:\n  requests: 150\n  arrival: {process: poisson, rate: 10}\n"
	       "  lengths: {dist: fixed, prompt: 64, output: 16}\n");
	kv_health_compute(&f->s, &f->w, &f->sum, NULL, NULL, &f->h);
	expect(&f->h, "cache_hit_rate", KV_HEALTH_NA, "cache quantized looked up no token");
	release(f);
	free(f);
}
END_TEST

int main(void)
{
	Suite *su = suite_create("health");
	TCase *tc = tcase_create("health");

	tcase_add_test(tc, growth_needs_flat_load);
	tcase_add_test(tc, fairness_needs_two_tenants_served);
	tcase_add_test(tc, tail_needs_a_hundred);
	tcase_add_test(tc, hit_rate_needs_lookups);
	suite_add_tcase(su, tc);
	return kv_test_run_suite(su);
}
