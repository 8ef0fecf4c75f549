#!/usr/bin/env bash
# Macro-stepping and fleet-scale benchmarks (issue 16), and the docs they feed.
#
#   bench/scaling.sh run [CASE...]   runs the cases (default: all but fleet-44m) with a
#                                    release build, one thread each, one after another, and
#                                    records one row per case in bench/scaling.csv
#   bench/scaling.sh doc             writes the table between the scaling markers of
#                                    docs/benchmarks.md and docs/bench-scaling.png (gnuplot)
#
# Cases (fleet.yaml: Llama-2-7B on A100-80GB, fifo + chunked, least-outstanding-tokens,
# Azure conversation lengths, Poisson, requests.csv off; million.yaml: see its header):
#   million, million-exact         bench/million.yaml (1M requests, 16 replicas), macro / --exact-steps
#   fleet-5m, fleet-5m-exact       5M requests, 1,000 replicas, 2,500 req/s (the issue's case)
#   fleet-1m, fleet-10m, fleet-44m 1M / 10M / 44M requests, 1,000 replicas, 509.3 req/s (a day)
#   rep-16, rep-10000              1M requests on 16 / 10,000 replicas at 0.5093 req/s per replica
#   tenants-S, tenants-S-exact     bench/million-tenants.yaml (1M requests, 16 replicas, eight
#                                  tenants) under scheduler S = drf, vtc or preempt, macro / exact
#   msat, msat-exact               bench/million.yaml at 80 req/s, 200,000 requests: memory-bound and
#                                  saturated (full reserves 2 GiB a request; the queue's head is
#                                  refused memory at most steps), macro / --exact-steps
#   sglang, sglang-exact           bench/million.yaml under engine sglang, macro / --exact-steps
# Columns: case, requests, replicas, mode, wall_s, user_s, rss_mb, events, macro_steps, req_per_wall_s.
# KVSIM=path times that binary instead of build-release/src/kvsim.
set -euo pipefail
cd "$(dirname "$0")/.."
csv=bench/scaling.csv
all=(million million-exact fleet-5m fleet-5m-exact fleet-1m fleet-10m rep-16 rep-10000
     tenants-drf tenants-drf-exact tenants-vtc tenants-vtc-exact tenants-preempt tenants-preempt-exact
     msat msat-exact sglang sglang-exact)

args_of() {
  case $1 in
    million) echo "bench/million.yaml" ;;
    million-exact) echo "bench/million.yaml --exact-steps" ;;
    fleet-5m) echo "bench/fleet.yaml --set workload.requests=5000000 --set workload.arrival.rate=2500" ;;
    fleet-5m-exact) echo "bench/fleet.yaml --set workload.requests=5000000 --set workload.arrival.rate=2500 --exact-steps" ;;
    fleet-1m) echo "bench/fleet.yaml --set workload.requests=1000000" ;;
    fleet-10m) echo "bench/fleet.yaml --set workload.requests=10000000" ;;
    fleet-44m) echo "bench/fleet.yaml" ;;
    rep-16) echo "bench/fleet.yaml --set workload.requests=1000000 --set cluster.replicas=16 --set workload.arrival.rate=8.1488" ;;
    rep-10000) echo "bench/fleet.yaml --set workload.requests=1000000 --set cluster.replicas=10000 --set workload.arrival.rate=5093" ;;
    msat) echo "bench/million.yaml --set workload.requests=200000 --set workload.arrival.rate=80" ;;
    msat-exact) echo "bench/million.yaml --set workload.requests=200000 --set workload.arrival.rate=80 --exact-steps" ;;
    sglang) echo "bench/million.yaml --set engine=sglang" ;;
    sglang-exact) echo "bench/million.yaml --set engine=sglang --exact-steps" ;;
    tenants-drf|tenants-vtc|tenants-preempt) echo "bench/million-tenants.yaml --set scheduler.name=${1#tenants-}" ;;
    tenants-*-exact) local s=${1#tenants-}; echo "bench/million-tenants.yaml --set scheduler.name=${s%-exact} --exact-steps" ;;
    *) echo "unknown case $1" >&2; return 2 ;;
  esac
}

run_case() {
  local c=$1 a out col mode
  a=$(args_of "$c")
  out=$(mktemp -d)
  # shellcheck disable=SC2086
  KVSIM_MACRO_STATS=1 /usr/bin/time -f "%e %U %M" -o "$out/time" "$kvsim" run -q $a -o "$out/run" \
    --set outputs.chart=false 2>"$out/err" >/dev/null
  read -r wall user rss_kb < "$out/time"
  col() { awk -F, -v n="$1" 'NR==1{for(i=1;i<=NF;i++) if($i==n) c=i} NR==2{print $c}' "$out/run/summary.csv"; }
  local reqs events reps macro
  reqs=$(col requests); events=$(col events)
  reps=$(awk '/^  replicas:/ {print $2; exit}' "${a%% *}")
  [[ $a =~ cluster.replicas=([0-9]+) ]] && reps=${BASH_REMATCH[1]}
  macro=$(sed -n 's/^kvsim: macro steps: \([0-9]*\) of .*/\1/p' "$out/err")
  mode=macro; [[ $a == *--exact-steps* ]] && mode=exact
  rm -rf "$out"
  touch "$csv"
  grep -v "^$c," "$csv" > "$csv.tmp" || true
  [ -s "$csv.tmp" ] || echo "case,requests,replicas,mode,wall_s,user_s,rss_mb,events,macro_steps,req_per_wall_s" > "$csv.tmp"
  printf '%s,%s,%s,%s,%s,%s,%.0f,%s,%s,%.0f\n' "$c" "$reqs" "$reps" "$mode" "$wall" "$user" \
    "$(echo "$rss_kb / 1024" | bc -l)" "$events" "$macro" "$(echo "$reqs / $wall" | bc -l)" >> "$csv.tmp"
  { head -1 "$csv.tmp"; tail -n +2 "$csv.tmp" | sort; } > "$csv"
  rm -f "$csv.tmp"
  echo "$c: $wall s wall, $user s user, $rss_kb KB"
}

doc() {
  local md=docs/benchmarks.md tab
  [ -f "$csv" ] || { echo "no $csv: run first" >&2; exit 1; }
  tab=$(mktemp)
  {
    echo "Machine: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), $(nproc) cores,"
    echo "a VM shared with other jobs: wall time varies with their load; user CPU seconds are the"
    echo "steadier figure. Rows from \`bench/scaling.csv\` (\`bash bench/scaling.sh run\`)."
    echo
    echo "| case | requests | replicas | engine | wall s | user s | req / wall s | req / user s | peak RSS MB | events | in macro steps |"
    echo "|---|---:|---:|---|---:|---:|---:|---:|---:|---:|---:|"
    tail -n +2 "$csv" | awk -F, '{ printf "| %s | %d | %d | %s | %.1f | %.1f | %.0f | %.0f | %d | %.0f | %.0f%% |\n", $1, $2, $3, ($4 == "exact" ? "per-step (--exact-steps)" : "macro steps"), $5, $6, $10, ($6 > 0 ? $2 / $6 : 0), $7, $8, ($8 ? 100 * $9 / $8 : 0) }'
    grep -q '^fleet-44m,' "$csv" ||
      awk -F, '$1 == "fleet-10m" { printf "\nExtrapolated, not measured: 44M requests on 1,000 replicas at the fleet-10m rate would take %.0f s wall (%.0f s user).\n", $5 * 4.4, $6 * 4.4 }' "$csv"
  } > "$tab"
  awk -v tab="$tab" '
    /<!-- scaling:begin -->/ { print; while ((getline l < tab) > 0) print l; skip = 1; next }
    /<!-- scaling:end -->/ { skip = 0 }
    !skip' "$md" > "$md.tmp" && mv "$md.tmp" "$md"
  rm -f "$tab"
  if command -v gnuplot >/dev/null; then
    local d; d=$(mktemp -d)
    awk -F, '$1 ~ /^fleet-(1|10|44)m$/ { print $2, $6 }' "$csv" | sort -n > "$d/req"
    awk -F, '$1 == "fleet-1m" || $1 ~ /^rep-/ { print $3, $6 }' "$csv" | sort -n > "$d/rep"
    gnuplot <<GP
set terminal pngcairo size 900,400
set output 'docs/bench-scaling.png'
set multiplot layout 1,2
set logscale xy
set grid
set xlabel 'requests (1,000 replicas)'
set ylabel 'user CPU seconds'
set title 'Growth with requests'
plot '$d/req' using 1:2 with linespoints title 'macro steps'
set xlabel 'replicas (1M requests, 0.51 req/s each)'
set title 'Growth with replicas'
plot '$d/rep' using 1:2 with linespoints title 'macro steps'
unset multiplot
GP
    rm -rf "$d"
  fi
  echo "wrote $md and docs/bench-scaling.png"
}

cmd=${1:-run}
shift || true
case $cmd in
  run)
    kvsim=${KVSIM:-}
    if [ -z "$kvsim" ]; then
      [ -f build-release/build.ninja ] || meson setup build-release --buildtype=release -Db_lto=true \
        -Dtests=disabled -Dcuda=disabled >/dev/null
      ninja -C build-release >/dev/null
      kvsim=./build-release/src/kvsim
    fi
    cases=("$@")
    [ ${#cases[@]} -gt 0 ] || cases=("${all[@]}")
    for c in "${cases[@]}"; do run_case "$c"; done ;;
  doc) doc ;;
  *) echo "usage: $0 run [CASE...] | doc" >&2; exit 2 ;;
esac
