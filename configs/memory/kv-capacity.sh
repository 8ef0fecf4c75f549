#!/usr/bin/env bash
# The KV capacity kvsim's memory models estimate against the capacity real
# engines logged, as the Markdown table of docs/memory.md (docs/figures.sh
# writes it there and checks it).  Each row runs `kvsim run` on a one-request
# workload and reads kv_capacity_tokens from its summary.csv, so the table
# follows the code.  Exits 1 when a checked row (check = yes) is off by more
# than its tolerance.
#
# usage: configs/memory/kv-capacity.sh [KVSIM]   (default build/src/kvsim)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
kvsim=${1:-$here/../../build/src/kvsim}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
tol=3 # percent, for the checked rows

# Rows: label|source|model|device|tp|memory.model|max_tokens|max_seqs|logged tokens|logged as|check[|utilization]
# check: yes (within tol), no (shown only), min (kvsim must give at least the logged tokens:
# the engine started, and it refuses to unless its KV cache holds max_model_len).
# utilization: gpu_memory_utilization, default 0.9.
rows=(
  "vLLM main, Dec 2023|https://github.com/vllm-project/vllm/pull/2031|llama-2-7b|a100-80g|1|vllm|4096|256|117616|# GPU blocks: 7351|yes"
  "vLLM main, Dec 2024|https://github.com/vllm-project/vllm/pull/10511|llama-3-8b|h100-80g|1|vllm|8192|256|436551|available_kv_cache_memory 53.29GiB (/ 128 KiB)|yes"
  "vLLM main, Dec 2023|https://github.com/vllm-project/vllm/pull/2031|llama-2-70b|a100-80g|4|vllm|4096|256|333840|# GPU blocks: 20865|no"
  "vLLM 0.6.0, a reported run|https://github.com/vllm-project/vllm/blob/v0.6.0/vllm/worker/worker.py|llama-3.1-70b|h100-80g|2|vllm|24272|256|24272|started with --max-model-len 24272, so at least that|min|0.97"
)

printf '| engine (log) | model | GPU | TP | engine logged | kvsim tokens | kvsim blocks of 16 | error | checked |\n'
printf '|---|---|---|---|---|---:|---:|---:|---|\n'
bad=0
i=0
for row in "${rows[@]}"; do
  IFS='|' read -r label src model device tp mm tokens seqs logged as check util <<<"$row"
  i=$((i + 1))
  w="$tmp/w$i.yaml"
  cat > "$w" <<YAML
name: kv-capacity-$i
model: $model
device: $device
cluster:
  tensor_parallel: $tp
memory:
  model: $mm
  gpu_memory_utilization: ${util:-0.9}
batching:
  max_tokens: $tokens
  max_seqs: $seqs
workload:
  requests: 1
  lengths:
    dist: fixed
    prompt: 16
    output: 1
YAML
  "$kvsim" run -q "$w" -o "$tmp/o$i" --set outputs.chart=false
  col() { awk -F, -v n="$1" 'NR==1{for(i=1;i<=NF;i++) if($i==n) c=i} NR==2{print $c}' "$tmp/o$i/summary.csv"; }
  got=$(col kv_capacity_tokens)
  blocks=$(col kv_capacity_blocks)
  err=$(awk -v a="$got" -v b="$logged" 'BEGIN{printf "%+.1f%%", 100 * (a / b - 1)}')
  printf '| %s [%s](%s) | %s | %s | %s | %s tokens (%s) | %s | %s | %s | %s |\n' \
    "$label" "log" "$src" "$model" "$device" "$tp" "$logged" "$as" "$got" "$blocks" "$err" "$check"
  if [ "$check" = yes ] && awk -v a="$got" -v b="$logged" -v t="$tol" \
       'BEGIN{e = 100 * (a / b - 1); exit !(e > t || e < -t)}'; then
    echo "kv-capacity: $model on $device: $err is outside +-$tol%" >&2
    bad=1
  fi
  if [ "$check" = min ] && [ "$got" -lt "$logged" ]; then
    echo "kv-capacity: $model on $device: $got tokens, below the $logged the engine held" >&2
    bad=1
  fi
done
exit $bad
