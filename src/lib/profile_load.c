/*
 * profile_load.c -- model and device profiles from YAML (see profile_load.h).
 *
 * Each loader reads the document into a kv_cfg tree, rejects unknown keys,
 * checks the required ones are there, converts every field with the typed
 * readers of cfg.h (which name file, line, column and field on error), then
 * runs the module's own validation (kv_model_validate, kv_device_validate)
 * and points its diagnostic at the offending key's line.
 *
 * Not on a hot path: a profile is read once per run.
 */
#include "profile_load.h"
#include "cfg.h"
#include "uncert.h"

#include <ctype.h>
#include <dirent.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#if !defined(KV_CONFIG_DIR) && defined(KV_SOURCE_DIR)
#define KV_CONFIG_DIR KV_SOURCE_DIR "/configs"
#endif

#define PROFILE_PATH_MAX 4096

static const char *const model_keys[] = {
	"name", "layers", "hidden", "heads", "kv_heads", "head_dim", "intermediate",
	"vocab", "max_context", "params", "dtype_bytes", "gated_mlp", "tie_embeddings",
	"qkv_bias", "qk_norm", "experts", "experts_per_token", "shared_experts",
	"moe_intermediate", "dense_layers", "expert_imbalance", "kv_lora_rank", "q_lora_rank",
	"qk_rope_head_dim", "v_head_dim", "sliding_window", "window_every", "weight_dtype",
	"kv_dtype", "source", NULL,
};

static const char *const model_required[] = {
	"name", "layers", "hidden", "heads", "kv_heads", "head_dim", "intermediate",
	"vocab", "max_context", "params", "source", NULL,
};

static const char *const device_keys[] = {
	"name", "memory", "memory_cuda", "mem_bandwidth", "fp16_tflops", "host_link_bandwidth",
	"interconnect_bandwidth", "interconnect", "interconnect_busbw", "interconnect_busbw_by_gpus",
	"fp8_tflops", "family",
	"host", "perf", "cost", "source", "uncertainty", "cost_per_gpu_hour", NULL,
};

static const char *const device_required[] = {
	"name", "memory", "mem_bandwidth", "fp16_tflops", "host_link_bandwidth", "source", NULL,
};

static const char *const perf_keys[] = {
	"eff_bw", "eff_flops", "eff_attn", "overhead", "per_seq", "allreduce_latency",
	"collective_overhead", "dequant_flops_per_byte", NULL,
};

static const char *const cost_keys[] = { "alpha", NULL };

/* ---- where profiles live ---- */

static int is_dir(const char *path)
{
	struct stat st;

	return path && *path && !stat(path, &st) && S_ISDIR(st.st_mode);
}

/* Copies dir into buf without trailing slashes; returns buf. */
static const char *set_dir(char *buf, size_t len, const char *dir)
{
	size_t n;

	snprintf(buf, len, "%s", dir);
	n = strlen(buf);
	while (n > 1 && buf[n - 1] == '/')
		buf[--n] = '\0';
	return buf;
}

/*
 * $KVSIM_CONFIG_DIR when set (even if missing: the user asked for it), else
 * the first existing of the compiled-in source tree's configs/,
 * $KVSIM_SOURCE_DIR/configs and the installed data directory, else
 * "configs" relative to the working directory.
 */
const char *kv_profiles_dir(void)
{
	static char buf[PROFILE_PATH_MAX];
	const char *env = getenv("KVSIM_CONFIG_DIR");
	const char *src = getenv("KVSIM_SOURCE_DIR");
	char tmp[PROFILE_PATH_MAX];

	if (env && *env)
		return set_dir(buf, sizeof(buf), env);
#ifdef KV_CONFIG_DIR
	if (is_dir(KV_CONFIG_DIR))
		return set_dir(buf, sizeof(buf), KV_CONFIG_DIR);
#endif
	if (src && *src) {
		snprintf(tmp, sizeof(tmp), "%s/configs", src);
		if (is_dir(tmp))
			return set_dir(buf, sizeof(buf), tmp);
	}
#ifdef KV_DATA_DIR
	if (is_dir(KV_DATA_DIR))
		return set_dir(buf, sizeof(buf), KV_DATA_DIR);
#endif
	return set_dir(buf, sizeof(buf), "configs");
}

/* ---- listing ---- */

static int kind_ok(const char *kind)
{
	return kind && (!strcmp(kind, "models") || !strcmp(kind, "devices") ||
			!strcmp(kind, "hosts"));
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* "name.yaml" gives a malloc'ed "name"; anything else NULL. */
static char *yaml_stem(const char *file)
{
	size_t n = strlen(file);
	char *s;

	if (file[0] == '.' || n <= 5 || strcmp(file + n - 5, ".yaml"))
		return NULL;
	s = kv_xstrdup(file);
	s[n - 5] = '\0';
	return s;
}

/* Reads the sorted profile names of dir into *names; returns their count or KV_ENOENT. */
static int scan_names(const char *dir, char ***names)
{
	DIR *dp = opendir(dir);
	struct dirent *de;
	size_t n = 0, cap = 16;
	char *stem;

	if (!dp)
		return KV_ENOENT;
	*names = kv_xmalloc(cap * sizeof(**names));
	while ((de = readdir(dp))) {
		if (!(stem = yaml_stem(de->d_name)))
			continue;
		if (n == cap)
			*names = kv_xrealloc(*names, (cap *= 2) * sizeof(**names));
		(*names)[n++] = stem;
	}
	closedir(dp);
	qsort(*names, n, sizeof(**names), cmp_str);
	return (int)n;
}

static void free_names(char **names, int n)
{
	while (n > 0)
		free(names[--n]);
	free(names);
}

int kv_profiles_list(const char *kind, void (*fn)(const char *name, const char *path, void *arg),
		     void *arg)
{
	char dir[PROFILE_PATH_MAX], path[PROFILE_PATH_MAX + 256];
	char **names;
	int i, n;

	if (!kind_ok(kind))
		return KV_EINVAL;
	snprintf(dir, sizeof(dir), "%s/%s", kv_profiles_dir(), kind);
	n = scan_names(dir, &names);
	if (n < 0)
		return n;
	for (i = 0; i < n; i++) {
		snprintf(path, sizeof(path), "%s/%s.yaml", dir, names[i]);
		fn(names[i], path, arg);
	}
	free_names(names, n);
	return n;
}

/* ---- name resolution ---- */

/* A path when it has a '/' or ends in .yaml/.yml; otherwise a profile name. */
static int looks_like_path(const char *s)
{
	size_t n = strlen(s);

	return strchr(s, '/') || (n > 5 && !strcmp(s + n - 5, ".yaml")) ||
	       (n > 4 && !strcmp(s + n - 4, ".yml"));
}

/* Profile names are [A-Za-z0-9._-]+ not starting with '.'. */
static int name_ok(const char *s)
{
	if (!*s || *s == '.')
		return 0;
	for (; *s; s++)
		if (!(isalnum((unsigned char)*s) || *s == '.' || *s == '_' || *s == '-'))
			return 0;
	return 1;
}

/* Writes "a, b, c" (the names of kind) into buf. */
static void list_names(const char *kind, char *buf, size_t len)
{
	char dir[PROFILE_PATH_MAX], **names;
	size_t off = 0;
	int i, n;

	buf[0] = '\0';
	snprintf(dir, sizeof(dir), "%s/%s", kv_profiles_dir(), kind);
	n = scan_names(dir, &names);
	for (i = 0; i < n && off + 1 < len; i++) {
		int r = snprintf(buf + off, len - off, "%s%s", i ? ", " : "", names[i]);

		off += r > 0 ? (size_t)r : 0;
	}
	if (n >= 0)
		free_names(names, n);
}

/*
 * Turns name_or_path into a file path in buf.  An unknown name is KV_ENOENT
 * with d listing the names there are.
 */
static int resolve(const char *kind, const char *what, const char *name_or_path, char *buf,
		   size_t len, struct kv_diag *d)
{
	char names[512];

	if (looks_like_path(name_or_path)) {
		snprintf(buf, len, "%s", name_or_path);
		return 0;
	}
	snprintf(buf, len, "%s/%s/%s.yaml", kv_profiles_dir(), kind, name_or_path);
	if (name_ok(name_or_path) && !access(buf, R_OK))
		return 0;
	list_names(kind, names, sizeof(names));
	return kv_diag_set(d, KV_ENOENT, "", 0, 0, what,
			   "unknown %s '%s' (no %s); valid names: %s", what, name_or_path, buf,
			   names[0] ? names : "(none)");
}

/* ---- field readers ---- */

/* Every key of required[] must be in m; the error points at m itself. */
static int require_keys(struct kv_cfg_node *m, const char *const *required,
			const char *file, struct kv_diag *d)
{
	for (; *required; required++) {
		if (kv_cfg_get(m, *required))
			continue;
		return kv_diag_set(d, KV_EINVAL, file, m->line ? m->line : 1, m->col,
				   *required, "missing required key '%s'", *required);
	}
	return 0;
}

/* `name` must be a non-empty string that fits buf. */
static int read_name(struct kv_cfg_node *m, char *buf, size_t len, struct kv_diag *d)
{
	int err = kv_cfg_str(m, "name", "", buf, len, d);

	if (err || buf[0])
		return err;
	return kv_cfg_error(kv_cfg_get(m, "name"), d, "expected a non-empty name");
}

/* A positive integer that fits uint32_t (def when absent). */
static int read_u32(struct kv_cfg_node *m, const char *key, uint32_t def, uint32_t max,
		    uint32_t *out, struct kv_diag *d)
{
	uint64_t v;
	int err = kv_cfg_u64(m, key, def, 1, max, &v, d);

	if (!err)
		*out = (uint32_t)v;
	return err;
}

static int read_flag(struct kv_cfg_node *m, const char *key, int def, uint32_t *out,
		     struct kv_diag *d)
{
	int v, err = kv_cfg_bool(m, key, def, &v, d);

	if (!err)
		*out = (uint32_t)v;
	return err;
}

/* `source` must be a non-empty string: every number in a profile has an origin. */
static int read_source(struct kv_cfg_node *m, struct kv_diag *d)
{
	struct kv_cfg_node *n = kv_cfg_get(m, "source");
	const char *s = n && n->type == KV_CFG_SCALAR ? n->value : NULL;

	while (s && isspace((unsigned char)*s))
		s++;
	if (s && *s)
		return 0;
	return kv_cfg_error(n, d, "expected a non-empty string naming where the numbers come from");
}

/* A bandwidth into bytes/s: positive, or >= 0 when zero_ok; def when absent. */
static int read_rate(struct kv_cfg_node *m, const char *key, double def, int zero_ok,
		     double *out, struct kv_diag *d)
{
	struct kv_cfg_node *n = kv_cfg_get(m, key);
	double v;

	if (!n) {
		*out = def;
		return 0;
	}
	if (n->type != KV_CFG_SCALAR || kv_cfg_parse_rate(n->value, &v))
		return kv_cfg_error(n, d, "bad value '%s': expected a bandwidth such as "
				    "2039GB/s, 3.35TB/s or a number of GB/s",
				    n->type == KV_CFG_SCALAR ? n->value : "(not a scalar)");
	if (v < 0 || (v == 0 && !zero_ok))
		return kv_cfg_error(n, d, "bad value '%s': a bandwidth must be %s", n->value,
				    zero_ok ? ">= 0 (0: no link)" : "positive");
	*out = v;
	return 0;
}

/*
 * After a module-level validation failed with d->field a dotted key path,
 * points d at that key's line in the document.
 */
static int locate(struct kv_cfg_node *root, struct kv_diag *d, int err)
{
	char path[sizeof(d->field)], *key, *save = NULL;
	struct kv_cfg_node *n = root;

	snprintf(path, sizeof(path), "%s", d->field);
	for (key = strtok_r(path, ".", &save); key && n; key = strtok_r(NULL, ".", &save))
		n = kv_cfg_get(n, key);
	if (n && n != root) {
		d->line = n->line;
		d->col = n->col;
	}
	return err;
}

/* ---- models ---- */

static int read_model_arch(struct kv_cfg_node *r, struct kv_model *m, struct kv_diag *d)
{
	int err;

	if ((err = read_u32(r, "layers", 0, UINT32_MAX, &m->layers, d)) ||
	    (err = read_u32(r, "hidden", 0, UINT32_MAX, &m->hidden, d)) ||
	    (err = read_u32(r, "heads", 0, UINT32_MAX, &m->heads, d)) ||
	    (err = read_u32(r, "kv_heads", 0, UINT32_MAX, &m->kv_heads, d)) ||
	    (err = read_u32(r, "head_dim", 0, UINT32_MAX, &m->head_dim, d)) ||
	    (err = read_u32(r, "intermediate", 0, UINT32_MAX, &m->intermediate, d)) ||
	    (err = read_u32(r, "vocab", 0, UINT32_MAX, &m->vocab, d)) ||
	    (err = read_u32(r, "max_context", 0, UINT32_MAX, &m->max_ctx_tokens, d)) ||
	    (err = read_u32(r, "dtype_bytes", 2, 4, &m->dtype_bytes, d)) ||
	    (err = read_flag(r, "gated_mlp", 1, &m->gated_mlp, d)) ||
	    (err = read_flag(r, "tie_embeddings", 0, &m->tie_embeddings, d)))
		return err;
	return kv_cfg_u64(r, "params", 0, 1, UINT64_MAX / 8, &m->params, d);
}

/* A count that may be 0 (absent: 0), fitting uint32_t. */
static int read_u32_0(struct kv_cfg_node *m, const char *key, uint32_t *out, struct kv_diag *d)
{
	uint64_t v;
	int err = kv_cfg_u64(m, key, 0, 0, UINT32_MAX, &v, d);

	if (!err)
		*out = (uint32_t)v;
	return err;
}

/* `key: fp16|bf16|fp8|int8|int4|auto` into an enum kv_dtype (absent: auto). */
static int read_dtype(struct kv_cfg_node *r, const char *key, uint32_t *out, struct kv_diag *d)
{
	char buf[16];
	int err = kv_cfg_str(r, key, "auto", buf, sizeof(buf), d);

	if (err)
		return err;
	if (kv_dtype_parse(buf, out))
		return kv_cfg_error(kv_cfg_get(r, key), d,
				    "bad value '%s': expected auto, fp16, bf16, fp8, int8 or int4",
				    buf);
	return 0;
}

/* The optional keys of MoE, MLA, windows, biases, norms and dtypes (absent: off). */
static int read_model_ext(struct kv_cfg_node *r, struct kv_model *m, struct kv_diag *d)
{
	int err;

	if ((err = read_flag(r, "qkv_bias", 0, &m->qkv_bias, d)) ||
	    (err = read_flag(r, "qk_norm", 0, &m->qk_norm, d)) ||
	    (err = read_u32_0(r, "experts", &m->experts, d)) ||
	    (err = read_u32_0(r, "experts_per_token", &m->experts_per_token, d)) ||
	    (err = read_u32_0(r, "shared_experts", &m->shared_experts, d)) ||
	    (err = read_u32_0(r, "moe_intermediate", &m->moe_intermediate, d)) ||
	    (err = read_u32_0(r, "dense_layers", &m->dense_layers, d)) ||
	    (err = kv_cfg_dbl(r, "expert_imbalance", 1.0, 1.0, 1e6, &m->expert_imbalance, d)) ||
	    (err = read_u32_0(r, "kv_lora_rank", &m->kv_lora_rank, d)) ||
	    (err = read_u32_0(r, "q_lora_rank", &m->q_lora_rank, d)) ||
	    (err = read_u32_0(r, "qk_rope_head_dim", &m->qk_rope_head_dim, d)) ||
	    (err = read_u32_0(r, "v_head_dim", &m->v_head_dim, d)) ||
	    (err = read_u32_0(r, "sliding_window", &m->sliding_window, d)) ||
	    (err = read_u32(r, "window_every", 1, UINT32_MAX, &m->window_every, d)) ||
	    (err = read_dtype(r, "weight_dtype", &m->weight_dtype, d)))
		return err;
	return read_dtype(r, "kv_dtype", &m->kv_dtype, d);
}

/* The model reader (struct profile_kind): fills the zeroed struct kv_model at out. */
static int read_model(struct kv_cfg_doc *doc, void *out, struct kv_diag *d)
{
	struct kv_cfg_node *r = doc->root;
	struct kv_model *m = out;
	int err;

	if ((err = kv_cfg_check_keys(r, model_keys, d)) ||
	    (err = require_keys(r, model_required, doc->path, d)) ||
	    (err = read_name(r, m->name, sizeof(m->name), d)) ||
	    (err = read_source(r, d)) || (err = read_model_arch(r, m, d)) ||
	    (err = read_model_ext(r, m, d)))
		return err;
	err = kv_model_validate(m, d, doc->path);
	return err ? locate(r, d, err) : 0;
}

/* ---- devices ---- */

/*
 * `interconnect:` names the link kind (comm.h) and `interconnect_busbw` the
 * bus bandwidth NCCL reaches on it; a profile naming neither keeps the
 * datasheet model (interconnect_bandwidth plus perf.allreduce_latency).
 */
/*
 * `interconnect_busbw_by_gpus: {2: 66, 4: 200}`: the bus bandwidth at each
 * GPU count where it differs from interconnect_busbw (a board without
 * NVSwitch); keys 2..KV_LINK_MAX_RANKS, values bandwidths.  Needs a typed
 * interconnect.
 */
static int read_busbw_table(struct kv_cfg_node *r, struct kv_device *dev, struct kv_diag *d)
{
	struct kv_cfg_node *t = kv_cfg_get(r, "interconnect_busbw_by_gpus"), *c;
	char *end;
	unsigned long n;
	int err;

	memset(dev->link_busbw_n_Bps, 0, sizeof(dev->link_busbw_n_Bps));
	if (!t)
		return 0;
	if (dev->link_type == KV_LINK_DATASHEET)
		return kv_cfg_error(t, d, "interconnect_busbw_by_gpus needs an interconnect type (%s)",
				    kv_link_names());
	if (t->type != KV_CFG_MAP)
		return kv_cfg_error(t, d, "expected a mapping of GPU count to bus bandwidth, "
				    "e.g. {2: 66, 4: 200}");
	for (c = t->child; c; c = c->next) {
		n = strtoul(c->key, &end, 10);
		if (*end || end == c->key || n < 2 || n > KV_LINK_MAX_RANKS)
			return kv_cfg_error(c, d, "bad GPU count '%s': expected an integer from 2 to %d",
					    c->key, KV_LINK_MAX_RANKS);
		if ((err = read_rate(t, c->key, 0, 0, &dev->link_busbw_n_Bps[n], d)))
			return err;
	}
	return 0;
}

static int read_link(struct kv_cfg_node *r, struct kv_device *dev, struct kv_diag *d)
{
	struct kv_cfg_node *n = kv_cfg_get(r, "interconnect");
	char name[32] = "";
	int err;

	dev->link_type = KV_LINK_DATASHEET;
	if (n) {
		if ((err = kv_cfg_str(r, "interconnect", "", name, sizeof(name), d)))
			return err;
		if (kv_link_parse(name, &dev->link_type))
			return kv_cfg_error(n, d, "unknown interconnect '%s': expected one of: %s",
					    name, kv_link_names());
	}
	if ((err = read_rate(r, "interconnect_busbw", 0, 1, &dev->link_busbw_Bps, d)))
		return err;
	if (dev->link_type != KV_LINK_DATASHEET && dev->link_busbw_Bps <= 0)
		return kv_cfg_error(n, d, "interconnect %s needs interconnect_busbw: the bus "
				    "bandwidth nccl-tests reaches on it (GB/s)", name);
	if (dev->link_type == KV_LINK_DATASHEET && kv_cfg_get(r, "interconnect_busbw"))
		return kv_cfg_error(kv_cfg_get(r, "interconnect_busbw"), d,
				    "interconnect_busbw needs an interconnect type (%s)",
				    kv_link_names());
	return read_busbw_table(r, dev, d);
}

static int read_datasheet(struct kv_cfg_node *r, struct kv_device *dev, struct kv_diag *d)
{
	double tflops;
	int err;

	if ((err = kv_cfg_bytes(r, "memory", 0, 1, UINT64_MAX, &dev->mem_bytes, d)) ||
	    (err = kv_cfg_bytes(r, "memory_cuda", 0, 0, UINT64_MAX, &dev->mem_cuda_bytes, d)) ||
	    (err = read_rate(r, "mem_bandwidth", 0, 0, &dev->mem_bw_Bps, d)) ||
	    (err = kv_cfg_dbl(r, "fp16_tflops", 0, 1e-9, 1e9, &tflops, d)) ||
	    (err = read_rate(r, "host_link_bandwidth", 0, 0, &dev->host_link_Bps, d)) ||
	    (err = read_rate(r, "interconnect_bandwidth", 0, 1, &dev->interconnect_Bps, d)))
		return err;
	dev->flops = tflops * 1e12;
	if ((err = kv_cfg_dbl(r, "fp8_tflops", 0, 0, 1e9, &tflops, d)))
		return err;
	dev->flops_fp8 = tflops * 1e12;
	return read_link(r, dev, d);
}

/*
 * `family:` (ampere, ada, hopper, blackwell, cdna3) sets the efficiency
 * defaults of that architecture (profile.h, kv_device_family_defaults); the
 * `perf:` mapping read next still overrides them.  Absent: the A100 fit.
 */
static int read_family(struct kv_cfg_node *r, struct kv_device *dev, struct kv_diag *d)
{
	struct kv_cfg_node *n = kv_cfg_get(r, "family");
	int err;

	if (!n)
		return 0;
	if ((err = kv_cfg_str(r, "family", "", dev->family, sizeof(dev->family), d)))
		return err;
	if (kv_device_family_defaults(dev))
		return kv_cfg_error(n, d, "unknown family '%s': expected one of: %s", dev->family,
				    kv_device_family_names());
	return 0;
}

/*
 * A kind of profile: where its files are, what messages call it, and its
 * reader, which fills the record (zeroed first) from the parsed document.
 * One loader serves both kinds and both sources; a new kind is a reader
 * and one of these.
 */
struct profile_kind {
	const char *dir; /* its directory under kv_profiles_dir() */
	const char *what; /* its name in messages */
	size_t size; /* bytes of its record */
	int (*read)(struct kv_cfg_doc *doc, void *out, struct kv_diag *d);
};

/* A profile held in memory: len bytes at text, not NUL-terminated. */
struct profile_text {
	const char *text;
	size_t len;
};

static int read_host(struct kv_cfg_doc *doc, void *out, struct kv_diag *d);
static const struct profile_kind host_kind = { "hosts", "host", sizeof(struct kv_host_profile),
					       read_host };
static int load(const struct profile_kind *k, const char *name_or_path,
		const struct profile_text *mem, void *out, struct kv_diag *d);

/* `host:` names a shipped host profile (checked here, so the error points at the device's key). */
static int read_device_host(struct kv_cfg_node *r, struct kv_device *dev, struct kv_diag *d)
{
	struct kv_host_profile h;
	struct kv_diag e;
	int err = kv_cfg_str(r, "host", "", dev->host, sizeof(dev->host), d);

	if (err || !dev->host[0])
		return err;
	if (looks_like_path(dev->host) || load(&host_kind, dev->host, NULL, &h, &e))
		return kv_cfg_error(kv_cfg_get(r, "host"), d,
				    "bad value '%s': expected the name of a host profile (kvsim list hosts)",
				    dev->host);
	return 0;
}

/* The `perf:` mapping; absent keys keep their defaults. */
static int read_perf(struct kv_cfg_node *p, struct kv_device *dev, struct kv_diag *d)
{
	const kv_ns max_ns = 10 * KV_NS_PER_S;
	int err;

	if ((err = kv_cfg_expect_map(p, d)) || (err = kv_cfg_check_keys(p, perf_keys, d)) ||
	    (err = kv_cfg_dbl(p, "eff_bw", dev->eff_bw, 1e-6, 1, &dev->eff_bw, d)) ||
	    (err = kv_cfg_dbl(p, "eff_flops", dev->eff_flops, 1e-6, 1, &dev->eff_flops, d)) ||
	    (err = kv_cfg_dbl(p, "eff_attn", dev->eff_attn, 0, 1, &dev->eff_attn, d)) ||
	    (err = kv_cfg_ns(p, "overhead", dev->overhead_ns, 0, max_ns, &dev->overhead_ns, d)) ||
	    (err = kv_cfg_ns(p, "per_seq", dev->per_seq_ns, 0, max_ns, &dev->per_seq_ns, d)) ||
	    (err = kv_cfg_ns(p, "allreduce_latency", dev->allreduce_latency_ns, 0, max_ns,
			     &dev->allreduce_latency_ns, d)) ||
	    (err = kv_cfg_ns(p, "collective_overhead", dev->collective_overhead_ns, 0, max_ns,
			     &dev->collective_overhead_ns, d)))
		return err;
	return kv_cfg_dbl(p, "dequant_flops_per_byte", dev->dequant_flops_per_byte, 0, 1e6,
			  &dev->dequant_flops_per_byte, d);
}

/*
 * The `uncertainty:` mapping (sim/uncert.h): per coefficient of
 * KV_UNC_COEFS, KEY: a relative standard deviation (0 to 5), and for a
 * duration KEY_abs: an absolute one ("4us").  Absent keys keep the
 * defaults (the A100 fit's intervals).
 */
static int read_uncertainty(struct kv_cfg_node *u, struct kv_device *dev, struct kv_diag *d)
{
	const kv_ns max_ns = 10 * KV_NS_PER_S;
	struct kv_cfg_node *n;
	char key[64];
	size_t i;
	int err;

	if (!u)
		return 0;
	if ((err = kv_cfg_expect_map(u, d)))
		return err;
	for (n = u->child; n; n = n->next) {
		size_t len = strlen(n->key);
		int k = kv_unc_find(n->key);

		if (k < 0 && len > 4 && !strcmp(n->key + len - 4, "_abs")) {
			snprintf(key, sizeof(key), "%.*s", (int)(len - 4), n->key);
			k = kv_unc_find(key);
			if (k >= 0 && kv_unc_coefs[k].kind != KV_UNC_NS)
				k = -1;
		}
		if (k < 0)
			return kv_cfg_error(n, d, "unknown key '%s': expected a perf coefficient (%s) "
					    "with a relative sd, or a duration's NAME_abs (overhead_abs, per_seq_abs, "
					    "...) with an absolute one", n->key,
					    kv_unc_names());
	}
	for (i = 0; i < kv_unc_n; i++) {
		kv_ns abs = (kv_ns)dev->unc.abs_sd_ns[i];

		snprintf(key, sizeof(key), "%s_abs", kv_unc_coefs[i].name);
		if ((err = kv_cfg_dbl(u, kv_unc_coefs[i].name, dev->unc.rel_sd[i], 0, 5,
				      &dev->unc.rel_sd[i], d)) ||
		    (kv_unc_coefs[i].kind == KV_UNC_NS &&
		     (err = kv_cfg_ns(u, key, abs, 0, max_ns, &abs, d))))
			return err;
		dev->unc.abs_sd_ns[i] = (double)abs;
	}
	return 0;
}

static int read_cost(struct kv_cfg_node *c, struct kv_device *dev, struct kv_diag *d)
{
	int err;

	if ((err = kv_cfg_expect_map(c, d)) || (err = kv_cfg_check_keys(c, cost_keys, d)))
		return err;
	return kv_cfg_dbl(c, "alpha", dev->alpha, 1, 1e6, &dev->alpha, d);
}

/* The device reader (struct profile_kind): fills the zeroed struct kv_device at out. */
static int read_device(struct kv_cfg_doc *doc, void *out, struct kv_diag *d)
{
	struct kv_cfg_node *r = doc->root;
	struct kv_device *dev = out;
	int err;

	kv_device_set_defaults(dev);
	if ((err = kv_cfg_check_keys(r, device_keys, d)) ||
	    (err = require_keys(r, device_required, doc->path, d)) ||
	    (err = read_name(r, dev->name, sizeof(dev->name), d)) ||
	    (err = read_source(r, d)) || (err = read_datasheet(r, dev, d)) ||
	    (err = read_family(r, dev, d)) ||
	    (err = read_device_host(r, dev, d)) ||
	    (err = kv_cfg_dbl(r, "cost_per_gpu_hour", 0, 0, 1e4, &dev->cost_per_gpu_hour, d)) ||
	    (err = read_perf(kv_cfg_get(r, "perf"), dev, d)) ||
	    (err = read_cost(kv_cfg_get(r, "cost"), dev, d)) ||
	    (err = read_uncertainty(kv_cfg_get(r, "uncertainty"), dev, d)))
		return err;
	err = kv_device_validate(dev, d, doc->path);
	return err ? locate(r, d, err) : 0;
}

/* ---- host profiles ---- */

static const char *const host_keys[] = { "name", "cpu_speed", "coefficients", "source", NULL };
static const char *const host_required[] = { "name", "source", NULL };

/* The `coefficients:` mapping: host.h's keys, each a duration; absent ones stay unset. */
static int read_host_coefs(struct kv_cfg_node *c, struct kv_host_profile *h, struct kv_diag *d)
{
	static const char *keys[KV_HOST_NCOEF + 1];
	kv_ns v;
	int i, err;

	for (i = 0; i < KV_HOST_NCOEF; i++)
		keys[i] = kv_host_coef_key(i);
	if (!c)
		return 0;
	if ((err = kv_cfg_expect_map(c, d)) || (err = kv_cfg_check_keys(c, keys, d)))
		return err;
	for (i = 0; i < KV_HOST_NCOEF; i++) {
		if (!kv_cfg_get(c, keys[i]))
			continue;
		if ((err = kv_cfg_ns(c, keys[i], 0, 0, KV_NS_PER_S, &v, d)))
			return err;
		h->coef[i] = (double)v;
		h->set |= 1u << i;
	}
	return 0;
}

/* The host reader (struct profile_kind): fills the zeroed struct kv_host_profile at out. */
static int read_host(struct kv_cfg_doc *doc, void *out, struct kv_diag *d)
{
	struct kv_cfg_node *r = doc->root;
	struct kv_host_profile *h = out;
	int err;

	if ((err = kv_cfg_check_keys(r, host_keys, d)) ||
	    (err = require_keys(r, host_required, doc->path, d)) ||
	    (err = read_name(r, h->name, sizeof(h->name), d)) || (err = read_source(r, d)) ||
	    (err = kv_cfg_dbl(r, "cpu_speed", 1.0, 0.01, 100.0, &h->cpu_speed, d)))
		return err;
	return read_host_coefs(kv_cfg_get(r, "coefficients"), h, d);
}

/* ---- loading ---- */

static const struct profile_kind model_kind = { "models", "model", sizeof(struct kv_model),
						read_model };
static const struct profile_kind device_kind = { "devices", "device", sizeof(struct kv_device),
						 read_device };



/*
 * Loads a profile of kind k into out: from mem, reported as file
 * name_or_path, when mem is non-NULL; else from the file name_or_path names
 * or is (resolve).  Returns as kv_profile_load_model.
 */
static int load(const struct profile_kind *k, const char *name_or_path,
		const struct profile_text *mem, void *out, struct kv_diag *d)
{
	char path[PROFILE_PATH_MAX + 256];
	struct kv_cfg_doc doc;
	int err;

	if (mem) {
		err = kv_cfg_load_mem(&doc, name_or_path, mem->text, mem->len, d);
	} else {
		err = resolve(k->dir, k->what, name_or_path, path, sizeof(path), d);
		if (!err)
			err = kv_cfg_load(&doc, path, d);
	}
	if (err)
		return err;
	memset(out, 0, k->size);
	err = k->read(&doc, out, d);
	kv_cfg_free(&doc);
	return err;
}

int kv_profile_load_model(const char *name_or_path, struct kv_model *m, struct kv_diag *d)
{
	return load(&model_kind, name_or_path, NULL, m, d);
}

int kv_profile_load_model_mem(const char *name, const char *text, size_t len, struct kv_model *m,
			      struct kv_diag *d)
{
	return load(&model_kind, name, &(struct profile_text){ text, len }, m, d);
}

int kv_profile_load_device(const char *name_or_path, struct kv_device *dev,
			   struct kv_diag *d)
{
	return load(&device_kind, name_or_path, NULL, dev, d);
}

int kv_profile_load_device_mem(const char *name, const char *text, size_t len,
			       struct kv_device *dev, struct kv_diag *d)
{
	return load(&device_kind, name, &(struct profile_text){ text, len }, dev, d);
}

int kv_profile_load_host(const char *name_or_path, struct kv_host_profile *h, struct kv_diag *d)
{
	return load(&host_kind, name_or_path, NULL, h, d);
}

int kv_profile_load_host_mem(const char *name, const char *text, size_t len,
			     struct kv_host_profile *h, struct kv_diag *d)
{
	return load(&host_kind, name, &(struct profile_text){ text, len }, h, d);
}
