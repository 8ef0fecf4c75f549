/*
 * test_engines.c -- each engine's rules (sim/serving.h, docs/engines.md) on
 * small hand-built runs, watched step by step through an executor that
 * sees every formed batch before it runs.
 */
#include "engine.h"
#include "replica.h"
#include "simtest.h"
#include "testutil.h"

#include <check.h>
#include <string.h>

/* chunked: 16-token blocks as needed (full reserves the whole context at once) */
#define BASE "model: llama-2-7b\ndevice: a100-80g\nscheduler: fifo\ncache: chunked\n" \
	     "outputs: {sample_interval: 0}\n"

/* What the watcher saw over a run. */
struct watch {
	uint64_t steps; /* batches formed */
	uint64_t mixed; /* batches with prefill tokens and decodes */
	uint64_t preempting; /* batches formed in a step that preempted */
	uint64_t admitted_when_preempting; /* ... that started a request's prefill */
	uint64_t first_admit_bytes; /* kv_bytes of the first request after its first step */
	uint64_t first_prompt; /* its prompt tokens */
	double ratio_before_retract, ratio_after_retract; /* sglang, around the first retraction */
	double last_ratio; /* sglang, after the previous step */
	uint64_t retractions; /* sglang */
};

static int watch_iter(void *ctx, struct kv_replica *r, kv_ns model_ns, kv_ns *ns)
{
	struct watch *w = ctx;
	uint32_t i;

	w->steps++;
	if (r->shape.n_decode && r->shape.n_prefill_tokens)
		w->mixed++;
	if (r->step_preempted) {
		w->preempting++;
		for (i = 0; i < r->n_batch; i++)
			if (r->batch[i]->kv_tokens == 0) /* prefix caching is off in these runs */
				w->admitted_when_preempting++;
	}
	if (w->steps == 1 && r->n_batch) {
		w->first_admit_bytes = r->batch[0]->kv_bytes;
		w->first_prompt = r->batch[0]->prompt_tokens;
	}
	if (!strcmp(r->eng->name, "sglang")) {
		uint64_t n = kv_engine_sglang_retractions(r->eng_priv);
		double ratio = kv_engine_sglang_ratio(r->eng_priv);

		if (n && !w->retractions) {
			w->ratio_before_retract = w->last_ratio;
			w->ratio_after_retract = ratio;
		}
		w->retractions = n;
		w->last_ratio = ratio;
	}
	*ns = model_ns;
	return 0;
}

/* Runs yaml with the watcher; returns the completed requests. */
static uint64_t watch_run(const char *yaml, struct watch *w)
{
	struct kv_workload wl;
	struct kv_executor x = { w, watch_iter };
	struct kv_sim s;
	uint64_t done;

	memset(w, 0, sizeof(*w));
	load(&wl, yaml);
	wl.cfg.exec = &x;
	sim_start(&wl, &s, NULL, 1);
	sim_finish(&s);
	done = s.ended[KV_END_COMPLETED];
	kv_sim_release(&s);
	kv_workload_release(&wl);
	return done;
}

/* A long prompt in 512-token chunks: V0 reserves it whole at admission, V1 its first chunk. */
START_TEST(vllm_allocates_per_step)
{
	static const char *const eng[2] = { "vllm-v0", "{name: vllm, prefix_caching: false}" };
	uint64_t bytes[2];
	struct watch w;
	char yaml[1024];
	int i;

	for (i = 0; i < 2; i++) {
		snprintf(yaml, sizeof(yaml), BASE "engine: %s\nbatching: {max_tokens: 512}\n"
			 "workload:\n  requests: 1\n  arrival: {process: poisson, rate: 1}\n"
			 "  lengths: {dist: fixed, prompt: 3072, output: 4}\n", eng[i]);
		ck_assert_uint_eq(watch_run(yaml, &w), 1);
		bytes[i] = w.first_admit_bytes;
	}
	/* 3072 tokens at 512 KiB each: 1.5 GiB; one 512-token chunk: 256 MiB */
	ck_assert_msg(bytes[0] == 3072ULL * 524288 && bytes[1] == 512ULL * 524288,
		      "first step holds %llu bytes (v0), %llu (v1)", (unsigned long long)bytes[0],
		      (unsigned long long)bytes[1]);
}
END_TEST

/* Under memory pressure V1 preempts, and admits nobody in the steps that preempted. */
START_TEST(vllm_no_admission_when_preempting)
{
	struct watch w;

	ck_assert_uint_eq(watch_run(BASE "engine: {name: vllm, prefix_caching: false}\n"
					 "memory: {share: 0.3}\n"
					 "workload:\n  requests: 60\n  arrival: {process: poisson, rate: 1000}\n"
					 "  lengths: {dist: fixed, prompt: 1000, output: 900}\n",
				 &w),
			  60);
	ck_assert_msg(w.preempting > 0, "no step preempted in %llu steps",
		      (unsigned long long)w.steps);
	ck_assert_msg(w.admitted_when_preempting == 0,
		      "%llu requests admitted in steps that preempted",
		      (unsigned long long)w.admitted_when_preempting);
	ck_assert_msg(w.mixed > 0, "V1 never mixed prefill and decode");
}
END_TEST

/* SGLang runs prefill and decode in separate batches unless mixed chunking is on. */
START_TEST(sglang_separate_batches)
{
	struct watch w;

	ck_assert_uint_eq(watch_run(BASE "engine: {name: sglang, prefix_caching: false}\n"
					 "workload:\n  requests: 40\n  arrival: {process: poisson, rate: 20}\n"
					 "  lengths: {dist: fixed, prompt: 600, output: 100}\n",
				 &w),
			  40);
	ck_assert_msg(w.mixed == 0, "%llu mixed batches of %llu", (unsigned long long)w.mixed,
		      (unsigned long long)w.steps);
	ck_assert_uint_eq(watch_run(BASE "engine: {name: sglang, prefix_caching: false, "
					 "enable_mixed_chunk: true}\n"
					 "workload:\n  requests: 40\n  arrival: {process: poisson, rate: 20}\n"
					 "  lengths: {dist: fixed, prompt: 600, output: 100}\n",
				 &w),
			  40);
	ck_assert_msg(w.mixed > 0, "mixed chunking on, no mixed batch in %llu",
		      (unsigned long long)w.steps);
}
END_TEST

/*
 * An optimistic ratio (init 0.1) admits more than memory holds at the
 * outputs' peak: decode runs out, requests are retracted and the ratio is
 * raised above where it had decayed.
 */
START_TEST(sglang_retracts_and_raises_ratio)
{
	struct watch w;

	ck_assert_uint_eq(watch_run(BASE "engine: {name: sglang, prefix_caching: false, "
					 "init_new_token_ratio: 0.1, min_new_token_ratio: 0.05}\n"
					 "memory: {share: 0.3}\n"
					 "workload:\n  requests: 60\n  arrival: {process: poisson, rate: 1000}\n"
					 "  lengths: {dist: fixed, prompt: 200, output: 1500}\n",
				 &w),
			  60);
	ck_assert_msg(w.retractions > 0, "no retraction in %llu steps",
		      (unsigned long long)w.steps);
	ck_assert_msg(w.ratio_after_retract > w.ratio_before_retract,
		      "ratio %g before the first retraction, %g after", w.ratio_before_retract,
		      w.ratio_after_retract);
}
END_TEST

/* A request preempted by recompute finds its own prompt blocks when it resumes (V1 prefix cache). */
START_TEST(vllm_resume_hits_prefix_cache)
{
	struct kv_workload wl;
	struct kv_cache_stats st;
	struct kv_sim s;

	load(&wl, "model: llama-2-7b\ndevice: a100-80g\nscheduler: fifo\ncache: full\n"
		  "outputs: {sample_interval: 0}\nengine: vllm\nmemory: {share: 0.3}\n"
		       "workload:\n  requests: 60\n  arrival: {process: poisson, rate: 1000}\n"
		       "  lengths: {dist: fixed, prompt: 1000, output: 900}\n");
	sim_start(&wl, &s, NULL, 1);
	sim_finish(&s);
	ck_assert_str_eq(s.rep[0].cache->name, "shared");
	memset(&st, 0, sizeof(st));
	s.rep[0].cache->stats(s.rep[0].cache_priv, &st);
	ck_assert_msg(s.preemptions > 0 && st.hit_tokens > 0,
		      "%llu preemptions, %llu prefix tokens hit", (unsigned long long)s.preemptions,
		      (unsigned long long)st.hit_tokens);
	kv_sim_release(&s);
	kv_workload_release(&wl);
}
END_TEST

/* The front end's cost adds to TTFT and E2E exactly, and to nothing else. */
START_TEST(frontend_overhead_adds)
{
	struct kv_workload wl;
	struct kv_sim s;
	double e2e[2];
	int i;

	for (i = 0; i < 2; i++) {
		char yaml[512];

		snprintf(yaml, sizeof(yaml), BASE "engine: {name: vllm-v0, frontend_overhead: %s}\n"
			 "workload:\n  requests: 1\n  arrival: {process: poisson, rate: 1}\n"
			 "  lengths: {dist: fixed, prompt: 100, output: 10}\n", i ? "5ms" : "0ms");
		load(&wl, yaml);
		sim_start(&wl, &s, NULL, 0);
		sim_finish(&s);
		e2e[i] = kv_hist_mean(&s.e2e);
		kv_sim_release(&s);
		kv_workload_release(&wl);
	}
	ck_assert_msg(e2e[1] - e2e[0] > 4.9e6 && e2e[1] - e2e[0] < 5.1e6,
		      "E2E %g ns without, %g ns with 5 ms", e2e[0], e2e[1]);
}
END_TEST

static Suite *engines_suite(void)
{
	Suite *s = suite_create("engines");
	TCase *tc = tcase_create("core");

	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, vllm_allocates_per_step);
	tcase_add_test(tc, vllm_no_admission_when_preempting);
	tcase_add_test(tc, sglang_separate_batches);
	tcase_add_test(tc, sglang_retracts_and_raises_ratio);
	tcase_add_test(tc, vllm_resume_hits_prefix_cache);
	tcase_add_test(tc, frontend_overhead_adds);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return kv_test_run_suite(engines_suite());
}
