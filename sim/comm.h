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
 * Fitted terms (bench/comm_fit, to the published timings of
 * configs/comm/nccl-measured.csv; docs/perf-model.md "Collectives against
 * measured NCCL"): over NVLink-class links NCCL's latency and bandwidth
 * are scaled per protocol (the LL, LL128 and Simple size ranges), and an
 * all-to-all or send/recv costs lat_a2a + (n-1)/n * B / (busbw * eff): NCCL
 * posts the n-1 sends of an all-to-all as one group that runs in parallel,
 * so its latency does not grow with n as a ring's does.  PCIe and xGMI keep
 * NCCL's/RCCL's constants (no published table to fit).  The fitted terms
 * are one struct kv_comm_fit: the simulator runs kv_comm_fit_shipped, and
 * the *_fit entry points take any other set, so that bench/comm_fit fits and
 * checks this very arithmetic.
 *
 * Topology (kv_link.type) and bus bandwidth per GPU count: a board without
 * NVSwitch (NVLink mesh or bridge, PCIe) reaches a different bus bandwidth
 * at 2, 4 and 8 GPUs, so a link carries an optional table busbw_n_Bps[n]
 * (kv_link_busbw() picks the entry for n, else the nearest smaller count,
 * else the nearest larger, else busbw_Bps).  An NVLink bridge joins pairs:
 * over more than 2 GPUs its collectives cross PCIe (NCCL's PCI constants).
 *
 * Custom all-reduce (vLLM's and SGLang's custom_all_reduce, one-shot or
 * two-shot over P2P loads): used for n in {2, 4, 6, 8} on a P2P-capable
 * link, over more than 2 GPUs only when every pair is linked (NVSwitch,
 * NVLink mesh, xGMI), and only below the engine's size limit; NCCL
 * otherwise, and always without P2P (pcie-host) -- vLLM
 * custom_all_reduce.py should_custom_ar() and custom_all_reduce.cuh.
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
	KV_LINK_NVLINK_BRIDGE, /* NVLink joining pairs of GPUs; more than 2 GPUs cross PCIe */
	KV_LINK_N_TYPES
};

/* Largest GPU count of a link's per-count bus-bandwidth table. */
#define KV_LINK_MAX_RANKS 8

/* A GPU-GPU link as the collectives see it. */
struct kv_link {
	enum kv_link_type type; /* link kind, KV_LINK_DATASHEET by default */
	double busbw_Bps; /* bus bandwidth reached by nccl-tests (ring, Simple), bytes/s */
	double busbw_n_Bps[KV_LINK_MAX_RANKS + 1]; /* the same at n GPUs, bytes/s; 0: not given */
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

/* An engine's custom all-reduce (vLLM, SGLang): one-shot and two-shot costs. */
enum { KV_CAR_OFF = 0, KV_CAR_VLLM, KV_CAR_SGLANG, KV_CAR_N };
struct kv_comm_car {
	int impl; /* KV_CAR_*: whose kernels; KV_CAR_OFF: NCCL only */
	double max_bytes; /* used below this size only (vLLM: 8 MiB), bytes */
};

/* Precomputed all-reduce candidates for one link and rank count. */
struct kv_comm_allreduce {
	uint32_t n; /* ranks, >= 1 */
	uint32_t n_cand; /* candidates in c (0 when n == 1) */
	struct kv_comm_cost c[KV_COMM_N_ALGOS * KV_COMM_N_PROTOS]; /* the enabled ones */
	double car_max_bytes; /* custom all-reduce below this size; 0: never */
	double car_switch_bytes; /* one-shot below, two-shot from here, bytes */
	struct kv_comm_cost car[2]; /* custom all-reduce one-shot, two-shot */
};

/*
 * The fitted terms of the model over NVLink-class links (NCCL's constants
 * elsewhere).  kv_comm_fit_shipped holds what bench/comm_fit fits to
 * configs/comm/nccl-measured.csv; a set with lat and bw all 1 and grouped 0
 * is NCCL's own model.
 */
struct kv_comm_fit {
	double lat[KV_COMM_N_PROTOS]; /* scale of NCCL's latency per protocol; 1: NCCL's */
	double bw[KV_COMM_N_PROTOS]; /* scale of NCCL's algorithm bandwidth per protocol; 1: NCCL's */
	int grouped; /* 1: all-to-all and send/recv cost a2a_lat_us + B / (busbw * a2a_eff); 0: NCCL's Simple ring */
	double a2a_lat_us; /* grouped all-to-all and send/recv latency, us */
	double a2a_eff; /* grouped all-to-all's share of the bus bandwidth, fraction */
	double car[KV_CAR_N][4]; /* custom all-reduce per KV_CAR_*: lat1 us, k1, lat2 us, k2 */
};

/* The fitted constants the simulator runs (comm.c, bench/comm_fit --params). */
extern const struct kv_comm_fit kv_comm_fit_shipped;

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

/* kv_comm_allreduce_cost() under the fitted terms fit instead of kv_comm_fit_shipped. */
int kv_comm_allreduce_cost_fit(const struct kv_link *l, uint32_t n, int algo, int proto,
			       const struct kv_comm_fit *fit, struct kv_comm_cost *c);

/* Fills ar with every enabled candidate for n ranks (n >= 1); no custom all-reduce. */
void kv_comm_allreduce_init(struct kv_comm_allreduce *ar, const struct kv_link *l, uint32_t n);

/* kv_comm_allreduce_init() under fit instead of kv_comm_fit_shipped. */
void kv_comm_allreduce_init_fit(struct kv_comm_allreduce *ar, const struct kv_link *l, uint32_t n,
				const struct kv_comm_fit *fit);

/*
 * Bus bandwidth of l at n GPUs: busbw_n_Bps[n] when given, else the entry
 * of the nearest smaller count, else of the nearest larger one, else
 * busbw_Bps; bytes/s.
 */
double kv_link_busbw(const struct kv_link *l, uint32_t n);

/*
 * Whether an engine's custom all-reduce runs over n GPUs of link l: n in
 * {2, 4, 6, 8}, P2P between them (not pcie-host, not a datasheet link), and
 * for n > 2 every pair linked (nvlink, xgmi).  1 or 0.
 */
int kv_comm_car_usable(const struct kv_link *l, uint32_t n);

/*
 * Adds the custom all-reduce car to ar (set up by kv_comm_allreduce_init
 * over the same l and n) when kv_comm_car_usable(); otherwise ar stays NCCL
 * only.  Returns 1 when it was added, else 0.
 */
int kv_comm_allreduce_set_car(struct kv_comm_allreduce *ar, const struct kv_link *l,
			      const struct kv_comm_car *car);

/* kv_comm_allreduce_set_car() with fit's custom all-reduce terms instead of kv_comm_fit_shipped's. */
int kv_comm_allreduce_set_car_fit(struct kv_comm_allreduce *ar, const struct kv_link *l,
				  const struct kv_comm_car *car, const struct kv_comm_fit *fit);

/* All-reduce of bytes over ar's ranks: the custom all-reduce below its limit, else the cheapest candidate, ns (0 when n == 1). */
double kv_comm_allreduce_ns(const struct kv_comm_allreduce *ar, double bytes);

/*
 * All-to-all over n ranks where each rank holds bytes_per_rank bytes to
 * scatter, ns; 0 when n <= 1.  NVLink: lat_a2a + (n-1)/n * B / (busbw(n) *
 * eff) (fitted); other links: base + (n-1) * hw + (n-1)/n * B / busbw(n)
 * (NCCL's Simple ring constants).
 */
double kv_comm_alltoall_ns(const struct kv_link *l, double bytes_per_rank, uint32_t n);

/* kv_comm_alltoall_ns() under fit instead of kv_comm_fit_shipped. */
double kv_comm_alltoall_fit_ns(const struct kv_link *l, double bytes_per_rank, uint32_t n,
			       const struct kv_comm_fit *fit);

/* One send/recv of bytes between two ranks, ns: NVLink lat_a2a + B / busbw(2) (fitted), else base + hw + B / busbw(2). */
double kv_comm_p2p_ns(const struct kv_link *l, double bytes);

#endif /* KV_COMM_H */
