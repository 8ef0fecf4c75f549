# calibration.gp -- `kvsim calibrate`'s fit: every measured iteration against
# the fitted perf model's prediction, log-log, one colour per kind of point
# (decode grid, prefill grid, mixed grid, replayed batches), with y = x and
# +-10% guides.  Also renders `kvsim validate`'s iterations.csv (same
# columns: what, ..., measured_ms, fitted_ms).  Variables (-e): file, out,
# and optionally title.
set terminal pngcairo size 900,700 font ",11" noenhanced
set output out
set datafile separator ","
if (!exists("title")) title = "perf model fit: predicted vs measured iteration time"
set title title
set xlabel "measured (ms)"
set ylabel "predicted (ms)"
set logscale xy
set grid
set key left top
set size square
kinds = "decode prefill mixed replay-full replay-chunked"
kind(s) = strstrt(s, "replay-full") ? 4 : strstrt(s, "replay-chunked") ? 5 : \
          strstrt(s, "decode") ? 1 : strstrt(s, "prefill") ? 2 : 3
sel(k, v) = kind(strcol(1)) == k ? v : 1/0
plot for [k=1:words(kinds)] file skip 1 using 8:(sel(k, $9)) with points pt 7 ps 0.6 title word(kinds, k), \
     x with lines lc rgb "black" dt 1 title "y = x", \
     1.1 * x with lines lc rgb "gray" dt 2 title "+-10%", \
     0.9 * x with lines lc rgb "gray" dt 2 notitle
