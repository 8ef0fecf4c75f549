/*
 * test_gpu.c -- the CUDA kernels against their CPU twins on random inputs,
 * and a smoke test of the CUDA backend.  Kernel outputs are poisoned (NaN)
 * before each run; decode must agree within 1e-3 relative error and never
 * give NaN; append must write the twin's bytes (fp16 bit for bit; int8 with
 * equal scales and codes within one step); compaction must equal the
 * twin's byte for byte.  The backend, opened as kind "cuda" through
 * exec.h (kv_backend_open), runs a tiny model: it prefills and decodes,
 * shows that compaction and a swap round trip keep a sequence's logits,
 * and that its KV memory is the pages it used.  The kernels and the
 * backend come from gpu/kvsim-cuda.so through the loader kvsim uses
 * (cuda_module.h).  Exits 77 (skipped) when the build has no CUDA, the
 * module does not load, or no GPU is present.
 *
 * `test_gpu --cpu` runs the same backend smoke test on the "cpu" backend
 * instead, with or without a GPU: its host buffers (two decoded sequences'
 * logits, 2 x vocab floats) and call sequence run under ASan in every
 * sanitizer build.  There the token a step embeds depends on the page a
 * sequence starts at (kv_backend_cpu_debug_token), so moved pages give
 * other logits and only their finiteness is checked.
 */
#include "backend.h"
#include "../gpu/exec.h"
#include "exec_impl.h"
#include "kernels.h"

#if KV_HAVE_CUDA_BACKEND
#include "backend_cuda.h"
#include "cuda_module.h"
#endif

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Relative error of got against ref (max abs error / max abs ref); -1 on NaN in got. */
static double rel_error(const float *got, const float *ref, size_t n)
{
	double err = 0, mag = 1e-30;
	size_t i;

	for (i = 0; i < n; i++) {
		if (!isfinite(got[i]))
			return -1;
		err = fmax(err, fabs((double)got[i] - ref[i]));
		mag = fmax(mag, fabs((double)ref[i]));
	}
	return err / mag;
}

#if KV_HAVE_CUDA_BACKEND
/* kvsim-cuda.so's table, loaded by main through the loader kvsim uses (cuda_module.h). */
static const struct kv_cuda_module *cuda;

static uint64_t state = 0x9E3779B97F4A7C15ULL;

static float frand(void)
{
	state ^= state << 13;
	state ^= state >> 7;
	state ^= state << 17;
	return (float)((double)(state >> 11) / 9007199254740992.0 * 2.0 - 1.0);
}

static const char *type_name[] = { "f32", "f16", "i8" };

/* A random permutation table of `pages` entries. */
static int32_t *perm_table(int pages)
{
	int32_t *t = malloc((size_t)pages * sizeof(int32_t));
	int i;

	for (i = 0; i < pages; i++)
		t[i] = i;
	for (i = pages - 1; i > 0; i--) {
		int j = (int)((frand() + 1.0f) * 0.5f * (float)(i + 1)) % (i + 1);
		int32_t x = t[i];

		t[i] = t[j];
		t[j] = x;
	}
	return t;
}

/*
 * Decode of type t: an arena written by the twin's append, n_q queries
 * attending to ctx - n_q + 1 .. ctx tokens (the causal rows of a prefill
 * chunk), kernel against twin.
 */
static int decode_case(const struct kv_paged_shape *sh, enum kv_kv_type t, int ctx, int n_q)
{
	int pages = (ctx + sh->block_tokens - 1) / sh->block_tokens, layers = sh->layers > 1 ? sh->layers : 1;
	size_t bb = kv_ref_block_bytes(sh, t), ab = (size_t)pages * layers * bb;
	size_t row = (size_t)sh->kv_heads * sh->head_dim, qf = (size_t)sh->heads * sh->head_dim;
	float *k = malloc(row * sizeof(float)), *v = malloc(row * sizeof(float));
	float *q = malloc((size_t)n_q * qf * sizeof(float)), *ref = malloc((size_t)n_q * qf * sizeof(float));
	float *got = malloc((size_t)n_q * qf * sizeof(float)), scale = 1.0f / sqrtf((float)sh->head_dim);
	int32_t *table = perm_table(pages), *lens = malloc((size_t)n_q * sizeof(int32_t));
	void *arena = calloc(1, ab);
	double e;
	int i, j, bad;

	for (i = 0; i < ctx; i++) {
		for (j = 0; j < (int)row; j++) {
			k[j] = frand();
			v[j] = frand();
		}
		if (t == KV_KV_F32)
			kv_ref_kv_append(arena, sh, table, i, k, v);
		else if (t == KV_KV_F16)
			kv_ref_kv_append_f16(arena, sh, table, i, k, v);
		else
			kv_ref_kv_append_i8(arena, sh, table, i, k, v);
	}
	for (i = 0; i < n_q; i++) {
		lens[i] = ctx - n_q + 1 + i;
		for (j = 0; j < (int)qf; j++)
			q[(size_t)i * qf + j] = frand();
		kv_ref_paged_decode_kv(ref + (size_t)i * qf, q + (size_t)i * qf, arena, t, sh, table,
				       lens[i], scale);
	}
	for (i = 0; i < n_q * (int)qf; i++)
		got[i] = NAN;
	bad = cuda->paged_decode_kv(got, q, n_q, lens, arena, ab, t, sh, table, pages, scale) != 0;
	e = bad ? -1 : rel_error(got, ref, (size_t)n_q * qf);
	bad = bad || e < 0 || e > 1e-3;
	printf("%s: decode %s heads %d/%d dim %d block %d layer %d/%d ctx %d queries %d: relative error %.2e\n",
	       bad ? "FAIL" : "ok", type_name[t], sh->heads, sh->kv_heads, sh->head_dim,
	       sh->block_tokens, sh->layer, layers, ctx, n_q, e);
	free(k), free(v), free(q), free(ref), free(got), free(table), free(lens), free(arena);
	return bad;
}

/* Append of type t: poisoned arenas, the same tokens through twin and kernel, bytes compared. */
static int append_case(const struct kv_paged_shape *sh, enum kv_kv_type t, int n_tok)
{
	int pages = (3 + 2 * n_tok) / sh->block_tokens + 1, i; /* holds positions up to 1 + 2 n_tok */
	int layers = sh->layers > 1 ? sh->layers : 1, bad = 0, near = 0;
	size_t bb = kv_ref_block_bytes(sh, t), ab = (size_t)pages * layers * bb, row = (size_t)sh->kv_heads * sh->head_dim;
	size_t data = kv_ref_block_floats(sh), b;
	unsigned char *want = malloc(ab), *got = malloc(ab);
	float *k = malloc((size_t)n_tok * row * sizeof(float)), *v = malloc((size_t)n_tok * row * sizeof(float));
	int32_t *table = perm_table(pages), *pos = malloc((size_t)n_tok * sizeof(int32_t));

	memset(want, 0xff, ab); /* NaN halves, NaN scales, -1 codes */
	memset(got, 0xff, ab);
	for (i = 0; i < n_tok * (int)row; i++) {
		k[i] = frand() * (i % 7 == 0 ? 100.0f : 1.0f);
		v[i] = i % 97 == 0 ? 0.0f : frand();
	}
	for (i = 0; i < n_tok; i++) {
		pos[i] = 3 + i * 2; /* every other slot, across blocks */
		if (t == KV_KV_F16)
			kv_ref_kv_append_f16((uint16_t *)(void *)want, sh, table, pos[i], k + i * row, v + i * row);
		else
			kv_ref_kv_append_i8(want, sh, table, pos[i], k + i * row, v + i * row);
	}
	if (cuda->kv_append(got, ab, t, sh, table, pages, pos, n_tok, k, v))
		bad = 1;
	for (b = 0; b < ab && !bad; b++) {
		size_t in = b % bb;

		if (want[b] == got[b])
			continue;
		if (t == KV_KV_I8 && in < data && abs((int)(signed char)want[b] - (signed char)got[b]) <= 1)
			near++; /* a code one step off: a rounding tie decided differently */
		else
			bad = 1;
	}
	printf("%s: append %s heads %d dim %d block %d layer %d/%d tokens %d: %s (%d codes one step off)\n",
	       bad ? "FAIL" : "ok", type_name[t], sh->kv_heads, sh->head_dim, sh->block_tokens,
	       sh->layer, layers, n_tok, bad ? "bytes differ" : "bytes match", near);
	free(want), free(got), free(k), free(v), free(table), free(pos);
	return bad;
}

/* Compaction with chains and no-ops: the kernel's arena equals the twin's. */
static int compact_case(size_t block_bytes, int blocks, int n)
{
	size_t ab = block_bytes * (size_t)blocks, i;
	unsigned char *want = malloc(ab), *got = malloc(ab);
	int32_t *from = malloc((size_t)n * sizeof(int32_t)), *to = malloc((size_t)n * sizeof(int32_t));
	int bad, j;

	for (i = 0; i < ab; i++)
		want[i] = got[i] = (unsigned char)(frand() * 127.0f);
	for (j = 0; j < n; j++) {
		from[j] = (int32_t)((frand() + 1.0f) * 0.5f * (float)blocks) % blocks;
		to[j] = j % 5 == 0 ? from[j] : (int32_t)((frand() + 1.0f) * 0.5f * (float)blocks) % blocks;
	}
	kv_ref_compact_bytes(want, block_bytes, from, to, n);
	bad = cuda->compact(got, ab, block_bytes, from, to, n) != 0 || memcmp(want, got, ab) != 0;
	printf("%s: compaction of %d moves over %d blocks of %zu bytes\n", bad ? "FAIL" : "ok", n,
	       blocks, block_bytes);
	free(want), free(got), free(from), free(to);
	return bad;
}

static int kernel_cases(void)
{
	static const struct kv_paged_shape shapes[] = {
		{ 32, 32, 128, 16, 1, 0 }, { 32, 8, 128, 16, 2, 1 }, { 8, 1, 64, 32, 1, 0 },
		{ 16, 4, 256, 16, 3, 2 }, { 4, 2, 96, 16, 1, 0 },
	};
	static const int ctxs[] = { 1, 17, 512, 4000 };
	unsigned s, c;
	int fails = 0, n = 0, t;

	for (s = 0; s < sizeof(shapes) / sizeof(shapes[0]); s++) {
		for (t = 0; t < 3; t++) {
			for (c = 0; c < sizeof(ctxs) / sizeof(ctxs[0]); c++, n++)
				fails += decode_case(&shapes[s], (enum kv_kv_type)t, ctxs[c], 1);
			fails += decode_case(&shapes[s], (enum kv_kv_type)t, 700, 37), n++;
		}
		fails += append_case(&shapes[s], KV_KV_F16, 40), n++;
		fails += append_case(&shapes[s], KV_KV_I8, 40), n++;
	}
	fails += compact_case(64, 40, 200), n++;
	fails += compact_case(4096 + 8, 300, 1000), n++; /* not a multiple of 16: the byte path */
	fails += compact_case(1 << 20, 24, 60), n++;
	printf("kernels: %d passed, %d failed\n", n - fails, fails);
	return fails;
}

#endif

/* ---- the backend, through exec.h ---- */

/*
 * The tiny model's vocabulary (one sequence's logits) and width.  Under valgrind
 * (memcheck's preload library in LD_PRELOAD) the CPU smoke test runs a model of the same
 * shape a quarter as wide with 2 layers and a 2,000-token vocabulary: memcheck interprets
 * every sgemm FLOP (1.9 minutes on a loaded 2-core machine at full size) while the calls,
 * buffers and checks are the same.
 */
static uint32_t vocab = 32000, width = 512, n_layers = 4, ffn = 1376;

static void shrink_under_valgrind(void)
{
	const char *pre = getenv("LD_PRELOAD");

	if (pre && strstr(pre, "vgpreload"))
		vocab = 2000, width = 128, n_layers = 2, ffn = 344;
}

static int expect(int cond, const char *what, const struct kv_backend *b)
{
	if (!cond)
		printf("FAIL: backend: %s (%s)\n", what, b ? kv_backend_last_error(b) : "not open");
	return !cond;
}

/*
 * Copies the first n floats of the last step's logits to out: through
 * kv_backend_cuda_logits on "cuda", from the CPU backend's debug view on
 * "cpu" (bounded by its max_batch_seqs rows).
 */
static int logits(struct kv_backend *b, float *out, size_t n)
{
	struct kv_backend_info info;
	struct kv_cpu_debug dbg;

	kv_backend_get_info(b, &info);
#if KV_HAVE_CUDA_BACKEND
	if (!strcmp(info.kind, "cuda"))
		return kv_backend_cuda_logits(b, out, n);
#endif
	if (n > (size_t)b->opts.max_batch_seqs * vocab)
		return KV_EINVAL;
	kv_backend_cpu_debug(b, &dbg);
	memcpy(out, dbg.logits, n * sizeof(float));
	return 0;
}

/* A sequence of the batch: its n_pages pages, ctx cached tokens, n_new new ones. */
static struct kv_backend_seq seq(const int32_t *pages, uint32_t n_pages, uint32_t ctx,
				 uint32_t n_new, uint32_t sample)
{
	return (struct kv_backend_seq){ .pages = pages, .n_pages = n_pages, .ctx = ctx,
					.n_new = n_new, .sample = sample };
}

/* One decode step of the sequence in `pages` (4 of them) at ctx; copies its logits to out. */
static int decode_into(struct kv_backend *b, const int32_t *pages, uint32_t ctx, float *out,
		       uint64_t *ns)
{
	struct kv_backend_seq s = seq(pages, 4, ctx, 1, 1);

	return kv_backend_step(b, &s, 1, ns) || logits(b, out, vocab);
}

/* 1 when got equals ref within 1e-6 (same), or is finite (!same: the CPU's moved tokens). */
static int same_logits(const float *got, const float *ref, int same)
{
	double e = rel_error(got, ref, vocab);

	return e >= 0 && (!same || e < 1e-6);
}

/*
 * The pages the smoke test below uses by the time it measures memory:
 * a's first 3 (44 tokens), bp's first 7 (104 tokens), moved 3, back 3.
 */
#define SMOKE_PAGES 16

static int backend_case(const char *kind, int int8)
{
	struct kv_model m = { .name = "tiny", .layers = n_layers, .hidden = width,
			      .heads = width / 64, .kv_heads = int8 ? 2 : width / 64, .head_dim = 64,
			      .intermediate = ffn, .vocab = vocab, .max_ctx_tokens = 2048,
			      .dtype_bytes = 2, .gated_mlp = 1 };
	struct kv_backend_opts o = { .model = &m, .kv_pages = 64, .page_tokens = 16,
				     .max_batch_tokens = 256, .max_batch_seqs = 4,
				     .max_ctx_tokens = 1024, .seed = 42, .kv_int8 = int8 };
	struct kv_backend *b = NULL;
	struct kv_backend_info info;
	struct kv_backend_mem mem;
	struct kv_diag d;
	int32_t a[4] = { 5, 9, 2, 30 }, bp[8] = { 40, 41, 42, 43, 44, 45, 46, 47 };
	int32_t moved[4] = { 10, 11, 12, 13 }, back[4] = { 20, 21, 22, 23 };
	/* l1 takes both decoded sequences' logits (2 x vocab), l2 one's */
	float *l1 = malloc(2 * vocab * sizeof(float)), *l2 = malloc(vocab * sizeof(float));
	uint64_t ns = 0, copy_ns = 0, move_ns = 0, kv_max;
	int fails = 0, i, cuda = !strcmp(kind, "cuda");

	if (kv_backend_open(kind, &o, &b, &d)) {
		printf("FAIL: backend open: %s\n", d.msg);
		free(l1), free(l2);
		return 1;
	}
	kv_backend_get_info(b, &info);
	printf("backend: %s %s, page %llu bytes, weights %llu, workspace %llu\n", info.kind,
	       info.device, (unsigned long long)info.page_bytes, (unsigned long long)info.weight_bytes,
	       (unsigned long long)info.workspace_bytes);
	{ /* prefill: a 40-token prompt and a 100-token one in chunks of 64 and 36 */
		struct kv_backend_seq s[2] = { seq(a, 4, 0, 40, 1), seq(bp, 8, 0, 64, 0) };

		fails += expect(!kv_backend_step(b, s, 2, &ns) && ns > 0, "prefill chunk", b);
		s[0] = seq(bp, 8, 64, 36, 1);
		fails += expect(!kv_backend_step(b, s, 1, &ns) && ns > 0, "second chunk", b);
	}
	for (i = 0; i < 3; i++) { /* decode both */
		struct kv_backend_seq s[2] = { seq(a, 4, 40 + (uint32_t)i, 1, 1),
					       seq(bp, 8, 100 + (uint32_t)i, 1, 1) };

		fails += expect(!kv_backend_step(b, s, 2, &ns) && ns > 0, "decode step", b);
		fails += expect(!logits(b, l1, 2 * vocab), "logits", b);
		fails += expect(rel_error(l1, l1, 2 * vocab) >= 0, "logits finite", b);
	}
	/* the same decode step from moved pages, then from swapped-out-and-in pages */
	fails += expect(!decode_into(b, a, 43, l1, &ns), "decode at 43", b);
	fails += expect(!kv_backend_move_pages(b, a, moved, 3, &move_ns), "move_pages", b);
	fails += expect(!decode_into(b, moved, 43, l2, &ns), "decode moved", b);
	fails += expect(same_logits(l2, l1, cuda), "compaction keeps the logits", b);
	fails += expect(!kv_backend_swap(b, moved, 3, 0, 1, 1, &copy_ns), "async offload", b);
	{
		struct kv_backend_seq s = seq(bp, 8, 103, 1, 1); /* overlaps the copy */

		fails += expect(!kv_backend_step(b, &s, 1, &ns) && ns > 0 && copy_ns > 0,
				"step with a copy in flight", b);
	}
	fails += expect(!kv_backend_swap(b, back, 3, 0, 0, 0, &copy_ns) && copy_ns > 0,
			"prefetch", b);
	fails += expect(!decode_into(b, back, 43, l2, &ns), "decode swapped", b);
	fails += expect(same_logits(l2, l1, cuda), "a swap round trip keeps the logits", b);
	/* KV: the pages used times page_bytes (CUDA); on the CPU what of them is resident */
	kv_max = SMOKE_PAGES * info.page_bytes;
	fails += expect(!kv_backend_memory(b, &mem) && (cuda ? mem.kv == kv_max :
							 mem.kv > 0 && mem.kv <= kv_max) &&
			(!cuda || mem.weights == info.weight_bytes), "memory: KV of the pages used", b);
	if (mem.kv != kv_max)
		printf("%s: KV memory %llu bytes, %d pages used make %llu\n", cuda ? "FAIL" : "note",
		       (unsigned long long)mem.kv, SMOKE_PAGES, (unsigned long long)kv_max);
	fails += expect(!kv_backend_kv_forget(b) && !kv_backend_memory(b, &mem) &&
			mem.kv == 0, "kv_forget", b);
	fails += expect(!decode_into(b, a, 43, l2, &ns) && rel_error(l2, l2, vocab) >= 0,
			"decode after forget", b);
	{
		struct kv_backend_seq s = seq(a, 4, 2000, 100, 1);
		uint64_t refused_ns = 0;

		fails += expect(kv_backend_step(b, &s, 1, &refused_ns) == KV_EINVAL,
				"a context beyond max_ctx_tokens is refused", b);
	}
	printf("%s: backend %s %s: step %.3f ms, compaction of 3 pages %.3f ms, prefetch %.3f ms\n",
	       fails ? "FAIL" : "ok", kind, int8 ? "int8 KV" : cuda ? "fp16 KV" : "fp32 KV",
	       ns / 1e6, move_ns / 1e6, copy_ns / 1e6);
	kv_backend_close(b);
	free(l1), free(l2);
	return fails;
}

#if KV_HAVE_CUDA_BACKEND
/* Without a GPU, kind "cuda" is listed and answers KV_ENOENT with a reason, leaving *out NULL. */
static int no_gpu_case(void)
{
	struct kv_model m = { .name = "tiny", .layers = 1, .hidden = 64, .heads = 2, .kv_heads = 2,
			      .head_dim = 32, .intermediate = 128, .vocab = 100,
			      .max_ctx_tokens = 64, .dtype_bytes = 2, .gated_mlp = 1 };
	struct kv_backend_opts o = { .model = &m, .kv_pages = 4, .page_tokens = 16,
				     .max_batch_tokens = 16, .max_batch_seqs = 2,
				     .max_ctx_tokens = 64, .seed = 1 };
	struct kv_backend *b = (struct kv_backend *)&o;
	struct kv_diag d;
	int rc = kv_backend_open("cuda", &o, &b, &d);

	if (strcmp(kv_backend_kinds[0], "cuda") || rc != KV_ENOENT || b ||
	    !strstr(d.msg, "no GPU")) {
		printf("FAIL: without a GPU, kind \"cuda\" (listed first: %s) opened with %d: %s\n",
		       kv_backend_kinds[0], rc, rc ? d.msg : "");
		if (!rc)
			kv_backend_close(b);
		return 1;
	}
	printf("ok: kind \"cuda\" without a GPU: %s\n", d.msg);
	return 0;
}
#endif

int main(int argc, char **argv)
{
	struct kv_gpu_info info;

	if (argc == 2 && !strcmp(argv[1], "--cpu")) {
		int fails;

		shrink_under_valgrind();
		fails = backend_case("cpu", 0);

		printf("%s\n", fails ? "FAILED" : "all passed");
		return fails ? 1 : 0;
	}
	if (argc != 1) {
		fprintf(stderr, "usage: test_gpu [--cpu]\n");
		return 2;
	}
	if (kv_gpu_query(&info)) {
#if KV_HAVE_CUDA_BACKEND
		if (no_gpu_case())
			return 1;
#endif
		printf("%s: skipped\n", info.why);
		return 77;
	}
#if KV_HAVE_CUDA_BACKEND
	{
		int fails;

		cuda = kv_cuda_module_load(NULL); /* kv_gpu_query loaded it */
		printf("device: %s (CUDA backend from %s)\n", info.name, kv_cuda_module_path());
		fails = kernel_cases();
		fails += backend_case("cuda", 0);
		fails += backend_case("cuda", 1);
		printf("%s\n", fails ? "FAILED" : "all passed");
		return fails ? 1 : 0;
	}
#else
	return 77;
#endif
}
