#!/usr/bin/env bash
# Fault injection, end to end (docs/reliability.md has the matrix):
#  1. allocation failure at every Nth allocation of a run and of a sweep
#     point (all N up to 200, then evenly spaced): exit 0 with the exact
#     reference outputs, or exit 3 with one "out of memory" line and the
#     output directory as it was;
#  2. output write failure (ENOSPC at the Nth write, close, create, link or
#     rename, every N; and a real EFBIG from a file-size limit): exit 1, one
#     line naming the file, earlier results byte-identical, no temporaries;
#  3. SIGINT and SIGTERM at random moments of a run and of a sweep: 130/143,
#     one line, earlier outputs intact; the sweep rerun equals a clean one;
#  4. every trace format truncated at every byte of its last line: exit 2
#     at FILE:LINE, or the partial row accepted with exactly its values;
#  5. numbers at the edges, in YAML and in trace rows;
#  6. hostile input (issue 11): special files (FIFOs without a writer,
#     /dev/zero, directories) as trace, profile, workload and sweep files;
#     a line without an end; a YAML file over 16 MiB; a far-future trace
#     row; empty values and values that round to 0; header-only traces.
#     Each must exit 2 at once with one line naming the file (or the key).
# Usage: fault_test.sh KVSIM SOURCE_DIR [FAILMALLOC_SO]; sanitizer builds
# are detected and run fewer points (FAULT_STEP_MAX bounds the N loops).
set -u
kvsim=$1
src=$2
shim=${3:-}
traces=${KVSIM_TRACES:-$src/../shared/traces}
. "$(dirname "$0")/testutil.sh"
asan=0
nm -D "$kvsim" 2>/dev/null | grep -q __asan_init && asan=1
ldd "$kvsim" 2>/dev/null | grep -q libasan && asan=1
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1}:verify_asan_link_order=0
loop_max=${FAULT_STEP_MAX:-$([ $asan -eq 1 ] && echo 60 || echo 160)}

# same DIR REF: DIR holds exactly REF's files (names and bytes), no temporaries.
same() {
  [ "$(ls -A "$1" 2>/dev/null)" = "$(ls -A "$2")" ] || return 1
  local f
  for f in "$2"/*; do cmp -s "$f" "$1/${f##*/}" || return 1; done
}
# one_line FILE REGEX: FILE is exactly one line and matches REGEX.
one_line() { [ "$(wc -l <"$1")" -eq 1 ] && grep -qE -- "$2" "$1"; }
# points COUNT [MAX]: 1..MAX/2 (at most 200), then evenly spaced up to COUNT,
# at most MAX (default loop_max) in all.
points() {
  local n=$1 max=${2:-$loop_max} head step
  head=$((max / 2))
  [ $head -gt 200 ] && head=200
  seq 1 $((n < head ? n : head))
  [ $n -le $head ] && return
  step=$(((n - head + max - head - 1) / (max - head)))
  seq $((head + step)) $step "$n"
  [ $(((n - head) % step)) -ne 0 ] && echo "$n"
}

# --- the workloads ----------------------------------------------------------
cat >"$tmp/gen.yaml" <<YAML
name: gen
model: llama-2-7b
device: a100-80g
cluster: {replicas: 2, router: least-outstanding-tokens}
workload:
  requests: 60
  arrival: {process: gamma, rate: 20, cv: 2}
  lengths: {dist: uniform, prompt_min: 16, prompt_max: 900, output_min: 0, output_max: 90}
  tenants: [{name: a, share: 2}, {name: b, share: 1, weight: 2}]
outputs: {sample_interval: 0.5s, chart: false}
YAML
if [ -r "$traces/azure_conv_poisson3_10k.csv" ]; then
  head -n 41 "$traces/azure_conv_poisson3_10k.csv" >"$tmp/vidur40.csv"
else
  cp "$src/tests/data/traces/vidur_small.csv" "$tmp/vidur40.csv"
fi
cat >"$tmp/trc.yaml" <<YAML
name: trc
model: llama-2-7b
device: a100-80g
scheduler: vtc
cache: chunked
workload:
  oversize: reject
  arrival: {process: trace, trace: vidur40.csv}
outputs: {sample_interval: 1s, chart: false}
YAML
files="requests.csv timeseries.csv summary.csv tenants.csv tenant_timeseries.csv"
"$kvsim" run -q "$tmp/gen.yaml" -o "$tmp/ref-gen" && ok || bad "reference run gen"
"$kvsim" run -q "$tmp/trc.yaml" -o "$tmp/ref-trc" && ok || bad "reference run trc"
for f in $files; do [ -s "$tmp/ref-gen/$f" ] && [ -s "$tmp/ref-trc/$f" ] || bad "reference lacks $f"; done

echo "[${SECONDS}s] 1. allocation failures"
# --- 1. allocation failures --------------------------------------------------
# The shim fails any allocation (libyaml, GSL, stdio, getline, kvsim's own);
# without it (or when it does not load) KVSIM_FAIL_ALLOC fails kvsim's own.
count_allocs() { # count_allocs ARGS...: allocations of one run under the chosen hook
  if [ -n "$mode_shim" ]; then
    FAILMALLOC=0 LD_PRELOAD=$shim "$@" 2>&1 >/dev/null | sed -n 's/^failmalloc: \([0-9]*\) allocations$/\1/p'
  else
    KVSIM_FAIL_ALLOC=0 "$@" 2>&1 >/dev/null | sed -n 's/^kvsim: fault: \([0-9]*\) allocations.*/\1/p'
  fi
}
with_fault() { # with_fault N ARGS...
  local n=$1
  shift
  if [ -n "$mode_shim" ]; then FAILMALLOC=$n LD_PRELOAD=$shim "$@"; else KVSIM_FAIL_ALLOC=$n "$@"; fi
}
mode_shim=
if [ -n "$shim" ] && [ -r "$shim" ]; then
  mode_shim=1
  c=$(count_allocs "$kvsim" run -q "$tmp/gen.yaml" -o "$tmp/probe")
  [ -n "$c" ] || mode_shim=
  rm -rf "$tmp/probe"
fi
if [ -n "$mode_shim" ]; then echo "allocation hook: the failmalloc shim (every allocation)"
else echo "allocation hook: KVSIM_FAIL_ALLOC (kv_xmalloc and friends only)"; fi
# gen into a fresh directory (it must not exist afterwards), trc into a
# directory holding earlier results (they must stay byte for byte).
for w in gen trc; do
  c=$(count_allocs "$kvsim" run -q "$tmp/$w.yaml" -o "$tmp/count")
  rm -rf "$tmp/count"
  [ "${c:-0}" -gt 50 ] && ok || bad "$w: allocation count '$c'"
  n_ok=0 n_oom=0
  for n in $(points "${c:-0}"); do
    out=$tmp/a-$w
    rm -rf "$out"
    [ $w = trc ] && cp -a "$tmp/ref-gen" "$out"
    with_fault "$n" "$kvsim" run -q "$tmp/$w.yaml" -o "$out" >/dev/null 2>"$tmp/err"; st=$?
    if [ $st -eq 0 ]; then
      n_ok=$((n_ok + 1))
      same "$out" "$tmp/ref-$w" && [ ! -s "$tmp/err" ] && ok || bad "$w alloc $n: exit 0 but outputs differ: $(head -c 300 "$tmp/err")"
    elif [ $st -eq 3 ]; then
      n_oom=$((n_oom + 1))
      one_line "$tmp/err" '^kvsim: out of memory' && ok || bad "$w alloc $n: message: $(head -c 300 "$tmp/err")"
      if [ $w = gen ]; then [ ! -e "$out" ] && ok || bad "$w alloc $n: left $(ls -A "$out" | tr '\n' ' ')"
      else same "$out" "$tmp/ref-gen" && ok || bad "$w alloc $n: earlier outputs changed: $(ls -A "$out" | tr '\n' ' ')"; fi
    else
      bad "$w alloc $n: exit status $st: $(head -c 300 "$tmp/err")"
    fi
  done
  [ $n_oom -gt 0 ] && ok || bad "$w: no allocation failure was reported"
  echo "$w: $c allocations, $((n_ok + n_oom)) points: $n_oom out of memory, $n_ok tolerated with exact outputs"
done

# A sweep point: the child run inherits the count; the sweep records the
# point as failed (exit 1) or dies cleanly (3); a rerun (every 5th point)
# completes it and equals a clean sweep.
cat >"$tmp/sw.yaml" <<YAML
name: sw
base: $tmp/gen.yaml
axes: {scheduler.name: [fifo]}
YAML
"$kvsim" sweep -q "$tmp/sw.yaml" -o "$tmp/ref-sw" -j 1 && ok || bad "reference sweep"
c=$(count_allocs "$kvsim" sweep -q "$tmp/sw.yaml" -o "$tmp/count" -j 1)
rm -rf "$tmp/count"
c=$(( ${c:-0} + $(count_allocs "$kvsim" run -q "$tmp/gen.yaml" -o "$tmp/count") ))
rm -rf "$tmp/count"
k=0
for n in $(points "$c" $((loop_max / 2))); do
  k=$((k + 1))
  out=$tmp/s-sw
  rm -rf "$out"
  with_fault "$n" "$kvsim" sweep -q "$tmp/sw.yaml" -o "$out" -j 1 >/dev/null 2>"$tmp/err"; st=$?
  case $st in
  0) cmp -s "$out/sweep.csv" "$tmp/ref-sw/sweep.csv" && ok || bad "sweep alloc $n: exit 0, sweep.csv differs" ;;
  1) one_line "$tmp/err" '^kvsim: sweep: 1 of 1 points failed|^kvsim: .*(cannot|write failed)' &&
       { ! grep -q ',error,' "$out/sweep.csv" 2>/dev/null || grep -q 'out of memory' "$out/sweep.csv"; } &&
       ok || bad "sweep alloc $n: exit 1: $(head -c 300 "$tmp/err")" ;;
  # 3: one line; or two when the shim's count, which a forked point inherits, fails the point's
  # first allocation and the sweep's next one (the same N in both processes)
  3) { one_line "$tmp/err" '^kvsim: out of memory' ||
       { [ "$(wc -l <"$tmp/err")" -eq 2 ] && [ "$(grep -c '^kvsim: out of memory' "$tmp/err")" -eq 2 ]; }; } &&
       ok || bad "sweep alloc $n: $(head -c 300 "$tmp/err")" ;;
  *) bad "sweep alloc $n: exit status $st: $(head -c 300 "$tmp/err")" ;;
  esac
  [ -z "$(find "$tmp/s-sw" -name '.*' 2>/dev/null)" ] && ok || bad "sweep alloc $n: temporaries: $(find "$out" -name '.*')"
  if [ $((k % 5)) -eq 0 ] && [ $st -ne 0 ]; then
    # a failed point has no summary.csv: the rerun runs it again
    "$kvsim" sweep -q "$tmp/sw.yaml" -o "$out" -j 1 >/dev/null 2>&1 &&
      cmp -s "$out/sweep.csv" "$tmp/ref-sw/sweep.csv" && ok || bad "sweep alloc $n: rerun differs from a clean sweep"
  fi
done
echo "sweep: about $c allocations, $k points"

echo "[${SECONDS}s] 2. output write failures"
# --- 2. output write failures ------------------------------------------------
wcount=$(KVSIM_FAIL_WRITE=0 "$kvsim" run -q "$tmp/gen.yaml" -o "$tmp/count" 2>&1 >/dev/null |
  sed -n 's/^kvsim: fault: [0-9]* allocations, \([0-9]*\) output operations$/\1/p')
rm -rf "$tmp/count"
[ "${wcount:-0}" -ge 15 ] && ok || bad "output operation count '$wcount'"
for n in $(seq 1 "${wcount:-0}"); do
  out=$tmp/w-out
  rm -rf "$out"
  cp -a "$tmp/ref-gen" "$out"
  KVSIM_FAIL_WRITE=$n "$kvsim" run -q "$tmp/gen.yaml" -o "$out" --seed 2 >/dev/null 2>"$tmp/err"; st=$?
  [ $st -eq 1 ] && ok || bad "write $n: exit status $st"
  one_line "$tmp/err" "^kvsim: $out(/[a-z_]+\.csv)?: (write failed|cannot create|cannot commit the run|cannot create a staging directory in [^:]*): No space left on device" \
    && ok || bad "write $n: message: $(head -c 300 "$tmp/err")"
  same "$out" "$tmp/ref-gen" && ok || bad "write $n: earlier outputs changed: $(ls -A "$out" | tr '\n' ' ')"
done
# one past the count: nothing fails, the new results replace the old
KVSIM_FAIL_WRITE=$((wcount + 1)) "$kvsim" run -q "$tmp/gen.yaml" -o "$out" --seed 2 2>"$tmp/err" && ok || bad "write past the count"
"$kvsim" run -q "$tmp/gen.yaml" -o "$tmp/seed2" --seed 2 && same "$out" "$tmp/seed2" && ok || bad "write past the count: outputs"
# a real failing write(2): a file-size limit (EFBIG, SIGXFSZ ignored), no root needed
rm -rf "$out"
cp -a "$tmp/ref-gen" "$out"
(trap '' XFSZ; ulimit -f 4; exec "$kvsim" run -q "$tmp/gen.yaml" -o "$out" --seed 2 --set workload.requests=400) >/dev/null 2>"$tmp/err"; st=$?
[ $st -eq 1 ] && one_line "$tmp/err" "^kvsim: $out/[a-z_]+\.csv: write failed: File too large" && same "$out" "$tmp/ref-gen" \
  && ok || bad "EFBIG: exit status $st: $(head -c 300 "$tmp/err"); $(ls -A "$out" | tr '\n' ' ')"
# sweep.csv: a failed write keeps the earlier sweep.csv (every point is done: only sweep.csv is written)
cp -a "$tmp/ref-sw" "$tmp/w-sw"
for n in 1 2 3; do
  KVSIM_FAIL_WRITE=$n "$kvsim" sweep -q "$tmp/sw.yaml" -o "$tmp/w-sw" -j 1 >/dev/null 2>"$tmp/err"; st=$?
  [ $st -eq 1 ] && one_line "$tmp/err" "^kvsim: $tmp/w-sw/(\.)?sweep.csv(.tmp)?: .*No space left on device" &&
    cmp -s "$tmp/w-sw/sweep.csv" "$tmp/ref-sw/sweep.csv" && [ ! -e "$tmp/w-sw/.sweep.csv.tmp" ] \
    && ok || bad "sweep.csv write $n: exit status $st: $(head -c 300 "$tmp/err")"
done

echo "[${SECONDS}s] 3. signals"
# --- 3. signals -----------------------------------------------------------------
# A run long enough to be stopped (seconds), into a directory of earlier results.
sig_after() { # sig_after SIGNAL SECONDS PID
  sleep "$2"
  kill -s "$1" "$3" 2>/dev/null
}
for sig in INT TERM INT TERM; do
  delay=$(awk -v r=$RANDOM 'BEGIN { printf "%.2f", 0.2 + r % 100 / 100 }')
  out=$tmp/sig-run
  rm -rf "$out"
  cp -a "$tmp/ref-gen" "$out"
  "$kvsim" run -q "$tmp/gen.yaml" -o "$out" --set workload.requests=2000000 --set workload.arrival.rate=200 \
    --set outputs.sample_interval=0.01s 2>"$tmp/err" & pid=$!
  sig_after $sig "$delay" $pid
  wait $pid; st=$?
  want=$((128 + $(kill -l $sig)))
  [ $st -eq $want ] && one_line "$tmp/err" "^kvsim: interrupted by SIG$sig at simulated [0-9.]+ s; no output written" \
    && same "$out" "$tmp/ref-gen" && ok || bad "run SIG$sig after ${delay}s: exit $st (want $want): $(head -c 300 "$tmp/err"); $(ls -A "$out" | tr '\n' ' ')"
done
# A sweep: 4 points of about a second each, -j 2, stopped at random moments; reruns complete it.
cat >"$tmp/slow.yaml" <<YAML
name: slow
base: $src/tests/data/sweep/base.yaml
axes: {scheduler.name: [fifo, vtc], workload.arrival.rate: [40, 80]}
set: {workload.requests: 25000, outputs.requests: false}
YAML
"$kvsim" sweep -q "$tmp/slow.yaml" -o "$tmp/slow-ref" -j 2 && ok || bad "clean slow sweep"
for sig in TERM INT TERM; do
  delay=$(awk -v r=$RANDOM 'BEGIN { printf "%.2f", 0.2 + r % 120 / 100 }')
  "$kvsim" sweep -q "$tmp/slow.yaml" -o "$tmp/slow-i" -j 2 2>"$tmp/err" & pid=$!
  sig_after $sig "$delay" $pid
  wait $pid; st=$?
  want=$((128 + $(kill -l $sig)))
  if [ $st -eq 0 ]; then
    ok # finished before the signal (a rerun after earlier interrupts)
  else
    [ $st -eq $want ] && one_line "$tmp/err" "^kvsim: sweep: interrupted by SIG$sig after [0-9]+ of 4 points" \
      && ok || bad "sweep SIG$sig after ${delay}s: exit $st (want $want): $(head -c 300 "$tmp/err")"
  fi
  w=$(head -1 "$tmp/slow-i/sweep.csv" | tr ',' '\n' | wc -l)
  [ "$(awk -F, -v w="$w" 'NF != w' "$tmp/slow-i/sweep.csv" | wc -l)" -eq 0 ] && ok || bad "sweep SIG$sig: a partial row"
  [ -z "$(find "$tmp/slow-i" -name '.*')" ] && ok || bad "sweep SIG$sig: temporaries: $(find "$tmp/slow-i" -name '.*')"
done
"$kvsim" sweep -q "$tmp/slow.yaml" -o "$tmp/slow-i" -j 2 && cmp -s "$tmp/slow-i/sweep.csv" "$tmp/slow-ref/sweep.csv" \
  && ok || bad "interrupted sweeps + rerun differ from a clean sweep"

echo "[${SECONDS}s] 4. traces truncated"
# --- 4. traces truncated mid-line ---------------------------------------------
# First 30 lines of each real trace, cut at every byte of the last line (up
# to 24 cuts spread over it, and the whole line without its newline).
# Accepted: a final line without a newline (the Azure files end so) that
# still parses; rejected: exit 2 at FILE:30.
trunc_case() { # trunc_case NAME SOURCE FORMAT PROMPT_COL OUTPUT_COL ARRIVAL(trace|lengths)
  local name=$1 srcf=$2 fmt=$3 pc=$4 oc=$5 how=$6 len cuts c n2=0 n0=0 rows
  [ -r "$srcf" ] || { echo "skip truncation $name: no $srcf"; return; }
  head -n 30 "$srcf" | head -c -1 >"$tmp/$name.full" # the 30 lines without the last newline
  len=$(tail -n 1 "$tmp/$name.full" | wc -c)
  rows=$([ "$fmt" = mooncake ] && echo 30 || echo 29)
  cuts=$(awk -v n="$len" 'BEGIN { s = n > 24 ? n / 24 : 1; for (x = 1; x < n; x += s) printf "%d ", x; print n }')
  for c in $cuts; do
    head -c $(($(wc -c <"$tmp/$name.full") - len + c)) "$tmp/$name.full" >"$tmp/$name.trace"
    if [ $how = trace ]; then
      printf 'model: llama-2-7b\ndevice: a100-80g\nworkload:\n  oversize: reject\n  arrival: {process: trace, trace: %s.trace, format: %s}\noutputs: {sample_interval: 0, chart: false}\n' "$name" "$fmt" >"$tmp/$name.yaml"
    else
      printf 'model: llama-2-7b\ndevice: a100-80g\nworkload:\n  requests: %d\n  oversize: reject\n  arrival: {process: poisson, rate: 50}\n  lengths: {dist: trace, trace: %s.trace, format: %s}\noutputs: {sample_interval: 0, chart: false}\n' "$rows" "$name" "$fmt" >"$tmp/$name.yaml"
    fi
    rm -rf "$tmp/tr"
    "$kvsim" run -q "$tmp/$name.yaml" -o "$tmp/tr" >/dev/null 2>"$tmp/err"; st=$?
    if [ $st -eq 2 ]; then
      n2=$((n2 + 1))
      one_line "$tmp/err" "^kvsim: $tmp/$name.trace:30:" && [ ! -e "$tmp/tr" ] && ok || bad "$name cut $c: $(head -c 300 "$tmp/err")"
    elif [ $st -eq 0 ]; then
      n0=$((n0 + 1))
      last=$(tail -n 1 "$tmp/$name.trace")
      if [ "$fmt" = mooncake ]; then
        want=$(sed 's/.*"input_length": *\([0-9]*\).*"output_length": *\([0-9]*\).*/\1,\2/' <<<"$last")
      else
        want=$(awk -F, -v p="$pc" -v o="$oc" '{ print $p "," $o }' <<<"$last" | tr -d '\r')
      fi
      got=$(awk -F, -v id=$((rows - 1)) '$1 == id' "$tmp/tr/requests.csv" | cut -d, -f8,9)
      [ "$(tail -n +2 "$tmp/tr/requests.csv" | wc -l)" -eq $rows ] && [ "$got" = "$want" ] \
        && ok || bad "$name cut $c accepted: last request $got, the partial row says $want"
    else
      bad "$name cut $c: exit status $st: $(head -c 300 "$tmp/err")"
    fi
  done
  [ $n0 -gt 0 ] && ok || bad "$name: the whole last line without a newline was not accepted"
  [ $n2 -gt 0 ] && ok || bad "$name: no cut was rejected"
  echo "truncated $name: $((n0 + n2)) cuts, $n2 rejected at line 30, $n0 accepted"
}
trunc_case azure "$traces/AzureLLMInferenceTrace_conv.csv" azure 2 3 trace
trunc_case vidur "$traces/azure_conv_poisson3_10k.csv" vidur 3 4 trace
trunc_case lengths "$traces/sharegpt_8k_filtered_stats_llama2_tokenizer.csv" lengths 1 2 lengths
trunc_case mooncake "$traces/conversation_trace.jsonl" mooncake 0 0 trace

echo "[${SECONDS}s] 5. numbers at the edges"
# --- 5. numbers at the edges ----------------------------------------------------
# expect2 NAME TEXT ARGS...: exit 2, one line holding TEXT, no output directory.
expect2() {
  local name=$1 text=$2
  shift 2
  rm -rf "$tmp/e"
  timeout 60 "$kvsim" run -q "$@" -o "$tmp/e" >/dev/null 2>"$tmp/err"; st=$?
  [ $st -eq 2 ] && one_line "$tmp/err" "$text" && [ ! -e "$tmp/e" ] && ok || bad "$name: exit $st: $(head -c 300 "$tmp/err")"
}
# run0 NAME ARGS...: exit 0 into $tmp/e.
run0() {
  local name=$1
  shift
  rm -rf "$tmp/e"
  "$kvsim" run -q "$@" -o "$tmp/e" >/dev/null 2>"$tmp/err" && ok || bad "$name: exit $?: $(head -c 300 "$tmp/err")"
}
col() { tail -n +2 "$tmp/e/requests.csv" | cut -d, -f"$1" | sort -u | tr '\n' ' '; }
g=$tmp/gen.yaml
# zero-length prompts: rejected (a request needs one prompt token for its first output)
expect2 "yaml prompt 0" "^kvsim: --set:1:[0-9]+: workload.lengths.prompt: bad value '0': expected .* in \[1, " $g --set 'workload.lengths={dist: fixed, prompt: 0, output: 4}'
expect2 "yaml prompt_min 0" "workload.lengths.prompt_min: bad value '0'" $g --set workload.lengths.prompt_min=0
# zero output tokens: simulated; the prefill ends the request, TTFT = E2E, no TPOT
run0 "yaml output 0" $g --set 'workload.lengths={dist: fixed, prompt: 100, output: 0}'
[ "$(col 4,9)" = "completed,0 " ] && [ -z "$(col 11 | tr -d ' ')" ] && \
  [ "$(tail -n +2 "$tmp/e/requests.csv" | awk -F, '$6 != $7 || $10 != $12' | wc -l)" -eq 0 ] && ok || bad "output 0: $(sed -n 2p "$tmp/e/requests.csv")"
# lengths above 2^31: exact in requests.csv; beyond the context an error, rejected or clipped as oversize says
expect2 "yaml prompt 3e9" "^kvsim: $g: workload.lengths: request 0 has 3000000000 prompt \+ 5 output tokens, beyond llama-2-7b's context of 4096" $g --set 'workload.lengths={dist: fixed, prompt: 3000000000, output: 5}'
run0 "yaml prompt 3e9 reject" $g --set 'workload.lengths={dist: fixed, prompt: 3000000000, output: 5}' --set workload.oversize=reject
[ "$(col 4,8)" = "rejected_context,3000000000 " ] && ok || bad "prompt 3e9 reject: $(col 4,8)"
run0 "yaml prompt 3e9 clip" $g --set 'workload.lengths={dist: fixed, prompt: 3000000000, output: 5}' --set workload.oversize=clip
[ "$(col 4,8,9)" = "completed,4095,1 " ] && ok || bad "prompt 3e9 clip: $(col 4,8,9)"
expect2 "yaml prompt 2^40+1" "workload.lengths.prompt: bad value '1099511627777': expected .* in \[1, 1099511627776\]" $g --set 'workload.lengths={dist: fixed, prompt: 1099511627777, output: 5}'
# arrival rates at the ends of [1e-9, 1e9]
run0 "rate 1e-9, 3 requests" $g --set workload.arrival.rate=1e-9 --set workload.requests=3 --set outputs.sample_interval=0
[ "$(tail -n +2 "$tmp/e/requests.csv" | wc -l)" -eq 3 ] && [ "$(col 4)" = "completed " ] && \
  awk -F, 'NR > 1 && $5 > 1e6 { n++ } END { exit n < 1 }' "$tmp/e/requests.csv" && ok || bad "rate 1e-9: $(cut -d, -f4,5 "$tmp/e/requests.csv" | tr '\n' ' ')"
expect2 "rate 1e-9, 60 requests" "^kvsim: $g: workload.arrival.rate: bad value 1e-09: request [0-9]+ would arrive beyond the 64-bit nanosecond clock" $g --set workload.arrival.rate=1e-9 --set outputs.sample_interval=0
expect2 "rate 1e-9, samples" "^kvsim: $g:[0-9]+:[0-9]+: outputs.sample_interval: bad value 0.5 s: arrivals spanning about 6e\+10 s .* expected at most 1e\+08" $g --set workload.arrival.rate=1e-9
run0 "rate 1e9" $g --set workload.arrival.rate=1e9 --set workload.requests=300
[ "$(tail -n +2 "$tmp/e/requests.csv" | wc -l)" -eq 300 ] && \
  awk -F, 'NR > 1 && $5 > 0.00001 { n++ } END { exit n > 0 }' "$tmp/e/requests.csv" && ok || bad "rate 1e9: arrivals beyond 10 us"
expect2 "rate 1e-10" "workload.arrival.rate: bad value '1e-10': expected a number in \[1e-09, 1e\+09\]" $g --set workload.arrival.rate=1e-10
expect2 "rate 1e10" "workload.arrival.rate: bad value '1e10': expected a number in \[1e-09, 1e\+09\]" $g --set workload.arrival.rate=1e10
# trace rows (vidur format; the same checks serve every format)
tr=$tmp/edge.csv
cat >"$tmp/edge.yaml" <<YAML
model: llama-2-7b
device: a100-80g
workload:
  oversize: reject
  arrival: {process: trace, trace: edge.csv}
outputs: {sample_interval: 0.1s, chart: false}
YAML
row() { printf 'request_id,arrived_at,num_prefill_tokens,num_decode_tokens\n0,0.5,10,5\n%s\n' "$1" >"$tr"; }
row "1,0.6,0,5";  expect2 "trace prompt 0" "^kvsim: $tr:3:7: num_prefill_tokens: bad value '0': expected a prompt of at least 1 token" "$tmp/edge.yaml"
row "1,0.6,10,0"; run0 "trace output 0" "$tmp/edge.yaml"
[ "$(sed -n 3p "$tmp/e/requests.csv" | awk -F, '{ print $4, $9, ($6 == $7) }')" = "completed 0 1" ] && ok || bad "trace output 0: $(sed -n 3p "$tmp/e/requests.csv")"
row "1,0.6,3000000000,1"; run0 "trace prompt 3e9" "$tmp/edge.yaml"
[ "$(sed -n 3p "$tmp/e/requests.csv" | cut -d, -f4,8)" = "rejected_context,3000000000" ] && ok || bad "trace prompt 3e9: $(sed -n 3p "$tmp/e/requests.csv")"
# 2^64 - 1 tokens: the context check must not wrap (this used to admit them and never end)
printf 'request_id,arrived_at,num_prefill_tokens,num_decode_tokens\n0,0.5,10,5\n1,0.6,18446744073709551615,1\n2,0.7,1,18446744073709551615\n' >"$tr"
rm -rf "$tmp/e"
timeout 20 "$kvsim" run -q "$tmp/edge.yaml" -o "$tmp/e" 2>"$tmp/err" && \
  [ "$(tail -n +3 "$tmp/e/requests.csv" | cut -d, -f4 | sort -u)" = rejected_context ] && ok || bad "trace 2^64-1 tokens: $(head -c 300 "$tmp/err")"
row "1,0.6,18446744073709551616,1"; expect2 "trace prompt 2^64" "^kvsim: $tr:3:7: num_prefill_tokens: bad value '18446744073709551616': expected a non-negative integer" "$tmp/edge.yaml"
row "1,0.6,3000000000,1"; expect2 "trace prompt 3e9, oversize error" "^kvsim: $tr:3: tokens: request 1 has 3000000000 prompt" "$tmp/edge.yaml" --set workload.oversize=error
row "1,99999999999,5,5"; expect2 "trace time beyond the clock" "^kvsim: $tr:3:3: arrived_at: bad value '99999999999': expected .*64-bit nanosecond clock" "$tmp/edge.yaml"
# timestamps going backwards: exit 2 at the row, in every timed format
row "1,0.4,10,5"; expect2 "vidur backwards" "^kvsim: $tr:3:3: arrived_at: unsorted timestamps: 0.4 is before the previous row's 0.5" "$tmp/edge.yaml"
printf 'TIMESTAMP,ContextTokens,GeneratedTokens\n2023-11-16 18:15:46.6805900,374,44\n2023-11-16 18:15:46.6805899,10,4\n' >"$tr"
expect2 "azure backwards" "^kvsim: $tr:3:1: TIMESTAMP: unsorted timestamps: 2023-11-16 18:15:46.6805899 is before" "$tmp/edge.yaml"
printf '{"timestamp": 7, "input_length": 10, "output_length": 2}\n{"timestamp": 6, "input_length": 10, "output_length": 2}\n' >"$tr"
expect2 "mooncake backwards" "^kvsim: $tr:2:[0-9]+: timestamp: unsorted timestamps: 6 is before the previous row's 7" "$tmp/edge.yaml"
# duplicate request ids: the column is not read (kvsim numbers requests in row order), so they run as unique ones
printf 'request_id,arrived_at,num_prefill_tokens,num_decode_tokens\n0,0.5,10,5\n0,0.6,20,5\n0,0.6,30,5\n' >"$tr"
run0 "trace duplicate ids" "$tmp/edge.yaml"
mv "$tmp/e" "$tmp/dup"
printf 'request_id,arrived_at,num_prefill_tokens,num_decode_tokens\n0,0.5,10,5\n1,0.6,20,5\n2,0.6,30,5\n' >"$tr"
run0 "trace unique ids" "$tmp/edge.yaml"
same "$tmp/dup" "$tmp/e" && [ "$(col 1)" = "0 1 2 " ] && ok || bad "duplicate ids: results differ from unique ids"

echo "[${SECONDS}s] 6. hostile input"
# --- 6. hostile input: special files, unbounded lines, far futures, empty values ---
# Each must stop at once (timeout 60 in expect2: a blocking open or an
# endless read fails the test instead of hanging it).
mkfifo "$tmp/fifo.csv" "$tmp/fifo.yaml"
expect2 "trace /dev/zero" "^kvsim: --set:1:[0-9]+: workload.arrival.trace: file '/dev/zero': a character device: expected a regular file" "$tmp/edge.yaml" --set workload.arrival.trace=/dev/zero
expect2 "trace FIFO" "workload.arrival.trace: file '$tmp/fifo.csv': a FIFO \(named pipe\): expected a regular file" "$tmp/edge.yaml" --set workload.arrival.trace="$tmp/fifo.csv"
expect2 "length trace FIFO" "workload.lengths.trace: file '$tmp/fifo.csv': a FIFO" $g --set 'workload.lengths={dist: trace}' --set workload.lengths.trace="$tmp/fifo.csv"
expect2 "model /dev/zero" "^kvsim: --set:1:[0-9]+: model: file '/dev/zero': a character device" $g --set model=/dev/zero
expect2 "device FIFO" "device: file '$tmp/fifo.yaml': a FIFO" $g --set device="$tmp/fifo.yaml"
expect2 "model directory" "model: file '$tmp/': a directory" $g --set model="$tmp/"
expect2 "workload FIFO" "^kvsim: $tmp/fifo.yaml: a FIFO \(named pipe\): expected a regular file" "$tmp/fifo.yaml"
expect2 "workload /dev/zero" "^kvsim: /dev/zero: a character device" /dev/zero
timeout 60 "$kvsim" sweep "$tmp/fifo.yaml" -o "$tmp/e" 2>"$tmp/err"; st=$?
[ $st -eq 2 ] && one_line "$tmp/err" "a FIFO" && ok || bad "sweep FIFO: exit $st: $(head -c 300 "$tmp/err")"
# a line that never ends: stops at 1 MiB, whether the bytes are text or zeros
head -c 2097152 /dev/zero | tr '\0' 7 >"$tr"
expect2 "trace without newline" "^kvsim: $tr:1:1048577: line longer than 1048576 bytes" "$tmp/edge.yaml"
{ printf 'request_id,arrived_at,num_prefill_tokens,num_decode_tokens\n0,0.5,10,5\n'; head -c 2097152 /dev/zero; } >"$tr"
expect2 "trace of zeros" "^kvsim: $tr:3:1048577: line longer than 1048576 bytes" "$tmp/edge.yaml"
head -c $((16 * 1048576 + 1)) /dev/zero | tr '\0' ' ' >"$tmp/big.yaml"
expect2 "model over 16 MiB" "big.yaml: file of 16777217 bytes: expected at most 16777216 bytes" $g --set model="$tmp/big.yaml"
# NUL inside a number, a quoted field
printf 'request_id,arrived_at,num_prefill_tokens,num_decode_tokens\n0,0.5,1\0000,5\n' >"$tr"
expect2 "trace NUL" "^kvsim: $tr:2:7: num_prefill_tokens: bad value '1\\\\00': contains a NUL byte" "$tmp/edge.yaml"
row '1,0.6,"10",5'; expect2 "trace quoted" "^kvsim: $tr:3:7: num_prefill_tokens: bad value '\"10\"': quoted CSV fields are not supported" "$tmp/edge.yaml"
# a far-future row: rejected at the row, unless the timeseries is off or the duration ends first
printf 'TIMESTAMP,ContextTokens,GeneratedTokens\n2023-11-16 18:15:46.6805900,374,44\n2200-11-16 18:15:46.6805900,10,4\n' >"$tr"
expect2 "far future" "^kvsim: $tr:3: arrival .* s after the first row .* beyond the horizon of 1e\+07 s" "$tmp/edge.yaml"
rm -rf "$tmp/e"
timeout 60 "$kvsim" run -q "$tmp/edge.yaml" -o "$tmp/e" --set outputs.sample_interval=0 2>"$tmp/err" && \
  [ "$(tail -n +2 "$tmp/e/requests.csv" | wc -l)" -eq 2 ] && ok || bad "far future, no timeseries: $(head -c 300 "$tmp/err")"
run0 "far future, duration" "$tmp/edge.yaml" --set workload.duration=1h
[ "$(tail -n +2 "$tmp/e/requests.csv" | wc -l)" -eq 1 ] && ok || bad "far future, duration: rows"
# a header and no rows: the same error for arrivals and for lengths
printf 'request_id,arrived_at,num_prefill_tokens,num_decode_tokens\n' >"$tr"
expect2 "empty arrival trace" "^kvsim: $tr: no rows: expected at least one request after the header" "$tmp/edge.yaml"
expect2 "empty length trace" "^kvsim: $tr: no rows: expected at least one request after the header" $g --set 'workload.lengths={dist: trace}' --set workload.lengths.trace="$tr"
# empty values are errors, not defaults; nonzero values must not round to 0 ("off", "unbounded")
expect2 "--set requests=" "^kvsim: --set:1:[0-9]+: workload.requests: no value: expected a non-negative integer" $g --set workload.requests=
expect2 "--set scheduler=" "^kvsim: --set:1:[0-9]+: scheduler: no value" $g --set scheduler=
expect2 "--set model=" "^kvsim: --set:1:[0-9]+: model: no value" $g --set model=
expect2 "sample_interval 1e-12s" "outputs.sample_interval: bad value '1e-12s': nonzero but rounds to 0" $g --set outputs.sample_interval=1e-12s
expect2 "duration 0.4ns" "workload.duration: bad value '0.4ns': nonzero but rounds to 0" $g --set workload.duration=0.4ns
expect2 "max_block 0.4B" "memory.max_block: bad value '0.4B': nonzero but rounds to 0" $g --set memory.max_block=0.4B
# control characters in names
expect2 "tenant newline" "workload.tenants\[0\].name: bad value 'a\\\\nb': the tenant name contains a control character" $g --set 'workload.tenants=[{name: "a\nb"}]'
expect2 "name tab" "^kvsim: --set:1:[0-9]+: name: bad value 'x\\\\ty': the workload name contains a control character" $g --set 'name="x\ty"'

echo "[${SECONDS}s] $pass passed, $fail failed"
[ $fail -eq 0 ]
