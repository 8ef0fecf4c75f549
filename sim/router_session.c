/*
 * router_session.c -- session affinity: a session's later turns go to the
 * replica that served its first turn, where its earlier turns' prefix
 * blocks are cached; a first turn, a request outside a session, and a turn
 * whose home replica is no longer available go where
 * least-outstanding-tokens sends them.
 *
 *   replica(q) = home(session(q))   if q is a later turn and its home serves
 *              = argmin_i outstanding_tokens(i)   otherwise (lowest index on ties)
 *
 * With replica groups the router picks within the group the engine chose
 * (replicas lo..hi), and the engine keeps a session's later turns in its
 * home's group.  The home is recorded by the engine when a session's first turn is routed
 * (session.h kv_sessions_set_home) and kept for the session's life; on a
 * replayed trace with workload.arrival.sessions: prefix-chains, a request's
 * session is its prefix chain (reuse.h: the requests whose leading blocks
 * continue one another) and the home is that of the chain's first request.  This
 * is the sticky-session policy of llm-d's inference scheduler (session
 * affinity scorer: a session token in the request pins it to the endpoint
 * that served the session, https://llm-d.ai/docs/architecture/Components/inf-scheduler)
 * and of Dynamo's router (dynamo-llm src/session_affinity: a session id
 * bound to a worker, https://docs.rs/crate/dynamo-llm/1.4.0/source/src/session_affinity/coordinator.rs),
 * with load alone deciding the first placement.  Affinity ignores load:
 * a long session keeps its replica however busy it is (the prefix-aware
 * routers weigh the two).
 */
#include "replica.h"

extern const struct kv_router_ops kv_router_lot; /* router.c: the fallback */

/*
 * Whether replica i of the group's range [lo, hi) can take a session's
 * turn: it is in the range (the engine keeps a session's turns in its home's
 * group; a home outside means the group no longer serves it) and an
 * autoscaler does not hold it off, starting or draining (autoscale.h).
 */
static int serves(const struct kv_sim *s, uint32_t i, uint32_t lo, uint32_t hi)
{
	return i >= lo && i < hi && kv_rep_routable(s, i);
}

static uint32_t session_pick(struct kv_sim *s, const struct kv_req *q, uint32_t lo, uint32_t hi,
			     uint64_t *state)
{
	uint32_t home = kv_session_home(s, q);

	if (home != KV_NIL && serves(s, home, lo, hi))
		return home;
	return kv_router_lot.pick(s, q, lo, hi, state);
}

const struct kv_router_ops kv_router_session = {
	.name = "session-affinity",
	.desc = "a session's later turns join the replica of its first turn; first turns and lone requests go to the fewest outstanding tokens (llm-d, Dynamo session affinity)",
	.pick = session_pick,
	.flags = KV_PLUGIN_F_ROUTE_OUTSTANDING, /* reads outstanding_tokens (the fallback) only */
};
