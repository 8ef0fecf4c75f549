/*
 * test_drf.c -- the drf and wdrf schedulers: fifo for one tenant, equal
 * dominant shares for two, weights for wdrf, the worked example of
 * docs/schedulers-drf.md, accounting, determinism, bad options.
 */
#include "engine.h"
#include "simtest.h"
#include "testutil.h"

/* Accounting figures of sim/sched_drf.c (to move to scheduler.h). */
double kv_drf_cost(const struct kv_replica *r, uint32_t tenant);
uint64_t kv_drf_tokens(const struct kv_replica *r, uint32_t tenant);
double kv_drf_share(const struct kv_replica *r, uint32_t tenant, double *mem, double *cmp);

#define MAX_REQ 16384
#define MAX_SAMPLES 1024

/* A sink recording every request and, at each sample, tenants 0 and 1's progress. */
struct rec {
	uint64_t n; /* requests ended */
	uint64_t ended[KV_END_N]; /* by reason */
	kv_ns finish[MAX_REQ]; /* by request id */
	uint32_t preempt[MAX_REQ]; /* preemptions, by request id */
	kv_ns arrival[MAX_REQ], first[MAX_REQ]; /* arrival and first token, by request id */
	uint32_t tenant[MAX_REQ]; /* by request id */
	double cost[KV_MAX_TENANTS]; /* Cost of completed requests */
	uint64_t tokens[KV_MAX_TENANTS]; /* P + T - 1 of completed requests: tokens scheduled, if never preempted */
	uint32_t n_samples;
	kv_ns t[MAX_SAMPLES]; /* sample times */
	double served[MAX_SAMPLES][2]; /* the engine's service (tokens with unit weights), tenants 0, 1 */
	uint64_t done[MAX_SAMPLES][2]; /* prompt + output tokens of completed requests, tenants 0 and 1 */
	uint64_t waiting[MAX_SAMPLES][2]; /* requests queued, tenants 0 and 1 */
	double dshare[MAX_SAMPLES][2]; /* drf's s_i, when the scheduler is drf/wdrf */
	double dmem[MAX_SAMPLES][2], dcmp[MAX_SAMPLES][2]; /* drf's S_M(i) and S_T(i) */
};

static int rec_request(void *ctx, const struct kv_sim *s, const struct kv_req *q, enum kv_end e)
{
	struct rec *r = ctx;

	(void)s;
	ck_assert_uint_lt(q->id, MAX_REQ);
	r->finish[q->id] = q->finish_ns;
	r->preempt[q->id] = q->preemptions;
	r->arrival[q->id] = q->arrival_ns;
	r->first[q->id] = q->first_token_ns;
	r->tenant[q->id] = q->tenant;
	if (e == KV_END_COMPLETED) {
		r->cost[q->tenant] += q->cost;
		r->tokens[q->tenant] += q->prompt_tokens + q->output_tokens -
					(q->output_tokens ? 1 : 0);
	}
	r->n++;
	r->ended[e]++;
	return 0;
}

static int is_drf(const struct kv_replica *rep)
{
	return !strcmp(rep->sched->name, "drf") || !strcmp(rep->sched->name, "wdrf");
}

static int rec_sample(void *ctx, const struct kv_sim *s, kv_ns t_ns)
{
	struct rec *r = ctx;
	const struct kv_replica *rep = &s->rep[0];
	uint32_t i, k = r->n_samples;

	if (k == MAX_SAMPLES || s->cfg->source.n_tenants < 2)
		return 0;
	r->t[k] = t_ns;
	for (i = 0; i < 2; i++) {
		r->served[k][i] = s->tenant[i].service;
		r->done[k][i] = s->tenant[i].prompt_tokens + s->tenant[i].output_tokens;
		r->waiting[k][i] = s->tenant[i].waiting;
		if (is_drf(rep))
			r->dshare[k][i] = kv_drf_share(rep, i, &r->dmem[k][i], &r->dcmp[k][i]);
	}
	r->n_samples++;
	return 0;
}

/* Loads yaml that must fail; returns the code, with *d filled. */
static int load_err(const char *yaml, struct kv_diag *d)
{
	struct kv_workload w;
	int rc = try_load(&w, yaml, d);

	kv_workload_release(&w);
	return rc;
}

static void run(struct kv_workload *w, struct rec *r, struct kv_sim *s, int check_pool)
{
	struct kv_sink sink = { .ctx = r, .request = rec_request, .sample = rec_sample };

	memset(r, 0, sizeof(*r));
	sim_start(w, s, &sink, check_pool);
	sim_finish(s);
	ck_assert_uint_eq(r->n, s->arrived);
}

/* Runs yaml with the scheduler `sched` spliced in front (YAML keys are unordered). */
static struct rec *run_with(const char *sched, const char *yaml, int check_pool)
{
	struct rec *r = kv_xcalloc(1, sizeof(*r));
	struct kv_workload w;
	struct kv_sim s;
	char buf[4096];

	snprintf(buf, sizeof(buf), "scheduler: %s\n%s", sched, yaml);
	load(&w, buf);
	run(&w, r, &s, check_pool);
	kv_sim_release(&s);
	kv_workload_release(&w);
	return r;
}

/*
 * Tenant 1's share of the service while both tenants were backlogged: from
 * the first sample at or after t0_ns to the last sample at which both had
 * requests queued, checking they had at every sample in between.  Service
 * is the engine's (counted at the end of each iteration; the workloads set
 * its weights to 1, so it is tokens processed, recomputed prefill
 * included), or with `useful` the prompt + output tokens of the requests
 * completed.  *span_s gets the interval's length.
 */
static double backlogged_share(const struct rec *r, kv_ns t0_ns, int useful, double *span_s)
{
	uint32_t a = 0, b, k;
	double d0, d1;

	while (a < r->n_samples && r->t[a] < t0_ns)
		a++;
	for (b = a; b + 1 < r->n_samples && r->waiting[b + 1][0] && r->waiting[b + 1][1]; b++)
		;
	ck_assert_msg(a < r->n_samples && r->waiting[a][0] && r->waiting[a][1],
		      "not both backlogged at %.1f s", (double)t0_ns * 1e-9);
	ck_assert_msg(b > a + 5, "backlogged only over samples %u..%u", a, b);
	for (k = a; k <= b; k++)
		ck_assert(r->waiting[k][0] && r->waiting[k][1]);
	if (useful) {
		d0 = (double)(r->done[b][0] - r->done[a][0]);
		d1 = (double)(r->done[b][1] - r->done[a][1]);
	} else {
		d0 = r->served[b][0] - r->served[a][0];
		d1 = r->served[b][1] - r->served[a][1];
	}
	*span_s = (double)(r->t[b] - r->t[a]) * 1e-9;
	return d1 / (d0 + d1);
}

/*
 * Requests of the runs that check the pool after every event: n, or a third
 * of n under valgrind, where those checks take most of memcheck's time.  The
 * smaller runs take the same paths: the tests still assert preemption.
 */
static uint32_t n_requests(uint32_t n)
{
	return under_valgrind() ? n / 3 : n;
}

/* --- 1. one tenant: fifo ---------------------------------------------------- */

/* 13B on a 40 GB card with chunked blocks: memory pressure, preemption by recompute (%u: requests). */
#define PRESSURE "model: llama-2-13b\ndevice: a100-40g\ncache: chunked\n" \
		 "outputs: {sample_interval: 0}\n"                        \
		 "workload:\n  requests: %u\n  arrival: {process: poisson, rate: 40}\n" \
		 "  lengths: {dist: uniform, prompt_min: 200, prompt_max: 1200, output_min: 200, output_max: 900}\n"

/* With a single tenant, drf and wdrf are fifo: same finish times, same preemptions. */
START_TEST(single_tenant_is_fifo)
{
	static const char *const scheds[] = { "drf", "wdrf", "{name: drf, charge: cost}" };
	uint32_t n = n_requests(300);
	char yaml[1024];
	struct rec *fifo;
	uint64_t preempted = 0;
	size_t i, k;

	snprintf(yaml, sizeof(yaml), PRESSURE, n);
	fifo = run_with("fifo", yaml, 1);
	for (k = 0; k < n; k++)
		preempted += fifo->preempt[k];
	ck_assert_msg(preempted > 0, "no preemption in %u requests: raise the pressure", n);
	ck_assert_uint_eq(fifo->ended[KV_END_COMPLETED], n);
	for (i = 0; i < KV_ARRAY_LEN(scheds); i++) {
		struct rec *r = run_with(scheds[i], yaml, 1);

		for (k = 0; k < n; k++)
			ck_assert_msg(r->finish[k] == fifo->finish[k] &&
					      r->preempt[k] == fifo->preempt[k],
				      "%s: request %zu finished at %llu ns (%u preemptions), fifo at %llu (%u)",
				      scheds[i], k, (unsigned long long)r->finish[k], r->preempt[k],
				      (unsigned long long)fifo->finish[k], fifo->preempt[k]);
		free(r);
	}
	free(fifo);
}
END_TEST

/* --- 2. two tenants, 3:1 arrivals ------------------------------------------ */

/*
 * One replica of Llama-2-7B, both tenants with the same lengths; tenant 0
 * sends 3 of every 4 requests.  At 160 req/s against about 13 served, both
 * stay backlogged through the 40 s of arrivals and long after.
 */
#define TWO_TENANTS(cache, share0, w0, share1, w1)                                      \
	"model: llama-2-7b\ndevice: a100-80g\ncache: " cache "\n"                        \
	"outputs: {sample_interval: 1s}\nseed: 7\n"                                     \
	"fairness: {input_weight: 1, output_weight: 1}\n"                               \
	"workload:\n  duration: 40s\n  arrival: {process: poisson, rate: 160}\n"       \
	"  lengths: {dist: uniform, prompt_min: 100, prompt_max: 700, output_min: 50, output_max: 400}\n" \
	"  tenants:\n"                                                                  \
	"    - {name: heavy, share: " share0 ", weight: " w0 "}\n"                     \
	"    - {name: light, share: " share1 ", weight: " w1 "}\n"

/* The same with prompt-heavy requests (P 500..1500, T 1..4): compute is the dominant resource. */
#define TWO_PREFILL "model: llama-2-7b\ndevice: a100-80g\ncache: chunked\n"                 \
		    "outputs: {sample_interval: 1s}\nseed: 7\n"                              \
		    "fairness: {input_weight: 1, output_weight: 1}\n"                        \
		    "workload:\n  duration: 20s\n  arrival: {process: poisson, rate: 200}\n" \
		    "  lengths: {dist: uniform, prompt_min: 500, prompt_max: 1500, output_min: 1, output_max: 4}\n" \
		    "  tenants:\n    - {name: heavy, share: 3}\n    - {name: light, share: 1}\n"

/* 3:1 arrivals, both backlogged: drf serves the light tenant ~50%, fifo ~25%. */
START_TEST(equal_dominant_shares)
{
	static const char *const yamls[] = { TWO_TENANTS("chunked", "3", "1", "1", "1"), TWO_PREFILL };
	static const char *const names[] = { "memory-dominant", "compute-dominant" };
	size_t i;

	for (i = 0; i < 2; i++) {
		struct rec *fifo = run_with("fifo", yamls[i], 0), *drf = run_with("drf", yamls[i], 0);
		double span_f, span_d, f = backlogged_share(fifo, 2 * KV_NS_PER_S, 0, &span_f),
					      d = backlogged_share(drf, 2 * KV_NS_PER_S, 0, &span_d);

		fprintf(stderr, "3:1 arrivals, %s: light tenant's share of tokens served while both backlogged: fifo %.3f over %.0f s, drf %.3f over %.0f s\n",
			names[i], f, span_f, d, span_d);
		ck_assert_msg(f > 0.20 && f < 0.30, "%s: fifo gave the light tenant %.3f, expected about 0.25",
			      names[i], f);
		ck_assert_msg(d > 0.47 && d < 0.53, "%s: drf gave the light tenant %.3f, expected 0.50 +- 0.03",
			      names[i], d);
		ck_assert_uint_eq(drf->ended[KV_END_COMPLETED], drf->n);
		free(fifo);
		free(drf);
	}
}
END_TEST

/* --- 3. wdrf, weights 2:1 ---------------------------------------------------- */

/*
 * Equal arrivals and lengths, weights 2:1: service 2:1.  Under `full` with
 * reserve: request nothing grows, so nothing is preempted and the engine's
 * service is useful tokens; under `chunked` the weight-1 tenant takes most
 * preemptions and its recomputed prefill counts as service, so only useful
 * tokens (of completed requests) are held to 2:1 there.
 */
START_TEST(weighted_shares)
{
	static const char *const yamls[] = {
		TWO_TENANTS("{name: full, reserve: request}", "1", "2", "1", "1"),
		TWO_TENANTS("chunked", "1", "2", "1", "1"),
	};
	static const char *const caches[] = { "full", "chunked" };
	size_t i;

	for (i = 0; i < 2; i++) {
		struct rec *r, *u;
		double span, light, ratio, useful, uspan, ulight;

		r = run_with("wdrf", yamls[i], 0);
		u = run_with("drf", yamls[i], 0);
		light = backlogged_share(r, 2 * KV_NS_PER_S, 0, &span);
		ratio = (1 - light) / light;
		useful = 1 / backlogged_share(r, 2 * KV_NS_PER_S, 1, &span) - 1;
		ulight = backlogged_share(u, 2 * KV_NS_PER_S, 0, &uspan);
		fprintf(stderr, "equal arrivals, weights 2:1, cache %s: wdrf service ratio %.3f, useful tokens %.3f, over %.0f s (drf, ignoring weights: %.3f)\n",
			caches[i], ratio, useful, span, (1 - ulight) / ulight);
		ck_assert_msg(useful > 1.8 && useful < 2.2, "%s: wdrf useful ratio %.3f, expected 2 +- 10%%",
			      caches[i], useful);
		if (i == 0) /* no preemption: service is useful tokens */
			ck_assert_msg(ratio > 1.8 && ratio < 2.2, "%s: wdrf ratio %.3f, expected 2 +- 10%%",
				      caches[i], ratio);
		ck_assert_msg(ulight > 0.45 && ulight < 0.55, "drf ignores weights: light got %.3f", ulight);
		free(r);
		free(u);
	}
}
END_TEST

/*
 * The window: once tenant 0 (short prompt-heavy requests) has drained and
 * only tenant 1's long decodes run, tenant 0's memory share is 0 (a stock)
 * and its compute share decays as exp(-dt / tau): here tau = 2 s, so by
 * e^-1 over 2 s, once R (the decayed round count) has settled to the
 * decode-only iteration rate; R's drift as contexts grow is the tolerance.
 */
START_TEST(window_decay)
{
	struct rec *r = run_with("{name: drf, window: 2s}",
				 "model: llama-2-7b\ndevice: a100-80g\ncache: chunked\n"
				 "outputs: {sample_interval: 100ms}\nseed: 5\n"
				 "workload:\n  requests: 200\n  arrival: {process: poisson, rate: 20}\n"
				 "  tenants:\n"
				 "    - {name: burst, share: 10, lengths: {dist: fixed, prompt: 500, output: 1}}\n"
				 "    - {name: long, share: 1, lengths: {dist: fixed, prompt: 100, output: 3000}}\n",
				 0);
	kv_ns last0 = 0, last1 = 0;
	uint32_t i, a = 0, b;
	double ratio;

	for (i = 0; i < r->n; i++) {
		kv_ns *last = r->tenant[i] ? &last1 : &last0;

		*last = KV_MAX(*last, r->finish[i]);
	}
	ck_assert_msg(last1 > last0 + 10 * KV_NS_PER_S, "tenant 1 ran %.1f s past tenant 0",
		      (double)(last1 - last0) * 1e-9);
	while (a < r->n_samples && r->t[a] < last0 + 8 * KV_NS_PER_S) /* R settled to the decode-only rate */
		a++;
	for (b = a; b < r->n_samples && r->t[b] < r->t[a] + 2 * KV_NS_PER_S; b++)
		;
	ck_assert_msg(b < r->n_samples && r->t[b] < last1, "no samples 8-10 s after tenant 0 drained");
	ratio = r->dcmp[b][0] / r->dcmp[a][0];
	fprintf(stderr, "window 2 s: tenant 0's compute share %.4g at %.1f s, %.4g at %.1f s: ratio %.3f (e^-1 = 0.368)\n",
		r->dcmp[a][0], (double)r->t[a] * 1e-9, r->dcmp[b][0], (double)r->t[b] * 1e-9, ratio);
	ck_assert_msg(r->dcmp[a][0] > 1e-6, "nothing to decay: %g", r->dcmp[a][0]);
	ck_assert_msg(ratio > 0.33 && ratio < 0.41, "decayed by %.3f over 2 s, expected 0.368 (-10%%, +12%%)", ratio);
	ck_assert(r->dmem[a][0] == 0 && r->dmem[b][0] == 0);
	free(r);
}
END_TEST

/* --- the worked example of docs/schedulers-drf.md --------------------------- */

/*
 * Llama-2-7B, 512 KiB of KV per token; `full` reserving prompt + output:
 * tenant 0 (memory-heavy) P = 16, T = 2032: 1 GiB for ~2032 iterations at
 * ~1 token each; tenant 1 (compute-heavy) P = 255, T = 1: 128 MiB for one or
 * two iterations, 255 tokens.  Budget 256 tokens; memory.share 0.4277 makes
 * the pool 2311 units of 8 MiB = 18.05 GiB.
 */
#define EXAMPLE(sched)                                                                  \
	"scheduler: " sched "\nmodel: llama-2-7b\ndevice: a100-80g\n"                  \
	"memory: {share: 0.4277}\nbatching: {max_tokens: 256}\n"                        \
	"cache: {name: full, reserve: request}\n"                                       \
	"outputs: {sample_interval: 1s}\nseed: 3\n"                                     \
	"workload:\n  duration: 150s\n  arrival: {process: poisson, rate: 82}\n"        \
	"  tenants:\n"                                                                  \
	"    - {name: chat, share: 2, lengths: {dist: fixed, prompt: 16, output: 2032}}\n" \
	"    - {name: batch, share: 80, lengths: {dist: fixed, prompt: 255, output: 1}}\n"

/* A sink that also averages, over the samples in [90 s, 150 s], what the example predicts. */
struct example {
	struct rec r;
	double n0; /* tenant 0's running requests */
	double s[2], mem[2], cmp[2]; /* drf's s_i, S_M(i), S_T(i) */
	uint32_t n; /* samples summed */
	uint64_t iters[2], tok1[2]; /* iterations and tenant 1's prompt tokens completed, first and last sample */
};

static int example_sample(void *ctx, const struct kv_sim *s, kv_ns t_ns)
{
	struct example *e = ctx;
	const struct kv_replica *rep = &s->rep[0];
	uint32_t i;

	if (t_ns >= 90 * KV_NS_PER_S && t_ns <= 150 * KV_NS_PER_S) {
		for (i = 0; i < rep->n_running; i++)
			e->n0 += rep->running[i]->tenant == 0;
		for (i = 0; i < 2 && is_drf(rep); i++) {
			double m, c;

			e->s[i] += kv_drf_share(rep, i, &m, &c);
			e->mem[i] += m;
			e->cmp[i] += c;
		}
		e->iters[e->n > 0] = rep->iterations;
		e->tok1[e->n > 0] = s->tenant[1].prompt_tokens;
		e->n++;
	}
	return rec_sample(&e->r, s, t_ns);
}

/* Runs the example under `sched` and divides the sums into means. */
static void run_example(const char *sched, struct example *e)
{
	struct kv_sink sink = { .ctx = e, .request = rec_request, .sample = example_sample };
	struct kv_workload w;
	struct kv_sim s;
	char yaml[2048];
	uint32_t i;

	memset(e, 0, sizeof(*e));
	snprintf(yaml, sizeof(yaml), EXAMPLE("%s"), sched);
	load(&w, yaml);
	ck_assert_int_eq(kv_sim_init(&s, &w.cfg, &sink), 0);
	ck_assert_uint_eq(s.rep[0].pool.size_bytes, 2311 * 8 * KV_MiB);
	ck_assert_int_eq(kv_sim_run(&s), 0);
	ck_assert_uint_eq(e->r.ended[KV_END_COMPLETED], e->r.n);
	ck_assert_uint_gt(e->n, 50);
	e->n0 /= e->n;
	for (i = 0; i < 2; i++) {
		e->s[i] /= e->n;
		e->mem[i] /= e->n;
		e->cmp[i] /= e->n;
	}
	kv_sim_release(&s);
	kv_workload_release(&w);
}

/*
 * By hand: tenant 0's dominant share is memory, n GiB / 18.05 GiB for n
 * requests running; tenant 1's is compute, the budget left by tenant 0's n
 * decode tokens, (256 - n) / 256.  Divisible DRF equalises them:
 * n / 18.05 = (256 - n) / 256 gives n = 16.8, s = 0.934.  Indivisible: at
 * n = 16, 0.886 < 240/256 = 0.9375 admits a 17th; at 17, 0.942 > 239/256 =
 * 0.934 admits no 18th.  So n = 17, s_0 = 17 / 18.05 = 0.942 and
 * s_1 = 239 / 256 = 0.934: equal within one request of tenant 0
 * (1 / 18.05 = 0.055).  fifo admits tenant 0 whenever its request reaches
 * the head and fits.
 */
START_TEST(worked_example)
{
	struct example *e = kv_xcalloc(1, sizeof(*e)), *f = kv_xcalloc(1, sizeof(*f));
	double busy1, fbusy1;

	run_example("drf", e);
	run_example("fifo", f);
	busy1 = (double)(e->tok1[1] - e->tok1[0]) / (256.0 * (double)(e->iters[1] - e->iters[0]));
	fbusy1 = (double)(f->tok1[1] - f->tok1[0]) / (256.0 * (double)(f->iters[1] - f->iters[0]));
	fprintf(stderr, "worked example, 90-150 s: drf: tenant 0 runs %.2f requests, s_0 %.4f (S_M %.4f, S_T %.4f), s_1 %.4f (S_M %.4f, S_T %.4f), tenant 1's prompt tokens per budget %.4f; fifo: tenant 0 runs %.2f, tenant 1's prompt tokens per budget %.4f\n",
		e->n0, e->s[0], e->mem[0], e->cmp[0], e->s[1], e->mem[1], e->cmp[1], busy1, f->n0,
		fbusy1);
	ck_assert_msg(e->n0 > 16.8 && e->n0 < 17.05, "tenant 0 ran %.2f requests, expected 17", e->n0);
	ck_assert_msg(e->s[0] > 0.935 && e->s[0] < 0.945, "s_0 %.4f, expected 17/18.05 = 0.942", e->s[0]);
	ck_assert_msg(e->s[1] > 0.925 && e->s[1] < 0.940, "s_1 %.4f, expected 239/256 = 0.934", e->s[1]);
	ck_assert_msg(e->mem[0] > e->cmp[0] && e->cmp[1] > e->mem[1],
		      "dominant resources: tenant 0 memory (%.4f vs %.4f), tenant 1 compute (%.4f vs %.4f)",
		      e->mem[0], e->cmp[0], e->cmp[1], e->mem[1]);
	ck_assert_msg(busy1 > 0.92 && busy1 < 0.945, "tenant 1 completed %.4f of the budget", busy1);
	free(e);
	free(f);
}
END_TEST

/* --- 4. no starvation, determinism, accounting --------------------------------- */

/* Three tenants with their own lengths and weights, two replicas, memory pressure (%u: requests). */
#define MIXED "model: llama-2-13b\ndevice: a100-40g\ncache: chunked\nseed: 11\n"          \
	      "memory: {min_block: 8MiB}\n"                                               \
	      "cluster: {replicas: 2, router: round-robin}\noutputs: {sample_interval: 0}\n" \
	      "workload:\n  requests: %u\n  arrival: {process: gamma, rate: 60, cv: 2}\n" \
	      "  lengths: {dist: uniform, prompt_min: 50, prompt_max: 1500, output_min: 1, output_max: 800}\n" \
	      "  tenants:\n"                                                               \
	      "    - {name: a, share: 5, weight: 1}\n"                                        \
	      "    - {name: b, share: 2, weight: 3, lengths: {dist: fixed, prompt: 3000, output: 400}}\n" \
	      "    - {name: c, share: 1, weight: 0.5, lengths: {dist: uniform, prompt_min: 1, prompt_max: 64, output_min: 0, output_max: 30}}\n"

/* Every request completes, under preemption; the same config gives the same run. */
START_TEST(no_starvation_deterministic)
{
	static const char *const scheds[] = { "drf", "wdrf", "{name: wdrf, charge: cost, window: 500ms}" };
	uint32_t n = n_requests(600);
	char yaml[2048];
	size_t i, k;

	snprintf(yaml, sizeof(yaml), MIXED, n);
	for (i = 0; i < KV_ARRAY_LEN(scheds); i++) {
		struct rec *a = run_with(scheds[i], yaml, 1), *b = run_with(scheds[i], yaml, 0);
		uint64_t preempted = 0;

		ck_assert_msg(a->ended[KV_END_COMPLETED] == n, "%s: %llu of %u completed", scheds[i],
			      (unsigned long long)a->ended[KV_END_COMPLETED], n);
		for (k = 0; k < n; k++) {
			preempted += a->preempt[k];
			ck_assert_msg(a->finish[k] == b->finish[k] && a->preempt[k] == b->preempt[k],
				      "%s: request %zu finished at %llu then %llu ns", scheds[i], k,
				      (unsigned long long)a->finish[k], (unsigned long long)b->finish[k]);
		}
		ck_assert_msg(preempted > 0, "%s: no preemption: raise the pressure", scheds[i]);
		free(a);
		free(b);
	}
}
END_TEST

/* kv_drf_cost is end_request's Cost, kv_drf_tokens the tokens scheduled (no preemption: P + T - 1). */
START_TEST(accounting)
{
	static const char *const scheds[] = { "drf", "{name: wdrf, charge: cost}" };
	size_t i;

	for (i = 0; i < KV_ARRAY_LEN(scheds); i++) {
		struct rec *r = kv_xcalloc(1, sizeof(*r));
		struct kv_workload w;
		struct kv_sim s;
		char yaml[4096];
		uint32_t t;

		snprintf(yaml, sizeof(yaml), "scheduler: %s\n%s", scheds[i],
			 "model: llama-2-7b\ndevice: a100-80g\ncache: {name: full, reserve: request}\n"
			 "outputs: {sample_interval: 0}\n"
			 "workload:\n  requests: 400\n  arrival: {process: poisson, rate: 30}\n"
			 "  lengths: {dist: uniform, prompt_min: 1, prompt_max: 2000, output_min: 0, output_max: 500}\n"
			 "  tenants: [{name: a, share: 3}, {name: b, share: 1, weight: 4}, {name: c, share: 1}]\n");
		load(&w, yaml);
		run(&w, r, &s, 0);
		ck_assert_uint_eq(r->ended[KV_END_COMPLETED], 400);
		for (t = 0; t < 3; t++) {
			double want = r->cost[t], got = kv_drf_cost(&s.rep[0], t);

			ck_assert_msg(want > 0 && got == want, "%s: tenant %u charged %.6e, requests cost %.6e",
				      scheds[i], t, got, want);
			ck_assert_msg(kv_drf_tokens(&s.rep[0], t) == r->tokens[t],
				      "%s: tenant %u scheduled %llu tokens, expected %llu", scheds[i], t,
				      (unsigned long long)kv_drf_tokens(&s.rep[0], t),
				      (unsigned long long)r->tokens[t]);
			ck_assert_double_eq(s.tenant[t].cost, want);
		}
		kv_sim_release(&s);
		kv_workload_release(&w);
		free(r);
	}
}
END_TEST

/*
 * No head-of-line blocking across tenants: tenant 0's requests need almost
 * the whole pool (13B, 1.8 GB pool, 2100 tokens of 800 KiB reserved), so
 * each waits for the replica to empty; tenant 1's small requests overtake
 * them under drf, never under fifo.
 */
#define HOL "model: llama-2-13b\ndevice: a100-40g\nmemory: {share: 0.76}\n"                  \
	    "cache: {name: full, reserve: request}\noutputs: {sample_interval: 0}\n"         \
	    "workload:\n  requests: 60\n  arrival: {process: poisson, rate: 20}\n"           \
	    "  tenants:\n"                                                                   \
	    "    - {name: big, share: 1, lengths: {dist: fixed, prompt: 2000, output: 100}}\n" \
	    "    - {name: small, share: 2, lengths: {dist: fixed, prompt: 100, output: 20}}\n"

/* Requests of tenant 1 that started before an earlier-arrived request of tenant 0. */
static uint32_t overtakes(const struct rec *r)
{
	uint32_t i, j, n = 0;

	for (i = 0; i < r->n; i++)
		for (j = 0; j < r->n; j++)
			n += r->tenant[i] == 0 && r->tenant[j] == 1 && r->arrival[j] > r->arrival[i] &&
			     r->first[j] < r->first[i];
	return n;
}

START_TEST(no_head_of_line_blocking)
{
	struct rec *f = run_with("fifo", HOL, 1), *d = run_with("drf", HOL, 1);
	uint32_t nf = overtakes(f), nd = overtakes(d);

	fprintf(stderr, "head-of-line: small requests starting before an earlier big one: fifo %u, drf %u\n",
		nf, nd);

	ck_assert_uint_eq(f->ended[KV_END_COMPLETED], 60);
	ck_assert_uint_eq(d->ended[KV_END_COMPLETED], 60);
	ck_assert_msg(nf == 0, "fifo overtook %u times", nf);
	ck_assert_msg(nd > 10, "drf: small requests overtook blocked big ones %u times", nd);
	free(f);
	free(d);
}
END_TEST

/*
 * Victims come from the tenant with the highest share: with weights 1:100
 * tenant 0's weighted share is the higher, so it takes most preemptions
 * (not all: a victim must not be scheduled yet, and tenant 1's requests
 * admitted last are the only candidates when they fill the tail); fifo,
 * blind to tenants, splits them about evenly.
 */
START_TEST(victims_highest_share)
{
	static const char *const scheds[] = { "fifo", "wdrf" };
	double share0[2];
	size_t i, k;

	for (i = 0; i < 2; i++) {
		struct rec *r = run_with(scheds[i],
					 "model: llama-2-13b\ndevice: a100-40g\ncache: chunked\n"
					 "memory: {min_block: 8MiB}\noutputs: {sample_interval: 0}\n"
					 "workload:\n  requests: 600\n  arrival: {process: poisson, rate: 40}\n"
					 "  lengths: {dist: uniform, prompt_min: 200, prompt_max: 1200, output_min: 200, output_max: 900}\n"
					 "  tenants: [{name: a, weight: 1}, {name: b, weight: 100}]\n",
					 0);
		uint64_t p[2] = { 0, 0 };

		for (k = 0; k < r->n; k++)
			p[r->tenant[k]] += r->preempt[k];
		share0[i] = (double)p[0] / (double)(p[0] + p[1]);
		fprintf(stderr, "%s: preemptions of tenants 0 (weight 1) and 1 (weight 100): %llu, %llu\n",
			scheds[i], (unsigned long long)p[0], (unsigned long long)p[1]);
		ck_assert_uint_eq(r->ended[KV_END_COMPLETED], 600);
		free(r);
	}
	ck_assert_msg(share0[0] < 0.55 && share0[1] > 0.65,
		      "tenant 0's share of preemptions: fifo %.3f, wdrf %.3f", share0[0], share0[1]);
}
END_TEST

/* --- 5. bad options -------------------------------------------------------------- */

static void bad(const char *sched, int want_rc, const char *want_field)
{
	struct kv_diag d;
	char yaml[1024];
	int rc;

	memset(&d, 0, sizeof(d));
	snprintf(yaml, sizeof(yaml), "scheduler: %s\nmodel: llama-2-7b\ndevice: a100-80g\n"
		 "workload: {requests: 1, arrival: {process: poisson, rate: 1}}\n", sched);
	rc = load_err(yaml, &d);
	ck_assert_msg(rc == want_rc && !strcmp(d.field, want_field),
		      "%s: rc %d field '%s' (%s), want %d '%s'", sched, rc, d.field, d.msg, want_rc,
		      want_field);
}

START_TEST(bad_options)
{
	struct kv_workload w;
	struct kv_sim s;
	const struct kv_option *o;
	int rc;

	bad("{name: drf, window: 0}", KV_ERANGE, "scheduler.window");
	bad("{name: wdrf, window: 10us}", KV_ERANGE, "scheduler.window");
	bad("{name: drf, window: soon}", KV_EINVAL, "scheduler.window");
	bad("{name: drf, charge: money}", KV_EINVAL, "scheduler.charge");
	bad("{name: wdrf, charge: [tokens]}", KV_EINVAL, "scheduler.charge");
	bad("{name: drf, quantum: 3}", KV_EINVAL, "scheduler.quantum");
	/* what YAML cannot say, a config built in C can: init checks it */
	load(&w, "scheduler: wdrf\nmodel: llama-2-7b\ndevice: a100-80g\n"
		 "workload: {requests: 1, arrival: {process: poisson, rate: 1},\n"
		 "  tenants: [{name: a}, {name: b}]}\n");
	w.cfg.source.tenants[1].weight = 0;
	rc = kv_sim_init(&s, &w.cfg, NULL);
	ck_assert_msg(rc == KV_EINVAL && !strcmp(s.diag.field, "workload.tenants[1].weight"),
		      "rc %d field '%s'", rc, s.diag.field);
	kv_sim_release(&s);
	w.cfg.source.tenants[1].weight = 1;
	for (o = w.cfg.sched->options; strcmp(o->name, "window"); o++)
		;
	*(kv_ns *)((char *)w.cfg.sched_opts + o->offset) = 0;
	rc = kv_sim_init(&s, &w.cfg, NULL);
	ck_assert_msg(rc == KV_EINVAL && !strcmp(s.diag.field, "scheduler.window"),
		      "rc %d field '%s'", rc, s.diag.field);
	kv_sim_release(&s);
	kv_workload_release(&w);
}
END_TEST

static Suite *drf_suite(void)
{
	Suite *s = suite_create("drf");
	TCase *tc = tcase_create("core");

	tcase_add_test(tc, single_tenant_is_fifo);
	tcase_add_test(tc, equal_dominant_shares);
	tcase_add_test(tc, weighted_shares);
	tcase_add_test(tc, window_decay);
	tcase_add_test(tc, worked_example);
	tcase_add_test(tc, no_starvation_deterministic);
	tcase_add_test(tc, accounting);
	tcase_add_test(tc, no_head_of_line_blocking);
	tcase_add_test(tc, victims_highest_share);
	tcase_add_test(tc, bad_options);
	tcase_set_timeout(tc, 300);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return kv_test_run_suite(drf_suite());
}
