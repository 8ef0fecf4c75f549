/*
 * test_heap.c -- the event queue: order by (time, insertion), FIFO ties,
 * growth, peek, empty pop.
 */
#include "testutil.h"

#include <check.h>
#include <stdlib.h>

#include "heap.h"

/* Pops one event into *e, which must be there (i numbers the pop). */
static void pop_one(struct kv_heap *h, struct kv_event *e, size_t i)
{
	int got = kv_heap_pop(h, e);

	EXPECT(got == 1, "pop %zu: returned %d, %zu queued", i, got, h->n);
}

/*
 * Pops everything and checks the pops are sorted by (t_ns, seq), ties in
 * insertion order (arg holds the insertion index), and number n.
 */
static void drain_sorted(struct kv_heap *h, size_t n)
{
	struct kv_event e, prev = { 0 };
	size_t i;

	for (i = 0; i < n; i++) {
		pop_one(h, &e, i);
		if (i == 0)
			goto next;
		EXPECT(prev.t_ns <= e.t_ns,
			      "pop %zu: t_ns %llu after %llu", i,
			      (unsigned long long)e.t_ns, (unsigned long long)prev.t_ns);
		if (prev.t_ns == e.t_ns)
			EXPECT(prev.seq < e.seq && prev.arg < e.arg,
				      "pop %zu: tie at t_ns %llu out of insertion order: "
				      "seq %llu (arg %llu) after seq %llu (arg %llu)",
				      i, (unsigned long long)e.t_ns,
				      (unsigned long long)e.seq, (unsigned long long)e.arg,
				      (unsigned long long)prev.seq, (unsigned long long)prev.arg);
next:
		prev = e;
	}
	EXPECT(h->n == 0, "%zu events left after %zu pops", h->n, n);
	ck_assert_int_eq(kv_heap_pop(h, &e), 0);
}

/* 1000 events at one time, interleaved with earlier and later ones: FIFO. */
START_TEST(test_fifo_ties)
{
	const kv_ns tie = 5000;
	struct kv_heap h;
	struct kv_event e;
	uint64_t s = 42, idx = 0, tie_arg = 0;
	int i, n_before = 0;

	kv_heap_init(&h, 8);
	for (i = 0; i < 1000; i++) {
		kv_ns other = rng_next(&s) % (2 * tie);

		kv_heap_push(&h, tie, 1, (uint32_t)i, idx++);
		if (other != tie)
			kv_heap_push(&h, other, 2, 0, idx++);
		n_before += other < tie;
	}
	for (i = 0; i < n_before; i++) {
		pop_one(&h, &e, (size_t)i);
		EXPECT(e.kind == 2 && e.t_ns < tie,
			      "pop %d: kind %u t_ns %llu, expected an event before %llu",
			      i, e.kind, (unsigned long long)e.t_ns, (unsigned long long)tie);
	}
	for (i = 0; i < 1000; i++) {
		pop_one(&h, &e, (size_t)i);
		EXPECT(e.t_ns == tie && e.kind == 1 && e.target == (uint32_t)i,
			      "tie pop %d: got t_ns %llu kind %u target %u, expected target %d",
			      i, (unsigned long long)e.t_ns, e.kind, e.target, i);
		EXPECT(i == 0 || e.arg > tie_arg, "tie pop %d: arg %llu <= %llu",
			      i, (unsigned long long)e.arg, (unsigned long long)tie_arg);
		tie_arg = e.arg;
	}
	while (kv_heap_pop(&h, &e))
		EXPECT(e.kind == 2 && e.t_ns > tie, "late pop: kind %u t_ns %llu",
			      e.kind, (unsigned long long)e.t_ns);
	kv_heap_release(&h);
}
END_TEST

/* Random times, many ties: pops are sorted, ties in insertion order. */
START_TEST(test_random_sorted)
{
	const size_t n = 100000;
	struct kv_heap h;
	uint64_t s = 0x9e3779b97f4a7c15ULL;
	size_t i;

	kv_heap_init(&h, 0);
	for (i = 0; i < n; i++)
		kv_heap_push(&h, rng_next(&s) % 5000, 0, 0, i);
	drain_sorted(&h, n);
	/* Full 64-bit range, including the extremes. */
	kv_heap_push(&h, KV_NS_NEVER, 0, 0, 0);
	kv_heap_push(&h, 0, 0, 0, 1);
	for (i = 2; i < n; i++)
		kv_heap_push(&h, rng_next(&s), 0, 0, i);
	drain_sorted(&h, n);
	kv_heap_release(&h);
}
END_TEST

/* Interleaved pops and pushes, as the engine does (hold model): monotone. */
START_TEST(test_hold_model)
{
	struct kv_heap h;
	struct kv_event e;
	uint64_t s = 7;
	kv_ns now = 0;
	size_t i;

	kv_heap_init(&h, 16);
	for (i = 0; i < 1000; i++)
		kv_heap_push(&h, rng_next(&s) % 1000, 0, 0, 0);
	for (i = 0; i < 200000; i++) {
		pop_one(&h, &e, (size_t)i);
		EXPECT(e.t_ns >= now, "step %zu: time went back from %llu to %llu",
			      i, (unsigned long long)now, (unsigned long long)e.t_ns);
		now = e.t_ns;
		kv_heap_push(&h, now + rng_next(&s) % 1000, 0, 0, 0);
		if (i % 3 == 0)
			kv_heap_push(&h, now, 0, 0, 0); /* same time: must pop after e */
		if (i % 3 == 1)
			pop_one(&h, &e, (size_t)i);
		EXPECT(e.t_ns >= now, "step %zu: popped %llu before now %llu", i,
			      (unsigned long long)e.t_ns, (unsigned long long)now);
		now = e.t_ns;
	}
	kv_heap_release(&h);
}
END_TEST

/* Capacity 1 grows by doubling past its initial size, contents intact. */
START_TEST(test_growth)
{
	const size_t n = 10000;
	struct kv_heap h;
	size_t i;

	kv_heap_init(&h, 1);
	ck_assert_uint_eq(h.cap, 1);
	for (i = 0; i < n; i++)
		kv_heap_push(&h, n - i, (uint32_t)i, 0, i);
	EXPECT(h.n == n && h.cap >= n, "n %zu cap %zu after %zu pushes", h.n, h.cap, n);
	ck_assert_uint_eq(h.next_seq, n);
	for (i = 0; i < n; i++) {
		struct kv_event e;

		pop_one(&h, &e, (size_t)i);
		EXPECT(e.t_ns == i + 1 && e.kind == n - 1 - i,
			      "pop %zu: t_ns %llu kind %u", i, (unsigned long long)e.t_ns,
			      e.kind);
	}
	kv_heap_release(&h);
}
END_TEST

/* peek returns the earliest without removing it; NULL when empty. */
START_TEST(test_peek)
{
	struct kv_heap h;
	const struct kv_event *p;
	struct kv_event e;

	kv_heap_init(&h, 4);
	ck_assert_ptr_null(kv_heap_peek(&h));
	kv_heap_push(&h, 30, 3, 0, 0);
	kv_heap_push(&h, 10, 1, 0, 0);
	kv_heap_push(&h, 20, 2, 0, 0);
	kv_heap_push(&h, 10, 4, 0, 0);
	p = kv_heap_peek(&h);
	ck_assert_ptr_nonnull(p);
	EXPECT(p->t_ns == 10 && p->kind == 1 && p->seq == 1,
		      "peek: t_ns %llu kind %u seq %llu", (unsigned long long)p->t_ns,
		      p->kind, (unsigned long long)p->seq);
	ck_assert_uint_eq(h.n, 4);
	ck_assert_int_eq(kv_heap_pop(&h, &e), 1);
	ck_assert_uint_eq(e.kind, 1);
	p = kv_heap_peek(&h);
	EXPECT(p->t_ns == 10 && p->kind == 4, "peek after pop: t_ns %llu kind %u",
		      (unsigned long long)p->t_ns, p->kind);
	kv_heap_release(&h);
}
END_TEST

/* pop on an empty heap returns 0 and leaves *out alone, also after draining. */
START_TEST(test_empty_pop)
{
	struct kv_heap h;
	struct kv_event e = { .t_ns = 123, .kind = 9 };

	kv_heap_init(&h, 0);
	ck_assert_int_eq(kv_heap_pop(&h, &e), 0);
	EXPECT(e.t_ns == 123 && e.kind == 9, "empty pop wrote *out");
	kv_heap_push(&h, 1, 0, 0, 0);
	ck_assert_int_eq(kv_heap_pop(&h, &e), 1);
	ck_assert_int_eq(kv_heap_pop(&h, &e), 0);
	ck_assert_uint_eq(h.n, 0);
	ck_assert_ptr_null(kv_heap_peek(&h));
	kv_heap_release(&h);
}
END_TEST

static Suite *heap_suite(void)
{
	Suite *s = suite_create("heap");
	TCase *tc = tcase_create("core");

	tcase_add_test(tc, test_fifo_ties);
	tcase_add_test(tc, test_random_sorted);
	tcase_add_test(tc, test_hold_model);
	tcase_add_test(tc, test_growth);
	tcase_add_test(tc, test_peek);
	tcase_add_test(tc, test_empty_pop);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return kv_test_run_suite(heap_suite());
}
