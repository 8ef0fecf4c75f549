/*
 * test_tiers.c -- the KV store below the pool: blocks go down a tier when
 * one is full and are dropped, counted, from the last; a block already
 * below is not duplicated; lookups find the first tier; loads queue on the
 * read link; a shared tier keeps its blocks for every stack; bytes are
 * conserved and occupancy stays within capacity under random traffic; the
 * LRU order (a ring, compacted and grown) is a plain list's.
 */
#include "testutil.h"

#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "tiers.h"

#define BLK 1000ULL /* bytes per block */

/* A stack of tiers holding cap[i] blocks each (0 ends it), 1 GB/s links, latency lat_ns. */
static void stack(struct kv_tiers *s, const uint64_t *cap, kv_ns lat_ns)
{
	uint32_t i;

	memset(s, 0, sizeof(*s));
	for (i = 0; cap[i]; i++) {
		struct kv_tier_cfg c = { .capacity_bytes = cap[i] * BLK, .read_Bps = 1e9,
					 .write_Bps = 1e9, .latency_ns = lat_ns };

		kv_tiers_add(s, kv_tier_new(&c, BLK), i);
	}
}

static void stack_free(struct kv_tiers *s)
{
	uint32_t i;

	for (i = 0; i < s->n; i++)
		kv_tier_free(s->t[i]);
}

/* Capacity 2 then 1: the LRU block moves down, the last tier drops, counted. */
START_TEST(test_demote_and_drop)
{
	static const uint64_t cap[] = { 2, 1, 0 };
	struct kv_tiers s;
	const struct kv_tier_stats *a, *b;

	stack(&s, cap, 0);
	kv_tiers_put(&s, 1, 0);
	kv_tiers_put(&s, 2, 0);
	kv_tiers_put(&s, 3, 0); /* 1 goes down */
	ck_assert_int_eq(kv_tiers_find(&s, 1), 1);
	ck_assert_int_eq(kv_tiers_find(&s, 3), 0);
	kv_tiers_put(&s, 4, 0); /* 2 goes down, 1 is dropped */
	ck_assert_int_eq(kv_tiers_find(&s, 1), -1);
	ck_assert_int_eq(kv_tiers_find(&s, 2), 1);
	a = kv_tier_stats(s.t[0]);
	b = kv_tier_stats(s.t[1]);
	EXPECT(a->in_bytes == 4 * BLK && a->down_bytes == 2 * BLK && a->used_bytes == 2 * BLK &&
	       b->in_bytes == 2 * BLK && b->drop_bytes == BLK && b->used_bytes == BLK,
	       "cpu in %llu down %llu held %llu; ssd in %llu dropped %llu held %llu",
	       (unsigned long long)a->in_bytes, (unsigned long long)a->down_bytes,
	       (unsigned long long)a->used_bytes, (unsigned long long)b->in_bytes,
	       (unsigned long long)b->drop_bytes, (unsigned long long)b->used_bytes);
	ck_assert_uint_eq(s.gpu_out_bytes, 4 * BLK);
	kv_tiers_check(&s);
	stack_free(&s);
}
END_TEST

/* A block moving down into a tier that holds it already is dropped, not duplicated. */
START_TEST(test_dedup)
{
	static const uint64_t cap[] = { 1, 4, 0 };
	struct kv_tiers s;

	stack(&s, cap, 0);
	kv_tiers_put(&s, 7, 0);
	kv_tiers_put(&s, 8, 0); /* 7 down */
	kv_tiers_put(&s, 7, 0); /* 7 again from the GPU (read back, evicted again): 8 down */
	kv_tiers_put(&s, 9, 0); /* 7 down again: already in tier 1 */
	ck_assert_uint_eq(kv_tier_stats(s.t[1])->drop_bytes, BLK);
	ck_assert_uint_eq(kv_tier_stats(s.t[1])->used_bytes, 2 * BLK);
	kv_tiers_put(&s, 9, 0); /* already in tier 0: touched, the copy dropped */
	ck_assert_uint_eq(kv_tier_stats(s.t[0])->drop_bytes, BLK);
	kv_tiers_check(&s);
	stack_free(&s);
}
END_TEST

/* Loads queue on the read link (FIFO) and land latency after they leave. */
START_TEST(test_load_contention)
{
	static const uint64_t cap[] = { 8, 0 };
	struct kv_tiers s;
	kv_ns d1, d2;

	stack(&s, cap, 500);
	kv_tiers_put(&s, 1, 0);
	d1 = kv_tiers_load(&s, 0, 2, 1000); /* 2000 bytes at 1 GB/s: 2000 ns */
	d2 = kv_tiers_load(&s, 0, 1, 1500); /* behind it: starts at 3000 */
	EXPECT(d1 == 1000 + 2000 + 500 && d2 == 3000 + 1000 + 500, "done %llu, %llu",
	       (unsigned long long)d1, (unsigned long long)d2);
	ck_assert_uint_eq(kv_tier_stats(s.t[0])->read_bytes, 3 * BLK);
	ck_assert_uint_eq(kv_tier_stats(s.t[0])->read_busy_ns, 3000);
	stack_free(&s);
}
END_TEST

/* A tier in two stacks (the remote one): what one puts down, the other finds. */
START_TEST(test_shared)
{
	struct kv_tier_cfg c = { .capacity_bytes = 1 * BLK, .read_Bps = 1e9, .write_Bps = 1e9 };
	struct kv_tier_cfg r = { .capacity_bytes = 16 * BLK, .read_Bps = 1e9, .write_Bps = 1e9 };
	struct kv_tiers a, b;
	struct kv_tier *remote = kv_tier_new(&r, BLK);

	memset(&a, 0, sizeof(a));
	memset(&b, 0, sizeof(b));
	kv_tiers_add(&a, kv_tier_new(&c, BLK), 0);
	kv_tiers_add(&a, remote, 2);
	kv_tiers_add(&b, kv_tier_new(&c, BLK), 0);
	kv_tiers_add(&b, remote, 2);
	kv_tiers_put(&a, 5, 0);
	kv_tiers_put(&a, 6, 0); /* 5 to the remote tier */
	ck_assert_int_eq(kv_tiers_find(&b, 5), 1);
	ck_assert_uint_eq(kv_tier_users(remote), 2);
	stack_free(&a);
	ck_assert_uint_eq(kv_tier_users(remote), 1);
	stack_free(&b);
}
END_TEST

/* Two stacks over one shared remote tier: CPU 3 and SSD 5 blocks each, remote 24. */
static void pair(struct kv_tiers *a, struct kv_tiers *b)
{
	struct kv_tier_cfg cpu = { .capacity_bytes = 3 * BLK, .read_Bps = 1e9, .write_Bps = 1e9 };
	struct kv_tier_cfg ssd = { .capacity_bytes = 5 * BLK, .read_Bps = 1e9, .write_Bps = 2e9 };
	struct kv_tier_cfg r = { .capacity_bytes = 24 * BLK, .read_Bps = 1e9, .write_Bps = 1e9 };
	struct kv_tier *remote = kv_tier_new(&r, BLK);

	memset(a, 0, sizeof(*a));
	memset(b, 0, sizeof(*b));
	kv_tiers_add(a, kv_tier_new(&cpu, BLK), 0);
	kv_tiers_add(a, kv_tier_new(&ssd, BLK), 1);
	kv_tiers_add(a, remote, 2);
	kv_tiers_add(b, kv_tier_new(&cpu, BLK), 0);
	kv_tiers_add(b, kv_tier_new(&ssd, BLK), 1);
	kv_tiers_add(b, remote, 2);
}

/*
 * kv_tiers_put_unseen against kv_tiers_put on the same traffic: 3,000 random
 * puts into two stacks sharing a remote tier (keys below 64 reused and
 * looked up; unseen keys new to their stack, each put unseen once by each
 * stack, so the shared tier sees each twice): every counter and busy time
 * of every tier is the same after every step, and so is every lookup of a
 * reused key; an unseen key is never found in a stack's own tiers, and is
 * found in the shared one exactly when the plain run finds it there.
 */
START_TEST(test_unseen)
{
	struct kv_tiers a[2], b[2]; /* [0] with unseen puts, [1] with plain ones */
	uint64_t x = 12345, next = 1000, i;
	uint32_t k, v;

	pair(&a[0], &b[0]);
	pair(&a[1], &b[1]);
	for (i = 0; i < 3000; i++) {
		int which = (int)((x >> 20) & 1), found[2];
		uint64_t key;

		x = x * 6364136223846793005ULL + 1442695040888963407ULL;
		if ((x >> 33) % 3 == 0) { /* a reused key: a plain put, then a lookup in the other stack */
			key = (x >> 40) % 64;
			for (v = 0; v < 2; v++) {
				kv_tiers_put(which ? &b[v] : &a[v], key, (kv_ns)i * 100);
				found[v] = kv_tiers_find(which ? &a[v] : &b[v], (key * 7) % 64);
			}
			ck_assert_int_eq(found[0], found[1]);
		} else { /* a new key, left by its request: in stack a, later in stack b */
			key = next++;
			for (v = 0; v < 2; v++) {
				if (v == 0)
					kv_tiers_put_unseen(&a[v], key, (kv_ns)i * 100);
				else
					kv_tiers_put(&a[v], key, (kv_ns)i * 100);
			}
			if (key % 2 == 0) { /* the same key leaves stack b too (a decode replica) */
				kv_tiers_put_unseen(&b[0], key - 1, (kv_ns)i * 100);
				kv_tiers_put(&b[1], key - 1, (kv_ns)i * 100);
			}
		}
		for (k = 0; k < 3; k++) {
			const struct kv_tier_stats *p = kv_tier_stats(a[0].t[k]), *q = kv_tier_stats(a[1].t[k]);

			ck_assert_msg(p->in_bytes == q->in_bytes && p->down_bytes == q->down_bytes &&
					      p->drop_bytes == q->drop_bytes && p->used_bytes == q->used_bytes &&
					      p->write_busy_ns == q->write_busy_ns,
				      "step %llu tier %u: unseen puts moved other bytes", (unsigned long long)i, k);
			p = kv_tier_stats(b[0].t[k]);
			q = kv_tier_stats(b[1].t[k]);
			ck_assert_msg(p->in_bytes == q->in_bytes && p->drop_bytes == q->drop_bytes &&
					      p->used_bytes == q->used_bytes,
				      "step %llu tier %u of b differs", (unsigned long long)i, k);
		}
		kv_tiers_check(&a[0]);
		kv_tiers_check(&b[0]);
	}
	{
		struct kv_tiers r[2]; /* the shared tier alone, to ask it */

		for (v = 0; v < 2; v++) {
			memset(&r[v], 0, sizeof(r[v]));
			kv_tiers_add(&r[v], a[v].t[2], 2);
		}
		for (i = 1000; i < next; i++)
			ck_assert_int_eq(kv_tiers_find(&r[0], i), kv_tiers_find(&r[1], i));
		for (v = 0; v < 2; v++)
			kv_tier_free(r[v].t[0]);
	}
	for (i = 1000; i < next; i++) {
		int f = kv_tiers_find(&a[0], i);

		ck_assert_msg(f == -1 || f == 2, "unseen key %llu found in tier %d of its stack",
			      (unsigned long long)i, f);
	}
	for (v = 0; v < 2; v++) {
		stack_free(&a[v]);
		stack_free(&b[v]);
	}
}
END_TEST

/* Random puts and lookups: conservation and capacity hold after every step. */
START_TEST(test_conservation)
{
	static const uint64_t cap[] = { 5, 11, 17, 0 };
	struct kv_tiers s;
	unsigned seed = 7;
	uint64_t moved = 0;
	int k;

	stack(&s, cap, 10);
	for (k = 0; k < 20000; k++) {
		uint64_t key = (uint64_t)(rand_r(&seed) % 60);
		int t;

		if (rand_r(&seed) % 3) {
			kv_tiers_put(&s, key, (kv_ns)k);
		} else if ((t = kv_tiers_find(&s, key)) >= 0) {
			kv_tiers_load(&s, t, 1, (kv_ns)k);
		}
		kv_tiers_check(&s); /* in = held + down + dropped; held <= capacity */
	}
	for (k = 0; k + 1 < (int)s.n; k++) {
		const struct kv_tier_stats *a = kv_tier_stats(s.t[k]), *b = kv_tier_stats(s.t[k + 1]);

		EXPECT(a->down_bytes == b->in_bytes, "tier %d sent %llu down, tier %d got %llu", k,
		       (unsigned long long)a->down_bytes, k + 1, (unsigned long long)b->in_bytes);
		moved += a->down_bytes;
	}
	EXPECT(kv_tier_stats(s.t[0])->in_bytes == s.gpu_out_bytes && moved > 0,
	       "tier 0 got %llu of the GPU's %llu", (unsigned long long)kv_tier_stats(s.t[0])->in_bytes,
	       (unsigned long long)s.gpu_out_bytes);
	EXPECT(kv_tier_stats(s.t[2])->drop_bytes > 0, "the last tier dropped nothing");
	stack_free(&s);
}
END_TEST

/* A reference stack: per tier an array of keys in LRU order, least recent first. */
struct ref_tier {
	uint64_t key[64];
	uint32_t n, cap;
};

static int ref_find_in(const struct ref_tier *t, uint64_t key)
{
	uint32_t i;

	for (i = 0; i < t->n; i++)
		if (t->key[i] == key)
			return (int)i;
	return -1;
}

/* Moves position i of t to the most recent end. */
static void ref_touch(struct ref_tier *t, uint32_t i)
{
	uint64_t key = t->key[i];

	memmove(&t->key[i], &t->key[i + 1], (t->n - i - 1) * sizeof(t->key[0]));
	t->key[t->n - 1] = key;
}

static void ref_put(struct ref_tier *r, uint32_t n, uint64_t key)
{
	uint32_t i;

	for (i = 0; i < n; i++) {
		struct ref_tier *t = &r[i];
		int at = ref_find_in(t, key);
		uint64_t out = 0;
		int moves = 0;

		if (at >= 0) {
			ref_touch(t, (uint32_t)at);
			return;
		}
		if (t->n == t->cap) {
			out = t->key[0];
			memmove(&t->key[0], &t->key[1], (t->n - 1) * sizeof(t->key[0]));
			t->n--;
			moves = 1;
		}
		t->key[t->n++] = key;
		if (!moves)
			return;
		key = out;
	}
}

static int ref_find(struct ref_tier *r, uint32_t n, uint64_t key)
{
	uint32_t i;

	for (i = 0; i < n; i++) {
		int at = ref_find_in(&r[i], key);

		if (at >= 0) {
			ref_touch(&r[i], (uint32_t)at);
			return (int)i;
		}
	}
	return -1;
}

/*
 * The LRU order against a plain reference under random puts and lookups:
 * every lookup finds the same tier, every tier holds the same count.  Many
 * touches (a few keys, mostly lookups) make the ring compact and grow.
 */
START_TEST(test_lru_reference)
{
	static const uint64_t cap[] = { 5, 11, 37, 0 };
	struct ref_tier ref[3] = { { .cap = 5 }, { .cap = 11 }, { .cap = 37 } };
	struct kv_tiers s;
	unsigned seed = 11;
	int k;

	stack(&s, cap, 0);
	for (k = 0; k < 200000; k++) {
		uint64_t key = 1000 + (uint64_t)(rand_r(&seed) % (k < 100000 ? 70 : 12));
		uint32_t i;

		if (rand_r(&seed) % 4 == 0) {
			kv_tiers_put(&s, key, (kv_ns)k);
			ref_put(ref, 3, key);
		} else {
			int got = kv_tiers_find(&s, key), want = ref_find(ref, 3, key);

			ck_assert_msg(got == want, "step %d: key %llu found in tier %d, the reference %d", k,
				      (unsigned long long)key, got, want);
		}
		for (i = 0; i < 3; i++)
			ck_assert_msg(kv_tier_stats(s.t[i])->used_bytes == ref[i].n * BLK,
				      "step %d: tier %u holds %llu bytes, the reference %u blocks", k, i,
				      (unsigned long long)kv_tier_stats(s.t[i])->used_bytes, ref[i].n);
	}
	stack_free(&s);
}
END_TEST

static Suite *tiers_suite(void)
{
	Suite *s = suite_create("tiers");
	TCase *tc = tcase_create("core");

	tcase_add_test(tc, test_demote_and_drop);
	tcase_add_test(tc, test_dedup);
	tcase_add_test(tc, test_load_contention);
	tcase_add_test(tc, test_shared);
	tcase_add_test(tc, test_unseen);
	tcase_add_test(tc, test_conservation);
	tcase_add_test(tc, test_lru_reference);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return kv_test_run_suite(tiers_suite());
}
