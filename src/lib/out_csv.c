/*
 * out_csv.c -- the CSV sinks of a run's output (requests.csv, timeseries.csv,
 * tenant_timeseries.csv): rows formatted and streamed into the files that
 * kv_out_open created, the CSV headers, and the record of the first failed
 * write.  Rows are written as requests end and samples are taken, with no
 * lock per row (each stream belongs to the simulating thread).  See output.h.
 */
#include "output.h"
#include "csv.h"
#include "../../sim/replica.h"

#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

/* The CSV headers (kvsim list metrics documents every column: metric_doc.h). */
const char kv_csv_header_requests[] =
	"id,tenant,replica,status,arrival_s,first_token_s,finish_s,prompt_tokens,"
	"output_tokens,ttft_s,tpot_s,e2e_s,preemptions,cost_byte_steps,memtime_byte_s,frontend_in_s,frontend_out_s\n";
const char kv_csv_header_timeseries[] =
	"t_s,replica,waiting,running,kv_used_bytes,kv_reserved_bytes,kv_internal_waste_bytes,"
	"largest_free_bytes,ext_frag,alloc_fail_frag\n";
const char kv_csv_header_tenant_timeseries[] = "t_s,tenant,waiting,service,virtual_service\n";
const char kv_csv_header_autoscale[] =
	"t_s,group,active,starting,draining,off,metric,delta,slo_attainment,gpu_hours\n";
const char kv_csv_header_tenants[] =
	"tenant,weight,priority,arrived,completed,rejected,prompt_tokens,output_tokens,"
	"service,service_share,weight_share,cost_byte_steps,ttft_p50_s,ttft_p99_s,"
	"e2e_p50_s,e2e_p99_s\n";

/* --- fast formatting (1M rows must not cost seconds) ------------------- */

/* "00" .. "99": two digits per table read */
static const char digits2[201] =
	"00010203040506070809101112131415161718192021222324252627282930313233343536373839"
	"40414243444546474849505152535455565758596061626364656667686970717273747576777879"
	"8081828384858687888990919293949596979899";

/* Writes the two digits of v < 100 at p. */
static inline void put_2(char *p, uint32_t v)
{
	memcpy(p, &digits2[2 * v], 2);
}

/* Writes v < 10^8 as exactly 8 digits (leading zeros) at p: independent halves, pairs. */
static inline void put_8(char *p, uint32_t v)
{
	uint32_t hi = v / 10000, lo = v % 10000;

	put_2(p, hi / 100);
	put_2(p + 2, hi % 100);
	put_2(p + 4, lo / 100);
	put_2(p + 6, lo % 100);
}

/* Writes v in decimal at p; returns the end.  Two digits per step, from the right. */
static char *put_u64(char *p, uint64_t v)
{
	static const uint64_t pow10[19] = {
		1ULL, 10ULL, 100ULL, 1000ULL, 10000ULL, 100000ULL, 1000000ULL, 10000000ULL,
		100000000ULL, 1000000000ULL, 10000000000ULL, 100000000000ULL,
		1000000000000ULL, 10000000000000ULL, 100000000000000ULL,
		1000000000000000ULL, 10000000000000000ULL, 100000000000000000ULL,
		1000000000000000000ULL
	};
	int n = 1; /* digits: most values written are small */
	char *e;

	while (n < 20 && v >= pow10[n - 1] * 10)
		n++;
	e = p + n;
	while (v >= 100) {
		e -= 2;
		put_2(e, (uint32_t)(v % 100));
		v /= 100;
	}
	if (v >= 10)
		put_2(e - 2, (uint32_t)v);
	else
		e[-1] = (char)('0' + v);
	return p + n;
}

/* Copies a NUL-terminated string (bounded by its source: tenant names are < 32 bytes). */
static char *put_str(char *p, const char *str)
{
	while (*str)
		*p++ = *str++;
	return p;
}

/*
 * Writes str as one CSV field (quoted when it holds a comma or a quote);
 * room for 2 * strlen(str) + 3 bytes at p (tenant names are under 32).
 */
static char *put_csv(char *p, const char *str)
{
	return p + kv_csv_escape(p, 2 * strlen(str) + 3, str);
}

/* Writes ns as seconds with 9 exact decimals. */
static char *put_sec(char *p, kv_ns t)
{
	uint32_t frac = (uint32_t)(t % KV_NS_PER_S); /* < 10^9: its first digit, then 8 */

	p = put_u64(p, t / KV_NS_PER_S);
	*p++ = '.';
	*p++ = (char)('0' + frac / 100000000);
	put_8(p, frac % 100000000);
	return p + 8;
}

/* Writes a non-negative value with 3 exact decimals (rounded to the nearest thousandth). */
static char *put_milli(char *p, double v)
{
	uint64_t m = (uint64_t)llround(v * 1000.0);

	p = put_u64(p, m / 1000);
	*p++ = '.';
	*p++ = (char)('0' + m / 100 % 10);
	*p++ = (char)('0' + m / 10 % 10);
	*p++ = (char)('0' + m % 10);
	return p;
}

/* --- failures ------------------------------------------------------------------ */

void kv__out_failed(struct kv_out *o, int idx)
{
	if (o->failed)
		return;
	o->failed = 1;
	o->fail_idx = idx;
	o->fail_errno = errno ? errno : EIO;
}

void kv_out_error(const struct kv_out *o, struct kv_diag *d)
{
	const char *file = o->fail_idx < 0 ? "the scratch file (tmpfile)" : o->final[o->fail_idx];

	kv_diag_set(d, KV_EIO, file, 0, 0, "", "write failed: %s; no output written",
		    strerror(o->fail_errno ? o->fail_errno : EIO));
}

/* --- sinks -------------------------------------------------------------------- */

static int write_request(void *ctx, const struct kv_sim *s, const struct kv_req *q,
			 enum kv_end e)
{
	struct kv_out *o = ctx;
	char line[512], *p = line;
	int done = e == KV_END_COMPLETED;

	if (done && o->done.lat && kv_done_log_add(&o->done, q))
		kv__out_failed(o, -1);
	if (!o->req)
		return o->failed;
	p = put_u64(p, q->id);
	*p++ = ',';
	p = put_csv(p, s->cfg->source.tenants[q->tenant].name);
	*p++ = ',';
	p = put_u64(p, q->replica);
	*p++ = ',';
	p = put_str(p, done ? "completed" : e == KV_END_REJECTED_CONTEXT ? "rejected_context" :
		    "rejected_pool");
	*p++ = ',';
	p = put_sec(p, q->arrival_ns);
	*p++ = ',';
	if (done)
		p = put_sec(p, q->first_token_ns);
	*p++ = ',';
	p = put_sec(p, q->finish_ns);
	*p++ = ',';
	p = put_u64(p, q->prompt_tokens);
	*p++ = ',';
	p = put_u64(p, q->output_tokens);
	*p++ = ',';
	if (done) {
		p = put_sec(p, q->first_token_ns - q->arrival_ns);
		*p++ = ',';
		if (q->output_tokens > 1)
			p = put_sec(p, (q->finish_ns - q->first_token_ns) / (q->output_tokens - 1));
		*p++ = ',';
		p = put_sec(p, q->finish_ns - q->arrival_ns);
	} else {
		*p++ = ',';
	}
	*p++ = ',';
	p = put_u64(p, q->preemptions);
	*p++ = ',';
	p = put_u64(p, (uint64_t)llround(q->cost));
	*p++ = ',';
	p = put_milli(p, q->memtime_Bs);
	*p++ = ',';
	p = put_sec(p, q->fe_in_ns);
	*p++ = ',';
	if (done) /* the front end's way out, frontend.h */
		p = put_sec(p, s->rep[q->replica].fe.out_ns + s->rep[q->replica].fe.extra_ns);
	if (o->disagg) { /* prefill end -> KV arrival; empty when it moved no KV */
		*p++ = ',';
		if (q->xfer_ns)
			p = put_sec(p, q->xfer_ns);
	}
	if (s->sess || s->chains) { /* its session's id and turn (0 first); empty outside sessions */
		*p++ = ',';
		if (q->session != KV_NIL)
			p = put_u64(p, s->sess ? kv_sessions_id(s->sess, q->session) : q->session);
		*p++ = ',';
		if (q->session != KV_NIL)
			p = put_u64(p, q->turn);
	}
	*p++ = '\n';
	/* the stream is this thread's alone: no lock per row */
	if (fwrite_unlocked(line, 1, (size_t)(p - line), o->req) != (size_t)(p - line))
		kv__out_failed(o, KV_OUT_REQ);
	return o->failed;
}

static int write_sample(void *ctx, const struct kv_sim *s, kv_ns t)
{
	struct kv_out *o = ctx;
	double sum_res = 0, sum_used = 0, sum_run = 0, sum_wait = 0, arrived = 0, cached = 0;
	uint32_t i;

	for (i = 0; i < s->n_rep; i++) {
		const struct kv_replica *r = &s->rep[i];
		char line[256], *p = put_sec(line, t);

		uint64_t used = (uint64_t)kv_replica_live_bytes(r);
		uint64_t reserved = r->pool.size_bytes - r->pool.free_bytes;
		uint64_t waiting = r->sched->waiting(r->sched_priv);

		sum_res += (double)reserved;
		sum_used += (double)used;
		sum_run += r->n_running;
		sum_wait += (double)waiting;
		if (r->cache->evictable_bytes)
			cached += (double)r->cache->evictable_bytes(r->cache_priv);

		p += sprintf(p, ",%u,%llu,%u,%llu,%llu,%llu,%llu,%.4f,%llu\n", i,
			     (unsigned long long)waiting, r->n_running,
			     (unsigned long long)used, (unsigned long long)reserved,
			     (unsigned long long)(reserved > used ? reserved - used : 0),
			     (unsigned long long)kv_pool_largest_free(&r->pool),
			     kv_pool_ext_frag(&r->pool),
			     (unsigned long long)r->pool.alloc_fail_frag);
		if (fwrite(line, 1, (size_t)(p - line), o->ts) != (size_t)(p - line))
			kv__out_failed(o, KV_OUT_TS);
	}
	for (i = 0; i < s->cfg->source.n_tenants; i++)
		arrived += (double)s->tenant[i].arrived;
	kv_mem_trend_add(&o->trend, (double)t / KV_NS_PER_S, sum_res, sum_used, sum_run, sum_wait,
			 arrived, cached);
	for (i = 0; i < s->cfg->source.n_tenants; i++) {
		const struct kv_tenant_stats *ts = &s->tenant[i];
		char line[256], *p = put_sec(line, t);

		*p++ = ',';
		p = put_csv(p, s->cfg->source.tenants[i].name);
		p += sprintf(p, ",%llu,%.0f,%.0f\n", (unsigned long long)ts->waiting, ts->service,
			     ts->vservice);
		if (fwrite(line, 1, (size_t)(p - line), o->tser) != (size_t)(p - line))
			kv__out_failed(o, KV_OUT_TSER);
	}
	return o->failed;
}

/* A value with 6 significant digits, or nothing for NaN (not applicable). */
static char *put_g(char *p, double v)
{
	return isnan(v) ? p : p + sprintf(p, "%.6g", v);
}

/* One autoscale.csv row (autoscale.h kv_as_row). */
static void put_scale(struct kv_out *o, const struct kv_as_row *row)
{
	char line[256], *p = put_sec(line, row->t_ns);

	p += sprintf(p, ",%u,%u,%u,%u,%u,", row->group, row->n[KV_REP_ACTIVE], row->n[KV_REP_STARTING],
		     row->n[KV_REP_DRAINING], row->n[KV_REP_OFF]);
	p = put_g(p, row->metric);
	p += sprintf(p, ",%d,", row->delta);
	p = put_g(p, row->slo_attainment);
	p += sprintf(p, ",%.6f\n", row->gpu_s / 3600);
	if (fwrite(line, 1, (size_t)(p - line), o->as) != (size_t)(p - line))
		kv__out_failed(o, KV_OUT_AS);
}

static int write_scale(void *ctx, const struct kv_sim *s, const struct kv_as_row *row)
{
	struct kv_out *o = ctx;

	(void)s;
	if (o->as)
		put_scale(o, row);
	return o->failed;
}

void kv__out_scale_end(struct kv_out *o, const struct kv_sim *s)
{
	uint32_t i;

	for (i = 0; i < s->n_as; i++) {
		const struct kv_autoscale *a = &s->as[i];
		struct kv_as_row row = { .t_ns = a->bill_t0_ns, .group = a->group, .metric = NAN,
					 .slo_attainment = NAN, .gpu_s = a->gpu_s };

		memcpy(row.n, a->n, sizeof(row.n));
		put_scale(o, &row);
	}
}

struct kv_sink kv_out_sink(struct kv_out *o)
{
	struct kv_sink k = { .ctx = o, .request = write_request, .sample = write_sample,
			     .progress = kv_progress_cb, .scale = write_scale };

	return k;
}
