/*
 * cmd_validate.c -- `kvsim validate`: run a workload through a real backend
 * and through the simulator, and report the simulator's error.
 *
 * Both runs use the same workload, scheduler, cache model and pool; the
 * real one's batches run on the backend and its measured times advance the
 * clock, the simulated one's come from the perf model (with the calibrated
 * device profile).  Per-iteration error pairs each real batch with the
 * model's prediction for that very batch; TTFT, TPOT and E2E percentiles
 * compare the two runs as a user would; peak memory compares the measured
 * resident bytes with alpha*M plus the simulated pool's peak.
 */
#include "lib/calib.h"
#include "lib/chart.h"
#include "commands.h"
#include "opts.h"
#include "status.h"
#include "lib/output.h"
#include "lib/csv.h"
#include "lib/fromrun.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define MAX_SETS 64

struct val_args {
	const char *kind, *path, *profile, *out;
	char *sets[MAX_SETS];
	size_t n_sets;
	int threads, quiet, progress, cpu_clock, force;
	struct kv_cli_sets set; /* --set, into sets[] */
};

static const char *const val_synopsis[] = {
	"[options] WORKLOAD.yaml",
	"--from-run RUN [options] WORKLOAD.yaml",
	NULL,
};

static const char val_desc[] =
	"Runs WORKLOAD through a real execution backend and through the simulator and\n"
	"prints the simulator's error: per-iteration latency (MAPE, p50/p99 of the\n"
	"relative error), TTFT/TPOT/E2E p50/p99 predicted vs measured, peak memory.\n"
	"The workload runs on one replica (tp 1) with cache full or chunked; its model\n"
	"is run at the backend's precision (fp32 on cpu, fp16 on cuda).  With\n"
	"--from-run, scores a profile on a recorded serving run instead, with options\n"
	"of its own: `kvsim validate --from-run --help`.\n";

static const char val_notes[] =
	"exit status: 0 done, 1 output error, 2 bad input, 3 out of memory,\n"
	"             4 the backend failed or is absent (no GPU for cuda)\n";

static int parse_args(int argc, char **argv, struct val_args *a)
{
	const struct kv_cli_opt opts[] = {
		{ .name = "backend", .kind = KV_CLI_STR, .dst = &a->kind, .arg = "KIND",
		  .help = "cpu (default) or cuda" },
		{ .name = "profile", .kind = KV_CLI_STR, .dst = &a->profile, .arg = "FILE",
		  .help = "the device profile `kvsim calibrate` wrote (default: the\n"
			  "workload's device, whose figures are not this backend's)" },
		{ .name = "output", .short_name = 'o', .kind = KV_CLI_PATH, .dst = &a->out,
		  .what = "a directory path", .label = "-o", .arg = "DIR",
		  .help = "where validate.csv, iterations.csv and iterations.png go\n"
			  "(default out/validate/NAME); replaced whole by this run's\n"
			  "files (manifest.txt lists them)" },
		{ .name = "threads", .kind = KV_CLI_INT, .dst = &a->threads, .max = 1024,
		  .what = "an integer in [0, 1024]", .arg = "N",
		  .help = "CPU backend: BLAS threads (default 1, timed by --clock\n"
			  "cpu; with --clock wall the library's)" },
		{ .name = "set", .kind = KV_CLI_SET, .dst = &a->set, .max = MAX_SETS, .arg = "K=V",
		  .help = "override a workload key, as in `kvsim run`; repeatable" },
		{ .name = "clock", .kind = KV_CLI_FN, .dst = &a->cpu_clock, .fn = kv_calib_clock_arg,
		  .what = "wall or cpu", .arg = "CLOCK",
		  .help = "cpu backend: cpu (the thread's CPU time; the default with\n"
			  "one thread) or wall (the default with --threads other\n"
			  "than 1): use the clock the profile was fitted with" },
		{ .name = "quiet", .kind = KV_CLI_FLAG, .dst = &a->quiet, .help = "no progress or table" },
		{ .name = "progress", .kind = KV_CLI_FLAG, .dst = &a->progress,
		  .help = KV_CLI_PROGRESS_HELP },
		{ .name = "force", .kind = KV_CLI_FLAG, .dst = &a->force,
		  .help = "replace DIR even when it holds files no kvsim run wrote" },
		{ .name = NULL },
	};
	const struct kv_cli_cmd cmd = { .name = "validate", .synopsis = val_synopsis,
					.desc = val_desc, .notes = val_notes,
					.positional = "workload file" };
	int rc;

	memset(a, 0, sizeof(*a));
	a->kind = "cpu";
	a->set.v = a->sets;
	a->threads = a->cpu_clock = -1; /* unset: kv_calib_clock_defaults() */
	if ((rc = kv_cli_parse(&cmd, opts, argc, argv, &a->path)))
		return rc;
	a->n_sets = a->set.n;
	if (strcmp(a->kind, "cpu") && strcmp(a->kind, "cuda")) {
		fprintf(stderr, "kvsim: validate: --backend: bad value '%s': expected cpu or cuda\n",
			a->kind);
		return 2;
	}
	kv_calib_clock_defaults(a->kind, &a->threads, &a->cpu_clock);
	return 0;
}

static int cmp_dbl(const void *x, const void *y)
{
	double a = *(const double *)x, b = *(const double *)y;

	return a < b ? -1 : a > b;
}

/* q-quantile (nearest rank) of v[0..n), sorting v; NaN when empty. */
static double quantile(double *v, size_t n, double q)
{
	size_t k;

	if (!n)
		return NAN;
	qsort(v, n, sizeof(*v), cmp_dbl);
	k = (size_t)ceil(q * (double)n);
	return v[k ? k - 1 : 0];
}

/* Collects one metric (0 ttft, 1 tpot, 2 e2e) of completed requests into v; returns the count. */
static size_t metric(const struct kv_run_result *r, int which, double *v)
{
	size_t i, n = 0;

	for (i = 0; i < r->n_req; i++) {
		const struct kv_req_out *o = &r->req[i];
		double x = which == 0 ? o->ttft_s : which == 1 ? o->tpot_s : o->e2e_s;

		if (o->completed && !isnan(x))
			v[n++] = x;
	}
	return n;
}

struct row {
	const char *name, *unit;
	double pred, meas;
	char na[80]; /* why the row cannot be judged ("" when it can): printed n/a, CSV cells empty */
};

/* Fewer values than this make a nearest-rank p99 the largest one. */
#define P99_MIN 100

/*
 * The reason a quantile q of np predicted and nm measured values cannot be
 * judged, into r->na: no values, or a p99 of fewer than P99_MIN (the
 * maximum); a measured 0 leaves the error alone n/a (see row_error).
 */
static void judge_quantile(struct row *r, size_t np, size_t nm, double q, const char *what)
{
	size_t k = KV_MIN(np, nm);

	if (!k)
		snprintf(r->na, sizeof(r->na), "no %s %s", np ? "measured" : "predicted", what);
	else if (q > 0.9 && k < P99_MIN)
		snprintf(r->na, sizeof(r->na), "%zu %s: a p99 needs %d, of fewer it is the maximum",
			 k, what, P99_MIN);
}

/* A row's relative error in percent; NaN when it cannot be judged or nothing was measured. */
static double row_error(const struct row *r)
{
	if (r->na[0] || !(r->meas > 0) || !isfinite(r->pred))
		return NAN;
	return 100 * (r->pred / r->meas - 1);
}

/* A CSV number cell: empty for NaN. */
static void put_num(FILE *f, double x, const char *fmt)
{
	fputc(',', f);
	if (!isnan(x))
		fprintf(f, fmt, x);
}

/*
 * The real run's completed requests as a recorded run (requests-measured.csv:
 * arrival_s, prompt_tokens, output_tokens, ttft_s, e2e_s), which `calibrate
 * --from-run` and `validate --from-run` read; with iterations.csv (its
 * steps) a backend run is a recorded run with steps.  0 or a code with d.
 */
static int write_measured(const char *dir, const struct kv_run_result *real, struct kv_diag *d)
{
	char path[KV_PATH_MAX + 64];
	struct kv_atomic f;
	size_t i;
	int rc;

	snprintf(path, sizeof(path), "%s/requests-measured.csv", dir);
	if ((rc = kv_atomic_open(&f, path, d)))
		return rc;
	fprintf(f.f, "arrival_s,prompt_tokens,output_tokens,ttft_s,e2e_s\n");
	for (i = 0; i < real->n_req; i++) {
		const struct kv_req_out *o = &real->req[i];

		if (o->completed)
			fprintf(f.f, "%.9f,%llu,%llu,%.9f,%.9f\n", o->arrival_s,
				(unsigned long long)o->prompt_tokens,
				(unsigned long long)o->output_tokens, o->ttft_s, o->e2e_s);
	}
	return kv_atomic_commit(&f, d);
}

static int write_csv(const char *dir, const struct row *rows, size_t n_rows,
		     const struct kv_real_exec *e, const struct kv_run_result *real,
		     struct kv_diag *d)
{
	struct kv_atomic f;
	char path[KV_PATH_MAX + 64];
	size_t i;
	int rc;

	snprintf(path, sizeof(path), "%s/validate.csv", dir);
	if ((rc = kv_atomic_open(&f, path, d)))
		return rc;
	fprintf(f.f, "metric,unit,predicted,measured,error_pct,note\n");
	for (i = 0; i < n_rows; i++) {
		const struct row *r = &rows[i];
		int na = r->na[0] != 0;

		kv_csv_put(f.f, r->name); /* errors: the stream's flag, checked at commit */
		fputc(',', f.f);
		kv_csv_put(f.f, r->unit);
		put_num(f.f, na ? NAN : r->pred, "%.6g");
		/* the per-iteration error: one figure, no measurement to compare */
		put_num(f.f, na || i < 3 ? NAN : r->meas, "%.6g");
		put_num(f.f, i < 3 ? NAN : row_error(r), "%.3f");
		fputc(',', f.f);
		kv_csv_put(f.f, na ? r->na : !(r->meas > 0) && i >= 3 ? "measured 0" : "");
		fputc('\n', f.f);
	}
	if ((rc = kv_atomic_commit(&f, d)))
		return rc;
	if ((rc = write_measured(dir, real, d)))
		return rc;
	snprintf(path, sizeof(path), "%s/iterations.csv", dir);
	if ((rc = kv_atomic_open(&f, path, d)))
		return rc;
	fprintf(f.f, "what,n_seqs,n_decode,n_prefill_tokens,n_sample,attn_pairs,kv_read_bytes,"
		     "measured_ms,fitted_ms,rel_error\n");
	for (i = 0; i < e->n_log; i++) {
		const struct kv_iter_rec *r = &e->log[i];

		kv_csv_put(f.f, r->shape.n_prefill_tokens ? (r->shape.n_decode ? "mixed" : "prefill")
							  : "decode");
		fprintf(f.f, ",%u,%u,%llu,%u,%llu,%llu,%.6f,%.6f,%.6f\n", r->shape.n_seqs, r->shape.n_decode,
			(unsigned long long)r->shape.n_prefill_tokens, r->shape.n_sample,
			(unsigned long long)r->shape.attn_pairs,
			(unsigned long long)r->shape.kv_read_bytes, (double)r->real_ns * 1e-6,
			(double)r->model_ns * 1e-6, (double)r->model_ns / (double)r->real_ns - 1);
	}
	return kv_atomic_commit(&f, d);
}

/* One row of the printed table; an iteration row is one figure in percent. */
static void print_row(const struct row *r, int iteration)
{
	double err = row_error(r);

	if (r->na[0])
		printf("  %-24s n/a (%s)\n", r->name, r->na);
	else if (iteration)
		printf("  %-24s %11.2f%%\n", r->name, r->pred);
	else if (isnan(err))
		printf("  %-24s %12.4g %12.4g %9s  %s\n", r->name, r->pred, r->meas,
		       r->meas > 0 ? "n/a" : "n/a (measured 0)", r->unit);
	else
		printf("  %-24s %12.4g %12.4g %+8.1f%%  %s\n", r->name, r->pred, r->meas, err,
		       r->unit);
}

/*
 * Renders iterations.png into dir (the staging directory), its title naming
 * the workload, model, device, backend, engine and scheduler; 0, or 1 when
 * gnuplot failed.
 */
static int chart(const char *dir, const struct kv_workload *w, const struct kv_real_exec *e,
		 const char *kind, const char *profile)
{
	char *title = kv_xasprintf("kvsim validate %s: the perf model against each measured iteration",
				   w->name);
	char *setup = kv_xasprintf("%s on %s (%s backend; predictions from %s), engine %s, scheduler %s",
				   w->cfg.model.name, e->info.device, kind,
				   profile ? (strrchr(profile, '/') ? strrchr(profile, '/') + 1 : profile)
					   : w->cfg.device.name,
				   w->cfg.engine ? w->cfg.engine->name : "vllm-v0", w->cfg.sched->name);
	int rc = kv_chart_fit(dir, "iterations.csv", "iterations.png", title, setup, "batches");

	free(title);
	free(setup);
	return rc < 0;
}

/*
 * The output directory, opened (locked, staged) before the long real run,
 * so a second validate into it or a foreign directory fails at once.
 * Returns 0 or the exit status (message printed).
 */
static int open_out(struct kv_outdir *od, const struct val_args *a, const struct kv_workload *w)
{
	struct kv_diag d;
	char *dir;
	int rc;

	if (!a->out && (strchr(w->name, '/') || !strcmp(w->name, ".") || !strcmp(w->name, ".."))) {
		fprintf(stderr, "kvsim: %s: name: bad value '%s': the default output directory is "
				"out/validate/NAME, so expected a name without '/' (or give -o DIR)\n",
			w->path, w->name);
		return 2;
	}
	dir = a->out ? kv_xstrdup(a->out) : kv_xasprintf("out/validate/%s", w->name);
	rc = kv_outdir_open(od, dir, a->force ? KV_OUTDIR_FORCE : 0, &d);
	free(dir);
	if (!rc)
		return 0;
	kv_diag_print(&d, stderr);
	return rc == KV_EINVAL ? 2 : 1;
}

/*
 * The one warning line when other work competes for the CPU (cpu backend,
 * --quiet too): at the start, or at the end of the real run.  1 when it warned.
 */
static int warn_load(const struct val_args *a, const struct kv_calib_load *l)
{
	char w[512];

	if (strcmp(a->kind, "cpu") || !kv_calib_load_warning(l, a->cpu_clock, w, sizeof(w)))
		return 0;
	fprintf(stderr, "kvsim: validate: warning: %s\n", w);
	return 1;
}

int kv_cmd_validate(int argc, char **argv)
{
	struct val_args a;
	struct kv_workload w;
	struct kv_real_exec e;
	struct kv_run_result real = { 0 }, sim = { 0 };
	struct kv_backend_mem mem = { 0 };
	struct kv_diag d = { 0 };
	struct row rows[16];
	size_t n_rows = 0, i, n;
	double *v = NULL, *rel = NULL, mape = 0, pred_mem = 0, meas_mem = 0;
	struct kv_outdir od = { .lock_fd = -1 };
	char *hdr;
	struct kv_calib_load load;
	int rc, k, status = 0, chart_failed = 0, warned;

	if (kv_fromrun_wanted(argc, argv)) /* a recorded run: src/cmd_fromrun.c */
		return kv_cmd_validate_from_run(argc, argv);
	rc = parse_args(argc, argv, &a);
	if (rc)
		return rc < 0 ? 0 : rc;
	memset(&e, 0, sizeof(e));
	kv_progress_init(a.quiet, a.progress);
	if (kv_workload_load(&w, a.path, a.sets, a.n_sets, 0, 0, &d) ||
	    (a.profile && kv_calib_device(&w.cfg, a.profile, &d))) {
		kv_workload_release(&w);
		kv_diag_print(&d, stderr);
		return 2;
	}
	if (!a.profile && !a.quiet)
		fprintf(stderr, "kvsim: validate: no --profile: predictions use device %s, not "
				"this backend's calibration\n", w.cfg.device.name);
	w.cfg.model.dtype_bytes = kv_exec_kind_dtype(a.kind);
	if ((status = open_out(&od, &a, &w)))
		goto out;
	if (!a.quiet)
		fprintf(stderr, "kvsim: validate: real run on the %s backend\n", a.kind);
	kv_calib_load_start(&load, !strcmp(a.kind, "cpu") ? a.threads : 1);
	warned = warn_load(&a, &load);
	rc = kv_calib_run(&w, a.kind, a.threads, a.cpu_clock, &e, &real, a.quiet, &d);
	kv_calib_load_stop(&load);
	if (!rc && !warned)
		warn_load(&a, &load);
	if (!rc && e.be)
		rc = kv_backend_rc(kv_backend_memory(e.be, &mem));
	if (!rc) {
		if (!a.quiet)
			fprintf(stderr, "kvsim: validate: simulated run\n");
		rc = kv_calib_run(&w, NULL, 0, 0, NULL, &sim, a.quiet, &d);
	}
	if (rc) {
		kv_diag_print(&d, stderr);
		status = rc == KV_EBACKEND ? KV_EXIT_BACKEND : KV_EXIT_INPUT;
		goto out;
	}
	/* per-iteration error */
	rel = kv_xmalloc((e.n_log ? e.n_log : 1) * sizeof(*rel));
	for (i = 0; i < e.n_log; i++) {
		rel[i] = fabs((double)e.log[i].model_ns / (double)e.log[i].real_ns - 1);
		mape += rel[i] / (double)e.n_log;
	}
	rows[n_rows++] = (struct row){ "iteration_mape", "%", 100 * mape, 0, "" };
	rows[n_rows++] = (struct row){ "iteration_rel_error_p50", "%",
				       100 * quantile(rel, e.n_log, 0.5), 0, "" };
	rows[n_rows++] = (struct row){ "iteration_rel_error_p99", "%",
				       100 * quantile(rel, e.n_log, 0.99), 0, "" };
	for (i = 0; i < 3; i++)
		judge_quantile(&rows[i], e.n_log, e.n_log, i == 2 ? 0.99 : 0.5, "logged iterations");
	n = KV_MAX(real.n_req, sim.n_req);
	v = kv_xmalloc((n ? n : 1) * sizeof(*v));
	for (k = 0; k < 3; k++) {
		static const char *const q50[3] = { "ttft_p50", "tpot_p50", "e2e_p50" };
		static const char *const q99[3] = { "ttft_p99", "tpot_p99", "e2e_p99" };
		size_t np = metric(&sim, k, v);
		double p50 = quantile(v, np, 0.5), p99 = quantile(v, np, 0.99);
		size_t nm = metric(&real, k, v);

		rows[n_rows] = (struct row){ q50[k], "s", p50, quantile(v, nm, 0.5), "" };
		judge_quantile(&rows[n_rows++], np, nm, 0.5, "completed requests");
		rows[n_rows] = (struct row){ q99[k], "s", p99, quantile(v, nm, 0.99), "" };
		judge_quantile(&rows[n_rows++], np, nm, 0.99, "completed requests");
	}
	pred_mem = w.cfg.device.alpha * (double)kv_model_weight_bytes(&w.cfg.model) +
		   (double)sim.peak_reserved_bytes;
	meas_mem = (double)(mem.weights + mem.workspace + mem.kv);
	rows[n_rows++] = (struct row){ "peak_memory", "MB", pred_mem / 1e6, meas_mem / 1e6, "" };
	rows[n_rows++] = (struct row){ "makespan", "s", sim.makespan_s, real.makespan_s, "" };
	rows[n_rows++] = (struct row){ "iterations", "", (double)sim.iterations,
				       (double)real.iterations, "" };
	if (write_csv(od.stage, rows, n_rows, &e, &real, &d)) {
		kv_diag_print(&d, stderr);
		status = 1;
		goto out;
	}
	chart_failed = chart(od.stage, &w, &e, a.kind, a.profile);
	hdr = kv_xasprintf("command validate\nworkload %s\nbackend %s\nprofile %s\n", w.name,
			   a.kind, a.profile ? a.profile : "");
	rc = kv_outdir_commit(&od, hdr, &d);
	free(hdr);
	if (rc) {
		kv_diag_print(&d, stderr);
		status = 1;
		goto out;
	}
	if (!a.quiet) {
		printf("validation of %s on %s (%s backend): %zu iterations, %zu requests\n", w.name,
		       e.info.device, a.kind, e.n_log, real.n_req);
		printf("  %-24s %12s %12s %9s\n", "metric", "predicted", "measured", "error");
		for (i = 0; i < n_rows; i++)
			print_row(&rows[i], i < 3);
		printf("outputs in %s/\n", od.dir);
	}
	if (fflush(stdout) || ferror(stdout) || chart_failed)
		status = 1;
out:
	kv_outdir_abort(&od);
	free(v);
	free(rel);
	kv_real_exec_close(&e);
	kv_run_result_free(&real);
	kv_run_result_free(&sim);
	kv_workload_release(&w);
	return status;
}
