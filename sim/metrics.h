/*
 * metrics.h -- constant-memory latency histograms and run statistics.
 *
 * A kv_hist records non-negative integer values (ns) in log-linear buckets:
 * values below 2^KV_HIST_SUB are exact; above, each power of two is split
 * into 2^KV_HIST_SUB buckets, so a reported quantile is within a relative
 * error of 2^-KV_HIST_SUB (0.2% for 9) of the exact order statistic.  That
 * keeps a run's memory independent of its request count (the design's
 * streaming rule) while quantiles stay far finer than any latency target.
 * Quantiles use the nearest-rank definition and report the bucket's
 * midpoint (exact values below 2^KV_HIST_SUB).
 *
 * The run's summary is computed here too, so tests and sweeps get the
 * headline numbers without the output layer: kv_summary_compute() fills a
 * struct kv_summary (name, unit, value; the columns of summary.csv, in
 * kv_summary_names[] order), kv_tenant_summary() one tenant's shares and
 * quantiles (tenants.csv).  The short/long-request metrics need every
 * completed request's length and latency: a struct kv_done_log keeps them
 * in an unlinked scratch file (8 bytes a request, so memory stays
 * independent of the request count) and an exact count per length (for the
 * median); src/lib/output.c feeds one from its sink.
 */
#ifndef KV_METRICS_H
#define KV_METRICS_H

#include "kv_common.h"
#include "source.h"

#define KV_HIST_SUB 9
#define KV_HIST_BUCKETS ((64 - KV_HIST_SUB + 1) << KV_HIST_SUB)

struct kv_hist {
	uint64_t n; /* values recorded */
	double sum; /* sum of values */
	uint64_t min, max; /* extremes, exact */
	uint32_t *count; /* KV_HIST_BUCKETS counters, allocated by init */
};

void kv_hist_init(struct kv_hist *h);
void kv_hist_release(struct kv_hist *h);
void kv_hist_add(struct kv_hist *h, uint64_t v);

/* Nearest-rank quantile q in [0, 1] (0 when empty). */
uint64_t kv_hist_quantile(const struct kv_hist *h, double q);

/* Mean (0 when empty). */
double kv_hist_mean(const struct kv_hist *h);

/* Jain's fairness index (sum x)^2 / (n * sum x^2) over n values; 1 when n == 0 or all zero. */
double kv_jain(const double *x, size_t n);

struct kv_sim;
struct kv_req;
struct kv_sim_config;

/* --- the summary ------------------------------------------------------------- */

/* One line of the summary. */
struct kv_summary_item {
	const char *name; /* column name in summary.csv (kv_summary_names[]) */
	const char *unit; /* unit for the printed table */
	double value; /* NaN: not applicable (an empty cell) */
	int integer; /* print as an integer */
};

#define KV_SUMMARY_MAX 64

struct kv_summary {
	struct kv_summary_item item[KV_SUMMARY_MAX];
	size_t n; /* items filled */
};

/* The summary's names in order (the numeric columns of summary.csv), NULL-terminated. */
extern const char *const kv_summary_names[];

/* --- service-level objectives (workload `slo:`) --------------------------------- */

/*
 * A request meets its SLOs when each per-request limit set holds for it:
 * TTFT = first token - arrival, TPOT = (finish - first token) / (output
 * tokens - 1) (0 for one output token; ITL is the same figure, kvsim keeps
 * no per-token gaps), E2E = finish - arrival.  A request that ends rejected
 * or never ends meets none.  Percentile SLOs (e.g. ttft_p99 <= 1 s) are
 * judged on the run's histograms instead.  SLO attainment is the share of
 * arrived requests that meet every per-request SLO; goodput is their
 * number (and their prompt+output tokens) per second of makespan: the
 * requests-per-second-within-SLO figure of DistServe (Zhong et al.,
 * "DistServe: Disaggregating Prefill and Decoding for Goodput-optimized
 * Large Language Model Serving", OSDI'24, section 2).
 */
enum kv_slo_metric { KV_SLO_TTFT, KV_SLO_TPOT, KV_SLO_E2E, KV_SLO_METRICS };

#define KV_SLO_MAX_PCT 16

/* One percentile SLO: quantile q of metric m at most max_ns. */
struct kv_slo_pct {
	enum kv_slo_metric m; /* which latency */
	double q; /* quantile in (0, 1), e.g. 0.99 */
	kv_ns max_ns; /* limit, ns */
	char name[32]; /* the summary column it is judged on, e.g. "ttft_p99_s" */
};

/* A set of per-request limits (0: no limit on that metric). */
struct kv_slo_limits {
	kv_ns max_ns[KV_SLO_METRICS]; /* per-request limit per metric, ns; 0 = none */
};

struct kv_slo_cfg {
	int on; /* the workload has an slo: section (the SLO columns appear) */
	struct kv_slo_limits all; /* per-request limits for every tenant */
	struct kv_slo_limits tenant[KV_MAX_TENANTS]; /* per tenant: all's, with its overrides */
	struct kv_slo_pct pct[KV_SLO_MAX_PCT]; /* percentile SLOs of the whole run */
	uint32_t n_pct; /* entries of pct used */
};

/* The SLO metric names as workload keys ("ttft", "tpot", "e2e"). */
extern const char *const kv_slo_metric_names[KV_SLO_METRICS];

/*
 * 1 when a completed request with these latencies (ns) meets every limit
 * of l.  Pure; tests call it directly.
 */
int kv_slo_meets(const struct kv_slo_limits *l, kv_ns ttft_ns, kv_ns tpot_ns, kv_ns e2e_ns);

/* GPUs a configuration occupies: replicas x tensor parallel x pipeline stages. */
uint64_t kv_cfg_gpus(const struct kv_sim_config *c);

/*
 * The completed requests' (length, E2E) pairs for the short/long-request
 * metrics: an unlinked scratch file and a count per length 0..max_len
 * (longer lengths fold into max_len).
 */
struct kv_done_log {
	FILE *lat; /* unlinked scratch file: (length, E2E) of completed requests, 8 bytes each */
	uint64_t *len_count; /* completed requests per prompt+output length, 0..max_len */
	uint64_t max_len; /* longest length counted exactly (longer ones fold into it) */
	const struct kv_slo_cfg *slo; /* SLOs to count against, NULL or off: none */
	uint64_t slo_met[KV_MAX_TENANTS]; /* completed requests meeting their SLOs, per tenant */
	uint64_t slo_met_tokens[KV_MAX_TENANTS]; /* their prompt + output tokens, per tenant */
};

/*
 * Allocates the counts and creates the scratch file.  Returns 0, or KV_EIO
 * with d filled ("tmpfile: cannot create a scratch file: REASON"); out of
 * memory exits (kv_oom).  Release with kv_done_log_release either way.
 */
int kv_done_log_init(struct kv_done_log *l, uint64_t max_len, const struct kv_slo_cfg *slo,
		     struct kv_diag *d);

/* Records completed request q.  Returns 0, or -1 when the scratch write failed. */
int kv_done_log_add(struct kv_done_log *l, const struct kv_req *q);

/* Closes the scratch file and frees the counts (a zeroed or released log is a no-op). */
void kv_done_log_release(struct kv_done_log *l);

/*
 * Computes the summary of finished run s into *sum.  log: the completed
 * requests for the short/long-request metrics, or NULL (those metrics are
 * then NaN); it is read from the start (the scratch file is rewound).
 */
void kv_summary_compute(const struct kv_sim *s, struct kv_done_log *log, struct kv_summary *sum);

/* The value of the summary item named name, or NaN when there is none. */
double kv_summary_get(const struct kv_summary *sum, const char *name);

/* One tenant's figures beyond its counters (tenants.csv). */
struct kv_tenant_summary {
	double service_share; /* its service / all tenants' service (0 when none was served) */
	double weight_share; /* its weight / the sum of weights */
	double ttft_p50_s, ttft_p99_s; /* time to first token, s (NaN: no first token) */
	double e2e_p50_s, e2e_p99_s; /* end-to-end latency, s (NaN: none completed) */
	double slo_attainment; /* share of its arrived requests meeting its SLOs (NaN: no slo:) */
	double goodput_req_s, goodput_tok_s; /* its requests (tokens) meeting them per second */
};

/*
 * Computes tenant i's figures of finished run s; log: the completed
 * requests (for the SLO figures), or NULL (then those are NaN).
 */
void kv_tenant_summary(const struct kv_sim *s, const struct kv_done_log *log, uint32_t i,
		       struct kv_tenant_summary *t);

/* --- the tiers below the pool (tiers.h; tiers.csv) ---------------------------------- */

#include "tiers.h"

/* One tier kind over one group's replicas (a shared tier counted once). */
struct kv_tier_row {
	const char *group; /* the replica group's name ("" for the single group) */
	const char *name; /* "cpu", "ssd", "remote" */
	struct kv_tier_cfg cfg; /* its parameters (the first replica's) */
	struct kv_tier_stats st; /* counters, summed */
	uint64_t hit_tokens; /* prefix tokens loaded from it */
	uint64_t lookup_tokens; /* prompt tokens its group's replicas looked up */
	uint32_t instances; /* tier instances summed (replicas, or 1 when shared) */
};

/* The run's tier totals. */
struct kv_tier_totals {
	uint64_t lookup_tokens; /* prompt tokens looked up (the cache model's) */
	uint64_t gpu_out_bytes; /* bytes the pools evicted into the tiers */
	uint64_t load_tokens, loads; /* tokens loaded, admissions that loaded */
	double wait_s; /* their waits for the loads, summed, s */
	double recompute_s; /* a lone prefill of their loaded tokens, summed, s */
};

/*
 * The rows of tiers.csv, one per tier kind present in each group, in group
 * order, into rows[0..n) (at most max); returns n (0: the run has no
 * tiers).  Reads the replicas' cache models (stats).
 */
uint32_t kv_tier_summary(const struct kv_sim *s, struct kv_tier_row *rows, uint32_t max,
			 struct kv_tier_totals *tot);

#endif /* KV_METRICS_H */
