/*
 * workload.h -- a workload file (YAML) turned into a kv_sim_config.
 *
 * The loader reads the document, applies --set overrides, then reads every
 * section with the typed accessors of cfg.h, so each bad value is reported
 * with its file, line, column, key path, the value and what was expected.
 * Unknown keys are errors; an unknown plugin name lists the valid ones.
 * Paths inside the file (traces, profile files) resolve relative to the
 * file.  docs/workload.md documents every key.
 */
#ifndef KV_WORKLOAD_H
#define KV_WORKLOAD_H

#include "../../sim/engine.h"
#include "../../sim/metrics.h"

/*
 * The health report's targets (workload `health:`; src/lib/health.h).  The
 * defaults are the seed write-up's operating targets (docs/health.md) and,
 * for the tail ratio, kvsim's own choice.
 */
struct kv_health_cfg {
	double hit_rate_min; /* cache hit rate at least this, default 0.85 */
	double mem_util_min, mem_util_max; /* memory utilisation band, default 0.60 to 0.80 */
	double fairness_min; /* Jain's index over tenants at least this, default 0.7 */
	uint64_t max_block_bytes; /* largest contiguous KV block at most this, bytes, default 8 MiB */
	double tail_ratio_max; /* E2E p99 / p50 at most this, default 5 */
	uint64_t long_tokens; /* prompt+output above this is "over-long" (tail cause), default 8192 */
	double mem_growth_max; /* reserved KV growth at flat load at most this share of the pool, default 0.10 */
};

struct kv_workload {
	char name[128]; /* workload name (file stem unless `name:` is set) */
	char path[1024]; /* the file */
	char out_dir[1024]; /* outputs.dir resolved, or "" */
	int requests_csv; /* outputs.requests, default 1 */
	int chart; /* outputs.chart, default 1 */
	int timeline; /* outputs.timeline: write DIR/timeline.json (src/lib/timeline.h), default 0 */
	struct kv_sim_config cfg; /* the run's configuration */
	struct kv_slo_cfg slo; /* `slo:` (metrics.h); slo.on = 0 when absent */
	struct kv_health_cfg health; /* `health:` thresholds of the health report (health.h) */
};

/*
 * Loads path with the overrides sets[0..n_sets) ("key.path=value") and
 * an optional seed override (has_seed).  Returns 0, or a negative code with
 * d filled.  Release with kv_workload_release() in both cases.
 */
int kv_workload_load(struct kv_workload *w, const char *path, char *const *sets, size_t n_sets,
		     int has_seed, uint64_t seed, struct kv_diag *d);

/*
 * Same, from the len bytes at text, reported as file `name`; relative paths
 * in it (traces, profiles) resolve against name's directory as if the file
 * were there.  For tests and fuzzing without a file on disk.
 */
int kv_workload_load_mem(struct kv_workload *w, const char *name, const char *text, size_t len,
			 char *const *sets, size_t n_sets, int has_seed, uint64_t seed,
			 struct kv_diag *d);

void kv_workload_release(struct kv_workload *w);

/*
 * Reads parent's `kv_transfer:` mapping (prefill/decode disaggregation,
 * sim/disagg.h) into *x, whose fields stay as they are for absent keys (a
 * group's starts from the cluster's).  Returns 0, or KV_EINVAL/KV_ERANGE
 * with d naming the field, the bad value and what was expected.
 */
struct kv_cfg_node;
/* Whether configuration c has a prefill-role group (its run disaggregates). */
int kv_workload_disagg(const struct kv_sim_config *c);
/*
 * Each prefill group of c has a decode group serving its model and each
 * decode group a prefill group (groups: the cluster.groups node, for the
 * message); 0 or KV_EINVAL naming the group's role.
 */
int kv_workload_check_roles(struct kv_cfg_node *groups, const struct kv_sim_config *c,
			    struct kv_diag *d);
int kv_workload_kv_transfer(struct kv_cfg_node *parent, struct kv_xfer_cfg *x,
			    struct kv_diag *d);

#endif /* KV_WORKLOAD_H */
