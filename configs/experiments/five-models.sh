#!/usr/bin/env bash
# The five cache models on five-models.yaml: KV memory reserved at an equal
# batch (and saved against full), mean iteration time (overhead against
# full), throughput when memory decides the batch, and the model's hit rate.
# usage: configs/experiments/five-models.sh [KVSIM]
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
kvsim=${1:-$here/../../build/src/kvsim}
. "$here/lib.bash"
calc() { awk "BEGIN{printf \"$1\", $2}"; }
printf '%-24s %9s %7s %10s %9s %8s %9s %8s %6s\n' cache "KV GB@8" saved "saved GB" "iter ms@8" overhead "tok/s" "vs full" hit
models=("full" "chunked" "quantized, bits: 4" "sparse, budget: 2048" "shared")
for m in "${models[@]}"; do
  tag=$(echo "$m" | tr -cd 'a-z0-9')
  "$kvsim" run -q "$here/five-models.yaml" -o "$out/$tag-8" --set "cache={name: $m}" --set batching.max_seqs=8
  "$kvsim" run -q "$here/five-models.yaml" -o "$out/$tag-n" --set "cache={name: $m}"
  kv=$(calc %.3f "$(col "$out/$tag-8" mem_reserved_util) * $(col "$out/$tag-8" kv_pool_bytes) / 1e9")
  it=$(calc %.3f "$(col "$out/$tag-8" iter_mean_s) * 1000")
  tp=$(col "$out/$tag-n" throughput_tok_s)
  [ "$m" = full ] && { kv0=$kv; it0=$it; tp0=$tp; }
  hit=$(col "$out/$tag-n" cache_hit_rate)
  printf '%-24s %9.1f %6.0f%% %10.1f %9.2f %7.1f%% %9.0f %7.0f%% %6s\n' "$m" "$kv" \
    "$(calc %.1f "100 * (1 - $kv / $kv0)")" \
    "$(calc %.1f "$(col "$out/$tag-n" cache_bytes_saved) / 1e9")" "$it" \
    "$(calc %.2f "100 * ($it / $it0 - 1)")" \
    "$tp" "$(calc %.1f "100 * ($tp / $tp0 - 1)")" "$(calc %.3f "${hit:-0}")"
done
