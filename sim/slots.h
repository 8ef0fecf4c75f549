/*
 * slots.h -- where requests in flight live: pages of stable request slots,
 * the arena of their prefix-block hashes, and the intrusive queues that
 * schedulers link through them.
 *
 * Slots come in pages of 4096 that never move (pointers stay valid while a
 * request lives) and are recycled through a free list, lowest index first;
 * each slot has beside it the per-request state of the scheduler and the
 * cache model (their plugins' req_size bytes, zeroed at arrival) in flat
 * per-page arrays.  Hashes (Mooncake hash_ids) live in 63-hash pages from one
 * arena, also recycled.  So memory follows the requests in flight, not the
 * trace, and nothing is allocated per request once the high-water mark is
 * reached.  Use: kv__slot_alloc() at arrival, kv__slot_free() at the end;
 * kv_sim_req() maps a slot index to its request.
 */
#ifndef KV_SLOTS_H
#define KV_SLOTS_H

#include "kv_common.h"

struct kv_sim;
struct kv_req;
struct kv_arrival;

#define KV_SLOT_PAGE_SHIFT 12
#define KV_SLOT_PAGE (1u << KV_SLOT_PAGE_SHIFT) /* slots per page */

/*
 * Prefix-block hashes of requests in flight, in pages from one arena
 * recycled through a free list (memory follows the requests in flight).
 */
#define KV_HASHES_PER_PAGE 63
struct kv_hash_page {
	uint64_t next; /* next page of the same request, KV_NIL at the end (or the free list's next) */
	uint64_t h[KV_HASHES_PER_PAGE]; /* hashes */
};

/* Sequential reader of a request's hashes. */
struct kv_hash_iter {
	const struct kv_hash_page *pages; /* the arena */
	uint32_t page; /* current page */
	uint32_t i, n; /* hashes read, hashes in all */
};

/* An intrusive FIFO of requests linked through q_prev/q_next. */
struct kv_reqq {
	uint32_t head, tail; /* slots, KV_NIL when empty */
	uint64_t n; /* length */
};

/* A zeroed free slot, its per-request plugin state zeroed too; never fails. */
struct kv_req *kv__slot_alloc(struct kv_sim *s);
/* Returns q's slot and its hash pages to the free lists. */
void kv__slot_free(struct kv_sim *s, struct kv_req *q);
/* Copies an arrival's hashes into pages owned by q. */
void kv__hashes_store(struct kv_sim *s, struct kv_req *q, const struct kv_arrival *a);
/* Frees every slot page and the hash arena. */
void kv__slots_release(struct kv_sim *s);

/* --- queues for schedulers ------------------------------------------------ */

void kv_reqq_init(struct kv_reqq *qq);
void kv_reqq_push_back(struct kv_sim *s, struct kv_reqq *qq, struct kv_req *q);
void kv_reqq_push_front(struct kv_sim *s, struct kv_reqq *qq, struct kv_req *q);
void kv_reqq_remove(struct kv_sim *s, struct kv_reqq *qq, struct kv_req *q);
/* Head of the queue, or NULL. */
struct kv_req *kv_reqq_head(const struct kv_sim *s, const struct kv_reqq *qq);
/* Successor of q in its queue, or NULL. */
struct kv_req *kv_reqq_next(const struct kv_sim *s, const struct kv_req *q);

#endif /* KV_SLOTS_H */
