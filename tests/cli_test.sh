#!/usr/bin/env bash
# End-to-end tests of the kvsim command: help, list, determinism, atomic
# outputs, and the corpus of bad inputs (tests/data/bad/*.yaml, each with
# "# expect: TEXT" on its first line): exit status 2, the expected text in
# the one-line message, and no output directory left behind.
set -u
kvsim=$1
src=$2
. "$(dirname "$0")/testutil.sh"

# --help everywhere, list shows every plugin with its options
"$kvsim" --help | grep -q "usage: kvsim run \[options\] WORKLOAD.yaml" && ok || bad "kvsim --help"
"$kvsim" run --help | grep -q -- "--set" && ok || bad "kvsim run --help"
"$kvsim" list --help | grep -q "usage" && ok || bad "kvsim list --help"
"$kvsim" gpu --help | grep -q "usage" && ok || bad "kvsim gpu --help"
"$kvsim" plot --help | grep -q "usage" && ok || bad "kvsim plot --help"
list=$("$kvsim" list)
for word in fifo full round-robin least-outstanding-tokens max_len a100-80g h200 llama-2-7b opt-13b \
    "autoscale keys" cooldown_down load_bandwidth start_time "autoscale.csv:"; do
  grep -q -- "$word" <<<"$list" && ok || bad "kvsim list lacks $word"
done
"$kvsim" nonsense 2>/dev/null; [ $? -eq 2 ] && ok || bad "unknown command exit status"
"$kvsim" list nonsense 2>/dev/null; [ $? -eq 2 ] && ok || bad "unknown list kind exit status"
"$kvsim" run 2>/dev/null; [ $? -eq 2 ] && ok || bad "run without a file"
"$kvsim" run --seed -1 "$src/workloads/default.yaml" 2>/dev/null; [ $? -eq 2 ] && ok || bad "negative seed"
"$kvsim" gpu >/dev/null; st=$?; [ $st -eq 0 ] || [ $st -eq 77 ] && ok || bad "kvsim gpu status $st"

# trace-stats: a trace's prefix reuse, a session workload's, and what it refuses
printf '%s\n' '{"timestamp": 0, "input_length": 1024, "output_length": 4, "hash_ids": [1, 2]}' \
  '{"timestamp": 1000, "input_length": 1536, "output_length": 4, "hash_ids": [1, 2, 3]}' \
  '{"timestamp": 2000, "input_length": 512, "output_length": 4, "hash_ids": [9]}' > "$tmp/chain.jsonl"
ts=$("$kvsim" trace-stats --csv "$tmp/chain.jsonl")
grep -qx "blocks_seen_share,0.333333" <<<"$ts" && grep -qx "chains,2" <<<"$ts" &&
  grep -qx "turns_max,2" <<<"$ts" && grep -qx "turn_gap_mean_s,1" <<<"$ts" && ok || bad "trace-stats on a trace: $ts"
"$kvsim" trace-stats --csv "$src/workloads/sessions-mooncake-fit.yaml" | grep -q "^chains,2211$" && ok || bad "trace-stats on a session workload"
"$kvsim" trace-stats "$src/workloads/default.yaml" 2>"$tmp/err"; st=$?
[ $st -eq 2 ] && grep -q "no sessions and no arrival trace" "$tmp/err" && ok || bad "trace-stats without sessions or a trace (status $st)"
"$kvsim" trace-stats "$tmp/none.jsonl" 2>/dev/null; [ $? -eq 2 ] && ok || bad "trace-stats on a missing file"
"$kvsim" list sessions | grep -q "LMSYS-Chat-1M" && ok || bad "kvsim list sessions"
# how the engine drives its workers: a bad worker_inputs value, with its line (exit 2)
printf 'name: w\nengine: {name: vllm-v0, worker_inputs: pickled}\nworkload: {requests: 2}\n' > "$tmp/wi.yaml"
st=0; "$kvsim" run -q "$tmp/wi.yaml" -o "$tmp/wi" 2> "$tmp/err" || st=$?
[ $st -eq 2 ] && grep -q "wi.yaml:2:.*worker_inputs.*pickled.*broadcast, metadata" "$tmp/err" && ok || bad "engine.worker_inputs: pickled (status $st: $(cat "$tmp/err"))"
# a drawn turn count whose mean is below the least turn (1): refused at load, with its line
printf 'name: s\nworkload:\n  requests: 5\n  sessions:\n    turns: {dist: geometric, mean: 0, min: 0, max: 50}\n' > "$tmp/sess0.yaml"
st=0; "$kvsim" run -q "$tmp/sess0.yaml" -o "$tmp/sess0" 2> "$tmp/err" || st=$?
[ $st -eq 2 ] && grep -q "sess0.yaml:5:.*turns.*bad mean 0" "$tmp/err" && ok || bad "sessions with a turn mean of 0 (status $st: $(cat "$tmp/err"))"
"$kvsim" list routers | grep -q "session-affinity" && ok || bad "kvsim list routers lacks session-affinity"
# a session run: requests.csv gains session,turn; without sessions it does not
"$kvsim" run -q "$src/workloads/sessions-agent.yaml" -o "$tmp/sess" --set workload.requests=5 --set outputs.chart=false &&
  head -1 "$tmp/sess/requests.csv" | grep -q ",session,turn$" && ok || bad "requests.csv of a session run"

# A small generated workload, run twice with one seed and once with another.
cat > "$tmp/w.yaml" <<YAML
model: llama-2-7b
device: a100-80g
cluster: {replicas: 2, router: least-outstanding-tokens}
workload:
  requests: 400
  arrival: {process: gamma, rate: 30, cv: 2}
  lengths: {dist: lognormal, prompt_mean: 400, output_mean: 120, prompt_max: 3000, output_max: 1000}
  tenants: [{name: a, share: 2}, {name: b, share: 1, weight: 2}]
outputs: {sample_interval: 0.5s, chart: false}
YAML
"$kvsim" run -q "$tmp/w.yaml" -o "$tmp/r1" --seed 7 && ok || bad "run r1"
"$kvsim" run -q "$tmp/w.yaml" -o "$tmp/r2" --seed 7 && ok || bad "run r2"
"$kvsim" run -q "$tmp/w.yaml" -o "$tmp/r3" --seed 8 && ok || bad "run r3"
for f in requests.csv timeseries.csv summary.csv tenants.csv tenant_timeseries.csv; do
  [ -s "$tmp/r1/$f" ] && ok || bad "missing $f"
  cmp -s "$tmp/r1/$f" "$tmp/r2/$f" && ok || bad "$f differs between identical runs"
done
cmp -s "$tmp/r1/requests.csv" "$tmp/r3/requests.csv" && bad "another seed gave the same requests.csv" || ok
[ "$(tail -n +2 "$tmp/r1/requests.csv" | wc -l)" -eq 400 ] && ok || bad "requests.csv rows"
ls -a "$tmp/r1" | grep -q '^\.' && [ -z "$(ls -a "$tmp/r1" | grep '^\..*XXXXXX\|\.tmp')" ] && ok || bad "temporaries left"
# --set overrides apply and are checked
"$kvsim" run -q "$tmp/w.yaml" -o "$tmp/r4" --set cluster.replicas=3 --set workload.requests=50 && ok || bad "--set run"
[ "$(tail -n +2 "$tmp/r4/requests.csv" | wc -l)" -eq 50 ] && ok || bad "--set workload.requests"
cut -d, -f3 "$tmp/r4/requests.csv" | grep -qx 2 && ok || bad "--set cluster.replicas"
"$kvsim" run -q "$tmp/w.yaml" -o "$tmp/r5" --set cluster.replicas=many 2>"$tmp/err"; st=$?
[ $st -eq 2 ] && grep -q "cluster.replicas" "$tmp/err" && [ ! -e "$tmp/r5" ] && ok || bad "--set bad value (status $st: $(cat "$tmp/err"))"
# kvsim plot renders a run directory (when gnuplot is installed)
if command -v gnuplot >/dev/null; then
  "$kvsim" plot "$tmp/r1" >/dev/null && [ -s "$tmp/r1/run.png" ] && [ -s "$tmp/r1/run.svg" ] && ok || bad "kvsim plot"
fi
"$kvsim" plot "$tmp" 2>/dev/null; [ $? -eq 2 ] && ok || bad "kvsim plot on a non-run directory"
# the table is printed
"$kvsim" run "$tmp/w.yaml" -o "$tmp/r6" | grep -q "ttft_p99_s" && ok || bad "summary table"
# an output directory that cannot be created
"$kvsim" run -q "$tmp/w.yaml" -o /proc/kvsim-no 2>/dev/null; [ $? -eq 1 ] && ok || bad "unwritable output dir"

# SIGINT and SIGTERM stop a run: status 130 or 143, a message, no output directory
for sig in INT TERM; do
  "$kvsim" run -q "$src/bench/million.yaml" -o "$tmp/sig-$sig" 2>"$tmp/err" & pid=$!
  sleep 1; kill -s $sig $pid; wait $pid; st=$?
  [ $st -eq $((128 + $(kill -l $sig))) ] && grep -q interrupted "$tmp/err" && [ ! -e "$tmp/sig-$sig" ] && ok || bad "SIG$sig: status $st, $(cat "$tmp/err")"
done

# CSV fields are quoted as RFC 4180 has it: a workload and tenants named
# with commas and quotes keep every CSV's column count, read back by
# python3's csv module (when present) and by kvsim plot (titles, legends).
cat > "$tmp/q.yaml" <<'YAML'
name: 'a,b "c"'
model: llama-2-7b
device: a100-80g
workload:
  requests: 100
  arrival: {process: poisson, rate: 20}
  lengths: {dist: uniform, prompt_min: 16, prompt_max: 256, output_min: 8, output_max: 64}
  tenants: [{name: 'x,y', share: 1}, {name: 'say "hi"', share: 1}, {name: plain, share: 1}]
outputs: {sample_interval: 1s, chart: false}
YAML
"$kvsim" run -q "$tmp/q.yaml" -o "$tmp/q" && ok || bad "run of a workload named with a comma and quotes"
grep -qxF '"a,b ""c""",100,100,0,0,0' <(sed -n 2p "$tmp/q/summary.csv" | cut -d, -f1-7) && ok || bad "summary.csv row: $(sed -n 2p "$tmp/q/summary.csv" | cut -c1-60)"
if command -v python3 >/dev/null; then
  python3 - "$tmp/q" <<'PY' && ok || bad "quoted CSVs do not parse with python3's csv module"
import csv, sys
d = sys.argv[1]
names = ['x,y', 'say "hi"', 'plain']
def rows(f):
    with open(f"{d}/{f}", newline="") as fh:
        r = list(csv.reader(fh))
    bad = [x for x in r if len(x) != len(r[0])]
    assert not bad, f"{f}: rows with another column count: {bad[:2]}"
    return r
s = rows("summary.csv")
assert len(s) == 2 and s[1][0] == 'a,b "c"', s
t = rows("tenants.csv")
assert [x[0] for x in t[1:]] == names, t
for f in ("requests.csv", "tenant_timeseries.csv"):
    assert {x[1] for x in rows(f)[1:]} == set(names), f
PY
fi
if command -v gnuplot >/dev/null; then
  "$kvsim" plot "$tmp/q" >/dev/null && grep -qF 'kvsim run a,b "c"' "$tmp/q/run.svg" &&
    grep -qF 'say_"hi"' "$tmp/q/run.svg" && ok || bad "kvsim plot of quoted names (title and legend)"
fi

# A tenant that completed nothing (every prompt beyond the context, rejected): its latency
# percentiles are empty cells, not 0, with and without slo: (its attainment is 0: none met)
cat > "$tmp/t0.yaml" <<'YAML'
name: t0
model: llama-2-7b
device: a100-80g
workload:
  requests: 40
  oversize: reject
  arrival: {process: poisson, rate: 4}
  lengths: {dist: fixed, prompt: 100, output: 10}
  tenants:
    - {name: ok, share: 1}
    - {name: huge, share: 1, lengths: {dist: fixed, prompt: 9000, output: 10}}
YAML
for slo in "outputs.requests=true" "slo={ttft: 1s}"; do
  "$kvsim" run -q "$tmp/t0.yaml" -o "$tmp/t0" --set outputs.chart=false --set "$slo" &&
    python3 - "$tmp/t0/tenants.csv" <<'PY' && ok || bad "tenants.csv of a tenant with nothing completed ($slo): $(cat "$tmp/t0/tenants.csv")"
import csv, sys
r = {x["tenant"]: x for x in csv.DictReader(open(sys.argv[1], newline=""))}
lat = ("ttft_p50_s", "ttft_p99_s", "e2e_p50_s", "e2e_p99_s")
assert r["huge"]["completed"] == "0" and all(r["huge"][k] == "" for k in lat), r["huge"]
assert all(float(r["ok"][k]) > 0 for k in lat), r["ok"]
assert r["huge"].get("slo_attainment", "0.000000") == "0.000000", r["huge"]  # 0 of 18 arrived met
PY
done

# The corpus of bad inputs
for f in "$src"/tests/data/bad/*.yaml; do
  expect=$(head -n 1 "$f" | sed -n 's/^# expect: //p')
  out="$tmp/bad-$(basename "$f" .yaml)"
  "$kvsim" run -q "$f" -o "$out" 2>"$tmp/err" >/dev/null; st=$?
  msg=$(cat "$tmp/err")
  if [ $st -ne 2 ]; then bad "$(basename "$f"): exit $st, expected 2 ($msg)"
  elif ! grep -qF -- "$expect" <<<"$msg"; then bad "$(basename "$f"): message lacks '$expect': $msg"
  elif [ "$(wc -l <<<"$msg")" -ne 1 ]; then bad "$(basename "$f"): more than one line: $msg"
  elif [ -e "$out" ]; then bad "$(basename "$f"): left $out behind"
  else ok; fi
done

# The real executor refuses an engine whose prefix cache lists no pages (it
# used to call a NULL hook): exit 2 naming the engine, nothing written.
"$kvsim" validate "$src/workloads/validate-cpu.yaml" --set engine.name=vllm --set cache.name=full \
  -o "$tmp/val-engine" --quiet 2>"$tmp/val-engine.err"; st=$?
[ $st -eq 2 ] && grep -q "engine 'vllm' runs the cache model 'shared'" "$tmp/val-engine.err" &&
  [ ! -e "$tmp/val-engine" ] && ok || bad "validate under vllm's prefix cache: exit $st: $(cat "$tmp/val-engine.err")"

echo "$pass passed, $fail failed"
[ $fail -eq 0 ]
