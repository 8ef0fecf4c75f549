/*
 * backend_cuda.cu -- the CUDA execution backend: exec.h's semantics on one
 * NVIDIA GPU, as exec_impl.h's struct kv_backend_ops (kv_backend_cuda_ops,
 * listed by exec.c when gpu/meson.build defines KV_HAVE_CUDA_BACKEND).
 * exec.c checks the options and every batch, move and swap before a hook
 * runs (exec_impl.h lists what it guarantees); the hooks check only what
 * is CUDA's own (the kernels' shapes, kv_int8) and report failures through
 * kv__backend_fail().  See backend_cuda.h for the CUDA-specific semantics.
 *
 * Memory, all taken in open: fp16 weights in one cudaMalloc (filled on the
 * device by a counter-based hash, seeded, scaled by 1/sqrt(fan-in); norms
 * are ones); the KV arena in one cudaMalloc of kv_pages pages, a page
 * being `layers` consecutive kernel blocks (exec.h, kernels.h), fp16 or
 * 8-bit with group scales; activations in one cudaMalloc; pinned host
 * staging for the per-step metadata, the compaction moves and the swap
 * slots (the slots grow on demand, outside steps).
 *
 * One step, on the compute stream: one cudaMemcpyAsync of the metadata
 * (page tables; per new token its table offset, position and token id;
 * the rows to sample), embedding lookup, then per layer RMSNorm -> QKV GEMM
 * -> KV append -> attention (every new token over positions 0..pos, which
 * is causal inside a prefill chunk because the chunk's KV is appended
 * first) -> O GEMM accumulated into the residual (beta = 1) -> RMSNorm ->
 * gate/up GEMM -> SiLU(gate) * up -> down GEMM into the residual; then the
 * final norm of the sampled rows and the LM head.  GEMMs are cublasGemmEx
 * with fp16 inputs, CUBLAS_COMPUTE_32F, fp32 outputs; the residual stream
 * is fp32.  The rejected alternative, fp16 outputs everywhere, saves a
 * little bandwidth but loses the residual's precision over many layers.
 *
 * Copies run on a second stream with their own events, so an async swap
 * overlaps the next step; the step waits for them after its own work.
 */
#include <cublas_v2.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <math.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernels_cuda.h"

/* This unit is the CUDA backend: exec_impl.h declares kv_backend_cuda_ops under this. */
#ifndef KV_HAVE_CUDA_BACKEND
#define KV_HAVE_CUDA_BACKEND 1
#endif
extern "C" {
#include "exec_impl.h"
}
#include "backend_cuda.h"

#define ALIGN_BYTES 256 /* every tensor starts on a 256-byte boundary */
#define SWAP_PENDING 8 /* async swaps in flight before the oldest is waited for */
#define ROW_THREADS 256 /* RMSNorm: one block per row */
#define RMS_EPS 1e-5f /* RMSNorm epsilon (Llama's) */

/* One layer's weights, views into the weight allocation. */
struct layer_w {
	__half *attn_norm; /* [hidden] */
	__half *qkv; /* [(heads + 2 kv_heads) * head_dim][hidden] */
	__half *o; /* [hidden][heads * head_dim] */
	__half *mlp_norm; /* [hidden] */
	__half *up; /* [(gated ? 2 : 1) * intermediate][hidden]: gate rows first */
	__half *down; /* [hidden][intermediate] */
};

/* An async swap whose copy may still be running. */
struct pending {
	cudaEvent_t start, stop; /* around its copies on the copy stream */
	uint64_t *ns; /* where its time goes when it completes */
	int busy; /* 1 while queued */
	uint64_t seq; /* queue order, to wait for the oldest first */
};

/*
 * The backend's state.  base first (exec_impl.h): exec.c owns it and fills
 * it after open; open fills base.opts and base.model itself too (the same
 * values), so the hooks read the options and the model there from the start.
 */
struct kv_cuda {
	struct kv_backend base; /* exec.c's part: ops, options, model copy, err */
	struct kv_paged_shape sh; /* kernel shape (layer set per call) */
	enum kv_kv_type kv_type; /* F16 or I8 */
	struct kv_backend_info info; /* filled in open */
	size_t page_bytes; /* layers * kernel block bytes */
	uint32_t qkv_cols; /* (heads + 2 kv_heads) * head_dim */
	uint32_t up_cols; /* (gated ? 2 : 1) * intermediate */
	cudaStream_t compute, copy; /* the two streams */
	cublasHandle_t blas; /* bound to the compute stream */
	cudaEvent_t ev_start, ev_stop; /* around steps and moves */
	struct pending pend[SWAP_PENDING]; /* async swaps */
	uint64_t pend_seq; /* next pending's order */
	void *weights; /* the weight allocation */
	struct layer_w *lw; /* [layers] */
	__half *emb, *lm, *final_norm; /* [vocab][hidden], same or separate, [hidden] */
	void *arena; /* the KV arena, NULL after kv_forget */
	size_t arena_bytes; /* kv_pages * page_bytes */
	void *ws; /* the activation allocation */
	float *h; /* [tokens][hidden] residual stream */
	__half *xn; /* [tokens][hidden] normed, GEMM input */
	float *qkv; /* [tokens][qkv_cols] */
	__half *attn; /* [tokens][heads * head_dim] */
	float *gu; /* [tokens][up_cols] */
	__half *act; /* [tokens][intermediate] */
	__half *xs; /* [seqs][hidden] sampled rows, normed */
	float *logits; /* [seqs][vocab] */
	int32_t *d_meta, *h_meta; /* step metadata, device and pinned host */
	size_t meta_ints; /* capacity of both */
	uint32_t last_rows; /* rows of logits the last step wrote */
	int32_t *d_moves, *h_moves; /* compaction from/to, device and pinned */
	int *wave_end; /* host, per move */
	size_t moves_cap; /* moves the buffers hold */
	uint64_t *touched; /* [ceil(kv_pages / 64)] bit p: page p written or read since open or
			      kv_forget (memory() reports their count times page_bytes) */
	uint64_t n_touched; /* bits set in touched */
	char *slots; /* pinned host swap slots */
	uint64_t n_slots; /* slots allocated */
	uint64_t open_delta; /* cudaMemGetInfo's fall across the allocations in open */
};

static_assert(offsetof(struct kv_cuda, base) == 0, "exec_impl.h: base is the first member");

static struct kv_cuda *cu_of(struct kv_backend *b)
{
	return (struct kv_cuda *)(void *)b;
}

static const struct kv_cuda *cu_of_c(const struct kv_backend *b)
{
	return (const struct kv_cuda *)(const void *)b;
}

/* Records a failure: one sentence for kv_backend_last_error(); returns err. */
static int fail_msg(struct kv_cuda *c, int err, const char *fmt, ...)
{
	va_list ap;
	char msg[sizeof(c->base.err)];

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	return kv__backend_fail(&c->base, err, "%s", msg);
}

/*
 * 0, or KV_EIO naming the failed CUDA call.  A failure is also consumed
 * from the runtime's last-error slot (cudaGetLastError): a failed
 * cudaMalloc or cudaHostAlloc leaves cudaErrorMemoryAllocation there, and
 * the next kernel launch check (cudaGetLastError after <<<>>>) would
 * report that "out of memory" as its own.  A real sticky error (a kernel
 * fault) survives the read: every later call returns it again.
 */
static int cu_ok(struct kv_cuda *c, cudaError_t e, const char *what)
{
	if (e == cudaSuccess)
		return 0;
	(void)cudaGetLastError();
	return fail_msg(c, KV_EIO, "CUDA %s failed: %s", what, cudaGetErrorString(e));
}

/* 0, or KV_EIO naming the failed cuBLAS call. */
static int blas_ok(struct kv_cuda *c, cublasStatus_t s, const char *what)
{
	if (s == CUBLAS_STATUS_SUCCESS)
		return 0;
	return fail_msg(c, KV_EIO, "cuBLAS %s failed: %s", what, cublasGetStatusString(s));
}

#define TRY(expr)                                                             \
	do {                                                                  \
		int rc_ = (expr);                                             \
		if (rc_)                                                      \
			return rc_;                                           \
	} while (0)

static size_t align_up(size_t n)
{
	return (n + ALIGN_BYTES - 1) / ALIGN_BYTES * ALIGN_BYTES;
}

/*
 * After a failure with work queued on stream st: waits for that work, so
 * that no queued copy still reads a pinned buffer the next call rewrites
 * (the step metadata, the moves, the swap slots), and returns rc.  The
 * wait's own error is consumed and dropped: rc says what failed first.
 */
static int drain(cudaStream_t st, int rc)
{
	if (cudaStreamSynchronize(st) != cudaSuccess)
		(void)cudaGetLastError();
	return rc;
}

/* Marks the n pages of list in use: memory() reports them (exec.h). */
static void touch_pages(struct kv_cuda *c, const int32_t *list, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++) {
		uint64_t p = (uint64_t)list[i], bit = 1ULL << (p % 64);

		if (!(c->touched[p / 64] & bit)) {
			c->touched[p / 64] |= bit;
			c->n_touched++;
		}
	}
}

static uint64_t mix64(uint64_t x)
{
	x ^= x >> 30;
	x *= 0xbf58476d1ce4e5b9ULL;
	x ^= x >> 27;
	x *= 0x94d049bb133111ebULL;
	return x ^ (x >> 31);
}

/* ---- kernels of the model (the KV kernels are in kernels.cu) ---- */

/* w[i] = scale * u(seed, i), u uniform in [-1, 1); scale 0 writes ones. */
__global__ void fill_kernel(__half *w, size_t n, uint64_t seed, float scale)
{
	size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x, step = (size_t)gridDim.x * blockDim.x;

	for (; i < n; i += step) {
		uint64_t x = seed + 0x9e3779b97f4a7c15ULL * (i + 1);

		x ^= x >> 30;
		x *= 0xbf58476d1ce4e5b9ULL;
		x ^= x >> 27;
		x *= 0x94d049bb133111ebULL;
		x ^= x >> 31;
		w[i] = __float2half_rn(scale == 0.0f ? 1.0f
				       : scale * ((float)(x >> 40) * (2.0f / 16777216.0f) - 1.0f));
	}
}

/* h[t][:] = emb[id[t]][:] widened. */
__global__ void embed_kernel(float *h, const __half *emb, const int32_t *id, int tokens, int hidden)
{
	size_t n = (size_t)tokens * hidden, i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;

	for (; i < n; i += (size_t)gridDim.x * blockDim.x)
		h[i] = __half2float(emb[(size_t)id[i / hidden] * hidden + i % hidden]);
}

/* out[r] = x[src] / rms(x[src]) * w, src = rows ? rows[r] : r; one block per row. */
__global__ void __launch_bounds__(ROW_THREADS)
rmsnorm_kernel(__half *out, const float *x, const __half *w, const int32_t *rows, int hidden)
{
	__shared__ float part[ROW_THREADS / 32];
	int r = blockIdx.x, src = rows ? rows[r] : r;
	const float *xr = x + (size_t)src * hidden;
	float ss = 0.0f, inv;

	for (int i = threadIdx.x; i < hidden; i += ROW_THREADS)
		ss += xr[i] * xr[i];
	for (int o = 16; o > 0; o >>= 1)
		ss += __shfl_xor_sync(0xffffffffu, ss, o);
	if (threadIdx.x % 32 == 0)
		part[threadIdx.x / 32] = ss;
	__syncthreads();
	ss = 0.0f;
	for (int i = 0; i < ROW_THREADS / 32; i++)
		ss += part[i];
	inv = rsqrtf(ss / (float)hidden + RMS_EPS);
	for (int i = threadIdx.x; i < hidden; i += ROW_THREADS)
		out[(size_t)r * hidden + i] = __float2half_rn(xr[i] * inv * __half2float(w[i]));
}

/* act = silu(gate) * up (gated, gu rows [gate | up]) or relu(up). */
__global__ void act_kernel(__half *act, const float *gu, int tokens, int inter, int gated)
{
	size_t n = (size_t)tokens * inter, i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;

	for (; i < n; i += (size_t)gridDim.x * blockDim.x) {
		size_t t = i / inter, j = i % inter;

		if (gated) {
			float g = gu[t * 2 * inter + j], u = gu[t * 2 * inter + inter + j];

			act[i] = __float2half_rn(g / (1.0f + expf(-g)) * u);
		} else {
			act[i] = __float2half_rn(fmaxf(gu[t * inter + j], 0.0f));
		}
	}
}

/* Blocks for a grid-stride loop over n elements. */
static unsigned grid_for(size_t n)
{
	size_t b = (n + 255) / 256;

	return (unsigned)(b < 1 ? 1 : b > 4096 ? 4096 : b);
}

/*
 * Y[n][out] (fp32, row-major) = X[n][k] (fp16) W[out][k]^T (fp16) + beta Y:
 * in cuBLAS's column-major terms Y^T = op_T(W) X^T.
 */
static int gemm(struct kv_cuda *c, const __half *W, const __half *X, float *Y, int out, int n,
		int k, float beta, const char *what)
{
	float alpha = 1.0f;

	return blas_ok(c, cublasGemmEx(c->blas, CUBLAS_OP_T, CUBLAS_OP_N, out, n, k, &alpha, W,
				       CUDA_R_16F, k, X, CUDA_R_16F, k, &beta, Y, CUDA_R_32F, out,
				       CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT),
		       what);
}

/* ---- open and close ---- */

/*
 * What the CUDA kernels add to exec.c's checks (exec_impl.h): head_dim a
 * multiple of 32 up to KV_ATTN_MAX_DIM, at most 65535 new tokens a step
 * (the append grid), kv_int8 0 or 1.  Fills d (field "backend").
 */
static int check_opts(struct kv_cuda *c, const struct kv_backend_opts *o, struct kv_diag *d)
{
	const struct kv_model *m = o->model;
	struct kv_paged_shape sh = { 0, 0, 0, 0, 0, 0 };

	sh.heads = (int)m->heads;
	sh.kv_heads = (int)m->kv_heads;
	sh.head_dim = (int)m->head_dim;
	sh.block_tokens = (int)o->page_tokens;
	sh.layers = (int)m->layers;
	if (!kv__cuda_shape_ok(&sh))
		return kv_diag_set(d, KV_EINVAL, "", 0, 0, "backend",
				   "model %s: the CUDA kernels need head_dim a multiple of 32 up to "
				   "%d (got %u, heads %u, kv_heads %u)",
				   m->name, KV_ATTN_MAX_DIM, m->head_dim, m->heads, m->kv_heads);
	if (o->max_batch_tokens > 65535)
		return kv_diag_set(d, KV_EINVAL, "", 0, 0, "backend",
				   "max_batch_tokens %u: the CUDA backend runs at most 65535 new "
				   "tokens a step", o->max_batch_tokens);
	if (o->kv_int8 != 0 && o->kv_int8 != 1)
		return kv_diag_set(d, KV_EINVAL, "", 0, 0, "backend",
				   "kv_int8 is %d; expected 0 (fp16 KV) or 1 (8-bit KV)", o->kv_int8);
	if (o->cpu_clock)
		return kv_diag_set(d, KV_EINVAL, "", 0, 0, "backend",
				   "cpu_clock is the CPU backend's; the CUDA backend times with events");
	c->sh = sh;
	return 0;
}

/* Lays the weights out in one allocation and fills them on the device. */
static int open_weights(struct kv_cuda *c)
{
	const struct kv_model *m = &c->base.model;
	uint64_t seed = c->base.opts.seed;
	size_t H = m->hidden, qo = (size_t)m->heads * m->head_dim, off = 0, i;
	size_t layer_sizes[6] = { H, (size_t)c->qkv_cols * H, H * qo, H, (size_t)c->up_cols * H,
				  H * m->intermediate };
	size_t fan_in[6] = { 0, H, qo, 0, H, m->intermediate };
	size_t emb = (size_t)m->vocab * H, total = 0;
	__half *base;
	uint32_t l;

	for (i = 0; i < 6; i++)
		total += align_up(layer_sizes[i] * 2) * m->layers;
	total += align_up(emb * 2) * (m->tie_embeddings ? 1 : 2) + align_up(H * 2);
	TRY(cu_ok(c, cudaMalloc(&c->weights, total), "cudaMalloc(weights)"));
	c->info.weight_bytes = total;
	base = (__half *)c->weights;
	c->lw = (struct layer_w *)kv_xcalloc(m->layers, sizeof(*c->lw));
	for (l = 0; l < m->layers; l++) {
		__half **slot[6] = { &c->lw[l].attn_norm, &c->lw[l].qkv, &c->lw[l].o,
				     &c->lw[l].mlp_norm, &c->lw[l].up, &c->lw[l].down };

		for (i = 0; i < 6; i++) {
			float scale = fan_in[i] ? 1.0f / sqrtf((float)fan_in[i]) : 0.0f;

			*slot[i] = base + off / 2;
			fill_kernel<<<grid_for(layer_sizes[i]), 256, 0, c->compute>>>(
				*slot[i], layer_sizes[i], mix64(seed ^ (l * 8 + i + 1)), scale);
			off += align_up(layer_sizes[i] * 2);
		}
	}
	c->emb = base + off / 2;
	fill_kernel<<<grid_for(emb), 256, 0, c->compute>>>(c->emb, emb, mix64(seed ^ 0xe1), 1.0f);
	off += align_up(emb * 2);
	c->final_norm = base + off / 2;
	fill_kernel<<<grid_for(H), 256, 0, c->compute>>>(c->final_norm, H, 0, 0.0f);
	off += align_up(H * 2);
	c->lm = c->emb;
	if (!m->tie_embeddings) {
		c->lm = base + off / 2;
		fill_kernel<<<grid_for(emb), 256, 0, c->compute>>>(c->lm, emb, mix64(seed ^ 0x1e),
								    1.0f / sqrtf((float)H));
	}
	TRY(cu_ok(c, cudaGetLastError(), "fill_kernel launch"));
	return cu_ok(c, cudaStreamSynchronize(c->compute), "fill_kernel");
}

/* Activations: one allocation carved into the step's buffers. */
static int open_workspace(struct kv_cuda *c)
{
	const struct kv_model *m = &c->base.model;
	const struct kv_backend_opts *o = &c->base.opts;
	size_t N = o->max_batch_tokens, S = o->max_batch_seqs, H = m->hidden, off = 0;
	size_t pages_per_seq = kv_div_ceil(o->max_ctx_tokens, o->page_tokens);
	size_t sizes[9];
	void **ptrs[9] = { (void **)&c->h, (void **)&c->xn, (void **)&c->qkv, (void **)&c->attn,
			   (void **)&c->gu, (void **)&c->act, (void **)&c->xs, (void **)&c->logits,
			   (void **)&c->d_meta };
	int i;

	c->meta_ints = S * pages_per_seq + 3 * N + S;
	sizes[0] = N * H * 4;
	sizes[1] = N * H * 2;
	sizes[2] = N * c->qkv_cols * 4;
	sizes[3] = N * m->heads * m->head_dim * 2;
	sizes[4] = N * c->up_cols * 4;
	sizes[5] = N * m->intermediate * 2;
	sizes[6] = S * H * 2;
	sizes[7] = S * m->vocab * 4;
	sizes[8] = c->meta_ints * 4;
	for (i = 0; i < 9; i++)
		off += align_up(sizes[i]);
	TRY(cu_ok(c, cudaMalloc(&c->ws, off), "cudaMalloc(workspace)"));
	c->info.workspace_bytes = off;
	for (i = 0, off = 0; i < 9; off += align_up(sizes[i++]))
		*ptrs[i] = (char *)c->ws + off;
	TRY(cu_ok(c, cudaHostAlloc((void **)&c->h_meta, c->meta_ints * 4, cudaHostAllocDefault),
		  "cudaHostAlloc(step metadata)"));
	return 0;
}

/* (Re)allocates the KV arena after kv_forget, zeroed; no-op when present. */
static int ensure_arena(struct kv_cuda *c)
{
	if (c->arena)
		return 0;
	TRY(cu_ok(c, cudaMalloc(&c->arena, c->arena_bytes), "cudaMalloc(KV arena)"));
	TRY(cu_ok(c, cudaMemsetAsync(c->arena, 0, c->arena_bytes, c->compute), "cudaMemset(KV arena)"));
	return cu_ok(c, cudaStreamSynchronize(c->compute), "cudaMemset(KV arena)");
}

static int open_runtime(struct kv_cuda *c)
{
	int i;

	TRY(cu_ok(c, cudaStreamCreateWithFlags(&c->compute, cudaStreamNonBlocking),
		  "cudaStreamCreate(compute)"));
	TRY(cu_ok(c, cudaStreamCreateWithFlags(&c->copy, cudaStreamNonBlocking),
		  "cudaStreamCreate(copy)"));
	TRY(cu_ok(c, cudaEventCreate(&c->ev_start), "cudaEventCreate"));
	TRY(cu_ok(c, cudaEventCreate(&c->ev_stop), "cudaEventCreate"));
	for (i = 0; i < SWAP_PENDING; i++) {
		TRY(cu_ok(c, cudaEventCreate(&c->pend[i].start), "cudaEventCreate"));
		TRY(cu_ok(c, cudaEventCreate(&c->pend[i].stop), "cudaEventCreate"));
	}
	TRY(blas_ok(c, cublasCreate(&c->blas), "cublasCreate"));
	return blas_ok(c, cublasSetStream(c->blas, c->compute), "cublasSetStream");
}

static void fill_info(struct kv_cuda *c, const cudaDeviceProp *p)
{
	snprintf(c->info.kind, sizeof(c->info.kind), "cuda");
	snprintf(c->info.device, sizeof(c->info.device), "%.127s", p->name);
	c->info.mem_bytes = p->totalGlobalMem;
	c->info.mem_bw_Bps = 0; /* no datasheet table here; the device profile has it */
	c->info.flops = 0;
	c->info.cores = p->multiProcessorCount;
	c->info.dtype_bytes = 2;
	c->info.kv_elem_bytes = c->kv_type == KV_KV_I8 ? 1 : 2;
	c->info.page_bytes = c->page_bytes;
	c->info.kv_pages = c->base.opts.kv_pages;
}

static void cuda_close(struct kv_backend *b);

/* Everything open does after the options check; c->err says what failed. */
static int open_all(struct kv_cuda *c)
{
	cudaDeviceProp prop;
	size_t free0, free1, total;
	int count = 0;
	cudaError_t e = cudaGetDeviceCount(&count);

	if (e != cudaSuccess || count == 0)
		return fail_msg(c, KV_ENOENT, "no GPU: %s",
				e != cudaSuccess ? cudaGetErrorString(e) : "no CUDA device visible");
	TRY(cu_ok(c, cudaSetDevice(0), "cudaSetDevice"));
	TRY(cu_ok(c, cudaGetDeviceProperties(&prop, 0), "cudaGetDeviceProperties"));
	TRY(open_runtime(c));
	TRY(cu_ok(c, cudaMemGetInfo(&free0, &total), "cudaMemGetInfo"));
	TRY(open_weights(c));
	c->arena_bytes = (size_t)c->base.opts.kv_pages * c->page_bytes;
	TRY(ensure_arena(c));
	TRY(open_workspace(c));
	c->touched = (uint64_t *)kv_xcalloc(kv_div_ceil(c->base.opts.kv_pages, 64), sizeof(uint64_t));
	c->moves_cap = c->base.opts.kv_pages;
	c->wave_end = (int *)kv_xmalloc(c->moves_cap * sizeof(int));
	TRY(cu_ok(c, cudaMalloc(&c->d_moves, c->moves_cap * 2 * 4), "cudaMalloc(moves)"));
	TRY(cu_ok(c, cudaHostAlloc((void **)&c->h_moves, c->moves_cap * 2 * 4, cudaHostAllocDefault),
		  "cudaHostAlloc(moves)"));
	TRY(cu_ok(c, cudaMemGetInfo(&free1, &total), "cudaMemGetInfo"));
	c->open_delta = free0 > free1 ? free0 - free1 : 0;
	if (c->open_delta + 64 * KV_MiB < c->info.weight_bytes + c->arena_bytes + c->info.workspace_bytes)
		return fail_msg(c, KV_EIO,
				"cudaMemGetInfo: free memory fell by %zu bytes while %zu were allocated",
				(size_t)c->open_delta,
				(size_t)(c->info.weight_bytes + c->arena_bytes + c->info.workspace_bytes));
	fill_info(c, &prop);
	return 0;
}

static int cuda_open(const struct kv_backend_opts *o, struct kv_backend **out, struct kv_diag *d)
{
	struct kv_cuda *c = (struct kv_cuda *)kv_xcalloc(1, sizeof(*c));
	int rc;

	*out = NULL;
	if ((rc = check_opts(c, o, d))) {
		free(c);
		return rc;
	}
	c->base.opts = *o; /* exec.c copies the same after open; the hooks read them here */
	c->base.model = *o->model;
	c->base.opts.model = &c->base.model;
	c->kv_type = o->kv_int8 ? KV_KV_I8 : KV_KV_F16;
	c->page_bytes = kv__cuda_block_bytes(&c->sh, c->kv_type) * c->base.model.layers;
	c->qkv_cols = (c->base.model.heads + 2 * c->base.model.kv_heads) * c->base.model.head_dim;
	c->up_cols = (c->base.model.gated_mlp ? 2 : 1) * c->base.model.intermediate;
	if ((rc = open_all(c)))
		goto fail;
	*out = &c->base;
	return 0;
fail:
	kv_diag_set(d, rc, "", 0, 0, "backend", "%s", c->base.err);
	cuda_close(&c->base);
	return rc;
}

/* Waits for one pending swap and writes its time. */
static int finish_one(struct kv_cuda *c, struct pending *p)
{
	float ms = 0.0f;

	p->busy = 0;
	TRY(cu_ok(c, cudaEventSynchronize(p->stop), "cudaEventSynchronize(swap)"));
	TRY(cu_ok(c, cudaEventElapsedTime(&ms, p->start, p->stop), "cudaEventElapsedTime(swap)"));
	if (p->ns)
		*p->ns = (uint64_t)((double)ms * 1e6);
	return 0;
}

/* Waits for every pending swap, oldest first (they share one stream). */
static int finish_swaps(struct kv_cuda *c)
{
	int rc = 0;

	for (;;) {
		struct pending *old = NULL;
		int i, r;

		for (i = 0; i < SWAP_PENDING; i++)
			if (c->pend[i].busy && (!old || c->pend[i].seq < old->seq))
				old = &c->pend[i];
		if (!old)
			return rc;
		if ((r = finish_one(c, old)) && !rc)
			rc = r;
	}
}

static void cuda_close(struct kv_backend *b)
{
	struct kv_cuda *c = cu_of(b);
	int i;

	if (!c)
		return;
	if (c->compute) /* errors here have nowhere to go; the frees below proceed */
		(void)finish_swaps(c), (void)cudaStreamSynchronize(c->compute);
	if (c->blas)
		cublasDestroy(c->blas);
	for (i = 0; i < SWAP_PENDING; i++) {
		if (c->pend[i].start)
			cudaEventDestroy(c->pend[i].start);
		if (c->pend[i].stop)
			cudaEventDestroy(c->pend[i].stop);
	}
	if (c->ev_start)
		cudaEventDestroy(c->ev_start);
	if (c->ev_stop)
		cudaEventDestroy(c->ev_stop);
	if (c->compute)
		cudaStreamDestroy(c->compute);
	if (c->copy)
		cudaStreamDestroy(c->copy);
	cudaFree(c->weights), cudaFree(c->arena), cudaFree(c->ws), cudaFree(c->d_moves);
	cudaFreeHost(c->h_meta), cudaFreeHost(c->h_moves), cudaFreeHost(c->slots);
	free(c->lw);
	free(c->wave_end);
	free(c->touched);
	free(c);
}

static void cuda_info(const struct kv_backend *b, struct kv_backend_info *info)
{
	*info = cu_of_c(b)->info;
}

/* ---- steps ---- */

/*
 * Counts the batch's table entries (the pages its tokens occupy: a
 * sequence may pass more, n_pages, than ctx + n_new needs), new tokens and
 * sampled rows.  exec.c has checked the batch (exec_impl.h), so the
 * metadata fits meta_ints.
 */
static void step_count(struct kv_cuda *c, const struct kv_backend_seq *seqs, uint32_t n,
		       size_t *tables, size_t *tokens, size_t *rows)
{
	uint32_t i;

	*tables = *tokens = *rows = 0;
	for (i = 0; i < n; i++) {
		*tables += kv_div_ceil((uint64_t)seqs[i].ctx + seqs[i].n_new, c->base.opts.page_tokens);
		*tokens += seqs[i].n_new;
		*rows += seqs[i].sample ? 1 : 0;
	}
}

/*
 * Fills the pinned metadata: tables, then per token its table offset,
 * position and token id, then the rows to sample.  Returns the ints used.
 */
static size_t step_meta(struct kv_cuda *c, const struct kv_backend_seq *seqs, uint32_t n,
			size_t tables, size_t tokens)
{
	int32_t *tab = c->h_meta, *toff = tab + tables, *tpos = toff + tokens, *tid = tpos + tokens;
	int32_t *rows = tid + tokens;
	size_t t = 0, off = 0, r = 0;
	uint32_t i, j;

	for (i = 0; i < n; i++) {
		const struct kv_backend_seq *s = &seqs[i];
		size_t pages = kv_div_ceil((uint64_t)s->ctx + s->n_new, c->base.opts.page_tokens);

		memcpy(tab + off, s->pages, pages * sizeof(int32_t));
		for (j = 0; j < s->n_new; j++, t++) {
			uint64_t pos = (uint64_t)s->ctx + j;

			toff[t] = (int32_t)off;
			tpos[t] = (int32_t)pos;
			tid[t] = (int32_t)(mix64(c->base.opts.seed ^ mix64(pos * 0x100000001b3ULL + i)) %
					   c->base.model.vocab);
		}
		if (s->sample)
			rows[r++] = (int32_t)(t - 1); /* its last new token */
		off += pages;
	}
	return tables + 3 * tokens + r;
}

/* One layer over the step's tokens. */
static int step_layer(struct kv_cuda *c, uint32_t l, int N, const int32_t *d_tab,
		      const int32_t *d_toff, const int32_t *d_tpos)
{
	const struct kv_model *m = &c->base.model;
	const struct layer_w *w = &c->lw[l];
	int H = (int)m->hidden, qo = (int)(m->heads * m->head_dim), I = (int)m->intermediate;
	struct kv__append ap;
	struct kv__attn at;

	rmsnorm_kernel<<<N, ROW_THREADS, 0, c->compute>>>(c->xn, c->h, w->attn_norm, NULL, H);
	TRY(cu_ok(c, cudaGetLastError(), "rmsnorm_kernel launch"));
	TRY(gemm(c, w->qkv, c->xn, c->qkv, (int)c->qkv_cols, N, H, 0.0f, "GEMM QKV"));
	ap.k = c->qkv + qo;
	ap.v = c->qkv + qo + m->kv_heads * m->head_dim;
	ap.stride = c->qkv_cols;
	ap.arena = c->arena;
	ap.type = c->kv_type;
	ap.tables = d_tab;
	ap.tok_table = d_toff;
	ap.tok_pos = d_tpos;
	ap.n_tok = N;
	ap.sh = c->sh;
	ap.sh.layer = (int)l;
	TRY(cu_ok(c, kv__cuda_append(&ap, c->compute), "append_kernel launch"));
	at.q = c->qkv;
	at.q_stride = c->qkv_cols;
	at.out = c->attn;
	at.out_stride = (size_t)qo;
	at.out_half = 1;
	at.arena = c->arena;
	at.type = c->kv_type;
	at.tables = d_tab;
	at.tok_table = d_toff;
	at.tok_pos = d_tpos;
	at.n_tok = N;
	at.sh = ap.sh;
	at.scale = 1.0f / sqrtf((float)m->head_dim);
	TRY(cu_ok(c, kv__cuda_attention(&at, c->compute), "attention_kernel launch"));
	TRY(gemm(c, w->o, c->attn, c->h, H, N, qo, 1.0f, "GEMM O"));
	rmsnorm_kernel<<<N, ROW_THREADS, 0, c->compute>>>(c->xn, c->h, w->mlp_norm, NULL, H);
	TRY(cu_ok(c, cudaGetLastError(), "rmsnorm_kernel launch"));
	TRY(gemm(c, w->up, c->xn, c->gu, (int)c->up_cols, N, H, 0.0f, "GEMM gate/up"));
	act_kernel<<<grid_for((size_t)N * I), 256, 0, c->compute>>>(c->act, c->gu, N, I,
								    (int)m->gated_mlp);
	TRY(cu_ok(c, cudaGetLastError(), "act_kernel launch"));
	return gemm(c, w->down, c->act, c->h, H, N, I, 1.0f, "GEMM down");
}

/*
 * The step proper, metadata in h_meta (`used` ints: tables, tokens, rows
 * as step_count() counted them): queues the upload and the layers, waits
 * for them, stores the time in *ns.  On failure the caller drains the
 * stream (the upload may still be reading h_meta).
 */
static int step_run(struct kv_cuda *c, size_t used, size_t tables, size_t tokens, size_t rows,
		    uint64_t *ns)
{
	const int32_t *d_toff, *d_tpos, *d_tid;
	int H = (int)c->base.model.hidden, N = (int)tokens;
	float ms = 0.0f;
	uint32_t l;

	d_toff = c->d_meta + tables;
	d_tpos = d_toff + tokens;
	d_tid = d_tpos + tokens;
	TRY(cu_ok(c, cudaEventRecord(c->ev_start, c->compute), "cudaEventRecord"));
	TRY(cu_ok(c, cudaMemcpyAsync(c->d_meta, c->h_meta, used * 4, cudaMemcpyHostToDevice,
				     c->compute), "cudaMemcpyAsync(step metadata)"));
	embed_kernel<<<grid_for((size_t)N * H), 256, 0, c->compute>>>(c->h, c->emb, d_tid, N, H);
	TRY(cu_ok(c, cudaGetLastError(), "embed_kernel launch"));
	for (l = 0; l < c->base.model.layers; l++)
		TRY(step_layer(c, l, N, c->d_meta, d_toff, d_tpos));
	if (rows) {
		rmsnorm_kernel<<<(unsigned)rows, ROW_THREADS, 0, c->compute>>>(
			c->xs, c->h, c->final_norm, d_tid + tokens, H);
		TRY(cu_ok(c, cudaGetLastError(), "rmsnorm_kernel launch"));
		TRY(gemm(c, c->lm, c->xs, c->logits, (int)c->base.model.vocab, (int)rows, H, 0.0f,
			 "GEMM LM head"));
	}
	TRY(cu_ok(c, cudaEventRecord(c->ev_stop, c->compute), "cudaEventRecord"));
	TRY(cu_ok(c, cudaEventSynchronize(c->ev_stop), "step"));
	c->last_rows = (uint32_t)rows;
	TRY(cu_ok(c, cudaEventElapsedTime(&ms, c->ev_start, c->ev_stop), "cudaEventElapsedTime"));
	*ns = (uint64_t)((double)ms * 1e6);
	return 0;
}

static int cuda_step(struct kv_backend *b, const struct kv_backend_seq *seqs, uint32_t n,
		     uint64_t *ns)
{
	struct kv_cuda *c = cu_of(b);
	size_t tables, tokens, rows, used;
	int rc;

	step_count(c, seqs, n, &tables, &tokens, &rows);
	TRY(ensure_arena(c));
	used = step_meta(c, seqs, n, tables, tokens);
	touch_pages(c, c->h_meta, tables); /* the tables lead the metadata */
	c->last_rows = 0;
	if ((rc = step_run(c, used, tables, tokens, rows, ns)))
		return drain(c->compute, rc);
	return finish_swaps(c);
}

/* kv_backend_cuda_logits() (backend_cuda.h) behind cuda_load.c, through the module table. */
extern "C" int kv__cuda_logits(struct kv_backend *b, float *out, size_t n)
{
	struct kv_cuda *c = cu_of(b);

	if (b->ops != &kv_backend_cuda_ops)
		return kv__backend_fail(b, KV_EINVAL, "logits: a %s backend, not cuda", b->ops->name);
	if (n > (size_t)c->last_rows * c->base.model.vocab)
		return fail_msg(c, KV_EINVAL, "%zu logits asked, the last step made %zu", n,
				(size_t)c->last_rows * c->base.model.vocab);
	return cu_ok(c, cudaMemcpy(out, c->logits, n * sizeof(float), cudaMemcpyDeviceToHost),
		     "cudaMemcpy(logits)");
}

/* ---- copies ---- */

/*
 * Grows the move buffers to hold n moves (outside steps; rare).  The old
 * buffers stay until both new ones exist, so a failed regrow leaves a
 * working moves_cap behind; freeing them first left moves_cap 0, and the
 * next call doubled 0 forever.  cap starts from 1 all the same.
 */
static int moves_reserve(struct kv_cuda *c, uint32_t n)
{
	size_t cap = c->moves_cap ? c->moves_cap : 1;
	int32_t *d = NULL, *h = NULL;
	int rc;

	if (n <= c->moves_cap)
		return 0;
	while (cap < n)
		cap *= 2;
	rc = cu_ok(c, cudaMalloc((void **)&d, cap * 2 * 4), "cudaMalloc(moves)");
	if (!rc)
		rc = cu_ok(c, cudaHostAlloc((void **)&h, cap * 2 * 4, cudaHostAllocDefault),
			   "cudaHostAlloc(moves)");
	if (rc) {
		cudaFree(d);
		return rc;
	}
	c->wave_end = (int *)kv_xrealloc(c->wave_end, cap * sizeof(int));
	cudaFree(c->d_moves), cudaFreeHost(c->h_moves);
	c->d_moves = d, c->h_moves = h, c->moves_cap = cap;
	return 0;
}

/* The compaction of the n moves in h_moves: upload, waves, time in *ns. */
static int moves_run(struct kv_cuda *c, uint32_t n, uint64_t *ns)
{
	const int32_t *from = c->h_moves, *to = c->h_moves + n;
	int waves, w, start = 0;
	float ms = 0.0f;

	waves = kv_ref_compact_waves(from, to, (int)n, c->wave_end);
	TRY(cu_ok(c, cudaEventRecord(c->ev_start, c->compute), "cudaEventRecord"));
	TRY(cu_ok(c, cudaMemcpyAsync(c->d_moves, c->h_moves, (size_t)n * 2 * 4,
				     cudaMemcpyHostToDevice, c->compute), "cudaMemcpyAsync(moves)"));
	for (w = 0; w < waves; start = c->wave_end[w++])
		TRY(cu_ok(c, kv__cuda_compact_wave(c->arena, c->page_bytes, c->d_moves + start,
						   c->d_moves + n + start, c->wave_end[w] - start,
						   c->compute), "compact_kernel launch"));
	TRY(cu_ok(c, cudaEventRecord(c->ev_stop, c->compute), "cudaEventRecord"));
	TRY(cu_ok(c, cudaEventSynchronize(c->ev_stop), "compaction"));
	TRY(cu_ok(c, cudaEventElapsedTime(&ms, c->ev_start, c->ev_stop), "cudaEventElapsedTime"));
	*ns = (uint64_t)((double)ms * 1e6);
	return 0;
}

static int cuda_move_pages(struct kv_backend *b, const int32_t *from, const int32_t *to,
			   uint32_t n, uint64_t *ns)
{
	struct kv_cuda *c = cu_of(b);
	int rc;

	*ns = 0;
	if (!n)
		return 0;
	TRY(finish_swaps(c)); /* a queued copy may read or write these pages */
	TRY(ensure_arena(c));
	TRY(moves_reserve(c, n));
	memcpy(c->h_moves, from, n * sizeof(int32_t));
	memcpy(c->h_moves + n, to, n * sizeof(int32_t));
	touch_pages(c, c->h_moves, 2 * (size_t)n);
	if ((rc = moves_run(c, n, ns)))
		return drain(c->compute, rc); /* the upload may still read h_moves */
	return 0;
}

/* Grows the pinned slots to hold `need` (outside steps: waits for queued copies first). */
static int slots_reserve(struct kv_cuda *c, uint64_t need)
{
	uint64_t cap = c->n_slots ? c->n_slots : 16;
	char *fresh = NULL;

	if (need <= c->n_slots)
		return 0;
	while (cap < need)
		cap *= 2;
	TRY(finish_swaps(c));
	TRY(cu_ok(c, cudaHostAlloc((void **)&fresh, cap * c->page_bytes, cudaHostAllocDefault),
		  "cudaHostAlloc(swap slots)"));
	if (c->slots)
		memcpy(fresh, c->slots, c->n_slots * c->page_bytes);
	memset(fresh + c->n_slots * c->page_bytes, 0, (cap - c->n_slots) * c->page_bytes);
	cudaFreeHost(c->slots);
	c->slots = fresh;
	c->n_slots = cap;
	return 0;
}

/* A free pending entry, waiting for the oldest when all are busy. */
static int pending_slot(struct kv_cuda *c, struct pending **out)
{
	struct pending *old = NULL;
	int i;

	for (i = 0; i < SWAP_PENDING; i++) {
		if (!c->pend[i].busy) {
			*out = &c->pend[i];
			return 0;
		}
		if (!old || c->pend[i].seq < old->seq)
			old = &c->pend[i];
	}
	*out = old;
	return finish_one(c, old);
}

/* Queues the copies of one swap between p's events on the copy stream. */
static int swap_queue(struct kv_cuda *c, struct pending *p, const int32_t *pages, uint32_t n,
		      uint64_t slot0, int out)
{
	uint32_t i, run;

	TRY(cu_ok(c, cudaEventRecord(p->start, c->copy), "cudaEventRecord(swap)"));
	for (i = 0; i < n; i += run) { /* runs of consecutive pages: one copy each */
		char *dev = (char *)c->arena + (size_t)pages[i] * c->page_bytes;
		char *host = c->slots + (slot0 + i) * c->page_bytes;
		size_t bytes;

		for (run = 1; i + run < n && pages[i + run] == pages[i] + (int32_t)run; run++)
			;
		bytes = (size_t)run * c->page_bytes;
		TRY(cu_ok(c, cudaMemcpyAsync(out ? host : dev, out ? dev : host, bytes,
					     out ? cudaMemcpyDeviceToHost : cudaMemcpyHostToDevice,
					     c->copy), out ? "cudaMemcpyAsync(offload)"
							   : "cudaMemcpyAsync(prefetch)"));
	}
	return cu_ok(c, cudaEventRecord(p->stop, c->copy), "cudaEventRecord(swap)");
}

static int cuda_swap(struct kv_backend *b, const int32_t *pages, uint32_t n, uint64_t slot0,
		     int out, int async, uint64_t *ns)
{
	struct kv_cuda *c = cu_of(b);
	struct pending *p;
	int rc;

	*ns = 0;
	if (!n)
		return 0;
	TRY(ensure_arena(c));
	TRY(slots_reserve(c, slot0 + n));
	TRY(pending_slot(c, &p));
	touch_pages(c, pages, n);
	if ((rc = swap_queue(c, p, pages, n, slot0, out)))
		return drain(c->copy, rc); /* copies queued so far still use the slots */
	p->busy = 1;
	p->ns = ns;
	p->seq = c->pend_seq++;
	return async ? 0 : finish_swaps(c);
}

/* ---- memory ---- */

/*
 * Weights and workspace: bytes allocated.  KV: pages in use times
 * page_bytes, a page being in use once a step, move or swap has read or
 * written it since open or kv_forget -- the CPU backend's mincore()
 * residency has no CUDA equivalent, and the allocated arena (all of
 * kv_pages, taken at open) would count pages no request ever held.  What
 * is allocated is checked against cudaMemGetInfo.
 */
static int cuda_memory(const struct kv_backend *b, struct kv_backend_mem *m)
{
	struct kv_cuda *c = (struct kv_cuda *)cu_of_c(b); /* err is scratch, not state */
	size_t free_b, total;

	uint64_t alloc = c->info.weight_bytes + (c->arena ? c->arena_bytes : 0) +
			 c->info.workspace_bytes;

	m->weights = c->info.weight_bytes;
	m->kv = c->n_touched * c->page_bytes;
	m->workspace = c->info.workspace_bytes;
	TRY(cu_ok(c, cudaMemGetInfo(&free_b, &total), "cudaMemGetInfo"));
	if (total - free_b < alloc)
		return fail_msg(c, KV_EIO,
				"cudaMemGetInfo reports %zu bytes in use, fewer than the %llu allocated",
				total - free_b, (unsigned long long)alloc);
	return 0;
}

static int cuda_kv_forget(struct kv_backend *b)
{
	struct kv_cuda *c = cu_of(b);

	TRY(finish_swaps(c));
	TRY(cu_ok(c, cudaStreamSynchronize(c->compute), "cudaStreamSynchronize"));
	TRY(cu_ok(c, cudaFree(c->arena), "cudaFree(KV arena)"));
	c->arena = NULL;
	memset(c->touched, 0, kv_div_ceil(c->base.opts.kv_pages, 64) * sizeof(uint64_t));
	c->n_touched = 0;
	return 0;
}

extern "C" const struct kv_backend_ops kv_backend_cuda_ops = {
	/* designated, in declaration order (C++20; GCC and nvcc accept them in C++17) */
	.name = "cuda",
	.desc = "fp16 weights and fp16 or 8-bit KV on one NVIDIA GPU; cuBLAS GEMMs and the "
		"kernels.cu paged-attention kernels",
	.open = cuda_open,
	.close = cuda_close,
	.info = cuda_info,
	.step = cuda_step,
	.move_pages = cuda_move_pages,
	.swap = cuda_swap,
	.memory = cuda_memory,
	.kv_forget = cuda_kv_forget,
};
