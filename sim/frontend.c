/*
 * frontend.c -- the front end's queue and its per-request arithmetic
 * (frontend.h has the model and its invariant; docs/frontend.md the
 * sources of the defaults).
 */
#include "frontend.h"

#include "engine.h"

#include <assert.h>
#include <stdlib.h>

void kv__frontend_init(struct kv_frontend *f, const struct kv_frontend_cfg *c, kv_ns extra_ns)
{
	const struct kv_frontend_cfg *x = &f->c;

	kv__frontend_release(f);
	f->c = *c;
	if (!c->api_server) /* the offline engine: nothing between the caller and the scheduler */
		f->c = (struct kv_frontend_cfg){ .stream_interval = c->stream_interval,
						 .api_servers = c->api_servers };
	if (!f->c.stream_interval)
		f->c.stream_interval = 1;
	if (!f->c.api_servers)
		f->c.api_servers = 1;
	f->out_ns = x->hops_out * x->hop_ns + x->detok_ns + x->chunk_ns;
	f->extra_ns = extra_ns;
	if (x->request_ns || x->tokenize_ns || x->hop_ns || x->detok_ns || x->chunk_ns)
		f->free_ns = kv_xcalloc(f->c.api_servers, sizeof(*f->free_ns));
}

void kv__frontend_release(struct kv_frontend *f)
{
	free(f->free_ns);
	f->free_ns = NULL;
}

uint64_t kv_frontend_chunks(uint64_t k, uint64_t T)
{
	assert(k >= 1);
	return T ? 1 + (T - 1 + k - 1) / k : 0;
}

uint64_t kv_frontend_sent_with(uint64_t k, uint64_t T, uint64_t j)
{
	uint64_t s;

	assert(k >= 1 && j >= 1 && j <= T);
	if (j == 1)
		return 1;
	s = 1 + k * ((j - 1 + k - 1) / k);
	return s < T ? s : T;
}

/* The server free first (the lowest index among ties). */
static uint32_t first_free(const struct kv_frontend *f)
{
	uint32_t i, best = 0;

	for (i = 1; i < f->c.api_servers; i++)
		if (f->free_ns[i] < f->free_ns[best])
			best = i;
	return best;
}

/*
 * Charges q's work to the first free server of f at now; returns when q
 * reaches the engine core.  Its output work follows its input work on the
 * same server (frontend.h).
 */
static kv_ns frontend_charge(struct kv_frontend *f, const struct kv_req *q, kv_ns now)
{
	const struct kv_frontend_cfg *c = &f->c;
	uint32_t i = first_free(f);
	kv_ns start = KV_MAX(now, f->free_ns[i]);
	kv_ns done = start + c->request_ns + c->tokenize_ns * q->prompt_tokens;
	kv_ns out = c->detok_ns * q->output_tokens +
		    c->chunk_ns * kv_frontend_chunks(c->stream_interval, q->output_tokens);

	f->free_ns[i] = done + out;
	return done + c->hop_ns;
}

kv_ns kv__frontend_in(struct kv_frontend *f, struct kv_req *q, kv_ns now)
{
	kv_ns t = f->free_ns ? frontend_charge(f, q, now) : now;

	q->fe_in_ns = t - now;
	return t;
}

void kv__frontend_out(const struct kv_frontend *f, struct kv_req *q)
{
	kv_ns d = f->out_ns + f->extra_ns;

	q->first_token_ns += d;
	q->finish_ns += d;
}
