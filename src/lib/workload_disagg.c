/*
 * workload_disagg.c -- the `kv_transfer:` section of a workload's cluster
 * or of one replica group (prefill/decode disaggregation, sim/disagg.h):
 *
 *   kv_transfer:
 *     bandwidth: 50GB/s      # one link, GB/s, Gb/s, MB/s, TB/s, GiB/s (a number: GB/s)
 *     latency: 20us          # one transfer's latency (a duration)
 *     layerwise: false       # stream layer by layer during the prefill
 *     topology: prefill      # prefill (a link per prefill replica) | pair | shared
 *     placement: least-kv    # least-kv | round-robin
 *
 * A group's section starts from the cluster's; absent keys keep it.
 */
#include "workload.h"
#include "cfg.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* kv_transfer.bandwidth: a positive bandwidth of at least 1 byte/s and at most 1e15 (1 PB/s). */
static int read_bw(struct kv_cfg_node *m, uint64_t *out, struct kv_diag *d)
{
	struct kv_cfg_node *n = kv_cfg_get(m, "bandwidth");
	double v;

	if (!n)
		return 0;
	if (n->type != KV_CFG_SCALAR || kv_cfg_parse_rate(n->value, &v) || !(v >= 1 && v <= 1e15))
		return kv_cfg_error(n, d, "bad value '%s': expected a bandwidth between 1B/s and "
				    "1000TB/s such as 50GB/s, 400Gb/s or a number of GB/s",
				    n->type == KV_CFG_SCALAR ? n->value : "(not a scalar)");
	*out = (uint64_t)llround(v);
	return 0;
}

int kv_workload_disagg(const struct kv_sim_config *c)
{
	uint32_t i;

	for (i = 0; i < c->n_groups; i++)
		if (c->groups[i].role == KV_ROLE_PREFILL)
			return 1;
	return c->pd_prefill > 0;
}

/* Whether a group of c with role `want` serves model m. */
static int has_role(const struct kv_sim_config *c, enum kv_group_role want, const char *m)
{
	uint32_t i;

	for (i = 0; i < c->n_groups; i++)
		if (c->groups[i].role == want && !strcmp(c->groups[i].model.name, m))
			return 1;
	return 0;
}

int kv_workload_check_roles(struct kv_cfg_node *groups, const struct kv_sim_config *c,
			    struct kv_diag *d)
{
	struct kv_cfg_node *it = groups ? groups->child : NULL;
	uint32_t i;

	for (i = 0; i < c->n_groups && it; i++, it = it->next) {
		const struct kv_sim_config *g = &c->groups[i];
		enum kv_group_role other = g->role == KV_ROLE_PREFILL ? KV_ROLE_DECODE : KV_ROLE_PREFILL;

		if (g->role == KV_ROLE_MIXED || has_role(c, other, g->model.name))
			continue;
		return kv_cfg_error(kv_cfg_get(it, "role"), d,
				    "group '%s' has role %s for %s but no group with role %s serves "
				    "that model: expected a %s group of model %s",
				    g->group_name, kv_group_role_names[g->role], g->model.name,
				    kv_group_role_names[other], kv_group_role_names[other],
				    g->model.name);
	}
	return 0;
}

int kv_workload_kv_transfer(struct kv_cfg_node *parent, struct kv_xfer_cfg *x,
			    struct kv_diag *d)
{
	static const char *const keys[] = { "bandwidth", "latency", "layerwise", "topology",
					    "placement", NULL };
	struct kv_cfg_node *m = kv_cfg_get(parent, "kv_transfer");
	int v, rc;

	if (!m)
		return 0;
	if ((rc = kv_cfg_expect_map(m, d)) || (rc = kv_cfg_check_keys(m, keys, d)) ||
	    (rc = read_bw(m, &x->bw_bytes_s, d)))
		return rc;
	if (kv_cfg_get(m, "latency")) {
		if ((rc = kv_cfg_ns(m, "latency", 0, 0, 10 * KV_NS_PER_S, &x->latency_ns, d)))
			return rc;
		x->has_latency = 1;
	}
	if ((rc = kv_cfg_bool(m, "layerwise", x->layerwise, &x->layerwise, d)))
		return rc;
	if ((rc = kv_cfg_enum(m, "topology", kv_xfer_topo_names, (int)x->topo, &v, d)))
		return rc;
	x->topo = (enum kv_xfer_topo)v;
	if ((rc = kv_cfg_enum(m, "placement", kv_place_names, (int)x->place, &v, d)))
		return rc;
	x->place = (enum kv_place)v;
	return 0;
}
