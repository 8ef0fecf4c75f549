#!/usr/bin/env bash
# The tiered KV store against Mooncake's published cache figures (docs/cluster.md
# "Tiered KV store"): replays the Mooncake conversation trace (FAST'25 release,
# ../shared/traces/conversation_trace.jsonl) through workloads/tiers.yaml and prints
#   table A: the prefix hit rate against the capacity of one remote store shared by
#            the 4 replicas (global) or split into 4 per-replica stores of a quarter
#            each (local), in Mooncake's 512-token blocks, beside Mooncake's Table 1
#            (LRUCache row: Qin et al., arXiv:2407.00079v3, section 4.2, one global
#            pool), and Table 1's method replayed on this trace (one LRU pool,
#            prefix-matched block hits); the GPU pools pinned to 131,072 tokens
#            each (256 blocks) so the store, not HBM, holds the reuse; and the
#            trace's own ceiling (every block whose prefix of hash ids was seen
#            before);
#   table B: TTFT with the workload's tiers (64 GiB CPU, 1 TiB SSD per replica,
#            4 TiB shared remote) against the GPU prefix cache alone, with
#            tiers.csv's loads, waits and TTFT-saved estimate.
# usage: docs/cluster/tiers.sh [KVSIM] [A|B]   (both tables by default; docs/figures.sh
# runs it as `tiers-capacity` and `tiers-ttft`)
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
kvsim=${1:-$root/build-release/src/kvsim}
which=${2:-AB}
w=$root/workloads/tiers.yaml
trace=$root/../shared/traces/conversation_trace.jsonl
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
blk=$((512 * 131072)) # one 512-token block of Mistral-7B's KV: 32 layers x 8 heads x 128 x 2 x 2 bytes per token

# run NAME [--set ...]: the workload into $tmp/NAME
run() {
  local n=$1
  shift
  "$kvsim" run -q "$w" -o "$tmp/$n" --set outputs.chart=false "$@" > /dev/null
}
# col DIR FILE ROW COLUMN: one value of a CSV
col() {
  python3 -c 'import csv,sys; r=[x for x in csv.DictReader(open(sys.argv[1])) if sys.argv[2] in ("", x.get("tier", ""))]; print(r[0][sys.argv[3]])' \
    "$1/$2" "$3" "$4"
}

if [[ $which == *A* ]]; then
  ceiling=$(python3 - "$trace" <<'PY'
import json, sys
seen, hit, total = set(), 0, 0
for line in open(sys.argv[1]):
    ids = json.loads(line)["hash_ids"]
    for i in range(len(ids)):
        total += 1
        k = tuple(ids[: i + 1])
        hit += k in seen
        seen.add(k)
print("%.2f" % (hit / total))
PY
)
  store="--set cache.prefix_block_tokens=512 --set cache.tier_cpu_bytes=0 --set cache.tier_ssd_bytes=0 --set memory.kv_tokens=131072"
  # Table 1's method on this trace: one LRU pool of C blocks, requests in order, a request's
  # blocks hit while its prefix matches, then every block of it inserted or touched
  lru() {
    python3 - "$trace" "$1" <<'PY'
import collections, json, sys
cap = int(sys.argv[2])
pool, hit, total = collections.OrderedDict(), 0, 0
for line in open(sys.argv[1]):
    ids = json.loads(line)["hash_ids"]
    keys = [tuple(ids[: i + 1]) for i in range(len(ids))]
    total += len(keys)
    for k in keys:
        if k not in pool:
            break
        hit += 1
    for k in keys:
        pool[k] = 1
        pool.move_to_end(k)
        if len(pool) > cap:
            pool.popitem(last=False)
print("%.2f" % (hit / total))
PY
  }
  echo "| store capacity (512-token blocks) | Mooncake Table 1, LRU, global (their trace) | LRU replay of this trace (Table 1's method) | kvsim global (1 shared store) | kvsim local (4 stores of 1/4) |"
  echo "|---|---|---|---|---|"
  run none $store --set cache.tier_remote_bytes=0
  echo "| 0 (GPU pools only) | | | $(printf %.2f "$(col "$tmp/none" summary.csv '' cache_hit_rate)") | |"
  for c in 1000:0.30 10000:0.40 30000:0.48 50000:0.50 100000:0.51 10000000:0.51; do
    n=${c%%:*} mc=${c#*:}
    run g$n $store --set cache.tier_remote_bytes=$((n * blk))
    run l$n $store --set cache.tier_remote_bytes=$((n / 4 * blk)) --set cache.tier_remote_shared=false
    label=$n
    [ "$n" = 10000000 ] && label="unbounded (10^7)" && mc="0.51 (Inf)"
    echo "| $label | $mc | $(lru "$n") | $(printf %.2f "$(col "$tmp/g$n" summary.csv '' cache_hit_rate)") | $(printf %.2f "$(col "$tmp/l$n" summary.csv '' cache_hit_rate)") |"
    rm -rf "$tmp/g$n" "$tmp/l$n"
  done
  echo "| the trace's ceiling (blocks whose prefix was seen before) | 0.51 (their trace) | $ceiling | | |"
fi
if [[ $which == *B* ]]; then
  [[ $which == *A* ]] && echo
  run gpu --set cache.tier_cpu_bytes=0 --set cache.tier_ssd_bytes=0 --set cache.tier_remote_bytes=0
  run lw
  run bl --set cache.tier_load=blocking
  echo "| run | hit rate | from tiers | TTFT p50 s | TTFT p90 s | TTFT p99 s | loads | load wait s | recompute avoided s | TTFT saved s (estimate) |"
  echo "|---|---|---|---|---|---|---|---|---|---|"
  for r in gpu:"GPU prefix cache only" lw:"tiers, layer-wise loads" bl:"tiers, blocking loads"; do
    d=$tmp/${r%%:*}
    line="| ${r#*:} | $(printf %.3f "$(col "$d" summary.csv '' cache_hit_rate)")"
    if [ -f "$d/tiers.csv" ]; then
      line+=" | $(printf %.3f "$(col "$d" tiers.csv all token_hit_rate)")"
    else
      line+=" | 0"
    fi
    for m in ttft_p50_s ttft_p90_s ttft_p99_s; do line+=" | $(printf %.3f "$(col "$d" summary.csv '' $m)")"; done
    if [ -f "$d/tiers.csv" ]; then
      for m in loads load_wait_s recompute_avoided_s ttft_saved_s; do line+=" | $(printf %.4g "$(col "$d" tiers.csv all $m)")"; done
    else
      line+=" | | | |"
    fi
    echo "$line |"
  done
fi
