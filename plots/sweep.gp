# sweep.gp -- one metric of a `kvsim sweep` against an axis, one line per
# value of a second axis; for a categorical x axis (scheduler or cache names)
# clustered bars, the categories in their order of first appearance.
# kvsim plot reads sweep.csv (its quoted fields: gnuplot's strcol() cuts them
# at a comma), averages the runs of each point itself and runs
# `gnuplot VARS sweep.gp`, VARS setting: file (one block per by value, two
# blank lines apart, rows: x, mean, min, max, runs; x is the value when
# numeric, sorted, else its position 1..nx), out, svg (1: SVG), title, xname,
# yname, ylabel (the metric's label with its unit), byname (the by axis, ""
# for none), note (how points average, "" when each is one run), numeric
# (1 when x is numeric), logy (1: logarithmic y, for latencies spanning
# decades; VARS then sets the y tics), spread (1: draw min-max bars), nx and
# the array xlab (the x values), nby and the array bylab (the by values);
# nlim and the arrays lim, limlab (horizontal lines: target conditions and
# SLO limits on this metric, dashed, with their legend entries), nmark and
# marklab (the chosen points, cheapest meeting the target, in the data
# file's last block: x, y), ylo and yhi (the data's and the limits' range);
# xlabel and bylabel (the axes' names in words, axis_labels.csv), setup
# (model, device, scheduler, cache, engine of the points), bycount (points
# per by value: 0 keeps it out of the legend), xint and yint (1: every x or
# y value an integer: integer tics), conote (lines that coincide, "").
# Each line has its own marker, dash and marker size (smaller for later
# lines), so lines that coincide stay visible, and the note says so.
if (svg) {
  set terminal svg size 1100,760 font "sans,11" noenhanced
} else {
  set terminal pngcairo size 1100,760 font ",11" noenhanced
}
set output out
head = title.(strlen(setup) ? "\n".setup : "")
head = head.(strlen(note) ? "\n".note : "")
head = head.(strlen(conote) ? "\n".conote : "")
set title head
set xlabel xlabel offset 0,0.4
set ylabel ylabel
set grid
# a compact legend below the plot: it never covers data nor takes the plot's width
# (its heading a first entry: gnuplot 5.4 draws a below key's title over the x label)
set key below horizontal center samplen 3
HEAD = "keyentry with points pt -1 lc rgb '#ffffff' title (strlen(bylabel) ? bylabel.':' : ''),"
if (logy) { set logscale y; set mytics 10 }
# counts: integer tics (gnuplot would tick a range of 1 to 4 at every 0.5)
if (yint && !logy) { set format y "%.0f"; if (yhi - (ylo < 0 ? ylo : 0) <= 10) { set ytics 1 } }
# the limits stay in view: gnuplot autoscales on the data alone
if (nlim > 0) { if (logy) { set yrange [ylo / 1.5:yhi * 1.5] } else { set yrange [*:yhi + 0.08 * (yhi - (ylo < 0 ? ylo : 0))] } }
ng = nby > 0 ? nby : 1
# per line j: marker, dash, marker size (later lines smaller, drawn over the earlier: both seen)
pts = "7 5 9 13 11 15 6 4 8 12 10 14"
ptj(j) = word(pts, (j - 1) % 12 + 1) + 0
psj(j) = 2.0 - 0.9 * (j - 1) / (ng > 1 ? ng - 1 : 1)
LIMITS = "for [i=1:nlim] lim[i] with lines dt 2 lw 2 lc rgb '#c0392b' title limlab[i]"
MARKS = "for [k=1:(nmark > 0)] file index ng using 1:2 with points pt 6 ps 4 lw 3 lc rgb 'black' title marklab"
set samples 2
lt(j) = bycount[j] == 0 ? "" : nby > 0 ? bylab[j] : yname
if (!numeric) {
  set xrange [0.5:nx + 0.5]
  set xtics ()
  set for [i=1:nx] xtics add (xlab[i] i)
  unset logscale y
  if (nlim > 0) { set yrange [0:yhi * 1.08] } else { set yrange [0:*] }
  bw = 0.8 / ng
  set boxwidth bw absolute
  set style fill solid 0.75 border -1
  if (spread) {
    plot @HEAD for [j=1:ng] file index j-1 using ($1 - 0.4 + bw * (j - 0.5)):2 with boxes lc j title lt(j), \
         for [j=1:ng] file index j-1 using ($1 - 0.4 + bw * (j - 0.5)):2:3:4 with yerrorbars lc rgb "#404040" lw 1 pt 7 ps 0.5 notitle, \
         @LIMITS, @MARKS
  } else {
    plot @HEAD for [j=1:ng] file index j-1 using ($1 - 0.4 + bw * (j - 0.5)):2 with boxes lc j title lt(j), \
         @LIMITS, @MARKS
  }
} else {
  # tics at the swept values (up to 12), and room so that points at the ends are not cut
  if (nx <= 12) { set xtics (); set for [i=1:nx] xtics add (xlab[i] xlab[i] + 0) } else { if (xint) { set format x "%.0f" } }
  set offsets graph 0.04, graph 0.04, 0, 0
  if (spread) {
    plot @HEAD for [j=1:ng] file index j-1 using 1:2:3:4 with yerrorlines lw 2 dt j pt ptj(j) ps psj(j) lc j title lt(j), \
         @LIMITS, @MARKS
  } else {
    plot @HEAD for [j=1:ng] file index j-1 using 1:2 with linespoints lw 2 dt j pt ptj(j) ps psj(j) lc j title lt(j), \
         @LIMITS, @MARKS
  }
}
