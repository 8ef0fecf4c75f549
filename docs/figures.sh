#!/usr/bin/env bash
# Regenerates the figures of README.md and docs/ that no other script writes,
# so none can go stale:
#  - tables: each lives in a doc between the lines
#      <!-- figures.sh NAME -->  and  <!-- /figures.sh NAME -->
#    and is the output of the command this script names for NAME (below),
#    pasted as a code block;
#  - images (--images, minutes): the run and sweep charts the docs show,
#    rendered from the workloads that produce them.
#  - facts stated in prose (GPU profiles, meson options, unit suites, the
#    files of workloads/, the commands' usage lines, the plugins named, the
#    golden counts): checked by docs/facts.sh, in either mode.
# Not here: docs/benchmarks.md (bench/run.sh, machine-dependent timings) and
# the calibration figures of docs/calibration.md (a real backend, see there).
#
# usage: docs/figures.sh [--check] [--images] [--only=N,...] [--skip=N,...] [KVSIM]
#   --check   compare the tables with what is committed instead of rewriting
#             them; exit 1 naming each one that differs (tests/figures_test.sh)
#   --images  also regenerate the PNGs (needs gnuplot) and the slow tables (minutes)
#   --only    just the tables named (no facts.sh, no images): a test whose script
#             makes a table checks it this way, so the script runs once per test run
#   --skip    every table but those named (tests/figures_test.sh skips the tables
#             that their own tests check)
# KVSIM defaults to build-release/src/kvsim, else build/src/kvsim.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
check=0 images=0 kvsim= only= skip=
for a in "$@"; do
  case $a in
    --check) check=1 ;;
    --images) images=1 ;;
    --only=*) only=",${a#--only=}," ;;
    --skip=*) skip=",${a#--skip=}," ;;
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

# sweep_means SWEEP.yaml METRIC ROW_AXIS COL_AXIS: runs the sweep and prints the metric's
# mean over every other axis and seed, one row per ROW_AXIS value, one column per COL_AXIS value
sweep_means() {
  "$kvsim" sweep "$1" -o "$tmp/means" -q > /dev/null
  python3 - "$tmp/means/sweep.csv" "$2" "$3" "$4" <<'PY'
import csv, sys, collections
path, metric, row, col = sys.argv[1:]
acc, rows, cols = collections.defaultdict(list), [], []
for r in csv.DictReader(open(path, newline="")):
    if r["status"] != "ok" or not r[metric]:
        continue
    rows += [r[row]] if r[row] not in rows else []
    cols += [r[col]] if r[col] not in cols else []
    acc[r[row], r[col]].append(float(r[metric]))
n = {len(v) for v in acc.values()}
print("%s, mean of %s runs per cell" % (metric, "/".join(map(str, sorted(n)))))
print("%-16s" % row + "".join("%12s" % c for c in cols))
for a in rows:
    print("%-16s" % a + "".join("%12.2f" % (sum(acc[a, c]) / len(acc[a, c])) for c in cols))
PY
  rm -rf "$tmp/means"
}

# NAME|DOC|NEEDS|COMMAND (run from the repository root; KVSIM replaced).  NEEDS: 0 nothing,
# 1 ../shared/traces, 2 traces and minutes (rewritten and checked only with --images)
tables=(
  "metrics|docs/metrics.md|0|KVSIM list metrics"
  "conformance|docs/conformance.md|0|bash tests/conformance/run.sh KVSIM . --table"
  "fidelity|docs/fidelity.md|0|bash configs/fidelity/run.sh -k KVSIM"
  "chunking-overhead|docs/engines.md|0|bash configs/engines/chunking-overhead.sh KVSIM"
  "frontend-defaults|docs/frontend.md|0|bash configs/engines/frontend-defaults.sh KVSIM"
  "models|docs/models.md|0|bash configs/models/table.sh KVSIM"
  "devices|docs/perf-model.md|0|bash configs/devices/table.sh KVSIM"
  "device-prices|docs/cluster.md|0|bash configs/devices/table.sh --prices KVSIM"
  "comm-fit|docs/perf-model.md|0|\"\$(dirname KVSIM)/../bench/comm_fit\" --table"
  "moe-gemm|docs/perf-model.md|0|bash configs/moe/gemm-fit.sh KVSIM --table"
  "tp-scaling|docs/perf-model.md|0|bash configs/comm/tp-scaling.sh KVSIM"
  "dp-ep|docs/perf-model.md|1|bash configs/moe/dp-ep.sh KVSIM"
  "load-share|docs/metrics.md|1|bash configs/load/metrics.sh KVSIM load"
  "load-warning|docs/metrics.md|1|bash configs/load/metrics.sh KVSIM warning"
  "uncertainty-example|docs/metrics.md|1|bash configs/load/metrics.sh KVSIM uncertainty"
  "perf-fit|docs/perf-model.md|0|bash configs/perf-fit/run.sh KVSIM fit-table"
  "perf-table-a|docs/perf-model.md|0|bash configs/perf-fit/run.sh KVSIM table A"
  "perf-table-b|docs/perf-model.md|0|bash configs/perf-fit/run.sh KVSIM table B"
  "perf-table-c|docs/perf-model.md|0|bash configs/perf-fit/run.sh KVSIM table C"
  "perf-table-d|docs/perf-model.md|0|bash configs/perf-fit/run.sh KVSIM table D"
  "kv-capacity|docs/memory.md|0|bash configs/memory/kv-capacity.sh KVSIM"
  "cluster-groups|docs/cluster.md|0|bash docs/cluster/groups.sh KVSIM"
  "fairness|docs/schedulers.md|1|bash configs/experiments/fairness.sh KVSIM"
  "preempt-attribution|docs/schedulers.md|1|bash configs/experiments/preempt-attribution.sh KVSIM"
  "kv-routing|docs/cluster.md|2|bash docs/cluster/routing.sh KVSIM"
  "sessions-fit|docs/cluster.md|1|bash docs/cluster/sessions.sh KVSIM fit"
  "sessions-classes|docs/cluster.md|1|bash docs/cluster/sessions.sh KVSIM classes"
  "sessions-routing|docs/cluster.md|1|bash docs/cluster/sessions.sh KVSIM routing"
  "sweep-200|docs/sweeps.md|2|sweep_means workloads/sweep-200.yaml ttft_p99_s scheduler.name cache.name"
  "pd-distserve|docs/cluster.md|2|bash docs/cluster/pd.sh KVSIM"
  "autoscale|docs/cluster.md|2|bash docs/cluster/autoscale.sh KVSIM"
  "tiers-capacity|docs/cluster.md|2|bash docs/cluster/tiers.sh KVSIM A"
  "tiers-ttft|docs/cluster.md|2|bash docs/cluster/tiers.sh KVSIM B"
  "host-levels|docs/calibration.md|0|bash configs/calibrate/host-levels.sh KVSIM"
  "host-levels-cpu|docs/calibration.md|0|bash configs/calibrate/host-levels-cpu.sh KVSIM"
)

# replace DOC NAME FILE: the lines between NAME's marker lines become FILE (less its trailing
# empty lines) in a code block, or FILE as it is when it is a Markdown table (its first line
# begins with "|")
replace() {
  awk -v name="$2" -v body="$3" '
    BEGIN {
      begin = "<!-- figures.sh " name " -->"; end = "<!-- /figures.sh " name " -->"
      while ((getline l < body) > 0) b[++n] = l
      while (n > 0 && b[n] == "") n--
    }
    $0 == begin { nb++; out[++m] = $0; if (b[1] !~ /^\|/) out[++m] = "```"
                  for (i = 1; i <= n; i++) out[++m] = b[i]
                  if (!n) out[++m] = ""
                  if (b[1] !~ /^\|/) out[++m] = "```"
                  skip = 1; next }
    $0 == end { ne++; skip = 0 }
    !skip { out[++m] = $0 }
    END {
      if (nb != 1 || ne != 1) { printf "%s: expected one pair of markers for %s\n", FILENAME, name > "/dev/stderr"; exit 1 }
      for (i = 1; i <= m; i++) print out[i] > FILENAME
    }' "$1"
}

# a name in --only or --skip that no table has would drop a check unnoticed
for n in ${only//,/ } ${skip//,/ }; do
  printf '%s\n' "${tables[@]}" | grep -q "^$n|" || { echo "figures.sh: no table $n" >&2; exit 2; }
done

status=0
cd "$root"
for t in "${tables[@]}"; do
  IFS='|' read -r name doc needs cmd <<< "$t"
  if [ -n "$only" ] && [[ $only != *",$name,"* ]] || [[ $skip == *",$name,"* ]]; then
    continue
  fi
  if [ "$needs" -ge 1 ] && [ ! -d "$traces" ]; then
    echo "figures.sh: $name: skipped (no ../shared/traces)"
    continue
  fi
  if [ "$needs" = 2 ] && [ $images = 0 ]; then
    echo "figures.sh: $name: skipped (minutes: rerun with --images)"
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

# the tables named alone: their test checks them, figures_test.sh the rest and the facts
[ -n "$only" ] && exit $status

# the facts stated in prose (counts, lists, command lines): checked, never rewritten
bash docs/facts.sh "$kvsim" || status=1

if [ $images = 1 ] && [ $check = 1 ]; then
  echo "figures.sh: --check compares tables only; the images are not checked"
elif [ $images = 1 ]; then
  command -v gnuplot > /dev/null || { echo "figures.sh: --images needs gnuplot" >&2; exit 1; }
  # the drf run chart of docs/schedulers.md
  "$kvsim" run -q configs/experiments/fairness.yaml -o "$tmp/drf" --set scheduler.name=drf --set outputs.chart=true
  cp "$tmp/drf/run.png" docs/run-fairness-drf.png
  # the autoscaling chart of docs/cluster.md: the diurnal day, autoscaled
  bash docs/cluster/autoscale.sh "$kvsim" docs/cluster-autoscale.png > /dev/null
  echo "figures.sh: docs/cluster-autoscale.png"
  # the run chart of docs/health.md: workloads/tenants.yaml with SLOs (their lines on the CDFs)
  "$kvsim" run -q workloads/tenants.yaml -o "$tmp/tenants" --set outputs.chart=true \
    --set 'slo={ttft: 5s, ttft_p99: 10s, e2e_p99: 60s}'
  cp "$tmp/tenants/run.png" docs/run-tenants-slo.png
  echo "figures.sh: docs/run-tenants-slo.png"
  # the sweep charts of docs/sweeps.md: WORKLOAD|METRIC|X|BY|IMAGE
  for s in "sweep-capacity|ttft_p99_s|||sweep-capacity-ttft" \
           "sweep-capacity|throughput_tok_s|||sweep-capacity-throughput" \
           "sweep-sched-rate|ttft_p99_s|||sweep-sched-rate-ttft" \
           "sweep-cache-context|ttft_p99_s|||sweep-cache-context-ttft" \
           "sweep-200|ttft_p99_s|cache.name|scheduler.name|sweep-200-ttft" \
           "sweep-slo|ttft_p99_s|cluster.replicas|workload.arrival.rate|sweep-slo-ttft"; do
    IFS='|' read -r w metric x by img <<< "$s"
    [ -d "$tmp/$w" ] || "$kvsim" sweep "workloads/$w.yaml" -o "$tmp/$w" -q
    "$kvsim" plot "$tmp/$w" --metric "$metric" ${x:+--x "$x"} ${by:+--by "$by"} > /dev/null
    cp "$tmp/$w/sweep-$metric.png" "docs/$img.png"
    echo "figures.sh: docs/$img.png"
  done
  # the Pareto fronts of docs/sweeps.md (written by the sweep itself)
  cp "$tmp/sweep-slo/pareto.png" docs/sweep-slo-pareto.png
  echo "figures.sh: docs/sweep-slo-pareto.png"
  # the printed health sections of docs/health.md
  bash docs/health-example.sh "$kvsim"

fi
exit $status
