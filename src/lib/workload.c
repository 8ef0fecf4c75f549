/*
 * workload.c -- reading a workload file into a kv_sim_config.
 *
 * One reader per section, each listing its keys so an unknown key is an
 * error naming the valid ones.  Reading never stops at the first default:
 * every key present is checked.
 */
#include "workload.h"

#include "cfg.h"
#include "profile_load.h"
#include "workload_sessions.h"

#include <ctype.h>
#include <libgen.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#define TRY(x)                                                                \
	do {                                                                  \
		int rc_ = (x);                                                \
		if (rc_)                                                      \
			return rc_;                                           \
	} while (0)

/* --- plugins --------------------------------------------------------------- */

/* Reads one plugin option from mapping m into priv. */
static int read_option(struct kv_cfg_node *m, const struct kv_option *o, void *priv,
		       struct kv_diag *d)
{
	char *f = (char *)priv + o->offset;
	uint64_t u;
	int i;

	switch (o->type) {
	case KV_OPT_U64:
		TRY(kv_cfg_u64(m, o->name, *(uint64_t *)f, (uint64_t)o->min, (uint64_t)o->max, &u, d));
		*(uint64_t *)f = u;
		return 0;
	case KV_OPT_BYTES:
		TRY(kv_cfg_bytes(m, o->name, *(uint64_t *)f, (uint64_t)o->min, (uint64_t)o->max, &u, d));
		*(uint64_t *)f = u;
		return 0;
	case KV_OPT_NS:
		TRY(kv_cfg_ns(m, o->name, *(uint64_t *)f, (uint64_t)o->min, (uint64_t)o->max, &u, d));
		*(uint64_t *)f = u;
		return 0;
	case KV_OPT_DBL:
		return kv_cfg_dbl(m, o->name, *(double *)f, o->min, o->max, (double *)f, d);
	case KV_OPT_BOOL:
		TRY(kv_cfg_bool(m, o->name, *(int *)f, &i, d));
		*(int *)f = i;
		return 0;
	case KV_OPT_ENUM:
		TRY(kv_cfg_enum(m, o->name, o->names, *(int *)f, &i, d));
		*(int *)f = i;
		return 0;
	}
	return KV_EINVAL;
}

/* The option name of plugin p, or NULL. */
static const struct kv_option *plugin_option(const struct kv_plugin *p, const char *name)
{
	const struct kv_option *o;

	for (o = p->options; o && o->name; o++)
		if (!strcmp(o->name, name))
			return o;
	return NULL;
}

/*
 * An option left in plugin section n that belongs to another plugin of
 * kind k (`--set cache.name=chunked` over a file's `cache: {name: full,
 * max_len: 4096}`): an error naming the plugin it belongs to, where the
 * chosen plugin was named, and the fix.  0 when there is none.
 */
static int foreign_option(struct kv_cfg_node *n, enum kv_plugin_kind k,
			  const struct kv_plugin *chosen, const struct kv_cfg_node *name_node,
			  struct kv_diag *d)
{
	const char *kind = kv_plugin_kind_key(k);
	/* the section's path for --set: the router's lives under cluster: */
	const char *at = k == KV_PLUGIN_ROUTER ? "cluster.router" : kind;
	const struct kv_plugin *p;
	struct kv_cfg_node *c;
	char owners[256], named[300] = "";
	size_t i, off;

	for (c = n->child; c; c = c->next) {
		if (c->used || !c->key || !strcmp(c->key, "name"))
			continue;
		owners[0] = 0;
		for (i = 0, off = 0; (p = kv_plugin_at(k, i)) && off < sizeof(owners); i++)
			if (p != chosen && plugin_option(p, c->key))
				off += (size_t)snprintf(owners + off, sizeof(owners) - off, "%s'%s'",
							off ? ", " : "", p->name);
		if (!owners[0])
			continue;
		if (name_node && name_node->file && !strcmp(name_node->file, "--set"))
			return kv_cfg_error(c, d, "unknown key '%s' for %s '%s' (named by --set %s.name=%s): "
					    "it is an option of %s %s, left from the file; to switch plugins "
					    "replace the whole section: --set %s=%s (or --set '%s={name: %s, "
					    "OPTION: VALUE}'), which drops the other plugin's options",
					    c->key, kind, chosen->name, at, chosen->name, kind, owners,
					    at, chosen->name, at, chosen->name);
		if (name_node && name_node->file)
			snprintf(named, sizeof(named), " (named at %s:%lu)", name_node->file,
				 name_node->line);
		return kv_cfg_error(c, d, "unknown key '%s' for %s '%s'%s: it is an option of %s %s; "
				    "remove it or name one of those (`kvsim list %ss` shows each one's "
				    "options)", c->key, kind, chosen->name, named, kind, owners, kind);
	}
	return 0;
}

/*
 * Reads a plugin section (`scheduler:` or `cache:`): a scalar name, or a
 * mapping with `name:` and the plugin's options.  Finds the plugin of kind
 * k; allocates its option block (priv_size bytes) filled with the defaults,
 * then with the values present.
 */
static int read_plugin(struct kv_cfg_node *root, enum kv_plugin_kind k, const char *def_name,
		       const struct kv_plugin **plugin, void **opts, struct kv_diag *d)
{
	const char *kind = kv_plugin_kind_key(k);
	struct kv_cfg_node *n = kv_cfg_get(root, kind), *name_node = n;
	const struct kv_option *o;
	char name[64], buf[512];

	if (n && n->type == KV_CFG_MAP) {
		TRY(kv_cfg_str(n, "name", def_name, name, sizeof(name), d));
		name_node = kv_cfg_get(n, "name");
	} else if (n) {
		TRY(kv_cfg_str(root, kind, def_name, name, sizeof(name), d));
	} else {
		snprintf(name, sizeof(name), "%s", def_name);
	}
	*plugin = kv_plugin_find(k, name);
	if (!*plugin)
		return kv_cfg_error(name_node, d, "unknown %s '%s': expected one of: %s", kind,
				    name, kv_plugin_names(k, buf, sizeof(buf)));
	*opts = kv_xcalloc(1, (*plugin)->priv_size ? (*plugin)->priv_size : 1);
	kv_options_defaults((*plugin)->options, *opts);
	if (!n || n->type != KV_CFG_MAP)
		return 0;
	for (o = (*plugin)->options; o && o->name; o++)
		TRY(read_option(n, o, *opts, d));
	TRY(foreign_option(n, k, *plugin, name_node, d));
	return kv_cfg_check_unused(n, d);
}

/* --- sections ---------------------------------------------------------------- */

/*
 * Checks that the file the value of n names (resolved to path) opens as
 * input (kv_input_open(): a regular file), so a missing trace or profile,
 * or a FIFO or device given as one, is reported at the workload's key --
 * file:line:col -- as every other bad value is, not by the file's name
 * alone.  The reader opens the file again later and checks again.
 */
static int check_input_file(struct kv_cfg_node *n, const char *path, struct kv_diag *d)
{
	struct kv_diag e;
	FILE *f;

	if (!kv_input_open(path, &f, &e)) {
		fclose(f);
		return 0;
	}
	return kv_cfg_error(n, d, "file '%s': %s", path, e.msg);
}

/*
 * A name that becomes a CSV field, a chart title and a directory name must
 * be one line of printable text: a control character (a newline from a
 * YAML "|" block, a tab, a NUL from --set) is an error naming it escaped.
 */
static int check_name(struct kv_cfg_node *n, const char *what, const char *name,
		      struct kv_diag *d)
{
	char v[256], c[8];
	const char *p;

	for (p = name; *p; p++)
		if (iscntrl((unsigned char)*p))
			return kv_cfg_error(n, d,
					    "bad value '%s': %s contains a control character ('%s'): expected one line of printable text",
					    kv_show(name, strlen(name), v, sizeof(v)), what,
					    kv_show(p, 1, c, sizeof(c)));
	return 0;
}

static void list_profile(const char *name, const char *path, void *arg)
{
	char *buf = arg;
	size_t off = strlen(buf);

	(void)path;
	snprintf(buf + off, off < 512 ? 512 - off : 0, "%s%s", off ? ", " : "", name);
}

/*
 * kv_cfg_resolve_path with a message: a path (after joining the workload's
 * directory) longer than the buffer is an error at node n (or the file).
 */
static int resolve_path(const struct kv_cfg_doc *doc, struct kv_cfg_node *n, const char *rel,
			char *buf, size_t len, struct kv_diag *d)
{
	if (!kv_cfg_resolve_path(doc, n, rel, buf, len))
		return 0;
	if (n)
		return kv_cfg_error(n, d, "path too long: '%.64s...' (%zu bytes): joined to its "
				    "directory %s it passes %zu bytes", rel, strlen(rel),
				    doc->dir ? doc->dir : ".", len - 1);
	return kv_diag_set(d, KV_ERANGE, doc->path, 0, 0, "",
			   "path too long: '%.64s...' (%zu bytes): expected at most %zu bytes", rel,
			   strlen(rel), len - 1);
}

/* Loads the model, device or host named by key ("model", "device", "host") of mapping m. */
static int read_profile(struct kv_cfg_doc *doc, struct kv_cfg_node *m, const char *key,
			const char *def, struct kv_sim_config *c, struct kv_diag *d)
{
	struct kv_cfg_node *n = kv_cfg_get(m, key);
	char name[1024], path[1024], names[512] = "";
	int is_path, rc;

	TRY(kv_cfg_str(m, key, def, name, sizeof(name), d));
	is_path = strchr(name, '/') || strstr(name, ".yaml");
	if (is_path) {
		TRY(resolve_path(doc, n, name, path, sizeof(path), d));
		TRY(check_input_file(n, path, d));
	} else {
		snprintf(path, sizeof(path), "%s", name);
	}
	rc = !strcmp(key, "model")  ? kv_profile_load_model(path, &c->model, d) :
	     !strcmp(key, "device") ? kv_profile_load_device(path, &c->device, d) :
				      kv_profile_load_host(path, &c->host, d);
	if (rc != KV_ENOENT || is_path || !n)
		return rc;
	kv_profiles_list(!strcmp(key, "model") ? "models" : !strcmp(key, "device") ? "devices" : "hosts",
			 list_profile, names);
	return kv_cfg_error(n, d, "unknown %s '%s': expected one of: %s (or a path to a .yaml profile)",
			    key, name, names);
}

static int read_profiles(struct kv_cfg_doc *doc, struct kv_sim_config *c, struct kv_diag *d)
{
	TRY(read_profile(doc, doc->root, "model", "llama-2-7b", c, d));
	TRY(read_profile(doc, doc->root, "device", "a100-80g", c, d));
	/* the CPU (host.h): the workload's, else the device profile's default, else the reference */
	return read_profile(doc, doc->root, "host", c->device.host[0] ? c->device.host : "reference",
			    c, d);
}

/*
 * The values of 1..64 for which ok(v, a, b) holds, as "1, 2, 4" into buf
 * (for a message naming what would have been accepted).
 */
static const char *list_ok(int (*ok)(uint32_t v, uint32_t a, uint32_t b), uint32_t a, uint32_t b,
			   char *buf, size_t len)
{
	size_t at = 0;
	uint32_t v;

	buf[0] = 0;
	for (v = 1; v <= 64 && at < len; v++)
		if (ok(v, a, b))
			at += (size_t)snprintf(buf + at, len - at, "%s%u", at ? ", " : "", v);
	return buf;
}

/*
 * tp shards whole attention heads, and KV heads either split evenly or are
 * replicated whole: vLLM's ModelConfig.verify_with_parallel_config requires
 * heads % tp == 0, and QKVParallelLinear divides the KV heads by tp when tp
 * is smaller, else replicates them tp / kv_heads times (divide() asserts
 * both).  An MLA model (kv_lora_rank) keeps one latent on every GPU.
 */
static int tp_ok(uint32_t tp, uint32_t heads, uint32_t kv_heads)
{
	return heads % tp == 0 && (!kv_heads || kv_heads % tp == 0 || tp % kv_heads == 0);
}

/*
 * Routed experts split evenly over ep GPUs, and those GPUs are a stage's tp
 * GPUs: SGLang requires tp % ep == 0 (moe_tp_size = tp / ep,
 * python/sglang/srt/distributed/parallel_state.py); vLLM's expert-parallel
 * group is the tp (x data-parallel) GPUs.  vLLM gives the first ranks one
 * more expert when ep does not divide them (determine_expert_map); kvsim
 * models only the even split, so it asks for experts % ep == 0.
 */
static int ep_ok(uint32_t ep, uint32_t experts, uint32_t tp)
{
	return experts % ep == 0 && tp % ep == 0;
}

/*
 * Data-parallel attention with expert parallelism (perf.h kv_perf_dp_iter_ns):
 * dp ranks of tp GPUs whose experts spread over all of them, as vLLM's
 * --data-parallel-size with --enable-expert-parallel (the expert group is
 * DP x TP) and SGLang's --enable-dp-attention with --ep-size equal to its
 * --tp-size (every GPU) run it.  So a MoE model, ep = dp * tp, experts % ep
 * == 0, one pipeline stage.
 */
static int check_dp(struct kv_cfg_node *n, const struct kv_sim_config *c, struct kv_diag *d)
{
	const struct kv_model *m = &c->model;
	uint32_t g = c->dp * c->tp;

	if (c->dp <= 1)
		return 0;
	if (!m->experts)
		return kv_cfg_error(kv_cfg_get(n, "data_parallel"), d,
				    "data_parallel %u for %s (dense: no experts): expected a MoE "
				    "model (data-parallel attention shards routed experts), or "
				    "cluster.replicas for independent copies", c->dp, m->name);
	if (c->pp > 1)
		return kv_cfg_error(kv_cfg_get(n, "pipeline_parallel"), d,
				    "pipeline_parallel %u with data_parallel %u: expected 1 (a "
				    "data-parallel group is one pipeline stage)", c->pp, c->dp);
	if (c->ep != g)
		return kv_cfg_error(kv_cfg_get(n, "expert_parallel") ? kv_cfg_get(n, "expert_parallel")
								      : kv_cfg_get(n, "data_parallel"), d,
				    "expert_parallel %u with data_parallel %u x tensor_parallel %u: "
				    "expected %u (the experts spread over every GPU of the group)",
				    c->ep, c->dp, c->tp, g);
	if (m->experts % g)
		return kv_cfg_error(kv_cfg_get(n, "data_parallel"), d,
				    "data_parallel %u x tensor_parallel %u = %u GPUs for %s's %u routed "
				    "experts: expected a GPU count that divides the experts",
				    c->dp, c->tp, g, m->name, m->experts);
	return 0;
}

/* A tp and ep the model's heads and experts can be split by (after the model is read). */
static int check_parallel(struct kv_cfg_node *n, const struct kv_sim_config *c, struct kv_diag *d)
{
	const struct kv_model *m = &c->model;
	uint32_t kvh = m->kv_lora_rank ? 0 : m->kv_heads;
	char ok[256], what[160];

	if (!tp_ok(c->tp, m->heads, kvh))
		return kv_cfg_error(kv_cfg_get(n, "tensor_parallel"), d,
				    "%u GPUs for %s's %u attention heads and %u KV heads%s: expected "
				    "%s: %s", c->tp, m->name, m->heads, m->kv_heads,
				    kvh ? "" : " (MLA: one latent, on every GPU)",
				    kvh ? "a divisor of the heads that divides the KV heads or is a "
					  "multiple of them" : "a divisor of the heads",
				    list_ok(tp_ok, m->heads, kvh, ok, sizeof(ok)));
	if (c->dp > 1)
		return check_dp(n, c, d);
	if (ep_ok(c->ep, m->experts, c->tp))
		return 0;
	if (m->experts)
		snprintf(what, sizeof(what), "%s's %u routed experts", m->name, m->experts);
	else
		snprintf(what, sizeof(what), "%s (dense: no experts)", m->name);
	return kv_cfg_error(kv_cfg_get(n, "expert_parallel"), d,
			    "%u GPUs for %s on a stage of %u GPU%s (tensor_parallel): expected a "
			    "divisor of %s: %s", c->ep, what, c->tp, c->tp > 1 ? "s" : "",
			    m->experts ? "both the experts and tensor_parallel" : "tensor_parallel",
			    list_ok(ep_ok, m->experts, c->tp, ok, sizeof(ok)));
}

/*
 * The parallelism keys of mapping n (cluster:, or a group, whose absent
 * keys keep c's values: the top level's), checked against c's model.
 */
static int read_parallel(struct kv_cfg_node *n, struct kv_sim_config *c, struct kv_diag *d)
{
	uint64_t u;

	TRY(kv_cfg_u64(n, "tensor_parallel", c->tp, 1, 64, &u, d));
	c->tp = (uint32_t)u;
	TRY(kv_cfg_u64(n, "pipeline_parallel", c->pp, 1, 64, &u, d));
	c->pp = (uint32_t)u;
	TRY(kv_cfg_u64(n, "data_parallel", c->dp, 1, 64, &u, d));
	c->dp = (uint32_t)u;
	TRY(kv_cfg_u64(n, "expert_parallel", c->ep, 1, 512, &u, d));
	c->ep = (uint32_t)u;
	return check_parallel(n, c, d);
}

static int read_cluster(struct kv_cfg_node *root, struct kv_sim_config *c, struct kv_diag *d)
{
	static const char *const keys[] = { "replicas", "tensor_parallel", "pipeline_parallel",
					    "expert_parallel", "data_parallel", "router", "groups",
					    "prefill_replicas", "kv_transfer", NULL };
	struct kv_cfg_node *n = kv_cfg_get(root, "cluster");
	const struct kv_plugin *router;
	uint64_t u;

	TRY(kv_cfg_expect_map(n, d));
	TRY(kv_cfg_check_keys(n, keys, d));
	TRY(kv_cfg_u64(n, "replicas", 1, 1, 65536, &u, d));
	c->replicas = (uint32_t)u;
	if (kv_cfg_get(n, "groups") && kv_cfg_get(n, "replicas"))
		return kv_cfg_error(kv_cfg_get(n, "replicas"), d,
				    "cluster.replicas with cluster.groups: expected the replicas in "
				    "each group (cluster.groups[i].replicas)");
	c->tp = c->pp = c->dp = c->ep = 1;
	TRY(read_parallel(n, c, d));
	TRY(kv_cfg_u64(n, "prefill_replicas", 0, 0, 65535, &u, d));
	c->pd_prefill = (uint32_t)u;
	if (c->pd_prefill && kv_cfg_get(n, "groups"))
		return kv_cfg_error(kv_cfg_get(n, "prefill_replicas"), d,
				    "cluster.prefill_replicas with cluster.groups: expected role: prefill "
				    "and role: decode on the groups");
	if (c->pd_prefill && c->pd_prefill >= c->replicas)
		return kv_cfg_error(kv_cfg_get(n, "prefill_replicas"), d,
				    "%u of %u replicas prefill: expected fewer than cluster.replicas (at least one replica decodes)",
				    c->pd_prefill, c->replicas);
	TRY(kv_workload_kv_transfer(n, &c->xfer, d));
	/* a name, or {name: NAME, OPTION: VALUE, ...} as scheduler: and cache: take */
	TRY(read_plugin(n, KV_PLUGIN_ROUTER, "round-robin", &router, &c->router_opts, d));
	c->router = (const struct kv_router_ops *)router;
	return 0;
}

/* A size that may be `auto` (KV_MEM_AUTO, also when absent). */
static int read_auto_bytes(struct kv_cfg_node *n, const char *key, uint64_t *out,
			   struct kv_diag *d)
{
	struct kv_cfg_node *v = kv_cfg_get(n, key);

	if (v && v->value && !strcmp(v->value, "auto")) {
		*out = KV_MEM_AUTO;
		return 0;
	}
	return kv_cfg_bytes(n, key, KV_MEM_AUTO, 0, 1ULL << 50, out, d);
}

/*
 * memory.model and the terms of its KV budget (sim/memory.h).  Every key is
 * checked whatever the model, and a model ignores the others' keys, so one
 * file switches models with --set memory.model=...
 */
static int read_memory_model(struct kv_cfg_node *n, struct kv_mem_cfg *m, struct kv_diag *d)
{
	static const char *const models[] = { "share", "vllm", "sglang", NULL };
	static const char *const checks[] = { "auto", "error", "warn", NULL };
	const uint64_t big = 1ULL << 50;
	uint64_t blocks;
	int i;

	kv_mem_cfg_init(m);
	TRY(kv_cfg_enum(n, "model", models, KV_MEM_SHARE, &i, d));
	m->model = (enum kv_mem_model)i;
	TRY(kv_cfg_dbl(n, "share", 0.9, 0.01, 1.0, &m->share, d));
	TRY(kv_cfg_dbl(n, "gpu_memory_utilization", 0.9, 0.01, 1.0, &m->gpu_memory_utilization, d));
	TRY(kv_cfg_dbl(n, "mem_fraction_static", 0, 0.01, 1.0, &m->mem_fraction_static, d));
	TRY(read_auto_bytes(n, "activation_bytes", &m->activation_bytes, d));
	TRY(kv_cfg_bytes(n, "cuda_graph_bytes", 0, 0, big, &m->cuda_graph_bytes, d));
	TRY(read_auto_bytes(n, "non_torch_bytes", &m->non_torch_bytes, d));
	TRY(kv_cfg_u64(n, "kv_tokens", 0, 0, big, &m->kv_tokens, d)); /* 0: estimate */
	TRY(kv_cfg_enum(n, "context_check", checks, KV_CTX_CHECK_AUTO, &i, d));
	m->context_check = (enum kv_ctx_check)i;
	TRY(kv_cfg_u64(n, "kv_blocks", 0, 0, big / KV_MEM_BLOCK_TOKENS, &blocks, d));
	if (blocks && m->kv_tokens)
		return kv_cfg_error(kv_cfg_get(n, "kv_blocks"), d,
				    "memory.kv_blocks and memory.kv_tokens pin the same capacity: expected one of them");
	if (blocks)
		m->kv_tokens = blocks * KV_MEM_BLOCK_TOKENS;
	return 0;
}

/*
 * A pinned capacity times the whole model's KV bytes per token (the pool a
 * replica builds, whatever its pipeline stages) must fit
 * KV_MEM_POOL_MAX_BYTES: each input's range alone lets the product wrap.
 */
static int check_pin(struct kv_cfg_node *n, const struct kv_sim_config *c, struct kv_diag *d)
{
	struct kv_cfg_node *at;
	uint64_t bytes, tokens = 0;
	char msg[sizeof(d->msg)];

	if (!c->mem.kv_tokens)
		return 0;
	kv_cfg_u64(n, "kv_tokens", 0, 0, UINT64_MAX, &tokens, NULL); /* read once already */
	at = kv_cfg_get(n, tokens ? "kv_tokens" : "kv_blocks");
	if (!kv_mem_pin_bytes(c->mem.kv_tokens, &c->model, &bytes, d))
		return 0;
	snprintf(msg, sizeof(msg), "%s", d->msg);
	kv_cfg_error(at, d, "%s", msg);
	return KV_ERANGE;
}

/*
 * vLLM before 0.6 (engine vllm-v0 with version "0.5"): the non-torch term
 * of that era's profiler, KV_MEM_NON_TORCH_V05_BYTES (x2 at TP > 1, the
 * same rule as the later default), unless memory.non_torch_bytes is set.
 * Reads the engine section's nodes; the engine plugin reads them again.
 */
static void v05_non_torch(struct kv_cfg_node *root, struct kv_sim_config *c)
{
	struct kv_cfg_node *e = kv_cfg_get(root, "engine"), *name, *ver;

	if (c->mem.model != KV_MEM_VLLM || c->mem.non_torch_bytes != KV_MEM_AUTO || !e || e->value)
		return; /* (a scalar engine names no version: its default, not 0.5) */
	name = kv_cfg_get(e, "name");
	ver = kv_cfg_get(e, "version");
	if (name && name->value && !strcmp(name->value, "vllm-v0") && ver && ver->value &&
	    !strcmp(ver->value, "0.5"))
		c->mem.non_torch_bytes = KV_MEM_NON_TORCH_V05_BYTES * (c->tp > 1 ? 2 : 1);
}

static int read_memory(struct kv_cfg_node *root, struct kv_sim_config *c, struct kv_diag *d)
{
	static const char *const keys[] = { "model", "share", "gpu_memory_utilization",
					    "mem_fraction_static", "activation_bytes",
					    "cuda_graph_bytes", "non_torch_bytes", "kv_tokens",
					    "kv_blocks", "min_block", "max_block", "context_check", NULL };
	struct kv_cfg_node *n = kv_cfg_get(root, "memory");

	TRY(kv_cfg_expect_map(n, d));
	TRY(kv_cfg_check_keys(n, keys, d));
	TRY(read_memory_model(n, &c->mem, d));
	v05_non_torch(root, c);
	c->mem.dp = c->dp;
	if (c->dp > 1 && c->mem.model == KV_MEM_SHARE)
		return kv_cfg_error(kv_cfg_get(n, "model") ? kv_cfg_get(n, "model") : n ? n : root, d,
				    "memory.model share with cluster.data_parallel %u: expected vllm "
				    "or sglang (expert placement sets each rank's KV capacity)", c->dp);
	TRY(check_pin(n, c, d)); /* the product below is checked */
	if (kv_cfg_get(n, "min_block") && !strcmp(kv_cfg_get(n, "min_block")->value ?
						  kv_cfg_get(n, "min_block")->value : "", "auto"))
		c->pool_min_block_bytes = 0;
	else
		TRY(kv_cfg_bytes(n, "min_block", 0, 4096, KV_GiB, &c->pool_min_block_bytes, d));
	TRY(kv_cfg_bytes(n, "max_block", 8 * KV_MiB, 0, 1ULL << 50, &c->pool_max_block_bytes, d));
	if (c->pool_min_block_bytes && (c->pool_min_block_bytes & (c->pool_min_block_bytes - 1)))
		return kv_cfg_error(kv_cfg_get(n, "min_block"), d,
				    "bad value %llu: expected a power of two",
				    (unsigned long long)c->pool_min_block_bytes);
	if (c->pool_max_block_bytes && (c->pool_max_block_bytes & (c->pool_max_block_bytes - 1)))
		return kv_cfg_error(kv_cfg_get(n, "max_block"), d,
				    "bad value %llu: expected 0 (no cap) or a power of two >= min_block",
				    (unsigned long long)c->pool_max_block_bytes);
	if (c->mem.kv_tokens && c->pool_min_block_bytes &&
	    c->mem.kv_tokens * kv_model_kv_bytes_per_token(&c->model) < c->pool_min_block_bytes)
		return kv_cfg_error(kv_cfg_get(n, "min_block"), d,
				    "a unit of %llu bytes is larger than the whole pool the pin gives "
				    "(%llu tokens x %llu bytes): expected at most the pool",
				    (unsigned long long)c->pool_min_block_bytes,
				    (unsigned long long)c->mem.kv_tokens,
				    (unsigned long long)kv_model_kv_bytes_per_token(&c->model));
	if (c->pool_max_block_bytes && c->pool_max_block_bytes < c->pool_min_block_bytes)
		/* at min_block when max_block is the default (an absent key has no line) */
		return kv_cfg_error(kv_cfg_get(n, kv_cfg_get(n, "max_block") ? "max_block" :
									     "min_block"), d,
				    "min_block %llu is larger than max_block %llu%s: expected "
				    "min_block <= max_block (or max_block 0, no cap)",
				    (unsigned long long)c->pool_min_block_bytes,
				    (unsigned long long)c->pool_max_block_bytes,
				    kv_cfg_get(n, "max_block") ? "" : " (its default)");
	return 0;
}

/*
 * The memory budget, computed now as the engine will at start-up
 * (engine.c's pool_size: a stage of ceil(layers / pp) layers, kv_mem_budget)
 * so that a model that does not fit is an error at the line of the key it
 * names (memory.model, memory.share, cluster.pipeline_parallel: the first
 * of those present, else the memory or cluster section), not a message
 * with no line once the run starts.  The engine's own check stays.
 */
static int check_budget(struct kv_cfg_node *root, const struct kv_sim_config *c,
			struct kv_diag *d)
{
	struct kv_model stage;
	struct kv_mem_budget b;
	struct kv_cfg_node *n;
	char path[sizeof(d->field)], *sec, *key;
	int rc;

	if (c->pp > c->model.layers)
		return kv_cfg_error(kv_cfg_get(kv_cfg_get(root, "cluster"), "pipeline_parallel"), d,
				    "%u stages for %s's %u layers: expected at most one stage per layer",
				    c->pp, c->model.name, c->model.layers);
	kv_perf_stage_model(&c->model, c->pp, &stage);
	rc = kv_mem_budget(&c->mem, &stage, &c->device, c->tp, c->max_batch_tokens,
			   c->max_batch_seqs, &b, d);
	if (!rc)
		return 0;
	snprintf(path, sizeof(path), "%s", d->field);
	sec = path;
	key = strchr(path, '.');
	if (key)
		*key++ = 0;
	n = kv_cfg_get(root, sec);
	if (n && key && kv_cfg_get(n, key))
		n = kv_cfg_get(n, key);
	if (!n)
		n = root; /* the section is absent: the workload file, no line */
	snprintf(d->file, sizeof(d->file), "%s", n->file ? n->file : "");
	d->line = n == root ? 0 : n->key_line ? n->key_line : n->line;
	d->col = n == root ? 0 : n->key_line ? n->key_col : n->col;
	return rc;
}

static int read_batching(struct kv_cfg_node *root, struct kv_sim_config *c, struct kv_diag *d)
{
	static const char *const keys[] = { "max_tokens", "max_seqs", "chunked_prefill", NULL };
	struct kv_cfg_node *n = kv_cfg_get(root, "batching");
	uint64_t u;

	TRY(kv_cfg_expect_map(n, d));
	TRY(kv_cfg_check_keys(n, keys, d));
	TRY(kv_cfg_u64(n, "max_tokens", 2048, 1, 1 << 24, &c->max_batch_tokens, d));
	TRY(kv_cfg_u64(n, "max_seqs", 256, 1, 65536, &u, d));
	c->max_batch_seqs = (uint32_t)u;
	if (c->dp > 1) { /* per rank in YAML, as the engines take them; the group steps dp ranks */
		c->max_batch_tokens *= c->dp;
		c->max_batch_seqs *= c->dp;
	}
	return kv_cfg_bool(n, "chunked_prefill", 1, &c->chunked_prefill, d);
}

/* The `format:` names of a trace, in enum kv_trace_format order. */
static const char *const trace_formats[] = { "auto", "azure", "vidur", "lengths", "mooncake",
					     NULL };

/*
 * Reads n's `trace:` file, which n requires (`missing` is the error when it
 * is absent), into path (len bytes), resolved against the workload's
 * directory; the file must be readable.
 */
static int read_trace_path(struct kv_cfg_doc *doc, struct kv_cfg_node *n, const char *missing,
			   char *path, size_t len, struct kv_diag *d)
{
	char rel[1024];

	if (!kv_cfg_get(n, "trace"))
		return kv_cfg_error(n, d, "%s", missing);
	TRY(kv_cfg_str(n, "trace", "", rel, sizeof(rel), d));
	TRY(resolve_path(doc, kv_cfg_get(n, "trace"), rel, path, len, d));
	return check_input_file(kv_cfg_get(n, "trace"), path, d);
}

static int read_lengths(struct kv_cfg_doc *doc, struct kv_cfg_node *n, struct kv_length_spec *l,
			struct kv_diag *d)
{
	static const char *const keys[] = { "dist", "prompt", "output", "prompt_min",
					    "prompt_max", "output_min", "output_max",
					    "prompt_mean", "prompt_sigma", "output_mean",
					    "output_sigma", "trace", "format", NULL };
	static const char *const dists[] = { "fixed", "uniform", "lognormal", "trace", NULL };
	const uint64_t big = 1ULL << 40;
	int i;

	TRY(kv_cfg_expect_map(n, d));
	TRY(kv_cfg_check_keys(n, keys, d));
	TRY(kv_cfg_enum(n, "dist", dists, 0, &i, d));
	l->kind = (enum kv_length_kind)i;
	TRY(kv_cfg_u64(n, "prompt", 512, 1, big, &l->prompt, d));
	TRY(kv_cfg_u64(n, "output", 128, 0, big, &l->output, d));
	TRY(kv_cfg_u64(n, "prompt_min", 1, 1, big, &l->prompt_min, d));
	TRY(kv_cfg_u64(n, "prompt_max", l->kind == KV_LEN_UNIFORM ? 1024 : 0, 0, big, &l->prompt_max, d));
	TRY(kv_cfg_u64(n, "output_min", 1, 0, big, &l->output_min, d));
	TRY(kv_cfg_u64(n, "output_max", l->kind == KV_LEN_UNIFORM ? 256 : 0, 0, big, &l->output_max, d));
	TRY(kv_cfg_dbl(n, "prompt_mean", 512, 1, 1e9, &l->prompt_mean, d));
	TRY(kv_cfg_dbl(n, "prompt_sigma", 1, 0, 10, &l->prompt_sigma, d));
	TRY(kv_cfg_dbl(n, "output_mean", 128, 1, 1e9, &l->output_mean, d));
	TRY(kv_cfg_dbl(n, "output_sigma", 1, 0, 10, &l->output_sigma, d));
	TRY(kv_cfg_enum(n, "format", trace_formats, 0, &i, d));
	l->format = (enum kv_trace_format)i;
	l->prompt_clip = l->prompt_max;
	l->output_clip = l->output_max;
	if (l->kind == KV_LEN_UNIFORM &&
	    (l->prompt_min > l->prompt_max || l->output_min > l->output_max))
		return kv_cfg_error(n, d, "uniform bounds: expected prompt_min <= prompt_max and output_min <= output_max");
	if (l->kind != KV_LEN_TRACE)
		return 0;
	return read_trace_path(doc, n, "dist trace: expected a `trace:` file of lengths", l->path,
			       sizeof(l->path), d);
}

/* The `process:` names, in enum kv_arrival_kind order. */
static const char *const arrival_procs[] = { "poisson", "gamma", "trace", "diurnal", "closed", NULL };

/*
 * workload.arrival.rate: requests per second, or `inf` under poisson or
 * gamma (vllm bench serve's --request-rate inf: every request due at 0).
 */
static int read_rate(struct kv_cfg_node *n, struct kv_source_spec *s, struct kv_diag *d)
{
	struct kv_cfg_node *r = kv_cfg_get(n, "rate");

	if (r && r->value && !r->quoted && (!strcmp(r->value, "inf") || !strcmp(r->value, ".inf"))) {
		if (s->arrival != KV_ARRIVAL_POISSON && s->arrival != KV_ARRIVAL_GAMMA)
			return kv_cfg_error(r, d, "bad value inf: expected a finite rate (inf: poisson or gamma only)");
		s->rate_per_s = INFINITY;
		return 0;
	}
	return kv_cfg_dbl(n, "rate", 1.0, 1e-9, 1e9, &s->rate_per_s, d);
}

/*
 * The client's concurrency limit (sim/gate.h): max_concurrency under an
 * open process (vllm bench serve --max-concurrency), concurrency and
 * think_time under process: closed (that many users, each sending its
 * next request its think time after its previous one completes).
 */
static int read_concurrency(struct kv_cfg_node *n, struct kv_source_spec *s, struct kv_diag *d)
{
	const uint64_t most = 1ULL << 30;
	int closed = s->arrival == KV_ARRIVAL_CLOSED;

	if (closed && kv_cfg_get(n, "max_concurrency"))
		return kv_cfg_error(kv_cfg_get(n, "max_concurrency"), d,
				    "max_concurrency under process closed: expected `concurrency:` (its users)");
	if (!closed && kv_cfg_get(n, "concurrency"))
		return kv_cfg_error(kv_cfg_get(n, "concurrency"), d,
				    "concurrency without process closed: expected `max_concurrency:` (a limit on the %s arrivals) or process: closed",
				    arrival_procs[s->arrival]);
	if (!closed && kv_cfg_get(n, "think_time"))
		return kv_cfg_error(kv_cfg_get(n, "think_time"), d,
				    "think_time without process closed: expected process: closed (users who think between requests)");
	if (closed && !kv_cfg_get(n, "concurrency"))
		return kv_cfg_error(n, d, "process closed without its users: expected `concurrency: N` (N >= 1)");
	TRY(kv_cfg_u64(n, closed ? "concurrency" : "max_concurrency", 0, closed ? 1 : 0, most,
		       &s->max_concurrency, d));
	return kv_cfg_ns(n, "think_time", 0, 0, 86400 * KV_NS_PER_S, &s->think_ns, d);
}

static int read_arrival(struct kv_cfg_doc *doc, struct kv_cfg_node *w, struct kv_source_spec *s,
			struct kv_diag *d)
{
	static const char *const keys[] = { "process", "rate", "cv", "trace", "format",
					    "time_scale", "trough", "peak_at", "period", "sessions",
					    "max_concurrency", "concurrency", "think_time", NULL };
	struct kv_cfg_node *n = kv_cfg_get(w, "arrival");
	int i;

	TRY(kv_cfg_expect_map(n, d));
	TRY(kv_cfg_check_keys(n, keys, d));
	TRY(kv_cfg_enum(n, "process", arrival_procs, 0, &i, d));
	s->arrival = (enum kv_arrival_kind)i;
	TRY(read_rate(n, s, d));
	TRY(read_concurrency(n, s, d));
	TRY(kv_cfg_dbl(n, "cv", 1.0, 1e-3, 100, &s->cv, d));
	TRY(kv_cfg_dbl(n, "time_scale", 1.0, 1e-6, 1e6, &s->time_scale, d));
	/* diurnal: the daily curve (source.h); defaults docs/workload.md */
	TRY(kv_cfg_dbl(n, "trough", 0.25, 0, 1, &s->trough, d));
	TRY(kv_cfg_ns(n, "period", 86400 * KV_NS_PER_S, KV_NS_PER_S, 3650 * 86400 * KV_NS_PER_S,
		      &s->period_ns, d));
	TRY(kv_cfg_ns(n, "peak_at", 14 * 3600 * KV_NS_PER_S, 0, s->period_ns - 1, &s->peak_at_ns, d));
	TRY(kv_cfg_enum(n, "format", trace_formats, 0, &i, d));
	s->trace_format = (enum kv_trace_format)i;
	if (s->arrival != KV_ARRIVAL_TRACE)
		return 0;
	return read_trace_path(doc, n, "process trace: expected a `trace:` file with timestamps",
			       s->trace_path, sizeof(s->trace_path), d);
}

/*
 * A tenant's request_priority: the priority its requests carry when no trace
 * row gives one (vLLM's `priority`: an integer, lower is served first; the
 * `priority` scheduler reads it).  Default 0.
 */
static int read_request_priority(struct kv_cfg_node *n, int32_t *out, struct kv_diag *d)
{
	double v;

	TRY(kv_cfg_dbl(n, "request_priority", 0, INT32_MIN, INT32_MAX, &v, d));
	if (v != floor(v))
		return kv_cfg_error(kv_cfg_get(n, "request_priority"), d,
				    "bad value %g: expected an integer priority (lower is served first)", v);
	*out = (int32_t)v;
	return 0;
}

static int read_tenant(struct kv_cfg_doc *doc, struct kv_cfg_node *n, struct kv_source_spec *s,
		       uint32_t i, struct kv_diag *d)
{
	static const char *const keys[] = { "name",	"share",   "weight", "priority",
					    "request_priority", "lengths", "model", NULL };
	struct kv_tenant_spec *t = &s->tenants[i];
	char def[32];
	double prio;
	uint32_t j;

	TRY(kv_cfg_expect_map(n, d));
	TRY(kv_cfg_check_keys(n, keys, d));
	snprintf(def, sizeof(def), "t%u", i);
	TRY(kv_cfg_str(n, "name", def, t->name, sizeof(t->name), d));
	TRY(check_name(kv_cfg_get(n, "name"), "the tenant name", t->name, d));
	if (!t->name[0]) /* commas and quotes: csv.h quotes them; control characters: check_name */
		return kv_cfg_error(kv_cfg_get(n, "name"), d,
				    "bad value '%s': expected a nonempty name on one line",
				    t->name);
	for (j = 0; j < i; j++)
		if (!strcmp(s->tenants[j].name, t->name))
			return kv_cfg_error(kv_cfg_get(n, "name"), d,
					    "duplicate tenant name '%s': expected unique names", t->name);
	TRY(kv_cfg_dbl(n, "share", 1, 1e-9, 1e9, &t->share, d));
	TRY(kv_cfg_dbl(n, "weight", 1, 1e-9, 1e9, &t->weight, d));
	TRY(kv_cfg_dbl(n, "priority", 0, -1e6, 1e6, &prio, d));
	t->priority = (int)prio;
	TRY(read_request_priority(n, &t->request_priority, d));
	TRY(kv_cfg_str(n, "model", "", t->model, sizeof(t->model), d)); /* checked in read_groups */
	if (!kv_cfg_get(n, "lengths"))
		return 0;
	t->has_lengths = 1;
	return read_lengths(doc, kv_cfg_get(n, "lengths"), &t->lengths, d);
}

static int read_tenants(struct kv_cfg_doc *doc, struct kv_cfg_node *w, struct kv_source_spec *s,
			struct kv_diag *d)
{
	struct kv_cfg_node *n = kv_cfg_get(w, "tenants"), *it;
	uint32_t i = 0;

	if (!n) {
		s->n_tenants = 1;
		snprintf(s->tenants[0].name, sizeof(s->tenants[0].name), "default");
		s->tenants[0].share = 1;
		s->tenants[0].weight = 1;
		return 0;
	}
	TRY(kv_cfg_expect_seq(n, d));
	if (n->n_children == 0 || n->n_children > KV_MAX_TENANTS)
		return kv_cfg_error(n, d, "%zu tenants: expected 1 to %d", n->n_children,
				    KV_MAX_TENANTS);
	for (it = n->child; it; it = it->next, i++)
		TRY(read_tenant(doc, it, s, i, d));
	s->n_tenants = i;
	return 0;
}

static int read_workload(struct kv_cfg_doc *doc, struct kv_sim_config *c, struct kv_diag *d)
{
	static const char *const keys[] = { "requests", "duration", "oversize", "max_context",
					    "arrival", "lengths", "tenants", "sessions", NULL };
	static const char *const oversize[] = { "error", "reject", "clip", NULL };
	struct kv_cfg_node *w = kv_cfg_get(doc->root, "workload");
	struct kv_source_spec *s = &c->source;
	int i;

	if (!w)
		return kv_diag_set(d, KV_EINVAL, doc->path, 0, 0, "workload",
				   "missing section: expected a `workload:` mapping with arrival and lengths");
	TRY(kv_cfg_expect_map(w, d));
	TRY(kv_cfg_check_keys(w, keys, d));
	TRY(kv_cfg_u64(w, "requests", 0, 0, 1ULL << 40, &s->requests, d));
	TRY(kv_cfg_ns(w, "duration", 0, 0, 1000ULL * 86400 * KV_NS_PER_S, &s->duration_ns, d));
	TRY(kv_cfg_enum(w, "oversize", oversize, 0, &i, d));
	c->oversize = (enum kv_oversize)i;
	TRY(kv_cfg_u64(w, "max_context", 0, 0, c->model.max_ctx_tokens, &c->max_context_tokens, d));
	TRY(read_arrival(doc, w, s, d));
	if (kv_cfg_get(w, "lengths")) {
		s->lengths_set = 1;
		TRY(read_lengths(doc, kv_cfg_get(w, "lengths"), &s->lengths, d));
	} else if (s->arrival != KV_ARRIVAL_TRACE) {
		TRY(read_lengths(doc, NULL, &s->lengths, d));
	}
	TRY(read_tenants(doc, w, s, d));
	if (kv_cfg_get(w, "sessions") && s->max_concurrency)
		return kv_cfg_error(kv_cfg_get(w, "sessions"), d,
				    "sessions under a concurrency limit: expected one of the two (a session is a closed loop of its own; workload.arrival.max_concurrency and process closed pace lone requests)");
	if (kv_cfg_get(w, "sessions")) /* multi-turn sessions: each arrival starts one */
		TRY(kv__workload_sessions(kv_cfg_get(w, "sessions"), &c->sessions, d));
	TRY(kv__workload_chains(kv_cfg_get(w, "arrival"), s->arrival == KV_ARRIVAL_TRACE, &c->sessions, d));
	if (!s->requests && !s->duration_ns && s->arrival != KV_ARRIVAL_TRACE)
		return kv_cfg_error(w, d, "no end: expected `requests:` or `duration:` (or a timestamped trace)");
	if (!s->requests && (s->arrival == KV_ARRIVAL_CLOSED || isinf(s->rate_per_s)))
		return kv_cfg_error(w, d, "no end: every request is due at 0 (%s): expected `requests:`",
				    s->arrival == KV_ARRIVAL_CLOSED ? "process closed" : "rate inf");
	return 0;
}

static int read_outputs(struct kv_cfg_doc *doc, struct kv_workload *wl, struct kv_diag *d)
{
	static const char *const keys[] = { "dir", "sample_interval", "requests", "chart", "timeline",
					    NULL };
	struct kv_cfg_node *n = kv_cfg_get(doc->root, "outputs");
	char rel[1024];

	TRY(kv_cfg_expect_map(n, d));
	TRY(kv_cfg_check_keys(n, keys, d));
	TRY(kv_cfg_ns(n, "sample_interval", KV_NS_PER_S, 0, 86400 * KV_NS_PER_S,
		      &wl->cfg.sample_interval_ns, d));
	TRY(kv_cfg_bool(n, "requests", 1, &wl->requests_csv, d));
	TRY(kv_cfg_bool(n, "chart", 1, &wl->chart, d));
	TRY(kv_cfg_bool(n, "timeline", 0, &wl->timeline, d));
	if (!kv_cfg_get(n, "dir"))
		return 0;
	TRY(kv_cfg_str(n, "dir", "", rel, sizeof(rel), d));
	return resolve_path(doc, kv_cfg_get(n, "dir"), rel, wl->out_dir, sizeof(wl->out_dir), d);
}

#define MAX_SAMPLES ((double)KV_MAX_SAMPLES) /* timeseries rows a run may take (sim/source.h) */

/*
 * Samples are taken every sample_interval for as long as requests arrive
 * or run, idle stretches included: a generated stream spans about requests
 * / rate seconds (or its duration).  Beyond MAX_SAMPLES the run would spend
 * hours writing rows of an idle cluster (rate 1e-9 with a 1 s interval: 1e9
 * rows per request), so that is an input error naming the interval (or the
 * rate, when the interval is the default).  A trace's span is known only
 * once read: its rows are checked as they are read, against a horizon of
 * KV_MAX_SAMPLES intervals set here (sim/source.h).
 */
static int check_samples(struct kv_cfg_doc *doc, struct kv_workload *w,
			 struct kv_diag *d)
{
	const struct kv_source_spec *s = &w->cfg.source;
	struct kv_cfg_node *at = kv_cfg_get(kv_cfg_get(doc->root, "outputs"), "sample_interval");
	double span_s, interval_s = (double)w->cfg.sample_interval_ns * 1e-9, n;

	if (w->cfg.sample_interval_ns && s->arrival == KV_ARRIVAL_TRACE)
		w->cfg.source.horizon_ns = w->cfg.sample_interval_ns >
						   (KV_NS_NEVER - 1) / KV_MAX_SAMPLES ?
					   KV_NS_NEVER - 1 :
					   w->cfg.sample_interval_ns * KV_MAX_SAMPLES;
	if (!w->cfg.sample_interval_ns || s->arrival == KV_ARRIVAL_TRACE ||
	    s->arrival == KV_ARRIVAL_CLOSED)
		return 0; /* (a closed loop's span is the service's: sampled while requests live) */
	span_s = s->requests ? (double)s->requests /
				       (s->arrival == KV_ARRIVAL_DIURNAL ? /* its mean rate */
					s->rate_per_s * (1 + s->trough) / 2 : s->rate_per_s) :
			       INFINITY;
	if (s->duration_ns)
		span_s = fmin(span_s, (double)s->duration_ns * 1e-9);
	n = span_s / interval_s;
	if (n <= MAX_SAMPLES)
		return 0;
	if (!at)
		at = kv_cfg_get(kv_cfg_get(kv_cfg_get(doc->root, "workload"), "arrival"), "rate");
	if (!at) /* both defaulted: the workload section, which exists */
		at = kv_cfg_get(doc->root, "workload");
	return kv_cfg_error(at, d,
			    "bad value %g s: arrivals spanning about %.3g s (workload.requests / workload.arrival.rate) give %.3g samples: expected at most %.0e (raise outputs.sample_interval, or 0 for none)",
			    interval_s, span_s, n, MAX_SAMPLES);
}

static int read_fairness(struct kv_cfg_node *root, struct kv_fairness_cfg *f, struct kv_diag *d)
{
	static const char *const keys[] = { "input_weight", "output_weight", "short_tokens",
					    "long_tokens", "mem_growth_max", NULL };
	struct kv_cfg_node *n = kv_cfg_get(root, "fairness");

	TRY(kv_cfg_expect_map(n, d));
	TRY(kv_cfg_check_keys(n, keys, d));
	TRY(kv_cfg_dbl(n, "input_weight", 1, 0, 1e6, &f->input_weight, d));
	TRY(kv_cfg_dbl(n, "output_weight", 2, 0, 1e6, &f->output_weight, d));
	TRY(kv_cfg_u64(n, "short_tokens", 0, 0, 1ULL << 40, &f->short_tokens, d));
	return kv_cfg_u64(n, "long_tokens", 0, 0, 1ULL << 40, &f->long_tokens, d);
}

/* --- slo: and health: ---------------------------------------------------------- */

/*
 * What an SLO key names: 0 a per-request limit ("ttft", "tpot", "itl",
 * "e2e"), 1 a percentile ("ttft_p99", "e2e_p50", "tpot_p99.9": *q in
 * (0, 1)), 3 a percentile outside (0, 100) once read as a double
 * ("ttft_p100", "ttft_p99.99999999999999999"), 2 a metric with any other
 * suffix ("ttft_", "ttft_x"), -1 none.
 * *metric is set for 0, 1 and 2; "itl" is another name for "tpot".
 */
static int slo_parse(const char *key, int *metric, double *q)
{
	static const char *const names[] = { "ttft", "tpot", "itl", "e2e" };
	static const int metrics[] = { KV_SLO_TTFT, KV_SLO_TPOT, KV_SLO_TPOT, KV_SLO_E2E };
	const char *at, *p;
	char *end;
	size_t i, n;

	*metric = 0;
	*q = 0;
	for (i = 0; i < KV_ARRAY_LEN(names); i++) {
		n = strlen(names[i]);
		if (strncmp(key, names[i], n) || (key[n] && key[n] != '_'))
			continue;
		*metric = metrics[i];
		if (!key[n])
			return 0;
		at = key + n + 1;
		if (*at != 'p') /* "ttft_" or "ttft_x": *at may be the terminator */
			return 2;
		*q = strtod(at + 1, &end) / 100;
		for (p = at + 1; *p && (isdigit((unsigned char)*p) || *p == '.'); p++)
			;
		if (end != p || *p)
			return 2;
		return *q > 0 && *q < 1 ? 1 : 3;
	}
	return -1;
}

/*
 * Two keys of one SLO mapping that set the same limit ("tpot" and "itl",
 * "ttft_p99" and "ttft_p99.0") are an error naming both, as a duplicate
 * key is: otherwise the later would silently win.  Checks c against the
 * keys before it in m.
 */
static int slo_check_alias(struct kv_cfg_node *m, struct kv_cfg_node *c, struct kv_diag *d)
{
	struct kv_cfg_node *p;
	int mc, mp, kc;
	double qc, qp;
	char where[160];

	kc = slo_parse(c->key, &mc, &qc);
	if (kc != 0 && kc != 1)
		return 0;
	for (p = m->child; p && p != c; p = p->next) {
		if (slo_parse(p->key, &mp, &qp) != kc || mp != mc || qp != qc)
			continue;
		if (strcmp(p->file, c->file))
			snprintf(where, sizeof(where), "%s:%lu", p->file, p->key_line);
		else
			snprintf(where, sizeof(where), "line %lu", p->key_line);
		return kv_cfg_error(c, d, "'%s' and '%s' (%s) both set the %s%s%s limit: "
				    "expected one of them%s", c->key, p->key, where,
				    kc ? strchr(p->key, '_') + 1 : "per-request", " ",
				    kv_slo_metric_names[mc],
				    !strncmp(c->key, "itl", 3) != !strncmp(p->key, "itl", 3) ?
					    " (itl is another name for tpot)" : "");
	}
	return 0;
}

/*
 * One SLO key of mapping m: "ttft", "tpot" (or "itl"), "e2e" set a
 * per-request limit in *l; "ttft_p99", "e2e_p50", "tpot_p99.9"... a
 * percentile SLO (only when pct is not NULL: the workload-wide section).
 */
static int read_slo_key(struct kv_cfg_node *m, struct kv_cfg_node *c, struct kv_slo_limits *l,
			struct kv_slo_cfg *pct, struct kv_diag *d)
{
	double q;
	int metric, kind = slo_parse(c->key, &metric, &q);

	c->used = 1;
	TRY(slo_check_alias(m, c, d));
	if (kind == 0)
		return kv_cfg_ns(m, c->key, 0, 1, UINT64_MAX, &l->max_ns[metric], d);
	if (kind > 0 && !pct)
		return kv_cfg_error(c, d, "'%s': a tenant's SLOs are per-request limits (ttft, "
				    "tpot, itl, e2e); percentile SLOs go in slo: itself", c->key);
	if (kind == 3)
		return kv_cfg_error(c, d, "'%s': the percentile is %s: expected one above 0 and "
				    "below 100", c->key,
				    q > 0 ? "100 or more (in double precision)" : "0");
	if (kind == 1) {
		if (pct->n_pct == KV_SLO_MAX_PCT)
			return kv_cfg_error(c, d, "more than %d percentile SLOs", KV_SLO_MAX_PCT);
		pct->pct[pct->n_pct].m = metric;
		pct->pct[pct->n_pct].q = q;
		snprintf(pct->pct[pct->n_pct].name, sizeof(pct->pct[0].name), "%s_%s_s",
			 kv_slo_metric_names[metric], strchr(c->key, '_') + 1);
		TRY(kv_cfg_ns(m, c->key, 0, 1, UINT64_MAX, &pct->pct[pct->n_pct].max_ns, d));
		pct->n_pct++;
		return 0;
	}
	return kv_diag_set(d, KV_EINVAL, c->file, c->key_line, c->key_col, c->key,
			   "unknown SLO '%s': expected ttft, tpot, itl or e2e (a per-request limit), "
			   "or one with a percentile such as ttft_p99 or e2e_p50, or tenants", c->key);
}

/* slo.tenants: {NAME: {ttft: ..., ...}}: the named tenant's limits override the section's. */
static int read_slo_tenants(struct kv_cfg_node *n, struct kv_sim_config *c, struct kv_slo_cfg *slo,
			    struct kv_diag *d)
{
	const struct kv_source_spec *src = &c->source;
	struct kv_cfg_node *t, *k;
	uint32_t i;

	TRY(kv_cfg_expect_map(n, d));
	for (t = n ? n->child : NULL; t; t = t->next) {
		t->used = 1;
		for (i = 0; i < src->n_tenants && strcmp(src->tenants[i].name, t->key); i++)
			;
		if (i == src->n_tenants)
			return kv_diag_set(d, KV_EINVAL, t->file, t->key_line, t->key_col, t->key,
					   "unknown tenant '%s': expected a name of workload.tenants",
					   t->key);
		TRY(kv_cfg_expect_map(t, d));
		for (k = t->type == KV_CFG_MAP ? t->child : NULL; k; k = k->next)
			TRY(read_slo_key(t, k, &slo->tenant[i], NULL, d));
	}
	return 0;
}

/* The workload's `slo:` (after the tenants, which it may name). */
static int read_slo(struct kv_cfg_node *root, struct kv_sim_config *c, struct kv_slo_cfg *slo,
		    struct kv_diag *d)
{
	struct kv_cfg_node *n = kv_cfg_get(root, "slo"), *k;
	uint32_t i;

	memset(slo, 0, sizeof(*slo));
	TRY(kv_cfg_expect_map(n, d));
	if (!n || n->type != KV_CFG_MAP)
		return 0;
	slo->on = 1;
	for (k = n->child; k; k = k->next)
		if (strcmp(k->key, "tenants"))
			TRY(read_slo_key(n, k, &slo->all, slo, d));
	for (i = 0; i < KV_MAX_TENANTS; i++)
		slo->tenant[i] = slo->all;
	return read_slo_tenants(kv_cfg_get(n, "tenants"), c, slo, d);
}

/*
 * Default thresholds (up, down) per policy (autoscale.h): kvsim's choices,
 * docs/cluster.md "Autoscaling": 4 waiting requests per replica up, 0.5
 * down; KV use 80% up, 40% down; SLO attainment 95% up, 99% down;
 * 16 requests in flight per replica up, 6 down.
 */
static const double as_def_up[KV_AS_POLICIES] = { 4, 0.8, 0.95, 16 };
static const double as_def_down[KV_AS_POLICIES] = { 0.5, 0.4, 0.99, 6 };

/* 1 when policy i's metric is a share (0..1): kv_util, slo. */
static int as_ratio(int i)
{
	return i == KV_AS_KV_UTIL || i == KV_AS_SLO;
}

/* The thresholds' order: up above down (queue, kv_util, concurrency), below it (slo). */
static int check_as_thresholds(struct kv_cfg_node *n, const struct kv_autoscale_cfg *a,
			       struct kv_diag *d)
{
	struct kv_cfg_node *at = kv_cfg_get(n, "down") ? kv_cfg_get(n, "down") : kv_cfg_get(n, "up");
	int slo = a->policy == KV_AS_SLO;

	if (slo ? a->up < a->down : a->up > a->down)
		return 0;
	return kv_cfg_error(at ? at : n, d,
			    "up %g, down %g: expected up %s down for policy %s (a band between them holds the replica count: hysteresis)",
			    a->up, a->down, slo ? "below" : "above", kv_as_policy_names[a->policy]);
}

/*
 * min, max and the initial count: the replicas key rep (cluster.replicas,
 * or a group's), default min; the config's replicas become max.
 */
static int read_as_counts(struct kv_cfg_node *rep, struct kv_cfg_node *n,
			  struct kv_sim_config *c, struct kv_diag *d)
{
	struct kv_autoscale_cfg *a = &c->autoscale;
	uint64_t lo, hi;

	TRY(kv_cfg_u64(n, "min", 1, 1, 65536, &lo, d));
	TRY(kv_cfg_u64(n, "max", lo, 1, 65536, &hi, d));
	if (hi < lo)
		return kv_cfg_error(kv_cfg_get(n, "max"), d, "%llu: expected at least min (%llu)",
				    (unsigned long long)hi, (unsigned long long)lo);
	a->min = (uint32_t)lo;
	a->max = (uint32_t)hi;
	a->initial = rep ? c->replicas : a->min;
	if (a->initial < a->min || a->initial > a->max)
		return kv_cfg_error(rep, d,
				    "%u: with autoscale, replicas is the count active at the start: expected %u..%u (autoscale.min..max)",
				    a->initial, a->min, a->max);
	c->replicas = a->max; /* the cluster holds max replicas, the rest off */
	return 0;
}

/*
 * An `autoscale:` mapping n (sim/autoscale.h) into c, rep the replicas key
 * it reads as the count active at the start: absent, off.
 */
static int read_autoscale_at(struct kv_cfg_node *n, struct kv_cfg_node *rep,
			     struct kv_sim_config *c, const struct kv_slo_cfg *slo,
			     struct kv_diag *d)
{
	static const char *const keys[] = { "min", "max", "policy", "up", "down", "step",
					    "interval", "window", "cooldown_up", "cooldown_down",
					    "load_bandwidth", "start_time", NULL };
	struct kv_autoscale_cfg *a = &c->autoscale;
	uint64_t u;
	int i;

	memset(a, 0, sizeof(*a));
	TRY(kv_cfg_expect_map(n, d));
	if (!n || n->type != KV_CFG_MAP)
		return 0;
	TRY(kv_cfg_check_keys(n, keys, d));
	a->on = 1;
	TRY(read_as_counts(rep, n, c, d));
	TRY(kv_cfg_enum(n, "policy", kv_as_policy_names, KV_AS_QUEUE, &i, d));
	a->policy = (enum kv_as_policy)i;
	TRY(kv_cfg_dbl(n, "up", as_def_up[i], 0, as_ratio(i) ? 1 : 1e9, &a->up, d));
	TRY(kv_cfg_dbl(n, "down", as_def_down[i], 0, as_ratio(i) ? 1 : 1e9, &a->down, d));
	TRY(check_as_thresholds(n, a, d));
	TRY(kv_cfg_u64(n, "step", 1, 1, 65536, &u, d));
	a->step = (uint32_t)u;
	TRY(kv_cfg_ns(n, "interval", KV_AS_DEF_INTERVAL_NS, KV_NS_PER_S / 1000, 86400 * KV_NS_PER_S,
		      &a->interval_ns, d));
	TRY(kv_cfg_ns(n, "window", KV_MAX(KV_AS_DEF_WINDOW_NS, a->interval_ns), a->interval_ns,
		      1000 * a->interval_ns, &a->window_ns, d));
	TRY(kv_cfg_ns(n, "cooldown_up", KV_AS_DEF_COOLDOWN_UP_NS, 0, 86400 * KV_NS_PER_S,
		      &a->cooldown_up_ns, d));
	TRY(kv_cfg_ns(n, "cooldown_down", KV_AS_DEF_COOLDOWN_DOWN_NS, 0, 86400 * KV_NS_PER_S,
		      &a->cooldown_down_ns, d));
	TRY(kv_cfg_bytes(n, "load_bandwidth", (uint64_t)KV_AS_DEF_LOAD_BPS, 1000000,
			 10000000000000ULL, &u, d)); /* bytes per second */
	a->load_Bps = (double)u;
	TRY(kv_cfg_ns(n, "start_time", KV_AS_DEF_START_NS, 0, 86400 * KV_NS_PER_S, &a->start_ns, d));
	a->slo = slo->on ? slo->tenant : NULL; /* attainment reported with any policy */
	if (a->policy != KV_AS_SLO)
		return 0;
	for (i = 0; i < KV_SLO_METRICS; i++)
		if (slo->on && slo->all.max_ns[i])
			break;
	if (i == KV_SLO_METRICS) /* tenants' own limits alone are not enough to name here */
		return kv_cfg_error(kv_cfg_get(n, "policy"), d,
				    "slo: expected an slo: section with a per-request limit (ttft, tpot or e2e) for every request to attain");
	return 0;
}

/*
 * The top level's `autoscale:`: the single group's; with cluster.groups
 * each group has its own (cluster.groups[i].autoscale).
 */
static int read_autoscale(struct kv_cfg_node *root, struct kv_sim_config *c,
			  const struct kv_slo_cfg *slo, struct kv_diag *d)
{
	struct kv_cfg_node *cl = kv_cfg_get(root, "cluster"), *n = kv_cfg_get(root, "autoscale");

	if (n && kv_cfg_get(cl, "groups"))
		return kv_cfg_error(n, d,
				    "with cluster.groups: expected each group's own autoscale (cluster.groups[i].autoscale)");
	return read_autoscale_at(n, kv_cfg_get(cl, "replicas"), c, slo, d);
}

/* The health report's thresholds (`health:`); defaults in workload.h. */
static int read_health(struct kv_cfg_node *root, struct kv_health_cfg *h, struct kv_diag *d)
{
	static const char *const keys[] = { "hit_rate_min", "mem_util_min", "mem_util_max",
					    "fairness_min", "max_block", "tail_ratio_max",
					    "long_tokens", "mem_growth_max", NULL };
	struct kv_cfg_node *n = kv_cfg_get(root, "health");

	TRY(kv_cfg_expect_map(n, d));
	TRY(kv_cfg_check_keys(n, keys, d));
	TRY(kv_cfg_dbl(n, "hit_rate_min", 0.85, 0, 1, &h->hit_rate_min, d));
	TRY(kv_cfg_dbl(n, "mem_util_min", 0.60, 0, 1, &h->mem_util_min, d));
	TRY(kv_cfg_dbl(n, "mem_util_max", 0.80, 0, 1, &h->mem_util_max, d));
	if (h->mem_util_max < h->mem_util_min)
		return kv_cfg_error(kv_cfg_get(n, "mem_util_max"), d,
				    "bad value %g: expected at least mem_util_min (%g)",
				    h->mem_util_max, h->mem_util_min);
	TRY(kv_cfg_dbl(n, "fairness_min", 0.7, 0, 1, &h->fairness_min, d));
	TRY(kv_cfg_bytes(n, "max_block", 8 * KV_MiB, 1, 1ULL << 50, &h->max_block_bytes, d));
	TRY(kv_cfg_dbl(n, "tail_ratio_max", 5, 1, 1e9, &h->tail_ratio_max, d));
	TRY(kv_cfg_dbl(n, "mem_growth_max", 0.10, 0, 1, &h->mem_growth_max, d));
	return kv_cfg_u64(n, "long_tokens", 8192, 1, 1ULL << 40, &h->long_tokens, d);
}

/* --- replica groups ------------------------------------------------------------ */

/*
 * A group's error whose node was absent (an inherited key, a section the
 * group leaves to the top level: no line) is placed at the group's entry.
 */
static int at_group(int rc, struct kv_cfg_node *g, struct kv_diag *d)
{
	char path[sizeof(d->field)];

	if (!rc || d->line)
		return rc;
	snprintf(d->file, sizeof(d->file), "%s", g->file ? g->file : "");
	d->line = g->line;
	d->col = g->col;
	if (!d->field[0])
		snprintf(d->field, sizeof(d->field), "%s", kv_cfg_path(g, path, sizeof(path)));
	return rc;
}

/* The mapping that holds section key for group g: g when it has the key, else the top level. */
static struct kv_cfg_node *owner(struct kv_cfg_doc *doc, struct kv_cfg_node *g, const char *key)
{
	return kv_cfg_get(g, key) ? g : doc->root;
}

/* A group's name (default "g<i>"): one printable line, unique among the groups before it. */
static int read_group_name(struct kv_cfg_node *n, const struct kv_sim_config *groups, uint32_t i,
			   struct kv_sim_config *g, struct kv_diag *d)
{
	char def[16];
	uint32_t j;

	snprintf(def, sizeof(def), "g%u", i);
	TRY(kv_cfg_str(n, "name", def, g->group_name, sizeof(g->group_name), d));
	TRY(check_name(kv_cfg_get(n, "name"), "the group name", g->group_name, d));
	if (!g->group_name[0] || strchr(g->group_name, ','))
		return kv_cfg_error(kv_cfg_get(n, "name"), d,
				    "bad value '%s': expected a nonempty name without commas",
				    g->group_name);
	for (j = 0; j < i; j++)
		if (!strcmp(groups[j].group_name, g->group_name))
			return kv_cfg_error(kv_cfg_get(n, "name"), d,
					    "duplicate group name '%s': expected unique names",
					    g->group_name);
	return 0;
}

/*
 * A group's model, device and host: its own where given, else the top
 * level's.  A group naming a device but no host (and a top level naming
 * none) takes that device's default host, as the top level does.
 */
static int read_group_profiles(struct kv_cfg_doc *doc, struct kv_cfg_node *n,
			       struct kv_sim_config *g, struct kv_diag *d)
{
	if (kv_cfg_get(n, "model"))
		TRY(read_profile(doc, n, "model", "", g, d));
	if (kv_cfg_get(n, "device"))
		TRY(read_profile(doc, n, "device", "", g, d));
	if (kv_cfg_get(n, "host"))
		return read_profile(doc, n, "host", "", g, d);
	if (kv_cfg_get(n, "device") && !kv_cfg_get(doc->root, "host"))
		return read_profile(doc, n, "host",
				    g->device.host[0] ? g->device.host : "reference", g, d);
	return 0;
}

/*
 * A group's engine, scheduler and cache: its own section where given,
 * else the top level's, read again so the group owns its option blocks.
 */
static int read_group_plugins(struct kv_cfg_doc *doc, struct kv_cfg_node *n,
			      struct kv_sim_config *g, struct kv_diag *d)
{
	const struct kv_plugin *p;
	const char *def_engine = getenv("KVSIM_ENGINE");

	g->sched_opts = g->cache_opts = g->engine_opts = NULL;
	TRY(read_plugin(owner(doc, n, "scheduler"), KV_PLUGIN_SCHED, "fifo", &p, &g->sched_opts, d));
	g->sched = (const struct kv_sched_ops *)p;
	TRY(read_plugin(owner(doc, n, "cache"), KV_PLUGIN_CACHE, "full", &p, &g->cache_opts, d));
	g->cache = (const struct kv_cache_ops *)p;
	if (!def_engine || !*def_engine)
		def_engine = "vllm";
	TRY(read_plugin(owner(doc, n, "engine"), KV_PLUGIN_ENGINE, def_engine, &p, &g->engine_opts, d));
	g->engine = (const struct kv_engine_ops *)p;
	return 0;
}

/* A group's `weight:` per replica: a number > 0 (default 1), or auto (engine.h KV_GROUP_WEIGHT_AUTO). */
static int read_group_weight(struct kv_cfg_node *n, struct kv_sim_config *g, struct kv_diag *d)
{
	struct kv_cfg_node *v = kv_cfg_get(n, "weight");
	size_t len;
	int rc;

	if (v && v->type == KV_CFG_SCALAR && v->value && !strcmp(v->value, "auto")) {
		g->group_weight = KV_GROUP_WEIGHT_AUTO;
		return 0;
	}
	rc = kv_cfg_dbl(n, "weight", 1, 1e-6, 1e6, &g->group_weight, d);
	len = strlen(d->msg);
	if (rc && len + 64 < sizeof(d->msg))
		snprintf(d->msg + len, sizeof(d->msg) - len, " (or auto: the replica's saturated capacity)");
	return rc;
}

/*
 * One entry of cluster.groups into g: the top level's configuration c,
 * with the entry's keys in place of c's (a section it names replaces the
 * top level's whole; docs/cluster.md "Replica groups").
 */
static int read_group(struct kv_cfg_doc *doc, struct kv_cfg_node *n, const struct kv_sim_config *c,
		      struct kv_sim_config *groups, uint32_t i, const struct kv_slo_cfg *slo,
		      struct kv_diag *d)
{
	static const char *const keys[] = { "name", "replicas", "role", "model", "device", "host",
					    "tensor_parallel", "pipeline_parallel",
					    "expert_parallel", "data_parallel", "engine", "scheduler",
					    "cache", "memory", "batching", "kv_transfer",
					    "autoscale", "weight", "cost_per_gpu_hour", NULL };
	struct kv_sim_config *g = &groups[i];
	uint64_t u;
	int role;

	TRY(kv_cfg_expect_map(n, d));
	TRY(kv_cfg_check_keys(n, keys, d));
	*g = *c;
	g->groups = NULL;
	g->n_groups = 0;
	g->sched_opts = g->cache_opts = g->engine_opts = NULL; /* owned by c until read below */
	TRY(read_group_name(n, groups, i, g, d));
	TRY(kv_cfg_u64(n, "replicas", 1, 0, 65536, &u, d)); /* 0: a fleet a sweep leaves out */
	g->replicas = (uint32_t)u;
	TRY(kv_cfg_enum(n, "role", kv_group_role_names, KV_ROLE_MIXED, &role, d));
	g->role = (enum kv_group_role)role;
	TRY(kv_workload_kv_transfer(n, &g->xfer, d)); /* the cluster's, then the group's keys */
	TRY(read_group_profiles(doc, n, g, d));
	TRY(at_group(read_parallel(n, g, d), n, d));
	TRY(at_group(read_memory(owner(doc, n, "memory"), g, d), n, d));
	TRY(at_group(read_batching(owner(doc, n, "batching"), g, d), n, d));
	TRY(at_group(check_budget(owner(doc, n, "memory"), g, d), n, d));
	TRY(read_group_plugins(doc, n, g, d));
	/* its own autoscaling: replicas is then the count active at the start */
	TRY(read_autoscale_at(kv_cfg_get(n, "autoscale"), kv_cfg_get(n, "replicas"), g, slo, d));
	TRY(read_group_weight(n, g, d));
	TRY(kv_cfg_dbl(n, "cost_per_gpu_hour", g->device.cost_per_gpu_hour, 0, 1e4,
		       &g->device.cost_per_gpu_hour, d));
	if (g->max_context_tokens > g->model.max_ctx_tokens)
		return kv_cfg_error(kv_cfg_get(kv_cfg_get(doc->root, "workload"), "max_context"), d,
				    "%llu tokens, beyond group '%s''s model %s (context %u): expected "
				    "at most %u", (unsigned long long)g->max_context_tokens,
				    g->group_name, g->model.name, g->model.max_ctx_tokens,
				    g->model.max_ctx_tokens);
	return 0;
}

/* Whether some group of c with replicas (or c itself, with none) serves the model named m. */
static int serves(const struct kv_sim_config *c, const char *m)
{
	uint32_t i;

	for (i = 0; i < c->n_groups; i++)
		if (c->groups[i].replicas && !strcmp(c->groups[i].model.name, m))
			return 1;
	return !c->n_groups && !strcmp(c->model.name, m);
}

/*
 * Each tenant's model (its `model:`, else the first group's) is one a
 * group with replicas serves (engine.h route classes): an error at the
 * tenant's `model:`, or at the tenant (the workload with no tenants) when
 * it asks for the default.
 */
static int check_tenant_models(struct kv_cfg_doc *doc, const struct kv_sim_config *c,
			       struct kv_diag *d)
{
	struct kv_cfg_node *w = kv_cfg_get(doc->root, "workload"), *t = kv_cfg_get(w, "tenants");
	const struct kv_source_spec *src = &c->source;
	const char *def = c->n_groups ? c->groups[0].model.name : c->model.name, *m;
	char names[512] = "";
	size_t off = 0;
	uint32_t i;

	for (i = 0; i < KV_MAX(c->n_groups, 1u) && off < sizeof(names); i++)
		if (!c->n_groups || (c->groups[i].replicas && !strstr(names, c->groups[i].model.name)))
			off += (size_t)snprintf(names + off, sizeof(names) - off, "%s%s",
						off ? ", " : "",
						c->n_groups ? c->groups[i].model.name : c->model.name);
	t = t && t->type == KV_CFG_SEQ ? t->child : NULL;
	for (i = 0; i < KV_MAX(src->n_tenants, 1u); i++, t = t ? t->next : NULL) {
		m = i < src->n_tenants && src->tenants[i].model[0] ? src->tenants[i].model : def;
		if (serves(c, m))
			continue;
		return kv_cfg_error(kv_cfg_get(t, "model") ? kv_cfg_get(t, "model") : t ? t : w, d,
				    "model '%s'%s, which no replica group with replicas serves: "
				    "expected one of: %s", m,
				    m == def ? " (the first group's, asked for by a tenant naming none)" : "",
				    names);
	}
	return 0;
}

/*
 * cluster.groups: a nonempty sequence of groups, read once the top level
 * is (a group starts as a copy of it).  The top-level cluster.replicas is
 * then the groups' sum.
 */
static int read_groups(struct kv_cfg_doc *doc, struct kv_workload *w, struct kv_diag *d)
{
	struct kv_cfg_node *n = kv_cfg_get(kv_cfg_get(doc->root, "cluster"), "groups"), *it;
	struct kv_sim_config *c = &w->cfg, *groups;
	uint32_t i = 0;

	if (!n)
		return check_tenant_models(doc, c, d);
	TRY(kv_cfg_expect_seq(n, d));
	if (n->n_children == 0 || n->n_children > KV_MAX_GROUPS)
		return kv_cfg_error(n, d, "%zu groups: expected 1 to %d", n->n_children, KV_MAX_GROUPS);
	groups = kv_xcalloc(n->n_children, sizeof(*groups));
	c->groups = groups;
	c->replicas = 0;
	for (it = n->child; it; it = it->next, i++) {
		c->n_groups = i + 1; /* those read so far, this one too: kv_workload_release frees them */
		TRY(read_group(doc, it, c, groups, i, &w->slo, d));
		c->replicas += groups[i].replicas;
	}
	c->n_groups = i;
	TRY(kv_workload_check_roles(n, c, d));
	if (c->replicas > 65536 || !c->replicas)
		return kv_cfg_error(n, d, "%u replicas over the groups: expected 1 to 65536",
				    c->replicas);
	return check_tenant_models(doc, c, d);
}

static void default_name(struct kv_workload *w, const char *path)
{
	char tmp[1024], *base, *dot;

	snprintf(tmp, sizeof(tmp), "%s", path);
	base = basename(tmp);
	dot = strrchr(base, '.');
	if (dot && dot != base)
		*dot = 0;
	snprintf(w->name, sizeof(w->name), "%s", base);
}

static int read_top(struct kv_cfg_doc *doc, struct kv_workload *w, int has_seed, uint64_t seed,
		    struct kv_diag *d)
{
	static const char *const keys[] = { "name", "description", "model", "device", "host", "seed",
					    "cluster", "memory", "batching", "scheduler",
					    "cache", "engine", "workload", "fairness", "outputs",
					    "check_pool", "slo", "health", "exact_steps",
					    "autoscale", NULL };
	struct kv_sim_config *c = &w->cfg;
	const struct kv_plugin *sched, *cache, *engine;
	const char *def_engine;
	char stem[sizeof(w->name)];

	TRY(kv_cfg_check_keys(doc->root, keys, d));
	memcpy(stem, w->name, sizeof(stem)); /* the default must not alias the output */
	TRY(kv_cfg_str(doc->root, "name", stem, w->name, sizeof(w->name), d));
	TRY(check_name(kv_cfg_get(doc->root, "name"), "the workload name", w->name, d));
	kv_cfg_get(doc->root, "description"); /* free text: read, not used */
	TRY(kv_cfg_u64(doc->root, "seed", 1, 0, UINT64_MAX, &c->seed, d));
	if (has_seed)
		c->seed = seed;
	TRY(kv_cfg_bool(doc->root, "check_pool", 0, &c->check_pool, d));
	TRY(kv_cfg_bool(doc->root, "exact_steps", 0, &c->exact_steps, d));
	TRY(read_profiles(doc, c, d));
	TRY(read_cluster(doc->root, c, d));
	TRY(read_memory(doc->root, c, d));
	TRY(read_batching(doc->root, c, d));
	TRY(check_budget(doc->root, c, d));
	TRY(read_plugin(doc->root, KV_PLUGIN_SCHED, "fifo", &sched, &c->sched_opts, d));
	c->sched = (const struct kv_sched_ops *)sched;
	TRY(read_plugin(doc->root, KV_PLUGIN_CACHE, "full", &cache, &c->cache_opts, d));
	c->cache = (const struct kv_cache_ops *)cache;
	/*
	 * vLLM V1 unless the workload or $KVSIM_ENGINE says otherwise
	 * (docs/engines.md: tests/golden.sh sets vllm-v0 for the sweep bases,
	 * whose bytes key the sweeps' digests and so cannot name an engine)
	 */
	def_engine = getenv("KVSIM_ENGINE");
	if (!def_engine || !*def_engine)
		def_engine = "vllm";
	TRY(read_plugin(doc->root, KV_PLUGIN_ENGINE, def_engine, &engine, &c->engine_opts, d));
	c->engine = (const struct kv_engine_ops *)engine;
	TRY(read_workload(doc, c, d));
	TRY(read_fairness(doc->root, &c->fairness, d));
	TRY(read_slo(doc->root, c, &w->slo, d));
	TRY(read_autoscale(doc->root, c, &w->slo, d));
	if (c->autoscale.on && c->pd_prefill)
		return kv_cfg_error(kv_cfg_get(doc->root, "autoscale"), d,
				    "autoscaling with cluster.prefill_replicas: expected cluster.groups "
				    "with role: prefill and role: decode, each with its own autoscale "
				    "(one group split by prefill_replicas has one replica count)");
	TRY(read_health(doc->root, &w->health, d));
	TRY(read_outputs(doc, w, d));
	TRY(check_samples(doc, w, d));
	return read_groups(doc, w, d);
}

/* Each group's "scheduler: fifo" is short for {name: fifo}, as at the top level. */
static void wrap_groups(struct kv_cfg_doc *doc)
{
	struct kv_cfg_node *n = kv_cfg_get(doc->root, "cluster"), *g;

	n = n && n->type == KV_CFG_MAP ? kv_cfg_get(n, "groups") : NULL;
	for (g = n && n->type == KV_CFG_SEQ ? n->child : NULL; g; g = g->next) {
		if (g->type != KV_CFG_MAP)
			continue;
		kv_cfg_wrap_scalar(g, "scheduler", "name");
		kv_cfg_wrap_scalar(g, "cache", "name");
		kv_cfg_wrap_scalar(g, "engine", "name");
	}
}

/*
 * Reads the loaded doc (freed here) into w: the scalar shorthands wrapped,
 * the overrides applied, then every section.  Returns 0 or a code with d
 * filled.
 */
static int load_doc(struct kv_workload *w, struct kv_cfg_doc *doc, char *const *sets,
		    size_t n_sets, int has_seed, uint64_t seed, struct kv_diag *d)
{
	size_t i;
	int rc = 0;

	/* "scheduler: fifo" is short for {name: fifo}: let --set reach its options */
	kv_cfg_wrap_scalar(doc->root, "scheduler", "name");
	kv_cfg_wrap_scalar(doc->root, "cache", "name");
	kv_cfg_wrap_scalar(doc->root, "engine", "name");
	wrap_groups(doc);
	for (i = 0; i < n_sets && !rc; i++)
		rc = kv_cfg_set(doc, sets[i], d);
	wrap_groups(doc); /* groups a --set added */
	if (!rc)
		rc = read_top(doc, w, has_seed, seed, d);
	kv_cfg_free(doc);
	return rc;
}

/* Zeroes w and names it after path (the default `name:`). */
static void workload_init(struct kv_workload *w, const char *path)
{
	memset(w, 0, sizeof(*w));
	snprintf(w->path, sizeof(w->path), "%s", path);
	default_name(w, path);
}

int kv_workload_load(struct kv_workload *w, const char *path, char *const *sets, size_t n_sets,
		     int has_seed, uint64_t seed, struct kv_diag *d)
{
	struct kv_cfg_doc doc;
	int rc;

	workload_init(w, path);
	if (strlen(path) >= sizeof(w->path)) /* w->path names it in messages and manifests */
		return kv_diag_set(d, KV_EINVAL, "", 0, 0, "",
				   "workload path of %zu bytes is too long: expected at most %zu bytes",
				   strlen(path), sizeof(w->path) - 1);
	rc = kv_cfg_load(&doc, path, d);
	if (rc)
		return rc;
	return load_doc(w, &doc, sets, n_sets, has_seed, seed, d);
}

int kv_workload_load_mem(struct kv_workload *w, const char *name, const char *text, size_t len,
			 char *const *sets, size_t n_sets, int has_seed, uint64_t seed,
			 struct kv_diag *d)
{
	struct kv_cfg_doc doc;
	int rc;

	workload_init(w, name);
	rc = kv_cfg_load_mem(&doc, name, text, len, d);
	if (rc)
		return rc;
	return load_doc(w, &doc, sets, n_sets, has_seed, seed, d);
}

void kv_workload_release(struct kv_workload *w)
{
	struct kv_sim_config *g = (struct kv_sim_config *)w->cfg.groups;
	uint32_t i;

	for (i = 0; g && i < w->cfg.n_groups; i++) {
		free(g[i].sched_opts);
		free(g[i].cache_opts);
		free(g[i].engine_opts);
	}
	free(g);
	w->cfg.groups = NULL;
	w->cfg.n_groups = 0;
	free(w->cfg.sched_opts);
	free(w->cfg.cache_opts);
	free(w->cfg.engine_opts);
	free(w->cfg.router_opts);
	w->cfg.sched_opts = w->cfg.cache_opts = w->cfg.engine_opts = w->cfg.router_opts = NULL;
}
