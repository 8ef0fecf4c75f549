#!/usr/bin/env bash
# Every chart kind renders (src/lib/chart.c, plots/run.gp, plots/sweep.gp):
# kvsim exits 0 with no gnuplot error, the PNG is whole (signature, IHDR of
# the expected size, IEND) and holds a picture (over 20 KB), for
#  1. a run with one tenant (2 x 2 panels, 1400 x 1000);
#  2. a run with several tenants (2 x 4 panels with per-tenant CDFs, 2000 x 1000);
#  3. 12 replicas (min/median/max bands) and 4000 samples per replica
#     (binned: the SVG stays under 400 KB);
#  4. outputs.requests off (no CDF), and kvsim plot on a run directory (PNG and SVG);
#  4b. SLO lines: a manifest's slo_lines draws limits on the CDFs;
#  4c. outputs.sample_interval 0 (no timeseries): the run exits 0 with a note
#      and no chart, `kvsim plot` exits 2 naming the empty timeseries.csv;
#  5. sweeps: a numeric x that is not the fastest axis with a by axis (one
#     line per by value: every data block has all 3 x values), a categorical
#     x (bars); an unknown --metric exits 2 listing the valid names.
# Skipped (exit 77) without gnuplot.
# Usage: chart_test.sh KVSIM SOURCE_DIR
set -u
kvsim=$1
src=$(cd "$2" && pwd)
command -v gnuplot > /dev/null || { echo "gnuplot not installed: skipped"; exit 77; }
. "$(dirname "$0")/testutil.sh"

# png_ok FILE W H: a whole PNG of W x H pixels, over 20 KB
png_ok() {
  python3 - "$@" <<'PY'
import struct, sys, os
f, w, h = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
b = open(f, "rb").read()
ok = (b[:8] == b"\x89PNG\r\n\x1a\n" and b[12:16] == b"IHDR"
      and struct.unpack(">II", b[16:24]) == (w, h) and b[-8:-4] == b"IEND" and len(b) > 20000)
if not ok:
    print("bad PNG", f, len(b), struct.unpack(">II", b[16:24]) if len(b) > 24 else None)
sys.exit(0 if ok else 1)
PY
}
# run_ok NAME ARGS...: kvsim run into $tmp/NAME, exit 0 and no gnuplot message
run_ok() {
  local name=$1
  shift
  "$kvsim" run "$@" -o "$tmp/$name" -q 2> "$tmp/$name.err"
  local rc=$?
  [ $rc = 0 ] && ! grep -q gnuplot "$tmp/$name.err" || { cat "$tmp/$name.err"; return 1; }
}

w=$(cd "$src/workloads" && pwd)
run_ok one "$w/default.yaml" --set workload.requests=300 && png_ok "$tmp/one/run.png" 1400 1000 &&
  ok || bad "one tenant: chart"
run_ok ten "$w/tenants.yaml" --set workload.requests=300 && png_ok "$tmp/ten/run.png" 2000 1000 &&
  ok || bad "several tenants: chart"
run_ok many "$w/default.yaml" --set workload.requests=2000 --set cluster.replicas=12 \
  --set workload.arrival.rate=20 --set outputs.sample_interval=25ms && png_ok "$tmp/many/run.png" 1400 1000 &&
  ok || bad "12 replicas: chart"
rows=$(($(wc -l < "$tmp/many/timeseries.csv") / 12))
[ "$rows" -gt 2000 ] && ok || bad "12 replicas: expected over 2000 samples per replica, got $rows"
if "$kvsim" plot "$tmp/many" > /dev/null 2> "$tmp/plot.err" && png_ok "$tmp/many/run.png" 1400 1000; then
  size=$(wc -c < "$tmp/many/run.svg")
  [ "$size" -lt 400000 ] && ok || bad "12 replicas: run.svg is $size bytes, expected binned under 400 KB"
  grep -qx "file run.svg" "$tmp/many/manifest.txt" && ok || bad "plot: run.svg not in the manifest"
else
  cat "$tmp/plot.err"; bad "kvsim plot on a run directory"
fi
# SLO lines from the manifest's slo_lines (a per-request limit, percentile limits)
echo "slo_lines ttft_s=2 e2e_p99_s=30 tpot_p90_s=0.05" >> "$tmp/ten/manifest.txt"
"$kvsim" plot "$tmp/ten" > /dev/null && grep -q "TTFT SLO 2 s" "$tmp/ten/run.svg" &&
  grep -q "E2E p99 SLO 30 s" "$tmp/ten/run.svg" && grep -q "TPOT p90 SLO 0.05 s" "$tmp/ten/run.svg" &&
  ok || bad "SLO lines from slo_lines"
run_ok noreq "$w/default.yaml" --set workload.requests=200 --set outputs.requests=false &&
  png_ok "$tmp/noreq/run.png" 1400 1000 && ok || bad "outputs.requests off: chart"
# No timeseries (sample_interval 0): the run exits 0 with its CSVs and a note instead of a
# gnuplot error; kvsim plot names the empty timeseries.csv (exit 2)
"$kvsim" run "$w/default.yaml" --set workload.requests=50 --set outputs.sample_interval=0 \
  -o "$tmp/nots" -q 2> "$tmp/nots.err"
rc=$?
[ $rc = 0 ] && [ -f "$tmp/nots/summary.csv" ] && [ ! -e "$tmp/nots/run.png" ] &&
  grep -q "no run.png: the run has no timeseries samples (outputs.sample_interval: 0)" "$tmp/nots.err" &&
  ! grep -q gnuplot "$tmp/nots.err" && ok || { cat "$tmp/nots.err"; bad "sample_interval 0: exit $rc"; }
"$kvsim" plot "$tmp/nots" > /dev/null 2> "$tmp/nots-plot.err"
rc=$?
[ $rc = 2 ] && grep -q "nots/timeseries.csv: no samples" "$tmp/nots-plot.err" && ok ||
  { cat "$tmp/nots-plot.err"; bad "plot without samples: exit $rc"; }

cat > "$tmp/sw.yaml" <<Y
name: chartsweep
base: $w/tenants.yaml
axes:
  workload.arrival.rate: [2, 4, 8]
  scheduler: [{name: fifo}, {name: vtc}]
seeds: 2
set:
  workload.requests: 100
  outputs.chart: false
  outputs.requests: false
Y
if "$kvsim" sweep "$tmp/sw.yaml" -o "$tmp/sw" -j 1 -q 2> "$tmp/sw.err" && ! grep -q gnuplot "$tmp/sw.err"; then
  png_ok "$tmp/sw/sweep-ttft_p99_s.png" 1100 760 && ok || bad "sweep: default chart"
  # numeric x (the slow axis) by the flow-mapping axis: gnuplot's data file keeps the blocks
  "$kvsim" plot "$tmp/sw" --x workload.arrival.rate --by scheduler --metric e2e_p99_s > /dev/null &&
    png_ok "$tmp/sw/sweep-e2e_p99_s.png" 1100 760 && ok || bad "sweep: --x rate --by scheduler"
  "$kvsim" plot "$tmp/sw" --x scheduler --metric throughput_tok_s > /dev/null &&
    png_ok "$tmp/sw/sweep-throughput_tok_s.png" 1100 760 && ok || bad "sweep: categorical x"
  "$kvsim" plot "$tmp/sw" --metric ttft_p999 2> "$tmp/m.err"
  [ $? = 2 ] && grep -q "unknown metric 'ttft_p999'" "$tmp/m.err" && grep -q " ttft_p99_s " "$tmp/m.err" &&
    ok || bad "unknown --metric: expected exit 2 listing the names"
  # axis labels in words with units, a title naming model, device, scheduler, cache and engine
  svg=$tmp/sw/sweep-e2e_p99_s.svg
  grep -q "arrival rate (requests/s)" "$svg" && grep -q "end-to-end latency p99 (s)" "$svg" &&
    ok || bad "sweep: axis labels with units in $svg"
  grep -q "llama-2-13b on 1 x a100-80g, scheduler fifo/vtc, cache full, engine " "$svg" &&
    ok || bad "sweep: title naming model, device, schedulers, cache and engine"
  grep -q "^workload.arrival.rate,arrival rate (requests/s)$" "$tmp/sw/axis_labels.csv" &&
    ok || bad "sweep: axis_labels.csv"
  # no legend entry for a line with no point: every vtc run failed
  cp -r "$tmp/sw" "$tmp/swe"
  python3 - "$tmp/swe/sweep.csv" <<'PY2'
import csv, sys
rows = list(csv.reader(open(sys.argv[1], newline="")))
h = rows[0]
for r in rows[1:]:
    if "vtc" in r[h.index("scheduler")]:
        r[h.index("status")] = "error"
csv.writer(open(sys.argv[1], "w", newline=""), lineterminator="\n").writerows(rows)
PY2
  "$kvsim" plot "$tmp/swe" --x workload.arrival.rate --by scheduler --metric e2e_p99_s > /dev/null &&
    grep -q ">{name: fifo}<" "$tmp/swe/sweep-e2e_p99_s.svg" && ! grep -q ">{name: vtc}<" "$tmp/swe/sweep-e2e_p99_s.svg" &&
    ok || bad "sweep: a line with no point is in the legend"
  # lines equal at every point: said in the title; a count on integer tics
  python3 - "$tmp/swe/sweep.csv" <<'PY2'
import csv, sys
rows = list(csv.reader(open(sys.argv[1], newline="")))
h = rows[0]
for r in rows[1:]:
    r[h.index("status")] = "ok"
    r[h.index("e2e_p99_s")] = str(float(r[h.index("workload.arrival.rate")]) / 2)
    r[h.index("completed")] = str({"2": 1, "4": 2, "8": 3}[r[h.index("workload.arrival.rate")]])
csv.writer(open(sys.argv[1], "w", newline=""), lineterminator="\n").writerows(rows)
PY2
  "$kvsim" plot "$tmp/swe" --x workload.arrival.rate --by scheduler --metric e2e_p99_s > /dev/null &&
    grep -q "lines {name: fifo} and {name: vtc} coincide" "$tmp/swe/sweep-e2e_p99_s.svg" &&
    ok || bad "sweep: coinciding lines not named"
  "$kvsim" plot "$tmp/swe" --x workload.arrival.rate --by scheduler --metric completed > /dev/null &&
    grep -q "> 2<\|>2<" "$tmp/swe/sweep-completed.svg" && ! grep -q ">[ ]*[0-9]*\.5<" "$tmp/swe/sweep-completed.svg" &&
    ok || bad "sweep: a count (1 to 3) not on integer tics"
else
  cat "$tmp/sw.err"; bad "sweep"
fi

# label: names an axis on the charts; a bad label is an error at its line and column
cat > "$tmp/lab.yaml" <<Y
name: lab
base: $w/default.yaml
axes:
  workload.arrival.time_scale: {values: [1.0, 0.5], label: "trace speed-up (lower = more load)"}
  cluster.replicas: [1, 2]
set:
  workload.requests: 40
  outputs.chart: false
slo: {}
Y
sed -i '/^slo:/d' "$tmp/lab.yaml"
if "$kvsim" sweep "$tmp/lab.yaml" -o "$tmp/lab" -j 1 -q 2> "$tmp/lab.err"; then
  "$kvsim" plot "$tmp/lab" --x workload.arrival.time_scale > /dev/null &&
    grep -q "trace speed-up (lower = more load)" "$tmp/lab/sweep-ttft_p99_s.svg" &&
    grep -q "TTFT p99 against trace speed-up" "$tmp/lab/sweep-ttft_p99_s.svg" &&
    ok || bad "label: not on the chart"
  grep -q ">replicas<\|>replicas:<" "$tmp/lab/sweep-ttft_p99_s.svg" && ok || bad "default label of cluster.replicas"
  "$kvsim" plot "$tmp/lab" > /dev/null && grep -q "arrival time scale\|replicas" "$tmp/lab/sweep-ttft_p99_s.svg" &&
    ok || bad "default sweep chart: axis labels"
else
  cat "$tmp/lab.err"; bad "sweep with label:"
fi
for bad_label in '""' '[a, b]' '"tab\\there"' "\"$(printf 'x%.0s' $(seq 101))\""; do
  sed "s|label: \"trace speed-up (lower = more load)\"|label: $bad_label|" "$tmp/lab.yaml" > "$tmp/bad.yaml"
  "$kvsim" sweep "$tmp/bad.yaml" -o "$tmp/bad" -q 2> "$tmp/bad.err"
  [ $? = 2 ] && grep -q "bad.yaml:4:[0-9]*:.*label" "$tmp/bad.err" && ok ||
    { cat "$tmp/bad.err"; bad "label: $bad_label: expected exit 2 located at line 4"; }
done
sed 's|label: "trace|labl: "trace|' "$tmp/lab.yaml" > "$tmp/bad.yaml"
"$kvsim" sweep "$tmp/bad.yaml" -o "$tmp/bad" -q 2> "$tmp/bad.err"
[ $? = 2 ] && grep -q "bad.yaml:4:" "$tmp/bad.err" && grep -q "labl" "$tmp/bad.err" && ok ||
  { cat "$tmp/bad.err"; bad "axis mapping with an unknown key: expected exit 2"; }

# a unit the label already names is not repeated ("GPUs used", never "GPUs used (GPUs)")
cat > "$tmp/gp.yaml" <<Y
name: gp
base: $w/default.yaml
axes:
  cluster.replicas: [1, 2]
set:
  workload.requests: 40
  outputs.chart: false
  slo: {ttft_p99: 10s}
pareto: [gpus, ttft_p99_s]
Y
if "$kvsim" sweep "$tmp/gp.yaml" -o "$tmp/gp" -j 1 -q 2> "$tmp/gp.err"; then
  png_ok "$tmp/gp/pareto.png" 1000 700 && ok || bad "pareto chart"
  "$kvsim" plot "$tmp/gp" --metric gpus > /dev/null && grep -q ">GPUs used<" "$tmp/gp/sweep-gpus.svg" &&
    ! grep -q "GPUs used (GPUs)" "$tmp/gp/sweep-gpus.svg" && ok || bad "gpus: label 'GPUs used'"
else
  cat "$tmp/gp.err"; bad "sweep with a Pareto front"
fi

# the run chart's title names model, device, scheduler, cache and engine
grep -q "llama-2-13b on 1 x a100-80g, scheduler fifo, cache full, engine " "$tmp/ten/run.svg" &&
  ok || bad "run chart: title without the setup"

# the fit chart (calibrate, validate): only kinds with points in the legend, with counts
if command -v gnuplot > /dev/null; then
  { echo what,a,b,c,d,e,f,measured_ms,fitted_ms
    for i in $(seq 1 60); do echo "replay-full,0,0,0,0,0,0,$i,$((i + i / 10))"; done; } > "$tmp/fit.csv"
  (cd "$tmp" && gnuplot -e "file='fit.csv'; out='fit.png'; title='t'; setup='s'; array cnt[5] = [0, 0, 0, 60, 0]" \
    "$src/plots/calibration.gp" 2> "$tmp/fit.err") && png_ok "$tmp/fit.png" 900 760 && ok ||
    { cat "$tmp/fit.err"; bad "calibration.gp with only replayed batches"; }
fi

echo "chart: $pass passed, $fail failed"
[ "$fail" = 0 ]
