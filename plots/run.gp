# run.gp -- the chart of one `kvsim run`: latency CDFs, KV memory, waiting
# and running requests per replica, weighted service per tenant over time.
# Variables (set with -e): dir (run directory), out (output path), title
# (workload name), replicas, tenants (counts), tnames (space-separated
# tenant names), reqs (1 if requests.csv exists), svg (1: SVG, else PNG).
if (svg) {
  set terminal svg size 1800,900 font "sans,10" noenhanced
} else {
  set terminal pngcairo size 1800,900 font ",10" noenhanced
}
set output out
set datafile separator ","
set key autotitle columnhead
set multiplot layout 2,3 title sprintf("kvsim: %s", title)

set title "Latency CDF (completed requests)"
set xlabel "latency (s)"
set ylabel "share of requests"
set logscale x
set grid
set key bottom right
if (reqs) {
  stats dir."/requests.csv" using 10 nooutput
  n_ttft = STATS_records
  stats dir."/requests.csv" using 11 nooutput
  n_tpot = STATS_records
  stats dir."/requests.csv" using 12 nooutput
  n_e2e = STATS_records
  plot dir."/requests.csv" using 10:(1.0/n_ttft) smooth cumulative with lines lw 2 title "TTFT", \
       ""                  using 12:(1.0/n_e2e) smooth cumulative with lines lw 2 title "end-to-end", \
       ""                  using 11:(1.0/n_tpot) smooth cumulative with lines lw 2 title "time per output token"
} else {
  set label 1 "requests.csv disabled" at graph 0.5,0.5 center
  plot NaN notitle
  unset label 1
}
unset logscale x

set title "KV memory reserved (solid) and holding live tokens (dashed)"
set xlabel "simulated time (s)"
set ylabel "GiB"
set key top right
# rows are time-major, replica-minor: `every replicas::i` picks replica i
plot for [i=0:replicas-1] dir."/timeseries.csv" every replicas::i using 1:($6/2**30) with lines lw 1.5 lc i+1 title sprintf("replica %d", i), \
     for [i=0:replicas-1] dir."/timeseries.csv" every replicas::i using 1:($5/2**30) with lines dt 2 lc i+1 notitle

set title "Waiting requests"
set ylabel "requests"
plot for [i=0:replicas-1] dir."/timeseries.csv" every replicas::i using 1:3 with lines lc i+1 title sprintf("replica %d", i)

set title "Running requests (batch)"
set ylabel "requests"
plot for [i=0:replicas-1] dir."/timeseries.csv" every replicas::i using 1:4 with lines lc i+1 title sprintf("replica %d", i)

set title "Weighted service per tenant (input 1, output 2 per token by default)"
set ylabel "service (weighted tokens)"
set key top left
plot for [i=0:tenants-1] dir."/tenant_timeseries.csv" every tenants::i using 1:4 with lines lw 2 lc i+1 title word(tnames, i+1)

set title "Waiting requests per tenant"
set ylabel "requests"
plot for [i=0:tenants-1] dir."/tenant_timeseries.csv" every tenants::i using 1:3 with lines lc i+1 title word(tnames, i+1)
unset multiplot
