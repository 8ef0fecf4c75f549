#!/usr/bin/env bash
# Conformance: scenarios of vLLM's own scheduler tests (tests/v1/core/
# test_scheduler.py, test_prefix_caching.py) and SGLang's (test/srt/
# test_schedule_policy.py) replayed as kvsim workloads and
# checked step by step against the engine's expected values.  A step is
# read from the timeline (docs/timeline.md: one `iteration` slice per step
# with its batch size and prefill and decode tokens) as "batch prefill
# decode".  Every check below cites the test it ports; `skipped` lists the
# tests kvsim cannot express yet, and why.  docs/conformance.md's table is
# this script's --table output (docs/figures.sh writes and checks it).
# usage: tests/conformance/run.sh KVSIM SOURCE_DIR [--table]
set -euo pipefail
[ $# -ge 2 ] || { echo "usage: $0 KVSIM SOURCE_DIR [--table]" >&2; exit 2; }
kvsim=$(realpath "$1")
dir=$(realpath "$2")/tests/conformance
table=0
[ "${3:-}" = --table ] && table=1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# Checks: TEST|WORKLOAD|ENGINE|--set OPTIONS (space-separated, or -)|STEP|EXPECTED "batch prefill decode"
# STEP: a step number from 1, "2+" for the first step from 2 on with prefill tokens, "last"
# for the last step with prefill tokens.
checks=(
  # ten requests added before the first schedule() all run in it, each its whole prompt
  "test_schedule|ten_at_zero|vllm|-|1|10 160 0"
  "test_schedule|ten_at_zero|sglang|-|1|10 160 0"
  "test_schedule|ten_at_zero|vllm-v0|-|1|10 160 0"
  # long_prefill_token_threshold 400, budget 1024: 400+400+224 twice, then 1+1+352
  "test_schedule_concurrent_partial_requests|concurrent_partial|vllm|-|1|3 1024 0"
  "test_schedule_concurrent_partial_requests|concurrent_partial|vllm|-|2|3 1024 0"
  "test_schedule_concurrent_partial_requests|concurrent_partial|vllm|-|3|3 352 2"
  # chunked: both long prompts in step 1 (800 + 224); not chunked: only the first
  "test_schedule_order[True]|schedule_order|vllm|-|1|2 1024 0"
  "test_schedule_order[False]|schedule_order|vllm|batching.chunked_prefill=false|1|1 800 0"
  # a running request's full blocks are cached at allocation (block_pool.py cache_full_blocks):
  # the second finds 64 of its 65 tokens and prefills 1
  "concurrent prefix hit (cache_full_blocks)|shared_prefix|vllm|-|1|1 65 0"
  "concurrent prefix hit (cache_full_blocks)|shared_prefix|vllm|-|2+|2 1 1"
  "concurrent prefix hit (cache_unfinished_req)|shared_prefix|sglang|-|2+|1 1 0"
  # test_prefix_caching.py: 48 common tokens; req1 (53) hits 48 while req0 (55) runs,
  # req2 (54) hits 48 after both ended
  "test_prefill|prefill_hits|vllm|-|1|1 55 0"
  "test_prefill|prefill_hits|vllm|-|2+|2 5 1"
  "test_prefill|prefill_hits|vllm|-|last|1 6 0"
  # SGLang test/srt/test_schedule_policy.py: three requests queued at one instant, one a step
  # (max_seqs 1, one output token each); their prompts (200, 300, 100) give the order
  "test_calc_priority_fcfs|sglang_fcfs_order|sglang|-|1|1 200 0"
  "test_calc_priority_fcfs|sglang_fcfs_order|sglang|-|2|1 300 0"
  "test_calc_priority_fcfs|sglang_fcfs_order|sglang|-|3|1 100 0"
  # higher priority values first (schedule_low_priority_values_first=False), then entry time
  "test_calc_priority_priority_enabled_fcfs_scheduling|sglang_priority_order|sglang|-|1|1 200 0"
  "test_calc_priority_priority_enabled_fcfs_scheduling|sglang_priority_order|sglang|-|2|1 100 0"
  "test_calc_priority_priority_enabled_fcfs_scheduling|sglang_priority_order|sglang|-|3|1 300 0"
  "test_calc_priority_priority_enabled_fcfs_scheduling_with_low_priority_values_first|sglang_priority_low_first|sglang|scheduler.order=low_first|1|1 200 0"
  "test_calc_priority_priority_enabled_fcfs_scheduling_with_low_priority_values_first|sglang_priority_low_first|sglang|scheduler.order=low_first|2|1 100 0"
  "test_calc_priority_priority_enabled_fcfs_scheduling_with_low_priority_values_first|sglang_priority_low_first|sglang|scheduler.order=low_first|3|1 300 0"
)

# The tests of test_scheduler.py read so far that kvsim cannot express, and why.
skipped=(
  "test_add_requests, test_finish_request, test_get_num_unfinished_requests|queue bookkeeping (abort, counts): no schedule to compare"
  "test_schedule_multimodal_requests, test_schedule_partial_requests, test_no_mm_input_chunking|multimodal encoder budget: kvsim models text tokens only"
  "test_schedule_prefills_gating, test_throttle_*|data-parallel prefill throttling: not modelled"
  "test_stop_via_update_from_output, test_check_stop_min_tokens|stop tokens, speculative tokens: kvsim's outputs have fixed lengths"
  "test_schedule_concurrent_batches, test_preempt_during_execution, test_async_scheduling_pp_*|more than one batch in flight (async scheduling, pipeline parallelism)"
  "test_scheduler_publishes_eagle_blocks_*, test_connector_finish_*, test_prefix_cache_query_not_inflated_by_connector_defer|KV connector and EAGLE: not modelled"
  "test_priority_scheduling_*|replayed step by step by tests/conformance_priority (meson test conformance-priority; docs/schedulers.md)"
  "test_prefix_caching.py: the block-id and free-queue-order asserts of test_prefill|block ids and the order of vLLM's free queue are not kvsim outputs (its LRU order is tested in tests/test_shared.c)"
  # SGLang (sgl-project/sglang test/srt/), read so far
  "test_schedule_policy.py: test_init_with_cache_aware_policy, test_init_with_cache_agnostic_policy, test_init_with_unknown_policy, test_init_with_disabled_cache|policy names and lpm's fallback to fcfs without a radix cache: kvsim has no lpm or dfs-weight order (an unknown scheduler name is an error, as in SGLang)"
  "test_calc_priority_longest_output_first_scheduling, test_calc_priority_priority_enabled_longest_output_first_scheduling*|SGLang's lof policy (longest max_new_tokens first): no kvsim scheduler orders by output length"
  "test_calc_priority_routing_key_*|routing-key policy: kvsim requests carry no routing key"
  "test_calc_priority_fcfs_cache_agnostic_in_batch_prefix_caching|deferring a request whose prefix another in the batch shares (ENABLE_CACHE_AGNOSTIC_IN_BATCH_PREFIX_CACHING): not modelled"
  "test_calc_priority_hrrn|hrrn policy (waited over uncached tokens): not modelled"
  "test_radix_cache_unit.py|the radix tree's insert, match, split, evict and lock counts: kvsim approximates the tree by block hashes (docs/engines.md); its step-visible effect, a running request's prefix hit, is the cache_unfinished_req check"
)

# steps NAME ENGINE SETS: the run's iterations as "batch prefill decode" lines, in order.
# The engines' tests add requests to the scheduler itself, so no API server stands before it.
steps() {
  local out="$tmp/$1-$2-${3//[^a-z0-9]/_}" set=()
  [ "$3" = - ] || for o in $3; do set+=(--set "$o"); done
  mkdir -p "$out"
  (cd "$dir" && "$kvsim" run -q "$1.yaml" -o "$out/run" --set engine.name="$2" --set engine.api_server=false "${set[@]}" \
     --trace-out "$out/timeline.json") >/dev/null
  # one trace event a line (docs/timeline.md); "iteration" slices by start time, ties in file order
  awk 'function num(k,  m) {
         if (!match($0, "\"" k "\":-?[0-9.eE+-]+")) { print "conformance: no " k " in: " $0 > "/dev/stderr"; bad = 1; exit 1 }
         m = substr($0, RSTART, RLENGTH); sub(/^[^:]*:/, "", m); return m }
       /"ph":"X"/ && /"name":"iteration"/ { print num("ts"), num("batch"), num("prefill_tokens"), num("decode_tokens"); n++ }
       END { if (bad) exit 1; if (!n) { print "conformance: no iteration in " FILENAME > "/dev/stderr"; exit 1 } }' \
    "$out/timeline.json" > "$out/steps" || return 1
  sort -s -g -k1,1 "$out/steps" | cut -d' ' -f2-
}

fail=0 pass=0 rows=()
for c in "${checks[@]}"; do
  IFS='|' read -r test wl engine sets step want <<< "$c"
  s=$(steps "$wl" "$engine" "$sets")
  if [ "$step" = 2+ ]; then
    got=$(sed -n '2,$p' <<< "$s" | awk '$2 > 0' | head -n 1)
  elif [ "$step" = last ]; then
    got=$(awk '$2 > 0' <<< "$s" | tail -n 1)
  else
    got=$(sed -n "${step}p" <<< "$s")
  fi
  if [ "$got" = "$want" ]; then
    pass=$((pass + 1)); r=pass
    [ $table = 1 ] || echo "ok   $test ($engine, step $step): $got"
  else
    fail=$((fail + 1)); r="FAIL (got $got)"
    echo "FAIL $test ($engine, step $step): got '$got', expected '$want'" >&2
  fi
  extra=
  [ "$sets" = - ] || extra=", \`--set $sets\`"
  rows+=("| \`$test\` | yes | $engine, \`$wl.yaml\`$extra, step $step: \`$want\` | $r |")
done
if [ $table = 1 ]; then
  echo "| engine test | expressed | kvsim scenario: step, expected \`batch prefill decode\` | result |"
  echo "|---|---|---|---|"
  printf '%s\n' "${rows[@]}"
  for k in "${skipped[@]}"; do
    IFS='|' read -r tests why <<< "$k"
    echo "| \`${tests//, /\`, \`}\` | no | $why | - |"
  done
  echo
  echo "$pass of $((pass + fail)) checks pass."
else
  echo "conformance: $pass passed, $fail failed"
fi
[ "$fail" = 0 ]
