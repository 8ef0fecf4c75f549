#!/usr/bin/env bash
# Golden outputs: the SHA-256 of every output file of a fixed set of runs,
# recorded once and checked after a change that must not change results
# (a refactoring).  The set:
#   - every run workload of workloads/ (sweep files run as sweeps below),
#     under each scheduler (fifo, drf, wdrf, vtc, preempt, priority);
#   - every real trace of ../shared/traces that no workload replays, through
#     default.yaml's lengths (workload.lengths.trace), under each scheduler;
#   - every sweep file of workloads/ (sweep.csv);
#   - every configs/experiments/*.sh (the table it prints on stdout);
#   - bench/million.yaml with cache full and chunked, under each scheduler.
# Digested per run: requests.csv, timeseries.csv, summary.csv, tenants.csv,
# tenant_timeseries.csv, health.csv (those the run writes), sweep.csv for sweeps.
# Charts are off (outputs.chart=false): they are not digested.
#
# usage: tests/golden.sh KVSIM SOURCE_DIR record|check FILE [-j JOBS]
#   record  writes the digests to FILE (tests/golden.sha256 is the committed one)
#   check   compares with FILE; prints each digest that differs; exit 1 on a difference
# Takes about 2 minutes of CPU on a release build (10 runs of 1M requests
# dominate); registered as the `golden` test of `meson test --suite slow`.
# Exits 77 (skipped) without the traces folder.
set -euo pipefail
[ $# -ge 4 ] || { echo "usage: $0 KVSIM SOURCE_DIR record|check FILE [-j JOBS]" >&2; exit 2; }
kvsim=$(realpath "$1")
src=$(realpath "$2")
mode=$3
file=$4
jobs=2
[ "${5:-}" = -j ] && jobs=$6
case $mode in record|check) ;; *) echo "$0: mode $mode: expected record or check" >&2; exit 2;; esac
traces="$src/../shared/traces"
# The engine the digests were recorded with, for workloads that name none
# (the sweep bases default.yaml, vidur-poisson.yaml, azure-conv.yaml: their
# bytes key the sweep points, so they cannot name it; docs/engines.md).
export KVSIM_ENGINE=vllm-v0
[ -d "$traces" ] || { echo "no $traces: skipped"; exit 77; }
scheds=(fifo drf wdrf vtc preempt priority)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$tmp/d" "$tmp/o"

# digest LABEL DIR FILES...: one "sha256  LABEL/FILE" line per file present, into $tmp/d
digest() {
  local label=$1 dir=$2 f
  shift 2
  for f in "$@"; do
    [ -f "$dir/$f" ] && printf '%s  %s/%s\n' "$(sha256sum < "$dir/$f" | cut -d' ' -f1)" "$label" "$f"
  done > "$tmp/d/$(tr / _ <<<"$label")"
}

# one_run LABEL WORKLOAD [kvsim run options...]
one_run() {
  local label=$1 w=$2 out="$tmp/o/$(tr / _ <<<"$1")"
  shift 2
  # vllm-v0: the engine the digests were recorded with (vllm, V1, is the
  # default when a workload names none; every example names vllm-v0 too)
  "$kvsim" run -q "$w" -o "$out" --set outputs.chart=false --set engine.name=vllm-v0 "$@" 2>"$out.err" ||
    { echo "FAIL: $label: $(cat "$out.err")" >&2; return 1; }
  digest "$label" "$out" requests.csv timeseries.csv summary.csv tenants.csv tenant_timeseries.csv health.csv
  rm -rf "$out"
}

one_sweep() {
  local label=$1 w=$2 out="$tmp/o/$(tr / _ <<<"$1")"
  "$kvsim" sweep -q -j 1 "$w" -o "$out" >/dev/null 2>"$out.err" ||
    { echo "FAIL: $label: $(cat "$out.err")" >&2; return 1; }
  digest "$label" "$out" sweep.csv
  rm -rf "$out"
}

one_experiment() {
  local label=$1 e=$2 out="$tmp/o/$(tr / _ <<<"$1")"
  mkdir -p "$out"
  bash "$e" "$kvsim" > "$out/stdout" 2>"$out.err" ||
    { echo "FAIL: $label: $(cat "$out.err")" >&2; return 1; }
  digest "$label" "$out" stdout
  rm -rf "$out"
}

# The job list, one shell command per line.
{
  for w in "$src"/workloads/*.yaml; do
    n=$(basename "$w" .yaml)
    # the examples of other engines (vllm.yaml, sglang.yaml) are not in the
    # recorded set: it records vllm-v0 runs (docs/engines.md)
    eng=$(awk '/^engine:/ { if ($2 != "" && $2 !~ /^#/) { print $2; exit } f = 1; next }
               f && /^  name:/ { print $2; exit } f && /^[^ ]/ { exit }' "$w")
    [ -n "$eng" ] && [ "$eng" != vllm-v0 ] && continue
    if grep -q '^axes:' "$w"; then
      echo "one_sweep sweep/$n $w"
    else
      for sc in "${scheds[@]}"; do echo "one_run workload/$n/$sc $w --set scheduler.name=$sc"; done
    fi
  done
  for t in "$traces"/*.csv "$traces"/*.jsonl; do
    b=$(basename "$t")
    grep -qF "$b" "$src"/workloads/*.yaml && continue # replayed by a workload above
    for sc in "${scheds[@]}"; do
      echo "one_run trace/$b/$sc $src/workloads/default.yaml --set workload.lengths.trace=$t --set scheduler.name=$sc"
    done
  done
  for e in "$src"/configs/experiments/*.sh; do echo "one_experiment experiment/$(basename "$e" .sh) $e"; done
  for cache in full chunked; do
    for sc in "${scheds[@]}"; do
      echo "one_run million/$cache/$sc $src/bench/million.yaml --set cache.name=$cache --set scheduler.name=$sc"
    done
  done
} > "$tmp/jobs"

export -f digest one_run one_sweep one_experiment
export kvsim tmp
fail=0
xargs -P "$jobs" -I{} bash -c '{}' < "$tmp/jobs" || fail=1
[ $fail -eq 0 ] || { echo "golden: some runs failed" >&2; exit 1; }
cat "$tmp"/d/* | sort -k2 > "$tmp/all"
if [ "$mode" = record ]; then
  cp "$tmp/all" "$file"
  echo "golden: recorded $(wc -l < "$file") digests of $(wc -l < "$tmp/jobs") runs in $file"
  exit 0
fi
if diff <(sort -k2 "$file") "$tmp/all" > "$tmp/diff"; then
  echo "golden: all $(wc -l < "$file") digests match"
  exit 0
fi
echo "golden: digests differ (< recorded, > now):"
cat "$tmp/diff"
exit 1
