/*
 * fuzz.h -- what every kvsim fuzz target checks besides the sanitizers.
 *
 * A libFuzzer target (fuzz_*.c) feeds one input to one loader.  AddressSanitizer
 * and UndefinedBehaviorSanitizer catch memory and arithmetic bugs, libFuzzer
 * catches leaks, timeouts and exit() calls; this header adds the loaders' own
 * contract (sim/kv_common.h): a loader returns 0, or a negative code from the
 * KV_E* list with a diagnostic that says what was wrong.  A violation calls
 * fuzz_fail(), which prints the state and aborts, so libFuzzer keeps the
 * input as a crash.
 */
#ifndef KV_FUZZ_H
#define KV_FUZZ_H

#include "kv_common.h"

#include <stdio.h>
#include <stdlib.h>

#define fuzz_fail(...)                                                        \
	do {                                                                  \
		fprintf(stderr, "fuzz: %s:%d: ", __FILE__, __LINE__);         \
		fprintf(stderr, __VA_ARGS__);                                 \
		fputc('\n', stderr);                                          \
		abort();                                                      \
	} while (0)

/* 1 if err is one of the KV_E* codes of KV_ERRNO_MAP. */
static inline int fuzz_known_code(int err)
{
	switch (err) {
#define FUZZ__CASE(name, val, msg) case KV_E##name:
		KV_ERRNO_MAP(FUZZ__CASE)
#undef FUZZ__CASE
		return 1;
	default:
		return 0;
	}
}

/*
 * rc is 0, or a KV_E* code with d holding a message; anything else (a
 * positive or unknown code, an error without a message) breaks the contract.
 */
static inline void fuzz_check_rc(int rc, const struct kv_diag *d)
{
	if (rc == 0)
		return;
	if (!fuzz_known_code(rc))
		fuzz_fail("return code %d is neither 0 nor a KV_E* error", rc);
	if (!d->msg[0])
		fuzz_fail("error %d (%s) without a message", rc, kv_strerror(rc));
}

#endif /* KV_FUZZ_H */
