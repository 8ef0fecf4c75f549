/*
 * test_blocks.c -- block tables over the buddy pool: parked tables (a
 * table freed whole and taken back whole, blocks.h) give the offsets, the
 * counters and, once settled, the pool state of tables freed and built
 * block by block; unparking asserts its conservation (debug builds); a
 * table handed over (kv_blocks_hand_over) gives its blocks, in order, still
 * allocated.
 */
#include "testutil.h"

#include <check.h>
#include <signal.h>
#include <string.h>

#include "blocks.h"

#define UNIT 256 /* pool unit bytes */
#define N_TAB 24 /* tables in the random walk */

/* Asserts kv_pool_check passes. */
static void pool_ok(const struct kv_pool *p, const char *when, unsigned step)
{
	char msg[256] = "";
	int err = kv_pool_check(p, msg, sizeof(msg));

	EXPECT(err == 0, "step %u, %s: kv_pool_check: %s", step, when, msg);
}

/* Asserts the two tables hold the same units in the same order. */
static void same_units(const struct kv_blocks *a, uint64_t ta, const struct kv_blocks *b,
		       uint64_t tb, unsigned step)
{
	uint32_t ua[512], ub[512];
	uint64_t na = kv_blocks_list_units(a, ta, ua, 512), nb = kv_blocks_list_units(b, tb, ub, 512);
	uint64_t i;

	EXPECT(na == nb, "step %u: %llu units parked, %llu eagerly", step, (unsigned long long)na,
	       (unsigned long long)nb);
	for (i = 0; i < na; i++)
		EXPECT(ua[i] == ub[i], "step %u: unit %llu is %u, eagerly %u", step,
		       (unsigned long long)i, ua[i], ub[i]);
}

/*
 * A random walk of appends (mostly 150 units, some 40 or 150 + 3) and whole
 * frees over 24 tables, on a pool of 1,000 max-order units, with parking
 * on one side only; sometimes kv_pool_check on the parked side (it settles).
 */
START_TEST(test_parked_match_eager)
{
	struct kv_pool pp, pe;
	struct kv_blocks bp, be;
	uint64_t tp[N_TAB], te[N_TAB], rng = 0x853c49e6748fea9bULL, taken = 0, refused = 0;
	unsigned step, i;

	ck_assert_int_eq(kv_pool_init(&pp, 1000 * UNIT, UNIT, UNIT), 0);
	ck_assert_int_eq(kv_pool_init(&pe, 1000 * UNIT, UNIT, UNIT), 0);
	kv_blocks_init(&bp, &pp);
	kv_blocks_init(&be, &pe);
	bp.park = 1;
	for (i = 0; i < N_TAB; i++)
		tp[i] = te[i] = KV_BLOCKS_EMPTY;
	for (step = 0; step < 30000; step++) {
		unsigned r = (unsigned)(rng_next(&rng) % 100);

		i = (unsigned)(rng_next(&rng) % N_TAB);
		if (tp[i] != KV_BLOCKS_EMPTY) {
			uint64_t fp = kv_blocks_free(&bp, &tp[i]), fe = kv_blocks_free(&be, &te[i]);

			EXPECT(fp == fe, "step %u: freed %llu and %llu bytes", step,
			       (unsigned long long)fp, (unsigned long long)fe);
		} else {
			uint64_t units = r < 80 ? 150 : r < 90 ? 40 : 153, hp = 0, he = 0;
			uint32_t before = bp.n_parked;
			int rp = kv_blocks_append(&bp, &tp[i], units * UNIT, 0, &hp);
			int re = kv_blocks_append(&be, &te[i], units * UNIT, 0, &he);

			EXPECT(rp == re && hp == he, "step %u: append of %llu units: %d and %d",
			       step, (unsigned long long)units, rp, re);
			taken += bp.n_parked < before;
			refused += rp != 0;
			same_units(&bp, tp[i], &be, te[i], step);
		}
		EXPECT(pp.free_bytes == pe.free_bytes && pp.alloc_fail == pe.alloc_fail &&
		       pp.alloc_fail_frag == pe.alloc_fail_frag && pp.n_allocs == pe.n_allocs &&
		       pp.n_frees == pe.n_frees,
		       "step %u: counters differ (free %llu and %llu)", step,
		       (unsigned long long)pp.free_bytes, (unsigned long long)pe.free_bytes);
		pool_ok(&pe, "eager", step);
		if (r % 50 == 0)
			pool_ok(&pp, "parked", step);
	}
	ck_assert_msg(taken > 1000 && refused > 100, "%llu tables taken back, %llu refused",
		      (unsigned long long)taken, (unsigned long long)refused);
	for (i = 0; i < N_TAB; i++) {
		kv_blocks_free(&bp, &tp[i]);
		kv_blocks_free(&be, &te[i]);
	}
	pool_ok(&pp, "all freed, parked side", step);
	pool_ok(&pe, "all freed", step);
	ck_assert_uint_eq(pp.parked, 0);
	ck_assert_uint_eq(pp.free_bytes, pp.size_bytes);
	ck_assert_mem_eq(pp.stack[0], pe.stack[0], 1000 * sizeof(uint32_t));
	ck_assert_mem_eq(pp.u, pe.u, 1000 * sizeof(*pp.u));
	kv_blocks_release(&bp);
	kv_blocks_release(&be);
	ck_assert(pp.unpark == NULL && pp.unpark_ctx == NULL);
	kv_pool_release(&pp);
	kv_pool_release(&pe);
}
END_TEST

/* A pool of 100 one-unit blocks and tables over it holding one parked table of 70. */
static void park_70(struct kv_pool *p, struct kv_blocks *b)
{
	uint64_t t = KV_BLOCKS_EMPTY, held = 0;

	ck_assert_int_eq(kv_pool_init(p, 100 * UNIT, UNIT, UNIT), 0);
	kv_blocks_init(b, p);
	b->park = 1;
	ck_assert_int_eq(kv_blocks_append(b, &t, 70 * UNIT, 0, &held), 0);
	ck_assert_uint_eq(kv_blocks_free(b, &t), 70 * UNIT);
	ck_assert_uint_eq(p->parked, 70);
}

/* Tables parked when the blocks are released are written back first. */
START_TEST(test_release_unparks)
{
	struct kv_pool p;
	struct kv_blocks b;

	park_70(&p, &b);
	ck_assert_uint_eq(p.free_bytes, p.size_bytes);
	kv_blocks_release(&b);
	ck_assert_uint_eq(p.parked, 0);
	pool_ok(&p, "released", 0);
	kv_pool_release(&p);
}
END_TEST

/*
 * kv_blocks_hand_over lists a table's blocks in table order across its
 * pages (130 blocks: three pages, the last partly full), empties it, gives
 * its pages back for the next table and leaves every block allocated with
 * its one reference; a table above `max` is left as it was.
 */
START_TEST(test_hand_over)
{
	struct kv_pool p;
	struct kv_blocks b;
	uint64_t t = KV_BLOCKS_EMPTY, t2 = KV_BLOCKS_EMPTY, held = 0, i;
	uint32_t want[130], out[130], pages;

	ck_assert_int_eq(kv_pool_init(&p, 512 * UNIT, UNIT, UNIT), 0);
	kv_blocks_init(&b, &p);
	for (i = 0; i < 130; i++) {
		ck_assert_int_eq(kv_blocks_append(&b, &t, UNIT, 0, &held), 0);
		want[i] = kv_blocks_at(&b, t, i);
	}
	pages = b.n_pages;
	ck_assert_uint_eq(kv_blocks_hand_over(&b, &t, out, 129), UINT64_MAX);
	ck_assert_uint_eq(kv_blocks_count(t), 130);
	ck_assert_uint_eq(kv_blocks_hand_over(&b, &t, out, 130), 130);
	ck_assert_uint_eq(t, KV_BLOCKS_EMPTY);
	for (i = 0; i < 130; i++) {
		ck_assert_uint_eq(out[i], want[i]);
		ck_assert_uint_eq(p.u[out[i]].refs, 1); /* still allocated, the caller's now */
	}
	ck_assert_uint_eq(p.free_bytes, p.size_bytes - 130 * UNIT);
	for (i = 0; i < 130; i++) /* the pages are free again: a new table takes no more */
		ck_assert_int_eq(kv_blocks_append(&b, &t2, UNIT, 0, &held), 0);
	ck_assert_uint_eq(b.n_pages, pages);
	kv_pool_free_n(&p, out, 130);
	kv_blocks_free(&b, &t2);
	ck_assert_uint_eq(p.free_bytes, p.size_bytes);
	pool_ok(&p, "handed over", 0);
	kv_blocks_release(&b);
	kv_pool_release(&p);
}
END_TEST

#ifndef NDEBUG
/* Unparking asserts (debug builds) it writes exactly the entries the pool counts parked. */
START_TEST(test_assert_unpark_conserves)
{
	struct kv_pool p;
	struct kv_blocks b;

	park_70(&p, &b);
	p.parked++; /* one more than the parked table holds */
	p.lazy++;
	p.n_free_blocks[0]++;
	kv_blocks_release(&b);
}
END_TEST
#endif

static Suite *blocks_suite(void)
{
	Suite *s = suite_create("blocks");
	TCase *tc = tcase_create("core");

#ifndef NDEBUG
	tcase_add_test_raise_signal(tc, test_assert_unpark_conserves, SIGABRT);
#endif
	tcase_add_test(tc, test_parked_match_eager);
	tcase_add_test(tc, test_release_unparks);
	tcase_add_test(tc, test_hand_over);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return kv_test_run_suite(blocks_suite());
}
