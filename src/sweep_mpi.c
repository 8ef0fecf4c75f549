/*
 * sweep_mpi.c -- a job spread over MPI ranks (the sweep's points dealt
 * round-robin, one part per rank); see sweep_mpi.h.
 */
#include "sweep_mpi.h"

#if KV_HAVE_MPI
#include <mpi.h>
#include <stdio.h>

/* The exit statuses that stop a job: a bad input (2) or a signal (128 + N). */
static int fatal(int rc)
{
	return rc == 2 || rc >= 128;
}

int kv__sweep_mpi(const struct kv_mpi_job *job)
{
	int rank, size, rc, worst;

	MPI_Init(NULL, NULL);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &size);
	if (size > 1 && job->sharded) {
		if (rank == 0)
			fprintf(stderr, "kvsim: %s: --shard and mpirun exclude each other: expected one of them\n",
				job->name);
		MPI_Finalize();
		return 2;
	}
	if (size == 1) {
		rc = job->whole(job->ctx);
		MPI_Finalize();
		return rc;
	}
	rc = rank == 0 ? job->prepare(job->ctx) : 0;
	MPI_Bcast(&rc, 1, MPI_INT, 0, MPI_COMM_WORLD);
	if (rc) {
		MPI_Finalize();
		return rc;
	}
	rc = job->part(job->ctx, rank + 1, size);
	MPI_Allreduce(&rc, &worst, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
	if (rank == 0 && !fatal(worst))
		rc = job->finish(job->ctx);
	else if (rank == 0)
		rc = worst;
	MPI_Finalize();
	if (rank == 0)
		job->release(job->ctx);
	return rank == 0 ? rc : (fatal(worst) ? worst : 0);
}
#endif
