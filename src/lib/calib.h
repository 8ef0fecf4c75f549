/*
 * calib.h -- what `kvsim calibrate` and `kvsim validate` share: running a
 * workload through the real executor or the perf model, and loading a
 * device profile into a loaded workload.
 */
#ifndef KV_CALIB_H
#define KV_CALIB_H

#include "realexec.h"
#include "output.h"
#include "workload.h"

#include <stdio.h>

/* Per-request outcome of a run (validate compares two runs). */
struct kv_req_out {
	double ttft_s, tpot_s, e2e_s; /* NaN when not applicable */
	int completed;
	double arrival_s; /* the request's arrival, s from the run's start */
	uint64_t prompt_tokens, output_tokens; /* its lengths */
};

/* o from q's end: latencies when e is KV_END_COMPLETED (TPOT from two output tokens), else NaN. */
void kv_req_out_record(struct kv_req_out *o, const struct kv_req *q, enum kv_end e);

struct kv_run_result {
	struct kv_req_out *req; /* by request id */
	size_t n_req, cap_req;
	uint64_t peak_reserved_bytes; /* pool high-water mark */
	double reserved_Bs, used_Bs; /* pool integrals: reserved and live-token bytes over time */
	uint64_t iterations;
	double makespan_s;
	size_t n_ended; /* requests ended so far */
	int notes; /* a progress note per ended request (rate-limited): a real run's events are few */
};

/*
 * Runs w (its cfg possibly edited by the caller) to completion, through a
 * backend of `kind` when kind is non-NULL (e, which must outlive the call,
 * keeps the iteration log and stays open: close it with
 * kv_real_exec_close()), else through the perf model.  Unless quiet, the
 * simulation's progress on stderr in the mode the command's
 * kv_progress_init() chose.  Returns 0 or an error code with d filled.
 */
int kv_calib_run(struct kv_workload *w, const char *kind, int threads, int cpu_clock,
		 struct kv_real_exec *e, struct kv_run_result *res, int quiet, struct kv_diag *d);

/* Parses --clock's value: "wall" (0) or "cpu" (1); -1 for anything else. */
int kv_calib_clock(const char *s);

/* --clock for the option parser: *(int *)dst = kv_calib_clock(arg); -1 when arg is neither. */
int kv_calib_clock_arg(const char *arg, void *dst);

/*
 * The clock and BLAS threads a measurement on backend `kind` uses when the
 * options leave them unset (-1): on the CPU one thread timed by its own CPU
 * time, which leaves out the wait for a core on a shared machine; the wall
 * clock with the library's threads when --threads asks for other than 1 or
 * --clock wall is given; on a GPU the wall clock.
 */
void kv_calib_clock_defaults(const char *kind, int *threads, int *cpu_clock);

void kv_run_result_free(struct kv_run_result *res);

/*
 * The machine's load around a measurement.  Other runnable work makes a
 * step's wall time include the wait for a core (and any clock shares the
 * caches and memory bandwidth), so calibrate and validate record the load
 * and warn when it competes.  A load average counts this process's own
 * runnable threads once it runs: "others" is the load before, or the load
 * at the end less `threads`.
 */
struct kv_calib_load {
	double before, during; /* 1-minute load averages; NaN where /proc/loadavg is absent */
	double cpu_s, wall_s; /* this process's CPU and wall seconds while measuring */
	int cores; /* online cores */
	int threads; /* cores the measurement asked for (BLAS threads, else cores) */
	int stopped; /* kv_calib_load_stop() ran: cpu_s and wall_s are spans */
};

/* Starts: the load before and the process's CPU and wall clocks. */
void kv_calib_load_start(struct kv_calib_load *l, int threads);

/* Stops: the load at the end and the CPU and wall seconds since the start. */
void kv_calib_load_stop(struct kv_calib_load *l);

/* The share of the cores asked for the process got while measuring; NaN before a stop. */
double kv_calib_load_share(const struct kv_calib_load *l);

/* "load average 9.31 before, 8.20 while measuring" (or "load average unknown") into buf. */
void kv_calib_load_words(const struct kv_calib_load *l, char *buf, size_t n);

/*
 * Whether other work competed (more runnable work than cores beside the
 * threads measured, or the process got under 80% of its cores); if so the
 * warning (no "kvsim: CMD: " prefix, no newline) into buf of n bytes.
 * Before a stop only the load before is judged.  cpu_clock: the steps were
 * timed by the thread's CPU time.
 */
int kv_calib_load_warning(const struct kv_calib_load *l, int cpu_clock, char *buf, size_t n);

/* Loads DEVICE into cfg (name or path), keeping nothing of the old device. */
int kv_calib_device(struct kv_sim_config *cfg, const char *device, struct kv_diag *d);

/*
 * The calibration grid (`kvsim calibrate`): batches of decodes at a
 * context, prefill chunks after a cached prefix, and the two mixed.  The
 * KV arena is sized for the largest point actually run, each sequence
 * holding the pages its own context needs; sizing it for the most
 * sequences of any point times the longest context of any point gave
 * 128 x 256 pages of 8 MiB = 256 GiB for llama-2-7b on CUDA, a cudaMalloc
 * no 139 GiB card can serve.
 */
struct kv_calib_point {
	const char *what; /* "decode", "prefill" or "mixed" */
	uint32_t nd; /* decode sequences, one new token each */
	uint32_t ctx; /* their cached tokens */
	uint32_t np; /* prefill sequences (0 or 1) */
	uint32_t chunk; /* new tokens of a prefill sequence */
	uint32_t pre; /* its cached tokens */
};

#define KV_CALIB_MAX_GRID 128 /* points kv_calib_grid() writes at most */

/* The default --kv-memory of a backend kind: 40 GiB for cuda, 1 GiB otherwise. */
uint64_t kv_calib_default_kv_memory(const char *kind);

/* Pages of page_tokens tokens that point p's batch holds (each sequence rounds up alone). */
uint64_t kv_calib_point_pages(const struct kv_calib_point *p, uint32_t page_tokens);

/*
 * Fills g (KV_CALIB_MAX_GRID entries) with the grid of backend kind
 * ("cuda": the GPU grid; otherwise the CPU grid, smaller with quick),
 * keeping the points whose sequences fit ctx_max tokens each and whose
 * pages hold at most max_tokens tokens in all.  Returns the points kept.
 */
size_t kv_calib_grid(const char *kind, int quick, uint32_t ctx_max, uint64_t max_tokens,
		     uint32_t page_tokens, struct kv_calib_point *g);

/* What a backend must be opened with to run every point of a grid. */
struct kv_calib_arena {
	uint64_t kv_pages; /* pages of the largest point (kv_calib_point_pages) */
	uint32_t max_seqs; /* most sequences of a point */
	uint32_t max_new; /* most new tokens of a point */
	uint32_t max_ctx; /* longest sequence (cached + new tokens) of a point */
};

/* The arena and batch limits for the n points of g. */
void kv_calib_arena(const struct kv_calib_point *g, size_t n, uint32_t page_tokens,
		    struct kv_calib_arena *a);

/*
 * The batch of point p: decode sequences first, then the prefill one;
 * sequence i holds the next ceil((cached + new) / page_tokens) pages from
 * page 0 (pages needs kv_calib_point_pages() entries), so the batch uses
 * pages [0, kv_calib_point_pages(p)).  Fills seqs (nd + np of them) and
 * the batch's shape as the engine counts it (KV bytes at token_bytes per
 * token).  Returns the number of sequences.
 */
uint32_t kv_calib_point_batch(const struct kv_calib_point *p, uint32_t page_tokens,
			      uint64_t token_bytes, int32_t *pages, struct kv_backend_seq *seqs,
			      struct kv_batch_shape *sh);

/*
 * The stem of a profile path: path without a trailing ".yaml", in stem
 * (len bytes); the files written beside a profile are STEM-NAME.
 */
void kv_calib_stem(const char *path, char *stem, size_t len);

#endif /* KV_CALIB_H */
