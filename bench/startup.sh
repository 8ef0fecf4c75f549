#!/usr/bin/env bash
# Start-up cost of kvsim binaries: peak RSS and wall time of `kvsim run` on
# a small generated workload (50 requests on one replica, a few ms of
# simulation), so what differs between builds is what the process maps
# and initialises before it simulates -- e.g. a -Dcuda=enabled build
# against a -Dcuda=disabled one (docs/benchmarks.md, "Start-up").
#
# usage: bench/startup.sh [-n RUNS] [KVSIM ...]
#   (default: build/src/kvsim build-cuda/src/kvsim, those that exist; RUNS
#   default 20).  Per binary: the CUDA libraries it links (ldd), peak RSS
#   (the median of RUNS /usr/bin/time -f %M), and wall time over RUNS runs
#   after one warm-up (date +%s%N around each: min, median, mean), or
#   hyperfine's mean +- sd when it is installed.
set -euo pipefail
cd "$(dirname "$0")/.."
runs=20
if [ "${1:-}" = "-n" ]; then runs=$2; shift 2; fi
bins=("$@")
if [ ${#bins[@]} -eq 0 ]; then
	for b in build/src/kvsim build-cuda/src/kvsim; do [ -x "$b" ] && bins+=("$b"); done
fi
[ ${#bins[@]} -gt 0 ] || { echo "bench/startup.sh: no kvsim binary given or built" >&2; exit 2; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cat >"$tmp/w.yaml" <<YAML
model: llama-2-7b
device: a100-80g
workload:
  requests: 50
  arrival: {process: poisson, rate: 10}
  lengths: {dist: lognormal, prompt_mean: 400, output_mean: 120, prompt_max: 3000, output_max: 1000}
outputs: {chart: false}
YAML

# stats: min, median and mean of the numbers on stdin.
stats() { sort -n | awk '{v[NR]=$1; s+=$1} END{printf "%.1f %.1f %.1f", v[1], v[int((NR+1)/2)], s/NR}'; }

printf 'machine: %s, %s cores; %d runs each; workload: 50 requests, one replica\n' \
	"$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')" "$(nproc)" "$runs"
printf '%-34s %-34s %9s %27s\n' binary "CUDA libraries linked" "RSS MiB" "wall ms: min median mean"
for b in "${bins[@]}"; do
	run=("$b" run -q "$tmp/w.yaml" -o "$tmp/out")
	"${run[@]}" # warm-up: page cache, and a failing binary stops here
	libs=$(ldd "$b" | awk '$1 ~ /^lib(cudart|cublas|cublasLt)\.so/ {sub(/\.so.*/, "", $1); print $1}' | paste -sd+)
	: >"$tmp/rss" >"$tmp/ms"
	for ((i = 0; i < runs; i++)); do
		/usr/bin/time -f %M -o "$tmp/t" "${run[@]}"
		cat "$tmp/t" >>"$tmp/rss"
		t0=$(date +%s%N)
		"${run[@]}"
		echo "$((($(date +%s%N) - t0) / 1000))" >>"$tmp/ms"
	done
	rss=$(awk '{print $1 / 1024}' "$tmp/rss" | stats | cut -d' ' -f2)
	ms=$(awk '{print $1 / 1000}' "$tmp/ms" | stats)
	printf '%-34s %-34s %9s %27s\n' "$b" "${libs:-none}" "$rss" "$ms"
	if command -v hyperfine >/dev/null; then
		hyperfine -N -w 2 -r "$runs" "${run[*]}" 2>/dev/null | grep -E 'Time \(mean'
	fi
done
