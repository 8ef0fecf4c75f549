/*
 * heap.h -- the event queue: a binary min-heap of events ordered by
 * (time, sequence number assigned at insertion).
 *
 * Ties in time pop in insertion order, so a run is deterministic whatever
 * the heap's internal layout.  Events are small values stored inline in one
 * flat array that doubles when full (amortised O(1), no allocation once the
 * high-water mark is reached).  push and pop are O(log n).
 */
#ifndef KV_HEAP_H
#define KV_HEAP_H

#include "kv_common.h"

struct kv_event {
	kv_ns t_ns; /* when the event fires */
	uint64_t seq; /* insertion sequence number, set by kv_heap_push */
	uint32_t kind; /* event kind (the engine's enum) */
	uint32_t target; /* replica index or other target */
	uint64_t arg; /* kind-specific argument */
};

struct kv_heap {
	struct kv_event *ev; /* ev[0..n) is a heap */
	size_t n; /* events queued */
	size_t cap; /* capacity of ev */
	uint64_t next_seq; /* sequence number for the next push */
};

void kv_heap_init(struct kv_heap *h, size_t initial_cap);
void kv_heap_release(struct kv_heap *h);

/* Queues an event (its seq is overwritten). */
void kv_heap_push(struct kv_heap *h, kv_ns t_ns, uint32_t kind, uint32_t target,
		  uint64_t arg);

/* Removes the earliest event into *out; returns 0 when empty, 1 otherwise. */
int kv_heap_pop(struct kv_heap *h, struct kv_event *out);

/* The earliest event without removing it, or NULL when empty. */
static inline const struct kv_event *kv_heap_peek(const struct kv_heap *h)
{
	return h->n ? &h->ev[0] : NULL;
}

#endif /* KV_HEAP_H */
