#!/bin/sh
# Where bench/fleet-cluster.yaml's time and memory go: the benchmark with its
# cluster features taken out one at a time (docs/benchmarks.md, "Where the
# cluster features' time goes").  Usage: bench/cluster-variants.sh KVSIM N [RUNS]
# prints, per variant, the best user CPU seconds of RUNS runs (default 3) and
# the peak RSS (KB) of that run, at N requests.
set -eu
kvsim=$1
n=$2
runs=${3:-3}
dir=$(cd "$(dirname "$0")" && pwd)
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
lot="--set cluster.router=least-outstanding-tokens"
notiers="--set cache.tier_cpu_bytes=0 --set cache.tier_ssd_bytes=0 --set cache.tier_remote_bytes=0"
nodis="--set cluster.prefill_replicas=0"
variant() { # NAME FILE ARGS...
	name=$1
	file=$2
	shift 2
	best=
	for r in $(seq "$runs"); do
		/usr/bin/time -f "%U %M" -o "$out/time" "$kvsim" run -q -f -o "$out/run" \
			"$dir/$file" --set workload.requests="$n" "$@" >/dev/null
		set -- "$@"
		t=$(cut -d' ' -f1 "$out/time")
		m=$(cut -d' ' -f2 "$out/time")
		if [ -z "$best" ] || awk "BEGIN{exit !($t < $best)}"; then
			best=$t
			mem=$m
		fi
	done
	printf '%-58s %8s s %8s KB\n' "$name" "$best" "$mem"
}
variant "plain (fleet.yaml)" fleet.yaml
variant "cluster (fleet-cluster.yaml)" fleet-cluster.yaml
# shellcheck disable=SC2086
variant "cluster, least-outstanding-tokens router" fleet-cluster.yaml $lot
# shellcheck disable=SC2086
variant "  and no tiers" fleet-cluster.yaml $lot $notiers
# shellcheck disable=SC2086
variant "  and no tiers, no disaggregation" fleet-cluster.yaml $lot $notiers $nodis
# shellcheck disable=SC2086
variant "  and no disaggregation (tiers on)" fleet-cluster.yaml $lot $nodis
# shellcheck disable=SC2086
variant "  and no tiers, no disaggregation, chunked cache" fleet-cluster.yaml $lot $notiers $nodis --set cache=chunked
# shellcheck disable=SC2086
variant "  and disaggregation, chunked cache" fleet-cluster.yaml $lot --set cache=chunked
