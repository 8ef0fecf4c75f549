/*
 * replica.c -- one replica: batch formation, admission, preemption by swap
 * or recompute, memory accounting, and the iteration's end.  See replica.h
 * for the split between this mechanism and the schedulers' policy, and
 * engine.h for the token and time model; runs of identical decode steps
 * taken as one event are macro.c's (macro.h).
 */
#include "replica.h"
#include "serving_impl.h"

#include <assert.h>
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* --- memory accounting ------------------------------------------------- */

static void req_mem_touch(const struct kv_sim *s, struct kv_req *q)
{
	kv__req_mem_touch_at(q, s->now);
}

/* Brings r's memory integrals up to `now`; call before reserved or live bytes change. */
static void rep_acct_at(struct kv_replica *r, kv_ns now)
{
	double dt_s = (double)(now - r->acct_t0_ns) * 1e-9;
	uint64_t reserved = r->pool.size_bytes - r->pool.free_bytes;

	if (now == r->acct_t0_ns)
		return;
	r->reserved_Bs += (double)reserved * dt_s;
	r->used_Bs += kv_replica_live_bytes(r) * dt_s;
	r->extfrag_s += kv_pool_ext_frag(&r->pool) * dt_s;
	r->acct_t0_ns = now;
}

static void rep_acct(struct kv_replica *r)
{
	rep_acct_at(r, r->sim->now);
}

/* Grows q's holding to `tokens` through the cache model; 0 or KV_ENOMEM. */
static int req_reserve(struct kv_replica *r, struct kv_req *q, uint64_t tokens)
{
	uint64_t reserved;
	int rc;

	if (tokens <= q->kv_cap_tokens)
		return 0; /* the hot path: a decode step inside the holding */
	req_mem_touch(r->sim, q);
	rc = r->cache->reserve(r->cache_priv, q, tokens);
	reserved = r->pool.size_bytes - r->pool.free_bytes;
	if (reserved > r->peak_reserved_bytes)
		r->peak_reserved_bytes = reserved;
	return rc;
}

static void req_release(struct kv_replica *r, struct kv_req *q)
{
	req_mem_touch(r->sim, q);
	r->cache->release(r->cache_priv, q);
	KV_CHECK(q->kv_bytes == 0 && q->kv_cap_tokens == 0,
		 "request %llu holds %llu bytes after release", (unsigned long long)q->id,
		 (unsigned long long)q->kv_bytes);
	r->live_tokens -= q->kv_tokens;
	r->live_win_excess -= kv_win_excess(q->kv_tokens, r->window_tokens);
}

/* --- the running set ---------------------------------------------------- */

static void running_remove(struct kv_replica *r, struct kv_req *q)
{
	uint32_t i = q->run_idx;

	KV_CHECK(i < r->n_running && r->running[i] == q, "request %llu not in running set",
		 (unsigned long long)q->id);
	memmove(&r->running[i], &r->running[i + 1],
		(r->n_running - i - 1) * sizeof(*r->running));
	r->n_running--;
	for (; i < r->n_running; i++)
		r->running[i]->run_idx = i;
}

/*
 * Applies every replica's macro steps that end before the event being
 * handled (engine.h): their tenants' virtual service, which a lift below
 * compares, as the per-step engine has it now.  Only when another tenant
 * waits (else nothing is compared).
 */
static void sync_service(struct kv_sim *s, const struct kv_tenant_stats *t)
{
	uint32_t i;
	int other = 0;

	for (i = 0; i < s->cfg->source.n_tenants && !other; i++)
		other = s->tenant[i].waiting && &s->tenant[i] != t;
	for (i = 0; other && i < s->n_rep; i++)
		if (s->macro_next[i] <= s->ev.t_ns)
			kv__macro_sync(&s->rep[i], &s->ev);
}

/*
 * A request of q's tenant joins a queue.  A tenant becoming backlogged has
 * its virtual service lifted to the least among the backlogged (VTC's rule),
 * so the service-difference metric measures only time both were waiting.
 */
static void tenant_queued(struct kv_sim *s, const struct kv_req *q)
{
	struct kv_tenant_stats *t = &s->tenant[q->tenant];
	double low = 0;
	uint32_t i;
	int any = 0;

	if (t->waiting++)
		return;
	if (s->macro && s->cfg->source.n_tenants > 1)
		sync_service(s, t);
	for (i = 0; i < s->cfg->source.n_tenants; i++) {
		if (!s->tenant[i].waiting || &s->tenant[i] == t)
			continue;
		if (!any || s->tenant[i].vservice < low)
			low = s->tenant[i].vservice;
		any = 1;
	}
	if (any && t->vservice < low)
		t->vservice = low;
}

static void tenant_unqueued(struct kv_sim *s, const struct kv_req *q)
{
	KV_CHECK(s->tenant[q->tenant].waiting > 0, "tenant %u has no waiting request", q->tenant);
	s->tenant[q->tenant].waiting--;
}

/* Calls the observer, if any (the timeline). */
static inline void observe(const struct kv_replica *r, enum kv_obs_event ev, const struct kv_req *q,
			   kv_ns dur)
{
	const struct kv_observer *o = &r->sim->cfg->observer;

	if (o->fn)
		o->fn(o->ctx, r->sim, ev, r, q, dur);
}

static void enqueue(struct kv_replica *r, struct kv_req *q)
{
	q->queued_ns = r->sim->now;
	tenant_queued(r->sim, q);
	r->sched->enqueue(r->sched_priv, r, q);
}

/* Moves a waiting q that schedule() accepted into the running set. */
static void admit(struct kv_replica *r, struct kv_req *q)
{
	tenant_unqueued(r->sim, q);
	KV_CHECK(q->state == KV_REQ_WAITING, "admitting request %llu in state %u",
		 (unsigned long long)q->id, q->state);
	if (r->n_running == r->running_cap) {
		r->running_cap = r->running_cap ? 2 * r->running_cap : 64;
		r->running = kv_xrealloc(r->running, r->running_cap * sizeof(*r->running));
	}
	q->state = KV_REQ_RUNNING;
	r->wait_ns += r->sim->now - q->queued_ns;
	r->admits++;
	q->run_idx = r->n_running;
	r->running[r->n_running++] = q;
	observe(r, KV_OBS_ADMIT, q, 0);
}

/* --- ending a request ---------------------------------------------------- */

/* Prefill tokens q still has to compute. */
static uint64_t prefill_left(const struct kv_req *q)
{
	return q->kv_tokens < q->prefill_target ? q->prefill_target - q->kv_tokens : 0;
}

int kv__replica_end(struct kv_replica *r, struct kv_req *q, enum kv_end e)
{
	struct kv_sim *s = r->sim;
	const struct kv_sim_config *c = r->cfg;
	struct kv_tenant_stats *ts = &s->tenant[q->tenant];
	/* what q leaves of r's outstanding tokens, read before a landed q's KV tokens are dropped */
	uint64_t todo = prefill_left(q) + (q->output_tokens - q->generated);
	int rc = 0;

	q->finish_ns = s->now;
	if (r->restarted == q)
		r->restarted = NULL; /* its slot may be reused */
	if (q->swapped_bytes) { /* ends on host: its copy is dropped */
		r->swap_dropped_bytes += q->swapped_bytes;
		q->swapped_bytes = 0;
	} else if (q->xfer_bytes) { /* landed from a link, never admitted: dropped */
		r->xfer_dropped_bytes += q->xfer_bytes;
		r->inbound_bytes -= q->xfer_bytes;
		kv__pool_freed(&r->pool); /* least-kv's load drops (disagg.h) */
		q->xfer_bytes = 0;
		q->kv_tokens = 0;
	} else if (q->kv_bytes || q->kv_tokens) {
		q->leaving = 1; /* ended: never looked up here again (cache.h release) */
		req_release(r, q);
		q->leaving = 0;
	}
	r->outstanding_tokens -= todo;
	kv__out_changed(r);
	r->n_assigned--;
	if (c->router->on_end)
		c->router->on_end(s->router_priv, r->idx, q);
	s->ended[e]++;
	if (e == KV_END_COMPLETED) {
		double L = (double)(q->prompt_tokens + q->output_tokens);

		q->cost = c->device.alpha * (double)kv_model_weight_bytes(&c->model) +
			  r->beta_bytes * L * (double)q->output_tokens;
		if (q->first_token_ns == KV_NS_NEVER)
			q->first_token_ns = s->now;
		kv__frontend_out(&r->fe, q); /* what the client sees: the front end's way out */
		kv_hist_add(&s->ttft, q->first_token_ns - q->arrival_ns);
		kv_hist_add(&s->e2e, q->finish_ns - q->arrival_ns);
		if (q->output_tokens > 1)
			kv_hist_add(&s->tpot,
				    (q->finish_ns - q->first_token_ns) / (q->output_tokens - 1));
		kv_hist_add(&ts->ttft, q->first_token_ns - q->arrival_ns);
		kv_hist_add(&ts->e2e, q->finish_ns - q->arrival_ns);
		kv_hist_add(&r->grp->ttft, q->first_token_ns - q->arrival_ns);
		kv_hist_add(&r->grp->e2e, q->finish_ns - q->arrival_ns);
		r->grp->completed++;
		r->grp->prompt_tokens_done += q->prompt_tokens;
		r->grp->output_tokens_done += q->output_tokens;
		ts->completed++;
		ts->prompt_tokens += q->prompt_tokens;
		ts->output_tokens += q->output_tokens;
		ts->cost += q->cost;
		s->prompt_tokens_done += q->prompt_tokens;
		s->output_tokens_done += q->output_tokens;
		s->kv_token_steps_done += (double)q->output_tokens *
					  ((double)q->prompt_tokens + (double)q->output_tokens / 2.0);
		if (r->sched->on_done)
			r->sched->on_done(r->sched_priv, r, q);
	} else {
		ts->rejected++;
		r->grp->rejected++;
	}
	if (s->rep_state && kv__autoscale_of(s, r->idx)) /* the slo policy's count */
		kv__autoscale_ended(kv__autoscale_of(s, r->idx), q, e == KV_END_COMPLETED);
	if (q->finish_ns > s->last_finish_ns)
		s->last_finish_ns = q->finish_ns;
	observe(r, KV_OBS_END, q, (kv_ns)e);
	if (s->sink.request && s->sink.request(s->sink.ctx, s, q, e))
		rc = KV_EIO;
	kv__session_end(s, q, e); /* its session's next turn, if any */
	if (s->gate.limit)
		kv__gate_end(s, q); /* its place under the concurrency limit frees */
	s->n_live--;
	kv__slot_free(s, q);
	return rc;
}

/* --- batch formation ---------------------------------------------------- */

uint64_t kv_req_next_tokens(const struct kv_req *q)
{
	if (q->kv_tokens < q->prefill_target)
		return q->prefill_target - q->kv_tokens;
	return 1;
}

/* Host-link time of a copy of `bytes`. */
static kv_ns copy_time_ns(const struct kv_replica *r, uint64_t bytes)
{
	double bw = r->cfg->device.host_link_Bps * r->cfg->tp *
		    (r->cfg->pp ? r->cfg->pp : 1); /* every GPU of the replica copies its share */

	return bw > 0 ? (kv_ns)ceil((double)bytes / bw * 1e9) : 0;
}

static void swap_out(struct kv_replica *r, struct kv_req *q)
{
	uint64_t bytes = q->kv_bytes;

	req_release(r, q); /* the tokens leave the device; q keeps kv_tokens */
	q->swapped_bytes = bytes ? bytes : 1; /* nonzero marks "on host" */
	r->swap_out_bytes += q->swapped_bytes;
	r->swaps++;
	r->copy_ns += copy_time_ns(r, bytes);
}

/*
 * Puts the KV that q's transfer landed (disagg.h) on the device after its
 * memory was reserved: no copy time, the link has carried it.
 */
static void xfer_land(struct kv_replica *r, struct kv_req *q)
{
	r->live_tokens += q->kv_tokens;
	r->live_win_excess += kv_win_excess(q->kv_tokens, r->window_tokens);
	r->xfer_in_bytes += q->xfer_bytes;
	r->inbound_bytes -= q->xfer_bytes;
	kv__pool_freed(&r->pool); /* least-kv's load may drop: the holding can be smaller (disagg.h) */
	q->xfer_bytes = 0;
}

/* Brings a swapped q's KV back after its memory was reserved. */
static void swap_in(struct kv_replica *r, struct kv_req *q)
{
	r->live_tokens += q->kv_tokens;
	r->live_win_excess += kv_win_excess(q->kv_tokens, r->window_tokens);
	r->swap_in_bytes += q->swapped_bytes;
	r->copy_ns += copy_time_ns(r, q->swapped_bytes);
	q->swapped_bytes = 0;
}

static void recompute(struct kv_replica *r, struct kv_req *q)
{
	req_release(r, q);
	r->outstanding_tokens -= prefill_left(q);
	q->prefill_target = q->prompt_tokens + q->generated;
	q->kv_tokens = 0;
	r->outstanding_tokens += q->prefill_target;
	kv__out_changed(r);
}

/*
 * A request scheduled with `tokens` of its prefix loaded from the tiers
 * below the pool, landing at done: the iteration waits for the latest
 * load (iter_ns), and the TTFT saved is estimated as the time a lone
 * prefill of those tokens would take (the recompute avoided) less the
 * wait (docs/cluster.md "Tiered KV store").
 */
static void tier_loaded(struct kv_replica *r, uint64_t tokens, kv_ns done, int blocking)
{
	struct kv_batch_shape b = { 0 };
	kv_ns now = r->sim->now, w = done > now ? done - now : 0;

	b.n_seqs = 1;
	b.n_prefill_tokens = tokens;
	b.attn_pairs = kv_perf_prefill_pairs(0, tokens);
	r->tier_load_tokens += tokens;
	r->tier_loads++;
	r->tier_recompute_ns += kv_perf_iter_ns(&r->grp->perf, &b);
	r->tier_wait_ns += w;
	r->load_wait_ns = KV_MAX(r->load_wait_ns, w);
	r->load_blocking = blocking;
}

/* Asks the cache model for q's cached prefix; the engine skips its prefill. */
static void take_prefix(struct kv_replica *r, struct kv_req *q)
{
	uint64_t h;

	req_mem_touch(r->sim, q);
	h = r->cache->prefix_hit(r->cache_priv, q);
	KV_CHECK(h < q->prefill_target || (h == 0 && q->prefill_target == 0),
		 "prefix hit of %llu tokens for a prefill of %llu", (unsigned long long)h,
		 (unsigned long long)q->prefill_target);
	q->kv_tokens = h;
	r->live_tokens += h;
	r->live_win_excess += kv_win_excess(h, r->window_tokens);
	r->outstanding_tokens -= h;
	kv__out_changed(r);
}

/* Undoes take_prefix for a request that could not be admitted after all. */
static void drop_prefix(struct kv_replica *r, struct kv_req *q)
{
	r->outstanding_tokens += q->kv_tokens;
	kv__out_changed(r);
	req_release(r, q);
	q->kv_tokens = 0;
}

/*
 * Adds q, its memory reserved, to the batch for `take` tokens, with its
 * share of the batch's shape.  A decode step of a plain cache model goes
 * through the decode helper, as on the fast paths.
 */
static void batch_add(struct kv_replica *r, struct kv_req *q, uint64_t take)
{
	uint64_t ctx = q->kv_tokens + take;
	int prefill = q->kv_tokens < q->prefill_target;

	assert(take > 0 && take <= r->budget_tokens + (r->n_batch == 0 ? take : 0));
	if (!prefill && r->plain_decode) {
		struct kv__decodes d;

		kv__decodes_begin(r, &d);
		kv__decodes_add(&d, q);
		kv__decodes_end(r, &d);
		return;
	}
	q->batch_tokens = (uint32_t)take;
	r->batch[r->n_batch++] = q;
	kv__out_changed(r); /* n_batch: the tokens' lower bound */
	r->budget_tokens -= KV_MIN(take, r->budget_tokens);
	r->shape.n_seqs++;
	if (prefill) {
		/* the chunk that completes the prefill samples the first token */
		r->shape.n_sample += ctx >= q->prefill_target;
		r->shape.n_prefill_tokens += take;
		r->shape.attn_pairs += kv_perf_prefill_pairs(q->kv_tokens, take);
		if (take > r->shape.max_chunk_tokens) { /* a lockstep group's slowest rank (perf.h) */
			r->shape.max_chunk_tokens = take;
			r->shape.max_chunk_pairs = kv_perf_prefill_pairs(q->kv_tokens, take);
		}
		/* windowed layers skip the keys before each query's window (perf.h) */
		r->shape.window_skip_pairs +=
			kv_perf_window_skip_pairs(q->kv_tokens, take, r->window_tokens);
	} else {
		uint64_t skip = ctx > r->window_tokens ? ctx - r->window_tokens : 0;

		r->shape.n_decode++;
		r->shape.n_sample++;
		r->shape.attn_pairs += ctx;
		r->shape.window_skip_pairs += skip;
		if (r->cache->extra_prefill_tokens) {
			uint64_t x = r->cache->extra_prefill_tokens(r->cache_priv, q);

			q->batch_extra = x;
			r->shape.n_prefill_tokens += x;
			r->shape.attn_pairs += x * ctx;
			r->shape.window_skip_pairs += x * skip;
		}
	}
	if (r->cache->dequant_bytes)
		r->shape.dequant_bytes += r->cache->dequant_bytes(r->cache_priv, ctx);
	if (r->cache->read_bytes)
		r->shape.kv_read_bytes += r->cache->read_bytes(r->cache_priv, ctx);
	else {
		r->ctx_tokens += ctx; /* times beta once the batch is formed */
		r->win_excess += ctx > r->window_tokens ? ctx - r->window_tokens : 0;
	}
}

/*
 * Takes q, scheduled in the batch being formed, back out of it: its tokens
 * return to the budget and its share of the batch's shape (what batch_add
 * or kv__decodes_add added, computed again from q's unchanged kv_tokens and
 * batch_tokens) leaves the counters.  Its memory stays reserved (the caller
 * preempts it next).  A sparse model's recompute charge (batch_extra) leaves
 * the shape; the model's own statistics keep it.  For vLLM V1's PRIORITY
 * victim, which may be a request already scheduled this step
 * (scheduler.py schedule(): scheduled_running_reqs.remove, token_budget +=).
 */
static void batch_withdraw(struct kv_replica *r, struct kv_req *q)
{
	uint64_t take = q->batch_tokens, ctx = q->kv_tokens + take;
	uint64_t skip = ctx > r->window_tokens ? ctx - r->window_tokens : 0;
	uint32_t i = 0;

	while (r->batch[i] != q)
		i++;
	assert(i < r->n_batch && take > 0);
	memmove(&r->batch[i], &r->batch[i + 1], (r->n_batch - i - 1) * sizeof(*r->batch));
	r->n_batch--;
	kv__out_changed(r); /* n_batch: the tokens' lower bound */
	q->batch_tokens = 0;
	r->budget_tokens += take; /* a request over the budget ran alone: nobody after it asks for memory */
	r->shape.n_seqs--;
	if (q->kv_tokens < q->prefill_target) {
		r->shape.n_sample -= ctx >= q->prefill_target;
		r->shape.n_prefill_tokens -= take;
		r->shape.attn_pairs -= kv_perf_prefill_pairs(q->kv_tokens, take);
		r->shape.window_skip_pairs -=
			kv_perf_window_skip_pairs(q->kv_tokens, take, r->window_tokens);
	} else {
		r->shape.n_decode--;
		r->shape.n_sample--;
		r->shape.attn_pairs -= ctx * (1 + q->batch_extra);
		r->shape.window_skip_pairs -= skip * (1 + q->batch_extra);
		r->shape.n_prefill_tokens -= q->batch_extra;
	}
	q->batch_extra = 0;
	if (r->cache->dequant_bytes)
		r->shape.dequant_bytes -= r->cache->dequant_bytes(r->cache_priv, ctx);
	if (r->cache->read_bytes) {
		r->shape.kv_read_bytes -= r->cache->read_bytes(r->cache_priv, ctx);
	} else {
		r->ctx_tokens -= ctx;
		r->win_excess -= skip;
	}
}

int kv__replica_schedule(struct kv_replica *r, struct kv_req *q)
{
	const struct kv_sim_config *c = r->cfg;
	int prefill = q->kv_tokens < q->prefill_target;
	uint64_t take = kv_req_next_tokens(q);
	uint64_t want, loaded = 0;
	kv_ns load_done = 0;
	int rc, blocking = 0;

	KV_CHECK(q->batch_tokens == 0, "request %llu scheduled twice",
		 (unsigned long long)q->id);
	KV_CHECK(q->xfer_done_ns <= r->sim->now && q->state != KV_REQ_HANDOFF,
		 "request %llu scheduled at %llu ns before its KV transfer completes (%llu ns)",
		 (unsigned long long)q->id, (unsigned long long)r->sim->now,
		 (unsigned long long)q->xfer_done_ns);
	if (r->n_batch >= c->max_batch_seqs || r->budget_tokens == 0)
		return KV_ERANGE;
	if (q->state == KV_REQ_WAITING ? (r->step_flags & KV_STEP_NO_ADMIT) :
					 (r->step_flags & KV_STEP_NO_DECODE) && !prefill)
		return KV_ERANGE; /* the engine's step kind excludes it (SGLang) */
	if (q->kv_tokens == 0 && !q->kv_bytes && r->cache->prefix_hit) {
		take_prefix(r, q);
		if (r->cache->load)
			loaded = r->cache->load(r->cache_priv, &load_done, &blocking);
		prefill = q->kv_tokens < q->prefill_target;
		take = kv_req_next_tokens(q);
	}
	if (prefill && r->chunk_cap_tokens && take > r->chunk_cap_tokens)
		take = r->chunk_cap_tokens; /* vLLM's long_prefill_token_threshold */
	if (take > r->budget_tokens) {
		if (prefill && c->chunked_prefill)
			take = r->budget_tokens;
		else if (r->n_batch > 0)
			return KV_ERANGE; /* a whole prompt over the budget runs alone */
	}
	/*
	 * Under vllm-v0 (no admit hook) admission reserves the whole prefill,
	 * as vLLM V0's block manager does (can_allocate checks every prompt
	 * block, chunked prefill or not): admitting on the first chunk alone
	 * lets a long prompt start, grow, and be preempted again, thrashing by
	 * recompute under pressure.  Other engines say what to reserve.
	 */
	want = q->kv_tokens + take;
	rc = 0;
	if (q->state == KV_REQ_WAITING) {
		if (r->eng->admit)
			rc = r->eng->admit(r->eng_priv, r, q, take, &want);
		else
			want = KV_MAX(want, q->prefill_target);
	}
	if (!rc)
		rc = req_reserve(r, q, want);
	if (rc) {
		if (rc == KV_ENOMEM) {
			r->last_nomem = q;
			r->last_nomem_tokens = want;
			if (q->state == KV_REQ_WAITING) { /* a macro step repeats it (macro.c) */
				if (r->n_ref < KV_MACRO_REFUSED)
					r->ref_q[r->n_ref] = q;
				r->n_ref++;
			}
		}
		if (q->state == KV_REQ_WAITING && !q->swapped_bytes && !q->xfer_bytes &&
		    (q->kv_bytes || q->kv_tokens))
			drop_prefix(r, q); /* not admitted: give the cached prefix back */
		return rc;
	}
	if (q->swapped_bytes)
		swap_in(r, q);
	else if (q->xfer_bytes)
		xfer_land(r, q);
	if (loaded)
		tier_loaded(r, loaded, load_done, blocking);
	batch_add(r, q, take);
	return 0;
}

/* kv__replica_schedule, decode steps inside their holdings through the fast path. */
static inline int schedule(struct kv_replica *r, struct kv_req *q)
{
	struct kv__decodes d;

	if (q->state != KV_REQ_RUNNING ||
	    !kv__decode_fits(q, r->n_batch, kv__decodes_cap(r), r->budget_tokens))
		return kv__replica_schedule(r, q);
	kv__decodes_begin(r, &d);
	kv__decodes_add(&d, q);
	kv__decodes_end(r, &d);
	return 0;
}

/*
 * Schedules running[from], running[from + 1], ... in order, as schedule()
 * would, stopping at the first that fails.  Returns the index of that
 * request (n_running when all were scheduled) and stores its error in *err
 * (0 when none failed).  Equivalent to the loop over schedule(), only
 * faster.
 */
static uint32_t schedule_running(struct kv_replica *r, uint32_t from, int *err)
{
	uint32_t i = from, cap = kv__decodes_cap(r);
	int rc = 0;

	while (i < r->n_running) {
		struct kv_req *const *running = r->running;
		uint32_t n_running = r->n_running;
		struct kv__decodes d;

		/* decode steps inside their holdings, counters in registers */
		kv__decodes_begin(r, &d);
		for (; i < n_running && kv__decode_fits(running[i], d.n, cap, d.budget); i++)
			kv__decodes_add(&d, running[i]);
		kv__decodes_end(r, &d);
		if (i == n_running)
			break;
		rc = kv__replica_schedule(r, running[i]); /* the general case */
		if (rc)
			break;
		i++;
	}
	*err = rc;
	return i;
}

/*
 * Preempts running q and hands it to the scheduler's enqueue.  By recompute:
 * releases its memory and sets it back to prefill its prompt plus the
 * tokens generated so far.  By swap: copies its KV bytes to host memory
 * over the host link (time added to the next iteration, or overlapped with
 * it, as the cache model says), releases the device memory, and copies them
 * back when it is scheduled again.  q must not be scheduled in the batch
 * being formed.
 */
static void preempt_as(struct kv_replica *r, struct kv_req *q, enum kv_preempt how)
{
	KV_CHECK(q->state == KV_REQ_RUNNING && q->batch_tokens == 0,
		 "preempting request %llu that is not running or already scheduled",
		 (unsigned long long)q->id);
	observe(r, KV_OBS_PREEMPT, q, 0);
	if (how == KV_PREEMPT_AUTO)
		how = r->offload == KV_OFFLOAD_NONE ? KV_PREEMPT_RECOMPUTE : KV_PREEMPT_SWAP;
	running_remove(r, q);
	if (how == KV_PREEMPT_SWAP)
		swap_out(r, q);
	else
		recompute(r, q);
	q->preemptions++;
	r->sim->preemptions++;
	q->state = KV_REQ_WAITING;
	enqueue(r, q);
}

/*
 * Ends running q as rejected (KV_END_REJECTED_POOL): it cannot grow although
 * it is alone on the replica.  q must not be scheduled in the batch being
 * formed.
 */
static void reject(struct kv_replica *r, struct kv_req *q)
{
	struct kv_sim *s = r->sim;
	int rc;

	KV_CHECK(q->state == KV_REQ_RUNNING && q->batch_tokens == 0,
		 "rejecting request %llu that is not running or already scheduled",
		 (unsigned long long)q->id);
	running_remove(r, q);
	if (r->last_nomem == q)
		r->last_nomem = NULL; /* it ends here: kick must not reject it again */
	rc = kv__replica_end(r, q, KV_END_REJECTED_POOL);
	if (rc && !s->deferred_rc)
		s->deferred_rc = rc;
}

/*
 * Whether running q, alone and refused memory, is worth restarting by
 * recompute rather than rejected.  Alone, q and the free space make up the
 * whole pool, but the free space may lie in holes that requests which ended
 * left between q's blocks (the chunked model with small prefill chunks: a
 * block is several buddy blocks), too small for q's next block although an
 * empty pool holds it.  So q's holding is given back and the tokens it asked
 * for are tried on the emptied pool (a scratch copy of q, released at once):
 * q restarts when they fit, and is rejected when they do not (it cannot fit
 * even an empty pool), or when it failed again after such a restart with no
 * request ended since (a second restart could repeat the first forever:
 * restarts of one request are bounded by the ends).  Under vllm-v0 (no admit
 * hook: kvsim's original rules, the golden digests) q is rejected as before,
 * and with a model whose release counts statistics or keeps a cached prefix
 * (the trial would show in them; q would take its own blocks back).
 * Past the guards, q's holding is given back either way (q keeps its tokens
 * until it is preempted or rejected, which release nothing more).
 */
static int restart_alone(struct kv_replica *r, struct kv_req *q)
{
	const struct kv_cache_ops *c = r->cache;
	uint64_t want = r->last_nomem == q ? r->last_nomem_tokens : q->kv_tokens + 1;
	struct kv_req t;
	int rc;

	if (!r->eng->admit || c->prefix_hit || c->extra_prefill_tokens || c->dequant_bytes)
		return 0;
	if (r->restarted == q && r->restarted_ended == kv__engine_ended(r->sim))
		return 0; /* failed again with no request ended since: no progress to hope for */
	if ((double)want * r->beta_bytes > (double)r->pool.size_bytes)
		return 0;
	req_release(r, q);
	r->live_tokens += q->kv_tokens; /* still q's until it is preempted or rejected */
	t = *q; /* holds nothing now: its cache words are the model's empty ones */
	t.kv_tokens = 0;
	rc = c->reserve(r->cache_priv, &t, want);
	if (!rc)
		c->release(r->cache_priv, &t);
	return rc == 0;
}

/*
 * The running request not in the batch with the lowest rank below `below`
 * (a ranked policy's), the newest on ties, or NULL; *bytes sums the KV
 * bytes of all such.
 */
static struct kv_req *lowest_ranked(const struct kv_replica *r, int below, uint64_t *bytes)
{
	const struct kv_sched_ops *o = r->sched;
	struct kv_req *best = NULL;
	int best_rank = 0;
	uint32_t i;

	*bytes = 0;
	for (i = 0; i < r->n_running; i++) {
		struct kv_req *c = r->running[i];
		int rk;

		if (c->batch_tokens || (rk = o->rank(r->sched_priv, r, c)) >= below)
			continue;
		*bytes += c->kv_bytes;
		if (!best || rk <= best_rank) {
			best = c;
			best_rank = rk;
		}
	}
	return best;
}

/*
 * The victim for grower q, running and refused memory: pick_victim's (it may
 * set *how), else a ranked policy's lowest rank, else the newest running
 * request (vLLM's FCFS rule).
 */
static struct kv_req *victim(const struct kv_replica *r, const struct kv_req *q,
			     enum kv_preempt *how)
{
	const struct kv_sched_ops *o = r->sched;
	uint64_t bytes;

	if (o->pick_victim)
		return o->pick_victim(r->sched_priv, r, q, how);
	if (o->rank)
		return lowest_ranked(r, INT_MAX, &bytes);
	return r->running[r->n_running - 1];
}

/*
 * Preempts running v by the policy's rules: as `how` says, or as victim_how
 * says for a policy without pick_victim; a preemptive policy's formation
 * remembers it (evicted_now).
 */
static void evict(struct kv_replica *r, struct kv_req *v, enum kv_preempt how)
{
	const struct kv_sched_ops *o = r->sched;

	if (!o->pick_victim && o->victim_how)
		how = o->victim_how(r->sched_priv, r, v); /* reads v's KV before it leaves */
	if (r->evicted && r->n_evicted < KV_FORM_EVICTED)
		r->evicted[r->n_evicted++] = v;
	preempt_as(r, v, how);
}

/* Waiting q was preempted while this batch is formed (a preemptive policy's record). */
static int evicted_now(const struct kv_replica *r, const struct kv_req *q)
{
	uint32_t i;

	for (i = 0; i < r->n_evicted; i++)
		if (r->evicted[i] == q)
			return 1;
	return 0;
}

/*
 * Makes room for running q, which schedule() refused memory: preempts
 * victims (victim()) until q is scheduled or out of budget.  A q that is
 * its own victim is preempted, or, alone on the replica, restarted or
 * rejected (restart_alone).  Returns the index of the next running request
 * to look at: after q when q stayed, q's old index when q left.
 */
static uint32_t make_room(struct kv_replica *r, struct kv_req *q)
{
	assert(q->state == KV_REQ_RUNNING && !q->batch_tokens);
	if (r->step_flags & KV_STEP_NO_PREEMPT)
		return q->run_idx + 1; /* the engine preempts in no step of this kind (SGLang's prefill) */
	for (;;) {
		enum kv_preempt how = KV_PREEMPT_AUTO;
		struct kv_req *v = victim(r, q, &how);
		uint32_t at = q->run_idx;

		assert(v && v->state == KV_REQ_RUNNING);
		if (v->batch_tokens)
			batch_withdraw(r, v); /* scheduled before q: vLLM's PRIORITY victim */
		if (v == q) {
			if (r->n_running == 1 && !r->n_xfer_held && !restart_alone(r, q)) {
				reject(r, q); /* cannot grow even in an empty pool */
			} else if (r->n_running == 1) {
				/* alone: restart it in an empty pool, free of other requests' holes */
				preempt_as(r, q, KV_PREEMPT_RECOMPUTE);
				r->step_preempted++;
				r->restarted = q;
				r->restarted_ended = kv__engine_ended(r->sim);
				if (r->last_nomem == q)
					r->last_nomem = NULL; /* it waits: form_step must not reject it */
			} else {
				evict(r, q, how);
				r->step_preempted++;
			}
			return at;
		}
		evict(r, v, how);
		r->step_preempted++;
		if (schedule(r, q) != KV_ENOMEM)
			return q->run_idx + 1;
	}
}

/*
 * Keeps the running requests going, in admission order (scheduler.h, step
 * 1): schedules each, making room for one refused memory; one out of
 * budget sits this iteration out.
 */
static void keep_running(struct kv_replica *r)
{
	uint32_t i = 0;
	int err;

	while ((i = schedule_running(r, i, &err)) < r->n_running) {
		const struct kv_req *q = r->running[i];

		if (err != KV_ENOMEM) {
			i++;
			continue;
		}
		i = make_room(r, r->running[i]);
		if (r->sched->yield_stops && (i == 0 || r->running[i - 1] != q))
			break; /* q yielded its own place: vLLM V1 ends the running pass */
	}
}

/*
 * Keeps the running requests of rank `rank` not in the batch going, in
 * admission order, as keep_running() does the whole set.
 */
static void keep_rank(struct kv_replica *r, int rank)
{
	const struct kv_sched_ops *o = r->sched;
	uint32_t i = 0;

	while (i < r->n_running) {
		struct kv_req *q = r->running[i];

		if (q->batch_tokens || o->rank(r->sched_priv, r, q) != rank)
			i++;
		else if (schedule(r, q) == KV_ENOMEM)
			i = make_room(r, q);
		else
			i++; /* scheduled, or out of budget: it sits this iteration out */
	}
}

/*
 * The highest rank below `below` among the running requests not in the
 * batch, -1 when none; *uniform says they all have one rank.
 */
static int top_rank(const struct kv_replica *r, int below, int *uniform)
{
	const struct kv_sched_ops *o = r->sched;
	int top = -1, first = -1;
	uint32_t i;

	*uniform = 1;
	for (i = 0; i < r->n_running; i++) {
		const struct kv_req *q = r->running[i];
		int rk;

		if (q->batch_tokens)
			continue;
		rk = o->rank(r->sched_priv, r, q);
		assert(rk >= 0);
		if (first < 0)
			first = rk;
		*uniform &= rk == first;
		if (rk < below && rk > top)
			top = rk;
	}
	return top;
}

/*
 * Schedules waiting w of rank `rank`; returns schedule()'s code.  A
 * preemptive policy's w refused memory evicts the running requests not in
 * the batch ranked below it, lowest first, until w is scheduled -- when
 * the free memory plus theirs covers w, else none (scheduler.h).
 */
static int schedule_waiting(struct kv_replica *r, struct kv_req *w, int rank)
{
	int preemptive = r->sched->preemptive, rc;
	double need = preemptive ? (double)KV_MAX(w->prefill_target, w->kv_tokens + 1) *
					   r->beta_bytes : 0; /* bytes; as w is before the try */
	uint64_t bytes;
	struct kv_req *c;

	rc = schedule(r, w);
	if (rc != KV_ENOMEM || !preemptive)
		return rc;
	c = lowest_ranked(r, rank, &bytes);
	if (!c || (double)(r->pool.free_bytes + bytes) < need)
		return rc; /* evicting all of them would not do: evict none */
	do {
		evict(r, c, KV_PREEMPT_AUTO);
		rc = schedule(r, w);
	} while (rc == KV_ENOMEM && (c = lowest_ranked(r, rank, &bytes)));
	return rc;
}

/*
 * Admits waiting requests in the order the policy hands them out
 * (scheduler.h, step 2), a ranked policy's while they rank above `above`
 * (-1: any): each taken is dequeued by the policy (took) before it joins
 * the running set; a refusal closes admission when the policy's head
 * blocks or the budget or the sequence cap is spent, else the policy skips
 * it (refused) and is asked again.  A preemptive policy's request
 * preempted in this formation closes it too.  Returns 0 once admission is
 * closed for the formation, 1 while it stays open.
 */
static int admit_waiting(struct kv_replica *r, int above)
{
	const struct kv_sched_ops *o = r->sched;
	void *p = r->sched_priv;
	struct kv_req *q;

	while ((q = o->next_waiting(p, r))) {
		int rk = o->rank ? o->rank(p, r, q) : 0, rc;

		if (rk <= above)
			return 1; /* the running requests of rank `above` go first */
		if (evicted_now(r, q))
			return 0;
		rc = schedule_waiting(r, q, rk);
		if (!rc) {
			o->took(p, r, q);
			admit(r, q);
			r->admitted_rank = KV_MAX(r->admitted_rank, rk);
		} else if (o->head_blocks ||
			   (rc == KV_ERANGE && (!r->budget_tokens || r->n_batch >= r->max_seqs))) {
			return 0;
		} else {
			o->refused(p, r, q);
		}
	}
	return 1;
}

/*
 * When the sequence cap is what is full and a request was admitted, the
 * running requests not in the batch that yield (a ranked policy's yields)
 * and rank below the highest rank admitted give their seats back: they are
 * preempted and queue again.
 */
static void yield_displaced(struct kv_replica *r)
{
	const struct kv_sched_ops *o = r->sched;
	uint32_t i = 0;

	if (r->admitted_rank < 0 || r->n_batch < r->max_seqs)
		return;
	while (i < r->n_running) {
		struct kv_req *q = r->running[i];

		if (!q->batch_tokens && o->yields(r->sched_priv, r, q) &&
		    o->rank(r->sched_priv, r, q) < r->admitted_rank)
			evict(r, q, KV_PREEMPT_AUTO); /* running[i] is now the next one */
		else
			i++;
	}
}

/*
 * Step 1 of a ranked policy (scheduler.h): the running requests kept going
 * rank by rank from the highest, the waiting requests of a higher rank
 * admitted before each.  Returns admit_waiting()'s 0 once admission closed.
 */
static int keep_ranked(struct kv_replica *r)
{
	int open = 1, rank = INT_MAX, uniform;

	r->n_evicted = 0;
	r->admitted_rank = -1;
	while ((rank = top_rank(r, rank, &uniform)) >= 0) {
		if (open)
			open = admit_waiting(r, rank);
		if (uniform && r->n_batch == 0) {
			keep_running(r); /* one rank, nobody admitted before it: the fast path */
			break;
		}
		keep_rank(r, rank);
	}
	return open;
}

/*
 * The one batch-formation loop (scheduler.h): the running set kept going
 * with the policy's victims (a ranked policy's rank by rank, admitting
 * waiting requests of a higher rank before each), then the policy's
 * waiting requests, then a ranked policy's yields.  The policy is told the
 * batch so far (kept) and the batch formed (formed) as plain data.
 */
static void form_batch(struct kv_replica *r)
{
	const struct kv_sched_ops *o = r->sched;
	int open = 1;

	if (o->rank)
		open = keep_ranked(r);
	else
		keep_running(r);
	if (o->kept)
		o->kept(r->sched_priv, r, r->batch, r->n_batch);
	if (open)
		admit_waiting(r, -1);
	if (o->yields)
		yield_displaced(r);
	if (o->formed)
		o->formed(r->sched_priv, r, r->batch, r->n_batch);
}

/* The formed batch's duration, with the host-link copies queued for it. */
static int iter_ns(struct kv_replica *r, kv_ns *ns)
{
	const struct kv_executor *x = r->sim->cfg->exec;
	kv_ns t = kv_perf_iter_ns(&r->grp->perf, &r->shape), c = r->copy_ns;
	int rc;

	if (x && (rc = x->iter(x->ctx, r, t, &t)))
		return rc;
	r->copy_ns = 0;
	*ns = r->offload == KV_OFFLOAD_OVERLAP ? KV_MAX(t, c) : t + c;
	if (r->load_wait_ns) { /* loads from the tiers: before the pass, or layer by layer within it */
		kv_ns w = r->load_wait_ns, L = r->cfg->model.layers ? r->cfg->model.layers : 1;

		*ns = r->load_blocking ? *ns + w : KV_MAX(*ns, w) + KV_MIN(*ns, w) / L;
		r->load_wait_ns = 0;
	}
	return 0;
}

/* Lets the engine set up the step being formed (its kind, budget, fast path). */
static void step_begin(struct kv_replica *r, int again)
{
	r->step_flags = 0;
	r->step_preempted = 0;
	if (r->eng->step)
		r->eng->step(r->eng_priv, r, again);
	r->decode_cap = r->plain_decode && !(r->step_flags & KV_STEP_NO_DECODE) ? r->max_seqs : 0;
}

/*
 * Forms the iteration starting at `now` (the replica idle): the batch in
 * r->batch, its duration in *ns; r->n_batch is 0 when nothing runs.
 */
static int form_step(struct kv_replica *r, kv_ns now, kv_ns *ns)
{
	struct kv_sim *s = r->sim;
	uint64_t assigned; /* requests assigned as the batch is formed: a rejection ends one */
	int again = 0;
	int rc;

	rep_acct_at(r, now);
	for (;;) {
		memset(&r->shape, 0, sizeof(r->shape));
		r->ctx_tokens = 0;
		r->win_excess = 0;
		r->n_batch = 0;
		kv__out_changed(r); /* n_batch: the tokens' lower bound */
		r->budget_tokens = r->cfg->max_batch_tokens;
		r->last_nomem = NULL;
		r->n_ref = 0;
		if (r->n_running == 0 && r->sched->waiting(r->sched_priv) == 0)
			return 0;
		step_begin(r, again);
		assigned = r->n_assigned;
		form_batch(r);
		if (s->deferred_rc)
			return s->deferred_rc;
		if (r->eng->formed && r->eng->formed(r->eng_priv, r) && !again) {
			KV_CHECK(r->n_batch == 0, "replica %u: engine %s re-forms a batch of %u",
				 r->idx, r->eng->name, r->n_batch);
			again = 1; /* e.g. SGLang: no prefill batch, so a decode batch */
			continue;
		}
		again = 0;
		if (r->n_batch)
			break;
		if (r->n_xfer_held && r->n_running == 0 && r->last_nomem)
			return 0; /* KV on links holds the memory: wait for its release (disagg.h) */
		if (r->n_running && r->step_preempted && r->sched->yield_stops) {
			/*
			 * The grower preempted itself and ended the running pass
			 * (vLLM V1) before any request ran, admission shut by the
			 * preemption: vLLM's step is empty and its next schedule()
			 * runs the rest.  Form that one.
			 */
			continue;
		}
		if (!r->last_nomem && r->n_running == 0) {
			/* a request alone was rejected or restarted: form again; else none would run */
			KV_CHECK(r->n_assigned != assigned || r->step_preempted,
				 "replica %u: scheduler %s formed an empty batch, %llu waiting, none refused",
				 r->idx, r->sched->name,
				 (unsigned long long)r->sched->waiting(r->sched_priv));
			continue;
		}
		/*
		 * Nothing could run.  With requests running that is a
		 * scheduler bug; with none, the memory refused belongs to a
		 * request that cannot fit even in an empty pool: reject it.
		 */
		KV_CHECK(r->n_running == 0 && r->last_nomem,
			 "replica %u formed an empty batch (running %u)", r->idx, r->n_running);
		r->sched->dequeue(r->sched_priv, r, r->last_nomem);
		tenant_unqueued(s, r->last_nomem);
		rc = kv__replica_end(r, r->last_nomem, KV_END_REJECTED_POOL);
		if (rc)
			return rc;
	}
	/* windowed layers read only their last window_tokens (profile.h kv_model_kv_bytes) */
	r->shape.kv_read_bytes += (uint64_t)(((double)r->ctx_tokens -
					      r->window_frac * (double)r->win_excess) *
					     r->beta_bytes);
	return iter_ns(r, ns);
}

/* Forms and starts the next iteration of an idle replica. */
static int kick(struct kv_replica *r)
{
	struct kv_sim *s = r->sim;
	kv_ns t = 0;
	int rc;

	if (r->busy)
		return 0;
	rc = form_step(r, s->now, &t);
	if (rc || !r->n_batch)
		return rc;
	r->busy = 1;
	r->iter_start_ns = s->now;
	if (!kv__macro_start(r, t))
		kv_heap_push(&s->heap, s->now + t, KV_EV_ITER_DONE, r->idx, r->macro.gen);
	observe(r, KV_OBS_ITER_START, NULL, t); /* an observer runs exact steps (engine.h) */
	return 0;
}

/*
 * Applies one request's tokens at the end of an iteration; returns 1 when it
 * finished.  *done_tokens counts the prefill and output work it completed
 * (the replica's outstanding tokens drop by it); the caller sums them, and
 * the live tokens, in registers rather than through r.
 */
static inline int apply_tokens(struct kv_req *q, kv_ns now, uint64_t *done_tokens)
{
	uint64_t t = q->batch_tokens;
	int prefill = q->kv_tokens < q->prefill_target;

	q->batch_tokens = 0;
	q->kv_tokens += t;
	*done_tokens += prefill ? t : 0;
	if ((!prefill || q->kv_tokens == q->prefill_target) && q->generated < q->output_tokens) {
		q->generated++;
		++*done_tokens;
		if (q->first_token_ns == KV_NS_NEVER)
			q->first_token_ns = now;
	}
	return q->kv_tokens >= q->prefill_target && q->generated == q->output_tokens;
}

/*
 * Applies the tokens of r's iteration ending at `now` (accounting, tokens,
 * service); returns the requests it finished, marked KV_REQ_FREE.
 */
static uint32_t step_apply(struct kv_replica *r, kv_ns now)
{
	struct kv_sim *s = r->sim;
	const struct kv_fairness_cfg *fw = &s->cfg->fairness;
	uint64_t live = 0, done = 0;
	uint32_t i, finished = 0;
	/* the current tenant's service sums, in registers while its requests follow each other */
	struct kv_tenant_stats *t = NULL;
	double sv = 0.0, vsv = 0.0;

	rep_acct_at(r, now);
	r->busy = 0;
	r->iter_end_ns = now;
	r->busy_ns += now - r->iter_start_ns;
	r->iterations++;
	observe(r, KV_OBS_ITER_END, NULL, 0);
	for (i = 0; i < r->n_batch; i++) {
		struct kv_req *q = r->batch[i];
		uint64_t gen = q->generated, in = q->kv_tokens < q->prefill_target ? q->batch_tokens : 0;
		uint64_t ex = kv_win_excess(q->kv_tokens, r->window_tokens);
		double svc;

		if (t != &s->tenant[q->tenant]) {
			if (t) {
				t->service = sv;
				t->vservice = vsv;
			}
			t = &s->tenant[q->tenant];
			sv = t->service;
			vsv = t->vservice;
		}
		live += q->batch_tokens;
		if (apply_tokens(q, now, &done)) {
			q->state = KV_REQ_FREE; /* mark; removed below */
			finished++;
		} else if (r->prefill_only && q->kv_tokens >= q->prefill_target) {
			q->state = KV_REQ_HANDOFF; /* its first token out: it leaves for a decode replica */
			finished++;
		}
		r->live_win_excess += kv_win_excess(q->kv_tokens, r->window_tokens) - ex;
		svc = (double)in * fw->input_weight + (double)(q->generated - gen) * fw->output_weight;
		sv += svc; /* the same additions, in the same order, as through t */
		vsv += svc * s->inv_weight[q->tenant];
	}
	if (t) {
		t->service = sv;
		t->vservice = vsv;
	}
	r->live_tokens += live;
	r->outstanding_tokens -= done;
	kv__out_changed(r);
	return finished;
}

/*
 * A prefill replica's q has emitted its first token: it leaves r's
 * accounting (its holding stays until its transfer completes,
 * kv__replica_xfer_release) and waits in r->handoff for the engine to send
 * its KV (disagg.h).
 */
static void handoff(struct kv_replica *r, struct kv_req *q)
{
	r->outstanding_tokens -= q->output_tokens - q->generated;
	kv__out_changed(r);
	r->n_assigned--;
	r->handoffs++;
	r->n_xfer_held++;
	if (r->restarted == q)
		r->restarted = NULL;
	if (r->n_handoff == r->handoff_cap) {
		r->handoff_cap = r->handoff_cap ? 2 * r->handoff_cap : 16;
		r->handoff = kv_xrealloc(r->handoff, r->handoff_cap * sizeof(*r->handoff));
	}
	r->handoff[r->n_handoff++] = q;
}

void kv__replica_xfer_release(struct kv_replica *r, struct kv_req *q)
{
	KV_CHECK(q->state == KV_REQ_HANDOFF && q->replica == r->idx,
		 "request %llu released by replica %u in state %u", (unsigned long long)q->id,
		 r->idx, q->state);
	if (r->macro.K)
		kv__macro_cut(r); /* memory frees: the next formation may change */
	rep_acct(r);
	if (q->kv_bytes || q->kv_tokens) {
		q->leaving = 1; /* decodes elsewhere: never looked up here again (cache.h release) */
		req_release(r, q);
		q->leaving = 0;
	}
	r->n_xfer_held--;
}

int kv__replica_iter_done(struct kv_replica *r)
{
	struct kv_sim *s = r->sim;
	uint32_t i, j, finished;
	int rc = 0;

	if (r->macro.K)
		kv__macro_end(r); /* its earlier steps first */
	finished = step_apply(r, s->now);
	if (!finished) {
		r->n_batch = 0;
		kv__out_changed(r); /* n_batch: the tokens' lower bound */
		return kick(r);
	}
	/* Compact the running set, keeping admission order, then end the finished. */
	for (i = j = 0; i < r->n_running; i++) {
		struct kv_req *q = r->running[i];

		if (q->state == KV_REQ_RUNNING) {
			q->run_idx = j;
			r->running[j++] = q;
		}
	}
	r->n_running = j;
	for (i = 0; i < r->n_batch; i++) {
		struct kv_req *q = r->batch[i];

		if (q->state == KV_REQ_FREE && !rc)
			rc = kv__replica_end(r, q, KV_END_COMPLETED);
		else if (q->state == KV_REQ_HANDOFF)
			handoff(r, q);
	}
	r->n_batch = 0;
	kv__out_changed(r); /* n_batch: the tokens' lower bound */
	return rc ? rc : kick(r);
}


void kv__replica_check_pool(const struct kv_replica *r)
{
	char msg[256];

	if (kv_pool_check(&r->pool, msg, sizeof(msg)))
		kv__check_fail(__FILE__, __LINE__, "kv_pool_check", "replica %u: %s", r->idx, msg);
}

/* --- set-up -------------------------------------------------------------- */

/* Builds r's pool and cache-model instance with the current unit. */
static int replica_memory(struct kv_sim *s, struct kv_replica *r)
{
	const struct kv_sim_config *c = r->cfg;
	const struct kv_group *g = r->grp;
	const struct kv_cache_ops *ops = c->cache, *own = NULL;
	const void *opts = c->cache_opts;
	struct kv_cache_env env;
	int rc;

	if (r->eng->cache) { /* the engine's prefix cache, when it has one */
		free(r->cache_opts_own);
		r->cache_opts_own = NULL;
		own = r->eng->cache(r->eng_priv, c, &r->cache_opts_own);
		if (own) {
			ops = own;
			opts = r->cache_opts_own;
		}
	}
	rc = kv_pool_init(&r->pool, g->pool_bytes, g->pool_unit_bytes, c->pool_max_block_bytes);
	if (rc)
		return kv_diag_set(&s->diag, rc, "", 0, 0, "memory.pool",
				   "cannot build a pool of %llu bytes with blocks %llu..%llu bytes: expected powers of two and at least one block",
				   (unsigned long long)g->pool_bytes,
				   (unsigned long long)g->pool_unit_bytes,
				   (unsigned long long)c->pool_max_block_bytes);
	r->cache = ops;
	r->cache_priv = kv_xcalloc(1, ops->priv_size ? ops->priv_size : 1);
	memcpy(r->cache_priv, opts, ops->priv_size);
	env.pool = &r->pool;
	env.model = &c->model;
	env.device = &c->device;
	env.tp = c->tp;
	env.token_bytes = g->token_bytes;
	env.sim = s;
	env.replica = r->idx;
	env.on_block = s->cfg->router->on_block; /* the router's block index, when it keeps one */
	env.block_ctx = s->router_priv;
	env.pp = c->pp;
	env.remote = &s->grp[g->idx].tier_remote; /* shared by the group's replicas */
	rc = ops->init(r->cache_priv, &env, &s->diag);
	if (rc)
		return rc;
	r->beta_bytes = ops->bytes_per_token(r->cache_priv);
	r->window_tokens = c->model.sliding_window ? c->model.sliding_window : UINT64_MAX;
	r->window_frac = (double)kv_model_window_layers(&c->model) / c->model.layers;
	return 0;
}

/* Takes r's pool and cache-model instance down (to rebuild them). */
static void replica_memory_release(struct kv_replica *r)
{
	if (r->cache->fini)
		r->cache->fini(r->cache_priv);
	free(r->cache_priv);
	r->cache_priv = NULL;
	kv_pool_release(&r->pool);
}

/* Builds r's engine instance (vllm-v0 when the config names none). */
static int replica_engine(struct kv_sim *s, struct kv_replica *r)
{
	const struct kv_sim_config *c = r->cfg;
	const struct kv_engine_ops *e = c->engine ? c->engine : &kv_engine_vllm_v0;
	int rc;

	r->eng = e;
	r->eng_priv = kv_xcalloc(1, e->priv_size ? e->priv_size : 1);
	if (c->engine && c->engine_opts)
		memcpy(r->eng_priv, c->engine_opts, e->priv_size);
	else
		kv_options_defaults(e->options, r->eng_priv);
	if (e->init && (rc = e->init(r->eng_priv, r, &s->diag)))
		return rc;
	if (r->idx == r->grp->first && e->perf) /* the group's first sets its perf model's knobs */
		e->perf(r->eng_priv, &r->grp->perf);
	return 0;
}

int kv__replica_init(struct kv_sim *s, struct kv_group *g, struct kv_replica *r, uint32_t idx)
{
	const struct kv_sim_config *c = g->cfg;
	int rc;

	r->sim = s;
	r->grp = g;
	r->cfg = c;
	r->idx = idx;
	r->iter_end_ns = KV_NS_NEVER;
	rc = replica_engine(s, r);
	if (rc)
		return rc;
	rc = replica_memory(s, r);
	if (rc)
		return rc;
	/*
	 * An auto unit follows the bytes the cache model stores per token (a
	 * 4-bit cache's 16-token block is a quarter of fp16's): known only once
	 * the model is initialised, so a group's first replica may build twice.
	 */
	if (idx == g->first && !c->pool_min_block_bytes) {
		uint64_t unit = kv_mem_pool_unit(kv_mem_unit_token_bytes(r->beta_bytes, &c->model),
						c->pool_max_block_bytes);

		if (unit != g->pool_unit_bytes) {
			replica_memory_release(r);
			g->pool_unit_bytes = unit;
			rc = replica_memory(s, r);
			if (rc)
				return rc;
		}
	}
	r->batch = kv_xcalloc(c->max_batch_seqs, sizeof(*r->batch));
	r->offload = r->cache->offload ? r->cache->offload(r->cache_priv) : KV_OFFLOAD_NONE;
	r->plain_decode = !r->cache->extra_prefill_tokens && !r->cache->dequant_bytes &&
			  !r->cache->read_bytes;
	r->max_seqs = c->max_batch_seqs;
	r->decode_cap = r->plain_decode ? r->max_seqs : 0;
	/*
	 * Offloading (swap) changes preemption and adds the host-link copies
	 * to the iteration they are queued for: the first of a run (iter_ns,
	 * its duration d1_ns), none later (nobody is preempted or swapped in
	 * inside a run).  A window: counted per step (macro.c).
	 */
	kv__macro_init(r, s->macro && (r->cache->flags & KV_PLUGIN_F_MACRO_STEPS) &&
				  (r->eng->flags & KV_PLUGIN_F_MACRO_STEPS) &&
				  /* read and dequantised bytes: per step; recomputed tokens: none */
				  (!r->cache->extra_prefill_tokens ||
				   (r->cache->no_extra && r->cache->no_extra(r->cache_priv))),
		       kv__replica_schedule);
	r->sched = c->sched;
	KV_CHECK(c->sched->next_waiting && c->sched->took &&
			 (c->sched->head_blocks || c->sched->refused) &&
			 (c->sched->rank || (!c->sched->preemptive && !c->sched->yields)),
		 "scheduler %s: next_waiting, took or refused missing, or preemptive or yields without rank",
		 c->sched->name);
	if (c->sched->preemptive)
		r->evicted = kv_xcalloc(KV_FORM_EVICTED, sizeof(*r->evicted));
	r->sched_priv = kv_xcalloc(1, c->sched->priv_size ? c->sched->priv_size : 1);
	memcpy(r->sched_priv, c->sched_opts, c->sched->priv_size);
	return c->sched->init(r->sched_priv, r, &s->diag);
}

void kv__replica_release(struct kv_replica *r)
{
	if (r->sched_priv && r->sched && r->sched->fini)
		r->sched->fini(r->sched_priv);
	if (r->cache_priv && r->cache && r->cache->fini)
		r->cache->fini(r->cache_priv);
	if (r->eng_priv && r->eng && r->eng->fini)
		r->eng->fini(r->eng_priv);
	free(r->sched_priv);
	free(r->cache_priv);
	free(r->cache_opts_own);
	free(r->eng_priv);
	kv__frontend_release(&r->fe);
	free(r->running);
	free(r->handoff);
	free(r->batch);
	free(r->evicted);
	kv__macro_release(r);
	kv_pool_release(&r->pool);
}

void kv__replica_arrive(struct kv_replica *r, struct kv_req *q)
{
	q->state = KV_REQ_WAITING;
	if (r->macro.K)
		kv__macro_cut(r); /* the next step may admit q; the scheduler's state as of now */
	enqueue(r, q);
	observe(r, KV_OBS_ARRIVE, q, 0);
}

int kv__replica_kick(struct kv_replica *r)
{
	return kick(r);
}

void kv__replica_final(struct kv_replica *r)
{
	rep_acct(r);
	if (r->cache->flush)
		r->cache->flush(r->cache_priv);
	KV_CHECK(r->n_handoff == 0 && r->inbound_bytes == 0 && r->n_xfer_held == 0,
		 "replica %u: %u requests not handed off, %llu KV bytes inbound", r->idx,
		 r->n_handoff, (unsigned long long)r->inbound_bytes);
	KV_CHECK(r->swap_out_bytes == r->swap_in_bytes + r->swap_dropped_bytes,
		 "replica %u: %llu bytes swapped out, %llu in, %llu dropped", r->idx,
		 (unsigned long long)r->swap_out_bytes, (unsigned long long)r->swap_in_bytes,
		 (unsigned long long)r->swap_dropped_bytes);
	KV_CHECK(r->pool.free_bytes == r->pool.size_bytes && r->live_tokens == 0 &&
			 r->n_running == 0 && r->n_assigned == 0 && r->outstanding_tokens == 0,
		 "replica %u leaks: %llu bytes held, %llu live tokens, %u running, %llu outstanding",
		 r->idx, (unsigned long long)(r->pool.size_bytes - r->pool.free_bytes),
		 (unsigned long long)r->live_tokens, r->n_running,
		 (unsigned long long)r->outstanding_tokens);
	kv__replica_check_pool(r);
}
