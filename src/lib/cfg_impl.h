/*
 * cfg_impl.h -- what the three parts of the config module share; nothing
 * outside src/lib/cfg_*.c includes it.
 *
 * The parts, each using only those listed before it: cfg_tree.c: the node
 * tree and the messages that locate a node; cfg_yaml.c: the libyaml
 * builder and the documents (load, free); cfg_set.c: --set paths;
 * cfg_units.c: exact decimals and units (integers, sizes, durations,
 * doubles); cfg_read.c: the typed readers and structure checks of cfg.h.  The helpers below keep their short names inside the module;
 * the macros give them internal kv__cfg_ symbols.
 */
#ifndef KV_CFG_IMPL_H
#define KV_CFG_IMPL_H

#include "cfg.h"

#define set_file kv__cfg_set_file
#define describe kv__cfg_describe
#define is_null kv__cfg_is_null
#define join kv__cfg_join
#define map_find kv__cfg_map_find
#define node_append kv__cfg_node_append
#define node_conv kv__cfg_node_conv
#define node_err kv__cfg_node_err
#define node_free kv__cfg_node_free
#define node_new kv__cfg_node_new
#define node_replace kv__cfg_node_replace
#define parse_text kv__cfg_parse_text
#define preorder_next kv__cfg_preorder_next
#define shown kv__cfg_shown
#define conv_u64 kv__cfg_conv_u64
#define conv_bytes kv__cfg_conv_bytes
#define conv_ns kv__cfg_conv_ns

/* File name of nodes made by kv_cfg_set(); compared by address. */
extern const char set_file[];

/* cfg_tree.c */
struct kv_cfg_node *node_new(enum kv_cfg_type type, const char *file, unsigned long line,
			     unsigned long col);
void node_append(struct kv_cfg_node *parent, struct kv_cfg_node *n);
void node_free(struct kv_cfg_node *top);
void node_replace(struct kv_cfg_node *old, struct kv_cfg_node *new);
struct kv_cfg_node *map_find(const struct kv_cfg_node *m, const char *key, size_t klen);
struct kv_cfg_node *preorder_next(struct kv_cfg_node *n, const struct kv_cfg_node *top);
int is_null(const struct kv_cfg_node *n);
const char *shown(const char *s, char *buf, size_t len);
const char *describe(const struct kv_cfg_node *n, char *buf, size_t len);
const char *join(const char *const *names, char *buf, size_t len);
int node_err(const struct kv_cfg_node *n, struct kv_diag *d, int err, int at_key,
	     const char *fmt, ...) __attribute__((format(printf, 5, 6)));

/* cfg_yaml.c */
/*
 * Parses len bytes of text into *root (NULL for an empty stream).  Nodes
 * report `file`; columns on the first line are shifted by col_off.
 * Returns 0 or KV_EINVAL with d filled (field `field`).
 */
int parse_text(const char *file, const char *text, size_t len, unsigned long col_off,
	       const char *field, struct kv_cfg_node **root, struct kv_diag *d);

/* cfg_units.c: an integer conversion (plain, size, duration) and the reader over it */
/* A unit suffix and its multiple. */
struct unit {
	const char *name; /* suffix; "" for a plain number */
	uint64_t mult; /* value of 1 unit in the base unit */
};

/* An integer conversion: what it accepts and how it is described. */
struct conv {
	const char *what; /* "a size", ... for "expected X" */
	const char *hint; /* added when the text is malformed, or "" */
	const struct unit *units; /* accepted suffixes (int_units: none) */
	int icase; /* suffixes match in any case */
	int round; /* round to nearest (else the value must be integral) */
	const char *res; /* the resolution, "1ns": a nonzero value rounding below is an error */
};

extern const struct conv conv_u64, conv_bytes, conv_ns;
int node_conv(struct kv_cfg_node *n, const struct conv *c, uint64_t min, uint64_t max,
	      uint64_t *out, struct kv_diag *d);

#endif /* KV_CFG_IMPL_H */
