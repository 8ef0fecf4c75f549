/*
 * cfg_rate.c -- bandwidths in config values (cfg.h kv_cfg_parse_rate): a
 * number and a unit, decimal or binary bytes or decimal bits per second; a
 * bare number is GB/s.  One table for every reader (device profiles'
 * memory and link bandwidths, kv_transfer.bandwidth).  Invariant: a value
 * is accepted only when the whole text is a finite number and one unit.
 */
#include "cfg.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

struct rate_unit {
	const char *name; /* suffix after the number (spaces between allowed) */
	double Bps; /* bytes/s of one unit */
};

static const struct rate_unit rate_units[] = {
	{ "", 1e9 }, /* a plain number is GB/s */
	{ "GB/s", 1e9 },	   { "TB/s", 1e12 },	       { "MB/s", 1e6 },
	{ "GiB/s", 1073741824.0 }, { "TiB/s", 1099511627776.0 }, { "Gb/s", 1e9 / 8 },
	{ "Gbps", 1e9 / 8 },
};

int kv_cfg_parse_rate(const char *s, double *Bps)
{
	char *end;
	double v = strtod(s, &end);
	size_t i;

	if (end == s || !isfinite(v))
		return -1;
	while (*end == ' ')
		end++;
	for (i = 0; i < sizeof(rate_units) / sizeof(rate_units[0]); i++)
		if (!strcmp(end, rate_units[i].name)) {
			*Bps = v * rate_units[i].Bps;
			return 0;
		}
	return -1;
}
