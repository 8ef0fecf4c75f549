/*
 * test_router.c -- the prefix-load router and its block index: the index
 * against a brute-force model of which replica holds which key (its holder
 * forms: in the head, lists, sets; promotion and demotion at the
 * thresholds; walks over ranges), the index against every replica's
 * cache during whole runs (the router's verify option), the longest cached
 * prefix winning at equal loads, and the weights moving the choice.
 */
#include "kvindex.h"
#include "simtest.h"
#include "testutil.h"

#include <gsl/gsl_rng.h>

#define KEYS 48 /* distinct keys of the brute-force model */
#define REPS_MAX 70

/* xorshift64: the model test's draws, reproducible without GSL. */
static uint64_t next_rand(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

/* The leading keys of ks[0..n) replica r holds in the model. */
static uint32_t model_depth(unsigned char held[KEYS][REPS_MAX], const uint32_t *ks, uint32_t n,
			    uint32_t r)
{
	uint32_t d = 0;

	while (d < n && held[ks[d]][r])
		d++;
	return d;
}

/*
 * Random adds and removes on n_rep replicas (list -> set at promote, set ->
 * list below demote; 0: the defaults), keys drawn so that some stay
 * sparse and some fill up; after each, a random walk over a random range
 * against the model, and each key's form against its count and history,
 * for steps steps.
 */
static void index_against_model(uint32_t n_rep, uint32_t promote, uint32_t demote, uint32_t steps)
{
	static unsigned char held[KEYS][REPS_MAX];
	static int was_set[KEYS];
	struct kv_kvindex x;
	uint64_t seed = 88172645463325252ULL ^ (n_rep * 7919ULL + promote), keys[8], holders = 0;
	uint32_t cand[REPS_MAX], ks[8], step, i, r, sets = 0, lists = 0;

	memset(held, 0, sizeof(held));
	memset(was_set, 0, sizeof(was_set));
	kv_kvindex_init(&x, n_rep);
	if (promote)
		kv__kvindex_thresholds(&x, promote, demote);
	for (step = 0; step < steps; step++) {
		uint32_t k = (uint32_t)(next_rand(&seed) % KEYS), n, nc, lo, hi, c = 0;
		int want;

		r = (uint32_t)(next_rand(&seed) % n_rep);
		/* key k is held with probability (k + 1) / KEYS: low keys stay sparse, high keys fill */
		want = next_rand(&seed) % KEYS <= k;
		if (held[k][r] && !want) {
			kv_kvindex_remove(&x, 1000003ULL * k + 7, r);
			holders--;
			held[k][r] = 0;
		} else if (!held[k][r] && want) {
			kv_kvindex_add(&x, 1000003ULL * k + 7, r);
			holders++;
			held[k][r] = 1;
		}
		ck_assert_uint_eq(x.holders, holders);
		for (i = 0; i < n_rep; i++)
			c += held[k][i];
		ck_assert_uint_eq(kv_kvindex_count(&x, 1000003ULL * k + 7), c);
		/* the form: a set from promote on, until below demote */
		if (c >= x.promote)
			was_set[k] = 1;
		else if (c < x.demote)
			was_set[k] = 0;
		ck_assert_msg(kv_kvindex_is_set(&x, 1000003ULL * k + 7) == (was_set[k] && c > 1),
			      "step %u: key %u with %u holders (promote %u, demote %u) is_set %d", step,
			      k, c, x.promote, x.demote, kv_kvindex_is_set(&x, 1000003ULL * k + 7));
		sets += was_set[k] && c > 1;
		lists += !was_set[k] && c > 1;
		n = 1 + (uint32_t)(next_rand(&seed) % 8);
		for (i = 0; i < n; i++) { /* few keys, mostly dense ones, so walks go deep */
			ks[i] = KEYS - 1 - (uint32_t)(next_rand(&seed) % (i ? 6 : 12));
			keys[i] = 1000003ULL * ks[i] + 7;
		}
		lo = (uint32_t)(next_rand(&seed) % n_rep);
		hi = lo + 1 + (uint32_t)(next_rand(&seed) % (n_rep - lo));
		if (step % 3 == 0)
			lo = 0, hi = n_rep;
		nc = kv_kvindex_walk(&x, keys, n, lo, hi, cand);
		for (i = 0; i < nc; i++)
			ck_assert_msg(held[ks[0]][cand[i]] && cand[i] >= lo && cand[i] < hi,
				      "step %u: candidate %u lacks the first key or is out of [%u, %u)",
				      step, cand[i], lo, hi);
		for (r = 0, i = 0; r < n_rep; r++) {
			uint32_t want = r >= lo && r < hi ? model_depth(held, ks, n, r) : 0;

			i += want > 0;
			ck_assert_msg(kv_kvindex_depth(&x, r) == want,
				      "step %u, %u replicas, [%u, %u): replica %u holds %u leading keys, the index says %u",
				      step, n_rep, lo, hi, r, want, kv_kvindex_depth(&x, r));
			ck_assert_int_eq(kv_kvindex_has(&x, keys[0], r), held[ks[0]][r]);
		}
		ck_assert_uint_eq(nc, i);
	}
	ck_assert_msg(sets > 0 && (lists > 0 || x.promote == 2), "%u replicas: sets %u, lists %u: a form never exercised",
		      n_rep, sets, lists);
	for (i = 0; i < KEYS; i++) {
		uint32_t c = 0;

		for (r = 0; r < n_rep; r++)
			c += held[i][r];
		ck_assert_uint_eq(kv_kvindex_count(&x, 1000003ULL * i + 7), c);
	}
	kv_kvindex_release(&x);
}

/*
 * 20,000 steps each; under valgrind and AddressSanitizer (memcheck took 121 s of
 * CPU over 4,000 steps each, ASan 104 s over the 20,000: most of either suite's
 * time) 1,000, and 4,000 for the promote-at-40 index, whose keys need about
 * 3,000 steps to reach 40 holders: both forms still run in each (asserted;
 * at 1,000 the indexes with lists have 260 to 500 steps in each form), and
 * the plain build runs the 20,000.
 */
START_TEST(index_matches_model)
{
#if defined(__SANITIZE_ADDRESS__)
	int slim = 1;
#else
	int slim = under_valgrind();
#endif
	uint32_t n = slim ? 1000 : 20000;

	index_against_model(8, 0, 0, n); /* one word: sets from 2 holders */
	index_against_model(64, 0, 0, n);
	index_against_model(REPS_MAX, 0, 0, n); /* two words */
	index_against_model(REPS_MAX, 9, 4, n); /* lists of several classes, hysteresis */
	index_against_model(REPS_MAX, 5, 5, n); /* demote at the promote threshold */
	index_against_model(REPS_MAX, 40, 2, slim ? 4000 : 20000);
}
END_TEST

/* --- whole runs ------------------------------------------------------------ */

#define MAX_REQ 4096

struct placed {
	uint32_t replica[MAX_REQ]; /* where each request id went */
	uint64_t n;
};

static int placed_request(void *ctx, const struct kv_sim *s, const struct kv_req *q, enum kv_end e)
{
	struct placed *p = ctx;

	(void)s, (void)e;
	if (q->id < MAX_REQ)
		p->replica[q->id] = q->replica;
	p->n++;
	return 0;
}

/* Runs yaml (its trace text in slot 1) and records each request's replica; returns holders left. */
static uint64_t run_placed(const char *yaml_fmt, const char *router, const char *trace,
			   uint32_t replicas, const char *engine, struct placed *p)
{
	const char *path = temp_file(trace, ".jsonl", 1);
	char yaml[2048];
	struct kv_workload w;
	struct kv_sim s;
	struct kv_sink sink = { .ctx = p, .request = placed_request };
	uint64_t left = 0;

	snprintf(yaml, sizeof(yaml), yaml_fmt, replicas, router, engine, path);
	memset(p, 0, sizeof(*p));
	load(&w, yaml);
	sim_start(&w, &s, &sink, 0);
	sim_finish(&s);
	if (!strncmp(w.cfg.router->name, "prefix-load", 11))
		left = ((const struct kv_kvindex *)s.router_priv)->holders; /* ix is its first member */
	kv_sim_release(&s);
	kv_workload_release(&w);
	unlink(path);
	return left;
}

#define RUN_YAML \
	"model: llama-2-7b\ndevice: a100-80g\nscheduler: fifo\noutputs: {sample_interval: 0}\n" \
	"cluster: {replicas: %u, router: %s}\n" \
	"engine: %s\ncache: {name: shared}\n" \
	"workload:\n  arrival: {process: trace, trace: %s, format: mooncake}\n"

/*
 * Three replicas, idle and empty at t = 100 s, when Y (ids 1, 2, 3, 4; 2000
 * tokens: 3 lookup blocks) arrives: replica 0 caches nothing of it (X0),
 * replica 1 its first three blocks (X1), replica 2 its first (X2).  The
 * loads are equal (no outstanding tokens), so prefix-load sends Y to
 * replica 1; without the prefix term (prefix_weight 0), and under
 * least-outstanding-tokens, the lowest index wins: replica 0.
 */
static const char equal_trace[] =
	"{\"timestamp\": 0, \"input_length\": 1536, \"output_length\": 4, \"hash_ids\": [7, 8, 9]}\n"
	"{\"timestamp\": 0, \"input_length\": 1536, \"output_length\": 4, \"hash_ids\": [1, 2, 3]}\n"
	"{\"timestamp\": 0, \"input_length\": 1536, \"output_length\": 4, \"hash_ids\": [1, 20, 21]}\n"
	"{\"timestamp\": 100000, \"input_length\": 2000, \"output_length\": 4, \"hash_ids\": [1, 2, 3, 4]}\n";

START_TEST(longest_prefix_at_equal_load)
{
	static const char *const engines[] = { "vllm-v0", "vllm", "sglang" };
	struct placed p;
	unsigned e;

	for (e = 0; e < 3; e++) {
		ck_assert_uint_eq(run_placed(RUN_YAML, "{name: prefix-load, verify: true}", equal_trace, 3,
					     engines[e], &p), 0);
		ck_assert_uint_eq(p.n, 4);
		ck_assert_msg(p.replica[0] == 0 && p.replica[1] == 1 && p.replica[2] == 2,
			      "%s: the first three went to %u %u %u", engines[e], p.replica[0],
			      p.replica[1], p.replica[2]);
		ck_assert_msg(p.replica[3] == 1,
			      "%s: equal loads, the longest cached prefix is on replica 1; went to %u",
			      engines[e], p.replica[3]);
		run_placed(RUN_YAML, "{name: prefix-load, prefix_weight: 0, verify: true}", equal_trace, 3,
			   engines[e], &p);
		ck_assert_uint_eq(p.replica[3], 0);
		run_placed(RUN_YAML, "least-outstanding-tokens", equal_trace, 3, engines[e], &p);
		ck_assert_uint_eq(p.replica[3], 0);
		run_placed(RUN_YAML, "{name: prefix-load, mode: dynamo, verify: true}", equal_trace, 3,
			   engines[e], &p);
		ck_assert_uint_eq(p.replica[3], 1);
		run_placed(RUN_YAML,
			   "{name: prefix-load, mode: llm-d, prefix_weight: 3, queue_weight: 2, verify: true}",
			   equal_trace, 3, engines[e], &p);
		ck_assert_msg(p.replica[0] == 0 && p.replica[1] == 1 && p.replica[2] == 2 &&
				      p.replica[3] == 1,
			      "llm-d mode: %u %u %u %u", p.replica[0], p.replica[1], p.replica[2],
			      p.replica[3]);
	}
}
END_TEST

/*
 * Two replicas.  A (ids 1, 2, 3) runs on replica 0 and leaves its prefix
 * cached; B, a long decode (3000 outputs), lands on replica 0 too (idle
 * replicas, no prefix: the lowest index); C (ids 1, 2, 3: 1024 tokens
 * cached on replica 0) arrives 1 s later.  Replica 0's cost is
 * w (1500 - 1024) + O_0 with O_0 near 3000, replica 1's w 1500: at w = 1
 * replica 1 wins, at w = 8 replica 0.
 */
static const char weight_trace[] =
	"{\"timestamp\": 0, \"input_length\": 1500, \"output_length\": 4, \"hash_ids\": [1, 2, 3]}\n"
	"{\"timestamp\": 10000, \"input_length\": 600, \"output_length\": 3000, \"hash_ids\": [50, 51]}\n"
	"{\"timestamp\": 11000, \"input_length\": 1500, \"output_length\": 4, \"hash_ids\": [1, 2, 3]}\n";

START_TEST(weights_move_the_choice)
{
	struct placed p;

	run_placed(RUN_YAML, "{name: prefix-load, verify: true}", weight_trace, 2, "vllm", &p);
	ck_assert_msg(p.replica[0] == 0 && p.replica[1] == 0, "A, B went to %u, %u", p.replica[0],
		      p.replica[1]);
	ck_assert_msg(p.replica[2] == 1, "prefix_weight 1: C went to %u, expected the idle replica 1",
		      p.replica[2]);
	run_placed(RUN_YAML, "{name: prefix-load, prefix_weight: 8, verify: true}", weight_trace, 2,
		   "vllm", &p);
	ck_assert_msg(p.replica[2] == 0, "prefix_weight 8: C went to %u, expected its prefix's replica 0",
		      p.replica[2]);
	/* a queue term: B queued or running on replica 0 weighs 10^6 tokens */
	run_placed(RUN_YAML, "{name: prefix-load, prefix_weight: 8, queue_weight: 1000000, verify: true}",
		   weight_trace, 2, "vllm", &p);
	ck_assert_uint_eq(p.replica[2], 0); /* B runs: not queued; the prefix still wins */
	run_placed(RUN_YAML, "{name: prefix-load, prefix_weight: 8, kv_weight: 100000000, verify: true}",
		   weight_trace, 2, "vllm", &p);
	ck_assert_msg(p.replica[2] == 1, "kv_weight 1e8: C went to %u, expected the empty replica 1",
		      p.replica[2]);
}
END_TEST

/*
 * Two groups of three replicas serving the same model: arrivals alternate
 * between them (smooth weighted round-robin, equal weights), so X0, X2, Y0
 * go to group 0 (replicas 0-2) and X1, X3, Y1 to group 1 (3-5).  X2 and X3
 * leave ids 1, 2, 3 cached on replicas 1 and 4; at equal loads Y0 takes
 * replica 1 and Y1 replica 4, each within its own group though both
 * replicas hold the prefix; least-outstanding-tokens takes 0 and 3.
 */
static const char group_trace[] =
	"{\"timestamp\": 0, \"input_length\": 1536, \"output_length\": 4, \"hash_ids\": [7, 8, 9]}\n"
	"{\"timestamp\": 0, \"input_length\": 1536, \"output_length\": 4, \"hash_ids\": [7, 8, 9]}\n"
	"{\"timestamp\": 0, \"input_length\": 1536, \"output_length\": 4, \"hash_ids\": [1, 2, 3]}\n"
	"{\"timestamp\": 0, \"input_length\": 1536, \"output_length\": 4, \"hash_ids\": [1, 2, 3]}\n"
	"{\"timestamp\": 100000, \"input_length\": 2000, \"output_length\": 4, \"hash_ids\": [1, 2, 3, 4]}\n"
	"{\"timestamp\": 100000, \"input_length\": 2000, \"output_length\": 4, \"hash_ids\": [1, 2, 3, 4]}\n";

#define GROUP_YAML \
	"model: llama-2-7b\ndevice: a100-80g\nscheduler: fifo\noutputs: {sample_interval: 0}\n" \
	"cluster: {groups: [{replicas: %u}, {replicas: 3}], router: %s}\n" \
	"engine: %s\ncache: {name: shared}\n" \
	"workload:\n  arrival: {process: trace, trace: %s, format: mooncake}\n"

START_TEST(within_the_group)
{
	struct placed p;

	run_placed(GROUP_YAML, "{name: prefix-load, verify: true}", group_trace, 3, "vllm", &p);
	ck_assert_uint_eq(p.n, 6);
	ck_assert_msg(p.replica[0] == 0 && p.replica[1] == 3 && p.replica[2] == 1 && p.replica[3] == 4,
		      "X went to %u %u %u %u", p.replica[0], p.replica[1], p.replica[2], p.replica[3]);
	ck_assert_msg(p.replica[4] == 1 && p.replica[5] == 4, "Y0, Y1 went to %u, %u, expected 1, 4",
		      p.replica[4], p.replica[5]);
	run_placed(GROUP_YAML, "least-outstanding-tokens", group_trace, 3, "vllm", &p);
	ck_assert_msg(p.replica[4] == 0 && p.replica[5] == 3, "lot: Y0, Y1 went to %u, %u",
		      p.replica[4], p.replica[5]);
}
END_TEST

/*
 * The index equals every replica's cache at every arrival (verify aborts
 * otherwise) over the first 600 rows of the Mooncake synthetic trace, on 70
 * replicas (the records form, the engine's tree) and 8 (the bits form),
 * under each engine; after the run's flush it is empty.
 */
START_TEST(index_exact_on_mooncake)
{
	static const char *const engines[] = { "vllm-v0", "vllm", "sglang" };
	const char *dir = getenv("KVSIM_TRACES");
	char path[1024], yaml[2048];
	unsigned e, k;

	if (!dir)
		return;
	snprintf(path, sizeof(path), "%s/mooncake_synthetic_trace.jsonl", dir);
	for (e = 0; e < 3; e++) {
		for (k = 0; k < 2; k++) {
			struct kv_workload w;
			struct kv_sim s;

			snprintf(yaml, sizeof(yaml),
				 "model: llama-2-7b\ndevice: a100-80g\nscheduler: fifo\n"
				 "outputs: {sample_interval: 0}\nmemory: {context_check: warn}\n"
				 "cluster: {replicas: %u, router: {name: prefix-load, verify: true}}\n"
				 "engine: %s\ncache: {name: shared}\n"
				 "workload:\n  requests: 600\n  oversize: reject\n"
				 "  arrival: {process: trace, trace: %s, format: mooncake, time_scale: 0.05}\n",
				 k ? 8u : 70u, engines[e], path);
			load(&w, yaml);
			sim_start(&w, &s, NULL, 0);
			sim_finish(&s);
			ck_assert_uint_eq(((const struct kv_kvindex *)s.router_priv)->holders, 0);
			kv_sim_release(&s);
			kv_workload_release(&w);
		}
	}
}
END_TEST

/*
 * A request's own blocks (cache.request_blocks: keyed by its id) stay out
 * of the index: only that request could match them, and it is routed
 * before any replica holds one.  On 8 replicas (3 prefill, 5 decode) under
 * pressure, with a 1,024-token system prompt, 16-token prefix blocks and a
 * CPU tier, under each engine: the index equals every replica's cache at
 * every arrival (verify aborts otherwise), its table never grows past its
 * first 1,024 slots (the system prompt's 64 keys; the thousands of own
 * blocks the caches publish and evict would grow it), and after the
 * flush it is empty.
 */
START_TEST(own_keys_left_out)
{
	static const char *const engines[] = { "vllm-v0", "vllm", "sglang" };
	char yaml[2048];
	unsigned e;

	for (e = 0; e < 3; e++) {
		struct kv_workload w;
		struct kv_sim s;
		const struct kv_kvindex *x;
		struct kv_cache_stats st = { 0 };

		snprintf(yaml, sizeof(yaml),
			 "model: llama-2-7b\ndevice: a100-80g\nscheduler: fifo\n"
			 "outputs: {sample_interval: 0}\n"
			 "cluster: {replicas: 8, prefill_replicas: 3, router: {name: prefix-load, verify: true}}\n"
			 "engine: %s\n"
			 "cache: {name: shared, system_prompt_tokens: 1024, prefix_block_tokens: 16, request_blocks: true, tier_cpu_bytes: 1GiB}\n"
			 "workload:\n  requests: 400\n"
			 "  arrival: {process: poisson, rate: 40}\n"
			 "  lengths: {dist: uniform, prompt_min: 1000, prompt_max: 3000, output_min: 10, output_max: 300}\n",
			 engines[e]);
		load(&w, yaml);
		sim_start(&w, &s, NULL, 0);
		sim_finish(&s);
		x = s.router_priv; /* ix is its first member */
		ck_assert_uint_eq(x->holders, 0);
		ck_assert_uint_eq(x->mask + 1, 1024);
		s.rep[0].cache->stats(s.rep[0].cache_priv, &st);
		ck_assert_msg(st.evictions > 0, "%s: replica 0 evicted nothing", engines[e]);
		kv_sim_release(&s);
		kv_workload_release(&w);
	}
}
END_TEST

/*
 * The pick over a disaggregated group's prefill range without a scan
 * (router_prefix.c pick_range): on 80 replicas (the engine's trees serve
 * 64 or more), 24 of them prefill, every prompt opening with the same
 * 1,024-token system prompt, so that first no prefill replica holds it
 * (no candidate), then some or all do, at depths that the 16-token own
 * blocks' evictions cut down; with verify on, each arrival's range pick is checked against the
 * scan (abort when they differ), under each engine, macro-stepped, with
 * and without request blocks and a CPU tier, and at prefix blocks of 16
 * and 512 tokens.
 */
START_TEST(range_pick_is_the_scan)
{
	static const char *const engines[] = { "vllm-v0", "vllm", "sglang" };
	static const char *const caches[] = {
		"{name: shared, system_prompt_tokens: 1024, prefix_block_tokens: 16, request_blocks: true, tier_cpu_bytes: 1GiB}",
		"{name: shared, system_prompt_tokens: 1024}",
	};
	char yaml[2048];
	unsigned e, c;

	for (e = 0; e < 3; e++)
		for (c = 0; c < 2; c++) {
			struct kv_workload w;
			struct kv_sim s;

			snprintf(yaml, sizeof(yaml),
				 "model: llama-2-7b\ndevice: a100-80g\nscheduler: fifo\n"
				 "outputs: {sample_interval: 0}\n"
				 "cluster: {replicas: 80, prefill_replicas: 24, router: {name: prefix-load, verify: true}}\n"
				 "engine: %s\ncache: %s\n"
				 "workload:\n  requests: 600\n"
				 "  arrival: {process: poisson, rate: 60}\n"
				 "  lengths: {dist: uniform, prompt_min: 1100, prompt_max: 3000, output_min: 10, output_max: 300}\n",
				 engines[e], caches[c]);
			load(&w, yaml);
			sim_start(&w, &s, NULL, 0);
			sim_finish(&s);
			ck_assert_uint_eq(s.tenant[0].completed, 600);
			kv_sim_release(&s);
			kv_workload_release(&w);
		}
}
END_TEST

int main(void)
{
	Suite *su = suite_create("router");
	TCase *tc = tcase_create("router");
	SRunner *sr;
	int failed;

	tcase_add_test(tc, index_matches_model);
	tcase_add_test(tc, longest_prefix_at_equal_load);
	tcase_add_test(tc, weights_move_the_choice);
	tcase_add_test(tc, within_the_group);
	tcase_add_test(tc, index_exact_on_mooncake);
	tcase_add_test(tc, own_keys_left_out);
	tcase_add_test(tc, range_pick_is_the_scan);
	tcase_set_timeout(tc, 600);
	suite_add_tcase(su, tc);
	sr = srunner_create(su);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? 1 : 0;
}
