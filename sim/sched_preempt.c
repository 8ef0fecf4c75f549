/*
 * sched_preempt.c -- priority scheduling with preemption: a waiting request
 * of higher priority displaces running ones of lower priority, by swap or
 * by recompute; long requests run in segments; waiting requests age.
 *
 * Levels.  Each request has a base level, higher = more important:
 *   priority: tenant   the rank of its tenant's `priority` among the
 *                      workload's distinct tenant priorities (0 = lowest);
 *   priority: mlfq     FastServe's skip-join multi-level feedback queue (Wu
 *                      et al., "Fast Distributed Inference Serving for Large
 *                      Language Models", arXiv:2305.05920, 2023).  Queue
 *                      k = 0..K-1 (K = `levels`, queue 0 first) has a
 *                      quantum of Q_k = quantum * ratio^k output tokens.
 *                      Skip-join: a new request joins the first queue whose
 *                      quantum covers its prompt's prefill,
 *                        k0 = min{k : Q_k * t_dec(P) >= t_pre(P)},
 *                      t_pre(P) the perf model's time of a lone prefill of
 *                      the P-token prompt, t_dec(P) of one decode step at
 *                      that context (a token's worth of time).  It is
 *                      demoted each time it has generated its queue's
 *                      quantum: queue(g) = the first k >= k0 with
 *                      g < Q_k0 + ... + Q_k (else K - 1) after g output
 *                      tokens; level = K - 1 - queue.  Long generators sink,
 *                      new short requests start on top.  (FastServe's
 *                      quanta are times; here they are decode steps, and the
 *                      prompt is paid for by the queues it skips.)
 * Aging (the starvation guard, option `aging` A, 0 = off): the effective
 * level is  e = min(top, base + floor(W / A)),  W the time the request has
 * spent waiting, summed over its waits (frozen while it runs, resumed after
 * a preemption).
 *
 * Order.  From e each request gets a rank:
 *   running, within its segment    3e + 2
 *   waiting                        3e + 1
 *   running, past its segment      3e      (option `segment_tokens` S > 0:
 *                                           S tokens of progress since its
 *                                           admission: KV tokens beyond those
 *                                           held at admission, or for a
 *                                           preempted request beyond its
 *                                           prefill target, so a turn always
 *                                           rebuilds what a recompute lost
 *                                           and then makes progress)
 * The batch is formed in descending rank: running requests of one rank in
 * admission order; waiting ones by rank, then longest wait W (FIFO within a
 * level), then arrival.  So running requests keep going first within their
 * level; a waiting request goes before running requests of lower rank, who
 * sit the iteration out (keeping their memory) when the budget or the
 * sequence cap is spent.  When a waiting request w does not fit in memory,
 * running requests of lower rank not yet in the batch are evicted, lowest
 * rank first, newest first, until w fits -- if the free memory plus theirs
 * can hold w at all; else none is.  The first waiting request that cannot
 * be admitted closes admission for the iteration (no overtaking: a large
 * urgent request is not starved by small ones).  A running request that
 * cannot grow evicts running requests not yet in the batch, lowest rank
 * first, newest first, itself included (alone on the replica it is
 * rejected), which within one level is fifo's rule.  Segments: past S
 * tokens a request ranks below waiting requests of its level, so they go
 * first and, when memory is short, evict it; when the sequence cap is full
 * and one of higher rank was admitted in its place it is evicted too.  It
 * queues again behind those that waited longer: long requests take turns
 * (round-robin) instead of holding the replica.
 *
 * Eviction (option `mode`, for every preemption this policy makes): swap
 * copies the victim's KV bytes to host memory and back over the host link,
 * costed by the engine in the iterations; recompute drops them and the
 * request prefills prompt + generated tokens again; cheaper swaps when
 * 2 * kv_bytes / (host_link * tp) < t_pre(kv_tokens), the perf model's time
 * of a lone prefill of the tokens it would lose (an upper bound on the
 * recompute: a real batch shares the weight read).  Preempted requests keep
 * their tokens (the engine's preemption) and the wait they accumulated.
 *
 * Guarantees.  A request is never delayed by one of lower rank except by
 * memory that request holds while in the batch already.  With one level,
 * no segments and nothing preempted, the policy is fifo.  No starvation:
 * after (top - base) * A of waiting a request ranks with the top and goes
 * before every request that has waited less, so it waits at most
 * (top - base) * A, plus the time for top requests that waited longer to be
 * admitted, plus the time for running ones to free its memory; once
 * admitted at the top only memory pressure among top requests, or its
 * segment, preempts it.  An eviction leaves the victim's waiting rank below
 * the evictor's running rank, so it cannot evict it back until the evictor
 * passes its segment or is demoted, or the victim ages another level.
 * Levels, ranks and queues are per replica.
 *
 * Formation.  The replica's one loop forms the batch from this policy's
 * answers (scheduler.h, a ranked and preemptive policy): prio_rank gives
 * the ranks above, prio_next and prio_took the waiting queues' best,
 * prio_victim_how the eviction's mode, prio_yields the segments' end.  The
 * order, the evictions and the closing of admission are the replica's.
 *
 * Per-request state (struct prio_req, req_size): waiting, its virtual wait
 * start (now - W); running, W in ns and the KV tokens its segment counts
 * from.  Nothing
 * is allocated: waiting queues are intrusive, one per base level, sorted by
 * virtual wait start (arrivals append; a preempted request walks in from
 * the nearer end); a batch costs O(running * ranks present + admissions *
 * levels).
 */
#include "replica.h"

#include <limits.h>
#include <math.h>
#include <stddef.h>

#define MAX_LEVELS 64 /* KV_MAX_TENANTS distinct priorities, or mlfq levels */
#define RANK_WORDS (3 * MAX_LEVELS / 64) /* bitmap words over ranks 0 .. 3 * MAX_LEVELS - 1 */

enum { PRIO_TENANT, PRIO_MLFQ };
enum { MODE_SWAP, MODE_RECOMPUTE, MODE_CHEAPER };

struct prio {
	int priority; /* option: tenant or mlfq, default tenant */
	int mode; /* option: swap, recompute or cheaper, default cheaper */
	uint64_t levels; /* option: mlfq queues, default 4 */
	uint64_t quantum_tokens; /* option: mlfq quantum of the first queue, default 32 tokens */
	double ratio; /* option: mlfq quantum growth per queue, default 2 */
	uint64_t segment_tokens; /* option: tokens per segment of a running request, 0 = off (default) */
	kv_ns aging_ns; /* option: waiting time per level of aging, default 30 s, 0 = off */
	uint32_t n_levels; /* levels in use; the top is n_levels - 1 */
	uint32_t tenant_level[KV_MAX_TENANTS]; /* tenant: level of each tenant */
	uint64_t quantum[MAX_LEVELS]; /* mlfq: output tokens of queue k (k = 0 first) */
	uint64_t join_prompt[MAX_LEVELS]; /* mlfq: longest prompt that skip-joins queue k */
	uint64_t n_waiting; /* requests queued */
	struct kv_reqq wait[MAX_LEVELS]; /* waiting, by base level, ascending virtual wait start */
};

struct prio_req { /* per-request state, zeroed at arrival */
	kv_ns wait_start_ns; /* waiting: virtual wait start, now - W (the queues' key) */
	kv_ns waited_ns; /* running: W, the time it waited before its admission */
	uint64_t mark_tokens; /* running: KV tokens its segment counts from */
};

/* q's per-request state. */
static struct prio_req *req_of(const struct kv_sim *s, const struct kv_req *q)
{
	return kv_req_sched(s, q);
}

/* Waiting q's key in its queue: its virtual wait start. */
static kv_ns key(const struct kv_sim *s, const struct kv_req *q)
{
	return req_of(s, q)->wait_start_ns;
}

static const char *const priority_names[] = { "tenant", "mlfq", NULL };
static const char *const mode_names[] = { "swap", "recompute", "cheaper", NULL };

static const struct kv_option prio_options[] = {
	{ .name = "priority", .type = KV_OPT_ENUM, .offset = offsetof(struct prio, priority),
	  .def = PRIO_TENANT, .units = "", .names = priority_names,
	  .help = "tenant: the tenants' priorities; mlfq: skip-join multi-level feedback queue (FastServe)" },
	{ .name = "mode", .type = KV_OPT_ENUM, .offset = offsetof(struct prio, mode),
	  .def = MODE_CHEAPER, .units = "", .names = mode_names,
	  .help = "how a victim leaves: swap its KV to host, recompute it later, or whichever the models say is cheaper" },
	{ .name = "levels", .type = KV_OPT_U64, .offset = offsetof(struct prio, levels),
	  .def = 4, .min = 1, .max = MAX_LEVELS, .units = "",
	  .help = "mlfq: number of queues" },
	{ .name = "quantum", .type = KV_OPT_U64, .offset = offsetof(struct prio, quantum_tokens),
	  .def = 32, .min = 1, .max = 1ULL << 32, .units = "tokens",
	  .help = "mlfq: output tokens a request generates in the first queue before demotion" },
	{ .name = "ratio", .type = KV_OPT_DBL, .offset = offsetof(struct prio, ratio),
	  .def = 2, .min = 1, .max = 1024, .units = "",
	  .help = "mlfq: quantum growth from one queue to the next" },
	{ .name = "segment_tokens", .type = KV_OPT_U64, .offset = offsetof(struct prio, segment_tokens),
	  .def = 0, .min = 0, .max = 1ULL << 32, .units = "tokens",
	  .help = "a running request scheduled for this many tokens since admission yields to waiting requests of its level; 0 = off" },
	{ .name = "aging", .type = KV_OPT_NS, .offset = offsetof(struct prio, aging_ns),
	  .def = 30e9, .min = 0, .max = 1e15, .units = "ns",
	  .help = "waiting time that raises a request's priority by one level; 0 = off" },
	{ .name = NULL },
};

/* --- the perf model's estimates ------------------------------------------ */

/* Time of a lone prefill of n tokens from an empty cache. */
static kv_ns prefill_ns(const struct kv_replica *r, uint64_t n)
{
	struct kv_batch_shape b = { .n_seqs = 1, .n_prefill_tokens = n,
				    .attn_pairs = kv_perf_prefill_pairs(0, n),
				    .kv_read_bytes = (uint64_t)((double)n * r->beta_bytes) };

	return kv_perf_iter_ns(&r->grp->perf, &b);
}

/* Time of a lone decode step at a context of ctx tokens. */
static kv_ns decode_ns(const struct kv_replica *r, uint64_t ctx)
{
	struct kv_batch_shape b = { .n_seqs = 1, .n_decode = 1, .n_sample = 1, .attn_pairs = ctx + 1,
				    .kv_read_bytes = (uint64_t)((double)(ctx + 1) * r->beta_bytes) };

	return kv_perf_iter_ns(&r->grp->perf, &b);
}

/* Host-link time of copying q's KV out and back (as the engine charges it). */
static kv_ns swap_ns(const struct kv_replica *r, const struct kv_req *q)
{
	double bw = r->cfg->device.host_link_Bps * r->cfg->tp *
		    (r->cfg->pp ? r->cfg->pp : 1); /* every GPU of the replica copies its share */

	return bw > 0 ? 2 * (kv_ns)ceil((double)q->kv_bytes / bw * 1e9) : 0;
}

/* --- levels and ranks ---------------------------------------------------- */

/* The mlfq queue a prompt of P tokens skip-joins. */
static uint32_t mlfq_join(const struct prio *p, uint64_t prompt)
{
	uint32_t k = 0;

	while (k + 1 < p->n_levels && prompt > p->join_prompt[k])
		k++;
	return k;
}

/* q's base level after `generated` output tokens: its tenant's, or its mlfq queue's after demotions. */
static uint32_t base_level_at(const struct prio *p, const struct kv_req *q, uint64_t generated)
{
	uint64_t used = 0;
	uint32_t k;

	if (p->priority == PRIO_TENANT)
		return p->tenant_level[q->tenant];
	for (k = mlfq_join(p, q->prompt_tokens);
	     k + 1 < p->n_levels && generated >= used + p->quantum[k]; k++)
		used += p->quantum[k];
	return p->n_levels - 1 - k;
}

/* q's base level now. */
static uint32_t base_level(const struct prio *p, const struct kv_req *q)
{
	return base_level_at(p, q, q->generated);
}

/* A base level raised by one per aging period waited, capped at the top. */
static uint32_t effective(const struct prio *p, uint32_t base, kv_ns waited_ns)
{
	uint64_t up = p->aging_ns ? waited_ns / p->aging_ns : 0;
	uint32_t top = p->n_levels - 1;

	return up >= top - base ? top : base + (uint32_t)up;
}

/* Running q, j decode steps on, has made its segment's tokens of progress since its admission. */
static int past_segment_at(const struct prio *p, const struct kv_replica *r, const struct kv_req *q,
			   uint64_t j)
{
	uint64_t mark = req_of(r->sim, q)->mark_tokens, kv = q->kv_tokens + j;

	return p->segment_tokens && kv > mark && kv - mark >= p->segment_tokens;
}

static int past_segment(const struct prio *p, const struct kv_replica *r, const struct kv_req *q)
{
	return past_segment_at(p, r, q, 0);
}

/* Rank of running q after j more decode steps (its wait is frozen while it runs). */
static int run_rank_at(const struct prio *p, const struct kv_replica *r, const struct kv_req *q,
		       uint64_t j)
{
	int e = (int)effective(p, base_level_at(p, q, q->generated + j),
			       req_of(r->sim, q)->waited_ns);

	return 3 * e + (past_segment_at(p, r, q, j) ? 0 : 2);
}

static int run_rank(const struct prio *p, const struct kv_replica *r, const struct kv_req *q)
{
	return run_rank_at(p, r, q, 0);
}

/* Rank of waiting q, queued at level l. */
static int wait_rank(const struct prio *p, const struct kv_replica *r, const struct kv_req *q,
		     uint32_t l)
{
	return 3 * (int)effective(p, l, r->sim->now - key(r->sim, q)) + 1;
}

/* --- set-up --------------------------------------------------------------- */

/* Tenant levels: the number of distinct tenant priorities below each tenant's. */
static void tenant_levels(struct prio *p, const struct kv_source_spec *src)
{
	uint32_t n = src->n_tenants ? src->n_tenants : 1, i, j, k;

	p->n_levels = 1;
	for (i = 0; i < n; i++) {
		uint32_t lvl = 0;

		for (j = 0; j < n; j++) {
			int dup = 0;

			if (src->tenants[j].priority >= src->tenants[i].priority)
				continue;
			for (k = 0; k < j; k++)
				dup |= src->tenants[k].priority == src->tenants[j].priority;
			lvl += !dup;
		}
		p->tenant_level[i] = lvl;
		p->n_levels = KV_MAX(p->n_levels, lvl + 1);
	}
}

/* Mlfq quanta and skip-join thresholds; KV_EINVAL when a quantum is absurd. */
static int mlfq_tables(struct prio *p, const struct kv_replica *r, struct kv_diag *d)
{
	const struct kv_sim_config *c = r->cfg;
	uint64_t max_ctx = KV_MAX(c->max_context_tokens, (uint64_t)c->model.max_ctx_tokens);
	double top = (double)p->quantum_tokens * pow(p->ratio, (double)(p->levels - 1));
	uint32_t k;

	if (top > (double)(1ULL << 40))
		return kv_diag_set(d, KV_EINVAL, "", 0, 0, "scheduler.ratio",
				   "quantum %llu x ratio %g ^ (levels %llu - 1) = %g tokens: expected at most 2^40",
				   (unsigned long long)p->quantum_tokens, p->ratio,
				   (unsigned long long)p->levels, top);
	p->n_levels = (uint32_t)p->levels;
	for (k = 0; k < p->n_levels; k++) {
		uint64_t lo = 0, hi = max_ctx;

		p->quantum[k] = (uint64_t)llround((double)p->quantum_tokens * pow(p->ratio, (double)k));
		/* the longest prompt with t_pre(P) <= Q_k * t_dec(P) (t_pre/t_dec grows with P) */
		while (lo < hi) {
			uint64_t mid = lo + (hi - lo + 1) / 2;

			if ((double)prefill_ns(r, mid) <= (double)p->quantum[k] * (double)decode_ns(r, mid))
				lo = mid;
			else
				hi = mid - 1;
		}
		p->join_prompt[k] = lo;
	}
	return 0;
}

static int prio_init(void *priv, struct kv_replica *r, struct kv_diag *d)
{
	struct prio *p = priv;
	uint32_t i;

	for (i = 0; i < MAX_LEVELS; i++)
		kv_reqq_init(&p->wait[i]);
	if (p->priority == PRIO_MLFQ)
		return mlfq_tables(p, r, d);
	tenant_levels(p, &r->sim->cfg->source);
	return 0;
}

/* --- waiting queues ------------------------------------------------------- */

/*
 * Inserts q after the requests of qq whose key is <= q's (keys ascend),
 * walking from the end nearer in key: arrivals append in O(1); a preempted
 * request that had waited long walks from the head.
 */
static void insert_sorted(struct kv_sim *s, struct kv_reqq *qq, struct kv_req *q)
{
	struct kv_req *head = kv_reqq_head(s, qq), *tail, *at;
	kv_ns k = key(s, q);

	if (!head || k < key(s, head)) {
		kv_reqq_push_front(s, qq, q);
		return;
	}
	tail = kv_sim_req(s, qq->tail);
	if (k >= key(s, tail)) {
		kv_reqq_push_back(s, qq, q);
		return;
	}
	if (k - key(s, head) < key(s, tail) - k) {
		for (at = head; key(s, kv_reqq_next(s, at)) <= k;)
			at = kv_reqq_next(s, at); /* the tail's key is > k: stops before it */
	} else {
		for (at = tail; key(s, at) > k;)
			at = kv_sim_req(s, at->q_prev); /* the head's key is <= k: stops there */
	}
	/* between at and its successor */
	tail = kv_reqq_next(s, at);
	q->q_prev = at->slot;
	q->q_next = tail->slot;
	at->q_next = q->slot;
	tail->q_prev = q->slot;
	qq->n++;
}

/*
 * Queues q at its base level.  A new request starts its wait now; a
 * preempted one (running key) resumes the wait it had accumulated.
 */
static void prio_enqueue(void *priv, struct kv_replica *r, struct kv_req *q)
{
	struct prio *p = priv;
	struct prio_req *st = req_of(r->sim, q);
	kv_ns now = r->sim->now, waited = q->preemptions ? st->waited_ns : 0;

	st->wait_start_ns = now - KV_MIN(waited, now);
	insert_sorted(r->sim, &p->wait[base_level(p, q)], q);
	p->n_waiting++;
}

static void prio_dequeue(void *priv, struct kv_replica *r, struct kv_req *q)
{
	struct prio *p = priv;

	kv_reqq_remove(r->sim, &p->wait[base_level(p, q)], q);
	p->n_waiting--;
}

/* The waiting request to admit next and its rank, or NULL. */
static struct kv_req *best_waiting(const struct prio *p, const struct kv_replica *r, int *rank)
{
	struct kv_req *best = NULL;
	uint32_t l;

	*rank = -1;
	for (l = 0; l < p->n_levels; l++) {
		struct kv_req *h = kv_reqq_head(r->sim, &p->wait[l]);
		int rk;

		if (!h)
			continue;
		rk = wait_rank(p, r, h, l);
		if (!best || rk > *rank ||
		    (rk == *rank && (key(r->sim, h) < key(r->sim, best) ||
				     (key(r->sim, h) == key(r->sim, best) && h->id < best->id)))) {
			best = h;
			*rank = rk;
		}
	}
	return best;
}

/* --- the replica's questions ---------------------------------------------- */

/* next_waiting: the best waiting request (the highest rank, the longest wait, arrival). */
static struct kv_req *prio_next(void *priv, const struct kv_replica *r)
{
	int rank;

	return best_waiting(priv, r, &rank);
}

/*
 * took: q leaves its queue.  The wait so far, exact: its level running is
 * its level waiting.  The segment counts from the KV it holds now (a cached
 * prefix the engine found included), or for a preempted request from the
 * end of its prefill: rebuilding what it lost is not progress.
 */
static void prio_took(void *priv, const struct kv_replica *r, struct kv_req *q)
{
	struct prio *p = priv;
	struct prio_req *st = req_of(r->sim, q);

	kv_reqq_remove(r->sim, &p->wait[base_level(p, q)], q);
	p->n_waiting--;
	st->waited_ns = r->sim->now - st->wait_start_ns;
	st->mark_tokens = q->preemptions ? KV_MAX(q->kv_tokens, q->prefill_target) : q->kv_tokens;
}

/* rank: running, 3e + 2 (3e past its segment); waiting, 3e + 1 at its queue's level. */
static int prio_rank(void *priv, const struct kv_replica *r, const struct kv_req *q)
{
	const struct prio *p = priv;

	if (q->state != KV_REQ_RUNNING)
		return wait_rank(p, r, q, base_level(p, q));
	/* one level and no segments: every running request ranks 2 */
	return p->n_levels == 1 && !p->segment_tokens ? 2 : run_rank(p, r, q);
}

/* victim_how: as `mode` says; cheaper compares the copies with a lone prefill of q's KV. */
static enum kv_preempt prio_victim_how(void *priv, const struct kv_replica *r,
				       const struct kv_req *q)
{
	const struct prio *p = priv;

	if (p->mode == MODE_SWAP ||
	    (p->mode == MODE_CHEAPER && swap_ns(r, q) < prefill_ns(r, q->kv_tokens)))
		return KV_PREEMPT_SWAP;
	return KV_PREEMPT_RECOMPUTE;
}

/*
 * yields: running q is past its segment.  The replica then preempts it when
 * the sequence cap is what is full and a request of higher rank was
 * admitted in its place: the round-robin of long requests when seats, not
 * memory, are short (memory makes it through the evictions of a waiting
 * request refused memory).  Rejected: yielding whenever displaced, also by
 * the token budget -- prefill chunks of each admission then evict every
 * decoding request past its segment, and an overloaded replica churns
 * through swaps.
 */
static int prio_yields(void *priv, const struct kv_replica *r, const struct kv_req *q)
{
	return past_segment(priv, r, q);
}

/*
 * First step j in [1, K) after which running q's rank differs from its rank
 * at j = 1 (K when none).  A rank never rises while running (demotions and
 * the segment's end only lower it), so equal ranks at 1 and K - 1 mean
 * equal throughout; else a bisection.
 */
static uint32_t rank_change(const struct prio *p, const struct kv_replica *r,
			    const struct kv_req *q, int rank1, uint32_t K)
{
	uint32_t lo = 1, hi = K - 1; /* rank at lo is rank1; find the first j with another */

	if (K < 3 || run_rank_at(p, r, q, hi) == rank1)
		return K;
	while (hi - lo > 1) {
		uint32_t mid = lo + (hi - lo) / 2;

		if (run_rank_at(p, r, q, mid) == rank1)
			lo = mid;
		else
			hi = mid;
	}
	return hi;
}

/*
 * Earliest time at which a waiting request's rank reaches `rank` by aging
 * (KV_NS_NEVER when none will): for each level's head (the longest wait
 * there, so its highest rank), its wait W reaches (e - l) * A, e the least
 * effective level with 3e + 1 >= rank.
 */
static kv_ns aging_reaches(const struct prio *p, const struct kv_replica *r, int rank)
{
	uint32_t e = rank <= 1 ? 0 : (uint32_t)(rank - 1 + 2) / 3, l;
	kv_ns when = KV_NS_NEVER;

	for (l = 0; l < p->n_levels; l++) {
		const struct kv_req *h = kv_reqq_head(r->sim, &p->wait[l]);
		kv_ns at;

		if (!h)
			continue;
		if (l >= e)
			return 0; /* already there */
		if (!p->aging_ns || e > p->n_levels - 1)
			continue; /* never ages, or not that high */
		at = key(r->sim, h) + (kv_ns)(e - l) * p->aging_ns;
		when = KV_MIN(when, at);
	}
	return when;
}

/*
 * How long the priorities hold (scheduler.h ranks_hold).  The formation at
 * t[j] (j >= 1) of the same decode batch schedules the
 * running requests by descending rank, admission order within a rank, as
 * ranked j steps on; it admits nobody while every waiting request ranks
 * below every running one (the replica admits only above a running rank,
 * and the last call, with the batch full, is refused before any eviction)
 * and evicts nobody (no growth fails, nobody is admitted for the
 * yields).  So the run lasts while the ranks at j = 1 hold (a
 * demotion or a segment's end changes the order: the bound) and the batch
 * is in that order, and until the first t[j] at which a waiting request's
 * aging reaches the lowest running rank (its promotion is the next
 * decision).  Nothing of the private state changes.
 */
static uint32_t prio_ranks_hold(void *priv, struct kv_replica *r, const kv_ns *t, uint32_t K)
{
	struct prio *p = priv;
	int prev = INT_MAX, low = INT_MAX;
	uint32_t i, j;
	kv_ns promote;

	for (i = 0; i < r->n_batch; i++) {
		const struct kv_req *q = r->batch[i];
		int rk = p->n_levels == 1 && !p->segment_tokens ? 2 : run_rank_at(p, r, q, 1);

		if (rk > prev || (rk == prev && q->run_idx < r->batch[i - 1]->run_idx))
			return 0; /* not the order the next formation makes */
		prev = low = rk;
		if (p->n_levels > 1 || p->segment_tokens)
			K = KV_MIN(K, rank_change(p, r, q, rk, K));
	}
	if (!p->n_waiting)
		return K;
	promote = aging_reaches(p, r, low);
	for (j = 1; j < K; j++)
		if (t[j] >= promote)
			return j; /* formations at t[1..j-1] only */
	return K;
}

static uint64_t prio_waiting(const void *priv)
{
	const struct prio *p = priv;

	return p->n_waiting;
}

const struct kv_sched_ops kv_sched_preempt = {
	.name = "preempt",
	.desc = "priority preemption: rank = 3*min(top, level + wait/aging) + (running 2, waiting 1, past segment 0); higher ranks go first and evict lower ones (swap or recompute) when memory is short; levels from tenants or skip-join MLFQ",
	.priv_size = sizeof(struct prio),
	.req_size = sizeof(struct prio_req),
	.options = prio_options,
	.init = prio_init,
	.enqueue = prio_enqueue,
	.next_waiting = prio_next,
	.took = prio_took,
	.victim_how = prio_victim_how,
	.rank = prio_rank,
	.preemptive = 1, /* waiting requests evict lower ranks; the evicted stay out this batch */
	.yields = prio_yields,
	.dequeue = prio_dequeue,
	.waiting = prio_waiting,
	.order = KV_ORDER_PRIORITY, /* by rank, which moves as requests run and wait */
	.head_blocks = 1, /* the first waiting request not admitted closes admission */
	.ranks_hold = prio_ranks_hold,
};
