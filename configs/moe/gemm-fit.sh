#!/usr/bin/env bash
# The grouped-GEMM efficiency fit of docs/perf-model.md ("Grouped-GEMM efficiency"): runs
# bench/moe_gemm_fit (built next to KVSIM: build/bench/moe_gemm_fit for build/src/kvsim) on
# configs/moe/gemm-kernels.csv and prints its held-out error table; sim/moegemm.h holds the
# coefficients it prints (meson test moe_gemm_fit checks they agree).
# usage: configs/moe/gemm-fit.sh KVSIM [--table | --check]
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
[ $# -ge 1 ] || { echo "usage: $0 KVSIM [--table | --check]" >&2; exit 2; }
bin=$(cd "$(dirname "$1")/.." && pwd)/bench/moe_gemm_fit
shift
[ -x "$bin" ] || { echo "$0: $bin not built (ninja -C BUILD bench/moe_gemm_fit)" >&2; exit 2; }
exec "$bin" -d "$root/configs/moe/gemm-kernels.csv" "$@"
