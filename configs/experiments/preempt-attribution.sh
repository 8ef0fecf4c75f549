#!/usr/bin/env bash
# Where `preempt`'s gain on fairness.yaml comes from: the same workload under
# fifo and preempt with each way a victim leaves (recompute, swap, the
# cheaper of the two) and each priority source (tenant priorities, all equal
# here; skip-join MLFQ).  Columns as fairness.sh, plus preemptions and the
# bytes swapped out.  fifo swaps when the cache model offloads
# (cache.offload=true), else recomputes.
# usage: configs/experiments/preempt-attribution.sh [KVSIM]
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
kvsim=${1:-$here/../../build/src/kvsim}
. "$here/lib.bash"
rows=(
  "fifo, recompute|--set scheduler.name=fifo"
  "fifo, swap|--set scheduler.name=fifo --set cache.offload=true"
  "preempt tenant, recompute|--set scheduler.name=preempt --set scheduler.mode=recompute"
  "preempt tenant, cheaper|--set scheduler.name=preempt"
  "preempt tenant, swap|--set scheduler.name=preempt --set scheduler.mode=swap"
  "preempt mlfq, recompute|--set scheduler.name=preempt --set scheduler.priority=mlfq --set scheduler.mode=recompute"
  "preempt mlfq, cheaper|--set scheduler.name=preempt --set scheduler.priority=mlfq"
)
printf '%-28s %7s %11s %12s %6s %8s %10s\n' "scheduler, victims" "tok/s" "long p99 s" "short std s" jain preempt "swapped GB"
i=0
for r in "${rows[@]}"; do
  name=${r%%|*}
  # shellcheck disable=SC2086
  "$kvsim" run -q "$here/fairness.yaml" -o "$out/$i" ${r#*|}
  printf '%-28s %7.0f %11.1f %12.2f %6.3f %8d %10.1f\n' "$name" "$(col "$out/$i" throughput_tok_s)" \
    "$(col "$out/$i" long_e2e_p99_s)" "$(col "$out/$i" short_e2e_std_s)" "$(col "$out/$i" jain_fairness)" \
    "$(col "$out/$i" preemptions)" "$(awk -v b="$(col "$out/$i" swap_out_bytes)" 'BEGIN{print b / 1e9}')"
  i=$((i + 1))
done
