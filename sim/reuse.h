/*
 * reuse.h -- prefix-reuse statistics of a request stream (a Mooncake trace's
 * hash_ids, or a session workload's generated ids), as `kvsim trace-stats`
 * prints them.
 *
 * Fed request by request in arrival order with its prompt length, arrival
 * time and prefix-block ids, it measures:
 *   - the share of prefix blocks seen before: sum over requests of the ids
 *     that some earlier request carried, over all ids (Mooncake's
 *     "X% of prefix blocks seen before", an infinite cache's block hit rate);
 *   - each request's reused share (its leading run of seen ids over its
 *     ids) and prompt length, as quantiles;
 *   - the prefix-chain structure: a request whose first k ids were seen
 *     (k >= 1) continues the latest request p that carried its k-th id (its
 *     parent) when k is at least half of p's ids; otherwise (k = 0, or a
 *     shared system prompt shorter than that) it starts a chain.  Without
 *     the half rule every request of a trace whose prompts open with one
 *     system prompt would join one chain (Mooncake's conversation trace).  Chains are sessions
 *     when turns extend one another: turns per chain, the gap from parent
 *     to child arrival, and the growth of the prompt over the parent's.
 * Memory grows with the distinct ids and the requests (an offline tool,
 * not the simulator's hot path).
 */
#ifndef KV_REUSE_H
#define KV_REUSE_H

#include "kv_common.h"

struct kv_reuse;

struct kv_reuse *kv_reuse_new(void);
void kv_reuse_free(struct kv_reuse *r); /* NULL: no-op */

/*
 * One request, in arrival order: t_ns, prompt and output tokens, its n
 * prefix-block ids.  Returns its chain: the index (0, 1, ... in the order
 * added) of the chain's first request; *depth its place in the chain (0 first).
 */
uint32_t kv_reuse_add(struct kv_reuse *r, kv_ns t_ns, uint64_t prompt_tokens,
		      uint64_t output_tokens, const uint64_t *ids, uint32_t n, uint32_t *depth);

/* The figures, by name (kv_reuse_names[]), after the last request. */
struct kv_reuse_stats {
	uint64_t requests, blocks, blocks_seen; /* requests; ids; ids seen before */
	double seen_share; /* blocks_seen / blocks */
	double requests_reusing; /* share of requests with a leading seen id */
	double reuse_mean, reuse_p50, reuse_p90; /* per-request leading reused share */
	double prompt_mean, prompt_p50, prompt_p90, prompt_p99; /* tokens */
	double output_mean, output_p50; /* tokens */
	uint64_t chains; /* chains (requests with no seen leading id) */
	double multi_share; /* share of chains with two or more requests */
	double turns_mean, turns_multi_mean, turns_p90; /* requests per chain; per chain of two or more */
	uint64_t turns_max;
	double first_mean, first_p50; /* prompt tokens of chains' first requests */
	double gap_mean_s, gap_p50_s, gap_p90_s; /* parent -> child arrival, seconds */
	double growth_p50; /* prompt - parent prompt, tokens (median) */
};
void kv_reuse_stats(struct kv_reuse *r, struct kv_reuse_stats *st);

#endif /* KV_REUSE_H */
