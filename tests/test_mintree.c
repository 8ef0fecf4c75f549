/*
 * test_mintree.c -- the tournament tree: the minimum with the lowest index
 * on ties (the linear scan the least-outstanding-tokens router replaced),
 * after random updates, for sizes that are and are not powers of two; the
 * bounded query against a scan; one leaf; the range queries against scans
 * of every range.
 */
#include "testutil.h"

#include <check.h>
#include <stdlib.h>

#include "mintree.h"

/* The scan the router did: first index of the smallest key. */
static uint32_t scan_min(const uint64_t *k, uint32_t n)
{
	uint32_t i, best = 0;

	for (i = 1; i < n; i++)
		if (k[i] < k[best])
			best = i;
	return best;
}

START_TEST(test_hand)
{
	struct kv_mintree t;
	uint32_t out[5];

	kv_mintree_init(&t, 5, 10);
	ck_assert_uint_eq(t.size, 8);
	ck_assert_uint_eq(kv_mintree_min(&t), 0); /* all equal: lowest index */
	kv_mintree_set(&t, 3, 4);
	ck_assert_uint_eq(kv_mintree_min(&t), 3);
	kv_mintree_set(&t, 1, 4); /* tie with 3: the lower index wins */
	ck_assert_uint_eq(kv_mintree_min(&t), 1);
	kv_mintree_set(&t, 1, 11);
	ck_assert_uint_eq(kv_mintree_min(&t), 3);
	kv_mintree_set(&t, 3, 10); /* back to all 10 but leaf 1 = 11: leaf 0 */
	ck_assert_uint_eq(kv_mintree_min(&t), 0);
	kv_mintree_set(&t, 4, 7);
	kv_mintree_set(&t, 2, 9);
	/* keys 10 11 9 10 7: at most 9 are leaves 2 and 4, in index order */
	ck_assert_uint_eq(kv_mintree_at_most(&t, 9, out), 2);
	ck_assert_uint_eq(out[0], 2);
	ck_assert_uint_eq(out[1], 4);
	ck_assert_uint_eq(kv_mintree_at_most(&t, 6, out), 0);
	ck_assert_uint_eq(kv_mintree_at_most(&t, 10, out), 4); /* 0 2 3 4; padding never */
	ck_assert_uint_eq(out[3], 4);
	kv_mintree_release(&t);
}
END_TEST

START_TEST(test_one_leaf)
{
	struct kv_mintree t;
	uint32_t out[1];

	kv_mintree_init(&t, 1, 5);
	ck_assert_uint_eq(kv_mintree_min(&t), 0);
	kv_mintree_set(&t, 0, 2);
	ck_assert_uint_eq(kv_mintree_at_most(&t, 2, out), 1);
	ck_assert_uint_eq(kv_mintree_at_most(&t, 1, out), 0);
	kv_mintree_release(&t);
}
END_TEST

START_TEST(test_random_vs_scan)
{
	static const uint32_t sizes[] = { 2, 3, 16, 17, 100, 1000, 1024 };
	uint64_t seed = 0x9e3779b97f4a7c15ULL, *k;
	uint32_t *out, z, i, j, n, m, c;
	struct kv_mintree t;

	for (z = 0; z < sizeof(sizes) / sizeof(*sizes); z++) {
		n = sizes[z];
		k = calloc(n, sizeof(*k));
		out = calloc(n, sizeof(*out));
		kv_mintree_init(&t, n, 0);
		for (j = 0; j < 20000; j++) {
			i = (uint32_t)(rng_next(&seed) % n);
			k[i] = rng_next(&seed) % 8; /* small range: many ties */
			kv_mintree_set(&t, i, k[i]);
			EXPECT(kv_mintree_min(&t) == scan_min(k, n), "n %u step %u: min %u, scan %u",
			       n, j, kv_mintree_min(&t), scan_min(k, n));
			if (j % 97 == 0) {
				uint64_t b = rng_next(&seed) % 8;

				m = kv_mintree_at_most(&t, b, out);
				for (i = 0, c = 0; i < n; i++)
					if (k[i] <= b) {
						EXPECT(c < m && out[c] == i, "n %u bound %llu: entry %u",
						       n, (unsigned long long)b, c);
						c++;
					}
				EXPECT(c == m, "n %u: %u found, %u expected", n, m, c);
			}
		}
		kv_mintree_release(&t);
		free(k);
		free(out);
	}
}
END_TEST

/* The range queries against scans of every range, after random updates. */
START_TEST(test_ranges)
{
	static const uint32_t sizes[] = { 1, 2, 3, 5, 8, 13, 33, 64 };
	uint32_t si, i, lo, hi, round, out[64], want[64];
	uint64_t seed = 7;

	for (si = 0; si < sizeof(sizes) / sizeof(sizes[0]); si++) {
		uint32_t n = sizes[si];
		struct kv_mintree t;

		kv_mintree_init(&t, n, 0);
		for (round = 0; round < 3; round++) {
			for (i = 0; i < n; i++) {
				seed = seed * 6364136223846793005ULL + 1442695040888963407ULL;
				kv_mintree_set(&t, i, (seed >> 33) % 6); /* many ties */
			}
			for (lo = 0; lo < n; lo++)
				for (hi = lo + 1; hi <= n; hi++) {
					uint64_t bound = (seed >> 40) % 7;
					uint32_t m = 0, got, r;

					r = lo + scan_min(t.key + lo, hi - lo);
					ck_assert_uint_eq(kv_mintree_range_min(&t, lo, hi), r);
					for (i = lo; i < hi; i++)
						if (t.key[i] <= bound)
							want[m++] = i;
					got = kv_mintree_at_most_in(&t, bound, lo, hi, out);
					ck_assert_uint_eq(got, m);
					for (i = 0; i < m; i++)
						ck_assert_uint_eq(out[i], want[i]);
				}
		}
		kv_mintree_release(&t);
	}
}
END_TEST

static Suite *mintree_suite(void)
{
	Suite *s = suite_create("mintree");
	TCase *tc = tcase_create("core");

	tcase_add_test(tc, test_hand);
	tcase_add_test(tc, test_one_leaf);
	tcase_add_test(tc, test_random_vs_scan);
	tcase_add_test(tc, test_ranges);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return kv_test_run_suite(mintree_suite());
}
