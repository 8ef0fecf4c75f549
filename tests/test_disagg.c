/*
 * test_disagg.c -- prefill/decode disaggregation end to end: a lone
 * request's exact transfer and decode times, contention on a prefill
 * replica's link, one-token requests ending on the prefill side, no
 * request scheduled before its transfer completes (an observer watches
 * every batch), bytes conserved, decode memory pressure, a landed request
 * rejected for the decode pool, and macro-stepping byte-identical to exact
 * steps under every engine.
 */
#include "simtest.h"

#include "testutil.h"

#include <check.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define BASE "model: llama-2-7b\ndevice: a100-80g\nscheduler: fifo\ncache: full\n" \
	     "outputs: {sample_interval: 0}\n"

/* Per request (id < 256): what it ended with. */
struct pd_rec {
	uint64_t n, completed, rejected;
	uint64_t bytes; /* KV bytes its transfers moved, from the requests */
	struct kv_req q[256];
};

static int pd_request(void *ctx, const struct kv_sim *s, const struct kv_req *q, enum kv_end e)
{
	struct pd_rec *r = ctx;

	(void)s;
	r->n++;
	r->completed += e == KV_END_COMPLETED;
	r->rejected += e != KV_END_COMPLETED;
	if (q->id < 256)
		r->q[q->id] = *q;
	return 0;
}

/* Runs yaml (extra --set free) to the end, recording into r; s stays for inspection. */
static void pd_run(const char *yaml, struct pd_rec *r, struct kv_sim *s, struct kv_workload *w,
		   int exact)
{
	struct kv_sink sink = { .ctx = r, .request = pd_request };

	memset(r, 0, sizeof(*r));
	load(w, yaml);
	w->cfg.exact_steps = exact;
	sim_start(w, s, &sink, 1);
	sim_finish(s);
}

/* Bytes the links carried, all links. */
static uint64_t link_bytes(const struct kv_sim *s, uint64_t *transfers)
{
	uint64_t b = 0;
	uint32_t i;

	*transfers = 0;
	for (i = 0; i < s->pd->n_link; i++) {
		b += s->pd->link[i].bytes_out;
		*transfers += s->pd->link[i].n_done;
	}
	return b;
}

/*
 * A lone request: its first token after its prefill on replica 0; its KV
 * (P x bytes per token) arrives latency + ser later on replica 1, which
 * admits it then and decodes T - 1 steps.
 */
START_TEST(lone_request_times)
{
	struct kv_workload w;
	struct kv_sim s;
	struct pd_rec r;
	uint64_t P = 1000, T = 5, bytes, n;
	const struct kv_req *q = &r.q[0];
	kv_ns ser, xfer;

	pd_run(BASE "cluster: {replicas: 2, prefill_replicas: 1,\n"
		    "  kv_transfer: {bandwidth: 10GB/s, latency: 100us}}\n"
		    "workload:\n  requests: 1\n  arrival: {process: poisson, rate: 1}\n"
		    "  lengths: {dist: fixed, prompt: 1000, output: 5}\n",
	       &r, &s, &w, 0);
	ser = kv_kvlink_ser_ns(10000000000ULL, P * s.grp[0].token_bytes);
	xfer = 100000 + ser;
	ck_assert_uint_eq(r.completed, 1);
	EXPECT(q->xfer_ns == xfer && q->replica == 1, "xfer %llu ns, expected %llu; replica %u",
	       (unsigned long long)q->xfer_ns, (unsigned long long)xfer, q->replica);
	ck_assert_uint_eq(s.rep[0].iterations, 1);
	ck_assert_uint_eq(s.rep[1].iterations, T - 1);
	ck_assert_uint_eq(s.rep[0].handoffs, 1);
	bytes = link_bytes(&s, &n);
	EXPECT(bytes == P * s.grp[0].token_bytes && n == 1 && s.rep[1].xfer_in_bytes == bytes,
	       "link bytes %llu, expected %llu; admitted %llu", (unsigned long long)bytes,
	       (unsigned long long)(P * s.grp[0].token_bytes),
	       (unsigned long long)s.rep[1].xfer_in_bytes);
	/* the decode replica starts when the KV lands: finish - first = xfer + its steps */
	EXPECT(q->finish_ns - q->first_token_ns >= xfer + s.rep[1].busy_ns &&
		       q->finish_ns - q->first_token_ns <= xfer + s.rep[1].busy_ns + 100000,
	       "finish - first %llu ns, xfer %llu + decode busy %llu",
	       (unsigned long long)(q->finish_ns - q->first_token_ns), (unsigned long long)xfer,
	       (unsigned long long)s.rep[1].busy_ns);
	kv_sim_release(&s);
	kv_workload_release(&w);
}
END_TEST

/*
 * Four requests at t = 0 prefill on one prefill replica (the front end
 * spaces them): their transfers queue on its one link, FIFO, each
 * starting at its prefill's end or when the link frees.  A one-token
 * request ends on the prefill side.
 */
START_TEST(link_contention)
{
	struct kv_workload w;
	struct kv_sim s;
	struct pd_rec r;
	kv_ns ser, done = 0, prev_end = 0, queue = 0;
	uint64_t k, n, contended = 0;
	char yaml[1024];
	const char *trace = temp_file("arrived_at,num_prefill_tokens,num_decode_tokens\n"
				      "0,256,3\n0,256,3\n0,256,3\n0,256,3\n", "", 1);

	snprintf(yaml, sizeof(yaml),
		 BASE "cluster: {replicas: 2, prefill_replicas: 1,\n"
		      "  kv_transfer: {bandwidth: 1GB/s, latency: 0s}}\n"
		      "workload:\n  requests: 4\n  arrival: {process: trace, trace: %s, format: vidur}\n",
		 trace);
	pd_run(yaml, &r, &s, &w, 0);
	ser = kv_kvlink_ser_ns(1000000000ULL, 256 * s.grp[0].token_bytes);
	ck_assert_uint_eq(r.completed, 4);
	/* in prefill order: each starts when its prefill ends or the link frees, FIFO */
	for (k = 0; k < 4; k++) {
		kv_ns end = r.q[k].xfer_done_ns - r.q[k].xfer_ns, start = KV_MAX(end, done);

		EXPECT(r.q[k].xfer_done_ns == start + ser && end >= prev_end,
		       "request %llu: prefill end %llu, transfer done %llu, expected %llu",
		       (unsigned long long)k, (unsigned long long)end,
		       (unsigned long long)r.q[k].xfer_done_ns, (unsigned long long)(start + ser));
		queue += start - end;
		contended += start > end;
		done = start + ser;
		prev_end = end;
	}
	EXPECT(s.pd->link[0].queue_ns == queue && contended > 0,
	       "link queueing %llu ns, expected %llu (%llu contended)",
	       (unsigned long long)s.pd->link[0].queue_ns, (unsigned long long)queue,
	       (unsigned long long)contended);
	kv_sim_release(&s);
	kv_workload_release(&w);
	pd_run(BASE "cluster: {replicas: 2, prefill_replicas: 1}\n"
		    "workload:\n  requests: 3\n  arrival: {process: poisson, rate: 100}\n"
		    "  lengths: {dist: fixed, prompt: 256, output: 1}\n",
	       &r, &s, &w, 0);
	ck_assert_uint_eq(r.completed, 3);
	ck_assert_uint_eq(link_bytes(&s, &n), 0);
	EXPECT(r.q[0].replica == 0 && s.rep[1].iterations == 0 && r.q[0].xfer_ns == 0,
	       "one-token request ended on replica %u; decode iterations %llu",
	       r.q[0].replica, (unsigned long long)s.rep[1].iterations);
	kv_sim_release(&s);
	kv_workload_release(&w);
}
END_TEST

/* An observer: no request in a starting batch before its transfer completed. */
struct watch {
	uint64_t batches, early, decode_batches;
};

static void watch_fn(void *ctx, const struct kv_sim *s, enum kv_obs_event ev,
		     const struct kv_replica *r, const struct kv_req *q, kv_ns dur)
{
	struct watch *wt = ctx;
	uint32_t i;

	(void)q;
	(void)dur;
	if (ev != KV_OBS_ITER_START)
		return;
	wt->batches++;
	wt->decode_batches += !r->prefill_only;
	for (i = 0; i < r->n_batch; i++)
		wt->early += r->batch[i]->xfer_done_ns > s->now || r->batch[i]->xfer_bytes;
}

#define LOADED "cluster: {replicas: 4, prefill_replicas: 2,\n" \
	       "  kv_transfer: {bandwidth: 2GB/s, latency: 1ms, layerwise: %s, topology: %s, placement: %s}}\n" \
	       "memory: {kv_tokens: %u, context_check: warn}\n" \
	       "engine: {name: %s}\n" \
	       "workload:\n  requests: %u\n  oversize: clip\n  arrival: {process: poisson, rate: 6}\n" \
	       "  lengths: {dist: uniform, prompt_min: 16, prompt_max: 3000, output_min: 1, output_max: 300}\n"

/*
 * Requests of the loaded runs (LOADED) and of the groups' (GROUPS): 200 and 150; half of
 * them under valgrind, where the pool checks after every event take most of memcheck's
 * time (1.7 minutes of a loaded CI).  The halves take the same paths: the tests still
 * assert transfers, early batches never, decode batches, macro steps and hand-offs.
 */
static uint32_t n_loaded(void)
{
	return under_valgrind() ? 100 : 200;
}

static uint32_t n_groups(void)
{
	return under_valgrind() ? 75 : 150;
}

/*
 * Under load, slow links and tight pools, every engine: no batch holds a
 * request whose KV has not landed; every byte sent arrives and is
 * admitted or dropped; every request ends.
 */
START_TEST(never_before_transfer)
{
	static const char *const eng[] = { "vllm", "vllm-v0", "sglang" };
	static const char *const topo[] = { "prefill", "pair", "shared" };
	char yaml[2048];
	int i;

	for (i = 0; i < 6; i++) {
		struct kv_sink sink = { 0 };
		struct watch wt = { 0 };
		struct kv_workload w;
		struct kv_sim s;
		struct pd_rec r;
		uint64_t n, in = 0, drop = 0;
		uint32_t k;

		memset(&r, 0, sizeof(r));
		sink.ctx = &r;
		sink.request = pd_request;
		snprintf(yaml, sizeof(yaml), BASE LOADED, i % 2 ? "true" : "false", topo[i % 3],
			 i % 2 ? "round-robin" : "least-kv", i < 3 ? 8000u : 40000u, eng[i % 3],
			 n_loaded());
		load(&w, yaml);
		w.cfg.observer = (struct kv_observer){ .fn = watch_fn, .ctx = &wt };
		w.cfg.exact_steps = 1;
		sim_start(&w, &s, &sink, 1);
		sim_finish(&s);
		for (k = 0; k < s.n_rep; k++) {
			in += s.rep[k].xfer_in_bytes;
			drop += s.rep[k].xfer_dropped_bytes;
		}
		EXPECT(wt.early == 0 && wt.decode_batches > 0 && r.n == n_loaded() &&
			       r.completed > n_loaded() / 2,
		       "case %d: %llu early of %llu batches; %llu ended", i,
		       (unsigned long long)wt.early, (unsigned long long)wt.batches,
		       (unsigned long long)r.n);
		EXPECT(link_bytes(&s, &n) == in + drop && n == s.pd->sent && n > 0,
		       "case %d: links carried %llu bytes, %llu admitted + %llu dropped", i,
		       (unsigned long long)link_bytes(&s, &n), (unsigned long long)in,
		       (unsigned long long)drop);
		kv_sim_release(&s);
		kv_workload_release(&w);
	}
}
END_TEST

/* Macro steps give every request the same times as exact steps, under every engine. */
START_TEST(macro_exact)
{
	static const char *const eng[] = { "vllm", "vllm-v0", "sglang" };
	char yaml[2048];
	int i;

	for (i = 0; i < 3; i++) {
		static struct pd_rec a, b;
		struct kv_workload w;
		struct kv_sim s;
		uint64_t k, macro;

		snprintf(yaml, sizeof(yaml), BASE LOADED, "true", "prefill", "least-kv", 20000u,
			 eng[i], n_loaded());
		pd_run(yaml, &a, &s, &w, 0);
		macro = s.macro_steps;
		kv_sim_release(&s);
		kv_workload_release(&w);
		pd_run(yaml, &b, &s, &w, 1);
		kv_sim_release(&s);
		kv_workload_release(&w);
		EXPECT(macro > 0 || i == 2, "%s: no macro steps taken", eng[i]);
		EXPECT(a.n == n_loaded() && b.n == a.n, "%s: %llu and %llu requests ended", eng[i],
		       (unsigned long long)a.n, (unsigned long long)b.n);
		for (k = 0; k < n_loaded(); k++)
			EXPECT(a.q[k].finish_ns == b.q[k].finish_ns &&
				       a.q[k].first_token_ns == b.q[k].first_token_ns &&
				       a.q[k].xfer_ns == b.q[k].xfer_ns && a.q[k].replica == b.q[k].replica,
			       "%s: request %llu: finish %llu vs %llu, xfer %llu vs %llu", eng[i],
			       (unsigned long long)k, (unsigned long long)a.q[k].finish_ns,
			       (unsigned long long)b.q[k].finish_ns,
			       (unsigned long long)a.q[k].xfer_ns, (unsigned long long)b.q[k].xfer_ns);
	}
}
END_TEST

/* Bad kv_transfer values are input errors naming the field. */
/* Runs yaml with or without the pool check (and least-kv's scan beside its tree), recording into r. */
static void pd_run_check(const char *yaml, struct pd_rec *r, int exact, int check, uint32_t *trees)
{
	struct kv_sink sink = { .ctx = r, .request = pd_request };
	struct kv_workload w;
	struct kv_sim s;

	memset(r, 0, sizeof(*r));
	load(&w, yaml);
	w.cfg.exact_steps = exact;
	sim_start(&w, &s, &sink, check);
	sim_finish(&s);
	*trees = s.pd->n_tree;
	kv_sim_release(&s);
	kv_workload_release(&w);
}

/*
 * least-kv from its tree of lower bounds (disagg.h): under every engine,
 * with caches whose holdings grow in macro steps and whose landed KV may
 * take less than its transfer (shared prefixes), the pick at every hand-off
 * is the scan's (the pool check runs the scan beside the tree and aborts on
 * a difference), and without the check, where only the candidates whose
 * bound could win are brought up, every request ends as with exact steps.
 */
START_TEST(least_kv_tree)
{
	static const char *const eng[] = { "vllm", "vllm-v0", "sglang" };
	static const char *const cache[] = { "full", "shared", "chunked" };
	char yaml[2048];
	int i;

	for (i = 0; i < 6; i++) {
		static struct pd_rec a, b, c;
		uint32_t ta, tb, tc, k;
		char base[256];

		snprintf(base, sizeof(base),
			 "model: llama-2-7b\ndevice: a100-80g\nscheduler: fifo\ncache: %s\n"
			 "outputs: {sample_interval: 0}\n",
			 cache[i % 3]);
		snprintf(yaml, sizeof(yaml), "%s" LOADED, base, i < 3 ? "false" : "true", "prefill",
			 "least-kv", 20000u, eng[i % 3], n_loaded());
		pd_run_check(yaml, &a, 0, 1, &ta);
		pd_run_check(yaml, &b, 0, 0, &tb);
		pd_run_check(yaml, &c, 1, 0, &tc);
		EXPECT(ta == 1 && tb == 1 && tc == 1, "case %d: %u, %u, %u trees", i, ta, tb, tc);
		EXPECT(a.n == n_loaded() && b.n == a.n && c.n == a.n,
		       "case %d: %llu, %llu and %llu requests ended", i, (unsigned long long)a.n,
		       (unsigned long long)b.n, (unsigned long long)c.n);
		for (k = 0; k < n_loaded(); k++)
			EXPECT(a.q[k].finish_ns == b.q[k].finish_ns && b.q[k].finish_ns == c.q[k].finish_ns &&
				       a.q[k].replica == b.q[k].replica && b.q[k].replica == c.q[k].replica,
			       "case %d: request %u: finish %llu, %llu, %llu; replica %u, %u, %u", i, k,
			       (unsigned long long)a.q[k].finish_ns, (unsigned long long)b.q[k].finish_ns,
			       (unsigned long long)c.q[k].finish_ns, a.q[k].replica, b.q[k].replica,
			       c.q[k].replica);
	}
}
END_TEST

START_TEST(bad_options)
{
	static const char *const bad[][2] = {
		{ "{bandwidth: fast}", "cluster.kv_transfer.bandwidth" },
		{ "{bandwidth: 0GB/s}", "cluster.kv_transfer.bandwidth" },
		{ "{latency: -1s}", "cluster.kv_transfer.latency" },
		{ "{topology: mesh}", "cluster.kv_transfer.topology" },
		{ "{placement: random}", "cluster.kv_transfer.placement" },
		{ "{speed: 1}", "cluster.kv_transfer" },
	};
	char yaml[1024];
	size_t i;

	for (i = 0; i < KV_ARRAY_LEN(bad); i++) {
		struct kv_workload w;
		struct kv_diag d;
		int rc;

		snprintf(yaml, sizeof(yaml),
			 BASE "cluster: {replicas: 2, prefill_replicas: 1, kv_transfer: %s}\n"
			      "workload:\n  requests: 1\n  arrival: {process: poisson, rate: 1}\n"
			      "  lengths: {dist: fixed, prompt: 10, output: 2}\n",
			 bad[i][0]);
		rc = try_load(&w, yaml, &d);
		EXPECT(rc != 0 && strstr(d.field, bad[i][1]), "%s: rc %d, field '%s' (%s)", bad[i][0],
		       rc, d.field, d.msg);
		kv_workload_release(&w); /* in both cases (workload.h) */
	}
	{
		struct kv_workload w;
		struct kv_diag d;
		int rc = try_load(&w, BASE "cluster: {replicas: 2, prefill_replicas: 2}\n"
					    "workload: {requests: 1, arrival: {process: poisson, rate: 1}}\n",
				  &d);

		EXPECT(rc != 0 && !strcmp(d.field, "cluster.prefill_replicas") &&
			       strstr(d.msg, "fewer than cluster.replicas"),
		       "every replica prefilling: rc %d, field '%s' (%s)", rc, d.field, d.msg);
		kv_workload_release(&w); /* in both cases (workload.h) */
	}
}
END_TEST

#define GROUPS "model: llama-2-7b\ndevice: a100-80g\nscheduler: fifo\ncache: full\n" \
	       "engine: {name: %s}\noutputs: {sample_interval: 0}\n" \
	       "cluster:\n  kv_transfer: {bandwidth: 20GB/s, layerwise: true}\n  groups:\n" \
	       "    - {name: p, role: prefill, replicas: 2, device: h100-80g, tensor_parallel: 2,\n" \
	       "       kv_transfer: {placement: round-robin, topology: pair}}\n" \
	       "    - {name: d, role: decode, replicas: 2}\n" \
	       "    - {name: m, replicas: 1}\n" \
	       "workload:\n  requests: %u\n  oversize: clip\n  arrival: {process: poisson, rate: 8}\n" \
	       "  lengths: {dist: uniform, prompt_min: 16, prompt_max: 2000, output_min: 1, output_max: 200}\n"

/*
 * Groups with roles: a prefill group on H100s at tensor parallel 2 sends to
 * a decode group of A100s (its own kv_transfer keys over the cluster's);
 * a mixed group serves as before.  No arrival joins the decode group; the
 * prefill group decodes nothing; macro steps match exact ones.
 */
START_TEST(group_roles)
{
	static const char *const eng[] = { "vllm", "vllm-v0", "sglang" };
	char yaml[2048];
	int i;

	for (i = 0; i < 3; i++) {
		static struct pd_rec a, b;
		struct kv_workload w;
		struct kv_sim s;
		uint64_t k, n, handoffs = 0;

		snprintf(yaml, sizeof(yaml), GROUPS, eng[i], n_groups());
		pd_run(yaml, &a, &s, &w, 0);
		for (k = 0; k < 2; k++)
			handoffs += s.rep[k].handoffs;
		EXPECT(s.grp[1].arrived == 0 && s.grp[0].arrived > 0 && s.grp[2].arrived > 0 &&
			       a.n == n_groups() && s.pd->n_pg == 1 && s.pd->pg[0].n_dec == 2 &&
			       s.pd->pg[0].x.place == KV_PLACE_ROUND_ROBIN &&
			       s.pd->pg[0].x.bw_bytes_s == 20000000000ULL && s.pd->n_link == 4,
		       "%s: arrivals p %llu d %llu m %llu; %llu ended; %u links", eng[i],
		       (unsigned long long)s.grp[0].arrived, (unsigned long long)s.grp[1].arrived,
		       (unsigned long long)s.grp[2].arrived, (unsigned long long)a.n, s.pd->n_link);
		EXPECT(handoffs > 0 && handoffs == s.pd->sent && link_bytes(&s, &n) > 0 &&
			       s.rep[2].handoffs == 0 && s.rep[4].handoffs == 0,
		       "%s: %llu hand-offs, %llu sent", eng[i], (unsigned long long)handoffs,
		       (unsigned long long)s.pd->sent);
		kv_sim_release(&s);
		kv_workload_release(&w);
		pd_run(yaml, &b, &s, &w, 1);
		kv_sim_release(&s);
		kv_workload_release(&w);
		for (k = 0; k < n_groups(); k++)
			EXPECT(a.q[k].finish_ns == b.q[k].finish_ns && a.q[k].replica == b.q[k].replica,
			       "%s: request %llu: macro finish %llu, exact %llu", eng[i],
			       (unsigned long long)k, (unsigned long long)a.q[k].finish_ns,
			       (unsigned long long)b.q[k].finish_ns);
	}
}
END_TEST

/* A prefill group needs a decode group of its model, and the other way; no split with groups. */
START_TEST(role_errors)
{
	static const char *const bad[][2] = {
		{ "    - {name: p, role: prefill}\n    - {name: m}\n", "cluster.groups" },
		{ "    - {name: d, role: decode}\n", "cluster.groups" },
		{ "    - {name: p, role: prefill}\n    - {name: d, role: decode, model: llama-2-13b}\n",
		  "cluster.groups" },
	};
	char yaml[1024];
	size_t i;

	for (i = 0; i < KV_ARRAY_LEN(bad); i++) {
		struct kv_workload w;
		struct kv_diag d;
		int rc;

		snprintf(yaml, sizeof(yaml),
			 BASE "cluster:\n  groups:\n%s"
			      "workload: {requests: 1, arrival: {process: poisson, rate: 1}}\n",
			 bad[i][0]);
		rc = try_load(&w, yaml, &d);
		EXPECT(rc != 0 && strstr(d.field, bad[i][1]) && strstr(d.field, "role") &&
			       strstr(d.msg, "no group with role"),
		       "case %zu: rc %d, field '%s' (%s)", i, rc, d.field, d.msg);
		kv_workload_release(&w); /* in both cases (workload.h) */
	}
	{
		struct kv_workload w;
		struct kv_diag d;
		int rc = try_load(&w, BASE "cluster:\n  prefill_replicas: 1\n  groups:\n"
					    "    - {name: a, replicas: 2}\n"
					    "workload: {requests: 1, arrival: {process: poisson, rate: 1}}\n",
				  &d);

		EXPECT(rc != 0 && !strcmp(d.field, "cluster.prefill_replicas"),
		       "prefill_replicas with groups: rc %d, field '%s' (%s)", rc, d.field, d.msg);
		kv_workload_release(&w); /* in both cases (workload.h) */
	}
}
END_TEST

/*
 * A request whose KV lands on a decode replica too small for it (a prefill
 * group of 40000 tokens, a decode group of 300, a 500-token prompt) is
 * rejected there for the pool before it is admitted, under every engine:
 * the decode replica's outstanding tokens fall back to 0 (it counted only
 * the request's outputs to generate, its prefill being done; the landed
 * KV's tokens were once dropped first, so the end took the whole prompt
 * off as prefill left and the counter wrapped below 0).
 */
START_TEST(landed_rejected)
{
	static const char *const eng[] = { "vllm", "vllm-v0", "sglang" };
	char yaml[2048];
	int i;

	for (i = 0; i < 3; i++) {
		static struct pd_rec r;
		struct kv_workload w;
		struct kv_sim s;

		snprintf(yaml, sizeof(yaml),
			 "model: llama-2-7b\ndevice: a100-80g\nscheduler: fifo\ncache: full\n"
			 "engine: {name: %s}\noutputs: {sample_interval: 0}\n"
			 "cluster:\n  kv_transfer: {bandwidth: 20GB/s}\n  groups:\n"
			 "    - {name: p, role: prefill, replicas: 1, memory: {kv_tokens: 40000, context_check: warn}}\n"
			 "    - {name: d, role: decode, replicas: 1, memory: {kv_tokens: 300, context_check: warn}}\n"
			 "workload:\n  requests: 1\n  arrival: {process: poisson, rate: 1}\n"
			 "  lengths: {dist: uniform, prompt_min: 500, prompt_max: 500, output_min: 10, output_max: 10}\n",
			 eng[i]);
		pd_run(yaml, &r, &s, &w, i == 0);
		EXPECT(r.n == 1 && r.rejected == 1 && r.q[0].replica == 1 && s.pd->landed == 1,
		       "%s: %llu ended, %llu rejected, on replica %u, %llu landed", eng[i],
		       (unsigned long long)r.n, (unsigned long long)r.rejected, r.q[0].replica,
		       (unsigned long long)s.pd->landed);
		EXPECT(s.rep[1].outstanding_tokens == 0 && s.rep[0].outstanding_tokens == 0,
		       "%s: outstanding tokens %llu (prefill), %llu (decode)", eng[i],
		       (unsigned long long)s.rep[0].outstanding_tokens,
		       (unsigned long long)s.rep[1].outstanding_tokens);
		kv_sim_release(&s);
		kv_workload_release(&w);
	}
}
END_TEST

static Suite *disagg_suite(void)
{
	Suite *s = suite_create("disagg");
	TCase *tc = tcase_create("core");

	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, lone_request_times);
	tcase_add_test(tc, link_contention);
	tcase_add_test(tc, never_before_transfer);
	tcase_add_test(tc, macro_exact);
	tcase_add_test(tc, least_kv_tree);
	tcase_add_test(tc, bad_options);
	tcase_add_test(tc, group_roles);
	tcase_add_test(tc, role_errors);
	tcase_add_test(tc, landed_rejected);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return kv_test_run_suite(disagg_suite());
}

