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
#  5. sweeps: a numeric x that is not the fastest axis with a by axis (one
#     line per by value: every data block has all 3 x values), a categorical
#     x (bars); an unknown --metric exits 2 listing the valid names.
# Skipped (exit 77) without gnuplot.
# Usage: chart_test.sh KVSIM SOURCE_DIR
set -u
kvsim=$1
src=$2
command -v gnuplot > /dev/null || { echo "gnuplot not installed: skipped"; exit 77; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
pass=0 fail=0
ok() { pass=$((pass + 1)); }
bad() { echo "FAIL: $*"; fail=$((fail + 1)); }

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
else
  cat "$tmp/sw.err"; bad "sweep"
fi

echo "chart: $pass passed, $fail failed"
[ "$fail" = 0 ]
