/*
 * router.c -- cluster routers: which replica an arrival joins.
 *
 *   round-robin               replica = n mod R for the n-th arrival.
 *   least-outstanding-tokens  the replica with the fewest prompt + output
 *                             tokens assigned and not yet processed (ties:
 *                             lowest index); a join-the-shortest-queue policy
 *                             measured in work rather than requests.
 *                             Read off the root of the engine's tournament
 *                             tree (mintree.h), kept as the counts change.
 */
#include "engine.h"

static uint32_t rr_pick(struct kv_sim *s, const struct kv_req *q, uint64_t *state)
{
	(void)q;
	return (uint32_t)((*state)++ % s->n_rep);
}

static uint32_t lot_pick(struct kv_sim *s, const struct kv_req *q, uint64_t *state)
{
	(void)q;
	(void)state;
	/* the engine's tournament tree over outstanding_tokens: O(1), same ties as a scan */
	return kv_mintree_min(&s->out_tree);
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
