/*
 * session.h -- multi-turn sessions: conversations and agent loops whose
 * next turn arrives only after the previous one completes (a closed loop
 * per session).
 *
 * A session starts at an arrival of the workload's arrival process (its
 * time, tenant and priority); it draws a class (probability share / sum),
 * a turn count N, and turn by turn:
 *
 *   prompt_0 = shared_prefix + first          output_j ~ output
 *   prompt_j = prompt_{j-1} + output_{j-1} + input_j      (j >= 1)
 *   arrival_j = finish_{j-1} + think_{j-1}                (j >= 1)
 *
 * where finish is the completion the client sees (after the front end's
 * way out).  A session ends after N turns, at a turn that did not complete
 * (rejected), or before a turn whose prompt + output would pass the served
 * context (counted in truncated).
 *
 * Prefix-block hashes (one per hash_block_tokens = B tokens, as Mooncake's
 * hash_ids): block k of a turn's prompt, when whole (k < floor(prompt/B)),
 * has an id that depends on (session, k) only -- or, inside the class's
 * shared prefix, on (class, k) only -- so a later turn's blocks over the
 * earlier turn's prompt and answer carry the earlier turn's ids; a partial
 * last block gets an id of its own (session, turn).  Ids have bit 63 set
 * (bit 62 for the shared prefix), so they never equal a trace's small ids.
 *
 * Determinism: each turn's draws (class, turns, lengths, think time) come
 * from a generator seeded from (run seed, session id, turn) alone, so a
 * session's content is independent of timing, routing and event order;
 * the arrival time is the only thing the simulation feeds back.  Memory:
 * a table of the sessions alive (between their start and their last
 * turn's end) recycled through a free list, and one hash buffer grown to
 * the longest prompt; nothing is allocated per turn past the high-water
 * mark.
 */
#ifndef KV_SESSION_H
#define KV_SESSION_H

#include "source.h"

#define KV_MAX_SESSION_CLASSES 16
#define KV_SESSION_MAX_TURNS 1000000 /* turn index fits the partial-block id's 21 bits */

/* A scalar distribution (tokens, turns or seconds); values clip to [min, max]. */
enum kv_dist_kind {
	KV_DIST_FIXED, /* mean */
	KV_DIST_UNIFORM, /* uniform on [min, max] */
	KV_DIST_EXPONENTIAL, /* min + Exp(mean - min) */
	KV_DIST_LOGNORMAL, /* mean of the distribution, sigma of the underlying normal */
	KV_DIST_GEOMETRIC, /* integers min, min+1, ... with the given mean: min - 1 + Geom(1 / (mean - min + 1)) */
};

struct kv_dist {
	enum kv_dist_kind kind; /* default fixed */
	double mean; /* fixed: the value; others: the mean (units of the quantity) */
	double sigma; /* lognormal: sigma of log, >= 0, default 1 */
	double min, max; /* clip bounds (uniform: the range); max 0 = none */
};

/* One kind of session. */
struct kv_session_class {
	char name[32]; /* label, default "s<i>" */
	double share; /* share of sessions, > 0 (normalised over classes), default 1 */
	int agent; /* 1: an agent loop (think is tool time; other defaults), default 0 */
	struct kv_dist turns; /* turns per session, >= 1 */
	struct kv_dist first; /* first turn's own prompt tokens (after the shared prefix), >= 1 */
	struct kv_dist input; /* a later turn's new user or tool tokens, >= 0 */
	struct kv_dist output; /* each turn's output tokens, >= 1 */
	struct kv_dist think; /* completion -> next arrival, seconds, >= 0 */
	uint64_t shared_prefix_tokens; /* tokens every session of the class starts with (system prompt), default 0 */
};

struct kv_session_spec {
	uint32_t n_classes; /* 0: no sessions generated (every arrival is a lone request) */
	int chains; /* 1: a trace's requests form sessions by prefix chains (reuse.h), no generation; default 0 */
	uint64_t hash_block_tokens; /* tokens one hash id covers, default 512 (Mooncake; match cache.hash_block_tokens) */
	struct kv_session_class cls[KV_MAX_SESSION_CLASSES];
};

/* One session turn as the generator gives it. */
struct kv_turn {
	uint64_t prompt_tokens, output_tokens; /* tokens */
	uint32_t n_hashes; /* ceil(prompt / B) */
	const uint64_t *hashes; /* valid until the next call on the same kv_sessions */
};

struct kv_sessions;

/*
 * Checks spec and builds the generator; max_ctx_tokens bounds a turn's
 * prompt + output (0: none).  Returns 0 and *out, or KV_EINVAL with d
 * naming the field (workload.sessions[i].FIELD).
 */
int kv_sessions_open(const struct kv_session_spec *spec, uint64_t seed, uint64_t max_ctx_tokens,
		     struct kv_sessions **out, struct kv_diag *d);

void kv_sessions_close(struct kv_sessions *ss); /* NULL: no-op */

/*
 * Starts a session (the next session id) for an arrival of tenant and
 * priority (kept for its later turns) and gives its first turn in *t.
 * Returns the session's slot in the table (valid until the session ends).
 */
uint32_t kv_sessions_start(struct kv_sessions *ss, uint32_t tenant, int32_t priority,
			   struct kv_turn *t);

/* The tenant and priority session `slot` started with. */
void kv_sessions_origin(const struct kv_sessions *ss, uint32_t slot, uint32_t *tenant,
			int32_t *priority);

/*
 * The current turn of session `slot` ended at t_ns (completed or not).
 * Returns 1 with *next_ns (t_ns + think) when another turn follows, 0 when
 * the session is over (its slot is freed).
 */
int kv_sessions_ended(struct kv_sessions *ss, uint32_t slot, int completed, kv_ns t_ns,
		      kv_ns *next_ns);

/* Session `slot` (after kv_sessions_ended returned 1): its next turn in *t. */
void kv_sessions_turn(struct kv_sessions *ss, uint32_t slot, struct kv_turn *t);

/* Session slot's id (0, 1, 2, ... in start order), its turn index (0 first), class. */
uint64_t kv_sessions_id(const struct kv_sessions *ss, uint32_t slot);
uint32_t kv_sessions_turn_index(const struct kv_sessions *ss, uint32_t slot);
uint32_t kv_sessions_class(const struct kv_sessions *ss, uint32_t slot);

/* The replica that served the session's first turn (UINT32_MAX: none yet); set once. */
uint32_t kv_sessions_home(const struct kv_sessions *ss, uint32_t slot);
void kv_sessions_set_home(struct kv_sessions *ss, uint32_t slot, uint32_t replica);

/* Statistics: sessions started, sessions now between turns (think time), ended early at the context. */
struct kv_sessions_stats {
	uint64_t started; /* sessions started */
	uint64_t thinking; /* sessions whose next turn is due (between turns) */
	uint64_t truncated; /* sessions ended because the next turn would pass the context */
	uint64_t turns; /* turns handed out */
};
void kv_sessions_stats(const struct kv_sessions *ss, struct kv_sessions_stats *st);

/* The name of a distribution kind ("fixed", ...). */
const char *kv_dist_name(enum kv_dist_kind k);

#endif /* KV_SESSION_H */
