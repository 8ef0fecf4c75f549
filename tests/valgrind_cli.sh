#!/usr/bin/env bash
# valgrind_cli.sh KVSIM SRCDIR -- the kvsim binary's main paths under
# valgrind memcheck: every report is a failure (--error-exitcode), and so is
# a definite or indirect leak.  The unit suites run under memcheck through
# `meson test --wrapper` (.ci/test); this covers what only the binary does:
# argument parsing, YAML loading with its error paths, output files, forked
# sweep workers, and the real executor with the CPU backend (calibrate and
# validate on the tiny model, kept small: memcheck runs ~30x slower).
set -u
kvsim=$1
src=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
if ! command -v valgrind >/dev/null; then
	echo "valgrind not installed: skipped"
	exit 77
fi
vg=(valgrind -q --error-exitcode=99 --leak-check=full --errors-for-leak-kinds=definite,indirect
	--show-leak-kinds=definite,indirect --trace-children=yes --child-silent-after-fork=no
	--trace-children-skip='*/sh,*/bash,*gnuplot*')
export OPENBLAS_NUM_THREADS=1 # OpenBLAS's thread pool keeps memcheck busy for nothing
fails=0
# run EXPECTED-STATUS NAME ARGS...: memcheck reports give 99
run() {
	local want=$1 name=$2
	shift 2
	"${vg[@]}" --log-file="$tmp/vg.%p.log" "$kvsim" "$@" >"$tmp/out" 2>"$tmp/err"
	local st=$?
	if [ $st -eq "$want" ] && ! grep -qs "ERROR SUMMARY: [1-9]\|definitely lost\|indirectly lost" "$tmp"/vg.*.log; then
		echo "ok - $name (exit $st)"
	else
		echo "FAIL - $name: exit $st (want $want)"
		cat "$tmp"/vg.*.log "$tmp/err" | head -60
		fails=$((fails + 1))
	fi
	rm -f "$tmp"/vg.*.log
}

run 0 "--help" --help
run 0 "list" list
run 0 "run default (300 requests)" run "$src/workloads/default.yaml" --set workload.requests=300 \
	-o "$tmp/run" --quiet
run 0 "run tenants, drf, chunked" run "$src/workloads/tenants.yaml" --set workload.requests=300 \
	--set scheduler.name=drf --set cache=chunked -o "$tmp/run2" --quiet
for f in syntax unknown_key bad_enum too_small unknown_sched; do
	run 2 "bad input $f" run "$src/tests/data/bad/$f.yaml" -o "$tmp/bad"
done
cp "$src/tests/data/sweep/base.yaml" "$src/tests/data/sweep/grid.yaml" "$tmp/" 2>/dev/null
if [ -f "$tmp/grid.yaml" ]; then
	run 0 "sweep (forked workers)" sweep "$tmp/grid.yaml" -j 2 -o "$tmp/sweep" --quiet
fi
# calibrate and validate on a small Llama-shaped model (the tiny profile's
# 45M parameters take memcheck tens of minutes through sgemm; the code
# paths are the same): 2 layers, hidden 128, a 16-token page of 32 KiB
cat >"$tmp/vg-model.yaml" <<'YAML'
name: vg-model
layers: 2
hidden: 128
heads: 4
kv_heads: 4
head_dim: 32
intermediate: 344
vocab: 2000
max_context: 2048
params: 907904
gated_mlp: true
tie_embeddings: false
source: tests/valgrind_cli.sh (synthetic)
YAML
cat >"$tmp/vg-replay.yaml" <<YAML
name: vg-replay
engine: vllm-v0  # keeps the configured cache (the engines' prefix cache lists no pages)
model: $tmp/vg-model.yaml
device: a100-80g
batching: {max_tokens: 128, max_seqs: 8}
scheduler: fifo
cache: chunked
workload:
  requests: 3
  arrival: {process: poisson, rate: 50}
  lengths: {dist: fixed, prompt: 40, output: 6}
outputs: {sample_interval: 0, requests: false, chart: false}
YAML
run 0 "calibrate --quick (cpu, small model)" calibrate --model "$tmp/vg-model.yaml" --quick --reps 1 \
	--kv-memory 64MiB --replay "$tmp/vg-replay.yaml" -o "$tmp/cal/cpu-vg.yaml" --quiet
if [ -f "$tmp/cal/cpu-vg.yaml" ]; then
	run 0 "validate (cpu, small model)" validate "$tmp/vg-replay.yaml" \
		--profile "$tmp/cal/cpu-vg.yaml" -o "$tmp/val" --quiet
fi
run 2 "validate with a bad cache" validate "$src/workloads/validate-cpu.yaml" --set cache.name=sparse \
	-o "$tmp/val2" --quiet
echo "$fails failed"
[ "$fails" -eq 0 ]
