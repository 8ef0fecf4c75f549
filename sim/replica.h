/*
 * replica.h -- one replica (one GPU or tensor-parallel group): batch
 * formation, admission, preemption, and the iteration's accounting.
 *
 * The replica owns the mechanism and the one batch-formation loop, the
 * scheduler plugin the policy (Linux's core scheduler and sched_class
 * split; vLLM V1's one schedule() loop over a policy-ordered queue).  At
 * each iteration boundary the replica forms the next batch (scheduler.h
 * says how): it keeps the running set going in admission order (a ranked
 * policy's rank by rank, from the highest), asking the policy only which
 * request to give up when memory runs out (pick_victim, victim_how), and
 * admits waiting requests in the order the policy hands them out
 * (next_waiting), telling it what was taken or refused.  The result is
 * plain data, r->batch[0..n_batch) with each request's batch_tokens.
 * Then the replica asks the perf model (or an executor) for the
 * iteration's time and, when it ends, applies the tokens, ends finished
 * requests and forms the next batch.  The mechanism (scheduling,
 * admission, preemption, rejection) is static to replica.c: no policy
 * calls it.

 * The replica's state (struct kv_replica) lives here, with the inline
 * helpers that read it: the router's bounds of its outstanding tokens
 * (kv__out_bound, kv__out_changed) and its live bytes.  engine.h holds
 * the simulator and the request; the engine calls a replica through the
 * kv__replica_* functions below.
 *
 * Invariants: a request is in the batch at most once (batch_tokens != 0);
 * the batch counters (r->shape, r->ctx_tokens, r->budget_tokens) are what
 * the requests in r->batch add up to: every decode step enters the batch
 * through kv__decodes_add(), whichever path schedules it; a request that
 * leaves the running set is not in the batch.
 */
#ifndef KV_REPLICA_H
#define KV_REPLICA_H

#include "engine.h"
#include "frontend.h"
#include "macro.h"

/* --- the replica's state ------------------------------------------------- */

struct kv_replica {
	struct kv_sim *sim; /* owner */
	struct kv_group *grp; /* its group: perf model, pool size (engine.h) */
	const struct kv_sim_config *cfg; /* its group's configuration (grp->cfg) */
	uint32_t idx; /* index in the cluster */
	struct kv_pool pool; /* KV memory */
	const struct kv_sched_ops *sched; /* scheduler plugin */
	void *sched_priv; /* its private state */
	const struct kv_cache_ops *cache; /* cache-model plugin */
	void *cache_priv; /* its private state */
	struct kv_req **running; /* admitted requests, in admission order */
	uint32_t n_running, running_cap;
	struct kv_req **batch; /* requests scheduled in the current iteration */
	uint32_t n_batch;
	uint64_t budget_tokens; /* tokens left in the batch being formed */
	struct kv_batch_shape shape; /* of the batch being formed / in flight */
	uint64_t ctx_tokens; /* context tokens read by the batch (when the cache has no read_bytes) */
	int busy; /* an iteration is in flight */
	int kick_due; /* idle with a request arrived this instant: listed in sim->kick, formed after the instant's last arrival */
	kv_ns iter_start_ns; /* start of the iteration in flight (after it ends: of the last one) */
	kv_ns iter_end_ns; /* end of the last iteration applied; KV_NS_NEVER before the first */
	uint64_t live_tokens; /* sum of kv_tokens over its requests */
	uint64_t outstanding_tokens; /* prompt + output tokens not yet processed, assigned here */
	uint64_t n_assigned; /* requests assigned, not yet ended */
	/* statistics */
	uint64_t iterations; /* iterations run */
	kv_ns busy_ns; /* time spent in iterations */
	double reserved_Bs; /* integral of reserved pool bytes, byte-seconds */
	double used_Bs; /* integral of live-token bytes, byte-seconds */
	double extfrag_s; /* integral of the pool's external fragmentation, seconds */
	kv_ns acct_t0_ns; /* time the integrals were last brought up to date */
	uint64_t peak_reserved_bytes; /* high-water mark of reserved bytes */
	double beta_bytes; /* cache model's bytes per token (cached at init) */
	uint64_t window_tokens; /* model's sliding window, tokens; UINT64_MAX: none */
	double window_frac; /* share of layers with the window (profile.h), 0: none */
	uint64_t win_excess; /* batch: context tokens past the window, skipped by windowed layers */
	uint64_t live_win_excess; /* sum over its requests of max(0, kv_tokens - window), tokens */
	enum kv_offload offload; /* the cache model's offload mode (cached at init) */
	int plain_decode; /* the cache model has no per-step hooks: decode steps take the fast path */
	uint32_t max_seqs; /* sequence cap of a batch (cfg->max_batch_seqs) */
	kv_ns copy_ns; /* host-link transfers queued for the next iteration */
	uint64_t swap_out_bytes, swap_in_bytes, swap_dropped_bytes; /* offload traffic */
	uint64_t swaps; /* swap-outs */
	kv_ns load_wait_ns; /* the longest wait for a tier load of the batch being formed (tiers.h), 0: none */
	int load_blocking; /* those loads block the pass (else they stream layer by layer) */
	uint64_t tier_load_tokens, tier_loads; /* prefix tokens loaded from the tiers, admissions that loaded */
	kv_ns tier_wait_ns; /* sum of those admissions' waits for their loads */
	kv_ns tier_recompute_ns; /* sum of a lone prefill of each one's loaded tokens (the recompute avoided) */
	struct kv_req *last_nomem; /* last request refused memory while forming the batch */
	uint64_t last_nomem_tokens; /* the tokens last_nomem asked its holding to fit */
	const struct kv_req *restarted; /* last request make_room restarted alone, NULL once it ended */
	uint64_t restarted_ended; /* kv__engine_ended() when it was restarted */
	/* serving-engine semantics (serving.h) */
	const struct kv_engine_ops *eng; /* engine plugin (cfg->engine, vllm-v0 when NULL) */
	void *eng_priv; /* its private state, options filled */
	uint32_t step_flags; /* KV_STEP_* of the step being formed (the engine's step hook sets them) */
	uint32_t step_preempted; /* requests preempted to make room in the step being formed */
	uint32_t decode_cap; /* batch length below which decodes take the fast path, this step (0: never) */
	uint64_t chunk_cap_tokens; /* largest prefill chunk, 0 = the budget (vLLM long_prefill_token_threshold) */
	struct kv_frontend fe; /* the front end: API servers, hops, streaming (frontend.h) */
	void *cache_opts_own; /* options of an engine-chosen cache model (freed with the replica) */
	struct kv_req *ref_q[KV_MACRO_REFUSED]; /* waiting requests refused memory forming the batch, in call order */
	uint32_t n_ref; /* those refusals (may exceed KV_MACRO_REFUSED: then no macro step) */
	struct kv_req **evicted; /* preemptive policy: preempted while the batch is formed (KV_FORM_EVICTED), else NULL */
	uint32_t n_evicted; /* entries of evicted[] */
	int admitted_rank; /* ranked policy: highest rank admitted while the batch is formed, -1 none */
	struct kv_macro macro; /* its run of macro steps (macro.h) */
	/* prefill/decode disaggregation (disagg.h) */
	int prefill_only; /* a prefill replica: a request leaves when its prefill emits the first token */
	struct kv_req **handoff; /* requests whose prefill ended this iteration, to send (KV_REQ_HANDOFF) */
	uint32_t n_handoff, handoff_cap; /* entries of handoff, its capacity (doubles) */
	uint64_t handoffs; /* requests handed off */
	uint32_t n_xfer_held; /* handed-off requests whose holding waits for their transfer to complete */
	uint64_t xfer_in_bytes; /* KV bytes landed from links and admitted here */
	uint64_t xfer_dropped_bytes; /* KV bytes landed here whose request ended before admission */
	uint64_t inbound_bytes; /* KV bytes sent here and not yet admitted (placement's view) */
	uint32_t n_inbound; /* KV transfers sent here, not yet landed (autoscaling's view) */
	kv_ns wait_ns; /* sum over admissions of the time queued (queued_ns -> admission), ns */
	uint64_t admits; /* admissions counted in wait_ns */
};



/*
 * Least pending macro steps a view's lower bound covers (kv__out_bound)
 * when the replica is near the least view; see there.
 */
#define KV_ROUTE_LOOKAHEAD_STEPS 4

/*
 * Sets r's key in low_tree, a lower bound of r->outstanding_tokens as any
 * view of it can show until the next call of kv__out_changed or until its
 * key in exp_tree passes, whichever comes first: the decode tokens (n_batch
 * per step) of its first L pending macro steps (macro.ko + 1 .. macro.ko +
 * L, step macro.K being an event of its own) all taken; UINT64_MAX when no
 * step is pending (the view is exact: out_tree has it).  exp_tree holds the
 * end of step macro.ko + L + 1, KV_NS_NEVER when L covers every pending
 * step.
 *
 * L trades the arrivals that collect r (its bound at or under the least
 * view `least`) against bring-ups when the bound lapses: every pending step
 * when the bound stays above least (r is far from it: never collected,
 * never brought up); else the most steps that keep it above least, at least
 * KV_ROUTE_LOOKAHEAD_STEPS.  Any L is exact: only the work changes.  Every
 * pending step for every replica (the first version) let a replica in its
 * last macro step reach a bound of 0, and an arrival on 10,000 replicas
 * collected 1,200 of them to bring up 24; a fixed 4 collected 98 but
 * brought up 32 lapsed ones (measured in docs/benchmarks.md).
 */
static inline void kv__out_bound(struct kv_replica *r, uint64_t least)
{
	struct kv_sim *s = r->sim;
	uint32_t pend = r->macro.K > r->macro.ko + 1 ? r->macro.K - 1 - r->macro.ko : 0, L = pend;
	uint64_t n = r->n_batch, view = r->outstanding_tokens, d = n * pend;

	if (!pend) {
		kv_mintree_set(&s->low_tree, r->idx, UINT64_MAX);
		kv_mintree_set(&s->exp_tree, r->idx, KV_NS_NEVER);
		return;
	}
	if (view <= least || view - least <= d) { /* the whole run would reach least */
		uint64_t keep = view > least && n ? (view - least - 1) / n : 0;

		L = (uint32_t)KV_MIN((uint64_t)pend, KV_MAX(keep, (uint64_t)KV_ROUTE_LOOKAHEAD_STEPS));
		d = n * L;
	}
	kv_mintree_set(&s->low_tree, r->idx, view > d ? view - d : 0);
	kv_mintree_set(&s->exp_tree, r->idx,
		       L < pend ? r->macro.t[r->macro.ko + L + 1] : KV_NS_NEVER);
}

/*
 * Updates the router's trees after a write to r->outstanding_tokens,
 * macro.K, macro.ko or n_batch (every one of them: low_tree must stay a
 * lower bound).
 */
static inline void kv__out_changed(struct kv_replica *r)
{
	struct kv_sim *s = r->sim;

	if (!s->out_tree.key)
		return; /* a small cluster: the router scans */
	/* a replica the router must not pick (autoscale.h) has the largest key */
	kv_mintree_set(&s->out_tree, r->idx,
		       kv_rep_routable(s, r->idx) ? r->outstanding_tokens : UINT64_MAX);
	kv__out_bound(r, s->out_tree.key[kv_mintree_min(&s->out_tree)]);
}


/*
 * Bytes r's live tokens need (the "used" memory of the summary and the
 * timeseries): live_tokens * beta, less the tokens windowed layers no
 * longer keep, (beta * window_frac) each (profile.h kv_model_kv_bytes).
 */
static inline double kv_replica_live_bytes(const struct kv_replica *r)
{
	if (!r->live_win_excess)
		return (double)r->live_tokens * r->beta_bytes;
	return ((double)r->live_tokens - r->window_frac * (double)r->live_win_excess) *
	       r->beta_bytes;
}

/*
 * Brings q's memory-time integral up to now.  Called only where kv_bytes may
 * change (reserve, release): between two such points the holding is constant,
 * so the integral is exact without a per-iteration update.
 */
static inline void kv__req_mem_touch_at(struct kv_req *q, kv_ns now)
{
	q->memtime_Bs += (double)q->kv_bytes * (double)(now - q->mem_t0_ns) * 1e-9;
	q->mem_t0_ns = now;
}

/* --- the decode fast path ------------------------------------------------- */

/*
 * Decode steps being added to r's batch, the counters in locals (the stores
 * through r could alias the requests as far as C knows).  Begin, add the
 * steps, end: end publishes the counters.  The one place a decode step of a
 * plain cache model enters a batch.
 */
struct kv__decodes {
	struct kv_req **batch; /* r->batch */
	uint32_t n, n0; /* batch length now, at begin */
	uint64_t budget; /* tokens left */
	uint64_t pairs; /* context tokens read by the steps added (attention pairs) */
	uint64_t window; /* r->window_tokens */
	uint64_t win_excess; /* context tokens of the steps added past the window */
};

static inline void kv__decodes_begin(const struct kv_replica *r, struct kv__decodes *d)
{
	d->batch = r->batch;
	d->n = d->n0 = r->n_batch;
	d->budget = r->budget_tokens;
	d->pairs = 0;
	d->window = r->window_tokens;
	d->win_excess = 0;
}

/* Adds q's decode step; the caller checked the budget, the cap and q's holding. */
static inline void kv__decodes_add(struct kv__decodes *d, struct kv_req *q)
{
	q->batch_tokens = 1;
	d->batch[d->n++] = q;
	d->budget--;
	d->pairs += q->kv_tokens + 1;
	d->win_excess += q->kv_tokens + 1 > d->window ? q->kv_tokens + 1 - d->window : 0;
}

static inline void kv__decodes_end(struct kv_replica *r, const struct kv__decodes *d)
{
	uint32_t n = d->n - d->n0;

	r->n_batch = d->n;
	r->budget_tokens = d->budget;
	r->shape.n_seqs += n;
	r->shape.n_decode += n;
	r->shape.n_sample += n;
	r->shape.attn_pairs += d->pairs;
	r->ctx_tokens += d->pairs;
	r->win_excess += d->win_excess;
	r->shape.window_skip_pairs += d->win_excess; /* a decode at n skips n - W */
}

/*
 * The batch length below which decode steps may take the fast path (0: never):
 * max_seqs for a plain cache model in a step whose engine allows decodes.
 */
static inline uint32_t kv__decodes_cap(const struct kv_replica *r)
{
	return r->decode_cap;
}

/*
 * q can take the fast path: a decode step inside its holding, not in the
 * batch yet, with the batch at n < cap (kv__decodes_cap) and budget left.
 */
static inline int kv__decode_fits(const struct kv_req *q, uint32_t n, uint32_t cap,
				  uint64_t budget)
{
	return n < cap && budget && q->kv_tokens >= q->prefill_target &&
	       q->kv_tokens < q->kv_cap_tokens && !q->batch_tokens;
}

/* --- forming a batch (replica.c's loop; macro.c repeats refusals) ----------- */

/*
 * Schedules q (running or waiting on r) for the iteration being formed:
 * takes its tokens from the budget (a decode step is one token; a prefill
 * chunk is what remains of its prefill, cut to the budget when chunked
 * prefill is on) and reserves the memory through the cache model.
 * Returns 0 when scheduled; KV_ERANGE when the token budget or the sequence
 * cap is spent (q untouched); KV_ENOMEM when its memory cannot be reserved
 * (q untouched).  A waiting q scheduled joins the running set next.  The
 * general path: replica.c sends decode steps inside their holdings through
 * the decode fast path first.
 */
int kv__replica_schedule(struct kv_replica *r, struct kv_req *q);

/* Tokens q would take from the budget now (ignoring the budget's size). */
uint64_t kv_req_next_tokens(const struct kv_req *q);

/* --- for the engine -------------------------------------------------------- */

/*
 * Builds replica idx of s, a replica of group g (its configuration g->cfg,
 * its pool size g->pool_bytes): pool, cache-model and scheduler instances.
 * Returns 0, or a code with s->diag filled (bad options, an empty pool).
 */
int kv__replica_init(struct kv_sim *s, struct kv_group *g, struct kv_replica *r, uint32_t idx);
void kv__replica_release(struct kv_replica *r);
/*
 * A new request q (state waiting) joins r's queue; r forms no batch: the
 * engine calls kv__replica_kick once every arrival of the instant is queued.
 */
void kv__replica_arrive(struct kv_replica *r, struct kv_req *q);
/* Forms and starts r's next iteration if r is idle; 0 or a code (a sink failed). */
int kv__replica_kick(struct kv_replica *r);
/* r's iteration ended at s->now: applies its tokens, ends the finished, forms the next. */
int kv__replica_iter_done(struct kv_replica *r);
/*
 * Ends q, assigned to r, for reason e: releases what it holds, records its
 * figures, calls the sink, frees its slot.  Returns 0 or KV_EIO (sink).
 */
int kv__replica_end(struct kv_replica *r, struct kv_req *q, enum kv_end e);
/*
 * Disaggregation (disagg.h).  Releases the device holding of q, handed off
 * by prefill replica r, once its transfer has completed (vLLM's disaggregated
 * prefill frees the prefill side's blocks when the decode side has read
 * them); cuts r's macro run, if any, first.
 */
void kv__replica_xfer_release(struct kv_replica *r, struct kv_req *q);
/* End-of-run accounting and leak checks (aborts on a leak). */
void kv__replica_final(struct kv_replica *r);
/* The pool integrity check (aborts on a broken pool). */
void kv__replica_check_pool(const struct kv_replica *r);

#endif /* KV_REPLICA_H */
