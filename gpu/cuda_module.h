/*
 * cuda_module.h -- the CUDA backend as a module loaded on first use.
 *
 * The CUDA units (backend_cuda.cu, kernels.cu, devquery_cuda.cu) build
 * into one shared module, kvsim-cuda.so, that links cudart and cuBLAS;
 * kvsim and its libraries do not.  A process maps CUDA (~220 MiB of
 * cuBLAS, ~0.2 s) only when it first asks for the GPU: kv_gpu_query(),
 * kv_backend_open("cuda"), kv_backend_cuda_logits().  `kvsim run` never
 * does, so a CUDA build simulates with a plain build's RSS and start-up.
 *
 * The module exports exactly one symbol, KV_CUDA_MODULE_ENTRY, a function
 * returning its const table; everything else in it is local (a version
 * script), including its own copies of the few C helpers it needs
 * (kv_common.c, kernels_ref.c, exec_fail.c), so it resolves nothing
 * against the program that loads it and loads into any of them: kvsim,
 * tests/test_gpu, bench/cuda_bench.
 *
 * kv_cuda_module_load() finds it, first hit wins:
 *   1. $KVSIM_CUDA_MODULE, a path (set and not empty: the only place looked at);
 *   2. kvsim-cuda.so beside the executable (/proc/self/exe);
 *   3. ../gpu/kvsim-cuda.so from the executable's folder (the build tree:
 *      build/src/kvsim, build/tests/test_gpu, build/bench/cuda_bench);
 *   4. ../LIBDIR/kvsim/kvsim-cuda.so from the executable's folder (an
 *      installed tree moved elsewhere: bin/ beside LIBDIR);
 *   5. the install folder, PREFIX/LIBDIR/kvsim/kvsim-cuda.so (meson install).
 * Invariant: the first call decides, once per process (pthread_once);
 * every later call returns the same table or the same reason.  A module
 * whose table has another ABI number or other struct sizes is refused,
 * so a stale module from another build cannot corrupt a backend.
 */
#ifndef KV_CUDA_MODULE_H
#define KV_CUDA_MODULE_H

#include "backend.h"
#include "exec.h"
#include "kernels.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Bump when struct kv_cuda_module or a struct it passes changes meaning. */
#define KV_CUDA_MODULE_ABI 1
#define KV_CUDA_MODULE_ENTRY "kv_cuda_module_entry"
#define KV_CUDA_MODULE_NAME "kvsim-cuda.so"
#define KV_CUDA_MODULE_ENV "KVSIM_CUDA_MODULE"

struct kv_backend_ops;

struct kv_cuda_module {
	int abi; /* KV_CUDA_MODULE_ABI of the build that made the module */
	size_t backend_size; /* sizeof(struct kv_backend): exec.c fills the module's base */
	size_t opts_size; /* sizeof(struct kv_backend_opts) */
	size_t gpu_info_size; /* sizeof(struct kv_gpu_info) */
	const struct kv_backend_ops *ops; /* kind "cuda" (exec_impl.h) */
	/* kv_gpu_query()'s CUDA half: 0, or KV_ENOENT with info->why. */
	int (*query)(struct kv_gpu_info *info);
	/* backend_cuda.h's kv_backend_cuda_logits(). */
	int (*logits)(struct kv_backend *b, float *out, size_t n);
	/* kernels.h's CUDA twins, for tests/test_gpu.c. */
	int (*paged_decode_kv)(float *out, const float *q, int n_q, const int32_t *lens,
			       const void *arena, size_t arena_bytes, enum kv_kv_type t,
			       const struct kv_paged_shape *sh, const int32_t *table, int n_blocks,
			       float scale);
	int (*kv_append)(void *arena, size_t arena_bytes, enum kv_kv_type t,
			 const struct kv_paged_shape *sh, const int32_t *table, int n_blocks,
			 const int32_t *pos, int n_tok, const float *k, const float *v);
	int (*compact)(void *arena, size_t arena_bytes, size_t block_bytes, const int32_t *from,
		       const int32_t *to, int n);
};

/* The module's one export (gpu/cuda_module.c); never NULL. */
typedef const struct kv_cuda_module *(*kv_cuda_module_entry_fn)(void);

#if KV_HAVE_CUDA_BACKEND
/*
 * Loads the module on the first call (see above) and returns its table;
 * NULL when it cannot, with *why (when why is non-NULL) set to one
 * sentence: none found (the places looked at), dlopen()'s error (a
 * missing libcudart or libcublas), no entry point, or an ABI mismatch.
 * Loading needs no GPU: a module that loads may still report none
 * (query, open: KV_ENOENT).  Thread-safe; the strings live for the
 * process.
 */
const struct kv_cuda_module *kv_cuda_module_load(const char **why);

/* The module's path once kv_cuda_module_load() found one; "" before or when none. */
const char *kv_cuda_module_path(void);
#endif

#ifdef __cplusplus
}
#endif

#endif /* KV_CUDA_MODULE_H */
