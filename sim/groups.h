/*
 * groups.h -- per-group figures of a run with replica groups (groups.csv,
 * docs/cluster.md "Replica groups"): what each group was sent, served and
 * used.
 *
 * A group (engine.h struct kv_group) is a contiguous range of replicas
 * sharing one configuration; its figures are sums over those replicas and
 * over the requests they ended.  Invariant: the groups' requests add up to
 * the run's arrivals, and their replicas to the cluster's.
 */
#ifndef KV_GROUPS_H
#define KV_GROUPS_H

#include "engine.h"

/* One group's row of groups.csv. */
struct kv_group_summary {
	uint64_t gpus; /* replicas x tp x pp x dp */
	uint64_t requests, completed, rejected; /* routed to it, and of those ended */
	uint64_t prompt_tokens, output_tokens; /* of its completed requests */
	uint64_t iterations; /* over its replicas */
	double busy_share; /* time in iterations / (replicas x run span) */
	double mem_reserved_util; /* reserved byte-seconds / (pool x replicas x horizon) */
	double ttft_p50_s, ttft_p99_s, e2e_p50_s, e2e_p99_s; /* of its completed requests; NAN: none */
	double weight_share; /* its routing weight / the weights of the groups serving its model */
	double gpu_hours; /* kv_group_gpu_hours, hours */
	double cost_usd; /* gpu_hours x the device's cost_per_gpu_hour; NAN: no price */
};

/* The CSV header of groups.csv, newline included. */
extern const char kv_csv_header_groups[];

/*
 * The GPU-hours group g held over the run: an autoscaled group's billed
 * replica-seconds x GPUs per replica (autoscale.h: starting, active and
 * draining replicas, up to the end of billing; the last row of
 * autoscale.csv), else every GPU from 0 to the last finish.  Defined in
 * metrics.c, which sums it into the summary.
 */
double kv_group_gpu_hours(const struct kv_sim *s, const struct kv_group *g);

/* Group g's figures after a run. */
void kv_group_summary(const struct kv_sim *s, const struct kv_group *g,
		      struct kv_group_summary *out);

#endif /* KV_GROUPS_H */
