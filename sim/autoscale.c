/*
 * autoscale.c -- replicas added and removed by a policy with hysteresis,
 * cold starts and draining (autoscale.h says the model and its invariants).
 */
#include "autoscale.h"
#include "replica.h"

#include <assert.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

const char *const kv_as_policy_names[KV_AS_POLICIES + 1] = { "queue", "kv_util", "slo", "concurrency", NULL };
const char *const kv_rep_state_names[KV_REP_STATES] = { "active", "off", "starting", "draining" };

kv_ns kv_autoscale_cold_ns(const struct kv_autoscale_cfg *c, uint64_t shard_bytes)
{
	double load_s = c->load_Bps > 0 ? (double)shard_bytes / c->load_Bps : 0;

	return c->start_ns + (kv_ns)llround(load_s * 1e9);
}

/* Replicas billed now: every one not off. */
static uint32_t billed(const struct kv_autoscale *a)
{
	return a->n[KV_REP_ACTIVE] + a->n[KV_REP_STARTING] + a->n[KV_REP_DRAINING];
}

/* Brings the GPU-seconds up to t (not before the last bill). */
static void bill(struct kv_autoscale *a, kv_ns t)
{
	if (t <= a->bill_t0_ns)
		return;
	a->gpu_s += (double)billed(a) * a->gpus * (double)(t - a->bill_t0_ns) * 1e-9;
	a->bill_t0_ns = t;
}

/* Replica i moves to state st at s->now: counts, bill, the router's view. */
static void set_state(struct kv_sim *s, struct kv_autoscale *a, uint32_t i, enum kv_rep_state st)
{

	assert(i >= a->lo && i < a->hi && a->state[i] != st);
	bill(a, s->now);
	a->n[a->state[i]]--;
	a->n[st]++;
	a->state[i] = (uint8_t)st;
	a->peak = KV_MAX(a->peak, billed(a));
	kv__out_changed(&s->rep[i]); /* routable or not: its key in the router's tree */
	KV_CHECK(a->n[KV_REP_ACTIVE] >= 1 && billed(a) <= a->cfg->max,
		 "autoscale: %u active, %u billed of at most %u", a->n[KV_REP_ACTIVE], billed(a),
		 a->cfg->max);
}

int kv__autoscale_init(struct kv_sim *s, struct kv_autoscale *a, const struct kv_sim_config *c,
		       uint32_t lo, uint32_t hi, uint32_t group)
{
	const struct kv_autoscale_cfg *cfg = &c->autoscale;
	uint64_t gpus = (uint64_t)c->tp * (c->pp ? c->pp : 1) * (c->dp ? c->dp : 1);
	uint32_t i;

	memset(a, 0, sizeof(*a));
	KV_CHECK(hi > lo && hi - lo == cfg->max && cfg->min >= 1 && cfg->min <= cfg->initial &&
			 cfg->initial <= cfg->max && cfg->interval_ns > 0,
		 "autoscale: range %u..%u, min %u, initial %u, max %u", lo, hi, cfg->min,
		 cfg->initial, cfg->max);
	if (cfg->policy == KV_AS_SLO && !cfg->slo)
		return kv_diag_set(&s->diag, KV_EINVAL, "", 0, 0, "autoscale.policy",
				   "slo: the workload has no slo: section with per-request limits (ttft, tpot, e2e) to attain");
	a->cfg = cfg;
	a->lo = lo;
	a->hi = hi;
	a->group = group;
	a->gpus = (uint32_t)gpus;
	a->cold_ns = kv_autoscale_cold_ns(cfg, kv_model_weight_bytes(&c->model) / (c->tp * (c->pp ? c->pp : 1)));
	a->last_action_ns = KV_NS_NEVER;
	a->state = s->rep_state;
	a->n[KV_REP_ACTIVE] = hi - lo;
	for (i = lo + cfg->initial; i < hi; i++) {
		a->state[i] = KV_REP_OFF;
		a->n[KV_REP_ACTIVE]--;
		a->n[KV_REP_OFF]++;
	}
	a->peak = billed(a);
	a->k = (uint32_t)((cfg->window_ns + cfg->interval_ns - 1) / cfg->interval_ns);
	a->k = KV_MAX(a->k, 1u);
	a->num = kv_xcalloc(a->k, sizeof(*a->num));
	a->den = kv_xcalloc(a->k, sizeof(*a->den));
	return 0;
}

struct kv_autoscale *kv__autoscale_of(const struct kv_sim *s, uint32_t i)
{
	uint32_t j;

	for (j = 0; j < s->n_as; j++)
		if (i >= s->as[j].lo && i < s->as[j].hi)
			return &s->as[j];
	return NULL;
}

void kv__autoscale_release(struct kv_autoscale *a)
{
	free(a->num);
	free(a->den);
	memset(a, 0, sizeof(*a));
}

void kv__autoscale_ended(struct kv_autoscale *a, const struct kv_req *q, int completed)
{
	kv_ns tpot;

	a->ended++;
	if (!completed || !a->cfg->slo)
		return;
	tpot = q->output_tokens > 1 ? (q->finish_ns - q->first_token_ns) / (q->output_tokens - 1) : 0;
	a->met += (uint64_t)kv_slo_meets(&a->cfg->slo[q->tenant], q->first_token_ns - q->arrival_ns,
					 tpot, q->finish_ns - q->arrival_ns);
}

void kv__autoscale_handed(struct kv_autoscale *a, const struct kv_req *q)
{
	a->ended++;
	if (a->cfg->slo) /* the prefill's part of the SLO: its first token */
		a->met += (uint64_t)kv_slo_meets(&a->cfg->slo[q->tenant],
						 q->first_token_ns - q->arrival_ns, 0, 0);
}

/*
 * Active replica r's value of a load policy.  A decode replica's load
 * counts the KV transfers on their way to it (n_inbound; their bytes in
 * inbound_bytes): they are requests it will hold.
 */
static double load_of(const struct kv_replica *r, enum kv_as_policy p)
{
	if (p == KV_AS_QUEUE)
		return (double)r->sched->waiting(r->sched_priv) + r->n_inbound;
	if (p == KV_AS_CONCURRENCY)
		return (double)r->n_assigned + r->n_inbound;
	return (kv_replica_live_bytes(r) + (double)r->inbound_bytes) / (double)r->pool.size_bytes;
}

/*
 * This interval's value of the policy's metric as a (numerator,
 * denominator) pair: the window's metric is the sum of numerators over the
 * sum of denominators.
 */
static void sample(const struct kv_sim *s, const struct kv_autoscale *a, double *num, double *den)
{
	uint32_t i, n = a->n[KV_REP_ACTIVE] + a->n[KV_REP_STARTING];

	*num = 0;
	*den = n;
	if (a->cfg->policy == KV_AS_SLO) {
		*num = (double)a->met;
		*den = (double)a->ended;
		return;
	}
	for (i = a->lo; i < a->hi; i++)
		if (a->state[i] == KV_REP_ACTIVE)
			*num += load_of(&s->rep[i], a->cfg->policy);
}

/* The metric over the window, NaN when its denominator is 0. */
static double window_metric(const struct kv_autoscale *a)
{
	double num = 0, den = 0;
	uint32_t i;

	for (i = 0; i < a->k; i++) {
		num += a->num[i];
		den += a->den[i];
	}
	return den > 0 ? num / den : NAN;
}

/*
 * +1: the metric m asks for more replicas, -1 for fewer, 0 neither (or
 * NaN).  A load metric asks for fewer only when what n - 1 of the n active
 * replicas would see, m * n / (n - 1), stays below up.
 */
static int direction(const struct kv_autoscale *a, double m)
{
	const struct kv_autoscale_cfg *c = a->cfg;
	uint32_t n = a->n[KV_REP_ACTIVE];

	if (isnan(m))
		return 0;
	if (c->policy == KV_AS_SLO) /* attainment: higher is better */
		return m < c->up ? 1 : m >= c->down ? -1 : 0;
	if (m > c->up)
		return 1;
	return m < c->down && n > 1 && m * n / (n - 1) < c->up ? -1 : 0;
}

/* Adds one replica: a draining one taken back, else the lowest-numbered off one started. */
static int scale_up_one(struct kv_sim *s, struct kv_autoscale *a)
{
	uint32_t i;

	if (a->n[KV_REP_ACTIVE] + a->n[KV_REP_STARTING] >= a->cfg->max)
		return 0;
	if (a->cfg->policy == KV_AS_SLO && a->n[KV_REP_STARTING])
		return 0; /* attainment cannot see the replicas coming: wait for them */
	for (i = a->lo; i < a->hi; i++)
		if (a->state[i] == KV_REP_DRAINING) {
			set_state(s, a, i, KV_REP_ACTIVE);
			return 1;
		}
	for (i = a->lo; i < a->hi; i++)
		if (a->state[i] == KV_REP_OFF) {
			set_state(s, a, i, KV_REP_STARTING);
			kv_heap_push(&s->heap, s->now + a->cold_ns, KV_EV_SCALE_READY, i, 0);
			return 1;
		}
	return 0;
}

/* Removes one replica: the highest-numbered active one drains (off at once when idle). */
static int scale_down_one(struct kv_sim *s, struct kv_autoscale *a)
{
	uint32_t i;

	if (a->n[KV_REP_STARTING] || a->n[KV_REP_ACTIVE] <= a->cfg->min)
		return 0;
	for (i = a->hi; i-- > a->lo;)
		if (a->state[i] == KV_REP_ACTIVE) {
			set_state(s, a, i, KV_REP_DRAINING);
			kv__autoscale_check(s, &s->rep[i]);
			return 1;
		}
	return 0;
}

/* Applies direction dir (up to cfg->step replicas) unless a cooldown holds it; returns the change. */
static int act(struct kv_sim *s, struct kv_autoscale *a, int dir)
{
	const struct kv_autoscale_cfg *c = a->cfg;
	kv_ns since = a->last_action_ns == KV_NS_NEVER ? KV_NS_NEVER : s->now - a->last_action_ns;
	int n = 0;
	uint32_t j;

	if (!dir || since < (dir > 0 ? c->cooldown_up_ns : c->cooldown_down_ns))
		return 0;
	for (j = 0; j < c->step; j++)
		n += dir > 0 ? scale_up_one(s, a) : -scale_down_one(s, a);
	if (n) {
		a->last_action_ns = s->now;
		if (n > 0)
			a->ups++;
		else
			a->downs++;
	}
	return n;
}

int kv__autoscale_tick(struct kv_sim *s, struct kv_autoscale *a)
{
	struct kv_as_row row = { .t_ns = s->now, .group = a->group };
	uint32_t i;

	for (i = a->lo; i < a->hi; i++) /* an idle draining one found by no event */
		if (a->state[i] == KV_REP_DRAINING)
			kv__autoscale_check(s, &s->rep[i]);
	sample(s, a, &a->num[a->head], &a->den[a->head]);
	a->head = (a->head + 1) % a->k;
	a->filled = KV_MIN(a->filled + 1, a->k);
	row.metric = window_metric(a);
	row.slo_attainment = a->cfg->slo && a->ended ? (double)a->met / (double)a->ended : NAN;
	a->met = a->ended = 0;
	if (a->filled == a->k) /* a whole window measured since the last action */
		row.delta = act(s, a, direction(a, row.metric));
	if (row.delta) { /* what the window saw was another fleet: measure afresh */
		memset(a->num, 0, a->k * sizeof(*a->num));
		memset(a->den, 0, a->k * sizeof(*a->den));
		a->filled = 0;
	}
	memcpy(row.n, a->n, sizeof(row.n));
	row.gpu_s = a->gpu_s + (double)billed(a) * a->gpus * (double)(s->now - a->bill_t0_ns) * 1e-9;
	if (s->sink.scale && s->sink.scale(s->sink.ctx, s, &row))
		return KV_EIO;
	return 0;
}

void kv__autoscale_ready(struct kv_sim *s, uint32_t i)
{
	if (s->rep_state[i] == KV_REP_STARTING)
		set_state(s, kv__autoscale_of(s, i), i, KV_REP_ACTIVE);
}

void kv__autoscale_check(struct kv_sim *s, struct kv_replica *r)
{
	/* still holding: requests, prefills whose KV has not left, transfers coming in */
	if (s->rep_state[r->idx] != KV_REP_DRAINING || r->n_assigned || r->n_handoff ||
	    r->n_xfer_held || r->n_inbound)
		return;
	KV_CHECK(r->n_running == 0 && r->live_tokens == 0 && r->outstanding_tokens == 0 &&
			 r->sched->waiting(r->sched_priv) == 0 && r->inbound_bytes == 0,
		 "replica %u drained holding %u running, %llu live tokens, %llu outstanding, "
		 "%llu KV bytes inbound", r->idx, r->n_running, (unsigned long long)r->live_tokens,
		 (unsigned long long)r->outstanding_tokens, (unsigned long long)r->inbound_bytes);
	if (r->cache->flush) /* its cached prefixes go with it */
		r->cache->flush(r->cache_priv);
	KV_CHECK(r->pool.free_bytes == r->pool.size_bytes,
		 "replica %u drained with %llu pool bytes held", r->idx,
		 (unsigned long long)(r->pool.size_bytes - r->pool.free_bytes));
	set_state(s, kv__autoscale_of(s, r->idx), r->idx, KV_REP_OFF);
}

void kv__autoscale_final(struct kv_sim *s, struct kv_autoscale *a)
{
	bill(a, s->now); /* the last event: the last request's end or a later decision */
}
