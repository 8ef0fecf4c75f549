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

struct kv_workload {
	char name[128]; /* workload name (file stem unless `name:` is set) */
	char path[1024]; /* the file */
	char out_dir[1024]; /* outputs.dir resolved, or "" */
	int requests_csv; /* outputs.requests, default 1 */
	int chart; /* outputs.chart, default 1 */
	int timeline; /* outputs.timeline: write DIR/timeline.json (src/lib/timeline.h), default 0 */
	struct kv_sim_config cfg; /* the run's configuration */
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

#endif /* KV_WORKLOAD_H */
