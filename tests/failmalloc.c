/*
 * failmalloc.c -- an LD_PRELOAD shim for tests/fault_test.sh: makes the Nth
 * heap allocation of a process fail, whoever asks for it (kvsim's
 * kv_xmalloc, libyaml, GSL, stdio's buffers, getline, strdup, fopen).
 *
 *   FAILMALLOC=N  the Nth call to malloc, calloc, realloc, aligned_alloc,
 *                 posix_memalign or memalign made from the start of main
 *                 returns NULL with errno ENOMEM;
 *   FAILMALLOC=0  nothing fails; at exit "failmalloc: C allocations" is
 *                 written to stderr, so the test knows the range of N.
 *
 * The real functions are the next definitions in the lookup order
 * (dlsym(RTLD_NEXT)): glibc's, or the sanitizer's under ASan (run with
 * ASAN_OPTIONS=verify_asan_link_order=0).  dlsym may itself allocate
 * before the pointers are known: those requests are served from a small
 * static arena that free() recognises and ignores.  Counting starts at main
 * (the shim wraps it through __libc_start_main): the constructors of linked
 * libraries -- CUDA's runtime registers its kernels before main and crashes
 * when that allocation fails -- are outside what kvsim can handle.  A forked child keeps
 * counting from its parent's count.  Only the main thread's calls count
 * (fail_now): kvsim allocates from one thread, and other threads belong to
 * libraries.
 */
#include <dlfcn.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

static void *(*real_malloc)(size_t);
static void *(*real_calloc)(size_t, size_t);
static void *(*real_realloc)(void *, size_t);
static void (*real_free)(void *);
static void *(*real_aligned_alloc)(size_t, size_t);
static int (*real_posix_memalign)(void **, size_t, size_t);
static void *(*real_memalign)(size_t, size_t);

static long fail_at = -1; /* -1: not configured yet; 0: count only; N: fail the Nth */
static long calls; /* allocation calls so far */
static int resolving; /* inside dlsym: serve from the arena */

static _Alignas(16) char arena[16384]; /* allocations made while resolving */
static size_t arena_used; /* bytes of arena handed out */

static void *arena_alloc(size_t n)
{
	void *p;

	n = (n + 15) & ~(size_t)15;
	if (n > sizeof(arena) - arena_used)
		return NULL;
	p = arena + arena_used;
	arena_used += n;
	return p;
}

static int in_arena(const void *p)
{
	return (const char *)p >= arena && (const char *)p < arena + sizeof(arena);
}

static void report(void)
{
	char msg[64];
	int n = snprintf(msg, sizeof(msg), "failmalloc: %ld allocations\n", calls);

	if (write(STDERR_FILENO, msg, (size_t)n) < 0)
		return;
}

/* Stores the next definition of name into the function pointer at fp (POSIX's dlsym idiom). */
static void sym(void *fp, const char *name)
{
	void *p = dlsym(RTLD_NEXT, name);

	memcpy(fp, &p, sizeof(p));
}

/* Resolves the real functions (once); 0, or -1 while a resolution is under way. */
static int resolve(void)
{
	if (real_malloc)
		return 0;
	if (resolving)
		return -1;
	resolving = 1;
	sym(&real_malloc, "malloc");
	sym(&real_calloc, "calloc");
	sym(&real_realloc, "realloc");
	sym(&real_free, "free");
	sym(&real_aligned_alloc, "aligned_alloc");
	sym(&real_posix_memalign, "posix_memalign");
	sym(&real_memalign, "memalign");
	resolving = 0;
	return real_malloc && real_calloc && real_realloc && real_free ? 0 : -1;
}

typedef int (*main_fn)(int, char **, char **);
static main_fn real_main; /* the program's main */

/* Runs main with counting on (and the report registered when FAILMALLOC=0). */
static int counted_main(int argc, char **argv, char **envp)
{
	const char *s = getenv("FAILMALLOC");
	long at = s && *s ? strtol(s, NULL, 10) : -2;

	if (at == 0)
		atexit(report);
	calls = 0;
	fail_at = at;
	return real_main(argc, argv, envp);
}

/* glibc's entry point: the real one, with main replaced by counted_main. */
int __libc_start_main(main_fn main, int argc, char **argv, void (*init)(void),
		      void (*fini)(void), void (*rtld_fini)(void), void *stack_end)
{
	int (*next)(main_fn, int, char **, void (*)(void), void (*)(void), void (*)(void),
		    void *);

	sym(&next, "__libc_start_main");
	real_main = main;
	return next(counted_main, argc, argv, init, fini, rtld_fini, stack_end);
}

/*
 * 1 when this call must fail (counted only once configured, and only on a
 * process's main thread -- the thread whose id is the process id, in a
 * forked child too: kvsim allocates from that thread only, while libraries
 * may start their own at load time (OpenBLAS's pool), whose allocations
 * race with main's and would make the count, and ASan's thread set-up,
 * nondeterministic).
 */
static int fail_now(void)
{
	if (fail_at < 0 || syscall(SYS_gettid) != getpid())
		return 0;
	if (++calls != fail_at)
		return 0;
	errno = ENOMEM;
	return 1;
}

void *malloc(size_t n)
{
	if (resolve())
		return arena_alloc(n);
	return fail_now() ? NULL : real_malloc(n);
}

void *calloc(size_t nmemb, size_t size)
{
	if (resolve()) {
		void *p = size && nmemb > (size_t)-1 / size ? NULL : arena_alloc(nmemb * size);

		return p ? memset(p, 0, nmemb * size) : NULL;
	}
	return fail_now() ? NULL : real_calloc(nmemb, size);
}

void *realloc(void *p, size_t n)
{
	if (in_arena(p)) { /* rare: grow an arena block onto the real heap */
		size_t avail = (size_t)(arena + sizeof(arena) - (char *)p);
		void *q = malloc(n);

		if (q)
			memcpy(q, p, n < avail ? n : avail);
		return q;
	}
	if (resolve())
		return NULL;
	return fail_now() ? NULL : real_realloc(p, n);
}

void free(void *p)
{
	if (!p || in_arena(p))
		return;
	if (!resolve())
		real_free(p);
}

void *aligned_alloc(size_t align, size_t n)
{
	if (resolve() || !real_aligned_alloc)
		return NULL;
	return fail_now() ? NULL : real_aligned_alloc(align, n);
}

int posix_memalign(void **out, size_t align, size_t n)
{
	if (resolve() || !real_posix_memalign)
		return ENOMEM;
	return fail_now() ? ENOMEM : real_posix_memalign(out, align, n);
}

void *memalign(size_t align, size_t n)
{
	if (resolve() || !real_memalign)
		return NULL;
	return fail_now() ? NULL : real_memalign(align, n);
}
