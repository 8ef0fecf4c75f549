/*
 * comm.c -- NCCL's collective cost model over one link (see comm.h).
 *
 * Sources of the constants (latencies in us):
 *   NVIDIA/nccl src/graph/tuning.cc, v2.28.7, ncclTunerConstantsDefaults:
 *     baseLat  Tree {6.8, 14.0, 8.4}, Ring {6.6, 14.0, 8.4}     (LL, LL128, Simple)
 *     hwLat    NVLINK Tree {0.6, 1.25, 4.0}, Ring {0.6, 1.9, 3.4}
 *              PCI    Tree {1.0, 1.9, 4.0},  Ring {1.0, 2.5, 5.7}
 *   and ncclTopoTuneModel's protocol factors: ring LL busBw/4, ring LL128
 *   x0.92, tree x0.9 capped at 110 GB/s (one or two nodes), tree LL /3.8,
 *   tree LL128 x7/9, tree algorithm bandwidth = bus bandwidth / 2; LL128
 *   enabled only when every path is NVLink.
 *   ROCm/rccl src/graph/tuning.cc (commit 0023b9b0), for xGMI (RCCL files
 *   xGMI under NCCL_HW_NVLINK):
 *     baseLat  Tree {37.9, 37.9, 40.4}, Ring {20.5, 20.5, 27.9}
 *     hwLat    NVLINK Tree {1.2, 1.2, 3.8}, Ring {2.3, 2.3, 2.7}
 *   with ring LL busBw/5, tree x0.27 capped at 90 GB/s, tree LL /2.3, no LL128.
 * Host-staged PCIe (no P2P) uses NCCL's PCI latencies, as NCCL does for any
 * path that is not NVLink; its lower bus bandwidth is the profile's.
 */
#include "comm.h"

#include <assert.h>
#include <math.h>
#include <string.h>

/* One library's tuning constants for one link class. */
struct comm_tune {
	double base_us[KV_COMM_N_ALGOS][KV_COMM_N_PROTOS]; /* baseLat, us */
	double hw_us[KV_COMM_N_ALGOS][KV_COMM_N_PROTOS]; /* hwLat per step, us */
	double ring_f[KV_COMM_N_PROTOS]; /* ring: share of busbw per protocol */
	double tree_f[KV_COMM_N_PROTOS]; /* tree: share of the tree busbw per protocol */
	double tree_scale; /* tree busbw = min(busbw * tree_scale, tree_cap) */
	double tree_cap_Bps; /* bytes/s */
	int ll128; /* 1: LL128 enabled */
};

static const struct comm_tune nccl_nvlink = {
	.base_us = { { 6.8, 14.0, 8.4 }, { 6.6, 14.0, 8.4 } },
	.hw_us = { { 0.6, 1.25, 4.0 }, { 0.6, 1.9, 3.4 } },
	.ring_f = { 1.0 / 4.0, 0.92, 1.0 },
	.tree_f = { 1.0 / 3.8, 7.0 / 9.0, 1.0 },
	.tree_scale = 0.9,
	.tree_cap_Bps = 110e9,
	.ll128 = 1,
};

static const struct comm_tune nccl_pci = {
	.base_us = { { 6.8, 14.0, 8.4 }, { 6.6, 14.0, 8.4 } },
	.hw_us = { { 1.0, 1.9, 4.0 }, { 1.0, 2.5, 5.7 } },
	.ring_f = { 1.0 / 4.0, 0.92, 1.0 },
	.tree_f = { 1.0 / 3.8, 7.0 / 9.0, 1.0 },
	.tree_scale = 0.9,
	.tree_cap_Bps = 110e9,
	.ll128 = 0,
};

static const struct comm_tune rccl_xgmi = {
	.base_us = { { 37.9, 37.9, 40.4 }, { 20.5, 20.5, 27.9 } },
	.hw_us = { { 1.2, 1.2, 3.8 }, { 2.3, 2.3, 2.7 } },
	.ring_f = { 1.0 / 5.0, 0.92, 1.0 },
	.tree_f = { 1.0 / 2.3, 7.0 / 9.0, 1.0 },
	.tree_scale = 0.27,
	.tree_cap_Bps = 90e9,
	.ll128 = 0,
};

static const char *const link_names[KV_LINK_N_TYPES] = {
	"datasheet", "nvlink", "pcie-p2p", "pcie-host", "xgmi",
};

const char *kv_link_name(enum kv_link_type t)
{
	assert((unsigned)t < KV_LINK_N_TYPES);
	return link_names[t];
}

int kv_link_parse(const char *name, enum kv_link_type *t)
{
	int i;

	if (!strcmp(name, "nvswitch")) {
		*t = KV_LINK_NVLINK;
		return 0;
	}
	for (i = 0; i < KV_LINK_N_TYPES; i++) {
		if (!strcmp(name, link_names[i])) {
			*t = (enum kv_link_type)i;
			return 0;
		}
	}
	return -1;
}

const char *kv_link_names(void)
{
	return "nvlink (or nvswitch), pcie-p2p, pcie-host, xgmi, datasheet";
}

static const struct comm_tune *tune_of(enum kv_link_type t)
{
	switch (t) {
	case KV_LINK_NVLINK:
		return &nccl_nvlink;
	case KV_LINK_XGMI:
		return &rccl_xgmi;
	default:
		return &nccl_pci;
	}
}

int kv_comm_allreduce_cost(const struct kv_link *l, uint32_t n, int algo, int proto,
			   struct kv_comm_cost *c)
{
	const struct comm_tune *t = tune_of(l->type);
	double steps = 2.0 * (n - 1), bw;

	assert(algo >= 0 && algo < KV_COMM_N_ALGOS && proto >= 0 && proto < KV_COMM_N_PROTOS);
	if (n < 2 || l->busbw_Bps <= 0)
		return -1;
	if (l->type == KV_LINK_DATASHEET) {
		/* kvsim's first model: one ring at the datasheet rate plus a fixed latency */
		if (algo != KV_COMM_RING || proto != KV_COMM_SIMPLE)
			return -1;
		c->fixed_ns = l->fixed_ns + l->overhead_ns;
		c->ns_per_byte = steps / n / l->busbw_Bps * 1e9;
		return 0;
	}
	if (proto == KV_COMM_LL128 && !t->ll128)
		return -1;
	if (algo == KV_COMM_RING)
		bw = l->busbw_Bps * t->ring_f[proto] * n / steps;
	else
		bw = fmin(l->busbw_Bps * t->tree_scale, t->tree_cap_Bps) * t->tree_f[proto] / 2.0;
	c->fixed_ns = (t->base_us[algo][proto] + steps * t->hw_us[algo][proto]) * 1e3 + l->overhead_ns;
	c->ns_per_byte = 1e9 / bw;
	return 0;
}

void kv_comm_allreduce_init(struct kv_comm_allreduce *ar, const struct kv_link *l, uint32_t n)
{
	int a, p;

	assert(n >= 1);
	memset(ar, 0, sizeof(*ar));
	ar->n = n;
	for (a = 0; a < KV_COMM_N_ALGOS; a++)
		for (p = 0; p < KV_COMM_N_PROTOS; p++)
			if (!kv_comm_allreduce_cost(l, n, a, p, &ar->c[ar->n_cand]))
				ar->n_cand++;
}

double kv_comm_allreduce_ns(const struct kv_comm_allreduce *ar, double bytes)
{
	double best = 0.0, t;
	uint32_t i;

	for (i = 0; i < ar->n_cand; i++) {
		t = ar->c[i].fixed_ns + bytes * ar->c[i].ns_per_byte;
		if (i == 0 || t < best)
			best = t;
	}
	return best;
}

/* Latency of a Simple-protocol ring pass of `steps` steps with the link's per-call overhead, ns. */
static double simple_lat_ns(const struct kv_link *l, double steps)
{
	const struct comm_tune *t = tune_of(l->type);

	if (l->type == KV_LINK_DATASHEET)
		return l->fixed_ns + l->overhead_ns;
	return (t->base_us[KV_COMM_RING][KV_COMM_SIMPLE] +
		steps * t->hw_us[KV_COMM_RING][KV_COMM_SIMPLE]) * 1e3 + l->overhead_ns;
}

double kv_comm_alltoall_ns(const struct kv_link *l, double bytes_per_rank, uint32_t n)
{
	if (n <= 1 || l->busbw_Bps <= 0)
		return 0.0;
	return simple_lat_ns(l, n - 1.0) +
	       (n - 1.0) / n * bytes_per_rank / l->busbw_Bps * 1e9;
}

double kv_comm_p2p_ns(const struct kv_link *l, double bytes)
{
	if (l->busbw_Bps <= 0)
		return 0.0;
	return simple_lat_ns(l, 1.0) + bytes / l->busbw_Bps * 1e9;
}
