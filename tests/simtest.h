/*
 * simtest.h -- helpers for the suites that run whole simulations from YAML
 * text: a temporary workload file, loading it with Check assertions.
 */
#ifndef KV_SIMTEST_H
#define KV_SIMTEST_H

#include "workload.h"

#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Writes YAML text to a temporary file; returns its path (static buffer). */
static inline const char *yaml_file(const char *text)
{
	static char path[64];
	FILE *f;
	int fd;

	snprintf(path, sizeof(path), "/tmp/kvsim-test-XXXXXX");
	fd = mkstemp(path);
	ck_assert_int_ge(fd, 0);
	f = fdopen(fd, "w");
	fputs(text, f);
	fclose(f);
	return path;
}

/* Loads YAML text; returns the loader's code (d filled on failure). */
static inline int try_load(struct kv_workload *w, const char *yaml, struct kv_diag *d)
{
	const char *path = yaml_file(yaml);
	int rc;

	memset(d, 0, sizeof(*d));
	rc = kv_workload_load(w, path, NULL, 0, 0, 0, d);
	unlink(path);
	return rc;
}

/* Loads YAML text that must be valid. */
static inline void load(struct kv_workload *w, const char *yaml)
{
	struct kv_diag d;
	int rc = try_load(w, yaml, &d);

	if (rc)
		kv_diag_print(&d, stderr);
	ck_assert_msg(rc == 0, "loading failed (%d) for:\n%s", rc, yaml);
}

#endif /* KV_SIMTEST_H */
