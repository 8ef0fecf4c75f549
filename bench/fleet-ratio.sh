#!/bin/sh
# The fleet benchmark with its cluster features on against the plain one
# (docs/benchmarks.md, "Cluster features at fleet scale"): bench/fleet.yaml
# and bench/fleet-cluster.yaml at N requests, the latter at three prefix
# block sizes, each run RUNS times (default 5) interleaved so that a change
# in the machine's load falls on every row alike.  Prints a Markdown table:
# best and median user CPU seconds, the median's ratio to the plain
# benchmark's, the peak RSS of the median run, and the run's GPU cache
# evictions (each one a block down the tiers), prefix hit rate and the
# terabytes the GPUs wrote into the CPU tier.
# Usage: bench/fleet-ratio.sh KVSIM N [RUNS]
set -eu
kvsim=$1
n=$2
runs=${3:-5}
dir=$(cd "$(dirname "$0")" && pwd)
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
# name|file|options (Markdown: backquotes are literal)
# shellcheck disable=SC2016
variants='plain (`bench/fleet.yaml`: `chunked` cache, least-outstanding-tokens)|fleet.yaml|
`bench/fleet-cluster.yaml` (16-token prefix blocks: vLLM'"'"'s GPU block)|fleet-cluster.yaml|
the same at 256-token prefix blocks (LMCache'"'"'s chunk)|fleet-cluster.yaml|--set cache.prefix_block_tokens=256
the same at 512-token prefix blocks (the `shared` cache'"'"'s default: Mooncake'"'"'s block)|fleet-cluster.yaml|--set cache.prefix_block_tokens=512'
i=0
echo "$variants" | while IFS='|' read -r name file opts; do
	i=$((i + 1))
	echo "$name" >"$out/name.$i"
done
nv=$(echo "$variants" | wc -l)
for r in $(seq "$runs"); do
	v=0
	echo "$variants" | while IFS='|' read -r name file opts; do
		v=$((v + 1))
		# shellcheck disable=SC2086
		/usr/bin/time -f "%U %M" -o "$out/t" "$kvsim" run -q -f -o "$out/run" \
			"$dir/$file" --set workload.requests="$n" $opts >/dev/null
		cat "$out/t" >>"$out/times.$v"
		# what the cache did (the same in every run: the simulation is deterministic)
		awk -F, 'NR == 1 { for (i = 1; i <= NF; i++) col[$i] = i; next }
			{ e = $col["cache_evictions"]; h = $col["cache_hit_rate"] }
			END { printf "%s %s", e == "" ? "-" : e, h == "" ? "-" : h }' "$out/run/summary.csv" >"$out/cache.$v"
		if [ -f "$out/run/tiers.csv" ]; then
			awk -F, 'NR == 1 { for (i = 1; i <= NF; i++) col[$i] = i; next }
				$col["tier"] == "cpu" { b += $col["in_bytes"] }
				END { printf " %.1f\n", b / 1e12 }' "$out/run/tiers.csv" >>"$out/cache.$v"
		else
			echo " -" >>"$out/cache.$v"
		fi
		printf 'run %s/%s: %s\n' "$r" "$runs" "$name" >&2
	done
done
echo "| benchmark ($n requests, $runs runs each, interleaved) | best user s | median user s | median against plain | peak RSS | GPU cache evictions | prefix hit rate | TB into the CPU tier |"
echo "|---|---|---|---|---|---|---|---|"
plain=
for v in $(seq "$nv"); do
	name=$(cat "$out/name.$v")
	# median of the user times (the lower middle one for an even count) and that run's RSS
	med=$(sort -n -k1,1 "$out/times.$v" | awk -v k=$(((runs + 1) / 2)) 'NR == k')
	best=$(sort -n -k1,1 "$out/times.$v" | head -n 1 | cut -d' ' -f1)
	t=${med% *}
	kb=${med#* }
	[ -n "$plain" ] || plain=$t
	read -r ev hit tb <"$out/cache.$v"
	awk -v name="$name" -v b="$best" -v t="$t" -v p="$plain" -v kb="$kb" -v ev="$ev" -v hit="$hit" -v tb="$tb" 'BEGIN {
		printf "| %s | %.2f | %.2f | %.2f | %d MB | %s | %s | %s |\n", name, b, t, t / p, kb / 1024 + 0.5,
			ev, hit == "-" ? "-" : sprintf("%.1f%%", 100 * hit), tb }'
done
