#!/usr/bin/env bash
# cuda_module_test.sh -- the CUDA backend as a module loaded on first use
# (gpu/cuda_module.h), on a CUDA build with or without a GPU: kvsim links
# no CUDA library; `kvsim run` never maps the module; `kvsim gpu` loads it
# from the build tree, from beside the executable, or from
# KVSIM_CUDA_MODULE; a module that is missing or not one is "no GPU: the
# CUDA backend is not available: REASON" with the no-GPU exit statuses
# (gpu 77, calibrate and validate 4).
# usage: cuda_module_test.sh KVSIM KVSIM-CUDA.SO SOURCE_ROOT
set -u
kvsim=$1 module=$2 src=$3
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fails=0
ok() { :; }
bad() { echo "FAIL: $*"; fails=$((fails + 1)); }

if ldd "$kvsim" | grep -E 'libcudart|libcublas'; then
	bad "kvsim links a CUDA library"
else
	ok
fi

# kvsim gpu: the module from the build tree (gpu/ beside src/), 0 or 77.
"$kvsim" gpu >"$tmp/gpu" 2>&1; st=$?
{ [ $st -eq 0 ] || [ $st -eq 77 ]; } && grep -q "module $(realpath "$module")" "$tmp/gpu" && ok ||
	bad "kvsim gpu (status $st) did not load $module: $(cat "$tmp/gpu")"

# Beside the executable first: a copy of both in one folder.
cp "$kvsim" "$module" "$tmp/"
"$tmp/kvsim" gpu >"$tmp/gpu" 2>&1
grep -q "module $tmp/kvsim-cuda.so" "$tmp/gpu" && ok || bad "module beside kvsim: $(cat "$tmp/gpu")"

# The override: a path that does not exist, a file that is not a module,
# a shared object without the entry point.
for m in "$tmp/none.so" "$src/README.md" "$(ldd "$module" | awk '/libcudart/{print $3}')"; do
	KVSIM_CUDA_MODULE=$m "$kvsim" gpu >"$tmp/gpu" 2>&1; st=$?
	[ $st -eq 77 ] && grep -q "no GPU: the CUDA backend is not available: " "$tmp/gpu" && ok ||
		bad "KVSIM_CUDA_MODULE=$m: gpu status $st: $(cat "$tmp/gpu")"
	KVSIM_CUDA_MODULE=$m "$kvsim" calibrate --backend cuda --quick -o "$tmp/cal.yaml" \
		>"$tmp/cal" 2>&1; st=$?
	[ $st -eq 4 ] && grep -q "not available" "$tmp/cal" && ok ||
		bad "KVSIM_CUDA_MODULE=$m: calibrate status $st: $(tail -n 1 "$tmp/cal")"
done
KVSIM_CUDA_MODULE=$tmp/none.so "$kvsim" validate --backend cuda "$src/workloads/validate-cuda.yaml" \
	-o "$tmp/val" >"$tmp/val.log" 2>&1; st=$?
[ $st -eq 4 ] && ok || bad "validate without the module: status $st: $(tail -n 1 "$tmp/val.log")"

# kvsim run simulates without opening the module or any CUDA library.
cat >"$tmp/w.yaml" <<YAML
model: llama-2-7b
device: a100-80g
workload:
  requests: 50
  arrival: {process: poisson, rate: 10}
  lengths: {dist: lognormal, prompt_mean: 400, output_mean: 120, prompt_max: 3000, output_max: 1000}
outputs: {chart: false}
YAML
LD_DEBUG=files "$kvsim" run -q "$tmp/w.yaml" -o "$tmp/run" 2>"$tmp/ld" && ok || bad "kvsim run"
if grep -qE 'kvsim-cuda|libcudart|libcublas' "$tmp/ld"; then
	bad "kvsim run opened CUDA: $(grep -E 'kvsim-cuda|libcudart|libcublas' "$tmp/ld" | head -3)"
fi

[ $fails -eq 0 ] && echo "cuda module: all passed" || echo "cuda module: $fails failed"
[ $fails -eq 0 ]
