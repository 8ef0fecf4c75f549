/*
 * router.c -- cluster routers: which replica of its group an arrival joins
 * (the engine chose the group: engine.c route_group).  R is the group's
 * replica count, indices relative to its first.
 *
 *   round-robin               replica = n mod R for the group's n-th arrival.
 *   least-outstanding-tokens  the replica with the fewest prompt + output
 *                             tokens assigned and not yet processed (ties:
 *                             lowest index); a join-the-shortest-queue policy
 *                             measured in work rather than requests.
 *                             From 64 replicas in a single group, read off
 *                             the root of the engine's tournament tree
 *                             (mintree.h), kept as the counts change;
 *                             below, or with several groups, a scan of the
 *                             group's replicas.
 */
#include "replica.h"

static uint32_t rr_pick(struct kv_sim *s, const struct kv_req *q, uint32_t lo, uint32_t hi,
		       uint64_t *state)
{
	(void)s;
	(void)q;
	return lo + (uint32_t)((*state)++ % (hi - lo));
}

static uint32_t lot_pick(struct kv_sim *s, const struct kv_req *q, uint32_t lo, uint32_t hi,
			uint64_t *state)
{
	uint32_t i, best = lo;

	(void)q;
	(void)state;
	if (s->out_tree.key) /* the engine's tournament tree (one group: lo..hi is all): O(1), the scan's ties */
		return kv_mintree_min(&s->out_tree);
	for (i = lo + 1; i < hi; i++)
		if (s->rep[i].outstanding_tokens < s->rep[best].outstanding_tokens)
			best = i;
	return best;
}

const struct kv_router_ops kv_router_rr = {
	.name = "round-robin",
	.desc = "the n-th arrival goes to replica n mod R",
	.pick = rr_pick,
	.flags = KV_PLUGIN_F_ROUTE_BLIND,
};

const struct kv_router_ops kv_router_lot = {
	.name = "least-outstanding-tokens",
	.desc = "join the replica with the fewest unprocessed prompt+output tokens (ties: lowest index)",
	.pick = lot_pick,
	.flags = KV_PLUGIN_F_ROUTE_OUTSTANDING, /* reads outstanding_tokens only */
};
