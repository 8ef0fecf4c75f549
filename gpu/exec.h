/*
 * exec.h -- an execution backend: one model's weights and a paged KV arena
 * in one device's memory, running real iterations of a batch.
 *
 * The simulator's replica loop asks an executor how long a batch takes; the
 * perf model answers by arithmetic, a backend by running the batch and
 * timing it.  Everything else -- router, scheduler, cache model, the pool's
 * buddy allocator -- is the same code (src/lib/realexec.c connects the two).
 *
 * The KV arena is an array of *pages*.  A page holds page_tokens tokens of
 * one sequence for every layer, K and V: with the kernels' layout
 * (kernels.h), page p of layer l is kernel block p * layers + l, so a page is
 *
 *   page_bytes = page_tokens * 2 * layers * kv_heads * head_dim * kv_elem_bytes
 *
 * bytes, exactly page_tokens tokens of the model's KV at the backend's
 * element size.  The pool's unit is one page, so pool block offsets (in
 * units) are page indices and a buddy block of k units is k consecutive
 * pages: the blocks the allocator hands out are real addresses here.
 *
 * One iteration (kv_backend_step) runs, for every layer, over the batch's
 * N new tokens: RMSNorm; the QKV projection of all N tokens as one GEMM;
 * KV append of each new token into its sequence's page; attention of each
 * new token over its context (causal inside a prefill chunk: token j of a
 * chunk after ctx cached tokens reads ctx + j + 1 tokens) through the page
 * table; the output projection (GEMM); RMSNorm and the MLP (gated: gate/up
 * GEMM, SiLU, down GEMM); then, for each sequence that samples, the final
 * norm and the LM head (one GEMM over the sampled rows).  Weights are random
 * (seeded), scaled by 1/sqrt(fan-in) so activations stay finite.
 *
 * Error handling: functions return 0 or a KV_E* code and fill a kv_diag
 * (field "backend") with one sentence; nothing exits.
 */
#ifndef KV_EXEC_H
#define KV_EXEC_H

#include "../sim/kv_common.h"
#include "../sim/profile.h"

struct kv_backend;

struct kv_backend_opts {
	const struct kv_model *model; /* architecture (the backend's dtype replaces dtype_bytes) */
	uint64_t kv_pages; /* pages in the KV arena */
	uint32_t page_tokens; /* tokens per page (16) */
	uint32_t max_batch_tokens; /* most new tokens in one step (sizes activations) */
	uint32_t max_batch_seqs; /* most sequences in one step */
	uint32_t max_ctx_tokens; /* longest context of a sequence */
	uint64_t seed; /* weights and token ids */
	int threads; /* CPU: BLAS threads, 0 for the library's default */
	int kv_int8; /* 1: KV stored as 8-bit with one fp scale per group of 32 (CUDA only) */
	/*
	 * CPU only: 1 times steps by the calling thread's CPU time
	 * (CLOCK_THREAD_CPUTIME_ID) instead of wall time, so that other
	 * processes on a shared machine do not show up as step time; needs
	 * threads == 1 (BLAS work on other threads would not be counted).
	 */
	int cpu_clock;
};

struct kv_backend_info {
	char kind[16]; /* "cpu" or "cuda" */
	char device[128]; /* CPU model name or GPU name */
	uint64_t mem_bytes; /* physical memory of the device */
	double mem_bw_Bps; /* datasheet bandwidth if known, else 0 */
	double flops; /* datasheet peak if known, else 0 */
	int cores; /* CPU cores or SMs */
	uint32_t dtype_bytes; /* bytes per weight element */
	uint32_t kv_elem_bytes; /* bytes per KV element */
	uint64_t page_bytes; /* bytes of one KV page */
	uint64_t kv_pages; /* pages in the arena */
	uint64_t weight_bytes; /* bytes allocated for weights */
	uint64_t workspace_bytes; /* activations and scratch */
};

/* One sequence of a batch. */
struct kv_backend_seq {
	const int32_t *pages; /* its pages in token order: token i lives in pages[i / page_tokens] */
	uint32_t n_pages; /* entries in pages: n_pages * page_tokens >= ctx + n_new */
	uint32_t ctx; /* tokens already in the cache */
	uint32_t n_new; /* tokens processed now: 1 for a decode step, a chunk for prefill */
	uint32_t sample; /* 1: compute the logits of its last new token (LM head) */
};

/*
 * Kinds this build can open, most preferred first, NULL-terminated: "cuda"
 * when built with CUDA (it may still answer KV_ENOENT without a GPU), then
 * "cpu", always.
 */
extern const char *const kv_backend_kinds[];

/*
 * Opens a backend of `kind` ("cpu", "cuda"): allocates and fills the
 * weights, the KV arena (untouched until written, on the CPU) and the
 * activations.  Returns 0, KV_EINVAL (unknown kind, bad options), KV_ENOENT
 * (no such device here: no GPU, or a build without CUDA) or KV_ENOMEM.
 */
int kv_backend_open(const char *kind, const struct kv_backend_opts *o, struct kv_backend **out,
		    struct kv_diag *d);

void kv_backend_close(struct kv_backend *b);

void kv_backend_get_info(const struct kv_backend *b, struct kv_backend_info *info);

/*
 * Runs one iteration over n sequences (n >= 1, at most max_batch_seqs, new
 * tokens summing to at most max_batch_tokens) and stores its wall time in
 * *ns (the device's own timer: CUDA events, or CLOCK_MONOTONIC around the
 * CPU work).  Page indices must be below kv_pages.  Returns 0, KV_EINVAL or
 * KV_EIO.
 */
int kv_backend_step(struct kv_backend *b, const struct kv_backend_seq *seqs, uint32_t n,
		    uint64_t *ns);

/*
 * Compaction: copies page from[i] to page to[i], i = 0..n-1 in order (the
 * caller orders moves so no source is overwritten before it is read).
 * *ns gets the time taken.
 */
int kv_backend_move_pages(struct kv_backend *b, const int32_t *from, const int32_t *to,
			  uint32_t n, uint64_t *ns);

/*
 * Offload (out = 1) copies pages to host slots slot0..slot0+n-1, prefetch
 * (out = 0) copies them back.  The host holds kv_pages slots (slot0 + n <=
 * kv_pages, else KV_EINVAL), allocated at the first call.  With async, the copy is queued on the copy
 * stream and overlaps the next kv_backend_step (which waits for it before
 * returning); *ns is then the time the copy took on its own stream, measured
 * when it completes.  On the CPU backend copies are synchronous memcpy.
 */
int kv_backend_swap(struct kv_backend *b, const int32_t *pages, uint32_t n, uint64_t slot0,
		    int out, int async, uint64_t *ns);

/*
 * The sentence explaining the last KV_E* code that kv_backend_step,
 * kv_backend_move_pages, kv_backend_swap or kv_backend_kv_forget returned
 * on b (they take no kv_diag); "" when none failed yet.  Never NULL.
 */
const char *kv_backend_last_error(const struct kv_backend *b);

/*
 * Measured memory: bytes of weights, KV arena and workspace that are
 * resident now.  The CPU: pages mincore() reports resident.  CUDA:
 * weights and workspace as allocated, KV as pages in use (read or written
 * by a step, move or swap since open or the last kv_forget) times
 * page_bytes.  kv_backend_kv_forget() returns the KV arena's pages to the
 * system (madvise; cudaFree) so a later measurement starts from zero.
 */
struct kv_backend_mem {
	uint64_t weights; /* weight bytes resident */
	uint64_t kv; /* KV arena bytes resident */
	uint64_t workspace; /* activation bytes resident */
};
int kv_backend_memory(const struct kv_backend *b, struct kv_backend_mem *m);
int kv_backend_kv_forget(struct kv_backend *b);

#endif /* KV_EXEC_H */
