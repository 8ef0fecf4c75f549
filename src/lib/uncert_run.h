/*
 * uncert_run.h -- reruns of a loaded workload with no outputs, for how sure
 * a prediction is: the saturation warning's sensitivity to the step time,
 * and `kvsim run --uncertainty N`'s bands.
 *
 * A rerun starts a fresh simulator on a copy of the run's configuration
 * (the workload file is not read again; the arrivals are the same, drawn
 * from the same seed or read from the same trace) with one thing changed:
 * every step's time scaled (kv_sim_config.step_scale), or the device's
 * step-time coefficients drawn from their fitted intervals (sim/uncert.h).
 * Draws come from their own generator seeded by kv_unc_seed(workload
 * seed), so a seed fixes the bands.  Observers and executors are dropped:
 * a rerun only keeps the latency histograms.
 *
 * The bands are the 5th and 95th percentiles over the draws (linear
 * interpolation between order statistics, gsl_stats_quantile_from_sorted_data)
 * of each latency metric; docs/metrics.md "Uncertainty bands" says what
 * they cover.
 */
#ifndef KV_UNCERT_RUN_H
#define KV_UNCERT_RUN_H

#include "../../sim/engine.h"

#include <signal.h>
#include <stdio.h>

/* The latency metrics a band is given for: mean, p50, p90, p99 of TTFT, TPOT, E2E. */
#define KV_BAND_METRICS 12
extern const char *const kv_band_names[KV_BAND_METRICS];

/* The bands of one run. */
struct kv_bands {
	uint32_t draws; /* reruns that gave each band */
	double point[KV_BAND_METRICS]; /* the run's own value, s (NaN: none) */
	double lo[KV_BAND_METRICS]; /* 5th percentile over the draws, s */
	double mid[KV_BAND_METRICS]; /* median over the draws, s */
	double hi[KV_BAND_METRICS]; /* 95th percentile over the draws, s */
};

/* The band metrics of finished run s into v[KV_BAND_METRICS], s (NaN when none). */
void kv_band_metrics(const struct kv_sim *s, double *v);

/*
 * Runs cfg again (observer and executor dropped) and stores its band
 * metrics in v.  stop: polled as kv_sim.stop (may be NULL).  Returns 0 or
 * the run's error code with d filled.
 */
int kv_rerun(const struct kv_sim_config *cfg, volatile sig_atomic_t *stop, double *v,
	     struct kv_diag *d);

/*
 * TTFT p50 (s) of cfg with every step time scaled by 1 - rel and 1 + rel
 * into ttft[0] and ttft[1].  Returns 0 or an error code with d filled.
 */
int kv_sensitivity(const struct kv_sim_config *cfg, double rel, volatile sig_atomic_t *stop,
		   double ttft[2], struct kv_diag *d);

/*
 * n >= 1 reruns of cfg with the device's coefficients drawn from their
 * intervals; point: the run's own metrics (kv_band_metrics).  Fills b.
 * Returns 0 or an error code with d filled.
 */
int kv_bands_run(const struct kv_sim_config *cfg, uint32_t n, const double *point,
		 volatile sig_atomic_t *stop, struct kv_bands *b, struct kv_diag *d);

/*
 * Writes b as DIR/uncertainty.csv (metric, point, p5, p50, p95, draws) and,
 * when chart is set and gnuplot is installed, DIR/uncertainty.png.  Returns
 * 0, or KV_EIO with d filled (the CSV); a failed chart sets *chart_failed.
 */
int kv_bands_write(const struct kv_bands *b, const char *dir, const char *title, int chart,
		   int *chart_failed, struct kv_diag *d);

/* Prints b as a table. */
void kv_bands_print(const struct kv_bands *b, FILE *f);

#endif /* KV_UNCERT_RUN_H */
