/*
 * plugin.h -- the plugin base shared by every plugin kind (schedulers, cache
 * models, routers): name, description, private state, per-request state,
 * options; the registries and the one generic lookup over them.
 *
 * Every descriptor (struct kv_sched_ops, kv_cache_ops, kv_router_ops)
 * starts with KV_PLUGIN_BASE: a union of `struct kv_plugin base` with the
 * same fields unnamed, so a plugin writes `.name = "fifo"` and code reads
 * `ops->name`, while generic code takes `&ops->base` (the common initial
 * sequence of the two union members makes both views the same bytes).
 * The engine allocates .priv_size zeroed bytes per replica and fills the
 * options before the init hook, and .req_size zeroed bytes per request in
 * flight, in flat per-slot arrays (kv_req_sched(), kv_req_cache()).
 *
 * A plugin's options are a NULL-name-terminated array of kv_option.  Each
 * names a field of the plugin's private state by offset and type; the
 * workload loader fills a zeroed private block with the defaults, then with
 * the values from YAML, checking ranges, before the plugin's init hook runs.
 * `kvsim list` prints the same table, so the documentation cannot drift
 * from the code.
 */
#ifndef KV_PLUGIN_H
#define KV_PLUGIN_H

#include "kv_common.h"

enum kv_opt_type {
	KV_OPT_U64, /* uint64_t field; min/max bound it */
	KV_OPT_DBL, /* double field; min/max bound it */
	KV_OPT_BOOL, /* int field, 0 or 1 */
	KV_OPT_ENUM, /* int field: index into names[] */
	KV_OPT_BYTES, /* uint64_t field, accepts "8MiB" */
	KV_OPT_NS, /* kv_ns field, accepts "10ms" */
};

struct kv_option {
	const char *name; /* YAML key; NULL ends the table */
	enum kv_opt_type type;
	size_t offset; /* offsetof(private struct, field) */
	double def; /* default (enum: index; bool: 0/1) */
	double min, max; /* accepted range (numbers) */
	const char *units; /* "tokens", "bytes", "", ... */
	const char *help; /* one line */
	const char *const *names; /* enum: NULL-terminated value names */
};

/* What every plugin descriptor starts with. */
#define KV_PLUGIN_FIELDS                                                                 \
	const char *name; /* YAML name: "fifo", "chunked", "round-robin", ... */           \
	const char *desc; /* one sentence with the rule or equation */                     \
	size_t priv_size; /* bytes of private state per replica (0: none) */               \
	size_t req_size; /* bytes of private state per request in flight (0: none) */      \
	const struct kv_option *options; /* NULL-name-terminated table, or NULL */          \
	uint32_t flags; /* KV_PLUGIN_F_* (0: none) */

struct kv_plugin {
	KV_PLUGIN_FIELDS
};

/* The first member of a descriptor: `base` and the same fields by name. */
#define KV_PLUGIN_BASE                 \
	union {                        \
		struct kv_plugin base; \
		struct {               \
			KV_PLUGIN_FIELDS \
		};                     \
	}

/*
 * Plugin flags.  KV_PLUGIN_F_MACRO_STEPS: a cache model or an engine
 * permits exact macro-stepping (macro.h): between two batch changes its
 * hooks are not called by a decode step inside every request's holding, or,
 * when called, do exactly the same thing every step and touch nothing
 * another event reads, so a run of such steps may be applied at once.
 * Default off.  (A scheduler sets no flag: it declares what it is,
 * scheduler.h, and the macro module derives the rest.)  A router
 * says what it reads of the replicas (KV_PLUGIN_F_ROUTE_*; default: any
 * state), so an arrival brings only that up to date.
 */
enum {
	KV_PLUGIN_F_MACRO_STEPS = 1,
	/* a router that reads of the replicas only outstanding_tokens (or nothing) */
	KV_PLUGIN_F_ROUTE_OUTSTANDING = 2,
	/* a router that reads no replica state */
	KV_PLUGIN_F_ROUTE_BLIND = 4,
	/*
	 * with ROUTE_OUTSTANDING: it reads the least outstanding view (from
	 * KV_ROUTE_TREE_MIN_REPLICAS replicas the root of the engine's tree)
	 * and brings up itself any other view it reads (scheduler.h pick)
	 */
	KV_PLUGIN_F_ROUTE_LEAST = 8,
};

enum kv_plugin_kind {
	KV_PLUGIN_SCHED,
	KV_PLUGIN_CACHE,
	KV_PLUGIN_ROUTER,
	KV_PLUGIN_ENGINE, /* serving-engine semantics (sim/serving.h) */
	KV_PLUGIN_KINDS
};

/*
 * A kind's YAML key ("scheduler", "cache", "router"), the word `kvsim list`
 * takes ("schedulers", "caches", "routers") and its heading there.
 */
const char *kv_plugin_kind_key(enum kv_plugin_kind k);
const char *kv_plugin_kind_plural(enum kv_plugin_kind k);
const char *kv_plugin_kind_title(enum kv_plugin_kind k);

/*
 * The i-th plugin of a kind, in `kvsim list` order: the built-in registry
 * (sim/registry.c) then those added with kv_plugin_add(); NULL past the end.
 */
const struct kv_plugin *kv_plugin_at(enum kv_plugin_kind k, size_t i);

/* The plugin of a kind with that name, or NULL. */
const struct kv_plugin *kv_plugin_find(enum kv_plugin_kind k, const char *name);

/* The names of a kind, "a, b, c", into buf (truncated to len); returns buf. */
const char *kv_plugin_names(enum kv_plugin_kind k, char *buf, size_t len);

/*
 * Registers a plugin built outside sim/ (a test's, a front end's) after the
 * built-in ones: a plugin is one file plus this line (or a registry line).
 * Returns 0, KV_EINVAL when the name is taken, KV_ERANGE past 8 per kind.
 */
int kv_plugin_add(enum kv_plugin_kind k, const struct kv_plugin *p);

/*
 * Sets the option `name` of priv to v (a number; bools 0/1, durations in ns),
 * unchecked: for an engine configuring the plugin it runs.  Returns 0, or
 * KV_EINVAL when opts has no such option.
 */
int kv_option_set(const struct kv_option *opts, void *priv, const char *name, double v);

/* Fills priv's option fields with their defaults. */
void kv_options_defaults(const struct kv_option *opts, void *priv);

/* Formats an option's default for display ("16", "true", "8 MiB", "recompute"). */
const char *kv_option_default_str(const struct kv_option *o, char *buf, size_t len);

/* Human name of an option type ("integer", "number", "bool", "enum", "bytes", "duration"). */
const char *kv_option_type_name(enum kv_opt_type t);

#endif /* KV_PLUGIN_H */
