#!/usr/bin/env bash
# End-to-end tests of the parallel layouts and the GPU profiles (docs/perf-model.md,
# "Parallelism"): every shipped device profile runs a small workload, pipeline stages
# raise the KV capacity (each GPU holds half the layers' weights and KV), tensor
# parallelism over PCIe costs more than over NVLink on the same GPU, and bad layout or
# interconnect keys exit 2 naming the key.
set -u
kvsim=$1
src=$2
. "$(dirname "$0")/testutil.sh"

cat > "$tmp/w.yaml" <<'YAML'
name: parallel
engine: vllm
model: llama-2-7b
device: a100-80g
seed: 3
memory:
  model: vllm
workload:
  requests: 40
  arrival:
    process: poisson
    rate: 2
  lengths:
    dist: lognormal
    prompt_mean: 200
    prompt_sigma: 1
    prompt_max: 1024
    output_mean: 100
    output_sigma: 1
    output_max: 512
outputs:
  sample_interval: 0
  chart: false
YAML

# summary column NAME of run DIR
col() { awk -F, -v c="$2" 'NR == 1 { for (i = 1; i <= NF; i++) h[$i] = i } NR == 2 { print $h[c] }' "$1/summary.csv"; }
run() { local out=$1; shift; "$kvsim" run -q "$tmp/w.yaml" -o "$tmp/$out" "$@" 2>"$tmp/$out.err"; }

# every device profile runs (llama-2-7b fits one GPU of each)
for dev in $("$kvsim" list devices | awk 'NR > 1 { print $1 }'); do
  if run "d-$dev" --set device="$dev" && [ "$(col "$tmp/d-$dev" completed)" = 40 ]; then ok
  else bad "device $dev: $(cat "$tmp/d-$dev.err")"; fi
done
[ "$pass" -ge 11 ] && ok || bad "expected at least 11 device profiles, ran $pass"

# pipeline: 2 stages more than double the KV tokens (weights per GPU halve too)
run pp1 --set device=l4 && run pp2 --set device=l4 --set cluster.pipeline_parallel=2 || bad "pp runs"
c1=$(col "$tmp/pp1" kv_capacity_tokens) c2=$(col "$tmp/pp2" kv_capacity_tokens)
awk -v a="$c1" -v b="$c2" 'BEGIN { exit !(b > 2 * a) }' && ok || bad "pp2 capacity $c2 vs pp1 $c1"
# one request at a time: a single micro-batch leaves the pipeline a bubble, so a token
# takes both stages plus the activation sends (no faster than one GPU); under load the
# micro-batches overlap and prefill-heavy steps get faster
one=(--set workload.requests=3 --set workload.arrival.rate=0.01)
run pp1s --set device=l4 "${one[@]}" && run pp2s --set device=l4 --set cluster.pipeline_parallel=2 "${one[@]}" || bad "pp runs"
tpot_sum() { awk -F, 'NR == 1 { for (i = 1; i <= NF; i++) h[$i] = i; next } { s += $h["tpot_s"] } END { printf "%.9f\n", s }' "$1/requests.csv"; }
t1=$(tpot_sum "$tmp/pp1s") t2=$(tpot_sum "$tmp/pp2s")
awk -v a="$t1" -v b="$t2" 'BEGIN { exit !(b > a && b < 1.05 * a) }' && ok || bad "pp2 single-request tpot $t2 vs pp1 $t1"
t1=$(col "$tmp/pp1" e2e_p50_s) t2=$(col "$tmp/pp2" e2e_p50_s)
awk -v a="$t1" -v b="$t2" 'BEGIN { exit !(b < a) }' && ok || bad "pp2 e2e under load $t2 not below pp1 $t1"

# TP 2 on H100 PCIe (pcie-p2p, 48 GB/s) is slower than on the same GPU with an NVLink bridge
sed 's/^interconnect: pcie-p2p.*/interconnect: nvlink/; s/^interconnect_busbw:.*/interconnect_busbw: 116/; s/^name: h100-pcie/name: h100-pcie-nvl/' \
  "$src/configs/devices/h100-pcie.yaml" > "$tmp/h100-nvl.yaml"
run tp-pcie --set device=h100-pcie --set cluster.tensor_parallel=2 &&
  run tp-nvl --set device="$tmp/h100-nvl.yaml" --set cluster.tensor_parallel=2 || bad "tp runs: $(cat "$tmp"/tp-*.err)"
t1=$(col "$tmp/tp-pcie" tpot_p50_s) t2=$(col "$tmp/tp-nvl" tpot_p50_s)
awk -v a="$t1" -v b="$t2" 'BEGIN { exit !(a > b) }' && ok || bad "tp2 pcie tpot $t1 not above nvlink $t2"

# bad keys: exit 2, the key named
run badpp --set cluster.pipeline_parallel=0; st=$?
[ $st -eq 2 ] && grep -q pipeline_parallel "$tmp/badpp.err" && ok || bad "pipeline_parallel 0: status $st $(cat "$tmp/badpp.err")"
run badep --set cluster.expert_parallel=100; st=$?
[ $st -eq 2 ] && grep -q expert_parallel "$tmp/badep.err" && ok || bad "expert_parallel 100: status $st"
sed 's/^interconnect: pcie-p2p.*/interconnect: infiniband/' "$src/configs/devices/l4.yaml" > "$tmp/badlink.yaml"
run badlink --set device="$tmp/badlink.yaml"; st=$?
[ $st -eq 2 ] && grep -q "badlink.yaml:[0-9]*:[0-9]*.*unknown interconnect 'infiniband'" "$tmp/badlink.err" && ok ||
  bad "bad interconnect: status $st $(cat "$tmp/badlink.err")"
grep -v '^interconnect_busbw' "$src/configs/devices/l4.yaml" > "$tmp/nobusbw.yaml"
run nobusbw --set device="$tmp/nobusbw.yaml"; st=$?
[ $st -eq 2 ] && grep -q "interconnect_busbw" "$tmp/nobusbw.err" && ok || bad "missing busbw: status $st"

# bus bandwidth per GPU count: a slow entry for 2 GPUs slows TP 2 only (4 GPUs name the
# scalar again); a bad count or a
# table on a datasheet link is an input error naming the key
sed 's/^interconnect_busbw:.*/&\ninterconnect_busbw_by_gpus: {2: 1, 4: 370}/' "$src/configs/devices/h100-80g.yaml" > "$tmp/h100-t2.yaml"
run tp2-tab --set device="$tmp/h100-t2.yaml" --set cluster.tensor_parallel=2 &&
  run tp2-ref --set device=h100-80g --set cluster.tensor_parallel=2 &&
  run tp4-tab --set device="$tmp/h100-t2.yaml" --set cluster.tensor_parallel=4 &&
  run tp4-ref --set device=h100-80g --set cluster.tensor_parallel=4 || bad "busbw table runs: $(cat "$tmp"/tp?-*.err)"
t1=$(col "$tmp/tp2-ref" tpot_p50_s) t2=$(col "$tmp/tp2-tab" tpot_p50_s)
awk -v a="$t1" -v b="$t2" 'BEGIN { exit !(b > a) }' && ok || bad "busbw 1 GB/s at 2 GPUs: tpot $t2 not above $t1"
cmp -s "$tmp/tp4-ref/requests.csv" "$tmp/tp4-tab/requests.csv" && ok || bad "the 2-GPU entry changed TP 4"
sed 's/^interconnect_busbw:.*/&\ninterconnect_busbw_by_gpus: {9: 100}/' "$src/configs/devices/h100-80g.yaml" > "$tmp/badtab.yaml"
run badtab --set device="$tmp/badtab.yaml"; st=$?
[ $st -eq 2 ] && grep -q "badtab.yaml:[0-9]*:[0-9]*.*bad GPU count '9'" "$tmp/badtab.err" && ok || bad "busbw table key 9: status $st $(cat "$tmp/badtab.err")"
sed 's/^interconnect_bandwidth:.*/&\ninterconnect_busbw_by_gpus: {2: 66}/' "$src/configs/devices/a100-80g.yaml" > "$tmp/dstab.yaml"
run dstab --set device="$tmp/dstab.yaml"; st=$?
[ $st -eq 2 ] && grep -q "interconnect_busbw_by_gpus needs an interconnect type" "$tmp/dstab.err" && ok ||
  bad "datasheet busbw table: status $st $(cat "$tmp/dstab.err")"

# the engine's side: executor ray adds its per-step cost at TP 2 and nothing at TP 1;
# custom all-reduce off (NCCL only) changes a TP 2 run on NVLink
run ray2 --set device=h100-80g --set cluster.tensor_parallel=2 --set engine.executor=ray &&
  run ray1 --set device=h100-80g --set engine.executor=ray && run mp1 --set device=h100-80g &&
  run car0 --set device=h100-80g --set cluster.tensor_parallel=2 --set engine.custom_allreduce=off ||
  bad "engine option runs: $(cat "$tmp"/ray?.err "$tmp"/mp1.err "$tmp"/car0.err)"
t1=$(col "$tmp/tp2-ref" tpot_p50_s) t2=$(col "$tmp/ray2" tpot_p50_s)
awk -v a="$t1" -v b="$t2" 'BEGIN { d = b - a; exit !(d > 0.000270 && d < 0.000300) }' && ok ||
  bad "executor ray at tp 2: tpot $t2 vs mp $t1"
cmp -s "$tmp/ray1/requests.csv" "$tmp/mp1/requests.csv" && ok || bad "executor ray changed TP 1"
cmp -s "$tmp/car0/requests.csv" "$tmp/tp2-ref/requests.csv" && bad "custom_allreduce off changed nothing" || ok
run badcar --set engine.custom_allreduce=nccl; st=$?
[ $st -eq 2 ] && grep -q "custom_allreduce" "$tmp/badcar.err" && ok || bad "custom_allreduce nccl: status $st"

echo "parallel: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
