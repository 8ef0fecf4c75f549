#!/usr/bin/env bash
# Each scheduler on fairness.yaml: throughput, p99 latency of long requests,
# the standard deviation of short requests' completion time, Jain's index
# and the service difference between backlogged tenants, each against fifo.
# usage: configs/experiments/fairness.sh [KVSIM] [scheduler...]
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
kvsim=${1:-$here/../../build/src/kvsim}
shift || true
scheds=("$@")
[ ${#scheds[@]} -gt 0 ] || scheds=(fifo drf wdrf vtc preempt)
. "$here/lib.bash"
pct() { awk -v a="$1" -v b="$2" 'BEGIN{printf "%+.0f%%", 100 * (a / b - 1)}'; }
printf '%-8s %10s %6s %14s %6s %14s %6s %7s %12s\n' scheduler "tok/s" "" "long p99 s" "" "short std s" "" jain "svc diff max"
for sc in "${scheds[@]}"; do
  "$kvsim" run -q "$here/fairness.yaml" -o "$out/$sc" --set scheduler.name="$sc"
  tp=$(col "$out/$sc" throughput_tok_s); lp=$(col "$out/$sc" long_e2e_p99_s); ss=$(col "$out/$sc" short_e2e_std_s)
  [ "$sc" = "${scheds[0]}" ] && { tp0=$tp; lp0=$lp; ss0=$ss; }
  printf '%-8s %10.0f %6s %14.1f %6s %14.2f %6s %7.3f %12.0f\n' "$sc" "$tp" "$(pct "$tp" "$tp0")" \
    "$lp" "$(pct "$lp" "$lp0")" "$ss" "$(pct "$ss" "$ss0")" "$(col "$out/$sc" jain_fairness)" \
    "$(col "$out/$sc" service_diff_max)"
done
