/*
 * profile.c -- numbers derived from model and device profiles, and their
 * validation.
 *
 * Every derived figure comes from the architecture fields, so a profile
 * holds only what its source states.  Validation names fields by their YAML
 * key ("kv_heads", "perf.eff_bw") so the loader can point at the line.
 */
#include "profile.h"

#include <math.h>
#include <string.h>

uint64_t kv_model_weight_bytes(const struct kv_model *m)
{
	return m->params * m->dtype_bytes;
}

uint64_t kv_model_kv_bytes_per_token(const struct kv_model *m)
{
	return 2ULL * m->layers * m->kv_heads * m->head_dim * m->dtype_bytes;
}

/* Weights of one transformer block: attention, MLP and its two norms. */
static uint64_t block_params(const struct kv_model *m)
{
	uint64_t h = m->hidden;
	uint64_t attn = h * m->head_dim * (2ULL * m->heads + 2ULL * m->kv_heads);
	uint64_t mlp = (m->gated_mlp ? 3ULL : 2ULL) * h * m->intermediate;

	return attn + mlp + 2 * h;
}

uint64_t kv_model_arch_params(const struct kv_model *m)
{
	uint64_t emb = (uint64_t)m->vocab * m->hidden;

	return m->layers * block_params(m) + (m->tie_embeddings ? emb : 2 * emb) +
	       m->hidden;
}

double kv_model_linear_flops_per_token(const struct kv_model *m)
{
	double lookup = m->tie_embeddings ? 0.0 : (double)m->vocab * m->hidden;

	return 2.0 * ((double)m->params - lookup);
}

double kv_model_head_flops(const struct kv_model *m)
{
	return 2.0 * (double)m->vocab * m->hidden;
}

double kv_model_attn_flops_per_pair(const struct kv_model *m)
{
	return 4.0 * m->layers * m->heads * m->head_dim;
}

const struct kv_model_field kv_model_arch_fields[] = {
	{ "layers", offsetof(struct kv_model, layers) },
	{ "hidden", offsetof(struct kv_model, hidden) },
	{ "heads", offsetof(struct kv_model, heads) },
	{ "kv_heads", offsetof(struct kv_model, kv_heads) },
	{ "head_dim", offsetof(struct kv_model, head_dim) },
	{ "intermediate", offsetof(struct kv_model, intermediate) },
	{ "vocab", offsetof(struct kv_model, vocab) },
	{ "max_context", offsetof(struct kv_model, max_ctx_tokens) },
	{ NULL, 0 },
};

/* Fails on the first zero among the architecture fields. */
static int model_check_positive(const struct kv_model *m, struct kv_diag *d,
				const char *file)
{
	const struct kv_model_field *f;

	for (f = kv_model_arch_fields; f->key; f++)
		if (kv_model_field(m, f) == 0)
			return kv_diag_set(d, KV_EINVAL, file, 0, 0, f->key,
					   "must be a positive integer, got 0");
	if (m->params == 0)
		return kv_diag_set(d, KV_EINVAL, file, 0, 0, "params",
				   "must be a positive integer, got 0");
	return 0;
}

/* The exact count must agree with the architecture within KV_MODEL_PARAMS_TOL. */
static int model_check_params(const struct kv_model *m, struct kv_diag *d, const char *file)
{
	uint64_t arch = kv_model_arch_params(m);
	double rel = fabs((double)m->params - (double)arch) / (double)arch;

	if (rel <= KV_MODEL_PARAMS_TOL)
		return 0;
	return kv_diag_set(d, KV_EINVAL, file, 0, 0, "params",
			   "%llu is %.1f%% away from the %llu the architecture implies "
			   "(layers, hidden, heads, kv_heads, head_dim, intermediate, vocab); "
			   "expected within %.0f%%",
			   (unsigned long long)m->params, 100.0 * rel,
			   (unsigned long long)arch, 100.0 * KV_MODEL_PARAMS_TOL);
}

int kv_model_validate(const struct kv_model *m, struct kv_diag *d, const char *file)
{
	int err = model_check_positive(m, d, file);

	if (err)
		return err;
	if (m->kv_heads > m->heads || m->heads % m->kv_heads)
		return kv_diag_set(d, KV_EINVAL, file, 0, 0, "kv_heads",
				   "%u must divide heads (%u)", m->kv_heads, m->heads);
	if (m->dtype_bytes != 1 && m->dtype_bytes != 2 && m->dtype_bytes != 4)
		return kv_diag_set(d, KV_EINVAL, file, 0, 0, "dtype_bytes",
				   "%u is not 1, 2 or 4", m->dtype_bytes);
	return model_check_params(m, d, file);
}

void kv_device_set_defaults(struct kv_device *dev)
{
	dev->eff_bw = KV_DEV_DEFAULT_EFF_BW;
	dev->eff_flops = KV_DEV_DEFAULT_EFF_FLOPS;
	dev->overhead_ns = KV_DEV_DEFAULT_OVERHEAD_NS;
	dev->per_seq_ns = KV_DEV_DEFAULT_PER_SEQ_NS;
	dev->allreduce_latency_ns = KV_DEV_DEFAULT_ALLREDUCE_LATENCY_NS;
	dev->dequant_flops_per_byte = KV_DEV_DEFAULT_DEQUANT_FLOPS_PER_BYTE;
	dev->alpha = KV_DEV_DEFAULT_ALPHA;
}

/*
 * Achieved shares of the datasheet peaks per architecture family, from
 * published measurements (docs/perf-model.md, "GPU families", has the table
 * with every source):
 *   ampere     bw 0.83: ~1700 of 2039 GB/s (gpt-fast README, A100-80GB);
 *              flops 0.73: the A100-80GB fit of docs/perf-model.md.
 *   ada        bw 0.91: clpeak 921 of 1008 GB/s on an RTX 4090
 *              (krrishnarraj/clpeak issue 106); flops 0.96: 158.6 of 165.2
 *              TFLOPS, fp16 8192^3 torch matmul on an RTX 4090
 *              (mli/transformers-benchmarks issue 4).
 *   hopper     bw 0.90: FlashMLA 3000 of 3350 GB/s on H800 SXM5
 *              (deepseek-ai/FlashMLA README); flops 0.78: DeepGEMM 1550 of
 *              1979 dense FP8 TFLOPS on H800, 1.02x cuBLAS
 *              (deepseek-ai/DeepGEMM README).
 *   blackwell  no published achieved-bandwidth or GEMM figure found: the
 *              Hopper shares, flagged in the table.
 *   cdna3      bw 0.74: 3910.62 of 5300 GB/s, the HBM bandwidth AMD's
 *              rocprofiler-compute roofline test expects on MI300X
 *              (ROCm/rocm-systems PR 2934); flops: no representative
 *              published hipBLASLt figure found, the Ampere fit, flagged.
 */
static const struct {
	const char *name; /* family key */
	double eff_bw; /* achieved share of the memory bandwidth */
	double eff_flops; /* achieved share of the dense tensor rate */
} families[] = {
	{ "ampere", 0.83, 0.73 },
	{ "ada", 0.91, 0.96 },
	{ "hopper", 0.90, 0.78 },
	{ "blackwell", 0.90, 0.78 },
	{ "cdna3", 0.74, 0.73 },
};

int kv_device_family_defaults(struct kv_device *dev)
{
	size_t i;

	for (i = 0; i < KV_ARRAY_LEN(families); i++) {
		if (!strcmp(dev->family, families[i].name)) {
			dev->eff_bw = families[i].eff_bw;
			dev->eff_flops = families[i].eff_flops;
			return 0;
		}
	}
	return -1;
}

const char *kv_device_family_names(void)
{
	return "ampere, ada, hopper, blackwell, cdna3";
}

/* NaN-safe "v > 0" that names the field when it fails. */
static int positive(double v, const char *key, struct kv_diag *d, const char *file)
{
	if (v > 0 && isfinite(v))
		return 0;
	return kv_diag_set(d, KV_EINVAL, file, 0, 0, key, "must be positive, got %g", v);
}

/* Efficiencies are shares of a peak: (0, 1]. */
static int share(double v, const char *key, struct kv_diag *d, const char *file)
{
	if (v > 0 && v <= 1)
		return 0;
	return kv_diag_set(d, KV_EINVAL, file, 0, 0, key,
			   "must be a share of the peak in (0, 1], got %g", v);
}

int kv_device_validate(const struct kv_device *dev, struct kv_diag *d, const char *file)
{
	int err;

	if (dev->mem_bytes == 0)
		return kv_diag_set(d, KV_EINVAL, file, 0, 0, "memory", "must be positive");
	if ((err = positive(dev->mem_bw_Bps, "mem_bandwidth", d, file)) ||
	    (err = positive(dev->flops, "fp16_tflops", d, file)) ||
	    (err = positive(dev->host_link_Bps, "host_link_bandwidth", d, file)) ||
	    (err = share(dev->eff_bw, "perf.eff_bw", d, file)) ||
	    (err = share(dev->eff_flops, "perf.eff_flops", d, file)) ||
	    (dev->eff_attn != 0 && (err = share(dev->eff_attn, "perf.eff_attn", d, file))))
		return err;
	if (!(dev->interconnect_Bps >= 0) || !isfinite(dev->interconnect_Bps))
		return kv_diag_set(d, KV_EINVAL, file, 0, 0, "interconnect_bandwidth",
				   "must be >= 0 (0: no GPU-GPU link), got %g",
				   dev->interconnect_Bps);
	if (dev->link_type != KV_LINK_DATASHEET &&
	    (!(dev->link_busbw_Bps > 0) || !isfinite(dev->link_busbw_Bps)))
		return kv_diag_set(d, KV_EINVAL, file, 0, 0, "interconnect_busbw",
				   "must be positive with interconnect %s (the bus bandwidth nccl-tests reaches), got %g",
				   kv_link_name(dev->link_type), dev->link_busbw_Bps);
	if (!(dev->flops_fp8 >= 0) || !isfinite(dev->flops_fp8))
		return kv_diag_set(d, KV_EINVAL, file, 0, 0, "fp8_tflops",
				   "must be >= 0 (0: no fp8 tensor cores), got %g", dev->flops_fp8);
	if (!(dev->dequant_flops_per_byte >= 0) || !isfinite(dev->dequant_flops_per_byte))
		return kv_diag_set(d, KV_EINVAL, file, 0, 0, "perf.dequant_flops_per_byte",
				   "must be >= 0, got %g", dev->dequant_flops_per_byte);
	if (!(dev->alpha >= 1) || !isfinite(dev->alpha))
		return kv_diag_set(d, KV_EINVAL, file, 0, 0, "cost.alpha",
				   "must be >= 1 (weights are resident), got %g", dev->alpha);
	return 0;
}
