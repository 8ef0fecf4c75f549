/*
 * main.c -- the kvsim command: one table of subcommands (as git's
 * commands[]), dispatch, global help.
 */
#include "commands.h"

#include "../sim/kv_common.h"

#include <gsl/gsl_errno.h>
#include <stdio.h>
#include <string.h>

struct command {
	const char *name; /* subcommand */
	int (*fn)(int argc, char **argv); /* returns the exit status */
	const char *usage; /* synopsis */
	const char *help; /* one line */
};

static const struct command commands[] = {
	{ "run", kv_cmd_run, "run WORKLOAD.yaml [-o DIR] [--seed N] [--set key.path=value]...",
	  "simulate a workload and write requests.csv, timeseries.csv, summary.csv and run.png" },
	{ "list", kv_cmd_list, "list [schedulers|caches|routers|engines|devices|models|metrics]",
	  "show every plugin and profile with its options" },
	{ "sweep", kv_cmd_sweep, "sweep SWEEP.yaml [-j N] [-o DIR] [--shard I/N] [--quiet]",
	  "run a workload over a grid of overrides in parallel and write sweep.csv" },
	{ "sweep-merge", kv_cmd_sweep_merge, "sweep-merge OUT_DIR DIR...",
	  "merge the sweep.csv files of sweep shards" },
	{ "plot", kv_cmd_plot, "plot DIR [--metric NAME] [--x AXIS] [--by AXIS]",
	  "render the charts (PNG and SVG) of a run or sweep directory" },
	{ "calibrate", kv_cmd_calibrate, "calibrate [--backend cpu|cuda] [--model M] [-o PROFILE.yaml]",
	  "run real iterations on a backend, fit the perf model, write a device profile" },
	{ "validate", kv_cmd_validate, "validate [--backend cpu|cuda] WORKLOAD.yaml [--profile DEVICE.yaml]",
	  "run a workload on a backend and in the simulator; report the simulator's error" },
	{ "gpu", kv_cmd_gpu, "gpu", "report the GPU the execution backend would use, or why there is none" },
};

/* The command named name, or NULL. */
static const struct command *find(const char *name)
{
	size_t i;

	for (i = 0; i < KV_ARRAY_LEN(commands); i++)
		if (!strcmp(name, commands[i].name))
			return &commands[i];
	return NULL;
}

/* `kvsim CMD --help` (the command's own help on stdout); its exit status. */
static int command_help(const struct command *c)
{
	char *argv[] = { (char *)c->name, (char *)"--help", NULL };

	return c->fn(2, argv);
}

/*
 * The synopsis of every command; full: then each command's own help (its
 * options), as `kvsim help` and `kvsim --help` print it.
 */
static int usage(FILE *f, int full)
{
	size_t i;
	int rc = 0;

	fprintf(f, "kvsim %s: a discrete-event simulator of LLM inference serving\n\n"
		   "usage: kvsim COMMAND [options]\n\ncommands:\n", KV_VERSION);
	for (i = 0; i < KV_ARRAY_LEN(commands); i++)
		fprintf(f, "  %-11s %s\n              %s\n", commands[i].name, commands[i].help,
			commands[i].usage);
	fprintf(f, "\n'kvsim help COMMAND' (or 'kvsim COMMAND --help') describes a command's options.\n");
	if (!full)
		return 0;
	for (i = 0; i < KV_ARRAY_LEN(commands); i++) {
		fprintf(f, "\n==== kvsim %s ====\n", commands[i].name);
		fflush(f);
		rc |= command_help(&commands[i]);
	}
	return rc;
}

int main(int argc, char **argv)
{
	size_t i;

	gsl_set_error_handler_off();
	kv_alloc_fault_init();
	if (argc < 2) {
		usage(stderr, 0);
		return 2;
	}
	if (!strcmp(argv[1], "help") && argc > 2) { /* kvsim help CMD = kvsim CMD --help */
		const struct command *c = find(argv[2]);

		if (c)
			return command_help(c);
		fprintf(stderr, "kvsim: help: unknown command '%s': expected one of:", argv[2]);
		for (i = 0; i < KV_ARRAY_LEN(commands); i++)
			fprintf(stderr, " %s", commands[i].name);
		fprintf(stderr, "\n");
		return 2;
	}
	if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h") || !strcmp(argv[1], "help"))
		return usage(stdout, 1) ? 1 : 0;
	if (!strcmp(argv[1], "--version")) {
		printf("kvsim %s\n", KV_VERSION);
		return 0;
	}
	for (i = 0; i < KV_ARRAY_LEN(commands); i++)
		if (!strcmp(argv[1], commands[i].name))
			return commands[i].fn(argc - 1, argv + 1);
	fprintf(stderr, "kvsim: unknown command '%s': expected one of:", argv[1]);
	for (i = 0; i < KV_ARRAY_LEN(commands); i++)
		fprintf(stderr, " %s", commands[i].name);
	fprintf(stderr, "\n");
	return 2;
}
