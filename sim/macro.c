/*
 * macro.c -- macro-stepping (macro.h): a replica's run of identical decode
 * steps planned at once, queued as one event, applied lazily and exactly as
 * the per-step engine would apply each step.
 */
#include "macro.h"
#include "replica.h"

#include <stdlib.h>

/*
 * A declared order, with what that order needs declared too (scheduler.h):
 * a PRIORITY policy says how long its priorities hold, a FAIR one whose
 * head blocks says how many tenants are backlogged.
 */
int kv__macro_sched_ok(const struct kv_sched_ops *ops)
{
	switch (ops->order) {
	case KV_ORDER_FCFS:
	case KV_ORDER_KEYED:
		return 1;
	case KV_ORDER_FAIR:
		return !ops->head_blocks || ops->backlogged;
	case KV_ORDER_PRIORITY:
		return ops->ranks_hold != NULL;
	default:
		return 0;
	}
}

/*
 * Whether the policy's next formation tries the same waiting requests in
 * the same order and stops where this one stopped (scheduler.h): its
 * refused head blocks its queue, and the queue's order cannot change
 * between formations of the run (nothing arrives or leaves: an arrival cuts
 * the run).  FCFS and KEYED: its order is fixed.  FAIR: the least-served backlogged
 * tenant goes first, and service changes with every formation; with one
 * tenant backlogged that tenant is first whatever the service (with two,
 * the charges could reorder them).  PRIORITY: priorities move as requests
 * wait (aging), which may reorder the waiting ones.
 */
static int head_repeats(const struct kv_replica *r)
{
	const struct kv_sched_ops *o = r->sched;

	if (!o->head_blocks)
		return 0;
	if (o->order == KV_ORDER_FCFS || o->order == KV_ORDER_KEYED)
		return 1;
	return o->order == KV_ORDER_FAIR && o->backlogged(r->sched_priv) == 1;
}

void kv__macro_init(struct kv_replica *r, int ok, int (*schedule)(struct kv_replica *, struct kv_req *))
{
	uint32_t n_tenants = KV_MAX(r->sim->cfg->source.n_tenants, 1);
	struct kv_macro *m = &r->macro;

	m->ok = ok;
	m->schedule = schedule;
	m->t = kv_xcalloc(KV_MACRO_STEPS + 1, sizeof(*m->t));
	m->wx = kv_xcalloc(KV_MACRO_STEPS + 1, sizeof(*m->wx));
	m->grow = kv_xcalloc(KV_MACRO_GROWS, sizeof(*m->grow));
	m->tn = kv_xcalloc(n_tenants, sizeof(*m->tn));
	m->tc = kv_xcalloc(n_tenants, sizeof(*m->tc));
}

void kv__macro_release(struct kv_replica *r)
{
	struct kv_macro *m = &r->macro;

	free(m->t);
	free(m->wx);
	free(m->grow);
	free(m->tn);
	free(m->tc);
	m->t = NULL;
	m->wx = NULL;
	m->tn = m->tc = NULL;
	m->grow = NULL;
}

/*
 * Plans the reserves inside a macro step of at most K steps: after step k,
 * the batch's request i outgrows its holding when kv_tokens + k reaches its
 * cap (the per-step engine's kv__replica_schedule then reserves, in batch
 * order).  Each must be promised by the cache model (grow_units) and all of
 * them must fit the units free now (nothing else allocates from this pool
 * meanwhile).  Fills r->macro.grow sorted by (step, index); returns K, cut
 * to the first step whose growth cannot be promised.
 */
static uint64_t plan_grows(struct kv_replica *r, uint64_t K)
{
	uint64_t free_units = r->pool.free_bytes / r->pool.unit_bytes, used = 0;
	uint64_t *g = r->macro.grow;
	uint32_t i, j, n = r->n_batch, ng = 0;

	for (i = 0; i < n && K > 1; i++) {
		const struct kv_req *q = r->batch[i];
		uint64_t cap = q->kv_cap_tokens, next = 0, units;

		while (cap - q->kv_tokens < K) { /* a growth after step cap - kv_tokens */
			uint64_t step = cap - q->kv_tokens;

			units = r->cache->grow_units(r->cache_priv, q, cap, &next);
			if (!units || units > 0xffff || i > 0xffff || ng == KV_MACRO_GROWS ||
			    next <= cap) {
				K = step; /* that step's formation runs as an event */
				break;
			}
			g[ng++] = step << 32 | (uint64_t)i << 16 | units;
			cap = next;
		}
	}
	/* insertion sort by (step, index): few entries */
	for (i = 1; i < ng; i++) {
		uint64_t v = g[i];

		for (j = i; j > 0 && g[j - 1] > v; j--)
			g[j] = g[j - 1];
		g[j] = v;
	}
	/* keep those before step K that fit the units free now, a whole step at a time */
	for (i = 0; i < ng && (g[i] >> 32) < K; i = j) {
		uint64_t step_units = 0;

		for (j = i; j < ng && g[j] >> 32 == g[i] >> 32; j++)
			step_units += g[j] & 0xffff;
		if (used + step_units > free_units) {
			K = g[i] >> 32;
			break;
		}
		used += step_units;
	}
	r->macro.ng = i;
	r->macro.gi = 0;
	return K;
}

/*
 * Whether the batch just formed, with requests waiting, is full: the
 * sequence cap or the token budget spent, so that every later formation
 * refuses every waiting request with KV_ERANGE before looking at it
 * (kv__replica_schedule), with no side effect (scheduler.h).
 */
static int batch_full(const struct kv_replica *r)
{
	return r->n_batch >= r->cfg->max_batch_seqs || r->budget_tokens == 0;
}

/*
 * Whether the waiting requests refused in the batch just formed (not full)
 * are refused again, the same way, at every later formation of the run, so
 * that the run may go on with them waiting.  The scheduler's declarations
 * say it tries the same ones in the same order (head_repeats); a refusal for
 * the budget left has no side effect and repeats (the batch and the budget
 * left are the run's), and so does one by the engine's admit rule in a step
 * that preempted nobody (vLLM V1's progress guard, which a request ending
 * anywhere reopens, never closes under fifo, whose victims are the newest:
 * engine_vllm.c; SGLang runs no macro step with requests waiting); a
 * refusal for memory touches only the pool (no prefix cache: prefix_hit and
 * evictable_bytes would take references, evict and reorder LRU lists) and
 * repeats because
 * the run only allocates: the free units at a later formation are a subset
 * of those now, and a buddy allocation of aligned blocks that fails on a set
 * of free units fails on every subset.  Those memory refusals are made
 * again at each formation (refuse), in the per-step engine's order,
 * so the pool's counters (alloc_fail, alloc_fail_frag) and its free stacks
 * are the per-step engine's.  Not in a step that preempted (vLLM V1 admits
 * nobody then, but would in the next).
 */
static int refused_ok(const struct kv_replica *r)
{
	uint32_t i;

	if (r->step_preempted ||
	    r->n_ref > KV_MACRO_REFUSED || r->cache->prefix_hit || r->cache->evictable_bytes)
		return 0;
	if (!head_repeats(r))
		return 0;
	for (i = 0; i < r->n_ref; i++)
		if (r->ref_q[i]->state != KV_REQ_WAITING || r->ref_q[i]->batch_tokens)
			return 0; /* refused, then admitted after all */
	return 1;
}

/*
 * The memory refusals of the formation at the end of a run's step (after
 * its planned growths), made again as kv__macro_start recorded them: each must
 * fail again (refused_ok says why it does).
 */
static void refuse(struct kv_replica *r)
{
	uint32_t i;

	for (i = 0; i < r->macro.nref; i++) {
		struct kv_req *q = r->ref_q[i];
		int rc = r->macro.schedule(r, q);

		KV_CHECK(rc == KV_ENOMEM,
			 "replica %u: waiting request %llu, refused memory when the macro step began, now gets %d",
			 r->idx, (unsigned long long)q->id, rc);
	}
	r->n_ref = r->macro.nref; /* the record stays the run's */
}

/*
 * The window terms of a run's step whose requests' contexts are their
 * kv_tokens + d: the tokens past the window W over the batch (the pairs a
 * windowed layer skips, kv__decodes_add), and in *past the requests with
 * any (each adds one to the live excess when the step ends: step_apply).
 * 0 without a window.
 */
static uint64_t skip_pairs(const struct kv_replica *r, uint64_t d, uint32_t *past)
{
	uint64_t w = r->window_tokens, skip = 0;
	uint32_t i, m = 0;

	for (i = 0; w != UINT64_MAX && i < r->n_batch; i++) {
		uint64_t x = r->batch[i]->kv_tokens + d;

		if (x > w) {
			skip += x - w;
			m++;
		}
	}
	*past = m;
	return skip;
}

/*
 * The KV bytes a run's step reads and dequantises, as batch_add and
 * form_step count them: each request's context is its kv_tokens + d (d = 1
 * for the step being formed, ctx their sum, skip their tokens past the
 * window).  A cache model's read_bytes and dequant_bytes hooks are pure
 * functions of the context, summed in integers over the batch as batch_add
 * sums them; without them the read is form_step's (ctx - f * skip) * beta.
 */
static void step_bytes(const struct kv_replica *r, struct kv_batch_shape *sh, uint64_t d,
			uint64_t ctx, uint64_t skip)
{
	const struct kv_cache_ops *c = r->cache;
	uint64_t rb = 0, db = 0;
	uint64_t plain = (uint64_t)(((double)ctx - r->window_frac * (double)skip) * r->beta_bytes);
	uint32_t i;

	sh->window_skip_pairs = skip;
	if (!c->read_bytes && !c->dequant_bytes) {
		sh->kv_read_bytes = plain;
		return;
	}
	for (i = 0; i < r->n_batch; i++) {
		uint64_t x = r->batch[i]->kv_tokens + d;

		if (c->read_bytes)
			rb += c->read_bytes(r->cache_priv, x);
		if (c->dequant_bytes)
			db += c->dequant_bytes(r->cache_priv, x);
	}
	/* with read_bytes, form_step adds its plain term of nothing: 0 */
	sh->kv_read_bytes = c->read_bytes ? rb : plain;
	sh->dequant_bytes = db;
}

/* Counts the batch's requests per tenant into tn / tc. */
static void count_tenants(struct kv_replica *r)
{
	uint32_t i;

	for (i = 0; i < r->macro.nt; i++)
		r->macro.tc[r->macro.tn[i]] = 0;
	r->macro.nt = 0;
	if (r->sim->cfg->source.n_tenants <= 1) { /* no need to read the requests' cold half */
		r->macro.tn[r->macro.nt++] = 0;
		r->macro.tc[0] = r->n_batch;
		return;
	}
	for (i = 0; i < r->n_batch; i++) {
		uint32_t t = r->batch[i]->tenant;

		if (!r->macro.tc[t]++)
			r->macro.tn[r->macro.nt++] = t;
	}
}

/*
 * The steps the batch just formed may repeat, as its requests allow: 0 when
 * one is not a decode inside its holding with tokens to go or the batch is
 * not in running order (a priority policy's order is checked by its
 * ranks_hold); else until one emits its last token or, without grow_units,
 * outgrows its holding.
 */
static uint64_t requests_bound(const struct kv_replica *r)
{
	uint64_t K = KV_MACRO_STEPS;
	uint32_t i;

	for (i = 0; i < r->n_batch; i++) {
		const struct kv_req *q = r->batch[i];

		if (q->batch_tokens != 1 || q->kv_tokens < q->prefill_target ||
		    q->generated >= q->output_tokens || q->kv_tokens >= q->kv_cap_tokens ||
		    (r->sched->order != KV_ORDER_PRIORITY && r->running[i] != q)) /* not in running order */
			return 0;
		K = KV_MIN(K, q->output_tokens - q->generated); /* step K emits its last token */
		if (!r->cache->grow_units)
			K = KV_MIN(K, q->kv_cap_tokens - q->kv_tokens); /* step K + 1 would reserve */
	}
	return K;
}

/*
 * The ends t[1..K] of K steps from now, the first d1_ns long: each later
 * step the same decodes, one more context token each (kv__decodes_add),
 * timed by the perf model on its exact shape.
 */
static void step_ends(struct kv_replica *r, kv_ns d1_ns, uint64_t K)
{
	struct kv_sim *s = r->sim;
	struct kv_batch_shape sh = r->shape;
	struct kv_perf_run run;
	uint64_t ctx = r->ctx_tokens, skip;
	uint32_t n = r->n_batch, k;
	kv_ns *t = r->macro.t;

	kv_perf_iter_prep(&r->grp->perf, &sh, &run); /* the terms no step changes */
	t[0] = s->now;
	t[1] = s->now + d1_ns;
	skip = skip_pairs(r, 1, &r->macro.wx[1]);
	KV_CHECK(skip == sh.window_skip_pairs, "replica %u: %llu pairs past the window, the batch has %llu",
		 r->idx, (unsigned long long)skip, (unsigned long long)sh.window_skip_pairs);
	for (k = 2; k <= K; k++) {
		sh.attn_pairs += n;
		ctx += n;
		skip = skip_pairs(r, k, &r->macro.wx[k]);
		step_bytes(r, &sh, k, ctx, skip);
		t[k] = t[k - 1] + kv_perf_iter_run_ns(&r->grp->perf, &run, &sh);
	}
}

/*
 * Tries to start a macro step for the batch just formed (first step d1_ns
 * long): every running request decodes in it and none can be admitted
 * (none waits, or the batch is full, or the refusals repeat: refused_ok),
 * so the next batches are the same requests one token further, until one
 * finishes (its last token) or outgrows its holding (the step whose decode
 * would not fit), or the scheduler's next decision (a priority policy's
 * ranks_hold), or the engine's (its macro_steps hook).  Computes the steps'
 * ends and queues one event at the last; returns 1, or 0 when fewer than
 * two steps qualify (the caller queues the single step).
 */
int kv__macro_start(struct kv_replica *r, kv_ns d1_ns)
{
	struct kv_sim *s = r->sim;
	uint64_t K;
	int refused;
	kv_ns *t = r->macro.t;

	/* with requests waiting and the batch not full, they were refused: repeat it */
	refused = r->sched->waiting(r->sched_priv) && !batch_full(r);
	if (!r->macro.ok || r->n_batch != r->n_running || (refused && !refused_ok(r)))
		return 0;
	K = requests_bound(r);
	if (K && r->cache->grow_units)
		K = plan_grows(r, K);
	if (K < 2)
		return 0;
	step_ends(r, d1_ns, K);
	if (r->sched->order == KV_ORDER_PRIORITY) /* the policy's next decision */
		K = KV_MIN(K, r->sched->ranks_hold(r->sched_priv, r, t, (uint32_t)K));
	r->macro.no_admit = 0;
	if (K >= 2 && r->eng->macro_steps) /* the engine's (SGLang: a prefill batch to try) */
		K = KV_MIN(K, r->eng->macro_steps(r->eng_priv, r, (uint32_t)K));
	if (K < 2)
		return 0;
	while (r->macro.ng && r->macro.grow[r->macro.ng - 1] >> 32 >= K)
		r->macro.ng--; /* growths planned past the run, now cut shorter */
	count_tenants(r);
	/* every formation of the run repeats them (a full batch refuses with KV_ERANGE, no side effect) */
	r->macro.nref = refused && !r->macro.no_admit ? r->n_ref : 0;
	r->macro.k = r->macro.kq = r->macro.ko = 0;
	r->macro.K = (uint32_t)K;
	r->macro.seq = kv_heap_push_at(&s->heap, t[K], t[K - 1], KV_EV_ITER_DONE, r->idx,
				       r->macro.gen);
	s->macro_next[r->idx] = s->macro_onext[r->idx] = t[1];
	kv__out_changed(r); /* K: the tokens' lower bound */
	return 1;
}

/*
 * The reserves planned after step k (at its end t), in batch order, as the
 * per-step engine's kv__replica_schedule makes them forming step k + 1.
 */
static void apply_grows(struct kv_replica *r, uint32_t k, kv_ns t)
{
	while (r->macro.gi < r->macro.ng && r->macro.grow[r->macro.gi] >> 32 == k) {
		struct kv_req *q = r->batch[r->macro.grow[r->macro.gi] >> 16 & 0xffff];
		uint64_t want = q->kv_tokens + (k - r->macro.kq) + 1, reserved;
		int rc;

		KV_CHECK(want == q->kv_cap_tokens + 1, "replica %u: request %llu grows to %llu tokens at a cap of %llu",
			 r->idx, (unsigned long long)q->id, (unsigned long long)want,
			 (unsigned long long)q->kv_cap_tokens);
		kv__req_mem_touch_at(q, t);
		rc = r->cache->reserve(r->cache_priv, q, want);
		KV_CHECK(rc == 0, "replica %u: a promised reserve of request %llu failed (%d)", r->idx,
			 (unsigned long long)q->id, rc);
		reserved = r->pool.size_bytes - r->pool.free_bytes;
		if (reserved > r->peak_reserved_bytes)
			r->peak_reserved_bytes = reserved;
		r->macro.gi++;
	}
}

/* Stores kv__macro_sync's register copies of r's and the tenant's sums. */
static inline void sync_store(struct kv_replica *r, double res_Bs, double used_Bs, double frag_s,
			      kv_ns t0, kv_ns busy, kv_ns start, uint64_t live, uint64_t wx)
{
	r->live_win_excess = wx;
	r->reserved_Bs = res_Bs;
	r->used_Bs = used_Bs;
	r->extfrag_s = frag_s;
	r->acct_t0_ns = t0;
	r->busy_ns = busy;
	r->iter_start_ns = start;
	r->live_tokens = live;
}

/*
 * The scheduler's accounting of the formations at the ends of steps
 * k0 + 1 .. k, each the same decode batch (scheduler.h): additive per
 * token, each tenant charged its decodes in the batch times the steps, in
 * one call (its counters are its own: the order over tenants does not
 * matter); per round, each closed at its time, in order.
 */
static void sched_account(struct kv_replica *r, uint32_t k0, uint32_t k)
{
	const struct kv_sched_ops *o = r->sched;
	const struct kv_macro *m = &r->macro;
	uint32_t i, j;

	if (o->charge_decodes)
		for (i = 0; i < m->nt; i++)
			o->charge_decodes(r->sched_priv, m->tn[i], (uint64_t)m->tc[m->tn[i]] * (k - k0));
	if (o->close_round)
		for (j = k0 + 1; j <= k; j++)
			o->close_round(r->sched_priv, r, m->t[j]);
}

/*
 * Applies r's pending macro steps before event e (all when e is NULL) as
 * the per-step engine's ITER_DONE and the kick after it would, in the same
 * order and the same floating-point operations: memory integrals at each
 * step's end, busy time, iterations, live and outstanding tokens, the
 * tenants' service, the event count.  The batch re-formed after each such
 * step is the same requests (kv__macro_start's conditions); their own token
 * counters are brought up at the macro step's end (kv__macro_end), as nothing
 * else reads them in between.  O(1) per step.
 */
void kv__macro_sync(struct kv_replica *r, const struct kv_event *e)
{
	struct kv_sim *s = r->sim;
	uint32_t k = r->macro.k, k0 = k, kc = k, n = r->n_batch, i;
	/* rep_acct_at's terms that no macro step changes: the pool is r's own and untouched */
	double reserved = (double)(r->pool.size_bytes - r->pool.free_bytes);
	double frag = kv_pool_ext_frag(&r->pool);
	/* the sums the steps add to, in registers (same operations, same order) */
	double res_Bs = r->reserved_Bs, used_Bs = r->used_Bs, frag_s = r->extfrag_s;
	kv_ns t0 = r->acct_t0_ns, busy = r->busy_ns, start = r->iter_start_ns;
	uint64_t live = r->live_tokens, wx = r->live_win_excess;

	for (;;) {
		kv_ns t;
		double dt_s;
		int grow;

		if (k + 1 >= r->macro.K)
			break;
		t = r->macro.t[k + 1];
		if (e && t >= e->t_ns) {
			struct kv_event v = { .t_ns = t, .p_ns = r->macro.t[k], .seq = r->macro.seq };

			if (!kv_event_before(&v, e))
				break;
		}
		/* rep_acct_at(r, t), term for term */
		if (t != t0) {
			dt_s = (double)(t - t0) * 1e-9;
			res_Bs += reserved * dt_s;
			/* kv_replica_live_bytes(r), term for term */
			used_Bs += (wx ? ((double)live - r->window_frac * (double)wx) * r->beta_bytes
				       : (double)live * r->beta_bytes) * dt_s;
			frag_s += frag * dt_s;
			t0 = t;
		}
		busy += t - start;
		start = t;
		live += n;
		wx += r->macro.wx[k + 1]; /* step_apply's, request by request */
		k++;
		grow = r->macro.gi < r->macro.ng && r->macro.grow[r->macro.gi] >> 32 == k;
		if (grow) {
			sync_store(r, res_Bs, used_Bs, frag_s, t0, busy, start, live, wx);
			apply_grows(r, k, t);
			reserved = (double)(r->pool.size_bytes - r->pool.free_bytes);
			frag = kv_pool_ext_frag(&r->pool);
		}
		if (r->macro.nref) { /* the formation's refused waiters, after its growths */
			if (!grow)
				sync_store(r, res_Bs, used_Bs, frag_s, t0, busy, start, live, wx);
			r->iterations += k - kc; /* the replica as the per-step engine has it */
			s->events += k - kc;
			s->macro_steps += k - kc;
			kc = k;
			refuse(r);
			reserved = (double)(r->pool.size_bytes - r->pool.free_bytes);
			frag = kv_pool_ext_frag(&r->pool);
		}
	}
	sync_store(r, res_Bs, used_Bs, frag_s, t0, busy, start, live, wx);
	/* per step: the per-step engine's iteration and its ITER_DONE event */
	r->iterations += k - kc;
	s->events += k - kc;
	s->macro_steps += k - kc;
	if (k > k0) {
		const struct kv_fairness_cfg *fw = &s->cfg->fairness;
		/* a decode's service, as step_apply computes it: in = 0, one output token */
		double svc = 0.0 * fw->input_weight + 1.0 * fw->output_weight;

		/*
		 * Each tenant's service and virtual service, k - k0 steps of
		 * its requests at once: dyadic weights (macro_allowed), so the
		 * one sum equals the per-step engine's additions, in any order
		 * with other replicas' (below 2^45 weighted tokens).
		 */
		for (i = 0; i < r->macro.nt; i++) {
			uint32_t tn = r->macro.tn[i];
			double m = (double)r->macro.tc[tn] * (double)(k - k0);

			s->tenant[tn].service += svc * m;
			s->tenant[tn].vservice += svc * s->inv_weight[tn] * m;
		}
		/* the formations at the ends of steps k0 + 1 .. k (of steps k0 + 2 .. k + 1) */
		sched_account(r, k0, k);
		if (r->eng->macro_apply)
			r->eng->macro_apply(r->eng_priv, r, k - k0);
	}
	r->macro.k = k;
	if (r->macro.ko < k) {
		r->outstanding_tokens -= (uint64_t)r->n_batch * (k - r->macro.ko);
		kv__out_changed(r);
		r->macro.ko = k;
	}
	s->macro_next[r->idx] = k + 1 < r->macro.K ? r->macro.t[k + 1] : KV_NS_NEVER;
	s->macro_onext[r->idx] = r->macro.ko + 1 < r->macro.K ? r->macro.t[r->macro.ko + 1] : KV_NS_NEVER;
}

/*
 * The router's view: the outstanding tokens the per-step engine would show
 * at e, without the rest of the steps' accounting (kv__macro_sync does it
 * later, in step order).  An integer count, so the split changes nothing.
 */
void kv__macro_sync_outstanding(struct kv_replica *r, const struct kv_event *e)
{
	uint32_t k = r->macro.ko, n = r->n_batch;

	while (k + 1 < r->macro.K) {
		struct kv_event v = { .t_ns = r->macro.t[k + 1], .p_ns = r->macro.t[k],
				      .seq = r->macro.seq };

		if (!kv_event_before(&v, e))
			break;
		r->outstanding_tokens -= n;
		k++;
	}
	r->macro.ko = k;
	kv__out_changed(r);
	r->sim->macro_onext[r->idx] = k + 1 < r->macro.K ? r->macro.t[k + 1] : KV_NS_NEVER;
}

/*
 * At the event ending r's macro step (step K, or the step in flight
 * when an arrival cut it): applies the pending steps, brings every request's
 * tokens up by the steps applied, and checks the last step's duration
 * against the perf model on its shape now.
 */
void kv__macro_sync_reqs(struct kv_replica *r)
{
	uint32_t i, k = r->macro.k - r->macro.kq;

	if (!k)
		return;
	for (i = 0; i < r->n_batch; i++) {
		r->batch[i]->kv_tokens += k;
		r->batch[i]->generated += k;
	}
	r->macro.kq = r->macro.k;
}

void kv__macro_end(struct kv_replica *r)
{
	struct kv_sim *s = r->sim;
	struct kv_batch_shape sh = r->shape;
	uint64_t pairs = 0;
	uint32_t i, k, past;

	kv__macro_sync(r, NULL);
	kv__macro_sync_reqs(r);
	k = r->macro.k;
	for (i = 0; i < r->n_batch; i++)
		pairs += r->batch[i]->kv_tokens + 1;
	sh.attn_pairs = pairs;
	step_bytes(r, &sh, 1, pairs, skip_pairs(r, 1, &past));
	/* step 1's own duration came from iter_ns (with any host-link copies a swap queued) */
	KV_CHECK(k == 0 || kv_perf_iter_ns(&r->grp->perf, &sh) == r->macro.t[k + 1] - r->macro.t[k],
		 "replica %u: macro step %u of %u lasts %llu ns, predicted %llu", r->idx, k + 1,
		 r->macro.K, (unsigned long long)kv_perf_iter_ns(&r->grp->perf, &sh),
		 (unsigned long long)(r->macro.t[k + 1] - r->macro.t[k]));
	r->macro.K = r->macro.k = r->macro.kq = r->macro.ko = 0;
	r->macro.ng = r->macro.gi = 0;
	s->macro_next[r->idx] = s->macro_onext[r->idx] = KV_NS_NEVER;
	kv__out_changed(r); /* K: the tokens' lower bound */
}

/* Cuts r's macro step at the step in flight (its batch is about to change). */
void kv__macro_cut(struct kv_replica *r)
{
	struct kv_sim *s = r->sim;
	uint32_t k;

	kv__macro_sync(r, &s->ev); /* the router may have brought up only its view */
	k = r->macro.k + 1;
	if (k >= r->macro.K)
		return;
	r->macro.K = k;
	r->macro.gen++; /* the queued event is now stale */
	r->macro.seq = kv_heap_push_at(&s->heap, r->macro.t[k], r->macro.t[k - 1],
				       KV_EV_ITER_DONE, r->idx, r->macro.gen);
	s->macro_next[r->idx] = s->macro_onext[r->idx] = KV_NS_NEVER;
	kv__out_changed(r); /* K: the tokens' lower bound */
}

