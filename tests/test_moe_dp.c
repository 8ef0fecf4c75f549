/*
 * test_moe_dp.c -- data-parallel attention with expert parallelism
 * (cluster.data_parallel; perf.h kv_perf_dp_iter_ns, memory.h
 * kv_mem_weights_per_gpu): expert placement in the memory budget, the
 * lockstep step as the slowest rank's, the all-to-all over every GPU of the
 * group, the YAML checks, and dp 1 leaving the step unchanged.
 */
#include "testutil.h"

#include <check.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "memory.h"
#include "perf.h"
#include "profile_load.h"
#include "workload.h"

#include "test_moe.h"
#include "test_profiles.h"

/*
 * Routed-expert bytes, from the shipped profiles' config.json figures in
 * bf16: (gated: 3) * hidden * moe_intermediate * 2 bytes per expert, times
 * the experts, times the MoE layers.
 *   Qwen3-30B-A3B: 3 * 2048 * 768 * 2 = 9437184 B, x 128 x 48 layers;
 *   DeepSeek-V2-Lite: 3 * 2048 * 1408 * 2 = 17301504 B, x 64 x 26 (1 dense layer of 27);
 *   Mixtral-8x7B: 3 * 4096 * 14336 * 2 = 352321536 B, x 8 x 32.
 */
START_TEST(test_expert_bytes)
{
	static const struct {
		const char *model;
		double want; /* bytes */
	} cases[] = {
		{ "qwen3-30b-a3b", 9437184.0 * 128 * 48 },
		{ "deepseek-v2-lite", 17301504.0 * 64 * 26 },
		{ "mixtral-8x7b", 352321536.0 * 8 * 32 },
		{ "llama-3.1-8b", 0.0 },
	};
	size_t i;

	for (i = 0; i < KV_ARRAY_LEN(cases); i++) {
		struct kv_model m = load_model(cases[i].model);

		ck_assert_msg((double)kv_mem_expert_bytes(&m) == cases[i].want, "%s: %llu want %.0f",
			      cases[i].model, (unsigned long long)kv_mem_expert_bytes(&m),
			      cases[i].want);
	}
}
END_TEST

/*
 * Each GPU holds the non-expert weights of its rank's tp split and E / ep
 * experts of every MoE layer: at tp 1 and ep 2/4/8, Qwen3-30B-A3B's 61.06
 * GB become 3.08 GB + 57.98 GB / ep; the group of ep GPUs holds every
 * expert once and every rank its own copy of the rest.
 */
START_TEST(test_weights_per_gpu)
{
	static const char *const models[] = { "qwen3-30b-a3b", "deepseek-v2-lite", "mixtral-8x7b" };
	static const uint32_t tps[] = { 1, 2 }, dps[] = { 2, 4, 8 };
	size_t i, j, k;

	for (i = 0; i < KV_ARRAY_LEN(models); i++) {
		struct kv_model m = load_model(models[i]);
		uint64_t all = kv_model_weight_bytes(&m), exp = kv_mem_expert_bytes(&m);

		ck_assert_uint_lt(exp, all);
		ck_assert_uint_eq(kv_mem_weights_per_gpu(&m, 2, 1), all / 2); /* no ep: M / tp */
		for (j = 0; j < KV_ARRAY_LEN(tps); j++)
			for (k = 0; k < KV_ARRAY_LEN(dps); k++) {
				uint32_t tp = tps[j], ep = dps[k] * tp;
				uint64_t got = kv_mem_weights_per_gpu(&m, tp, ep);

				ck_assert_msg(got == (all - exp) / tp + exp / ep,
					      "%s tp %u ep %u: %llu", models[i], tp, ep,
					      (unsigned long long)got);
				ck_assert_uint_lt(got, all / tp); /* fewer experts than at tp alone */
			}
	}
	{
		struct kv_model m = load_model("qwen3-30b-a3b");

		ck_assert_double_eq_tol((double)kv_mem_weights_per_gpu(&m, 1, 4) / 1e9,
					(61.06e9 - 57.98e9) / 1e9 + 57.98 / 4, 0.02);
	}
}
END_TEST

/*
 * The vllm budget of one rank of a dp group (Qwen3-30B-A3B, H100, tp 1,
 * dp 4): weights per GPU with expert placement, the profiling run of a
 * dp-th of the group's token and sequence limits, the multi-GPU non-torch
 * term, and the group's capacity four ranks' blocks.  Against four
 * independent tp-1 replicas each rank holds 3.7x the KV.
 */
START_TEST(test_budget_dp)
{
	struct kv_model m = load_model("qwen3-30b-a3b");
	struct kv_device dev = load_device("h100-80g");
	struct kv_mem_cfg c;
	struct kv_mem_budget b, one;
	struct kv_diag d = { 0 };
	uint64_t rank_tokens;
	double kv;

	kv_mem_cfg_init(&c);
	c.model = KV_MEM_VLLM;
	ck_assert_int_eq(kv_mem_budget(&c, &m, &dev, 1, 8192, 256, &one, &d), 0);
	c.dp = 4;
	ck_assert_msg(kv_mem_budget(&c, &m, &dev, 1, 4 * 8192, 4 * 256, &b, &d) == 0, "%s", d.msg);
	ck_assert_uint_eq(b.weights_bytes, kv_mem_weights_per_gpu(&m, 1, 4));
	ck_assert_uint_eq(b.activation_bytes, kv_mem_activation_bytes(&m, 8192, 256, 1));
	ck_assert_uint_eq(b.non_torch_bytes, 2 * KV_MEM_NON_TORCH_BYTES);
	kv = (double)b.total_bytes * 0.9 -
	     (double)(b.weights_bytes + b.activation_bytes + b.non_torch_bytes + b.cuda_graph_bytes);
	ck_assert_uint_eq(b.kv_bytes, (uint64_t)kv);
	rank_tokens = b.kv_bytes / (b.token_bytes * KV_MEM_BLOCK_TOKENS) * KV_MEM_BLOCK_TOKENS;
	ck_assert_uint_eq(b.kv_tokens, 4 * rank_tokens);
	ck_assert_uint_eq(b.pool_bytes, b.kv_tokens * kv_model_kv_bytes_per_token(&m));
	ck_assert_msg(rank_tokens > 3 * one.kv_tokens, "rank %llu, one replica %llu",
		      (unsigned long long)rank_tokens, (unsigned long long)one.kv_tokens);
	/* a pin is one rank's, as the engine logs it per rank */
	c.kv_tokens = 1600;
	ck_assert_int_eq(kv_mem_budget(&c, &m, &dev, 1, 4 * 8192, 4 * 256, &b, &d), 0);
	ck_assert_uint_eq(b.kv_tokens, 6400);
	ck_assert(b.pinned);
}
END_TEST

/*
 * Mixtral-8x7B on H200s, dp 2 x tp 2, ep 4.  A group batch of 3 decodes
 * (3000 attention pairs, 1000 a sequence) splits 2 + 1: the step is the rank of 2 -- its
 * overhead and per-sequence cost, its 2 tokens through the dense layers,
 * its 2 of 3 sequences' attention (2000 pairs and their KV), its all-reduce over tp 2, two all-to-alls per
 * MoE layer of its 2 tokens over 4 ranks (10.8 us + 3/4 * bytes / (370 GB/s
 * * 0.914), comm.h's fitted all-to-all) -- while the experts on its GPU
 * (8 / 4 per layer) are touched by all 3 tokens: 1 - (1 - 2/8)^3 of them.
 */
START_TEST(test_lockstep_slowest_rank)
{
	struct kv_model m = load_model("mixtral-8x7b");
	struct kv_device dev = load_device("h200");
	struct kv_batch_shape b = mixtral_decodes(3, 3000);
	struct kv_parallel par = { .tp = 2, .pp = 1, .ep = 4, .dp = 2 };
	struct kv_batch_shape r;
	struct kv_perf pf;
	double bw = dev.mem_bw_Bps * dev.eff_bw, fl = dev.flops * dev.eff_flops;
	double lin, ar, a2a, want;

	kv_perf_init_parallel(&pf, &m, &dev, &par);
	ck_assert_uint_eq(pf.dp, 2);
	ck_assert_double_eq_tol(pf.expert_bytes_per_gpu, 32.0 * 352321536.0 / 4, 0.5);
	kv_perf_dp_rank_shape(&b, 2, &r);
	ck_assert_uint_eq(r.n_seqs, 2);
	ck_assert_uint_eq(r.n_decode, 2);
	ck_assert_uint_eq(r.attn_pairs, 2000);
	ck_assert_uint_eq(r.kv_read_bytes, 2000ULL * 131072);
	lin = fmax(((3211272192.0 - 262144000.0) / 2 +
		    32.0 * 352321536.0 / 4 * 8 * (1 - pow(0.75, 3))) / bw,
		   2 * (25497706496.0 / 2) / fl);
	ar = kv_perf_allreduce_ns(&pf, 2.0);
	ck_assert(ar > 0);
	a2a = mixtral_a2a_ns(2.0, 4.0);
	ck_assert_double_eq_tol(kv_perf_moe_ep_ns(&pf, 2.0), a2a, 1e-6);
	want = ceil((double)dev.overhead_ns + 2.0 * dev.per_seq_ns +
		    1e9 * (lin + mixtral_attn_s(&dev, 2000)) + ar + a2a);
	check_iter_ns(&pf, &b, want);
	/* the macro-step path gives the same step */
	{
		struct kv_perf_run run;

		kv_perf_iter_prep(&pf, &b, &run);
		ck_assert_uint_eq(kv_perf_iter_run_ns(&pf, &run, &b), kv_perf_iter_ns(&pf, &b));
	}
}
END_TEST

/*
 * Lockstep: the step is the slowest rank's.  One more sequence on a group
 * whose ranks are even (4 -> 5 over dp 4) puts 2 on one rank and lengthens
 * the step; up to 8 the slowest rank still holds 2, so the step grows only
 * by the experts the extra tokens touch (weights read), far less at a
 * context of 65536 tokens (6.4 GB of KV a sequence).  A group
 * of 1 sequence over 4 ranks (three run dummy batches) costs what that one
 * rank costs.
 */
START_TEST(test_lockstep_monotone)
{
	struct kv_model m = load_model("qwen3-30b-a3b");
	struct kv_device dev = load_device("h100-80g");
	struct kv_parallel par = { .tp = 1, .pp = 1, .ep = 4, .dp = 4 };
	struct kv_perf pf;
	kv_ns t[9];
	uint32_t n;

	kv_perf_init_parallel(&pf, &m, &dev, &par);
	for (n = 1; n <= 8; n++) {
		struct kv_batch_shape b = { .n_seqs = n, .n_decode = n, .n_sample = n,
					    .attn_pairs = 65536ULL * n,
					    .kv_read_bytes = 65536ULL * n * 98304 };

		t[n] = kv_perf_iter_ns(&pf, &b);
	}
	for (n = 2; n <= 4; n++) /* one per rank: only the experts touched grow */
		ck_assert_uint_ge(t[n], t[n - 1]);
	ck_assert_msg(t[5] - t[4] > 4 * (t[6] - t[5]), "4->5 %llu, 5->6 %llu",
		      (unsigned long long)(t[5] - t[4]), (unsigned long long)(t[6] - t[5]));
	ck_assert_uint_ge(t[8], t[5]);
}
END_TEST

/*
 * With the host model on, a lockstep group pads each rank's decode batch to
 * its captured CUDA graph as a single replica does: 5 decodes per rank run
 * the graph of 8, so a group of 4 x 5 costs what 4 x 8 costs when both have
 * the same KV to read (the experts touched are the group's, unpadded),
 * in a compute-bound step (slow tensor cores) where padded rows cost time;
 * without a graph for 5 they are not padded.
 */
START_TEST(test_lockstep_graph_padding)
{
	struct kv_model m = load_model("qwen3-30b-a3b");
	struct kv_device dev = load_device("h100-80g");
	struct kv_parallel par = { .tp = 1, .pp = 1, .ep = 4, .dp = 4 };
	struct kv_batch_shape b5 = { .n_seqs = 20, .n_decode = 20, .n_sample = 20,
				     .attn_pairs = 20 * 4096, .kv_read_bytes = 20ULL * 4096 * 98304 };
	struct kv_batch_shape b8 = b5;
	struct kv_perf pf;
	kv_ns t5, t8, plain5;

	kv_perf_init_parallel(&pf, &m, &dev, &par);
	pf.flops_per_s /= 1e4; /* compute-bound, so that padded rows cost time */
	plain5 = kv_perf_iter_ns(&pf, &b5);
	pf.host.on = 1;
	pf.host.steps = 1;
	pf.host.graph_max = 512;
	t5 = kv_perf_iter_ns(&pf, &b5);
	ck_assert_msg(t5 > plain5, "padded %llu, unpadded %llu", (unsigned long long)t5,
		      (unsigned long long)plain5);
	b8.n_seqs = b8.n_decode = b8.n_sample = 32;
	pf.per_seq_ns = 0; /* the head counts sequences, not graph rows */
	pf.moe_miss = 0; /* every expert touched either way: only the padding differs */
	pf.ep_moe_layers = 0; /* and no all-to-all (it moves the unpadded tokens) */
	t5 = kv_perf_iter_ns(&pf, &b5);
	t8 = kv_perf_iter_ns(&pf, &b8);
	ck_assert_msg(t5 == t8, "4 x 5 %llu, 4 x 8 %llu", (unsigned long long)t5,
		      (unsigned long long)t8);
	pf.host.graph_max = 4; /* 5 is above the largest graph: eager, unpadded */
	ck_assert_uint_lt(kv_perf_iter_ns(&pf, &b5), t5);
}
END_TEST

/* dp 1 (or 0, the default) keeps the replica's step as it was. */
START_TEST(test_dp1_unchanged)
{
	struct kv_model m = load_model("mixtral-8x7b");
	struct kv_device dev = load_device("h200");
	struct kv_batch_shape b = { .n_seqs = 7, .n_decode = 6, .n_sample = 7,
				    .n_prefill_tokens = 300, .attn_pairs = 90000,
				    .kv_read_bytes = 5000ULL * 131072 };
	struct kv_parallel p0 = { .tp = 2, .pp = 1, .ep = 2 }, p1 = p0;
	struct kv_perf a, c;

	p1.dp = 1;
	kv_perf_init_parallel(&a, &m, &dev, &p0);
	kv_perf_init_parallel(&c, &m, &dev, &p1);
	ck_assert_uint_eq(a.dp, 1);
	ck_assert_uint_eq(kv_perf_iter_ns(&a, &b), kv_perf_iter_ns(&c, &b));
}
END_TEST

/* cluster.data_parallel: loads where it can run, else names the key and what it expects. */
START_TEST(test_workload_dp)
{
	static const struct {
		const char *text; /* model, cluster and memory keys */
		const char *want; /* "" to load, else a part of the message */
		const char *field; /* the field the error names */
	} cases[] = {
		{ "model: qwen3-30b-a3b\ncluster: {data_parallel: 4, expert_parallel: 4}\n"
		  "memory: {model: vllm}", "", "" },
		{ "model: mixtral-8x7b\ncluster: {data_parallel: 4, tensor_parallel: 2, "
		  "expert_parallel: 8}\nmemory: {model: sglang}", "", "" },
		{ "model: llama-3.1-8b\ncluster: {data_parallel: 2, expert_parallel: 2}\n"
		  "memory: {model: vllm}", "dense: no experts", "cluster.data_parallel" },
		{ "model: qwen3-30b-a3b\ncluster: {data_parallel: 4, expert_parallel: 2}\n"
		  "memory: {model: vllm}", "expected 4", "cluster.expert_parallel" },
		{ "model: qwen3-30b-a3b\ncluster: {data_parallel: 4}\nmemory: {model: vllm}",
		  "expected 4", "cluster.data_parallel" },
		{ "model: mixtral-8x7b\ncluster: {data_parallel: 8, tensor_parallel: 2, "
		  "expert_parallel: 16}\nmemory: {model: vllm}", "divides the experts",
		  "cluster.data_parallel" },
		{ "model: qwen3-30b-a3b\ncluster: {data_parallel: 2, expert_parallel: 2, "
		  "pipeline_parallel: 2}\nmemory: {model: vllm}", "a data-parallel group is one",
		  "cluster.pipeline_parallel" },
		{ "model: qwen3-30b-a3b\ncluster: {data_parallel: 2, expert_parallel: 2}",
		  "expected vllm or sglang", "" },
		{ "model: qwen3-30b-a3b\ncluster: {data_parallel: 2, expert_parallel: 2}\n"
		  "memory: {model: share}", "expected vllm or sglang", "memory.model" },
	};
	char text[512];
	size_t i;

	for (i = 0; i < KV_ARRAY_LEN(cases); i++) {
		snprintf(text, sizeof(text), "device: h200\n%s\n"
			 "workload: {requests: 10, arrival: {rate: 1}}\n", cases[i].text);
		check_load(text, cases[i].want, cases[i].field, 0);
	}
}
END_TEST

/* The group's batch limits are dp times the per-rank ones of batching:. */
START_TEST(test_workload_dp_limits)
{
	static const char text[] = "device: h200\nmodel: qwen3-30b-a3b\n"
				   "cluster: {data_parallel: 4, expert_parallel: 4}\n"
				   "memory: {model: vllm}\nbatching: {max_tokens: 4096, max_seqs: 64}\n"
				   "workload: {requests: 10, arrival: {rate: 1}}\n";
	struct kv_workload w;
	struct kv_diag d = { 0 };

	ck_assert_msg(!kv_workload_load_mem(&w, "w.yaml", text, strlen(text), NULL, 0, 0, 0, &d),
		      "%s", d.msg);
	ck_assert_uint_eq(w.cfg.dp, 4);
	ck_assert_uint_eq(w.cfg.mem.dp, 4);
	ck_assert_uint_eq(w.cfg.max_batch_tokens, 4 * 4096);
	ck_assert_uint_eq(w.cfg.max_batch_seqs, 4 * 64);
	kv_workload_release(&w);
}
END_TEST

static Suite *moe_dp_suite(void)
{
	Suite *s = suite_create("moe_dp");
	TCase *tc = tcase_create("core");

	tcase_add_test(tc, test_expert_bytes);
	tcase_add_test(tc, test_weights_per_gpu);
	tcase_add_test(tc, test_budget_dp);
	tcase_add_test(tc, test_lockstep_slowest_rank);
	tcase_add_test(tc, test_lockstep_monotone);
	tcase_add_test(tc, test_dp1_unchanged);
	tcase_add_test(tc, test_lockstep_graph_padding);
	tcase_add_test(tc, test_workload_dp);
	tcase_add_test(tc, test_workload_dp_limits);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return kv_test_run_suite(moe_dp_suite());
}
