/*
 * comm.h -- collective-communication costs over one node's GPU-GPU link.
 *
 * The model is NCCL's own cost model (NVIDIA/nccl src/graph/tuning.cc,
 * v2.28: ncclTopoTuneModel fills a latency and a bandwidth per algorithm and
 * protocol, ncclTopoGetAlgoTime costs a collective of B bytes as
 * latency + B / algorithm bandwidth, and the enqueue path picks the cheapest
 * (algorithm, protocol)).  For an all-reduce over n ranks of one node:
 *
 *   ring:  lat = base[ring][p] + 2(n-1) * hw[link][ring][p]
 *          bw  = busbw * f[ring][p] * n / (2(n-1))     (ring = 2(n-1) steps of B/n)
 *   tree:  lat = base[tree][p] + 2(n-1) * hw[link][tree][p]   (one node: a chain)
 *          bw  = busbw * 0.9 * f[tree][p] / 2
 *   t(B)  = min over (algorithm, protocol p) of lat + B / bw
 *
 * with f the protocol's share of the link (LL 1/4 on rings and 1/3.8 on
 * trees, LL128 0.92 and 7/9, Simple 1), base and hw NCCL's constants in us
 * (comm.c cites them) and busbw the bus bandwidth nccl-tests reports for the
 * link (the bandwidth actually reached, one direction; a device profile
 * field).  LL128 is only enabled over NVLink, as NCCL does.
 *
 * All-to-all (expert parallelism, dispatch or combine): each rank sends
 * (n-1)/n of its B bytes, costed like NCCL's ring all-gather, which moves the
 * same share: base + (n-1) * hw + (n-1)/n * B / busbw (Simple protocol).
 * Point-to-point (pipeline stages): base + hw + B / busbw.
 *
 * KV_LINK_DATASHEET keeps kvsim's first model for profiles that name no link
 * type: one ring all-reduce at the datasheet interconnect bandwidth plus a
 * fixed latency (perf.h).
 *
 * Every collective over two or more ranks (all-reduce, all-to-all, send/recv)
 * also pays the link's overhead_ns, a fixed cost outside NCCL's model (the
 * engine's host work and launch per call; a device profile's
 * perf.collective_overhead).  Its default is 0: the published graph-captured
 * NCCL latencies of an engine (vLLM's pynccl on H100) match NCCL's model
 * without one (docs/perf-model.md, "Per-collective overhead").
 *
 * Everything here is pure; kv_comm_allreduce_init() precomputes the
 * candidates once per run so the per-iteration cost is a handful of
 * multiply-adds with no allocation.
 */
#ifndef KV_COMM_H
#define KV_COMM_H

#include <stdint.h>

enum kv_link_type {
	KV_LINK_DATASHEET = 0, /* no type named: datasheet bandwidth, fixed latency (perf.h) */
	KV_LINK_NVLINK, /* NVLink / NVSwitch: NCCL's NVLINK latencies, LL128 enabled */
	KV_LINK_PCIE_P2P, /* PCIe with peer-to-peer: NCCL's PCI latencies */
	KV_LINK_PCIE_HOST, /* PCIe without P2P: staged through host memory (NCCL SHM) */
	KV_LINK_XGMI, /* AMD Infinity Fabric (MI300X): RCCL's latencies over NVLINK-class links */
	KV_LINK_N_TYPES
};

/* A GPU-GPU link as the collectives see it. */
struct kv_link {
	enum kv_link_type type; /* link kind, KV_LINK_DATASHEET by default */
	double busbw_Bps; /* bus bandwidth reached by nccl-tests (ring, Simple), bytes/s */
	double fixed_ns; /* KV_LINK_DATASHEET only: fixed cost of one all-reduce, ns */
	double overhead_ns; /* host/launch cost added to every collective over >= 2 ranks, ns; 0 default */
};

/* NCCL protocols and algorithms the model chooses among. */
enum { KV_COMM_LL, KV_COMM_LL128, KV_COMM_SIMPLE, KV_COMM_N_PROTOS };
enum { KV_COMM_TREE, KV_COMM_RING, KV_COMM_N_ALGOS };

/* One candidate (algorithm, protocol): t(B) = fixed_ns + B * ns_per_byte. */
struct kv_comm_cost {
	double fixed_ns; /* latency, ns */
	double ns_per_byte; /* 1 / algorithm bandwidth, ns per byte */
};

/* Precomputed all-reduce candidates for one link and rank count. */
struct kv_comm_allreduce {
	uint32_t n; /* ranks, >= 1 */
	uint32_t n_cand; /* candidates in c (0 when n == 1) */
	struct kv_comm_cost c[KV_COMM_N_ALGOS * KV_COMM_N_PROTOS]; /* the enabled ones */
};

/* "nvlink", "pcie-p2p", ...; "datasheet" for KV_LINK_DATASHEET. */
const char *kv_link_name(enum kv_link_type t);

/* Parses a link name (also "nvswitch" for nvlink); 0, or -1 for an unknown name. */
int kv_link_parse(const char *name, enum kv_link_type *t);

/* The valid names, ", "-separated, for error messages. */
const char *kv_link_names(void);

/*
 * Cost of one (algorithm, protocol) all-reduce candidate over n ranks;
 * returns 0 and fills *c, or -1 when NCCL would not use it on this link
 * (LL128 off NVLink) or n < 2.
 */
int kv_comm_allreduce_cost(const struct kv_link *l, uint32_t n, int algo, int proto,
			   struct kv_comm_cost *c);

/* Fills ar with every enabled candidate for n ranks (n >= 1). */
void kv_comm_allreduce_init(struct kv_comm_allreduce *ar, const struct kv_link *l, uint32_t n);

/* All-reduce of bytes over ar's ranks: the cheapest candidate, ns (0 when n == 1). */
double kv_comm_allreduce_ns(const struct kv_comm_allreduce *ar, double bytes);

/*
 * All-to-all over n ranks where each rank holds bytes_per_rank bytes to
 * scatter: base + (n-1) * hw + (n-1)/n * bytes_per_rank / busbw, ns; 0 when
 * n <= 1.
 */
double kv_comm_alltoall_ns(const struct kv_link *l, double bytes_per_rank, uint32_t n);

/* One send/recv of bytes between two ranks: base + hw + bytes / busbw, ns. */
double kv_comm_p2p_ns(const struct kv_link *l, double bytes);

#endif /* KV_COMM_H */
