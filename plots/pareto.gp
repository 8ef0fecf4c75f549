# pareto.gp -- kvsim sweep --pareto A,B: every combination of axis values
# (means over seeds) and the Pareto fronts of the two metrics, one line per
# value of the axes outside the front (the load: a front never mixes two).
# Variables from kvsim: out (the PNG), xm, ym (column names), xl, yl (their
# labels with units), title, xcol,
# ycol (their columns in pareto_all.csv), seeds (seeds averaged), logy (1:
# log y axis), fronts (data file: one block per front, x,y sorted by x, two
# blank lines apart), nf and the array flab (each front's axis values).
set terminal pngcairo size 1000,620 noenhanced
set output out
set datafile separator ','
# the legend outside the plot: it never covers data
set key outside right top box title 'Pareto front at'
set grid
set title sprintf("%s: Pareto fronts of %s and %s\n(each point the mean over %d seed%s; grey: every configuration)", title, xm, ym, seeds, seeds == 1 ? '' : 's')
set xlabel xl
set ylabel yl
if (logy) set logscale y; set format y '%g'
set offsets graph 0.05, graph 0.05, graph 0.05, graph 0.05
plot 'pareto_all.csv' every ::1 using xcol:ycol with points pt 7 ps 1.2 lc rgb '#bbbbbb' title 'configurations', \
     for [j=1:nf] fronts index j-1 using 1:2 with linespoints pt 6 ps 1.8 lw 2 lc j title flab[j]
