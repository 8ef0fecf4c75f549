#!/usr/bin/env bash
# tests/fromrun_test.sh KVSIM SRC -- (meson test fromrun-e2e) `kvsim calibrate --from-run` recovers the
# perf coefficients of a run the simulator itself produced, and `validate
# --from-run` scores a profile on a run (prints the
# figures docs/calibration.md quotes).
#
# 1. simulate tests/data/fromrun/gen.yaml (800 requests, gamma arrivals cv 2,
#    lognormal lengths, Llama-2-7B on one A100-80GB) on true-device.yaml:
#    eff_bw 0.6, eff_flops 0.5, overhead 3 ms, per_seq 0 (stock: 0.83, 0.73,
#    1.6 ms, 0);
# 2. convert its requests.csv into the three run formats (CSV, JSON lines,
#    vLLM's benchmark JSON with an emoji escaped as json.dumps writes it);
# 3. calibrate from each, starting from the stock a100-80g, holding out the
#    second half; assert the coefficients and the held-out errors;
# 4. the profile loads in `kvsim run`; validate --from-run scores it; bad
#    runs exit 2 with file:line.
set -euo pipefail
KVSIM=$1
SRC=$2
D=$SRC/tests/data/fromrun
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

"$KVSIM" run "$D/gen.yaml" -o "$T/gen" --quiet
R=$T/gen/requests.csv
# canonical CSV: the columns a user would record
awk -F, 'NR == 1 { print "arrival_s,prompt_tokens,output_tokens,ttft_ms,e2e_ms"; next }
	 $4 == "completed" { printf "%s,%s,%s,%.6f,%.6f\n", $5, $8, $9, $10 * 1e3, $12 * 1e3 }' \
	"$R" > "$T/run.csv"
awk -F, 'NR > 1 && $4 == "completed" { printf "{\"arrival_s\": %s, \"prompt_tokens\": %s, \"output_tokens\": %s, \"ttft_s\": %s, \"itl_s\": %s}\n", $5, $8, $9, $10, ($9 > 1 ? $11 : 0) }' \
	"$R" > "$T/run.jsonl"
awk -F, 'NR > 1 && $4 == "completed" { n++; st[n] = $5; il[n] = $8; ol[n] = $9; tt[n] = $10; la[n] = $12 }
	 END {
	   printf "{\"backend\": \"vllm\", \"request_rate\": Infinity, \"max_concurrency\": null,\n";
	   printf " \"start_times\": ["; for (i = 1; i <= n; i++) printf "%s%.9f", (i > 1 ? ", " : ""), st[i] + 1000; printf "],\n";
	   printf " \"input_lens\": ["; for (i = 1; i <= n; i++) printf "%s%s", (i > 1 ? ", " : ""), il[i]; printf "],\n";
	   printf " \"output_lens\": ["; for (i = 1; i <= n; i++) printf "%s%s", (i > 1 ? ", " : ""), ol[i]; printf "],\n";
	   printf " \"ttfts\": ["; for (i = 1; i <= n; i++) printf "%s%s", (i > 1 ? ", " : ""), tt[i]; printf "],\n";
	   printf " \"latencies\": ["; for (i = 1; i <= n; i++) printf "%s%s", (i > 1 ? ", " : ""), la[i]; printf "],\n";
	   printf " \"generated_texts\": ["; for (i = 1; i <= n; i++) printf "%s\"ok \\ud83d\\ude00\"", (i > 1 ? ", " : ""); printf "],\n";
	   printf " \"errors\": ["; for (i = 1; i <= n; i++) printf "%s\"\"", (i > 1 ? ", " : ""); printf "]}\n";
	 }' "$R" > "$T/run.json"

check_fit() { # CSV of the fit, profile, holdout CSV
	awk -F, -v f="$1" '
	function rel(v, t) { return v / t - 1 }
	$1 == "eff_bw" && (rel($3, 0.6) > 0.03 || rel($3, 0.6) < -0.03) { print f ": eff_bw " $3 " not within 3% of 0.6"; bad = 1 }
	$1 == "eff_flops" && (rel($3, 0.5) > 0.03 || rel($3, 0.5) < -0.03) { print f ": eff_flops " $3 " not within 3% of 0.5"; bad = 1 }
	$1 == "overhead" && (rel($3, 3) > 0.10 || rel($3, 3) < -0.10) { print f ": overhead " $3 " ms not within 10% of 3 ms"; bad = 1 }
	$1 == "per_seq" && $3 > 10 { print f ": per_seq " $3 " us above 10 us (true 0)"; bad = 1 }
	END { exit bad }' "$1" || fail "coefficients not recovered from $1"
	# each interval holds its value (it is taken around the optimum reported, not a later one)
	awk -F, 'NR > 1 && NR < 6 && !($4 <= $3 && $3 <= $5) { print $1 ": " $3 " outside [" $4 ", " $5 "]"; bad = 1 }
	END { exit bad }' "$1" || fail "an interval misses its value in $1"
	awk -F, -v f="$2" '$1 == "fitted" && $3 != "mape" { lim = $3 == "mean" ? 2 : 5 }
	$1 == "fitted" && $3 != "mape" && ($6 > lim || $6 < -lim) { print f ": held-out " $2 " " $3 " error " $6 "% beyond " lim "%"; bad = 1 }
	END { exit bad }' "$2" || fail "held-out error too large in $2"
}

for fmt in csv jsonl json; do
	KVSIM_PROGRESS=1 "$KVSIM" calibrate --from-run "$T/run.$fmt" "$D/settings.yaml" -o "$T/cal-$fmt/p.yaml" \
		> "$T/cal-$fmt.txt" 2> "$T/cal-$fmt.err"
	check_fit "$T/cal-$fmt/p-fit.csv" "$T/cal-$fmt/p-holdout.csv"
	# KVSIM_PROGRESS=1, stderr a file: the fit's replays as plain lines, the first at once
	grep -q "^kvsim: calibrate: fit: replay 1 of at most 200, best cost" "$T/cal-$fmt.err" && ! grep -q $'[\r\033]' "$T/cal-$fmt.err" ||
		fail "KVSIM_PROGRESS=1: no plain progress line in: $(head -3 "$T/cal-$fmt.err")"
done
cat "$T/cal-json.txt"
grep -q "vllm-json, 800 requests" "$T/cal-json.txt" || fail "the vLLM JSON was not read as such"

# the profile runs, and validate --from-run reproduces calibrate's held-out figures
"$KVSIM" run "$D/gen.yaml" --set device="$T/cal-csv/p.yaml" -o "$T/rerun" --quiet
"$KVSIM" validate --from-run "$T/run.csv" "$D/settings.yaml" --profile "$T/cal-csv/p.yaml" \
	--holdout 0.5 -o "$T/val.csv" > "$T/val.txt"
cat "$T/val.txt"
diff <(awk -F, '$1 == "fitted" { print $2, $3, $4, $5 }' "$T/cal-csv/p-holdout.csv") \
	<(awk -F, 'NR > 1 { print $2, $3, $4, $5 }' "$T/val.csv") ||
	fail "validate --from-run --holdout 0.5 differs from calibrate's held-out table"

# --multi-start, on today's defaults (the input embedding looked up, the shipped a100-80g as the
# start): one descent from the start stalls at a cost above the true coefficients' own; the
# multi-start fit goes below it, and is deterministic.  (Its coefficients are printed, not
# asserted: docs/calibration.md "Multi-start" says why overhead is not identified within 10%.)
"$KVSIM" run "$D/gen.yaml" --set engine.embed_lookup=true -o "$T/genl" --quiet
awk -F, 'NR == 1 { print "arrival_s,prompt_tokens,output_tokens,ttft_ms,e2e_ms"; next }
	 $4 == "completed" { printf "%s,%s,%s,%.6f,%.6f\n", $5, $8, $9, $10 * 1e3, $12 * 1e3 }' \
	"$T/genl/requests.csv" > "$T/runl.csv"
L=(--set engine.embed_lookup=true --quiet)
"$KVSIM" calibrate --from-run "$T/runl.csv" "$D/settings.yaml" --set device=a100-80g "${L[@]}" -o "$T/l1/p.yaml"
"$KVSIM" calibrate --from-run "$T/runl.csv" "$D/settings.yaml" --set device=a100-80g "${L[@]}" --multi-start -o "$T/lm/p.yaml"
"$KVSIM" calibrate --from-run "$T/runl.csv" "$D/settings.yaml" --set device=a100-80g "${L[@]}" --multi-start -o "$T/lm2/p.yaml"
cmp -s "$T/lm/p-fit.csv" "$T/lm2/p-fit.csv" || fail "--multi-start gave two answers"
# the true coefficients' cost: the start's cost of a multi-start fit capped at 10 replays
"$KVSIM" calibrate --from-run "$T/runl.csv" "$D/settings.yaml" --set device="$D/true-device.yaml" "${L[@]}" \
	--multi-start --max-evals 10 -o "$T/lt/p.yaml"
field() { awk -F, '$1 == "'"$2"'" { print $2 }' "$1"; }
cost_true=$(field "$T/lt/p-fit.csv" cost_start)
cost_one=$(field "$T/l1/p-fit.csv" cost)
cost_multi=$(field "$T/lm/p-fit.csv" cost)
echo "lookup embedding, a100-80g start: cost at the truth $cost_true, one start $cost_one, multi-start $cost_multi"
paste -d, "$T/lm/p-fit.csv" "$T/l1/p-fit.csv" | awk -F, 'NR > 1 && NR < 6 { print "  " $1 ": multi-start " $3 ", one start " $9 " " $6 }'
awk -v t="$cost_true" -v o="$cost_one" 'BEGIN { exit !(o > 1.1 * t) }' ||
	fail "one start reached cost $cost_one, not above the truth's $cost_true: no stall to show"
awk -v t="$cost_true" -v m="$cost_multi" 'BEGIN { exit !(m < t) }' ||
	fail "--multi-start cost $cost_multi not below the truth's $cost_true"
set +e
"$KVSIM" validate --from-run "$T/runl.csv" "$D/settings.yaml" --multi-start 2> "$T/err"
rc=$?
set -e
[ $rc -eq 2 ] || fail "validate --multi-start: exit $rc, expected 2"

# bad runs: exit 2, file:line named
bad() { # expected message fragment, file content
	printf '%b' "$2" > "$T/bad.run"
	set +e
	"$KVSIM" calibrate --from-run "$T/bad.run" "$D/settings.yaml" -o "$T/bad/p.yaml" 2> "$T/err"
	rc=$?
	set -e
	[ $rc -eq 2 ] || fail "exit $rc, expected 2, for: $2"
	grep -q -- "$1" "$T/err" || fail "expected '$1' in: $(cat "$T/err")"
}
bad "bad.run:3: ttft_s: bad value 'x'" 'arrival_s,prompt_tokens,output_tokens,ttft_s,e2e_s\n0,10,5,0.1,0.5\n1,10,5,x,0.5\n'
bad "bad.run:1: e2e: no e2e or itl column" 'arrival_s,prompt_tokens,output_tokens,ttft_s\n0,10,5,0.1\n'
bad "bad.run:2:23: found .]. after .,.: expected another element" '{"input_lens": [1, 2],\n "output_lens": [1, 2,],\n "ttfts": [0.1, 0.2]}'
bad "bad.run:1:39: output_lens: 1 elements: expected 2" '{"input_lens": [1, 2], "output_lens": [1], "ttfts": [0.1, 0.2], "latencies": [1, 1]}'
bad "bad.run:2:68: ttft_s: bad value -1: expected a time in \[1e-06, 86400\] s" '{"arrival_s": 0, "prompt_tokens": 3, "output_tokens": 2, "ttft_s": 0.1, "e2e_s": 1}\n{"arrival_s": 1, "prompt_tokens": 3, "output_tokens": 2, "ttft_s": -1, "e2e_s": 1}\n'
# a bad element of a later array is reported where it is (not at input_lens' element), and
# latencies are bounded: a TTFT of 1e300 s is refused, naming the bound
bad "bad.run:4:22: latencies: bad value nan" '{"input_lens": [1, 2, 3],\n "output_lens": [1, 1, 1],\n "ttfts": [0.1, 0.1, 0.1],\n "latencies": [1, 1, NaN], "start_times": [0, 1, 2]}'
bad "bad.run:3:17: ttfts: bad value 1e+300: expected a time in \[1e-06, 86400\] s" '{"input_lens": [1, 2],\n "output_lens": [2, 3],\n "ttfts": [0.1, 1e300],\n "latencies": [1, 1], "start_times": [0, 1]}'
bad "bad.run:2: e2e_ms: bad value 1e+300: expected a time from the TTFT 100 to 86400000 ms" 'arrival_s,prompt_tokens,output_tokens,ttft_ms,e2e_ms\n0,10,5,100,1e300\n'

# a request beyond the model's context is named by the run's file and row, not by the
# replay's unnamed trace (/proc/self/fd/N)
printf 'arrival_s,prompt_tokens,output_tokens,ttft_s,e2e_s\n0,100,5,0.1,0.5\n1,1000000,5,0.1,0.5\n' > "$T/big.csv"
set +e
"$KVSIM" validate --from-run "$T/big.csv" "$D/settings.yaml" 2> "$T/err"
rc=$?
set -e
[ $rc -eq 2 ] || fail "validate --from-run with a request beyond the context: exit $rc, expected 2"
grep -q "^kvsim: $T/big.csv:3: tokens: request 1 has 1000000 prompt" "$T/err" || fail "expected big.csv:3 in: $(cat "$T/err")"

# an output that is a special file (a FIFO here; a device the same) is refused, not replaced
mkfifo "$T/fifo"
set +e
"$KVSIM" validate --from-run "$T/run.csv" "$D/settings.yaml" -o "$T/fifo" --quiet 2> "$T/err"
rc=$?
set -e
[ $rc -eq 2 ] && [ -p "$T/fifo" ] || fail "validate -o FIFO: exit $rc (expected 2), or the FIFO was replaced"
grep -q "is a FIFO: expected a regular file" "$T/err" || fail "no message for -o FIFO: $(cat "$T/err")"

# one writer of a profile at a time: calibrate --from-run takes the lock plain calibrate takes
# (PARENT/.NAME.lock); a second writer is refused at once, exit 1, naming the lock
mkdir -p "$T/lk"
set +e
flock "$T/lk/.p.yaml.lock" "$KVSIM" calibrate --from-run "$T/run.csv" "$D/settings.yaml" \
	-o "$T/lk/p.yaml" --max-evals 10 --quiet 2> "$T/err"
rc=$?
set -e
[ $rc -eq 1 ] || fail "calibrate --from-run under a held lock: exit $rc, expected 1"
grep -q "another kvsim is writing it (it holds $T/lk/.p.yaml.lock)" "$T/err" || fail "no lock message: $(cat "$T/err")"
[ ! -e "$T/lk/p.yaml" ] && [ ! -e "$T/lk/.p.yaml.tmp" ] || fail "a refused writer wrote"
"$KVSIM" calibrate --from-run "$T/run.csv" "$D/settings.yaml" -o "$T/lk/p.yaml" --max-evals 10 --quiet ||
	fail "calibrate --from-run after the lock was released"

# SIGTERM, SIGINT: one line, exit 128 + N, nothing left in $TMPDIR; SIGKILL: nothing left either
# (the replay's trace never has a name there)
awk 'BEGIN { srand(3); print "arrival_s,prompt_tokens,output_tokens,ttft_ms,e2e_ms"; t = 0;
	for (i = 0; i < 200000; i++) { t += -log(1 - rand()) / 6; p = int(50 + rand() * 900); o = int(5 + rand() * 300);
	  printf "%.6f,%d,%d,%.3f,%.3f\n", t, p, o, 30, 30 + o * 12 } }' > "$T/long.csv"
# a fit capped at 10 replays whose Jacobian replays (run beyond the cap for the intervals)
# found a lower cost: the intervals were once taken around that point, not the one reported
head -5001 "$T/long.csv" > "$T/short.csv"
"$KVSIM" calibrate --from-run "$T/short.csv" "$D/settings.yaml" --max-evals 10 -o "$T/ci/p.yaml" --quiet
awk -F, 'NR > 1 && NR < 6 && !($4 <= $3 && $3 <= $5) { print $1 ": " $3 " outside [" $4 ", " $5 "]"; bad = 1 }
END { exit bad }' "$T/ci/p-fit.csv" || fail "an interval misses its value in $T/ci/p-fit.csv"
mkdir "$T/tmp"
stop() { # signal, expected exit status, expected message ("" for none)
	TMPDIR=$T/tmp "$KVSIM" validate --from-run "$T/long.csv" "$D/settings.yaml" --quiet 2> "$T/err" &
	pid=$!
	for _ in $(seq 200); do # until the replay runs: its trace is open
		ls -l "/proc/$pid/fd" 2> /dev/null | grep -q "$T/tmp" && break
		sleep 0.05
	done
	kill -"$1" $pid
	set +e
	{ wait $pid; } 2> /dev/null # no "Killed" notice from the shell
	rc=$?
	set -e
	[ $rc -eq "$2" ] || fail "validate --from-run after SIG$1: exit $rc, expected $2"
	[ -z "$3" ] || grep -q "$3" "$T/err" || fail "after SIG$1: expected '$3' in: $(cat "$T/err")"
	[ -z "$3" ] || [ "$(wc -l < "$T/err")" -eq 1 ] || fail "after SIG$1: more than one line: $(cat "$T/err")"
	[ -z "$(ls -A "$T/tmp")" ] || fail "after SIG$1: left in TMPDIR: $(ls -A "$T/tmp")"
}
stop TERM 143 "interrupted by SIGTERM while replaying; no output written"
stop INT 130 "interrupted by SIGINT while replaying; no output written"
stop KILL 137 ""
# --fit-host: the host's terms with the device's, on a run simulated with a
# known host (true-host.yaml) under the vllm engine (v1: CPU + GPU in sequence)
"$KVSIM" run "$D/host-gen.yaml" -o "$T/hgen" --quiet
"$KVSIM" run "$D/host-gen.yaml" --set host="$D/zero-host.yaml" -o "$T/zgen" --quiet
for g in hgen zgen; do
	awk -F, 'NR == 1 { print "arrival_s,prompt_tokens,output_tokens,ttft_ms,e2e_ms"; next }
		 $4 == "completed" { printf "%s,%s,%s,%.6f,%.6f\n", $5, $8, $9, $10 * 1e3, $12 * 1e3 }' \
		"$T/$g/requests.csv" > "$T/$g.csv"
done
"$KVSIM" calibrate --from-run "$T/hgen.csv" "$D/host-settings.yaml" --fit-host -o "$T/hcal/p.yaml" > "$T/hcal.txt"
cat "$T/hcal.txt"
# a sync engine: eff_bw, eff_flops and the host's four (overhead and per_seq held)
[ "$(awk -F, 'NR > 1 && $6 != "" { printf "%s ", $1 }' "$T/hcal/p-fit.csv")" = \
  "eff_bw eff_flops sched sched_seq prep_token sample " ] || fail "--fit-host: not the six coefficients in p-fit.csv"
awk -F, 'NR > 1 && $6 != "" && !($4 + 0 <= $3 + 0 && $3 + 0 <= $5 + 0) { print $1 ": " $3 " outside [" $4 ", " $5 "]"; bad = 1 }
END { exit bad }' "$T/hcal/p-fit.csv" || fail "--fit-host: an interval misses its value"
# held out: the start host is 9-15% too fast; the fitted one within 3% on every mean
awk -F, '$1 == "start" && $3 == "mean" && $6 > -5 { print "start " $2 " " $6 "%: expected the start below -5%"; bad = 1 }
	 $1 == "fitted" && $3 == "mean" && ($6 > 3 || $6 < -3) { print "fitted " $2 " " $6 "% beyond 3%"; bad = 1 }
	 END { exit bad }' "$T/hcal/p-holdout.csv" || fail "--fit-host: held-out means"
grep -q "^  prep_seq: 0ns$" "$T/hcal/p-host.yaml" && grep -q "^  sched: [0-9]*ns$" "$T/hcal/p-host.yaml" ||
	fail "--fit-host: the host profile lacks its folded or fitted terms: $(cat "$T/hcal/p-host.yaml")"
# the two profiles reproduce calibrate's held-out figures, and run
"$KVSIM" validate --from-run "$T/hgen.csv" "$D/host-settings.yaml" --profile "$T/hcal/p.yaml" \
	--set host="$T/hcal/p-host.yaml" --holdout 0.5 -o "$T/hval.csv" --quiet
diff <(awk -F, '$1 == "fitted" { print $2, $3, $4, $5 }' "$T/hcal/p-holdout.csv") \
	<(awk -F, 'NR > 1 { print $2, $3, $4, $5 }' "$T/hval.csv") ||
	fail "validate --from-run with the fitted host differs from calibrate's held-out table"
"$KVSIM" run "$D/host-gen.yaml" --set device="$T/hcal/p.yaml" --set host="$T/hcal/p-host.yaml" -o "$T/hrerun" --quiet
# a host whose terms are 0, fitted alone from 0: they stay near 0
"$KVSIM" calibrate --from-run "$T/zgen.csv" "$D/host-settings.yaml" --fit-host --host-only \
	--set host="$D/zero-host.yaml" -o "$T/zcal/p.yaml" --quiet
awk -F, '$1 == "sched" && $3 > 0.01 { print "sched " $3 " ms"; bad = 1 }
	 ($1 == "sched_seq" || $1 == "prep_token" || $1 == "sample") && $3 > 0.1 { print $1 " " $3 " us"; bad = 1 }
	 END { exit bad }' "$T/zcal/p-fit.csv" || fail "--host-only from 0 on a zero host: a term left 0"
# bad input: exit 2, one clear line
bad() { # expected message, arguments
	local want=$1
	shift
	set +e
	"$KVSIM" calibrate --from-run "$T/hgen.csv" "$@" --quiet -o "$T/bad/p.yaml" 2> "$T/err"
	rc=$?
	set -e
	[ $rc -eq 2 ] || fail "calibrate $*: exit $rc, expected 2"
	grep -q -- "$want" "$T/err" || fail "calibrate $*: expected '$want' in: $(cat "$T/err")"
}
bad "runs without the host model" "$D/settings.yaml" --fit-host
bad "host_sched is set: an engine option overrides" "$D/host-settings.yaml" --fit-host --set engine.host_sched=1000
bad "host-only: expected it with --fit-host" "$D/host-settings.yaml" --host-only
# --steps: the run's engine steps (here the replay's with the true host, as validate
# --steps-out writes them) fitted instead of its requests: from the stock effs and the
# version's host defaults, every coefficient comes back (sync: overhead and per_seq held)
for g in hgen zgen; do
	h=true-host.yaml
	[ $g = hgen ] || h=zero-host.yaml
	"$KVSIM" validate --from-run "$T/$g.csv" "$D/host-settings.yaml" --set host="$D/$h" \
		--steps-out "$T/$g-steps.csv" --quiet
	"$KVSIM" calibrate --from-run "$T/$g.csv" "$D/host-settings.yaml" --set device="$D/host-start.yaml" \
		--fit-host --steps "$T/$g-steps.csv" --max-evals 1000 -o "$T/s$g/p.yaml" > "$T/s$g.txt"
done
cat "$T/shgen.txt"
awk -F, 'function off(v, t, tol) { return v / t - 1 > tol || v / t - 1 < -tol }
	$1 == "eff_bw" && off($3, 0.6, 0.01) || $1 == "eff_flops" && off($3, 0.5, 0.01) ||
	$1 == "sched" && off($3, 2, 0.02) || $1 == "prep_token" && off($3, 2, 0.02) ||
	$1 == "sched_seq" && off($3, 40, 0.05) || $1 == "sample" && off($3, 20, 0.05) { print $1 " " $3 " not recovered"; bad = 1 }
	$1 == "overhead" || $1 == "per_seq" { print $1 " fitted: a sync engine holds it"; bad = 1 }
	END { exit bad }' "$T/shgen/p-fit.csv" || fail "--steps: the true coefficients not recovered"
awk -F, '$1 == "fitted" && $3 == "mean" && ($6 > 1 || $6 < -1) { print $2 " " $6 "%"; bad = 1 }
	END { exit bad }' "$T/shgen/p-holdout.csv" || fail "--steps: held-out means beyond 1%"
awk -F, '$1 == "sched" && $3 > 0.005 { print "sched " $3 " ms"; bad = 1 }
	 ($1 == "sched_seq" || $1 == "prep_token" || $1 == "sample") && $3 > 0.05 { print $1 " " $3 " us"; bad = 1 }
	 END { exit bad }' "$T/szgen/p-fit.csv" || fail "--steps on a zero host, from the defaults: a term left 0"
# --fit-attn: where attention is a visible share of the steps (configs/calibrate's tiny
# model at fp32 on the CPU start, prefill chunks of 256 tokens), the steps of a replay on
# that device with eff_attn 0.006 give eff_attn back from the start's 0.0023 within 2%,
# inside an interval narrower than +-10% (determined); without --fit-attn it is held
C=$SRC/configs/calibrate
sed 's/^  eff_attn: .*/  eff_attn: 0.006/' "$C/cpu-start.yaml" > "$T/cpu-true.yaml"
grep -q '^  eff_attn: 0.006$' "$T/cpu-true.yaml" || fail "cpu-true.yaml: eff_attn not set"
"$KVSIM" validate --from-run "$C/cpu-runs/requests-4.csv" "$C/host-levels-cpu.yaml" \
	--set device="$T/cpu-true.yaml" --steps-out "$T/attn-steps.csv" --quiet
for a in --fit-attn ""; do
	"$KVSIM" calibrate --from-run "$C/cpu-runs/requests-4.csv" "$C/host-levels-cpu.yaml" \
		--set device="$C/cpu-start.yaml" --fit-host --steps "$T/attn-steps.csv" $a --holdout 0 \
		--max-evals 1000 -o "$T/attn$a/p.yaml" --quiet
done
cat "$T/attn--fit-attn/p-fit.csv"
awk -F, '$1 == "eff_attn" { n++; if ($3 / 0.006 - 1 > 0.02 || $3 / 0.006 - 1 < -0.02 ||
	 !($4 <= $3 && $3 <= $5 && $5 / $4 < 1.2)) { print "eff_attn " $3 " [" $4 ", " $5 "]"; bad = 1 } }
	 END { exit bad || n != 1 }' "$T/attn--fit-attn/p-fit.csv" || fail "--fit-attn: eff_attn 0.006 not recovered"
grep -q '^  eff_attn: 0.00' "$T/attn--fit-attn/p.yaml" || fail "--fit-attn: the profile does not hold eff_attn"
! grep -q '^eff_attn,' "$T/attn/p-fit.csv" || fail "eff_attn fitted without --fit-attn"
# -steps.csv: every step with the fitted profile's time, which matches the truth's here
[ "$(wc -l < "$T/attn--fit-attn/p-steps.csv")" = "$(wc -l < "$T/attn-steps.csv")" ] ||
	fail "p-steps.csv: not one row a step"
awk -F, 'NR == 1 { ok = $9 == "fitted_ms" && $10 == "rel_error"; next }
	 $10 > 1e-4 || $10 < -1e-4 { ok = 0 } END { exit !ok }' "$T/attn--fit-attn/p-steps.csv" ||
	fail "p-steps.csv: fitted_ms and rel_error not the truth's steps"
grep -q '^  eff_attn: 0.0023$' "$T/attn/p.yaml" || fail "without --fit-attn: eff_attn not the start's"
bad "fit-attn: expected it with --steps" "$D/host-settings.yaml" --fit-host --fit-attn
bad "fit-attn: expected it with --steps" "$D/host-settings.yaml" --fit-host --host-only --fit-attn \
	--steps "$T/attn-steps.csv"
printf 'n_seqs,n_decode\n1,1\n' > "$T/steps-cols.csv"
bad "steps-cols.csv:1: n_prefill_tokens: missing column" "$D/host-settings.yaml" --fit-host --steps "$T/steps-cols.csv"
sed '3s/,[0-9.]*$/,-1/' "$T/zgen-steps.csv" > "$T/steps-time.csv"
bad "steps-time.csv:3: duration: bad value '-1': expected a step time" "$D/host-settings.yaml" --fit-host --steps "$T/steps-time.csv"
awk -F, 'NR == 3 { $3 = $2 + 1 } 1' OFS=, "$T/zgen-steps.csv" > "$T/steps-dec.csv"
bad "steps-dec.csv:3: n_seqs: bad step" "$D/host-settings.yaml" --fit-host --steps "$T/steps-dec.csv"
echo "fromrun: ok"
