/*
 * groups.c -- per-group figures (groups.h): sums over a group's replicas
 * and the quantiles of its requests' latencies.
 */
#include "groups.h"

#include "replica.h"

#include <math.h>
#include <string.h>

const char kv_csv_header_groups[] =
	"group,role,model,device,replicas,gpus,requests,completed,rejected,prompt_tokens,"
	"output_tokens,iterations,busy_share,mem_reserved_util,kv_pool_bytes,ttft_p50_s,"
	"ttft_p99_s,e2e_p50_s,e2e_p99_s,weight_share,cost_per_gpu_hour,gpu_hours,cost_usd\n";

/* The sum of the weights of the groups serving g's model (g's routing class). */
static double class_weight(const struct kv_sim *s, const struct kv_group *g)
{
	double w = 0;
	uint32_t i;

	for (i = 0; i < s->n_grp; i++)
		if (!strcmp(s->grp[i].cfg->model.name, g->cfg->model.name))
			w += s->grp[i].weight;
	return w;
}

/* Quantile p of h in seconds, NAN when h is empty. */
static double quantile_s(const struct kv_hist *h, double p)
{
	return h->n ? (double)kv_hist_quantile(h, p) * 1e-9 : NAN;
}

void kv_group_summary(const struct kv_sim *s, const struct kv_group *g,
		      struct kv_group_summary *out)
{
	double span = (double)(s->last_finish_ns - s->first_arrival_ns) * 1e-9;
	double horizon = (double)s->last_finish_ns * 1e-9, reserved = 0, busy = 0;
	uint32_t i;

	out->gpus = kv_cfg_gpus(g->cfg);
	out->requests = g->arrived;
	out->completed = g->completed;
	out->rejected = g->rejected;
	out->prompt_tokens = g->prompt_tokens_done;
	out->output_tokens = g->output_tokens_done;
	out->iterations = 0;
	for (i = g->first; i < g->first + g->count; i++) {
		out->iterations += s->rep[i].iterations;
		busy += (double)s->rep[i].busy_ns * 1e-9;
		reserved += s->rep[i].reserved_Bs;
	}
	out->busy_share = span > 0 && g->count ? busy / (span * g->count) : NAN;
	out->mem_reserved_util = horizon > 0 && g->pool_bytes ?
		reserved / ((double)g->pool_bytes * g->count * horizon) : NAN;
	out->ttft_p50_s = quantile_s(&g->ttft, 0.5);
	out->ttft_p99_s = quantile_s(&g->ttft, 0.99);
	out->e2e_p50_s = quantile_s(&g->e2e, 0.5);
	out->e2e_p99_s = quantile_s(&g->e2e, 0.99);
	out->weight_share = g->weight / class_weight(s, g);
	out->gpu_hours = kv_group_gpu_hours(s, g);
	out->cost_usd = g->cfg->device.cost_per_gpu_hour > 0 || !out->gpu_hours ?
		out->gpu_hours * g->cfg->device.cost_per_gpu_hour : NAN;
}
