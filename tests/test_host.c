/*
 * test_host.c -- the host model (sim/host.h): each CPU term on hand-built
 * shapes, the combine modes (async is exactly max(CPU, GPU) + sync),
 * CUDA-graph sizes at their edges, the perf model's padding and eager
 * floor, and host profiles loaded with file/line/field errors.
 */
#include "testutil.h"

#include <check.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "engine.h"
#include "perf.h"
#include "profile_load.h"
#include "simtest.h"

#include "test_profiles.h"

/* A host with every coefficient 0, on, synchronous, blocks of 16 tokens. */
static struct kv_host bare(void)
{
	struct kv_host h;

	memset(&h, 0, sizeof(h));
	h.on = 1;
	h.steps = 1;
	h.inv_block_tokens = 1.0 / 16;
	return h;
}

/* S sequences: d decoding, the rest prefilling p tokens in all; s sample. */
static struct kv_batch_shape shape(uint32_t S, uint32_t d, uint64_t p, uint32_t s)
{
	struct kv_batch_shape b;

	memset(&b, 0, sizeof(b));
	b.n_seqs = S;
	b.n_decode = d;
	b.n_prefill_tokens = p;
	b.n_sample = s;
	return b;
}

#define ck_near(a, b) ck_assert_msg(fabs((double)(a) - (double)(b)) < 1e-9 * (fabs((double)(b)) + 1), "%.17g != %.17g", (double)(a), (double)(b))

START_TEST(term_sched)
{
	struct kv_host h = bare();
	struct kv_batch_shape b = shape(10, 10, 0, 10);

	h.sched_ns = 300;
	h.sched_seq_ns = 7;
	ck_near(kv_host_cpu_ns(&h, &b), 300 + 10 * 7);
}
END_TEST

START_TEST(term_prep)
{
	struct kv_host h = bare();
	struct kv_batch_shape b = shape(3, 2, 100, 3); /* 102 tokens, 3 sequences */

	h.prep_token_ns = 2;
	h.prep_seq_ns = 11;
	ck_near(kv_host_cpu_ns(&h, &b), 102 * 2 + 3 * 11);
}
END_TEST

START_TEST(term_block_hash)
{
	struct kv_host h = bare();
	struct kv_batch_shape b = shape(1, 0, 64, 1); /* 64 tokens fill 4 blocks of 16 */

	h.block_ns = 5;
	ck_near(kv_host_cpu_ns(&h, &b), 4 * 5);
	h.block_ns = 0;
	h.hash_ns = 3;
	ck_near(kv_host_cpu_ns(&h, &b), 4 * 3);
	b = shape(8, 8, 0, 8); /* 8 decodes fill half a block */
	ck_near(kv_host_cpu_ns(&h, &b), 0.5 * 3);
}
END_TEST

START_TEST(term_sample_detok)
{
	struct kv_host h = bare();
	struct kv_batch_shape b = shape(5, 3, 40, 4); /* 4 sample: 3 decodes, one last chunk */

	h.sample_ns = 9;
	ck_near(kv_host_cpu_ns(&h, &b), 4 * 9);
	h.detok_ns = 6;
	ck_near(kv_host_cpu_ns(&h, &b), 4 * (9 + 6));
	h.on = 0;
	ck_near(kv_host_cpu_ns(&h, &b), 0);
}
END_TEST

START_TEST(combine_sync)
{
	struct kv_host h = bare();
	struct kv_batch_shape b = shape(4, 4, 0, 4);

	h.sched_ns = 1000;
	h.sample_ns = 100;
	ck_near(kv_host_step_ns(&h, &b, kv_host_cpu_ns(&h, &b), 5000), 1000 + 400 + 5000);
	h.output_async = 1; /* output processing beside the GPU */
	ck_near(kv_host_step_ns(&h, &b, kv_host_cpu_ns(&h, &b), 5000), 1000 + 5000);
	ck_near(kv_host_step_ns(&h, &b, kv_host_cpu_ns(&h, &b), 300), 1000 + 400);
	h.on = 0;
	ck_near(kv_host_step_ns(&h, &b, 12345, 5000), 5000);
}
END_TEST

START_TEST(combine_multistep)
{
	struct kv_host h = bare();
	struct kv_batch_shape dec = shape(4, 4, 0, 4), pre = shape(1, 0, 100, 1);

	h.mode = KV_HOST_MULTISTEP;
	h.steps = 8;
	h.sched_ns = 800;
	h.sample_ns = 10;
	/* a decode step pays 1/8 of the scheduling pass, all of its output processing */
	ck_near(kv_host_step_ns(&h, &dec, kv_host_cpu_ns(&h, &dec), 2000), 100 + 40 + 2000);
	/* a step with prefill is scheduled alone */
	ck_near(kv_host_step_ns(&h, &pre, kv_host_cpu_ns(&h, &pre), 2000), 800 + 10 + 2000);
}
END_TEST

START_TEST(combine_async)
{
	struct kv_host h = bare();
	struct kv_batch_shape b = shape(50, 50, 0, 50);
	double cpu;

	h.mode = KV_HOST_ASYNC;
	h.sched_ns = 2000;
	h.sched_seq_ns = 30;
	h.sample_ns = 20;
	h.sync_ns = 77;
	cpu = kv_host_cpu_ns(&h, &b);
	ck_near(cpu, 2000 + 50 * 30 + 50 * 20);
	ck_assert(kv_host_step_ns(&h, &b, cpu, 9000) == fmax(cpu, 9000) + 77);
	ck_assert(kv_host_step_ns(&h, &b, cpu, 100) == fmax(cpu, 100) + 77);
	ck_assert(kv_host_step_ns(&h, &b, cpu, cpu) == cpu + 77);
}
END_TEST

/*
 * Driving a multi-GPU replica's workers (w) is host time before the forward
 * pass, in every mode: added to the GPU's time with the host model off, to
 * the pre-forward CPU time in sync, once per pass in multi-step, beside the
 * GPU in async.
 */
START_TEST(combine_worker_sync)
{
	struct kv_host h = bare();
	struct kv_batch_shape dec = shape(4, 4, 0, 4);
	double cpu;

	h.sched_ns = 800;
	h.sample_ns = 10;
	h.worker_sync_ns = 200;
	cpu = kv_host_cpu_ns(&h, &dec);
	ck_near(cpu, 800 + 40); /* not part of the engine's own CPU time */
	ck_near(kv_host_step_ns(&h, &dec, cpu, 2000), 800 + 200 + 40 + 2000);
	h.mode = KV_HOST_MULTISTEP;
	h.steps = 8;
	ck_near(kv_host_step_ns(&h, &dec, cpu, 2000), (800 + 200) / 8.0 + 40 + 2000);
	h.mode = KV_HOST_ASYNC;
	h.sync_ns = 7;
	ck_near(kv_host_step_ns(&h, &dec, cpu, 2000), 2000 + 7);
	ck_near(kv_host_step_ns(&h, &dec, cpu, 900), 800 + 40 + 200 + 7);
	h.on = 0;
	ck_near(kv_host_step_ns(&h, &dec, 0, 2000), 2000 + 200);
}
END_TEST

/*
 * Every worker gets the step's per-sequence scheduler output (worker_inputs
 * metadata): w grows by S x worker_seq_ns, paid where worker_sync is (once
 * per pass in multi-step, beside the GPU in async, after it with the host
 * model off).
 */
START_TEST(combine_worker_seq)
{
	struct kv_host h = bare();
	struct kv_batch_shape dec = shape(4, 4, 0, 4);
	double cpu;

	h.sched_ns = 800;
	h.sample_ns = 10;
	h.worker_sync_ns = 200;
	h.worker_seq_ns = 30;
	cpu = kv_host_cpu_ns(&h, &dec);
	ck_near(cpu, 800 + 40);
	ck_near(kv_host_step_ns(&h, &dec, cpu, 2000), 800 + 200 + 4 * 30 + 40 + 2000);
	h.mode = KV_HOST_MULTISTEP;
	h.steps = 8;
	ck_near(kv_host_step_ns(&h, &dec, cpu, 2000), (800 + 200 + 4 * 30) / 8.0 + 40 + 2000);
	h.mode = KV_HOST_ASYNC;
	h.sync_ns = 7;
	ck_near(kv_host_step_ns(&h, &dec, cpu, 900), 800 + 40 + 200 + 4 * 30 + 7);
	h.on = 0;
	ck_near(kv_host_step_ns(&h, &dec, 0, 2000), 2000 + 200 + 4 * 30);
}
END_TEST

START_TEST(graph_sizes)
{
	struct kv_host h = bare();
	static const uint32_t n[] = { 0, 1, 2, 3, 4, 5, 8, 9, 16, 17, 255, 256, 257, 512 };
	static const uint32_t want[] = { 0, 1, 2, 4, 4, 8, 8, 16, 16, 24, 256, 256, 0, 0 };
	size_t i;

	h.graph_max = 256;
	for (i = 0; i < sizeof(n) / sizeof(n[0]); i++)
		ck_assert_msg(kv_host_graph_size(&h, n[i]) == want[i], "n %u: %u, want %u", n[i],
			      kv_host_graph_size(&h, n[i]), want[i]);
	h.graph_max = 160; /* SGLang's largest */
	ck_assert_uint_eq(kv_host_graph_size(&h, 160), 160);
	ck_assert_uint_eq(kv_host_graph_size(&h, 153), 160);
	ck_assert_uint_eq(kv_host_graph_size(&h, 161), 0);
	h.graph_max = 3; /* 3 pads to 4, which is not captured */
	ck_assert_uint_eq(kv_host_graph_size(&h, 3), 0);
	h.graph_max = 0; /* graphs off: every step eager */
	ck_assert_uint_eq(kv_host_graph_size(&h, 1), 0);
}
END_TEST

/* The perf model on llama-2-7b / a100-80g with the host model h. */
static kv_ns step(const struct kv_host *h, const struct kv_batch_shape *b)
{
	struct kv_model m = load_model("llama-2-7b");
	struct kv_device dev = load_device("a100-80g");
	struct kv_perf pf;

	kv_perf_init(&pf, &m, &dev, 1);
	if (h)
		pf.host = *h;
	return kv_perf_iter_ns(&pf, b);
}

/* A decode batch of n at 512 tokens of context each (KV bytes of llama-2-7b). */
static struct kv_batch_shape decodes(uint32_t n)
{
	struct kv_batch_shape b = shape(n, n, 0, n);

	b.attn_pairs = (uint64_t)n * 512;
	b.kv_read_bytes = (uint64_t)n * 512 * 524288;
	return b;
}

START_TEST(perf_padding)
{
	struct kv_host h = bare();
	struct kv_batch_shape b = decodes(201), p = decodes(208);

	h.graph_max = 512;
	/* 201 decodes run the 208 graph: the linear layers compute for 208 rows */
	ck_assert_msg(step(&h, &b) > step(NULL, &b), "padded %llu, plain %llu",
		      (unsigned long long)step(&h, &b), (unsigned long long)step(NULL, &b));
	p.attn_pairs = b.attn_pairs;
	p.kv_read_bytes = b.kv_read_bytes;
	ck_assert_uint_eq(step(&h, &b), step(NULL, &p));
	/* exactly a captured size: no padding */
	ck_assert_uint_eq(step(&h, &p), step(NULL, &p));
}
END_TEST

START_TEST(perf_eager_floor)
{
	struct kv_host h = bare();
	struct kv_batch_shape b = decodes(1);
	kv_ns plain = step(NULL, &b);

	h.graph_max = 0; /* eager */
	h.launch_ns = 5000;
	h.eager_ns = 32 * 10 * 5000.0; /* 1.6 ms of launches over the layers */
	ck_assert_uint_eq(step(&h, &b), (kv_ns)ceil(1.2e6 + fmax(plain - 1.2e6, 1.6e6)));
	h.eager_ns = 1; /* launches faster than the kernels: no cost */
	ck_assert_uint_eq(step(&h, &b), plain);
	h.graph_max = 512; /* the graph hides the launches */
	h.eager_ns = 1e9;
	ck_assert_uint_eq(step(&h, &b), plain);
}
END_TEST

START_TEST(perf_async)
{
	struct kv_host h = bare();
	struct kv_batch_shape b = decodes(64);
	kv_ns gpu = step(NULL, &b);

	h.mode = KV_HOST_ASYNC;
	h.sync_ns = 50000;
	h.sched_ns = 1e6;
	ck_assert_uint_eq(step(&h, &b), (kv_ns)ceil(fmax((double)gpu, 1e6) + 50000));
	h.sched_ns = 1e8; /* the host is the bottleneck */
	ck_assert_uint_eq(step(&h, &b), (kv_ns)ceil(1e8 + 50000));
}
END_TEST

START_TEST(host_profile_load)
{
	static const char ok[] = "name: fast\nsource: test\ncpu_speed: 2\ncoefficients:\n  sched: 1ms\n";
	static const char bad[] = "name: x\nsource: y\ncoefficients:\n  sched: 1ms\n  bogus: 3\n";
	static const char slow[] = "name: x\nsource: y\ncpu_speed: 0\n";
	struct kv_host_profile h;
	struct kv_diag d;

	ck_assert_int_eq(kv_profile_load_host_mem("ok.yaml", ok, strlen(ok), &h, &d), 0);
	ck_assert(h.cpu_speed == 2 && h.set == 1u << KV_HOSTC_SCHED && h.coef[KV_HOSTC_SCHED] == 1e6);
	ck_assert_int_ne(kv_profile_load_host_mem("bad.yaml", bad, strlen(bad), &h, &d), 0);
	ck_assert_msg(d.line == 5 && strstr(d.msg, "bogus"), "line %lu: %s", d.line, d.msg);
	ck_assert_int_ne(kv_profile_load_host_mem("slow.yaml", slow, strlen(slow), &h, &d), 0);
	ck_assert_msg(d.line == 3 && strstr(d.field, "cpu_speed"), "line %lu field %s: %s", d.line,
		      d.field, d.msg);
	ck_assert_int_eq(kv_profile_load_host("reference", &h, &d), 0);
	ck_assert(h.cpu_speed == 1 && h.set == 0);
}
END_TEST

/* The host model an engine section resolves to (perf.host after the replicas are built). */
static struct kv_host resolved(const char *engine, const char *host_line)
{
	struct kv_workload wl;
	struct kv_sim s;
	struct kv_host h;
	char yaml[1024];

	snprintf(yaml, sizeof(yaml),
		 "model: llama-2-7b\ndevice: a100-80g\n%sengine: %s\n"
		 "workload:\n  requests: 1\n  arrival: {process: poisson, rate: 1}\n"
		 "  lengths: {dist: fixed, prompt: 10, output: 2}\n", host_line, engine);
	load(&wl, yaml);
	sim_start(&wl, &s, NULL, 0);
	h = s.grp[0].perf.host;
	kv_sim_release(&s);
	kv_workload_release(&wl);
	return h;
}

/*
 * Each version's defaults as docs/engines.md tabulates them, and the
 * figures docs/host-model.md quotes: V1's CPU time of a decode step of 32
 * and of 100 sequences (1.648 ms and 3.025 ms; with the device's 1.2 ms,
 * 2.8 and 4.2 ms outside the kernels), with the fitted sched and sched_seq.
 */
START_TEST(engine_versions)
{
	struct kv_host h = resolved("vllm", "");
	struct kv_batch_shape b32 = shape(32, 32, 0, 32), b100 = shape(100, 100, 0, 100);

	ck_assert(h.on && h.mode == KV_HOST_SYNC && !h.output_async && h.graph_max == 512);
	ck_assert(h.detok_ns == 0 && h.sched_ns == 1e6 && h.sched_seq_ns == 1e3 && h.hash_ns == 2e3);
	ck_near(kv_host_cpu_ns(&h, &b32), 1648e3);
	ck_near(kv_host_cpu_ns(&h, &b100), 3025e3);
	h = resolved("{name: vllm, version: v1-async}", "");
	ck_assert(h.mode == KV_HOST_ASYNC && h.sync_ns == 50e3);
	h = resolved("{name: vllm, async_scheduling: \"on\", cuda_graphs: false}", "");
	ck_assert(h.mode == KV_HOST_ASYNC && h.graph_max == 0 && h.eager_ns == 32 * 10 * 5e3);
	h = resolved("vllm-v0", "");
	ck_assert_msg(!h.on && h.graph_max == 0 && h.eager_ns == 0, "legacy: the GPU model alone");
	h = resolved("{name: vllm-v0, version: \"0.5\"}", "");
	ck_assert(h.on && h.mode == KV_HOST_SYNC && h.detok_ns == 10e3 && h.hash_ns == 0);
	ck_assert_uint_eq(h.graph_max, 256);
	h = resolved("{name: vllm-v0, version: \"0.6\", num_scheduler_steps: 8}", "");
	ck_assert(h.mode == KV_HOST_MULTISTEP && h.steps == 8 && h.output_async);
	h = resolved("sglang", "");
	ck_assert(h.mode == KV_HOST_ASYNC && h.graph_max == 160 && h.block_ns == 0 && h.sched_ns == 2.4e6);
	h = resolved("{name: sglang, version: \"0.3\"}", "");
	ck_assert(h.mode == KV_HOST_SYNC);
	h = resolved("{name: vllm, host_model: false}", "");
	ck_assert(!h.on);
}
END_TEST

/*
 * vllm-v0's worker_sync: the per-step cost of driving the workers, charged
 * on multi-GPU replicas only, with the host model on (c + w + g) or off
 * (legacy: g + w); 0 by default.
 */
START_TEST(v0_worker_sync)
{
	static const char tp2[] = "cluster: {tensor_parallel: 2}\n";
	struct kv_host h;

	h = resolved("{name: vllm-v0, version: \"0.5\", worker_sync: 3ms}", tp2);
	ck_assert(h.on);
	ck_near(h.worker_sync_ns, 3e6);
	h = resolved("{name: vllm-v0, worker_sync: 3ms}", tp2);
	ck_assert(!h.on);
	ck_near(h.worker_sync_ns, 3e6);
	h = resolved("{name: vllm-v0, version: \"0.5\", worker_sync: 3ms}", "");
	ck_near(h.worker_sync_ns, 0);
	h = resolved("{name: vllm-v0, version: \"0.5\"}", tp2);
	ck_near(h.worker_sync_ns, 0);
}
END_TEST

/*
 * worker_inputs metadata (docs/host-model.md, "Driving the workers"): each
 * scheduled sequence costs worker_seq_overhead per worker (tp x pp) each
 * pass, on every engine, on multi-GPU replicas only; broadcast (the
 * default) costs nothing per sequence.  vllm-v0's executor ray adds
 * ray_step_overhead per step.
 */
START_TEST(worker_inputs_metadata)
{
	static const char tp2[] = "cluster: {tensor_parallel: 2}\n";
	static const char tp4[] = "cluster: {tensor_parallel: 4}\n";
	struct kv_host h;

	h = resolved("{name: vllm-v0, version: \"0.5\", worker_inputs: metadata}", tp2);
	ck_near(h.worker_seq_ns, 2 * 46e3);
	ck_near(h.worker_sync_ns, 0);
	h = resolved("{name: vllm-v0, version: \"0.5\", worker_inputs: metadata, worker_seq_overhead: 10us}", tp4);
	ck_near(h.worker_seq_ns, 4 * 10e3);
	h = resolved("{name: vllm-v0, worker_inputs: metadata}", tp2); /* legacy: host model off, still charged */
	ck_assert(!h.on);
	ck_near(h.worker_seq_ns, 2 * 46e3);
	h = resolved("{name: vllm-v0, version: \"0.5\", worker_inputs: metadata}", ""); /* one GPU: no workers */
	ck_near(h.worker_seq_ns, 0);
	h = resolved("{name: vllm-v0, version: \"0.5\"}", tp4);
	ck_near(h.worker_seq_ns, 0);
	h = resolved("{name: vllm-v0, version: \"0.5\", executor: ray}", tp2);
	ck_near(h.worker_sync_ns, 274e3);
	ck_near(h.worker_seq_ns, 0);
	h = resolved("{name: vllm, worker_inputs: metadata, worker_seq_overhead: 5us}", tp2);
	ck_near(h.worker_seq_ns, 2 * 5e3);
	h = resolved("{name: sglang, worker_inputs: metadata}", tp4);
	ck_near(h.worker_seq_ns, 4 * 46e3);
}
END_TEST

/* The step time of a decode batch of n on a TP 2 vllm-v0 0.5 replica under engine options opts. */
static kv_ns v0_tp2_step(const char *opts, uint32_t n)
{
	struct kv_workload wl;
	struct kv_sim s;
	struct kv_batch_shape b = decodes(n);
	char yaml[1024];
	kv_ns t;

	snprintf(yaml, sizeof(yaml),
		 "model: llama-2-7b\ndevice: a100-80g\ncluster: {tensor_parallel: 2}\n"
		 "engine: {name: vllm-v0, version: \"0.5\"%s}\n"
		 "workload:\n  requests: 1\n  arrival: {process: poisson, rate: 1}\n"
		 "  lengths: {dist: fixed, prompt: 10, output: 2}\n", opts);
	load(&wl, yaml);
	sim_start(&wl, &s, NULL, 0);
	t = kv_perf_iter_ns(&s.grp[0].perf, &b);
	kv_sim_release(&s);
	kv_workload_release(&wl);
	return t;
}

/*
 * The documented effect on a step (docs/host-model.md): a decode step of 16
 * sequences at TP 2 with worker_inputs metadata lasts 16 x 2 x 46 us =
 * 1.472 ms longer than with broadcast, 16 x 2 x 10 us with
 * worker_seq_overhead 10 us; executor ray adds 274 us.
 */
START_TEST(worker_inputs_step_time)
{
	kv_ns base = v0_tp2_step("", 16);
	kv_ns meta = v0_tp2_step(", worker_inputs: metadata", 16);
	kv_ns meta10 = v0_tp2_step(", worker_inputs: metadata, worker_seq_overhead: 10us", 16);
	kv_ns ray = v0_tp2_step(", executor: ray", 16);

	ck_assert_msg(llabs((long long)(meta - base) - 1472000) <= 1, "metadata adds %lld ns",
		      (long long)(meta - base));
	ck_assert_msg(llabs((long long)(meta10 - base) - 320000) <= 1, "adds %lld ns",
		      (long long)(meta10 - base));
	ck_assert_msg(llabs((long long)(ray - base) - 274000) <= 1, "ray adds %lld ns",
		      (long long)(ray - base));
	ck_assert_uint_eq(v0_tp2_step(", worker_inputs: broadcast", 16), base);
}
END_TEST

/* An option beats the host profile, which beats the version's default over cpu_speed. */
START_TEST(coefficient_precedence)
{
	static const char prof[] = "name: t\nsource: test\ncpu_speed: 2\ncoefficients:\n  sample: 3us\n";
	char line[256];
	struct kv_host h;

	snprintf(line, sizeof(line), "host: %s\n", temp_file(prof, ".yaml", 1));
	h = resolved("{name: vllm, host_prep_seq: 7000}", line);
	ck_near(h.sched_ns, 500e3); /* 1 ms / 2 */
	ck_near(h.sample_ns, 3e3); /* measured on this host */
	ck_near(h.prep_seq_ns, 7e3); /* the option */
}
END_TEST

/* A device profile may name the host its workloads run by default; a bad name is its error. */
START_TEST(device_default_host)
{
	static const char dev[] = "name: d\nmemory: 80GB\nmem_bandwidth: 2039GB/s\nfp16_tflops: 312\n"
				  "host_link_bandwidth: 32\nsource: test\nhost: %s\n";
	struct kv_device v;
	struct kv_diag d;
	char text[512];

	snprintf(text, sizeof(text), dev, "reference");
	ck_assert_int_eq(kv_profile_load_device_mem("d.yaml", text, strlen(text), &v, &d), 0);
	ck_assert_str_eq(v.host, "reference");
	snprintf(text, sizeof(text), dev, "nope");
	ck_assert_int_ne(kv_profile_load_device_mem("d.yaml", text, strlen(text), &v, &d), 0);
	ck_assert_msg(d.line == 7 && !strcmp(d.field, "host"), "line %lu field %s: %s", d.line,
		      d.field, d.msg);
}
END_TEST

static Suite *host_suite(void)
{
	Suite *s = suite_create("host");
	TCase *tc = tcase_create("core");

	tcase_add_test(tc, term_sched);
	tcase_add_test(tc, term_prep);
	tcase_add_test(tc, term_block_hash);
	tcase_add_test(tc, term_sample_detok);
	tcase_add_test(tc, combine_sync);
	tcase_add_test(tc, combine_multistep);
	tcase_add_test(tc, combine_async);
	tcase_add_test(tc, combine_worker_sync);
	tcase_add_test(tc, combine_worker_seq);
	tcase_add_test(tc, graph_sizes);
	tcase_add_test(tc, perf_padding);
	tcase_add_test(tc, perf_eager_floor);
	tcase_add_test(tc, perf_async);
	tcase_add_test(tc, host_profile_load);
	tcase_add_test(tc, engine_versions);
	tcase_add_test(tc, coefficient_precedence);
	tcase_add_test(tc, v0_worker_sync);
	tcase_add_test(tc, worker_inputs_metadata);
	tcase_add_test(tc, worker_inputs_step_time);
	tcase_add_test(tc, device_default_host);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(host_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? 1 : 0;
}
