/* opts.c -- the commands' shared option parser; see opts.h. */
#include "opts.h"

#include <errno.h>
#include <getopt.h>
#include <stdlib.h>
#include <string.h>

#define MAX_OPTS 32

/* The label messages give opt: its own, else "--" name (in buf). */
static const char *label(const struct kv_cli_opt *o, char *buf, size_t len)
{
	if (o->label)
		return o->label;
	snprintf(buf, len, "--%s", o->name);
	return buf;
}

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
		if (!*arg)
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

/* getopt_long's tables from opts: short letters into optstring, long ones into lo. */
static void tables(const struct kv_cli_opt *opts, char *optstring, struct option *lo)
{
	size_t i, k = 0;

	for (i = 0; opts[i].name; i++) {
		int arg = opts[i].kind == KV_CLI_FLAG ? no_argument : required_argument;

		lo[i] = (struct option){ opts[i].name, arg, NULL, 256 + (int)i };
		if (opts[i].short_name) {
			optstring[k++] = opts[i].short_name;
			if (arg == required_argument)
				optstring[k++] = ':';
		}
	}
	lo[i++] = (struct option){ "help", no_argument, NULL, 'h' };
	lo[i] = (struct option){ NULL, 0, NULL, 0 };
	optstring[k++] = 'h';
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

/* Checks the operands after the options; returns 0 or 2 with a message. */
static int operands(const struct kv_cli_cmd *cmd, int argc, char **argv, const char **operand)
{
	if (!cmd->positional && optind != argc) {
		fprintf(stderr, "kvsim: %s: unexpected argument '%s'\n", cmd->name, argv[optind]);
		cmd->usage(stderr);
		return 2;
	}
	if (cmd->positional && optind != argc - 1) {
		fprintf(stderr, "kvsim: %s: expected one %s, got %d arguments\n", cmd->name,
			cmd->positional, argc - optind);
		cmd->usage(stderr);
		return 2;
	}
	if (cmd->positional)
		*operand = argv[optind];
	return 0;
}

int kv_cli_parse(const struct kv_cli_cmd *cmd, const struct kv_cli_opt *opts, int argc,
		  char **argv, const char **operand)
{
	struct option lo[MAX_OPTS + 2];
	char optstring[2 * MAX_OPTS + 2];
	const struct kv_cli_opt *o;
	int ch, rc;

	tables(opts, optstring, lo);
	optind = 1;
	while ((ch = getopt_long(argc, argv, optstring, lo, NULL)) != -1) {
		if (ch == 'h' && !((o = entry(opts, ch)))) {
			cmd->usage(stdout);
			return -1;
		}
		if (!(o = entry(opts, ch))) {
			cmd->usage(stderr);
			return 2;
		}
		if ((rc = store(cmd, o, optarg)))
			return rc;
		if (o->seen)
			*o->seen = 1;
	}
	return operands(cmd, argc, argv, operand);
}
