/*
 * serving_impl.h -- internal to the engine plugins (engine_*.c, serving.c):
 * the fields every engine's private state begins with, their option-table
 * entries, and the helpers that apply them.
 */
#ifndef KV_SERVING_IMPL_H
#define KV_SERVING_IMPL_H

#include "serving.h"

#include <stddef.h>
#include <stdint.h>

struct kv_sim;

/* The first member of every engine's private state. */
struct kv__engine_base {
	kv_ns frontend_ns; /* frontend_overhead: per-request front-end cost added to TTFT and E2E, ns; default 0 */
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
};

/* Option-table entries of the base, for an engine whose private struct is T. */
#define KV__ENGINE_FRONTEND_OPTION(T)                                                        \
	{ .name = "frontend_overhead", .type = KV_OPT_NS,                                    \
	  .offset = offsetof(T, base.frontend_ns), .def = 0, .min = 0, .max = 60e9,          \
	  .units = "ns", .help = "per-request front-end cost (API server, tokenisation, detokenisation, streaming) added to TTFT and E2E; no solid published figure: 0" }
#define KV__ENGINE_BASE_OPTIONS(T, gemm_def)                                                 \
	KV__ENGINE_FRONTEND_OPTION(T),                                                       \
	{ .name = "prefix_caching", .type = KV_OPT_BOOL,                                     \
	  .offset = offsetof(T, base.prefix_caching), .def = 1, .min = 0, .max = 1,          \
	  .units = "", .help = "keep freed blocks' hashes and reuse them until evicted LRU (cache full or shared)" }, \
	{ .name = "block_size", .type = KV_OPT_U64, .offset = offsetof(T, base.block_tokens), \
	  .def = 16, .min = 1, .max = 1 << 16, .units = "tokens",                            \
	  .help = "tokens per KV block of the prefix cache" },                               \
	{ .name = "gemm_half_tokens", .type = KV_OPT_DBL,                                    \
	  .offset = offsetof(T, base.gemm_half_tokens), .def = gemm_def, .min = 0, .max = 1e6, \
	  .units = "tokens", .help = "GEMM ramp: batches with prefill compute as if n_half more tokens ran (assumed, not fitted)" }, \
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
#define KV__ENGINE_COMM_OPTIONS(T, car_def)                                                  \
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
	  .def = 0, .min = 0, .max = 1e9, .units = "ns",                                     \
	  .help = "per-step cost of broadcasting the scheduler output to the workers and gathering the result (multi-GPU replicas); not measured apart: 0" }, \
	{ .name = "ray_step_overhead", .type = KV_OPT_NS, .offset = offsetof(T, base.ray_step_ns), \
	  .def = 274000, .min = 0, .max = 1e9, .units = "ns",                                \
	  .help = "added per step by executor ray: 0.27 ms, vLLM PR 11107 (V1 Ray vs mp, Llama-3.1-8B TP2)" }

extern const char *const kv__engine_car_names[];
extern const char *const kv__engine_executor_names[];

void kv__engine_base_init(const struct kv__engine_base *b, struct kv_replica *r);
void kv__engine_base_perf(const struct kv__engine_base *b, struct kv_perf *pf);
/* Requests ended in the whole run, plus one (never 0): the admission guards' clock. */
uint64_t kv__engine_ended(const struct kv_sim *s);
/* The prefix cache to run instead of c's model, or NULL (serving.h cache hook). */
const struct kv_cache_ops *kv__engine_base_cache(const struct kv__engine_base *b,
						 const struct kv_sim_config *c, void **opts);

#endif /* KV_SERVING_IMPL_H */
