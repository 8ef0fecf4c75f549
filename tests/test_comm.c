/*
 * test_comm.c -- collective costs (comm.h) and the parallel terms of the
 * perf model (perf.h): each cost against the model's equations worked by
 * hand from NCCL's constants, NCCL's choice of the cheapest candidate, the
 * datasheet fallback, all-to-all and send/recv, and the tensor-, pipeline-
 * and expert-parallel terms of an iteration.
 */
#include <check.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "comm.h"
#include "perf.h"
#include "profile_load.h"

/* |a - b| <= 1e-9 relative (the sums below are a handful of doubles). */
#define CK_NEAR(a, b)                                                                 \
	ck_assert_msg(fabs((a) - (b)) <= 1e-9 * fmax(1.0, fabs(b)), "%s = %.9f, expected %.9f", \
		      #a, (double)(a), (double)(b))

static const struct kv_link nvlink = { .type = KV_LINK_NVLINK, .busbw_Bps = 370e9 };
static const struct kv_link pcie = { .type = KV_LINK_PCIE_P2P, .busbw_Bps = 24e9 };

static double cost_ns(const struct kv_link *l, uint32_t n, int algo, int proto, double bytes)
{
	struct kv_comm_cost c;

	ck_assert_int_eq(kv_comm_allreduce_cost(l, n, algo, proto, &c), 0);
	return c.fixed_ns + bytes * c.ns_per_byte;
}

/*
 * 1 MiB over 4 NVLink ranks at 370 GB/s busbw, 2(n-1) = 6 steps, NCCL's
 * constants with the fitted NVLink scales (latency 1.05, 0.75, 0.65 and
 * bandwidth 1.35, 0.95, 1 for LL, LL128, Simple; bench/comm_fit):
 *   ring Simple  0.65 (8.4 + 6*3.4) us + 1048576 B / (370e9 * 4/6)            = 22970.983784 ns
 *   ring LL      1.05 (6.6 + 6*0.6) us + 1048576 B / (370e9/4*1.35 * 4/6)     = 23305.507508 ns
 *   ring LL128   0.75 (14 + 6*1.9) us  + 1048576 B / (370e9*0.92*0.95 * 4/6)  = 23913.825840 ns
 *   tree Simple  0.65 (8.4 + 6*4.0) us + 1048576 B / (min(333e9, 110e9)/2)    = 40125.018182 ns
 */
START_TEST(test_ring_and_tree_by_hand)
{
	double b = 1048576;

	CK_NEAR(cost_ns(&nvlink, 4, KV_COMM_RING, KV_COMM_SIMPLE, b), 22970.983783783784);
	CK_NEAR(cost_ns(&nvlink, 4, KV_COMM_RING, KV_COMM_LL, b), 23305.507507507504);
	CK_NEAR(cost_ns(&nvlink, 4, KV_COMM_RING, KV_COMM_LL128, b), 23913.825839569545);
	CK_NEAR(cost_ns(&nvlink, 4, KV_COMM_TREE, KV_COMM_SIMPLE, b), 40125.01818181818);
	CK_NEAR(cost_ns(&nvlink, 4, KV_COMM_TREE, KV_COMM_LL128, b), 41927.28024606973);
}
END_TEST

/* NCCL picks the cheapest: Simple ring at 1 MiB and 256 MiB (fitted scales); LL128 only on NVLink. */
START_TEST(test_allreduce_picks_cheapest)
{
	struct kv_comm_allreduce ar;
	struct kv_comm_cost c;

	kv_comm_allreduce_init(&ar, &nvlink, 4);
	ck_assert_uint_eq(ar.n_cand, 6);
	CK_NEAR(kv_comm_allreduce_ns(&ar, 1048576), 22970.983783783784);
	CK_NEAR(kv_comm_allreduce_ns(&ar, 268435456), 1106971.8486486487);
	kv_comm_allreduce_init(&ar, &pcie, 4);
	ck_assert_uint_eq(ar.n_cand, 4);
	ck_assert_int_eq(kv_comm_allreduce_cost(&pcie, 4, KV_COMM_RING, KV_COMM_LL128, &c), -1);
	/* PCI latencies: ring Simple over 2 ranks = (8.4 + 2*5.7) us + B / (24e9 * 2/2) */
	CK_NEAR(cost_ns(&pcie, 2, KV_COMM_RING, KV_COMM_SIMPLE, 24e6), 19800.0 + 1e6);
	/* one rank: nothing to reduce */
	kv_comm_allreduce_init(&ar, &nvlink, 1);
	ck_assert_uint_eq(ar.n_cand, 0);
	CK_NEAR(kv_comm_allreduce_ns(&ar, 1e6), 0.0);
}
END_TEST

/* xGMI uses RCCL's constants: ring Simple over 8 ranks = (27.9 + 14*2.7) us + B/(bw*8/14). */
START_TEST(test_xgmi_rccl_constants)
{
	struct kv_link x = { .type = KV_LINK_XGMI, .busbw_Bps = 336e9 };

	CK_NEAR(cost_ns(&x, 8, KV_COMM_RING, KV_COMM_SIMPLE, 336e6), 65700.0 + 1e6 * 14.0 / 8.0);
	/* ring LL at a fifth of the bus bandwidth: (20.5 + 14*2.3) us + B/(bw/5*8/14) */
	CK_NEAR(cost_ns(&x, 8, KV_COMM_RING, KV_COMM_LL, 336e6), 52700.0 + 5e6 * 14.0 / 8.0);
}
END_TEST

/* The datasheet link: one ring at the datasheet rate plus the fixed latency. */
START_TEST(test_datasheet_link)
{
	struct kv_link l = { .type = KV_LINK_DATASHEET, .busbw_Bps = 300e9, .fixed_ns = 5000 };
	struct kv_comm_allreduce ar;

	kv_comm_allreduce_init(&ar, &l, 2);
	ck_assert_uint_eq(ar.n_cand, 1);
	/* 5 us + 1e6 B * 2(2-1)/2 / 300e9 */
	CK_NEAR(kv_comm_allreduce_ns(&ar, 1e6), 5000.0 + 1e6 / 300e9 * 1e9);
	CK_NEAR(kv_comm_p2p_ns(&l, 3e5), 5000.0 + 1000.0);
}
END_TEST

/*
 * All-to-all over NVLink (fitted): 10.8 us + (n-1)/n * B / (busbw * 0.914),
 * whatever n; send/recv on PCIe: NCCL's (8.4 + 5.7) us + B/busbw.
 */
START_TEST(test_alltoall_and_p2p)
{
	CK_NEAR(kv_comm_alltoall_ns(&nvlink, 1e6, 8), 10800.0 + 7.0 / 8.0 * 1e6 / (370e9 * 0.914) * 1e9);
	CK_NEAR(kv_comm_alltoall_ns(&nvlink, 1e6, 2), 10800.0 + 0.5 * 1e6 / (370e9 * 0.914) * 1e9);
	CK_NEAR(kv_comm_p2p_ns(&nvlink, 1e6), 10800.0 + 1e6 / (370e9 * 0.914) * 1e9);
	CK_NEAR(kv_comm_alltoall_ns(&nvlink, 1e6, 1), 0.0);
	CK_NEAR(kv_comm_p2p_ns(&pcie, 1e6), 14100.0 + 1e6 / 24e9 * 1e9);
}
END_TEST

/*
 * A per-collective overhead adds to every all-reduce candidate, all-to-all
 * and send/recv over two or more ranks, on a typed link and on the datasheet
 * link; one rank still costs nothing.
 */
START_TEST(test_collective_overhead)
{
	struct kv_link l = nvlink, ds = { .type = KV_LINK_DATASHEET, .busbw_Bps = 300e9,
					  .fixed_ns = 5000, .overhead_ns = 20000 };
	struct kv_comm_allreduce ar;

	l.overhead_ns = 20000;
	CK_NEAR(cost_ns(&l, 4, KV_COMM_RING, KV_COMM_SIMPLE, 1048576), 22970.983783783784 + 20000);
	kv_comm_allreduce_init(&ar, &l, 4);
	CK_NEAR(kv_comm_allreduce_ns(&ar, 1048576), 22970.983783783784 + 20000);
	CK_NEAR(kv_comm_alltoall_ns(&l, 1e6, 8), 10800.0 + 20000 + 7.0 / 8.0 * 1e6 / (370e9 * 0.914) * 1e9);
	CK_NEAR(kv_comm_alltoall_ns(&l, 1e6, 1), 0.0);
	kv_comm_allreduce_init(&ar, &l, 1);
	CK_NEAR(kv_comm_allreduce_ns(&ar, 1e6), 0.0);
	/* datasheet: 5 us + 20 us + 1e6 B * 2(2-1)/2 / 300e9 */
	kv_comm_allreduce_init(&ar, &ds, 2);
	CK_NEAR(kv_comm_allreduce_ns(&ar, 1e6), 25000.0 + 1e6 / 300e9 * 1e9);
	CK_NEAR(kv_comm_p2p_ns(&ds, 3e5), 25000.0 + 1000.0);
}
END_TEST

START_TEST(test_link_names)
{
	enum kv_link_type t;

	ck_assert_int_eq(kv_link_parse("nvswitch", &t), 0);
	ck_assert_int_eq(t, KV_LINK_NVLINK);
	ck_assert_int_eq(kv_link_parse("pcie-host", &t), 0);
	ck_assert_str_eq(kv_link_name(t), "pcie-host");
	ck_assert_int_eq(kv_link_parse("infiniband", &t), -1);
}
END_TEST

/* A Llama-2-7B-shaped model and an H100-like device with a typed NVLink. */
static void fixture(struct kv_model *m, struct kv_device *dev)
{
	memset(m, 0, sizeof(*m));
	strcpy(m->name, "t7b");
	m->layers = 32;
	m->hidden = 4096;
	m->heads = 32;
	m->kv_heads = 32;
	m->head_dim = 128;
	m->intermediate = 11008;
	m->vocab = 32000;
	m->max_ctx_tokens = 4096;
	m->dtype_bytes = 2;
	m->gated_mlp = 1;
	m->params = kv_model_arch_params(m);
	memset(dev, 0, sizeof(*dev));
	kv_device_set_defaults(dev);
	dev->overhead_ns = 0;
	dev->mem_bytes = 80000000000ULL;
	dev->mem_bw_Bps = 3350e9;
	dev->flops = 989e12;
	dev->host_link_Bps = 64e9;
	dev->interconnect_Bps = 450e9;
	dev->link_type = KV_LINK_NVLINK;
	dev->link_busbw_Bps = 370e9;
}

static struct kv_batch_shape decode(const struct kv_model *m, uint32_t n, uint64_t ctx)
{
	struct kv_batch_shape b = { 0 };

	b.n_seqs = b.n_decode = b.n_sample = n;
	b.attn_pairs = (uint64_t)n * ctx;
	b.kv_read_bytes = b.attn_pairs * kv_model_kv_bytes_per_token(m);
	return b;
}

/*
 * TP 2 over the typed link: 2 * 32 all-reduces of one token's 8192 bytes,
 * each NCCL's cheapest: ring LL, 1.05 (6.6 + 2*0.6) us + 8192 / (370e9/4 *
 * 1.35 * 2/2) = 8255.601602 ns, so 64 * 8255.601602 = 528358.502503 ns per
 * decode step (no engine: NCCL only).
 */
START_TEST(test_tp_allreduce_per_iteration)
{
	struct kv_model m;
	struct kv_device dev;
	struct kv_perf p1, p2;
	struct kv_batch_shape b;

	fixture(&m, &dev);
	kv_perf_init(&p2, &m, &dev, 2);
	CK_NEAR(kv_perf_allreduce_ns(&p2, 1.0), 528358.5025025024);
	kv_perf_init(&p1, &m, &dev, 1);
	CK_NEAR(kv_perf_allreduce_ns(&p1, 1.0), 0.0);
	/* the iteration adds exactly that to the halved linear and attention terms (the
	 * weights read less the looked-up input embedding, 32000 * 4096 * 2 bytes) */
	b = decode(&m, 1, 100);
	ck_assert_int_le(llabs((long long)kv_perf_iter_ns(&p2, &b) -
			       (long long)ceil(1e9 * ((kv_model_weight_bytes(&m) - 32000.0 * 4096 * 2) /
						      2.0 / (3350e9 * 0.83)) +
					       1e9 * (100.0 * kv_model_kv_bytes_per_token(&m) / 2.0 /
						      (3350e9 * 0.83)) + 528358.5025025024)), 1);
}
END_TEST

/*
 * The engine's side (kv_perf_set_comm): the custom all-reduce replaces NCCL
 * for a TP 2 decode on NVLink (64 one-shot calls of 8192 bytes, 8.746 us +
 * 5.976 * 8192 B / 370 GB/s each) but not on a datasheet link; the per-step
 * sync is charged once per step of a multi-GPU replica and never on one GPU.
 */
START_TEST(test_engine_comm_terms)
{
	struct kv_model m;
	struct kv_device dev;
	struct kv_perf p1, p2, q;
	struct kv_comm_car car = { .impl = KV_CAR_VLLM, .max_bytes = 8388608 };
	struct kv_batch_shape b;
	kv_ns base;

	fixture(&m, &dev);
	kv_perf_init(&p2, &m, &dev, 2);
	kv_perf_set_comm(&p2, &car, 0.0);
	CK_NEAR(kv_perf_allreduce_ns(&p2, 1.0), 64.0 * (8746.0 + 5.976 * 8192 / 370e9 * 1e9));
	b = decode(&m, 1, 100);
	base = kv_perf_iter_ns(&p2, &b);
	kv_perf_set_comm(&p2, &car, 250000.0);
	ck_assert_int_eq(kv_perf_iter_ns(&p2, &b), base + 250000);
	/* one GPU: no collectives, no sync */
	kv_perf_init(&p1, &m, &dev, 1);
	base = kv_perf_iter_ns(&p1, &b);
	kv_perf_set_comm(&p1, &car, 250000.0);
	ck_assert_int_eq(kv_perf_iter_ns(&p1, &b), base);
	/* a datasheet link keeps its all-reduce: the topology is not known */
	dev.link_type = KV_LINK_DATASHEET;
	dev.link_busbw_Bps = 0;
	dev.interconnect_Bps = 300e9;
	kv_perf_init(&q, &m, &dev, 2);
	base = kv_perf_iter_ns(&q, &b);
	kv_perf_set_comm(&q, &car, 0.0);
	ck_assert_int_eq(kv_perf_iter_ns(&q, &b), base);
}
END_TEST

/*
 * Pipeline of 2 stages, memory-bound decode: one sequence leaves a bubble
 * (one micro-batch, each stage reads half the weights, the cycle is two
 * stages) so it costs the single-GPU time plus two activation sends; a
 * second sequence fills the bubble and costs nothing more.
 */
START_TEST(test_pipeline_cycle)
{
	struct kv_model m;
	struct kv_device dev;
	struct kv_perf p1, p2;
	struct kv_parallel par = { .tp = 1, .pp = 2, .ep = 1 };
	struct kv_batch_shape one, two;
	double send = kv_comm_p2p_ns(&nvlink, 4096.0 * 2);
	kv_ns t1, t2a, t2b;

	fixture(&m, &dev);
	kv_perf_init(&p1, &m, &dev, 1);
	kv_perf_init_parallel(&p2, &m, &dev, &par);
	CK_NEAR(p2.stage_frac, 0.5);
	one = decode(&m, 1, 0);
	two = decode(&m, 2, 0);
	t1 = kv_perf_iter_ns(&p1, &one);
	t2a = kv_perf_iter_ns(&p2, &one);
	t2b = kv_perf_iter_ns(&p2, &two);
	ck_assert_int_le(llabs((long long)t2a - (long long)ceil((double)t1 + 2.0 * send)), 1);
	ck_assert_int_eq(t2a, t2b);
	/* without pipelining a second sequence's token is not free: check it is here */
	ck_assert_int_le(kv_perf_iter_ns(&p1, &one), kv_perf_iter_ns(&p1, &two));
}
END_TEST

/* Stage model: ceil(L/pp) layers and that share of the parameters. */
START_TEST(test_stage_model)
{
	struct kv_model m, s;
	struct kv_device dev;

	fixture(&m, &dev);
	kv_perf_stage_model(&m, 3, &s);
	ck_assert_uint_eq(s.layers, 11);
	ck_assert_uint_eq(s.params, (uint64_t)ceil((double)m.params * 11.0 / 32.0));
	kv_perf_stage_model(&m, 1, &s);
	ck_assert_uint_eq(s.params, m.params);
}
END_TEST

/*
 * Expert parallel over 8 GPUs: 24 MoE layers, 2 all-to-alls each, of
 * N * 16384 dispatch bytes: for N = 10,
 * 48 * (10.8 us + 7/8 * 163840 / (370e9 * 0.914)) ns (the fitted all-to-all).
 */
START_TEST(test_expert_parallel)
{
	struct kv_model m;
	struct kv_device dev;
	struct kv_perf pf;
	struct kv_batch_shape b;
	double want = 48.0 * (10800.0 + 7.0 / 8.0 * 163840.0 / (370e9 * 0.914) * 1e9);
	kv_ns base;

	fixture(&m, &dev);
	kv_perf_init(&pf, &m, &dev, 1);
	b = decode(&m, 10, 50);
	base = kv_perf_iter_ns(&pf, &b);
	CK_NEAR(kv_perf_moe_ep_ns(&pf, 10.0), 0.0);
	kv_perf_set_moe_ep(&pf, 24, 16384.0, 8);
	CK_NEAR(kv_perf_moe_ep_ns(&pf, 10.0), want);
	ck_assert_int_le(llabs((long long)kv_perf_iter_ns(&pf, &b) - (long long)base -
			       (long long)want), 1);
	kv_perf_set_moe_ep(&pf, 24, 16384.0, 1);
	ck_assert_int_eq(kv_perf_iter_ns(&pf, &b), base);
}
END_TEST

/*
 * The finding docs/perf-model.md ("Interconnects") states: gpt-fast's
 * batch-1 decode of Llama-2-7B on A100-80GB (104.9, 168.84, 254.02, 328.43
 * tok/s at TP 1, 2, 4, 8; perf-model.md table B) against the A100 profile
 * with NCCL's NVLink model (fitted scales) at NCCL's sm80 cap of 235 GB/s:
 * -5.0% at TP 2, -2.1% at TP 4, +5.1% at TP 8 (the datasheet link, 5 us
 * per all-reduce, is within 5% at each; the A100 profiles keep it).
 * Each step: 5-token prompt, 199 decodes, mean step time.
 */
/*
 * The device key perf.collective_overhead reaches every TP all-reduce of an
 * iteration: 2 * layers of them, on the NCCL link and on the datasheet one.
 * Llama-2-7B (32 layers) at TP 2, 10 decode tokens, 30 us each: +1.92 ms.
 */
START_TEST(test_collective_overhead_per_iteration)
{
	struct kv_model m;
	struct kv_device dev;
	struct kv_perf a, b;
	int nccl;

	fixture(&m, &dev);
	for (nccl = 0; nccl < 2; nccl++) {
		dev.link_type = nccl ? KV_LINK_NVLINK : KV_LINK_DATASHEET;
		dev.link_busbw_Bps = nccl ? 235e9 : 0;
		dev.collective_overhead_ns = 0;
		kv_perf_init(&a, &m, &dev, 2);
		dev.collective_overhead_ns = 30 * KV_NS_PER_US;
		kv_perf_init(&b, &m, &dev, 2);
		CK_NEAR(kv_perf_allreduce_ns(&b, 10) - kv_perf_allreduce_ns(&a, 10),
			2.0 * 32 * 30000);
		kv_perf_init(&b, &m, &dev, 1);
		CK_NEAR(kv_perf_allreduce_ns(&b, 10), 0.0);
	}
}
END_TEST

START_TEST(test_nccl_on_gpt_fast_a100)
{
	static const double tok_s[] = { 168.84, 254.02, 328.43 }; /* tp 2, 4, 8 */
	static const double lo[] = { -0.055, -0.026, 0.046 }, hi[] = { -0.045, -0.016, 0.056 };
	struct kv_model m;
	struct kv_device dev;
	struct kv_diag d = { 0 };
	int t, i;

	ck_assert_int_eq(kv_profile_load_model("llama-2-7b", &m, &d), 0);
	ck_assert_int_eq(kv_profile_load_device("a100-80g", &dev, &d), 0);
	ck_assert_int_eq(dev.link_type, KV_LINK_DATASHEET);
	dev.link_type = KV_LINK_NVLINK;
	dev.link_busbw_Bps = 235e9;
	for (t = 0; t < 3; t++) {
		struct kv_perf pf;
		double ms = 0, err;

		kv_perf_init(&pf, &m, &dev, 2u << t);
		for (i = 1; i < 200; i++) {
			struct kv_batch_shape b = decode(&m, 1, 5 + (uint64_t)i);

			ms += kv_perf_iter_ns(&pf, &b) / 1e6 / 199;
		}
		err = ms * tok_s[t] / 1000 - 1;
		ck_assert_msg(err >= lo[t] && err <= hi[t], "tp %u: %.3f ms, error %+.1f%%", 2u << t,
			      ms, 100 * err);
	}
}
END_TEST

/*
 * The engine's custom all-reduce against vLLM's kernel on H100 (SGLang PR
 * 2904, "optimize custom allreduce kernel", tests/test_trt_reduce.py without
 * CUDA graphs, the 'vllm' table): the fitted one-shot/two-shot model
 * (bench/comm_fit; a third of these rows were held out of its fit) at
 * busbw 370 GB/s, values by hand pinned to 0.05 us, within 13% of each
 * measurement.  vLLM switches to two-shot at 512 KiB on 4 GPUs and 256 KiB on
 * 8; 2 GPUs always run one-shot.
 */
START_TEST(test_custom_allreduce_vs_published_h100)
{
	static const struct {
		double bytes; /* message size */
		double model_us[3]; /* this model at tp 2, 4, 8 (the equations, by hand) */
		double vllm_us[3]; /* vLLM custom all-reduce, measured */
	} row[] = {
		{ 512, { 8.75, 8.77, 8.80 }, { 9.5, 9.1, 10.1 } },
		{ 4096, { 8.81, 8.94, 9.21 }, { 8.8, 8.5, 9.3 } },
		{ 32768, { 9.28, 10.33, 12.45 }, { 8.7, 9.2, 11.8 } },
		{ 262144, { 12.98, 21.45, 24.01 }, { 12.9, 20.6, 24.1 } },
		{ 524288, { 17.21, 28.91, 30.87 }, { 17.7, 26.9, 30.4 } },
		{ 1048576, { 25.68, 40.68, 44.61 }, { 26.6, 40.2, 45.0 } },
	};
	struct kv_comm_car car = { .impl = KV_CAR_VLLM, .max_bytes = 8388608 };
	struct kv_comm_allreduce ar;
	size_t i;
	int t;

	for (t = 0; t < 3; t++) {
		kv_comm_allreduce_init(&ar, &nvlink, 2u << t);
		ck_assert_int_eq(kv_comm_allreduce_set_car(&ar, &nvlink, &car), 1);
		for (i = 0; i < sizeof(row) / sizeof(row[0]); i++) {
			double us = kv_comm_allreduce_ns(&ar, row[i].bytes) / 1e3;
			double err = us / row[i].vllm_us[t] - 1;

			ck_assert_msg(fabs(us - row[i].model_us[t]) <= 0.05, "%.0f B tp %u: %.2f us",
				      row[i].bytes, 2u << t, us);
			ck_assert_msg(fabs(err) <= 0.13, "%.0f B tp %u: %+.0f%%", row[i].bytes,
				      2u << t, 100 * err);
		}
	}
}
END_TEST

/*
 * Where the engines run their custom all-reduce (vLLM custom_all_reduce.py):
 * 2, 4, 6 or 8 GPUs; P2P (never pcie-host, never an unnamed datasheet link);
 * over more than 2 GPUs only when every pair is linked (NVSwitch/mesh, xGMI,
 * not a bridge or plain PCIe); below the size limit only, NCCL above it.
 */
START_TEST(test_custom_allreduce_limits)
{
	struct kv_link bridge = { .type = KV_LINK_NVLINK_BRIDGE, .busbw_Bps = 116e9 };
	struct kv_link host = { .type = KV_LINK_PCIE_HOST, .busbw_Bps = 12.9e9 };
	struct kv_link ds = { .type = KV_LINK_DATASHEET, .busbw_Bps = 300e9, .fixed_ns = 5000 };
	struct kv_link x = { .type = KV_LINK_XGMI, .busbw_Bps = 336e9 };
	struct kv_comm_car car = { .impl = KV_CAR_VLLM, .max_bytes = 8388608 };
	struct kv_comm_car off = { .impl = KV_CAR_OFF, .max_bytes = 8388608 };
	struct kv_comm_allreduce ar, nccl;
	uint32_t n;

	for (n = 1; n <= 10; n++)
		ck_assert_int_eq(kv_comm_car_usable(&nvlink, n), n == 2 || n == 4 || n == 6 || n == 8);
	ck_assert(kv_comm_car_usable(&pcie, 2) && !kv_comm_car_usable(&pcie, 4));
	ck_assert(kv_comm_car_usable(&bridge, 2) && !kv_comm_car_usable(&bridge, 4));
	ck_assert(kv_comm_car_usable(&x, 8));
	ck_assert(!kv_comm_car_usable(&host, 2) && !kv_comm_car_usable(&ds, 2));
	/* below the limit the custom kernel, from the limit on NCCL */
	kv_comm_allreduce_init(&nccl, &nvlink, 8);
	kv_comm_allreduce_init(&ar, &nvlink, 8);
	ck_assert_int_eq(kv_comm_allreduce_set_car(&ar, &nvlink, &car), 1);
	ck_assert(kv_comm_allreduce_ns(&ar, 8388607) != kv_comm_allreduce_ns(&nccl, 8388607));
	CK_NEAR(kv_comm_allreduce_ns(&ar, 8388608), kv_comm_allreduce_ns(&nccl, 8388608));
	/* one-shot below 256 KiB on 8 GPUs: 8.746 us + 5.976 * 7 * B / busbw */
	CK_NEAR(kv_comm_allreduce_ns(&ar, 131072), 8746.0 + 5.976 * 7 * 131072 / 370e9 * 1e9);
	/* two-shot from 256 KiB: 17.141 us + 5.538 * 2 * 7/8 * B / busbw */
	CK_NEAR(kv_comm_allreduce_ns(&ar, 262144), 17141.0 + 5.538 * 1.75 * 262144 / 370e9 * 1e9);
	/* off, or a link without P2P: NCCL only */
	ck_assert_int_eq(kv_comm_allreduce_set_car(&ar, &nvlink, &off), 0);
	CK_NEAR(kv_comm_allreduce_ns(&ar, 131072), kv_comm_allreduce_ns(&nccl, 131072));
	kv_comm_allreduce_init(&ar, &host, 2);
	ck_assert_int_eq(kv_comm_allreduce_set_car(&ar, &host, &car), 0);
	ck_assert(ar.car_max_bytes == 0);
}
END_TEST

/*
 * Bus bandwidth per GPU count: a board without NVSwitch (the A100
 * figures: 66 GB/s at 2 GPUs, 200 at 4) names its table; other counts take
 * the nearest smaller entry, then the nearest larger, then the scalar.
 */
START_TEST(test_busbw_by_gpu_count)
{
	struct kv_link l = { .type = KV_LINK_NVLINK, .busbw_Bps = 235e9 };
	struct kv_comm_allreduce a2, a4;

	CK_NEAR(kv_link_busbw(&l, 4), 235e9);
	l.busbw_n_Bps[2] = 66e9;
	l.busbw_n_Bps[4] = 200e9;
	CK_NEAR(kv_link_busbw(&l, 2), 66e9);
	CK_NEAR(kv_link_busbw(&l, 3), 66e9);
	CK_NEAR(kv_link_busbw(&l, 4), 200e9);
	CK_NEAR(kv_link_busbw(&l, 8), 200e9);
	CK_NEAR(kv_link_busbw(&l, 64), 200e9);
	l.busbw_n_Bps[2] = 0;
	CK_NEAR(kv_link_busbw(&l, 2), 200e9);
	/* the table reaches the all-reduce: 256 MiB over 2 GPUs, Simple ring at 66 GB/s */
	l.busbw_n_Bps[2] = 66e9;
	kv_comm_allreduce_init(&a2, &l, 2);
	kv_comm_allreduce_init(&a4, &l, 4);
	CK_NEAR(kv_comm_allreduce_ns(&a2, 268435456), 0.65 * (8.4 + 2 * 3.4) * 1e3 + 268435456 / 66e9 * 1e9);
	ck_assert(kv_comm_allreduce_ns(&a2, 268435456) > 2 * kv_comm_allreduce_ns(&a4, 268435456));
	/* and the all-to-all and send/recv */
	CK_NEAR(kv_comm_p2p_ns(&l, 1e6), 10800.0 + 1e6 / (66e9 * 0.914) * 1e9);
}
END_TEST

/*
 * Why perf.collective_overhead defaults to 0: NCCL's NVLink model against
 * NCCL as a serving engine calls it, captured in a CUDA graph.  vLLM PR 24111
 * ("[Kernels] Enable Torch Symmetric Memory All-Reduce By Default"),
 * description, "Isolated primitives benchmark results", H100 section,
 * benchmarks/kernels/benchmark_device_communicators.py, bf16, hidden 8192,
 * column pynccl (vLLM's NCCL wrapper), ms per all-reduce, at TP 4 and 6.
 * A separate microbenchmark: no fidelity row is involved.  The model (busbw
 * 370 GB/s, NCCL's cheapest candidate with the fitted scales, which these
 * rows helped fit; values by hand, pinned to 0.05 us) is off the measurement
 * by -7.4 to +4 us (mean +1.25 us at TP 4, -3.3 us at TP 6), so a fixed
 * cost on top of it has no support for a graph-captured decode.
 */
START_TEST(test_nccl_vs_vllm_pynccl_h100)
{
	static const double mib[] = { 0.5, 1, 1.5, 2, 3, 4 }; /* tokens 32..256 x 8192 x 2 B */
	static const struct {
		uint32_t n; /* ranks */
		double model_us[6]; /* this model (the equations, by hand) */
		double pynccl_us[6]; /* measured */
		double mean_diff_us; /* mean of model - measured */
	} row[] = {
		{ 4, { 17.01, 22.97, 25.10, 27.22, 31.47, 35.72 }, { 17, 19, 22, 26, 31, 37 }, 1.25 },
		{ 6, { 20.23, 27.23, 32.86, 35.56, 40.96, 46.37 }, { 23, 25, 32, 43, 47, 53 }, -3.30 },
	};
	struct kv_comm_allreduce ar;
	size_t r, i;

	for (r = 0; r < 2; r++) {
		double sum = 0;

		kv_comm_allreduce_init(&ar, &nvlink, row[r].n);
		for (i = 0; i < 6; i++) {
			double us = kv_comm_allreduce_ns(&ar, mib[i] * 1048576) / 1e3;

			ck_assert_msg(fabs(us - row[r].model_us[i]) <= 0.05, "%g MiB tp %u: %.2f us",
				      mib[i], row[r].n, us);
			ck_assert_msg(us - row[r].pynccl_us[i] >= -7.5 && us - row[r].pynccl_us[i] <= 4,
				      "%g MiB tp %u: model %.2f us, measured %.0f", mib[i], row[r].n,
				      us, row[r].pynccl_us[i]);
			sum += us - row[r].pynccl_us[i];
		}
		ck_assert_msg(fabs(sum / 6 - row[r].mean_diff_us) <= 0.01, "tp %u: mean %+.2f us",
			      row[r].n, sum / 6);
	}
}
END_TEST

/*
 * The figures docs/perf-model.md ("Per-collective overhead") uses for vLLM PR
 * 2192's Llama-2-70B decode (64 tokens x 8192 x 2 B = 1 MiB at tp 4): the
 * A100 datasheet link, 5 us + 1 MiB x 6/4 / 300 GB/s = 10.243 us, and NCCL's
 * model at the sm80 cap of 235 GB/s, fitted ring Simple 0.65 (8.4 + 6 x 3.4)
 * us + 1 MiB / (235e9 x 4/6) = 25.413 us.
 */
START_TEST(test_a100_link_at_pr2192_size)
{
	struct kv_link ds = { .type = KV_LINK_DATASHEET, .busbw_Bps = 300e9, .fixed_ns = 5000 };
	struct kv_link nv = { .type = KV_LINK_NVLINK, .busbw_Bps = 235e9 };
	struct kv_comm_allreduce ar;

	kv_comm_allreduce_init(&ar, &ds, 4);
	CK_NEAR(kv_comm_allreduce_ns(&ar, 1048576), 5000.0 + 1048576 * 1.5 / 300e9 * 1e9);
	kv_comm_allreduce_init(&ar, &nv, 4);
	CK_NEAR(kv_comm_allreduce_ns(&ar, 1048576), 0.65 * 28800.0 + 1048576 / (235e9 * 4 / 6) * 1e9);
	CK_NEAR(round(kv_comm_allreduce_ns(&ar, 1048576) / 100), 254.0);
}
END_TEST

/*
 * The *_fit entry points (what bench/comm_fit fits through): under
 * kv_comm_fit_shipped they give exactly what the simulator's functions give
 * on every link type; under NCCL's own set (scales 1, grouped 0) NVLink is
 * NCCL's model by hand; a scale moves NVLink only (PCIe keeps NCCL's).
 */
START_TEST(test_fit_entry_points)
{
	static const struct kv_comm_fit nccl = { .lat = { 1, 1, 1 }, .bw = { 1, 1, 1 } };
	const struct kv_link links[] = {
		nvlink, pcie, { .type = KV_LINK_NVLINK_BRIDGE, .busbw_Bps = 116e9 },
		{ .type = KV_LINK_XGMI, .busbw_Bps = 336e9 },
		{ .type = KV_LINK_DATASHEET, .busbw_Bps = 300e9, .fixed_ns = 13e3 },
	};
	const struct kv_comm_car vllm = { .impl = KV_CAR_VLLM, .max_bytes = 8 << 20 };
	struct kv_comm_allreduce a, b;
	struct kv_comm_fit f = kv_comm_fit_shipped;
	const double bytes[] = { 1024, 1 << 20, 64 << 20 };
	const uint32_t ns[] = { 2, 4, 8 };
	size_t i, j, k;

	for (i = 0; i < sizeof(links) / sizeof(links[0]); i++)
		for (j = 0; j < 3; j++) {
			kv_comm_allreduce_init(&a, &links[i], ns[j]);
			kv_comm_allreduce_init_fit(&b, &links[i], ns[j], &kv_comm_fit_shipped);
			ck_assert_int_eq(kv_comm_allreduce_set_car(&a, &links[i], &vllm),
					 kv_comm_allreduce_set_car_fit(&b, &links[i], &vllm, &kv_comm_fit_shipped));
			for (k = 0; k < 3; k++) {
				ck_assert_msg(kv_comm_allreduce_ns(&a, bytes[k]) == kv_comm_allreduce_ns(&b, bytes[k]),
					      "link %zu n %u bytes %.0f", i, ns[j], bytes[k]);
				ck_assert_msg(kv_comm_alltoall_ns(&links[i], bytes[k], ns[j]) ==
						      kv_comm_alltoall_fit_ns(&links[i], bytes[k], ns[j],
									      &kv_comm_fit_shipped),
					      "link %zu n %u bytes %.0f", i, ns[j], bytes[k]);
			}
		}
	/* NCCL: all-to-all over 8 GPUs as a Simple ring of 7 steps, (8.4 + 7 * 3.4) us + 7/8 B / busbw */
	CK_NEAR(kv_comm_alltoall_fit_ns(&nvlink, 1 << 20, 8, &nccl),
		(8.4 + 7 * 3.4) * 1e3 + 7.0 / 8.0 * 1048576.0 / 370e9 * 1e9);
	/* NCCL: ring LL128 over 4 GPUs, (14 + 6 * 1.9) us + B / (busbw * 0.92 * 4/6) */
	ck_assert_int_eq(kv_comm_allreduce_cost_fit(&nvlink, 4, KV_COMM_RING, KV_COMM_LL128, &nccl, &a.c[0]), 0);
	CK_NEAR(a.c[0].fixed_ns, (14.0 + 6 * 1.9) * 1e3);
	CK_NEAR(a.c[0].ns_per_byte, 1e9 / (370e9 * 0.92 * 4 / 6));
	/* Simple's latency scaled by 2: NVLink's ring Simple fixed cost doubles, PCIe's does not */
	f.lat[KV_COMM_SIMPLE] = 2.0;
	ck_assert_int_eq(kv_comm_allreduce_cost_fit(&nvlink, 4, KV_COMM_RING, KV_COMM_SIMPLE, &f, &a.c[0]), 0);
	CK_NEAR(a.c[0].fixed_ns, 2.0 * (8.4 + 6 * 3.4) * 1e3);
	ck_assert_int_eq(kv_comm_allreduce_cost_fit(&pcie, 4, KV_COMM_RING, KV_COMM_SIMPLE, &f, &a.c[0]), 0);
	CK_NEAR(a.c[0].fixed_ns, (8.4 + 6 * 5.7) * 1e3);
}
END_TEST

static Suite *comm_suite(void)
{
	Suite *s = suite_create("comm");
	TCase *tc = tcase_create("core");

	tcase_add_test(tc, test_ring_and_tree_by_hand);
	tcase_add_test(tc, test_allreduce_picks_cheapest);
	tcase_add_test(tc, test_xgmi_rccl_constants);
	tcase_add_test(tc, test_datasheet_link);
	tcase_add_test(tc, test_alltoall_and_p2p);
	tcase_add_test(tc, test_link_names);
	tcase_add_test(tc, test_collective_overhead);
	tcase_add_test(tc, test_collective_overhead_per_iteration);
	tcase_add_test(tc, test_nccl_vs_vllm_pynccl_h100);
	tcase_add_test(tc, test_a100_link_at_pr2192_size);
	tcase_add_test(tc, test_tp_allreduce_per_iteration);
	tcase_add_test(tc, test_pipeline_cycle);
	tcase_add_test(tc, test_stage_model);
	tcase_add_test(tc, test_expert_parallel);
	tcase_add_test(tc, test_nccl_on_gpt_fast_a100);
	tcase_add_test(tc, test_custom_allreduce_vs_published_h100);
	tcase_add_test(tc, test_custom_allreduce_limits);
	tcase_add_test(tc, test_busbw_by_gpu_count);
	tcase_add_test(tc, test_engine_comm_terms);
	tcase_add_test(tc, test_fit_entry_points);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(comm_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? 1 : 0;
}
