/* winblocks.c -- a paged holding in the two layer groups of a windowed model; see winblocks.h. */
#include "winblocks.h"
#include "engine.h"

#include <assert.h>

/* Buddy blocks of one extent of `bytes`: its unit count's binary digits, capped at max_order. */
static uint64_t ext_entries(const struct kv_blocks *b, uint64_t bytes)
{
	uint64_t units = kv_blocks_units(b, bytes, 0), top = b->pool->max_order;

	return (units >> top) + (uint64_t)__builtin_popcountll(units & ((1ULL << top) - 1));
}

int kv_winblocks_init(struct kv_winblocks *w, struct kv_blocks *b, const struct kv_model *m,
		      uint64_t token_bytes, uint64_t block_tokens)
{
	uint64_t lw = kv_model_window_layers(m), layer_block;

	w->blocks = b;
	w->block_tokens = block_tokens;
	w->win_tokens = 0;
	w->full_bytes = w->win_bytes = 0;
	w->full_ext = w->win_ext = 0;
	if (!m->sliding_window || !lw || token_bytes % m->layers)
		return 0;
	layer_block = block_tokens * (token_bytes / m->layers);
	w->win_tokens = m->sliding_window;
	w->full_bytes = layer_block * (m->layers - lw);
	w->win_bytes = layer_block * lw;
	w->full_ext = w->full_bytes ? ext_entries(b, w->full_bytes) : 1;
	w->win_ext = ext_entries(b, w->win_bytes);
	return 1;
}

uint64_t kv_winblocks_full_n(const struct kv_winblocks *w, uint64_t t)
{
	return kv_blocks_count(t) / w->full_ext;
}

uint64_t kv_winblocks_win_n(const struct kv_winblocks *w, uint64_t t)
{
	return kv_blocks_count(t) / w->win_ext;
}

int kv_winblocks_set(const struct kv_winblocks *w, uint64_t *full, uint64_t *win, uint64_t nf,
		     uint64_t nw, uint64_t *got, uint64_t *freed)
{
	uint64_t saved = *full, have_f = kv_winblocks_full_n(w, *full);
	uint64_t have_w = kv_winblocks_win_n(w, *win), g = 0;

	assert(w->win_tokens && nf >= have_f);
	if (w->full_bytes && nf > have_f &&
	    kv_blocks_append_n(w->blocks, full, w->full_bytes, nf - have_f, &g))
		return KV_ENOMEM;
	if (nw > have_w) {
		if (kv_blocks_append_n(w->blocks, win, w->win_bytes, nw - have_w, &g)) {
			kv_blocks_truncate(w->blocks, full, saved);
			return KV_ENOMEM;
		}
	} else if (nw < have_w) {
		*freed += kv_blocks_keep(w->blocks, win, nw * w->win_ext);
	}
	/* each table is whole extents, as many as asked (no full group: none) */
	assert(kv_blocks_count(*win) == nw * w->win_ext);
	assert(kv_blocks_count(*full) == (w->full_bytes ? nf * w->full_ext : 0));
	*got += g;
	return 0;
}

uint64_t kv_winblocks_slide(const struct kv_winblocks *w, uint64_t base, uint64_t c, uint64_t n,
			    uint64_t *cap)
{
	uint64_t B = w->block_tokens, blocks = kv_div_ceil(n - base, B);
	uint64_t first = kv_win_excess(c + 1, w->win_tokens + base) / B, next;

	assert(n > base && first < blocks);
	/* next change: a token past the last block, or a decode whose window leaves block `first` */
	next = KV_MIN(base + blocks * B, base + (first + 1) * B + w->win_tokens - 1);
	*cap = KV_MAX(next, n);
	return blocks - first;
}

int kv_winblocks_reserve(const struct kv_winblocks *w, struct kv_req *q, uint64_t tokens)
{
	int holds = q->kv_bytes != 0;
	uint64_t full = holds ? q->cache[0] : KV_BLOCKS_EMPTY;
	uint64_t win = holds ? q->cache[1] : KV_BLOCKS_EMPTY;
	uint64_t got = 0, freed = 0, cap, nw;

	nw = kv_winblocks_slide(w, 0, q->kv_tokens, tokens, &cap);
	if (kv_winblocks_set(w, &full, &win, kv_div_ceil(tokens, w->block_tokens), nw, &got,
			     &freed))
		return KV_ENOMEM;
	q->cache[0] = full;
	q->cache[1] = win;
	q->kv_bytes = q->kv_bytes + got - freed;
	q->kv_cap_tokens = cap;
	return 0;
}

void kv_winblocks_release(const struct kv_winblocks *w, struct kv_req *q)
{
	if (q->kv_bytes) {
		kv_blocks_free(w->blocks, &q->cache[0]);
		kv_blocks_free(w->blocks, &q->cache[1]);
	}
	q->cache[0] = q->cache[1] = KV_BLOCKS_EMPTY;
}
