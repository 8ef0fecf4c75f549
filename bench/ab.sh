#!/usr/bin/env bash
# Side-by-side timing of two kvsim binaries on one workload: runs them in turn, N times
# each (A B A B ...: load drifting on a shared machine hits both alike), and prints each
# binary's user CPU seconds (every run and the mean) and whether their outputs are
# byte-identical.
#
#   bench/ab.sh [-n N] KVSIM_A KVSIM_B [WORKLOAD.yaml] [kvsim run options]
#
# WORKLOAD defaults to bench/million.yaml; charts are off.  Build an older binary with
# `git worktree add /tmp/old COMMIT && cd /tmp/old && meson setup build-release
# --buildtype=release -Db_lto=true -Dtests=disabled -Dcuda=disabled && ninja -C build-release`.
set -euo pipefail
cd "$(dirname "$0")/.."
n=3
if [ "${1:-}" = -n ]; then n=$2; shift 2; fi
[ $# -ge 2 ] || { echo "usage: $0 [-n N] KVSIM_A KVSIM_B [WORKLOAD.yaml] [options]" >&2; exit 2; }
a=$1 b=$2
shift 2
wl=bench/million.yaml
if [ $# -gt 0 ] && [[ $1 == *.yaml ]]; then wl=$1; shift; fi
d=$(mktemp -d)
trap 'rm -rf "$d"' EXIT
for ((i = 0; i < n; i++)); do
  for x in A B; do
    bin=$a; [ $x = B ] && bin=$b
    rm -rf "$d/$x"
    /usr/bin/time -f "%U %e" -o "$d/time" "$bin" run -q "$wl" -o "$d/$x" \
      --set outputs.chart=false "$@" >/dev/null
    echo "$x $(cat "$d/time")" >> "$d/runs"
  done
done
awk -v a="$a" -v b="$b" '{ u[$1] += $2; w[$1] += $3; s[$1] = s[$1] " " $2 }
  END { printf "A %s: mean %.3f s user (%s), %.2f s wall\n", a, u["A"] / NR * 2, s["A"], w["A"] / NR * 2
        printf "B %s: mean %.3f s user (%s), %.2f s wall\n", b, u["B"] / NR * 2, s["B"], w["B"] / NR * 2 }' "$d/runs"
same=yes
for f in "$d"/A/*.csv; do
  [ "$(basename "$f")" = manifest.txt ] && continue
  cmp -s "$f" "$d/B/$(basename "$f")" || { same=no; echo "differs: $(basename "$f")"; }
done
echo "outputs byte-identical: $same"
