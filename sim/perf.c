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

#include "moegemm.h"

#include <assert.h>
#include <math.h>
#include <string.h>

/*
 * Longest iteration returned, ns (2^62, 146 years): not a prediction but a
 * bound that keeps the double-to-kv_ns conversion defined when a profile's
 * rates are absurd (a bandwidth of 1e-300 GB/s gives an infinite time; NaN
 * gives the bound too).  Found with the profile fuzz target.
 */
#define PERF_MAX_NS 4611686018427387904.0

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

/* The device's link as comm.h sees it; a datasheet link falls back to the host link. */
static void perf_link(const struct kv_device *dev, struct kv_link *l)
{
	l->type = dev->link_type;
	l->fixed_ns = 0.0;
	l->overhead_ns = (double)dev->collective_overhead_ns;
	memcpy(l->busbw_n_Bps, dev->link_busbw_n_Bps, sizeof(l->busbw_n_Bps));
	if (dev->link_type != KV_LINK_DATASHEET) {
		l->busbw_Bps = dev->link_busbw_Bps;
		return;
	}
	l->busbw_Bps = dev->interconnect_Bps > 0 ? dev->interconnect_Bps : dev->host_link_Bps;
	l->fixed_ns = (double)dev->allreduce_latency_ns;
}

/* The GEMM peak: the fp8 rate for fp8 weights on a device with one, else fp16. */
static double gemm_flops(const struct kv_model *m, const struct kv_device *dev)
{
	return m->weight_dtype == KV_DTYPE_FP8 && dev->flops_fp8 > 0 ? dev->flops_fp8 : dev->flops;
}

/*
 * The routed experts' grouped GEMM (moegemm.h): their FLOPs per batch token
 * leave lin_flops_per_token and run at P_dtype * ec_dtype * g(m).  A dense
 * model keeps every field 0 and its FLOPs where they were.
 */
static void perf_init_routed(struct kv_perf *pf, const struct kv_model *m,
			     const struct kv_device *dev)
{
	double imb = m->expert_imbalance > 1 ? m->expert_imbalance : 1.0;
	double P = gemm_flops(m, dev);
	int fp8 = m->weight_dtype == KV_DTYPE_FP8 && dev->flops_fp8 > 0;
	double wbytes = kv_dtype_bits(m->weight_dtype, m->dtype_bytes) / 8.0;

	if (!m->experts || !kv_model_moe_layers(m))
		return;
	pf->moe_k = m->experts_per_token;
	pf->routed_flops_per_token = 2.0 * kv_model_moe_layers(m) * m->experts_per_token *
				     (double)kv_model_expert_params(m) * imb / pf->tp;
	pf->lin_flops_per_token -= pf->routed_flops_per_token;
	pf->routed_flops_per_s = P * (fp8 ? KV_MOEGEMM_EC_FP8 : KV_MOEGEMM_EC_BF16);
	pf->routed_half_tokens = KV_MOEGEMM_C * P * wbytes / (2.0 * dev->mem_bw_Bps);
}

double kv_perf_routed_tokens_per_expert(const struct kv_perf *pf, double n_routed)
{
	double d;

	if (pf->routed_flops_per_token <= 0 || n_routed <= 0)
		return 0.0;
	d = pf->moe_experts * (1.0 - pow(pf->moe_miss, n_routed));
	return d > 0 ? n_routed * pf->moe_k / d : n_routed * pf->moe_k;
}

double kv_perf_routed_eff(const struct kv_perf *pf, double n_routed)
{
	double m = kv_perf_routed_tokens_per_expert(pf, n_routed);

	return m > 0 ? m / (m + pf->routed_half_tokens) : 0.0;
}

/*
 * Seconds the routed experts' GEMMs take over n_tokens batch tokens whose
 * routing touches the experts of n_routed tokens (the group's, under
 * data-parallel attention, with the rows each rank's CUDA graph pads;
 * else n_tokens), at routed_flops_per_s times
 * kv_perf_routed_eff().  0 for a dense model.
 */
static double routed_s(const struct kv_perf *pf, double n_tokens, double n_routed)
{
	double g = kv_perf_routed_eff(pf, n_routed);

	if (g <= 0 || n_tokens <= 0)
		return 0.0;
	return pf->routed_flops_per_token * n_tokens / (pf->routed_flops_per_s * g);
}

void kv_perf_set_embed_lookup(struct kv_perf *pf, int lookup)
{
	double charged = lookup ? 0.0 : pf->embed_table_bytes_per_gpu;

	pf->weight_bytes_per_gpu += charged - pf->embed_bytes_per_gpu;
	pf->embed_bytes_per_gpu = charged;
}

void kv_perf_embed_lookup(struct kv_perf *pf)
{
	kv_perf_set_embed_lookup(pf, 1);
}

void kv_perf_init(struct kv_perf *pf, const struct kv_model *m, const struct kv_device *dev,
		  uint32_t tp)
{
	struct kv_parallel par = { .tp = tp, .pp = 1, .ep = 1 };

	kv_perf_init_parallel(pf, m, dev, &par);
}

void kv_perf_init_parallel(struct kv_perf *pf, const struct kv_model *m,
			   const struct kv_device *dev, const struct kv_parallel *par)
{
	uint32_t tp = par->tp;

	assert(tp >= 1 && par->pp >= 1 && par->ep >= 1);
	memset(pf, 0, sizeof(*pf));
	pf->tp = tp;
	pf->step_scale = 1.0;
	pf->gemm_half_tokens = 0.0; /* an engine sets it (serving.h perf hook) */
	pf->weight_bytes_per_gpu = kv_model_weight_read_bytes(m, 0.0, 0) / tp;
	pf->embed_table_bytes_per_gpu =
		m->tie_embeddings ? 0.0 : (double)m->vocab * m->hidden * m->dtype_bytes / tp;
	pf->embed_bytes_per_gpu = pf->embed_table_bytes_per_gpu;
	kv_perf_set_embed_lookup(pf, KV_PERF_EMBED_LOOKUP_DEFAULT);
	pf->moe_experts = m->experts;
	pf->moe_miss = m->experts ? 1.0 - (double)m->experts_per_token / m->experts : 1.0;
	/* routed experts are sharded over the ep GPUs under expert parallelism, else over tp */
	pf->expert_bytes_per_gpu = (double)kv_model_moe_layers(m) * kv_model_expert_params(m) *
				   kv_dtype_bits(m->weight_dtype, m->dtype_bytes) / 8.0 /
				   (par->ep > 1 ? par->ep : tp);
	pf->lin_flops_per_token =
		(kv_model_linear_flops_per_token(m) - kv_model_head_flops(m)) / tp;
	perf_init_routed(pf, m, dev);
	pf->head_flops_per_sample = kv_model_head_flops(m) / tp;
	pf->attn_flops_per_pair = kv_model_attn_flops_per_pair(m) / tp;
	pf->window_frac = (double)kv_model_window_layers(m) / m->layers;
	pf->bw_Bps = dev->mem_bw_Bps * dev->eff_bw;
	pf->flops_per_s = gemm_flops(m, dev) * dev->eff_flops;
	pf->attn_flops_per_s = dev->flops * (dev->eff_attn > 0 ? dev->eff_attn : dev->eff_flops);
	pf->dequant_flops_per_byte = dev->dequant_flops_per_byte;
	pf->overhead_ns = (double)dev->overhead_ns;
	pf->per_seq_ns = (double)dev->per_seq_ns;
	pf->allreduce_ns_per_token = allreduce_ns_per_token(m, dev, tp);
	pf->allreduce_ns_fixed =
		tp > 1 ? 2.0 * m->layers *
				 (double)(dev->allreduce_latency_ns + dev->collective_overhead_ns)
		       : 0.0;
	perf_link(dev, &pf->link);
	pf->nccl = dev->link_type != KV_LINK_DATASHEET;
	kv_comm_allreduce_init(&pf->ar, &pf->link, tp);
	pf->ar_bytes_per_token = (double)m->hidden * m->dtype_bytes;
	pf->ar_per_iter = 2.0 * m->layers;
	pf->pp = par->pp;
	pf->stage_frac = (double)((m->layers + par->pp - 1) / par->pp) / m->layers;
	pf->head_flops_on_stage = pf->head_flops_per_sample;
	pf->dp = par->dp > 1 ? par->dp : 1;
	pf->ep = par->ep;
	pf->layers = m->layers;
	kv_perf_set_moe_ep(pf, kv_model_moe_layers(m), kv_model_moe_dispatch_bytes_per_token(m),
			   par->ep);
}

void kv_perf_set_moe_ep(struct kv_perf *pf, uint32_t moe_layers,
			double dispatch_bytes_per_token, uint32_t ep)
{
	assert(ep >= 1 && dispatch_bytes_per_token >= 0);
	pf->ep = ep;
	pf->ep_moe_layers = ep > 1 ? (double)moe_layers : 0.0;
	pf->ep_bytes_per_token = dispatch_bytes_per_token;
}

double kv_perf_moe_ep_ns(const struct kv_perf *pf, double n_tokens)
{
	if (pf->ep <= 1 || pf->ep_moe_layers <= 0)
		return 0.0;
	return 2.0 * pf->ep_moe_layers *
	       kv_comm_alltoall_ns(&pf->link, n_tokens * pf->ep_bytes_per_token, pf->ep);
}

void kv_perf_set_comm(struct kv_perf *pf, const struct kv_comm_car *car, double sync_ns)
{
	assert(sync_ns >= 0);
	kv_comm_allreduce_init(&pf->ar, &pf->link, pf->tp);
	if (pf->nccl)
		kv_comm_allreduce_set_car(&pf->ar, &pf->link, car);
	pf->host.worker_sync_ns = pf->tp * pf->pp > 1 ? sync_ns : 0.0; /* a host term (host.h) */
}

double kv_perf_allreduce_ns(const struct kv_perf *pf, double n_tokens)
{
	if (pf->tp <= 1)
		return 0.0;
	if (!pf->nccl)
		return pf->allreduce_ns_per_token * n_tokens + pf->allreduce_ns_fixed;
	return pf->ar_per_iter * kv_comm_allreduce_ns(&pf->ar, n_tokens * pf->ar_bytes_per_token);
}

void kv_perf_stage_model(const struct kv_model *m, uint32_t pp, struct kv_model *out)
{
	uint32_t layers = (m->layers + pp - 1) / pp;

	assert(pp >= 1);
	*out = *m;
	if (pp == 1)
		return;
	out->layers = layers;
	out->params = (uint64_t)ceil((double)m->params * layers / m->layers);
}

/*
 * fmax(a, b) inline: the libm call (it is not inlined, for its NaN rule)
 * cost more than the comparison.  The same value whenever one argument is
 * not a NaN; of a +0/-0 pair it may return the other zero, which changes
 * no sum here (every term is added to a positive overhead).
 */
static inline double max_d(double a, double b)
{
	return a >= b || b != b ? a : b;
}

/*
 * Linear layers: every weight read once (of a MoE layer's routed experts,
 * the E * (1 - (1 - k/E)^N) the batch's N tokens touch), F_lin FLOPs per
 * batch token (plus n_half tokens' worth in a batch with prefill, the GEMM
 * ramp of perf.h).
 */
/*
 * Weight bytes one GPU reads in a pass over n_tokens batch tokens: the dense
 * weights, plus, of a MoE layer's routed experts, the expected share
 * 1 - (1 - k/E)^N that the tokens touch.
 */
static double weights_read_bytes(const struct kv_perf *pf, double n_tokens)
{
	double w = pf->weight_bytes_per_gpu;

	if (pf->moe_experts > 0)
		w += pf->expert_bytes_per_gpu * pf->moe_experts * (1.0 - pow(pf->moe_miss, n_tokens));
	return w;
}

static double linear_ns(const struct kv_perf *pf, uint64_t n_tokens, uint32_t n_sample,
			int has_prefill)
{
	double mem, n, cmp;

	mem = weights_read_bytes(pf, (double)n_tokens) / pf->bw_Bps;
	n = (double)n_tokens + (has_prefill ? pf->gemm_half_tokens : 0.0);
	cmp = (pf->lin_flops_per_token * n +
		      pf->head_flops_per_sample * (double)n_sample) /
		     pf->flops_per_s;
	if (pf->routed_flops_per_token > 0)
		cmp += routed_s(pf, (double)n_tokens, (double)n_tokens);

	return 1e9 * max_d(mem, cmp);
}

/* Query-context pairs the layers compute: windowed layers skip keys older than the window. */
static double attn_pairs(const struct kv_perf *pf, const struct kv_batch_shape *b)
{
	return (double)b->attn_pairs - pf->window_frac * (double)b->window_skip_pairs;
}

/* Attention: the KV this GPU's heads read, F_attn per pair plus dequantisation. */
static double attention_ns(const struct kv_perf *pf, const struct kv_batch_shape *b)
{
	/* x / 1.0 is x exactly: no division by tp when it is 1 */
	double mem = pf->tp == 1 ? (double)b->kv_read_bytes / pf->bw_Bps
				 : (double)b->kv_read_bytes / pf->tp / pf->bw_Bps;
	double dq = pf->dequant_flops_per_byte * (double)b->dequant_bytes;
	double flops = pf->attn_flops_per_pair * attn_pairs(pf, b) + (pf->tp == 1 ? dq : dq / pf->tp);

	return 1e9 * max_d(mem, flops / pf->attn_flops_per_s);
}

/*
 * One pipeline cycle (perf.h): m = min(pp, S) micro-batches of N/m tokens,
 * a stage runs stage_frac of the layers on one of them and sends its
 * activations on; every sequence advances once per pp stage times.
 */
static double pipeline_ns(const struct kv_perf *pf, const struct kv_batch_shape *b,
			  uint64_t n_tokens)
{
	double m = (double)KV_MIN(pf->pp, KV_MAX(b->n_seqs, 1U));
	double f = pf->stage_frac, n = (double)n_tokens / m;
	double half = b->n_prefill_tokens > 0 ? pf->gemm_half_tokens : 0.0;
	double lin_mem = weights_read_bytes(pf, n) * f / pf->bw_Bps;
	double lin_cmp = (pf->lin_flops_per_token * f * (n + half) +
			  pf->head_flops_on_stage * (double)b->n_sample / m) / pf->flops_per_s +
			 f * routed_s(pf, n, n);
	double attn_mem = (double)b->kv_read_bytes / m / pf->tp * f / pf->bw_Bps;
	double attn_flops = (pf->attn_flops_per_pair * attn_pairs(pf, b) +
			     pf->dequant_flops_per_byte * (double)b->dequant_bytes / pf->tp) * f / m;
	double stage = 1e9 * (max_d(lin_mem, lin_cmp) + max_d(attn_mem, attn_flops / pf->attn_flops_per_s));

	stage += f * (kv_perf_allreduce_ns(pf, n) + kv_perf_moe_ep_ns(pf, n));
	stage += kv_comm_p2p_ns(&pf->link, n * pf->ar_bytes_per_token);
	return pf->pp * stage;
}

/*
 * The batch the linear layers compute for (host.h): a decode-only step of
 * n sequences with a captured CUDA graph runs g >= n rows (tokens and
 * sampled rows both padded to g); any other step keeps its own and is eager
 * (returns 1) when the host model has a launch floor.
 */
static int graph_batch(const struct kv_perf *pf, const struct kv_batch_shape *b,
		       uint64_t *n_tokens, uint32_t *n_sample)
{
	uint32_t g;

	if (!pf->host.on)
		return 0;
	g = b->n_prefill_tokens == 0 ? kv_host_graph_size(&pf->host, b->n_decode) : 0;
	if (!g)
		return pf->host.eager_ns > 0;
	*n_tokens = g;
	*n_sample = g;
	return 0;
}

/*
 * The terms of one step, ns, as the entry points below compute them; one
 * core (step_ns) adds them up.  kern is the linear layers plus attention,
 * or a whole pipeline cycle (ar and moe then 0).
 */
struct step_terms {
	double head; /* overhead + per_seq * S, ns */
	double kern; /* linear + attention, or the pipeline cycle, ns */
	double ar; /* tensor-parallel all-reduce, ns (0 when tp == 1) */
	double moe; /* expert-parallel all-to-alls, ns */
	int eager; /* 1: the step runs eagerly (the host's launch floor applies) */
	double cpu; /* the host's CPU time of the step, ns (0 with the host model off) */
	int lockstep; /* a data-parallel group's step: its own order of additions (below) */
};

static double step_head_ns(const struct kv_perf *pf, uint32_t n_seqs)
{
	return pf->overhead_ns + pf->per_seq_ns * n_seqs;
}

/*
 * The step's time from its terms: the GPU's, extra_ns, the host's
 * combination (host.h: CPU time and the workers' sync), then step_scale,
 * rounded up and bounded.  The order of the additions is part of the
 * result (golden digests): with the host model on the kernels are summed
 * first (the launch floor applies to them); without it the legacy path adds
 * term by term, and a lockstep group adds its kernels and extra_ns first.
 * Rejected: one order for all three, which moves the last bit of some
 * legacy runs' steps and with it their digests.
 */
static kv_ns step_ns(const struct kv_perf *pf, const struct kv_batch_shape *b,
		     const struct step_terms *s)
{
	double t = s->head, k;

	if (pf->host.on) {
		k = s->kern + s->ar + s->moe;
		t += s->eager ? kv_host_eager_ns(&pf->host, k) : k;
		t += (double)b->extra_ns;
	} else if (s->lockstep) {
		t += s->kern + s->ar + s->moe + (double)b->extra_ns;
	} else {
		t += s->kern;
		t += s->ar;
		t += s->moe;
		t += (double)b->extra_ns;
	}
	t = kv_host_step_ns(&pf->host, b, s->cpu, t);
	t = ceil(t * pf->step_scale); /* the whole step, host included (load.h's sensitivity runs); x * 1.0 is x */
	return t < 1.0 ? 1 : t < PERF_MAX_NS ? (kv_ns)t : (kv_ns)PERF_MAX_NS;
}

static uint64_t ceil_div_u64(uint64_t x, uint32_t d)
{
	return x / d + (x % d != 0);
}

/* ceil(x * num / den) without overflow for num <= den, den > 0. */
static uint64_t share_ceil(uint64_t x, uint64_t num, uint64_t den)
{
	return x / den * num + ceil_div_u64(x % den * num, (uint32_t)den);
}

void kv_perf_dp_rank_shape(const struct kv_batch_shape *b, uint32_t dp,
			   struct kv_batch_shape *rank)
{
	uint64_t s = b->n_seqs, sr;

	assert(dp >= 1);
	*rank = *b;
	if (dp == 1 || s == 0)
		return;
	sr = ceil_div_u64(s, dp);
	rank->n_seqs = (uint32_t)sr;
	rank->n_decode = (uint32_t)ceil_div_u64(b->n_decode, dp);
	rank->n_sample = (uint32_t)ceil_div_u64(b->n_sample, dp);
	rank->n_prefill_tokens = KV_MIN(b->n_prefill_tokens,
					KV_MAX(ceil_div_u64(b->n_prefill_tokens, dp),
					       b->max_chunk_tokens));
	rank->attn_pairs = KV_MIN(b->attn_pairs, KV_MAX(share_ceil(b->attn_pairs, sr, s),
							b->max_chunk_pairs));
	rank->kv_read_bytes = share_ceil(b->kv_read_bytes, sr, s);
	rank->dequant_bytes = share_ceil(b->dequant_bytes, sr, s);
	rank->window_skip_pairs = KV_MIN(rank->attn_pairs,
					 b->window_skip_pairs - share_ceil(b->window_skip_pairs,
									   s - sr, s));
}

/*
 * The slowest rank's step (perf.h): its own share of the dense layers and
 * attention, the experts its GPU holds touched by the whole group's tokens,
 * and the all-to-alls over ep ranks of its own tokens.  With the host model
 * on, the rank's decode batch is padded to its captured CUDA graph as a
 * single replica's is (every rank runs the graph of the group's padded
 * size; the rank's share is the slowest one's) and its engine core
 * schedules its own share.
 */
kv_ns kv_perf_dp_iter_ns(const struct kv_perf *pf, const struct kv_batch_shape *b)
{
	struct kv_batch_shape r;
	struct step_terms s = { .lockstep = 1 };
	uint64_t n_group = b->n_decode + b->n_prefill_tokens, n_rank, n_lin;
	uint32_t n_sample;
	double mem, cmp, n;

	kv_perf_dp_rank_shape(b, pf->dp, &r);
	n_rank = r.n_decode + r.n_prefill_tokens;
	n_lin = n_rank;
	n_sample = r.n_sample;
	s.eager = graph_batch(pf, &r, &n_lin, &n_sample);
	s.head = step_head_ns(pf, r.n_seqs);
	mem = weights_read_bytes(pf, (double)n_group) / pf->bw_Bps;
	n = (double)n_lin + (r.n_prefill_tokens > 0 ? pf->gemm_half_tokens : 0.0);
	cmp = (pf->lin_flops_per_token * n + pf->head_flops_per_sample * (double)n_sample) /
	      pf->flops_per_s;
	if (pf->routed_flops_per_token > 0)
		cmp += routed_s(pf, (double)n_lin, (double)(n_group + (n_lin - n_rank) * pf->dp));
	s.kern = 1e9 * max_d(mem, cmp) + attention_ns(pf, &r);
	s.ar = pf->tp > 1 ? kv_perf_allreduce_ns(pf, (double)n_rank) : 0.0;
	s.moe = kv_perf_moe_ep_ns(pf, (double)n_rank);
	s.cpu = kv_host_cpu_ns(&pf->host, &r);
	return step_ns(pf, b, &s);
}

kv_ns kv_perf_iter_ns(const struct kv_perf *pf, const struct kv_batch_shape *b)
{
	uint64_t n_tokens = b->n_decode + b->n_prefill_tokens, n_lin = n_tokens;
	uint32_t n_sample = b->n_sample;
	struct step_terms s = { .head = step_head_ns(pf, b->n_seqs) };

	if (pf->dp > 1)
		return kv_perf_dp_iter_ns(pf, b);
	s.cpu = kv_host_cpu_ns(&pf->host, b);
	if (pf->pp > 1) {
		s.kern = pipeline_ns(pf, b, n_tokens);
		return step_ns(pf, b, &s);
	}
	s.eager = graph_batch(pf, b, &n_lin, &n_sample);
	s.kern = linear_ns(pf, n_lin, n_sample, b->n_prefill_tokens > 0) + attention_ns(pf, b);
	s.ar = pf->tp > 1 ? kv_perf_allreduce_ns(pf, (double)n_tokens) : 0.0;
	s.moe = kv_perf_moe_ep_ns(pf, (double)n_tokens);
	return step_ns(pf, b, &s);
}

void kv_perf_iter_prep(const struct kv_perf *pf, const struct kv_batch_shape *b,
		       struct kv_perf_run *run)
{
	uint64_t n_tokens = b->n_decode + b->n_prefill_tokens, n_lin = n_tokens;
	uint32_t n_sample = b->n_sample;

	run->eager = graph_batch(pf, b, &n_lin, &n_sample);
	run->cpu_ns = kv_host_cpu_ns(&pf->host, b);
	run->head_ns = step_head_ns(pf, b->n_seqs);
	run->lin_ns = linear_ns(pf, n_lin, n_sample, b->n_prefill_tokens > 0);
	run->ar_ns = pf->tp > 1 ? kv_perf_allreduce_ns(pf, (double)n_tokens) : 0.0;
	run->moe_ns = kv_perf_moe_ep_ns(pf, (double)n_tokens);
	run->skip_pairs = pf->window_frac * (double)b->window_skip_pairs;
	run->dequant_flops = pf->dequant_flops_per_byte * (double)b->dequant_bytes;
	if (pf->tp != 1)
		run->dequant_flops /= pf->tp;
}

/*
 * attention_ns for a step of a run: the window and dequantisation terms
 * from kv_perf_iter_prep, and no division by tp when it is 1 (x / 1.0 is
 * x exactly): two divisions instead of four, the same result bit for bit.
 */
static double run_attention_ns(const struct kv_perf *pf, const struct kv_perf_run *run,
			       const struct kv_batch_shape *b)
{
	double mem = pf->tp == 1 ? (double)b->kv_read_bytes / pf->bw_Bps
				 : (double)b->kv_read_bytes / pf->tp / pf->bw_Bps;
	double flops = pf->attn_flops_per_pair * ((double)b->attn_pairs - run->skip_pairs) +
		       run->dequant_flops;

	return 1e9 * max_d(mem, flops / pf->attn_flops_per_s);
}

kv_ns kv_perf_iter_run_ns(const struct kv_perf *pf, const struct kv_perf_run *run,
			  const struct kv_batch_shape *b)
{
	struct step_terms s = { .head = run->head_ns, .eager = run->eager, .cpu = run->cpu_ns };

	if (pf->pp > 1 || pf->dp > 1)
		return kv_perf_iter_ns(pf, b); /* a pipeline cycle, a lockstep group: every term */
	/* kv_perf_iter_ns's terms, the attention's from the prepared run */
	s.kern = run->lin_ns + run_attention_ns(pf, run, b);
	s.ar = pf->tp > 1 ? run->ar_ns : 0.0;
	s.moe = run->moe_ns;
	return step_ns(pf, b, &s);
}
