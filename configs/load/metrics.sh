#!/usr/bin/env bash
# The figures of docs/metrics.md "Load" and "Uncertainty bands", from runs of
# workloads/vllm.yaml (ShareGPT lengths, one A100-80GB) at a given arrival
# rate; docs/figures.sh pastes each into the doc and checks it (needs
# ../shared/traces):
#   load         a Markdown table: per rate, load_share, busy_share and TTFT
#                p50 and p99 (summary.csv)
#   warning      the saturation warning kvsim run prints at 2.8 req/s
#   uncertainty  a Markdown table: the p50 and p99 of TTFT, TPOT and E2E at
#                2.8 req/s with their 5-95% bands over 20 draws
#                (--uncertainty 20, uncertainty.csv)
# usage: configs/load/metrics.sh KVSIM load|warning|uncertainty
set -euo pipefail
[ $# -eq 2 ] || { echo "usage: $0 KVSIM load|warning|uncertainty" >&2; exit 2; }
kvsim=$1
root=$(cd "$(dirname "$0")/../.." && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# run RATE [options...]: workloads/vllm.yaml at RATE req/s into $tmp/run, stderr in $tmp/err
run() {
  local rate=$1
  shift
  rm -rf "$tmp/run"
  "$kvsim" run -q "$root/workloads/vllm.yaml" -o "$tmp/run" --set outputs.chart=false \
    --set workload.arrival.rate="$rate" "$@" >/dev/null 2>"$tmp/err" || { cat "$tmp/err" >&2; exit 1; }
}

# cols FILE NAME...: the named columns of FILE's second line, space-separated; fails on a missing one
cols() {
  local f=$1
  shift
  awk -F, -v names="$*" 'NR == 1 { for (i = 1; i <= NF; i++) col[$i] = i }
    NR == 2 { n = split(names, k, " ")
      for (i = 1; i <= n; i++) {
        if (!(k[i] in col)) { print "metrics.sh: no column " k[i] " in " FILENAME > "/dev/stderr"; exit 1 }
        printf "%s%s", $col[k[i]], i < n ? " " : "\n" } }' "$f"
}

case $2 in
load)
  echo "| rate (req/s) | load_share | busy_share | TTFT p50 (s) | TTFT p99 (s) |"
  echo "|---:|---:|---:|---:|---:|"
  for rate in 2.0 2.4 2.6 2.8 3.0; do
    run "$rate"
    cols "$tmp/run/summary.csv" load_share busy_share ttft_p50_s ttft_p99_s |
      awk -v r="$rate" '{ printf "| %s | %.2f | %.4f | %.3g | %.3g |\n", r, $1, $2, $3, $4 }'
  done ;;
warning)
  run 2.8
  grep '^kvsim: warning: offered load' "$tmp/err" ||
    { echo "metrics.sh: no load warning at 2.8 req/s: $(cat "$tmp/err")" >&2; exit 1; } ;;
uncertainty)
  run 2.8 --uncertainty 20
  echo "| metric | point | p5 | p50 | p95 | draws |"
  echo "|---|---:|---:|---:|---:|---:|"
  for m in ttft_p50_s ttft_p99_s tpot_p50_s tpot_p99_s e2e_p50_s e2e_p99_s; do
    awk -F, -v m="$m" '$1 == m { printf "| %s | %.3g | %.3g | %.3g | %.3g | %d |\n", m, $2, $3, $4, $5, $6; f = 1 }
      END { if (!f) { print "metrics.sh: no " m " in uncertainty.csv" > "/dev/stderr"; exit 1 } }' \
      "$tmp/run/uncertainty.csv"
  done ;;
*) echo "usage: $0 KVSIM load|warning|uncertainty" >&2; exit 2 ;;
esac
