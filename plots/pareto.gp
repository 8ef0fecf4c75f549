# pareto.gp -- kvsim sweep --pareto A,B: every combination of axis values
# (means over seeds) and the Pareto fronts of the two metrics, one line per
# value of the axes outside the front (the load: a front never mixes two).
# Variables from kvsim (src/sweep_report.c): out (the PNG), xm, ym (column
# names), xl, yl (their labels with units, from the metric documentation),
# title (the sweep's name), setup (model, device, scheduler, cache, engine
# of the points), xcol, ycol (their columns in pareto_all.csv), seeds
# (seeds averaged), logy (1: log y axis), xint (1: every x an integer, such
# as GPUs: integer tics), fronts (data file: one block per front, x,y
# sorted by x, two blank lines apart), nf, the arrays flab (each front's
# axis values, in words) and fcount (its points: 0 stays out of the legend).
set terminal pngcairo size 1000,700 font ",11" noenhanced
set output out
set datafile separator ','
# a compact legend below the plot: it never covers data nor takes the plot's width
set key below horizontal center samplen 3
set grid
set title sprintf("sweep %s: Pareto fronts of %s and %s%s\n(each point the mean over %d seed%s; grey: every configuration)", \
  title, xl, yl, strlen(setup) ? "\n".setup : "", seeds, seeds == 1 ? '' : 's')
set xlabel xl
set bmargin 6
set ylabel yl
if (logy) set logscale y; set format y '%g'
if (xint) { set xtics 1; set format x '%.0f' }
set offsets graph 0.05, graph 0.05, graph 0.05, graph 0.05
pts = "6 4 8 12 10 14 7 5 9 13 11 15"
ptj(j) = word(pts, (j - 1) % 12 + 1) + 0
fl(j) = fcount[j] > 0 ? flab[j] : ""
plot 'pareto_all.csv' every ::1 using xcol:ycol with points pt 7 ps 1.2 lc rgb '#bbbbbb' title 'every configuration', \
     for [j=1:nf] fronts index j-1 using 1:2 with linespoints pt ptj(j) ps 2.0 - 0.8 * (j - 1) / (nf > 1 ? nf - 1 : 1) lw 2 dt j lc j title fl(j)
