/*
 * replica.h -- one replica (one GPU or tensor-parallel group): batch
 * formation, admission, preemption, and the iteration's accounting.
 *
 * The replica owns the mechanism, the scheduler plugin the policy (Linux's
 * core scheduler and sched_class split).  At each iteration boundary the
 * replica asks its scheduler to form the next batch; the scheduler calls,
 * in the order of its policy:
 *   kv_replica_keep_running()  keep the running set going, in admission
 *                              order, asking the policy only which request
 *                              to give up when memory runs out;
 *   kv_replica_schedule()      take one request's next tokens (a decode
 *                              step or a prefill chunk) from the budget and
 *                              reserve its memory;
 *   kv_replica_admit()         a scheduled waiting request joins the
 *                              running set;
 *   kv_replica_preempt(), kv_replica_reject()  a running request leaves.
 * Then the replica asks the perf model (or an executor) for the iteration's
 * time and, when it ends, applies the tokens, ends finished requests and
 * forms the next batch.
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

/* --- forming a batch (for schedulers) ------------------------------------- */

/*
 * Schedules q (running or waiting on r) for the iteration being formed:
 * takes its tokens from the budget (a decode step is one token; a prefill
 * chunk is what remains of its prefill, cut to the budget when chunked
 * prefill is on) and reserves the memory through the cache model.
 * Returns 0 when scheduled; KV_ERANGE when the token budget or the sequence
 * cap is spent (q untouched); KV_ENOMEM when its memory cannot be reserved
 * (q untouched).  A waiting q must be admitted with kv_replica_admit()
 * after a 0 return.
 */
int kv__replica_schedule(struct kv_replica *r, struct kv_req *q);
static inline int kv_replica_schedule(struct kv_replica *r, struct kv_req *q)
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
 * Schedules running[from], running[from + 1], ... in order, as
 * kv_replica_schedule() would, stopping at the first that fails.  Returns
 * the index of that request (n_running when all were scheduled) and stores
 * its error in *err (0 when none failed).  Equivalent to the loop over
 * kv_replica_schedule(), only faster.
 */
uint32_t kv_replica_schedule_running(struct kv_replica *r, uint32_t from, int *err);

/* Moves a waiting q that kv_replica_schedule() accepted into the running set. */
void kv_replica_admit(struct kv_replica *r, struct kv_req *q);

enum kv_preempt {
	KV_PREEMPT_AUTO, /* swap when the cache model offloads, else recompute */
	KV_PREEMPT_RECOMPUTE, /* drop the KV; prefill prompt + generated tokens again */
	KV_PREEMPT_SWAP, /* copy the KV to host memory; copy it back to resume */
};

/*
 * Preempts running q and hands it to the scheduler's enqueue.  By recompute:
 * releases its memory and sets it back to prefill its prompt plus the
 * tokens generated so far.  By swap: copies its KV bytes to host memory
 * over the host link (time added to the next iteration, or overlapped with
 * it, as the cache model says), releases the device memory, and copies them
 * back when it is scheduled again.  q must not be scheduled in the batch
 * being formed.  kv_replica_preempt() is the KV_PREEMPT_AUTO case.
 */
void kv_replica_preempt_as(struct kv_replica *r, struct kv_req *q, enum kv_preempt how);
void kv_replica_preempt(struct kv_replica *r, struct kv_req *q);

/*
 * Ends running q as rejected (KV_END_REJECTED_POOL): for a request that
 * cannot grow although it is alone on the replica.  q must not be scheduled
 * in the batch being formed.
 */
void kv_replica_reject(struct kv_replica *r, struct kv_req *q);

/*
 * A policy's answer to "grower cannot grow: whom do we give up?".  Called
 * with grower running, not scheduled, refused memory; returns a running
 * request not scheduled in the batch being formed (grower itself when
 * grower should yield) and may set *how (KV_PREEMPT_AUTO on entry).  Must
 * not schedule, admit or preempt anything itself.
 */
typedef struct kv_req *(*kv_pick_victim_fn)(void *priv, struct kv_replica *r,
					    struct kv_req *grower, enum kv_preempt *how);

/*
 * Makes room for running q, which kv_replica_schedule() refused memory:
 * preempts pick's victims (pick NULL: the newest running request, fifo's
 * rule) until q is scheduled or out of budget.  A q that is its own victim
 * is preempted, or rejected when it runs alone (it cannot grow even in an
 * empty replica).  Returns the index of the next running request to look
 * at: after q when q stayed, q's old index when q left.
 */
uint32_t kv_replica_make_room(struct kv_replica *r, struct kv_req *q, kv_pick_victim_fn pick,
			      void *priv);

/*
 * Keeps the running requests going, in admission order: schedules each,
 * making room (kv_replica_make_room) for one refused memory; one out of
 * budget sits this iteration out.  pick as for kv_replica_make_room.
 */
void kv_replica_keep_running(struct kv_replica *r, kv_pick_victim_fn pick, void *priv);

/* Tokens q would take from the budget now (ignoring the budget's size). */
uint64_t kv_req_next_tokens(const struct kv_req *q);

/* --- for the engine -------------------------------------------------------- */

/*
 * Builds replica idx of s: pool, cache-model and scheduler instances.
 * Returns 0, or a code with s->diag filled (bad options, an empty pool).
 */
int kv__replica_init(struct kv_sim *s, struct kv_replica *r, uint32_t idx);
void kv__replica_release(struct kv_replica *r);
/* A new request q (state waiting) joins r: queued, and r starts an iteration if idle. */
int kv__replica_arrive(struct kv_replica *r, struct kv_req *q);
/* r's iteration ended at s->now: applies its tokens, ends the finished, forms the next. */
int kv__replica_iter_done(struct kv_replica *r);
/*
 * Applies r's pending macro steps that the per-step engine would have run
 * before event e (all of them when e is NULL): call before e reads r.
 */
void kv__replica_sync(struct kv_replica *r, const struct kv_event *e);
/* Brings only r->outstanding_tokens up to the macro steps before e (for a router). */
void kv__replica_sync_outstanding(struct kv_replica *r, const struct kv_event *e);
/* Brings the token counters of r's requests up to the macro steps applied (for a sample). */
void kv__replica_sync_reqs(struct kv_replica *r);
/*
 * Ends q, assigned to r, for reason e: releases what it holds, records its
 * figures, calls the sink, frees its slot.  Returns 0 or KV_EIO (sink).
 */
int kv__replica_end(struct kv_replica *r, struct kv_req *q, enum kv_end e);
/* End-of-run accounting and leak checks (aborts on a leak). */
void kv__replica_final(struct kv_replica *r);
/* The pool integrity check (aborts on a broken pool). */
void kv__replica_check_pool(const struct kv_replica *r);

#endif /* KV_REPLICA_H */
