/*
 * pool.c -- binary buddy allocator over flat per-unit arrays.
 *
 * The algorithm is Knowlton's buddy system (CACM 8(10), 1965; Knuth TAOCP
 * 2.5): a block of order k is 2^k units starting at a multiple of 2^k, and
 * its buddy is the block at offset XOR 2^k.  Alloc takes the smallest
 * nonempty free list of order >= the request (a bit mask of nonempty lists
 * finds it with one count-trailing-zeros), splits it down, pushing each
 * upper half onto its list.  Free merges with the buddy while the buddy is a
 * free block of the same order and the merged order is <= max_order; the
 * merged block then lies in the region, since a free buddy does.
 *
 * A region of n units that is not a power of two starts as its greedy cover
 * by maximal aligned blocks: at offset o take the largest k <= max_order
 * with 2^k | o and o + 2^k <= n.  Blocks of the cover never merge across its
 * cuts (below max_order, the would-be buddy is not whole inside the region
 * or is split), so everything freed returns to the same cover.
 *
 * Bounds: internal waste < 50% of each block (power-of-two rounding).
 * Robson's bound (JACM 21(3), 1974), as SQLite's mem5.c states it for its
 * buddy allocator: with N units in the region, at most M units live at once
 * and requests of at most n units (all rounded to powers of two), no
 * allocation fails while N >= M * (1 + log2(n) / 2) - n + 1.  Refusals
 * that free_bytes alone would have allowed are counted in alloc_fail_frag.
 *
 * Choice of block among equals: each order's free blocks are a stack (an
 * array; a block records its position, so a buddy leaves from the middle in
 * O(1) by moving the top into its place).  Pops take the top: the most
 * recently freed block is reused first, as Linux's per-order lists do for
 * cache-hot pages; deterministic.  A stack rather than a linked list because
 * popping a linked list reads the popped block's record to find the next
 * head, a cache miss per allocation that dominated runs of paged caches;
 * a stack is read sequentially.  Lowest address first was rejected:
 * address-ordered lists make insertion O(free blocks), and a per-order
 * bitmap with find-first-set costs O(n_units / 64) per search without a
 * second level.
 *
 * Per-unit metadata is one 8-byte record: is_free (free heads), refs
 * (allocated heads), order and pos (free heads: index in its order's stack)
 * at heads only; a unit is a head iff is_free or refs is set, so the zero
 * record is an interior unit and the records need no initial pass (they
 * were 0xff-marked, which wrote every unit of every replica's pool at init:
 * 54 KB per replica and a tenth of a 10,000-replica run's time in page
 * faults).  The records and the stacks live in one anonymous map of zero
 * pages made at the first allocation (pool_map): the system makes a page
 * resident when it is first written, so a pool's resident metadata follows
 * the blocks it has cut and the free stacks' heights, not the region.
 * Rejected: recycling a whole pool's arrays between replicas when it
 * empties (each replica is busy at once on a loaded fleet: no saving), and
 * a sparse or paged record table (a branch or an indirection on every
 * record access, and blocks.c reads the records directly).  One record,
 * not five arrays: an alloc or free touches one cache line per block
 * instead of five, which made tables of 8 MiB blocks (175 per ShareGPT
 * request with 16-token blocks) affordable.
 *
 * Lazy runs.  A preallocating cache frees and takes a request's hundreds of
 * max-order blocks at once, and a record per block is a cache miss each
 * way.  While every allocated block is a max-order block with one reference
 * (the counters n_low and n_shared are 0; at max_order 0, every block of a
 * pool no cache shares), kv_pool_free_n pushes a run's offsets onto the
 * max-order stack and leaves their records as they are: "allocated, one
 * reference", `lazy` entries at the top of the stack.  kv_pool_alloc_n pops
 * them as the eager path would (same offsets, same order) and, since their
 * records already say "allocated, one reference", writes none; only pos,
 * which nothing reads in an allocated block, keeps an older value.  Any
 * other operation first settles them (settle: checks each record as
 * kv_pool_free would, then writes it free), so the stacks and records are
 * what the eager path leaves; a double free inside a lazy run is caught
 * there, later than the eager path would catch it (at the latest by the
 * end-of-run kv_pool_check).  Rejected: checking each record on the lazy
 * free (the miss the laziness avoids) and a separate pending list outside
 * the stack (a pop would have to merge two sources to keep LIFO order).
 * Both lazinesses share the max-order stack: the untouched cover (`fresh`)
 * is its bottom and only shrinks, lazy runs are pushed on its top, so
 * fresh <= n_free_blocks - lazy always, and a pop or alloc_n reaches an
 * implicit entry only after every written one above it.
 *
 * Checks.  kv_pool_check walks the whole pool (O(n_units)); the owner runs
 * it when asked (check_pool).  Beside it, as SQLite's mem5.c does, each
 * step asserts what it relies on and can see for free: an order in range,
 * a block aligned to its order and inside the region, a block free or
 * allocated as the step expects, a buddy one order apart, stack heights
 * within their capacity, counters that do not go below zero.  They cost a
 * compare on data the step already has in hand and go with NDEBUG (release
 * builds: meson's b_ndebug=if-release).  KV_CHECK guards what a caller can
 * get wrong (a bad offset, a double free) in every build.
 */
#include "pool.h"

#include <assert.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#define REFS_MAX UINT16_MAX /* highest reference count */

static inline unsigned floor_log2(uint64_t x)
{
	return 63 - (unsigned)__builtin_clzll(x);
}

static inline int is_pow2(uint64_t x)
{
	return x && !(x & (x - 1));
}

/* Whether a block of order k at off is aligned to its size and inside the region (asserts). */
static inline int block_fits(const struct kv_pool *p, uint32_t off, unsigned k)
{
	return k <= p->max_order && !(off & ((1u << k) - 1)) &&
	       (uint64_t)off + (1u << k) <= p->n_units;
}

/* Whether stack k has room for one more entry: it holds (n_units >> k) + 1 (pool_map). */
static inline int stack_room(const struct kv_pool *p, unsigned k, uint64_t n)
{
	return p->n_free_blocks[k] + n <= ((uint64_t)p->n_units >> k) + 1;
}

/* Pushes the block at off of order k on its free stack and marks it free. */
static inline void list_push(struct kv_pool *p, uint32_t off, unsigned k)
{
	uint64_t n;

	assert(block_fits(p, off, k) && stack_room(p, k, 1));
	assert(!p->u[off].is_free && !p->u[off].refs); /* an interior unit, or a block just freed */
	n = p->n_free_blocks[k]++;

	p->stack[k][n] = off;
	p->u[off].pos = (uint32_t)n;
	p->u[off].order = (uint8_t)k;
	p->u[off].is_free = 1;
	p->free_mask |= 1ULL << k;
	p->free_bytes += p->unit_bytes << k;
}

/*
 * Removes the free block at off of order k from its stack (the top takes
 * its place) and marks it not free.  Only a buddy below max_order leaves
 * from the middle: the max-order stack is pushed and popped only, so its
 * implicit bottom (`fresh`) stays a prefix.
 */
static inline void list_unlink(struct kv_pool *p, uint32_t off, unsigned k)
{
	uint64_t n;
	uint32_t pos, last;

	assert(k < p->max_order && block_fits(p, off, k)); /* a buddy: below max_order */
	assert(p->u[off].is_free && p->u[off].order == k && p->n_free_blocks[k] > 0);
	assert(p->u[off].pos < p->n_free_blocks[k] && p->stack[k][p->u[off].pos] == off);
	assert(p->free_bytes >= p->unit_bytes << k);
	n = --p->n_free_blocks[k];
	pos = p->u[off].pos;
	last = p->stack[k][n];
	p->stack[k][pos] = last;
	p->u[last].pos = pos;
	p->u[off].is_free = 0;
	if (n == 0)
		p->free_mask &= ~(1ULL << k);
	p->free_bytes -= p->unit_bytes << k;
}

/*
 * Pops the top of stack k (nonempty) and marks it not free.  Unlike
 * list_unlink it reads nothing of the block's own record: only stores reach
 * it, so a cold record costs no stall.  An implicit entry (below `fresh` on
 * the max-order stack) is the cover's block at its position, its record
 * still zero (not free).
 */
static inline uint32_t list_pop(struct kv_pool *p, unsigned k)
{
	uint64_t n;
	uint32_t off;

	assert(k <= p->max_order && p->n_free_blocks[k] > 0 && (p->free_mask >> k & 1));
	assert(p->free_bytes >= p->unit_bytes << k);
	n = --p->n_free_blocks[k];
	if (k == p->max_order && n < p->fresh) {
		p->fresh = n;
		off = (uint32_t)n << k;
	} else {
		off = p->stack[k][n];
		assert(block_fits(p, off, k) && p->u[off].is_free && p->u[off].order == k);
		p->u[off].is_free = 0;
	}
	if (n == 0)
		p->free_mask &= ~(1ULL << k);
	p->free_bytes -= p->unit_bytes << k;
	return off;
}

/* Aborts unless off is the head of an allocated block; `what` names the caller. */
static inline void check_allocated(const struct kv_pool *p, uint32_t off, const char *what)
{
	KV_CHECK(off < p->n_units && p->u, "%s: offset %u outside the pool (%u units) or none "
		 "allocated yet", what, off, p->n_units);
	KV_CHECK(!p->u[off].is_free && p->u[off].refs,
		 "%s: offset %u is not an allocated block (order %u, is_free %u, refs %u)",
		 what, off, p->u[off].order, p->u[off].is_free, p->u[off].refs);
}

/*
 * Writes the records of the lazily freed blocks atop the max-order stack
 * (header: lazy runs), bottom up, checking each as kv_pool_free would: an
 * allocated max-order block with one reference (a block freed twice is free
 * by its second copy).
 */
static __attribute__((noinline)) void settle(struct kv_pool *p)
{
	unsigned top = KV_MIN(p->max_order, (unsigned)KV_POOL_MAX_ORDER);
	uint64_t h = p->n_free_blocks[top], i;

	if (p->parked)
		p->unpark(p->unpark_ctx);
	KV_CHECK(p->parked == 0, "pool: %llu parked blocks left unwritten",
		 (unsigned long long)p->parked);
	assert(p->lazy <= h && p->fresh <= h - p->lazy); /* header: fresh, then lazy, on top */
	for (i = h - p->lazy; i < h; i++) {
		uint32_t o = p->stack[top][i];

		check_allocated(p, o, "kv_pool_free_n");
		KV_CHECK(p->u[o].order == top && p->u[o].refs == 1,
			 "kv_pool_free_n: block %u (order %u, %u references) freed as a lone "
			 "max-order block", o, p->u[o].order, p->u[o].refs);
		p->u[o] = (struct kv_pool_unit){ .pos = (uint32_t)i, .order = (uint8_t)top,
						 .is_free = 1 };
	}
	p->lazy = 0;
}

/*
 * Walks the greedy cover of maximal aligned blocks over [0, n_units): the
 * largest block that fits the rest, capped at max_order.  Orders never
 * increase along the cover, so every offset is a multiple of the block's
 * size without testing it (kv_pool_check does), and the max-order blocks
 * come first: block i of them starts at i << max_order.  With write,
 * pushes each block on its free stack (the counters must be zero), the
 * max-order ones implicitly (`fresh`: their records and entries stay zero
 * pages); without, counts them into want[] and returns the bytes they hold.
 */
static uint64_t pool_cover(struct kv_pool *p, int write, uint64_t *want)
{
	uint64_t bytes = 0;
	uint32_t off = 0;

	while (off < p->n_units) {
		unsigned k = KV_MIN(floor_log2(p->n_units - off), p->max_order);

		if (write && k == p->max_order) {
			p->n_free_blocks[k] = ++p->fresh;
			p->free_mask |= 1ULL << k;
			p->free_bytes += p->unit_bytes << k;
		} else if (write) {
			list_push(p, off, k);
		} else {
			want[k]++;
		}
		bytes += p->unit_bytes << k;
		off += 1u << k;
	}
	return bytes;
}

/*
 * Maps the unit records and the free stacks (zero pages: every unit an
 * interior one, every stack empty) and lays the cover on them, at the
 * first allocation.  Stack k holds (n_units >> k) + 1 entries.  The map is
 * released by kv_pool_release (p->meta).
 */
static __attribute__((noinline)) void pool_map(struct kv_pool *p)
{
	size_t page = (size_t)sysconf(_SC_PAGESIZE), bytes = (size_t)p->n_units * sizeof(*p->u), color;
	unsigned char *m;
	unsigned k;

	for (k = 0; k <= p->max_order; k++)
		bytes += (((size_t)p->n_units >> k) + 1) * sizeof(*p->stack[k]);
	/*
	 * Page-aligned records of every replica share cache sets at equal
	 * offsets: the records start 0..63 lines into the map, by a hash of
	 * the pool's address (layout only; no output depends on it).  Without
	 * it bench/million.yaml (16 replicas) ran 2.16 s user against 2.03 s.
	 */
	color = (size_t)(((uintptr_t)p >> 4) * 0x9e3779b97f4a7c15ULL >> 58);
	bytes += page; /* room for the shift */
	p->meta_bytes = (bytes + page - 1) / page * page;
	m = mmap(NULL, p->meta_bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (m == MAP_FAILED)
		kv_oom(p->meta_bytes);
	p->meta = m;
	m += color * 64;
	p->u = (struct kv_pool_unit *)m; /* line-aligned: 64-byte lines hold whole records */
	m += (size_t)p->n_units * sizeof(*p->u);
	for (k = 0; k <= p->max_order; k++) {
		p->stack[k] = (uint32_t *)m;
		m += (((size_t)p->n_units >> k) + 1) * sizeof(*p->stack[k]);
	}
	p->free_bytes = p->free_mask = p->fresh = 0;
	memset(p->n_free_blocks, 0, sizeof(p->n_free_blocks));
	pool_cover(p, 1, NULL);
}

int kv_pool_init(struct kv_pool *p, uint64_t size_bytes, uint64_t min_block_bytes,
		 uint64_t max_block_bytes)
{
	uint64_t n_units;
	unsigned k;

	memset(p, 0, sizeof(*p));
	if (!is_pow2(min_block_bytes) || (max_block_bytes && !is_pow2(max_block_bytes)) ||
	    (max_block_bytes && max_block_bytes < min_block_bytes))
		return KV_EINVAL;
	n_units = size_bytes / min_block_bytes;
	if (!n_units)
		return KV_EINVAL;
	if (n_units > INT32_MAX)
		return KV_ERANGE;
	p->unit_bytes = min_block_bytes;
	p->n_units = (uint32_t)n_units;
	p->size_bytes = n_units * min_block_bytes;
	p->max_order = floor_log2(n_units);
	if (max_block_bytes)
		p->max_order = KV_MIN(p->max_order, floor_log2(max_block_bytes / min_block_bytes));
	/* the counters of the free cover; its records are laid at the first allocation */
	p->free_bytes = pool_cover(p, 0, p->n_free_blocks);
	for (k = 0; k <= p->max_order; k++)
		if (p->n_free_blocks[k])
			p->free_mask |= 1ULL << k;
	return 0;
}

void kv_pool_map(struct kv_pool *p)
{
	unsigned k = p->max_order;
	uint64_t i;

	if (!p->u)
		pool_map(p);
	if (p->lazy)
		settle(p); /* lazily freed runs: their records still say allocated */
	for (i = 0; i < p->fresh; i++) {
		uint32_t off = (uint32_t)i << k;

		p->stack[k][i] = off;
		p->u[off] = (struct kv_pool_unit){ .pos = (uint32_t)i, .order = (uint8_t)k,
						   .is_free = 1 };
	}
	p->fresh = 0;
}

void kv_pool_release(struct kv_pool *p)
{
	if (p->meta)
		munmap(p->meta, p->meta_bytes);
	memset(p, 0, sizeof(*p));
}

int kv_pool_order_for(const struct kv_pool *p, uint64_t bytes)
{
	uint64_t units;
	unsigned k;

	if (bytes <= p->unit_bytes)
		return 0;
	units = ((bytes - 1) >> __builtin_ctzll(p->unit_bytes)) + 1;
	k = floor_log2(units - 1) + 1; /* ceil(log2(units)) for units >= 2 */
	return k > p->max_order ? -1 : (int)k;
}

/* Counts a refused allocation of the given order; returns KV_ENOMEM. */
static __attribute__((noinline)) int pool_refuse(struct kv_pool *p, unsigned order)
{
	p->alloc_fail++;
	if (p->free_bytes >= kv_pool_block_bytes(p, order))
		p->alloc_fail_frag++;
	return KV_ENOMEM;
}

int kv_pool_alloc(struct kv_pool *p, unsigned order, uint32_t *off)
{
	uint64_t avail;
	unsigned k;
	uint32_t o;

	if (__builtin_expect(order > p->max_order, 0))
		return KV_ETOOBIG;
	if (__builtin_expect(!p->u, 0))
		pool_map(p);
	if (p->lazy)
		settle(p);
	avail = p->free_mask >> order;
	if (__builtin_expect(!avail, 0))
		return pool_refuse(p, order);
	k = order + (unsigned)__builtin_ctzll(avail);
	o = list_pop(p, k);
	while (k > order) {
		k--;
		list_push(p, o + (1u << k), k);
	}
	assert(block_fits(p, o, order) && !p->u[o].refs);
	p->u[o].order = (uint8_t)order;
	p->u[o].refs = 1;
	p->n_allocs++;
	p->n_low += order < p->max_order;
	*off = o;
	return 0;
}

int kv_pool_alloc_n(struct kv_pool *p, unsigned order, uint32_t n, uint32_t *off)
{
	uint64_t top, lazy, fresh;
	uint32_t i;

	if (order == p->max_order && p->n_free_blocks[order] < n) {
		/*
		 * What n calls of kv_pool_alloc do here without touching a
		 * record: take the a free blocks, be refused the next (no
		 * larger block to split), give the a back in the stack order
		 * they had.
		 */
		uint64_t a = p->n_free_blocks[order], b = kv_pool_block_bytes(p, order);

		p->n_allocs += a;
		p->n_frees += a;
		p->alloc_fail++;
		if (p->free_bytes - a * b >= b)
			p->alloc_fail_frag++;
		return KV_ENOMEM;
	}
	if (p->parked)
		settle(p);
	if (order > p->max_order || p->n_free_blocks[order] < n) {
		for (i = 0; i < n; i++) {
			if (kv_pool_alloc(p, order, &off[i])) {
				while (i--)
					kv_pool_free(p, off[i]);
				return KV_ENOMEM;
			}
		}
		return 0;
	}
	if (__builtin_expect(!p->u, 0))
		pool_map(p);
	/*
	 * The common case: n blocks straight off the top of the order's stack;
	 * the last `lazy` of them lazily freed, their records already those of
	 * allocated blocks (header: lazy runs), and those below `fresh` (max
	 * order) implicit, the cover's block at their position (list_pop).
	 */
	top = p->n_free_blocks[order] - n;
	assert(p->lazy <= p->n_free_blocks[p->max_order]);
	assert(p->free_bytes >= (uint64_t)n * (p->unit_bytes << order));
	lazy = order == p->max_order ? KV_MIN(p->lazy, (uint64_t)n) : 0;
	fresh = order == p->max_order ? p->fresh : 0;
	/* the records to write, fetched together: a freed block's is a cache miss of its own */
	for (i = KV_MAX(top, fresh) - top; n - lazy > 1 && i < n - lazy; i++)
		__builtin_prefetch(&p->u[p->stack[order][top + i]], 1);
	for (i = 0; i < n - lazy; i++) {
		uint64_t at = top + i;
		uint32_t o = at < fresh ? (uint32_t)at << order : p->stack[order][at];

		assert(block_fits(p, o, order));
		assert(at < fresh ? !p->u[o].is_free && !p->u[o].refs
				  : p->u[o].is_free && p->u[o].order == order);
		off[i] = o;
		p->u[o] = (struct kv_pool_unit){ .refs = 1, .order = (uint8_t)order };
	}
	memcpy(off + i, &p->stack[order][top + i], lazy * sizeof(*off));
	p->lazy -= lazy;
	p->n_low += order < p->max_order ? n : 0;
	if (top < fresh)
		p->fresh = top;
	p->n_free_blocks[order] = top;
	if (top == 0)
		p->free_mask &= ~(1ULL << order);
	p->free_bytes -= (uint64_t)n * (p->unit_bytes << order);
	p->n_allocs += n;
	return 0;
}

unsigned kv_pool_ref(struct kv_pool *p, uint32_t off)
{
	if (p->lazy)
		settle(p);
	check_allocated(p, off, "kv_pool_ref");
	KV_CHECK(p->u[off].refs < REFS_MAX, "kv_pool_ref: offset %u already has %u references",
		 off, p->u[off].refs);
	p->n_shared += p->u[off].refs == 1;
	assert(p->n_shared > 0);
	return ++p->u[off].refs;
}

unsigned kv_pool_free(struct kv_pool *p, uint32_t off)
{
	unsigned k;

	if (p->lazy)
		settle(p);
	check_allocated(p, off, "kv_pool_free");
	assert(block_fits(p, off, p->u[off].order));
	if (--p->u[off].refs) {
		assert(p->u[off].refs > 1 || p->n_shared > 0);
		p->n_shared -= p->u[off].refs == 1;
		return p->u[off].refs;
	}
	assert(p->u[off].order == p->max_order || p->n_low > 0);
	kv__pool_freed(p);
	p->n_frees++;
	p->n_low -= p->u[off].order < p->max_order;
	for (k = p->u[off].order; k < p->max_order; k++) {
		uint32_t buddy = off ^ (1u << k);

		assert(block_fits(p, off, k) && (off ^ buddy) == 1u << k);
		if (buddy >= p->n_units || !p->u[buddy].is_free || p->u[buddy].order != k)
			break;
		list_unlink(p, buddy, k); /* buddy: not free, no refs; the upper half is interior */
		off &= ~(1u << k);
	}
	list_push(p, off, k);
	return 0;
}

/* A unit record as one 64-bit word (the bytes of the struct, whatever their order). */
static inline uint64_t unit_word(struct kv_pool_unit u)
{
	uint64_t w;

	memcpy(&w, &u, sizeof(w));
	return w;
}

/*
 * Counts n max-order blocks pushed lazily on top of stack `top` (their
 * entries written by the caller, or parked) as free: a lazy run (header).
 * Returns their bytes.
 */
static inline uint64_t push_lazy(struct kv_pool *p, unsigned top, uint64_t n)
{
	uint64_t bytes = n * (p->unit_bytes << top);

	assert(top == p->max_order && !p->n_low && !p->n_shared); /* lazy runs are on */
	assert(p->n_free_blocks[top] + n <= p->n_units >> top);
	p->n_free_blocks[top] += n;
	if (n)
		p->free_mask |= 1ULL << top;
	p->free_bytes += bytes;
	p->n_frees += n;
	p->lazy += n;
	if (n)
		kv__pool_freed(p);
	return bytes;
}

uint64_t kv_pool_free_n(struct kv_pool *p, const uint32_t *off, uint32_t n)
{
	/* max_order <= KV_POOL_MAX_ORDER always; the bound also tells the compiler (-Warray-bounds) */
	unsigned top = KV_MIN(p->max_order, (unsigned)KV_POOL_MAX_ORDER);
	uint64_t bytes = 0, pushed = 0, h = p->n_free_blocks[top];
	/* the common case: an allocated max-order block with one reference; pos masked out */
	uint64_t mask = ~unit_word((struct kv_pool_unit){ .pos = UINT32_MAX });
	uint64_t want = unit_word((struct kv_pool_unit){ .refs = 1, .order = (uint8_t)top });
	uint64_t freed = unit_word((struct kv_pool_unit){ .order = (uint8_t)top, .is_free = 1 });
	uint32_t i;

	_Static_assert(sizeof(struct kv_pool_unit) == sizeof(uint64_t), "one word per unit");
	KV_CHECK(p->u || !n, "kv_pool_free_n: %u blocks freed, none allocated yet", n);
	if (p->parked) {
		settle(p); /* a lazy run goes on top of written entries only */
		h = p->n_free_blocks[top];
	}
	if (p->n_low == 0 && p->n_shared == 0 && n <= (p->n_units >> top) - h) {
		/* every allocated block is max-order with one reference: a lazy run (header) */
		uint32_t outside = 0;

		for (i = 0; i < n; i++) {
			outside |= off[i] >= p->n_units;
			p->stack[top][h + i] = off[i];
		}
		if (__builtin_expect(!outside, 1))
			return push_lazy(p, top, n);
	}
	if (p->lazy)
		settle(p);
	h = p->n_free_blocks[top];
	for (i = 0; i < n; i++) {
		uint32_t o = off[i];
		uint64_t w;

		if (__builtin_expect(o < p->n_units, 1)) {
			memcpy(&w, &p->u[o], sizeof(w));
			if (__builtin_expect((w & mask) == want, 1)) {
				/* a max-order block has no buddy to merge with: one store */
				assert(block_fits(p, o, top) && h < (uint64_t)p->n_units >> top);
				w = freed | unit_word((struct kv_pool_unit){ .pos = (uint32_t)h });
				memcpy(&p->u[o], &w, sizeof(w));
				p->stack[top][h++] = o;
				pushed++;
				continue;
			}
		}
		/* the general case (checked there), on a consistent stack */
		check_allocated(p, o, "kv_pool_free_n");
		bytes += p->unit_bytes << p->u[o].order;
		p->n_free_blocks[top] = h;
		kv_pool_free(p, o);
		h = p->n_free_blocks[top];
	}
	bytes += pushed * (p->unit_bytes << top);
	p->n_free_blocks[top] = h;
	if (h)
		p->free_mask |= 1ULL << top;
	p->free_bytes += pushed * (p->unit_bytes << top);
	p->n_frees += pushed;
	if (pushed)
		kv__pool_freed(p);
	return bytes;
}

int kv_pool_park(struct kv_pool *p, uint64_t n)
{
	unsigned top = KV_MIN(p->max_order, (unsigned)KV_POOL_MAX_ORDER);

	if (p->n_low || p->n_shared || !p->unpark || n > (p->n_units >> top) - p->n_free_blocks[top])
		return KV_EINVAL;
	push_lazy(p, top, n);
	p->parked += n;
	return 0;
}

void kv_pool_unpark_take(struct kv_pool *p, uint64_t n)
{
	unsigned top = KV_MIN(p->max_order, (unsigned)KV_POOL_MAX_ORDER);
	uint64_t h = p->n_free_blocks[top] - n;

	KV_CHECK(n <= p->parked, "kv_pool_unpark_take: %llu blocks, %llu parked",
		 (unsigned long long)n, (unsigned long long)p->parked);
	assert(p->parked <= p->lazy && p->lazy <= p->n_free_blocks[top]);
	assert(p->free_bytes >= n * (p->unit_bytes << top));
	p->n_free_blocks[top] = h;
	if (h == 0)
		p->free_mask &= ~(1ULL << top);
	p->free_bytes -= n * (p->unit_bytes << top);
	p->n_allocs += n;
	p->lazy -= n;
	p->parked -= n;
}

uint64_t kv_pool_largest_free(const struct kv_pool *p)
{
	return p->free_mask ? p->unit_bytes << floor_log2(p->free_mask) : 0;
}

double kv_pool_ext_frag(const struct kv_pool *p)
{
	if (!p->free_bytes || p->max_order > KV_POOL_MAX_ORDER)
		return 0.0;
	return 1.0 - (double)(p->n_free_blocks[p->max_order] << p->max_order) *
			     (double)p->unit_bytes / (double)p->free_bytes;
}

/* Formats the failure into msg (when non-NULL); returns KV_EINVARIANT. */
static int check_fail(char *msg, size_t msglen, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static int check_fail(char *msg, size_t msglen, const char *fmt, ...)
{
	va_list ap;

	if (msg && msglen) {
		va_start(ap, fmt);
		vsnprintf(msg, msglen, fmt, ap);
		va_end(ap);
	}
	return KV_EINVARIANT;
}

/* Checks the units inside the block at off of order k are not heads, not free, unreferenced. */
static int check_interior(const struct kv_pool *p, uint32_t off, unsigned k, char *msg,
			  size_t msglen)
{
	uint32_t u, end = off + (1u << k);

	for (u = off + 1; u < end; u++)
		if (p->u[u].is_free || p->u[u].refs)
			return check_fail(msg, msglen,
					  "unit %u inside block %u (order %u) starts a block: "
					  "is_free %u, refs %u",
					  u, off, k, p->u[u].is_free, p->u[u].refs);
	return 0;
}

/* Checks the block at off (a head): placement, flags, refs, and its buddy. */
static int check_block(const struct kv_pool *p, uint32_t off, char *msg, size_t msglen)
{
	unsigned k = p->u[off].order;
	uint32_t buddy;

	if ((!p->u[off].is_free && !p->u[off].refs) || k > p->max_order)
		return check_fail(msg, msglen, "unit %u should start a block but has order %u "
				  "(max_order %u), is_free %u, refs %u", off, k, p->max_order,
				  p->u[off].is_free, p->u[off].refs);
	if (off & ((1u << k) - 1) || (uint64_t)off + (1u << k) > p->n_units)
		return check_fail(msg, msglen, "block %u of order %u misaligned or past the "
				  "region (%u units)", off, k, p->n_units);
	if (p->u[off].is_free > 1 || (p->u[off].is_free && p->u[off].refs) ||
	    (!p->u[off].is_free && !p->u[off].refs))
		return check_fail(msg, msglen, "block %u (order %u): is_free %u with refs %u",
				  off, k, p->u[off].is_free, p->u[off].refs);
	buddy = off ^ (1u << k);
	if (p->u[off].is_free && k < p->max_order && buddy > off && buddy < p->n_units &&
	    p->u[buddy].order == k && p->u[buddy].is_free)
		return check_fail(msg, msglen, "free buddies %u and %u of order %u not coalesced",
				  off, buddy, k);
	return check_interior(p, off, k, msg, msglen);
}

/* Checks free stack k: entries, their positions and flags, and the count against want. */
static int check_list(const struct kv_pool *p, unsigned k, uint64_t want, char *msg,
		      size_t msglen)
{
	uint64_t i, n = p->n_free_blocks[k];

	if (n != want || !!(p->free_mask & (1ULL << k)) != (want > 0))
		return check_fail(msg, msglen, "order %u: %llu blocks on the stack, %llu free "
				  "in the tiling, mask bit %d", k, (unsigned long long)n,
				  (unsigned long long)want, !!(p->free_mask & (1ULL << k)));
	for (i = k == p->max_order ? p->fresh : 0; i < n; i++) { /* below fresh: check_block */
		uint32_t off = p->stack[k][i];

		if (off >= p->n_units || !p->u[off].is_free || p->u[off].order != k ||
		    p->u[off].pos != i)
			return check_fail(msg, msglen, "free stack %u: entry %llu is unit %u "
					  "(is_free %u, order %u, pos %u)", k,
					  (unsigned long long)i, off,
					  off < p->n_units ? p->u[off].is_free : 0,
					  off < p->n_units ? p->u[off].order : 0,
					  off < p->n_units ? p->u[off].pos : 0);
	}
	return 0;
}

/* Checks an unmapped pool: its counters describe the free cover. */
static int check_unmapped(const struct kv_pool *p, char *msg, size_t msglen)
{
	struct kv_pool c = *p;
	uint64_t want[KV_POOL_MAX_ORDER + 1] = { 0 }, bytes = pool_cover(&c, 0, want);
	unsigned k;

	for (k = 0; k <= KV_POOL_MAX_ORDER; k++)
		if (p->n_free_blocks[k] != want[k] ||
		    !!(p->free_mask & (1ULL << k)) != (want[k] > 0))
			return check_fail(msg, msglen, "unmapped pool: order %u has %llu free "
					  "blocks, the cover %llu, mask bit %d", k,
					  (unsigned long long)p->n_free_blocks[k],
					  (unsigned long long)want[k], !!(p->free_mask & (1ULL << k)));
	/* a refused kv_pool_alloc_n of max-order blocks counts its taken blocks freed again */
	if (bytes != p->free_bytes || p->n_allocs != p->n_frees || p->n_low || p->n_shared ||
	    p->lazy || p->parked)
		return check_fail(msg, msglen, "unmapped pool: free_bytes %llu, the cover %llu; "
				  "%llu allocations, %llu frees, n_low %llu, n_shared %llu, "
				  "lazy %llu, parked %llu", (unsigned long long)p->free_bytes,
				  (unsigned long long)bytes, (unsigned long long)p->n_allocs,
				  (unsigned long long)p->n_frees, (unsigned long long)p->n_low,
				  (unsigned long long)p->n_shared, (unsigned long long)p->lazy,
				  (unsigned long long)p->parked);
	return 0;
}

int kv_pool_check(const struct kv_pool *p, char *msg, size_t msglen)
{
	uint64_t n_free[KV_POOL_MAX_ORDER + 1] = { 0 };
	uint64_t free_bytes = 0, n_low = 0, n_shared = 0;
	uint32_t off, vend;
	unsigned k;
	int err;

	if (!p->u)
		return check_unmapped(p, msg, msglen);
	/* lazy runs are a representation (header), so the check is still logically const */
	if (p->lazy)
		settle((struct kv_pool *)p);
	if (p->fresh > p->n_free_blocks[p->max_order])
		return check_fail(msg, msglen, "%llu implicit max-order blocks, %llu on the stack",
				  (unsigned long long)p->fresh,
				  (unsigned long long)p->n_free_blocks[p->max_order]);
	vend = (uint32_t)(p->fresh << p->max_order); /* the implicit blocks end */
	for (off = 0; off < vend; off += 1u << p->max_order) { /* the implicit cover blocks */
		if (p->u[off].is_free || p->u[off].refs)
			return check_fail(msg, msglen, "implicit free block %u (order %u) has a "
					  "record: is_free %u, refs %u", off, p->max_order,
					  p->u[off].is_free, p->u[off].refs);
		err = check_interior(p, off, p->max_order, msg, msglen);
		if (err)
			return err;
		n_free[p->max_order]++;
		free_bytes += kv_pool_block_bytes(p, p->max_order);
	}
	for (; off < p->n_units; off += 1u << p->u[off].order) {
		err = check_block(p, off, msg, msglen);
		if (err)
			return err;
		if (p->u[off].is_free) {
			n_free[p->u[off].order]++;
			free_bytes += kv_pool_block_bytes(p, p->u[off].order);
		} else {
			n_low += p->u[off].order < p->max_order;
			n_shared += p->u[off].refs > 1;
		}
	}
	if (n_low != p->n_low || n_shared != p->n_shared)
		return check_fail(msg, msglen, "%llu allocated blocks below max_order and %llu "
				  "shared, counted %llu and %llu", (unsigned long long)n_low,
				  (unsigned long long)n_shared, (unsigned long long)p->n_low,
				  (unsigned long long)p->n_shared);
	for (k = 0; k <= KV_POOL_MAX_ORDER; k++) {
		if (k > p->max_order && p->n_free_blocks[k])
			return check_fail(msg, msglen, "free list %u above max_order %u not empty",
					  k, p->max_order);
		err = k <= p->max_order ? check_list(p, k, n_free[k], msg, msglen) : 0;
		if (err)
			return err;
	}
	if (free_bytes != p->free_bytes || p->free_mask >> (p->max_order + 1))
		return check_fail(msg, msglen, "free_bytes %llu but free blocks hold %llu; "
				  "free_mask %#llx", (unsigned long long)p->free_bytes,
				  (unsigned long long)free_bytes,
				  (unsigned long long)p->free_mask);
	return 0;
}
