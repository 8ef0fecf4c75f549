#!/usr/bin/env bash
# Published tensor-parallel scaling against kvsim: each setup run at every TP
# degree its source measured, printed as a Markdown table (docs/perf-model.md,
# "Tensor-parallel scaling"; docs/figures.sh keeps it current).
#   gpt-fast: Llama-2-7B, batch 1, A100-80GB SXM (NVLink), TP 1/2/4/8, tok/s
#     (pytorch-labs/gpt-fast README, "Tensor Parallelism" table; the rows of
#     docs/perf-model.md table B); kvsim: 1000 / mean TPOT, engine vllm-v0 (no
#     engine host terms: gpt-fast is a compiled decode loop).
#   vLLM issue 16300: QwQ-32B, vLLM 0.7.2 benchmark_latency, input 1, output
#     200, batch 1 and 16, 8 x A100-80GB, TP 2/4/8, seconds per batch
#     (https://github.com/vllm-project/vllm/issues/16300, description table);
#     kvsim: the batch's last E2E, engine vllm.
#   vLLM issue 3297: Llama-7B, vLLM 0.3.3, ShareGPT at 10 req/s, 4 and 8 x L40
#     (PCIe), mean TPOT, ms (the fidelity workloads configs/fidelity/
#     vllm033-7b-l40-tp{4,8}-r10.yaml; docs/fidelity.md cites the issue).
# usage: tp-scaling.sh [KVSIM]
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
kvsim=${1:-$here/../../build/src/kvsim}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# batch NAME ENGINE MODEL DEVICE TP N PROMPT OUTPUT: a batch of N requests at t = 0
batch() {
  cat > "$tmp/$1.yaml" <<YAML
name: $1
engine: $2
model: $3
device: $4
seed: 1
cluster:
  tensor_parallel: $5
batching:
  max_seqs: 256
cache: chunked
workload:
  requests: $6
  arrival:
    process: poisson
    rate: 1000000000
  lengths:
    dist: fixed
    prompt: $7
    output: $8
outputs:
  sample_interval: 0
  chart: false
YAML
  "$kvsim" run -q "$tmp/$1.yaml" -o "$tmp/$1" > /dev/null
}

# col DIR COLUMN AGG: mean or max of a requests.csv column over completed requests
col() {
  awk -F, -v c="$2" -v agg="$3" 'NR == 1 { for (i = 1; i <= NF; i++) h[$i] = i; next }
    $h["status"] == "completed" { n++; s += $h[c]; if ($h[c] > m) m = $h[c] }
    END { print (agg == "max" ? m : s / n) }' "$1/requests.csv"
}

row() { # SETUP TP MEASURED KVSIM UNIT
  awk -v s="$1" -v t="$2" -v m="$3" -v k="$4" -v u="$5" 'BEGIN {
    printf "| %s | %s | %.4g %s | %.4g %s | %+.0f%% |\n", s, t, m, u, k, u, 100 * (k / m - 1) }'
}

echo "| setup | TP | measured | kvsim | error |"
echo "|---|---:|---:|---:|---:|"
set -- 1 104.9 2 168.84 4 254.02 8 328.43
while [ $# -gt 0 ]; do
  batch gf$1 vllm-v0 llama-2-7b a100-80g $1 1 5 200
  row "gpt-fast, Llama-2-7B, batch 1, A100 NVLink" $1 $2 \
    "$(awk -v t="$(col "$tmp/gf$1" tpot_s mean)" 'BEGIN { print 1 / t }')" tok/s
  shift 2
done
for b in 1 16; do
  if [ $b = 1 ]; then set -- 2 5.50 4 3.91 8 3.15; else set -- 2 6.07 4 4.77 8 4.25; fi
  while [ $# -gt 0 ]; do
    batch q$b-$1 vllm "$here/qwq-32b.yaml" a100-80g $1 $b 1 200
    row "vLLM 0.7.2, QwQ-32B, batch $b, A100" $1 $2 "$(col "$tmp/q$b-$1" e2e_s max)" s
    shift 2
  done
done
set -- 4 47.02 8 49.34
while [ $# -gt 0 ]; do
  w=vllm033-7b-l40-tp$1-r10
  "$kvsim" run -q "$here/../fidelity/$w.yaml" -o "$tmp/$w" --set outputs.chart=false > /dev/null
  row "vLLM 0.3.3, Llama-7B, 10 req/s, L40 PCIe" $1 $2 \
    "$(awk -v t="$(col "$tmp/$w" tpot_s mean)" 'BEGIN { print 1000 * t }')" ms
  shift 2
done
