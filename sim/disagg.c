/*
 * disagg.c -- prefill/decode disaggregation: placement of a prefilled
 * request on a decode replica, its KV transfer, and the hand-over when the
 * transfer arrives (disagg.h has the model and its invariants).
 */
#include "disagg.h"
#include "autoscale.h"
#include "replica.h"

#include <assert.h>
#include <stdlib.h>
#include <string.h>

const char *const kv_xfer_topo_names[] = { "prefill", "pair", "shared", NULL };
const char *const kv_place_names[] = { "least-kv", "round-robin", NULL };

/* Links a prefill group of n_p replicas and n_d decode candidates has. */
static uint32_t links_of(enum kv_xfer_topo t, uint32_t n_p, uint32_t n_d)
{
	return t == KV_XFER_SHARED ? 1 : t == KV_XFER_PAIR ? n_p * n_d : n_p;
}

/* Resolves pg's settings from c (0 bandwidth and unset latency: the defaults). */
static void resolve(struct kv_pd_group *pg, const struct kv_sim_config *c, uint64_t token_bytes)
{
	pg->x = c->xfer;
	if (!pg->x.bw_bytes_s)
		pg->x.bw_bytes_s = KV_XFER_DEFAULT_BW_BYTES_S;
	if (!pg->x.has_latency)
		pg->x.latency_ns = KV_XFER_DEFAULT_LATENCY_NS;
	pg->pieces = pg->x.layerwise && c->model.layers > 1 ? c->model.layers : 1;
	pg->token_bytes = token_bytes;
}

/* Makes pg's links (from pd->n_link) and marks its replicas prefill-only. */
static void group_links(struct kv_sim *s, struct kv_disagg *pd, struct kv_pd_group *pg)
{
	uint32_t i, n = links_of(pg->x.topo, pg->count, pg->n_dec);

	pg->link0 = pd->n_link;
	pg->n_link = n;
	pd->link = kv_xrealloc(pd->link, (size_t)(pd->n_link + n) * sizeof(*pd->link));
	for (i = 0; i < n; i++)
		kv_kvlink_init(&pd->link[pd->n_link + i], pg->x.bw_bytes_s, pg->x.latency_ns, 4);
	pd->n_link += n;
	for (i = pg->first; i < pg->first + pg->count; i++) {
		pd->pg_of[i] = (uint32_t)(pg - pd->pg);
		s->rep[i].prefill_only = 1;
		s->rep[i].macro.ok = 0; /* no decode steps: nothing to run at once */
	}
}

/* A new, empty disaggregation state for n prefill groups. */
static struct kv_disagg *pd_new(struct kv_sim *s, uint32_t n)
{
	struct kv_disagg *pd = kv_xcalloc(1, sizeof(*pd));
	uint32_t i;

	pd->pg = kv_xcalloc(n, sizeof(*pd->pg));
	pd->pg_of = kv_xmalloc(s->n_rep * sizeof(*pd->pg_of));
	for (i = 0; i < s->n_rep; i++)
		pd->pg_of[i] = UINT32_MAX;
	return pd;
}

/*
 * The single group split by cfg->pd_prefill: replicas [0, N) prefill,
 * the rest decode.
 */
static int plan_split(struct kv_sim *s)
{
	const struct kv_sim_config *c = s->cfg;
	struct kv_pd_group *pg;
	uint32_t i;

	if (c->pd_prefill >= s->n_rep)
		return kv_diag_set(&s->diag, KV_EINVAL, "", 0, 0, "cluster.prefill_replicas",
				   "%u of %u replicas prefill: expected at least one decode replica",
				   c->pd_prefill, s->n_rep);
	s->pd = pd_new(s, 1);
	pg = &s->pd->pg[s->pd->n_pg++];
	pg->name = "prefill";
	pg->dec_name = "decode";
	pg->first = 0;
	pg->count = c->pd_prefill;
	pg->dec = kv_xmalloc((s->n_rep - pg->count) * sizeof(*pg->dec));
	for (i = pg->count; i < s->n_rep; i++)
		pg->dec[pg->n_dec++] = i;
	resolve(pg, c, s->grp[0].token_bytes);
	group_links(s, s->pd, pg);
	return 0;
}

/* Lists the replicas of the decode groups serving g's model into pg->dec; 0 or KV_EINVAL. */
static int find_decoders(struct kv_sim *s, const struct kv_group *g, struct kv_pd_group *pg)
{
	uint32_t i, j;

	pg->dec = kv_xmalloc((size_t)s->n_rep * sizeof(*pg->dec));
	for (i = 0; i < s->n_grp; i++) {
		const struct kv_group *h = &s->grp[i];

		if (h->cfg->role != KV_ROLE_DECODE || strcmp(h->cfg->model.name, g->cfg->model.name))
			continue;
		if (!pg->n_dec)
			pg->dec_name = h->cfg->group_name;
		for (j = h->first; j < h->first + h->count; j++)
			pg->dec[pg->n_dec++] = j;
	}
	if (pg->n_dec)
		return 0;
	return kv_diag_set(&s->diag, KV_EINVAL, "", 0, 0, "cluster.groups.role",
			   "group '%s' prefills %s but no decode group serves that model: expected a group with role: decode and model: %s",
			   g->cfg->group_name, g->cfg->model.name, g->cfg->model.name);
}

/* The groups with the prefill role, each sending to the decode groups of its model. */
static int plan_groups(struct kv_sim *s)
{
	uint32_t i, n = 0;
	int rc;

	for (i = 0; i < s->n_grp; i++)
		n += s->grp[i].cfg->role == KV_ROLE_PREFILL;
	if (!n)
		return 0;
	s->pd = pd_new(s, n);
	for (i = 0; i < s->n_grp; i++) {
		const struct kv_group *g = &s->grp[i];
		struct kv_pd_group *pg;

		if (g->cfg->role != KV_ROLE_PREFILL)
			continue;
		pg = &s->pd->pg[s->pd->n_pg++];
		pg->name = g->cfg->group_name;
		pg->first = g->first;
		pg->count = g->count;
		if ((rc = find_decoders(s, g, pg)))
			return rc;
		resolve(pg, g->cfg, g->token_bytes);
		group_links(s, s->pd, pg);
	}
	return 0;
}

int kv__disagg_init(struct kv_sim *s)
{
	if (s->cfg->pd_prefill && !s->cfg->n_groups) /* with groups, roles say it */
		return plan_split(s);
	return plan_groups(s);
}

void kv__disagg_release(struct kv_sim *s)
{
	struct kv_disagg *pd = s->pd;
	uint32_t i;

	if (!pd)
		return;
	for (i = 0; i < pd->n_link; i++)
		kv_kvlink_release(&pd->link[i]);
	for (i = 0; i < pd->n_pg; i++)
		free(pd->pg[i].dec);
	for (i = 0; i < pd->n_tree; i++)
		kv_mintree_release(&pd->tree[i]);
	for (i = 0; pd->tree_of && i < s->n_rep; i++)
		if (pd->tree_of[i] != UINT32_MAX)
			s->rep[i].pool.watch = NULL;
	free(pd->tree);
	free(pd->tree_of);
	free(pd->pos_of);
	free(pd->watch.id);
	free(pd->link);
	free(pd->pg);
	free(pd->pg_of);
	free(pd);
	s->pd = NULL;
}

/* Decode replica d's load for least-kv: (reserved + inbound bytes) / pool bytes. */
static double kv_load(const struct kv_replica *d)
{
	double used = (double)(d->pool.size_bytes - d->pool.free_bytes) + (double)d->inbound_bytes;

	return d->pool.size_bytes ? used / (double)d->pool.size_bytes : 0.0;
}

/* d's least-kv load as a tree key: a non-negative double's bits order as the double. */
static uint64_t load_key(const struct kv_replica *d)
{
	double load = kv_load(d);
	uint64_t key;

	memcpy(&key, &load, sizeof(key));
	return key;
}

/* Sets d's key in its tree to its load now (pending macro steps not applied: a lower bound). */
static void key_now(struct kv_disagg *pd, const struct kv_replica *d)
{
	kv_mintree_set(&pd->tree[pd->tree_of[d->idx]], pd->pos_of[d->idx], load_key(d));
}

/*
 * Gives pg's candidates a tree of their own, or the one an earlier group
 * sending to the same list made (a decode group serves one model: lists
 * are equal or disjoint); a list that overlaps another otherwise keeps
 * the scan (pg->tree UINT32_MAX).
 */
static void tree_for(struct kv_sim *s, struct kv_pd_group *pg)
{
	struct kv_disagg *pd = s->pd;
	uint32_t j, t = pd->tree_of[pg->dec[0]];

	if (t != UINT32_MAX) {
		int same = pd->tree[t].n == pg->n_dec;

		for (j = 0; same && j < pg->n_dec; j++)
			same = pd->tree_of[pg->dec[j]] == t && pd->pos_of[pg->dec[j]] == j;
		pg->tree = same ? t : UINT32_MAX;
		return;
	}
	for (j = 0; j < pg->n_dec; j++)
		if (pd->tree_of[pg->dec[j]] != UINT32_MAX)
			return; /* overlaps another list: scans */
	t = pg->tree = pd->n_tree++;
	kv_mintree_init(&pd->tree[t], pg->n_dec, 0);
	for (j = 0; j < pg->n_dec; j++) {
		struct kv_replica *d = &s->rep[pg->dec[j]];

		pd->tree_of[d->idx] = t;
		pd->pos_of[d->idx] = j;
		d->pool.watch = &pd->watch;
		d->pool.watch_id = d->idx;
		d->pool.watch_listed = 0;
		key_now(pd, d);
	}
}

/*
 * At the first placement (autoscaling is set up by then): the least-kv
 * groups' trees, unless an autoscaler may take candidates out (then every
 * placement scans).
 */
static void trees_set(struct kv_sim *s)
{
	struct kv_disagg *pd = s->pd;
	uint32_t i;

	pd->trees_set = 1;
	for (i = 0; i < pd->n_pg; i++)
		pd->pg[i].tree = UINT32_MAX;
	if (s->rep_state)
		return;
	pd->tree = kv_xcalloc(pd->n_pg, sizeof(*pd->tree));
	pd->tree_of = kv_xmalloc(s->n_rep * sizeof(*pd->tree_of));
	pd->pos_of = kv_xmalloc(s->n_rep * sizeof(*pd->pos_of));
	pd->watch.id = kv_xmalloc(s->n_rep * sizeof(*pd->watch.id));
	for (i = 0; i < s->n_rep; i++)
		pd->tree_of[i] = UINT32_MAX;
	for (i = 0; i < pd->n_pg; i++)
		if (pd->pg[i].x.place == KV_PLACE_LEAST_KV)
			tree_for(s, &pd->pg[i]);
}

/* Brings candidate d's pending macro steps up to the event being handled. */
static void bring_up(struct kv_sim *s, struct kv_replica *d)
{
	if (s->macro && s->macro_next[d->idx] <= s->ev.t_ns)
		kv__macro_sync(d, &s->ev);
}

/*
 * least-kv by a scan: every active candidate brought up and read (with
 * autoscaling; and to check the tree with cfg->check_pool).  A replica its
 * group's autoscaler holds off, starting (not yet warm) or draining is no
 * candidate (autoscale.h): a decode group keeps at least one active
 * replica, so one always is.
 */
static uint32_t place_scan(struct kv_sim *s, struct kv_pd_group *pg)
{
	uint32_t j, best = UINT32_MAX;
	double best_load = 0;

	for (j = 0; j < pg->n_dec; j++) {
		struct kv_replica *d = &s->rep[pg->dec[j]];
		double load;

		if (!kv_rep_routable(s, d->idx))
			continue;
		bring_up(s, d);
		load = kv_load(d);
		if (best == UINT32_MAX || load < best_load) {
			best = j;
			best_load = load;
		}
	}
	KV_CHECK(best != UINT32_MAX, "prefill group %s: no active decode replica", pg->name);
	return best;
}

/*
 * least-kv from pg's tree (disagg.h): first the bounds of the pools freed
 * since the last placement are lowered to their loads now, then the root
 * is brought up and read until its load is its bound.  Each candidate is
 * brought up at most once (its bound is then its load at this event).
 */
static uint32_t place_tree(struct kv_sim *s, struct kv_pd_group *pg)
{
	struct kv_disagg *pd = s->pd;
	struct kv_mintree *t = &pd->tree[pg->tree];
	uint32_t i;

	for (i = 0; i < pd->watch.n; i++) {
		struct kv_replica *d = &s->rep[pd->watch.id[i]];

		d->pool.watch_listed = 0;
		key_now(pd, d);
	}
	pd->watch.n = 0;
	for (;;) {
		uint32_t j = kv_mintree_min(t);
		struct kv_replica *d = &s->rep[pg->dec[j]];
		uint64_t key;

		bring_up(s, d);
		key = load_key(d);
		if (key == t->key[j])
			return j;
		KV_CHECK(key > t->key[j], "decode replica %u: load %g under its bound (key %llx)",
			 d->idx, kv_load(d), (unsigned long long)t->key[j]);
		kv_mintree_set(t, j, key);
	}
}

/*
 * The index in pg->dec of the decode replica q goes to: round-robin's
 * next active candidate, or least-kv's, as if every candidate's pending
 * macro steps were applied first (disagg.h).
 */
static uint32_t place(struct kv_sim *s, struct kv_pd_group *pg)
{
	uint32_t j;

	if (pg->x.place == KV_PLACE_ROUND_ROBIN) {
		do { /* the candidates in turn, skipping those autoscaling keeps out */
			j = pg->rr;
			pg->rr = (pg->rr + 1) % pg->n_dec;
		} while (!kv_rep_routable(s, pg->dec[j]));
		return j;
	}
	if (!s->pd->trees_set)
		trees_set(s);
	if (pg->tree == UINT32_MAX)
		return place_scan(s, pg);
	j = place_tree(s, pg);
	if (s->cfg->check_pool) { /* the tree's pick is the scan's */
		uint32_t k = place_scan(s, pg);

		KV_CHECK(j == k, "prefill group %s: least-kv's tree picks candidate %u, a scan %u",
			 pg->name, j, k);
	}
	return j;
}

/* The link a transfer from prefill replica p to candidate j of pg takes. */
static uint32_t link_of(const struct kv_pd_group *pg, uint32_t p, uint32_t j)
{
	uint32_t k = p - pg->first;

	switch (pg->x.topo) {
	case KV_XFER_SHARED:
		return pg->link0;
	case KV_XFER_PAIR:
		return pg->link0 + k * pg->n_dec + j;
	default:
		return pg->link0 + k;
	}
}

/*
 * Submits q's KV from prefill replica r to its decode replica and queues
 * the arrival.  Layer-wise, the first layer's KV exists 1/L of the way
 * through the iteration that ended now, the last at its end.
 */
static void send_one(struct kv_sim *s, struct kv_replica *r, struct kv_req *q)
{
	struct kv_disagg *pd = s->pd;
	struct kv_pd_group *pg = &pd->pg[pd->pg_of[r->idx]];
	uint32_t j = place(s, pg), l = link_of(pg, r->idx, j);
	struct kv_replica *d = &s->rep[pg->dec[j]];
	uint64_t bytes = q->kv_tokens * pg->token_bytes;
	struct kv_kvlink_xfer x = { .bytes = bytes ? bytes : 1, .first_ns = s->now,
				  .last_ns = s->now, .pieces = pg->pieces,
				  .tag = (uint64_t)d->idx << 32 | q->slot };
	struct kv_kvlink_times t;

	if (pg->pieces > 1)
		x.first_ns = r->iter_start_ns + (s->now - r->iter_start_ns) / pg->pieces;
	kv_kvlink_submit(&pd->link[l], &x, &t);
	q->xfer_done_ns = t.done_ns;
	q->xfer_ns = t.done_ns - s->now;
	d->inbound_bytes += x.bytes;
	if (pg->tree != UINT32_MAX && pd->trees_set) /* its load now, as least-kv read it */
		key_now(pd, d);
	d->n_inbound++;
	pd->sent++;
	if (s->rep_state && kv__autoscale_of(s, r->idx)) /* a prefill group's slo count */
		kv__autoscale_handed(kv__autoscale_of(s, r->idx), q);
	kv_heap_push(&s->heap, t.done_ns, KV_EV_XFER_DONE, l, 0);
}

void kv__disagg_send(struct kv_sim *s, struct kv_replica *r)
{
	uint32_t i;

	assert(s->pd && r->prefill_only);
	for (i = 0; i < r->n_handoff; i++)
		send_one(s, r, r->handoff[i]);
	r->n_handoff = 0;
}

/*
 * q's per-request state of the decode replica's scheduler and cache model,
 * as at an arrival: the prefill replica's instances kept theirs (zeroed,
 * as kv__slot_alloc zeroes them; its holding is released already).
 */
static void fresh_state(struct kv_sim *s, struct kv_req *q)
{
	uint32_t k;

	memset(q->cache, 0, sizeof(q->cache));
	for (k = 0; k < KV_PLUGIN_KINDS; k++)
		if (s->req_state[k].size)
			memset(kv__req_state(s, (enum kv_plugin_kind)k, q), 0, s->req_state[k].size);
}

void kv__disagg_done(struct kv_sim *s, const struct kv_event *ev, struct kv_replica **p,
		     struct kv_replica **d)
{
	struct kv_disagg *pd = s->pd;
	uint64_t tag, bytes;
	struct kv_req *q;
	int ok = kv_kvlink_pop(&pd->link[ev->target], s->now, &tag, &bytes);

	KV_CHECK(ok, "link %u: no transfer arrives at %llu ns", ev->target,
		 (unsigned long long)s->now);
	q = kv_sim_req(s, (uint32_t)tag);
	*p = &s->rep[q->replica];
	*d = &s->rep[tag >> 32];
	KV_CHECK(q->xfer_done_ns == s->now, "request %llu: transfer due at %llu ns arrives at %llu ns",
		 (unsigned long long)q->id, (unsigned long long)q->xfer_done_ns,
		 (unsigned long long)s->now);
	kv__replica_xfer_release(*p, q);
	fresh_state(s, q);
	q->xfer_bytes = bytes;
	q->replica = (*d)->idx;
	(*d)->n_inbound--;
	kv__replica_arrive(*d, q); /* waits in its scheduler: admitted when memory allows */
	(*d)->n_assigned++;
	(*d)->outstanding_tokens += q->output_tokens - q->generated;
	kv__out_changed(*d);
	pd->landed++;
	pd->xfer_ns_sum += q->xfer_ns;
	pd->xfer_ns_max = KV_MAX(pd->xfer_ns_max, q->xfer_ns);
}

void kv__disagg_final(const struct kv_sim *s)
{
	const struct kv_disagg *pd = s->pd;
	uint64_t out = 0, in = 0;
	uint32_t i;

	if (!pd)
		return;
	for (i = 0; i < pd->n_link; i++) {
		kv_kvlink_check(&pd->link[i]);
		KV_CHECK(pd->link[i].n == 0, "link %u: %zu transfers still in flight", i,
			 pd->link[i].n);
		out += pd->link[i].bytes_out;
	}
	for (i = 0; i < s->n_rep; i++)
		in += s->rep[i].xfer_in_bytes + s->rep[i].xfer_dropped_bytes;
	KV_CHECK(out == in && pd->sent == pd->landed,
		 "KV transfers: %llu bytes arrived, %llu admitted or dropped; %llu sent, %llu landed",
		 (unsigned long long)out, (unsigned long long)in, (unsigned long long)pd->sent,
		 (unsigned long long)pd->landed);
}
