/* cmd_gpu.c -- `kvsim gpu`: what accelerator the real backend would use. */
#include "commands.h"

#include "backend.h"
#include "opts.h"
#include "status.h"

#include <string.h>

int kv_cmd_gpu(int argc, char **argv)
{
	static const struct kv_cli_opt opts[] = { { .name = NULL } };
	static const struct kv_cli_cmd cmd = {
		.name = "gpu",
		.desc = "Reports the GPU the execution backend would use, or why there is none.\n",
		.notes = "exit status: 0 with a GPU, 77 without one\n",
	};
	struct kv_gpu_info info;
	int rc;

	if ((rc = kv_cli_parse(&cmd, opts, argc, argv, NULL)))
		return rc < 0 ? 0 : rc;
	rc = kv_gpu_query(&info); /* loads kvsim-cuda.so in a CUDA build (cuda_module.h) */
	printf("CUDA backend: %s%s%s\n", kv_gpu_built_with_cuda() ? "built" : "not built",
	       kv_gpu_module_path()[0] ? ", module " : "", kv_gpu_module_path());
	if (rc) {
		printf("%s\n", info.why);
		return KV_EXIT_NOGPU;
	}
	printf("%d device(s); device 0: %s, %.1f GiB, %d SMs, compute capability %d.%d\n",
	       info.count, info.name, (double)info.mem_bytes / (double)KV_GiB, info.sm_count,
	       info.cc_major, info.cc_minor);
	return 0;
}
