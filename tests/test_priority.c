/*
 * test_priority.c -- the priority scheduler (sim/sched_priority.c) and the
 * mechanism it needs (sim/replica.c): victims by vLLM's key, ties to the
 * first in running order, a victim withdrawn from the batch it was
 * scheduled in with the batch's counters exact, and a yielding grower
 * ending the running pass.  Hand-built traces, step by step through an
 * observer (vLLM's own tests are tests/conformance_priority).
 */
#include "simtest.h"
#include "testutil.h"

#include <check.h>
#include <stdint.h>
#include <string.h>

#define MAX_STEPS 4096
#define MAX_BATCH 16

/* What the observer saw: each step's batch and the preemptions before it. */
struct steps {
	uint32_t n; /* steps seen */
	uint32_t len[MAX_STEPS]; /* batch length (capped at MAX_BATCH) */
	uint64_t id[MAX_STEPS][MAX_BATCH]; /* batch ids in batch order */
	uint32_t running[MAX_STEPS]; /* running set as the step starts */
	int64_t preempted[MAX_STEPS]; /* the last request preempted before the step, -1 none */
	uint64_t preemptions; /* all of them */
	uint64_t bad_shape; /* steps whose counters are not what their requests add up to */
	char why[256]; /* the first bad step's counters */
};

static struct steps st;

/*
 * The batch's counters against what its requests add up to (replica.h's
 * invariant): for a plain chunked model without a window, every step.
 */
static void check_shape(const struct kv_replica *r)
{
	uint64_t pairs = 0, prefill = 0, ctx = 0, tokens = 0;
	uint32_t i, dec = 0, sample = 0;

	for (i = 0; i < r->n_batch; i++) {
		const struct kv_req *q = r->batch[i];
		uint64_t take = q->batch_tokens;

		tokens += take;
		ctx += q->kv_tokens + take;
		if (q->kv_tokens < q->prefill_target) {
			prefill += take;
			pairs += kv_perf_prefill_pairs(q->kv_tokens, take);
			sample += q->kv_tokens + take >= q->prefill_target;
		} else {
			dec++;
			sample++;
			pairs += q->kv_tokens + 1;
		}
	}
	if (r->shape.n_seqs == r->n_batch && r->shape.n_decode == dec && r->shape.n_sample == sample &&
	    r->shape.n_prefill_tokens == prefill && r->shape.attn_pairs == pairs &&
	    r->ctx_tokens == ctx && r->budget_tokens + tokens == r->sim->cfg->max_batch_tokens)
		return;
	if (!st.bad_shape++)
		snprintf(st.why, sizeof(st.why),
			 "step %u: seqs %u/%u decode %u/%u sample %u/%u prefill %llu/%llu pairs %llu/%llu ctx %llu/%llu budget %llu+%llu",
			 st.n, r->shape.n_seqs, r->n_batch, r->shape.n_decode, dec, r->shape.n_sample,
			 sample, (unsigned long long)r->shape.n_prefill_tokens,
			 (unsigned long long)prefill, (unsigned long long)r->shape.attn_pairs,
			 (unsigned long long)pairs, (unsigned long long)r->ctx_tokens,
			 (unsigned long long)ctx, (unsigned long long)r->budget_tokens,
			 (unsigned long long)tokens);
}

static void on_event(void *ctx, const struct kv_sim *s, enum kv_obs_event ev,
		     const struct kv_replica *r, const struct kv_req *q, kv_ns dur_ns)
{
	uint32_t i, k = st.n;

	(void)ctx, (void)s, (void)dur_ns;
	if (k >= MAX_STEPS)
		return;
	if (ev == KV_OBS_PREEMPT) {
		st.preempted[k] = (int64_t)q->id;
		st.preemptions++;
	} else if (ev == KV_OBS_ITER_START) {
		check_shape(r);
		st.len[k] = r->n_batch < MAX_BATCH ? r->n_batch : MAX_BATCH;
		for (i = 0; i < st.len[k]; i++)
			st.id[k][i] = r->batch[i]->id;
		st.running[k] = r->n_running;
		st.n++;
		if (st.n < MAX_STEPS)
			st.preempted[st.n] = -1;
	}
}

/* Runs yaml (a workload naming its trace by trace_path) with the observer. */
static void run_steps(const char *yaml_fmt, const char *trace)
{
	const char *path = temp_file(trace, ".csv", 1);
	char yaml[2048];
	struct kv_workload w;
	struct kv_sim s;

	memset(&st, 0, sizeof(st));
	st.preempted[0] = -1;
	snprintf(yaml, sizeof(yaml), yaml_fmt, path);
	load(&w, yaml);
	w.cfg.observer.fn = on_event;
	w.cfg.exact_steps = 1;
	sim_start(&w, &s, NULL, 1);
	sim_finish(&s);
	kv_sim_release(&s);
	kv_workload_release(&w);
	unlink(path);
	ck_assert_msg(!st.bad_shape, "%llu steps with counters off; first: %s",
		      (unsigned long long)st.bad_shape, st.why);
}

/* The first step after which request id was preempted, or -1. */
static int preempted_at(uint64_t id)
{
	uint32_t k;

	for (k = 0; k < st.n; k++)
		if (st.preempted[k] == (int64_t)id)
			return (int)k;
	return -1;
}

static int in_batch(uint32_t k, uint64_t id)
{
	uint32_t i;

	for (i = 0; i < st.len[k]; i++)
		if (st.id[k][i] == id)
			return 1;
	return 0;
}

#define BASE                                                                            \
	"model: llama-2-7b\ndevice: a100-80g\nengine: {name: vllm, prefix_caching: false}\n" \
	"cache: {name: chunked, block_tokens: 16}\noutputs: {sample_interval: 0}\n"

/*
 * Equal keys (same priority, same arrival): the victim is the first in
 * running order, as Python's max() returns the first maximal element,
 * though it was admitted first and scheduled earlier in the step.  5 blocks
 * of 16 tokens: 0 (32 tokens) prefills, then 1 (32) joins; at step 3, 1's
 * decode needs a third block: 0 is withdrawn and preempted, 1 runs.
 */
START_TEST(victim_ties_first_in_running_order)
{
	run_steps(BASE "scheduler: priority\nmemory: {kv_blocks: 5}\n"
		       "batching: {max_tokens: 200, max_seqs: 4}\n"
		       "workload:\n  arrival: {process: trace, trace: %s}\n",
		  "arrived_at,num_prefill_tokens,num_decode_tokens,priority\n0,32,4,3\n0,32,4,3\n");
	ck_assert_int_eq(preempted_at(0), 2);
	ck_assert_msg(st.len[2] == 1 && st.id[2][0] == 1, "step 3: %u requests, first %llu",
		      st.len[2], (unsigned long long)st.id[2][0]);
	ck_assert_int_eq(preempted_at(1), -1);
}
END_TEST

/*
 * A grower that is its own victim ends the running pass: 0 (priority 0),
 * 1 (priority 9, admitted second) and 2 (priority 0, arriving while 1
 * decodes, admitted third).  8 blocks: 0 holds 3 (33 tokens), 1 holds 3 (40
 * tokens), 2 holds 2 (20 tokens).  When 1 needs its fourth block it is the
 * largest key: it yields, and 2, after it in running order, sits the step
 * out though it needs nothing (vLLM's loop breaks).
 */
START_TEST(yield_ends_running_pass)
{
	int k;

	run_steps(BASE "scheduler: priority\nmemory: {kv_blocks: 8}\n"
		       "batching: {max_tokens: 200, max_seqs: 4}\n"
		       "workload:\n  arrival: {process: trace, trace: %s}\n",
		  "arrived_at,num_prefill_tokens,num_decode_tokens,priority\n"
		  "0,33,30,0\n0.0001,40,30,9\n0.03,20,30,0\n");
	k = preempted_at(1);
	ck_assert_msg(k > 1, "request 1 preempted after step %d", k);
	ck_assert_msg(st.running[k] == 2 && st.len[k] == 1 && in_batch((uint32_t)k, 0) &&
			      !in_batch((uint32_t)k, 2),
		      "step %d: running %u, batch of %u (0 in: %d, 2 in: %d)", k + 1, st.running[k],
		      st.len[k], in_batch((uint32_t)k, 0), in_batch((uint32_t)k, 2));
	ck_assert_msg(in_batch((uint32_t)k - 1, 2), "request 2 did not run before the yield");
	ck_assert_int_eq(preempted_at(0), -1);
	ck_assert_int_eq(preempted_at(2), -1);
}
END_TEST

/*
 * The grower that yields is first in running order, so nothing ran before
 * it: 0 (priority 9, 31 tokens, 2 of 5 blocks) runs, then 1 (priority 0,
 * 40 tokens, 3 blocks) joins.  When 0 needs its third block it is the
 * largest key and yields; vLLM's loop breaks with nothing scheduled and the
 * preemption shuts admission: an empty step, and the next schedule() runs 1.
 * The step formed is that one (not an empty batch with 1 running).
 */
START_TEST(yield_first_forms_again)
{
	int k;

	run_steps(BASE "scheduler: priority\nmemory: {kv_blocks: 5}\n"
		       "batching: {max_tokens: 200, max_seqs: 4}\n"
		       "workload:\n  arrival: {process: trace, trace: %s}\n",
		  "arrived_at,num_prefill_tokens,num_decode_tokens,priority\n"
		  "0,31,30,9\n0.0001,40,30,0\n");
	k = preempted_at(0);
	ck_assert_msg(k > 1, "request 0 preempted after step %d", k);
	ck_assert_msg(st.len[k] == 1 && in_batch((uint32_t)k, 1) && st.running[k] == 1,
		      "step %d: running %u, batch of %u (1 in: %d)", k + 1, st.running[k], st.len[k],
		      in_batch((uint32_t)k, 1));
	ck_assert_int_eq(preempted_at(1), -1);
}
END_TEST

/*
 * Under memory pressure with three priorities, victims withdrawn from the
 * batch keep its counters exact at every step (check_shape, in run_steps),
 * and the run ends (sim_finish: every request accounted for).
 */
START_TEST(pressure_counters_exact)
{
	char trace[8192];
	size_t n = 0;
	uint64_t seed = 7;
	int i;

	n += (size_t)snprintf(trace + n, sizeof(trace) - n,
			      "arrived_at,num_prefill_tokens,num_decode_tokens,priority\n");
	for (i = 0; i < 120; i++)
		n += (size_t)snprintf(trace + n, sizeof(trace) - n, "%.4f,%llu,%llu,%d\n", 0.004 * i,
				      (unsigned long long)(8 + rng_next(&seed) % 120),
				      (unsigned long long)(1 + rng_next(&seed) % 80),
				      (int)(rng_next(&seed) % 3));
	run_steps(BASE "scheduler: priority\nmemory: {kv_blocks: 24}\n"
		       "batching: {max_tokens: 96, max_seqs: 8}\n"
		       "workload:\n  arrival: {process: trace, trace: %s}\n",
		  trace);
	ck_assert_msg(st.preemptions > 10, "only %llu preemptions: no pressure",
		      (unsigned long long)st.preemptions);
}
END_TEST

static Suite *priority_suite(void)
{
	Suite *s = suite_create("priority");
	TCase *tc = tcase_create("core");

	tcase_add_test(tc, victim_ties_first_in_running_order);
	tcase_add_test(tc, yield_ends_running_pass);
	tcase_add_test(tc, yield_first_forms_again);
	tcase_add_test(tc, pressure_counters_exact);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return kv_test_run_suite(priority_suite());
}
