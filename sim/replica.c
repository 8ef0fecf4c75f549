/*
 * replica.c -- one replica: batch formation, admission, preemption by swap
 * or recompute, memory accounting, and the iteration's end.  See replica.h
 * for the split between this mechanism and the schedulers' policy, and
 * engine.h for the token and time model.
 */
#include "replica.h"
#include "serving_impl.h"

#include <assert.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* --- memory accounting ------------------------------------------------- */

/*
 * Brings q's memory-time integral up to now.  Called only where kv_bytes may
 * change (reserve, release): between two such points the holding is constant,
 * so the integral is exact without a per-iteration update.
 */
static void req_mem_touch_at(struct kv_req *q, kv_ns now)
{
	q->memtime_Bs += (double)q->kv_bytes * (double)(now - q->mem_t0_ns) * 1e-9;
	q->mem_t0_ns = now;
}

static void req_mem_touch(const struct kv_sim *s, struct kv_req *q)
{
	req_mem_touch_at(q, s->now);
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
			kv__replica_sync(&s->rep[i], &s->ev);
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
	tenant_queued(r->sim, q);
	r->sched->enqueue(r->sched_priv, r, q);
}

void kv_replica_admit(struct kv_replica *r, struct kv_req *q)
{
	tenant_unqueued(r->sim, q);
	KV_CHECK(q->state == KV_REQ_WAITING, "admitting request %llu in state %u",
		 (unsigned long long)q->id, q->state);
	if (r->n_running == r->running_cap) {
		r->running_cap = r->running_cap ? 2 * r->running_cap : 64;
		r->running = kv_xrealloc(r->running, r->running_cap * sizeof(*r->running));
	}
	q->state = KV_REQ_RUNNING;
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
	const struct kv_sim_config *c = s->cfg;
	struct kv_tenant_stats *ts = &s->tenant[q->tenant];
	int rc = 0;

	q->finish_ns = s->now;
	if (r->restarted == q)
		r->restarted = NULL; /* its slot may be reused */
	if (q->swapped_bytes) { /* ends on host: its copy is dropped */
		r->swap_dropped_bytes += q->swapped_bytes;
		q->swapped_bytes = 0;
	} else if (q->kv_bytes || q->kv_tokens) {
		req_release(r, q);
	}
	r->outstanding_tokens -= prefill_left(q) + (q->output_tokens - q->generated);
	kv__out_changed(r);
	r->n_assigned--;
	s->ended[e]++;
	if (e == KV_END_COMPLETED) {
		double L = (double)(q->prompt_tokens + q->output_tokens);

		q->cost = c->device.alpha * (double)kv_model_weight_bytes(&c->model) +
			  r->beta_bytes * L * (double)q->output_tokens;
		if (q->first_token_ns == KV_NS_NEVER)
			q->first_token_ns = s->now;
		/* the front end's cost (API server, tokeniser, detokeniser) delays what the user sees */
		q->first_token_ns += r->frontend_ns;
		q->finish_ns += r->frontend_ns;
		kv_hist_add(&s->ttft, q->first_token_ns - q->arrival_ns);
		kv_hist_add(&s->e2e, q->finish_ns - q->arrival_ns);
		if (q->output_tokens > 1)
			kv_hist_add(&s->tpot,
				    (q->finish_ns - q->first_token_ns) / (q->output_tokens - 1));
		kv_hist_add(&ts->ttft, q->first_token_ns - q->arrival_ns);
		kv_hist_add(&ts->e2e, q->finish_ns - q->arrival_ns);
		ts->completed++;
		ts->prompt_tokens += q->prompt_tokens;
		ts->output_tokens += q->output_tokens;
		ts->cost += q->cost;
		s->prompt_tokens_done += q->prompt_tokens;
		s->output_tokens_done += q->output_tokens;
		if (r->sched->on_done)
			r->sched->on_done(r->sched_priv, r, q);
	} else {
		ts->rejected++;
	}
	if (q->finish_ns > s->last_finish_ns)
		s->last_finish_ns = q->finish_ns;
	observe(r, KV_OBS_END, q, (kv_ns)e);
	if (s->sink.request && s->sink.request(s->sink.ctx, s, q, e))
		rc = KV_EIO;
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
	double bw = r->sim->cfg->device.host_link_Bps * r->sim->cfg->tp *
		    (r->sim->cfg->pp ? r->sim->cfg->pp : 1); /* every GPU of the replica copies its share */

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

int kv__replica_schedule(struct kv_replica *r, struct kv_req *q)
{
	const struct kv_sim_config *c = r->sim->cfg;
	int prefill = q->kv_tokens < q->prefill_target;
	uint64_t take = kv_req_next_tokens(q);
	uint64_t want;
	int rc;

	KV_CHECK(q->batch_tokens == 0, "request %llu scheduled twice",
		 (unsigned long long)q->id);
	if (r->n_batch >= c->max_batch_seqs || r->budget_tokens == 0)
		return KV_ERANGE;
	if (q->state == KV_REQ_WAITING ? (r->step_flags & KV_STEP_NO_ADMIT) :
					 (r->step_flags & KV_STEP_NO_DECODE) && !prefill)
		return KV_ERANGE; /* the engine's step kind excludes it (SGLang) */
	if (q->kv_tokens == 0 && !q->kv_bytes && r->cache->prefix_hit) {
		take_prefix(r, q);
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
			if (q->state == KV_REQ_WAITING) { /* a macro step repeats it (macro_refuse) */
				if (r->n_ref < KV_MACRO_REFUSED)
					r->ref_q[r->n_ref] = q;
				r->n_ref++;
			}
		}
		if (q->state == KV_REQ_WAITING && !q->swapped_bytes && (q->kv_bytes || q->kv_tokens))
			drop_prefix(r, q); /* not admitted: give the cached prefix back */
		return rc;
	}
	if (q->swapped_bytes)
		swap_in(r, q);
	batch_add(r, q, take);
	return 0;
}

uint32_t kv_replica_schedule_running(struct kv_replica *r, uint32_t from, int *err)
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

void kv_replica_preempt_as(struct kv_replica *r, struct kv_req *q, enum kv_preempt how)
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

void kv_replica_preempt(struct kv_replica *r, struct kv_req *q)
{
	kv_replica_preempt_as(r, q, KV_PREEMPT_AUTO);
}

void kv_replica_reject(struct kv_replica *r, struct kv_req *q)
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

uint32_t kv_replica_make_room(struct kv_replica *r, struct kv_req *q, kv_pick_victim_fn pick,
			      void *priv)
{
	assert(q->state == KV_REQ_RUNNING && !q->batch_tokens);
	if (r->step_flags & KV_STEP_NO_PREEMPT)
		return q->run_idx + 1; /* the engine preempts in no step of this kind (SGLang's prefill) */
	for (;;) {
		enum kv_preempt how = KV_PREEMPT_AUTO;
		struct kv_req *v = pick ? pick(priv, r, q, &how) : r->running[r->n_running - 1];
		uint32_t at = q->run_idx;

		assert(v && v->state == KV_REQ_RUNNING && !v->batch_tokens);
		if (v == q) {
			if (r->n_running == 1 && !restart_alone(r, q)) {
				kv_replica_reject(r, q); /* cannot grow even in an empty pool */
			} else if (r->n_running == 1) {
				/* alone: restart it in an empty pool, free of other requests' holes */
				kv_replica_preempt_as(r, q, KV_PREEMPT_RECOMPUTE);
				r->step_preempted++;
				r->restarted = q;
				r->restarted_ended = kv__engine_ended(r->sim);
				if (r->last_nomem == q)
					r->last_nomem = NULL; /* it waits: form_step must not reject it */
			} else {
				kv_replica_preempt_as(r, q, how);
				r->step_preempted++;
			}
			return at;
		}
		kv_replica_preempt_as(r, v, how);
		r->step_preempted++;
		if (kv_replica_schedule(r, q) != KV_ENOMEM)
			return q->run_idx + 1;
	}
}

void kv_replica_keep_running(struct kv_replica *r, kv_pick_victim_fn pick, void *priv)
{
	uint32_t i = 0;
	int err;

	while ((i = kv_replica_schedule_running(r, i, &err)) < r->n_running)
		i = err == KV_ENOMEM ? kv_replica_make_room(r, r->running[i], pick, priv) : i + 1;
}

/* The formed batch's duration, with the host-link copies queued for it. */
static int iter_ns(struct kv_replica *r, kv_ns *ns)
{
	const struct kv_executor *x = r->sim->cfg->exec;
	kv_ns t = kv_perf_iter_ns(&r->sim->perf, &r->shape), c = r->copy_ns;
	int rc;

	if (x && (rc = x->iter(x->ctx, r, t, &t)))
		return rc;
	r->copy_ns = 0;
	*ns = r->offload == KV_OFFLOAD_OVERLAP ? KV_MAX(t, c) : t + c;
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
	int again = 0;
	int rc;

	rep_acct_at(r, now);
	for (;;) {
		memset(&r->shape, 0, sizeof(r->shape));
		r->ctx_tokens = 0;
		r->win_excess = 0;
		r->n_batch = 0;
		kv__out_changed(r); /* n_batch: the tokens' lower bound */
		r->budget_tokens = s->cfg->max_batch_tokens;
		r->last_nomem = NULL;
		r->n_ref = 0;
		if (r->n_running == 0 && r->sched->waiting(r->sched_priv) == 0)
			return 0;
		step_begin(r, again);
		r->sched->form_batch(r->sched_priv, r);
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
		if (!r->last_nomem && r->n_running == 0)
			continue; /* the scheduler rejected a request that was alone: form again */
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

/*
 * Plans the reserves inside a macro step of at most K steps: after step k,
 * the batch's request i outgrows its holding when kv_tokens + k reaches its
 * cap (the per-step engine's kv__replica_schedule then reserves, in batch
 * order).  Each must be promised by the cache model (grow_units) and all of
 * them must fit the units free now (nothing else allocates from this pool
 * meanwhile).  Fills r->macro_grow sorted by (step, index); returns K, cut
 * to the first step whose growth cannot be promised.
 */
static uint64_t macro_plan_grows(struct kv_replica *r, uint64_t K)
{
	uint64_t free_units = r->pool.free_bytes / r->pool.unit_bytes, used = 0;
	uint64_t *g = r->macro_grow;
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
	r->macro_ng = i;
	r->macro_gi = 0;
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
	return r->n_batch >= r->sim->cfg->max_batch_seqs || r->budget_tokens == 0;
}

/*
 * Whether the waiting requests refused in the batch just formed (not full)
 * are refused again, the same way, at every later formation of the run, so
 * that the run may go on with them waiting.  The scheduler promises to try
 * the same ones in the same order (KV_PLUGIN_F_MACRO_REFUSED); a refusal for
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
 * again at each formation (macro_refuse), in the per-step engine's order,
 * so the pool's counters (alloc_fail, alloc_fail_frag) and its free stacks
 * are the per-step engine's.  Not in a step that preempted (vLLM V1 admits
 * nobody then, but would in the next).
 */
static int macro_refused_ok(const struct kv_replica *r)
{
	uint32_t i;

	if (!(r->sched->flags & KV_PLUGIN_F_MACRO_REFUSED) || r->step_preempted ||
	    r->n_ref > KV_MACRO_REFUSED || r->cache->prefix_hit || r->cache->evictable_bytes)
		return 0;
	for (i = 0; i < r->n_ref; i++)
		if (r->ref_q[i]->state != KV_REQ_WAITING || r->ref_q[i]->batch_tokens)
			return 0; /* refused, then admitted after all */
	return 1;
}

/*
 * The memory refusals of the formation at the end of a run's step (after
 * its planned growths), made again as macro_start recorded them: each must
 * fail again (macro_refused_ok says why it does).
 */
static void macro_refuse(struct kv_replica *r)
{
	uint32_t i;

	for (i = 0; i < r->macro_nref; i++) {
		struct kv_req *q = r->ref_q[i];
		int rc = kv__replica_schedule(r, q);

		KV_CHECK(rc == KV_ENOMEM,
			 "replica %u: waiting request %llu, refused memory when the macro step began, now gets %d",
			 r->idx, (unsigned long long)q->id, rc);
	}
	r->n_ref = r->macro_nref; /* the record stays the run's */
}

/*
 * The window terms of a run's step whose requests' contexts are their
 * kv_tokens + d: the tokens past the window W over the batch (the pairs a
 * windowed layer skips, kv__decodes_add), and in *past the requests with
 * any (each adds one to the live excess when the step ends: step_apply).
 * 0 without a window.
 */
static uint64_t macro_skip(const struct kv_replica *r, uint64_t d, uint32_t *past)
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
static void macro_bytes(const struct kv_replica *r, struct kv_batch_shape *sh, uint64_t d,
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

/* Counts the batch's requests per tenant into macro_tn / macro_tc. */
static void macro_count_tenants(struct kv_replica *r)
{
	uint32_t i;

	for (i = 0; i < r->macro_nt; i++)
		r->macro_tc[r->macro_tn[i]] = 0;
	r->macro_nt = 0;
	if (r->sim->cfg->source.n_tenants <= 1) { /* no need to read the requests' cold half */
		r->macro_tn[r->macro_nt++] = 0;
		r->macro_tc[0] = r->n_batch;
		return;
	}
	for (i = 0; i < r->n_batch; i++) {
		uint32_t t = r->batch[i]->tenant;

		if (!r->macro_tc[t]++)
			r->macro_tn[r->macro_nt++] = t;
	}
}

/*
 * Tries to start a macro step for the batch just formed (first step d1_ns
 * long): every running request decodes in it and none can be admitted
 * (none waits, or the batch is full), so the next batches are the same
 * requests one token further, until one finishes (its last token) or
 * outgrows its holding (the step whose decode would not fit), or the
 * scheduler's next decision (its macro_steps hook).  Computes the steps'
 * ends and queues one event at the last; returns 1, or 0 when fewer than
 * two steps qualify (the caller queues the single step).
 */
static int macro_start(struct kv_replica *r, kv_ns d1_ns)
{
	struct kv_sim *s = r->sim;
	struct kv_batch_shape sh;
	struct kv_perf_run run;
	uint64_t K = KV_MACRO_STEPS, ctx, skip;
	uint32_t i, n = r->n_batch, k;
	int refused;
	kv_ns *t = r->macro_t;

	/* with requests waiting and the batch not full, they were refused: repeat it */
	refused = r->sched->waiting(r->sched_priv) && !batch_full(r);
	if (!r->macro_ok || n != r->n_running || (refused && !macro_refused_ok(r)))
		return 0;
	for (i = 0; i < n; i++) {
		const struct kv_req *q = r->batch[i];

		if (q->batch_tokens != 1 || q->kv_tokens < q->prefill_target ||
		    q->generated >= q->output_tokens || q->kv_tokens >= q->kv_cap_tokens ||
		    (!r->sched->macro_steps && r->running[i] != q)) /* not in running order */
			return 0;
		K = KV_MIN(K, q->output_tokens - q->generated); /* step K emits its last token */
		if (!r->cache->grow_units)
			K = KV_MIN(K, q->kv_cap_tokens - q->kv_tokens); /* step K + 1 would reserve */
	}
	if (r->cache->grow_units)
		K = macro_plan_grows(r, K);
	if (K < 2)
		return 0;
	/* each later step: the same decodes, one more context token each (kv__decodes_add) */
	sh = r->shape;
	ctx = r->ctx_tokens;
	kv_perf_iter_prep(&s->perf, &sh, &run); /* the terms no step changes */
	t[0] = s->now;
	t[1] = s->now + d1_ns;
	skip = macro_skip(r, 1, &r->macro_wx[1]);
	KV_CHECK(skip == sh.window_skip_pairs, "replica %u: %llu pairs past the window, the batch has %llu",
		 r->idx, (unsigned long long)skip, (unsigned long long)sh.window_skip_pairs);
	for (k = 2; k <= K; k++) {
		sh.attn_pairs += n;
		ctx += n;
		skip = macro_skip(r, k, &r->macro_wx[k]);
		macro_bytes(r, &sh, k, ctx, skip);
		t[k] = t[k - 1] + kv_perf_iter_run_ns(&s->perf, &run, &sh);
	}
	if (r->sched->macro_steps) /* the policy's next decision */
		K = KV_MIN(K, r->sched->macro_steps(r->sched_priv, r, t, (uint32_t)K));
	if (K >= 2 && r->eng->macro_steps) /* the engine's (SGLang: a prefill batch to try) */
		K = KV_MIN(K, r->eng->macro_steps(r->eng_priv, r, (uint32_t)K));
	if (K < 2)
		return 0;
	while (r->macro_ng && r->macro_grow[r->macro_ng - 1] >> 32 >= K)
		r->macro_ng--; /* growths planned past the run, now cut shorter */
	macro_count_tenants(r);
	/* every formation of the run repeats them (a full batch refuses with KV_ERANGE, no side effect) */
	r->macro_nref = refused ? r->n_ref : 0;
	r->macro_k = r->macro_kq = r->macro_ko = 0;
	r->macro_K = (uint32_t)K;
	r->macro_seq = kv_heap_push_at(&s->heap, t[K], t[K - 1], KV_EV_ITER_DONE, r->idx,
				       r->macro_gen);
	s->macro_next[r->idx] = s->macro_onext[r->idx] = t[1];
	kv__out_changed(r); /* macro_K: the tokens' lower bound */
	return 1;
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
	if (!macro_start(r, t))
		kv_heap_push(&s->heap, s->now + t, KV_EV_ITER_DONE, r->idx, r->macro_gen);
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
 * The reserves planned after step k (at its end t), in batch order, as the
 * per-step engine's kv__replica_schedule makes them forming step k + 1.
 */
static void macro_grow(struct kv_replica *r, uint32_t k, kv_ns t)
{
	while (r->macro_gi < r->macro_ng && r->macro_grow[r->macro_gi] >> 32 == k) {
		struct kv_req *q = r->batch[r->macro_grow[r->macro_gi] >> 16 & 0xffff];
		uint64_t want = q->kv_tokens + (k - r->macro_kq) + 1, reserved;
		int rc;

		KV_CHECK(want == q->kv_cap_tokens + 1, "replica %u: request %llu grows to %llu tokens at a cap of %llu",
			 r->idx, (unsigned long long)q->id, (unsigned long long)want,
			 (unsigned long long)q->kv_cap_tokens);
		req_mem_touch_at(q, t);
		rc = r->cache->reserve(r->cache_priv, q, want);
		KV_CHECK(rc == 0, "replica %u: a promised reserve of request %llu failed (%d)", r->idx,
			 (unsigned long long)q->id, rc);
		reserved = r->pool.size_bytes - r->pool.free_bytes;
		if (reserved > r->peak_reserved_bytes)
			r->peak_reserved_bytes = reserved;
		r->macro_gi++;
	}
}

/* Stores kv__replica_sync's register copies of r's and the tenant's sums. */
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
 * Applies r's pending macro steps before event e (all when e is NULL) as
 * the per-step engine's ITER_DONE and the kick after it would, in the same
 * order and the same floating-point operations: memory integrals at each
 * step's end, busy time, iterations, live and outstanding tokens, the
 * tenants' service, the event count.  The batch re-formed after each such
 * step is the same requests (macro_start's conditions); their own token
 * counters are brought up at the macro step's end (macro_end), as nothing
 * else reads them in between.  O(1) per step.
 */
void kv__replica_sync(struct kv_replica *r, const struct kv_event *e)
{
	struct kv_sim *s = r->sim;
	uint32_t k = r->macro_k, k0 = k, kc = k, n = r->n_batch, i;
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

		if (k + 1 >= r->macro_K)
			break;
		t = r->macro_t[k + 1];
		if (e && t >= e->t_ns) {
			struct kv_event v = { .t_ns = t, .p_ns = r->macro_t[k], .seq = r->macro_seq };

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
		wx += r->macro_wx[k + 1]; /* step_apply's, request by request */
		k++;
		grow = r->macro_gi < r->macro_ng && r->macro_grow[r->macro_gi] >> 32 == k;
		if (grow) {
			sync_store(r, res_Bs, used_Bs, frag_s, t0, busy, start, live, wx);
			macro_grow(r, k, t);
			reserved = (double)(r->pool.size_bytes - r->pool.free_bytes);
			frag = kv_pool_ext_frag(&r->pool);
		}
		if (r->macro_nref) { /* the formation's refused waiters, after its growths */
			if (!grow)
				sync_store(r, res_Bs, used_Bs, frag_s, t0, busy, start, live, wx);
			r->iterations += k - kc; /* the replica as the per-step engine has it */
			s->events += k - kc;
			s->macro_steps += k - kc;
			kc = k;
			macro_refuse(r);
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
		for (i = 0; i < r->macro_nt; i++) {
			uint32_t tn = r->macro_tn[i];
			double m = (double)r->macro_tc[tn] * (double)(k - k0);

			s->tenant[tn].service += svc * m;
			s->tenant[tn].vservice += svc * s->inv_weight[tn] * m;
		}
		/* the formations at the ends of steps k0 + 1 .. k (of steps k0 + 2 .. k + 1) */
		if (r->sched->macro_apply)
			r->sched->macro_apply(r->sched_priv, r, &r->macro_t[k0 + 1], k - k0);
		if (r->eng->macro_apply)
			r->eng->macro_apply(r->eng_priv, r, k - k0);
	}
	r->macro_k = k;
	if (r->macro_ko < k) {
		r->outstanding_tokens -= (uint64_t)r->n_batch * (k - r->macro_ko);
		kv__out_changed(r);
		r->macro_ko = k;
	}
	s->macro_next[r->idx] = k + 1 < r->macro_K ? r->macro_t[k + 1] : KV_NS_NEVER;
	s->macro_onext[r->idx] = r->macro_ko + 1 < r->macro_K ? r->macro_t[r->macro_ko + 1] : KV_NS_NEVER;
}

/*
 * The router's view: the outstanding tokens the per-step engine would show
 * at e, without the rest of the steps' accounting (kv__replica_sync does it
 * later, in step order).  An integer count, so the split changes nothing.
 */
void kv__replica_sync_outstanding(struct kv_replica *r, const struct kv_event *e)
{
	uint32_t k = r->macro_ko, n = r->n_batch;

	while (k + 1 < r->macro_K) {
		struct kv_event v = { .t_ns = r->macro_t[k + 1], .p_ns = r->macro_t[k],
				      .seq = r->macro_seq };

		if (!kv_event_before(&v, e))
			break;
		r->outstanding_tokens -= n;
		k++;
	}
	r->macro_ko = k;
	kv__out_changed(r);
	r->sim->macro_onext[r->idx] = k + 1 < r->macro_K ? r->macro_t[k + 1] : KV_NS_NEVER;
}

/*
 * At the event ending r's macro step (step macro_K, or the step in flight
 * when an arrival cut it): applies the pending steps, brings every request's
 * tokens up by the steps applied, and checks the last step's duration
 * against the perf model on its shape now.
 */
void kv__replica_sync_reqs(struct kv_replica *r)
{
	uint32_t i, k = r->macro_k - r->macro_kq;

	if (!k)
		return;
	for (i = 0; i < r->n_batch; i++) {
		r->batch[i]->kv_tokens += k;
		r->batch[i]->generated += k;
	}
	r->macro_kq = r->macro_k;
}

static void macro_end(struct kv_replica *r)
{
	struct kv_sim *s = r->sim;
	struct kv_batch_shape sh = r->shape;
	uint64_t pairs = 0;
	uint32_t i, k, past;

	kv__replica_sync(r, NULL);
	kv__replica_sync_reqs(r);
	k = r->macro_k;
	for (i = 0; i < r->n_batch; i++)
		pairs += r->batch[i]->kv_tokens + 1;
	sh.attn_pairs = pairs;
	macro_bytes(r, &sh, 1, pairs, macro_skip(r, 1, &past));
	/* step 1's own duration came from iter_ns (with any host-link copies a swap queued) */
	KV_CHECK(k == 0 || kv_perf_iter_ns(&s->perf, &sh) == r->macro_t[k + 1] - r->macro_t[k],
		 "replica %u: macro step %u of %u lasts %llu ns, predicted %llu", r->idx, k + 1,
		 r->macro_K, (unsigned long long)kv_perf_iter_ns(&s->perf, &sh),
		 (unsigned long long)(r->macro_t[k + 1] - r->macro_t[k]));
	r->macro_K = r->macro_k = r->macro_kq = r->macro_ko = 0;
	r->macro_ng = r->macro_gi = 0;
	s->macro_next[r->idx] = s->macro_onext[r->idx] = KV_NS_NEVER;
	kv__out_changed(r); /* macro_K: the tokens' lower bound */
}

/* Cuts r's macro step at the step in flight (its batch is about to change). */
static void macro_cut(struct kv_replica *r)
{
	struct kv_sim *s = r->sim;
	uint32_t k;

	kv__replica_sync(r, &s->ev); /* the router may have brought up only its view */
	k = r->macro_k + 1;
	if (k >= r->macro_K)
		return;
	r->macro_K = k;
	r->macro_gen++; /* the queued event is now stale */
	r->macro_seq = kv_heap_push_at(&s->heap, r->macro_t[k], r->macro_t[k - 1],
				       KV_EV_ITER_DONE, r->idx, r->macro_gen);
	s->macro_next[r->idx] = s->macro_onext[r->idx] = KV_NS_NEVER;
	kv__out_changed(r); /* macro_K: the tokens' lower bound */
}

int kv__replica_iter_done(struct kv_replica *r)
{
	struct kv_sim *s = r->sim;
	uint32_t i, j, finished;
	int rc = 0;

	if (r->macro_K)
		macro_end(r); /* its earlier steps first */
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
	const struct kv_sim_config *c = s->cfg;
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
	rc = kv_pool_init(&r->pool, s->pool_bytes, s->pool_unit_bytes, c->pool_max_block_bytes);
	if (rc)
		return kv_diag_set(&s->diag, rc, "", 0, 0, "memory.pool",
				   "cannot build a pool of %llu bytes with blocks %llu..%llu bytes: expected powers of two and at least one block",
				   (unsigned long long)s->pool_bytes,
				   (unsigned long long)s->pool_unit_bytes,
				   (unsigned long long)c->pool_max_block_bytes);
	r->cache = ops;
	r->cache_priv = kv_xcalloc(1, ops->priv_size ? ops->priv_size : 1);
	memcpy(r->cache_priv, opts, ops->priv_size);
	env.pool = &r->pool;
	env.model = &c->model;
	env.device = &c->device;
	env.tp = c->tp;
	env.token_bytes = s->token_bytes;
	env.sim = s;
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
	const struct kv_sim_config *c = s->cfg;
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
	if (r->idx == 0 && e->perf)
		e->perf(r->eng_priv, &s->perf);
	return 0;
}

int kv__replica_init(struct kv_sim *s, struct kv_replica *r, uint32_t idx)
{
	const struct kv_sim_config *c = s->cfg;
	int rc;

	r->sim = s;
	r->idx = idx;
	rc = replica_engine(s, r);
	if (rc)
		return rc;
	rc = replica_memory(s, r);
	if (rc)
		return rc;
	/*
	 * An auto unit follows the bytes the cache model stores per token (a
	 * 4-bit cache's 16-token block is a quarter of fp16's): known only once
	 * the model is initialised, so the first replica may build twice.
	 */
	if (idx == 0 && !c->pool_min_block_bytes) {
		uint64_t unit = kv_mem_pool_unit(kv_mem_unit_token_bytes(r->beta_bytes, &c->model),
						c->pool_max_block_bytes);

		if (unit != s->pool_unit_bytes) {
			replica_memory_release(r);
			s->pool_unit_bytes = unit;
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
	r->macro_ok = s->macro && (r->cache->flags & KV_PLUGIN_F_MACRO_STEPS) &&
		      (r->eng->flags & KV_PLUGIN_F_MACRO_STEPS) &&
		      /* read and dequantised bytes: macro_bytes; recomputed tokens: none */
		      (!r->cache->extra_prefill_tokens ||
		       (r->cache->no_extra && r->cache->no_extra(r->cache_priv)));
	/*
	 * Offloading (swap) changes preemption and adds the host-link copies
	 * to the iteration they are queued for: the first of a run (iter_ns,
	 * its duration d1_ns), none later (nobody is preempted or swapped in
	 * inside a run).  A window: macro_skip per step.
	 */
	r->macro_t = kv_xcalloc(KV_MACRO_STEPS + 1, sizeof(*r->macro_t));
	r->macro_wx = kv_xcalloc(KV_MACRO_STEPS + 1, sizeof(*r->macro_wx));
	r->macro_grow = kv_xcalloc(KV_MACRO_GROWS, sizeof(*r->macro_grow));
	r->macro_tn = kv_xcalloc(KV_MAX(c->source.n_tenants, 1), sizeof(*r->macro_tn));
	r->macro_tc = kv_xcalloc(KV_MAX(c->source.n_tenants, 1), sizeof(*r->macro_tc));
	r->sched = c->sched;
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
	free(r->running);
	free(r->batch);
	free(r->macro_t);
	free(r->macro_wx);
	free(r->macro_grow);
	free(r->macro_tn);
	free(r->macro_tc);
	kv_pool_release(&r->pool);
}

int kv__replica_arrive(struct kv_replica *r, struct kv_req *q)
{
	q->state = KV_REQ_WAITING;
	if (r->macro_K)
		macro_cut(r); /* the next step may admit q; the scheduler's state as of now */
	enqueue(r, q);
	observe(r, KV_OBS_ARRIVE, q, 0);
	return kick(r);
}

void kv__replica_final(struct kv_replica *r)
{
	rep_acct(r);
	if (r->cache->flush)
		r->cache->flush(r->cache_priv);
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
