/*
 * output.c -- a run's output directory from open to commit: the streamed
 * files created in the staging directory, then summary.csv, tenants.csv,
 * health.csv, the chart and the manifest, and the one commit (or the
 * abort).  The rows come from out_csv.c, the figures from sim/metrics.
 */
#include "output.h"
#include "chart.h"
#include "csv.h"
#include "../../sim/groups.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

const char kv_csv_header_tiers[] = "group,tier,instances,capacity_bytes,read_Bps,write_Bps,latency_s,lookup_blocks,hit_blocks,block_hit_rate,hit_tokens,token_hit_rate,in_bytes,down_bytes,drop_bytes,read_bytes,held_bytes_end,read_busy_s,write_busy_s,loads,load_wait_s,recompute_avoided_s,ttft_saved_s\n";

static const char *const file_names[KV_OUT_FILES] = { "requests.csv", "timeseries.csv",
						      "summary.csv", "tenants.csv",
						      "tenant_timeseries.csv", "run.png",
						      "health.csv", "autoscale.csv",
						      "groups.csv", "disagg.csv", "tiers.csv" };

/* --- opening and committing ---------------------------------------------------- */

/*
 * Creates file idx in the staging directory and opens it for writing.
 * Returns the stream, or NULL with d filled and nothing left on disk.
 * ENOMEM from fdopen is out of memory (kv_oom), after the file is removed.
 */
static FILE *open_tmp(struct kv_out *o, int idx, struct kv_diag *d)
{
	char *path = kv_outdir_stage_path(&o->od, file_names[idx]);
	FILE *f = NULL;
	int fd = -1, e;

	free(o->final[idx]);
	o->final[idx] = kv_outdir_final_path(&o->od, file_names[idx]);
	if (!kv_fault_write())
		fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
	if (fd >= 0)
		f = kv_out_fdopen(fd);
	e = errno ? errno : ENOSPC;
	if (!f && fd >= 0) {
		close(fd);
		unlink(path);
	}
	free(path);
	if (f)
		return f;
	if (e == ENOMEM)
		kv_oom(0);
	kv_diag_set(d, KV_EIO, o->final[idx], 0, 0, "", "cannot create: %s", strerror(e));
	return NULL;
}

/* The kv_out with a staging directory on disk, removed at exit (kv_oom's exit(3)) if still set. */
static struct kv_out *open_out;

static void out_atexit(void)
{
	if (open_out)
		kv_out_abort(open_out);
}

/* Writes a header line into file idx, recording a failure. */
static void put_header(struct kv_out *o, FILE *f, int idx, const char *text)
{
	if (fputs(text, f) == EOF)
		kv__out_failed(o, idx);
}

/* 1 when the run autoscales a group (autoscale.csv is written). */
static int autoscaled(const struct kv_sim_config *c)
{
	uint32_t i;

	for (i = 0; i < c->n_groups; i++)
		if (c->groups[i].autoscale.on)
			return 1;
	return c->autoscale.on;
}

int kv_out_open(struct kv_out *o, const char *dir, const struct kv_workload *w, unsigned flags,
		struct kv_diag *d)
{
	static char buf_req[1 << 16], buf_ts[1 << 16];
	static int registered;
	int rc;

	memset(o, 0, sizeof(*o));
	o->w = w;
	o->od.lock_fd = -1;
	o->opened = 1;
	if (!registered) {
		atexit(out_atexit);
		registered = 1;
	}
	open_out = o;
	if ((rc = kv_outdir_open(&o->od, dir, flags, d)))
		return rc;
	o->disagg = kv_workload_disagg(&w->cfg);
	if (w->requests_csv) {
		if (!(o->req = open_tmp(o, KV_OUT_REQ, d)))
			return KV_EIO;
		setvbuf(o->req, buf_req, _IOFBF, sizeof(buf_req));
		if (o->disagg || w->cfg.sessions.n_classes || w->cfg.sessions.chains) {
			/* more columns, only then: other runs' files stay as they were */
			char hdr[1024];

			snprintf(hdr, sizeof(hdr), "%.*s%s%s\n",
				 (int)strcspn(kv_csv_header_requests, "\n"), kv_csv_header_requests,
				 o->disagg ? ",xfer_s" : "",
				 w->cfg.sessions.n_classes || w->cfg.sessions.chains ? ",session,turn" : "");
			put_header(o, o->req, KV_OUT_REQ, hdr);
		} else {
			put_header(o, o->req, KV_OUT_REQ, kv_csv_header_requests);
		}
	}
	if (!(o->ts = open_tmp(o, KV_OUT_TS, d)))
		return KV_EIO;
	if ((rc = kv_done_log_init(&o->done, w->cfg.model.max_ctx_tokens, &w->slo, d)))
		return rc;
	setvbuf(o->ts, buf_ts, _IOFBF, sizeof(buf_ts));
	if (!(o->tser = open_tmp(o, KV_OUT_TSER, d)))
		return KV_EIO;
	put_header(o, o->tser, KV_OUT_TSER, kv_csv_header_tenant_timeseries);
	if (autoscaled(&w->cfg)) {
		if (!(o->as = open_tmp(o, KV_OUT_AS, d)))
			return KV_EIO;
		put_header(o, o->as, KV_OUT_AS, kv_csv_header_autoscale);
	}
	put_header(o, o->ts, KV_OUT_TS,
		   kv_csv_header_timeseries);
	return 0;
}

/*
 * Flushes and closes *f (file idx), recording the first failure in o.
 * Returns nonzero when any write to it failed.
 */
static int close_checked(struct kv_out *o, FILE **f, int idx)
{
	int bad;

	if (!*f)
		return 0;
	errno = 0;
	bad = fflush(*f) != 0 || ferror(*f);
	if (bad)
		kv__out_failed(o, idx);
	if (fclose(*f) != 0) {
		kv__out_failed(o, idx);
		bad = 1;
	}
	*f = NULL;
	return bad;
}

/*
 * A formatted write that failed (printf's return < 0).  glibc's printf
 * allocates for some conversions (long %e/%g) and then fails with ENOMEM
 * without setting the stream's error flag, so ferror() alone would let a
 * row go missing: out of memory exits 3, anything else fails the output.
 */
static void printf_failed(struct kv_out *o, int idx)
{
	if (errno == ENOMEM)
		kv_oom(0);
	kv__out_failed(o, idx);
}


static int write_summary_csv(struct kv_out *o, const struct kv_summary *sum, struct kv_diag *d)
{
	FILE *f = open_tmp(o, KV_OUT_SUM, d);
	size_t i;
	int neg;

	if (!f)
		return KV_EIO;
	neg = fputs("workload", f) < 0;
	for (i = 0; i < sum->n; i++)
		neg |= fprintf(f, ",%s", sum->item[i].name) < 0;
	neg |= fputc('\n', f) == EOF || kv_csv_put(f, o->w->name);
	for (i = 0; i < sum->n; i++) {
		if (isnan(sum->item[i].value))
			neg |= fputc(',', f) == EOF; /* not applicable: empty */
		else
			neg |= fprintf(f, sum->item[i].integer ? ",%.0f" : ",%.6g",
				       sum->item[i].value) < 0;
	}
	neg |= fputc('\n', f) == EOF;
	if (neg)
		printf_failed(o, KV_OUT_SUM);
	if (!close_checked(o, &f, KV_OUT_SUM) && !neg)
		return 0;
	kv_out_error(o, d);
	return KV_EIO;
}

/* ",%.6f" of a tenant's latency in seconds, or "," (an empty cell) for NaN; 1 when it fails. */
static int put_latency(FILE *f, double s)
{
	return (isnan(s) ? fputc(',', f) == EOF : fprintf(f, ",%.6f", s) < 0);
}

static int write_tenants_csv(struct kv_out *o, const struct kv_sim *s, struct kv_diag *d)
{
	const struct kv_source_spec *src = &s->cfg->source;
	FILE *f = open_tmp(o, KV_OUT_TEN, d);
	size_t hlen = strlen(kv_csv_header_tenants) - 1; /* less its newline */
	uint32_t i;
	int neg;

	if (!f)
		return KV_EIO;
	/* the header less its newline, then the SLO columns only with slo:, so other runs' files stay as they were */
	neg = fwrite(kv_csv_header_tenants, 1, hlen, f) != hlen;
	if (o->done.slo)
		neg |= fputs(",slo_attainment,goodput_req_s,goodput_tok_s", f) < 0;
	neg |= fputc('\n', f) == EOF;
	for (i = 0; i < src->n_tenants; i++) {
		const struct kv_tenant_stats *t = &s->tenant[i];
		struct kv_tenant_summary ts;

		kv_tenant_summary(s, &o->done, i, &ts);
		neg |= kv_csv_put(f, src->tenants[i].name);
		neg |= fprintf(f, ",%g,%d,%llu,%llu,%llu,%llu,%llu,%.0f,%.6f,%.6f,%.6e",
			src->tenants[i].weight, src->tenants[i].priority,
			(unsigned long long)t->arrived, (unsigned long long)t->completed,
			(unsigned long long)t->rejected, (unsigned long long)t->prompt_tokens,
			(unsigned long long)t->output_tokens, t->service, ts.service_share,
			ts.weight_share, t->cost) < 0;
		neg |= put_latency(f, ts.ttft_p50_s) | put_latency(f, ts.ttft_p99_s) |
		       put_latency(f, ts.e2e_p50_s) | put_latency(f, ts.e2e_p99_s);
		if (o->done.slo && isnan(ts.slo_attainment))
			neg |= fprintf(f, ",,%.6f,%.6f", ts.goodput_req_s, ts.goodput_tok_s) < 0;
		else if (o->done.slo)
			neg |= fprintf(f, ",%.6f,%.6f,%.6f", ts.slo_attainment, ts.goodput_req_s,
				       ts.goodput_tok_s) < 0;
		neg |= fputc('\n', f) == EOF;
	}
	if (neg)
		printf_failed(o, KV_OUT_TEN);
	if (!close_checked(o, &f, KV_OUT_TEN) && !neg)
		return 0;
	kv_out_error(o, d);
	return KV_EIO;
}

/* disagg.csv: per group, its role, busy share, queueing and KV links (out_disagg.c). */
static int write_disagg_csv(struct kv_out *o, const struct kv_sim *s, struct kv_diag *d)
{
	FILE *f = open_tmp(o, KV_OUT_DISAGG, d);
	int neg;

	if (!f)
		return KV_EIO;
	neg = kv_out_disagg_rows(f, s) < 0;
	if (neg)
		printf_failed(o, KV_OUT_DISAGG);
	if (!close_checked(o, &f, KV_OUT_DISAGG) && !neg)
		return 0;
	kv_out_error(o, d);
	return KV_EIO;
}

/* One group's row of groups.csv; 1 when a write fails. */
static int put_group(FILE *f, const struct kv_sim *s, const struct kv_group *g)
{
	const struct kv_sim_config *c = g->cfg;
	struct kv_group_summary gs;
	int neg;

	kv_group_summary(s, g, &gs);
	neg = kv_csv_put(f, c->group_name) || fprintf(f, ",%s,", kv_group_role_names[c->role]) < 0;
	neg |= kv_csv_put(f, c->model.name) || fputc(',', f) == EOF || kv_csv_put(f, c->device.name);
	neg |= fprintf(f, ",%u,%llu,%llu,%llu,%llu,%llu,%llu,%llu", g->count,
		       (unsigned long long)gs.gpus, (unsigned long long)gs.requests,
		       (unsigned long long)gs.completed, (unsigned long long)gs.rejected,
		       (unsigned long long)gs.prompt_tokens, (unsigned long long)gs.output_tokens,
		       (unsigned long long)gs.iterations) < 0;
	neg |= put_latency(f, gs.busy_share) | put_latency(f, gs.mem_reserved_util);
	neg |= fprintf(f, ",%llu", (unsigned long long)g->pool_bytes) < 0;
	neg |= put_latency(f, gs.ttft_p50_s) | put_latency(f, gs.ttft_p99_s) |
	       put_latency(f, gs.e2e_p50_s) | put_latency(f, gs.e2e_p99_s);
	neg |= put_latency(f, gs.weight_share) |
	       put_latency(f, c->device.cost_per_gpu_hour > 0 ? c->device.cost_per_gpu_hour : NAN) |
	       put_latency(f, gs.gpu_hours) | put_latency(f, gs.cost_usd);
	return neg | (fputc('\n', f) == EOF);
}

/* groups.csv: one row per replica group (docs/cluster.md); written only with cluster.groups. */
static int write_groups_csv(struct kv_out *o, const struct kv_sim *s, struct kv_diag *d)
{
	FILE *f;
	uint32_t i;
	int neg;

	if (!s->cfg->n_groups)
		return 0;
	if (!(f = open_tmp(o, KV_OUT_GROUPS, d)))
		return KV_EIO;
	neg = fputs(kv_csv_header_groups, f) < 0;
	for (i = 0; i < s->n_grp; i++)
		neg |= put_group(f, s, &s->grp[i]);
	if (neg)
		printf_failed(o, KV_OUT_GROUPS);
	if (!close_checked(o, &f, KV_OUT_GROUPS) && !neg)
		return 0;
	kv_out_error(o, d);
	return KV_EIO;
}

/* Computes the health report into o->health and writes health.csv. */
static int write_health_csv(struct kv_out *o, const struct kv_sim *s, const struct kv_summary *sum,
			    struct kv_diag *d)
{
	FILE *f = open_tmp(o, KV_OUT_HEALTH, d);
	int neg;

	if (!f)
		return KV_EIO;
	kv_health_compute(s, o->w, sum, &o->done, &o->trend, &o->health);
	neg = kv_health_write_csv(&o->health, f);
	if (neg)
		printf_failed(o, KV_OUT_HEALTH);
	if (!close_checked(o, &f, KV_OUT_HEALTH) && !neg)
		return 0;
	kv_out_error(o, d);
	return KV_EIO;
}


/* Tenant names for the chart's legend, spaces as underscores, in buf. */
static const char *legend_names(const struct kv_sim *s, char *buf, size_t len)
{
	size_t off = 0, i;

	buf[0] = 0;
	for (i = 0; i < s->cfg->source.n_tenants && off < len; i++) {
		const char *n = s->cfg->source.tenants[i].name;

		off += (size_t)snprintf(buf + off, len - off, "%s", i ? " " : "");
		for (; *n && off + 1 < len; n++)
			buf[off++] = *n == ' ' ? '_' : *n;
		buf[off] = 0;
	}
	return buf;
}

/*
 * The workload's SLO limits as the manifest's `slo_lines` value (chart.h
 * kv_chart_parse_slo): `ttft_s=1 e2e_p99_s=30 ...`, per-request limits then
 * percentile ones, in seconds; "" without slo:.
 */
static void slo_lines(const struct kv_slo_cfg *slo, char *buf, size_t size)
{
	size_t off = 0;
	uint32_t i;

	buf[0] = 0;
	if (!slo->on)
		return;
	for (i = 0; i < KV_SLO_METRICS && off < size; i++)
		if (slo->all.max_ns[i])
			off += (size_t)snprintf(buf + off, size - off, "%s%s_s=%.9g", off ? " " : "",
						kv_slo_metric_names[i], slo->all.max_ns[i] / 1e9);
	for (i = 0; i < slo->n_pct && off < size; i++)
		off += (size_t)snprintf(buf + off, size - off, "%s%s=%.9g", off ? " " : "",
					slo->pct[i].name, slo->pct[i].max_ns / 1e9);
}

/* Renders run.png into the staging directory; a failure sets o->chart_failed. */
static void render_chart(struct kv_out *o, const struct kv_sim *s)
{
	char slo[KV_CHART_MAX_SLO_LINE];

	char names[2048], *setup = kv_run_setup(o->w);
	struct kv_chart_run c = { .dir = o->od.stage, .title = o->w->name, .setup = setup,
				  .replicas = s->n_rep, .tenants = s->cfg->source.n_tenants,
				  .tenant_names = legend_names(s, names, sizeof(names)),
				  .pool_bytes = s->grp[0].pool_bytes, .with_requests = o->w->requests_csv };

	slo_lines(&o->w->slo, slo, sizeof(slo));
	kv_chart_parse_slo(&c, slo);
	if (kv_chart_run(&c) < 0)
		o->chart_failed = 1;
	free(setup);
}

/* A run with replica groups: "groups a100 (2 x llama-2-7b on a100-80g, fifo, chunked, vllm); ...". */
static char *groups_setup(const struct kv_sim_config *c)
{
	char *out = kv_xasprintf("groups"), *next;
	uint32_t i;

	for (i = 0; i < c->n_groups; i++) {
		const struct kv_sim_config *g = &c->groups[i];

		next = kv_xasprintf("%s%s %s (%u x %s on %s%s, %s, %s, %s)", out, i ? ";" : "",
				    g->group_name, g->replicas, g->model.name, g->device.name,
				    g->tp > 1 ? " (tensor parallel)" : "", g->sched->name,
				    g->cache->name, g->engine ? g->engine->name : "vllm-v0");
		free(out);
		out = next;
	}
	return out;
}

char *kv_run_setup(const struct kv_workload *w)
{
	const struct kv_sim_config *c = &w->cfg;

	if (c->n_groups)
		return groups_setup(c);
	return kv_xasprintf("%s on %u x %s%s, scheduler %s, cache %s, engine %s", c->model.name,
			    c->replicas, c->device.name, c->tp > 1 ? " (tensor parallel)" : "",
			    c->sched->name, c->cache->name, c->engine ? c->engine->name : "vllm-v0");
}

/* The manifest's header: the command, workload, seed, and the caller's lines. */
static char *manifest_header(const struct kv_out *o)
{
	char *setup = kv_run_setup(o->w), *h, slo[KV_CHART_MAX_SLO_LINE];

	slo_lines(&o->w->slo, slo, sizeof(slo));
	h = kv_xasprintf("command run\nworkload %s\nseed %llu\nsetup %s\n%s%s%s%s", o->w->name,
			 (unsigned long long)o->w->cfg.seed, setup, slo[0] ? "slo_lines " : "", slo,
			 slo[0] ? "\n" : "", o->header ? o->header : "");
	free(setup);
	return h;
}

/* A share a / b, 0 when b is 0. */
static double share(double a, double b)
{
	return b > 0 ? a / b : 0;
}

/*
 * tiers.csv, only when the run has tiers below the pool (other runs' output
 * stays as it was): one row per tier, then "all" (docs/cluster.md "Tiered
 * KV store" defines the columns).
 */
static int write_tiers_csv(struct kv_out *o, const struct kv_sim *s, struct kv_diag *d)
{
	struct kv_tier_row *rows = kv_xcalloc((size_t)s->n_grp * KV_TIERS_MAX, sizeof(*rows));
	struct kv_tier_totals t;
	uint32_t n = kv_tier_summary(s, rows, s->n_grp * KV_TIERS_MAX, &t), i;
	FILE *f;
	int neg;

	if (!n || !(f = open_tmp(o, KV_OUT_TIERS, d))) {
		free(rows);
		return n ? KV_EIO : 0;
	}
	neg = fputs(kv_csv_header_tiers, f) < 0;
	for (i = 0; i < n; i++) {
		const struct kv_tier_row *r = &rows[i];

		neg |= kv_csv_put(f, r->group) | (fputc(',', f) == EOF);
		neg |= fprintf(f, "%s,%u,%llu,%.6g,%.6g,%.9f,%llu,%llu,%.6f,%llu,%.6f,%llu,%llu,%llu,%llu,%llu,%.6f,%.6f,,,,\n",
			r->name, r->instances, (unsigned long long)r->cfg.capacity_bytes, r->cfg.read_Bps,
			r->cfg.write_Bps, (double)r->cfg.latency_ns * 1e-9,
			(unsigned long long)r->st.lookup_blocks, (unsigned long long)r->st.hit_blocks,
			share((double)r->st.hit_blocks, (double)r->st.lookup_blocks),
			(unsigned long long)r->hit_tokens,
			share((double)r->hit_tokens, (double)r->lookup_tokens),
			(unsigned long long)r->st.in_bytes, (unsigned long long)r->st.down_bytes,
			(unsigned long long)r->st.drop_bytes, (unsigned long long)r->st.read_bytes,
			(unsigned long long)r->st.used_bytes, (double)r->st.read_busy_ns * 1e-9,
			(double)r->st.write_busy_ns * 1e-9) < 0;
	}
	free(rows);
	neg |= fprintf(f, ",all,,,,,,,,,%llu,%.6f,%llu,,,,,,,%llu,%.6f,%.6f,%.6f\n",
		       (unsigned long long)t.load_tokens,
		       share((double)t.load_tokens, (double)t.lookup_tokens),
		       (unsigned long long)t.gpu_out_bytes, (unsigned long long)t.loads, t.wait_s,
		       t.recompute_s, t.recompute_s - t.wait_s) < 0;
	if (neg)
		printf_failed(o, KV_OUT_TIERS);
	if (!close_checked(o, &f, KV_OUT_TIERS) && !neg)
		return 0;
	kv_out_error(o, d);
	return KV_EIO;
}

int kv_out_commit(struct kv_out *o, const struct kv_sim *s, struct kv_summary *sum,
		  struct kv_diag *d)
{
	char *hdr;
	int rc;

	close_checked(o, &o->req, KV_OUT_REQ);
	close_checked(o, &o->ts, KV_OUT_TS);
	close_checked(o, &o->tser, KV_OUT_TSER);
	if (o->as && s->as)
		kv__out_scale_end(o, s);
	close_checked(o, &o->as, KV_OUT_AS);
	if (o->failed) {
		kv_out_error(o, d);
		return KV_EIO;
	}
	kv_summary_compute(s, &o->done, sum);
	rc = write_summary_csv(o, sum, d);
	if (!rc)
		rc = write_tenants_csv(o, s, d);
	if (!rc)
		rc = write_health_csv(o, s, sum, d);
	if (!rc)
		rc = write_groups_csv(o, s, d);
	if (!rc && s->pd)
		rc = write_disagg_csv(o, s, d);
	if (!rc)
		rc = write_tiers_csv(o, s, d);
	if (rc)
		return rc;
	if (o->w->chart)
		render_chart(o, s);
	if (o->w->chart && s->as && 
	    kv_chart_autoscale(o->od.stage, o->w->name, s->as[0].cfg->slo != NULL, s->as[0].group,
			       s->as[0].gpu_s / 3600, (double)s->as[0].bill_t0_ns * 1e-9) < 0)
		o->chart_failed = 1;
	hdr = manifest_header(o);
	rc = kv_outdir_commit(&o->od, hdr, d);
	free(hdr);
	if (rc)
		return rc;
	kv_done_log_release(&o->done);
	return 0;
}

void kv_out_abort(struct kv_out *o)
{
	int i;

	if (!o->opened)
		return;
	kv_done_log_release(&o->done);
	if (o->req)
		fclose(o->req);
	if (o->ts)
		fclose(o->ts);
	if (o->tser)
		fclose(o->tser);
	if (o->as)
		fclose(o->as);
	o->req = o->ts = o->tser = o->as = NULL;
	kv_outdir_abort(&o->od);
	for (i = 0; i < KV_OUT_FILES; i++) {
		free(o->final[i]);
		o->final[i] = NULL;
	}
	free(o->header);
	o->header = NULL;
	o->opened = 0;
	if (open_out == o)
		open_out = NULL;
}
