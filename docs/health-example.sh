#!/usr/bin/env bash
# Regenerates the example blocks of docs/health.md from runs of
# tests/data/health/base.yaml (the health e2e test's base): the printed
# health section of a pool too small for its load, of two tenants at 9:1,
# of a prefix cache whose memory keeps growing, and of workloads/tenants.yaml
# (what a newcomer sees first).  usage: docs/health-example.sh [KVSIM]   (default build/src/kvsim)
# Rewrites the text between "<!-- health-example:NAME -->" and
# "<!-- /health-example -->" in docs/health.md.
set -euo pipefail
src=$(cd "$(dirname "$0")/.." && pwd)
kvsim=${1:-$src/build/src/kvsim}
base=$src/tests/data/health/base.yaml
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
section() { "$kvsim" run "$base" -o "$tmp/$1" "${@:2}" | sed -n '/^health:/,/^outputs in/p' | grep -v '^outputs in'; }
{
  echo '$ kvsim run tests/data/health/base.yaml --set memory.kv_tokens=6000'
  section small --set memory.kv_tokens=6000
} > "$tmp/small.txt"
{
  echo "\$ kvsim run tests/data/health/base.yaml --set 'workload.tenants=[{name: a, share: 9}, {name: b, share: 1}]' --set workload.arrival.rate=4"
  section tenants --set 'workload.tenants=[{name: a, share: 9}, {name: b, share: 1}]' --set workload.arrival.rate=4
} > "$tmp/tenants.txt"
{
  echo "\$ kvsim run tests/data/health/base.yaml --set 'cache={name: shared, request_blocks: true}' --set workload.arrival.rate=4"
  section grow --set 'cache={name: shared, request_blocks: true}' --set workload.arrival.rate=4
} > "$tmp/grow.txt"
{
  echo '$ kvsim run workloads/tenants.yaml'
  "$kvsim" run "$src/workloads/tenants.yaml" -o "$tmp/tenants-yaml" --set outputs.chart=false |
    sed -n '/^health:/,/^outputs in/p' | grep -v '^outputs in'
} > "$tmp/tenants-yaml.txt"
python3 - "$src/docs/health.md" "$tmp" <<'PY'
import re, sys
path, tmp = sys.argv[1], sys.argv[2]
doc = open(path).read()
for name in ("small", "tenants", "grow", "tenants-yaml"):
    body = open(f"{tmp}/{name}.txt").read()
    doc = re.sub(r"(<!-- health-example:%s -->\n```\n).*?(```\n<!-- /health-example -->)" % name,
                 lambda m: m.group(1) + body + m.group(2), doc, flags=re.S)
open(path, "w").write(doc)
PY
echo "docs/health.md: examples regenerated with $kvsim"
