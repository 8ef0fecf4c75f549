/*
 * sweep_mpi.h -- a job spread over MPI ranks, the layer under `kvsim sweep`
 * when it runs under mpirun; it knows nothing of sweeps.
 *
 * The caller describes the job by hooks (struct kv_mpi_job) and this layer
 * runs them on the ranks: alone, one rank does the whole job; otherwise
 * rank 0 prepares (the others wait for its verdict), every rank runs its
 * part (rank k: part k+1 of R), and after a barrier rank 0 finishes the job
 * from what the parts left behind.  The ranks share the caller's output
 * (one machine, or a shared filesystem).  Exit statuses follow the
 * command's: 2 a bad input, 128 + N a signal; a part ending in either
 * stops the job before finish.  Built only with KV_HAVE_MPI.
 */
#ifndef KV_SWEEP_MPI_H
#define KV_SWEEP_MPI_H

struct kv_mpi_job {
	const char *name; /* the command, for messages ("sweep") */
	int sharded; /* the caller was given a part already (--shard I/N): refused under R > 1 ranks */
	void *ctx; /* the caller's, passed to every hook */
	int (*whole)(void *ctx); /* one rank: the whole job; the exit status */
	int (*prepare)(void *ctx); /* rank 0 before the parts: 0 or the exit status of every rank */
	int (*part)(void *ctx, long part, long n_parts); /* every rank: part (1-based) of n_parts */
	int (*finish)(void *ctx); /* rank 0 after every part ended without 2 or a signal */
	void (*release)(void *ctx); /* rank 0 at the end, after MPI_Finalize: undo prepare */
};

/*
 * Runs job over the ranks of MPI_COMM_WORLD between MPI_Init and
 * MPI_Finalize.  Returns this rank's exit status: rank 0 the job's (finish's,
 * or the worst part's when it was 2 or a signal), the others 0 unless the
 * worst part was 2 or a signal.
 */
int kv__sweep_mpi(const struct kv_mpi_job *job);

#endif /* KV_SWEEP_MPI_H */
