/*
 * kvindex.h -- the cluster's block index: which replicas cache which prefix
 * block, fed by the cache models' KV events (cache.h on_block), as NVIDIA
 * Dynamo's KvIndexer is fed by its workers' KV events
 * (https://docs.nvidia.com/dynamo/design-docs/router-design).
 *
 * Use: kv_kvindex_add() when replica r caches block key, _remove() when it
 * evicts it; kv_kvindex_walk() takes a request's block keys in order and
 * finds, for every replica of a range holding its first block, how many
 * leading blocks it holds (its cached prefix).
 *
 * Structure: one head per key held, in an open-addressing table (linear
 * probing, backward-shift deletion, load <= 1/2), holding the key's holder
 * count and its holders in one of three forms by that count:
 *   1 holder               the replica itself, in the head;
 *   2 .. promote - 1       a list of replica indices, unordered, in a pool
 *                          of lists of its size class (capacity the least
 *                          power of two >= count);
 *   promote and more       a set: a bitset over the replicas, W =
 *                          ceil(replicas / 64) words, in a pool of sets;
 *                          a set goes back to a list (or the head) when
 *                          its count falls below demote.
 * promote = max(2, W), demote = max(2, promote / 2): a set is no larger than
 * the list it replaces, and a key near the threshold does not flip at every
 * event.  Pools double when full and keep freed entries on free lists: no
 * event allocates once the high-water mark of keys held is reached.
 *
 * A walk whose first block has a set narrows a bitset of survivors by a
 * word-wise AND per block (a list: its holders' bits), and gives each
 * replica dropped at block i the depth i: O(W) per block walked plus
 * O(candidates), not O(candidates x blocks).  A walk whose first block has
 * fewer than promote holders narrows that short list: O(promote) per block.
 *
 * Invariant: the holders recorded are exactly the (key, replica) pairs the
 * replicas' cache models hold, less the keys only their own request can
 * match (cache.h KV_BLOCK_OWN: the prefix-load router leaves them out)
 * (checked against the caches' own walks by the
 * prefix-load router's verify option in the tests), a head's count is its
 * holders and its form is the one its count and history allow (1: in the
 * head; a list below promote; a set from promote until below demote); a
 * head exists iff its count is nonzero.
 */
#ifndef KV_KVINDEX_H
#define KV_KVINDEX_H

#include "kv_common.h"

#define KV_KVINDEX_CLASSES 32 /* list size classes: capacities 2, 4, .. 2^32 */

struct kv_kvindex {
	struct kv_kvhead {
		uint64_t key; /* block key */
		uint32_t count; /* replicas holding it; 0: an empty slot */
		uint32_t ref; /* count 1: the replica; a list's index in its class; KV_KVINDEX_SET | a set's index */
	} *head; /* the table, mask + 1 slots (NULL: none yet) */
	uint32_t mask; /* table slots - 1 */
	uint32_t n_keys; /* heads in use */
	uint64_t holders; /* (key, replica) pairs held */
	uint32_t promote, demote; /* the list -> set and set -> list thresholds (holders) */
	uint32_t words; /* W: words of a set */
	/* list pools, by size class c (lists of 2^(c+1) replicas): entries, used, allocated, free list */
	uint32_t *list[KV_KVINDEX_CLASSES];
	uint32_t list_used[KV_KVINDEX_CLASSES], list_cap[KV_KVINDEX_CLASSES];
	uint32_t list_free[KV_KVINDEX_CLASSES];
	/* the set pool: W words per set */
	uint64_t *set;
	uint32_t set_used, set_cap, set_free;
	/* kv_kvindex_walk's scratch, sized for n_rep replicas */
	uint32_t n_rep;
	uint32_t *depth; /* blocks held from the first, valid when stamp[r] == gen */
	uint32_t *stamp; /* walk generation that set depth */
	uint32_t gen; /* the current walk */
	uint32_t *alive; /* a short walk's replicas holding every block so far */
	uint64_t *live, *next; /* a set walk's survivors and the next block's, W words each */
};

#define KV_KVINDEX_SET 0x80000000u /* ref: a set */

/* An empty index for replicas 0..n_rep-1 (the default thresholds). */
void kv_kvindex_init(struct kv_kvindex *x, uint32_t n_rep);
void kv_kvindex_release(struct kv_kvindex *x);

/*
 * Sets the thresholds (2 <= demote <= promote; tests): only on an empty
 * index, right after kv_kvindex_init.
 */
void kv__kvindex_thresholds(struct kv_kvindex *x, uint32_t promote, uint32_t demote);

/* Replica r now caches block key (it did not). */
void kv_kvindex_add(struct kv_kvindex *x, uint64_t key, uint32_t r);

/* Replica r no longer caches block key (it did). */
void kv_kvindex_remove(struct kv_kvindex *x, uint64_t key, uint32_t r);

/* Whether replica r caches block key. */
int kv_kvindex_has(const struct kv_kvindex *x, uint64_t key, uint32_t r);

/* Replicas caching block key. */
uint32_t kv_kvindex_count(const struct kv_kvindex *x, uint64_t key);

/* Whether block key's holders are kept as a set (1) or in the head or a list (0; 0 if none). */
int kv_kvindex_is_set(const struct kv_kvindex *x, uint64_t key);

/*
 * Walks keys[0..n) over replicas [lo, hi): stores in cand[] every replica
 * of the range holding keys[0] (at most hi - lo, in no particular order)
 * and returns their count; depth(x, r) is then the leading blocks r holds
 * (>= 1) for those, 0 for every other replica.  The walk ends when no
 * replica holds every block so far.
 */
uint32_t kv_kvindex_walk(struct kv_kvindex *x, const uint64_t *keys, uint32_t n, uint32_t lo,
			 uint32_t hi, uint32_t *cand);

/* After a walk: the leading blocks replica r holds (0 when not a candidate). */
static inline uint32_t kv_kvindex_depth(const struct kv_kvindex *x, uint32_t r)
{
	return x->stamp[r] == x->gen ? x->depth[r] : 0;
}

#endif /* KV_KVINDEX_H */
