/*
 * backend_cuda.h -- what the CUDA execution backend (gpu/backend_cuda.cu,
 * kind "cuda" of exec.h) adds to exec.h: its CUDA-specific semantics and
 * one extra call.  Open it with kv_backend_open("cuda", ...); exec.c
 * dispatches through exec_impl.h's kv_backend_cuda_ops, which exists when
 * gpu/meson.build compiles backend_cuda.cu (KV_HAVE_CUDA_BACKEND).
 *
 *  - open: KV_ENOENT with the runtime's reason ("no GPU: ...") when no GPU
 *    is usable; KV_EINVAL when head_dim is not a multiple of 32 up to 512,
 *    max_batch_tokens exceeds 65535 or kv_int8 is not 0 or 1.  Every
 *    allocation happens here (weights, KV arena, activations, pinned
 *    staging), none in step.
 *  - step: uploads the batch's page tables and token metadata with one
 *    cudaMemcpyAsync from pinned memory, runs the layers on the compute
 *    stream, times them with CUDA events; then waits for the async swaps
 *    queued before it and writes their times.
 *  - swap with async: *ns is written when the copy is known to be complete
 *    (the next step, move_pages, swap, kv_forget or close), so it must
 *    stay valid until then.  Pages being swapped must not be in a batch
 *    until that point (the copy and the step run concurrently).
 *  - memory: weights and workspace as allocated; KV as pages in use times
 *    page_bytes, a page being in use once a step, move or swap read or
 *    wrote it since open or kv_forget (the arena itself is all allocated
 *    at open).  The allocated bytes are checked against cudaMemGetInfo
 *    (the device must report at least that much in use, else KV_EIO).
 *  - kv_forget: frees the KV arena; the next call that needs it allocates
 *    it again, zeroed (as madvise'd pages read back as zeros).
 *
 * Every CUDA and cuBLAS call is checked; a failure returns KV_EIO with the
 * call and the runtime's error string (kv_backend_last_error()), and
 * nothing exits.  A failed call's error is consumed from the runtime's
 * last-error slot, so a later launch check does not report it again; a
 * step, move or swap that fails after queuing work waits for that work
 * before returning, so no queued copy reads a pinned buffer the next call
 * rewrites.
 */
#ifndef KV_BACKEND_CUDA_H
#define KV_BACKEND_CUDA_H

#include "exec.h"

#ifdef __cplusplus
extern "C" {
#endif

#if KV_HAVE_CUDA_BACKEND
/*
 * Copies the first n floats of the last step's logits ([sampled rows][vocab],
 * rows in batch order) to out.  Returns 0, KV_EINVAL (n beyond them, or b
 * not a "cuda" backend) or KV_EIO, with kv_backend_last_error() set.  For
 * tests and the bench: the logits stay on the device otherwise.
 */
int kv_backend_cuda_logits(struct kv_backend *b, float *out, size_t n);
#endif

#ifdef __cplusplus
}
#endif

#endif /* KV_BACKEND_CUDA_H */
