/*
 * opts.h -- the one option parser every kvsim command uses, and the help
 * printed from its tables (as git's parse-options).
 *
 * A command describes its options in a table of struct kv_cli_opt (long name,
 * optional short letter, kind, destination, range, argument name, help
 * text) and itself in a struct kv_cli_cmd (name, synopsis of its operands,
 * prose before and after the options), and calls kv_cli_parse(), which runs
 * getopt_long over argv and writes each value where its entry points.
 * Values are checked as they are read, with one message format:
 * "kvsim: CMD: OPTION: bad value 'V': expected WHAT".
 *
 * Help comes from the same tables, so no option can be missing from it:
 * --help or -h anywhere before "--" prints "usage:" lines, the description,
 * one aligned line per option and the notes on stdout (exit 0).  The
 * hidden --list-options prints each option's long and short name, one
 * option a line, for the test that holds help to the tables (as git's
 * --git-completion-helper).  Every usage error is one line on stderr that
 * starts "kvsim: CMD:" and, for an unknown option, names it and points to
 * `kvsim CMD --help` (exit 2).
 *
 * The kinds cover what the commands share: flags, strings (with a length
 * cap), paths (the empty `-o ''` refused), unsigned integers in a range
 * (optionally with a MiB/GiB suffix), the --set collector, and a callback
 * for the rest (--clock, --shard, --holdout).
 */
#ifndef KV_OPTS_H
#define KV_OPTS_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

enum kv_cli_kind {
	KV_CLI_FLAG, /* no argument; *(int *)dst = 1 */
	KV_CLI_STR, /* *(const char **)dst = arg; max: longest length in bytes (0: any) */
	KV_CLI_PATH, /* as STR, but '' and "--..." (a forgotten value) are refused ("expected " what) */
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
	const char *arg; /* the argument's name in help ("DIR", "N"); NULL for a flag */
	const char *help; /* what it does, default and units; "\n" starts a further line */
};

/* --progress's help, the same in every command that has it. */
#define KV_CLI_PROGRESS_HELP                                                                   \
	"a progress line every 5 s on stderr even when it is not a\n"                          \
	"terminal (CI logs, Slurm; also KVSIM_PROGRESS=1)"

/* The --set collector: KV_CLI_SET appends here (argv strings, not copied). */
struct kv_cli_sets {
	char **v; /* the caller's array of max entries */
	size_t n; /* collected */
};

/*
 * A command (or a sub-mode such as `calibrate --from-run`) as help and
 * messages show it.  Help prints, for each synopsis line S,
 * "usage: kvsim PATH S" (PATH: name, then mode when set), the description,
 * "options:" with the table, then the notes.  Synopsis lines name operands
 * and modes only, never options ("[options] WORKLOAD.yaml"), so they cannot
 * drift from the table.
 */
struct kv_cli_cmd {
	const char *name; /* the command, for messages ("calibrate") */
	const char *mode; /* the sub-mode's selector ("--from-run RUN"), or NULL */
	const char *const *synopsis; /* NULL-terminated lines; NULL: one line "[options]" */
	const char *desc; /* prose before the options, or NULL */
	const char *notes; /* prose after them (exit status, see also), or NULL */
	const char *positional; /* the operand, for messages ("workload file"), or NULL: none */
	int min_operands, max_operands; /* counts accepted; both 0: 1 with positional, else 0;
					   max -1: any number */
};

/*
 * Parses argv (argv[0] the command) against opts, terminated by an entry
 * with name NULL.  Returns 0, -1 after --help or --list-options (exit 0),
 * or 2 (bad usage, message printed).  With one operand allowed, *operand
 * receives it (when given); in any case the operands are argv[optind..argc)
 * after a return of 0 (getopt permutes them to the end).
 */
int kv_cli_parse(const struct kv_cli_cmd *cmd, const struct kv_cli_opt *opts, int argc,
		  char **argv, const char **operand);

/* Prints cmd's help from its table to f (what --help prints). */
void kv_cli_help(const struct kv_cli_cmd *cmd, const struct kv_cli_opt *opts, FILE *f);

#endif /* KV_OPTS_H */
