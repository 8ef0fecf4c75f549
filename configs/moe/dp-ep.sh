#!/usr/bin/env bash
# The comparison of docs/perf-model.md "Data-parallel attention with expert
# parallelism": workloads/moe-dp-ep.yaml (Qwen3-30B-A3B, one group of 4
# data-parallel attention ranks with the experts spread over its 4 H100s)
# against the same four GPUs as four independent replicas, each holding
# every expert.  Prints a Markdown table from each run's summary.csv (KV
# tokens per GPU: the pool of one replica over its GPUs).  docs/figures.sh
# pastes it into the doc (name dp-ep) and checks it; needs ../shared/traces.
# usage: configs/moe/dp-ep.sh KVSIM
set -euo pipefail
[ $# -eq 1 ] || { echo "usage: $0 KVSIM" >&2; exit 2; }
kvsim=$1
root=$(cd "$(dirname "$0")/../.." && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# row LABEL GPUS_PER_REPLICA [--set ...]: one table row from a run of the workload
row() {
  local label=$1 gpus=$2
  shift 2
  "$kvsim" run -q "$root/workloads/moe-dp-ep.yaml" -o "$tmp/run" --set outputs.chart=false "$@" \
    >/dev/null 2>"$tmp/err" || { cat "$tmp/err" >&2; exit 1; }
  awk -F, -v label="$label" -v gpus="$gpus" '
    NR == 1 { for (i = 1; i <= NF; i++) col[$i] = i; next }
    NR == 2 {
      for (k in need) if (!(k in col)) { print "dp-ep.sh: no column " k > "/dev/stderr"; exit 1 }
      printf "| %s | %.0f | %.3f | %.1f | %.2f | %d | %d/%d |\n", label,
        $col["kv_capacity_tokens"] / gpus, $col["ttft_p50_s"], 1000 * $col["tpot_p50_s"],
        $col["e2e_p50_s"], $col["preemptions"], $col["completed"], $col["requests"] }
    BEGIN { split("kv_capacity_tokens ttft_p50_s tpot_p50_s e2e_p50_s preemptions completed requests", n, " ")
            for (i in n) need[n[i]] = 1 }' "$tmp/run/summary.csv"
  rm -rf "$tmp/run"
}

echo "| four H100s as | KV tokens per GPU | TTFT p50 (s) | TPOT p50 (ms) | E2E p50 (s) | preemptions | completed |"
echo "|---|---:|---:|---:|---:|---:|---:|"
row "one group: DP 4 attention + EP 4 (\`workloads/moe-dp-ep.yaml\`)" 4
row "four replicas (\`--set cluster.data_parallel=1 --set cluster.expert_parallel=1 --set cluster.replicas=4\`)" 1 \
  --set cluster.data_parallel=1 --set cluster.expert_parallel=1 --set cluster.replicas=4
