/*
 * test_groups.c -- replica groups (cluster.groups): parsing (inheritance
 * from the top level, every error with its file, line and field), the
 * single group that equals a plain run, routing a tenant's requests to the
 * groups serving its model, the replica-count split between groups serving
 * one model, macro steps against exact steps with several groups.
 */
#include "testutil.h"

#include <check.h>
#include <math.h>
#include <string.h>

#include "workload.h"
#include "../sim/groups.h"
#include "../sim/load.h"
#include "../sim/replica.h"

/* Requests of a run by tenant and group (a sink). */
struct rec {
	const struct kv_sim *s;
	uint64_t by[4][4]; /* [tenant][group]: requests ended there */
	uint64_t ended;
};

/* The group holding replica idx. */
static uint32_t group_of(const struct kv_sim *s, uint32_t idx)
{
	uint32_t g;

	for (g = 0; g < s->n_grp; g++)
		if (idx >= s->grp[g].first && idx < s->grp[g].first + s->grp[g].count)
			return g;
	ck_abort_msg("replica %u in no group", idx);
	return 0;
}

static int rec_request(void *ctx, const struct kv_sim *s, const struct kv_req *q, enum kv_end e)
{
	struct rec *r = ctx;

	(void)e;
	r->by[q->tenant][group_of(s, q->replica)]++;
	r->ended++;
	return 0;
}

/* Loads text as w.yaml, which must succeed. */
static void load_ok(struct kv_workload *w, const char *text)
{
	struct kv_diag d = { 0 };
	int rc = kv_workload_load_mem(w, "w.yaml", text, strlen(text), NULL, 0, 0, 0, &d);

	ck_assert_msg(rc == 0, "load failed: %s:%lu:%lu: [%s] %s\n%s", d.file, d.line, d.col,
		      d.field, d.msg, text);
}

/* Runs w's config (exact steps when exact) recording into r; returns the summary's figures. */
static void run(struct kv_workload *w, int exact, struct rec *r, struct kv_summary *sum)
{
	struct kv_sink sink = { .ctx = r, .request = rec_request };
	struct kv_sim s;
	int rc;

	memset(r, 0, sizeof(*r));
	w->cfg.exact_steps = exact;
	w->cfg.sample_interval_ns = 0;
	rc = kv_sim_init(&s, &w->cfg, &sink);
	ck_assert_msg(rc == 0, "init: [%s] %s", s.diag.field, s.diag.msg);
	rc = kv_sim_run(&s);
	ck_assert_msg(rc == 0, "run: [%s] %s", s.diag.field, s.diag.msg);
	kv_summary_compute(&s, NULL, sum);
	kv_sim_release(&s);
}

#define WORKLOAD                                                                              \
	"workload: {requests: 400, arrival: {rate: 20}, lengths: {dist: uniform, prompt_min: 50, " \
	"prompt_max: 800, output_min: 1, output_max: 200}}\n"

/* A group takes the top level's keys it does not give; a section it gives replaces the top's whole. */
START_TEST(test_inherit)
{
	static const char text[] =
		"model: llama-2-7b\ndevice: a100-80g\nscheduler: vtc\n"
		"batching: {max_tokens: 1024, max_seqs: 64}\nmemory: {share: 0.8}\n"
		"cluster:\n  tensor_parallel: 2\n  groups:\n"
		"    - {name: a, replicas: 3, role: prefill}\n"
		"    - {name: b, device: h100-80g, tensor_parallel: 1, role: decode,\n"
		"       memory: {model: vllm}, scheduler: {name: fifo}}\n" WORKLOAD;
	struct kv_workload w;
	const struct kv_sim_config *a, *b;

	load_ok(&w, text);
	ck_assert_uint_eq(w.cfg.n_groups, 2);
	ck_assert_uint_eq(w.cfg.replicas, 4); /* the groups' sum */
	a = &w.cfg.groups[0];
	b = &w.cfg.groups[1];
	ck_assert_str_eq(a->group_name, "a");
	ck_assert_uint_eq(a->replicas, 3);
	ck_assert_uint_eq(a->tp, 2);
	ck_assert_str_eq(a->device.name, "a100-80g");
	ck_assert_str_eq(a->sched->name, "vtc");
	ck_assert_int_eq(a->role, KV_ROLE_PREFILL); /* a decode group needs one (docs/cluster.md) */
	ck_assert_double_eq(a->mem.share, 0.8);
	ck_assert_uint_eq(a->max_batch_tokens, 1024);
	ck_assert_str_eq(b->group_name, "b");
	ck_assert_uint_eq(b->replicas, 1); /* the default */
	ck_assert_uint_eq(b->tp, 1);
	ck_assert_str_eq(b->device.name, "h100-80g");
	ck_assert_str_eq(b->sched->name, "fifo");
	ck_assert_int_eq(b->role, KV_ROLE_DECODE);
	ck_assert_int_eq(b->mem.model, KV_MEM_VLLM);
	ck_assert_double_eq(b->mem.share, 0.9); /* a replaced section: its own default */
	ck_assert_uint_eq(b->max_batch_seqs, 64); /* batching inherited */
	ck_assert_uint_eq(kv_cfg_gpus(&w.cfg), 3 * 2 + 1);
	ck_assert_ptr_ne(a->sched_opts, w.cfg.sched_opts); /* each owns its options */
	kv_workload_release(&w);
}
END_TEST

/* Every error names the file, line and field, with the value and what was expected. */
START_TEST(test_errors)
{
	static const struct {
		const char *yaml; /* cluster: and tenants */
		unsigned long line; /* of the error, 0: any */
		const char *field, *msg;
	} cases[] = {
		{ "cluster:\n  replicas: 2\n  groups: [{name: a}]\n", 2, "cluster.replicas",
		  "expected the replicas in each group" },
		{ "cluster:\n  groups: []\n", 2, "cluster.groups", "0 groups: expected 1 to 64" },
		{ "cluster:\n  groups: {a: 1}\n", 2, "cluster.groups", "sequence" },
		{ "cluster:\n  groups:\n    - {name: a, colour: red}\n", 3, "cluster.groups[0].colour",
		  "unknown key" },
		{ "cluster:\n  groups:\n    - {name: a}\n    - {name: a}\n", 4,
		  "cluster.groups[1].name", "duplicate group name 'a'" },
		{ "cluster:\n  groups:\n    - {name: 'x,y'}\n", 3, "cluster.groups[0].name",
		  "without commas" },
		{ "cluster:\n  groups:\n    - {role: both}\n", 3, "cluster.groups[0].role",
		  "mixed, prefill, decode" },
		{ "cluster:\n  groups:\n    - {replicas: 0}\n", 3, "cluster.groups",
		  "0 replicas over the groups: expected 1 to 65536" },
		{ "cluster:\n  groups:\n    - {replicas: 100000}\n", 3, "cluster.groups[0].replicas", "" },
		{ "cluster:\n  groups:\n    - {replicas: 0}\n    - {model: llama-2-13b}\n", 0,
		  "workload", "model 'llama-2-7b' (the first group's, asked for by a tenant naming none), "
		  "which no replica group with replicas serves: expected one of: llama-2-13b" },
		{ "cluster:\n  groups:\n    - {weight: heavy}\n", 3, "cluster.groups[0].weight",
		  "(or auto: the replica's saturated capacity)" },
		{ "cluster:\n  groups:\n    - {cost_per_gpu_hour: -1}\n", 3,
		  "cluster.groups[0].cost_per_gpu_hour", "" },
		{ "cluster:\n  groups:\n    - {device: nosuch}\n", 3, "cluster.groups[0].device",
		  "unknown device 'nosuch'" },
		{ "cluster:\n  groups:\n    - {tensor_parallel: 3}\n", 3,
		  "cluster.groups[0].tensor_parallel", "attention heads" },
		{ "cluster:\n  tensor_parallel: 16\n  groups:\n    - {model: llama-2-13b}\n", 4,
		  "cluster.groups[0]", "attention heads" }, /* inherited tp 4 against its model */
		{ "cluster:\n  groups:\n    - {scheduler: {name: nosuch}}\n", 3,
		  "cluster.groups[0].scheduler.name", "unknown scheduler 'nosuch'" },
		{ "cluster:\n  groups:\n    - {memory: {share: 2}}\n", 3,
		  "cluster.groups[0].memory.share", "" },
		{ "cluster:\n  groups:\n    - {batching: {max_seqs: 0}}\n", 3,
		  "cluster.groups[0].batching.max_seqs", "" },
		{ "cluster:\n  groups:\n    - {model: llama-2-70b, memory: {share: 0.1}}\n", 3,
		  "", "" }, /* does not fit: at the group */
		{ "cluster:\n  groups: [{name: a}]\nworkload:\n  tenants:\n    - {name: t, model: "
		  "llama-2-13b}\n", 5, "workload.tenants[0].model",
		  "model 'llama-2-13b', which no replica group with replicas serves: expected one of: llama-2-7b" },
		{ "workload:\n  tenants:\n    - {name: t, model: mistral-7b}\n", 3,
		  "workload.tenants[0].model", "which no replica group with replicas serves" },
	};
	size_t i;

	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char text[1024];
		struct kv_workload w;
		struct kv_diag d = { 0 };
		int rc;

		snprintf(text, sizeof(text), "%s%s", cases[i].yaml,
			 strstr(cases[i].yaml, "workload:") ?
				 "  requests: 10\n  arrival: {rate: 1}\n" :
				 "workload: {requests: 10, arrival: {rate: 1}}\n");
		rc = kv_workload_load_mem(&w, "w.yaml", text, strlen(text), NULL, 0, 0, 0, &d);
		kv_workload_release(&w);
		ck_assert_msg(rc != 0, "case %zu loaded:\n%s", i, text);
		ck_assert_msg(!strcmp(d.file, "w.yaml") && (!cases[i].line || d.line == cases[i].line),
			      "case %zu: at %s:%lu, want w.yaml:%lu (%s)", i, d.file, d.line,
			      cases[i].line, d.msg);
		ck_assert_msg(!strncmp(d.field, cases[i].field, strlen(cases[i].field)),
			      "case %zu: field '%s', want '%s' (%s)", i, d.field, cases[i].field,
			      d.msg);
		ck_assert_msg(strstr(d.msg, cases[i].msg), "case %zu: message '%s' lacks '%s'", i,
			      d.msg, cases[i].msg);
	}
}
END_TEST

/* One group of R replicas is the plain run of R replicas, figure for figure (plus the fleet's cost). */
START_TEST(test_one_group_is_plain)
{
	static const char plain[] = "cluster: {replicas: 3, router: least-outstanding-tokens}\n"
				    "cache: chunked\n" WORKLOAD;
	static const char grouped[] = "cluster:\n  router: least-outstanding-tokens\n"
				      "  groups: [{name: all, replicas: 3}]\ncache: chunked\n" WORKLOAD;
	struct kv_workload w[2];
	struct kv_summary sum[2];
	struct rec r[2];
	size_t i;

	load_ok(&w[0], plain);
	load_ok(&w[1], grouped);
	run(&w[0], 0, &r[0], &sum[0]);
	run(&w[1], 0, &r[1], &sum[1]);
	ck_assert_uint_eq(sum[0].n + 3, sum[1].n); /* cluster.groups adds the fleet's cost */
	ck_assert_str_eq(sum[1].item[sum[0].n].name, "gpu_hours");
	ck_assert_str_eq(sum[1].item[sum[0].n + 1].name, "cost_usd");
	ck_assert_str_eq(sum[1].item[sum[0].n + 2].name, "cost_usd_per_hour");
	for (i = 0; i < sum[0].n; i++)
		ck_assert_msg(!memcmp(&sum[0].item[i].value, &sum[1].item[i].value, sizeof(double)),
			      "%s: plain %.17g, one group %.17g", sum[0].item[i].name,
			      sum[0].item[i].value, sum[1].item[i].value);
	kv_workload_release(&w[0]);
	kv_workload_release(&w[1]);
}
END_TEST

/*
 * Two models: a tenant naming a model reaches only the groups serving it;
 * a tenant naming none, the first group's model.  Two groups serving one
 * model split its arrivals by replica count (smooth weighted round-robin:
 * within one of 3:1).
 */
START_TEST(test_multi_model)
{
	static const char text[] =
		"cluster:\n  router: least-outstanding-tokens\n  groups:\n"
		"    - {name: small-a, replicas: 3}\n"
		"    - {name: big, model: llama-2-13b, device: h100-80g}\n"
		"    - {name: small-b, replicas: 1, device: h100-80g}\n"
		"workload: {requests: 800, arrival: {rate: 20}, lengths: {dist: uniform, "
		"prompt_min: 50, prompt_max: 800, output_min: 1, output_max: 100},\n"
		"  tenants: [{name: any, share: 3}, {name: large, model: llama-2-13b},\n"
		"            {name: small, model: llama-2-7b}]}\n";
	struct kv_workload w;
	struct kv_summary sum;
	struct rec r;
	uint64_t small;

	load_ok(&w, text);
	run(&w, 0, &r, &sum);
	ck_assert_uint_eq(r.ended, 800);
	ck_assert_msg(r.by[1][1] > 0 && r.by[1][0] == 0 && r.by[1][2] == 0,
		      "tenant large: %llu %llu %llu by group", (unsigned long long)r.by[1][0],
		      (unsigned long long)r.by[1][1], (unsigned long long)r.by[1][2]);
	ck_assert_msg(r.by[0][1] == 0 && r.by[2][1] == 0, "a llama-2-7b request reached big");
	small = r.by[0][0] + r.by[2][0] + r.by[0][2] + r.by[2][2];
	ck_assert_msg(r.by[0][0] + r.by[2][0] >= (3 * small) / 4 - 1 &&
			      r.by[0][0] + r.by[2][0] <= (3 * small + 3) / 4 + 1,
		      "small-a got %llu of %llu, want 3/4",
		      (unsigned long long)(r.by[0][0] + r.by[2][0]), (unsigned long long)small);
	kv_workload_release(&w);
}
END_TEST

/* Groups of different devices, engines and schedulers: macro steps give the exact run's figures. */
START_TEST(test_macro_exact)
{
	static const char text[] =
		"scheduler: fifo\ncache: chunked\n"
		"cluster:\n  router: least-outstanding-tokens\n  groups:\n"
		"    - {name: a, replicas: 2, engine: vllm}\n"
		"    - {name: b, device: h100-80g, engine: sglang, memory: {model: sglang}}\n"
		"    - {name: c, device: l40s, engine: vllm-v0, scheduler: vtc}\n" WORKLOAD;
	struct kv_workload w;
	struct kv_summary sum[2];
	struct rec r[2];
	size_t i;

	load_ok(&w, text);
	run(&w, 0, &r[0], &sum[0]);
	run(&w, 1, &r[1], &sum[1]);
	ck_assert_uint_eq(r[0].ended, 400);
	ck_assert(!memcmp(r[0].by, r[1].by, sizeof(r[0].by)));
	for (i = 0; i < sum[0].n; i++)
		if (strcmp(sum[0].item[i].name, "events"))
			ck_assert_msg(!memcmp(&sum[0].item[i].value, &sum[1].item[i].value,
					      sizeof(double)) ||
					      (sum[0].item[i].value != sum[0].item[i].value &&
					       sum[1].item[i].value != sum[1].item[i].value),
				      "%s: macro %.17g, exact %.17g", sum[0].item[i].name,
				      sum[0].item[i].value, sum[1].item[i].value);
	kv_workload_release(&w);
}
END_TEST

/* The summary's value of name, NAN when absent. */
static double sum_get(const struct kv_summary *sum, const char *name)
{
	return kv_summary_get(sum, name);
}

/*
 * A heterogeneous fleet: weight auto gives each group the share of its
 * replicas' saturated capacity (the H100 more than the A100 for one
 * model), the arrivals follow the shares, a group of no replicas gets
 * nothing, and gpu_hours and cost_usd are gpus x (0 to the last finish)
 * and that times each device's price (the group's override where given).
 */
START_TEST(test_hetero_cost)
{
	static const char text[] =
		"model: llama-3.1-8b\ncache: chunked\n"
		"cluster:\n  router: least-outstanding-tokens\n  groups:\n"
		"    - {name: a100, device: a100-80g, replicas: 2, weight: auto}\n"
		"    - {name: h100, device: h100-80g, replicas: 2, weight: auto}\n"
		"    - {name: spare, device: a30, replicas: 0}\n"
		"    - {name: cheap, device: a100-40g, replicas: 1, weight: 0.5, cost_per_gpu_hour: 1.25}\n"
		WORKLOAD;
	struct kv_sink sink = { 0 };
	struct kv_group_summary gs[4];
	struct kv_workload w;
	struct kv_summary sum;
	struct kv_sim s;
	double T_h, cap[2], want_usd;
	uint32_t i;

	load_ok(&w, text);
	ck_assert_double_eq(w.cfg.groups[3].device.cost_per_gpu_hour, 1.25);
	ck_assert_double_eq(w.cfg.groups[1].device.cost_per_gpu_hour, 6.88); /* the profile's */
	w.cfg.sample_interval_ns = 0;
	ck_assert_int_eq(kv_sim_init(&s, &w.cfg, &sink), 0);
	ck_assert_int_eq(kv_sim_run(&s), 0);
	for (i = 0; i < 2; i++) /* auto: replicas x one replica's capacity at the uniform lengths' midpoints */
		cap[i] = kv_load_group_capacity(&s, &s.grp[i], (50 + 800) / 2.0, (1 + 200) / 2.0);
	ck_assert_msg(cap[1] > cap[0] && s.grp[1].weight == 2 * cap[1] && s.grp[0].weight == 2 * cap[0],
		      "capacities %g %g, weights %g %g", cap[0], cap[1], s.grp[0].weight,
		      s.grp[1].weight);
	ck_assert_double_eq(s.grp[3].weight, 0.5);
	for (i = 0; i < 4; i++)
		kv_group_summary(&s, &s.grp[i], &gs[i]);
	ck_assert_uint_eq(gs[2].requests, 0);
	ck_assert_uint_eq(gs[0].requests + gs[1].requests + gs[3].requests, 400);
	ck_assert_msg(fabs((double)gs[1].requests / 400 - gs[1].weight_share) <= 2.0 / 400,
		      "h100 took %llu of 400, share %g", (unsigned long long)gs[1].requests,
		      gs[1].weight_share);
	kv_summary_compute(&s, NULL, &sum);
	T_h = (double)s.last_finish_ns * 1e-9 / 3600;
	want_usd = T_h * (2 * 3.4309 + 2 * 6.88 + 1 * 1.25);
	ck_assert_msg(fabs(sum_get(&sum, "gpu_hours") - 5 * T_h) < 1e-12 &&
			      fabs(sum_get(&sum, "cost_usd") - want_usd) < 1e-9,
		      "gpu_hours %g (want %g), cost_usd %g (want %g)", sum_get(&sum, "gpu_hours"),
		      5 * T_h, sum_get(&sum, "cost_usd"), want_usd);
	ck_assert_msg(fabs(gs[3].cost_usd - 1.25 * T_h) < 1e-12, "cheap's cost %g", gs[3].cost_usd);
	ck_assert_msg(fabs(sum_get(&sum, "cost_usd_per_hour") - (2 * 3.4309 + 2 * 6.88 + 1.25)) < 1e-12,
		      "cost_usd_per_hour %g", sum_get(&sum, "cost_usd_per_hour"));
	ck_assert(gs[2].cost_usd == 0); /* no GPUs: nothing to price (a30 has no price) */
	kv_sim_release(&s);
	kv_workload_release(&w);
}
END_TEST

static Suite *groups_suite(void)
{
	Suite *s = suite_create("groups");
	TCase *tc = tcase_create("core");

	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, test_inherit);
	tcase_add_test(tc, test_errors);
	tcase_add_test(tc, test_one_group_is_plain);
	tcase_add_test(tc, test_multi_model);
	tcase_add_test(tc, test_macro_exact);
	tcase_add_test(tc, test_hetero_cost);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return kv_test_run_suite(groups_suite());
}
