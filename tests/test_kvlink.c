/*
 * test_kvlink.c -- the KV transfer link: exact serialisation time, FIFO
 * order, contention, pipelined latency, layer-wise streaming, ring growth,
 * byte conservation under random load and drops; an untracked transfer
 * (nobody waits for it) times and counts as a submitted one.
 */
#include "testutil.h"

#include <check.h>
#include <math.h>
#include <stdlib.h>

#include "kvlink.h"

#define GBS 1000000000ULL /* 1 GB/s in bytes/s */

/* Submits a whole (one piece) transfer ready at t_ns; returns its times. */
static struct kv_kvlink_times put(struct kv_kvlink *l, kv_ns t_ns, uint64_t bytes, uint64_t tag)
{
	struct kv_kvlink_xfer x = { .bytes = bytes, .first_ns = t_ns, .last_ns = t_ns,
				  .pieces = 1, .tag = tag };
	struct kv_kvlink_times t;

	kv_kvlink_submit(l, &x, &t);
	return t;
}

/* ser(B) rounds up, is exact for large products and saturates. */
START_TEST(test_ser_exact)
{
	ck_assert_uint_eq(kv_kvlink_ser_ns(GBS, 1), 1);
	ck_assert_uint_eq(kv_kvlink_ser_ns(GBS, 1000), 1000);
	ck_assert_uint_eq(kv_kvlink_ser_ns(3 * GBS, 1000), 334);
	ck_assert_uint_eq(kv_kvlink_ser_ns(50 * GBS, 0), 0);
	/* 100 GB at 25 GB/s: 4 s; the product 1e20 overflows 64 bits */
	ck_assert_uint_eq(kv_kvlink_ser_ns(25 * GBS, 100 * GBS), 4 * KV_NS_PER_S);
	ck_assert_uint_eq(kv_kvlink_ser_ns(1, UINT64_MAX), KV_NS_NEVER - 1);
}
END_TEST

/* One transfer on an idle link: start = ready, done = start + L + ser. */
START_TEST(test_single)
{
	struct kv_kvlink l;
	struct kv_kvlink_times t;
	uint64_t tag = 0, bytes = 0;

	kv_kvlink_init(&l, 10 * GBS, 20000, 0);
	t = put(&l, 1000, 5000000, 7); /* 5 MB at 10 GB/s: 500 us */
	EXPECT(t.start_ns == 1000 && t.end_ns == 501000 && t.done_ns == 521000,
	       "start %llu end %llu done %llu", (unsigned long long)t.start_ns,
	       (unsigned long long)t.end_ns, (unsigned long long)t.done_ns);
	ck_assert_uint_eq(kv_kvlink_next_done_ns(&l), 521000);
	ck_assert_int_eq(kv_kvlink_pop(&l, 520999, &tag, &bytes), 0);
	ck_assert_int_eq(kv_kvlink_pop(&l, 521000, &tag, &bytes), 1);
	ck_assert_uint_eq(tag, 7);
	ck_assert_uint_eq(bytes, 5000000);
	ck_assert_uint_eq(kv_kvlink_next_done_ns(&l), KV_NS_NEVER);
	ck_assert_uint_eq(l.busy_ns, 500000);
	ck_assert_uint_eq(l.queue_ns, 0);
	kv_kvlink_check(&l);
	kv_kvlink_release(&l);
}
END_TEST

/*
 * Three transfers submitted at once contend: each starts when the previous
 * one's last byte leaves (latency does not hold the link), pops in order.
 */
START_TEST(test_fifo_contention)
{
	struct kv_kvlink l;
	struct kv_kvlink_times t[3];
	uint64_t tag, i;

	kv_kvlink_init(&l, GBS, 5000, 0);
	t[0] = put(&l, 0, 100000, 10); /* 100 us each */
	t[1] = put(&l, 0, 100000, 11);
	t[2] = put(&l, 50000, 100000, 12);
	for (i = 0; i < 3; i++)
		EXPECT(t[i].start_ns == i * 100000 && t[i].done_ns == (i + 1) * 100000 + 5000,
		       "transfer %llu: start %llu done %llu", (unsigned long long)i,
		       (unsigned long long)t[i].start_ns, (unsigned long long)t[i].done_ns);
	/* queueing: 0 + 100 us + (200 - 50) us */
	ck_assert_uint_eq(l.queue_ns, 250000);
	ck_assert_uint_eq(l.max_queue_ns, 150000);
	ck_assert_uint_eq(l.max_in_flight, 3);
	ck_assert_int_eq(kv_kvlink_pop(&l, KV_NS_NEVER - 1, &tag, NULL), 1);
	ck_assert_uint_eq(tag, 10);
	ck_assert_int_eq(kv_kvlink_pop(&l, KV_NS_NEVER - 1, &tag, NULL), 1);
	ck_assert_uint_eq(tag, 11);
	ck_assert_int_eq(kv_kvlink_pop(&l, KV_NS_NEVER - 1, &tag, NULL), 1);
	ck_assert_uint_eq(tag, 12);
	ck_assert_int_eq(kv_kvlink_pop(&l, KV_NS_NEVER - 1, &tag, NULL), 0);
	/* a transfer after an idle gap does not queue */
	t[0] = put(&l, 10000000, 1000, 13);
	ck_assert_uint_eq(t[0].start_ns, 10000000);
	EXPECT(fabs(kv_kvlink_utilisation(&l, 20000000) - 0.01505) < 1e-12, "utilisation %g",
	       kv_kvlink_utilisation(&l, 20000000));
	kv_kvlink_check(&l);
	kv_kvlink_release(&l);
}
END_TEST

/*
 * Layer-wise: 4 pieces of 1 MB over a prefill of 4 ms (first layer at 1 ms,
 * last at 4 ms) on a 1 GB/s link.  Pieces take 1 ms each, so the link keeps
 * pace with the layers: the last piece leaves 1 ms after the last layer.
 * Whole, the same transfer would start at 4 ms and end at 8 ms.
 */
START_TEST(test_layerwise)
{
	struct kv_kvlink l;
	struct kv_kvlink_xfer x = { .bytes = 4000000, .first_ns = 1000000,
				  .last_ns = 4000000, .pieces = 4, .tag = 1 };
	struct kv_kvlink_times t;

	kv_kvlink_init(&l, GBS, 0, 0);
	kv_kvlink_submit(&l, &x, &t);
	EXPECT(t.start_ns == 1000000 && t.end_ns == 5000000, "start %llu end %llu",
	       (unsigned long long)t.start_ns, (unsigned long long)t.end_ns);
	/* a slow link (0.5 GB/s) is the bottleneck: start + ser(B) */
	kv_kvlink_release(&l);
	kv_kvlink_init(&l, GBS / 2, 0, 0);
	kv_kvlink_submit(&l, &x, &t);
	ck_assert_uint_eq(t.end_ns, 1000000 + 8000000);
	/* the next layer-wise transfer queues behind the link, not behind its layers */
	x.first_ns = 4000000;
	x.last_ns = 5000000;
	x.bytes = 1000000;
	kv_kvlink_submit(&l, &x, &t);
	EXPECT(t.start_ns == 9000000 && t.end_ns == 11000000, "start %llu end %llu",
	       (unsigned long long)t.start_ns, (unsigned long long)t.end_ns);
	kv_kvlink_check(&l);
	kv_kvlink_release(&l);
}
END_TEST

/* The ring grows past its initial capacity and keeps FIFO order. */
START_TEST(test_growth)
{
	struct kv_kvlink l;
	uint64_t tag, i, popped = 0;

	kv_kvlink_init(&l, GBS, 1, 2);
	for (i = 0; i < 100; i++) {
		put(&l, i, 1000, i);
		if (i % 3 == 0 && kv_kvlink_pop(&l, i * 1000, &tag, NULL)) {
			EXPECT(tag == popped, "popped tag %llu, expected %llu",
			       (unsigned long long)tag, (unsigned long long)popped);
			popped++;
		}
	}
	while (kv_kvlink_pop(&l, KV_NS_NEVER - 1, &tag, NULL)) {
		EXPECT(tag == popped, "popped tag %llu, expected %llu",
		       (unsigned long long)tag, (unsigned long long)popped);
		popped++;
	}
	ck_assert_uint_eq(popped, 100);
	ck_assert_uint_ge(l.cap, 64);
	kv_kvlink_check(&l);
	kv_kvlink_release(&l);
}
END_TEST

/*
 * Random load: every byte submitted is delivered or dropped, completions
 * never run backwards, and a popped transfer is never early.
 */
START_TEST(test_conservation)
{
	struct kv_kvlink l;
	uint64_t s = 12345, delivered = 0, submitted = 0, bytes, tag;
	kv_ns now = 0, last_done = 0;
	int i;

	kv_kvlink_init(&l, 7 * GBS + 3, 1234, 0);
	for (i = 0; i < 20000; i++) {
		struct kv_kvlink_xfer x = { .bytes = rng_next(&s) % 50000000, .tag = (uint64_t)i };

		now += rng_next(&s) % 2000000;
		x.pieces = (uint32_t)(rng_next(&s) % 3 ? 1 : 1 + rng_next(&s) % 80);
		x.last_ns = now;
		x.first_ns = x.pieces > 1 ? now - rng_next(&s) % (now + 1) : now;
		kv_kvlink_submit(&l, &x, NULL);
		submitted += x.bytes;
		while (kv_kvlink_next_done_ns(&l) <= now) {
			kv_ns d = kv_kvlink_next_done_ns(&l);

			ck_assert_int_eq(kv_kvlink_pop(&l, now, &tag, &bytes), 1);
			EXPECT(d >= last_done, "done %llu before %llu", (unsigned long long)d,
			       (unsigned long long)last_done);
			last_done = d;
			delivered += bytes;
		}
		if (i % 1000 == 0)
			kv_kvlink_check(&l);
	}
	bytes = 0;
	for (size_t k = 0; k < l.n; k++)
		bytes += l.ring[(l.head + k) & (l.cap - 1)].bytes;
	ck_assert_uint_eq(kv_kvlink_drop_all(&l), l.n_dropped);
	EXPECT(l.bytes_dropped == bytes && delivered + bytes == submitted &&
	       l.bytes_in == submitted && l.bytes_out == delivered,
	       "submitted %llu delivered %llu dropped %llu (in flight %llu)",
	       (unsigned long long)submitted, (unsigned long long)delivered,
	       (unsigned long long)l.bytes_dropped, (unsigned long long)bytes);
	kv_kvlink_check(&l);
	ck_assert_uint_eq(kv_kvlink_next_done_ns(&l), KV_NS_NEVER);
	kv_kvlink_release(&l);
}
END_TEST

/*
 * 20,000 random whole transfers, bursts and gaps, on two links: one tracked
 * (submitted, popped as they land), one untracked: the same done times and
 * the same counters once the tracked one has delivered everything (but
 * max_in_flight, which the untracked link does not count); both check.
 */
START_TEST(test_untracked)
{
	struct kv_kvlink a, b;
	kv_ns now = 0;
	uint64_t bytes = 8u << 20;
	kv_ns ser = kv_kvlink_ser_ns(3 * GBS, bytes);
	int i;

	kv_kvlink_init(&a, 3 * GBS, 5000, 4);
	kv_kvlink_init(&b, 3 * GBS, 5000, 4);
	srand(7);
	for (i = 0; i < 20000; i++) {
		struct kv_kvlink_times t;

		now += rand() % 4 ? 0 : (kv_ns)(rand() % 20000000);
		while (kv_kvlink_pop(&a, now, NULL, NULL))
			;
		t = put(&a, now, bytes, (uint64_t)i);
		ck_assert_uint_eq(kv_kvlink_submit_untracked(&b, bytes, ser, now), t.done_ns);
		ck_assert_uint_eq(b.free_ns, a.free_ns);
		ck_assert_uint_eq(b.n, 0);
	}
	while (kv_kvlink_pop(&a, KV_NS_NEVER - 1, NULL, NULL))
		;
	ck_assert_uint_eq(b.busy_ns, a.busy_ns);
	ck_assert_uint_eq(b.queue_ns, a.queue_ns);
	ck_assert_uint_eq(b.max_queue_ns, a.max_queue_ns);
	ck_assert_uint_eq(b.xfer_ns, a.xfer_ns);
	ck_assert_uint_eq(b.bytes_in, a.bytes_in);
	ck_assert_uint_eq(b.bytes_out, a.bytes_out);
	ck_assert_uint_eq(b.n_submitted, a.n_submitted);
	ck_assert_uint_eq(b.n_done, a.n_done);
	ck_assert_uint_gt(a.max_queue_ns, 0); /* transfers did queue */
	kv_kvlink_check(&a);
	kv_kvlink_check(&b);
	kv_kvlink_release(&a);
	kv_kvlink_release(&b);
}
END_TEST

static Suite *kvlink_suite(void)
{
	Suite *s = suite_create("kvlink");
	TCase *tc = tcase_create("core");

	tcase_add_test(tc, test_ser_exact);
	tcase_add_test(tc, test_single);
	tcase_add_test(tc, test_fifo_contention);
	tcase_add_test(tc, test_layerwise);
	tcase_add_test(tc, test_growth);
	tcase_add_test(tc, test_conservation);
	tcase_add_test(tc, test_untracked);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return kv_test_run_suite(kvlink_suite());
}
