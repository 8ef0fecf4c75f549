/*
 * kvindex.c -- the cluster's block index (kvindex.h): (key, replica)
 * records and per-key heads in one open-addressing table.
 */
#include "kvindex.h"

#include <assert.h>
#include <stdlib.h>
#include <string.h>

#define NIL UINT32_MAX
#define HEAD KV_KVINDEX_HEAD

/* splitmix64's finaliser over a (key, replica) pair. */
static inline uint32_t hash(uint64_t key, uint32_t r)
{
	uint64_t z = key ^ ((uint64_t)r * 0x9e3779b97f4a7c15ULL);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return (uint32_t)(z ^ (z >> 31));
}

/* A (key, replica) pair's position in the records' table. */
static inline uint32_t home(const struct kv_kvindex *x, uint64_t key, uint32_t r)
{
	return hash(key, r) & x->mask;
}

/* The record of (key, r), or NIL. */
static uint32_t find(const struct kv_kvindex *x, uint64_t key, uint32_t r)
{
	uint32_t i = home(x, key, r), e;

	while ((e = x->slot[i]) != NIL) {
		if (x->key[e] == key && x->rep[e] == r)
			return e;
		i = (i + 1) & x->mask;
	}
	return NIL;
}

static void slot_insert(struct kv_kvindex *x, uint32_t e)
{
	uint32_t i = home(x, x->key[e], x->rep[e]);

	while (x->slot[i] != NIL)
		i = (i + 1) & x->mask;
	x->slot[i] = e;
}

/* Removes record e from the table by backward-shift deletion (cache_shared.c's rule). */
static void slot_remove(struct kv_kvindex *x, uint32_t e)
{
	uint32_t i = home(x, x->key[e], x->rep[e]), j;

	while (x->slot[i] != e) {
		KV_CHECK(x->slot[i] != NIL, "kvindex: record %u missing from the table", e);
		i = (i + 1) & x->mask;
	}
	for (j = i;;) {
		uint32_t h;

		j = (j + 1) & x->mask;
		if (x->slot[j] == NIL)
			break;
		h = home(x, x->key[x->slot[j]], x->rep[x->slot[j]]);
		if (i <= j ? (i < h && h <= j) : (i < h || h <= j))
			continue;
		x->slot[i] = x->slot[j];
		i = j;
	}
	x->slot[i] = NIL;
}

/* Doubles the records (the table keeps twice as many slots) and rehashes the live ones. */
static void grow(struct kv_kvindex *x)
{
	uint32_t cap = x->cap ? 2 * x->cap : 1024, i, *old = x->slot, old_slots = x->cap ? x->mask + 1 : 0;

	KV_CHECK(cap > x->cap && cap <= (1u << 30), "kvindex: %u records", x->cap);
	x->key = kv_xrealloc(x->key, cap * sizeof(*x->key));
	x->rep = kv_xrealloc(x->rep, cap * sizeof(*x->rep));
	x->prev = kv_xrealloc(x->prev, cap * sizeof(*x->prev));
	x->next = kv_xrealloc(x->next, cap * sizeof(*x->next));
	x->count = kv_xrealloc(x->count, cap * sizeof(*x->count));
	for (i = cap; i-- > x->cap;) { /* the new records join the free list, lowest first */
		x->next[i] = x->free_rec;
		x->free_rec = i;
	}
	x->cap = cap;
	x->mask = 2 * cap - 1;
	x->slot = kv_xmalloc(2 * (size_t)cap * sizeof(*x->slot));
	memset(x->slot, 0xff, 2 * (size_t)cap * sizeof(*x->slot));
	for (i = 0; i < old_slots; i++)
		if (old[i] != NIL)
			slot_insert(x, old[i]);
	free(old);
}

/* A new record for (key, r), in the table, unlinked. */
static uint32_t rec_new(struct kv_kvindex *x, uint64_t key, uint32_t r)
{
	uint32_t e;

	if (x->free_rec == NIL)
		grow(x);
	e = x->free_rec;
	x->free_rec = x->next[e];
	x->key[e] = key;
	x->rep[e] = r;
	x->prev[e] = x->next[e] = NIL;
	x->count[e] = 0;
	x->n++;
	slot_insert(x, e);
	return e;
}

static void rec_free(struct kv_kvindex *x, uint32_t e)
{
	slot_remove(x, e);
	x->next[e] = x->free_rec;
	x->free_rec = e;
	x->n--;
}

/* The bits form (up to 64 replicas): key's slot, or the empty slot where it would go. */
static inline uint32_t bits_slot(const struct kv_kvindex *x, uint64_t key)
{
	uint32_t i = hash(key, HEAD) & x->bt_mask;

	while (x->bt[i].bits && x->bt[i].key != key)
		i = (i + 1) & x->bt_mask;
	return i;
}

/* key's holders' bits (0: none). */
static inline uint64_t bits_of(const struct kv_kvindex *x, uint64_t key)
{
	return x->bt_mask ? x->bt[bits_slot(x, key)].bits : 0;
}

/* Doubles the bits table (from 1024 slots) and reinserts its keys. */
static void bits_grow(struct kv_kvindex *x)
{
	struct kv_kvbits *old = x->bt;
	uint32_t n = x->bt_mask ? x->bt_mask + 1 : 0, i, size = n ? 2 * n : 1024;

	KV_CHECK(size > n && size <= (1u << 31), "kvindex: %u keys", x->bt_n);
	x->bt = kv_xcalloc(size, sizeof(*x->bt));
	x->bt_mask = size - 1;
	for (i = 0; i < n; i++)
		if (old[i].bits)
			x->bt[bits_slot(x, old[i].key)] = old[i];
	free(old);
}

static void bits_add(struct kv_kvindex *x, uint64_t key, uint32_t r)
{
	uint32_t i;

	if (2 * (x->bt_n + 1) > x->bt_mask + 1)
		bits_grow(x);
	i = bits_slot(x, key);
	KV_CHECK(!(x->bt[i].bits >> r & 1), "kvindex: replica %u holds block %llx twice", r,
		 (unsigned long long)key);
	if (!x->bt[i].bits) {
		x->bt[i].key = key;
		x->bt_n++;
	}
	x->bt[i].bits |= 1ULL << r;
	x->holders++;
}

/* Empties slot i by backward-shift deletion (slot_remove's rule). */
static void bits_delete(struct kv_kvindex *x, uint32_t i)
{
	uint32_t j;

	for (j = i;;) {
		uint32_t h;

		j = (j + 1) & x->bt_mask;
		if (!x->bt[j].bits)
			break;
		h = hash(x->bt[j].key, HEAD) & x->bt_mask;
		if (i <= j ? (i < h && h <= j) : (i < h || h <= j))
			continue;
		x->bt[i] = x->bt[j];
		i = j;
	}
	x->bt[i].bits = 0;
	x->bt_n--;
}

static void bits_remove(struct kv_kvindex *x, uint64_t key, uint32_t r)
{
	uint32_t i = x->bt_mask ? bits_slot(x, key) : 0;

	KV_CHECK(x->bt_mask && (x->bt[i].bits >> r & 1),
		 "kvindex: replica %u drops block %llx it does not hold", r, (unsigned long long)key);
	x->bt[i].bits &= ~(1ULL << r);
	x->holders--;
	if (!x->bt[i].bits) {
		x->bt[i].bits = 1; /* still occupied while the run shifts back */
		bits_delete(x, i);
	}
}

/* The bits form's walk: the replicas of keys[0]'s bits, each as deep as the AND of bits keeps it. */
static uint32_t bits_walk(struct kv_kvindex *x, const uint64_t *keys, uint32_t n, uint32_t *cand)
{
	uint32_t nc = 0, i;
	uint64_t m = n ? bits_of(x, keys[0]) : 0, b;

	for (b = m; b; b &= b - 1) {
		uint32_t r = (uint32_t)__builtin_ctzll(b);

		x->stamp[r] = x->gen;
		x->depth[r] = 1;
		cand[nc++] = r;
	}
	for (i = 1; i < n && m; i++) {
		m &= bits_of(x, keys[i]);
		for (b = m; b; b &= b - 1)
			x->depth[__builtin_ctzll(b)] = i + 1;
	}
	return nc;
}

void kv_kvindex_add(struct kv_kvindex *x, uint64_t key, uint32_t r)
{
	uint32_t h = x->cap ? find(x, key, HEAD) : NIL, e;

	assert(r < x->n_rep);
	if (x->n_rep <= 64) {
		bits_add(x, key, r);
		return;
	}
	KV_CHECK(h == NIL || find(x, key, r) == NIL, "kvindex: replica %u holds block %llx twice",
		 r, (unsigned long long)key);
	if (h == NIL)
		h = rec_new(x, key, HEAD);
	e = rec_new(x, key, r);
	x->prev[e] = h; /* first in h's list */
	x->next[e] = x->next[h];
	if (x->next[h] != NIL)
		x->prev[x->next[h]] = e;
	x->next[h] = e;
	x->count[h]++;
	x->holders++;
}

void kv_kvindex_remove(struct kv_kvindex *x, uint64_t key, uint32_t r)
{
	uint32_t e, h;

	if (x->n_rep <= 64) {
		bits_remove(x, key, r);
		return;
	}
	e = x->cap ? find(x, key, r) : NIL;
	KV_CHECK(e != NIL, "kvindex: replica %u drops block %llx it does not hold", r,
		 (unsigned long long)key);
	h = find(x, key, HEAD);
	x->next[x->prev[e]] = x->next[e]; /* prev is the head or a holder */
	if (x->next[e] != NIL)
		x->prev[x->next[e]] = x->prev[e];
	rec_free(x, e);
	x->holders--;
	if (--x->count[h] == 0)
		rec_free(x, h);
}

int kv_kvindex_has(const struct kv_kvindex *x, uint64_t key, uint32_t r)
{
	if (x->n_rep <= 64)
		return bits_of(x, key) >> r & 1;
	return x->cap && find(x, key, r) != NIL;
}

uint32_t kv_kvindex_count(const struct kv_kvindex *x, uint64_t key)
{
	uint32_t h;

	if (x->n_rep <= 64)
		return (uint32_t)__builtin_popcountll(bits_of(x, key));
	h = x->cap ? find(x, key, HEAD) : NIL;

	return h == NIL ? 0 : x->count[h];
}

/* Starts a walk: a new generation (stamps cleared when it wraps). */
static void walk_begin(struct kv_kvindex *x)
{
	if (++x->gen == 0) {
		memset(x->stamp, 0, x->n_rep * sizeof(*x->stamp));
		x->gen = 1;
	}
}

/*
 * Keeps, of the m replicas in alive[] (each holding blocks 0..i-1), those
 * holding block i (key, head h): by its holder list when shorter, else by
 * probing each; returns how many are kept (first in alive[]).
 */
static uint32_t narrow(struct kv_kvindex *x, uint64_t key, uint32_t h, uint32_t i, uint32_t m)
{
	uint32_t k = 0, j, e;

	if (x->count[h] <= m) {
		for (e = x->next[h]; e != NIL; e = x->next[e]) {
			uint32_t r = x->rep[e];

			if (x->stamp[r] == x->gen && x->depth[r] == i) {
				x->depth[r] = i + 1;
				x->alive[k++] = r;
			}
		}
		return k;
	}
	for (j = 0; j < m; j++) {
		uint32_t r = x->alive[j];

		if (find(x, key, r) != NIL) {
			x->depth[r] = i + 1;
			x->alive[k++] = r;
		}
	}
	return k;
}

uint32_t kv_kvindex_walk(struct kv_kvindex *x, const uint64_t *keys, uint32_t n, uint32_t *cand)
{
	uint32_t h, e, m = 0, i, nc = 0;

	walk_begin(x);
	if (x->n_rep <= 64)
		return bits_walk(x, keys, n, cand);
	if (!n || !x->cap || (h = find(x, keys[0], HEAD)) == NIL)
		return 0;
	for (e = x->next[h]; e != NIL; e = x->next[e]) {
		uint32_t r = x->rep[e];

		x->stamp[r] = x->gen;
		x->depth[r] = 1;
		cand[nc++] = x->alive[m++] = r;
	}
	for (i = 1; i < n && m; i++) {
		h = find(x, keys[i], HEAD);
		if (h == NIL)
			break;
		m = narrow(x, keys[i], h, i, m);
	}
	return nc;
}

void kv_kvindex_init(struct kv_kvindex *x, uint32_t n_rep)
{
	memset(x, 0, sizeof(*x));
	x->free_rec = NIL;
	x->n_rep = n_rep;
	x->depth = kv_xcalloc(n_rep, sizeof(*x->depth));
	x->stamp = kv_xcalloc(n_rep, sizeof(*x->stamp));
	x->alive = kv_xcalloc(n_rep, sizeof(*x->alive));
}

void kv_kvindex_release(struct kv_kvindex *x)
{
	free(x->key);
	free(x->rep);
	free(x->prev);
	free(x->next);
	free(x->count);
	free(x->bt);
	free(x->slot);
	free(x->depth);
	free(x->stamp);
	free(x->alive);
	memset(x, 0, sizeof(*x));
}
