#!/usr/bin/env bash
# Overload: a cluster offered a hundred times what it can serve.
#
# One Llama-2-7B replica on an A100-80GB with a pool of about 3000 tokens
# (memory.share 0.205, `chunked`).  Tenant `bulk` sends requests of 210-650
# tokens; `huge` requests of 3600 tokens, within the context but larger than
# the pool; `over` requests of 4200 tokens, beyond the 4096-token context
# (oversize: reject).  memory.context_check: warn keeps the huge requests to be
# rejected for their size (SGLang's rule) instead of refusing the run (vLLM's).  A probe run measures the replica's capacity in
# requests/s; the real runs offer 100 times that rate, so the queue grows
# through the arrivals and the KV cache of the requests in flight reaches
# thousands of pools.  Checked:
#   - the run completes; summary.csv accounts for every request: the bulk
#     completed, every huge one rejected_pool, every over one
#     rejected_context (per tenant in tenants.csv too);
#   - the KV of the requests in flight at the peak is >= 100x the pool;
#   - kvsim's own memory follows the requests in flight, not the trace or the
#     events: peak RSS (/usr/bin/time -f %M) grows by at most 1 KiB per extra
#     request in flight between 2,000 and 20,000 requests, and stays within
#     64 MiB of the start-up footprint (`kvsim list`) in a plain build (not checked under sanitizers, whose allocator
#     and shadow memory set their own footprint).
set -u
kvsim=$1
. "$(dirname "$0")/testutil.sh"

if [ ! -x /usr/bin/time ]; then
  echo "SKIP: /usr/bin/time is missing"
  exit 77
fi

# workload N RATE: the workload file for N requests at RATE per second
workload() {
  cat > "$tmp/w$1.yaml" <<YAML
model: llama-2-7b
device: a100-80g
memory: {share: 0.205, context_check: warn}
cache: chunked
workload:
  requests: $1
  oversize: reject
  arrival: {process: poisson, rate: $2}
  tenants:
    - {name: bulk, share: 18, lengths: {dist: uniform, prompt_min: 200, prompt_max: 600, output_min: 10, output_max: 50}}
    - {name: huge, share: 1, lengths: {dist: fixed, prompt: 3500, output: 100}}
    - {name: over, share: 1, lengths: {dist: fixed, prompt: 4000, output: 200}}
outputs: {sample_interval: 1s, chart: false}
YAML
}

# col FILE NAME: the value of column NAME in the one-row CSV FILE
col() {
  awk -F, -v k="$2" 'NR == 1 { for (i = 1; i <= NF; i++) if ($i == k) c = i }
                     NR == 2 && c { print $c }' "$1"
}

# tenant FILE NAME COLUMN: a column of one tenant's row in tenants.csv
tenant() {
  awk -F, -v t="$2" -v k="$3" 'NR == 1 { for (i = 1; i <= NF; i++) if ($i == k) c = i }
                               NR > 1 && $1 == t { print $c }' "$1"
}

# run N RATE: runs N requests at RATE into $tmp/rN, its peak RSS (KiB) in $tmp/rssN
run() {
  workload "$1" "$2"
  /usr/bin/time -f %M -o "$tmp/rss$1" "$kvsim" run -q "$tmp/w$1.yaml" -o "$tmp/r$1" \
    && ok || bad "run of $1 requests at $2/s"
}

run 500 100000
cap=$(col "$tmp/r500/summary.csv" requests_per_s)
rate=$(awk -v c="$cap" 'BEGIN { printf "%.3f", 100 * c }')
echo "capacity $cap requests/s; offering $rate"

for n in 2000 20000; do
  run $n "$rate"
  s=$tmp/r$n/summary.csv t=$tmp/r$n/tenants.csv
  req=$(col "$s" requests) done=$(col "$s" completed)
  rc=$(col "$s" rejected_context) rp=$(col "$s" rejected_pool)
  [ "$req" = "$n" ] && [ $((done + rc + rp)) -eq "$n" ] && ok \
    || bad "$n: $req requests, $done completed, $rc + $rp rejected"
  [ "$(tenant "$t" bulk completed)" = "$(tenant "$t" bulk arrived)" ] && ok || bad "$n: bulk not all completed"
  [ "$(tenant "$t" huge rejected)" = "$(tenant "$t" huge arrived)" ] && [ "$rp" = "$(tenant "$t" huge arrived)" ] \
    && [ "$rp" -gt 0 ] && ok || bad "$n: rejected_pool $rp, huge tenant $(tenant "$t" huge arrived)"
  [ "$(tenant "$t" over rejected)" = "$(tenant "$t" over arrived)" ] && [ "$rc" = "$(tenant "$t" over arrived)" ] \
    && [ "$rc" -gt 0 ] && ok || bad "$n: rejected_context $rc, over tenant $(tenant "$t" over arrived)"
  grep -c ',rejected_pool,' "$tmp/r$n/requests.csv" | grep -qx "$rp" && ok || bad "$n: requests.csv rejected_pool rows"
  # KV in flight at the peak against the pool: mean bulk request 430 tokens of 512 KiB
  awk -v p="$(col "$s" peak_in_flight)" -v pool="$(col "$s" kv_pool_bytes)" \
    'BEGIN { x = p * 430 * 524288 / pool; printf "%d requests: peak in flight %d, %.0fx the pool\n", '"$n"', p, x; exit !(x >= 100) }' \
    && ok || bad "$n: demand in flight below 100x the pool"
done

f2=$(col "$tmp/r2000/summary.csv" peak_in_flight) f20=$(col "$tmp/r20000/summary.csv" peak_in_flight)
m2=$(cat "$tmp/rss2000") m20=$(cat "$tmp/rss20000")
echo "peak RSS: $m2 KiB with $f2 requests in flight, $m20 KiB with $f20"
awk -v a="$m2" -v b="$m20" -v fa="$f2" -v fb="$f20" \
  'BEGIN { s = (b - a) * 1024 / (fb - fa); printf "%.0f bytes per request in flight\n", s; exit !(fb > fa && s <= 1024) }' \
  && ok || bad "memory grows faster than the requests in flight"
if ldd "$kvsim" 2>/dev/null | grep -q 'libasan\|libubsan\|libtsan'; then
  echo "sanitized build: the absolute bound is not checked"
else
  # above what the binary takes to start (the shared libraries it maps: a
  # CUDA build maps cuBLAS, ~220 MiB, before simulating anything)
  /usr/bin/time -f %M -o "$tmp/rss0" "$kvsim" list models >/dev/null
  m0=$(cat "$tmp/rss0")
  echo "start-up RSS: $m0 KiB"
  [ $((m20 - m0)) -le 65536 ] && ok || bad "peak RSS $m20 KiB is over 64 MiB above start-up ($m0 KiB)"
fi

echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
