/*
 * fuzz_profile.c -- libFuzzer target for the model, device and host profile
 * readers (src/lib/profile_load.c over src/lib/cfg_*.c, and the validation
 * of sim/profile.c).  Users write their own profiles, so both readers take
 * any bytes.
 *
 * Each input is read both as a model profile and as a device profile
 * (kv_profile_load_model_mem, kv_profile_load_device_mem), reported as
 * configs/models/fuzz.yaml and configs/devices/fuzz.yaml.  The contract: 0,
 * or a KV_E* code with a message; never a crash, a leak or a hang.  A second
 * read of the same bytes gives the same answer.  A profile that loads must
 * give sane derived numbers: the architecture's parameter count, computed
 * again in long double, agrees with the integer one (no uint64_t wrap), and
 * so do the KV bytes per token; KV bytes, weight bytes and FLOPs are
 * positive and finite; the expected distinct experts stay within [0, E]; a
 * device's rates and coefficients are finite and in range.  Then the perf
 * model (sim/perf.c) runs the profile against a stock partner (a model on
 * configs/devices/a100-80g.yaml, a device under configs/models/llama-2-7b.yaml)
 * at TP 1, 2 and 8: a decode step and a prefill step must take at least 1 ns
 * (UBSan catches a duration too large for kv_ns).  Read as a host profile
 * (kv_profile_load_host_mem, configs/hosts/fuzz.yaml) the same bytes must
 * load the same twice, with cpu_speed in [0.01, 100] and every coefficient
 * it sets finite and at least 0.
 */
#include "fuzz.h"
#include "perf.h"
#include "profile_load.h"

#include <math.h>
#include <stdint.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* kv_model_arch_params() again, in long double: no wrap, for comparison. */
static long double arch_params_ld(const struct kv_model *m)
{
	long double h = m->hidden, hd = m->head_dim, nh = m->heads, r = m->qk_rope_head_dim;
	long double attn, mlp, moe_mlp, emb, e;
	long double moe = m->experts ? (long double)m->layers - m->dense_layers : 0;

	if (!m->kv_lora_rank) {
		attn = h * hd * (2 * nh + 2.0L * m->kv_heads) +
		       (m->qkv_bias ? hd * (nh + 2.0L * m->kv_heads) : 0) +
		       (m->qk_norm ? 2 * hd : 0);
	} else {
		long double q = m->q_lora_rank ? h * m->q_lora_rank + m->q_lora_rank +
							 (long double)m->q_lora_rank * nh * (hd + r)
					       : h * nh * (hd + r);

		attn = q + h * ((long double)m->kv_lora_rank + r) + m->kv_lora_rank +
		       (long double)m->kv_lora_rank * nh * (hd + m->v_head_dim) +
		       nh * m->v_head_dim * h;
	}
	mlp = (m->gated_mlp ? 3.0L : 2.0L) * h * m->intermediate;
	e = (m->gated_mlp ? 3.0L : 2.0L) * h * m->moe_intermediate;
	moe_mlp = h * m->experts + ((long double)m->experts + m->shared_experts) * e;
	emb = (long double)m->vocab * h * (m->tie_embeddings ? 1 : 2);
	return m->layers * (attn + 2 * h) + ((long double)m->layers - moe) * mlp + moe * moe_mlp +
	       emb + h;
}

/* The stock partners, loaded once. */
static const struct kv_model *stock_model(void)
{
	static struct kv_model m;
	static int loaded;
	struct kv_diag d = { 0 };

	if (!loaded && kv_profile_load_model(KV_SOURCE_DIR "/configs/models/llama-2-7b.yaml", &m, &d))
		fuzz_fail("stock model: %s", d.msg);
	loaded = 1;
	return &m;
}

static const struct kv_device *stock_device(void)
{
	static struct kv_device v;
	static int loaded;
	struct kv_diag d = { 0 };

	if (!loaded && kv_profile_load_device(KV_SOURCE_DIR "/configs/devices/a100-80g.yaml", &v, &d))
		fuzz_fail("stock device: %s", d.msg);
	loaded = 1;
	return &v;
}

/* A decode step of 8 sequences at a 1000-token context and a 512-token prefill, at TP 1, 2, 8. */
static void check_perf(const struct kv_model *m, const struct kv_device *v)
{
	uint64_t ctx = KV_MIN((uint64_t)m->max_ctx_tokens, 1000);
	struct kv_batch_shape dec = { 0 }, pre = { 0 };
	struct kv_perf pf;
	uint32_t tp;

	dec.n_seqs = dec.n_decode = dec.n_sample = 8;
	dec.attn_pairs = 8 * ctx;
	dec.kv_read_bytes = 8 * kv_model_kv_bytes(m, ctx);
	pre.n_seqs = pre.n_sample = 1;
	pre.n_prefill_tokens = 512;
	pre.attn_pairs = 512 * 513 / 2;
	pre.kv_read_bytes = kv_model_kv_bytes(m, 512);
	for (tp = 1; tp <= 8; tp *= tp == 1 ? 2 : 4) {
		kv_perf_init(&pf, m, v, tp);
		if (kv_perf_iter_ns(&pf, &dec) < 1 || kv_perf_iter_ns(&pf, &pre) < 1)
			fuzz_fail("perf: a step under 1 ns at tp %u", tp);
	}
}

static void check_model(const struct kv_model *m)
{
	long double want = arch_params_ld(m);
	long double kv_ld = (m->kv_lora_rank ? (long double)m->layers *
						       ((long double)m->kv_lora_rank + m->qk_rope_head_dim)
					     : 2.0L * m->layers * m->kv_heads * m->head_dim) *
			    kv_dtype_bits(m->kv_dtype, m->dtype_bytes) / 8;
	uint64_t arch = kv_model_arch_params(m), kvb = kv_model_kv_bytes_per_token(m);
	double n, dist;

	if (fabsl((long double)arch - want) > want * 1e-9L)
		fuzz_fail("model: arch params %llu, exact %.6Lg (wrapped)", (unsigned long long)arch,
			  want);
	if (!kvb || fabsl((long double)kvb - kv_ld) > kv_ld * 1e-9L + 1)
		fuzz_fail("model: KV bytes per token %llu, exact %.6Lg", (unsigned long long)kvb,
			  kv_ld);
	if (!kv_model_weight_bytes(m) || !kv_model_kv_bytes_per_token_gpu(m, 8))
		fuzz_fail("model: zero weight bytes or KV bytes per GPU");
	if (kv_model_kv_bytes(m, m->max_ctx_tokens) >
	    (uint64_t)m->max_ctx_tokens * kv_model_kv_bytes_per_token(m))
		fuzz_fail("model: a window made the KV of a full context larger");
	if (!(kv_model_linear_flops_per_token(m) >= 0) || !isfinite(kv_model_head_flops(m)) ||
	    !(kv_model_attn_flops_per_pair(m) > 0) ||
	    !isfinite(kv_model_weight_read_bytes(m, 1, 1)))
		fuzz_fail("model: a FLOP or byte count is negative or not finite");
	for (n = 0; n <= 1e6; n = n ? n * 10 : 1) {
		dist = kv_model_moe_distinct_experts(m, n);
		if (!(dist >= 0) || dist > m->experts * (1 + 1e-12))
			fuzz_fail("model: %g distinct experts for %g tokens of %u", dist, n,
				  m->experts);
	}
	check_perf(m, stock_device());
}

static void check_device(const struct kv_device *v)
{
	if (!v->mem_bytes || !(v->mem_bw_Bps > 0) || !isfinite(v->mem_bw_Bps) ||
	    !(v->flops > 0) || !isfinite(v->flops) || !(v->host_link_Bps > 0) ||
	    !isfinite(v->host_link_Bps) || !(v->interconnect_Bps >= 0) ||
	    !isfinite(v->interconnect_Bps) || !(v->flops_fp8 >= 0) || !isfinite(v->flops_fp8))
		fuzz_fail("device: a datasheet rate is out of range");
	if (!(v->eff_bw > 0 && v->eff_bw <= 1) || !(v->eff_flops > 0 && v->eff_flops <= 1) ||
	    !(v->eff_attn >= 0 && v->eff_attn <= 1) || v->overhead_ns < 0 || v->per_seq_ns < 0 ||
	    v->allreduce_latency_ns < 0 || !(v->alpha >= 1) || !isfinite(v->alpha))
		fuzz_fail("device: a coefficient is out of range");
	if (v->link_type != KV_LINK_DATASHEET && !(v->link_busbw_Bps > 0))
		fuzz_fail("device: interconnect %s without a bus bandwidth",
			  kv_link_name(v->link_type));
	check_perf(stock_model(), v);
}

/* The host reader: deterministic, and what loads is in range. */
static void check_host(const char *text, size_t size)
{
	static const char host_file[] = KV_SOURCE_DIR "/configs/hosts/fuzz.yaml";
	struct kv_host_profile h, h2;
	struct kv_diag d, d2;
	int rc, rc2, i;

	memset(&d, 0, sizeof(d));
	memset(&d2, 0, sizeof(d2));
	rc = kv_profile_load_host_mem(host_file, text, size, &h, &d);
	rc2 = kv_profile_load_host_mem(host_file, text, size, &h2, &d2);
	fuzz_check_rc(rc, &d);
	if (rc != rc2 || strcmp(d.msg, d2.msg) || (!rc && memcmp(&h, &h2, sizeof(h))))
		fuzz_fail("host: two reads differ: %d '%s' then %d '%s'", rc, d.msg, rc2, d2.msg);
	if (rc)
		return;
	if (!(h.cpu_speed >= 0.01 && h.cpu_speed <= 100))
		fuzz_fail("host: cpu_speed %g out of range", h.cpu_speed);
	for (i = 0; i < KV_HOST_NCOEF; i++)
		if (h.set >> i & 1 && !(h.coef[i] >= 0 && isfinite(h.coef[i])))
			fuzz_fail("host: %s is %g", kv_host_coef_key(i), h.coef[i]);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const char model_file[] = KV_SOURCE_DIR "/configs/models/fuzz.yaml";
	static const char dev_file[] = KV_SOURCE_DIR "/configs/devices/fuzz.yaml";
	const char *text = (const char *)data;
	struct kv_model m, m2;
	struct kv_device v, v2;
	struct kv_diag d, d2;
	int rc, rc2;

	memset(&d, 0, sizeof(d));
	memset(&d2, 0, sizeof(d2));
	rc = kv_profile_load_model_mem(model_file, text, size, &m, &d);
	rc2 = kv_profile_load_model_mem(model_file, text, size, &m2, &d2);
	fuzz_check_rc(rc, &d);
	if (rc != rc2 || strcmp(d.msg, d2.msg) || (!rc && memcmp(&m, &m2, sizeof(m))))
		fuzz_fail("model: two reads differ: %d '%s' then %d '%s'", rc, d.msg, rc2, d2.msg);
	if (!rc)
		check_model(&m);

	memset(&d, 0, sizeof(d));
	memset(&d2, 0, sizeof(d2));
	rc = kv_profile_load_device_mem(dev_file, text, size, &v, &d);
	rc2 = kv_profile_load_device_mem(dev_file, text, size, &v2, &d2);
	fuzz_check_rc(rc, &d);
	if (rc != rc2 || strcmp(d.msg, d2.msg) || (!rc && memcmp(&v, &v2, sizeof(v))))
		fuzz_fail("device: two reads differ: %d '%s' then %d '%s'", rc, d.msg, rc2, d2.msg);
	if (!rc)
		check_device(&v);
	check_host(text, size);
	return 0;
}
