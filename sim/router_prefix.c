/*
 * router_prefix.c -- the prefix-load router: each replica is scored by the
 * arrival's cached prefix on it against its load, the least cost wins
 * (ties: the lowest index).  docs/cluster.md "KV-aware routing" derives it.
 *
 *   mode tokens (default), a linear cost in tokens of work:
 *     cost_r = prefix_weight * (P - c_r) + outstanding_weight * O_r
 *            + queue_weight * Q_r + kv_weight * U_r
 *   P the prompt, c_r its cached prefix on r (tokens: leading blocks held x
 *   block tokens, at most P - 1), O_r r's outstanding tokens, Q_r its
 *   requests routed and not running, U_r its KV utilisation (pool bytes in
 *   use less the evictable, over the pool).  The weighted sum of llm-d's
 *   scorers (prefix-cache, queue, kv-cache-utilization) in one unit.
 *   mode dynamo, NVIDIA Dynamo's KV router cost
 *   (https://docs.nvidia.com/dynamo/design-docs/router-design):
 *     cost_r = prefix_weight * (P - c_r) / b + (A_r + P + T) / b
 *   prefill blocks to compute plus potential active blocks, b =
 *   block_tokens, A_r the tokens (prompt + output) of the requests routed
 *   to r and not ended, T the arrival's output: counted from routing, as
 *   Dynamo's router counts a request's blocks when it routes it, at their
 *   final length (Dynamo grows them as tokens are generated).
 *   mode llm-d, the weighted sum of llm-d's scorers, the highest wins
 *   (gateway-api-inference-extension pkg/epp/scheduling/framework/plugins:
 *   multi/prefix/plugin.go, scorer/queue.go, scorer/kvcache_utilization.go):
 *     score_r = prefix_weight * m_r / n + queue_weight * (Qmax - Q_r) / (Qmax - Qmin)
 *             + kv_weight * (1 - U_r)
 *   m_r of the arrival's n blocks cached on r; the queue term is 1 when
 *   every queue is equal.
 *
 * The cached prefix is exact: the router keeps the cluster's block index
 * (kvindex.h) from the cache models' KV events, and walks the arrival's
 * block keys (cache.h prefix_keys) once; only replicas holding its first
 * block are candidates.  In tokens mode without queue and KV terms the
 * other replicas' cost is prefix_weight * P + outstanding_weight * O_r, so
 * the least of them is the root of the engine's tree of outstanding tokens
 * (from 64 replicas in a single group; lowest index on ties, as a scan):
 * an arrival costs O(candidates + blocks walked), not O(replicas).
 * Otherwise it scans every replica of its range, which the engine brings up
 * first (a single group split into prefill and decode replicas: the
 * prefill ones, each brought up here, the engine keeping the tree).  A replica an autoscaler holds
 * off, starting or draining (autoscale.h) is never picked.
 */
#include "kvindex.h"
#include "replica.h"

#include <stddef.h>
#include <stdlib.h>

enum { MODE_TOKENS, MODE_DYNAMO, MODE_LLMD };

struct prefix_load {
	struct kv_kvindex ix; /* the cluster's block index (first: tests read it) */
	int mode; /* option: MODE_TOKENS (default) or MODE_DYNAMO */
	double prefix_weight; /* option: tokens mode, per prompt token to compute; dynamo, overlap_score_weight; default 1 */
	double outstanding_weight; /* option: per outstanding token, default 1 */
	double queue_weight; /* option: tokens per request routed and not running, default 0 */
	double kv_weight; /* option: tokens per unit of KV utilisation, default 0 */
	uint64_t block_tokens; /* option: dynamo mode's KV block, tokens, default 16 */
	int verify; /* option: check the index against every replica's cache at each arrival, default off */
	uint64_t *keys; /* the arrival's block keys, max_keys */
	uint32_t max_keys; /* the longest context in tokens, + 1: a bound on blocks */
	uint32_t *cand; /* n_rep: replicas holding the first block */
	uint64_t *active; /* n_rep: prompt + output tokens of the requests routed there, not ended */
	int tree; /* the least outstanding view is the tree's root */
	uint32_t *due; /* n_rep (tree mode): replicas of a range whose view may be the least */
};

static const char *const mode_names[] = { "tokens", "dynamo", "llm-d", NULL };

static const struct kv_option prefix_options[] = {
	{ "mode", KV_OPT_ENUM, offsetof(struct prefix_load, mode), MODE_TOKENS, 0, 0, "",
	  "tokens: the weighted cost in tokens; dynamo: NVIDIA Dynamo's prefix_weight x prefill blocks + active blocks; llm-d: the weighted sum of llm-d's normalised scorers (highest wins)",
	  mode_names },
	{ "prefix_weight", KV_OPT_DBL, offsetof(struct prefix_load, prefix_weight), 1, 0, 1e6,
	  "", "weight of the prompt tokens left to compute (dynamo: overlap_score_weight, its default 1)", NULL },
	{ "outstanding_weight", KV_OPT_DBL, offsetof(struct prefix_load, outstanding_weight), 1, 0,
	  1e6, "", "weight of the replica's outstanding (unprocessed) tokens (tokens mode)", NULL },
	{ "queue_weight", KV_OPT_DBL, offsetof(struct prefix_load, queue_weight), 0, 0, 1e9,
	  "tokens", "cost of each request routed to the replica and not running (tokens mode)", NULL },
	{ "kv_weight", KV_OPT_DBL, offsetof(struct prefix_load, kv_weight), 0, 0, 1e12, "tokens",
	  "cost of a full KV cache, scaled by its utilisation (tokens mode)", NULL },
	{ "block_tokens", KV_OPT_U64, offsetof(struct prefix_load, block_tokens), 16, 1, 1 << 20,
	  "tokens", "KV block of the dynamo mode's block counts (vLLM's default block)", NULL },
	{ "verify", KV_OPT_BOOL, offsetof(struct prefix_load, verify), 0, 0, 1, "",
	  "check the block index against every replica's cache at each arrival (slow: tests)", NULL },
	{ NULL },
};

static int pl_init(void *priv, struct kv_sim *s, struct kv_diag *d)
{
	struct prefix_load *p = priv;
	const struct kv_sim_config *c = s->cfg;
	uint64_t ctx = KV_MAX(c->model.max_ctx_tokens, c->max_context_tokens);
	uint32_t i;

	(void)d;
	for (i = 0; i < c->n_groups; i++) /* the longest context any group serves */
		ctx = KV_MAX(ctx, KV_MAX(c->groups[i].model.max_ctx_tokens,
					 c->groups[i].max_context_tokens));
	kv_kvindex_init(&p->ix, s->n_rep);
	p->max_keys = (uint32_t)KV_MIN(ctx + 1, (uint64_t)1 << 24);
	p->keys = kv_xmalloc(p->max_keys * sizeof(*p->keys));
	p->cand = kv_xmalloc(s->n_rep * sizeof(*p->cand));
	p->active = kv_xcalloc(s->n_rep, sizeof(*p->active));
	p->due = kv_xmalloc(s->n_rep * sizeof(*p->due));
	if (p->mode == MODE_DYNAMO) {
		s->route_flags = KV_PLUGIN_F_ROUTE_BLIND; /* its own counts only */
	} else if (p->mode == MODE_TOKENS && p->queue_weight == 0 && p->kv_weight == 0) {
		s->route_flags = KV_PLUGIN_F_ROUTE_OUTSTANDING | KV_PLUGIN_F_ROUTE_LEAST;
		p->tree = s->n_rep >= KV_ROUTE_TREE_MIN_REPLICAS && c->n_groups <= 1; /* engine.c's rule */
	} else {
		s->route_flags = 0; /* reads queues, pools: every replica brought up */
	}
	return 0;
}

static void pl_fini(void *priv)
{
	struct prefix_load *p = priv;

	kv_kvindex_release(&p->ix);
	free(p->keys);
	free(p->cand);
	free(p->active);
	free(p->due);
}

static void pl_on_end(void *priv, uint32_t replica, const struct kv_req *q)
{
	struct prefix_load *p = priv;

	p->active[replica] -= q->prompt_tokens + q->output_tokens;
}

/*
 * A KV event into the index.  A key of KV_BLOCK_OWN is left out: keyed by
 * its request's id (ids are unique in a run), it can match only that
 * request's walk, and a request is routed once, at its arrival, before any
 * replica holds anything of it (preemption, the disaggregated hand-off,
 * tier loads and a session's later turns, which have ids of their own,
 * never route it again).  So every walk's depths, hence every pick, are
 * those of the full index, and the index skips millions of keys.
 */
static void pl_on_block(void *ctx, uint32_t replica, uint64_t key, int held)
{
	struct prefix_load *p = ctx;

	if (held & KV_BLOCK_OWN)
		return;
	if (held)
		kv_kvindex_add(&p->ix, key, replica);
	else
		kv_kvindex_remove(&p->ix, key, replica);
}

/* Requests routed to r and not running: its queue (vLLM's num_requests_waiting). */
static uint64_t queued(const struct kv_replica *r)
{
	return r->n_assigned - r->n_running;
}

/* Replica r's KV utilisation: pool bytes in use, the evictable cached ones not counted. */
static double kv_util(const struct kv_replica *r)
{
	uint64_t used = r->pool.size_bytes - r->pool.free_bytes;
	uint64_t ev = r->cache->evictable_bytes ? r->cache->evictable_bytes(r->cache_priv) : 0;

	return r->pool.size_bytes ? (double)(used - KV_MIN(ev, used)) / (double)r->pool.size_bytes : 0;
}

/* Replica r's cost for q, of whose P prompt tokens c are cached there. */
static double cost(const struct prefix_load *p, const struct kv_replica *r,
		   const struct kv_req *q, uint64_t c)
{
	uint64_t P = q->prompt_tokens;
	double todo = (double)(P - c);

	if (p->mode == MODE_DYNAMO) {
		double b = (double)p->block_tokens;

		return p->prefix_weight * (todo / b) +
		       (double)(p->active[r->idx] + P + q->output_tokens) / b;
	}
	return p->prefix_weight * todo + p->outstanding_weight * (double)r->outstanding_tokens +
	       (p->queue_weight ? p->queue_weight * (double)queued(r) : 0) +
	       (p->kv_weight ? p->kv_weight * kv_util(r) : 0);
}

/*
 * The llm-d mode's pick: the highest weighted score over every replica
 * (ties: the lowest index); the queue term is normalised over the cluster,
 * so every replica of [lo, hi) is read.  n: the arrival's blocks walked.
 */
static uint32_t pick_llmd(struct prefix_load *p, struct kv_sim *s, uint32_t n, uint32_t lo,
			  uint32_t hi)
{
	uint64_t qmin = UINT64_MAX, qmax = 0;
	uint32_t r, best = KV_NIL;
	double bs = 0;

	for (r = lo; r < hi; r++) {
		if (!kv_rep_routable(s, r))
			continue;
		qmin = KV_MIN(qmin, queued(&s->rep[r]));
		qmax = KV_MAX(qmax, queued(&s->rep[r]));
	}
	for (r = lo; r < hi; r++) {
		const struct kv_replica *rp = &s->rep[r];
		double sc;

		if (!kv_rep_routable(s, r))
			continue;
		sc = (n ? p->prefix_weight * kv_kvindex_depth(&p->ix, r) / n : 0) +
			    p->queue_weight * (qmax == qmin ? 1.0 : (double)(qmax - queued(rp)) /
									 (double)(qmax - qmin)) +
			    p->kv_weight * (1 - kv_util(rp));

		if (best == KV_NIL || sc > bs) {
			best = r;
			bs = sc;
		}
	}
	return best;
}

/* Whether (c, i) beats the best so far (*bc, *bi): less cost, or equal and a lower index. */
static int better(double c, uint32_t i, double bc, uint32_t bi)
{
	return bi == KV_NIL || c < bc || (c == bc && i < bi);
}

/* Brings up r's outstanding view at this arrival (the engine brought up only the least). */
static void view_up(struct kv_sim *s, uint32_t r)
{
	if (s->macro && s->macro_onext[r] <= s->now)
		kv__macro_sync_outstanding(&s->rep[r], &s->ev);
}

/*
 * Checks the index against a walk of each replica's own cache (the
 * verify option): the leading blocks held must agree everywhere.
 */
static void verify(const struct prefix_load *p, const struct kv_sim *s, const struct kv_req *q,
		   uint64_t B, uint32_t lo, uint32_t hi)
{
	uint32_t r;

	for (r = lo; r < hi; r++) {
		const struct kv_replica *rp = &s->rep[r];
		uint32_t m = rp->cache->prefix_cached ? rp->cache->prefix_cached(rp->cache_priv, q) : 0;

		KV_CHECK(m == kv_kvindex_depth(&p->ix, r),
			 "prefix-load: request %llu has %u blocks of %llu tokens cached on replica %u, the index says %u",
			 (unsigned long long)q->id, m, (unsigned long long)B, r,
			 kv_kvindex_depth(&p->ix, r));
	}
}

/*
 * The lowest routable replica index in [lo, hi) that is not a candidate of
 * the last walk (hi: none).
 */
static uint32_t first_other(const struct prefix_load *p, const struct kv_sim *s, uint32_t lo,
			    uint32_t hi)
{
	uint32_t i = lo;

	while (i < hi && (kv_kvindex_depth(&p->ix, i) || !kv_rep_routable(s, i)))
		i++;
	return i;
}

/* The least cost so far: the replica (KV_NIL: none yet) and its cost. */
struct best {
	uint32_t r;
	double cost;
};

/* Scores replica r for q unless an autoscaler holds it off, starting or draining; keeps the least. */
static void consider(const struct prefix_load *p, const struct kv_sim *s, const struct kv_req *q,
		     uint64_t B, uint32_t r, struct best *b)
{
	double c;

	if (!kv_rep_routable(s, r))
		return;
	c = cost(p, &s->rep[r], q, kv_kvindex_depth(&p->ix, r) * B);
	if (better(c, r, b->cost, b->r)) {
		b->r = r;
		b->cost = c;
	}
}

/*
 * The least outstanding view among replicas [lo, hi), the lowest index
 * among equals.  The whole cluster: the tree's root (the engine brought up
 * every view that could be least).  A range of it (a disaggregated
 * group's prefill replicas), as the engine does for the cluster (engine.c
 * sync_route): a view not brought up is at least its true count, so the
 * range's least tree key is a bound; a replica whose true count could
 * reach it has its lower bound (low_tree) at or under it and is brought
 * up; then the range's least key is exact.  O(log replicas + those
 * brought up) instead of a scan of the range.
 */
static uint32_t least_view(struct prefix_load *p, struct kv_sim *s, uint32_t lo, uint32_t hi)
{
	uint32_t i, n, r;

	if (hi - lo == s->n_rep)
		return kv_mintree_min(&s->out_tree);
	r = kv_mintree_range_min(&s->out_tree, lo, hi);
	n = kv_mintree_at_most_in(&s->low_tree, s->out_tree.key[r], lo, hi, p->due);
	for (i = 0; i < n; i++)
		view_up(s, p->due[i]);
	return kv_mintree_range_min(&s->out_tree, lo, hi);
}

/*
 * The least-cost replica of [lo, hi) in tree mode: the walk's candidates,
 * each brought up and scored, and the least view among the range, which
 * is the best of the others (their costs differ by outstanding_weight
 * times their views alone) or a candidate that beats them all.
 */
static uint32_t pick_tree(struct prefix_load *p, struct kv_sim *s, const struct kv_req *q,
			  uint64_t B, uint32_t nc, uint32_t lo, uint32_t hi)
{
	struct best b = { KV_NIL, 0 };
	uint32_t i, r0;

	for (i = 0; i < nc; i++)
		view_up(s, p->cand[i]);
	/* the other replicas' cost grows with O_r: the least view (or the lowest index) wins among them */
	r0 = p->outstanding_weight > 0 ? least_view(p, s, lo, hi) : first_other(p, s, lo, hi);
	if (r0 < hi)
		consider(p, s, q, B, r0, &b);
	for (i = 0; i < nc; i++)
		consider(p, s, q, B, p->cand[i], &b);
	return b.r;
}

/*
 * pick_scan's loop in tree mode (tokens, no queue or KV term): the tree's
 * keys are the routable replicas' outstanding counts, kept equal to them
 * at every write (replica.h kv__out_changed), so the
 * scan reads three flat arrays instead of each replica's record (a miss
 * per replica of a large range); the same costs, the same order, the
 * same pick.
 */
static uint32_t scan_tree_keys(const struct prefix_load *p, struct kv_sim *s,
			       const struct kv_req *q, uint64_t B, uint32_t lo, uint32_t hi)
{
	const uint64_t *out = s->out_tree.key;
	struct best b = { KV_NIL, 0 };
	uint64_t P = q->prompt_tokens;
	uint32_t r;

	for (r = lo; r < hi; r++) {
		double c;

		view_up(s, r); /* the engine brought up the least view only */
		if (!kv_rep_routable(s, r))
			continue;
		c = p->prefix_weight * (double)(P - kv_kvindex_depth(&p->ix, r) * B) +
		    p->outstanding_weight * (double)out[r];
		if (better(c, r, b.cost, b.r)) {
			b.r = r;
			b.cost = c;
		}
	}
	return b.r;
}

/* The least-cost replica of [lo, hi), read one by one. */
static uint32_t pick_scan(struct prefix_load *p, struct kv_sim *s, const struct kv_req *q,
			  uint64_t B, uint32_t nc, uint32_t lo, uint32_t hi)
{
	struct best b = { KV_NIL, 0 };
	uint32_t r;

	if (p->tree) {
		uint32_t pick = pick_tree(p, s, q, B, nc, lo, hi);

		if (p->verify) { /* the tests: the scan must agree */
			uint32_t rs = scan_tree_keys(p, s, q, B, lo, hi);

			KV_CHECK(rs == pick, "prefix-load: request %llu: the range pick %u, the scan %u",
				 (unsigned long long)q->id, pick, rs);
		}
		return pick;
	}
	for (r = lo; r < hi; r++)
		consider(p, s, q, B, r, &b);
	return b.r;
}

/*
 * Picks q's replica in [lo, hi), its group's (the engine chose the group).
 * The walk's candidates outside the range hold the same blocks for another
 * group: they are not scored.  The tree path serves a single group, where
 * [lo, hi) is every replica.
 */
static uint32_t pl_pick(struct kv_sim *s, const struct kv_req *q, uint32_t lo, uint32_t hi,
			uint64_t *state)
{
	struct prefix_load *p = s->router_priv;
	const struct kv_replica *r0 = &s->rep[lo]; /* the group's cache model keys its blocks */
	uint64_t B = 0;
	uint32_t n = 0, nc, r;

	(void)state;
	if (r0->cache->prefix_keys && q->prompt_tokens)
		n = r0->cache->prefix_keys(r0->cache_priv, q, p->keys, p->max_keys, &B);
	nc = kv_kvindex_walk(&p->ix, p->keys, n, lo, hi, p->cand);
	if (p->verify)
		verify(p, s, q, B, lo, hi);
	if (p->mode == MODE_LLMD)
		r = pick_llmd(p, s, n, lo, hi);
	else
		r = p->tree && hi - lo == s->n_rep ? pick_tree(p, s, q, B, nc, 0, s->n_rep)
						    : pick_scan(p, s, q, B, nc, lo, hi);
	p->active[r] += q->prompt_tokens + q->output_tokens;
	return r;
}

const struct kv_router_ops kv_router_prefix = {
	.name = "prefix-load",
	.desc = "least cost = prefix_weight * (prompt - cached prefix) + outstanding_weight * outstanding + queue_weight * queued + kv_weight * KV use (mode dynamo: w * prefill blocks + active blocks); exact cached prefixes from the replicas' KV events",
	.priv_size = sizeof(struct prefix_load),
	.options = prefix_options,
	.pick = pl_pick,
	.init = pl_init,
	.fini = pl_fini,
	.on_block = pl_on_block,
	.on_end = pl_on_end,
	.flags = KV_PLUGIN_F_ROUTE_OUTSTANDING | KV_PLUGIN_F_ROUTE_LEAST, /* init narrows or widens */
};
