/*
 * backend_cuda.h -- the CUDA execution backend (gpu/backend_cuda.cu) behind
 * exec.h's interface, as a table of operations the dispatcher (exec.c)
 * calls.  Each operation has exactly the contract of the exec.h function
 * of the same name; the notes below add only what is CUDA's own.
 *
 *  - open: KV_ENOENT with the runtime's reason when no GPU is usable;
 *    every allocation happens here (weights, KV arena, activations, pinned
 *    staging), none in step.
 *  - step: uploads the batch's page tables and token metadata with one
 *    cudaMemcpyAsync from pinned memory, runs the layers on the compute
 *    stream, times them with CUDA events; then waits for the async swaps
 *    queued before it and writes their times.
 *  - swap with async: *ns is written when the copy is known to be complete
 *    (the next step, move_pages, swap, kv_forget or close), so it must
 *    stay valid until then.  Pages being swapped must not be in a batch
 *    until that point (the copy and the step run concurrently).
 *  - memory: allocated device bytes; checked against cudaMemGetInfo (the
 *    device must report at least that much in use, else KV_EIO).
 *  - kv_forget: frees the KV arena; the next call that needs it allocates
 *    it again, zeroed (as madvise'd pages read back as zeros).
 *  - last_error: the sentence of the last failure (the "backend" diag of
 *    exec.h for the calls that take no kv_diag), "" when none.
 *
 * Every CUDA and cuBLAS call is checked; a failure returns KV_EIO with the
 * call and the runtime's error string, and nothing exits.
 */
#ifndef KV_BACKEND_CUDA_H
#define KV_BACKEND_CUDA_H

#include "exec.h"

#ifndef KV_BACKEND_OPS_DECLARED
#define KV_BACKEND_OPS_DECLARED
/* One backend kind's implementation of exec.h (mirrors its functions). */
struct kv_backend_ops {
	const char *kind; /* "cpu", "cuda" */
	int (*open)(const struct kv_backend_opts *o, struct kv_backend **out, struct kv_diag *d);
	void (*close)(struct kv_backend *b);
	void (*info)(const struct kv_backend *b, struct kv_backend_info *info);
	int (*step)(struct kv_backend *b, const struct kv_backend_seq *seqs, uint32_t n,
		    uint64_t *ns);
	int (*move_pages)(struct kv_backend *b, const int32_t *from, const int32_t *to, uint32_t n,
			  uint64_t *ns);
	int (*swap)(struct kv_backend *b, const int32_t *pages, uint32_t n, uint64_t slot0, int out,
		    int async, uint64_t *ns);
	int (*memory)(const struct kv_backend *b, struct kv_backend_mem *m);
	int (*kv_forget)(struct kv_backend *b);
	const char *(*last_error)(const struct kv_backend *b); /* optional: NULL means none kept */
};
#endif

#if KV_HAVE_CUDA || defined(__CUDACC__)
extern const struct kv_backend_ops kv_backend_cuda_ops;

/*
 * Copies the first n floats of the last step's logits ([sampled rows][vocab],
 * rows in batch order) to out.  Returns 0, KV_EINVAL (n beyond them) or
 * KV_EIO.  For tests and the bench: the logits stay on the device otherwise.
 */
int kv_backend_cuda_logits(struct kv_backend *b, float *out, size_t n);
#endif

#endif /* KV_BACKEND_CUDA_H */
