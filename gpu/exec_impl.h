/*
 * exec_impl.h -- what a backend kind implements behind gpu/exec.h (private
 * to gpu/: the CPU backend, the CUDA backend and the dispatch in exec.c).
 *
 * A backend kind is one `const struct kv_backend_ops` with designated
 * initialisers; exec.c keeps the NULL-terminated array of those linked in
 * ("cpu"), finds "cuda" in kvsim-cuda.so when KV_HAVE_CUDA_BACKEND
 * (cuda_module.h), and dispatches every public call through b->ops.  A backend's private state embeds `struct kv_backend` as its
 * FIRST member, so `(struct my_backend *)b` recovers it.
 *
 * What exec.c guarantees before calling a hook (a hook need not re-check):
 *   open:  o and o->model are non-NULL; the architecture is positive with
 *          kv_heads dividing heads; kv_pages, page_tokens, max_batch_tokens,
 *          max_batch_seqs and max_ctx_tokens are positive; every kernel
 *          block index (page * layers + layer) fits int32_t; page_bytes at
 *          kv_elem_bytes 4 times kv_pages fits size_t; threads >= 0.
 *          Backend-specific options (kv_int8 ...) are the hook's to check.
 *   step:  1 <= n <= max_batch_seqs; every seq has pages != NULL,
 *          n_new >= 1, ctx + n_new <= max_ctx_tokens, n_pages *
 *          page_tokens >= ctx + n_new, n_pages <= the pages of
 *          max_ctx_tokens, sample in {0, 1}, and its first n_pages entries
 *          in [0, kv_pages); the n_new sum to at most max_batch_tokens.
 *   move_pages, swap: every page in [0, kv_pages); swap: slot0 + n <=
 *          kv_pages, out and async in {0, 1}.
 * After a successful open, exec.c fills the base (ops, a copy of the
 * options and of the model, page geometry); hooks may read it.
 *
 * What a hook must do: return 0 or a KV_E* code; on failure after open,
 * write one sentence with kv__backend_fail() (it becomes
 * kv_backend_last_error()).  open fills d instead (field "backend") and
 * leaves *out NULL on failure, having released what it took.  No hook
 * prints or exits.
 */
#ifndef KV_EXEC_IMPL_H
#define KV_EXEC_IMPL_H

#include "exec.h"
#include "kernels.h"

struct kv_backend_ops {
	const char *name; /* the kind: "cpu", "cuda" */
	const char *desc; /* one sentence for listings */
	/* Allocates the backend (base zeroed) or fails with d filled; *out NULL then. */
	int (*open)(const struct kv_backend_opts *o, struct kv_backend **out, struct kv_diag *d);
	/* Releases everything open took; b is never NULL. */
	void (*close)(struct kv_backend *b);
	/* Fills every field of info. */
	void (*info)(const struct kv_backend *b, struct kv_backend_info *info);
	/* One iteration; inputs validated as above. */
	int (*step)(struct kv_backend *b, const struct kv_backend_seq *seqs, uint32_t n,
		    uint64_t *ns);
	/* Page copies in order (kv_ref_compact semantics); inputs validated. */
	int (*move_pages)(struct kv_backend *b, const int32_t *from, const int32_t *to, uint32_t n,
			  uint64_t *ns);
	/* Offload/prefetch between pages and host slots; inputs validated. */
	int (*swap)(struct kv_backend *b, const int32_t *pages, uint32_t n, uint64_t slot0, int out,
		    int async, uint64_t *ns);
	/* Measured resident bytes (see exec.h). */
	int (*memory)(const struct kv_backend *b, struct kv_backend_mem *m);
	/* Returns the KV arena's memory to the system; contents become zero. */
	int (*kv_forget)(struct kv_backend *b);
};

/* The part of every backend that exec.c owns; the first member of each backend's state. */
struct kv_backend {
	const struct kv_backend_ops *ops; /* its kind */
	struct kv_backend_opts opts; /* the options it was opened with; opts.model points at model */
	struct kv_model model; /* copy of the caller's model (the caller's may not outlive b) */
	uint32_t max_pages_per_seq; /* ceil(max_ctx_tokens / page_tokens) */
	char err[256]; /* kv_backend_last_error(): the last failure, "" before any */
};

extern const struct kv_backend_ops kv_backend_cpu_ops;
#if KV_HAVE_CUDA_BACKEND
/*
 * gpu/backend_cuda.cu, inside kvsim-cuda.so: only the module's own units
 * (cuda_module.c) name it; exec.c gets it from the module's table.
 * gpu/meson.build defines KV_HAVE_CUDA_BACKEND everywhere when it builds
 * the module, KV_HAVE_CUDA only inside it (the kernel twins' prototypes).
 */
extern const struct kv_backend_ops kv_backend_cuda_ops;
#endif

/* Records a failure for kv_backend_last_error() and returns err. */
int kv__backend_fail(struct kv_backend *b, int err, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* One transformer block's weights in the CPU backend, row-major [in][out] so y = x W. */
struct kv_cpu_layer {
	float *attn_norm; /* [hidden] RMSNorm weight */
	float *w_qkv; /* [hidden][(heads + 2 kv_heads) head_dim]: Q | K | V */
	float *w_o; /* [heads head_dim][hidden] */
	float *mlp_norm; /* [hidden] */
	float *w_in; /* [hidden][2 intermediate]: gate | up when gated_mlp, else [hidden][intermediate] */
	float *w_down; /* [intermediate][hidden] */
};

/*
 * Test-only view of the CPU backend's state (tests/test_backend.c checks
 * the forward pass against a naive recomputation through it).  Pointers
 * stay valid until kv_backend_close.
 */
struct kv_cpu_debug {
	const float *embedding; /* [vocab][hidden] */
	const struct kv_cpu_layer *layer; /* [layers] */
	const float *final_norm; /* [hidden] */
	const float *lm_head; /* [hidden][vocab]; NULL when tied (logits = x E^T) */
	const float *arena; /* the KV arena, kernels.h layout, block = page * layers + layer */
	const float *hidden; /* [max_batch_tokens][hidden]: residual stream after the last layer of
				the last step, one row per new token in batch order */
	const int32_t *argmax; /* [max_batch_seqs]: argmax of the logits of each sampled row */
	const float *logits; /* [max_batch_seqs][vocab]: the last step's, one row per sampled
				sequence in batch order */
	float norm_eps; /* RMSNorm epsilon */
};

/*
 * Names the CBLAS the "cpu" backend runs: what it was built for
 * (openblas_get_config() with OpenBLAS) and the library cblas_sgemm
 * resolves to in this process -- gslcblas defines the same symbol, and the
 * first library loaded wins.
 */
void kv_backend_cpu_blas(char *out, size_t len);

/*
 * The CPU backend's fp32 decode attention: kv_ref_paged_decode()'s
 * semantics and layout, a block at a time (scores of a block, one rescale,
 * then its V rows), rows read in place.  block_tokens at most
 * KV_CPU_MAX_BLOCK_TOKENS.
 */
#define KV_CPU_MAX_BLOCK_TOKENS 256
void kv_backend_cpu_decode(float *out, const float *q, const float *arena,
			   const struct kv_paged_shape *sh, const int32_t *table, int ctx_len,
			   float scale);

/*
 * FLOP/s of the "cpu" backend's CBLAS on one row-major sgemm of m x k
 * times k x n (the best of reps runs after a warm-up, at the current BLAS
 * thread count): the ceiling the GEMMs of a step approach.
 */
double kv_backend_cpu_sgemm_rate(int m, int n, int k, int reps);

/* Fills dbg; b must be a "cpu" backend. */
void kv_backend_cpu_debug(const struct kv_backend *b, struct kv_cpu_debug *dbg);

/* The token id the CPU backend embeds at position pos of seq (a hash of seed, pages[0], pos). */
int32_t kv_backend_cpu_debug_token(const struct kv_backend *b, const struct kv_backend_seq *seq,
				   uint32_t pos);

#endif /* KV_EXEC_IMPL_H */
