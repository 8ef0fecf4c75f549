/*
 * test_cache.c -- the cache models (full, chunked, quantized, sparse):
 * bytes per token against hand-computed values, block layouts through the
 * hooks, capacity of a known pool, memory conservation under load, memory
 * saved against full, dequantisation time, the sparse hit rate against
 * exact sums and its recompute charge, bad options.
 *
 * Llama-2-7B numbers used throughout: 32 layers x 32 KV heads x head_dim
 * 128, so E = 2 * 32 * 32 * 128 = 262144 K/V elements and 2048 head vectors
 * per token; fp16 b = 524288 bytes.  Group-wise quantization adds a 2-byte
 * scale and a 2-byte zero per group of each vector: with group 64 that is
 * 2048 * 2 * 4 = 16384 bytes, so b_q = 262144 + 16384 = 278528 (8 bits),
 * 131072 + 16384 = 147456 (4 bits), 65536 + 16384 = 81920 (2 bits).
 */
#include "output.h"
#include "simtest.h"

#include "testutil.h"

#include <check.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define B16 524288ULL /* Llama-2-7B fp16 KV bytes per token */
#define UNIT (256 * 1024ULL) /* the pool unit the tests pin with memory.min_block */

/* A sink counting how requests ended. */
struct rec {
	uint64_t n;
	uint64_t ended[KV_END_N];
};

static int rec_request(void *ctx, const struct kv_sim *s, const struct kv_req *q, enum kv_end e)
{
	struct rec *r = ctx;

	(void)s;
	(void)q;
	r->n++;
	r->ended[e]++;
	return 0;
}


static void init(struct kv_workload *w, struct kv_sim *s, struct rec *r, int check_pool)
{
	struct kv_sink sink = { .ctx = r, .request = rec_request };
	int rc;

	memset(r, 0, sizeof(*r));
	w->cfg.check_pool = check_pool;
	rc = kv_sim_init(s, &w->cfg, &sink);
	if (rc)
		kv_diag_print(&s->diag, stderr);
	ck_assert_int_eq(rc, 0);
}

static void run(struct kv_workload *w, struct kv_sim *s, struct rec *r, int check_pool)
{
	int rc;

	init(w, s, r, check_pool);
	rc = kv_sim_run(s);
	if (rc)
		kv_diag_print(&s->diag, stderr);
	ck_assert_int_eq(rc, 0);
}

/* Builds a workload text: common head, a cache section, extra sections. */
static const char *text(const char *head, const char *cache, const char *rest)
{
	static char buf[2048];

	snprintf(buf, sizeof(buf), "%scache: %s\n%s", head, cache, rest);
	return buf;
}

#define HEAD7B "model: llama-2-7b\ndevice: a100-80g\nscheduler: fifo\n" \
	       "memory: {min_block: 256KiB}\noutputs: {sample_interval: 0}\n"
#define ONE_REQ "workload: {requests: 1, arrival: {rate: 1}}\n"

/* Bytes attention reads for ctx tokens under replica r's cache model. */
static uint64_t read_bytes(const struct kv_replica *r, uint64_t ctx)
{
	if (r->cache->read_bytes)
		return r->cache->read_bytes(r->cache_priv, ctx);
	return ctx * (uint64_t)r->beta_bytes;
}

/* beta and read_bytes of every model against hand-computed values. */
START_TEST(bytes_per_token)
{
	static const struct {
		const char *head, *cache;
		uint64_t beta, read_100, read_1000;
	} t[] = {
		{ HEAD7B, "full", B16, 100 * B16, 1000 * B16 },
		{ HEAD7B, "chunked", B16, 100 * B16, 1000 * B16 },
		{ HEAD7B, "quantized", 278528, 100 * 278528, 1000 * 278528 },
		{ HEAD7B, "{name: quantized, bits: 8, layout: full}", 278528, 27852800, 278528000 },
		{ HEAD7B, "{name: quantized, bits: 4}", 147456, 14745600, 147456000 },
		{ HEAD7B, "{name: quantized, bits: 4, layout: full}", 147456, 14745600, 147456000 },
		{ HEAD7B, "{name: quantized, bits: 2}", 81920, 8192000, 81920000 },
		{ HEAD7B, "{name: quantized, bits: 2, layout: full}", 81920, 8192000, 81920000 },
		/* 131072 + 2048 vectors * 4 groups * 4 bytes */
		{ HEAD7B, "{name: quantized, bits: 4, group: 32}", 163840, 16384000, 163840000 },
		/* one group per vector: 131072 + 2048 * 4 */
		{ HEAD7B, "{name: quantized, bits: 4, group: 128}", 139264, 13926400, 139264000 },
		/* 100 does not divide 128: ceil(128 / 100) = 2 groups, as with 64 */
		{ HEAD7B, "{name: quantized, bits: 2, group: 100}", 81920, 8192000, 81920000 },
		/* group 1: metadata (2048 * 128 * 4 = 1 MiB) dwarfs the data */
		{ HEAD7B, "{name: quantized, group: 1}", 1310720, 131072000, 1310720000 },
		{ HEAD7B, "{name: sparse, budget: 256}", B16, 100 * B16, 256 * B16 },
		{ HEAD7B, "sparse", B16, 100 * B16, 1000 * B16 },
		/* GQA, TP 4: E = 2 * 80 * 8 * 128 = 163840, 1280 vectors; whole replica */
		{ "model: llama-2-70b\ndevice: a100-80g\ncluster: {tensor_parallel: 4}\n",
		  "{name: quantized, bits: 4}", 81920 + 1280 * 8, 9216000, 92160000 },
		{ "model: llama-2-70b\ndevice: a100-80g\ncluster: {tensor_parallel: 4}\n",
		  "{name: sparse, budget: 512}", 327680, 32768000, 512 * 327680 },
		/* tiny: E = 2 * 4 * 8 * 64 = 4096, 64 vectors; 2 bits, group 32: 1024 + 64 * 2 * 4 */
		{ "model: tiny\ndevice: a100-80g\n", "{name: quantized, bits: 2, group: 32}", 1536,
		  153600, 1536000 },
	};
	size_t i;

	for (i = 0; i < KV_ARRAY_LEN(t); i++) {
		struct kv_workload w;
		struct kv_sim s;
		struct rec r;
		const struct kv_replica *rep;

		load(&w, text(t[i].head, t[i].cache, ONE_REQ));
		init(&w, &s, &r, 0);
		rep = &s.rep[0];
		ck_assert_msg(rep->beta_bytes == (double)t[i].beta, "%s: beta %.0f, expected %llu",
			      t[i].cache, rep->beta_bytes, (unsigned long long)t[i].beta);
		ck_assert_msg(read_bytes(rep, 100) == t[i].read_100 &&
				      read_bytes(rep, 1000) == t[i].read_1000,
			      "%s: read_bytes(100) %llu, (1000) %llu; expected %llu, %llu",
			      t[i].cache, (unsigned long long)read_bytes(rep, 100),
			      (unsigned long long)read_bytes(rep, 1000),
			      (unsigned long long)t[i].read_100, (unsigned long long)t[i].read_1000);
		kv_sim_release(&s);
		kv_workload_release(&w);
	}
}
END_TEST

/* A request as the engine hands it to reserve: zeroed, with its lengths. */
static struct kv_req fake_req(uint64_t prompt, uint64_t output)
{
	struct kv_req q;

	memset(&q, 0, sizeof(q));
	q.prompt_tokens = q.prefill_target = prompt;
	q.output_tokens = output;
	return q;
}

static int reserve(struct kv_replica *r, struct kv_req *q, uint64_t tokens)
{
	return r->cache->reserve(r->cache_priv, q, tokens);
}

static void release(struct kv_replica *r, struct kv_req *q)
{
	r->cache->release(r->cache_priv, q);
	ck_assert_uint_eq(q->kv_bytes, 0);
	ck_assert_uint_eq(q->kv_cap_tokens, 0);
}

/*
 * Sliding-window layers stop reading at the window under the quantized and
 * sparse caches too.  Gemma-2-9B: 42 layers, 21 windowed, W = 4096, b =
 * 344064 (E = 172032, 672 vectors of 256).  4 bits, group 64: data 86016,
 * b_q = 86016 + 672 * 4 * 4 = 96768.  At 8000 tokens: 8000 * 96768 - 3904 *
 * 96768 * 21/42 = 585252864 read, 8000 * 86016 - 3904 * 43008 = 520224768
 * dequantised.  Sparse, budget 6000: 6000 * 344064 - 1904 * 172032 =
 * 1736835072; budget 2000 keeps fewer than the window: 2000 * 344064.
 */
START_TEST(window_reads)
{
	static const struct {
		const char *cache;
		uint64_t ctx, read, dequant;
	} t[] = {
		{ "{name: quantized, bits: 4}", 8000, 585252864ULL, 520224768ULL },
		{ "{name: quantized, bits: 4}", 4096, 4096ULL * 96768, 4096ULL * 86016 },
		{ "{name: sparse, budget: 6000}", 8000, 1736835072ULL, 0 },
		{ "{name: sparse, budget: 6000}", 3000, 3000ULL * 344064, 0 },
		{ "{name: sparse, budget: 2000}", 8000, 2000ULL * 344064, 0 },
	};
	size_t i;

	for (i = 0; i < KV_ARRAY_LEN(t); i++) {
		struct kv_workload w;
		struct kv_sim s;
		struct rec r;
		const struct kv_replica *rep;

		load(&w, text("model: gemma-2-9b\ndevice: a100-80g\nscheduler: fifo\n"
			      "outputs: {sample_interval: 0}\n", t[i].cache, ONE_REQ));
		init(&w, &s, &r, 0);
		rep = &s.rep[0];
		ck_assert_msg(read_bytes(rep, t[i].ctx) == t[i].read, "%s at %llu: read %llu",
			      t[i].cache, (unsigned long long)t[i].ctx,
			      (unsigned long long)read_bytes(rep, t[i].ctx));
		if (t[i].dequant)
			ck_assert_uint_eq(rep->cache->dequant_bytes(rep->cache_priv, t[i].ctx),
					  t[i].dequant);
		kv_sim_release(&s);
		kv_workload_release(&w);
	}
}
END_TEST

/*
 * Chunked cache on a sliding-window model holds, on the windowed layers,
 * only the blocks the next token's window touches (vLLM V1's
 * SlidingWindowManager).  Gemma-2-9B: 42 layers, 21 windowed (every other),
 * W = 4096, 8192 bytes per layer per token, so a 16-token block of either
 * group is G = 16 * 8192 * 21 = 2752512 bytes = 21 units of 128 KiB (the
 * auto unit: 16 tokens x 8192 x gcd(21, 21) = 2^17 * 21).
 *   reserve(1000) from nothing: 63 + 63 blocks = 126 G (as one 42-layer
 *     chain of 63 blocks), cap 1008;
 *   reserve(8000) from nothing (a prompt admitted whole): 500 + 500 blocks;
 *   after the prefill (8000 computed), reserve(8001): skipped 8001 - 4096 =
 *     3905 tokens, blocks 0..243 freed: 501 + (501 - 244) = 758 G, cap
 *     min(8016, 245 * 16 + 4095) = 8015;
 *   8015 computed, reserve(8016): block 244 leaves the window: 501 + 256;
 *   8016 computed, reserve(8017): a new block in both groups: 502 + 257.
 * Each holding covers the exact bytes the context needs
 * (kv_model_kv_bytes), and a run under pressure keeps used <= reserved.
 * Full preallocation: 8192 tokens on the full layers and a ring of 4096 on
 * the windowed ones, (8192 + 4096) * 172032 bytes.
 */
START_TEST(window_held)
{
	static const char *const pressure[] = { "chunked", "{name: chunked, offload: true}",
						"{name: quantized, bits: 8}" };
	const uint64_t G = 2752512;
	unsigned vg = under_valgrind() != 0, n_req = vg ? 16 : 40;
	char load_text[256], head[256];
	size_t k;
	struct kv_workload w;
	struct kv_sim s;
	struct rec r;
	struct kv_replica *rep;
	struct kv_req q = fake_req(1000, 10), p = fake_req(8000, 100);

	load(&w, text("model: gemma-2-9b\ndevice: h200\nscheduler: fifo\n"
		      "outputs: {sample_interval: 0}\n", "chunked", ONE_REQ));
	init(&w, &s, &r, 0);
	rep = &s.rep[0];
	ck_assert_uint_eq(rep->pool.unit_bytes, 128 * 1024);
	ck_assert_int_eq(reserve(rep, &q, 1000), 0);
	ck_assert_uint_eq(q.kv_bytes, 126 * G);
	ck_assert_uint_eq(q.kv_cap_tokens, 1008);
	ck_assert_uint_ge(q.kv_bytes, kv_model_kv_bytes(&w.cfg.model, 1000));
	ck_assert_int_eq(reserve(rep, &p, 8000), 0);
	ck_assert_uint_eq(p.kv_bytes, 1000 * G);
	ck_assert_uint_eq(p.kv_cap_tokens, 8000);
	p.kv_tokens = 8000;
	ck_assert_int_eq(reserve(rep, &p, 8001), 0);
	ck_assert_uint_eq(p.kv_bytes, 758 * G);
	ck_assert_uint_eq(p.kv_cap_tokens, 8015);
	ck_assert_uint_ge(p.kv_bytes, kv_model_kv_bytes(&w.cfg.model, 8001));
	ck_assert_uint_lt(p.kv_bytes, 8001 * 344064ULL); /* less than the whole context */
	p.kv_tokens = 8015;
	ck_assert_int_eq(reserve(rep, &p, 8016), 0);
	ck_assert_uint_eq(p.kv_bytes, 757 * G);
	ck_assert_uint_eq(p.kv_cap_tokens, 8016);
	p.kv_tokens = 8016;
	ck_assert_int_eq(reserve(rep, &p, 8017), 0);
	ck_assert_uint_eq(p.kv_bytes, 759 * G);
	ck_assert_uint_eq(p.kv_cap_tokens, 8031);
	ck_assert_uint_eq(rep->pool.size_bytes - rep->pool.free_bytes, q.kv_bytes + p.kv_bytes);
	ck_assert_int_eq(kv_pool_check(&rep->pool, NULL, 0), 0);
	release(rep, &q);
	release(rep, &p);
	ck_assert_uint_eq(rep->pool.free_bytes, rep->pool.size_bytes);
	kv_sim_release(&s);
	kv_workload_release(&w);

	/* full: the context of 8192 tokens on 21 layers, a ring of 4096 on the other 21 */
	load(&w, text("model: gemma-2-9b\ndevice: h200\nscheduler: fifo\n"
		      "outputs: {sample_interval: 0}\n", "full", ONE_REQ));
	init(&w, &s, &r, 0);
	rep = &s.rep[0];
	q = fake_req(1000, 10);
	ck_assert_int_eq(reserve(rep, &q, 1000), 0);
	ck_assert_uint_eq(q.kv_bytes, (8192 + 4096) * 172032ULL);
	ck_assert_uint_eq(q.kv_bytes, kv_model_kv_bytes(&w.cfg.model, 8192));
	ck_assert_uint_eq(q.kv_cap_tokens, 8192);
	release(rep, &q);
	kv_sim_release(&s);
	kv_workload_release(&w);

	/*
	 * Under pressure, by recompute and with offload (a preempted request's
	 * window-bounded bytes go to the host and back): preemptions, the pool
	 * checked after every event, used <= reserved.  40 requests; under
	 * valgrind, where the pool checks after every event took 2 minutes on a
	 * loaded 2-core machine, 16 in a pool of 20,000 tokens: each of the three
	 * still preempts (asserted), through the same paths.
	 */
	snprintf(head, sizeof(head), "model: gemma-2-9b\ndevice: l40s\nscheduler: fifo\n"
		 "outputs: {sample_interval: 0}\n%s", vg ? "memory: {kv_tokens: 20000}\n" : "");
	snprintf(load_text, sizeof(load_text),
		 "workload:\n  requests: %u\n  arrival: {process: poisson, rate: 100}\n"
		 "  lengths: {dist: uniform, prompt_min: 3000, prompt_max: 7000, output_min: 200, output_max: 1190}\n",
		 n_req);
	for (k = 0; k < KV_ARRAY_LEN(pressure); k++) {
		load(&w, text(head, pressure[k], load_text));
		run(&w, &s, &r, 1);
		ck_assert_uint_eq(r.ended[KV_END_COMPLETED], n_req);
		ck_assert_uint_gt(s.preemptions, 0);
		ck_assert_uint_eq(s.rep[0].pool.free_bytes, s.rep[0].pool.size_bytes);
		ck_assert_uint_eq(s.rep[0].live_win_excess, 0);
		ck_assert_msg(s.rep[0].used_Bs > 0.5 * s.rep[0].reserved_Bs &&
			      s.rep[0].used_Bs <= s.rep[0].reserved_Bs,
			      "%s: used %g, reserved %g byte-seconds", pressure[k], s.rep[0].used_Bs,
			      s.rep[0].reserved_Bs);
		kv_sim_release(&s);
		kv_workload_release(&w);
	}
}
END_TEST

/*
 * The quantized and sparse caches hold only the window on windowed layers
 * too (winblocks.h).  Gemma-2-9B, 42 layers, 21 windowed, W = 4096.
 * quantized, 4 bits: b_q = 96768, 2304 per layer, so a 16-token block of
 * either group is Q = 16 * 2304 * 21 = 774144 bytes; the auto unit is its
 * lowest set bit, 4096, so Q = 189 units exactly.
 *   reserve(8000) from nothing: 500 + 500 = 1000 Q;
 *   8000 computed, reserve(8001): 3905 skipped, 244 windowed blocks freed:
 *     501 + 257 = 758 Q, cap 8015 (as chunked, window_held).
 * Full layout: R = 8192 (the context) on the full layers, a ring of 4096 on
 * the windowed ones: 8192 * 96768 - 4096 * 48384 = 594542592 bytes (145152
 * units), where the whole context was 8192 * 96768 = 792723456.
 * sparse, budget 6000 (G = 2752512, 21 units of 128 KiB, as chunked):
 *   reserve(1000): 63 + 63 blocks = 126 G, cap 1008;
 *   1000 computed, reserve(5000): ceil(5000 / 16) = 313 full blocks, the
 *     windowed group stops at ceil(4096 / 16) = 256: 569 G, cap 5008;
 *   reserve(8000) from nothing: 375 + 256 = 631 G = 1736835072, exactly
 *     what it reads (window_reads), cap UINT64_MAX (at the budget).
 * budget 2000, below the window: 125 + 125 = 250 G.
 */
START_TEST(window_held_quant_sparse)
{
	const uint64_t Q = 774144, G = 2752512;
	static const struct {
		const char *cache;
		uint64_t unit, prompt; /* the pool unit; the request's prompt */
		uint64_t step[2][4]; /* computed, reserve(tokens), held bytes, cap; tokens 0: none */
	} t[] = {
		{ "{name: quantized, bits: 4}", 4096, 8000,
		  { { 0, 8000, 1000 * Q, 8000 }, { 8000, 8001, 758 * Q, 8015 } } },
		{ "{name: quantized, bits: 4, layout: full}", 4096, 1000,
		  { { 0, 1000, 594542592, 8192 } } },
		{ "{name: sparse, budget: 6000}", 128 * 1024, 1000,
		  { { 0, 1000, 126 * G, 1008 }, { 1000, 5000, 569 * G, 5008 } } },
		{ "{name: sparse, budget: 6000}", 128 * 1024, 8000,
		  { { 0, 8000, 631 * G, UINT64_MAX } } },
		{ "{name: sparse, budget: 2000}", 128 * 1024, 8000,
		  { { 0, 8000, 250 * G, UINT64_MAX } } },
	};
	size_t i, k;

	for (i = 0; i < KV_ARRAY_LEN(t); i++) {
		struct kv_workload w;
		struct kv_sim s;
		struct rec r;
		struct kv_replica *rep;
		struct kv_req q = fake_req(t[i].prompt, 100);

		load(&w, text("model: gemma-2-9b\ndevice: h200\nscheduler: fifo\n"
			      "outputs: {sample_interval: 0}\n", t[i].cache, ONE_REQ));
		init(&w, &s, &r, 0);
		rep = &s.rep[0];
		ck_assert_uint_eq(rep->pool.unit_bytes, t[i].unit);
		for (k = 0; k < 2 && t[i].step[k][1]; k++) {
			q.kv_tokens = t[i].step[k][0];
			ck_assert_int_eq(reserve(rep, &q, t[i].step[k][1]), 0);
			ck_assert_msg(q.kv_bytes == t[i].step[k][2] &&
					      q.kv_cap_tokens == t[i].step[k][3],
				      "%s, reserve(%llu): %llu bytes, cap %llu", t[i].cache,
				      (unsigned long long)t[i].step[k][1],
				      (unsigned long long)q.kv_bytes,
				      (unsigned long long)q.kv_cap_tokens);
			ck_assert_uint_ge(q.kv_bytes, read_bytes(rep, t[i].step[k][1]));
			ck_assert_uint_eq(rep->pool.size_bytes - rep->pool.free_bytes, q.kv_bytes);
		}
		release(rep, &q);
		ck_assert_uint_eq(rep->pool.free_bytes, rep->pool.size_bytes);
		kv_sim_release(&s);
		kv_workload_release(&w);
	}
}
END_TEST

/* Chunked layout: whole blocks of 16 tokens, each 16 * b_q bytes = whole units. */
START_TEST(quant_chunked_layout)
{
	static const struct {
		const char *cache;
		uint64_t block_bytes; /* 16 * b_q */
	} t[] = {
		{ "{name: quantized, bits: 8}", 16 * 278528 }, /* 17 units */
		{ "{name: quantized, bits: 4}", 16 * 147456 }, /* 9 units */
		{ "{name: quantized, bits: 2}", 16 * 81920 }, /* 5 units */
	};
	size_t i;

	for (i = 0; i < KV_ARRAY_LEN(t); i++) {
		struct kv_workload w;
		struct kv_sim s;
		struct rec r;
		struct kv_replica *rep;
		struct kv_req q = fake_req(100, 50);
		uint64_t free0;

		load(&w, text(HEAD7B, t[i].cache, ONE_REQ));
		init(&w, &s, &r, 0);
		rep = &s.rep[0];
		free0 = rep->pool.free_bytes;
		ck_assert_uint_eq(t[i].block_bytes % UNIT, 0);
		ck_assert_int_eq(reserve(rep, &q, 1), 0);
		ck_assert_uint_eq(q.kv_bytes, t[i].block_bytes);
		ck_assert_uint_eq(q.kv_cap_tokens, 16);
		ck_assert_int_eq(reserve(rep, &q, 100), 0); /* ceil(100 / 16) = 7 blocks */
		ck_assert_msg(q.kv_bytes == 7 * t[i].block_bytes && q.kv_cap_tokens == 112,
			      "%s: %llu bytes, cap %llu", t[i].cache,
			      (unsigned long long)q.kv_bytes, (unsigned long long)q.kv_cap_tokens);
		ck_assert_uint_eq(free0 - rep->pool.free_bytes, q.kv_bytes);
		release(rep, &q);
		ck_assert_uint_eq(rep->pool.free_bytes, free0);
		kv_sim_release(&s);
		kv_workload_release(&w);
	}
}
END_TEST

/* Full layout: max(max_len, prompt + output) tokens at once, never grows. */
START_TEST(quant_full_layout)
{
	struct kv_workload w;
	struct kv_sim s;
	struct rec r;
	struct kv_replica *rep;
	struct kv_req q = fake_req(10, 10), long_q = fake_req(1000, 24);

	load(&w, text(HEAD7B, "{name: quantized, bits: 4, layout: full}", ONE_REQ));
	init(&w, &s, &r, 0);
	rep = &s.rep[0];
	ck_assert_int_eq(reserve(rep, &q, 11), 0);
	ck_assert_uint_eq(q.kv_bytes, 4096 * 147456ULL); /* the context: 576 MiB */
	ck_assert_uint_eq(q.kv_cap_tokens, 4096);
	ck_assert_int_eq(reserve(rep, &q, 4097), KV_ENOMEM); /* cannot grow */
	ck_assert_uint_eq(q.kv_bytes, 4096 * 147456ULL);
	release(rep, &q);
	kv_sim_release(&s);
	kv_workload_release(&w);

	load(&w, text(HEAD7B, "{name: quantized, bits: 2, layout: full, max_len: 512}", ONE_REQ));
	init(&w, &s, &r, 0);
	rep = &s.rep[0];
	ck_assert_int_eq(reserve(rep, &q, 11), 0);
	ck_assert_uint_eq(q.kv_bytes, 512 * 81920ULL);
	ck_assert_int_eq(reserve(rep, &long_q, 1000), 0); /* its own length beyond max_len */
	ck_assert_uint_eq(long_q.kv_bytes, 1024 * 81920ULL);
	ck_assert_uint_eq(long_q.kv_cap_tokens, 1024);
	release(rep, &q);
	release(rep, &long_q);
	kv_sim_release(&s);
	kv_workload_release(&w);
}
END_TEST

/*
 * Capacity through the hooks: requests of a fixed size whose holding is a
 * whole number m of the pool's largest (8 MiB) blocks fit exactly
 * floor(largest blocks of the pool / m); the one refused holds nothing and
 * leaves the pool as it was.
 */
START_TEST(capacity_hooks)
{
	static const struct {
		const char *cache;
		uint64_t tokens; /* reserved per request */
		uint64_t blocks; /* 8 MiB blocks it holds */
	} t[] = {
		{ "full", 100, 4096 * B16 / (8 * KV_MiB) }, /* 2 GiB: 256 */
		{ "chunked", 512, 32 }, /* 32 blocks of 16 tokens, 8 MiB each */
		{ "{name: quantized, bits: 8, layout: full}", 100, 136 }, /* 4096 * 278528 */
		{ "{name: quantized, bits: 4, layout: full}", 4096, 72 }, /* 576 MiB */
		{ "{name: quantized, bits: 2, layout: full}", 4096, 40 }, /* 320 MiB */
		{ "{name: quantized, bits: 8, block_tokens: 512}", 1000, 2 * 17 }, /* 136 MiB each */
		{ "{name: quantized, bits: 4, block_tokens: 512}", 512, 9 }, /* 72 MiB */
		{ "{name: quantized, bits: 2, block_tokens: 512}", 513, 2 * 5 }, /* 40 MiB each */
		{ "{name: sparse, budget: 256}", 4096, 16 }, /* 16 blocks of 16 tokens */
	};
	size_t i;

	for (i = 0; i < KV_ARRAY_LEN(t); i++) {
		struct kv_workload w;
		struct kv_sim s;
		struct rec r;
		struct kv_replica *rep;
		struct kv_req q[300];
		uint64_t n = 0, k, free_before = 0, max_blocks, want;

		load(&w, text("model: llama-2-7b\ndevice: a100-80g\n"
			      "memory: {share: 0.3, min_block: 256KiB}\n", t[i].cache, ONE_REQ));
		init(&w, &s, &r, 0);
		rep = &s.rep[0];
		ck_assert_uint_eq(kv_pool_block_bytes(&rep->pool, rep->pool.max_order), 8 * KV_MiB);
		max_blocks = rep->pool.n_units >> rep->pool.max_order;
		want = max_blocks / t[i].blocks;
		ck_assert_msg(want >= 2 && want < 300, "%s: %llu fit", t[i].cache,
			      (unsigned long long)want);
		for (;; n++) {
			ck_assert_uint_lt(n, 300);
			q[n] = fake_req(t[i].tokens - 1, 1);
			free_before = rep->pool.free_bytes;
			if (reserve(rep, &q[n], t[i].tokens))
				break;
			ck_assert_msg(q[n].kv_bytes == t[i].blocks * 8 * KV_MiB,
				      "%s: holds %llu bytes", t[i].cache,
				      (unsigned long long)q[n].kv_bytes);
		}
		ck_assert_msg(n == want, "%s: %llu requests fit, expected %llu (%llu max blocks)",
			      t[i].cache, (unsigned long long)n, (unsigned long long)want,
			      (unsigned long long)max_blocks);
		ck_assert_uint_eq(q[n].kv_bytes, 0);
		ck_assert_uint_eq(q[n].kv_cap_tokens, 0);
		ck_assert_uint_eq(rep->pool.free_bytes, free_before);
		ck_assert_int_eq(kv_pool_check(&rep->pool, NULL, 0), 0);
		for (k = 0; k < n; k++)
			release(rep, &q[k]);
		ck_assert_uint_eq(rep->pool.free_bytes, rep->pool.size_bytes);
		kv_sim_release(&s);
		kv_workload_release(&w);
	}
}
END_TEST

/*
 * Capacity in a run: 100 requests of 500 tokens arrive at once; with
 * max_len 512 each holds 512 tokens, an extent of whole 8 MiB blocks (72 MiB
 * at 4 bits, 256 MiB at fp16), so exactly floor(max blocks / 9) (resp. / 32)
 * run at once and the peak of reserved bytes is that many extents.
 */
START_TEST(capacity_run)
{
	static const struct {
		const char *cache;
		uint64_t extent_blocks; /* 8 MiB blocks per request */
	} t[] = {
		{ "{name: quantized, bits: 4, layout: full, max_len: 512}", 9 },
		{ "{name: full, max_len: 512}", 32 },
	};
	uint64_t fit[2];
	size_t i;

	for (i = 0; i < KV_ARRAY_LEN(t); i++) {
		struct kv_workload w;
		struct kv_sim s;
		struct rec r;
		uint64_t max_blocks;

		load(&w, text("model: llama-2-7b\ndevice: a100-80g\nscheduler: fifo\n"
			      "memory: {share: 0.25, min_block: 256KiB}\noutputs: {sample_interval: 0}\n",
			      t[i].cache,
			      "workload:\n  requests: 100\n  arrival: {process: poisson, rate: 1000000}\n"
			      "  lengths: {dist: fixed, prompt: 100, output: 400}\n"));
		run(&w, &s, &r, 0);
		max_blocks = s.rep[0].pool.n_units >> s.rep[0].pool.max_order;
		fit[i] = max_blocks / t[i].extent_blocks;
		ck_assert_msg(fit[i] >= 2 && fit[i] < 100, "%s: %llu fit", t[i].cache,
			      (unsigned long long)fit[i]);
		ck_assert_uint_eq(r.ended[KV_END_COMPLETED], 100);
		ck_assert_uint_eq(s.preemptions, 0);
		ck_assert_msg(s.rep[0].peak_reserved_bytes == fit[i] * t[i].extent_blocks * 8 * KV_MiB,
			      "%s: peak %llu bytes, expected %llu requests of %llu MiB",
			      t[i].cache, (unsigned long long)s.rep[0].peak_reserved_bytes,
			      (unsigned long long)fit[i],
			      (unsigned long long)(t[i].extent_blocks * 8));
		kv_sim_release(&s);
		kv_workload_release(&w);
	}
	ck_assert_msg(fit[0] >= 3 * fit[1], "4-bit fits %llu, fp16 %llu",
		      (unsigned long long)fit[0], (unsigned long long)fit[1]);
}
END_TEST

/*
 * 300 mixed requests under memory pressure, the pool checked after every
 * event: every request ends once and the pool is whole at the end (the
 * engine aborts otherwise).
 */
START_TEST(conservation)
{
	static const char *const caches[] = {
		"full",
		"chunked",
		"{name: quantized, bits: 8}",
		"{name: quantized, bits: 4}",
		"{name: quantized, bits: 2}",
		"{name: quantized, bits: 8, layout: full}",
		"{name: quantized, bits: 4, layout: full}",
		"{name: quantized, bits: 2, layout: full, max_len: 2048}",
		"{name: sparse, budget: 256, recompute_tokens: 4}",
		"sparse",
	};
	size_t i;

	for (i = 0; i < KV_ARRAY_LEN(caches); i++) {
		struct kv_workload w;
		struct kv_sim s;
		struct rec r;

		load(&w, text("model: llama-2-7b\ndevice: a100-80g\nscheduler: fifo\n"
			      "memory: {share: 0.3, min_block: 1MiB}\noutputs: {sample_interval: 0}\n",
			      caches[i],
			      "workload:\n  requests: 300\n  arrival: {process: gamma, rate: 40, cv: 3}\n"
			      "  lengths: {dist: uniform, prompt_min: 1, prompt_max: 1500, output_min: 0, output_max: 500}\n"));
		run(&w, &s, &r, 1);
		ck_assert_msg(r.n == 300 && r.ended[KV_END_COMPLETED] == 300,
			      "%s: %llu ended, %llu completed", caches[i], (unsigned long long)r.n,
			      (unsigned long long)r.ended[KV_END_COMPLETED]);
		ck_assert_uint_eq(s.rep[0].pool.free_bytes, s.rep[0].pool.size_bytes);
		ck_assert_uint_eq(s.rep[0].live_tokens, 0);
		ck_assert_int_eq(kv_pool_check(&s.rep[0].pool, NULL, 0), 0);
		kv_sim_release(&s);
		kv_workload_release(&w);
	}
}
END_TEST

/* Peak reserved bytes of a run of 40 equal requests, 8 at a time. */
static uint64_t peak_of(const char *cache, const char *lengths)
{
	struct kv_workload w;
	struct kv_sim s;
	struct rec r;
	char rest[512];
	uint64_t peak;

	snprintf(rest, sizeof(rest),
		 "batching: {max_seqs: 8}\nworkload:\n  requests: 40\n"
		 "  arrival: {process: poisson, rate: 1000000}\n  lengths: %s\n", lengths);
	load(&w, text(HEAD7B, cache, rest));
	run(&w, &s, &r, 0);
	ck_assert_uint_eq(r.ended[KV_END_COMPLETED], 40);
	ck_assert_uint_eq(s.preemptions, 0);
	peak = s.rep[0].peak_reserved_bytes;
	kv_sim_release(&s);
	kv_workload_release(&w);
	return peak;
}

/*
 * Memory saved on the same workload: 8 requests of 100 + 200 tokens (peak
 * KV 299 tokens, 19 blocks) run in lockstep, so the peak is 8 holdings.
 */
START_TEST(memory_saved)
{
	const char *len = "{dist: fixed, prompt: 100, output: 200}";
	uint64_t full = peak_of("full", len), chunked = peak_of("chunked", len);
	uint64_t qfull = peak_of("{name: quantized, bits: 4, layout: full}", len);
	uint64_t qchunk = peak_of("{name: quantized, bits: 4}", len);
	uint64_t q2 = peak_of("{name: quantized, bits: 2}", len);

	ck_assert_uint_eq(full, 8 * 4096 * B16); /* 16 GiB */
	ck_assert_uint_eq(qfull, 8 * 4096 * 147456ULL);
	ck_assert_uint_eq(chunked, 8 * 19 * 16 * B16);
	ck_assert_uint_eq(qchunk, 8 * 19 * 16 * 147456ULL);
	ck_assert_uint_eq(q2, 8 * 19 * 16 * 81920ULL);
	ck_assert_msg((double)qfull < 0.30 * (double)full, "4-bit full %llu vs full %llu",
		      (unsigned long long)qfull, (unsigned long long)full);
	ck_assert_msg((double)qchunk < 0.30 * (double)chunked, "4-bit chunked %llu vs %llu",
		      (unsigned long long)qchunk, (unsigned long long)chunked);
	ck_assert_msg((double)q2 < 0.16 * (double)chunked, "2-bit %llu vs %llu",
		      (unsigned long long)q2, (unsigned long long)chunked);
}
END_TEST

/* Sparse on long prompts: each request holds at most ceil(256 / 16) = 16 blocks. */
START_TEST(sparse_bounded)
{
	const char *len = "{dist: fixed, prompt: 3000, output: 100}";
	uint64_t chunked = peak_of("chunked", len);
	uint64_t sparse = peak_of("{name: sparse, budget: 256}", len);

	ck_assert_msg(sparse <= 8 * 16 * 16 * B16 && sparse >= 16 * 16 * B16,
		      "sparse peak %llu, expected 1 to 8 holdings of %llu", (unsigned long long)sparse,
		      (unsigned long long)(16 * 16 * B16));
	ck_assert_msg(10 * sparse < chunked, "sparse %llu vs chunked %llu",
		      (unsigned long long)sparse, (unsigned long long)chunked);
}
END_TEST

/* The sparse hooks: growth by blocks up to the budget, then a holding that fits anything. */
START_TEST(sparse_hooks)
{
	struct kv_workload w;
	struct kv_sim s;
	struct rec r;
	struct kv_replica *rep;
	struct kv_req q = fake_req(3000, 100), p = fake_req(240, 10);
	const uint64_t block = 16 * B16;

	load(&w, text(HEAD7B, "{name: sparse, budget: 250}", ONE_REQ));
	init(&w, &s, &r, 0);
	rep = &s.rep[0];
	ck_assert_int_eq(reserve(rep, &q, 100), 0);
	ck_assert_uint_eq(q.kv_bytes, 7 * block);
	ck_assert_uint_eq(q.kv_cap_tokens, 112);
	ck_assert_int_eq(reserve(rep, &q, 2048), 0); /* min(2048, 250): 16 blocks */
	ck_assert_uint_eq(q.kv_bytes, 16 * block);
	ck_assert_uint_eq(q.kv_cap_tokens, UINT64_MAX);
	ck_assert_int_eq(reserve(rep, &p, 240), 0); /* 15 blocks: below the budget */
	ck_assert_uint_eq(p.kv_bytes, 15 * block);
	ck_assert_uint_eq(p.kv_cap_tokens, 240);
	ck_assert_int_eq(reserve(rep, &p, 241), 0); /* 16 blocks cover 250 */
	ck_assert_uint_eq(p.kv_cap_tokens, UINT64_MAX);
	ck_assert_uint_eq(read_bytes(rep, 100), 100 * B16);
	ck_assert_uint_eq(read_bytes(rep, 4000), 250 * B16);
	release(rep, &q);
	release(rep, &p);
	ck_assert_uint_eq(rep->pool.free_bytes, rep->pool.size_bytes);
	kv_sim_release(&s);
	kv_workload_release(&w);
}
END_TEST

/* The cache model's own figures for replica r. */
static struct kv_cache_stats stats_of(const struct kv_replica *r)
{
	struct kv_cache_stats st;

	memset(&st, 0, sizeof(st));
	ck_assert(r->cache->stats != NULL);
	r->cache->stats(r->cache_priv, &st);
	return st;
}

/* The power model's hit rate at context n, by exact sums (see cache_sparse.c). */
static double exact_hit(uint64_t n, uint64_t budget, uint64_t recent, double alpha)
{
	uint64_t heavy = budget - recent, i;
	double hn = 0, hh = 0;

	if (n <= budget)
		return 1.0;
	for (i = 1; i <= n; i++) {
		hn += pow((double)i, -alpha);
		if (i == heavy)
			hh = hn;
	}
	return (hh + (double)recent * (hn - hh) / (double)(n - heavy)) / hn;
}

/* Mean hit rate of a lone request's decode steps (contexts P+1 .. P+T-1), by a run. */
static double run_hit(const char *cache, uint64_t prompt, uint64_t output)
{
	struct kv_workload w;
	struct kv_sim s;
	struct rec r;
	char rest[512];
	double h;

	snprintf(rest, sizeof(rest),
		 "workload:\n  requests: 1\n  arrival: {rate: 1}\n"
		 "  lengths: {dist: fixed, prompt: %llu, output: %llu}\n",
		 (unsigned long long)prompt, (unsigned long long)output);
	load(&w, text(HEAD7B, cache, rest));
	run(&w, &s, &r, 0);
	ck_assert_uint_eq(r.ended[KV_END_COMPLETED], 1);
	h = stats_of(&s.rep[0]).hit_rate;
	kv_sim_release(&s);
	kv_workload_release(&w);
	return h;
}

/* The closed form matches exact sums, across the exact/asymptotic boundary too. */
START_TEST(sparse_hit_rate)
{
	static const struct {
		const char *cache;
		uint64_t budget, recent, prompt, output;
		double alpha;
	} t[] = {
		{ "{name: sparse, budget: 256}", 256, 128, 1000, 50, 1.0 },
		{ "{name: sparse, budget: 256, alpha: 0}", 256, 128, 1000, 50, 0.0 },
		{ "{name: sparse, budget: 256, recent: 32, alpha: 1.5}", 256, 32, 1000, 50, 1.5 },
		{ "{name: sparse, budget: 256, recent: 256}", 256, 256, 600, 20, 1.0 },
		{ "{name: sparse, budget: 8, recent: 4, alpha: 0.7}", 8, 4, 20, 120, 0.7 },
		{ "{name: sparse, budget: 100, alpha: 1.000001}", 100, 50, 3000, 1000, 1.000001 },
		{ "{name: sparse, budget: 1024, alpha: 2.5}", 1024, 512, 3000, 1000, 2.5 },
	};
	size_t i;

	for (i = 0; i < KV_ARRAY_LEN(t); i++) {
		double want = 0, got = run_hit(t[i].cache, t[i].prompt, t[i].output);
		uint64_t n;

		for (n = t[i].prompt + 1; n < t[i].prompt + t[i].output; n++)
			want += exact_hit(n, t[i].budget, t[i].recent, t[i].alpha);
		want /= (double)(t[i].output - 1);
		ck_assert_msg(fabs(got - want) < 1e-9, "%s: hit %.12f, exact %.12f", t[i].cache,
			      got, want);
	}
	/* no drop, no miss; more concentrated attention loses less */
	ck_assert_double_eq(run_hit("{name: sparse, budget: 1024}", 500, 100), 1.0);
	ck_assert_double_eq_tol(run_hit("{name: sparse, budget: 256, alpha: 0}", 1000, 2),
				256.0 / 1001, 1e-12);
	ck_assert(run_hit("{name: sparse, budget: 256, alpha: 2}", 1000, 50) >
		  run_hit("{name: sparse, budget: 256, alpha: 1}", 1000, 50));
}
END_TEST

/*
 * The recompute charge: whole tokens whose running sum follows the
 * expected (1 - hit(n)) * recompute_tokens to within one token, nothing in
 * prefill or inside the budget; the stats report what was charged.
 */
START_TEST(sparse_recompute)
{
	struct kv_workload w;
	struct kv_sim s;
	struct rec r;
	struct kv_replica *rep;
	struct kv_req q = fake_req(1000, 100);
	uint64_t total = 0, n;
	double expect = 0;

	load(&w, text(HEAD7B, "{name: sparse, budget: 256, recompute_tokens: 64}", ONE_REQ));
	init(&w, &s, &r, 0);
	rep = &s.rep[0];
	ck_assert(rep->cache->extra_prefill_tokens != NULL);
	ck_assert_int_eq(reserve(rep, &q, 1000), 0);
	q.kv_tokens = 999; /* in prefill: nothing */
	ck_assert_uint_eq(rep->cache->extra_prefill_tokens(rep->cache_priv, &q), 0);
	for (n = 1001, q.kv_tokens = 1000; n < 1100; n++, q.kv_tokens++) {
		total += rep->cache->extra_prefill_tokens(rep->cache_priv, &q);
		expect += (1 - exact_hit(n, 256, 128, 1.0)) * 64;
		ck_assert_msg((double)total <= expect + 1e-6 && (double)total > expect - 1,
			      "step %llu: charged %llu, expected %.3f", (unsigned long long)n,
			      (unsigned long long)total, expect);
	}
	ck_assert_uint_eq(stats_of(rep).recompute_tokens, total);
	/* release counts the decode steps at contexts 1001 .. 1099 and the 843 tokens dropped */
	release(rep, &q);
	for (n = 1001, expect = 0; n <= 1099; n++)
		expect += exact_hit(n, 256, 128, 1.0) / 99;
	ck_assert_double_eq_tol(stats_of(rep).hit_rate, expect, 1e-9);
	ck_assert_uint_eq(stats_of(rep).bytes_saved, (1099 - 256) * B16);
	ck_assert_int_eq(reserve(rep, &q, 1100), 0); /* the same tokens back: not counted again */
	release(rep, &q);
	ck_assert_double_eq_tol(stats_of(rep).hit_rate, expect, 1e-9);
	kv_sim_release(&s);
	kv_workload_release(&w);

	load(&w, text(HEAD7B, "{name: sparse, budget: 256}", ONE_REQ)); /* no charge by default */
	init(&w, &s, &r, 0);
	rep = &s.rep[0];
	q = fake_req(3000, 10);
	q.kv_tokens = 3000;
	ck_assert_uint_eq(rep->cache->extra_prefill_tokens(rep->cache_priv, &q), 0);
	kv_sim_release(&s);
	kv_workload_release(&w);
}
END_TEST

/* A recompute charge makes a long decode slower; a budget above the lengths costs nothing. */
START_TEST(sparse_recompute_time)
{
	static const char *const caches[] = {
		"{name: sparse, budget: 256}", "{name: sparse, budget: 256, recompute_tokens: 256}",
		"{name: sparse, budget: 4096, recompute_tokens: 256}", "chunked",
	};
	kv_ns e2e[4];
	uint64_t recomputed[4];
	size_t i;

	for (i = 0; i < KV_ARRAY_LEN(caches); i++) {
		struct kv_workload w;
		struct kv_sim s;
		struct rec r;

		load(&w, text(HEAD7B, caches[i],
			      "workload:\n  requests: 1\n  arrival: {rate: 1}\n"
			      "  lengths: {dist: fixed, prompt: 2000, output: 200}\n"));
		run(&w, &s, &r, 0);
		e2e[i] = s.last_finish_ns - s.first_arrival_ns;
		recomputed[i] = s.rep[0].cache->stats ? stats_of(&s.rep[0]).recompute_tokens : 0;
		kv_sim_release(&s);
		kv_workload_release(&w);
	}
	ck_assert_uint_eq(recomputed[0], 0);
	ck_assert_uint_gt(recomputed[1], 100);
	ck_assert_uint_eq(recomputed[2], 0);
	ck_assert_msg(e2e[1] > e2e[0], "recompute %llu ns vs none %llu ns",
		      (unsigned long long)e2e[1], (unsigned long long)e2e[0]);
	ck_assert_msg(e2e[0] < e2e[3], "sparse reads less than chunked: %llu vs %llu ns",
		      (unsigned long long)e2e[0], (unsigned long long)e2e[3]);
}
END_TEST

/*
 * A lone quantized request takes exactly the perf model's time for its
 * shapes, with kv_read_bytes = ctx * b_q and dequant_bytes = ctx * data
 * (4 bits: 131072 data bytes of 147456 per token).
 */
START_TEST(quant_time)
{
	struct kv_workload w;
	struct kv_sim s;
	struct rec r;
	const uint64_t bq = 147456, data = 131072, P = 100, T = 10;
	struct kv_batch_shape b = { .n_seqs = 1, .n_prefill_tokens = P,
				    .attn_pairs = kv_perf_prefill_pairs(0, P),
				    .kv_read_bytes = P * bq, .dequant_bytes = P * data };
	kv_ns want;
	uint64_t i;

	load(&w, text(HEAD7B, "{name: quantized, bits: 4}",
		      "workload:\n  requests: 1\n  arrival: {rate: 1}\n"
		      "  lengths: {dist: fixed, prompt: 100, output: 10}\n"));
	run(&w, &s, &r, 0);
	want = kv_perf_iter_ns(&s.grp[0].perf, &b);
	for (i = 1; i < T; i++) {
		struct kv_batch_shape d = { .n_seqs = 1, .n_decode = 1, .n_sample = 1, .attn_pairs = P + i,
					    .kv_read_bytes = (P + i) * bq,
					    .dequant_bytes = (P + i) * data };

		want += kv_perf_iter_ns(&s.grp[0].perf, &d);
	}
	/* the front end's way in and out (frontend.h), alone: no queue */
	want += s.rep[0].fe.c.request_ns + s.rep[0].fe.c.tokenize_ns * P + s.rep[0].fe.c.hop_ns +
		s.rep[0].fe.out_ns + s.rep[0].fe.extra_ns;
	ck_assert_msg(s.last_finish_ns - s.first_arrival_ns == want, "E2E %llu ns, expected %llu",
		      (unsigned long long)(s.last_finish_ns - s.first_arrival_ns),
		      (unsigned long long)want);
	/* bytes saved: the request held P + T - 1 tokens, each 524288 - 147456 smaller */
	ck_assert_uint_eq(stats_of(&s.rep[0]).bytes_saved, (P + T - 1) * (B16 - bq));
	ck_assert_double_eq(stats_of(&s.rep[0]).hit_rate, 1.0);
	kv_sim_release(&s);
	kv_workload_release(&w);
}
END_TEST

START_TEST(bad_options)
{
	expect_bad(text(HEAD7B, "{name: quantized, bits: 3}", ONE_REQ), 0, "cache.bits",
		   "bad value 3: expected 2, 4 or 8");
	expect_bad(text(HEAD7B, "{name: quantized, bits: 16}", ONE_REQ), 1, "cache.bits", "16");
	expect_bad(text(HEAD7B, "{name: quantized, group: 129}", ONE_REQ), 0, "cache.group",
		   "bad value 129: expected 1 to llama-2-7b's head_dim of 128");
	expect_bad(text(HEAD7B, "{name: quantized, group: 0}", ONE_REQ), 1, "cache.group", "0");
	expect_bad(text(HEAD7B, "{name: quantized, block_tokens: 0}", ONE_REQ), 1,
		   "cache.block_tokens", "0");
	expect_bad(text(HEAD7B, "{name: quantized, block_tokens: 5000}", ONE_REQ), 0,
		   "cache.block_tokens", "bad value 5000");
	expect_bad(text(HEAD7B, "{name: quantized, layout: full, max_len: 5000}", ONE_REQ), 0,
		   "cache.max_len", "bad value 5000");
	expect_bad(text(HEAD7B, "{name: quantized, layout: paged}", ONE_REQ), 1, "cache.layout",
		   "paged");
	expect_bad(text(HEAD7B, "{name: sparse, budget: 99999}", ONE_REQ), 0, "cache.budget",
		   "bad value 99999: expected 1 to llama-2-7b's context of 4096 tokens");
	expect_bad(text(HEAD7B, "{name: sparse, budget: 0}", ONE_REQ), 1, "cache.budget", "0");
	expect_bad(text(HEAD7B, "{name: sparse, budget: 256, recent: 300}", ONE_REQ), 0,
		   "cache.recent", "bad value 300: expected at most the budget of 256 tokens");
	expect_bad(text(HEAD7B, "{name: sparse, block_tokens: 8192}", ONE_REQ), 0,
		   "cache.block_tokens", "bad value 8192");
	expect_bad(text(HEAD7B, "{name: sparse, alpha: -1}", ONE_REQ), 1, "cache.alpha", "-1");
	expect_bad(text(HEAD7B, "{name: sparse, hit_model: zipf}", ONE_REQ), 1, "cache.hit_model",
		   "zipf");
}
END_TEST

static Suite *cache_suite(void)
{
	Suite *s = suite_create("cache");
	TCase *tc = tcase_create("core");

	tcase_add_test(tc, bytes_per_token);
	tcase_add_test(tc, window_reads);
	tcase_add_test(tc, window_held);
	tcase_add_test(tc, window_held_quant_sparse);
	tcase_add_test(tc, quant_chunked_layout);
	tcase_add_test(tc, quant_full_layout);
	tcase_add_test(tc, capacity_hooks);
	tcase_add_test(tc, capacity_run);
	tcase_add_test(tc, conservation);
	tcase_add_test(tc, memory_saved);
	tcase_add_test(tc, sparse_bounded);
	tcase_add_test(tc, sparse_hooks);
	tcase_add_test(tc, sparse_hit_rate);
	tcase_add_test(tc, sparse_recompute);
	tcase_add_test(tc, sparse_recompute_time);
	tcase_add_test(tc, quant_time);
	tcase_add_test(tc, bad_options);
	tcase_set_timeout(tc, 300);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return kv_test_run_suite(cache_suite());
}
