#!/usr/bin/env bash
# The A100-80GB coefficient fit and comparison tables of docs/perf-model.md
# ("Coefficients", "Comparison with published measurements"): runs bench/perf_fit
# (built next to KVSIM: build/bench/perf_fit for build/src/kvsim) on this
# directory's a100.csv, profiles from configs/.  docs/figures.sh calls it for
# the tables it owns (perf-fit, perf-table-a .. perf-table-d).
#
# usage: configs/perf-fit/run.sh KVSIM fit|fit-table|table A|B|C|D [perf_fit options]
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
[ $# -ge 2 ] || { echo "usage: $0 KVSIM fit|fit-table|table X [options]" >&2; exit 2; }
kvsim=$1; shift
bin=$(cd "$(dirname "$kvsim")/.." && pwd)/bench/perf_fit
[ -x "$bin" ] || { echo "$0: $bin not built (ninja -C BUILD bench/perf_fit)" >&2; exit 2; }
cd "$root"
KVSIM_CONFIG_DIR=$root/configs exec "$bin" "$@" -d configs/perf-fit/a100.csv
