#!/usr/bin/env bash
# Memory and time of `validate --from-run` and `calibrate --from-run --max-evals 10` on a
# large recorded run (docs/calibration.md, "Measured: a run of 10^7 rows").  Writes a
# deterministic CSV of N requests (Poisson sends at 6 req/s, prompts 50-950 and outputs
# 5-305 tokens, TTFT and E2E from a fixed linear rule) into a temporary directory, then
# runs each command once under /usr/bin/time and prints wall, user, system seconds, peak
# RSS and the exit status.  Each command is stopped after LIMIT seconds (default 150).
#
#   bench/fromrun_big.sh [-n N] [-t LIMIT] KVSIM        (N defaults to 10000000: 377 MB)
set -euo pipefail
n=10000000 limit=150
while getopts n:t: o; do
  case $o in n) n=$OPTARG ;; t) limit=$OPTARG ;; *) exit 2 ;; esac
done
shift $((OPTIND - 1))
[ $# -eq 1 ] || { echo "usage: $0 [-n N] [-t LIMIT] KVSIM" >&2; exit 2; }
kvsim=$(realpath "$1")
root=$(cd "$(dirname "$0")/.." && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
awk -v n="$n" 'BEGIN { srand(7); print "arrival_s,prompt_tokens,output_tokens,ttft_ms,e2e_ms"; t = 0
  for (i = 0; i < n; i++) { t += -log(1 - rand()) / 6; p = int(50 + rand() * 900); o = int(5 + rand() * 300)
    tt = 20 + p * 0.05 + rand() * 10; printf "%.6f,%d,%d,%.3f,%.3f\n", t, p, o, tt, tt + o * 12 } }' \
  > "$tmp/run.csv"
echo "run: $n rows, $(du -m "$tmp/run.csv" | cut -f1) MB"
for cmd in validate calibrate; do
  extra=()
  [ $cmd = calibrate ] && extra=(--max-evals 10 -o "$tmp/p.yaml")
  /usr/bin/time -f "$cmd --from-run: %e s wall, %U s user, %S s sys, %M KB max RSS, exit %x" \
    -o "$tmp/time" timeout "$limit" "$kvsim" $cmd --from-run "$tmp/run.csv" \
    "$root/tests/data/fromrun/settings.yaml" "${extra[@]}" > /dev/null 2> "$tmp/err" || true
  cat "$tmp/time" | tail -1
done
