/*
 * cfg.h -- a YAML document as a small tree that remembers where every node
 * came from, plus typed, validating accessors.
 *
 * kv_cfg_load() parses a file with libyaml into nodes (mappings, sequences,
 * scalars), each carrying its file, line and column.  kv_cfg_set() applies a
 * command-line override "key.path=value" (creating mappings as needed; its
 * nodes report file "--set").  Accessors read a child by key and convert it,
 * filling a kv_diag on any error: wrong type, bad number, out of range.
 * kv_cfg_check_keys() rejects keys not in an allowed list, naming the valid
 * ones.  Every key a reader consumes is marked "used"; that is how unknown
 * keys are found for sections that list their keys dynamically (plugin
 * options).
 *
 * Anchors, aliases, tags other than !!str and a second document are
 * rejected (a workload file has no need of them); duplicate keys in a
 * mapping are an error naming both lines.
 *
 * A plain (unquoted) "", "~" or "null" is YAML's null.  The typed readers
 * refuse a null value ("no value: expected a duration (leave the key out
 * for the default)"), so `key:` or `--set key=` is an error, never the
 * built-in default standing in silently; a null where a mapping is expected
 * (a section whose keys are all commented out) is an empty mapping.
 *
 * Files: kv_cfg_load() reads regular files only, of at most
 * KV_INPUT_MAX_YAML_BYTES (16 MiB; kv_input_read() in sim/kv_common.h).
 *
 * Not on a hot path: nodes are individually allocated and freed with the
 * document.
 */
#ifndef KV_CFG_H
#define KV_CFG_H

#include "../../sim/kv_common.h"

enum kv_cfg_type { KV_CFG_SCALAR, KV_CFG_MAP, KV_CFG_SEQ };

struct kv_cfg_node {
	enum kv_cfg_type type;
	char *key; /* key in the parent mapping, NULL in a sequence or at the root */
	char *value; /* scalar text (NUL-terminated), NULL otherwise */
	int quoted; /* scalar was quoted, a block scalar or !!str: never a bool or null
		       (numbers, sizes and durations still convert: "80GB" is fine) */
	const char *file; /* file the node came from (owned by the document) */
	unsigned long line, col; /* 1-based position of the node's value */
	unsigned long key_line, key_col; /* 1-based position of its key (mapping children),
					    0 otherwise */
	int used; /* set by kv_cfg_get(), the readers and kv_cfg_check_keys();
		     code walking ->child itself sets it for kv_cfg_check_unused() */
	struct kv_cfg_node *parent;
	struct kv_cfg_node *child, *last; /* children in document order */
	struct kv_cfg_node *next; /* next sibling */
	size_t n_children;
};

struct kv_cfg_doc {
	struct kv_cfg_node *root; /* a mapping (an empty file gives an empty mapping) */
	char *path; /* path given to kv_cfg_load */
	char *dir; /* directory of path, for resolving relative paths */
};

/*
 * Loads path.  Returns 0 and fills doc, or a negative code with d filled
 * (missing file: KV_ENOENT; not a regular file: KV_EINVAL; larger than
 * KV_INPUT_MAX_YAML_BYTES: KV_ERANGE; syntax error: KV_EINVAL with libyaml's
 * problem, line and column; a root that is not a mapping: KV_EINVAL).
 */
int kv_cfg_load(struct kv_cfg_doc *doc, const char *path, struct kv_diag *d);

/* Parses YAML text held in memory; `name` is reported as the file. Same returns. */
int kv_cfg_load_string(struct kv_cfg_doc *doc, const char *name, const char *text,
		       struct kv_diag *d);

/*
 * Parses the len bytes at text (not NUL-terminated; a NUL inside is a
 * syntax error, as in a file), reported as file `name`, whose directory
 * resolves relative paths as kv_cfg_load() does.  Same returns.
 */
int kv_cfg_load_mem(struct kv_cfg_doc *doc, const char *name, const char *text, size_t len,
		    struct kv_diag *d);

void kv_cfg_free(struct kv_cfg_doc *doc);

/*
 * Applies "a.b.c=value": sets the node at that path, creating mappings
 * along the way (and in place of null values); replaces an existing node of
 * any type.  Segments may index existing sequence items: "tenants[1].share=2".
 * The value (after the first '=') is parsed as a YAML document: "fifo" is a
 * scalar, "[1, 2]" a sequence, "{x: 1}" a mapping, "" null.  New nodes
 * report file "--set", line 1 and the column within the assignment.
 * Returns 0, or KV_EINVAL with d filled (no '=', empty key, bad or missing
 * index, a path through a scalar or sequence, a YAML error in the value).
 */
int kv_cfg_set(struct kv_cfg_doc *doc, const char *assignment, struct kv_diag *d);

/*
 * Turns the scalar child `key` of mapping m into a mapping {inner: scalar}
 * (positions kept), so "cache: full" accepts --set cache.block_tokens=16.
 * Does nothing when the child is absent, null or not a scalar.
 */
void kv_cfg_wrap_scalar(struct kv_cfg_node *m, const char *key, const char *inner);

/* Child of a mapping by key, or NULL (also NULL when m is NULL or not a map). Marks it used. */
struct kv_cfg_node *kv_cfg_get(struct kv_cfg_node *m, const char *key);

/*
 * Dotted path of a node from the root, e.g. "workload.tenants[1].share",
 * into buf ("" for the root; a path too long keeps its tail after "...").
 */
const char *kv_cfg_path(const struct kv_cfg_node *n, char *buf, size_t len);

/*
 * Typed readers of the child `key` of mapping m.  When the key is absent
 * (or m is NULL or null) they store the default and return 0; a null value
 * is KV_EINVAL ("no value"); when present they mark it used, convert and
 * check, returning 0 or
 * KV_EINVAL (malformed, wrong type) / KV_ERANGE (outside [min, max], too
 * long) with d naming file:line:col, the key path, the bad value and what
 * was expected.  A non-null m that is not a mapping is KV_EINVAL.  *out is
 * left alone on error.  Quoted scalars convert like plain ones, except bools.
 *   _u64: a non-negative integer in [min, max]: "1000", "1_000_000" ('_'
 *         between digits), "1e6" or "1.5e3" (exponents only when the value
 *         is exactly integral); no hex or octal.
 *   _dbl: a finite number in [min, max] (same grammar: no nan, inf, hex).
 *   _bool: true/false, yes/no, on/off in any case, unquoted.
 *   _str: any scalar, copied into buf (len bytes; too long is KV_ERANGE);
 *         a NULL def gives "".
 *   _enum: one of names[] (NULL-terminated, case-sensitive); *out gets its
 *         index.
 *   _bytes: a size, number then optional spaces then unit: "80GB", "64 GiB",
 *         "1.5GiB", "1e9"; units B, KB, MB, GB, TB (10^3k), KiB, MiB, GiB,
 *         TiB (2^10k), in any case; no unit: bytes.  Rounded to the
 *         nearest byte; a nonzero size that rounds to 0 ("0.4B") is
 *         KV_EINVAL, since 0 often means "off" or "no cap".
 *   _ns: a duration, "1.5s", "200ms", "10us", "5ns", "2min", "1h"; no unit:
 *         seconds.  Rounded to the nearest nanosecond; a nonzero duration
 *         that rounds to 0 ("0.4ns", "1e-12s") is KV_EINVAL.
 */
int kv_cfg_u64(struct kv_cfg_node *m, const char *key, uint64_t def, uint64_t min,
	       uint64_t max, uint64_t *out, struct kv_diag *d);
int kv_cfg_dbl(struct kv_cfg_node *m, const char *key, double def, double min, double max,
	       double *out, struct kv_diag *d);
int kv_cfg_bool(struct kv_cfg_node *m, const char *key, int def, int *out,
		struct kv_diag *d);
int kv_cfg_str(struct kv_cfg_node *m, const char *key, const char *def, char *buf,
	       size_t len, struct kv_diag *d);
int kv_cfg_enum(struct kv_cfg_node *m, const char *key, const char *const *names, int def,
		int *out, struct kv_diag *d);
int kv_cfg_bytes(struct kv_cfg_node *m, const char *key, uint64_t def, uint64_t min,
		 uint64_t max, uint64_t *out, struct kv_diag *d);
int kv_cfg_ns(struct kv_cfg_node *m, const char *key, kv_ns def, kv_ns min, kv_ns max,
	      kv_ns *out, struct kv_diag *d);

/*
 * A bandwidth's text ("2039GB/s", "3.35 TB/s", "400Gb/s", "50": GB/s;
 * units GB/s TB/s MB/s GiB/s TiB/s Gb/s Gbps) into bytes/s (any sign: the
 * caller checks the range).  0, or -1 when it is not one (cfg_rate.c).
 */
int kv_cfg_parse_rate(const char *s, double *Bps);

/*
 * Same conversions applied to a node itself (for sequence items): no
 * default, so a null value is an error.  Mark n used.
 */
int kv_cfg_node_u64(struct kv_cfg_node *n, uint64_t min, uint64_t max, uint64_t *out,
		    struct kv_diag *d);
int kv_cfg_node_dbl(struct kv_cfg_node *n, double min, double max, double *out,
		    struct kv_diag *d);

/*
 * Requires n to be a mapping / a sequence, or absent (NULL) or null; returns
 * 0, or KV_EINVAL with d naming the expected type and what was found.
 */
int kv_cfg_expect_map(struct kv_cfg_node *n, struct kv_diag *d);
int kv_cfg_expect_seq(struct kv_cfg_node *n, struct kv_diag *d);

/*
 * Fails with KV_EINVAL on the first child of mapping m whose key is not in
 * allowed[] (NULL-terminated): "unknown key 'foo': expected one of: a, b",
 * located at the key.  Marks the allowed children used.  m NULL or null: 0;
 * m not a mapping: KV_EINVAL.
 */
int kv_cfg_check_keys(struct kv_cfg_node *m, const char *const *allowed, struct kv_diag *d);

/*
 * Fails with KV_EINVAL on the first mapping entry under m (recursively, in
 * document order, sequences included) never marked used: "unknown key 'x'",
 * located at the key.  Returns 0 when there is none or m is NULL.
 */
int kv_cfg_check_unused(struct kv_cfg_node *m, struct kv_diag *d);

/*
 * Fills d with an error located at the value of node n: file:line:col,
 * field <path>, the formatted message.  Returns KV_EINVAL.  For use by
 * readers of custom fields.
 */
int kv_cfg_error(struct kv_cfg_node *n, struct kv_diag *d, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/*
 * Resolves path rel found in node n: absolute paths are unchanged; from the
 * file (or n NULL) it is relative to doc->dir ("dir/rel"); from "--set" it is
 * relative to the current directory (rel as given).  Writes into buf;
 * returns 0 or KV_ERANGE when too long.
 */
int kv_cfg_resolve_path(const struct kv_cfg_doc *doc, const struct kv_cfg_node *n,
			const char *rel, char *buf, size_t len);

#endif /* KV_CFG_H */
