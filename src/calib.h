/*
 * calib.h -- what `kvsim calibrate` and `kvsim validate` share: running a
 * workload through the real executor or the perf model, and loading a
 * device profile into a loaded workload.
 */
#ifndef KV_CALIB_H
#define KV_CALIB_H

#include "exec.h"
#include "output.h"
#include "workload.h"

#include <stdio.h>

/* Per-request outcome of a run (validate compares two runs). */
struct kv_req_out {
	double ttft_s, tpot_s, e2e_s; /* NaN when not applicable */
	int completed;
};

struct kv_run_result {
	struct kv_req_out *req; /* by request id */
	size_t n_req, cap_req;
	uint64_t peak_reserved_bytes; /* pool high-water mark */
	double reserved_Bs, used_Bs; /* pool integrals: reserved and live-token bytes over time */
	uint64_t iterations;
	double makespan_s;
};

/*
 * Runs w (its cfg possibly edited by the caller) to completion, through a
 * backend of `kind` when kind is non-NULL (e, which must outlive the call,
 * keeps the iteration log and stays open: close it with
 * kv_real_exec_close()), else through the perf model.  Progress on stderr
 * when it is a terminal and !quiet.  Returns 0 or an error code with d
 * filled.
 */
int kv_calib_run(struct kv_workload *w, const char *kind, int threads, int cpu_clock,
		 struct kv_real_exec *e, struct kv_run_result *res, int quiet, struct kv_diag *d);

/* Parses --clock's value: "wall" (0) or "cpu" (1); -1 for anything else. */
int kv_calib_clock(const char *s);

void kv_run_result_free(struct kv_run_result *res);

/* Loads DEVICE into cfg (name or path), keeping nothing of the old device. */
int kv_calib_device(struct kv_sim_config *cfg, const char *device, struct kv_diag *d);

#endif /* KV_CALIB_H */
