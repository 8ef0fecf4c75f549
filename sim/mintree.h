/*
 * mintree.h -- a tournament tree (winner tree) over n 64-bit keys: the
 * index of the smallest key in O(1), a key change in O(log n), and every
 * index whose key is <= a bound in O(m log n) for m such indices.
 *
 * The model is the classical winner tree of tournament sorting (Knuth,
 * TAOCP vol. 3, 5.4.1): leaves are the keys padded to a power of two with
 * UINT64_MAX; each internal node holds the index of the smaller key of its
 * two children, the left one on a tie.  Since the left subtree holds the
 * lower indices, the root holds the lowest index among the minima: exactly
 * what a linear scan `if (key[i] < key[best]) best = i` returns.  The
 * engine keeps one over the replicas' outstanding tokens (the
 * least-outstanding-tokens router's pick), one over lower bounds of those
 * counts and one over when each bound lapses (which replicas an arrival
 * must bring up: replica.h kv__out_bound), so that an arrival costs
 * O(log replicas) per replica it touches instead of two scans of every
 * replica; the range queries serve a range of them (a disaggregated
 * group's prefill replicas).  Memory: 12 bytes per leaf, allocated at
 * init; updates and queries allocate nothing.
 */
#ifndef KV_MINTREE_H
#define KV_MINTREE_H

#include "kv_common.h"

struct kv_mintree {
	uint64_t *key; /* size keys; leaves past n hold UINT64_MAX (callers read key[i], i < n) */
	uint32_t *win; /* win[1..size): the index of the winning leaf of each internal node */
	uint32_t n; /* leaves in use */
	uint32_t size; /* leaves allocated: the least power of two >= n (1 when n <= 1) */
};

/* Builds a tree of n leaves, every key `init`.  Aborts on n == 0. */
void kv_mintree_init(struct kv_mintree *t, uint32_t n, uint64_t init);
void kv_mintree_release(struct kv_mintree *t);

/* Index of the smallest key, the lowest index among equals. */
static inline uint32_t kv_mintree_min(const struct kv_mintree *t)
{
	return t->size > 1 ? t->win[1] : 0;
}

/* Winner of node c (a leaf when c >= size). */
static inline uint32_t kv__mintree_win(const struct kv_mintree *t, uint32_t c)
{
	return c >= t->size ? c - t->size : t->win[c];
}

/*
 * Sets key[i] = v and replays the matches on i's path to the root, only as
 * far as they change: a smaller key climbs while it beats the winners it
 * meets, a larger one is replayed only at the nodes i was winning.
 */
static inline void kv_mintree_set(struct kv_mintree *t, uint32_t i, uint64_t v)
{
	uint64_t *key = t->key, old = key[i];
	uint32_t p = (i + t->size) >> 1;

	if (old == v)
		return;
	key[i] = v;
	if (v < old) {
		for (; p; p >>= 1) {
			uint32_t w = t->win[p];

			if (w != i) {
				if (key[w] < v || (key[w] == v && w < i))
					break;
				t->win[p] = i;
			}
		}
		return;
	}
	for (; p && t->win[p] == i; p >>= 1) {
		uint32_t a = kv__mintree_win(t, 2 * p), b = kv__mintree_win(t, 2 * p + 1);

		t->win[p] = key[b] < key[a] ? b : a;
	}
}

/*
 * Writes to out, in increasing order, every index whose key is <= bound;
 * returns how many (out holds n entries at most).
 */
uint32_t kv_mintree_at_most(const struct kv_mintree *t, uint64_t bound, uint32_t *out);
/*
 * The index of the smallest key among leaves lo..hi-1 (lo < hi <= n), the
 * lowest index among equals, as a scan of that range returns it: O(log n).
 */
uint32_t kv_mintree_range_min(const struct kv_mintree *t, uint32_t lo, uint32_t hi);
/*
 * kv_mintree_at_most over leaves lo..hi-1 only: O((m + 1) log n) for m
 * such indices, written to out in increasing order.
 */
uint32_t kv_mintree_at_most_in(const struct kv_mintree *t, uint64_t bound, uint32_t lo,
			       uint32_t hi, uint32_t *out);

#endif /* KV_MINTREE_H */
