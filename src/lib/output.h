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

#include "health.h"
#include "outdir.h"
#include "workload.h"

#define KV_OUT_FILES 7

struct kv_out {
	struct kv_outdir od; /* the output directory: lock, staging, commit */
	const struct kv_workload *w; /* the run's workload */
	FILE *req, *ts, *tser; /* requests.csv, timeseries.csv, tenant_timeseries.csv, or NULL */
	char *final[KV_OUT_FILES]; /* DIR/NAME of each file opened (for messages), NULL when unused */
	char *header; /* manifest header lines ("key value\n"), heap, set by the caller or NULL */
	int opened; /* kv_out_open ran (kv_out_abort has something to release) */
	int failed; /* a write failed */
	int fail_idx; /* the first failed file: index into final[], -1 for the scratch file */
	int fail_errno; /* errno of the first failure */
	int chart_failed; /* the chart was asked for, gnuplot is there, and it failed */
	struct kv_done_log done; /* completed requests' lengths and latencies, for the summary */
	struct kv_health health; /* the health report, filled by kv_out_commit (health.csv) */
	struct kv_mem_trend trend; /* samples summed over replicas, for the health report's growth check */
};

/* The header lines of requests.csv, timeseries.csv, tenant_timeseries.csv and tenants.csv. */
extern const char kv_csv_header_requests[], kv_csv_header_timeseries[],
	kv_csv_header_tenant_timeseries[], kv_csv_header_tenants[];

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
	char path[KV_PATH_MAX], tmp[KV_PATH_MAX + 16];
};
int kv_atomic_open(struct kv_atomic *a, const char *path, struct kv_diag *d);
int kv_atomic_commit(struct kv_atomic *a, struct kv_diag *d);

/* mkdir -p; returns 0 or -1 with errno set. */
int kv_mkdirs(const char *path);

/*
 * Runs gnuplot on script (an absolute path) in directory dir with the
 * variable definitions defs (gnuplot code, strings quoted by kv_gp_quote)
 * and out='.NAME.tmp', with no shell in between (any character is safe in
 * dir and in the strings).  Checks what gnuplot wrote (a PNG's signature and
 * IEND chunk, an SVG's closing tag), since it can exit 0 after a failed
 * write, and renames it to DIR/NAME.  Returns 0, 1 when gnuplot is not
 * installed (a note on stderr), or KV_EIO (a message on stderr naming the
 * file and gnuplot's last error line; nothing left behind).
 */
int kv_gnuplot(const char *dir, const char *script, const char *defs, const char *name);

/* s as a gnuplot double-quoted string ('"' and '\\' escaped), a heap string. */
char *kv_gp_quote(const char *s);

/*
 * The run's setup for chart titles and the manifest's `setup` line: "MODEL
 * on N x DEVICE, scheduler S, cache C, engine E"; a heap string.
 */
char *kv_run_setup(const struct kv_workload *w);

/*
 * Progress on stderr: one line redrawn when stderr is a terminal; with
 * force (--progress) or KVSIM_PROGRESS=1 and stderr not a terminal (CI
 * logs, Slurm), one line every 5 s.  quiet: none.  Call kv_progress_init first.
 */
void kv_progress_init(int quiet, int force);
void kv_progress_cb(void *ctx, const struct kv_sim *s);
void kv_progress_done(void);
/* Starts the clocks again for the next simulation of the same command; the mode is kept. */
void kv_progress_restart(void);
/*
 * A line about a command's own steps (calibrate's grid points, the fit's
 * replays, a sweep's points), printf-style after "kvsim: ", in the mode
 * kv_progress_init chose: redrawn on a terminal at most every 0.25 s, on a
 * log the first at once and then one line every 5 s.  last: the closing
 * line, printed in both modes.
 */
void kv_progress_note(int last, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#endif /* KV_OUTPUT_H */
