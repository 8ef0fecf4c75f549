#!/usr/bin/env bash
# End-to-end tests of the health report (src/lib/health.c, docs/health.md):
# constructed workloads (tests/data/health/base.yaml with --set overrides)
# trigger each check's warning, and its health.csv row must give the cause
# with the run's own numbers; a check whose metric does not apply says n/a;
# `health:` thresholds move the verdict; bad keys exit 2.
set -u
kvsim=$1
src=$2
base=$src/tests/data/health/base.yaml
. "$(dirname "$0")/testutil.sh"

# run NAME [--set ...]: runs the base into $tmp/NAME, stdout in $tmp/NAME.out
run() { local n=$1; shift; "$kvsim" run "$base" -o "$tmp/$n" "$@" >"$tmp/$n.out" 2>"$tmp/$n.err" || bad "$n: exit $? $(cat "$tmp/$n.err")"; }
# row NAME CHECK: that check's health.csv row
row() { grep "^$2," "$tmp/$1/health.csv"; }
# expect NAME CHECK STATUS TEXT: the row has the status and the cause contains TEXT
expect() {
  local r; r=$(row "$1" "$2")
  [ "$(cut -d, -f4 <<<"$r")" = "$3" ] && grep -qF -- "$4" <<<"$r" && ok || bad "$1: $2: expected $3 with '$4', got: $r"
}

# A small pool (6000 tokens) at 20 req/s: memory over 0.80 with preemptions, named with max_seqs.
run small --set memory.kv_tokens=6000
expect small mem_util warn "preemptions and 0 requests refused memory: pool too small for max_seqs 256"
pre=$(awk -F, 'NR == 1 { for (i = 1; i <= NF; i++) if ($i == "preemptions") c = i } NR == 2 { print $c }' "$tmp/small/summary.csv")
[ "$pre" -gt 0 ] && expect small mem_util warn "with $pre preemptions" || bad "small pool: no preemptions ($pre)"
expect small cache_hit_rate n/a "cache chunked keeps no prefix cache"
expect small fairness n/a "one tenant"
grep -q "^health: 1 of 6 checks warn" "$tmp/small.out" && grep -q "^  warn mem_util" "$tmp/small.out" && ok || bad "printed section: $(cat "$tmp/small.out")"
[ "$(head -1 "$tmp/small/health.csv")" = "check,target,value,status,cause" ] && [ "$(wc -l <"$tmp/small/health.csv")" -eq 7 ] && ok || bad "health.csv shape"
grep -qx "file health.csv" "$tmp/small/manifest.txt" && ok || bad "manifest lacks health.csv"
# the threshold is configurable: a band up to 0.95 passes the same run
run small95 --set memory.kv_tokens=6000 --set health.mem_util_max=0.95
expect small95 mem_util pass ""
grep -q "0.60..0.95" "$tmp/small95/health.csv" && ok || bad "target text with health.mem_util_max"

# The default pool at 4 req/s: utilisation far below 0.60, named with the peak.
run idle --set workload.arrival.rate=4
expect idle mem_util warn "the pool is larger than this load needs"
expect idle e2e_tail_ratio pass ""

# Two tenants at 9:1 with equal weights: fairness below 0.7; tenant b's share and weight named.
run tenants --set 'workload.tenants=[{name: a, share: 9}, {name: b, share: 1}]' --set workload.arrival.rate=4
expect tenants fairness warn "tenant b's service share 0.1"
expect tenants fairness warn "vs weight 0.50 under fifo"
run tenants5 --set 'workload.tenants=[{name: a, share: 9}, {name: b, share: 1}]' --set workload.arrival.rate=4 --set health.fairness_min=0.5
expect tenants5 fairness pass ""

# Heavy-tailed lengths: p99 E2E many times p50, the share of requests over health.long_tokens named.
run tail --set workload.arrival.rate=2 --set health.long_tokens=1500 \
  --set 'workload.lengths={dist: lognormal, prompt_mean: 300, prompt_sigma: 1, prompt_max: 3000, output_mean: 100, output_sigma: 1.5, output_max: 1000}'
expect tail e2e_tail_ratio warn "of requests over 1500 tokens under fifo; try scheduler preempt with segment_tokens"
run tail2 --set workload.arrival.rate=2 --set health.long_tokens=5000 \
  --set 'workload.lengths={dist: lognormal, prompt_mean: 300, prompt_sigma: 1, prompt_max: 3000, output_mean: 100, output_sigma: 1.5, output_max: 1000}'
expect tail2 e2e_tail_ratio warn "with no request over 5000 tokens: the tail is queueing"

# A sparse cache with a 64-token budget: hit rate below 0.85, the share of requests beyond the budget.
run sparse --set 'cache={name: sparse, budget: 64}' --set workload.arrival.rate=4
expect sparse cache_hit_rate warn "hold more than the sparse budget of 64 tokens"

# A prefix cache whose only sharing is a 512-token system prompt: about half the looked-up
# tokens miss with no eviction (compulsory), the block size and system prompt named.
run shared --set 'cache={name: shared, system_prompt_tokens: 512}' --set workload.arrival.rate=4
expect shared cache_hit_rate warn "missed with no eviction, so the misses are compulsory"
expect shared cache_hit_rate warn "only whole prefix blocks of 512 tokens are shared; the system prompt is 512 tokens"

# No cap on the pool's blocks: the largest contiguous block is far above 8 MiB.
run nocap --set memory.max_block=0 --set workload.arrival.rate=4
expect nocap max_block_bytes warn "memory.max_block 0, no cap"
expect idle max_block_bytes pass ""
[ "$(row idle max_block_bytes | cut -d, -f3)" = 8388608 ] && ok || bad "default largest block: $(row idle max_block_bytes)"

# Fifo with a tenant served less than it brought (long prompts weigh less than outputs under
# fairness.output_weight 2): the fairness warning suggests drf or vtc.
run drf --set 'workload.tenants=[{name: a, share: 19, lengths: {dist: fixed, prompt: 16, output: 200}}, {name: b, share: 1, lengths: {dist: fixed, prompt: 1000, output: 8}}]' --set workload.arrival.rate=4
expect drf fairness warn "tenant b's service share 0.11 vs weight 0.50 under fifo (it brought 0.20 of the tokens"
expect drf fairness warn "; try drf or vtc"

# A prefix cache under pressure (8000 tokens, each request's blocks cached): the misses are
# put on evictions, with their count (cache_evictions of summary.csv).
run evict --set 'cache={name: shared, system_prompt_tokens: 512, prefix_block_tokens: 64, request_blocks: true}' --set memory.kv_tokens=8000 --set workload.arrival.rate=12
ev=$(awk -F, 'NR == 1 { for (i = 1; i <= NF; i++) if ($i == "cache_evictions") c = i } NR == 2 { print $c }' "$tmp/evict/summary.csv")
[ "${ev:-0}" -gt 0 ] && expect evict cache_hit_rate warn "cached entries were evicted: the pool cannot keep the shared prefixes" || bad "evict: no evictions ($ev)"
[ "${ev:-0}" -gt 0 ] && expect evict cache_hit_rate warn "and $ev cached entries were evicted"

# Memory that keeps growing at flat load: each finished request's prompt blocks stay cached
# (request_blocks) at 4 req/s; reserved bytes climb while arrivals and the batch stay flat.
run grow --set 'cache={name: shared, request_blocks: true}' --set workload.arrival.rate=4
expect grow mem_growth warn "at flat load (4.44 vs 4.00 req/s arriving, 6 vs 7 running, 0 vs 0 waiting)"
expect grow mem_growth warn "cache shared keeps finished requests' blocks until the pool fills (0 evictions so far)"
g=$(row grow mem_growth | cut -d, -f3)
awk -v g="$g" 'BEGIN { exit !(g > 0.25 && g < 0.30) }' && ok || bad "grow: growth $g, expected 0.28 of the pool"
run grow5 --set 'cache={name: shared, request_blocks: true}' --set workload.arrival.rate=4 --set health.mem_growth_max=0.5
expect grow5 mem_growth pass ""
# the same cache at 20 req/s grows too, but with the batch (108 to 181 running): the load is
# not flat, so the check cannot judge: n/a naming what changed, never a pass
run growload --set 'cache={name: shared, request_blocks: true}'
expect growload mem_growth n/a "load not flat: arriving 23.60 to 17.20 req/s, running 108 to 181, waiting 1 to 14 between the halves"
expect growload mem_growth n/a "(reserved KV moved +0.36 of the pool with it)"
[ -z "$(row growload mem_growth | cut -d, -f3)" ] && ok || bad "growload: an n/a check has a value: $(row growload mem_growth)"
expect idle mem_growth pass ""
run nosample --set outputs.sample_interval=0
expect nosample mem_growth n/a "no timeseries samples (outputs.sample_interval 0 takes none)"

# Checks that cannot judge say n/a with the reason, never pass or warn.
# 50 requests: a p99 of 50 is no tail, and 3 samples are no trend.
run few --set workload.requests=50
expect few e2e_tail_ratio n/a "50 completed requests: a p99 needs at least 100"
expect few mem_growth n/a "3 samples in the arrival window after its first quarter: too few to judge a trend"
grep -q "^health: 1 of 6 checks warn, 4 n/a" "$tmp/few.out" && ok || bad "few: title line: $(grep ^health: "$tmp/few.out")"
# two tenants of which one brought nothing (shares 1000:1 over 50 requests): Jain's index 0.5
# would blame the scheduler for a tenant that asked for nothing
run onlyone --set 'workload.tenants=[{name: a, share: 1000}, {name: b, share: 1}]' --set workload.requests=50
expect onlyone fairness n/a "1 of 2 tenants brought requests (a 50, b 0): nothing to share"
# the quantized cache keeps every token and looks nothing up: its hit rate 1 is a definition
run quant --set 'cache={name: quantized}' --set workload.arrival.rate=4
expect quant cache_hit_rate n/a "cache quantized looked up no token: its hit rate is its definition, not a measurement"
# a 32-token pool refuses every request: no completed request for the sparse cache's kept
# attention or the tail; the low utilisation is put on the refusals, not on an idle pool
# (memory.context_check warn: under vLLM's rule such a pool would not start at all)
run refused --set memory.kv_tokens=32 --set memory.context_check=warn --set 'cache={name: sparse, budget: 64}'
expect refused cache_hit_rate n/a "no request completed: cache sparse measured no attention mass kept"
expect refused e2e_tail_ratio n/a "no completed request"
expect refused mem_util warn "although 300 requests were refused memory"
# nothing completed, so nothing to judge a latency on: the percentiles of summary.csv and
# slo_met are empty, never 0 s (which would meet any latency target) or 1
run refusedslo --set memory.kv_tokens=32 --set memory.context_check=warn --set 'slo={ttft_p99: 1s}'
col() { awk -F, -v c="$2" 'NR == 1 { for (i = 1; i <= NF; i++) if ($i == c) k = i } NR == 2 { print $k }' "$tmp/$1/summary.csv"; }
for c in ttft_p50_s ttft_p99_s tpot_p50_s e2e_p99_s slo_met; do
  [ -z "$(col refusedslo $c)" ] && ok || bad "refusedslo: $c is '$(col refusedslo $c)' with no completed request"
done
[ "$(col refusedslo completed)" = 0 ] && [ "$(col refusedslo slo_attainment)" = 0 ] && ok || bad "refusedslo: completed/attainment"
# a run that misses a percentile SLO it can judge still says 0
run slomiss --set 'slo={ttft_p99: 1ns}'
[ "$(col slomiss slo_met)" = 0 ] && ok || bad "slomiss: slo_met '$(col slomiss slo_met)', expected 0"
# no arrival at all: nothing finished, one sample; only the pool's configuration is judged
run empty --set workload.requests=0 --set workload.duration=1us
expect empty mem_util n/a "no request finished: no span to average the pool's use over"
expect empty mem_growth n/a "one timeseries sample: too few to judge a trend"
expect empty max_block_bytes pass ""
run empty2 --set workload.requests=0 --set workload.duration=1us --set 'cache={name: shared}' \
  --set 'workload.tenants=[{name: a, share: 1}, {name: b, share: 1}]'
expect empty2 cache_hit_rate n/a "cache shared looked up no token"
expect empty2 fairness n/a "0 of 2 tenants brought requests (a 0, b 0)"
# every n/a row carries its reason; every pass row has none
for f in "$tmp"/*/health.csv; do
  awk -F, 'NR > 1 && (($4 == "n/a" && ($5 == "" || $3 != "")) || ($4 == "pass" && $5 != "")) { print FILENAME ": " $0; bad = 1 } END { exit bad }' "$f" && ok || bad "n/a without reason or pass with cause"
done

# Bad health: keys exit 2 naming the key.
"$kvsim" run "$base" -o "$tmp/x" --set health.hit_rate=1 2>"$tmp/x.err"; st=$?
[ $st -eq 2 ] && grep -q "unknown key 'hit_rate'" "$tmp/x.err" && ok || bad "bad health key: $st $(cat "$tmp/x.err")"
"$kvsim" run "$base" -o "$tmp/x" --set health.fairness_min=2 2>"$tmp/x.err"; st=$?
[ $st -eq 2 ] && grep -q "fairness_min" "$tmp/x.err" && ok || bad "fairness_min 2: $st $(cat "$tmp/x.err")"

# slo: in a run: the SLO columns appear in summary.csv and tenants.csv; without it they do not.
run slo --set 'slo={ttft: 1s, tpot: 50ms, ttft_p99: 2s}'
for c in slo_attainment goodput_req_s goodput_tok_s slo_met gpus; do
  head -1 "$tmp/slo/summary.csv" | tr , '\n' | grep -qx "$c" && ok || bad "summary.csv lacks $c"
  head -1 "$tmp/idle/summary.csv" | tr , '\n' | grep -qx "$c" && bad "summary.csv has $c without slo:" || ok
done
head -1 "$tmp/slo/tenants.csv" | grep -q ",slo_attainment,goodput_req_s,goodput_tok_s$" && ok || bad "tenants.csv SLO columns"
"$kvsim" run "$base" -o "$tmp/x" --set 'slo={ttft_p99x: 1}' 2>"$tmp/x.err"; st=$?
[ $st -eq 2 ] && grep -q "unknown SLO 'ttft_p99x'" "$tmp/x.err" && ok || bad "bad slo key: $st $(cat "$tmp/x.err")"

echo "$pass passed, $fail failed"
[ $fail -eq 0 ]
