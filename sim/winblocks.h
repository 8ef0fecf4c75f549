/*
 * winblocks.h -- a paged KV holding split into the two layer groups of a
 * sliding-window model, as vLLM V1's hybrid KV-cache manager keeps one
 * block table per group (vllm/v1/core/single_type_kv_cache_manager.py:
 * FullAttentionManager, SlidingWindowManager).
 *
 * A model with sliding_window W on Lw of its L layers and b KV bytes per
 * token (b a multiple of L) has, for blocks of B tokens,
 *   full group      blocks of B * b * (L - Lw) / L bytes (none when Lw = L),
 *   windowed group  blocks of B * b * Lw / L bytes,
 * each block one extent of whole pool units (blocks.h).  The full group
 * holds every block of the context; the windowed group frees the blocks
 * wholly before the next token's window: with c tokens computed, vLLM's
 * SlidingWindowManager.remove_skipped_blocks(c) frees the blocks ending at
 * or before token c - W + 1 (get_num_skipped_tokens).  A holding whose own
 * blocks start at token `base` (after a cached prefix) and which grows to n
 * tokens keeps
 *
 *   full:     ceil((n - base) / B) blocks,
 *   windowed: ceil((n - base) / B) - floor(max(0, c + 1 - W - base) / B)
 *
 * blocks.  Every block of a group is the same extent, so a group's table is
 * a multiset of equal blocks: its block count is its length over the
 * extent's buddy blocks, and freeing the oldest blocks frees any blocks of
 * the table (kv_blocks_keep cuts from the end).  Growth is allocated before
 * anything is freed (all or nothing, cache.h), which vLLM does the other
 * way round: conservative, and it matters only in a prefill chunk that both
 * grows and frees.
 *
 * Used by the chunked, quantized, sparse and shared cache models.
 */
#ifndef KV_WINBLOCKS_H
#define KV_WINBLOCKS_H

#include "blocks.h"
#include "profile.h"

struct kv_req;

struct kv_winblocks {
	struct kv_blocks *blocks; /* the cache model's tables over the pool */
	uint64_t win_tokens; /* the model's sliding window W, tokens; 0: no window (one group) */
	uint64_t block_tokens; /* B, tokens per block of either group */
	uint64_t full_bytes; /* a full-group block, B * b * (L - Lw) / L bytes; 0 when every layer is windowed */
	uint64_t win_bytes; /* a windowed-group block, B * b * Lw / L bytes */
	uint64_t full_ext; /* buddy blocks (table entries) per full-group block */
	uint64_t win_ext; /* buddy blocks (table entries) per windowed-group block */
};

/*
 * Sets up w for a model m stored at b = token_bytes per token in blocks of
 * block_tokens.  Returns 1 when m has a window that splits b exactly (b a
 * multiple of its layers), else 0 with w->win_tokens = 0: one group, the
 * caller's old path.
 */
int kv_winblocks_init(struct kv_winblocks *w, struct kv_blocks *b, const struct kv_model *m,
		      uint64_t token_bytes, uint64_t block_tokens);

/* Blocks of the full group in table t. */
uint64_t kv_winblocks_full_n(const struct kv_winblocks *w, uint64_t t);

/* Blocks of the windowed group in table t. */
uint64_t kv_winblocks_win_n(const struct kv_winblocks *w, uint64_t t);

/*
 * Brings the full table *full to nf blocks (nf at least what it holds) and
 * the windowed table *win to nw blocks (growing or freeing), growth first:
 * all or nothing.  Returns 0, adding the bytes allocated to *got and the
 * bytes freed to *freed, or KV_ENOMEM with the tables as they were.
 */
int kv_winblocks_set(const struct kv_winblocks *w, uint64_t *full, uint64_t *win, uint64_t nf,
		     uint64_t nw, uint64_t *got, uint64_t *freed);

/*
 * The sliding step for own blocks starting at token base: with c tokens
 * computed and the holding growing to n > base, returns the windowed blocks
 * to keep (ceil((n - base) / B) - first, first = floor(max(0, c + 1 - W -
 * base) / B), at least 1) and stores in *cap the tokens the holding then
 * fits before it must change: the next block boundary or the step whose
 * window leaves block `first`, whichever comes first, at least n.
 */
uint64_t kv_winblocks_slide(const struct kv_winblocks *w, uint64_t base, uint64_t c, uint64_t n,
			    uint64_t *cap);

/*
 * A paged reserve of q to `tokens` on both groups (the chunked layout):
 * q->cache[0] the full table, q->cache[1] the windowed one (both valid
 * when q->kv_bytes is nonzero); sets kv_bytes and kv_cap_tokens.  0 or
 * KV_ENOMEM with q unchanged.
 */
int kv_winblocks_reserve(const struct kv_winblocks *w, struct kv_req *q, uint64_t tokens);

/* Frees both of q's tables (when it holds any) and empties them. */
void kv_winblocks_release(const struct kv_winblocks *w, struct kv_req *q);

#endif /* KV_WINBLOCKS_H */
