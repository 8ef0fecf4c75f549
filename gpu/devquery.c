/* devquery.c -- device query front end; the CUDA half is devquery_cuda.cu. */
#include "backend.h"

#include <string.h>

#if KV_HAVE_CUDA
int kv__cuda_query(struct kv_gpu_info *info);
#endif

int kv_gpu_built_with_cuda(void)
{
#if KV_HAVE_CUDA
	return 1;
#else
	return 0;
#endif
}

int kv_gpu_query(struct kv_gpu_info *info)
{
	memset(info, 0, sizeof(*info));
#if KV_HAVE_CUDA
	return kv__cuda_query(info);
#else
	snprintf(info->why, sizeof(info->why), "no GPU: kvsim was built without CUDA (nvcc not found)");
	return KV_ENOENT;
#endif
}
