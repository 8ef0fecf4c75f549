/*
 * commands.h -- the subcommands of the kvsim program, one file each.
 *
 * Each takes argc/argv with argv[0] the subcommand name (options through
 * opts.h's one parser) and returns the process exit status, from status.h's
 * table: 0 success, 1 output error, 2 bad input or usage, 3 out of memory,
 * 4 backend failed or absent, 77 no GPU (`kvsim gpu`), 128+N signal N.
 */
#ifndef KV_COMMANDS_H
#define KV_COMMANDS_H

#include <stddef.h>

struct kv_diag;

int kv_cmd_run(int argc, char **argv);
/* In a sweep's worker, before kv_cmd_run: the point directory is the sweep's (no lock of its own, replaced whole). */
void kv_run_in_sweep(void);
int kv_cmd_list(int argc, char **argv);
int kv_cmd_gpu(int argc, char **argv);
int kv_cmd_plot(int argc, char **argv);
/* Renders DIR/sweep-METRIC.png/.svg from DIR/sweep.csv; x and by may be NULL (defaults). */
int kv_plot_sweep(const char *dir, const char *title, const char *metric, const char *x,
		  const char *by, int quiet);
int kv_cmd_sweep(int argc, char **argv);
int kv_cmd_calibrate(int argc, char **argv);
int kv_cmd_validate(int argc, char **argv);
int kv_cmd_sweep_merge(int argc, char **argv);
int kv_cmd_trace_stats(int argc, char **argv);

/*
 * What `kvsim sweep` does before running anything, on a sweep file held in
 * memory (len bytes at text, reported as file `name`, whose directory
 * resolves `base:`): parses and checks it, expands the grid, loads the base
 * workload with the `set:` overrides.  Returns 0 with *n_points set, or a
 * negative code with d filled (*n_points 0).  Runs nothing, writes nothing.
 */
int kv_sweep_check_mem(const char *name, const char *text, size_t len, size_t *n_points,
		       struct kv_diag *d);

#endif /* KV_COMMANDS_H */
