/*
 * router.c -- cluster routers: which replica an arrival joins.
 *
 *   round-robin               replica = n mod R for the n-th arrival.
 *   least-outstanding-tokens  the replica with the fewest prompt + output
 *                             tokens assigned and not yet processed (ties:
 *                             lowest index); a join-the-shortest-queue policy
 *                             measured in work rather than requests.
 *                             From 64 replicas, read off the root of the
 *                             engine's tournament tree (mintree.h), kept as
 *                             the counts change; below, a scan.
 */
#include "replica.h"

static uint32_t rr_pick(struct kv_sim *s, const struct kv_req *q, uint64_t *state)
{
	(void)q;
	return (uint32_t)((*state)++ % s->n_rep);
}

static uint32_t lot_pick(struct kv_sim *s, const struct kv_req *q, uint64_t *state)
{
	uint32_t i, best = 0;

	(void)q;
	(void)state;
	if (s->out_tree.key) /* the engine's tournament tree: O(1), the scan's ties */
		return kv_mintree_min(&s->out_tree);
	for (i = 1; i < s->n_rep; i++)
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
	/* reads outstanding_tokens only: the least view */
	.flags = KV_PLUGIN_F_ROUTE_OUTSTANDING | KV_PLUGIN_F_ROUTE_LEAST,
};
