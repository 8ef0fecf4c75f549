#!/usr/bin/env bash
# The timeline (src/lib/timeline.h, docs/timeline.md), end to end:
#  1. one request of 100 prompt and 5 output tokens alone on one replica:
#     5 iterations (1 prefill of 100 tokens, 4 decodes of 1), phases
#     queued -> prefill -> decode, all from hand-computed counts;
#  2. a multi-tenant run: valid trace-event JSON (python3 json), every event
#     with ph/ts/pid/tid/name, X with dur >= 0, async b/e matched per
#     (pid, cat, id) and nested by name, one iteration span per iteration
#     (summary.csv's `iterations`);
#  3. bounds: --trace-sample 4 traces the ids divisible by 4,
#     --trace-window 2:4 only starts in [2, 4) s, --trace-max-events caps the
#     events and still closes every span;
#     preempted requests (swap; recompute under MLFQ) open `preempted` phases
#     and still pair every b with its e;
#  5. a failed write anywhere (KVSIM_FAIL_WRITE=1..N): exit 1, no timeline left;
#  4. outputs.timeline and --trace-out DIR/NAME go through the run
#     directory's commit (listed in manifest.txt); a bad window exits 2;
#  6. --trace-out onto a FIFO, a directory, a device (a copy of /dev/full as
#     root) is refused with exit 2 and left as it was; a locked target exits 1.
# Usage: timeline_test.sh KVSIM SOURCE_DIR
set -u
kvsim=$(cd "$(dirname "$1")" && pwd)/$(basename "$1") # absolute: one case changes directory
src=$(cd "$2" && pwd)
. "$(dirname "$0")/testutil.sh"

# check.py FILE [key=value...]: validates FILE, prints "name count" lines of facts
cat > "$tmp/check.py" <<'PY'
import json, sys, collections
d = json.load(open(sys.argv[1]))
ev = d["traceEvents"]
err = []
open_ = collections.defaultdict(list)
facts = collections.Counter()
last_ts = {}
for e in ev:
    for k in ("ph", "ts", "pid", "tid", "name"):
        if k not in e:
            err.append("missing %s in %r" % (k, e))
    ph = e.get("ph")
    facts["ph_" + ph] += 1
    if ph == "X":
        if e.get("dur", -1) < 0:
            err.append("X without dur: %r" % e)
        facts["iterations"] += 1
        facts["prefill_tokens"] += e["args"]["prefill_tokens"]
        facts["decode_tokens"] += e["args"]["decode_tokens"]
        facts["min_ts_us"] = min(facts.get("min_ts_us", 1e18), e["ts"])
        facts["max_ts_us"] = max(facts.get("max_ts_us", 0), e["ts"])
    elif ph in ("b", "e"):
        key = (e["pid"], e.get("cat"), e.get("id"))
        if e.get("cat") is None or e.get("id") is None:
            err.append("async without cat/id: %r" % e)
        if ph == "b":
            open_[key].append((e["name"], e["ts"]))
            if e["name"] == "request":
                facts["requests"] += 1
                facts["ids_mod4_nonzero"] += int(e["id"], 16) % 4 != 0
            else:
                facts["phase_" + e["name"]] += 1
        else:
            if not open_[key] or open_[key][-1][0] != e["name"]:
                err.append("unmatched e %r (open %r)" % (e, open_[key]))
                continue
            name, ts = open_[key].pop()
            if e["ts"] < ts:
                err.append("e before b: %r" % e)
for k, v in open_.items():
    if v:
        err.append("unclosed %r %r" % (k, v))
for m in err[:5]:
    print("ERROR", m)
facts["errors"] = len(err)
for k in sorted(facts):
    print(k, facts[k])
PY
fact() { awk -v k="$2" '$1 == k { print $2 }' "$1"; }

# 1. one request, hand-computed
cat > "$tmp/one.yaml" <<'Y'
name: one
model: llama-2-7b
device: a100-80g
cluster: {replicas: 1}
scheduler: fifo
cache: {name: full, max_len: 4096}
workload:
  requests: 1
  arrival: {process: poisson, rate: 1}
  lengths: {dist: fixed, prompt: 100, output: 5}
outputs: {chart: false}
Y
if "$kvsim" run "$tmp/one.yaml" -o "$tmp/one" -q --trace-out "$tmp/one.json" &&
   python3 "$tmp/check.py" "$tmp/one.json" > "$tmp/one.facts"; then
  for kv in errors=0 iterations=5 prefill_tokens=100 decode_tokens=4 requests=1 \
            phase_queued=1 phase_prefill=1 phase_decode=1 ph_X=5 ph_C=15; do
    [ "$(fact "$tmp/one.facts" "${kv%%=*}")" = "${kv#*=}" ] && ok ||
      bad "one request: ${kv%%=*} = $(fact "$tmp/one.facts" "${kv%%=*}"), expected ${kv#*=}"
  done
  [ ! -e "$tmp/one/timeline.json" ] && ok || bad "--trace-out outside DIR also wrote DIR/timeline.json"
  [ ! -e "$tmp/.one.json.tmp" ] && ok || bad "temporary left"
else
  bad "one-request run or validation failed"; cat "$tmp/one.facts"
fi

# 2. many tenants, two replicas
w=$src/workloads/tenants.yaml
set_n="--set workload.requests=300"
if "$kvsim" run "$w" -o "$tmp/ten" -q $set_n --trace-out "$tmp/ten/trace.json" &&
   python3 "$tmp/check.py" "$tmp/ten/trace.json" > "$tmp/ten.facts"; then
  [ "$(fact "$tmp/ten.facts" errors)" = 0 ] && ok || { bad "tenants: invalid trace"; head "$tmp/ten.facts"; }
  [ "$(fact "$tmp/ten.facts" requests)" = 300 ] && ok || bad "tenants: $(fact "$tmp/ten.facts" requests) requests traced, expected 300"
  iters=$(python3 -c "import csv,sys; r=list(csv.DictReader(open(sys.argv[1]))); print(r[0]['iterations'])" "$tmp/ten/summary.csv")
  [ "$(fact "$tmp/ten.facts" iterations)" = "$iters" ] && ok || bad "tenants: $(fact "$tmp/ten.facts" iterations) iteration spans, summary says $iters"
  grep -qx "file trace.json" "$tmp/ten/manifest.txt" && ok || bad "trace.json not in the manifest"
  ls -a "$tmp/ten" | grep -q '\.tmp' && bad "temporaries in the run directory" || ok
else
  bad "tenants run or validation failed"
fi

# 3. bounds
"$kvsim" run "$w" -o "$tmp/s" -q $set_n --trace-out "$tmp/s.json" --trace-sample 4 &&
  python3 "$tmp/check.py" "$tmp/s.json" > "$tmp/s.facts" || bad "sample run failed"
[ "$(fact "$tmp/s.facts" requests)" = 75 ] && [ "$(fact "$tmp/s.facts" ids_mod4_nonzero)" = 0 ] &&
  [ "$(fact "$tmp/s.facts" errors)" = 0 ] && ok || bad "--trace-sample 4: $(fact "$tmp/s.facts" requests) requests, expected 75 with ids divisible by 4"
"$kvsim" run "$w" -o "$tmp/wnd" -q $set_n --trace-out "$tmp/w.json" --trace-window 2:4 &&
  python3 "$tmp/check.py" "$tmp/w.json" > "$tmp/w.facts" || bad "window run failed"
python3 -c "import sys; f=dict(l.split() for l in open(sys.argv[1])); sys.exit(not (float(f['min_ts_us']) >= 2e6 and float(f['max_ts_us']) < 4e6 and f['errors'] == '0'))" "$tmp/w.facts" &&
  ok || bad "--trace-window 2:4: iterations outside [2, 4) s or invalid"
"$kvsim" run "$w" -o "$tmp/cap" -q $set_n --trace-out "$tmp/c.json" --trace-max-events 500 &&
  python3 "$tmp/check.py" "$tmp/c.json" > "$tmp/c.facts" || bad "max-events run failed"
n=$(python3 -c "import json,sys; print(len(json.load(open(sys.argv[1]))['traceEvents']))" "$tmp/c.json")
[ "$(fact "$tmp/c.facts" errors)" = 0 ] && [ "$n" -lt 1200 ] && [ "$n" -ge 500 ] && ok ||
  bad "--trace-max-events 500: $n events (expected 500..1200, every span closed)"

# 3b. preemptions (swap, and recompute under MLFQ): preempted phases, every pair matched
for mode in "--set scheduler.mode=swap" "--set scheduler.priority=mlfq --set scheduler.mode=recompute"; do
  # shellcheck disable=SC2086
  "$kvsim" run "$src/configs/experiments/fairness.yaml" -o "$tmp/pre" -q --set scheduler.name=preempt $mode \
    --trace-out "$tmp/pre.json" --trace-window 0:120 &&
    python3 "$tmp/check.py" "$tmp/pre.json" > "$tmp/pre.facts" || bad "preempt ($mode) run failed"
  [ "$(fact "$tmp/pre.facts" errors)" = 0 ] && [ "$(fact "$tmp/pre.facts" phase_preempted)" -gt 0 ] &&
    ok || bad "preempt ($mode): errors $(fact "$tmp/pre.facts" errors), preempted phases $(fact "$tmp/pre.facts" phase_preempted)"
done

# 4. outputs.timeline and a bad window
"$kvsim" run "$w" -o "$tmp/o" -q $set_n --set outputs.timeline=true &&
  grep -qx "file timeline.json" "$tmp/o/manifest.txt" && python3 "$tmp/check.py" "$tmp/o/timeline.json" > "$tmp/o.facts" && grep -qx "errors 0" "$tmp/o.facts" &&
  ok || bad "outputs.timeline: no valid DIR/timeline.json in the manifest"
"$kvsim" run "$w" -o "$tmp/b" -q $set_n --trace-out "$tmp/b.json" --trace-window 5:3 2> "$tmp/err"
[ $? = 2 ] && grep -q "trace-window" "$tmp/err" && [ ! -e "$tmp/b.json" ] && ok || bad "--trace-window 5:3: expected exit 2 naming the option"

# the run directory spelled another way still stages the file; a subdirectory of it is refused
(cd "$tmp" && "$kvsim" run "$w" -o o2 -q $set_n --trace-out ./o2/../o2/t.json) &&
  grep -qx "file t.json" "$tmp/o2/manifest.txt" && ok || bad "--trace-out ./DIR/../DIR/t.json not committed with the run"
"$kvsim" run "$w" -o "$tmp/o3" -q $set_n --trace-out "$tmp/o3/sub/t.json" 2> "$tmp/err"
[ $? = 2 ] && grep -q "subdirectory of the output directory" "$tmp/err" && ok || bad "--trace-out in a subdirectory of DIR: expected exit 2"

# every output operation failing in turn (KVSIM_FAIL_WRITE): exit 1 and no timeline, no
# temporary: a timeline outside DIR is renamed into place only after the run's commit
mkdir "$tmp/fw"
fw_run() { (cd "$tmp/fw" && "$kvsim" run "$w" -o d -q --set workload.requests=30 --set outputs.chart=false --trace-out t.json); }
n=$(KVSIM_FAIL_WRITE=0 fw_run 2>&1 | sed -n 's/.* \([0-9]*\) output operations.*/\1/p')
[ "${n:-0}" -gt 5 ] && ok || bad "KVSIM_FAIL_WRITE=0 counted '$n' output operations"
for i in $(seq 1 "${n:-0}"); do
  rm -rf "$tmp/fw/d" "$tmp/fw/t.json"
  KVSIM_FAIL_WRITE=$i fw_run 2> /dev/null; st=$?
  left=$(ls -A "$tmp/fw" | grep -v '^d$' | grep -v '^\.d\.lock$' | grep -v '^\.t\.json\.lock$' | tr '\n' ' ')
  [ $st = 1 ] && [ -z "$left" ] || { bad "KVSIM_FAIL_WRITE=$i: exit $st, left: $left"; break; }
done
[ "$i" = "${n:-0}" ] && ok

# 6. --trace-out onto a special file is refused (exit 2, one line naming it and what it is),
# never renamed over: a FIFO, a directory, a link to a device, a copy of /dev/full (as root);
# and a --trace-out file another kvsim holds is an error (exit 1), the holder's file untouched
mkdir "$tmp/sp" "$tmp/sp/dir"
mkfifo "$tmp/sp/fifo"
ln -s /dev/null "$tmp/sp/null"
targets=("fifo:a FIFO" "dir:a directory" "null:a character device")
if [ "$(id -u)" = 0 ] && mknod "$tmp/sp/full" c 1 7 2> /dev/null; then
  targets+=("full:a character device")
fi
for t in "${targets[@]}"; do
  f=${t%%:*} what=${t#*:}
  before=$(stat -c %F "$tmp/sp/$f")
  "$kvsim" run "$w" -o "$tmp/sp/o" -q --set workload.requests=20 --trace-out "$tmp/sp/$f" 2> "$tmp/err"
  st=$?
  [ $st = 2 ] && [ "$(wc -l < "$tmp/err")" = 1 ] && grep -q "^kvsim: $tmp/sp/$f: is $what: expected a regular file" "$tmp/err" &&
    [ "$(stat -c %F "$tmp/sp/$f")" = "$before" ] && [ ! -e "$tmp/sp/.$f.lock" ] && ok ||
    bad "--trace-out onto $what: exit $st, now $(stat -c %F "$tmp/sp/$f"): $(cat "$tmp/err")"
done
ls -A "$tmp/sp" | grep -q '\.tmp$' && bad "special files: a temporary left" || ok
echo old > "$tmp/sp/held.json"
exec 9> "$tmp/sp/.held.json.lock"
flock -n 9
"$kvsim" run "$w" -o "$tmp/sp/o" -q --set workload.requests=20 --trace-out "$tmp/sp/held.json" 2> "$tmp/err"
st=$?
exec 9>&-
[ $st = 1 ] && grep -q "another kvsim is writing it" "$tmp/err" && [ "$(cat "$tmp/sp/held.json")" = old ] && ok ||
  bad "--trace-out held by another writer: exit $st, $(cat "$tmp/err")"

# calibrate's profile (plain and --from-run) onto a FIFO: refused before a lock file is
# made beside it, exit 2, the FIFO left as it was
for form in "calibrate --model tiny -o $tmp/sp/fifo" \
	    "calibrate --from-run $tmp/sp/no-run.csv -o $tmp/sp/fifo $tmp/sp/no-settings.yaml"; do
  st=0
  # shellcheck disable=SC2086
  "$kvsim" $form > /dev/null 2> "$tmp/err" || st=$?
  if [ $st = 2 ] && grep -Eq "^kvsim: .*$tmp/sp/fifo: is a FIFO" "$tmp/err" && [ -p "$tmp/sp/fifo" ] &&
     [ ! -e "$tmp/sp/.fifo.lock" ]; then ok; else bad "$form: exit $st, $(cat "$tmp/err")"; fi
done

echo "timeline: $pass passed, $fail failed"
[ "$fail" = 0 ]
