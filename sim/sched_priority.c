/*
 * sched_priority.c -- vLLM V1's priority policy (--scheduling-policy
 * priority): requests carry an integer priority (kv_req.priority, from the
 * trace's `priority` field or the tenant's request_priority), lower first.
 *
 * As vLLM V1 (vllm-project/vllm: vllm/v1/core/sched/scheduler.py
 * Scheduler.schedule() at commit 00024d314514900f361ad072af6931e403b7f589;
 * vllm/v1/core/sched/request_queue.py PriorityRequestQueue at
 * 0097c7ed191ad98928976a47ae63ab625a5d112f; vllm/v1/request.py
 * Request.__lt__; docs/schedulers.md):
 *   - the waiting queue is a heap ordered by (priority, arrival time, id):
 *     Request.__lt__ compares priority, then arrival_time, then request_id
 *     (kvsim's id, the arrival order, for the string vLLM compares); a
 *     preempted request goes back by its key, not to the front;
 *   - admission takes the heap's head while it fits; a head refused memory
 *     blocks the rest (head_blocks), and no waiting request preempts a
 *     running one (vLLM's waiting loop breaks when allocate_slots fails);
 *   - running requests keep going in admission order (self.running); when
 *     one is refused memory the victim is max(running, key=(priority,
 *     arrival_time)): the lowest priority, the latest arrival among equals,
 *     the first in running order among equal keys (Python's max) -- whether
 *     or not it was scheduled earlier in this step (the replica takes it
 *     back out of the batch), the grower itself included, which then
 *     yields and ends the running pass (yield_stops).
 * Preemption is by recompute (vLLM V1's only kind), unless the cache model
 * offloads.  Guarantees: among waiting requests, admission follows the key;
 * a request is preempted only for one of a key no larger (or for itself).
 * Cost: enqueue, dequeue O(log n) in the waiting requests (a binary heap
 * whose positions live in each request's req_size state); a victim O(r) in
 * the running ones, as vLLM's max().
 */
#include "replica.h"

#include <assert.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

struct prio {
	int order; /* option: ORDER_AUTO (the engine's), ORDER_LOW_FIRST or ORDER_HIGH_FIRST */
	int high_first; /* 1: higher priority values first (SGLang's default), 0: lower first (vLLM) */
	struct kv_req **heap; /* waiting requests, a binary min-heap by key */
	uint32_t n, cap; /* requests in heap, its slots */
};

enum { ORDER_AUTO, ORDER_LOW_FIRST, ORDER_HIGH_FIRST };

/* Per-request state: its heap position plus 1, 0 when not waiting here. */
struct prio_req {
	uint32_t pos1;
};

static const char *const order_names[] = { "auto", "low_first", "high_first", NULL };

static const struct kv_option prio_options[] = {
	{ .name = "order", .type = KV_OPT_ENUM, .offset = offsetof(struct prio, order),
	  .def = ORDER_AUTO, .units = "", .names = order_names,
	  .help = "which priority values go first: low_first (vLLM), high_first (SGLang's default, "
		  "schedule_low_priority_values_first=False), auto: the engine's (high_first under sglang)" },
	{ .name = NULL },
};

/*
 * a before b: (priority, arrival, id) lexicographically, the priority
 * ascending (vLLM) or descending (SGLang's default: SchedulePolicy sorts by
 * (-priority, wait_queue_entry_time) unless schedule_low_priority_values_first).
 */
static int key_lt(const struct prio *p, const struct kv_req *a, const struct kv_req *b)
{
	if (a->priority != b->priority)
		return p->high_first ? a->priority > b->priority : a->priority < b->priority;
	if (a->arrival_ns != b->arrival_ns)
		return a->arrival_ns < b->arrival_ns;
	return a->id < b->id;
}

static struct prio_req *pstate(const struct kv_replica *r, const struct kv_req *q)
{
	return kv_req_sched(r->sim, q);
}

/* Puts q at heap slot i and records it. */
static void heap_set(struct prio *p, const struct kv_replica *r, uint32_t i, struct kv_req *q)
{
	p->heap[i] = q;
	pstate(r, q)->pos1 = i + 1;
}

static void sift_up(struct prio *p, const struct kv_replica *r, uint32_t i)
{
	struct kv_req *q = p->heap[i];

	while (i > 0 && key_lt(p, q, p->heap[(i - 1) / 2])) {
		heap_set(p, r, i, p->heap[(i - 1) / 2]);
		i = (i - 1) / 2;
	}
	heap_set(p, r, i, q);
}

static void sift_down(struct prio *p, const struct kv_replica *r, uint32_t i)
{
	struct kv_req *q = p->heap[i];

	for (;;) {
		uint32_t c = 2 * i + 1;

		if (c >= p->n)
			break;
		if (c + 1 < p->n && key_lt(p, p->heap[c + 1], p->heap[c]))
			c++;
		if (!key_lt(p, p->heap[c], q))
			break;
		heap_set(p, r, i, p->heap[c]);
		i = c;
	}
	heap_set(p, r, i, q);
}

static int prio_init(void *priv, struct kv_replica *r, struct kv_diag *d)
{
	struct prio *p = priv;

	(void)d;
	p->high_first = p->order == ORDER_HIGH_FIRST ||
			(p->order == ORDER_AUTO && r->eng && !strcmp(r->eng->name, "sglang"));
	return 0;
}

static void prio_fini(void *priv)
{
	struct prio *p = priv;

	free(p->heap);
	p->heap = NULL;
}

/* Arrived or preempted: into the heap by its key (the capacity doubles, amortised O(1)). */
static void prio_enqueue(void *priv, struct kv_replica *r, struct kv_req *q)
{
	struct prio *p = priv;

	assert(!pstate(r, q)->pos1);
	if (p->n == p->cap) {
		p->cap = p->cap ? 2 * p->cap : 64;
		p->heap = kv_xrealloc(p->heap, p->cap * sizeof(*p->heap));
	}
	p->heap[p->n++] = q;
	sift_up(p, r, p->n - 1);
}

/* Removes waiting q from the heap. */
static void prio_remove(void *priv, const struct kv_replica *r, struct kv_req *q)
{
	struct prio *p = priv;
	struct prio_req *st = pstate(r, q);
	uint32_t i = st->pos1 - 1;

	KV_CHECK(st->pos1 && i < p->n && p->heap[i] == q, "priority: request %llu is not waiting",
		 (unsigned long long)q->id);
	st->pos1 = 0;
	if (i == --p->n)
		return;
	heap_set(p, r, i, p->heap[p->n]); /* the last one fills the hole, then moves up or down */
	if (i > 0 && key_lt(p, p->heap[i], p->heap[(i - 1) / 2]))
		sift_up(p, r, i);
	else
		sift_down(p, r, i);
}

static void prio_dequeue(void *priv, struct kv_replica *r, struct kv_req *q)
{
	prio_remove(priv, r, q);
}

/* next_waiting: the head of the heap (the replica stops at a refused one). */
static struct kv_req *prio_next(void *priv, const struct kv_replica *r)
{
	const struct prio *p = priv;

	(void)r;
	return p->n ? p->heap[0] : NULL;
}

static void prio_took(void *priv, const struct kv_replica *r, struct kv_req *q)
{
	prio_remove(priv, r, q);
}

/*
 * pick_victim: max(running, key=(priority, arrival)), the first in running
 * order among equal keys; scheduled or not, grower included.  Under
 * high_first the lowest priority value is the one to give up.
 */
static struct kv_req *prio_victim(void *priv, const struct kv_replica *r,
				  const struct kv_req *grower, enum kv_preempt *how)
{
	struct kv_req *v = r->running[0];
	uint32_t i;

	const struct prio *p = priv;

	(void)grower;
	(void)how;
	for (i = 1; i < r->n_running; i++) {
		struct kv_req *q = r->running[i];

		if ((p->high_first ? q->priority < v->priority : q->priority > v->priority) ||
		    (q->priority == v->priority && q->arrival_ns > v->arrival_ns))
			v = q;
	}
	return v;
}

static uint64_t prio_waiting(const void *priv)
{
	const struct prio *p = priv;

	return p->n;
}

const struct kv_sched_ops kv_sched_priority = {
	.name = "priority",
	.desc = "vLLM V1's priority policy: admit by (priority, arrival), lower first (order: high_first, SGLang's default, under engine sglang), a refused head blocking; on memory pressure preempt max(running, key=(priority, arrival)), even one scheduled this step",
	.priv_size = sizeof(struct prio),
	.req_size = sizeof(struct prio_req),
	.options = prio_options,
	.init = prio_init,
	.fini = prio_fini,
	.enqueue = prio_enqueue,
	.next_waiting = prio_next,
	.took = prio_took,
	.pick_victim = prio_victim,
	.dequeue = prio_dequeue,
	.waiting = prio_waiting,
	.order = KV_ORDER_KEYED, /* the running set, then admission by a key each request keeps */
	.head_blocks = 1, /* vLLM's waiting loop breaks at a refused head */
	.yield_stops = 1, /* vLLM's running loop breaks when the grower preempts itself */
};
