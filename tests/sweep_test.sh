#!/usr/bin/env bash
# End-to-end tests of `kvsim sweep` and `kvsim sweep-merge` on the small
# generated workload tests/data/sweep/base.yaml: expansion counts, -j
# independence, failing points, resume, interrupt and rerun, shards and
# merge, the capacity target (an axis's best value, or the combination of
# least cost), and the bad sweep files (tests/data/sweep/
# bad_*.yaml, each with "# expect: TEXT" and "# at: LINE" on its first two
# lines: exit status 2, the text in the message, located at FILE:LINE, and
# no output directory).
set -u
kvsim=$1
src=$2
data=$src/tests/data/sweep
. "$(dirname "$0")/testutil.sh"
rows() { tail -n +2 "$1" | wc -l; }

# --help, usage errors
"$kvsim" sweep --help | grep -q -- "--shard" && ok || bad "sweep --help"
"$kvsim" sweep-merge --help | grep -q "usage" && ok || bad "sweep-merge --help"
"$kvsim" sweep 2>/dev/null; [ $? -eq 2 ] && ok || bad "sweep without a file"
"$kvsim" sweep "$data/grid.yaml" -j 0 2>/dev/null; [ $? -eq 2 ] && ok || bad "-j 0"
"$kvsim" sweep "$data/grid.yaml" --shard 3/2 2>/dev/null; [ $? -eq 2 ] && ok || bad "--shard 3/2"
"$kvsim" sweep-merge "$tmp/m" 2>/dev/null; [ $? -eq 2 ] && ok || bad "sweep-merge without inputs"

# Expansion: 2 x 2 axes x zip of 2 x 2 seeds = 16 points; -j 1 and -j 2 agree byte for byte.
"$kvsim" sweep -q "$data/grid.yaml" -o "$tmp/g1" -j 1 >"$tmp/g1.out"; st=$?
[ $st -eq 0 ] && ok || bad "grid -j 1 exit status $st"
"$kvsim" sweep --progress "$data/grid.yaml" -o "$tmp/g2" -j 2 >/dev/null 2>"$tmp/g2.err" && ok || bad "grid -j 2"
# --progress with stderr a file: plain lines, the closing one with every point
grep -q "^kvsim: sweep: 16/16 points, 0 failed" "$tmp/g2.err" && ! grep -q $'[\r\033]' "$tmp/g2.err" && ok ||
  bad "sweep --progress on a file: $(cat "$tmp/g2.err")"
[ "$(rows "$tmp/g1/sweep.csv")" -eq 16 ] && ok || bad "grid: $(rows "$tmp/g1/sweep.csv") rows, expected 16"
[ "$(ls "$tmp/g1/points" | wc -l)" -eq 16 ] && ok || bad "grid: point directories"
cmp -s "$tmp/g1/sweep.csv" "$tmp/g2/sweep.csv" && ok || bad "sweep.csv differs between -j 1 and -j 2"
head -1 "$tmp/g1/sweep.csv" | grep -q "^point,key,scheduler.name,workload.arrival.rate,cluster.replicas,batching.max_seqs,seed,status,error,workload,requests,.*ttft_p99_s" \
  && ok || bad "grid header: $(head -1 "$tmp/g1/sweep.csv" | cut -c1-120)"
[ "$(cut -d, -f1 "$tmp/g1/sweep.csv" | tail -n +2 | tr '\n' ' ')" = "$(seq -s ' ' 0 15) " ] && ok || bad "rows not in point order"
# first axis slowest, seeds fastest
[ "$(sed -n 2p "$tmp/g1/sweep.csv" | cut -d, -f3-8)" = "fifo,5,1,64,1,ok" ] && ok || bad "point 0: $(sed -n 2p "$tmp/g1/sweep.csv" | cut -d, -f3-8)"
[ "$(sed -n 3p "$tmp/g1/sweep.csv" | cut -d, -f3-8)" = "fifo,5,1,64,2,ok" ] && ok || bad "point 1"
[ "$(sed -n 4p "$tmp/g1/sweep.csv" | cut -d, -f3-8)" = "fifo,5,2,128,1,ok" ] && ok || bad "point 2 (zip)"
[ "$(sed -n 17p "$tmp/g1/sweep.csv" | cut -d, -f3-8)" = "vtc,20,2,128,2,ok" ] && ok || bad "point 15"
[ "$(cut -d, -f2 "$tmp/g1/sweep.csv" | tail -n +2 | sort -u | grep -c '^[0-9a-f]\{16\}$')" -eq 16 ] && ok || bad "16 distinct 16-hex-digit keys"
grep -q "^capacity: cluster.replicas = 1 meets ttft_p99_s <= 0.5 at every value of the other axes (8 of 8 seeds)$" "$tmp/g1.out" && ok || bad "capacity line: $(cat "$tmp/g1.out")"
# a point equals `kvsim run` with the same overrides and seed
key=$(sed -n 4p "$tmp/g1/sweep.csv" | cut -d, -f2)
"$kvsim" run -q "$data/base.yaml" -o "$tmp/single" --seed 1 --set outputs.requests=false \
  --set scheduler.name=fifo --set workload.arrival.rate=5 --set cluster.replicas=2 --set batching.max_seqs=128 \
  && cmp -s "$tmp/single/summary.csv" "$tmp/g1/points/$key/summary.csv" && ok || bad "point differs from kvsim run"
[ ! -e "$tmp/g1/points/$key/requests.csv" ] && ok || bad "set: outputs.requests=false not applied"

# Flow values and a seed list: 3 x 2 = 6 points, all different.
"$kvsim" sweep -q "$data/flow.yaml" -o "$tmp/fl" -j 2 && ok || bad "flow sweep"
[ "$(rows "$tmp/fl/sweep.csv")" -eq 6 ] && ok || bad "flow: rows"
grep -q '^2,[0-9a-f]*,"{name: chunked, block_tokens: 32}",3,ok,' "$tmp/fl/sweep.csv" && ok || bad "flow value column: $(sed -n 4p "$tmp/fl/sweep.csv" | cut -c1-80)"
[ "$(tail -n +2 "$tmp/fl/sweep.csv" | cut -d, -f2 | sort -u | wc -l)" -eq 6 ] && ok || bad "flow keys"

# Commas and quotes in axis values, the workload name and tenant names
# (tests/data/sweep/commas.yaml): quoted CSV fields; every point runs, resume
# reads the points' summary.csv back, shards merge, kvsim plot charts it.
"$kvsim" sweep -q "$data/commas.yaml" -o "$tmp/q" -j 2 2>"$tmp/q.err" && ok || bad "commas sweep: $(cat "$tmp/q.err")"
[ "$(grep -c ',ok,,' "$tmp/q/sweep.csv")" -eq 4 ] && ok || bad "commas: not 4 ok rows: $(cut -c1-120 "$tmp/q/sweep.csv")"
grep -qF '2,e45ef0ae4b131eae,"""q \""x\"" y""","[{name: ""t,1"", share: 1}, {name: ""u \""v\"""", share: 2}]",1,ok,,"q ""x"" y",200,' "$tmp/q/sweep.csv" \
  && ok || bad "commas: point 2: $(sed -n 4p "$tmp/q/sweep.csv" | cut -c1-140)"
if command -v python3 >/dev/null; then
  python3 - "$tmp/q/sweep.csv" <<'PY' && ok || bad "commas: sweep.csv does not parse with python3's csv module"
import csv, sys
with open(sys.argv[1], newline="") as f:
    r = list(csv.reader(f))
h = r[0]
assert len(r) == 5 and all(len(x) == len(h) for x in r), [len(x) for x in r]
for x in r[1:]:
    assert x[h.index("status")] == "ok", x
    assert x[h.index("workload")] == {'"a,b"': 'a,b', '"q \\"x\\" y"': 'q "x" y'}[x[2]], x
PY
fi
"$kvsim" sweep "$data/commas.yaml" -o "$tmp/q" -j 2 >"$tmp/q.out" && grep -q "4 points (0 run, 4 already done)" "$tmp/q.out" \
  && ok || bad "commas: resume: $(cat "$tmp/q.out")"
"$kvsim" sweep -q "$data/commas.yaml" -o "$tmp/q1" -j 2 --shard 1/2 >/dev/null &&
  "$kvsim" sweep -q "$data/commas.yaml" -o "$tmp/q2" -j 2 --shard 2/2 >/dev/null &&
  "$kvsim" sweep-merge "$tmp/qm" "$tmp/q2" "$tmp/q1" && cmp -s "$tmp/qm/sweep.csv" "$tmp/q/sweep.csv" \
  && ok || bad "commas: merged shards differ from the whole"
if command -v gnuplot >/dev/null; then
  "$kvsim" plot "$tmp/q" --metric throughput_tok_s >/dev/null && [ -s "$tmp/q/sweep-throughput_tok_s.svg" ] &&
    grep -qF '[{name: "t,1", share: 1}, {name: "u \"v\"", share: 2}]' "$tmp/q/sweep-throughput_tok_s.svg" &&
    grep -qF '"q \"x\" y"' "$tmp/q/sweep-throughput_tok_s.svg" && ok || bad "commas: kvsim plot (labels of quoted axis values)"
  "$kvsim" plot "$tmp/q" --x name --by workload.tenants >/dev/null && ok || bad "commas: kvsim plot --x name"
  [ -z "$(find "$tmp/q" -maxdepth 1 -name '.*tmp')" ] && ok || bad "commas: plot left temporaries"
fi

# A target where points failed: the groups that cannot be judged say so, with why, counted
# apart from misses; a group that meets is still chosen
"$kvsim" sweep -q "$data/cannot_judge.yaml" -o "$tmp/cj" -j 2 > "$tmp/cj.out" 2>/dev/null; st=$?
[ $st -eq 1 ] && ok || bad "cannot_judge: exit status $st"
grep -qx "capacity: no value of memory.share meets ttft_p99_s <= 100 (0 misses, 2 cannot be judged)" "$tmp/cj.out" &&
  grep -qx "  cannot judge at memory.share = 0.9 (scheduler.name = nope: a seed failed)" "$tmp/cj.out" &&
  grep -qx "  at scheduler.name = fifo: memory.share = 0.9 (1 of 1 seed; ttft_p99_s [0-9.e-]*)" "$tmp/cj.out" &&
  grep -qx "  cannot judge at scheduler.name = fifo, memory.share = 0.01 (a seed failed)" "$tmp/cj.out" &&
  grep -qx "  at scheduler.name = nope: no value of memory.share meets the target (0 misses, 2 cannot be judged)" "$tmp/cj.out" &&
  ! grep -q "^capacity: no value of memory.share meets ttft_p99_s <= 100$" "$tmp/cj.out" &&
  ok || bad "cannot_judge: $(cat "$tmp/cj.out")"

# A special file where the sweep writes sweep.csv (or another of its files) is refused before
# the first point: exit 2, one line naming it, no point run, the FIFO left a FIFO
mkdir -p "$tmp/spc"
mkfifo "$tmp/spc/sweep.csv"
"$kvsim" sweep -q "$data/grid.yaml" -o "$tmp/spc" -j 1 > /dev/null 2> "$tmp/spc.err"; st=$?
[ $st -eq 2 ] && [ "$(wc -l < "$tmp/spc.err")" -eq 1 ] &&
  grep -q "^kvsim: $tmp/spc/sweep.csv: is a FIFO: expected a regular file" "$tmp/spc.err" &&
  [ ! -e "$tmp/spc/points" ] && [ -p "$tmp/spc/sweep.csv" ] && ok ||
  bad "sweep.csv a FIFO: exit $st, $(cat "$tmp/spc.err")"

# Failing points: recorded with their message, the others complete, exit status 1.
"$kvsim" sweep -q "$data/fail.yaml" -o "$tmp/f" -j 2 2>"$tmp/f.err"; st=$?
[ $st -eq 1 ] && ok || bad "failing sweep exit status $st"
grep -q "4 of 6 points failed" "$tmp/f.err" && ok || bad "failure count line: $(cat "$tmp/f.err")"
[ "$(rows "$tmp/f/sweep.csv")" -eq 6 ] && ok || bad "fail: rows"
[ "$(grep -c ',ok,,' "$tmp/f/sweep.csv")" -eq 2 ] && ok || bad "fail: 2 ok rows"
grep -q "^2,[0-9a-f]*,nope,0.9,7,error,\".*unknown scheduler 'nope'.*\",*$" "$tmp/f/sweep.csv" && ok || bad "fail: bad scheduler row"
grep -q "^1,[0-9a-f]*,fifo,0.01,7,error,.*expected more memory" "$tmp/f/sweep.csv" && ok || bad "fail: small pool row"
nsum=$(($(head -1 "$tmp/f/sweep.csv" | tr ',' '\n' | wc -l) - 7))
[ "$(grep ',error,' "$tmp/f/sweep.csv" | grep -cE "[^,],{$nsum}\$")" -eq 4 ] && ok || bad "error rows: summary columns not empty"

# Resume: delete 3 points, rerun; exactly those run again and sweep.csv is unchanged.
cp -r "$tmp/g1" "$tmp/r"
gone=$(tail -n +2 "$tmp/r/sweep.csv" | cut -d, -f2 | sed -n '2p;7p;16p')
for k in $gone; do rm -rf "$tmp/r/points/$k"; done
rm "$tmp/r/sweep.csv"
touch "$tmp/marker"
sleep 1
"$kvsim" sweep "$data/grid.yaml" -o "$tmp/r" -j 2 >"$tmp/r.out" && ok || bad "resume"
grep -q "16 points (3 run, 13 already done)" "$tmp/r.out" && ok || bad "resume line: $(cat "$tmp/r.out")"
newer=$(cd "$tmp/r/points" && find . -name summary.csv -newer "$tmp/marker" | cut -d/ -f2 | sort | tr '\n' ' ')
[ "$newer" = "$(echo $gone | tr ' ' '\n' | sort | tr '\n' ' ')" ] && ok || bad "resume reran '$newer', expected '$gone'"
cmp -s "$tmp/g1/sweep.csv" "$tmp/r/sweep.csv" && ok || bad "resumed sweep.csv differs"

# Interrupt: SIGINT after the first point finished; exit 130, whole rows only; the rerun completes.
"$kvsim" sweep -q "$data/slow.yaml" -o "$tmp/i" -j 2 2>"$tmp/i.err" &
pid=$!
for _ in $(seq 600); do
  [ -n "$(ls "$tmp"/i/points/*/summary.csv 2>/dev/null)" ] && break
  sleep 0.05
done
kill -INT $pid
wait $pid; st=$?
[ $st -eq 130 ] && ok || bad "interrupted sweep exit status $st"
n=$(rows "$tmp/i/sweep.csv")
[ "$n" -ge 1 ] && [ "$n" -lt 8 ] && ok || bad "interrupted sweep.csv has $n rows"
w=$(head -1 "$tmp/i/sweep.csv" | tr ',' '\n' | wc -l)
[ "$(awk -F, -v w="$w" 'NF != w' "$tmp/i/sweep.csv" | wc -l)" -eq 0 ] && ok || bad "a partial row"
[ "$(find "$tmp/i" -name '*.tmp' | wc -l)" -eq 0 ] && ok || bad "temporaries left"
"$kvsim" sweep -q "$data/slow.yaml" -o "$tmp/i" -j 2 && ok || bad "rerun after interrupt"
"$kvsim" sweep -q "$data/slow.yaml" -o "$tmp/c" -j 2 && ok || bad "clean slow sweep"
cmp -s "$tmp/i/sweep.csv" "$tmp/c/sweep.csv" && ok || bad "interrupted + rerun differs from a clean run"

# Shards: 1/2 + 2/2 merged equal the whole; merging twice keeps each key once.
"$kvsim" sweep -q "$data/grid.yaml" -o "$tmp/s1" -j 2 --shard 1/2 >/dev/null && ok || bad "shard 1/2"
"$kvsim" sweep -q "$data/grid.yaml" -o "$tmp/s2" -j 2 --shard 2/2 >/dev/null && ok || bad "shard 2/2"
[ "$(rows "$tmp/s1/sweep.csv")" -eq 8 ] && ok || bad "shard 1/2 rows"
[ "$(tail -n +2 "$tmp/s2/sweep.csv" | cut -d, -f1 | tr '\n' ' ')" = "1 3 5 7 9 11 13 15 " ] && ok || bad "shard 2/2 points"
"$kvsim" sweep-merge "$tmp/m" "$tmp/s2" "$tmp/s1" "$tmp/s2" && ok || bad "sweep-merge"
cmp -s "$tmp/m/sweep.csv" "$tmp/g1/sweep.csv" && ok || bad "merged shards differ from the whole"
"$kvsim" sweep-merge "$tmp/m2" "$tmp/s1" "$tmp/f" 2>/dev/null; st=$?
[ $st -eq 2 ] && ok || bad "merge of different headers: exit status $st"

# SLO capacity over seeds (slo.yaml: 3 replica counts x 3 seeds, two conditions). The expected
# answers are recomputed here from sweep.csv: per replica count the mean and the 95% interval
# mean +- t s / sqrt(3), t = t(0.975, 2) = 4.302652729749464; <= is judged on the upper end, >= on
# the lower; --target-mean on the mean.
"$kvsim" sweep "$data/slo.yaml" -o "$tmp/slo" -j 2 >"$tmp/slo.out" && ok || bad "slo sweep: $(cat "$tmp/slo.out")"
"$kvsim" sweep "$data/slo.yaml" -o "$tmp/slo" -j 2 --target-mean >"$tmp/slom.out" && ok || bad "slo sweep --target-mean"
expect_best() { # MODE: ci or mean
  awk -F, -v mode="$1" '
    NR == 1 { for (i = 1; i <= NF; i++) { if ($i == "ttft_p99_s") a = i; if ($i == "slo_attainment") b = i; if ($i == "cluster.replicas") r = i }; next }
    { n[$r]++; sa[$r] += $a; qa[$r] += $a * $a; sb[$r] += $b; qb[$r] += $b * $b }
    END {
      best = ""
      for (k in n) {
        ma = sa[k] / n[k]; mb = sb[k] / n[k]
        ha = 4.302652729749464 * sqrt((qa[k] - n[k] * ma * ma) / (n[k] - 1)) / sqrt(n[k])
        hb = 4.302652729749464 * sqrt((qb[k] - n[k] * mb * mb) / (n[k] - 1)) / sqrt(n[k])
        if (hb != hb) hb = 0
        ja = mode == "mean" ? ma : ma + ha; jb = mode == "mean" ? mb : mb - hb
        if (ja <= 0.13 && jb >= 0.95 - 1e-12 && (best == "" || k + 0 < best + 0)) best = k
      }
      print best
    }' "$tmp/slo/sweep.csv"
}
want=$(expect_best ci)
grep -q "^capacity: cluster.replicas = $want meets ttft_p99_s <= 0.13 and slo_attainment >= 0.95 (3 of 3 seeds; ttft_p99_s " "$tmp/slo.out" \
  && ok || bad "slo capacity (expected $want): $(cat "$tmp/slo.out")"
want=$(expect_best mean)
grep -q "^capacity: cluster.replicas = $want meets .* (3 of 3 seeds;" "$tmp/slom.out" && grep -q "judged on the mean" "$tmp/slom.out" \
  && ok || bad "slo capacity --target-mean (expected $want): $(cat "$tmp/slom.out")"
# sweep_stats.csv: the mean and interval of ttft_p99_s for 2 replicas, recomputed
got=$(awk -F, 'NR == 1 { for (i = 1; i <= NF; i++) if ($i == "ttft_p99_s_ci95_hi") c = i } $1 == 2 { print $(c - 2), $c }' "$tmp/slo/sweep_stats.csv")
calc=$(awk -F, 'NR == 1 { for (i = 1; i <= NF; i++) { if ($i == "ttft_p99_s") a = i; if ($i == "cluster.replicas") r = i }; next }
  $r == 2 { n++; s += $a; q += $a * $a } END { m = s / n; printf "%.6g %.6g\n", m, m + 4.302652729749464 * sqrt((q - n * m * m) / (n - 1)) / sqrt(n) }' "$tmp/slo/sweep.csv")
awk -v g="$got" -v c="$calc" 'BEGIN { split(g, x, " "); split(c, y, " "); exit !(x[1] > 0 && (x[1] - y[1])^2 < (1e-5 * y[1])^2 && (x[2] - y[2])^2 < (1e-5 * y[2])^2) }' \
  && ok || bad "sweep_stats.csv ttft_p99_s at 2 replicas '$got', recomputed '$calc'"
# pareto.csv: gpus = replicas (tp 1); lower is better on both, so the front is every point
# whose p99 TTFT beats every cheaper one, sorted by gpus; no axis outside the front: one front, "all"
[ "$(head -1 "$tmp/slo/pareto.csv")" = "cluster.replicas,gpus,ttft_p99_s,front" ] && ok || bad "pareto.csv header"
awk -F, 'NR > 1 { if ($1 != $2 || (NR > 2 && !($3 < prev))) bad = 1; prev = $3 } END { exit bad || NR < 2 }' "$tmp/slo/pareto.csv" \
  && ok || bad "pareto.csv: $(cat "$tmp/slo/pareto.csv")"
grep -q "^pareto: [0-9] of 3 configurations on the gpus / ttft_p99_s front (1 front:" "$tmp/slo.out" && ok || bad "pareto line"
awk -F, 'NR > 1 && $4 != "all" { bad = 1 } END { exit bad }' "$tmp/slo/pareto.csv" && ok || bad "pareto.csv: one front named all"
# target.csv (of the last run, --target-mean): the conditions, and the replica count the capacity
# line names as the chosen point
want=$(expect_best mean)
[ "$(cat "$tmp/slo/target.csv")" = "kind,metric,op,limit,cluster.replicas
condition,ttft_p99_s,<=,0.13,
condition,slo_attainment,>=,0.95,
chosen,cluster.replicas,,,$want" ] && ok || bad "target.csv: $(cat "$tmp/slo/target.csv")"
# the sweep chart of a target metric draws the condition and circles the chosen point
if command -v gnuplot > /dev/null; then
  "$kvsim" plot "$tmp/slo" --metric ttft_p99_s > /dev/null && grep -q "target: TTFT p99 &lt;= 0.13 s" "$tmp/slo/sweep-ttft_p99_s.svg" &&
    grep -q "cheapest replicas meeting the target" "$tmp/slo/sweep-ttft_p99_s.svg" && ok || bad "sweep chart: target line and chosen point"
  "$kvsim" plot "$tmp/slo" --metric throughput_tok_s > /dev/null && ! grep -q "target:" "$tmp/slo/sweep-throughput_tok_s.svg" &&
    ok || bad "sweep chart: a target line on a metric without a condition"
fi
# A Pareto front per load: replicas x rate; each rate has its own front, named in the front column,
# and no front mixes two rates. A percentile SLO in the base is drawn on its metric's chart.
cat > "$tmp/pf.yaml" <<Y
base: $data/base.yaml
axes: {cluster.replicas: [1, 2], workload.arrival.rate: [20, 70]}
set: {slo: {ttft: 0.5s, ttft_p99: 0.2s}, outputs: {requests: false}}
pareto: [gpus, ttft_p99_s]
Y
"$kvsim" sweep "$tmp/pf.yaml" -o "$tmp/pf" -j 2 >"$tmp/pf.out" && ok || bad "pareto per load: $(cat "$tmp/pf.out")"
grep -q "configurations on the gpus / ttft_p99_s fronts (2 fronts: one per value" "$tmp/pf.out" && ok || bad "pareto fronts line: $(cat "$tmp/pf.out")"
[ "$(head -1 "$tmp/pf/pareto_all.csv")" = "cluster.replicas,workload.arrival.rate,gpus,ttft_p99_s,on_front,front" ] && ok || bad "pareto_all.csv header"
awk -F, 'NR > 1 { if ($6 != "workload.arrival.rate = " $2) bad = 1; n[$6]++ } END { exit bad || length(n) != 2 || n["workload.arrival.rate = 20"] != 2 }' "$tmp/pf/pareto_all.csv" \
  && ok || bad "pareto_all.csv fronts: $(cat "$tmp/pf/pareto_all.csv")"
# at each rate, 2 replicas beat 1 on p99 TTFT only if faster: the front holds 2 GPUs always (it is never worse
# at the same load here) and 1 GPU (the cheapest): both rows on each front, sorted by gpus
awk -F, 'NR > 1 { f[$5]++; if (prev_f == $5 && !($3 > prev_g)) bad = 1; prev_f = $5; prev_g = $3 } END { exit bad }' "$tmp/pf/pareto.csv" \
  && ok || bad "pareto.csv sorted by gpus within a front: $(cat "$tmp/pf/pareto.csv")"
if command -v gnuplot > /dev/null; then
  [ -s "$tmp/pf/pareto.png" ] && ok || bad "pareto.png"
  "$kvsim" plot "$tmp/pf" --metric ttft_p99_s > /dev/null && grep -q "SLO: TTFT p99 &lt;= 0.2 s" "$tmp/pf/sweep-ttft_p99_s.svg" &&
    ok || bad "sweep chart: the base's percentile SLO"
fi
"$kvsim" sweep -q "$data/grid.yaml" -o "$tmp/g1" -j 2 --pareto gpus,ttft_p99_s >"$tmp/gp.out"
grep -q "pareto: no result: 'gpus' is not a summary.csv column" "$tmp/gp.out" && ok || bad "pareto without slo: $(cat "$tmp/gp.out")"
"$kvsim" sweep "$data/grid.yaml" -o "$tmp/g1" --pareto gpus 2>"$tmp/p.err"; st=$?
[ $st -eq 2 ] && grep -q "expected two columns" "$tmp/p.err" && ok || bad "--pareto gpus: $st $(cat "$tmp/p.err")"

# maximize: the highest rate whose single seed keeps slo_attainment >= 0.9, recomputed from sweep.csv.
"$kvsim" sweep "$data/goodput.yaml" -o "$tmp/gp" -j 2 >"$tmp/gp.out" && ok || bad "goodput sweep: $(cat "$tmp/gp.out")"
want=$(awk -F, 'NR == 1 { for (i = 1; i <= NF; i++) { if ($i == "slo_attainment") a = i; if ($i == "workload.arrival.rate") r = i }; next }
  $a >= 0.9 && $r + 0 > best + 0 { best = $r } END { print best }' "$tmp/gp/sweep.csv")
[ -n "$want" ] && grep -q "^capacity: workload.arrival.rate = $want meets slo_attainment >= 0.9 (1 of 1 seed; slo_attainment " "$tmp/gp.out" \
  && ok || bad "maximize (expected $want): $(cat "$tmp/gp.out")"

# Bad sweep files: exit 2, FILE:LINE, the expected text, no output directory.
for f in "$data"/bad_*.yaml; do
  name=$(basename "$f")
  expect=$(sed -n 's/^# expect: //p' "$f")
  at=$(sed -n 's/^# at: //p' "$f")
  "$kvsim" sweep "$f" -o "$tmp/bad" 2>"$tmp/bad.err"; st=$?
  [ $st -eq 2 ] && ok || bad "$name: exit status $st"
  grep -qF -- "$expect" "$tmp/bad.err" && ok || bad "$name: '$expect' not in: $(cat "$tmp/bad.err")"
  if [ "$at" = "--set" ]; then loc="kvsim: --set:1:"; else loc="kvsim: $f:$at:"; fi
  grep -qF -- "$loc" "$tmp/bad.err" && ok || bad "$name: '$loc' not in: $(cat "$tmp/bad.err")"
  [ "$(wc -l <"$tmp/bad.err")" -eq 1 ] && ok || bad "$name: more than one line"
  [ ! -e "$tmp/bad" ] && ok || bad "$name: output directory created"
done

# The metrics a target may name are the summary.csv columns (less the workload name):
# the sweep's list, printed by a typo, matches a run's header exactly.
# (a run off memory.model share adds the engines' KV capacity columns at the end)
# (and slo: the SLO columns, cluster.groups the fleet's cost)
"$kvsim" run -q "$data/base.yaml" -o "$tmp/hdr" --set memory.model=vllm --set 'slo={ttft: 1s}' \
  --set 'cluster={groups: [{replicas: 1}]}' >/dev/null 2>&1
want=$(head -n 1 "$tmp/hdr/summary.csv" | cut -d, -f2- | sed 's/,/, /g')
"$kvsim" sweep "$data/bad_metric.yaml" -o "$tmp/bad" 2>"$tmp/bad.err"
got=$(sed -n 's/.*expected one of: //p' "$tmp/bad.err")
[ -n "$want" ] && [ "$got" = "$want" ] && ok || bad "target metrics '$got' differ from summary.csv columns '$want'"

# A target minimizing a summary column (docs/sweeps.md): the cheapest fleet of two replica
# groups meeting the conditions; maximized, the dearest; a name neither an axis nor a column: exit 2
cat > "$tmp/fleet.yaml" <<EOF
base: $src/workloads/hetero.yaml
axes:
  cluster.groups[0].replicas: [1, 2]
  cluster.groups[1].replicas: [1, 2]
set: {workload.requests: 200, outputs.chart: false, outputs.requests: false}
target: {meet: "ttft_p99_s <= 100", minimize: cost_usd_per_hour}
EOF
"$kvsim" sweep -q "$tmp/fleet.yaml" -o "$tmp/fleet" > "$tmp/fleet.out" &&
  grep -qx "cheapest: cost_usd_per_hour 10.3109 at cluster.groups\[0\].replicas = 1, cluster.groups\[1\].replicas = 1 meets ttft_p99_s <= 100 (1 of 1 seed; ttft_p99_s [0-9.e-]*)" "$tmp/fleet.out" &&
  grep -qx "chosen,cost_usd_per_hour,min,10.3109,1,1" "$tmp/fleet/target.csv" && ok ||
  bad "cheapest fleet: $(cat "$tmp/fleet.out" "$tmp/fleet/target.csv")"
sed 's/minimize: cost_usd_per_hour/maximize: cost_usd_per_hour/' "$tmp/fleet.yaml" > "$tmp/fleet-max.yaml"
"$kvsim" sweep -q "$tmp/fleet-max.yaml" -o "$tmp/fleet-max" > "$tmp/fleet-max.out" &&
  grep -q "^best: cost_usd_per_hour 20.6218 at cluster.groups\[0\].replicas = 2, cluster.groups\[1\].replicas = 2 meets" "$tmp/fleet-max.out" && ok ||
  bad "dearest fleet: $(cat "$tmp/fleet-max.out")"
sed 's/minimize: cost_usd_per_hour/minimize: dollars/' "$tmp/fleet.yaml" > "$tmp/fleet-bad.yaml"
"$kvsim" sweep -q "$tmp/fleet-bad.yaml" -o "$tmp/fleet-bad" 2> "$tmp/fleet-bad.err"
[ $? -eq 2 ] && grep -q "fleet-bad.yaml:6:.*'dollars' is not an axis of the sweep nor a summary.csv column" "$tmp/fleet-bad.err" && ok ||
  bad "minimize: dollars: $(cat "$tmp/fleet-bad.err")"

# A device without a list price (a30): the combinations meeting the target with it are named as
# left out, with the way to give a price; the priced one is chosen
sed 's/cluster.groups\[1\].replicas: \[1, 2\]/cluster.groups[1].device: [a30, h100-80g]/' "$tmp/fleet.yaml" > "$tmp/fleet-a30.yaml"
"$kvsim" sweep -q "$tmp/fleet-a30.yaml" -o "$tmp/fleet-a30" > "$tmp/fleet-a30.out" &&
  grep -q "^cheapest: cost_usd_per_hour [0-9.]* at cluster.groups\[0\].replicas = 1, cluster.groups\[1\].device = h100-80g meets" "$tmp/fleet-a30.out" &&
  grep -qx "  2 combinations meeting it left out: cost_usd_per_hour has no value there (a group's device has no list price: \`kvsim list devices\` says which; set cluster.groups\[i\].cost_per_gpu_hour)" "$tmp/fleet-a30.out" && ok ||
  bad "unpriced device: $(cat "$tmp/fleet-a30.out")"

echo "$pass passed, $fail failed"
[ $fail -eq 0 ]
