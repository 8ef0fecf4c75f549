/*
 * slots.c -- request slots, the hash arena and the scheduler queues; see
 * slots.h.
 */
#include "engine.h"

#include <stdlib.h>
#include <string.h>

/* Adds a page of slots (and of each plugin's per-request state) to the free list. */
static void slots_grow(struct kv_sim *s)
{
	uint32_t base = s->n_pages * KV_SLOT_PAGE, i;
	struct kv_req *page = kv_xaligned_alloc(_Alignof(struct kv_req),
						KV_SLOT_PAGE * sizeof(*page));

	memset(page, 0, KV_SLOT_PAGE * sizeof(*page));
	s->pages = kv_xrealloc(s->pages, (s->n_pages + 1) * sizeof(*s->pages));
	s->pages[s->n_pages] = page;
	for (i = 0; i < KV_PLUGIN_KINDS; i++) {
		struct kv_plugin_reqs *st = &s->req_state[i];

		if (!st->size)
			continue;
		st->pages = kv_xrealloc(st->pages, (s->n_pages + 1) * sizeof(*st->pages));
		st->pages[s->n_pages] = kv_xcalloc(KV_SLOT_PAGE, st->size);
	}
	s->n_pages++;
	/* Link the new slots so the lowest index is handed out first. */
	for (i = KV_SLOT_PAGE; i-- > 0;) {
		page[i].q_next = s->free_slot;
		s->free_slot = base + i;
	}
}

struct kv_req *kv__slot_alloc(struct kv_sim *s)
{
	struct kv_req *q;
	uint32_t slot, i;

	if (s->free_slot == KV_NIL)
		slots_grow(s);
	slot = s->free_slot;
	q = kv_sim_req(s, slot);
	s->free_slot = q->q_next;
	memset(q, 0, sizeof(*q));
	q->slot = slot;
	q->q_prev = q->q_next = KV_NIL;
	q->first_token_ns = KV_NS_NEVER;
	q->hash_page = KV_NIL;
	for (i = 0; i < KV_PLUGIN_KINDS; i++)
		if (s->req_state[i].size)
			memset(kv__req_state(s, i, q), 0, s->req_state[i].size);
	return q;
}

/* --- prefix-block hashes ------------------------------------------------ */

static uint32_t hash_page_get(struct kv_sim *s)
{
	uint32_t i, old = s->n_hash_pages;

	if (s->free_hash_page == KV_NIL) {
		s->n_hash_pages = old ? 2 * old : 64;
		s->hash_pages = kv_xrealloc(s->hash_pages,
					    (size_t)s->n_hash_pages * sizeof(*s->hash_pages));
		for (i = s->n_hash_pages; i-- > old;) {
			s->hash_pages[i].next = s->free_hash_page;
			s->free_hash_page = i;
		}
	}
	i = s->free_hash_page;
	s->free_hash_page = (uint32_t)s->hash_pages[i].next;
	s->hash_pages[i].next = KV_NIL;
	return i;
}

void kv__hashes_store(struct kv_sim *s, struct kv_req *q, const struct kv_arrival *a)
{
	uint32_t i, page = KV_NIL;

	q->hash_page = KV_NIL;
	q->n_hashes = a->n_hashes;
	for (i = 0; i < a->n_hashes; i++) {
		if (i % KV_HASHES_PER_PAGE == 0) {
			uint32_t p = hash_page_get(s);

			if (page == KV_NIL)
				q->hash_page = p;
			else
				s->hash_pages[page].next = p;
			page = p;
		}
		s->hash_pages[page].h[i % KV_HASHES_PER_PAGE] = a->hashes[i];
	}
}

static void hashes_drop(struct kv_sim *s, struct kv_req *q)
{
	uint32_t p = q->hash_page;

	while (p != KV_NIL) {
		uint32_t next = (uint32_t)s->hash_pages[p].next;

		s->hash_pages[p].next = s->free_hash_page;
		s->free_hash_page = p;
		p = next;
	}
	q->hash_page = KV_NIL;
	q->n_hashes = 0;
}

void kv__slot_free(struct kv_sim *s, struct kv_req *q)
{
	hashes_drop(s, q);
	q->state = KV_REQ_FREE;
	q->q_next = s->free_slot;
	s->free_slot = q->slot;
}

void kv__slots_release(struct kv_sim *s)
{
	uint32_t i, k;

	for (i = 0; i < s->n_pages; i++) {
		free(s->pages[i]);
		for (k = 0; k < KV_PLUGIN_KINDS; k++)
			if (s->req_state[k].pages)
				free(s->req_state[k].pages[i]);
	}
	for (k = 0; k < KV_PLUGIN_KINDS; k++)
		free(s->req_state[k].pages);
	free(s->pages);
	free(s->hash_pages);
}

/* --- queues for schedulers ---------------------------------------------- */

void kv_reqq_init(struct kv_reqq *qq)
{
	qq->head = qq->tail = KV_NIL;
	qq->n = 0;
}

void kv_reqq_push_back(struct kv_sim *s, struct kv_reqq *qq, struct kv_req *q)
{
	q->q_next = KV_NIL;
	q->q_prev = qq->tail;
	if (qq->tail != KV_NIL)
		kv_sim_req(s, qq->tail)->q_next = q->slot;
	else
		qq->head = q->slot;
	qq->tail = q->slot;
	qq->n++;
}

void kv_reqq_push_front(struct kv_sim *s, struct kv_reqq *qq, struct kv_req *q)
{
	q->q_prev = KV_NIL;
	q->q_next = qq->head;
	if (qq->head != KV_NIL)
		kv_sim_req(s, qq->head)->q_prev = q->slot;
	else
		qq->tail = q->slot;
	qq->head = q->slot;
	qq->n++;
}

void kv_reqq_remove(struct kv_sim *s, struct kv_reqq *qq, struct kv_req *q)
{
	if (q->q_prev != KV_NIL)
		kv_sim_req(s, q->q_prev)->q_next = q->q_next;
	else
		qq->head = q->q_next;
	if (q->q_next != KV_NIL)
		kv_sim_req(s, q->q_next)->q_prev = q->q_prev;
	else
		qq->tail = q->q_prev;
	q->q_prev = q->q_next = KV_NIL;
	KV_CHECK(qq->n > 0, "removing request %llu from an empty queue",
		 (unsigned long long)q->id);
	qq->n--;
}

struct kv_req *kv_reqq_head(const struct kv_sim *s, const struct kv_reqq *qq)
{
	return qq->head == KV_NIL ? NULL : kv_sim_req(s, qq->head);
}

struct kv_req *kv_reqq_next(const struct kv_sim *s, const struct kv_req *q)
{
	return q->q_next == KV_NIL ? NULL : kv_sim_req(s, q->q_next);
}
