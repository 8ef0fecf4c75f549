/* calib.c -- runs for calibrate and validate; see calib.h. */
#include "calib.h"

#include "output.h"
#include "profiles.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static int on_request(void *ctx, const struct kv_sim *s, const struct kv_req *q, enum kv_end e)
{
	struct kv_run_result *res = ctx;
	struct kv_req_out *o;

	(void)s;
	if (q->id >= res->cap_req) {
		size_t cap = res->cap_req ? res->cap_req : 256;

		while (cap <= q->id)
			cap *= 2;
		res->req = kv_xrealloc(res->req, cap * sizeof(*res->req));
		memset(res->req + res->cap_req, 0, (cap - res->cap_req) * sizeof(*res->req));
		res->cap_req = cap;
	}
	if (q->id >= res->n_req)
		res->n_req = q->id + 1;
	o = &res->req[q->id];
	o->completed = e == KV_END_COMPLETED;
	o->ttft_s = o->tpot_s = o->e2e_s = NAN;
	if (!o->completed)
		return 0;
	o->ttft_s = (double)(q->first_token_ns - q->arrival_ns) * 1e-9;
	o->e2e_s = (double)(q->finish_ns - q->arrival_ns) * 1e-9;
	if (q->output_tokens > 1)
		o->tpot_s = (double)(q->finish_ns - q->first_token_ns) * 1e-9 /
			    (double)(q->output_tokens - 1);
	return 0;
}

int kv_calib_clock(const char *s)
{
	return !strcmp(s, "wall") ? 0 : !strcmp(s, "cpu") ? 1 : -1;
}

int kv_calib_run(struct kv_workload *w, const char *kind, int threads, int cpu_clock,
		 struct kv_real_exec *e, struct kv_run_result *res, int quiet, struct kv_diag *d)
{
	struct kv_sink sink = { .ctx = res, .request = on_request, .progress = kv_progress_cb };
	struct kv_sim s;
	int rc;

	memset(res, 0, sizeof(*res));
	w->cfg.exec = NULL;
	rc = kv_sim_init(&s, &w->cfg, &sink);
	if (rc) {
		*d = s.diag;
		kv_sim_release(&s);
		return rc;
	}
	if (kind && (rc = kv_real_exec_open(e, kind, &s, &w->cfg, threads, cpu_clock, d))) {
		kv_sim_release(&s);
		return rc;
	}
	kv_progress_init(quiet);
	rc = kv_sim_run(&s);
	kv_progress_done();
	w->cfg.exec = NULL;
	if (rc) {
		*d = s.diag;
		if (!d->msg[0])
			kv_diag_set(d, rc, w->path, 0, 0, "", "the run failed: %s", kv_strerror(rc));
	} else {
		res->peak_reserved_bytes = s.rep[0].peak_reserved_bytes;
		res->reserved_Bs = s.rep[0].reserved_Bs;
		res->used_Bs = s.rep[0].used_Bs;
		res->iterations = s.rep[0].iterations;
		res->makespan_s = (double)(s.last_finish_ns - s.first_arrival_ns) * 1e-9;
	}
	kv_sim_release(&s);
	return rc;
}

void kv_run_result_free(struct kv_run_result *res)
{
	free(res->req);
	memset(res, 0, sizeof(*res));
}

int kv_calib_device(struct kv_sim_config *cfg, const char *device, struct kv_diag *d)
{
	struct kv_device dev;
	int rc = kv_profile_load_device(device, &dev, d);

	if (!rc)
		cfg->device = dev;
	return rc;
}
