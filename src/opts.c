/* opts.c -- the commands' shared option parser and the help printed from its tables; see opts.h. */
#include "opts.h"

#include <assert.h>
#include <errno.h>
#include <getopt.h>
#include <stdlib.h>
#include <string.h>

#define MAX_OPTS 32
#define HELP_COL_MAX 20 /* widest option column; a longer one puts its help on the next line */

/* The label messages give opt: its own, else "--" name (in buf). */
static const char *label(const struct kv_cli_opt *o, char *buf, size_t len)
{
	if (o->label)
		return o->label;
	snprintf(buf, len, "--%s", o->name);
	return buf;
}

/* "kvsim calibrate --from-run" for hints: the command and its mode (into buf). */
static const char *path(const struct kv_cli_cmd *cmd, char *buf, size_t len)
{
	snprintf(buf, len, "kvsim %s%s%s", cmd->name, cmd->mode ? " " : "", cmd->mode ? cmd->mode : "");
	return buf;
}

/* ---- help ------------------------------------------------------------------ */

/* The option column of o: "-o, --output DIR" or "    --progress" (into buf); its length. */
static int left(const struct kv_cli_opt *o, char *buf, size_t len)
{
	char s[8] = "    ";

	if (o->short_name)
		snprintf(s, sizeof(s), "-%c, ", o->short_name);
	return snprintf(buf, len, "%s--%s%s%s", s, o->name, o->arg ? " " : "", o->arg ? o->arg : "");
}

/* One option's lines: its column padded to width, then its help, further lines aligned. */
static void help_line(FILE *f, const char *col, int width, const char *help)
{
	const char *nl;
	int n = fprintf(f, "  %s", col) - 2;

	if (n > width) {
		fputc('\n', f);
		n = -2;
	}
	fprintf(f, "%*s", width - n + 2, "");
	while ((nl = strchr(help, '\n'))) {
		fprintf(f, "%.*s\n%*s", (int)(nl - help), help, width + 4, "");
		help = nl + 1;
	}
	fprintf(f, "%s\n", help);
}

void kv_cli_help(const struct kv_cli_cmd *cmd, const struct kv_cli_opt *opts, FILE *f)
{
	static const char *const plain[] = { "[options]", NULL };
	static const struct kv_cli_opt help = { .name = "help", .short_name = 'h', .help = "this help" };
	const char *const *syn = cmd->synopsis ? cmd->synopsis : plain;
	char buf[128], p[96];
	int width = 0, n;
	size_t i;

	path(cmd, p, sizeof(p));
	for (i = 0; syn[i]; i++)
		fprintf(f, "%s %s %s\n", i ? "      " : "usage:", p, syn[i]);
	if (cmd->desc)
		fprintf(f, "\n%s", cmd->desc);
	for (i = 0; opts[i].name; i++)
		if ((n = left(&opts[i], buf, sizeof(buf))) > width && n <= HELP_COL_MAX)
			width = n;
	if (width < 14)
		width = 14;
	fputs("\noptions:\n", f);
	for (i = 0; opts[i].name; i++) {
		left(&opts[i], buf, sizeof(buf));
		help_line(f, buf, width, opts[i].help ? opts[i].help : "");
	}
	left(&help, buf, sizeof(buf));
	help_line(f, buf, width, help.help);
	if (cmd->notes)
		fprintf(f, "\n%s", cmd->notes);
}

/* --list-options: each option's long name and short letter, one option a line. */
static void list_options(const struct kv_cli_opt *opts)
{
	size_t i;

	for (i = 0; opts[i].name; i++)
		if (opts[i].short_name)
			printf("--%s -%c\n", opts[i].name, opts[i].short_name);
		else
			printf("--%s\n", opts[i].name);
	printf("--help -h\n");
}

/* 1 when argv holds --help or -h before "--", 2 for --list-options, else 0. */
static int wants_help(int argc, char **argv)
{
	int i;

	for (i = 1; i < argc && strcmp(argv[i], "--"); i++) {
		if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h"))
			return 1;
		if (!strcmp(argv[i], "--list-options"))
			return 2;
	}
	return 0;
}

/* ---- values ---------------------------------------------------------------- */

/* An unsigned integer (and for KV_CLI_BYTES a MiB/GiB suffix); -1 when bad or out of range. */
static int parse_uint(const struct kv_cli_opt *o, const char *arg, uint64_t *out)
{
	char *end;
	unsigned long long v;

	errno = 0;
	v = strtoull(arg, &end, 10);
	if (o->kind == KV_CLI_BYTES && errno == 0 && end != arg) {
		if (!strcmp(end, "GiB"))
			v <<= 30, end += 3;
		else if (!strcmp(end, "MiB"))
			v <<= 20, end += 3;
	}
	if (errno || *end || !*arg || arg[0] == '-')
		return -1;
	if (o->kind != KV_CLI_BYTES && (v < o->min || v > o->max))
		return -1;
	*out = v;
	return 0;
}

/* Stores arg by o's kind; returns 0 or 2 with a message. */
static int store(const struct kv_cli_cmd *cmd, const struct kv_cli_opt *o, const char *arg)
{
	char buf[64];
	const char *l = label(o, buf, sizeof(buf));
	struct kv_cli_sets *sets = o->dst;
	uint64_t v;

	switch (o->kind) {
	case KV_CLI_FLAG:
		*(int *)o->dst = 1;
		return 0;
	case KV_CLI_STR:
		if (o->max && strlen(arg) > o->max) {
			fprintf(stderr, "kvsim: %s: %s: value of %zu bytes is too long: expected at most %llu bytes\n",
				cmd->name, l, strlen(arg), (unsigned long long)o->max);
			return 2;
		}
		*(const char **)o->dst = arg;
		return 0;
	case KV_CLI_PATH:
		if (!*arg || !strncmp(arg, "--", 2)) /* `--from-run --profile x`: RUN forgotten */
			break;
		*(const char **)o->dst = arg;
		return 0;
	case KV_CLI_SET:
		if (sets->n == o->max) {
			fprintf(stderr, "kvsim: %s: %s: more than %llu overrides\n", cmd->name, l,
				(unsigned long long)o->max);
			return 2;
		}
		sets->v[sets->n++] = (char *)arg;
		return 0;
	case KV_CLI_FN:
		if (o->fn(arg, o->dst))
			break;
		return 0;
	case KV_CLI_U64:
	case KV_CLI_BYTES:
	case KV_CLI_INT:
	case KV_CLI_LONG:
		if (parse_uint(o, arg, &v))
			break;
		if (o->kind == KV_CLI_INT)
			*(int *)o->dst = (int)v;
		else if (o->kind == KV_CLI_LONG)
			*(long *)o->dst = (long)v;
		else
			*(uint64_t *)o->dst = v;
		return 0;
	}
	fprintf(stderr, "kvsim: %s: %s: bad value '%s': expected %s\n", cmd->name, l, arg, o->what);
	return 2;
}

/* ---- getopt ---------------------------------------------------------------- */

/* getopt_long's tables from opts: short letters into optstring (after ':'), long ones into lo. */
static void tables(const struct kv_cli_opt *opts, char *optstring, struct option *lo)
{
	size_t i, k = 0;

	optstring[k++] = ':'; /* a missing value answers ':', not '?' */
	for (i = 0; opts[i].name; i++) {
		int arg = opts[i].kind == KV_CLI_FLAG ? no_argument : required_argument;

		lo[i] = (struct option){ opts[i].name, arg, NULL, 256 + (int)i };
		if (opts[i].short_name) {
			optstring[k++] = opts[i].short_name;
			if (arg == required_argument)
				optstring[k++] = ':';
		}
	}
	lo[i] = (struct option){ NULL, 0, NULL, 0 };
	optstring[k] = 0;
}

/* The entry of getopt's answer ch (a short letter or 256 + index), or NULL. */
static const struct kv_cli_opt *entry(const struct kv_cli_opt *opts, int ch)
{
	size_t i;

	for (i = 0; opts[i].name; i++)
		if (ch == 256 + (int)i || (opts[i].short_name && ch == opts[i].short_name))
			return &opts[i];
	return NULL;
}

/* How many long names word ("--tr", "--tr=x") abbreviates. */
static int prefixes(const struct kv_cli_opt *opts, const char *word)
{
	size_t i, len;
	int n = 0;

	if (strncmp(word, "--", 2))
		return 0;
	word += 2;
	len = strcspn(word, "=");
	for (i = 0; opts[i].name; i++)
		n += !strncmp(opts[i].name, word, len);
	return n;
}

/*
 * The one line for what getopt refused (ch '?': unknown, ambiguous, or a
 * value given to a flag; ':' a value missing); returns 2.  optopt is the
 * short letter, 256 + the entry's index for a long option getopt knows,
 * 0 for an unknown long one (then argv[optind - 1] is the word).
 */
static int refused(const struct kv_cli_cmd *cmd, const struct kv_cli_opt *opts, int ch,
		   char **argv)
{
	const struct kv_cli_opt *o = optopt >= 256 ? &opts[optopt - 256] : NULL;
	char p[96], word[96];

	path(cmd, p, sizeof(p));
	if (optopt > 0 && optopt < 256)
		snprintf(word, sizeof(word), "-%c", optopt);
	else if (o)
		snprintf(word, sizeof(word), "--%s", o->name);
	else
		snprintf(word, sizeof(word), "%s", argv[optind - 1]);
	if (ch == ':')
		fprintf(stderr, "kvsim: %s: option '%s' needs a value; see '%s --help'\n", cmd->name,
			word, p);
	else if (o)
		fprintf(stderr, "kvsim: %s: option '%s' takes no value; see '%s --help'\n", cmd->name,
			word, p);
	else if (prefixes(opts, word) > 1)
		fprintf(stderr, "kvsim: %s: ambiguous option '%s'; see '%s --help'\n", cmd->name, word, p);
	else
		fprintf(stderr, "kvsim: %s: unknown option '%s'; see '%s --help'\n", cmd->name, word, p);
	return 2;
}

/* Checks the operands after the options; returns 0 or 2 with a message. */
static int operands(const struct kv_cli_cmd *cmd, int argc, char **argv, const char **operand)
{
	int lo = cmd->min_operands, hi = cmd->max_operands, n = argc - optind;
	char p[96];

	if (!lo && !hi)
		lo = hi = cmd->positional ? 1 : 0;
	path(cmd, p, sizeof(p));
	if (!hi && n) {
		fprintf(stderr, "kvsim: %s: unexpected argument '%s'; see '%s --help'\n", cmd->name,
			argv[optind], p);
		return 2;
	}
	if (n < lo || (hi >= 0 && n > hi)) {
		if (hi < 0)
			fprintf(stderr, "kvsim: %s: expected at least %d %s", cmd->name, lo, cmd->positional);
		else if (lo == hi && lo == 1)
			fprintf(stderr, "kvsim: %s: expected one %s", cmd->name, cmd->positional);
		else
			fprintf(stderr, "kvsim: %s: expected %d to %d %s", cmd->name, lo, hi, cmd->positional);
		fprintf(stderr, ", got %d arguments; see '%s --help'\n", n, p);
		return 2;
	}
	if (hi == 1 && n == 1 && operand)
		*operand = argv[optind];
	return 0;
}

int kv_cli_parse(const struct kv_cli_cmd *cmd, const struct kv_cli_opt *opts, int argc,
		  char **argv, const char **operand)
{
	struct option lo[MAX_OPTS + 1];
	char optstring[2 * MAX_OPTS + 2];
	const struct kv_cli_opt *o;
	size_t i;
	int ch, rc;

	switch (wants_help(argc, argv)) {
	case 1:
		kv_cli_help(cmd, opts, stdout);
		return -1;
	case 2:
		list_options(opts);
		return -1;
	}
	for (i = 0; opts[i].name; i++)
		assert(i < MAX_OPTS);
	tables(opts, optstring, lo);
	optind = 1;
	opterr = 0;
	while ((ch = getopt_long(argc, argv, optstring, lo, NULL)) != -1) {
		if (!(o = entry(opts, ch)))
			return refused(cmd, opts, ch, argv);
		if ((rc = store(cmd, o, optarg)))
			return rc;
		if (o->seen)
			*o->seen = 1;
	}
	return operands(cmd, argc, argv, operand);
}
