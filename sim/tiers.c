/*
 * tiers.c -- the KV store below the GPU pool (tiers.h): per tier an LRU set
 * of block keys and two FIFO links (kvlink.h).  The LRU order is a ring of
 * keys, least recently used at its head: a block enters at the tail, the
 * tier's victim leaves at the head, and a block touched (found, or arriving
 * again) moves to the tail, its old place marked in a bitset and skipped
 * when the head reaches it.  The index is open addressing with linear
 * probing and backward-shift deletion (as cache_shared.c's), a slot holding
 * the block's ring position and a 32-bit hash of its key, from which the
 * slot's home comes: a probe compares hashes in the slot array and reads a
 * key only when its hash matches, and a deletion's backward shift reads no
 * key.  So a put touches, per tier, the ring's head and tail (sequential:
 * no linked list to chase) and two slots, and a put's slots across the
 * stack can be fetched at once (kv_tiers_prefetch): a fleet's tiers
 * outgrow the processor's caches and every eviction passes three of them.
 *
 * A transfer of x bytes on a link of bandwidth W that is next free at f,
 * asked at now, starts at s = max(now, f), keeps the link until s + x / W
 * and lands at s + x / W + latency: transfers queue in order and contend
 * for the bandwidth (kvlink.h says why FIFO).  Writes use the write link
 * and delay nothing (LMCache stores KV asynchronously); their busy time is
 * reported, and since nothing waits for one the write link keeps no record
 * of it (kv_kvlink_submit_untracked).  Loads done by the time of the next
 * one are popped, so the read link's ring holds only those still in flight.
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
	uint32_t n; /* blocks held */
	/* The LRU order: a ring of keys, least recently used at head. */
	uint64_t *ring; /* rmask + 1 positions */
	uint64_t *moved; /* bitset over positions: the block there was touched and lives later in the ring */
	uint64_t *unseen; /* bitset over positions: the block there is in no index (kv_tiers_put_unseen) */
	uint32_t rmask; /* ring positions - 1 (a power of two; grows to 2 * max_blocks rounded up) */
	uint32_t head; /* position of the least recently used block (perhaps a moved one's) */
	uint32_t used; /* positions from head on in use: n + moved ones */
	struct tier_slot {
		uint32_t hash; /* hash(key) of its block */
		uint32_t e; /* the block's ring position, NIL when empty */
	} *slot; /* open-addressing index, mask + 1 slots */
	uint32_t mask; /* index slots - 1 */
	struct kv_kvlink rd, wr; /* the read link (toward the GPU) and the write link (kvlink.h) */
	kv_ns write_ser_ns; /* a block's time on the write link */
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

/* The index slot of the block key (of hash h), or NIL. */
static uint32_t find(const struct kv_tier *t, uint64_t key, uint32_t h)
{
	uint32_t i = h & t->mask, e;

	while ((e = t->slot[i].e) != NIL) {
		if (t->slot[i].hash == h && t->ring[e] == key)
			return i;
		i = (i + 1) & t->mask;
	}
	return NIL;
}

/* Indexes the block at ring position e, whose key hashes to h. */
static void index_insert(struct kv_tier *t, uint32_t e, uint32_t h)
{
	uint32_t i = h & t->mask;

	while (t->slot[i].e != NIL)
		i = (i + 1) & t->mask;
	t->slot[i].hash = h;
	t->slot[i].e = e;
}

/* Backward-shift deletion (cache_shared.c index_remove) of position e, whose key hashes to h. */
static void index_remove(struct kv_tier *t, uint32_t e, uint32_t h)
{
	uint32_t i = h & t->mask, j;

	while (t->slot[i].e != e) {
		KV_CHECK(t->slot[i].e != NIL, "tier position %u missing from its index", e);
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

/* Index slots for cap blocks: a power of two keeping the load below 0.7. */
static uint64_t index_slots(uint32_t cap)
{
	uint64_t slots = 16;

	while (slots * 7 < (uint64_t)cap * 10 + 7)
		slots *= 2;
	return slots;
}

static inline int is_moved(const struct kv_tier *t, uint32_t p)
{
	return (int)(t->moved[p >> 6] >> (p & 63) & 1);
}

static inline int is_unseen(const struct kv_tier *t, uint32_t p)
{
	return t->unseen && (int)(t->unseen[p >> 6] >> (p & 63) & 1);
}

/*
 * Rewrites the ring with `size` positions (a power of two), its live blocks
 * in LRU order from position 0 and no moved ones, and rebuilds the index
 * (sized for the blocks the ring can then hold).  Called when the ring is
 * full: it doubles while more than half its positions hold live blocks
 * (up to the size that holds 2 * max_blocks), else is compacted, which
 * frees at least half its positions; so a rewrite comes at most once per
 * half a ring of pushes, O(1) per push amortised.
 */
static void rewrite(struct kv_tier *t, uint32_t size)
{
	uint64_t *ring = kv_xmalloc((size_t)size * sizeof(*ring)), slots;
	uint64_t *unseen = kv_xcalloc((size + 63) / 64, sizeof(*unseen));
	uint32_t p, k, n = 0, cap = KV_MIN(size, t->max_blocks);

	for (k = 0; k < t->used; k++) {
		p = (t->head + k) & t->rmask;
		if (is_moved(t, p))
			continue;
		if (is_unseen(t, p))
			unseen[n >> 6] |= 1ULL << (n & 63);
		ring[n++] = t->ring[p];
	}
	KV_CHECK(n == t->n, "tier ring holds %u live blocks, %u counted", n, t->n);
	free(t->ring);
	free(t->moved);
	free(t->unseen);
	t->ring = ring;
	t->unseen = unseen;
	t->moved = kv_xcalloc((size + 63) / 64, sizeof(*t->moved));
	t->rmask = size - 1;
	t->head = 0;
	t->used = n;
	slots = index_slots(cap);
	if (!t->slot || slots != (uint64_t)t->mask + 1) {
		free(t->slot);
		t->slot = kv_xmalloc(slots * sizeof(*t->slot));
		t->mask = (uint32_t)(slots - 1);
	}
	memset(t->slot, 0xff, slots * sizeof(*t->slot)); /* every slot's entry NIL */
	for (p = 0; p < n; p++)
		if (!is_unseen(t, p))
			index_insert(t, p, key_hash(ring[p]));
}

/* Makes room for one more position at the ring's tail. */
static void ring_room(struct kv_tier *t)
{
	uint32_t size = t->rmask + 1;

	if (t->used < size)
		return;
	if (2 * (uint64_t)t->n > size && size < 2 * (uint64_t)t->max_blocks)
		size *= 2;
	rewrite(t, size);
}

/* Appends key at the tail, in no index when unseen: most recently used; returns its position. */
static uint32_t ring_push(struct kv_tier *t, uint64_t key, int unseen)
{
	uint32_t p;

	ring_room(t);
	p = (t->head + t->used++) & t->rmask;
	t->ring[p] = key;
	t->moved[p >> 6] &= ~(1ULL << (p & 63));
	t->unseen[p >> 6] = (t->unseen[p >> 6] & ~(1ULL << (p & 63))) | (uint64_t)(unseen != 0) << (p & 63);
	return p;
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
	t->max_blocks = (uint32_t)KV_MIN(cfg->capacity_bytes / block_bytes, (uint64_t)NIL / 4);
	kv_kvlink_init(&t->rd, link_Bps(cfg->read_Bps), 0, 16);
	kv_kvlink_init(&t->wr, link_Bps(cfg->write_Bps), 0, 16);
	t->write_ser_ns = kv_kvlink_ser_ns(t->wr.bw_bytes_s, block_bytes);
	t->rmask = 63; /* grows by use */
	rewrite(t, 64);
	return t;
}

static void check_tier(const struct kv_tier *t)
{
	const struct kv_tier_stats *s = &t->st;

	KV_CHECK(t->n <= t->used && t->used <= t->rmask + 1, "tier ring: %u blocks in %u of %u positions",
		 t->n, t->used, t->rmask + 1);
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
	free(t->ring);
	free(t->moved);
	free(t->unseen);
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

/* --- the LRU order ---------------------------------------------------------- */

/* Makes block key (hash h, held) the most recently used: a move to the ring's tail (found again after ring_room, which may rebuild the index). */
static void touch(struct kv_tier *t, uint64_t key, uint32_t h)
{
	uint32_t i, p;

	ring_room(t); /* first: a rewrite rebuilds the index */
	i = find(t, key, h);
	p = t->slot[i].e;
	t->moved[p >> 6] |= 1ULL << (p & 63);
	t->slot[i].e = ring_push(t, key, 0);
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

/*
 * A write of one block on t's write link at now (asynchronous: nothing
 * waits, so the link keeps no record of it: kv_kvlink_submit_untracked).
 */
static void write_link(struct kv_tier *t, kv_ns now)
{
	kv_kvlink_submit_untracked(&t->wr, t->block_bytes, t->write_ser_ns, now);
	t->st.write_busy_ns = t->wr.busy_ns;
}

/* Takes t's least recently used block out; returns its key, *unseen whether it was in no index. */
static uint64_t pop_lru(struct kv_tier *t, int *unseen)
{
	uint64_t key;

	while (is_moved(t, t->head)) { /* a touched block's old place */
		t->head = (t->head + 1) & t->rmask;
		t->used--;
	}
	key = t->ring[t->head];
	*unseen = is_unseen(t, t->head);
	if (!*unseen)
		index_remove(t, t->head, key_hash(key));
	t->head = (t->head + 1) & t->rmask;
	t->used--;
	t->n--;
	t->st.used_bytes -= t->block_bytes;
	return key;
}

/*
 * Block key arrives in tier i (its bytes counted in), written at now.  The
 * tier full, its LRU block moves to tier i + 1 first, or is dropped from
 * the last tier.  Iterative: one block moves per tier at most.  An unseen
 * block (kv_tiers_put_unseen) stays out of a tier only this stack uses: it
 * is in none of them, and nobody will look for it there; a tier that other
 * stacks share indexes it (and drops it when it is there already).
 */
static void arrive(struct kv_tiers *s, uint32_t i, uint64_t key, kv_ns now, int unseen)
{
	for (;;) {
		struct kv_tier *t = s->t[i];
		uint32_t h = key_hash(key);
		int out_unseen = 0;
		uint64_t out;

		unseen = unseen && t->users == 1;
		t->st.in_bytes += t->block_bytes;
		assert(!unseen || find(t, key, h) == NIL);
		if (!unseen && find(t, key, h) != NIL) { /* already here: the copy is dropped, counted */
			touch(t, key, h);
			t->st.drop_bytes += t->block_bytes;
			return;
		}
		write_link(t, now);
		out = NIL;
		if (t->n == t->max_blocks) {
			out = pop_lru(t, &out_unseen);
			if (i + 1 < s->n)
				t->st.down_bytes += t->block_bytes;
			else
				t->st.drop_bytes += t->block_bytes;
		}
		if (unseen)
			ring_push(t, key, 1);
		else
			index_insert(t, ring_push(t, key, 0), h);
		t->n++;
		t->st.used_bytes += t->block_bytes;
		if (out == NIL || i + 1 >= s->n)
			return;
		key = out; /* the evicted block goes down */
		unseen = out_unseen;
		i++;
	}
}

/*
 * The tiers' loads are independent: each tier's head key is read before
 * any slot is needed, so the misses of the three tiers overlap.  The empty
 * volatile asm keeps the call: a function of loads and prefetches alone is
 * pure to the compiler, and a call to a pure function returning nothing
 * is deleted (GCC did, across units, with LTO).
 */
static void prefetch(const struct kv_tiers *s, uint64_t key, int unseen)
{
	uint32_t i;

	for (i = 0; i < s->n; i++) {
		const struct kv_tier *t = s->t[i];

		unseen = unseen && t->users == 1;
		if (!unseen) /* an unseen block takes no slot here (arrive) */
			__builtin_prefetch(&t->slot[key_hash(key) & t->mask]);
		__builtin_prefetch(&t->ring[(t->head + t->used) & t->rmask], 1);
		if (t->n < t->max_blocks)
			break;
		key = t->ring[t->head]; /* the block that goes down (a moved one's key: a hint) */
		unseen = is_unseen(t, t->head);
		if (!unseen) /* its slot, which it leaves */
			__builtin_prefetch(&t->slot[key_hash(key) & t->mask]);
	}
	__asm__ __volatile__("");
}

void kv_tiers_prefetch(const struct kv_tiers *s, uint64_t key)
{
	prefetch(s, key, 0);
}

void kv_tiers_prefetch_unseen(const struct kv_tiers *s, uint64_t key)
{
	prefetch(s, key, 1);
}

void kv_tiers_prefetch_ahead(const struct kv_tiers *s, uint64_t key, uint32_t d)
{
	int unseen = 1;
	uint32_t i;

	for (i = 0; i < s->n; i++) {
		const struct kv_tier *t = s->t[i];
		uint32_t p;

		unseen = unseen && t->users == 1;
		if (!unseen)
			__builtin_prefetch(&t->slot[key_hash(key) & t->mask]);
		__builtin_prefetch(&t->ring[(t->head + t->used + d) & t->rmask], 1);
		if (t->n < t->max_blocks || d >= t->used)
			break;
		p = (t->head + d) & t->rmask;
		key = t->ring[p]; /* the block that will go down then (a guess) */
		unseen = is_unseen(t, p);
		if (!unseen)
			__builtin_prefetch(&t->slot[key_hash(key) & t->mask]);
	}
	__asm__ __volatile__("");
}

static void put(struct kv_tiers *s, uint64_t key, kv_ns now, int unseen)
{
	if (!s->n)
		return;
	prefetch(s, key, unseen);
	s->gpu_out_bytes += s->t[0]->block_bytes;
	arrive(s, 0, key, now, unseen);
	kv_tiers_check(s); /* O(tiers): always on */
}

void kv_tiers_put(struct kv_tiers *s, uint64_t key, kv_ns now)
{
	put(s, key, now, 0);
}

void kv_tiers_put_unseen(struct kv_tiers *s, uint64_t key, kv_ns now)
{
	put(s, key, now, 1);
}

int kv_tiers_find(struct kv_tiers *s, uint64_t key)
{
	uint32_t i, h = key_hash(key);

	for (i = 0; i < s->n; i++) {
		struct kv_tier *t = s->t[i];

		t->st.lookup_blocks++;
		if (find(t, key, h) != NIL) {
			touch(t, key, h); /* read soon: most recently used */
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
