/*
 * output.h -- a run's output directory: requests.csv, timeseries.csv,
 * summary.csv and a PNG chart, written atomically.
 *
 * Every file is written under a temporary name in the output directory and
 * renamed into place only when the whole run succeeded (kv_out_commit);
 * kv_out_abort removes the temporaries, and the directory when this run
 * created it, so a failed or interrupted run leaves no half-written output.
 * Rows are streamed as requests end and samples are taken: memory does not
 * grow with the run.
 *
 * output.c: opening, the files written at the end, the commit and abort;
 * out_csv.c: the CSV sinks (rows streamed as the run goes) and the record
 * of a failed write; summary_print.c: the printed summary.  Below them:
 * outdir.h (the directory), outfault.h (the write fault hook), atomic.h,
 * gnuplot.h and progress.h, included here for the commands that use them.
 */
#ifndef KV_OUTPUT_H
#define KV_OUTPUT_H

#include "atomic.h"
#include "gnuplot.h"
#include "health.h"
#include "outdir.h"
#include "outfault.h"
#include "progress.h"
#include "workload.h"

/* The files of a run, indices into kv_out.final[]. */
enum {
	KV_OUT_REQ, /* requests.csv */
	KV_OUT_TS, /* timeseries.csv */
	KV_OUT_SUM, /* summary.csv */
	KV_OUT_TEN, /* tenants.csv */
	KV_OUT_TSER, /* tenant_timeseries.csv */
	KV_OUT_PNG, /* run.png */
	KV_OUT_HEALTH, /* health.csv */
	KV_OUT_AS, /* autoscale.csv (with autoscale: only) */
	KV_OUT_GROUPS, /* groups.csv (only with cluster.groups) */
	KV_OUT_DISAGG, /* disagg.csv (prefill/decode disaggregation only) */
	KV_OUT_TIERS, /* tiers.csv (only with tiers below the pool) */
	KV_OUT_FILES
};

struct kv_out {
	struct kv_outdir od; /* the output directory: lock, staging, commit */
	const struct kv_workload *w; /* the run's workload */
	FILE *req, *ts, *tser; /* requests.csv, timeseries.csv, tenant_timeseries.csv, or NULL */
	FILE *as; /* autoscale.csv, or NULL (no autoscale:) */
	char *final[KV_OUT_FILES]; /* DIR/NAME of each file opened (for messages), NULL when unused */
	char *header; /* manifest header lines ("key value\n"), heap, set by the caller or NULL */
	int opened; /* kv_out_open ran (kv_out_abort has something to release) */
	int failed; /* a write failed */
	int fail_idx; /* the first failed file: index into final[], -1 for the scratch file */
	int fail_errno; /* errno of the first failure */
	int chart_failed; /* the chart was asked for, gnuplot is there, and it failed */
	int disagg; /* the run disaggregates prefill and decode: requests.csv has xfer_s, disagg.csv is written */
	struct kv_done_log done; /* completed requests' lengths and latencies, for the summary */
	struct kv_health health; /* the health report, filled by kv_out_commit (health.csv) */
	struct kv_mem_trend trend; /* samples summed over replicas, for the health report's growth check */
};

/* The header lines of requests.csv, timeseries.csv, tenant_timeseries.csv, tenants.csv and tiers.csv. */
extern const char kv_csv_header_requests[], kv_csv_header_timeseries[],
	kv_csv_header_tenant_timeseries[], kv_csv_header_tenants[], kv_csv_header_autoscale[],
	kv_csv_header_tiers[];

/* disagg.csv's header; its rows (out_disagg.c): 0, or -1 when a write failed. */
extern const char kv_csv_header_disagg[];
int kv_out_disagg_rows(FILE *f, const struct kv_sim *s);

/* Prints the summary as an aligned table. */
void kv_summary_print(const struct kv_summary *sum, const char *title, FILE *f);

/*
 * Opens dir as an output directory (outdir.h: locked, staged, replaced
 * whole at the commit; flags KV_OUTDIR_*) and creates the streamed files in
 * its staging directory.  Returns 0 or a negative code with d filled
 * (KV_EINVAL: a bad or foreign directory, exit 2; KV_EIO: exit 1).
 */
int kv_out_open(struct kv_out *o, const char *dir, const struct kv_workload *w, unsigned flags,
		struct kv_diag *d);

/* The sink that streams rows into o. */
struct kv_sink kv_out_sink(struct kv_out *o);

/*
 * Closes the streamed files (checking every write), computes the summary
 * into *sum, writes summary.csv, tenants.csv and health.csv (the report
 * in o->health), renders run.png when the
 * workload asks for a chart and gnuplot is present (a missing gnuplot is a
 * note on stderr; a failed chart sets o->chart_failed and is left out),
 * writes manifest.txt and commits the directory in one rename.  Returns 0
 * or a negative code with d filled (then DIR is as it was).
 */
int kv_out_commit(struct kv_out *o, const struct kv_sim *s, struct kv_summary *sum,
		  struct kv_diag *d);

/*
 * Removes the staging directory and unlocks (after a commit: only
 * unlocks).  Also runs at exit for a kv_out opened and neither committed
 * nor aborted (out of memory exits from deep inside a run).
 */
void kv_out_abort(struct kv_out *o);

/* Fills d with the first failed write of o: "FILE: write failed: REASON; no output written". */
void kv_out_error(const struct kv_out *o, struct kv_diag *d);

/*
 * Records the first failed write of o: which file (KV_OUT_*, or -1 for the
 * scratch file) and errno (EIO when errno is 0); later failures are ignored.
 */
void kv__out_failed(struct kv_out *o, int idx);
/* The last autoscale.csv row: the replicas and GPU-hours at the end of the run (out_csv.c). */
void kv__out_scale_end(struct kv_out *o, const struct kv_sim *s);

/*
 * The run's setup for chart titles and the manifest's `setup` line: "MODEL
 * on N x DEVICE, scheduler S, cache C, engine E"; a heap string.
 */
char *kv_run_setup(const struct kv_workload *w);

#endif /* KV_OUTPUT_H */
