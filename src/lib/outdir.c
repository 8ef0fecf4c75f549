/*
 * outdir.c -- an output directory that holds exactly one run (see outdir.h).
 */
#include "outdir.h"
#include "outfault.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#define MANIFEST "manifest.txt"
#define MANIFEST_MAGIC "kvsim-output 1\n"
#define MANIFEST_MAX_BYTES (1u << 20) /* a manifest larger than this is not ours */
#define STAGE_TAG ".tmp-" /* PARENT/.BASE.tmp-XXXXXX */
#define LONGEST_NAME 64 /* room for the longest file name a command writes in DIR */

/*
 * Files that kvsim's commands write into an output directory, for
 * directories written before manifests existed (they are replaced without
 * --force when they hold nothing else).
 */
static const char *const legacy_names[] = {
	"requests.csv", "timeseries.csv", "summary.csv", "tenants.csv", "tenant_timeseries.csv",
	"run.png", "run.svg", "error.txt", "validate.csv", "iterations.csv", "iterations.png",
	NULL,
};

char *kv_xasprintf(const char *fmt, ...)
{
	char small[256];
	va_list ap;
	char *s;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(small, sizeof(small), fmt, ap); /* measures; most strings fit */
	va_end(ap);
	if (n < 0)
		kv_oom(0);
	s = kv_xmalloc((size_t)n + 1);
	if ((size_t)n < sizeof(small)) {
		memcpy(s, small, (size_t)n + 1);
		return s;
	}
	va_start(ap, fmt);
	vsnprintf(s, (size_t)n + 1, fmt, ap);
	va_end(ap);
	return s;
}

uint64_t kv_fnv1a(uint64_t h, const void *p, size_t len)
{
	const unsigned char *b = p;
	size_t i;

	for (i = 0; i < len; i++) {
		h ^= b[i];
		h *= 0x100000001b3ULL;
	}
	return h;
}

/* --- paths --------------------------------------------------------------------- */

/*
 * Splits path into a parent and a last component, both heap strings.
 * Trailing slashes are dropped; "x/." and "x/.." and a symlink to a
 * directory resolve to the real directory (the commit renames the last
 * component, so it must be a real name).  Returns 0 or KV_EINVAL with d
 * filled.
 */
static int split_path(const char *path, char **dir, char **parent, char **base, struct kv_diag *d)
{
	size_t n = strlen(path);
	char *p, *slash;
	struct stat st;

	if (!n)
		return kv_diag_set(d, KV_EINVAL, "-o", 0, 0, "", "bad value '': expected a directory path");
	if (n + 1 + LONGEST_NAME + 16 > KV_PATH_MAX)
		return kv_diag_set(d, KV_EINVAL, "-o", 0, 0, "",
				   "path of %zu bytes is too long: expected at most %d bytes", n,
				   KV_PATH_MAX - LONGEST_NAME - 17);
	p = kv_xstrdup(path);
	while (n > 1 && p[n - 1] == '/')
		p[--n] = 0;
	slash = strrchr(p, '/');
	if ((lstat(p, &st) == 0 && S_ISLNK(st.st_mode) && stat(p, &st) == 0 && S_ISDIR(st.st_mode)) ||
	    !strcmp(slash ? slash + 1 : p, ".") || !strcmp(slash ? slash + 1 : p, "..")) {
		char *real = realpath(p, NULL);

		if (!real) {
			kv_diag_set(d, KV_EINVAL, path, 0, 0, "", "cannot resolve: %s", strerror(errno));
			free(p);
			return KV_EINVAL;
		}
		free(p);
		p = real;
		n = strlen(p);
		slash = strrchr(p, '/');
	}
	if (!strcmp(p, "/")) {
		free(p);
		return kv_diag_set(d, KV_EINVAL, path, 0, 0, "",
				   "cannot be an output directory: it is the root directory");
	}
	*dir = p;
	*base = kv_xstrdup(slash ? slash + 1 : p);
	if (!slash)
		*parent = kv_xstrdup(".");
	else if (slash == p)
		*parent = kv_xstrdup("/");
	else
		*parent = kv_xasprintf("%.*s", (int)(slash - p), p);
	return 0;
}

int kv_mkdirs(const char *path)
{
	char *buf = kv_xstrdup(path), *p;
	int rc = 0;

	for (p = buf + 1; *p && !rc; p++) {
		if (*p != '/')
			continue;
		*p = 0;
		if (mkdir(buf, 0777) && errno != EEXIST)
			rc = -1;
		*p = '/';
	}
	if (!rc && mkdir(buf, 0777) && errno != EEXIST)
		rc = -1;
	free(buf);
	return rc;
}

/*
 * Removes the tree `name` under directory fd `at` without allocating (no
 * nftw or opendir, which malloc): the entries are read with getdents64 into
 * a buffer on the stack, so cleaning up after a run still works when memory
 * has run out -- the moment it is most needed.  Each pass unlinks what it
 * read and rereads from the start until the directory is empty; depth is
 * bounded (our staging trees are one level deep).  Returns 0 or -1 (errno).
 */
static int rm_at(int at, const char *name, int depth)
{
	struct dirent64_raw {
		uint64_t ino;
		int64_t off;
		unsigned short reclen;
		unsigned char type;
		char name[];
	};
	char buf[4096] __attribute__((aligned(8)));
	int fd, err = 0, any;
	long n, i;

	if (!unlinkat(at, name, 0) || errno == ENOENT)
		return 0;
	if ((errno != EISDIR && errno != EPERM) || depth > 16)
		return -1;
	fd = openat(at, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return -1;
	do {
		any = 0;
		if (lseek(fd, 0, SEEK_SET) < 0) {
			err = errno;
			break;
		}
		while ((n = syscall(SYS_getdents64, fd, buf, sizeof(buf))) > 0) {
			for (i = 0; i < n;) {
				struct dirent64_raw *e = (struct dirent64_raw *)(buf + i);

				i += e->reclen;
				if (!strcmp(e->name, ".") || !strcmp(e->name, ".."))
					continue;
				if (rm_at(fd, e->name, depth + 1)) {
					err = errno;
					break;
				}
				any = 1;
			}
			if (err)
				break;
		}
		if (n < 0 && !err)
			err = errno;
	} while (any && !err);
	close(fd);
	if (!err && unlinkat(at, name, AT_REMOVEDIR))
		err = errno;
	errno = err;
	return err ? -1 : 0;
}

int kv_rmtree(const char *path)
{
	return rm_at(AT_FDCWD, path, 0);
}

/* --- the lock ------------------------------------------------------------------ */

static int lock_file(const char *lock_path, const char *what, struct kv_diag *d)
{
	int fd = open(lock_path, O_RDWR | O_CREAT | O_CLOEXEC, 0666);

	if (fd < 0)
		return kv_diag_set(d, KV_EIO, lock_path, 0, 0, "", "cannot create the lock file: %s",
				   strerror(errno)), -1;
	if (flock(fd, LOCK_EX | LOCK_NB) == 0)
		return fd;
	if (errno == EWOULDBLOCK)
		kv_diag_set(d, KV_EIO, what, 0, 0, "",
			    "another kvsim is writing it (it holds %s): wait for it to finish or "
			    "choose another output", lock_path);
	else
		kv_diag_set(d, KV_EIO, lock_path, 0, 0, "", "cannot lock: %s", strerror(errno));
	close(fd);
	return -1;
}

int kv_path_lock(const char *path, struct kv_diag *d)
{
	char *dir, *parent, *base, *lock;
	int fd;

	if (split_path(path, &dir, &parent, &base, d))
		return -1;
	lock = kv_xasprintf("%s/.%s.lock", parent, base);
	fd = lock_file(lock, dir, d);
	free(lock);
	free(dir);
	free(parent);
	free(base);
	return fd;
}

/* --- what an existing directory holds --------------------------------------------- */

/* Reads a whole small file into a heap string; NULL when absent, unreadable or too large. */
static char *read_small(const char *path, size_t max)
{
	FILE *f = fopen(path, "r");
	char *buf;
	size_t n;

	if (!f)
		return NULL;
	buf = kv_xmalloc(max + 1);
	n = fread(buf, 1, max + 1, f);
	fclose(f);
	if (n > max) {
		free(buf);
		return NULL;
	}
	buf[n] = 0;
	return buf;
}

/* 1 when manifest text (NULL: none) lists name as "file NAME". */
static int manifest_lists(const char *text, const char *name)
{
	size_t n = strlen(name);
	const char *p;

	for (p = text; p && *p; p = strchr(p, '\n'), p = p ? p + 1 : NULL)
		if (!strncmp(p, "file ", 5) && !strncmp(p + 5, name, n) &&
		    (p[5 + n] == '\n' || !p[5 + n]))
			return 1;
	return 0;
}

static int is_legacy(const char *name)
{
	size_t i, n;

	for (i = 0; legacy_names[i]; i++) {
		if (!strcmp(name, legacy_names[i]))
			return 1;
		/* kvsim's own temporaries: ".NAME.XXXXXX", ".NAME.tmp", ".NAME.XXXXXX.old" */
		n = strlen(legacy_names[i]);
		if (name[0] == '.' && !strncmp(name + 1, legacy_names[i], n) && name[1 + n] == '.')
			return 1;
	}
	return !strcmp(name, MANIFEST) || !strcmp(name, "." MANIFEST ".tmp");
}

/*
 * Checks that dir (an existing directory) may be replaced: empty, or every
 * entry is named by its manifest (or, without one, a legacy kvsim name).
 * Returns 0 or KV_EINVAL naming the first other entry.
 */
static int check_replaceable(const char *dir, unsigned flags, struct kv_diag *d)
{
	char *mpath = kv_xasprintf("%s/%s", dir, MANIFEST);
	char *man = read_small(mpath, MANIFEST_MAX_BYTES);
	DIR *dp = opendir(dir);
	struct dirent *e;
	int rc = 0;

	free(mpath);
	if (man && strncmp(man, MANIFEST_MAGIC, strlen(MANIFEST_MAGIC))) {
		free(man);
		man = NULL;
	}
	if (!dp && errno == ENOMEM)
		kv_oom(0);
	if (!dp) {
		rc = kv_diag_set(d, KV_EIO, dir, 0, 0, "", "cannot read the directory: %s",
				 strerror(errno));
		goto out;
	}
	while (!rc && (flags & KV_OUTDIR_FORCE) == 0 && (e = readdir(dp))) {
		if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
			continue;
		if (man ? manifest_lists(man, e->d_name) || is_legacy(e->d_name) : is_legacy(e->d_name))
			continue;
		rc = kv_diag_set(d, KV_EINVAL, dir, 0, 0, "",
				 "holds '%s', which no kvsim run wrote: kvsim replaces an output "
				 "directory whole, so choose an empty or new directory, or pass --force "
				 "to replace it and everything in it",
				 e->d_name);
	}
	closedir(dp);
out:
	free(man);
	return rc;
}

/* Removes PARENT/.BASE.tmp-* left by runs into the same directory that were killed. */
static void clean_stale(const struct kv_outdir *o)
{
	char *prefix = kv_xasprintf(".%s" STAGE_TAG, o->base);
	size_t n = strlen(prefix);
	DIR *dp = opendir(o->parent);
	struct dirent *e;

	while (dp && (e = readdir(dp))) {
		if (strncmp(e->d_name, prefix, n) || strlen(e->d_name) != n + 6)
			continue;
		char *p = kv_xasprintf("%s/%s", o->parent, e->d_name);

		kv_rmtree(p);
		free(p);
	}
	if (dp)
		closedir(dp);
	free(prefix);
}

/* --- open, commit, abort --------------------------------------------------------- */

static mode_t current_umask(void)
{
	mode_t m = umask(022);

	umask(m);
	return m;
}

int kv_outdir_open(struct kv_outdir *o, const char *dir, unsigned flags, struct kv_diag *d)
{
	struct stat st;
	int rc;

	memset(o, 0, sizeof(*o));
	o->lock_fd = -1;
	o->flags = flags;
	if ((rc = split_path(dir, &o->dir, &o->parent, &o->base, d)))
		return rc;
	if (kv_mkdirs(o->parent))
		return kv_diag_set(d, KV_EIO, o->parent, 0, 0, "", "cannot create the directory: %s",
				   strerror(errno));
	if (!(flags & KV_OUTDIR_NOLOCK)) {
		o->lock_path = kv_xasprintf("%s/.%s.lock", o->parent, o->base);
		if ((o->lock_fd = lock_file(o->lock_path, o->dir, d)) < 0)
			return KV_EIO;
	}
	clean_stale(o);
	if (lstat(o->dir, &st) == 0) {
		if (!S_ISDIR(st.st_mode))
			return kv_diag_set(d, KV_EINVAL, o->dir, 0, 0, "",
					   "exists and is not a directory: expected an output directory");
		if ((rc = check_replaceable(o->dir, flags, d)))
			return rc;
	}
	o->stage = kv_xasprintf("%s/.%s" STAGE_TAG "XXXXXX", o->parent, o->base);
	if (kv_fault_write() || !mkdtemp(o->stage)) {
		rc = errno ? errno : ENOSPC;
		free(o->stage);
		o->stage = NULL;
		return kv_diag_set(d, KV_EIO, o->dir, 0, 0, "",
				   "cannot create a staging directory in %s: %s", o->parent,
				   strerror(rc));
	}
	chmod(o->stage, 0777 & ~current_umask());
	return 0;
}

char *kv_outdir_stage_path(const struct kv_outdir *o, const char *name)
{
	return kv_xasprintf("%s/%s", o->stage, name);
}

char *kv_outdir_final_path(const struct kv_outdir *o, const char *name)
{
	return kv_xasprintf("%s/%s", o->dir, name);
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/*
 * The staged files' names, sorted; *n set.  The caller frees each and the
 * array.  NULL with errno set when the directory cannot be read (out of
 * memory exits 3): a manifest must never silently list fewer files.
 */
static char **staged_files(const struct kv_outdir *o, size_t *n)
{
	DIR *dp = opendir(o->stage);
	struct dirent *e;
	char **v = kv_xmalloc(sizeof(*v));
	size_t cap = 1;

	*n = 0;
	if (!dp) {
		if (errno == ENOMEM)
			kv_oom(0);
		free(v);
		return NULL;
	}
	for (errno = 0; (e = readdir(dp)); errno = 0) {
		if (e->d_name[0] == '.' || !strcmp(e->d_name, MANIFEST))
			continue;
		if (*n == cap) {
			cap = cap ? 2 * cap : 16;
			v = kv_xrealloc(v, cap * sizeof(*v));
		}
		v[(*n)++] = kv_xstrdup(e->d_name);
	}
	if (errno) { /* readdir failed */
		int err = errno;

		closedir(dp);
		while (*n)
			free(v[--*n]);
		free(v);
		errno = err;
		return NULL;
	}
	closedir(dp);
	if (*n)
		qsort(v, *n, sizeof(*v), cmp_str);
	return v;
}

/* Writes text to path through the output layer's fault hook; 0 or errno. */
static int write_file(const char *path, const char *text)
{
	int fd = -1, e = 0;
	FILE *f = NULL;

	if (!kv_fault_write())
		fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0666);
	if (fd < 0)
		return errno ? errno : ENOSPC;
	if (!(f = kv_out_fdopen(fd))) {
		e = errno;
		close(fd);
		if (e == ENOMEM)
			kv_oom(0);
		return e;
	}
	errno = 0;
	if (fputs(text, f) == EOF || fflush(f) || ferror(f))
		e = errno ? errno : EIO;
	if (fclose(f) && !e)
		e = errno ? errno : EIO;
	return e;
}

static int write_manifest(const struct kv_outdir *o, const char *header)
{
	size_t n, i, len = strlen(MANIFEST_MAGIC) + strlen(header) + 1;
	char **files = staged_files(o, &n), *text, *p, *path;
	int e;

	if (!files)
		return errno ? errno : EIO;
	for (i = 0; i < n; i++)
		len += strlen(files[i]) + 6;
	text = p = kv_xmalloc(len);
	p += sprintf(p, "%s%s", MANIFEST_MAGIC, header);
	for (i = 0; i < n; i++) {
		p += sprintf(p, "file %s\n", files[i]);
		free(files[i]);
	}
	free(files);
	path = kv_outdir_stage_path(o, MANIFEST);
	e = write_file(path, text);
	free(path);
	free(text);
	return e;
}

/*
 * Moves the staging directory to DIR in one rename.  Where the filesystem
 * has no RENAME_EXCHANGE (EINVAL), the old DIR is first renamed to a
 * staging name: two renames, so a kill between them leaves no DIR, and the
 * earlier run in PARENT/.BASE.tmp-*, until the next run removes it.
 * Returns 0 or errno.
 */
static int swap_in(struct kv_outdir *o)
{
	struct stat st;
	char *old;
	int e;

	if (kv_fault_write())
		return ENOSPC;
	if (lstat(o->dir, &st) != 0)
		return rename(o->stage, o->dir) ? errno : 0;
	if (renameat2(AT_FDCWD, o->stage, AT_FDCWD, o->dir, RENAME_EXCHANGE) == 0)
		return 0;
	if (errno != EINVAL && errno != ENOSYS)
		return errno;
	old = kv_xasprintf("%s/.%s" STAGE_TAG "XXXXXX", o->parent, o->base);
	if (!mkdtemp(old) || rmdir(old) || rename(o->dir, old)) {
		e = errno;
		free(old);
		return e;
	}
	if (rename(o->stage, o->dir)) {
		e = errno;
		rename(old, o->dir);
		free(old);
		return e;
	}
	free(o->stage);
	o->stage = old; /* the earlier run, removed below */
	return 0;
}

int kv_outdir_commit(struct kv_outdir *o, const char *header, struct kv_diag *d)
{
	int e = write_manifest(o, header);

	if (!e)
		e = swap_in(o);
	if (e)
		return kv_diag_set(d, KV_EIO, o->dir, 0, 0, "",
				   "cannot commit the run: %s; no output written, earlier outputs kept",
				   strerror(e));
	kv_rmtree(o->stage); /* now the replaced run, if any */
	free(o->stage);
	o->stage = NULL;
	return 0;
}

void kv_outdir_abort(struct kv_outdir *o)
{
	if (o->stage)
		kv_rmtree(o->stage);
	free(o->stage);
	o->stage = NULL;
	if (o->lock_path && o->lock_fd >= 0) /* a zeroed, never opened kv_outdir holds no lock */
		close(o->lock_fd);
	o->lock_fd = -1;
	free(o->lock_path);
	free(o->dir);
	free(o->parent);
	free(o->base);
	o->lock_path = o->dir = o->parent = o->base = NULL;
}

void kv_outdir_release(struct kv_outdir *o)
{
	kv_outdir_abort(o);
}

int kv_manifest_add(const char *dir, const char *name, struct kv_diag *d)
{
	char *path = kv_xasprintf("%s/%s", dir, MANIFEST), *tmp, *text;
	char *man = read_small(path, MANIFEST_MAX_BYTES);
	int e = 0;

	if (!man || strncmp(man, MANIFEST_MAGIC, strlen(MANIFEST_MAGIC)) ||
	    manifest_lists(man, name)) {
		free(man);
		free(path);
		return 0;
	}
	text = kv_xasprintf("%s%sfile %s\n", man,
			    man[0] && man[strlen(man) - 1] != '\n' ? "\n" : "", name);
	tmp = kv_xasprintf("%s/.%s.tmp", dir, MANIFEST);
	e = write_file(tmp, text);
	if (!e && kv_out_rename(tmp, path))
		e = errno ? errno : EIO;
	if (e) {
		unlink(tmp);
		kv_diag_set(d, KV_EIO, path, 0, 0, "", "write failed: %s", strerror(e));
	}
	free(tmp);
	free(text);
	free(man);
	free(path);
	return e ? KV_EIO : 0;
}
