#!/usr/bin/env bash
# Discoverability (issue 17, section 5):
#  1. kvsim list metrics names every column a run writes (the headers of a
#     real run's CSVs, and the sweep's metric columns) with a definition;
#  2. kvsim help CMD prints exactly kvsim CMD --help, for every command;
#     kvsim help (and --help) includes every command's own help;
#  3. --set cache.name=chunked over a file whose cache section holds full's
#     options exits 2 naming the option, the plugin it belongs to, and the
#     fix (--set cache=chunked), which works;
#  4. KVSIM_PROGRESS=1 with stderr not a terminal prints no terminal escapes.
# Usage: discover_test.sh KVSIM SOURCE_DIR
set -u
kvsim=$1
src=$2
. "$(dirname "$0")/testutil.sh"

"$kvsim" list metrics > "$tmp/m" && ok || bad "list metrics exit status"
grep -q "no definition" "$tmp/m" && bad "undocumented columns: $(grep 'no definition' "$tmp/m")" || ok
"$kvsim" run "$src/workloads/tenants.yaml" -o "$tmp/r" -q --set workload.requests=50 --set outputs.chart=false \
  --set 'slo={ttft: 5s, ttft_p99: 10s}' || bad "run"
for f in summary.csv tenants.csv requests.csv timeseries.csv tenant_timeseries.csv health.csv; do
  for c in $(head -1 "$tmp/r/$f" | tr ',' ' '); do
    awk -v f="$f:" -v c="$c" '$0 == f { in_f = 1; next } /^[a-z_]+\.csv:$/ { in_f = 0 } in_f && $1 == c { found = 1 } END { exit !found }' "$tmp/m" ||
      bad "$f column $c missing from kvsim list metrics"
  done
done
ok
# tiers.csv (written only with tiers below the pool) too
"$kvsim" run "$src/workloads/tiers.yaml" -o "$tmp/t" -q --set workload.requests=30 --set outputs.chart=false || bad "tiers run"
for c in $(head -1 "$tmp/t/tiers.csv" | tr ',' ' '); do
  awk -v f="tiers.csv:" -v c="$c" '$0 == f { in_f = 1; next } /^[a-z_]+\.csv:$/ { in_f = 0 } in_f && $1 == c { found = 1 } END { exit !found }' "$tmp/m" ||
    bad "tiers.csv column $c missing from kvsim list metrics"
done
ok
# the SLO columns carry a unit (not "-") and a definition saying when they are written
for c in slo_attainment goodput_req_s goodput_tok_s slo_met gpus; do
  awk -v c="$c" '$0 == "summary.csv:" { in_s = 1; next } /^[a-z_]+\.csv:$/ { in_s = 0 }
    in_s && $1 == c && $2 != "-" && /only with slo:/ { found = 1 } END { exit !found }' "$tmp/m" && ok ||
    bad "summary.csv $c: no unit or no 'only with slo:' in kvsim list metrics"
done

for c in run list sweep sweep-merge plot calibrate validate gpu; do
  "$kvsim" help "$c" > "$tmp/h1" 2>&1; s1=$?
  "$kvsim" "$c" --help > "$tmp/h2" 2>&1; s2=$?
  [ $s1 = 0 ] && [ $s1 = $s2 ] && cmp -s "$tmp/h1" "$tmp/h2" && ok || bad "kvsim help $c differs from kvsim $c --help"
  "$kvsim" help | grep -q "^usage: kvsim $c" && ok || bad "kvsim help lacks the usage of $c"
done
"$kvsim" help nope 2> "$tmp/e"; [ $? = 2 ] && grep -q "expected one of: run" "$tmp/e" && ok || bad "kvsim help nope"

"$kvsim" run "$src/workloads/default.yaml" -o "$tmp/c" -q --set cache.name=chunked 2> "$tmp/e"
[ $? = 2 ] && grep -q "default.yaml:[0-9]*:[0-9]*: cache.max_len: unknown key 'max_len' for cache 'chunked' (named by --set cache.name=chunked): it is an option of cache 'full'" "$tmp/e" &&
  grep -q -- "--set cache=chunked" "$tmp/e" && ok || bad "cache.name=chunked: $(cat "$tmp/e")"
"$kvsim" run "$src/workloads/default.yaml" -o "$tmp/c" -q --set cache=chunked --set workload.requests=20 &&
  ok || bad "--set cache=chunked"

KVSIM_PROGRESS=1 "$kvsim" run "$src/workloads/tenants.yaml" -o "$tmp/p" --set workload.requests=50 \
  --set outputs.chart=false > /dev/null 2> "$tmp/pe"
[ $? = 0 ] && ! grep -q $'\033' "$tmp/pe" && ok || bad "KVSIM_PROGRESS=1 wrote terminal escapes to a file"

echo "discover: $pass passed, $fail failed"
[ "$fail" = 0 ]
