/*
 * cuda_module.c -- the one export of kvsim-cuda.so (cuda_module.h): the
 * table of the CUDA backend's ops, the device query, the logits read and
 * the kernels' test twins.  Compiled into the module only.
 */
#include "cuda_module.h"
#include "backend_cuda.h"
#include "exec_impl.h"

int kv__cuda_query(struct kv_gpu_info *info); /* devquery_cuda.cu */
int kv__cuda_logits(struct kv_backend *b, float *out, size_t n); /* backend_cuda.cu */

static const struct kv_cuda_module module = {
	.abi = KV_CUDA_MODULE_ABI,
	.backend_size = sizeof(struct kv_backend),
	.opts_size = sizeof(struct kv_backend_opts),
	.gpu_info_size = sizeof(struct kv_gpu_info),
	.ops = &kv_backend_cuda_ops,
	.query = kv__cuda_query,
	.logits = kv__cuda_logits,
	.paged_decode_kv = kv_cuda_paged_decode_kv,
	.kv_append = kv_cuda_kv_append,
	.compact = kv_cuda_compact,
};

/* Named by KV_CUDA_MODULE_ENTRY; gpu/cuda_module.map exports it alone. */
__attribute__((visibility("default"))) const struct kv_cuda_module *kv_cuda_module_entry(void);

const struct kv_cuda_module *kv_cuda_module_entry(void)
{
	return &module;
}
