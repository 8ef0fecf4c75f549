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
 *
 * Fitted (bench/comm_fit to configs/comm/nccl-measured.csv; the block below
 * is its --params output, checked by meson test comm_fit): over NVLink
 * the NCCL latency and bandwidth of each protocol are scaled by COMM_FIT_LAT
 * and COMM_FIT_BW; all-to-all and send/recv take COMM_FIT_A2A_LAT_US and
 * COMM_FIT_A2A_EFF of the bus bandwidth; the engines' custom all-reduce is
 *   one-shot  lat1 + k1 * (n-1) * B / busbw(n)
 *   two-shot  lat2 + k2 * 2(n-1)/n * B / busbw(n)
 * with vLLM's switch from one-shot to two-shot (custom_all_reduce.cuh: 2
 * GPUs always one-shot; up to 4 GPUs below 512 KiB, up to 8 below 256 KiB).
 */
#include "comm.h"

#include "kv_common.h"

#include <assert.h>
#include <math.h>
#include <string.h>

/* bench/comm_fit --params: begin */
#define COMM_FIT_LAT { 1.05, 0.75, 0.65 } /* NCCL latency scale, LL LL128 Simple */
#define COMM_FIT_BW { 1.35, 0.95, 1.00 } /* NCCL bandwidth scale, LL LL128 Simple */
#define COMM_FIT_A2A_LAT_US 10.80 /* all-to-all and send/recv latency, us */
#define COMM_FIT_A2A_EFF 0.914 /* all-to-all share of the bus bandwidth */
#define COMM_FIT_VLLM_CAR { 8.746, 5.976, 17.141, 5.538 } /* lat1 us, k1, lat2 us, k2 */
#define COMM_FIT_SGLANG_CAR { 4.346, 5.121, 10.995, 4.652 } /* lat1 us, k1, lat2 us, k2 */
/* bench/comm_fit --params: end */

const struct kv_comm_fit kv_comm_fit_shipped = {
	.lat = COMM_FIT_LAT,
	.bw = COMM_FIT_BW,
	.grouped = 1,
	.a2a_lat_us = COMM_FIT_A2A_LAT_US,
	.a2a_eff = COMM_FIT_A2A_EFF,
	.car = { { 0, 0, 0, 0 }, COMM_FIT_VLLM_CAR, COMM_FIT_SGLANG_CAR },
};

/* One library's tuning constants for one link class. */
struct comm_tune {
	double base_us[KV_COMM_N_ALGOS][KV_COMM_N_PROTOS]; /* baseLat, us */
	double hw_us[KV_COMM_N_ALGOS][KV_COMM_N_PROTOS]; /* hwLat per step, us */
	double ring_f[KV_COMM_N_PROTOS]; /* ring: share of busbw per protocol */
	double tree_f[KV_COMM_N_PROTOS]; /* tree: share of the tree busbw per protocol */
	double tree_scale; /* tree busbw = min(busbw * tree_scale, tree_cap) */
	double tree_cap_Bps; /* bytes/s */
	int ll128; /* 1: LL128 enabled */
	int fitted; /* 1: the fitted scales and all-to-all terms apply (NVLink) */
};

static const struct comm_tune nccl_nvlink = {
	.base_us = { { 6.8, 14.0, 8.4 }, { 6.6, 14.0, 8.4 } },
	.hw_us = { { 0.6, 1.25, 4.0 }, { 0.6, 1.9, 3.4 } },
	.ring_f = { 1.0 / 4.0, 0.92, 1.0 },
	.tree_f = { 1.0 / 3.8, 7.0 / 9.0, 1.0 },
	.tree_scale = 0.9,
	.tree_cap_Bps = 110e9,
	.ll128 = 1,
	.fitted = 1,
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
	"datasheet", "nvlink", "pcie-p2p", "pcie-host", "xgmi", "nvlink-bridge",
};

/* Other names accepted for a link type. */
static const struct {
	const char *name;
	enum kv_link_type type;
} link_aliases[] = {
	{ "nvswitch", KV_LINK_NVLINK },
	{ "nvlink-mesh", KV_LINK_NVLINK },
	{ "pcie-no-p2p", KV_LINK_PCIE_HOST },
};

const char *kv_link_name(enum kv_link_type t)
{
	assert((unsigned)t < KV_LINK_N_TYPES);
	return link_names[t];
}

int kv_link_parse(const char *name, enum kv_link_type *t)
{
	size_t k;
	int i;

	for (k = 0; k < sizeof(link_aliases) / sizeof(link_aliases[0]); k++) {
		if (!strcmp(name, link_aliases[k].name)) {
			*t = link_aliases[k].type;
			return 0;
		}
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
	return "nvlink (or nvswitch, nvlink-mesh), nvlink-bridge, pcie-p2p, pcie-host (or "
	       "pcie-no-p2p), xgmi, datasheet";
}

double kv_link_busbw(const struct kv_link *l, uint32_t n)
{
	uint32_t i;

	if (n <= KV_LINK_MAX_RANKS && l->busbw_n_Bps[n] > 0)
		return l->busbw_n_Bps[n];
	for (i = KV_MIN(n, KV_LINK_MAX_RANKS + 1); i-- > 2;)
		if (l->busbw_n_Bps[i] > 0)
			return l->busbw_n_Bps[i];
	for (i = n + 1; i <= KV_LINK_MAX_RANKS; i++)
		if (l->busbw_n_Bps[i] > 0)
			return l->busbw_n_Bps[i];
	return l->busbw_Bps;
}

/* NCCL's constants for l over n GPUs: a bridge is NVLink for a pair only. */
static const struct comm_tune *tune_of(const struct kv_link *l, uint32_t n)
{
	switch (l->type) {
	case KV_LINK_NVLINK:
		return &nccl_nvlink;
	case KV_LINK_NVLINK_BRIDGE:
		return n <= 2 ? &nccl_nvlink : &nccl_pci;
	case KV_LINK_XGMI:
		return &rccl_xgmi;
	default:
		return &nccl_pci;
	}
}

int kv_comm_allreduce_cost(const struct kv_link *l, uint32_t n, int algo, int proto,
			   struct kv_comm_cost *c)
{
	return kv_comm_allreduce_cost_fit(l, n, algo, proto, &kv_comm_fit_shipped, c);
}

int kv_comm_allreduce_cost_fit(const struct kv_link *l, uint32_t n, int algo, int proto,
			       const struct kv_comm_fit *fit, struct kv_comm_cost *c)
{
	const struct comm_tune *t = tune_of(l, n);
	double steps = 2.0 * (n - 1), bw, busbw = kv_link_busbw(l, n);
	double lat_f, bw_f;

	assert(algo >= 0 && algo < KV_COMM_N_ALGOS && proto >= 0 && proto < KV_COMM_N_PROTOS);
	if (n < 2 || busbw <= 0)
		return -1;
	if (l->type == KV_LINK_DATASHEET) {
		/* kvsim's first model: one ring at the datasheet rate plus a fixed latency */
		if (algo != KV_COMM_RING || proto != KV_COMM_SIMPLE)
			return -1;
		c->fixed_ns = l->fixed_ns + l->overhead_ns;
		c->ns_per_byte = steps / n / busbw * 1e9;
		return 0;
	}
	if (proto == KV_COMM_LL128 && !t->ll128)
		return -1;
	lat_f = t->fitted ? fit->lat[proto] : 1.0;
	bw_f = t->fitted ? fit->bw[proto] : 1.0;
	if (algo == KV_COMM_RING)
		bw = busbw * t->ring_f[proto] * bw_f * n / steps;
	else
		bw = fmin(busbw * t->tree_scale, t->tree_cap_Bps) * t->tree_f[proto] * bw_f / 2.0;
	c->fixed_ns = (t->base_us[algo][proto] + steps * t->hw_us[algo][proto]) * lat_f * 1e3 +
		      l->overhead_ns;
	c->ns_per_byte = 1e9 / bw;
	return 0;
}

void kv_comm_allreduce_init(struct kv_comm_allreduce *ar, const struct kv_link *l, uint32_t n)
{
	kv_comm_allreduce_init_fit(ar, l, n, &kv_comm_fit_shipped);
}

void kv_comm_allreduce_init_fit(struct kv_comm_allreduce *ar, const struct kv_link *l, uint32_t n,
				const struct kv_comm_fit *fit)
{
	int a, p;

	assert(n >= 1);
	memset(ar, 0, sizeof(*ar));
	ar->n = n;
	for (a = 0; a < KV_COMM_N_ALGOS; a++)
		for (p = 0; p < KV_COMM_N_PROTOS; p++)
			if (!kv_comm_allreduce_cost_fit(l, n, a, p, fit, &ar->c[ar->n_cand]))
				ar->n_cand++;
}

int kv_comm_car_usable(const struct kv_link *l, uint32_t n)
{
	if (n != 2 && n != 4 && n != 6 && n != 8)
		return 0;
	switch (l->type) {
	case KV_LINK_NVLINK:
	case KV_LINK_XGMI:
		return 1; /* every pair linked */
	case KV_LINK_NVLINK_BRIDGE:
	case KV_LINK_PCIE_P2P:
		return n == 2; /* "not supported on more than two PCIe-only GPUs" */
	default:
		return 0; /* no P2P (pcie-host), or topology not named (datasheet) */
	}
}

int kv_comm_allreduce_set_car(struct kv_comm_allreduce *ar, const struct kv_link *l,
			      const struct kv_comm_car *car)
{
	return kv_comm_allreduce_set_car_fit(ar, l, car, &kv_comm_fit_shipped);
}

int kv_comm_allreduce_set_car_fit(struct kv_comm_allreduce *ar, const struct kv_link *l,
				  const struct kv_comm_car *car, const struct kv_comm_fit *fit)
{
	const double *c = fit->car[car->impl];
	double busbw = kv_link_busbw(l, ar->n), n = ar->n;

	assert(car->impl >= 0 && car->impl < KV_CAR_N);
	ar->car_max_bytes = 0.0;
	if (car->impl == KV_CAR_OFF || car->max_bytes <= 0 || busbw <= 0 ||
	    !kv_comm_car_usable(l, ar->n))
		return 0;
	ar->car_max_bytes = car->max_bytes;
	/* custom_all_reduce.cuh: 2 GPUs one-shot; <= 4 below 512 KiB, <= 8 below 256 KiB */
	ar->car_switch_bytes = ar->n == 2 ? car->max_bytes : ar->n <= 4 ? 524288.0 : 262144.0;
	ar->car[0].fixed_ns = c[0] * 1e3 + l->overhead_ns;
	ar->car[0].ns_per_byte = c[1] * (n - 1) / busbw * 1e9;
	ar->car[1].fixed_ns = c[2] * 1e3 + l->overhead_ns;
	ar->car[1].ns_per_byte = c[3] * 2.0 * (n - 1) / n / busbw * 1e9;
	return 1;
}

double kv_comm_allreduce_ns(const struct kv_comm_allreduce *ar, double bytes)
{
	double best = 0.0, t;
	uint32_t i;

	if (bytes < ar->car_max_bytes) {
		i = bytes < ar->car_switch_bytes ? 0 : 1;
		return ar->car[i].fixed_ns + bytes * ar->car[i].ns_per_byte;
	}
	for (i = 0; i < ar->n_cand; i++) {
		t = ar->c[i].fixed_ns + bytes * ar->c[i].ns_per_byte;
		if (i == 0 || t < best)
			best = t;
	}
	return best;
}

/*
 * Latency of a pass of `steps` send/recv steps over n GPUs with the link's
 * per-call overhead, ns: fit's grouped latency over NVLink when fit->grouped,
 * else a Simple-protocol ring of `steps` steps.
 */
static double simple_lat_ns(const struct kv_link *l, uint32_t n, double steps,
			    const struct kv_comm_fit *fit)
{
	const struct comm_tune *t = tune_of(l, n);

	if (l->type == KV_LINK_DATASHEET)
		return l->fixed_ns + l->overhead_ns;
	if (t->fitted && fit->grouped)
		return fit->a2a_lat_us * 1e3 + l->overhead_ns;
	return (t->base_us[KV_COMM_RING][KV_COMM_SIMPLE] +
		steps * t->hw_us[KV_COMM_RING][KV_COMM_SIMPLE]) * 1e3 + l->overhead_ns;
}

/* The bus bandwidth a send/recv pass reaches over n GPUs of l under fit, bytes/s. */
static double pass_busbw(const struct kv_link *l, uint32_t n, const struct kv_comm_fit *fit)
{
	const struct comm_tune *t = tune_of(l, n);
	double bw = kv_link_busbw(l, n);

	return l->type != KV_LINK_DATASHEET && t->fitted && fit->grouped ? bw * fit->a2a_eff : bw;
}

double kv_comm_alltoall_ns(const struct kv_link *l, double bytes_per_rank, uint32_t n)
{
	return kv_comm_alltoall_fit_ns(l, bytes_per_rank, n, &kv_comm_fit_shipped);
}

double kv_comm_alltoall_fit_ns(const struct kv_link *l, double bytes_per_rank, uint32_t n,
			       const struct kv_comm_fit *fit)
{
	double bw;

	if (n <= 1 || (bw = pass_busbw(l, n, fit)) <= 0)
		return 0.0;
	return simple_lat_ns(l, n, n - 1.0, fit) + (n - 1.0) / n * bytes_per_rank / bw * 1e9;
}

double kv_comm_p2p_ns(const struct kv_link *l, double bytes)
{
	double bw = pass_busbw(l, 2, &kv_comm_fit_shipped);

	if (bw <= 0)
		return 0.0;
	return simple_lat_ns(l, 2, 1.0, &kv_comm_fit_shipped) + bytes / bw * 1e9;
}
