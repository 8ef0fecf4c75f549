/*
 * profile.c -- numbers derived from model and device profiles, and their
 * validation.
 *
 * Every derived figure comes from the architecture fields, so a profile
 * holds only what its source states.  Validation names fields by their YAML
 * key ("kv_heads", "perf.eff_bw") so the loader can point at the line.
 */
#include "profile.h"
#include "uncert.h"

#include <math.h>
#include <string.h>

static const char *const dtype_names[] = { "auto", "fp16", "bf16", "fp8", "int8", "int4" };
static const uint32_t dtype_bits[] = { 0, 16, 16, 8, 8, 4 };

int kv_dtype_parse(const char *s, uint32_t *out)
{
	uint32_t i;

	for (i = 0; i < KV_ARRAY_LEN(dtype_names); i++) {
		if (!strcmp(s, dtype_names[i])) {
			*out = i;
			return 0;
		}
	}
	return KV_EINVAL;
}

const char *kv_dtype_name(uint32_t dt)
{
	return dt < KV_ARRAY_LEN(dtype_names) ? dtype_names[dt] : "?";
}

uint32_t kv_dtype_bits(uint32_t dt, uint32_t dtype_bytes)
{
	return dt && dt < KV_ARRAY_LEN(dtype_bits) ? dtype_bits[dt] : 8 * dtype_bytes;
}

/* Parameters of the embedding table(s): vocab * hidden, twice when untied. */
static uint64_t embed_params(const struct kv_model *m)
{
	uint64_t emb = (uint64_t)m->vocab * m->hidden;

	return m->tie_embeddings ? emb : 2 * emb;
}

uint64_t kv_model_weight_bytes(const struct kv_model *m)
{
	uint64_t emb = embed_params(m);

	if (m->weight_dtype == KV_DTYPE_AUTO || emb >= m->params)
		return m->params * m->dtype_bytes;
	return kv_div_ceil((m->params - emb) * kv_dtype_bits(m->weight_dtype, m->dtype_bytes), 8) +
	       emb * m->dtype_bytes;
}

uint32_t kv_model_kv_vector_elems(const struct kv_model *m)
{
	return m->kv_lora_rank ? m->kv_lora_rank + m->qk_rope_head_dim : m->head_dim;
}

uint64_t kv_model_kv_elems_per_token(const struct kv_model *m)
{
	if (m->kv_lora_rank)
		return (uint64_t)m->layers * kv_model_kv_vector_elems(m);
	return 2ULL * m->layers * m->kv_heads * m->head_dim;
}

/* Bits of one cached element. */
static uint64_t kv_bits(const struct kv_model *m)
{
	return kv_dtype_bits(m->kv_dtype, m->dtype_bytes);
}

uint64_t kv_model_kv_bytes_per_token(const struct kv_model *m)
{
	return kv_model_kv_elems_per_token(m) * kv_bits(m) / 8;
}

uint64_t kv_model_kv_bytes_per_token_gpu(const struct kv_model *m, uint32_t tp)
{
	uint64_t heads = KV_MAX(1U, m->kv_heads / (tp ? tp : 1));

	if (m->kv_lora_rank)
		return kv_model_kv_bytes_per_token(m);
	return 2ULL * m->layers * heads * m->head_dim * kv_bits(m) / 8;
}

uint32_t kv_model_window_layers(const struct kv_model *m)
{
	uint32_t every = m->window_every ? m->window_every : 1;

	return m->sliding_window ? (m->layers + every - 1) / every : 0;
}

uint64_t kv_model_kv_bytes(const struct kv_model *m, uint64_t ctx_tokens)
{
	uint64_t b = kv_model_kv_bytes_per_token(m), lw = kv_model_window_layers(m);
	uint64_t per_layer = b / m->layers;

	if (!lw)
		return ctx_tokens * b;
	return ctx_tokens * per_layer * (m->layers - lw) +
	       KV_MIN(ctx_tokens, (uint64_t)m->sliding_window) * per_layer * lw;
}

uint64_t kv_model_window_bytes(const struct kv_model *m, uint64_t ctx_tokens, uint64_t b)
{
	return kv_window_bytes(ctx_tokens, b, m->sliding_window, kv_model_window_layers(m),
			       m->layers);
}

uint32_t kv_model_moe_layers(const struct kv_model *m)
{
	return m->experts ? m->layers - m->dense_layers : 0;
}

uint64_t kv_model_expert_params(const struct kv_model *m)
{
	return (m->gated_mlp ? 3ULL : 2ULL) * m->hidden * m->moe_intermediate;
}

double kv_model_moe_distinct_experts(const struct kv_model *m, double n_tokens)
{
	double e = m->experts;

	if (!m->experts || n_tokens <= 0)
		return 0.0;
	return e * (1.0 - pow(1.0 - m->experts_per_token / e, n_tokens));
}

uint64_t kv_model_moe_dispatch_bytes_per_token(const struct kv_model *m)
{
	return (uint64_t)m->hidden * m->dtype_bytes * m->experts_per_token;
}

/* Routed-expert params a token skips: moe_layers * (E - k) * expert params. */
static uint64_t skipped_params(const struct kv_model *m)
{
	return (uint64_t)kv_model_moe_layers(m) * (m->experts - m->experts_per_token) *
	       kv_model_expert_params(m);
}

uint64_t kv_model_active_params(const struct kv_model *m)
{
	uint64_t skip = skipped_params(m);

	return m->params > skip ? m->params - skip : 0;
}

/* Bytes of one routed expert at the weight dtype. */
static double expert_bytes(const struct kv_model *m)
{
	return (double)kv_model_expert_params(m) * kv_dtype_bits(m->weight_dtype, m->dtype_bytes) /
	       8.0;
}

double kv_model_weight_read_bytes(const struct kv_model *m, double n_tokens, int embed_lookup)
{
	double w = (double)kv_model_weight_bytes(m);

	if (m->experts)
		w -= kv_model_moe_layers(m) *
		     (m->experts - kv_model_moe_distinct_experts(m, n_tokens)) * expert_bytes(m);
	if (embed_lookup && !m->tie_embeddings)
		w -= (double)m->vocab * m->hidden * m->dtype_bytes;
	return w;
}

/* Attention weights of one block (standard or MLA), with biases and Q/K norms. */
static uint64_t attn_params(const struct kv_model *m)
{
	uint64_t h = m->hidden, hd = m->head_dim, nh = m->heads, r = m->qk_rope_head_dim;
	uint64_t q, kv, o;

	if (!m->kv_lora_rank)
		return h * hd * (2ULL * nh + 2ULL * m->kv_heads) +
		       (m->qkv_bias ? hd * (nh + 2ULL * m->kv_heads) : 0) +
		       (m->qk_norm ? 2 * hd : 0);
	q = m->q_lora_rank ? h * m->q_lora_rank + m->q_lora_rank +
				     (uint64_t)m->q_lora_rank * nh * (hd + r)
			   : h * nh * (hd + r);
	kv = h * (m->kv_lora_rank + r) + m->kv_lora_rank +
	     (uint64_t)m->kv_lora_rank * nh * (hd + m->v_head_dim);
	o = nh * m->v_head_dim * h;
	return q + kv + o;
}

/* MLP weights of a dense layer and of a MoE layer (router, routed and shared experts). */
static uint64_t dense_mlp_params(const struct kv_model *m)
{
	return (m->gated_mlp ? 3ULL : 2ULL) * m->hidden * m->intermediate;
}

static uint64_t moe_mlp_params(const struct kv_model *m)
{
	return (uint64_t)m->hidden * m->experts +
	       ((uint64_t)m->experts + m->shared_experts) * kv_model_expert_params(m);
}

uint64_t kv_model_arch_params(const struct kv_model *m)
{
	uint64_t moe = kv_model_moe_layers(m), dense = m->layers - moe;
	uint64_t blocks = m->layers * (attn_params(m) + 2ULL * m->hidden) +
			  dense * dense_mlp_params(m) + (moe ? moe * moe_mlp_params(m) : 0);

	return blocks + embed_params(m) + m->hidden;
}

double kv_model_linear_flops_per_token(const struct kv_model *m)
{
	double lookup = m->tie_embeddings ? 0.0 : (double)m->vocab * m->hidden;
	double imb = m->expert_imbalance > 1 ? m->expert_imbalance : 1.0;
	double f = 2.0 * ((double)kv_model_active_params(m) - lookup);

	if (m->experts && imb > 1)
		f += 2.0 * kv_model_moe_layers(m) * m->experts_per_token *
		     (double)kv_model_expert_params(m) * (imb - 1.0);
	return f;
}

double kv_model_head_flops(const struct kv_model *m)
{
	return 2.0 * (double)m->vocab * m->hidden;
}

double kv_model_attn_flops_per_pair(const struct kv_model *m)
{
	if (m->kv_lora_rank)
		return 2.0 * m->layers * m->heads *
		       ((double)m->head_dim + m->qk_rope_head_dim + m->v_head_dim);
	return 4.0 * m->layers * m->heads * m->head_dim;
}

const struct kv_model_field kv_model_arch_fields[] = {
	{ "layers", offsetof(struct kv_model, layers) },
	{ "hidden", offsetof(struct kv_model, hidden) },
	{ "heads", offsetof(struct kv_model, heads) },
	{ "kv_heads", offsetof(struct kv_model, kv_heads) },
	{ "head_dim", offsetof(struct kv_model, head_dim) },
	{ "intermediate", offsetof(struct kv_model, intermediate) },
	{ "vocab", offsetof(struct kv_model, vocab) },
	{ "max_context", offsetof(struct kv_model, max_ctx_tokens) },
	{ NULL, 0 },
};

/* Fails on the first zero among the architecture fields. */
static int model_check_positive(const struct kv_model *m, struct kv_diag *d,
				const char *file)
{
	const struct kv_model_field *f;

	for (f = kv_model_arch_fields; f->key; f++)
		if (kv_model_field(m, f) == 0)
			return kv_diag_set(d, KV_EINVAL, file, 0, 0, f->key,
					   "must be a positive integer, got 0");
	if (m->params == 0)
		return kv_diag_set(d, KV_EINVAL, file, 0, 0, "params",
				   "must be a positive integer, got 0");
	return 0;
}

/*
 * Bounds that keep every derived count exact in 64 bits: the architecture's
 * parameter count at most 2^53 (9.0e15; the largest published models are
 * under 1e13), and max_context x KV bytes per token x layers at most 2^62
 * (the windowed-KV product of kv_window_bytes()).  Without them a profile
 * with absurd sizes could wrap kv_model_arch_params() onto its own `params`
 * and pass (the profile fuzz target found one).
 */
#define ARCH_PARAMS_MAX 9007199254740992.0L /* 2^53 */
#define KV_CONTEXT_BYTES_MAX 4611686018427387904.0L /* 2^62 */

/* kv_model_arch_params() in long double: no wrap, to bound the integer one. */
static long double arch_params_ld(const struct kv_model *m)
{
	long double h = m->hidden, hd = m->head_dim, nh = m->heads, r = m->qk_rope_head_dim;
	long double f = m->gated_mlp ? 3.0L : 2.0L, attn, q;
	long double moe = m->experts ? (long double)m->layers - m->dense_layers : 0.0L;

	if (!m->kv_lora_rank) {
		attn = h * hd * (2 * nh + 2.0L * m->kv_heads) +
		       (m->qkv_bias ? hd * (nh + 2.0L * m->kv_heads) : 0) + (m->qk_norm ? 2 * hd : 0);
	} else {
		q = m->q_lora_rank ? h * m->q_lora_rank + m->q_lora_rank +
					     (long double)m->q_lora_rank * nh * (hd + r)
				   : h * nh * (hd + r);
		attn = q + h * ((long double)m->kv_lora_rank + r) + m->kv_lora_rank +
		       (long double)m->kv_lora_rank * nh * (hd + m->v_head_dim) +
		       nh * m->v_head_dim * h;
	}
	return m->layers * (attn + 2 * h) + ((long double)m->layers - moe) * f * h * m->intermediate +
	       moe * (h * m->experts + ((long double)m->experts + m->shared_experts) * f * h *
						m->moe_intermediate) +
	       (long double)m->vocab * h * (m->tie_embeddings ? 1 : 2) + h;
}

/*
 * A token must multiply by some weights: params has to exceed the routed
 * experts it skips plus the embedding table it looks up, or the linear FLOPs
 * (kv_model_linear_flops_per_token) come out negative.  Within
 * KV_MODEL_PARAMS_TOL that happens only when routed experts are nearly all
 * of the model and top-k / experts is under the tolerance (crafted against
 * the profile fuzz target's FLOP invariant: 128 experts, top-1, params 2.5%
 * under the architecture).
 */
static int model_check_active(const struct kv_model *m, struct kv_diag *d, const char *file)
{
	uint64_t skip = skipped_params(m);
	uint64_t lookup = m->tie_embeddings ? 0 : (uint64_t)m->vocab * m->hidden;

	if (m->params > skip + lookup)
		return 0;
	return kv_diag_set(d, KV_EINVAL, file, 0, 0, "params",
			   "%llu is not more than the %llu routed-expert parameters a token skips "
			   "plus the %llu of the embedding table: expected the model's exact count",
			   (unsigned long long)m->params, (unsigned long long)skip,
			   (unsigned long long)lookup);
}

/* The exact count must agree with the architecture within KV_MODEL_PARAMS_TOL. */
static int model_check_params(const struct kv_model *m, struct kv_diag *d, const char *file)
{
	long double exact = arch_params_ld(m);
	uint64_t arch;
	double rel;

	if (exact > ARCH_PARAMS_MAX)
		return kv_diag_set(d, KV_EINVAL, file, 0, 0, "params",
				   "the architecture (layers, hidden, heads, kv_heads, head_dim, "
				   "intermediate, vocab) implies %.3Lg parameters: expected at most "
				   "2^53 (9.0e15)", exact);
	arch = kv_model_arch_params(m);
	rel = fabs((double)m->params - (double)arch) / (double)arch;
	if (rel > KV_MODEL_PARAMS_TOL)
		return kv_diag_set(d, KV_EINVAL, file, 0, 0, "params",
				   "%llu is %.1f%% away from the %llu the architecture implies "
				   "(layers, hidden, heads, kv_heads, head_dim, intermediate, vocab); "
				   "expected within %.0f%%",
				   (unsigned long long)m->params, 100.0 * rel,
				   (unsigned long long)arch, 100.0 * KV_MODEL_PARAMS_TOL);
	return model_check_active(m, d, file);
}

/* MoE keys come together: top-k within the experts, an expert width, dense layers below layers. */
static int model_check_moe(const struct kv_model *m, struct kv_diag *d, const char *file)
{
	if (!m->experts) {
		if (m->experts_per_token || m->shared_experts || m->moe_intermediate ||
		    m->dense_layers)
			return kv_diag_set(d, KV_EINVAL, file, 0, 0, "experts",
					   "missing: experts_per_token, shared_experts, "
					   "moe_intermediate and dense_layers need experts > 0");
		return 0;
	}
	if (m->experts_per_token == 0 || m->experts_per_token > m->experts)
		return kv_diag_set(d, KV_EINVAL, file, 0, 0, "experts_per_token",
				   "%u: expected 1 to experts (%u)", m->experts_per_token,
				   m->experts);
	if (m->moe_intermediate == 0)
		return kv_diag_set(d, KV_EINVAL, file, 0, 0, "moe_intermediate",
				   "must be a positive integer with experts > 0, got 0");
	if (m->dense_layers >= m->layers)
		return kv_diag_set(d, KV_EINVAL, file, 0, 0, "dense_layers",
				   "%u: expected fewer than layers (%u)", m->dense_layers, m->layers);
	if (!(m->expert_imbalance >= 1) || !isfinite(m->expert_imbalance))
		return kv_diag_set(d, KV_EINVAL, file, 0, 0, "expert_imbalance",
				   "must be >= 1 (busiest expert's load over the mean), got %g",
				   m->expert_imbalance);
	return 0;
}

/* MLA widths come together; without kv_lora_rank none of them may be set. */
static int model_check_mla(const struct kv_model *m, struct kv_diag *d, const char *file)
{
	if (!m->kv_lora_rank) {
		if (m->q_lora_rank || m->qk_rope_head_dim || m->v_head_dim)
			return kv_diag_set(d, KV_EINVAL, file, 0, 0, "kv_lora_rank",
					   "missing: q_lora_rank, qk_rope_head_dim and v_head_dim "
					   "are MLA widths and need kv_lora_rank > 0");
		return 0;
	}
	if (!m->qk_rope_head_dim || !m->v_head_dim)
		return kv_diag_set(d, KV_EINVAL, file, 0, 0,
				   m->qk_rope_head_dim ? "v_head_dim" : "qk_rope_head_dim",
				   "must be a positive integer with kv_lora_rank > 0, got 0");
	return 0;
}

/* A window shorter than the context, on every window_every-th layer. */
static int model_check_window(const struct kv_model *m, struct kv_diag *d, const char *file)
{
	if (m->sliding_window && m->sliding_window >= m->max_ctx_tokens)
		return kv_diag_set(d, KV_EINVAL, file, 0, 0, "sliding_window",
				   "%u: expected fewer tokens than max_context (%u); omit it for "
				   "full attention", m->sliding_window, m->max_ctx_tokens);
	if (m->sliding_window && (m->window_every == 0 || m->window_every > m->layers))
		return kv_diag_set(d, KV_EINVAL, file, 0, 0, "window_every",
				   "%u: expected 1 to layers (%u)", m->window_every, m->layers);
	return 0;
}

/* Weight dtype any of enum kv_dtype; KV at 8 or 16 bits (int4 KV: cache 'quantized'). */
static int model_check_dtypes(const struct kv_model *m, struct kv_diag *d, const char *file)
{
	if (m->weight_dtype > KV_DTYPE_INT4)
		return kv_diag_set(d, KV_EINVAL, file, 0, 0, "weight_dtype", "unknown dtype %u",
				   m->weight_dtype);
	if (m->kv_dtype >= KV_DTYPE_INT4)
		return kv_diag_set(d, KV_EINVAL, file, 0, 0, "kv_dtype",
				   "'%s': expected auto, fp16, bf16, fp8 or int8 (4-bit KV: "
				   "cache 'quantized' with bits 4)", kv_dtype_name(m->kv_dtype));
	return 0;
}

/* A full context's KV, times the layers (kv_window_bytes()), must stay within 2^62 bytes. */
static int model_check_context_bytes(const struct kv_model *m, struct kv_diag *d,
				     const char *file)
{
	long double b = (long double)kv_model_kv_bytes_per_token(m) * m->max_ctx_tokens * m->layers;

	if (b <= KV_CONTEXT_BYTES_MAX)
		return 0;
	return kv_diag_set(d, KV_EINVAL, file, 0, 0, "max_context",
			   "%u tokens of %llu KV bytes each, times %u layers, is %.3Lg: expected "
			   "at most 2^62 (4.6e18)", m->max_ctx_tokens,
			   (unsigned long long)kv_model_kv_bytes_per_token(m), m->layers, b);
}

/*
 * The context window at most 2^24 tokens (16.8M; the longest published
 * window, Llama 4 Scout's, is 10M): a run keeps per-length tables
 * (metrics.h's length counts, the sparse cache's hit table) of 8 bytes a
 * token of context, which at the 2^32 a u32 admits asked for 32 GiB.
 */
#define MODEL_CONTEXT_MAX_TOKENS (1U << 24)

static int model_check_context(const struct kv_model *m, struct kv_diag *d, const char *file)
{
	if (m->max_ctx_tokens <= MODEL_CONTEXT_MAX_TOKENS)
		return 0;
	return kv_diag_set(d, KV_ERANGE, file, 0, 0, "max_context",
			   "%u tokens: expected at most 2^24 (16777216; the longest published "
			   "context window is 10M tokens)", m->max_ctx_tokens);
}

int kv_model_validate(const struct kv_model *m, struct kv_diag *d, const char *file)
{
	int err = model_check_positive(m, d, file);

	if (err)
		return err;
	if (m->kv_heads > m->heads || m->heads % m->kv_heads)
		return kv_diag_set(d, KV_EINVAL, file, 0, 0, "kv_heads",
				   "%u must divide heads (%u)", m->kv_heads, m->heads);
	if (m->dtype_bytes != 1 && m->dtype_bytes != 2 && m->dtype_bytes != 4)
		return kv_diag_set(d, KV_EINVAL, file, 0, 0, "dtype_bytes",
				   "%u is not 1, 2 or 4", m->dtype_bytes);
	if ((err = model_check_moe(m, d, file)) || (err = model_check_mla(m, d, file)) ||
	    (err = model_check_window(m, d, file)) || (err = model_check_dtypes(m, d, file)) ||
	    (err = model_check_params(m, d, file)) ||
	    (err = model_check_context_bytes(m, d, file)))
		return err;
	return model_check_context(m, d, file); /* after the bytes: their message is the sharper */
}

void kv_device_set_defaults(struct kv_device *dev)
{
	dev->eff_bw = KV_DEV_DEFAULT_EFF_BW;
	dev->eff_flops = KV_DEV_DEFAULT_EFF_FLOPS;
	dev->overhead_ns = KV_DEV_DEFAULT_OVERHEAD_NS;
	dev->per_seq_ns = KV_DEV_DEFAULT_PER_SEQ_NS;
	dev->allreduce_latency_ns = KV_DEV_DEFAULT_ALLREDUCE_LATENCY_NS;
	dev->collective_overhead_ns = KV_DEV_DEFAULT_COLLECTIVE_OVERHEAD_NS;
	dev->dequant_flops_per_byte = KV_DEV_DEFAULT_DEQUANT_FLOPS_PER_BYTE;
	dev->alpha = KV_DEV_DEFAULT_ALPHA;
	kv_unc_defaults(dev);
}

/*
 * Achieved shares of the datasheet peaks per architecture family, from
 * published measurements (docs/perf-model.md, "GPU families", has the table
 * with every source):
 *   ampere     bw 0.83: ~1700 of 2039 GB/s (gpt-fast README, A100-80GB);
 *              flops 0.71: the A100-80GB fit of docs/perf-model.md
 *              (bench/perf_fit.c, input embedding looked up).
 *   ada        bw 0.91: clpeak 921 of 1008 GB/s on an RTX 4090
 *              (krrishnarraj/clpeak issue 106); flops 0.96: 158.6 of 165.2
 *              TFLOPS, fp16 8192^3 torch matmul on an RTX 4090
 *              (mli/transformers-benchmarks issue 4).
 *   hopper     bw 0.90: FlashMLA 3000 of 3350 GB/s on H800 SXM5
 *              (deepseek-ai/FlashMLA README); flops 0.78: DeepGEMM 1550 of
 *              1979 dense FP8 TFLOPS on H800, 1.02x cuBLAS
 *              (deepseek-ai/DeepGEMM README).
 *   blackwell  no published achieved-bandwidth or GEMM figure found: the
 *              Hopper shares, flagged in the table.
 *   cdna3      bw 0.74: 3910.62 of 5300 GB/s, the HBM bandwidth AMD's
 *              rocprofiler-compute roofline test expects on MI300X
 *              (ROCm/rocm-systems PR 2934); flops: no representative
 *              published hipBLASLt figure found, the Ampere fit, flagged.
 */
static const struct {
	const char *name; /* family key */
	double eff_bw; /* achieved share of the memory bandwidth */
	double eff_flops; /* achieved share of the dense tensor rate */
} families[] = {
	{ "ampere", 0.83, 0.71 },
	{ "ada", 0.91, 0.96 },
	{ "hopper", 0.90, 0.78 },
	{ "blackwell", 0.90, 0.78 },
	{ "cdna3", 0.74, 0.71 },
};

int kv_device_family_defaults(struct kv_device *dev)
{
	size_t i;

	for (i = 0; i < KV_ARRAY_LEN(families); i++) {
		if (!strcmp(dev->family, families[i].name)) {
			dev->eff_bw = families[i].eff_bw;
			dev->eff_flops = families[i].eff_flops;
			return 0;
		}
	}
	return -1;
}

const char *kv_device_family_names(void)
{
	return "ampere, ada, hopper, blackwell, cdna3";
}

/* NaN-safe "v > 0" that names the field when it fails. */
static int positive(double v, const char *key, struct kv_diag *d, const char *file)
{
	if (v > 0 && isfinite(v))
		return 0;
	return kv_diag_set(d, KV_EINVAL, file, 0, 0, key, "must be positive, got %g", v);
}

/*
 * A rate inside [lo, hi] (in the field's unit, scaled by `unit`): wide enough
 * for any accelerator from ones not yet built down to a CPU backend
 * calibrated under valgrind (0.3 GB/s), narrow enough that a typo (1e-9
 * TFLOPS) cannot make one request's prefill take simulated years, and the
 * run with it.
 */
static int plausible(double v, double lo, double hi, double unit, const char *key,
		     const char *uname, struct kv_diag *d, const char *file)
{
	if (v >= lo && v <= hi)
		return 0;
	return kv_diag_set(d, KV_EINVAL, file, 0, 0, key, "%g %s is outside %g..%g %s", v / unit,
			   uname, lo / unit, hi / unit, uname);
}

/* Efficiencies are shares of a peak: (0, 1]. */
static int share(double v, const char *key, struct kv_diag *d, const char *file)
{
	if (v > 0 && v <= 1)
		return 0;
	return kv_diag_set(d, KV_EINVAL, file, 0, 0, key,
			   "must be a share of the peak in (0, 1], got %g", v);
}

/*
 * Memory per GPU at most 2^44 bytes (17.6 TB; the largest GPUs hold 0.3 TB),
 * so that a replica's pool, up to 64 GPUs of it, stays within the 2^50
 * bytes memory.h's KV_MEM_POOL_MAX_BYTES allows and no product of the
 * memory budget wraps 64 bits.
 */
#define DEV_MEM_MAX_BYTES (1ULL << 44)

static int device_memory(uint64_t bytes, const char *key, struct kv_diag *d, const char *file)
{
	if (bytes <= DEV_MEM_MAX_BYTES)
		return 0;
	return kv_diag_set(d, KV_ERANGE, file, 0, 0, key,
			   "%llu bytes (%.4g TB) per GPU: expected at most 2^44 bytes (17.6 TB)",
			   (unsigned long long)bytes, (double)bytes / 1e12);
}

int kv_device_validate(const struct kv_device *dev, struct kv_diag *d, const char *file)
{
	int err;

	if (dev->mem_bytes == 0)
		return kv_diag_set(d, KV_EINVAL, file, 0, 0, "memory", "must be positive");
	if ((err = device_memory(dev->mem_bytes, "memory", d, file)) ||
	    (err = device_memory(dev->mem_cuda_bytes, "memory_cuda", d, file)))
		return err;
	if ((err = positive(dev->mem_bw_Bps, "mem_bandwidth", d, file)) ||
	    (err = positive(dev->flops, "fp16_tflops", d, file)) ||
	    (err = plausible(dev->mem_bw_Bps, 1e6, 1e15, 1e9, "mem_bandwidth", "GB/s", d, file)) ||
	    (err = plausible(dev->flops, 1e6, 1e17, 1e12, "fp16_tflops", "TFLOPS", d, file)) ||
	    (err = positive(dev->host_link_Bps, "host_link_bandwidth", d, file)) ||
	    (err = share(dev->eff_bw, "perf.eff_bw", d, file)) ||
	    (err = share(dev->eff_flops, "perf.eff_flops", d, file)) ||
	    (dev->eff_attn != 0 && (err = share(dev->eff_attn, "perf.eff_attn", d, file))))
		return err;
	if (!(dev->interconnect_Bps >= 0) || !isfinite(dev->interconnect_Bps))
		return kv_diag_set(d, KV_EINVAL, file, 0, 0, "interconnect_bandwidth",
				   "must be >= 0 (0: no GPU-GPU link), got %g",
				   dev->interconnect_Bps);
	if (dev->link_type != KV_LINK_DATASHEET &&
	    (!(dev->link_busbw_Bps > 0) || !isfinite(dev->link_busbw_Bps)))
		return kv_diag_set(d, KV_EINVAL, file, 0, 0, "interconnect_busbw",
				   "must be positive with interconnect %s (the bus bandwidth nccl-tests reaches), got %g",
				   kv_link_name(dev->link_type), dev->link_busbw_Bps);
	if (!(dev->flops_fp8 >= 0) || !isfinite(dev->flops_fp8))
		return kv_diag_set(d, KV_EINVAL, file, 0, 0, "fp8_tflops",
				   "must be >= 0 (0: no fp8 tensor cores), got %g", dev->flops_fp8);
	if (!(dev->dequant_flops_per_byte >= 0) || !isfinite(dev->dequant_flops_per_byte))
		return kv_diag_set(d, KV_EINVAL, file, 0, 0, "perf.dequant_flops_per_byte",
				   "must be >= 0, got %g", dev->dequant_flops_per_byte);
	if (!(dev->alpha >= 1) || !isfinite(dev->alpha))
		return kv_diag_set(d, KV_EINVAL, file, 0, 0, "cost.alpha",
				   "must be >= 1 (weights are resident), got %g", dev->alpha);
	return 0;
}
