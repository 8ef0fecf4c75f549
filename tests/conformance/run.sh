#!/usr/bin/env bash
# Conformance: scenarios of vLLM's and SGLang's own scheduler tests replayed
# as kvsim workloads, checked step by step against the engines' expected
# values (docs/conformance.md lists every scenario and why some are not
# expressed).  Each scenario's steps come from the timeline (docs/timeline.md:
# one `iteration` slice per step with its batch size and prefill and decode
# tokens) and its summary.csv.
# usage: tests/conformance/run.sh KVSIM SOURCE_DIR
set -euo pipefail
[ $# -ge 2 ] || { echo "usage: $0 KVSIM SOURCE_DIR" >&2; exit 2; }
kvsim=$(realpath "$1")
dir=$(realpath "$2")/tests/conformance
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail=0 pass=0

# steps NAME ENGINE: the run's iterations as "batch prefill decode" lines, in order
steps() {
  local name=$1 engine=$2 out="$tmp/$1-$2"
  (cd "$dir" && "$kvsim" run -q "$name.yaml" -o "$out" --set engine.name="$engine" \
     --trace-out "$out/timeline.json") >/dev/null
  python3 - "$out/timeline.json" <<'PY'
import json, sys
ev = json.load(open(sys.argv[1]))
ev = ev["traceEvents"] if isinstance(ev, dict) else ev
for e in sorted((e for e in ev if e.get("ph") == "X" and e.get("name") == "iteration"),
                key=lambda e: e["ts"]):
    a = e["args"]
    print(a["batch"], a["prefill_tokens"], a["decode_tokens"])
PY
}

# expect LABEL GOT WANT
expect() {
  if [ "$2" = "$3" ]; then pass=$((pass + 1)); echo "ok   $1"
  else fail=$((fail + 1)); echo "FAIL $1: got '$2', expected '$3'"; fi
}

# vLLM test_scheduler.py::test_schedule: all ten in the first step, 16 prompt tokens each.
for e in vllm sglang vllm-v0; do
  s=$(steps ten_at_zero $e)
  expect "test_schedule ($e): first step" "$(sed -n 1p <<<"$s")" "10 160 0"
done
# The second request's prefill: 1 token, its 64-token prefix found in the running first's
# blocks; vLLM mixes it with the first's decode (2 1 1), SGLang runs it as a prefill batch (1 1 0).
for e in vllm:2 sglang:1; do
  s=$(steps shared_prefix ${e%:*})
  want="${e#*:} 1 $((${e#*:} - 1))"
  expect "concurrent prefix hit (${e%:*}): first's prefill" "$(sed -n 1p <<<"$s")" "1 65 0"
  expect "concurrent prefix hit (${e%:*}): second's prefill" \
    "$(sed -n 2,\$p <<<"$s" | grep -m1 -v ' 0 ' || true)" "$want"
done
echo "conformance: $pass passed, $fail failed"
[ "$fail" = 0 ]
