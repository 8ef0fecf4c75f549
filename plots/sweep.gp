# sweep.gp -- one metric of a `kvsim sweep` against an axis, one line per
# value of a second axis, points averaged over seeds (`smooth unique`); for a
# categorical x axis (scheduler or cache names) clustered bars, the
# categories in their order of first appearance.  Variables (set with -e): file (sweep.csv), out, svg (1:
# SVG), title, xcol, ycol, bycol (column numbers; bycol 0: one line), xname,
# yname, ylabel, byvals (space-separated values of the by column), byname
# (its axis), xvals (the x values, for a categorical axis), numeric (1 when
# x is numeric), logy (1: logarithmic y, for latencies spanning decades),
# statcol (the status column).
if (svg) {
  set terminal svg size 1000,640 font "sans,11" noenhanced
} else {
  set terminal pngcairo size 1000,640 font ",11" noenhanced
}
set output out
set datafile separator ","
set title title
set xlabel xname
set ylabel ylabel
set grid
set key outside right top title byname
if (logy) { set logscale y }
ok(y) = strcol(statcol) eq "ok" ? y : 1/0
# position of a categorical value (1-based), 0 when absent
pos(s) = sum [i=1:words(xvals)] (word(xvals, i) eq s ? i : 0)
if (!numeric) {
  set xrange [0.5:words(xvals) + 0.5]
  set xtics ()
  set for [i=1:words(xvals)] xtics add (word(xvals, i) i)
}
xv(c) = numeric ? column(c) : pos(strcol(c))
if (!numeric) {
  unset logscale y
  set yrange [0:*]
  nby = bycol > 0 ? words(byvals) : 1
  bw = 0.8 / nby
  set boxwidth bw absolute
  set style fill solid 0.75 border -1
  if (bycol > 0) {
    plot for [j=1:nby] file skip 1 using (xv(xcol) - 0.4 + bw * (j - 0.5)):(strcol(bycol) eq word(byvals, j) ? ok(column(ycol)) : 1/0) \
         smooth unique with boxes title word(byvals, j)
  } else {
    plot file skip 1 using (xv(xcol)):(ok(column(ycol))) smooth unique with boxes title yname
  }
} else {
  if (bycol > 0) {
    plot for [v in byvals] file skip 1 using (xv(xcol)):(strcol(bycol) eq v ? ok(column(ycol)) : 1/0) \
         smooth unique with linespoints lw 2 pt 7 title v
  } else {
    plot file skip 1 using (xv(xcol)):(ok(column(ycol))) smooth unique with linespoints lw 2 pt 7 title yname
  }
}
