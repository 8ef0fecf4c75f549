# uncertainty.gp -- the chart of `kvsim run --uncertainty N`
# (src/lib/uncert_run.c): each latency metric's point estimate and its 5-95%
# band over N draws of the step-time coefficients, on a log axis.
# Variables (gnuplot -e): out, title (workload), draws, dat (per line
# "index name point p5 p50 p95", seconds).
set terminal pngcairo size 1200,600 font ",10" noenhanced
set output out
set title sprintf("kvsim run %s: 5-95%% band over %d draws of the step-time coefficients", title, draws)
set key below
set grid ytics
set logscale y
set ylabel "latency (s)"
set xtics rotate by -30 nomirror
set offsets 0.5, 0.5, 0, 0
set bars 4
plot dat using 1:4:4:6:6:xtic(2) with candlesticks whiskerbars lw 2 lc rgb "#4477aa" title "5-95% band", \
     dat using 1:5 with points pt 1 ps 2 lc rgb "#4477aa" title "median draw", \
     dat using 1:3 with points pt 7 ps 1.2 lc rgb "#cc3311" title "point estimate"
