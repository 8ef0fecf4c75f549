#!/usr/bin/env bash
# How sure a prediction is (docs/metrics.md "Load", "Uncertainty bands"):
#   - summary.csv's load_share is the arrival rate over capacity_req_s;
#   - the saturation warning (stderr) fires at 95% of capacity, with the
#     TTFT p50 at -3% and +3% step time, and stays quiet at 50%;
#   - an offline burst (all arrivals within 1 / capacity) has an empty
#     load_share and a note, not the "times capacity" warning, while a
#     Poisson run at 5x capacity still gets that warning;
#   - --uncertainty N: uncertainty.csv has a 5-95% band for every latency
#     metric that contains the run's own value, the same bytes for the same
#     seed (a second run), and the printed summary shows the bands;
#   - the host coefficients are drawn (a band with the device's intervals at 0), and
#     without the host model such a band is the point;
#   - the step-time scale is off by default: a run with --uncertainty
#     writes the same summary.csv as one without;
#   - memory.context_check: a workload whose longest context is more than
#     the KV cache is an error under vllm (exit 2, the message), a warning
#     under sglang or context_check: warn.
set -u
kvsim=$1
. "$(dirname "$0")/testutil.sh"

# workload RATE: Llama-2-7B on one A100-80GB, fixed 512/128 lengths, Poisson at RATE
workload() {
  cat > "$tmp/w.yaml" <<YAML
name: unc
model: llama-2-7b
device: a100-80g
seed: 7
batching:
  max_tokens: 2048
  max_seqs: 64
workload:
  requests: 600
  arrival:
    process: poisson
    rate: $1
  lengths:
    dist: fixed
    prompt: 512
    output: 128
outputs:
  chart: false
YAML
}
col() { # col FILE NAME: the value of column NAME in a header-and-one-row CSV
  awk -F, -v n="$2" 'NR == 1 { for (i = 1; i <= NF; i++) if ($i == n) c = i } NR == 2 { print $c }' "$1"
}

workload 1
"$kvsim" run -q -o "$tmp/probe" "$tmp/w.yaml" 2> "$tmp/probe.err" || bad "probe run failed: $(cat "$tmp/probe.err")"
cap=$(col "$tmp/probe/summary.csv" capacity_req_s)
share=$(col "$tmp/probe/summary.csv" load_share)
awk -v c="$cap" 'BEGIN { exit !(c > 1) }' && ok || bad "capacity_req_s '$cap' not above 1 req/s"
awk -v s="$share" -v c="$cap" 'BEGIN { exit !(s > 0.7 / c && s < 1.3 / c) }' && ok ||
  bad "load_share $share at 1 req/s is not about 1/capacity ($cap)"
grep -q warning "$tmp/probe.err" && bad "warning at 1 req/s of $cap: $(cat "$tmp/probe.err")" || ok

for pct in 50 95; do
  rate=$(awk -v c="$cap" -v p="$pct" 'BEGIN { printf "%.4f", c * p / 100 }')
  workload "$rate"
  "$kvsim" run -q -o "$tmp/r$pct" "$tmp/w.yaml" 2> "$tmp/r$pct.err" || bad "run at $pct% failed"
  s=$(col "$tmp/r$pct/summary.csv" load_share)
  awk -v s="$s" -v p="$pct" 'BEGIN { exit !(s > p / 100 - 0.08 && s < p / 100 + 0.08) }' && ok ||
    bad "load_share $s at $pct% of capacity"
  if [ "$pct" = 95 ]; then
    grep -q 'kvsim: warning: offered load is .*% of capacity.*TTFT p50 .* at -3% step time and .* at +3%' \
      "$tmp/r95.err" && ok || bad "no saturation warning at 95%: $(cat "$tmp/r95.err")"
  else
    [ -s "$tmp/r50.err" ] && bad "stderr at 50%: $(cat "$tmp/r50.err")" || ok
  fi
done

workload 1000000
"$kvsim" run -q -o "$tmp/burst" "$tmp/w.yaml" 2> "$tmp/burst.err" || bad "burst run failed"
grep -q 'times capacity' "$tmp/burst.err" && bad "burst run warns of overload: $(cat "$tmp/burst.err")" || ok
grep -q '^kvsim: note: all 600 requests arrive within .* s, less than the .* s the cluster takes per request at capacity: an offline batch' \
  "$tmp/burst.err" && ok || bad "no offline-batch note: $(cat "$tmp/burst.err")"
[ -z "$(col "$tmp/burst/summary.csv" load_share)" ] && ok || bad "burst load_share not empty: $(col "$tmp/burst/summary.csv" load_share)"
workload "$(awk -v c="$cap" 'BEGIN { printf "%.4f", c * 5 }')"
"$kvsim" run -q -o "$tmp/over" "$tmp/w.yaml" 2> "$tmp/over.err" || bad "run at 5x capacity failed"
grep -q 'kvsim: warning: offered load is .* times capacity' "$tmp/over.err" && ! grep -q note "$tmp/over.err" && ok ||
  bad "no overload warning at 5x capacity: $(cat "$tmp/over.err")"

workload "$(awk -v c="$cap" 'BEGIN { printf "%.4f", c * 0.6 }')"
"$kvsim" run -q -o "$tmp/plain" "$tmp/w.yaml" || bad "plain run failed"
"$kvsim" run -o "$tmp/u1" --uncertainty 40 "$tmp/w.yaml" > "$tmp/u1.out" || bad "--uncertainty 40 failed"
"$kvsim" run -q -o "$tmp/u2" --uncertainty 40 "$tmp/w.yaml" || bad "second --uncertainty 40 failed"
cmp -s "$tmp/plain/summary.csv" "$tmp/u1/summary.csv" && ok || bad "--uncertainty changed summary.csv"
cmp -s "$tmp/u1/uncertainty.csv" "$tmp/u2/uncertainty.csv" && ok || bad "uncertainty.csv differs for the same seed"
[ "$(wc -l < "$tmp/u1/uncertainty.csv")" = 13 ] && ok || bad "uncertainty.csv: expected a header and 12 metrics"
awk -F, 'NR > 1 && $2 != "" { if (!($3 <= $2 && $2 <= $5 && $3 < $5 && $6 == 40)) { print "band " $0; b = 1 } } END { exit b }' \
  "$tmp/u1/uncertainty.csv" && ok || bad "a band does not contain its point estimate: $(cat "$tmp/u1/uncertainty.csv")"
grep -q '^uncertainty: 5-95% band over 40 draws' "$tmp/u1.out" && grep -q '^  ttft_p50_s .*\[' "$tmp/u1.out" && ok ||
  bad "the printed summary has no bands"
grep -q '^file uncertainty.csv$' "$tmp/u1/manifest.txt" && ok || bad "manifest.txt does not list uncertainty.csv"
"$kvsim" run -q -o "$tmp/u3" --uncertainty 0 "$tmp/w.yaml" 2> "$tmp/u3.err" && bad "--uncertainty 0 accepted" || ok
# The host coefficients are drawn too (the engine version's fitted rel_sd): with every device
# interval 0 the band still has a width on the host model (default vllm, V1), and none without it
root=$(cd "$(dirname "$0")/.." && pwd)
{ awk '/^uncertainty:/ { skip = 1; next } skip && /^[^ #]/ { skip = 0 } !skip' "$root/configs/devices/a100-80g.yaml"
  printf 'uncertainty:\n'
  for k in eff_bw eff_flops eff_attn overhead allreduce_latency collective_overhead; do printf '  %s: 0\n' $k; done
  printf '  per_seq_abs: 0us\n'; } > "$tmp/dev0.yaml"
"$kvsim" run -q -o "$tmp/h1" --uncertainty 20 "$tmp/w.yaml" --set device="$tmp/dev0.yaml" || bad "host draws: run failed"
awk -F, '$1 == "tpot_mean_s" { exit !($3 < $2 && $2 < $5) }' "$tmp/h1/uncertainty.csv" && ok ||
  bad "host draws: no band on tpot_mean_s with the device fixed: $(cat "$tmp/h1/uncertainty.csv")"
"$kvsim" run -q -o "$tmp/h0" --uncertainty 20 "$tmp/w.yaml" --set device="$tmp/dev0.yaml" --set engine.host_model=false ||
  bad "host draws: host_model false failed"
awk -F, '$1 == "tpot_mean_s" { exit !($3 == $2 && $2 == $5) }' "$tmp/h0/uncertainty.csv" && ok ||
  bad "host draws: a band without a host model or device spread: $(cat "$tmp/h0/uncertainty.csv")"

# The longest context against the KV cache (docs/memory.md "The longest context"): a pool
# pinned at 1000 tokens, contexts of 2048 (max_context) or 1200 (a request).
workload 1
ctx() { "$kvsim" run -q -o "$tmp/ctx" "$tmp/w.yaml" --set memory.kv_tokens=1000 "$@" > /dev/null 2> "$tmp/ctx.err"; }
ctx --set workload.max_context=2048 && bad "vllm: max_context beyond the KV cache accepted" ||
  { [ $? = 2 ] && grep -q 'workload.max_context: 2048 tokens, more than one replica.s KV cache holds (1000 tokens.*vLLM refuses to start' "$tmp/ctx.err" && ok ||
    bad "vllm max_context message: $(cat "$tmp/ctx.err")"; }
ctx --set workload.lengths.prompt=1100 && bad "vllm: a request beyond the KV cache accepted" ||
  { [ $? = 2 ] && grep -q 'request 0 has 1100 prompt + 128 output tokens, more than one replica.s KV cache holds (1000 tokens)' "$tmp/ctx.err" && ok ||
    bad "vllm request message: $(cat "$tmp/ctx.err")"; }
ctx --set workload.max_context=2048 --set memory.context_check=warn &&
  grep -q 'kvsim: warning: the longest context, 2048 tokens, is more than one replica.s KV cache holds (1000 tokens)' "$tmp/ctx.err" && ok ||
  bad "context_check warn: $(cat "$tmp/ctx.err")"
ctx --set workload.lengths.prompt=1100 --set engine=sglang &&
  grep -q 'kvsim: warning: the longest context, 1228 tokens, .*600 requests beyond it were rejected' "$tmp/ctx.err" &&
  [ "$(col "$tmp/ctx/summary.csv" rejected_pool)" = 600 ] && ok || bad "sglang: $(cat "$tmp/ctx.err")"
ctx --set workload.max_context=1000 && [ ! -s "$tmp/ctx.err" ] && ok || bad "max_context at the KV cache refused: $(cat "$tmp/ctx.err")"
ctx --set memory.context_check=maybe && bad "context_check maybe accepted" ||
  grep -q "memory.context_check: bad value 'maybe'" "$tmp/ctx.err" && ok || bad "context_check value: $(cat "$tmp/ctx.err")"

echo "uncert_test: $pass passed, $fail failed"
[ "$fail" = 0 ]
