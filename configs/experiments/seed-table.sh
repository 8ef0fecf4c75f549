#!/usr/bin/env bash
# Reproduces the seed's full-vs-chunked table (Llama-2-7B at 2K, Llama-2-13B
# at 4K, a 30B model at 8K, one A100-80GB): KV memory at an equal batch of 8
# sequences, and throughput when memory decides the batch.  Prints a table;
# docs/cache-models.md records and explains it.
# usage: configs/experiments/seed-table.sh [KVSIM]   (default build/src/kvsim)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
kvsim=${1:-$here/../../build/src/kvsim}
. "$here/lib.bash"
gb() { awk -v a="$1" -v b="$2" 'BEGIN{printf "%.1f", a*b/1e9}'; }

printf '%-8s %-8s | %-26s | %-34s\n' row cache "batch 8: KV reserved/live GB" "batch <= 256: tok/s, done, rejected"
for row in 7b-2k:2048 13b-4k:4096 30b-8k:8192; do
  name=${row%%:*} ctx=${row##*:}
  for cache in full chunked; do
    opts=(--set cache.name=$cache)
    [ $cache = full ] && opts+=(--set cache.max_len=$ctx)
    d8=$out/$name-$cache-8; dn=$out/$name-$cache-n
    "$kvsim" run -q "$here/seed-table/$name.yaml" -o "$d8" "${opts[@]}" --set batching.max_seqs=8
    "$kvsim" run -q "$here/seed-table/$name.yaml" -o "$dn" "${opts[@]}"
    pool=$(col "$d8" kv_pool_bytes)
    printf '%-8s %-8s | %12s / %-11s | %10.0f %6s %8s\n' "$name" "$cache" \
      "$(gb "$(col "$d8" mem_reserved_util)" "$pool")" "$(gb "$(col "$d8" mem_used_util)" "$pool")" \
      "$(col "$dn" throughput_tok_s)" "$(col "$dn" completed)" \
      "$(( $(col "$dn" rejected_pool) + $(col "$dn" rejected_context) ))"
  done
done
