/*
 * outfault.c -- the output layer's file operations through the write fault
 * hook (KVSIM_FAIL_WRITE, kv_fault_write in sim/kv_common.h); see outfault.h.
 */
#include "outfault.h"

#include <errno.h>
#include <stdint.h>
#include <unistd.h>

/* fopencookie write: one write(2) of a stdio buffer, or an injected ENOSPC. */
static ssize_t cookie_write(void *c, const char *buf, size_t n)
{
	int fd = (int)(intptr_t)c;
	size_t off = 0;
	ssize_t w;

	if (kv_fault_write())
		return -1;
	while (off < n) {
		w = write(fd, buf + off, n - off);
		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0)
			return off ? (ssize_t)off : -1;
		off += (size_t)w;
	}
	return (ssize_t)n;
}

static int cookie_close(void *c)
{
	int fd = (int)(intptr_t)c;

	if (kv_fault_write()) {
		close(fd);
		errno = ENOSPC;
		return -1;
	}
	return close(fd);
}

FILE *kv_out_fdopen(int fd)
{
	cookie_io_functions_t io = { .read = NULL, .write = cookie_write, .seek = NULL,
				     .close = cookie_close };

	if (!kv_fault_write_armed())
		return fdopen(fd, "w");
	return fopencookie((void *)(intptr_t)fd, "w", io);
}

int kv_out_rename(const char *from, const char *to)
{
	return kv_fault_write() ? -1 : rename(from, to);
}
