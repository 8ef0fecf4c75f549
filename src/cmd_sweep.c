/*
 * cmd_sweep.c -- `kvsim sweep`: run a base workload over a grid of --set
 * overrides in parallel worker processes, and `kvsim sweep-merge`: join
 * the sweep.csv files of shards.
 *
 * A sweep file (docs/sweeps.md) names a base workload, axes (a cartesian
 * product, first axis slowest), zip groups (axes that vary together, one
 * more dimension each) and seeds (fastest).  Every point is one run of the
 * base workload with its overrides, exactly as `kvsim run -q --seed S
 * --set k=v...` would do it, in a forked child, into DIR/points/<key>/ where
 * key is the FNV-1a hash (with splitmix64's finaliser) of the base file's bytes, the sorted overrides and
 * the seed: a rerun finds a finished point (its summary.csv exists) and does
 * not run it again.  The parent keeps -j children busy and writes
 * DIR/sweep.csv (temporary file + rename) with one row per finished point
 * in point order, so the file does not depend on -j or on the order in which
 * children finish.  Invariant: sweep.csv holds only whole rows of points
 * whose run ended (ok or error); an interrupted point has no row.
 */
#include "sweep.h"
#include "sweep_mpi.h"
#include "opts.h"
#include "status.h"

#include "lib/cfg.h"
#include "lib/csv.h"
#include "lib/output.h"
#include "lib/workload.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <signal.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* --- kvsim sweep --------------------------------------------------------- */

static const char *const sweep_synopsis[] = { "[options] SWEEP.yaml", NULL };

static const char sweep_desc[] =
	"Runs the base workload of the sweep file once per point of its grid (axes\n"
	"x zip groups x seeds), each point as `kvsim run -q --seed S --set k=v...`\n"
	"in its own process, into DIR/points/KEY/; writes DIR/sweep.csv with one row\n"
	"per point (its axis values, seed, status, error and summary.csv columns).\n"
	"Points already finished (DIR/points/KEY/summary.csv exists) are not rerun.\n"
	"Under `mpirun -n R` (kvsim built with MPI) the points are spread over the R\n"
	"ranks and rank 0 writes sweep.csv.  See docs/sweeps.md.\n";

static const char sweep_notes[] =
	"exit status: 0 every point ok, 1 some point failed (sweep.csv written),\n"
	"2 bad sweep file or usage, 3 out of memory, 130 interrupted by SIGINT and\n"
	"143 by SIGTERM (rerun to complete)\n";

/* --shard I/N into the sweep_args at dst; -1 unless 1 <= I <= N. */
static int parse_shard(const char *s, void *dst)
{
	struct sweep_args *a = dst;
	char *end;

	errno = 0;
	a->shard = strtol(s, &end, 10);
	if (errno || *end != '/' || end == s)
		return -1;
	s = end + 1;
	a->n_shards = strtol(s, &end, 10);
	if (errno || *end || end == s || a->n_shards < 1 || a->shard < 1 || a->shard > a->n_shards)
		return -1;
	return 0;
}

static int sweep_parse_args(int argc, char **argv, struct sweep_args *a)
{
	const struct kv_cli_opt opts[] = {
		{ .name = "jobs", .short_name = 'j', .kind = KV_CLI_LONG, .dst = &a->jobs, .min = 1,
		  .max = 4096, .what = "1..4096", .label = "-j", .arg = "N",
		  .help = "worker processes (default: the online CPUs)" },
		{ .name = "output", .short_name = 'o', .kind = KV_CLI_PATH, .dst = &a->out,
		  .what = "a directory path", .label = "-o", .arg = "DIR",
		  .help = "output directory (default: out/NAME)" },
		{ .name = "shard", .kind = KV_CLI_FN, .dst = a, .fn = parse_shard,
		  .what = "I/N with 1 <= I <= N", .arg = "I/N",
		  .help = "run only the points whose index mod N is I-1" },
		{ .name = "quiet", .short_name = 'q', .kind = KV_CLI_FLAG, .dst = &a->quiet,
		  .help = "no progress line and no closing line" },
		{ .name = "progress", .kind = KV_CLI_FLAG, .dst = &a->progress,
		  .help = KV_CLI_PROGRESS_HELP },
		{ .name = "target-mean", .kind = KV_CLI_FLAG, .dst = &a->target_mean,
		  .help = "judge the target on the mean over seeds, not on the\n"
			  "95% confidence interval's pessimistic end" },
		{ .name = "pareto", .kind = KV_CLI_PATH, .dst = &a->pareto, .what = "two metrics A,B",
		  .label = "--pareto", .arg = "A,B",
		  .help = "write pareto.csv: the configurations no other beats on\n"
			  "summary columns A and B (e.g. gpus,ttft_p99_s)" },
		{ .name = NULL },
	};
	const struct kv_cli_cmd cmd = { .name = "sweep", .synopsis = sweep_synopsis,
					.desc = sweep_desc, .notes = sweep_notes,
					.positional = "sweep file" };

	memset(a, 0, sizeof(*a));
	a->jobs = sysconf(_SC_NPROCESSORS_ONLN);
	if (a->jobs < 1)
		a->jobs = 1;
	a->shard = a->n_shards = 1;
	return kv_cli_parse(&cmd, opts, argc, argv, &a->path);
}

/* 1 when summary.csv has column `metric` only with a workload `slo:` (sim/metrics.c). */
static int slo_only(const char *metric)
{
	static const char *const names[] = { "slo_attainment", "goodput_req_s", "goodput_tok_s",
					     "slo_met", "gpus", NULL };

	for (size_t i = 0; names[i]; i++)
		if (!strcmp(metric, names[i]))
			return 1;
	return 0;
}

/*
 * The target's node naming metric: target.metric, or the meet string (or
 * list item) that holds it.
 */
static struct kv_cfg_node *target_node(const struct sweep *sw, const char *metric)
{
	struct kv_cfg_node *t = kv_cfg_get(sw->doc.root, "target");
	struct kv_cfg_node *m = kv_cfg_get(t, "meet");

	if (!m)
		return kv_cfg_get(t, "metric");
	if (m->type == KV_CFG_SEQ)
		for (struct kv_cfg_node *c = m->child; c; c = c->next)
			if (c->value && strstr(c->value, metric))
				return c;
	return m;
}

/*
 * A target on an SLO column (slo_attainment, goodput, gpus) where no point
 * has an slo: section (not the base with `set:`, no axis under slo.) would
 * run every point and judge nothing: refused at the condition, exit 2.
 */
static int check_target_slo(const struct sweep *sw, const struct kv_workload *w,
			    struct kv_diag *d)
{
	size_t i;

	if (!sw->has_target || w->slo.on)
		return 0;
	for (i = 0; i < sw->n_axes; i++)
		if (!strncmp(sw->axis[i].key, "slo", 3) && (!sw->axis[i].key[3] ||
							     sw->axis[i].key[3] == '.'))
			return 0;
	for (i = 0; i < sw->n_cond; i++)
		if (slo_only(sw->cond[i].metric))
			return kv_cfg_error(target_node(sw, sw->cond[i].metric), d,
					    "'%s' is a column only with an slo: section, and the base "
					    "workload %s (with set:) has none: expected slo: in the base "
					    "or in set: (e.g. set: {slo: {ttft: 1s}})",
					    sw->cond[i].metric, sw->base);
	return 0;
}

/*
 * Loads the base workload with the `set:` overrides, so a broken base is a
 * bad sweep file, and checks the target against it (check_target_slo).
 */
static int check_base(const struct sweep *sw, struct kv_diag *d)
{
	struct kv_workload w;
	int rc = kv_workload_load(&w, sw->base, sw->sets, sw->n_sets, 0, 0, d);

	if (!rc)
		rc = check_target_slo(sw, &w, d);
	kv_workload_release(&w);
	return rc;
}

int kv_sweep_check_mem(const char *name, const char *text, size_t len, size_t *n_points,
		       struct kv_diag *d)
{
	struct sweep sw;
	int rc;

	memset(&sw, 0, sizeof(sw));
	rc = kv_cfg_load_mem(&sw.doc, name, text, len, d);
	if (!rc)
		rc = kv__sweep_read(&sw, name, d);
	if (!rc)
		rc = kv__sweep_expand(&sw, d);
	if (!rc)
		rc = check_base(&sw, d);
	*n_points = rc ? 0 : sw.n_pt;
	kv__sweep_release(&sw);
	return rc;
}

static void install_handlers(void)
{
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = kv__sweep_on_signal; /* no SA_RESTART: waitpid returns EINTR */
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
}

static int sweep_finish(struct runner *r)
{
	struct sweep *sw = r->sw;
	int rc = kv__sweep_write_sweep_csv(sw, r->out);

	if (kv__sweep_stop) {
		fprintf(stderr, "kvsim: sweep: interrupted by %s after %zu of %zu points; %s/sweep.csv has them, rerun to complete\n",
			kv__sweep_stop == SIGINT ? "SIGINT" : "SIGTERM", r->done, r->total, r->out);
		return KV_EXIT_SIGNAL(kv__sweep_stop);
	}
	if (rc)
		return 1;
	if (r->failed)
		fprintf(stderr, "kvsim: sweep: %zu of %zu points failed (see the error column of %s/sweep.csv)\n",
			r->failed, r->total, r->out);
	if (!r->a->quiet)
		printf("sweep %s: %zu points (%zu run, %zu already done), %zu failed; %s/sweep.csv\n",
		       sw->name, r->total, r->ran, r->done - r->ran, r->failed, r->out);
	if (sw->has_target)
		kv__sweep_report_target(sw);
	if (sw->has_target && kv__sweep_write_target(sw, r->out))
		return 1;
	if (kv__sweep_write_stats(sw, r->out))
		return 1;
	if (sw->pareto[0][0] && kv__sweep_pareto(sw, r->out, r->a->quiet))
		return 1;
	/* the default charts (gnuplot absent: a note saying how to install it) */
	if (r->done > r->failed && sw->n_axes > 0) {
		if (kv__sweep_write_labels(sw, r->out))
			return 1;
		kv_plot_sweep(r->out, sw->name, "ttft_p99_s", NULL, NULL, r->a->quiet);
		kv_plot_sweep(r->out, sw->name, "throughput_tok_s", NULL, NULL, r->a->quiet);
	}
	return fflush(stdout) || ferror(stdout) || r->failed ? 1 : 0;
}

/* --target-mean and --pareto over the sweep file's; 0 or KV_EINVAL with d filled. */
static int cli_report(struct sweep *sw, const struct sweep_args *a, struct kv_diag *d)
{
	char err[512];

	if (a->target_mean)
		sw->t_mean = 1;
	if (a->pareto && kv__sweep_set_pareto(sw, a->pareto, err, sizeof(err)))
		return kv_diag_set(d, KV_EINVAL, "--pareto", 0, 0, "", "%s: expected two summary.csv "
				   "columns A,B, e.g. gpus,ttft_p99_s (kvsim list metrics)", err);
	return 0;
}

/*
 * The sweep's output directory into out (KV_PATH_MAX bytes): -o, else
 * out/NAME.  Refuses a path too long for its points' files and a name that
 * would leave out/.  Returns 0 or 2 with d filled.
 */
static int out_dir(const struct sweep *sw, const struct sweep_args *a, char *out,
		   struct kv_diag *d)
{
	size_t n;

	if (!a->out && (strchr(sw->name, '/') || !strcmp(sw->name, ".") ||
			!strcmp(sw->name, "..") || !sw->name[0])) {
		kv_diag_set(d, KV_EINVAL, sw->doc.path, 0, 0, "name",
			    "bad value '%s': the default output directory is out/NAME, so expected a "
			    "name without '/' that is not '.' or '..' (or give -o DIR)", sw->name);
		return 2;
	}
	n = a->out ? strlen(a->out) : 4 + strlen(sw->name);
	if (n + SWEEP_SUFFIX_MAX >= KV_PATH_MAX) {
		kv_diag_set(d, KV_EINVAL, "-o", 0, 0, "",
			    "path of %zu bytes is too long: expected at most %d bytes", n,
			    KV_PATH_MAX - SWEEP_SUFFIX_MAX - 1);
		return 2;
	}
	snprintf(out, KV_PATH_MAX, a->out ? "%s" : "out/%s", a->out ? a->out : sw->name);
	return 0;
}

/*
 * The files the sweep writes into DIR at its end are regular or new
 * (kv_atomic_check), so a special file there is refused before the first
 * point rather than after the last.  0 or KV_EINVAL with d filled.
 */
static int check_outputs(const char *out, struct kv_diag *d)
{
	static const char *const names[] = { "sweep.csv", "sweep_stats.csv", "target.csv",
					     "pareto.csv", "pareto_all.csv", NULL };
	char path[PT_PATH];

	for (size_t i = 0; names[i]; i++) {
		snprintf(path, sizeof(path), "%s/%s", out, names[i]);
		if (kv_atomic_check(path, d))
			return KV_EINVAL;
	}
	return 0;
}

/*
 * Locks the sweep's directory for the whole sweep (outdir.h's lock beside
 * it) and removes the staging directories of points whose runs were killed
 * (points/.KEY.tmp-*): their runs are this sweep's, so holding the lock
 * makes them stale.  Returns the lock's descriptor or -1 with d filled.
 */
static int lock_sweep_dir(const char *out, struct kv_diag *d)
{
	char pts[PT_PATH];
	int fd = kv_path_lock(out, d);
	struct dirent *e;
	DIR *dp;

	if (fd < 0)
		return -1;
	snprintf(pts, sizeof(pts), "%s/points", out);
	dp = opendir(pts);
	while (dp && (e = readdir(dp))) {
		char *p;

		if (e->d_name[0] != '.' || !strstr(e->d_name, ".tmp-"))
			continue;
		p = kv_xasprintf("%s/%s", pts, e->d_name);
		kv_rmtree(p);
		free(p);
	}
	if (dp)
		closedir(dp);
	return fd;
}

/*
 * Runs the sweep's points (those of a's shard) and, when finish is set,
 * writes sweep.csv, the charts and the report.  lock: take the output
 * directory's lock (an MPI rank other than 0 runs under rank 0's).
 * Returns the exit status.
 */
static int sweep_once(struct sweep_args *a, int finish, int lock)
{
	struct sweep sw;
	struct runner r;
	struct kv_diag d;
	size_t i;
	int rc;

	if (kv__sweep_load(&sw, a->path, &d) || kv__sweep_expand(&sw, &d) || check_base(&sw, &d) ||
	    cli_report(&sw, a, &d)) {
		kv_diag_print(&d, stderr);
		kv__sweep_release(&sw);
		return 2;
	}
	memset(&r, 0, sizeof(r));
	r.sw = &sw;
	r.a = a;
	if ((rc = out_dir(&sw, a, r.out, &d))) {
		kv_diag_print(&d, stderr);
		kv__sweep_release(&sw);
		return rc;
	}
	if (kv_mkdirs(r.out)) {
		fprintf(stderr, "kvsim: %s: cannot create: %s\n", r.out, strerror(errno));
		kv__sweep_release(&sw);
		return 1;
	}
	r.lock_fd = -1;
	if (lock && (r.lock_fd = lock_sweep_dir(r.out, &d)) < 0) {
		kv_diag_print(&d, stderr);
		kv__sweep_release(&sw);
		return 1;
	}
	if (check_outputs(r.out, &d)) {
		kv_diag_print(&d, stderr);
		kv__sweep_release(&sw);
		if (r.lock_fd >= 0)
			close(r.lock_fd);
		return 2;
	}
	for (i = 0; i < sw.n_pt; i++)
		r.total += kv__sweep_in_shard(a, i);
	r.pid = kv_xcalloc((size_t)a->jobs, sizeof(*r.pid));
	r.slot_pt = kv_xcalloc((size_t)a->jobs, sizeof(*r.slot_pt));
	clock_gettime(CLOCK_MONOTONIC, &r.start);
	install_handlers();
	kv__sweep_run_points(&r);
	if (finish)
		rc = sweep_finish(&r);
	else
		rc = kv__sweep_stop ? KV_EXIT_SIGNAL(kv__sweep_stop) : 0;
	free(r.pid);
	free(r.slot_pt);
	if (r.lock_fd >= 0)
		close(r.lock_fd);
	kv__sweep_release(&sw);
	return rc;
}


#if KV_HAVE_MPI
/* The sweep as an MPI job (sweep_mpi.h): the arguments, and rank 0's lock. */
struct mpi_sweep {
	struct sweep_args *a;
	int lock_fd; /* the sweep directory's lock, held by rank 0 from prepare to release */
};

static int mpi_whole(void *ctx)
{
	struct mpi_sweep *m = ctx;

	return sweep_once(m->a, 1, 1);
}

/*
 * Rank 0's lock of the sweep's directory for the whole MPI sweep, kept
 * until release.  Returns 0 or the exit status.
 */
static int mpi_prepare(void *ctx)
{
	struct mpi_sweep *m = ctx;
	char out[KV_PATH_MAX];
	struct sweep sw;
	struct kv_diag d;
	int rc = 2;

	if (!kv__sweep_load(&sw, m->a->path, &d) && !(rc = out_dir(&sw, m->a, out, &d))) {
		rc = 1;
		if (kv_mkdirs(out))
			kv_diag_set(&d, KV_EIO, out, 0, 0, "", "cannot create: %s", strerror(errno));
		else if ((m->lock_fd = lock_sweep_dir(out, &d)) >= 0)
			rc = 0;
	}
	if (rc)
		kv_diag_print(&d, stderr);
	kv__sweep_release(&sw);
	return rc;
}

/* A rank's shard of the points, under rank 0's lock, without sweep.csv. */
static int mpi_part(void *ctx, long part, long n_parts)
{
	struct mpi_sweep *m = ctx;

	m->a->shard = part;
	m->a->n_shards = n_parts;
	return sweep_once(m->a, 0, 0);
}

/*
 * Rank 0 completes the sweep from the points' directories -- every point is
 * done by then, so it only reads them back -- and writes sweep.csv and the
 * charts, exactly as a single process would.
 */
static int mpi_finish(void *ctx)
{
	struct mpi_sweep *m = ctx;

	m->a->shard = m->a->n_shards = 1;
	return sweep_once(m->a, 1, 0);
}

static void mpi_release(void *ctx)
{
	struct mpi_sweep *m = ctx;

	if (m->lock_fd >= 0)
		close(m->lock_fd);
}

/* Under mpirun: rank k runs the points of shard k+1 of R, each with its -j workers. */
static int sweep_mpi(struct sweep_args *a)
{
	struct mpi_sweep m = { .a = a, .lock_fd = -1 };
	const struct kv_mpi_job job = { .name = "sweep", .sharded = a->n_shards > 1, .ctx = &m,
					.whole = mpi_whole, .prepare = mpi_prepare,
					.part = mpi_part, .finish = mpi_finish,
					.release = mpi_release };

	return kv__sweep_mpi(&job);
}
#endif


/* 1 when this process was started by mpirun (Open MPI or a PMI launcher). */
static int under_mpirun(void)
{
	return getenv("OMPI_COMM_WORLD_SIZE") || getenv("PMI_SIZE");
}

int kv_cmd_sweep(int argc, char **argv)
{
	struct sweep_args a;
	int rc = sweep_parse_args(argc, argv, &a);

	if (rc)
		return rc < 0 ? 0 : rc;
	if (under_mpirun()) {
#if KV_HAVE_MPI
		return sweep_mpi(&a);
#else
		fprintf(stderr, "kvsim: sweep: started by mpirun, but this kvsim was built without MPI (install libopenmpi-dev and reconfigure)\n");
		return 2;
#endif
	}
	return sweep_once(&a, 1, 1);
}
