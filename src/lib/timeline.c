/*
 * timeline.c -- the trace-event JSON of a run (timeline.h): an observer of
 * the engine's steps (struct kv_observer, sim/engine.h) writing one event
 * per iteration, per counter sample and per request phase change.
 */
#include "timeline.h"
#include "../../sim/replica.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

/* A traced request's open phase, per slot. */
enum { PH_NONE, PH_QUEUED, PH_PREFILL, PH_DECODE, PH_PREEMPTED };
static const char *const phase_name[] = { "", "queued", "prefill", "decode", "preempted" };

void kv_timeline_open(struct kv_timeline *t, FILE *f, const struct kv_timeline_opts *opts)
{
	memset(t, 0, sizeof(*t));
	t->f = f;
	if (opts)
		t->opt = *opts;
	else
		t->opt = (struct kv_timeline_opts){ .to_ns = KV_NS_NEVER, .sample = 1,
						    .max_events = KV_TIMELINE_MAX_EVENTS };
	if (!t->opt.to_ns)
		t->opt.to_ns = KV_NS_NEVER;
	if (!t->opt.sample)
		t->opt.sample = 1;
	fputs("{\"displayTimeUnit\":\"ms\",\"otherData\":{\"generator\":\"kvsim\","
	      "\"time\":\"simulated\"},\"traceEvents\":[\n", f);
}

/* Writes the common head of an event: ph, name, ts (microseconds, ns precision), pid, tid. */
static void head(struct kv_timeline *t, char ph, const char *name, kv_ns ts, uint32_t rep,
		 unsigned tid)
{
	fprintf(t->f, "%s{\"ph\":\"%c\",\"name\":\"%s\",\"ts\":%" PRIu64 ".%03u,\"pid\":%u,\"tid\":%u",
		t->events ? ",\n" : "", ph, name, ts / 1000, (unsigned)(ts % 1000), rep + 1, tid);
	t->events++;
}

/* A nestable async begin or end of request q's track (cat "request", id q->id). */
static void async(struct kv_timeline *t, char ph, const char *name, const struct kv_req *q,
		  kv_ns ts)
{
	head(t, ph, name, ts, q->replica, 0);
	fprintf(t->f, ",\"cat\":\"request\",\"id\":\"0x%" PRIx64 "\"", q->id);
}

/*
 * The phase slot of q, grown (zeroed) to the simulation's slot count: one
 * byte per slot, grown as the slot pages are (out of memory exits 3).
 */
static unsigned char *phase_of(struct kv_timeline *t, const struct kv_sim *s, const struct kv_req *q)
{
	if (q->slot >= t->n_phase) {
		size_t n = KV_MAX((size_t)s->n_pages * KV_SLOT_PAGE, (size_t)q->slot + 1);
		unsigned char *p = kv_xrealloc(t->phase, n);

		memset(p + t->n_phase, 0, n - t->n_phase);
		t->phase = p;
		t->n_phase = n;
	}
	return &t->phase[q->slot];
}

static int in_window(const struct kv_timeline *t, kv_ns ts)
{
	return ts >= t->opt.from_ns && ts < t->opt.to_ns;
}

/* 1 once max_events is reached: no new spans from then on. */
static int capped(struct kv_timeline *t)
{
	if (t->opt.max_events && t->events >= t->opt.max_events)
		t->capped = 1;
	return t->capped;
}

/* Writes s as a JSON string (tenant names: short, any byte). */
static void json_str(FILE *f, const char *s)
{
	putc('"', f);
	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;

		if (c == '"' || c == '\\')
			fprintf(f, "\\%c", c);
		else if (c < 0x20)
			fprintf(f, "\\u%04x", c);
		else
			putc(c, f);
	}
	putc('"', f);
}

static void on_arrive(struct kv_timeline *t, const struct kv_sim *s, const struct kv_req *q)
{
	unsigned char *ph;

	if (q->id % t->opt.sample || !in_window(t, q->arrival_ns) || capped(t))
		return;
	if (!(ph = phase_of(t, s, q)))
		return;
	async(t, 'b', "request", q, q->arrival_ns);
	fputs(",\"args\":{\"request\":", t->f);
	fprintf(t->f, "%" PRIu64 ",\"tenant\":", q->id);
	json_str(t->f, s->cfg->source.tenants[q->tenant].name);
	fprintf(t->f, ",\"prompt_tokens\":%" PRIu64 ",\"output_tokens\":%" PRIu64 "}}", q->prompt_tokens,
		q->output_tokens);
	async(t, 'b', "queued", q, q->arrival_ns);
	putc('}', t->f);
	*ph = PH_QUEUED;
}

/*
 * Moves q from its open phase to `to` at s->now (PH_NONE: ends the request
 * at `end`).  Past max_events a transition ends the request instead.
 */
static void move(struct kv_timeline *t, const struct kv_sim *s, const struct kv_req *q, int to,
		 kv_ns end, const char *status)
{
	unsigned char *ph = q->slot < t->n_phase ? &t->phase[q->slot] : NULL;

	if (!ph || *ph == PH_NONE)
		return;
	async(t, 'e', phase_name[*ph], q, s->now);
	putc('}', t->f);
	if (to != PH_NONE && capped(t)) {
		to = PH_NONE;
		end = s->now;
		status = "untraced from here (max events)";
		t->dropped++;
	}
	*ph = (unsigned char)to;
	if (to != PH_NONE) {
		async(t, 'b', phase_name[to], q, s->now);
		putc('}', t->f);
		return;
	}
	async(t, 'e', "request", q, end);
	fprintf(t->f, ",\"args\":{\"status\":\"%s\",\"preemptions\":%u}}", status, q->preemptions);
}

/* An iteration's span and the replica's counters at its start. */
static void on_iter_start(struct kv_timeline *t, const struct kv_replica *r, kv_ns dur)
{
	const struct kv_sim *s = r->sim;
	uint64_t prefill = 0, decode = 0;
	uint32_t i;

	if (!in_window(t, s->now) || capped(t)) {
		t->dropped += in_window(t, s->now);
		return;
	}
	for (i = 0; i < r->n_batch; i++) {
		const struct kv_req *q = r->batch[i];

		if (q->kv_tokens < q->prefill_target)
			prefill += q->batch_tokens;
		else
			decode += q->batch_tokens;
	}
	head(t, 'X', "iteration", s->now, r->idx, 1);
	fprintf(t->f, ",\"dur\":%" PRIu64 ".%03u,\"args\":{\"batch\":%u,\"prefill_tokens\":%" PRIu64
		",\"decode_tokens\":%" PRIu64 ",\"duration_ms\":%.6f}}",
		dur / 1000, (unsigned)(dur % 1000), r->n_batch, prefill, decode, (double)dur * 1e-6);
	head(t, 'C', "KV memory (GiB)", s->now, r->idx, 0);
	fprintf(t->f, ",\"args\":{\"used\":%.6f,\"reserved\":%.6f}}",
		kv_replica_live_bytes(r) / 1073741824.0,
		(double)(r->pool.size_bytes - r->pool.free_bytes) / 1073741824.0);
	head(t, 'C', "waiting requests", s->now, r->idx, 0);
	fprintf(t->f, ",\"args\":{\"waiting\":%" PRIu64 "}}", r->sched->waiting(r->sched_priv));
	head(t, 'C', "batch size", s->now, r->idx, 0);
	fprintf(t->f, ",\"args\":{\"batch\":%u,\"running\":%u}}", r->n_batch, r->n_running);
}

/* Prefill ends for the traced requests whose prompt this iteration completes. */
static void on_iter_end(struct kv_timeline *t, const struct kv_replica *r)
{
	uint32_t i;

	for (i = 0; i < r->n_batch; i++) {
		const struct kv_req *q = r->batch[i];

		if (q->slot < t->n_phase && t->phase[q->slot] == PH_PREFILL &&
		    q->kv_tokens + q->batch_tokens >= q->prefill_target)
			move(t, r->sim, q, PH_DECODE, 0, NULL);
	}
}

static const char *end_status(enum kv_end e)
{
	return e == KV_END_COMPLETED ? "completed" : e == KV_END_REJECTED_CONTEXT ?
		"rejected_context" : "rejected_pool";
}

static void observe(void *ctx, const struct kv_sim *s, enum kv_obs_event ev,
		    const struct kv_replica *r, const struct kv_req *q, kv_ns dur)
{
	struct kv_timeline *t = ctx;

	switch (ev) {
	case KV_OBS_ITER_START:
		on_iter_start(t, r, dur);
		break;
	case KV_OBS_ITER_END:
		on_iter_end(t, r);
		break;
	case KV_OBS_ARRIVE:
		on_arrive(t, s, q);
		break;
	case KV_OBS_ADMIT:
		move(t, s, q, q->kv_tokens < q->prefill_target ? PH_PREFILL : PH_DECODE, 0, NULL);
		break;
	case KV_OBS_PREEMPT:
		move(t, s, q, PH_PREEMPTED, 0, NULL);
		break;
	case KV_OBS_END:
		move(t, s, q, PH_NONE, KV_MAX(q->finish_ns, s->now), end_status((enum kv_end)dur));
		break;
	}
}

void kv_timeline_attach(struct kv_timeline *t, struct kv_sim_config *cfg)
{
	t->cfg = cfg;
	cfg->observer.fn = observe;
	cfg->observer.ctx = t;
	cfg->exact_steps = 1;
}

int kv_timeline_finish(struct kv_timeline *t, const struct kv_sim *s)
{
	size_t slot;
	uint32_t i;

	for (slot = 0; slot < t->n_phase; slot++)
		if (t->phase[slot] != PH_NONE)
			move(t, s, kv_sim_req(s, (uint32_t)slot), PH_NONE, s->now, "unfinished");
	for (i = 0; i < s->n_rep; i++) {
		head(t, 'M', "process_name", 0, i, 0);
		fprintf(t->f, ",\"args\":{\"name\":\"replica %u\"}}", i);
		head(t, 'M', "process_sort_index", 0, i, 0);
		fprintf(t->f, ",\"args\":{\"sort_index\":%u}}", i);
		head(t, 'M', "thread_name", 0, i, 1);
		fputs(",\"args\":{\"name\":\"iterations\"}}", t->f);
	}
	fprintf(t->f, "\n],\"metadata\":{\"events\":%" PRIu64 ",\"spans_dropped_at_max_events\":%" PRIu64
		",\"sample\":%" PRIu64 "}}\n", t->events, t->dropped, t->opt.sample);
	return ferror(t->f) ? -1 : 0;
}

void kv_timeline_release(struct kv_timeline *t)
{
	free(t->phase);
	t->phase = NULL;
	t->n_phase = 0;
}

/* A non-negative number of seconds into *ns; 0 or -1. */
static int parse_sec(const char *s, const char *end, kv_ns *ns)
{
	char buf[64], *e;
	double v;

	if (end - s <= 0 || end - s >= (long)sizeof(buf))
		return -1;
	memcpy(buf, s, (size_t)(end - s));
	buf[end - s] = 0;
	v = strtod(buf, &e);
	if (*e || !(v >= 0) || v > 1e9)
		return -1;
	*ns = (kv_ns)(v * 1e9 + 0.5);
	return 0;
}

int kv_timeline_parse_window(const char *arg, struct kv_timeline_opts *o)
{
	const char *colon = strchr(arg, ':');

	if (!colon)
		return -1;
	o->from_ns = 0;
	o->to_ns = KV_NS_NEVER;
	if (colon > arg && parse_sec(arg, colon, &o->from_ns))
		return -1;
	if (colon[1] && parse_sec(colon + 1, colon + strlen(colon), &o->to_ns))
		return -1;
	return o->to_ns > o->from_ns ? 0 : -1;
}
