#!/usr/bin/env bash
# gpu/check.sh -- the one script to run on a GPU machine: builds kvsim with
# CUDA and runs everything that needs the GPU, within CHECK_BUDGET_S (330 s
# by default; an estimate, as no GPU has run it yet).  docs/calibration.md
# ("GPU") says what it needs, what it prints and what to send back.
#
# On a machine with nvcc, meson and ninja but no GSL, libyaml, Check,
# pkg-config or network, run gpu/pack.sh where apt works first and copy
# gpu/pack with the checkout.  This script then uses the pack through PKG_CONFIG
# (its pkgconf), PKG_CONFIG_PATH, LD_LIBRARY_PATH and the include paths,
# and reads the trace from gpu/pack/traces.  In order, each step under a
# timeout clipped to the time left:
#   preflight  five seconds: nvidia-smi, nvcc, meson, ninja, the C compiler,
#              pkg-config and each library (version, and whether its .so
#              loads here), the trace; stops (exit 1) naming what is missing
#   build      kvsim, gpu/kvsim-cuda.so (the CUDA backend, loaded on first
#              use), tests/test_gpu and bench/cuda_bench (release, CUDA); a
#              target that is not built fails the script
#   workloads  the two GPU workloads, pointed at the trace found, simulated
#              (no GPU): the trace and configs load
#   device     `kvsim gpu`: without a GPU the script stops here, exit 77;
#              a kvsim-cuda.so that does not load (a CUDA library missing)
#              fails it, exit 1
#   test_gpu   the CUDA kernels against their CPU twins and the "cuda"
#              backend's smoke test (tests/test_gpu.c)
#   bench      bench/cuda_bench on Llama-2-7B, fp16 KV then 8-bit KV
#   calibrate  kvsim calibrate --backend cuda --model llama-2-7b --quick
#              (its grid, then workloads/calibrate-replay.yaml)
#   validate   kvsim validate --backend cuda workloads/validate-cuda.yaml
#              with the profile calibrate wrote (300 ShareGPT-length requests)
# then prints one table: each step's status, seconds and headline figure.
# Everything printed goes to OUT/check.log, the table alone to
# OUT/table.txt; with the calibration (4 files in OUT/cal) and the
# validation (validate.csv, iterations.csv in OUT/val) that is 8 files, the
# ones to send back (charts, if gnuplot made any, are removed).
#
# usage: bash gpu/check.sh [OUT]   (from anywhere; OUT defaults to $OUT,
#        else build-gpu/out; CHECK_BUDGET_S, default 330, is the time limit;
#        CHECK_BUILD_S, default 240, the build's; CHECK_JOBS, ninja's -j;
#        KVSIM_TRACES overrides the traces folder)
# exit: 0 every step passed; 1 preflight found something missing, or a
#       step failed, timed out or was not built; 77 no GPU (everything
#       before the first GPU step passed).
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
OUT=${1:-${OUT:-build-gpu/out}}
BUDGET=${CHECK_BUDGET_S:-330}
TRACE=sharegpt_8k_filtered_stats_llama2_tokenizer.csv
PACK=$PWD/gpu/pack
ARCH=x86_64-linux-gnu
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

# table: prints the table, to the log and to OUT/table.txt.
table() {
	say ""
	say "== gpu/check.sh: $((SECONDS - T0)) s of ${BUDGET} s; output in $OUT"
	{
		printf '%-16s %-9s %5s  %s\n' step status secs result
		printf '%s\n' "${ROWS[@]}"
	} | tee "$OUT/table.txt" | tee -a "$LOG"
	find "$OUT" -name '*.png' -delete
}

# finish STATUS: the table, then exit.
finish() {
	table
	exit "$1"
}

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
# and its last line of output otherwise.  Any other status fails the
# script, 77 (skipped) included: past the device step a GPU is present.
verdict() {
	local st=ok res=$1
	case $RC in
	0) ;;
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

# ---- environment: the CUDA toolkit, the driver's tools, the pack
export PATH=/usr/local/cuda/bin:$PATH
[ -d /usr/local/nvidia/bin ] && export PATH=$PATH:/usr/local/nvidia/bin
if [ -d "$PACK/root" ]; then
	export PKG_CONFIG_PATH=$PACK/root/usr/lib/$ARCH/pkgconfig${PKG_CONFIG_PATH:+:$PKG_CONFIG_PATH}
	export LD_LIBRARY_PATH=$PACK/root/usr/lib/$ARCH${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
	export C_INCLUDE_PATH=$PACK/root/usr/include${C_INCLUDE_PATH:+:$C_INCLUDE_PATH}
	export CPLUS_INCLUDE_PATH=$PACK/root/usr/include${CPLUS_INCLUDE_PATH:+:$CPLUS_INCLUDE_PATH}
	export LIBRARY_PATH=$PACK/root/usr/lib/$ARCH${LIBRARY_PATH:+:$LIBRARY_PATH}
	# the pack's pkgconf when it runs here, else the machine's pkg-config
	"$PACK/root/usr/bin/pkgconf" --version >/dev/null 2>&1 &&
		export PKG_CONFIG=${PKG_CONFIG:-$PACK/root/usr/bin/pkgconf}
fi
export PKG_CONFIG=${PKG_CONFIG:-pkg-config}
# meson and ninja as Python packages whose scripts are not on PATH: shims
mkdir -p "$TMP/bin"
for t in meson:mesonbuild.mesonmain ninja:ninja; do
	if ! command -v "${t%%:*}" >/dev/null && python3 -c "import ${t#*:}" 2>/dev/null; then
		printf '#!/bin/sh\nexec python3 -m %s "$@"\n' "${t#*:}" >"$TMP/bin/${t%%:*}"
		chmod +x "$TMP/bin/${t%%:*}"
		export PATH=$PATH:$TMP/bin
	fi
done
TRACES=
for d in "${KVSIM_TRACES:-}" "$PACK/traces" ../shared/traces; do
	if [ -n "$d" ] && [ -f "$d/$TRACE" ]; then
		TRACES=$(cd "$d" && pwd)
		break
	fi
done

# ---- preflight (five seconds): what is here, and stop if something is missing
preflight() {
	local miss=() v lib so
	say "== preflight ($(uname -m), $(ldd --version 2>/dev/null | head -n 1 | awk '{print "glibc " $NF}'))"
	if command -v nvidia-smi >/dev/null; then
		v=$(timeout 5 nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>&1 | head -n 1)
		say "nvidia-smi   ${v:-no answer}"
	else
		say "nvidia-smi   not found (no GPU driver here: the script will stop at the device step)"
	fi
	for t in nvcc meson ninja cc; do
		if command -v $t >/dev/null; then
			case $t in
			nvcc) v=$(nvcc --version | tail -n 2 | head -n 1) ;;
			cc) v=$(cc --version | head -n 1) ;;
			*) v=$($t --version | head -n 1) ;;
			esac
			say "$(printf '%-12s' $t) $v ($(command -v $t))"
		else
			say "$(printf '%-12s' $t) MISSING"
			miss+=("$t")
		fi
	done
	if v=$("$PKG_CONFIG" --version 2>&1); then
		say "pkg-config   $v ($PKG_CONFIG)"
		for lib in gsl yaml-0.1 check; do
			if v=$("$PKG_CONFIG" --modversion $lib 2>&1); then
				say "$(printf '%-12s' $lib) $v ($("$PKG_CONFIG" --variable=pcfiledir $lib))"
			else
				say "$(printf '%-12s' $lib) MISSING: $v"
				miss+=("$lib")
			fi
		done
	else
		say "pkg-config   MISSING ($PKG_CONFIG: $v)"
		miss+=(pkg-config)
	fi
	for so in "$PACK/root/usr/lib/$ARCH"/*.so.[0-9]*; do
		[ -f "$so" ] && [ ! -L "$so" ] || continue
		if v=$(ldd "$so" 2>&1 | grep -E 'not found|version'); then
			say "pack         $(basename "$so") does not load here: $v"
			miss+=("$(basename "$so")")
		fi
	done
	if [ -n "$TRACES" ]; then
		say "trace        $TRACES/$TRACE"
	else
		say "trace        MISSING: $TRACE in none of \$KVSIM_TRACES, gpu/pack/traces, ../shared/traces"
		miss+=(trace)
	fi
	if ((${#miss[@]})); then
		say "preflight: missing ${miss[*]}: install them, or run gpu/pack.sh where apt-get works and copy gpu/pack here (docs/calibration.md)"
		row preflight fail $((SECONDS - T0)) "missing: ${miss[*]}"
		finish 1
	fi
	row preflight ok $((SECONDS - T0)) "nvcc, meson, ninja, cc, pkg-config, gsl, yaml-0.1, check, trace"
}
preflight

# ---- build: every target a later step runs, by name
# (gpu/kvsim-cuda.so: the CUDA backend, which the others load on first use)
TARGETS=(src/kvsim gpu/kvsim-cuda.so tests/test_gpu bench/cuda_bench)
NINJA="ninja -C build-gpu ${CHECK_JOBS:+-j$CHECK_JOBS} ${TARGETS[*]}"
if [ -f build-gpu/build.ninja ]; then
	step build "${CHECK_BUILD_S:-240}" $NINJA
else
	step build "${CHECK_BUILD_S:-240}" bash -c "meson setup build-gpu --buildtype=release \
		-Dcuda=enabled -Dmpi=disabled && $NINJA"
fi && verdict "build-gpu, release, CUDA: ${TARGETS[*]}"
for t in "${TARGETS[@]}"; do
	if [ ! -x "build-gpu/$t" ]; then
		say "== build: build-gpu/$t was not built"
		row "$(basename "$t")" fail 0 "build-gpu/$t was not built"
		STATUS=1
	fi
done
[ "$STATUS" = 0 ] || finish 1
KVSIM=./build-gpu/src/kvsim

# ---- workloads: the GPU workloads read the trace found, not ../shared
mkdir -p "$TMP/wl"
for w in calibrate-replay validate-cuda; do
	sed "s#^\([[:space:]]*trace:\).*/$TRACE\$#\1 $TRACES/$TRACE#" "workloads/$w.yaml" >"$TMP/wl/$w.yaml"
done
step workloads 20 bash -c "for w in $TMP/wl/*.yaml; do $KVSIM run \"\$w\" -q -o $TMP/sim/\$(basename \"\$w\" .yaml) || exit; done" &&
	verdict "both simulate with $TRACES/$TRACE"
[ "$RC" = 0 ] || finish 1

# ---- device: stop here without a GPU
step device 20 "$KVSIM" gpu
if [ "$RC" = 77 ] && grep -q "CUDA backend is not available" "$TMP/device.log"; then
	RC=1 # the module was just built: one that does not load is a failure, not "no GPU"
	verdict ""
	finish 1
fi
if [ "$RC" = 77 ]; then
	row device "no GPU" "$DT" "$(tail -n 1 "$TMP/device.log")"
	say "== no GPU: every step before the GPU ones passed; exit 77"
	finish 77
fi
verdict "$(paste -sd ';' "$TMP/device.log")"
[ "$RC" = 0 ] || finish 1

# ---- kernels and backend smoke test
step test_gpu 120 ./build-gpu/tests/test_gpu &&
	verdict "$(grep -c '^ok' "$TMP/test_gpu.log") ok, $(grep -c '^FAIL' "$TMP/test_gpu.log") FAIL: $(tail -n 1 "$TMP/test_gpu.log")"

# ---- timing table
for kv in fp16 int8; do
	args=(llama-2-7b)
	[ $kv = int8 ] && args+=(--kv-int8)
	step "bench-$kv" 90 ./build-gpu/bench/cuda_bench "${args[@]}" &&
		verdict "$(awk '$1=="decode"&&$2==32{d=$4} $1=="prefill"&&$2==2048{p=$4}
			$1=="overlap"{g=$NF} END{printf "decode b32 %s ms, prefill 2048 %s ms, overlap %s", d, p, g}' \
			"$TMP/bench-$kv.log")"
done

# ---- calibration and validation
CAL=$OUT/cal/cuda-7b.yaml
step calibrate 180 "$KVSIM" calibrate --backend cuda --model llama-2-7b --quick \
	--replay "$TMP/wl/calibrate-replay.yaml" -o "$CAL" &&
	verdict "$(S=$OUT/cal/cuda-7b-summary.csv; printf 'points %s, MAPE %s, R^2 %s, alpha %s, KV B/token %s (model %s)' \
		"$(csv "$S" key points value)" "$(csv "$S" key mape value)" \
		"$(csv "$S" key r2 value)" "$(csv "$S" key alpha value)" \
		"$(csv "$S" key kv_bytes_per_token_measured value)" \
		"$(csv "$S" key kv_bytes_per_token_model value)")"
if [ -f "$CAL" ]; then
	step validate 240 "$KVSIM" validate --backend cuda "$TMP/wl/validate-cuda.yaml" \
		--profile "$CAL" -o "$OUT/val" &&
		verdict "$(V=$OUT/val/validate.csv; printf 'iteration MAPE %s%%, TTFT p50 %s%%, TPOT p50 %s%%, peak memory %s%%' \
			"$(csv "$V" metric iteration_mape predicted)" \
			"$(csv "$V" metric ttft_p50 error_pct)" "$(csv "$V" metric tpot_p50 error_pct)" \
			"$(csv "$V" metric peak_memory error_pct)")"
else
	row validate fail 0 "no profile from calibrate"
	STATUS=1
fi
finish "$STATUS"
