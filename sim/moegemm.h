/*
 * moegemm.h -- the grouped-GEMM efficiency of a MoE layer's routed experts.
 *
 * A MoE layer multiplies each touched expert's weights by the m tokens
 * routed to it: N batch tokens, top-k of E experts, D(N) = E(1 - (1 -
 * k/E)^N) distinct experts touched, m = N k / D(N) tokens per expert.
 * Small groups cannot fill the tensor cores (tiles of 64-128 rows, one
 * launch for many small GEMMs); large ones approach the kernel's peak
 * share.  The routed experts' FLOPs therefore run at
 *
 *   P_dtype * ec_dtype * g(m),   g(m) = m / (m + c * m_ridge),
 *   m_ridge = P_dtype * weight_bytes / (2 * B)
 *
 * with P_dtype the device's dense rate for the GEMM's dtype (fp8 for fp8
 * weights on a device with fp8 tensor cores, else fp16/bf16), B its
 * memory bandwidth and m_ridge the tokens per expert at which a GEMM over
 * those weights turns from memory- to compute-bound on the device.  The
 * scaling by m_ridge carries the curve to any device from its datasheet.
 *
 * The three coefficients below are fitted by bench/moe_gemm_fit.c
 * (configs/moe/gemm-fit.sh) to published kernel figures
 * (configs/moe/gemm-kernels.csv: vLLM fused_moe benchmarks on H100, H200,
 * A100 and L40S, DeepGEMM's grouped and dense fp8 tables on H800), with
 * every third figure held out (docs/perf-model.md, "Grouped-GEMM
 * efficiency"); `meson test moe_gemm_fit` checks they are still the fit's.
 */
#ifndef KV_MOEGEMM_H
#define KV_MOEGEMM_H

/* Large-group efficiency of a bf16/fp16 grouped GEMM: share of the dense fp16 peak. */
#define KV_MOEGEMM_EC_BF16 0.559
/* Large-group efficiency of an fp8 grouped GEMM: share of the dense fp8 peak. */
#define KV_MOEGEMM_EC_FP8 0.622
/* Half-efficiency point in units of the device's ridge m_ridge (dimensionless). */
#define KV_MOEGEMM_C 0.364

/* Where the three come from (kvsim list models). */
#define KV_MOEGEMM_SOURCE                                                                       \
	"fitted by configs/moe/gemm-fit.sh to configs/moe/gemm-kernels.csv (vLLM PRs 24700, "   \
	"40542, 44818, 53710 fused_moe kernel times; DeepGEMM README fp8 tables), every third " \
	"figure held out (docs/perf-model.md, Grouped-GEMM efficiency)"

#endif /* KV_MOEGEMM_H */
