#!/usr/bin/env bash
# kvsim's predictions against published measurements of real serving engines, as the
# Markdown table of docs/fidelity.md (docs/figures.sh writes it there and checks it).
#
# measured.csv holds one row per published figure: the workload that reproduces its setup
# (configs/fidelity/WORKLOAD.yaml, whose header cites the source), the source id (sid: rows of
# one publication share it), the metric, the value and the citation.  Each workload runs
#  - with the stock device and engine profiles ("stock": nothing fitted to these rows);
#  - cross-validated ("CV", the headline): with the coefficients of coefficients.csv as fitted
#    to every row of the other sources (fitted.csv, fold = the row's sid; fit.sh wrote it);
#  - in sample: with the coefficients fitted to every row (fold "all"), shown beside CV;
#  - the same rows under each vLLM engine at its defaults, stock profiles: the workload's engine
#    renamed `vllm` (version v1: kvsim's default engine) and `vllm-v0` (version legacy), its other
#    engine options kept (so that the default engine is compared with vllm-v0 on every row).
# The signed error kvsim / measured - 1 of each is printed.  Targets (issue 23), on every row:
# dense models at TP 1 within 15% (TPOT and ITL 10%), TP 2 to 8 and MoE models (setup marked
# "(MoE)") within 20%.  Checked on the statistic the source gives (mean or median; e2e_max,
# the last completion, for benchmark_latency's static batches; throughputs).
#
# usage: configs/fidelity/run.sh [-k KVSIM] [-w WORKLOAD]... [-s KEY=VALUE]...
#   (default build/src/kvsim, every workload; -s passes --set KEY=VALUE to every run, for
#   what-if runs such as -s device=configs/fidelity/a100-80g-nccl.yaml: docs/fidelity.md)
# Exits 0 when every row ran (missed targets are findings, not failures), 1 when a run failed
# or a metric is missing, 2 on bad usage.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib.sh"
fid_options k:w:s: "$0 [-k KVSIM] [-w WORKLOAD]... [-s KEY=VALUE]..." "$@"
cache=$tmp/cache
fid_init
extra=${sets[*]-}

# lines TAG VALUES WORKLOAD...: run1.sh lines tagged "TAG " (the -s sets and $more appended)
lines() {
  local tag=$1 vals=$2 x=$extra; shift 2
  [ -n "${more-}" ] && x="${x:+$x }$more"
  fid_lines "$vals" "$@" | awk -v t="$tag" -v x="$x" '{
    if (x != "") { n = split($0, f, "|"); $0 = f[1] "|" f[2] "|" f[3] "|" f[4] (f[4] == "" ? "" : " ") x }
    print t, $0 }'
}
ws=$(awk -F, -v sel=" ${only[*]-} " 'NR > 1 && !seen[$1]++ && (sel == "  " || index(sel, " " $1 " ")) { print $1 }' \
  "$here/measured.csv")
[ -n "$ws" ] || { echo "fidelity: no workload selected" >&2; exit 1; }
: > "$tmp/empty"
# shellcheck disable=SC2086
lines stock "$tmp/empty" $ws > "$tmp/tagged"
fid_values all > "$tmp/v.all"
[ -s "$tmp/v.all" ] || { echo "fidelity: $here/fitted.csv has no fold all (run fit.sh)" >&2; exit 1; }
# shellcheck disable=SC2086
lines insample "$tmp/v.all" $ws >> "$tmp/tagged"
for s in $(awk -F, 'NR > 1 && !seen[$2]++ { print $2 }' "$here/measured.csv"); do
  sw=$(awk -F, -v s="$s" -v sel=" $(echo $ws) " 'NR > 1 && $2 == s && !seen[$1]++ && index(sel, " " $1 " ") { print $1 }' \
    "$here/measured.csv")
  [ -n "$sw" ] || continue
  fid_values "$s" > "$tmp/v.$s"
  [ -s "$tmp/v.$s" ] || { echo "fidelity: $here/fitted.csv has no fold $s (run fit.sh)" >&2; exit 1; }
  # shellcheck disable=SC2086
  lines cv "$tmp/v.$s" $sw >> "$tmp/tagged"
done
# shellcheck disable=SC2086
more="engine.name=vllm engine.version=v1" lines ev1 "$tmp/empty" $ws >> "$tmp/tagged"
# shellcheck disable=SC2086
more="engine.name=vllm-v0 engine.version=legacy" lines ev0 "$tmp/empty" $ws >> "$tmp/tagged"
cut -d' ' -f2- "$tmp/tagged" > "$tmp/lines"
fid_run "$tmp/lines"
: > "$tmp/metrics"
while read -r tag line; do
  printf '%s\n' "$line" > "$tmp/one"
  fid_metrics "$tmp/one" | sed "s/^/$tag /" >> "$tmp/metrics"
done < "$tmp/tagged"

printf '| source | setup | TP | metric | measured | stock | error | CV | error | in-sample error | target (CV) | vllm | vllm-v0 |\n'
printf '|---|---|---|---|---:|---:|---:|---:|---:|---:|---|---:|---:|\n'
awk -F, '
  function num(v) { return v >= 10000 ? sprintf("%.0f", v) : sprintf("%.4g", v) }
  function err(k, m) { return 100 * (k / m - 1) }
  function within(e, t) { return e <= t && e >= -t }
  FNR == NR { split($0, f, " "); got[f[1] " " f[2] " " f[3]] = f[4]; if (f[3] == "failed") bad = 1
    seen[f[2]] = 1; next }
  FNR == 1 { next }
  !($1 in seen) { next }   # workload not selected
  {
    for (t = 1; t <= 5; t++) { tag = t == 1 ? "stock" : (t == 2 ? "cv" : (t == 3 ? "insample" : (t == 4 ? "ev1" : "ev0")))
      key = tag " " $1 " " $6
      if (!(key in got)) { printf "fidelity: %s (%s): no metric %s\n", $1, tag, $6 > "/dev/stderr"; bad = 1; next }
      k[t] = got[key]; e[t] = err(k[t], $7) }
    m = $7
    unit = ($6 ~ /^(ttft|tpot|itl|e2e)_/) ? " ms" : ($6 == "req_s" ? " req/s" : " tok/s")
    tol = ($4 ~ /\(MoE\)/ || $5 >= 2) ? 20 : ($6 ~ /^(tpot|itl)_/ ? 10 : 15)
    n++; for (t = 1; t <= 5; t++) met[t] += within(e[t], tol)
    cls = ($4 ~ /\(MoE\)/) ? "MoE" : ($5 >= 2 ? "dense TP 2-8" : "dense TP 1")
    cn[cls]++; cm1[cls] += within(e[1], tol); cm2[cls] += within(e[2], tol)
    worst[n] = (e[2] < 0 ? -e[2] : e[2]); wtxt[n] = sprintf("%s, %s, %s: %+.1f%%", $1, $6, $3, e[2])
    for (t = 1; t <= 5; t++) abse[t] += e[t] < 0 ? -e[t] : e[t]
    if ($6 ~ /^e2e_/) { ne2e++; for (t = 4; t <= 5; t++) ae2e[t] += e[t] < 0 ? -e[t] : e[t] }
    if (!($2 in src)) { src[$2] = 1; ns++ }
    printf "| %s | %s | %s | %s | %s%s | %s%s | %+.1f%% | %s%s | %+.1f%% | %+.1f%% | %s (%d%%) | %+.1f%% | %+.1f%% |\n", $3, $4, $5, $6,
      num(m), unit, num(k[1]), unit, e[1], num(k[2]), unit, e[2], e[3], within(e[2], tol) ? "met" : "missed", tol, e[4], e[5]
  }
  END {
    if (n) {
      printf "\n%d rows from %d sources.  Targets met: stock %d (%.0f%%), cross-validated %d (%.0f%%), in sample %d (%.0f%%).\n",
        n, ns, met[1], 100 * met[1] / n, met[2], 100 * met[2] / n, met[3], 100 * met[3] / n
      printf "Mean |error|: stock %.1f%%, cross-validated %.1f%%, in sample %.1f%%.\n",
        abse[1] / n, abse[2] / n, abse[3] / n
      printf "Same rows, each engine at its defaults (stock): vllm (V1) met %d (%.0f%%), mean |error| %.1f%% (E2E rows %.1f%%); vllm-v0 (legacy) met %d (%.0f%%), mean |error| %.1f%% (E2E rows %.1f%%).\n",
        met[4], 100 * met[4] / n, abse[4] / n, ne2e ? ae2e[4] / ne2e : 0, met[5], 100 * met[5] / n, abse[5] / n, ne2e ? ae2e[5] / ne2e : 0
      split("dense TP 1|dense TP 2-8|MoE", cl, "|")
      for (c = 1; c <= 3; c++) if (cn[cl[c]])
        printf "%s: %d rows, met stock %d, cross-validated %d.\n", cl[c], cn[cl[c]], cm1[cl[c]], cm2[cl[c]]
      printf "Worst cross-validated rows:\n"
      for (q = 1; q <= 8 && q <= n; q++) { b = 0
        for (i = 1; i <= n; i++) if (!(i in done) && (b == 0 || worst[i] > worst[b])) b = i
        done[b] = 1; printf "- %s\n", wtxt[b] }
    }
    exit bad
  }' "$tmp/metrics" "$here/measured.csv"
