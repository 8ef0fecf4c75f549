/*
 * exec_fail.c -- kv__backend_fail() (exec_impl.h), alone in its file so
 * that kvsim-cuda.so carries its own copy without exec.c's registry, which
 * would pull the CPU backend and its BLAS into the module.
 */
#include "exec_impl.h"

#include <stdarg.h>
#include <stdio.h>

int kv__backend_fail(struct kv_backend *b, int err, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(b->err, sizeof(b->err), fmt, ap);
	va_end(ap);
	return err;
}
