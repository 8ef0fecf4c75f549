/*
 * cmd_list.c -- `kvsim list`: every scheduler, cache model, router, engine, device
 * and model, with a one-line description and the options (name, default,
 * units).  Printed from the registries and option tables themselves.
 */
#include "commands.h"
#include "opts.h"
#include "lib/cfg.h"
#include "lib/metric_doc.h"
#include "lib/profile_load.h"
#include "lib/workload_sessions.h"

#include "../sim/engine.h"
#include "../sim/moegemm.h"
#include "../sim/uncert.h"

#include <ctype.h>
#include <math.h>
#include <string.h>

/*
 * A duration's default in the largest unit that shows it whole ("30 s",
 * "250 ms"), and that unit in *unit: the units column then matches the
 * default shown (a YAML value takes any unit suffix: 30s, 250ms).
 */
static const char *duration_str(double ns, char *buf, size_t len, const char **unit)
{
	static const struct {
		double scale;
		const char *name;
	} u[] = { { 1e9, "s" }, { 1e6, "ms" }, { 1e3, "us" }, { 1, "ns" } };
	size_t i;

	for (i = 0; i + 1 < KV_ARRAY_LEN(u) && !(ns >= u[i].scale && fmod(ns, u[i].scale) == 0); i++)
		;
	if (ns == 0)
		i = 0;
	*unit = u[i].name;
	snprintf(buf, len, "%g %s", ns / u[i].scale, u[i].name);
	return buf;
}

static void print_options(const struct kv_option *o)
{
	char def[64];

	for (; o && o->name; o++) {
		const char *unit = o->units ? o->units : "";
		const char *dflt = o->type == KV_OPT_NS ? duration_str(o->def, def, sizeof(def), &unit) :
				   kv_option_default_str(o, def, sizeof(def));

		fprintf(stdout, "      %-20s %-9s default %-12s %-8s %s", o->name,
			kv_option_type_name(o->type), dflt, unit, o->help);
		if (o->type == KV_OPT_ENUM) {
			const char *const *n;

			fputs(" (", stdout);
			for (n = o->names; *n; n++)
				fprintf(stdout, "%s%s", n == o->names ? "" : "|", *n);
			fputs(")", stdout);
		}
		fputc('\n', stdout);
	}
}

/*
 * An engine's versions (engine.version) with the host model's mode and
 * default coefficients on the reference CPU, each the source
 * docs/host-model.md "Defaults" cites.
 */
static void print_versions(const struct kv_host_version *v)
{
	int i;

	for (; v && v->name; v++) {
		if (!v->on) {
			printf("      version %-12s no host model (the GPU model alone)\n", v->name);
			continue;
		}
		printf("      version %-12s %s%s, CUDA graphs up to %u;", v->name, kv_host_mode_name(v->mode),
		       v->output_async ? " (output processing overlapped)" : "", v->graph_max);
		for (i = 0; i < KV_HOST_NCOEF; i++)
			printf(" %s %g us", kv_host_coef_key(i), v->coef[i] / 1e3);
		printf(" (reference CPU; %s)\n", v->source ? v->source : "docs/host-model.md, Defaults");
	}
}

/* Every plugin of kind k with its description and options. */
static void list_plugins(enum kv_plugin_kind k)
{
	const struct kv_plugin *p;
	size_t i;

	printf("%s:\n", kv_plugin_kind_title(k));
	for (i = 0; (p = kv_plugin_at(k, i)); i++) {
		printf("  %-26s %s\n", p->name, p->desc);
		print_options(p->options);
		if (k == KV_PLUGIN_ENGINE)
			print_versions(((const struct kv_engine_ops *)(const void *)p)->versions);
	}
}

/* The interconnect_busbw_by_gpus entries, " (2 GPUs 66, 4 GPUs 200 GB/s)"; nothing without. */
static void show_busbw_table(const struct kv_device *dev)
{
	const char *sep = " (";
	int n;

	for (n = 2; n <= KV_LINK_MAX_RANKS; n++) {
		if (dev->link_busbw_n_Bps[n] > 0) {
			printf("%s%d GPUs %.0f", sep, n, dev->link_busbw_n_Bps[n] / 1e9);
			sep = ", ";
		}
	}
	if (sep[0] == ',')
		printf(" GB/s)");
}

/* The end of a device's line: its coefficient intervals (its `uncertainty:` block or the A100 fit's). */
static void show_uncertainty(const struct kv_device *dev)
{
	size_t i;
	int n = 0;

	for (i = 0; i < kv_unc_n; i++) {
		if (dev->unc.rel_sd[i] <= 0 && dev->unc.abs_sd_ns[i] <= 0)
			continue;
		printf("%s%s", n++ ? ", " : "; sd ", kv_unc_coefs[i].name);
		if (dev->unc.rel_sd[i] > 0)
			printf(" %.1f%%", 100 * dev->unc.rel_sd[i]);
		if (dev->unc.abs_sd_ns[i] > 0)
			printf(" %.3g us", dev->unc.abs_sd_ns[i] / 1e3);
	}
	printf("\n");
}

static void show_device(const char *name, const char *path, void *arg)
{
	struct kv_device dev;
	struct kv_diag d;

	(void)arg;
	if (kv_profile_load_device(path, &dev, &d)) {
		kv_diag_print(&d, stdout);
		return;
	}
	printf("  %-26s %.0f GB, %.0f GB/s, %.0f dense fp16 TFLOP/s, host link %.0f GB/s; eff_bw %.2f, eff_flops %.2f, overhead %.2f ms, alpha %.2f; link %s %.0f GB/s",
	       name, (double)dev.mem_bytes / 1e9, dev.mem_bw_Bps / 1e9, dev.flops / 1e12,
	       dev.host_link_Bps / 1e9, dev.eff_bw, dev.eff_flops, (double)dev.overhead_ns / 1e6,
	       dev.alpha, kv_link_name(dev.link_type),
	       (dev.link_type == KV_LINK_DATASHEET ? dev.interconnect_Bps : dev.link_busbw_Bps) / 1e9);
	if (dev.cost_per_gpu_hour > 0) /* the list price its source cites (docs/cluster.md) */
		printf("; $%.4g per GPU-hour", dev.cost_per_gpu_hour);
	else /* its source says why: cost columns stay empty unless a group gives one */
		printf("; no list price (set cluster.groups[i].cost_per_gpu_hour)");
	show_busbw_table(&dev);
	show_uncertainty(&dev);
}

/* A host profile: its speed and, coefficient by coefficient, where the value comes from. */
static void show_host(const char *name, const char *path, void *arg)
{
	struct kv_host_profile h;
	struct kv_diag d;
	int i;

	(void)arg;
	if (kv_profile_load_host(path, &h, &d)) {
		kv_diag_print(&d, stdout);
		return;
	}
	printf("  %-26s cpu_speed %.2f x the reference CPU\n", name, h.cpu_speed);
	for (i = 0; i < KV_HOST_NCOEF; i++) {
		if (h.set >> i & 1)
			printf("    %-12s %.0f ns (measured: this profile)\n", kv_host_coef_key(i), h.coef[i]);
		else
			printf("    %-12s the engine version's default / %.2f (docs/engines.md, Versions)\n",
			       kv_host_coef_key(i), h.cpu_speed);
	}
}

/*
 * A profile's `source` text (where its datasheet figures and coefficients come
 * from), its whitespace runs collapsed to one space, under its name.
 */
static void show_source(const char *name, const char *path, void *arg)
{
	struct kv_cfg_doc doc;
	struct kv_diag d;
	struct kv_cfg_node *n;
	const char *s;
	int gap = 0;

	(void)arg;
	if (kv_cfg_load(&doc, path, &d)) {
		kv_diag_print(&d, stdout);
		return;
	}
	n = kv_cfg_get(doc.root, "source");
	printf("  %s\n     ", name);
	for (s = n && n->value ? n->value : "(none)"; *s; s++) {
		if (isspace((unsigned char)*s)) {
			gap = 1;
			continue;
		}
		if (gap)
			putchar(' ');
		gap = 0;
		putchar(*s);
	}
	putchar('\n');
	kv_cfg_free(&doc);
}

/* The architecture beyond dense attention and MLP, only where the profile has it. */
static void show_model_ext(const struct kv_model *m)
{
	if (m->experts)
		printf("; MoE %u experts top-%u (+%u shared, %u dense layers), %.2fB active",
		       m->experts, m->experts_per_token, m->shared_experts, m->dense_layers,
		       (double)kv_model_active_params(m) / 1e9);
	if (m->kv_lora_rank)
		printf("; MLA latent %u + rope %u, KV %llu B/token", m->kv_lora_rank,
		       m->qk_rope_head_dim, (unsigned long long)kv_model_kv_bytes_per_token(m));
	if (m->sliding_window)
		printf("; window %u on %u of %u layers", m->sliding_window,
		       kv_model_window_layers(m), m->layers);
	if (m->weight_dtype || m->kv_dtype)
		printf("; weights %s, KV %s", kv_dtype_name(m->weight_dtype),
		       kv_dtype_name(m->kv_dtype));
}

static void show_model(const char *name, const char *path, void *arg)
{
	struct kv_model m;
	struct kv_diag d;

	(void)arg;
	if (kv_profile_load_model(path, &m, &d)) {
		kv_diag_print(&d, stdout);
		return;
	}
	printf("  %-26s %u layers, hidden %u, %u heads (%u KV) x %u, %.2fB params: M = %.2f GB, KV %llu KiB/token, context %u",
	       name, m.layers, m.hidden, m.heads, m.kv_heads, m.head_dim, (double)m.params / 1e9,
	       (double)kv_model_weight_bytes(&m) / 1e9,
	       (unsigned long long)(kv_model_kv_bytes_per_token(&m) / 1024), m.max_ctx_tokens);
	show_model_ext(&m);
	putchar('\n');
}

/* Every column of every CSV a run writes, from the writers' own tables, with unit and definition. */
static void list_metrics(void)
{
	const char *const *f, *const *c;

	for (f = kv_metric_files; *f; f++) {
		printf("%s:\n", *f);
		for (c = kv_metric_columns(*f); c && *c; c++) {
			const struct kv_metric_doc *m = kv_metric_doc(*f, *c);

			if (m)
				printf("  %-24s %-16s %s\n", *c, m->unit[0] ? m->unit : "-", m->def);
			else
				printf("  %-24s %-16s (no definition: add it to src/lib/metric_doc.c)\n", *c, "?");
		}
	}
}

/* The cluster: keys (src/lib/workload.c read_cluster), default and meaning. */
static const struct {
	const char *key, *def, *help;
} cluster_keys[] = {
	{ "replicas", "1", "independent copies behind the router" },
	{ "tensor_parallel", "1", "GPUs per replica (per attention rank with data_parallel), 1..64" },
	{ "pipeline_parallel", "1", "pipeline stages per replica, 1..64" },
	{ "expert_parallel", "1", "GPUs the routed experts spread over; data_parallel x tensor_parallel with data_parallel" },
	{ "data_parallel", "1", "MoE: attention ranks with their own batch and KV sharing the experts, stepping in lockstep, 1..64" },
	{ "router", "round-robin", "arrival routing over the replicas of the request's group (routers above)" },
	{ "groups", "(none)", "replica groups, a list; each entry takes the keys below (docs/cluster.md)" },
	{ "groups[i].name", "g<i>", "the group's name (groups.csv), unique" },
	{ "groups[i].replicas", "1", "the group's replicas (cluster.replicas is then their sum, not set)" },
	{ "groups[i].role", "mixed", "mixed|prefill|decode: what the group runs (prefill/decode disaggregation)" },
	{ "groups[i].model", "top level", "the model it serves; tenants name it with workload.tenants[j].model" },
	{ "groups[i].device", "top level", "its GPU (a device profile); with no host anywhere, the device's host" },
	{ "groups[i].host", "top level", "its host CPU profile" },
	{ "groups[i].tensor_parallel", "top level", "and pipeline_parallel, expert_parallel, data_parallel: as above, per group" },
	{ "groups[i].engine", "top level", "and scheduler, cache, memory, batching: a section given replaces the top level's whole" },
	{ "groups[i].kv_transfer", "cluster's", "a prefill group's KV links: the cluster's kv_transfer with these keys in place" },
	{ "prefill_replicas", "0", "prefill/decode disaggregation: replicas [0, N) prefill, the rest decode; 0: off (docs/cluster.md)" },
	{ "kv_transfer.bandwidth", "50GB/s", "a prefill group's KV link bandwidth, per link (400 Gb/s NDR InfiniBand / RoCE)" },
	{ "kv_transfer.latency", "20us", "latency of one KV transfer" },
	{ "kv_transfer.layerwise", "false", "stream the KV layer by layer while the prefill runs" },
	{ "kv_transfer.topology", "prefill", "links: prefill (one per prefill replica) | pair (per prefill-decode pair) | shared (one per prefill group)" },
	{ "kv_transfer.placement", "least-kv", "decode replica: least-kv (least reserved + inbound KV / pool) | round-robin" },
	{ "groups[i].weight", "1", "routing weight per replica among the groups serving its model (a number, or auto: the replica's saturated capacity)" },
	{ "groups[i].cost_per_gpu_hour", "the device's", "USD per GPU-hour for gpu_hours and cost_usd (the device profile's cost_per_gpu_hour)" },
};

/* The autoscale: keys (src/lib/workload.c read_autoscale, sim/autoscale.h), default and meaning. */
static const struct {
	const char *key, *def, *help;
} autoscale_keys[] = {
	{ "min", "1", "replicas active or starting at least (cluster.replicas: active at the start, default min)" },
	{ "max", "min", "replicas at most: the cluster allocates max, the rest off" },
	{ "policy", "queue", "queue: waiting requests per replica; kv_util: mean KV use; slo: share of ended requests meeting slo:; concurrency: requests in flight per replica" },
	{ "up", "4|0.8|0.95|16", "scale up above it (queue, kv_util, concurrency) or below it (slo); by policy" },
	{ "down", "0.5|0.4|0.99|6", "scale down below it (queue, kv_util, concurrency; if n-1 replicas would stay below up) or at or above it (slo)" },
	{ "step", "1", "replicas added or removed per decision" },
	{ "interval", "15s", "decision period" },
	{ "window", "60s", "the metric is the mean over this window of per-interval values" },
	{ "cooldown_up", "0s", "no scale-up within this of the last scale action" },
	{ "cooldown_down", "300s", "no scale-down within this of the last scale action" },
	{ "load_bandwidth", "5GB", "weight load bandwidth per GPU, bytes/s: cold start = shard bytes / it + start_time" },
	{ "start_time", "30s", "constant part of a cold start (container, engine, CUDA graphs)" },
};

static void list_cluster(void)
{
	size_t i;

	puts("cluster keys (cluster:):");
	for (i = 0; i < sizeof(cluster_keys) / sizeof(cluster_keys[0]); i++)
		printf("  %-26s default %-12s %s\n", cluster_keys[i].key, cluster_keys[i].def,
		       cluster_keys[i].help);
	puts("autoscale keys (autoscale:, docs/cluster.md \"Autoscaling\"):");
	for (i = 0; i < sizeof(autoscale_keys) / sizeof(autoscale_keys[0]); i++)
		printf("  %-26s default %-12s %s\n", autoscale_keys[i].key, autoscale_keys[i].def,
		       autoscale_keys[i].help);
}

/* A distribution as `kvsim list sessions` shows a default: "geometric mean 2 [1, 100]". */
static void show_dist(const struct kv_dist *x, int width)
{
	char b[96];
	int n = snprintf(b, sizeof(b), "%s %g", kv_dist_name(x->kind), x->mean);

	if (x->kind == KV_DIST_UNIFORM)
		n = snprintf(b, sizeof(b), "uniform %g..%g", x->min, x->max);
	else if (x->kind == KV_DIST_LOGNORMAL)
		n += snprintf(b + n, sizeof(b) - (size_t)n, " sigma %g", x->sigma);
	if (x->kind != KV_DIST_UNIFORM && x->max > 0)
		snprintf(b + n, sizeof(b) - (size_t)n, " max %g", x->max);
	printf(" %-*s", width, b);
}

/* workload.sessions: the per-class keys with their chat and agent defaults (src/lib/workload_sessions.c). */
static void list_sessions(void)
{
	const struct kv_session_key *k;

	puts("session keys (workload.sessions:, or each item of its classes:; docs/workload.md Sessions):");
	printf("  %-26s default %-12s %s\n", "hash_block_tokens", "512", "tokens one prefix-block id covers (beside classes; match cache.hash_block_tokens)");
	printf("  %-26s default %-12s %s\n", "classes", "-", "a list of session classes (each with the keys below); absent: the mapping is one class");
	printf("  %-26s default %-12s %s\n", "name", "s<i>", "the class's label");
	printf("  %-26s default %-12s %s\n", "share", "1", "share of sessions (normalised over the classes)");
	printf("  %-26s default %-12s %s\n", "kind", "chat", "chat|agent: which defaults the distributions below take");
	printf("  %-26s default %-12s %s\n", "shared_prefix", "0", "tokens every session of the class starts with (a system prompt), cached across sessions");
	for (k = kv_session_keys; k->key; k++) {
		printf("  %-26s %-6s chat", k->key, k->units);
		show_dist(&k->chat, 30);
		printf(" agent");
		show_dist(&k->agent, 0);
		printf("\n      %s\n", k->help);
	}
	puts("  a distribution: a number (fixed; think: a duration, 30s) or {dist: fixed|uniform|exponential|lognormal|geometric, mean, sigma, min, max}");
	printf("  %-26s default %-12s %s\n", "arrival.sessions", "none", "none|prefix-chains: a replayed trace's requests form sessions by their prefix chains (for session-affinity)");
}

/* workload.arrival: the processes and their keys (src/lib/workload.c; sim/source.h, sim/gate.h). */
static void list_arrivals(void)
{
	static const char *const rows[][3] = {
		{ "process", "poisson", "poisson | gamma | trace | diurnal | closed" },
		{ "rate", "1", "poisson/gamma: requests per second, or inf (all due at 0: vllm bench serve --request-rate inf); diurnal: at the peak" },
		{ "cv", "1", "gamma: coefficient of variation of the gaps" },
		{ "trough", "0.25", "diurnal: the least rate over the peak rate" },
		{ "peak_at", "14h", "diurnal: time of the peak within the period" },
		{ "period", "24h", "diurnal: the curve's period" },
		{ "trace", "-", "trace: the file with timestamps" },
		{ "time_scale", "1", "trace: multiply its timestamps" },
		{ "max_concurrency", "0", "requests outstanding at most (0: no limit); one due while N are waits and is sent when one completes (vllm bench serve --max-concurrency)" },
		{ "concurrency", "-", "closed: its users, each with one request outstanding (required)" },
		{ "think_time", "0s", "closed: a user's completion -> its next request" },
	};
	size_t i;

	puts("arrival keys (workload.arrival:; docs/workload.md):");
	for (i = 0; i < sizeof(rows) / sizeof(rows[0]); i++)
		printf("  %-26s default %-12s %s\n", rows[i][0], rows[i][1], rows[i][2]);
}

static const char *const list_synopsis[] = {
	"[schedulers|caches|routers|engines|devices|hosts|models|metrics|cluster|sessions|arrivals|sources]", NULL
};

static const char list_desc[] =
	"Prints every plugin with its description and options (name, type,\n"
	"default, units), and every shipped device, host and model profile with its\n"
	"key figures (from the profiles directory: $KVSIM_CONFIG_DIR or configs/).\n"
	"`kvsim list cluster`: the cluster: keys with their defaults.\n"
	"`kvsim list sessions`: the workload.sessions: keys with their chat and agent\n"
	"defaults and sources.\n"
	"`kvsim list metrics`: every column of summary.csv, tenants.csv,\n"
	"requests.csv, timeseries.csv, tenant_timeseries.csv and health.csv with its\n"
	"unit and definition (what `kvsim plot --metric` and a sweep's target take).\n"
	"`kvsim list sources`: each device profile's `source` text, where its datasheet\n"
	"figures and perf coefficients come from.\n";

int kv_cmd_list(int argc, char **argv)
{
	static const struct kv_cli_opt opts[] = { { .name = NULL } };
	static const struct kv_cli_cmd cmd = { .name = "list", .synopsis = list_synopsis,
					       .desc = list_desc, .positional = "kind",
					       .min_operands = 0, .max_operands = 1 };
	const char *what = "all";
	int all, rc;
	enum kv_plugin_kind k;

	if ((rc = kv_cli_parse(&cmd, opts, argc, argv, &what)))
		return rc < 0 ? 0 : rc;
	all = !strcmp(what, "all");
	if (!all && strcmp(what, "schedulers") && strcmp(what, "caches") &&
	    strcmp(what, "routers") && strcmp(what, "engines") && strcmp(what, "devices") &&
	    strcmp(what, "hosts") && strcmp(what, "models") && strcmp(what, "metrics") &&
	    strcmp(what, "cluster") && strcmp(what, "sessions") && strcmp(what, "arrivals") &&
	    strcmp(what, "sources")) {
		fprintf(stderr, "kvsim: list: unknown kind '%s': expected one of: schedulers, caches, routers, engines, devices, hosts, models, metrics, cluster, sessions, arrivals, sources\n", what);
		return 2;
	}
	for (k = 0; k < KV_PLUGIN_KINDS; k++)
		if (all || !strcmp(what, kv_plugin_kind_plural(k)))
			list_plugins(k);
	if (all || !strcmp(what, "cluster"))
		list_cluster();
	if (all || !strcmp(what, "sessions"))
		list_sessions();
	if (all || !strcmp(what, "arrivals"))
		list_arrivals();
	if (all || !strcmp(what, "devices")) {
		puts("devices (device:):");
		kv_profiles_list("devices", show_device, NULL);
	}
	if (all || !strcmp(what, "hosts")) {
		puts("hosts (host:):");
		kv_profiles_list("hosts", show_host, NULL);
	}
	if (all || !strcmp(what, "models")) {
		puts("models (model:):");
		kv_profiles_list("models", show_model, NULL);
		printf("  MoE routed experts' grouped GEMM (docs/perf-model.md): rate P_dtype x ec x m / (m + c x m_ridge), m tokens per touched expert;\n"
		       "    ec_bf16 %.3f, ec_fp8 %.3f, c %.3f: %s\n",
		       KV_MOEGEMM_EC_BF16, KV_MOEGEMM_EC_FP8, KV_MOEGEMM_C, KV_MOEGEMM_SOURCE);
	}
	if (all || !strcmp(what, "metrics")) {
		puts("metrics (columns of a run's CSVs: name, unit, definition):");
		list_metrics();
	}
	if (all || !strcmp(what, "sources")) {
		puts("sources (where each device profile's figures and perf coefficients come from; engine coefficients: their option's help above):");
		kv_profiles_list("devices", show_source, NULL);
	}
	return fflush(stdout) || ferror(stdout) ? 1 : 0;
}
