/*
 * test_pool.c -- the buddy allocator: split and merge, exhaustion,
 * fragmentation, non-power-of-two regions, the block cap, reference counts,
 * misuse aborts, the local asserts (debug builds), the integrity check
 * itself, and a random-operation
 * property test against a shadow map of owned units.
 */
#include "testutil.h"

#include <check.h>
#include <math.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>

#include "pool.h"

#define UNIT 256 /* unit (min block) bytes in most tests */

/* Asserts kv_pool_check passes; `when` says where, printed with the failure. */
static void pool_ok(const struct kv_pool *p, const char *when)
{
	char msg[256] = "";
	int err = kv_pool_check(p, msg, sizeof(msg));

	EXPECT(err == 0, "%s: kv_pool_check: %s (free_bytes %llu of %llu)", when, msg,
	       (unsigned long long)p->free_bytes, (unsigned long long)p->size_bytes);
}

/* Asserts n_free_blocks[k] == want[k] for every order. */
static void free_blocks_are(const struct kv_pool *p, const uint64_t *want, const char *when)
{
	unsigned k;

	for (k = 0; k <= KV_POOL_MAX_ORDER; k++)
		EXPECT(p->n_free_blocks[k] == want[k],
		       "%s: order %u has %llu free blocks, expected %llu", when, k,
		       (unsigned long long)p->n_free_blocks[k], (unsigned long long)want[k]);
}

/* Allocates and asserts success; returns the offset. */
static uint32_t alloc_ok(struct kv_pool *p, unsigned order)
{
	uint32_t off = UINT32_MAX;
	int err = kv_pool_alloc(p, order, &off);

	EXPECT(err == 0, "alloc of order %u: %s (free_bytes %llu, largest %llu)", order,
	       kv_strerror(err), (unsigned long long)p->free_bytes,
	       (unsigned long long)kv_pool_largest_free(p));
	return off;
}

/* A fresh pool of 64 units with one block of the given order allocated; returns its offset. */
static uint32_t pool64_with(struct kv_pool *p, unsigned order)
{
	ck_assert_int_eq(kv_pool_init(p, 64 * UNIT, UNIT, 0), 0);
	return alloc_ok(p, order);
}

START_TEST(test_init_errors)
{
	struct kv_pool p;

	ck_assert_int_eq(kv_pool_init(&p, 4096, 0, 0), KV_EINVAL);
	ck_assert_int_eq(kv_pool_init(&p, 4096, 24, 0), KV_EINVAL);
	ck_assert_int_eq(kv_pool_init(&p, 4096, 16, 48), KV_EINVAL);
	ck_assert_int_eq(kv_pool_init(&p, 4096, 32, 16), KV_EINVAL);
	ck_assert_int_eq(kv_pool_init(&p, 15, 16, 0), KV_EINVAL);
	ck_assert_int_eq(kv_pool_init(&p, 1ULL << 31, 1, 0), KV_ERANGE);
	kv_pool_release(&p); /* a no-op after a failed init */
	ck_assert_int_eq(kv_pool_init(&p, 16, 16, 0), 0);
	ck_assert_uint_eq(p.n_units, 1);
	ck_assert_uint_eq(p.max_order, 0);
	pool_ok(&p, "one unit");
	kv_pool_release(&p);
}
END_TEST

/* One order-0 alloc in an empty 2^10-unit pool splits once per order; free merges back. */
START_TEST(test_split_merge)
{
	uint64_t want[KV_POOL_MAX_ORDER + 1] = { 0 };
	struct kv_pool p;
	uint32_t a, b;
	unsigned k;

	ck_assert_int_eq(kv_pool_init(&p, 1024 * UNIT, UNIT, 0), 0);
	ck_assert_uint_eq(p.max_order, 10);
	want[10] = 1;
	free_blocks_are(&p, want, "empty");
	a = alloc_ok(&p, 0);
	ck_assert_uint_eq(a, 0);
	want[10] = 0;
	for (k = 0; k < 10; k++)
		want[k] = 1;
	free_blocks_are(&p, want, "after one order-0 alloc");
	ck_assert_uint_eq(p.free_bytes, (1024 - 1) * UNIT);
	ck_assert_uint_eq(kv_pool_largest_free(&p), 512 * UNIT);
	pool_ok(&p, "after one order-0 alloc");
	b = alloc_ok(&p, 0);
	ck_assert_uint_eq(b, 1); /* the buddy, from the order-0 list */
	want[0] = 0;
	free_blocks_are(&p, want, "after two order-0 allocs");
	ck_assert_uint_eq(kv_pool_free(&p, a), 0);
	want[0] = 1;
	free_blocks_are(&p, want, "after freeing the first");
	ck_assert_uint_eq(kv_pool_free(&p, b), 0);
	memset(want, 0, sizeof(want));
	want[10] = 1;
	free_blocks_are(&p, want, "after freeing both");
	ck_assert_uint_eq(p.free_bytes, p.size_bytes);
	ck_assert_uint_eq(kv_pool_largest_free(&p), p.size_bytes);
	ck_assert_uint_eq(p.n_allocs, 2);
	ck_assert_uint_eq(p.n_frees, 2);
	pool_ok(&p, "merged back");
	kv_pool_release(&p);
}
END_TEST

/* Order-0 allocs fill a 100-unit pool exactly, then ENOMEM (not counted as fragmentation). */
START_TEST(test_exhaustion)
{
	const uint32_t n = 100;
	uint8_t seen[100] = { 0 };
	struct kv_pool p;
	uint32_t off, count = 0;
	int err;

	ck_assert_int_eq(kv_pool_init(&p, n * UNIT, UNIT, 0), 0);
	while ((err = kv_pool_alloc(&p, 0, &off)) == 0) {
		EXPECT(off < n && !seen[off], "alloc %u: offset %u out of range or twice",
		       count, off);
		seen[off] = 1;
		count++;
	}
	ck_assert_int_eq(err, KV_ENOMEM);
	ck_assert_msg(count == n, "%u order-0 blocks from %u units", count, n);
	ck_assert_uint_eq(p.free_bytes, 0);
	ck_assert_uint_eq(kv_pool_largest_free(&p), 0);
	ck_assert_uint_eq(p.alloc_fail, 1);
	ck_assert_uint_eq(p.alloc_fail_frag, 0);
	ck_assert_double_eq(kv_pool_ext_frag(&p), 0.0);
	pool_ok(&p, "full");
	for (off = 0; off < n; off++)
		kv_pool_free(&p, off);
	ck_assert_uint_eq(p.free_bytes, p.size_bytes);
	pool_ok(&p, "emptied");
	kv_pool_release(&p);
}
END_TEST

/* Bulk allocation and free are equivalent to one block at a time, all or nothing. */
START_TEST(test_bulk)
{
	struct kv_pool p;
	uint32_t off[64], one;
	uint64_t bytes;

	ck_assert_int_eq(kv_pool_init(&p, 64 * UNIT, UNIT, 4 * UNIT), 0);
	/* fast path: 10 max-order blocks straight off the stack */
	ck_assert_int_eq(kv_pool_alloc_n(&p, 2, 10, off), 0);
	pool_ok(&p, "after alloc_n of 10 max-order blocks");
	ck_assert_uint_eq(p.free_bytes, 24 * UNIT);
	/* slow path: order 0 needs splits */
	ck_assert_int_eq(kv_pool_alloc_n(&p, 0, 5, off + 10), 0);
	pool_ok(&p, "after alloc_n with splits");
	/* all or nothing: 20 more units than are free */
	ck_assert_int_eq(kv_pool_alloc_n(&p, 2, 5, off + 15), KV_ENOMEM);
	pool_ok(&p, "after a refused alloc_n");
	ck_assert_uint_eq(p.free_bytes, 19 * UNIT);
	/* a shared block survives a bulk free */
	ck_assert_uint_eq(kv_pool_ref(&p, off[3]), 2);
	bytes = kv_pool_free_n(&p, off, 15);
	ck_assert_uint_eq(bytes, 10 * 4 * UNIT + 5 * UNIT);
	pool_ok(&p, "after free_n");
	ck_assert_uint_eq(p.free_bytes, 60 * UNIT);
	ck_assert_uint_eq(kv_pool_free(&p, off[3]), 0);
	pool_ok(&p, "all free");
	ck_assert_uint_eq(p.free_bytes, 64 * UNIT);
	ck_assert_int_eq(kv_pool_alloc(&p, 2, &one), 0);
	kv_pool_free(&p, one);
	kv_pool_release(&p);
}
END_TEST

/*
 * Lazy runs (pool.h): a pool at max_order 0 whose runs are freed lazily
 * hands out the same offsets, in the same order, as one settled after every
 * operation (kv_pool_check settles), and ends in the same stacks, records
 * (pos of allocated blocks aside) and counters.
 */
START_TEST(test_lazy_runs_match_eager)
{
	struct kv_pool lazy, eager;
	uint32_t tab_l[40][24], tab_e[40][24], len[40] = { 0 }, i, k, step;
	uint64_t rng = 0x9e3779b97f4a7c15ULL, fail = 0, lazy_steps = 0, bl, be;

	/* 100 units of UNIT, max block UNIT: max_order 0, every block max-order */
	ck_assert_int_eq(kv_pool_init(&lazy, 100 * UNIT, UNIT, UNIT), 0);
	ck_assert_int_eq(kv_pool_init(&eager, 100 * UNIT, UNIT, UNIT), 0);
	ck_assert_uint_eq(lazy.max_order, 0);
	for (step = 0; step < 20000; step++) {
		i = (uint32_t)(rng_next(&rng) % 40);
		if (len[i]) {
			bl = kv_pool_free_n(&lazy, tab_l[i], len[i]);
			be = kv_pool_free_n(&eager, tab_e[i], len[i]);
			EXPECT(bl == be && bl == len[i] * UNIT, "step %u: free_n of %u gave %llu and %llu",
			       step, len[i], (unsigned long long)bl, (unsigned long long)be);
			len[i] = 0;
		} else {
			uint32_t n = 1 + (uint32_t)(rng_next(&rng) % 24);
			int rl = kv_pool_alloc_n(&lazy, 0, n, tab_l[i]);
			int re = kv_pool_alloc_n(&eager, 0, n, tab_e[i]);

			EXPECT(rl == re, "step %u: alloc_n of %u: %d and %d", step, n, rl, re);
			fail += rl != 0;
			if (!rl)
				len[i] = n;
			for (k = 0; !rl && k < n; k++)
				EXPECT(tab_l[i][k] == tab_e[i][k], "step %u: block %u of %u: %u, eagerly %u",
				       step, k, n, tab_l[i][k], tab_e[i][k]);
		}
		lazy_steps += lazy.lazy > 0;
		pool_ok(&eager, "eager");
		EXPECT(lazy.free_bytes == eager.free_bytes && lazy.alloc_fail == eager.alloc_fail &&
		       lazy.alloc_fail_frag == eager.alloc_fail_frag &&
		       lazy.n_allocs == eager.n_allocs && lazy.n_frees == eager.n_frees,
		       "step %u: counters differ", step);
	}
	ck_assert_msg(fail > 100 && lazy_steps > 10000, "the walk met %llu refusals, %llu steps "
		      "with lazy blocks", (unsigned long long)fail, (unsigned long long)lazy_steps);
	pool_ok(&lazy, "lazy, settled");
	ck_assert_uint_eq(lazy.lazy, 0);
	ck_assert_mem_eq(lazy.stack[0], eager.stack[0], 100 * sizeof(uint32_t));
	for (k = 0; k < 100; k++) {
		struct kv_pool_unit a = lazy.u[k], b = eager.u[k];

		if (!a.is_free)
			a.pos = b.pos = 0; /* meaningless in an allocated block */
		EXPECT(!memcmp(&a, &b, sizeof(a)), "unit %u: records differ", k);
	}
	kv_pool_release(&lazy);
	kv_pool_release(&eager);
}
END_TEST

/* A shared block or a block below max_order turns lazy runs off; settled first. */
START_TEST(test_lazy_runs_off)
{
	struct kv_pool p;
	uint32_t off[8], lo;

	ck_assert_int_eq(kv_pool_init(&p, 64 * UNIT, UNIT, 4 * UNIT), 0);
	ck_assert_int_eq(kv_pool_alloc_n(&p, 2, 8, off), 0);
	kv_pool_free_n(&p, off, 4);
	ck_assert_uint_eq(p.lazy, 4);
	lo = alloc_ok(&p, 0); /* settles, then splits a max-order block */
	ck_assert_uint_eq(p.lazy, 0);
	ck_assert_uint_eq(p.n_low, 1);
	pool_ok(&p, "after a split");
	kv_pool_free_n(&p, off + 4, 2); /* eager: a block below max_order is allocated */
	ck_assert_uint_eq(p.lazy, 0);
	kv_pool_free(&p, lo);
	ck_assert_uint_eq(p.n_low, 0);
	ck_assert_uint_eq(kv_pool_ref(&p, off[6]), 2);
	ck_assert_uint_eq(p.n_shared, 1);
	kv_pool_free_n(&p, off + 6, 2); /* eager: off[6] keeps one reference */
	ck_assert_uint_eq(p.lazy, 0);
	ck_assert_uint_eq(p.n_shared, 0);
	pool_ok(&p, "after a shared free");
	kv_pool_free_n(&p, off + 6, 1);
	ck_assert_uint_eq(p.lazy, 1);
	ck_assert_uint_eq(p.free_bytes, p.size_bytes);
	ck_assert_uint_eq(p.u[off[6]].refs, 1); /* lazily freed: its record unwritten */
	kv_pool_map(&p); /* for walkers: writes the lazy run's records too */
	ck_assert_uint_eq(p.lazy, 0);
	ck_assert_msg(p.u[off[6]].is_free && !p.u[off[6]].refs, "kv_pool_map left block %u "
		      "allocated (is_free %u, refs %u)", off[6], p.u[off[6]].is_free,
		      p.u[off[6]].refs);
	pool_ok(&p, "all free");
	kv_pool_release(&p);
}
END_TEST

/* A block freed twice in lazy runs is caught when they settle. */
START_TEST(test_lazy_double_free_aborts)
{
	struct kv_pool p;
	uint32_t off[4];

	ck_assert_int_eq(kv_pool_init(&p, 64 * UNIT, UNIT, UNIT), 0);
	ck_assert_int_eq(kv_pool_alloc_n(&p, 0, 4, off), 0);
	kv_pool_free_n(&p, off, 4);
	kv_pool_free_n(&p, off + 1, 1);
	pool_ok(&p, "settling a double free");
}
END_TEST

/* With a cap, free bytes outside max-order blocks are the fragmented share. */
START_TEST(test_ext_frag_capped)
{
	struct kv_pool p;
	uint32_t a, b;

	ck_assert_int_eq(kv_pool_init(&p, 64 * UNIT, UNIT, 8 * UNIT), 0);
	ck_assert_double_eq(kv_pool_ext_frag(&p), 0.0); /* 8 free blocks of 8 units */
	a = alloc_ok(&p, 0); /* splits one max block: 7 units free below max order */
	b = alloc_ok(&p, 3);
	ck_assert_msg(fabs(kv_pool_ext_frag(&p) - 7.0 / 55.0) < 1e-12, "ext_frag %.15f",
		      kv_pool_ext_frag(&p));
	kv_pool_free(&p, a);
	ck_assert_double_eq(kv_pool_ext_frag(&p), 0.0); /* the split block merged back */
	kv_pool_free(&p, b);
	pool_ok(&p, "all free");
	kv_pool_release(&p);
}
END_TEST

/* Freeing every other order-0 block: half the pool is free, no order-1 block is. */
START_TEST(test_fragmentation)
{
	const uint32_t n = 64;
	struct kv_pool p;
	uint32_t off, i;
	double want;

	ck_assert_int_eq(kv_pool_init(&p, n * UNIT, UNIT, 0), 0);
	for (i = 0; i < n; i++)
		alloc_ok(&p, 0);
	for (off = 0; off < n; off += 2)
		ck_assert_uint_eq(kv_pool_free(&p, off), 0);
	pool_ok(&p, "every other unit free");
	ck_assert_uint_eq(p.free_bytes, n / 2 * UNIT);
	ck_assert_uint_eq(kv_pool_largest_free(&p), UNIT);
	ck_assert_int_eq(kv_pool_alloc(&p, 1, &off), KV_ENOMEM);
	ck_assert_uint_eq(p.alloc_fail, 1);
	ck_assert_uint_eq(p.alloc_fail_frag, 1);
	want = 1.0; /* no free byte is in a max-order (64-unit) block */
	ck_assert_msg(kv_pool_ext_frag(&p) > want - 1e-12 && kv_pool_ext_frag(&p) < want + 1e-12,
		      "ext_frag %.15f, expected %.15f", kv_pool_ext_frag(&p), want);
	/* An order-0 request still fits, and a too-large one is not fragmentation. */
	off = alloc_ok(&p, 0);
	ck_assert_int_eq(kv_pool_alloc(&p, 6, &off), KV_ENOMEM);
	ck_assert_uint_eq(p.alloc_fail, 2);
	ck_assert_uint_eq(p.alloc_fail_frag, 1);
	kv_pool_release(&p);
}
END_TEST

/* Asserts the pool is exactly the free blocks (offset, order) listed in want. */
static void cover_is(struct kv_pool *p, const uint32_t (*want)[2], size_t n,
		     const char *when)
{
	uint32_t off = 0;
	size_t i;

	kv_pool_map(p); /* a pool that allocated nothing has no records yet */

	for (i = 0; i < n; i++) {
		ck_assert_msg(off == want[i][0] && p->u[off].order == want[i][1] && p->u[off].is_free,
			      "%s: block %zu at %u has order %u is_free %u, expected %u/%u",
			      when, i, off, p->u[off].order, p->u[off].is_free, want[i][0],
			      want[i][1]);
		off += 1u << p->u[off].order;
	}
	ck_assert_msg(off == p->n_units, "%s: cover ends at %u of %u units", when, off,
		      p->n_units);
	pool_ok(p, when);
}

/* A 13.5-unit region is covered by 8 + 4 + 1; with a 4-unit cap 22 is 5 x 4 + 2. */
START_TEST(test_non_pow2_cover)
{
	static const uint32_t c13[][2] = { { 0, 3 }, { 8, 2 }, { 12, 0 } };
	static const uint32_t c22[][2] = { { 0, 2 }, { 4, 2 }, { 8, 2 }, { 12, 2 },
					   { 16, 2 }, { 20, 1 } };
	struct kv_pool p;
	uint32_t offs[5], off, i;

	ck_assert_int_eq(kv_pool_init(&p, 13 * UNIT + UNIT / 2, UNIT, 0), 0);
	ck_assert_uint_eq(p.n_units, 13);
	ck_assert_uint_eq(p.size_bytes, 13 * UNIT);
	ck_assert_uint_eq(p.max_order, 3);
	cover_is(&p, c13, KV_ARRAY_LEN(c13), "13 units");
	kv_pool_release(&p);

	ck_assert_int_eq(kv_pool_init(&p, 22 * UNIT, UNIT, 4 * UNIT), 0);
	ck_assert_uint_eq(p.max_order, 2);
	cover_is(&p, c22, KV_ARRAY_LEN(c22), "22 units, cap 4");
	for (i = 0; i < 5; i++)
		offs[i] = alloc_ok(&p, 2);
	ck_assert_int_eq(kv_pool_alloc(&p, 2, &off), KV_ENOMEM);
	ck_assert_uint_eq(p.alloc_fail_frag, 0); /* 2 units free < 4 */
	for (i = 0; i < 5; i++)
		kv_pool_free(&p, offs[4 - i]);
	cover_is(&p, c22, KV_ARRAY_LEN(c22), "22 units, cap 4, after alloc and free");
	kv_pool_release(&p);
}
END_TEST

/*
 * The metadata is mapped at the first allocation: before it the counters
 * describe the cover (13 units: 8 + 4 + 1), kv_pool_check checks them, and
 * the records it lays then are that cover; emptied again, the pool checks.
 */
START_TEST(test_lazy_map)
{
	static const uint32_t c13[][2] = { { 0, 3 }, { 8, 2 }, { 12, 0 } };
	struct kv_pool p;
	uint32_t a, b;
	char msg[256];

	ck_assert_int_eq(kv_pool_init(&p, 13 * UNIT, UNIT, 0), 0);
	ck_assert_msg(p.u == NULL && p.meta == NULL, "mapped at init: u %p", (void *)p.u);
	ck_assert_uint_eq(p.free_bytes, 13 * UNIT);
	ck_assert_uint_eq(p.n_free_blocks[3], 1);
	ck_assert_uint_eq(p.n_free_blocks[2], 1);
	ck_assert_uint_eq(p.n_free_blocks[0], 1);
	ck_assert_uint_eq(p.free_mask, 0xd);
	ck_assert_uint_eq(kv_pool_largest_free(&p), 8 * UNIT);
	pool_ok(&p, "unmapped");
	p.n_free_blocks[1]++;
	ck_assert_int_eq(kv_pool_check(&p, msg, sizeof(msg)), KV_EINVARIANT);
	p.n_free_blocks[1]--;
	p.free_bytes -= UNIT;
	ck_assert_int_eq(kv_pool_check(&p, msg, sizeof(msg)), KV_EINVARIANT);
	p.free_bytes += UNIT;
	a = alloc_ok(&p, 0); /* the cover's order-0 block, at 12 */
	ck_assert_msg(p.u != NULL && p.meta_bytes >= 13 * sizeof(*p.u), "not mapped by alloc");
	ck_assert_uint_eq(a, 12);
	b = alloc_ok(&p, 1); /* splits the order-2 block at 8 */
	ck_assert_uint_eq(b, 8);
	pool_ok(&p, "two blocks");
	kv_pool_free(&p, b);
	kv_pool_free(&p, a);
	cover_is(&p, c13, KV_ARRAY_LEN(c13), "13 units, emptied");
	kv_pool_release(&p);
	ck_assert_int_eq(kv_pool_init(&p, 13 * UNIT, UNIT, 0), 0);
	/* a refused bulk max-order allocation counts, maps nothing (one block taken, given back) */
	ck_assert_int_eq(kv_pool_alloc_n(&p, 3, 2, &a), KV_ENOMEM);
	ck_assert_msg(p.u == NULL, "mapped by a refused alloc_n");
	ck_assert_uint_eq(p.alloc_fail, 1);
	ck_assert_uint_eq(p.alloc_fail_frag, 0); /* 5 units free beside it: not 8 */
	ck_assert_uint_eq(p.n_allocs, 1);
	ck_assert_uint_eq(p.n_frees, 1);
	pool_ok(&p, "unmapped, refused");
	p.n_frees--;
	ck_assert_int_eq(kv_pool_check(&p, msg, sizeof(msg)), KV_EINVARIANT);
	p.n_frees++;
	ck_assert_int_eq(kv_pool_alloc_n(&p, 0, 1, &a), 0); /* alloc_n maps too */
	ck_assert_uint_eq(a, 12);
	pool_ok(&p, "alloc_n");
	kv_pool_free(&p, a);
	kv_pool_release(&p);
}
END_TEST

/*
 * The cover's max-order blocks stay implicit until popped (pool.h `fresh`):
 * a pool whose records are all written at the start (kv_pool_map) and a
 * lazy one hand out the same offsets through any sequence of allocations
 * and frees, single and bulk, and both pass the check throughout.
 */
START_TEST(test_implicit_cover)
{
	struct kv_pool lazy, full;
	uint32_t held[12], n_held = 0, a[8], b[8], i, j;
	uint64_t x = 12345;
	char msg[256];

	ck_assert_int_eq(kv_pool_init(&lazy, 90 * UNIT, UNIT, 4 * UNIT), 0);
	ck_assert_int_eq(kv_pool_init(&full, 90 * UNIT, UNIT, 4 * UNIT), 0);
	kv_pool_map(&full);
	ck_assert_uint_eq(full.fresh, 0);
	for (i = 0; i < 2000; i++) {
		unsigned order, k;
		int ra, rb;

		x = x * 6364136223846793005ULL + 1442695040888963407ULL;
		order = (unsigned)(x >> 33) % 3;
		k = 1 + (unsigned)(x >> 40) % 4;
		if ((x >> 50) % 2 && n_held + k <= KV_ARRAY_LEN(held)) {
			ra = kv_pool_alloc_n(&lazy, order, k, a);
			rb = kv_pool_alloc_n(&full, order, k, b);
			ck_assert_int_eq(ra, rb);
			for (j = 0; !ra && j < k; j++) {
				ck_assert_msg(a[j] == b[j], "step %u: block %u at %u lazily, %u mapped",
					      i, j, a[j], b[j]);
				held[n_held++] = a[j];
			}
		} else if (n_held) {
			k = KV_MIN(k, n_held);
			n_held -= k;
			ck_assert_uint_eq(kv_pool_free_n(&lazy, &held[n_held], k),
					  kv_pool_free_n(&full, &held[n_held], k));
		}
		ck_assert_uint_eq(lazy.free_bytes, full.free_bytes);
		ck_assert_uint_eq(lazy.free_mask, full.free_mask);
		pool_ok(&lazy, "lazy");
		pool_ok(&full, "mapped");
	}
	ck_assert_msg(lazy.fresh > 0 && lazy.fresh < 22, "fresh %llu: the test never popped an "
		      "implicit block or popped them all", (unsigned long long)lazy.fresh);
	lazy.u[(lazy.fresh - 1) << 2].refs = 1; /* a record inside an implicit block */
	ck_assert_int_eq(kv_pool_check(&lazy, msg, sizeof(msg)), KV_EINVARIANT);
	lazy.u[(lazy.fresh - 1) << 2].refs = 0;
	pool_ok(&lazy, "restored");
	kv_pool_map(&lazy); /* writes the implicit entries out: the same pool */
	ck_assert_uint_eq(lazy.fresh, 0);
	pool_ok(&lazy, "written out");
	kv_pool_release(&lazy);
	kv_pool_release(&full);
}
END_TEST

/* A table of parked blocks (pool.h: parked) for test_lazy_runs_over_fresh: the offsets it holds. */
struct park_tab {
	struct kv_pool *p; /* the pool it parked in */
	uint32_t off[24]; /* the parked run, in kv_pool_free_n's order */
	uint32_t n; /* its length; 0 when nothing is parked */
	uint64_t unparks; /* calls of the unpark hook */
};

/* The unpark hook: writes the parked run onto the max-order stack where kv_pool_park counted it. */
static void park_tab_unpark(void *ctx)
{
	struct park_tab *t = ctx;
	struct kv_pool *p = t->p;

	memcpy(p->stack[p->max_order] + (p->n_free_blocks[p->max_order] - p->parked), t->off,
	       t->n * sizeof(*t->off));
	p->parked = 0;
	t->n = 0;
	t->unparks++;
}

/*
 * Both lazinesses on one stack (pool.c): lazy runs and parked runs go on
 * top of the max-order stack while the untouched cover sits implicit at its
 * bottom (`fresh`).  A lazily mapped pool with lazy runs, one written out at
 * the start (kv_pool_map) with lazy runs, and one settled after every step
 * (kv_pool_check settles) take the same offsets in the same order through
 * bulk allocations that reach from lazy entries into implicit ones, and end
 * with the same stacks and records.  Fresh pools each round, so the walk
 * keeps reaching into the cover.
 */
START_TEST(test_lazy_runs_over_fresh)
{
	uint64_t rng = 0x243f6a8885a308d3ULL, both = 0, across = 0, takes = 0, unparks = 0;
	unsigned round;

	for (round = 0; round < 20; round++) {
		struct kv_pool lz, mp, ea;
		struct park_tab park = { .p = &lz };
		uint32_t tab_l[16][24], tab_m[16][24], tab_e[16][24], len[16] = { 0 }, i, k, step;
		uint64_t fresh0;

		/* 400 units, max block 2 units: 200 max-order blocks, all implicit at first */
		ck_assert_int_eq(kv_pool_init(&lz, 400 * UNIT, UNIT, 2 * UNIT), 0);
		ck_assert_int_eq(kv_pool_init(&mp, 400 * UNIT, UNIT, 2 * UNIT), 0);
		ck_assert_int_eq(kv_pool_init(&ea, 400 * UNIT, UNIT, 2 * UNIT), 0);
		kv_pool_map(&mp);
		ck_assert_uint_eq(mp.fresh, 0);
		lz.unpark = park_tab_unpark;
		lz.unpark_ctx = &park;
		for (step = 0; step < 400; step++) {
			i = (uint32_t)(rng_next(&rng) % 16);
			if (len[i]) {
				uint64_t bm = kv_pool_free_n(&mp, tab_m[i], len[i]);
				uint64_t be = kv_pool_free_n(&ea, tab_e[i], len[i]);

				if (!park.n && !lz.lazy && rng_next(&rng) % 3 == 0) {
					/* parked: counted free, entries left in the table */
					memcpy(park.off, tab_l[i], len[i] * sizeof(*park.off));
					park.n = len[i];
					ck_assert_int_eq(kv_pool_park(&lz, len[i]), 0);
				} else {
					EXPECT(kv_pool_free_n(&lz, tab_l[i], len[i]) == bm,
					       "round %u step %u: free_n", round, step);
				}
				EXPECT(bm == be && bm == len[i] * 2 * UNIT, "round %u step %u: free_n "
				       "of %u gave %llu and %llu", round, step, len[i],
				       (unsigned long long)bm, (unsigned long long)be);
				len[i] = 0;
			} else {
				uint32_t n = park.n && rng_next(&rng) % 2
						     ? park.n
						     : 1 + (uint32_t)(rng_next(&rng) % 24);
				int rl, rm = kv_pool_alloc_n(&mp, 1, n, tab_m[i]);
				int re = kv_pool_alloc_n(&ea, 1, n, tab_e[i]);
				uint64_t top = lz.n_free_blocks[1] - n;

				if (park.n == n && !rm) {
					/* the parking table takes its run back whole */
					memcpy(tab_l[i], park.off, n * sizeof(*park.off));
					kv_pool_unpark_take(&lz, n);
					park.n = 0;
					takes++;
					rl = 0;
				} else {
					across += !rm && lz.lazy && lz.lazy < n && top < lz.fresh;
					rl = kv_pool_alloc_n(&lz, 1, n, tab_l[i]);
				}
				EXPECT(rl == rm && rm == re, "round %u step %u: alloc_n of %u: %d, %d "
				       "and %d", round, step, n, rl, rm, re);
				if (!rl)
					len[i] = n;
				for (k = 0; !rl && k < n; k++)
					EXPECT(tab_l[i][k] == tab_m[i][k] && tab_m[i][k] == tab_e[i][k],
					       "round %u step %u: block %u of %u: %u lazily, %u mapped, "
					       "%u eagerly", round, step, k, n, tab_l[i][k], tab_m[i][k],
					       tab_e[i][k]);
			}
			both += lz.lazy > lz.parked && lz.fresh > 0;
			EXPECT(lz.fresh + lz.lazy <= lz.n_free_blocks[1], "round %u step %u: %llu "
			       "implicit and %llu lazy entries on a stack of %llu", round, step,
			       (unsigned long long)lz.fresh, (unsigned long long)lz.lazy,
			       (unsigned long long)lz.n_free_blocks[1]);
			pool_ok(&ea, "eager");
			EXPECT(lz.free_bytes == ea.free_bytes && mp.free_bytes == ea.free_bytes &&
			       lz.n_allocs == ea.n_allocs && lz.n_frees == ea.n_frees &&
			       lz.alloc_fail == ea.alloc_fail && mp.alloc_fail == ea.alloc_fail,
			       "round %u step %u: counters differ", round, step);
		}
		unparks += park.unparks;
		fresh0 = lz.fresh;
		pool_ok(&lz, "lazy, settled");
		pool_ok(&mp, "mapped, settled");
		ck_assert_uint_eq(lz.fresh, fresh0); /* settling writes the top, not the cover */
		ck_assert_uint_eq(lz.fresh, ea.fresh);
		kv_pool_map(&lz);
		kv_pool_map(&ea);
		pool_ok(&lz, "lazy, written out");
		/* the stacks' live entries (above the height: old entries, not compared) */
		ck_assert_uint_eq(lz.n_free_blocks[1], mp.n_free_blocks[1]);
		ck_assert_uint_eq(lz.n_free_blocks[1], ea.n_free_blocks[1]);
		ck_assert_mem_eq(lz.stack[1], mp.stack[1], lz.n_free_blocks[1] * sizeof(uint32_t));
		ck_assert_mem_eq(lz.stack[1], ea.stack[1], lz.n_free_blocks[1] * sizeof(uint32_t));
		for (k = 0; k < 400; k++) {
			struct kv_pool_unit a = lz.u[k], b = mp.u[k], c = ea.u[k];

			if (!a.is_free)
				a.pos = b.pos = c.pos = 0; /* meaningless in an allocated block */
			EXPECT(!memcmp(&a, &b, sizeof(a)) && !memcmp(&a, &c, sizeof(a)),
			       "round %u: unit %u: records differ", round, k);
		}
		kv_pool_release(&lz);
		kv_pool_release(&mp);
		kv_pool_release(&ea);
	}
	ck_assert_msg(both > 5000 && across > 50 && takes > 10 && unparks > 30,
		      "the walk had %llu steps with lazy and implicit entries, %llu allocations "
		      "across both, %llu parked runs taken back, %llu unparked",
		      (unsigned long long)both, (unsigned long long)across,
		      (unsigned long long)takes, (unsigned long long)unparks);
}
END_TEST

/* The cap on the largest block: order_for, alloc and coalescing respect it. */
START_TEST(test_max_block)
{
	uint64_t want[KV_POOL_MAX_ORDER + 1] = { 0 };
	struct kv_pool p;
	uint32_t off;

	ck_assert_int_eq(kv_pool_init(&p, 1024, 16, 64), 0);
	ck_assert_uint_eq(p.max_order, 2);
	ck_assert_int_eq(kv_pool_order_for(&p, 0), 0);
	ck_assert_int_eq(kv_pool_order_for(&p, 1), 0);
	ck_assert_int_eq(kv_pool_order_for(&p, 16), 0);
	ck_assert_int_eq(kv_pool_order_for(&p, 17), 1);
	ck_assert_int_eq(kv_pool_order_for(&p, 32), 1);
	ck_assert_int_eq(kv_pool_order_for(&p, 33), 2);
	ck_assert_int_eq(kv_pool_order_for(&p, 64), 2);
	ck_assert_int_eq(kv_pool_order_for(&p, 65), -1);
	ck_assert_int_eq(kv_pool_order_for(&p, UINT64_MAX), -1);
	ck_assert_int_eq(kv_pool_alloc(&p, 3, &off), KV_ETOOBIG);
	ck_assert_int_eq(kv_pool_alloc(&p, 40, &off), KV_ETOOBIG);
	ck_assert_uint_eq(p.alloc_fail, 0);
	want[2] = 16;
	free_blocks_are(&p, want, "cap 4 units");
	off = alloc_ok(&p, 0);
	kv_pool_free(&p, off);
	free_blocks_are(&p, want, "cap 4 units, after alloc and free");
	pool_ok(&p, "cap 4 units");
	kv_pool_release(&p);

	/* A cap above the region is the largest power of two inside it. */
	ck_assert_int_eq(kv_pool_init(&p, 1000 * UNIT, UNIT, 1ULL << 40), 0);
	ck_assert_uint_eq(p.max_order, 9);
	ck_assert_int_eq(kv_pool_order_for(&p, 512 * UNIT), 9);
	ck_assert_int_eq(kv_pool_order_for(&p, 512 * UNIT + 1), -1);
	kv_pool_release(&p);
}
END_TEST

/* ref adds, free drops; the block is freed at zero only. */
START_TEST(test_refcounts)
{
	struct kv_pool p;
	uint32_t off;

	off = pool64_with(&p, 3);
	ck_assert_uint_eq(p.u[off].refs, 1);
	ck_assert_uint_eq(kv_pool_ref(&p, off), 2);
	ck_assert_uint_eq(kv_pool_ref(&p, off), 3);
	ck_assert_uint_eq(kv_pool_free(&p, off), 2);
	ck_assert_uint_eq(kv_pool_free(&p, off), 1);
	ck_assert_uint_eq(p.free_bytes, 56 * UNIT);
	ck_assert_uint_eq(p.n_frees, 0);
	pool_ok(&p, "one reference left");
	ck_assert_uint_eq(kv_pool_free(&p, off), 0);
	ck_assert_uint_eq(p.free_bytes, p.size_bytes);
	ck_assert_uint_eq(p.n_frees, 1);
	pool_ok(&p, "freed");
	kv_pool_release(&p);
}
END_TEST

/* The 65536th reference is a model bug: abort, not wrap. */
START_TEST(test_ref_overflow_aborts)
{
	struct kv_pool p;
	uint32_t off, i;

	off = pool64_with(&p, 0);
	for (i = 2; i <= 65535; i++)
		EXPECT(kv_pool_ref(&p, off) == i, "ref %u", i);
	ck_assert_uint_eq(p.u[off].refs, 65535);
	kv_pool_ref(&p, off);
}
END_TEST

START_TEST(test_free_unallocated_aborts)
{
	struct kv_pool p;

	ck_assert_int_eq(kv_pool_init(&p, 64 * UNIT, UNIT, 0), 0);
	kv_pool_free(&p, 0); /* a free block */
}
END_TEST

START_TEST(test_free_interior_aborts)
{
	struct kv_pool p;
	uint32_t off;

	off = pool64_with(&p, 2);
	kv_pool_free(&p, off + 1);
}
END_TEST

START_TEST(test_double_free_aborts)
{
	struct kv_pool p;
	uint32_t off;

	off = pool64_with(&p, 0);
	alloc_ok(&p, 0); /* keeps off from merging away */
	kv_pool_free(&p, off);
	kv_pool_free(&p, off);
}
END_TEST

START_TEST(test_free_out_of_range_aborts)
{
	struct kv_pool p;

	ck_assert_int_eq(kv_pool_init(&p, 64 * UNIT, UNIT, 0), 0);
	kv_pool_free(&p, 64);
}
END_TEST

START_TEST(test_ref_free_block_aborts)
{
	struct kv_pool p;

	ck_assert_int_eq(kv_pool_init(&p, 64 * UNIT, UNIT, 0), 0);
	kv_pool_ref(&p, 0);
}
END_TEST

#ifndef NDEBUG
/*
 * The local asserts (debug builds) stop the step that meets a corruption,
 * before any kv_pool_check: a popped free block whose record says another
 * order; a buddy whose record points past its stack's top; a free that
 * would take the count of blocks below max_order under zero.
 */
START_TEST(test_assert_pop_wrong_order)
{
	struct kv_pool p;
	uint32_t a;

	a = pool64_with(&p, 0); /* unit 0; the split leaves unit 1 (order 0) atop stack 0 */
	ck_assert(p.u[a + 1].is_free && p.stack[0][p.n_free_blocks[0] - 1] == a + 1);
	p.u[a + 1].order = 3;
	kv_pool_alloc(&p, 0, &a);
}
END_TEST

START_TEST(test_assert_unlink_stale_pos)
{
	struct kv_pool p;
	uint32_t a;

	a = pool64_with(&p, 0);
	p.u[a + 1].pos = 5; /* stack 0 holds one entry */
	kv_pool_free(&p, a); /* merging with its buddy, unit 1, unlinks it */
}
END_TEST

START_TEST(test_assert_low_count)
{
	struct kv_pool p;
	uint32_t a;

	a = pool64_with(&p, 0);
	p.n_low = 0;
	kv_pool_free(&p, a);
}
END_TEST
#endif

/* Asserts kv_pool_check reports a corruption, with a message. */
static void check_catches(const struct kv_pool *p, const char *what)
{
	char msg[256] = "";

	ck_assert_msg(kv_pool_check(p, msg, sizeof(msg)) == KV_EINVARIANT && msg[0],
		      "kv_pool_check missed %s (msg \"%s\")", what, msg);
}

/* Each corruption on a fresh pool with some allocations is caught. */
START_TEST(test_check_catches)
{
	struct kv_pool p;
	uint32_t a, b;
	int i;

	for (i = 0; i < 7; i++) {
		a = pool64_with(&p, 0);
		b = alloc_ok(&p, 1);
		pool_ok(&p, "before corruption");
		switch (i) {
		case 0:
			p.free_bytes += UNIT;
			check_catches(&p, "free_bytes off by one unit");
			break;
		case 1:
			p.u[b + 1].refs = 1; /* a unit inside b starts a block */
			check_catches(&p, "a head inside a block");
			break;
		case 2:
			p.u[a].refs = 0;
			check_catches(&p, "an allocated block without references");
			break;
		case 3:
			p.n_free_blocks[5]++;
			check_catches(&p, "a per-order count off by one");
			break;
		case 4:
			p.stack[5][0] = a; /* an allocated block on a free stack */
			check_catches(&p, "an allocated block on a free stack");
			break;
		case 5: /* a free block left out of its list */
			p.u[a].refs = 0;
			p.u[a].is_free = 1;
			check_catches(&p, "a free block off its list");
			break;
		case 6:
			p.free_mask |= 1ULL << 1; /* order 1 is empty: b took it */
			check_catches(&p, "a stale free_mask bit");
			break;
		}
		kv_pool_release(&p);
	}
}
END_TEST

/* One live block of the property test. */
struct live {
	uint32_t off; /* offset, units */
	unsigned order; /* block order */
	unsigned refs; /* references the test holds */
};

/* State of the property test: the pool and a shadow of who owns each unit. */
struct prop {
	struct kv_pool p;
	struct live *live; /* live blocks, unordered */
	size_t n_live;
	uint32_t *owner; /* per unit: 1 + index in live[], 0 when free */
	uint64_t live_bytes; /* bytes in live blocks */
	uint64_t rng; /* xorshift state */
};

/* Tries an alloc of a geometric random order; checks the result against the shadow. */
static void prop_alloc(struct prop *s, size_t step)
{
	struct kv_pool *p = &s->p;
	unsigned geo = (unsigned)__builtin_ctzll(rng_next(&s->rng) | 1ULL << 63);
	unsigned order = KV_MIN(geo, p->max_order);
	uint64_t fail = p->alloc_fail, frag = p->alloc_fail_frag;
	uint64_t bytes = kv_pool_block_bytes(p, order), free_before = p->free_bytes;
	uint32_t off, u;
	int err = kv_pool_alloc(p, order, &off);

	if (err) {
		EXPECT(err == KV_ENOMEM && kv_pool_largest_free(p) < bytes &&
			       p->alloc_fail == fail + 1 &&
			       p->alloc_fail_frag == frag + (free_before >= bytes),
		       "step %zu: alloc order %u refused (%s) with largest free %llu, "
		       "free %llu, fail %llu -> %llu, frag %llu -> %llu",
		       step, order, kv_strerror(err),
		       (unsigned long long)kv_pool_largest_free(p),
		       (unsigned long long)free_before, (unsigned long long)fail,
		       (unsigned long long)p->alloc_fail, (unsigned long long)frag,
		       (unsigned long long)p->alloc_fail_frag);
		return;
	}
	EXPECT(!(off & ((1u << order) - 1)) && off + (1u << order) <= p->n_units,
	       "step %zu: order %u block at %u misaligned or outside %u units", step, order,
	       off, p->n_units);
	for (u = off; u < off + (1u << order); u++) {
		EXPECT(!s->owner[u], "step %zu: order %u block at %u overlaps live block %u",
		       step, order, off, s->live[s->owner[u] - 1].off);
		s->owner[u] = (uint32_t)s->n_live + 1;
	}
	s->live[s->n_live++] = (struct live){ .off = off, .order = order, .refs = 1 };
	s->live_bytes += bytes;
}

/* Drops one reference to live block i; forgets it at zero. */
static void prop_free(struct prop *s, size_t i, size_t step)
{
	struct live *l = &s->live[i];
	unsigned left = kv_pool_free(&s->p, l->off);
	uint32_t u;

	EXPECT(left == l->refs - 1, "step %zu: free of %u left %u references, expected %u",
	       step, l->off, left, l->refs - 1);
	if (--l->refs)
		return;
	for (u = l->off; u < l->off + (1u << l->order); u++)
		s->owner[u] = 0;
	s->live_bytes -= kv_pool_block_bytes(&s->p, l->order);
	*l = s->live[--s->n_live];
	if (i < s->n_live)
		for (u = l->off; u < l->off + (1u << l->order); u++)
			s->owner[u] = (uint32_t)i + 1;
}

/* One random operation: alloc (45%), ref (10%) or free (45%) of a random live block. */
static void prop_step(struct prop *s, size_t step)
{
	unsigned r = (unsigned)(rng_next(&s->rng) % 100);
	size_t i;

	if (!s->n_live || r < 45) {
		prop_alloc(s, step);
		return;
	}
	i = rng_next(&s->rng) % s->n_live;
	if (r < 55 && s->live[i].refs < 8) {
		s->live[i].refs++;
		EXPECT(kv_pool_ref(&s->p, s->live[i].off) == s->live[i].refs,
		       "step %zu: ref of %u", step, s->live[i].off);
		return;
	}
	prop_free(s, i, step);
}

/*
 * n_ops random operations on a pool of n_units (block cap max_units, 0 for
 * none); kv_pool_check every check_every operations; then everything is
 * freed and the pool must be its initial cover again.
 */
static void prop_run(uint32_t n_units, uint32_t max_units, size_t n_ops, size_t check_every,
		     uint64_t seed)
{
	uint64_t cover[KV_POOL_MAX_ORDER + 1];
	struct prop s = { .rng = seed };
	size_t step;
	char when[64];

	ck_assert_int_eq(kv_pool_init(&s.p, (uint64_t)n_units * UNIT, UNIT,
				      (uint64_t)max_units * UNIT), 0);
	memcpy(cover, s.p.n_free_blocks, sizeof(cover));
	s.live = kv_xcalloc(n_units, sizeof(*s.live));
	s.owner = kv_xcalloc(n_units, sizeof(*s.owner));
	for (step = 0; step < n_ops; step++) {
		prop_step(&s, step);
		EXPECT(s.p.free_bytes + s.live_bytes == s.p.size_bytes,
		       "step %zu: free %llu + live %llu != size %llu", step,
		       (unsigned long long)s.p.free_bytes, (unsigned long long)s.live_bytes,
		       (unsigned long long)s.p.size_bytes);
		if (step % check_every == 0) {
			snprintf(when, sizeof(when), "step %zu, %zu live", step, s.n_live);
			pool_ok(&s.p, when);
		}
	}
	while (s.n_live)
		prop_free(&s, s.n_live - 1, n_ops);
	ck_assert_uint_eq(s.p.free_bytes, s.p.size_bytes);
	ck_assert_uint_eq(s.p.n_allocs, s.p.n_frees);
	free_blocks_are(&s.p, cover, "all freed");
	pool_ok(&s.p, "all freed");
	free(s.live);
	free(s.owner);
	kv_pool_release(&s.p);
}

START_TEST(test_property_small)
{
	prop_run(64, 0, 100000, 1, 0x2545f4914f6cdd1dULL);
}
END_TEST

START_TEST(test_property_small_non_pow2)
{
	prop_run(45, 8, 100000, 1, 12345);
}
END_TEST

START_TEST(test_property_large)
{
	prop_run(40009, 1u << 12, 100000, 1000, 987654321);
}
END_TEST

static Suite *pool_suite(void)
{
	Suite *s = suite_create("pool");
	TCase *tc = tcase_create("core");
	TCase *abort_tc = tcase_create("aborts");

	tcase_add_test(tc, test_init_errors);
	tcase_add_test(tc, test_split_merge);
	tcase_add_test(tc, test_exhaustion);
	tcase_add_test(tc, test_fragmentation);
	tcase_add_test(tc, test_ext_frag_capped);
	tcase_add_test(tc, test_bulk);
	tcase_add_test(tc, test_lazy_runs_match_eager);
	tcase_add_test(tc, test_lazy_runs_off);
	tcase_add_test(tc, test_non_pow2_cover);
	tcase_add_test(tc, test_lazy_map);
	tcase_add_test(tc, test_implicit_cover);
	tcase_add_test(tc, test_lazy_runs_over_fresh);
	tcase_add_test(tc, test_max_block);
	tcase_add_test(tc, test_refcounts);
	tcase_add_test(tc, test_check_catches);
	tcase_add_test(tc, test_property_small);
	tcase_add_test(tc, test_property_small_non_pow2);
	tcase_add_test(tc, test_property_large);
	suite_add_tcase(s, tc);
	tcase_add_test_raise_signal(abort_tc, test_ref_overflow_aborts, SIGABRT);
	tcase_add_test_raise_signal(abort_tc, test_free_unallocated_aborts, SIGABRT);
	tcase_add_test_raise_signal(abort_tc, test_free_interior_aborts, SIGABRT);
	tcase_add_test_raise_signal(abort_tc, test_double_free_aborts, SIGABRT);
	tcase_add_test_raise_signal(abort_tc, test_free_out_of_range_aborts, SIGABRT);
	tcase_add_test_raise_signal(abort_tc, test_ref_free_block_aborts, SIGABRT);
#ifndef NDEBUG
	tcase_add_test_raise_signal(abort_tc, test_assert_pop_wrong_order, SIGABRT);
	tcase_add_test_raise_signal(abort_tc, test_assert_unlink_stale_pos, SIGABRT);
	tcase_add_test_raise_signal(abort_tc, test_assert_low_count, SIGABRT);
#endif
	tcase_add_test_raise_signal(abort_tc, test_lazy_double_free_aborts, SIGABRT);
	suite_add_tcase(s, abort_tc);
	return s;
}

int main(void)
{
	return kv_test_run_suite(pool_suite());
}
