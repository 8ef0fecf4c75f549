#!/usr/bin/env bash
# The one script for a lent GPU (the `device` tool's run; fits 8 minutes on
# an H200, the build being the longest part).  In order, each step under a
# timeout clipped to the time left:
#   build      kvsim, tests/test_gpu and bench/cuda_bench with CUDA (release)
#   device     `kvsim gpu`
#   test_gpu   the CUDA kernels against their CPU twins (relative error
#              < 1e-3, no NaN) and the "cuda" backend's smoke test through
#              exec.h (tests/test_gpu.c)
#   bench      the "cuda" backend on Llama-2-7B (gpu/cuda_bench.c): decode at
#              batch 1/8/32/128 over a 1024-token context, prefill chunks of
#              512 and 2048, the gain from overlapping an async swap with a
#              step; fp16 KV, then 8-bit KV
#   calibrate  kvsim calibrate --backend cuda --model llama-2-7b --quick
#              -o $OUT/cal/cuda-7b.yaml (its grid, then the replays of
#              workloads/calibrate-replay.yaml)
#   validate   kvsim validate --backend cuda workloads/validate-cuda.yaml
#              --profile $OUT/cal/cuda-7b.yaml -o $OUT/val (300 ShareGPT-
#              length requests, real run against the simulator)
# then prints one table: each step's status, seconds and headline figure.
# Everything printed also goes to $OUT/check.log; with the calibration
# (4 files in $OUT/cal) and validation (validate.csv, iterations.csv in
# $OUT/val) that is at most 8 files, what the device tool brings back.
#
# The workloads read ../../shared/traces/ (relative to workloads/), the
# shared/ beside the checkout, which does not travel to the device machine:
# carry the trace in an ignored shared/traces/ inside the checkout (or set
# KVSIM_TRACES to its folder) and this script links ../shared/traces to it.
#
# usage: OUT=DIR bash gpu/check.sh   (from anywhere; OUT defaults to
#        build-gpu/out; CHECK_BUDGET_S, default 465, is the time limit)
# exit: 0 every step passed, 1 a step failed or timed out, 77 no nvcc.
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
OUT=${OUT:-build-gpu/out}
BUDGET=${CHECK_BUDGET_S:-465}
TRACE=sharegpt_8k_filtered_stats_llama2_tokenizer.csv
T0=$SECONDS
mkdir -p "$OUT/cal" "$OUT/val" || exit 1
OUT=$(cd "$OUT" && pwd)
LOG=$OUT/check.log
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
: >"$LOG"
ROWS=()
STATUS=0

say() { echo "$@" | tee -a "$LOG"; }

# row NAME STATUS SECONDS RESULT: one line of the final table.
row() { ROWS+=("$(printf '%-16s %-9s %5s  %s' "$1" "$2" "$3" "$4")"); }

# step NAME CAP CMD...: runs CMD under timeout min(CAP, time left - 5 s), its
# output to the terminal, $LOG and $TMP/NAME.log; sets RC (124: timed out)
# and DT.  With under 10 s left it runs nothing, adds NAME's row (skipped),
# fails the script and returns 1.
step() {
	local name=$1 cap=$2 left t0=$SECONDS
	shift 2
	NAME=$name
	left=$((BUDGET - (SECONDS - T0) - 5))
	((left < cap)) && cap=$left
	if ((cap < 10)); then
		RC=124 DT=0 STATUS=1
		say "== $name: skipped, ${left}s left of ${BUDGET}s"
		row "$name" skipped 0 "out of time (CHECK_BUDGET_S=${BUDGET})"
		return 1
	fi
	say "== $name (timeout ${cap}s): $*"
	timeout -k 10 "$cap" "$@" 2>&1 | tee "$TMP/$name.log" >>"$LOG"
	RC=${PIPESTATUS[0]}
	cat "$TMP/$name.log"
	DT=$((SECONDS - t0))
	return 0
}

# verdict RESULT: the last step's row from RC, with RESULT when it passed
# and its last line of output otherwise; a failure fails the script.
verdict() {
	local st=ok res=$1
	case $RC in
	0) ;;
	77) st=skipped ;;
	124 | 137) st=timeout STATUS=1 ;;
	*) st="fail($RC)" STATUS=1 ;;
	esac
	[ "$RC" = 0 ] || res=$(grep -v '^[[:space:]]*$' "$TMP/$NAME.log" | tail -n 1)
	row "$NAME" "$st" "$DT" "$res"
}

# A CSV cell: csv FILE KEYCOL KEY COL (columns by header name).
csv() {
	awk -F, -v k="$3" -v kc="$2" -v c="$4" \
		'NR==1{for(i=1;i<=NF;i++){if($i==kc)a=i;if($i==c)b=i}next} $a==k{print $b;exit}' \
		"$1" 2>/dev/null
}

command -v nvcc >/dev/null || { echo "check.sh: nvcc not found"; exit 77; }

# ---- build
if [ -f build-gpu/build.ninja ]; then
	step build 300 ninja -C build-gpu src/kvsim bench/cuda_bench
else
	step build 300 bash -c 'meson setup build-gpu --buildtype=release -Dcuda=enabled \
		-Dmpi=disabled && ninja -C build-gpu src/kvsim bench/cuda_bench'
fi && verdict "build-gpu, release, CUDA"
BUILD_RC=$RC
HAVE_TESTS=0
if [ "$BUILD_RC" = 0 ] && ninja -C build-gpu -t targets all 2>/dev/null | grep -q '^tests/test_gpu:'; then
	step build-tests 120 ninja -C build-gpu tests/test_gpu && [ "$RC" = 0 ] && HAVE_TESTS=1
	[ "$RC" = 0 ] || verdict "tests/test_gpu"
fi
if [ "$BUILD_RC" = 0 ]; then
	# ---- device
	step device 20 ./build-gpu/src/kvsim gpu &&
		verdict "$(paste -sd ';' "$TMP/device.log")"

	# ---- kernels and backend smoke test
	if [ "$HAVE_TESTS" = 1 ]; then
		step test_gpu 120 ./build-gpu/tests/test_gpu &&
			verdict "$(grep -c '^ok' "$TMP/test_gpu.log") ok, $(grep -c '^FAIL' "$TMP/test_gpu.log") FAIL: $(tail -n 1 "$TMP/test_gpu.log")"
	else
		row test_gpu skipped 0 "tests/test_gpu not built (the Check library is missing: -Dtests)"
	fi

	# ---- timing table
	for kv in fp16 int8; do
		args=(llama-2-7b)
		[ $kv = int8 ] && args+=(--kv-int8)
		step "bench-$kv" 90 ./build-gpu/bench/cuda_bench "${args[@]}" &&
			verdict "$(awk '$1=="decode"&&$2==32{d=$4} $1=="prefill"&&$2==2048{p=$4}
				$1=="overlap"{g=$NF} END{printf "decode b32 %s ms, prefill 2048 %s ms, overlap %s", d, p, g}' \
				"$TMP/bench-$kv.log")"
	done

	# ---- calibration and validation (they read the ShareGPT trace)
	if [ ! -f "../shared/traces/$TRACE" ]; then
		for d in shared/traces "${KVSIM_TRACES:-}"; do
			if [ -n "$d" ] && [ -f "$d/$TRACE" ] && [ ! -e ../shared/traces ]; then
				mkdir -p ../shared && ln -s "$(cd "$d" && pwd)" ../shared/traces
				say "== traces: ../shared/traces -> $d"
				break
			fi
		done
	fi
	if [ ! -f "../shared/traces/$TRACE" ]; then
		row calibrate skipped 0 "no ../shared/traces/$TRACE (carry shared/traces/)"
		row validate skipped 0 "no trace, as above"
		STATUS=1
	else
		CAL=$OUT/cal/cuda-7b.yaml
		step calibrate 180 ./build-gpu/src/kvsim calibrate --backend cuda --model llama-2-7b \
			--quick -o "$CAL" &&
			verdict "$(S=$OUT/cal/cuda-7b-summary.csv; printf 'points %s, MAPE %s, R^2 %s, alpha %s' \
				"$(csv "$S" key points value)" "$(csv "$S" key mape value)" \
				"$(csv "$S" key r2 value)" "$(csv "$S" key alpha value)")"
		if [ -f "$CAL" ]; then
			step validate 240 ./build-gpu/src/kvsim validate --backend cuda \
				workloads/validate-cuda.yaml --profile "$CAL" -o "$OUT/val" &&
				verdict "$(V=$OUT/val/validate.csv; printf 'iteration MAPE %s%%, TTFT p50 %s%%, TPOT p50 %s%%, peak memory %s%%' \
					"$(csv "$V" metric iteration_mape predicted)" \
					"$(csv "$V" metric ttft_p50 error_pct)" "$(csv "$V" metric tpot_p50 error_pct)" \
					"$(csv "$V" metric peak_memory error_pct)")"
		else
			row validate skipped 0 "no profile from calibrate"
			STATUS=1
		fi
	fi
fi

say ""
say "== gpu/check.sh: $((SECONDS - T0)) s of ${BUDGET} s; output in $OUT"
say "$(printf '%-16s %-9s %5s  %s' step status secs result)"
for r in "${ROWS[@]}"; do
	say "$r"
done
exit "$STATUS"
