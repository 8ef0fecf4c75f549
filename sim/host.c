/*
 * host.c -- the host model of host.h: a step's CPU time from its shape, the
 * combination with the GPU's time, and CUDA-graph batch sizes.
 */
#include "host.h"

#include "perf.h"

#include <assert.h>

/* The CPU time before the forward pass: scheduling, inputs, block tables, hashing, ns. */
static double pre_ns(const struct kv_host *h, const struct kv_batch_shape *b)
{
	double S = (double)b->n_seqs;
	double N = (double)(b->n_decode + b->n_prefill_tokens);
	double blocks = N * h->inv_block_tokens; /* new tokens fill N / B blocks */

	return h->sched_ns + S * h->sched_seq_ns + N * h->prep_token_ns + S * h->prep_seq_ns +
	       blocks * (h->block_ns + h->hash_ns);
}

/* The CPU time after it: sampling, output processing, in-engine detokenisation, ns. */
static double out_ns(const struct kv_host *h, const struct kv_batch_shape *b)
{
	return (double)b->n_sample * (h->sample_ns + h->detok_ns);
}

double kv_host_cpu_ns(const struct kv_host *h, const struct kv_batch_shape *b)
{
	if (!h->on)
		return 0.0;
	return pre_ns(h, b) + out_ns(h, b);
}

static inline double max_d(double a, double b)
{
	return a >= b ? a : b;
}

/* Driving the workers of one scheduling pass of shape b: w = worker_sync + S * worker_seq, ns. */
static double workers_ns(const struct kv_host *h, const struct kv_batch_shape *b)
{
	return h->worker_sync_ns + (double)b->n_seqs * h->worker_seq_ns; /* + 0.0: worker_sync unchanged */
}

/* A step whose pre-forward host work (workers' sync included) is pre: output processing after or beside the GPU. */
static double sync_step(const struct kv_host *h, double pre, double out, double gpu_ns)
{
	return pre + (h->output_async ? max_d(gpu_ns, out) : out + gpu_ns);
}

double kv_host_step_ns(const struct kv_host *h, const struct kv_batch_shape *b, double cpu_ns,
		       double gpu_ns)
{
	double w = workers_ns(h, b), out, pre;

	if (!h->on) /* x + 0.0 is x: one GPU's step is unchanged */
		return gpu_ns + w;
	switch (h->mode) {
	case KV_HOST_ASYNC:
		return max_d(cpu_ns + w, gpu_ns) + h->sync_ns;
	case KV_HOST_MULTISTEP:
		out = out_ns(h, b);
		pre = cpu_ns - out + w;
		/* one scheduling pass serves n decode steps; a step with prefill is scheduled alone */
		if (b->n_prefill_tokens == 0 && h->steps > 1)
			pre /= h->steps;
		return sync_step(h, pre, out, gpu_ns);
	case KV_HOST_SYNC:
	default:
		out = out_ns(h, b);
		return sync_step(h, cpu_ns - out + w, out, gpu_ns);
	}
}

const char *kv_host_mode_name(enum kv_host_mode m)
{
	return m == KV_HOST_ASYNC ? "async" : m == KV_HOST_MULTISTEP ? "multi-step" : "sync";
}

const char *kv_host_coef_key(enum kv_host_coef i)
{
	static const char *const keys[] = {
#define KV__HOST_KEY(e, key, field) key,
		KV_HOST_COEFS(KV__HOST_KEY)
#undef KV__HOST_KEY
	};

	assert((unsigned)i < KV_HOST_NCOEF);
	return keys[i];
}

double *kv_host_coef(struct kv_host *h, enum kv_host_coef i)
{
	switch (i) {
#define KV__HOST_REF(e, key, field) case KV_HOSTC_##e: return &h->field;
		KV_HOST_COEFS(KV__HOST_REF)
#undef KV__HOST_REF
	default:
		assert(0);
		return &h->sched_ns;
	}
}

uint32_t kv_host_graph_size(const struct kv_host *h, uint32_t n)
{
	uint32_t g;

	if (n == 0)
		return 0;
	g = n <= 2 ? n : n <= 4 ? 4 : (n + 7) / 8 * 8; /* 1, 2, 4, then multiples of 8 */
	return g <= h->graph_max ? g : 0;
}
