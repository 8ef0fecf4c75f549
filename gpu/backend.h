/*
 * backend.h -- the execution backends' C interface (CUDA, CPU reference).
 *
 * This first unit answers one question: which accelerator, if any, can run
 * the real backend here.  kv_gpu_query() never fails loudly: without a GPU,
 * a driver, or CUDA support in the build, it returns KV_ENOENT and says why
 * in info->why.  The executor interface is exec.h; the CUDA backend is a
 * module loaded on first use (cuda_module.h).
 */
#ifndef KV_BACKEND_H
#define KV_BACKEND_H

#include "../sim/kv_common.h"

struct kv_gpu_info {
	int count; /* devices visible */
	char name[256]; /* device 0's name */
	uint64_t mem_bytes; /* device 0's global memory */
	int sm_count; /* device 0's multiprocessors */
	int cc_major, cc_minor; /* compute capability */
	char why[256]; /* when none: the reason */
};

/* 1 when this build includes the CUDA backend. */
int kv_gpu_built_with_cuda(void);

/*
 * Fills info for device 0; returns 0, or KV_ENOENT with info->why set.  In
 * a CUDA build the first call loads kvsim-cuda.so (cuda_module.h); a
 * module that does not load is "no GPU: the CUDA backend is not
 * available: REASON".
 */
int kv_gpu_query(struct kv_gpu_info *info);

/* Where kv_gpu_query() loaded the CUDA backend from; "" before, when none or without CUDA. */
const char *kv_gpu_module_path(void);

#endif /* KV_BACKEND_H */
