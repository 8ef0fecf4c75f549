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
};

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

/* Weight bytes M = params * dtype_bytes. */
uint64_t kv_model_weight_bytes(const struct kv_model *m);

/* fp16 KV bytes per token: 2 (K and V) * layers * kv_heads * head_dim * dtype_bytes. */
uint64_t kv_model_kv_bytes_per_token(const struct kv_model *m);

/*
 * Parameter count implied by the architecture:
 *   layers * (attention + MLP + 2 norms) + embeddings + final norm, with
 *   attention = hidden * head_dim * (2 * heads + 2 * kv_heads)   (Q, O; K, V)
 *   MLP       = (gated_mlp ? 3 : 2) * hidden * intermediate
 *   norms     = 2 * hidden per layer, hidden for the final one
 *   embedding = vocab * hidden, twice unless tie_embeddings.
 * Exact for the Llama family; biases and learned positions (OPT) are left
 * out, a gap of ~0.1%.
 */
uint64_t kv_model_arch_params(const struct kv_model *m);

/*
 * Dense FLOPs per token of the linear layers: 2 * (params that multiply an
 * activation), i.e. 2 * (params - vocab * hidden) when the embedding is a
 * separate lookup table, 2 * params when it is tied to the LM head (the LM
 * head is always counted).
 */
double kv_model_linear_flops_per_token(const struct kv_model *m);

/*
 * FLOPs of the LM head for one sampled token: 2 * vocab * hidden.  Serving
 * engines compute logits only for the tokens they sample (one per sequence
 * per iteration: a decode step, or the last chunk of a prefill), so the
 * perf model charges this per sampled sequence, not per batch token.
 */
double kv_model_head_flops(const struct kv_model *m);

/* Attention FLOPs for one query token against one context token: 4 * layers * heads * head_dim. */
double kv_model_attn_flops_per_pair(const struct kv_model *m);

/*
 * Checks the fields are positive and consistent (kv_heads divides heads,
 * dtype_bytes is 1, 2 or 4, params within KV_MODEL_PARAMS_TOL of
 * kv_model_arch_params()).  Returns 0, or KV_EINVAL with d naming file and
 * the field (line 0: the caller knows where the field was).
 */
int kv_model_validate(const struct kv_model *m, struct kv_diag *d, const char *file);

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
	char family[16]; /* architecture family ("ampere", ...), "" when not named */
	/* Perf-model coefficients (calibrated; datasheet profiles ship defaults). */
	double eff_bw; /* achieved share of mem_bw_Bps, default 0.83 */
	double eff_flops; /* achieved share of flops, default 0.73 */
	kv_ns overhead_ns; /* fixed cost per iteration, default 1.6 ms */
	kv_ns per_seq_ns; /* cost per sequence in the batch, default 0 */
	double eff_attn; /* achieved share of flops in attention; 0 (default): eff_flops */
	kv_ns allreduce_latency_ns; /* fixed cost of one all-reduce (TP only), default 5 us */
	double dequant_flops_per_byte; /* dequantisation work per KV byte read, default 2 */
	/* Cost-model coefficient. */
	double alpha; /* base-memory factor: resident bytes per weight byte, default 1.1 */
};

/*
 * Defaults of the perf and cost coefficients above, used when a profile
 * omits them: the A100-80GB fit of docs/perf-model.md.
 */
#define KV_DEV_DEFAULT_EFF_BW 0.83
#define KV_DEV_DEFAULT_EFF_FLOPS 0.73
#define KV_DEV_DEFAULT_OVERHEAD_NS (1600 * KV_NS_PER_US)
#define KV_DEV_DEFAULT_PER_SEQ_NS 0
#define KV_DEV_DEFAULT_ALLREDUCE_LATENCY_NS (5 * KV_NS_PER_US)
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
