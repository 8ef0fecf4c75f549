/*
 * fromrun.h -- a recorded serving run: read it, replay it in the simulator,
 * score a device profile on it, and fit the perf coefficients to it
 * (`kvsim calibrate --from-run`, `kvsim validate --from-run`).
 *
 * A run is what a user measured on their own deployment, one row per
 * request: when it was sent, its prompt and output tokens, its TTFT and
 * E2E (and so its TPOT, (E2E - TTFT) / (output - 1)).  Three formats, found
 * from the content (docs/calibration.md, "From a recorded serving run"):
 *
 *   vllm-json  the result vLLM's benchmark client saves with --save-result
 *              --save-detailed: parallel arrays input_lens, output_lens,
 *              ttfts, start_times, latencies (or e2els) and itls, errors.
 *   csv        a header naming columns arrival_s, prompt_tokens,
 *              output_tokens, ttft_s and e2e_s or itl_s (tpot_s is read as
 *              itl_s; each time column may end in _ms instead); a status
 *              column, when present, keeps only "completed" or "ok" rows;
 *              other columns are ignored, so kvsim's own requests.csv is a run.
 *   jsonl      one JSON object per line with the same keys as csv's columns.
 *
 * The run is replayed through the simulator with the deployment's settings
 * (a kvsim workload: model, device, cluster, batching, scheduler, cache)
 * whose workload section is replaced by the run's requests, at their send
 * times and lengths, as a trace (a temporary vidur CSV that sim/trace.c
 * reads).  Request i of the replay is row i of the run in send order.
 *
 * Bounds (a value outside is a unit error or a broken clock, refused with
 * file:line:col, the field, the value and the bound): token counts in
 * [1, KV_RUN_MAX_TOKENS]; TTFT in [KV_RUN_MIN_TIME_S, KV_RUN_MAX_TIME_S];
 * E2E and the inter-token latency at most KV_RUN_MAX_TIME_S; send times
 * spanning at most 1e9 s.
 *
 * Memory: CSV and JSON lines are read as streams, one record at a time;
 * the requests kept are the first KV_RUN_MAX_REQUESTS by send time (ties in
 * file order), chosen while reading by sorting and cutting whenever twice
 * that many are held, so memory stays under 2 * KV_RUN_MAX_REQUESTS rows
 * whatever the file's length; n_dropped counts the rest.  vLLM's JSON is
 * one document, read whole: at most KV_RUN_MAX_BYTES and KV_RUN_MAX_VALUES
 * JSON values.
 *
 * Invariant: a loaded run has 1 <= n <= KV_RUN_MAX_REQUESTS requests sorted
 * by arrival_ns (ties in file order), the first at 0, every one within the
 * bounds above and with TTFT <= E2E.
 */
#ifndef KV_FROMRUN_H
#define KV_FROMRUN_H

#include "calib.h"
#include "workload.h"

#include <stdio.h>

/* One request of a recorded run. */
struct kv_run_req {
	kv_ns arrival_ns; /* send time after the run's first request, ns */
	uint64_t prompt_tokens; /* >= 1 */
	uint64_t output_tokens; /* >= 1 */
	double ttft_s; /* measured time to first token, s, > 0 */
	double e2e_s; /* measured end-to-end latency, s, >= ttft_s */
	double tpot_s; /* (e2e - ttft) / (output - 1), s; NaN when output_tokens < 2 */
	unsigned long line; /* 1-based line of the row (vllm-json: of its input_lens element) */
	uint64_t seq; /* 0-based row of the file (failed rows counted): breaks send-time ties */
};

struct kv_run {
	char path[1024]; /* the file, for messages */
	const char *format; /* "vllm-json", "csv" or "jsonl" */
	struct kv_run_req *req; /* n requests in send order, owned */
	size_t n, cap;
	size_t n_failed; /* requests the run records as failed: left out */
	size_t n_dropped; /* completed requests past the first KV_RUN_MAX_REQUESTS by send time */
	uint64_t n_rows; /* rows read (completed, failed and dropped) */
};

#define KV_RUN_MAX_BYTES ((size_t)1 << 30) /* largest vLLM JSON read (whole), 1 GiB */
#define KV_RUN_MAX_VALUES ((size_t)1 << 22) /* most values in a vLLM JSON (88 B of tree each) */
#define KV_RUN_MAX_REQUESTS ((size_t)200000) /* requests kept: the first by send time */
#define KV_RUN_MAX_TOKENS 16777216.0 /* largest prompt or output, tokens (2^24) */
#define KV_RUN_MIN_TIME_S 1e-6 /* shortest TTFT, s: 1 us (a TTFT is at least one forward pass) */
#define KV_RUN_MAX_TIME_S 86400.0 /* longest TTFT, E2E or inter-token latency, s: one day */

/*
 * Reads the run at path (any of the three formats).  Returns 0, or a
 * negative code with d naming file:line:col, the field, the bad value and
 * what was expected (KV_EINVAL), the open error, or KV_EINTR when
 * kv_run_catch_signals()'s handler saw SIGINT or SIGTERM.  Release r in
 * every case.
 */
int kv_run_load(struct kv_run *r, const char *path, struct kv_diag *d);

/* Same over len bytes at text, reported as file name (tests, fuzzing). */
int kv_run_load_mem(struct kv_run *r, const char *name, const char *text, size_t len,
		    struct kv_diag *d);

/*
 * From here on SIGINT and SIGTERM only set a flag: the reader stops at its
 * next row and a replay within 16384 events, both with KV_EINTR, so the
 * command can say so and exit 128 + the signal.  A second signal of the same
 * kind kills at once (SA_RESETHAND).  kv_run_stopped() is the signal, 0 when
 * none came.
 */
void kv_run_catch_signals(void);
int kv_run_stopped(void);

void kv_run_release(struct kv_run *r);

/*
 * A run's engine steps (src/lib/fromrun_steps.c): each step's batch
 * composition and duration, in the columns `kvsim validate` writes as
 * iterations.csv (n_seqs, n_decode, n_prefill_tokens, n_sample, attn_pairs,
 * kv_read_bytes, measured_ms).  real_ns is the recorded duration.
 */
struct kv_steps {
	char path[1024]; /* the file, for messages */
	struct kv_iter_rec *rec; /* n steps in file order, owned */
	size_t n, cap;
};

#define KV_STEPS_MAX ((size_t)1 << 22) /* most steps read */

/*
 * Reads the steps at path.  0, or KV_EINVAL (d: file:line, the column, the
 * bad value, what was expected) or KV_EIO.  Release st in every case.
 */
int kv_steps_load(struct kv_steps *st, const char *path, struct kv_diag *d);

void kv_steps_release(struct kv_steps *st);

/* Writes st in the format kv_steps_load reads; 0 or KV_EIO with d filled (atomic). */
int kv_steps_write(const char *path, const struct kv_steps *st, struct kv_diag *d);

/*
 * kv_steps_write's columns and, after them, each step's predicted time
 * pred_ns[i] as fitted_ms and rel_error (fitted / measured - 1), as validate's
 * iterations.csv has them; kv_steps_load reads it back.
 */
int kv_steps_write_fitted(const char *path, const struct kv_steps *st, const double *pred_ns,
			  struct kv_diag *d);

/* The simulator set up to replay a run. */
struct kv_replay {
	struct kv_workload *w; /* the settings; its source now reads the run's trace */
	const struct kv_run *run; /* the replayed run */
	const struct kv_steps *steps; /* the run's recorded steps, fitted beside its requests; NULL: none */
	const struct kv_executor *exec; /* kv_replay_steps' recorder while it runs; else NULL */
	int fd; /* the temporary trace, open; -1 when none */
	char trace[1000]; /* its name for the simulator: /proc/self/fd/FD, or a file to remove */
	int named; /* 1: trace is a real name (no /proc), removed by kv_replay_release() */
};

/*
 * Writes run's requests as a temporary trace and points w's source at it
 * (arrivals and lengths from the run, one tenant, no timeseries).  The
 * trace has no name on disk: it is created unnamed in $TMPDIR (O_TMPFILE),
 * or created and unlinked at once where the file system lacks O_TMPFILE,
 * and the simulator opens it as /proc/self/fd/FD, so no signal, not even
 * SIGKILL, can leave it behind.  Only without /proc is it a named file,
 * removed by kv_replay_release().  w and run must outlive rp.  Returns 0,
 * or KV_EIO with d filled.
 */
int kv_replay_init(struct kv_replay *rp, struct kv_workload *w, const struct kv_run *run,
		   struct kv_diag *d);

/*
 * Replays the run with device dev; res by request (= run row).  0 or a code
 * with d filled; KV_EINTR when SIGINT or SIGTERM came (kv_run_catch_signals).
 * Progress on stderr in the mode the command's kv_progress_init chose.
 */
int kv_replay_run(struct kv_replay *rp, const struct kv_device *dev, struct kv_run_result *res,
		  struct kv_diag *d);

void kv_replay_release(struct kv_replay *rp);

/*
 * Replays the run with device dev and records every step the replay runs
 * (its shape, and its duration as real_ns) into st (released by the
 * caller).  0 or a code with d filled.
 */
int kv_replay_steps(struct kv_replay *rp, const struct kv_device *dev, struct kv_steps *st,
		    struct kv_diag *d);

/*
 * The perf model's time of each step of st, ns, into pred_ns (st->n values),
 * with device dev and the settings' host (its engine, version and host
 * profile).  0 or a code with d filled.
 */
int kv_steps_perf(struct kv_replay *rp, const struct kv_device *dev, const struct kv_steps *st,
		  double *pred_ns, struct kv_diag *d);

/* TTFT, TPOT, E2E: the metrics scored. */
enum { KV_RUN_TTFT, KV_RUN_TPOT, KV_RUN_E2E, KV_RUN_METRICS };
/* mean, p90, p99: the statistics of each. */
enum { KV_RUN_MEAN, KV_RUN_P90, KV_RUN_P99, KV_RUN_STATS };

extern const char *const kv_run_metric_name[KV_RUN_METRICS]; /* "ttft", "tpot", "e2e" */
extern const char *const kv_run_stat_name[KV_RUN_STATS]; /* "mean", "p90", "p99" */

/*
 * A profile's error on requests [from, to) of a run: each statistic of the
 * simulated requests against the same statistic of the measured ones
 * (p90 and p99 by nearest rank), over the requests the simulation
 * completed; the signed error is predicted / measured - 1.
 */
struct kv_run_score {
	double pred[KV_RUN_METRICS][KV_RUN_STATS]; /* s */
	double meas[KV_RUN_METRICS][KV_RUN_STATS]; /* s */
	double mape[KV_RUN_METRICS]; /* mean |pred / meas - 1| over the requests, per request */
	size_t n[KV_RUN_METRICS]; /* requests scored for each metric */
	size_t n_missing; /* requests in [from, to) the simulation did not complete */
	size_t from, to; /* the requests scored */
};

void kv_run_score(const struct kv_run *run, const struct kv_run_result *res, size_t from,
		  size_t to, struct kv_run_score *sc);

/* Signed error of a statistic in percent: 100 (pred / meas - 1); NaN when meas is 0 or NaN. */
double kv_run_score_err(const struct kv_run_score *sc, int metric, int stat);

/*
 * Writes the score as CSV rows "LABEL,metric,stat,predicted_s,measured_s,
 * error_pct,requests" (no header; errors: the stream's flag); a cell that cannot
 * be judged (no requests scored, a measured 0) is empty.
 */
void kv_run_score_csv(FILE *f, const char *label, const struct kv_run_score *sc);

/* Prints the score as a table, one row per metric and statistic. */
void kv_run_score_print(FILE *f, const struct kv_run_score *sc);

/*
 * The coefficients fitted: the device's four (eff_attn a fifth on request,
 * with step records: a step's attention pairs separate it from the
 * per-token terms),
 * then (fit_host) the host's four groups a step's shape separates (host.h):
 * per step (sched), per
 * scheduled sequence (sched_seq, prep_seq folded in), per scheduled token
 * (prep_token, block and hash folded in at N / B), per sampling sequence
 * (sample, detok folded in).
 */
enum {
	KV_RFIT_BW, KV_RFIT_FLOPS, KV_RFIT_OVERHEAD, KV_RFIT_PER_SEQ,
	KV_RFIT_ATTN, /* eff_attn: fitted with step records only */
	KV_RFIT_DEV_N, /* the device's coefficients come first */
	KV_RFIT_SCHED = KV_RFIT_DEV_N, KV_RFIT_SCHED_SEQ, KV_RFIT_PREP_TOKEN, KV_RFIT_SAMPLE,
	KV_RFIT_N
};

/* What a fit found. */
struct kv_run_fit {
	struct kv_device dev; /* the start device with the fitted coefficients */
	int ks[KV_RFIT_N], np; /* the coefficients fitted: ks[0 .. np) (the others kept their start) */
	struct kv_host_profile host0; /* fit_host: the settings' host terms, resolved and folded */
	struct kv_host_profile host; /* fit_host: host0 with the fitted terms (a host profile) */
	const char *host_mode; /* fit_host: how CPU and GPU time combine ("sync", "async", ...) */
	double start[KV_RFIT_N]; /* start values (eff: share, eff_attn as attention runs; the others: ns) */
	double val[KV_RFIT_N]; /* fitted values, same units */
	double lo[KV_RFIT_N], hi[KV_RFIT_N]; /* 95% confidence interval, same units */
	double cost0, cost; /* sum of squared residuals at the start and at the optimum */
	size_t n_res; /* residuals: log ratios of TTFT, TPOT, E2E summed over windows of 10 fit requests */
	unsigned evals; /* replays run (each costs one simulation of the whole run) */
	unsigned iters; /* trust-region iterations */
	int capped; /* 1 when the evaluation cap stopped the fit */
	const char *why; /* why it stopped, for the report */
};

extern const char *const kv_run_fit_name[KV_RFIT_N]; /* "eff_bw", ..., "sched", ... */

/*
 * Fits the coefficients to requests [0, n_fit) of rp's run, starting from
 * device start, with at most max_evals replays: one descent from the start,
 * or with multi a deterministic multi-start (screened grids and descents
 * from their best points; fromrun_fit.c).  With fit_host 1 the host's four
 * groups are fitted with them (fit_host 2: the host's alone, the device
 * held at start, one descent), starting from the settings' host terms
 * (resolved for its engine version and host profile, the folded terms
 * summed in): the replay combines CPU and GPU time as the engine does, so
 * an async engine's max(CPU, GPU) + sync is fitted as such; with CPU and
 * GPU in sequence overhead and per_seq are held at start (they add to sched
 * and sched_seq in every step: f->ks lists what was fitted).  With
 * rp->steps the residuals are the steps' (log predicted / recorded step
 * time) and no replay runs; without, the requests' windows.  With fit_attn
 * (rp->steps needed, fit_host not 2) eff_attn is fitted too, from the
 * start's attention rate (its eff_attn, or eff_flops when that is 0), and
 * the profile written holds it.  It needs the
 * host model on and no engine.host_* option set (an option overrides the
 * host profile the fit adjusts): else KV_EINVAL with d saying which.  On
 * return rp's settings hold the start host (f->host0).  Returns 0, or a
 * negative code with d filled (a replay that failed; KV_ERANGE when GSL
 * failed).
 */
int kv_run_fit(struct kv_replay *rp, const struct kv_device *start, size_t n_fit,
	       unsigned max_evals, int multi, int fit_host, int fit_attn, struct kv_run_fit *f,
	       struct kv_diag *d);

/*
 * Writes the host profile h (name, cpu_speed and every coefficient) to
 * path, after the comment lines of header; `kvsim run --set host=PATH`
 * reads it.  Returns 0, or KV_EIO with d filled; replaced atomically.
 */
int kv_run_write_host(const char *path, const struct kv_host_profile *h, const char *header,
		      struct kv_diag *d);

/*
 * Writes dev as a device profile `kvsim run` reads (--set device=PATH),
 * after the comment lines of header (each line gets "# ").  Returns 0, or
 * KV_EIO with d filled; the file is replaced atomically.
 */
int kv_run_write_profile(const char *path, const struct kv_device *dev, const char *header,
			 struct kv_diag *d);

/* The commands (src/cmd_fromrun.c): `calibrate --from-run` and `validate --from-run`. */
int kv_fromrun_wanted(int argc, char **argv); /* 1 when argv holds --from-run */
int kv_cmd_calibrate_from_run(int argc, char **argv);
int kv_cmd_validate_from_run(int argc, char **argv);

#endif /* KV_FROMRUN_H */
