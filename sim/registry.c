/*
 * registry.c -- the plugin registries: explicit NULL-terminated arrays you
 * can grep, and the one generic lookup over them (plugin.h).  Adding a
 * plugin means one extern line and one entry here.
 */
#include "engine.h"

#include <assert.h>
#include <stdio.h>
#include <string.h>

extern const struct kv_sched_ops kv_sched_fifo, kv_sched_drf, kv_sched_wdrf, kv_sched_vtc,
	kv_sched_preempt, kv_sched_priority;
extern const struct kv_cache_ops kv_cache_full, kv_cache_chunked, kv_cache_quantized,
	kv_cache_sparse, kv_cache_shared;
extern const struct kv_router_ops kv_router_rr, kv_router_lot, kv_router_prefix, kv_router_session;
extern const struct kv_engine_ops kv_engine_vllm, kv_engine_vllm_v0, kv_engine_sglang;

static const struct kv_plugin *const sched_registry[] = {
	&kv_sched_fifo.base,
	&kv_sched_drf.base,
	&kv_sched_wdrf.base,
	&kv_sched_vtc.base,
	&kv_sched_preempt.base,
	&kv_sched_priority.base,
	NULL,
};

static const struct kv_plugin *const cache_registry[] = {
	&kv_cache_full.base,
	&kv_cache_chunked.base,
	&kv_cache_quantized.base,
	&kv_cache_sparse.base,
	&kv_cache_shared.base,
	NULL,
};

static const struct kv_plugin *const router_registry[] = {
	&kv_router_rr.base,
	&kv_router_lot.base,
	&kv_router_prefix.base,
	&kv_router_session.base,
	NULL,
};

static const struct kv_plugin *const engine_registry[] = {
	&kv_engine_vllm.base, /* the default */
	&kv_engine_vllm_v0.base,
	&kv_engine_sglang.base,
	NULL,
};

#define MAX_ADDED 8

static const struct {
	const char *key, *plural, *title; /* YAML key, `kvsim list` word and heading */
	const struct kv_plugin *const *builtin; /* NULL-terminated */
} kinds[KV_PLUGIN_KINDS] = {
	[KV_PLUGIN_SCHED] = { "scheduler", "schedulers", "schedulers (scheduler.name)",
			      sched_registry },
	[KV_PLUGIN_CACHE] = { "cache", "caches", "cache models (cache.name)", cache_registry },
	[KV_PLUGIN_ROUTER] = { "router", "routers", "routers (cluster.router)", router_registry },
	[KV_PLUGIN_ENGINE] = { "engine", "engines", "engines (engine.name)", engine_registry },
};

/* Plugins registered at run time (kv_plugin_add), per kind. */
static const struct kv_plugin *added[KV_PLUGIN_KINDS][MAX_ADDED];
static size_t n_added[KV_PLUGIN_KINDS];

const char *kv_plugin_kind_key(enum kv_plugin_kind k)
{
	assert((unsigned)k < KV_PLUGIN_KINDS);
	return kinds[k].key;
}

const char *kv_plugin_kind_plural(enum kv_plugin_kind k)
{
	assert((unsigned)k < KV_PLUGIN_KINDS);
	return kinds[k].plural;
}

const char *kv_plugin_kind_title(enum kv_plugin_kind k)
{
	assert((unsigned)k < KV_PLUGIN_KINDS);
	return kinds[k].title;
}

const struct kv_plugin *kv_plugin_at(enum kv_plugin_kind k, size_t i)
{
	size_t n = 0;

	assert((unsigned)k < KV_PLUGIN_KINDS);
	while (kinds[k].builtin[n])
		n++;
	if (i < n)
		return kinds[k].builtin[i];
	return i - n < n_added[k] ? added[k][i - n] : NULL;
}

const struct kv_plugin *kv_plugin_find(enum kv_plugin_kind k, const char *name)
{
	const struct kv_plugin *p;
	size_t i;

	for (i = 0; (p = kv_plugin_at(k, i)); i++)
		if (!strcmp(p->name, name))
			return p;
	return NULL;
}

const char *kv_plugin_names(enum kv_plugin_kind k, char *buf, size_t len)
{
	const struct kv_plugin *p;
	size_t i, off = 0;

	if (len)
		buf[0] = 0;
	for (i = 0; (p = kv_plugin_at(k, i)); i++)
		off += (size_t)snprintf(buf + off, off < len ? len - off : 0, "%s%s", i ? ", " : "",
					p->name);
	return buf;
}

int kv_plugin_add(enum kv_plugin_kind k, const struct kv_plugin *p)
{
	assert((unsigned)k < KV_PLUGIN_KINDS && p && p->name);
	if (kv_plugin_find(k, p->name))
		return KV_EINVAL;
	if (n_added[k] == MAX_ADDED)
		return KV_ERANGE;
	added[k][n_added[k]++] = p;
	return 0;
}

const struct kv_sched_ops *kv_sched_find(const char *name)
{
	return (const struct kv_sched_ops *)kv_plugin_find(KV_PLUGIN_SCHED, name);
}

const struct kv_cache_ops *kv_cache_find(const char *name)
{
	return (const struct kv_cache_ops *)kv_plugin_find(KV_PLUGIN_CACHE, name);
}

const struct kv_router_ops *kv_router_find(const char *name)
{
	return (const struct kv_router_ops *)kv_plugin_find(KV_PLUGIN_ROUTER, name);
}

const struct kv_engine_ops *kv_engine_find(const char *name)
{
	return (const struct kv_engine_ops *)kv_plugin_find(KV_PLUGIN_ENGINE, name);
}
