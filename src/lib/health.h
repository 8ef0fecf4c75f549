/*
 * health.h -- the health report of a finished run: the seed write-up's
 * operating targets checked against the run's own figures.
 *
 * Six checks, each with a configurable threshold (workload `health:`,
 * struct kv_health_cfg in workload.h): cache hit rate >= 0.85, memory
 * utilisation in 0.60..0.80, Jain's fairness index over tenants >= 0.7,
 * largest contiguous KV block <= 8 MiB, E2E p99 / p50 <= 5 (the
 * long-tail check; the ratio is kvsim's choice, the seed gives none), and
 * memory that keeps growing: reserved KV bytes rising by more than 0.10 of
 * the pool between the two halves of the arrival window while the load
 * (arrival rate, running and waiting requests) stays within 20% (kvsim's
 * figures; the seed names the symptom, not a threshold), judged from the
 * run's samples (struct kv_mem_trend, filled as timeseries.csv is written).
 * A check passes or warns only on the evidence for its verdict; otherwise
 * it is n/a with the reason (the metric does not apply: no cache hit rate,
 * a single tenant; or the run cannot judge it: no token looked up, no
 * request finished, fewer than KV_HEALTH_TAIL_MIN_DONE completed requests
 * for a p99, too few samples, a load that is not flat).  A warning carries the likely cause found in
 * the run's data, with its numbers (preemptions, refusals, a tenant's
 * service share against its weight, the share of over-long requests, the
 * cache's evictions).  docs/health.md explains each check.
 *
 * Usage: kv_mem_trend_add() at every timeseries sample (output.c's sink),
 * kv_health_compute() after kv_summary_compute(), then
 * kv_health_write_csv() (health.csv) and kv_health_print() (stdout).
 */
#ifndef KV_HEALTH_H
#define KV_HEALTH_H

#include "workload.h"

#include <stdio.h>

enum kv_health_status { KV_HEALTH_PASS, KV_HEALTH_WARN, KV_HEALTH_NA };

#define KV_HEALTH_CHECKS 6
#define KV_HEALTH_TAIL_MIN_DONE 100 /* completed requests the tail check needs for a p99, requests */

struct kv_health_check {
	const char *name; /* check name, the first column of health.csv, e.g. "cache_hit_rate" */
	char target[48]; /* the target as text, e.g. ">= 0.85" or "0.60..0.80" */
	double value; /* the measured value (NaN when n/a) */
	enum kv_health_status status; /* pass, warn or n/a (the run holds no evidence either way) */
	char cause[512]; /* warn: the likely cause with its numbers; n/a: why, never ""; pass: "" */
};

#define KV_TREND_CAP 512 /* samples kept for the growth check; halved (every other) when full */

/* The run's samples, summed over replicas, for the memory-growth check (bounded, no allocation). */
struct kv_mem_trend {
	double t[KV_TREND_CAP]; /* sample time, s */
	double reserved[KV_TREND_CAP]; /* pool bytes reserved, bytes */
	double used[KV_TREND_CAP]; /* bytes of live KV tokens, bytes */
	double running[KV_TREND_CAP]; /* requests running, requests */
	double waiting[KV_TREND_CAP]; /* requests waiting, requests */
	double arrived[KV_TREND_CAP]; /* requests arrived so far, requests */
	double cached[KV_TREND_CAP]; /* bytes of cache entries no request uses (evictable), bytes */
	size_t n; /* samples kept */
	uint64_t stride; /* one sample kept every stride offered (0 before the first) */
	uint64_t seen; /* samples offered */
};

/* Offers one sample to m (kept when its index is a multiple of the stride). */
void kv_mem_trend_add(struct kv_mem_trend *m, double t_s, double reserved, double used,
		      double running, double waiting, double arrived, double cached);

/* The header line of health.csv. */
extern const char kv_csv_header_health[];

struct kv_health {
	struct kv_health_check c[KV_HEALTH_CHECKS]; /* in report order */
	size_t n; /* checks filled */
};

/*
 * Checks finished run s (configuration w, summary sum, completed requests
 * log or NULL, samples trend or NULL) against w->health into *h.  Pure:
 * reads only.
 */
void kv_health_compute(const struct kv_sim *s, const struct kv_workload *w,
		       const struct kv_summary *sum, const struct kv_done_log *log,
		       const struct kv_mem_trend *trend, struct kv_health *h);

/* "pass", "warn" or "n/a". */
const char *kv_health_status_name(enum kv_health_status st);

/* Writes health.csv (header check,target,value,status,cause and a row a check) to f; 0 or -1. */
int kv_health_write_csv(const struct kv_health *h, FILE *f);

/* Prints the health section (a title line counting warnings and n/a, and one line a check). */
void kv_health_print(const struct kv_health *h, FILE *f);

#endif /* KV_HEALTH_H */
