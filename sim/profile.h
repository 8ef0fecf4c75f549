/*
 * profile.h -- model and device profiles, and the numbers derived from them.
 *
 * A model profile is an architecture (layers, hidden size, heads, ...) as in
 * configs/models/NAME.yaml; a device profile is one GPU's datasheet figures
 * plus the perf model's efficiency coefficients, as in
 * configs/devices/NAME.yaml.  Derived numbers (weight bytes, KV bytes per
 * token, FLOPs per token) are computed here, never typed into a file.
 *
 * Invariant kept by kv_model_validate(): the exact parameter count of the
 * profile agrees with the count its architecture implies
 * (kv_model_arch_params()) within KV_MODEL_PARAMS_TOL, so a mistyped layer
 * count or hidden size cannot slip through unnoticed.
 *
 * Loading from YAML lives in src/lib/profile_load.c; this module has no I/O.
 */
#ifndef KV_PROFILE_H
#define KV_PROFILE_H

#include "comm.h"
#include "kv_common.h"

/* Largest relative gap allowed between params and kv_model_arch_params(). */
#define KV_MODEL_PARAMS_TOL 0.03

struct kv_model {
	char name[64]; /* e.g. "llama-2-7b" */
	uint32_t layers; /* transformer blocks */
	uint32_t hidden; /* hidden size d_model */
	uint32_t heads; /* attention (query) heads */
	uint32_t kv_heads; /* key/value heads (== heads without GQA) */
	uint32_t head_dim; /* per-head size */
	uint32_t intermediate; /* MLP inner size */
	uint32_t vocab; /* vocabulary size */
	uint32_t max_ctx_tokens; /* maximum context (prompt + output) */
	uint64_t params; /* exact parameter count (from the reference) */
	uint32_t dtype_bytes; /* bytes per weight and per KV element; default 2 (fp16) */
	uint32_t gated_mlp; /* 1: SwiGLU (3 MLP matrices), 0: 2 matrices; default 1 */
	uint32_t tie_embeddings; /* 1: the LM head reuses the embedding matrix; default 0 */
	uint32_t qkv_bias; /* 1: Q, K and V projections carry biases (Qwen2, Qwen2.5); default 0 */
	uint32_t qk_norm; /* 1: per-head RMSNorm on Q and K (Qwen3), 2 * head_dim weights a layer; default 0 */
	/* Mixture of experts (experts 0: a dense MLP in every layer). */
	uint32_t experts; /* routed experts per MoE layer (config.json num_experts); 0: dense (default) */
	uint32_t experts_per_token; /* top-k routed experts per token (num_experts_per_tok) */
	uint32_t shared_experts; /* experts every token uses, moe_intermediate wide each; default 0 */
	uint32_t moe_intermediate; /* inner size of one expert's MLP (moe_intermediate_size) */
	uint32_t dense_layers; /* leading layers with a dense MLP instead (first_k_dense_replace); default 0 */
	double expert_imbalance; /* busiest expert's load over the mean (>= 1); scales routed-expert FLOPs; default 1 */
	/* Multi-head latent attention (kv_lora_rank 0: standard attention; head_dim is then qk_nope_head_dim). */
	uint32_t kv_lora_rank; /* MLA: compressed KV latent per token per layer, elements; 0: no MLA (default) */
	uint32_t q_lora_rank; /* MLA: low-rank query width; 0: full-rank query projection (default) */
	uint32_t qk_rope_head_dim; /* MLA: decoupled RoPE key/query width, elements (one key copy for all heads) */
	uint32_t v_head_dim; /* MLA: value head width, elements */
	/* Sliding-window attention (sliding_window 0: every layer attends to the whole context). */
	uint32_t sliding_window; /* tokens a windowed layer attends to; 0: none (default) */
	uint32_t window_every; /* layer i is windowed when i % window_every == 0: 1 all (Mistral), 2 Gemma-2; default 1 */
	/* Storage types (enum kv_dtype; KV_DTYPE_AUTO: dtype_bytes, the old behaviour). */
	uint32_t weight_dtype; /* linear-layer weights; embeddings and LM head stay at dtype_bytes */
	uint32_t kv_dtype; /* cached K/V (or MLA latent) elements */
};

/*
 * Element types of weights and KV.  fp8 weights mean fp8 GEMMs (W8A8, at
 * the device's flops_fp8 when it has one); int8 and int4 weights are
 * weight-only quantization: fewer bytes read, GEMMs at the fp16 rate.
 */
enum kv_dtype {
	KV_DTYPE_AUTO = 0, /* dtype_bytes per element */
	KV_DTYPE_FP16, /* 16 bits */
	KV_DTYPE_BF16, /* 16 bits */
	KV_DTYPE_FP8, /* 8 bits (e4m3/e5m2) */
	KV_DTYPE_INT8, /* 8 bits */
	KV_DTYPE_INT4, /* 4 bits (weights only) */
};

/* Parses "fp16", "bf16", "fp8", "int8", "int4" (and "auto"); 0 or KV_EINVAL. */
int kv_dtype_parse(const char *s, uint32_t *out);

/* The name of a dtype ("auto", "fp16", ...). */
const char *kv_dtype_name(uint32_t dt);

/* Bits per element of dt for a model whose default is dtype_bytes. */
uint32_t kv_dtype_bits(uint32_t dt, uint32_t dtype_bytes);

/*
 * The architecture's uint32_t fields with their profile keys, for checks
 * that walk them all (a profile's loader, a backend's open); NULL-key
 * terminated.
 */
struct kv_model_field {
	const char *key; /* YAML key */
	size_t off; /* offset of the uint32_t in struct kv_model */
};
extern const struct kv_model_field kv_model_arch_fields[];

static inline uint32_t kv_model_field(const struct kv_model *m, const struct kv_model_field *f)
{
	return *(const uint32_t *)(const void *)((const char *)m + f->off);
}

/*
 * Resident weight bytes M: params * dtype_bytes; with a weight_dtype, the
 * embedding table(s) at dtype_bytes and the other params at that dtype's bits
 * (quantization scales left out: under 4% for int4 in groups of 128).
 */
uint64_t kv_model_weight_bytes(const struct kv_model *m);

/*
 * KV elements cached per token over all layers: 2 * layers * kv_heads *
 * head_dim (K and V), or layers * (kv_lora_rank + qk_rope_head_dim) with
 * MLA (one latent copy and one shared RoPE key, no K/V pair).
 */
uint64_t kv_model_kv_elems_per_token(const struct kv_model *m);

/* Elements of one cached vector (a head's K or V; MLA's latent plus RoPE key). */
uint32_t kv_model_kv_vector_elems(const struct kv_model *m);

/* KV bytes per token of context: kv_model_kv_elems_per_token() * KV element bytes. */
uint64_t kv_model_kv_bytes_per_token(const struct kv_model *m);

/*
 * KV bytes per token held by one GPU of a tensor-parallel group of tp:
 * the KV heads split over the GPUs (at least one head each), the MLA latent
 * replicated on every GPU (it is shared by all heads).
 */
uint64_t kv_model_kv_bytes_per_token_gpu(const struct kv_model *m, uint32_t tp);

/* Layers with a sliding window: ceil(layers / window_every), 0 without a window. */
uint32_t kv_model_window_layers(const struct kv_model *m);

/*
 * Exact KV bytes a request of ctx tokens needs when windowed layers keep only
 * their last sliding_window tokens:
 *   ctx * b * (L - Lw) / L + min(ctx, W) * b * Lw / L
 * with b = kv_model_kv_bytes_per_token(), L layers, Lw windowed layers and W
 * the window (ctx * b without a window).  Attention reads the same bytes.
 */
uint64_t kv_model_kv_bytes(const struct kv_model *m, uint64_t ctx_tokens);

/*
 * The same for any per-token width b (a quantized cache's b_q, the bytes it
 * dequantises): ctx * b - max(0, ctx - W) * b * Lw / L, the product rounded
 * down; equals kv_model_kv_bytes() for b = kv_model_kv_bytes_per_token().
 */
uint64_t kv_model_window_bytes(const struct kv_model *m, uint64_t ctx_tokens, uint64_t b);

/* kv_model_window_bytes() from precomputed terms (hot paths): window w, lw of layers windowed. */
static inline uint64_t kv_window_bytes(uint64_t ctx_tokens, uint64_t b, uint64_t w, uint64_t lw,
				       uint64_t layers)
{
	if (!lw || ctx_tokens <= w)
		return ctx_tokens * b;
	return ctx_tokens * b - (ctx_tokens - w) * b * lw / layers;
}

/* ---- mixture of experts ---- */

/* MoE layers: layers - dense_layers, 0 for a dense model. */
uint32_t kv_model_moe_layers(const struct kv_model *m);

/* Parameters of one routed expert: (gated_mlp ? 3 : 2) * hidden * moe_intermediate. */
uint64_t kv_model_expert_params(const struct kv_model *m);

/*
 * Expected distinct routed experts n tokens touch in one MoE layer under
 * uniform top-k routing: E * (1 - (1 - k/E)^n).  Each token picks k of the
 * E experts, so a given expert is missed by one token with probability
 * 1 - k/E and by n independent tokens with probability (1 - k/E)^n; the
 * expectation of the count of touched experts is E times the complement
 * (linearity of expectation).  0 for n = 0 or a dense model.
 */
double kv_model_moe_distinct_experts(const struct kv_model *m, double n_tokens);

/*
 * Bytes one token sends to the experts of one MoE layer (expert-parallel
 * dispatch; the combine returns as many): hidden * dtype_bytes * top-k.
 */
uint64_t kv_model_moe_dispatch_bytes_per_token(const struct kv_model *m);

/* Parameters a token multiplies by: params less the (E - k) routed experts it skips in each MoE layer. */
uint64_t kv_model_active_params(const struct kv_model *m);

/*
 * Weight bytes read in one step of n batch tokens: the resident bytes less
 * the routed experts the batch does not touch (MoE: moe_layers * (E -
 * distinct(n)) * expert bytes) and, when embed_lookup is set and the
 * embedding is not tied to the LM head, less the input-embedding table,
 * which is gathered (n rows), not streamed.
 */
double kv_model_weight_read_bytes(const struct kv_model *m, double n_tokens, int embed_lookup);

/*
 * Parameter count implied by the architecture:
 *   layers * (attention + 2 norms) + dense_layers' MLPs + MoE layers' MLPs
 *   + embeddings + final norm, with
 *   attention = hidden * head_dim * (2 * heads + 2 * kv_heads)   (Q, O; K, V)
 *               + qkv_bias * head_dim * (heads + 2 * kv_heads) + qk_norm * 2 * head_dim
 *   MLA       = Q: hidden * heads * (head_dim + rope), or through q_lora_rank
 *               (hidden * q_lora + q_lora + q_lora * heads * (head_dim + rope));
 *               KV down: hidden * (kv_lora_rank + rope) + kv_lora_rank (its norm);
 *               KV up: kv_lora_rank * heads * (head_dim + v_head_dim);
 *               O: heads * v_head_dim * hidden
 *   MLP       = (gated_mlp ? 3 : 2) * hidden * intermediate   (dense layers)
 *   MoE MLP   = hidden * experts (router) + (experts + shared_experts) * expert params
 *   norms     = 2 * hidden per layer, hidden for the final one
 *   embedding = vocab * hidden, twice unless tie_embeddings.
 * Exact for the Llama, Qwen2/3, Mixtral and DeepSeek-V2 families; biases
 * of OPT, learned positions and Gemma-2's extra two norms a layer are left
 * out, a gap under 0.2%.
 */
uint64_t kv_model_arch_params(const struct kv_model *m);

/*
 * FLOPs per token of the linear layers: 2 * (params that multiply an
 * activation), i.e. 2 * (active params - vocab * hidden) when the embedding
 * is a separate lookup table, 2 * active params when it is tied to the LM
 * head (the LM head is always counted).  Active params (MoE): the top-k
 * routed experts only, their share scaled by expert_imbalance.
 */
double kv_model_linear_flops_per_token(const struct kv_model *m);

/*
 * FLOPs of the LM head for one sampled token: 2 * vocab * hidden.  Serving
 * engines compute logits only for the tokens they sample (one per sequence
 * per iteration: a decode step, or the last chunk of a prefill), so the
 * perf model charges this per sampled sequence, not per batch token.
 */
double kv_model_head_flops(const struct kv_model *m);

/*
 * Attention FLOPs for one query token against one context token:
 * 2 * layers * heads * (qk width + v width), i.e. 4 * layers * heads *
 * head_dim, or with MLA 2 * layers * heads * (head_dim + qk_rope_head_dim +
 * v_head_dim) (the per-head, non-absorbed form).
 */
double kv_model_attn_flops_per_pair(const struct kv_model *m);

/*
 * Checks the fields are positive and consistent (kv_heads divides heads,
 * dtype_bytes is 1, 2 or 4, MoE keys all set or all unset with top-k <= E,
 * MLA widths set together, a window below the context, int4 only for
 * weights, params within KV_MODEL_PARAMS_TOL of
 * kv_model_arch_params()).  Returns 0, or KV_EINVAL with d naming file and
 * the field (line 0: the caller knows where the field was).
 */
int kv_model_validate(const struct kv_model *m, struct kv_diag *d, const char *file);

/* Rows of uncert.h's coefficient table the device can hold. */
#define KV_UNC_MAX 16

struct kv_device {
	char name[64]; /* e.g. "a100-80g" */
	uint64_t mem_bytes; /* device memory, bytes (datasheet GB = 1e9 bytes) */
	uint64_t mem_cuda_bytes; /* total as cudaMemGetInfo reports it, bytes; 0: not known */
	double mem_bw_Bps; /* peak memory bandwidth, bytes/s */
	double flops; /* peak dense fp16 tensor rate, FLOP/s */
	double host_link_Bps; /* host link bandwidth, one direction, bytes/s */
	double interconnect_Bps; /* GPU-GPU link, one direction, bytes/s (for TP); 0: none */
	double flops_fp8; /* peak dense fp8 tensor rate, FLOP/s; 0: no fp8 tensor cores */
	enum kv_link_type link_type; /* GPU-GPU link kind (comm.h); KV_LINK_DATASHEET: none named */
	double link_busbw_Bps; /* bus bandwidth NCCL reaches on that link, bytes/s; 0 with datasheet */
	double link_busbw_n_Bps[KV_LINK_MAX_RANKS + 1]; /* the same at n GPUs (interconnect_busbw_by_gpus), bytes/s; 0: not given */
	char family[16]; /* architecture family ("ampere", ...), "" when not named */
	char host[64]; /* the host profile a workload without `host:` runs (host.h), "" : reference */
	double cost_per_gpu_hour; /* list price of one GPU for an hour, USD (the profile cites it); 0: not known */
	/* Perf-model coefficients (calibrated; datasheet profiles ship defaults). */
	double eff_bw; /* achieved share of mem_bw_Bps, default 0.83 */
	double eff_flops; /* achieved share of flops, default 0.71 (the A100 fit) */
	kv_ns overhead_ns; /* fixed cost per iteration, default 1.2 ms */
	kv_ns per_seq_ns; /* cost per sequence in the batch, default 0 */
	double eff_attn; /* achieved share of flops in attention; 0 (default): eff_flops */
	kv_ns allreduce_latency_ns; /* fixed cost of one all-reduce (TP only), default 13 us */
	kv_ns collective_overhead_ns; /* host/launch cost added to every collective over > 1 rank, default 0 */
	double dequant_flops_per_byte; /* dequantisation work per KV byte read, default 2 */
	/* Cost-model coefficient. */
	double alpha; /* base-memory factor: resident bytes per weight byte, default 1.1 */
	/* The perf coefficients' fitted intervals, indexed like uncert.h's KV_UNC_COEFS. */
	struct {
		double rel_sd[KV_UNC_MAX]; /* relative standard deviation, default the A100 fit's */
		double abs_sd_ns[KV_UNC_MAX]; /* absolute standard deviation of a duration, ns */
	} unc;
};

/*
 * Defaults of the perf and cost coefficients above, used when a profile
 * omits them: the A100-80GB fit of docs/perf-model.md.
 */
#define KV_DEV_DEFAULT_EFF_BW 0.83
#define KV_DEV_DEFAULT_EFF_FLOPS 0.71
#define KV_DEV_DEFAULT_OVERHEAD_NS (1200 * KV_NS_PER_US)
#define KV_DEV_DEFAULT_PER_SEQ_NS 0
#define KV_DEV_DEFAULT_ALLREDUCE_LATENCY_NS (13 * KV_NS_PER_US)
#define KV_DEV_DEFAULT_COLLECTIVE_OVERHEAD_NS 0 /* docs/perf-model.md, "Per-collective overhead" */
#define KV_DEV_DEFAULT_DEQUANT_FLOPS_PER_BYTE 2.0
#define KV_DEV_DEFAULT_ALPHA 1.1

/* Fills dev's coefficients with the defaults above (datasheet fields untouched). */
void kv_device_set_defaults(struct kv_device *dev);

/*
 * Sets eff_bw and eff_flops to the published achieved shares of dev->family
 * (docs/perf-model.md, "GPU families", cites each); returns 0, or -1 for an
 * unknown family (dev untouched).
 */
int kv_device_family_defaults(struct kv_device *dev);

/* The family names, ", "-separated, for error messages. */
const char *kv_device_family_names(void);

/*
 * Checks datasheet figures are positive and coefficients in range
 * (0 < eff <= 1, alpha >= 1, dequant >= 0).  Returns 0 or KV_EINVAL with d
 * naming file and field.
 */
int kv_device_validate(const struct kv_device *dev, struct kv_diag *d, const char *file);

#endif /* KV_PROFILE_H */
