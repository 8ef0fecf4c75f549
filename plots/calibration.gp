# calibration.gp -- the fit chart of `kvsim calibrate` (STEM-fit.png) and
# `kvsim validate` (iterations.png): every measured iteration against the
# perf model's prediction, log-log, with y = x and +-10% guides.  One colour
# and marker per kind of point (decode grid, prefill grid, mixed grid,
# replayed batches: full and chunked cache); the many replayed batches are
# drawn first, and any kind of over 100 points small, hollow and
# translucent, so the few grid points show over them.
# Variables (-e, from src/lib/chart.c kv_chart_fit): file (what, ...,
# measured_ms in column 8, fitted_ms in 9), out, title, setup (model,
# device, backend, engine, scheduler), batches (what the decode, prefill and
# mixed points are: "grid" in a calibration, "batches" of a validation run),
# cnt[5] (points per kind: a kind with none stays out of the legend).
set terminal pngcairo size 900,760 font ",11" noenhanced
set output out
set datafile separator ","
set title title.(strlen(setup) ? "\n".setup : "")
set xlabel "measured iteration time (ms)"
set ylabel "predicted iteration time (ms)"
set logscale xy
set format xy "%g"
set grid
# compact, inside the empty upper-left corner (the points lie along y = x)
set key inside left top box opaque samplen 2 spacing 1.1
set size square
if (!exists("batches")) batches = "grid"
kname(k) = k == 1 ? "decode ".batches : k == 2 ? "prefill ".batches : k == 3 ? "mixed ".batches : \
           k == 4 ? "replayed batches, full cache" : "replayed batches, chunked cache"
kind(s) = strstrt(s, "replay-full") ? 4 : strstrt(s, "replay-chunked") ? 5 : \
          strstrt(s, "decode") ? 1 : strstrt(s, "prefill") ? 2 : 3
sel(k, v) = kind(strcol(1)) == k ? v : 1/0
# colours told apart in print and by colour-blind readers (Okabe-Ito), translucent for the replays
# a kind of over 100 points (replays; a validation's decode batches) small, hollow and translucent:
# the points under it show through
array rgb[5] = ["0072B2", "D55E00", "009E73", "CC79A7", "E69F00"]
array ptfull[5] = [7, 5, 9, 6, 4]
array pthollow[5] = [6, 4, 8, 6, 4]
many(k) = cnt[k] > 100
colk(k) = (many(k) ? "#60" : "#").rgb[k]
ptk(k) = many(k) ? pthollow[k] : ptfull[k]
psk(k) = many(k) ? 0.7 : 1.3
ktitle(k) = cnt[k] > 0 ? sprintf("%s (%d)", kname(k), cnt[k]) : ""
plot for [k in "4 5 1 2 3"] file skip 1 using 8:(sel(k+0, $9)) with points pt ptk(k+0) ps psk(k+0) lc rgb colk(k+0) title ktitle(k+0), \
     x with lines lc rgb "black" dt 1 title "y = x", \
     1.1 * x with lines lc rgb "gray40" dt 2 title "±10%", \
     0.9 * x with lines lc rgb "gray40" dt 2 notitle
