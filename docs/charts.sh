#!/usr/bin/env bash
# Regenerates docs/charts.md, the gallery of every kind of chart kvsim draws,
# and (unless --check) the PNGs it shows, docs/charts/NAME.png, each from the
# command the gallery names beside it.
#
# usage: docs/charts.sh [--check] [--fast] [KVSIM]
#   --check  compare docs/charts.md with what this script would write, check
#            that every PNG it names exists and that every plots/*.gp script
#            has a chart in it; render nothing; exit 1 naming what differs
#            (tests/figures_test.sh).  The PNGs themselves are not compared:
#            gnuplot and cairo versions draw them differently.
#   --fast   skip the charts of a real backend (calibrate, validate: minutes
#            of measurement on this machine), keeping the committed PNGs
# KVSIM defaults to build-release/src/kvsim, else build/src/kvsim.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
check=0 fast=0 kvsim=
for a in "$@"; do
  case $a in
    --check) check=1 ;;
    --fast) fast=1 ;;
    -*) echo "charts.sh: unknown option $a" >&2; exit 2 ;;
    *) kvsim=$a ;;
  esac
done
if [ -z "$kvsim" ]; then
  kvsim=$root/build-release/src/kvsim
  [ -x "$kvsim" ] || kvsim=$root/build/src/kvsim
fi
cd "$root"

# NAME|SCRIPT|SLOW|TITLE|COMMAND (as the gallery shows it)|WHAT IT SHOWS.  SLOW 1: a real backend.
charts=(
  "run-one|run.gp|0|A run, one tenant|kvsim run workloads/default.yaml --set outputs.chart=true|Latency CDFs of TTFT, TPOT and end-to-end latency (log x, tics at 1-2-5); KV memory reserved (solid) and holding live tokens (dashed) per replica against the pool's capacity; waiting and running requests per replica on integer tics."
  "run-tenants-slo|run.gp|0|A run with tenants and SLOs|kvsim run workloads/tenants.yaml --set outputs.chart=true --set 'slo={ttft: 5s, ttft_p99: 10s, e2e_p99: 60s}'|Two rows of panels: the run's CDFs with the SLO limits (a per-request limit as a dashed vertical line, a percentile limit as a diamond the curve must pass left of), then per tenant the CDFs (TTFT solid, end-to-end dashed), weighted service (a different dash per tenant) and waiting requests."
  "run-bands|run.gp|0|A run of many replicas|kvsim run workloads/default.yaml --set workload.requests=2000 --set cluster.replicas=12 --set workload.arrival.rate=20 --set outputs.chart=true|Beyond 8 replicas the time series are the min-to-max band and the median across replicas instead of one line each; long runs are averaged in bins, and the panel titles say so."
  "run-uncertainty|uncertainty.gp|0|A run's uncertainty bands|kvsim run workloads/vllm.yaml --uncertainty 20 --set workload.arrival.rate=2.8 (its uncertainty.png)|Every latency metric's point estimate (dot) and its 5-95% band (box; cross: the median draw) over 20 draws of the step-time coefficients from their fitted intervals, on a log axis; at 95% of capacity the TTFT bands are wide and skewed, the TPOT and E2E ones narrow (docs/metrics.md, \"Uncertainty bands\")."
  "run-autoscale|autoscale.gp|0|An autoscaled day|kvsim run workloads/autoscale-diurnal.yaml (its autoscale.png)|Replicas active, starting and draining over a simulated day of diurnal load (steps), with the SLO attainment of each decision window on the right axis; GPU-hours in the title (docs/cluster.md, \"Autoscaling\")."
  "sweep-target|sweep.gp|0|A sweep with a capacity target|kvsim sweep workloads/sweep-slo.yaml; kvsim plot out/slo --x cluster.replicas --by workload.arrival.rate|One line per value of the second axis, each point the mean over seeds with min-max bars; the target's condition as a dashed red line and the cheapest configuration meeting it ringed; the x axis in words with its unit."
  "sweep-coincide|sweep.gp|0|A sweep whose lines coincide|kvsim sweep workloads/sweep-capacity.yaml (its default throughput chart)|Each line its own marker, dash and marker size (later lines smaller, drawn over the earlier), so lines that lie on each other both stay visible; the title says which coincide."
  "sweep-load|sweep.gp|0|A sweep over load|kvsim sweep workloads/sweep-sched-rate.yaml (its default TTFT chart)|An axis whose larger value means less load says so in its label (arrival time scale: lower = more load); the legend below the plot, headed by the axis it splits on."
  "sweep-bars|sweep.gp|0|A sweep over names|kvsim sweep workloads/sweep-cache-context.yaml; kvsim plot out/cache-context --x cache.name --metric ttft_p99_s|Clustered bars when the x axis is not numeric (schedulers, cache models), one bar per value of the second axis, min-max bars over the points averaged."
  "pareto|pareto.gp|0|Pareto fronts|kvsim sweep workloads/sweep-slo.yaml (its pareto.png)|Every configuration in grey and one front per load; GPUs on integer tics, labels from the metric documentation (kvsim list metrics)."
  "calibrate-fit|calibration.gp|1|A calibration's fit|kvsim calibrate --model tiny --threads 1 -o out/cal/cpu-tiny.yaml (its cpu-tiny-fit.png)|Predicted against measured iteration time, log-log, with y = x and ±10% guides: the grid points (decode, prefill, mixed) over the many replayed batches (translucent); only the kinds present in the legend, with their counts; the model, device, backend, engine and scheduler in the title."
  "validate-iterations|calibration.gp|1|A validation's iterations|kvsim validate workloads/validate-cpu.yaml --profile out/cal/cpu-tiny.yaml --threads 1 (its iterations.png)|The same chart for a validation run: every iteration of the real run against the perf model's prediction with the calibrated profile; kinds with no point (the grid) stay out of the legend."
)

# the gallery's text: every chart's title, command, what it shows, and its PNG
gallery() {
  cat <<'EOF'
# Charts

Every kind of chart kvsim draws, each rendered by `docs/charts.sh` with the command shown.
kvsim hands gnuplot the data it has already reduced and labelled; `plots/*.gp` only draw. The
charts need gnuplot; without it kvsim prints how to install it and writes everything else. In
every chart:

- the axes are labelled in words with their units, from the metric documentation (`kvsim list
  metrics`) and, for a sweep axis, the sweep file's `label:` or kvsim's default name for the key
  (docs/sweeps.md);
- the title names the model, the device, the scheduler, the cache and the engine (a value that
  differs between a sweep's points shows each value: `scheduler fifo/drf/vtc`);
- counts (requests, GPUs, replicas) tick at integers;
- the legend sits below or inside the plot and lists no series without points;
- each line has its own marker and dash, so that lines on top of each other stay visible, and a
  sweep chart's title names lines equal at every point.

EOF
  local i=0 t name script slow title cmd what
  for t in "${charts[@]}"; do
    IFS='|' read -r name script slow title cmd what <<< "$t"
    i=$((i + 1))
    printf '## %d. %s\n\n`%s`\n\n%s Drawn by `plots/%s`.\n\n![%s](charts/%s.png)\n\n' \
      "$i" "$title" "$cmd" "$what" "$script" "$title" "$name"
  done
}

status=0
if [ $check = 1 ]; then
  tmp=$(mktemp)
  trap 'rm -f "$tmp"' EXIT
  gallery > "$tmp"
  if cmp -s "$tmp" docs/charts.md; then
    echo "charts.sh: docs/charts.md: up to date"
  else
    echo "charts.sh: docs/charts.md differs from docs/charts.sh's gallery; rerun docs/charts.sh:"
    diff docs/charts.md "$tmp" | head -20 || true
    status=1
  fi
  for t in "${charts[@]}"; do
    IFS='|' read -r name _ <<< "$t"
    [ -s "docs/charts/$name.png" ] || { echo "charts.sh: docs/charts/$name.png: missing"; status=1; }
  done
  for gp in plots/*.gp; do
    grep -q "plots/$(basename "$gp")\`" docs/charts.md ||
      { echo "charts.sh: $gp draws a chart the gallery does not show"; status=1; }
  done
  exit $status
fi

command -v gnuplot > /dev/null || { echo "charts.sh: needs gnuplot" >&2; exit 1; }
kvsim=$(cd "$(dirname "$kvsim")" && pwd)/$(basename "$kvsim")
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mkdir -p docs/charts
# put NAME FILE: the gallery's PNG NAME from FILE
put() { cp "$2" "docs/charts/$1.png"; echo "charts.sh: docs/charts/$1.png"; }

"$kvsim" run -q workloads/default.yaml -o "$tmp/one" --set outputs.chart=true
put run-one "$tmp/one/run.png"
"$kvsim" run -q workloads/tenants.yaml -o "$tmp/ten" --set outputs.chart=true \
  --set 'slo={ttft: 5s, ttft_p99: 10s, e2e_p99: 60s}'
put run-tenants-slo "$tmp/ten/run.png"
"$kvsim" run -q workloads/default.yaml -o "$tmp/bands" --set workload.requests=2000 \
  --set cluster.replicas=12 --set workload.arrival.rate=20 --set outputs.chart=true
put run-bands "$tmp/bands/run.png"
"$kvsim" run -q workloads/vllm.yaml -o "$tmp/unc" --uncertainty 20 --set workload.arrival.rate=2.8 \
  --set outputs.chart=true 2> /dev/null
put run-uncertainty "$tmp/unc/uncertainty.png"
"$kvsim" run -q workloads/autoscale-diurnal.yaml -o "$tmp/as"
put run-autoscale "$tmp/as/autoscale.png"
for w in sweep-slo sweep-capacity sweep-sched-rate sweep-cache-context; do
  "$kvsim" sweep "workloads/$w.yaml" -o "$tmp/$w" -q > /dev/null
done
"$kvsim" plot "$tmp/sweep-slo" --x cluster.replicas --by workload.arrival.rate > /dev/null
put sweep-target "$tmp/sweep-slo/sweep-ttft_p99_s.png"
put sweep-coincide "$tmp/sweep-capacity/sweep-throughput_tok_s.png"
put sweep-load "$tmp/sweep-sched-rate/sweep-ttft_p99_s.png"
"$kvsim" plot "$tmp/sweep-cache-context" --x cache.name --metric ttft_p99_s > /dev/null
put sweep-bars "$tmp/sweep-cache-context/sweep-ttft_p99_s.png"
put pareto "$tmp/sweep-slo/pareto.png"
if [ $fast = 0 ]; then
  "$kvsim" calibrate --model tiny --threads 1 --quiet -o "$tmp/cal/cpu-tiny.yaml"
  put calibrate-fit "$tmp/cal/cpu-tiny-fit.png"
  "$kvsim" validate workloads/validate-cpu.yaml --profile "$tmp/cal/cpu-tiny.yaml" --threads 1 \
    --quiet -o "$tmp/val"
  put validate-iterations "$tmp/val/iterations.png"
else
  echo "charts.sh: --fast: docs/charts/calibrate-fit.png and validate-iterations.png kept"
fi
gallery > docs/charts.md
echo "charts.sh: docs/charts.md"
