/*
 * tiers.c -- the KV store below the GPU pool (tiers.h): per tier an LRU set
 * of block keys (open addressing with linear probing, backward-shift
 * deletion, as cache_shared.c's index) and two FIFO links (kvlink.h).
 * A slot holds its entry and a 32-bit hash of the entry's key, from which
 * the slot's home comes: a probe compares hashes in the slot array and
 * reads an entry only when its hash matches, and a deletion's backward
 * shift reads no entry, so a lookup that misses touches one or two cache
 * lines instead of one per slot of its probe run (the tiers of a fleet's
 * replicas outgrow the caches: every eviction probes three of them).  An
 * entry's key and LRU links share one 16-byte record.
 *
 * A transfer of x bytes on a link of bandwidth W that is next free at f,
 * asked at now, starts at s = max(now, f), keeps the link until s + x / W
 * and lands at s + x / W + latency: transfers queue in order and contend
 * for the bandwidth (kvlink.h says why FIFO).  Writes use the write link
 * and delay nothing (LMCache stores KV asynchronously); their busy time is
 * reported.  Transfers done by the time of the next one are popped, so a
 * link's ring holds only those still in flight.
 */
#include "tiers.h"
#include "kvlink.h"

#include <assert.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#define NIL UINT32_MAX

struct kv_tier {
	struct kv_tier_cfg cfg;
	uint64_t block_bytes; /* bytes of one block */
	uint32_t max_blocks; /* capacity_bytes / block_bytes */
	uint32_t cap; /* slots in the arrays now (grows to max_blocks) */
	uint32_t n; /* blocks held */
	uint32_t free_entry; /* free list through ent[].next */
	struct tier_entry {
		uint64_t key; /* the block's key */
		uint32_t prev, next; /* LRU list (prev toward the least recently used); next: free list */
	} *ent; /* cap entries */
	uint32_t head, tail; /* least / most recently used */
	struct tier_slot {
		uint32_t hash; /* hash(key) of its entry */
		uint32_t e; /* the entry, NIL when empty */
	} *slot; /* open-addressing index, mask + 1 slots */
	uint32_t mask; /* index slots - 1 */
	struct kv_kvlink rd, wr; /* the read link (toward the GPU) and the write link (kvlink.h) */
	struct kv_tier_stats st;
	uint32_t users; /* stacks using it (a shared tier: the replicas) */
};

const struct kv_tier_cfg *kv_tier_cfg(const struct kv_tier *t)
{
	return &t->cfg;
}

const struct kv_tier_stats *kv_tier_stats(const struct kv_tier *t)
{
	return &t->st;
}

uint64_t kv_tier_block_bytes(const struct kv_tier *t)
{
	return t->block_bytes;
}

uint32_t kv_tier_users(const struct kv_tier *t)
{
	return t->users;
}

/* A key's 32-bit hash: splitmix64's finaliser, high half (any keys spread). */
static inline uint32_t key_hash(uint64_t key)
{
	uint64_t z = key;

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return (uint32_t)((z ^ (z >> 31)) >> 32);
}

/* The entry holding key (of hash h), or NIL. */
static uint32_t find(const struct kv_tier *t, uint64_t key, uint32_t h)
{
	uint32_t i = h & t->mask, e;

	while ((e = t->slot[i].e) != NIL) {
		if (t->slot[i].hash == h && t->ent[e].key == key)
			return e;
		i = (i + 1) & t->mask;
	}
	return NIL;
}

/* Indexes entry e, whose key hashes to h. */
static void index_insert(struct kv_tier *t, uint32_t e, uint32_t h)
{
	uint32_t i = h & t->mask;

	while (t->slot[i].e != NIL)
		i = (i + 1) & t->mask;
	t->slot[i].hash = h;
	t->slot[i].e = e;
}

/* Backward-shift deletion (cache_shared.c index_remove) of entry e, whose key hashes to h. */
static void index_remove(struct kv_tier *t, uint32_t e, uint32_t h)
{
	uint32_t i = h & t->mask, j;

	while (t->slot[i].e != e) {
		KV_CHECK(t->slot[i].e != NIL, "tier entry %u missing from its index", e);
		i = (i + 1) & t->mask;
	}
	for (j = i;;) {
		uint32_t hj;

		j = (j + 1) & t->mask;
		if (t->slot[j].e == NIL)
			break;
		hj = t->slot[j].hash & t->mask;
		if (i <= j ? (i < hj && hj <= j) : (i < hj || hj <= j))
			continue;
		t->slot[i] = t->slot[j];
		i = j;
	}
	t->slot[i].e = NIL;
}

/* Index slots for cap entries: a power of two keeping the load below 0.7. */
static uint64_t index_slots(uint32_t cap)
{
	uint64_t slots = 16;

	while (slots * 7 < (uint64_t)cap * 10 + 7)
		slots *= 2;
	return slots;
}

/* Doubles the arrays (up to max_blocks) and rebuilds the index; entries keep their numbers. */
static void grow(struct kv_tier *t)
{
	uint32_t old = t->cap, e;
	uint64_t want = KV_MAX(64, (uint64_t)old * 2), slots;

	t->cap = (uint32_t)KV_MIN(want, (uint64_t)t->max_blocks);
	t->ent = kv_xrealloc(t->ent, (size_t)t->cap * sizeof(*t->ent));
	for (e = t->cap; e-- > old;) {
		t->ent[e].next = t->free_entry;
		t->free_entry = e;
	}
	slots = index_slots(t->cap);
	free(t->slot);
	t->slot = kv_xmalloc(slots * sizeof(*t->slot));
	memset(t->slot, 0xff, slots * sizeof(*t->slot)); /* every slot's entry NIL */
	t->mask = (uint32_t)(slots - 1);
	for (e = t->head; e != NIL; e = t->ent[e].next)
		index_insert(t, e, key_hash(t->ent[e].key));
}

/* A link's bandwidth in whole bytes/s, at least 1 (kvlink.h needs W > 0). */
static uint64_t link_Bps(double Bps)
{
	return Bps >= 1 ? (uint64_t)llround(Bps) : 1;
}

struct kv_tier *kv_tier_new(const struct kv_tier_cfg *cfg, uint64_t block_bytes)
{
	struct kv_tier *t = kv_xcalloc(1, sizeof(*t));

	assert(block_bytes > 0 && cfg->capacity_bytes >= block_bytes);
	t->cfg = *cfg;
	t->block_bytes = block_bytes;
	t->max_blocks = (uint32_t)KV_MIN(cfg->capacity_bytes / block_bytes, (uint64_t)NIL - 1);
	t->free_entry = t->head = t->tail = NIL;
	kv_kvlink_init(&t->rd, link_Bps(cfg->read_Bps), 0, 16);
	kv_kvlink_init(&t->wr, link_Bps(cfg->write_Bps), 0, 16);
	grow(t);
	return t;
}

static void check_tier(const struct kv_tier *t)
{
	const struct kv_tier_stats *s = &t->st;

	KV_CHECK(s->in_bytes == s->used_bytes + s->down_bytes + s->drop_bytes,
		 "tier: %llu bytes in, %llu held + %llu down + %llu dropped",
		 (unsigned long long)s->in_bytes, (unsigned long long)s->used_bytes,
		 (unsigned long long)s->down_bytes, (unsigned long long)s->drop_bytes);
	KV_CHECK(s->used_bytes == (uint64_t)t->n * t->block_bytes &&
			 s->used_bytes <= t->cfg.capacity_bytes,
		 "tier holds %u blocks of %llu bytes, %llu counted, capacity %llu", t->n,
		 (unsigned long long)t->block_bytes, (unsigned long long)s->used_bytes,
		 (unsigned long long)t->cfg.capacity_bytes);
}

void kv_tier_free(struct kv_tier *t)
{
	if (!t || --t->users > 0)
		return;
	check_tier(t);
	while (kv_kvlink_pop(&t->rd, KV_NS_NEVER - 1, NULL, NULL) || kv_kvlink_pop(&t->wr, KV_NS_NEVER - 1, NULL, NULL))
		; /* the run is over: what is in flight has landed */
	kv_kvlink_check(&t->rd);
	kv_kvlink_check(&t->wr);
	kv_kvlink_release(&t->rd);
	kv_kvlink_release(&t->wr);
	free(t->ent);
	free(t->slot);
	free(t);
}

void kv_tiers_add(struct kv_tiers *s, struct kv_tier *t, uint32_t kind)
{
	assert(s->n < KV_TIERS_MAX && kind < KV_TIERS_MAX);
	s->t[s->n] = t;
	s->kind[s->n++] = kind;
	t->users++;
}

/* --- the LRU list ---------------------------------------------------------- */

static void lru_unlink(struct kv_tier *t, uint32_t e)
{
	struct tier_entry *x = &t->ent[e];

	if (x->prev != NIL)
		t->ent[x->prev].next = x->next;
	else
		t->head = x->next;
	if (x->next != NIL)
		t->ent[x->next].prev = x->prev;
	else
		t->tail = x->prev;
}

static void lru_push(struct kv_tier *t, uint32_t e)
{
	t->ent[e].prev = t->tail;
	t->ent[e].next = NIL;
	if (t->tail != NIL)
		t->ent[t->tail].next = e;
	else
		t->head = e;
	t->tail = e;
}

static void touch(struct kv_tier *t, uint32_t e)
{
	lru_unlink(t, e);
	lru_push(t, e);
}

/* Queues `bytes` on link l at now (after popping what has landed); returns when they land. */
static kv_ns transfer(struct kv_kvlink *l, uint64_t bytes, kv_ns now)
{
	struct kv_kvlink_xfer x = { .bytes = bytes, .first_ns = now, .last_ns = now };
	struct kv_kvlink_times tm;

	while (kv_kvlink_pop(l, now, NULL, NULL))
		;
	kv_kvlink_submit(l, &x, &tm);
	return tm.done_ns;
}

/* A write of one block on t's write link at now (asynchronous: nothing waits). */
static void write_link(struct kv_tier *t, kv_ns now)
{
	transfer(&t->wr, t->block_bytes, now);
	t->st.write_busy_ns = t->wr.busy_ns;
}

/* Takes t's least recently used block out; returns its key. */
static uint64_t pop_lru(struct kv_tier *t)
{
	uint32_t e = t->head;
	uint64_t key = t->ent[e].key;

	lru_unlink(t, e);
	index_remove(t, e, key_hash(key));
	t->ent[e].next = t->free_entry;
	t->free_entry = e;
	t->n--;
	t->st.used_bytes -= t->block_bytes;
	return key;
}

/*
 * Block key arrives in tier i (its bytes counted in), written at now.  The
 * tier full, its LRU block moves to tier i + 1 first, or is dropped from
 * the last tier.  Iterative: one block moves per tier at most.
 */
static void arrive(struct kv_tiers *s, uint32_t i, uint64_t key, kv_ns now)
{
	for (;;) {
		struct kv_tier *t = s->t[i];
		uint32_t h = key_hash(key), e = find(t, key, h);
		uint64_t out;

		t->st.in_bytes += t->block_bytes;
		if (e != NIL) { /* already here: the copy is dropped, counted */
			touch(t, e);
			t->st.drop_bytes += t->block_bytes;
			return;
		}
		write_link(t, now);
		out = NIL;
		if (t->n == t->max_blocks) {
			out = pop_lru(t);
			if (i + 1 < s->n)
				t->st.down_bytes += t->block_bytes;
			else
				t->st.drop_bytes += t->block_bytes;
		}
		if (t->free_entry == NIL)
			grow(t);
		e = t->free_entry;
		t->free_entry = t->ent[e].next;
		t->ent[e].key = key;
		index_insert(t, e, h);
		lru_push(t, e);
		t->n++;
		t->st.used_bytes += t->block_bytes;
		if (out == NIL || i + 1 >= s->n)
			return;
		key = out; /* the evicted block goes down */
		i++;
	}
}

void kv_tiers_prefetch(const struct kv_tiers *s, uint64_t key)
{
	uint32_t i;

	for (i = 0; i < s->n; i++) {
		const struct kv_tier *t = s->t[i];
		const struct tier_entry *v;

		__builtin_prefetch(&t->slot[key_hash(key) & t->mask]);
		if (t->tail != NIL)
			__builtin_prefetch(&t->ent[t->tail]);
		if (t->n < t->max_blocks || t->head == NIL)
			return;
		v = &t->ent[t->head];
		if (v->next != NIL)
			__builtin_prefetch(&t->ent[v->next]);
		key = v->key; /* the block that goes down */
		__builtin_prefetch(&t->slot[key_hash(key) & t->mask]);
	}
}

void kv_tiers_put(struct kv_tiers *s, uint64_t key, kv_ns now)
{
	if (!s->n)
		return;
	kv_tiers_prefetch(s, key);
	s->gpu_out_bytes += s->t[0]->block_bytes;
	arrive(s, 0, key, now);
	kv_tiers_check(s); /* O(tiers): always on */
}

int kv_tiers_find(struct kv_tiers *s, uint64_t key)
{
	uint32_t i, h = key_hash(key);

	for (i = 0; i < s->n; i++) {
		struct kv_tier *t = s->t[i];
		uint32_t e;

		t->st.lookup_blocks++;
		if ((e = find(t, key, h)) != NIL) {
			touch(t, e); /* read soon: most recently used */
			t->st.hit_blocks++;
			return (int)i;
		}
	}
	return -1;
}

kv_ns kv_tiers_load(struct kv_tiers *s, int i, uint64_t n, kv_ns now)
{
	struct kv_tier *t = s->t[i];
	uint64_t bytes = n * t->block_bytes;
	kv_ns done = transfer(&t->rd, bytes, now);

	t->st.read_busy_ns = t->rd.busy_ns;
	t->st.read_bytes += bytes;
	return done + t->cfg.latency_ns;
}

void kv_tiers_check(const struct kv_tiers *s)
{
	uint32_t i;

	for (i = 0; i < s->n; i++)
		check_tier(s->t[i]);
}
