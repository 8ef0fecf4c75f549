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
	const char *help; /* one line */
	const char *mode; /* a sub-mode with its own options and help ("--from-run"), or NULL */
};

/* Each command's options, usage and further help come from its option table (opts.h). */
static const struct command commands[] = {
	{ "run", kv_cmd_run,
	  "simulate a workload and write requests.csv, timeseries.csv, summary.csv and run.png", NULL },
	{ "list", kv_cmd_list, "show every plugin and profile with its options", NULL },
	{ "sweep", kv_cmd_sweep, "run a workload over a grid of overrides in parallel and write sweep.csv",
	  NULL },
	{ "sweep-merge", kv_cmd_sweep_merge, "merge the sweep.csv files of sweep shards", NULL },
	{ "plot", kv_cmd_plot, "render the charts (PNG and SVG) of a run or sweep directory", NULL },
	{ "calibrate", kv_cmd_calibrate,
	  "run real iterations on a backend (or replay a recorded run), fit the perf model,\n"
	  "write a device profile", "--from-run" },
	{ "validate", kv_cmd_validate,
	  "run a workload on a backend (or score a recorded run) and in the simulator;\n"
	  "report the simulator's error", "--from-run" },
	{ "trace-stats", kv_cmd_trace_stats,
	  "print a trace's (or a session workload's) prefix reuse: blocks seen before, turn chains", NULL },
	{ "gpu", kv_cmd_gpu, "report the GPU the execution backend would use, or why there is none",
	  NULL },
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

/* "kvsim: WHERE: unknown command 'NAME': expected one of: ..." on stderr; returns 2. */
static int unknown(const char *where, const char *name)
{
	size_t i;

	fprintf(stderr, "kvsim: %sunknown command '%s': expected one of:", where, name);
	for (i = 0; i < KV_ARRAY_LEN(commands); i++)
		fprintf(stderr, " %s", commands[i].name);
	fprintf(stderr, "\n");
	return 2;
}

/*
 * `kvsim CMD ARGS... LAST`: c's function on argv (argc entries after the
 * command's name) with LAST (--help, --list-options) appended; its exit status.
 */
static int call_with(const struct command *c, int argc, char **argv, const char *last)
{
	char *v[16];
	int i, n = 0;

	v[n++] = (char *)c->name;
	for (i = 0; i < argc && n < 14; i++)
		v[n++] = argv[i];
	v[n++] = (char *)last;
	v[n] = NULL;
	return c->fn(n, v);
}

/* `kvsim help [--options] CMD [MODE]`: its help (or option list) on stdout; the exit status. */
static int help_of(int argc, char **argv)
{
	const char *last = "--help";
	const struct command *c;

	if (!strcmp(argv[0], "--options")) { /* hidden: the table, for tests/help_test.sh */
		last = "--list-options";
		argc--, argv++;
		if (!argc) {
			fprintf(stderr, "kvsim: help: --options: expected a command\n");
			return 2;
		}
	}
	if (!(c = find(argv[0])))
		return unknown("help: ", argv[0]);
	return call_with(c, argc - 1, argv + 1, last);
}

/* A command's one-line help, further lines indented under it. */
static void one_line(FILE *f, const struct command *c)
{
	const char *h = c->help, *nl;

	fprintf(f, "  %-11s ", c->name);
	while ((nl = strchr(h, '\n'))) {
		fprintf(f, "%.*s\n%14s", (int)(nl - h), h, "");
		h = nl + 1;
	}
	fprintf(f, "%s\n", h);
}

/*
 * Every command with its one line; full: then each command's own help (and
 * its sub-mode's), from the tables, as `kvsim help` and `kvsim --help` print it.
 */
static int usage(FILE *f, int full)
{
	size_t i;
	int rc = 0;

	fprintf(f, "kvsim %s: a discrete-event simulator of LLM inference serving\n\n"
		   "usage: kvsim COMMAND [options]\n\ncommands:\n", KV_VERSION);
	for (i = 0; i < KV_ARRAY_LEN(commands); i++)
		one_line(f, &commands[i]);
	fprintf(f, "\n'kvsim help COMMAND' (or 'kvsim COMMAND --help') describes a command's options.\n");
	if (!full)
		return 0;
	for (i = 0; i < KV_ARRAY_LEN(commands); i++) {
		char *mode = (char *)commands[i].mode;

		fprintf(f, "\n==== kvsim %s ====\n", commands[i].name);
		fflush(f);
		rc |= call_with(&commands[i], 0, NULL, "--help");
		if (!mode)
			continue;
		fprintf(f, "\n==== kvsim %s %s ====\n", commands[i].name, mode);
		fflush(f);
		rc |= call_with(&commands[i], 1, &mode, "--help");
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
	if (!strcmp(argv[1], "help") && argc > 2) /* kvsim help CMD = kvsim CMD --help */
		return help_of(argc - 2, argv + 2);
	if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h") || !strcmp(argv[1], "help"))
		return usage(stdout, 1) ? 1 : 0;
	if (!strcmp(argv[1], "--version")) {
		printf("kvsim %s\n", KV_VERSION);
		return 0;
	}
	for (i = 0; i < KV_ARRAY_LEN(commands); i++)
		if (!strcmp(argv[1], commands[i].name))
			return commands[i].fn(argc - 1, argv + 1);
	return unknown("", argv[1]);
}
