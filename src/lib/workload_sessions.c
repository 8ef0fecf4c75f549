/*
 * workload_sessions.c -- `workload.sessions:` into a struct kv_session_spec
 * (sim/session.h), with the defaults of kv_session_keys[] (docs/workload.md
 * "Sessions", docs/cluster.md "Multi-turn sessions" give the sources).
 */
#include "workload_sessions.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#define TRY(x)                                                                \
	do {                                                                  \
		int rc_ = (x);                                                \
		if (rc_)                                                      \
			return rc_;                                           \
	} while (0)

#define MAX_TOKENS 1e9 /* a token-count bound of any distribution's parameter */
#define MAX_THINK_NS (30ULL * 86400 * KV_NS_PER_S) /* 30 days */

/*
 * Chat: LMSYS-Chat-1M (Zheng et al., ICLR 2024, arXiv 2309.11998, Table 1:
 * 2.0 turns per conversation, 69.5 tokens per prompt, 214.5 per response);
 * think time: the median gap between a Mooncake synthetic-trace turn and the
 * next (65 s, `kvsim trace-stats`, docs/cluster.md).  Agent: vLLM's
 * multi-turn benchmark generator (benchmarks/multi_turn/generate_multi_turn.json:
 * 12-18 turns, lognormal prefix of mean 1000 up to 5000 tokens, turn inputs
 * 120-160, outputs 80-120 tokens); its tool time is an assumption (set it).
 */
const struct kv_session_key kv_session_keys[] = {
	{ "turns", { KV_DIST_GEOMETRIC, 2.0, 1, 1, 100 }, { KV_DIST_UNIFORM, 15, 1, 12, 18 },
	  "turns", "turns per session (chat: LMSYS-Chat-1M's mean 2.0; agent: vLLM multi-turn benchmark's 12-18)" },
	{ "first", { KV_DIST_LOGNORMAL, 69.5, 1, 1, 0 }, { KV_DIST_LOGNORMAL, 1000, 1, 1, 5000 },
	  "tokens", "the first turn's own prompt after the shared prefix (chat: LMSYS 69.5 per prompt; agent: vLLM benchmark's prefix, mean 1000, max 5000)" },
	{ "input", { KV_DIST_LOGNORMAL, 69.5, 1, 1, 0 }, { KV_DIST_UNIFORM, 140, 1, 120, 160 },
	  "tokens", "a later turn's new user (chat) or tool-result (agent) tokens, appended after the previous answer" },
	{ "output", { KV_DIST_LOGNORMAL, 214.5, 1, 1, 0 }, { KV_DIST_UNIFORM, 100, 1, 80, 120 },
	  "tokens", "each turn's output (chat: LMSYS 214.5 per response; agent: short tool calls, 80-120)" },
	{ "think", { KV_DIST_EXPONENTIAL, 60, 1, 0, 0 }, { KV_DIST_EXPONENTIAL, 2, 1, 0, 0 },
	  "s", "a turn's completion to the next turn's arrival (chat: user think time, the Mooncake synthetic trace's median turn gap; agent: tool time, assumed 2 s)" },
	{ NULL, { 0, 0, 0, 0, 0 }, { 0, 0, 0, 0, 0 }, NULL, NULL },
};

static const char *const dist_names[] = { "fixed", "uniform", "exponential", "lognormal",
					  "geometric", NULL };

/* A quantity of a distribution: seconds from a duration (think), else a number. */
static int read_value(struct kv_cfg_node *m, const char *key, int think, double def, double *out,
		      struct kv_diag *d)
{
	kv_ns ns;

	if (!think)
		return kv_cfg_dbl(m, key, def, 0, MAX_TOKENS, out, d);
	TRY(kv_cfg_ns(m, key, (kv_ns)llround(def * 1e9), 0, MAX_THINK_NS, &ns, d));
	*out = (double)ns * 1e-9;
	return 0;
}

/* A distribution at m's child key (absent: def). */
static int read_dist(struct kv_cfg_node *m, const char *key, int think, const struct kv_dist *def,
		     struct kv_dist *x, struct kv_diag *d)
{
	static const char *const keys[] = { "dist", "mean", "sigma", "min", "max", NULL };
	struct kv_cfg_node *n = kv_cfg_get(m, key);
	int i;

	*x = *def;
	if (!n)
		return 0;
	if (n->type == KV_CFG_SCALAR) { /* a number: that value, always */
		x->kind = KV_DIST_FIXED;
		x->min = think ? 0 : 1;
		x->max = 0;
		return read_value(m, key, think, def->mean, &x->mean, d);
	}
	TRY(kv_cfg_expect_map(n, d));
	TRY(kv_cfg_check_keys(n, keys, d));
	TRY(kv_cfg_enum(n, "dist", dist_names, (int)def->kind, &i, d));
	x->kind = (enum kv_dist_kind)i;
	TRY(read_value(n, "mean", think, def->mean, &x->mean, d));
	TRY(kv_cfg_dbl(n, "sigma", def->sigma, 0, 10, &x->sigma, d));
	TRY(read_value(n, "min", think, def->min, &x->min, d));
	TRY(read_value(n, "max", think, def->max, &x->max, d));
	if (x->max > 0 && x->max < x->min)
		return kv_cfg_error(n, d, "bad range min %g > max %g: expected min <= max (max 0: none)", x->min, x->max);
	if (x->kind == KV_DIST_UNIFORM && !(x->max > 0))
		return kv_cfg_error(n, d, "uniform: expected a max above 0 (and min <= max)");
	if ((x->kind == KV_DIST_EXPONENTIAL || x->kind == KV_DIST_GEOMETRIC) && x->mean < x->min)
		return kv_cfg_error(n, d, "bad mean %g below min %g: expected mean >= min", x->mean, x->min);
	if (x->kind == KV_DIST_LOGNORMAL && !(x->mean > 0))
		return kv_cfg_error(n, d, "lognormal: expected a mean above 0");
	return 0;
}

/* The least value a key's draws may take: turns, first, output >= 1; input, think >= 0. */
static double least(const char *key)
{
	return !strcmp(key, "input") || !strcmp(key, "think") ? 0 : 1;
}

/* A class at n: the whole `sessions:` mapping (top: hash_block_tokens beside) or an item. */
static int read_class(struct kv_cfg_node *n, struct kv_session_class *c, uint32_t i, int top,
		      struct kv_diag *d)
{
	static const char *const keys[] = { "name", "share", "kind", "turns", "first", "input",
					    "output", "think", "shared_prefix",
					    "hash_block_tokens", NULL };
	static const char *const kinds[] = { "chat", "agent", NULL };
	struct kv_dist *dst[] = { &c->turns, &c->first, &c->input, &c->output, &c->think };
	const struct kv_session_key *k;
	char def[32];
	int kind;

	TRY(kv_cfg_expect_map(n, d));
	if (!top && n->type == KV_CFG_MAP && kv_cfg_get(n, "hash_block_tokens"))
		return kv_cfg_error(kv_cfg_get(n, "hash_block_tokens"), d,
				    "inside a class: expected hash_block_tokens beside classes (one block size for every class)");
	TRY(kv_cfg_check_keys(n, keys, d));
	snprintf(def, sizeof(def), "s%u", i);
	TRY(kv_cfg_str(n, "name", def, c->name, sizeof(c->name), d));
	TRY(kv_cfg_dbl(n, "share", 1, 1e-9, 1e9, &c->share, d));
	TRY(kv_cfg_enum(n, "kind", kinds, 0, &kind, d));
	c->agent = kind;
	TRY(kv_cfg_u64(n, "shared_prefix", 0, 0, (uint64_t)MAX_TOKENS, &c->shared_prefix_tokens, d));
	for (k = kv_session_keys; k->key; k++) {
		struct kv_dist *x = dst[k - kv_session_keys];

		TRY(read_dist(n, k->key, !strcmp(k->key, "think"), kind ? &k->agent : &k->chat, x, d));
		if (x->min < least(k->key))
			x->min = least(k->key);
		if (x->kind == KV_DIST_FIXED && x->mean < least(k->key))
			return kv_cfg_error(kv_cfg_get(n, k->key), d, "bad value %g: expected at least %g %s",
					    x->mean, least(k->key), k->units);
		/* as the generator checks (sim/session.c check_dist), after min was raised to the least */
		if (x->mean < least(k->key) ||
		    ((x->kind == KV_DIST_EXPONENTIAL || x->kind == KV_DIST_GEOMETRIC) && x->mean < x->min))
			return kv_cfg_error(kv_cfg_get(n, k->key), d,
					    "bad mean %g: expected at least %g %s and at least its min (%g)",
					    x->mean, least(k->key), k->units, x->min);
	}
	if (c->turns.mean > KV_SESSION_MAX_TURNS || c->turns.max > KV_SESSION_MAX_TURNS)
		return kv_cfg_error(kv_cfg_get(n, "turns"), d, "bad value: expected at most %d turns per session",
				    KV_SESSION_MAX_TURNS);
	if (c->turns.kind != KV_DIST_FIXED && !(c->turns.max > 0))
		return kv_cfg_error(kv_cfg_get(n, "turns"), d, "a drawn turn count needs a max: expected max: N (at most %d)",
				    KV_SESSION_MAX_TURNS);
	return 0;
}

int kv__workload_sessions(struct kv_cfg_node *n, struct kv_session_spec *sp, struct kv_diag *d)
{
	struct kv_cfg_node *cl, *it;
	uint32_t i = 0;

	TRY(kv_cfg_expect_map(n, d));
	TRY(kv_cfg_u64(n, "hash_block_tokens", 512, 1, 1ULL << 20, &sp->hash_block_tokens, d));
	cl = kv_cfg_get(n, "classes");
	if (!cl) {
		sp->n_classes = 1;
		return read_class(n, &sp->cls[0], 0, 1, d);
	}
	TRY(kv_cfg_expect_seq(cl, d));
	if (cl->n_children == 0 || cl->n_children > KV_MAX_SESSION_CLASSES)
		return kv_cfg_error(cl, d, "%zu classes: expected 1 to %d", cl->n_children,
				    KV_MAX_SESSION_CLASSES);
	for (it = n->child; it; it = it->next) /* beside classes, only hash_block_tokens */
		if (it != cl && strcmp(it->key, "hash_block_tokens"))
			return kv_cfg_error(it, d, "unknown key '%s' beside classes: expected hash_block_tokens or classes (a class's keys go in its item)", it->key);
	for (it = cl->child; it; it = it->next, i++)
		TRY(read_class(it, &sp->cls[i], i, 0, d));
	sp->n_classes = i;
	return 0;
}

int kv__workload_chains(struct kv_cfg_node *n, int is_trace, struct kv_session_spec *sp,
			struct kv_diag *d)
{
	static const char *const modes[] = { "none", "prefix-chains", NULL };
	int m;

	TRY(kv_cfg_enum(n, "sessions", modes, 0, &m, d));
	sp->chains = m;
	if (m && !is_trace)
		return kv_cfg_error(kv_cfg_get(n, "sessions"), d,
				    "prefix-chains with a generated arrival: expected process: trace (a generated workload's sessions come from workload.sessions)");
	if (m && sp->n_classes)
		return kv_cfg_error(kv_cfg_get(n, "sessions"), d,
				    "prefix-chains beside workload.sessions: expected one of the two (a session workload's turns already carry their sessions)");
	return 0;
}
