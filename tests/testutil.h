/*
 * testutil.h -- helpers shared by the Check suites: where fixtures and the
 * real traces are, and a main() that runs one suite.
 */
#ifndef KV_TESTUTIL_H
#define KV_TESTUTIL_H

#include <check.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* $KVSIM_TEST_DATA/traces/name (falls back to tests/data). */
static inline const char *fixture(const char *name)
{
	static char buf[1024];
	const char *dir = getenv("KVSIM_TEST_DATA");

	snprintf(buf, sizeof(buf), "%s/traces/%s", dir ? dir : "tests/data", name);
	return buf;
}

/* $KVSIM_TRACES/name, or NULL when the real traces are absent. */
static inline const char *real_trace(const char *name)
{
	static char buf[1024];
	const char *dir = getenv("KVSIM_TRACES");
	struct stat st;

	if (!dir)
		return NULL;
	snprintf(buf, sizeof(buf), "%s/%s", dir, name);
	return stat(buf, &st) == 0 ? buf : NULL;
}

/*
 * 1 under valgrind (its preload library is in LD_PRELOAD), else 0.  Suites
 * whose loops memcheck makes long run fewer repetitions of the same paths
 * there; the paths stay the same.
 */
static inline int under_valgrind(void)
{
	const char *pre = getenv("LD_PRELOAD");

	return pre && strstr(pre, "vgpreload");
}

/* Runs one suite; returns the process status (1 when a test failed). */
static inline int kv_test_run_suite(Suite *suite)
{
	SRunner *sr = srunner_create(suite);
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? 1 : 0;
}

/*
 * Asserts cond only when it fails: Check's passing asserts each write to its
 * pipe, which costs microseconds in loops of millions.  cond is evaluated
 * again in the message, so it must have no side effects.
 */
#define EXPECT(cond, ...)                                                     \
	do {                                                                  \
		if (!(cond))                                                  \
			ck_assert_msg(cond, __VA_ARGS__);                     \
	} while (0)

/* xorshift64: a seeded, portable generator for test inputs. */
static inline uint64_t rng_next(uint64_t *s)
{
	uint64_t x = *s;

	x ^= x << 13;
	x ^= x >> 7;
	x ^= x << 17;
	return *s = x;
}

#endif /* KV_TESTUTIL_H */
