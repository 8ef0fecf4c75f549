/*
 * cache.h -- the KV-cache model interface.
 *
 * A cache model decides how a request's KV cache occupies its replica's
 * memory pool: how many bytes a token takes, when blocks are allocated and
 * freed, how many bytes attention reads.  Each replica has one instance
 * (private state of .priv_size bytes, zeroed, options filled from YAML by the
 * engine before .init).
 *
 * The engine guarantees, hook by hook:
 *   init     called once per replica before any request; env->pool is
 *            initialised and empty.  Validates options (fill d, return
 *            KV_EINVAL: the run stops with exit status 2).
 *   reserve  called before a request runs an iteration, with the number of
 *            tokens its KV must hold once the iteration ends (monotone
 *            non-decreasing between two release calls).  Must make
 *            q->kv_bytes equal the bytes the request now holds in the pool and
 *            return 0, or return KV_ENOMEM leaving the request's holdings as
 *            they were before the call (no partial growth).  It must also
 *            set q->kv_cap_tokens to the tokens the holding fits: the engine
 *            does not call reserve while tokens <= kv_cap_tokens (the hot
 *            path of a decode step), so a model whose cost depends on every
 *            call sets it to the tokens just reserved.
 *   release  called when a request finishes, is rejected, or is preempted by
 *            recompute: free everything it holds; set q->kv_bytes and
 *            q->kv_cap_tokens to 0.  q->leaving is 1 when the request will
 *            never be looked up or admitted on this replica again (it ended,
 *            or a prefill replica handed its KV to a decode replica), so a
 *            model may forget what only this request could find.
 *   bytes_per_token  beta: the bytes one cached token occupies under this
 *            model (for the cost model and the "used" memory metric).
 *   read_bytes (optional) KV bytes attention reads for ctx_tokens tokens of
 *            context; NULL means ctx_tokens * bytes_per_token.
 *   dequant_bytes (optional) stored KV bytes that must be dequantised to
 *            read ctx_tokens of context (added to the perf model's compute);
 *            NULL means none.
 *   prefix_hit (optional) called when a request holding nothing is about to
 *            be scheduled for its first prefill chunk: returns how many of
 *            its first prefill_target - 1 tokens are already cached (taking
 *            whatever references that needs, and counting them in
 *            q->kv_bytes and q->kv_cap_tokens); the engine skips their
 *            prefill.  If the request then cannot be scheduled, the engine
 *            calls release.  NULL means no prefix is ever cached.
 *   extra_prefill_tokens (optional) called when a request is scheduled for
 *            a decode step: tokens the model must recompute this step (for
 *            context it dropped); the engine adds them to the iteration's
 *            prefill work.  NULL means none.
 *   flush    (optional) called once at the end, after every request ended
 *            and before the leak check: free what the model keeps beyond
 *            requests (cached prefixes).  NULL means it keeps nothing.
 *   stats    (optional) fills a kv_cache_stats for the summary.
 *   offload  (optional) how a preempted request's KV leaves the device:
 *            KV_OFFLOAD_NONE (dropped and recomputed later, the default when
 *            NULL), KV_OFFLOAD_SERIAL (copied to host memory over the
 *            device's host link and back when it runs again, the copies
 *            adding to the iteration) or KV_OFFLOAD_OVERLAP (the copies run on
 *            a second stream, overlapped with compute).
 *   units    (optional) lists the pool units q holds, in token order, into
 *            out (at most max; returns the count, or UINT64_MAX when more):
 *            the page table an execution backend uses, whose KV pages are
 *            pool units (gpu/exec.h).  NULL: the model cannot run on a
 *            backend.
 *   evictable_bytes (optional) pool bytes the model holds for no request
 *            and frees on demand (cached prefixes it evicts LRU): what an
 *            engine may count as free when it admits (SGLang's
 *            evictable_size).  NULL means none.
 *   grow_units (optional) for macro-stepping (macro.h): q's holding fits
 *            `cap` tokens and a decode needs reserve(cap + 1).  Returns the
 *            pool units that reserve would allocate when each is a block of
 *            exactly one unit (so it succeeds exactly when that many units
 *            are free), storing the tokens the holding then fits in
 *            *cap_after; returns 0 when it cannot promise that (the engine
 *            then runs that step's reserve as an event).  Pure.
 *   no_extra (optional) for macro-stepping: whether extra_prefill_tokens
 *            returns 0 and changes nothing for every decode step of this
 *            instance (its options make it a no-op), so that a run of decode
 *            steps may skip the calls.  NULL: only a NULL
 *            extra_prefill_tokens is.  Pure.
 *   prefix_keys (optional) the keys of q's prefix blocks as prefix_hit
 *            would look them up, in order (at most max into out; returns
 *            the count), and the tokens one block covers in *block_tokens:
 *            what a router walks against the cluster's block index.  Pure.
 *            NULL: the model caches no prefix a router could find.
 *   prefix_cached (optional) the leading blocks of q's prefix_keys this
 *            instance holds now (a walk of its own index, no references
 *            taken): the brute-force twin of the cluster's block index,
 *            for its checks.  Pure.
 *   load     (optional) after prefix_hit, when the engine has scheduled that
 *            request: the tokens of its hit that come from below the pool
 *            (tiers.h), when they land in *done_ns (absolute ns) and
 *            whether the load blocks the batch (*blocking) or streams
 *            layer by layer; 0 tokens: nothing loads.  Pure.  NULL: none.
 *   fini     called once at the end; every request has been released.
 *
 * KV events: a model with prefix_keys tells env->on_block (when not NULL)
 * each key of its lookup group that enters its index (held 1) or leaves it
 * (held 0), with env->replica, at the moment it does: the router's index
 * of which replica caches which block (NVIDIA Dynamo's KV events) stays
 * equal to the union of the instances' indexes.
 * KV_BLOCK_OWN is or'ed into held for a key no other request can match
 * (keyed by its request's id: cache_shared.c request_blocks).
 *
 * Hooks must not allocate per call (use the pool and the request's cache[]
 * words), must not touch other requests, and must not change scheduling
 * state.
 */
#ifndef KV_CACHE_H
#define KV_CACHE_H

#include "plugin.h"
#include "pool.h"
#include "profile.h"

struct kv_req;
struct kv_sim;
struct kv_tier;
struct kv_tiers;

#define KV_BLOCK_OWN 2 /* on_block's held: the key is its request's own (above) */

/* What a cache model instance sees of its replica. */
struct kv_cache_env {
	struct kv_pool *pool; /* the replica's memory pool */
	const struct kv_model *model; /* the served model */
	const struct kv_device *device; /* the replica's device */
	uint32_t tp; /* tensor-parallel degree (KV is split over tp GPUs) */
	uint64_t token_bytes; /* fp16 KV bytes per token on this replica (all GPUs) */
	const struct kv_sim *sim; /* read-only: for kv_hash_iter_init */
	uint32_t replica; /* this instance's replica index (for on_block) */
	/* KV events (above): NULL: nobody listens */
	void (*on_block)(void *ctx, uint32_t replica, uint64_t key, int held);
	void *block_ctx; /* passed back to on_block */
	uint32_t pp; /* pipeline stages (0 or 1: none) */
	struct kv_tier **remote; /* the run's shared remote tier (tiers.h), NULL until made */
};

enum kv_offload { KV_OFFLOAD_NONE, KV_OFFLOAD_SERIAL, KV_OFFLOAD_OVERLAP };

/* What a cache model reports beyond memory (summary.csv). */
struct kv_cache_stats {
	double hit_rate; /* model-defined: prefix tokens found / looked up, or attention mass kept */
	uint64_t hit_tokens; /* tokens served from cache (prefix sharing) */
	uint64_t self_hit_tokens; /* of hit_tokens, in blocks the request had computed itself (a preempted request resuming) */
	uint64_t lookup_tokens; /* tokens looked up */
	uint64_t bytes_saved; /* KV bytes not stored thanks to the model, summed over admissions */
	uint64_t recompute_tokens; /* tokens recomputed for dropped context */
	uint64_t evictions; /* cached entries evicted to make room */
	const struct kv_tiers *tiers; /* the tiers below the pool (tiers.h), NULL when none */
	uint64_t tier_hit_tokens[3]; /* tokens loaded from the CPU, SSD, remote tier */
	uint64_t tier_lookup_blocks; /* blocks looked up below the pool */
	uint64_t kept_blocks; /* blocks a release donated where they lay, not freed and taken again (shared: in_place); in no output */
};

struct kv_cache_ops {
	KV_PLUGIN_BASE; /* name ("full", ...), desc (the memory equation), priv_size, req_size, options */
	int (*init)(void *priv, const struct kv_cache_env *env, struct kv_diag *d);
	void (*fini)(void *priv);
	int (*reserve)(void *priv, struct kv_req *q, uint64_t tokens);
	void (*release)(void *priv, struct kv_req *q);
	double (*bytes_per_token)(const void *priv);
	uint64_t (*read_bytes)(const void *priv, uint64_t ctx_tokens); /* optional */
	uint64_t (*dequant_bytes)(const void *priv, uint64_t ctx_tokens); /* optional */
	uint64_t (*prefix_hit)(void *priv, struct kv_req *q); /* optional */
	uint64_t (*extra_prefill_tokens)(void *priv, const struct kv_req *q); /* optional */
	void (*flush)(void *priv); /* optional */
	void (*stats)(const void *priv, struct kv_cache_stats *st); /* optional */
	enum kv_offload (*offload)(const void *priv); /* optional */
	uint64_t (*units)(const void *priv, const struct kv_req *q, uint32_t *out,
			  uint64_t max); /* optional */
	uint64_t (*evictable_bytes)(const void *priv); /* optional */
	uint64_t (*grow_units)(const void *priv, const struct kv_req *q, uint64_t cap,
			       uint64_t *cap_after); /* optional */
	int (*no_extra)(const void *priv); /* optional */
	uint32_t (*prefix_keys)(const void *priv, const struct kv_req *q, uint64_t *out,
				uint32_t max, uint64_t *block_tokens); /* optional */
	uint32_t (*prefix_cached)(const void *priv, const struct kv_req *q); /* optional */
	uint64_t (*load)(const void *priv, kv_ns *done_ns, int *blocking); /* optional */
};

/* Finds a cache model by name, or NULL. */
const struct kv_cache_ops *kv_cache_find(const char *name);

#endif /* KV_CACHE_H */
