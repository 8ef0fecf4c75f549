/*
 * summary_print.c -- a run's summary printed as an aligned table (kvsim run,
 * validate); the figures come from sim/metrics.  See output.h.
 */
#include "output.h"

#include <math.h>
#include <string.h>

void kv_summary_print(const struct kv_summary *sum, const char *title, FILE *f)
{
	size_t i, w = 6;

	for (i = 0; i < sum->n; i++)
		w = KV_MAX(w, strlen(sum->item[i].name));
	fprintf(f, "%s\n", title);
	for (i = 0; i < sum->n; i++) {
		const struct kv_summary_item *it = &sum->item[i];

		if (isnan(it->value))
			fprintf(f, "  %-*s %16s  %s\n", (int)w, it->name, "-", "(not applicable)");
		else if (it->integer)
			fprintf(f, "  %-*s %16.0f  %s\n", (int)w, it->name, it->value, it->unit);
		else
			fprintf(f, "  %-*s %16.6g  %s\n", (int)w, it->name, it->value, it->unit);
	}
}
