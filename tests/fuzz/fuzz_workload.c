/*
 * fuzz_workload.c -- libFuzzer target for the workload loader
 * (src/lib/workload.c over src/lib/cfg_*.c and src/lib/profile_load.c).
 *
 * The input is a workload file.  Its comment lines "#set key=value" are
 * also handed to the loader as --set overrides (at most MAX_SETS), so one
 * input exercises both the YAML reader and kv_cfg_set(); YAML ignores them
 * as comments.  The document is reported as workloads/fuzz.yaml in the
 * source tree, so relative paths resolve as they do for the example
 * workloads and `model: ../configs/models/x.yaml` reaches the profile
 * reader.  The loader must return 0 or a KV_E* code with a message, and
 * must not leak on either path; every replica group it loads keeps the
 * promises of the top level.
 */
#include "fuzz.h"
#include "workload.h"
#include "memory.h"
#include "session.h"

#include <stdint.h>
#include <string.h>

#define MAX_SETS 8 /* overrides taken from "#set " lines */

/* Copies the "#set " lines of data (each NUL-terminated) into sets[]; returns the count. */
static size_t collect_sets(const uint8_t *data, size_t size, char **sets)
{
	const char *p = (const char *)data, *end = p + size;
	size_t n = 0;

	while (p < end && n < MAX_SETS) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		const char *eol = nl ? nl : end;

		if ((size_t)(eol - p) >= 5 && !memcmp(p, "#set ", 5)) {
			size_t len = (size_t)(eol - p) - 5;

			sets[n] = kv_xmalloc(len + 1);
			memcpy(sets[n], p + 5, len);
			sets[n++][len] = '\0';
		}
		p = eol + 1;
	}
	return n;
}

/*
 * What a loaded workload promises beyond each key's range: a pinned pool
 * (tokens x KV bytes per token) that neither wraps nor passes
 * KV_MEM_POOL_MAX_BYTES, and a tp and ep the model's heads and experts
 * split by: ep divides tp, or with data-parallel attention (dp > 1) ep is
 * dp x tp, vLLM's expert-parallel size.
 */
/*
 * Autoscaling's promises (sim/autoscale.h): 1 <= min <= initial <= max, the
 * cluster holding max replicas, a decision period, a window of at least one
 * period, thresholds in the policy's order.
 */
static void check_autoscale(const struct kv_sim_config *c)
{
	const struct kv_autoscale_cfg *a = &c->autoscale;

	if (!a->on)
		return;
	if (!a->min || a->min > a->initial || a->initial > a->max || a->max != c->replicas ||
	    !a->interval_ns || a->window_ns < a->interval_ns || !a->step ||
	    (a->policy == KV_AS_SLO ? a->up >= a->down : a->up <= a->down))
		fuzz_fail("loaded autoscale min %u initial %u max %u (replicas %u), interval %llu, window %llu, up %g down %g",
			  a->min, a->initial, a->max, c->replicas, (unsigned long long)a->interval_ns,
			  (unsigned long long)a->window_ns, a->up, a->down);
}

static void check_derived(const struct kv_sim_config *c)
{
	const struct kv_model *m = &c->model;
	uint32_t dp = c->dp > 1 ? c->dp : 1;
	uint64_t bytes;

	if (c->mem.kv_tokens &&
	    (kv_mul_u64(c->mem.kv_tokens, kv_model_kv_bytes_per_token(m), &bytes) ||
	     bytes > KV_MEM_POOL_MAX_BYTES))
		fuzz_fail("loaded a pin of %llu tokens of %s past the pool bound",
			  (unsigned long long)c->mem.kv_tokens, m->name);
	if (m->heads % c->tp || (!m->kv_lora_rank && m->kv_heads % c->tp && c->tp % m->kv_heads))
		fuzz_fail("loaded tensor_parallel %u for %u heads, %u KV heads", c->tp, m->heads,
			  m->kv_heads);
	if (c->pd_prefill && (c->pd_prefill >= c->replicas || c->xfer.topo > KV_XFER_SHARED ||
			      c->xfer.place > KV_PLACE_ROUND_ROBIN))
		fuzz_fail("loaded prefill_replicas %u of %u, topology %d, placement %d",
			  c->pd_prefill, c->replicas, (int)c->xfer.topo, (int)c->xfer.place);
	if (c->ep && (m->experts % c->ep || (dp > 1 ? c->ep != dp * c->tp : c->tp % c->ep)))
		fuzz_fail("loaded expert_parallel %u for %u experts at tp %u, dp %u", c->ep,
			  m->experts, c->tp, dp);
	check_autoscale(c);
}

/*
 * Loaded sessions (workload.sessions) are ones the session generator takes,
 * and its first sessions' turns stay within its bounds (sim/session.h).
 */
static void check_sessions(const struct kv_sim_config *c)
{
	struct kv_sessions *ss = NULL;
	struct kv_turn t;
	struct kv_diag d;
	kv_ns next;
	int i, k;

	if (!c->sessions.n_classes)
		return;
	memset(&d, 0, sizeof(d));
	if (kv_sessions_open(&c->sessions, c->seed, c->model.max_ctx_tokens, &ss, &d))
		fuzz_fail("loaded sessions the generator refuses: %s: %s", d.field, d.msg);
	for (i = 0; i < 4; i++) {
		uint32_t slot = kv_sessions_start(ss, 0, 0, &t);

		for (k = 0; k < 64 && kv_sessions_ended(ss, slot, 1, 0, &next); k++)
			kv_sessions_turn(ss, slot, &t);
		if (k == 64) /* leave it: a long session ends when it is told it was rejected */
			kv_sessions_ended(ss, slot, 0, 0, &next);
		if (t.prompt_tokens < 1 || t.output_tokens < 1 || t.n_hashes < 1)
			fuzz_fail("a session turn of %llu prompt, %llu output tokens, %u ids",
				  (unsigned long long)t.prompt_tokens,
				  (unsigned long long)t.output_tokens, t.n_hashes);
	}
	kv_sessions_close(ss);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *sets[MAX_SETS];
	struct kv_workload w;
	struct kv_diag d;
	size_t n = collect_sets(data, size, sets), i;
	int rc;

	memset(&d, 0, sizeof(d));
	rc = kv_workload_load_mem(&w, KV_SOURCE_DIR "/workloads/fuzz.yaml", (const char *)data,
				  size, sets, n, 0, 0, &d);
	fuzz_check_rc(rc, &d);
	if (!rc && (!w.cfg.replicas || !w.cfg.tp || !w.cfg.sched || !w.cfg.cache ||
		    !w.cfg.router || !w.cfg.source.n_tenants))
		fuzz_fail("loaded a workload with a missing part: replicas %u tp %u tenants %u",
			  w.cfg.replicas, w.cfg.tp, w.cfg.source.n_tenants);
	if (!rc) {
		check_derived(&w.cfg);
		check_sessions(&w.cfg);
	}
	/* each replica group's, as the top level's (a group may have 0 replicas: one a sweep leaves out) */
	for (i = 0; !rc && i < w.cfg.n_groups; i++)
		if (!w.cfg.groups[i].sched || !w.cfg.groups[i].cache || !w.cfg.groups[i].engine)
			fuzz_fail("loaded group %zu with a missing part", i);
		else
			check_derived(&w.cfg.groups[i]);
	kv_workload_release(&w);
	for (i = 0; i < n; i++)
		free(sets[i]);
	return 0;
}
