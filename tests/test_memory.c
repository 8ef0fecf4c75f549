/*
 * test_memory.c -- the KV-cache budget of sim/memory.c: each term, the
 * share model's pool unchanged, the pin, and the estimate against the
 * capacity real engines logged (sources in docs/memory.md):
 *   - vllm-project/vllm PR 2031 (https://github.com/vllm-project/vllm/pull/2031):
 *     Llama-2-7B, TP 1, one A100-80GB, gpu_memory_utilization 0.9:
 *     "# GPU blocks: 7351";
 *   - vllm-project/vllm PR 10511 (https://github.com/vllm-project/vllm/pull/10511):
 *     Meta-Llama-3-8B, TP 1, total_gpu_memory 79.22 GiB, utilization 0.90:
 *     weights 14.96 GiB, non_torch 1.79 GiB, activation peak 1.26 GiB,
 *     available_kv_cache_memory 53.29 GiB.
 */
#include "testutil.h"

#include <check.h>
#include <math.h>
#include <stdlib.h>

#include "memory.h"
#include "profile_load.h"
#include "workload.h"

#include <string.h>

#define GIB ((double)KV_GiB)

#include "test_profiles.h"

/* A shipped model on a shipped device, sized by one memory model (other keys: defaults). */
struct fit {
	struct kv_model m;
	struct kv_device dev;
	struct kv_mem_cfg c;
};

static struct fit fit(const char *model, const char *device, enum kv_mem_model mem_model)
{
	struct fit f = { .m = load_model(model), .dev = load_device(device) };

	kv_mem_cfg_init(&f.c);
	f.c.model = mem_model;
	return f;
}

/* Runs kv_mem_budget on f, which must succeed. */
static struct kv_mem_budget budget(const struct fit *f, uint32_t tp, uint64_t tokens,
				   uint32_t seqs)
{
	struct kv_mem_budget b;
	struct kv_diag d = { 0 };
	int err = kv_mem_budget(&f->c, &f->m, &f->dev, tp, tokens, seqs, &b, &d);

	ck_assert_msg(!err, "%s %s tp %u: %s: %s", f->m.name, f->dev.name, tp, d.field, d.msg);
	return b;
}

/* |got / want - 1| <= tol, with a message naming what. */
static void near(const char *what, double got, double want, double tol)
{
	ck_assert_msg(fabs(got / want - 1) <= tol, "%s: got %.6g, engine logged %.6g (%+.2f%%, tolerance %.1f%%)",
		      what, got, want, 100 * (got / want - 1), 100 * tol);
}

START_TEST(test_profiles_have_cuda_memory)
{
	static const char *const names[] = { "a100-40g", "a100-80g", "h100-80g", "h200" };
	static const uint64_t want[] = { 42405855232ULL, 84987740160ULL, 85028896768ULL,
					 150109945856ULL };
	size_t i;

	for (i = 0; i < 4; i++) {
		struct kv_device dev = load_device(names[i]);

		ck_assert_msg(dev.mem_cuda_bytes == want[i], "%s: memory_cuda %llu, want %llu",
			      names[i], (unsigned long long)dev.mem_cuda_bytes,
			      (unsigned long long)want[i]);
	}
}
END_TEST

START_TEST(test_token_bytes)
{
	struct kv_model l2 = load_model("llama-2-7b"), l3 = load_model("llama-3-8b");

	ck_assert_uint_eq(kv_mem_token_bytes(&l2, 1), 524288); /* 512 KiB, reference/models.csv */
	ck_assert_uint_eq(kv_mem_token_bytes(&l3, 1), 131072); /* 128 KiB */
	ck_assert_uint_eq(kv_mem_token_bytes(&l3, 2), 65536);
	ck_assert_uint_eq(kv_mem_token_bytes(&l3, 16), 16384); /* 8 KV heads: one per GPU at most */
}
END_TEST

/*
 * The activation term: the larger of the forward's MLP peak and the
 * sampler's (42 bytes a logit), and vLLM's logged peak for Llama-3-8B
 * within 5%: at 8192 tokens and 256 sequences the sampler's peak
 * (1.38e9 bytes) is above the MLP's (0.84e9), so TP does not move it (the
 * log shows 1.26 GiB at TP 1 and 2).
 */
START_TEST(test_activation)
{
	struct kv_model l3 = load_model("llama-3-8b");
	struct kv_model l70 = load_model("llama-3.1-70b");
	uint64_t a = kv_mem_activation_bytes(&l3, 8192, 256, 1);

	ck_assert_uint_eq(a, 256ULL * 128256 * 42);
	ck_assert_uint_gt(a, 8192ULL * 2 * (2 * 4096 + 3 * 14336));
	near("Llama-3-8B activation peak at 8192 tokens (PR 10511)", (double)a, 1.26 * GIB, 0.05);
	/* fewer batched tokens than max_num_seqs: the sampler sees one row per token */
	ck_assert_uint_eq(kv_mem_activation_bytes(&l3, 100, 256, 1), 100ULL * 128256 * 42);
	/* the sampler's peak does not depend on TP */
	ck_assert_uint_eq(kv_mem_activation_bytes(&l3, 8192, 256, 4), a);
	/* one sequence: the forward's peak, the MLP column-parallel over TP */
	ck_assert_uint_eq(kv_mem_activation_bytes(&l3, 8192, 1, 1), 8192ULL * 2 * (2 * 4096 + 3 * 14336));
	ck_assert_uint_eq(kv_mem_activation_bytes(&l3, 8192, 1, 2), 8192ULL * 2 * (2 * 4096 + 3 * 7168));
	/* a 70B model at 24 272 tokens peaks in the MLP: 2.68 GiB per GPU at TP 2 */
	ck_assert_uint_eq(kv_mem_activation_bytes(&l70, 24272, 256, 2),
			  24272ULL * 2 * (2 * 8192 + 3 * 14336));
}
END_TEST

/*
 * vLLM 0.6.0 started Llama-3.1-70B at TP 2 on two H100 80GB with
 * --max-model-len 24272 and gpu_memory_utilization 0.97, and it refuses to
 * start unless the KV cache holds max_model_len tokens
 * (vllm/worker/worker.py raise_if_cache_size_invalid), so it had at least
 * 24 272 tokens; its profiling run batched max(max_model_len, 2048) tokens
 * (chunked prefill off).  kvsim gave 16 560 before the activation term
 * split the MLP over TP and stopped adding the sampler to the forward.
 */
START_TEST(test_vllm_060_70b_tp2)
{
	struct fit f = fit("llama-3.1-70b", "h100-80g", KV_MEM_VLLM);
	struct kv_mem_budget b;

	f.c.gpu_memory_utilization = 0.97;
	b = budget(&f, 2, 24272, 256);
	ck_assert_msg(b.kv_tokens >= 24272, "kv_tokens %llu: vLLM held at least 24272",
		      (unsigned long long)b.kv_tokens);
}
END_TEST

/*
 * MoE: vLLM's fused_moe buffers stand in for the MLP (memory.h).  Mixtral
 * at TP 2, 8192 tokens: M = 8192, k = 2, N = 2 * 14336 / 2 = 14336, K =
 * 4096; workspace13 8192*2*7168 + workspace2 8192*2*14336 + output
 * 8192*4096 = 385875968 elements = 771751936 bytes; block 128, P = 16384 +
 * 8*127 = 17400: 69600 + 4*136 = 70144 bytes of ids; 771822080 in all.
 * Plus 8192*2*2*4096 = 134217728; the sampler's 256*32000*42 = 344064000
 * is smaller.
 * Qwen3-30B-A3B at 20000 tokens runs in chunks of M = 16384: N = 1536, K =
 * 2048: (2 * 16384*8*2048 + 16384*2048) * 2 = 1140850688, P = 131072 +
 * 128*127 = 147328: 589312 + 4*1151; 1141444604.  DeepSeek-V2-Lite's dense
 * first layer (8192*2*3*10944 = 537919488) outweighs its MoE buffers
 * ((8192*6*2048 + 8192*6*2816 + 8192*2048) * 2 + 4*57280 + 4*448 =
 * 511936000) at TP 1.
 */
START_TEST(test_activation_moe)
{
	struct kv_model mx = load_model("mixtral-8x7b");
	struct kv_model qw = load_model("qwen3-30b-a3b");
	struct kv_model ds = load_model("deepseek-v2-lite");

	ck_assert_uint_eq(kv_mem_moe_workspace_bytes(&mx, 8192, 2), 771822080ULL);
	ck_assert_uint_eq(kv_mem_activation_bytes(&mx, 8192, 256, 2), 771822080ULL + 134217728ULL);
	ck_assert_uint_eq(kv_mem_moe_workspace_bytes(&qw, 20000, 1), 1141444604ULL);
	ck_assert_uint_eq(kv_mem_moe_workspace_bytes(&ds, 8192, 1), 511936000ULL);
	ck_assert_uint_eq(kv_mem_activation_bytes(&ds, 8192, 1, 1),
			  8192ULL * 2 * 2 * 2048 + 537919488ULL);
	/* at 256 sequences its 102400-token vocabulary's sampler peak is larger */
	ck_assert_uint_eq(kv_mem_activation_bytes(&ds, 8192, 256, 1), 256ULL * 102400 * 42);
	/* a dense model has no fused_moe buffers */
	ck_assert_uint_eq(kv_mem_moe_workspace_bytes(&(struct kv_model){ .hidden = 64 }, 8192, 1), 0);
}
END_TEST

START_TEST(test_sglang_fraction)
{
	/* server_args.py: (total - reserved) / total, rounded to 3 places */
	ck_assert_double_eq_tol(kv_mem_sglang_fraction(84987740160ULL, 1), 0.874, 1e-9);
	ck_assert_double_eq_tol(kv_mem_sglang_fraction(84987740160ULL, 8), 0.829, 1e-9);
	ck_assert_double_eq_tol(kv_mem_sglang_fraction(150109945856ULL, 1), 0.911, 1e-9);
	ck_assert_double_eq_tol(kv_mem_sglang_fraction(24ULL * KV_GiB, 1), 0.879, 1e-9);
}
END_TEST

/* The share model keeps today's pool: tp * memory * share - alpha * M, to the byte. */
START_TEST(test_share_unchanged)
{
	struct fit f = fit("llama-2-7b", "a100-80g", KV_MEM_SHARE);
	struct kv_mem_budget b;

	b = budget(&f, 1, 2048, 256);
	ck_assert_uint_eq(b.pool_bytes,
			  (uint64_t)(80e9 * 0.9 - 1.1 * (double)kv_model_weight_bytes(&f.m)));
	ck_assert_uint_eq(b.kv_tokens, b.pool_bytes / 524288);
	ck_assert_uint_eq(b.kv_blocks, b.kv_tokens / 16);
	ck_assert_int_eq(b.pinned, 0);
}
END_TEST

/* vLLM, Llama-2-7B on one A100-80GB: "# GPU blocks: 7351" (PR 2031), within 3%. */
START_TEST(test_vllm_llama2_7b_a100)
{
	struct fit f = fit("llama-2-7b", "a100-80g", KV_MEM_VLLM);
	struct kv_mem_budget b;

	/* vLLM 0.2 defaults: max_num_batched_tokens = max(max_model_len 4096, 2048), 256 seqs */
	b = budget(&f, 1, 4096, 256);
	ck_assert_uint_eq(b.total_bytes, 84987740160ULL);
	ck_assert_uint_eq(b.kv_tokens % 16, 0);
	ck_assert_uint_eq(b.pool_bytes, b.kv_tokens * 524288);
	near("Llama-2-7B A100-80GB GPU blocks", (double)b.kv_blocks, 7351, 0.03);
}
END_TEST

/* vLLM, Llama-3-8B at 79.22 GiB: 53.29 GiB of KV cache (PR 10511), within 1%; each term too. */
START_TEST(test_vllm_llama3_8b_terms)
{
	struct fit f = fit("llama-3-8b", "h100-80g", KV_MEM_VLLM);
	struct kv_mem_budget b;

	f.dev.mem_cuda_bytes = (uint64_t)(79.22 * GIB); /* as that log printed it */
	b = budget(&f, 1, 8192, 256);
	near("weights", (double)b.weights_bytes, 14.96 * GIB, 0.001);
	near("non-torch", (double)b.non_torch_bytes, 1.79 * GIB, 0.001);
	near("activation", (double)b.activation_bytes, 1.26 * GIB, 0.10);
	near("available KV cache memory", (double)b.kv_bytes, 53.29 * GIB, 0.01);
	ck_assert_uint_eq(b.kv_tokens, b.kv_bytes / (16 * 131072) * 16);
	/* TP 2: weights halve, non-torch doubles (3.58 GiB logged), activation stays (the sampler's) */
	b = budget(&f, 2, 8192, 256);
	near("TP 2 weights", (double)b.weights_bytes, 7.48 * GIB, 0.001);
	near("TP 2 non-torch", (double)b.non_torch_bytes, 3.58 * GIB, 0.001);
	near("TP 2 activation", (double)b.activation_bytes, 1.26 * GIB, 0.10);
}
END_TEST

/* Overrides replace their estimates one for one; the CUDA-graph term subtracts. */
START_TEST(test_vllm_overrides)
{
	struct fit f = fit("llama-3-8b", "a100-80g", KV_MEM_VLLM);
	struct kv_mem_budget b, g;

	f.c.activation_bytes = KV_GiB;
	f.c.non_torch_bytes = 2 * KV_GiB;
	f.c.gpu_memory_utilization = 0.8;
	b = budget(&f, 1, 2048, 256);
	ck_assert_uint_eq(b.kv_bytes, (uint64_t)(84987740160.0 * 0.8 -
						 (double)(16060522496ULL + 3 * KV_GiB)));
	f.c.cuda_graph_bytes = KV_GiB / 2;
	g = budget(&f, 1, 2048, 256);
	ck_assert_uint_eq(b.kv_bytes - g.kv_bytes, KV_GiB / 2);
}
END_TEST

/* SGLang: (total - non_torch) * fraction - weights, tokens not rounded to blocks. */
START_TEST(test_sglang)
{
	struct fit f = fit("llama-3-8b", "h100-80g", KV_MEM_SGLANG);
	struct kv_mem_budget b;
	double kv;

	b = budget(&f, 1, 8192, 256);
	ck_assert_double_eq_tol(b.fraction, kv_mem_sglang_fraction(85028896768ULL, 1), 1e-12);
	kv = (85028896768.0 - (double)KV_MEM_NON_TORCH_BYTES) * b.fraction - 16060522496.0;
	ck_assert_uint_eq(b.kv_bytes, (uint64_t)kv);
	ck_assert_uint_eq(b.kv_tokens, b.kv_bytes / 131072);
	f.c.mem_fraction_static = 0.5;
	b = budget(&f, 2, 8192, 256);
	ck_assert_double_eq_tol(b.fraction, 0.5, 1e-12);
	ck_assert_uint_eq(b.kv_tokens, b.kv_bytes / 65536);
}
END_TEST

/* The pin wins over every model, and over a budget that would not fit. */
START_TEST(test_pin)
{
	struct fit f = fit("llama-2-70b", "a100-40g", KV_MEM_VLLM);
	struct kv_mem_budget b;
	struct kv_diag d = { 0 };

	ck_assert_int_eq(kv_mem_budget(&f.c, &f.m, &f.dev, 1, 2048, 256, &b, &d), KV_EINVAL);
	ck_assert_str_eq(d.field, "memory.model");
	f.c.kv_tokens = 123456;
	b = budget(&f, 1, 2048, 256);
	ck_assert_uint_eq(b.kv_tokens, 123456);
	ck_assert_uint_eq(b.kv_blocks, 123456 / 16);
	ck_assert_uint_eq(b.pool_bytes, 123456ULL * kv_model_kv_bytes_per_token(&f.m));
	ck_assert_int_eq(b.pinned, 1);
	f.c.model = KV_MEM_SHARE;
	b = budget(&f, 1, 2048, 256);
	ck_assert_uint_eq(b.pool_bytes, 123456ULL * kv_model_kv_bytes_per_token(&f.m));
}
END_TEST

/*
 * A pin's pool is checked, not wrapped: 2^45 + 1000 tokens of Llama-2-7B's
 * 512 KiB wrap 64 bits to 524,288,000 bytes, which the pool used to build;
 * the largest pin within 2^50 bytes passes, one token more does not, and
 * the message shows the true product.
 */
START_TEST(test_pin_bounds)
{
	struct kv_model m = load_model("llama-2-7b");
	struct kv_device dev = load_device("a100-80g");
	uint64_t tb = kv_model_kv_bytes_per_token(&m), bytes = 0, wrapped;
	struct kv_mem_cfg c;
	struct kv_mem_budget b;
	struct kv_diag d = { 0 };

	ck_assert_uint_eq(tb, 524288);
	ck_assert_int_eq(kv_mul_u64(35184372089832ULL, tb, &wrapped), KV_ERANGE);
	ck_assert_uint_eq(wrapped, 524288000); /* what the pool used to get */
	ck_assert_int_eq(kv_mem_pin_bytes(KV_MEM_POOL_MAX_BYTES / tb, &m, &bytes, &d), 0);
	ck_assert_uint_eq(bytes, KV_MEM_POOL_MAX_BYTES);
	ck_assert_int_eq(kv_mem_pin_bytes(KV_MEM_POOL_MAX_BYTES / tb + 1, &m, &bytes, &d), KV_ERANGE);
	kv_mem_cfg_init(&c);
	c.kv_tokens = 35184372089832ULL;
	ck_assert_int_eq(kv_mem_budget(&c, &m, &dev, 1, 2048, 256, &b, &d), KV_ERANGE);
	ck_assert_str_eq(d.field, "memory.kv_tokens");
	ck_assert_msg(strstr(d.msg, "35184372089832 tokens x 524288 KV bytes per token (llama-2-7b) is 1.845e+19 bytes"),
		      "message: %s", d.msg);
	ck_assert_uint_eq(kv_mul_u64(UINT64_MAX, 1, &bytes), 0);
	ck_assert_uint_eq(bytes, UINT64_MAX);
	ck_assert_int_eq(kv_mul_u64(1ULL << 32, 1ULL << 32, &bytes), KV_ERANGE);
}
END_TEST

/*
 * The activation estimate saturates instead of wrapping: a MoE workspace of
 * 16384 tokens x 2^20 experts per token x 2^30 hidden is 2^67 bytes, which
 * used to wrap to 98,369 GiB in the budget's message.
 */
START_TEST(test_activation_saturates)
{
	struct kv_model m = load_model("mixtral-8x7b");

	m.layers = 1;
	m.hidden = 1U << 30;
	m.experts = m.experts_per_token = 1U << 20;
	m.moe_intermediate = 1;
	ck_assert_uint_eq(kv_mem_moe_workspace_bytes(&m, 16384, 1), 1ULL << 60);
	ck_assert_uint_eq(kv_mem_activation_bytes(&m, 16384, 256, 1), 1ULL << 60);
	m.hidden = 1U << 10; /* far below: the plain integer formula */
	ck_assert_uint_lt(kv_mem_moe_workspace_bytes(&m, 16384, 1), 1ULL << 60);
}
END_TEST

#define LOAD_TAIL "workload: {requests: 10, arrival: {rate: 1}}\n"

/*
 * memory.kv_tokens 0 (and kv_blocks 0) means "estimate", as documented; a
 * pin of the whole model's pool past 2^50 bytes is refused at the key's
 * line, also through pipeline stages (the pool counts every layer).
 */
START_TEST(test_workload_pin)
{
	struct kv_workload w;
	struct kv_diag d = { 0 };

	ck_assert_msg(!load_text(&w, "memory: {kv_tokens: 0, kv_blocks: 0}\n" LOAD_TAIL, &d),
		      "kv_tokens 0: %s", d.msg);
	ck_assert_uint_eq(w.cfg.mem.kv_tokens, 0);
	ck_assert_msg(!load_text(&w, "memory: {kv_blocks: 1000}\n" LOAD_TAIL, &d), "%s", d.msg);
	ck_assert_uint_eq(w.cfg.mem.kv_tokens, 16000);
	ck_assert_int_eq(load_text(&w, "model: llama-2-7b\ncluster: {pipeline_parallel: 4}\n"
				  "memory:\n  kv_tokens: 2147483649\n" LOAD_TAIL, &d), KV_ERANGE);
	ck_assert_str_eq(d.field, "memory.kv_tokens");
	ck_assert_uint_eq(d.line, 4);
	ck_assert_msg(strstr(d.msg, "at most 2147483648 tokens"), "message: %s", d.msg);
	/* a pool below the unit min_block asks for, or min_block above max_block: at the key */
	ck_assert_int_eq(load_text(&w, "memory: {kv_tokens: 16, min_block: 1GiB, max_block: 0}\n"
				  LOAD_TAIL, &d), KV_EINVAL);
	ck_assert_str_eq(d.field, "memory.min_block");
	ck_assert_int_eq(load_text(&w, "memory: {min_block: 1GiB}\n" LOAD_TAIL, &d), KV_EINVAL);
	ck_assert_msg(d.line == 1 && strstr(d.msg, "max_block 8388608 (its default)"),
		      "line %lu: %s", d.line, d.msg);
}
END_TEST

/* Loads text into w, which the caller releases. */
static int load_keep(struct kv_workload *w, const char *text, struct kv_diag *d)
{
	return kv_workload_load_mem(w, "w.yaml", text, strlen(text), NULL, 0, 0, 0, d);
}

/*
 * vLLM before 0.6 (vllm-v0, version 0.5): the era's non-torch term, which
 * reproduces PR 2031's December 2023 log ("# GPU blocks: 7351", Llama-2-7B,
 * one A100-80GB); doubled at TP 2; other versions, engines and a set
 * non_torch_bytes keep theirs.
 */
START_TEST(test_vllm_v05_non_torch)
{
	static const char body[] =
		"model: llama-2-7b\ndevice: a100-80g\nmemory: {model: vllm}\n"
		"batching: {max_tokens: 4096, max_seqs: 256}\n";
	struct kv_workload w;
	struct kv_mem_budget b;
	struct kv_diag d = { 0 };
	char text[512];

	snprintf(text, sizeof(text), "%sengine: {name: vllm-v0, version: \"0.5\"}\n" LOAD_TAIL, body);
	ck_assert_msg(!load_keep(&w, text, &d), "%s", d.msg);
	ck_assert_uint_eq(w.cfg.mem.non_torch_bytes, KV_MEM_NON_TORCH_V05_BYTES);
	ck_assert_int_eq(kv_mem_budget(&w.cfg.mem, &w.cfg.model, &w.cfg.device, 1, 4096, 256, &b, &d), 0);
	ck_assert_uint_eq(b.kv_tokens / KV_MEM_BLOCK_TOKENS, 7351);
	kv_workload_release(&w);
	snprintf(text, sizeof(text), "%sengine: {name: vllm-v0, version: \"0.5\"}\ncluster: {tensor_parallel: 2}\n" LOAD_TAIL, body);
	ck_assert_msg(!load_keep(&w, text, &d), "%s", d.msg);
	ck_assert_uint_eq(w.cfg.mem.non_torch_bytes, 2 * KV_MEM_NON_TORCH_V05_BYTES);
	kv_workload_release(&w);
	snprintf(text, sizeof(text), "%sengine: {name: vllm-v0, version: \"0.6\"}\n" LOAD_TAIL, body);
	ck_assert_msg(!load_keep(&w, text, &d), "%s", d.msg);
	ck_assert_uint_eq(w.cfg.mem.non_torch_bytes, KV_MEM_AUTO);
	kv_workload_release(&w);
	snprintf(text, sizeof(text), "%sengine: vllm\n" LOAD_TAIL, body);
	ck_assert_msg(!load_keep(&w, text, &d), "%s", d.msg);
	ck_assert_uint_eq(w.cfg.mem.non_torch_bytes, KV_MEM_AUTO);
	ck_assert_int_eq(kv_mem_budget(&w.cfg.mem, &w.cfg.model, &w.cfg.device, 1, 4096, 256, &b, &d), 0);
	ck_assert_uint_eq(b.kv_tokens / KV_MEM_BLOCK_TOKENS, 7241); /* the later term: 110 blocks fewer */
	kv_workload_release(&w);
	ck_assert_msg(!load_keep(&w, "model: llama-2-7b\ndevice: a100-80g\n"
				 "memory: {model: vllm, non_torch_bytes: 2GiB}\n"
				 "engine: {name: vllm-v0, version: \"0.5\"}\n" LOAD_TAIL, &d), "%s", d.msg);
	ck_assert_uint_eq(w.cfg.mem.non_torch_bytes, 2ULL << 30);
	kv_workload_release(&w);
}
END_TEST

/* tp splits whole heads and KV heads (or replicates them); ep splits experts and the tp GPUs. */
START_TEST(test_workload_parallel)
{
	static const struct {
		const char *cluster; /* model and cluster keys */
		const char *want; /* "" to load, else a part of the message */
	} cases[] = {
		{ "model: llama-2-7b\ncluster: {tensor_parallel: 32}", "" },
		{ "model: llama-2-7b\ncluster: {tensor_parallel: 3}", "32 attention heads" },
		{ "model: llama-2-7b\ncluster: {tensor_parallel: 64}", "1, 2, 4, 8, 16, 32" },
		{ "model: qwen2.5-7b\ncluster: {tensor_parallel: 28}", "" }, /* KV heads x7 */
		{ "model: qwen2.5-7b\ncluster: {tensor_parallel: 14}", "4 KV heads" },
		{ "model: deepseek-v2-lite\ncluster: {tensor_parallel: 16}", "" }, /* MLA */
		{ "model: mixtral-8x7b\ncluster: {tensor_parallel: 4, expert_parallel: 4}", "" },
		{ "model: mixtral-8x7b\ncluster: {tensor_parallel: 2, expert_parallel: 3}", "8 routed experts" },
		{ "model: mixtral-8x7b\ncluster: {tensor_parallel: 2, expert_parallel: 4}", "stage of 2 GPUs" },
		{ "model: llama-2-7b\ncluster: {tensor_parallel: 2, expert_parallel: 2}", "" },
		{ "model: llama-2-7b\ncluster: {expert_parallel: 2}", "dense: no experts" },
	};
	char text[512];
	size_t i;

	for (i = 0; i < KV_ARRAY_LEN(cases); i++) {
		snprintf(text, sizeof(text), "device: h200\n%s\n" LOAD_TAIL, cases[i].cluster);
		check_load(text, cases[i].want, "", 3);
	}
}
END_TEST

static Suite *memory_suite(void)
{
	Suite *s = suite_create("memory");
	TCase *tc = tcase_create("core");

	tcase_add_test(tc, test_profiles_have_cuda_memory);
	tcase_add_test(tc, test_token_bytes);
	tcase_add_test(tc, test_activation);
	tcase_add_test(tc, test_activation_moe);
	tcase_add_test(tc, test_vllm_060_70b_tp2);
	tcase_add_test(tc, test_sglang_fraction);
	tcase_add_test(tc, test_share_unchanged);
	tcase_add_test(tc, test_vllm_llama2_7b_a100);
	tcase_add_test(tc, test_vllm_llama3_8b_terms);
	tcase_add_test(tc, test_vllm_overrides);
	tcase_add_test(tc, test_sglang);
	tcase_add_test(tc, test_pin);
	tcase_add_test(tc, test_pin_bounds);
	tcase_add_test(tc, test_activation_saturates);
	tcase_add_test(tc, test_workload_pin);
	tcase_add_test(tc, test_workload_parallel);
	tcase_add_test(tc, test_vllm_v05_non_torch);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return kv_test_run_suite(memory_suite());
}
