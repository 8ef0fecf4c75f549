/*
 * test_metrics.c -- sim/metrics: histogram quantiles, Jain's index, and the
 * run's summary computed without the output layer (names in order, counts,
 * the short/long-request metrics from a kv_done_log, tenant shares).
 */
#include "metrics.h"
#include "simtest.h"
#include "workload.h"
#include "health.h"
#include "testutil.h"

#include <check.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Values below 2^KV_HIST_SUB are exact; above, a quantile is within 2^-KV_HIST_SUB. */
START_TEST(hist_quantiles)
{
	struct kv_hist h;
	uint64_t v, q;

	kv_hist_init(&h);
	ck_assert_uint_eq(kv_hist_quantile(&h, 0.5), 0);
	for (v = 1; v <= 100; v++)
		kv_hist_add(&h, v);
	ck_assert_uint_eq(kv_hist_quantile(&h, 0.5), 50);
	ck_assert_uint_eq(kv_hist_quantile(&h, 0.99), 99);
	ck_assert_uint_eq(kv_hist_quantile(&h, 0), 1);
	ck_assert_uint_eq(kv_hist_quantile(&h, 1), 100);
	ck_assert_msg(fabs(kv_hist_mean(&h) - 50.5) < 1e-12, "mean %g", kv_hist_mean(&h));
	kv_hist_release(&h);

	kv_hist_init(&h);
	for (v = 1; v <= 1000; v++)
		kv_hist_add(&h, v * 1000003);
	q = kv_hist_quantile(&h, 0.9);
	ck_assert_msg(fabs((double)q / (900.0 * 1000003) - 1) <= 1.0 / (1 << KV_HIST_SUB),
		      "p90 %llu, exact %llu", (unsigned long long)q, 900ULL * 1000003);
	kv_hist_release(&h);
}
END_TEST

START_TEST(jain_index)
{
	double eq[4] = { 2, 2, 2, 2 }, one[4] = { 0, 0, 5, 0 };

	ck_assert_double_eq_tol(kv_jain(eq, 4), 1, 1e-12);
	ck_assert_double_eq_tol(kv_jain(one, 4), 0.25, 1e-12);
	ck_assert_double_eq(kv_jain(NULL, 0), 1);
}
END_TEST

#define TWO_TENANTS                                                                        \
	"model: llama-2-7b\ndevice: a100-80g\nscheduler: fifo\ncache: full\n"              \
	"outputs: {sample_interval: 0}\n"                                                  \
	"workload:\n  requests: 400\n  arrival: {process: poisson, rate: 20}\n"          \
	"  lengths: {dist: lognormal, prompt_mean: 300, prompt_sigma: 0.8, prompt_max: 3000,\n" \
	"            output_mean: 100, output_sigma: 0.6, output_max: 600}\n"              \
	"  tenants: [{name: a, share: 3, weight: 1}, {name: b, share: 1, weight: 3}]\n"

/* A sink that feeds a kv_done_log and keeps each completed request's (length, E2E). */
struct rec {
	struct kv_done_log log;
	uint64_t completed, ended;
	uint32_t len[1024];
	float e2e_s[1024];
};

static int rec_request(void *ctx, const struct kv_sim *s, const struct kv_req *q, enum kv_end e)
{
	struct rec *r = ctx;

	(void)s;
	r->ended++;
	if (e != KV_END_COMPLETED)
		return 0;
	ck_assert_uint_lt(r->completed, 1024);
	r->len[r->completed] = (uint32_t)(q->prompt_tokens + q->output_tokens);
	r->e2e_s[r->completed] = (float)((double)(q->finish_ns - q->arrival_ns) * 1e-9);
	r->completed++;
	return kv_done_log_add(&r->log, q);
}

/* Runs TWO_TENANTS with the recording sink; the caller releases s, w and r->log. */
static void run_two(struct kv_workload *w, struct kv_sim *s, struct rec *r)
{
	struct kv_sink sink = { .ctx = r, .request = rec_request };
	struct kv_diag d;

	memset(r, 0, sizeof(*r));
	load(w, TWO_TENANTS);
	ck_assert_int_eq(kv_done_log_init(&r->log, w->cfg.model.max_ctx_tokens, NULL, &d), 0);
	sim_start(w, s, &sink, 0);
	sim_finish(s);
}

/* The summary's items are kv_summary_names[] in order, and its counts are the run's. */
START_TEST(summary_names_and_counts)
{
	struct kv_workload w;
	struct kv_sim s;
	struct kv_summary sum;
	struct rec *r = malloc(sizeof(*r));
	size_t i;

	run_two(&w, &s, r);
	kv_summary_compute(&s, &r->log, &sum);
	/* the share model (this run's) leaves out the last two, the engines' KV capacity */
	for (i = 0; kv_summary_names[i] && strncmp(kv_summary_names[i], "kv_capacity_", 12); i++) {
		ck_assert_msg(i < sum.n, "summary has %zu items, names list more", sum.n);
		ck_assert_msg(!strcmp(sum.item[i].name, kv_summary_names[i]), "item %zu: %s, expected %s",
			      i, sum.item[i].name, kv_summary_names[i]);
	}
	ck_assert_uint_eq(i, sum.n);
	ck_assert_double_eq(kv_summary_get(&sum, "requests"), 400);
	ck_assert_double_eq(kv_summary_get(&sum, "completed"), (double)r->completed);
	ck_assert_double_eq(kv_summary_get(&sum, "completed") +
				    kv_summary_get(&sum, "rejected_context") +
				    kv_summary_get(&sum, "rejected_pool"),
			    (double)r->ended);
	ck_assert_double_eq(kv_summary_get(&sum, "ttft_p50_s"),
			    (double)kv_hist_quantile(&s.ttft, 0.5) * 1e-9);
	ck_assert_msg(isnan(kv_summary_get(&sum, "no_such_metric")), "unknown name not NaN");
	ck_assert_msg(isnan(kv_summary_get(&sum, "cache_hit_rate")), "full has no cache stats");
	kv_done_log_release(&r->log);
	kv_sim_release(&s);
	kv_workload_release(&w);
	free(r);
}
END_TEST

/* The median of the recorded lengths, upper for an even count (as metrics.c defines it). */
static uint32_t median_of(const struct rec *r)
{
	uint64_t n = r->completed, seen = 0;
	uint32_t v, i, max = 0;

	for (i = 0; i < r->completed; i++)
		max = KV_MAX(max, r->len[i]);
	for (v = 0; v <= max; v++) {
		for (i = 0; i < r->completed; i++)
			seen += r->len[i] == v;
		if (2 * seen > n)
			return v;
	}
	return 0;
}

/*
 * short_e2e_std_s is the exact standard deviation of the short requests'
 * E2E (below the median length); long_e2e_p99_s the long ones' p99 within
 * the histogram's precision; both NaN without a log.
 */
START_TEST(summary_short_long)
{
	struct kv_workload w;
	struct kv_sim s;
	struct kv_summary sum;
	struct rec *r = malloc(sizeof(*r));
	double mean = 0, var = 0, got, p99;
	float *lng = calloc(1024, sizeof(*lng));
	uint32_t med, i, ns = 0, nl = 0, rank;

	run_two(&w, &s, r);
	kv_summary_compute(&s, &r->log, &sum);
	med = median_of(r);
	for (i = 0; i < r->completed; i++)
		if (r->len[i] < med) {
			mean += r->e2e_s[i];
			ns++;
		}
	mean /= ns;
	for (i = 0; i < r->completed; i++) {
		if (r->len[i] < med)
			var += ((double)r->e2e_s[i] - mean) * ((double)r->e2e_s[i] - mean);
		if (r->len[i] > med)
			lng[nl++] = r->e2e_s[i];
	}
	got = kv_summary_get(&sum, "short_e2e_std_s");
	ck_assert_msg(ns > 10 && fabs(got - sqrt(var / ns)) <= 1e-9 * sqrt(var / ns),
		      "short std %.12g, exact %.12g over %u requests", got, sqrt(var / ns), ns);
	for (i = 1; i < nl; i++) { /* insertion sort: a few hundred values */
		float v = lng[i];
		uint32_t j = i;

		for (; j > 0 && lng[j - 1] > v; j--)
			lng[j] = lng[j - 1];
		lng[j] = v;
	}
	rank = (uint32_t)ceil(0.99 * nl);
	p99 = lng[rank - 1];
	got = kv_summary_get(&sum, "long_e2e_p99_s");
	ck_assert_msg(nl > 10 && fabs(got / p99 - 1) <= 2.0 / (1 << KV_HIST_SUB),
		      "long p99 %.9g, exact %.9g over %u requests", got, p99, nl);

	kv_summary_compute(&s, NULL, &sum);
	ck_assert_msg(isnan(kv_summary_get(&sum, "short_e2e_std_s")) &&
			      isnan(kv_summary_get(&sum, "long_e2e_p99_s")),
		      "without a log the short/long metrics must be NaN");
	free(lng);
	kv_done_log_release(&r->log);
	kv_sim_release(&s);
	kv_workload_release(&w);
	free(r);
}
END_TEST

/* Tenants' service shares sum to 1 and weight shares are weight / sum of weights. */
START_TEST(tenant_shares)
{
	struct kv_workload w;
	struct kv_sim s;
	struct rec *r = malloc(sizeof(*r));
	struct kv_tenant_summary t[2];
	uint32_t i;

	run_two(&w, &s, r);
	for (i = 0; i < 2; i++)
		kv_tenant_summary(&s, NULL, i, &t[i]);
	ck_assert_double_eq_tol(t[0].service_share + t[1].service_share, 1, 1e-12);
	ck_assert_double_eq_tol(t[0].weight_share, 0.25, 1e-12);
	ck_assert_double_eq_tol(t[1].weight_share, 0.75, 1e-12);
	for (i = 0; i < 2; i++) {
		ck_assert_msg(t[i].service_share > 0, "tenant %u got no service", i);
		ck_assert_msg(t[i].ttft_p50_s <= t[i].ttft_p99_s && t[i].e2e_p50_s <= t[i].e2e_p99_s &&
				      t[i].ttft_p99_s <= t[i].e2e_p99_s,
			      "tenant %u: ttft p50 %g p99 %g, e2e p50 %g p99 %g", i, t[i].ttft_p50_s,
			      t[i].ttft_p99_s, t[i].e2e_p50_s, t[i].e2e_p99_s);
	}
	kv_done_log_release(&r->log);
	kv_sim_release(&s);
	kv_workload_release(&w);
	free(r);
}
END_TEST

/* A released (or zeroed) log releases again harmlessly. */
START_TEST(done_log_release_twice)
{
	struct kv_done_log l = { 0 };
	struct kv_diag d;

	kv_done_log_release(&l);
	ck_assert_int_eq(kv_done_log_init(&l, 100, NULL, &d), 0);
	kv_done_log_release(&l);
	kv_done_log_release(&l);
	ck_assert_ptr_null(l.lat);
}
END_TEST

/* A request that ended: arrival, first token and finish in ms; tenant; prompt and output tokens. */
static struct kv_req done_req(uint32_t tenant, double arr_ms, double first_ms, double fin_ms,
			      uint64_t prompt, uint64_t out)
{
	struct kv_req q;

	memset(&q, 0, sizeof(q));
	q.tenant = tenant;
	q.arrival_ns = (kv_ns)(arr_ms * 1e6);
	q.first_token_ns = (kv_ns)(first_ms * 1e6);
	q.finish_ns = (kv_ns)(fin_ms * 1e6);
	q.prompt_tokens = prompt;
	q.output_tokens = out;
	return q;
}

/* Per-request limits: a limit of 0 is none; a value equal to the limit meets it. */
START_TEST(slo_meets_limits)
{
	struct kv_slo_limits l = { { 1000, 100, 0 } };

	ck_assert_int_eq(kv_slo_meets(&l, 1000, 100, 999999), 1);
	ck_assert_int_eq(kv_slo_meets(&l, 1001, 100, 0), 0);
	ck_assert_int_eq(kv_slo_meets(&l, 10, 101, 0), 0);
	l.max_ns[KV_SLO_E2E] = 5000;
	ck_assert_int_eq(kv_slo_meets(&l, 10, 10, 5001), 0);
}
END_TEST

/*
 * Attainment and goodput on a hand-made set: 5 requests arrive (one
 * rejected), the makespan is 4 s; limits ttft 1 s, tpot 100 ms, tenant 1
 * tpot 250 ms.  Met: request 1 (tenant 0; 111 tokens), requests 3 and 4
 * (tenant 1; 211 + 51 tokens): attainment 3/5, goodput 3/4 req/s and
 * 373/4 tok/s; tenant 0 1/3 and 111/4, tenant 1 2/2 and 262/4.  Percentile
 * SLOs: TTFT p50 0.5 s <= 1 s holds, p99 1.2 s <= 1 s does not: slo_met 0.
 */
START_TEST(slo_attainment_goodput)
{
	struct kv_sim_config cfg;
	struct kv_slo_cfg slo;
	struct kv_done_log log;
	struct kv_summary sum;
	struct kv_tenant_summary t0, t1;
	struct kv_sim *s = calloc(1, sizeof(*s));
	struct kv_req q[4];
	struct kv_diag d;
	int i;

	memset(&cfg, 0, sizeof(cfg));
	cfg.replicas = 3;
	cfg.tp = 2;
	cfg.source.n_tenants = 2;
	cfg.source.tenants[0].weight = cfg.source.tenants[1].weight = 1;
	memset(&slo, 0, sizeof(slo));
	slo.on = 1;
	slo.all.max_ns[KV_SLO_TTFT] = 1000000000;
	slo.all.max_ns[KV_SLO_TPOT] = 100000000;
	slo.tenant[0] = slo.tenant[1] = slo.all;
	slo.tenant[1].max_ns[KV_SLO_TPOT] = 250000000;
	slo.pct[0] = (struct kv_slo_pct){ KV_SLO_TTFT, 0.5, 1000000000, "ttft_p50_s" };
	slo.pct[1] = (struct kv_slo_pct){ KV_SLO_TTFT, 0.99, 1000000000, "ttft_p99_s" };
	slo.n_pct = 1;
	s->cfg = &cfg;
	s->grp = &(struct kv_group){ .cfg = &cfg }; /* the run's one group, no replicas built */
	s->n_grp = 1;
	s->tenant = calloc(2, sizeof(*s->tenant));
	kv_hist_init(&s->ttft);
	kv_hist_init(&s->tpot);
	kv_hist_init(&s->e2e);
	q[0] = done_req(0, 0, 500, 1500, 100, 11); /* ttft 0.5 s, tpot 0.1 s: meets */
	q[1] = done_req(0, 0, 1200, 2000, 100, 11); /* ttft 1.2 s: misses */
	q[2] = done_req(1, 1000, 1300, 3300, 200, 11); /* tpot 0.2 s: meets tenant 1's 0.25 s */
	q[3] = done_req(1, 3800, 4000, 4000, 50, 1); /* one output token: tpot 0 */
	ck_assert_int_eq(kv_done_log_init(&log, 4096, &slo, &d), 0);
	for (i = 0; i < 4; i++) {
		ck_assert_int_eq(kv_done_log_add(&log, &q[i]), 0);
		kv_hist_add(&s->ttft, q[i].first_token_ns - q[i].arrival_ns);
		kv_hist_add(&s->e2e, q[i].finish_ns - q[i].arrival_ns);
	}
	s->arrived = 5;
	s->tenant[0].arrived = 3;
	s->tenant[1].arrived = 2;
	s->ended[KV_END_COMPLETED] = 4;
	s->first_arrival_ns = 0;
	s->last_finish_ns = 4000000000;
	kv_summary_compute(s, &log, &sum);
	ck_assert_double_eq_tol(kv_summary_get(&sum, "slo_attainment"), 0.6, 1e-12);
	ck_assert_double_eq_tol(kv_summary_get(&sum, "goodput_req_s"), 0.75, 1e-12);
	ck_assert_double_eq_tol(kv_summary_get(&sum, "goodput_tok_s"), 373.0 / 4, 1e-9);
	ck_assert_double_eq(kv_summary_get(&sum, "slo_met"), 1); /* p50 only */
	ck_assert_double_eq(kv_summary_get(&sum, "gpus"), 6);
	slo.n_pct = 2;
	kv_summary_compute(s, &log, &sum);
	ck_assert_double_eq(kv_summary_get(&sum, "slo_met"), 0); /* p99 1.2 s > 1 s */
	kv_tenant_summary(s, &log, 0, &t0);
	kv_tenant_summary(s, &log, 1, &t1);
	ck_assert_msg(fabs(t0.slo_attainment - 1.0 / 3) < 1e-12 && fabs(t0.goodput_req_s - 0.25) < 1e-12 &&
			      fabs(t0.goodput_tok_s - 27.75) < 1e-9,
		      "tenant 0: attainment %g goodput %g req/s %g tok/s", t0.slo_attainment,
		      t0.goodput_req_s, t0.goodput_tok_s);
	ck_assert_msg(t1.slo_attainment == 1 && fabs(t1.goodput_req_s - 0.5) < 1e-12 &&
			      fabs(t1.goodput_tok_s - 65.5) < 1e-9,
		      "tenant 1: attainment %g goodput %g req/s %g tok/s", t1.slo_attainment,
		      t1.goodput_req_s, t1.goodput_tok_s);
	/* without slo: the columns are absent and the tenant figures NaN */
	kv_summary_compute(s, NULL, &sum);
	ck_assert_msg(isnan(kv_summary_get(&sum, "slo_attainment")) && isnan(kv_summary_get(&sum, "gpus")),
		      "SLO columns without slo:");
	kv_done_log_release(&log);
	kv_hist_release(&s->ttft);
	kv_hist_release(&s->tpot);
	kv_hist_release(&s->e2e);
	free(s->tenant);
	free(s);
}
END_TEST

/* slo: in a workload: per-request limits, percentiles, a tenant's override; bad keys name the fix. */
START_TEST(slo_workload_keys)
{
	static const char *const bad[][2] = {
		{ "slo: {ttft_p99x: 1}\n", "unknown SLO 'ttft_p99x'" },
		{ "slo: {latency: 1}\n", "unknown SLO 'latency'" },
		{ "slo: {tenants: {zz: {ttft: 1}}}\n", "unknown tenant 'zz'" },
		{ "slo: {tenants: {a: {ttft_p99: 1}}}\n", "a tenant's SLOs are per-request limits" },
		{ "slo: {ttft: -1}\n", "ttft" },
		{ "slo: {tpot: 100s, itl: 1ns}\n", "'itl' and 'tpot' (line " },
		{ "slo: {itl_p99: 1s, tpot_p99: 2s}\n", "both set the p99 tpot limit" },
		{ "slo: {e2e_p50: 1s, e2e_p50.00: 2s}\n", "'e2e_p50.00' and 'e2e_p50'" },
		{ "slo: {tenants: {a: {itl: 1s, tpot: 2s}}}\n", "per-request tpot limit" },
		{ "slo: {e2e_p100: 1s}\n", "the percentile is 100 or more" },
		{ "slo: {ttft_p0: 1s}\n", "the percentile is 0:" },
		{ "health: {mem_util_min: 0.9, mem_util_max: 0.5}\n", "expected at least mem_util_min" },
	};
	struct kv_workload w;
	struct kv_diag d;
	char text[4096];
	size_t i;

	snprintf(text, sizeof(text), "%sslo: {ttft: 2s, itl: 50ms, e2e_p99.9: 30, "
		 "tenants: {b: {ttft: 500ms}}}\nhealth: {fairness_min: 0.5}\n", TWO_TENANTS);
	ck_assert_msg(!kv_workload_load_mem(&w, "slo.yaml", text, strlen(text), NULL, 0, 0, 0, &d),
		      "%s", d.msg);
	ck_assert(w.slo.on);
	ck_assert_uint_eq(w.slo.all.max_ns[KV_SLO_TTFT], 2000000000);
	ck_assert_uint_eq(w.slo.all.max_ns[KV_SLO_TPOT], 50000000);
	ck_assert_uint_eq(w.slo.tenant[0].max_ns[KV_SLO_TTFT], 2000000000);
	ck_assert_uint_eq(w.slo.tenant[1].max_ns[KV_SLO_TTFT], 500000000);
	ck_assert_uint_eq(w.slo.tenant[1].max_ns[KV_SLO_TPOT], 50000000);
	ck_assert_uint_eq(w.slo.n_pct, 1);
	ck_assert_str_eq(w.slo.pct[0].name, "e2e_p99.9_s");
	ck_assert_double_eq_tol(w.slo.pct[0].q, 0.999, 1e-12);
	ck_assert_double_eq(w.health.fairness_min, 0.5);
	ck_assert_double_eq(w.health.hit_rate_min, 0.85);
	ck_assert_double_eq(w.health.mem_growth_max, 0.10);
	kv_workload_release(&w);
	for (i = 0; i < KV_ARRAY_LEN(bad); i++) {
		snprintf(text, sizeof(text), "%s%s", TWO_TENANTS, bad[i][0]);
		ck_assert_msg(kv_workload_load_mem(&w, "slo.yaml", text, strlen(text), NULL, 0, 0, 0, &d),
			      "accepted: %s", bad[i][0]);
		ck_assert_msg(strstr(d.msg, bad[i][1]) || strstr(d.field, bad[i][1]),
			      "%s: message '%s' lacks '%s'", bad[i][0], d.msg, bad[i][1]);
		ck_assert_msg(d.line > 0, "%s: no line in the message", bad[i][0]);
		kv_workload_release(&w);
	}
}
END_TEST

/*
 * The growth check's samples stay bounded: offered 3 x KV_TREND_CAP samples
 * (values = their index), it keeps every 4th after two halvings, in order,
 * the first and the spacing exact.
 */
START_TEST(mem_trend_bounded)
{
	static struct kv_mem_trend m;
	size_t i, n = 3 * KV_TREND_CAP;

	memset(&m, 0, sizeof(m));
	for (i = 0; i < n; i++)
		kv_mem_trend_add(&m, (double)i, 10.0 * (double)i, 1, 2, 3, (double)i, 5);
	/* 512 kept at stride 1; halved to 256 (0,2,..,510) at 512, stride 2 up to 1022 (512 kept);
	 * halved to 256 (0,4,..,1020) at 1024, stride 4: 1024..1532 adds 128 */
	ck_assert_uint_eq(m.stride, 4);
	ck_assert_uint_eq(m.n, KV_TREND_CAP / 2 + KV_TREND_CAP / 4);
	for (i = 0; i < m.n; i++) {
		ck_assert_double_eq(m.t[i], 4.0 * (double)i);
		ck_assert_double_eq(m.reserved[i], 40.0 * (double)i);
		ck_assert_double_eq(m.arrived[i], 4.0 * (double)i);
		ck_assert_double_eq(m.cached[i], 5);
	}
}
END_TEST

int main(void)
{
	Suite *su = suite_create("metrics");
	TCase *tc = tcase_create("metrics");

	tcase_add_test(tc, hist_quantiles);
	tcase_add_test(tc, jain_index);
	tcase_add_test(tc, summary_names_and_counts);
	tcase_add_test(tc, summary_short_long);
	tcase_add_test(tc, tenant_shares);
	tcase_add_test(tc, done_log_release_twice);
	tcase_add_test(tc, slo_meets_limits);
	tcase_add_test(tc, slo_attainment_goodput);
	tcase_add_test(tc, slo_workload_keys);
	tcase_add_test(tc, mem_trend_bounded);
	suite_add_tcase(su, tc);
	return kv_test_run_suite(su);
}
