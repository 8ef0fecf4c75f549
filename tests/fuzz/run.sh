#!/usr/bin/env bash
# Builds the libFuzzer targets (tests/fuzz/fuzz_*.c) in their own build
# directory with clang, replays every committed corpus file once (the
# regression step: each crash ever found is there), then fuzzes every target
# for a bounded time, KVSIM_FUZZ_JOBS at a time, on a scratch copy of its
# corpus so a CI run never grows the committed one.  Fails on any crash,
# leak, timeout, out-of-memory or sanitizer report, printing the reproducer
# and the log.
#
# Usage: tests/fuzz/run.sh [TARGET...]     (default: every target)
# Environment:
#   KVSIM_FUZZ_SECONDS  fuzzing time of every target in seconds (0: replay only); unset:
#                       40 for workload, sweep and profile, 20 for the others
#   KVSIM_FUZZ_JOBS     targets fuzzed at once (default 2)
#   KVSIM_FUZZ_BUILD    build directory (default build-fuzz)
#   KVSIM_FUZZ_OUT      logs and crash inputs (default $KVSIM_FUZZ_BUILD/fuzz-out)
#   KVSIM_TRACES        real traces whose first lines seed the trace targets
#                       (default ../shared/traces; skipped when absent)
# To reproduce a crash: build-fuzz/tests/fuzz/fuzz_TARGET CRASH-FILE
set -euo pipefail
cd "$(dirname "$0")/../.."
# 40 s for the YAML targets (workload, sweep, profile), 20 s for the others: the
# slowest-saturating targets gain little after 40 s.  Measured two at a time on a loaded
# 2-core machine, libFuzzer's edge coverage (start -> 40 s -> 61 s): workload 919 -> 1024 ->
# 1037, sweep 782 -> 894 -> 928.  The CSV, run-file and trace targets run 3-6 times as many
# inputs a second and level off sooner: in a CI run at 40 s each (cov at 10 s, 20 s, 40 s,
# reading the time off the execs count) trace_azure 308, 308, 309; trace_vidur 275, 275, 275;
# trace_lengths 222, 222, 222; trace_mooncake 262, 263, 264; csv 124, 124, 124; fromrun 424,
# 431, 440; while profile went 798, 820, 849.  Nine targets two at a time, longest first: 3 x
# 40 + 6 x 20 s = 2 minutes of the CI run instead of 3 at 40 s each; long runs go by hand
# (docs/reliability.md).
secs_of() {
	if [ -n "${KVSIM_FUZZ_SECONDS:-}" ]; then
		echo "$KVSIM_FUZZ_SECONDS"
	else
		case $1 in workload | sweep | profile) echo 40 ;; *) echo 20 ;; esac
	fi
}
jobs=${KVSIM_FUZZ_JOBS:-2}
build=${KVSIM_FUZZ_BUILD:-build-fuzz}
out=${KVSIM_FUZZ_OUT:-$build/fuzz-out}
traces=${KVSIM_TRACES:-../shared/traces}
all=(workload sweep profile csv fromrun trace_azure trace_vidur trace_lengths trace_mooncake) # longest first
targets=("${@:-${all[@]}}")
# -rss_limit_mb also caps single allocations (libFuzzer's malloc limit
# defaults to it).  -timeout: every input but one kind takes milliseconds; a
# sweep may legitimately expand a million points (its cap), which takes 1.7 s
# natively, 5 s instrumented and 11 s with both cores fuzzing, so the sweep
# target gets 30 s.  Either still catches a loop that does not end.
limits=(-rss_limit_mb=2048)
timeout_of() { [ "$1" = sweep ] && echo 30 || echo 10; }
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:check_initialization_order=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1}

for t in "${targets[@]}"; do
	[[ " ${all[*]} " == *" $t "* ]] || { echo "fuzz: unknown target '$t': expected one of: ${all[*]}" >&2; exit 2; }
done
if ! command -v clang >/dev/null; then
	echo "fuzz: clang not found: install clang and libclang-rt-14-dev (bash .ci/deps)" >&2
	exit 1
fi
if [ ! -f "$build/build.ninja" ]; then
	CC=clang meson setup "$build" -Dfuzz=enabled -Dcuda=disabled -Dmpi=disabled \
		-Dtests=disabled --buildtype=debugoptimized >/dev/null
fi
# only the targets asked for (not kvsim, the benchmarks and test_gpu the build also defines)
ninja -C "$build" $(printf 'tests/fuzz/fuzz_%s ' "${targets[@]}") >/dev/null
rm -rf "$out"
mkdir -p "$out"

# Prints why target $1 failed: its reproducer(s) and the end of its log $2.
report() {
	local t=$1 log=$2 f
	echo "fuzz: $t FAILED; log: $log"
	for f in "$out/$t"-*; do
		[ -e "$f" ] && echo "fuzz: reproducer: $f (run: $build/tests/fuzz/fuzz_$t $f)"
	done
	tail -n 60 "$log"
}

echo "== fuzz: replay of the committed corpus (tests/fuzz/corpus)"
failed=0
for t in "${targets[@]}"; do
	log=$out/$t.replay.log
	files=(tests/fuzz/corpus/"$t"/*)
	# one run per file ("Running: FILE" in the log names the input that failed)
	if "$build/tests/fuzz/fuzz_$t" "${limits[@]}" -timeout="$(timeout_of "$t")" \
		-artifact_prefix="$out/$t-" "${files[@]}" >"$log" 2>&1; then
		echo "fuzz: $t: ${#files[@]} inputs ok"
	else
		report "$t" "$log"
		failed=1
	fi
done
[ "$failed" -eq 0 ] || exit 1
[ "${KVSIM_FUZZ_SECONDS:-1}" -gt 0 ] || exit 0

# Seeds $2 (scratch corpus) of target $1 from the committed corpus and the
# repository's own inputs of that kind; the real traces add their first 50
# lines.  Committed timeout-* inputs are only replayed: each takes seconds,
# and as seeds their mutants would take most of the fuzzing time.
seed() {
	local t=$1 dir=$2 f n=0
	for f in tests/fuzz/corpus/"$t"/*; do
		case ${f##*/} in timeout-*) continue ;; esac
		cp "$f" "$dir"/
	done
	case $t in
	workload)
		for f in workloads/*.yaml configs/*/*.yaml tests/data/bad/*.yaml tests/data/cfg/*.yaml; do
			case $f in workloads/sweep-*) continue ;; esac
			cp "$f" "$dir/repo-$((n++))-${f##*/}"
		done ;;
	sweep)
		for f in workloads/sweep-*.yaml tests/data/sweep/*.yaml; do
			cp "$f" "$dir/repo-$((n++))-${f##*/}"
		done ;;
	profile)
		for f in configs/models/*.yaml configs/devices/*.yaml tests/data/profiles/*.yaml; do
			cp "$f" "$dir/repo-$((n++))-${f##*/}"
		done ;;
	fromrun)
		for f in tests/fuzz/corpus/fromrun/*; do
			cp "$f" "$dir/repo-$((n++))-${f##*/}"
		done ;;
	csv)
		for f in tests/data/traces/*.csv; do
			[ -f "$f" ] && head -n 20 "$f" >"$dir/repo-$((n++))-${f##*/}"
		done ;;
	trace_*)
		local want
		case $t in
		trace_azure) want=TIMESTAMP ;;
		trace_vidur) want=arrived_at ;;
		trace_lengths) want=num_prefill_tokens ;;
		trace_mooncake) want='{' ;;
		esac
		for f in tests/data/traces/* tests/data/bad/*.csv "$traces"/*.csv "$traces"/*.jsonl; do
			[ -f "$f" ] || continue
			head -n 1 "$f" | grep -qF -- "$want" || continue
			head -n 50 "$f" >"$dir/repo-$((n++))-${f##*/}"
		done ;;
	esac
}

# Fuzzes target $1 for secs_of $1 seconds; writes libFuzzer's exit status to
# $out/$1.rc and the size of the corpus it ended with to $out/$1.corpus.
fuzz_one() {
	local t=$1 dir rc=0
	dir=$(mktemp -d "${TMPDIR:-/tmp}/kvsim-fuzz-$t.XXXXXX")
	seed "$t" "$dir"
	"$build/tests/fuzz/fuzz_$t" "${limits[@]}" -timeout="$(timeout_of "$t")" \
		"-max_total_time=$(secs_of "$t")" -max_len=8192 \
		-print_final_stats=1 -artifact_prefix="$out/$t-" "$dir" >"$out/$t.log" 2>&1 || rc=$?
	find "$dir" -type f | wc -l >"$out/$t.corpus"
	rm -rf "$dir"
	echo "$rc" >"$out/$t.rc"
}

echo "== fuzz: ${#targets[@]} targets, $jobs at a time: $(for t in "${targets[@]}"; do printf '%s %ss ' "$t" "$(secs_of "$t")"; done)"
running=0
for t in "${targets[@]}"; do
	if [ "$running" -ge "$jobs" ]; then
		wait -n
		running=$((running - 1))
	fi
	fuzz_one "$t" &
	running=$((running + 1))
done
wait
for t in "${targets[@]}"; do
	if [ "$(cat "$out/$t.rc" 2>/dev/null)" != 0 ]; then
		report "$t" "$out/$t.log"
		failed=1
	fi
done

# One line per target from libFuzzer's last status line and final stats.
printf '%-16s %10s %9s %8s %8s %7s\n' target execs exec/s cov ft corpus
for t in "${targets[@]}"; do
	log=$out/$t.log
	last=$(grep -E '^#[0-9]+' "$log" | tail -n 1 || true)
	printf '%-16s %10s %9s %8s %8s %7s\n' "$t" \
		"$(sed -n 's/^stat::number_of_executed_units: *//p' "$log")" \
		"$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log")" \
		"$(sed -n 's/.* cov: \([0-9]*\).*/\1/p' <<<"$last")" \
		"$(sed -n 's/.* ft: \([0-9]*\).*/\1/p' <<<"$last")" \
		"$(cat "$out/$t.corpus" 2>/dev/null || echo '?')"
done
[ "$failed" -eq 0 ] || { echo "fuzz: FAILED (inputs and logs in $out)"; exit 1; }
echo "fuzz: no crash, leak, timeout or sanitizer report"
