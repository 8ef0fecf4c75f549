/*
 * blocks.c -- extents as block tables in paged arrays; see blocks.h.
 *
 * Each step asserts what it relies on (debug builds; NDEBUG drops them): a
 * table's last page is a page of the arena, a page holds 1..62 offsets, a
 * page taken from the free list or put back is in the arena, and unparking
 * writes exactly the entries the pool counted parked.
 */
#include "blocks.h"

#include <assert.h>
#include <stdlib.h>
#include <string.h>

#define NIL UINT32_MAX

static inline uint32_t t_last(uint64_t t)
{
	return (uint32_t)t;
}

static inline uint64_t t_make(uint32_t last, uint64_t count)
{
	assert(!count || (last != NIL && count <= UINT32_MAX));
	return count ? (uint64_t)last | count << 32 : KV_BLOCKS_EMPTY;
}

/* Offsets held by the last page of a table of `count` blocks (all others are full). */
static inline uint32_t last_fill(uint64_t count)
{
	return count ? (uint32_t)((count - 1) % KV_BLOCKS_PER_PAGE) + 1 : 0;
}

void kv_blocks_init(struct kv_blocks *b, struct kv_pool *pool)
{
	b->pool = pool;
	b->pages = NULL;
	b->n_pages = 0;
	b->free_page = NIL;
	b->park = 0;
	b->n_parked = b->cap_parked = 0;
	b->parked = NULL;
}

static void unpark_all(void *ctx);

void kv_blocks_release(struct kv_blocks *b)
{
	if (b->pool && b->pool->unpark_ctx == b) {
		if (b->pool->parked)
			unpark_all(b);
		b->pool->unpark = NULL;
		b->pool->unpark_ctx = NULL;
	}
	free(b->parked);
	b->parked = NULL;
	b->n_parked = b->cap_parked = 0;
	free(b->pages);
	b->pages = NULL;
	b->n_pages = 0;
	b->free_page = NIL;
}

uint64_t kv_blocks_units(const struct kv_blocks *b, uint64_t bytes, int pow2)
{
	uint64_t u = kv_div_ceil(bytes, b->pool->unit_bytes);

	if (pow2 && u > 1)
		u = 1ULL << (64 - __builtin_clzll(u - 1));
	return u;
}

/* A fresh page whose prev is `prev`: from the free list, else by doubling the arena. */
static uint32_t page_get(struct kv_blocks *b, uint32_t prev)
{
	uint32_t i, old = b->n_pages;

	if (b->free_page == NIL) {
		b->n_pages = old ? 2 * old : 64;
		b->pages = kv_xrealloc(b->pages, (size_t)b->n_pages * sizeof(*b->pages));
		for (i = b->n_pages; i-- > old;) {
			b->pages[i].prev = b->free_page;
			b->free_page = i;
		}
	}
	i = b->free_page;
	assert(i < b->n_pages);
	b->free_page = b->pages[i].prev;
	b->pages[i].prev = prev;
	return i;
}

static void page_put(struct kv_blocks *b, uint32_t i)
{
	assert(i < b->n_pages && i != b->free_page);
	b->pages[i].prev = b->free_page;
	b->free_page = i;
}


/* Frees the blocks of *t past the first `keep`, from the end, and the pages they empty; returns their bytes. */
static uint64_t cut(struct kv_blocks *b, uint64_t *t, uint64_t keep)
{
	struct kv_pool *pool = b->pool;
	uint64_t count = kv_blocks_count(*t), bytes = 0;
	uint32_t page = count ? t_last(*t) : NIL;

	while (count > keep) {
		struct kv_blocks_page *pg = &b->pages[page];
		uint32_t fill = last_fill(count), stop = 0, i;

		assert(page < b->n_pages && fill >= 1 && fill <= KV_BLOCKS_PER_PAGE);
		if (count - keep < fill)
			stop = fill - (uint32_t)(count - keep);
		/*
		 * Fetch the page's pool records together: freeing them one by
		 * one misses once each.  Not for a lazy run (pool.h), which
		 * reads none.
		 */
		if (pool->n_low || pool->n_shared)
			for (i = stop; i < fill; i++)
				__builtin_prefetch(&pool->u[pg->off[i]], 1);
		bytes += kv_pool_free_n(pool, &pg->off[stop], fill - stop);
		count -= fill - stop;
		if (stop == 0) {
			uint32_t prev = pg->prev;

			page_put(b, page);
			page = prev;
		}
	}
	*t = t_make(page, count);
	return bytes;
}

uint32_t kv_blocks_at(const struct kv_blocks *b, uint64_t t, uint64_t i)
{
	uint64_t count = kv_blocks_count(t), back;
	uint32_t page;

	assert(i < count);
	page = t_last(t);
	for (back = (count - 1) / KV_BLOCKS_PER_PAGE - i / KV_BLOCKS_PER_PAGE; back; back--)
		page = b->pages[page].prev;
	return b->pages[page].off[i % KV_BLOCKS_PER_PAGE];
}

void kv_blocks_truncate(struct kv_blocks *b, uint64_t *t, uint64_t saved)
{
	cut(b, t, kv_blocks_count(saved));
}

/*
 * The pool's unpark hook: writes every parked table's offsets onto the
 * max-order stack where kv_pool_park counted them, oldest table first and
 * each in cut()'s order (its last page first, a page's offsets in order),
 * and returns their pages.
 */
static void unpark_all(void *ctx)
{
	struct kv_blocks *b = ctx;
	struct kv_pool *p = b->pool;
	unsigned top = KV_MIN(p->max_order, (unsigned)KV_POOL_MAX_ORDER);
	uint32_t *st = p->stack[top] + (p->n_free_blocks[top] - p->parked), j;

	assert(p->parked <= p->lazy && p->lazy <= p->n_free_blocks[top]);
	for (j = 0; j < b->n_parked; j++) {
		uint64_t count = kv_blocks_count(b->parked[j]);
		uint32_t page = t_last(b->parked[j]);

		while (count) {
			struct kv_blocks_page *pg = &b->pages[page];
			uint32_t fill = last_fill(count), prev = pg->prev;

			assert(page < b->n_pages);
			memcpy(st, pg->off, fill * sizeof(*st));
			st += fill;
			count -= fill;
			page_put(b, page);
			page = prev;
		}
	}
	/* conservation: the parked tables hold exactly the entries the pool counted parked */
	assert(st == p->stack[top] + p->n_free_blocks[top]);
	b->n_parked = 0;
	p->parked = 0;
}

/* Parks table *t (blocks.h); returns its bytes, or UINT64_MAX when the pool refuses. */
static uint64_t park(struct kv_blocks *b, uint64_t *t)
{
	struct kv_pool *p = b->pool;
	uint64_t count = kv_blocks_count(*t);

	if (!p->unpark) {
		p->unpark = unpark_all;
		p->unpark_ctx = b;
	}
	if (p->unpark_ctx != b || kv_pool_park(p, count))
		return UINT64_MAX;
	if (b->n_parked == b->cap_parked) {
		b->cap_parked = b->cap_parked ? 2 * b->cap_parked : 16;
		b->parked = kv_xrealloc(b->parked, b->cap_parked * sizeof(*b->parked));
	}
	b->parked[b->n_parked++] = *t;
	*t = KV_BLOCKS_EMPTY;
	return count * (p->unit_bytes << p->max_order);
}

uint64_t kv_blocks_free(struct kv_blocks *b, uint64_t *t)
{
	if (b->park && *t != KV_BLOCKS_EMPTY) {
		uint64_t bytes = park(b, t);

		if (bytes != UINT64_MAX)
			return bytes;
	}
	return cut(b, t, 0);
}

uint64_t kv_blocks_hand_over(struct kv_blocks *b, uint64_t *t, uint32_t *out, uint64_t max)
{
	uint64_t count = kv_blocks_count(*t);
	uint32_t page = count ? t_last(*t) : NIL;

	if (count > max)
		return UINT64_MAX;
	while (count) { /* from the last page back: each page's offsets go where they belong */
		struct kv_blocks_page *pg = &b->pages[page];
		uint32_t fill = last_fill(count), prev = pg->prev;

		assert(page < b->n_pages);
		count -= fill;
		memcpy(&out[count], pg->off, fill * sizeof(*out));
		page_put(b, page);
		page = prev;
	}
	count = kv_blocks_count(*t);
	*t = KV_BLOCKS_EMPTY;
	return count;
}

uint64_t kv_blocks_keep(struct kv_blocks *b, uint64_t *t, uint64_t keep)
{
	return cut(b, t, keep);
}

/*
 * Appends n blocks of order k to *t, taken from the pool a page-load at a
 * time and written straight into the table.  On KV_ENOMEM the blocks this
 * call took are returned and *t is as it was.
 */
static int push_run(struct kv_blocks *b, uint64_t *t, unsigned k, uint64_t n)
{
	uint64_t count = kv_blocks_count(*t), saved = count;

	if (k == b->pool->max_order && n <= UINT32_MAX) {
		/* the last table parked, whole, into an empty table (blocks.h: parking) */
		if (count == 0 && b->n_parked && kv_blocks_count(b->parked[b->n_parked - 1]) == n) {
			assert(b->pool->unpark_ctx == b && b->pool->parked >= n);
			*t = b->parked[--b->n_parked];
			kv_pool_unpark_take(b->pool, n);
			return 0;
		}
		/* refused: what taking it a page at a time and giving it back would count */
		if (b->pool->n_free_blocks[k] < n)
			return kv_pool_alloc_n(b->pool, k, (uint32_t)n, NULL);
	}

	while (n) {
		uint32_t last = count ? t_last(*t) : NIL, fill = last_fill(count), take;

		if (fill == 0 || fill == KV_BLOCKS_PER_PAGE) {
			last = page_get(b, last);
			fill = 0;
		}
		take = (uint32_t)KV_MIN(n, (uint64_t)(KV_BLOCKS_PER_PAGE - fill));
		assert(last < b->n_pages && take > 0);
		if (kv_pool_alloc_n(b->pool, k, take, &b->pages[last].off[fill])) {
			if (fill == 0)
				page_put(b, last);
			cut(b, t, saved);
			return KV_ENOMEM;
		}
		count += take;
		*t = t_make(last, count);
		n -= take;
	}
	return 0;
}

/* Appends one extent of `units` units: its binary digits, largest blocks first. */
static int push_extent(struct kv_blocks *b, uint64_t *t, uint64_t units)
{
	unsigned top = b->pool->max_order, k;

	if (push_run(b, t, top, units >> top))
		return KV_ENOMEM;
	for (k = top; k-- > 0;)
		if (units >> k & 1 && push_run(b, t, k, 1))
			return KV_ENOMEM;
	return 0;
}

int kv_blocks_append(struct kv_blocks *b, uint64_t *t, uint64_t bytes, int pow2,
		     uint64_t *held)
{
	uint64_t units = kv_blocks_units(b, bytes, pow2), saved = *t;

	if (units > b->pool->n_units)
		return KV_ENOMEM;
	if (push_extent(b, t, units)) {
		cut(b, t, kv_blocks_count(saved));
		return KV_ENOMEM;
	}
	*held += units * b->pool->unit_bytes;
	return 0;
}

int kv_blocks_append_n(struct kv_blocks *b, uint64_t *t, uint64_t bytes, uint64_t n,
		       uint64_t *held)
{
	uint64_t units = kv_blocks_units(b, bytes, 0), saved = *t, i;
	unsigned k = (unsigned)__builtin_ctzll(units);

	if (units == 1ULL << k && k <= b->pool->max_order) {
		/* each extent is one block: one run */
		if (push_run(b, t, k, n))
			return KV_ENOMEM;
	} else {
		for (i = 0; i < n; i++) {
			if (units > b->pool->n_units || push_extent(b, t, units)) {
				cut(b, t, kv_blocks_count(saved));
				return KV_ENOMEM;
			}
		}
	}
	*held += n * units * b->pool->unit_bytes;
	return 0;
}

int kv_blocks_grow(struct kv_blocks *b, uint64_t *t, uint64_t *cap_tokens, uint64_t tokens,
		   uint64_t block_tokens, uint64_t block_bytes, uint64_t *held)
{
	uint64_t n;

	if (*cap_tokens >= tokens)
		return 0;
	n = kv_div_ceil(tokens - *cap_tokens, block_tokens);
	if (kv_blocks_append_n(b, t, block_bytes, n, held))
		return KV_ENOMEM;
	*cap_tokens += n * block_tokens;
	return 0;
}

/*
 * Counts the units of t's blocks, walking from the last block to the first;
 * with out, also writes them ending at out[pos - 1].
 */
static uint64_t walk_units(const struct kv_blocks *b, uint64_t t, uint32_t *out, uint64_t pos)
{
	const struct kv_pool_unit *u = b->pool->u;
	uint64_t count = kv_blocks_count(t), total = 0;
	uint32_t page = count ? t_last(t) : NIL;

	while (count) {
		const struct kv_blocks_page *pg = &b->pages[page];
		uint32_t i = last_fill(count);

		assert(page < b->n_pages);
		count -= i;
		while (i--) {
			uint32_t off = pg->off[i], n = 1u << u[off].order;

			assert(u[off].refs && !u[off].is_free); /* an allocated head */
			total += n;
			if (out) {
				assert(pos >= n);
				pos -= n;
				while (n--)
					out[pos + n] = off + n;
			}
		}
		page = pg->prev;
	}
	return total;
}

uint64_t kv_blocks_list_units(const struct kv_blocks *b, uint64_t t, uint32_t *out, uint64_t max)
{
	uint64_t n = walk_units(b, t, NULL, 0);

	if (n > max)
		return UINT64_MAX;
	walk_units(b, t, out, n);
	return n;
}
