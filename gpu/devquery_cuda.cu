/* devquery_cuda.cu -- the CUDA runtime side of kv_gpu_query(). */
#include <cuda_runtime.h>
#include <stdio.h>
#include <string.h>

extern "C" {
#include "backend.h"

int kv__cuda_query(struct kv_gpu_info *info)
{
	cudaDeviceProp prop;
	cudaError_t err = cudaGetDeviceCount(&info->count);

	if (err != cudaSuccess || info->count == 0) {
		snprintf(info->why, sizeof(info->why), "no GPU: %s",
			 err != cudaSuccess ? cudaGetErrorString(err) : "no CUDA device visible");
		info->count = 0;
		return KV_ENOENT;
	}
	err = cudaGetDeviceProperties(&prop, 0);
	if (err != cudaSuccess) {
		snprintf(info->why, sizeof(info->why), "no GPU: %s", cudaGetErrorString(err));
		return KV_ENOENT;
	}
	snprintf(info->name, sizeof(info->name), "%s", prop.name);
	info->mem_bytes = prop.totalGlobalMem;
	info->sm_count = prop.multiProcessorCount;
	info->cc_major = prop.major;
	info->cc_minor = prop.minor;
	return 0;
}
}
