/*
 * test_gate.c -- the client's concurrency limit (sim/gate.h): the heap of
 * free times; in the engine, never more than N outstanding (from the send
 * to the client-side finish) under every engine and scheduler, a limit at
 * or above the request count equal to the open-loop run record for record,
 * N = 1 serialises (each send is the previous client-side finish), a closed
 * loop adds its think time, rate inf sends all at 0, macro steps equal
 * exact steps; the YAML errors.
 */
#include "replica.h"
#include "workload.h"

#include "testutil.h"

#include <check.h>
#include <gsl/gsl_errno.h>
#include <inttypes.h>
#include <string.h>

#define MAX_ROWS 2048

struct row {
	kv_ns arrival, finish; /* client side: send, finish after the front end */
	int done;
};

struct rec {
	struct row r[MAX_ROWS]; /* by request id */
	unsigned n; /* requests ended */
	uint64_t digest, events;
};

static struct rec rec_a, rec_b;

static int on_req(void *ctx, const struct kv_sim *s, const struct kv_req *q, enum kv_end e)
{
	struct rec *w = ctx;
	uint64_t v[5] = { q->id, q->arrival_ns, q->finish_ns, q->first_token_ns, (uint64_t)e };
	unsigned i;

	(void)s;
	ck_assert_uint_lt(q->id, MAX_ROWS);
	w->r[q->id] = (struct row){ q->arrival_ns, q->finish_ns, e == KV_END_COMPLETED };
	w->n++;
	for (i = 0; i < sizeof(v); i++)
		w->digest = (w->digest ^ ((const unsigned char *)v)[i]) * 1099511628211ULL;
	return 0;
}

/* Runs YAML text with overrides into w; exact: one event per iteration. */
static void run_yaml(const char *text, char *const *sets, size_t n_sets, int exact, struct rec *w)
{
	static struct kv_workload wl;
	struct kv_sink sink = { .ctx = w, .request = on_req };
	struct kv_diag d = { 0 };
	struct kv_sim s;
	int rc;

	memset(w, 0, sizeof(*w));
	w->digest = 1469598103934665603ULL;
	rc = kv_workload_load_mem(&wl, "gate.yaml", text, strlen(text), sets, n_sets, 0, 0, &d);
	ck_assert_msg(rc == 0, "load: %s:%lu: %s: %s", d.file, d.line, d.field, d.msg);
	wl.cfg.exact_steps = exact;
	rc = kv_sim_init(&s, &wl.cfg, &sink);
	ck_assert_msg(rc == 0, "init: %s: %s", s.diag.field, s.diag.msg);
	rc = kv_sim_run(&s);
	ck_assert_msg(rc == 0, "run: %s: %s", s.diag.field, s.diag.msg);
	w->events = s.events;
	kv_sim_release(&s);
	kv_workload_release(&wl);
}

/* 300 requests, Poisson 40 req/s on two replicas (a queue builds), a front end that takes time. */
static const char base_yaml[] =
	"model: llama-2-7b\ndevice: a100-80g\nseed: 5\n"
	"cluster: {replicas: 2, router: least-outstanding-tokens}\n"
	"engine: {name: vllm, frontend_overhead: 3ms}\n"
	"memory: {context_check: warn}\n"
	"workload:\n  requests: 300\n  arrival: {process: poisson, rate: 40}\n"
	"  lengths: {dist: uniform, prompt_min: 50, prompt_max: 900, output_min: 1, output_max: 300}\n"
	"outputs: {sample_interval: 100ms}\n";

/* The most requests outstanding at once: sends +1, client-side finishes -1 (a finish first at a tie). */
static unsigned max_outstanding(const struct rec *w)
{
	unsigned i, j, most = 0;

	for (i = 0; i < w->n; i++) { /* at each send: those sent at or before it, not finished by it */
		unsigned c = 0;

		for (j = 0; j < w->n; j++)
			c += w->r[j].arrival <= w->r[i].arrival && w->r[j].finish > w->r[i].arrival;
		most = c > most ? c : most;
	}
	return most;
}

/* The heap frees places in time order; full at N; an end returns finish + think. */
START_TEST(gate_heap)
{
	struct kv_gate g;
	unsigned i;

	kv_gate_init(&g, 3, 10);
	for (i = 0; i < 3; i++)
		kv_gate_take(&g);
	ck_assert(kv_gate_full(&g));
	ck_assert_uint_eq(kv_gate_end(&g, 500), 510);
	ck_assert_uint_eq(kv_gate_end(&g, 100), 110);
	ck_assert_uint_eq(kv_gate_next_free(&g), 110);
	kv_gate_settle(&g, 109);
	ck_assert(kv_gate_full(&g));
	kv_gate_settle(&g, 110);
	ck_assert(!kv_gate_full(&g));
	ck_assert_uint_eq(g.out, 2);
	ck_assert_uint_eq(kv_gate_next_free(&g), 510);
	kv_gate_settle(&g, 1000);
	ck_assert_uint_eq(g.out, 1);
	ck_assert_uint_eq(kv_gate_next_free(&g), KV_NS_NEVER);
	kv_gate_release(&g);
	kv_gate_init(&g, 0, 0); /* off: never full */
	kv_gate_take(&g);
	ck_assert(!kv_gate_full(&g));
	ck_assert_uint_eq(kv_gate_end(&g, 5), KV_NS_NEVER);
	kv_gate_release(&g);
}
END_TEST

/* Never more than N outstanding, every request served, under every engine and scheduler. */
START_TEST(never_more_than_n)
{
	const struct kv_plugin *e, *sc;
	char set_e[64], set_s[64], set_n[] = "workload.arrival.max_concurrency=5";
	char *sets[3] = { set_e, set_s, set_n };
	size_t i, j;
	unsigned runs = 0, waited;

	for (i = 0; (e = kv_plugin_at(KV_PLUGIN_ENGINE, i)); i++) {
		for (j = 0; (sc = kv_plugin_at(KV_PLUGIN_SCHED, j)); j++) {
			snprintf(set_e, sizeof(set_e), "engine=%s", e->name);
			snprintf(set_s, sizeof(set_s), "scheduler=%s", sc->name);
			run_yaml(base_yaml, sets, 3, 0, &rec_a);
			ck_assert_uint_eq(rec_a.n, 300);
			ck_assert_msg(max_outstanding(&rec_a) == 5, "%s/%s: %u outstanding at once, limit 5",
				      e->name, sc->name, max_outstanding(&rec_a));
			run_yaml(base_yaml, sets, 3, 1, &rec_b); /* macro steps: the same records */
			ck_assert_msg(rec_a.digest == rec_b.digest && rec_a.events == rec_b.events,
				      "%s/%s: macro and exact steps differ", e->name, sc->name);
			runs++;
		}
	}
	run_yaml(base_yaml, NULL, 0, 0, &rec_b); /* the open loop: more outstanding, earlier sends */
	ck_assert_uint_gt(max_outstanding(&rec_b), 5);
	run_yaml(base_yaml, sets + 2, 1, 0, &rec_a);
	for (i = waited = 0; i < 300; i++) {
		ck_assert_uint_ge(rec_a.r[i].arrival, rec_b.r[i].arrival); /* sent at its time or later */
		waited += rec_a.r[i].arrival > rec_b.r[i].arrival;
	}
	ck_assert_uint_gt(waited, 30);
	ck_assert_uint_ge(runs, 6);
}
END_TEST

/* A limit at or above the request count is the open loop, record for record and event for event. */
START_TEST(limit_above_requests_is_open_loop)
{
	char set_n[] = "workload.arrival.max_concurrency=300";
	char *sets[1] = { set_n };

	run_yaml(base_yaml, NULL, 0, 0, &rec_a);
	run_yaml(base_yaml, sets, 1, 0, &rec_b);
	ck_assert_uint_eq(rec_a.n, rec_b.n);
	ck_assert(rec_a.digest == rec_b.digest);
	ck_assert_uint_eq(rec_a.events, rec_b.events);
	ck_assert_uint_gt(max_outstanding(&rec_a), 5); /* (the open loop does queue) */
}
END_TEST

/* N = 1 serialises: request i is sent at request i-1's client-side finish (rate inf and Poisson). */
START_TEST(one_serialises)
{
	static const char *const procs[] = { "workload.arrival.rate=inf", "workload.arrival.rate=40" };
	char set_n[] = "workload.arrival.max_concurrency=1", set_r[64];
	char *sets[2] = { set_n, set_r };
	unsigned i, k;

	for (k = 0; k < 2; k++) {
		snprintf(set_r, sizeof(set_r), "%s", procs[k]);
		run_yaml(base_yaml, sets, 2, 0, &rec_a);
		ck_assert_uint_eq(rec_a.n, 300);
		ck_assert_uint_eq(rec_a.r[0].arrival, k ? rec_a.r[0].arrival : 0);
		for (i = 1; i < 300; i++)
			ck_assert_msg(rec_a.r[i].arrival == rec_a.r[i - 1].finish,
				      "%s: request %u sent at %" PRIu64 ", request %u finished at %" PRIu64,
				      procs[k], i, rec_a.r[i].arrival, i - 1, rec_a.r[i - 1].finish);
	}
}
END_TEST

/* rate inf without a limit: every request sent at 0 (vllm bench serve's --request-rate inf). */
START_TEST(rate_inf_all_at_once)
{
	char set_r[] = "workload.arrival.rate=inf";
	char *sets[1] = { set_r };
	unsigned i;

	run_yaml(base_yaml, sets, 1, 0, &rec_a);
	ck_assert_uint_eq(rec_a.n, 300);
	for (i = 0; i < 300; i++)
		ck_assert_uint_eq(rec_a.r[i].arrival, 0);
}
END_TEST

/* A closed loop of 1 user with 2 s think: each send is the previous finish + 2 s; 4 users: at most 4. */
START_TEST(closed_users_think)
{
	char set_p[] = "workload.arrival={process: closed, concurrency: 1, think_time: 2s}",
	     set_4[] = "workload.arrival={process: closed, concurrency: 4, think_time: 500ms}";
	char *sets[1] = { set_p };
	unsigned i;

	run_yaml(base_yaml, sets, 1, 0, &rec_a);
	ck_assert_uint_eq(rec_a.r[0].arrival, 0);
	for (i = 1; i < 300; i++)
		ck_assert_uint_eq(rec_a.r[i].arrival, rec_a.r[i - 1].finish + 2 * KV_NS_PER_S);
	sets[0] = set_4;
	run_yaml(base_yaml, sets, 1, 0, &rec_a);
	run_yaml(base_yaml, sets, 1, 1, &rec_b);
	ck_assert(rec_a.digest == rec_b.digest);
	ck_assert_uint_eq(max_outstanding(&rec_a), 4);
	for (i = 0; i < 4; i++)
		ck_assert_uint_eq(rec_a.r[i].arrival, 0);
	for (i = 4; i < 300; i++) { /* each later send is some user's finish + 500 ms */
		unsigned j, hit = 0;

		for (j = 0; j < i; j++)
			hit += rec_a.r[j].finish + KV_NS_PER_S / 2 == rec_a.r[i].arrival;
		ck_assert_msg(hit, "request %u sent at %" PRIu64 ", no user free then", i, rec_a.r[i].arrival);
	}
}
END_TEST

START_TEST(yaml_errors)
{
	static const char *const bad[][2] = {
		{ "{process: poisson, rate: 2, max_concurrency: -1}", "workload.arrival.max_concurrency" },
		{ "{process: poisson, rate: 2, max_concurrency: many}", "workload.arrival.max_concurrency" },
		{ "{process: poisson, rate: 2, concurrency: 4}", "workload.arrival.concurrency" },
		{ "{process: poisson, rate: 2, think_time: 1s}", "workload.arrival.think_time" },
		{ "{process: closed}", "workload.arrival" },
		{ "{process: closed, concurrency: 0}", "workload.arrival.concurrency" },
		{ "{process: closed, concurrency: 2, max_concurrency: 2}", "workload.arrival.max_concurrency" },
		{ "{process: closed, concurrency: 2, think_time: -1s}", "workload.arrival.think_time" },
		{ "{process: diurnal, rate: inf}", "workload.arrival.rate" },
	};
	static struct kv_workload wl;
	char text[1024];
	size_t i;

	for (i = 0; i < KV_ARRAY_LEN(bad); i++) {
		struct kv_diag d = { 0 };
		int rc;

		snprintf(text, sizeof(text),
			 "model: tiny\ndevice: a100-80g\nworkload:\n  requests: 5\n  arrival: %s\n", bad[i][0]);
		rc = kv_workload_load_mem(&wl, "bad.yaml", text, strlen(text), NULL, 0, 0, 0, &d);
		ck_assert_msg(rc != 0, "accepted: %s", bad[i][0]);
		ck_assert_msg(!strcmp(d.field, bad[i][1]) && d.line == 5,
			      "%s: field %s line %lu: %s", bad[i][0], d.field, d.line, d.msg);
		kv_workload_release(&wl);
	}
}
END_TEST

static Suite *gate_suite(void)
{
	Suite *s = suite_create("gate");
	TCase *g = tcase_create("gate"), *e = tcase_create("engine");

	tcase_add_test(g, gate_heap);
	tcase_add_test(g, yaml_errors);
	tcase_set_timeout(e, 300);
	tcase_add_test(e, never_more_than_n);
	tcase_add_test(e, limit_above_requests_is_open_loop);
	tcase_add_test(e, one_serialises);
	tcase_add_test(e, rate_inf_all_at_once);
	tcase_add_test(e, closed_users_think);
	suite_add_tcase(s, g);
	suite_add_tcase(s, e);
	return s;
}

int main(void)
{
	gsl_set_error_handler_off();
	return kv_test_run_suite(gate_suite());
}
