#!/usr/bin/env bash
# Runs the experiment scripts of configs/experiments so they cannot rot:
# each must finish and print its table.  Exits 77 without the traces.
set -u
kvsim=$1
src=$2
[ -d "$src/../shared/traces" ] || { echo "no traces: skipped"; exit 77; }
fail=0 pass=0
for e in seed-table utilization five-models fairness; do
  if out=$(bash "$src/configs/experiments/$e.sh" "$kvsim" 2>&1) && [ "$(wc -l <<<"$out")" -ge 4 ]; then
    pass=$((pass + 1)); echo "ok: $e"; echo "$out"
  else
    fail=$((fail + 1)); echo "FAIL: $e: $out"
  fi
done
echo "$pass passed, $fail failed"
[ $fail -eq 0 ]
