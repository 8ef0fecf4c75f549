/*
 * cmd_run.c -- `kvsim run`: load a workload, simulate, write the outputs.
 */
#include "commands.h"
#include "opts.h"
#include "status.h"
#include "lib/output.h"
#include "lib/timeline.h"
#include "lib/uncert_run.h"
#include "load.h"
#include "replica.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define MAX_SETS 256

static volatile sig_atomic_t stop_flag; /* the signal that asked to stop, 0 when none */

/* SIGINT/SIGTERM: only sets the flag (async-signal-safe); the event loop polls it. */
static void on_signal(int sig)
{
	stop_flag = sig;
}

/*
 * From here on SIGINT and SIGTERM stop the run at the next check instead
 * of killing it, so the temporaries are removed.  Installed before the
 * output directory is touched.  SA_RESTART: a write interrupted by the
 * signal is resumed rather than failed with EINTR.
 */
static void catch_signals(void)
{
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;
	sa.sa_flags = SA_RESTART;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
}

/* The exit status of a run stopped by a signal: 128 + its number (130 SIGINT, 143 SIGTERM). */
static int interrupted(const struct kv_sim *s, const char *when)
{
	fprintf(stderr, "kvsim: interrupted by %s %s simulated %.3f s; no output written\n",
		stop_flag == SIGINT ? "SIGINT" : "SIGTERM", when, (double)s->now * 1e-9);
	return KV_EXIT_SIGNAL(stop_flag);
}

static const char *const run_synopsis[] = { "[options] WORKLOAD.yaml", NULL };

static const char run_desc[] =
	"Simulates the workload and writes, in DIR (default: outputs.dir of the\n"
	"workload, else out/NAME): requests.csv, timeseries.csv, summary.csv,\n"
	"tenants.csv, health.csv and run.png (when gnuplot is installed); prints the\n"
	"summary as a table and the health report (docs/health.md).  Near saturation\n"
	"(offered load above 90% of capacity) it warns with the TTFT p50 at -3% and\n"
	"+3% step time (two more runs; above twice capacity, a warning alone).\n";

static const char run_notes[] =
	"exit status: 0 done, 1 output error (another kvsim writing DIR, a failed\n"
	"write or chart), 2 bad input, 3 out of memory, 130 interrupted by SIGINT,\n"
	"143 by SIGTERM (no output written)\n";

struct run_args {
	const char *path;
	const char *out;
	char *sets[MAX_SETS];
	size_t n_sets;
	int has_seed, quiet, check_pool, force, progress, exact_steps;
	uint64_t seed;
	uint64_t uncertainty; /* --uncertainty N: draws of the coefficients, 0: none */
	const char *trace_out; /* --trace-out FILE, or NULL */
	struct kv_timeline_opts trace; /* --trace-window, --trace-sample, --trace-max-events */
	struct kv_cli_sets set; /* --set, into sets[] */
};

static int trace_window(const char *arg, void *dst)
{
	return kv_timeline_parse_window(arg, dst);
}

static int parse_args(int argc, char **argv, struct run_args *a)
{
	const struct kv_cli_opt opts[] = {
		{ .name = "output", .short_name = 'o', .kind = KV_CLI_PATH, .dst = &a->out,
		  .what = "a directory path", .label = "-o", .arg = "DIR",
		  .help = "output directory (created when missing); it is replaced\n"
			  "whole by this run's files (manifest.txt lists them)" },
		{ .name = "seed", .short_name = 's', .kind = KV_CLI_U64, .dst = &a->seed,
		  .max = UINT64_MAX, .what = "a non-negative integer", .seen = &a->has_seed,
		  .arg = "N", .help = "random seed (overrides the workload's `seed:`)" },
		{ .name = "set", .short_name = 'S', .kind = KV_CLI_SET, .dst = &a->set, .max = MAX_SETS,
		  .arg = "K=V", .help = "override a workload key, e.g. --set cluster.replicas=4\n"
					"or --set scheduler.name=fifo; repeatable" },
		{ .name = "check-pool", .short_name = 'c', .kind = KV_CLI_FLAG, .dst = &a->check_pool,
		  .help = "check every pool's integrity after every event (slow)" },
		{ .name = "force", .short_name = 'f', .kind = KV_CLI_FLAG, .dst = &a->force,
		  .help = "replace DIR even when it holds files no kvsim run wrote" },
		{ .name = "exact-steps", .short_name = 'x', .kind = KV_CLI_FLAG, .dst = &a->exact_steps,
		  .help = "one event per iteration, no macro steps (same outputs,\n"
			  "slower; also `exact_steps: true` in the workload)" },
		{ .name = "uncertainty", .short_name = 'u', .kind = KV_CLI_U64, .dst = &a->uncertainty,
		  .min = 1, .max = 100000, .what = "an integer from 1 to 100000", .arg = "N",
		  .help = "rerun N times with the step-time coefficients drawn from\n"
			  "their fitted intervals; a 5-95% band for every latency\n"
			  "metric in DIR/uncertainty.csv, uncertainty.png and the\n"
			  "printed summary (docs/metrics.md)" },
		{ .name = "quiet", .short_name = 'q', .kind = KV_CLI_FLAG, .dst = &a->quiet,
		  .help = "no progress line and no table" },
		{ .name = "progress", .kind = KV_CLI_FLAG, .dst = &a->progress,
		  .help = KV_CLI_PROGRESS_HELP },
		{ .name = "trace-out", .short_name = 't', .kind = KV_CLI_PATH, .dst = &a->trace_out,
		  .what = "a file path", .arg = "FILE",
		  .help = "write a Chrome/Perfetto trace-event timeline (JSON) of the\n"
			  "run to FILE (outputs.timeline: true writes DIR/timeline.json);\n"
			  "open it in https://ui.perfetto.dev (docs/timeline.md)" },
		{ .name = "trace-window", .kind = KV_CLI_FN, .dst = &a->trace, .fn = trace_window,
		  .what = "FROM:TO in seconds of simulated time, FROM < TO (e.g. 10:20, :5, 60:)",
		  .arg = "A:B", .help = "only iterations and requests starting in [A, B) seconds\n"
					"of simulated time (either side may be empty)" },
		{ .name = "trace-sample", .kind = KV_CLI_U64, .dst = &a->trace.sample, .min = 1,
		  .max = UINT64_MAX, .what = "an integer >= 1", .arg = "N",
		  .help = "trace one request in N (ids divisible by N), default 1" },
		{ .name = "trace-max-events", .kind = KV_CLI_U64, .dst = &a->trace.max_events,
		  .max = UINT64_MAX, .what = "a non-negative integer", .arg = "N",
		  .help = "stop starting spans after N events, default 2000000\n"
			  "(0: no cap); open spans still end" },
		{ .name = NULL },
	};
	const struct kv_cli_cmd cmd = { .name = "run", .synopsis = run_synopsis, .desc = run_desc,
					.notes = run_notes, .positional = "workload file" };
	int rc;

	memset(a, 0, sizeof(*a));
	a->set.v = a->sets;
	a->trace = (struct kv_timeline_opts){ .to_ns = KV_NS_NEVER, .sample = 1,
					      .max_events = KV_TIMELINE_MAX_EVENTS };
	if ((rc = kv_cli_parse(&cmd, opts, argc, argv, &a->path)))
		return rc;
	a->n_sets = a->set.n;
	return 0;
}

static int fail(const struct kv_diag *d, int status)
{
	kv_diag_print(d, stderr);
	return status;
}

/* Flags for kv_out_open in a sweep's worker (kv_run_in_sweep); 0 for a plain run. */
static unsigned sweep_flags;

void kv_run_in_sweep(void)
{
	sweep_flags = KV_OUTDIR_FORCE | KV_OUTDIR_NOLOCK;
}

/*
 * The output directory: -o, else outputs.dir, else out/NAME.  A name that
 * would leave out/ ('/' in it, "." or "..") is refused: the user asked for
 * a directory under out/.  Returns a heap string, or NULL with d filled.
 */
static char *out_dir(const struct kv_workload *w, const struct run_args *a, struct kv_diag *d)
{
	if (a->out)
		return kv_xstrdup(a->out);
	if (w->out_dir[0])
		return kv_xstrdup(w->out_dir);
	if (strchr(w->name, '/') || !strcmp(w->name, ".") || !strcmp(w->name, "..") || !w->name[0]) {
		kv_diag_set(d, KV_EINVAL, w->path, 0, 0, "name",
			    "bad value '%s': the default output directory is out/NAME, so expected a "
			    "name without '/' that is not '.' or '..' (or give -o DIR)", w->name);
		return NULL;
	}
	return kv_xasprintf("out/%s", w->name);
}

/*
 * The manifest's configuration lines: a 64-bit FNV-1a digest of the
 * workload file's bytes, then of each --set in order (so two runs with the
 * same digest and seed have the same inputs, given the same profiles and
 * traces).  The file is read again, bounded; an unreadable file gives no
 * digest line.
 */
static char *config_lines(const struct kv_workload *w, const struct run_args *a)
{
	uint64_t h = KV_FNV_SEED;
	char buf[1 << 14];
	size_t i, total = 0;
	ssize_t n;
	int fd = open(w->path, O_RDONLY | O_CLOEXEC | O_NONBLOCK); /* read(2): no allocation */

	if (fd < 0)
		return kv_xstrdup("");
	while ((n = read(fd, buf, sizeof(buf))) > 0 && total < (64u << 20)) {
		h = kv_fnv1a(h, buf, (size_t)n);
		total += (size_t)n;
	}
	close(fd);
	for (i = 0; i < a->n_sets; i++)
		h = kv_fnv1a(h, a->sets[i], strlen(a->sets[i]) + 1);
	return kv_xasprintf("config %s\nsets %zu\nconfig_digest fnv1a64:%016llx\n", w->path,
			    a->n_sets, (unsigned long long)h);
}

/* The run's timeline: a file staged in the run directory, or one written atomically elsewhere. */
struct trace_file {
	struct kv_timeline tl; /* the writer */
	FILE *f; /* the stream, NULL when no timeline */
	struct kv_atomic at; /* a file outside DIR (at.f == f), unused when staged */
	int staged; /* f is in DIR's staging directory (committed with the run) */
	int pending; /* closed under at.tmp, renamed to at.path after the run's commit */
	int lock; /* kv_path_lock of a file outside DIR, held to the end of the command; -1: none */
};

/*
 * path made absolute with its symbolic links resolved, as far as it exists
 * (the rest appended as written); a heap string, NULL when it cannot be.
 */
static char *resolve(const char *path)
{
	char *r = realpath(path, NULL), *copy, *slash, *parent;

	if (r || errno != ENOENT)
		return r;
	copy = kv_xstrdup(path);
	slash = strrchr(copy, '/');
	while (slash && slash > copy && slash[1] == 0) /* trailing slashes */
		*slash = 0, slash = strrchr(copy, '/');
	if (!slash) {
		parent = realpath(".", NULL);
		r = parent ? kv_xasprintf("%s/%s", parent, copy) : NULL;
	} else {
		*slash = 0;
		parent = resolve(slash == copy ? "/" : copy);
		if (parent && !strcmp(slash + 1, ".")) { /* missing parts: "." and ".." by hand */
			r = parent, parent = NULL;
		} else if (parent && !strcmp(slash + 1, "..")) {
			char *up = strrchr(parent, '/');

			if (up)
				up[up == parent] = 0;
			r = parent, parent = NULL;
		} else {
			r = parent ? kv_xasprintf("%s/%s", strcmp(parent, "/") ? parent : "", slash + 1) :
				     NULL;
		}
	}
	free(parent);
	free(copy);
	return r;
}

/*
 * Where file lies against the output directory dir (existing or not):
 * 1 directly in it, -1 deeper inside it, 0 elsewhere (or unresolvable).
 */
static int path_in_dir(const char *file, const char *dir)
{
	char *f = resolve(file), *dr = resolve(dir), *slash;
	size_t n;
	int where = 0;

	if (f && dr && (slash = strrchr(f, '/')) && slash[1]) {
		*slash = 0;
		n = strlen(dr);
		if (!strcmp(f, dr))
			where = 1;
		else if (!strncmp(f, dr, n) && f[n] == '/')
			where = -1;
	}
	free(f);
	free(dr);
	return where;
}

/*
 * Opens the timeline file: --trace-out FILE (in the staging directory when
 * FILE is DIR/NAME, so it is committed with the run), else DIR/timeline.json
 * when outputs.timeline is set.  A file outside DIR is locked (kv_path_lock)
 * and must be a regular file or new.  Returns 0, or KV_EIO (cannot create,
 * locked by another kvsim) or KV_EINVAL (a special file) with d filled.
 */
static int trace_open(struct trace_file *tf, struct kv_out *out, const char *dir,
		      const struct run_args *a, struct kv_diag *d)
{
	static char buf[1 << 16];
	const char *name = NULL;
	char *path;
	int fd = -1, where = 0;

	if (!a->trace_out)
		name = "timeline.json";
	else if ((where = path_in_dir(a->trace_out, dir)) > 0)
		name = strrchr(a->trace_out, '/') + 1;
	if (where < 0)
		return kv_diag_set(d, KV_EINVAL, a->trace_out, 0, 0, "--trace-out",
				   "a file in a subdirectory of the output directory %s, which is "
				   "replaced whole by the run: expected a file directly in it or outside it",
				   dir);
	if (name) {
		path = kv_outdir_stage_path(&out->od, name);
		if (!kv_fault_write())
			fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
		if (fd >= 0 && !(tf->f = kv_out_fdopen(fd)))
			close(fd);
		free(path);
		if (!tf->f) {
			path = kv_outdir_final_path(&out->od, name);
			kv_diag_set(d, KV_EIO, path, 0, 0, "", "cannot create: %s", strerror(errno));
			free(path);
			return KV_EIO;
		}
		tf->staged = 1;
	} else {
		int rc = kv_atomic_check(a->trace_out, d);

		if (rc || (tf->lock = kv_path_lock(a->trace_out, d)) < 0)
			return rc ? rc : KV_EIO;
		if ((rc = kv_atomic_open(&tf->at, a->trace_out, d)))
			return rc;
		tf->f = tf->at.f;
	}
	setvbuf(tf->f, buf, _IOFBF, sizeof(buf));
	kv_timeline_open(&tf->tl, tf->f, &a->trace);
	return 0;
}

/*
 * Finishes and closes the timeline (ok: the run succeeded, else it is
 * dropped); 0 or KV_EIO.  A file outside the run directory stays under its
 * temporary name until trace_commit(), after the run's own commit.
 */
static int trace_close(struct trace_file *tf, const struct kv_sim *s, const char *path, int ok,
		       struct kv_diag *d)
{
	int bad;

	if (!tf->f)
		return 0;
	bad = ok && kv_timeline_finish(&tf->tl, s);
	kv_timeline_release(&tf->tl);
	errno = 0;
	bad |= fflush(tf->f) != 0 || ferror(tf->f);
	bad |= fclose(tf->f) != 0;
	tf->f = tf->at.f = NULL;
	tf->pending = !tf->staged && ok && !bad;
	if (!tf->staged && !tf->pending)
		unlink(tf->at.tmp);
	if (ok && bad)
		return kv_diag_set(d, KV_EIO, path, 0, 0, "", "write failed: %s; no output written",
				   strerror(errno ? errno : EIO));
	return 0;
}

/*
 * Renames a timeline written outside the run directory into place once the
 * run is committed (run_ok), or removes it.  Returns 0 or 1 (message printed).
 */
static int trace_commit(struct trace_file *tf, int run_ok)
{
	if (!tf->pending)
		return 0;
	tf->pending = 0;
	if (run_ok && !kv_out_rename(tf->at.tmp, tf->at.path))
		return 0;
	unlink(tf->at.tmp);
	if (!run_ok)
		return 0;
	fprintf(stderr, "kvsim: %s: cannot rename into place: %s; the run is written, its timeline is not\n",
		tf->at.path, strerror(errno ? errno : EIO));
	return 1;
}

/*
 * Tokens per block of a cache model's private state: its `block_tokens`
 * option, or 0 when it has none or its `layout` option says "full" (a
 * reservation per request, no blocks).
 */
static uint64_t cache_block_tokens(const struct kv_cache_ops *c, const void *priv)
{
	uint64_t bt = 0;
	int layout = -1;

	for (const struct kv_option *o = c->options; o && o->name; o++) {
		if (!strcmp(o->name, "block_tokens") && o->type == KV_OPT_U64)
			memcpy(&bt, (const char *)priv + o->offset, sizeof(bt));
		else if (!strcmp(o->name, "layout") && o->type == KV_OPT_ENUM)
			memcpy(&layout, (const char *)priv + o->offset, sizeof(layout));
	}
	for (const struct kv_option *o = c->options; o && o->name; o++)
		if (layout >= 0 && !strcmp(o->name, "layout") && !strcmp(o->names[layout], "full"))
			return 0;
	return bt;
}

/*
 * The summary's KV line, one per replica group (named when there are
 * several): the pool in tokens and, for a block cache model, in its own
 * blocks.
 */
static void print_kv_line(const struct kv_sim *s)
{
	uint32_t i;

	for (i = 0; i < s->n_grp; i++) {
		const struct kv_group *g = &s->grp[i];
		const struct kv_replica *r = &s->rep[g->first];
		uint64_t bt;
		char blocks[64] = "", name[48] = "";

		if (!g->count) {
			printf("group %s: no replicas\n", g->cfg->group_name);
			continue;
		}
		bt = cache_block_tokens(r->cache, r->cache_priv);
		if (bt)
			snprintf(blocks, sizeof(blocks), " (%llu blocks of %llu)",
				 (unsigned long long)(g->mem.kv_tokens / bt), (unsigned long long)bt);
		if (s->n_grp > 1)
			snprintf(name, sizeof(name), "group %s: ", g->cfg->group_name);
		printf("%sKV cache: %llu tokens%s per replica, cache %s%s, memory.model %s%s\n", name,
		       (unsigned long long)g->mem.kv_tokens, blocks, r->cache->name,
		       r->cache != g->cfg->cache ? " (the engine's prefix cache)" : "",
		       kv_mem_model_name(g->cfg->mem.model),
		       g->mem.pinned ? " (pinned by memory.kv_tokens or kv_blocks)" : "");
	}
}

/* What the runs after the main one found: the saturation check and the bands. */
struct extra {
	struct kv_load load; /* offered load against capacity */
	int warn; /* load.share above KV_LOAD_WARN_SHARE: the sensitivity was run */
	double ttft_p50_s; /* the run's TTFT p50, s */
	double sens[2]; /* TTFT p50 at step time -3% and +3%, s */
	int bands_on; /* --uncertainty N given */
	struct kv_bands bands; /* their bands */
	int chart_failed; /* uncertainty.png failed */
};

/* Step-time change of the sensitivity runs near saturation: +-3%. */
#define SENSITIVITY_REL 0.03
/*
 * Above this share of capacity a run is overloaded, not near the knee: its
 * queue grows through the arrivals whatever a few percent of step time do,
 * so the warning says so without the two extra runs.
 */
#define OVERLOAD_SHARE 2.0

/*
 * The runs after the main one, before the commit: near saturation two runs
 * at +-3% step time (not in a sweep's points: a sweep crosses the knee on
 * purpose), and --uncertainty's draws, written into the staging directory.
 * Returns 0 or an error code with d filled.
 */
static int extra_runs(const struct kv_workload *w, const struct run_args *a,
		      const struct kv_sim *s, struct kv_out *out, struct extra *x, struct kv_diag *d)
{
	double point[KV_BAND_METRICS];
	int rc = 0;

	memset(x, 0, sizeof(*x));
	kv_load_compute(s, &x->load);
	kv_band_metrics(s, point);
	x->ttft_p50_s = point[1];
	x->warn = x->load.share > KV_LOAD_WARN_SHARE && !sweep_flags;
	if (x->warn && x->load.share <= OVERLOAD_SHARE &&
	    (rc = kv_sensitivity(&w->cfg, SENSITIVITY_REL, &stop_flag, x->sens, d)))
		return rc;
	if (!a->uncertainty)
		return 0;
	x->bands_on = 1;
	if ((rc = kv_bands_run(&w->cfg, (uint32_t)a->uncertainty, point, &stop_flag, &x->bands, d)))
		return rc;
	return kv_bands_write(&x->bands, out->od.stage, w->name, w->chart, &x->chart_failed, d);
}

/* The longest-context warning (memory.context_check warn, SGLang's default) on stderr. */
static void warn_context(const struct kv_sim *s)
{
	if (!s->ctx_over_max_tokens)
		return;
	fprintf(stderr,
		"kvsim: warning: the longest context, %llu tokens, is more than one replica's KV cache "
		"holds (%llu tokens); %llu requests beyond it were rejected, as SGLang caps a request at "
		"its pool (vLLM would refuse to start; memory.context_check, docs/memory.md)\n",
		(unsigned long long)s->ctx_over_max_tokens, (unsigned long long)s->grp[0].ctx_cap_tokens,
		(unsigned long long)s->ctx_over_requests);
}

/* The saturation warning on stderr (printed with -q too); a burst's note instead. */
static void warn_saturation(const struct kv_sim *s, const struct extra *x)
{
	if (x->load.burst && !sweep_flags) {
		fprintf(stderr,
			"kvsim: note: all %llu requests arrive within %.3g s, less than the %.3g s the "
			"cluster takes per request at capacity: an offline batch, so load_share is not "
			"defined (docs/metrics.md \"Load\")\n",
			(unsigned long long)s->arrived, x->load.arrival_span_s,
			1.0 / x->load.capacity_req_s);
		return;
	}
	if (!x->warn)
		return;
	if (x->load.share > OVERLOAD_SHARE) {
		fprintf(stderr,
			"kvsim: warning: offered load is %.3g times capacity (%.4g of %.4g req/s): the "
			"cluster is overloaded and its queue grows through the arrivals, so latencies "
			"reflect the run's length (docs/metrics.md \"Load\")\n",
			x->load.share, x->load.offered_req_s, x->load.capacity_req_s);
		return;
	}
	fprintf(stderr,
		"kvsim: warning: offered load is %.0f%% of capacity (%.4g of %.4g req/s): near "
		"saturation the prediction is knife-edge; TTFT p50 %.4g s becomes %.4g s at -3%% "
		"step time and %.4g s at +3%% (docs/metrics.md \"Load\")\n",
		100 * x->load.share, x->load.offered_req_s, x->load.capacity_req_s, x->ttft_p50_s,
		x->sens[0], x->sens[1]);
}

/* simulate(), with the timeline's state in *tf (its lock for the caller to release). */
static int simulate_to(struct kv_workload *w, const struct run_args *a, struct kv_sim *s,
		       struct trace_file *tf)
{
	struct kv_summary sum;
	struct kv_diag d;
	struct kv_out out;
	struct kv_sink sink;
	struct extra x;
	char *dir = out_dir(w, a, &d);
	int rc, trace_failed;

	if (!dir)
		return fail(&d, 2);
	catch_signals();
	rc = kv_out_open(&out, dir, w, sweep_flags | (a->force ? KV_OUTDIR_FORCE : 0), &d);
	if (rc) {
		kv_out_abort(&out);
		free(dir);
		return fail(&d, rc == KV_EINVAL ? 2 : 1);
	}
	out.header = config_lines(w, a);
	if ((a->trace_out || w->timeline) && (rc = trace_open(tf, &out, dir, a, &d))) {
		kv_out_abort(&out);
		free(dir);
		return fail(&d, rc == KV_EINVAL ? 2 : 1);
	}
	if (tf->f)
		kv_timeline_attach(&tf->tl, &w->cfg);
	sink = kv_out_sink(&out);
	s->sink = sink;
	s->stop = &stop_flag;
	kv_progress_init(a->quiet, a->progress);
	rc = kv_sim_run(s);
	kv_progress_done();
	if (rc == KV_EIO)
		kv_out_error(&out, &d);
	if (trace_close(tf, s, a->trace_out ? a->trace_out : "timeline.json", !rc && !stop_flag,
			&d) && !rc)
		rc = KV_EIO;
	if (rc || stop_flag)
		kv_out_abort(&out);
	if (stop_flag || rc) /* whatever else happened, the user asked to stop */
		free(dir);
	if (stop_flag)
		return interrupted(s, rc == KV_EINTR ? "at" : "after");
	if (rc == KV_EIO)
		return fail(&d, 1);
	if (rc) {
		if (!s->diag.file[0])
			snprintf(s->diag.file, sizeof(s->diag.file), "%.*s",
				 (int)sizeof(s->diag.file) - 1, w->path);
		return fail(&s->diag, 2);
	}
	if ((rc = extra_runs(w, a, s, &out, &x, &d))) {
		kv_out_abort(&out);
		free(dir);
		if (stop_flag)
			return interrupted(s, "after");
		return fail(&d, rc == KV_EIO ? 1 : 2);
	}
	/* a signal from here on is not honoured: the commit is short and all-or-nothing */
	rc = kv_out_commit(&out, s, &sum, &d);
	kv_out_abort(&out);
	trace_failed = trace_commit(tf, !rc);
	if (rc) {
		free(dir);
		return fail(&d, 1);
	}
	if (!a->quiet) {
		char title[512];

		if (w->cfg.n_groups) { /* the groups' setup (manifest's line) */
			char *setup = kv_run_setup(w);

			snprintf(title, sizeof(title), "%s: %s", w->name, setup);
			free(setup);
		} else {
			snprintf(title, sizeof(title), "%s: %s on %u x %s, %s / %s", w->name,
				 w->cfg.model.name, w->cfg.replicas, w->cfg.device.name,
				 w->cfg.sched->name, w->cfg.cache->name);
		}
		kv_summary_print(&sum, title, stdout);
		print_kv_line(s);
		kv_health_print(&out.health, stdout);
		if (x.bands_on)
			kv_bands_print(&x.bands, stdout);
		printf("outputs in %s/\n", dir);
	}
	warn_context(s);
	warn_saturation(s, &x);
	free(dir);
	if (trace_failed)
		return 1;
	if (out.chart_failed || x.chart_failed) {
		fprintf(stderr, "kvsim: the CSVs are written, the chart is not: retry with kvsim plot DIR\n");
		return 1;
	}
	return fflush(stdout) || ferror(stdout) ? 1 : 0;
}

/* Runs the simulation into the output directory; returns the exit status.  A
 * --trace-out file's lock is held until the timeline is renamed into place. */
static int simulate(struct kv_workload *w, const struct run_args *a, struct kv_sim *s)
{
	struct trace_file tf = { .lock = -1 };
	int rc = simulate_to(w, a, s, &tf);

	if (tf.lock >= 0)
		close(tf.lock);
	return rc;
}

int kv_cmd_run(int argc, char **argv)
{
	struct run_args a;
	struct kv_workload w;
	struct kv_sim s;
	struct kv_diag d;
	int rc = parse_args(argc, argv, &a);

	if (rc)
		return rc < 0 ? 0 : rc;
	if (kv_workload_load(&w, a.path, a.sets, a.n_sets, a.has_seed, a.seed, &d)) {
		kv_workload_release(&w);
		return fail(&d, 2);
	}
	if (a.check_pool)
		w.cfg.check_pool = 1;
	if (a.exact_steps)
		w.cfg.exact_steps = 1;
	if (a.trace_out || w.timeline)
		w.cfg.exact_steps = 1; /* the timeline observes every iteration */
	if (kv_sim_init(&s, &w.cfg, NULL)) {
		if (!s.diag.file[0])
			snprintf(s.diag.file, sizeof(s.diag.file), "%s", a.path);
		rc = fail(&s.diag, 2);
	} else {
		rc = simulate(&w, &a, &s);
		if (getenv("KVSIM_MACRO_STATS")) /* for tests/macro_test.sh and bench/ */
			fprintf(stderr, "kvsim: macro steps: %llu of %llu events\n",
				(unsigned long long)s.macro_steps, (unsigned long long)s.events);
	}
	kv_sim_release(&s);
	kv_workload_release(&w);
	return rc;
}
