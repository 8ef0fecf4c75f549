/*
 * test_moegemm.c -- the routed experts' grouped-GEMM efficiency (moegemm.h,
 * perf.h kv_perf_routed_eff): g(m) rises with the tokens per expert, tends
 * to 1 for large groups and to 0 for small ones, is m_ridge-scaled per
 * device, leaves dense models untouched, and makes a compute-bound MoE
 * prefill exactly F_dense / rate + F_routed / (P ec g(m)).
 */
#include "testutil.h"

#include <check.h>
#include <math.h>

#include "moegemm.h"
#include "perf.h"

#include "test_profiles.h"

/* g is 0 without tokens, rises strictly with the batch (m = N k / D(N) rises), stays below 1. */
START_TEST(test_eff_monotone)
{
	struct kv_model m = load_model("mixtral-8x7b");
	struct kv_device dev = load_device("h100-80g");
	struct kv_perf pf;
	double prev = 0.0, n;

	kv_perf_init(&pf, &m, &dev, 2);
	ck_assert(kv_perf_routed_eff(&pf, 0.0) == 0.0);
	for (n = 1; n <= 1 << 20; n *= 2) {
		double g = kv_perf_routed_eff(&pf, n);

		ck_assert_msg(g > prev && g < 1.0, "n %.0f: g %.6f after %.6f", n, g, prev);
		prev = g;
	}
}
END_TEST

/*
 * Limits: one token to top-2 of 8 experts gives each touched expert m = 1,
 * g = 1 / (1 + c m_ridge); 2^20 tokens give m = 2^18 (every expert, N k / E)
 * and g within 0.2% of 1.  m_ridge = P * weight bytes / (2 B): 989e12 * 2 /
 * (2 * 3.35e12) = 295.2 tokens on the H100 in bf16.
 */
START_TEST(test_eff_limits)
{
	struct kv_model m = load_model("mixtral-8x7b");
	struct kv_device dev = load_device("h100-80g");
	struct kv_perf pf;
	double ridge, half;

	kv_perf_init(&pf, &m, &dev, 2);
	ridge = dev.flops * 2.0 / (2.0 * dev.mem_bw_Bps);
	half = KV_MOEGEMM_C * ridge;
	ck_assert_msg(fabs(pf.routed_half_tokens - half) < 1e-9, "half %.6f want %.6f",
		      pf.routed_half_tokens, half);
	ck_assert(fabs(kv_perf_routed_tokens_per_expert(&pf, 1.0) - 1.0) < 1e-12);
	ck_assert(fabs(kv_perf_routed_eff(&pf, 1.0) - 1.0 / (1.0 + half)) < 1e-12);
	ck_assert(fabs(kv_perf_routed_tokens_per_expert(&pf, 1 << 20) - (1 << 18)) < 1e-6);
	ck_assert_msg(kv_perf_routed_eff(&pf, 1 << 20) > 0.998, "g %.6f",
		      kv_perf_routed_eff(&pf, 1 << 20));
	ck_assert(fabs(pf.routed_flops_per_s - dev.flops * KV_MOEGEMM_EC_BF16) < 1.0);
}
END_TEST

/* fp8 weights on a device with fp8 tensor cores: the fp8 rate and efficiency; the ridge scales by P_fp8 * 1 byte over P_bf16 * 2 bytes. */
START_TEST(test_eff_fp8)
{
	struct kv_model m = load_model("mixtral-8x7b");
	struct kv_device dev = load_device("h100-80g");
	struct kv_perf bf, f8;

	kv_perf_init(&bf, &m, &dev, 2);
	m.weight_dtype = KV_DTYPE_FP8;
	kv_perf_init(&f8, &m, &dev, 2);
	ck_assert(fabs(f8.routed_flops_per_s - dev.flops_fp8 * KV_MOEGEMM_EC_FP8) < 1.0);
	ck_assert_msg(fabs(f8.routed_half_tokens / bf.routed_half_tokens -
			   dev.flops_fp8 / (2.0 * dev.flops)) < 1e-12,
		      "fp8 half %.4f bf16 half %.4f (fp8 peak %.4g = 2 x %.4g)", f8.routed_half_tokens,
		      bf.routed_half_tokens, dev.flops_fp8, dev.flops);
	ck_assert(f8.routed_flops_per_s > bf.routed_flops_per_s);
}
END_TEST

/* A dense model has no routed term: every field 0, its FLOPs all in lin_flops_per_token. */
START_TEST(test_dense_untouched)
{
	struct kv_model m = load_model("llama-3.1-8b");
	struct kv_device dev = load_device("h100-80g");
	struct kv_perf pf;

	kv_perf_init(&pf, &m, &dev, 1);
	ck_assert(pf.routed_flops_per_token == 0.0 && pf.routed_flops_per_s == 0.0);
	ck_assert(kv_perf_routed_eff(&pf, 4096.0) == 0.0);
	ck_assert(pf.lin_flops_per_token ==
		  kv_model_linear_flops_per_token(&m) - kv_model_head_flops(&m));
}
END_TEST

/*
 * A compute-bound MoE step: a prefill of N tokens on an H100 whose
 * bandwidth is made huge, so the linear layers take exactly
 * (F_dense N + F_head) / (P eff) + F_routed N / (P ec g(m)); the routed
 * share is the experts' 2 L k expert_params / tp FLOPs per token.
 */
START_TEST(test_step_compute_bound)
{
	struct kv_model m = load_model("mixtral-8x7b");
	struct kv_device dev = load_device("h100-80g");
	struct kv_batch_shape b = { .n_seqs = 1, .n_sample = 1, .n_prefill_tokens = 2048 };
	struct kv_perf pf;
	double routed, dense, g, want;
	kv_ns got;

	dev.mem_bw_Bps *= 1e6;
	dev.overhead_ns = 0;
	kv_perf_init(&pf, &m, &dev, 1);
	routed = 2.0 * 32 * 2 * (double)kv_model_expert_params(&m);
	ck_assert(fabs(pf.routed_flops_per_token - routed) < 1.0);
	dense = kv_model_linear_flops_per_token(&m) - kv_model_head_flops(&m) - routed;
	g = kv_perf_routed_eff(&pf, 2048.0);
	want = 1e9 * ((dense * 2048 + kv_model_head_flops(&m)) / (dev.flops * dev.eff_flops) +
		      routed * 2048 / (dev.flops * KV_MOEGEMM_EC_BF16 * g));
	got = kv_perf_iter_ns(&pf, &b);
	ck_assert_msg(fabs((double)got - want) <= 2.0, "step %llu ns, want %.1f",
		      (unsigned long long)got, want);
}
END_TEST

static Suite *moegemm_suite(void)
{
	Suite *s = suite_create("moegemm");
	TCase *tc = tcase_create("core");

	tcase_add_test(tc, test_eff_monotone);
	tcase_add_test(tc, test_eff_limits);
	tcase_add_test(tc, test_eff_fp8);
	tcase_add_test(tc, test_dense_untouched);
	tcase_add_test(tc, test_step_compute_bound);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return kv_test_run_suite(moegemm_suite());
}
