/*
 * outfault.h -- the output layer's file operations, through the write fault
 * hook (kv_fault_write in sim/kv_common.h, armed by KVSIM_FAIL_WRITE) that
 * the tests use to simulate a failed write or a full disk.
 *
 * kv_out_fdopen wraps the descriptor of a new output file in a stream whose
 * buffer writes and close can fail with ENOSPC on demand; kv_out_rename
 * renames.  Without KVSIM_FAIL_WRITE they are fdopen(fd, "w") and rename().
 * Every file of kvsim's outputs is opened or renamed through these two (and
 * kv_fault_write itself where a file is created), so that one armed hook
 * reaches every write; nothing here knows which file it is.
 */
#ifndef KV_OUTFAULT_H
#define KV_OUTFAULT_H

#include "../../sim/kv_common.h"

#include <stdio.h>

/* A write stream on fd (NULL with errno set, the descriptor still open). */
FILE *kv_out_fdopen(int fd);

/* rename(from, to), or -1 when the hook fails it; 0 or -1 with errno set. */
int kv_out_rename(const char *from, const char *to);

#endif /* KV_OUTFAULT_H */
