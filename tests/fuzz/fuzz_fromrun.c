/*
 * fuzz_fromrun.c -- libFuzzer target for the recorded-run readers
 * (src/lib/fromrun.h over src/lib/json.h): the input is read by
 * kv_run_load_mem() as a run file in whichever of the three formats it
 * looks like (vLLM benchmark JSON, JSON lines, CSV).  The contract: 0, or a
 * KV_E* code with a message naming what was wrong; never a crash, a leak or
 * a hang.  A second read of the same bytes must give the same answer (the
 * readers keep no state between runs).
 */
#include "fromrun.h"
#include "fuzz.h"

#include <stdint.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct kv_run a, b;
	struct kv_diag da, db;
	int ra, rb;

	memset(&a, 0, sizeof(a));
	memset(&b, 0, sizeof(b));
	memset(&da, 0, sizeof(da));
	memset(&db, 0, sizeof(db));
	ra = kv_run_load_mem(&a, "fuzz.run", (const char *)data, size, &da);
	rb = kv_run_load_mem(&b, "fuzz.run", (const char *)data, size, &db);
	fuzz_check_rc(ra, &da);
	if (ra != rb || strcmp(da.msg, db.msg))
		fuzz_fail("two reads differ: %d '%s' then %d '%s'", ra, da.msg, rb, db.msg);
	kv_run_release(&a);
	kv_run_release(&b);
	return 0;
}
