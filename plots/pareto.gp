# pareto.gp -- kvsim sweep --pareto A,B: every configuration (means over
# seeds) and the Pareto front of the two metrics.  Variables from kvsim:
# out (the PNG), xm, ym (column names), title, xcol, ycol (their columns).
set terminal pngcairo size 900,600 noenhanced
set output out
set datafile separator ','
set key top right
set grid
set title sprintf('%s: Pareto front of %s and %s', title, xm, ym)
set xlabel xm
set ylabel ym
plot 'pareto_all.csv' every ::1 using xcol:ycol with points pt 7 lc rgb '#999999' title 'configurations', \
     'pareto.csv' every ::1 using xcol:ycol with linespoints pt 7 lw 2 lc rgb '#c0392b' title 'Pareto front'
