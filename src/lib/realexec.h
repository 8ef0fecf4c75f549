/*
 * realexec.h -- the real executor: connects a simulation's replica to an
 * execution backend (gpu/exec.h), so that every batch the scheduler forms
 * runs for real and the measured time advances the clock.
 *
 * The backend's KV pages are the replica pool's units: a request's holding,
 * listed by its cache model's units() hook in token order, is its page
 * table.  That needs one page (page_tokens tokens at the backend's element
 * size) to be exactly one pool unit, so kv_real_exec_open() checks it and
 * names the memory.min_block that would fit when it is not.
 *
 * Every iteration is logged (shape, perf-model prediction, measured time)
 * for `kvsim validate` and `kvsim calibrate`.
 */
#ifndef KV_REALEXEC_H
#define KV_REALEXEC_H

#include "../../gpu/exec.h"
#include "../../sim/engine.h"

/* One executed iteration. */
struct kv_iter_rec {
	struct kv_batch_shape shape;
	kv_ns model_ns; /* the perf model's prediction for the batch */
	kv_ns real_ns; /* measured */
};

struct kv_real_exec {
	struct kv_executor x; /* point cfg->exec here */
	struct kv_backend *be;
	struct kv_backend_info info;
	uint32_t page_tokens; /* tokens per page (pool unit) */
	uint64_t max_units; /* pages one sequence may hold */
	uint32_t max_seqs; /* sequences per batch */
	uint32_t *units; /* max_seqs * max_units page indices */
	struct kv_backend_seq *seqs; /* max_seqs */
	struct kv_iter_rec *log; /* executed iterations */
	size_t n_log, cap_log;
};

/* Bytes per weight/KV element of a backend kind: what the model must be simulated at. */
uint32_t kv_exec_kind_dtype(const char *kind);

/*
 * Opens a backend of `kind` for the initialised simulation s (one replica,
 * tp 1, a cache model with a units() hook and no offload) and installs the
 * executor into cfg (which must be s->cfg).  threads: the CPU backend's BLAS
 * threads (0: default); cpu_clock: time steps by CPU time (gpu/exec.h).  Returns 0 or an error code with d filled.
 */
int kv_real_exec_open(struct kv_real_exec *e, const char *kind, struct kv_sim *s,
		      struct kv_sim_config *cfg, int threads, int cpu_clock, struct kv_diag *d);

void kv_real_exec_close(struct kv_real_exec *e);

/*
 * The code a command sees for a failed backend call returning rc:
 * KV_EBACKEND when the backend is absent (KV_ENOENT) or failed on the
 * device (KV_EIO, KV_ENOMEM, ...), rc itself for a bad option (KV_EINVAL,
 * KV_ERANGE: bad input), 0 for 0.  The message stays in the kv_diag.
 */
int kv_backend_rc(int rc);

#endif /* KV_REALEXEC_H */
