/*
 * memory.c -- the engine's KV-cache budget (see memory.h and docs/memory.md).
 *
 * vLLM (vllm/v1/worker/gpu_worker.py, Worker.determine_available_memory):
 * after loading the weights it runs one dummy forward of
 * max_num_batched_tokens tokens (gpu_model_runner.py profile_run) and
 * measures torch's peak increase (activation) and the memory held outside
 * torch (non-torch: CUDA context, NCCL); the KV cache gets
 *   requested_memory - (weights + activation + non_torch),
 * requested_memory = total * gpu_memory_utilization.  CUDA graphs are
 * captured afterwards (compile_or_warm_up_model, whose comment says the
 * profiling "does not consider CUDAGraph memory size"), so by default the
 * graph pool is not subtracted: it comes out of the 1 - utilization
 * headroom.  cuda_graph_bytes subtracts it for versions that do.  The block
 * count is floor(KV / page), page = block_size * bytes per token per GPU
 * (v1/core/kv_cache_utils.py), and the log prints blocks * block_size.
 *
 * SGLang (python/sglang/srt/model_executor/model_runner.py,
 * profile_max_num_token): total_gpu_memory is the free memory once the
 * distributed runtime is up (total - non_torch), available the free memory
 * after loading the weights; rest = available - total_gpu_memory * (1 -
 * mem_fraction_static) = (total - non_torch) * fraction - weights, and
 * max_total_num_tokens = floor(rest / cell_size), cell_size the KV bytes
 * per token per GPU.  Activations and CUDA graphs live in the 1 - fraction
 * reserve.
 */
#include "memory.h"

#include <assert.h>
#include <math.h>
#include <string.h>

void kv_mem_cfg_init(struct kv_mem_cfg *c)
{
	c->model = KV_MEM_SHARE;
	c->share = 0.9;
	c->gpu_memory_utilization = 0.9;
	c->mem_fraction_static = 0;
	c->activation_bytes = KV_MEM_AUTO;
	c->cuda_graph_bytes = 0;
	c->non_torch_bytes = KV_MEM_AUTO;
	c->dp = 1;
	c->kv_tokens = 0;
	c->context_check = KV_CTX_CHECK_AUTO;
}

const char *kv_mem_model_name(enum kv_mem_model m)
{
	static const char *const names[] = { "share", "vllm", "sglang" };

	assert((unsigned)m < 3);
	return names[m];
}

/*
 * Saturating byte arithmetic for the activation estimate: a product or sum
 * past KV_MEM_SAT_BYTES gives KV_MEM_SAT_BYTES, never a wrapped count.
 * Only a profile whose weights alone pass any device's memory gets there
 * (a MoE workspace of 16384 tokens x 2^20 experts per token x 2^30 hidden),
 * so its budget is refused either way, and the message then shows at
 * least 2^60 bytes of activation instead of a wrapped few.  Below the bound
 * the results are the plain integer ones.
 */
#define KV_MEM_SAT_BYTES (1ULL << 60)

static uint64_t sat_mul(uint64_t a, uint64_t b)
{
	uint64_t r;

	return kv_mul_u64(a, b, &r) || r > KV_MEM_SAT_BYTES ? KV_MEM_SAT_BYTES : r;
}

static uint64_t sat_add(uint64_t a, uint64_t b)
{
	assert(a <= KV_MEM_SAT_BYTES && b <= KV_MEM_SAT_BYTES);
	return KV_MIN(a + b, KV_MEM_SAT_BYTES);
}

uint64_t kv_mem_moe_workspace_bytes(const struct kv_model *m, uint64_t tokens, uint32_t tp)
{
	uint64_t mt = KV_MIN(tokens, (uint64_t)KV_MEM_MOE_CHUNK_TOKENS);
	uint64_t k = m->experts_per_token, h = m->hidden;
	uint64_t n = (m->gated_mlp ? 2ULL : 1ULL) * m->moe_intermediate / KV_MAX(tp, 1U);
	uint64_t bs = mt <= 32 ? 16 : mt <= 96 ? 32 : mt <= 512 ? 64 : 128;
	uint64_t padded = mt * k + (uint64_t)m->experts * (bs - 1); /* < 2^47 */
	uint64_t elems = sat_add(sat_add(sat_mul(mt * k, KV_MAX(n / 2, h)),
					 sat_mul(mt * k, KV_MAX(n, h))), mt * h);

	if (!m->experts)
		return 0;
	return sat_add(sat_mul(elems, m->dtype_bytes),
		       4 * padded + 4 * kv_div_ceil(padded, bs));
}

uint64_t kv_mem_activation_bytes(const struct kv_model *m, uint64_t max_batch_tokens,
				 uint32_t max_seqs, uint32_t tp)
{
	uint64_t k = m->gated_mlp ? 3 : 2;
	uint64_t tok_bytes = sat_mul(max_batch_tokens, m->dtype_bytes);
	uint64_t mlp = sat_mul(sat_mul(tok_bytes, k), m->intermediate / KV_MAX(tp, 1U));
	uint64_t rows = KV_MIN((uint64_t)max_seqs, max_batch_tokens);
	uint64_t forward, sampler;

	if (m->experts)
		mlp = KV_MAX(m->dense_layers ? mlp : 0,
			     kv_mem_moe_workspace_bytes(m, max_batch_tokens, tp));
	forward = sat_add(sat_mul(sat_mul(tok_bytes, 2), m->hidden), mlp);
	sampler = sat_mul(sat_mul(rows, m->vocab), KV_MEM_SAMPLER_BYTES_PER_LOGIT);
	return KV_MAX(forward, sampler);
}

double kv_mem_sglang_fraction(uint64_t total_bytes, uint32_t tp)
{
	double gib = (double)total_bytes / (double)KV_GiB, reserved;

	if (gib < 35)
		reserved = 2.8 + tp / 10.0;
	else if (gib < 90)
		reserved = 9.5 + tp / 2.0;
	else if (gib < 160)
		reserved = 12 + tp / 2.0;
	else
		reserved = 32;
	return round((gib - reserved) / gib * 1000) / 1000;
}

uint64_t kv_mem_token_bytes(const struct kv_model *m, uint32_t tp)
{
	return kv_model_kv_bytes_per_token_gpu(m, tp);
}

/* The share model: the pool kvsim has always built, reported in fp16 tokens. */
static int budget_share(const struct kv_mem_cfg *c, const struct kv_model *m,
			const struct kv_device *dev, uint32_t tp, struct kv_mem_budget *b,
			struct kv_diag *d)
{
	double usable = (double)dev->mem_bytes * tp * c->share;
	double base = dev->alpha * (double)kv_model_weight_bytes(m);

	if (usable <= base)
		return kv_diag_set(d, KV_EINVAL, "", 0, 0, "memory.share",
				   "%s needs %.1f GB for weights and workspace (alpha %.2f x %.1f GB) but %u x %s x %.2f gives %.1f GB: expected more memory (raise cluster.tensor_parallel or memory.share)",
				   m->name, base / 1e9, dev->alpha,
				   (double)kv_model_weight_bytes(m) / 1e9, tp, dev->name, c->share,
				   usable / 1e9);
	b->total_bytes = dev->mem_bytes;
	b->fraction = c->share;
	b->pool_bytes = (uint64_t)(usable - base);
	b->kv_bytes = b->pool_bytes / tp;
	b->kv_tokens = b->pool_bytes / kv_model_kv_bytes_per_token(m);
	return 0;
}

/* vLLM's and SGLang's non-KV terms and the KV bytes per GPU they leave. */
static int budget_engine(const struct kv_mem_cfg *c, const struct kv_model *m,
			 const struct kv_device *dev, uint32_t tp, uint64_t max_batch_tokens,
			 uint32_t max_seqs, struct kv_mem_budget *b, struct kv_diag *d)
{
	double kv;

	b->total_bytes = dev->mem_cuda_bytes ? dev->mem_cuda_bytes : dev->mem_bytes;
	b->non_torch_bytes = c->non_torch_bytes != KV_MEM_AUTO ? c->non_torch_bytes :
				     KV_MEM_NON_TORCH_BYTES * (tp > 1 ? 2 : 1);
	if (c->model == KV_MEM_VLLM) {
		b->fraction = c->gpu_memory_utilization;
		b->activation_bytes = c->activation_bytes != KV_MEM_AUTO ? c->activation_bytes :
				      kv_mem_activation_bytes(m, max_batch_tokens, max_seqs, tp);
		b->cuda_graph_bytes = c->cuda_graph_bytes;
		kv = (double)b->total_bytes * b->fraction -
		     (double)(b->weights_bytes + b->activation_bytes + b->non_torch_bytes +
			      b->cuda_graph_bytes);
	} else {
		b->fraction = c->mem_fraction_static > 0 ? c->mem_fraction_static :
			      kv_mem_sglang_fraction(b->total_bytes, tp);
		kv = (double)(b->total_bytes - KV_MIN(b->total_bytes, b->non_torch_bytes)) *
			     b->fraction - (double)b->weights_bytes;
	}
	if (kv < (double)(b->token_bytes * KV_MEM_BLOCK_TOKENS))
		return kv_diag_set(d, KV_EINVAL, "", 0, 0, "memory.model",
				   "%s: %s on %s x %u leaves %.2f GiB per GPU for the KV cache (total %.2f GiB x %.3f; weights %.2f, activation %s%.2f, non-torch %.2f, CUDA graphs %.2f GiB): expected room for one block (raise cluster.tensor_parallel or the memory fraction)",
				   kv_mem_model_name(c->model), m->name, dev->name, tp,
				   kv / (double)KV_GiB, (double)b->total_bytes / (double)KV_GiB,
				   b->fraction, (double)b->weights_bytes / (double)KV_GiB,
				   b->activation_bytes == KV_MEM_SAT_BYTES ? "at least " : "",
				   (double)b->activation_bytes / (double)KV_GiB,
				   (double)b->non_torch_bytes / (double)KV_GiB,
				   (double)b->cuda_graph_bytes / (double)KV_GiB);
	b->kv_bytes = (uint64_t)kv;
	if (c->model == KV_MEM_VLLM)
		b->kv_tokens = b->kv_bytes / (b->token_bytes * KV_MEM_BLOCK_TOKENS) *
			       KV_MEM_BLOCK_TOKENS;
	else
		b->kv_tokens = b->kv_bytes / b->token_bytes;
	return 0;
}

int kv_mem_pin_bytes(uint64_t kv_tokens, const struct kv_model *m, uint64_t *pool_bytes,
		     struct kv_diag *d)
{
	uint64_t tb = kv_model_kv_bytes_per_token(m);

	if (!kv_mul_u64(kv_tokens, tb, pool_bytes) && *pool_bytes <= KV_MEM_POOL_MAX_BYTES)
		return 0;
	return kv_diag_set(d, KV_ERANGE, "", 0, 0, "memory.kv_tokens",
			   "%llu tokens x %llu KV bytes per token (%s) is %.4g bytes: expected at "
			   "most 2^50 bytes (1 PiB) per replica, that is at most %llu tokens "
			   "(%llu blocks of %d)",
			   (unsigned long long)kv_tokens, (unsigned long long)tb, m->name,
			   (double)kv_tokens * (double)tb,
			   (unsigned long long)(KV_MEM_POOL_MAX_BYTES / tb),
			   (unsigned long long)(KV_MEM_POOL_MAX_BYTES / tb / KV_MEM_BLOCK_TOKENS),
			   KV_MEM_BLOCK_TOKENS);
}

uint64_t kv_mem_expert_bytes(const struct kv_model *m)
{
	uint64_t per = kv_model_expert_params(m) * kv_dtype_bits(m->weight_dtype, m->dtype_bytes);

	return m->experts ? (uint64_t)kv_model_moe_layers(m) * m->experts * per / 8 : 0;
}

uint64_t kv_mem_weights_per_gpu(const struct kv_model *m, uint32_t tp, uint32_t ep)
{
	uint64_t all = kv_model_weight_bytes(m), exp = KV_MIN(kv_mem_expert_bytes(m), all);

	assert(tp >= 1 && ep >= 1);
	if (ep == 1 || !exp)
		return all / tp;
	return (all - exp) / tp + exp / ep;
}

/* One rank of a data-parallel group: its own budget, its KV capacity times dp. */
static int budget_dp(const struct kv_mem_cfg *c, const struct kv_model *m,
		     const struct kv_device *dev, uint32_t tp, uint64_t max_batch_tokens,
		     uint32_t max_seqs, struct kv_mem_budget *b, struct kv_diag *d)
{
	struct kv_mem_cfg rank = *c;
	uint32_t dp = c->dp;
	int rc;

	rank.dp = 1;
	rank.kv_tokens = 0;
	if (c->non_torch_bytes == KV_MEM_AUTO)
		rank.non_torch_bytes = KV_MEM_NON_TORCH_BYTES * 2; /* a multi-GPU engine */
	b->weights_bytes = kv_mem_weights_per_gpu(m, tp, dp * tp);
	rc = budget_engine(&rank, m, dev, tp, kv_div_ceil(max_batch_tokens, dp),
			   (uint32_t)kv_div_ceil(max_seqs, dp), b, d);
	if (rc && !c->kv_tokens)
		return rc;
	b->kv_tokens = (c->kv_tokens ? c->kv_tokens : b->kv_tokens) * dp;
	b->pinned = c->kv_tokens != 0;
	b->kv_blocks = b->kv_tokens / KV_MEM_BLOCK_TOKENS;
	return kv_mem_pin_bytes(b->kv_tokens, m, &b->pool_bytes, d);
}

int kv_mem_budget(const struct kv_mem_cfg *c, const struct kv_model *m,
		  const struct kv_device *dev, uint32_t tp, uint64_t max_batch_tokens,
		  uint32_t max_seqs, struct kv_mem_budget *b, struct kv_diag *d)
{
	int rc;

	assert(tp >= 1);
	memset(b, 0, sizeof(*b));
	if (c->dp > 1) {
		assert(c->model != KV_MEM_SHARE);
		b->token_bytes = kv_mem_token_bytes(m, tp);
		return budget_dp(c, m, dev, tp, max_batch_tokens, max_seqs, b, d);
	}
	b->weights_bytes = kv_model_weight_bytes(m) / tp;
	b->token_bytes = kv_mem_token_bytes(m, tp);
	if (c->model == KV_MEM_SHARE)
		rc = budget_share(c, m, dev, tp, b, d);
	else
		rc = budget_engine(c, m, dev, tp, max_batch_tokens, max_seqs, b, d);
	if (rc && !c->kv_tokens)
		return rc;
	if (c->kv_tokens) {
		b->kv_tokens = c->kv_tokens;
		b->pinned = 1;
	}
	b->kv_blocks = b->kv_tokens / KV_MEM_BLOCK_TOKENS;
	if (c->model != KV_MEM_SHARE || b->pinned)
		return kv_mem_pin_bytes(b->kv_tokens, m, &b->pool_bytes, d);
	return 0;
}

uint64_t kv_mem_pool_unit(uint64_t token_bytes, uint64_t max_block_bytes)
{
	uint64_t block = 16 * token_bytes, unit = block & -block; /* lowest set bit */

	if (max_block_bytes && unit > max_block_bytes)
		unit = max_block_bytes;
	return KV_MAX(unit, 4096);
}

uint64_t kv_mem_unit_token_bytes(double beta_bytes, const struct kv_model *m)
{
	uint64_t tb = (uint64_t)ceil(beta_bytes), lw = kv_model_window_layers(m), a, g;

	if (!lw || tb % m->layers)
		return tb;
	for (a = lw, g = m->layers - lw; g;) { /* gcd(Lw, L - Lw); Lw when every layer is windowed */
		uint64_t t = a % g;

		a = g;
		g = t;
	}
	return tb / m->layers * a;
}
