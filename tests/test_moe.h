/*
 * test_moe.h -- Mixtral-8x7B on H200s at tp 2, the MoE step the perf tests
 * recompute by hand (test_models.c, test_moe_dp.c), from the shipped
 * profiles: 32 layers of 32 query heads of 128 and 131072 KV bytes a token,
 * 8 routed experts of 352321536 bytes in every layer (top 2), 3211272192
 * non-expert bytes of which the input embedding is 262144000; NVLink at 370
 * GB/s bus bandwidth and comm.h's fitted all-to-all, 10.8 us + (n - 1) / n
 * x bytes / (busbw x 0.914) over n ranks.
 */
#ifndef KV_TEST_MOE_H
#define KV_TEST_MOE_H

#include <check.h>
#include <math.h>

#include "perf.h"

/* A batch of n decodes (each sampling) holding pairs attention pairs and their KV in all. */
static inline struct kv_batch_shape mixtral_decodes(uint32_t n, uint64_t pairs)
{
	struct kv_batch_shape b = { .n_seqs = n, .n_decode = n, .n_sample = n,
				    .attn_pairs = pairs, .kv_read_bytes = pairs * 131072 };

	return b;
}

/* Attention at tp 2, s: reading pairs tokens' KV or their FLOPs, whichever takes longer. */
static inline double mixtral_attn_s(const struct kv_device *dev, double pairs)
{
	return fmax(pairs * 131072 / 2 / (dev->mem_bw_Bps * dev->eff_bw),
		    4.0 * 32 * 32 * 128 * pairs / 2 / (dev->flops * dev->eff_flops));
}

/* A dispatch and a combine all-to-all in each of the 32 MoE layers, ns: tokens of 16384 bytes (top 2 x 4096 x 2) over ranks. */
static inline double mixtral_a2a_ns(double tokens, double ranks)
{
	return 2.0 * 32 * (10800.0 + (ranks - 1) / ranks * tokens * 16384.0 / (370e9 * 0.914) * 1e9);
}

/* Asserts that b's step on pf is want ns, within the 1 ns the model's rounding up takes. */
static inline void check_iter_ns(const struct kv_perf *pf, const struct kv_batch_shape *b,
				 double want)
{
	kv_ns got = kv_perf_iter_ns(pf, b);

	ck_assert_msg(fabs((double)got - want) <= 1.0, "got %llu want %.0f",
		      (unsigned long long)got, want);
}

#endif /* KV_TEST_MOE_H */
