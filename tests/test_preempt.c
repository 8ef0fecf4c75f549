/*
 * test_preempt.c -- the priority-preemption scheduler: a short urgent
 * request evicts a long one from a full replica (by swap and by recompute,
 * tokens conserved, the cost visible in time), aging bounds the wait of low
 * priorities, one tenant is fifo, mlfq demotes long generators, long
 * requests take turns in segments, determinism, bad options.
 */
#include "output.h"
#include "simtest.h"

#include "testutil.h"

#include <check.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Runs w to the end; every completed request must have generated exactly its output. */
static void run(struct kv_workload *w, struct ends *r, struct kv_sim *s, int check_pool)
{
	struct kv_sink sink = { .ctx = r, .request = ends_request };

	memset(r, 0, sizeof(*r));
	sim_start(w, s, &sink, check_pool);
	sim_finish(s);
	ends_check(r);
}

static struct ends *rec_new(void)
{
	struct ends *r = calloc(1, sizeof(*r));

	ck_assert_ptr_nonnull(r);
	return r;
}

/* Mean TTFT (s) of tenant t's first n requests. */
static double mean_ttft_s(const struct ends *r, uint64_t n, uint32_t t)
{
	double sum = 0;
	uint64_t i, k = 0;

	for (i = 0; i < n && i < ENDS_MAX; i++)
		if (r->tenant[i] == t) {
			sum += (double)(r->first[i] - r->arrival[i]) / 1e9;
			k++;
		}
	return k ? sum / (double)k : 0;
}

/* The first seed whose first n arrivals come from tenants want[0..n-1]. */
static uint64_t seed_for(const struct kv_source_spec *spec, const uint32_t *want, int n)
{
	uint64_t seed;

	for (seed = 1; seed < 1000; seed++) {
		struct kv_source *src;
		struct kv_arrival a;
		struct kv_diag d;
		int i, ok = 1;

		ck_assert_int_eq(kv_source_open(spec, seed, &src, &d), 0);
		for (i = 0; i < n && ok; i++)
			ok = kv_source_next(src, &a, &d) == 1 && a.tenant == want[i];
		kv_source_close(src);
		if (ok)
			return seed;
	}
	ck_abort_msg("no seed gives the wanted tenant order");
	return 0;
}

/* --- a short urgent request at a full replica ----------------------------------- */

/*
 * 13B on a 40 GB card at a 0.8 share holds M of about 4100 tokens.  A bulk
 * request (priority 0) of prompt 0.86 M and output 0.12 M fits alone; at 3 s,
 * mid-decode, a vip request (prompt 0.15 M, output 20) arrives: it does not
 * fit beside the bulk one.
 */
#define URGENT_HEAD "model: llama-2-13b\ndevice: a100-40g\nmemory: {share: 0.8}\ncache: chunked\n"

struct urgent {
	struct ends *r;
	kv_ns makespan, bulk_e2e;
	uint64_t preemptions, swap_out, swap_in, swap_dropped;
	kv_ns copy_out_ns, copy_in_ns; /* host-link time of the swaps, as the engine costs them */
};

static void urgent_run(struct urgent *u, const char *sched, int vip_priority)
{
	static const uint32_t order[2] = { 0, 1 }; /* bulk first, then vip */
	struct kv_workload w;
	struct kv_sim s;
	char yaml[2048];
	const char *trace = temp_file("arrived_at,num_prefill_tokens,num_decode_tokens\n"
				      "0,1,1\n3,1,1\n", "", 1);
	uint64_t M;

	/* the pool, in tokens */
	load(&w, URGENT_HEAD "workload: {requests: 1, arrival: {process: poisson, rate: 1}}\n");
	ck_assert_int_eq(kv_sim_init(&s, &w.cfg, NULL), 0);
	M = (uint64_t)((double)s.grp[0].pool_bytes / s.rep[0].beta_bytes);
	kv_sim_release(&s);
	kv_workload_release(&w);

	snprintf(yaml, sizeof(yaml),
		 URGENT_HEAD "scheduler: %s\n"
		 "workload:\n  requests: 2\n  arrival: {process: trace, trace: %s, format: vidur}\n"
		 "  tenants:\n"
		 "    - {name: bulk, priority: 0, lengths: {dist: fixed, prompt: %llu, output: %llu}}\n"
		 "    - {name: vip, priority: %d, lengths: {dist: fixed, prompt: %llu, output: 20}}\n"
		 "outputs: {sample_interval: 0}\n",
		 sched, trace, (unsigned long long)(M * 86 / 100), (unsigned long long)(M * 12 / 100),
		 vip_priority, (unsigned long long)(M * 15 / 100));
	load(&w, yaml);
	w.cfg.seed = seed_for(&w.cfg.source, order, 2);
	u->r = rec_new();
	run(&w, u->r, &s, 1);
	unlink(trace);
	ck_assert_uint_eq(u->r->completed, 2);
	ck_assert_uint_eq(u->r->tenant[0], 0);
	u->makespan = s.last_finish_ns;
	u->bulk_e2e = u->r->finish[0] - u->r->arrival[0];
	u->preemptions = s.preemptions;
	u->swap_out = s.rep[0].swap_out_bytes;
	u->swap_in = s.rep[0].swap_in_bytes;
	u->swap_dropped = s.rep[0].swap_dropped_bytes;
	u->copy_out_ns = (kv_ns)ceil((double)u->swap_out / (w.cfg.device.host_link_Bps * w.cfg.tp) * 1e9);
	u->copy_in_ns = (kv_ns)ceil((double)u->swap_in / (w.cfg.device.host_link_Bps * w.cfg.tp) * 1e9);
	kv_sim_release(&s);
	kv_workload_release(&w);
}

/* The vip evicts the bulk request, by swap or by recompute, and finishes first; the eviction costs time. */
START_TEST(urgent_request_evicts)
{
	struct urgent eq, sw, rc, ch;

	urgent_run(&eq, "{name: preempt, mode: swap}", 0); /* equal priority: no eviction */
	urgent_run(&sw, "{name: preempt, mode: swap}", 1);
	urgent_run(&rc, "{name: preempt, mode: recompute}", 1);
	urgent_run(&ch, "{name: preempt}", 1); /* mode: cheaper, the default */
	fprintf(stderr,
		"urgent: equal priority makespan %.3f s (bulk E2E %.3f s, vip finishes %.3f s after it); "
		"swap %.3f s (bulk E2E %.3f s, %llu bytes out, copies %.1f ms); "
		"recompute %.3f s (bulk E2E %.3f s); vip TTFT %.3f s equal, %.3f s swap, %.3f s recompute\n",
		(double)eq.makespan / 1e9, (double)eq.bulk_e2e / 1e9,
		(double)(eq.r->finish[1] - eq.r->finish[0]) / 1e9, (double)sw.makespan / 1e9,
		(double)sw.bulk_e2e / 1e9, (unsigned long long)sw.swap_out,
		(double)(sw.copy_out_ns + sw.copy_in_ns) / 1e6, (double)rc.makespan / 1e9,
		(double)rc.bulk_e2e / 1e9, (double)(eq.r->first[1] - eq.r->arrival[1]) / 1e9,
		(double)(sw.r->first[1] - sw.r->arrival[1]) / 1e9,
		(double)(rc.r->first[1] - rc.r->arrival[1]) / 1e9);
	/* equal priority: the vip waits for the bulk request; nothing is evicted */
	ck_assert_uint_eq(eq.preemptions, 0);
	ck_assert_msg(eq.r->finish[1] > eq.r->finish[0], "equal priority: vip overtook bulk");
	/* higher priority: one eviction, the vip finishes first */
	ck_assert_uint_eq(sw.preemptions, 1);
	ck_assert_uint_eq(rc.preemptions, 1);
	ck_assert_uint_eq(sw.r->preemptions[0], 1);
	ck_assert_uint_eq(rc.r->preemptions[0], 1);
	ck_assert_msg(sw.r->finish[1] < sw.r->finish[0], "swap: vip did not finish first");
	ck_assert_msg(rc.r->finish[1] < rc.r->finish[0], "recompute: vip did not finish first");
	ck_assert_msg(sw.r->first[1] - sw.r->arrival[1] < (eq.r->first[1] - eq.r->arrival[1]) / 10,
		      "swap: vip TTFT not cut");
	/* swap moves the bulk KV out and back; recompute moves nothing */
	ck_assert_msg(sw.swap_out > 0 && sw.swap_out == sw.swap_in && sw.swap_dropped == 0,
		      "swap: out %llu in %llu dropped %llu", (unsigned long long)sw.swap_out,
		      (unsigned long long)sw.swap_in, (unsigned long long)sw.swap_dropped);
	ck_assert_uint_eq(rc.swap_out, 0);
	/*
	 * The eviction's cost shows in time.  Swap: the same iterations as
	 * without eviction, reordered, plus the two copies on the host link.
	 * Recompute: the bulk context prefilled again.
	 */
	ck_assert_msg(sw.makespan == eq.makespan + sw.copy_out_ns + sw.copy_in_ns,
		      "swap makespan %llu ns, expected %llu + %llu + %llu",
		      (unsigned long long)sw.makespan, (unsigned long long)eq.makespan,
		      (unsigned long long)sw.copy_out_ns, (unsigned long long)sw.copy_in_ns);
	ck_assert_msg(rc.makespan > eq.makespan, "recompute makespan %llu ns, not above %llu",
		      (unsigned long long)rc.makespan, (unsigned long long)eq.makespan);
	ck_assert_msg(sw.bulk_e2e > eq.bulk_e2e && rc.bulk_e2e > eq.bulk_e2e,
		      "bulk E2E not longer when preempted");
	/*
	 * cheaper: copying 2.99 GB out and back over 32 GB/s (187 ms) beats a
	 * lone prefill of the 3.6k tokens lost (437 ms by the perf model), and
	 * the runs agree: swap's makespan is the lower.
	 */
	ck_assert_msg(sw.makespan < rc.makespan, "swap %llu ns not below recompute %llu ns",
		      (unsigned long long)sw.makespan, (unsigned long long)rc.makespan);
	ck_assert_msg(ch.swap_out == sw.swap_out && ch.makespan == sw.makespan,
		      "cheaper did not swap: %llu bytes out, makespan %llu ns",
		      (unsigned long long)ch.swap_out, (unsigned long long)ch.makespan);
	free(eq.r);
	free(sw.r);
	free(rc.r);
	free(ch.r);
}
END_TEST

/* --- aging ------------------------------------------------------------------------ */

/*
 * A stream of high-priority requests above capacity and a few low-priority
 * ones.  With aging A, a low request ranks with the top after A and then goes
 * before every request that arrived after it, so its TTFT is at most
 * A + (the latest first token of the requests that arrived before it) + the
 * time running requests take to free memory (a high request's E2E).  Without
 * aging it waits for the stream to end.
 */
#define AGING(aging)                                                                 \
	"model: llama-2-13b\ndevice: a100-40g\nmemory: {share: 0.8}\n"                \
	"cache: {name: full, reserve: request}\n"                                    \
	"scheduler: {name: preempt, aging: " aging "}\n"                              \
	"workload:\n  requests: 600\n  arrival: {process: poisson, rate: 5}\n"      \
	"  lengths: {dist: fixed, prompt: 200, output: 100}\n"                       \
	"  tenants:\n    - {name: low, share: 1, priority: 0}\n"                     \
	"    - {name: high, share: 20, priority: 5}\n"                               \
	"outputs: {sample_interval: 0}\n"

START_TEST(aging_bounds_wait)
{
	struct kv_workload w;
	struct kv_sim s;
	struct ends *r = rec_new();
	const double aging_s = 2;
	double worst_slack = -1e30, max_low_ttft = 0, starved = 0, high_e2e = 0;
	uint64_t i, j, n_low = 0;

	load(&w, AGING("2s"));
	run(&w, r, &s, 0);
	ck_assert_uint_eq(r->completed, 600);
	for (i = 0; i < 600; i++)
		if (r->tenant[i] == 1)
			high_e2e = fmax(high_e2e, (double)(r->finish[i] - r->first[i]) / 1e9);
	for (i = 0; i < 600; i++) {
		double before = 0, ttft, bound;

		if (r->tenant[i] != 0)
			continue;
		n_low++;
		for (j = 0; j < i; j++)
			before = fmax(before, ((double)r->first[j] - (double)r->arrival[i]) / 1e9);
		ttft = (double)(r->first[i] - r->arrival[i]) / 1e9;
		bound = aging_s + before + high_e2e + 0.1;
		max_low_ttft = fmax(max_low_ttft, ttft);
		worst_slack = fmax(worst_slack, ttft - bound);
		ck_assert_msg(ttft <= bound, "low request %llu waited %.2f s, bound %.2f s",
			      (unsigned long long)i, ttft, bound);
	}
	ck_assert_msg(n_low >= 5, "only %llu low requests", (unsigned long long)n_low);
	kv_sim_release(&s);
	kv_workload_release(&w);

	load(&w, AGING("0"));
	run(&w, r, &s, 0);
	for (i = 0; i < 600; i++)
		if (r->tenant[i] == 0)
			starved = fmax(starved, (double)(r->first[i] - r->arrival[i]) / 1e9);
	fprintf(stderr,
		"aging 2 s: %llu low requests, longest TTFT %.2f s (max TTFT - bound %.2f s); "
		"without aging %.2f s\n",
		(unsigned long long)n_low, max_low_ttft, worst_slack, starved);
	ck_assert_msg(starved > 3 * max_low_ttft, "without aging the low TTFT is %.2f s, with %.2f s",
		      starved, max_low_ttft);
	kv_sim_release(&s);
	kv_workload_release(&w);
	free(r);
}
END_TEST

/*
 * Aging to the nanosecond.  Every step lasts exactly D = 1 ms (an executor
 * times the batches) and holds one request (max_seqs 1).  Arrivals (vidur
 * trace): H1 (high) at 0, L (low) at 1 ns, H2 H3 H4 (high) at 2, 3, 4 ns;
 * each H has a 1-token prompt and 3 outputs (3 steps), L 1 output (1 step).
 * H1 runs steps 1-3 (0 to 3D): the running H ranks 3 * 1 + 2 = 5 above any
 * waiting request (3e + 1 <= 4).  A seat frees at the start of a step only
 * when an H has finished: at 3D, 6D, 9D.  Waiting, L ranks 1 until its wait
 * W = now - 1 ns reaches A, then 3 * 1 + 1 = 4, the rank of the waiting H,
 * and L goes first (longest wait).  So with A = 6D - 1 ns = 5999999 ns, at
 * 3D W = 2999999 < A (H2 runs steps 4-6), at 6D W = A exactly: L is promoted
 * and runs step 7 (6D to 7D), its first token at 7 ms; then H3 runs steps
 * 8-10 (finished at 10D), H4 steps 11-13 (13D).  With A one nanosecond
 * longer, at 6D W = A - 1: H3 runs steps 7-9, L step 10 (token at 10D), H4
 * steps 11-13.  Without aging L waits for every H: step 13, token at 13D.
 */
#define AGE_D 1000000 /* ns per step */

static int fixed_step(void *ctx, struct kv_replica *r, kv_ns model_ns, kv_ns *ns)
{
	(void)ctx;
	(void)r;
	(void)model_ns;
	*ns = AGE_D;
	return 0;
}

static void aging_exact_run(const char *aging, struct ends *r)
{
	static const uint32_t order[5] = { 1, 0, 1, 1, 1 }; /* H1, L, H2, H3, H4 */
	struct kv_executor x = { NULL, fixed_step };
	struct kv_workload w;
	struct kv_sim s;
	char yaml[2048];
	const char *trace = temp_file("arrived_at,num_prefill_tokens,num_decode_tokens\n"
				      "0,1,1\n0.000000001,1,1\n0.000000002,1,1\n"
				      "0.000000003,1,1\n0.000000004,1,1\n", "", 1);

	snprintf(yaml, sizeof(yaml),
		 "model: llama-2-7b\ndevice: a100-80g\ncache: chunked\n"
		 /* the engine's steps alone: no front end (frontend.h) */
		 "engine: {name: vllm-v0, request_cpu: 0, tokenize_per_token: 0, ipc_hop: 0,"
		 " detokenize_per_token: 0, stream_chunk: 0}\n"
		 "scheduler: {name: preempt, aging: %s}\nbatching: {max_seqs: 1}\n"
		 "workload:\n  requests: 5\n  arrival: {process: trace, trace: %s, format: vidur}\n"
		 "  tenants:\n"
		 "    - {name: low, priority: 0, lengths: {dist: fixed, prompt: 1, output: 1}}\n"
		 "    - {name: high, priority: 1, lengths: {dist: fixed, prompt: 1, output: 3}}\n"
		 "outputs: {sample_interval: 0}\n",
		 aging, trace);
	load(&w, yaml);
	w.cfg.seed = seed_for(&w.cfg.source, order, 5);
	w.cfg.exec = &x;
	run(&w, r, &s, 1);
	unlink(trace);
	ck_assert_uint_eq(r->completed, 5);
	ck_assert_uint_eq(r->tenant[1], 0);
	ck_assert_uint_eq(r->arrival[1], 1);
	ck_assert_uint_eq(s.preemptions, 0);
	kv_sim_release(&s);
	kv_workload_release(&w);
}

START_TEST(aging_promotes_at_exact_ns)
{
	struct ends *r = rec_new();

	aging_exact_run("5999999ns", r); /* W reaches A at 6D exactly */
	ck_assert_uint_eq(r->finish[0], 3 * AGE_D);
	ck_assert_uint_eq(r->finish[2], 6 * AGE_D);
	ck_assert_uint_eq(r->first[1], 7 * AGE_D);
	ck_assert_uint_eq(r->finish[1], 7 * AGE_D);
	ck_assert_uint_eq(r->finish[3], 10 * AGE_D);
	ck_assert_uint_eq(r->finish[4], 13 * AGE_D);

	aging_exact_run("6000000ns", r); /* one ns short at 6D: promoted at 9D */
	ck_assert_uint_eq(r->finish[2], 6 * AGE_D);
	ck_assert_uint_eq(r->finish[3], 9 * AGE_D);
	ck_assert_uint_eq(r->first[1], 10 * AGE_D);
	ck_assert_uint_eq(r->finish[4], 13 * AGE_D);

	aging_exact_run("0", r); /* off: L runs last */
	ck_assert_uint_eq(r->finish[4], 12 * AGE_D);
	ck_assert_uint_eq(r->first[1], 13 * AGE_D);
	free(r);
}
END_TEST

/* --- one tenant ---------------------------------------------------------------------- */

#define ONE_TENANT(sched)                                                              \
	"model: llama-2-13b\ndevice: a100-40g\nscheduler: " sched "\ncache: full\n"      \
	"memory: {min_block: 8MiB}\n"                                                   \
	"workload:\n  requests: 300\n  arrival: {process: gamma, rate: 20, cv: 2}\n"    \
	"  lengths: {dist: uniform, prompt_min: 10, prompt_max: 1500, output_min: 1, "   \
	"output_max: 500}\n  tenants:\n    - {name: only, priority: 3}\n"               \
	"outputs: {sample_interval: 0}\n"

/* One tenant, nothing preempted: the same finish times as fifo. */
START_TEST(one_tenant_is_fifo)
{
	struct kv_workload w;
	struct kv_sim s;
	struct ends *a = rec_new(), *b = rec_new();
	uint64_t i;

	load(&w, ONE_TENANT("fifo"));
	run(&w, a, &s, 1);
	kv_sim_release(&s);
	kv_workload_release(&w);
	load(&w, ONE_TENANT("{name: preempt, priority: tenant, aging: 1s, mode: swap}"));
	run(&w, b, &s, 1);
	ck_assert_uint_eq(s.preemptions, 0);
	ck_assert_uint_eq(b->completed, 300);
	for (i = 0; i < 300; i++)
		ck_assert_msg(a->finish[i] == b->finish[i], "request %llu: fifo %llu ns, preempt %llu ns",
			      (unsigned long long)i, (unsigned long long)a->finish[i],
			      (unsigned long long)b->finish[i]);
	kv_sim_release(&s);
	kv_workload_release(&w);
	free(a);
	free(b);
}
END_TEST

/* --- mlfq ------------------------------------------------------------------------------ */

#define MIX(sched)                                                                     \
	"model: llama-2-7b\ndevice: a100-80g\nscheduler: " sched "\n"                   \
	"cache: {name: full, reserve: request}\nbatching: {max_seqs: 8}\n"              \
	"workload:\n  requests: 400\n  arrival: {process: poisson, rate: 1.5}\n"          \
	"  lengths: {dist: fixed, prompt: 100, output: 20}\n"                           \
	"  tenants:\n    - {name: short, share: 4}\n"                                   \
	"    - {name: long, share: 1, lengths: {dist: fixed, prompt: 100, output: 1500}}\n" \
	"outputs: {sample_interval: 0}\n"

/* Long generators sink below new short requests: the short ones' TTFT drops against fifo. */
START_TEST(mlfq_demotes_long)
{
	struct kv_workload w;
	struct kv_sim s;
	struct ends *r = rec_new();
	double fifo_short, fifo_long, mlfq_short, mlfq_long;

	load(&w, MIX("fifo"));
	run(&w, r, &s, 0);
	ck_assert_uint_eq(r->completed, 400);
	fifo_short = mean_ttft_s(r, 400, 0);
	fifo_long = mean_ttft_s(r, 400, 1);
	kv_sim_release(&s);
	kv_workload_release(&w);
	load(&w, MIX("{name: preempt, priority: mlfq}"));
	run(&w, r, &s, 0);
	ck_assert_uint_eq(r->completed, 400);
	mlfq_short = mean_ttft_s(r, 400, 0);
	mlfq_long = mean_ttft_s(r, 400, 1);
	fprintf(stderr,
		"mlfq: short mean TTFT %.2f s (fifo %.2f s), long %.2f s (fifo %.2f s), %llu preemptions\n",
		mlfq_short, fifo_short, mlfq_long, fifo_long, (unsigned long long)s.preemptions);
	ck_assert_msg(mlfq_short < fifo_short / 2, "short TTFT %.2f s under mlfq, %.2f s under fifo",
		      mlfq_short, fifo_short);
	kv_sim_release(&s);
	kv_workload_release(&w);
	free(r);
}
END_TEST

/*
 * Skip-join: a prompt whose prefill takes longer than the first queues'
 * quanta joins a lower queue.  A 3000-token prompt (prefill about 17 decode
 * steps on 7B) arrives just before a 50-token one, one sequence per
 * iteration: with quanta 2, 4, 8, 16 the long prompt joins the last queue
 * and the short request (10 outputs, all within the upper queues) overtakes
 * it; with quanta from 32 both join the first queue and run in order.
 */
static void skip_join_run(uint64_t quantum, struct ends *r)
{
	static const uint32_t order[2] = { 0, 1 };
	struct kv_workload w;
	struct kv_sim s;
	char yaml[1024];
	const char *trace = temp_file("arrived_at,num_prefill_tokens,num_decode_tokens\n"
				      "0,1,1\n0.001,1,1\n", "", 1);

	snprintf(yaml, sizeof(yaml),
		 "model: llama-2-7b\ndevice: a100-80g\ncache: {name: full, reserve: request}\n"
		 "batching: {max_seqs: 1}\n"
		 "scheduler: {name: preempt, priority: mlfq, quantum: %llu}\n"
		 "workload:\n  requests: 2\n  arrival: {process: trace, trace: %s, format: vidur}\n"
		 "  tenants:\n    - {name: long_prompt, lengths: {dist: fixed, prompt: 3000, output: 20}}\n"
		 "    - {name: short_prompt, lengths: {dist: fixed, prompt: 50, output: 10}}\n"
		 "outputs: {sample_interval: 0}\n",
		 (unsigned long long)quantum, trace);
	load(&w, yaml);
	w.cfg.seed = seed_for(&w.cfg.source, order, 2);
	run(&w, r, &s, 1);
	unlink(trace);
	ck_assert_uint_eq(r->completed, 2);
	ck_assert_uint_eq(r->tenant[0], 0);
	kv_sim_release(&s);
	kv_workload_release(&w);
}

START_TEST(mlfq_skip_join)
{
	struct ends *r = rec_new();

	skip_join_run(2, r);
	ck_assert_msg(r->finish[1] < r->finish[0], "quantum 2: short request finished %llu ns, long %llu ns",
		      (unsigned long long)r->finish[1], (unsigned long long)r->finish[0]);
	skip_join_run(32, r);
	ck_assert_msg(r->finish[0] < r->finish[1], "quantum 32: long prompt finished %llu ns, short %llu ns",
		      (unsigned long long)r->finish[0], (unsigned long long)r->finish[1]);
	free(r);
}
END_TEST

/* --- segments ------------------------------------------------------------------------ */

#define SEGMENTS(seg)                                                                  \
	"model: llama-2-7b\ndevice: a100-80g\ncache: chunked\nbatching: {max_seqs: 1}\n"  \
	"scheduler: {name: preempt, segment_tokens: " seg ", mode: swap}\n"               \
	"workload:\n  requests: 3\n  arrival: {process: poisson, rate: 1000}\n"          \
	"  lengths: {dist: fixed, prompt: 100, output: 600}\n"                           \
	"outputs: {sample_interval: 0}\n"

/* One sequence per iteration: with segments, three long requests take turns. */
START_TEST(segments_round_robin)
{
	struct kv_workload w;
	struct kv_sim s;
	struct ends *r = rec_new();
	kv_ns last_seg, last_plain;

	load(&w, SEGMENTS("0"));
	run(&w, r, &s, 1);
	last_plain = r->first[2] - r->arrival[2];
	ck_assert_uint_eq(s.preemptions, 0);
	kv_sim_release(&s);
	kv_workload_release(&w);
	load(&w, SEGMENTS("64"));
	run(&w, r, &s, 1);
	last_seg = r->first[2] - r->arrival[2];
	fprintf(stderr, "segments: third request's TTFT %.2f s (%.2f s without), %llu preemptions\n",
		(double)last_seg / 1e9, (double)last_plain / 1e9, (unsigned long long)s.preemptions);
	ck_assert_uint_eq(r->completed, 3);
	ck_assert_msg(s.preemptions >= 10, "only %llu preemptions", (unsigned long long)s.preemptions);
	ck_assert_msg(last_seg * 5 < last_plain, "third TTFT %llu ns with segments, %llu without",
		      (unsigned long long)last_seg, (unsigned long long)last_plain);
	ck_assert_uint_eq(s.rep[0].swap_out_bytes, s.rep[0].swap_in_bytes + s.rep[0].swap_dropped_bytes);
	kv_sim_release(&s);
	kv_workload_release(&w);
	free(r);
}
END_TEST

/* --- determinism --------------------------------------------------------------------- */

#define BUSY                                                                             \
	"model: llama-2-13b\ndevice: a100-40g\ncache: chunked\nmemory: {min_block: 8MiB}\n" \
	"scheduler: {name: preempt, priority: mlfq, segment_tokens: 300, aging: 1s}\n"     \
	"workload:\n  requests: 200\n  arrival: {process: poisson, rate: 40}\n"            \
	"  lengths: {dist: uniform, prompt_min: 100, prompt_max: 1500, output_min: 10, "    \
	"output_max: 900}\n  tenants:\n    - {name: a, priority: 1}\n    - {name: b}\n"    \
	"outputs: {sample_interval: 0}\n"

/* The same config and seed give the same run, preemptions and all. */
START_TEST(deterministic)
{
	struct kv_workload w;
	struct kv_sim s;
	struct ends *a = rec_new(), *b = rec_new();
	uint64_t pre;

	load(&w, BUSY);
	run(&w, a, &s, 1);
	pre = s.preemptions;
	ck_assert_msg(pre > 0, "no preemption: raise the load");
	ck_assert_uint_eq(a->completed, 200);
	kv_sim_release(&s);
	kv_workload_release(&w);
	load(&w, BUSY);
	run(&w, b, &s, 1);
	ck_assert_uint_eq(s.preemptions, pre);
	ck_assert_int_eq(memcmp(a, b, sizeof(*a)), 0);
	kv_sim_release(&s);
	kv_workload_release(&w);
	free(a);
	free(b);
}
END_TEST

/* --- bad options --------------------------------------------------------------------- */


START_TEST(bad_options)
{
	expect_bad_sched("{name: preempt, mode: teleport}", 1, "scheduler.mode", "teleport");
	expect_bad_sched("{name: preempt, priority: fifo}", 1, "scheduler.priority", "fifo");
	expect_bad_sched("{name: preempt, levels: 0}", 1, "scheduler.levels", "0");
	expect_bad_sched("{name: preempt, levels: 65}", 1, "scheduler.levels", "65");
	expect_bad_sched("{name: preempt, quantum: 0}", 1, "scheduler.quantum", "0");
	expect_bad_sched("{name: preempt, ratio: 0.5}", 1, "scheduler.ratio", "0.5");
	expect_bad_sched("{name: preempt, aging: -1s}", 1, "scheduler.aging", "-1s");
	expect_bad_sched("{name: preempt, segment: 10}", 1, "scheduler.segment", "");
	expect_bad_sched("{name: preempt, priority: mlfq, quantum: 1000000, ratio: 1000, levels: 4}", 0,
		   "scheduler.ratio", "expected at most 2^40");
}
END_TEST

static Suite *preempt_suite(void)
{
	Suite *s = suite_create("preempt");
	TCase *tc = tcase_create("core");

	tcase_add_test(tc, urgent_request_evicts);
	tcase_add_test(tc, aging_bounds_wait);
	tcase_add_test(tc, aging_promotes_at_exact_ns);
	tcase_add_test(tc, one_tenant_is_fifo);
	tcase_add_test(tc, mlfq_demotes_long);
	tcase_add_test(tc, mlfq_skip_join);
	tcase_add_test(tc, segments_round_robin);
	tcase_add_test(tc, deterministic);
	tcase_add_test(tc, bad_options);
	tcase_set_timeout(tc, 300);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return kv_test_run_suite(preempt_suite());
}
