/*
 * status.h -- the exit statuses of every kvsim command, from one table.
 *
 * KV_EXIT_MAP lists them (name, status, meaning); a command returns a
 * KV_EXIT_* value, or KV_EXIT_SIGNAL(sig) when SIGINT or SIGTERM stopped it
 * (130, 143).  kv_exit_status() maps an error code (kv_common.h) to its
 * status: KV_EIO is an output error, KV_EBACKEND a backend that failed or
 * is absent, every other code bad input.  The README lists the same table.
 */
#ifndef KV_STATUS_H
#define KV_STATUS_H

#include "../sim/kv_common.h"

#define KV_EXIT_MAP(X)                                                          \
	X(OK, 0, "done")                                                        \
	X(OUTPUT, 1, "output error (a failed write or chart, DIR busy)")        \
	X(INPUT, 2, "bad input or usage")                                       \
	X(NOMEM, 3, "out of memory")                                            \
	X(BACKEND, 4, "the execution backend failed or is absent")              \
	X(NOGPU, 77, "no GPU (kvsim gpu)")

enum kv_exit {
#define KV_EXIT_ENUM(name, status, meaning) KV_EXIT_##name = status,
	KV_EXIT_MAP(KV_EXIT_ENUM)
#undef KV_EXIT_ENUM
};

/* A command stopped by signal sig: 128 + sig. */
#define KV_EXIT_SIGNAL(sig) (128 + (sig))

/* The exit status of error code rc (0: KV_EXIT_OK). */
static inline int kv_exit_status(int rc)
{
	return rc == 0 ? KV_EXIT_OK : rc == KV_EIO ? KV_EXIT_OUTPUT :
	       rc == KV_EBACKEND ? KV_EXIT_BACKEND : KV_EXIT_INPUT;
}

#endif /* KV_STATUS_H */
