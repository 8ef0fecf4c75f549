#!/usr/bin/env bash
# Macro-stepping is exact: every output file of a run is byte-identical with
# and without --exact-steps (engine.h, docs/benchmarks.md).  The runs:
#   - every run workload of workloads/ (shortened), under every engine, every
#     scheduler, and under fifo every cache model;
#   - every real trace of ../shared/traces through default.yaml's lengths
#     (shortened), under every engine and cache model with fifo, and under
#     every scheduler with the default cache;
#   - bench/million.yaml (20,000 requests) with full and chunked under
#     vllm-v0 and vllm, and 64 replicas of Azure conversations (the fleet
#     benchmark's shape, shortened);
#   - several tenants: tests/data/macro/tenants.yaml (three tenants of
#     power-of-two weights and distinct priorities, batches that fill) under
#     every engine, scheduler and cache model, preempt's variants (mlfq,
#     segments, aging, swap), and bench/million-tenants.yaml (eight tenants,
#     20,000 requests) under every scheduler with vllm-v0 and vllm;
#   - memory-bound and saturated: bench/million.yaml at 80 req/s (5,000
#     requests), where waiting requests are refused memory at most steps,
#     under vllm-v0, vllm (no prefix cache) and sglang with full and chunked,
#     and under vtc (one tenant); chunked with offload (swap, serial and
#     overlapped copies), also under tests/data/macro/tenants.yaml with vtc;
#   - the prefix-load router (workloads/kv-routing.yaml, in the first group
#     too): on 70 replicas (the engine's tree) under every engine, its dynamo
#     and llm-d modes, queue and KV-utilisation terms, and the fleet at 1,000 replicas;
#   - multi-turn sessions: workloads/sessions-chat.yaml under every engine and
#     scheduler, sessions-agent.yaml under every engine, and the Mooncake
#     synthetic trace's prefix chains with session affinity;
#   - the client's concurrency limit: workloads/default.yaml with max_concurrency
#     under every engine and scheduler, workloads/closed-loop.yaml (users with
#     think time) under every engine, groups.yaml and a disaggregated fleet;
#   - a windowed model: Gemma-2-9B with its window cut to 200 tokens (so
#     contexts pass it), under every engine and cache model;
#   - autoscaling: workloads/autoscale-diurnal.yaml compressed to minutes
#     (replicas start, serve, drain and go off) under every engine and
#     scheduler, every cache under fifo, each policy, round-robin; and the
#     fleet benchmark's 64 replicas growing to 96 (the router's tree);
#   - tiers below the pool (workloads/tiers.yaml with small tiers, 2,000
#     requests): every engine with layer-wise and blocking loads and with a
#     remote tier per replica, and every scheduler (1,000 requests);
#   - replica groups: workloads/groups.yaml (two models, three groups) runs
#     above; here its groups also mix engines, schedulers and caches (the
#     second group sglang, the third another scheduler or cache model), and
#     workloads/hetero.yaml (A100 and H100 groups, weight auto) loaded, with
#     the H100 group under every engine;
#   - prefill/decode disaggregation: tests/data/macro/tenants.yaml on 1
#     prefill + 2 decode replicas over 5 GB/s layer-wise links under every
#     engine and scheduler with full, chunked and shared, and
#     bench/million.yaml saturated on 2 + 2 sharing one 2 GB/s link;
#     workloads/autoscale-pd.yaml (prefill and decode groups each autoscaled)
#     in 20 minutes under every engine with either decode placement;
#   - vLLM 0.6's multi-step scheduling: configs/fidelity's vLLM 0.6.0 rows
#     (num_scheduler_steps 10), and n = 4 under every scheduler.
# That is the full matrix (--full; `meson test --suite slow macro-full`).  By
# default (the e2e test `macro`) a covering subset runs instead, so that the
# test costs a third as much: workloads/default.yaml and the Azure
# conversation trace keep every engine x scheduler and engine x cache pair;
# every other workload and trace, and tests/data/macro/tenants.yaml's engine x
# scheduler x cache cube, run the cells whose indices sum to a multiple of 3
# (each scheduler and each cache model under one engine per workload, a
# different one from one workload to the next, so every engine x scheduler
# and engine x cache pair still runs on several workloads), plus every cell
# the checks below name; bench/million-tenants.yaml runs 5,000 requests
# instead of 20,000, and the tiers' runs under vllm-v0 and vllm 1,000 instead of
# 2,000 (all tiers' runs took a third of the test's CPU time at 2,000; at 1,000
# blocks still go down to every tier, the remote tier drops some, each tier is
# hit and read back; sglang first hits the CPU tier beyond 1,500).  Everything
# else runs as in the full matrix.
# Under AddressSanitizer (a sanitized KVSIM, found as fault_test.sh finds it, or --lean)
# a leaner subset runs: the sanitizers look for memory errors on the paths, which the
# default subset's byte-identity runs of the plain build already compare, cell by cell.  A
# run of the default subset stays when its label names something no earlier run of its
# group named (the group is the label's first part: w, t, mt, pd, tiers, ...; a workload,
# trace, engine, cache model or variant counts within its group, a scheduler once over
# all groups), or when a check below names it; bench/million-tenants.yaml runs 1,000
# requests (every scheduler still takes macro steps there, checked).  So every workload,
# trace and feature runs at least once, every feature under every engine, both ways, under
# the sanitizers, in about 40% of the default subset's CPU time.
# Compared: every *.csv the run writes (requests, timeseries, summary with
# its event count, tenants, autoscale, tiers).  Also checked: macro steps did run (the
# KVSIM_MACRO_STATS line) in the fifo runs, and in every scheduler's
# multi-tenant runs, so the comparison is not vacuous; with memory-refused
# waiters (fifo and vtc, full, vllm-v0 and vllm) most events are macro steps; sglang,
# quantized, sparse and the windowed model take them.
# usage: tests/macro_test.sh KVSIM SOURCE_DIR [-j JOBS] [--full | --lean]; exits 77 without traces.
set -euo pipefail
usage="usage: $0 KVSIM SOURCE_DIR [-j JOBS] [--full | --lean]"
[ $# -ge 2 ] || { echo "$usage" >&2; exit 2; }
kvsim=$(realpath "$1")
src=$(realpath "$2")
shift 2
jobs=2 full=0 lean=0
nm -D "$kvsim" 2>/dev/null | grep -q __asan_init && lean=1
ldd "$kvsim" 2>/dev/null | grep -q libasan && lean=1
while [ $# -gt 0 ]; do
  case $1 in
  -j) jobs=$2; shift 2 ;;
  --full) full=1; lean=0; shift ;;
  --lean) lean=1; shift ;;
  *) echo "$usage" >&2; exit 2 ;;
  esac
done
traces="$src/../shared/traces"
[ -d "$traces" ] || { echo "no $traces: skipped"; exit 77; }
engines=(vllm-v0 vllm sglang)
scheds=(fifo drf wdrf vtc preempt priority)
caches=(full chunked quantized sparse shared)
# the runs the checks at the end name (their labels as pair() files them): macro steps in
# every one; in the memory-refused three (fifo and vtc, full, vllm-v0 and vllm) most events
majority="msat_vllm-v0_full msat_vllm_full msat_vtc"
stepped="$(for sc in "${scheds[@]}"; do echo "mt_vllm-v0_${sc}_chunked mtm_vllm-v0_$sc mtm_vllm_$sc"; done)
  msat_vllm-v0_chunked msat_vllm_chunked msat_sglang_full msat_sglang_chunked w_default_sglang_fifo
  t_AzureLLMInferenceTrace_conv_csv_sglang_fifo_full w_default_vllm-v0_fifo_quantized
  w_default_vllm-v0_fifo_sparse win_vllm-v0_full win_vllm-v0_chunked win_vllm-v0_quantized
  win_vllm-v0_sparse win_sglang_shared off_false off_true off_mt_false off_mt_true
  pd_mt_vllm-v0_fifo_full pd_mt_vllm_fifo_chunked pd_msat_vllm-v0 aspd_vllm-v0_least-kv
  aspd_vllm_round-robin ms_sglang060-vllm-8b-a100-r8
  cc_vllm-v0_fifo cc_vllm_fifo closed_vllm-v0 closed_vllm"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$tmp/o" "$tmp/r"
gw="$tmp/gemma-w200.yaml" # a windowed model whose window short requests pass
sed 's/^sliding_window: 4096$/sliding_window: 200/' "$src/configs/models/gemma-2-9b.yaml" > "$gw"
grep -q '^sliding_window: 200$' "$gw" || { echo "macro: no window in $gw" >&2; exit 1; }

# cell ALL I J...: whether a matrix cell runs: always under --full or when ALL is 1, else when
# the indices sum to a multiple of 3 (a Latin-square rotation over the 3 engines)
cell() {
  local all=$1 sum=0 i
  shift
  for i in "$@"; do sum=$((sum + i)); done
  [ $full = 1 ] || [ "$all" = 1 ] || [ $((sum % 3)) = 0 ]
}

# pair LABEL WORKLOAD [kvsim run options...]: runs both ways, compares every CSV
pair() {
  local label=$1 w=$2 o="$tmp/o/$(tr '/ =.' '____' <<<"$1")" f n
  shift 2
  for m in macro exact; do
    local x=()
    [ $m = exact ] && x=(--exact-steps)
    KVSIM_MACRO_STATS=1 "$kvsim" run -q "$w" -o "$o.$m" --set outputs.chart=false "$@" "${x[@]}" \
      2>"$o.$m.err" >/dev/null || { echo "FAIL: $label ($m): $(cat "$o.$m.err")"; return 1; }
  done
  n=0
  for f in "$o.exact"/*.csv; do
    n=$((n + 1))
    cmp -s "$f" "$o.macro/$(basename "$f")" ||
      { echo "FAIL: $label: $(basename "$f") differs with --exact-steps"; diff "$f" "$o.macro/$(basename "$f")" | head -4; return 1; }
  done
  [ $n -ge 3 ] || { echo "FAIL: $label: only $n CSV files"; return 1; }
  sed -n 's/^kvsim: macro steps: \([0-9]*\) of \([0-9]*\) .*/\1 \2/p' "$o.macro.err" > "$tmp/r/$(basename "$o")"
  rm -rf "$o.macro" "$o.exact"
}

{
  wi=0
  for w in "$src"/workloads/*.yaml; do
    n=$(basename "$w" .yaml)
    grep -q '^axes:' "$w" && continue # a sweep file: its base workloads run here
    grep -q 'validate-cuda\|calibrate' <<<"$n" && continue # need a device or a run log
    short="--set workload.requests=300"
    all=0
    [ "$n" = default ] && all=1
    for ei in "${!engines[@]}"; do
      e=${engines[ei]}
      for si in "${!scheds[@]}"; do
        sc=${scheds[si]}
        cell $all $wi $ei $si && echo "pair w/$n/$e/$sc $w $short --set engine=$e --set scheduler.name=$sc"
      done
      for ci in "${!caches[@]}"; do
        c=${caches[ci]}
        cell $all $wi $ei $ci && echo "pair w/$n/$e/fifo/$c $w $short --set engine=$e --set cache=$c --set scheduler.name=fifo"
      done
    done
    wi=$((wi + 1))
  done
  ti=0
  for t in "$traces"/*.csv "$traces"/*.jsonl; do
    b=$(basename "$t")
    all=0
    [ "$b" = AzureLLMInferenceTrace_conv.csv ] && all=1
    for ei in "${!engines[@]}"; do
      e=${engines[ei]}
      for ci in "${!caches[@]}"; do
        c=${caches[ci]}
        cell $all $ti $ei $ci &&
          echo "pair t/$b/$e/fifo/$c $src/workloads/default.yaml --set workload.requests=300 --set workload.lengths.trace=$t --set engine=$e --set cache=$c --set scheduler.name=fifo"
      done
      for si in 1 2 3 4 5; do
        sc=${scheds[si]}
        cell $all $ti $ei $si &&
          echo "pair t/$b/$e/$sc $src/workloads/default.yaml --set workload.requests=300 --set workload.lengths.trace=$t --set engine=$e --set scheduler.name=$sc"
      done
    done
    ti=$((ti + 1))
  done
  for e in vllm-v0 vllm; do
    for c in full chunked; do
      echo "pair million/$e/$c $src/bench/million.yaml --set workload.requests=20000 --set engine=$e --set cache=$c"
    done
  done
  echo "pair fleet64 $src/bench/fleet.yaml --set workload.requests=20000 --set cluster.replicas=64 --set workload.arrival.rate=160"
  echo "pair fleet1000 $src/bench/fleet.yaml --set workload.requests=30000 --set cluster.replicas=1000 --set workload.arrival.rate=2500"
  kv="$src/workloads/kv-routing.yaml" # the prefix-load router: its tree path (70 replicas), scan and dynamo modes
  for e in "${engines[@]}"; do
    echo "pair kvr/$e/70 $kv --set workload.requests=600 --set engine=$e --set cluster.replicas=70"
  done
  echo "pair kvr/dynamo $kv --set workload.requests=600 --set cluster.router.mode=dynamo"
  echo "pair kvr/llm-d $kv --set workload.requests=600 --set cluster.router.mode=llm-d --set cluster.router.prefix_weight=3 --set cluster.router.queue_weight=2"
  echo "pair kvr/load $kv --set workload.requests=600 --set cluster.router.queue_weight=500 --set cluster.router.kv_weight=20000"
  echo "pair kvr/fleet1000 $src/bench/fleet.yaml --set workload.requests=30000 --set workload.arrival.rate=2500 --set cluster.router=prefix-load"
  mt="$src/tests/data/macro/tenants.yaml"
  mtm_requests=5000
  [ $full = 0 ] || mtm_requests=20000
  [ $lean = 0 ] || mtm_requests=1000
  for ei in "${!engines[@]}"; do
    e=${engines[ei]}
    for si in "${!scheds[@]}"; do
      sc=${scheds[si]}
      for ci in "${!caches[@]}"; do
        c=${caches[ci]}
        all=0
        [ "$e/$c" = vllm-v0/chunked ] && all=1 # checked below
        cell $all $ei $si $ci && echo "pair mt/$e/$sc/$c $mt --set engine=$e --set scheduler.name=$sc --set cache=$c"
      done
    done
  done
  for v in priority=mlfq segment_tokens=64 aging=2s mode=swap; do
    echo "pair mt/preempt-$v $mt --set scheduler.name=preempt --set scheduler.$v"
  done
  for e in vllm-v0 vllm; do
    for sc in "${scheds[@]}"; do
      echo "pair mtm/$e/$sc $src/bench/million-tenants.yaml --set workload.requests=$mtm_requests --set engine=$e --set scheduler.name=$sc"
    done
  done
  for e in vllm-v0 "vllm --set engine.prefix_caching=false" sglang; do
    for c in full chunked; do
      echo "pair msat/${e%% *}/$c $src/bench/million.yaml --set workload.requests=5000 --set workload.arrival.rate=80 --set engine.name=$e --set cache=$c"
    done
  done
  echo "pair msat/vtc $src/bench/million.yaml --set workload.requests=5000 --set workload.arrival.rate=80 --set scheduler.name=vtc"
  for ov in false true; do # an offloading cache: preempted requests swap out and back in (\' passes xargs)
    echo "pair off/$ov $src/bench/million.yaml --set workload.requests=5000 --set workload.arrival.rate=80 --set \\'cache={name: chunked, offload: true, overlap: $ov}\\'"
    echo "pair off/mt/$ov $src/tests/data/macro/tenants.yaml --set engine=vllm-v0 --set scheduler.name=vtc --set \\'cache={name: chunked, offload: true, overlap: $ov}\\'"
  done
  # prefill/decode disaggregation (docs/cluster.md): transfers' arrivals cut decode replicas' runs
  for ei in "${!engines[@]}"; do
    e=${engines[ei]}
    for si in "${!scheds[@]}"; do
      sc=${scheds[si]}
      pdc=(full chunked shared)
      for ci in 0 1 2; do
        c=${pdc[ci]}
        all=0
        [ "$e/$sc" = vllm-v0/fifo ] || [ "$e/$sc/$c" = vllm/fifo/chunked ] && all=1 # checked below
        cell $all $ei $si $ci || continue
        echo "pair pd/mt/$e/$sc/$c $mt --set engine=$e --set scheduler.name=$sc --set cache=$c --set cluster.replicas=3 --set cluster.prefill_replicas=1 --set \\'cluster.kv_transfer={bandwidth: 5GB/s, layerwise: true, placement: least-kv}\\'"
      done
    done
    echo "pair pd/msat/$e $src/bench/million.yaml --set workload.requests=5000 --set workload.arrival.rate=80 --set engine=$e --set cluster.replicas=4 --set cluster.prefill_replicas=2 --set \\'cluster.kv_transfer={bandwidth: 2GB/s, topology: shared, placement: round-robin}\\'"
  done
  for e in "${engines[@]}"; do # sessions: closed-loop turns, and a trace's prefix chains
    for sc in "${scheds[@]}"; do
      echo "pair sess/$e/$sc $src/workloads/sessions-chat.yaml --set workload.requests=100 --set engine=$e --set scheduler.name=$sc"
    done
    echo "pair sess-agent/$e $src/workloads/sessions-agent.yaml --set workload.requests=40 --set engine=$e"
    echo "pair chains/$e $src/workloads/mooncake-synthetic.yaml --set workload.requests=300 --set engine=$e --set cluster.router=session-affinity --set workload.arrival.sessions=prefix-chains"
  done
  # the client's concurrency limit (sim/gate.h): vllm bench serve --max-concurrency over a
  # Poisson stream, and a closed loop of users with think time, under every engine and
  # scheduler; a limit on replica groups and on a disaggregated fleet
  for e in "${engines[@]}"; do
    for sc in "${scheds[@]}"; do
      echo "pair cc/$e/$sc $src/workloads/default.yaml --set workload.requests=400 --set workload.arrival.rate=20 --set workload.arrival.max_concurrency=12 --set engine=$e --set scheduler.name=$sc"
    done
    echo "pair closed/$e $src/workloads/closed-loop.yaml --set workload.requests=300 --set engine=$e"
  done
  echo "pair cc/groups $src/workloads/groups.yaml --set workload.requests=400 --set workload.arrival.max_concurrency=16"
  echo "pair cc/pd $src/tests/data/macro/tenants.yaml --set workload.requests=400 --set workload.arrival.max_concurrency=10 --set cluster.replicas=3 --set cluster.prefill_replicas=1 --set \\'cluster.kv_transfer={bandwidth: 5GB/s}\\'"
  for e in "${engines[@]}"; do
    for c in "${caches[@]}"; do
      echo "pair win/$e/$c $src/workloads/default.yaml --set workload.requests=300 --set model=$gw --set engine=$e --set cache=$c"
    done
  done
  # autoscaling (docs/cluster.md): the diurnal example compressed into 10 minutes, decisions
  # every 2 s, cold starts of a few seconds, so replicas start, serve, drain and go off; every
  # engine and scheduler, every cache under fifo; and 64 to 96 replicas (the router's tree)
  as="--set workload.requests=2000 --set workload.duration=0 --set workload.arrival.rate=20 --set workload.arrival.period=10min --set workload.arrival.peak_at=5min --set autoscale.interval=2s --set autoscale.window=4s --set autoscale.cooldown_down=10s --set autoscale.start_time=3s --set autoscale.up=6 --set autoscale.down=2"
  for e in "${engines[@]}"; do
    for sc in "${scheds[@]}"; do echo "pair as/$e/$sc $src/workloads/autoscale-diurnal.yaml $as --set engine=$e --set scheduler.name=$sc"; done
    for c in "${caches[@]:1}"; do echo "pair as/$e/fifo/$c $src/workloads/autoscale-diurnal.yaml $as --set engine=$e --set cache=$c"; done
  done
  for p in queue/2/0.5 kv_util/0.2/0.1 slo/0.8/0.95; do
    IFS=/ read -r pol up down <<< "$p"
    echo "pair as/$pol $src/workloads/autoscale-diurnal.yaml $as --set autoscale.policy=$pol --set autoscale.up=$up --set autoscale.down=$down"
  done
  echo "pair as/rr $src/workloads/autoscale-diurnal.yaml $as --set cluster.router=round-robin"
  # a group of its own beside a static one (cluster.groups[1].autoscale), both routers
  for r in round-robin least-outstanding-tokens; do
    echo "pair as/groups/$r $src/tests/fuzz/corpus/workload/autoscale-groups.yaml --set workload.requests=3000 --set cluster.router=$r"
  done
  # prefill and decode groups each autoscaled (workloads/autoscale-pd.yaml, 20 minutes): decode
  # replicas start, take KV once warm, drain with transfers on their way; every engine, both placements
  aspd="--set workload.duration=20min --set workload.arrival.period=20min --set workload.arrival.peak_at=10min"
  for e in "${engines[@]}"; do
    for pl in least-kv round-robin; do
      echo "pair aspd/$e/$pl $src/workloads/autoscale-pd.yaml $aspd --set engine=$e --set cluster.kv_transfer.placement=$pl"
    done
  done
  echo "pair asfleet $src/bench/fleet.yaml --set workload.requests=20000 --set cluster.replicas=64 --set workload.arrival.rate=160 --set \\'autoscale={min: 64, max: 96, policy: concurrency, up: 3, down: 1, interval: 2s, window: 4s, cooldown_down: 5s, start_time: 2s}\\'"
  # tiers below the pool, small enough that blocks go down, are dropped and load back (tiers.csv compared too)
  tiers_short=1000 # vllm-v0, vllm: every tier still takes blocks down and is hit, remote drops
  [ $full = 0 ] || tiers_short=2000
  small="--set cache.tier_cpu_bytes=4GiB --set cache.tier_ssd_bytes=16GiB --set cache.tier_remote_bytes=32GiB"
  for e in "${engines[@]}"; do
    tiers_requests=$tiers_short
    [ $e != sglang ] || tiers_requests=2000 # its CPU tier is first hit between 1,500 and 2,000
    for l in layerwise blocking; do
      echo "pair tiers/$e/$l $src/workloads/tiers.yaml --set workload.requests=$tiers_requests --set engine=$e --set cache.tier_load=$l $small"
    done
    echo "pair tiers/$e/local $src/workloads/tiers.yaml --set workload.requests=$tiers_requests --set engine=$e --set cache.tier_remote_shared=false $small"
  done
  for sc in "${scheds[@]}"; do
    echo "pair tiers/sched/$sc $src/workloads/tiers.yaml --set workload.requests=1000 --set scheduler.name=$sc $small"
  done
  gr="$src/workloads/groups.yaml"
  echo "pair groups/tiers $gr --set workload.requests=1000 --set engine=vllm --set memory.kv_tokens=20000 --set \\'cluster.groups[0].cache={name: shared, system_prompt_tokens: 1024, prefix_block_tokens: 16, request_blocks: true, tier_cpu_bytes: 1GiB, tier_remote_bytes: 4GiB}\\' --set \\'cluster.groups[2].cache={name: shared, system_prompt_tokens: 512, prefix_block_tokens: 16, tier_ssd_bytes: 64GiB, tier_remote_bytes: 16GiB, tier_load: blocking}\\'"
  for sc in "${scheds[@]}"; do
    echo "pair groups/mix/$sc $gr --set workload.requests=400 --set cluster.groups[1].engine=sglang --set \\'cluster.groups[1].memory={model: sglang}\\' --set cluster.groups[2].scheduler=$sc"
  done
  for c in "${caches[@]}"; do
    echo "pair groups/cache/$c $gr --set workload.requests=400 --set cluster.groups[0].engine=vllm --set cluster.groups[2].cache=$c"
  done
  for m in tokens dynamo llm-d; do # the prefix-load router within each group's range
    echo "pair kvr/groups/$m $gr --set workload.requests=400 --set cluster.groups[0].engine=vllm --set cluster.groups[2].cache=shared --set \\'cluster.router={name: prefix-load, mode: $m}\\'"
  done
  for e in "${engines[@]}"; do # a heterogeneous fleet, weight auto, one group's engine varied
    echo "pair hetero/$e $src/workloads/hetero.yaml --set workload.requests=600 --set workload.arrival.rate=60 --set cluster.groups[1].engine=$e"
  done
  # vLLM 0.6's multi-step scheduling (engine_vllm.c: waiting requests wait for the pass to end):
  # the fidelity rows that run it, at their rates and offline, and at n = 4 under every scheduler
  for w in "$src"/configs/fidelity/sglang060-vllm-*.yaml; do
    echo "pair ms/$(basename "$w" .yaml) $w --set workload.requests=600"
  done
  for sc in "${scheds[@]}"; do
    echo "pair ms/sched/$sc $src/configs/fidelity/sglang060-vllm-8b-a100-r8.yaml --set workload.requests=600 --set engine.num_scheduler_steps=4 --set scheduler.name=$sc"
  done
} > "$tmp/jobs"
if [ $lean = 1 ]; then # the leaner subset (above): a run stays when it brings a new name or is checked
  awk -v checked="$stepped $majority" -v scheds="${scheds[*]}" '
    BEGIN { n = split(checked, c, /[ \n]+/); for (i = 1; i <= n; i++) keep[c[i]] = 1
            n = split(scheds, c, " "); for (i = 1; i <= n; i++) sched[c[i]] = 1 }
    { name = $2; gsub(/[\/ =.]/, "_", name); n = split($2, p, "/"); new = !(p[1] in seen)
      seen[p[1]] = 1
      for (i = 2; i <= n; i++) { k = p[i] in sched ? p[i] : p[1] "|" p[i]; if (!(k in seen)) new = 1; seen[k] = 1 }
      if (new || name in keep) print }' "$tmp/jobs" > "$tmp/jobs.lean"
  mv "$tmp/jobs.lean" "$tmp/jobs"
fi

export -f pair
export kvsim tmp
fail=0
xargs -P "$jobs" -I{} bash -c '{}' < "$tmp/jobs" || fail=1
[ $fail -eq 0 ] || { echo "macro: some runs differ or failed" >&2; exit 1; }
runs=$(ls "$tmp/r" | wc -l)
used=$(cat "$tmp"/r/* | awk '$1 > 0 { n++ } END { print n + 0 }')
steps=$(cat "$tmp"/r/* | awk '{ s += $1 } END { print s + 0 }')
# fifo under vllm-v0 or vllm with full or chunked must take macro steps somewhere
[ "$used" -ge 10 ] || { echo "macro: only $used of $runs runs took macro steps" >&2; exit 1; }
# every scheduler takes macro steps with several tenants (vllm-v0, chunked; million-tenants),
# and so do sglang, quantized, sparse, the windowed model, offload, disaggregation, ...
for l in $stepped; do
  read -r st ev < "$tmp/r/$l"
  [ "$st" -gt 0 ] || { echo "macro: no macro steps in $l" >&2; exit 1; }
done
# memory-refused waiters: the run goes on (before, about 5% of these events were macro steps)
for l in $majority; do
  read -r st ev < "$tmp/r/$l"
  [ $((2 * st)) -gt "$ev" ] || { echo "macro: $l: only $st macro steps of $ev events" >&2; exit 1; }
done
set="covering subset; --full for every cell"
[ $full = 0 ] || set=full
[ $lean = 0 ] || set="lean subset under the sanitizers; the plain build runs the covering subset"
echo "macro ($set): $runs runs byte-identical with --exact-steps; $used took macro steps ($steps iterations)"
