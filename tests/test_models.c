/*
 * test_models.c -- models beyond dense Llama (sim/profile.h): mixture of
 * experts, multi-head latent attention, sliding windows, weight and KV
 * dtypes.  Every expected figure is worked by hand in the comment above
 * its assertion from the profile's config.json numbers; the perf-model
 * checks recompute the roofline's terms the way perf.h states them.
 *
 * Profiles come from $KVSIM_CONFIG_DIR, else $KVSIM_SOURCE_DIR/configs;
 * bad-profile fixtures are written to a temporary directory.
 */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "perf.h"
#include "profile_load.h"

#include "test_moe.h"
#include "test_profiles.h"

/* The published parameter counts (HF model pages) and the architecture's. */
static const struct {
	const char *name;
	uint64_t params; /* safetensors count */
	uint64_t active; /* per token (MoE), else params */
} published[] = {
	{ "llama-3.1-8b", 8030261248ULL, 8030261248ULL },
	{ "llama-3.1-70b", 70553706496ULL, 70553706496ULL },
	{ "qwen2.5-7b", 7615616512ULL, 7615616512ULL },
	{ "qwen2.5-72b", 72706203648ULL, 72706203648ULL },
	{ "qwen3-8b", 8190735360ULL, 8190735360ULL },
	{ "qwen3-14b", 14768307200ULL, 14768307200ULL },
	{ "qwen3-32b", 32762123264ULL, 32762123264ULL },
	{ "mistral-nemo-12b", 12247782400ULL, 12247782400ULL },
	{ "yi-34b", 34388917248ULL, 34388917248ULL },
	{ "codellama-34b", 33743970304ULL, 33743970304ULL },
	{ "gemma-2-9b", 9241705984ULL, 9241705984ULL },
	/* 46702792704 - 32 layers * 6 skipped experts * 3*4096*14336 */
	{ "mixtral-8x7b", 46702792704ULL, 12879925248ULL },
	/* 30532122624 - 48 * 120 * 3*2048*768 */
	{ "qwen3-30b-a3b", 30532122624ULL, 3353032704ULL },
	/* 15706484224 - 26 * 58 * 3*2048*1408 */
	{ "deepseek-v2-lite", 15706484224ULL, 2661150208ULL },
};

/*
 * The architecture reproduces each published count exactly, except
 * Gemma-2's four norms a layer (kvsim counts two): 42 * 2 * 3584 = 301056.
 */
START_TEST(test_arch_matches_published)
{
	struct kv_model m = load_model(published[_i].name);
	uint64_t arch = kv_model_arch_params(&m);
	uint64_t gap = strcmp(m.name, "gemma-2-9b") ? 0 : 301056;

	ck_assert_msg(m.params == published[_i].params, "%s params %llu", m.name,
		      (unsigned long long)m.params);
	ck_assert_msg(arch + gap == published[_i].params, "%s arch %llu + %llu != %llu", m.name,
		      (unsigned long long)arch, (unsigned long long)gap,
		      (unsigned long long)published[_i].params);
	ck_assert_msg(kv_model_active_params(&m) == published[_i].active, "%s active %llu",
		      m.name, (unsigned long long)kv_model_active_params(&m));
}
END_TEST

/*
 * Mixtral-8x7B: 32 MoE layers, E = 8, k = 2, expert = 3*4096*14336 =
 * 176160768 params = 352321536 bytes.  Distinct experts: n=1 -> 2, n=2 ->
 * 8*(1 - 0.75^2) = 3.5, n -> inf -> 8.  Weights read: resident 93405585408
 * less 32 * (8 - d) * 352321536: d=2 -> 25759850496 (= 2 * active), d=8 ->
 * all 93405585408, n=0 -> 93405585408 - 90194313216 = 3211272192.
 */
START_TEST(test_moe_mixtral)
{
	struct kv_model m = load_model("mixtral-8x7b");

	ck_assert_uint_eq(kv_model_moe_layers(&m), 32);
	ck_assert_uint_eq(kv_model_expert_params(&m), 176160768ULL);
	ck_assert_uint_eq(kv_model_weight_bytes(&m), 93405585408ULL);
	ck_assert_double_eq_tol(kv_model_moe_distinct_experts(&m, 0), 0.0, 1e-12);
	ck_assert_double_eq_tol(kv_model_moe_distinct_experts(&m, 1), 2.0, 1e-12);
	ck_assert_double_eq_tol(kv_model_moe_distinct_experts(&m, 2), 3.5, 1e-12);
	ck_assert_double_eq_tol(kv_model_moe_distinct_experts(&m, 4096), 8.0, 1e-9);
	ck_assert_double_eq_tol(kv_model_weight_read_bytes(&m, 0, 0), 3211272192.0, 0.5);
	ck_assert_double_eq_tol(kv_model_weight_read_bytes(&m, 1, 0), 25759850496.0, 0.5);
	ck_assert_double_eq_tol(kv_model_weight_read_bytes(&m, 1e6, 0), 93405585408.0, 0.5);
	/* the input embedding (32000 * 4096 * 2 = 262144000 bytes) is a lookup */
	ck_assert_double_eq_tol(kv_model_weight_read_bytes(&m, 1, 1), 25497706496.0, 0.5);
	/* dispatch: hidden 4096 * 2 bytes * top-2 */
	ck_assert_uint_eq(kv_model_moe_dispatch_bytes_per_token(&m), 16384);
	/* FLOPs: 2 * (active - embedding) = 2 * (12879925248 - 131072000) */
	ck_assert_double_eq_tol(kv_model_linear_flops_per_token(&m), 25497706496.0, 0.5);
	/* KV is Mistral's: 2 * 32 * 8 * 128 * 2 */
	ck_assert_uint_eq(kv_model_kv_bytes_per_token(&m), 131072);
}
END_TEST

/*
 * Qwen3-30B-A3B: E = 128, k = 8, expert 3*2048*768 = 4718592 params.  16
 * tokens touch 128 * (1 - (120/128)^16) = 82.4225113 experts; 48 layers *
 * (128 - 82.4225113) * 9437184 bytes fewer than the resident 61064245248.
 */
START_TEST(test_moe_qwen3)
{
	struct kv_model m = load_model("qwen3-30b-a3b");
	double d16 = 128.0 * (1.0 - pow(120.0 / 128.0, 16));

	ck_assert_double_eq_tol(d16, 82.42251130217052, 1e-9);
	ck_assert_double_eq_tol(kv_model_moe_distinct_experts(&m, 16), 82.42251130217052, 1e-9);
	ck_assert_double_eq_tol(kv_model_weight_read_bytes(&m, 16, 0),
				61064245248.0 - 48.0 * (128.0 - d16) * 9437184.0, 1.0);
	ck_assert_uint_eq(kv_model_moe_dispatch_bytes_per_token(&m), 2048 * 2 * 8);
	/* Q/K norms add 2 * 128 per layer: without them 48 * 256 fewer */
	m.qk_norm = 0;
	ck_assert_uint_eq(kv_model_arch_params(&m), 30532122624ULL - 48 * 256);
}
END_TEST

/*
 * DeepSeek-V2-Lite MLA: 27 layers * (512 + 64) elements * 2 bytes = 31104
 * bytes per token, one copy (a standard layout with its 16 heads of 128
 * would be 2 * 27 * 16 * 128 * 2 = 221184), on every GPU of a TP group.
 * Attention FLOPs per pair 2 * 27 * 16 * (128 + 64 + 128) = 276480.
 * 26 MoE layers (first_k_dense_replace 1), 64 routed + 2 shared experts of
 * 3*2048*1408 = 8650752; top-6 dispatch 2048 * 2 * 6 = 24576 bytes.
 */
START_TEST(test_mla_deepseek)
{
	struct kv_model m = load_model("deepseek-v2-lite");

	ck_assert_uint_eq(kv_model_kv_elems_per_token(&m), 27 * 576);
	ck_assert_uint_eq(kv_model_kv_vector_elems(&m), 576);
	ck_assert_uint_eq(kv_model_kv_bytes_per_token(&m), 31104);
	ck_assert_uint_eq(kv_model_kv_bytes_per_token_gpu(&m, 1), 31104);
	ck_assert_uint_eq(kv_model_kv_bytes_per_token_gpu(&m, 4), 31104);
	ck_assert_uint_eq(kv_model_kv_bytes(&m, 1000), 31104000ULL);
	ck_assert_double_eq_tol(kv_model_attn_flops_per_pair(&m), 276480.0, 1e-9);
	ck_assert_uint_eq(kv_model_moe_layers(&m), 26);
	ck_assert_uint_eq(kv_model_expert_params(&m), 8650752ULL);
	ck_assert_uint_eq(kv_model_moe_dispatch_bytes_per_token(&m), 24576);
	/* one token reads all but 26 * 58 experts: 2 * 2661150208 bytes */
	ck_assert_double_eq_tol(kv_model_weight_read_bytes(&m, 1, 0), 5322300416.0, 0.5);
	/* fp8 KV halves the latent: 15552 */
	m.kv_dtype = KV_DTYPE_FP8;
	ck_assert_uint_eq(kv_model_kv_bytes_per_token(&m), 15552);
}
END_TEST

/*
 * Gemma-2-9B: 2 * 42 * 8 * 256 * 2 = 344064 bytes a token, 8192 a layer;
 * windowed layers 0, 2, ..., 40: 21.  At 8000 tokens of context:
 * 21 * 8192 * 8000 + 21 * 8192 * 4096 = 2080899072 bytes (full attention
 * would hold 2752512000); below the window every layer holds all.
 */
START_TEST(test_window_gemma2)
{
	struct kv_model m = load_model("gemma-2-9b");

	ck_assert_uint_eq(kv_model_kv_bytes_per_token(&m), 344064);
	ck_assert_uint_eq(kv_model_window_layers(&m), 21);
	ck_assert_uint_eq(kv_model_kv_bytes(&m, 8000), 2080899072ULL);
	ck_assert_uint_eq(kv_model_kv_bytes(&m, 4096), 4096ULL * 344064);
	ck_assert_uint_eq(kv_model_kv_bytes(&m, 100), 100ULL * 344064);
	/* Mistral v0.1 style: every layer windowed; 43 layers and every 2nd: 22 */
	m.window_every = 1;
	ck_assert_uint_eq(kv_model_window_layers(&m), 42);
	ck_assert_uint_eq(kv_model_kv_bytes(&m, 8000), 4096ULL * 344064);
	m.layers = 43;
	m.window_every = 2;
	ck_assert_uint_eq(kv_model_window_layers(&m), 22);
	/* tied embedding: the whole table is the LM head, nothing to skip */
	m = load_model("gemma-2-9b");
	ck_assert_double_eq_tol(kv_model_weight_read_bytes(&m, 1, 1),
				(double)kv_model_weight_bytes(&m), 0.5);
}
END_TEST

/*
 * Windowed attention compute: a chunk of c queries after p cached tokens
 * skips, on a layer with window W, sum over i = p+1 .. p+c of max(0, i - W)
 * pairs: (0, 8000, 4096) -> 1 + ... + 3904 = 7622560; (5000, 10, 4096) ->
 * 905 + ... + 914 = 9095; a decode at context 4097 skips 1.  Gemma-2-9B
 * prefilling 8000 tokens on one H100 computes 8000 * 8001 / 2 - 21/42 *
 * 7622560 = 28192720 pairs at 4 * 16 * 256 * 42 = 688128 FLOPs each, and
 * reads the windowed KV, kv_model_kv_bytes(8000) = 2080899072 bytes.
 */
START_TEST(test_window_flops)
{
	struct kv_model m = load_model("gemma-2-9b");
	struct kv_device dev = load_device("h100-80g");
	struct kv_batch_shape b = { .n_seqs = 1, .n_sample = 1, .n_prefill_tokens = 8000,
				    .attn_pairs = 32004000, .window_skip_pairs = 7622560,
				    .kv_read_bytes = 2080899072ULL };
	struct kv_perf pf;
	double bw = dev.mem_bw_Bps * dev.eff_bw, fl = dev.flops * dev.eff_flops, lin, attn, want;
	kv_ns full;

	ck_assert_uint_eq(kv_perf_window_skip_pairs(0, 8000, 4096), 7622560);
	ck_assert_uint_eq(kv_perf_window_skip_pairs(5000, 10, 4096), 9095);
	ck_assert_uint_eq(kv_perf_window_skip_pairs(0, 4096, 4096), 0);
	ck_assert_uint_eq(kv_perf_window_skip_pairs(4096, 1, 4096), 1);
	ck_assert_uint_eq(kv_perf_window_skip_pairs(4095, 1, 4096), 0);
	ck_assert_uint_eq(kv_perf_window_skip_pairs(0, 8000, UINT64_MAX), 0);
	ck_assert_uint_eq(kv_perf_window_skip_pairs(0, 8000, 0), 0);
	ck_assert_uint_eq(kv_model_window_bytes(&m, 8000, 344064), 2080899072ULL);
	ck_assert_uint_eq(kv_model_window_bytes(&m, 8000, 344064), kv_model_kv_bytes(&m, 8000));
	ck_assert_double_eq_tol(kv_model_attn_flops_per_pair(&m), 688128.0, 1e-9);
	kv_perf_init(&pf, &m, &dev, 1);
	ck_assert_double_eq_tol(pf.window_frac, 0.5, 1e-15);
	lin = fmax((double)kv_model_weight_bytes(&m) / bw,
		   ((kv_model_linear_flops_per_token(&m) - kv_model_head_flops(&m)) * 8000.0 +
		    kv_model_head_flops(&m)) / fl);
	attn = fmax(2080899072.0 / bw, 688128.0 * 28192720.0 /
					       (dev.flops * (dev.eff_attn > 0 ? dev.eff_attn :
									 dev.eff_flops)));
	want = ceil((double)dev.overhead_ns + (double)dev.per_seq_ns + 1e9 * (lin + attn));
	ck_assert_msg(fabs((double)kv_perf_iter_ns(&pf, &b) - want) <= 1.0, "got %llu want %.0f",
		      (unsigned long long)kv_perf_iter_ns(&pf, &b), want);
	/* the same chunk with every layer attending to all of it costs more */
	b.window_skip_pairs = 0;
	full = kv_perf_iter_ns(&pf, &b);
	ck_assert_uint_gt(full, (kv_ns)want + 1);
	/* a model without a window ignores the count */
	m = load_model("llama-3.1-8b");
	kv_perf_init(&pf, &m, &dev, 1);
	ck_assert(pf.window_frac == 0.0);
	b.window_skip_pairs = 7622560;
	full = kv_perf_iter_ns(&pf, &b);
	b.window_skip_pairs = 0;
	ck_assert_uint_eq(kv_perf_iter_ns(&pf, &b), full);
}
END_TEST

/*
 * Llama-3.1-8B dtypes: embeddings 2 * 128256 * 4096 = 1050673152 params
 * stay 16-bit (2101346304 bytes); the other 6979588096 params take 4 bits
 * (3489794048) or 8 (6979588096).  KV fp8: 2 * 32 * 8 * 128 = 65536.
 */
START_TEST(test_dtypes)
{
	struct kv_model m = load_model("llama-3.1-8b");
	uint32_t dt;

	ck_assert_uint_eq(kv_model_weight_bytes(&m), 16060522496ULL);
	m.weight_dtype = KV_DTYPE_INT4;
	ck_assert_uint_eq(kv_model_weight_bytes(&m), 3489794048ULL + 2101346304ULL);
	m.weight_dtype = KV_DTYPE_FP8;
	ck_assert_uint_eq(kv_model_weight_bytes(&m), 6979588096ULL + 2101346304ULL);
	m.weight_dtype = KV_DTYPE_BF16;
	ck_assert_uint_eq(kv_model_weight_bytes(&m), 16060522496ULL);
	ck_assert_uint_eq(kv_model_kv_bytes_per_token(&m), 131072);
	m.kv_dtype = KV_DTYPE_FP8;
	ck_assert_uint_eq(kv_model_kv_bytes_per_token(&m), 65536);
	ck_assert_uint_eq(kv_model_kv_bytes_per_token_gpu(&m, 2), 32768);
	ck_assert_int_eq(kv_dtype_parse("int4", &dt), 0);
	ck_assert_uint_eq(dt, KV_DTYPE_INT4);
	ck_assert_int_eq(kv_dtype_parse("fp4", &dt), KV_EINVAL);
	ck_assert_uint_eq(kv_dtype_bits(KV_DTYPE_AUTO, 2), 16);
	ck_assert_uint_eq(kv_dtype_bits(KV_DTYPE_INT4, 2), 4);
}
END_TEST

/*
 * The roofline on Mixtral over two H200s: per GPU the non-expert weights
 * 3211272192 / 2 and one expert in every MoE layer 32 * 352321536 / 2;
 * a one-sequence decode step reads non-expert + 2 experts' worth.  The
 * step time is overhead + max(mem, compute) + attention + all-reduce,
 * recomputed here from perf.h's equation.
 */
START_TEST(test_perf_moe)
{
	struct kv_model m = load_model("mixtral-8x7b");
	struct kv_device dev = load_device("h200");
	struct kv_batch_shape b = mixtral_decodes(1, 1000);
	struct kv_perf pf;
	double bw = dev.mem_bw_Bps * dev.eff_bw, lin, ar, want;

	kv_perf_init(&pf, &m, &dev, 2);
	/* the input embedding (32000 * 4096 * 2 = 262144000 bytes) is looked up, not read */
	ck_assert_double_eq_tol(pf.weight_bytes_per_gpu, (3211272192.0 - 262144000.0) / 2, 0.5);
	ck_assert_double_eq_tol(pf.expert_bytes_per_gpu, 32.0 * 352321536.0 / 2, 0.5);
	lin = fmax((3211272192.0 - 262144000.0 + 2 * 32.0 * 352321536.0) / 2 / bw,
		   ((25497706496.0 - 2.0 * 32000 * 4096) / 2 + 2.0 * 32000 * 4096 / 2) /
			   (dev.flops * dev.eff_flops));
	ar = kv_perf_allreduce_ns(&pf, 1.0); /* comm.h: H200 names its NVLink */
	want = ceil((double)dev.overhead_ns + 1e9 * (lin + mixtral_attn_s(&dev, 1000)) + ar);
	check_iter_ns(&pf, &b, want);
	/* a bigger batch touches more experts: never faster, and bounded by all of them */
	b.n_decode = b.n_seqs = b.n_sample = 64;
	ck_assert_uint_gt(kv_perf_iter_ns(&pf, &b), want);
	/* the legacy charge (embed_lookup: false) puts 262144000 / 2 bytes back; idempotent */
	kv_perf_set_embed_lookup(&pf, 0);
	kv_perf_set_embed_lookup(&pf, 0);
	ck_assert_double_eq_tol(pf.weight_bytes_per_gpu, 3211272192.0 / 2, 0.5);
	kv_perf_embed_lookup(&pf);
	kv_perf_embed_lookup(&pf);
	ck_assert_double_eq_tol(pf.weight_bytes_per_gpu, (3211272192.0 - 262144000.0) / 2, 0.5);
}
END_TEST

/*
 * Expert parallelism (cluster.expert_parallel 2, as engine.c passes it to
 * kv_perf_init_parallel) on Mixtral over two H200s (NVLink, NCCL busbw
 * 370 GB/s in the profile): the routed experts shard over ep, 32 * 352321536
 * / 2 bytes a GPU for one expert in every MoE layer; a one-sequence decode
 * reads the non-expert half and 2 experts' worth, as at TP 2.  Added: per
 * layer two ring all-reduces of 8192 bytes (comm.h, 2 ranks: LL is
 * cheapest, 1.05 (6.6 + 2*0.6) us + 8192 B / (370 GB/s * 1/4 * 1.35 * 2/2),
 * NCCL's constants with the fitted NVLink scales) and per MoE
 * layer a dispatch and a combine all-to-all of 1 token * top-2 * 4096 * 2 =
 * 16384 bytes: 10.8 us + 1/2 * 16384 B / (370 GB/s * 0.914) (the fitted
 * all-to-all of comm.h).  Over 4 ranks the experts shard four ways and each
 * all-to-all costs the same latency and 3/4 of the bytes.
 */
START_TEST(test_perf_moe_ep)
{
	struct kv_model m = load_model("mixtral-8x7b");
	struct kv_device dev = load_device("h200");
	struct kv_batch_shape b = mixtral_decodes(1, 1000);
	struct kv_parallel par = { .tp = 2, .pp = 1, .ep = 2 };
	struct kv_perf pf;
	double bw = dev.mem_bw_Bps * dev.eff_bw, lin, ar, a2a, want;

	ck_assert_int_eq(dev.link_type, KV_LINK_NVLINK);
	ck_assert(dev.link_busbw_Bps == 370e9);
	kv_perf_init_parallel(&pf, &m, &dev, &par);
	ck_assert_double_eq_tol(pf.expert_bytes_per_gpu, 32.0 * 352321536.0 / 2, 0.5);
	ck_assert(pf.ep_moe_layers == 32.0);
	ck_assert(pf.ep_bytes_per_token == 16384.0);
	lin = fmax((3211272192.0 - 262144000.0 + 2 * 32.0 * 352321536.0) / 2 / bw,
		   (25497706496.0 / 2) / (dev.flops * dev.eff_flops));
	ar = 64.0 * (1.05 * 7800.0 + 8192.0 / (92.5e9 * 1.35) * 1e9);
	a2a = mixtral_a2a_ns(1.0, 2.0);
	ck_assert_double_eq_tol(kv_perf_allreduce_ns(&pf, 1.0), ar, 1e-6);
	ck_assert_double_eq_tol(kv_perf_moe_ep_ns(&pf, 1.0), a2a, 1e-6);
	want = ceil((double)dev.overhead_ns + 1e9 * (lin + mixtral_attn_s(&dev, 1000)) + ar + a2a);
	check_iter_ns(&pf, &b, want);
	/* ep 4 with tp 2: experts four ways, all-to-alls over 4 ranks, 16 tokens */
	par.ep = 4;
	kv_perf_init_parallel(&pf, &m, &dev, &par);
	ck_assert_double_eq_tol(pf.expert_bytes_per_gpu, 32.0 * 352321536.0 / 4, 0.5);
	ck_assert_double_eq_tol(kv_perf_moe_ep_ns(&pf, 16.0), mixtral_a2a_ns(16.0, 4.0), 1e-6);
	/* a dense model under ep pays nothing */
	m = load_model("llama-3.1-8b");
	kv_perf_init_parallel(&pf, &m, &dev, &par);
	ck_assert(kv_perf_moe_ep_ns(&pf, 16.0) == 0.0);
}
END_TEST

/*
 * A dense profile's weights read: resident less the looked-up input embedding
 * (32000 * 4096 * 2 bytes), exactly resident under the legacy charge.
 */
START_TEST(test_perf_dense_unchanged)
{
	struct kv_model m = load_model("llama-2-7b");
	struct kv_device dev = load_device("a100-80g");
	struct kv_perf pf;

	kv_perf_init(&pf, &m, &dev, 1);
	ck_assert(pf.weight_bytes_per_gpu == (double)kv_model_weight_bytes(&m) - 262144000.0);
	ck_assert(pf.weight_bytes_per_gpu == kv_model_weight_read_bytes(&m, 77, 1));
	kv_perf_set_embed_lookup(&pf, 0);
	ck_assert(pf.weight_bytes_per_gpu == (double)kv_model_weight_bytes(&m));
	ck_assert(pf.expert_bytes_per_gpu == 0.0 && pf.moe_experts == 0.0);
	ck_assert(kv_model_weight_read_bytes(&m, 77, 0) == (double)kv_model_weight_bytes(&m));
	ck_assert(pf.flops_per_s == dev.flops * dev.eff_flops);
}
END_TEST

/* fp8 weights run their GEMMs at the device's fp8 rate when it has one; int4 at fp16. */
START_TEST(test_perf_fp8_rate)
{
	struct kv_model m = load_model("llama-3.1-8b");
	struct kv_device dev = load_device("h100-80g");
	struct kv_perf pf;

	m.weight_dtype = KV_DTYPE_FP8;
	dev.flops_fp8 = 0;
	kv_perf_init(&pf, &m, &dev, 1);
	ck_assert(pf.flops_per_s == dev.flops * dev.eff_flops);
	dev.flops_fp8 = 2 * dev.flops;
	kv_perf_init(&pf, &m, &dev, 1);
	ck_assert(pf.flops_per_s == dev.flops_fp8 * dev.eff_flops);
	ck_assert(pf.attn_flops_per_s == dev.flops * dev.eff_flops);
	/* the 8-bit layers, both 16-bit tables, less the looked-up input one */
	ck_assert_double_eq_tol(pf.weight_bytes_per_gpu, 6979588096.0 + 2101346304.0 - 1050673152.0,
				0.5);
	m.weight_dtype = KV_DTYPE_INT4;
	kv_perf_init(&pf, &m, &dev, 1);
	ck_assert(pf.flops_per_s == dev.flops * dev.eff_flops);
	ck_assert_double_eq_tol(pf.weight_bytes_per_gpu, 3489794048.0 + 2101346304.0 - 1050673152.0,
				0.5);
}
END_TEST

/* Bad MoE/MLA/window/dtype keys: exit-2 diagnostics naming the key and its line. */
static const struct {
	const char *extra; /* lines appended to a valid dense profile */
	const char *field; /* field the diagnostic names */
	unsigned long line; /* its line in the file */
} bad[] = {
	{ "experts: 8\nexperts_per_token: 9\nmoe_intermediate: 64\n", "experts_per_token", 15 },
	{ "experts_per_token: 2\n", "experts", 0 },
	{ "experts: 8\nexperts_per_token: 2\n", "moe_intermediate", 0 },
	{ "experts: 8\nexperts_per_token: 2\nmoe_intermediate: 64\ndense_layers: 4\n",
	  "dense_layers", 17 },
	{ "experts: 8\nexperts_per_token: 2\nmoe_intermediate: 64\nexpert_imbalance: 0.5\n",
	  "expert_imbalance", 17 },
	{ "kv_lora_rank: 64\n", "qk_rope_head_dim", 0 },
	{ "v_head_dim: 64\n", "kv_lora_rank", 0 },
	{ "sliding_window: 2048\n", "sliding_window", 14 },
	{ "sliding_window: 512\nwindow_every: 9\n", "window_every", 15 },
	{ "kv_dtype: int4\n", "kv_dtype", 14 },
	{ "weight_dtype: fp4\n", "weight_dtype", 14 },
};

/* A 4-layer dense profile (the shape of configs/models/tiny.yaml), 13 lines. */
static const char tiny[] = "name: t\nlayers: 4\nhidden: 512\nheads: 8\nkv_heads: 8\n"
			   "head_dim: 64\nintermediate: 1376\nvocab: 32000\nmax_context: 2048\n"
			   "params: %llu\ngated_mlp: true\ntie_embeddings: false\nsource: test\n";

START_TEST(test_bad_keys)
{
	char path[] = "/tmp/kvsim-models-XXXXXX";
	struct kv_diag d = { 0 };
	struct kv_model m = { .layers = 4, .hidden = 512, .heads = 8, .kv_heads = 8,
			      .head_dim = 64, .intermediate = 1376, .vocab = 32000, .gated_mlp = 1 };
	int fd = mkstemp(path), err;
	FILE *f;
	char yaml[] = ".yaml";
	char full[64];

	ck_assert_int_ge(fd, 0);
	close(fd);
	unlink(path);
	snprintf(full, sizeof(full), "%s%s", path, yaml);
	f = fopen(full, "w");
	ck_assert_ptr_nonnull(f);
	fprintf(f, tiny, (unsigned long long)kv_model_arch_params(&m));
	fputs(bad[_i].extra, f);
	fclose(f);
	err = kv_profile_load_model(full, &m, &d);
	unlink(full);
	ck_assert_msg(err == (strcmp(bad[_i].field, "expert_imbalance") ? KV_EINVAL : KV_ERANGE),
		      "case %d: got %d (%s)", _i, err, d.msg);
	ck_assert_msg(!strcmp(d.field, bad[_i].field), "case %d: field '%s' want '%s' (%s)", _i,
		      d.field, bad[_i].field, d.msg);
	ck_assert_msg(!bad[_i].line || d.line == bad[_i].line, "case %d: line %lu want %lu (%s)",
		      _i, d.line, bad[_i].line, d.msg);
}
END_TEST

static Suite *models_suite(void)
{
	Suite *s = suite_create("models");
	TCase *tc = tcase_create("core");

	tcase_add_loop_test(tc, test_arch_matches_published, 0,
			    (int)(sizeof(published) / sizeof(published[0])));
	tcase_add_test(tc, test_moe_mixtral);
	tcase_add_test(tc, test_moe_qwen3);
	tcase_add_test(tc, test_mla_deepseek);
	tcase_add_test(tc, test_window_gemma2);
	tcase_add_test(tc, test_window_flops);
	tcase_add_test(tc, test_dtypes);
	tcase_add_test(tc, test_perf_moe);
	tcase_add_test(tc, test_perf_moe_ep);
	tcase_add_test(tc, test_perf_dense_unchanged);
	tcase_add_test(tc, test_perf_fp8_rate);
	tcase_add_loop_test(tc, test_bad_keys, 0, (int)(sizeof(bad) / sizeof(bad[0])));
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(models_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
