/*
 * metric_doc.h -- what every column of kvsim's CSVs means: unit, a human
 * label for charts and a one-line definition.
 *
 * The columns themselves come from the tables the writers use
 * (kv_summary_names[] of sim/metrics.c, the headers in output.h), so
 * `kvsim list metrics` lists exactly what is written; this table only
 * documents them, and tests/cli_test.sh fails when a written column has no
 * entry here (kv_metric_doc returns NULL for it).
 */
#ifndef KV_METRIC_DOC_H
#define KV_METRIC_DOC_H

struct kv_metric_doc {
	const char *file; /* summary.csv, tenants.csv, requests.csv, timeseries.csv, tenant_timeseries.csv, health.csv */
	const char *name; /* column name */
	const char *unit; /* unit ("" for a count or a ratio) */
	const char *label; /* a chart's axis label, without the unit */
	const char *def; /* one-line definition */
};

/* The entry of column name in file, or NULL when undocumented. */
const struct kv_metric_doc *kv_metric_doc(const char *file, const char *name);

/* The files kv_metric_doc knows, NULL-terminated, in the order `kvsim list metrics` prints them. */
extern const char *const kv_metric_files[];

/* The columns of file (a NULL-terminated list the writers use), or NULL for an unknown file. */
const char *const *kv_metric_columns(const char *file);

/*
 * "LABEL (UNIT)" or "LABEL" (a count, or a label that already names its
 * unit) for column name of file, in buf; the name itself when undocumented.
 */
const char *kv_metric_axis_label(const char *file, const char *name, char *buf, unsigned len);

/*
 * The chart label of sweep axis key (a --set path such as
 * workload.arrival.rate): words with the unit, and the axis's sense when a
 * larger value means less load; the key itself when kvsim knows no better.
 * A sweep file's `label:` overrides it.
 */
const char *kv_sweep_axis_label(const char *key);

#endif /* KV_METRIC_DOC_H */
