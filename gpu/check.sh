#!/usr/bin/env bash
# The one script for a lent GPU (the `device` tool): builds kvsim with CUDA,
# reports the device, and runs the CUDA kernels against their CPU twins on
# random inputs, printing one line per case and a summary.  Calibration and
# validation (issue 6) will join it; today it checks the kernels.  Keep it
# within a few minutes: the build is the longest part.
# usage: bash gpu/check.sh   (from the repository root)
set -euo pipefail
cd "$(dirname "$0")/.."
command -v nvcc >/dev/null || { echo "check.sh: nvcc not found"; exit 77; }
command -v meson >/dev/null || pip install -q meson ninja >/dev/null 2>&1 || true
echo "== build (release, CUDA)"
[ -f build-gpu/build.ninja ] || meson setup build-gpu --buildtype=release -Dcuda=enabled -Dtests=enabled -Dmpi=disabled >/dev/null
ninja -C build-gpu src/kvsim tests/test_gpu >/dev/null
echo "== device"
./build-gpu/src/kvsim gpu || true
echo "== CUDA kernels vs CPU twins (relative error < 1e-3, no NaN)"
./build-gpu/tests/test_gpu
