/*
 * heap.c -- the event queue: a binary min-heap in one flat array.
 *
 * The order is the strict total order on (t_ns, seq); seq is unique, so the
 * pop sequence is fully determined by the pushes, whatever the layout, and
 * equal times pop in insertion order.
 *
 * Both directions move a hole instead of swapping: one copy per level, the
 * moving event written once at the end.  pop uses Floyd's bottom-up variant
 * (Knuth TAOCP 5.2.3, ex. 18; also Wegener, "Bottom-up heapsort", 1993): the
 * hole left at the root walks down to a leaf along the smaller children (one
 * comparison per level), then the former last event sifts up from that leaf.
 * The last event is usually among the latest, so the sift-up stops after a
 * level or two; the textbook sift-down spends two comparisons per level to
 * stop early, which it rarely does.
 */
#include "heap.h"

#include <assert.h>
#include <stdlib.h>

#define HEAP_MIN_CAP 64 /* capacity when kv_heap_init is given 0, events */

/* The heap's only comparison: does a fire before b? */
static inline int ev_before(const struct kv_event *a, const struct kv_event *b)
{
	return kv_event_before(a, b);
}

void kv_heap_init(struct kv_heap *h, size_t initial_cap)
{
	h->cap = initial_cap ? initial_cap : HEAP_MIN_CAP;
	h->ev = kv_xmalloc(h->cap * sizeof(*h->ev));
	h->n = 0;
	h->next_seq = 0;
	h->now_ns = 0;
}

void kv_heap_release(struct kv_heap *h)
{
	free(h->ev);
	h->ev = NULL;
	h->n = h->cap = 0;
}

/* Doubles the array; cold, so kept out of line. */
static __attribute__((noinline)) void heap_grow(struct kv_heap *h)
{
	h->cap *= 2;
	h->ev = kv_xrealloc(h->ev, h->cap * sizeof(*h->ev));
}

/* Fills the hole at i with e, moving the hole up past later parents. */
static inline void sift_up(struct kv_event *ev, size_t i, const struct kv_event *e)
{
	while (i > 0) {
		size_t parent = (i - 1) / 2;

		if (!ev_before(e, &ev[parent]))
			break;
		ev[i] = ev[parent];
		i = parent;
	}
	ev[i] = *e;
}

uint64_t kv_heap_push_at(struct kv_heap *h, kv_ns t_ns, kv_ns p_ns, uint32_t kind,
			 uint32_t target, uint64_t arg)
{
	struct kv_event e = {
		.t_ns = t_ns,
		.p_ns = p_ns,
		.seq = h->next_seq++,
		.kind = kind,
		.target = target,
		.arg = arg,
	};

	assert(p_ns <= t_ns);
	if (__builtin_expect(h->n == h->cap, 0))
		heap_grow(h);
	sift_up(h->ev, h->n++, &e);
	return e.seq;
}

void kv_heap_push(struct kv_heap *h, kv_ns t_ns, uint32_t kind, uint32_t target,
		  uint64_t arg)
{
	struct kv_event e = {
		.t_ns = t_ns,
		.p_ns = h->now_ns,
		.seq = h->next_seq++,
		.kind = kind,
		.target = target,
		.arg = arg,
	};

	if (__builtin_expect(h->n == h->cap, 0))
		heap_grow(h);
	sift_up(h->ev, h->n++, &e);
}

int kv_heap_pop(struct kv_heap *h, struct kv_event *out)
{
	struct kv_event *ev = h->ev;
	struct kv_event last;
	size_t n, i = 0, c;

	assert(out);
	if (!h->n)
		return 0;
	*out = ev[0];
	h->now_ns = out->t_ns;
	n = --h->n;
	if (!n)
		return 1;
	last = ev[n];
	/* Walk the root's hole down to a leaf of the n-element heap. */
	while ((c = 2 * i + 1) < n) {
		if (c + 1 < n && ev_before(&ev[c + 1], &ev[c]))
			c++;
		ev[i] = ev[c];
		i = c;
	}
	sift_up(ev, i, &last);
	return 1;
}
