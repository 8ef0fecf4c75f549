/*
 * devquery.c -- device query front end.  The CUDA half, devquery_cuda.cu,
 * lives in kvsim-cuda.so and is reached through kv_cuda_module_load()
 * (cuda_module.h), so asking is what maps CUDA into the process.
 */
#include "backend.h"
#include "cuda_module.h"

#include <stdio.h>
#include <string.h>

int kv_gpu_built_with_cuda(void)
{
#if KV_HAVE_CUDA_BACKEND
	return 1;
#else
	return 0;
#endif
}

int kv_gpu_query(struct kv_gpu_info *info)
{
#if KV_HAVE_CUDA_BACKEND
	const char *why = "";
	const struct kv_cuda_module *m = kv_cuda_module_load(&why);
#endif

	memset(info, 0, sizeof(*info));
#if KV_HAVE_CUDA_BACKEND
	if (m)
		return m->query(info);
	snprintf(info->why, sizeof(info->why), "no GPU: the CUDA backend is not available: %s",
		 why);
#else
	snprintf(info->why, sizeof(info->why), "no GPU: kvsim was built without CUDA (nvcc not found)");
#endif
	return KV_ENOENT;
}

const char *kv_gpu_module_path(void)
{
#if KV_HAVE_CUDA_BACKEND
	return kv_cuda_module_path();
#else
	return "";
#endif
}
