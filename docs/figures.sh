#!/usr/bin/env bash
# Regenerates the figures of README.md and docs/ that no other script writes,
# so none can go stale:
#  - tables: each lives in a doc between the lines
#      <!-- figures.sh NAME -->  and  <!-- /figures.sh NAME -->
#    and is the output of the command this script names for NAME (below),
#    pasted as a code block;
#  - images (--images, minutes): the run and sweep charts the docs show,
#    rendered from the workloads that produce them.
# Not here: docs/benchmarks.md (bench/run.sh, machine-dependent timings) and
# the calibration figures of docs/calibration.md (a real backend, see there).
#
# usage: docs/figures.sh [--check] [--images] [KVSIM]
#   --check   compare the tables with what is committed instead of rewriting
#             them; exit 1 naming each one that differs (tests/figures_test.sh)
#   --images  also regenerate the PNGs (needs gnuplot)
# KVSIM defaults to build-release/src/kvsim, else build/src/kvsim.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
check=0 images=0 kvsim=
for a in "$@"; do
  case $a in
    --check) check=1 ;;
    --images) images=1 ;;
    -*) echo "figures.sh: unknown option $a" >&2; exit 2 ;;
    *) kvsim=$a ;;
  esac
done
if [ -z "$kvsim" ]; then
  kvsim=$root/build-release/src/kvsim
  [ -x "$kvsim" ] || kvsim=$root/build/src/kvsim
fi
kvsim=$(cd "$(dirname "$kvsim")" && pwd)/$(basename "$kvsim")
traces=$root/../shared/traces
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# NAME|DOC|NEEDS_TRACES|COMMAND (run from the repository root; KVSIM replaced)
tables=(
  "metrics|docs/metrics.md|0|KVSIM list metrics"
  "fairness|docs/schedulers.md|1|bash configs/experiments/fairness.sh KVSIM"
  "preempt-attribution|docs/schedulers.md|1|bash configs/experiments/preempt-attribution.sh KVSIM"
)

# replace DOC NAME FILE: the block between NAME's markers becomes FILE in a code block
replace() {
  python3 - "$@" <<'PY'
import re, sys
doc, name, body = sys.argv[1], sys.argv[2], open(sys.argv[3]).read()
text = open(doc).read()
begin, end = "<!-- figures.sh %s -->" % name, "<!-- /figures.sh %s -->" % name
if text.count(begin) != 1 or text.count(end) != 1:
    sys.exit("%s: expected one pair of markers for %s" % (doc, name))
a, b = text.index(begin) + len(begin), text.index(end)
text = text[:a] + "\n```\n" + body.rstrip("\n") + "\n```\n" + text[b:]
open(doc, "w").write(text)
PY
}

status=0
cd "$root"
for t in "${tables[@]}"; do
  IFS='|' read -r name doc needs cmd <<< "$t"
  if [ "$needs" = 1 ] && [ ! -d "$traces" ]; then
    echo "figures.sh: $name: skipped (no ../shared/traces)"
    continue
  fi
  eval "${cmd//KVSIM/\"\$kvsim\"}" > "$tmp/$name.out"
  cp "$doc" "$tmp/doc"
  replace "$tmp/doc" "$name" "$tmp/$name.out"
  if [ $check = 1 ]; then
    if cmp -s "$tmp/doc" "$doc"; then
      echo "figures.sh: $name: up to date"
    else
      echo "figures.sh: $name in $doc differs from \`$cmd\`; rerun docs/figures.sh:"
      diff "$doc" "$tmp/doc" | head -20 || true
      status=1
    fi
  else
    cp "$tmp/doc" "$doc"
    echo "figures.sh: $name: written into $doc"
  fi
done

if [ $images = 1 ] && [ $check = 0 ]; then
  command -v gnuplot > /dev/null || { echo "figures.sh: --images needs gnuplot" >&2; exit 1; }
  # the drf run chart of docs/schedulers.md
  "$kvsim" run -q configs/experiments/fairness.yaml -o "$tmp/drf" --set scheduler.name=drf --set outputs.chart=true
  cp "$tmp/drf/run.png" docs/run-fairness-drf.png
  # the sweep charts of docs/sweeps.md: WORKLOAD|METRIC|X|BY|IMAGE
  for s in "sweep-capacity|ttft_p99_s|||sweep-capacity-ttft" \
           "sweep-capacity|throughput_tok_s|||sweep-capacity-throughput" \
           "sweep-sched-rate|ttft_p99_s|||sweep-sched-rate-ttft" \
           "sweep-cache-context|ttft_p99_s|||sweep-cache-context-ttft" \
           "sweep-200|ttft_p99_s|cache.name|scheduler.name|sweep-200-ttft"; do
    IFS='|' read -r w metric x by img <<< "$s"
    [ -d "$tmp/$w" ] || "$kvsim" sweep "workloads/$w.yaml" -o "$tmp/$w" -q
    "$kvsim" plot "$tmp/$w" --metric "$metric" ${x:+--x "$x"} ${by:+--by "$by"} > /dev/null
    cp "$tmp/$w/sweep-$metric.png" "docs/$img.png"
    echo "figures.sh: docs/$img.png"
  done
fi
exit $status
