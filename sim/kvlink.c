/*
 * kvlink.c -- a FIFO KV transfer link (kvlink.h has the model and its
 * invariants).  Exact integer nanoseconds; the ring of in-flight transfers
 * doubles when full.
 */
#include "kvlink.h"

#include <assert.h>
#include <stdlib.h>
#include <string.h>

__extension__ typedef unsigned __int128 u128;

void kv_kvlink_init(struct kv_kvlink *l, uint64_t bw_bytes_s, kv_ns latency_ns,
		  size_t initial_cap)
{
	size_t cap = 4;

	assert(bw_bytes_s > 0);
	while (cap < initial_cap)
		cap *= 2;
	memset(l, 0, sizeof(*l));
	l->bw_bytes_s = bw_bytes_s;
	l->latency_ns = latency_ns;
	l->cap = cap;
	l->ring = kv_xmalloc(cap * sizeof(*l->ring));
}

void kv_kvlink_release(struct kv_kvlink *l)
{
	free(l->ring);
	l->ring = NULL;
	l->cap = l->n = l->head = 0;
}

/*
 * ceil(bytes * 1e9 / bw): the product needs up to 94 bits, so it is taken
 * in 128 bits; a result past 2^64 ns (585 years) saturates at KV_NS_NEVER - 1.
 */
kv_ns kv_kvlink_ser_ns(uint64_t bw_bytes_s, uint64_t bytes)
{
	u128 num = (u128)bytes * KV_NS_PER_S;
	u128 q = (num + bw_bytes_s - 1) / bw_bytes_s;

	assert(bw_bytes_s > 0);
	return q >= (u128)KV_NS_NEVER ? KV_NS_NEVER - 1 : (kv_ns)q;
}

/* a + b, saturating below KV_NS_NEVER (which means "no event"). */
static kv_ns add_ns(kv_ns a, kv_ns b)
{
	return a > KV_NS_NEVER - 1 - b ? KV_NS_NEVER - 1 : a + b;
}

/* Doubles the ring, unrolling it so the oldest transfer is at index 0. */
static void grow(struct kv_kvlink *l)
{
	struct kv_kvlink_slot *r = kv_xmalloc(2 * l->cap * sizeof(*r));
	size_t i;

	for (i = 0; i < l->n; i++)
		r[i] = l->ring[(l->head + i) & (l->cap - 1)];
	free(l->ring);
	l->ring = r;
	l->head = 0;
	l->cap *= 2;
}

/* e_k for a transfer starting at start_ns (kvlink.h): whole, or layer-wise pieces. */
static kv_ns end_ns(const struct kv_kvlink *l, const struct kv_kvlink_xfer *x, kv_ns start_ns)
{
	kv_ns e = add_ns(start_ns, kv_kvlink_ser_ns(l->bw_bytes_s, x->bytes));
	uint64_t last_piece;

	if (x->pieces <= 1)
		return e;
	last_piece = x->bytes - (uint64_t)(x->pieces - 1) * (x->bytes / x->pieces);
	return KV_MAX(e, add_ns(x->last_ns, kv_kvlink_ser_ns(l->bw_bytes_s, last_piece)));
}

/* Counts one submission in the link's counters. */
static void count(struct kv_kvlink *l, const struct kv_kvlink_xfer *x,
		  const struct kv_kvlink_times *t)
{
	kv_ns wait = t->start_ns - x->first_ns;

	l->n_submitted++;
	l->bytes_in += x->bytes;
	l->busy_ns += kv_kvlink_ser_ns(l->bw_bytes_s, x->bytes);
	l->queue_ns += wait;
	l->max_queue_ns = KV_MAX(l->max_queue_ns, wait);
	l->xfer_ns += t->done_ns - x->last_ns;
}

void kv_kvlink_submit(struct kv_kvlink *l, const struct kv_kvlink_xfer *x,
		    struct kv_kvlink_times *out)
{
	struct kv_kvlink_times t;

	assert(x->first_ns <= x->last_ns);
	assert(x->pieces > 1 || x->first_ns == x->last_ns);
	KV_CHECK(x->last_ns >= l->last_submit_ns,
		 "link submission at %llu ns after one at %llu ns",
		 (unsigned long long)x->last_ns, (unsigned long long)l->last_submit_ns);
	l->last_submit_ns = x->last_ns;
	t.start_ns = KV_MAX(x->first_ns, l->free_ns);
	t.end_ns = end_ns(l, x, t.start_ns);
	t.done_ns = add_ns(t.end_ns, l->latency_ns);
	l->free_ns = t.end_ns;
	if (l->n == l->cap)
		grow(l);
	l->ring[(l->head + l->n) & (l->cap - 1)] =
		(struct kv_kvlink_slot){ .tag = x->tag, .bytes = x->bytes, .done_ns = t.done_ns };
	l->n++;
	l->max_in_flight = KV_MAX(l->max_in_flight, l->n);
	count(l, x, &t);
	if (out)
		*out = t;
}

kv_ns kv_kvlink_submit_untracked(struct kv_kvlink *l, uint64_t bytes, kv_ns ser_ns, kv_ns now)
{
	kv_ns start, done;

	assert(ser_ns == kv_kvlink_ser_ns(l->bw_bytes_s, bytes));
	KV_CHECK(now >= l->last_submit_ns, "link submission at %llu ns after one at %llu ns",
		 (unsigned long long)now, (unsigned long long)l->last_submit_ns);
	l->last_submit_ns = now;
	start = KV_MAX(now, l->free_ns);
	l->free_ns = add_ns(start, ser_ns);
	done = add_ns(l->free_ns, l->latency_ns);
	l->n_submitted++;
	l->n_done++;
	l->bytes_in += bytes;
	l->bytes_out += bytes;
	l->busy_ns += ser_ns;
	l->queue_ns += start - now;
	l->max_queue_ns = KV_MAX(l->max_queue_ns, start - now);
	l->xfer_ns += done - now;
	return done;
}

kv_ns kv_kvlink_next_done_ns(const struct kv_kvlink *l)
{
	return l->n ? l->ring[l->head].done_ns : KV_NS_NEVER;
}

int kv_kvlink_pop(struct kv_kvlink *l, kv_ns now_ns, uint64_t *tag, uint64_t *bytes)
{
	const struct kv_kvlink_slot *s;

	if (!l->n || l->ring[l->head].done_ns > now_ns)
		return 0;
	s = &l->ring[l->head];
	if (tag)
		*tag = s->tag;
	if (bytes)
		*bytes = s->bytes;
	l->bytes_out += s->bytes;
	l->n_done++;
	l->head = (l->head + 1) & (l->cap - 1);
	l->n--;
	return 1;
}

size_t kv_kvlink_drop_all(struct kv_kvlink *l)
{
	size_t n = l->n, i;

	for (i = 0; i < n; i++)
		l->bytes_dropped += l->ring[(l->head + i) & (l->cap - 1)].bytes;
	l->n_dropped += n;
	l->n = 0;
	l->head = 0;
	return n;
}

double kv_kvlink_utilisation(const struct kv_kvlink *l, kv_ns horizon_ns)
{
	return horizon_ns ? (double)l->busy_ns / (double)horizon_ns : 0.0;
}

void kv_kvlink_check(const struct kv_kvlink *l)
{
	uint64_t flying = 0;
	kv_ns prev = 0;
	size_t i;

	for (i = 0; i < l->n; i++) {
		const struct kv_kvlink_slot *s = &l->ring[(l->head + i) & (l->cap - 1)];

		KV_CHECK(s->done_ns >= prev, "link: transfer %zu done at %llu ns before %llu ns",
			 i, (unsigned long long)s->done_ns, (unsigned long long)prev);
		prev = s->done_ns;
		flying += s->bytes;
	}
	KV_CHECK(l->bytes_in == l->bytes_out + l->bytes_dropped + flying,
		 "link: %llu bytes in != %llu out + %llu dropped + %llu in flight",
		 (unsigned long long)l->bytes_in, (unsigned long long)l->bytes_out,
		 (unsigned long long)l->bytes_dropped, (unsigned long long)flying);
	KV_CHECK(l->n_submitted == l->n_done + l->n_dropped + l->n,
		 "link: %llu transfers in != %llu done + %llu dropped + %zu in flight",
		 (unsigned long long)l->n_submitted, (unsigned long long)l->n_done,
		 (unsigned long long)l->n_dropped, l->n);
}
