#!/usr/bin/env bash
# The figures of docs/cluster.md "Heterogeneous fleets and cost": the
# heterogeneous run (workloads/hetero.yaml: each group's routing share,
# requests, latency, GPU-hours and cost) and the fleet sweep
# (workloads/sweep-fleet.yaml: every fleet's p99 TTFT and TPOT, whether it
# meets the SLO, its cost, and the cheapest one meeting it).
# usage: docs/cluster/groups.sh KVSIM   (docs/figures.sh cluster-groups)
set -euo pipefail
kvsim=$(realpath "$1")
root=$(cd "$(dirname "$0")/../.." && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cd "$root"
"$kvsim" run -q workloads/hetero.yaml -o "$tmp/h" --set outputs.chart=false
"$kvsim" sweep workloads/sweep-fleet.yaml -o "$tmp/s" -j 2 > "$tmp/s.out" 2>/dev/null
python3 - "$tmp/h/groups.csv" "$tmp/h/summary.csv" "$tmp/s/sweep.csv" "$tmp/s.out" <<'PY'
import csv, sys
groups, summary, sweep, answer = sys.argv[1:5]
print("workloads/hetero.yaml (weight: auto, 24 req/s, 3000 requests)")
print("%-6s %-10s %8s %12s %9s %11s %11s %10s %9s" % ("group", "device", "replicas", "weight_share",
      "requests", "ttft_p99_s", "e2e_p99_s", "gpu_hours", "cost_usd"))
for r in csv.DictReader(open(groups)):
    print("%-6s %-10s %8s %12.3f %9s %11.3f %11.3f %10.4f %9.4f" % (r["group"], r["device"],
          r["replicas"], float(r["weight_share"]), r["requests"], float(r["ttft_p99_s"]),
          float(r["e2e_p99_s"]), float(r["gpu_hours"]), float(r["cost_usd"])))
s = next(csv.DictReader(open(summary)))
print("fleet: ttft_p99_s %.3f, tpot_p99_s %.4f, gpu_hours %.4f, cost_usd %.4f" % (
      float(s["ttft_p99_s"]), float(s["tpot_p99_s"]), float(s["gpu_hours"]), float(s["cost_usd"])))
print()
print("workloads/sweep-fleet.yaml (100 req/s, 1500 requests, mean of 2 seeds;")
print("SLO ttft_p99_s <= 1 and tpot_p99_s <= 0.06 on the seeds' mean)")
print("%5s %5s %9s %11s %11s %6s %9s" % ("A100", "H100", "USD/hour", "ttft_p99_s", "tpot_p99_s",
      "meets", "cost_usd"))
acc = {}
for r in csv.DictReader(open(sweep)):
    k = (int(r["cluster.groups[0].replicas"]), int(r["cluster.groups[1].replicas"]))
    acc.setdefault(k, []).append(r)
for (a, h), rows in sorted(acc.items()):
    t = [float(r["ttft_p99_s"]) for r in rows]
    p = [float(r["tpot_p99_s"]) for r in rows]
    c = [float(r["cost_usd"]) for r in rows]
    ok = sum(t) / len(t) <= 1 and sum(p) / len(p) <= 0.06
    print("%5d %5d %9.2f %11.3f %11.4f %6s %9.4f" % (a, h, float(rows[0]["cost_usd_per_hour"]),
          sum(t) / len(t), sum(p) / len(p), "yes" if ok else "no", sum(c) / len(c)))
for line in open(answer):
    if line.startswith("cheapest"):
        print(line.split(" (")[0])
PY
