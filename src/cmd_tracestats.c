/*
 * cmd_tracestats.c -- `kvsim trace-stats FILE`: the prefix-reuse statistics
 * (sim/reuse.h) of a trace with prefix-block ids (Mooncake JSONL), or of a
 * workload: its arrival trace, or with `workload.sessions:` the requests
 * its sessions generate (each turn taken to finish as it arrives, so a
 * turn's next arrives one think time later; the ids do not depend on
 * timing, so the block statistics are those of a simulated run).
 */
#include "commands.h"
#include "opts.h"
#include "lib/workload.h"

#include "../sim/reuse.h"
#include "../sim/session.h"

#include <stdio.h>
#include <string.h>

/* Every request of trace `path` into r.  0 or < 0 with d filled. */
static int feed_trace(struct kv_reuse *r, const char *path, enum kv_trace_format f, struct kv_diag *d)
{
	static struct kv_trace_row row; /* 1 MB of ids: not on the stack */
	struct kv_trace *t;
	int rc = kv_trace_open(path, f, &t, d);

	if (rc)
		return rc;
	while ((rc = kv_trace_next(t, &row, d)) > 0)
		kv_reuse_add(r, row.t_ns, row.prompt_tokens, row.output_tokens, row.hashes, row.n_hashes, NULL);
	kv_trace_close(t);
	return rc;
}

/* One session's turns from arrival a into r. */
static void feed_session(struct kv_reuse *r, struct kv_sessions *ss, const struct kv_arrival *a)
{
	struct kv_turn t;
	kv_ns now = a->t_ns;
	uint32_t slot = kv_sessions_start(ss, a->tenant, a->priority, &t);

	kv_reuse_add(r, now, t.prompt_tokens, t.output_tokens, t.hashes, t.n_hashes, NULL);
	while (kv_sessions_ended(ss, slot, 1, now, &now)) {
		kv_sessions_turn(ss, slot, &t);
		kv_reuse_add(r, now, t.prompt_tokens, t.output_tokens, t.hashes, t.n_hashes, NULL);
	}
}

/* The sessions workload w generates into r.  0 or < 0 with d filled. */
static int feed_sessions(struct kv_reuse *r, const struct kv_workload *w, struct kv_diag *d)
{
	const struct kv_sim_config *c = &w->cfg;
	uint64_t ctx = c->max_context_tokens ? c->max_context_tokens : c->model.max_ctx_tokens;
	struct kv_sessions *ss = NULL;
	struct kv_source *src = NULL;
	struct kv_arrival a;
	int rc = kv_sessions_open(&c->sessions, c->seed, ctx, &ss, d);

	if (!rc)
		rc = kv_source_open(&c->source, c->seed, &src, d);
	while (!rc && (rc = kv_source_next(src, &a, d)) > 0) {
		feed_session(r, ss, &a);
		rc = 0;
	}
	kv_source_close(src);
	kv_sessions_close(ss);
	return rc;
}

/* FILE: a workload (.yaml, .yml) or a trace. */
static int feed(struct kv_reuse *r, const char *path, int has_seed, uint64_t seed, struct kv_diag *d)
{
	size_t n = strlen(path);
	struct kv_workload w;
	int rc;

	if (!(n > 5 && !strcmp(path + n - 5, ".yaml")) && !(n > 4 && !strcmp(path + n - 4, ".yml")))
		return feed_trace(r, path, KV_TRACE_AUTO, d);
	rc = kv_workload_load(&w, path, NULL, 0, has_seed, seed, d);
	if (!rc && w.cfg.sessions.n_classes)
		rc = feed_sessions(r, &w, d);
	else if (!rc && w.cfg.source.arrival == KV_ARRIVAL_TRACE)
		rc = feed_trace(r, w.cfg.source.trace_path, w.cfg.source.trace_format, d);
	else if (!rc)
		rc = kv_diag_set(d, KV_EINVAL, path, 0, 0, "workload",
				 "no sessions and no arrival trace: expected workload.sessions or a trace arrival (process: trace)");
	kv_workload_release(&w);
	return rc;
}

static void print(const struct kv_reuse_stats *st, int csv)
{
	const struct {
		const char *name, *unit;
		double v;
	} f[] = {
		{ "requests", "", (double)st->requests },
		{ "blocks", "prefix-block ids", (double)st->blocks },
		{ "blocks_seen_share", "ids some earlier request carried", st->seen_share },
		{ "requests_reusing", "share with a leading seen id", st->requests_reusing },
		{ "reuse_mean", "per-request leading reused share", st->reuse_mean },
		{ "reuse_p50", "", st->reuse_p50 },
		{ "reuse_p90", "", st->reuse_p90 },
		{ "prompt_mean", "tokens", st->prompt_mean },
		{ "prompt_p50", "tokens", st->prompt_p50 },
		{ "prompt_p90", "tokens", st->prompt_p90 },
		{ "prompt_p99", "tokens", st->prompt_p99 },
		{ "output_mean", "tokens", st->output_mean },
		{ "output_p50", "tokens", st->output_p50 },
		{ "chains", "requests starting a prefix chain", (double)st->chains },
		{ "chains_multi_share", "chains of two or more requests", st->multi_share },
		{ "turns_mean", "requests per chain", st->turns_mean },
		{ "turns_multi_mean", "per chain of two or more", st->turns_multi_mean },
		{ "turns_p90", "", st->turns_p90 },
		{ "turns_max", "", (double)st->turns_max },
		{ "first_prompt_mean", "tokens, a chain's first request", st->first_mean },
		{ "first_prompt_p50", "tokens", st->first_p50 },
		{ "turn_gap_mean_s", "s, parent to child arrival", st->gap_mean_s },
		{ "turn_gap_p50_s", "s", st->gap_p50_s },
		{ "turn_gap_p90_s", "s", st->gap_p90_s },
		{ "turn_growth_p50", "tokens, prompt over the parent's", st->growth_p50 },
	};
	size_t i;

	if (csv)
		puts("metric,value");
	for (i = 0; i < sizeof(f) / sizeof(f[0]); i++) {
		if (csv)
			printf("%s,%.6g\n", f[i].name, f[i].v);
		else
			printf("  %-22s %14.6g  %s\n", f[i].name, f[i].v, f[i].unit);
	}
}

static const char ts_desc[] =
	"Prints the prefix-reuse statistics of FILE: a trace with prefix-block ids\n"
	"(Mooncake JSONL hash_ids), or a workload -- its arrival trace, or the\n"
	"requests its workload.sessions generate (each turn taken to finish as it\n"
	"arrives). blocks_seen_share is the share of prefix-block ids some earlier\n"
	"request carried (an infinite cache's block hit rate); a request whose\n"
	"leading k >= 1 ids were seen continues the latest request that carried its\n"
	"k-th (its parent) when k is at least half of the parent's ids, and chains of\n"
	"parents are the turn structure\n"
	"(docs/cluster.md, Multi-turn sessions).\n";

int kv_cmd_trace_stats(int argc, char **argv)
{
	static const char *const synopsis[] = { "[--csv] [--seed N] FILE", NULL };
	int csv = 0, has_seed = 0, rc;
	uint64_t seed = 0;
	const struct kv_cli_opt opts[] = {
		{ .name = "seed", .kind = KV_CLI_U64, .dst = &seed, .max = UINT64_MAX, .seen = &has_seed,
		  .what = "a non-negative integer", .arg = "N",
		  .help = "a workload's seed instead of its own (sessions: other draws)" },
		{ .name = "csv", .kind = KV_CLI_FLAG, .dst = &csv,
		  .help = "print metric,value rows (CSV) instead of the table" },
		{ .name = NULL },
	};
	const struct kv_cli_cmd cmd = { .name = "trace-stats", .synopsis = synopsis, .desc = ts_desc,
					.positional = "trace or workload file" };
	const char *path = NULL;
	struct kv_reuse_stats st;
	struct kv_reuse *r;
	struct kv_diag d;

	if ((rc = kv_cli_parse(&cmd, opts, argc, argv, &path)))
		return rc < 0 ? 0 : rc;
	r = kv_reuse_new();
	memset(&d, 0, sizeof(d));
	rc = feed(r, path, has_seed, seed, &d);
	if (rc < 0) {
		kv_diag_print(&d, stderr);
		kv_reuse_free(r);
		return 2;
	}
	kv_reuse_stats(r, &st);
	kv_reuse_free(r);
	print(&st, csv);
	return fflush(stdout) || ferror(stdout) ? 1 : 0;
}
