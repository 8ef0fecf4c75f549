#!/usr/bin/env bash
# Every published-measurement workload of configs/fidelity/ (each named in measured.csv)
# runs once with the stock profiles and completes requests: the C paths of the fidelity
# table, cheap enough for the ASan+UBSan phase.  The table itself (every metric, the
# fitted reruns, against docs/fidelity.md) is the `fidelity` test, suite `docs`.
# Usage: fidelity_runs.sh KVSIM SOURCE_DIR
set -euo pipefail
kvsim=$1 dir=$2/configs/fidelity
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
n=0 bad=0
for w in $(awk -F, 'NR > 1 && !seen[$1]++ { print $1 }' "$dir/measured.csv"); do
  n=$((n + 1))
  if ! "$kvsim" run -q "$dir/$w.yaml" -o "$tmp/$w" --set outputs.chart=false > /dev/null; then
    echo "fidelity-runs: kvsim run $w.yaml failed" >&2; bad=1; continue
  fi
  done_=$(awk -F, 'NR == 1 { for (i = 1; i <= NF; i++) h[$i] = i; next }
    $h["status"] == "completed" { c++ } END { print c + 0 }' "$tmp/$w/requests.csv")
  if [ "$done_" -eq 0 ]; then
    echo "fidelity-runs: $w.yaml completed no request" >&2; bad=1
  fi
  rm -rf "${tmp:?}/$w"
done
[ $n -gt 0 ] || { echo "fidelity-runs: no workload in $dir/measured.csv" >&2; exit 1; }
echo "fidelity-runs: $n workloads, each ran"
exit $bad
