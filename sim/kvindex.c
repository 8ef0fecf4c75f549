/*
 * kvindex.c -- the cluster's block index (kvindex.h): per-key heads in one
 * open-addressing table, holders in the head, a pooled list or a pooled set.
 */
#include "kvindex.h"

#include <assert.h>
#include <stdlib.h>
#include <string.h>

#define NIL UINT32_MAX
#define SET KV_KVINDEX_SET

/* splitmix64's finaliser over a key. */
static inline uint32_t hash(uint64_t key)
{
	uint64_t z = key;

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return (uint32_t)(z ^ (z >> 31));
}

/* --- pools ----------------------------------------------------------------- */

/* The size class of a list of count (>= 2) replicas: capacity 2^(class+1) >= count. */
static inline uint32_t cls(uint32_t count)
{
	return 31u - (uint32_t)__builtin_clz(count - 1);
}

/* List i of class c. */
static inline uint32_t *list_at(const struct kv_kvindex *x, uint32_t c, uint32_t i)
{
	return x->list[c] + ((size_t)i << (c + 1));
}

/* A list of class c (from its free list, else the pool, doubled when full). */
static uint32_t list_alloc(struct kv_kvindex *x, uint32_t c)
{
	uint32_t i = x->list_free[c];

	if (i != NIL) {
		x->list_free[c] = *list_at(x, c, i);
		return i;
	}
	if (x->list_used[c] == x->list_cap[c]) {
		uint32_t cap = x->list_cap[c] ? 2 * x->list_cap[c] : 64;

		KV_CHECK(cap > x->list_cap[c] && cap <= SET, "kvindex: %u lists of class %u", x->list_cap[c], c);
		x->list[c] = kv_xrealloc(x->list[c], ((size_t)cap << (c + 1)) * sizeof(uint32_t));
		x->list_cap[c] = cap;
	}
	return x->list_used[c]++;
}

static void list_free(struct kv_kvindex *x, uint32_t c, uint32_t i)
{
	*list_at(x, c, i) = x->list_free[c];
	x->list_free[c] = i;
}

/* Set i's words. */
static inline uint64_t *set_at(const struct kv_kvindex *x, uint32_t i)
{
	return x->set + (size_t)i * x->words;
}

/* An empty set (from the free list, else the pool, doubled when full). */
static uint32_t set_alloc(struct kv_kvindex *x)
{
	uint32_t i = x->set_free;

	if (i != NIL) {
		x->set_free = (uint32_t)*set_at(x, i);
	} else {
		if (x->set_used == x->set_cap) {
			uint32_t cap = x->set_cap ? 2 * x->set_cap : 64;

			KV_CHECK(cap > x->set_cap && cap < SET, "kvindex: %u sets", x->set_cap);
			x->set = kv_xrealloc(x->set, (size_t)cap * x->words * sizeof(uint64_t));
			x->set_cap = cap;
		}
		i = x->set_used++;
	}
	memset(set_at(x, i), 0, x->words * sizeof(uint64_t));
	return i;
}

static void set_free(struct kv_kvindex *x, uint32_t i)
{
	*set_at(x, i) = x->set_free;
	x->set_free = i;
}

/* --- the table ------------------------------------------------------------- */

/* key's slot, or the empty slot where it would go (a table exists). */
static inline uint32_t slot_of(const struct kv_kvindex *x, uint64_t key)
{
	uint32_t i = hash(key) & x->mask;

	while (x->head[i].count && x->head[i].key != key)
		i = (i + 1) & x->mask;
	return i;
}

/* key's head, or NULL. */
static inline const struct kv_kvhead *find(const struct kv_kvindex *x, uint64_t key)
{
	const struct kv_kvhead *h;

	if (!x->head)
		return NULL;
	h = &x->head[slot_of(x, key)];
	return h->count ? h : NULL;
}

/* Doubles the table (from 1024 slots) and reinserts its heads. */
static void grow(struct kv_kvindex *x)
{
	struct kv_kvhead *old = x->head;
	uint32_t n = old ? x->mask + 1 : 0, i, size = n ? 2 * n : 1024;

	KV_CHECK(size > n && size <= (1u << 31), "kvindex: %u keys", x->n_keys);
	x->head = kv_xcalloc(size, sizeof(*x->head));
	x->mask = size - 1;
	for (i = 0; i < n; i++)
		if (old[i].count)
			x->head[slot_of(x, old[i].key)] = old[i];
	free(old);
}

/* Empties slot i by backward-shift deletion (cache_shared.c's rule). */
static void slot_delete(struct kv_kvindex *x, uint32_t i)
{
	uint32_t j;

	for (j = i;;) {
		uint32_t h;

		j = (j + 1) & x->mask;
		if (!x->head[j].count)
			break;
		h = hash(x->head[j].key) & x->mask;
		if (i <= j ? (i < h && h <= j) : (i < h || h <= j))
			continue;
		x->head[i] = x->head[j];
		i = j;
	}
	x->head[i].count = 0;
	x->n_keys--;
}

/* --- holders --------------------------------------------------------------- */

/* Whether head h counts replica r among its holders. */
static int holds(const struct kv_kvindex *x, const struct kv_kvhead *h, uint32_t r)
{
	const uint32_t *l;
	uint32_t j;

	if (h->count == 1)
		return h->ref == r;
	if (h->ref & SET)
		return set_at(x, h->ref & ~SET)[r >> 6] >> (r & 63) & 1;
	l = list_at(x, cls(h->count), h->ref);
	for (j = 0; j < h->count; j++)
		if (l[j] == r)
			return 1;
	return 0;
}

/* Turns h's head or list holders, with r added, into a set. */
static void promote(struct kv_kvindex *x, struct kv_kvhead *h, uint32_t r)
{
	uint32_t s = set_alloc(x), j;
	uint64_t *b = set_at(x, s);

	if (h->count == 1) {
		b[h->ref >> 6] |= 1ULL << (h->ref & 63);
	} else {
		const uint32_t *l = list_at(x, cls(h->count), h->ref);

		for (j = 0; j < h->count; j++)
			b[l[j] >> 6] |= 1ULL << (l[j] & 63);
		list_free(x, cls(h->count), h->ref);
	}
	b[r >> 6] |= 1ULL << (r & 63);
	h->ref = SET | s;
	h->count++;
}

/* Turns h's set (count below demote, >= 1) into the head or a list, ascending. */
static void demote(struct kv_kvindex *x, struct kv_kvhead *h)
{
	uint32_t s = h->ref & ~SET, k = 0, w, l = 0;
	uint32_t *dst = NULL;

	if (h->count > 1) {
		l = list_alloc(x, cls(h->count));
		dst = list_at(x, cls(h->count), l);
	}
	for (w = 0; w < x->words; w++) {
		uint64_t b;

		for (b = set_at(x, s)[w]; b; b &= b - 1) {
			uint32_t r = 64 * w + (uint32_t)__builtin_ctzll(b);

			if (dst)
				dst[k++] = r;
			else
				l = r;
		}
	}
	set_free(x, s);
	h->ref = l;
}

/* Adds r to h's list (count >= 1, not a set), moving it up a class when full. */
static void list_add(struct kv_kvindex *x, struct kv_kvhead *h, uint32_t r)
{
	uint32_t c = h->count, nc = cls(c + 1), l;

	if (c == 1) {
		l = list_alloc(x, nc);
		list_at(x, nc, l)[0] = h->ref;
	} else if (cls(c) != nc) {
		l = list_alloc(x, nc);
		memcpy(list_at(x, nc, l), list_at(x, cls(c), h->ref), c * sizeof(uint32_t));
		list_free(x, cls(c), h->ref);
	} else {
		l = h->ref;
	}
	list_at(x, nc, l)[c] = r;
	h->ref = l;
	h->count = c + 1;
}

/* Removes r from h's list (count >= 2), moving it down a class, or into the head at 1. */
static void list_remove(struct kv_kvindex *x, struct kv_kvhead *h, uint32_t r)
{
	uint32_t c = h->count, oc = cls(c), *l = list_at(x, oc, h->ref), j = 0, nl;

	while (l[j] != r)
		j++;
	l[j] = l[c - 1];
	h->count = --c;
	if (c == 1) {
		nl = l[0]; /* the last holder: list_free overwrites it */
		list_free(x, oc, h->ref);
		h->ref = nl;
	} else if (cls(c) != oc) {
		nl = list_alloc(x, cls(c)); /* another class's pool: l stays valid */
		memcpy(list_at(x, cls(c), nl), l, c * sizeof(uint32_t));
		list_free(x, oc, h->ref);
		h->ref = nl;
	}
}

void kv_kvindex_add(struct kv_kvindex *x, uint64_t key, uint32_t r)
{
	struct kv_kvhead *h;

	assert(r < x->n_rep);
	if (!x->head || 2 * (x->n_keys + 1) > x->mask + 1)
		grow(x);
	h = &x->head[slot_of(x, key)];
	x->holders++;
	if (!h->count) {
		h->key = key;
		h->count = 1;
		h->ref = r;
		x->n_keys++;
		return;
	}
	KV_CHECK(!holds(x, h, r), "kvindex: replica %u holds block %llx twice", r,
		 (unsigned long long)key);
	if (h->ref & SET && h->count > 1) {
		set_at(x, h->ref & ~SET)[r >> 6] |= 1ULL << (r & 63);
		h->count++;
	} else if (h->count + 1 >= x->promote) {
		promote(x, h, r);
	} else {
		list_add(x, h, r);
	}
}

void kv_kvindex_remove(struct kv_kvindex *x, uint64_t key, uint32_t r)
{
	uint32_t i = x->head ? slot_of(x, key) : 0;
	struct kv_kvhead *h = x->head ? &x->head[i] : NULL;

	KV_CHECK(h && h->count && holds(x, h, r), "kvindex: replica %u drops block %llx it does not hold",
		 r, (unsigned long long)key);
	x->holders--;
	if (h->count == 1) {
		slot_delete(x, i);
	} else if (h->ref & SET) {
		set_at(x, h->ref & ~SET)[r >> 6] &= ~(1ULL << (r & 63));
		if (--h->count < x->demote)
			demote(x, h);
	} else {
		list_remove(x, h, r);
	}
}

int kv_kvindex_has(const struct kv_kvindex *x, uint64_t key, uint32_t r)
{
	const struct kv_kvhead *h = find(x, key);

	return h && holds(x, h, r);
}

uint32_t kv_kvindex_count(const struct kv_kvindex *x, uint64_t key)
{
	const struct kv_kvhead *h = find(x, key);

	return h ? h->count : 0;
}

int kv_kvindex_is_set(const struct kv_kvindex *x, uint64_t key)
{
	const struct kv_kvhead *h = find(x, key);

	return h && h->count > 1 && (h->ref & SET);
}

/* --- the walk -------------------------------------------------------------- */

/* Starts a walk: a new generation (stamps cleared when it wraps). */
static void walk_begin(struct kv_kvindex *x)
{
	if (++x->gen == 0) {
		memset(x->stamp, 0, x->n_rep * sizeof(*x->stamp));
		x->gen = 1;
	}
}

/* Makes r a candidate of depth 1. */
static inline void candidate(struct kv_kvindex *x, uint32_t r, uint32_t *cand, uint32_t *nc)
{
	x->stamp[r] = x->gen;
	x->depth[r] = 1;
	cand[(*nc)++] = r;
}

/*
 * A short walk's step: keeps, of the m replicas in alive[] (each holding
 * blocks 0..i-1 at depth i), those holding block i (head h), at depth i +
 * 1; returns how many are kept (first in alive[]).
 */
static uint32_t narrow_short(struct kv_kvindex *x, const struct kv_kvhead *h, uint32_t i, uint32_t m)
{
	uint32_t k = 0, j;

	if (h->count > 1 && (h->ref & SET)) {
		const uint64_t *b = set_at(x, h->ref & ~SET);

		for (j = 0; j < m; j++) {
			uint32_t r = x->alive[j];

			if (b[r >> 6] >> (r & 63) & 1) {
				x->depth[r] = i + 1;
				x->alive[k++] = r;
			}
		}
		return k;
	}
	for (j = 0; j < h->count; j++) { /* its holders that are still alive */
		uint32_t r = h->count == 1 ? h->ref : list_at(x, cls(h->count), h->ref)[j];

		if (x->stamp[r] == x->gen && x->depth[r] == i) {
			x->depth[r] = i + 1;
			x->alive[k++] = r;
		}
	}
	return k;
}

/* The walk from a first block (head h0) held in the head or a list. */
static uint32_t walk_short(struct kv_kvindex *x, const struct kv_kvhead *h0, const uint64_t *keys,
			   uint32_t n, uint32_t lo, uint32_t hi, uint32_t *cand)
{
	uint32_t nc = 0, m, i, j;

	for (j = 0; j < h0->count; j++) {
		uint32_t r = h0->count == 1 ? h0->ref : list_at(x, cls(h0->count), h0->ref)[j];

		if (r >= lo && r < hi) {
			x->alive[nc] = r;
			candidate(x, r, cand, &nc);
		}
	}
	for (i = 1, m = nc; i < n && m; i++) {
		const struct kv_kvhead *h = find(x, keys[i]);

		if (!h)
			break;
		m = narrow_short(x, h, i, m);
	}
	return nc;
}

/* Bits of word w of replicas [lo, hi). */
static inline uint64_t range_bits(uint32_t w, uint32_t lo, uint32_t hi)
{
	uint64_t m = ~0ULL;

	if (64 * w < lo)
		m &= ~0ULL << (lo - 64 * w);
	if (64 * (w + 1) > hi)
		m &= ~0ULL >> (64 * (w + 1) - hi);
	return m;
}

/* Sets next[wl..wh) to the survivors in live[] holding block h's list (or head) replica. */
static void list_bits(struct kv_kvindex *x, const struct kv_kvhead *h, uint32_t wl, uint32_t wh)
{
	uint32_t j;

	memset(x->next + wl, 0, (wh - wl) * sizeof(uint64_t));
	for (j = 0; j < h->count; j++) {
		uint32_t r = h->count == 1 ? h->ref : list_at(x, cls(h->count), h->ref)[j];

		if (r >> 6 >= wl && r >> 6 < wh)
			x->next[r >> 6] |= x->live[r >> 6] & 1ULL << (r & 63);
	}
}

/* Gives every replica in bits b of word w the depth d. */
static inline void set_depth(struct kv_kvindex *x, uint32_t w, uint64_t b, uint32_t d)
{
	for (; b; b &= b - 1)
		x->depth[64 * w + (uint32_t)__builtin_ctzll(b)] = d;
}

/*
 * The walk from a first block (head h0) held as a set: the survivors'
 * bitset is ANDed with each next block's holders; those dropped at block
 * i hold i blocks, those left at the end as many as were walked.
 */
static uint32_t walk_set(struct kv_kvindex *x, const struct kv_kvhead *h0, const uint64_t *keys,
			 uint32_t n, uint32_t lo, uint32_t hi, uint32_t *cand)
{
	uint32_t wl = lo >> 6, wh = (hi + 63) >> 6, nc = 0, i, w;
	const uint64_t *b0 = set_at(x, h0->ref & ~SET);
	uint64_t any = 0;

	for (w = wl; w < wh; w++) {
		uint64_t b;

		x->live[w] = b0[w] & range_bits(w, lo, hi);
		any |= x->live[w];
		for (b = x->live[w]; b; b &= b - 1)
			candidate(x, 64 * w + (uint32_t)__builtin_ctzll(b), cand, &nc);
	}
	for (i = 1; i < n && any; i++) {
		const struct kv_kvhead *h = find(x, keys[i]);
		const uint64_t *nb;

		if (!h)
			break;
		if (h->count > 1 && (h->ref & SET)) {
			nb = set_at(x, h->ref & ~SET);
		} else {
			list_bits(x, h, wl, wh);
			nb = x->next;
		}
		for (any = 0, w = wl; w < wh; w++) {
			uint64_t keep = x->live[w] & nb[w];

			set_depth(x, w, x->live[w] & ~keep, i);
			x->live[w] = keep;
			any |= keep;
		}
	}
	for (w = wl; any && w < wh; w++)
		set_depth(x, w, x->live[w], i);
	return nc;
}

uint32_t kv_kvindex_walk(struct kv_kvindex *x, const uint64_t *keys, uint32_t n, uint32_t lo,
			 uint32_t hi, uint32_t *cand)
{
	const struct kv_kvhead *h0;

	walk_begin(x);
	assert(lo <= hi && hi <= x->n_rep);
	if (!n || !(h0 = find(x, keys[0])))
		return 0;
	if (h0->count > 1 && (h0->ref & SET))
		return walk_set(x, h0, keys, n, lo, hi, cand);
	return walk_short(x, h0, keys, n, lo, hi, cand);
}

/* --- life ------------------------------------------------------------------ */

void kv__kvindex_thresholds(struct kv_kvindex *x, uint32_t promote, uint32_t demote)
{
	KV_CHECK(!x->holders && demote >= 2 && demote <= promote,
		 "kvindex: thresholds %u, %u on %llu holders", promote, demote,
		 (unsigned long long)x->holders);
	x->promote = promote;
	x->demote = demote;
}

void kv_kvindex_init(struct kv_kvindex *x, uint32_t n_rep)
{
	uint32_t c;

	memset(x, 0, sizeof(*x));
	for (c = 0; c < KV_KVINDEX_CLASSES; c++)
		x->list_free[c] = NIL;
	x->set_free = NIL;
	x->n_rep = n_rep;
	x->words = KV_MAX((n_rep + 63) / 64, 1u);
	x->promote = KV_MAX(x->words, 2u);
	x->demote = KV_MAX(x->promote / 2, 2u);
	x->depth = kv_xcalloc(KV_MAX(n_rep, 1u), sizeof(*x->depth));
	x->stamp = kv_xcalloc(KV_MAX(n_rep, 1u), sizeof(*x->stamp));
	x->alive = kv_xcalloc(KV_MAX(n_rep, 1u), sizeof(*x->alive));
	x->live = kv_xcalloc(x->words, sizeof(*x->live));
	x->next = kv_xcalloc(x->words, sizeof(*x->next));
}

void kv_kvindex_release(struct kv_kvindex *x)
{
	uint32_t c;

	free(x->head);
	for (c = 0; c < KV_KVINDEX_CLASSES; c++)
		free(x->list[c]);
	free(x->set);
	free(x->depth);
	free(x->stamp);
	free(x->alive);
	free(x->live);
	free(x->next);
	memset(x, 0, sizeof(*x));
}
