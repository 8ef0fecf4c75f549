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
	  .units = "tokens", .help = "GEMM ramp: batches with prefill compute as if n_half more tokens ran; 128 reproduces the chunking overhead Sarathi-Serve measures (docs/engines.md), which the serving rows of docs/fidelity.md cannot separate from eff_flops" }, \
	KV__ENGINE_EMBED_OPTION(T)
/* The embedding option alone (vllm-v0 takes it without the rest of the base). */
#define KV__ENGINE_EMBED_OPTION(T)                                                           \
	{ .name = "embed_lookup", .type = KV_OPT_BOOL,                                       \
	  .offset = offsetof(T, base.embed_lookup), .def = 1, .min = 0, .max = 1,            \
	  .units = "", .help = "do not charge the untied input-embedding table as a weight read each step (it is a gather; default); false: the legacy charge" }

void kv__engine_base_init(const struct kv__engine_base *b, struct kv_replica *r);
void kv__engine_base_perf(const struct kv__engine_base *b, struct kv_perf *pf);
/* Requests ended in the whole run, plus one (never 0): the admission guards' clock. */
uint64_t kv__engine_ended(const struct kv_sim *s);
/* The prefix cache to run instead of c's model, or NULL (serving.h cache hook). */
const struct kv_cache_ops *kv__engine_base_cache(const struct kv__engine_base *b,
						 const struct kv_sim_config *c, void **opts);

#endif /* KV_SERVING_IMPL_H */
