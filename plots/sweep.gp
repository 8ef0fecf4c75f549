# sweep.gp -- one metric of a `kvsim sweep` against an axis, one line per
# value of a second axis, points averaged over seeds (`smooth unique`); for a
# categorical x axis (scheduler or cache names) clustered bars, the
# categories in their order of first appearance.  kvsim plot reads sweep.csv
# (its quoted fields: gnuplot's strcol() cuts them at a comma) and runs
# `gnuplot VARS sweep.gp`, VARS setting: file (whitespace-separated rows of
# the ok points: x, by index 1..nby or 0, metric; x is the value when
# numeric, else its position 1..nx), out, svg (1: SVG), title, xname, yname,
# ylabel, byname (the by axis, "" for none), numeric (1 when x is numeric),
# logy (1: logarithmic y, for latencies spanning decades), nx and the array
# xlab (the x values), nby and the array bylab (the by values; 0: one line).
if (svg) {
  set terminal svg size 1000,640 font "sans,11" noenhanced
} else {
  set terminal pngcairo size 1000,640 font ",11" noenhanced
}
set output out
set title title
set xlabel xname
set ylabel ylabel
set grid
set key outside right top title byname
if (logy) { set logscale y }
if (!numeric) {
  set xrange [0.5:nx + 0.5]
  set xtics ()
  set for [i=1:nx] xtics add (xlab[i] i)
}
if (!numeric) {
  unset logscale y
  set yrange [0:*]
  bw = 0.8 / (nby > 0 ? nby : 1)
  set boxwidth bw absolute
  set style fill solid 0.75 border -1
  if (nby > 0) {
    plot for [j=1:nby] file using ($1 - 0.4 + bw * (j - 0.5)):($2 == j ? $3 : 1/0) \
         smooth unique with boxes title bylab[j]
  } else {
    plot file using 1:3 smooth unique with boxes title yname
  }
} else {
  if (nby > 0) {
    plot for [j=1:nby] file using 1:($2 == j ? $3 : 1/0) \
         smooth unique with linespoints lw 2 pt 7 title bylab[j]
  } else {
    plot file using 1:3 smooth unique with linespoints lw 2 pt 7 title yname
  }
}
