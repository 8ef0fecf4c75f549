/* cmd_gpu.c -- `kvsim gpu`: what accelerator the real backend would use. */
#include "commands.h"

#include "backend.h"

#include <string.h>

int kv_cmd_gpu(int argc, char **argv)
{
	struct kv_gpu_info info;

	if (argc > 1 && (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h"))) {
		puts("usage: kvsim gpu\n\nReports the GPU the execution backend would use, or why there is none.\n"
		     "Exit status 0 with a GPU, 77 without one.");
		return 0;
	}
	printf("CUDA backend: %s\n", kv_gpu_built_with_cuda() ? "built" : "not built");
	if (kv_gpu_query(&info)) {
		printf("%s\n", info.why);
		return 77;
	}
	printf("%d device(s); device 0: %s, %.1f GiB, %d SMs, compute capability %d.%d\n",
	       info.count, info.name, (double)info.mem_bytes / (double)KV_GiB, info.sm_count,
	       info.cc_major, info.cc_minor);
	return 0;
}
