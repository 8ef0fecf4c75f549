/*
 * atomic.h -- one file written atomically outside a run's directory commit
 * (sweep.csv, calibrate's and validate's outputs).
 *
 * The file is written to DIR/.NAME.tmp and renamed into place by
 * kv_atomic_commit(), both through the fault hook (outfault.h): a reader
 * sees the earlier file or the whole new one, never a part.  open fills d
 * (file: the temporary; "cannot create: REASON") and returns KV_EIO,
 * exiting 3 when the stream could not be allocated; commit closes, renames,
 * and on any failure removes the temporary, leaves an earlier file intact
 * and fills d (file: PATH; "write failed: REASON").  Both return 0 on
 * success.
 *
 * An existing PATH that is not a regular file (after symbolic links: a
 * device such as /dev/null or /dev/full, a FIFO, a socket, a directory) is
 * refused, never renamed over nor written through: kv_atomic_check() (also
 * called by open) returns KV_EINVAL with d saying what it is.  Callers that
 * take a lock on PATH (kv_path_lock) check first, so no lock file is made
 * beside a device.
 */
#ifndef KV_ATOMIC_H
#define KV_ATOMIC_H

#include "outdir.h"

#include <stdio.h>

struct kv_atomic {
	FILE *f; /* the temporary's stream, NULL after commit */
	char path[KV_PATH_MAX], tmp[KV_PATH_MAX + 16]; /* the file, and its temporary */
};

int kv_atomic_check(const char *path, struct kv_diag *d);
int kv_atomic_open(struct kv_atomic *a, const char *path, struct kv_diag *d);
int kv_atomic_commit(struct kv_atomic *a, struct kv_diag *d);

#endif /* KV_ATOMIC_H */
