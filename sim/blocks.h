/*
 * blocks.h -- a request's KV holding as a table of buddy blocks.
 *
 * The pool caps its largest contiguous block (memory.max_block, 8 MiB by
 * default), so a holding of more bytes than that -- a full preallocation, a
 * 16-token block of a 13B model -- is an *extent*: its size rounded up to
 * whole pool units, decomposed into blocks by the binary digits of the unit
 * count, largest first (50 units with a 32-unit cap: 32 + 16 + 2).  With
 * `pow2` the unit count is first rounded up to a power of two, as a
 * single-block buddy allocation would; the difference is internal waste.
 *
 * A request's blocks are listed in a block table (as vLLM's), kept in
 * fixed-size pages of block offsets from a per-replica page arena: a table
 * is named by one 64-bit word (its *last* page in the low half, the block
 * count in the high half; KV_BLOCKS_EMPTY when it has none) that fits a
 * request's cache words.  Pages link backwards and every page but the last
 * is full, so the count says where the next offset goes: appending stores
 * without reading the table, and truncating frees from the end.  Pages are
 * recycled through a free list, so once the arena has reached its
 * high-water mark, building and freeing tables allocates nothing.  Freeing
 * walks offsets stored side by side, so the pool's records are fetched
 * independently (a linked chain through the pool would make every block a
 * dependent cache miss).  A block is in at most one table (prefix sharing
 * keeps its own index of shared blocks).
 *
 * Parking (opt-in, `park`; `full` sets it: every request takes the same
 * number of max-order blocks).  While the pool runs lazy runs (pool.h), a
 * table freed whole keeps its pages: the pool counts its blocks free
 * (kv_pool_park) and a later append of the same number of max-order
 * blocks to an empty table takes the last parked table back whole, the
 * offsets the pool's stack would have handed out, in the same order.  Any
 * other use of the pool first has the parked tables write their offsets
 * onto its stack, in the order kv_blocks_free would have pushed them.
 * Freeing and reserving a request's holding are then O(1).  The list of
 * parked tables grows by doubling to its high-water mark, as the arena does.
 */
#ifndef KV_BLOCKS_H
#define KV_BLOCKS_H

#include "pool.h"

#define KV_BLOCKS_EMPTY UINT64_MAX
#define KV_BLOCKS_PER_PAGE 62 /* offsets per page: a page is 256 bytes */

struct kv_blocks_page {
	uint32_t prev; /* previous page of the table (toward its first), or the free list's next */
	uint32_t spare; /* keeps off[] 8-byte aligned */
	uint32_t off[KV_BLOCKS_PER_PAGE]; /* block offsets (pool units) */
};

struct kv_blocks {
	struct kv_pool *pool; /* the replica's pool */
	struct kv_blocks_page *pages; /* the page arena */
	uint32_t n_pages; /* pages in the arena */
	uint32_t free_page; /* head of the free-page list (through prev), UINT32_MAX */
	int park; /* set by the owner: freed tables are parked (below); default 0 */
	uint32_t n_parked, cap_parked; /* parked tables, room in parked[] */
	uint64_t *parked; /* tables freed whole but kept, oldest first (pool.h: parked) */
};

void kv_blocks_init(struct kv_blocks *b, struct kv_pool *pool);
void kv_blocks_release(struct kv_blocks *b);

/* Units an extent of `bytes` takes (rounded up; to a power of two with pow2). */
uint64_t kv_blocks_units(const struct kv_blocks *b, uint64_t bytes, int pow2);

/*
 * Appends an extent of `bytes` to table *t.  Returns 0 and adds the extent's
 * bytes to *held, or KV_ENOMEM with *t and *held unchanged (blocks taken
 * before the failure are returned).
 */
int kv_blocks_append(struct kv_blocks *b, uint64_t *t, uint64_t bytes, int pow2,
		     uint64_t *held);

/*
 * Appends n extents of `bytes` each (whole units, no rounding) to table *t:
 * all or nothing, as n calls of kv_blocks_append() with a rollback.  When an
 * extent is one buddy block (its units a power of two within the cap) the
 * blocks come from the pool in runs, written straight into the table pages.
 */
int kv_blocks_append_n(struct kv_blocks *b, uint64_t *t, uint64_t bytes, uint64_t n,
		       uint64_t *held);

/*
 * Grows a paged holding: while *cap_tokens < tokens, appends blocks of
 * block_tokens tokens (block_bytes each) to *t and raises *cap_tokens by
 * block_tokens per block; all or nothing.  The shared step of chunked,
 * quantized and sparse caches.  Returns 0 or KV_ENOMEM.
 */
int kv_blocks_grow(struct kv_blocks *b, uint64_t *t, uint64_t *cap_tokens, uint64_t tokens,
		   uint64_t block_tokens, uint64_t block_bytes, uint64_t *held);

/*
 * Frees the blocks appended to *t after it was `saved` (a copy of the word
 * taken earlier; KV_BLOCKS_EMPTY frees all) and restores it.  For
 * all-or-nothing growth over several appends.
 */
void kv_blocks_truncate(struct kv_blocks *b, uint64_t *t, uint64_t saved);

/* Frees the blocks of *t past its first `keep` (table order); returns their bytes. */
uint64_t kv_blocks_keep(struct kv_blocks *b, uint64_t *t, uint64_t keep);

/* Drops one reference to every block of *t and empties it; returns the bytes of the table. */
uint64_t kv_blocks_free(struct kv_blocks *b, uint64_t *t);

/*
 * Empties *t without touching the pool: its blocks' offsets go to out[] in
 * table order (room for max), and their references to the caller, which
 * keeps or frees each.  Returns the count, or UINT64_MAX (nothing done)
 * above max.  For a cache that keeps a leaving request's blocks where they
 * are instead of freeing and allocating them again.
 */
uint64_t kv_blocks_hand_over(struct kv_blocks *b, uint64_t *t, uint32_t *out, uint64_t max);

/*
 * Lists the pool units table t holds, in table (token) order: a block of 2^k
 * units at offset o contributes o, o+1, ..., o+2^k-1.  Returns the count, or
 * UINT64_MAX (out untouched) when it exceeds max.  Allocation-free; for the
 * execution backends, whose KV pages are pool units.
 */
uint64_t kv_blocks_list_units(const struct kv_blocks *b, uint64_t t, uint32_t *out, uint64_t max);

/* The offset of block i (table order, i < count) of table t; walks its pages from the last. */
uint32_t kv_blocks_at(const struct kv_blocks *b, uint64_t t, uint64_t i);

/* Number of blocks in table t. */
static inline uint64_t kv_blocks_count(uint64_t t)
{
	return t == KV_BLOCKS_EMPTY ? 0 : t >> 32;
}

#endif /* KV_BLOCKS_H */
