#!/usr/bin/env bash
# The front end's defaults (docs/frontend.md "Parameters and defaults"): each
# default is derived here from its published figures, checked against what
# `kvsim list engines` gives for vllm, sglang and vllm-v0 (exit 1 on a
# difference), and printed as a Markdown table row with its derivation.
# After the table, the lone-request example: what the front end adds to a
# 1000-token prompt's TTFT under vllm by the equations, checked against two
# runs of one such request (api_server true and false), and the API-server
# time each streamed token costs.  docs/figures.sh pastes the output into the
# doc (name frontend-defaults) and checks it.
# usage: configs/engines/frontend-defaults.sh KVSIM
set -euo pipefail
[ $# -eq 1 ] || { echo "usage: $0 KVSIM" >&2; exit 2; }
kvsim=$1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
engines=(vllm sglang vllm-v0)

# "ENGINE OPTION VALUE" lines from kvsim list engines, durations in ns
"$kvsim" list engines | awk '
  /^  [a-z]/ { e = $1; next }
  /^      [a-z_]+ +[a-z]+ +default / {
    v = $4
    if ($2 == "duration") {
      u = $5; m = u == "s" ? 1e9 : u == "ms" ? 1e6 : u == "us" ? 1e3 : u == "ns" ? 1 : -1
      if (m < 0) { print "frontend-defaults.sh: unit " u " of " e "." $1 > "/dev/stderr"; exit 1 }
      v = sprintf("%.0f", v * m)
    }
    print e, $1, v }' >"$tmp/defaults"

# def ENGINE OPTION: its default (ns for a duration); fails when absent
def() {
  awk -v e="$1" -v o="$2" '$1 == e && $2 == o { print $3; f = 1 } END { exit !f }' "$tmp/defaults" ||
    { echo "frontend-defaults.sh: no default for $1 $2" >&2; exit 1; }
}
# calc EXPR: awk arithmetic, printed with %.10g
calc() { awk "BEGIN { printf \"%.10g\", $1 }"; }
# want OPTION ENGINE VALUE: the engine's default must be VALUE (ns for a duration)
want() {
  local got
  got=$(def "$2" "$1")
  [ "$got" = "$3" ] || { echo "frontend-defaults.sh: $2 $1 is $got, its derivation gives $3" >&2; exit 1; }
}
# show NS: a duration as the doc writes it (0; N ns below 10 us; 3 digits in us; ms above)
show() { awk -v t="$1" 'BEGIN { if (t == 0) print "0"; else if (t < 1e4) printf "%d ns\n", t;
  else if (t < 1e6) printf "%.3g µs\n", t / 1e3; else printf "%.4g ms\n", t / 1e6 }'; }
# row OPTION DERIVATION: the table row, the three engines' defaults from kvsim
row() {
  local o=$1 cells="" e v
  for e in "${engines[@]}"; do
    v=$(def "$e" "$o")
    case $o in
    request_cpu | tokenize_per_token | ipc_hop | detokenize_per_token | stream_chunk | frontend_overhead) v=$(show "$v") ;;
    esac
    cells+=" $v |"
  done
  echo "| \`$o\` |$cells $2 |"
}

# published figures
wrk_rps=2031.28 wrk_workers=4           # FastAPI hello world, uvicorn 4 workers, wrk
tok_s=1.1 tok_n=1000000                 # HF tokenizers: 1.1 s for ~1M tokens
zmq_us=28                               # ZeroMQ inproc PUSH/PULL, mean of 500,000 messages
s_on=9.74 s_off=7.35 s_tps=21752.53 s_tps_off=28828.17  # SGLang PR 22548, streamed and not

request_ns=$(calc "int($wrk_workers / $wrk_rps * 1e6 + 0.5) * 1e3") # a worker's time per request, to the us
tokenize_ns=$(calc "$tok_s / $tok_n * 1e9")
hop_ns=$(calc "$zmq_us * 1e3")
s_tokens=$(calc "$s_tps * $s_on")
chunk_ns=$(calc "int(($s_on - $s_off) / $s_tokens * 1e7 + 0.5) * 100") # to 0.1 us
# SGLang's request_cpu is fitted to its fidelity rows (configs/fidelity/fit.sh, coefficients.csv
# request_cpu@sglang): the derivation below is its prior, the fit's value the default.  The
# default is the fit of 2026-12-02 on SGLang 0.3.0's rows (fitted.csv, fold "all" of sources 1
# to 10, commit 524b27c; today's fold "gpustack" reproduces it); the refit with SGLang 0.5.3's
# closed loop (source 11) gives 3.94 ms and is not shipped (docs/fidelity.md "The global fit").
sglang_request_ns=7880000
for e in "${engines[@]}"; do
  if [ "$e" = sglang ] && [ -n "$sglang_request_ns" ]; then
    want request_cpu "$e" "$sglang_request_ns"
  else
    want request_cpu "$e" "$request_ns"
  fi
  want tokenize_per_token "$e" "$tokenize_ns"
  want ipc_hop "$e" "$hop_ns"
  want stream_chunk "$e" "$chunk_ns"
  want stream_interval "$e" 1
  want api_servers "$e" 1
  want api_server "$e" true
  want frontend_overhead "$e" 0
done
want ipc_hops_out vllm 1
want ipc_hops_out vllm-v0 1
want ipc_hops_out sglang 2
want detokenize_per_token vllm 1000
want detokenize_per_token sglang 1000
want detokenize_per_token vllm-v0 0

echo "| option | vllm | sglang | vllm-v0 | derivation of the default |"
echo "|---|---|---|---|---|"
row request_cpu "a FastAPI \"hello world\" under uvicorn with $wrk_workers workers served $wrk_rps req/s under \`wrk\` (gist [patx/1269e389](https://gist.github.com/patx/1269e389d7d19ea31eb3b9ffff47e0cb), FastAPI table): $wrk_workers worker-seconds / $wrk_rps requests = $(show "$request_ns") of a worker per request, before any LLM-specific work; SGLang's is fitted to SGLang 0.3.0's rows of the fidelity table (configs/fidelity/fit.sh), with this as the fit's start; the refit with SGLang 0.5.3's closed loop gives 3.94 ms, not shipped (docs/fidelity.md \"The global fit\")"
row tokenize_per_token "HuggingFace \`tokenizers\` takes $tok_s s for a 4 MB document of about 1M tokens, serially ([charlesxu.io/parallel-tokenizer](https://charlesxu.io/parallel-tokenizer), first section): $(show "$tokenize_ns") a token; consistent with 2.7 MiB/s for HF tokenizers (Python) on English prose, GPT-2 vocabulary ([gist benvanik/9090b155](https://gist.github.com/benvanik/9090b155a3102b333896c1d92c451cbc), \"GPT-2 Encode Throughput\", ASCII row)"
row ipc_hop "ZeroMQ PUSH/PULL (inproc transport, with \`zmq_poll\`), 500,000 messages: mean latency $zmq_us µs ([stackoverflow q. 62191322](https://stackoverflow.com/questions/62191322), \"avg lag = 28 [us]\"); the engines' IPC transport crosses a kernel socket as well, and kvsim adds no serialisation term, so this is a floor"
row ipc_hops_out "the process hops listed in the table above"
row detokenize_per_token "the \`tokenizers\` decode stream costs ~0.5–1.5 µs per token (tokenizers 0.22.2: [vllm PR 51281](https://github.com/vllm-project/vllm/pull/51281), Purpose): the middle, $(show "$(def vllm detokenize_per_token)"); vLLM V0 detokenises in the engine process, a per-step engine cost, not the front end's"
row stream_chunk "SGLang, Qwen3-1.7B, 4 × H200 (DP 4), 400 prompts, output 1024: $s_on s streamed against $s_off s not streamed at $s_tps and $s_tps_off output tok/s ([sglang PR 22548](https://github.com/sgl-project/sglang/pull/22548), \"MAIN-def-stream\" and \"MAIN-def-nostream\" rows); ($s_on − $s_off) s / ($s_tps × $s_on) tokens = $(show "$chunk_ns") per streamed token, one chunk each at \`stream_interval\` 1"
row stream_interval "vLLM and SGLang \`--stream-interval\`, default 1"
row api_servers "vLLM \`--api-server-count\`, default 1; SGLang runs one tokenizer manager"
row api_server "false for the offline engine (vLLM's \`LLM\` class, \`benchmark_latency\`, \`benchmark_throughput\`): every cost above is 0"
row frontend_overhead "a constant for calibration; no default beyond the model"

# the lone request under vllm: w_in + hop + d_out by the equations, against two runs
P=1000
req=$(def vllm request_cpu) tok=$(def vllm tokenize_per_token) hop=$(def vllm ipc_hop)
hops=$(def vllm ipc_hops_out) det=$(def vllm detokenize_per_token) chunk=$(def vllm stream_chunk)
dout=$(calc "$hops * $hop + $det + $chunk")
add=$(calc "$req + $tok * $P + $hop + $dout")
cat >"$tmp/lone.yaml" <<YAML
name: lone
model: llama-2-7b
device: a100-80g
engine: {name: vllm}
workload:
  requests: 1
  arrival: {process: poisson, rate: 1}
  lengths: {dist: fixed, prompt: $P, output: 4}
outputs: {chart: false}
YAML
for on in true false; do
  "$kvsim" run -q "$tmp/lone.yaml" -o "$tmp/$on" --set engine.api_server=$on >/dev/null 2>"$tmp/err" ||
    { echo "frontend-defaults.sh: the lone-request run failed: $(cat "$tmp/err")" >&2; exit 1; }
done
# col DIR FILE COLUMN: the column's value on the first data row
col() { awk -F, -v k="$3" 'NR == 1 { for (i = 1; i <= NF; i++) c[$i] = i } NR == 2 { print $c[k] }' "$1/$2"; }
got=$(calc "($(col "$tmp/true" requests.csv first_token_s) - $(col "$tmp/true" requests.csv arrival_s) - \
  $(col "$tmp/false" requests.csv first_token_s) + $(col "$tmp/false" requests.csv arrival_s)) * 1e9")
awk -v g="$got" -v w="$add" 'BEGIN { exit !(g - w < 1000 && w - g < 1000) }' ||
  { echo "frontend-defaults.sh: a lone request gains $got ns of TTFT, the equations $add ns" >&2; exit 1; }
echo
printf 'So a lone request with a %d-token prompt gains %s + %s + %s + %s = %s of TTFT\n' "$P" \
  "$(calc "$req / 1e6")" "$(calc "$tok * $P / 1e6")" "$(calc "$hop / 1e6")" "$(calc "$dout / 1e6")" \
  "$(awk -v a="$add" 'BEGIN { printf "%.3g ms", a / 1e6 }')"
printf 'under `vllm` (d<sub>out</sub> = %s + %s + %s µs; two runs of it, `engine.api_server` true and false, differ by\nthat), ' \
  "$(calc "$hops * $hop / 1e3")" "$(calc "$det / 1e3")" "$(calc "$chunk / 1e3")"
printf 'and each token it streams costs its API server %s.\n' "$(show "$(calc "$det + $chunk")")"
