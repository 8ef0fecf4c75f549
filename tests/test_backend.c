/*
 * test_backend.c -- the CPU execution backend (gpu/backend_cpu.c) through
 * the public interface (gpu/exec.h) and its test-only view (exec_impl.h):
 * layer 0's KV against a naive recomputation from the same weights;
 * prefill in one chunk, in two, as P-1 tokens plus a decode step, and
 * inside a larger batch giving the same residual stream; memory measured
 * by mincore (weights resident, KV growing by exactly the pages written,
 * gone after kv_forget); page moves and swaps bit-exact; bad inputs
 * refused.  Models: `tiny` from configs/models, and a small GQA model with
 * tied embeddings and a 2-matrix MLP that covers the other paths.
 */
#include "exec_impl.h"
#include "kernels.h"
#include "profile_load.h"
#include "testutil.h"

#include <check.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#define PAGE_TOKENS 16

/*
 * `tiny` from configs/models; under valgrind a quarter-width model of the
 * same shape (gated MLP, untied embeddings, no GQA): memcheck runs each
 * sgemm FLOP through its JIT, and tiny's 45M parameters made this suite
 * take a quarter of an hour there while the paths are the same.
 */
static struct kv_model load_tiny(void)
{
	const char *pre = getenv("LD_PRELOAD");
	struct kv_model m;
	struct kv_diag d;
	int err;

	if (pre && strstr(pre, "vgpreload")) {
		m = (struct kv_model){ .name = "tiny-vg", .layers = 2, .hidden = 128, .heads = 4,
				       .kv_heads = 4, .head_dim = 32, .intermediate = 344,
				       .vocab = 2000, .max_ctx_tokens = 2048, .dtype_bytes = 2,
				       .gated_mlp = 1, .tie_embeddings = 0 };
		m.params = kv_model_arch_params(&m);
		return m;
	}
	err = kv_profile_load_model("tiny", &m, &d);
	ck_assert_msg(err == 0, "loading tiny: %s: %s", d.field, d.msg);
	return m;
}

/* GQA (4 heads on 2 KV heads), tied embeddings, GELU MLP: the paths tiny does not take. */
static struct kv_model micro_model(void)
{
	struct kv_model m = { .name = "micro", .layers = 2, .hidden = 96, .heads = 4,
			      .kv_heads = 2, .head_dim = 24, .intermediate = 200, .vocab = 500,
			      .max_ctx_tokens = 256, .dtype_bytes = 2, .gated_mlp = 0,
			      .tie_embeddings = 1 };

	m.params = kv_model_arch_params(&m);
	return m;
}

static struct kv_backend *open_cpu(const struct kv_model *m, uint64_t kv_pages, uint64_t seed)
{
	struct kv_backend_opts o = { .model = m, .kv_pages = kv_pages, .page_tokens = PAGE_TOKENS,
				     .max_batch_tokens = 128, .max_batch_seqs = 8,
				     .max_ctx_tokens = 256, .seed = seed, .threads = 0 };
	struct kv_backend *b = NULL;
	struct kv_diag d;
	int err = kv_backend_open("cpu", &o, &b, &d);

	ck_assert_msg(err == 0 && b, "open cpu: %d: %s", err, d.msg);
	return b;
}

/* fp32 KV bytes of one token: kv_model_kv_bytes_per_token at dtype 4. */
static uint64_t kv_bytes_fp32(const struct kv_model *m)
{
	struct kv_model m4 = *m;

	m4.dtype_bytes = 4;
	return kv_model_kv_bytes_per_token(&m4);
}

/* Runs one step; asserts success and a positive time. */
static void step_ok(struct kv_backend *b, const struct kv_backend_seq *s, uint32_t n)
{
	uint64_t ns = 0;
	int err = kv_backend_step(b, s, n, &ns);

	ck_assert_msg(err == 0, "step: %d: %s", err, kv_backend_last_error(b));
	ck_assert_msg(ns > 0, "step took %llu ns", (unsigned long long)ns);
}

/* Copies row r of the last step's residual stream, asserting it is finite. */
static void hidden_row(struct kv_backend *b, uint32_t r, float *out)
{
	struct kv_cpu_debug dbg;
	uint32_t h = b->model.hidden, i;

	kv_backend_cpu_debug(b, &dbg);
	memcpy(out, dbg.hidden + (size_t)r * h, h * sizeof(float));
	for (i = 0; i < h; i++)
		ck_assert_msg(isfinite(out[i]), "row %u element %u is %g", r, i, out[i]);
}

/* max |a - b| / max |a| over n floats. */
static double rel_err(const float *a, const float *b, size_t n)
{
	double e = 0, mag = 1e-30;
	size_t i;

	for (i = 0; i < n; i++) {
		e = fmax(e, fabs((double)a[i] - b[i]));
		mag = fmax(mag, fabs((double)a[i]));
	}
	return e / mag;
}

/* Address of K (kv = 0) or V (kv = 1), KV head hh, of token pos of a sequence, layer l. */
static const float *kv_at(struct kv_backend *b, const int32_t *pages, uint32_t l, int kv,
			  uint32_t hh, uint32_t pos)
{
	const struct kv_model *m = &b->model;
	struct kv_cpu_debug dbg;
	size_t blk = (size_t)pages[pos / PAGE_TOKENS] * m->layers + l;

	kv_backend_cpu_debug(b, &dbg);
	return dbg.arena + ((blk * 2 + (size_t)kv) * m->kv_heads + hh) * PAGE_TOKENS * m->head_dim +
	       (size_t)(pos % PAGE_TOKENS) * m->head_dim;
}

/*
 * Layer 0's K and V of token pos recomputed naively in double: embedding
 * row, RMSNorm, then the K and V columns of W_qkv as a triple loop.
 * Returns the relative error of the stored values.
 */
static double check_layer0_token(struct kv_backend *b, const struct kv_backend_seq *s,
				 uint32_t pos)
{
	const struct kv_model *m = &b->model;
	uint32_t h = m->hidden, q = m->heads * m->head_dim, kvd = m->kv_heads * m->head_dim;
	uint32_t qkv = q + 2 * kvd, i, c;
	struct kv_cpu_debug dbg;
	const float *e;
	double ss = 0, inv, worst = 0, mag = 1e-30;
	double *xn = malloc(h * sizeof(double));

	kv_backend_cpu_debug(b, &dbg);
	e = dbg.embedding + (size_t)kv_backend_cpu_debug_token(b, s, pos) * h;
	for (i = 0; i < h; i++)
		ss += (double)e[i] * e[i];
	inv = 1.0 / sqrt(ss / h + dbg.norm_eps);
	for (i = 0; i < h; i++)
		xn[i] = e[i] * inv * dbg.layer[0].attn_norm[i];
	for (c = 0; c < 2 * kvd; c++) {
		double ref = 0;
		const float *got = kv_at(b, s->pages, 0, c >= kvd, (c % kvd) / m->head_dim, pos);

		for (i = 0; i < h; i++)
			ref += xn[i] * dbg.layer[0].w_qkv[(size_t)i * qkv + q + c];
		worst = fmax(worst, fabs(ref - got[c % m->head_dim]));
		mag = fmax(mag, fabs(ref));
	}
	free(xn);
	return worst / mag;
}

/* y[n] (+)= x[k] W[k][n] in double, W row-major with rows ldw apart. */
static void matvec(double *y, const double *x, const float *w, size_t k, size_t n, size_t ldw,
		   int accumulate)
{
	size_t i, j;

	for (j = 0; j < n && !accumulate; j++)
		y[j] = 0;
	for (i = 0; i < k; i++)
		for (j = 0; j < n; j++)
			y[j] += x[i] * w[i * ldw + j];
}

static void rmsnorm_d(double *out, const double *x, const float *w, size_t h, double eps)
{
	double ss = 0;
	size_t i;

	for (i = 0; i < h; i++)
		ss += x[i] * x[i];
	for (i = 0; i < h; i++)
		out[i] = x[i] / sqrt(ss / h + eps) * w[i];
}

/* Causal attention of token t over K, V rows 0..t ([P][kv_heads * head_dim]), softmax in two passes. */
static void attend_d(double *out, const double *q, const double *K, const double *V, uint32_t t,
		     const struct kv_model *m)
{
	uint32_t d = m->head_dim, kvd = m->kv_heads * d, hh, u, i;
	double *p = malloc((t + 1) * sizeof(double));

	for (hh = 0; hh < m->heads; hh++) {
		uint32_t kvh = hh / (m->heads / m->kv_heads);
		double mx = -INFINITY, l = 0;

		for (u = 0; u <= t; u++) {
			p[u] = 0;
			for (i = 0; i < d; i++)
				p[u] += q[hh * d + i] * K[(size_t)u * kvd + kvh * d + i] / sqrt(d);
			mx = fmax(mx, p[u]);
		}
		for (i = 0; i < d; i++)
			out[hh * d + i] = 0;
		for (u = 0; u <= t; u++) {
			p[u] = exp(p[u] - mx);
			l += p[u];
			for (i = 0; i < d; i++)
				out[hh * d + i] += p[u] * V[(size_t)u * kvd + kvh * d + i];
		}
		for (i = 0; i < d; i++)
			out[hh * d + i] /= l;
	}
	free(p);
}

/* The MLP of one normed row: x += act(xn W_in) W_down (SiLU-gated or GELU). */
static void mlp_d(double *x, const double *xn, const struct kv_cpu_layer *L,
		  const struct kv_model *m)
{
	size_t I = m->intermediate, w = m->gated_mlp ? 2 * I : I, i;
	double *a = malloc(w * sizeof(double));

	matvec(a, xn, L->w_in, m->hidden, w, w, 0);
	for (i = 0; i < I; i++)
		a[i] = m->gated_mlp ? a[i] / (1 + exp(-a[i])) * a[I + i]
				    : 0.5 * a[i] * (1 + tanh(sqrt(2 / M_PI) * (a[i] + 0.044715 * a[i] * a[i] * a[i])));
	matvec(x, a, L->w_down, I, m->hidden, m->hidden, 1);
	free(a);
}

/*
 * The whole forward pass of tokens 0..P-1 of seq, naively in double with
 * contiguous K and V, from the backend's own weights: x gets the residual
 * stream [P][hidden]; returns the argmax of the last token's logits.
 */
static int32_t naive_forward(struct kv_backend *b, const struct kv_backend_seq *s, uint32_t P,
			     double *x)
{
	const struct kv_model *m = &b->model;
	size_t h = m->hidden, q = (size_t)m->heads * m->head_dim, kvd = (size_t)m->kv_heads * m->head_dim;
	size_t qkv = q + 2 * kvd, v = m->vocab, t, l, i, best = 0;
	double *K = malloc(P * kvd * sizeof(double)), *V = malloc(P * kvd * sizeof(double));
	double *Q = malloc(P * q * sizeof(double)), *row = malloc(qkv * sizeof(double));
	double *xn = malloc(h * sizeof(double)), *att = malloc(q * sizeof(double));
	double *logit = malloc(v * sizeof(double));
	struct kv_cpu_debug dbg;

	kv_backend_cpu_debug(b, &dbg);
	for (t = 0; t < P; t++)
		for (i = 0; i < h; i++)
			x[t * h + i] = dbg.embedding[(size_t)kv_backend_cpu_debug_token(b, s, (uint32_t)t) * h + i];
	for (l = 0; l < m->layers; l++) {
		const struct kv_cpu_layer *L = &dbg.layer[l];

		for (t = 0; t < P; t++) {
			rmsnorm_d(xn, x + t * h, L->attn_norm, h, dbg.norm_eps);
			matvec(row, xn, L->w_qkv, h, qkv, qkv, 0);
			memcpy(Q + t * q, row, q * sizeof(double));
			memcpy(K + t * kvd, row + q, kvd * sizeof(double));
			memcpy(V + t * kvd, row + q + kvd, kvd * sizeof(double));
		}
		for (t = 0; t < P; t++) {
			attend_d(att, Q + t * q, K, V, (uint32_t)t, m);
			matvec(x + t * h, att, L->w_o, q, h, h, 1);
			rmsnorm_d(xn, x + t * h, L->mlp_norm, h, dbg.norm_eps);
			mlp_d(x + t * h, xn, L, m);
		}
	}
	rmsnorm_d(xn, x + (P - 1) * h, dbg.final_norm, h, dbg.norm_eps);
	for (i = 0; i < v; i++) {
		size_t k;

		logit[i] = 0;
		for (k = 0; k < h; k++)
			logit[i] += xn[k] * (dbg.lm_head ? dbg.lm_head[k * v + i] : dbg.embedding[i * h + k]);
		best = logit[i] > logit[best] ? i : best;
	}
	free(K), free(V), free(Q), free(row), free(xn), free(att), free(logit);
	return (int32_t)best;
}

/* A prefill's residual stream and sampled token equal the naive double forward pass. */
START_TEST(forward_matches_naive)
{
	enum { P = 21 };
	struct kv_model models[2] = { load_tiny(), micro_model() };
	int32_t pages[] = { 3, 0 };
	int k;

	for (k = 0; k < 2; k++) {
		struct kv_backend *b = open_cpu(&models[k], 4, 17);
		struct kv_backend_seq s = { .pages = pages, .n_pages = 2, .n_new = P, .sample = 1 };
		size_t h = models[k].hidden, t, i;
		double *ref = malloc(P * h * sizeof(double));
		float *got = malloc(h * sizeof(float));
		int32_t want;
		struct kv_cpu_debug dbg;

		step_ok(b, &s, 1);
		want = naive_forward(b, &s, P, ref);
		for (t = 0; t < P; t++) {
			double e = 0, mag = 1e-30;

			hidden_row(b, (uint32_t)t, got);
			for (i = 0; i < h; i++) {
				e = fmax(e, fabs(ref[t * h + i] - got[i]));
				mag = fmax(mag, fabs(ref[t * h + i]));
			}
			ck_assert_msg(e / mag < 1e-4, "%s token %zu: relative error %g", models[k].name,
				      t, e / mag);
		}
		kv_backend_cpu_debug(b, &dbg);
		ck_assert_msg(dbg.argmax[0] == want, "%s: sampled %d, naive %d", models[k].name,
			      dbg.argmax[0], want);
		free(ref);
		free(got);
		kv_backend_close(b);
	}
}
END_TEST

START_TEST(open_reports_geometry)
{
	struct kv_model m = load_tiny();
	struct kv_backend *b = open_cpu(&m, 8, 1);
	struct kv_backend_info info;
	uint64_t params = kv_model_arch_params(&m);

	kv_backend_get_info(b, &info);
	ck_assert_str_eq(info.kind, "cpu");
	ck_assert_msg(info.device[0] && info.cores >= 1 && info.mem_bytes > 0,
		      "device '%s', %d cores, %llu bytes", info.device, info.cores,
		      (unsigned long long)info.mem_bytes);
	ck_assert_uint_eq(info.dtype_bytes, 4);
	ck_assert_uint_eq(info.kv_elem_bytes, 4);
	ck_assert_uint_eq(info.page_bytes, PAGE_TOKENS * kv_bytes_fp32(&m));
	ck_assert_uint_eq(info.kv_pages, 8);
	ck_assert_msg(fabs((double)info.weight_bytes / (params * 4.0) - 1) < 0.01,
		      "weight_bytes %llu vs 4 * %llu params", (unsigned long long)info.weight_bytes,
		      (unsigned long long)params);
	kv_backend_close(b);
}
END_TEST

/* After open: weights resident, KV not; workspace resident (zeroed at open). */
START_TEST(memory_after_open)
{
	struct kv_model m = load_tiny();
	struct kv_backend *b = open_cpu(&m, 64, 1);
	struct kv_backend_info info;
	struct kv_backend_mem mem;

	kv_backend_get_info(b, &info);
	ck_assert_int_eq(kv_backend_memory(b, &mem), 0);
	ck_assert_msg(fabs((double)mem.weights / (double)info.weight_bytes - 1) < 0.01,
		      "weights resident %llu of %llu", (unsigned long long)mem.weights,
		      (unsigned long long)info.weight_bytes);
	ck_assert_msg(fabs((double)mem.weights / (kv_model_arch_params(&m) * 4.0) - 1) < 0.01,
		      "weights resident %llu vs 4 bytes * %llu params",
		      (unsigned long long)mem.weights,
		      (unsigned long long)kv_model_arch_params(&m));
	ck_assert_msg(mem.kv == 0, "KV resident %llu before any write",
		      (unsigned long long)mem.kv);
	ck_assert_msg(mem.workspace == info.workspace_bytes, "workspace %llu of %llu",
		      (unsigned long long)mem.workspace, (unsigned long long)info.workspace_bytes);
	kv_backend_close(b);
}
END_TEST

/* Writing T tokens into T / page_tokens distinct pages makes exactly those pages resident. */
START_TEST(memory_grows_with_tokens)
{
	struct kv_model m = load_tiny();
	struct kv_backend *b = open_cpu(&m, 64, 1);
	int32_t pages[] = { 40, 3, 17 };
	struct kv_backend_seq s = { .pages = pages, .n_pages = 3, .ctx = 0, .n_new = 48 };
	struct kv_backend_mem mem;
	uint64_t want = 48 * kv_bytes_fp32(&m);

	step_ok(b, &s, 1);
	ck_assert_int_eq(kv_backend_memory(b, &mem), 0);
	ck_assert_msg(mem.kv + 4096 > want && mem.kv < want + 4096,
		      "KV resident %llu after 48 tokens; expected %llu",
		      (unsigned long long)mem.kv, (unsigned long long)want);
	ck_assert_int_eq(kv_backend_kv_forget(b), 0);
	ck_assert_int_eq(kv_backend_memory(b, &mem), 0);
	ck_assert_msg(mem.kv == 0, "KV resident %llu after kv_forget", (unsigned long long)mem.kv);
	kv_backend_close(b);
}
END_TEST

/* Prefill, then decode steps of a batch of two: times positive, states finite, argmax in range. */
START_TEST(prefill_then_decode)
{
	struct kv_model m = load_tiny();
	struct kv_backend *b = open_cpu(&m, 16, 3);
	int32_t pa[] = { 0, 1, 2 }, pb[] = { 9, 4 };
	struct kv_backend_seq s[2] = { { .pages = pa, .n_pages = 3, .ctx = 0, .n_new = 30, .sample = 1 },
				       { .pages = pb, .n_pages = 2, .ctx = 0, .n_new = 12, .sample = 1 } };
	struct kv_cpu_debug dbg;
	float *row = malloc(m.hidden * sizeof(float));
	int i;

	step_ok(b, s, 2);
	for (i = 0; i < 5; i++) {
		s[0].ctx += s[0].n_new;
		s[1].ctx += s[1].n_new;
		s[0].n_new = s[1].n_new = 1;
		step_ok(b, s, 2);
		hidden_row(b, 0, row);
		hidden_row(b, 1, row);
		kv_backend_cpu_debug(b, &dbg);
		ck_assert_msg(dbg.argmax[0] >= 0 && dbg.argmax[0] < (int32_t)m.vocab &&
				      dbg.argmax[1] >= 0 && dbg.argmax[1] < (int32_t)m.vocab,
			      "argmax %d %d", dbg.argmax[0], dbg.argmax[1]);
	}
	free(row);
	kv_backend_close(b);
}
END_TEST

/* Layer 0's K and V, prefilled then extended by a second chunk, equal the naive computation. */
START_TEST(layer0_kv_matches_naive)
{
	struct kv_model models[2] = { load_tiny(), micro_model() };
	int32_t pages[] = { 7, 2 };
	int k;

	for (k = 0; k < 2; k++) {
		struct kv_backend *b = open_cpu(&models[k], 8, 11);
		struct kv_backend_seq s = { .pages = pages, .n_pages = 2, .ctx = 0, .n_new = 20 };
		uint32_t pos;

		step_ok(b, &s, 1);
		s.ctx = 20;
		s.n_new = 5;
		step_ok(b, &s, 1);
		for (pos = 0; pos < 25; pos++) {
			double e = check_layer0_token(b, &s, pos);

			ck_assert_msg(e < 1e-5, "%s token %u: relative error %g", models[k].name,
				      pos, e);
		}
		kv_backend_close(b);
	}
}
END_TEST

/*
 * The residual stream of the last of P tokens: one chunk (A), two chunks
 * (B), P-1 tokens then a decode step (C), one chunk inside a batch behind
 * another sequence (D) -- all equal up to 1e-4.
 */
static void chunked_case(const struct kv_model *m)
{
	enum { P = 37 };
	struct kv_backend *b = open_cpu(m, 16, 5);
	int32_t pages[] = { 11, 4, 6 }, other[] = { 1 };
	struct kv_backend_seq s = { .pages = pages, .n_pages = 3, .ctx = 0, .n_new = P, .sample = 1 };
	struct kv_backend_seq batch[2] = { { .pages = other, .n_pages = 1, .n_new = 9, .sample = 1 },
					   s };
	float *a = malloc(m->hidden * sizeof(float)), *x = malloc(m->hidden * sizeof(float));

	step_ok(b, &s, 1);
	hidden_row(b, P - 1, a);

	ck_assert_int_eq(kv_backend_kv_forget(b), 0);
	s.n_new = 20;
	step_ok(b, &s, 1);
	s.ctx = 20;
	s.n_new = P - 20;
	step_ok(b, &s, 1);
	hidden_row(b, P - 20 - 1, x);
	ck_assert_msg(rel_err(a, x, m->hidden) < 1e-4, "%s two chunks: relative error %g", m->name,
		      rel_err(a, x, m->hidden));

	ck_assert_int_eq(kv_backend_kv_forget(b), 0);
	s.ctx = 0;
	s.n_new = P - 1;
	step_ok(b, &s, 1);
	s.ctx = P - 1;
	s.n_new = 1;
	step_ok(b, &s, 1);
	hidden_row(b, 0, x);
	ck_assert_msg(rel_err(a, x, m->hidden) < 1e-4, "%s prefill + decode: relative error %g",
		      m->name, rel_err(a, x, m->hidden));

	ck_assert_int_eq(kv_backend_kv_forget(b), 0);
	step_ok(b, batch, 2);
	hidden_row(b, 9 + P - 1, x);
	ck_assert_msg(rel_err(a, x, m->hidden) < 1e-4, "%s in a batch: relative error %g", m->name,
		      rel_err(a, x, m->hidden));
	free(a);
	free(x);
	kv_backend_close(b);
}

START_TEST(chunked_prefill_is_exact)
{
	struct kv_model tiny = load_tiny(), micro = micro_model();

	chunked_case(&tiny);
	chunked_case(&micro);
}
END_TEST

/* The same seed gives the same state; another seed another one. */
START_TEST(seed_determines_state)
{
	struct kv_model m = micro_model();
	int32_t pages[] = { 0, 1 };
	struct kv_backend_seq s = { .pages = pages, .n_pages = 2, .n_new = 30, .sample = 1 };
	float *x[3];
	uint64_t seeds[3] = { 7, 7, 8 };
	int k;

	for (k = 0; k < 3; k++) {
		struct kv_backend *b = open_cpu(&m, 4, seeds[k]);

		x[k] = malloc(m.hidden * sizeof(float));
		step_ok(b, &s, 1);
		hidden_row(b, 29, x[k]);
		kv_backend_close(b);
	}
	ck_assert_msg(!memcmp(x[0], x[1], m.hidden * sizeof(float)), "same seed, different state");
	ck_assert_msg(memcmp(x[0], x[2], m.hidden * sizeof(float)), "different seeds, same state");
	for (k = 0; k < 3; k++)
		free(x[k]);
}
END_TEST

/* move_pages and swap out / forget / swap in reproduce pages bit for bit. */
START_TEST(moves_and_swaps_are_exact)
{
	struct kv_model m = micro_model();
	struct kv_backend *b = open_cpu(&m, 12, 9);
	struct kv_backend_info info;
	int32_t pages[] = { 5, 8 }, from[] = { 5, 8 }, to[] = { 0, 3 }, back[] = { 10, 11 };
	struct kv_backend_seq s = { .pages = pages, .n_pages = 2, .n_new = 32 };
	struct kv_backend_mem mem;
	struct kv_cpu_debug dbg;
	unsigned char *snap;
	uint64_t ns;

	kv_backend_get_info(b, &info);
	kv_backend_cpu_debug(b, &dbg);
	snap = malloc(2 * info.page_bytes);
	step_ok(b, &s, 1);
#define PAGE(p) ((const unsigned char *)dbg.arena + (size_t)(p) * info.page_bytes)
	memcpy(snap, PAGE(5), info.page_bytes);
	memcpy(snap + info.page_bytes, PAGE(8), info.page_bytes);
	ck_assert_int_eq(kv_backend_move_pages(b, from, to, 2, &ns), 0);
	ck_assert_msg(!memcmp(PAGE(0), snap, info.page_bytes) &&
			      !memcmp(PAGE(3), snap + info.page_bytes, info.page_bytes),
		      "moved pages differ from their sources");
	ck_assert_int_eq(kv_backend_swap(b, to, 2, 6, 1, 0, &ns), 0);
	ck_assert_int_eq(kv_backend_kv_forget(b), 0);
	ck_assert_int_eq(kv_backend_memory(b, &mem), 0);
	ck_assert_msg(mem.kv == 0 && PAGE(0)[0] == 0, "KV resident %llu after forget",
		      (unsigned long long)mem.kv);
	ck_assert_int_eq(kv_backend_swap(b, back, 2, 6, 0, 1, &ns), 0);
	ck_assert_msg(!memcmp(PAGE(10), snap, info.page_bytes) &&
			      !memcmp(PAGE(11), snap + info.page_bytes, info.page_bytes),
		      "pages swapped out and back in differ");
#undef PAGE
	free(snap);
	kv_backend_close(b);
}
END_TEST

/* Options the backend refuses at open, with the code exec.h promises. */
START_TEST(bad_open_refused)
{
	struct kv_model m = micro_model(), bad = m;
	struct kv_backend_opts o = { .model = &m, .kv_pages = 4, .page_tokens = PAGE_TOKENS,
				     .max_batch_tokens = 8, .max_batch_seqs = 2,
				     .max_ctx_tokens = 64, .seed = 1 };
	struct kv_backend *b = (struct kv_backend *)&o; /* must come back NULL */
	struct kv_diag d;

	ck_assert_int_eq(kv_backend_open("tpu", &o, &b, &d), KV_EINVAL);
	ck_assert_msg(b == NULL && strstr(d.msg, "cpu"), "unknown kind: '%s'", d.msg);
#if !KV_HAVE_CUDA_BACKEND
	ck_assert_int_eq(kv_backend_open("cuda", &o, &b, &d), KV_ENOENT);
	ck_assert_msg(strstr(d.msg, "without CUDA"), "cuda kind: '%s'", d.msg);
#endif
	o.kv_int8 = 1;
	ck_assert_int_eq(kv_backend_open("cpu", &o, &b, &d), KV_EINVAL);
	ck_assert_msg(strstr(d.msg, "kv_int8") != NULL, "kv_int8: '%s'", d.msg);
	o.kv_int8 = 0;
	o.kv_pages = 0;
	ck_assert_int_eq(kv_backend_open("cpu", &o, &b, &d), KV_EINVAL);
	o.kv_pages = 4;
	o.threads = -1;
	ck_assert_int_eq(kv_backend_open("cpu", &o, &b, &d), KV_EINVAL);
	o.threads = 0;
	bad.heads = 3; /* not a multiple of kv_heads 2 */
	o.model = &bad;
	ck_assert_int_eq(kv_backend_open("cpu", &o, &b, &d), KV_EINVAL);
	o.model = NULL;
	ck_assert_int_eq(kv_backend_open("cpu", &o, &b, &d), KV_EINVAL);
	ck_assert_ptr_null(b);
}
END_TEST

/* Batches, moves and swaps the backend refuses: KV_EINVAL and a sentence, nothing run. */
START_TEST(bad_steps_refused)
{
	struct kv_model m = micro_model();
	struct kv_backend *b = open_cpu(&m, 4, 1);
	int32_t ok[] = { 0, 1, 2 }, outside[] = { 0, 4 }, negative[] = { -1 }, nine[9] = { 0 };
	struct kv_backend_seq s[9];
	struct kv_backend_mem mem;
	uint64_t ns = 1;
	int i;

	for (i = 0; i < 9; i++)
		s[i] = (struct kv_backend_seq){ .pages = ok, .n_pages = 1, .n_new = 1 };
#define REFUSED(call, what)                                                              \
	do {                                                                             \
		ck_assert_msg((call) == KV_EINVAL, "%s accepted", what);                \
		ck_assert_msg(kv_backend_last_error(b)[0], "%s: no message", what);     \
	} while (0)
	REFUSED(kv_backend_step(b, s, 0, &ns), "empty batch");
	REFUSED(kv_backend_step(b, s, 9, &ns), "9 sequences of at most 8");
	s[0].pages = outside;
	s[0].n_pages = 2;
	s[0].ctx = 16;
	REFUSED(kv_backend_step(b, s, 1, &ns), "page 4 of 4");
	s[0].pages = negative;
	s[0].n_pages = 1;
	s[0].ctx = 0;
	REFUSED(kv_backend_step(b, s, 1, &ns), "page -1");
	s[0] = (struct kv_backend_seq){ .pages = ok, .n_pages = 1, .ctx = 10, .n_new = 7 };
	REFUSED(kv_backend_step(b, s, 1, &ns), "17 tokens in one page");
	s[0] = (struct kv_backend_seq){ .pages = nine, .n_pages = 9, .ctx = 0, .n_new = 129 };
	REFUSED(kv_backend_step(b, s, 1, &ns), "129 tokens of at most 128");
	s[0] = (struct kv_backend_seq){ .pages = ok, .n_pages = 1, .ctx = 255, .n_new = 2 };
	REFUSED(kv_backend_step(b, s, 1, &ns), "context 257 of at most 256");
	s[0] = (struct kv_backend_seq){ .pages = ok, .n_pages = 1, .n_new = 0 };
	REFUSED(kv_backend_step(b, s, 1, &ns), "n_new 0");
	s[0] = (struct kv_backend_seq){ .pages = ok, .n_pages = 1, .n_new = 1, .sample = 2 };
	REFUSED(kv_backend_step(b, s, 1, &ns), "sample 2");
	REFUSED(kv_backend_move_pages(b, ok, outside, 2, &ns), "move to page 4");
	REFUSED(kv_backend_swap(b, ok, 2, 3, 1, 0, &ns), "host slots 3..4 of 4");
	REFUSED(kv_backend_swap(b, outside, 2, 0, 1, 0, &ns), "swap page 4");
	ck_assert_int_eq(kv_backend_memory(b, &mem), 0);
	ck_assert_msg(mem.kv == 0, "a refused call wrote %llu KV bytes", (unsigned long long)mem.kv);
#undef REFUSED
	kv_backend_close(b);
}
END_TEST

/*
 * kv_backend_kinds lists cpu, NULL-terminated.  A build for OpenBLAS runs
 * OpenBLAS's cblas_sgemm, not gslcblas's (the link order decides).
 */
START_TEST(kinds_and_blas)
{
	char blas[512];
	int i, cpu = 0;

	for (i = 0; kv_backend_kinds[i]; i++)
		cpu |= !strcmp(kv_backend_kinds[i], "cpu");
	ck_assert_msg(cpu, "\"cpu\" missing from kv_backend_kinds");
	kv_backend_cpu_blas(blas, sizeof(blas));
	ck_assert_msg(strncmp(blas, "OpenBLAS", 8) || strstr(strchr(blas, ';'), "openblas"),
		      "built for OpenBLAS but running %s", blas);
}
END_TEST

/*
 * The backend's block-at-a-time decode attention against the reference
 * twin: GQA and plain shapes, contexts ending inside and at block edges,
 * a shuffled block table, and scores up to ~30x larger (the online softmax
 * must not overflow).  Both accumulate in fp32 in different orders.
 */
START_TEST(fast_decode_matches_twin)
{
	static const struct kv_paged_shape shapes[] = {
		{ .heads = 8, .kv_heads = 8, .head_dim = 64, .block_tokens = 16 },
		{ .heads = 4, .kv_heads = 2, .head_dim = 24, .block_tokens = 16 },
		{ .heads = 32, .kv_heads = 8, .head_dim = 64, .block_tokens = 16 },
		{ .heads = 4, .kv_heads = 1, .head_dim = 128, .block_tokens = 32 },
	};
	static const int ctxs[] = { 1, 15, 16, 17, 100, 333 };
	const struct kv_paged_shape *sh = &shapes[_i];
	int n_blocks = 333 / sh->block_tokens + 1, b, c, amp;
	size_t bf = kv_ref_block_floats(sh), n = (size_t)n_blocks * bf, i;
	size_t qn = (size_t)sh->heads * sh->head_dim;
	float *arena = malloc(n * sizeof(float)), *q = malloc(qn * sizeof(float));
	float *ref = malloc(qn * sizeof(float)), *got = malloc(qn * sizeof(float));
	int32_t *table = malloc((size_t)n_blocks * sizeof(int32_t));
	uint64_t st = 12345 + (uint64_t)_i;

	for (i = 0; i < n; i++) {
		st = st * 6364136223846793005ULL + 1442695040888963407ULL;
		arena[i] = (float)((double)(st >> 11) / 9007199254740992.0 * 2 - 1);
	}
	for (b = 0; b < n_blocks; b++) /* reversed: the table, not the order, says where */
		table[b] = n_blocks - 1 - b;
	for (amp = 1; amp <= 30; amp += 29)
		for (c = 0; c < (int)KV_ARRAY_LEN(ctxs); c++) {
			float scale = 1.0f / sqrtf((float)sh->head_dim), worst = 0, mag = 0;

			for (i = 0; i < qn; i++) {
				st = st * 6364136223846793005ULL + 1442695040888963407ULL;
				q[i] = amp * (float)((double)(st >> 11) / 9007199254740992.0 * 2 - 1);
			}
			kv_ref_paged_decode(ref, q, arena, sh, table, ctxs[c], scale);
			kv_backend_cpu_decode(got, q, arena, sh, table, ctxs[c], scale);
			for (i = 0; i < qn; i++) {
				ck_assert_msg(isfinite(got[i]), "non-finite output");
				worst = fmaxf(worst, fabsf(got[i] - ref[i]));
				mag = fmaxf(mag, fabsf(ref[i]));
			}
			ck_assert_msg(worst <= 1e-5f * fmaxf(mag, 1.0f),
				      "shape %d ctx %d amp %d: max error %g (magnitude %g)", _i,
				      ctxs[c], amp, (double)worst, (double)mag);
		}
	free(arena);
	free(q);
	free(ref);
	free(got);
	free(table);
}
END_TEST

static Suite *backend_suite(void)
{
	Suite *s = suite_create("backend");
	TCase *tc = tcase_create("cpu");

	tcase_add_test(tc, open_reports_geometry);
	tcase_add_test(tc, memory_after_open);
	tcase_add_test(tc, memory_grows_with_tokens);
	tcase_add_test(tc, prefill_then_decode);
	tcase_add_test(tc, layer0_kv_matches_naive);
	tcase_add_test(tc, forward_matches_naive);
	tcase_add_test(tc, chunked_prefill_is_exact);
	tcase_add_test(tc, seed_determines_state);
	tcase_add_test(tc, moves_and_swaps_are_exact);
	tcase_add_test(tc, bad_open_refused);
	tcase_add_test(tc, bad_steps_refused);
	tcase_add_test(tc, kinds_and_blas);
	tcase_add_loop_test(tc, fast_decode_matches_twin, 0, 4);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return kv_test_run_suite(backend_suite());
}
