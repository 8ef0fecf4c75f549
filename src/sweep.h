/*
 * sweep.h -- what the parts of `kvsim sweep` share; nothing outside
 * src/cmd_sweep*.c and src/sweep_*.c includes it.
 *
 * The parts, each using only those listed before it: sweep_text.c: a
 * growable string and a YAML node back to flow text (for --set);
 * sweep_file.c: the sweep file, the grid of points it expands to and a
 * point's summary columns; sweep_run.c: the worker pool (forked children,
 * -j of them) and sweep.csv; sweep_report.c: the capacity target,
 * sweep_stats.csv and pareto.csv (arithmetic in lib/target.c);
 * cmd_sweep.c: the command, which runs the points alone or, under mpirun,
 * as a job of sweep_mpi.h (the MPI layer below the sweep, knowing nothing
 * of it); cmd_sweep_merge.c: `kvsim sweep-merge`.
 */
#ifndef KV_SWEEP_H
#define KV_SWEEP_H

#include "commands.h"
#include "lib/cfg.h"
#include "lib/csv.h"
#include "lib/outdir.h"
#include "lib/target.h"

#include <signal.h>
#include <stdio.h>
#include <sys/types.h>
#include <time.h>

/* Room for any path under the output directory, whose length is checked once against KV_PATH_MAX. */
#define PT_DIR (KV_PATH_MAX + 32) /* a point's directory */
#define PT_PATH (PT_DIR + 32) /* a file in it */
/* The longest suffix a sweep adds to its directory: "/points/KEY/tenant_timeseries.csv" and so on. */
#define SWEEP_SUFFIX_MAX 64

#define SWEEP_MAX_AXES 64 /* axes plus zipped axes */
#define SWEEP_MAX_SETS 200 /* overrides of one point (kvsim run takes 256) */
#define SWEEP_MAX_POINTS 1000000

/* A point's state. */
enum { ST_TODO, ST_SKIP, ST_RUNNING, ST_OK, ST_ERR };

struct sbuf {
	char *s; /* NUL-terminated text, NULL when empty */
	size_t len, cap; /* length and capacity in bytes */
};

/* One axis: a key path and its values as flow text. */
struct axis {
	char *key; /* e.g. "scheduler.name" */
	char **vals; /* n_vals values */
	char **kv; /* n_vals overrides "key=value", made once for every point's key */
	size_t n_vals;
	size_t dim; /* the dimension it varies in (zipped axes share one) */
	char *label; /* the charts' name for it (`label:`), NULL: kv_sweep_axis_label's */
};

/* One point of the grid. */
struct point {
	size_t index; /* 0-based position in point order */
	size_t *val; /* value index per axis */
	uint64_t seed;
	char key[17]; /* 16 hex digits */
	uint64_t hash; /* the same key as a number */
	int state; /* ST_* */
	char *err; /* one-line message of a failed run */
	char **fields; /* summary.csv values (ST_OK), n_fields of them */
	char **names; /* summary.csv header names, n_fields */
	size_t n_fields;
};

struct sweep {
	struct kv_cfg_doc doc;
	char name[128]; /* `name:` or the file stem */
	char base[1024]; /* base workload path, resolved */
	char *base_bytes; /* its contents, for the key */
	size_t base_len;
	uint64_t base_hash; /* FNV-1a of base_bytes: where every point's key starts */
	struct axis axis[SWEEP_MAX_AXES];
	size_t n_axes, n_dims;
	size_t dim_len[SWEEP_MAX_AXES]; /* values per dimension */
	char **sets; /* `set:` overrides "k=v" */
	size_t n_sets;
	uint64_t *seeds;
	size_t n_seeds;
	int has_target;
	struct kv_cond cond[KV_MAX_CONDS]; /* target: conditions, all to hold */
	size_t n_cond;
	char t_axis[256]; /* target: the axis to minimize (or maximize), or a summary column (t_metric) */
	int t_metric; /* target: t_axis is a summary.csv column: the combination meeting the target with its least mean (greatest with t_max) */
	int t_max; /* target: maximize the axis (the highest rate meeting the SLOs) instead */
	int t_mean; /* target: judge on the seeds' mean, not the 95% interval's pessimistic end */
	char pareto[2][64]; /* `pareto:` or --pareto: two summary columns, "" when none */
	struct point *pt;
	size_t n_pt;
};

struct sweep_args {
	const char *path; /* sweep file */
	const char *out; /* -o DIR, or NULL */
	long jobs; /* -j, default the online CPUs */
	long shard, n_shards; /* --shard I/N (1-based), 1/1 by default */
	int quiet;
	int progress; /* --progress: progress lines on stderr even when it is not a terminal */
	int target_mean; /* --target-mean: judge the target on the mean over seeds */
	const char *pareto; /* --pareto A,B, or NULL */
};

struct runner {
	struct sweep *sw;
	const struct sweep_args *a;
	char out[KV_PATH_MAX]; /* output directory */
	int lock_fd; /* the output directory's lock, -1 when not held */
	pid_t *pid; /* child per running slot, 0 when free */
	size_t *slot_pt; /* point of each slot */
	size_t running, done, total, ran, failed;
	struct timespec start;
};

/* The signal (SIGINT, SIGTERM) that asked the sweep to stop, 0 when none. */
extern volatile sig_atomic_t kv__sweep_stop;

/* sweep_text.c */
void kv__sweep_sb_putn(struct sbuf *b, const char *p, size_t n);
void kv__sweep_sb_puts(struct sbuf *b, const char *s);
void kv__sweep_sb_printf(struct sbuf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
char *kv__sweep_sb_take(struct sbuf *b);
void kv__sweep_sb_csv(struct sbuf *b, const char *s);
char *kv__sweep_node_text(struct kv_cfg_node *n);

/* sweep_file.c */
void kv__sweep_release(struct sweep *sw);
int kv__sweep_set_pareto(struct sweep *sw, const char *text, char *err, size_t errlen);
char *kv__sweep_slurp(const char *path, size_t *len);
int kv__sweep_read(struct sweep *sw, const char *path, struct kv_diag *d);
int kv__sweep_load(struct sweep *sw, const char *path, struct kv_diag *d);
size_t kv__sweep_point_sets(const struct sweep *sw, const struct point *p, char **out);
int kv__sweep_expand(struct sweep *sw, struct kv_diag *d);
const struct point *kv__sweep_header_point(const struct sweep *sw);
const char *kv__sweep_field(const struct point *p, const struct point *h, size_t j);

/* sweep_run.c */
void kv__sweep_on_signal(int sig);
int kv__sweep_in_shard(const struct sweep_args *a, size_t i);
void kv__sweep_run_points(struct runner *r);
int kv__sweep_write_atomic(const char *dir, const char *text);
int kv__sweep_write_sweep_csv(const struct sweep *sw, const char *dir);

/* sweep_report.c */
void kv__sweep_report_target(const struct sweep *sw);
int kv__sweep_write_stats(const struct sweep *sw, const char *dir);
/*
 * axis_labels.csv (axis,label): each axis's name on the charts, its
 * `label:` or kv_sweep_axis_label's; kvsim plot reads it.  0 or -1.
 */
int kv__sweep_write_labels(const struct sweep *sw, const char *dir);
/*
 * target.csv (kind,metric,op,limit,AXIS...): a `condition` row per target
 * condition and a `chosen` row (its axis values) per combination of the
 * other axes' values whose cheapest passing value exists; what the sweep
 * charts draw.  0, or -1 when it could not be written.
 */
int kv__sweep_write_target(const struct sweep *sw, const char *dir);
int kv__sweep_pareto(const struct sweep *sw, const char *dir, int quiet);

#endif /* KV_SWEEP_H */
