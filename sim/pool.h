/*
 * pool.h -- one replica's KV memory pool: a contiguous region of bytes
 * managed by a binary buddy allocator.
 *
 * The region is `size_bytes` long, cut into units of `min_block_bytes` (a
 * power of two).  Blocks are 2^k units for 0 <= k <= max_order, where
 * 2^max_order units is the cap on the largest contiguous block.  The region
 * need not be a power of two: it starts as the greedy cover of maximal
 * aligned blocks; the tail smaller than one unit is never used.
 *
 * Allocation rounds a request up to the next power of two units, takes the
 * smallest free block of at least that order (lowest offset first among
 * equals is NOT promised: free blocks of an order form a LIFO stack, deterministic), and
 * splits it, returning the upper halves to the free lists.  Freeing
 * coalesces a block with its buddy (offset XOR size) while the buddy is free
 * and of the same order and the merged order is <= max_order.  Invariant
 * (kv_pool_check): every unit is covered by exactly one block, free or
 * allocated; no two free buddies of equal order below max_order coexist; the
 * free-byte and per-order counters equal the free lists.
 *
 * Blocks carry a reference count (1 at allocation) for prefix sharing:
 * kv_pool_ref() adds one, kv_pool_free() drops one and frees at zero.
 * Freeing or referencing an offset that is not an allocated block, and a
 * count past 65535, are model bugs: KV_CHECK aborts with a message.
 *
 * All metadata lives in flat arrays sized for the whole region: alloc/free
 * allocate nothing and run in O(max_order).  Offsets are in units of
 * unit_bytes.  The arrays are mapped at the first allocation, not at init
 * (a pool never used costs its struct, ~700 bytes), as zero pages: a unit
 * record of all zeros is a unit inside a block, so the arrays are written,
 * and made resident by the system, only where blocks are cut and free
 * stacks grow (a replica holding a few requests' blocks has a few pages
 * resident, not 16 bytes for every unit of its pool).  The cover's
 * max-order blocks stay unwritten until popped: the bottom `fresh` entries
 * of that order's stack are implicit (kv_pool_map writes them out).  Before
 * the map, the counters describe the free cover and kv_pool_check checks
 * them alone.
 *
 * Runs of max-order blocks freed by kv_pool_free_n while every allocated
 * block is a max-order block with one reference (n_low == n_shared == 0)
 * go onto their stack with their records unwritten (`lazy`, the top of that
 * stack, above any `fresh` entries at its bottom); kv_pool_alloc_n hands
 * them out again as they are.  Every other operation, kv_pool_check
 * included, first writes those records, checking
 * each was an allocated max-order block with one reference: a double free
 * in such a run is caught there, at the latest by the end-of-run check.
 * A run may also be *parked* (kv_pool_park): counted free and lazy, its
 * stack entries left in the block table that held it (blocks.h), which
 * either takes it back whole (kv_pool_unpark_take) or writes the entries
 * when the pool calls `unpark` (before anything reads that stack).
 */
#ifndef KV_POOL_H
#define KV_POOL_H

#include "kv_common.h"

#define KV_POOL_MAX_ORDER 40

/*
 * Metadata of one unit.  A unit starts a block iff is_free or refs is set
 * (a free block, or an allocated one); the other fields are meaningful at a
 * block's first unit only.  All zeros: a unit inside a block.
 */
struct kv_pool_unit {
	uint32_t pos; /* index in its order's free stack (free blocks) */
	uint16_t refs; /* reference count (allocated blocks), 0 inside a block */
	uint8_t order; /* order of the block starting here (block heads only) */
	uint8_t is_free; /* 1 if a free block starts here */
};

struct kv_pool {
	uint64_t size_bytes; /* usable region (multiple of min block), bytes */
	uint64_t unit_bytes; /* min block, bytes (power of two) */
	uint32_t n_units; /* size_bytes / unit_bytes */
	uint32_t max_order; /* largest block is 2^max_order units */
	uint32_t *stack[KV_POOL_MAX_ORDER + 1]; /* free blocks of each order; n_free_blocks[k] used */
	uint64_t free_mask; /* bit k set iff free list k is nonempty */
	struct kv_pool_unit *u; /* n_units records; NULL until the first allocation maps them */
	uint64_t fresh; /* stack[max_order][0..fresh) never written: entry i is the cover's block i << max_order, its record still zero */
	void *meta; /* the map holding u and the stacks, meta_bytes long; NULL before */
	size_t meta_bytes; /* its length, bytes (a multiple of the page size) */
	uint64_t free_bytes; /* bytes in free blocks */
	uint64_t n_free_blocks[KV_POOL_MAX_ORDER + 1]; /* free blocks per order (stack heights) */
	uint64_t alloc_fail; /* allocations refused */
	uint64_t alloc_fail_frag; /* refused although free_bytes >= the request */
	uint64_t n_allocs, n_frees; /* blocks allocated, blocks freed (at refcount 0) */
	uint64_t lazy; /* blocks atop the max-order stack freed with their records unwritten */
	uint64_t parked; /* of those, the top ones whose stack entries are unwritten too */
	void (*unpark)(void *ctx); /* writes the parked entries (blocks.h) and zeroes parked */
	void *unpark_ctx; /* its argument: the block tables holding them; NULL: none */
	uint64_t n_shared; /* allocated blocks with more than one reference */
	uint64_t n_low; /* allocated blocks below max_order */
	struct kv_pool_watch *watch; /* NULL, or the list a free puts this pool on (kv__pool_freed) */
	uint32_t watch_id; /* this pool's id on that list (its replica's index) */
	int watch_listed; /* 1: on the list since its watcher last read it */
};

/*
 * The pools that may have gained free bytes since their watcher last read
 * this list (disagg.c keeps lower bounds of its decode replicas' loads,
 * which stay bounds while nothing is freed; the replica also lists its
 * pool when KV bytes on their way to it are taken off its load): each id
 * at most once, id has room for every watched pool.  The watcher empties
 * it and clears each pool's watch_listed.
 */
struct kv_pool_watch {
	uint32_t *id; /* watch_id of each pool listed */
	uint32_t n; /* entries of id */
};

/* Lists p on its watch (if any): its free bytes may have grown.  O(1). */
static inline void kv__pool_freed(struct kv_pool *p)
{
	if (p->watch && !p->watch_listed) {
		p->watch_listed = 1;
		p->watch->id[p->watch->n++] = p->watch_id;
	}
}

/*
 * Initialises a pool of size_bytes (rounded down to whole units) with units
 * of min_block_bytes and the largest block max_block_bytes (both powers of
 * two; max_block_bytes == 0, or one above the region, means the largest
 * power of two that fits the region).  Returns 0, KV_EINVAL when the sizes
 * are not powers of two, max_block_bytes < min_block_bytes or the region
 * holds no unit, or KV_ERANGE above INT32_MAX units.  On error *p is zeroed
 * and kv_pool_release(p) is a no-op.
 */
int kv_pool_init(struct kv_pool *p, uint64_t size_bytes, uint64_t min_block_bytes,
		 uint64_t max_block_bytes);
void kv_pool_release(struct kv_pool *p);

/*
 * Maps the metadata if it is not yet (kv_pool_alloc and kv_pool_alloc_n do
 * at the first allocation), writes the records of lazily freed runs (as
 * kv_pool_check does; parked entries via `unpark`) and the records and
 * stack entries of the free max-order blocks of the cover the pool has not
 * touched yet (left zero otherwise: `fresh`), O(n_units); for callers that
 * walk u or the stacks.  Changes no count of blocks or bytes and no future
 * allocation.  Aborts out of memory.
 */
void kv_pool_map(struct kv_pool *p);

/* Order of the smallest block holding `bytes` (0 for 0), or -1 when above max_order. */
int kv_pool_order_for(const struct kv_pool *p, uint64_t bytes);

/* Bytes in a block of this order. */
static inline uint64_t kv_pool_block_bytes(const struct kv_pool *p, unsigned order)
{
	return p->unit_bytes << order;
}

/*
 * Allocates one block of the given order; stores its offset (units) in *off.
 * Returns 0, KV_ENOMEM when no free block is large enough (counted in
 * alloc_fail, and in alloc_fail_frag when free_bytes would have sufficed),
 * or KV_ETOOBIG, counted nowhere, when order > max_order.
 */
int kv_pool_alloc(struct kv_pool *p, unsigned order, uint32_t *off);

/*
 * Drops one reference to each block in off[0..n) (kv_pool_free for each);
 * returns the bytes of those blocks.  Max-order blocks, which have no buddy
 * to merge with, go back to their stack in one pass.
 */
uint64_t kv_pool_free_n(struct kv_pool *p, const uint32_t *off, uint32_t n);

/*
 * Counts n max-order blocks free without writing their stack entries or
 * records (pool.h: parked), on top of the max-order stack.  Returns 0, or
 * KV_EINVAL (nothing done) unless lazy runs are on (n_low == n_shared ==
 * 0), p->unpark is set and the stack has room.  The caller must write the
 * entries in kv_pool_free_n's order when p->unpark is called.
 */
int kv_pool_park(struct kv_pool *p, uint64_t n);

/*
 * Allocates the n parked blocks on top of the max-order stack (the last
 * run parked, whole) back to the caller that parked them: what
 * kv_pool_alloc_n of n max-order blocks would take.  n <= parked (KV_CHECK).
 */
void kv_pool_unpark_take(struct kv_pool *p, uint64_t n);

/*
 * Allocates n blocks of the given order into off[0..n): all or nothing
 * (KV_ENOMEM, counted as kv_pool_alloc counts it, with nothing taken).
 * Equivalent to n calls of kv_pool_alloc(); when the order's free stack holds
 * n blocks it takes them in one pass, as a paged cache's prompt needs.
 */
int kv_pool_alloc_n(struct kv_pool *p, unsigned order, uint32_t n, uint32_t *off);

/*
 * A hint: fetches, for writing, the record of the allocated block at off
 * (about to be freed or referenced).  Changes nothing.
 */
static inline void kv_pool_prefetch_block(const struct kv_pool *p, uint32_t off)
{
	if (p->u && off < p->n_units)
		__builtin_prefetch(&p->u[off], 1);
	__asm__ __volatile__(""); /* kept: a function of loads and prefetches alone is pure (tiers.c) */
}

/*
 * Drops one reference to the allocated block at off; frees (and coalesces)
 * it at zero.  Returns the remaining count.  off must be an allocated
 * block's head (KV_CHECK).
 */
unsigned kv_pool_free(struct kv_pool *p, uint32_t off);

/*
 * Adds one reference to the allocated block at off; returns the new count.
 * off must be an allocated block's head and the count below 65535 (KV_CHECK).
 */
unsigned kv_pool_ref(struct kv_pool *p, uint32_t off);

/* Bytes of the largest free block (0 when none). */
uint64_t kv_pool_largest_free(const struct kv_pool *p);

/*
 * External fragmentation: the share of free bytes not in blocks of the
 * largest order, 1 - (free max-order bytes) / free_bytes; 0 when nothing is
 * free.  With a cap on the block size, free memory in max-size blocks is as
 * usable as one block, so this generalises 1 - largest_free / free_bytes
 * (which it equals when a single max-order block remains free).
 */
double kv_pool_ext_frag(const struct kv_pool *p);

/*
 * Full integrity check, O(n_units).  Returns 0, or KV_EINVARIANT with a
 * description in msg (when non-NULL, msglen bytes).
 */
int kv_pool_check(const struct kv_pool *p, char *msg, size_t msglen);

#endif /* KV_POOL_H */
