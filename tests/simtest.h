/*
 * simtest.h -- helpers for the suites that run whole simulations from YAML
 * text: temporary workload and trace files, loading them with Check
 * assertions, and a sink recording how each request ended.
 */
#ifndef KV_SIMTEST_H
#define KV_SIMTEST_H

#include "workload.h"
#include "replica.h"

#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/*
 * Writes text to a temporary file whose name ends in suffix ("" for none);
 * returns its path, in a static buffer per slot (0 or 1): slot 0 is the
 * workload's (yaml_file), slot 1 a file the workload names, such as a trace.
 */
static inline const char *temp_file(const char *text, const char *suffix, int slot)
{
	static char path[2][64];
	FILE *f;
	int fd;

	snprintf(path[slot], sizeof(path[slot]), "/tmp/kvsim-test-XXXXXX%s", suffix);
	fd = mkstemps(path[slot], (int)strlen(suffix));
	ck_assert_int_ge(fd, 0);
	f = fdopen(fd, "w");
	ck_assert_ptr_nonnull(f);
	fputs(text, f);
	ck_assert_int_eq(fclose(f), 0);
	return path[slot];
}

/* Writes YAML text to a temporary file; returns its path (static buffer). */
static inline const char *yaml_file(const char *text)
{
	return temp_file(text, "", 0);
}

/*
 * Loads YAML text; returns the loader's code (d filled on failure).  YAML
 * that names no engine runs vllm-v0: these suites pin the mechanism they
 * were written for (the loader's own default is vllm, V1); test_engines.c
 * names its engines.  YAML that does not set memory.context_check has it
 * at warn: requests larger than the pool are rejected for their size, the
 * mechanism these suites test, rather than the run refused (vLLM's rule,
 * tests/uncert_test.sh).
 */
static inline int try_load(struct kv_workload *w, const char *yaml, struct kv_diag *d)
{
	static char warn[] = "memory.context_check=warn", v0[] = "engine.name=vllm-v0";
	char *sets[2];
	const char *path = yaml_file(yaml);
	size_t n = 0;
	int rc;

	if (!strstr(yaml, "context_check"))
		sets[n++] = warn;
	if (!strstr(yaml, "engine:"))
		sets[n++] = v0;
	memset(d, 0, sizeof(*d));
	rc = kv_workload_load(w, path, sets, n, 0, 0, d);
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

/* Builds s from w with a sink (check_pool: the pool check after every event); asserts it succeeds. */
static inline void sim_start(struct kv_workload *w, struct kv_sim *s, const struct kv_sink *sink,
			     int check_pool)
{
	int rc;

	w->cfg.check_pool = check_pool;
	rc = kv_sim_init(s, &w->cfg, sink);
	if (rc)
		kv_diag_print(&s->diag, stderr);
	ck_assert_int_eq(rc, 0);
}

/* Runs s to the end; asserts it succeeds. */
static inline void sim_finish(struct kv_sim *s)
{
	int rc = kv_sim_run(s);

	if (rc)
		kv_diag_print(&s->diag, stderr);
	ck_assert_int_eq(rc, 0);
}

#define ENDS_MAX 4096 /* requests recorded by id */

/* How the requests of a run ended: counts, and per request id below ENDS_MAX its times. */
struct ends {
	uint64_t n, completed; /* requests ended, of which completed */
	uint64_t bad_tokens; /* completed requests with generated != output_tokens */
	kv_ns arrival[ENDS_MAX], first[ENDS_MAX], finish[ENDS_MAX]; /* arrival, first token, end */
	uint32_t tenant[ENDS_MAX], preemptions[ENDS_MAX]; /* tenant, times preempted */
};

/* Records in r that request q ended with e. */
static inline void ends_add(struct ends *r, const struct kv_req *q, enum kv_end e)
{
	r->n++;
	if (e == KV_END_COMPLETED) {
		r->completed++;
		r->bad_tokens += q->generated != q->output_tokens;
	}
	if (q->id < ENDS_MAX) {
		r->arrival[q->id] = q->arrival_ns;
		r->first[q->id] = q->first_token_ns;
		r->finish[q->id] = q->finish_ns;
		r->tenant[q->id] = q->tenant;
		r->preemptions[q->id] = q->preemptions;
	}
}

/* A sink's request hook recording into the struct ends at ctx. */
static inline int ends_request(void *ctx, const struct kv_sim *s, const struct kv_req *q,
			       enum kv_end e)
{
	(void)s;
	ends_add(ctx, q, e);
	return 0;
}

/* Asserts every completed request of r generated exactly its output. */
static inline void ends_check(const struct ends *r)
{
	ck_assert_msg(r->bad_tokens == 0, "%llu completed requests with generated != output_tokens",
		      (unsigned long long)r->bad_tokens);
}

/*
 * A workload with a bad option fails with its field named: in the plugin's
 * init with KV_EINVAL, or already in the loader (outside the option table's
 * range: KV_ERANGE; not a number, an unknown key or name: KV_EINVAL) when
 * at_load.
 */
static inline void expect_bad(const char *yaml, int at_load, const char *field,
			      const char *msg_part)
{
	struct kv_workload w;
	struct kv_sim s;
	struct kv_diag d;
	int rc = try_load(&w, yaml, &d), loaded = rc == 0;

	if (loaded) {
		rc = kv_sim_init(&s, &w.cfg, NULL);
		d = s.diag;
		kv_sim_release(&s);
	}
	kv_workload_release(&w);
	ck_assert_msg(loaded == !at_load, "%s: %s", yaml,
		      at_load ? "the loader accepted it" : "the loader refused it");
	ck_assert_msg(rc == KV_EINVAL || (at_load && rc == KV_ERANGE),
		      "%s: code %d, expected KV_EINVAL", yaml, rc);
	ck_assert_msg(strcmp(d.field, field) == 0, "%s: field '%s', expected '%s'", yaml, d.field,
		      field);
	ck_assert_msg(strstr(d.msg, msg_part), "%s: message '%s' lacks '%s'", yaml, d.msg,
		      msg_part);
}

/* expect_bad on one request with sched, the YAML of the `scheduler:` value. */
static inline void expect_bad_sched(const char *sched, int at_load, const char *field,
				    const char *msg_part)
{
	char yaml[1024];

	snprintf(yaml, sizeof(yaml),
		 "model: llama-2-7b\ndevice: a100-80g\nscheduler: %s\n"
		 "workload: {requests: 1, arrival: {process: poisson, rate: 1}}\n", sched);
	expect_bad(yaml, at_load, field, msg_part);
}

#endif /* KV_SIMTEST_H */
