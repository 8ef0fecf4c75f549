/*
 * cmd_calibrate.c -- `kvsim calibrate`: measure a backend, fit the perf
 * model, write a device profile.
 *
 * Memory: right after the backend opens, the resident weight and workspace
 * bytes (measured: mincore on the CPU) against the model's weight bytes M
 * give alpha; the KV bytes resident after writing a known number of tokens
 * give the bytes per token, and the pool's reserved/used ratio over a real
 * replay under each cache model adds the allocator's overhead (beta).
 *
 * Time: a grid of decode batches x context lengths, prefill chunks x cached
 * prefixes and mixed batches, each run reps + 1 times (the first is a
 * warm-up) keeping the median, plus every iteration of a short replay of a
 * workload through the real executor (the scheduler's own batches).  The
 * perf model's five coefficients are fitted to all of them (sim/perf_fit.h)
 * and written as a device profile that `kvsim run` and `kvsim validate`
 * accept.
 */
#include "lib/calib.h"
#include "lib/chart.h"
#include "commands.h"
#include "opts.h"
#include "status.h"
#include "lib/output.h"
#include "lib/csv.h"
#include "lib/profile_load.h"
#include "lib/fromrun.h"

#include "../sim/perf_fit.h"

#include <assert.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define MAX_POINTS 512
#define CAL_PAGE_TOKENS 16 /* tokens per KV page of the grid's backend */

struct cal_args {
	const char *kind, *model, *out, *replay;
	int reps, threads, quick, quiet, progress, cpu_clock;
	uint64_t seed, kv_memory;
};

static const char *const cal_synopsis[] = {
	"[options]",
	"--from-run RUN [options] WORKLOAD.yaml",
	NULL,
};

static const char cal_desc[] =
	"Runs real iterations of model M (a name from `kvsim list models` or a path;\n"
	"default tiny) on an execution backend (default cpu), fits the perf model's\n"
	"coefficients by least squares and writes a device profile.  With --from-run,\n"
	"fits a profile to a recorded serving run instead, with options of its own:\n"
	"`kvsim calibrate --from-run --help`.\n";

static const char cal_notes[] =
	"exit status: 0 done, 1 output error, 2 bad input, 3 out of memory,\n"
	"             4 the backend failed or is absent (no GPU for cuda)\n";

static int parse_args(int argc, char **argv, struct cal_args *a)
{
	const struct kv_cli_opt opts[] = {
		{ .name = "backend", .kind = KV_CLI_STR, .dst = &a->kind, .arg = "KIND",
		  .help = "cpu (fp32, CBLAS; default) or cuda (fp16, cuBLAS; needs a GPU)" },
		{ .name = "model", .kind = KV_CLI_STR, .dst = &a->model, .max = 1000, .arg = "M",
		  .help = "the model: a name from `kvsim list models` or a path\n(default tiny)" },
		{ .name = "output", .short_name = 'o', .kind = KV_CLI_PATH, .dst = &a->out,
		  .what = "a profile path", .label = "-o", .arg = "PATH",
		  .help = "device profile to write (default\n"
			  "out/calibrate/KIND-MODEL.yaml); beside it PATH's stem\n"
			  "plus -points.csv (every measurement and its fit),\n"
			  "-model.yaml (the model at the backend's precision),\n"
			  "-summary.csv (every figure below, one per row) and\n"
			  "-fit.png (predicted vs measured, when gnuplot is installed)" },
		{ .name = "reps", .kind = KV_CLI_INT, .dst = &a->reps, .min = 1, .max = 100,
		  .what = "an integer in [1, 100]", .arg = "N",
		  .help = "timed repetitions per grid point, median kept (default 5)" },
		{ .name = "threads", .kind = KV_CLI_INT, .dst = &a->threads, .max = 1024,
		  .what = "an integer in [0, 1024]", .arg = "N",
		  .help = "CPU backend: BLAS threads (default 1, timed by --clock\n"
			  "cpu; with --clock wall the library's)" },
		{ .name = "quick", .kind = KV_CLI_FLAG, .dst = &a->quick, .help = "a smaller grid (CI)" },
		{ .name = "replay", .kind = KV_CLI_STR, .dst = &a->replay, .max = 1000, .arg = "FILE",
		  .help = "workload replayed through the real executor for more\n"
			  "points and the caches' beta (default\n"
			  "workloads/calibrate-replay.yaml of the source tree)" },
		{ .name = "kv-memory", .kind = KV_CLI_BYTES, .dst = &a->kv_memory,
		  .what = "bytes, e.g. 1073741824, 512MiB or 2GiB", .arg = "BYTES",
		  .help = "most KV bytes of a grid point (default 1GiB cpu, 40GiB\n"
			  "cuda); the arena holds the largest point kept" },
		{ .name = "clock", .kind = KV_CLI_FN, .dst = &a->cpu_clock, .fn = kv_calib_clock_arg,
		  .what = "wall or cpu", .arg = "CLOCK",
		  .help = "cpu backend: time steps by the thread's CPU time (cpu,\n"
			  "the default with one thread: leaves out the wait for a\n"
			  "core on a shared machine) or by wall time (wall, the\n"
			  "default with --threads other than 1); validate with the\n"
			  "same clock" },
		{ .name = "seed", .kind = KV_CLI_U64, .dst = &a->seed, .max = UINT64_MAX,
		  .what = "a non-negative integer", .arg = "N",
		  .help = "weights and token ids (default 1)" },
		{ .name = "quiet", .kind = KV_CLI_FLAG, .dst = &a->quiet,
		  .help = "no progress or table" },
		{ .name = "progress", .kind = KV_CLI_FLAG, .dst = &a->progress,
		  .help = KV_CLI_PROGRESS_HELP },
		{ .name = NULL },
	};
	const struct kv_cli_cmd cmd = { .name = "calibrate", .synopsis = cal_synopsis,
					.desc = cal_desc, .notes = cal_notes };
	int rc;

	memset(a, 0, sizeof(*a));
	a->kind = "cpu";
	a->model = "tiny";
	a->reps = 5;
	a->seed = 1;
	a->threads = a->cpu_clock = -1; /* unset: kv_calib_clock_defaults() */
	if ((rc = kv_cli_parse(&cmd, opts, argc, argv, NULL)))
		return rc;
	if (strcmp(a->kind, "cpu") && strcmp(a->kind, "cuda")) {
		fprintf(stderr, "kvsim: calibrate: --backend: bad value '%s': expected cpu or cuda\n",
			a->kind);
		return 2;
	}
	kv_calib_clock_defaults(a->kind, &a->threads, &a->cpu_clock);
	if (!a->kv_memory)
		a->kv_memory = kv_calib_default_kv_memory(a->kind);
	return 0;
}

static int cmp_dbl(const void *x, const void *y)
{
	double a = *(const double *)x, b = *(const double *)y;

	return a < b ? -1 : a > b;
}

struct point_src {
	struct kv_fit_point pt;
	char what[24];
};

struct cal {
	struct cal_args a;
	struct kv_model m;
	struct kv_backend_info info;
	struct point_src *pts;
	size_t n;
	double alpha_weights, alpha, beta_token, beta_profile;
	double beta_cache[2]; /* full, chunked: bytes per resident token with the allocator */
	double copy_Bps; /* page copy bandwidth (swap round trip) */
	struct kv_fit fit;
	struct kv_calib_load load; /* the machine's load while measuring */
	char replay_engine[64], replay_sched[64]; /* the replays' engine and scheduler (the chart) */
};

static int add_point(struct cal *c, const char *what, const struct kv_batch_shape *sh, double t)
{
	if (c->n == MAX_POINTS * 8)
		return 0; /* enough: more replay iterations add nothing */
	c->pts[c->n].pt.shape = *sh;
	c->pts[c->n].pt.t_ns = t;
	snprintf(c->pts[c->n].what, sizeof(c->pts[c->n].what), "%s", what);
	c->n++;
	return 0;
}

/* The grid's progress line, the closing one at i == n. */
static void progress(const char *what, size_t i, size_t n)
{
	kv_progress_note(i == n, "calibrate: %s %zu/%zu", what, i, n);
}

/*
 * Opens the backend for the grid g: an arena of the largest point's pages
 * (kv_calib_arena), nothing more.
 */
static int open_for_grid(struct cal *c, const struct kv_calib_arena *ar, struct kv_backend **be,
			 struct kv_diag *d)
{
	struct kv_backend_opts o = { 0 };

	o.model = &c->m;
	o.kv_pages = ar->kv_pages;
	o.page_tokens = CAL_PAGE_TOKENS;
	o.max_batch_tokens = ar->max_new;
	o.max_batch_seqs = ar->max_seqs;
	o.max_ctx_tokens = ar->max_ctx;
	o.seed = c->a.seed;
	o.threads = c->a.threads;
	o.cpu_clock = c->a.cpu_clock;
	return kv_backend_open(c->a.kind, &o, be, d);
}

/*
 * KV bytes per token: forget the arena, write k sequences of tok tokens
 * (whole pages, consecutive from page 0: at most max_new tokens, so inside
 * the largest point's pages), measure.
 */
static int measure_kv(struct cal *c, struct kv_backend *be, const struct kv_calib_arena *ar,
		      int32_t *pages, struct kv_backend_seq *seqs)
{
	struct kv_backend_mem mem;
	uint32_t k = KV_MIN(ar->max_seqs, 4u), i;
	uint32_t tok = KV_MIN(ar->max_new / k, 256u) / CAL_PAGE_TOKENS * CAL_PAGE_TOKENS;
	uint32_t pps = tok / CAL_PAGE_TOKENS;
	uint64_t t;
	int rc;

	assert(tok > 0 && (uint64_t)k * pps <= ar->kv_pages);
	if ((rc = kv_backend_kv_forget(be)))
		return rc;
	for (i = 0; i < k * pps; i++)
		pages[i] = (int32_t)i;
	for (i = 0; i < k; i++)
		seqs[i] = (struct kv_backend_seq){ .pages = pages + i * pps, .n_pages = pps,
						   .n_new = tok, .sample = 1 };
	if ((rc = kv_backend_step(be, seqs, k, &t)) || (rc = kv_backend_memory(be, &mem)))
		return rc;
	c->beta_token = (double)mem.kv / ((double)k * tok);
	c->beta_profile = (double)kv_model_kv_bytes_per_token(&c->m);
	return 0;
}

/*
 * Every page of the arena gets written (an untouched page reads as zeros,
 * from cache), twice: the first pass also faults the pages in, the second
 * is the copy whose time gives the page copy bandwidth.
 */
static int touch_arena(struct cal *c, struct kv_backend *be, uint64_t kv_pages)
{
	int32_t *from = kv_xmalloc(kv_pages * sizeof(*from)), *to = kv_xmalloc(kv_pages * sizeof(*to));
	uint64_t i, t = 0;
	int rc;

	for (i = 0; i + 1 < kv_pages; i++) {
		from[i] = 0;
		to[i] = (int32_t)(i + 1);
	}
	if (!(rc = kv_backend_move_pages(be, from, to, (uint32_t)i, &t)))
		rc = kv_backend_move_pages(be, from, to, (uint32_t)i, &t);
	/* a page copy reads and writes page_bytes: the host-link figure of a CPU */
	if (!rc)
		c->copy_Bps = t ? 2.0 * (double)c->info.page_bytes * (double)i / ((double)t * 1e-9) : 0;
	free(from);
	free(to);
	return rc;
}

/* Grid timings and memory on one backend instance. */
static int measure_grid(struct cal *c, struct kv_diag *d)
{
	struct kv_calib_point g[KV_CALIB_MAX_GRID];
	struct kv_calib_arena ar;
	struct kv_backend *be = NULL;
	struct kv_backend_mem mem;
	struct kv_backend_seq *seqs = NULL;
	int32_t *pages = NULL;
	uint64_t tb = kv_model_kv_bytes_per_token(&c->m), max_tokens, M;
	double times[101];
	size_t n, i;
	int r, rc;

	max_tokens = c->a.kv_memory / tb;
	n = kv_calib_grid(c->a.kind, c->a.quick, c->m.max_ctx_tokens, max_tokens, CAL_PAGE_TOKENS, g);
	if (n < 2 * KV_FIT_N)
		return kv_diag_set(d, KV_EINVAL, "", 0, 0, "kv-memory",
				   "%llu bytes hold %llu tokens of %s: too few for a calibration grid",
				   (unsigned long long)c->a.kv_memory, (unsigned long long)max_tokens,
				   c->m.name);
	kv_calib_arena(g, n, CAL_PAGE_TOKENS, &ar);
	if ((rc = open_for_grid(c, &ar, &be, d)))
		return kv_backend_rc(rc);
	kv_backend_get_info(be, &c->info);
	/* memory: weights and workspace as resident right after open */
	M = kv_model_weight_bytes(&c->m);
	if ((rc = kv_backend_memory(be, &mem)))
		goto out;
	c->alpha_weights = (double)mem.weights / (double)M;
	c->alpha = (double)(mem.weights + mem.workspace) / (double)M;
	seqs = kv_xmalloc((size_t)ar.max_seqs * sizeof(*seqs));
	pages = kv_xmalloc(ar.kv_pages * sizeof(*pages));
	if ((rc = measure_kv(c, be, &ar, pages, seqs)) || (rc = touch_arena(c, be, ar.kv_pages)))
		goto out;
	for (i = 0; i < n; i++) {
		struct kv_batch_shape sh;
		uint32_t ns = kv_calib_point_batch(&g[i], CAL_PAGE_TOKENS, tb, pages, seqs, &sh);

		progress("grid point", i, n);
		for (r = 0; r <= c->a.reps; r++) {
			uint64_t t;

			if ((rc = kv_backend_step(be, seqs, ns, &t)))
				goto out;
			times[r] = (double)t;
		}
		/* times[0] is the warm-up */
		qsort(times + 1, (size_t)c->a.reps, sizeof(double), cmp_dbl);
		add_point(c, g[i].what, &sh, times[1 + c->a.reps / 2]);
	}
	progress("grid point", n, n);
out:
	free(seqs);
	free(pages);
	kv_backend_close(be);
	return kv_backend_rc(rc);
}

/* The replay under one cache model: its iterations become points; beta with the allocator. */
static int replay(struct cal *c, const char *cache, double *beta, struct kv_diag *d)
{
	char set_model[1100], set_cache[64], *sets[2] = { set_model, set_cache };
	char path[1100], what[24];
	struct kv_workload w;
	struct kv_real_exec e;
	struct kv_run_result res;
	size_t i;
	int rc;

	if (c->a.replay)
		snprintf(path, sizeof(path), "%s", c->a.replay);
	else
		snprintf(path, sizeof(path), "%s/workloads/calibrate-replay.yaml", KV_SOURCE_DIR);
	snprintf(set_model, sizeof(set_model), "model=%s", c->a.model);
	snprintf(set_cache, sizeof(set_cache), "cache.name=%s", cache);
	rc = kv_workload_load(&w, path, sets, 2, 1, c->a.seed, d);
	if (rc) {
		kv_workload_release(&w);
		return rc;
	}
	/* --quick: at most the first 8 requests of the replay (CI) */
	if (c->a.quick && (!w.cfg.source.requests || w.cfg.source.requests > 8))
		w.cfg.source.requests = 8;
	w.cfg.model.dtype_bytes = c->m.dtype_bytes;
	/* the device: this machine's memory; the perf coefficients do not matter here */
	snprintf(w.cfg.device.name, sizeof(w.cfg.device.name), "%s", c->a.kind);
	w.cfg.device.mem_bytes = c->info.mem_bytes;
	w.cfg.device.alpha = KV_MAX(1.0, c->alpha);
	snprintf(c->replay_engine, sizeof(c->replay_engine), "%s",
		 w.cfg.engine ? w.cfg.engine->name : "vllm-v0");
	snprintf(c->replay_sched, sizeof(c->replay_sched), "%s", w.cfg.sched->name);
	rc = kv_calib_run(&w, c->a.kind, c->a.threads, c->a.cpu_clock, &e, &res, c->a.quiet, d);
	if (rc == KV_EINVAL && !strcmp(d->field, "memory.min_block")) {
		/* a page that is no power of two cannot be a pool unit: grid only */
		if (!c->a.quiet)
			fprintf(stderr, "kvsim: calibrate: no %s replay: %s\n", cache, d->msg);
		*beta = NAN;
		rc = 0;
	} else if (!rc) {
		snprintf(what, sizeof(what), "replay-%s", cache);
		for (i = 0; i < e.n_log; i++)
			add_point(c, what, &e.log[i].shape, (double)e.log[i].real_ns);
		*beta = res.used_Bs > 0 ? c->beta_token * res.reserved_Bs / res.used_Bs : NAN;
	}
	kv_real_exec_close(&e);
	kv_run_result_free(&res);
	kv_workload_release(&w);
	return rc;
}

/* "R^2 0.9874" or "R^2 n/a (the times do not vary)" into buf. */
static const char *r2_words(double r2, char *buf, size_t n)
{
	if (isnan(r2))
		snprintf(buf, n, "R^2 n/a (the times do not vary)");
	else
		snprintf(buf, n, "R^2 %.4f", r2);
	return buf;
}

/* The load rows of -summary.csv: empty values where unknown. */
static void put_load_csv(FILE *f, const struct kv_calib_load *l)
{
	fprintf(f, "load_before,");
	if (!isnan(l->before))
		fprintf(f, "%.2f", l->before);
	fprintf(f, ",,\nload_during,");
	if (!isnan(l->during))
		fprintf(f, "%.2f", l->during);
	fprintf(f, ",,\ncpu_share,");
	if (!isnan(kv_calib_load_share(l)))
		fprintf(f, "%.3f", kv_calib_load_share(l));
	fprintf(f, ",,\ncores,%d,,\nthreads_measured,%d,,\n", l->cores, l->threads);
}

/* The profile's comment on the load it was measured under, and the warning if any. */
static void put_load_comment(FILE *f, const struct kv_calib_load *l)
{
	char w[512];

	kv_calib_load_words(l, w, sizeof(w));
	fprintf(f, "# Measured under a %s, on %d cores; this process got %.0f%% of the %d it\n"
		   "#   measured with.\n",
		w, l->cores, 100 * kv_calib_load_share(l), l->threads);
	if (kv_calib_load_warning(l, 0, w, sizeof(w)))
		fprintf(f, "# WARNING: other work competed for the CPU while measuring: the fit "
			   "scatters and its rates are not this machine's.\n");
}

/* A comment line per coefficient the fit could not determine, saying what it means. */
static void put_flag_comments(FILE *f, const struct kv_fit *fit)
{
	static const char *const key[KV_FIT_N] = { "overhead", "per_seq", "ns/byte (mem_bandwidth)",
						   "ns/FLOP linear", "ns/FLOP attention" };
	char w[64];
	size_t k;

	for (k = 0; k < KV_FIT_N; k++)
		if (fit->flag[k])
			fprintf(f, "# NOT DETERMINED: %s [%s]: %s.\n", key[k],
				kv_fit_flag_words(fit->flag[k], w, sizeof(w)),
				kv_fit_flag_meaning(fit->flag[k]));
}

/* Removes the temporaries of the n kv_atomic files at f (a failed write_outputs). */
static void abort_files(struct kv_atomic *f, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++) {
		if (f[i].f)
			fclose(f[i].f);
		unlink(f[i].tmp);
	}
}

static int write_outputs(struct cal *c, const char *path, struct kv_diag *d)
{
	struct kv_device dev = { 0 };
	struct kv_atomic fs[4], *f = fs;
	char stem[KV_PATH_MAX], p2[KV_PATH_MAX + 32], date[32], r2[64];
	time_t now = time(NULL);
	size_t i, n_open = 0;
	int rc;

	strftime(date, sizeof(date), "%Y-%m-%d", gmtime(&now));
	kv_calib_stem(path, stem, sizeof(stem));
	kv_device_set_defaults(&dev);
	kv_fit_to_device(&c->fit, &dev);
	/* points */
	snprintf(p2, sizeof(p2), "%s-points.csv", stem);
	if ((rc = kv_atomic_open(f, p2, d)))
		return abort_files(fs, n_open), rc;
	fprintf(f->f, "what,n_seqs,n_decode,n_prefill_tokens,n_sample,attn_pairs,kv_read_bytes,"
		     "measured_ms,fitted_ms,rel_error\n");
	for (i = 0; i < c->n; i++) {
		const struct kv_batch_shape *s = &c->pts[i].pt.shape;
		struct kv_fit_terms x;
		double fit;

		kv_fit_terms(&c->m, s, &x);
		fit = kv_fit_eval(c->fit.c, &x);
		kv_csv_put(f->f, c->pts[i].what); /* errors: the stream's flag, checked at commit */
		fprintf(f->f, ",%u,%u,%llu,%u,%llu,%llu,%.6f,%.6f,%.6f\n", s->n_seqs,
			s->n_decode, (unsigned long long)s->n_prefill_tokens, s->n_sample,
			(unsigned long long)s->attn_pairs, (unsigned long long)s->kv_read_bytes,
			c->pts[i].pt.t_ns * 1e-6, fit * 1e-6, fit / c->pts[i].pt.t_ns - 1);
	}
	f = &fs[++n_open];
	/* the figures, one per row, for scripts and tests */
	snprintf(p2, sizeof(p2), "%s-summary.csv", stem);
	if ((rc = kv_atomic_open(f, p2, d)))
		return abort_files(fs, n_open), rc;
	{
		static const char *const cname[KV_FIT_N] = { "overhead_ns", "per_seq_ns",
							     "ns_per_byte", "ns_per_flop_linear",
							     "ns_per_flop_attention" };
		size_t k;

		char w[64];

		/* flag: why a coefficient is not determined (kv_fit_flag_words); empty when it is */
		fprintf(f->f, "key,value,ci95,flag\n");
		fprintf(f->f, "points,%zu,,\nr2,", c->fit.n);
		if (!isnan(c->fit.r2)) /* NaN: the times do not vary, nothing to explain */
			fprintf(f->f, "%.6f", c->fit.r2);
		fprintf(f->f, ",,%s\nrms_rel,%.6f,,\nmape,%.6f,,\nmax_rel,%.6f,,\n",
			isnan(c->fit.r2) ? "times_constant" : "", c->fit.rms_rel, c->fit.mape,
			c->fit.max_rel);
		for (k = 0; k < KV_FIT_N; k++)
			fprintf(f->f, "%s,%.6g,%.6g,%s\n", cname[k], c->fit.c[k], c->fit.ci[k],
				kv_fit_flag_words(c->fit.flag[k], w, sizeof(w)));
		put_load_csv(f->f, &c->load);
		fprintf(f->f, "weight_bytes_model,%llu,,\nalpha_weights,%.6f,,\nalpha,%.6f,,\n"
			     "kv_bytes_per_token_measured,%.3f,,\nkv_bytes_per_token_model,%.3f,,\n"
			     "beta_full,%.3f,,\nbeta_chunked,%.3f,,\ncopy_GBps,%.4f,,\n",
			(unsigned long long)kv_model_weight_bytes(&c->m), c->alpha_weights, c->alpha,
			c->beta_token, c->beta_profile, c->beta_cache[0], c->beta_cache[1],
			c->copy_Bps / 1e9);
	}
	f = &fs[++n_open];
	/* the model at the backend's precision */
	snprintf(p2, sizeof(p2), "%s-model.yaml", stem);
	if ((rc = kv_atomic_open(f, p2, d)))
		return abort_files(fs, n_open), rc;
	fprintf(f->f,
		"# %s at the %s backend's precision (%u-byte weights and KV), written by\n"
		"# kvsim calibrate on %s: use it with the device profile beside it.\n"
		"name: %s\nlayers: %u\nhidden: %u\nheads: %u\nkv_heads: %u\nhead_dim: %u\n"
		"intermediate: %u\nvocab: %u\nmax_context: %u\nparams: %llu\ndtype_bytes: %u\n"
		"gated_mlp: %s\ntie_embeddings: %s\nsource: kvsim calibrate (%s backend, %s)\n",
		c->m.name, c->a.kind, c->m.dtype_bytes, date, c->m.name, c->m.layers, c->m.hidden,
		c->m.heads, c->m.kv_heads, c->m.head_dim, c->m.intermediate, c->m.vocab,
		c->m.max_ctx_tokens, (unsigned long long)c->m.params, c->m.dtype_bytes,
		c->m.gated_mlp ? "true" : "false", c->m.tie_embeddings ? "true" : "false",
		c->a.kind, date);
	f = &fs[++n_open];
	/* the device */
	if ((rc = kv_atomic_open(f, path, d)))
		return abort_files(fs, n_open), rc;
	fprintf(f->f,
		"# Calibrated by `kvsim calibrate --backend %s --model %s` on %s.\n"
		"# Device: %s (%d cores/SMs).  The memory and compute figures are the fitted\n"
		"# achieved rates (efficiencies 1), not datasheet peaks.  Fit over %zu points:\n"
		"# %s, RMS relative residual %.2f%%, MAPE %.2f%%, max %.1f%%.\n"
		"# 95%% intervals: overhead %.4g +- %.2g ns, per_seq %.4g +- %.2g ns,\n"
		"#   ns/byte %.4g +- %.2g, ns/FLOP linear %.4g +- %.2g, attention %.4g +- %.2g.\n"
		"# Memory: resident weights / M = %.4f; alpha (weights + workspace) = %.4f;\n"
		"#   KV bytes per token measured %.1f, model arithmetic %.1f.\n"
		"# Use it with the model profile %s-model.yaml (the backend's precision).\n"
		"# Clock: %s, %d BLAS thread%s: validate with the same --clock and --threads.\n",
		c->a.kind, c->a.model, date, c->info.device, c->info.cores, c->fit.n,
		r2_words(c->fit.r2, r2, sizeof(r2)),
		100 * c->fit.rms_rel, 100 * c->fit.mape, 100 * c->fit.max_rel, c->fit.c[KV_FIT_O],
		c->fit.ci[KV_FIT_O], c->fit.c[KV_FIT_S], c->fit.ci[KV_FIT_S], c->fit.c[KV_FIT_IB],
		c->fit.ci[KV_FIT_IB], c->fit.c[KV_FIT_IL], c->fit.ci[KV_FIT_IL], c->fit.c[KV_FIT_IA],
		c->fit.ci[KV_FIT_IA], c->alpha_weights, c->alpha, c->beta_token, c->beta_profile,
		stem, c->a.cpu_clock ? "cpu (the thread's CPU time)" : "wall", c->a.threads,
		c->a.threads == 1 ? "" : "s (0: the library's)");
	put_flag_comments(f->f, &c->fit);
	put_load_comment(f->f, &c->load);
	fprintf(f->f,
		"name: %s-%s\nmemory: %llu\nmem_bandwidth: %.6gGB/s\nfp16_tflops: %.6g\n"
		"host_link_bandwidth: %.6gGB/s\ninterconnect_bandwidth: 0\n"
		"perf:\n  eff_bw: 1\n  eff_flops: %.6g\n  eff_attn: %.6g\n  overhead: %lluns\n"
		"  per_seq: %lluns\n  allreduce_latency: 5us\n  dequant_flops_per_byte: 2\n"
		"cost:\n  alpha: %.4f\nsource: kvsim calibrate, %s backend on %s, %s\n",
		c->a.kind, c->m.name, (unsigned long long)c->info.mem_bytes, dev.mem_bw_Bps / 1e9,
		dev.flops / 1e12, c->copy_Bps > 0 ? c->copy_Bps / 1e9 : 10.0, dev.eff_flops,
		dev.eff_attn, (unsigned long long)dev.overhead_ns,
		(unsigned long long)dev.per_seq_ns, KV_MAX(1.0, c->alpha), c->a.kind,
		c->info.device, date);
	/* every file written: now the renames, the profile last */
	for (i = 0; i <= n_open; i++)
		if ((rc = kv_atomic_commit(&fs[i], d)))
			return abort_files(fs + i + 1, n_open - i), rc;
	return 0;
}

/*
 * Renders STEM-fit.png (predicted vs measured, by source, log-log with
 * y = x).  A chart not rendered this time (gnuplot absent or failed) also
 * removes an earlier STEM-fit.png, which belongs to another calibration.
 * Returns 1 when gnuplot failed, else 0.
 */
static int chart(const struct cal *c, const char *path)
{
	char stem[KV_PATH_MAX], *dir, *base, *csv, *name, *slash, *title, *setup;
	int rc;

	kv_calib_stem(path, stem, sizeof(stem));
	slash = strrchr(stem, '/');
	dir = slash ? kv_xasprintf("%.*s", (int)(slash - stem) + (slash == stem), stem)
		    : kv_xstrdup(".");
	base = kv_xstrdup(slash ? slash + 1 : stem);
	csv = kv_xasprintf("%s-points.csv", base);
	name = kv_xasprintf("%s-fit.png", base);
	title = kv_xasprintf("kvsim calibrate %s: the fitted perf model against every measured iteration",
			     base);
	setup = kv_xasprintf("%s on %s (%s backend, %d cores); replayed batches: engine %s, scheduler %s",
			     c->m.name, c->info.device, c->a.kind, c->info.cores,
			     c->replay_engine[0] ? c->replay_engine : "none",
			     c->replay_sched[0] ? c->replay_sched : "none");
	rc = kv_chart_fit(dir, csv, name, title, setup, "grid");
	if (rc) {
		char *old = kv_xasprintf("%s/%s", dir, name);

		unlink(old);
		free(old);
	}
	free(csv);
	free(title);
	free(setup);
	free(name);
	free(base);
	free(dir);
	return rc < 0;
}

/* A rate 1/c per unit (GB/s, GFLOP/s) or why there is none: "n/a (at_bound)". */
static void print_rate(const char *what, const struct kv_fit *fit, int k, const char *sep)
{
	char w[64];

	if (fit->flag[k] || !(fit->c[k] > 0))
		printf("%s n/a (%s)%s", what,
		       fit->flag[k] ? kv_fit_flag_words(fit->flag[k], w, sizeof(w)) : "zero", sep);
	else
		printf("%s %.2f %s%s", what, 1.0 / fit->c[k], k == KV_FIT_IB ? "GB/s" : "GFLOP/s",
		       sep);
}

static void print_table(const struct cal *c, const char *path)
{
	static const char *const name[KV_FIT_N] = { "overhead", "per_seq", "ns per byte",
						     "ns per FLOP, linear", "ns per FLOP, attention" };
	static const char *const unit[KV_FIT_N] = { "ns", "ns", "ns/B", "ns/FLOP", "ns/FLOP" };
	char w[256], r2[64];
	size_t k, n_flag = 0;

	printf("calibration of %s on %s (%s backend, %d cores/SMs)\n", c->m.name, c->info.device,
	       c->info.kind, c->info.cores);
	printf("memory:\n");
	printf("  weights resident / model M   %8.4f   (%.1f MB of %.1f MB)\n", c->alpha_weights,
	       c->alpha_weights * (double)kv_model_weight_bytes(&c->m) / 1e6,
	       (double)kv_model_weight_bytes(&c->m) / 1e6);
	printf("  alpha (weights + workspace)  %8.4f\n", c->alpha);
	printf("  KV bytes/token measured      %8.1f   model %.1f (%+.2f%%)\n", c->beta_token,
	       c->beta_profile, 100 * (c->beta_token / c->beta_profile - 1));
	printf("  beta with allocator: full    %8.1f   chunked %.1f bytes per resident token\n",
	       c->beta_cache[0], c->beta_cache[1]);
	printf("time: %zu points, %s, RMS rel. residual %.2f%%, MAPE %.2f%%, max %.1f%%\n",
	       c->fit.n, r2_words(c->fit.r2, r2, sizeof(r2)), 100 * c->fit.rms_rel,
	       100 * c->fit.mape, 100 * c->fit.max_rel);
	for (k = 0; k < KV_FIT_N; k++) {
		printf("  %-24s %12.5g +- %-10.3g %-8s %s\n", name[k], c->fit.c[k], c->fit.ci[k],
		       unit[k], kv_fit_flag_words(c->fit.flag[k], w, sizeof(w)));
		n_flag += c->fit.flag[k] != 0;
	}
	printf("  => ");
	print_rate("bandwidth", &c->fit, KV_FIT_IB, ", ");
	print_rate("linear", &c->fit, KV_FIT_IL, ", ");
	print_rate("attention", &c->fit, KV_FIT_IA, "\n");
	for (k = 0; k < KV_FIT_N; k++)
		if (c->fit.flag[k])
			printf("  %s: %s\n", name[k], kv_fit_flag_meaning(c->fit.flag[k]));
	if (n_flag)
		printf("  the profile still carries every value (kvsim run needs them), but a flagged\n"
		       "  one says nothing about this machine: only the sum of the terms is fitted\n");
	kv_calib_load_words(&c->load, w, sizeof(w));
	printf("%s, %d cores; this process got %.0f%% of the %d it measured with\n", w,
	       c->load.cores, 100 * kv_calib_load_share(&c->load), c->load.threads);
	printf("profile: %s\n", path);
}

/*
 * The one warning line when other work competes for the CPU (cpu backend):
 * called at the start (the load before) and, unless it warned then, at the
 * end (the load while measuring).  Returns 1 when it warned.
 */
static int warn_load(const struct cal *c)
{
	char w[512];

	if (strcmp(c->a.kind, "cpu") || !kv_calib_load_warning(&c->load, c->a.cpu_clock, w, sizeof(w)))
		return 0;
	fprintf(stderr, "kvsim: calibrate: warning: %s\n", w);
	return 1;
}

int kv_cmd_calibrate(int argc, char **argv)
{
	struct cal c;
	struct kv_fit_point *fp;
	struct kv_diag d = { 0 };
	char path[KV_PATH_MAX];
	size_t i;
	int rc, lock, chart_failed, warned;

	if (kv_fromrun_wanted(argc, argv)) /* a recorded run: src/cmd_fromrun.c */
		return kv_cmd_calibrate_from_run(argc, argv);
	rc = parse_args(argc, argv, &c.a);
	if (rc)
		return rc < 0 ? 0 : rc;
	memset((char *)&c + sizeof(c.a), 0, sizeof(c) - sizeof(c.a));
	kv_progress_init(c.a.quiet, c.a.progress);
	if (kv_profile_load_model(c.a.model, &c.m, &d)) {
		kv_diag_print(&d, stderr);
		return 2;
	}
	c.m.dtype_bytes = kv_exec_kind_dtype(c.a.kind);
	if (c.a.out && strlen(c.a.out) + 32 >= sizeof(path)) {
		fprintf(stderr, "kvsim: calibrate: -o: path of %zu bytes is too long: expected at most %zu bytes\n",
			strlen(c.a.out), sizeof(path) - 33);
		return 2;
	}
	if (c.a.out)
		snprintf(path, sizeof(path), "%s", c.a.out);
	else
		snprintf(path, sizeof(path), "out/calibrate/%s-%s.yaml", c.a.kind, c.m.name);
	{
		char dir[KV_PATH_MAX], *slash;

		snprintf(dir, sizeof(dir), "%s", path);
		slash = strrchr(dir, '/');
		if (slash && slash != dir) {
			*slash = 0;
			if (kv_mkdirs(dir)) {
				fprintf(stderr, "kvsim: calibrate: cannot create %s: %s\n", dir,
					strerror(errno));
				return 1;
			}
		}
	}
	/* a special file is refused before its lock file is made beside it (in /dev, say) */
	if (kv_atomic_check(path, &d)) {
		kv_diag_print(&d, stderr);
		return 2;
	}
	/* one calibration into a profile at a time: held until exit */
	if ((lock = kv_path_lock(path, &d)) < 0) {
		kv_diag_print(&d, stderr);
		return 1;
	}
	c.pts = kv_xmalloc(MAX_POINTS * 8 * sizeof(*c.pts));
	kv_calib_load_start(&c.load, !strcmp(c.a.kind, "cpu") ? c.a.threads : 1);
	warned = warn_load(&c);
	rc = measure_grid(&c, &d);
	if (!rc)
		rc = replay(&c, "full", &c.beta_cache[0], &d);
	if (!rc)
		rc = replay(&c, "chunked", &c.beta_cache[1], &d);
	kv_calib_load_stop(&c.load);
	if (!rc && !warned)
		warn_load(&c);
	if (!rc) {
		fp = kv_xmalloc(c.n * sizeof(*fp));
		for (i = 0; i < c.n; i++)
			fp[i] = c.pts[i].pt;
		rc = kv_fit_perf(&c.m, fp, c.n, &c.fit, &d);
		free(fp);
	}
	if (!rc)
		rc = write_outputs(&c, path, &d);
	free(c.pts);
	if (rc) {
		kv_diag_print(&d, stderr);
		return kv_exit_status(rc);
	}
	chart_failed = chart(&c, path);
	if (!c.a.quiet)
		print_table(&c, path);
	close(lock);
	return fflush(stdout) || ferror(stdout) || chart_failed ? 1 : 0;
}
