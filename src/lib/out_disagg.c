/*
 * out_disagg.c -- disagg.csv, written only by runs with prefill/decode
 * disaggregation (sim/disagg.h): one row per prefill group and one for
 * the decode replicas it sends to, with their busy share, the time
 * requests queued for admission, and a prefill group's KV links
 * (docs/cluster.md "Prefill/decode disaggregation" defines each column).
 */
#include "output.h"

#include "../../sim/replica.h"

#include <stdio.h>

const char kv_csv_header_disagg[] =
	"group,role,replicas,busy_util,admissions,queue_mean_s,handoffs,links,transfers,"
	"bytes,link_util_mean,link_util_max,link_queue_mean_s,link_queue_max_s,xfer_mean_s\n";

/* Sums over replicas idx[0..n) (or first..first+n when idx is NULL). */
struct sums {
	double busy_s, wait_s; /* iteration time, time queued before admission */
	uint64_t admits, handoffs; /* admissions, hand-offs */
};

static void add_replica(struct sums *m, const struct kv_replica *r)
{
	m->busy_s += (double)r->busy_ns * 1e-9;
	m->wait_s += (double)r->wait_ns * 1e-9;
	m->admits += r->admits;
	m->handoffs += r->handoffs;
}

/* The columns up to handoffs of a row of n replicas. */
static int put_group(FILE *f, const char *name, const char *role, uint32_t n,
		     const struct sums *m, double horizon_s)
{
	return fprintf(f, "%s,%s,%u,%.6f,%llu,%.9f,%llu,", name, role, n,
		       horizon_s > 0 ? m->busy_s / (horizon_s * n) : 0.0,
		       (unsigned long long)m->admits,
		       m->admits ? m->wait_s / (double)m->admits : 0.0,
		       (unsigned long long)m->handoffs);
}

/* The link columns of prefill group pg over horizon_s seconds. */
static int put_links(FILE *f, const struct kv_disagg *pd, const struct kv_pd_group *pg,
		     double horizon_s)
{
	uint64_t n = 0, bytes = 0;
	double util = 0, util_max = 0, q = 0, q_max = 0, x = 0;
	uint32_t i;

	for (i = pg->link0; i < pg->link0 + pg->n_link; i++) {
		const struct kv_kvlink *l = &pd->link[i];
		double u = horizon_s > 0 ? (double)l->busy_ns * 1e-9 / horizon_s : 0;
		double w = (double)l->max_queue_ns * 1e-9;

		n += l->n_submitted;
		bytes += l->bytes_in;
		util += u;
		util_max = u > util_max ? u : util_max;
		q += (double)l->queue_ns * 1e-9;
		q_max = w > q_max ? w : q_max;
		x += (double)l->xfer_ns * 1e-9;
	}
	return fprintf(f, "%u,%llu,%llu,%.6f,%.6f,%.9f,%.9f,%.9f\n", pg->n_link,
		       (unsigned long long)n, (unsigned long long)bytes, util / pg->n_link,
		       util_max, n ? q / (double)n : 0.0, q_max, n ? x / (double)n : 0.0);
}

int kv_out_disagg_rows(FILE *f, const struct kv_sim *s)
{
	const struct kv_disagg *pd = s->pd;
	double horizon_s = (double)s->last_finish_ns * 1e-9;
	uint32_t g, i;

	if (fputs(kv_csv_header_disagg, f) == EOF)
		return -1;
	for (g = 0; g < pd->n_pg; g++) {
		const struct kv_pd_group *pg = &pd->pg[g];
		struct sums p = { 0 }, d = { 0 };

		for (i = pg->first; i < pg->first + pg->count; i++)
			add_replica(&p, &s->rep[i]);
		for (i = 0; i < pg->n_dec; i++)
			add_replica(&d, &s->rep[pg->dec[i]]);
		if (put_group(f, pg->name, "prefill", pg->count, &p, horizon_s) < 0 ||
		    put_links(f, pd, pg, horizon_s) < 0 ||
		    put_group(f, pg->dec_name, "decode", pg->n_dec, &d, horizon_s) < 0 ||
		    fputs(",,,,,,,,\n", f) == EOF)
			return -1;
	}
	return 0;
}
