/*
 * backend_cpu.c -- the "cpu" execution backend: a Llama-shaped model with
 * random fp32 weights and an fp32 paged KV arena in host memory, running
 * the iteration gpu/exec.h describes with CBLAS GEMMs and the CPU twin
 * kernels (kernels_ref.c) for KV append and paged decode attention.
 *
 * Forward pass of one step over the batch's N new tokens (rows in batch
 * order; x is the residual stream [N][hidden]):
 *
 *   x    = E[token]                                   embedding lookup
 *   per layer:
 *     qkv  = rmsnorm(x) Wqkv                          one sgemm, [N][(H + 2 Hkv) d]
 *     KV append of every new token, then for token j of a chunk after ctx
 *     cached tokens: att_j = paged_decode(q_j, ctx + j + 1 tokens)
 *     x   += att Wo                                   sgemm with beta = 1
 *     h    = rmsnorm(x) Win                           gated: [gate | up], one sgemm
 *     h    = silu(gate) * up   (gated)  or  gelu(h)
 *     x   += h Wdown                                  sgemm with beta = 1
 *   per sampled sequence: logits = rmsnorm(x_last) Wlm, and their argmax.
 *
 * No rotary embedding: positions change no cost, and the twin kernels take
 * K as stored.  Prefill in one chunk, in several chunks, or as decode steps
 * gives the same residual stream up to rounding, since token j of a chunk
 * sees exactly tokens 0..ctx + j.
 *
 * Memory: weights, workspace, KV arena and the host swap slots are four
 * private anonymous mappings (MAP_NORESERVE), so kv_backend_memory()
 * measures each with mincore().  Weights are written when generated and the
 * workspace is zeroed at open (so no step pays first-touch faults for it);
 * the arena is left untouched, becomes resident as tokens are written, and
 * kv_forget drops it with MADV_DONTNEED.  The arena refuses transparent
 * huge pages so residency grows in 4 KiB steps, not 2 MiB ones.
 *
 * Nothing is allocated in a step.  Attention runs on the calling thread;
 * only the GEMMs use BLAS threads.
 */
#include "exec_impl.h"
#include "kernels.h"

#if KV_BLAS_GSL
#include <gsl/gsl_cblas.h>
#else
#include <cblas.h>
#endif

#include <dlfcn.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#define RMS_EPS 1e-5f /* RMSNorm epsilon, as Llama's */
#define TENSOR_ALIGN_FLOATS 16 /* each tensor starts on a 64-byte line */

/* One private anonymous mapping; bytes is a multiple of the page size. */
struct region {
	unsigned char *base; /* NULL when not mapped */
	size_t bytes; /* mapped length */
};

struct cpu_backend {
	struct kv_backend base; /* first: exec.c's part */
	struct region weights, work, kv, host; /* host: swap slots, mapped at the first swap */
	struct kv_cpu_layer *layer; /* [layers] */
	float *embedding; /* [vocab][hidden] */
	float *final_norm; /* [hidden] */
	float *lm_head; /* [hidden][vocab], or NULL when tied: logits = x E^T */
	/* Workspace, sized at open for max_batch_tokens rows (fin, logits: max_batch_seqs). */
	float *x, *xn, *qkv, *att, *mlp, *fin, *logits;
	int32_t *table; /* [max_pages_per_seq]: one sequence's kernel blocks for one layer */
	int32_t *argmax; /* [max_batch_seqs] */
	struct kv_paged_shape sh; /* block = one layer of one page */
	uint32_t q_dim, qkv_dim, in_dim; /* heads * head_dim; + 2 kv_heads * head_dim; MLP width */
	size_t page_bytes; /* bytes of one page, all layers */
	char device[128]; /* CPU model name */
};

static struct cpu_backend *cpu_of(struct kv_backend *b)
{
	return (struct cpu_backend *)b;
}

static const struct cpu_backend *cpu_of_const(const struct kv_backend *b)
{
	return (const struct cpu_backend *)b;
}

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * KV_NS_PER_S + (uint64_t)ts.tv_nsec;
}

/* ---- BLAS -------------------------------------------------------------- */

void kv_backend_cpu_blas(char *out, size_t len)
{
	void *sym = dlsym(RTLD_DEFAULT, "cblas_sgemm");
	Dl_info where;
	const char *lib = sym && dladdr(sym, &where) && where.dli_fname ? where.dli_fname : "?";

#if KV_BLAS_OPENBLAS
	snprintf(out, len, "%s; cblas_sgemm from %s", openblas_get_config(), lib);
#elif KV_BLAS_GSL
	snprintf(out, len, "GSL reference CBLAS; cblas_sgemm from %s", lib);
#else
	snprintf(out, len, "CBLAS; cblas_sgemm from %s", lib);
#endif
}

/*
 * threads > 0 fixes OpenBLAS's thread count for the whole process (the
 * setting is global: a second backend opened later changes it for both);
 * 0 keeps the library's default, $OPENBLAS_NUM_THREADS or else one thread
 * per core.  Other CBLAS libraries are left as they are.
 */
static void blas_set_threads(int threads)
{
#if KV_BLAS_OPENBLAS
	if (threads > 0)
		openblas_set_num_threads(threads);
#else
	(void)threads;
#endif
}

/* C[m][n] = A[m][k] B[k][n] + beta C, row-major; A's rows are lda apart. */
static void gemm(int m, int n, int k, const float *a, int lda, const float *w, float beta,
		 float *c)
{
	cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, m, n, k, 1.0f, a, lda, w, n, beta,
		    c, n);
}

/* ---- memory ------------------------------------------------------------ */

static size_t page_size(void)
{
	return (size_t)sysconf(_SC_PAGESIZE);
}

/* Maps bytes (rounded up to pages) untouched; huge: 0 refuses transparent huge pages. */
static int region_map(struct region *r, size_t bytes, int huge)
{
	size_t pg = page_size();
	void *p;

	r->bytes = (bytes + pg - 1) / pg * pg;
	p = mmap(NULL, r->bytes, PROT_READ | PROT_WRITE,
		 MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (p == MAP_FAILED) {
		r->base = NULL;
		return KV_ENOMEM;
	}
	r->base = p;
	/* Advice only: a kernel without THP refuses it, which changes nothing measured. */
	(void)madvise(p, r->bytes, huge ? MADV_HUGEPAGE : MADV_NOHUGEPAGE);
	return 0;
}

static void region_unmap(struct region *r)
{
	if (r->base)
		munmap(r->base, r->bytes);
	r->base = NULL;
}

/* Bytes of r that mincore() reports resident; -1 when mincore fails. */
static int64_t region_resident(const struct region *r)
{
	unsigned char vec[4096];
	size_t pg = page_size(), pages = r->base ? r->bytes / pg : 0, done = 0, i;
	int64_t count = 0;

	while (done < pages) {
		size_t k = KV_MIN(pages - done, sizeof(vec));

		if (mincore(r->base + done * pg, k * pg, vec))
			return -1;
		for (i = 0; i < k; i++)
			count += vec[i] & 1;
		done += k;
	}
	return count * (int64_t)pg;
}

/* Carves `floats` floats out of a region at *off (64-byte aligned); NULL base: only counts. */
static float *carve(unsigned char *base, size_t *off, size_t floats)
{
	float *p = base ? (float *)(base + *off) : NULL;

	*off += (floats + TENSOR_ALIGN_FLOATS - 1) / TENSOR_ALIGN_FLOATS * TENSOR_ALIGN_FLOATS *
		sizeof(float);
	return p;
}

/* ---- weights ----------------------------------------------------------- */

static uint64_t splitmix64(uint64_t *s)
{
	uint64_t z = (*s += 0x9E3779B97F4A7C15ULL);

	z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
	z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
	return z ^ (z >> 31);
}

/*
 * Fills w[0..n) with uniform values in [-scale, scale), from a stream
 * seeded by (seed, tensor) so every tensor is reproducible on its own.
 * xorshift64* gives two 24-bit floats per draw: filling 1.1e9 weights is
 * the dominant cost of opening a 1B model, and quality hardly matters.
 */
static void fill_uniform(float *w, size_t n, uint64_t seed, uint64_t tensor, float scale)
{
	uint64_t s = seed ^ (tensor * 0xD1B54A32D192ED03ULL), x = splitmix64(&s) | 1;
	const float unit = 2.0f / 16777216.0f;
	size_t i;

	for (i = 0; i < n; i += 2) {
		uint64_t r;

		x ^= x >> 12;
		x ^= x << 25;
		x ^= x >> 27;
		r = x * 2685821657736338717ULL;
		w[i] = ((float)(r >> 40) * unit - 1.0f) * scale;
		if (i + 1 < n)
			w[i + 1] = ((float)((r >> 16) & 0xFFFFFF) * unit - 1.0f) * scale;
	}
}

/* RMSNorm weights: 1 +- 0.1, near the identity as trained ones are. */
static void fill_norm(float *w, size_t n, uint64_t seed, uint64_t tensor)
{
	size_t i;

	fill_uniform(w, n, seed, tensor, 0.1f);
	for (i = 0; i < n; i++)
		w[i] += 1.0f;
}

/* Lays out (base NULL: only sizes) the weights; returns their bytes. */
static size_t layout_weights(struct cpu_backend *c, unsigned char *base)
{
	const struct kv_model *m = c->base.opts.model;
	size_t off = 0, h = m->hidden;
	uint32_t l;

	c->embedding = carve(base, &off, (size_t)m->vocab * h);
	for (l = 0; l < m->layers; l++) {
		struct kv_cpu_layer *L = &c->layer[l];

		L->attn_norm = carve(base, &off, h);
		L->w_qkv = carve(base, &off, h * c->qkv_dim);
		L->w_o = carve(base, &off, (size_t)c->q_dim * h);
		L->mlp_norm = carve(base, &off, h);
		L->w_in = carve(base, &off, h * c->in_dim);
		L->w_down = carve(base, &off, (size_t)m->intermediate * h);
	}
	c->final_norm = carve(base, &off, h);
	c->lm_head = m->tie_embeddings ? NULL : carve(base, &off, h * m->vocab);
	return off;
}

/* Generates every weight; projections scaled by 1/sqrt(fan-in) (exec.h). */
static void fill_weights(struct cpu_backend *c, uint64_t seed)
{
	const struct kv_model *m = c->base.opts.model;
	size_t h = m->hidden;
	uint64_t t = 0;
	uint32_t l;

	fill_uniform(c->embedding, (size_t)m->vocab * h, seed, t++, 1.0f);
	for (l = 0; l < m->layers; l++) {
		struct kv_cpu_layer *L = &c->layer[l];

		fill_norm(L->attn_norm, h, seed, t++);
		fill_uniform(L->w_qkv, h * c->qkv_dim, seed, t++, 1.0f / sqrtf((float)h));
		fill_uniform(L->w_o, (size_t)c->q_dim * h, seed, t++, 1.0f / sqrtf((float)c->q_dim));
		fill_norm(L->mlp_norm, h, seed, t++);
		fill_uniform(L->w_in, h * c->in_dim, seed, t++, 1.0f / sqrtf((float)h));
		fill_uniform(L->w_down, (size_t)m->intermediate * h, seed, t++,
			     1.0f / sqrtf((float)m->intermediate));
	}
	fill_norm(c->final_norm, h, seed, t++);
	if (c->lm_head)
		fill_uniform(c->lm_head, h * m->vocab, seed, t, 1.0f / sqrtf((float)h));
}

double kv_backend_cpu_sgemm_rate(int m, int n, int k, int reps)
{
	float *a = kv_xmalloc((size_t)m * k * sizeof(float));
	float *w = kv_xmalloc((size_t)k * n * sizeof(float));
	float *c = kv_xmalloc((size_t)m * n * sizeof(float));
	uint64_t best = UINT64_MAX;
	int r;

	fill_uniform(a, (size_t)m * k, 1, 0, 1.0f);
	fill_uniform(w, (size_t)k * n, 1, 1, 1.0f);
	gemm(m, n, k, a, k, w, 0.0f, c); /* warm-up: threads started, pages touched */
	for (r = 0; r < reps; r++) {
		uint64_t t0 = now_ns();

		gemm(m, n, k, a, k, w, 0.0f, c);
		best = KV_MIN(best, now_ns() - t0);
	}
	free(a);
	free(w);
	free(c);
	return 2.0 * m * n * k / ((double)KV_MAX(best, 1) / (double)KV_NS_PER_S);
}

/* ---- workspace --------------------------------------------------------- */

/* Lays out (base NULL: only sizes) the activations; returns their bytes. */
static size_t layout_work(struct cpu_backend *c, unsigned char *base)
{
	const struct kv_backend_opts *o = &c->base.opts;
	size_t t = o->max_batch_tokens, s = o->max_batch_seqs, h = o->model->hidden, off = 0;

	c->x = carve(base, &off, t * h);
	c->xn = carve(base, &off, t * h);
	c->qkv = carve(base, &off, t * c->qkv_dim);
	c->att = carve(base, &off, t * c->q_dim);
	c->mlp = carve(base, &off, t * c->in_dim);
	c->fin = carve(base, &off, s * h);
	c->logits = carve(base, &off, s * o->model->vocab);
	/* int32 and float have the same size and alignment here. */
	c->table = (int32_t *)(void *)carve(base, &off, c->base.max_pages_per_seq);
	c->argmax = (int32_t *)(void *)carve(base, &off, s);
	return off;
}

/* ---- the forward pass -------------------------------------------------- */

int32_t kv_backend_cpu_debug_token(const struct kv_backend *b, const struct kv_backend_seq *seq,
				   uint32_t pos)
{
	uint64_t s = b->opts.seed ^ ((uint64_t)(uint32_t)seq->pages[0] << 32 | pos);

	return (int32_t)(splitmix64(&s) % b->opts.model->vocab);
}

/* x[r] = E[token] for every new token; returns N, the rows. */
static uint32_t embed(struct cpu_backend *c, const struct kv_backend_seq *seqs, uint32_t n)
{
	size_t h = c->base.opts.model->hidden;
	uint32_t r = 0, i, j;

	for (i = 0; i < n; i++)
		for (j = 0; j < seqs[i].n_new; j++, r++) {
			int32_t tok = kv_backend_cpu_debug_token(&c->base, &seqs[i], seqs[i].ctx + j);

			memcpy(c->x + r * h, c->embedding + (size_t)tok * h, h * sizeof(float));
		}
	return r;
}

/* out[r] = x[r] / rms(x[r]) * w for rows rows of h floats. */
static void rmsnorm(float *out, const float *x, uint32_t rows, size_t h, const float *w)
{
	uint32_t r;
	size_t i;

	for (r = 0; r < rows; r++, x += h, out += h) {
		float ss = 0.0f, inv;

		for (i = 0; i < h; i++)
			ss += x[i] * x[i];
		inv = 1.0f / sqrtf(ss / (float)h + RMS_EPS);
		for (i = 0; i < h; i++)
			out[i] = x[i] * inv * w[i];
	}
}

/* Dot product with eight independent partial sums: vectorises without -ffast-math. */
static inline float dot8(const float *a, const float *b, uint32_t n)
{
	float s[8] = { 0 };
	uint32_t i = 0, k;

	for (; i + 8 <= n; i += 8)
		for (k = 0; k < 8; k++)
			s[k] += a[i + k] * b[i + k];
	for (; i < n; i++)
		s[0] += a[i] * b[i];
	return ((s[0] + s[1]) + (s[2] + s[3])) + ((s[4] + s[5]) + (s[6] + s[7]));
}

/* An AVX2 clone where the CPU has it (one binary for every x86-64: ifunc dispatch). */
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
__attribute__((target_clones("avx2", "default")))
#endif
void kv_backend_cpu_decode(float *out, const float *q, const float *arena,
			   const struct kv_paged_shape *sh, const int32_t *table, int ctx_len,
			   float scale)
{
	const uint32_t bt = (uint32_t)sh->block_tokens, hd = (uint32_t)sh->head_dim;
	const uint32_t group = (uint32_t)(sh->heads / sh->kv_heads);
	const size_t head_floats = (size_t)bt * hd, bf = 2 * (size_t)sh->kv_heads * head_floats;
	float sc[KV_CPU_MAX_BLOCK_TOKENS];
	uint32_t h, t, d;

	for (h = 0; h < (uint32_t)sh->heads; h++) {
		const float *qh = q + (size_t)h * hd;
		float *o = out + (size_t)h * hd, m = -INFINITY, l = 0.0f;
		uint32_t kvh = h / group, done;

		for (d = 0; d < hd; d++)
			o[d] = 0.0f;
		for (done = 0; done < (uint32_t)ctx_len; done += bt) {
			const float *blk = arena + (size_t)table[done / bt] * bf;
			const float *K = blk + (size_t)kvh * head_floats;
			const float *V = blk + ((size_t)sh->kv_heads + kvh) * head_floats;
			uint32_t n = KV_MIN(bt, (uint32_t)ctx_len - done);
			float mb = -INFINITY, corr, sum = 0.0f;

			/* scores of the block, then one rescale per block, not per token */
			for (t = 0; t < n; t++) {
				sc[t] = dot8(qh, K + (size_t)t * hd, hd) * scale;
				mb = sc[t] > mb ? sc[t] : mb;
			}
			if (mb > m) {
				corr = expf(m - mb); /* 0 on the first block: m = -inf */
				l *= corr;
				for (d = 0; d < hd; d++)
					o[d] *= corr;
				m = mb;
			}
			for (t = 0; t < n; t++) {
				const float *v = V + (size_t)t * hd;
				float p = expf(sc[t] - m);

				sum += p;
				for (d = 0; d < hd; d++)
					o[d] += p * v[d];
			}
			l += sum;
		}
		for (d = 0; d < hd && l > 0.0f; d++)
			o[d] /= l;
	}
}

/*
 * Layer l's attention for every new token: append its K and V through the
 * sequence's page table (block = page * layers + l), then decode each
 * token over ctx + j + 1 tokens -- appending the whole chunk first is
 * safe because the lengths, not the order, keep it causal.  The decode is
 * kv_backend_cpu_decode(): the reference twin's online softmax, a block at
 * a time (one rescale per block, rows read in place), which
 * tests/test_backend.c checks against kv_ref_paged_decode().
 */
static void attention(struct cpu_backend *c, uint32_t l, const struct kv_backend_seq *seqs,
		      uint32_t n)
{
	const struct kv_model *m = c->base.opts.model;
	float *arena = (float *)(void *)c->kv.base;
	float scale = 1.0f / sqrtf((float)m->head_dim);
	size_t kv_dim = (size_t)m->kv_heads * m->head_dim;
	uint32_t r = 0, i, j, p;

	for (i = 0; i < n; i++) {
		const struct kv_backend_seq *s = &seqs[i];

		for (p = 0; p < s->n_pages; p++)
			c->table[p] = s->pages[p] * (int32_t)m->layers + (int32_t)l;
		for (j = 0; j < s->n_new; j++) {
			const float *row = c->qkv + (size_t)(r + j) * c->qkv_dim + c->q_dim;

			kv_ref_kv_append(arena, &c->sh, c->table, (int)(s->ctx + j), row,
					 row + kv_dim);
		}
		for (j = 0; j < s->n_new; j++, r++)
			kv_backend_cpu_decode(c->att + (size_t)r * c->q_dim,
					      c->qkv + (size_t)r * c->qkv_dim, arena, &c->sh,
					      c->table, (int)(s->ctx + j + 1), scale);
	}
}

/* The MLP's nonlinearity in place: gated, h[:, :I] = silu(gate) * up; else GELU (tanh form). */
static void activate(struct cpu_backend *c, uint32_t rows)
{
	size_t inter = c->base.opts.model->intermediate, i;
	uint32_t r;

	for (r = 0; r < rows; r++) {
		float *h = c->mlp + (size_t)r * c->in_dim;

		if (c->base.opts.model->gated_mlp)
			for (i = 0; i < inter; i++)
				h[i] = h[i] / (1.0f + expf(-h[i])) * h[inter + i];
		else
			for (i = 0; i < inter; i++)
				h[i] = 0.5f * h[i] *
				       (1.0f + tanhf(0.7978845608f * (h[i] + 0.044715f * h[i] * h[i] * h[i])));
	}
}

static void layer_forward(struct cpu_backend *c, uint32_t l, const struct kv_backend_seq *seqs,
			  uint32_t n, uint32_t rows)
{
	const struct kv_model *m = c->base.opts.model;
	const struct kv_cpu_layer *L = &c->layer[l];
	int N = (int)rows, h = (int)m->hidden;

	rmsnorm(c->xn, c->x, rows, m->hidden, L->attn_norm);
	gemm(N, (int)c->qkv_dim, h, c->xn, h, L->w_qkv, 0.0f, c->qkv);
	attention(c, l, seqs, n);
	gemm(N, h, (int)c->q_dim, c->att, (int)c->q_dim, L->w_o, 1.0f, c->x); /* x += att Wo */
	rmsnorm(c->xn, c->x, rows, m->hidden, L->mlp_norm);
	gemm(N, (int)c->in_dim, h, c->xn, h, L->w_in, 0.0f, c->mlp);
	activate(c, rows);
	gemm(N, h, (int)m->intermediate, c->mlp, (int)c->in_dim, L->w_down, 1.0f, c->x);
}

/* argmax of each of rows rows of v floats. */
static void argmax_rows(int32_t *out, const float *logits, uint32_t rows, size_t v)
{
	uint32_t r;
	size_t i;

	for (r = 0; r < rows; r++, logits += v) {
		size_t best = 0;

		for (i = 1; i < v; i++)
			if (logits[i] > logits[best])
				best = i;
		out[r] = (int32_t)best;
	}
}

/* Final norm and LM head over the last new token of each sampling sequence. */
static void lm_head(struct cpu_backend *c, const struct kv_backend_seq *seqs, uint32_t n)
{
	const struct kv_model *m = c->base.opts.model;
	size_t h = m->hidden;
	uint32_t rows = 0, r = 0, i;

	for (i = 0; i < n; i++) {
		r += seqs[i].n_new;
		if (seqs[i].sample)
			rmsnorm(c->fin + rows++ * h, c->x + (size_t)(r - 1) * h, 1, h, c->final_norm);
	}
	if (!rows)
		return;
	if (c->lm_head)
		gemm((int)rows, (int)m->vocab, (int)h, c->fin, (int)h, c->lm_head, 0.0f, c->logits);
	else /* tied: logits = fin E^T, E is [vocab][hidden] */
		cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, (int)rows, (int)m->vocab,
			    (int)h, 1.0f, c->fin, (int)h, c->embedding, (int)h, 0.0f, c->logits,
			    (int)m->vocab);
	argmax_rows(c->argmax, c->logits, rows, m->vocab);
}

/* The step clock: wall time, or this thread's CPU time with opts.cpu_clock. */
static uint64_t step_clock(const struct cpu_backend *c)
{
	struct timespec ts;

	if (!c->base.opts.cpu_clock)
		return now_ns();
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (uint64_t)ts.tv_sec * KV_NS_PER_S + (uint64_t)ts.tv_nsec;
}

static int cpu_step(struct kv_backend *b, const struct kv_backend_seq *seqs, uint32_t n,
		    uint64_t *ns)
{
	struct cpu_backend *c = cpu_of(b);
	uint64_t t0 = step_clock(c);
	uint32_t rows = embed(c, seqs, n), l;

	for (l = 0; l < b->opts.model->layers; l++)
		layer_forward(c, l, seqs, n, rows);
	lm_head(c, seqs, n);
	*ns = step_clock(c) - t0;
	return 0;
}

/* ---- copies ------------------------------------------------------------ */

static int cpu_move_pages(struct kv_backend *b, const int32_t *from, const int32_t *to,
			  uint32_t n, uint64_t *ns)
{
	struct cpu_backend *c = cpu_of(b);
	/* A page is layers consecutive blocks: one block of layers * kv_heads heads. */
	struct kv_paged_shape page = c->sh;
	uint64_t t0 = now_ns();

	page.kv_heads *= (int)b->opts.model->layers;
	page.heads = page.kv_heads;
	kv_ref_compact((float *)(void *)c->kv.base, &page, from, to, (int)n);
	*ns = now_ns() - t0;
	return 0;
}

/*
 * Host slots: one mapping of kv_pages pages, made at the first swap and
 * resident only where written.  async is served synchronously: on the CPU
 * the copy and the next step share the same cores and memory bus, so
 * overlapping them would not model a GPU's copy engine anyway.
 */
static int cpu_swap(struct kv_backend *b, const int32_t *pages, uint32_t n, uint64_t slot0,
		    int out, int async, uint64_t *ns)
{
	struct cpu_backend *c = cpu_of(b);
	uint64_t t0;
	uint32_t i;

	(void)async;
	if (!c->host.base && region_map(&c->host, c->page_bytes * b->opts.kv_pages, 0))
		return kv__backend_fail(b, KV_ENOMEM, "cannot map %llu bytes of host swap slots",
					(unsigned long long)c->page_bytes * b->opts.kv_pages);
	t0 = now_ns();
	for (i = 0; i < n; i++) {
		unsigned char *page = c->kv.base + (size_t)pages[i] * c->page_bytes;
		unsigned char *slot = c->host.base + (size_t)(slot0 + i) * c->page_bytes;

		memcpy(out ? slot : page, out ? page : slot, c->page_bytes);
	}
	*ns = now_ns() - t0;
	return 0;
}

/* ---- memory and info ---------------------------------------------------- */

static int cpu_memory(const struct kv_backend *b, struct kv_backend_mem *m)
{
	const struct cpu_backend *c = cpu_of_const(b);
	int64_t w = region_resident(&c->weights), kv = region_resident(&c->kv);
	int64_t ws = region_resident(&c->work);

	if (w < 0 || kv < 0 || ws < 0)
		return KV_EIO; /* mincore on our own mappings: cannot fail but for a kernel bug */
	m->weights = (uint64_t)w;
	m->kv = (uint64_t)kv;
	m->workspace = (uint64_t)ws;
	return 0;
}

static int cpu_kv_forget(struct kv_backend *b)
{
	struct cpu_backend *c = cpu_of(b);

	if (madvise(c->kv.base, c->kv.bytes, MADV_DONTNEED))
		return kv__backend_fail(b, KV_EIO, "madvise(MADV_DONTNEED) on the KV arena failed");
	return 0;
}

/* The first "model name" of /proc/cpuinfo, or "unknown CPU". */
static void cpu_model_name(char *out, size_t len)
{
	FILE *f = fopen("/proc/cpuinfo", "r");
	char line[512];

	snprintf(out, len, "unknown CPU");
	while (f && fgets(line, sizeof(line), f)) {
		char *colon = strchr(line, ':');

		if (strncmp(line, "model name", 10) || !colon)
			continue;
		colon += 1 + strspn(colon + 1, " \t");
		colon[strcspn(colon, "\n")] = '\0';
		snprintf(out, len, "%s", colon);
		break;
	}
	if (f)
		fclose(f);
}

static void cpu_info(const struct kv_backend *b, struct kv_backend_info *info)
{
	const struct cpu_backend *c = cpu_of_const(b);
	long pages = sysconf(_SC_PHYS_PAGES), cores = sysconf(_SC_NPROCESSORS_ONLN);

	snprintf(info->kind, sizeof(info->kind), "cpu");
	snprintf(info->device, sizeof(info->device), "%s", c->device);
	info->mem_bytes = pages > 0 ? (uint64_t)pages * page_size() : 0;
	info->mem_bw_Bps = 0; /* unknown: no datasheet for a host */
	info->flops = 0;
	info->cores = cores > 0 ? (int)cores : 1;
	info->dtype_bytes = 4;
	info->kv_elem_bytes = 4;
	info->page_bytes = c->page_bytes;
	info->kv_pages = b->opts.kv_pages;
	info->weight_bytes = c->weights.bytes;
	info->workspace_bytes = c->work.bytes;
}

/* ---- open and close ------------------------------------------------------ */

static void cpu_close(struct kv_backend *b)
{
	struct cpu_backend *c = cpu_of(b);

	region_unmap(&c->weights);
	region_unmap(&c->work);
	region_unmap(&c->kv);
	region_unmap(&c->host);
	free(c->layer);
	free(c);
}

/* Options only the CPU backend refuses: int8 KV, sizes BLAS's int or the kernels' int cannot hold. */
static int cpu_check(const struct kv_backend_opts *o, struct kv_diag *d)
{
	const struct kv_model *m = o->model;
	uint64_t qkv = ((uint64_t)m->heads + 2ULL * m->kv_heads) * m->head_dim;

	if (o->kv_int8)
		return kv_diag_set(d, KV_EINVAL, "", 0, 0, "backend",
				   "kv_int8: the cpu backend stores fp32 KV only; int8 KV needs "
				   "the cuda backend");
	if (o->cpu_clock && o->threads != 1)
		return kv_diag_set(d, KV_EINVAL, "", 0, 0, "backend",
				   "cpu_clock needs threads 1: BLAS threads' time would not be counted");
	if (o->page_tokens > KV_CPU_MAX_BLOCK_TOKENS)
		return kv_diag_set(d, KV_EINVAL, "", 0, 0, "backend",
				   "page_tokens %u: the cpu backend's attention takes at most %d",
				   o->page_tokens, KV_CPU_MAX_BLOCK_TOKENS);
	if (qkv > INT32_MAX / 2 || 2ULL * m->intermediate > INT32_MAX / 2 ||
	    o->max_ctx_tokens > INT32_MAX / 2 || o->max_batch_tokens > INT32_MAX / 2)
		return kv_diag_set(d, KV_EINVAL, "", 0, 0, "backend",
				   "the cpu backend needs (heads + 2 kv_heads) * head_dim, "
				   "2 * intermediate, max_ctx_tokens and max_batch_tokens below 2^30");
	return 0;
}

/* Sizes and maps the three regions; fills the weights and zeroes the workspace. */
static int cpu_map(struct cpu_backend *c, struct kv_diag *d)
{
	const struct kv_backend_opts *o = &c->base.opts;
	size_t wbytes = layout_weights(c, NULL), abytes = layout_work(c, NULL);

	if (region_map(&c->weights, wbytes, 1) || region_map(&c->work, abytes, 1) ||
	    region_map(&c->kv, c->page_bytes * o->kv_pages, 0))
		return kv_diag_set(d, KV_ENOMEM, "", 0, 0, "backend",
				   "cannot map %zu bytes of weights, %zu of workspace and %zu of KV "
				   "arena", wbytes, abytes, c->page_bytes * o->kv_pages);
	layout_weights(c, c->weights.base);
	layout_work(c, c->work.base);
	fill_weights(c, o->seed);
	memset(c->work.base, 0, c->work.bytes);
	return 0;
}

static int cpu_open(const struct kv_backend_opts *o, struct kv_backend **out, struct kv_diag *d)
{
	const struct kv_model *m = o->model;
	struct cpu_backend *c;
	int err;

	if ((err = cpu_check(o, d)))
		return err;
	c = kv_xcalloc(1, sizeof(*c));
	/* exec.c fills the base after open; the layout needs the options now. */
	c->base.opts = *o;
	c->base.model = *m;
	c->base.opts.model = &c->base.model;
	c->base.max_pages_per_seq = (uint32_t)kv_div_ceil(o->max_ctx_tokens, o->page_tokens);
	c->layer = kv_xcalloc(m->layers, sizeof(*c->layer));
	c->q_dim = m->heads * m->head_dim;
	c->qkv_dim = c->q_dim + 2 * m->kv_heads * m->head_dim;
	c->in_dim = (m->gated_mlp ? 2 : 1) * m->intermediate;
	c->sh = (struct kv_paged_shape){ .heads = (int)m->heads, .kv_heads = (int)m->kv_heads,
					 .head_dim = (int)m->head_dim,
					 .block_tokens = (int)o->page_tokens };
	c->page_bytes = kv_ref_block_floats(&c->sh) * sizeof(float) * m->layers;
	cpu_model_name(c->device, sizeof(c->device));
	if ((err = cpu_map(c, d))) {
		cpu_close(&c->base);
		return err;
	}
	blas_set_threads(o->threads);
	*out = &c->base;
	return 0;
}

void kv_backend_cpu_debug(const struct kv_backend *b, struct kv_cpu_debug *dbg)
{
	const struct cpu_backend *c = cpu_of_const(b);

	dbg->embedding = c->embedding;
	dbg->layer = c->layer;
	dbg->final_norm = c->final_norm;
	dbg->lm_head = c->lm_head;
	dbg->arena = (const float *)(const void *)c->kv.base;
	dbg->hidden = c->x;
	dbg->argmax = c->argmax;
	dbg->logits = c->logits;
	dbg->norm_eps = RMS_EPS;
}

const struct kv_backend_ops kv_backend_cpu_ops = {
	.name = "cpu",
	.desc = "fp32 weights and KV in host memory; CBLAS GEMMs and the kernels_ref.c twins",
	.open = cpu_open,
	.close = cpu_close,
	.info = cpu_info,
	.step = cpu_step,
	.move_pages = cpu_move_pages,
	.swap = cpu_swap,
	.memory = cpu_memory,
	.kv_forget = cpu_kv_forget,
};
