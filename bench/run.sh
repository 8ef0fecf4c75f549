#!/usr/bin/env bash
# Runs a benchmark workload (default: bench/million.yaml) with a release
# build, one thread, and prints wall seconds, simulated requests per wall
# second, iterations per second, events per second and peak RSS.
# usage: bench/run.sh [WORKLOAD.yaml] [kvsim run options...]
# KVSIM=/path/to/kvsim bench/run.sh ... times that binary instead of building
# build-release (for A/B comparisons of two builds, interleaved).
set -euo pipefail
cd "$(dirname "$0")/.."
kvsim=${KVSIM:-}
if [ -z "$kvsim" ]; then
  bash .ci/deps
  [ -f build-release/build.ninja ] || meson setup build-release --buildtype=release -Db_lto=true -Dtests=disabled \
    -Dcuda=disabled >/dev/null  # the simulator alone: a CUDA build's kvsim would run the same
  ninja -C build-release >/dev/null
  kvsim=./build-release/src/kvsim
fi
w=${1:-bench/million.yaml}
shift || true
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
/usr/bin/time -f "%e %M" -o "$out/time" "$kvsim" run -q "$w" -o "$out/run" "$@"
read -r wall rss_kb < "$out/time"
col() { awk -F, -v n="$1" 'NR==1{for(i=1;i<=NF;i++) if($i==n) c=i} NR==2{print $c}' "$out/run/summary.csv"; }
reqs=$(col requests); iters=$(col iterations); events=$(col events)
printf 'workload            %s\n' "$w"
printf 'machine             %s, %s cores\n' "$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')" "$(nproc)"
printf 'wall seconds        %.2f\n' "$wall"
printf 'requests            %d\n' "$reqs"
printf 'requests / wall s   %.0f\n' "$(echo "$reqs / $wall" | bc -l)"
printf 'iterations          %d (%.0f / wall s)\n' "$iters" "$(echo "$iters / $wall" | bc -l)"
printf 'events              %d (%.0f / wall s)\n' "$events" "$(echo "$events / $wall" | bc -l)"
printf 'peak RSS            %.1f MB\n' "$(echo "$rss_kb / 1024" | bc -l)"
