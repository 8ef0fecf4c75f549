/*
 * memory.h -- how much KV cache a replica gets: the engine's memory budget.
 *
 * A serving engine sizes its KV cache once, at start-up, from the GPU's
 * memory as CUDA reports it minus what the model and the runtime hold.  This
 * module reproduces that arithmetic for three models (docs/memory.md has
 * each term with its source):
 *
 *   share   (default, kvsim's own): pool = tp * memory * share - alpha * M,
 *           datasheet memory; kept byte-identical to earlier releases.
 *   vllm    KV per GPU = total * gpu_memory_utilization
 *                        - (weights + activation + non_torch + cuda_graph)
 *           (vLLM vllm/v1/worker/gpu_worker.py determine_available_memory);
 *           KV blocks = floor(KV / (block_tokens * bytes per token per GPU)).
 *   sglang  KV per GPU = (total - non_torch) * mem_fraction_static - weights
 *           (SGLang python/sglang/srt/model_executor/model_runner.py
 *           profile_max_num_token); tokens = floor(KV / bytes per token).
 *
 * `total` is the device's memory_cuda (cudaMemGetInfo) where the profile
 * gives it, else its datasheet memory.  A pin (kv_tokens) replaces the
 * estimate by the figure the engine's log printed.
 *
 * Use: fill a struct kv_mem_cfg (kv_mem_cfg_init() gives the defaults),
 * call kv_mem_budget(); the result's kv_tokens is the replica's capacity and
 * pool_bytes its pool (kv_tokens * kv_model_kv_bytes_per_token(), or the
 * share formula's bytes exactly).  Pure arithmetic, no I/O.
 */
#ifndef KV_MEMORY_H
#define KV_MEMORY_H

#include "kv_common.h"
#include "profile.h"

/* "Estimate it" for the byte overrides of struct kv_mem_cfg. */
#define KV_MEM_AUTO UINT64_MAX

/* Block size engines log their capacity in (vLLM's default block_size). */
#define KV_MEM_BLOCK_TOKENS 16

/*
 * Non-torch memory per GPU (CUDA context, cuBLAS workspaces, allocator
 * slack), as vLLM measured it for Llama-3-8B at TP 1: 1.79 GiB; at TP > 1
 * the NCCL and custom all-reduce buffers double it (3.58 GiB at TP 2).
 * Source: vllm-project/vllm PR 10511, the sanity-check logs.
 */
#define KV_MEM_NON_TORCH_BYTES 1921997865ULL /* 1.79 GiB */

/*
 * Non-torch memory per GPU at TP 1 as vLLM's V0 profiler of December 2023
 * to 0.5.x counted it (worker.py profile_num_available_blocks: peak =
 * total - free after the profiling run, CUDA context and NCCL included;
 * since PR 2031): 0.93 GiB, the value at which the December 2023 log of
 * PR 2031 (Llama-2-7B, one A100-80GB, utilization 0.9: "# GPU blocks:
 * 7351") is reproduced with this module's activation estimate (1.79 GiB
 * gives 7241 blocks, 110 x 8 MiB fewer).  The later 1.79 GiB adds what
 * newer stacks hold outside torch (torch.compile, larger CUDA 12.4
 * context, FlashInfer workspaces, pynccl and custom all-reduce buffers).
 * Used for engine vllm-v0 version 0.5 (src/lib/workload.c), x2 at TP > 1.
 */
#define KV_MEM_NON_TORCH_V05_BYTES 998579896ULL /* 0.93 GiB */

enum kv_mem_model { KV_MEM_SHARE, KV_MEM_VLLM, KV_MEM_SGLANG };

/*
 * What a run does when its longest context (workload max_context, else the
 * longest request) is more than one replica's KV cache holds
 * (`memory.context_check`): vLLM refuses to start ("ValueError: The
 * model's max seq len (N) is larger than the maximum number of tokens that
 * can be stored in KV cache (M)", vllm/worker/worker.py
 * raise_if_cache_size_invalid; V1: kv_cache_utils.py
 * check_enough_kv_cache_memory); SGLang starts and caps a request at the
 * pool (tp_worker.py: max_req_len = min(context_len - 1,
 * max_total_num_tokens - 1)), rejecting longer ones.  auto: error under a
 * vllm* engine, warn under sglang.
 */
enum kv_ctx_check { KV_CTX_CHECK_AUTO, KV_CTX_CHECK_ERROR, KV_CTX_CHECK_WARN };

/* The workload's `memory:` keys that size the KV cache. */
struct kv_mem_cfg {
	enum kv_mem_model model; /* share (default) | vllm | sglang */
	double share; /* share model: share of device memory, default 0.9 */
	double gpu_memory_utilization; /* vllm: share of total the engine may use, default 0.9 */
	double mem_fraction_static; /* sglang: static share; 0 (default): SGLang's own default */
	uint64_t activation_bytes; /* vllm: profiling run's peak per GPU; KV_MEM_AUTO: estimate */
	uint64_t cuda_graph_bytes; /* vllm: graph pool subtracted per GPU, default 0 (see .c) */
	uint64_t non_torch_bytes; /* per GPU; KV_MEM_AUTO: KV_MEM_NON_TORCH_BYTES (x2 at TP > 1) */
	uint64_t kv_tokens; /* pin: the engine log's "GPU KV cache size"; 0 (default): estimate */
	enum kv_ctx_check context_check; /* longest context beyond the KV cache: auto (default), error, warn */
	uint32_t dp; /* data-parallel attention ranks per replica (cluster.data_parallel); 0 or 1: off */
};

/* One replica's memory, per GPU unless said otherwise. */
struct kv_mem_budget {
	uint64_t total_bytes; /* memory the model starts from (cuda or datasheet) */
	double fraction; /* gpu_memory_utilization, mem_fraction_static or share used */
	uint64_t weights_bytes; /* weights on one GPU: M / tp */
	uint64_t activation_bytes; /* peak activation of the profiling run */
	uint64_t non_torch_bytes; /* CUDA context, NCCL buffers */
	uint64_t cuda_graph_bytes; /* graph pool counted against the budget */
	uint64_t kv_bytes; /* KV cache bytes on one GPU (before rounding to blocks) */
	uint64_t token_bytes; /* KV bytes per token on one GPU */
	uint64_t kv_tokens; /* replica capacity in tokens (what the engine logs) */
	uint64_t kv_blocks; /* kv_tokens / KV_MEM_BLOCK_TOKENS */
	int pinned; /* 1: kv_tokens came from the pin */
	uint64_t pool_bytes; /* the replica's pool: share's formula, else kv_tokens * fp16 bytes/token */
};

/* The defaults above (model share, share 0.9, utilization 0.9, all estimates). */
void kv_mem_cfg_init(struct kv_mem_cfg *c);

/* "share", "vllm", "sglang" */
const char *kv_mem_model_name(enum kv_mem_model m);

/*
 * Peak activation of vLLM's profiling run (gpu_model_runner.py profile_run:
 * a dummy forward of max_num_batched_tokens tokens, then the sampler on
 * min(max_num_seqs, tokens) rows of logits), per GPU of a tp group: the
 * larger of the two phases' live tensors, since the forward's are freed
 * before the sampler runs,
 *   max(T * dtype * (2 * hidden + k * intermediate / tp),  S * vocab * 42)
 * with T = max_batch_tokens, S = min(max_seqs, T).  The forward's peak is
 * in the MLP: its input and the residual (hidden wide, whole on every GPU)
 * and gate_up and act (intermediate wide, column-parallel: 1/tp of it per
 * GPU), k = 3 for a gated MLP, else 2; for a MoE model the MLP term is the
 * larger of the dense layers' (dense_layers > 0) and the fused_moe buffers
 * of one MoE layer (kv_mem_moe_workspace_bytes).  The sampler's peak is in
 * its top-k/top-p pass, which the profile run turns on (SamplingParams
 * top_p 0.99, top_k vocab - 1, "to reflect the accurate memory usage";
 * vllm/model_executor/layers/sampler.py _apply_top_k_top_p), per logit:
 * the fp32 logits 4, the sort's values 4 and int64 indices 8 and the sort's
 * scratch copy of both 12, softmax 4, cumsum 4, two bool masks 2 and the
 * scattered result 4: KV_MEM_SAMPLER_BYTES_PER_LOGIT = 42.  The whole
 * vocabulary on every GPU (the logits are gathered before sampling).  So
 * Llama-3-8B at 8192 tokens and 256 sequences peaks in the sampler at both
 * TP 1 and TP 2 (1.28 GiB; vLLM logged 1.26 GiB at both, PR 10511), while a
 * 70B model at 24 272 tokens peaks in the MLP.  Both saturate at 2^60 bytes
 * rather than wrap (memory.c, KV_MEM_SAT_BYTES).
 */
#define KV_MEM_SAMPLER_BYTES_PER_LOGIT 42ULL
uint64_t kv_mem_activation_bytes(const struct kv_model *m, uint64_t max_batch_tokens,
				 uint32_t max_seqs, uint32_t tp);

/* VLLM_FUSED_MOE_CHUNK_SIZE's default, tokens per fused_moe call (vllm/envs.py: 16 * 1024). */
#define KV_MEM_MOE_CHUNK_TOKENS 16384

/*
 * vLLM's fused_moe buffers for one MoE layer over T tokens on one GPU of a
 * tp group (vllm/model_executor/layers/fused_moe/fused_moe.py, TritonExperts
 * workspace_shapes, and moe_align_block_size.py), M = min(T,
 * KV_MEM_MOE_CHUNK_TOKENS), k = experts_per_token, N = (gated ? 2 : 1) *
 * moe_intermediate / tp (the w13 rows a rank holds), K = hidden:
 *   dtype * (M*k*max(N/2, K) + M*k*max(N, K) + M*K)      workspace13, workspace2, output
 *   + 4 * P + 4 * ceil(P / bs),  P = M*k + experts*(bs - 1)   sorted ids, expert ids
 * with bs the default BLOCK_SIZE_M (get_default_config: 16 for M <= 32, 32
 * to 96, 64 to 512, else 128).  0 for a dense model.
 */
uint64_t kv_mem_moe_workspace_bytes(const struct kv_model *m, uint64_t tokens, uint32_t tp);

/*
 * SGLang's default mem_fraction_static for a GPU of total_bytes at TP tp
 * (python/sglang/srt/server_args.py __post_init__): reserved =
 * (2.8 + tp/10) GiB below 35 GiB, (9.5 + tp/2) GiB below 90 GiB,
 * (12 + tp/2) GiB below 160 GiB, 32 GiB above; fraction =
 * round((total - reserved) / total, 3).
 */
double kv_mem_sglang_fraction(uint64_t total_bytes, uint32_t tp);

/* KV bytes per token on one GPU of a tp group: KV heads split, at least one per GPU. */
uint64_t kv_mem_token_bytes(const struct kv_model *m, uint32_t tp);

/*
 * Largest KV pool of one replica, bytes (2^50, 1 PiB: the bound every
 * byte-sized input has; 3,500 times an 8 x 141 GB node).  A pin whose
 * tokens times KV bytes per token passes it is an input error, so the
 * product never wraps 64 bits.
 */
#define KV_MEM_POOL_MAX_BYTES (1ULL << 50)

/*
 * Whether kv_tokens tokens of model m fit one replica's pool: 0 with
 * *pool_bytes = kv_tokens * kv_model_kv_bytes_per_token(m), or KV_ERANGE
 * with d naming "memory.kv_tokens" (file and line unset: the caller
 * locates it), the product without wrapping, the bound and the largest
 * pin that fits.
 */
int kv_mem_pin_bytes(uint64_t kv_tokens, const struct kv_model *m, uint64_t *pool_bytes,
		     struct kv_diag *d);

/*
 * Weights on one GPU of a data-parallel, expert-parallel group (dp ranks of
 * tp GPUs, experts over ep = dp * tp GPUs): the non-expert weights split
 * over the rank's tp GPUs (replicated in every rank) plus E / ep routed
 * experts of every MoE layer,
 *   (M - W_exp) / tp + W_exp / ep,  W_exp = L_moe * E * P_expert * bits / 8.
 * ep 1 (or a dense model) gives M / tp, as kv_mem_budget has it.
 */
uint64_t kv_mem_weights_per_gpu(const struct kv_model *m, uint32_t tp, uint32_t ep);

/* Routed-expert weight bytes of the whole model, W_exp above; 0 for a dense model. */
uint64_t kv_mem_expert_bytes(const struct kv_model *m);

/*
 * Fills *b for the model c->model.  With c->dp > 1 (vllm and sglang models
 * only) the replica is dp ranks: max_batch_tokens and max_seqs are the
 * group's and each rank profiles a dp-th of them, weights per GPU are
 * kv_mem_weights_per_gpu(m, tp, dp * tp), and kv_tokens (a pin included,
 * read as one rank's) is dp times one rank's.  The share model gives the pool of
 * tp * memory * share - alpha * M (datasheet memory) and reports its
 * capacity in fp16 tokens; vllm and sglang as in the header.  A pin sets
 * kv_tokens whatever the model.  Returns 0, or KV_EINVAL with d naming
 * "memory" when the non-KV terms leave nothing for the KV cache, or
 * KV_ERANGE when a pin passes KV_MEM_POOL_MAX_BYTES (kv_mem_pin_bytes).
 */
int kv_mem_budget(const struct kv_mem_cfg *c, const struct kv_model *m,
		  const struct kv_device *dev, uint32_t tp, uint64_t max_batch_tokens,
		  uint32_t max_seqs, struct kv_mem_budget *b, struct kv_diag *d);

/*
 * The pool unit used when memory.min_block is auto: the largest power of two
 * dividing the KV bytes of 16 tokens (vLLM's default block) as the cache
 * model stores them (token_bytes: kv_mem_unit_token_bytes), at most the
 * largest block (max_block_bytes, 0: no cap) and at least 4 KiB.  So a
 * 16-token block is a whole number of units (no rounding waste: 8 MiB for
 * Llama-2-7B, 512 KiB for Llama-2-13B's 12.5 MiB blocks) while the pool
 * keeps few units to track.
 */
uint64_t kv_mem_pool_unit(uint64_t token_bytes, uint64_t max_block_bytes);

/*
 * Per-token bytes the auto pool unit follows for a cache model storing
 * beta_bytes per token: beta; with a sliding window (profile.h), the width
 * of a whole number of layers that divides both layer groups (per-layer
 * bytes x gcd(Lw, L - Lw)), so that a block of either group is whole units
 * (cache_chunked.c keeps the groups apart).
 */
uint64_t kv_mem_unit_token_bytes(double beta_bytes, const struct kv_model *m);

#endif
