/* sweep_text.c -- a growable string, and a YAML node back to flow text for --set; see sweep.h. */
#include "sweep.h"
#include "opts.h"
#include "status.h"

#if KV_HAVE_MPI
#include <mpi.h>
#endif

#if KV_HAVE_MPI
#include <mpi.h>
#endif
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

/* --- growable string ----------------------------------------------------- */


void kv__sweep_sb_putn(struct sbuf *b, const char *p, size_t n)
{
	if (b->len + n + 1 > b->cap) {
		b->cap = (b->len + n + 1) * 2;
		b->s = kv_xrealloc(b->s, b->cap);
	}
	memcpy(b->s + b->len, p, n);
	b->len += n;
	b->s[b->len] = 0;
}

void kv__sweep_sb_puts(struct sbuf *b, const char *s)
{
	kv__sweep_sb_putn(b, s, strlen(s));
}


void kv__sweep_sb_printf(struct sbuf *b, const char *fmt, ...)
{
	char tmp[1024];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(tmp, sizeof(tmp), fmt, ap);
	va_end(ap);
	kv__sweep_sb_puts(b, tmp);
}

/* Returns the text (never NULL) and leaves b empty; the caller frees it. */
char *kv__sweep_sb_take(struct sbuf *b)
{
	char *s = b->s ? b->s : kv_xstrdup("");

	memset(b, 0, sizeof(*b));
	return s;
}

/*
 * Appends s as one CSV field (csv.h), its line breaks as spaces: every row
 * of sweep.csv stays one line, which gnuplot needs (error messages are the
 * only fields that could hold one).
 */
void kv__sweep_sb_csv(struct sbuf *b, const char *s)
{
	char *flat = kv_xstrdup(s), *c, *esc;
	size_t n;

	for (c = flat; *c; c++)
		if (*c == '\n' || *c == '\r')
			*c = ' ';
	n = kv_csv_escape(NULL, 0, flat);
	esc = kv_xmalloc(n + 1);
	kv_csv_escape(esc, n + 1, flat);
	kv__sweep_sb_putn(b, esc, n);
	free(esc);
	free(flat);
}

/* --- a YAML node back to flow text, for --set ---------------------------- */

/* 1 if a plain scalar's text reads back as the same plain scalar in flow context. */
static int plain_ok(const char *s)
{
	if (!*s)
		return 1;
	if (strchr("&*!|>%@`'\"?#, ", s[0]) || (s[0] == '-' && (s[1] == ' ' || !s[1])))
		return 0;
	return !strpbrk(s, ",[]{}#\"\n\\") && !strstr(s, ": ") && s[strlen(s) - 1] != ':';
}

static void emit_scalar(struct sbuf *b, const char *s, int quoted)
{
	if (!quoted && plain_ok(s)) {
		kv__sweep_sb_puts(b, s);
		return;
	}
	kv__sweep_sb_putn(b, "\"", 1);
	for (; *s; s++) {
		if (*s == '"' || *s == '\\')
			kv__sweep_sb_putn(b, "\\", 1);
		if (*s == '\n')
			kv__sweep_sb_puts(b, "\\n");
		else
			kv__sweep_sb_putn(b, s, 1);
	}
	kv__sweep_sb_putn(b, "\"", 1);
}

/* Writes n as YAML flow text: a scalar, [a, b] or {k: v, ...}. */
static void emit_node(struct sbuf *b, struct kv_cfg_node *n)
{
	struct kv_cfg_node *c;

	n->used = 1;
	if (n->type == KV_CFG_SCALAR) {
		emit_scalar(b, n->value, n->quoted);
		return;
	}
	kv__sweep_sb_puts(b, n->type == KV_CFG_MAP ? "{" : "[");
	for (c = n->child; c; c = c->next) {
		if (c != n->child)
			kv__sweep_sb_puts(b, ", ");
		if (n->type == KV_CFG_MAP) {
			emit_scalar(b, c->key, 0);
			kv__sweep_sb_puts(b, ": ");
		}
		emit_node(b, c);
	}
	kv__sweep_sb_puts(b, n->type == KV_CFG_MAP ? "}" : "]");
}

char *kv__sweep_node_text(struct kv_cfg_node *n)
{
	struct sbuf b = { 0 };

	emit_node(&b, n);
	return kv__sweep_sb_take(&b);
}
