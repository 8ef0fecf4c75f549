/*
 * test_frontend.c -- the front end (sim/frontend.h, docs/frontend.md) on
 * hand-built runs whose engine steps take a fixed time (an executor), so
 * that every client-side time is known to the nanosecond: the way in
 * (request_cpu + tokenize_per_token * P + ipc_hop), the way out
 * (ipc_hops_out * ipc_hop + detokenize_per_token + stream_chunk), the SSE
 * chunks stream_interval decides, and the API servers' FIFO queue.
 */
#include "engine.h"
#include "frontend.h"
#include "replica.h"
#include "simtest.h"
#include "testutil.h"

#include <check.h>
#include <string.h>

#define STEP_NS 1000000 /* every engine step, ns */
#define P 100 /* prompt tokens */
#define T 10 /* output tokens */
#define NREQ 8 /* requests recorded */

/* The parameters every run below sets (ns), and what they add up to. */
#define REQ_NS 1000000
#define TOK_NS 2000
#define HOP_NS 30000
#define HOPS_OUT 2
#define DETOK_NS 5000
#define CHUNK_NS 7000
#define IN_WORK_NS (REQ_NS + TOK_NS * P) /* one request's input work on its server */
#define IN_NS (IN_WORK_NS + HOP_NS) /* way in, alone */
#define OUT_NS (HOPS_OUT * HOP_NS + DETOK_NS + CHUNK_NS) /* way out, per chunk */

static int fixed_step(void *ctx, struct kv_replica *r, kv_ns model_ns, kv_ns *ns)
{
	(void)ctx;
	(void)r;
	(void)model_ns;
	*ns = STEP_NS;
	return 0;
}

/* What a run's requests saw, by id. */
struct seen {
	uint64_t n;
	kv_ns arrival[NREQ], first[NREQ], finish[NREQ], fe_in[NREQ];
};

static int on_request(void *ctx, const struct kv_sim *s, const struct kv_req *q, enum kv_end e)
{
	struct seen *w = ctx;

	(void)s;
	ck_assert_int_eq(e, KV_END_COMPLETED);
	ck_assert_uint_lt(q->id, NREQ);
	w->arrival[q->id] = q->arrival_ns;
	w->first[q->id] = q->first_token_ns;
	w->finish[q->id] = q->finish_ns;
	w->fe_in[q->id] = q->fe_in_ns;
	w->n++;
	return 0;
}

/*
 * Runs n requests of P prompt and T output tokens, all sent at t = 0, on
 * engine `name` with the front end on (on = 1: the parameters above,
 * stream_interval k, `servers` API servers), off (on = 0: every cost 0) or
 * absent (on = 2: the parameters above with api_server false, the offline
 * engine), every step STEP_NS long; fills *w.
 */
static void run(const char *name, int on, uint64_t k, uint64_t servers, int n, struct seen *w)
{
	struct kv_executor x = { NULL, fixed_step };
	struct kv_workload wl;
	struct kv_sim s;
	struct kv_sink sink = { .ctx = w, .request = on_request };
	char yaml[2048], rows[512] = "arrived_at,num_prefill_tokens,num_decode_tokens\n";
	const char *trace;
	int i;

	for (i = 0; i < n; i++)
		strcat(rows, "0,100,10\n");
	trace = temp_file(rows, "", 1);
	snprintf(yaml, sizeof(yaml),
		 "model: llama-2-7b\ndevice: a100-80g\nscheduler: fifo\ncache: chunked\n"
		 "engine: {name: %s, request_cpu: %dns, tokenize_per_token: %dns, ipc_hop: %dns,"
		 " ipc_hops_out: %d, detokenize_per_token: %dns, stream_chunk: %dns,"
		 " stream_interval: %llu, api_servers: %llu, api_server: %s}\n"
		 "workload:\n  requests: %d\n  arrival: {process: trace, trace: %s, format: vidur}\n"
		 "  lengths: {dist: fixed, prompt: 100, output: 10}\n"
		 "outputs: {sample_interval: 0}\n",
		 name, on ? REQ_NS : 0, on ? TOK_NS : 0, on ? HOP_NS : 0, HOPS_OUT,
		 on ? DETOK_NS : 0, on ? CHUNK_NS : 0, (unsigned long long)k,
		 (unsigned long long)servers, on == 2 ? "false" : "true", n, trace);
	memset(w, 0, sizeof(*w));
	load(&wl, yaml);
	wl.cfg.exec = &x;
	sim_start(&wl, &s, &sink, 1);
	sim_finish(&s);
	unlink(trace);
	ck_assert_uint_eq(w->n, (uint64_t)n);
	kv_sim_release(&s);
	kv_workload_release(&wl);
}

/* Chunks: the first token alone, then every k tokens, and the last (vLLM V1's rule). */
START_TEST(chunk_arithmetic)
{
	static const uint64_t sent4[T + 1] = { 0, 1, 5, 5, 5, 5, 9, 9, 9, 9, 10 };
	uint64_t j;

	ck_assert_uint_eq(kv_frontend_chunks(1, T), T);
	ck_assert_uint_eq(kv_frontend_chunks(4, T), 4); /* tokens 1, 5, 9, 10 */
	ck_assert_uint_eq(kv_frontend_chunks(4, 9), 3); /* 1, 5, 9 */
	ck_assert_uint_eq(kv_frontend_chunks(100, T), 2); /* 1, 10 */
	ck_assert_uint_eq(kv_frontend_chunks(4, 1), 1);
	ck_assert_uint_eq(kv_frontend_chunks(4, 0), 0);
	for (j = 1; j <= T; j++) {
		ck_assert_msg(kv_frontend_sent_with(4, T, j) == sent4[j],
			      "k 4: token %llu sent with %llu, expected %llu", (unsigned long long)j,
			      (unsigned long long)kv_frontend_sent_with(4, T, j),
			      (unsigned long long)sent4[j]);
		ck_assert_uint_eq(kv_frontend_sent_with(1, T, j), j);
	}
}
END_TEST

/*
 * One request: its TTFT grows by exactly the way in and the way out
 * (tokenisation, the hop in, the hops out, the first token's
 * detokenisation and chunk); its E2E by the same; its TPOT not at all.
 */
START_TEST(lone_request_exact)
{
	static const char *const engines[] = { "vllm", "sglang", "vllm-v0" };
	struct seen off, on, offline;
	int e;

	for (e = 0; e < 3; e++) {
		run(engines[e], 0, 1, 1, 1, &off);
		run(engines[e], 1, 1, 1, 1, &on);
		run(engines[e], 2, 1, 1, 1, &offline); /* api_server false: as if every cost were 0 */
		ck_assert_uint_eq(offline.first[0], off.first[0]);
		ck_assert_uint_eq(offline.finish[0], off.finish[0]);
		ck_assert_uint_eq(offline.fe_in[0], 0);
		ck_assert_uint_eq(off.first[0] - off.arrival[0], STEP_NS); /* one prefill step */
		ck_assert_uint_eq(off.finish[0] - off.arrival[0], T * STEP_NS);
		ck_assert_uint_eq(on.fe_in[0], IN_NS);
		ck_assert_msg(on.first[0] - on.arrival[0] == STEP_NS + IN_NS + OUT_NS,
			      "%s: TTFT %llu ns, expected %llu", engines[e],
			      (unsigned long long)(on.first[0] - on.arrival[0]),
			      (unsigned long long)(STEP_NS + IN_NS + OUT_NS));
		ck_assert_uint_eq(on.finish[0] - on.arrival[0], T * STEP_NS + IN_NS + OUT_NS);
		ck_assert_uint_eq(on.finish[0] - on.first[0], off.finish[0] - off.first[0]);
	}
}
END_TEST

/*
 * stream_interval k: a lone request's first and last tokens leave as
 * before (TTFT and E2E unchanged); the tokens between wait for their
 * chunk (token j leaves with token kv_frontend_sent_with(k, T, j), k - 1
 * steps later at most); and the API server does less output work, so a
 * request queued behind it starts stream_chunk * (T - chunks(k)) sooner.
 */
START_TEST(stream_interval_chunks)
{
	struct seen k1, k4;
	uint64_t j, late = 0;

	run("vllm", 1, 1, 1, 2, &k1);
	run("vllm", 1, 4, 1, 2, &k4);
	ck_assert_uint_eq(k4.first[0], k1.first[0]);
	ck_assert_uint_eq(k4.finish[0], k1.finish[0]);
	/* token j: emitted at t_engine + j steps, seen when its chunk's last token is emitted */
	for (j = 1; j <= T; j++) {
		kv_ns seen = k4.arrival[0] + IN_NS + kv_frontend_sent_with(4, T, j) * STEP_NS + OUT_NS;
		kv_ns emitted = k4.arrival[0] + IN_NS + j * STEP_NS + OUT_NS;

		ck_assert_uint_le(seen - emitted, 3 * STEP_NS);
		late += seen - emitted;
	}
	ck_assert_uint_eq(late, (3 + 2 + 1 + 3 + 2 + 1) * (uint64_t)STEP_NS); /* tokens 2-4 and 6-8 */
	/* request 1 waits behind request 0's input and output work on the one server */
	ck_assert_uint_eq(k1.fe_in[1],
			  2 * IN_WORK_NS + DETOK_NS * T + CHUNK_NS * T + HOP_NS);
	ck_assert_uint_eq(k4.fe_in[1],
			  2 * IN_WORK_NS + DETOK_NS * T + CHUNK_NS * 4 + HOP_NS);
	ck_assert_uint_eq(k1.fe_in[1] - k4.fe_in[1], CHUNK_NS * (T - 4));
}
END_TEST

/*
 * Simultaneous arrivals queue behind one API server (FIFO): request i
 * reaches the engine after i requests' input and output work and its own
 * input work; with two servers they pair up.
 */
START_TEST(queue_behind_api_server)
{
	const kv_ns out_work = DETOK_NS * T + CHUNK_NS * T;
	struct seen one, two;
	int i;

	run("vllm", 1, 1, 1, 4, &one);
	run("vllm", 1, 1, 2, 4, &two);
	for (i = 0; i < 4; i++) {
		kv_ns want1 = (kv_ns)(i + 1) * IN_WORK_NS + (kv_ns)i * out_work + HOP_NS;
		kv_ns want2 = (kv_ns)(i / 2 + 1) * IN_WORK_NS + (kv_ns)(i / 2) * out_work + HOP_NS;

		ck_assert_msg(one.fe_in[i] == want1, "1 server: request %d in %llu ns, expected %llu",
			      i, (unsigned long long)one.fe_in[i], (unsigned long long)want1);
		ck_assert_msg(two.fe_in[i] == want2, "2 servers: request %d in %llu ns, expected %llu",
			      i, (unsigned long long)two.fe_in[i], (unsigned long long)want2);
		ck_assert_uint_eq(one.arrival[i], 0);
	}
}
END_TEST

/* Macro steps stay byte-identical to exact steps with the front end on. */
START_TEST(macro_matches_exact)
{
	static const char *const engines[] = { "vllm", "sglang", "vllm-v0" };
	kv_ns first[2][64], finish[2][64];
	int e, exact;

	for (e = 0; e < 3; e++) {
		for (exact = 0; exact < 2; exact++) {
			struct kv_workload wl;
			struct kv_sim s;
			struct ends *r = calloc(1, sizeof(*r));
			struct kv_sink sink = { .ctx = r, .request = ends_request };
			char yaml[1024];

			snprintf(yaml, sizeof(yaml),
				 "model: llama-2-7b\ndevice: a100-80g\nscheduler: fifo\ncache: chunked\n"
				 "engine: {name: %s, api_servers: 2, stream_interval: 3}\n"
				 "workload:\n  requests: 64\n  arrival: {process: poisson, rate: 40}\n"
				 "  lengths: {dist: uniform, prompt_min: 10, prompt_max: 900, output_min: 1, output_max: 300}\n"
				 "outputs: {sample_interval: 0}\n",
				 engines[e]);
			load(&wl, yaml);
			wl.cfg.exact_steps = exact;
			sim_start(&wl, &s, &sink, 0);
			sim_finish(&s);
			ck_assert_uint_eq(r->completed, 64);
			memcpy(first[exact], r->first, sizeof(first[exact]));
			memcpy(finish[exact], r->finish, sizeof(finish[exact]));
			if (!exact)
				ck_assert_uint_gt(s.macro_steps, 0);
			kv_sim_release(&s);
			kv_workload_release(&wl);
			free(r);
		}
		ck_assert_msg(!memcmp(first[0], first[1], sizeof(first[0])) &&
				      !memcmp(finish[0], finish[1], sizeof(finish[0])),
			      "%s: macro steps differ from exact steps", engines[e]);
	}
}
END_TEST

/* Bad front-end options name their field. */
START_TEST(bad_options)
{
	expect_bad("model: llama-2-7b\ndevice: a100-80g\nengine: {name: vllm, stream_interval: 0}\n"
		   "workload: {requests: 1, arrival: {process: poisson, rate: 1}}\n",
		   1, "engine.stream_interval", "");
	expect_bad("model: llama-2-7b\ndevice: a100-80g\nengine: {name: sglang, api_servers: 0}\n"
		   "workload: {requests: 1, arrival: {process: poisson, rate: 1}}\n",
		   1, "engine.api_servers", "");
	expect_bad("model: llama-2-7b\ndevice: a100-80g\nengine: {name: vllm-v0, ipc_hop: -1}\n"
		   "workload: {requests: 1, arrival: {process: poisson, rate: 1}}\n",
		   1, "engine.ipc_hop", "");
}
END_TEST

static Suite *frontend_suite(void)
{
	Suite *s = suite_create("frontend");
	TCase *tc = tcase_create("core");

	tcase_add_test(tc, chunk_arithmetic);
	tcase_add_test(tc, lone_request_exact);
	tcase_add_test(tc, stream_interval_chunks);
	tcase_add_test(tc, queue_behind_api_server);
	tcase_add_test(tc, macro_matches_exact);
	tcase_add_test(tc, bad_options);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return kv_test_run_suite(frontend_suite());
}
