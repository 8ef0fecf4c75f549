#!/usr/bin/env bash
# Share of reserved KV memory holding live tokens (time-averaged) under
# full (exact), full rounded to powers of two, and chunked; see
# utilization.yaml.  usage: configs/experiments/utilization.sh [KVSIM]
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
kvsim=${1:-$here/../../build/src/kvsim}
. "$here/lib.bash"
printf '%-22s %14s %14s %12s %10s\n' cache "live/reserved" "reserved/pool" "tokens/s" preempted
run() {
  local label=$1; shift
  "$kvsim" run -q "$here/utilization.yaml" -o "$out/$label" "$@"
  printf '%-22s %13.1f%% %13.1f%% %12.0f %10s\n' "$label" \
    "$(awk -v x="$(col "$out/$label" mem_useful_share)" 'BEGIN{print 100*x}')" \
    "$(awk -v x="$(col "$out/$label" mem_reserved_util)" 'BEGIN{print 100*x}')" \
    "$(col "$out/$label" throughput_tok_s)" "$(col "$out/$label" preemptions)"
}
run full-2048 --set cache.round=exact
run full-2048-pow2 --set cache.round=pow2
run chunked-16 --set cache='{name: chunked, block_tokens: 16}'
