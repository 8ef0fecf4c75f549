/*
 * timeline.h -- a run's timeline as Chrome/Perfetto trace-event JSON
 * (https://docs.google.com/document/d/1CvAClvFfyA5R-PhYUmn5OOQtYMH4h2I0nSsKchNAySU,
 * "Trace Event Format": ph X complete events, b/e nestable async events,
 * C counter events, M metadata), for ui.perfetto.dev or chrome://tracing.
 *
 * One process per replica ("replica N"): thread 1 holds one X span per
 * iteration (batch size, prefill and decode tokens, duration); counter
 * tracks give its KV memory (GiB used and reserved), waiting requests and
 * batch size at each iteration start; each traced request is an async
 * track (cat "request", id its request id) spanning arrival to end, with
 * nested phases queued, prefill, decode and preempted.
 *
 * Use: kv_timeline_open() on a stream, kv_timeline_attach() on the
 * simulation's config before kv_sim_init (it sets the config's observer
 * and exact_steps), run, kv_timeline_finish() (closes every open span at
 * the end time and the JSON), then close the stream as the caller's output
 * contract says.  Bounded: only iterations starting and requests arriving
 * in [window), one request in `sample`, and at most max_events events
 * (after that only the ends of open spans are written), so a 1M-request run
 * still gives a file a viewer opens.  Deterministic: simulated times only.
 */
#ifndef KV_TIMELINE_H
#define KV_TIMELINE_H

#include "../../sim/engine.h"

#include <stdio.h>

struct kv_timeline_opts {
	kv_ns from_ns; /* window start, simulated time */
	kv_ns to_ns; /* window end (exclusive); KV_NS_NEVER or 0: to the end */
	uint64_t sample; /* trace request ids divisible by sample (1: every request) */
	uint64_t max_events; /* events written before new spans stop (0: no cap) */
};

/* The default bound: the whole run, every request, 2,000,000 events (about 300 MB at most). */
#define KV_TIMELINE_MAX_EVENTS 2000000u

struct kv_timeline {
	FILE *f; /* the JSON being written (not owned) */
	struct kv_timeline_opts opt; /* bounds */
	const struct kv_sim_config *cfg; /* the run's configuration */
	unsigned char *phase; /* per request slot: its open phase (enum in timeline.c), 0: untraced */
	size_t n_phase; /* entries of phase */
	uint64_t events; /* events written */
	uint64_t dropped; /* spans not started because max_events was reached */
	int capped; /* max_events reached */
};

/* Starts the JSON on f; opts NULL: the defaults. */
void kv_timeline_open(struct kv_timeline *t, FILE *f, const struct kv_timeline_opts *opts);

/* Observes the run of cfg: sets cfg->observer and cfg->exact_steps = 1. */
void kv_timeline_attach(struct kv_timeline *t, struct kv_sim_config *cfg);

/*
 * Ends every open span at s->now, writes the replicas' names and closes the
 * JSON.  Returns 0, or -1 when a write failed (errno set; the stream's
 * error flag too).
 */
int kv_timeline_finish(struct kv_timeline *t, const struct kv_sim *s);

void kv_timeline_release(struct kv_timeline *t);

/*
 * Parses a window "FROM:TO" in seconds (either side empty: the run's start
 * or end) into opts; 0 or -1 for a bad value.
 */
int kv_timeline_parse_window(const char *arg, struct kv_timeline_opts *opts);

#endif /* KV_TIMELINE_H */
