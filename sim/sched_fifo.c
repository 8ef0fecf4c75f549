/*
 * sched_fifo.c -- first come, first served (vLLM's default policy).
 *
 * Running requests keep going in admission order; when one cannot grow its
 * KV cache, the most recently admitted running request is preempted by
 * recompute (it loses its cache and re-enters at the head of the queue, as
 * vLLM does) until the grower fits.  Then waiting requests are admitted in
 * arrival order while the token budget, the sequence cap and memory allow;
 * the first that does not fit blocks those behind it (no overtaking), which
 * is what makes FIFO fair in arrival order and exposed to head-of-line
 * blocking.  Guarantees: admission order equals arrival order (preempted
 * requests excepted, which return to the front).
 */
#include "replica.h"

struct fifo {
	struct kv_reqq wait; /* waiting requests, arrival order */
};

static const struct kv_option fifo_options[] = {
	{ .name = NULL },
};

static int fifo_init(void *priv, struct kv_replica *r, struct kv_diag *d)
{
	struct fifo *f = priv;

	(void)r;
	(void)d;
	kv_reqq_init(&f->wait);
	return 0;
}

static void fifo_enqueue(void *priv, struct kv_replica *r, struct kv_req *q)
{
	struct fifo *f = priv;

	if (q->preemptions)
		kv_reqq_push_front(r->sim, &f->wait, q);
	else
		kv_reqq_push_back(r->sim, &f->wait, q);
}

static void fifo_dequeue(void *priv, struct kv_replica *r, struct kv_req *q)
{
	struct fifo *f = priv;

	kv_reqq_remove(r->sim, &f->wait, q);
}

/* The next request to admit: the queue's head (the replica stops at a refused one). */
static struct kv_req *fifo_next(void *priv, const struct kv_replica *r)
{
	struct fifo *f = priv;

	return kv_reqq_head(r->sim, &f->wait);
}

static void fifo_took(void *priv, const struct kv_replica *r, struct kv_req *q)
{
	struct fifo *f = priv;

	kv_reqq_remove(r->sim, &f->wait, q);
}

static uint64_t fifo_waiting(const void *priv)
{
	const struct fifo *f = priv;

	return f->wait.n;
}

const struct kv_sched_ops kv_sched_fifo = {
	.name = "fifo",
	.desc = "first come, first served: admit in arrival order while memory and the token budget allow; preempt the newest on memory pressure",
	.priv_size = sizeof(struct fifo),
	.options = fifo_options,
	.init = fifo_init,
	.enqueue = fifo_enqueue,
	.next_waiting = fifo_next,
	.took = fifo_took, /* pick_victim NULL: the newest running */
	.dequeue = fifo_dequeue,
	.waiting = fifo_waiting,
	.order = KV_ORDER_FCFS, /* the running set, then admission in arrival order */
	.head_blocks = 1, /* no overtaking */
};
