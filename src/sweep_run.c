/*
 * sweep_run.c -- the worker pool: forked children run the points, -j at a
 * time, each into DIR/points/<key>/; the parent reaps them, reads their
 * summary.csv back and writes sweep.csv (point order, temporary file +
 * rename); the target report.  See sweep.h.
 */
#include "sweep.h"
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

/* --- running ------------------------------------------------------------- */

volatile sig_atomic_t kv__sweep_stop;

void kv__sweep_on_signal(int sig)
{
	kv__sweep_stop = sig;
}


/* Child: runs point p like `kvsim run -q` with stderr in error.txt; never returns. */
static void child_run(const struct sweep *sw, const struct point *p, const char *dir)
{
	char *argv[2 * SWEEP_MAX_SETS + 16], *sets[SWEEP_MAX_SETS], seed[32], err[PT_PATH];
	size_t i, n = kv__sweep_point_sets(sw, p, sets);
	int argc = 0, fd;

	signal(SIGINT, SIG_DFL);
	signal(SIGTERM, SIG_DFL);
	kv_run_in_sweep(); /* the sweep holds the lock and owns points/ */
	snprintf(err, sizeof(err), "%s/error.txt", dir);
	fd = open(err, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	if (fd >= 0) {
		dup2(fd, STDERR_FILENO);
		close(fd);
	}
	fd = open("/dev/null", O_WRONLY);
	if (fd >= 0) {
		dup2(fd, STDOUT_FILENO);
		close(fd);
	}
	snprintf(seed, sizeof(seed), "%llu", (unsigned long long)p->seed);
	argv[argc++] = (char *)"run";
	argv[argc++] = (char *)"-q";
	argv[argc++] = (char *)"-o";
	argv[argc++] = (char *)dir;
	argv[argc++] = (char *)"--seed";
	argv[argc++] = seed;
	for (i = 0; i < n; i++) {
		argv[argc++] = (char *)"--set";
		argv[argc++] = sets[i];
	}
	argv[argc++] = (char *)sw->base;
	argv[argc] = NULL;
	_exit(kv_cmd_run(argc, argv));
}

static void point_dir(const char *out, const struct point *p, char *buf, size_t len)
{
	snprintf(buf, len, "%s/points/%s", out, p->key);
}

/* The last non-empty line of the point's error.txt, or a description of st. */
static char *read_error(const char *dir, int st)
{
	char path[PT_PATH], *text, *line, *end;
	struct sbuf b = { 0 };
	size_t len;

	snprintf(path, sizeof(path), "%s/error.txt", dir);
	text = kv__sweep_slurp(path, &len);
	if (text) {
		for (end = text + len; end > text && (end[-1] == '\n' || end[-1] == ' '); end--)
			;
		*end = 0;
		line = strrchr(text, '\n');
		line = line ? line + 1 : text;
		if (!strncmp(line, "kvsim: ", 7))
			line += 7;
		if (*line)
			kv__sweep_sb_puts(&b, line);
		free(text);
	}
	if (!b.s) {
		if (WIFSIGNALED(st))
			kv__sweep_sb_printf(&b, "killed by signal %d", WTERMSIG(st));
		else
			kv__sweep_sb_printf(&b, "exit status %d", WEXITSTATUS(st));
	}
	return kv__sweep_sb_take(&b);
}

/* A copy of the n fields of r. */
static char **rec_dup(const struct kv_csv_rec *r)
{
	char **out = kv_xcalloc(r->n, sizeof(*out));
	size_t i;

	for (i = 0; i < r->n; i++)
		out[i] = kv_xstrdup(r->field[i]);
	return out;
}

/*
 * Reads the point's summary.csv (a header and one row, csv.h quoting) into
 * p->names/p->fields.  Returns 0, or -1 when it is absent, not two whole
 * lines, or its row has another number of fields than its header; then d
 * says why.
 */
static int read_summary(const char *dir, struct point *p, struct kv_diag *d)
{
	char path[PT_PATH], *text;
	struct kv_csv_rec h, v;
	unsigned long line = 1;
	size_t len, pos = 0;
	int ok;

	snprintf(path, sizeof(path), "%s/summary.csv", dir);
	text = kv__sweep_slurp(path, &len);
	if (!text) {
		kv_diag_set(d, KV_EIO, path, 0, 0, "", "cannot read: %s", strerror(errno));
		return -1;
	}
	kv_csv_rec_init(&h);
	kv_csv_rec_init(&v);
	ok = kv_csv_rec_parse(&h, text, len, &pos, &line, path, d) == 1 &&
	     kv_csv_rec_parse(&v, text, len, &pos, &line, path, d) == 1;
	if (ok && (pos != len || text[len - 1] != '\n' || h.n != v.n)) {
		kv_diag_set(d, KV_EINVAL, path, 0, 0, "",
			    "expected a header and one row of as many fields, %zu and %zu", h.n, v.n);
		ok = 0;
	} else if (!ok && !d->msg[0]) {
		kv_diag_set(d, KV_EINVAL, path, 0, 0, "", "expected a header and one row");
	}
	if (ok) {
		p->names = rec_dup(&h);
		p->fields = rec_dup(&v);
		p->n_fields = h.n;
	}
	kv_csv_rec_release(&h);
	kv_csv_rec_release(&v);
	free(text);
	return ok ? 0 : -1;
}


static double elapsed_s(const struct runner *r)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)(t.tv_sec - r->start.tv_sec) + (double)(t.tv_nsec - r->start.tv_nsec) * 1e-9;
}

/* The sweep's progress line (kv_progress_note's mode, set up by kv__sweep_run_points). */
static void progress(const struct runner *r, int final)
{
	double el = elapsed_s(r);
	size_t left = r->total - r->done;

	if (r->ran && left)
		kv_progress_note(final, "sweep: %zu/%zu points, %zu failed, %.0f s elapsed, ETA %.0f s",
				 r->done, r->total, r->failed, el, el / (double)r->ran * (double)left);
	else
		kv_progress_note(final, "sweep: %zu/%zu points, %zu failed, %.0f s elapsed", r->done,
				 r->total, r->failed, el);
}

/* Records the end of a child. */
static void reap(struct runner *r, pid_t pid, int st)
{
	struct point *p;
	char dir[PT_DIR], err[PT_PATH];
	struct kv_diag d = { 0 };
	struct stat sb;
	size_t k;

	for (k = 0; k < (size_t)r->a->jobs && r->pid[k] != pid; k++)
		;
	if (k == (size_t)r->a->jobs)
		return;
	r->pid[k] = 0;
	r->running--;
	p = &r->sw->pt[r->slot_pt[k]];
	point_dir(r->out, p, dir, sizeof(dir));
	if (kv__sweep_stop && (WIFSIGNALED(st) || (WIFEXITED(st) && (WEXITSTATUS(st) == 130 ||
								   WEXITSTATUS(st) == 143)))) {
		p->state = ST_TODO; /* interrupted: no row */
		return;
	}
	r->done++;
	r->ran++;
	if (WIFEXITED(st) && WEXITSTATUS(st) == 0 && !read_summary(dir, p, &d)) {
		p->state = ST_OK;
		snprintf(err, sizeof(err), "%s/error.txt", dir);
		if (!stat(err, &sb) && sb.st_size == 0)
			unlink(err);
	} else {
		p->state = ST_ERR;
		p->err = read_error(dir, st);
		if (WIFEXITED(st) && WEXITSTATUS(st) == 0) { /* the run ended well: say what is wrong */
			struct sbuf b = { 0 };

			kv__sweep_sb_printf(&b, "the run exited 0 but its %s:%lu: %s", d.file, d.line, d.msg);
			free(p->err);
			p->err = kv__sweep_sb_take(&b);
		}
		r->failed++;
	}
	progress(r, 0);
}

/* Starts point i in a free slot; returns 0, or -1 when fork or mkdir failed (then ST_ERR). */
static int launch(struct runner *r, size_t i)
{
	struct point *p = &r->sw->pt[i];
	char dir[PT_DIR];
	size_t k;
	pid_t pid;

	point_dir(r->out, p, dir, sizeof(dir));
	if (kv_mkdirs(dir)) {
		struct sbuf b = { 0 };

		kv__sweep_sb_printf(&b, "%s: cannot create: %s", dir, strerror(errno));
		p->err = kv__sweep_sb_take(&b);
		p->state = ST_ERR;
		r->done++;
		r->failed++;
		return -1;
	}
	for (k = 0; r->pid[k]; k++)
		;
	fflush(stdout);
	fflush(stderr);
	pid = fork();
	if (pid < 0) {
		p->err = kv_xstrdup("fork failed");
		p->state = ST_ERR;
		r->done++;
		r->failed++;
		return -1;
	}
	if (pid == 0)
		child_run(r->sw, p, dir);
	r->pid[k] = pid;
	r->slot_pt[k] = i;
	r->running++;
	p->state = ST_RUNNING;
	return 0;
}

static void kill_children(struct runner *r)
{
	long k;

	for (k = 0; k < r->a->jobs; k++)
		if (r->pid[k])
			kill(r->pid[k], SIGTERM);
}

int kv__sweep_in_shard(const struct sweep_args *a, size_t i)
{
	return (long)(i % (size_t)a->n_shards) == a->shard - 1;
}

/*
 * The scheduling loop: skip finished points (their summary.csv is read
 * back), keep `jobs` children running, reap them in whatever order they
 * end.  On a signal it stops launching, forwards SIGTERM to the children
 * (which abort cleanly and exit 143) and waits for all of them.
 */
void kv__sweep_run_points(struct runner *r)
{
	size_t next = 0, n = r->sw->n_pt;
	int killed = 0, st;
	struct kv_diag d = { 0 };
	char dir[PT_DIR];
	pid_t pid;

	kv_progress_init(r->a->quiet, r->a->progress);
	for (;;) {
		while (!kv__sweep_stop && r->running < (size_t)r->a->jobs && next < n) {
			struct point *p = &r->sw->pt[next++];

			if (!kv__sweep_in_shard(r->a, p->index))
				continue;
			point_dir(r->out, p, dir, sizeof(dir));
			if (!read_summary(dir, p, &d)) {
				p->state = ST_SKIP;
				r->done++;
				continue;
			}
			launch(r, p->index);
		}
		if (!r->running && (kv__sweep_stop || next >= n))
			break;
		if (!r->running)
			continue;
		pid = waitpid(-1, &st, 0);
		if (kv__sweep_stop && !killed) {
			kill_children(r);
			killed = 1;
		}
		if (pid > 0)
			reap(r, pid, st);
		else if (errno != EINTR)
			break;
	}
	progress(r, 1);
}

/* --- sweep.csv ----------------------------------------------------------- */

static void row(struct sbuf *b, const struct sweep *sw, const struct point *p,
		const struct point *h)
{
	size_t i;

	kv__sweep_sb_printf(b, "%zu,%s", p->index, p->key);
	for (i = 0; i < sw->n_axes; i++) {
		kv__sweep_sb_puts(b, ",");
		kv__sweep_sb_csv(b, sw->axis[i].vals[p->val[i]]);
	}
	kv__sweep_sb_printf(b, ",%llu,%s,", (unsigned long long)p->seed, p->state == ST_ERR ? "error" : "ok");
	if (p->err)
		kv__sweep_sb_csv(b, p->err);
	for (i = 0; h && i < h->n_fields; i++) {
		kv__sweep_sb_puts(b, ",");
		kv__sweep_sb_csv(b, kv__sweep_field(p, h, i));
	}
	kv__sweep_sb_puts(b, "\n");
}

/*
 * Writes text to dir/sweep.csv through a temporary and a rename, both through
 * the output layer's fault hook (KVSIM_FAIL_WRITE); 0 or -1 (message printed,
 * the temporary removed, an earlier sweep.csv intact).
 */
int kv__sweep_write_atomic(const char *dir, const char *text)
{
	char final[PT_PATH];
	struct kv_atomic a;
	struct kv_diag d = { 0 };

	snprintf(final, sizeof(final), "%s/sweep.csv", dir);
	if (kv_atomic_open(&a, final, &d)) {
		kv_diag_print(&d, stderr);
		return -1;
	}
	fputs(text, a.f); /* a failure sets the stream's error flag: commit reports it */
	if (kv_atomic_commit(&a, &d)) {
		kv_diag_print(&d, stderr);
		return -1;
	}
	return 0;
}

int kv__sweep_write_sweep_csv(const struct sweep *sw, const char *dir)
{
	const struct point *h = kv__sweep_header_point(sw);
	struct sbuf b = { 0 };
	size_t i;
	char *text;
	int rc;

	kv__sweep_sb_puts(&b, "point,key");
	for (i = 0; i < sw->n_axes; i++) {
		kv__sweep_sb_puts(&b, ",");
		kv__sweep_sb_csv(&b, sw->axis[i].key);
	}
	kv__sweep_sb_puts(&b, ",seed,status,error");
	for (i = 0; h && i < h->n_fields; i++) {
		kv__sweep_sb_puts(&b, ",");
		kv__sweep_sb_csv(&b, h->names[i]);
	}
	kv__sweep_sb_puts(&b, "\n");
	for (i = 0; i < sw->n_pt; i++) {
		int s = sw->pt[i].state;

		if (s == ST_OK || s == ST_SKIP || s == ST_ERR)
			row(&b, sw, &sw->pt[i], h);
	}
	text = kv__sweep_sb_take(&b);
	rc = kv__sweep_write_atomic(dir, text);
	free(text);
	return rc;
}
