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
 */
#ifndef KV_OUTPUT_H
#define KV_OUTPUT_H

#include "workload.h"

#define KV_OUT_FILES 6

struct kv_out {
	char dir[1024]; /* output directory */
	int created_dir; /* 1 if kv_out_open made it */
	const struct kv_workload *w; /* the run's workload */
	FILE *req, *ts, *tser; /* requests.csv, timeseries.csv, tenant_timeseries.csv, or NULL */
	char tmp[KV_OUT_FILES][1100]; /* temporary names, "" when unused */
	char final[KV_OUT_FILES][1100]; /* final names */
	int failed; /* a write failed */
	int fail_idx; /* the first failed file: index into final[], -1 for the scratch file */
	int fail_errno; /* errno of the first failure */
	FILE *lat; /* unlinked scratch file: (length, E2E) of completed requests, 8 bytes each */
	uint64_t *len_count; /* completed requests per prompt+output length, 0..max_len */
	uint64_t max_len; /* longest length counted exactly (longer ones fold into it) */
};

/* One line of the summary. */
struct kv_summary_item {
	const char *name; /* column name in summary.csv */
	const char *unit; /* unit for the table */
	double value;
	int integer; /* print as an integer */
};

#define KV_SUMMARY_MAX 64

struct kv_summary {
	struct kv_summary_item item[KV_SUMMARY_MAX];
	size_t n;
};

/*
 * Computes the summary of a finished run.  The short/long-request metrics
 * need every completed request's length and latency: the sink keeps them in
 * o's scratch file (8 bytes a request, on disk, so memory during the run
 * stays independent of the request count) and an exact count per length
 * (for the median); o may be NULL (those metrics are then empty).
 */
void kv_summary_compute(const struct kv_sim *s, struct kv_out *o, struct kv_summary *sum);

/* Prints the summary as an aligned table. */
void kv_summary_print(const struct kv_summary *sum, const char *title, FILE *f);

/*
 * Creates dir (and parents) when missing and opens the temporaries.
 * Returns 0 or a negative code with d filled.
 */
int kv_out_open(struct kv_out *o, const char *dir, const struct kv_workload *w, struct kv_diag *d);

/* The sink that streams rows into o. */
struct kv_sink kv_out_sink(struct kv_out *o);

/*
 * Closes the streamed files (checking every write), computes the summary
 * into *sum, writes summary.csv and tenants.csv, renames the files into
 * place and renders the chart when gnuplot is present (a missing gnuplot is
 * a note on stderr, not an error).  Returns 0 or a negative code with d
 * filled (then nothing was renamed).
 */
int kv_out_commit(struct kv_out *o, const struct kv_sim *s, struct kv_summary *sum,
		  struct kv_diag *d);

/*
 * Removes the temporaries (and the directory if this run created it and it
 * is empty).  Also runs at exit for a kv_out opened and neither committed
 * nor aborted (out of memory exits from deep inside a run).
 */
void kv_out_abort(struct kv_out *o);

/* Fills d with the first failed write of o: "FILE: write failed: REASON; no output written". */
void kv_out_error(const struct kv_out *o, struct kv_diag *d);

/*
 * The output layer's file operations, through the fault hook
 * (kv_fault_write, KVSIM_FAIL_WRITE): kv_out_fdopen wraps the descriptor of
 * a new output file in a stream whose buffer writes and close can fail with
 * ENOSPC on demand; kv_out_rename renames.  Without KVSIM_FAIL_WRITE they
 * are fdopen(fd, "w") and rename().
 */
FILE *kv_out_fdopen(int fd);
int kv_out_rename(const char *from, const char *to);

/*
 * One file written atomically outside a run's directory commit (sweep.csv,
 * calibrate's and validate's outputs): written to DIR/.NAME.tmp and renamed
 * into place by kv_atomic_commit(), both through the fault hook above.
 * open fills d (file: the temporary; "cannot create: REASON") and returns
 * KV_EIO, exiting 3 when the stream could not be allocated; commit closes,
 * renames, and on any failure removes the temporary, leaves an earlier file
 * intact and fills d (file: PATH; "write failed: REASON").
 */
struct kv_atomic {
	FILE *f;
	char path[1100], tmp[1120];
};
int kv_atomic_open(struct kv_atomic *a, const char *path, struct kv_diag *d);
int kv_atomic_commit(struct kv_atomic *a, struct kv_diag *d);

/* mkdir -p; returns 0 or -1 with errno set. */
int kv_mkdirs(const char *path);

/*
 * Renders DIR/run.png (or run.svg) from a run's CSVs with plots/run.gp:
 * latency CDFs, KV memory, queue and batch per replica, weighted service per
 * tenant.  tenant_names: space-separated legend names.  A missing gnuplot
 * is a note on stderr and returns 0; a failed render returns KV_EIO.
 */
int kv_plot_run(const char *dir, const char *title, unsigned replicas, unsigned tenants,
		const char *tenant_names, int with_requests, int svg);

/* Progress on stderr when it is a terminal: call kv_progress_init first. */
void kv_progress_init(int quiet);
void kv_progress_cb(void *ctx, const struct kv_sim *s);
void kv_progress_done(void);

#endif /* KV_OUTPUT_H */
