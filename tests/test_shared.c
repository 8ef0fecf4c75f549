/*
 * test_shared.c -- the `shared` cache model (prefix sharing with
 * reference-counted blocks): hits on a shared system prompt, blocks kept
 * while a sharer holds them, eviction under memory pressure, hash-id keys
 * at several block sizes, the real Mooncake trace, bad options.  Every run
 * checks the pool after every event (check_pool) except the long trace run,
 * and the engine's end-of-run leak check runs after the model's flush.
 */
#include "output.h"
#include "simtest.h"
#include "profile_load.h"
#include "testutil.h"
#include "workload.h"

#include <check.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* What a run's sink saw. */
struct rec {
	uint64_t n; /* requests ended */
	uint64_t ended[KV_END_N]; /* by reason */
	uint64_t prompt_tokens; /* of completed requests */
	double ttft_sum_s; /* of completed requests */
	kv_ns ttft[8]; /* of the first requests */
	int (*check)(struct rec *r, const struct kv_sim *s, const struct kv_req *q); /* optional */
	uint64_t checks; /* times check ran */
	uint64_t digest; /* digest_request's, when it is the check */
	char failure[512]; /* the first failed check, "" when none */
};

static int rec_request(void *ctx, const struct kv_sim *s, const struct kv_req *q, enum kv_end e)
{
	struct rec *r = ctx;

	r->n++;
	r->ended[e]++;
	if (e == KV_END_COMPLETED) {
		r->prompt_tokens += q->prompt_tokens;
		r->ttft_sum_s += (double)(q->first_token_ns - q->arrival_ns) * 1e-9;
		if (q->id < 8)
			r->ttft[q->id] = q->first_token_ns - q->arrival_ns;
	}
	if (r->check) {
		r->checks++;
		if (r->check(r, s, q) && !r->failure[0])
			snprintf(r->failure, sizeof(r->failure), "check failed at request %llu",
				 (unsigned long long)q->id);
	}
	return 0;
}


/* Runs w (pool checked after every event when check_pool); r's check, if any, stays set. */
static void run(struct kv_workload *w, struct rec *r, struct kv_sim *s, int check_pool)
{
	struct kv_sink sink = { .ctx = r, .request = rec_request };
	int (*check)(struct rec *, const struct kv_sim *, const struct kv_req *) = r->check;

	memset(r, 0, sizeof(*r));
	r->check = check;
	sim_start(w, s, &sink, check_pool);
	sim_finish(s);
	ck_assert_msg(!r->failure[0], "%s", r->failure);
}

/* The cache model's statistics summed over replicas. */
static struct kv_cache_stats stats(const struct kv_sim *s)
{
	struct kv_cache_stats t = { 0 }, st;
	uint32_t i;

	for (i = 0; i < s->n_rep; i++) {
		memset(&st, 0, sizeof(st));
		ck_assert(s->rep[i].cache->stats != NULL);
		s->rep[i].cache->stats(s->rep[i].cache_priv, &st);
		t.hit_tokens += st.hit_tokens;
		t.self_hit_tokens += st.self_hit_tokens;
		t.lookup_tokens += st.lookup_tokens;
		t.bytes_saved += st.bytes_saved;
		t.evictions += st.evictions;
	}
	t.hit_rate = t.lookup_tokens ? (double)t.hit_tokens / (double)t.lookup_tokens : 0;
	return t;
}

/* Bytes of one prefix block's extent: B tokens rounded up to whole pool units. */
static uint64_t extent_bytes(const struct kv_sim *s, uint64_t tokens)
{
	return kv_div_ceil(tokens * s->grp[0].token_bytes, s->grp[0].pool_unit_bytes) * s->grp[0].pool_unit_bytes;
}

/* Bytes in allocated blocks of replica 0 whose reference count is `refs` (0: any). */
static uint64_t bytes_with_refs(const struct kv_sim *s, unsigned refs)
{
	struct kv_pool *p = &s->rep[0].pool;
	uint64_t bytes = 0;
	uint32_t off;

	kv_pool_map(p); /* the records of blocks never touched are written only now */
	for (off = 0; off < p->n_units; off += 1u << p->u[off].order)
		if (!p->u[off].is_free && (!refs || p->u[off].refs == refs))
			bytes += kv_pool_block_bytes(p, p->u[off].order);
	return bytes;
}

#define LLAMA "model: llama-2-7b\ndevice: a100-80g\nscheduler: fifo\n" \
	      "outputs: {sample_interval: 0}\n"
#define SYSTEM_WORKLOAD "workload:\n  requests: 200\n  arrival: {process: poisson, rate: 4}\n" \
			"  lengths: {dist: uniform, prompt_min: 1100, prompt_max: 3000, output_min: 1, output_max: 64}\n"

/*
 * 200 requests share a 1024-token system prompt: after the first ones donate
 * it, every admission hits its two 512-token blocks, so the hit rate nears
 * 1024 / mean prompt; prefill skipped lowers TTFT below `chunked`'s.
 */
START_TEST(system_prompt)
{
	struct kv_workload w;
	struct kv_sim s;
	struct rec r = { 0 };
	struct kv_cache_stats st;
	double expect, ttft_shared, ttft_chunked;

	load(&w, LLAMA "cache: {name: shared, system_prompt_tokens: 1024}\n" SYSTEM_WORKLOAD);
	run(&w, &r, &s, 1);
	ck_assert_uint_eq(r.ended[KV_END_COMPLETED], 200);
	st = stats(&s);
	expect = 1024.0 * 200 / (double)r.prompt_tokens;
	ck_assert_msg(st.hit_rate <= expect + 1e-12 && st.hit_rate >= 0.9 * expect,
		      "hit rate %.4f, expected about %.4f (%llu of %llu tokens)", st.hit_rate,
		      expect, (unsigned long long)st.hit_tokens,
		      (unsigned long long)st.lookup_tokens);
	ck_assert_uint_eq(st.hit_tokens % 1024, 0);
	ck_assert_uint_eq(st.bytes_saved, st.hit_tokens / 512 * extent_bytes(&s, 512));
	ck_assert_uint_gt(st.bytes_saved, 0);
	ttft_shared = r.ttft_sum_s / 200;
	kv_sim_release(&s);
	kv_workload_release(&w);

	load(&w, LLAMA "cache: chunked\n" SYSTEM_WORKLOAD);
	run(&w, &r, &s, 1);
	ck_assert_uint_eq(r.ended[KV_END_COMPLETED], 200);
	ttft_chunked = r.ttft_sum_s / 200;
	ck_assert_msg(ttft_shared < ttft_chunked, "mean TTFT %.4f s shared, %.4f s chunked",
		      ttft_shared, ttft_chunked);
	kv_sim_release(&s);
	kv_workload_release(&w);
}
END_TEST

/*
 * R0 computes and donates the system prompt; A and B arrive together and
 * share it; A ends first.  At each end the pool must show exactly the
 * shared blocks held once per sharer plus once by the index: A's release
 * must not free what B still reads.
 */
static int check_sharing(struct rec *r, const struct kv_sim *s, const struct kv_req *q)
{
	const struct kv_replica *rep = &s->rep[0];
	uint64_t entry = 2 * extent_bytes(s, 512);
	uint64_t reserved = rep->pool.size_bytes - rep->pool.free_bytes;

	(void)r;
	if (bytes_with_refs(s, 0) != reserved)
		return 1;
	if (q->id == 0 || q->id == 2) { /* nobody else runs: only the cached prefix remains */
		if (rep->n_running != 0 || reserved != entry || bytes_with_refs(s, 1) != entry)
			return 1;
	} else { /* A ended, B runs and holds the prefix: index + B = 2 references */
		const struct kv_req *b = rep->n_running == 1 ? rep->running[0] : NULL;

		if (!b || b->id != 2 || bytes_with_refs(s, 2) != entry || b->kv_bytes != reserved ||
		    bytes_with_refs(s, 3) != 0)
			return 1;
	}
	return 0;
}

START_TEST(shared_blocks_survive_a_sharer)
{
	const char *trace = temp_file("arrived_at,num_prefill_tokens,num_decode_tokens\n"
				      "0,2000,2\n10,2000,2\n10,2000,200\n", ".csv", 1);
	char yaml[1024];
	struct kv_workload w;
	struct kv_sim s;
	struct rec r = { .check = check_sharing };
	struct kv_cache_stats st;

	snprintf(yaml, sizeof(yaml),
		 LLAMA "cache: {name: shared, system_prompt_tokens: 1024}\n"
		       "workload:\n  arrival: {process: trace, trace: %s, format: vidur}\n", trace);
	load(&w, yaml);
	run(&w, &r, &s, 1);
	unlink(trace);
	ck_assert_uint_eq(r.ended[KV_END_COMPLETED], 3);
	ck_assert_uint_eq(r.checks, 3);
	st = stats(&s);
	ck_assert_uint_eq(st.hit_tokens, 2 * 1024);
	ck_assert_uint_eq(st.lookup_tokens, 3 * 2000);
	/* A prefills 976 tokens alone where R0 prefilled 2000 (B shares A's iteration). */
	ck_assert_msg(r.ttft[1] < r.ttft[0], "TTFT %llu ns without a hit, %llu with",
		      (unsigned long long)r.ttft[0], (unsigned long long)r.ttft[1]);
	ck_assert_uint_eq(s.rep[0].pool.free_bytes, s.rep[0].pool.size_bytes);
	kv_sim_release(&s);
	kv_workload_release(&w);
}
END_TEST

/*
 * A Mooncake-format trace of n requests, 1500-token prompts: two hash ids
 * of a prefix group (group 0 for every third request, else one of 40 by a
 * stride), then one id of its own.
 */
static const char *group_trace(int n)
{
	static char text[64 * 1024];
	size_t len = 0;
	int i;

	for (i = 0; i < n; i++) {
		int g = i % 3 == 0 ? 0 : 1 + (i * 7) % 39;

		len += (size_t)snprintf(text + len, sizeof(text) - len,
					"{\"timestamp\": %d, \"input_length\": 1500, \"output_length\": 16, \"hash_ids\": [%d, %d, %d]}\n",
					i * 200, 2 * g, 2 * g + 1, 1000 + i);
		ck_assert_uint_lt(len, sizeof(text));
	}
	return temp_file(text, ".jsonl", 1);
}

static void run_groups(struct kv_workload *w, struct rec *r, struct kv_sim *s,
		       const char *share)
{
	const char *trace = group_trace(300);
	char yaml[1024];

	snprintf(yaml, sizeof(yaml),
		 LLAMA "memory: {share: %s}\ncache: shared\n"
		       "workload:\n  arrival: {process: trace, trace: %s, format: mooncake}\n",
		 share, trace);
	load(w, yaml);
	run(w, r, s, 1);
	unlink(trace);
	ck_assert_uint_eq(r->ended[KV_END_COMPLETED], 300);
}

/*
 * A pool of a few requests and 40 prefixes: cached prefixes must be evicted
 * to admit new requests (the pool refuses allocations, hits fall below an
 * ample pool's), yet every request completes and nothing leaks.
 */
START_TEST(eviction_under_pressure)
{
	struct kv_workload w;
	struct kv_sim s;
	struct rec r = { 0 };
	struct kv_cache_stats big, small;
	uint64_t fails, pool_bytes;

	run_groups(&w, &r, &s, "0.9");
	big = stats(&s);
	ck_assert_uint_eq(s.rep[0].pool.alloc_fail, 0);
	kv_sim_release(&s);
	kv_workload_release(&w);

	run_groups(&w, &r, &s, "0.22");
	small = stats(&s);
	fails = s.rep[0].pool.alloc_fail;
	pool_bytes = s.grp[0].pool_bytes;
	kv_sim_release(&s);
	kv_workload_release(&w);
	ck_assert_msg(fails > 0, "no allocation refused in a %llu-byte pool",
		      (unsigned long long)pool_bytes);
	ck_assert_msg(small.hit_tokens > 0 && small.hit_tokens < big.hit_tokens,
		      "hits %llu tokens in a small pool, %llu in an ample one",
		      (unsigned long long)small.hit_tokens, (unsigned long long)big.hit_tokens);
	/* With ample memory every group after its first request hits 1024 tokens. */
	ck_assert_uint_ge(big.hit_tokens, (300 - 40) * 1024 * 9 / 10);
	/* the statistics report the evictions (summary.csv cache_evictions, the health report) */
	ck_assert_uint_eq(big.evictions, 0);
	ck_assert_msg(small.evictions > 0, "no eviction reported in a %llu-byte pool",
		      (unsigned long long)pool_bytes);
}
END_TEST

/* The same run twice: identical statistics and request outcomes. */
START_TEST(deterministic)
{
	struct kv_workload w;
	struct kv_sim s;
	struct rec r1 = { 0 }, r2 = { 0 };
	struct kv_cache_stats a, b;

	run_groups(&w, &r1, &s, "0.22");
	a = stats(&s);
	kv_sim_release(&s);
	kv_workload_release(&w);
	run_groups(&w, &r2, &s, "0.22");
	b = stats(&s);
	kv_sim_release(&s);
	kv_workload_release(&w);
	ck_assert_uint_eq(a.hit_tokens, b.hit_tokens);
	ck_assert_uint_eq(a.lookup_tokens, b.lookup_tokens);
	ck_assert(memcmp(r1.ttft, r2.ttft, sizeof(r1.ttft)) == 0);
	ck_assert(r1.ttft_sum_s == r2.ttft_sum_s);
}
END_TEST

/*
 * Four Mooncake requests of 1500 prompt tokens (ids of 512 tokens): R1
 * shares R0's first two hash ids, R2 only the first, R3 none in its first
 * block (so its later equal ids must not match: the chain).  Runs them on
 * LLAMA plus config (YAML lines: engine and cache) and checks that all four
 * complete and the cache's hit tokens are want.
 */
static void mooncake_hits(const char *config, uint64_t want)
{
	const char *trace = temp_file(
		"{\"timestamp\": 0, \"input_length\": 1500, \"output_length\": 4, \"hash_ids\": [1, 2, 3]}\n"
		"{\"timestamp\": 100000, \"input_length\": 1500, \"output_length\": 4, \"hash_ids\": [1, 2, 4]}\n"
		"{\"timestamp\": 200000, \"input_length\": 1500, \"output_length\": 4, \"hash_ids\": [1, 5, 6]}\n"
		"{\"timestamp\": 300000, \"input_length\": 1500, \"output_length\": 4, \"hash_ids\": [9, 2, 3]}\n",
		".jsonl", 1);
	char yaml[1024];
	struct kv_workload w;
	struct kv_sim s;
	struct rec r = { 0 };

	snprintf(yaml, sizeof(yaml),
		 LLAMA "%sworkload:\n  arrival: {process: trace, trace: %s, format: mooncake}\n",
		 config, trace);
	load(&w, yaml);
	run(&w, &r, &s, 1);
	unlink(trace);
	ck_assert_uint_eq(r.ended[KV_END_COMPLETED], 4);
	ck_assert_msg(stats(&s).hit_tokens == want, "%s: %llu hit tokens, expected %llu", config,
		      (unsigned long long)stats(&s).hit_tokens, (unsigned long long)want);
	kv_sim_release(&s);
	kv_workload_release(&w);
}

/* Hash-id keys at B = 128, 256, 512, 1024 (the trace of mooncake_hits): expected hit tokens per B. */
static void hashed_blocks(const char *B, uint64_t want)
{
	char config[256];

	snprintf(config, sizeof(config), "cache: {name: shared, prefix_block_tokens: %s}\n", B);
	mooncake_hits(config, want);
}

/*
 * Hash ids of any block size under engine vllm's 16-token blocks
 * (published while running): with H = 512 (Mooncake) R1 matches R0's
 * first two ids, 2 x 32 blocks, R2 one id, 32 blocks: 1536 tokens; with H
 * = 256 the three ids cover 768 tokens: 512 + 256; with H = 24 a block
 * can straddle two ids and matches only if both do: R1 (ids 1, 2 of 1, 2,
 * 3) matches blocks 0-2 (tokens 0-47), R2 (id 1 only) block 0: 48 + 16.
 */
static void engine_hashed(const char *cache, uint64_t want)
{
	char config[256];

	snprintf(config, sizeof(config), "engine: {name: vllm}\ncache: %s\n", cache);
	mooncake_hits(config, want);
}

START_TEST(hash_block_sizes)
{
	engine_hashed("full", 1024 + 512);
	engine_hashed("{name: shared, prefix_block_tokens: 16, hash_block_tokens: 256}", 512 + 256);
	engine_hashed("{name: shared, prefix_block_tokens: 16, hash_block_tokens: 24}", 48 + 16);
}
END_TEST

START_TEST(hash_id_keys)
{
	hashed_blocks("512", 1024 + 512);
	hashed_blocks("256", 1024 + 512);
	hashed_blocks("1024", 1024);
	hashed_blocks("128", 1024 + 512);
}
END_TEST

/*
 * The Mooncake conversation trace on Mistral-7B / H200 (as
 * workloads/mooncake.yaml, one replica so one cache sees every request),
 * tensor-parallel over tp GPUs: every request accounted for, and the prefix
 * hit rate printed against the README's 36.6% of prefix blocks seen before.
 * That is an unbounded cache's figure (38.4% of prompt tokens for contiguous
 * prefixes of complete blocks, by an offline count); a pool holds far less:
 * one H200 about 1,650 blocks (an LRU of that many blocks alone hits 8%),
 * eight about 15,000 (34%).  No per-event pool check: 12k requests.
 */
static void mooncake(uint32_t tp, double lo, double hi)
{
	const char *path = real_trace("conversation_trace.jsonl");
	char yaml[2048];
	struct kv_workload w;
	struct kv_sim s;
	struct rec r = { 0 };
	struct kv_cache_stats st;

	if (!path) {
		printf("mooncake_trace: skipped, KVSIM_TRACES has no conversation_trace.jsonl\n");
		return;
	}
	snprintf(yaml, sizeof(yaml),
		 "model: mistral-7b\ndevice: h200\ncluster: {tensor_parallel: %u}\n"
		 "scheduler: fifo\nbatching: {max_tokens: 8192}\n"
		 "cache: shared\noutputs: {sample_interval: 0}\n"
		 "workload:\n  oversize: reject\n"
		 "  arrival: {process: trace, trace: %s, format: mooncake}\n", tp, path);
	load(&w, yaml);
	run(&w, &r, &s, 0);
	st = stats(&s);
	printf("mooncake_trace: tp %u, pool %.1f GB: %llu requests, %llu completed, %llu rejected (context), %llu rejected (pool), %llu preemptions; prefix hit rate %.1f%% (%llu of %llu prompt tokens; trace README: 36.6%% of prefix blocks seen before)\n",
	       tp, (double)s.grp[0].pool_bytes / 1e9, (unsigned long long)s.arrived,
	       (unsigned long long)r.ended[KV_END_COMPLETED],
	       (unsigned long long)r.ended[KV_END_REJECTED_CONTEXT],
	       (unsigned long long)r.ended[KV_END_REJECTED_POOL],
	       (unsigned long long)s.preemptions, 100 * st.hit_rate,
	       (unsigned long long)st.hit_tokens, (unsigned long long)st.lookup_tokens);
	fflush(stdout);
	ck_assert_uint_eq(s.arrived, 12031);
	ck_assert_uint_eq(r.n, s.arrived);
	ck_assert_uint_eq(r.ended[KV_END_COMPLETED] + r.ended[KV_END_REJECTED_CONTEXT] +
				  r.ended[KV_END_REJECTED_POOL], s.arrived);
	ck_assert_uint_gt(r.ended[KV_END_COMPLETED], 11000);
	ck_assert_msg(st.hit_rate >= lo && st.hit_rate <= hi, "tp %u: hit rate %.3f, expected %.2f..%.2f",
		      tp, st.hit_rate, lo, hi);
	kv_sim_release(&s);
	kv_workload_release(&w);
}

/* One H200: the pool bounds the hit rate well below the trace's reuse. */
START_TEST(mooncake_one_gpu)
{
	mooncake(1, 0.04, 0.20);
}
END_TEST

/*
 * Eight H200s (one Mooncake-sized node): near the trace's reuse.  Not under
 * valgrind: the same 12k requests through the same paths as one GPU, with
 * less eviction (the one-GPU run keeps memcheck on eviction and rejection).
 */
START_TEST(mooncake_eight_gpus)
{
	if (under_valgrind()) {
		printf("mooncake_trace: tp 8 skipped under valgrind (tp 1 runs the same paths)\n");
		return;
	}
	mooncake(8, 0.10, 0.60);
}
END_TEST

/* Options checked at init: the run stops with the option named. */
static void bad_option(const char *cache, const char *field)
{
	char yaml[512];
	struct kv_workload w;
	struct kv_sim s;
	int rc;

	snprintf(yaml, sizeof(yaml),
		 LLAMA "cache: {name: shared, %s}\nworkload: {requests: 10, arrival: {rate: 1}}\n",
		 cache);
	load(&w, yaml);
	rc = kv_sim_init(&s, &w.cfg, NULL);
	ck_assert_msg(rc == KV_EINVAL, "%s: init returned %d", cache, rc);
	ck_assert_msg(!strcmp(s.diag.field, field), "%s: diagnostic names '%s', expected '%s'",
		      cache, s.diag.field, field);
	ck_assert_ptr_nonnull(strstr(s.diag.msg, "expected"));
	kv_sim_release(&s);
	kv_workload_release(&w);
}

START_TEST(bad_options)
{
	bad_option("prefix_block_tokens: 500", "cache.prefix_block_tokens");
	bad_option("block_tokens: 32, prefix_block_tokens: 48", "cache.prefix_block_tokens");
	bad_option("prefix_block_tokens: 8192", "cache.prefix_block_tokens");
	bad_option("system_prompt_tokens: 5000", "cache.system_prompt_tokens");
	bad_option("block_tokens: 8192", "cache.block_tokens");
}
END_TEST

/* A request as the engine hands it to the hooks: zeroed, with its id and lengths. */
static struct kv_req fake_req(uint64_t id, uint64_t prompt, uint64_t output)
{
	struct kv_req q;

	memset(&q, 0, sizeof(q));
	q.id = id;
	q.prompt_tokens = q.prefill_target = prompt;
	q.output_tokens = output;
	return q;
}

/* Reserves through the hook, q having computed `computed` tokens; asserts success. */
static void grow(struct kv_replica *rep, struct kv_req *q, uint64_t computed, uint64_t tokens)
{
	q->kv_tokens = computed;
	ck_assert_int_eq(rep->cache->reserve(rep->cache_priv, q, tokens), 0);
}

static uint64_t pool_used(const struct kv_replica *rep)
{
	return rep->pool.size_bytes - rep->pool.free_bytes;
}

/* splitmix64's finaliser, as cache_shared.c chains keys with it. */
static uint64_t ref_mix(uint64_t z)
{
	z += 0x9e3779b97f4a7c15ULL;
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

/*
 * The system prompt's keys come from a table computed once per cache, its
 * first 4,096 blocks, then from the chain as before: a walk across that
 * border (a 5,000-block system prompt of 1-token blocks on a 128k-context
 * model) gives every key the chain gives, key(i) = mix(key(i-1) ^ mix(i))
 * from the system seed, and the same keys for two requests.
 */
START_TEST(system_keys_table)
{
	struct kv_workload w;
	struct kv_sim s;
	struct kv_replica *rep;
	struct kv_req a = fake_req(1, 6000, 4), b = fake_req(2, 5001, 4);
	uint64_t *ka = malloc(6000 * sizeof(*ka)), *kb = malloc(6000 * sizeof(*kb));
	uint64_t key = 0x73797374656d2d70ULL, B = 0; /* SEED_SYSTEM */
	uint32_t na, nb, i;

	load(&w, "model: llama-3.1-8b\ndevice: h100-80g\nscheduler: fifo\n"
		 "cache: {name: shared, prefix_block_tokens: 1, block_tokens: 1, system_prompt_tokens: 5000}\n"
		 "outputs: {sample_interval: 0}\nworkload: {requests: 1, arrival: {rate: 1}}\n");
	sim_start(&w, &s, NULL, 0);
	rep = &s.rep[0];
	ck_assert(rep->cache->prefix_keys != NULL);
	na = rep->cache->prefix_keys(rep->cache_priv, &a, ka, 6000, &B);
	nb = rep->cache->prefix_keys(rep->cache_priv, &b, kb, 6000, &B);
	ck_assert_uint_eq(B, 1);
	ck_assert_uint_eq(na, 5000); /* the system prompt's blocks; request_blocks is off */
	ck_assert_uint_eq(nb, 5000);
	for (i = 0; i < 5000; i++) {
		key = ref_mix(key ^ ref_mix(i));
		ck_assert_msg(ka[i] == key && kb[i] == key, "block %u: %016llx %016llx, chain %016llx",
			      i, (unsigned long long)ka[i], (unsigned long long)kb[i],
			      (unsigned long long)key);
	}
	free(ka);
	free(kb);
	kv_sim_release(&s);
	kv_workload_release(&w);
}
END_TEST

/*
 * Starts the simulator of window_prefix and window_hit_rule: Gemma-2-9B on
 * an H200 with a 16384-token pool under the shared cache (512-token prefix
 * blocks, a 6144-token system prompt), its sliding window cut to window
 * tokens (0: the model's).  Returns replica 0; the caller releases s and w.
 */
static struct kv_replica *gemma_start(struct kv_workload *w, struct kv_sim *s, uint32_t window)
{
	load(w, "model: gemma-2-9b\ndevice: h200\nscheduler: fifo\nmemory: {kv_tokens: 16384}\n"
		"cache: {name: shared, prefix_block_tokens: 512, block_tokens: 16, system_prompt_tokens: 6144}\n"
		"outputs: {sample_interval: 0}\nworkload: {requests: 1, arrival: {rate: 1}}\n");
	if (window)
		w->cfg.model.sliding_window = window;
	sim_start(w, s, NULL, 0);
	return &s->rep[0];
}

/*
 * Prefix sharing on a sliding-window model, as vLLM V1's hybrid manager
 * does it.  Gemma-2-9B: 42 layers, 21 windowed, W = 4096, 8192 bytes per
 * layer per token; prefix blocks of 512 tokens, own blocks of 16, a
 * 6144-token system prompt (12 prefix blocks).  Each group's own block is
 * G = 16 * 8192 * 21 = 2752512 bytes (21 units of 128 KiB), each group's
 * prefix entry E = 32 G; a hit needs the windowed entries of its last
 * ceil(4095 / 512) = 8 blocks.  The pool holds 16384 tokens: 16384 * 344064
 * bytes = 2048 G.
 *   A (prompt 7000) misses; reserve(7000) from nothing: 438 + 438 blocks =
 *     876 G; 7000 computed, reserve(7001): 7001 - 4096 = 2905 skipped, own
 *     windowed blocks 0..180 freed: 438 + 257 = 695 G, cap min(7008, 182 *
 *     16 + 4095) = 7007.
 *   A releases with 7001 tokens: its 12 keyed blocks go to the index whole,
 *     12 F + 12 W entries = 24 E = 768 G, all evictable; W0..W4, which its
 *     window had left (2906 skipped at the next token), least recently
 *     used, as vLLM freed them first.
 *   B (prompt 7000) hits all 12 blocks: 12 F entries and W4..W11 (the last
 *     8): 20 E = 640 G; W0..W3 stay evictable (4 E).  reserve(7000) at 6144
 *     computed: own blocks from 6144, ceil(856 / 16) = 54 per group, 108
 *     G: 748 G; cap 7000 (W4 leaves at 4 * 512 + 4096 + 512 = 7168 > 7000).
 *     7000 computed, reserve(7001): 2905 skipped, floor(2905 / 512) = 5: W4
 *     is dropped (evictable, 5 E): 716 G, cap 7008 (the next own block;
 *     W5 leaves at reserve(7680)).
 *   D (prompt 100, nothing to share) takes 2 * 645 = 1290 G of own blocks;
 *     the pool has 2048 - 768 - 108 = 1172 G free, so 4 evictions (LRU:
 *     W0, W1, W2, W3; W4 went back last) make room.
 *   C (prompt 7000) still hits all 12 blocks: the full group has F0..F11
 *     and the windowed group W4..W11, its last 8; W0..W3 are gone but the
 *     window would skip them (vLLM's SlidingWindowManager fills them with
 *     its null block).
 */
START_TEST(window_prefix)
{
	const uint64_t G = 2752512, E = 32 * G;
	struct kv_workload w;
	struct kv_sim s;
	struct kv_replica *rep;
	struct kv_cache_stats st;
	struct kv_req a = fake_req(0, 7000, 100), b = fake_req(1, 7000, 100);
	struct kv_req c = fake_req(3, 7000, 100), d = fake_req(2, 100, 100);

	rep = gemma_start(&w, &s, 0);
	ck_assert_uint_eq(rep->pool.unit_bytes, 128 * 1024);
	ck_assert_uint_eq(rep->pool.size_bytes, 2048 * G);
	ck_assert_uint_eq(rep->cache->prefix_hit(rep->cache_priv, &a), 0);
	grow(rep, &a, 0, 7000);
	ck_assert_uint_eq(a.kv_bytes, 876 * G);
	ck_assert_uint_eq(a.kv_cap_tokens, 7000);
	grow(rep, &a, 7000, 7001);
	ck_assert_uint_eq(a.kv_bytes, 695 * G);
	ck_assert_uint_eq(a.kv_cap_tokens, 7007);
	ck_assert_uint_ge(a.kv_bytes, kv_model_kv_bytes(&w.cfg.model, 7001));
	ck_assert_uint_eq(pool_used(rep), a.kv_bytes);
	a.kv_tokens = 7001;
	rep->cache->release(rep->cache_priv, &a);
	ck_assert_uint_eq(pool_used(rep), 24 * E);
	ck_assert_uint_eq(rep->cache->evictable_bytes(rep->cache_priv), 24 * E);

	ck_assert_uint_eq(rep->cache->prefix_hit(rep->cache_priv, &b), 6144);
	ck_assert_uint_eq(b.kv_bytes, 20 * E);
	ck_assert_uint_eq(rep->cache->evictable_bytes(rep->cache_priv), 4 * E);
	grow(rep, &b, 6144, 7000);
	ck_assert_uint_eq(b.kv_bytes, 20 * E + 108 * G);
	ck_assert_uint_eq(b.kv_cap_tokens, 7000);
	grow(rep, &b, 7000, 7001);
	ck_assert_uint_eq(b.kv_bytes, 19 * E + 108 * G);
	ck_assert_uint_eq(b.kv_cap_tokens, 7008);
	ck_assert_uint_eq(rep->cache->evictable_bytes(rep->cache_priv), 5 * E);
	ck_assert_uint_eq(pool_used(rep), 24 * E + 108 * G);

	grow(rep, &d, 0, 645 * 16);
	ck_assert_uint_eq(d.kv_bytes, 1290 * G);
	rep->cache->stats(rep->cache_priv, &st);
	ck_assert_uint_eq(st.evictions, 4);
	ck_assert_uint_eq(rep->cache->evictable_bytes(rep->cache_priv), E); /* W4 */
	rep->cache->release(rep->cache_priv, &d);

	ck_assert_uint_eq(rep->cache->prefix_hit(rep->cache_priv, &c), 6144);
	ck_assert_uint_eq(c.kv_bytes, 20 * E);
	ck_assert_uint_eq(rep->cache->evictable_bytes(rep->cache_priv), 0);
	rep->cache->release(rep->cache_priv, &c);
	b.kv_tokens = 7001;
	rep->cache->release(rep->cache_priv, &b);
	/* cached: F0..F11, W4..W11 and B's own donation of nothing new (its 12 blocks hit) */
	ck_assert_uint_eq(pool_used(rep), 20 * E);
	ck_assert_uint_eq(rep->cache->evictable_bytes(rep->cache_priv), 20 * E);
	ck_assert_int_eq(kv_pool_check(&rep->pool, NULL, 0), 0);
	rep->cache->stats(rep->cache_priv, &st);
	/* two hits counted at their first reserve (B); C released before any */
	ck_assert_uint_eq(st.hit_tokens, 6144);
	ck_assert_uint_eq(st.bytes_saved, 20 * E);
	rep->cache->flush(rep->cache_priv);
	ck_assert_uint_eq(rep->pool.free_bytes, rep->pool.size_bytes);
	kv_sim_release(&s);
	kv_workload_release(&w);
}
END_TEST

/*
 * The hit rule's other cases, with the window cut to W = 1025 so that a hit
 * needs the windowed entries of its last ceil(1024 / 512) = 2 blocks
 * (Gemma-2-9B otherwise as in window_prefix: E = 32 G per group entry, a
 * pool of 2048 G = 64 E, a 6144-token system prompt of 12 blocks).
 *   A (prompt 7000) computes everything and releases at 7001 tokens: F0..F11
 *     and W0..W11 cached (24 E); W0..W10, which its window had left
 *     (floor((7002 - 1025) / 512) = 11), least recently used, then W11,
 *     F11, F10, ..., F0.
 *   C (prompt 6000, 11 keyed blocks) hits 11: F0..F10 and W9, W10.
 *   D (nothing to share) takes 2 * 795 = 1590 G; 64 - 24 = 40 E = 1280 G is
 *     free, so the LRU loses 10 entries, W0..W8 and W11 (9 would leave
 *     1568 G).
 *   B (prompt 7000): the full group runs to block 11 (F11 is still there),
 *     but W11 is gone: scanning back, W10 and W9 are the first run of 2, so
 *     the hit is 11 blocks, 5632 tokens (F0..F10, W9, W10: 13 E).
 *   Q (prompt 3000, 5 keyed blocks): F0..F4 are there, but a hit at 5 or
 *     fewer blocks needs W0 (the window reaches back to block 0) and it is
 *     gone: no hit.
 */
START_TEST(window_hit_rule)
{
	const uint64_t G = 2752512, E = 32 * G;
	struct kv_workload w;
	struct kv_sim s;
	struct kv_replica *rep;
	struct kv_cache_stats st;
	struct kv_req a = fake_req(0, 7000, 100), b = fake_req(1, 7000, 100);
	struct kv_req c = fake_req(3, 6000, 100), d = fake_req(2, 100, 100);
	struct kv_req q = fake_req(4, 3000, 100);

	rep = gemma_start(&w, &s, 1025);
	ck_assert_uint_eq(rep->pool.size_bytes, 64 * E);
	ck_assert_uint_eq(rep->cache->prefix_hit(rep->cache_priv, &a), 0);
	grow(rep, &a, 0, 7000);
	grow(rep, &a, 7000, 7001);
	a.kv_tokens = 7001;
	rep->cache->release(rep->cache_priv, &a);
	ck_assert_uint_eq(pool_used(rep), 24 * E);

	ck_assert_uint_eq(rep->cache->prefix_hit(rep->cache_priv, &c), 11 * 512);
	ck_assert_uint_eq(c.kv_bytes, 13 * E);
	grow(rep, &d, 0, 795 * 16);
	ck_assert_uint_eq(d.kv_bytes, 1590 * G);
	rep->cache->stats(rep->cache_priv, &st);
	ck_assert_uint_eq(st.evictions, 10);
	ck_assert_uint_eq(rep->cache->evictable_bytes(rep->cache_priv), E); /* F11 */

	ck_assert_uint_eq(rep->cache->prefix_hit(rep->cache_priv, &b), 11 * 512);
	ck_assert_uint_eq(b.kv_bytes, 13 * E);
	ck_assert_uint_eq(rep->cache->prefix_hit(rep->cache_priv, &q), 0);
	ck_assert_uint_eq(q.kv_bytes, 0);
	rep->cache->release(rep->cache_priv, &q);
	rep->cache->release(rep->cache_priv, &b);
	rep->cache->release(rep->cache_priv, &c);
	rep->cache->release(rep->cache_priv, &d);
	ck_assert_uint_eq(pool_used(rep), 14 * E); /* F0..F11, W9, W10 */
	ck_assert_int_eq(kv_pool_check(&rep->pool, NULL, 0), 0);
	rep->cache->flush(rep->cache_priv);
	ck_assert_uint_eq(rep->pool.free_bytes, rep->pool.size_bytes);
	kv_sim_release(&s);
	kv_workload_release(&w);
}
END_TEST

/*
 * Engines vllm and sglang publish a running request's complete prompt
 * blocks as they are allocated: eight requests sharing a 64-token system
 * prompt, arriving within a few milliseconds while the first is still
 * running (no request ends before the last arrives), all but the first
 * find its 64 tokens (four 16-token blocks; the 65th token is computed),
 * none of them their own blocks.  Released only at the end, the blocks
 * would give no hit at all.  The pool is checked after every event.
 */
START_TEST(concurrent_hit)
{
	static const char *const engines[] = { "vllm", "sglang" };
	char yaml[1024];
	size_t i;

	for (i = 0; i < KV_ARRAY_LEN(engines); i++) {
		struct kv_workload w;
		struct kv_sim s;
		struct rec r = { 0 };
		struct kv_cache_stats st;

		snprintf(yaml, sizeof(yaml),
			 "model: llama-2-7b\ndevice: a100-80g\nengine: {name: %s}\n"
			 "cache: {name: shared, prefix_block_tokens: 16, block_tokens: 16, system_prompt_tokens: 64}\n"
			 "outputs: {sample_interval: 0}\nworkload:\n  requests: 8\n"
			 "  arrival: {process: poisson, rate: 1000}\n"
			 "  lengths: {dist: uniform, prompt_min: 65, prompt_max: 65, output_min: 200, output_max: 200}\n",
			 engines[i]);
		load(&w, yaml);
		run(&w, &r, &s, 1);
		st = stats(&s);
		ck_assert_uint_eq(r.ended[KV_END_COMPLETED], 8);
		ck_assert_msg(st.hit_tokens == 7 * 64 && st.self_hit_tokens == 0,
			      "%s: %llu hit tokens (%llu self), expected 448 (0)", engines[i],
			      (unsigned long long)st.hit_tokens, (unsigned long long)st.self_hit_tokens);
		kv_sim_release(&s);
		kv_workload_release(&w);
	}
}
END_TEST

/*
 * Requests of the longer runs: n, or small under valgrind, where those runs
 * (one checks the pool after every event) take most of memcheck's time.  The
 * smaller runs take the same paths: the tests still assert preemption.
 */
static uint32_t n_requests(uint32_t n, uint32_t small)
{
	return under_valgrind() ? small : n;
}

/*
 * Under pressure on the windowed model (Gemma-2-9B on an L40S, engine vllm,
 * 16-token prefix blocks, request_blocks on, the pool checked after every
 * event), with a 2048-token system prompt every request shares and
 * without: every request completes, preemptions happen, hits are found, the
 * pool is whole after the flush, and without sharing (a shared block counts
 * once per sharer in "used") the reserved byte-seconds cover the used ones.
 */
START_TEST(window_pressure)
{
	static const uint64_t sys[] = { 2048, 0 };
	uint32_t n = n_requests(40, 20);
	char yaml[1024];
	size_t i;

	for (i = 0; i < KV_ARRAY_LEN(sys); i++) {
		struct kv_workload w;
		struct kv_sim s;
		struct rec r = { 0 };
		struct kv_cache_stats st;

		snprintf(yaml, sizeof(yaml),
			 "model: gemma-2-9b\ndevice: l40s\nengine: {name: vllm, prefix_caching: true}\n"
			 "cache: {name: shared, prefix_block_tokens: 16, request_blocks: true, system_prompt_tokens: %llu}\n"
			 "outputs: {sample_interval: 0}\nworkload:\n  requests: %u\n"
			 "  arrival: {process: poisson, rate: 100}\n"
			 "  lengths: {dist: uniform, prompt_min: 3000, prompt_max: 7000, output_min: 200, output_max: 1190}\n",
			 (unsigned long long)sys[i], n);
		load(&w, yaml);
		run(&w, &r, &s, 1);
		st = stats(&s);
		ck_assert_uint_eq(r.ended[KV_END_COMPLETED], n);
		ck_assert_uint_gt(s.preemptions, 0);
		ck_assert_uint_gt(st.hit_tokens, sys[i] ? (n - 1) * sys[i] / 2 : 0);
		ck_assert_uint_eq(s.rep[0].pool.free_bytes, s.rep[0].pool.size_bytes);
		ck_assert_uint_eq(s.rep[0].live_win_excess, 0);
		if (!sys[i])
			ck_assert_msg(s.rep[0].used_Bs <= s.rep[0].reserved_Bs,
				      "used %g, reserved %g byte-seconds", s.rep[0].used_Bs,
				      s.rep[0].reserved_Bs);
		kv_sim_release(&s);
		kv_workload_release(&w);
	}
}
END_TEST

/*
 * A request's own blocks (request_blocks) under overload with a CPU tier,
 * 1 prefill and 1 decode replica (vllm-v0: donated at release).  A request
 * released for good (it ended, or its KV went to the decode replica) leaves
 * its own blocks unindexed; one preempted keeps them findable, so resumed
 * requests hit them (self hits), in the pool or loaded back from the tier;
 * every own block still goes down to the tier when evicted.  In a debug
 * build, every lookup and release that skips a probe asserts that the key is
 * in no index.
 */
START_TEST(leaving_own_blocks)
{
	uint32_t n = n_requests(120, 40);
	struct kv_workload w;
	struct kv_sim s;
	struct rec r = { 0 };
	struct kv_cache_stats st;
	char yaml[1024];
	uint64_t loaded = 0;
	uint32_t i;

	snprintf(yaml, sizeof(yaml),
		 "model: llama-2-7b\ndevice: l40s\nengine: vllm-v0\nscheduler: fifo\n"
		 "cluster: {replicas: 2, prefill_replicas: 1}\n"
		 "cache: {name: shared, prefix_block_tokens: 16, request_blocks: true,"
		 " system_prompt_tokens: 512, tier_cpu_bytes: 4GiB}\n"
		 "outputs: {sample_interval: 0}\nworkload:\n  requests: %u\n"
		 "  arrival: {process: poisson, rate: 50}\n"
		 "  lengths: {dist: uniform, prompt_min: 1000, prompt_max: 3000, output_min: 200, output_max: 1000}\n",
		 n);
	load(&w, yaml);
	run(&w, &r, &s, 1);
	st = stats(&s);
	ck_assert_uint_eq(r.ended[KV_END_COMPLETED], n);
	ck_assert_uint_gt(s.preemptions, 0);
	/* preempted requests found their own blocks: more than the system prompt's 512 tokens,
	   which only its first request computed, could give at its admissions */
	ck_assert_uint_gt(st.self_hit_tokens, 512 * (1 + s.preemptions));
	ck_assert_uint_gt(st.evictions, 0);
	for (i = 0; i < s.n_rep; i++) {
		memset(&st, 0, sizeof(st));
		s.rep[i].cache->stats(s.rep[i].cache_priv, &st);
		ck_assert_ptr_nonnull(st.tiers);
		/* more blocks went down than the system prompt's 32: own blocks, leaving or not */
		ck_assert_uint_gt(st.tiers->gpu_out_bytes, 32 * extent_bytes(&s, 16));
		loaded += st.tier_hit_tokens[0];
		ck_assert_uint_eq(s.rep[i].pool.free_bytes, s.rep[i].pool.size_bytes);
	}
	ck_assert_uint_gt(loaded, 0); /* and loaded blocks back from the tier */
	kv_sim_release(&s);
	kv_workload_release(&w);
}
END_TEST

/* Every request's end as the sink saw it: id, reason, first token, end, preemptions. */
static int digest_request(struct rec *r, const struct kv_sim *s, const struct kv_req *q)
{
	uint64_t f[5] = { q->id, (uint64_t)q->state, (uint64_t)q->first_token_ns,
			  (uint64_t)s->now, q->preemptions };
	uint32_t i;

	for (i = 0; i < 5; i++)
		r->digest = (r->digest ^ f[i]) * 0x100000001b3ULL; /* FNV-1a over words */
	return 0;
}

/*
 * A leaving request's blocks donated in place (in_place, the default: every
 * pool block is one max-order block for llama-2-7b's 16-token blocks) give
 * exactly what freeing its table and allocating the donations again gives
 * (and reserves that take their blocks at once, what block-by-block growth gives):
 * every request's end, times and preemptions, the cache's hits, self hits,
 * evictions and the bytes down the tiers.  Overloaded 1 prefill + 1 decode
 * replicas with a CPU tier under vllm-v0 (donated at release), vllm with
 * publishing when allocated and sglang (whose requests index their own
 * blocks as they run, so nothing is kept in place); and vllm-v0 without
 * disaggregation.
 * The in-place path ran (kept_blocks) where runs form, and never with
 * in_place: false.
 */
START_TEST(in_place_same_outputs)
{
	static const char *const variants[] = {
		"engine: vllm-v0\ncluster: {replicas: 2, prefill_replicas: 1}\ncache: {",
		"engine: vllm\ncluster: {replicas: 2, prefill_replicas: 1}\ncache: {publish: 1, ",
		"engine: sglang\ncluster: {replicas: 2, prefill_replicas: 1}\ncache: {",
		"engine: vllm-v0\ncluster: {replicas: 2}\ncache: {",
	};
	/* publishing when allocated (vllm's, sglang's radix tree) indexes a request's own blocks
	   while it runs: no run, nothing in place */
	static const int runs[] = { 1, 0, 0, 1 };
	uint32_t n = n_requests(120, 40), v;
	uint64_t evictions = 0;

	for (v = 0; v < sizeof(variants) / sizeof(variants[0]); v++) {
		struct rec r[2];
		struct kv_cache_stats st[2];
		uint64_t down[2] = { 0, 0 }, kept[2] = { 0, 0 };
		int in_place;

		for (in_place = 0; in_place <= 1; in_place++) {
			struct kv_workload w;
			struct kv_sim s;
			char yaml[1024];
			uint32_t i;

			snprintf(yaml, sizeof(yaml),
				 "model: llama-2-7b\ndevice: l40s\nscheduler: fifo\n%s"
				 "name: shared, prefix_block_tokens: 16, request_blocks: true,"
				 " system_prompt_tokens: 512, tier_cpu_bytes: 4GiB, in_place: %s}\n"
				 "outputs: {sample_interval: 0}\nworkload:\n  requests: %u\n"
				 "  arrival: {process: poisson, rate: 50}\n"
				 "  lengths: {dist: uniform, prompt_min: 1000, prompt_max: 3000, output_min: 200, output_max: 1000}\n",
				 variants[v], in_place ? "true" : "false", n);
			load(&w, yaml);
			r[in_place].check = digest_request;
			run(&w, &r[in_place], &s, 1);
			st[in_place] = stats(&s);
			for (i = 0; i < s.n_rep; i++) {
				struct kv_cache_stats one = { 0 };

				s.rep[i].cache->stats(s.rep[i].cache_priv, &one);
				down[in_place] += one.tiers->gpu_out_bytes;
				kept[in_place] += one.kept_blocks;
			}
			ck_assert_uint_eq(r[in_place].ended[KV_END_COMPLETED], n);
			kv_sim_release(&s);
			kv_workload_release(&w);
		}
		ck_assert_msg(r[0].digest == r[1].digest, "variant %u: requests differ in place", v);
		ck_assert_uint_eq(r[0].n, r[1].n);
		ck_assert_uint_eq(st[0].hit_tokens, st[1].hit_tokens);
		ck_assert_uint_eq(st[0].self_hit_tokens, st[1].self_hit_tokens);
		ck_assert_uint_eq(st[0].evictions, st[1].evictions);
		if (!under_valgrind()) /* 40 requests may not fill every variant's pool */
			ck_assert_msg(st[1].evictions > 0, "variant %u: no evictions", v);
		evictions += st[1].evictions;
		ck_assert_uint_eq(down[0], down[1]);
		ck_assert_uint_eq(kept[0], 0);
		ck_assert_msg((kept[1] > 0) == runs[v], "variant %u: %llu blocks kept in place", v,
			      (unsigned long long)kept[1]);
	}
	ck_assert_uint_gt(evictions, 0);
}
END_TEST

/* A shared cache's KV events, in order: what entered (held 1) and left (0). */
struct events {
	uint64_t key[256];
	int held[256];
	uint32_t n;
};

static void on_block(void *ctx, uint32_t replica, uint64_t key, int held)
{
	struct events *ev = ctx;

	(void)replica;
	ck_assert_uint_lt(ev->n, 256);
	ev->key[ev->n] = key;
	ev->held[ev->n++] = held & 1;
}

/*
 * The order in which a released request's own blocks (request_blocks, no
 * system prompt: every block its own) leave the pool under pressure:
 * deepest first, whether the request is released for good (its blocks one
 * LRU node and records of the run ring) or preempted (one indexed entry per
 * block).  On a pool of 48 blocks (llama-2-7b, 16-token blocks), request A
 * computes 320 tokens and is released: its 20 blocks enter; request B then
 * reserves 33 blocks, which evicts 5 of A's: blocks 19, 18, 17, 16 and 15,
 * as the KV events say.
 */
START_TEST(run_eviction_order)
{
	int leaving;

	for (leaving = 0; leaving <= 1; leaving++) {
		struct kv_workload w;
		struct kv_sim s, shadow;
		struct kv_pool pool;
		struct events ev = { .n = 0 };
		struct kv_req a, b;
		struct kv_diag d;
		const struct kv_cache_ops *ops;
		void *priv, *state;
		uint32_t i;

		load(&w, "model: llama-2-7b\ndevice: a100-80g\nengine: vllm-v0\nscheduler: fifo\n"
			 "cache: {name: shared, prefix_block_tokens: 16, request_blocks: true}\n"
			 "outputs: {sample_interval: 0}\nworkload:\n  requests: 1\n"
			 "  lengths: {dist: uniform, prompt_min: 100, prompt_max: 100, output_min: 1, output_max: 1}\n");
		sim_start(&w, &s, NULL, 0);
		ops = s.rep[0].cache;
		shadow = s; /* the two requests' own per-request state */
		state = kv_xcalloc(KV_SLOT_PAGE, shadow.req_state[KV_PLUGIN_CACHE].size);
		shadow.req_state[KV_PLUGIN_CACHE].pages = (unsigned char **)&state;
		ck_assert_int_eq(kv_pool_init(&pool, 48 * s.grp[0].pool_unit_bytes, s.grp[0].pool_unit_bytes,
					      w.cfg.pool_max_block_bytes), 0);
		ck_assert_uint_eq(16 * s.grp[0].token_bytes, s.grp[0].pool_unit_bytes); /* a block is a unit */
		priv = kv_xcalloc(1, ops->priv_size);
		memcpy(priv, s.rep[0].cache_opts_own ? s.rep[0].cache_opts_own : w.cfg.cache_opts, ops->priv_size);
		{
			struct kv_cache_env env = { .pool = &pool, .model = &w.cfg.model, .device = &w.cfg.device,
						    .tp = 1, .token_bytes = s.grp[0].token_bytes, .sim = &shadow,
						    .on_block = on_block, .block_ctx = &ev };

			ck_assert_int_eq(ops->init(priv, &env, &d), 0);
		}
		memset(&a, 0, sizeof(a));
		a.id = 1;
		a.slot = 0;
		a.prompt_tokens = a.prefill_target = 321; /* 20 prefix blocks looked up: (321 - 1) / 16 */
		a.output_tokens = 1;
		a.hash_page = KV_NIL;
		b = a;
		b.id = 2;
		b.slot = 1;
		b.prompt_tokens = b.prefill_target = 33 * 16;
		ck_assert_uint_eq(ops->prefix_hit(priv, &a), 0);
		ck_assert_int_eq(ops->reserve(priv, &a, 321), 0);
		a.kv_tokens = 321; /* computed */
		a.leaving = (uint32_t)leaving;
		ops->release(priv, &a);
		ck_assert_uint_eq(ev.n, 20);
		ck_assert_uint_eq(pool.free_bytes, 28 * s.grp[0].pool_unit_bytes);
		ck_assert_uint_eq(ops->prefix_hit(priv, &b), 0);
		ck_assert_int_eq(ops->reserve(priv, &b, 33 * 16), 0);
		ck_assert_uint_eq(ev.n, 25);
		for (i = 0; i < 5; i++) {
			ck_assert_int_eq(ev.held[20 + i], 0);
			ck_assert_msg(ev.key[20 + i] == ev.key[19 - i] && ev.held[19 - i],
				      "leaving %d: eviction %u took the block entered %u-th", leaving, i,
				      19 - i);
		}
		b.kv_tokens = 0;
		ops->release(priv, &b);
		ops->flush(priv);
		ck_assert_uint_eq(pool.free_bytes, pool.size_bytes);
		ck_assert_uint_eq(ev.n, 40); /* the flush: A's 15 blocks left */
		ops->fini(priv);
		free(priv);
		free(state);
		kv_pool_release(&pool);
		kv_sim_release(&s);
		kv_workload_release(&w);
	}
}
END_TEST

/*
 * With a window as long as any context (8191 tokens, requests of at most
 * 8000), nothing ever leaves it: splitting the layers into two groups must
 * change nothing but the entry count.  Engine vllm's prefix cache under
 * overload (preemptions, resumed requests hitting their own blocks): the
 * same completions, preemptions, hits and TTFTs as Gemma-2-9B without its
 * window, and exactly twice the evictions (a block is two entries).
 */
START_TEST(window_never_leaves)
{
	static const uint32_t window[] = { 0, 8191 };
	struct kv_cache_stats st[2];
	struct rec r[2];
	kv_ns end[2];
	uint64_t preempt[2];
	uint32_t n = n_requests(300, 100);
	char yaml[1024];
	size_t i;

	snprintf(yaml, sizeof(yaml),
		 "model: gemma-2-9b\ndevice: l40s\nengine: {name: vllm, prefix_caching: true}\n"
		 "outputs: {sample_interval: 0}\nworkload:\n  requests: %u\n"
		 "  arrival: {process: poisson, rate: 20}\n"
		 "  lengths: {dist: uniform, prompt_min: 2000, prompt_max: 7000, output_min: 100, output_max: 1000}\n",
		 n);
	for (i = 0; i < 2; i++) {
		struct kv_workload w;
		struct kv_sim s;

		load(&w, yaml);
		w.cfg.model.sliding_window = window[i];
		memset(&r[i], 0, sizeof(r[i]));
		run(&w, &r[i], &s, 0);
		st[i] = stats(&s);
		end[i] = s.now;
		preempt[i] = s.preemptions;
		kv_sim_release(&s);
		kv_workload_release(&w);
	}
	ck_assert_uint_eq(r[1].ended[KV_END_COMPLETED], n);
	ck_assert_uint_gt(preempt[0], 0);
	ck_assert_uint_gt(st[0].hit_tokens, 0);
	ck_assert_msg(preempt[1] == preempt[0] && end[1] == end[0] &&
			      st[1].hit_tokens == st[0].hit_tokens &&
			      st[1].lookup_tokens == st[0].lookup_tokens &&
			      r[1].ttft_sum_s == r[0].ttft_sum_s,
		      "window 8191: %llu preemptions, end %llu ns, %llu hit tokens; without: %llu, %llu, %llu",
		      (unsigned long long)preempt[1], (unsigned long long)end[1],
		      (unsigned long long)st[1].hit_tokens, (unsigned long long)preempt[0],
		      (unsigned long long)end[0], (unsigned long long)st[0].hit_tokens);
	ck_assert_uint_eq(st[1].evictions, 2 * st[0].evictions);
}
END_TEST

static Suite *shared_suite(void)
{
	Suite *s = suite_create("shared");
	TCase *tc = tcase_create("core");

	tcase_add_test(tc, system_prompt);
	tcase_add_test(tc, system_keys_table);
	tcase_add_test(tc, shared_blocks_survive_a_sharer);
	tcase_add_test(tc, eviction_under_pressure);
	tcase_add_test(tc, deterministic);
	tcase_add_test(tc, hash_id_keys);
	tcase_add_test(tc, mooncake_one_gpu);
	tcase_add_test(tc, mooncake_eight_gpus);
	tcase_add_test(tc, bad_options);
	tcase_add_test(tc, window_prefix);
	tcase_add_test(tc, window_hit_rule);
	tcase_add_test(tc, concurrent_hit);
	tcase_add_test(tc, hash_block_sizes);
	tcase_add_test(tc, window_pressure);
	tcase_add_test(tc, window_never_leaves);
	tcase_add_test(tc, leaving_own_blocks);
	tcase_add_test(tc, in_place_same_outputs);
	tcase_add_test(tc, run_eviction_order);
	tcase_set_timeout(tc, 600);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return kv_test_run_suite(shared_suite());
}
