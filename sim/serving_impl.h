/*
 * serving_impl.h -- internal to the engine plugins (engine_*.c, serving.c):
 * the fields every engine's private state begins with, their option-table
 * entries, and the helpers that apply them.
 */
#ifndef KV_SERVING_IMPL_H
#define KV_SERVING_IMPL_H

#include "host.h"
#include "frontend.h"
#include "serving.h"

#include <stddef.h>
#include <stdint.h>

struct kv_sim;

/* The first member of every engine's private state. */
struct kv__engine_base {
	kv_ns frontend_ns; /* frontend_overhead: a constant added to TTFT and E2E beyond the front-end model, ns; default 0 */
	struct kv_frontend_cfg fe; /* the front end's model (frontend.h): request_cpu, tokenize_per_token, ... */
	int prefix_caching; /* prefix_caching: run the engine's prefix cache (serving.c), default on */
	uint64_t block_tokens; /* block_size: KV block tokens of the prefix cache, default 16 */
	double gemm_half_tokens; /* gemm_half_tokens: GEMM ramp n_half of perf.h, tokens */
	int embed_lookup; /* embed_lookup: input embedding gathered, not read each step (perf.h); default on */
	/* Multi-GPU replicas (comm.h, perf.h kv_perf_set_comm; docs/perf-model.md "Parallelism"). */
	int custom_ar; /* custom_allreduce: KV_CAR_* kernels below custom_ar_max (off: NCCL only) */
	uint64_t custom_ar_max; /* custom_allreduce_max: largest custom all-reduce + 1, bytes; default 8 MiB */
	int executor; /* executor: 0 mp (shared-memory broadcast), 1 ray */
	kv_ns worker_sync_ns; /* worker_sync: per-step cost of driving the workers (mp), ns; default 0 */
	kv_ns ray_step_ns; /* ray_step_overhead: what the Ray executor adds per step, ns */
	int worker_inputs; /* worker_inputs: 0 broadcast (the driver's input tensors), 1 metadata (each worker gets the per-sequence scheduler output) */
	kv_ns worker_seq_ns; /* worker_seq_overhead: metadata's cost per scheduled sequence per worker, ns */
	/* The host model (host.h; docs/host-model.md): the version's defaults unless an option says otherwise. */
	int version; /* version: index into the engine's version table */
	int host_model; /* host_model: 1 (default) runs the host model where the version has one */
	int async_sched; /* async_scheduling: 0 the version's mode, 1 off, 2 on */
	uint64_t sched_steps; /* num_scheduler_steps: decode steps per scheduling pass, default 1 */
	int cuda_graphs; /* cuda_graphs: 1 (default) decode steps run captured graphs; 0: eager (enforce_eager) */
	uint64_t graph_max; /* cuda_graph_max: largest captured batch, 0: the version's */
	double kernels_per_layer; /* kernels_per_layer: launches per layer of an eager step, default 10 */
	double coef[KV_HOST_NCOEF]; /* host_*: coefficients, ns; -1 (default): the host profile's, else the version's */
	int async_on; /* resolved at init: the host model runs in the async mode (one batch in flight ahead) */
	uint32_t running_at_step; /* requests running when the step being formed began forming */
	uint64_t lagged; /* waiting requests refused because they arrived after the step being formed was decided (statistics) */
};

/*
 * Option-table entries of the base, for an engine whose private struct is T;
 * the front end's (KV__ENGINE_FRONTEND_OPTION) are listed by each engine,
 * with its own defaults: detokenisation in the front end (detok_def, ns per
 * token), the hops an output token crosses (hops_out_def) and the API
 * server's time per request (req_def, ns, with its source req_src).
 */
#define KV__ENGINE_FRONTEND_OPTION(T, detok_def, hops_out_def, req_def, req_src)             \
	{ .name = "frontend_overhead", .type = KV_OPT_NS,                                    \
	  .offset = offsetof(T, base.frontend_ns), .def = 0, .min = 0, .max = 60e9,          \
	  .units = "ns", .help = "a constant added to each request's TTFT and E2E beyond the front-end model (docs/frontend.md); 0" }, \
	KV__FRONTEND_OPTIONS(T, base.fe, detok_def, hops_out_def, req_def, req_src)
#define KV__ENGINE_BASE_OPTIONS(T, gemm_def, gemm_src)                                       \
	{ .name = "prefix_caching", .type = KV_OPT_BOOL,                                     \
	  .offset = offsetof(T, base.prefix_caching), .def = 1, .min = 0, .max = 1,          \
	  .units = "", .help = "keep freed blocks' hashes and reuse them until evicted LRU (cache full or shared)" }, \
	{ .name = "block_size", .type = KV_OPT_U64, .offset = offsetof(T, base.block_tokens), \
	  .def = 16, .min = 1, .max = 1 << 16, .units = "tokens",                            \
	  .help = "tokens per KV block of the prefix cache" },                               \
	{ .name = "gemm_half_tokens", .type = KV_OPT_DBL,                                    \
	  .offset = offsetof(T, base.gemm_half_tokens), .def = gemm_def, .min = 0, .max = 1e6, \
	  .units = "tokens", .help = "GEMM ramp: batches with prefill compute as if n_half more tokens ran: " gemm_src }, \
	KV__ENGINE_EMBED_OPTION(T)
/* The embedding option alone (vllm-v0 takes it without the rest of the base). */
#define KV__ENGINE_EMBED_OPTION(T)                                                           \
	{ .name = "embed_lookup", .type = KV_OPT_BOOL,                                       \
	  .offset = offsetof(T, base.embed_lookup), .def = 1, .min = 0, .max = 1,            \
	  .units = "", .help = "do not charge the untied input-embedding table as a weight read each step (it is a gather; default); false: the legacy charge" }

/*
 * The multi-GPU options of the base, for an engine whose private struct is
 * T and whose custom all-reduce is car_def (KV_CAR_*).  Sources:
 * docs/perf-model.md "Parallelism".
 */
#define KV__ENGINE_COMM_OPTIONS(T, car_def, sync_def, sync_src)                              \
	{ .name = "custom_allreduce", .type = KV_OPT_ENUM, .offset = offsetof(T, base.custom_ar), \
	  .def = car_def, .units = "", .names = kv__engine_car_names,                        \
	  .help = "all-reduce kernels below custom_allreduce_max where the engine uses them (2/4/6/8 GPUs, P2P; > 2 GPUs fully linked): vllm or sglang (fitted, bench/comm_fit); off: NCCL only" }, \
	{ .name = "custom_allreduce_max", .type = KV_OPT_BYTES,                              \
	  .offset = offsetof(T, base.custom_ar_max), .def = 8388608, .min = 0, .max = 1e12,  \
	  .units = "bytes", .help = "custom all-reduce only below this size (vLLM custom_all_reduce.py max_size 8192*1024)" }, \
	{ .name = "executor", .type = KV_OPT_ENUM, .offset = offsetof(T, base.executor),     \
	  .def = 0, .units = "", .names = kv__engine_executor_names,                         \
	  .help = "how a multi-GPU replica drives its workers: mp (shared-memory broadcast) or ray (adds ray_step_overhead per step)" }, \
	{ .name = "worker_sync", .type = KV_OPT_NS, .offset = offsetof(T, base.worker_sync_ns), \
	  .def = sync_def, .min = 0, .max = 1e9, .units = "ns",                              \
	  .help = "per-step host cost of broadcasting the scheduler output to the workers and gathering the result (multi-GPU replicas): " sync_src }, \
	{ .name = "ray_step_overhead", .type = KV_OPT_NS, .offset = offsetof(T, base.ray_step_ns), \
	  .def = 274000, .min = 0, .max = 1e9, .units = "ns",                                \
	  .help = "added per step by executor ray: 0.27 ms, vLLM PR 11107 (V1 Ray vs mp, Llama-3.1-8B TP2)" }

/*
 * How a step's inputs reach the workers of a multi-GPU replica
 * (docs/host-model.md, "Driving the workers"): broadcast, the driver builds
 * the input tensors once and broadcasts them (vLLM V0 since PR 2221, 0.2.7:
 * broadcast_tensor_dict, mp and Ray executors alike); metadata, every worker
 * receives the per-sequence scheduler output and builds its own inputs
 * (vLLM up to 0.2.6 and Sarathi-Serve through Ray actors, vLLM 0.5-0.6's
 * VLLM_USE_RAY_SPMD_WORKER), which costs worker_seq_overhead per scheduled
 * sequence per worker each scheduling pass.  Listed last in each engine's
 * table, after the engine's own options.
 */
#define KV__ENGINE_INPUTS_OPTIONS(T)                                                         \
	{ .name = "worker_inputs", .type = KV_OPT_ENUM, .offset = offsetof(T, base.worker_inputs), \
	  .def = 0, .units = "", .names = kv__engine_inputs_names,                           \
	  .help = "how a multi-GPU replica's workers get a step's inputs: broadcast (the driver's tensors) or metadata (the per-sequence scheduler output to every worker: adds worker_seq_overhead x sequences x workers per step)" }, \
	{ .name = "worker_seq_overhead", .type = KV_OPT_NS, .offset = offsetof(T, base.worker_seq_ns), \
	  .def = 46000, .min = 0, .max = 1e8, .units = "ns",                                 \
	  .help = "worker_inputs metadata: cost per scheduled sequence per worker of a step: 46 us, vLLM PR 2221 (Llama-70B, 8 x A100-40G, Ray: 2.48 -> 3.48 req/s when the metadata became a broadcast; docs/host-model.md)" }

extern const char *const kv__engine_car_names[];
extern const char *const kv__engine_executor_names[];
extern const char *const kv__engine_inputs_names[];
/* The host options, for an engine whose private struct is T and whose versions are named by names (default def). */
#define KV__HOST_COEF_OPTION(T, i, key, what)                                               \
	{ .name = "host_" key, .type = KV_OPT_DBL, .offset = offsetof(T, base.coef[i]),    \
	  .def = -1, .min = -1, .max = 1e9, .units = "ns",                                 \
	  .help = what " (-1: the host profile's, else the version's; docs/host-model.md)" }
#define KV__ENGINE_HOST_OPTIONS(T, vnames, vdef)                                              \
	{ .name = "version", .type = KV_OPT_ENUM, .offset = offsetof(T, base.version),     \
	  .def = vdef, .units = "", .names = vnames,                                       \
	  .help = "engine version: selects the host model's mode and defaults (docs/engines.md, Versions)" }, \
	{ .name = "host_model", .type = KV_OPT_BOOL, .offset = offsetof(T, base.host_model), \
	  .def = 1, .min = 0, .max = 1, .units = "",                                       \
	  .help = "charge the engine's per-step CPU time (host.h) where the version has a host model" }, \
	{ .name = "async_scheduling", .type = KV_OPT_ENUM, .offset = offsetof(T, base.async_sched), \
	  .def = 0, .units = "", .names = kv__async_names,                                 \
	  .help = "schedule the next step while this one runs: max(CPU, GPU) + sync (version: the version's mode)" }, \
	{ .name = "num_scheduler_steps", .type = KV_OPT_U64, .offset = offsetof(T, base.sched_steps), \
	  .def = 1, .min = 1, .max = 1024, .units = "steps",                               \
	  .help = "decode steps per scheduling pass (vLLM 0.6 multi-step scheduling): scheduling and input preparation paid once per n" }, \
	{ .name = "cuda_graphs", .type = KV_OPT_BOOL, .offset = offsetof(T, base.cuda_graphs), \
	  .def = 1, .min = 0, .max = 1, .units = "",                                       \
	  .help = "decode steps run captured CUDA graphs (padded to the captured size); false: eager (enforce_eager)" }, \
	{ .name = "cuda_graph_max", .type = KV_OPT_U64, .offset = offsetof(T, base.graph_max), \
	  .def = 0, .min = 0, .max = 1 << 20, .units = "sequences",                        \
	  .help = "largest captured decode batch; larger ones run eagerly (0: the version's)" }, \
	{ .name = "kernels_per_layer", .type = KV_OPT_DBL, .offset = offsetof(T, base.kernels_per_layer), \
	  .def = 10, .min = 0, .max = 1000, .units = "kernels",                            \
	  .help = "kernel launches per layer of an eager step (the launch floor: layers x kernels x host_launch)" }, \
	KV__HOST_COEF_OPTION(T, KV_HOSTC_SCHED, "sched", "scheduler, fixed per step"),      \
	KV__HOST_COEF_OPTION(T, KV_HOSTC_SCHED_SEQ, "sched_seq", "scheduler, per scheduled sequence"), \
	KV__HOST_COEF_OPTION(T, KV_HOSTC_PREP_TOKEN, "prep_token", "input preparation, per scheduled token"), \
	KV__HOST_COEF_OPTION(T, KV_HOSTC_PREP_SEQ, "prep_seq", "input preparation, per scheduled sequence"), \
	KV__HOST_COEF_OPTION(T, KV_HOSTC_BLOCK, "block", "block-table update, per new KV block"), \
	KV__HOST_COEF_OPTION(T, KV_HOSTC_HASH, "hash", "prefix hashing, per full block (prefix caching only)"), \
	KV__HOST_COEF_OPTION(T, KV_HOSTC_SAMPLE, "sample", "sampling and output processing, per sampling sequence"), \
	KV__HOST_COEF_OPTION(T, KV_HOSTC_DETOK, "detok", "detokenisation in the engine process, per sampling sequence"), \
	KV__HOST_COEF_OPTION(T, KV_HOSTC_SYNC, "sync", "async mode: synchronisation per step"), \
	KV__HOST_COEF_OPTION(T, KV_HOSTC_LAUNCH, "launch", "one kernel launch of an eager step")

/*
 * Reference-CPU coefficients, ns (docs/host-model.md, "Defaults", gives the
 * source of each): sched and sched_seq fitted by configs/fidelity/fit.sh on
 * 2026-12-02 to the engine's rows of configs/fidelity (fitted.csv, fold
 * "all"); the other terms as the vLLM 0.6.0 release profiled V0, V1 the same
 * less detokenisation (moved to the front-end process), SGLang's.
 * KV__HOST_*_REL_SD: the fitted coefficients' relative sd (--uncertainty;
 * docs/metrics.md "Uncertainty bands").
 */
#define KV__HOST_FIT_SOURCE                                                                 \
	"sched, sched_seq fitted by configs/fidelity/fit.sh on 2026-12-02 (configs/fidelity/fitted.csv); the rest docs/host-model.md, Defaults"
/*
 * Relative sd: the jackknife sd of ln(value) over the leave-one-source-out
 * folds where the coefficient's rows come from more than one source (vLLM
 * V0's sched_seq: 0.93); where they come from one source (vLLM V1, SGLang)
 * or every fold stopped at the bound (vLLM V0's sched), ln(2) / 2 = 0.347:
 * the fit's resolution (factor-2 steps).
 */
#define KV__HOST_VLLM_V0_REL_SD [KV_HOSTC_SCHED] = 0.347, [KV_HOSTC_SCHED_SEQ] = 0.93
#define KV__HOST_VLLM_V1_REL_SD [KV_HOSTC_SCHED] = 0.347, [KV_HOSTC_SCHED_SEQ] = 0.347
#define KV__HOST_SGLANG_REL_SD [KV_HOSTC_SCHED] = 0.347, [KV_HOSTC_SCHED_SEQ] = 0.347
#define KV__HOST_VLLM_V0_COEFS                                                              \
	[KV_HOSTC_SCHED] = 5e6, [KV_HOSTC_SCHED_SEQ] = 240e3, [KV_HOSTC_PREP_TOKEN] = 1e3,  \
	[KV_HOSTC_PREP_SEQ] = 10e3, [KV_HOSTC_BLOCK] = 2e3, [KV_HOSTC_HASH] = 2e3,          \
	[KV_HOSTC_SAMPLE] = 8e3, [KV_HOSTC_DETOK] = 10e3, [KV_HOSTC_SYNC] = 50e3,           \
	[KV_HOSTC_LAUNCH] = 5e3
#define KV__HOST_VLLM_V1_COEFS                                                              \
	[KV_HOSTC_SCHED] = 1e6, [KV_HOSTC_SCHED_SEQ] = 1e3, [KV_HOSTC_PREP_TOKEN] = 1e3,    \
	[KV_HOSTC_PREP_SEQ] = 10e3, [KV_HOSTC_BLOCK] = 2e3, [KV_HOSTC_HASH] = 2e3,          \
	[KV_HOSTC_SAMPLE] = 8e3, [KV_HOSTC_DETOK] = 0, [KV_HOSTC_SYNC] = 50e3,              \
	[KV_HOSTC_LAUNCH] = 5e3
#define KV__HOST_SGLANG_COEFS                                                               \
	[KV_HOSTC_SCHED] = 2.4e6, [KV_HOSTC_SCHED_SEQ] = 10e3, [KV_HOSTC_PREP_TOKEN] = 0.5e3, \
	[KV_HOSTC_PREP_SEQ] = 3e3, [KV_HOSTC_BLOCK] = 0, [KV_HOSTC_HASH] = 0,               \
	[KV_HOSTC_SAMPLE] = 5e3, [KV_HOSTC_DETOK] = 0, [KV_HOSTC_SYNC] = 50e3,              \
	[KV_HOSTC_LAUNCH] = 5e3

extern const char *const kv__async_names[]; /* "version", "off", "on" */

/*
 * Resolves the host model into pf->host (host.h): the version v's mode and
 * coefficients, each replaced by the host profile's measured value
 * (pf->host_prof) or scaled by its cpu_speed, then by an option >= 0.
 */
/*
 * The workers' per-sequence cost of a step (host.h worker_seq_ns): with
 * worker_inputs metadata on a replica of W = tp x pp > 1 workers,
 * worker_seq_overhead x W ns per scheduled sequence; else 0.
 */
double kv__engine_worker_seq_ns(const struct kv__engine_base *b, const struct kv_perf *pf);

void kv__engine_host_perf(const struct kv__engine_base *b, const struct kv_host_version *v,
			  struct kv_perf *pf);

/* Sets b->async_on from the version v and the options (call from the engine's init). */
void kv__engine_host_init(struct kv__engine_base *b, const struct kv_host_version *v);

/*
 * One batch in flight ahead (async mode): whether waiting q is unseen by the
 * step being formed.  An async engine decides step k+1 while step k runs,
 * about when step k starts, so when it forms a step at the instant the
 * previous one ended and requests were running as it began forming (the
 * step has work without q; b->running_at_step, set by the engine's step
 * hook through kv__engine_host_step), a request that arrived after the previous step began is not in it: it
 * waits one more step.  Counts it in b->lagged.  0 outside the async mode.
 */
/* Records what kv__engine_lagged reads at the start of a step's formation. */
void kv__engine_host_step(struct kv__engine_base *b, const struct kv_replica *r);
int kv__engine_lagged(struct kv__engine_base *b, const struct kv_replica *r,
		      const struct kv_req *q);

void kv__engine_base_init(const struct kv__engine_base *b, struct kv_replica *r);
void kv__engine_base_perf(const struct kv__engine_base *b, struct kv_perf *pf);
/* Requests ended in the whole run, plus one (never 0): the admission guards' clock. */
uint64_t kv__engine_ended(const struct kv_sim *s);
/* The prefix cache to run instead of c's model, or NULL (serving.h cache hook). */
const struct kv_cache_ops *kv__engine_base_cache(const struct kv__engine_base *b,
						 const struct kv_sim_config *c, void **opts,
						 unsigned publish);

#endif /* KV_SERVING_IMPL_H */
