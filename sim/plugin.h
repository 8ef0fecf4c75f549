/*
 * plugin.h -- option tables shared by every plugin kind (schedulers, cache
 * models, routers).
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

/* Fills priv's option fields with their defaults. */
void kv_options_defaults(const struct kv_option *opts, void *priv);

/* Formats an option's default for display ("16", "true", "8 MiB", "recompute"). */
const char *kv_option_default_str(const struct kv_option *o, char *buf, size_t len);

/* Human name of an option type ("integer", "number", "bool", "enum", "bytes", "duration"). */
const char *kv_option_type_name(enum kv_opt_type t);

#endif /* KV_PLUGIN_H */
