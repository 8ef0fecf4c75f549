/* mintree.c -- a tournament tree over 64-bit keys; see mintree.h. */
#include "mintree.h"

#include <stdlib.h>

void kv_mintree_init(struct kv_mintree *t, uint32_t n, uint64_t init)
{
	uint32_t i;

	KV_CHECK(n > 0, "kv_mintree_init: %u leaves", n);
	t->n = n;
	t->size = 1;
	while (t->size < n)
		t->size *= 2;
	t->key = kv_xmalloc((size_t)t->size * sizeof(*t->key));
	t->win = kv_xmalloc((size_t)t->size * sizeof(*t->win));
	for (i = 0; i < t->size; i++)
		t->key[i] = i < n ? init : UINT64_MAX;
	t->win[0] = 0; /* unused */
	for (i = t->size; i-- > 1;) {
		uint32_t a = kv__mintree_win(t, 2 * i), b = kv__mintree_win(t, 2 * i + 1);

		t->win[i] = t->key[b] < t->key[a] ? b : a;
	}
}

void kv_mintree_release(struct kv_mintree *t)
{
	free(t->key);
	free(t->win);
	t->key = NULL;
	t->win = NULL;
	t->n = t->size = 0;
}

/* Appends the leaves under node c with key <= bound, left to right. */
static uint32_t collect(const struct kv_mintree *t, uint32_t c, uint64_t bound, uint32_t *out,
			uint32_t m)
{
	if (t->key[kv__mintree_win(t, c)] > bound)
		return m;
	if (c >= t->size) {
		out[m] = c - t->size;
		return m + 1;
	}
	m = collect(t, 2 * c, bound, out, m);
	return collect(t, 2 * c + 1, bound, out, m);
}

uint32_t kv_mintree_at_most(const struct kv_mintree *t, uint64_t bound, uint32_t *out)
{
	return collect(t, 1, bound, out, 0);
}

/* Whether leaf a's key beats leaf b's: smaller, or equal at a lower index. */
static inline int beats(const struct kv_mintree *t, uint32_t a, uint32_t b)
{
	return t->key[a] < t->key[b] || (t->key[a] == t->key[b] && a < b);
}

uint32_t kv_mintree_range_min(const struct kv_mintree *t, uint32_t lo, uint32_t hi)
{
	uint32_t l = lo + t->size, r = hi + t->size, best = lo, w;

	KV_CHECK(lo < hi && hi <= t->n, "kv_mintree_range_min: [%u, %u) of %u leaves", lo, hi, t->n);
	/* the nodes that tile [lo, hi), bottom up (each node's winner covers its leaves) */
	for (; l < r; l >>= 1, r >>= 1) {
		if (l & 1) {
			w = kv__mintree_win(t, l++);
			if (beats(t, w, best))
				best = w;
		}
		if (r & 1) {
			w = kv__mintree_win(t, --r);
			if (beats(t, w, best))
				best = w;
		}
	}
	return best;
}

/* collect() over node c, whose leaves are [a, b), clipped to [lo, hi). */
static uint32_t collect_in(const struct kv_mintree *t, uint32_t c, uint32_t a, uint32_t b,
			   uint64_t bound, uint32_t lo, uint32_t hi, uint32_t *out, uint32_t m)
{
	uint32_t mid;

	if (b <= lo || a >= hi || t->key[kv__mintree_win(t, c)] > bound)
		return m;
	if (c >= t->size) {
		out[m] = c - t->size;
		return m + 1;
	}
	mid = a + (b - a) / 2;
	m = collect_in(t, 2 * c, a, mid, bound, lo, hi, out, m);
	return collect_in(t, 2 * c + 1, mid, b, bound, lo, hi, out, m);
}

uint32_t kv_mintree_at_most_in(const struct kv_mintree *t, uint64_t bound, uint32_t lo,
			       uint32_t hi, uint32_t *out)
{
	return collect_in(t, 1, 0, t->size, bound, lo, hi, out, 0); /* node 1 is leaf 0 when size is 1 */
}
