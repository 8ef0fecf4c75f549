/*
 * opts.h -- the one option parser every kvsim command uses.
 *
 * A command describes its options in a table of struct kv_cli_opt (long name,
 * optional short letter, kind, destination, range) and calls
 * kv_cli_parse(), which runs getopt_long over argv and writes each value
 * where its entry points.  Values are checked as they are read, with one
 * message format: "kvsim: CMD: OPTION: bad value 'V': expected WHAT".
 * --help/-h prints the usage on stdout; an unknown option prints it on
 * stderr.  The kinds cover what the commands share: flags, strings (with a
 * length cap), paths (the empty `-o ''` refused), unsigned integers in a
 * range (optionally with a MiB/GiB suffix), the --set collector, and a
 * callback for the rest (--clock, --shard).
 */
#ifndef KV_OPTS_H
#define KV_OPTS_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

enum kv_cli_kind {
	KV_CLI_FLAG, /* no argument; *(int *)dst = 1 */
	KV_CLI_STR, /* *(const char **)dst = arg; max: longest length in bytes (0: any) */
	KV_CLI_PATH, /* as STR, but '' is refused ("expected " what) */
	KV_CLI_U64, /* *(uint64_t *)dst, an integer in [min, max] */
	KV_CLI_INT, /* *(int *)dst, an integer in [min, max] */
	KV_CLI_LONG, /* *(long *)dst, an integer in [min, max] */
	KV_CLI_BYTES, /* *(uint64_t *)dst, an integer with an optional MiB or GiB suffix */
	KV_CLI_SET, /* struct kv_cli_sets *dst: one more --set K=V, at most max of them */
	KV_CLI_FN, /* fn(arg, dst) returns 0, or -1 for a bad value ("expected " what) */
};

struct kv_cli_opt {
	const char *name; /* long name, without "--" */
	char short_name; /* short letter, 0 for none */
	enum kv_cli_kind kind;
	void *dst; /* where the value goes (see the kinds) */
	uint64_t min, max; /* range (U64, INT, LONG), length cap (STR), count cap (SET) */
	const char *what; /* the message's "expected WHAT" */
	const char *label; /* the option as messages name it; NULL: "--" name */
	int (*fn)(const char *arg, void *dst); /* KV_CLI_FN */
	int *seen; /* set to 1 when the option is given, or NULL */
};

/* The --set collector: KV_CLI_SET appends here (argv strings, not copied). */
struct kv_cli_sets {
	char **v; /* the caller's array of max entries */
	size_t n; /* collected */
};

/*
 * What kv_cli_parse expects after the options: positional names the one
 * operand ("workload file": "expected one workload file, got N arguments"),
 * or NULL for none ("unexpected argument 'X'").  *operand receives it.
 */
struct kv_cli_cmd {
	const char *name; /* the command, for messages */
	void (*usage)(FILE *f);
	const char *positional; /* one operand, or NULL: none */
};

/*
 * Parses argv (argv[0] the command) against opts, terminated by an entry
 * with name NULL.  Returns 0, -1 after --help (exit 0), or 2 (bad usage,
 * message printed).
 */
int kv_cli_parse(const struct kv_cli_cmd *cmd, const struct kv_cli_opt *opts, int argc,
		  char **argv, const char **operand);

#endif /* KV_OPTS_H */
