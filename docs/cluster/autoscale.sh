#!/usr/bin/env bash
# The "Autoscaling" table of docs/cluster.md: workloads/autoscale-diurnal.yaml
# (a day of diurnal load) on its autoscaled fleet, against static fleets of N
# replicas (autoscale.min = max = N: billed the same way, all day), N from the
# autoscaled run's peak down to the smallest N whose SLO attainment is at least
# the autoscaled run's: the static fleet sized for the peak at the same SLO.
# Prints a Markdown table; with PNG also copies the autoscaled run's
# autoscale.png there.  About a minute of CPU per simulated day (macro steps).
# usage: docs/cluster/autoscale.sh KVSIM [PNG]
set -euo pipefail
[ $# -ge 1 ] || { echo "usage: $0 KVSIM [PNG]" >&2; exit 2; }
kvsim=$(realpath "$1")
png=${2:-}
root=$(cd "$(dirname "$0")/../.." && pwd)
w=$root/workloads/autoscale-diurnal.yaml
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# run NAME [options]: the day into $tmp/NAME
run() {
  local name=$1
  shift
  "$kvsim" run -q "$w" -o "$tmp/$name" --set outputs.chart=false "$@"
}

# stats DIR: "gpu_hours peak slo_attainment ttft_p99_s tpot_p99_s actions" (one group)
stats() {
  python3 - "$1" <<'PY'
import csv, sys
d = sys.argv[1]
rows = list(csv.DictReader(open(d + "/autoscale.csv")))
s = list(csv.DictReader(open(d + "/summary.csv")))[0]
peak = max(int(r["active"]) + int(r["starting"]) + int(r["draining"]) for r in rows)
acts = sum(1 for r in rows if int(r["delta"]) != 0)
print(rows[-1]["gpu_hours"], peak, s["slo_attainment"], s["ttft_p99_s"], s["tpot_p99_s"], acts)
PY
}

if [ -n "$png" ]; then
  run auto --set outputs.chart=true
  cp "$tmp/auto/autoscale.png" "$png"
else
  run auto
fi
read -r a_gh a_peak a_slo a_ttft a_tpot a_acts < <(stats "$tmp/auto")
lines=()
# static N: the line of the table; 0 when it meets the autoscaled run's attainment
static() {
  local n=$1 gh peak slo ttft tpot acts
  run "static$n" --set cluster.replicas=$n --set autoscale.min=$n --set autoscale.max=$n
  read -r gh peak slo ttft tpot acts < <(stats "$tmp/static$n")
  lines+=("$n $gh $slo $ttft $tpot")
  python3 -c "import sys; sys.exit(0 if float('$slo') >= float('$a_slo') else 1)"
}
# from the autoscaled peak down while the static fleet meets it; up while it misses
n=$a_peak
if static "$n"; then
  while [ "$n" -gt 1 ] && static $((n - 1)); do n=$((n - 1)); done
else
  while [ "$n" -lt $((2 * a_peak + 2)) ] && ! static $((n + 1)); do n=$((n + 1)); done
fi
python3 - "$a_gh" "$a_peak" "$a_slo" "$a_ttft" "$a_tpot" "$a_acts" "${lines[@]}" <<'PY'
import sys
a_gh, a_peak, a_slo, a_ttft, a_tpot, a_acts = sys.argv[1:7]
static = sorted((l.split() for l in sys.argv[7:]), key=lambda s: -int(s[0]))
ok = [s for s in static if float(s[2]) >= float(a_slo)]
sized = min(ok, key=lambda s: int(s[0])) if ok else None
print("| fleet | replicas | GPU-hours | SLO attainment | TTFT p99 (s) | TPOT p99 (s) | GPU-hours saved |")
print("|---|---|---|---|---|---|---|")
for n, gh, slo, ttft, tpot in static:
    what = ("static, sized for the peak" if sized and n == sized[0] else
            "static, meets the SLO" if float(slo) >= float(a_slo) else "static, misses the SLO")
    print("| %s | %s | %.1f | %.4f | %.3f | %.3f | |" % (what, n, float(gh), float(slo),
                                                      float(ttft), float(tpot)))
saved = "%.0f%%" % (100 * (1 - float(a_gh) / float(sized[1]))) if sized else "n/a"
print("| autoscaled (%s scale actions) | 1..%s | %.1f | %.4f | %.3f | %.3f | %s |" % (
    a_acts, a_peak, float(a_gh), float(a_slo), float(a_ttft), float(a_tpot), saved))
PY
