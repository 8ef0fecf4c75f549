/*
 * steps.c -- prints a run's steps, one line per engine iteration, for the
 * conformance tests (tests/conformance_priority/run.sh): what vLLM's
 * scheduler tests assert of each SchedulerOutput, in kvsim's terms.
 *
 * usage: steps WORKLOAD.yaml [--collapse] [key=value ...]
 * Lines, in event order:
 *   preempt ID            request ID was preempted while the next step formed
 *   step K: ID:TOKENS ... | running R waiting W
 *                         the K-th iteration (from 1) of replica 0: its batch
 *                         in batch order (the running requests kept going,
 *                         then those admitted, in admission order), each
 *                         request's scheduled tokens; then the running set and
 *                         the waiting requests as it starts
 *   end ID                request ID ended (completed or rejected)
 * --collapse prints "step:" without K, and a step only when its line differs
 * from the step before or a preemption or an end came between: a case whose
 * requests arrive while others run (at a step that depends on the perf
 * model) then prints the same lines whatever the steps' durations.
 * Request ids are kvsim's: the trace's rows in order from 0.  Exit 0, or 2
 * when the workload does not load or run.
 */
#include "workload.h"
#include "replica.h"

#include <stdio.h>
#include <string.h>

static unsigned long steps; /* iterations seen so far */
static int collapse; /* --collapse */
static char last[4096]; /* the last step line printed (collapse), "" after an event */

static void on_event(void *ctx, const struct kv_sim *s, enum kv_obs_event ev,
		     const struct kv_replica *r, const struct kv_req *q, kv_ns dur_ns)
{
	uint32_t i;

	(void)ctx;
	(void)dur_ns;
	if (ev == KV_OBS_PREEMPT) {
		printf("preempt %llu\n", (unsigned long long)q->id);
		last[0] = '\0';
	} else if (ev == KV_OBS_END) {
		printf("end %llu\n", (unsigned long long)q->id);
		last[0] = '\0';
	} else if (ev == KV_OBS_ITER_START) {
		char line[sizeof(last)];
		size_t n = 0;

		for (i = 0; i < r->n_batch && n + 64 < sizeof(line); i++)
			n += (size_t)snprintf(line + n, sizeof(line) - n, " %llu:%u",
					      (unsigned long long)r->batch[i]->id,
					      r->batch[i]->batch_tokens);
		snprintf(line + n, sizeof(line) - n, " | running %u waiting %llu", r->n_running,
			 (unsigned long long)r->sched->waiting(r->sched_priv));
		steps++;
		if (!collapse)
			printf("step %lu:%s\n", steps, line);
		else if (strcmp(line, last))
			printf("step:%s\n", line);
		memcpy(last, line, sizeof(last));
	}
	(void)s;
}

int main(int argc, char **argv)
{
	struct kv_workload w;
	struct kv_sim s;
	struct kv_diag d = { 0 };
	int rc;

	if (argc < 2) {
		fprintf(stderr, "usage: %s WORKLOAD.yaml [--collapse] [key=value ...]\n", argv[0]);
		return 2;
	}
	collapse = argc > 2 && !strcmp(argv[2], "--collapse");
	rc = kv_workload_load(&w, argv[1], argv + 2 + collapse, (size_t)(argc - 2 - collapse), 0,
			      0, &d);
	if (rc) {
		kv_diag_print(&d, stderr);
		kv_workload_release(&w);
		return 2;
	}
	w.cfg.observer.fn = on_event;
	w.cfg.exact_steps = 1; /* every iteration observed (engine.h) */
	rc = kv_sim_init(&s, &w.cfg, NULL);
	if (!rc)
		rc = kv_sim_run(&s);
	if (rc)
		kv_diag_print(&s.diag, stderr);
	kv_sim_release(&s);
	kv_workload_release(&w);
	return rc ? 2 : 0;
}
