/*
 * exec.c -- the public backend calls (exec.h): the registry of kinds, the
 * argument checks every kind shares, and dispatch through the ops table
 * (exec_impl.h).
 *
 * Checking here rather than in each backend keeps one definition of a
 * valid batch, so the CPU and CUDA backends reject exactly the same inputs
 * with the same sentences.
 */
#include "exec_impl.h"
#include "cuda_module.h"

#include <string.h>

/*
 * The kinds linked in (exec.h: kv_backend_kinds lists them with "cuda",
 * which lives in kvsim-cuda.so and is looked up by name in find_kind:
 * its ops table exists only once the module is loaded).
 */
static const struct kv_backend_ops *const backend_ops[] = {
	&kv_backend_cpu_ops,
	NULL,
};

const char *const kv_backend_kinds[] = {
#if KV_HAVE_CUDA_BACKEND
	"cuda",
#endif
	"cpu",
	NULL,
};

const char *kv_backend_last_error(const struct kv_backend *b)
{
	return b->err;
}

/* Fills d for a bad option (field "backend") and returns KV_EINVAL. */
#define OPEN_FAIL(d, ...) kv_diag_set((d), KV_EINVAL, "", 0, 0, "backend", __VA_ARGS__)

/* The model's architecture fields the forward pass divides by or sizes with. */
static int check_model(const struct kv_model *m, struct kv_diag *d)
{
	const struct kv_model_field *f;

	for (f = kv_model_arch_fields; f->key; f++) {
		uint32_t v = kv_model_field(m, f);

		/* 2^24 bounds every product of two fields below 2^48: no overflow in sizes. */
		if (v == 0 || v > (1u << 24))
			return OPEN_FAIL(d, "model %s is %u; expected 1 to 16777216", f->key, v);
	}
	if (m->heads % m->kv_heads)
		return OPEN_FAIL(d, "model heads %u is not a multiple of kv_heads %u", m->heads,
				 m->kv_heads);
	if (m->experts || m->kv_lora_rank || m->sliding_window || m->qkv_bias || m->qk_norm ||
	    m->weight_dtype || m->kv_dtype)
		return OPEN_FAIL(d, "model %s uses MoE, MLA, a sliding window, biases, Q/K norms "
				    "or a weight/KV dtype; the backends run dense Llama-style "
				    "models only", m->name);
	return 0;
}

/* The options every kind needs; see exec_impl.h for what this guarantees. */
static int check_opts(const struct kv_backend_opts *o, struct kv_diag *d)
{
	double arena_bytes;
	int err;

	if (!o || !o->model)
		return OPEN_FAIL(d, "no %s given", !o ? "options" : "model");
	if ((err = check_model(o->model, d)))
		return err;
	if (!o->kv_pages || !o->page_tokens || !o->max_batch_tokens || !o->max_batch_seqs ||
	    !o->max_ctx_tokens)
		return OPEN_FAIL(d, "kv_pages, page_tokens, max_batch_tokens, max_batch_seqs and "
				    "max_ctx_tokens must all be positive");
	if (o->kv_pages > (uint64_t)INT32_MAX / o->model->layers)
		return OPEN_FAIL(d, "kv_pages %llu times layers %u exceeds 2^31 (kernel block "
				    "indices page * layers + layer are int32)",
				 (unsigned long long)o->kv_pages, o->model->layers);
	if (o->threads < 0)
		return OPEN_FAIL(d, "threads is %d; expected >= 0 (0: the library's default)",
				 o->threads);
	/*
	 * The widest element any kind stores is 4 bytes: the arena must be
	 * addressable (in double: the product of four 2^24 fields overflows
	 * uint64_t).
	 */
	arena_bytes = 8.0 * o->model->layers * o->model->kv_heads * o->model->head_dim *
		      o->page_tokens * (double)o->kv_pages;
	if (arena_bytes > (double)(SIZE_MAX / 4))
		return OPEN_FAIL(d, "a KV arena of %llu pages of %u tokens (%.3g bytes) does not "
				    "fit the address space", (unsigned long long)o->kv_pages,
				 o->page_tokens, arena_bytes);
	return 0;
}

/*
 * Sets *ops to kind's and returns 0, or returns KV_EINVAL (unknown kind)
 * or KV_ENOENT ("cuda" in a build without it, or kvsim-cuda.so did not
 * load: cuda_module.h) with d filled.  "cuda" loads the module on first
 * use; a registry entry for it could not be static, its table lives there.
 */
static int find_kind(const char *kind, const struct kv_backend_ops **ops, struct kv_diag *d)
{
	size_t i;

	for (i = 0; kind && backend_ops[i]; i++)
		if (!strcmp(backend_ops[i]->name, kind)) {
			*ops = backend_ops[i];
			return 0;
		}
	if (kind && !strcmp(kind, "cuda")) {
#if KV_HAVE_CUDA_BACKEND
		const char *why = "";
		const struct kv_cuda_module *m = kv_cuda_module_load(&why);

		if (m) {
			*ops = m->ops;
			return 0;
		}
		return kv_diag_set(d, KV_ENOENT, "", 0, 0, "backend",
				   "kind \"cuda\": no GPU: the CUDA backend is not available: %s",
				   why);
#else
		return kv_diag_set(d, KV_ENOENT, "", 0, 0, "backend",
				   "kind \"cuda\": this kvsim was built without CUDA (needs nvcc "
				   "and meson -Dcuda=enabled); kinds here: cpu");
#endif
	}
	return kv_diag_set(d, KV_EINVAL, "", 0, 0, "backend",
			   "unknown kind \"%s\"; expected one of: cpu, cuda",
			   kind ? kind : "(null)");
}

int kv_backend_open(const char *kind, const struct kv_backend_opts *o, struct kv_backend **out,
		    struct kv_diag *d)
{
	const struct kv_backend_ops *ops = NULL;
	struct kv_backend *b = NULL;
	int err;

	*out = NULL;
	if ((err = find_kind(kind, &ops, d)) || (err = check_opts(o, d)) ||
	    (err = ops->open(o, &b, d)))
		return err;
	b->ops = ops;
	b->opts = *o;
	b->model = *o->model;
	b->opts.model = &b->model;
	b->max_pages_per_seq = (uint32_t)kv_div_ceil(o->max_ctx_tokens, o->page_tokens);
	b->err[0] = '\0';
	*out = b;
	return 0;
}

void kv_backend_close(struct kv_backend *b)
{
	if (b)
		b->ops->close(b);
}

void kv_backend_get_info(const struct kv_backend *b, struct kv_backend_info *info)
{
	memset(info, 0, sizeof(*info));
	b->ops->info(b, info);
}

/* Sequence i of a step: positive length within the context, pages that hold it and exist. */
static int check_seq(struct kv_backend *b, const struct kv_backend_seq *s, uint32_t i)
{
	const struct kv_backend_opts *o = &b->opts;
	uint32_t p;

	if (!s->pages || !s->n_new || s->sample > 1)
		return kv__backend_fail(b, KV_EINVAL,
					"seq %u: pages must be non-NULL, n_new >= 1 and sample 0 or 1 "
					"(n_new %u, sample %u)", i, s->n_new, s->sample);
	if (s->ctx > o->max_ctx_tokens || s->n_new > o->max_ctx_tokens - s->ctx)
		return kv__backend_fail(b, KV_EINVAL,
					"seq %u: ctx %u + n_new %u exceeds max_ctx_tokens %u", i,
					s->ctx, s->n_new, o->max_ctx_tokens);
	if ((uint64_t)s->n_pages * o->page_tokens < (uint64_t)s->ctx + s->n_new ||
	    s->n_pages > b->max_pages_per_seq)
		return kv__backend_fail(b, KV_EINVAL,
					"seq %u: %u pages of %u tokens for ctx + n_new = %u tokens "
					"(at most %u pages)", i, s->n_pages, o->page_tokens,
					s->ctx + s->n_new, b->max_pages_per_seq);
	for (p = 0; p < s->n_pages; p++)
		if (s->pages[p] < 0 || (uint64_t)s->pages[p] >= o->kv_pages)
			return kv__backend_fail(b, KV_EINVAL,
						"seq %u: page %d at index %u is outside the arena's "
						"%llu pages", i, s->pages[p], p,
						(unsigned long long)o->kv_pages);
	return 0;
}

int kv_backend_step(struct kv_backend *b, const struct kv_backend_seq *seqs, uint32_t n,
		    uint64_t *ns)
{
	uint64_t tokens = 0;
	uint32_t i;
	int err;

	*ns = 0;
	if (!seqs || n == 0 || n > b->opts.max_batch_seqs)
		return kv__backend_fail(b, KV_EINVAL, "a step needs 1 to max_batch_seqs = %u "
					"sequences; got %u", b->opts.max_batch_seqs, n);
	for (i = 0; i < n; i++) {
		if ((err = check_seq(b, &seqs[i], i)))
			return err;
		tokens += seqs[i].n_new;
	}
	if (tokens > b->opts.max_batch_tokens)
		return kv__backend_fail(b, KV_EINVAL, "%llu new tokens exceed max_batch_tokens %u",
					(unsigned long long)tokens, b->opts.max_batch_tokens);
	return b->ops->step(b, seqs, n, ns);
}

/* Every entry of pages[0..n) is a page of the arena; what names the list in the message. */
static int check_pages(struct kv_backend *b, const int32_t *pages, uint32_t n, const char *what)
{
	uint32_t i;

	if (n && !pages)
		return kv__backend_fail(b, KV_EINVAL, "%s: NULL list of %u pages", what, n);
	for (i = 0; i < n; i++)
		if (pages[i] < 0 || (uint64_t)pages[i] >= b->opts.kv_pages)
			return kv__backend_fail(b, KV_EINVAL,
						"%s[%u] = %d is outside the arena's %llu pages", what,
						i, pages[i], (unsigned long long)b->opts.kv_pages);
	return 0;
}

int kv_backend_move_pages(struct kv_backend *b, const int32_t *from, const int32_t *to,
			  uint32_t n, uint64_t *ns)
{
	int err;

	*ns = 0;
	if ((err = check_pages(b, from, n, "from")) || (err = check_pages(b, to, n, "to")))
		return err;
	return b->ops->move_pages(b, from, to, n, ns);
}

int kv_backend_swap(struct kv_backend *b, const int32_t *pages, uint32_t n, uint64_t slot0,
		    int out, int async, uint64_t *ns)
{
	int err;

	*ns = 0;
	if ((err = check_pages(b, pages, n, "pages")))
		return err;
	if (slot0 > b->opts.kv_pages || n > b->opts.kv_pages - slot0)
		return kv__backend_fail(b, KV_EINVAL,
					"host slots %llu..%llu are beyond the %llu the host holds",
					(unsigned long long)slot0,
					(unsigned long long)slot0 + n - 1,
					(unsigned long long)b->opts.kv_pages);
	if ((out != 0 && out != 1) || (async != 0 && async != 1))
		return kv__backend_fail(b, KV_EINVAL, "out and async must be 0 or 1 (got %d, %d)",
					out, async);
	return b->ops->swap(b, pages, n, slot0, out, async, ns);
}

int kv_backend_memory(const struct kv_backend *b, struct kv_backend_mem *m)
{
	memset(m, 0, sizeof(*m));
	return b->ops->memory(b, m);
}

int kv_backend_kv_forget(struct kv_backend *b)
{
	return b->ops->kv_forget(b);
}
