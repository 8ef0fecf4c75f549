#!/usr/bin/env bash
# One fidelity run, cached: the worker of configs/fidelity/run.sh and fit.sh (one call per
# line that lib.sh's fid_lines prints; xargs runs them two at a time).
#
# usage: run1.sh KVSIM CACHE 'WORKLOAD|DEVICE|PERF|SETS'   (CACHE: one directory per stamp, lib.sh)
#   PERF: "key=value;..." written into a copy of the device profile's perf: mapping (kvsim's
#   --set cannot reach a named profile's fields); SETS: "key=value ..." passed as --set.
# Writes CACHE/NAME.m, NAME the line with |, /, space and ; as +, with one "metric value" line per
# metric (latencies in ms: means, nearest-rank p50/p90/p99 and maxima over completed requests,
# itl_mean the token-weighted mean gap, itl_p50 the median TPOT; req_s, out_tok_s, tok_s from
# summary.csv), or the single line "failed" when kvsim failed.  A KEY.m already there is kept.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
kvsim=$1 cache=$2 line=$3
IFS='|' read -r w dev perf sets <<< "$line"
name=${line//[|\/ ;]/+}
[ -s "$cache/$name.m" ] && exit 0
tmp=$(mktemp -d "${TMPDIR:-/tmp}/kvsim-fid.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
args=()
if [ -n "$perf" ]; then
  # the device profile with the perf keys replaced (or added after "perf:")
  awk -v kv="$perf" 'BEGIN { n = split(kv, a, ";"); for (i = 1; i <= n; i++) {
      split(a[i], p, "="); if (p[1] != "") { val[p[1]] = p[2]; order[++m] = p[1] } } }
    /^perf:/ { print; inperf = 1
      for (i = 1; i <= m; i++) printf "  %s: %s\n", order[i], val[order[i]]; next }
    inperf && /^  [a-z_]+:/ { k = $1; sub(":", "", k); if (k in val) next }
    inperf && !/^  / { inperf = 0 }
    { print }' "$here/../devices/$dev.yaml" > "$tmp/device.yaml"
  args+=(--set "device=$tmp/device.yaml")
fi
for s in $sets; do args+=(--set "$s"); done
rc=0
"$kvsim" run -q "$here/$w.yaml" -o "$tmp/o" --set outputs.chart=false \
  ${args[@]+"${args[@]}"} > /dev/null 2> "$tmp/err" || rc=$?
if [ $rc -ne 0 ]; then
  echo "fidelity: kvsim run $w.yaml ${args[*]-} failed: $(head -c 300 "$tmp/err")" >&2
  [ $rc -ge 126 ] && exit 1   # kvsim did not start: nothing to cache
  echo failed > "$cache/$name.m"
  exit 0
fi
d=$tmp/o
# one "metric value" line per completed request and latency, sorted by metric then value
awk -F, 'NR == 1 { for (i = 1; i <= NF; i++) h[$i] = i; next } $h["status"] == "completed" {
    print "ttft", $h["ttft_s"] * 1000; print "e2e", $h["e2e_s"] * 1000
    if ($h["output_tokens"] > 1) print "tpot", $h["tpot_s"] * 1000 }' "$d/requests.csv" |
  sort -k1,1 -k2,2g |
  awk 'function flush(  k, r) { if (n == 0) return; printf "%s_mean %.6g\n", m, s / n
      for (k = 1; k <= 3; k++) { r = int((p[k] * n + 99) / 100); if (r < 1) r = 1
        printf "%s_p%s %.6g\n", m, p[k], v[r]
        if (m == "tpot" && p[k] == 50) printf "itl_p50 %.6g\n", v[r] }
      printf "%s_max %.6g\n%s_min %.6g\n", m, v[n], m, v[1] }
    BEGIN { split("50 90 99", p, " ") }
    $1 != m { flush(); m = $1; n = 0; s = 0 } { v[++n] = $2; s += $2 } END { flush() }' > "$tmp/m"
awk -F, 'NR == 1 { for (i = 1; i <= NF; i++) h[$i] = i; next }
  $h["status"] == "completed" && $h["output_tokens"] > 1 {
    t += $h["e2e_s"] - $h["ttft_s"]; g += $h["output_tokens"] - 1 }
  END { if (g) printf "itl_mean %.6g\n", 1000 * t / g }' "$d/requests.csv" >> "$tmp/m"
awk -F, 'NR == 1 { for (i = 1; i <= NF; i++) h[$i] = i; next } NR == 2 {
  printf "req_s %s\nout_tok_s %s\ntok_s %s\n", $h["requests_per_s"], $h["output_tok_s"],
    $h["throughput_tok_s"] }' "$d/summary.csv" >> "$tmp/m"
mv "$tmp/m" "$cache/$name.m"
