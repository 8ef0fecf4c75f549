#!/usr/bin/env bash
# The output-directory contract (src/lib/outdir.h, docs/reliability.md "The
# output directory"), end to end:
#  1. a rerun into a directory equals a fresh run, file for file (fewer
#     outputs leave none of the earlier run's files);
#  2. a directory holding other files is refused (exit 2) unless --force;
#     one from before manifests (kvsim's names only) is replaced;
#  3. two writers of one directory: the second fails at once (exit 1), for
#     run, sweep and plot;
#  4. SIGKILL at random moments: the directory holds the whole earlier run
#     or the whole new one, and the next run leaves no temporaries;
#  5. stale staging directories of killed runs are removed;
#  6. charts: a gnuplot that exits 0 after writing part of the file, a
#     full filesystem (tmpfs when mountable, else a file-size limit): exit
#     1, no chart, no temporary, the manifest unchanged;
#  7. long paths (over 1 KiB) work; too long ones exit 2; a name with '/'
#     does not leave out/; empty -o exits 2 for every command;
#  8. any character in the directory's name (quotes, $, `) for run and plot.
# Usage: outdir_test.sh KVSIM SOURCE_DIR
set -u
kvsim=$(cd "$(dirname "$1")" && pwd)/$(basename "$1") # absolute: some cases change directory
src=$2
. "$(dirname "$0")/testutil.sh"
mnt=
cleanup() {
  [ -n "$mnt" ] && umount "$mnt" 2>/dev/null
  rm -rf "$tmp"
}
trap cleanup EXIT
have_gnuplot=0
command -v gnuplot >/dev/null && have_gnuplot=1

# same DIR REF: DIR holds exactly REF's files (names and bytes).
same() {
  [ -d "$1" ] && [ "$(ls -A "$1")" = "$(ls -A "$2")" ] || return 1
  local f
  for f in "$2"/*; do
    # a PNG's bytes are gnuplot's (fonts, version); its presence is what counts
    case $f in *.png|*.svg) [ -s "$1/${f##*/}" ] || return 1 ;; *) cmp -s "$f" "$1/${f##*/}" || return 1 ;; esac
  done
}
# no_litter PARENT NAME: no staging directory of NAME left in PARENT.
no_litter() { ! ls -A "$1" | grep -q "^\.$2\.tmp-"; }

cat >"$tmp/w.yaml" <<YAML
name: w
model: llama-2-7b
device: a100-80g
cluster: {replicas: 2}
workload:
  requests: 300
  arrival: {process: poisson, rate: 20}
  lengths: {dist: uniform, prompt_min: 16, prompt_max: 900, output_min: 1, output_max: 90}
  tenants: [{name: a, share: 2}, {name: b, share: 1}]
outputs: {sample_interval: 0.5s}
YAML
run() { "$kvsim" run -q "$tmp/w.yaml" "$@"; }

echo "[${SECONDS}s] 1. reruns"
run -o "$tmp/full" && [ -s "$tmp/full/requests.csv" ] && [ -s "$tmp/full/manifest.txt" ] && ok || bad "first run"
[ $have_gnuplot -eq 0 ] || [ -s "$tmp/full/run.png" ] && ok || bad "first run: no run.png"
for f in requests.csv summary.csv timeseries.csv tenants.csv tenant_timeseries.csv; do
  grep -qx "file $f" "$tmp/full/manifest.txt" && ok || bad "manifest lacks $f"
done
grep -q "^config_digest fnv1a64:[0-9a-f]\{16\}$" "$tmp/full/manifest.txt" && grep -qx "seed [0-9][0-9]*" "$tmp/full/manifest.txt" \
  && ok || bad "manifest header: $(head -c 300 "$tmp/full/manifest.txt")"
less="--set outputs.requests=false --set outputs.chart=false --seed 7"
cp -a "$tmp/full" "$tmp/re"
run -o "$tmp/re" $less && run -o "$tmp/fresh" $less && ok || bad "reruns"
same "$tmp/re" "$tmp/fresh" && [ ! -e "$tmp/re/requests.csv" ] && [ ! -e "$tmp/re/run.png" ] \
  && ok || bad "rerun with fewer outputs: $(ls -A "$tmp/re" | tr '\n' ' ')"
no_litter "$tmp" re && no_litter "$tmp" fresh && ok || bad "staging left: $(ls -A "$tmp" | tr '\n' ' ')"
run -o "$tmp/re" --seed 7 --set outputs.chart=false && run -o "$tmp/fresh2" --seed 7 --set outputs.chart=false \
  && same "$tmp/re" "$tmp/fresh2" && ok || bad "rerun with more outputs"

echo "[${SECONDS}s] 2. foreign directories"
mkdir -p "$tmp/mine" && echo keep >"$tmp/mine/notes.txt"
run -o "$tmp/mine" 2>"$tmp/err"; st=$?
[ $st -eq 2 ] && grep -q "holds 'notes.txt', which no kvsim run wrote" "$tmp/err" && [ "$(ls -A "$tmp/mine")" = notes.txt ] \
  && ok || bad "foreign dir: exit $st: $(cat "$tmp/err")"
run -o "$tmp/mine" --force --seed 7 --set outputs.requests=false --set outputs.chart=false && same "$tmp/mine" "$tmp/fresh" \
  && ok || bad "--force"
# (the files kvsim wrote before manifests existed; health.csv came later, always with one)
mkdir -p "$tmp/legacy" && cp "$tmp/full"/{requests,summary,timeseries,tenants,tenant_timeseries}.csv "$tmp/legacy/" && touch "$tmp/legacy/.summary.csv.Ab12Cd"
run -o "$tmp/legacy" --seed 7 --set outputs.requests=false --set outputs.chart=false && same "$tmp/legacy" "$tmp/fresh" \
  && ok || bad "legacy dir not replaced"
echo x >"$tmp/afile"
run -o "$tmp/afile" 2>"$tmp/err"; [ $? -eq 2 ] && grep -q "not a directory" "$tmp/err" && ok || bad "a file as -o"
mkdir -p "$tmp/mine2" && touch "$tmp/mine2/notes.txt"
"$kvsim" validate --quiet "$tmp/w.yaml" --set cluster.replicas=1 -o "$tmp/mine2" 2>"$tmp/err"; st=$?
[ $st -eq 2 ] && grep -q "no kvsim run wrote" "$tmp/err" && ok || bad "validate into a foreign dir: $st $(cat "$tmp/err")"

echo "[${SECONDS}s] 3. two writers"
long="--set workload.requests=3000000 --set workload.arrival.rate=2000 --set outputs.requests=false"
"$kvsim" run -q "$tmp/w.yaml" -o "$tmp/busy" $long & pid=$!
for i in $(seq 50); do ls -A "$tmp" | grep -q '^\.busy\.tmp-' && break; sleep 0.1; done
run -o "$tmp/busy" 2>"$tmp/err"; st=$?
[ $st -eq 1 ] && grep -q "another kvsim is writing it" "$tmp/err" && ok || bad "second run: exit $st: $(cat "$tmp/err")"
"$kvsim" plot "$tmp/busy" >/dev/null 2>"$tmp/err"; st=$?
[ $st -eq 1 ] && grep -q "another kvsim is writing it" "$tmp/err" && ok || bad "plot during a run: exit $st: $(cat "$tmp/err")"
kill -TERM $pid; wait $pid
[ ! -e "$tmp/busy" ] && no_litter "$tmp" busy && ok || bad "stopped run left $(ls -A "$tmp" | tr '\n' ' ')"
cat >"$tmp/sw.yaml" <<YAML
name: sw
base: $tmp/w.yaml
axes: {workload.arrival.rate: [10, 20]}
set: {workload.requests: 1000000, outputs.requests: false, outputs.chart: false}
YAML
"$kvsim" sweep -q "$tmp/sw.yaml" -o "$tmp/sw" -j 1 >/dev/null 2>&1 & pid=$!
for i in $(seq 50); do [ -e "$tmp/.sw.lock" ] && [ -d "$tmp/sw/points" ] && break; sleep 0.1; done
"$kvsim" sweep -q "$tmp/sw.yaml" -o "$tmp/sw" -j 1 >/dev/null 2>"$tmp/err"; st=$?
[ $st -eq 1 ] && grep -q "another kvsim is writing it" "$tmp/err" && ok || bad "second sweep: exit $st: $(cat "$tmp/err")"
kill -TERM $pid; wait $pid

echo "[${SECONDS}s] 4. SIGKILL"
mid="--set workload.requests=40000 --set workload.arrival.rate=400 --set outputs.chart=false"
run -o "$tmp/k-old" $mid --seed 1 && run -o "$tmp/k-new" $mid --seed 2 && ok || bad "SIGKILL references"
t0=$(date +%s%N); run -o "$tmp/k-time" $mid --seed 2; t1=$(date +%s%N)
ms=$(((t1 - t0) / 1000000 + 50))
n_old=0 n_new=0
for i in $(seq 12); do
  rm -rf "$tmp/k"
  cp -a "$tmp/k-old" "$tmp/k"
  "$kvsim" run -q "$tmp/w.yaml" -o "$tmp/k" $mid --seed 2 & pid=$!
  sleep "$(awk -v r=$RANDOM -v ms=$ms 'BEGIN { printf "%.3f", (r % ms) / 1000 }')"
  kill -KILL $pid 2>/dev/null; wait $pid 2>/dev/null
  if same "$tmp/k" "$tmp/k-old"; then n_old=$((n_old + 1)); ok
  elif same "$tmp/k" "$tmp/k-new"; then n_new=$((n_new + 1)); ok
  else bad "SIGKILL $i: a mixed directory: $(ls -A "$tmp/k" | tr '\n' ' ')"; fi
  run -o "$tmp/k" $mid --seed 2 && same "$tmp/k" "$tmp/k-new" && no_litter "$tmp" k && ok \
    || bad "SIGKILL $i: the rerun: $(ls -A "$tmp" | tr '\n' ' ')"
done
echo "SIGKILL: 12 kills in ${ms} ms runs: $n_old left the earlier run, $n_new the new one; every rerun clean"

echo "[${SECONDS}s] 5. stale temporaries"
mkdir -p "$tmp/.st.tmp-AbCdEf" "$tmp/.st.tmp-XyZ123"
head -c 1048576 /dev/zero >"$tmp/.st.tmp-AbCdEf/requests.csv"
run -o "$tmp/st" && [ ! -e "$tmp/.st.tmp-AbCdEf" ] && [ ! -e "$tmp/.st.tmp-XyZ123" ] && ok || bad "stale staging kept"
mkdir -p "$tmp/.stx.tmp-AbCdEf.keep" && run -o "$tmp/stx" && [ -d "$tmp/.stx.tmp-AbCdEf.keep" ] && ok \
  || bad "a name that only looks like staging was removed"

echo "[${SECONDS}s] 6. charts"
mkdir -p "$tmp/fakebin"
cat >"$tmp/fakebin/gnuplot" <<'SH'
#!/bin/sh
# a gnuplot that exits 0 after writing part of its PNG (what a full disk does)
for a in "$@"; do
  case $a in *"out='"*) out=${a##*out=\'}; out=${out%%\'*} ;; esac
done
printf '\211PNG\r\n\032\n\000\000\000\rIHDR' >"$out"
exit 0
SH
chmod +x "$tmp/fakebin/gnuplot"
run -o "$tmp/ch" --set outputs.chart=false && cp "$tmp/ch/manifest.txt" "$tmp/man.ref" && ok || bad "chart base run"
PATH=$tmp/fakebin:$PATH "$kvsim" plot "$tmp/ch" >/dev/null 2>"$tmp/err"; st=$?
[ $st -eq 1 ] && grep -q "gnuplot exited 0 but wrote an incomplete PNG" "$tmp/err" && [ ! -e "$tmp/ch/run.png" ] &&
  [ -z "$(ls -A "$tmp/ch" | grep '^\.')" ] && cmp -s "$tmp/ch/manifest.txt" "$tmp/man.ref" \
  && ok || bad "truncated PNG from plot: exit $st: $(cat "$tmp/err"); $(ls -A "$tmp/ch" | tr '\n' ' ')"
PATH=$tmp/fakebin:$PATH run -o "$tmp/ch2" 2>"$tmp/err"; st=$?
[ $st -eq 1 ] && grep -q "incomplete PNG" "$tmp/err" && [ -s "$tmp/ch2/summary.csv" ] && [ ! -e "$tmp/ch2/run.png" ] &&
  ! grep -q run.png "$tmp/ch2/manifest.txt" && ok || bad "truncated PNG from run: exit $st: $(cat "$tmp/err")"
if [ $have_gnuplot -eq 1 ]; then
  # a run with a chart, then a rerun whose chart fails: the old run.png goes with its run
  run -o "$tmp/ch3" && [ -s "$tmp/ch3/run.png" ] && ok || bad "run with a chart"
  PATH=$tmp/fakebin:$PATH run -o "$tmp/ch3" --seed 9 2>/dev/null; [ ! -e "$tmp/ch3/run.png" ] && ok || bad "stale run.png kept"
  "$kvsim" plot "$tmp/ch" >/dev/null && [ -s "$tmp/ch/run.svg" ] && grep -qx "file run.svg" "$tmp/ch/manifest.txt" \
    && grep -q "</svg>" "$tmp/ch/run.svg" && ok || bad "plot: run.svg and its manifest line"
  # a full filesystem: a 256 KiB tmpfs when this user may mount one, else a file-size limit
  mkdir -p "$tmp/mnt"
  if mount -t tmpfs -o size=256k tmpfs "$tmp/mnt" 2>/dev/null; then
    mnt=$tmp/mnt
    run -o "$mnt/r" --set workload.requests=100 --set outputs.chart=false && ok || bad "run on the tmpfs"
    head -c 10000000 /dev/zero >"$mnt/fill" 2>/dev/null
    "$kvsim" plot "$mnt/r" >/dev/null 2>"$tmp/err"; st=$?
    how="a full 256 KiB tmpfs"
    [ ! -e "$mnt/r/run.png" ] && [ -z "$(ls -A "$mnt/r" | grep '^\.')" ] && ok || bad "$how: chart or temporary left"
  else
    run -o "$tmp/fs" --set workload.requests=100 --set outputs.chart=false && ok || bad "run for the size limit"
    (trap '' XFSZ; ulimit -f 8; exec "$kvsim" plot "$tmp/fs") >/dev/null 2>"$tmp/err"; st=$?
    how="a 8 KiB file-size limit"
    [ ! -e "$tmp/fs/run.png" ] && [ -z "$(ls -A "$tmp/fs" | grep '^\.')" ] && ok || bad "$how: chart or temporary left"
  fi
  [ $st -eq 1 ] && grep -q "run.png: gnuplot" "$tmp/err" && ok || bad "$how: exit $st: $(cat "$tmp/err")"
  echo "full filesystem: $how: $(head -c 200 "$tmp/err")"
  [ -n "$mnt" ] && umount "$mnt" && mnt=
fi

echo "[${SECONDS}s] 7. paths and names"
long_dir=$tmp
for i in $(seq 11); do long_dir=$long_dir/$(printf 'd%.0s' $(seq 100)); done
[ ${#long_dir} -gt 1100 ] && ok || bad "long path of ${#long_dir} bytes"
run -o "$long_dir/run" --set outputs.chart=false && [ -s "$long_dir/run/summary.csv" ] && ok || bad "run into a ${#long_dir}-byte path"
"$kvsim" plot "$long_dir/run" >/dev/null 2>&1; st=$?
[ $st -eq 0 ] && { [ $have_gnuplot -eq 0 ] || [ -s "$long_dir/run/run.png" ]; } && ok || bad "plot a long path: $st"
cat >"$tmp/sw2.yaml" <<YAML
name: sw2
base: $tmp/w.yaml
axes: {workload.arrival.rate: [10, 20, 30]}
set: {workload.requests: 50, outputs.chart: false}
YAML
"$kvsim" sweep -q "$tmp/sw2.yaml" -o "$long_dir/sweep" -j 2 >/dev/null 2>"$tmp/err" &&
  [ "$(ls "$long_dir/sweep/points" | wc -l)" -eq 3 ] && [ "$(grep -c ',ok,' "$long_dir/sweep/sweep.csv")" -eq 3 ] \
  && ok || bad "sweep into a long path: $(cat "$tmp/err")"
huge=$tmp
for i in $(seq 50); do huge=$huge/$(printf 'e%.0s' $(seq 100)); done
for cmd in "run -q $tmp/w.yaml" "sweep -q $tmp/sw2.yaml" "validate --quiet $tmp/w.yaml" "calibrate --model tiny"; do
  "$kvsim" $cmd -o "$huge" 2>"$tmp/err" >/dev/null; st=$?
  [ $st -eq 2 ] && grep -q "too long: expected at most" "$tmp/err" && ok || bad "$cmd -o (${#huge} bytes): exit $st: $(head -c 200 "$tmp/err")"
  "$kvsim" $cmd -o '' 2>"$tmp/err" >/dev/null; st=$?
  [ $st -eq 2 ] && grep -q -- "-o: bad value ''" "$tmp/err" && ok || bad "$cmd -o '': exit $st: $(cat "$tmp/err")"
done
[ ! -e "$tmp/$(printf 'e%.0s' $(seq 100))" ] && ok || bad "a too-long -o left directories"
mkdir -p "$tmp/cwd/sub"
sed 's/^name: w$/name: ..\/escape/' "$tmp/w.yaml" >"$tmp/cwd/sub/esc.yaml"
(cd "$tmp/cwd/sub" && "$kvsim" run -q esc.yaml) 2>"$tmp/err"; st=$?
[ $st -eq 2 ] && grep -q "name: bad value '../escape'" "$tmp/err" && [ ! -e "$tmp/cwd/escape" ] && [ ! -e "$tmp/cwd/sub/out" ] \
  && ok || bad "name '../escape': exit $st: $(cat "$tmp/err")"
(cd "$tmp/cwd/sub" && "$kvsim" run -q esc.yaml -o mine) && [ -s "$tmp/cwd/sub/mine/summary.csv" ] && ok || bad "name '../escape' with -o"

echo "[${SECONDS}s] 8. any character in the directory name"
q="$tmp/it's \"q\" \$HOME \`x\` a\\b"
run -o "$q" --set workload.requests=100 && [ -s "$q/summary.csv" ] && ok || bad "run into $q"
if [ $have_gnuplot -eq 1 ]; then
  "$kvsim" plot "$q" >/dev/null 2>"$tmp/err" && [ -s "$q/run.png" ] && [ -s "$q/run.svg" ] && ok || bad "plot $q: $(cat "$tmp/err")"
fi

echo "[${SECONDS}s] $pass passed, $fail failed"
[ $fail -eq 0 ]
