/* calib.c -- runs for calibrate and validate; see calib.h. */
#include "calib.h"

#include "output.h"
#include "profile_load.h"
#include "progress.h"
#include "../../sim/replica.h"

#include <assert.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

void kv_req_out_record(struct kv_req_out *o, const struct kv_req *q, enum kv_end e)
{
	o->completed = e == KV_END_COMPLETED;
	o->ttft_s = o->tpot_s = o->e2e_s = NAN;
	o->arrival_s = (double)q->arrival_ns * 1e-9;
	o->prompt_tokens = q->prompt_tokens;
	o->output_tokens = q->output_tokens;
	if (!o->completed)
		return;
	o->ttft_s = (double)(q->first_token_ns - q->arrival_ns) * 1e-9;
	o->e2e_s = (double)(q->finish_ns - q->arrival_ns) * 1e-9;
	if (q->output_tokens > 1)
		o->tpot_s = (double)(q->finish_ns - q->first_token_ns) * 1e-9 /
			    (double)(q->output_tokens - 1);
}

static int on_request(void *ctx, const struct kv_sim *s, const struct kv_req *q, enum kv_end e)
{
	struct kv_run_result *res = ctx;

	if (q->id >= res->cap_req) {
		size_t cap = res->cap_req ? res->cap_req : 256;

		while (cap <= q->id)
			cap *= 2;
		res->req = kv_xrealloc(res->req, cap * sizeof(*res->req));
		memset(res->req + res->cap_req, 0, (cap - res->cap_req) * sizeof(*res->req));
		res->cap_req = cap;
	}
	if (q->id >= res->n_req)
		res->n_req = q->id + 1;
	res->n_ended++;
	if (res->notes) /* the engine's own progress comes every 16k events: rare on a backend */
		kv_progress_note(0, "real run: %zu requests ended, %.1f s simulated", res->n_ended,
				 (double)s->now * 1e-9);
	kv_req_out_record(&res->req[q->id], q, e);
	return 0;
}

int kv_calib_clock(const char *s)
{
	return !strcmp(s, "wall") ? 0 : !strcmp(s, "cpu") ? 1 : -1;
}

int kv_calib_clock_arg(const char *arg, void *dst)
{
	int c = kv_calib_clock(arg);

	if (c < 0)
		return -1;
	*(int *)dst = c;
	return 0;
}

void kv_calib_clock_defaults(const char *kind, int *threads, int *cpu_clock)
{
	if (strcmp(kind, "cpu")) {
		*threads = KV_MAX(*threads, 0);
		*cpu_clock = KV_MAX(*cpu_clock, 0);
		return;
	}
	if (*threads < 0)
		*threads = *cpu_clock == 0 ? 0 : 1;
	if (*cpu_clock < 0)
		*cpu_clock = *threads == 1;
}

/* The 1-minute load average, NaN when /proc/loadavg is absent or unreadable. */
static double load1(void)
{
	FILE *f = fopen("/proc/loadavg", "r");
	double v = NAN;

	if (f) {
		if (fscanf(f, "%lf", &v) != 1)
			v = NAN;
		fclose(f);
	}
	return v;
}

/* This process's CPU seconds (all threads, user + system). */
static double cpu_seconds(void)
{
	struct rusage ru;

	if (getrusage(RUSAGE_SELF, &ru))
		return NAN;
	return (double)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) +
	       (double)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) * 1e-6;
}

static double wall_seconds(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

void kv_calib_load_start(struct kv_calib_load *l, int threads)
{
	long cores = sysconf(_SC_NPROCESSORS_ONLN);

	l->cores = cores > 0 ? (int)cores : 1;
	l->threads = threads > 0 ? KV_MIN(threads, l->cores) : l->cores;
	l->before = load1();
	l->during = NAN;
	l->stopped = 0;
	l->cpu_s = cpu_seconds(); /* the start's readings until the stop */
	l->wall_s = wall_seconds();
}

void kv_calib_load_stop(struct kv_calib_load *l)
{
	l->during = load1();
	l->cpu_s = cpu_seconds() - l->cpu_s;
	l->wall_s = wall_seconds() - l->wall_s;
	l->stopped = 1;
}

double kv_calib_load_share(const struct kv_calib_load *l)
{
	return l->stopped && l->wall_s > 0 ? l->cpu_s / (l->wall_s * l->threads) : NAN;
}

void kv_calib_load_words(const struct kv_calib_load *l, char *buf, size_t n)
{
	size_t k = 0;

	k += (size_t)snprintf(buf, n, "load average ");
	if (!isnan(l->before))
		k += (size_t)snprintf(buf + k, n - KV_MIN(k, n), "%.2f before", l->before);
	if (!isnan(l->during))
		k += (size_t)snprintf(buf + k, n - KV_MIN(k, n), "%s%.2f while measuring",
				      isnan(l->before) ? "" : ", ", l->during);
	if (isnan(l->before) && isnan(l->during))
		snprintf(buf + k, n - KV_MIN(k, n), "unknown");
}

int kv_calib_load_warning(const struct kv_calib_load *l, int cpu_clock, char *buf, size_t n)
{
	double others = l->before, share = kv_calib_load_share(l);
	double free_cores = (double)(l->cores - l->threads);
	char load[128], got[64] = "";

	if (!isnan(l->during) && !(others >= l->during - l->threads))
		others = l->during - l->threads;
	if (!(others > free_cores + 0.5) && !(share < 0.8))
		return 0;
	kv_calib_load_words(l, load, sizeof(load));
	if (!isnan(share))
		snprintf(got, sizeof(got), "; this process got %.0f%% of them", 100 * share);
	snprintf(buf, n,
		 "other work competes for the CPU: %s on %d core%s, %d measured%s: %s, so the "
		 "fit scatters and its rates are not this machine's; measure when the load "
		 "average is under %.1f%s",
		 load, l->cores, l->cores == 1 ? "" : "s", l->threads, got,
		 cpu_clock ? "a step's CPU time leaves out the wait for a core but not the shared "
			     "caches and memory bandwidth"
			   : "a step's wall time includes the wait for a core",
		 KV_MAX(1.0, free_cores + 0.5),
		 cpu_clock ? "" : ", or time steps with --clock cpu --threads 1");
	return 1;
}

int kv_calib_run(struct kv_workload *w, const char *kind, int threads, int cpu_clock,
		 struct kv_real_exec *e, struct kv_run_result *res, int quiet, struct kv_diag *d)
{
	struct kv_sink sink = { .ctx = res, .request = on_request,
				.progress = quiet ? NULL : kv_progress_cb };
	struct kv_sim s;
	int rc;

	memset(res, 0, sizeof(*res));
	res->notes = kind && !quiet;
	w->cfg.exec = NULL;
	rc = kv_sim_init(&s, &w->cfg, &sink);
	if (rc) {
		*d = s.diag;
		kv_sim_release(&s);
		return rc;
	}
	if (kind && (rc = kv_real_exec_open(e, kind, &s, &w->cfg, threads, cpu_clock, d))) {
		kv_sim_release(&s);
		return rc;
	}
	if (!quiet)
		kv_progress_restart();
	rc = kv_sim_run(&s);
	if (!quiet)
		kv_progress_done();
	w->cfg.exec = NULL;
	if (rc) {
		*d = s.diag;
		if (!d->msg[0])
			kv_diag_set(d, rc, w->path, 0, 0, "", "the run failed: %s", kv_strerror(rc));
	} else {
		res->peak_reserved_bytes = s.rep[0].peak_reserved_bytes;
		res->reserved_Bs = s.rep[0].reserved_Bs;
		res->used_Bs = s.rep[0].used_Bs;
		res->iterations = s.rep[0].iterations;
		res->makespan_s = (double)(s.last_finish_ns - s.first_arrival_ns) * 1e-9;
	}
	kv_sim_release(&s);
	return rc;
}

void kv_run_result_free(struct kv_run_result *res)
{
	free(res->req);
	memset(res, 0, sizeof(*res));
}

int kv_calib_device(struct kv_sim_config *cfg, const char *device, struct kv_diag *d)
{
	struct kv_device dev;
	int rc = kv_profile_load_device(device, &dev, d);

	if (!rc)
		cfg->device = dev;
	return rc;
}

/* ---- the calibration grid ---- */

uint64_t kv_calib_default_kv_memory(const char *kind)
{
	return !strcmp(kind, "cuda") ? 40ULL << 30 : 1ULL << 30;
}

uint64_t kv_calib_point_pages(const struct kv_calib_point *p, uint32_t page_tokens)
{
	return (uint64_t)p->nd * kv_div_ceil((uint64_t)p->ctx + 1, page_tokens) +
	       (uint64_t)p->np * kv_div_ceil((uint64_t)p->pre + p->chunk, page_tokens);
}

/* Appends p to g when its sequences fit ctx_max and its pages max_tokens. */
static void grid_add(struct kv_calib_point *g, size_t *n, struct kv_calib_point p,
		     uint32_t ctx_max, uint64_t max_tokens, uint32_t page_tokens)
{
	assert(*n < KV_CALIB_MAX_GRID);
	if ((p.nd && p.ctx + 1 > ctx_max) || (p.np && p.pre + p.chunk > ctx_max))
		return;
	if (kv_calib_point_pages(&p, page_tokens) * page_tokens > max_tokens)
		return;
	g[(*n)++] = p;
}

size_t kv_calib_grid(const char *kind, int quick, uint32_t ctx_max, uint64_t max_tokens,
		     uint32_t page_tokens, struct kv_calib_point *g)
{
	static const uint32_t cpu_b[] = { 1, 2, 4, 8, 16, 32 }, cpu_c[] = { 128, 512, 1024 };
	static const uint32_t cpu_chunk[] = { 32, 128, 256, 512 }, cpu_pre[] = { 0, 512, 1024 };
	static const uint32_t q_b[] = { 1, 4, 16 }, q_c[] = { 128, 1024 };
	static const uint32_t q_chunk[] = { 64, 256 }, q_pre[] = { 0, 1024 };
	static const uint32_t gpu_b[] = { 1, 8, 32, 64, 128, 256 }, gpu_c[] = { 512, 2048, 4096 };
	static const uint32_t gpu_chunk[] = { 256, 512, 1024, 2048 }, gpu_pre[] = { 0, 2048 };
	int gpu = !strcmp(kind, "cuda");
	const uint32_t *b = gpu ? gpu_b : quick ? q_b : cpu_b;
	const uint32_t *c = gpu ? gpu_c : quick ? q_c : cpu_c;
	const uint32_t *ch = gpu ? gpu_chunk : quick ? q_chunk : cpu_chunk;
	const uint32_t *pr = gpu ? gpu_pre : quick ? q_pre : cpu_pre;
	size_t nb = gpu ? 6 : quick ? 3 : 6, nc = gpu ? 3 : quick ? 2 : 3;
	size_t nch = gpu ? 4 : quick ? 2 : 4, npr = gpu ? 2 : quick ? 2 : 3;
	size_t n = 0, i, k;

	for (i = 0; i < nb; i++)
		for (k = 0; k < nc; k++)
			grid_add(g, &n, (struct kv_calib_point){ "decode", b[i], c[k], 0, 0, 0 },
				 ctx_max, max_tokens, page_tokens);
	for (i = 0; i < nch; i++)
		for (k = 0; k < npr; k++)
			grid_add(g, &n, (struct kv_calib_point){ "prefill", 0, 0, 1, ch[i], pr[k] },
				 ctx_max, max_tokens, page_tokens);
	/* mixed: decodes beside a prefill chunk, as chunked prefill forms them */
	for (i = 0; i < (quick ? 1u : 2u); i++) {
		uint32_t nd = gpu ? (i ? 128 : 32) : (i ? 16 : 4), ctx = gpu ? 2048 : 512;

		grid_add(g, &n, (struct kv_calib_point){ "mixed", nd, ctx, 1, gpu ? 512 : 128, 0 },
			 ctx_max, max_tokens, page_tokens);
	}
	return n;
}

void kv_calib_arena(const struct kv_calib_point *g, size_t n, uint32_t page_tokens,
		    struct kv_calib_arena *a)
{
	size_t i;

	memset(a, 0, sizeof(*a));
	for (i = 0; i < n; i++) {
		a->kv_pages = KV_MAX(a->kv_pages, kv_calib_point_pages(&g[i], page_tokens));
		a->max_seqs = KV_MAX(a->max_seqs, g[i].nd + g[i].np);
		a->max_new = KV_MAX(a->max_new, g[i].nd + g[i].np * g[i].chunk);
		if (g[i].nd)
			a->max_ctx = KV_MAX(a->max_ctx, g[i].ctx + 1);
		if (g[i].np)
			a->max_ctx = KV_MAX(a->max_ctx, g[i].pre + g[i].chunk);
	}
}

/* Sequence n of a batch: the next pages from *next, enough for ctx + n_new tokens. */
static void batch_seq(struct kv_backend_seq *s, int32_t *pages, uint32_t *next,
		      uint32_t page_tokens, uint32_t ctx, uint32_t n_new)
{
	uint32_t np = (uint32_t)kv_div_ceil((uint64_t)ctx + n_new, page_tokens), k;

	for (k = 0; k < np; k++)
		pages[*next + k] = (int32_t)(*next + k);
	*s = (struct kv_backend_seq){ .pages = pages + *next, .n_pages = np, .ctx = ctx,
				      .n_new = n_new, .sample = 1 };
	*next += np;
}

uint32_t kv_calib_point_batch(const struct kv_calib_point *p, uint32_t page_tokens,
			      uint64_t token_bytes, int32_t *pages, struct kv_backend_seq *seqs,
			      struct kv_batch_shape *sh)
{
	uint32_t n = 0, next = 0, i;

	memset(sh, 0, sizeof(*sh));
	for (i = 0; i < p->nd; i++, n++) {
		batch_seq(&seqs[n], pages, &next, page_tokens, p->ctx, 1);
		sh->n_decode++;
		sh->n_sample++;
		sh->attn_pairs += p->ctx + 1;
		sh->kv_read_bytes += (p->ctx + 1) * token_bytes;
	}
	for (i = 0; i < p->np; i++, n++) {
		batch_seq(&seqs[n], pages, &next, page_tokens, p->pre, p->chunk);
		sh->n_prefill_tokens += p->chunk;
		sh->n_sample++;
		sh->attn_pairs += kv_perf_prefill_pairs(p->pre, p->chunk);
		sh->kv_read_bytes += (uint64_t)(p->pre + p->chunk) * token_bytes;
	}
	sh->n_seqs = n;
	assert(next == kv_calib_point_pages(p, page_tokens));
	return n;
}

void kv_calib_stem(const char *path, char *stem, size_t len)
{
	size_t n = strlen(path);

	if (n > 5 && !strcmp(path + n - 5, ".yaml"))
		n -= 5;
	snprintf(stem, len, "%.*s", (int)n, path);
}
