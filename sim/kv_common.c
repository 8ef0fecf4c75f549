/* kv_common.c -- error strings, diagnostics, allocation wrappers. */
#include "kv_common.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <stdint.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

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

/* What a file that is not a regular file is, for "is a FIFO". */
static const char *file_kind(mode_t m)
{
	if (S_ISDIR(m))
		return "a directory";
	if (S_ISFIFO(m))
		return "a FIFO (named pipe)";
	if (S_ISSOCK(m))
		return "a socket";
	if (S_ISCHR(m))
		return "a character device";
	if (S_ISBLK(m))
		return "a block device";
	return "not a regular file";
}

static int open_error(const char *path, int e, struct kv_diag *d)
{
	return kv_diag_set(d, e == ENOENT || e == ENOTDIR ? KV_ENOENT : KV_EIO, path, 0, 0, "",
			   "cannot open: %s", strerror(e));
}

static int not_regular(const char *path, mode_t m, struct kv_diag *d)
{
	return kv_diag_set(d, KV_EINVAL, path, 0, 0, "",
			   "%s: expected a regular file (pipes, devices and directories are not read as input: save the data to a file first)",
			   file_kind(m));
}

/*
 * stat() first keeps kvsim from opening devices at all (opening one can
 * have effects); the O_NONBLOCK open and fstat() then check the file
 * actually opened, so a FIFO swapped in between cannot block either.
 * Rejected: opening blocking and relying on stat() alone (a race), and
 * reading pipes (a trace is rewound, and a pipe's size is unknown).
 */
int kv_input_open(const char *path, FILE **out, struct kv_diag *d)
{
	struct stat st;
	int fd, fl;

	*out = NULL;
	if (stat(path, &st))
		return open_error(path, errno, d);
	if (!S_ISREG(st.st_mode))
		return not_regular(path, st.st_mode, d);
	fd = open(path, O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
	if (fd < 0)
		return open_error(path, errno, d);
	if (fstat(fd, &st) || !S_ISREG(st.st_mode) || (fl = fcntl(fd, F_GETFL)) < 0 ||
	    fcntl(fd, F_SETFL, fl & ~O_NONBLOCK) < 0) {
		int e = errno;

		close(fd);
		return S_ISREG(st.st_mode) ? open_error(path, e, d) : not_regular(path, st.st_mode, d);
	}
	*out = fdopen(fd, "r");
	if (!*out) {
		int e = errno;

		close(fd);
		if (e == ENOMEM)
			kv_oom(0);
		return open_error(path, e, d);
	}
	return 0;
}

int kv_input_read(const char *path, size_t max_bytes, char **text, size_t *len,
		  struct kv_diag *d)
{
	struct stat st;
	size_t cap, n = 0, got;
	char *buf;
	FILE *f;
	int err = kv_input_open(path, &f, d);

	if (err)
		return err;
	if (fstat(fileno(f), &st) == 0 && (uint64_t)st.st_size > max_bytes) {
		fclose(f);
		return kv_diag_set(d, KV_ERANGE, path, 0, 0, "",
				   "file of %llu bytes: expected at most %zu bytes (%zu MiB) for a YAML file",
				   (unsigned long long)st.st_size, max_bytes, (size_t)(max_bytes / KV_MiB));
	}
	/* the size can change after fstat: the loop still stops at max_bytes + 1 */
	cap = 4096;
	buf = kv_xmalloc(cap + 1);
	while (n <= max_bytes && (got = fread(buf + n, 1, cap - n, f)) > 0) {
		n += got;
		if (n == cap && cap <= max_bytes)
			buf = kv_xrealloc(buf, (cap *= 2) + 1);
	}
	if (ferror(f) || n > max_bytes) {
		int e = errno ? errno : EIO;

		fclose(f);
		free(buf);
		if (n > max_bytes)
			return kv_diag_set(d, KV_ERANGE, path, 0, 0, "",
					   "file grew past %zu bytes while read: expected at most that for a YAML file",
					   max_bytes);
		return kv_diag_set(d, KV_EIO, path, 0, 0, "", "cannot read: %s", strerror(e));
	}
	fclose(f);
	buf[n] = '\0';
	*text = buf;
	*len = n;
	return 0;
}

const char *kv_show(const char *s, size_t n, char *buf, size_t len)
{
	static const char hex[] = "0123456789abcdef";
	size_t i, o = 0;

	for (i = 0; i < n; i++) {
		unsigned char c = (unsigned char)s[i];
		char e[5] = { '\\', 0, 0, 0, 0 };

		if (c == 0)
			e[1] = '0';
		else if (c == '\n')
			e[1] = 'n';
		else if (c == '\r')
			e[1] = 'r';
		else if (c == '\t')
			e[1] = 't';
		else if (c < 0x20 || c == 0x7f) {
			e[1] = 'x';
			e[2] = hex[c >> 4];
			e[3] = hex[c & 15];
		} else {
			e[0] = (char)c;
		}
		if (o + strlen(e) + 4 > len) {
			strcpy(buf + o, "...");
			return buf;
		}
		memcpy(buf + o, e, strlen(e));
		o += strlen(e);
	}
	buf[o] = '\0';
	return buf;
}

/*
 * A normal double v > 0 as odd * 2^*e (odd < 2^53), from its bits; 0 for a
 * subnormal (not needed here: treated as not exact).
 */
static int odd_part(double v, uint64_t *odd, int *e)
{
	uint64_t b, m;
	int x, z;

	memcpy(&b, &v, sizeof(b));
	x = (int)(b >> 52 & 0x7ff);
	if (x == 0)
		return 0;
	m = (b & ((UINT64_C(1) << 52) - 1)) | UINT64_C(1) << 52; /* v = m * 2^(x - 1075) */
	z = __builtin_ctzll(m);
	*odd = m >> z;
	*e = x - 1075 + z;
	return 1;
}

/* odd * 2^s as an integer below 2^53, or 0 when it is not. */
static uint64_t widen(uint64_t odd, int s)
{
	return s < 53 && 64 - __builtin_clzll(odd) + s <= 53 ? odd << s : 0;
}

int kv_sum_exact(double c, double x, uint64_t m)
{
	const uint64_t lim = UINT64_C(1) << 53;
	uint64_t a = 0, b, oa = 0, ob;
	int ec = INT_MAX, ex, e;

	if (!(c >= 0 && x >= 0 && isfinite(c) && isfinite(x)))
		return 0;
	if (x == 0 || m == 0)
		return 1;
	if (!odd_part(x, &ob, &ex) || (c > 0 && !odd_part(c, &oa, &ec)))
		return 0;
	e = ec < ex ? ec : ex; /* c and x are whole multiples of 2^e */
	b = widen(ob, ex - e); /* x / 2^e */
	if (c > 0 && !(a = widen(oa, ec - e))) /* c / 2^e */
		return 0;
	/* every partial sum is a whole multiple of 2^e; below 2^(53 + e) it is a double */
	return b && m <= (lim - 1 - a) / b;
}
