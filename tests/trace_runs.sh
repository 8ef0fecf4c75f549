#!/usr/bin/env bash
# Runs every example workload (most replay the real traces in
# ../shared/traces) and checks that every request is accounted for:
# completed + rejected = arrived = rows of the trace (or the workload's
# request count).  Exits 77 (skipped) when the traces folder is absent.
set -u
kvsim=$1
src=$2
traces="$src/../shared/traces"
[ -d "$traces" ] || { echo "no $traces: skipped"; exit 77; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
pass=0 fail=0
col() { # col FILE NAME: value of summary column NAME
  awk -F, -v n="$2" 'NR==1{for(i=1;i<=NF;i++) if($i==n) c=i} NR==2{print $c}' "$1"
}
rows() { # data rows of a trace (Azure files lack a final newline)
  awk 'END{print NR-1}' "$1"
}
check() { # check WORKLOAD EXPECTED_REQUESTS ("any": at least one)
  local w=$1 want=$2 out="$tmp/$(basename "$1" .yaml)"
  if ! "$kvsim" run -q "$src/workloads/$w" -o "$out" --set outputs.chart=false 2>"$tmp/err"; then
    fail=$((fail + 1)); echo "FAIL: $w: $(cat "$tmp/err")"; return
  fi
  local s="$out/summary.csv" n c r1 r2
  n=$(col "$s" requests); c=$(col "$s" completed)
  r1=$(col "$s" rejected_context); r2=$(col "$s" rejected_pool)
  [ "$want" = any ] && [ "$n" -gt 0 ] && want=$n
  if [ "$n" = "$want" ] && [ $((c + r1 + r2)) -eq "$n" ] &&
     [ "$(tail -n +2 "$out/requests.csv" | wc -l)" -eq "$n" ]; then
    pass=$((pass + 1)); echo "ok: $w: $n requests, $c completed, $r1 + $r2 rejected"
  else
    fail=$((fail + 1)); echo "FAIL: $w: requests $n (want $want), completed $c, rejected $r1 + $r2"
  fi
}
check default.yaml 2000
check tenants.yaml 3000
check azure-conv.yaml "$(rows "$traces/AzureLLMInferenceTrace_conv.csv")"
check azure-code.yaml "$(rows "$traces/AzureLLMInferenceTrace_code.csv")"
check mooncake.yaml "$(wc -l < "$traces/conversation_trace.jsonl")"
check bwb.yaml any   # a 10-minute window: whatever arrived must be accounted for
check vidur-poisson.yaml "$(rows "$traces/azure_conv_poisson3_10k.csv")"
check mooncake-synthetic.yaml "$(wc -l < "$traces/mooncake_synthetic_trace.jsonl")"
# sessions: every turn is accounted for, as many as trace-stats generates (the turns do not
# depend on timing; a session ends early only at the context, which trace-stats applies too)
for w in sessions-chat.yaml sessions-agent.yaml sessions-mooncake-fit.yaml; do
  check "$w" "$("$kvsim" trace-stats --csv "$src/workloads/$w" | sed -n 's/^requests,//p')"
done
echo "$pass passed, $fail failed"
[ $fail -eq 0 ]
