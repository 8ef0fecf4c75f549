/*
 * commands.h -- the subcommands of the kvsim program, one file each.
 *
 * Each takes argc/argv with argv[0] the subcommand name and returns the
 * process exit status: 0 success, 1 a failed run, 2 bad input or usage,
 * 3 out of memory, 130 interrupted.
 */
#ifndef KV_COMMANDS_H
#define KV_COMMANDS_H

int kv_cmd_run(int argc, char **argv);
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

#endif /* KV_COMMANDS_H */
