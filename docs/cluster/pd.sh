#!/usr/bin/env bash
# DistServe's headline comparison in kvsim (docs/cluster.md "Prefill/decode
# disaggregation"): SLO attainment against per-GPU request rate for a
# colocated and disaggregated deployments of OPT-13B on three A100-80GB GPUs
# (splits of replicas, and prefill and decode groups at tensor parallel 2),
# ShareGPT lengths within OPT's 2048-token context, Poisson arrivals, a
# request meeting its SLO when TTFT <= 0.25 s and TPOT <= 0.1 s (DistServe,
# OSDI 2024, Fig. 8 upper left; its artifact's plotting script sets these
# SLOs and the 90% target).  Goodput per GPU is the rate where the attainment
# (mean of 3 seeds) first falls through 90%, interpolated linearly between the
# two rates around it, as the artifact's find_intersection does.
# A second table holds the rate fixed at 1.5 req/s per GPU and scales both
# SLOs (Fig. 8 lower left: attainment against "SLO scale"), from the same
# runs' requests.csv.  Prints the Markdown tables that docs/figures.sh
# pastes into docs/cluster.md.
#
# usage: docs/cluster/pd.sh [KVSIM]    (KVSIM: build-release/src/kvsim, else build/src/kvsim)
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
kvsim=${1:-$root/build-release/src/kvsim}
[ -x "$kvsim" ] || kvsim=$root/build/src/kvsim
trace=$root/../shared/traces/sharegpt_8k_filtered_stats_llama2_tokenizer.csv
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# ShareGPT rows whose prompt + output fit OPT's context (DistServe filters its datasets so)
awk -F, 'NR == 1 { print "num_prefill_tokens,num_decode_tokens"; next }
         $1 + $2 <= 2048 { print $1 "," $2 }' "$trace" > "$tmp/sharegpt-opt.csv"
cp "$root/docs/cluster/distserve-opt13b.yaml" "$tmp/w.yaml"

# NAME|GPUS|--set assignments of the deployment, separated by ';'
deployments=(
  "colocated: 3 replicas|3|cluster.replicas=3"
  "disaggregated: 2 prefill + 1 decode|3|cluster.replicas=3;cluster.prefill_replicas=2"
  "disaggregated: 1 prefill + 2 decode|3|cluster.replicas=3;cluster.prefill_replicas=1"
  "disaggregated: prefill TP2 + decode TP1|3|cluster={groups: [{name: p, role: prefill, tensor_parallel: 2}, {name: d, role: decode}]}"
  "disaggregated: prefill TP1 + decode TP2|3|cluster={groups: [{name: p, role: prefill}, {name: d, role: decode, tensor_parallel: 2}]}"
)
rates="0.25 0.5 0.75 1 1.25 1.5 1.75 2 2.25 2.5 3"
seeds="1 2 3"
for d in "${deployments[@]}"; do
  IFS='|' read -r name gpus sets <<< "$d"
  for r in $rates; do
    for seed in $seeds; do
      total=$(awk -v r="$r" -v g="$gpus" 'BEGIN { printf "%.6g", r * g }')
      set_args=()
      IFS=';' read -r -a assigns <<< "$sets"
      for a in "${assigns[@]}"; do set_args+=(--set "$a"); done
      req=false
      [ "$r" = 1.5 ] && req=true
      "$kvsim" run "$tmp/w.yaml" -o "$tmp/o" -q --set seed="$seed" --set outputs.requests=$req \
        --set workload.arrival.rate="$total" "${set_args[@]}" > /dev/null 2>&1
      att=$(python3 -c "import csv; print(next(csv.DictReader(open('$tmp/o/summary.csv')))['slo_attainment'])")
      echo "$name|$gpus|$r|$seed|$att" >> "$tmp/points"
      if [ $req = true ]; then
        python3 -c "import csv; r = next(csv.DictReader(open('$tmp/o/summary.csv'))); print('$name|' + r['ttft_p90_s'] + '|' + r['tpot_p90_s'])" >> "$tmp/p90"
        python3 - "$tmp/o/requests.csv" "$name" >> "$tmp/scaled" <<'PY'
import csv, sys
rows = list(csv.DictReader(open(sys.argv[1])))
for sc in (1.6, 1.4, 1.2, 1.0, 0.8, 0.6, 0.4):
    ok = sum(1 for r in rows if r["status"] == "completed" and float(r["ttft_s"]) <= 0.25 * sc
             and (r["tpot_s"] == "" or float(r["tpot_s"]) <= 0.1 * sc))
    print("%s|%g|%.6f" % (sys.argv[2], sc, ok / len(rows)))
PY
      fi
    done
  done
done
python3 - "$tmp/points" "$rates" "$tmp/scaled" "$tmp/p90" <<'PY'
import collections, sys
rows = collections.OrderedDict()
for line in open(sys.argv[1]):
    name, gpus, rate, seed, att = line.rstrip("\n").split("|")
    rows.setdefault(name, collections.OrderedDict()).setdefault(float(rate), []).append(float(att))
rates = [float(r) for r in sys.argv[2].split()]

def goodput(curve, target=0.9):
    xs = list(curve)
    ys = [sum(v) / len(v) for v in curve.values()]
    for i in range(len(xs) - 1):
        if (ys[i] < target) != (ys[i + 1] < target):
            return xs[i] + (target - ys[i]) * (xs[i + 1] - xs[i]) / (ys[i + 1] - ys[i])
    return float("nan")

base = None
print("| deployment (3 x A100-80GB) | " + " | ".join("%g" % r for r in rates) +
      " | goodput (req/s/GPU) | vs colocated |")
print("|---|" + "---:|" * len(rates) + "---:|---:|")
for name, curve in rows.items():
    g = goodput(curve)
    base = g if base is None else base
    cells = ["%.0f%%" % (100 * sum(v) / len(v)) for v in curve.values()]
    print("| %s | %s | %.2f | %.2fx |" % (name, " | ".join(cells), g, g / base))

scaled = collections.OrderedDict()
for line in open(sys.argv[3]):
    name, sc, att = line.rstrip("\n").split("|")
    scaled.setdefault(name, collections.OrderedDict()).setdefault(float(sc), []).append(float(att))
print()
print("SLO attainment at 1.5 req/s per GPU with both SLOs scaled (1.0: TTFT 0.25 s, TPOT 0.1 s):")
print()
scales = list(next(iter(scaled.values())))
p90 = collections.defaultdict(list)
for line in open(sys.argv[4]):
    name, ttft, tpot = line.rstrip("\n").split("|")
    p90[name].append((float(ttft), float(tpot)))
print("| deployment | " + " | ".join("%g" % x for x in scales) +
      " | tightest scale at 90% | TTFT p90 (s) | TPOT p90 (s) |")
print("|---|" + "---:|" * len(scales) + "---:|---:|---:|")
for name, curve in scaled.items():
    ys = [sum(v) / len(v) for v in curve.values()]
    tight = [x for x, y in zip(scales, ys) if y >= 0.9]
    pts = p90[name]
    print("| %s | %s | %s | %.3f | %.3f |" % (name, " | ".join("%.0f%%" % (100 * y) for y in ys),
                                "%g" % min(tight) if tight else "none",
                                sum(t for t, _ in pts) / len(pts), sum(t for _, t in pts) / len(pts)))
PY
