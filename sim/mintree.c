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
