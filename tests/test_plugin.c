/*
 * test_plugin.c -- a throwaway scheduler and cache model, built only for
 * this test, to show that a plugin is one file plus a registry line: each is
 * a static const descriptor (name, desc, state sizes, options, hooks) and
 * kv_test_plugins_register() adds them with kv_plugin_add(), the run-time
 * form of a line in sim/registry.c.  The meson target `plugin` links this
 * file with tests/test_random.c built with KV_TEST_PLUGINS: the random
 * invariant suite (requests, tokens and memory conserved; every request
 * accounted for; byte-identical reruns) then covers these plugins,
 * paired with fifo and full.
 *
 *   test-sjf    shortest prompt first: admit the waiting request with the
 *               fewest prompt tokens (ties: the earliest queued); when
 *               memory runs out, give up the unscheduled running request
 *               with the most output tokens still to generate.  Keeps in
 *               its per-request state (req_size) when and how often the
 *               request was queued, and checks it on every hook.
 *   test-spf    docs/design.md's example scheduler, shortest prompt first,
 *               compiled from the doc (tests/meson.build) and registered here
 *               under a test- name.
 *   test-pages  paged KV in pages of `page_tokens` tokens (each rounded up
 *               to whole pool units); its block table lives in its
 *               per-request state, not in the request's words.
 */
#include "replica.h"
#include "blocks.h"

#include <stddef.h>

/* --- test-sjf ------------------------------------------------------------ */

struct sjf {
	struct kv_reqq wait; /* waiting requests, queue order */
};

struct sjf_req { /* per-request state, zeroed at arrival */
	kv_ns queued_ns; /* when it was queued last */
	uint32_t queued; /* 1 while in wait */
	uint32_t times; /* times queued on this replica (1 + preemptions here) */
	uint32_t base; /* preemptions before it arrived here (a decode replica: on its prefill replica) */
};

static int sjf_init(void *priv, struct kv_replica *r, struct kv_diag *d)
{
	struct sjf *f = priv;

	(void)r;
	(void)d;
	kv_reqq_init(&f->wait);
	return 0;
}

static void sjf_enqueue(void *priv, struct kv_replica *r, struct kv_req *q)
{
	struct sjf *f = priv;
	struct sjf_req *st = kv_req_sched(r->sim, q);

	if (!st->times)
		st->base = q->preemptions;
	KV_CHECK(!st->queued && st->times == q->preemptions - st->base,
		 "request %llu queued %u, %u times, %u preemptions (%u before it arrived)",
		 (unsigned long long)q->id, st->queued, st->times, q->preemptions, st->base);
	st->queued = 1;
	st->times++;
	st->queued_ns = r->sim->now;
	kv_reqq_push_back(r->sim, &f->wait, q);
}

static void sjf_dequeue(void *priv, struct kv_replica *r, struct kv_req *q)
{
	struct sjf *f = priv;
	struct sjf_req *st = kv_req_sched(r->sim, q);

	KV_CHECK(st->queued, "request %llu dequeued but not queued", (unsigned long long)q->id);
	st->queued = 0;
	kv_reqq_remove(r->sim, &f->wait, q);
}

/* The waiting request with the shortest prompt, earliest queued on ties. */
static struct kv_req *shortest(const struct sjf *f, const struct kv_replica *r)
{
	struct kv_req *best = NULL, *q;

	for (q = kv_reqq_head(r->sim, &f->wait); q; q = kv_reqq_next(r->sim, q)) {
		const struct sjf_req *a = kv_req_sched(r->sim, q);

		if (!best || q->prompt_tokens < best->prompt_tokens ||
		    (q->prompt_tokens == best->prompt_tokens &&
		     a->queued_ns < ((const struct sjf_req *)kv_req_sched(r->sim, best))->queued_ns))
			best = q;
	}
	return best;
}

/* pick_victim: the unscheduled running request with the most output left. */
static struct kv_req *sjf_victim(void *priv, const struct kv_replica *r,
				 const struct kv_req *grower, enum kv_preempt *how)
{
	struct kv_req *best = r->running[grower->run_idx];
	uint32_t i;

	(void)priv;
	(void)how;
	for (i = 0; i < r->n_running; i++) {
		struct kv_req *c = r->running[i];

		if (!c->batch_tokens &&
		    c->output_tokens - c->generated > best->output_tokens - best->generated)
			best = c;
	}
	return best;
}

/* next_waiting: the shortest prompt (the replica stops at a refused one: head_blocks). */
static struct kv_req *sjf_next(void *priv, const struct kv_replica *r)
{
	return shortest(priv, r);
}

/* took: q is admitted; it leaves the queue (the check of sjf_dequeue). */
static void sjf_took(void *priv, const struct kv_replica *r, struct kv_req *q)
{
	struct sjf *f = priv;
	struct sjf_req *st = kv_req_sched(r->sim, q);

	KV_CHECK(st->queued && q->batch_tokens, "request %llu taken but not queued or scheduled",
		 (unsigned long long)q->id);
	st->queued = 0;
	kv_reqq_remove(r->sim, &f->wait, q);
}

static uint64_t sjf_waiting(const void *priv)
{
	const struct sjf *f = priv;

	return f->wait.n;
}

static const struct kv_sched_ops test_sjf = {
	.name = "test-sjf",
	.desc = "test only: admit the shortest prompt first; give up the most output left",
	.priv_size = sizeof(struct sjf),
	.req_size = sizeof(struct sjf_req),
	.init = sjf_init,
	.enqueue = sjf_enqueue,
	.next_waiting = sjf_next,
	.took = sjf_took,
	.pick_victim = sjf_victim,
	.head_blocks = 1,
	.dequeue = sjf_dequeue,
	.waiting = sjf_waiting,
};

/* --- test-pages ---------------------------------------------------------- */

struct pages {
	uint64_t page_tokens; /* option: tokens per page, default 32 */
	struct kv_blocks blocks; /* tables over the pool */
	uint64_t token_bytes; /* b */
	uint64_t page_bytes; /* page_tokens * b rounded up to whole pool units */
	const struct kv_sim *sim; /* for the per-request state */
};

static const struct kv_option pages_options[] = {
	{ .name = "page_tokens", .type = KV_OPT_U64, .offset = offsetof(struct pages, page_tokens),
	  .def = 32, .min = 1, .max = 4096, .units = "tokens", .help = "tokens per page" },
	{ .name = NULL },
};

static int pages_init(void *priv, const struct kv_cache_env *env, struct kv_diag *d)
{
	struct pages *c = priv;

	(void)d;
	kv_blocks_init(&c->blocks, env->pool);
	c->token_bytes = env->token_bytes;
	c->page_bytes = kv_blocks_units(&c->blocks, c->page_tokens * c->token_bytes, 0) *
			env->pool->unit_bytes;
	c->sim = env->sim;
	return 0;
}

static void pages_fini(void *priv)
{
	struct pages *c = priv;

	kv_blocks_release(&c->blocks);
}

/* q's block table, in the per-request state (zero at arrival: no table yet). */
static uint64_t *table(const struct pages *c, const struct kv_req *q)
{
	return kv_req_cache(c->sim, q);
}

static int pages_reserve(void *priv, struct kv_req *q, uint64_t tokens)
{
	struct pages *c = priv;
	uint64_t t = q->kv_bytes ? *table(c, q) : KV_BLOCKS_EMPTY, cap = q->kv_cap_tokens, held = 0;
	uint64_t saved = t;

	if (kv_blocks_grow(&c->blocks, &t, &cap, tokens, c->page_tokens, c->page_bytes, &held)) {
		kv_blocks_truncate(&c->blocks, &t, saved); /* all or nothing */
		return KV_ENOMEM;
	}
	*table(c, q) = t;
	q->kv_cap_tokens = cap;
	q->kv_bytes += held;
	return 0;
}

static void pages_release(void *priv, struct kv_req *q)
{
	struct pages *c = priv;

	if (q->kv_bytes)
		kv_blocks_free(&c->blocks, table(c, q));
	q->kv_bytes = 0;
	q->kv_cap_tokens = 0;
}

static double pages_bytes_per_token(const void *priv)
{
	const struct pages *c = priv;

	return (double)c->token_bytes;
}

static const struct kv_cache_ops test_pages = {
	.name = "test-pages",
	.desc = "test only: KV in pages of page_tokens tokens, the table in per-request state",
	.priv_size = sizeof(struct pages),
	.req_size = sizeof(uint64_t),
	.options = pages_options,
	.init = pages_init,
	.fini = pages_fini,
	.reserve = pages_reserve,
	.release = pages_release,
	.bytes_per_token = pages_bytes_per_token,
};

/* docs/design.md's example (sched_spf.c, built from the doc), under a test- name. */
extern const struct kv_sched_ops kv_sched_spf;
static struct kv_sched_ops test_spf;

/* The registry lines. */
void kv_test_plugins_register(void);
void kv_test_plugins_register(void)
{
	test_spf = kv_sched_spf;
	test_spf.name = "test-spf";
	KV_CHECK(kv_plugin_add(KV_PLUGIN_SCHED, &test_spf.base) == 0, "cannot add test-spf");
	KV_CHECK(kv_plugin_add(KV_PLUGIN_SCHED, &test_sjf.base) == 0, "cannot add test-sjf");
	KV_CHECK(kv_plugin_add(KV_PLUGIN_CACHE, &test_pages.base) == 0, "cannot add test-pages");
}
