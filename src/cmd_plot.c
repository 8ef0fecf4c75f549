/*
 * cmd_plot.c -- `kvsim plot DIR`: renders the charts of a run directory
 * (run.png and run.svg) from its CSVs, without the user writing gnuplot.
 */
#include "commands.h"
#include "output.h"

#include <stdio.h>
#include <string.h>
#include <unistd.h>

/* Reads the first field of the second line of DIR/name into buf (the workload name). */
static int first_field(const char *dir, const char *name, char *buf, size_t len)
{
	char path[1200], line[4096];
	FILE *f;
	int ok = 0;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	f = fopen(path, "r");
	if (!f)
		return 0;
	if (fgets(line, sizeof(line), f) && fgets(line, sizeof(line), f)) {
		size_t n = strcspn(line, ",\n");

		n = n < len - 1 ? n : len - 1;
		memcpy(buf, line, n);
		buf[n] = 0;
		ok = 1;
	}
	fclose(f);
	return ok;
}

/* Replicas in timeseries.csv: the largest replica index plus one. */
static unsigned count_replicas(const char *dir)
{
	char path[1200], line[512];
	unsigned n = 0, r;
	FILE *f;

	snprintf(path, sizeof(path), "%s/timeseries.csv", dir);
	if (!(f = fopen(path, "r")))
		return 0;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "%*[^,],%u", &r) == 1 && r + 1 > n)
			n = r + 1;
	fclose(f);
	return n;
}

/* Tenant names from tenants.csv, space-separated (spaces inside a name as '_'). */
static unsigned tenant_names(const char *dir, char *buf, size_t len)
{
	char path[1200], line[1024];
	unsigned n = 0;
	size_t off = 0;
	FILE *f;

	buf[0] = 0;
	snprintf(path, sizeof(path), "%s/tenants.csv", dir);
	if (!(f = fopen(path, "r")))
		return 0;
	if (fgets(line, sizeof(line), f)) {
		while (fgets(line, sizeof(line), f) && off + 2 < len) {
			char *c;

			line[strcspn(line, ",\n")] = 0;
			for (c = line; *c; c++)
				if (*c == ' ')
					*c = '_';
			off += (size_t)snprintf(buf + off, len - off, "%s%s", n ? " " : "", line);
			n++;
		}
	}
	fclose(f);
	return n;
}

int kv_cmd_plot(int argc, char **argv)
{
	char title[256], names[2048], path[1200];
	const char *dir;
	unsigned replicas, tenants;
	int rc;

	if (argc != 2 || !strcmp(argv[1], "--help") || !strcmp(argv[1], "-h")) {
		fputs("usage: kvsim plot DIR\n\n"
		      "Renders DIR/run.png and DIR/run.svg from the CSVs of a `kvsim run` output\n"
		      "directory: latency CDFs (TTFT, TPOT, E2E), KV memory reserved and live,\n"
		      "waiting and running requests per replica, weighted service and waiting\n"
		      "requests per tenant over time.  Needs gnuplot.\n",
		      argc == 2 ? stdout : stderr);
		return argc == 2 ? 0 : 2;
	}
	dir = argv[1];
	if (!first_field(dir, "summary.csv", title, sizeof(title)) ||
	    !(replicas = count_replicas(dir))) {
		fprintf(stderr, "kvsim: plot: %s: expected a run directory with summary.csv and timeseries.csv\n", dir);
		return 2;
	}
	tenants = tenant_names(dir, names, sizeof(names));
	snprintf(path, sizeof(path), "%s/requests.csv", dir);
	rc = kv_plot_run(dir, title, replicas, tenants, names, access(path, R_OK) == 0, 0);
	if (!rc)
		rc = kv_plot_run(dir, title, replicas, tenants, names, access(path, R_OK) == 0, 1);
	if (rc)
		return 1;
	printf("charts in %s/run.png and %s/run.svg\n", dir, dir);
	return 0;
}
