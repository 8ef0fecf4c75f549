#!/usr/bin/env bash
# Runs every case of tests/conformance_priority: CASE.yaml through the step
# printer (steps.c) must print exactly CASE.expected, the steps vLLM's test of
# the same name asserts (README.md).  Also checks that fifo would fail each
# case whose steps depend on the priorities (the cases can fail).  A case
# with a `# steps: collapse` line is printed with --collapse (steps.c).
# usage: run.sh STEPS DIR
set -euo pipefail
[ $# -eq 2 ] || { echo "usage: $0 STEPS DIR" >&2; exit 2; }
steps=$1
dir=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
n=0
fail=0
for w in "$dir"/*.yaml; do
  c=$(basename "$w" .yaml)
  n=$((n + 1))
  args=()
  grep -q '^# steps: collapse' "$w" && args=(--collapse)
  if ! "$steps" "$w" "${args[@]}" > "$tmp/$c.out" 2> "$tmp/$c.err"; then
    echo "FAIL: $c: $(cat "$tmp/$c.err")"; fail=1; continue
  fi
  if ! cmp -s "$tmp/$c.out" "$dir/$c.expected"; then
    echo "FAIL: $c: steps differ from $c.expected"; diff "$dir/$c.expected" "$tmp/$c.out" | head -20; fail=1; continue
  fi
  if grep -q '^# fifo differs' "$w"; then
    "$steps" "$w" "${args[@]}" scheduler.name=fifo > "$tmp/$c.fifo" 2>&1 || true
    if cmp -s "$tmp/$c.fifo" "$dir/$c.expected"; then
      echo "FAIL: $c: fifo gives the same steps: the case does not test priorities"; fail=1; continue
    fi
  fi
  echo "ok: $c"
done
[ $n -ge 1 ] || { echo "no cases in $dir" >&2; exit 1; }
[ $fail -eq 0 ] || exit 1
echo "conformance-priority: $n cases match vLLM's steps"
