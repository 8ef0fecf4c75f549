/*
 * kvindex.h -- the cluster's block index: which replicas cache which prefix
 * block, fed by the cache models' KV events (cache.h on_block), as NVIDIA
 * Dynamo's KvIndexer is fed by its workers' KV events
 * (https://docs.nvidia.com/dynamo/design-docs/router-design).
 *
 * Use: kv_kvindex_add() when replica r caches block key, _remove() when it
 * evicts it; kv_kvindex_walk() takes a request's block keys in order and
 * finds, for every replica holding its first block, how many leading blocks
 * it holds (its cached prefix), touching only replicas that hold them.
 *
 * Structure, up to 64 replicas: one open-addressing table of (key, bits of
 * the replicas holding it), load <= 1/2 (one probe per event, an AND per
 * block walked).  Beyond: one
 * record per (key, replica) held and one head per key, all
 * in flat arrays; a key's holders are a doubly linked list from its head,
 * which counts them.  One open-addressing table (linear probing,
 * backward-shift deletion, load <= 1/2) finds a record by (key, replica),
 * a head by (key, KV_NIL).  The arrays double when full: memory is
 * proportional to the most blocks the replicas held at once, and no event
 * allocates once that high-water mark is reached.
 *
 * Invariant: the records are exactly the (key, replica) pairs the replicas'
 * cache models hold (checked against their own indexes by
 * kv_kvindex_check_against in the tests and the random suite), each key's
 * count is its holders, and a head exists iff its count is nonzero.
 */
#ifndef KV_KVINDEX_H
#define KV_KVINDEX_H

#include "kv_common.h"

struct kv_kvindex {
	uint64_t *key; /* record's block key */
	uint32_t *rep; /* record's replica; KV_KVINDEX_HEAD for a key's head */
	uint32_t *prev, *next; /* holder list links (a head's next: its first holder), NIL at ends */
	uint32_t *count; /* a head's holders */
	uint32_t cap, n; /* records allocated, in use */
	uint32_t free_rec; /* free list through next[], NIL */
	uint32_t *slot; /* the table: record index, NIL when empty */
	uint32_t mask; /* table slots - 1 */
	uint64_t holders; /* (key, replica) pairs held */
	/* up to 64 replicas: a table of (key, holders' bits), empty where bits == 0 */
	struct kv_kvbits {
		uint64_t key; /* block key */
		uint64_t bits; /* bit r: replica r holds it; 0: empty slot */
	} *bt;
	uint32_t bt_mask; /* bt slots - 1 (0: no table yet) */
	uint32_t bt_n; /* keys held */
	/* kv_kvindex_walk's scratch, sized for n_rep replicas */
	uint32_t n_rep;
	uint32_t *depth; /* blocks held from the first, valid when stamp[r] == gen */
	uint32_t *stamp; /* walk generation that set depth */
	uint32_t gen; /* the current walk */
	uint32_t *alive; /* replicas holding every block walked so far */
};

#define KV_KVINDEX_HEAD UINT32_MAX

/* An empty index for replicas 0..n_rep-1. */
void kv_kvindex_init(struct kv_kvindex *x, uint32_t n_rep);
void kv_kvindex_release(struct kv_kvindex *x);

/* Replica r now caches block key (it did not). */
void kv_kvindex_add(struct kv_kvindex *x, uint64_t key, uint32_t r);

/* Replica r no longer caches block key (it did). */
void kv_kvindex_remove(struct kv_kvindex *x, uint64_t key, uint32_t r);

/* Whether replica r caches block key. */
int kv_kvindex_has(const struct kv_kvindex *x, uint64_t key, uint32_t r);

/* Replicas caching block key. */
uint32_t kv_kvindex_count(const struct kv_kvindex *x, uint64_t key);

/*
 * Walks keys[0..n): stores in cand[] every replica holding keys[0] (at most
 * n_rep, in no particular order) and returns their count; depth(x, r) is
 * then the leading blocks r holds (>= 1).  Cost: O(sum over the blocks
 * walked of min(holders, replicas still matching)), the walk ending when no
 * replica holds every block so far.
 */
uint32_t kv_kvindex_walk(struct kv_kvindex *x, const uint64_t *keys, uint32_t n, uint32_t *cand);

/* After a walk: the leading blocks replica r holds (0 when not a candidate). */
static inline uint32_t kv_kvindex_depth(const struct kv_kvindex *x, uint32_t r)
{
	return x->stamp[r] == x->gen ? x->depth[r] : 0;
}

#endif /* KV_KVINDEX_H */
