/*
 * session.c -- the multi-turn session generator (session.h): a table of the
 * sessions alive, each turn's draws from a generator seeded by (seed,
 * session, turn), and the prefix-block ids that make a turn's prompt a
 * cacheable extension of the previous turn's.
 *
 * Distributions (struct kv_dist): lognormal with mean m and sigma s draws
 * exp(N(mu, s^2)) with mu = ln m - s^2 / 2, so E[X] = m (as source.c's
 * lengths); geometric on {min, min+1, ...} with mean m is min - 1 + G,
 * G ~ Geometric(p) on {1, 2, ...}, p = 1 / (m - min + 1), so E = m.
 * Every draw is clipped to [min, max] (max 0: no upper clip).
 */
#include "session.h"

#include <gsl/gsl_randist.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define ID_SESSION (1ULL << 63) /* a session's own block */
#define ID_SHARED (1ULL << 62) /* a class's shared-prefix block */
#define ID_PARTIAL (1ULL << 21) /* a turn's partial last block (then bits 0-20: the turn) */
#define ID_SID_SHIFT 22 /* bits 22-62: the session id; bits 0-20: the block index */
#define ID_SID_MAX (1ULL << 41) /* session ids fit 41 bits */
#define NIL UINT32_MAX

/* A session alive: between its start and its last turn's end. */
struct sess {
	uint64_t id; /* 0, 1, 2, ... in start order */
	uint64_t prompt_tokens; /* current turn's prompt, tokens */
	uint64_t output_tokens; /* current turn's output, tokens */
	double think_s; /* after the current turn, seconds */
	uint32_t turn; /* current turn, 0 first */
	uint32_t n_turns; /* turns drawn for the session, >= 1 */
	uint32_t cls; /* class index */
	uint32_t home; /* replica of the first turn, NIL before it is routed */
	uint32_t next_free; /* free list link, NIL at the end */
	uint32_t tenant; /* the starting arrival's tenant */
	int32_t priority; /* the starting arrival's priority */
};

struct kv_sessions {
	struct kv_session_spec spec; /* private copy */
	uint64_t seed; /* the run's seed */
	uint64_t max_ctx_tokens; /* a turn's prompt + output may not pass it; 0: none */
	double cum_share[KV_MAX_SESSION_CLASSES]; /* running sum of class shares */
	gsl_rng *rng; /* reseeded per (session, turn) */
	struct sess *tab; /* sessions alive, by slot */
	uint32_t n_tab; /* slots allocated */
	uint32_t free_slot; /* free list head, NIL */
	uint64_t *hashes; /* the current turn's ids */
	uint32_t n_hashes_cap; /* capacity of hashes */
	struct kv_sessions_stats st;
};

const char *kv_dist_name(enum kv_dist_kind k)
{
	static const char *const names[] = { "fixed", "uniform", "exponential", "lognormal",
					     "geometric" };
	return (unsigned)k < sizeof(names) / sizeof(names[0]) ? names[k] : "unknown";
}

/* ---- checking ------------------------------------------------------------ */

static int dist_error(struct kv_diag *d, uint32_t i, const char *key, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

/* Fills d for workload.sessions[i].key.  Returns KV_EINVAL. */
static int dist_error(struct kv_diag *d, uint32_t i, const char *key, const char *fmt, ...)
{
	char field[96], msg[256];
	va_list ap;

	snprintf(field, sizeof(field), "workload.sessions[%u].%s", i, key);
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	return kv_diag_set(d, KV_EINVAL, NULL, 0, 0, field, "%s", msg);
}

/* x is a valid distribution whose draws stay >= lo.  0 or KV_EINVAL. */
static int check_dist(const struct kv_dist *x, uint32_t i, const char *key, double lo,
		      struct kv_diag *d)
{
	if ((unsigned)x->kind > KV_DIST_GEOMETRIC)
		return dist_error(d, i, key, "bad kind %d: expected fixed, uniform, exponential, lognormal or geometric", (int)x->kind);
	if (!isfinite(x->mean) || x->mean < lo)
		return dist_error(d, i, key, "bad mean %g: expected a finite value >= %g", x->mean, lo);
	if (!isfinite(x->min) || x->min < lo || !isfinite(x->max) || x->max < 0)
		return dist_error(d, i, key, "bad bounds [%g, %g]: expected min >= %g and max >= 0 (0: none)", x->min, x->max, lo);
	if (x->max > 0 && x->max < x->min)
		return dist_error(d, i, key, "bad bounds [%g, %g]: expected min <= max (max 0: none)", x->min, x->max);
	if (x->kind == KV_DIST_LOGNORMAL && (!isfinite(x->sigma) || x->sigma < 0 || x->mean <= 0))
		return dist_error(d, i, key, "bad lognormal (mean %g, sigma %g): expected mean > 0 and sigma >= 0", x->mean, x->sigma);
	if ((x->kind == KV_DIST_EXPONENTIAL || x->kind == KV_DIST_GEOMETRIC) && x->mean < x->min)
		return dist_error(d, i, key, "bad mean %g: expected mean >= min (%g)", x->mean, x->min);
	if (x->kind == KV_DIST_UNIFORM && !(x->max > 0))
		return dist_error(d, i, key, "bad uniform [%g, %g]: expected max > 0 and min <= max", x->min, x->max);
	return 0;
}

static int check_class(const struct kv_session_class *c, uint32_t i, struct kv_diag *d)
{
	int rc;

	if (!(isfinite(c->share) && c->share > 0))
		return dist_error(d, i, "share", "bad value %g: expected > 0", c->share);
	if ((rc = check_dist(&c->turns, i, "turns", 1, d)) || (rc = check_dist(&c->first, i, "first", 1, d)) ||
	    (rc = check_dist(&c->input, i, "input", 0, d)) || (rc = check_dist(&c->output, i, "output", 1, d)) ||
	    (rc = check_dist(&c->think, i, "think", 0, d)))
		return rc;
	if (c->turns.max > KV_SESSION_MAX_TURNS || c->turns.mean > KV_SESSION_MAX_TURNS)
		return dist_error(d, i, "turns", "bad value %g: expected at most %d turns", KV_MAX(c->turns.max, c->turns.mean), KV_SESSION_MAX_TURNS);
	if (!c->turns.max && c->turns.kind != KV_DIST_FIXED)
		return dist_error(d, i, "turns.max", "missing: a drawn turn count needs a max (at most %d)", KV_SESSION_MAX_TURNS);
	return 0;
}

int kv_sessions_open(const struct kv_session_spec *spec, uint64_t seed, uint64_t max_ctx_tokens,
		     struct kv_sessions **out, struct kv_diag *d)
{
	struct kv_sessions *ss;
	double sum = 0;
	uint32_t i;
	int rc;

	*out = NULL;
	if (spec->n_classes < 1 || spec->n_classes > KV_MAX_SESSION_CLASSES)
		return kv_diag_set(d, KV_EINVAL, NULL, 0, 0, "workload.sessions",
				   "%u classes: expected 1 to %d", spec->n_classes, KV_MAX_SESSION_CLASSES);
	if (spec->hash_block_tokens < 1)
		return kv_diag_set(d, KV_EINVAL, NULL, 0, 0, "workload.sessions.hash_block_tokens",
				   "bad value 0: expected >= 1 token");
	for (i = 0; i < spec->n_classes; i++)
		if ((rc = check_class(&spec->cls[i], i, d)))
			return rc;
	ss = kv_xcalloc(1, sizeof(*ss));
	ss->spec = *spec;
	ss->seed = seed;
	ss->max_ctx_tokens = max_ctx_tokens;
	for (i = 0; i < spec->n_classes; i++)
		ss->cum_share[i] = sum += spec->cls[i].share;
	ss->rng = gsl_rng_alloc(gsl_rng_taus2);
	if (!ss->rng)
		kv_oom(0);
	ss->free_slot = NIL;
	*out = ss;
	return 0;
}

void kv_sessions_close(struct kv_sessions *ss)
{
	if (!ss)
		return;
	if (ss->rng)
		gsl_rng_free(ss->rng);
	free(ss->tab);
	free(ss->hashes);
	free(ss);
}

/* ---- drawing --------------------------------------------------------------- */

/* splitmix64's finaliser: a 64-bit mix. */
static uint64_t mix64(uint64_t x)
{
	x += 0x9e3779b97f4a7c15ULL;
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
	return x ^ (x >> 31);
}

/* Seeds the generator for (session id, turn): the turn's own stream. */
static void reseed(struct kv_sessions *ss, uint64_t sid, uint32_t turn)
{
	uint64_t h = mix64(mix64(ss->seed ^ 0x5e55101ULL) ^ sid);

	h = mix64(h ^ ((uint64_t)turn << 1));
	gsl_rng_set(ss->rng, (unsigned long)((h ^ (h >> 32)) & 0xffffffffUL) | 1UL);
}

static double clip(double v, const struct kv_dist *x)
{
	if (v < x->min)
		v = x->min;
	if (x->max > 0 && v > x->max)
		v = x->max;
	return v;
}

/* One draw of x (one or no use of the generator, by kind). */
static double draw(struct kv_sessions *ss, const struct kv_dist *x)
{
	switch (x->kind) {
	case KV_DIST_FIXED:
		return clip(x->mean, x);
	case KV_DIST_UNIFORM:
		return x->min + gsl_rng_uniform(ss->rng) * (x->max - x->min);
	case KV_DIST_EXPONENTIAL:
		return clip(x->min + (x->mean > x->min ? gsl_ran_exponential(ss->rng, x->mean - x->min) : 0), x);
	case KV_DIST_LOGNORMAL:
		return clip(gsl_ran_lognormal(ss->rng, log(x->mean) - x->sigma * x->sigma / 2, x->sigma), x);
	case KV_DIST_GEOMETRIC:
		return clip(x->min - 1 + gsl_ran_geometric(ss->rng, 1.0 / (x->mean - x->min + 1)), x);
	}
	KV_CHECK(0, "distribution kind %d passed the check", (int)x->kind);
}

/* A token or turn count: the draw rounded to the nearest integer, at least lo. */
static uint64_t draw_count(struct kv_sessions *ss, const struct kv_dist *x, uint64_t lo)
{
	double v = draw(ss, x);
	uint64_t n = v < 9e15 ? (uint64_t)llround(v) : (uint64_t)9e15;

	return n < lo ? lo : n;
}

static uint32_t draw_class(struct kv_sessions *ss)
{
	uint32_t n = ss->spec.n_classes, i;
	double u;

	if (n == 1)
		return 0;
	u = gsl_rng_uniform(ss->rng) * ss->cum_share[n - 1];
	for (i = 0; i + 1 < n; i++)
		if (u < ss->cum_share[i])
			return i;
	return n - 1;
}

/* ---- turns and their prefix-block ids ------------------------------------ */

/* Fills t from session x's current turn: lengths and block ids. */
static void give_turn(struct kv_sessions *ss, const struct sess *x, struct kv_turn *t)
{
	uint64_t B = ss->spec.hash_block_tokens, P = x->prompt_tokens;
	uint64_t shared = ss->spec.cls[x->cls].shared_prefix_tokens / B; /* whole shared blocks */
	uint64_t full = P / B, n = (P + B - 1) / B, k;

	KV_CHECK(x->id < ID_SID_MAX && full < ID_PARTIAL, "session %llu: %llu blocks beyond the ids' range",
		 (unsigned long long)x->id, (unsigned long long)full);
	if (n > ss->n_hashes_cap) {
		ss->n_hashes_cap = (uint32_t)KV_MAX(n, 2 * (uint64_t)ss->n_hashes_cap);
		ss->hashes = kv_xrealloc(ss->hashes, ss->n_hashes_cap * sizeof(*ss->hashes));
	}
	for (k = 0; k < full; k++)
		ss->hashes[k] = k < shared ? ID_SHARED | ((uint64_t)x->cls << 40) | k :
					     ID_SESSION | (x->id << ID_SID_SHIFT) | k;
	if (n > full) /* the partial last block: this turn's own */
		ss->hashes[full] = ID_SESSION | (x->id << ID_SID_SHIFT) | ID_PARTIAL | x->turn;
	t->prompt_tokens = P;
	t->output_tokens = x->output_tokens;
	t->n_hashes = (uint32_t)n;
	t->hashes = ss->hashes;
	ss->st.turns++;
}

static uint32_t slot_get(struct kv_sessions *ss)
{
	uint32_t i, old = ss->n_tab;

	if (ss->free_slot == NIL) {
		ss->n_tab = old ? 2 * old : 64;
		ss->tab = kv_xrealloc(ss->tab, (size_t)ss->n_tab * sizeof(*ss->tab));
		for (i = ss->n_tab; i-- > old;) {
			ss->tab[i].next_free = ss->free_slot;
			ss->free_slot = i;
		}
	}
	i = ss->free_slot;
	ss->free_slot = ss->tab[i].next_free;
	return i;
}

uint32_t kv_sessions_start(struct kv_sessions *ss, uint32_t tenant, int32_t priority,
			   struct kv_turn *t)
{
	uint32_t i = slot_get(ss);
	struct sess *x = &ss->tab[i];
	const struct kv_session_class *c;

	memset(x, 0, sizeof(*x));
	x->id = ss->st.started++;
	x->home = NIL;
	x->next_free = NIL;
	x->tenant = tenant;
	x->priority = priority;
	reseed(ss, x->id, 0);
	x->cls = draw_class(ss);
	c = &ss->spec.cls[x->cls];
	x->n_turns = (uint32_t)KV_MIN(draw_count(ss, &c->turns, 1), KV_SESSION_MAX_TURNS);
	x->prompt_tokens = c->shared_prefix_tokens + draw_count(ss, &c->first, 1);
	x->output_tokens = draw_count(ss, &c->output, 1);
	x->think_s = draw(ss, &c->think);
	give_turn(ss, x, t);
	return i;
}

/* Draws turn x->turn + 1 into x; 0 when it would pass the context. */
static int next_turn(struct kv_sessions *ss, struct sess *x)
{
	const struct kv_session_class *c = &ss->spec.cls[x->cls];
	uint64_t ctx = x->prompt_tokens + x->output_tokens, in, out;

	reseed(ss, x->id, x->turn + 1);
	in = draw_count(ss, &c->input, 0);
	out = draw_count(ss, &c->output, 1);
	if (ss->max_ctx_tokens && (ctx + in > ss->max_ctx_tokens || out > ss->max_ctx_tokens - ctx - in))
		return 0;
	x->turn++;
	x->prompt_tokens = ctx + in;
	x->output_tokens = out;
	x->think_s = draw(ss, &c->think);
	return 1;
}

int kv_sessions_ended(struct kv_sessions *ss, uint32_t slot, int completed, kv_ns t_ns,
		      kv_ns *next_ns)
{
	struct sess *x = &ss->tab[slot];
	double think_ns = x->think_s * 1e9;

	if (completed && x->turn + 1 < x->n_turns) {
		if (next_turn(ss, x)) {
			/* the previous turn's think time: drawn with it */
			*next_ns = t_ns + (think_ns < 9e18 ? (kv_ns)llround(think_ns) : (kv_ns)9e18);
			ss->st.thinking++;
			return 1;
		}
		ss->st.truncated++;
	}
	x->next_free = ss->free_slot;
	ss->free_slot = slot;
	return 0;
}

void kv_sessions_turn(struct kv_sessions *ss, uint32_t slot, struct kv_turn *t)
{
	KV_CHECK(ss->st.thinking > 0, "session slot %u: a turn with no session waiting", slot);
	ss->st.thinking--;
	give_turn(ss, &ss->tab[slot], t);
}

void kv_sessions_origin(const struct kv_sessions *ss, uint32_t slot, uint32_t *tenant,
			int32_t *priority)
{
	*tenant = ss->tab[slot].tenant;
	*priority = ss->tab[slot].priority;
}

uint64_t kv_sessions_id(const struct kv_sessions *ss, uint32_t slot)
{
	return ss->tab[slot].id;
}

uint32_t kv_sessions_turn_index(const struct kv_sessions *ss, uint32_t slot)
{
	return ss->tab[slot].turn;
}

uint32_t kv_sessions_class(const struct kv_sessions *ss, uint32_t slot)
{
	return ss->tab[slot].cls;
}

uint32_t kv_sessions_home(const struct kv_sessions *ss, uint32_t slot)
{
	return ss->tab[slot].home;
}

void kv_sessions_set_home(struct kv_sessions *ss, uint32_t slot, uint32_t replica)
{
	if (ss->tab[slot].home == NIL)
		ss->tab[slot].home = replica;
}

void kv_sessions_stats(const struct kv_sessions *ss, struct kv_sessions_stats *st)
{
	*st = ss->st;
}
