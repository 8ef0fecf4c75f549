/*
 * load.c -- offered load against service capacity (load.h).
 */
#include "load.h"
#include "replica.h"

#include <math.h>

/* The steady-state step of load.h's header for a requests started per step. */
static void saturated_shape(double a, double P, double O, double K, uint64_t token_bytes,
			    struct kv_batch_shape *b)
{
	double seqs = fmax(1.0, round(a * O)), dec = round(a * (O - 1.0));
	double pre = fmax(1.0, round(a * P)), dec_kv = a * K * (O - 1.0) / O;
	double pairs = dec_kv + a * P * (P + 1.0) / 2.0;

	*b = (struct kv_batch_shape){ 0 };
	b->n_seqs = (uint32_t)seqs;
	b->n_sample = b->n_seqs;
	b->n_decode = (uint32_t)fmin(dec, seqs);
	b->n_prefill_tokens = (uint64_t)pre;
	b->attn_pairs = (uint64_t)round(pairs);
	b->kv_read_bytes = (uint64_t)round((dec_kv + pre) * (double)token_bytes);
}

double kv_load_replica_capacity(const struct kv_perf *pf, const struct kv_load_mix *x)
{
	double P = fmax(x->prompt_mean, 1.0), O = fmax(x->output_mean, 1.0), a;
	double K = x->kv_steps_mean > 0 ? x->kv_steps_mean : O * (P + O / 2.0);
	struct kv_batch_shape b;
	kv_ns t;

	if (!x->max_seqs || !x->budget_tokens || !x->kv_tokens)
		return 0.0;
	a = fmin((double)x->max_seqs / O, (double)x->budget_tokens / (P + O - 1.0));
	a = fmin(a, (double)x->kv_tokens / K);
	saturated_shape(a, P, O, K, x->token_bytes, &b);
	t = kv_perf_iter_ns(pf, &b);
	return a / ((double)t * 1e-9);
}

/* The run's length mix on group g's replicas: the completed requests' means; 0 when none completed. */
static int run_mix(const struct kv_sim *s, const struct kv_group *g, struct kv_load_mix *x)
{
	double done = (double)s->ended[KV_END_COMPLETED];

	if (done <= 0)
		return 0;
	x->prompt_mean = (double)s->prompt_tokens_done / done;
	x->output_mean = (double)s->output_tokens_done / done;
	x->kv_steps_mean = s->kv_token_steps_done / done;
	x->max_seqs = g->cfg->max_batch_seqs;
	x->budget_tokens = g->cfg->max_batch_tokens;
	x->kv_tokens = g->mem.kv_tokens;
	if (g->count && s->rep[g->first].beta_bytes > 0) /* the cache model's tokens (quantized: more) */
		x->kv_tokens = (uint64_t)((double)g->pool_bytes / s->rep[g->first].beta_bytes);
	x->token_bytes = g->token_bytes;
	return 1;
}

/* The cluster's saturated capacity: each group's replicas times one's capacity, req/s; NAN when none completed. */
static double cluster_capacity(const struct kv_sim *s)
{
	struct kv_load_mix x;
	double c = 0;
	uint32_t i;

	for (i = 0; i < s->n_grp; i++) {
		if (!run_mix(s, &s->grp[i], &x))
			return NAN;
		c += (double)s->grp[i].count * kv_load_replica_capacity(&s->grp[i].perf, &x);
	}
	return c;
}

void kv_load_compute(const struct kv_sim *s, struct kv_load *l)
{
	double span = (double)(s->last_finish_ns - s->first_arrival_ns) * 1e-9;
	double arr_span = (double)(s->last_arrival_ns - s->first_arrival_ns) * 1e-9;
	kv_ns busy = 0;
	uint32_t i;

	for (i = 0; i < s->n_rep; i++)
		busy += s->rep[i].busy_ns;
	l->offered_req_s = s->arrived >= 2 && arr_span > 0 ? (double)(s->arrived - 1) / arr_span : NAN;
	l->capacity_req_s = cluster_capacity(s);
	l->arrival_span_s = arr_span;
	l->burst = s->arrived >= 2 && l->capacity_req_s > 0 && arr_span * l->capacity_req_s < 1.0;
	l->share = l->capacity_req_s > 0 && !l->burst ? l->offered_req_s / l->capacity_req_s : NAN;
	l->busy_share = span > 0 && s->n_rep ? (double)busy * 1e-9 / (span * s->n_rep) : NAN;
}
