/*
 * cache_shared.c -- prefix sharing across requests with reference-counted
 * blocks: vLLM's automatic prefix caching (hash of the block's tokens and of
 * its prefix; Kwon et al., SOSP'23, and the vLLM "Automatic Prefix Caching"
 * design notes), SGLang's RadixAttention (Zheng et al., "SGLang: Efficient
 * Execution of Structured Language Model Programs", NeurIPS'24: reference
 * counts protect in-use prefixes, unreferenced ones stay cached and are
 * evicted LRU) and Mooncake's KV store (Qin et al., FAST'25: 512-token
 * blocks keyed by a hash of the block and its prefix).
 *
 * A request's prompt is cut into prefix blocks of B = prefix_block_tokens
 * tokens.  Block i (tokens [iB, (i+1)B)) has a key only when its content is
 * known to be shareable:
 *   - Mooncake requests carry hash ids, one per 512-token block; block i's
 *     key chains the ids that cover it;
 *   - other requests, with system_prompt_tokens S > 0, share their first
 *     min(S, prompt) tokens: block i is keyed "system block i" when
 *     (i+1)B <= min(S, prompt);
 *   with request_blocks on (the vllm and sglang engines' prefix cache), every
 *     other complete prompt block is keyed too, by the request's id: no other
 *     request can match it, but the request itself does when it resumes
 *     after a preemption by recompute, while the block is not yet evicted
 *     (vLLM V1 keeps a freed block's hash until the block is reused).
 * Keys are chained, key_i = mix(key_{i-1}, ids of block i) with splitmix64's
 * finaliser, so equal keys mean equal prefixes (up to 64-bit collisions, as
 * in vLLM): block i can match only if blocks 0..i-1 matched.
 *
 * The index maps a key to an entry: one extent of extent(B * b) pool bytes
 * (decomposed into buddy blocks like blocks.h), a count of the requests
 * using it, and links in an LRU list.  Every buddy block of an entry carries
 * 1 + (requests using it) pool references (kv_pool_ref), so the pool itself
 * refuses to free a block a request still reads.  Entries used by nobody
 * stay cached on the LRU list (an entry is on the list iff its count is 0)
 * and are evicted least recently used first whenever an allocation fails,
 * the allocation being retried (vLLM's free-block queue; SGLang evicts LRU
 * leaves).  The index is open addressing with linear probing and
 * backward-shift deletion over flat arrays, sized at init for the most
 * entries the pool can hold (n_units / units per entry), so the load stays
 * below 0.7 without ever growing and no event allocates.
 *
 * The life of a request:
 *   prefix_hit  walks its keys while they are in the index, for the complete
 *               blocks with (i+1)B <= prompt - 1 (one prompt token must be
 *               computed to produce the first output), takes a reference on
 *               each, stops at the first miss: m blocks, m*B hit tokens.
 *   reserve     the rest of its KV (tokens beyond m*B) grows in blocks of
 *               block_tokens as in cache_chunked.c, all or nothing, evicting
 *               LRU entries and retrying on KV_ENOMEM.
 *   release     drops its references and *donates* the prefix blocks it
 *               computed itself (m <= i, (i+1)B <= min(kv_tokens, prompt)) as
 *               new entries with count 0, unless the key is already there
 *               (another request inserted it meanwhile).  Donation frees the
 *               request's own blocks first, then allocates each donated
 *               entry's extent; the first block that does not fit ends the
 *               donation (later blocks could never match without it).  This
 *               moves memory rather than re-labelling the request's blocks
 *               in place: the simpler model, with identical byte counts.
 *               Entries are released deepest first so that a prefix's tail
 *               is evicted before its head (vLLM frees a request's blocks in
 *               reverse order for the same reason).
 *   flush       frees every cached entry (all counts must be 0 then).
 *
 * Memory, for a request holding n tokens of which m blocks are shared:
 *
 *   kv_bytes = m * extent(B * b) + ceil((n - mB) / Bt) * extent(Bt * b)
 *
 * with Bt = block_tokens, b the fp16 bytes per token; beta = b.  kv_bytes
 * counts the shared extents too (what the request reads and keeps alive),
 * so summing kv_bytes over requests counts a shared block once per sharer;
 * the pool's own byte counters count it once.  kv_cap_tokens = mB plus the
 * own blocks' tokens.  Conservation: every pool block belongs to exactly
 * one owner -- a request's table or an index entry -- and an entry's blocks
 * carry exactly 1 + count references (KV_CHECK on every reference change).
 *
 * Per-request words: cache[0] the own block table (valid when cache[2] is
 * nonzero), cache[1] matched blocks m (low 32 bits) and PENDING (bit 63:
 * the lookup is not yet counted in the statistics), cache[2] own bytes.
 * All zero when the request holds nothing.
 *
 * Statistics (summed over admissions: the first successful reserve after a
 * lookup): hit_tokens = m*B, lookup_tokens = prompt tokens, bytes_saved =
 * m * extent(B * b); hit_rate = hit_tokens / lookup_tokens.
 */
#include "blocks.h"
#include "engine.h"

#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#define NIL UINT32_MAX
#define HASH_BLOCK_TOKENS 512 /* Mooncake: one hash id per 512-token block */
#define PENDING (1ULL << 63) /* cache[1]: lookup not yet counted */
#define SHARERS_MAX (UINT16_MAX - 1) /* sharers per entry: pool counts stop at 65535 */
#define SEED_HASHED 0x6d6f6f6e63616b65ULL /* chain start for hash-id keys */
#define SEED_SYSTEM 0x73797374656d2d70ULL /* chain start for system-prompt keys */
#define SEED_OWN 0x6f776e2d626c6f63ULL /* a request's own prompt blocks (request_blocks) */

struct shared {
	uint64_t prefix_block_tokens; /* option: tokens per shared prefix block, default 512 */
	uint64_t system_prompt_tokens; /* option: tokens of a prompt prefix every request shares, default 0 */
	uint64_t block_tokens; /* option: tokens per block of a request's own KV, default 16 */
	int request_blocks; /* option: key a request's other prompt blocks by its id, default 0 */
	struct kv_blocks blocks; /* requests' own block tables */
	struct kv_pool *pool; /* the replica's pool */
	const struct kv_sim *sim; /* the simulation, for reading requests' hash ids */
	uint64_t token_bytes; /* b, bytes */
	uint64_t chunk_bytes; /* Bt * b, bytes of one own block */
	uint64_t chunk_units; /* pool units one own block takes */
	uint64_t entry_units; /* pool units one entry's extent takes */
	uint64_t entry_bytes; /* entry_units * unit_bytes */
	uint32_t ext_blocks; /* buddy blocks in one entry's extent */
	uint32_t max_blocks; /* prefix blocks in the longest prompt (the model's context) */
	/* Entries, flat arrays of cap (offsets: cap * ext_blocks). */
	uint32_t cap; /* entries the pool can hold at most */
	uint32_t n; /* live entries */
	uint32_t free_entry; /* free list through next[], NIL */
	uint64_t *key; /* chained key */
	uint32_t *off; /* buddy block offsets, ext_blocks per entry */
	uint32_t *refs; /* requests using it */
	uint32_t *prev, *next; /* LRU links (toward head / tail), NIL at the ends */
	uint32_t lru_head, lru_tail; /* least / most recently used, NIL when empty */
	uint64_t lru_bytes; /* bytes of the entries on the LRU list (evictable) */
	/* The index: open addressing, linear probing, mask + 1 slots. */
	uint32_t *slot; /* entry index, NIL when empty */
	uint32_t mask; /* slots - 1 */
	uint32_t *scratch; /* max_blocks entries: a request's entries during release */
	/* Statistics. */
	uint64_t hit_tokens, lookup_tokens, bytes_saved; /* summed over admissions */
	uint64_t evictions; /* entries evicted to make room */
	uint64_t donations; /* entries inserted by releasing requests */
};

static const struct kv_option shared_options[] = {
	{ .name = "prefix_block_tokens", .type = KV_OPT_U64,
	  .offset = offsetof(struct shared, prefix_block_tokens), .def = 512, .min = 1,
	  .max = 1 << 20, .units = "tokens",
	  .help = "tokens per shared prefix block (Mooncake's 512), a multiple of block_tokens" },
	{ .name = "system_prompt_tokens", .type = KV_OPT_U64,
	  .offset = offsetof(struct shared, system_prompt_tokens), .def = 0, .min = 0,
	  .max = 1 << 24, .units = "tokens",
	  .help = "a system prompt every request without hash ids shares (clipped to its prompt)" },
	{ .name = "block_tokens", .type = KV_OPT_U64,
	  .offset = offsetof(struct shared, block_tokens), .def = 16, .min = 1, .max = 1 << 20,
	  .units = "tokens", .help = "tokens per block of a request's own KV" },
	{ .name = "request_blocks", .type = KV_OPT_BOOL,
	  .offset = offsetof(struct shared, request_blocks), .def = 0, .min = 0, .max = 1,
	  .units = "", .help = "also cache a request's other prompt blocks, keyed by its id, so it finds them when it resumes (the engines' prefix cache)" },
	{ .name = NULL },
};

/* splitmix64's finaliser (Steele, Lea, Flood, OOPSLA'14): a bijective 64-bit mixer. */
static inline uint64_t mix(uint64_t z)
{
	z += 0x9e3779b97f4a7c15ULL;
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

/* --- a request's chain of prefix-block keys ----------------------------- */

struct keys {
	struct kv_hash_iter it; /* hash ids (hashed requests) */
	uint64_t id; /* last hash id read */
	uint64_t n_read; /* hash ids read */
	uint64_t key; /* key of the last block walked (the chain) */
	uint64_t i, n; /* blocks walked, blocks keyed */
	uint64_t n_shared; /* blocks keyed by content (the rest by the request's id) */
	uint64_t own; /* the request's own seed (request_blocks) */
	uint64_t B; /* prefix block tokens */
	int hashed; /* keys from hash ids, else from the system prompt */
};

static void keys_init(struct keys *k, struct shared *c, const struct kv_req *q)
{
	k->B = c->prefix_block_tokens;
	k->i = 0;
	k->n_read = 0;
	k->hashed = q->n_hashes > 0;
	if (k->hashed) {
		uint64_t covered = (uint64_t)q->n_hashes * HASH_BLOCK_TOKENS;

		kv_hash_iter_init(&k->it, c->sim, q);
		k->n = KV_MIN(q->prompt_tokens, covered) / k->B;
		k->key = SEED_HASHED;
	} else {
		k->n = KV_MIN(q->prompt_tokens, c->system_prompt_tokens) / k->B;
		k->key = SEED_SYSTEM;
	}
	k->n_shared = k->n;
	k->own = mix(q->id ^ SEED_OWN);
	if (c->request_blocks)
		k->n = q->prompt_tokens / k->B;
}

/*
 * Stores the key of the next prefix block in *key and returns 1, or returns 0
 * past the last keyed block.  A hashed block's key folds in every hash id
 * covering its tokens (one when B divides 512, B/512 when 512 divides B).
 */
static int keys_next(struct keys *k, uint64_t *key)
{
	uint64_t v = k->i, j, last;

	if (k->i == k->n)
		return 0;
	if (k->i >= k->n_shared) {
		v = k->own ^ k->i; /* the request's own block */
	} else if (k->hashed) {
		last = ((k->i + 1) * k->B - 1) / HASH_BLOCK_TOKENS;
		for (j = k->i * k->B / HASH_BLOCK_TOKENS; j <= last; j++) {
			while (k->n_read <= j) {
				int ok = kv_hash_iter_next(&k->it, &k->id);

				KV_CHECK(ok, "hash id %llu missing", (unsigned long long)j);
				k->n_read++;
			}
			v = mix(v ^ k->id);
		}
	}
	k->key = mix(k->key ^ mix(v));
	k->i++;
	*key = k->key;
	return 1;
}

/* --- the index ------------------------------------------------------------ */

static inline uint32_t home(const struct shared *c, uint64_t key)
{
	return (uint32_t)(key ^ (key >> 32)) & c->mask;
}

/* The entry holding key, or NIL. */
static uint32_t index_find(const struct shared *c, uint64_t key)
{
	uint32_t i = home(c, key), e;

	while ((e = c->slot[i]) != NIL) {
		if (c->key[e] == key)
			return e;
		i = (i + 1) & c->mask;
	}
	return NIL;
}

static void index_insert(struct shared *c, uint32_t e)
{
	uint32_t i = home(c, c->key[e]);

	while (c->slot[i] != NIL)
		i = (i + 1) & c->mask;
	c->slot[i] = e;
}

/*
 * Removes entry e by backward-shift deletion: later members of its probe run
 * move into the hole unless their home lies cyclically in (hole, position].
 * Rejected: tombstones, which lengthen probes until a rebuild.
 */
static void index_remove(struct shared *c, uint32_t e)
{
	uint32_t i = home(c, c->key[e]), j;

	while (c->slot[i] != e) {
		KV_CHECK(c->slot[i] != NIL, "entry %u missing from the index", e);
		i = (i + 1) & c->mask;
	}
	for (j = i;;) {
		uint32_t h;

		j = (j + 1) & c->mask;
		if (c->slot[j] == NIL)
			break;
		h = home(c, c->key[c->slot[j]]);
		if (i <= j ? (i < h && h <= j) : (i < h || h <= j))
			continue;
		c->slot[i] = c->slot[j];
		i = j;
	}
	c->slot[i] = NIL;
}

/* --- the LRU list: an entry is on it iff its count is 0 ---------------- */

static void lru_unlink(struct shared *c, uint32_t e)
{
	if (c->prev[e] != NIL)
		c->next[c->prev[e]] = c->next[e];
	else
		c->lru_head = c->next[e];
	if (c->next[e] != NIL)
		c->prev[c->next[e]] = c->prev[e];
	else
		c->lru_tail = c->prev[e];
	c->lru_bytes -= c->entry_bytes;
}

/* Appends e as the most recently used. */
static void lru_push(struct shared *c, uint32_t e)
{
	c->prev[e] = c->lru_tail;
	c->next[e] = NIL;
	if (c->lru_tail != NIL)
		c->next[c->lru_tail] = e;
	else
		c->lru_head = e;
	c->lru_tail = e;
	c->lru_bytes += c->entry_bytes;
}

/* --- entries ----------------------------------------------------------- */

static inline uint32_t *entry_off(const struct shared *c, uint32_t e)
{
	return &c->off[(size_t)e * c->ext_blocks];
}

/*
 * Allocates an extent of entry_units as buddy blocks, largest first (as
 * kv_blocks_append does), into off[].  Returns 0, or KV_ENOMEM with nothing
 * taken.
 */
static int extent_alloc(struct shared *c, uint32_t *off)
{
	struct kv_pool *p = c->pool;
	uint64_t left = c->entry_units;
	unsigned k = p->max_order;
	uint32_t nb = 0;

	while (left) {
		while ((1ULL << k) > left)
			k--;
		if (kv_pool_alloc(p, k, &off[nb])) {
			while (nb--)
				kv_pool_free(p, off[nb]);
			return KV_ENOMEM;
		}
		nb++;
		left -= 1ULL << k;
	}
	KV_CHECK(nb == c->ext_blocks, "extent of %u blocks, expected %u", nb, c->ext_blocks);
	return 0;
}

/* A new cached entry for key, count 0, most recently used; NIL when memory is short. */
static uint32_t entry_new(struct shared *c, uint64_t key)
{
	uint32_t e = c->free_entry;

	if (e == NIL || extent_alloc(c, entry_off(c, e)))
		return NIL; /* a free entry exists whenever the pool has room (cap bound) */
	c->free_entry = c->next[e];
	c->key[e] = key;
	c->refs[e] = 0;
	c->n++;
	index_insert(c, e);
	lru_push(c, e);
	c->donations++;
	return e;
}

/* Adds one sharer to e: one pool reference per block. */
static void entry_ref(struct shared *c, uint32_t e)
{
	const uint32_t *off = entry_off(c, e);
	uint32_t k;

	if (c->refs[e] == 0)
		lru_unlink(c, e);
	c->refs[e]++;
	for (k = 0; k < c->ext_blocks; k++) {
		unsigned r = kv_pool_ref(c->pool, off[k]);

		KV_CHECK(r == c->refs[e] + 1, "entry %u block %u has %u references, %u sharers", e,
			 off[k], r, c->refs[e]);
	}
}

/* Drops one sharer from e; the index's own reference keeps the blocks. */
static void entry_unref(struct shared *c, uint32_t e)
{
	const uint32_t *off = entry_off(c, e);
	uint32_t k;

	KV_CHECK(c->refs[e] > 0, "entry %u released with no sharer", e);
	c->refs[e]--;
	for (k = 0; k < c->ext_blocks; k++) {
		unsigned r = kv_pool_free(c->pool, off[k]);

		KV_CHECK(r == c->refs[e] + 1, "entry %u block %u has %u references, %u sharers", e,
			 off[k], r, c->refs[e]);
	}
	if (c->refs[e] == 0)
		lru_push(c, e);
}

/* Frees an unused entry's extent and forgets it. */
static void entry_drop(struct shared *c, uint32_t e)
{
	const uint32_t *off = entry_off(c, e);
	uint32_t k;

	KV_CHECK(c->refs[e] == 0, "dropping entry %u with %u sharers", e, c->refs[e]);
	lru_unlink(c, e);
	for (k = 0; k < c->ext_blocks; k++) {
		unsigned r = kv_pool_free(c->pool, off[k]);

		KV_CHECK(r == 0, "cached entry %u block %u still has %u references", e, off[k], r);
	}
	index_remove(c, e);
	c->next[e] = c->free_entry;
	c->free_entry = e;
	c->n--;
}

/* Evicts the least recently used entry; KV_ENOMEM when none is cached. */
static int evict_one(struct shared *c)
{
	if (c->lru_head == NIL)
		return KV_ENOMEM;
	entry_drop(c, c->lru_head);
	c->evictions++;
	return 0;
}

/* --- hooks ------------------------------------------------------------- */

/* Buddy blocks in an extent of `units` pool units, largest first, capped at max_order. */
static uint32_t extent_blocks(const struct kv_pool *p, uint64_t units)
{
	uint64_t small = units & ((1ULL << p->max_order) - 1);

	return (uint32_t)((units >> p->max_order) + (uint64_t)__builtin_popcountll(small));
}

static int check_options(const struct shared *c, const struct kv_model *m, struct kv_diag *d)
{
	if (c->block_tokens > m->max_ctx_tokens)
		return kv_diag_set(d, KV_EINVAL, "", 0, 0, "cache.block_tokens",
				   "bad value %llu: expected at most %s's context of %u tokens",
				   (unsigned long long)c->block_tokens, m->name, m->max_ctx_tokens);
	if (c->prefix_block_tokens % c->block_tokens || c->prefix_block_tokens > m->max_ctx_tokens)
		return kv_diag_set(d, KV_EINVAL, "", 0, 0, "cache.prefix_block_tokens",
				   "bad value %llu: expected a multiple of block_tokens (%llu) of at most %s's context of %u tokens",
				   (unsigned long long)c->prefix_block_tokens,
				   (unsigned long long)c->block_tokens, m->name, m->max_ctx_tokens);
	if (c->system_prompt_tokens > m->max_ctx_tokens)
		return kv_diag_set(d, KV_EINVAL, "", 0, 0, "cache.system_prompt_tokens",
				   "bad value %llu: expected at most %s's context of %u tokens",
				   (unsigned long long)c->system_prompt_tokens, m->name,
				   m->max_ctx_tokens);
	return 0;
}

/* Sizes the entry arrays and the index for the most entries the pool can hold. */
static void arrays_init(struct shared *c)
{
	uint64_t slots = 16;
	uint32_t e;

	c->cap = (uint32_t)(c->pool->n_units / c->entry_units);
	while (slots * 7 < (uint64_t)c->cap * 10 + 7) /* load below 0.7 even at cap */
		slots *= 2;
	c->mask = (uint32_t)(slots - 1);
	c->slot = kv_xmalloc(slots * sizeof(*c->slot));
	memset(c->slot, 0xff, slots * sizeof(*c->slot)); /* every slot NIL */
	c->key = kv_xcalloc(c->cap + 1, sizeof(*c->key));
	c->off = kv_xcalloc(((size_t)c->cap + 1) * c->ext_blocks, sizeof(*c->off));
	c->refs = kv_xcalloc(c->cap + 1, sizeof(*c->refs));
	c->prev = kv_xcalloc(c->cap + 1, sizeof(*c->prev));
	c->next = kv_xcalloc(c->cap + 1, sizeof(*c->next));
	c->scratch = kv_xcalloc(c->max_blocks + 1, sizeof(*c->scratch));
	c->free_entry = NIL;
	for (e = c->cap; e-- > 0;) {
		c->next[e] = c->free_entry;
		c->free_entry = e;
	}
	c->lru_head = c->lru_tail = NIL;
}

static int shared_init(void *priv, const struct kv_cache_env *env, struct kv_diag *d)
{
	struct shared *c = priv;
	int rc = check_options(c, env->model, d);

	if (rc)
		return rc;
	kv_blocks_init(&c->blocks, env->pool);
	c->pool = env->pool;
	c->sim = env->sim;
	c->token_bytes = env->token_bytes;
	c->chunk_bytes = c->block_tokens * c->token_bytes;
	c->chunk_units = kv_blocks_units(&c->blocks, c->chunk_bytes, 0);
	c->entry_units = kv_blocks_units(&c->blocks, c->prefix_block_tokens * c->token_bytes, 0);
	c->entry_bytes = c->entry_units * env->pool->unit_bytes;
	c->ext_blocks = extent_blocks(env->pool, c->entry_units);
	c->max_blocks = (uint32_t)(env->model->max_ctx_tokens / c->prefix_block_tokens);
	arrays_init(c);
	return 0;
}

static void shared_fini(void *priv)
{
	struct shared *c = priv;

	kv_blocks_release(&c->blocks);
	free(c->slot);
	free(c->key);
	free(c->off);
	free(c->refs);
	free(c->prev);
	free(c->next);
	free(c->scratch);
}

static uint64_t shared_prefix_hit(void *priv, struct kv_req *q)
{
	struct shared *c = priv;
	uint64_t limit = q->prompt_tokens ? (q->prompt_tokens - 1) / c->prefix_block_tokens : 0;
	uint64_t m = 0, key;
	struct keys k;

	keys_init(&k, c, q);
	while (m < limit && keys_next(&k, &key)) {
		uint32_t e = index_find(c, key);

		if (e == NIL || c->refs[e] >= SHARERS_MAX)
			break;
		entry_ref(c, e);
		m++;
	}
	q->cache[0] = KV_BLOCKS_EMPTY;
	q->cache[1] = m | PENDING;
	q->cache[2] = 0;
	q->kv_bytes = m * c->entry_bytes;
	q->kv_cap_tokens = m * c->prefix_block_tokens;
	return q->kv_cap_tokens;
}

/* Appends one own block to *t, evicting cached entries while the pool refuses. */
static int grow_one(struct shared *c, uint64_t *t, uint64_t *held)
{
	while (kv_blocks_append(&c->blocks, t, c->chunk_bytes, 0, held))
		if (evict_one(c))
			return KV_ENOMEM;
	return 0;
}

/* Counts an admission's lookup once, at its first successful reserve. */
static void count_lookup(struct shared *c, struct kv_req *q)
{
	uint64_t m = (uint32_t)q->cache[1];

	c->hit_tokens += m * c->prefix_block_tokens;
	c->lookup_tokens += q->prompt_tokens;
	c->bytes_saved += m * c->entry_bytes;
	q->cache[1] &= ~PENDING;
}

/*
 * Grows q's own table to hold `tokens`; all or nothing.  Evicts only when the
 * free and evictable bytes together could cover the growth, so a request
 * that cannot fit anyway does not flush the cache.
 */
static int shared_reserve(void *priv, struct kv_req *q, uint64_t tokens)
{
	struct shared *c = priv;
	uint64_t own = q->cache[2], t = own ? q->cache[0] : KV_BLOCKS_EMPTY, saved = t;
	uint64_t cap = q->kv_cap_tokens, held = 0, need;

	if (tokens <= cap)
		return 0; /* the engine does not call below the capacity */
	need = kv_div_ceil(tokens - cap, c->block_tokens) * c->chunk_units * c->pool->unit_bytes;
	if (need > c->pool->free_bytes + c->lru_bytes)
		return KV_ENOMEM;
	while (cap < tokens) {
		if (grow_one(c, &t, &held)) {
			kv_blocks_truncate(&c->blocks, &t, saved); /* all or nothing */
			return KV_ENOMEM;
		}
		cap += c->block_tokens;
	}
	q->cache[0] = t;
	q->cache[2] = own + held;
	q->kv_cap_tokens = cap;
	q->kv_bytes += held;
	if (q->cache[1] & PENDING)
		count_lookup(c, q);
	return 0;
}

/*
 * Re-walks q's keys: the m matched entries (present: q holds them), then the
 * blocks q computed itself, donated as new entries while memory allows.
 * Fills scratch[] with one entry per block walked; returns their number.
 */
static uint32_t collect(struct shared *c, const struct kv_req *q, uint64_t m)
{
	uint64_t done = KV_MIN(q->kv_tokens, q->prompt_tokens) / c->prefix_block_tokens;
	uint64_t key, end = KV_MAX(m, done);
	uint32_t n = 0;
	struct keys k;

	keys_init(&k, c, q);
	while (n < end && keys_next(&k, &key)) {
		uint32_t e = index_find(c, key);

		KV_CHECK(n >= m || e != NIL, "request %llu lost shared block %u",
			 (unsigned long long)q->id, n);
		KV_CHECK(n <= c->max_blocks, "request %llu has over %u prefix blocks",
			 (unsigned long long)q->id, c->max_blocks);
		if (e == NIL && (e = entry_new(c, key)) == NIL)
			break; /* no room: later blocks could not match without this one */
		c->scratch[n++] = e;
	}
	KV_CHECK(n >= m, "request %llu matched %llu blocks, found %u",
		 (unsigned long long)q->id, (unsigned long long)m, n);
	return n;
}

static void shared_release(void *priv, struct kv_req *q)
{
	struct shared *c = priv;
	uint64_t m = (uint32_t)q->cache[1];
	uint32_t n, i;

	if (q->cache[2])
		kv_blocks_free(&c->blocks, &q->cache[0]); /* first: donations reuse the room */
	n = collect(c, q, m);
	/* Deepest first, so a prefix's head ends up the most recently used. */
	for (i = n; i-- > 0;) {
		uint32_t e = c->scratch[i];

		if (i < m) {
			entry_unref(c, e);
		} else if (c->refs[e] == 0) {
			lru_unlink(c, e); /* touch: most recently used */
			lru_push(c, e);
		}
	}
	q->cache[0] = KV_BLOCKS_EMPTY;
	q->cache[1] = q->cache[2] = 0;
	q->kv_bytes = 0;
	q->kv_cap_tokens = 0;
}

static void shared_flush(void *priv)
{
	struct shared *c = priv;
	uint32_t cached = 0, e;

	for (e = c->lru_head; e != NIL; e = c->next[e])
		cached++;
	KV_CHECK(cached == c->n, "flush: %u entries, %u unused", c->n, cached);
	while (c->lru_head != NIL)
		entry_drop(c, c->lru_head);
	KV_CHECK(c->lru_bytes == 0, "flush left %llu evictable bytes",
		 (unsigned long long)c->lru_bytes);
}

static void shared_stats(const void *priv, struct kv_cache_stats *st)
{
	const struct shared *c = priv;

	st->hit_tokens = c->hit_tokens;
	st->lookup_tokens = c->lookup_tokens;
	st->hit_rate = c->lookup_tokens ? (double)c->hit_tokens / (double)c->lookup_tokens : 0;
	st->bytes_saved = c->bytes_saved;
	st->evictions = c->evictions;
}

static uint64_t shared_evictable_bytes(const void *priv)
{
	const struct shared *c = priv;

	return c->lru_bytes;
}

static double shared_bytes_per_token(const void *priv)
{
	const struct shared *c = priv;

	return (double)c->token_bytes;
}

const struct kv_cache_ops kv_cache_shared = {
	.name = "shared",
	.flags = KV_PLUGIN_F_MACRO_STEPS, /* no per-step hook; a decode inside its blocks calls nothing */
	.desc = "prefix blocks of B tokens shared by reference across requests, cached when unused and evicted LRU; the rest in blocks of Bt: kv_bytes = m * extent(B * b) + ceil((n - m*B) / Bt) * extent(Bt * b), beta = b",
	.priv_size = sizeof(struct shared),
	.options = shared_options,
	.init = shared_init,
	.fini = shared_fini,
	.reserve = shared_reserve,
	.release = shared_release,
	.bytes_per_token = shared_bytes_per_token,
	.prefix_hit = shared_prefix_hit,
	.flush = shared_flush,
	.stats = shared_stats,
	.evictable_bytes = shared_evictable_bytes,
};
