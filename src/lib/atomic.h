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
 */
#ifndef KV_ATOMIC_H
#define KV_ATOMIC_H

#include "outdir.h"

#include <stdio.h>

struct kv_atomic {
	FILE *f; /* the temporary's stream, NULL after commit */
	char path[KV_PATH_MAX], tmp[KV_PATH_MAX + 16]; /* the file, and its temporary */
};

int kv_atomic_open(struct kv_atomic *a, const char *path, struct kv_diag *d);
int kv_atomic_commit(struct kv_atomic *a, struct kv_diag *d);

#endif /* KV_ATOMIC_H */
