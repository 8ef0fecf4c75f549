/*
 * atomic.c -- one file written atomically outside a run's directory commit
 * (temporary file + rename, both through the fault hook); see atomic.h.
 */
#include "atomic.h"
#include "outfault.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* What a file of mode m is, for a message ("a directory", "a FIFO", ...). */
static const char *file_kind(mode_t m)
{
	return S_ISDIR(m) ? "a directory" : S_ISCHR(m) ? "a character device" :
	       S_ISBLK(m) ? "a block device" : S_ISFIFO(m) ? "a FIFO" :
	       S_ISSOCK(m) ? "a socket" : "not a regular file";
}

int kv_atomic_check(const char *path, struct kv_diag *d)
{
	struct stat st;

	if (stat(path, &st) || S_ISREG(st.st_mode))
		return 0;
	return kv_diag_set(d, KV_EINVAL, path, 0, 0, "",
			   "is %s: expected a regular file or a new path (kvsim writes a new file and "
			   "renames it into place, which would replace it)", file_kind(st.st_mode));
}

int kv_atomic_open(struct kv_atomic *a, const char *path, struct kv_diag *d)
{
	const char *slash = strrchr(path, '/');
	int fd = -1, e;

	memset(a, 0, sizeof(*a));
	if (kv_atomic_check(path, d))
		return KV_EINVAL;
	if (strlen(path) + 1 > sizeof(a->path))
		return kv_diag_set(d, KV_EINVAL, path, 0, 0, "",
				   "path of %zu bytes is too long: expected at most %zu bytes",
				   strlen(path), sizeof(a->path) - 1);
	snprintf(a->path, sizeof(a->path), "%s", path);
	if (slash)
		snprintf(a->tmp, sizeof(a->tmp), "%.*s/.%s.tmp", (int)(slash - path), path, slash + 1);
	else
		snprintf(a->tmp, sizeof(a->tmp), ".%s.tmp", path);
	if (!kv_fault_write())
		fd = open(a->tmp, O_WRONLY | O_CREAT | O_TRUNC, 0666);
	if (fd >= 0 && !(a->f = kv_out_fdopen(fd))) {
		e = errno;
		close(fd);
		unlink(a->tmp);
		if (e == ENOMEM)
			kv_oom(0);
		errno = e;
	}
	if (!a->f)
		return kv_diag_set(d, KV_EIO, a->tmp, 0, 0, "", "cannot create: %s", strerror(errno));
	return 0;
}

int kv_atomic_commit(struct kv_atomic *a, struct kv_diag *d)
{
	int bad, e;

	errno = 0;
	bad = fflush(a->f) != 0 || ferror(a->f);
	e = errno;
	bad |= fclose(a->f) != 0;
	a->f = NULL;
	if (!e)
		e = errno;
	if (bad || kv_out_rename(a->tmp, a->path)) {
		e = bad && e ? e : errno ? errno : EIO;
		unlink(a->tmp);
		return kv_diag_set(d, KV_EIO, a->path, 0, 0, "", "write failed: %s", strerror(e));
	}
	return 0;
}
