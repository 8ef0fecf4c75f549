/* blocks.c -- extents as block tables in paged arrays; see blocks.h. */
#include "blocks.h"

#include <stdlib.h>

#define NIL UINT32_MAX

static inline uint32_t t_head(uint64_t t)
{
	return (uint32_t)t;
}

static inline uint64_t t_make(uint32_t head, uint64_t count)
{
	return count ? (uint64_t)head | count << 32 : KV_BLOCKS_EMPTY;
}

void kv_blocks_init(struct kv_blocks *b, struct kv_pool *pool)
{
	b->pool = pool;
	b->pages = NULL;
	b->n_pages = 0;
	b->free_page = NIL;
}

void kv_blocks_release(struct kv_blocks *b)
{
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

/* A fresh empty page: from the free list, else by doubling the arena. */
static uint32_t page_get(struct kv_blocks *b)
{
	uint32_t i, old = b->n_pages;

	if (b->free_page == NIL) {
		b->n_pages = old ? 2 * old : 64;
		b->pages = kv_xrealloc(b->pages, (size_t)b->n_pages * sizeof(*b->pages));
		for (i = b->n_pages; i-- > old;) {
			b->pages[i].next = b->free_page;
			b->free_page = i;
		}
	}
	i = b->free_page;
	b->free_page = b->pages[i].next;
	b->pages[i].next = NIL;
	b->pages[i].n = 0;
	return i;
}

static void page_put(struct kv_blocks *b, uint32_t i)
{
	b->pages[i].next = b->free_page;
	b->free_page = i;
}

/* Tail page of a nonempty table. */
static uint32_t tail_page(const struct kv_blocks *b, uint64_t t)
{
	uint32_t p = t_head(t);

	while (b->pages[p].next != NIL)
		p = b->pages[p].next;
	return p;
}

/* Adds offset `off` at the end of table *t, whose tail page is *tail (NIL when empty). */
static void table_push(struct kv_blocks *b, uint64_t *t, uint32_t *tail, uint32_t off)
{
	uint32_t head = *t == KV_BLOCKS_EMPTY ? NIL : t_head(*t);

	if (*tail == NIL || b->pages[*tail].n == KV_BLOCKS_PER_PAGE) {
		uint32_t p = page_get(b);

		if (*tail != NIL)
			b->pages[*tail].next = p;
		else
			head = p;
		*tail = p;
	}
	b->pages[*tail].off[b->pages[*tail].n++] = off;
	*t = t_make(head, kv_blocks_count(*t) + 1);
}

/* Frees the blocks of *t past the first `keep` and the pages they empty; returns their bytes. */
static uint64_t cut(struct kv_blocks *b, uint64_t *t, uint64_t keep)
{
	struct kv_pool *pool = b->pool;
	uint64_t seen = 0, bytes = 0;
	uint32_t p, last = NIL;

	if (*t == KV_BLOCKS_EMPTY)
		return 0;
	for (p = t_head(*t); p != NIL;) {
		struct kv_blocks_page *pg = &b->pages[p];
		uint32_t next = pg->next, i, from;

		from = keep > seen ? (uint32_t)KV_MIN(keep - seen, pg->n) : 0;
		seen += pg->n;
		for (i = from; i < pg->n; i++) {
			bytes += kv_pool_block_bytes(pool, pool->u[pg->off[i]].order);
			kv_pool_free(pool, pg->off[i]);
		}
		if (from == 0) {
			page_put(b, p);
		} else {
			pg->n = from;
			last = p;
		}
		p = next;
	}
	if (last != NIL)
		b->pages[last].next = NIL;
	*t = keep ? t_make(t_head(*t), keep) : KV_BLOCKS_EMPTY;
	return bytes;
}

void kv_blocks_truncate(struct kv_blocks *b, uint64_t *t, uint64_t saved)
{
	cut(b, t, kv_blocks_count(saved));
}

uint64_t kv_blocks_free(struct kv_blocks *b, uint64_t *t)
{
	return cut(b, t, 0);
}

int kv_blocks_append(struct kv_blocks *b, uint64_t *t, uint64_t bytes, int pow2,
		     uint64_t *held)
{
	struct kv_pool *p = b->pool;
	uint64_t units = kv_blocks_units(b, bytes, pow2), left = units, saved = *t;
	uint32_t tail = *t == KV_BLOCKS_EMPTY ? NIL : tail_page(b, *t), off;
	unsigned k = p->max_order;

	if (units > p->n_units)
		return KV_ENOMEM;
	while (left) {
		while ((1ULL << k) > left)
			k--;
		if (kv_pool_alloc(p, k, &off)) {
			cut(b, t, kv_blocks_count(saved));
			return KV_ENOMEM;
		}
		table_push(b, t, &tail, off);
		left -= 1ULL << k;
	}
	*held += units * p->unit_bytes;
	return 0;
}
