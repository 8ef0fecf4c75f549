#!/usr/bin/env bash
# The cost of chunked prefill against the token budget, kvsim against Sarathi-Serve's
# measurement, as the Markdown table of docs/engines.md ("Token budget and chunked prefill"),
# which docs/figures.sh writes there and checks.
#
# The measurement: Agrawal et al., "Taming Throughput-Latency Tradeoff in LLM Inference with
# Sarathi-Serve", OSDI'24 (arXiv:2403.02310), Figure 9a, "overhead of chunking": Yi-34B-200K at
# TP 2 on A100-80GB PCIe (NVLink pairs), one request at a time (max batch size 1), prompts of
# 2047/4095/8191/16383 tokens and one output token, chunk sizes 512/1024/2048 against 16384 (no
# chunking); the prefill execution time of each. sarathi-fig9a.csv is the artifact's data file,
# github.com/microsoft/sarathi-serve osdi-experiments/figure-9/chunking-overhead.csv (commit
# 02d2567eb169d947c7093f57b5b74ad602615947), its runs in prefill_chunking_overhead_runs.sh.
#
# kvsim runs the same setup (configs/models/yi-34b-200k.yaml, device a100-80g: the SXM part's
# datasheet, 2039 GB/s against the PCIe part's 1935; the ratios hardly see it) with
# batching.max_tokens = the chunk size and max_seqs 1, five requests 100 s apart, under the
# engine vllm (GEMM ramp on) and vllm-v0 (no ramp); its TTFT is the prefill time. Prefix caching
# is off, as Sarathi's runs had none.
#
# usage: configs/engines/chunking-overhead.sh [KVSIM [DEVICE [N_HALF]]]   (default build/src/kvsim,
#   device a100-80g, N_HALF 128 (the ramp this table shows; vllm's default is 0); DEVICE a profile name or path, N_HALF the
#   gemm_half_tokens of the vllm runs: the what-if runs of docs/engines.md)
# Exits 1 when a run fails or when vllm does not make 512-token chunks cost more than one
# whole-prompt step at every prompt length (the effect the engine models).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
kvsim=${1:-$here/../../build/src/kvsim}
device=${2:-a100-80g}
case $device in */*) device=$(cd "$(dirname "$device")" && pwd)/$(basename "$device") ;; esac
nhalf=${3-128}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

cat > "$tmp/w.yaml" <<YAML
name: chunking-overhead
model: yi-34b-200k
device: $device
cluster: {tensor_parallel: 2}
scheduler: fifo
cache: chunked
engine: vllm
batching: {max_tokens: 512, max_seqs: 1}
workload:
  requests: 5
  arrival: {process: trace, trace: $tmp/t.csv, format: vidur}
outputs: {sample_interval: 0, chart: false}
YAML

# ttft P CHUNK ENGINE: kvsim's mean TTFT in ms
ttft() {
  printf 'arrived_at,num_prefill_tokens,num_decode_tokens\n' > "$tmp/t.csv"
  for t in 0 100 200 300 400; do printf '%s,%s,1\n' "$t" "$1" >> "$tmp/t.csv"; done
  local pc=()
  [ "$3" = vllm ] && pc=(--set engine.prefix_caching=false)
  [ "$3" = vllm ] && [ -n "$nhalf" ] && pc+=(--set engine.gemm_half_tokens="$nhalf")
  rm -rf "$tmp/o"
  "$kvsim" run -q "$tmp/w.yaml" -o "$tmp/o" --set batching.max_tokens="$2" \
    --set engine.name="$3" "${pc[@]}" > /dev/null || return 1
  awk -F, 'NR == 1 { for (i = 1; i <= NF; i++) h[$i] = i; next }
    $h["status"] == "completed" { s += $h["ttft_s"]; n++ }
    END { if (n != 5) exit 1; printf "%.6g", 1000 * s / n }' "$tmp/o/requests.csv"
}

bad=0
for e in vllm vllm-v0; do
  while IFS=, read -r p c ms rel; do
    [ "$p" = prefill_length ] && continue
    if t=$(ttft "$p" "$c" "$e"); then
      echo "$e $p $c $t" >> "$tmp/k"
    else
      echo "chunking-overhead: $e, prompt $p, chunk $c: the run failed" >&2
      bad=1
    fi
  done < "$here/sarathi-fig9a.csv"
done
[ "$bad" = 0 ] || exit 1

printf '| prompt | chunk | measured | measured vs 16384 | kvsim vllm | kvsim vllm vs 16384 | kvsim vllm-v0 vs 16384 |\n'
printf '|---:|---:|---:|---:|---:|---:|---:|\n'
awk -F, '
  FNR == NR { split($0, f, " "); k[f[1] " " f[2] " " f[3]] = f[4]; next }
  FNR == 1 { next }
  {
    v = k["vllm " $1 " " $2]; v0 = k["vllm-v0 " $1 " " $2]
    b = k["vllm " $1 " 16384"]; b0 = k["vllm-v0 " $1 " 16384"]
    printf "| %d | %d | %.1f ms | %+.1f%% | %.1f ms | %+.1f%% | %+.1f%% |\n", $1, $2, $3,
      100 * ($4 - 1), v, 100 * (v / b - 1), 100 * (v0 / b0 - 1)
    if ($2 == 512 && !(v > b)) { printf "chunking-overhead: vllm, prompt %d: 512-token chunks not slower\n", $1 > "/dev/stderr"; bad = 1 }
  }
  END { exit bad }' "$tmp/k" "$here/sarathi-fig9a.csv"
