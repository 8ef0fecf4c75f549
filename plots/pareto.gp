# pareto.gp -- kvsim sweep --pareto A,B: every combination of axis values
# (means over seeds) and the Pareto front of the two metrics.  Variables
# from kvsim: out (the PNG), xm, ym (column names), title, xcol, ycol (their
# columns in the CSVs), seeds (seeds averaged), logy (1: log y axis).
set terminal pngcairo size 900,600 noenhanced
set output out
set datafile separator ','
set key outside bottom center horizontal
set grid
set title sprintf("%s: Pareto front of %s and %s\n(each point the mean over %d seed%s)", title, xm, ym, seeds, seeds == 1 ? '' : 's')
set xlabel xm
set ylabel ym
if (logy) set logscale y; set format y '%g'
plot 'pareto_all.csv' every ::1 using xcol:ycol with points pt 7 ps 1.2 lc rgb '#999999' title 'configurations', \
     'pareto.csv' every ::1 using xcol:ycol with linespoints pt 6 ps 1.8 lw 2 lc rgb '#c0392b' title 'Pareto front'
