/*
 * reuse.c -- prefix-reuse statistics (reuse.h): an open-addressing table of
 * the ids seen, each with the latest request that carried it, and per
 * request the few numbers the quantiles need.
 */
#include "reuse.h"

#include <stdlib.h>
#include <string.h>

/* One id seen: the id + 1 (0: empty slot) and the latest request carrying it. */
struct slot {
	uint64_t key; /* id + 1; 0 empty */
	uint32_t req; /* request index */
};

/* What a request keeps for the statistics. */
struct rec {
	kv_ns t_ns; /* arrival */
	uint64_t prompt, output; /* tokens */
	double reuse; /* leading seen ids / ids */
	uint32_t parent; /* parent request, UINT32_MAX: starts a chain */
	uint32_t root; /* the chain's first request */
	uint32_t depth; /* place in the chain, 0 first */
	uint32_t n; /* its ids */
};

struct kv_reuse {
	struct slot *tab; /* ids seen */
	size_t cap, used; /* slots (a power of two), occupied */
	struct rec *rec; /* per request */
	size_t n, rec_cap;
	uint64_t blocks, seen; /* ids; ids seen before */
	uint64_t reusing; /* requests with a leading seen id */
};

struct kv_reuse *kv_reuse_new(void)
{
	struct kv_reuse *r = kv_xcalloc(1, sizeof(*r));

	r->cap = 1 << 16;
	r->tab = kv_xcalloc(r->cap, sizeof(*r->tab));
	return r;
}

void kv_reuse_free(struct kv_reuse *r)
{
	if (!r)
		return;
	free(r->tab);
	free(r->rec);
	free(r);
}

static size_t hash_of(uint64_t k)
{
	k ^= k >> 33;
	k *= 0xff51afd7ed558ccdULL;
	k ^= k >> 33;
	return (size_t)k;
}

/* The slot of id (found, or the empty one it would take). */
static struct slot *find(const struct kv_reuse *r, uint64_t id)
{
	size_t i = hash_of(id) & (r->cap - 1);

	while (r->tab[i].key && r->tab[i].key != id + 1)
		i = (i + 1) & (r->cap - 1);
	return &r->tab[i];
}

static void grow(struct kv_reuse *r)
{
	struct slot *old = r->tab;
	size_t i, n = r->cap;

	r->cap *= 2;
	r->tab = kv_xcalloc(r->cap, sizeof(*r->tab));
	for (i = 0; i < n; i++)
		if (old[i].key)
			*find(r, old[i].key - 1) = old[i];
	free(old);
}

uint32_t kv_reuse_add(struct kv_reuse *r, kv_ns t_ns, uint64_t prompt_tokens,
		      uint64_t output_tokens, const uint64_t *ids, uint32_t n, uint32_t *depth)
{
	uint32_t i, lead = 0, me = (uint32_t)r->n;
	struct rec *x;

	if (r->n == r->rec_cap) {
		r->rec_cap = r->rec_cap ? 2 * r->rec_cap : 1024;
		r->rec = kv_xrealloc(r->rec, r->rec_cap * sizeof(*r->rec));
	}
	x = &r->rec[r->n++];
	x->t_ns = t_ns;
	x->prompt = prompt_tokens;
	x->output = output_tokens;
	x->parent = UINT32_MAX;
	x->root = me;
	x->depth = 0;
	x->n = n;
	while (lead < n && find(r, ids[lead])->key)
		lead++;
	if (lead) {
		uint32_t p = find(r, ids[lead - 1])->req;

		if (2 * (uint64_t)lead >= r->rec[p].n) { /* it continues p, not just p's system prompt */
			x->parent = p;
			x->root = r->rec[p].root;
			x->depth = r->rec[p].depth + 1;
		}
	}
	x->reuse = n ? (double)lead / n : 0;
	r->reusing += lead > 0;
	for (i = 0; i < n; i++) {
		struct slot *s = find(r, ids[i]);

		if (s->key) {
			r->seen++;
		} else {
			s->key = ids[i] + 1;
			if (++r->used * 2 > r->cap) {
				s->req = me;
				grow(r);
				continue;
			}
		}
		s->req = me;
	}
	r->blocks += n;
	if (depth)
		*depth = x->depth;
	return x->root;
}

static int cmp_dbl(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

/* The q-quantile of v[0..n) (sorted here): the order statistic at floor(q n). */
static double quant(double *v, size_t n, double q)
{
	size_t i;

	if (!n)
		return 0;
	qsort(v, n, sizeof(*v), cmp_dbl);
	i = (size_t)(q * (double)n);
	return v[i < n ? i : n - 1];
}

static double mean(const double *v, size_t n)
{
	double s = 0;
	size_t i;

	for (i = 0; i < n; i++)
		s += v[i];
	return n ? s / (double)n : 0;
}

/* Requests per chain into st (turns), and the chains' first prompts. */
static void chains(const struct kv_reuse *r, struct kv_reuse_stats *st, double *v)
{
	uint32_t *len = kv_xcalloc(r->n ? r->n : 1, sizeof(*len));
	size_t i, k = 0, multi = 0, in_multi = 0;

	for (i = 0; i < r->n; i++)
		len[r->rec[i].root]++;
	for (i = 0; i < r->n; i++) {
		if (r->rec[i].parent != UINT32_MAX)
			continue;
		v[k++] = len[i];
		st->turns_max = KV_MAX(st->turns_max, (uint64_t)len[i]);
		if (len[i] > 1) {
			multi++;
			in_multi += len[i];
		}
	}
	st->chains = k;
	st->multi_share = k ? (double)multi / (double)k : 0;
	st->turns_mean = mean(v, k);
	st->turns_multi_mean = multi ? (double)in_multi / (double)multi : 0;
	st->turns_p90 = quant(v, k, 0.9);
	for (i = 0, k = 0; i < r->n; i++)
		if (r->rec[i].parent == UINT32_MAX)
			v[k++] = (double)r->rec[i].prompt;
	st->first_mean = mean(v, k);
	st->first_p50 = quant(v, k, 0.5);
	free(len);
}

/* Parent -> child gaps and prompt growth. */
static void turns(const struct kv_reuse *r, struct kv_reuse_stats *st, double *v)
{
	size_t i, k = 0;

	for (i = 0; i < r->n; i++)
		if (r->rec[i].parent != UINT32_MAX)
			v[k++] = (double)(r->rec[i].t_ns - r->rec[r->rec[i].parent].t_ns) * 1e-9;
	st->gap_mean_s = mean(v, k);
	st->gap_p50_s = quant(v, k, 0.5);
	st->gap_p90_s = quant(v, k, 0.9);
	for (i = 0, k = 0; i < r->n; i++)
		if (r->rec[i].parent != UINT32_MAX)
			v[k++] = (double)r->rec[i].prompt - (double)r->rec[r->rec[i].parent].prompt;
	st->growth_p50 = quant(v, k, 0.5);
}

void kv_reuse_stats(struct kv_reuse *r, struct kv_reuse_stats *st)
{
	double *v = kv_xmalloc((r->n ? r->n : 1) * sizeof(*v));
	size_t i;

	memset(st, 0, sizeof(*st));
	st->requests = r->n;
	st->blocks = r->blocks;
	st->blocks_seen = r->seen;
	st->seen_share = r->blocks ? (double)r->seen / (double)r->blocks : 0;
	for (i = 0; i < r->n; i++)
		v[i] = r->rec[i].reuse;
	st->requests_reusing = r->n ? (double)r->reusing / (double)r->n : 0;
	st->reuse_mean = mean(v, r->n);
	st->reuse_p50 = quant(v, r->n, 0.5);
	st->reuse_p90 = quant(v, r->n, 0.9);
	for (i = 0; i < r->n; i++)
		v[i] = (double)r->rec[i].prompt;
	st->prompt_mean = mean(v, r->n);
	st->prompt_p50 = quant(v, r->n, 0.5);
	st->prompt_p90 = quant(v, r->n, 0.9);
	st->prompt_p99 = quant(v, r->n, 0.99);
	for (i = 0; i < r->n; i++)
		v[i] = (double)r->rec[i].output;
	st->output_mean = mean(v, r->n);
	st->output_p50 = quant(v, r->n, 0.5);
	chains(r, st, v);
	turns(r, st, v);
	free(v);
}
