/*
 * test_engine.c -- the event engine, continuous batching, fifo, full, the
 * routers: end-to-end on small generated workloads.
 */
#include "output.h"
#include "simtest.h"
#include "profile_load.h"

#include "testutil.h"

#include <check.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Accounting figures of a drf/wdrf replica (sim/sched_drf.c). */
double kv_drf_share(const struct kv_replica *r, uint32_t tenant, double *mem, double *cmp);
uint64_t kv_drf_tokens(const struct kv_replica *r, uint32_t tenant);

/* A sink recording the requests it saw. */
struct rec {
	uint64_t n;
	uint64_t ended[KV_END_N];
	struct kv_req last;
	kv_ns finish[64];
	uint32_t replica[64];
};

static int rec_request(void *ctx, const struct kv_sim *s, const struct kv_req *q, enum kv_end e)
{
	struct rec *r = ctx;

	(void)s;
	if (q->id < 64) {
		r->finish[q->id] = q->finish_ns;
		r->replica[q->id] = q->replica;
	}
	r->last = *q;
	r->n++;
	r->ended[e]++;
	return 0;
}

static void run(struct kv_workload *w, struct rec *r, struct kv_sim *s)
{
	struct kv_sink sink = { .ctx = r, .request = rec_request };

	memset(r, 0, sizeof(*r));
	sim_start(w, s, &sink, 1);
	sim_finish(s);
}

static kv_ns decode_ns(const struct kv_sim *s, uint64_t ctx)
{
	struct kv_batch_shape b = { .n_seqs = 1, .n_decode = 1, .n_sample = 1, .attn_pairs = ctx,
				    .kv_read_bytes = ctx * s->grp[0].token_bytes };

	return kv_perf_iter_ns(&s->grp[0].perf, &b);
}

/* A prefill chunk; the last one samples the first output token (LM head). */
static kv_ns prefill_ns(const struct kv_sim *s, uint64_t done, uint64_t chunk, int last)
{
	struct kv_batch_shape b = { .n_seqs = 1, .n_prefill_tokens = chunk, .n_sample = !!last,
				    .attn_pairs = kv_perf_prefill_pairs(done, chunk),
				    .kv_read_bytes = (done + chunk) * s->grp[0].token_bytes };

	return kv_perf_iter_ns(&s->grp[0].perf, &b);
}

/*
 * The front end's share of q's latency (frontend.h): its way in (queue,
 * request_cpu, tokenisation, hop) and its way out (hops, detokenisation,
 * SSE chunk, frontend_overhead).  The engine's own time is the rest.
 */
static kv_ns fe_ns(const struct kv_sim *s, const struct kv_req *q)
{
	return q->fe_in_ns + s->rep[q->replica].fe.out_ns + s->rep[q->replica].fe.extra_ns;
}

#define LONE "model: llama-2-7b\ndevice: a100-80g\nscheduler: fifo\ncache: full\n" \
	     "outputs: {sample_interval: 0}\n"

/* A lone request takes exactly its prefill plus T - 1 decode iterations. */
START_TEST(lone_request_exact_time)
{
	struct kv_workload w;
	struct kv_sim s;
	struct rec r;
	kv_ns want_first, want_total;
	uint64_t i, P = 100, T = 10;

	load(&w, LONE "workload:\n  requests: 1\n  arrival: {process: poisson, rate: 1}\n"
		      "  lengths: {dist: fixed, prompt: 100, output: 10}\n");
	run(&w, &r, &s);
	want_first = prefill_ns(&s, 0, P, 1) + fe_ns(&s, &r.last);
	want_total = want_first;
	for (i = 1; i < T; i++)
		want_total += decode_ns(&s, P + i);
	ck_assert_uint_eq(r.n, 1);
	ck_assert_uint_eq(r.ended[KV_END_COMPLETED], 1);
	ck_assert_msg(r.last.first_token_ns - r.last.arrival_ns == want_first,
		      "TTFT %llu ns, perf model says %llu",
		      (unsigned long long)(r.last.first_token_ns - r.last.arrival_ns),
		      (unsigned long long)want_first);
	ck_assert_msg(r.last.finish_ns - r.last.arrival_ns == want_total,
		      "E2E %llu ns, perf model says %llu",
		      (unsigned long long)(r.last.finish_ns - r.last.arrival_ns),
		      (unsigned long long)want_total);
	ck_assert_uint_eq(s.rep[0].iterations, T);
	ck_assert_uint_eq(r.last.generated, T);
	kv_sim_release(&s);
	kv_workload_release(&w);
}
END_TEST

/* A prompt over the budget is prefilled in budget-sized chunks. */
START_TEST(chunked_prefill_iterations)
{
	struct kv_workload w;
	struct kv_sim s;
	struct rec r;
	kv_ns want;

	load(&w, LONE "batching: {max_tokens: 1024}\nworkload:\n  requests: 1\n"
		      "  arrival: {process: poisson, rate: 1}\n"
		      "  lengths: {dist: fixed, prompt: 3000, output: 2}\n");
	run(&w, &r, &s);
	want = prefill_ns(&s, 0, 1024, 0) + prefill_ns(&s, 1024, 1024, 0) +
	       prefill_ns(&s, 2048, 952, 1) +
	       decode_ns(&s, 3001) + fe_ns(&s, &r.last);
	ck_assert_uint_eq(s.rep[0].iterations, 4);
	ck_assert_msg(r.last.finish_ns - r.last.arrival_ns == want, "E2E %llu, expected %llu",
		      (unsigned long long)(r.last.finish_ns - r.last.arrival_ns),
		      (unsigned long long)want);
	kv_sim_release(&s);
	kv_workload_release(&w);
}
END_TEST

/* Without chunked prefill the prompt runs whole, alone. */
START_TEST(unchunked_prefill)
{
	struct kv_workload w;
	struct kv_sim s;
	struct rec r;

	load(&w, LONE "batching: {max_tokens: 1024, chunked_prefill: false}\nworkload:\n"
		      "  requests: 1\n  arrival: {process: poisson, rate: 1}\n"
		      "  lengths: {dist: fixed, prompt: 3000, output: 2}\n");
	run(&w, &r, &s);
	ck_assert_uint_eq(s.rep[0].iterations, 2);
	ck_assert_uint_eq(r.last.finish_ns - r.last.arrival_ns,
			  prefill_ns(&s, 0, 3000, 1) + decode_ns(&s, 3001) + fe_ns(&s, &r.last));
	kv_sim_release(&s);
	kv_workload_release(&w);
}
END_TEST

/* Zero output tokens: the request ends with its prefill. */
START_TEST(zero_output)
{
	struct kv_workload w;
	struct kv_sim s;
	struct rec r;

	load(&w, LONE "workload:\n  requests: 3\n  arrival: {process: poisson, rate: 0.001}\n"
		      "  lengths: {dist: fixed, prompt: 64, output: 0}\n");
	run(&w, &r, &s);
	ck_assert_uint_eq(r.ended[KV_END_COMPLETED], 3);
	ck_assert_uint_eq(s.rep[0].iterations, 3);
	kv_sim_release(&s);
	kv_workload_release(&w);
}
END_TEST

/* Under load every request ends once; full never preempts; memory returns. */
START_TEST(conservation_under_load)
{
	struct kv_workload w;
	struct kv_sim s;
	struct rec r;

	/* 8 MiB units keep the per-event pool check cheap (about 900 units per replica). */
	load(&w, "model: llama-2-13b\ndevice: a100-40g\nscheduler: fifo\ncache: full\n"
		 "memory: {min_block: 8MiB}\n"
		 "cluster: {replicas: 3, router: least-outstanding-tokens}\n"
		 "workload:\n  requests: 400\n  arrival: {process: gamma, rate: 50, cv: 3}\n"
		 "  lengths: {dist: uniform, prompt_min: 1, prompt_max: 1500, output_min: 0, output_max: 500}\n"
		 "outputs: {sample_interval: 0.5s}\n");
	run(&w, &r, &s);
	ck_assert_uint_eq(r.n, 400);
	ck_assert_uint_eq(r.ended[KV_END_COMPLETED], 400);
	ck_assert_uint_eq(s.preemptions, 0);
	ck_assert_msg(s.peak_live > 20, "expected queueing under overload, peak %llu",
		      (unsigned long long)s.peak_live);
	kv_sim_release(&s);
	kv_workload_release(&w);
}
END_TEST

/* A request whose reservation exceeds the pool is rejected, not looped on. */
START_TEST(larger_than_pool_rejected)
{
	struct kv_workload w;
	struct kv_sim s;
	struct rec r;

	/* 13B on a 40 GB card at a 0.76 share: a 1.8 GB pool, below 4000 x 800 KiB. */
	load(&w, "model: llama-2-13b\ndevice: a100-40g\nmemory: {share: 0.76}\n"
		 "cache: {name: full, reserve: request}\n"
		 "workload:\n  requests: 4\n  arrival: {process: poisson, rate: 1}\n"
		 "  lengths: {dist: uniform, prompt_min: 100, prompt_max: 3000, output_min: 10, output_max: 1000}\n"
		 "outputs: {sample_interval: 0}\n");
	run(&w, &r, &s);
	ck_assert_uint_eq(r.n, 4);
	ck_assert_uint_eq(r.ended[KV_END_COMPLETED] + r.ended[KV_END_REJECTED_POOL], 4);
	ck_assert_msg(r.ended[KV_END_REJECTED_POOL] >= 1, "no rejection");
	kv_sim_release(&s);
	kv_workload_release(&w);
}
END_TEST

/* Oversize policies: reject counts, clip shortens. */
START_TEST(oversize_policies)
{
	struct kv_workload w;
	struct kv_sim s;
	struct rec r;

	load(&w, LONE "workload:\n  requests: 5\n  oversize: reject\n"
		      "  arrival: {process: poisson, rate: 1}\n"
		      "  lengths: {dist: fixed, prompt: 4000, output: 200}\n");
	run(&w, &r, &s);
	ck_assert_uint_eq(r.ended[KV_END_REJECTED_CONTEXT], 5);
	kv_sim_release(&s);
	kv_workload_release(&w);
	load(&w, LONE "workload:\n  requests: 5\n  oversize: clip\n"
		      "  arrival: {process: poisson, rate: 1}\n"
		      "  lengths: {dist: fixed, prompt: 4000, output: 200}\n");
	run(&w, &r, &s);
	ck_assert_uint_eq(r.ended[KV_END_COMPLETED], 5);
	ck_assert_uint_eq(r.last.prompt_tokens + r.last.output_tokens, 4096);
	kv_sim_release(&s);
	kv_workload_release(&w);
}
END_TEST

/* Round-robin spreads arrivals cyclically. */
START_TEST(round_robin)
{
	struct kv_workload w;
	struct kv_sim s;
	struct rec r;
	int i;

	load(&w, LONE "cluster: {replicas: 3, router: round-robin}\nworkload:\n  requests: 30\n"
		      "  arrival: {process: poisson, rate: 10}\n"
		      "  lengths: {dist: fixed, prompt: 10, output: 5}\n");
	run(&w, &r, &s);
	for (i = 0; i < 30; i++)
		ck_assert_uint_eq(r.replica[i], (uint32_t)(i % 3));
	kv_sim_release(&s);
	kv_workload_release(&w);
}
END_TEST

/* FIFO: with equal requests on one replica, finish order follows arrival order. */
START_TEST(fifo_order)
{
	struct kv_workload w;
	struct kv_sim s;
	struct rec r;
	int i;

	load(&w, LONE "batching: {max_seqs: 2}\nworkload:\n  requests: 20\n"
		      "  arrival: {process: poisson, rate: 1000}\n"
		      "  lengths: {dist: fixed, prompt: 50, output: 20}\n");
	run(&w, &r, &s);
	for (i = 1; i < 20; i++)
		ck_assert_msg(r.finish[i] >= r.finish[i - 1], "request %d finished before %d", i,
			      i - 1);
	kv_sim_release(&s);
	kv_workload_release(&w);
}
END_TEST

/* Offload: preempted requests' KV goes to host and back; bytes are conserved, copies cost time. */
START_TEST(offload_swaps)
{
	static const char *const variants[] = { "offload: false", "offload: true, overlap: false",
						 "offload: true, overlap: true" };
	kv_ns makespan[3];
	struct kv_workload w;
	struct kv_sim s;
	struct rec r;
	char yaml[1024];
	int i;

	for (i = 0; i < 3; i++) {
		snprintf(yaml, sizeof(yaml),
			 "model: llama-2-13b\ndevice: a100-40g\n"
			 "cache: {name: chunked, %s}\n"
			 "workload:\n  requests: 150\n  arrival: {process: poisson, rate: 40}\n"
			 "  lengths: {dist: uniform, prompt_min: 200, prompt_max: 1200, output_min: 200, output_max: 900}\n"
			 "outputs: {sample_interval: 0}\n", variants[i]);
		load(&w, yaml);
		run(&w, &r, &s);
		ck_assert_uint_eq(r.ended[KV_END_COMPLETED], 150);
		ck_assert_msg(s.preemptions > 0, "%s: no preemption: raise the load", variants[i]);
		if (i == 0)
			ck_assert_uint_eq(s.rep[0].swap_out_bytes, 0);
		else
			ck_assert_msg(s.rep[0].swap_out_bytes > 0 &&
					      s.rep[0].swap_out_bytes == s.rep[0].swap_in_bytes,
				      "%s: out %llu in %llu", variants[i],
				      (unsigned long long)s.rep[0].swap_out_bytes,
				      (unsigned long long)s.rep[0].swap_in_bytes);
		makespan[i] = s.last_finish_ns;
		kv_sim_release(&s);
		kv_workload_release(&w);
	}
	ck_assert_msg(makespan[2] <= makespan[1], "overlapped copies (%llu ns) slower than serial (%llu ns)",
		      (unsigned long long)makespan[2], (unsigned long long)makespan[1]);
}
END_TEST

/* A lone request takes the same time under chunked as under full: the cache changes memory, not compute. */
START_TEST(lone_request_chunked)
{
	struct kv_workload w;
	struct kv_sim s;
	struct rec r;
	kv_ns full_e2e;

	load(&w, LONE "workload:\n  requests: 1\n  arrival: {process: poisson, rate: 1}\n"
		      "  lengths: {dist: fixed, prompt: 700, output: 40}\n");
	run(&w, &r, &s);
	full_e2e = r.last.finish_ns - r.last.arrival_ns;
	kv_sim_release(&s);
	kv_workload_release(&w);
	load(&w, "model: llama-2-7b\ndevice: a100-80g\ncache: chunked\noutputs: {sample_interval: 0}\n"
		 "workload:\n  requests: 1\n  arrival: {process: poisson, rate: 1}\n"
		 "  lengths: {dist: fixed, prompt: 700, output: 40}\n");
	run(&w, &r, &s);
	ck_assert_uint_eq(r.last.finish_ns - r.last.arrival_ns, full_e2e);
	/* 700 + 39 tokens in 16-token blocks of 8 MiB: 47 blocks */
	ck_assert_uint_eq(s.rep[0].peak_reserved_bytes, 47ULL * 8 * KV_MiB);
	kv_sim_release(&s);
	kv_workload_release(&w);
}
END_TEST

/* A running request that cannot grow even alone is rejected once, cleanly (regression). */
START_TEST(reject_alone_running)
{
	static const char *const scheds[] = { "fifo", "drf", "vtc", "preempt" };
	struct kv_workload w;
	struct kv_sim s;
	struct rec r;
	char yaml[512];
	unsigned i;

	for (i = 0; i < KV_ARRAY_LEN(scheds); i++) {
		snprintf(yaml, sizeof(yaml),
			 "model: llama-2-13b\ndevice: a100-40g\nmemory: {share: 0.795}\n"
			 "scheduler: %s\ncache: chunked\noutputs: {sample_interval: 0}\n"
			 "workload:\n  requests: 1\n  arrival: {process: poisson, rate: 1}\n"
			 "  lengths: {dist: fixed, prompt: 3000, output: 1090}\n", scheds[i]);
		load(&w, yaml);
		run(&w, &r, &s);
		ck_assert_msg(r.ended[KV_END_REJECTED_POOL] == 1, "%s: not rejected", scheds[i]);
		kv_sim_release(&s);
		kv_workload_release(&w);
	}
}
END_TEST

/*
 * Every path that adds a decode step counts it the same way: with memory to
 * spare and prompts within one budget, the batches of fifo and of preempt
 * with two priority levels hold the same requests, so each request ends at
 * the same time.  The replica's ranked pass (preempt) schedules running
 * requests one by one through the inline schedule(); fifo's through the
 * batched schedule_running() (sim/replica.c).  (The inline path once left n_sample out,
 * and preempt's iterations came out shorter.)
 */
START_TEST(decode_paths_agree)
{
	static const char *const scheds[] = { "fifo", "preempt" };
	kv_ns finish[2][64];
	struct kv_workload w;
	struct kv_sim s;
	struct rec r;
	char yaml[768];
	unsigned i, j;

	for (i = 0; i < 2; i++) {
		snprintf(yaml, sizeof(yaml),
			 "model: llama-2-7b\ndevice: a100-80g\nscheduler: %s\ncache: chunked\n"
			 "outputs: {sample_interval: 0}\n"
			 "workload:\n  requests: 12\n  arrival: {process: poisson, rate: 50}\n"
			 "  lengths: {dist: fixed, prompt: 100, output: 40}\n"
			 "  tenants:\n    - {name: lo, share: 1, priority: 0}\n"
			 "    - {name: hi, share: 1, priority: 1}\n", scheds[i]);
		load(&w, yaml);
		run(&w, &r, &s);
		ck_assert_msg(r.ended[KV_END_COMPLETED] == 12 && s.preemptions == 0,
			      "%s: %llu completed, %llu preemptions", scheds[i],
			      (unsigned long long)r.ended[KV_END_COMPLETED],
			      (unsigned long long)s.preemptions);
		memcpy(finish[i], r.finish, sizeof(finish[i]));
		kv_sim_release(&s);
		kv_workload_release(&w);
	}
	for (j = 0; j < 12; j++)
		ck_assert_msg(finish[0][j] == finish[1][j], "request %u ends at %llu ns under fifo, %llu under preempt",
			      j, (unsigned long long)finish[0][j], (unsigned long long)finish[1][j]);
}
END_TEST

/* The histogram's quantiles are within its stated relative error. */
START_TEST(hist_quantiles)
{
	struct kv_hist h;
	uint64_t i;

	kv_hist_init(&h);
	for (i = 1; i <= 100000; i++)
		kv_hist_add(&h, i * 1000);
	ck_assert_uint_eq(kv_hist_quantile(&h, 0), 1000);
	ck_assert_uint_eq(kv_hist_quantile(&h, 1), 100000000);
	for (i = 1; i < 100; i++) {
		double want = (double)i * 1000.0 * 1000.0, got = (double)kv_hist_quantile(&h, (double)i / 100);

		ck_assert_msg(got > want * (1 - 0.004) && got < want * (1 + 0.004),
			      "q%llu: %g vs %g", (unsigned long long)i, got, want);
	}
	kv_hist_release(&h);
	ck_assert_double_eq_tol(kv_jain((double[]){ 1, 1, 1 }, 3), 1.0, 1e-12);
	ck_assert_double_eq_tol(kv_jain((double[]){ 1, 0 }, 2), 0.5, 1e-12);
}
END_TEST

/*
 * Macro steps, counted by hand.  A lone request of prompt P and T outputs
 * runs one prefill and T - 1 decodes.  After the prefill the batch is one
 * decode with T - 1 tokens to go: one macro step of T - 1 steps, the first
 * T - 2 applied lazily and the last its event.  Under `full` (4096 tokens
 * reserved) no decode outgrows the holding; under `chunked` (16-token blocks
 * of one 8 MiB unit each) the decodes after kv = 704, 720, 736 reserve a
 * block inside the macro step.  Both ways give the same times, iterations,
 * event count, memory integral and peak, to the bit.
 */
static void macro_lone(const char *cache, uint64_t P, uint64_t T, uint64_t want_macro,
		       uint64_t peak)
{
	char yaml[512];
	struct kv_workload w;
	struct kv_sim s;
	struct rec r[2];
	struct kv_sink sink;
	uint64_t events[2], macro[2], iters[2], pk[2];
	double memtime[2];
	int exact;

	snprintf(yaml, sizeof(yaml),
		 "model: llama-2-7b\ndevice: a100-80g\nscheduler: fifo\ncache: %s\n"
		 "outputs: {sample_interval: 0}\nworkload:\n  requests: 1\n"
		 "  arrival: {process: poisson, rate: 1}\n"
		 "  lengths: {dist: fixed, prompt: %llu, output: %llu}\n",
		 cache, (unsigned long long)P, (unsigned long long)T);
	for (exact = 0; exact < 2; exact++) {
		load(&w, yaml);
		w.cfg.exact_steps = exact;
		memset(&r[exact], 0, sizeof(r[exact]));
		sink = (struct kv_sink){ .ctx = &r[exact], .request = rec_request };
		sim_start(&w, &s, &sink, 1);
		sim_finish(&s);
		events[exact] = s.events;
		macro[exact] = s.macro_steps;
		iters[exact] = s.rep[0].iterations;
		pk[exact] = s.rep[0].peak_reserved_bytes;
		memtime[exact] = r[exact].last.memtime_Bs;
		kv_sim_release(&s);
		kv_workload_release(&w);
	}
	ck_assert_uint_eq(macro[0], want_macro);
	ck_assert_uint_eq(macro[1], 0);
	ck_assert_uint_eq(iters[0], T);
	ck_assert_uint_eq(iters[1], T);
	/* the arrival, its hand-off from the front end, then one ITER_DONE per iteration */
	ck_assert_uint_eq(events[0], 2 + T);
	ck_assert_uint_eq(events[1], 2 + T);
	ck_assert_uint_eq(r[0].last.finish_ns, r[1].last.finish_ns);
	ck_assert_uint_eq(r[0].last.first_token_ns, r[1].last.first_token_ns);
	ck_assert_uint_eq(pk[0], peak);
	ck_assert_uint_eq(pk[1], peak);
	ck_assert_msg(memcmp(&memtime[0], &memtime[1], sizeof(double)) == 0,
		      "memtime %.17g macro, %.17g exact", memtime[0], memtime[1]);
}

START_TEST(macro_steps_lone)
{
	/* full: 9 decodes, 8 of them inside the macro step; 4096 tokens of 512 KiB reserved */
	macro_lone("full", 100, 10, 8, 4096ULL * 512 * 1024);
	/* chunked: 39 decodes, 38 inside, 3 of those reserving; 700 + 39 tokens in 47 blocks */
	macro_lone("chunked", 700, 40, 38, 47ULL * 8 * KV_MiB);
}
END_TEST

/*
 * A waiting request refused memory, counted by hand.  The pool is pinned
 * to 1500 tokens (93 units of 8 MiB); `full` reserves 1024 tokens (64
 * units) a request, so one fits.  Two requests (prompt 100, T = 10
 * outputs) arrive a microsecond apart, the second during the first's
 * prefill.  Every formation while the first runs refuses the second its
 * 64 units (29 free): after the prefill and after decodes 1 .. T - 2, so
 * T - 1 refusals, each one failed allocation (alloc_fail), none with
 * enough free bytes (alloc_fail_frag 0).  The T - 1 decodes are one macro
 * step of T - 1 steps (T - 2 applied lazily) whose formations repeat the
 * refusal (macro.c refuse); then the second runs alone, T - 2 of
 * its decodes lazily.  Both ways: the same counters, events (2 arrivals
 * and 2T iterations) and finish times.
 */
START_TEST(macro_refused)
{
	const uint64_t T = 10;
	const char *yaml = "model: llama-2-7b\ndevice: a100-80g\nscheduler: fifo\n"
			   "cache: {name: full, max_len: 1024}\nmemory: {kv_tokens: 1500}\n"
			   "outputs: {sample_interval: 0}\nworkload:\n  requests: 2\n"
			   "  arrival: {process: poisson, rate: 1000000}\n"
			   "  lengths: {dist: fixed, prompt: 100, output: 10}\n";
	struct kv_workload w;
	struct kv_sim s;
	struct rec r[2];
	struct kv_sink sink;
	uint64_t events[2], macro[2], fail[2], frag[2], units[2];
	int exact;

	for (exact = 0; exact < 2; exact++) {
		load(&w, yaml);
		w.cfg.exact_steps = exact;
		memset(&r[exact], 0, sizeof(r[exact]));
		sink = (struct kv_sink){ .ctx = &r[exact], .request = rec_request };
		sim_start(&w, &s, &sink, 1);
		sim_finish(&s);
		events[exact] = s.events;
		macro[exact] = s.macro_steps;
		fail[exact] = s.rep[0].pool.alloc_fail;
		frag[exact] = s.rep[0].pool.alloc_fail_frag;
		units[exact] = s.rep[0].pool.n_units;
		kv_sim_release(&s);
		kv_workload_release(&w);
	}
	ck_assert_uint_eq(units[0], 93);
	ck_assert_uint_eq(r[0].ended[KV_END_COMPLETED], 2);
	ck_assert_uint_eq(fail[0], T - 1);
	ck_assert_uint_eq(fail[1], T - 1);
	ck_assert_uint_eq(frag[0], 0);
	ck_assert_uint_eq(frag[1], 0);
	ck_assert_uint_eq(macro[0], 2 * (T - 2)); /* before refusals were repeated: T - 2 */
	ck_assert_uint_eq(macro[1], 0);
	ck_assert_uint_eq(events[0], 4 + 2 * T); /* two arrivals and their front-end hand-offs */
	ck_assert_uint_eq(events[1], 4 + 2 * T);
	ck_assert_uint_eq(r[0].finish[0], r[1].finish[0]);
	ck_assert_uint_eq(r[0].finish[1], r[1].finish[1]);
	ck_assert_uint_gt(r[0].finish[1], r[0].finish[0]);
}
END_TEST

/*
 * SGLang's new-token ratio inside macro steps, by hand: a lone request
 * (prompt 100, T = 40 outputs) runs one prefill batch (no decay) and T - 1
 * decode batches, each decaying the ratio by (0.7 - 0.098) / 600 from 0.7;
 * SGLang's radix cache (the `shared` model, 16-token blocks) promises each
 * block's growth once the prompt's blocks are published (shared_grow_units),
 * so the decodes at contexts 101 .. 139 run as one macro step of 39 steps,
 * 38 applied lazily, whose formations' decays the engine's macro_apply
 * makes.  Both ways the ratio is the T - 1 subtractions made
 * one by one, to the bit.
 */
START_TEST(macro_sglang)
{
	const uint64_t T = 40;
	const char *yaml = "model: llama-2-7b\ndevice: a100-80g\nscheduler: fifo\nengine: sglang\n"
			   "outputs: {sample_interval: 0}\nworkload:\n  requests: 1\n"
			   "  arrival: {process: poisson, rate: 1}\n"
			   "  lengths: {dist: fixed, prompt: 100, output: 40}\n";
	struct kv_workload w;
	struct kv_sim s;
	double ratio[2], want = 0.7;
	uint64_t macro[2], events[2], k;
	int exact;

	for (k = 0; k + 1 < T; k++) {
		want -= (0.7 - 0.098) / 600.0;
		want = KV_MAX(want, 0.098);
	}
	for (exact = 0; exact < 2; exact++) {
		load(&w, yaml);
		w.cfg.exact_steps = exact;
		sim_start(&w, &s, NULL, 1);
		sim_finish(&s);
		ratio[exact] = kv_engine_sglang_ratio(s.rep[0].eng_priv);
		macro[exact] = s.macro_steps;
		events[exact] = s.events;
		kv_sim_release(&s);
		kv_workload_release(&w);
	}
	ck_assert_uint_eq(macro[0], T - 2);
	ck_assert_uint_eq(macro[1], 0);
	ck_assert_uint_eq(events[0], 2 + T); /* with the front end's hand-off */
	ck_assert_uint_eq(events[1], 2 + T);
	ck_assert_msg(memcmp(&ratio[0], &want, sizeof(double)) == 0 &&
			      memcmp(&ratio[1], &want, sizeof(double)) == 0,
		      "ratio %.17g macro, %.17g exact, %.17g by hand", ratio[0], ratio[1], want);
}
END_TEST

/*
 * kv_sum_exact, by hand: whole multiples of a power of two below 2^53 of
 * it are exact, anything that needs a 54th bit is not; and where it says
 * exact, the additions one by one give the one product.
 */
START_TEST(sum_exact)
{
	const double two53 = 9007199254740992.0;
	static const double cs[] = { 0, 0.5, 3, 1024.25, 1e9 };
	static const double xs[] = { 0, 0.25, 1, 2, 0.375, 6.5 };
	size_t i, j;

	ck_assert(kv_sum_exact(0, 2, 1000000));
	ck_assert(kv_sum_exact(3.0 / 1024, 1.0 / 1024, (1ULL << 43) - 4));
	ck_assert(kv_sum_exact(two53 - 2, 1, 1));
	ck_assert(!kv_sum_exact(two53 - 2, 1, 2)); /* 2^53 is a double, but the bound is strict */
	ck_assert(!kv_sum_exact(1, 0.1, 1)); /* 1.1 rounds */
	ck_assert(!kv_sum_exact(0, 0.1, 3)); /* 0.1 has 53 significant bits: 3 x needs more */
	ck_assert(kv_sum_exact(0, 0.1, 1)); /* 0 + 0.1 is 0.1 */
	ck_assert(!kv_sum_exact(0, 2.0 / 3, 2));
	ck_assert(!kv_sum_exact(-1, 1, 1));
	ck_assert(!kv_sum_exact(0, -1, 1));
	ck_assert(!kv_sum_exact(1.0 / 0.0, 1, 1));
	ck_assert(kv_sum_exact(1e300, 0, 5)); /* adding zero */
	for (i = 0; i < KV_ARRAY_LEN(cs); i++) {
		for (j = 0; j < KV_ARRAY_LEN(xs); j++) {
			double c = cs[i], x = xs[j], one = c;
			uint64_t k, m = 10000;

			ck_assert_msg(kv_sum_exact(c, x, m), "c %g x %g m %llu", c, x,
				      (unsigned long long)m);
			for (k = 0; k < m; k++)
				one += x;
			ck_assert_msg(one == c + x * (double)m, "c %g x %g: %.17g one by one, %.17g at once",
				      c, x, one, c + x * (double)m);
		}
	}
}
END_TEST

/*
 * Macro steps under the fair and priority schedulers with several tenants
 * (weights 1, 2 and 1/2, distinct priorities), on one replica whose
 * sequence cap (6) fills, so that requests wait while batches repeat: VTC
 * with an output weight of 0.1 (counters that are not exact sums: added one
 * by one), drf, wdrf, preempt with mlfq levels and aging.  Each runs with
 * and without macro steps: macro steps ran, and every request's finish,
 * the event count, every tenant's service and virtual service, and under
 * drf/wdrf every tenant's share and tokens are the same to the bit.
 */
START_TEST(macro_tenants)
{
	static const char *const scheds[] = {
		"{name: vtc, output_weight: 0.1}", "drf", "{name: wdrf, window: 2s}",
		"{name: preempt, priority: mlfq, aging: 3s, segment_tokens: 48}", "{name: preempt, aging: 2s}",
		"priority",
	};
	static struct rec r[2];
	char yaml[1024];
	size_t i;

	for (i = 0; i < KV_ARRAY_LEN(scheds); i++) {
		double svc[2][3], vsvc[2][3], share[2][3];
		uint64_t events[2], macro[2], tok[2][3];
		int exact, drf = !strncmp(scheds[i], "drf", 3) || strstr(scheds[i], "wdrf");
		uint32_t t;

		snprintf(yaml, sizeof(yaml),
			 "model: llama-2-7b\ndevice: a100-80g\nscheduler: %s\ncache: chunked\n"
			 "batching: {max_tokens: 512, max_seqs: 6}\n"
			 "outputs: {sample_interval: 0.5s}\nworkload:\n  requests: 60\n"
			 "  arrival: {process: poisson, rate: 8}\n"
			 "  lengths: {dist: uniform, prompt_min: 20, prompt_max: 400, output_min: 1, output_max: 200}\n"
			 "  tenants:\n"
			 "    - {name: a, share: 2, weight: 1, priority: 0, request_priority: 2}\n"
			 "    - {name: b, share: 1, weight: 2, priority: 2, request_priority: 0}\n"
			 "    - {name: c, share: 1, weight: 0.5, priority: 1, request_priority: 1}\n",
			 scheds[i]);
		for (exact = 0; exact < 2; exact++) {
			struct kv_workload w;
			struct kv_sim s;

			load(&w, yaml);
			w.cfg.exact_steps = exact;
			run(&w, &r[exact], &s);
			events[exact] = s.events;
			macro[exact] = s.macro_steps;
			for (t = 0; t < 3; t++) {
				svc[exact][t] = s.tenant[t].service;
				vsvc[exact][t] = s.tenant[t].vservice;
				share[exact][t] = drf ? kv_drf_share(&s.rep[0], t, NULL, NULL) : 0;
				tok[exact][t] = drf ? kv_drf_tokens(&s.rep[0], t) : 0;
			}
			kv_sim_release(&s);
			kv_workload_release(&w);
		}
		ck_assert_msg(macro[0] > 0 && macro[1] == 0, "%s: %llu / %llu macro steps", scheds[i],
			      (unsigned long long)macro[0], (unsigned long long)macro[1]);
		ck_assert_msg(events[0] == events[1], "%s: %llu events, %llu exact", scheds[i],
			      (unsigned long long)events[0], (unsigned long long)events[1]);
		ck_assert_uint_eq(r[0].n, 60);
		ck_assert_msg(memcmp(r[0].finish, r[1].finish, sizeof(r[0].finish)) == 0,
			      "%s: finish times differ", scheds[i]);
		ck_assert_msg(memcmp(svc[0], svc[1], sizeof(svc[0])) == 0 &&
				      memcmp(vsvc[0], vsvc[1], sizeof(vsvc[0])) == 0,
			      "%s: service %.17g %.17g %.17g vs %.17g %.17g %.17g", scheds[i], svc[0][0],
			      svc[0][1], svc[0][2], svc[1][0], svc[1][1], svc[1][2]);
		ck_assert_msg(memcmp(share[0], share[1], sizeof(share[0])) == 0 &&
				      memcmp(tok[0], tok[1], sizeof(tok[0])) == 0,
			      "%s: shares %.17g %.17g %.17g vs %.17g %.17g %.17g", scheds[i], share[0][0],
			      share[0][1], share[0][2], share[1][0], share[1][1], share[1][2]);
	}
}
END_TEST

/*
 * Macro steps follow from what a scheduler declares (scheduler.h): every
 * built-in one declares enough; without an order, or without what its
 * order needs (a FAIR policy whose head blocks: how many tenants wait; a
 * PRIORITY one: how long its priorities hold), a replica takes none.
 */
START_TEST(macro_declarations)
{
	static const char *const names[] = { "fifo", "drf", "wdrf", "vtc", "preempt", "priority" };
	struct kv_sched_ops o;
	size_t i;

	for (i = 0; i < KV_ARRAY_LEN(names); i++)
		ck_assert_msg(kv__macro_sched_ok(kv_sched_find(names[i])), "%s declares too little",
			      names[i]);
	o = *kv_sched_find("fifo");
	o.order = KV_ORDER_UNDECLARED;
	ck_assert(!kv__macro_sched_ok(&o));
	o = *kv_sched_find("vtc");
	o.backlogged = NULL;
	ck_assert(!kv__macro_sched_ok(&o));
	o.head_blocks = 0; /* then it never repeats a refusal: nothing to count */
	ck_assert(kv__macro_sched_ok(&o));
	o = *kv_sched_find("preempt");
	o.ranks_hold = NULL;
	ck_assert(!kv__macro_sched_ok(&o));
}
END_TEST

static Suite *engine_suite(void)
{
	Suite *s = suite_create("engine");
	TCase *tc = tcase_create("core");

	tcase_add_test(tc, lone_request_exact_time);
	tcase_add_test(tc, chunked_prefill_iterations);
	tcase_add_test(tc, unchunked_prefill);
	tcase_add_test(tc, zero_output);
	tcase_add_test(tc, conservation_under_load);
	tcase_add_test(tc, larger_than_pool_rejected);
	tcase_add_test(tc, oversize_policies);
	tcase_add_test(tc, round_robin);
	tcase_add_test(tc, fifo_order);
	tcase_add_test(tc, hist_quantiles);
	tcase_add_test(tc, offload_swaps);
	tcase_add_test(tc, lone_request_chunked);
	tcase_add_test(tc, reject_alone_running);
	tcase_add_test(tc, decode_paths_agree);
	tcase_add_test(tc, macro_steps_lone);
	tcase_add_test(tc, macro_refused);
	tcase_add_test(tc, macro_sglang);
	tcase_add_test(tc, sum_exact);
	tcase_add_test(tc, macro_tenants);
	tcase_add_test(tc, macro_declarations);
	tcase_set_timeout(tc, 120);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return kv_test_run_suite(engine_suite());
}
