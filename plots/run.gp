# run.gp -- the chart of one `kvsim run` (src/lib/chart.c reduces the CSVs
# first): latency CDFs, KV memory against the pool's capacity, waiting and
# running requests per replica (min/median/max beyond 8 replicas); with
# several tenants, latency CDFs, weighted service and waiting requests per
# tenant.  Variables (a file loaded with -e): out, svg (1: SVG), title
# (workload), setup (model, device, scheduler, cache, engine), replicas,
# bands (1: the ts blocks are min, median, max across replicas), tenants,
# tname[] (legend names), reqs (1: requests.csv exists), completed (requests
# in the CDFs), pool_gib (KV pool per replica, 0 unknown), binnote (how the
# time series average, "" when not), and the data files: cdf (blocks TTFT,
# TPOT, E2E, then TTFT and E2E per tenant: "latency share"), ts (per line
# "t waiting running used_GiB reserved_GiB"), ten (per tenant "t waiting
# service").  The x tics of the CDFs are set by the variables file.
multi = tenants > 1
if (svg) {
  set terminal svg size (multi ? 2000 : 1400),(multi ? 1000 : 1000) font "sans,10" noenhanced
} else {
  set terminal pngcairo size (multi ? 2000 : 1400),(multi ? 1000 : 1000) font ",10" noenhanced
}
set output out
# every legend below its panel: it never covers data
set key below
set grid
# runs written before manifests had a setup line: the workload's name alone
head = strlen(setup) ? sprintf("kvsim run %s: %s", title, setup) : sprintf("kvsim run %s", title)
if (multi) {
  set multiplot layout 2,4 title head
} else {
  set multiplot layout 2,2 title head
}

set title sprintf("Latency CDF, %d completed requests", completed)
set xlabel "latency (s, log scale)" offset 0,0.5
set ylabel "share of completed requests"
set yrange [0:1]
set logscale x
eval xtcmd
# SLOs (slo_req, slo_pct, slo_q: per metric TTFT, TPOT, E2E; 0 none): a per-request limit is
# a dashed vertical line, a percentile limit a diamond at (limit, quantile): the curve must
# pass left of it.  Colours follow the curves'.
sloname(i) = word("TTFT TPOT E2E", i)
do for [i=1:3] {
  if (slo_req[i] > 0) {
    set arrow 10 + i from slo_req[i], graph 0 to slo_req[i], graph 1 nohead dt 2 lw 1.5 lc i front
    set label 10 + i sprintf("%s SLO %g s", sloname(i), slo_req[i]) at slo_req[i], graph 0.02 rotate by 90 offset -0.7,0 tc lt i front
  }
  if (slo_pct[i] > 0) {
    # staggered one line per metric so that two limits close on the x axis do not overwrite
    set label 20 + i sprintf("%s p%g SLO %g s", sloname(i), 100 * slo_q[i], slo_pct[i]) at slo_pct[i], slo_q[i] point pt 12 ps 2 lc i offset 1,-1.2 * i tc lt i front
  }
}
if (reqs && completed > 0) {
  plot cdf index 0 using 1:2 with lines lw 2 title "TTFT (time to first token)", \
       cdf index 1 using 1:2 with lines lw 2 title "TPOT (time per output token)", \
       cdf index 2 using 1:2 with lines lw 2 title "end-to-end"
} else {
  set label 1 (reqs ? "no completed requests" : "outputs.requests is off: no latency CDF") at graph 0.5,0.5 center
  plot NaN notitle
  unset label 1
}
unset arrow
do for [i=11:23] { unset label i }
unset logscale x
set xtics auto
set yrange [*:*]
set xlabel "simulated time (s)" offset 0,0.5

# the time-series panels: one line per replica, or (bands) a min-max band
# and the median across replicas; ts columns then: t, and min med max of
# waiting (2-4), running (5-7), used GiB (8-10), reserved GiB (11-13)
poolt = sprintf("pool capacity per replica, %.1f GiB", pool_gib)
# the binning note on a line of its own: long titles of neighbouring panels must not run together
binline = strlen(binnote) ? "\n".binnote : ""
if (bands) {
  set title sprintf("KV memory reserved over %d replicas%s", replicas, binline)
} else {
  set title "KV memory reserved (solid) and holding live tokens (dashed)".binline
}
set ylabel "GiB"
set yrange [0:*]
set style fill transparent solid 0.3 noborder
if (bands) {
  plot ts index 0 using 1:11:13 with filledcurves lc 1 title "reserved, min to max", \
       ts index 0 using 1:12 with lines lw 2 lc 1 title "reserved, median", \
       ts index 0 using 1:9 with lines dt 2 lw 2 lc 2 title "live tokens, median", \
       (pool_gib > 0 ? pool_gib : 1/0) with lines dt 3 lw 2 lc "black" title poolt
} else {
  plot for [i=0:replicas-1] ts index i using 1:5 with lines lw 1.5 lc i+1 title sprintf("replica %d", i), \
       for [i=0:replicas-1] ts index i using 1:4 with lines dt 2 lc i+1 notitle, \
       (pool_gib > 0 ? pool_gib : 1/0) with lines dt 3 lw 2 lc "black" title poolt
}

# counts tick at integers: every 1 up to 8 requests (gnuplot alone ticks a 0-1 range at 0.2)
inttics(m) = m <= 8 ? sprintf("set ytics 1; set yrange [0:%d]", m < 1 ? 1 : ceil(m)) : "set ytics autofreq; set yrange [0:*]"
do for [panel=0:1] {
  name = panel ? "Running requests (the batch)" : "Waiting requests"
  set ylabel "requests"
  eval inttics(reqmax[panel + 1])
  if (bands) {
    set title sprintf("%s over %d replicas%s", name, replicas, binline)
    plot ts index 0 using 1:(column(2 + 3 * panel)):(column(4 + 3 * panel)) with filledcurves lc 1 title "min to max", \
         ts index 0 using 1:(column(3 + 3 * panel)) with lines lw 2 lc 1 title "median"
  } else {
    set title sprintf("%s per replica%s", name, binline)
    plot for [i=0:replicas-1] ts index i using 1:(column(2 + panel)) with lines lc i+1 dt 1 + i % 5 title sprintf("replica %d", i)
  }
}

set ytics autofreq
if (multi) {
  set title "Latency CDF per tenant\nTTFT (solid), end-to-end (dashed)"
  set xlabel "latency (s, log scale)" offset 0,0.5
  set ylabel "share of the tenant's completed requests"
  set yrange [0:1]
  set logscale x
  eval xtcmd
  if (reqs && completed > 0) {
    plot for [i=0:tenants-1] cdf index 3 + 2 * i using 1:2 with lines lw 2 lc i+1 title tname[i+1], \
         for [i=0:tenants-1] cdf index 4 + 2 * i using 1:2 with lines lw 2 dt 2 lc i+1 notitle
  } else {
    plot NaN notitle
  }
  unset logscale x
  set xtics auto
  set yrange [0:*]
  set ytics autofreq
  set xlabel "simulated time (s)" offset 0,0.5

  set title "Weighted service per tenant\n(input_weight x prefill + output_weight x output tokens)".binline
  set ylabel "service (weighted tokens)"
  set format y "%.1s%c"
  plot for [i=0:tenants-1] ten index i using 1:3 with lines lw 2 lc i+1 dt 1 + i % 5 title tname[i+1]
  set format y "%g"

  set title "Waiting requests per tenant".binline
  set ylabel "requests"
  eval inttics(reqmax[3])
  plot for [i=0:tenants-1] ten index i using 1:2 with lines lc i+1 title tname[i+1]
}
unset multiplot
