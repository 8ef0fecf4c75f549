/*
 * load.h -- how close a run is to saturation: the offered load as a share
 * of the cluster's service capacity.
 *
 * Capacity is the request rate a replica sustains when it is never idle,
 * on the run's own length mix at its batch limits, from the perf model.
 * With P and O the mean prompt and output tokens of the completed requests
 * (O >= 1) and K the mean of O_i * (P_i + O_i/2) over them (the KV a
 * request holds summed over its decode steps, token-steps; K = O*(P + O/2)
 * only when lengths do not vary), a saturated replica in steady state
 * starts a requests per step and keeps a*O sequences running (each occupies
 * a slot for its prefill step and its O - 1 decode steps), so by Little's
 * law one step carries
 *
 *   n_seqs = n_sample = a*O,  n_decode = a*(O - 1),  prefill tokens = a*P,
 *   KV resident = a*K,  attention pairs = a*K*(O - 1)/O + a*P*(P + 1)/2,
 *
 * and a is the largest rate the three batch limits allow:
 *
 *   a = min(max_batch_seqs / O,  max_batch_tokens / (P + O - 1),  kv_tokens / K)
 *
 * and the replica's capacity is a / t(a) requests/s, t the perf model's
 * step time for that shape (kv_perf_iter_ns, so the step-time scale, TP,
 * PP and the engine's GEMM ramp apply); the cluster's is replicas times
 * that.  Counts are rounded to whole tokens and sequences (at least 1).
 * Not modelled: prefix-cache hits (they shorten prefills, so capacity is a
 * lower bound with a shared prefix), preemption and swaps, the front end.
 *
 * The offered rate is the run's own: (arrived - 1) / (last arrival -
 * first arrival).  A second, measured view is the busy share: the
 * replicas' time in iterations / (replicas * makespan).
 *
 * A burst (an offline batch: every request present at once, as in a
 * throughput benchmark) has no arrival rate to speak of: at least 2 arrivals
 * whose span is shorter than 1 / capacity, the time the saturated cluster
 * takes per request, so the cluster could not have served even one request
 * between the first arrival and the last.  Its share is NaN (undefined).
 * docs/metrics.md "Load" derives and discusses both.  Pure functions.
 */
#ifndef KV_LOAD_H
#define KV_LOAD_H

#include "engine.h"

/* Where a run stands against its capacity. */
struct kv_load {
	double offered_req_s; /* arrivals per second over the arrival span; NaN: under 2 arrivals */
	double capacity_req_s; /* cluster's saturated request rate on the run's length mix; NaN: none completed */
	double share; /* offered_req_s / capacity_req_s; NaN when either is or in a burst */
	double arrival_span_s; /* last arrival - first arrival, s */
	int burst; /* 1: the arrivals form a burst (header), share is NaN */
	double busy_share; /* time in iterations / (replicas * makespan), 0..1; NaN: empty run */
};

/* A workload's length mix and a replica's limits, the inputs of its capacity. */
struct kv_load_mix {
	double prompt_mean; /* P, tokens (read as >= 1) */
	double output_mean; /* O, tokens (read as >= 1) */
	double kv_steps_mean; /* K, token-steps; 0: O * (P + O/2) */
	uint32_t max_seqs; /* sequences per step (batching.max_seqs) */
	uint64_t budget_tokens; /* tokens per step (batching.max_tokens) */
	uint64_t kv_tokens; /* KV capacity, tokens */
	uint64_t token_bytes; /* KV bytes per token, whole replica */
};

/*
 * A replica's saturated request rate (requests/s) for mix x under perf
 * constants pf (the header's a / t).  0 when a limit is 0.
 */
double kv_load_replica_capacity(const struct kv_perf *pf, const struct kv_load_mix *x);

/* The load of finished run s. */
void kv_load_compute(const struct kv_sim *s, struct kv_load *l);

/*
 * One replica of group g's saturated request rate (requests/s) for
 * requests of P prompt and O output tokens on average (kv_load_replica_capacity
 * with the group's batching, KV capacity and perf model).  Needs the
 * group's first replica built (its cache model's bytes per token).
 */
double kv_load_group_capacity(const struct kv_sim *s, const struct kv_group *g, double P, double O);

/* Share of capacity above which a run is near saturation (the warning of `kvsim run`). */
#define KV_LOAD_WARN_SHARE 0.9

#endif /* KV_LOAD_H */
