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
 *   - Mooncake requests carry hash ids, one per hash_block_tokens = H
 *     tokens (512 in Mooncake's traces); block i's key chains the ids that
 *     cover tokens [0, (i+1)B), so a hash id of H tokens covers H / B
 *     engine blocks (32 of vLLM's 16-token blocks): two requests whose ids
 *     agree on their first k match floor(kH / B) blocks, and a block that
 *     straddles two ids needs both;
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
 * backward-shift deletion over flat arrays; the entry arrays double when
 * no entry is free, up to the most entries the pool can hold (n_units /
 * units per entry), and the index with them, so its load stays below 0.7
 * and no event allocates once a replica's high-water mark is reached (a
 * fleet's replicas seldom fill theirs: sizing every one for its bound at
 * init took half the fleet benchmark's memory).
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
 *               reverse order for the same reason).  A request released for
 *               good (q->leaving: it ended, or its KV went to a decode
 *               replica) while no cache has indexed any of its own blocks
 *               (struct shared_req) donates its own-keyed blocks
 *               (request_blocks) as one run (struct shared, "Runs"): out of
 *               the index, an LRU node and records of a ring instead of an
 *               entry each, and unindexed in the tiers only its replica uses
 *               (tiers.h kv_tiers_put_unseen); only it could have found
 *               them, so no output changes.  While no cache has indexed any
 *               of a request's own blocks, its lookups and releases do not
 *               probe for them.
 *   publish     (option publish = 1, the vllm and sglang engines) after a
 *               reserve, the complete prompt blocks it covers become index
 *               entries in place: the entry names the request's own pool
 *               blocks, which gain the index's reference, and the request
 *               is its one sharer (owner[e]), so a request admitted later
 *               finds them while it runs (vLLM V1 cache_full_blocks).  At
 *               release its table's reference goes with the table and its
 *               sharing with the entry's count; a block published but never
 *               computed is forgotten.
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
 * own blocks' tokens.  Conservation: every pool block belongs to a
 * request's table or an index entry, both only when published (its
 * publisher's table holds the reference the publisher counts for as a
 * sharer), and an entry's blocks carry exactly 1 + count references
 * (KV_CHECK on every reference change).
 *
 * Sliding window (a model with sliding_window W on Lw of its L layers, b a
 * multiple of L): the layers form two groups, as in vLLM V1's hybrid
 * KV-cache manager (vllm/v1/core/kv_cache_coordinator.py,
 * single_type_kv_cache_manager.py).  A request's own blocks are
 * winblocks.h's two tables, from token mB on: the windowed one frees the
 * blocks wholly before the next token's window (SlidingWindowManager.
 * remove_skipped_blocks).  Every prefix block has an entry per group, keyed
 * apart: G_FULL of extent(B * b * (L - Lw) / L) (none when Lw = L) and
 * G_WIN of extent(B * b * Lw / L).  What a hit means when windowed blocks
 * are gone follows vLLM's find_longest_cache_hit: the full group's longest
 * run from block 0 bounds it; within it, the windowed group needs only the
 * ceil((W - 1) / B) blocks before the hit's end, the ones the next token
 * attends to; earlier ones may have been evicted (see window_hit).  A
 * request references its m G_FULL entries and the G_WIN entries of blocks
 * lo..m-1, lo = m - min(m, ceil((W - 1) / B)), and drops each G_WIN one
 * once the window has left it (it stays cached, evictable).  So with c
 * tokens computed
 *
 *   kv_bytes = m * extent(B * b * (L - Lw) / L) + (m - lo) * extent(B * b * Lw / L)
 *            + own blocks (winblocks.h, from token mB),
 *   lo = max(m - min(m, ceil((W - 1) / B)), min(m, floor(max(0, c + 1 - W) / B))).
 *
 * Release donates both groups' entries of every block the request computed
 * (see release_window).
 *
 * Per-request words: cache[0] the own block table (valid when cache[2] is
 * nonzero), cache[1] matched blocks m (low 32 bits) and PENDING (bit 63:
 * the lookup is not yet counted in the statistics), cache[2] own bytes,
 * cache[3] the prompt blocks examined for publishing (0 before the first);
 * the per-request state (req_size, struct shared_req) is the key walk
 * publishing stopped at and whether a cache has indexed its own blocks.
 * With a window: cache[0] and cache[2] the own full and windowed tables
 * (valid when cache[3] is nonzero), cache[1] also lo (bits 32-62), cache[3]
 * own bytes.  All zero when the request holds nothing.
 *
 * Statistics (summed over admissions: the first successful reserve after a
 * lookup): hit_tokens = m*B, lookup_tokens = prompt tokens, bytes_saved =
 * m * extent(B * b) (with a window the entries referenced at the hit);
 * hit_rate = hit_tokens / lookup_tokens; self_hit_tokens the hits on
 * entries the request itself computed (origin[e], before a preemption).
 */
#include "engine.h"
#include "tiers.h"
#include "winblocks.h"

#include <assert.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#define NIL UINT32_MAX
#define PENDING (1ULL << 63) /* cache[1]: lookup not yet counted */
#define SHARERS_MAX (UINT16_MAX - 1) /* sharers per entry: pool counts stop at 65535 */
#define SEED_HASHED 0x6d6f6f6e63616b65ULL /* chain start for hash-id keys */
#define SEED_SYSTEM 0x73797374656d2d70ULL /* chain start for system-prompt keys */
#define SEED_OWN 0x6f776e2d626c6f63ULL /* a request's own prompt blocks (request_blocks) */
#define SYS_KEYS 4096 /* system-prompt keys computed once per cache, at most (32 KiB) */
#define SEED_WIN 0x77696e646f776564ULL /* a block's windowed-group entry: its key mixed with this */
#define LO_MASK 0x7fffffffULL /* cache[1] >> 32: the first windowed entry still held */

enum { G_FULL, G_WIN }; /* entry groups: every layer (or the full-attention ones), the windowed ones */
#define G_OWN 2 /* grp[]: or'ed into the group of an entry keyed by its request's id (request_blocks) */
#define G_RUN 4 /* grp[]: or'ed into G_FULL | G_OWN: the LRU node of a run, in no index (struct shared, "Runs") */
#define RUN_NONE UINT64_MAX /* no run in this release */
#define EVICT_AHEAD 8 /* evict_n fetches what the victim this many later touches */

struct shared {
	uint64_t prefix_block_tokens; /* option: tokens per shared prefix block, default 512 */
	uint64_t system_prompt_tokens; /* option: tokens of a prompt prefix every request shares, default 0 */
	uint64_t block_tokens; /* option: tokens per block of a request's own KV, default 16 */
	int request_blocks; /* option: key a request's other prompt blocks by its id, default 0 */
	uint64_t publish; /* option: when a request's prompt blocks become findable: PUBLISH_*, default at release */
	uint64_t hash_block_tokens; /* option: tokens one trace hash id covers, default 512 (Mooncake) */
	/*
	 * The system prompt's key chain, computed once (keys_next would mix
	 * each of them at every walk of every request: 2 of the 3 walks per
	 * block of a request in bench/fleet-cluster.yaml); at most SYS_KEYS,
	 * later blocks are mixed as they come.
	 */
	uint64_t *sys_key;
	uint32_t n_sys_key;
	struct kv_blocks blocks; /* requests' own block tables */
	struct kv_pool *pool; /* the replica's pool */
	const struct kv_sim *sim; /* the simulation, for reading requests' hash ids */
	uint64_t token_bytes; /* b, bytes */
	uint64_t chunk_bytes; /* Bt * b, bytes of one own block */
	uint64_t chunk_units; /* pool units one own block takes */
	uint64_t entry_units[2]; /* pool units one entry's extent takes, by group */
	uint64_t entry_bytes[2]; /* entry_units * unit_bytes, by group */
	uint32_t ext_blocks[2]; /* buddy blocks in one entry's extent, by group */
	uint32_t ext_max; /* the larger: offsets kept per entry */
	/* A windowed model (win.win_tokens nonzero): own blocks in two groups, entries of either group. */
	struct kv_winblocks win; /* the layer groups of the own blocks (win_tokens 0: one group) */
	int has_full; /* some layers attend to the whole context (a G_FULL entry per block) */
	uint64_t win_need; /* prefix blocks a hit needs on the windowed group: ceil((W - 1) / B) */
	uint32_t max_blocks; /* prefix blocks in the longest prompt (the model's context) */
	/* Entries, flat arrays of cap (offsets: cap * ext_max), grown by doubling up to max_cap. */
	uint32_t cap; /* entries allocated */
	uint32_t max_cap; /* entries the pool can hold at most */
	uint32_t n; /* live entries */
	uint32_t free_entry; /* free list through next[], NIL */
	uint64_t *key; /* chained key */
	uint32_t *off; /* buddy block offsets, ext_max per entry */
	unsigned char *grp; /* its group, G_FULL or G_WIN, | G_OWN when keyed by a request's id */
	uint32_t *refs; /* requests using it (its publisher included, which holds it through its own table) */
	uint32_t *owner; /* slot of the running request whose own table holds the entry's blocks (published), NIL */
	uint64_t *origin; /* id of the request that computed it (published or donated it) */
	uint32_t *prev, *next; /* LRU links (toward head / tail), NIL at the ends */
	uint32_t lru_head, lru_tail; /* least / most recently used, NIL when empty */
	uint64_t lru_bytes; /* bytes of the entries on the LRU list (evictable) */
	/* The index: open addressing, linear probing, mask + 1 slots. */
	struct slot {
		uint32_t hash; /* hash(key) of its entry: its home, and a probe's first test */
		uint32_t e; /* entry index, NIL when empty */
	} *slot;
	uint32_t mask; /* slots - 1 */
	uint32_t *scratch; /* max_blocks entries: a request's entries during release */
	uint32_t *wscratch; /* with a window: a request's G_WIN entries during release, NIL when none */
	uint64_t *keybuf; /* a request's block keys during a lookup (window) or a release's prefetch */
	/*
	 * Runs.  The own blocks a leaving request donates in one release, when
	 * no cache has indexed any of its own blocks (fresh), are consecutive
	 * blocks pushed on the LRU list one after the other, deepest first,
	 * that nothing can find, reference or touch: an immutable segment of
	 * the LRU order, which only eviction (deepest first) or the flush
	 * takes apart.  So the segment is one LRU node (an entry of group
	 * G_FULL | G_OWN | G_RUN whose origin[] counts its blocks
	 * left) and its blocks are records of a ring, in their eviction order:
	 * segments leave the LRU list in the order they entered it, so the
	 * ring's head is always the next block of the oldest run.  The same
	 * evictions, in the same order, with the same keys down the tiers, as
	 * one entry per block, without an entry, an LRU link or a touch per
	 * block (bench/fleet-cluster.yaml donates every own block this way).
	 */
	uint64_t *run_key; /* ring: a block's key, run_cap positions (a power of two; 0 before the first run) */
	uint32_t *run_off; /* ring: its buddy block offsets, ext_max per position */
	uint32_t run_cap, run_head, run_n; /* positions, the oldest record, records held */
	uint32_t *run_scratch; /* (max_blocks + 1) * ext_max: a release's run blocks' offsets, by block */
	uint64_t run_lo, run_hi; /* the blocks [lo, hi) of the release under way that form its run, RUN_NONE */
	/*
	 * In place.  When every own block and every entry is one max-order
	 * pool block (no window, prefix blocks of block_tokens), pool blocks
	 * are interchangeable: none is ever split or merged, so which offset
	 * a block has changes no count, refusal or fragmentation figure.  A
	 * fresh leaving request's release then keeps its table's blocks as
	 * the blocks it donates (own block j is prefix block m + j) and frees
	 * only the others, instead of freeing the table and allocating the
	 * donations again: the same outputs without two pool operations (a
	 * record write each, a cache miss on a fleet's pools) per block.  And
	 * a reserve that free blocks cover takes them in one call (the pool
	 * fetches their records together), not block by block.
	 */
	int in_place; /* option: keep them in place where the condition holds, default 1 */
	int inplace; /* in_place and the condition above holds for this cache */
	uint32_t *tbl; /* tbl_max offsets: the table of the release under way, NIL once taken */
	uint64_t tbl_max; /* max_blocks + 2: a table's most blocks (prompt and output within the context) */
	uint64_t tbl_n; /* blocks in tbl[] */
	/* Statistics. */
	uint64_t hit_tokens, lookup_tokens, bytes_saved; /* summed over admissions */
	uint64_t evictions; /* entries evicted to make room */
	uint64_t donations; /* entries inserted by releasing requests */
	uint64_t published; /* entries published by running requests */
	uint64_t kept; /* blocks donated in place (in_place) */
	uint64_t self_hit_tokens; /* of hit_tokens, those in blocks the request had computed itself */
	/* KV events (cache.h): keys of the lookup group entering and leaving the index */
	void (*on_block)(void *ctx, uint32_t replica, uint64_t key, int held); /* NULL: none */
	void *block_ctx; /* passed back to on_block */
	uint32_t replica; /* the replica, for on_block */
	/* The tiers below the pool (tiers.h); options tier_*; none when every capacity is 0. */
	struct kv_tier_cfg tier[KV_TIERS_MAX]; /* options: CPU, SSD, remote */
	int tier_blocking; /* option: a load blocks the batch (1) or streams layer by layer (0, default) */
	int tier_remote_shared; /* option: one remote tier for every replica (1, default) or one each */
	struct kv_tiers tiers; /* the stack, tiers.n = 0 when off */
	struct kv_tier **remote_slot; /* the run's shared remote tier (env->remote) */
	kv_ns load_done_ns; /* the last prefix_hit's loads land, ns */
	uint64_t load_tokens; /* tokens the last prefix_hit loaded from the tiers */
	uint64_t tier_hit_tokens[KV_TIERS_MAX]; /* tokens loaded, by tier kind */
	uint64_t tier_lookup_blocks; /* blocks looked up below the GPU (the first GPU miss and on) */
};

/* cache.publish: when a request's complete prompt blocks enter the index. */
enum {
	PUBLISH_RELEASE, /* when it finishes or is preempted (donated) */
	PUBLISH_ALLOCATED, /* as soon as a reserve covers them (vLLM V1 cache_full_blocks) */
};

/* cache.tier_load's values. */
static const char *const tier_load_names[] = { "layerwise", "blocking", NULL };

/* Option rows of tier i (a literal name part nm); defaults r, w bytes/s and lat ns. */
#define TIER_OPTS(i, nm, what, r, w, lat)                                                     \
	{ .name = "tier_" nm "_bytes", .type = KV_OPT_BYTES,                                   \
	  .offset = offsetof(struct shared, tier[i].capacity_bytes), .def = 0, .min = 0,        \
	  .max = 1e18, .units = "bytes",                                                       \
	  .help = what " tier's capacity per replica (the remote tier's per cluster when tier_remote_shared); 0: none" },  \
	{ .name = "tier_" nm "_read_Bps", .type = KV_OPT_DBL,                                  \
	  .offset = offsetof(struct shared, tier[i].read_Bps), .def = r, .min = 0, .max = 1e15,  \
	  .units = "bytes/s", .help = what " tier's read bandwidth toward the GPU (0: the device's host link x GPUs)" }, \
	{ .name = "tier_" nm "_write_Bps", .type = KV_OPT_DBL,                                 \
	  .offset = offsetof(struct shared, tier[i].write_Bps), .def = w, .min = 0, .max = 1e15, \
	  .units = "bytes/s", .help = what " tier's write bandwidth from the GPU (0: the device's host link x GPUs)" }, \
	{ .name = "tier_" nm "_latency", .type = KV_OPT_NS,                                    \
	  .offset = offsetof(struct shared, tier[i].latency_ns), .def = lat, .min = 0,          \
	  .max = 1e12, .units = "ns", .help = what " tier's latency, added to every load" }

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
	{ .name = "hash_block_tokens", .type = KV_OPT_U64,
	  .offset = offsetof(struct shared, hash_block_tokens), .def = 512, .min = 1,
	  .max = 1 << 20, .units = "tokens",
	  .help = "tokens one hash id of the trace covers (Mooncake's 512), whatever the prefix block: a prefix block matches when every hash id covering it and its prefix does" },
	{ .name = "tier_load", .type = KV_OPT_ENUM,
	  .offset = offsetof(struct shared, tier_blocking), .def = 0, .min = 0, .max = 1,
	  .units = "", .names = tier_load_names,
	  .help = "a load from the tiers streams layer by layer, overlapping the batch (layerwise: max(t, w) + min(t, w) / L), or blocks it (blocking: t + w)" },
	{ .name = "tier_remote_shared", .type = KV_OPT_BOOL,
	  .offset = offsetof(struct shared, tier_remote_shared), .def = 1, .min = 0, .max = 1,
	  .units = "", .help = "one remote tier for every replica of the cluster (Mooncake Store), else one per replica" },
	/* CPU: the host link (device profile); SSD: Samsung PM1743 (13 GB/s read, 6.6 GB/s write) and
	   100 us; remote: one 200 Gb/s RDMA port (25 GB/s) and 10 us (docs/cluster.md "Tiered KV store") */
	TIER_OPTS(0, "cpu", "CPU DRAM", 0, 0, 0),
	TIER_OPTS(1, "ssd", "local SSD", 13e9, 6.6e9, 100000),
	TIER_OPTS(2, "remote", "remote store", 25e9, 25e9, 10000),
	{ .name = "in_place", .type = KV_OPT_BOOL,
	  .offset = offsetof(struct shared, in_place), .def = 1, .min = 0, .max = 1, .units = "",
	  .help = "when every pool block is one largest block, a request that leaves donates its own blocks where they lie (as the engines do) and a reserve takes its blocks at once (0: block by block, freed and allocated again; the outputs are the same either way, for checking)" },
	{ .name = "publish", .type = KV_OPT_U64,
	  .offset = offsetof(struct shared, publish), .def = PUBLISH_RELEASE, .min = 0, .max = 1,
	  .units = "", .help = "when a running request's complete prompt blocks become findable: 0 at release, 1 when allocated (vLLM V1; SGLang one step later); 1 needs prefix_block_tokens = block_tokens and no sliding window, else 0" },
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
	uint64_t H; /* tokens per trace hash id */
	int hashed; /* keys from hash ids, else from the system prompt */
	const uint64_t *sys; /* the system prompt's chain, its first n_sys keys (sys_key) */
	uint64_t n_sys; /* blocks of sys[] this walk reads, <= n_shared */
};

static void keys_init(struct keys *k, const struct shared *c, const struct kv_req *q)
{
	k->B = c->prefix_block_tokens;
	k->H = c->hash_block_tokens;
	k->i = 0;
	k->n_read = 0;
	k->hashed = q->n_hashes > 0;
	if (k->hashed) {
		uint64_t covered = (uint64_t)q->n_hashes * k->H;

		kv_hash_iter_init(&k->it, c->sim, q);
		k->n = KV_MIN(q->prompt_tokens, covered) / k->B;
		k->key = SEED_HASHED;
	} else {
		k->n = KV_MIN(q->prompt_tokens, c->system_prompt_tokens) / k->B;
		k->key = SEED_SYSTEM;
	}
	k->n_shared = k->n;
	k->sys = c->sys_key;
	k->n_sys = k->hashed ? 0 : KV_MIN(k->n_shared, (uint64_t)c->n_sys_key);
	k->own = mix(q->id ^ SEED_OWN);
	if (c->request_blocks)
		k->n = q->prompt_tokens / k->B;
}

/*
 * Positions *k, q's walk saved in its per-request state (req_size), to
 * continue from block p: the saved walk as it is when it stopped at block p
 * or at its last key (a key chain is a function of the request and the
 * block alone, so a walk saved before a preemption is still right; only
 * the hash arena may have moved), else a fresh walk from block 0.  So
 * publishing walks each block once per admission, O(new blocks) per
 * reserve; the rejected alternative, a walk from block 0 at every reserve,
 * costs O(p) per prefill chunk (docs/benchmarks.md "Publishing prefix blocks").
 */
static void keys_resume(struct keys *k, struct shared *c, const struct kv_req *q, uint64_t p)
{
	if (k->B && (k->i == p || k->i == k->n) && k->i <= p) {
		k->it.pages = c->sim->hash_pages;
		k->sys = c->sys_key; /* this cache's copy (the walk may come from another replica's) */
		return;
	}
	keys_init(k, c, q);
}

/*
 * Stores the key of the next prefix block in *key and returns 1, or returns 0
 * past the last keyed block.  A hashed block's key folds in every hash id
 * covering its tokens [iB, (i+1)B), H tokens per id: ids floor(iB / H) to
 * floor(((i+1)B - 1) / H) (one when B divides H, B/H when H divides B, and
 * two where a block straddles two ids), so with the chain block i matches
 * exactly when every id covering tokens [0, (i+1)B) does.
 */
static int keys_next(struct keys *k, uint64_t *key)
{
	uint64_t v = k->i, j, last;

	if (k->i == k->n)
		return 0;
	if (k->i < k->n_sys) { /* the system prompt's chain, the same for every request */
		k->key = k->sys[k->i++];
		*key = k->key;
		return 1;
	}
	if (k->i >= k->n_shared) {
		v = k->own ^ k->i; /* the request's own block */
	} else if (k->hashed) {
		last = ((k->i + 1) * k->B - 1) / k->H;
		for (j = k->i * k->B / k->H; j <= last; j++) {
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

/*
 * A request's state (req_size), zeroed when it arrives: the walk publishing
 * stopped at, and whether any cache has indexed one of its own-keyed
 * blocks.  While none has, its own keys are in no index, so its lookups and
 * releases do not probe for them (a fleet's indexes outgrow the processor's
 * caches: a probe is a miss, one per own block per walk).  Set by every
 * path that indexes an own block (donation by a request that is not
 * leaving, a load from the tiers, publishing); a leaving request's own
 * blocks are donated unindexed, as a run, since only it could find them.
 */
struct shared_req {
	struct keys walk; /* the key walk publish stopped at (keys_resume) */
	uint32_t own_indexed; /* some cache has indexed one of its own-keyed blocks */
};

/*
 * G_OWN when block i of k's walk is keyed by the request's id (request_blocks):
 * only that request can ever match it.
 */
static inline int keys_own(const struct keys *k, uint64_t i)
{
	return i >= k->n_shared ? G_OWN : 0;
}

/* --- the index ------------------------------------------------------------ */

/* Entry e's group, G_FULL or G_WIN. */
static inline int grp(const struct shared *c, uint32_t e)
{
	return c->grp[e] & 1;
}


/* A key's 32-bit hash (keys are mix() outputs); its home slot is hash & mask. */
static inline uint32_t hash(uint64_t key)
{
	return (uint32_t)(key ^ (key >> 32));
}

/*
 * The entry holding key, or NIL.  A slot keeps its entry's hash: a probe
 * reads an entry's key only when the hashes agree, so a miss touches the
 * slot array alone (one or two cache lines; the key array holds millions
 * of entries across a fleet's replicas).
 */
static uint32_t index_find(const struct shared *c, uint64_t key)
{
	uint32_t h = hash(key), i = h & c->mask, e;

	while ((e = c->slot[i].e) != NIL) {
		if (c->slot[i].hash == h && c->key[e] == key)
			return e;
		i = (i + 1) & c->mask;
	}
	return NIL;
}

/*
 * The group a lookup walks from block 0: the full-attention one, or the
 * windowed one when every layer is windowed (window_hit).  Its keys are the
 * ones a KV event reports.
 */
static inline int lookup_group(const struct shared *c)
{
	return c->win.win_tokens && !c->has_full ? G_WIN : G_FULL;
}

/*
 * Reports e entering (held 1) or leaving (0) the index, when someone
 * listens; KV_BLOCK_OWN or'ed in for a key only its request can match.
 */
static inline void block_event_key(const struct shared *c, uint64_t key, int own, int held)
{
	if (c->on_block)
		c->on_block(c->block_ctx, c->replica, key, held | (own ? KV_BLOCK_OWN : 0));
}

static inline void block_event(const struct shared *c, uint32_t e, int held)
{
	if (grp(c, e) == lookup_group(c))
		block_event_key(c, c->key[e], c->grp[e] & G_OWN, held);
}

static void index_insert(struct shared *c, uint32_t e)
{
	uint32_t h = hash(c->key[e]), i = h & c->mask;

	block_event(c, e, 1);

	while (c->slot[i].e != NIL)
		i = (i + 1) & c->mask;
	c->slot[i].hash = h;
	c->slot[i].e = e;
}

/*
 * Removes entry e by backward-shift deletion: later members of its probe run
 * move into the hole unless their home lies cyclically in (hole, position].
 * Rejected: tombstones, which lengthen probes until a rebuild.
 */
static void index_remove(struct shared *c, uint32_t e)
{
	uint32_t i = hash(c->key[e]) & c->mask, j;

	block_event(c, e, 0);
	while (c->slot[i].e != e) {
		KV_CHECK(c->slot[i].e != NIL, "entry %u missing from the index", e);
		i = (i + 1) & c->mask;
	}
	for (j = i;;) {
		uint32_t h;

		j = (j + 1) & c->mask;
		if (c->slot[j].e == NIL)
			break;
		h = c->slot[j].hash & c->mask;
		if (i <= j ? (i < h && h <= j) : (i < h || h <= j))
			continue;
		c->slot[i] = c->slot[j];
		i = j;
	}
	c->slot[i].e = NIL;
}

/* --- the LRU list: an entry is on it iff its count is 0 ---------------- */

/* The evictable bytes entry e stands for on the LRU list: a run node's blocks left, else its extent. */
static inline uint64_t lru_weight(const struct shared *c, uint32_t e)
{
	return c->grp[e] & G_RUN ? c->origin[e] * c->entry_bytes[G_FULL] : c->entry_bytes[grp(c, e)];
}

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
	c->lru_bytes -= lru_weight(c, e);
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
	c->lru_bytes += lru_weight(c, e);
}

/*
 * Rebuilds the index with `slots` slots (a power of two) from the old one:
 * each slot's hash and entry move to their new home; no entry is read.
 */
static void index_resize(struct shared *c, uint64_t slots)
{
	struct slot *old = c->slot;
	uint32_t n = old ? c->mask + 1 : 0, i, j;

	c->slot = kv_xmalloc(slots * sizeof(*c->slot));
	memset(c->slot, 0xff, slots * sizeof(*c->slot)); /* every slot's entry NIL */
	c->mask = (uint32_t)(slots - 1);
	for (i = 0; i < n; i++) {
		if (old[i].e == NIL)
			continue;
		for (j = old[i].hash & c->mask; c->slot[j].e != NIL; j = (j + 1) & c->mask)
			;
		c->slot[j] = old[i];
	}
	free(old);
}

/*
 * Doubles the entry arrays (from 64, at most max_cap), the new entries
 * free, lowest first; grows the index to keep its load below 0.7 at the
 * new cap.  Entries keep their numbers.
 */
static void entries_grow(struct shared *c)
{
	uint32_t old = c->cap, e;
	uint64_t slots = c->slot ? (uint64_t)c->mask + 1 : 16;
	size_t n;

	c->cap = (uint32_t)KV_MIN(KV_MAX(2 * (uint64_t)old, 64), (uint64_t)c->max_cap);
	n = (size_t)c->cap + 1;
	c->key = kv_xrealloc(c->key, n * sizeof(*c->key));
	c->off = kv_xrealloc(c->off, n * c->ext_max * sizeof(*c->off));
	c->grp = kv_xrealloc(c->grp, n * sizeof(*c->grp));
	c->refs = kv_xrealloc(c->refs, n * sizeof(*c->refs));
	c->owner = kv_xrealloc(c->owner, n * sizeof(*c->owner));
	memset(c->owner + old, 0xff, (n - old) * sizeof(*c->owner)); /* NIL: not published */
	c->origin = kv_xrealloc(c->origin, n * sizeof(*c->origin));
	c->prev = kv_xrealloc(c->prev, n * sizeof(*c->prev));
	c->next = kv_xrealloc(c->next, n * sizeof(*c->next));
	for (e = c->cap; e-- > old;) {
		c->next[e] = c->free_entry;
		c->free_entry = e;
	}
	while (slots * 7 < (uint64_t)c->cap * 10 + 7) /* load below 0.7 even at cap */
		slots *= 2;
	if (!c->slot || slots != (uint64_t)c->mask + 1)
		index_resize(c, slots);
}

/* A free entry, the arrays grown when none is left below max_cap; NIL when the pool's bound is reached. */
static uint32_t entry_free(struct shared *c)
{
	if (c->free_entry == NIL && c->cap < c->max_cap)
		entries_grow(c);
	return c->free_entry;
}

/* --- entries ----------------------------------------------------------- */

static inline uint32_t *entry_off(const struct shared *c, uint32_t e)
{
	return &c->off[(size_t)e * c->ext_max];
}

/*
 * Allocates an extent of entry_units[g] as buddy blocks, largest first (as
 * kv_blocks_append does), into off[].  Returns 0, or KV_ENOMEM with nothing
 * taken.
 */
static int extent_alloc(struct shared *c, uint32_t *off, int g)
{
	struct kv_pool *p = c->pool;
	uint64_t left = c->entry_units[g];
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
	KV_CHECK(nb == c->ext_blocks[g], "extent of %u blocks, expected %u", nb, c->ext_blocks[g]);
	return 0;
}

/*
 * A new cached entry of group g (| G_OWN: keyed by a request's id) for key,
 * count 0, most recently used; NIL when memory is short.  Its extent is
 * allocated, or with off != NIL (in place) the one max-order block at off,
 * a leaving request's table block whose reference becomes the index's.
 */
static uint32_t entry_new_at(struct shared *c, uint64_t key, int g, uint64_t origin, uint32_t off)
{
	uint32_t e = entry_free(c);

	if (e == NIL)
		return NIL; /* a free entry exists whenever the pool has room (cap bound) */
	if (off == NIL) {
		if (extent_alloc(c, entry_off(c, e), g & 1))
			return NIL;
	} else {
		assert(c->inplace && c->ext_blocks[g & 1] == 1);
		*entry_off(c, e) = off;
	}
	c->free_entry = c->next[e];
	c->key[e] = key;
	c->grp[e] = (unsigned char)g;
	c->refs[e] = 0;
	c->origin[e] = origin;
	c->n++;
	index_insert(c, e);
	lru_push(c, e);
	c->donations++;
	return e;
}

/* entry_new_at with its extent allocated. */
static uint32_t entry_new(struct shared *c, uint64_t key, int g, uint64_t origin)
{
	return entry_new_at(c, key, g, origin, NIL);
}

/*
 * Publishes own block j of running request q (table t) as the entry for
 * key, in place: the entry names the same pool blocks, which gain the
 * index's reference, and q counts as its one sharer (its table holds its
 * reference), so the blocks carry 1 + refs references as every entry's do.
 * Nothing moves and no memory is taken.  Returns 0, or NIL-like 1 when no
 * entry is free (cannot happen below cap: one entry per pool extent).
 */
static int entry_adopt(struct shared *c, const struct kv_req *q, uint64_t t, uint64_t j,
		       uint64_t key, int own)
{
	uint32_t e = entry_free(c), *off, k;

	if (e == NIL)
		return 1;
	c->free_entry = c->next[e];
	off = entry_off(c, e);
	for (k = 0; k < c->ext_blocks[G_FULL]; k++) {
		off[k] = kv_blocks_at(&c->blocks, t, j * c->ext_blocks[G_FULL] + k);
		KV_CHECK(kv_pool_ref(c->pool, off[k]) == 2, "published block %u shared already",
			 off[k]);
	}
	c->key[e] = key;
	c->grp[e] = (unsigned char)(G_FULL | own);
	c->refs[e] = 1;
	c->owner[e] = q->slot;
	c->origin[e] = q->id;
	c->n++;
	index_insert(c, e);
	c->published++;
	return 0;
}

/* Adds one sharer to e: one pool reference per block. */
static void entry_ref(struct shared *c, uint32_t e)
{
	const uint32_t *off = entry_off(c, e);
	uint32_t k;

	if (c->refs[e] == 0)
		lru_unlink(c, e);
	c->refs[e]++;
	for (k = 0; k < c->ext_blocks[grp(c, e)]; k++) {
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
	for (k = 0; k < c->ext_blocks[grp(c, e)]; k++) {
		unsigned r = kv_pool_free(c->pool, off[k]);

		KV_CHECK(r == c->refs[e] + 1, "entry %u block %u has %u references, %u sharers", e,
			 off[k], r, c->refs[e]);
	}
	if (c->refs[e] == 0)
		lru_push(c, e);
}

/* --- runs ---------------------------------------------------------------- */

/* Doubles the run ring (from 64), its records kept in order from position 0. */
static void run_ring_grow(struct shared *c)
{
	uint32_t cap = c->run_cap ? 2 * c->run_cap : 64, i, x = c->ext_max;
	uint64_t *key = kv_xmalloc((size_t)cap * sizeof(*key));
	uint32_t *off = kv_xmalloc((size_t)cap * x * sizeof(*off));

	for (i = 0; i < c->run_n; i++) {
		uint32_t p = (c->run_head + i) & (c->run_cap - 1);

		key[i] = c->run_key[p];
		memcpy(&off[(size_t)i * x], &c->run_off[(size_t)p * x], x * sizeof(*off));
	}
	free(c->run_key);
	free(c->run_off);
	c->run_key = key;
	c->run_off = off;
	c->run_cap = cap;
	c->run_head = 0;
}

/*
 * The run of the release under way: blocks hi-1 down to lo (their keys in
 * keybuf[], their offsets in run_scratch[]) enter the ring in that order,
 * their eviction order, and one node stands for them on the LRU list, where
 * the release would have pushed them one after the other.
 */
static void run_push(struct shared *c, uint64_t lo, uint64_t hi)
{
	uint32_t e = entry_free(c), x = c->ext_max;
	uint64_t i;

	KV_CHECK(e != NIL, "no entry for a run of %llu blocks", (unsigned long long)(hi - lo));
	c->free_entry = c->next[e];
	while (c->run_n + (hi - lo) > c->run_cap)
		run_ring_grow(c);
	for (i = hi; i-- > lo;) {
		uint32_t p = (c->run_head + c->run_n++) & (c->run_cap - 1);

		c->run_key[p] = c->keybuf[i];
		if (x == 1) /* an extent of one buddy block (16-token blocks of most models): no call */
			c->run_off[p] = c->run_scratch[i];
		else
			memcpy(&c->run_off[(size_t)p * x], &c->run_scratch[i * x], x * sizeof(*c->run_off));
	}
	c->key[e] = 0;
	c->grp[e] = G_FULL | G_OWN | G_RUN;
	c->refs[e] = 0;
	c->origin[e] = hi - lo; /* blocks left */
	c->n++;
	lru_push(c, e);
}

/*
 * Takes the next block of run node e (the ring's head: e is the oldest run)
 * out, down the tiers when put; the node goes when its last block does.
 */
static void run_pop(struct shared *c, uint32_t e, int put)
{
	uint32_t p = c->run_head, k, *off = &c->run_off[(size_t)p * c->ext_max];
	uint64_t key = c->run_key[p];

	KV_CHECK(c->run_n > 0 && c->origin[e] > 0, "run node %u with %llu blocks, ring %u", e,
		 (unsigned long long)c->origin[e], c->run_n);
	if (put && c->tiers.n) /* down a tier, where nobody will look it up (tiers.h) */
		kv_tiers_put_unseen(&c->tiers, key, c->sim->now);
	for (k = 0; k < c->ext_blocks[G_FULL]; k++) {
		unsigned r = kv_pool_free(c->pool, off[k]);

		KV_CHECK(r == 0, "run block %u still has %u references", off[k], r);
	}
	block_event_key(c, key, 1, 0);
	c->run_head = (p + 1) & (c->run_cap - 1);
	c->run_n--;
	c->origin[e]--;
	c->lru_bytes -= c->entry_bytes[G_FULL];
	if (c->origin[e] == 0) {
		lru_unlink(c, e); /* weighs nothing now */
		c->next[e] = c->free_entry;
		c->free_entry = e;
		c->n--;
	}
}

/* Frees an unused entry's extent and forgets it (a run node: every block left). */
static void entry_drop(struct shared *c, uint32_t e)
{
	const uint32_t *off = entry_off(c, e);
	uint32_t k;

	if (c->grp[e] & G_RUN) {
		while (c->origin[e]) /* the last pop frees the node */
			run_pop(c, e, 0);
		return;
	}
	KV_CHECK(c->refs[e] == 0, "dropping entry %u with %u sharers", e, c->refs[e]);
	lru_unlink(c, e);
	for (k = 0; k < c->ext_blocks[grp(c, e)]; k++) {
		unsigned r = kv_pool_free(c->pool, off[k]);

		KV_CHECK(r == 0, "cached entry %u block %u still has %u references", e, off[k], r);
	}
	index_remove(c, e);
	c->next[e] = c->free_entry;
	c->free_entry = e;
	c->n--;
}

/*
 * Prefetches what evicting the LRU entry would touch (evictions come in
 * runs: a reserve evicts one entry per block it cannot place): its slot,
 * offsets and successor, and its way down the tiers.  A hint.
 */
static void prefetch_victim(const struct shared *c)
{
	uint32_t e = c->lru_head;
	uint64_t key;

	if (e == NIL)
		return;
	if (c->grp[e] & G_RUN) { /* the ring's head: read in order */
		if (c->tiers.n)
			kv_tiers_prefetch_unseen(&c->tiers, c->run_key[c->run_head]);
		return;
	}
	key = c->key[e];
	__builtin_prefetch(&c->slot[hash(key) & c->mask]);
	__builtin_prefetch(entry_off(c, e));
	if (c->next[e] != NIL)
		__builtin_prefetch(&c->prev[c->next[e]], 1);
	if (c->tiers.n)
		kv_tiers_prefetch(&c->tiers, key);
}

/* Evicts the least recently used entry; KV_ENOMEM when none is cached. */
static int evict_one(struct shared *c)
{
	if (c->lru_head == NIL)
		return KV_ENOMEM;
	if (c->grp[c->lru_head] & G_RUN) {
		run_pop(c, c->lru_head, 1);
	} else {
		if (c->tiers.n) /* down a tier instead of gone (tiers.h) */
			kv_tiers_put(&c->tiers, c->key[c->lru_head], c->sim->now);
		entry_drop(c, c->lru_head);
	}
	c->evictions++;
	prefetch_victim(c);
	return 0;
}

/*
 * Evicts k entries (KV_ENOMEM when the list empties first, the evictions
 * made kept), as k calls of evict_one, fetching ahead what the victims
 * EVICT_AHEAD later will touch while they are blocks of the oldest run:
 * its pool record and the puts' way down the tiers (kv_tiers_prefetch_ahead),
 * whose slots in a shared tier are cache misses on a fleet.  A reserve's
 * evictions come in such batches.
 */
static int evict_n(struct shared *c, uint64_t k)
{
	uint64_t j;

	for (j = 0; j < k; j++) {
		uint32_t e = c->lru_head;

		if (j + EVICT_AHEAD < k && e != NIL && (c->grp[e] & G_RUN) && c->origin[e] > EVICT_AHEAD) {
			uint32_t p = (c->run_head + EVICT_AHEAD) & (c->run_cap - 1);

			kv_pool_prefetch_block(c->pool, c->run_off[(size_t)p * c->ext_max]);
			if (c->tiers.n)
				kv_tiers_prefetch_ahead(&c->tiers, c->run_key[p], EVICT_AHEAD);
		}
		if (evict_one(c))
			return KV_ENOMEM;
	}
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

/* The entry arrays and the index, first for 64 entries (entries_grow). */
static void arrays_init(struct shared *c)
{
	c->max_cap = (uint32_t)(c->pool->n_units / KV_MIN(c->entry_units[G_FULL], c->entry_units[G_WIN]));
	c->free_entry = NIL;
	entries_grow(c);
	c->scratch = kv_xcalloc(c->max_blocks + 1, sizeof(*c->scratch));
	c->keybuf = kv_xcalloc(c->max_blocks + 1, sizeof(*c->keybuf));
	c->run_scratch = kv_xcalloc((size_t)(c->max_blocks + 1) * c->ext_max, sizeof(*c->run_scratch));
	c->inplace = c->in_place && !c->win.win_tokens && c->prefix_block_tokens == c->block_tokens &&
		     c->ext_blocks[G_FULL] == 1 && c->chunk_units == c->entry_units[G_FULL] &&
		     c->chunk_units == 1ULL << c->pool->max_order;
	if (c->inplace) {
		c->tbl_max = (uint64_t)c->max_blocks + 2;
		c->tbl = kv_xmalloc(c->tbl_max * sizeof(*c->tbl));
	}
	if (c->win.win_tokens)
		c->wscratch = kv_xcalloc(c->max_blocks + 1, sizeof(*c->wscratch));
	c->lru_head = c->lru_tail = NIL;
}

/*
 * Entry sizes by group.  Without a window (or when b does not split by
 * layer) one group, G_FULL, of extent(B * b); with one, G_FULL entries of
 * the full-attention layers (none when every layer is windowed) and G_WIN
 * entries of the windowed ones, as the own blocks (winblocks.h).  An absent
 * group copies the other's sizes, so the bounds below hold either way.
 */
static void groups_init(struct shared *c, const struct kv_model *m)
{
	uint64_t bytes[2] = { c->prefix_block_tokens * c->token_bytes, 0 }, W;
	int g;

	c->has_full = 1;
	if (kv_winblocks_init(&c->win, &c->blocks, m, c->token_bytes, c->block_tokens)) {
		uint64_t per_block = c->prefix_block_tokens / c->block_tokens;

		W = c->win.win_tokens;
		bytes[G_FULL] = per_block * c->win.full_bytes;
		bytes[G_WIN] = per_block * c->win.win_bytes;
		c->has_full = bytes[G_FULL] != 0;
		c->win_need = kv_div_ceil(W - 1, c->prefix_block_tokens);
	}
	for (g = 0; g < 2; g++) {
		c->entry_units[g] = bytes[g] ? kv_blocks_units(&c->blocks, bytes[g], 0) : 0;
		c->entry_bytes[g] = c->entry_units[g] * c->pool->unit_bytes;
		c->ext_blocks[g] = extent_blocks(c->pool, c->entry_units[g]);
	}
	for (g = 0; g < 2; g++) {
		if (!c->entry_units[g]) {
			c->entry_units[g] = c->entry_units[!g];
			c->entry_bytes[g] = c->entry_bytes[!g];
			c->ext_blocks[g] = c->ext_blocks[!g];
		}
	}
	c->ext_max = KV_MAX(c->ext_blocks[G_FULL], c->ext_blocks[G_WIN]);
}

/*
 * The tiers below the pool (tiers.h), from the tier_* options: CPU, SSD,
 * remote, each present when its capacity is nonzero; a block is one
 * prefix block, B * b bytes.  A bandwidth of 0 is the device's host link
 * times the replica's GPUs (as swaps, replica.c).  The remote tier, when
 * shared, is made by the first replica and found by the others in
 * *env->remote.  KV_EINVAL when a capacity is under one block, or with a
 * sliding window (whose blocks the tiers do not model).
 */
static int tiers_init(struct shared *c, const struct kv_cache_env *env, struct kv_diag *d)
{
	static const char *const names[KV_TIERS_MAX] = { "cache.tier_cpu_bytes", "cache.tier_ssd_bytes",
							  "cache.tier_remote_bytes" };
	uint64_t block = c->prefix_block_tokens * c->token_bytes;
	double host = env->device->host_link_Bps * env->tp * (env->pp ? env->pp : 1);
	uint32_t i;

	for (i = 0; i < KV_TIERS_MAX; i++) {
		struct kv_tier_cfg cfg = c->tier[i];
		struct kv_tier *t;

		if (!cfg.capacity_bytes)
			continue;
		if (cfg.capacity_bytes < block || c->win.win_tokens)
			return kv_diag_set(d, KV_EINVAL, "", 0, 0, names[i],
					   "bad value %llu: expected 0 or at least one prefix block of %llu bytes, with a model without sliding window",
					   (unsigned long long)cfg.capacity_bytes,
					   (unsigned long long)block);
		if (!cfg.read_Bps)
			cfg.read_Bps = host;
		if (!cfg.write_Bps)
			cfg.write_Bps = host;
		if (i == 2 && c->tier_remote_shared && env->remote && *env->remote) {
			t = *env->remote;
			KV_CHECK(kv_tier_block_bytes(t) == block, "shared tier of %llu-byte blocks, replica's %llu",
				 (unsigned long long)kv_tier_block_bytes(t), (unsigned long long)block);
		} else {
			t = kv_tier_new(&cfg, block);
			if (i == 2 && c->tier_remote_shared && env->remote)
				*env->remote = t;
		}
		kv_tiers_add(&c->tiers, t, i);
	}
	if (c->tiers.n && env->remote && c->tier_remote_shared)
		c->remote_slot = env->remote;
	return 0;
}

/* The first blocks of the system prompt's chain (sys_key), as keys_next walks them. */
static void sys_keys_init(struct shared *c)
{
	uint64_t n = KV_MIN(c->system_prompt_tokens / c->prefix_block_tokens, (uint64_t)SYS_KEYS);
	uint64_t key = SEED_SYSTEM, i;

	c->n_sys_key = (uint32_t)n;
	if (!n)
		return;
	c->sys_key = kv_xmalloc(n * sizeof(*c->sys_key));
	for (i = 0; i < n; i++) {
		key = mix(key ^ mix(i));
		c->sys_key[i] = key;
	}
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
	c->on_block = env->on_block;
	c->block_ctx = env->block_ctx;
	c->replica = env->replica;
	c->token_bytes = env->token_bytes;
	c->chunk_bytes = c->block_tokens * c->token_bytes;
	c->chunk_units = kv_blocks_units(&c->blocks, c->chunk_bytes, 0);
	groups_init(c, env->model);
	c->max_blocks = (uint32_t)(env->model->max_ctx_tokens / c->prefix_block_tokens);
	if (c->prefix_block_tokens != c->block_tokens || c->win.win_tokens)
		c->publish = PUBLISH_RELEASE; /* an entry is one own block (adopted in place) */
	arrays_init(c);
	sys_keys_init(c);
	return tiers_init(c, env, d);
}

static void shared_fini(void *priv)
{
	struct shared *c = priv;
	uint32_t i;

	for (i = 0; i < c->tiers.n; i++) {
		if (c->tiers.kind[i] == 2 && c->remote_slot && kv_tier_users(c->tiers.t[i]) == 1)
			*c->remote_slot = NULL; /* the last replica frees the shared tier */
		kv_tier_free(c->tiers.t[i]);
	}

	kv_blocks_release(&c->blocks);
	free(c->slot);
	free(c->key);
	free(c->off);
	free(c->refs);
	free(c->owner);
	free(c->origin);
	free(c->prev);
	free(c->next);
	free(c->scratch);
	free(c->grp);
	free(c->wscratch);
	free(c->keybuf);
	free(c->sys_key);
	free(c->run_key);
	free(c->run_off);
	free(c->run_scratch);
	free(c->tbl);
}

/* A block's windowed-group key. */
static inline uint64_t win_key(uint64_t key)
{
	return mix(key ^ SEED_WIN);
}

/* The cached entry for key that can take one more sharer, or NIL. */
static uint32_t usable(const struct shared *c, uint64_t key)
{
	uint32_t e = index_find(c, key);

	return e != NIL && c->refs[e] < SHARERS_MAX ? e : NIL;
}

/*
 * The longest hit of a windowed model, as vLLM V1's hybrid manager finds it
 * (vllm/v1/core/kv_cache_coordinator.py HybridKVCacheCoordinator.
 * find_longest_cache_hit): the full group's hit first, mf blocks from block
 * 0 (FullAttentionManager.find_longest_cache_hit); then, within it, the
 * windowed group's (SlidingWindowManager.find_longest_cache_hit): scanning
 * from block mf - 1 down, the first run of win_need = ceil((W - 1) / B)
 * cached blocks ending at block h - 1 gives h (the blocks before the run may
 * be gone: the window skips them); with no such run, the run starting at
 * block 0.  Returns h; keybuf[] holds the keys of blocks 0..h-1.
 */
static uint64_t window_hit(struct shared *c, struct kv_req *q, uint64_t limit)
{
	uint64_t mf = 0, run = 0, i, key;
	struct keys k;

	keys_init(&k, c, q);
	while (mf < limit && keys_next(&k, &key)) {
		if (c->has_full && usable(c, key) == NIL)
			break;
		KV_CHECK(mf <= c->max_blocks, "request %llu has over %u prefix blocks",
			 (unsigned long long)q->id, c->max_blocks);
		c->keybuf[mf++] = key;
	}
	if (c->win_need == 0)
		return mf;
	for (i = mf; i-- > 0;) {
		if (usable(c, win_key(c->keybuf[i])) == NIL) {
			run = 0;
		} else if (++run >= c->win_need) {
			return i + run;
		}
	}
	return run; /* blocks 0..run-1: shorter than the window's run */
}

/*
 * prefix_hit with a window: h blocks hit; references on their G_FULL
 * entries and on the G_WIN entries of the last min(h, win_need), the ones
 * the next token's window touches (the first reserve would drop the others:
 * vLLM fills them with its null block).
 */
static uint64_t prefix_hit_window(struct shared *c, struct kv_req *q, uint64_t limit)
{
	uint64_t h = window_hit(c, q, limit), lo = h - KV_MIN(h, c->win_need), i;

	for (i = 0; i < h; i++) {
		if (c->has_full)
			entry_ref(c, index_find(c, c->keybuf[i]));
		if (i >= lo)
			entry_ref(c, index_find(c, win_key(c->keybuf[i])));
	}
	q->cache[0] = q->cache[2] = KV_BLOCKS_EMPTY;
	q->cache[1] = h | lo << 32 | PENDING;
	q->cache[3] = 0;
	q->kv_bytes = (c->has_full ? h : 0) * c->entry_bytes[G_FULL] + (h - lo) * c->entry_bytes[G_WIN];
	q->kv_cap_tokens = h * c->prefix_block_tokens;
	return q->kv_cap_tokens;
}

/*
 * After the pool's m blocks, the prefix continues below it: from block m
 * (key, the pool's first miss) while a tier holds the block, each becomes a
 * pool entry (evicting LRU entries, which go down a tier, for room) that q
 * references, read from its tier: vLLM's KV connector (vllm/distributed/
 * kv_transfer/kv_connector/v1/base.py: the scheduler asks
 * get_num_new_matched_tokens for the tokens an external store holds beyond
 * the local prefix hit, allocates their slots, and the worker loads them
 * before (start_load_kv) or layer by layer during (wait_for_layer_load)
 * the request's first forward pass; LMCache's connector).  The reads of
 * each tier queue on its read link (kv_tiers_load); when they land and the
 * tokens are kept for the load hook.  Returns the blocks found.
 */
static uint64_t tier_hit(struct shared *c, const struct kv_req *q, struct keys *k, uint64_t key,
			 uint64_t m, uint64_t limit)
{
	struct shared_req *rs = kv_req_cache(c->sim, q);

	uint64_t n[KV_TIERS_MAX] = { 0 }, got = 0;
	kv_ns now = c->sim->now, done = now;
	uint32_t i;

	for (;;) {
		int t = kv_tiers_find(&c->tiers, key);
		uint32_t e = NIL;

		c->tier_lookup_blocks++;
		if (t < 0)
			break;
		while ((e = entry_new(c, key, G_FULL | keys_own(k, k->i - 1), UINT64_MAX)) == NIL &&
		       !evict_one(c))
			;
		if (e == NIL)
			break; /* no room in the pool: the rest is recomputed */
		c->donations--; /* a load, not a donation; origin none: not a self hit */
		rs->own_indexed |= keys_own(k, k->i - 1) != 0;
		entry_ref(c, e);
		n[t]++;
		if (m + ++got >= limit || !keys_next(k, &key))
			break;
	}
	for (i = 0; i < c->tiers.n; i++) {
		if (!n[i])
			continue;
		done = KV_MAX(done, kv_tiers_load(&c->tiers, (int)i, n[i], now));
		c->tier_hit_tokens[c->tiers.kind[i]] += n[i] * c->prefix_block_tokens;
	}
	c->load_done_ns = done;
	c->load_tokens = got * c->prefix_block_tokens;
	return got;
}

/*
 * load: the blocks the last prefix_hit found in the tiers, for the request
 * the engine then scheduled: their tokens, when they land (absolute ns),
 * and whether the load blocks the batch.
 */
static uint64_t shared_load(const void *priv, kv_ns *done_ns, int *blocking)
{
	const struct shared *c = priv;

	*done_ns = c->load_done_ns;
	*blocking = c->tier_blocking;
	return c->load_tokens;
}

/*
 * Prefetches what a lookup of q's first `limit` blocks reads: each key's
 * home slot while the keys are walked (into keybuf[]), then, those slots
 * loaded, the entries' keys, counts and offsets, so the lookup's misses
 * overlap instead of following one another (as collect_keys does for a
 * release).  A hint: changes nothing the lookup sees.
 */
static void prefetch_lookup(struct shared *c, const struct kv_req *q, uint64_t limit, int fresh)
{
	uint32_t n = 0, i, e;
	uint64_t key;
	struct keys k;

	keys_init(&k, c, q);
	if (fresh)
		limit = KV_MIN(limit, k.n_shared); /* its own keys are in no index */
	while (n < limit && n <= c->max_blocks && keys_next(&k, &key)) {
		c->keybuf[n++] = key;
		__builtin_prefetch(&c->slot[hash(key) & c->mask]);
	}
	for (i = 0; i < n; i++) {
		e = c->slot[hash(c->keybuf[i]) & c->mask].e;
		if (e == NIL)
			break; /* most likely the walk's end */
		__builtin_prefetch(&c->key[e]);
		__builtin_prefetch(&c->refs[e]);
		__builtin_prefetch(entry_off(c, e));
	}
}

static uint64_t shared_prefix_hit(void *priv, struct kv_req *q)
{
	struct shared *c = priv;
	uint64_t limit = q->prompt_tokens ? (q->prompt_tokens - 1) / c->prefix_block_tokens : 0;
	uint64_t m = 0, key;
	struct keys k;
	int fresh;

	if (c->win.win_tokens)
		return prefix_hit_window(c, q, limit);
	fresh = !((struct shared_req *)kv_req_cache(c->sim, q))->own_indexed;
	prefetch_lookup(c, q, limit, fresh);
	keys_init(&k, c, q);
	c->load_tokens = 0;
	while (m < limit && keys_next(&k, &key)) {
		/* an own key no cache has indexed is in none: no probe */
		uint32_t e = fresh && keys_own(&k, k.i - 1) ? NIL : index_find(c, key);

		assert(e != NIL || index_find(c, key) == NIL);
		if (e == NIL && c->tiers.n) {
			m += tier_hit(c, q, &k, key, m, limit);
			break;
		}
		if (e == NIL || c->refs[e] >= SHARERS_MAX)
			break;
		entry_ref(c, e);
		m++;
	}
	q->cache[0] = KV_BLOCKS_EMPTY;
	q->cache[1] = m | PENDING;
	q->cache[2] = q->cache[3] = 0;
	q->kv_bytes = m * c->entry_bytes[G_FULL];
	q->kv_cap_tokens = m * c->prefix_block_tokens;
	return q->kv_cap_tokens;
}

/*
 * prefix_keys: the keys shared_prefix_hit walks (the lookup group's: a
 * windowed-only model's are win_key()s), at most limit = (prompt - 1) / B of
 * them.  Windowed models with full-attention layers report the full group's
 * run, which bounds their hit (window_hit).
 */
static uint32_t shared_prefix_keys(const void *priv, const struct kv_req *q, uint64_t *out,
				   uint32_t max, uint64_t *block_tokens)
{
	const struct shared *c = priv;
	uint64_t limit = q->prompt_tokens ? (q->prompt_tokens - 1) / c->prefix_block_tokens : 0;
	uint64_t key;
	uint32_t n = 0;
	struct keys k;

	*block_tokens = c->prefix_block_tokens;
	keys_init(&k, c, q);
	while (n < limit && n < max && keys_next(&k, &key))
		out[n++] = lookup_group(c) == G_WIN ? win_key(key) : key;
	return n;
}

/* prefix_cached: the leading run of q's prefix_keys in this index (no references taken). */
static uint32_t shared_prefix_cached(const void *priv, const struct kv_req *q)
{
	const struct shared *c = priv;
	uint64_t limit = q->prompt_tokens ? (q->prompt_tokens - 1) / c->prefix_block_tokens : 0;
	uint64_t key;
	uint32_t n = 0;
	struct keys k;

	keys_init(&k, c, q);
	while (n < limit && keys_next(&k, &key)) {
		if (lookup_group(c) == G_WIN)
			key = win_key(key);
		if (index_find(c, key) == NIL)
			break;
		n++;
	}
	return n;
}

/* Appends one own block to *t, evicting cached entries while the pool refuses. */
static int grow_one(struct shared *c, uint64_t *t, uint64_t *held)
{
	while (kv_blocks_append(&c->blocks, t, c->chunk_bytes, 0, held))
		if (evict_one(c))
			return KV_ENOMEM;
	return 0;
}

/*
 * Of q's m hit blocks, those it had computed itself (before a preemption):
 * their entries' origin is q.  A windowed model's G_WIN-only entries may be
 * gone below the window; those count as another's.
 */
static uint64_t self_hits(const struct shared *c, const struct kv_req *q, uint64_t m)
{
	uint64_t i = 0, self = 0, key;
	struct keys k;

	keys_init(&k, c, q);
	while (i++ < m && keys_next(&k, &key)) {
		uint32_t e = index_find(c, c->has_full ? key : win_key(key));

		self += e != NIL && c->origin[e] == q->id;
	}
	return self;
}

/* Counts an admission's lookup once, at its first successful reserve. */
static void count_lookup(struct shared *c, struct kv_req *q)
{
	uint64_t m = (uint32_t)q->cache[1];

	if (m)
		c->self_hit_tokens += self_hits(c, q, m) * c->prefix_block_tokens;
	c->hit_tokens += m * c->prefix_block_tokens;
	c->lookup_tokens += q->prompt_tokens;
	if (c->win.win_tokens) /* held at the hit: m G_FULL entries, the last min(m, win_need) G_WIN ones */
		c->bytes_saved += (c->has_full ? m : 0) * c->entry_bytes[G_FULL] +
				  KV_MIN(m, c->win_need) * c->entry_bytes[G_WIN];
	else
		c->bytes_saved += m * c->entry_bytes[G_FULL];
	q->cache[1] &= ~PENDING;
}

/* Drops q's references on the G_WIN entries of blocks lo..hi-1 (the window has passed them). */
static void unref_window(struct shared *c, const struct kv_req *q, uint64_t lo, uint64_t hi)
{
	uint64_t i = 0, key;
	struct keys k;

	keys_init(&k, c, q);
	while (i < hi && keys_next(&k, &key)) {
		if (i++ >= lo) {
			uint32_t e = index_find(c, win_key(key));

			KV_CHECK(e != NIL, "request %llu lost windowed block %llu",
				 (unsigned long long)q->id, (unsigned long long)(i - 1));
			entry_unref(c, e);
		}
	}
	KV_CHECK(i == hi, "request %llu has %llu of %llu blocks", (unsigned long long)q->id,
		 (unsigned long long)i, (unsigned long long)hi);
}

/*
 * reserve with a window: q's own blocks start after its m hit blocks (base
 * = m * B) and slide as winblocks.h says; the G_WIN entries it holds,
 * blocks lo..m-1, are dropped as the window leaves them (they stay cached
 * with count 0, evictable, as vLLM's freed blocks keep their hash), and
 * kv_cap_tokens stops at the step that leaves the next one.  Growth evicts
 * cached entries LRU until the free bytes cover it, then one more while
 * the pool refuses it (all or nothing; retrying after every single
 * eviction, rejected, costs a whole growth per evicted entry).
 */
static int reserve_window(struct shared *c, struct kv_req *q, uint64_t tokens)
{
	const struct kv_winblocks *w = &c->win;
	uint64_t m = (uint32_t)q->cache[1], lo = q->cache[1] >> 32 & LO_MASK, own = q->cache[3];
	uint64_t full = own ? q->cache[0] : KV_BLOCKS_EMPTY, win = own ? q->cache[2] : KV_BLOCKS_EMPTY;
	uint64_t PB = c->prefix_block_tokens, base = m * PB, got = 0, freed = 0, cap, nf, nw, lo2;
	uint64_t need, unit = c->pool->unit_bytes;

	if (tokens <= q->kv_cap_tokens)
		return 0; /* the engine does not call below the capacity */
	nw = kv_winblocks_slide(w, base, q->kv_tokens, tokens, &cap);
	nf = w->full_bytes ? kv_div_ceil(tokens - base, c->block_tokens) : 0;
	lo2 = KV_MAX(lo, KV_MIN(m, kv_win_excess(q->kv_tokens + 1, w->win_tokens) / PB));
	if (lo2 < m) /* the next held entry leaves the window first */
		cap = KV_MAX(KV_MIN(cap, (lo2 + 1) * PB + w->win_tokens - 1), tokens);
	need = (nf - kv_winblocks_full_n(w, full)) * kv_blocks_units(&c->blocks, w->full_bytes, 0);
	if (nw > kv_winblocks_win_n(w, win))
		need += (nw - kv_winblocks_win_n(w, win)) * kv_blocks_units(&c->blocks, w->win_bytes, 0);
	if (need * unit > c->pool->free_bytes + c->lru_bytes)
		return KV_ENOMEM;
	/* evict the bytes short first, then one more per failed try (buddy fragmentation) */
	while (c->pool->free_bytes < need * unit && !evict_one(c))
		;
	while (kv_winblocks_set(w, &full, &win, nf, nw, &got, &freed))
		if (evict_one(c))
			return KV_ENOMEM;
	if (lo2 > lo)
		unref_window(c, q, lo, lo2);
	q->cache[0] = full;
	q->cache[2] = win;
	q->cache[1] = m | lo2 << 32 | (q->cache[1] & PENDING);
	q->cache[3] = own + got - freed;
	q->kv_bytes = q->kv_bytes + got - freed - (lo2 - lo) * c->entry_bytes[G_WIN];
	q->kv_cap_tokens = cap;
	if (q->cache[1] & PENDING)
		count_lookup(c, q);
	return 0;
}

/*
 * Drops q's sharing of e (held: block i < m; or published by q, whose
 * table's reference the caller has dropped) or touches e (a block q
 * donated or found cached).  A block q published but never computed
 * (unset: q leaves before the step that computes it; the oracle of the
 * random tests does) is forgotten when nobody else uses it.
 */
static void release_entry(struct shared *c, uint32_t e, int held, const struct kv_req *q,
			  int computed)
{
	if (e == NIL)
		return;
	if (held) {
		entry_unref(c, e);
	} else if (c->owner[e] == q->slot) {
		KV_CHECK(c->refs[e] > 0, "published entry %u with no sharer", e);
		c->owner[e] = NIL;
		if (--c->refs[e] == 0) {
			lru_push(c, e); /* cached, most recently used */
			if (!computed)
				entry_drop(c, e);
		}
	} else if (c->refs[e] == 0) {
		lru_unlink(c, e); /* touch: most recently used */
		lru_push(c, e);
	}
}

/*
 * Release with a window, step 1: the G_FULL entries of q's blocks 0..n-1
 * (keys in keybuf[]) into scratch[]: the m it holds, then the ones it
 * computed, found or donated; the first that does not fit ends it (later
 * blocks could not match without it).  Returns the blocks covered, f >= m.
 * With every layer windowed all of them, scratch[] NIL.
 */
static uint64_t donate_full(struct shared *c, const struct kv_req *q, uint64_t m, uint64_t n,
			    uint64_t n_shared)
{
	uint64_t i;

	for (i = 0; i < n; i++) {
		uint32_t e = NIL;

		if (c->has_full) {
			e = index_find(c, c->keybuf[i]);
			KV_CHECK(i >= m || e != NIL, "request %llu lost shared block %llu",
				 (unsigned long long)q->id, (unsigned long long)i);
			if (e == NIL && (e = entry_new(c, c->keybuf[i], G_FULL | (i >= n_shared ? G_OWN : 0),
						    q->id)) == NIL)
				break;
		}
		c->scratch[i] = e;
	}
	return i;
}

/*
 * Step 2: the G_WIN entries of blocks f-1 down to 0 into wscratch[]: the
 * ones q holds (lo <= i < m), and for the blocks it computed (i >= m) the
 * cached ones or, while room lasts, new ones; NIL below lo.  Tail first: a
 * hit at block f needs only the last ceil((W - 1) / B), so under pressure
 * those are kept.  The windowed part of a block q computed may have left
 * its window long ago: vLLM keeps such a freed block's hash until the
 * block is reused (cached until evicted); here its bytes come back at
 * release when room allows.
 */
static void donate_win(struct shared *c, const struct kv_req *q, uint64_t m, uint64_t lo,
		       uint64_t f, uint64_t n_shared)
{
	uint64_t i;
	int room = 1;

	for (i = f; i-- > 0;) {
		uint64_t wk = win_key(c->keybuf[i]);
		uint32_t e = i >= lo ? index_find(c, wk) : NIL;

		KV_CHECK(i >= m || i < lo || e != NIL, "request %llu lost windowed block %llu",
			 (unsigned long long)q->id, (unsigned long long)i);
		if (e == NIL && i >= m && room &&
		    (e = entry_new(c, wk, G_WIN | (i >= n_shared ? G_OWN : 0), q->id)) == NIL)
			room = 0;
		c->wscratch[i] = e;
	}
}

/*
 * release with a window: frees the own blocks, donates (donate_full, then
 * donate_win), drops the references.  LRU order as vLLM frees: the
 * windowed entries of the blocks the window had left first, oldest first
 * (vLLM freed them as the window passed), then deepest first, so a
 * prefix's tail is evicted before its head.
 */
static void release_window(struct shared *c, struct kv_req *q)
{
	uint64_t PB = c->prefix_block_tokens, m = (uint32_t)q->cache[1];
	uint64_t lo = q->cache[1] >> 32 & LO_MASK, n = 0, f, i, key, gone;
	uint64_t end = KV_MAX(m, KV_MIN(q->kv_tokens, q->prompt_tokens) / PB);
	struct keys k;

	if (q->cache[3]) { /* first: donations reuse the room */
		kv_blocks_free(&c->blocks, &q->cache[0]);
		kv_blocks_free(&c->blocks, &q->cache[2]);
	}
	keys_init(&k, c, q);
	while (n < end && keys_next(&k, &key)) {
		KV_CHECK(n <= c->max_blocks, "request %llu has over %u prefix blocks",
			 (unsigned long long)q->id, c->max_blocks);
		c->keybuf[n++] = key;
	}
	KV_CHECK(n >= m, "request %llu matched %llu blocks, found %llu",
		 (unsigned long long)q->id, (unsigned long long)m, (unsigned long long)n);
	f = donate_full(c, q, m, n, k.n_shared);
	donate_win(c, q, m, lo, f, k.n_shared);
	gone = KV_MIN(kv_win_excess(q->kv_tokens + 1, c->win.win_tokens) / PB, f);
	for (i = 0; i < gone; i++) {
		release_entry(c, c->wscratch[i], i < m, q, 1);
		c->wscratch[i] = NIL;
	}
	for (i = f; i-- > 0;) {
		release_entry(c, c->wscratch[i], i < m, q, 1);
		release_entry(c, c->scratch[i], i < m, q, 1);
	}
	q->cache[0] = q->cache[2] = KV_BLOCKS_EMPTY;
	q->cache[1] = q->cache[3] = 0;
	q->kv_bytes = 0;
	q->kv_cap_tokens = 0;
}

/*
 * Publishes q's complete prompt blocks from p = cache[3] (blocks examined
 * so far, at least m) up to those `tokens` cover: vLLM V1 caches a
 * block's hash when allocate_slots covers it (vllm/v1/core/block_pool.py
 * cache_full_blocks).  SGLang inserts a request's computed prefix into its
 * radix tree after each prefill step (scheduler_output_processor_mixin.py
 * process_batch_result_prefill, cache_unfinished_req: "This updates radix
 * so others can match"), one step later: kvsim's sglang finds a block a
 * step early only for a request admitted in the step that computes it
 * (no end-of-step hook of the cache model: rejected for the hot path).  Each becomes
 * the index's entry in place (entry_adopt), so a request admitted later,
 * in the same step under vLLM, finds it while q runs.  A block whose key is
 * already cached (another request computed it meanwhile) stays q's own, as
 * vLLM keeps a duplicate block.  The walk resumes where the last call
 * stopped (keys_resume), so each block's key is computed once per
 * admission: O(new blocks) per call.
 */
static void publish(struct shared *c, struct kv_req *q, uint64_t tokens)
{
	uint64_t B = c->prefix_block_tokens, m = (uint32_t)q->cache[1], i, key;
	uint64_t p = KV_MAX(q->cache[3], m);
	uint64_t full = KV_MIN(tokens, q->prompt_tokens) / B;
	struct shared_req *rs = kv_req_cache(c->sim, q);
	struct keys *k = &rs->walk;

	if (full <= p)
		return;
	keys_resume(k, c, q, p);
	i = k->i;
	while (i < full && keys_next(k, &key)) {
		if (i++ < p || index_find(c, key) != NIL)
			continue;
		if (entry_adopt(c, q, q->cache[0], i - 1 - m, key, keys_own(k, i - 1))) {
			i--;
			break;
		}
		rs->own_indexed |= keys_own(k, i - 1) != 0;
	}
	q->cache[3] = i < full && k->i < k->n ? i : full; /* keys ended: nothing more to publish */
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
	uint64_t cap = q->kv_cap_tokens, held = 0, need, n;

	if (c->win.win_tokens)
		return reserve_window(c, q, tokens);
	if (tokens <= cap)
		return 0; /* the engine does not call below the capacity */
	need = kv_div_ceil(tokens - cap, c->block_tokens) * c->chunk_units * c->pool->unit_bytes;
	if (need > c->pool->free_bytes + c->lru_bytes)
		return KV_ENOMEM;
	/*
	 * Blocks interchangeable (in place): block-by-block growth takes the f
	 * free blocks and evicts one entry per block after them, each freeing
	 * one block; the same evictions first, then the n blocks in one call
	 * (the pool fetches their records together).  When the evictions run
	 * out, as there, the ones made stay and nothing is taken.
	 */
	n = kv_div_ceil(tokens - cap, c->block_tokens);
	if (c->inplace && n > 1) {
		uint64_t f = c->pool->n_free_blocks[c->pool->max_order];
		int rc;

		if (f < n && evict_n(c, n - f))
			return KV_ENOMEM;
		rc = kv_blocks_append_n(&c->blocks, &t, c->chunk_bytes, n, &held);
		KV_CHECK(rc == 0, "a pool with %llu free blocks refused %llu",
			 (unsigned long long)c->pool->n_free_blocks[c->pool->max_order], (unsigned long long)n);
		cap += n * c->block_tokens;
	}
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
	if (c->publish != PUBLISH_RELEASE)
		publish(c, q, tokens);
	return 0;
}

/*
 * grow_units (macro-stepping, cache.h): a decode past cap reserves one own
 * block; when that block is one pool unit and free units cover it, grow_one
 * allocates it without evicting, the lookup was counted at the request's
 * first reserve, and publishing has nothing left to do (every complete
 * prompt block was examined; a decode's tokens cover the whole prompt), so
 * the reserve takes exactly one unit and changes nothing else.  0 otherwise
 * (a window's two groups, a larger block, a lookup still pending, blocks
 * left to publish): that step's reserve runs as an event.
 */
static uint64_t shared_grow_units(const void *priv, const struct kv_req *q, uint64_t cap,
				  uint64_t *cap_after)
{
	const struct shared *c = priv;
	uint64_t m = (uint32_t)q->cache[1];

	if (c->win.win_tokens || c->chunk_units != 1 || (q->cache[1] & PENDING) ||
	    cap < q->prompt_tokens)
		return 0;
	if (c->publish != PUBLISH_RELEASE &&
	    KV_MAX(q->cache[3], m) < q->prompt_tokens / c->prefix_block_tokens)
		return 0;
	*cap_after = cap + c->block_tokens;
	return 1;
}

/*
 * Re-walks q's keys: the m matched entries (present: q holds them), then the
 * blocks q computed itself, donated as new entries while memory allows.
 * Fills scratch[] with one entry per block walked; returns their number.
 */
/*
 * The walk of q's first `end` keys into keybuf[] (k left at its end, for
 * keys_own), prefetching what collect's probes read: their home slots
 * during the walk, then, those slots loaded, their entries' keys and
 * owners, so a release's cache misses overlap instead of following one
 * another (a fleet's caches outgrow the processor's); with fresh (no cache
 * has indexed q's own keys) not those of own keys past its m hit blocks,
 * which collect does not probe.  Returns the keys.
 */
static uint32_t collect_keys(struct shared *c, const struct kv_req *q, uint64_t end,
			     uint64_t m, int fresh, struct keys *k)
{
	uint64_t key, probe_end = end;
	uint32_t n = 0, i, e;

	keys_init(k, c, q);
	if (fresh) /* own keys past the hit are not probed (collect) */
		probe_end = KV_MAX(m, KV_MIN(end, k->n_shared));
	while (n < end && keys_next(k, &key)) {
		KV_CHECK(n <= c->max_blocks, "request %llu has over %u prefix blocks",
			 (unsigned long long)q->id, c->max_blocks);
		c->keybuf[n++] = key;
		if (n <= probe_end)
			__builtin_prefetch(&c->slot[hash(key) & c->mask]);
	}
	for (i = 0; i < KV_MIN((uint64_t)n, probe_end); i++) {
		e = c->slot[hash(c->keybuf[i]) & c->mask].e;
		if (e != NIL) {
			__builtin_prefetch(&c->key[e]);
			__builtin_prefetch(&c->owner[e]);
		}
	}
	return n;
}

/*
 * Re-walks q's keys: the m matched entries (present: q holds them), then the
 * blocks q computed itself, donated as new entries while memory allows
 * (with `inplace`, its table's blocks in tbl[], each taken one marked NIL).
 * Fills scratch[] with one entry per block walked; returns their number.
 */
static uint32_t collect(struct shared *c, const struct kv_req *q, uint64_t m, int inplace)
{
	uint64_t done = KV_MIN(q->kv_tokens, q->prompt_tokens) / c->prefix_block_tokens;
	uint64_t end = KV_MAX(KV_MAX(m, done), q->cache[3]);
	struct shared_req *rs = kv_req_cache(c->sim, q);
	int room = 1, fresh = !rs->own_indexed;
	uint32_t n, n_keys;
	struct keys k;

	n_keys = collect_keys(c, q, end, m, fresh, &k);
	c->run_lo = c->run_hi = RUN_NONE;
	for (n = 0; n < n_keys; n++) {
		uint64_t key = c->keybuf[n];
		int own = keys_own(&k, n);
		/* past its hit, an own key no cache has indexed is in none: no probe */
		uint32_t e = fresh && own && n >= m ? NIL : index_find(c, key);

		assert(e != NIL || index_find(c, key) == NIL);
		if (fresh && own && n >= m && q->leaving) { /* a run's block: nothing can find it */
			if (inplace && room && n < done) { /* its table's block, kept */
				assert(n - m < c->tbl_n);
				c->run_scratch[n] = c->tbl[n - m];
				c->tbl[n - m] = NIL;
				if (c->run_lo == RUN_NONE)
					c->run_lo = n;
				c->run_hi = n + 1;
				c->donations++;
				block_event_key(c, key, 1, 1);
			} else if (room && n < done) {
				if (extent_alloc(c, &c->run_scratch[n * c->ext_max], G_FULL)) {
					room = 0; /* no room: later blocks could not match without this one */
				} else {
					if (c->run_lo == RUN_NONE)
						c->run_lo = n;
					c->run_hi = n + 1;
					c->donations++;
					block_event_key(c, key, 1, 1);
				}
			}
			c->scratch[n] = NIL;
			continue;
		}
		KV_CHECK(n >= m || e != NIL, "request %llu lost shared block %u",
			 (unsigned long long)q->id, n);
		/* past a failed donation or its computed blocks, only the entries q published */
		if (e != NIL && n >= m && (!room || n >= done) && c->owner[e] != q->slot)
			e = NIL;
		else if (e == NIL && room && n < done && inplace) {
			/* its table's block, kept (an entry is free: one per pool extent) */
			assert(n - m < c->tbl_n);
			if ((e = entry_new_at(c, key, G_FULL | own, q->id, c->tbl[n - m])) == NIL)
				room = 0;
			else
				c->tbl[n - m] = NIL;
		} else if (e == NIL && room && n < done &&
			   (e = entry_new(c, key, G_FULL | own, q->id)) == NIL)
			room = 0; /* no room: later blocks could not match without this one */
		else if (e != NIL && own)
			rs->own_indexed = 1;
		c->scratch[n] = e;
	}
	KV_CHECK(n >= m, "request %llu matched %llu blocks, found %u",
		 (unsigned long long)q->id, (unsigned long long)m, n);
	return n;
}

static void shared_release(void *priv, struct kv_req *q)
{
	struct shared *c = priv;
	uint64_t m = (uint32_t)q->cache[1];
	uint64_t done = KV_MIN(q->kv_tokens, q->prompt_tokens) / c->prefix_block_tokens;
	uint32_t n, i;
	int inplace;

	if (c->win.win_tokens) {
		release_window(c, q);
		return;
	}
	/*
	 * In place (struct shared) for a fresh leaving request whose table
	 * fits tbl[]; else the table is freed first, so donations reuse the
	 * room.  (The pool's watcher hears of the blocks freed, as ever: a
	 * block kept in place was never free.)
	 */
	inplace = c->inplace && q->leaving && q->cache[2] &&
		  !((struct shared_req *)kv_req_cache(c->sim, q))->own_indexed &&
		  kv_blocks_count(q->cache[0]) <= c->tbl_max;
	if (inplace) {
		c->tbl_n = kv_blocks_hand_over(&c->blocks, &q->cache[0], c->tbl, c->tbl_max);
	} else if (q->cache[2]) {
		kv_blocks_free(&c->blocks, &q->cache[0]);
	}
	n = collect(c, q, m, inplace);
	if (inplace) { /* the table's blocks not kept go back to the pool, in table order */
		uint64_t j, k = 0;

		for (j = 0; j < c->tbl_n; j++)
			if (c->tbl[j] != NIL)
				c->tbl[k++] = c->tbl[j];
		kv_pool_free_n(c->pool, c->tbl, (uint32_t)k);
		c->kept += c->tbl_n - k;
	}
	/* Deepest first, so a prefix's head ends up the most recently used. */
	for (i = n; i-- > 0;) {
		if (i + 1 == c->run_hi)
			run_push(c, c->run_lo, c->run_hi); /* its blocks, i down to run_lo */
		release_entry(c, c->scratch[i], i < m, q, i < done);
	}
	q->cache[0] = KV_BLOCKS_EMPTY;
	q->cache[1] = q->cache[2] = q->cache[3] = 0;
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
	st->self_hit_tokens = c->self_hit_tokens;
	st->tiers = c->tiers.n ? &c->tiers : NULL;
	memcpy(st->tier_hit_tokens, c->tier_hit_tokens, sizeof(st->tier_hit_tokens));
	st->tier_lookup_blocks = c->tier_lookup_blocks;
	st->kept_blocks = c->kept;
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
	.req_size = sizeof(struct shared_req), /* the key walk publish stopped at, own blocks indexed */
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
	.prefix_keys = shared_prefix_keys,
	.prefix_cached = shared_prefix_cached,
	.load = shared_load,
	.grow_units = shared_grow_units,
};
