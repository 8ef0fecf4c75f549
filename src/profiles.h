/*
 * profiles.h -- loading model and device profiles from YAML.
 *
 * A profile is named ("llama-2-7b" finds configs/models/llama-2-7b.yaml) or
 * given as a path to a .yaml file (relative paths already resolved by the
 * caller).  Named profiles are searched in $KVSIM_CONFIG_DIR when set, else
 * in the configs/ directory of the source tree (compiled in as
 * KV_CONFIG_DIR), else in the installed data directory.
 *
 * Model file keys: name, layers, hidden, heads, kv_heads, head_dim,
 * intermediate, vocab, max_context, params, dtype_bytes (default 2),
 * gated_mlp (default true), source (free text, required: where the numbers
 * come from).  Device file keys: name, memory (bytes with unit, e.g. "80GB"),
 * mem_bandwidth ("2039GB/s" or a number of GB/s), fp16_tflops,
 * host_link_bandwidth (GB/s, one direction), interconnect_bandwidth (GB/s,
 * one direction), and a `perf:` mapping with eff_bw, eff_flops, overhead
 * (duration), per_seq (duration), dequant_flops_per_byte, and `cost:` with
 * alpha; source (required).  Unknown keys are errors.
 */
#ifndef KV_PROFILES_H
#define KV_PROFILES_H

#include "../sim/profile.h"

/* Directory holding models/ and devices/ (no trailing slash). */
const char *kv_profiles_dir(void);

/* Loads a model by name or path; returns 0 or a negative code with d filled. */
int kv_profile_load_model(const char *name_or_path, struct kv_model *m, struct kv_diag *d);

/* Loads a device by name or path; returns 0 or a negative code with d filled. */
int kv_profile_load_device(const char *name_or_path, struct kv_device *dev,
			   struct kv_diag *d);

/*
 * Calls fn(name, path, arg) for each profile of a kind ("models" or
 * "devices") in name order.  Returns the number listed, or a negative code.
 */
int kv_profiles_list(const char *kind, void (*fn)(const char *name, const char *path, void *arg),
		     void *arg);

#endif /* KV_PROFILES_H */
