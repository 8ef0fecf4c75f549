/*
 * outdir.h -- an output directory that holds exactly one run.
 *
 * The contract (docs/reliability.md, "The output directory"):
 *
 *  - One run, one commit.  A run writes every file into a staging
 *    directory beside DIR (PARENT/.BASE.tmp-XXXXXX) and commits with one
 *    atomic rename: renameat2(RENAME_EXCHANGE) swaps the staging directory
 *    with an existing DIR, rename() moves it into place when DIR is new.
 *    A reader of DIR sees the whole earlier run or the whole new one, never
 *    a mix, whatever signal (SIGKILL included) arrives when.
 *  - The files after a commit are exactly the run's: a rerun with fewer
 *    outputs (requests.csv off, no chart) leaves none of the earlier run's
 *    files behind.  manifest.txt names the run's files with its command,
 *    seed and a digest of its configuration.
 *  - One writer at a time.  DIR is locked for the whole run with flock() on
 *    PARENT/.BASE.lock (an empty file that stays: removing a lock file is
 *    racy); a second writer fails at once naming the lock.
 *  - No litter.  A run killed before its commit leaves its staging
 *    directory, one killed after the swap leaves the replaced run there;
 *    the next writer of DIR (holding the lock) removes both.
 *  - Nothing of the user's is replaced by accident.  An existing DIR is
 *    replaced only when it is empty or holds a kvsim run (its manifest, or
 *    only kvsim's own file names for runs written before manifests);
 *    anything else needs KV_OUTDIR_FORCE (`--force`).
 *
 * Paths are heap strings: nothing is cut.  A path longer than KV_PATH_MAX
 * (the kernel's PATH_MAX) cannot be opened and is refused with a message.
 */
#ifndef KV_OUTDIR_H
#define KV_OUTDIR_H

#include "../../sim/kv_common.h"

#define KV_PATH_MAX 4096 /* longest path the kernel accepts, with its NUL */

enum {
	KV_OUTDIR_FORCE = 1, /* replace a directory that holds more than a kvsim run */
	KV_OUTDIR_NOLOCK = 2, /* the caller holds a lock that covers DIR (a sweep's points) */
};

struct kv_outdir {
	char *dir; /* DIR as given, trailing slashes removed */
	char *parent; /* its parent directory ("." for a bare name) */
	char *base; /* its last component */
	char *stage; /* the staging directory, NULL before open and after commit/abort */
	char *lock_path; /* PARENT/.BASE.lock, NULL with KV_OUTDIR_NOLOCK */
	int lock_fd; /* the locked file, -1 when none */
	unsigned flags; /* KV_OUTDIR_* */
};

/*
 * Checks dir (not empty, not "/", "." or "..", short enough), creates its
 * parent directories, locks it, removes stale staging directories of
 * earlier killed runs, checks what an existing DIR holds and creates the
 * staging directory.  Returns 0, KV_EINVAL (a bad path, or a DIR that is
 * not a kvsim run without KV_OUTDIR_FORCE: exit 2) or KV_EIO (a locked DIR,
 * a failed mkdir: exit 1) with d filled; on failure nothing is left on disk
 * but the lock file and parent directories.
 */
int kv_outdir_open(struct kv_outdir *o, const char *dir, unsigned flags, struct kv_diag *d);

/* A new heap string "STAGE/name" (the file's path until the commit). */
char *kv_outdir_stage_path(const struct kv_outdir *o, const char *name);

/* A new heap string "DIR/name" (the file's path after the commit). */
char *kv_outdir_final_path(const struct kv_outdir *o, const char *name);

/*
 * Writes manifest.txt into the staging directory (the header lines in
 * `header`, each "key value\n", then "file NAME" for each regular file
 * staged, sorted) and commits it as DIR in one rename; the replaced run is
 * then removed.  Returns 0, or KV_EIO with d filled and DIR as it was (the
 * staging directory is removed by kv_outdir_abort).
 */
int kv_outdir_commit(struct kv_outdir *o, const char *header, struct kv_diag *d);

/* Removes the staging directory (if any), unlocks and frees; safe to call twice. */
void kv_outdir_abort(struct kv_outdir *o);

/* Unlocks and frees after a commit (same as kv_outdir_abort). */
void kv_outdir_release(struct kv_outdir *o);

/*
 * Locks the output path `path` (a directory or a file) for an update in
 * place (kvsim plot adding charts, calibrate writing a profile set) with
 * flock() on PARENT/.BASE.lock.  Returns the locked descriptor (close it to
 * unlock) or -1 with d filled (KV_EIO: held by another kvsim, or cannot be
 * created).
 */
int kv_path_lock(const char *path, struct kv_diag *d);

/* mkdir -p; returns 0 or -1 with errno set. */
int kv_mkdirs(const char *path);

/* Removes path and everything below it (no symlinks followed); 0 or -1 with errno set. */
int kv_rmtree(const char *path);

/*
 * Adds name to DIR/manifest.txt (when DIR has one and does not list it
 * yet), rewriting it atomically; the caller holds DIR's lock.  Returns 0 or
 * KV_EIO with d filled.
 */
int kv_manifest_add(const char *dir, const char *name, struct kv_diag *d);

/* 64-bit FNV-1a of len bytes, continuing from h (start with KV_FNV_SEED). */
#define KV_FNV_SEED 0xcbf29ce484222325ULL
uint64_t kv_fnv1a(uint64_t h, const void *p, size_t len);

/* A new heap string printf'd (aborts on out of memory). */
char *kv_xasprintf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

#endif /* KV_OUTDIR_H */
