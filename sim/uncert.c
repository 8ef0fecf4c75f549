/*
 * uncert.c -- coefficient intervals and draws (uncert.h).
 */
#include "uncert.h"

#include <gsl/gsl_randist.h>
#include <math.h>
#include <string.h>

#define KV__UNC_ROW(key, field, kind, rel, abs) \
	{ #key, offsetof(struct kv_device, field), kind, rel, abs },
const struct kv_unc_coef kv_unc_coefs[] = { KV_UNC_COEFS(KV__UNC_ROW) };
#undef KV__UNC_ROW
const size_t kv_unc_n = sizeof(kv_unc_coefs) / sizeof(kv_unc_coefs[0]);

_Static_assert(sizeof(kv_unc_coefs) / sizeof(kv_unc_coefs[0]) <= KV_UNC_MAX,
	       "KV_UNC_MAX (profile.h) below the rows of KV_UNC_COEFS");

int kv_unc_find(const char *name)
{
	size_t i;

	for (i = 0; i < kv_unc_n; i++)
		if (!strcmp(kv_unc_coefs[i].name, name))
			return (int)i;
	return -1;
}

const char *kv_unc_names(void)
{
	static char buf[512];
	size_t i, n = 0;

	for (i = 0; i < kv_unc_n && n < sizeof(buf); i++)
		n += (size_t)snprintf(buf + n, sizeof(buf) - n, "%s%s", i ? ", " : "",
				      kv_unc_coefs[i].name);
	return buf;
}

void kv_unc_defaults(struct kv_device *dev)
{
	size_t i;

	for (i = 0; i < kv_unc_n; i++) {
		dev->unc.rel_sd[i] = kv_unc_coefs[i].rel_sd;
		dev->unc.abs_sd_ns[i] = kv_unc_coefs[i].abs_sd_ns;
	}
}

/* value * exp(r*z1) + a*z2, clipped to the kind's range; a share of 0 stays 0 (eff_attn unset). */
static double draw_one(double v, enum kv_unc_kind kind, double r, double a, double z1, double z2)
{
	if (kind == KV_UNC_SHARE && v <= 0)
		return v;
	v = v * exp(r * z1) + a * z2;
	if (kind == KV_UNC_SHARE)
		return fmin(fmax(v, 1e-6), 1.0);
	return fmax(round(v), 0.0);
}

void kv_unc_draw(const struct kv_device *dev, gsl_rng *rng, struct kv_device *out)
{
	size_t i;

	*out = *dev;
	for (i = 0; i < kv_unc_n; i++) {
		const struct kv_unc_coef *c = &kv_unc_coefs[i];
		double z1 = gsl_ran_gaussian_ziggurat(rng, 1.0), z2 = gsl_ran_gaussian_ziggurat(rng, 1.0);
		char *p = (char *)out + c->offset;

		if (c->kind == KV_UNC_SHARE) {
			double v;

			memcpy(&v, p, sizeof(v));
			v = draw_one(v, c->kind, dev->unc.rel_sd[i], 0, z1, z2);
			memcpy(p, &v, sizeof(v));
		} else {
			kv_ns ns;

			memcpy(&ns, p, sizeof(ns));
			ns = (kv_ns)draw_one((double)ns, c->kind, dev->unc.rel_sd[i],
					     dev->unc.abs_sd_ns[i], z1, z2);
			memcpy(p, &ns, sizeof(ns));
		}
	}
}

unsigned long kv_unc_seed(uint64_t seed)
{
	uint64_t h = seed ^ 0x9e3779b97f4a7c15ULL; /* a stream apart from the arrivals' (seed ^ seed >> 32) */

	h = (h ^ (h >> 30)) * 0xbf58476d1ce4e5b9ULL;
	h = (h ^ (h >> 27)) * 0x94d049bb133111ebULL;
	h ^= h >> 31;
	return (unsigned long)(h & 0xffffffffUL);
}

void kv_unc_draw_host(const struct kv_host_profile *hp, gsl_rng *rng, struct kv_host_profile *out)
{
	int i;

	*out = *hp;
	for (i = 0; i < KV_HOST_NCOEF; i++)
		out->unc_z[i] = gsl_ran_gaussian(rng, 1.0);
}
