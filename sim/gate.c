/*
 * gate.c -- the client's concurrency limit (gate.h): a count and a binary
 * min-heap of the times places free.
 */
#include "gate.h"

#include <stdlib.h>
#include <string.h>

void kv_gate_init(struct kv_gate *g, uint64_t limit, kv_ns think_ns)
{
	memset(g, 0, sizeof(*g));
	g->limit = limit;
	g->think_ns = think_ns;
	g->wake_ns = KV_NS_NEVER;
}

void kv_gate_release(struct kv_gate *g)
{
	free(g->free_ns);
	g->free_ns = NULL;
	g->n = g->cap = 0;
}

static void swap_ns(kv_ns *a, kv_ns *b)
{
	kv_ns t = *a;

	*a = *b;
	*b = t;
}

/* Removes the heap's least entry (n > 0). */
static void pop_min(struct kv_gate *g)
{
	kv_ns *h = g->free_ns;
	uint32_t i = 0, n = --g->n;

	h[0] = h[n];
	for (;;) {
		uint32_t l = 2 * i + 1, m = i;

		if (l < n && h[l] < h[m])
			m = l;
		if (l + 1 < n && h[l + 1] < h[m])
			m = l + 1;
		if (m == i)
			return;
		swap_ns(&h[i], &h[m]);
		i = m;
	}
}

void kv_gate_settle(struct kv_gate *g, kv_ns now_ns)
{
	while (g->n && g->free_ns[0] <= now_ns) {
		pop_min(g);
		KV_CHECK(g->out > 0, "a place freed with none outstanding");
		g->out--;
	}
}

int kv_gate_full(const struct kv_gate *g)
{
	return g->limit && g->out >= g->limit;
}

void kv_gate_take(struct kv_gate *g)
{
	KV_CHECK(!kv_gate_full(g), "a request sent with %llu of %llu places taken",
		 (unsigned long long)g->out, (unsigned long long)g->limit);
	g->out++;
}

kv_ns kv_gate_end(struct kv_gate *g, kv_ns finish_ns)
{
	kv_ns t = finish_ns > KV_NS_NEVER - 1 - g->think_ns ? KV_NS_NEVER - 1 : finish_ns + g->think_ns;
	uint32_t i;

	if (!g->limit)
		return KV_NS_NEVER;
	KV_CHECK(g->n < g->out, "%u places freeing, %llu outstanding", g->n,
		 (unsigned long long)g->out);
	if (g->n == g->cap) { /* at most limit entries: grows to its high-water mark */
		g->cap = g->cap ? 2 * g->cap : 16;
		g->free_ns = kv_xrealloc(g->free_ns, g->cap * sizeof(*g->free_ns));
	}
	i = g->n++;
	g->free_ns[i] = t;
	while (i && g->free_ns[(i - 1) / 2] > g->free_ns[i]) {
		swap_ns(&g->free_ns[(i - 1) / 2], &g->free_ns[i]);
		i = (i - 1) / 2;
	}
	return t;
}

kv_ns kv_gate_next_free(const struct kv_gate *g)
{
	return g->n ? g->free_ns[0] : KV_NS_NEVER;
}
