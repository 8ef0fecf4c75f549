/* sweep_mpi.c -- a sweep spread over MPI ranks (the points dealt round-robin); see sweep.h. */
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

#if KV_HAVE_MPI
/*
 * Rank 0's lock of the sweep's directory for the whole MPI sweep; *fd the
 * descriptor (kept open until exit).  Returns 0 or the exit status.
 */
static int sweep_lock_only(const struct sweep_args *a, int *fd)
{
	char out[KV_PATH_MAX];
	struct sweep sw;
	struct kv_diag d;
	int rc = 2;

	*fd = -1;
	if (!kv__sweep_load(&sw, a->path, &d) && !(rc = kv__sweep_out_dir(&sw, a, out, &d))) {
		rc = 1;
		if (kv_mkdirs(out))
			kv_diag_set(&d, KV_EIO, out, 0, 0, "", "cannot create: %s", strerror(errno));
		else if ((*fd = kv__sweep_lock_sweep_dir(out, &d)) >= 0)
			rc = 0;
	}
	if (rc)
		kv_diag_print(&d, stderr);
	kv__sweep_release(&sw);
	return rc;
}

/*
 * Under mpirun: rank k runs the points of shard k+1 of R (each with its -j
 * worker processes), then, after a barrier, rank 0 completes the sweep from
 * the points' directories -- every point is done by then, so it only reads
 * them back -- and writes sweep.csv and the charts, exactly as a single
 * process would.  The ranks share the output directory (one machine, or a
 * shared filesystem).
 */
int kv__sweep_mpi(struct sweep_args *a)
{
	int rank, size, rc, worst, lock_fd = -1;

	MPI_Init(NULL, NULL);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &size);
	if (size > 1 && a->n_shards > 1) {
		if (rank == 0)
			fprintf(stderr, "kvsim: sweep: --shard and mpirun exclude each other: expected one of them\n");
		MPI_Finalize();
		return 2;
	}
	if (size == 1) {
		rc = kv__sweep_once(a, 1, 1);
		MPI_Finalize();
		return rc;
	}
	rc = rank == 0 ? sweep_lock_only(a, &lock_fd) : 0;
	MPI_Bcast(&rc, 1, MPI_INT, 0, MPI_COMM_WORLD);
	if (rc) {
		MPI_Finalize();
		return rc;
	}
	a->shard = rank + 1;
	a->n_shards = size;
	rc = kv__sweep_once(a, 0, 0);
	MPI_Allreduce(&rc, &worst, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
	if (rank == 0 && worst != 2 && worst < 128) {
		a->shard = a->n_shards = 1;
		rc = kv__sweep_once(a, 1, 0);
	} else if (rank == 0) {
		rc = worst;
	}
	MPI_Finalize();
	if (lock_fd >= 0)
		close(lock_fd);
	return rank == 0 ? rc : (worst == 2 || worst >= 128 ? worst : 0);
}
#endif
