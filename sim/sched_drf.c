/*
 * sched_drf.c -- Dominant Resource Fairness across tenants (`drf`) and its
 * weighted form (`wdrf`).
 *
 * DRF (Ghodsi, Zaharia, Hindman, Konwinski, Shenker, Stoica, "Dominant
 * Resource Fairness: Fair Allocation of Multiple Resource Types", NSDI 2011)
 * gives each user the same share of the resource it uses most of: a user's
 * dominant share is the largest of its shares of each resource, and
 * progressive filling repeatedly serves the user with the lowest one.  Here
 * the users are the workload's tenants and a replica has two resources:
 *
 *   KV memory   C_M = the replica's pool bytes (r->pool.size_bytes)
 *   compute     C_T = the token budget of one iteration (max_batch_tokens)
 *
 * Accounting.  An iteration k, formed at t_k, is one round of allocation.
 * Memory is a stock: a request keeps its KV from one iteration to the next,
 * so a tenant's memory share is what its running requests hold now,
 * m_i = sum of their kv_bytes (admissions included), as DRF's allocations
 * are (the paper's shares are of resources held, not of their history).
 * Compute is a flow: tenant i's use in round k is c_ik = tokens scheduled
 * for it in the batch (`charge: tokens`, the default) or the Cost
 * alpha*M + beta*L*T of its requests that completed since the previous
 * round (`charge: cost`; then C_T = alpha*M + C_M byte-steps, the replica's
 * whole memory for one step), and its share is the average per round over
 * a window, rounds weighted by age as w_k = exp(-(t - t_k) / tau), tau the
 * `window` option:
 *
 *   S_M(i) = m_i / C_M,   R = sum_k w_k,   S_T(i) = sum_k w_k c_ik / (R C_T)
 *   s_i = max(S_M(i), S_T(i)) / W_i          (W_i = 1 for drf, the tenant's weight for wdrf)
 *
 * While a batch is formed, the round being formed counts with weight 1 and
 * what has been admitted so far.  So fairness holds over time: memory
 * because holdings persist across iterations, compute over the window.
 * Rejected: a windowed average of memory too.  Its admission increments
 * are 1/R of a round's, so the tenant lowest on history takes all the free
 * memory in one round, and holds it for its requests' lifetime (tens of
 * seconds), locking the others out; the stock is self-limiting: an
 * admission raises S_M by the request's full bytes.
 * Exponential decay rather than a sliding window: one double per tenant,
 * one multiply per tenant per round, no ring buffer of past rounds (whose
 * size a sliding window of tau seconds cannot bound in rounds), no
 * quantisation of time into buckets; the weights' mean age is tau, and
 * exp() on the same inputs is deterministic.
 *
 * Each iteration:
 *  1. running requests keep going in admission order (decode steps, the
 *     rest of a chunked prefill).  When one cannot grow its KV, the victim is
 *     the newest not-yet-scheduled running request of the tenant with the
 *     highest s_i (ties: the newest request), preempted as the cache model
 *     says (recompute, or swap with offload), until the grower fits; a
 *     grower that is its own victim is preempted, or rejected when it runs
 *     alone (it cannot grow even in an empty replica).
 *  2. progressive filling: repeatedly take the backlogged tenant with the
 *     lowest s_i (ties: lowest index) and try its queue's head; admitted, it
 *     is charged at once (its reserved bytes and tokens), so s_i rises.  A
 *     tenant whose head does not fit is skipped for the rest of this
 *     iteration (no head-of-line blocking across tenants; its own queue
 *     stays FIFO).  Filling stops when the token budget or the sequence cap
 *     is spent or every backlogged tenant was skipped.
 * Preempted requests return to the front of their tenant's queue.
 *
 * Guarantees.  Admission is the only fairness decision: running requests
 * are never taken back for fairness (only for memory, and then from the
 * tenant with the highest share).  Invariant: when tenant i is admitted a
 * request, s_i <= s_j for every backlogged tenant j whose head has not been
 * refused in this round, so right after it
 *
 *   s_i - s_j <= delta_i = max(kv_bytes / C_M, tokens / (R C_T)) / W_i,
 *
 * the charge of the one request admitted (R counting the round being
 * formed).  The paper proves its properties for divisible demands;
 * requests are indivisible, so the sharing incentive and envy-freeness hold
 * up to delta_i (a tenant can exceed its fair share by one request's
 * demand), Pareto efficiency up to heads that do not fit (no waiting head
 * that fits is left out while budget remains), strategy-proofness not at
 * all (c below).  Between admissions shares drift
 * with no decision taken: running requests grow (a chunked KV by a block
 * every 16 tokens; nothing under `full`), decode and complete, and the next
 * admission goes to the lowest again.  With one tenant this is fifo exactly.
 * Not guaranteed:
 *  (a) no lock-out: admission does not look ahead and a request keeps its
 *      memory until it finishes, so a tenant admitted while its share was
 *      the lowest can fill the pool to less than another tenant's head
 *      needs; that tenant waits for completions.  The windowed compute
 *      share makes it likelier after a burst, as it lags by about tau (the
 *      example of docs/schedulers-drf.md: about 20 s at start-up with tau = 10 s,
 *      none with tau = 1 s);
 *  (b) no starvation bound under backfilling: a head that needs more free
 *      memory than ever appears at once waits while others' smaller
 *      requests keep filling it (every request of a finite run completes);
 *  (c) strategy-proofness: demands are measured, not declared, and a
 *      tenant gains by splitting work into requests that fit more easily;
 *  (d) fairness across replicas: each replica accounts for itself;
 *  (e) with `charge: cost` the compute share sees a request only when it
 *      completes.
 * Accounting figures for outputs and tests: kv_drf_cost(), kv_drf_tokens(),
 * kv_drf_share() below.
 */
#include "replica.h"

#include <math.h>
#include <stddef.h>

enum { CHARGE_TOKENS, CHARGE_COST };

struct drf {
	kv_ns window_ns; /* option: time constant tau of the decayed accounting, default 10 s */
	int charge; /* option: what the compute share counts, tokens (default) or cost */
	uint32_t n_tenants; /* tenants of the workload, >= 1 */
	uint64_t n_waiting; /* requests queued, all tenants */
	double cap_mem; /* C_M: pool bytes */
	double cap_cmp; /* C_T: tokens per iteration (charge: cost: byte-steps per iteration) */
	double rounds; /* R: decayed count of rounds */
	double decay; /* exp(-(now - last_ns) / tau) for the round being formed */
	kv_ns decay_ns; /* the now decay was taken for, KV_NS_NEVER once a round closes */
	int tallied; /* cur_mem and cur_tok are counted for the round being formed */
	uint64_t skip; /* tenants whose head was refused in the round being formed, bit per tenant */
	kv_ns last_ns; /* when the last round was formed */
	struct kv_reqq wait[KV_MAX_TENANTS]; /* per-tenant FIFO queues */
	double inv_weight[KV_MAX_TENANTS]; /* 1 / W_i */
	double hist_cmp[KV_MAX_TENANTS]; /* sum_k w_k c_ik over past rounds, tokens or byte-steps */
	double cur_mem[KV_MAX_TENANTS]; /* m_i: bytes held in the round being formed (when tallied) */
	uint64_t cur_tok[KV_MAX_TENANTS]; /* tokens scheduled in the round being formed (when tallied) */
	double pend_cost[KV_MAX_TENANTS]; /* Cost completed since the last round, byte-steps */
	double cost_total[KV_MAX_TENANTS]; /* Cost of every request completed, byte-steps */
	uint64_t tokens_total[KV_MAX_TENANTS]; /* tokens scheduled in every round */
};

/* Accounting figures of a drf/wdrf replica (declared for scheduler.h; see below). */
double kv_drf_cost(const struct kv_replica *r, uint32_t tenant);
uint64_t kv_drf_tokens(const struct kv_replica *r, uint32_t tenant);
double kv_drf_share(const struct kv_replica *r, uint32_t tenant, double *mem, double *cmp);

static const char *const charge_names[] = { "tokens", "cost", NULL };

static const struct kv_option drf_options[] = {
	{ .name = "window", .type = KV_OPT_NS, .offset = offsetof(struct drf, window_ns),
	  .def = 10e9, .min = 1e6, .max = 1e15, .units = "",
	  .help = "time constant tau of the exponentially decayed share accounting, e.g. 10s" },
	{ .name = "charge", .type = KV_OPT_ENUM, .offset = offsetof(struct drf, charge),
	  .def = CHARGE_TOKENS, .units = "", .names = charge_names,
	  .help = "compute share counts tokens scheduled, or the Cost alpha*M + beta*L*T of completed requests" },
	{ .name = NULL },
};

static int drf_init_common(struct drf *f, struct kv_replica *r, int weighted, struct kv_diag *d)
{
	const struct kv_sim_config *c = r->sim->cfg; /* the tenants: cluster-wide */
	uint32_t i;

	if (f->window_ns == 0)
		return kv_diag_set(d, KV_EINVAL, "", 0, 0, "scheduler.window",
				   "bad value 0: expected a positive duration");
	f->n_tenants = c->source.n_tenants ? c->source.n_tenants : 1;
	for (i = 0; i < f->n_tenants; i++) {
		double w = weighted && c->source.n_tenants ? c->source.tenants[i].weight : 1;
		char field[64];

		if (!(w > 0 && isfinite(w))) {
			snprintf(field, sizeof(field), "workload.tenants[%u].weight", i);
			return kv_diag_set(d, KV_EINVAL, "", 0, 0, field,
					   "bad value %g: expected a positive weight", w);
		}
		kv_reqq_init(&f->wait[i]);
		f->inv_weight[i] = 1 / w;
	}
	f->decay_ns = KV_NS_NEVER;
	f->cap_mem = (double)r->pool.size_bytes;
	f->cap_cmp = (double)c->max_batch_tokens;
	if (f->charge == CHARGE_COST)
		f->cap_cmp = c->device.alpha * (double)kv_model_weight_bytes(&c->model) + f->cap_mem;
	return 0;
}

static int drf_init(void *priv, struct kv_replica *r, struct kv_diag *d)
{
	return drf_init_common(priv, r, 0, d);
}

static int wdrf_init(void *priv, struct kv_replica *r, struct kv_diag *d)
{
	return drf_init_common(priv, r, 1, d);
}

static void drf_enqueue(void *priv, struct kv_replica *r, struct kv_req *q)
{
	struct drf *f = priv;

	KV_CHECK(q->tenant < f->n_tenants, "request %llu of tenant %u, %u tenants",
		 (unsigned long long)q->id, q->tenant, f->n_tenants);
	if (q->preemptions)
		kv_reqq_push_front(r->sim, &f->wait[q->tenant], q);
	else
		kv_reqq_push_back(r->sim, &f->wait[q->tenant], q);
	f->n_waiting++;
}

static void drf_dequeue(void *priv, struct kv_replica *r, struct kv_req *q)
{
	struct drf *f = priv;

	kv_reqq_remove(r->sim, &f->wait[q->tenant], q);
	f->n_waiting--;
}

static void drf_on_done(void *priv, struct kv_replica *r, struct kv_req *q)
{
	struct drf *f = priv;

	(void)r;
	f->cost_total[q->tenant] += q->cost;
	f->pend_cost[q->tenant] += q->cost;
}

static uint64_t drf_waiting(const void *priv)
{
	const struct drf *f = priv;

	return f->n_waiting;
}

/* --- shares --------------------------------------------------------------- */

/* c_ik of the round being formed: tokens so far, or Cost completed since the last round. */
static double cur_cmp(const struct drf *f, uint32_t t)
{
	return f->charge == CHARGE_COST ? f->pend_cost[t] : (double)f->cur_tok[t];
}

/* The decay of the history for a round formed at now. */
static double decay_at(const struct drf *f, kv_ns now)
{
	return exp(-(double)(now - f->last_ns) / (double)f->window_ns);
}

/* Takes the decay for the round formed at now, once per round (tallies and its close). */
static void decay_for(struct drf *f, kv_ns now)
{
	if (f->decay_ns != now) {
		f->decay = decay_at(f, now);
		f->decay_ns = now;
	}
}

/* s_t, the round being formed counted (weight 1) as charged so far; needs a tally. */
static double share(const struct drf *f, uint32_t t)
{
	double m = f->cur_mem[t] / f->cap_mem;
	double c = (f->hist_cmp[t] * f->decay + cur_cmp(f, t)) /
		   ((f->rounds * f->decay + 1) * f->cap_cmp);

	return KV_MAX(m, c) * f->inv_weight[t];
}

/*
 * Counts the round's use so far, for a decision that needs shares: bytes
 * held by running requests, tokens of those scheduled (every scheduled
 * request is running).  One pass over the running set, reading each
 * request's cold half (tenant, kv_bytes), so it runs only when shares
 * decide something: a victim among several tenants' requests, or a pick
 * among several backlogged tenants.  Admissions and evictions after it
 * update the counts.  Rejected: tracking every holding change, which
 * happens inside the engine and the cache model, out of the scheduler's view.
 */
static void tally(struct drf *f, const struct kv_replica *r)
{
	uint32_t i;

	decay_for(f, r->sim->now); /* of the round being formed */
	for (i = 0; i < f->n_tenants; i++) {
		f->cur_mem[i] = 0;
		f->cur_tok[i] = 0;
	}
	for (i = 0; i < r->n_running; i++) {
		const struct kv_req *q = r->running[i];

		f->cur_mem[q->tenant] += (double)q->kv_bytes;
		f->cur_tok[q->tenant] += q->batch_tokens;
	}
	f->tallied = 1;
}

/* The round's tokens per tenant from the batch, when no tally counted them. */
static void count_tokens(struct drf *f, const struct kv_replica *r)
{
	uint32_t i;

	for (i = 0; i < f->n_tenants; i++)
		f->cur_tok[i] = 0;
	if (f->n_tenants == 1) { /* no need to read the requests' cold half */
		for (i = 0; i < r->n_batch; i++)
			f->cur_tok[0] += r->batch[i]->batch_tokens;
		return;
	}
	for (i = 0; i < r->n_batch; i++)
		f->cur_tok[r->batch[i]->tenant] += r->batch[i]->batch_tokens;
}

/* Closes the round formed at now: its compute joins the decayed history. */
static void commit(struct drf *f, const struct kv_replica *r, kv_ns now)
{
	uint32_t i;

	if (!f->tallied)
		count_tokens(f, r);
	for (i = 0; i < f->n_tenants; i++) {
		f->hist_cmp[i] = f->hist_cmp[i] * f->decay + cur_cmp(f, i);
		f->tokens_total[i] += f->cur_tok[i];
		f->pend_cost[i] = 0;
	}
	f->rounds = f->rounds * f->decay + 1;
	f->last_ns = now;
	f->decay_ns = KV_NS_NEVER; /* last_ns moved */
}

/* --- keeping running requests going -------------------------------------- */

/*
 * The victim for grower q (scheduler.h pick_victim): among running[q..] (none of
 * them scheduled yet; q included), the newest request of the tenant with
 * the highest share.  Scanning from the newest with a strict comparison
 * makes ties go to the newest request; with one tenant it is the newest, as
 * in fifo.  The bytes the victim held leave its tenant's tally (a grower
 * alone on the replica is rejected, not preempted: nothing to uncharge).
 */
static struct kv_req *pick_victim(void *priv, const struct kv_replica *r,
				  const struct kv_req *q, enum kv_preempt *how)
{
	struct drf *f = priv;
	struct kv_req *v = r->running[r->n_running - 1];
	double best = -1;
	uint32_t j;

	(void)how; /* the cache model's default: recompute, or swap with offload */
	if (f->n_tenants == 1)
		return v;
	if (!f->tallied)
		tally(f, r);
	for (j = r->n_running; j-- > q->run_idx;) {
		struct kv_req *c = r->running[j];
		double s = share(f, c->tenant);

		if (s > best) {
			best = s;
			v = c;
		}
	}
	if (f->tallied && r->n_running > 1)
		f->cur_mem[v->tenant] -= (double)v->kv_bytes;
	return v;
}

/* --- progressive filling ------------------------------------------------- */

/*
 * The backlogged tenant not in `skip` with the lowest share (ties: lowest
 * index), or KV_NIL.  A lone candidate needs no shares.
 */
static uint32_t pick_lowest(struct drf *f, const struct kv_replica *r, uint64_t skip)
{
	uint32_t t, best = KV_NIL, n = 0;
	double best_s = 0;

	for (t = 0; t < f->n_tenants && n < 2; t++)
		if (f->wait[t].n && !(skip >> t & 1) && n++ == 0)
			best = t;
	if (n < 2)
		return best;
	if (!f->tallied)
		tally(f, r);
	for (t = best; t < f->n_tenants; t++) {
		double s;

		if (!f->wait[t].n || (skip >> t & 1))
			continue;
		s = share(f, t);
		if (t == best || s < best_s) {
			best = t;
			best_s = s;
		}
	}
	return best;
}

/*
 * Progressive filling, as the replica's admission asks (scheduler.h): the
 * head of the lowest share's queue, tenants refused this round skipped; the
 * replica ends the round when the budget or the sequence cap is spent.  A
 * refusal with budget left (memory, or a whole prompt over the rest of the
 * budget with chunked prefill off) skips only that tenant.  Admitted, a
 * request is charged at once (its reserved bytes and tokens).
 */
static struct kv_req *drf_next(void *priv, const struct kv_replica *r)
{
	struct drf *f = priv;
	uint32_t t = pick_lowest(f, r, f->skip);

	return t == KV_NIL ? NULL : kv_reqq_head(r->sim, &f->wait[t]);
}

static void drf_took(void *priv, const struct kv_replica *r, struct kv_req *q)
{
	struct drf *f = priv;

	kv_reqq_remove(r->sim, &f->wait[q->tenant], q);
	f->n_waiting--;
	if (f->tallied) {
		f->cur_mem[q->tenant] += (double)q->kv_bytes;
		f->cur_tok[q->tenant] += q->batch_tokens;
	}
}

static void drf_refused(void *priv, const struct kv_replica *r, const struct kv_req *q)
{
	struct drf *f = priv;

	(void)r;
	f->skip |= UINT64_C(1) << q->tenant;
}

/* The running set is scheduled: its growth since a tally for victims is counted again if needed. */
static void drf_kept(void *priv, const struct kv_replica *r, struct kv_req *const *batch,
		     uint32_t n)
{
	struct drf *f = priv;

	(void)r;
	(void)batch;
	(void)n;
	f->tallied = 0;
	f->skip = 0;
}

/* The round is formed: it closes (an empty batch is formed again at the same time). */
static void drf_formed(void *priv, const struct kv_replica *r, struct kv_req *const *batch,
		       uint32_t n)
{
	struct drf *f = priv;

	(void)batch;
	if (n) {
		decay_for(f, r->sim->now); /* a tally's, when one counted */
		commit(f, r, r->sim->now);
	}
	f->tallied = 0; /* the next round counts anew */
}

/*
 * Service is accounted per round (scheduler.h close_round): a round with
 * the same batch as the last, formed at t, keeps the running requests (no
 * victim: nobody needs room) and closes with the same tokens per tenant,
 * which the last commit left in cur_tok (a tally's or count_tokens', equal:
 * every running request is in the batch, one token each); under charge:
 * cost nothing completes meanwhile (pend_cost stays 0).  The decay depends
 * on t, so each round is closed as form_batch closes it: the same exp() and
 * the same products in the same order, O(tenants).
 */
static void drf_close_round(void *priv, struct kv_replica *r, kv_ns t)
{
	struct drf *f = priv;

	f->decay = decay_at(f, t);
	f->tallied = 1; /* cur_tok holds the round's tokens */
	commit(f, r, t);
	f->tallied = 0;
}

/* drf and wdrf differ in their name and init (wdrf divides the shares by the weights). */
#define DRF_HOOKS(init_fn)                                                                        \
	.priv_size = sizeof(struct drf), .options = drf_options, .init = (init_fn),              \
	.enqueue = drf_enqueue, .next_waiting = drf_next, .took = drf_took,                      \
	.refused = drf_refused, .pick_victim = pick_victim, .kept = drf_kept,                    \
	.formed = drf_formed, .dequeue = drf_dequeue, .on_done = drf_on_done,                    \
	.waiting = drf_waiting,                                                                  \
	.order = KV_ORDER_FAIR,    /* the running set, then progressive filling, lowest share first */ \
	.head_blocks = 0,          /* a refused head skips its tenant: others are tried */       \
	.close_round = drf_close_round

const struct kv_sched_ops kv_sched_drf = {
	.name = "drf",
	.desc = "dominant resource fairness over KV memory and tokens per iteration: admit from the tenant with the lowest max(S_mem, S_tok), shares decayed over `window`; preempt from the highest",
	DRF_HOOKS(drf_init),
};

const struct kv_sched_ops kv_sched_wdrf = {
	.name = "wdrf",
	.desc = "weighted dominant resource fairness: drf with shares divided by the tenants' weights, max(S_mem, S_tok) / weight",
	DRF_HOOKS(wdrf_init),
};

/* --- accounting figures ---------------------------------------------------- */

static const struct drf *drf_of(const struct kv_replica *r, uint32_t tenant)
{
	const struct drf *f = r->sched_priv;

	KV_CHECK(r->sched == &kv_sched_drf || r->sched == &kv_sched_wdrf,
		 "replica %u runs %s, not drf or wdrf", r->idx, r->sched->name);
	KV_CHECK(tenant < f->n_tenants, "tenant %u of %u", tenant, f->n_tenants);
	return f;
}

/*
 * Cost (alpha*M + beta*L*T, byte-steps; docs/cost-model.md) of the tenant's
 * requests completed on r, as end_request() priced them.  An accounting
 * figure: it steers scheduling only under `charge: cost`.  r must run drf or wdrf.
 */
double kv_drf_cost(const struct kv_replica *r, uint32_t tenant)
{
	return drf_of(r, tenant)->cost_total[tenant];
}

/*
 * Tokens scheduled for the tenant on r over the run: prefill chunks (recomputed
 * ones included) and decode steps.  r must run drf or wdrf.
 */
uint64_t kv_drf_tokens(const struct kv_replica *r, uint32_t tenant)
{
	return drf_of(r, tenant)->tokens_total[tenant];
}

/*
 * The tenant's dominant share s_i on r (divided by its weight under wdrf):
 * S_M from the bytes its running requests hold now, S_T as of the last
 * round formed.  *mem and *cmp (may be NULL) get S_M and S_T, unweighted.
 */
double kv_drf_share(const struct kv_replica *r, uint32_t tenant, double *mem, double *cmp)
{
	const struct drf *f = drf_of(r, tenant);
	double R = f->rounds ? f->rounds : 1, m = 0, c = f->hist_cmp[tenant] / (R * f->cap_cmp);
	uint32_t i;

	for (i = 0; i < r->n_running; i++)
		if (r->running[i]->tenant == tenant)
			m += (double)r->running[i]->kv_bytes;
	m /= f->cap_mem;
	if (mem)
		*mem = m;
	if (cmp)
		*cmp = c;
	return KV_MAX(m, c) * f->inv_weight[tenant];
}
