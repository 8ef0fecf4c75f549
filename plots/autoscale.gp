# autoscale.gp -- the autoscaling chart of a run (autoscale.png): replicas
# over time stacked by state (active, starting, draining) as steps from the
# decisions of autoscale.csv, and, when the run has an slo:, the share of
# requests meeting it in each decision interval on the right axis.  The
# title gives the GPU-hours billed (the last row of the file).
# Variables (-e, from src/lib/chart.c kv_chart_autoscale): file
# (autoscale.csv: t_s, group, active, starting, draining, off, metric, delta,
# slo_attainment, gpu_hours), out, title, with_slo (1: draw the SLO line),
# grp (the group drawn: the first autoscaled one), gpu_hours (its total),
# hours (1: the time axis in hours, else s).
set terminal pngcairo size 1000,520 font ",11" noenhanced
set output out
set datafile separator ","
set datafile missing ""
set title sprintf("%s: replicas over time, %.1f GPU-hours", title, gpu_hours)
unit = hours ? 3600.0 : 1.0
set xlabel (hours ? "time (h)" : "time (s)")
set ylabel "replicas"
set yrange [0:*]
set ytics 1
set grid
set key outside right top box
set style fill solid 1.0 noborder
if (with_slo) {
	set y2label "SLO attainment per interval"
	set y2range [0:1.05]
	set y2tics
	set ytics nomirror
}
# stacked: active at the bottom, then starting, then draining (Okabe-Ito colours)
g0(v) = $2 == grp ? v : 1/0
# the SLO line only with an slo: (a series of no points is an error)
sloline = with_slo ? \
  ", '' skip 1 using ($1/unit):(g0($9)) axes x1y2 with lines lw 1.5 lc rgb '#D55E00' title 'SLO attainment'" : ""
eval("plot file skip 1 using ($1/unit):(g0($3+$4+$5)) with fillsteps lc rgb '#E69F00' title 'draining', " . \
     "'' skip 1 using ($1/unit):(g0($3+$4)) with fillsteps lc rgb '#56B4E9' title 'starting', " . \
     "'' skip 1 using ($1/unit):(g0($3)) with fillsteps lc rgb '#0072B2' title 'active'" . sloline)
