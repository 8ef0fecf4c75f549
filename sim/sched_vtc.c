/*
 * sched_vtc.c -- the Virtual Token Counter (VTC): weighted fair sharing of a
 * replica between tenants, measured in tokens served.
 *
 * Sheng, Cao, Li, Zhu, Li, Zhuo, Gonzalez, Stoica, "Fairness in Serving
 * Large Language Models", OSDI 2024 (arXiv:2401.00588), Algorithm 1; the
 * artifact is github.com/Ying1123/VTC-artifact (vtc_req_queue.py).
 *
 * Service.  A tenant f served n_p prompt tokens and n_q output tokens over
 * an interval received W_f = w_p * n_p + w_q * n_q (options input_weight
 * w_p, default 1, and output_weight w_q, default 2: the paper's OpenAI
 * prices).  Each tenant has a counter c_f of its service divided by its
 * workload weight w_f (tenants[i].weight, default 1).
 *
 * Rules, per iteration (the replica's batch loop, scheduler.h):
 *   1. running requests keep going in admission order (as fifo); when one
 *      cannot grow, the newest running request of the tenant with the
 *      highest counter is preempted (the engine's default, by recompute or
 *      swap as the cache model says) until it fits; a request that cannot
 *      grow alone on the replica is rejected;
 *   2. then, while the budget and memory allow, admit the head of the
 *      backlogged tenant (one with requests waiting) with the lowest
 *      counter, ties to the lowest tenant index; the first that does not fit
 *      stops admission (Algorithm 1's "cannot add any new request from k:
 *      break"), so a large request is not overtaken by the tenant's rivals;
 *   3. every request in the formed batch is charged at once:
 *        c_f += (w_p * new prompt tokens in its chunk + w_q * [it emits a token]) / w_f
 *      Charging at formation, before the next admission is chosen, is what
 *      keeps one tenant from taking the whole batch in one round (the
 *      paper charges a prompt at admission for the same reason).
 *   Lift: when a tenant becomes backlogged (its waiting queue was empty),
 *      c_f = max(c_f, min{c_g : g backlogged}), or, when no tenant is
 *      backlogged, max(c_f, c_l) for l the tenant whose queue emptied last.
 *      An idle tenant cannot bank credit and then monopolise the replica.
 *
 * Where this follows the engine rather than the paper: prompts are charged
 * per chunk as chunked prefill computes them (the paper charges the whole
 * prompt at admission), and only tokens actually computed the first time:
 * prefix-cache hits and the recomputation after a preemption are not
 * service (the tenant received nothing new); the output token emitted by
 * the iteration that completes a prefill is charged w_q (the artifact
 * charges decode steps only, one token less per request).  So a counter
 * moves by exactly the W the tenant received, divided by its weight.
 * Preempted requests return to the front of their tenant's queue.
 *
 * Guarantee (the paper's Theorem, weighted form).  Let M be the KV tokens a
 * replica's pool holds (pool bytes / beta) and L the longest prompt.  For
 * two tenants f, g backlogged over [t1, t2) on one replica,
 *
 *   |W_f(t1,t2)/w_f - W_g(t1,t2)/w_g| <= 2 U,
 *   U = max(w_p * L, max(w_p, w_q) * M) / min(w_f, w_g)
 *
 * (with the defaults w_p <= w_q this is the paper's 2 max(w_p L, w_q M) for
 * equal weights): admission raises only the lowest counter, by at most one
 * prompt, and the service still owed to running requests is at most what
 * memory holds.  The argument needs a cache that reserves a request's whole
 * length at admission (full, reserve: request), as the paper's server does;
 * with caches that grow (chunked) running requests can be owed more than
 * memory holds, and the preemption of the highest counter is what sheds the
 * excess (tests/test_vtc.c measures the bound with full).
 * Counters are per replica: the paper's setting is one server, and with a
 * router the guarantee holds replica by replica.  Nothing is allocated:
 * per-tenant intrusive queues, O(tenants) per admission.
 *
 * Per-request state (req_size): the prompt tokens charged so far.
 */
#include "replica.h"

#include <stddef.h>

struct vtc {
	double input_weight; /* option w_p: service per prompt token, default 1 */
	double output_weight; /* option w_q: service per output token, default 2 */
	uint32_t n_tenants; /* tenants of the workload, >= 1 */
	uint32_t last_left; /* tenant whose waiting queue emptied last, KV_NIL before any */
	uint64_t n_waiting; /* requests queued over all tenants */
	double inv_weight[KV_MAX_TENANTS]; /* 1 / the tenant's weight */
	double counter[KV_MAX_TENANTS]; /* c_f: service / weight, weighted tokens */
	struct kv_reqq q[KV_MAX_TENANTS]; /* waiting requests per tenant, arrival order */
};

static const struct kv_option vtc_options[] = {
	{ .name = "input_weight", .type = KV_OPT_DBL, .offset = offsetof(struct vtc, input_weight),
	  .def = 1, .min = 0, .max = 1e6, .units = "",
	  .help = "service charged per prompt token computed (w_p)" },
	{ .name = "output_weight", .type = KV_OPT_DBL, .offset = offsetof(struct vtc, output_weight),
	  .def = 2, .min = 0, .max = 1e6, .units = "",
	  .help = "service charged per output token generated (w_q)" },
	{ .name = NULL },
};

static int vtc_init(void *priv, struct kv_replica *r, struct kv_diag *d)
{
	const struct kv_source_spec *src = &r->sim->cfg->source;
	struct vtc *v = priv;
	uint32_t i;

	if (!(v->input_weight + v->output_weight > 0))
		return kv_diag_set(d, KV_EINVAL, "", 0, 0, "scheduler.input_weight",
				   "input_weight %g and output_weight %g: expected at least one above 0",
				   v->input_weight, v->output_weight);
	v->n_tenants = src->n_tenants ? src->n_tenants : 1;
	v->last_left = KV_NIL;
	for (i = 0; i < v->n_tenants; i++) {
		double w = src->n_tenants ? src->tenants[i].weight : 1;

		v->inv_weight[i] = w > 0 ? 1 / w : 1;
		kv_reqq_init(&v->q[i]);
	}
	return 0;
}

/* Lifts tenant t's counter as it becomes backlogged (Algorithm 1, lines 5-10). */
static void lift(struct vtc *v, uint32_t t)
{
	double lo = 0;
	int any = 0;
	uint32_t u;

	for (u = 0; u < v->n_tenants; u++) {
		if (u == t || !v->q[u].n)
			continue;
		if (!any || v->counter[u] < lo)
			lo = v->counter[u];
		any = 1;
	}
	if (!any && v->last_left != KV_NIL) {
		lo = v->counter[v->last_left];
		any = 1;
	}
	if (any && v->counter[t] < lo)
		v->counter[t] = lo;
}

static void vtc_enqueue(void *priv, struct kv_replica *r, struct kv_req *q)
{
	struct vtc *v = priv;
	struct kv_reqq *qq = &v->q[q->tenant];

	if (!qq->n)
		lift(v, q->tenant);
	if (q->preemptions)
		kv_reqq_push_front(r->sim, qq, q);
	else
		kv_reqq_push_back(r->sim, qq, q);
	v->n_waiting++;
}

/* Takes waiting q out of its tenant's queue (admitted or rejected). */
static void unqueue(struct vtc *v, struct kv_sim *s, struct kv_req *q)
{
	struct kv_reqq *qq = &v->q[q->tenant];

	kv_reqq_remove(s, qq, q);
	v->n_waiting--;
	if (!qq->n)
		v->last_left = q->tenant;
}

static void vtc_dequeue(void *priv, struct kv_replica *r, struct kv_req *q)
{
	unqueue(priv, r->sim, q);
}

/*
 * Charges q's tenant for q's share of the batch just formed: w_p per prompt
 * token computed for the first time (positions from the high-water mark in
 * its per-request state up to the prompt's end), w_q when the iteration
 * emits a token.
 */
static void charge(struct vtc *v, const struct kv_replica *r, struct kv_req *q)
{
	uint64_t *charged = kv_req_sched(r->sim, q);
	uint64_t from = q->kv_tokens, to = from + q->batch_tokens;
	double w = 0;

	if (from < q->prefill_target) {
		uint64_t lo = KV_MAX(from, *charged), hi = KV_MIN(to, q->prompt_tokens);

		if (hi > lo) {
			w += v->input_weight * (double)(hi - lo);
			*charged = hi;
		}
		if (to >= q->prefill_target && q->generated < q->output_tokens)
			w += v->output_weight;
	} else if (q->generated < q->output_tokens) {
		w += v->output_weight;
	}
	v->counter[q->tenant] += w * v->inv_weight[q->tenant];
}

/* The backlogged tenant with the lowest counter (lowest index on ties), or KV_NIL. */
static uint32_t lowest(const struct vtc *v)
{
	uint32_t t, best = KV_NIL;

	for (t = 0; t < v->n_tenants; t++)
		if (v->q[t].n && (best == KV_NIL || v->counter[t] < v->counter[best]))
			best = t;
	return best;
}

/*
 * The preemption victim when a running request cannot grow
 * (scheduler.h pick_victim): among running requests not yet scheduled in this
 * batch (the grower among them), the newest of the tenant with the highest
 * counter; ties to the highest tenant index, the mirror of admission's
 * lowest.  (Rejected: fifo's newest overall, which lets the tenant ahead
 * keep its lead and its memory.)  With one tenant this is fifo's victim.
 */
static struct kv_req *victim(void *priv, const struct kv_replica *r,
			     const struct kv_req *grower, enum kv_preempt *how)
{
	const struct vtc *v = priv;
	struct kv_req *best = NULL;
	uint32_t i;

	(void)grower;
	(void)how; /* the cache model's default: recompute, or swap with offload */
	for (i = 0; i < r->n_running; i++) {
		struct kv_req *c = r->running[i];

		if (c->batch_tokens)
			continue;
		if (!best || v->counter[c->tenant] > v->counter[best->tenant] ||
		    (v->counter[c->tenant] == v->counter[best->tenant] && c->tenant >= best->tenant))
			best = c;
	}
	return best;
}

/* The running requests kept going are charged before admission is decided. */
static void vtc_kept(void *priv, const struct kv_replica *r, struct kv_req *const *batch,
		     uint32_t n)
{
	uint32_t i;

	for (i = 0; i < n; i++)
		charge(priv, r, batch[i]);
}

/* The next request to admit: the lowest counter's head (the replica stops at a refused one). */
static struct kv_req *vtc_next(void *priv, const struct kv_replica *r)
{
	struct vtc *v = priv;
	uint32_t t = lowest(v);

	return t == KV_NIL ? NULL : kv_reqq_head(r->sim, &v->q[t]);
}

/* q is admitted: out of its queue, charged at once (before the next lowest is chosen). */
static void vtc_took(void *priv, const struct kv_replica *r, struct kv_req *q)
{
	unqueue(priv, r->sim, q);
	charge(priv, r, q);
}

/*
 * Service is additive per token (scheduler.h charge_decodes): n decode
 * tokens of tenant f add x_f = w_q / w_f to its counter n times (charge()'s
 * addition, one per decode).  When those partial sums are exact
 * (kv_sum_exact) they are one addition of x_f * n, else they are made one
 * by one, as charge() makes them (O(n), still no event).
 */
static void vtc_charge_decodes(void *priv, uint32_t f, uint64_t n)
{
	struct vtc *v = priv;
	double x = (0 + v->output_weight) * v->inv_weight[f]; /* charge(): w = 0, w += w_q */
	uint64_t j;

	if (kv_sum_exact(v->counter[f], x, n)) {
		v->counter[f] += x * (double)n;
		return;
	}
	for (j = 0; j < n; j++)
		v->counter[f] += x;
}

/* Tenants with requests waiting: while one, lowest() is that one whatever the counters. */
static uint32_t vtc_backlogged(const void *priv)
{
	const struct vtc *v = priv;
	uint32_t i, n = 0;

	for (i = 0; i < v->n_tenants; i++)
		n += v->q[i].n != 0;
	return n;
}

static uint64_t vtc_waiting(const void *priv)
{
	const struct vtc *v = priv;

	return v->n_waiting;
}

const struct kv_sched_ops kv_sched_vtc = {
	.name = "vtc",
	.desc = "Virtual Token Counter (Sheng et al., OSDI'24): admit from the backlogged tenant with the least c = (w_p*prompt + w_q*output tokens served)/weight; a returning tenant is lifted to the backlogged minimum",
	.priv_size = sizeof(struct vtc),
	.req_size = sizeof(uint64_t),
	.options = vtc_options,
	.init = vtc_init,
	.enqueue = vtc_enqueue,
	.next_waiting = vtc_next,
	.took = vtc_took,
	.pick_victim = victim,
	.kept = vtc_kept,
	.dequeue = vtc_dequeue,
	.waiting = vtc_waiting,
	.order = KV_ORDER_FAIR, /* the running set, then the lowest counter's head */
	.head_blocks = 1, /* Algorithm 1's break */
	.charge_decodes = vtc_charge_decodes,
	.backlogged = vtc_backlogged,
};
