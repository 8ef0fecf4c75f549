/*
 * engine.c -- the event loop and arrivals: pops events in (time, insertion)
 * order and hands each to its owner (an arrival to the router and a replica,
 * an iteration's end to its replica, a sample to the sink); builds and takes
 * down the cluster.  Replicas live in replica.c (their runs of macro steps in
 * macro.c), request slots in slots.c.
 * See engine.h for the model and its invariants.
 */
#include "load.h"
#include "replica.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>


const char *kv_end_name(enum kv_end e)
{
	static const char *const names[] = {
#define KV__END_NAME(name, msg) msg,
		KV_END_MAP(KV__END_NAME)
#undef KV__END_NAME
	};
	return (unsigned)e < KV_END_N ? names[e] : "unknown";
}

/* --- arrivals ------------------------------------------------------------ */

const char *const kv_group_role_names[] = { "mixed", "prefill", "decode", NULL };

/* Applies group g's oversize policy; returns 1 to admit, 0 to reject, <0 on error. */
static int check_context(struct kv_sim *s, const struct kv_group *g, struct kv_arrival *a)
{
	const struct kv_sim_config *c = g->cfg;
	uint64_t max = c->max_context_tokens ? c->max_context_tokens : c->model.max_ctx_tokens;

	/* no a->prompt + a->output: trace rows reach 2^64 - 1 and the sum would wrap */
	if (a->prompt_tokens <= max && a->output_tokens <= max - a->prompt_tokens)
		return 1;
	switch (c->oversize) {
	case KV_OVERSIZE_REJECT:
		return 0;
	case KV_OVERSIZE_CLIP:
		if (a->prompt_tokens >= max)
			a->prompt_tokens = max - 1;
		a->output_tokens = KV_MIN(a->output_tokens, max - a->prompt_tokens);
		return 1;
	default:
		return kv_diag_set(&s->diag, KV_EINVAL, a->origin_file, a->origin_line, 0,
				   a->origin_file ? "tokens" : "workload.lengths",
				   "request %llu has %llu prompt + %llu output tokens, beyond %s's context of %llu: expected at most %llu in total (or set workload.oversize: reject|clip)",
				   (unsigned long long)a->id, (unsigned long long)a->prompt_tokens,
				   (unsigned long long)a->output_tokens, c->model.name,
				   (unsigned long long)max, (unsigned long long)max);
	}
}

/*
 * A request whose context is more than a replica's KV cache holds: under
 * vLLM the engine would not have started (its max_model_len is at least
 * this request's length), an error naming the request; under SGLang it is
 * counted (the run warns) and left to be rejected for its size as SGLang
 * rejects requests beyond max_req_len.  Returns 0 or KV_EINVAL.
 */
static int check_capacity(struct kv_sim *s, const struct kv_group *g, const struct kv_arrival *a)
{
	uint64_t need = a->prompt_tokens + a->output_tokens; /* both within the context: no wrap */

	if (!g->ctx_cap_tokens || need <= g->ctx_cap_tokens)
		return 0;
	if (!g->ctx_warn)
		return kv_diag_set(&s->diag, KV_EINVAL, a->origin_file, a->origin_line, 0,
				   a->origin_file ? "tokens" : "workload.lengths",
				   "request %llu has %llu prompt + %llu output tokens, more than one replica's KV cache holds (%llu tokens): vLLM refuses to start when max_model_len, at least this request's length, exceeds its KV capacity (\"larger than the maximum number of tokens that can be stored in KV cache\"); expected workload.max_context of at most %llu (longer requests are then rejected), more memory per replica, or memory.context_check: warn (such requests are rejected, as SGLang does)",
				   (unsigned long long)a->id, (unsigned long long)a->prompt_tokens,
				   (unsigned long long)a->output_tokens,
				   (unsigned long long)g->ctx_cap_tokens,
				   (unsigned long long)g->ctx_cap_tokens);
	s->ctx_over_requests++;
	s->ctx_over_max_tokens = KV_MAX(s->ctx_over_max_tokens, need);
	return 0;
}

static int next_arrival(struct kv_sim *s)
{
	int rc = kv_source_next(s->src, &s->pending, &s->diag);

	if (rc < 0)
		return rc;
	s->have_pending = rc;
	if (rc) {
		/* under a concurrency limit a request may be due already: it queues now */
		KV_CHECK(s->pending.t_ns >= s->now || s->gate.limit, "arrival %llu goes back in time",
			 (unsigned long long)s->pending.id);
		/* push time 0: before every other event of its instant (engine.h) */
		kv_heap_push_at(&s->heap, KV_MAX(s->pending.t_ns, s->now), 0, KV_EV_ARRIVAL, 0, 0);
	}
	return 0;
}

/*
 * Forms a batch on each idle replica that got a request at this instant,
 * in the order they got their first; called after the instant's last
 * arrival, so a batch sees every request of the instant (ten requests at
 * t = 0 share the first step, as vLLM's engine adds every request its
 * front end has before it schedules).  Returns 0 or a sink's code.
 */
static int kick_due(struct kv_sim *s)
{
	uint32_t i, n = s->n_kick;
	int rc = 0;

	s->n_kick = 0;
	for (i = 0; i < n; i++) {
		struct kv_replica *r = &s->rep[s->kick[i]];

		r->kick_due = 0;
		if (!rc)
			rc = kv__replica_kick(r);
	}
	return rc;
}

/*
 * Applies every replica's macro steps that end before event e (it reads them
 * all); with reqs, also brings their requests' token counters up (a sample's
 * sink may read them).
 */
static void sync_all(struct kv_sim *s, const struct kv_event *e, int reqs)
{
	const kv_ns *next = s->macro_next;
	uint32_t i;

	if (!s->macro)
		return;
	for (i = 0; i < s->n_rep; i++) {
		if (next[i] <= e->t_ns)
			kv__macro_sync(&s->rep[i], e);
		if (reqs)
			kv__macro_sync_reqs(&s->rep[i]);
	}
}

/* Brings up what the router reads of group g's replicas before arrival event e. */
static void sync_route(struct kv_sim *s, const struct kv_group *g, const struct kv_event *e)
{
	uint32_t i, n, f = s->route_flags;

	if (!s->macro || (f & KV_PLUGIN_F_ROUTE_BLIND))
		return;
	if (!(f & KV_PLUGIN_F_ROUTE_OUTSTANDING)) {
		sync_all(s, e, 1);
		return;
	}
	if (s->out_tree.key && (f & KV_PLUGIN_F_ROUTE_LEAST)) { /* on a large single group */
		uint64_t bound;

		/* first the replicas whose bound lapsed by e: their view is brought up */
		n = kv_mintree_at_most(&s->exp_tree, e->t_ns, s->due);
		for (i = 0; i < n; i++)
			kv__macro_sync_outstanding(&s->rep[s->due[i]], e);
		/*
		 * The router reads the least view only: a replica whose lower
		 * bound exceeds the least view now cannot hold the least count
		 * at e (ties included), so only those at or under it are
		 * brought up.
		 */
		bound = s->out_tree.key[kv_mintree_min(&s->out_tree)];
		n = kv_mintree_at_most(&s->low_tree, bound, s->due);
		for (i = 0; i < n; i++)
			if (s->macro_onext[s->due[i]] <= e->t_ns)
				kv__macro_sync_outstanding(&s->rep[s->due[i]], e);
		return;
	}
	for (i = g->first; i < g->first + g->count; i++)
		if (s->macro_onext[i] <= e->t_ns)
			kv__macro_sync_outstanding(&s->rep[i], e);
}

/*
 * The group an arrival of tenant t joins: the only group serving its
 * model, else one of them by smooth weighted round-robin (nginx's: each
 * group's credit grows by its weight, the largest credit wins and drops
 * by the weights' sum): in every window of W = sum of weights arrivals
 * (integer weights) group g takes exactly its weight, in a fixed
 * interleaving.  The weight is the group's replica count times its weight
 * per replica (group_weight); an autoscaled group counts its active
 * replicas only.
 */
static struct kv_group *route_group(struct kv_sim *s, uint32_t t)
{
	const struct kv_route_class *k = &s->cls[s->tenant_cls[t]];
	struct kv_group *best = NULL;
	double sum = 0; /* k->weight_sum without autoscaling (the same terms, added in the same order) */
	uint32_t i;

	if (k->n == 1)
		return &s->grp[s->grp_of[k->off]];
	for (i = 0; i < k->n; i++) {
		struct kv_group *g = &s->grp[s->grp_of[k->off + i]];
		/* an autoscaled group weighs its active replicas (autoscale.h) */
		const struct kv_autoscale *a = s->rep_state ? kv__autoscale_of(s, g->first) : NULL;
		double w = a ? g->weight * a->n[KV_REP_ACTIVE] / g->count : g->weight;

		g->wrr_credit += w;
		sum += w;
		if (!best || g->wrr_credit > best->wrr_credit)
			best = g;
	}
	best->wrr_credit -= s->rep_state ? sum : k->weight_sum;
	return best;
}

/* Idle r got a request at this instant: it forms a batch after the instant's last one (kick_due). */
static void mark_due(struct kv_sim *s, struct kv_replica *r)
{
	if (!r->busy && !r->kick_due) {
		r->kick_due = 1;
		s->kick[s->n_kick++] = r->idx;
	}
}

/*
 * Routed q enters r's front end (frontend.h): it joins r's scheduler now
 * when the way in takes no time, else when the front end hands it over
 * (KV_EV_ENQUEUE).
 */
static void frontend_arrive(struct kv_sim *s, struct kv_replica *r, struct kv_req *q)
{
	kv_ns t = kv__frontend_in(&r->fe, q, s->now);

	if (t == s->now) {
		kv__replica_arrive(r, q);
		mark_due(s, r);
		return;
	}
	q->state = KV_REQ_FRONTEND;
	kv_heap_push(&s->heap, t, KV_EV_ENQUEUE, r->idx, q->slot);
}

/*
 * Another arrival (the source's next, or a session's turn) comes at this
 * instant: it is queued before any replica forms a batch (kick_due).
 */
static int more_arrivals_now(const struct kv_sim *s)
{
	const struct kv_event *next;

	if (s->have_pending && s->pending.t_ns <= s->now && !s->gate.blocked)
		return 1; /* (a request waiting for a place does not arrive now) */
	next = s->sess ? kv_heap_peek(&s->heap) : NULL;
	return next && next->t_ns == s->now && next->kind == KV_EV_TURN;
}

/*
 * Another hand-over (a front end's, or a KV transfer's arrival) or arrival
 * comes at this instant: replicas form their batches after the last.
 */
static int more_now(const struct kv_sim *s)
{
	const struct kv_event *next = kv_heap_peek(&s->heap);

	return (next && next->t_ns == s->now &&
		(next->kind == KV_EV_ENQUEUE || next->kind == KV_EV_XFER_DONE)) ||
	       more_arrivals_now(s);
}

/*
 * A request the front end hands over joins its replica's scheduler; the
 * replicas form their batches after the instant's last hand-over (and any
 * arrival of the instant), as after arrivals.
 */
static int on_enqueue(struct kv_sim *s, const struct kv_event *ev)
{
	struct kv_replica *r = &s->rep[ev->target];

	kv__replica_arrive(r, kv_sim_req(s, (uint32_t)ev->arg));
	mark_due(s, r);
	if (more_now(s))
		return 0; /* another hand-over or arrival at this instant comes first */
	return kick_due(s);
}

/*
 * A KV transfer arrived (disagg.h): its request joins the decode replica's
 * scheduler and the prefill replica's memory frees; both form a batch after
 * the instant's last hand-over or arrival, as after arrivals.
 */
static int on_xfer_done(struct kv_sim *s, const struct kv_event *ev)
{
	struct kv_replica *p, *d;

	kv__disagg_done(s, ev, &p, &d);
	if (s->rep_state)
		kv__autoscale_check(s, p); /* a draining prefill replica whose last KV left */
	mark_due(s, p);
	mark_due(s, d);
	if (more_now(s))
		return 0; /* another hand-over or arrival at this instant comes first */
	return kick_due(s);
}

/*
 * A replayed request's session under sessions.chains: its prefix chain
 * (reuse.h; the chain's first request's index), its place in it in
 * *turn.  The chain's home starts unset.
 */
static uint32_t chain_of(struct kv_sim *s, const struct kv_arrival *a, uint32_t *turn)
{
	uint32_t root = kv_reuse_add(s->chains, s->now, a->prompt_tokens, a->output_tokens,
				     a->hashes, a->n_hashes, turn);

	if (root >= s->n_chain_home) {
		uint32_t i, old = s->n_chain_home;

		s->n_chain_home = old ? 2 * old : 1024;
		s->chain_home = kv_xrealloc(s->chain_home, s->n_chain_home * sizeof(*s->chain_home));
		for (i = old; i < s->n_chain_home; i++)
			s->chain_home[i] = KV_NIL;
	}
	return root;
}

/*
 * The group of session sess's home replica (its first turn's), or NULL for
 * a first turn or a request outside a session: a session's later turns
 * stay in its group (the groups serving one model are chosen among by
 * round-robin, which would scatter a session's turns over them), and the
 * router picks among the group's replicas.
 */
static struct kv_group *session_group(const struct kv_sim *s, uint32_t sess)
{
	uint32_t home = KV_NIL;

	if (sess == KV_NIL)
		return NULL;
	if (s->sess)
		home = kv_sessions_home(s->sess, sess);
	else if (s->chain_home && sess < s->n_chain_home)
		home = s->chain_home[sess];
	return home != KV_NIL && home < s->n_rep ? s->rep[home].grp : NULL;
}

/*
 * Arrival a joins the cluster: checked against the context, routed, handed
 * to its replica's front end (or rejected).  sess: its session's slot,
 * KV_NIL for a lone request.  Returns 0 or an error code; a is not read
 * after (the caller may reuse it).
 */
static int arrive(struct kv_sim *s, const struct kv_event *ev, struct kv_arrival *a, uint32_t sess)
{
	uint32_t turn = sess != KV_NIL ? kv_sessions_turn_index(s->sess, sess) : 0;
	struct kv_group *g;
	struct kv_replica *r;
	struct kv_req *q;
	int ok;

	if (s->chains) /* a replayed request's session: its prefix chain */
		sess = chain_of(s, a, &turn);
	g = session_group(s, sess);
	g = g ? g : route_group(s, a->tenant);
	ok = check_context(s, g, a);

	if (ok < 0)
		return ok;
	if (ok && check_capacity(s, g, a))
		return KV_EINVAL;
	sync_route(s, g, ev); /* what the router reads of the group's replicas */
	g->arrived++;
	if (s->arrived == 0)
		s->first_arrival_ns = s->now;
	s->last_arrival_ns = s->now;
	s->arrived++;
	s->n_live++;
	if (s->n_live > s->peak_live)
		s->peak_live = s->n_live;
	s->tenant[a->tenant].arrived++;
	q = kv__slot_alloc(s);
	q->id = a->id;
	q->arrival_ns = s->now;
	q->prompt_tokens = a->prompt_tokens;
	q->output_tokens = a->output_tokens;
	q->prefill_target = a->prompt_tokens;
	q->tenant = a->tenant;
	q->priority = a->priority;
	q->origin_line = a->origin_line;
	q->session = sess;
	q->turn = turn;
	kv__hashes_store(s, q, a);
	q->mem_t0_ns = s->now;
	q->replica = s->cfg->router->pick(s, q, g->first,
					  g->first + (g->cfg->pd_prefill ? g->cfg->pd_prefill : g->count),
					  &g->router_state); /* a split group: its prefill replicas (disagg.h) */
	if (s->sess && sess != KV_NIL)
		kv_sessions_set_home(s->sess, sess, q->replica); /* the first turn's replica stays its home */
	else if (s->chains && s->chain_home[sess] == KV_NIL)
		s->chain_home[sess] = q->replica; /* a chain's first request: its home */
	r = &s->rep[q->replica];
	r->n_assigned++;
	r->outstanding_tokens += q->prompt_tokens + q->output_tokens;
	kv__out_changed(r);
	if (!ok)
		return kv__replica_end(r, q, KV_END_REJECTED_CONTEXT);
	frontend_arrive(s, r, q);
	return 0;
}

/* A session turn's lengths and prefix-block ids into arrival a (its request id: arrival order). */
static void turn_arrival(struct kv_sim *s, struct kv_arrival *a, const struct kv_turn *t)
{
	a->id = s->arrived;
	a->prompt_tokens = t->prompt_tokens;
	a->output_tokens = t->output_tokens;
	a->n_hashes = t->n_hashes;
	a->hashes = t->hashes;
}

/*
 * The pending arrival, due: 1 when it goes now (it takes a place, and is
 * sent now when it was due before), 0 when N are outstanding (it waits in
 * line, the gate blocked, a wake-up queued).  Always 1 without a limit.
 */
static int gate_admit(struct kv_sim *s)
{
	struct kv_gate *g = &s->gate;

	if (!g->limit)
		return 1;
	kv_gate_settle(g, s->now);
	if (kv_gate_full(g)) {
		g->blocked = 1;
		kv__gate_wake(s, kv_gate_next_free(g));
		return 0;
	}
	g->blocked = 0;
	kv_gate_take(g);
	if (s->pending.t_ns < s->now) { /* sent when a place freed (the semaphore's release) */
		g->waited++;
		g->wait_ns += s->now - s->pending.t_ns;
		s->pending.t_ns = s->now;
	}
	return 1;
}

static int on_arrival(struct kv_sim *s, const struct kv_event *ev)
{
	struct kv_arrival *a = &s->pending;
	uint32_t sess = KV_NIL;
	int rc;

	if (ev->arg) { /* a wake-up of the concurrency limit */
		if (s->gate.wake_ns <= s->now)
			s->gate.wake_ns = KV_NS_NEVER;
		if (!s->gate.blocked)
			return 0; /* the line moved on since it was queued */
	}
	if (!gate_admit(s)) /* waits for a place: the instant's batches form without it */
		return more_arrivals_now(s) ? 0 : kick_due(s);
	if (s->sess) { /* the arrival starts a session: its first turn */
		struct kv_turn t;

		sess = kv_sessions_start(s->sess, a->tenant, a->priority, &t);
		turn_arrival(s, a, &t);
	}
	rc = arrive(s, ev, a, sess);
	rc = rc ? rc : next_arrival(s); /* a is s->pending: read no more of it below */
	if (rc || more_arrivals_now(s))
		return rc; /* another arrival at this instant: it is queued first */
	return kick_due(s);
}

/*
 * A session's next turn arrives (queued by kv__session_end): the session's
 * tenant and priority are those of its first turn's arrival.
 */
static int on_turn(struct kv_sim *s, const struct kv_event *ev)
{
	uint32_t sess = (uint32_t)ev->arg;
	struct kv_arrival a = { .t_ns = s->now };
	struct kv_turn t;
	int rc;

	kv_sessions_turn(s->sess, sess, &t);
	kv_sessions_origin(s->sess, sess, &a.tenant, &a.priority);
	turn_arrival(s, &a, &t);
	rc = arrive(s, ev, &a, sess);
	if (rc || more_arrivals_now(s))
		return rc;
	return kick_due(s);
}

/* --- the loop ------------------------------------------------------------ */

static int macro_allowed(const struct kv_sim_config *c);

/* Sessions between turns: their next turns are still to arrive. */
static uint64_t sessions_waiting(const struct kv_sim *s)
{
	struct kv_sessions_stats st;

	if (!s->sess)
		return 0;
	kv_sessions_stats(s->sess, &st);
	return st.thinking;
}

/* Spread of virtual service among backlogged tenants, accumulated per sample. */
static void sample_service(struct kv_sim *s)
{
	double lo = 0, hi = 0;
	uint32_t i, n = 0;

	for (i = 0; i < s->cfg->source.n_tenants; i++) {
		double v = s->tenant[i].vservice;

		if (!s->tenant[i].waiting)
			continue;
		lo = n ? KV_MIN(lo, v) : v;
		hi = n ? KV_MAX(hi, v) : v;
		n++;
	}
	if (n < 2)
		return;
	s->svc_diff_samples++;
	s->svc_diff_sum += hi - lo;
	s->svc_diff_max = KV_MAX(s->svc_diff_max, hi - lo);
}

static int on_sample(struct kv_sim *s, const struct kv_event *ev)
{
	sync_all(s, ev, 1);
	sample_service(s);
	if (s->sink.sample && s->sink.sample(s->sink.ctx, s, s->now))
		return KV_EIO;
	if (s->have_pending || s->n_live || sessions_waiting(s))
		kv_heap_push(&s->heap, s->now + s->cfg->sample_interval_ns, KV_EV_SAMPLE, 0, 0);
	return 0;
}

/* An autoscaling decision (autoscale.h) on replicas brought up to date; the next one queued. */
static int on_scale(struct kv_sim *s, const struct kv_event *ev)
{
	struct kv_autoscale *a = &s->as[ev->target];
	int rc;

	sync_all(s, ev, 1);
	if ((rc = kv__autoscale_tick(s, a)))
		return rc;
	if (s->have_pending || s->n_live)
		kv_heap_push(&s->heap, s->now + a->cfg->interval_ns, KV_EV_SCALE, ev->target, 0);
	return 0;
}

static int dispatch(struct kv_sim *s, const struct kv_event *ev)
{
	uint64_t steps0 = s->macro_steps;
	int rc;

	switch (ev->kind) {
	case KV_EV_ARRIVAL:
		rc = on_arrival(s, ev);
		break;
	case KV_EV_ITER_DONE:
		rc = kv__replica_iter_done(&s->rep[ev->target]);
		if (!rc && s->rep[ev->target].n_handoff)
			kv__disagg_send(s, &s->rep[ev->target]); /* prefills done: KV to decode replicas */
		break;
	case KV_EV_XFER_DONE:
		rc = on_xfer_done(s, ev);
		break;
	case KV_EV_SAMPLE:
		rc = on_sample(s, ev);
		break;
	case KV_EV_ENQUEUE: /* tokenised: joins its replica's scheduler */
		rc = on_enqueue(s, ev);
		break;
	case KV_EV_SCALE:
		rc = on_scale(s, ev);
		break;
	case KV_EV_SCALE_READY: /* its cold start is over: routed to from now */
		kv__autoscale_ready(s, ev->target);
		rc = 0;
		break;
	case KV_EV_TURN: /* a session's next turn */
		rc = on_turn(s, ev);
		break;
	default:
		kv__check_fail(__FILE__, __LINE__, "event kind", "unknown event %u", ev->kind);
	}
	if (!rc && s->rep_state && (ev->kind == KV_EV_ITER_DONE || ev->kind == KV_EV_ENQUEUE))
		kv__autoscale_check(s, &s->rep[ev->target]); /* a draining one may be empty now */
	/* a sample changes no pool unless it applies macro steps: the last check holds */
	if (!rc && s->cfg->check_pool && (ev->kind != KV_EV_SAMPLE || s->macro_steps != steps0)) {
		uint32_t i;

		for (i = 0; i < s->n_rep; i++)
			kv__replica_check_pool(&s->rep[i]);
	}
	return rc;
}

/* End-of-run conservation checks. */
static void final_checks(struct kv_sim *s)
{
	uint64_t ended = 0;
	uint32_t i;

	for (i = 0; i < KV_END_N; i++)
		ended += s->ended[i];
	for (i = 0; i < s->cfg->source.n_tenants; i++)
		KV_CHECK(s->tenant[i].waiting == 0, "tenant %u still has %llu waiting", i,
			 (unsigned long long)s->tenant[i].waiting);
	KV_CHECK(sessions_waiting(s) == 0, "%llu sessions still wait for a turn",
		 (unsigned long long)sessions_waiting(s));
	KV_CHECK(ended == s->arrived && s->n_live == 0,
		 "%llu arrived, %llu ended, %llu live", (unsigned long long)s->arrived,
		 (unsigned long long)ended, (unsigned long long)s->n_live);
	for (i = 0; i < s->n_rep; i++)
		kv__replica_final(&s->rep[i]);
	kv__disagg_final(s);
	for (i = 0; i < s->n_as; i++)
		kv__autoscale_final(s, &s->as[i]);
}

int kv_sim_run(struct kv_sim *s)
{
	struct kv_event ev;
	uint32_t i;
	int rc;

	if (!macro_allowed(s->cfg)) { /* an executor or exact_steps set after kv_sim_init */
		s->macro = 0;
		for (i = 0; i < s->n_rep; i++)
			s->rep[i].macro.ok = 0;
	}
	rc = next_arrival(s);

	if (rc)
		return rc;
	if (s->cfg->sample_interval_ns)
		kv_heap_push(&s->heap, 0, KV_EV_SAMPLE, 0, 0);
	for (i = 0; i < s->n_as; i++)
		kv_heap_push(&s->heap, s->as[i].cfg->interval_ns, KV_EV_SCALE, i, 0);
	while (kv_heap_pop(&s->heap, &ev)) {
		if (ev.kind == KV_EV_ITER_DONE && ev.arg != s->rep[ev.target].macro.gen)
			continue; /* a macro step's end, cut short since */
		KV_CHECK(ev.t_ns >= s->now, "time went back from %llu to %llu ns",
			 (unsigned long long)s->now, (unsigned long long)ev.t_ns);
		s->now = ev.t_ns;
		s->ev = ev;
		s->events++;
		rc = dispatch(s, &ev);
		if (rc)
			return rc;
		if ((s->events & 0x3fff) == 0) {
			if (s->sink.progress)
				s->sink.progress(s->sink.ctx, s);
			if (s->stop && *s->stop)
				return KV_EINTR;
		}
	}
	final_checks(s);
	return 0;
}

/*
 * Pool bytes per replica from the memory model (memory.h): the share model's
 * tp * memory * share - alpha * M, or the KV capacity vLLM or SGLang would
 * allocate (or the pinned memory.kv_tokens) in fp16 bytes.
 */
static int pool_size(struct kv_sim *s, struct kv_group *g)
{
	const struct kv_sim_config *c = g->cfg;
	struct kv_model stage; /* one pipeline stage's layers: weights and KV per GPU */
	int rc;

	if (c->pp > c->model.layers)
		return kv_diag_set(&s->diag, KV_EINVAL, "", 0, 0, "cluster.pipeline_parallel",
				   "%u stages for %s's %u layers: expected at most one stage per layer",
				   c->pp, c->model.name, c->model.layers);
	kv_perf_stage_model(&c->model, c->pp ? c->pp : 1, &stage);
	rc = kv_mem_budget(&c->mem, &stage, &c->device, c->tp, c->max_batch_tokens,
			   c->max_batch_seqs, &g->mem, &s->diag);

	if (rc)
		return rc;
	/* a stage holds every token's KV for its layers: the pool counts whole-model bytes */
	if (stage.layers != c->model.layers)
		g->mem.pool_bytes = g->mem.kv_tokens * kv_model_kv_bytes_per_token(&c->model);
	g->pool_bytes = g->mem.pool_bytes;
	return 0;
}

/*
 * A service weight whose sums stay exact in any order: a whole multiple of
 * 1/256 up to 10^6 (whole numbers, halves, quarters, ...).  Sums of such
 * multiples are doubles without rounding while below 2^45 (3.5e13 weighted
 * tokens), whatever the order of the additions.
 */
static int dyadic(double w)
{
	return w >= 0 && w <= 1e6 && w * 256 == floor(w * 256);
}

/*
 * Whether the run's config allows macro steps (macro.h): not asked for
 * exact steps, no executor (it times every batch), a scheduler that permits
 * them, and service weights whose sums are exact in any order (dyadic()):
 * the fairness weights, and for each tenant 1 / its weight and their
 * products, so that its service and virtual service, which steps of every
 * replica add to, come out the same when macro steps add theirs later.
 */
static int macro_allowed(const struct kv_sim_config *c)
{
	const struct kv_fairness_cfg *fw = &c->fairness;
	uint32_t i;

	if (c->exact_steps || c->exec || !kv__macro_sched_ok(c->sched) ||
	    !dyadic(fw->input_weight) || !dyadic(fw->output_weight))
		return 0;
	for (i = 0; i < c->n_groups; i++)
		if (!kv__macro_sched_ok(c->groups[i].sched))
			return 0;
	for (i = 0; i < KV_MAX(c->source.n_tenants, 1); i++) {
		double w = c->source.n_tenants ? c->source.tenants[i].weight : 1;
		double inv = w > 0 ? 1.0 / w : 1.0; /* kv_sim_init's inv_weight */

		if (!dyadic(inv) || !dyadic(fw->input_weight * inv) || !dyadic(fw->output_weight * inv))
			return 0;
	}
	return 1;
}

/*
 * Sets group g's longest-context check (memory.h enum kv_ctx_check): the
 * bound is the tokens its first replica's pool holds under its cache
 * model; auto is a warning under an sglang engine, an error otherwise.  An
 * explicit max_context beyond it is vLLM's start-up refusal: KV_EINVAL
 * naming workload.max_context, or (warn) recorded in ctx_over_max_tokens.
 */
static int context_bound(struct kv_sim *s, struct kv_group *g)
{
	const struct kv_sim_config *c = g->cfg;
	const struct kv_replica *r = &s->rep[g->first];
	enum kv_ctx_check k = c->mem.context_check;
	uint64_t ctx = c->max_context_tokens;

	g->ctx_cap_tokens = r->beta_bytes > 0 ? (uint64_t)((double)g->pool_bytes / r->beta_bytes) :
						g->mem.kv_tokens;
	g->ctx_warn = k == KV_CTX_CHECK_WARN ||
		      (k == KV_CTX_CHECK_AUTO && c->engine && !strncmp(c->engine->name, "sglang", 6));
	if (!ctx || ctx <= g->ctx_cap_tokens)
		return 0;
	if (g->ctx_warn) {
		s->ctx_over_max_tokens = KV_MAX(s->ctx_over_max_tokens, ctx);
		return 0;
	}
	return kv_diag_set(&s->diag, KV_EINVAL, "", 0, 0, "workload.max_context",
			   "%llu tokens, more than one replica's KV cache holds (%llu tokens, memory.model %s): vLLM refuses to start when max_model_len exceeds its KV capacity (\"larger than the maximum number of tokens that can be stored in KV cache\"); expected at most %llu, more memory per replica, or memory.context_check: warn (requests longer than the cache are then rejected, as SGLang does)",
			   (unsigned long long)ctx, (unsigned long long)g->ctx_cap_tokens,
			   kv_mem_model_name(c->mem.model), (unsigned long long)g->ctx_cap_tokens);
}

/* Group g's derived state from its configuration c: perf model, pool size and unit. */
static int group_init(struct kv_sim *s, struct kv_group *g, const struct kv_sim_config *c,
		      uint32_t idx, uint32_t first)
{
	g->cfg = c;
	g->idx = idx;
	kv_hist_init(&g->ttft);
	kv_hist_init(&g->e2e);
	g->first = first;
	g->count = c->replicas;
	g->token_bytes = kv_model_kv_bytes_per_token(&c->model);
	g->pool_unit_bytes = c->pool_min_block_bytes ?
		c->pool_min_block_bytes : kv_mem_pool_unit(g->token_bytes, c->pool_max_block_bytes);
	kv_perf_init_parallel(&g->perf, &c->model, &c->device,
			      &(struct kv_parallel){ .tp = c->tp, .pp = c->pp ? c->pp : 1,
						     .ep = c->ep ? c->ep : 1,
						     .dp = c->dp ? c->dp : 1 });
	g->perf.host_prof = &c->host; /* the engines' perf hooks resolve the host model with it */
	if (c->step_scale > 0)
		g->perf.step_scale = c->step_scale;
	return pool_size(s, g);
}

/* The model name tenant t's requests ask for: its `model:`, else the first group's. */
static const char *tenant_model(const struct kv_sim *s, uint32_t t)
{
	const struct kv_source_spec *src = &s->cfg->source;

	return t < src->n_tenants && src->tenants[t].model[0] ? src->tenants[t].model :
								 s->grp[0].cfg->model.name;
}

/* Adds the routing class of the groups serving model m; returns them, 0: none. */
static uint32_t class_add(struct kv_sim *s, const char *m)
{
	struct kv_route_class *k = &s->cls[s->n_cls];
	uint32_t i;

	k->off = s->n_cls * s->n_grp;
	for (i = 0; i < s->n_grp; i++)
		if (s->grp[i].count && /* an empty group serves nothing */
		    s->grp[i].cfg->role != KV_ROLE_DECODE && /* decode groups get prefilled requests only */
		    !strcmp(s->grp[i].cfg->model.name, m)) {
			s->grp_of[k->off + k->n++] = i;
			k->weight_sum += s->grp[i].weight;
		}
	return k->n;
}

/*
 * The routing classes: one per model the tenants ask for, listing the
 * groups that serve it.  A tenant asking for a model no group serves is
 * KV_EINVAL naming workload.tenants.model.
 */
static int route_classes(struct kv_sim *s)
{
	uint32_t t, c, nt = KV_MAX(s->cfg->source.n_tenants, 1u);

	s->tenant_cls = kv_xcalloc(nt, sizeof(*s->tenant_cls));
	s->cls = kv_xcalloc(nt, sizeof(*s->cls));
	s->grp_of = kv_xcalloc((size_t)nt * s->n_grp, sizeof(*s->grp_of));
	for (t = 0; t < nt; t++) {
		const char *m = tenant_model(s, t);

		for (c = 0; c < t && strcmp(tenant_model(s, c), m); c++)
			;
		if (c < t) { /* an earlier tenant's model: its class */
			s->tenant_cls[t] = s->tenant_cls[c];
			continue;
		}
		if (!class_add(s, m))
			return kv_diag_set(&s->diag, KV_EINVAL, "", 0, 0, "workload.tenants.model",
					   "tenant '%s' asks for model '%s', which no replica group with replicas serves: expected the model of one of cluster.groups",
					   s->cfg->source.tenants[t].name, m);
		s->tenant_cls[t] = s->n_cls++;
	}
	return 0;
}

/*
 * The lengths weight auto rates replicas at: the workload's generated
 * means (fixed, uniform: the midpoints, lognormal: the means), else
 * KV_GROUP_AUTO_PROMPT and KV_GROUP_AUTO_OUTPUT.
 */
static void auto_mix(const struct kv_sim *s, double *P, double *O)
{
	const struct kv_length_spec *l = &s->cfg->source.lengths;

	*P = KV_GROUP_AUTO_PROMPT;
	*O = KV_GROUP_AUTO_OUTPUT;
	if (s->cfg->source.arrival == KV_ARRIVAL_TRACE && !s->cfg->source.lengths_set)
		return; /* the trace's own lengths */
	if (l->kind == KV_LEN_FIXED) {
		*P = (double)l->prompt;
		*O = (double)l->output;
	} else if (l->kind == KV_LEN_UNIFORM) {
		*P = ((double)l->prompt_min + (double)l->prompt_max) / 2;
		*O = ((double)l->output_min + (double)l->output_max) / 2;
	} else if (l->kind == KV_LEN_LOGNORMAL) {
		*P = l->prompt_mean;
		*O = l->output_mean;
	}
}

/* Group g's routing weight (engine.h kv_group.weight), once its first replica is built. */
static void group_weight(const struct kv_sim *s, struct kv_group *g)
{
	double w = g->cfg->group_weight, P, O;

	if (w == KV_GROUP_WEIGHT_AUTO) {
		auto_mix(s, &P, &O);
		w = kv_load_group_capacity(s, g, P, O);
	}
	g->weight = (double)g->count * (w > 0 ? w : 1.0);
}

/* Builds the groups (cfg->groups, or cfg alone) and their replicas. */
static int build_groups(struct kv_sim *s, const struct kv_sim_config *cfg)
{
	uint32_t i, j, first = 0;
	int rc;

	s->n_grp = cfg->n_groups ? cfg->n_groups : 1;
	s->grp = kv_xcalloc(s->n_grp, sizeof(*s->grp));
	for (i = 0; i < s->n_grp; i++) {
		rc = group_init(s, &s->grp[i], cfg->n_groups ? &cfg->groups[i] : cfg, i, first);
		if (rc)
			return rc;
		first += s->grp[i].count;
	}
	s->n_rep = first;
	s->rep = kv_xcalloc(s->n_rep, sizeof(*s->rep));
	for (i = 0; i < s->n_grp; i++) {
		struct kv_group *g = &s->grp[i];

		for (j = g->first; j < g->first + g->count; j++)
			if ((rc = kv__replica_init(s, g, &s->rep[j], j)))
				return rc;
		if (!g->count)
			continue; /* no replicas (a fleet a sweep leaves out): no bound, no weight */
		if ((rc = context_bound(s, g)))
			return rc;
		group_weight(s, g);
	}
	return route_classes(s);
}

/*
 * Autoscaling (autoscale.h): one autoscaled range per group whose config
 * has autoscale.on, over that group's replicas; s->rep_state shared by them.
 */
static int build_autoscale(struct kv_sim *s)
{
	uint32_t i, n = 0;
	int rc;

	for (i = 0; i < s->n_grp; i++)
		n += s->grp[i].cfg->autoscale.on;
	if (!n)
		return 0;
	s->rep_state = kv_xcalloc(s->n_rep, sizeof(*s->rep_state)); /* all active */
	s->as = kv_xcalloc(n, sizeof(*s->as));
	for (i = 0; i < s->n_grp; i++) {
		const struct kv_group *g = &s->grp[i];

		if (!g->cfg->autoscale.on)
			continue;
		rc = kv__autoscale_init(s, &s->as[s->n_as++], g->cfg, g->first, g->first + g->count, i);
		if (rc)
			return rc;
	}
	for (i = 0; i < s->n_rep; i++)
		kv__out_changed(&s->rep[i]); /* the replicas off: out of the router's tree */
	return 0;
}

/*
 * The router's instance: its options (cfg->router_opts, or the defaults when
 * the config has none) in s->router_priv, its flags in s->route_flags, then
 * its init hook.  Returns 0 or the hook's code.
 */
static int router_init(struct kv_sim *s)
{
	const struct kv_router_ops *ro = s->cfg->router;

	s->route_flags = ro->flags;
	s->router_priv = kv_xcalloc(1, ro->priv_size ? ro->priv_size : 1);
	if (s->cfg->router_opts)
		memcpy(s->router_priv, s->cfg->router_opts, ro->priv_size);
	else
		kv_options_defaults(ro->options, s->router_priv);
	return ro->init ? ro->init(s->router_priv, s, &s->diag) : 0;
}

/*
 * The session generator (session.h), its turns bounded by the served
 * context and, where a longer request would stop the run (vLLM's start-up
 * rule, context_bound), by what one replica's KV cache holds: a session
 * ends before a turn that would not fit.  With several groups, the least
 * of their bounds (a session's first turn may go to any group serving its
 * model).  0 or KV_EINVAL with s->diag.
 */
static int open_sessions(struct kv_sim *s)
{
	uint64_t ctx = UINT64_MAX;
	uint32_t i;

	for (i = 0; i < s->n_grp; i++) {
		const struct kv_group *g = &s->grp[i];
		const struct kv_sim_config *c = g->cfg;
		uint64_t b = c->max_context_tokens ? c->max_context_tokens : c->model.max_ctx_tokens;

		if (!g->ctx_warn && g->ctx_cap_tokens && g->ctx_cap_tokens < b)
			b = g->ctx_cap_tokens;
		ctx = KV_MIN(ctx, b);
	}
	return kv_sessions_open(&s->cfg->sessions, s->cfg->seed, ctx, &s->sess, &s->diag);
}

int kv_sim_init(struct kv_sim *s, const struct kv_sim_config *cfg, const struct kv_sink *sink)
{
	uint32_t i;
	int rc;

	memset(s, 0, sizeof(*s));
	s->cfg = cfg;
	s->free_slot = KV_NIL;
	s->free_hash_page = KV_NIL;
	s->req_state[KV_PLUGIN_SCHED].size = cfg->sched->req_size;
	s->req_state[KV_PLUGIN_CACHE].size = cfg->cache->req_size;
	for (i = 0; i < cfg->n_groups; i++) { /* a request's state fits any group's plugins */
		const struct kv_sim_config *g = &cfg->groups[i];

		s->req_state[KV_PLUGIN_SCHED].size = KV_MAX(s->req_state[KV_PLUGIN_SCHED].size,
							    g->sched->req_size);
		s->req_state[KV_PLUGIN_CACHE].size = KV_MAX(s->req_state[KV_PLUGIN_CACHE].size,
							    g->cache->req_size);
	}
	if (sink)
		s->sink = *sink;
	kv_heap_init(&s->heap, 1024);
	kv_hist_init(&s->ttft);
	kv_hist_init(&s->tpot);
	kv_hist_init(&s->e2e);
	s->tenant = kv_xcalloc(cfg->source.n_tenants, sizeof(*s->tenant));
	s->inv_weight = kv_xcalloc(cfg->source.n_tenants, sizeof(*s->inv_weight));
	for (i = 0; i < cfg->source.n_tenants; i++)
		s->inv_weight[i] = cfg->source.tenants[i].weight > 0 ? 1.0 / cfg->source.tenants[i].weight : 1.0;
	for (i = 0; i < cfg->source.n_tenants; i++) {
		kv_hist_init(&s->tenant[i].ttft);
		kv_hist_init(&s->tenant[i].e2e);
	}
	s->macro = macro_allowed(cfg);
	kv_gate_init(&s->gate, cfg->source.max_concurrency, cfg->source.think_ns);
	s->n_rep = 0;
	for (i = 0; i < KV_MAX(cfg->n_groups, 1u); i++)
		s->n_rep += cfg->n_groups ? cfg->groups[i].replicas : cfg->replicas;
	if (!s->n_rep)
		return kv_diag_set(&s->diag, KV_EINVAL, "", 0, 0, "cluster.groups",
				   "no replicas in any group: expected at least one");
	s->macro_next = kv_xmalloc(s->n_rep * sizeof(*s->macro_next));
	s->macro_onext = kv_xmalloc(s->n_rep * sizeof(*s->macro_onext));
	for (i = 0; i < s->n_rep; i++)
		s->macro_next[i] = s->macro_onext[i] = KV_NS_NEVER;
	if ((rc = router_init(s)))
		return rc;
	/* the trees serve one group (the router's range is the whole cluster); several scan */
	if ((s->route_flags & KV_PLUGIN_F_ROUTE_LEAST) && s->n_rep >= KV_ROUTE_TREE_MIN_REPLICAS &&
	    cfg->n_groups <= 1) {
		kv_mintree_init(&s->out_tree, s->n_rep, 0);
		kv_mintree_init(&s->low_tree, s->n_rep, UINT64_MAX); /* no replica lags yet */
		kv_mintree_init(&s->exp_tree, s->n_rep, KV_NS_NEVER);
		s->due = kv_xmalloc(s->n_rep * sizeof(*s->due));
	}
	s->kick = kv_xmalloc(s->n_rep * sizeof(*s->kick));
	if ((rc = build_groups(s, cfg)) || (rc = kv__disagg_init(s)) || (rc = build_autoscale(s)))
		return rc;
	if (cfg->sessions.n_classes && (rc = open_sessions(s)))
		return rc;
	if (cfg->sessions.chains)
		s->chains = kv_reuse_new();
	for (i = 0; i < s->n_rep; i++) /* an engine may run its own cache model (serving.h): its state too */
		s->req_state[KV_PLUGIN_CACHE].size = KV_MAX(s->req_state[KV_PLUGIN_CACHE].size,
							    s->rep[i].cache->req_size);
	KV_CHECK(s->n_pages == 0, "%u slot pages before the first request", s->n_pages);
	return kv_source_open(&cfg->source, cfg->seed, &s->src, &s->diag);
}

void kv_sim_release(struct kv_sim *s)
{
	uint32_t i;

	kv__disagg_release(s);
	for (i = 0; s->rep && i < s->n_rep; i++)
		kv__replica_release(&s->rep[i]);
	if (s->router_priv && s->cfg->router->fini)
		s->cfg->router->fini(s->router_priv);
	free(s->router_priv);
	free(s->rep);
	for (i = 0; i < s->n_as; i++)
		kv__autoscale_release(&s->as[i]);
	free(s->as);
	free(s->rep_state);
	for (i = 0; s->grp && i < s->n_grp; i++) {
		kv_hist_release(&s->grp[i].ttft);
		kv_hist_release(&s->grp[i].e2e);
	}
	free(s->grp);
	free(s->cls);
	free(s->tenant_cls);
	free(s->grp_of);
	free(s->macro_next);
	free(s->macro_onext);
	kv_mintree_release(&s->out_tree);
	kv_mintree_release(&s->low_tree);
	kv_mintree_release(&s->exp_tree);
	free(s->due);
	free(s->kick);
	kv__slots_release(s);
	if (s->src)
		kv_source_close(s->src);
	kv_sessions_close(s->sess);
	kv_reuse_free(s->chains);
	free(s->chain_home);
	kv_heap_release(&s->heap);
	kv_gate_release(&s->gate);
	kv_hist_release(&s->ttft);
	kv_hist_release(&s->tpot);
	kv_hist_release(&s->e2e);
	if (s->tenant) {
		for (i = 0; i < s->cfg->source.n_tenants; i++) {
			kv_hist_release(&s->tenant[i].ttft);
			kv_hist_release(&s->tenant[i].e2e);
		}
		free(s->tenant);
	}
	free(s->inv_weight);
	memset(s, 0, sizeof(*s));
}
