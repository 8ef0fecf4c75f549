/*
 * workload_sessions.h -- `workload.sessions:` (multi-turn sessions,
 * sim/session.h) from YAML, and the table of its keys with their defaults
 * and sources, which the reader applies and `kvsim list sessions` prints.
 */
#ifndef KV_WORKLOAD_SESSIONS_H
#define KV_WORKLOAD_SESSIONS_H

#include "cfg.h"

#include "../../sim/session.h"

/* One key of a session class: its default per kind (chat, agent), units and meaning. */
struct kv_session_key {
	const char *key; /* YAML key */
	struct kv_dist chat, agent; /* defaults (think: seconds) */
	const char *units; /* tokens, turns, s */
	const char *help; /* meaning and the default's source */
};

/* The distributed keys (turns, first, input, output, think), NULL-key terminated. */
extern const struct kv_session_key kv_session_keys[];

/*
 * Reads mapping n (`workload.sessions`) into *sp.  n is one class (its keys
 * beside `hash_block_tokens`) or {hash_block_tokens, classes: [class, ...]}.
 * A distribution is a number (fixed; think: a duration such as 30s) or a
 * mapping {dist, mean, sigma, min, max}.  Returns 0, or KV_EINVAL/KV_ERANGE
 * with d naming the file, line, field, value and what was expected.
 */
int kv__workload_sessions(struct kv_cfg_node *n, struct kv_session_spec *sp, struct kv_diag *d);

/*
 * Reads `sessions:` of the arrival mapping n (none, the default, or
 * prefix-chains: a replayed trace's requests form sessions by their prefix
 * chains) into sp->chains; prefix-chains needs a trace arrival (is_trace)
 * and no workload.sessions.  0 or KV_EINVAL with d filled.
 */
int kv__workload_chains(struct kv_cfg_node *n, int is_trace, struct kv_session_spec *sp,
			struct kv_diag *d);

#endif /* KV_WORKLOAD_SESSIONS_H */
