/*
 * fuzz_sweep.c -- libFuzzer target for the sweep file loader
 * (src/sweep_file.c: parse, check, expand the grid, load the base workload).
 *
 * The input is a sweep file, reported as workloads/fuzz-sweep.yaml in the
 * source tree so `base: default.yaml` names a real workload and the fuzzer
 * can get past `base:` into the axes, zip groups, seeds, `set:` and target.
 * Nothing is run or written.  The loader must return 0 (with at least one
 * point) or a KV_E* code with a message, without leaking.
 */
#include "commands.h"
#include "fuzz.h"

#include <stdint.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct kv_diag d;
	size_t points = 0;
	int rc;

	memset(&d, 0, sizeof(d));
	rc = kv_sweep_check_mem(KV_SOURCE_DIR "/workloads/fuzz-sweep.yaml", (const char *)data,
				size, &points, &d);
	fuzz_check_rc(rc, &d);
	if (!rc && !points)
		fuzz_fail("a sweep file loaded with no points");
	return 0;
}
