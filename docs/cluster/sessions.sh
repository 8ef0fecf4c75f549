#!/usr/bin/env bash
# The tables of docs/cluster.md "Multi-turn sessions" (docs/figures.sh sessions-fit and
# sessions-routing):
#   fit      the Mooncake synthetic trace's prefix-reuse statistics (`kvsim trace-stats`)
#            against the session generator fitted to it (workloads/sessions-mooncake-fit.yaml),
#            the generator's as mean and standard deviation over seeds 1-5;
#   classes  the trace's chains split into the fitted generator's classes (a single request
#            of at most 2,000 prompt tokens, a longer single request, a chain of two or more)
#            with the figures its parameters come from (count, mean and median of the first
#            prompt, of the outputs, of the turn gaps), by the chain rule of `kvsim trace-stats`;
#   routing  the trace replayed (workloads/mooncake-synthetic.yaml) and the fitted generator
#            run on 8 x H200, under least-outstanding-tokens and session-affinity (the
#            trace's sessions from its prefix chains): the prefix cache's hit rate, TTFT and
#            the load imbalance (the busiest replica's prompt tokens over the mean).
# usage: docs/cluster/sessions.sh KVSIM fit|classes|routing   (run from the repository root)
set -euo pipefail
kvsim=$1 what=$2
trace=../shared/traces/mooncake_synthetic_trace.jsonl
fitw=workloads/sessions-mooncake-fit.yaml
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

fit() {
  "$kvsim" trace-stats --csv "$trace" > "$tmp/trace.csv"
  for s in 1 2 3 4 5; do "$kvsim" trace-stats --csv --seed $s "$fitw" > "$tmp/gen$s.csv"; done
  python3 - "$tmp" <<'PY'
import csv, statistics, sys
d = sys.argv[1]
def load(p): return {r["metric"]: float(r["value"]) for r in csv.DictReader(open(p))}
t = load(d + "/trace.csv"); g = [load("%s/gen%d.csv" % (d, s)) for s in range(1, 6)]
rows = [("requests", "requests", "%.0f"), ("blocks_seen_share", "prefix blocks seen before", "%.3f"),
        ("requests_reusing", "requests reusing a prefix", "%.3f"),
        ("reuse_mean", "reused share per request, mean", "%.3f"),
        ("reuse_p90", "reused share per request, p90", "%.3f"),
        ("prompt_mean", "prompt tokens, mean", "%.0f"), ("prompt_p50", "prompt tokens, p50", "%.0f"),
        ("prompt_p90", "prompt tokens, p90", "%.0f"), ("prompt_p99", "prompt tokens, p99", "%.0f"),
        ("output_mean", "output tokens, mean", "%.0f"), ("output_p50", "output tokens, p50", "%.0f"),
        ("chains", "prefix chains (sessions)", "%.0f"),
        ("chains_multi_share", "chains of 2+ requests", "%.3f"),
        ("turns_mean", "requests per chain", "%.2f"),
        ("turns_multi_mean", "requests per chain of 2+", "%.2f"),
        ("turns_max", "longest chain", "%.0f"),
        ("first_prompt_p50", "first prompt tokens, p50", "%.0f"),
        ("turn_gap_p50_s", "turn gap p50 (s)", "%.1f"), ("turn_gap_mean_s", "turn gap mean (s)", "%.1f"),
        ("turn_growth_p50", "prompt growth per turn, p50 (tokens)", "%.0f")]
print("| statistic | trace | generator (seeds 1-5) |")
print("|---|---:|---:|")
for k, name, f in rows:
    v = [x[k] for x in g]
    print("| %s | %s | %s ± %s |" % (name, f % t[k], f % statistics.mean(v), f % statistics.stdev(v)))
PY
}

# run LABEL WORKLOAD [--set ...]: one row of the routing table
run() {
  local label=$1 w=$2
  shift 2
  "$kvsim" run -q "$w" -o "$tmp/run" --set outputs.chart=false "$@" > /dev/null
  python3 - "$tmp/run" "$label" <<'PY'
import csv, sys, collections
d, label = sys.argv[1], sys.argv[2]
s = next(csv.DictReader(open(d + "/summary.csv")))
tok = collections.Counter()
for r in csv.DictReader(open(d + "/requests.csv")):
    tok[r["replica"]] += int(r["prompt_tokens"])
mean = sum(tok.values()) / 8
print("| %s | %s | %.3f | %.3f | %.2f | %.2f |" % (label.split(":")[0], label.split(":")[1],
      float(s["cache_hit_rate"]), float(s["ttft_p50_s"]), float(s["ttft_p99_s"]), max(tok.values()) / mean))
PY
  rm -rf "$tmp/run"
}

routing() {
  echo "| workload | router | prefix hit rate | TTFT p50 (s) | TTFT p99 (s) | imbalance |"
  echo "|---|---|---:|---:|---:|---:|"
  run "trace replay:least-outstanding-tokens" workloads/mooncake-synthetic.yaml --set engine=vllm
  run "trace replay:session-affinity (prefix chains)" workloads/mooncake-synthetic.yaml --set engine=vllm \
    --set cluster.router=session-affinity --set workload.arrival.sessions=prefix-chains
  run "fitted generator:least-outstanding-tokens" "$fitw" --set cluster.router=least-outstanding-tokens
  run "fitted generator:session-affinity" "$fitw"
}

classes() {
  python3 - "$trace" <<'PY'
import json, statistics, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
owner, parent, root = {}, [], []
for i, r in enumerate(rows):  # the chain rule of sim/reuse.c
    h, k = r["hash_ids"], 0
    while k < len(h) and h[k] in owner:
        k += 1
    p = owner[h[k - 1]] if k else -1
    if p >= 0 and 2 * k < len(rows[p]["hash_ids"]):
        p = -1  # a shared start shorter than half the parent's ids: a system prompt
    parent.append(p); root.append(root[p] if p >= 0 else i)
    for x in h:
        owner[x] = i
size = {}
for r in root:
    size[r] = size.get(r, 0) + 1
cls = {"chat (1 request, <= 2000 tokens)": [], "document (1 request, > 2000)": [], "multi (2+ requests)": []}
for i, p in enumerate(parent):
    if p >= 0:
        continue
    key = "multi (2+ requests)" if size[i] > 1 else \
          "chat (1 request, <= 2000 tokens)" if rows[i]["input_length"] <= 2000 else "document (1 request, > 2000)"
    cls[key].append(i)
def mm(v): return "%.0f / %.0f" % (statistics.mean(v), statistics.median(v))
print("| class | chains | share | first prompt mean / median | output mean / median | requests per chain | turn gap mean / median (s) |")
print("|---|---:|---:|---:|---:|---:|---:|")
n = sum(len(v) for v in cls.values())
for name, roots in cls.items():
    members = [i for i in range(len(rows)) if root[i] in set(roots)]
    gaps = [(rows[i]["timestamp"] - rows[parent[i]]["timestamp"]) / 1000 for i in members if parent[i] >= 0]
    print("| %s | %d | %.4f | %s | %s | %.2f | %s |" % (name, len(roots), len(roots) / n,
          mm([rows[i]["input_length"] for i in roots]), mm([rows[i]["output_length"] for i in members]),
          len(members) / len(roots), mm(gaps) if gaps else "-"))
PY
}

case $what in
  fit) fit ;;
  classes) classes ;;
  routing) routing ;;
  *) echo "usage: $0 KVSIM fit|classes|routing" >&2; exit 2 ;;
esac
