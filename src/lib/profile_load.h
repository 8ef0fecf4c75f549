/*
 * profile_load.h -- loading model and device profiles from YAML.
 *
 * A profile is named ("llama-2-7b" finds configs/models/llama-2-7b.yaml) or
 * given as a path to a .yaml file (relative paths already resolved by the
 * caller).  Named profiles are searched in $KVSIM_CONFIG_DIR when set, else
 * in the first existing of: the source tree's configs/ (compiled in as
 * KV_CONFIG_DIR, or KV_SOURCE_DIR "/configs"), $KVSIM_SOURCE_DIR/configs,
 * the installed data directory (KV_DATA_DIR when compiled in); else in
 * ./configs.
 *
 * Model file keys: name, layers, hidden, heads, kv_heads, head_dim,
 * intermediate, vocab, max_context, params, source (free text: where the
 * numbers come from), all required; dtype_bytes (default 2), gated_mlp
 * (default true), tie_embeddings (default false), and the optional
 * architecture keys of struct kv_model (qkv_bias, qk_norm; experts,
 * experts_per_token, shared_experts, moe_intermediate, dense_layers,
 * expert_imbalance; kv_lora_rank, q_lora_rank, qk_rope_head_dim, v_head_dim;
 * sliding_window, window_every; weight_dtype, kv_dtype as fp16, bf16, fp8,
 * int8, int4 or auto), off when absent (docs/models.md).  Device file keys: name,
 * memory (bytes with unit, e.g. "80GB" = 80e9 bytes), mem_bandwidth
 * ("2039GB/s", "3.35TB/s" or a number of GB/s), fp16_tflops (dense),
 * host_link_bandwidth (GB/s, one direction), source, all required;
 * interconnect_bandwidth (GB/s, one direction; default 0: none), host (the
 * host profile a workload without `host:` runs; default: reference), a `perf:`
 * mapping with eff_bw, eff_flops, overhead (duration), per_seq (duration),
 * allreduce_latency (duration), collective_overhead (duration added to every
 * collective over more than one rank), dequant_flops_per_byte, and `cost:` with
 * alpha, each defaulting to profile.h's KV_DEV_DEFAULT_*.  Unknown keys are
 * errors.  Host file keys (configs/hosts/): name, source, both required;
 * cpu_speed (work per second relative to the reference CPU, default 1) and
 * `coefficients:`, a mapping of host.h's coefficient keys (sched,
 * sched_seq, prep_token, prep_seq, block, hash, sample, detok, sync,
 * launch) to durations measured on that host.  An error in a file names
 * its line, column and key.
 */
#ifndef KV_PROFILE_LOAD_H
#define KV_PROFILE_LOAD_H

#include "../../sim/host.h"
#include "../../sim/profile.h"

/* Directory holding models/ and devices/ (no trailing slash). */
const char *kv_profiles_dir(void);

/*
 * Loads a model by name or path and validates it (kv_model_validate).
 * Returns 0, KV_ENOENT for an unknown name (d lists the valid ones) or a
 * missing file, KV_EINVAL or KV_ERANGE for bad contents, with d filled.
 */
int kv_profile_load_model(const char *name_or_path, struct kv_model *m, struct kv_diag *d);

/* Loads a device by name or path and validates it; returns as kv_profile_load_model. */
int kv_profile_load_device(const char *name_or_path, struct kv_device *dev,
			   struct kv_diag *d);

/*
 * The same from the len bytes at text (not NUL-terminated), reported as file
 * `name`: a profile held in memory (the fuzz target, tests).  Same returns,
 * less KV_ENOENT.
 */
int kv_profile_load_model_mem(const char *name, const char *text, size_t len, struct kv_model *m,
			      struct kv_diag *d);
int kv_profile_load_device_mem(const char *name, const char *text, size_t len,
			       struct kv_device *dev, struct kv_diag *d);

/* Loads a host profile by name or path; returns as kv_profile_load_model. */
int kv_profile_load_host(const char *name_or_path, struct kv_host_profile *h, struct kv_diag *d);
int kv_profile_load_host_mem(const char *name, const char *text, size_t len,
			     struct kv_host_profile *h, struct kv_diag *d);

/*
 * Calls fn(name, path, arg) for each profile of a kind ("models",
 * "devices" or "hosts") in name order.  Returns the number listed, or a negative code.
 */
int kv_profiles_list(const char *kind, void (*fn)(const char *name, const char *path, void *arg),
		     void *arg);

#endif /* KV_PROFILE_LOAD_H */
