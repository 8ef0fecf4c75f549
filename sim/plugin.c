/* plugin.c -- option defaults and display; see plugin.h. */
#include "plugin.h"

#include <string.h>

/* Stores v into o's field of priv, as its type says. */
static void option_store(const struct kv_option *o, void *priv, double v)
{
	void *f = (char *)priv + o->offset;

	switch (o->type) {
	case KV_OPT_U64:
	case KV_OPT_BYTES:
	case KV_OPT_NS:
		*(uint64_t *)f = (uint64_t)v;
		break;
	case KV_OPT_DBL:
		*(double *)f = v;
		break;
	case KV_OPT_BOOL:
	case KV_OPT_ENUM:
		*(int *)f = (int)v;
		break;
	}
}

void kv_options_defaults(const struct kv_option *opts, void *priv)
{
	for (; opts && opts->name; opts++)
		option_store(opts, priv, opts->def);
}

int kv_option_set(const struct kv_option *opts, void *priv, const char *name, double v)
{
	for (; opts && opts->name; opts++) {
		if (!strcmp(opts->name, name)) {
			option_store(opts, priv, v);
			return 0;
		}
	}
	return KV_EINVAL;
}

const char *kv_option_default_str(const struct kv_option *o, char *buf, size_t len)
{
	switch (o->type) {
	case KV_OPT_BOOL:
		snprintf(buf, len, "%s", o->def ? "true" : "false");
		break;
	case KV_OPT_ENUM:
		snprintf(buf, len, "%s", o->names[(int)o->def]);
		break;
	case KV_OPT_BYTES:
		if (o->def >= (double)KV_MiB && (uint64_t)o->def % KV_MiB == 0)
			snprintf(buf, len, "%lluMiB", (unsigned long long)(o->def / (double)KV_MiB));
		else if (o->def >= (double)KV_KiB && (uint64_t)o->def % KV_KiB == 0)
			snprintf(buf, len, "%lluKiB", (unsigned long long)(o->def / (double)KV_KiB));
		else
			snprintf(buf, len, "%llu", (unsigned long long)o->def);
		break;
	case KV_OPT_NS:
		snprintf(buf, len, "%gms", o->def / 1e6);
		break;
	default:
		snprintf(buf, len, "%g", o->def);
	}
	return buf;
}

const char *kv_option_type_name(enum kv_opt_type t)
{
	static const char *const names[] = { "integer", "number", "bool", "enum", "bytes",
					     "duration" };

	return (unsigned)t < KV_ARRAY_LEN(names) ? names[t] : "?";
}
