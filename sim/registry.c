/*
 * registry.c -- the plugin registries: explicit NULL-terminated arrays you
 * can grep.  Adding a plugin means one extern line and one entry here.
 */
#include "engine.h"

#include <string.h>

extern const struct kv_sched_ops kv_sched_fifo, kv_sched_drf, kv_sched_wdrf, kv_sched_vtc,
	kv_sched_preempt;
extern const struct kv_cache_ops kv_cache_full, kv_cache_chunked, kv_cache_quantized,
	kv_cache_sparse, kv_cache_shared;
extern const struct kv_router_ops kv_router_rr, kv_router_lot;

const struct kv_sched_ops *const kv_sched_registry[] = {
	&kv_sched_fifo,
	&kv_sched_drf,
	&kv_sched_wdrf,
	&kv_sched_vtc,
	&kv_sched_preempt,
	NULL,
};

const struct kv_cache_ops *const kv_cache_registry[] = {
	&kv_cache_full,
	&kv_cache_chunked,
	&kv_cache_quantized,
	&kv_cache_sparse,
	&kv_cache_shared,
	NULL,
};

const struct kv_router_ops *const kv_router_registry[] = {
	&kv_router_rr,
	&kv_router_lot,
	NULL,
};

const struct kv_sched_ops *kv_sched_find(const char *name)
{
	size_t i;

	for (i = 0; kv_sched_registry[i]; i++)
		if (!strcmp(kv_sched_registry[i]->name, name))
			return kv_sched_registry[i];
	return NULL;
}

const struct kv_cache_ops *kv_cache_find(const char *name)
{
	size_t i;

	for (i = 0; kv_cache_registry[i]; i++)
		if (!strcmp(kv_cache_registry[i]->name, name))
			return kv_cache_registry[i];
	return NULL;
}

const struct kv_router_ops *kv_router_find(const char *name)
{
	size_t i;

	for (i = 0; kv_router_registry[i]; i++)
		if (!strcmp(kv_router_registry[i]->name, name))
			return kv_router_registry[i];
	return NULL;
}
