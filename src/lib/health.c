/* health.c -- the run's health report; see health.h and docs/health.md. */
#include "health.h"
#include "csv.h"
#include "../../sim/replica.h"

#include <math.h>
#include <stdarg.h>
#include <string.h>

const char kv_csv_header_health[] = "check,target,value,status,cause\n";

void kv_mem_trend_add(struct kv_mem_trend *m, double t_s, double reserved, double used,
		      double running, double waiting, double arrived, double cached)
{
	size_t i;

	if (!m->stride)
		m->stride = 1;
	if (m->seen++ % m->stride)
		return;
	if (m->n == KV_TREND_CAP) { /* keep every other sample, take every other from now on */
		for (i = 0; 2 * i < KV_TREND_CAP; i++) {
			m->t[i] = m->t[2 * i];
			m->reserved[i] = m->reserved[2 * i];
			m->used[i] = m->used[2 * i];
			m->running[i] = m->running[2 * i];
			m->waiting[i] = m->waiting[2 * i];
			m->arrived[i] = m->arrived[2 * i];
			m->cached[i] = m->cached[2 * i];
		}
		m->n = KV_TREND_CAP / 2;
		m->stride *= 2;
		if ((m->seen - 1) % m->stride)
			return;
	}
	m->t[m->n] = t_s;
	m->reserved[m->n] = reserved;
	m->used[m->n] = used;
	m->running[m->n] = running;
	m->waiting[m->n] = waiting;
	m->cached[m->n] = cached;
	m->arrived[m->n++] = arrived;
}

const char *kv_health_status_name(enum kv_health_status st)
{
	return st == KV_HEALTH_PASS ? "pass" : st == KV_HEALTH_WARN ? "warn" : "n/a";
}

/* Starts check `name` with target text fmt...; the caller sets value, status and cause. */
static struct kv_health_check *check(struct kv_health *h, const char *name, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static struct kv_health_check *check(struct kv_health *h, const char *name, const char *fmt, ...)
{
	struct kv_health_check *c = &h->c[h->n++];
	va_list ap;

	memset(c, 0, sizeof(*c));
	c->name = name;
	c->value = NAN;
	c->status = KV_HEALTH_NA;
	va_start(ap, fmt);
	vsnprintf(c->target, sizeof(c->target), fmt, ap);
	va_end(ap);
	return c;
}

static void cause(struct kv_health_check *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void cause(struct kv_health_check *c, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(c->cause, sizeof(c->cause), fmt, ap);
	va_end(ap);
}

/* The u64 option `name` of the cache model of replica 0 (its private state), or 0 when it has none. */
static uint64_t cache_u64_option(const struct kv_sim *s, const char *name)
{
	const struct kv_replica *r = &s->rep[0];
	const struct kv_option *o;

	for (o = r->cache->options; o && o->name; o++)
		if (!strcmp(o->name, name) && o->type == KV_OPT_U64)
			return *(const uint64_t *)((const char *)r->cache_priv + o->offset);
	return 0;
}

/* Completed requests of log with prompt+output above len tokens, and all completed ones. */
static void count_longer(const struct kv_done_log *log, uint64_t len, uint64_t *over, uint64_t *all)
{
	uint64_t i;

	*over = *all = 0;
	for (i = 0; log && log->len_count && i <= log->max_len; i++) {
		*all += log->len_count[i];
		if (i > len)
			*over += log->len_count[i];
	}
}

/* Cache hit rate: misses attributed to evictions, to prompts beyond a sparse budget, or to the workload. */
static void check_hit_rate(struct kv_health *h, const struct kv_sim *s, const struct kv_workload *w,
			   const struct kv_summary *sum, const struct kv_done_log *log)
{
	struct kv_health_check *c = check(h, "cache_hit_rate", ">= %.2f", w->health.hit_rate_min);
	struct kv_cache_stats t = { 0 }, st;
	uint64_t budget = cache_u64_option(s, "budget"), over, all;
	uint32_t i;

	if (isnan(kv_summary_get(sum, "cache_hit_rate"))) {
		cause(c, "cache %s keeps no prefix cache or budget: no hit rate", s->rep[0].cache->name);
		return;
	}
	for (i = 0; i < s->n_rep; i++) {
		if (!s->rep[i].cache->stats)
			continue; /* a group whose cache model keeps no figures */
		memset(&st, 0, sizeof(st));
		if (s->rep[i].cache->stats) /* replica groups may run cache models without */
			s->rep[i].cache->stats(s->rep[i].cache_priv, &st);
		t.lookup_tokens += st.lookup_tokens;
		t.hit_tokens += st.hit_tokens;
		t.evictions += st.evictions;
	}
	count_longer(log, budget, &over, &all);
	if (budget ? !all : !t.lookup_tokens) {
		cause(c, budget ? "no request completed: cache %s measured no attention mass kept" :
		      "cache %s looked up no token: its hit rate is its definition, not a measurement",
		      s->rep[0].cache->name);
		return;
	}
	c->value = kv_summary_get(sum, "cache_hit_rate");
	c->status = c->value >= w->health.hit_rate_min ? KV_HEALTH_PASS : KV_HEALTH_WARN;
	if (c->status == KV_HEALTH_PASS)
		return;
	if (budget) {
		cause(c, "hit rate %.2f: %.0f%% of %llu completed requests hold more than the sparse budget "
		      "of %llu tokens (attention mass outside it is lost); raise cache.budget or check "
		      "the length distribution", c->value, all ? 100.0 * (double)over / (double)all : 0,
		      (unsigned long long)all, (unsigned long long)budget);
	} else if (t.evictions) {
		cause(c, "hit rate %.2f: %llu of %llu looked-up tokens missed and %llu cached entries "
		      "were evicted: the pool cannot keep the shared prefixes; a larger pool or fewer "
		      "max_seqs keeps more", c->value,
		      (unsigned long long)(t.lookup_tokens - t.hit_tokens),
		      (unsigned long long)t.lookup_tokens, (unsigned long long)t.evictions);
	} else {
		uint64_t pb = cache_u64_option(s, "prefix_block_tokens");
		uint64_t sp = cache_u64_option(s, "system_prompt_tokens");
		char why[160] = "";

		if (pb)
			snprintf(why, sizeof(why), " (only whole prefix blocks of %llu tokens are shared; "
				 "the system prompt is %llu tokens)", (unsigned long long)pb,
				 (unsigned long long)sp);
		cause(c, "hit rate %.2f: %llu of %llu looked-up tokens missed with no eviction, so the "
		      "misses are compulsory: the prompts share little%s; check that chunks align with "
		      "the prefix blocks and the workload's prefix sharing", c->value,
		      (unsigned long long)(t.lookup_tokens - t.hit_tokens),
		      (unsigned long long)t.lookup_tokens, why);
	}
}

/* Memory utilisation: too high with preemptions or refusals is a small pool; too low an idle one. */
static void check_memory(struct kv_health *h, const struct kv_sim *s, const struct kv_workload *w,
			 const struct kv_summary *sum)
{
	const struct kv_health_cfg *hc = &w->health;
	struct kv_health_check *c = check(h, "mem_util", "%.2f..%.2f", hc->mem_util_min,
					  hc->mem_util_max);
	uint64_t pool_bytes = s->grp[0].pool_bytes; /* a replica's (the first group's) */
	double peak = pool_bytes ? kv_summary_get(sum, "kv_peak_reserved_bytes") /
					      (double)pool_bytes : NAN;
	double useful = kv_summary_get(sum, "mem_useful_share");
	double pre = kv_summary_get(sum, "preemptions"), rej = kv_summary_get(sum, "rejected_pool");

	if (!s->last_finish_ns || !pool_bytes) {
		cause(c, pool_bytes ? "no request finished: no span to average the pool's use over" :
		      "no KV pool");
		return;
	}
	c->value = kv_summary_get(sum, "mem_reserved_util");
	c->status = c->value >= hc->mem_util_min && c->value <= hc->mem_util_max ? KV_HEALTH_PASS :
										   KV_HEALTH_WARN;
	if (c->status == KV_HEALTH_PASS)
		return;
	if (c->value < hc->mem_util_min && rej > 0)
		cause(c, "utilisation %.2f (peak %.2f of the pool) although %.0f requests were refused "
		      "memory: requests that cannot fit the free pool are refused, so it stays idle; a "
		      "larger pool (memory.kv_tokens, memory.share) or shorter requests", c->value, peak,
		      rej);
	else if (c->value < hc->mem_util_min)
		cause(c, "utilisation %.2f (peak %.2f of the pool): the pool is larger than this load "
		      "needs; fewer replicas or a lower memory.share serve it", c->value, peak);
	else if (pre > 0 || rej > 0)
		cause(c, "utilisation %.2f with %.0f preemptions and %.0f requests refused memory: pool "
		      "too small for max_seqs %u (peak %.0f in flight; %.0f%% of reserved bytes hold live "
		      "tokens under cache %s)", c->value, pre, rej, w->cfg.max_batch_seqs,
		      kv_summary_get(sum, "peak_in_flight"), 100 * useful, s->rep[0].cache->name);
	else
		cause(c, "utilisation %.2f without preemptions: little headroom for bursts; %.0f%% of "
		      "reserved bytes hold live tokens under cache %s", c->value, 100 * useful,
		      s->rep[0].cache->name);
}

/*
 * 1 (with c's cause set) when the fairness index has no evidence to judge:
 * fewer than two tenants brought requests (the index would weigh a tenant
 * that asked for nothing), or no service was delivered (Jain's index of
 * all zeros is 1 by convention, not by measurement).
 */
static int fairness_na(const struct kv_sim *s, struct kv_health_check *c)
{
	const struct kv_source_spec *src = &s->cfg->source;
	double service = 0;
	uint32_t i, asked = 0;
	int n = 0;

	for (i = 0; i < src->n_tenants; i++) {
		asked += s->tenant[i].arrived > 0;
		service += s->tenant[i].service;
	}
	if (asked >= 2 && service > 0)
		return 0;
	if (asked >= 2) {
		cause(c, "no service delivered to any tenant: nothing to compare");
		return 1;
	}
	n = snprintf(c->cause, sizeof(c->cause), "%u of %u tenants brought requests (", asked,
		     src->n_tenants);
	for (i = 0; i < src->n_tenants && n >= 0 && (size_t)n < sizeof(c->cause); i++)
		n += snprintf(c->cause + n, sizeof(c->cause) - (size_t)n, "%s%s %llu", i ? ", " : "",
			      src->tenants[i].name, (unsigned long long)s->tenant[i].arrived);
	if (n >= 0 && (size_t)n < sizeof(c->cause))
		snprintf(c->cause + n, sizeof(c->cause) - (size_t)n, "): nothing to share");
	return 1;
}

/* Fairness: the tenant furthest below its weight share, its demand, and the scheduler. */
static void check_fairness(struct kv_health *h, const struct kv_sim *s, const struct kv_workload *w,
			   const struct kv_summary *sum)
{
	const struct kv_source_spec *src = &s->cfg->source;
	struct kv_health_check *c = check(h, "fairness", ">= %.2f", w->health.fairness_min);
	struct kv_tenant_summary ts, worst = { 0 };
	double tok = 0, ratio = INFINITY, demand;
	uint32_t i, wi = 0;

	if (src->n_tenants < 2) {
		cause(c, "one tenant: nothing to share");
		return;
	}
	if (fairness_na(s, c))
		return;
	c->value = kv_summary_get(sum, "jain_fairness");
	c->status = c->value >= w->health.fairness_min ? KV_HEALTH_PASS : KV_HEALTH_WARN;
	if (c->status == KV_HEALTH_PASS)
		return;
	for (i = 0; i < src->n_tenants; i++) {
		tok += (double)(s->tenant[i].prompt_tokens + s->tenant[i].output_tokens);
		kv_tenant_summary(s, NULL, i, &ts);
		if (ts.service_share / ts.weight_share < ratio) {
			ratio = ts.service_share / ts.weight_share;
			worst = ts;
			wi = i;
		}
	}
	demand = tok > 0 ? (double)(s->tenant[wi].prompt_tokens + s->tenant[wi].output_tokens) / tok : 0;
	cause(c, "fairness %.2f: tenant %s's service share %.2f vs weight %.2f under %s (it brought "
	      "%.2f of the tokens; the service gap between backlogged tenants peaked at %.0f weighted "
	      "tokens); %s", c->value, src->tenants[wi].name, worst.service_share,
	      worst.weight_share, s->cfg->sched->name, demand,
	      kv_summary_get(sum, "service_diff_max"),
	      demand <= worst.service_share * 1.05 ? "it got what it asked for: the index reflects "
	      "unequal demand, adjust weights to demand" : !strcmp(s->cfg->sched->name, "fifo") ?
	      "try drf or vtc" : "adjust the scheduling weights");
}

/* The largest contiguous block the pool hands out. */
static void check_block(struct kv_health *h, const struct kv_sim *s, const struct kv_workload *w,
			const struct kv_summary *sum)
{
	const struct kv_pool *p = &s->rep[0].pool;
	struct kv_health_check *c = check(h, "max_block_bytes", "<= %llu",
					  (unsigned long long)w->health.max_block_bytes);

	c->value = (double)(p->unit_bytes << p->max_order);
	c->status = c->value <= (double)w->health.max_block_bytes ? KV_HEALTH_PASS : KV_HEALTH_WARN;
	if (c->status == KV_HEALTH_WARN)
		cause(c, "largest block %.1f MiB (memory.max_block %s): one request's KV can take one "
		      "contiguous region (%.0f refusals with enough free bytes); set memory.max_block: "
		      "8MiB", c->value / KV_MiB, w->cfg.pool_max_block_bytes ? "above the target" :
		      "0, no cap", kv_summary_get(sum, "alloc_fail_frag"));
}

/* Long tail: E2E p99 / p50, explained by over-long requests or by queueing. */
static void check_tail(struct kv_health *h, const struct kv_sim *s, const struct kv_workload *w,
		       const struct kv_summary *sum, const struct kv_done_log *log)
{
	const struct kv_health_cfg *hc = &w->health;
	struct kv_health_check *c = check(h, "e2e_tail_ratio", "<= %.1f", hc->tail_ratio_max);
	double p50 = kv_summary_get(sum, "e2e_p50_s"), p99 = kv_summary_get(sum, "e2e_p99_s");
	double done = kv_summary_get(sum, "completed");
	uint64_t over, all;

	if (!(done > 0) || !(p50 > 0)) {
		cause(c, "no completed request");
		return;
	}
	if (done < KV_HEALTH_TAIL_MIN_DONE) {
		cause(c, "%.0f completed requests: a p99 needs at least %d", done, KV_HEALTH_TAIL_MIN_DONE);
		return;
	}
	c->value = p99 / p50;
	c->status = c->value <= hc->tail_ratio_max ? KV_HEALTH_PASS : KV_HEALTH_WARN;
	if (c->status == KV_HEALTH_PASS)
		return;
	count_longer(log, hc->long_tokens, &over, &all);
	if (over)
		cause(c, "p99 E2E %.1fx p50: %.1f%% of requests over %llu tokens under %s; try "
		      "scheduler preempt with segment_tokens (segmenting over-long requests)", c->value,
		      100.0 * (double)over / (double)all, (unsigned long long)hc->long_tokens,
		      s->cfg->sched->name);
	else
		cause(c, "p99 E2E %.1fx p50 with no request over %llu tokens: the tail is queueing "
		      "(TTFT p99 %.3g s vs p50 %.3g s, %.0f preemptions under %s); add capacity, or "
		      "priority preemption (scheduler preempt)", c->value,
		      (unsigned long long)hc->long_tokens,
		      kv_summary_get(sum, "ttft_p99_s"), kv_summary_get(sum, "ttft_p50_s"),
		      kv_summary_get(sum, "preemptions"), s->cfg->sched->name);
}

/* Means of the samples [a, b) of m: reserved, used, running, waiting; and the arrival rate, req/s. */
struct half {
	double reserved, used, running, waiting, cached, rate;
};

static void half_means(const struct kv_mem_trend *m, size_t a, size_t b, struct half *x)
{
	size_t i;

	memset(x, 0, sizeof(*x));
	for (i = a; i < b; i++) {
		x->reserved += m->reserved[i];
		x->used += m->used[i];
		x->running += m->running[i];
		x->waiting += m->waiting[i];
		x->cached += m->cached[i];
	}
	x->cached /= (double)(b - a);
	x->reserved /= (double)(b - a);
	x->used /= (double)(b - a);
	x->running /= (double)(b - a);
	x->waiting /= (double)(b - a);
	x->rate = m->t[b - 1] > m->t[a] ? (m->arrived[b - 1] - m->arrived[a]) / (m->t[b - 1] - m->t[a]) : 0;
}

/* 1 when a and b differ by at most 20% of the larger (and by at most 1 for small counts). */
static int similar(double a, double b)
{
	return fabs(a - b) <= KV_MAX(0.2 * KV_MAX(a, b), 1.0);
}

/*
 * 1 (with c's cause set, c n/a) when the load of halves a and b is not
 * flat: memory that follows a changing load says nothing about memory that
 * keeps growing, either way.  The cause names each quantity that changed,
 * and the growth (a share of the pool) seen with it.  Rejected: judging a
 * rising load with no growth as a pass (a falling one can hide a leak, and
 * the target is defined at flat load).
 */
static int load_changed(struct kv_health_check *c, const struct half *a, const struct half *b,
			double growth)
{
	const double x[3][2] = { { a->rate, b->rate }, { a->running, b->running },
				 { a->waiting, b->waiting } };
	static const char *const fmt[3] = { "arriving %.2f to %.2f req/s", "running %.0f to %.0f",
					     "waiting %.0f to %.0f" };
	char part[3][64];
	size_t i, k = 0;

	for (i = 0; i < 3; i++)
		if (!similar(x[i][0], x[i][1]))
			snprintf(part[k++], sizeof(part[0]), fmt[i], x[i][0], x[i][1]);
	if (!k)
		return 0;
	cause(c, "load not flat: %s%s%s%s%s between the halves of the arrival window (reserved KV "
	      "moved %+.2f of the pool with it): memory that follows the load is not growth; judged "
	      "at flat load only", part[0], k > 1 ? ", " : "", k > 1 ? part[1] : "", k > 2 ? ", " : "",
	      k > 2 ? part[2] : "", growth);
	return 1;
}

/*
 * Memory that keeps growing: over the arrival window (until the last
 * arrival) less its first quarter (the pool filling from empty), the mean
 * reserved bytes of the second half against the first, when the load is
 * flat (arrival rate, running and waiting requests within 20%); the slope
 * of reserved bytes over the window by least squares.  The cause: live
 * tokens (requests lengthening) or reserved bytes without live tokens
 * (retained cache entries, waste), with the cache's evictions.
 */
static void check_growth(struct kv_health *h, const struct kv_sim *s, const struct kv_workload *w,
			 const struct kv_mem_trend *m)
{
	struct kv_health_check *c = check(h, "mem_growth", "<= %.2f of the pool at flat load",
					  w->health.mem_growth_max);
	double pool = kv_sim_pool_total_bytes(s), st = 0, sr = 0, stt = 0, str = 0, slope;
	struct kv_cache_stats cs, tot = { 0 };
	struct half a, b;
	size_t end, start, mid, i, k;
	int n;

	if (!(pool > 0)) {
		cause(c, "no KV pool");
		return;
	}
	if (!m || m->n < 2) {
		cause(c, m && m->n ? "one timeseries sample: too few to judge a trend" :
		      "no timeseries samples (outputs.sample_interval 0 takes none)");
		return;
	}
	for (end = m->n; end > 1 && m->arrived[end - 2] == m->arrived[m->n - 1]; end--)
		;
	start = end / 4;
	if (end - start < 8) {
		cause(c, "%zu samples in the arrival window after its first quarter: too few to judge a "
		      "trend (outputs.sample_interval smaller or a longer run)", end - start);
		return;
	}
	mid = start + (end - start) / 2;
	half_means(m, start, mid, &a);
	half_means(m, mid, end, &b);
	for (i = start; i < end; i++) {
		st += m->t[i];
		sr += m->reserved[i];
	}
	k = end - start;
	for (i = start; i < end; i++) {
		stt += (m->t[i] - st / (double)k) * (m->t[i] - st / (double)k);
		str += (m->t[i] - st / (double)k) * (m->reserved[i] - sr / (double)k);
	}
	slope = stt > 0 ? str / stt : 0;
	if (load_changed(c, &a, &b, (b.reserved - a.reserved) / pool))
		return;
	c->value = (b.reserved - a.reserved) / pool;
	c->status = KV_HEALTH_PASS;
	if (c->value <= w->health.mem_growth_max || slope <= 0)
		return;
	c->status = KV_HEALTH_WARN;
	for (i = 0; i < s->n_rep; i++) {
		memset(&cs, 0, sizeof(cs));
		if (s->rep[i].cache->stats)
			s->rep[i].cache->stats(s->rep[i].cache_priv, &cs);
		tot.evictions += cs.evictions;
	}
	n = snprintf(c->cause, sizeof(c->cause), "reserved KV rose %.2f of the pool (%.0f to %.0f MiB, "
		     "%.3g MiB/s) at flat load (%.2f vs %.2f req/s arriving, %.0f vs %.0f running, "
		     "%.0f vs %.0f waiting); ", c->value, a.reserved / KV_MiB, b.reserved / KV_MiB,
		     slope / KV_MiB, a.rate, b.rate, a.running, b.running, a.waiting, b.waiting);
	n = n < 0 || (size_t)n >= sizeof(c->cause) ? sizeof(c->cause) - 1 : (size_t)n;
	if (b.used - a.used >= 0.5 * (b.reserved - a.reserved))
		snprintf(c->cause + n, sizeof(c->cause) - n, "live KV rose with it (%.1f to %.1f MiB a "
			 "running request): the batch's requests grow longer; check the length "
			 "distribution", a.running > 0 ? a.used / a.running / KV_MiB : 0,
			 b.running > 0 ? b.used / b.running / KV_MiB : 0);
	else if (b.cached - a.cached >= 0.5 * (b.reserved - a.reserved))
		snprintf(c->cause + n, sizeof(c->cause) - n, "live KV %.0f to %.0f MiB, cached entries "
			 "no request uses %.0f to %.0f MiB: cache %s keeps finished requests' blocks "
			 "until the pool fills (%llu evictions so far), by design; if unintended, "
			 "reclaim periodically or share a smaller pool", a.used / KV_MiB,
			 b.used / KV_MiB, a.cached / KV_MiB, b.cached / KV_MiB, s->rep[0].cache->name,
			 (unsigned long long)tot.evictions);
	else
		snprintf(c->cause + n, sizeof(c->cause) - n, "live KV %.0f to %.0f MiB: bytes held by "
			 "no running request accumulate under cache %s; the seed's remedies: reference "
			 "counting, pool integrity checks (--check-pool), periodic reclamation",
			 a.used / KV_MiB, b.used / KV_MiB, s->rep[0].cache->name);
}

void kv_health_compute(const struct kv_sim *s, const struct kv_workload *w,
		       const struct kv_summary *sum, const struct kv_done_log *log,
		       const struct kv_mem_trend *trend, struct kv_health *h)
{
	h->n = 0;
	check_hit_rate(h, s, w, sum, log);
	check_memory(h, s, w, sum);
	check_fairness(h, s, w, sum);
	check_block(h, s, w, sum);
	check_tail(h, s, w, sum, log);
	check_growth(h, s, w, trend);
}

int kv_health_write_csv(const struct kv_health *h, FILE *f)
{
	int neg = fputs(kv_csv_header_health, f) < 0;
	size_t i;

	for (i = 0; i < h->n; i++) {
		const struct kv_health_check *c = &h->c[i];

		neg |= fprintf(f, "%s,", c->name) < 0 || kv_csv_put(f, c->target);
		if (isnan(c->value))
			neg |= fputc(',', f) == EOF;
		else if (c->value == floor(c->value) && fabs(c->value) < 1e15) /* bytes */
			neg |= fprintf(f, ",%.0f", c->value) < 0;
		else
			neg |= fprintf(f, ",%.6g", c->value) < 0;
		neg |= fprintf(f, ",%s,", kv_health_status_name(c->status)) < 0 ||
		       kv_csv_put(f, c->cause) || fputc('\n', f) == EOF;
	}
	return neg ? -1 : 0;
}

void kv_health_print(const struct kv_health *h, FILE *f)
{
	size_t i, warn = 0, na = 0;

	for (i = 0; i < h->n; i++) {
		warn += h->c[i].status == KV_HEALTH_WARN;
		na += h->c[i].status == KV_HEALTH_NA;
	}
	fprintf(f, "health: %zu of %zu checks warn, %zu n/a (health.csv; docs/health.md)\n", warn,
		h->n, na);
	for (i = 0; i < h->n; i++) {
		const struct kv_health_check *c = &h->c[i];

		if (isnan(c->value))
			fprintf(f, "  %-4s %-16s %12s  target %s", kv_health_status_name(c->status),
				c->name, "-", c->target);
		else
			fprintf(f, c->value == floor(c->value) ? "  %-4s %-16s %12.0f  target %s" :
				"  %-4s %-16s %12.4g  target %s", kv_health_status_name(c->status),
				c->name, c->value, c->target);
		fprintf(f, "%s%s\n", c->cause[0] ? ": " : "", c->cause);
	}
}
