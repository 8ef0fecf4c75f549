#!/usr/bin/env bash
# The GPU table of docs/perf-model.md ("GPU profiles"): one row per device profile in this
# directory, read from the YAML (datasheet fields) and from `kvsim list devices` (the
# efficiencies the loader settles on, family defaults included).  Each profile's `source:`
# cites its figures.
# usage: configs/devices/table.sh [KVSIM]   (default build/src/kvsim)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
kvsim=${1:-$here/../../build/src/kvsim}
list=$("$kvsim" list devices)
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
