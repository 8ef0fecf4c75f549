/*
 * kv_common.h -- types, units, errors and allocation wrappers shared by every
 * kvsim module.
 *
 * Units live in names: simulated time is integer nanoseconds (kv_ns), memory
 * integer bytes, lengths integer tokens.  Fallible functions return int: 0 on
 * success, a negative KV_E* code otherwise.  Input errors carry a struct
 * kv_diag that names the file, line, column, field, bad value and what was
 * expected; the caller prints it once and exits with status 2.
 *
 * Out of memory aborts inside kv_xmalloc() and friends: nothing checks NULL
 * after them.  KV_CHECK() is an always-on model invariant (cheap, like
 * Linux's VM_BUG_ON); assert() is kept for pre- and postconditions.
 */
#ifndef KV_COMMON_H
#define KV_COMMON_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* Simulated time: nanoseconds since the start of the run. */
typedef uint64_t kv_ns;
#define KV_NS_PER_US 1000ULL
#define KV_NS_PER_MS 1000000ULL
#define KV_NS_PER_S 1000000000ULL
#define KV_NS_NEVER UINT64_MAX

#define KV_KiB (1024ULL)
#define KV_MiB (1024ULL * 1024ULL)
#define KV_GiB (1024ULL * 1024ULL * 1024ULL)

#define KV_ARRAY_LEN(a) (sizeof(a) / sizeof((a)[0]))
#define KV_MIN(a, b) ((a) < (b) ? (a) : (b))
#define KV_MAX(a, b) ((a) > (b) ? (a) : (b))

/* Error codes: name, value, message.  One list, as libuv's UV_ERRNO_MAP. */
#define KV_ERRNO_MAP(X)                                                       \
	X(INVAL, -1, "invalid input")                                         \
	X(NOMEM, -2, "not enough simulated memory")                           \
	X(IO, -3, "input/output error")                                       \
	X(NOENT, -4, "no such file or entry")                                 \
	X(RANGE, -5, "value out of range")                                    \
	X(EOF, -6, "end of input")                                            \
	X(TOOBIG, -7, "request larger than the memory pool or context")       \
	X(INTR, -8, "interrupted")                                            \
	X(INVARIANT, -9, "model invariant violated")                          \
	X(BACKEND, -10, "the execution backend failed or is absent")

enum kv_errno {
#define KV__ERR_ENUM(name, val, msg) KV_E##name = (val),
	KV_ERRNO_MAP(KV__ERR_ENUM)
#undef KV__ERR_ENUM
};

/* Returns the message of a KV_E* code (never NULL). */
const char *kv_strerror(int err);

/*
 * A diagnostic for bad input.  Filled by parsers with kv_diag_set(); printed
 * once by the command as "kvsim: FILE:LINE:COL: FIELD: MESSAGE".
 * line/col are 1-based; 0 means "not applicable".
 */
struct kv_diag {
	char file[512]; /* input file, or "--set" for command-line overrides */
	unsigned long line; /* 1-based line, 0 when unknown */
	unsigned long col; /* 1-based column, 0 when unknown */
	char field[128]; /* key path or column name, "" when none */
	char msg[1024]; /* what was wrong: bad value and what was expected (room for the list of summary columns) */
};

/* Fills d (when non-NULL) and returns err, so parsers can `return kv_diag_set(...)`. */
int kv_diag_set(struct kv_diag *d, int err, const char *file, unsigned long line,
		unsigned long col, const char *field, const char *fmt, ...)
	__attribute__((format(printf, 7, 8)));

/* Writes "kvsim: file:line:col: field: msg\n" to f. */
void kv_diag_print(const struct kv_diag *d, FILE *f);

/* Allocation that aborts with a message on failure; never returns NULL. */
void *kv_xmalloc(size_t n);
void *kv_xcalloc(size_t nmemb, size_t size);
void *kv_xrealloc(void *p, size_t n);
char *kv_xstrdup(const char *s);
/* n bytes aligned to align (a power of two); release with free(). */
void *kv_xaligned_alloc(size_t align, size_t n);
/*
 * fopen() that treats ENOMEM (stdio could not allocate the stream) as out
 * of memory, kv_oom(); any other failure returns NULL with errno set, for
 * the caller's "cannot open" diagnostic.
 */
FILE *kv_xfopen(const char *path, const char *mode);

/*
 * Input files.  Every file kvsim reads as input (traces, workload, sweep and
 * profile YAML) goes through kv_input_open(), which accepts regular files
 * only: a FIFO, socket, directory or device (/dev/zero, a terminal) is an
 * input error naming the kind of file.  /dev/stdin and /dev/fd/N work when
 * they refer to a regular file (a shell redirection "< file"), not a pipe.
 * The file is opened with O_NONBLOCK and checked with fstat() before the
 * flag is cleared, so a FIFO without a writer never blocks open().
 * Regular files only, because a trace is read twice (kv_trace_rewind()
 * cycles a length trace) and a size known at open bounds what is read.
 *
 * Bounds: a line of a trace is at most KV_INPUT_MAX_LINE_BYTES (a file
 * without newlines, a corrupt or binary file, stops there with exit 2
 * rather than growing memory); a YAML file is at most
 * KV_INPUT_MAX_YAML_BYTES.
 */
#define KV_INPUT_MAX_LINE_BYTES KV_MiB /* longest trace line, end of line excluded */
#define KV_INPUT_MAX_YAML_BYTES (16 * KV_MiB) /* largest workload, sweep or profile file */

/*
 * Opens path for reading if it is a regular file.  Returns 0 and *out, or a
 * negative code with d filled (file path, line 0): KV_ENOENT (missing),
 * KV_EINVAL (not a regular file: says which kind and what is supported),
 * KV_EIO (any other open or stat failure).  Out of memory exits (kv_oom).
 */
int kv_input_open(const char *path, FILE **out, struct kv_diag *d);

/*
 * Reads the whole regular file path (kv_input_open()) into a new buffer,
 * NUL-terminated (*len bytes before the NUL; free() it).  A file larger than
 * max_bytes is KV_ERANGE naming the bound, before anything is read.
 * Returns 0, or a negative code with d filled.
 */
int kv_input_read(const char *path, size_t max_bytes, char **text, size_t *len,
		  struct kv_diag *d);

/*
 * s[0..n) for a message: printable bytes as they are, '\0', '\n', '\r',
 * '\t' and other control bytes escaped ("\x7f"), cut with "..." to fit
 * buf (len >= 8).  Returns buf.
 */
const char *kv_show(const char *s, size_t n, char *buf, size_t len);

/*
 * Out of memory: prints "kvsim: out of memory allocating N bytes" (or "out
 * of memory" when n is 0: a library reported it without a size) and exits
 * with status 3.  exit() runs the atexit handlers, so the output layer
 * removes its temporaries (src/lib/output.c).  For allocations made inside
 * libraries (libyaml, GSL, stdio) that report failure instead of aborting.
 */
__attribute__((noreturn)) void kv_oom(size_t n);

/*
 * Fault injection for tests, read from the environment by
 * kv_alloc_fault_init() (call it once, first thing in main):
 *
 *   KVSIM_FAIL_ALLOC=N  the Nth kv_x* allocation fails (message, exit 3);
 *   KVSIM_FAIL_WRITE=N  the Nth output operation fails with ENOSPC (see
 *                       kv_fault_write(); the output layer reports it).
 *
 * N = 0 counts instead of failing: at exit, "kvsim: fault: A allocations,
 * W output operations" goes to stderr, so a test knows the range of N to
 * loop over.  Unset or empty: no injection, no counting cost beyond one
 * branch.  A forked child (sweep points) keeps counting from its parent's
 * count at the fork.
 */
void kv_alloc_fault_init(void);

/*
 * One output operation (a write(2) of a buffer, a close, a create, a link or
 * a rename of an output file) is about to happen: returns 1, with errno set
 * to ENOSPC, when KVSIM_FAIL_WRITE selects this one, else 0.  Callers treat
 * 1 exactly like the operation failing.
 */
int kv_fault_write(void);

/* 1 when KVSIM_FAIL_WRITE is set (the output layer then routes writes through kv_fault_write). */
int kv_fault_write_armed(void);

/* Always-on invariant check: prints the failed condition and aborts. */
#define KV_CHECK(cond, ...)                                                   \
	do {                                                                  \
		if (__builtin_expect(!(cond), 0))                             \
			kv__check_fail(__FILE__, __LINE__, #cond, __VA_ARGS__); \
	} while (0)
__attribute__((noreturn)) void kv__check_fail(const char *file, int line, const char *cond,
			      const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

/*
 * Whether c + j * x is a double computed without rounding for every
 * j = 0..m (c, x >= 0 finite): then m additions of x to c, one at a time,
 * give exactly c + x * m, and so do any such additions in any order.  True
 * when c and x are whole multiples of a power of two 2^e (e may be
 * negative) and c + m x < 2^(53 + e).  For macro steps (macro.h), which
 * apply many steps' counter updates at once.
 */
int kv_sum_exact(double c, double x, uint64_t m);

/*
 * Checked products of inputs: *out = a * b and 0, or KV_ERANGE when the
 * product does not fit 64 bits (*out then holds the wrapped value; never
 * use it).  Any product of two configured quantities (tokens x bytes per
 * token, GPUs x bytes per GPU) goes through this, since each factor's own
 * range does not bound the product.
 */
static inline int kv_mul_u64(uint64_t a, uint64_t b, uint64_t *out)
{
	return __builtin_mul_overflow(a, b, out) ? KV_ERANGE : 0;
}

/* Integer ceil(a / b) for b > 0. */
static inline uint64_t kv_div_ceil(uint64_t a, uint64_t b)
{
	return (a + b - 1) / b;
}

#endif /* KV_COMMON_H */
