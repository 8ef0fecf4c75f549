/* kv_common.c -- error strings, diagnostics, allocation wrappers. */
#include "kv_common.h"

#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

const char *kv_strerror(int err)
{
	switch (err) {
#define KV__ERR_CASE(name, val, msg)                                          \
	case KV_E##name:                                                      \
		return msg;
		KV_ERRNO_MAP(KV__ERR_CASE)
#undef KV__ERR_CASE
	case 0:
		return "success";
	default:
		return "unknown error";
	}
}

int kv_diag_set(struct kv_diag *d, int err, const char *file, unsigned long line,
		unsigned long col, const char *field, const char *fmt, ...)
{
	va_list ap;

	if (!d)
		return err;
	snprintf(d->file, sizeof(d->file), "%s", file ? file : "");
	d->line = line;
	d->col = col;
	snprintf(d->field, sizeof(d->field), "%s", field ? field : "");
	va_start(ap, fmt);
	vsnprintf(d->msg, sizeof(d->msg), fmt, ap);
	va_end(ap);
	return err;
}

void kv_diag_print(const struct kv_diag *d, FILE *f)
{
	fputs("kvsim: ", f);
	if (d->file[0]) {
		fputs(d->file, f);
		if (d->line)
			fprintf(f, ":%lu", d->line);
		if (d->line && d->col)
			fprintf(f, ":%lu", d->col);
		fputs(": ", f);
	}
	if (d->field[0])
		fprintf(f, "%s: ", d->field);
	fprintf(f, "%s\n", d->msg[0] ? d->msg : "error");
}

static long alloc_fail_at; /* 0: never; else fail the Nth call */
static long alloc_calls; /* kv_x* calls so far (counted when KVSIM_FAIL_ALLOC is set) */
static int alloc_armed; /* KVSIM_FAIL_ALLOC is set */
static long write_fail_at; /* 0: never; else fail the Nth output operation */
static long write_calls; /* output operations so far (counted when KVSIM_FAIL_WRITE is set) */
static int write_armed; /* KVSIM_FAIL_WRITE is set */

/* Reads a fault variable: sets *armed when present and returns N (0 when absent or "0"). */
static long fault_env(const char *name, int *armed)
{
	const char *s = getenv(name);

	*armed = s && *s;
	return *armed ? strtol(s, NULL, 10) : 0;
}

static void fault_report(void)
{
	fprintf(stderr, "kvsim: fault: %ld allocations, %ld output operations\n", alloc_calls,
		write_calls);
}

void kv_alloc_fault_init(void)
{
	alloc_fail_at = fault_env("KVSIM_FAIL_ALLOC", &alloc_armed);
	write_fail_at = fault_env("KVSIM_FAIL_WRITE", &write_armed);
	alloc_calls = write_calls = 0;
	if ((alloc_armed && alloc_fail_at == 0) || (write_armed && write_fail_at == 0))
		atexit(fault_report);
}

int kv_fault_write_armed(void)
{
	return write_armed;
}

int kv_fault_write(void)
{
	if (!write_armed || ++write_calls != write_fail_at)
		return 0;
	errno = ENOSPC;
	return 1;
}

void kv_oom(size_t n)
{
	if (n)
		fprintf(stderr, "kvsim: out of memory allocating %zu bytes\n", n);
	else
		fputs("kvsim: out of memory\n", stderr);
	exit(3);
}

static void *alloc_check(void *p, size_t n)
{
	if (alloc_armed && ++alloc_calls == alloc_fail_at) {
		free(p);
		p = NULL;
	}
	if (!p && n)
		kv_oom(n);
	return p;
}

void *kv_xmalloc(size_t n)
{
	return alloc_check(malloc(n ? n : 1), n ? n : 1);
}

void *kv_xcalloc(size_t nmemb, size_t size)
{
	if (size && nmemb > SIZE_MAX / size)
		return alloc_check(NULL, SIZE_MAX);
	return alloc_check(calloc(nmemb ? nmemb : 1, size ? size : 1),
			   nmemb && size ? nmemb * size : 1);
}

void *kv_xrealloc(void *p, size_t n)
{
	return alloc_check(realloc(p, n ? n : 1), n ? n : 1);
}

void *kv_xaligned_alloc(size_t align, size_t n)
{
	n = (n + align - 1) / align * align; /* aligned_alloc wants a multiple */
	return alloc_check(aligned_alloc(align, n ? n : align), n ? n : align);
}

char *kv_xstrdup(const char *s)
{
	size_t n = strlen(s) + 1;
	char *d = kv_xmalloc(n);

	memcpy(d, s, n);
	return d;
}

FILE *kv_xfopen(const char *path, const char *mode)
{
	FILE *f = fopen(path, mode);

	if (!f && errno == ENOMEM)
		kv_oom(0);
	return f;
}

void kv__check_fail(const char *file, int line, const char *cond, const char *fmt,
		    ...)
{
	va_list ap;

	fprintf(stderr, "kvsim: invariant violated at %s:%d: %s: ", file, line, cond);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	abort();
}
