/*
 * perf.h -- the iteration-time model: a roofline over one batch.
 *
 * For a batch with N tokens (prefill chunk tokens plus one per decoding
 * sequence), S sequences, and `pairs` query-context token pairs read by
 * attention (each query token reads its whole context, so decode contributes
 * its context length and a prefill chunk of c tokens after p cached tokens
 * contributes c*p + c*(c+1)/2), the model computes, per GPU of a
 * tensor-parallel group of tp GPUs,
 *
 *   t_lin  = max(M(N)/tp / (B*eff_bw),  F_lin*N/tp / (P*eff_flops))
 *   t_attn = max(KV/tp / (B*eff_bw), (F_attn*pairs_w + q*D)/tp / (P*eff_flops))
 *   t      = overhead + S*per_seq + t_lin + t_attn + t_ar + extra
 *   t_ar   = N * 2L * 2(tp-1)/tp * hidden*dtype / I  +  2L * lat   (tp > 1 only)
 *
 * with pairs_w = pairs - (Lw/L) * skip the pairs the layers compute when Lw
 * of the L layers attend only to their last W tokens (sliding window:
 * skip counts, per windowed layer, the pairs of query tokens at position
 * i > W with the i - W oldest keys, kv_perf_window_skip_pairs()),
 * M(N) the weight bytes read (all but the untied input-embedding table,
 * which is looked up (kv_perf_set_embed_lookup), for a dense model; for MoE the
 * non-expert weights plus, per MoE layer, the E * (1 - (1 - k/E)^N) distinct
 * routed experts N tokens touch under uniform top-k routing; their FLOPs
 * run at the grouped-GEMM rate of moegemm.h, P_dtype * ec * g(m) with m =
 * N k / D(N) tokens per touched expert), KV the KV bytes attention reads over the whole
 * replica (kv_read_bytes; heads are split over the tp GPUs), D the KV bytes
 * to dequantise and q the device's dequant FLOPs per byte,
 * F_lin = kv_model_linear_flops_per_token(), F_attn =
 * kv_model_attn_flops_per_pair(), B and P the device's bandwidth and FLOP
 * rate, I its GPU-GPU link (one direction), L the layers and lat the fixed
 * cost of one all-reduce: two ring all-reduces of N*hidden activations per
 * layer, as Megatron-style tensor parallelism does.
 *
 * The linear layers and attention are separate kernels that run one after
 * the other, so each gets its own roofline and their times add.  A single
 * max over the summed bytes and FLOPs (rejected) lets attention's memory
 * traffic hide under the linear layers' compute, which no kernel schedule
 * does: with the same coefficients it over-predicted TensorRT-LLM's
 * batch-384 Llama-2-7B throughput by 26%; refitted, it needed a 20 us
 * per-sequence term to stand in for attention and still fitted the
 * comparison set worse (largest error 8.8% against 7.4%).
 * With a typed interconnect (device profile `interconnect:`) t_ar is
 * instead 2L all-reduces of N*hidden*dtype bytes, each costed by comm.h's
 * NCCL model (cheapest ring/tree x LL/LL128/Simple); MoE layers under
 * expert parallelism add two all-to-alls each (kv_perf_set_moe_ep).
 *
 * Pipeline parallelism (pp stages, vLLM-style: one micro-batch per stage in
 * flight, pp virtual engines): the batch splits into m = min(pp, S)
 * micro-batches, a stage runs ceil(L/pp) layers of one micro-batch
 * (t_stage: the terms above on N/m tokens and 1/pp of the layers, plus the
 * send of N/m*hidden*dtype activations to the next stage), and every
 * sequence advances one token per cycle of pp * t_stage: throughput is set
 * by the slowest stage, a token's latency is the sum of the stages, and
 * with fewer micro-batches than stages (m < pp) the pipeline has a bubble
 * of 1 - m/pp.
 *
 * The engine's host side (host.h, when an engine turns it on): a
 * decode-only step runs the CUDA graph of the next captured batch size, its
 * linear layers computed for the padded batch; any other step runs eagerly,
 * its kernels floored by their launches; and the step's CPU time combines
 * with the time above per the engine version's mode (kv_host_step_ns).
 * overhead then stands for the GPU side of a step only (launch gaps,
 * synchronisation), as in the C++ runtimes its value was fitted on.
 *
 * docs/perf-model.md derives the terms and compares the model to published
 * measurements.  The functions here are pure and allocation-free: they sit
 * on the simulator's hot path.
 */
#ifndef KV_PERF_H
#define KV_PERF_H

#include "comm.h"
#include "host.h"
#include "profile.h"

/* The shape of one iteration's batch, filled by the engine. */
struct kv_batch_shape {
	uint32_t n_seqs; /* sequences in the batch */
	uint32_t n_decode; /* sequences generating one token */
	uint32_t n_sample; /* sequences that sample a token (LM head): decodes and last prefill chunks */
	uint64_t n_prefill_tokens; /* prompt tokens processed this iteration */
	uint64_t attn_pairs; /* query-context token pairs over the batch */
	uint64_t kv_read_bytes; /* KV bytes attention reads, whole replica (cache model's) */
	uint64_t dequant_bytes; /* KV bytes that need dequantisation (quantized caches) */
	uint64_t window_skip_pairs; /* pairs a sliding-window layer skips (keys older than the window), per windowed layer */
	uint64_t extra_ns; /* added time: swaps, recompute not in the batch, ... */
	uint64_t max_chunk_tokens; /* the largest prefill chunk of the batch, tokens (read only at dp > 1) */
	uint64_t max_chunk_pairs; /* that chunk's query-context pairs (read only at dp > 1) */
};

/* Precomputed per (model, device, tp) constants. */
struct kv_perf {
	double weight_bytes_per_gpu; /* M / tp, less the routed experts (MoE), bytes read every step */
	double embed_bytes_per_gpu; /* input-embedding table / tp charged in weight_bytes_per_gpu; 0 when looked up */
	double embed_table_bytes_per_gpu; /* the untied input-embedding table / tp, bytes; 0: tied */
	double expert_bytes_per_gpu; /* one routed expert in every MoE layer / (ep > 1 ? ep : tp), bytes; 0: dense */
	double moe_experts; /* E, routed experts per MoE layer; 0: dense */
	double moe_miss; /* 1 - k/E: the chance one token skips a given expert */
	double moe_k; /* k, routed experts per token; 0: dense */
	double routed_flops_per_token; /* the routed experts' FLOPs per batch token / tp (expert_imbalance included), kept out of lin_flops_per_token; 0: dense */
	double routed_flops_per_s; /* P_dtype * ec_dtype: the grouped GEMM's rate for large groups (moegemm.h) */
	double routed_half_tokens; /* c * m_ridge: tokens per expert at which the grouped GEMM reaches half that rate */
	double lin_flops_per_token; /* (F_lin - F_head) / tp: the layers but the routed experts, per batch token */
	double head_flops_per_sample; /* F_head / tp: the LM head, per sampled sequence */
	double attn_flops_per_pair; /* F_attn / tp */
	double window_frac; /* Lw / L: share of layers with a sliding window (pairs_w), 0: none */
	double bw_Bps; /* B * eff_bw */
	double flops_per_s; /* P * eff_flops */
	double attn_flops_per_s; /* P * eff_attn (eff_flops when the profile leaves it 0) */
	double dequant_flops_per_byte; /* from the device */
	double overhead_ns; /* fixed per iteration */
	double per_seq_ns; /* per sequence */
	double allreduce_ns_per_token; /* TP all-reduce time per batch token, 0 when tp == 1 */
	double allreduce_ns_fixed; /* 2 * layers * all-reduce latency, 0 when tp == 1 */
	uint32_t tp; /* tensor-parallel degree */
	double gemm_half_tokens; /* n_half: batch tokens of GEMM ramp in batches with prefill (0: none, vllm-v0) */
	/* Interconnect and parallel layout (comm.h; docs/perf-model.md "Parallelism"). */
	struct kv_link link; /* the device's GPU-GPU link as the collectives see it */
	int nccl; /* 1: all-reduces costed by comm.h's NCCL model (typed link), 0: the datasheet terms above */
	struct kv_comm_allreduce ar; /* TP all-reduce candidates over tp ranks (nccl only) */
	double ar_bytes_per_token; /* hidden * dtype_bytes: one token's activations, bytes */
	double ar_per_iter; /* all-reduces per pass over the model: 2 * layers */
	uint32_t pp; /* pipeline stages, >= 1 (1: no pipeline) */
	double stage_frac; /* share of the layers on the slowest stage: ceil(layers/pp) / layers */
	double head_flops_on_stage; /* LM head FLOPs per sample on the last stage (= head_flops_per_sample) */
	uint32_t ep; /* expert-parallel degree, >= 1 */
	double ep_moe_layers; /* MoE layers whose tokens are dispatched and combined; 0: none */
	double ep_bytes_per_token; /* dispatch bytes per batch token per MoE layer (combine moves the same) */
	/* The engine's host side (host.h): off unless the engine's perf hook turns it on. */
	struct kv_host host; /* CPU time, how it combines with the GPU's, CUDA graphs */
	uint32_t layers; /* the model's layers (the eager launch floor counts kernels per layer) */
	const struct kv_host_profile *host_prof; /* the run's host profile (engine.c), NULL: the reference CPU */
	double step_scale; /* every step's time (extra_ns included) is multiplied by this before rounding, default 1 (the sensitivity runs of sim/load.h) */
	uint32_t dp; /* data-parallel attention ranks stepping in lockstep per replica, >= 1 (1: off) */
};

/* The GPU layout of one replica: tp * pp GPUs; experts spread over ep of them. */
struct kv_parallel {
	uint32_t tp; /* tensor-parallel degree, >= 1 */
	uint32_t pp; /* pipeline stages, >= 1 */
	uint32_t ep; /* expert-parallel degree, >= 1 (needs MoE layers: kv_perf_set_moe_ep) */
	uint32_t dp; /* data-parallel attention ranks, each tp GPUs; 0 or 1: off (kv_perf_dp_iter_ns) */
};

/*
 * Fills pf from a model, a device and a tensor-parallel degree (>= 1).  A
 * device without a GPU-GPU link (interconnect 0) all-reduces over its host
 * link.
 */
void kv_perf_init(struct kv_perf *pf, const struct kv_model *m, const struct kv_device *dev,
		  uint32_t tp);

/*
 * Fills pf for a parallel layout.  tp as kv_perf_init(); pp > 1 splits the
 * layers over pp stages (the pipeline model of perf.h's header, below); ep
 * is recorded and costs nothing until kv_perf_set_moe_ep() names the MoE
 * layers.  kv_perf_init(pf, m, dev, tp) is this with pp = ep = 1.
 */
void kv_perf_init_parallel(struct kv_perf *pf, const struct kv_model *m,
			   const struct kv_device *dev, const struct kv_parallel *par);

/*
 * Expert parallelism: every MoE layer dispatches each batch token's routed
 * activations to the GPUs holding its experts and combines the results back,
 * two all-to-alls over ep ranks of bytes_per_rank = tokens *
 * dispatch_bytes_per_token (comm.h kv_comm_alltoall_ns).  Plain numbers, no
 * model fields: dispatch_bytes_per_token is top_k * hidden * dtype_bytes
 * for a top-k router.  moe_layers 0 or ep 1 turn the term off.
 */
void kv_perf_set_moe_ep(struct kv_perf *pf, uint32_t moe_layers,
			double dispatch_bytes_per_token, uint32_t ep);

/*
 * The grouped GEMM of the routed experts (moegemm.h) over n_routed batch
 * tokens: m = n_routed * k / D(n_routed), the tokens each touched expert
 * multiplies (0 for a dense model or no tokens), and g(m) = m / (m +
 * c * m_ridge), the share of the large-group rate (P_dtype * ec) the
 * experts' FLOPs run at; g rises with m from 0 towards 1.
 */
double kv_perf_routed_tokens_per_expert(const struct kv_perf *pf, double n_routed);
double kv_perf_routed_eff(const struct kv_perf *pf, double n_routed);

/* The expert-parallel all-to-all time of one pass over n_tokens batch tokens, ns. */
double kv_perf_moe_ep_ns(const struct kv_perf *pf, double n_tokens);

/*
 * The engine's side of the collectives (serving.h perf hook): its custom
 * all-reduce (comm.h; used where kv_comm_car_usable() says the engine would)
 * and the per-step cost of driving the workers (scheduler output broadcast
 * and result gather) charged to every step of a replica of more than one
 * GPU, sync_ns.  Defaults (kv_perf_init): NCCL only, sync 0.
 */
void kv_perf_set_comm(struct kv_perf *pf, const struct kv_comm_car *car, double sync_ns);

/* The TP all-reduce time of one pass over n_tokens batch tokens, ns (0 when tp == 1). */
double kv_perf_allreduce_ns(const struct kv_perf *pf, double n_tokens);

/*
 * The model one pipeline stage holds: ceil(layers / pp) layers and that
 * share of the parameters, for sizing weights and KV per GPU (memory.h).
 * pp == 1 copies m.
 */
void kv_perf_stage_model(const struct kv_model *m, uint32_t pp, struct kv_model *out);

/*
 * Whether the untied input-embedding table is charged as a weight read each
 * step (lookup 0, the legacy model) or not (lookup 1, the default: it is a
 * gather of one row per token, not a GEMM; the LM head stays).  Idempotent.
 * The A100 coefficients were refitted with the lookup (docs/perf-model.md
 * "Coefficients"); embed_lookup: false is the legacy opt-out.
 * kv_perf_init leaves it at KV_PERF_EMBED_LOOKUP_DEFAULT; the engines'
 * option embed_lookup sets it (docs/perf-model.md "The input embedding").
 */
#define KV_PERF_EMBED_LOOKUP_DEFAULT 1
void kv_perf_set_embed_lookup(struct kv_perf *pf, int lookup);
/* kv_perf_set_embed_lookup(pf, 1). */
void kv_perf_embed_lookup(struct kv_perf *pf);

/*
 * GEMM efficiency ramp (set by the vllm and sglang engines, 0 otherwise): in a
 * batch with prefill tokens the linear layers' compute term counts
 * N + n_half tokens instead of N, i.e. their FLOP rate is P*eff*N/(N+n_half),
 * so small prefill chunks run the GEMMs below their peak.  Decode-only
 * batches keep the plain roofline (it is what the decode calibration fits).
 */

/*
 * Data-parallel attention with expert parallelism (dp > 1; docs/perf-model.md
 * "Data-parallel attention"): a replica is a group of dp attention ranks of
 * tp GPUs each, with its own share of the batch and of the KV cache, whose
 * MoE layers' routed experts are spread over all ep = dp * tp GPUs.  The
 * ranks step in lockstep, so a step lasts as long as its slowest rank.  b is
 * the group's batch, split as a load-balancing router leaves it (vLLM's DP
 * coordinator and SGLang's data-parallel controller send each request to
 * the least-loaded rank): the slowest rank holds S_r = ceil(S / dp) of the
 * S sequences, ceil(x / dp) of the decodes and samples, the share S_r / S
 * of the attention pairs and KV read, and at least the batch's largest
 * prefill chunk (a chunk does not split across ranks).  A rank with nothing
 * to do runs a dummy batch in parallel and costs nothing extra.  Its step is
 *   overhead + per_seq * S_r + sync
 *   + max(W_dense / B + W_exp * E * (1 - (1 - k/E)^N) / B, F_lin * N_r / P)
 *   + attention(rank share) + allreduce(N_r over tp) + 2 L_moe A2A(N_r * d, ep)
 * with N the group's tokens (every rank's tokens reach the experts of every
 * GPU) and N_r = ceil(N / dp).  kv_perf_iter_ns() calls it when dp > 1.
 */
kv_ns kv_perf_dp_iter_ns(const struct kv_perf *pf, const struct kv_batch_shape *b);

/*
 * The slowest rank's share of a group's batch over dp ranks, as
 * kv_perf_dp_iter_ns's comment has it: S_r = ceil(S / dp) sequences;
 * ceil(x / dp) decodes and samples; prefill tokens max(ceil(P / dp),
 * largest chunk); attention pairs max(ceil(pairs * S_r / S), the largest
 * chunk's); KV and dequantised bytes ceil(x * S_r / S); window-skipped
 * pairs floor(x * S_r / S), at most the rank's pairs.  dp 1 copies b.
 */
void kv_perf_dp_rank_shape(const struct kv_batch_shape *b, uint32_t dp,
			   struct kv_batch_shape *rank);

/* Iteration duration in ns (>= 1) for a batch shape. */
kv_ns kv_perf_iter_ns(const struct kv_perf *pf, const struct kv_batch_shape *b);

/*
 * The terms of kv_perf_iter_ns that do not read a shape's attn_pairs or
 * kv_read_bytes, computed once for a run of decode steps whose shapes
 * differ only in those two (a macro step): kv_perf_iter_run_ns then equals
 * kv_perf_iter_ns bit for bit (the same operations in the same order).
 */
struct kv_perf_run {
	double head_ns; /* overhead + per-sequence cost, ns */
	double lin_ns; /* the linear layers' roofline term, ns */
	double ar_ns; /* tensor-parallel all-reduce, ns (added only when tp > 1) */
	double moe_ns; /* expert-parallel all-to-all, ns */
	double skip_pairs; /* window_frac * window_skip_pairs: pairs the windowed layers skip */
	double dequant_flops; /* dequantisation FLOPs per GPU, as attention_ns computes them */
	double cpu_ns; /* the host's CPU time of the step (host.h), ns */
	int eager; /* 1: the step runs without a CUDA graph (the launch floor applies) */
};
void kv_perf_iter_prep(const struct kv_perf *pf, const struct kv_batch_shape *b,
		       struct kv_perf_run *run);
kv_ns kv_perf_iter_run_ns(const struct kv_perf *pf, const struct kv_perf_run *run,
			  const struct kv_batch_shape *b);

/*
 * Pairs a layer with a sliding window of w tokens skips in a chunk of c
 * query tokens after p cached ones: query i (positions p+1 .. p+c) attends
 * to min(i, w) keys instead of i, so the chunk skips sum of max(0, i - w) =
 * (a + b) * (b - a + 1) / 2 with a = max(p+1, w+1) - w, b = p + c - w (0
 * when p + c <= w).  A decode step (c = 1) at context n skips n - w.  w is
 * the model's sliding_window (UINT64_MAX or 0: none).
 */
static inline uint64_t kv_perf_window_skip_pairs(uint64_t p, uint64_t c, uint64_t w)
{
	uint64_t a, b;

	if (w == 0 || p + c <= w)
		return 0;
	a = (p + 1 > w + 1 ? p + 1 : w + 1) - w;
	b = p + c - w;
	return (a + b) * (b - a + 1) / 2;
}

/* Query-context pairs of a prefill chunk of c tokens after p cached tokens: c*p + c*(c+1)/2. */
static inline uint64_t kv_perf_prefill_pairs(uint64_t p, uint64_t c)
{
	return c * p + c * (c + 1) / 2;
}

#endif /* KV_PERF_H */
