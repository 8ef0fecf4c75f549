/*
 * test_profiles.h -- loading a shipped model or device profile in a Check
 * test: the test fails, naming the profile and the loader's diagnostic, when
 * the profile does not load.  Shared by the tests of the perf model, the
 * models and the memory budget.
 */
#ifndef KV_TEST_PROFILES_H
#define KV_TEST_PROFILES_H

#include <check.h>

#include "profile_load.h"

static inline struct kv_model load_model(const char *name)
{
	struct kv_diag d = { 0 };
	struct kv_model m;
	int err = kv_profile_load_model(name, &m, &d);

	ck_assert_msg(!err, "model %s: %s: %s:%lu: %s: %s", name, kv_strerror(err), d.file,
		      d.line, d.field, d.msg);
	return m;
}

static inline struct kv_device load_device(const char *name)
{
	struct kv_diag d = { 0 };
	struct kv_device dev;
	int err = kv_profile_load_device(name, &dev, &d);

	ck_assert_msg(!err, "device %s: %s: %s:%lu: %s: %s", name, kv_strerror(err), d.file,
		      d.line, d.field, d.msg);
	return dev;
}

#endif /* KV_TEST_PROFILES_H */
