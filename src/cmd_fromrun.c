/*
 * cmd_fromrun.c -- `kvsim calibrate --from-run` and `kvsim validate
 * --from-run`: fit a device profile to a recorded serving run, and score
 * any profile on one (fromrun.h; docs/calibration.md, "From a recorded
 * serving run").  cmd_calibrate.c and cmd_validate.c branch here when
 * their arguments hold --from-run.
 */
#include "lib/fromrun.h"

#include "status.h"
#include "lib/csv.h"
#include "lib/outdir.h"
#include "lib/output.h"
#include "lib/profile_load.h"
#include "opts.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define MAX_SETS 64
#define DEFAULT_MAX_EVALS 200
#define DEFAULT_MAX_EVALS_MULTI 4000 /* --multi-start: screens and descents of up to 4 rounds */
#define MIN_FIT_REQUESTS 8
#define STR_(x) #x
#define STR(x) STR_(x) /* a macro's value as a string, for help text */

struct fr_args {
	const char *run, *settings, *out, *profile;
	const char *steps; /* calibrate --steps: the run's step records, fitted beside its requests */
	const char *steps_out; /* validate --steps-out: where the replay's steps are written */
	char *sets[MAX_SETS];
	size_t n_sets;
	double holdout; /* share of the run (the last requests by send time) held out */
	unsigned max_evals;
	int max_evals_opt; /* --max-evals N as parsed */
	int quiet, validate, progress;
	int multi; /* --multi-start: screen a grid of starts, descend from the best few */
	int fit_host; /* --fit-host: fit the host's terms with the device's */
	int host_only; /* --host-only: the host's terms alone, the device held (fit_host 2) */
	int fit_attn; /* --fit-attn: with --steps, fit eff_attn too */
	int evals_set; /* --max-evals given */
	struct kv_cli_sets set; /* --set, into sets[] */
};

/* The options both modes end with: --set, --quiet, --progress, the terminator. */
#define FR_TAIL_OPTS(a)                                                                        \
	{ .name = "set", .kind = KV_CLI_SET, .dst = &(a)->set, .max = MAX_SETS, .arg = "K=V",    \
	  .help = "override a workload key, as in `kvsim run`; repeatable" },                    \
	{ .name = "quiet", .kind = KV_CLI_FLAG, .dst = &(a)->quiet,                              \
	  .help = "no progress or table" },                                                      \
	{ .name = "progress", .kind = KV_CLI_FLAG, .dst = &(a)->progress,                        \
	  .help = KV_CLI_PROGRESS_HELP },                                                        \
	{ .name = NULL }

static const char *const fr_synopsis[] = { "RUN [options] WORKLOAD.yaml", NULL };

static const char fr_run_help[] =
	"vLLM's benchmark result JSON (--save-result\n"
	"--save-detailed), or a CSV or JSON-lines file with\n"
	"arrival_s, prompt_tokens, output_tokens, ttft_s, e2e_s";

static const char fr_val_desc[] =
	"Replays the recorded run RUN in the simulator with WORKLOAD's settings\n"
	"(model, device, cluster, batching, scheduler, cache; its workload section is\n"
	"replaced by RUN's requests) and reports the signed error of TTFT, TPOT and\n"
	"E2E mean, p90 and p99, predicted against measured.\n";

static const char fr_cal_desc[] =
	"Fits the device profile's eff_bw, eff_flops, overhead and per_seq to a\n"
	"recorded serving run: RUN is replayed in the simulator with WORKLOAD's\n"
	"settings (model, device, cluster, batching, scheduler, cache; its workload\n"
	"section is replaced by RUN's requests) inside a least-squares loop over the\n"
	"log errors of TTFT, TPOT and E2E summed over windows of 10 requests.  The\n"
	"fit uses the first part of the run by send time; the rest is held out and\n"
	"its errors (mean, p90, p99) reported.  --fit-host fits the engine's host terms\n"
	"too; --steps fits the perf model to the run's recorded steps instead of its\n"
	"requests (docs/calibration.md, \"Host terms\").\n";

static const char fr_notes[] = "exit status: 0 done, 1 output error, 2 bad input\n";

int kv_fromrun_wanted(int argc, char **argv)
{
	int i;

	for (i = 1; i < argc && strcmp(argv[i], "--"); i++)
		if (!strcmp(argv[i], "--from-run") || !strncmp(argv[i], "--from-run=", 11))
			return 1;
	return 0;
}

/* --holdout F: a share in [0, 0.9] into the double at dst; -1 when bad. */
static int parse_holdout(const char *arg, void *dst)
{
	char *end;
	double v;

	errno = 0;
	v = strtod(arg, &end);
	if (errno || *end || !*arg || !(v >= 0 && v <= 0.9))
		return -1;
	*(double *)dst = v;
	return 0;
}

/* calibrate --from-run's options; the entries shared with validate's come first. */
static int parse_calibrate(int argc, char **argv, struct fr_args *a)
{
	const struct kv_cli_opt opts[] = {
		{ .name = "from-run", .kind = KV_CLI_PATH, .dst = &a->run, .what = "a run file",
		  .arg = "RUN", .help = fr_run_help },
		{ .name = "settings", .kind = KV_CLI_PATH, .dst = &a->settings, .what = "a workload file",
		  .arg = "FILE", .help = "the same as the WORKLOAD.yaml argument" },
		{ .name = "output", .short_name = 'o', .kind = KV_CLI_PATH, .dst = &a->out,
		  .what = "a file path", .label = "-o", .arg = "PATH",
		  .help = "device profile to write (default\n"
			  "out/calibrate/RUN-fromrun.yaml); beside it PATH's stem\n"
			  "plus -fit.csv (coefficients and intervals) and\n"
			  "-holdout.csv (held-out errors, start and fitted);\n"
			  "with --steps -steps.csv (each step's fitted time)" },
		{ .name = "holdout", .kind = KV_CLI_FN, .dst = &a->holdout, .fn = parse_holdout,
		  .what = "a share in [0, 0.9]", .arg = "F",
		  .help = "share of the run held out, in [0, 0.9] (default 0.5)" },
		{ .name = "max-evals", .kind = KV_CLI_INT, .dst = &a->max_evals_opt, .min = 10,
		  .max = 100000, .what = "an integer in [10, 100000]", .seen = &a->evals_set,
		  .arg = "N", .help = "most replays the fit may run (default " STR(DEFAULT_MAX_EVALS)
				      ";\n" STR(DEFAULT_MAX_EVALS_MULTI) " with --multi-start)" },
		{ .name = "multi-start", .kind = KV_CLI_FLAG, .dst = &a->multi,
		  .help = "also screen 62 starts around WORKLOAD's device and\n"
			  "descend from the 6 best; the lowest cost is kept" },
		{ .name = "fit-host", .kind = KV_CLI_FLAG, .dst = &a->fit_host,
		  .help = "also fit the engine's host terms (sched, sched_seq,\n"
			  "prep_token, sample; the others folded in) and write\n"
			  "them as a host profile, PATH's stem plus -host.yaml" },
		{ .name = "steps", .kind = KV_CLI_PATH, .dst = &a->steps, .what = "a steps CSV",
		  .arg = "FILE", .help = "the run's engine steps (the columns of validate's\n"
					 "iterations.csv): each step's log error is a residual too" },
		{ .name = "fit-attn", .kind = KV_CLI_FLAG, .dst = &a->fit_attn,
		  .help = "with --steps: fit eff_attn too (attention's FLOP rate;\n"
			  "the steps' attention pairs tell it apart where\n"
			  "attention is a visible share of their time)" },
		{ .name = "host-only", .kind = KV_CLI_FLAG, .dst = &a->host_only,
		  .help = "with --fit-host: fit the host terms alone, the device\n"
			  "held at WORKLOAD's (one calibrated on its backend)" },
		FR_TAIL_OPTS(a),
	};
	const struct kv_cli_cmd cmd = { .name = "calibrate", .mode = "--from-run",
					.synopsis = fr_synopsis, .desc = fr_cal_desc,
					.notes = fr_notes, .positional = "workload file",
					.min_operands = 0, .max_operands = 1 };

	return kv_cli_parse(&cmd, opts, argc, argv, &a->settings);
}

/* validate --from-run's options. */
static int parse_validate(int argc, char **argv, struct fr_args *a)
{
	const struct kv_cli_opt opts[] = {
		{ .name = "from-run", .kind = KV_CLI_PATH, .dst = &a->run, .what = "a run file",
		  .arg = "RUN", .help = fr_run_help },
		{ .name = "settings", .kind = KV_CLI_PATH, .dst = &a->settings, .what = "a workload file",
		  .arg = "FILE", .help = "the same as the WORKLOAD.yaml argument" },
		{ .name = "profile", .kind = KV_CLI_PATH, .dst = &a->profile, .what = "a profile path",
		  .arg = "FILE", .help = "the device profile to score (default: WORKLOAD's device)" },
		{ .name = "holdout", .kind = KV_CLI_FN, .dst = &a->holdout, .fn = parse_holdout,
		  .what = "a share in [0, 0.9]", .arg = "F",
		  .help = "score only the last share F of the requests by send\n"
			  "time (default 0: all), as calibrate --from-run reports" },
		{ .name = "output", .short_name = 'o', .kind = KV_CLI_PATH, .dst = &a->out,
		  .what = "a file path", .label = "-o", .arg = "FILE",
		  .help = "write the errors as CSV" },
		{ .name = "steps-out", .kind = KV_CLI_PATH, .dst = &a->steps_out, .what = "a file path",
		  .arg = "FILE", .help = "write the replay's engine steps (shape, time) as\n"
					 "calibrate --steps reads them" },
		FR_TAIL_OPTS(a),
	};
	const struct kv_cli_cmd cmd = { .name = "validate", .mode = "--from-run",
					.synopsis = fr_synopsis, .desc = fr_val_desc,
					.notes = fr_notes, .positional = "workload file",
					.min_operands = 0, .max_operands = 1 };

	return kv_cli_parse(&cmd, opts, argc, argv, &a->settings);
}

static int parse_args(int argc, char **argv, struct fr_args *a, int validate)
{
	const char *cmd = validate ? "validate" : "calibrate";
	int rc;

	memset(a, 0, sizeof(*a));
	a->validate = validate;
	a->holdout = validate ? 0 : 0.5;
	a->set.v = a->sets;
	rc = validate ? parse_validate(argc, argv, a) : parse_calibrate(argc, argv, a);
	if (rc)
		return rc;
	a->n_sets = a->set.n;
	a->max_evals = a->evals_set ? (unsigned)a->max_evals_opt :
		       a->multi ? DEFAULT_MAX_EVALS_MULTI : DEFAULT_MAX_EVALS;
	if (!a->settings) {
		fprintf(stderr, "kvsim: %s: --from-run needs the deployment's settings: a workload "
				"file (model, device, cluster, batching, scheduler, cache); see "
				"'kvsim %s --from-run --help'\n", cmd, cmd);
		return 2;
	}
	return 0;
}

/* The run's file name without folders and extension, for default names. */
static void run_stem(const char *path, char *stem, size_t len)
{
	const char *base = strrchr(path, '/'), *dot;

	base = base ? base + 1 : path;
	dot = strrchr(base, '.');
	snprintf(stem, len, "%.*s", (int)(dot && dot != base ? dot - base : (long)strlen(base)), base);
}

/* What both commands hold between their shared prologue and epilogue. */
struct fr_ctx {
	struct fr_args a; /* the parsed command line */
	struct kv_run run; /* the recorded run (requests, format, path) */
	struct kv_workload w; /* the engine settings, with --profile's device when given */
	struct kv_replay rp; /* the run set up for replay under w */
	int lock; /* the profile's (calibrate) or -o's (validate) lock, kv_path_lock; -1: none */
	struct kv_steps steps; /* calibrate --steps' records, or validate --steps-out's replay */
};

/*
 * Prints d; the exit status: 128 + the signal when SIGINT or SIGTERM
 * stopped the command (d then says so, in one line), else status.
 */
static int failed(const struct kv_diag *d, int status)
{
	kv_diag_print(d, stderr);
	return kv_run_stopped() ? KV_EXIT_SIGNAL(kv_run_stopped()) : status;
}

static int out_path(const struct fr_args *a, char *path, size_t len);

/* 1 when paths a and b name one existing file. */
static int same_file(const char *a, const char *b)
{
	struct stat sa, sb;

	return !stat(a, &sa) && !stat(b, &sb) && sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
}

/*
 * 2 (printed) when an output (out, and calibrate's -fit.csv and
 * -holdout.csv beside it) is the run or the settings file, which writing
 * it would destroy, or exists and is not a regular file (kv_atomic_check:
 * checked before the lock, so no lock file is made beside a device); else 0.
 */
static int clobbers_input(const struct fr_args *a, const char *out)
{
	char stem[KV_PATH_MAX], side[4][KV_PATH_MAX + 32];
	const char *in[2] = { a->run, a->settings };
	int i, k;

	kv_calib_stem(out, stem, sizeof(stem));
	snprintf(side[0], sizeof(side[0]), "%s", out);
	snprintf(side[1], sizeof(side[1]), "%s-fit.csv", stem);
	snprintf(side[2], sizeof(side[2]), "%s-holdout.csv", stem);
	snprintf(side[3], sizeof(side[3]), "%s-host.yaml", stem);
	for (i = 0; i < (a->validate ? 1 : a->fit_host ? 4 : 3); i++) {
		struct kv_diag d;

		if (kv_atomic_check(side[i], &d)) {
			kv_diag_print(&d, stderr);
			return 2;
		}
		for (k = 0; k < 2; k++)
			if (same_file(side[i], in[k])) {
				fprintf(stderr, "kvsim: %s: output %s is the %s file %s: expected "
						"another path\n", a->validate ? "validate" : "calibrate",
					side[i], k ? "settings" : "run", in[k]);
				return 2;
			}
	}
	return 0;
}

/* The prologue both commands share: parses argv (validate: 1 for `validate`), makes the
 * profile path when path is not NULL (calibrate), loads the run and the settings and sets up
 * the replay.  Returns 0 to go on, -1 when --help was printed, or the exit status (printed).
 * fr_end(c, ...) must follow in every case. */
static int fr_begin(struct fr_ctx *c, int argc, char **argv, int validate, char *path, size_t len)
{
	struct kv_diag d = { 0 };
	const char *lock_path;
	int status;

	memset(c, 0, sizeof(*c));
	c->lock = -1;
	kv_run_catch_signals(); /* SIGINT, SIGTERM: stop, say so, exit 128 + N */
	if ((status = parse_args(argc, argv, &c->a, validate)))
		return status;
	kv_progress_init(c->a.quiet, c->a.progress);
	if (path && (status = out_path(&c->a, path, len)))
		return status;
	/* one writer of a profile (or errors CSV) at a time, as plain calibrate: held until exit */
	lock_path = path ? path : c->a.out;
	if (lock_path && (status = clobbers_input(&c->a, lock_path)))
		return status;
	if (lock_path && (c->lock = kv_path_lock(lock_path, &d)) < 0)
		return failed(&d, 1);
	if (kv_run_load(&c->run, c->a.run, &d) ||
	    kv_workload_load(&c->w, c->a.settings, c->a.sets, c->a.n_sets, 0, 0, &d) ||
	    (c->a.profile && kv_calib_device(&c->w.cfg, c->a.profile, &d)))
		return failed(&d, 2);
	if (c->run.n_dropped) /* a note even with --quiet: the scores cover part of the run */
		fprintf(stderr, "kvsim: %s: %zu completed requests: kept the first %zu by send time, "
				"dropped %zu (runs are cut at %zu requests; docs/calibration.md)\n",
			c->run.path, c->run.n + c->run.n_dropped, c->run.n, c->run.n_dropped,
			KV_RUN_MAX_REQUESTS);
	if (kv_replay_init(&c->rp, &c->w, &c->run, &d))
		return failed(&d, 1);
	return 0;
}

/* The shared epilogue: checks stdout when all went well, releases c; the exit status. */
static int fr_end(struct fr_ctx *c, int status)
{
	kv_progress_done();
	if (status < 0)
		status = 0;
	else if (!status && (fflush(stdout) || ferror(stdout)))
		status = 1;
	kv_replay_release(&c->rp);
	kv_steps_release(&c->steps);
	kv_run_release(&c->run);
	kv_workload_release(&c->w);
	if (c->lock >= 0)
		close(c->lock);
	return status;
}

/* Replays with dev and scores [from, n); 0 or the exit status (printed). */
static int score(struct kv_replay *rp, const struct kv_device *dev, size_t from,
		 struct kv_run_score *sc)
{
	struct kv_run_result res;
	struct kv_diag d = { 0 };
	int rc = kv_replay_run(rp, dev, &res, &d);

	if (!rc)
		kv_run_score(rp->run, &res, from, rp->run->n, sc);
	kv_run_result_free(&res);
	return rc ? failed(&d, 2) : 0;
}

/* ---- validate --from-run ---- */

static int write_errors(const char *path, const char *label, const struct kv_run_score *sc,
			const struct kv_run_score *sc2)
{
	struct kv_atomic f;
	struct kv_diag d = { 0 };

	if (kv_atomic_open(&f, path, &d)) {
		kv_diag_print(&d, stderr);
		return 1;
	}
	fprintf(f.f, "profile,metric,stat,predicted_s,measured_s,error_pct,requests\n");
	kv_run_score_csv(f.f, sc2 ? "start" : label, sc);
	if (sc2)
		kv_run_score_csv(f.f, "fitted", sc2);
	if (kv_atomic_commit(&f, &d)) {
		kv_diag_print(&d, stderr);
		return 1;
	}
	return 0;
}

static size_t first_scored(const struct kv_run *run, double holdout)
{
	size_t held = (size_t)llround(holdout * (double)run->n);

	return run->n - (held ? held : holdout > 0);
}

/* --steps-out: the replay's steps; 0 or the exit status (printed). */
static int write_steps(struct fr_ctx *c)
{
	struct kv_diag d = { 0 };
	int rc = kv_replay_steps(&c->rp, &c->w.cfg.device, &c->steps, &d);

	if (!rc)
		rc = kv_steps_write(c->a.steps_out, &c->steps, &d);
	return rc ? failed(&d, rc == KV_EIO ? 1 : 2) : 0;
}

int kv_cmd_validate_from_run(int argc, char **argv)
{
	struct fr_ctx c;
	struct kv_run_score sc;
	size_t from;
	int status;

	if ((status = fr_begin(&c, argc, argv, 1, NULL, 0)))
		return fr_end(&c, status);
	from = c.a.holdout > 0 ? first_scored(&c.run, c.a.holdout) : 0;
	if ((status = score(&c.rp, &c.w.cfg.device, from, &sc)))
		return fr_end(&c, status);
	if (c.a.out &&
	    (status = write_errors(c.a.out, c.a.profile ? c.a.profile : c.w.cfg.device.name, &sc, NULL)))
		return fr_end(&c, status);
	if (c.a.steps_out && (status = write_steps(&c)))
		return fr_end(&c, status);
	if (!c.a.quiet) {
		printf("validation on run %s (%s, %zu requests, %zu failed left out)\n"
		       "settings %s, device %s; scored: requests %zu-%zu by send time\n",
		       c.run.path, c.run.format, c.run.n, c.run.n_failed, c.w.path, c.w.cfg.device.name,
		       from + 1, c.run.n);
		kv_run_score_print(stdout, &sc);
	}
	return fr_end(&c, 0);
}

/* ---- calibrate --from-run ---- */

/* Human units of coefficient k: eff as a share, fixed terms (overhead, sched) in ms, the rest in us. */
static double shown(int k, double v)
{
	if (k == KV_RFIT_ATTN)
		return v;
	return k == KV_RFIT_OVERHEAD || k == KV_RFIT_SCHED ? v * 1e-6 : k >= KV_RFIT_PER_SEQ ? v * 1e-3 : v;
}

static const char *const shown_unit[KV_RFIT_N] = { "", "", "ms", "us", "", "ms", "us", "us", "us" };

static int write_fit_csv(const char *path, const struct kv_run_fit *f, size_t n_fit)
{
	struct kv_atomic a;
	struct kv_diag d = { 0 };
	int j, k;

	if (kv_atomic_open(&a, path, &d)) {
		kv_diag_print(&d, stderr);
		return 1;
	}
	fprintf(a.f, "key,start,value,ci95_lo,ci95_hi,unit\n");
	for (j = 0; j < f->np && (k = f->ks[j]) >= 0; j++)
		fprintf(a.f, "%s,%.9g,%.9g,%.9g,%.9g,%s\n", kv_run_fit_name[k], shown(k, f->start[k]),
			shown(k, f->val[k]), shown(k, f->lo[k]), shown(k, f->hi[k]),
			shown_unit[k][0] ? shown_unit[k] : "share");
	fprintf(a.f, "fit_requests,%zu,,,,\nresiduals,%zu,,,,\nreplays,%u,,,,\niterations,%u,,,,\n"
		     "cost_start,%.9g,,,,\ncost,%.9g,,,,\nrms_log_error,%.9g,,,,\n",
		n_fit, f->n_res, f->evals, f->iters, f->cost0, f->cost, sqrt(f->cost / (double)f->n_res));
	if (kv_atomic_commit(&a, &d)) {
		kv_diag_print(&d, stderr);
		return 1;
	}
	return 0;
}

static void print_fit(const struct kv_run_fit *f)
{
	int j, k;

	printf("  %-10s %12s %12s   %s\n", "coefficient", "start", "fitted", "95% interval");
	for (j = 0; j < f->np && (k = f->ks[j]) >= 0; j++)
		printf("  %-10s %10.4g%-2s %10.4g%-2s   [%.4g, %.4g]\n", kv_run_fit_name[k],
		       shown(k, f->start[k]), shown_unit[k], shown(k, f->val[k]), shown_unit[k],
		       shown(k, f->lo[k]), shown(k, f->hi[k]));
}

static void print_compare(const struct kv_run_score *s0, const struct kv_run_score *s1)
{
	int k, s;

	printf("  %-10s %11s %11s %8s %11s %8s\n", "metric", "measured", "start", "error",
	       "fitted", "error");
	for (k = 0; k < KV_RUN_METRICS; k++)
		for (s = 0; s < KV_RUN_STATS; s++)
			printf("  %-4s %-5s %8.2f ms %8.2f ms %+7.2f%% %8.2f ms %+7.2f%%\n",
			       kv_run_metric_name[k], kv_run_stat_name[s], 1e3 * s0->meas[k][s],
			       1e3 * s0->pred[k][s], kv_run_score_err(s0, k, s), 1e3 * s1->pred[k][s],
			       kv_run_score_err(s1, k, s));
	if (s1->n_missing)
		printf("  %zu held-out requests did not complete in the fitted replay\n", s1->n_missing);
}

/* PATH's stem, for messages (a static buffer). */
static const char *fit_stem(const char *path)
{
	static char stem[KV_PATH_MAX];

	kv_calib_stem(path, stem, sizeof(stem));
	return stem;
}

/* --fit-host: the host profile STEM-host.yaml; 0 or a code with d filled. */
static int write_host(const char *stem, const struct fr_args *a, const struct kv_workload *w,
		      const struct kv_run *run, struct kv_run_fit *f, size_t n_fit,
		      const char *date, struct kv_diag *d)
{
	char p[KV_PATH_MAX + 32], *hdr;
	int rc, k;

	snprintf(p, sizeof(p), "%s-host.yaml", stem);
	snprintf(f->host.name, sizeof(f->host.name), "%.48s-fromrun",
		 w->cfg.host.name[0] ? w->cfg.host.name : "host");
	hdr = kv_xasprintf("Fitted by `kvsim calibrate --from-run %s %s --fit-host` on %s:\n"
			   "the host terms of engine %s (CPU and GPU combined: %s) fitted with the\n"
			   "device's to the first %zu of %zu requests; prep_seq, block, hash and detok\n"
			   "are folded into sched_seq, prep_token (at N / B) and sample.  95%% intervals:",
			   run->path, a->settings, date,
			   w->cfg.engine ? w->cfg.engine->name : "vllm-v0", f->host_mode, n_fit, run->n);
	for (k = KV_RFIT_DEV_N; k < KV_RFIT_N; k++) {
		char *more = kv_xasprintf("%s\n%s [%.6g, %.6g] ns", hdr, kv_run_fit_name[k], f->lo[k],
					  f->hi[k]);

		free(hdr);
		hdr = more;
	}
	rc = kv_run_write_host(p, &f->host, hdr, d);
	free(hdr);
	return rc;
}

/* The profile and its two CSVs; 0 or the exit status. */
static int write_outputs(const char *path, const struct fr_args *a, const struct kv_workload *w,
			 const struct kv_run *run, struct kv_run_fit *f, size_t n_fit,
			 const struct kv_run_score *s0, const struct kv_run_score *s1)
{
	char stem[KV_PATH_MAX], p2[KV_PATH_MAX + 32], date[32], attn[96] = "", *hdr;
	struct kv_diag d = { 0 };
	time_t now = time(NULL);
	int rc, j;

	strftime(date, sizeof(date), "%Y-%m-%d", gmtime(&now));
	kv_calib_stem(path, stem, sizeof(stem));
	snprintf(p2, sizeof(p2), "%s-fit.csv", stem);
	if ((rc = write_fit_csv(p2, f, n_fit)))
		return rc;
	snprintf(p2, sizeof(p2), "%s-holdout.csv", stem);
	if (s0 && (rc = write_errors(p2, "", s0, s1)))
		return rc;
	snprintf(f->dev.name, sizeof(f->dev.name), "%.48s-fromrun", w->cfg.device.name);
	for (j = 0; j < f->np && !attn[0]; j++)
		if (f->ks[j] == KV_RFIT_ATTN)
			snprintf(attn, sizeof(attn), "eff_attn fitted to the steps: [%.4g, %.4g].\n",
				 f->lo[KV_RFIT_ATTN], f->hi[KV_RFIT_ATTN]);
	hdr = kv_xasprintf("Fitted by `kvsim calibrate --from-run %s %s` on %s: the\n"
			   "device %s with eff_bw, eff_flops, overhead and per_seq fitted to the\n"
			   "first %zu of %zu requests (%s; %u replays, %s).\n"
			   "95%% intervals: eff_bw [%.4g, %.4g], eff_flops [%.4g, %.4g],\n"
			   "overhead [%.4g, %.4g] ms, per_seq [%.4g, %.4g] us.\n"
			   "%sUse it with the model and engine settings of %s.",
			   run->path, a->settings, date, w->cfg.device.name, n_fit, run->n, run->format,
			   f->evals, f->why, f->lo[0], f->hi[0], f->lo[1], f->hi[1], shown(2, f->lo[2]),
			   shown(2, f->hi[2]), shown(3, f->lo[3]), shown(3, f->hi[3]), attn, a->settings);
	rc = kv_run_write_profile(path, &f->dev, hdr, &d);
	free(hdr);
	if (!rc && a->fit_host)
		rc = write_host(stem, a, w, run, f, n_fit, date, &d);
	if (rc) {
		kv_diag_print(&d, stderr);
		return 1;
	}
	return 0;
}

/*
 * --steps: the steps with the fitted profiles' time of each, STEM-steps.csv;
 * 0 or the exit status.  Last: kv_steps_perf leaves dev in the settings.
 */
static int write_fit_steps(struct fr_ctx *c, const struct kv_run_fit *f, const char *path)
{
	char p[KV_PATH_MAX + 32];
	struct kv_diag d = { 0 };
	double *pred = kv_xmalloc(c->steps.n * sizeof(*pred));
	int rc;

	snprintf(p, sizeof(p), "%s-steps.csv", fit_stem(path));
	rc = kv_steps_perf(&c->rp, &f->dev, &c->steps, pred, &d);
	if (!rc)
		rc = kv_steps_write_fitted(p, &c->steps, pred, &d);
	free(pred);
	return rc ? failed(&d, rc == KV_EIO ? 1 : 2) : 0;
}

/* The profile path: -o, or out/calibrate/RUN-fromrun.yaml (its folder created). */
static int out_path(const struct fr_args *a, char *path, size_t len)
{
	char stem[256], dir[KV_PATH_MAX], *slash;

	if (a->out && strlen(a->out) + 32 >= len) {
		fprintf(stderr, "kvsim: calibrate: -o: path of %zu bytes is too long\n", strlen(a->out));
		return 2;
	}
	run_stem(a->run, stem, sizeof(stem));
	if (a->out)
		snprintf(path, len, "%s", a->out);
	else
		snprintf(path, len, "out/calibrate/%s-fromrun.yaml", stem);
	snprintf(dir, sizeof(dir), "%s", path);
	slash = strrchr(dir, '/');
	if (slash && slash != dir) {
		*slash = 0;
		if (kv_mkdirs(dir)) {
			fprintf(stderr, "kvsim: calibrate: cannot create %s: %s\n", dir, strerror(errno));
			return 1;
		}
	}
	return 0;
}

int kv_cmd_calibrate_from_run(int argc, char **argv)
{
	struct fr_ctx c;
	struct kv_run_fit fit;
	struct kv_run_score s0, s1;
	struct kv_device start;
	struct kv_diag d = { 0 };
	char path[KV_PATH_MAX];
	size_t n_fit;
	int status, rc;

	if ((status = fr_begin(&c, argc, argv, 0, path, sizeof(path))))
		return fr_end(&c, status);
	n_fit = first_scored(&c.run, c.a.holdout);
	if (n_fit < MIN_FIT_REQUESTS) {
		fprintf(stderr, "kvsim: %s: %zu requests to fit (of %zu, --holdout %g): expected at least %d\n",
			c.run.path, n_fit, c.run.n, c.a.holdout, MIN_FIT_REQUESTS);
		return fr_end(&c, 2);
	}
	start = c.w.cfg.device;
	if (c.a.host_only && !c.a.fit_host) {
		fprintf(stderr, "kvsim: calibrate: --host-only: expected it with --fit-host\n");
		return fr_end(&c, 2);
	}
	if (c.a.fit_attn && (!c.a.steps || c.a.host_only)) {
		fprintf(stderr, "kvsim: calibrate: --fit-attn: expected it with --steps and without "
				"--host-only\n");
		return fr_end(&c, 2);
	}
	if (c.a.steps) {
		if (kv_steps_load(&c.steps, c.a.steps, &d))
			return fr_end(&c, failed(&d, 2));
		c.rp.steps = &c.steps;
	}
	if ((rc = kv_run_fit(&c.rp, &start, n_fit, c.a.max_evals, c.a.multi,
			     c.a.fit_host ? 1 + c.a.host_only : 0, c.a.fit_attn, &fit, &d)))
		return fr_end(&c, failed(&d, rc == KV_ERANGE ? 1 : 2));
	/* the start host is the settings' again (kv_run_fit); the fitted one scores the fit */
	if (n_fit < c.run.n && (status = score(&c.rp, &start, n_fit, &s0)))
		return fr_end(&c, status);
	if (c.a.fit_host)
		c.w.cfg.host = fit.host;
	if (n_fit < c.run.n && (status = score(&c.rp, &fit.dev, n_fit, &s1)))
		return fr_end(&c, status);
	if ((status = write_outputs(path, &c.a, &c.w, &c.run, &fit, n_fit,
				    n_fit < c.run.n ? &s0 : NULL, &s1)))
		return fr_end(&c, status);
	if (c.a.steps && (status = write_fit_steps(&c, &fit, path)))
		return fr_end(&c, status);
	if (!c.a.quiet) {
		printf("calibration from run %s (%s, %zu requests, %zu failed left out)\n"
		       "settings %s (device %s)\n"
		       "fit: requests 1-%zu by send time, %zu residuals, %u %s, %u iterations (%s)\n"
		       "  RMS log error %.4f at the start, %.4f fitted\n",
		       c.run.path, c.run.format, c.run.n, c.run.n_failed, c.w.path, start.name, n_fit,
		       fit.n_res, fit.evals, c.a.steps ? "evaluations" : "replays", fit.iters,
		       fit.why, sqrt(fit.cost0 / (double)fit.n_res), sqrt(fit.cost / (double)fit.n_res));
		print_fit(&fit);
		if (c.a.fit_host)
			printf("  host terms fitted with CPU and GPU combined as the engine does (%s)%s;\n"
			       "  prep_seq, block, hash and detok are folded into sched_seq, prep_token\n"
			       "  and sample, and written as 0\n", fit.host_mode,
			       strcmp(fit.host_mode, "async") ? ": overhead and per_seq held at the\n"
			       "  device's (they add to sched and sched_seq in every step)" : "");
		if (c.a.steps)
			printf("  fitted to the %zu steps of %s (the requests are not in the cost;\n"
			       "  each step's fitted time: %s-steps.csv)\n", c.steps.n, c.steps.path,
			       fit_stem(path));
		if (n_fit < c.run.n) {
			printf("held out: requests %zu-%zu\n", n_fit + 1, c.run.n);
			print_compare(&s0, &s1);
		} else {
			printf("held out: none (--holdout 0): no error to report that the fit did not see\n");
		}
		printf("profile: %s\n", path);
		if (c.a.fit_host)
			printf("host profile: %s-host.yaml (kvsim run --set host=...)\n", fit_stem(path));
	}
	return fr_end(&c, 0);
}
