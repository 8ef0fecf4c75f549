#!/usr/bin/env bash
# The one script for a lent GPU (the `device` tool): builds kvsim with CUDA,
# reports the device, runs the CUDA kernels against their CPU twins and the
# backend smoke test (tests/test_gpu.c), then times the CUDA backend on a
# Llama-2-7B-shaped model (bench/cuda_bench from gpu/cuda_bench.c): decode
# steps at batch 1/8/32/128 over a 1024-token context, prefill chunks of
# 512 and 2048 tokens, and the gain from overlapping an async swap with a
# decode step, with fp16 KV and with 8-bit KV.  Calibration and validation
# run when the kvsim binary has those commands.  Budget: within 8 minutes
# on an H200, the build being the longest part.
# usage: bash gpu/check.sh   (from the repository root)
set -euo pipefail
cd "$(dirname "$0")/.."
command -v nvcc >/dev/null || { echo "check.sh: nvcc not found"; exit 77; }
command -v meson >/dev/null || pip install -q meson ninja >/dev/null 2>&1 || true
echo "== build (release, CUDA)"
[ -f build-gpu/build.ninja ] || meson setup build-gpu --buildtype=release -Dcuda=enabled -Dtests=enabled -Dmpi=disabled >/dev/null
ninja -C build-gpu src/kvsim tests/test_gpu bench/cuda_bench >/dev/null
echo "== device"
./build-gpu/src/kvsim gpu || true
echo "== CUDA kernels vs CPU twins (relative error < 1e-3, no NaN), backend smoke test"
status=0
timeout 120 ./build-gpu/tests/test_gpu || status=$?
echo "== CUDA backend timing, llama-2-7b (CUDA events; medians of 10 steps)"
timeout 120 ./build-gpu/bench/cuda_bench llama-2-7b || status=$?
timeout 120 ./build-gpu/bench/cuda_bench llama-2-7b --kv-int8 || status=$?
if ./build-gpu/src/kvsim calibrate --help >/dev/null 2>&1; then
	echo "== calibrate and validate (CUDA backend)"
	timeout 60 ./build-gpu/src/kvsim calibrate --backend cuda || status=$?
	timeout 60 ./build-gpu/src/kvsim validate --backend cuda || status=$?
fi
exit "$status"
