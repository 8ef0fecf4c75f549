/*
 * test_autoscale.c -- autoscaling (sim/autoscale.h) and the diurnal arrival
 * process: the counts stay within min and max, a drained replica holds
 * nothing, no request reaches a replica before its cold start ends, a
 * constant load does not flap, bad configurations are refused, and the
 * diurnal curve shapes the arrivals; prefill and decode groups scale, their
 * drained replicas hold no KV or transfer, and transfers reach warm decode
 * replicas only.
 */
#include "simtest.h"
#include "testutil.h"
#include "disagg.h"
#include "groups.h"

#include <math.h>

#define MAXR 8 /* replicas these tests use at most */

/* What a run showed: every decision row, and per replica when it last started. */
struct watch {
	const struct kv_autoscale_cfg *cfg;
	uint32_t rows, ups, downs, sign_changes, max_billed, min_on;
	int last_sign; /* of the last nonzero delta */
	uint8_t prev[MAXR]; /* replica states after the previous decision */
	kv_ns started[MAXR]; /* when each replica last began a cold start; KV_NS_NEVER: never */
	uint64_t served_after_start; /* iterations of replicas that went through a cold start */
	uint64_t bad_arrive, bad_iter; /* requests queued at, iterations run by, a replica not serving */
	uint64_t drained_off; /* replicas that went off (drained) since the previous decision */
	kv_ns cold_ns;
	double gpu_h;
};

static struct watch wt;

static int on_scale(void *ctx, const struct kv_sim *s, const struct kv_as_row *row)
{
	struct watch *w = ctx;
	uint32_t i, on = row->n[KV_REP_ACTIVE] + row->n[KV_REP_STARTING];
	uint32_t billed = on + row->n[KV_REP_DRAINING];

	w->rows++;
	w->max_billed = KV_MAX(w->max_billed, billed);
	w->min_on = w->rows == 1 ? on : KV_MIN(w->min_on, on);
	if (row->delta) {
		int sign = row->delta > 0 ? 1 : -1;

		w->ups += sign > 0;
		w->downs += sign < 0;
		w->sign_changes += w->last_sign && sign != w->last_sign;
		w->last_sign = sign;
	}
	for (i = 0; i < s->n_rep; i++) {
		const struct kv_replica *r = &s->rep[i];
		uint8_t st = s->as->state[i];

		if (st == KV_REP_STARTING && w->prev[i] != KV_REP_STARTING)
			w->started[i] = s->now;
		if (st == KV_REP_OFF) {
			ck_assert_msg(!r->n_assigned && r->pool.free_bytes == r->pool.size_bytes &&
					      !r->n_running && !r->live_tokens,
				      "t=%llu: replica %u off with %llu requests, %llu pool bytes",
				      (unsigned long long)s->now, i, (unsigned long long)r->n_assigned,
				      (unsigned long long)(r->pool.size_bytes - r->pool.free_bytes));
			w->drained_off += w->prev[i] == KV_REP_DRAINING || w->prev[i] == KV_REP_ACTIVE;
		}
		w->prev[i] = st;
	}
	w->gpu_h = row->gpu_s / 3600;
	return 0;
}

/* Requests reach, and iterations run on, active (or draining) replicas only. */
static void observe(void *ctx, const struct kv_sim *s, enum kv_obs_event ev,
		    const struct kv_replica *r, const struct kv_req *q, kv_ns dur_ns)
{
	struct watch *w = ctx;
	uint8_t st;

	(void)q, (void)dur_ns;
	if (!s->as || !r)
		return;
	st = s->as->state[r->idx];
	if (ev == KV_OBS_ARRIVE)
		w->bad_arrive += st != KV_REP_ACTIVE;
	if (ev == KV_OBS_ITER_START) {
		w->bad_iter += st != KV_REP_ACTIVE && st != KV_REP_DRAINING;
		if (w->started[r->idx] != KV_NS_NEVER) {
			ck_assert_msg(s->now >= w->started[r->idx] + w->cold_ns,
				      "replica %u runs at %llu ns, cold start began at %llu, takes %llu",
				      r->idx, (unsigned long long)s->now,
				      (unsigned long long)w->started[r->idx],
				      (unsigned long long)w->cold_ns);
			w->served_after_start++;
		}
	}
}

/* Runs YAML text with the watch as sink and (observe) observer. */
static void run_watched(const char *yaml, int with_observer)
{
	static struct kv_workload w;
	struct kv_sink sink = { .ctx = &wt, .scale = on_scale };
	struct kv_sim s;
	uint32_t i;

	memset(&wt, 0, sizeof(wt));
	for (i = 0; i < MAXR; i++)
		wt.started[i] = KV_NS_NEVER;
	load(&w, yaml);
	if (with_observer)
		w.cfg.observer = (struct kv_observer){ .fn = observe, .ctx = &wt };
	wt.cfg = &w.cfg.autoscale;
	sim_start(&w, &s, &sink, 0);
	ck_assert_ptr_nonnull(s.as);
	ck_assert_uint_eq(s.n_as, 1);
	wt.cold_ns = s.as->cold_ns;
	sim_finish(&s);
	kv_sim_release(&s);
	kv_workload_release(&w);
}

/* A burst then silence: the fleet grows to max, then drains back to min. */
#define BURST_WITH(cache) "model: llama-2-7b\ndevice: a100-80g\nscheduler: fifo\ncache: " cache "\n" \
	      "cluster: {replicas: 1, router: least-outstanding-tokens}\n"                \
	      "outputs: {sample_interval: 0}\n"                                         \
	      "workload:\n  requests: 3000\n  arrival: {process: poisson, rate: 60}\n"   \
	      "  lengths: {dist: fixed, prompt: 512, output: 256}\n"
#define BURST BURST_WITH("chunked")

START_TEST(within_min_max)
{
	run_watched(BURST "autoscale: {min: 1, max: 4, policy: queue, up: 2, down: 0.5, "
			  "interval: 2s, window: 4s, cooldown_down: 10s, start_time: 5s}\n", 0);
	ck_assert_msg(wt.rows > 10 && wt.ups >= 3 && wt.downs >= 1,
		      "%u decisions, %u up, %u down: the burst should grow and shrink the fleet",
		      wt.rows, wt.ups, wt.downs);
	ck_assert_msg(wt.max_billed <= 4 && wt.min_on >= 1, "billed up to %u, on down to %u",
		      wt.max_billed, wt.min_on);
	ck_assert_uint_eq(wt.max_billed, 4);
}
END_TEST

/* Drained replicas hold nothing (checked at every decision) and some did drain. */
START_TEST(drained_holds_nothing)
{
	run_watched(BURST_WITH("shared") "autoscale: {min: 1, max: 3, policy: kv_util, up: 0.3, "
		    "down: 0.1, interval: 1s, window: 2s, cooldown_down: 3s, start_time: 2s}\n", 1);
	ck_assert_msg(wt.drained_off >= 1, "no replica went from draining to off");
}
END_TEST

/* A starting replica gets no request and runs nothing before its cold start ends. */
START_TEST(cold_start_respected)
{
	run_watched(BURST "autoscale: {min: 1, max: 4, policy: queue, up: 1, down: 0.2, "
			  "interval: 1s, window: 1s, start_time: 7s, load_bandwidth: 1GB}\n", 1);
	ck_assert_msg(wt.bad_arrive == 0 && wt.bad_iter == 0,
		      "%llu requests queued at, %llu iterations on, replicas not serving",
		      (unsigned long long)wt.bad_arrive, (unsigned long long)wt.bad_iter);
	ck_assert_msg(wt.served_after_start > 0, "no started replica ever served");
	/* 13.5 GB of Llama-2-7B weights at 1 GB/s plus 7 s */
	ck_assert_msg(wt.cold_ns > 20 * KV_NS_PER_S && wt.cold_ns < 21 * KV_NS_PER_S,
		      "cold start %llu ns", (unsigned long long)wt.cold_ns);
}
END_TEST

/* Constant load (constant gaps, fixed lengths): the count settles, no up-down-up. */
START_TEST(no_flapping)
{
	run_watched("model: llama-2-7b\ndevice: a100-80g\nscheduler: fifo\ncache: chunked\n"
		    "cluster: {replicas: 1, router: least-outstanding-tokens}\n"
		    "outputs: {sample_interval: 0}\n"
		    "workload:\n  duration: 1h\n  arrival: {process: gamma, rate: 12, cv: 0.001}\n"
		    "  lengths: {dist: fixed, prompt: 512, output: 256}\n"
		    "autoscale: {min: 1, max: 8, policy: kv_util, up: 0.5, down: 0.1, "
		    "interval: 15s, cooldown_down: 60s}\n", 0);
	ck_assert_msg(wt.ups >= 1, "constant load never scaled up (%u decisions)", wt.rows);
	ck_assert_msg(wt.sign_changes <= 1, "%u reversals (%u up, %u down) under constant load",
		      wt.sign_changes, wt.ups, wt.downs);
}
END_TEST

/* Per group: only the autoscaled group's replicas change state; the static group stays whole. */
static int group_rows[2];
static double group_last_gpu_s; /* the last decision's gpu_s */

static int on_group_scale(void *ctx, const struct kv_sim *s, const struct kv_as_row *row)
{
	uint32_t i;

	(void)ctx;
	ck_assert_msg(row->group == 1, "a decision of group %u, which has no autoscale", row->group);
	group_rows[1]++;
	for (i = 0; i < 2; i++) /* group 0: replicas 0 and 1, always active */
		ck_assert_int_eq(s->rep_state[i], KV_REP_ACTIVE);
	ck_assert_uint_le(row->n[KV_REP_ACTIVE] + row->n[KV_REP_STARTING], 3);
	group_last_gpu_s = row->gpu_s;
	return 0;
}

/*
 * groups.csv and summary.csv bill an autoscaled group for the replica-seconds
 * it provisioned (autoscale.csv's gpu_hours: cold starts counted, off
 * replicas not), a static group for every GPU to the last finish; the cost
 * is those GPU-hours at the A100-80GB's price.
 */
static void check_group_cost(const struct kv_sim *s)
{
	double T_h = (double)s->last_finish_ns * 1e-9 / 3600, price = s->grp[1].cfg->device.cost_per_gpu_hour;
	struct kv_group_summary gs[2];
	struct kv_summary sum;

	kv_group_summary(s, &s->grp[0], &gs[0]);
	kv_group_summary(s, &s->grp[1], &gs[1]);
	ck_assert_double_eq_tol(gs[0].gpu_hours, 2 * T_h, 1e-12);
	ck_assert_double_eq_tol(gs[1].gpu_hours, s->as[0].gpu_s / 3600, 1e-15);
	/* one replica at least all run; not max (3) all run: it began at 1, the other two off until
	 * the first decision (2 s) at least */
	ck_assert_msg(gs[1].gpu_hours >= T_h && gs[1].gpu_hours <= 3 * T_h - 2 * 2.0 / 3600 &&
			      gs[1].gpu_hours >= group_last_gpu_s / 3600,
		      "elastic group: %g GPU-hours over %g h (max 3 GPUs), last decision %g",
		      gs[1].gpu_hours, T_h, group_last_gpu_s / 3600);
	ck_assert_double_eq_tol(gs[1].cost_usd, gs[1].gpu_hours * price, 1e-12);
	kv_summary_compute(s, NULL, &sum);
	ck_assert_double_eq_tol(kv_summary_get(&sum, "gpu_hours"), gs[0].gpu_hours + gs[1].gpu_hours, 1e-12);
	ck_assert_double_eq_tol(kv_summary_get(&sum, "cost_usd"), gs[0].cost_usd + gs[1].cost_usd, 1e-9);
	ck_assert_double_eq_tol(kv_summary_get(&sum, "cost_usd_per_hour"), 5 * price, 1e-9);
}

START_TEST(per_group)
{
	static struct kv_workload w;
	struct kv_sink sink = { .scale = on_group_scale };
	struct kv_sim s;

	load(&w, "model: llama-2-7b\ndevice: a100-80g\ncache: chunked\n"
		 "cluster:\n  router: least-outstanding-tokens\n  groups:\n"
		 "    - {name: fixed, replicas: 2}\n"
		 "    - {name: elastic, replicas: 1, autoscale: {min: 1, max: 3, policy: queue, up: 2, "
		 "down: 0.5, interval: 2s, window: 4s, cooldown_down: 10s, start_time: 5s}}\n"
		 "outputs: {sample_interval: 0}\n"
		 "workload:\n  requests: 3000\n  arrival: {process: poisson, rate: 60}\n"
		 "  lengths: {dist: fixed, prompt: 512, output: 256}\n");
	ck_assert_int_eq(w.cfg.n_groups, 2);
	ck_assert_int_eq(w.cfg.groups[1].autoscale.on, 1);
	ck_assert_int_eq(w.cfg.groups[0].autoscale.on, 0);
	ck_assert_uint_eq(w.cfg.replicas, 5); /* 2 + the elastic group's max */
	sim_start(&w, &s, &sink, 0);
	ck_assert_uint_eq(s.n_as, 1);
	ck_assert_uint_eq(s.as[0].lo, 2);
	ck_assert_uint_eq(s.as[0].hi, 5);
	group_rows[1] = 0;
	sim_finish(&s);
	ck_assert_msg(group_rows[1] > 10 && s.as[0].ups >= 1, "%d decisions, %llu scale-ups",
		      group_rows[1], (unsigned long long)s.as[0].ups);
	check_group_cost(&s);
	kv_sim_release(&s);
	kv_workload_release(&w);
}
END_TEST

/*
 * Prefill/decode roles (autoscale.h): a prefill group scaling on its queue
 * and a decode group on its concurrency (transfers on their way counted).
 * What the run must show: each group within its max; an off replica holds
 * nothing (no KV, no request, no transfer queued or in flight, none handed
 * off); a KV transfer goes only to a decode replica that was active (warm,
 * not draining) when it was sent; every request ends completed; every byte
 * sent lands.
 */
#define PD_LOG 4096 /* decision rows kept */

struct pd_watch {
	uint32_t n_rows; /* entries of t and st */
	kv_ns t[PD_LOG]; /* a decision's time (entry 0: the start) */
	uint8_t st[PD_LOG][MAXR]; /* every replica's state after it */
	kv_ns started[MAXR]; /* when each replica last began a cold start; KV_NS_NEVER: never */
	kv_ns cold_ns;
	uint32_t max_billed[2], drained_off[2];
	uint64_t sends, bad_sends, bad_iter;
};

static struct pd_watch pw;

/* Logs the states after a decision and checks the off replicas hold nothing. */
static void pd_log(const struct kv_sim *s)
{
	uint32_t i, k = pw.n_rows;

	ck_assert_uint_lt(k, PD_LOG);
	pw.t[k] = s->now;
	for (i = 0; i < s->n_rep; i++) {
		const struct kv_replica *r = &s->rep[i];

		pw.st[k][i] = s->rep_state[i];
		if (k && pw.st[k][i] == KV_REP_STARTING && pw.st[k - 1][i] != KV_REP_STARTING)
			pw.started[i] = s->now;
		if (s->rep_state[i] != KV_REP_OFF)
			continue;
		ck_assert_msg(!r->n_assigned && !r->n_running && !r->live_tokens &&
				      r->pool.free_bytes == r->pool.size_bytes && !r->n_handoff &&
				      !r->n_xfer_held && !r->n_inbound && !r->inbound_bytes,
			      "t=%llu: replica %u off holding %llu requests, %llu pool bytes, %u "
			      "handed off, %u KV held for a transfer, %u transfers (%llu bytes) inbound",
			      (unsigned long long)s->now, i, (unsigned long long)r->n_assigned,
			      (unsigned long long)(r->pool.size_bytes - r->pool.free_bytes),
			      r->n_handoff, r->n_xfer_held, r->n_inbound,
			      (unsigned long long)r->inbound_bytes);
	}
	pw.n_rows++;
}

static int pd_scale(void *ctx, const struct kv_sim *s, const struct kv_as_row *row)
{
	const struct kv_autoscale *a = &s->as[row->group];
	uint32_t i, billed = row->n[KV_REP_ACTIVE] + row->n[KV_REP_STARTING] + row->n[KV_REP_DRAINING];

	(void)ctx;
	ck_assert_uint_lt(row->group, 2);
	ck_assert_uint_le(billed, a->cfg->max);
	pw.max_billed[row->group] = KV_MAX(pw.max_billed[row->group], billed);
	for (i = a->lo; i < a->hi; i++)
		pw.drained_off[row->group] += s->rep_state[i] == KV_REP_OFF &&
					      (pw.st[pw.n_rows - 1][i] == KV_REP_DRAINING ||
					       pw.st[pw.n_rows - 1][i] == KV_REP_ACTIVE);
	pd_log(s);
	return 0;
}

/* A transfer's decode replica was active when it was sent; iterations run on serving replicas. */
static void pd_observe(void *ctx, const struct kv_sim *s, enum kv_obs_event ev,
		       const struct kv_replica *r, const struct kv_req *q, kv_ns dur_ns)
{
	kv_ns sent;
	uint32_t k;
	uint8_t st;

	(void)ctx, (void)dur_ns;
	if (!r || !s->rep_state)
		return;
	if (ev == KV_OBS_ITER_START)
		pw.bad_iter += s->rep_state[r->idx] != KV_REP_ACTIVE &&
			       s->rep_state[r->idx] != KV_REP_DRAINING;
	if (ev != KV_OBS_ARRIVE || r->cfg->role != KV_ROLE_DECODE)
		return;
	sent = q->xfer_done_ns - q->xfer_ns;
	for (k = pw.n_rows; k > 1 && pw.t[k - 1] >= sent;) /* the last decision before the send */
		k--;
	st = pw.st[k - 1][r->idx];
	pw.sends++;
	/* a starting one turns active between decisions, once its cold start is over */
	pw.bad_sends += !(st == KV_REP_ACTIVE ||
			  (st == KV_REP_STARTING && sent >= pw.started[r->idx] + pw.cold_ns));
}

static void run_pd(const char *placement)
{
	static struct kv_workload w;
	struct kv_sink sink = { .scale = pd_scale };
	const struct kv_disagg *pd;
	uint64_t out = 0, in = 0, ended = 0;
	struct kv_sim s;
	char yaml[2048];
	uint32_t i;

	snprintf(yaml, sizeof(yaml),
		 "model: llama-2-7b\ndevice: a100-80g\nscheduler: fifo\ncache: chunked\n"
		 "cluster:\n  router: least-outstanding-tokens\n"
		 "  kv_transfer: {bandwidth: 10GB/s, placement: %s}\n  groups:\n"
		 "    - {name: p, role: prefill, replicas: 1, autoscale: {min: 1, max: 3, "
		 "policy: queue, up: 2, down: 0.5, interval: 2s, window: 4s, cooldown_down: 10s, "
		 "start_time: 5s}}\n"
		 "    - {name: d, role: decode, replicas: 2, autoscale: {min: 1, max: 3, "
		 "policy: concurrency, up: 60, down: 20, interval: 2s, window: 4s, "
		 "cooldown_down: 10s, start_time: 5s}}\n"
		 "outputs: {sample_interval: 0}\n"
		 "workload:\n  requests: 3000\n  arrival: {process: poisson, rate: 30}\n"
		 "  lengths: {dist: fixed, prompt: 512, output: 256}\n", placement);
	memset(&pw, 0, sizeof(pw));
	for (i = 0; i < MAXR; i++)
		pw.started[i] = KV_NS_NEVER;
	load(&w, yaml);
	w.cfg.observer = (struct kv_observer){ .fn = pd_observe, .ctx = &pw };
	sim_start(&w, &s, &sink, 0);
	ck_assert_uint_eq(s.n_as, 2);
	ck_assert_ptr_nonnull(s.pd);
	pw.cold_ns = s.as[1].cold_ns;
	pd_log(&s); /* the states at the start */
	sim_finish(&s);
	for (i = 0; i < 2; i++) {
		ck_assert_msg(s.as[i].ups >= 1 && pw.max_billed[i] == 3 && pw.drained_off[i] >= 1,
			      "%s: group %u scaled up %llu times, to %u billed, %u drained off",
			      placement, i, (unsigned long long)s.as[i].ups, pw.max_billed[i],
			      pw.drained_off[i]);
	}
	ck_assert_msg(pw.sends > 0 && pw.bad_sends == 0 && pw.bad_iter == 0,
		      "%s: %llu of %llu transfers sent to a decode replica not active, %llu "
		      "iterations on replicas not serving", placement,
		      (unsigned long long)pw.bad_sends, (unsigned long long)pw.sends,
		      (unsigned long long)pw.bad_iter);
	pd = s.pd;
	for (i = 0; i < pd->n_link; i++)
		out += pd->link[i].bytes_out;
	for (i = 0; i < s.n_rep; i++)
		in += s.rep[i].xfer_in_bytes + s.rep[i].xfer_dropped_bytes;
	for (i = 0; i < KV_END_N; i++)
		ended += s.ended[i];
	ck_assert_msg(out == in && out > 0 && pd->sent == pd->landed && pd->sent == 3000,
		      "%llu bytes sent, %llu landed; %llu transfers sent, %llu landed",
		      (unsigned long long)out, (unsigned long long)in,
		      (unsigned long long)pd->sent, (unsigned long long)pd->landed);
	ck_assert_uint_eq(ended, 3000);
	ck_assert_uint_eq(s.ended[KV_END_COMPLETED], 3000);
	kv_sim_release(&s);
	kv_workload_release(&w);
}

START_TEST(pd_roles)
{
	run_pd("least-kv");
	run_pd("round-robin");
}
END_TEST

/* The cold-start delay: shard bytes over the load bandwidth plus the constant. */
START_TEST(cold_start_formula)
{
	struct kv_autoscale_cfg c = { .load_Bps = 5e9, .start_ns = 30 * KV_NS_PER_S };

	ck_assert_uint_eq(kv_autoscale_cold_ns(&c, 10000000000ULL), 32 * KV_NS_PER_S);
	c.load_Bps = 2e9;
	ck_assert_uint_eq(kv_autoscale_cold_ns(&c, 1000000000ULL), 30500 * KV_NS_PER_MS);
}
END_TEST

/* Bad configurations name the field and what was expected. */
START_TEST(bad_config)
{
	static const struct {
		const char *yaml, *field, *msg;
	} cases[] = {
		{ "autoscale: {min: 1, max: 4, policy: queue, up: 1, down: 2}\n", "autoscale.down",
		  "expected up above down" },
		{ "autoscale: {min: 1, max: 4, policy: slo, up: 0.99, down: 0.9}\n", "autoscale.down",
		  "expected up below down" },
		{ "autoscale: {min: 3, max: 2}\n", "autoscale.max", "expected at least min" },
		{ "autoscale: {min: 1, max: 2, policy: slo}\n", "autoscale.policy",
		  "expected an slo: section" },
		{ "cluster: {replicas: 5}\nautoscale: {min: 1, max: 4}\n", "cluster.replicas",
		  "expected 1..4" },
		{ "autoscale: {min: 1, max: 4, policy: cpu}\n", "autoscale.policy", "queue" },
		{ "autoscale: {min: 1, max: 4, interval: 0s}\n", "autoscale.interval", "" },
		{ "autoscale: {min: 1, max: 4, kv_util: 3}\n", "autoscale", "kv_util" },
		{ "cluster: {groups: [{replicas: 1}]}\nautoscale: {min: 1, max: 2}\n", "autoscale",
		  "each group's own autoscale" },
		{ "cluster: {groups: [{replicas: 4, autoscale: {min: 1, max: 2}}]}\n",
		  "cluster.groups[0].replicas", "expected 1..2" },
	};
	size_t i;

	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct kv_workload w;
		struct kv_diag d;
		char yaml[1024];
		int rc;

		snprintf(yaml, sizeof(yaml), "model: llama-2-7b\ndevice: a100-80g\n%s%s", cases[i].yaml,
			 "workload: {requests: 10, lengths: {dist: fixed, prompt: 10, output: 10}}\n");
		rc = try_load(&w, yaml, &d);
		ck_assert_msg(rc < 0 && strstr(d.field, cases[i].field) && strstr(d.msg, cases[i].msg),
			      "case %zu: rc %d, field '%s', message '%s'", i, rc, d.field, d.msg);
		kv_workload_release(&w);
	}
}
END_TEST

/* Without autoscale: nothing of it exists (no state, every replica routable). */
START_TEST(off_by_default)
{
	struct kv_workload w;
	struct kv_sim s;

	load(&w, "model: llama-2-7b\ndevice: a100-80g\ncluster: {replicas: 3}\n"
		 "workload: {requests: 10, lengths: {dist: fixed, prompt: 10, output: 10}}\n");
	ck_assert_int_eq(w.cfg.autoscale.on, 0);
	sim_start(&w, &s, NULL, 0);
	ck_assert_ptr_null(s.as);
	ck_assert_uint_eq(s.n_rep, 3);
	kv_sim_release(&s);
	kv_workload_release(&w);
}
END_TEST

/* Diurnal arrivals: the busiest hour of the period near the peak, the quietest near the trough. */
START_TEST(diurnal_curve)
{
	struct kv_source_spec sp = { .arrival = KV_ARRIVAL_DIURNAL, .rate_per_s = 20,
				     .trough = 0.25, .peak_at_ns = 6 * 3600 * KV_NS_PER_S,
				     .period_ns = 24 * 3600 * KV_NS_PER_S,
				     .duration_ns = 24 * 3600 * KV_NS_PER_S };
	uint64_t per_h[24] = { 0 }, n = 0;
	struct kv_source *src;
	struct kv_arrival a;
	struct kv_diag d;
	double ratio;
	int rc;

	sp.lengths.kind = KV_LEN_FIXED;
	sp.lengths.prompt = 10;
	sp.lengths.output = 10;
	ck_assert_int_eq(kv_source_open(&sp, 7, &src, &d), 0);
	while ((rc = kv_source_next(src, &a, &d)) == 1) {
		per_h[a.t_ns / (3600 * KV_NS_PER_S)]++;
		n++;
	}
	ck_assert_int_eq(rc, 0);
	kv_source_close(src);
	/* mean rate = 20 * (1 + 0.25) / 2 = 12.5/s: 1.08 million a day */
	ck_assert_msg(fabs((double)n / (12.5 * 86400) - 1) < 0.01, "%llu arrivals in a day",
		      (unsigned long long)n);
	/* the hour around the peak (5:30-6:30 is split; 6:00-7:00 holds near 20/s) */
	ratio = (double)per_h[18] / (double)per_h[6];
	ck_assert_msg(per_h[6] > 69000 && fabs(ratio - 0.26) < 0.02,
		      "peak hour %llu arrivals, trough/peak %.3f", (unsigned long long)per_h[6],
		      ratio);
}
END_TEST

static Suite *autoscale_suite(void)
{
	Suite *s = suite_create("autoscale");
	TCase *tc = tcase_create("core");

	tcase_set_timeout(tc, 300);
	tcase_add_test(tc, within_min_max);
	tcase_add_test(tc, drained_holds_nothing);
	tcase_add_test(tc, cold_start_respected);
	tcase_add_test(tc, no_flapping);
	tcase_add_test(tc, per_group);
	tcase_add_test(tc, pd_roles);
	tcase_add_test(tc, cold_start_formula);
	tcase_add_test(tc, bad_config);
	tcase_add_test(tc, off_by_default);
	tcase_add_test(tc, diurnal_curve);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return kv_test_run_suite(autoscale_suite());
}
