/* metrics.c -- log-linear histograms, Jain's index and the run's summary; see metrics.h. */
#include "metrics.h"
#include "engine.h"
#include "groups.h"
#include "load.h"
#include "replica.h"

#include <assert.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

void kv_hist_init(struct kv_hist *h)
{
	memset(h, 0, sizeof(*h));
	h->min = UINT64_MAX;
	h->count = kv_xcalloc(KV_HIST_BUCKETS, sizeof(*h->count));
}

void kv_hist_release(struct kv_hist *h)
{
	free(h->count);
	h->count = NULL;
}

/* Bucket of v: exact below 2^SUB, else (exponent, top SUB bits after the leading one). */
static uint32_t bucket_of(uint64_t v)
{
	unsigned e;

	if (v < (1ULL << KV_HIST_SUB))
		return (uint32_t)v;
	e = 63u - (unsigned)__builtin_clzll(v); /* e >= SUB */
	return (uint32_t)(((e - KV_HIST_SUB + 1) << KV_HIST_SUB) |
			  ((v >> (e - KV_HIST_SUB)) & ((1u << KV_HIST_SUB) - 1)));
}

/* Midpoint of a bucket's value range. */
static uint64_t bucket_mid(uint32_t b)
{
	uint32_t hi = b >> KV_HIST_SUB, lo = b & ((1u << KV_HIST_SUB) - 1);
	unsigned shift;
	uint64_t base;

	if (hi == 0)
		return b;
	shift = hi - 1;
	base = ((1ULL << KV_HIST_SUB) | lo) << shift;
	return base + ((1ULL << shift) >> 1);
}

void kv_hist_add(struct kv_hist *h, uint64_t v)
{
	h->count[bucket_of(v)]++;
	h->n++;
	h->sum += (double)v;
	if (v < h->min)
		h->min = v;
	if (v > h->max)
		h->max = v;
}

uint64_t kv_hist_quantile(const struct kv_hist *h, double q)
{
	uint64_t rank, seen = 0, v;
	uint32_t b;

	if (!h->n)
		return 0;
	if (q <= 0)
		return h->min;
	if (q >= 1)
		return h->max;
	rank = (uint64_t)(q * (double)h->n);
	if ((double)rank < q * (double)h->n)
		rank++; /* nearest rank: ceil(q n) */
	if (rank == 0)
		rank = 1;
	for (b = 0; b < KV_HIST_BUCKETS; b++) {
		seen += h->count[b];
		if (seen >= rank)
			break;
	}
	v = bucket_mid(b);
	return v < h->min ? h->min : v > h->max ? h->max : v;
}

double kv_hist_mean(const struct kv_hist *h)
{
	return h->n ? h->sum / (double)h->n : 0.0;
}

double kv_jain(const double *x, size_t n)
{
	double s = 0, s2 = 0;
	size_t i;

	for (i = 0; i < n; i++) {
		s += x[i];
		s2 += x[i] * x[i];
	}
	return (n == 0 || s2 == 0) ? 1.0 : s * s / ((double)n * s2);
}

/* --- completed requests for the short/long metrics ---------------------------- */

/* One completed request in the scratch file. */
struct done_rec {
	uint32_t len; /* prompt + output tokens (clamped) */
	float e2e_s; /* end-to-end latency */
};

const char *const kv_slo_metric_names[KV_SLO_METRICS] = { "ttft", "tpot", "e2e" };

int kv_slo_meets(const struct kv_slo_limits *l, kv_ns ttft_ns, kv_ns tpot_ns, kv_ns e2e_ns)
{
	const kv_ns v[KV_SLO_METRICS] = { ttft_ns, tpot_ns, e2e_ns };
	int m;

	for (m = 0; m < KV_SLO_METRICS; m++)
		if (l->max_ns[m] && v[m] > l->max_ns[m])
			return 0;
	return 1;
}

uint64_t kv_cfg_gpus(const struct kv_sim_config *c)
{
	uint64_t n = 0;
	uint32_t i;

	for (i = 0; i < c->n_groups; i++) /* several groups: theirs */
		n += kv_cfg_gpus(&c->groups[i]);
	/* pp 0 and dp 0 read as 1 */
	return c->n_groups ? n : (uint64_t)c->replicas * c->tp * (c->pp ? c->pp : 1) * (c->dp ? c->dp : 1);
}

int kv_done_log_init(struct kv_done_log *l, uint64_t max_len, const struct kv_slo_cfg *slo,
		     struct kv_diag *d)
{
	memset(l->slo_met, 0, sizeof(l->slo_met));
	memset(l->slo_met_tokens, 0, sizeof(l->slo_met_tokens));
	l->slo = slo && slo->on ? slo : NULL;
	l->max_len = max_len;
	l->len_count = kv_xcalloc(max_len + 1, sizeof(*l->len_count));
	errno = 0;
	l->lat = tmpfile(); /* unlinked: nothing to clean up */
	if (!l->lat && errno == ENOMEM)
		kv_oom(0);
	if (!l->lat)
		return kv_diag_set(d, KV_EIO, "tmpfile", 0, 0, "", "cannot create a scratch file: %s",
				   strerror(errno));
	return 0;
}

int kv_done_log_add(struct kv_done_log *l, const struct kv_req *q)
{
	uint64_t len = KV_MIN(q->prompt_tokens + q->output_tokens, l->max_len);
	struct done_rec rec = { (uint32_t)len, (float)((double)(q->finish_ns - q->arrival_ns) * 1e-9) };

	l->len_count[len]++;
	if (l->slo) {
		kv_ns tpot = q->output_tokens > 1 ?
			(q->finish_ns - q->first_token_ns) / (q->output_tokens - 1) : 0;

		if (kv_slo_meets(&l->slo->tenant[q->tenant], q->first_token_ns - q->arrival_ns, tpot,
				 q->finish_ns - q->arrival_ns)) {
			l->slo_met[q->tenant]++;
			l->slo_met_tokens[q->tenant] += q->prompt_tokens + q->output_tokens;
		}
	}
	return fwrite(&rec, sizeof(rec), 1, l->lat) == 1 ? 0 : -1;
}

void kv_done_log_release(struct kv_done_log *l)
{
	if (l->lat)
		fclose(l->lat);
	l->lat = NULL;
	free(l->len_count);
	l->len_count = NULL;
}

/* The median of the counted lengths (the upper one for an even count). */
static uint64_t median_len(const struct kv_done_log *l)
{
	uint64_t n = 0, seen = 0, i;

	for (i = 0; i <= l->max_len; i++)
		n += l->len_count[i];
	for (i = 0; i <= l->max_len; i++) {
		seen += l->len_count[i];
		if (2 * seen > n)
			return i;
	}
	return 0;
}

/*
 * The short/long-request metrics: the standard deviation of the completion
 * time of short requests (prompt+output below the threshold; Welford's
 * update, exact) and the p99 latency of long ones (above it; from a
 * log-linear histogram, within 0.2%); thresholds from the workload or the
 * median length.  NaN when nothing was recorded or no request qualifies.
 */
static void short_long(const struct kv_sim *s, struct kv_done_log *l, double *short_std,
		       double *long_p99)
{
	const struct kv_fairness_cfg *fc = &s->cfg->fairness;
	struct done_rec buf[4096];
	struct kv_hist lat;
	double mean = 0, m2 = 0;
	uint64_t lo, hi, med, ns = 0;
	size_t got, i;

	*short_std = *long_p99 = NAN;
	if (!l || !l->lat || fflush(l->lat) || fseek(l->lat, 0, SEEK_SET))
		return;
	med = median_len(l);
	lo = fc->short_tokens ? fc->short_tokens : med;
	hi = fc->long_tokens ? fc->long_tokens : med;
	kv_hist_init(&lat);
	while ((got = fread(buf, sizeof(*buf), KV_ARRAY_LEN(buf), l->lat)) > 0) {
		for (i = 0; i < got; i++) {
			if (buf[i].len < lo) {
				double d = buf[i].e2e_s - mean;

				mean += d / (double)++ns;
				m2 += d * (buf[i].e2e_s - mean);
			}
			if (buf[i].len > hi)
				kv_hist_add(&lat, (uint64_t)llround((double)buf[i].e2e_s * 1e9));
		}
	}
	if (ns)
		*short_std = sqrt(m2 / (double)ns);
	if (lat.n)
		*long_p99 = (double)kv_hist_quantile(&lat, 0.99) * 1e-9;
	kv_hist_release(&lat);
}

/* --- the summary ------------------------------------------------------------------ */

const char *const kv_summary_names[] = {
	"requests", "completed", "rejected_context", "rejected_pool", "preemptions",
	"makespan_s", "throughput_tok_s", "output_tok_s", "requests_per_s", "ttft_p50_s",
	"ttft_p90_s", "ttft_p99_s", "tpot_p50_s", "tpot_p90_s", "tpot_p99_s", "e2e_p50_s",
	"e2e_p90_s", "e2e_p99_s", "mem_reserved_util", "mem_used_util", "mem_useful_share",
	"ext_frag_mean", "alloc_fail_frag", "cache_hit_rate", "cache_hit_rate_cross",
	"cache_hit_rate_self", "cache_bytes_saved",
	"cache_recompute_tokens", "cache_evictions", "swap_out_bytes", "swap_in_bytes",
	"kv_pool_bytes", "kv_peak_reserved_bytes", "jain_fairness", "service_diff_max",
	"service_diff_mean", "short_e2e_std_s", "long_e2e_p99_s", "iter_mean_s", "iterations",
	"events", "peak_in_flight", "load_share", "capacity_req_s", "busy_share",
	"kv_capacity_tokens", "kv_capacity_blocks", /* only off memory.model share: see below */
	"slo_attainment", "goodput_req_s", "goodput_tok_s", "slo_met", "gpus", /* only with slo: */
	"gpu_hours", "cost_usd", "cost_usd_per_hour", /* only with cluster.groups */
	NULL,
};

#ifndef NDEBUG
/* Index of name in kv_summary_names[], or -1 (the append's order check). */
static int name_index(const char *name)
{
	int i;

	for (i = 0; kv_summary_names[i]; i++)
		if (!strcmp(kv_summary_names[i], name))
			return i;
	return -1;
}
#endif

/*
 * Appends an item; its name must come after the previous item's in
 * kv_summary_names[] (optional groups may be left out, never reordered).
 */
static void add(struct kv_summary *sum, const char *name, const char *unit, double v, int integer)
{
	assert(name_index(name) >= 0 &&
	       (!sum->n || name_index(name) > name_index(sum->item[sum->n - 1].name)));
	if (sum->n < KV_SUMMARY_MAX)
		sum->item[sum->n++] = (struct kv_summary_item){ name, unit, v, integer };
}

static void add_quantiles(struct kv_summary *sum, const struct kv_hist *h, const char *const names[3],
			  double scale, const char *unit)
{
	static const double qs[3] = { 0.5, 0.9, 0.99 };
	int i;

	for (i = 0; i < 3; i++) /* empty (NaN) with no value: 0 s would meet any latency target */
		add(sum, names[i], unit, h->n ? (double)kv_hist_quantile(h, qs[i]) * scale : NAN, 0);
}

/* The weight-normalised service of tenant i. */
static double norm_service(const struct kv_sim *s, uint32_t i)
{
	return s->tenant[i].service / s->cfg->source.tenants[i].weight;
}

static double jain_over_tenants(const struct kv_sim *s)
{
	double x[KV_MAX_TENANTS];
	uint32_t i, n = s->cfg->source.n_tenants;

	for (i = 0; i < n; i++)
		x[i] = norm_service(s, i);
	return kv_jain(x, n);
}

/* The cache model's own figures, summed over replicas; NaN (empty) when it has none. */
static void add_cache_stats(const struct kv_sim *s, struct kv_summary *sum)
{
	struct kv_cache_stats t = { 0 }, st;
	double rate = 0;
	uint32_t i;

	for (i = 0; i < s->n_rep; i++) {
		const struct kv_replica *r = &s->rep[i];

		if (!r->cache->stats)
			continue;
		memset(&st, 0, sizeof(st));
		r->cache->stats(r->cache_priv, &st);
		rate += st.hit_rate / s->n_rep;
		t.hit_tokens += st.hit_tokens;
		t.self_hit_tokens += st.self_hit_tokens;
		t.lookup_tokens += st.lookup_tokens;
		t.bytes_saved += st.bytes_saved;
		t.recompute_tokens += st.recompute_tokens;
		t.evictions += st.evictions;
	}
	if (!s->n_rep || !s->rep[0].cache->stats) /* the model run (an engine may choose it) */
		rate = NAN;
	else if (t.lookup_tokens)
		rate = (double)t.hit_tokens / (double)t.lookup_tokens;
	add(sum, "cache_hit_rate", "", rate, 0);
	/* the hits split: blocks other requests computed, and blocks a resumed request computed itself */
	add(sum, "cache_hit_rate_cross", "", isnan(rate) ? rate : !t.lookup_tokens ? 0 :
		(double)(t.hit_tokens - t.self_hit_tokens) / (double)t.lookup_tokens, 0);
	add(sum, "cache_hit_rate_self", "", isnan(rate) ? rate : !t.lookup_tokens ? 0 :
		(double)t.self_hit_tokens / (double)t.lookup_tokens, 0);
	add(sum, "cache_bytes_saved", "bytes", (double)t.bytes_saved, 1);
	add(sum, "cache_recompute_tokens", "tokens", (double)t.recompute_tokens, 1);
	add(sum, "cache_evictions", "entries", (double)t.evictions, 1);
}

/* Adds tier t's counters to row (a shared tier only the first time it is seen). */
static void tier_add(struct kv_tier_row *row, const struct kv_tier *t, const struct kv_tier **seen)
{
	const struct kv_tier_stats *a = kv_tier_stats(t);
	struct kv_tier_stats *b = &row->st;

	if (*seen == t)
		return; /* shared: every replica has the same one */
	*seen = t;
	if (!row->instances++)
		row->cfg = *kv_tier_cfg(t);
	b->in_bytes += a->in_bytes;
	b->down_bytes += a->down_bytes;
	b->drop_bytes += a->drop_bytes;
	b->read_bytes += a->read_bytes;
	b->used_bytes += a->used_bytes;
	b->lookup_blocks += a->lookup_blocks;
	b->hit_blocks += a->hit_blocks;
	b->read_busy_ns += a->read_busy_ns;
	b->write_busy_ns += a->write_busy_ns;
}

/* Adds replica r's tiers to its group's rows all[] and to the totals. */
static void tier_rep(const struct kv_replica *r, struct kv_tier_row *all,
		     const struct kv_tier **seen, struct kv_tier_totals *tot)
{
	struct kv_cache_stats st;
	uint32_t j;

	if (!r->cache->stats)
		return;
	memset(&st, 0, sizeof(st));
	r->cache->stats(r->cache_priv, &st);
	if (!st.tiers)
		return;
	tot->lookup_tokens += st.lookup_tokens;
	tot->gpu_out_bytes += st.tiers->gpu_out_bytes;
	tot->load_tokens += r->tier_load_tokens;
	tot->loads += r->tier_loads;
	tot->wait_s += (double)r->tier_wait_ns * 1e-9;
	tot->recompute_s += (double)r->tier_recompute_ns * 1e-9;
	for (j = 0; j < st.tiers->n; j++)
		tier_add(&all[st.tiers->kind[j]], st.tiers->t[j], &seen[st.tiers->kind[j]]);
	for (j = 0; j < KV_TIERS_MAX; j++) {
		all[j].hit_tokens += st.tier_hit_tokens[j];
		all[j].lookup_tokens += st.lookup_tokens;
	}
}

uint32_t kv_tier_summary(const struct kv_sim *s, struct kv_tier_row *rows, uint32_t max,
			 struct kv_tier_totals *tot)
{
	static const char *const names[KV_TIERS_MAX] = { "cpu", "ssd", "remote" };
	uint32_t g, i, j, n = 0;

	memset(tot, 0, sizeof(*tot));
	for (g = 0; g < s->n_grp; g++) {
		const struct kv_group *gr = &s->grp[g];
		const struct kv_tier *seen[KV_TIERS_MAX] = { NULL };
		struct kv_tier_row all[KV_TIERS_MAX];

		memset(all, 0, sizeof(all));
		for (i = gr->first; i < gr->first + gr->count; i++)
			tier_rep(&s->rep[i], all, seen, tot);
		for (j = 0; j < KV_TIERS_MAX && n < max; j++) {
			if (!all[j].instances)
				continue;
			all[j].name = names[j];
			all[j].group = gr->cfg->group_name;
			rows[n++] = all[j];
		}
	}
	return n;
}

/* The replicas' counters, summed (peak: the largest). */
struct rep_totals {
	double reserved, used, extfrag; /* byte-seconds, byte-seconds, fragmentation-seconds */
	uint64_t iters, peak, frag_fail, swap_out, swap_in;
	kv_ns busy;
};

static void rep_totals(const struct kv_sim *s, struct rep_totals *t)
{
	uint32_t i;

	memset(t, 0, sizeof(*t));
	for (i = 0; i < s->n_rep; i++) {
		t->peak = KV_MAX(t->peak, s->rep[i].peak_reserved_bytes);
		t->reserved += s->rep[i].reserved_Bs;
		t->extfrag += s->rep[i].extfrag_s;
		t->frag_fail += s->rep[i].pool.alloc_fail_frag;
		t->swap_out += s->rep[i].swap_out_bytes;
		t->swap_in += s->rep[i].swap_in_bytes;
		t->used += s->rep[i].used_Bs;
		t->iters += s->rep[i].iterations;
		t->busy += s->rep[i].busy_ns;
	}
}

/* Requests, makespan, throughput and the latency quantiles. */
static void add_requests(const struct kv_sim *s, struct kv_summary *sum)
{
	static const char *const ttft[3] = { "ttft_p50_s", "ttft_p90_s", "ttft_p99_s" };
	static const char *const tpot[3] = { "tpot_p50_s", "tpot_p90_s", "tpot_p99_s" };
	static const char *const e2e[3] = { "e2e_p50_s", "e2e_p90_s", "e2e_p99_s" };
	double span = (double)(s->last_finish_ns - s->first_arrival_ns) * 1e-9;
	double done = (double)s->ended[KV_END_COMPLETED];

	add(sum, "requests", "", (double)s->arrived, 1);
	add(sum, "completed", "", done, 1);
	add(sum, "rejected_context", "", (double)s->ended[KV_END_REJECTED_CONTEXT], 1);
	add(sum, "rejected_pool", "", (double)s->ended[KV_END_REJECTED_POOL], 1);
	add(sum, "preemptions", "", (double)s->preemptions, 1);
	add(sum, "makespan_s", "s", span, 0);
	add(sum, "throughput_tok_s", "tokens/s",
	    span > 0 ? (double)(s->prompt_tokens_done + s->output_tokens_done) / span : 0, 0);
	add(sum, "output_tok_s", "tokens/s", span > 0 ? (double)s->output_tokens_done / span : 0, 0);
	add(sum, "requests_per_s", "req/s", span > 0 ? done / span : 0, 0);
	add_quantiles(sum, &s->ttft, ttft, 1e-9, "s");
	add_quantiles(sum, &s->tpot, tpot, 1e-9, "s");
	add_quantiles(sum, &s->e2e, e2e, 1e-9, "s");
}

/* Memory: utilisation over the run, fragmentation, swaps, the pool, cache figures. */
static void add_memory(const struct kv_sim *s, const struct rep_totals *t, struct kv_summary *sum)
{
	double horizon = (double)s->last_finish_ns * 1e-9;
	double cap = 0;
	uint32_t i;

	for (i = 0; i < s->n_grp; i++)
		cap += (double)s->grp[i].pool_bytes * (double)s->grp[i].count * horizon;

	add(sum, "mem_reserved_util", "share of pool", cap > 0 ? t->reserved / cap : 0, 0);
	add(sum, "mem_used_util", "share of pool", cap > 0 ? t->used / cap : 0, 0);
	add(sum, "mem_useful_share", "live / reserved", t->reserved > 0 ? t->used / t->reserved : 0, 0);
	add(sum, "ext_frag_mean", "", horizon > 0 ? t->extfrag / ((double)s->n_rep * horizon) : 0, 0);
	add(sum, "alloc_fail_frag", "refusals with enough free bytes", (double)t->frag_fail, 1);
	add_cache_stats(s, sum);
	add(sum, "swap_out_bytes", "bytes to host", (double)t->swap_out, 1);
	add(sum, "swap_in_bytes", "bytes from host", (double)t->swap_in, 1);
	add(sum, "kv_pool_bytes", "bytes per replica", (double)s->grp[0].pool_bytes, 1);
	add(sum, "kv_peak_reserved_bytes", "bytes, busiest replica", (double)t->peak, 1);
}

/* Requests meeting their SLOs over every tenant, and their tokens. */
static void slo_totals(const struct kv_sim *s, const struct kv_done_log *l, double *met, double *tok)
{
	uint32_t i;

	*met = *tok = 0;
	for (i = 0; i < KV_MAX(s->cfg->source.n_tenants, 1u); i++) {
		*met += (double)l->slo_met[i];
		*tok += (double)l->slo_met_tokens[i];
	}
}

/* The histogram of SLO metric m. */
static const struct kv_hist *slo_hist(const struct kv_sim *s, enum kv_slo_metric m)
{
	return m == KV_SLO_TTFT ? &s->ttft : m == KV_SLO_TPOT ? &s->tpot : &s->e2e;
}

/*
 * The SLO columns (only with slo:): attainment, goodput, whether every
 * percentile SLO holds (0 when one fails; empty when there is none, or
 * when one has no value to judge and none fails), the GPUs used.
 */
static void add_slo(const struct kv_sim *s, const struct kv_done_log *l, struct kv_summary *sum)
{
	double span = (double)(s->last_finish_ns - s->first_arrival_ns) * 1e-9, met, tok, ok = NAN;
	const struct kv_slo_cfg *c = l->slo;
	int fails = 0, unknown = 0;
	uint32_t i;

	slo_totals(s, l, &met, &tok);
	add(sum, "slo_attainment", "share of requests meeting every SLO",
	    s->arrived ? met / (double)s->arrived : NAN, 0);
	add(sum, "goodput_req_s", "req/s meeting every SLO", span > 0 ? met / span : 0, 0);
	add(sum, "goodput_tok_s", "tokens/s of requests meeting every SLO", span > 0 ? tok / span : 0, 0);
	for (i = 0; i < c->n_pct; i++) {
		const struct kv_hist *h = slo_hist(s, c->pct[i].m);

		if (!h->n)
			unknown = 1; /* no value to judge this percentile on: neither met nor missed */
		else if (kv_hist_quantile(h, c->pct[i].q) > c->pct[i].max_ns)
			fails = 1;
	}
	if (c->n_pct) /* a definite miss stands; else one that cannot be judged leaves it empty */
		ok = fails ? 0 : unknown ? NAN : 1;
	add(sum, "slo_met", "1: every percentile SLO holds", ok, 1);
	add(sum, "gpus", "replicas x tensor parallel x pipeline stages", (double)kv_cfg_gpus(s->cfg), 1);
}

/*
 * The GPU-hours group g held (groups.h): an autoscaled group's billed
 * replica-seconds (starting, active, draining: autoscale.h's gpu_s, read
 * from s->as), a static one every GPU from 0 to the last finish.  Here, not
 * in groups.c, so that the summary does not call back into the groups.
 */
double kv_group_gpu_hours(const struct kv_sim *s, const struct kv_group *g)
{
	uint32_t j;

	for (j = 0; s->rep_state && g->count && j < s->n_as; j++)
		if (g->first >= s->as[j].lo && g->first < s->as[j].hi)
			return s->as[j].gpu_s / 3600.0;
	return (double)kv_cfg_gpus(g->cfg) * (double)s->last_finish_ns * 1e-9 / 3600.0;
}

/*
 * GPU-hours and their list price over the groups (only with cluster.groups):
 * a static group holds every GPU from 0 to the last finish T, gpus_g x T,
 * an autoscaled one the GPU-hours it billed (kv_group_gpu_hours); the cost
 * is sum_g GPU-hours_g x price_g.  The fleet's hourly price is
 * sum_g gpus_g x price_g (an autoscaled group at its max).  Both prices
 * empty when a group with GPUs has no price.  Without autoscaling the sums
 * are gpus x T and rate x T, as the terms were added before.
 */
static void add_cost(const struct kv_sim *s, struct kv_summary *sum)
{
	double gpus = 0, rate = 0, T_h = (double)s->last_finish_ns * 1e-9 / 3600.0;
	double gpu_h = 0, cost = 0;
	uint32_t i;

	for (i = 0; i < s->n_grp; i++) {
		double n = (double)kv_cfg_gpus(s->grp[i].cfg), p = s->grp[i].cfg->device.cost_per_gpu_hour;

		gpus += n;
		if (n > 0) /* a group of no replicas costs nothing, priced or not */
			rate += p > 0 ? n * p : NAN;
		if (s->rep_state && n > 0) {
			double h = kv_group_gpu_hours(s, &s->grp[i]);

			gpu_h += h;
			cost += p > 0 ? h * p : NAN;
		}
	}
	if (!s->rep_state) { /* the same arithmetic as before: the digests of static fleets hold */
		gpu_h = gpus * T_h;
		cost = rate * T_h;
	}
	add(sum, "gpu_hours", "GPU-hours held (static groups 0 to the last finish, autoscaled ones billed)",
	    gpu_h, 0);
	add(sum, "cost_usd", "USD at the devices' list prices", cost, 0);
	add(sum, "cost_usd_per_hour", "USD per hour of the fleet (autoscaled groups at max)", rate, 0);
}

void kv_summary_compute(const struct kv_sim *s, struct kv_done_log *log, struct kv_summary *sum)
{
	double short_std, long_p99;
	struct kv_load load;
	struct rep_totals t;

	rep_totals(s, &t);
	sum->n = 0;
	add_requests(s, sum);
	add_memory(s, &t, sum);
	add(sum, "jain_fairness", "over weight-normalised service", jain_over_tenants(s), 0);
	add(sum, "service_diff_max", "weighted tokens, backlogged tenants", s->svc_diff_max, 0);
	add(sum, "service_diff_mean", "weighted tokens, backlogged tenants",
	    s->svc_diff_samples ? s->svc_diff_sum / (double)s->svc_diff_samples : 0, 0);
	short_long(s, log, &short_std, &long_p99);
	add(sum, "short_e2e_std_s", "s", short_std, 0);
	add(sum, "long_e2e_p99_s", "s", long_p99, 0);
	add(sum, "iter_mean_s", "s", t.iters ? (double)t.busy * 1e-9 / (double)t.iters : 0, 0);
	add(sum, "iterations", "", (double)t.iters, 1);
	add(sum, "events", "", (double)s->events, 1);
	add(sum, "peak_in_flight", "requests", (double)s->peak_live, 1);
	kv_load_compute(s, &load);
	add(sum, "load_share", "offered / capacity", load.share, 0);
	add(sum, "capacity_req_s", "req/s, saturated cluster", load.capacity_req_s, 0);
	add(sum, "busy_share", "time in iterations", load.busy_share, 0);
	/* the engines' capacity figures; only off the share model, so its columns stay as they were */
	if (s->grp[0].cfg->mem.model != KV_MEM_SHARE || s->grp[0].mem.pinned) {
		add(sum, "kv_capacity_tokens", "tokens per replica",
		    (double)s->grp[0].mem.kv_tokens, 1);
		add(sum, "kv_capacity_blocks", "blocks of 16 tokens", (double)s->grp[0].mem.kv_blocks, 1);
	}
	if (log && log->slo)
		add_slo(s, log, sum);
	if (s->cfg->n_groups) /* the fleet's hours and price (docs/cluster.md) */
		add_cost(s, sum);
}

double kv_summary_get(const struct kv_summary *sum, const char *name)
{
	size_t i;

	for (i = 0; i < sum->n; i++)
		if (!strcmp(sum->item[i].name, name))
			return sum->item[i].value;
	return NAN;
}

void kv_tenant_summary(const struct kv_sim *s, const struct kv_done_log *log, uint32_t i,
		       struct kv_tenant_summary *t)
{
	double span = (double)(s->last_finish_ns - s->first_arrival_ns) * 1e-9;
	const struct kv_source_spec *src = &s->cfg->source;
	const struct kv_tenant_stats *ts = &s->tenant[i];
	double svc = 0, wsum = 0;
	uint32_t j;

	for (j = 0; j < src->n_tenants; j++) {
		svc += s->tenant[j].service;
		wsum += src->tenants[j].weight;
	}
	t->service_share = svc > 0 ? ts->service / svc : 0;
	t->weight_share = src->tenants[i].weight / wsum;
	t->ttft_p50_s = ts->ttft.n ? (double)kv_hist_quantile(&ts->ttft, 0.5) * 1e-9 : NAN;
	t->ttft_p99_s = ts->ttft.n ? (double)kv_hist_quantile(&ts->ttft, 0.99) * 1e-9 : NAN;
	t->e2e_p50_s = ts->e2e.n ? (double)kv_hist_quantile(&ts->e2e, 0.5) * 1e-9 : NAN;
	t->e2e_p99_s = ts->e2e.n ? (double)kv_hist_quantile(&ts->e2e, 0.99) * 1e-9 : NAN;
	t->slo_attainment = t->goodput_req_s = t->goodput_tok_s = NAN;
	if (!log || !log->slo)
		return;
	t->slo_attainment = ts->arrived ? (double)log->slo_met[i] / (double)ts->arrived : NAN;
	t->goodput_req_s = span > 0 ? (double)log->slo_met[i] / span : 0;
	t->goodput_tok_s = span > 0 ? (double)log->slo_met_tokens[i] / span : 0;
}
