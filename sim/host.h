/*
 * host.h -- the engine's host side: the CPU time of one step, how it
 * combines with the GPU's time, and CUDA-graph padding.
 *
 * The CPU time of a step with S scheduled sequences, N scheduled tokens
 * (prefill chunk tokens plus one per decode) and s sequences that sample,
 * on an engine with KV blocks of B tokens, is
 *
 *   c_sched  = sched + S * sched_seq                       (the scheduler)
 *   c_prep   = N * prep_token + S * prep_seq                (input tensors)
 *   c_block  = block * N / B                                (block tables)
 *   c_hash   = hash * N / B          (prefix caching only)  (full blocks hashed)
 *   c_out    = s * (sample + detok)  (detok: in-engine detokenisation only)
 *
 * each coefficient in ns on the reference CPU divided by the host profile's
 * cpu_speed.  A step's N new tokens fill N / B blocks on average, so block
 * allocations and hashed blocks are counted at that rate rather than at the
 * step that crosses a block boundary: the rate is a function of the step's
 * shape, which keeps a run of identical decode steps identical (macro.h).
 *
 * A multi-GPU replica's engine also drives its workers each scheduling
 * pass (broadcasts the scheduler output, gathers the sampled tokens): w =
 * worker_sync_ns + S * worker_seq_ns (the second where every worker gets
 * the per-sequence scheduler output: engine option worker_inputs), host
 * time before the forward pass, so c_pre = c_sched + c_prep + c_block +
 * c_hash + w.
 *
 * Combined with the GPU's time g (the roofline, perf.h), per mode:
 *   off        t = g + w
 *   sync       t = c_pre + c_out + g
 *   sync, async output processor (vLLM 0.6)
 *              t = c_pre + max(g, c_out)
 *   multi-step (num_scheduler_steps = n, decode-only steps)
 *              t = c_pre / n + [c_out + g or max(g, c_out)]
 *   async      t = max(c + w, g) + sync   (c the whole CPU time: the next
 *              step is scheduled, its inputs prepared and broadcast while
 *              this one runs)
 * docs/host-model.md derives each mode from the engine's source.
 *
 * CUDA graphs: a decode-only step of n sequences runs the graph captured
 * for the smallest captured size >= n (captured sizes: 1, 2, 4, then every
 * multiple of 8 up to graph_max, as vLLM and SGLang capture them), so its
 * linear layers compute for the padded batch; above graph_max, or with
 * graphs off, the step runs eagerly and the GPU cannot finish before the
 * host has launched every kernel: g = max(g, layers * kernels * launch).
 *
 * Everything here is pure and allocation-free (the hot path).  Invariant:
 * with `on` 0, worker_sync_ns 0, worker_seq_ns 0, graph_max 0 and launch 0,
 * kv_host_step_ns(h, b, 0, g) == g and no shape is padded: the GPU model's
 * time is returned unchanged.
 */
#ifndef KV_HOST_H
#define KV_HOST_H

#include <stdint.h>

struct kv_batch_shape;

/* How host time combines with GPU time (docs/host-model.md). */
enum kv_host_mode {
	KV_HOST_SYNC = 0, /* CPU then GPU, every step */
	KV_HOST_MULTISTEP, /* CPU scheduling once per num_scheduler_steps decode steps */
	KV_HOST_ASYNC, /* the next step is scheduled while this one runs: max(CPU, GPU) + sync */
};

/* The host's coefficients of one run, resolved (engine version, host profile, options). */
struct kv_host {
	int on; /* 1: the host model runs; 0: kv_host_step_ns returns the GPU time */
	enum kv_host_mode mode; /* how CPU and GPU time combine */
	int output_async; /* 1: output processing overlaps the GPU (vLLM 0.6's async output processor) */
	double steps; /* num_scheduler_steps (multi-step), >= 1 */
	double sched_ns; /* scheduler, fixed per step, ns */
	double sched_seq_ns; /* scheduler, per scheduled sequence, ns */
	double prep_token_ns; /* input preparation, per scheduled token, ns */
	double prep_seq_ns; /* input preparation, per scheduled sequence, ns */
	double block_ns; /* block-table update, per newly allocated block, ns */
	double hash_ns; /* prefix hashing, per full block hashed, ns (0: no prefix caching) */
	double sample_ns; /* sampling and output processing, per sampling sequence, ns */
	double detok_ns; /* detokenisation in the engine process, per sampling sequence, ns (0: elsewhere) */
	double sync_ns; /* async mode: the per-step synchronisation cost, ns */
	double worker_sync_ns; /* driving the workers of a multi-GPU replica (broadcast, gather), per scheduling pass, ns; 0 on one GPU; charged even with `on` 0 */
	double worker_seq_ns; /* the same per scheduled sequence (every worker gets the scheduler output), summed over the workers, ns; 0 with broadcast inputs or one GPU; charged even with `on` 0 */
	double inv_block_tokens; /* 1 / KV block tokens (blocks per new token) */
	/* CUDA graphs (GPU side) */
	uint32_t graph_max; /* largest captured decode batch; 0: graphs off (every step eager) */
	double launch_ns; /* one kernel launch, ns; 0: launches are free (no eager floor) */
	double eager_ns; /* layers * kernels per layer * launch_ns: an eager step's launch floor, ns */
};

/*
 * The host's coefficients by name, in ns: X(ENUM, "key", field of struct
 * kv_host).  The keys are the host profile's (configs/hosts/) and, with a
 * host_ prefix, the engines' options.
 */
#define KV_HOST_COEFS(X)                                  \
	X(SCHED, "sched", sched_ns)                       \
	X(SCHED_SEQ, "sched_seq", sched_seq_ns)           \
	X(PREP_TOKEN, "prep_token", prep_token_ns)        \
	X(PREP_SEQ, "prep_seq", prep_seq_ns)              \
	X(BLOCK, "block", block_ns)                       \
	X(HASH, "hash", hash_ns)                          \
	X(SAMPLE, "sample", sample_ns)                    \
	X(DETOK, "detok", detok_ns)                       \
	X(SYNC, "sync", sync_ns)                          \
	X(LAUNCH, "launch", launch_ns)

enum kv_host_coef {
#define KV__HOST_ENUM(e, key, field) KV_HOSTC_##e,
	KV_HOST_COEFS(KV__HOST_ENUM)
#undef KV__HOST_ENUM
	KV_HOST_NCOEF
};

/* The key of coefficient i ("sched", ...). */
const char *kv_host_coef_key(enum kv_host_coef i);

/* Coefficient i of h, by reference. */
double *kv_host_coef(struct kv_host *h, enum kv_host_coef i);

/*
 * A host profile (configs/hosts/NAME.yaml, src/lib/profile_load.c): the
 * CPU's speed relative to the reference CPU the engines' defaults describe,
 * and any coefficient measured on this host.  All zero is the reference CPU
 * with nothing measured.
 */
struct kv_host_profile {
	char name[64]; /* e.g. "reference"; "" when none was named */
	double cpu_speed; /* work per second relative to the reference CPU; 0 reads as 1 */
	uint32_t set; /* bit i: coef[i] was given by the profile */
	double coef[KV_HOST_NCOEF]; /* measured on this host, ns (where set) */
	/* `kvsim run --uncertainty`'s draw: standard normals; coefficient i is multiplied by
	 * exp(rel_sd[i] * unc_z[i]) (rel_sd: the engine version's); all 0 (default): no draw */
	double unc_z[KV_HOST_NCOEF];
};

/*
 * One engine version's host defaults (docs/engines.md, "Versions"): an
 * engine's table of them ends with a NULL name.
 */
struct kv_host_version {
	const char *name; /* the engine's `version:` value, e.g. "0.6"; NULL ends a table */
	int on; /* 0: no host model (kvsim's behaviour before it) */
	enum kv_host_mode mode; /* how CPU and GPU time combine */
	int output_async; /* output processing overlaps the GPU */
	uint32_t graph_max; /* largest captured CUDA-graph decode batch */
	double coef[KV_HOST_NCOEF]; /* ns on the reference CPU, by enum kv_host_coef */
	const char *source; /* where coef comes from (kvsim list); NULL: docs/host-model.md, Defaults */
	double rel_sd[KV_HOST_NCOEF]; /* fitted relative sd of coef (--uncertainty draws); 0: not drawn */
};

/* "sync", "multi-step" or "async". */
const char *kv_host_mode_name(enum kv_host_mode m);

/* The CPU time of one step of shape b, ns (0 when the model is off). */
double kv_host_cpu_ns(const struct kv_host *h, const struct kv_batch_shape *b);

/* The step's time from its CPU time cpu_ns and GPU time gpu_ns, per h->mode, ns. */
double kv_host_step_ns(const struct kv_host *h, const struct kv_batch_shape *b, double cpu_ns,
		       double gpu_ns);

/*
 * The decode batch a CUDA graph runs for n decode sequences: the smallest
 * captured size >= n (1, 2, 4, 8, 16, 24, ...), or 0 when none is (n above
 * graph_max, graphs off, or n == 0: the step runs eagerly).
 */
uint32_t kv_host_graph_size(const struct kv_host *h, uint32_t n);

/*
 * The GPU time of an eager step whose kernels take gpu_ns: the launches
 * floor it, max(gpu_ns, eager_ns).
 */
static inline double kv_host_eager_ns(const struct kv_host *h, double gpu_ns)
{
	return gpu_ns >= h->eager_ns ? gpu_ns : h->eager_ns;
}

#endif /* KV_HOST_H */
