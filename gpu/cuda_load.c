/*
 * cuda_load.c -- finds and dlopen()s kvsim-cuda.so on first use (see
 * cuda_module.h for the search order and the invariant), and the one
 * public CUDA call that forwards to it, kv_backend_cuda_logits().
 *
 * RTLD_NOW: a module whose libraries are missing fails here, with
 * dlerror()'s sentence, not at the first call into it.  RTLD_LOCAL: its
 * symbols (cudart's, cuBLAS's) stay out of the global namespace.  It is
 * never dlclose()d: the backend ops and the CUDA runtime's atexit handlers
 * point into it until the process exits.
 */
#include "cuda_module.h"
#include "backend_cuda.h"
#include "exec_impl.h"

#include <dlfcn.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#if !defined(KV_CUDA_MODULE_DIR) || !defined(KV_CUDA_MODULE_RELDIR)
#error "gpu/meson.build defines KV_CUDA_MODULE_DIR and _RELDIR, the module's install folder"
#endif

static pthread_once_t load_once = PTHREAD_ONCE_INIT;
static const struct kv_cuda_module *loaded; /* the table, once loaded */
static char loaded_path[PATH_MAX]; /* where it was found, "" when nowhere */
static char load_why[PATH_MAX * 2]; /* why loaded is NULL */

/* 1 and path filled with DIR/REL when that is a file; 0 otherwise. */
static int candidate(char *path, size_t len, const char *dir, const char *rel)
{
	int n = snprintf(path, len, "%s/%s", dir, rel);

	return n > 0 && (size_t)n < len && access(path, F_OK) == 0;
}

/*
 * Fills loaded_path with the first module of the search order that exists;
 * 0 on success, -1 with load_why naming the places looked at.  With the
 * environment variable set, that path is the only candidate and it need
 * not exist here (dlopen says why).
 */
static int find_module(void)
{
	const char *env = getenv(KV_CUDA_MODULE_ENV);
	char exe[PATH_MAX], *slash;
	ssize_t n;

	if (env && *env) {
		snprintf(loaded_path, sizeof(loaded_path), "%s", env);
		return 0;
	}
	n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	exe[n > 0 ? n : 0] = '\0';
	slash = strrchr(exe, '/');
	if (slash)
		*slash = '\0';
	if (slash && (candidate(loaded_path, sizeof(loaded_path), exe, KV_CUDA_MODULE_NAME) ||
		      candidate(loaded_path, sizeof(loaded_path), exe, "../gpu/" KV_CUDA_MODULE_NAME) ||
		      candidate(loaded_path, sizeof(loaded_path), exe,
				KV_CUDA_MODULE_RELDIR "/" KV_CUDA_MODULE_NAME)))
		return 0;
	if (candidate(loaded_path, sizeof(loaded_path), KV_CUDA_MODULE_DIR, KV_CUDA_MODULE_NAME))
		return 0;
	loaded_path[0] = '\0';
	snprintf(load_why, sizeof(load_why),
		 "no %s beside the executable (%s), in its ../gpu or %s, or in %s (set %s to its "
		 "path)", KV_CUDA_MODULE_NAME, slash ? exe : "unknown", KV_CUDA_MODULE_RELDIR,
		 KV_CUDA_MODULE_DIR, KV_CUDA_MODULE_ENV);
	return -1;
}

/* The table's ABI and struct sizes are this build's; else load_why says which differs. */
static int check_table(const struct kv_cuda_module *m)
{
	if (m->abi == KV_CUDA_MODULE_ABI && m->backend_size == sizeof(struct kv_backend) &&
	    m->opts_size == sizeof(struct kv_backend_opts) &&
	    m->gpu_info_size == sizeof(struct kv_gpu_info) && m->ops)
		return 0;
	snprintf(load_why, sizeof(load_why),
		 "%s was built for another kvsim (module ABI %d, struct sizes %zu/%zu/%zu; this "
		 "kvsim: ABI %d, %zu/%zu/%zu): rebuild it", loaded_path, m->abi, m->backend_size,
		 m->opts_size, m->gpu_info_size, KV_CUDA_MODULE_ABI, sizeof(struct kv_backend),
		 sizeof(struct kv_backend_opts), sizeof(struct kv_gpu_info));
	return -1;
}

static void load(void)
{
	kv_cuda_module_entry_fn entry;
	const struct kv_cuda_module *m;
	void *h;

	char real[PATH_MAX];

	if (find_module())
		return;
	if (realpath(loaded_path, real)) /* build/gpu/..., not build/src/../gpu/... */
		memcpy(loaded_path, real, sizeof(real));
	if (!(h = dlopen(loaded_path, RTLD_NOW | RTLD_LOCAL))) {
		snprintf(load_why, sizeof(load_why), "%s", dlerror());
		return;
	}
	/* POSIX: a void * from dlsym converts to a function pointer (ISO C does not say). */
	*(void **)&entry = dlsym(h, KV_CUDA_MODULE_ENTRY);
	if (!entry) {
		snprintf(load_why, sizeof(load_why), "%s has no %s: not a kvsim CUDA module",
			 loaded_path, KV_CUDA_MODULE_ENTRY);
		return;
	}
	m = entry();
	if (check_table(m))
		return;
	loaded = m;
}

const struct kv_cuda_module *kv_cuda_module_load(const char **why)
{
	pthread_once(&load_once, load);
	if (!loaded && why)
		*why = load_why;
	return loaded;
}

const char *kv_cuda_module_path(void)
{
	return loaded ? loaded_path : "";
}

int kv_backend_cuda_logits(struct kv_backend *b, float *out, size_t n)
{
	const struct kv_cuda_module *m = kv_cuda_module_load(NULL);

	if (!m || b->ops != m->ops)
		return kv__backend_fail(b, KV_EINVAL, "logits: a %s backend, not cuda",
					b->ops->name);
	return m->logits(b, out, n);
}
