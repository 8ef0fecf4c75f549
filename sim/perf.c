/*
 * perf.c -- the iteration-time roofline of perf.h.
 *
 * kv_perf_init() folds the model, the device and the tensor-parallel degree
 * into a handful of per-GPU constants once per run; kv_perf_iter_ns() is
 * then a few multiply-adds per iteration.  All arithmetic is in double
 * nanoseconds, rounded up once at the end, so the same inputs give the same
 * duration on any IEEE-754 machine.
 */
#include "perf.h"

#include <assert.h>
#include <math.h>

/*
 * Ring all-reduce of one token's activations (hidden * dtype bytes) sends
 * 2(tp-1)/tp of the buffer over each GPU's link; a layer does two (after
 * attention and after the MLP).  Returns ns per batch token.
 */
static double allreduce_ns_per_token(const struct kv_model *m, const struct kv_device *dev,
				     uint32_t tp)
{
	double link_Bps = dev->interconnect_Bps > 0 ? dev->interconnect_Bps
						    : dev->host_link_Bps;
	double bytes = (double)m->hidden * m->dtype_bytes;
	double ring = 2.0 * (tp - 1) / tp;

	if (tp <= 1)
		return 0.0;
	return 2.0 * m->layers * ring * bytes / link_Bps * 1e9;
}

/* The GEMM peak: the fp8 rate for fp8 weights on a device with one, else fp16. */
static double gemm_flops(const struct kv_model *m, const struct kv_device *dev)
{
	return m->weight_dtype == KV_DTYPE_FP8 && dev->flops_fp8 > 0 ? dev->flops_fp8 : dev->flops;
}

void kv_perf_embed_lookup(struct kv_perf *pf)
{
	pf->weight_bytes_per_gpu -= pf->embed_bytes_per_gpu;
	pf->embed_bytes_per_gpu = 0.0;
}

void kv_perf_init(struct kv_perf *pf, const struct kv_model *m, const struct kv_device *dev,
		  uint32_t tp)
{
	assert(tp >= 1);
	pf->tp = tp;
	pf->gemm_half_tokens = 0.0; /* an engine sets it (serving.h perf hook) */
	pf->weight_bytes_per_gpu = kv_model_weight_read_bytes(m, 0.0, 0) / tp;
	pf->embed_bytes_per_gpu =
		m->tie_embeddings ? 0.0 : (double)m->vocab * m->hidden * m->dtype_bytes / tp;
	pf->moe_experts = m->experts;
	pf->moe_miss = m->experts ? 1.0 - (double)m->experts_per_token / m->experts : 1.0;
	pf->expert_bytes_per_gpu = (double)kv_model_moe_layers(m) * kv_model_expert_params(m) *
				   kv_dtype_bits(m->weight_dtype, m->dtype_bytes) / 8.0 / tp;
	pf->lin_flops_per_token =
		(kv_model_linear_flops_per_token(m) - kv_model_head_flops(m)) / tp;
	pf->head_flops_per_sample = kv_model_head_flops(m) / tp;
	pf->attn_flops_per_pair = kv_model_attn_flops_per_pair(m) / tp;
	pf->bw_Bps = dev->mem_bw_Bps * dev->eff_bw;
	pf->flops_per_s = gemm_flops(m, dev) * dev->eff_flops;
	pf->attn_flops_per_s = dev->flops * (dev->eff_attn > 0 ? dev->eff_attn : dev->eff_flops);
	pf->dequant_flops_per_byte = dev->dequant_flops_per_byte;
	pf->overhead_ns = (double)dev->overhead_ns;
	pf->per_seq_ns = (double)dev->per_seq_ns;
	pf->allreduce_ns_per_token = allreduce_ns_per_token(m, dev, tp);
	pf->allreduce_ns_fixed =
		tp > 1 ? 2.0 * m->layers * (double)dev->allreduce_latency_ns : 0.0;
}

/*
 * Linear layers: every weight read once (of a MoE layer's routed experts,
 * the E * (1 - (1 - k/E)^N) the batch's N tokens touch), F_lin FLOPs per
 * batch token (plus n_half tokens' worth in a batch with prefill, the GEMM
 * ramp of perf.h).
 */
static double linear_ns(const struct kv_perf *pf, uint64_t n_tokens, uint32_t n_sample,
			int has_prefill)
{
	double w = pf->weight_bytes_per_gpu;
	double mem, n, cmp;

	if (pf->moe_experts > 0)
		w += pf->expert_bytes_per_gpu * pf->moe_experts *
		     (1.0 - pow(pf->moe_miss, (double)n_tokens));
	mem = w / pf->bw_Bps;
	n = (double)n_tokens + (has_prefill ? pf->gemm_half_tokens : 0.0);
	cmp = (pf->lin_flops_per_token * n +
		      pf->head_flops_per_sample * (double)n_sample) /
		     pf->flops_per_s;

	return 1e9 * fmax(mem, cmp);
}

/* Attention: the KV this GPU's heads read, F_attn per pair plus dequantisation. */
static double attention_ns(const struct kv_perf *pf, const struct kv_batch_shape *b)
{
	double mem = (double)b->kv_read_bytes / pf->tp / pf->bw_Bps;
	double flops = pf->attn_flops_per_pair * (double)b->attn_pairs +
		       pf->dequant_flops_per_byte * (double)b->dequant_bytes / pf->tp;

	return 1e9 * fmax(mem, flops / pf->attn_flops_per_s);
}

kv_ns kv_perf_iter_ns(const struct kv_perf *pf, const struct kv_batch_shape *b)
{
	uint64_t n_tokens = b->n_decode + b->n_prefill_tokens;
	double t = pf->overhead_ns + pf->per_seq_ns * b->n_seqs;

	t += linear_ns(pf, n_tokens, b->n_sample, b->n_prefill_tokens > 0) + attention_ns(pf, b);
	if (pf->tp > 1)
		t += pf->allreduce_ns_per_token * (double)n_tokens + pf->allreduce_ns_fixed;
	t += (double)b->extra_ns;
	t = ceil(t);
	return t < 1.0 ? 1 : (kv_ns)t;
}
