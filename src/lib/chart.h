/*
 * chart.h -- the chart of one run (run.png, run.svg) from its CSVs, drawn by
 * plots/run.gp; the data reduced first so that any run charts in seconds
 * (chart.c says how).  Also the fit chart of calibrate and validate
 * (plots/calibration.gp) and the merged setup line a chart over many runs
 * puts in its title.  Every chart's title names the model, device,
 * scheduler, cache and engine it shows.
 */
#ifndef KV_CHART_H
#define KV_CHART_H

#include <stdint.h>
#include <stdio.h>

#define KV_CHART_BINS 1000 /* time-series points per line at most */
#define KV_CHART_MAX_LINES 8 /* replicas drawn one line each; more: min/median/max */

struct kv_chart_run {
	const char *dir; /* the run directory (its CSVs; the chart is written there) */
	const char *title; /* the workload's name */
	const char *setup; /* "MODEL on N x DEVICE, SCHED / CACHE, engine E", or NULL */
	unsigned replicas; /* replicas in timeseries.csv */
	unsigned tenants; /* tenants in tenants.csv */
	const char *tenant_names; /* space-separated, spaces in a name as '_' */
	uint64_t pool_bytes; /* KV pool per replica (summary.csv kv_pool_bytes), 0: unknown */
	int with_requests; /* requests.csv exists (latency CDFs) */
	int svg; /* 1: run.svg, 2: run.png then run.svg from the same reduced data, else run.png */
	double slo_req_s[3]; /* per-request SLO limits on TTFT, TPOT, E2E, s; 0: none */
	double slo_pct_s[3]; /* percentile SLO limits on TTFT, TPOT, E2E, s; 0: none */
	double slo_pct_q[3]; /* their quantiles, e.g. 0.99 */
};

#define KV_CHART_MAX_SLO_LINE 512 /* longest `slo_lines` manifest value */

/*
 * Reads SLO lines for the latency CDFs from text, the value of a run
 * manifest's `slo_lines` line: space-separated NAME=SECONDS, NAME one of
 * ttft_s, tpot_s, e2e_s (a per-request limit: a vertical line) or a summary
 * column such as ttft_p99_s (a percentile limit: a mark at the limit and the
 * quantile).  Unknown names are ignored.  Returns how many were read.
 */
int kv_chart_parse_slo(struct kv_chart_run *c, const char *text);

/*
 * Renders DIR/run.png or run.svg (or both, svg 2); returns as kv_gnuplot (0,
 * 1 gnuplot absent, KV_EIO): with both, the first failure.
 */
int kv_chart_run(const struct kv_chart_run *c);

/*
 * Renders DIR/name, the fit chart of calibrate (STEM-fit.png) and validate
 * (iterations.png), with plots/calibration.gp from DIR/csv (columns what,
 * ..., measured_ms, fitted_ms): predicted against measured iteration time,
 * one marker and colour per kind of point, only the kinds present in the
 * legend, with their counts.  title heads the chart, setup (model, device,
 * backend, engine, scheduler) under it; batches names the decode, prefill
 * and mixed points in the legend ("grid": calibrate's measured grid,
 * "batches": a run's iterations).  Returns as kv_gnuplot.
 */
int kv_chart_fit(const char *dir, const char *csv, const char *name, const char *title,
		 const char *setup, const char *batches);

/*
 * The setups of several runs (manifest `setup` lines: "MODEL on N x DEVICE,
 * scheduler S, cache C, engine E") as one line in buf, for the title of a
 * chart over all of them: merged word by word, a word that differs shown
 * as its values in order of appearance ("scheduler fifo/drf/vtc, ...").
 * Setups of different shapes: the first, marked "(first point; the axes
 * vary it)".  n 0 or no setup: "".
 */
void kv_chart_merge_setups(const char *const *setups, size_t n, char *buf, size_t len);

/*
 * Writes `set AXIStics ('1' 1, ...)` without a line end: 1, 2 and 5 times the
 * powers of ten around [lo, hi] (gnuplot's log axes tick once a decade, so
 * never inside one); nothing when lo <= 0 or hi < lo.
 */
void kv_gp_log_tics(FILE *g, const char *axis, double lo, double hi);

/*
 * Renders DIR/autoscale.png from DIR/autoscale.csv with plots/autoscale.gp:
 * group `group`'s replicas over time stacked by state, its GPU-hours in the
 * title, and with with_slo the SLO attainment per decision interval; the
 * time axis in hours when the run lasted end_s >= 2 h.  Returns as
 * kv_gnuplot.
 */
int kv_chart_autoscale(const char *dir, const char *title, int with_slo, unsigned group,
		       double gpu_hours, double end_s);

#endif /* KV_CHART_H */
