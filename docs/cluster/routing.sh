#!/usr/bin/env bash
# KV-aware routing on the Mooncake traces (docs/cluster.md "KV-aware routing"):
# workloads/kv-routing.yaml (Mistral-7B on 8 x H200, vLLM's engine and prefix
# cache) over the conversation trace and the synthetic multi-turn trace, under
# prefix-load (tokens mode, its defaults; Dynamo's cost; llm-d's weights 3:2),
# least-outstanding-tokens and round-robin.  Prints a Markdown table: the
# prefix hit rate (summary.csv cache_hit_rate: prompt tokens served from the
# cache over prompt tokens looked up), TTFT p50 and p99, and the load
# imbalance, max over replicas / mean of the prompt + output tokens of the
# requests routed there (1 = even; from requests.csv).
# usage: docs/cluster/routing.sh KVSIM [REPLICAS]   (run from the repository root)
set -euo pipefail
kvsim=$1
reps=${2:-8}
root=$(cd "$(dirname "$0")/../.." && pwd)
traces=$root/../shared/traces
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
routers=(
  "prefix-load|{name: prefix-load}"
  "prefix-load (dynamo)|{name: prefix-load, mode: dynamo}"
  "prefix-load (llm-d 3:2)|{name: prefix-load, mode: llm-d, prefix_weight: 3, queue_weight: 2}"
  "least-outstanding-tokens|least-outstanding-tokens"
  "round-robin|round-robin"
)
echo "| trace | router | prefix hit rate | TTFT p50 (s) | TTFT p99 (s) | load imbalance |"
echo "|---|---|---:|---:|---:|---:|"
for t in conversation_trace.jsonl mooncake_synthetic_trace.jsonl; do
  for r in "${routers[@]}"; do
    label=${r%%|*}
    spec=${r#*|}
    o="$tmp/$t.$(tr ' ():' '____' <<<"$label")"
    "$kvsim" run -q "$root/workloads/kv-routing.yaml" -o "$o" --set outputs.chart=false \
      --set "cluster.replicas=$reps" --set "cluster.router=$spec" \
      --set "workload.arrival.trace=$traces/$t" > /dev/null
    python3 - "$o" "$t" "$label" "$reps" <<'PY'
import csv, sys
o, trace, label, reps = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
s = next(csv.DictReader(open(o + "/summary.csv", newline="")))
tok = [0] * reps
for q in csv.DictReader(open(o + "/requests.csv", newline="")):
    tok[int(q["replica"])] += int(q["prompt_tokens"]) + int(q["output_tokens"])
imb = max(tok) / (sum(tok) / reps) if sum(tok) else 0
print("| %s | %s | %.3f | %.3f | %.3f | %.2f |" % (trace, label, float(s["cache_hit_rate"]),
      float(s["ttft_p50_s"]), float(s["ttft_p99_s"]), imb))
PY
  done
done
