#!/usr/bin/env bash
# The GPU table of docs/perf-model.md ("GPU profiles"): one row per device profile in this
# directory, read from the YAML (datasheet fields) and from `kvsim list devices` (the
# efficiencies the loader settles on, family defaults included).  Each profile's `source:`
# cites its figures.
# With --prices: the price table of docs/cluster.md ("Heterogeneous fleets and cost") instead,
# one row per profile: its cost_per_gpu_hour (none when unset) and the profile's
# "Price:" citation (its source: text from "Price:" on).
# usage: configs/devices/table.sh [--prices] [KVSIM]   (default build/src/kvsim)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
prices=0
if [ "${1:-}" = --prices ]; then prices=1; shift; fi
kvsim=${1:-$here/../../build/src/kvsim}
list=$("$kvsim" list devices)
if [ $prices = 1 ]; then
  echo "| device | USD per GPU-hour | where and when the price was read (the profile's source) |"
  echo "|---|---:|---|"
  for f in "$here"/*.yaml; do
    name=$(awk '/^name:/ { print $2 }' "$f")
    usd=$(awk '/^cost_per_gpu_hour:/ { p = $2 } END { print p ? p : "none" }' "$f")
    # the loader must read the same figure (`kvsim list devices`), or say it has none
    grep -q "^  $name .*\(\\\$[0-9.]* per GPU-hour\|no list price\)" <<<"$list" ||
      { echo "table.sh: kvsim list devices shows no price line for $name" >&2; exit 1; }
    cite=$(awk '/^source:/ { on = 1; next } on && /^[^ ]/ { on = 0 } on { t = t " " $0 }
                END { i = index(t, "Price:"); t = i ? substr(t, i + 7) : ""; gsub(/  +/, " ", t); print t }' "$f")
    # every profile cites its price, or says in its source why it has none
    [ -n "$cite" ] || { echo "table.sh: $f: no \"Price:\" in its source" >&2; exit 1; }
    [ "$usd" != none ] || grep -q "^none\." <<<"$cite" ||
      { echo "table.sh: $f: no cost_per_gpu_hour and its Price: does not say none" >&2; exit 1; }
    echo "| \`$name\` | $usd | ${cite//|/\\|} |"
  done
  exit 0
fi
echo "| device | family | memory (datasheet) | memory_cuda (GiB) | bandwidth | fp16 dense TFLOP/s | fp8 dense TFLOP/s | host link | interconnect | NCCL busbw | eff_bw | eff_flops |"
echo "|---|---|---:|---:|---:|---:|---:|---:|---|---:|---:|---:|"
for f in "$here"/*.yaml; do
  awk -v list="$list" '
    function val(k) { return (k in v) ? v[k] : "-" }
    /^[a-z_0-9]+:/ { k = $1; sub(":", "", k); x = $2; v[k] = x }
    END {
      n = split(list, L, "\n")
      for (i = 1; i <= n; i++) {
        split(L[i], w, " ")
        if (w[1] == v["name"]) { line = L[i] }
      }
      match(line, /eff_bw [0-9.]+/); eb = substr(line, RSTART + 7, RLENGTH - 7)
      match(line, /eff_flops [0-9.]+/); ef = substr(line, RSTART + 10, RLENGTH - 10)
      cuda = ("memory_cuda" in v) ? sprintf("%.2f", v["memory_cuda"] / 1073741824) : "-"
      link = ("interconnect" in v) ? v["interconnect"] : "datasheet (" val("interconnect_bandwidth") " GB/s, fixed latency)"
      busbw = ("interconnect_busbw" in v) ? v["interconnect_busbw"] " GB/s" : "-"
      printf "| %s | %s | %s | %s | %s | %s | %s | %s GB/s | %s | %s | %s | %s |\n", v["name"], val("family"),
        v["memory"], cuda, v["mem_bandwidth"], v["fp16_tflops"], val("fp8_tflops"),
        v["host_link_bandwidth"], link, busbw, eb, ef
    }' "$f"
done
