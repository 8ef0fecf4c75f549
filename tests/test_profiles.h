/*
 * test_profiles.h -- loading a shipped model or device profile in a Check
 * test: the test fails, naming the profile and the loader's diagnostic, when
 * the profile does not load; loading a workload from YAML text and checking
 * that it loads or is refused with a given message.  Shared by the tests of
 * the perf model, the models, the memory budget and data-parallel MoE.
 */
#ifndef KV_TEST_PROFILES_H
#define KV_TEST_PROFILES_H

#include <check.h>
#include <string.h>

#include "profile_load.h"
#include "workload.h"

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

/* Loads a workload from YAML text and releases it (w->cfg's scalars stay readable); returns the loader's code, d filled. */
static inline int load_text(struct kv_workload *w, const char *text, struct kv_diag *d)
{
	int rc = kv_workload_load_mem(w, "w.yaml", text, strlen(text), NULL, 0, 0, 0, d);

	kv_workload_release(w);
	return rc;
}

/*
 * One case of a table of YAML checks: text must load when want is "", else
 * be refused with KV_EINVAL, a message containing want, a diagnostic field
 * beginning with field ("": any field) at line (0: any line).
 */
static inline void check_load(const char *text, const char *want, const char *field,
			      unsigned long line)
{
	struct kv_workload w;
	struct kv_diag d = { 0 };
	int rc = load_text(&w, text, &d);

	if (!*want) {
		ck_assert_msg(rc == 0, "%s: refused: %s", text, d.msg);
		return;
	}
	ck_assert_msg(rc == KV_EINVAL && strstr(d.msg, want) &&
			      !strncmp(d.field, field, strlen(field)) && (!line || d.line == line),
		      "%s: rc %d field '%s' line %lu message '%s', expected '%s' at '%s' line %lu",
		      text, rc, d.field, d.line, d.msg, want, field, line);
}

#endif /* KV_TEST_PROFILES_H */
