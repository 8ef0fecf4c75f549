/*
 * tiers.h -- the KV store below a replica's GPU pool: CPU DRAM, local SSD
 * and a remote store, each an LRU set of prefix blocks with a capacity, and
 * a read and a write link (bandwidth, latency, FIFO contention), as
 * LMCache's storage backends (local CPU, local disk, remote) and Mooncake's
 * store (Qin et al., "Mooncake: A KVCache-centric Architecture for LLM
 * Serving", FAST'25, section 4: DRAM/SSD pools, 512-token blocks).
 *
 * A stack (struct kv_tiers) is tier 0 (CPU), tier 1 (SSD), tier 2
 * (remote): each present when its capacity is nonzero.  The remote tier may
 * be one instance shared by every replica of the cluster.  Blocks are
 * named by the 64-bit chained prefix key the cache model uses
 * (cache_shared.c), all of one size per stack (block_bytes).
 *
 *   put      a block the GPU evicts enters the first tier (written over
 *            its write link, asynchronously: no request waits for it); a
 *            full tier moves its least recently used block to the next tier
 *            down, and the last tier drops it, counted.  A block already in
 *            the tier a block moves to is touched and the copy moving down
 *            is dropped, counted (dedup).
 *   find     the first tier holding a key (a lookup counts per tier; a hit
 *            is touched: most recently used).
 *   load     n blocks read from tier i over its read link (kvlink.h): the
 *            transfer queues behind earlier reads of that link (FIFO),
 *            takes ceil(n * block_bytes * 1e9 / read_Bps) ns, and lands
 *            latency_ns after it leaves; returns when it lands.  The blocks stay in the tier (a
 *            copy, as LMCache's retrieve), touched.
 *
 * Invariant (checked by kv_tiers_check and at kv_tier_free): for every
 * tier, in_bytes = used_bytes + down_bytes + drop_bytes (bytes that
 * arrived either stay, move down to the next tier, whose in_bytes they
 * are, or are dropped and counted), and used_bytes <= capacity_bytes.
 * Reads copy and move nothing.  A tier's ring and index grow by doubling
 * up to twice its capacity in blocks (the ring) and are compacted at most
 * once per half a ring of touches; no allocation otherwise.
 */
#ifndef KV_TIERS_H
#define KV_TIERS_H

#include "kv_common.h"

#define KV_TIERS_MAX 3 /* CPU, SSD, remote */

/* One tier's parameters. */
struct kv_tier_cfg {
	uint64_t capacity_bytes; /* bytes held at most; 0: the tier is absent */
	double read_Bps; /* read link toward the GPU, bytes/s */
	double write_Bps; /* write link from the GPU, bytes/s */
	kv_ns latency_ns; /* added to every transfer, ns */
};

/* A tier's counters (what tiers.csv reports). */
struct kv_tier_stats {
	uint64_t in_bytes; /* bytes written into the tier (from the GPU or the tier above) */
	uint64_t down_bytes; /* bytes moved to the next tier down */
	uint64_t drop_bytes; /* bytes dropped: evicted from the last tier, or already below */
	uint64_t read_bytes; /* bytes read back to a GPU */
	uint64_t used_bytes; /* bytes held now */
	uint64_t lookup_blocks; /* blocks looked up in this tier (missed above it) */
	uint64_t hit_blocks; /* of those, found here */
	kv_ns read_busy_ns, write_busy_ns; /* time the links were busy */
};

/* A tier (opaque: tiers.c; its links are kvlink.h's). */
struct kv_tier;

/* A replica's stack: tiers 0..n-1, the remote one perhaps shared. */
struct kv_tiers {
	struct kv_tier *t[KV_TIERS_MAX]; /* tier i, NULL when absent */
	uint32_t kind[KV_TIERS_MAX]; /* which of CPU (0), SSD (1), remote (2) t[i] is */
	uint32_t n; /* tiers present */
	uint64_t gpu_out_bytes; /* bytes the GPU evicted into the stack (tier 0's in_bytes from this replica) */
};

/*
 * A tier of blocks of block_bytes; *cfg copied.  The caller frees it with
 * kv_tier_free (which checks conservation).
 */
struct kv_tier *kv_tier_new(const struct kv_tier_cfg *cfg, uint64_t block_bytes);
void kv_tier_free(struct kv_tier *t);

/* Appends tier t of kind (0 CPU, 1 SSD, 2 remote) below the others; t->users++. */
void kv_tiers_add(struct kv_tiers *s, struct kv_tier *t, uint32_t kind);

/* A block the GPU evicts, at now: into tier 0, moving blocks down as above. */
void kv_tiers_put(struct kv_tiers *s, uint64_t key, kv_ns now);

/*
 * The same for a block that is in no tier of this stack and that nobody
 * will ever look up in the tiers only this stack uses (the own blocks of a
 * request that left the replica for good, cache_shared.c runs): there it
 * takes its place in the LRU order and the capacity but no index entry, and
 * keeps none as it moves down them; a tier other stacks share (the remote
 * one) indexes it and drops it when it is there already, as any block.  No
 * counter, order or time differs from kv_tiers_put; a tier's index insert
 * and delete, a cache miss each on a fleet's tiers, are saved.
 */
void kv_tiers_put_unseen(struct kv_tiers *s, uint64_t key, kv_ns now);

/*
 * Prefetches what a put of key would touch: in each tier down the stack,
 * the slot of the arriving key, and when the tier is full the LRU block
 * that leaves it (its entry, its successor's, its slot), which arrives in
 * the next tier.  The tiers' loads are independent, so their cache misses
 * overlap instead of following one another (a fleet's tiers outgrow the
 * caches).  A hint: changes nothing.
 */
void kv_tiers_prefetch(const struct kv_tiers *s, uint64_t key);
void kv_tiers_prefetch_unseen(const struct kv_tiers *s, uint64_t key); /* for kv_tiers_put_unseen */

/*
 * As kv_tiers_prefetch_unseen for the put of key that comes d puts from
 * now, when each of them is unseen and moves every full tier's LRU block
 * down by one (a batch of evictions from a run): the tiers' ring positions
 * d ahead, and the slots of the keys that will then arrive in and leave
 * a shared tier.  A hint: changes nothing, and a guess wrong (a touched
 * block in the way) costs only the fetch.
 */
void kv_tiers_prefetch_ahead(const struct kv_tiers *s, uint64_t key, uint32_t d);

/* The first tier (index into t[]) holding key, counting the lookups; -1 when none. */
int kv_tiers_find(struct kv_tiers *s, uint64_t key);

/* Reads n blocks from tier i starting at now; returns when they land (ns). */
kv_ns kv_tiers_load(struct kv_tiers *s, int i, uint64_t n, kv_ns now);

/* A tier's parameters, counters, block size and users (the stacks that share it). */
const struct kv_tier_cfg *kv_tier_cfg(const struct kv_tier *t);
const struct kv_tier_stats *kv_tier_stats(const struct kv_tier *t);
uint64_t kv_tier_block_bytes(const struct kv_tier *t);
uint32_t kv_tier_users(const struct kv_tier *t);

/* Checks the conservation invariant of every tier (KV_CHECK aborts). */
void kv_tiers_check(const struct kv_tiers *s);

#endif /* KV_TIERS_H */
