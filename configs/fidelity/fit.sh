#!/usr/bin/env bash
# The global fit of kvsim's shared coefficients to every fidelity row, and its leave-one-source-
# out cross-validation; writes configs/fidelity/fitted.csv, which run.sh (docs/fidelity.md's
# table) reads.  Slow (about an hour on a loaded 2-core machine: thousands of cached runs, FID_JOBS
# at a time, default 2); not part of the tests.
#
# The coefficients are the rows of coefficients.csv (a kvsim --set key, or device.perf.KEY, with
# its bounds, scale, starting value and the workloads it applies to), all fitted at once:
# adding a coefficient is adding a row.  The objective is the mean over the sources (sid) of the
# mean over their rows of |ln(kvsim / measured)|, so that each publication weighs the same
# however many rows it gives (a run that fails or lacks the metric counts ln 20).  The search is a
# bounded coordinate search from the starting values: each coefficient in turn moves up or down
# by its step while that lowers the objective; after each pass the steps shrink (a log-scale
# coefficient's factor 2, then 1.41, 1.19..., a linear one's quarter of its range, then halves),
# and values are rounded to 3 significant digits so that the folds share cached runs.
# Fold "all" fits every row (in sample); fold S fits every row whose sid is not S, and
# predicts S's rows in run.sh: the headline error.
#
# usage: configs/fidelity/fit.sh [-k KVSIM] [-c CACHE] [-f FOLD]... [-o OUT] [-p PASSES]
#   KVSIM default build/src/kvsim; CACHE default build/fidelity-cache (runs kept across calls);
#   -f fits only the named folds ("all" or a sid) and keeps the others of OUT; OUT default
#   configs/fidelity/fitted.csv; PASSES (default 2; fitted.csv holds -p 1) the step sizes tried.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib.sh"
fid_options k:c:f:o:p: "$0 [-k KVSIM] [-c CACHE] [-f FOLD]... [-o OUT] [-p PASSES]" "$@"
fid_init

# objective VALUES SID: the objective over the rows whose sid is not SID
objective() {
  local ws
  ws=$(awk -F, -v s="$2" 'NR > 1 && $2 != s && !seen[$1]++ { print $1 }' "$here/measured.csv")
  # shellcheck disable=SC2086
  fid_lines "$1" $ws > "$tmp/lines"
  fid_run "$tmp/lines"
  fid_metrics "$tmp/lines" > "$tmp/got"
  awk -F, -v s="$2" 'FILENAME == ARGV[1] { split($0, f, " "); got[f[1] " " f[2]] = f[3]
      if (f[2] == "failed") bad[f[1]] = 1; next }
    FNR == 1 || $2 == s { next }
    { k = got[$1 " " $6]; if (!($2 in n)) ns++; n[$2]++
      t[$2] += ($1 in bad || k == "" || k <= 0) ? log(20) : (log(k / $7) < 0 ? -log(k / $7) : log(k / $7)) }
    END { for (s in n) o += t[s] / n[s]; printf "%.6f\n", o / ns }' "$tmp/got" "$here/measured.csv"
}

# sig3 X: X to 3 significant digits
sig3() { awk -v x="$1" 'BEGIN { printf "%.3g\n", x }'; }

# fit SID: prints the fitted "key value" lines of the fold without SID's rows
fit() {
  local sid=$1 i n best o key scale lo hi x step cand dir pass moved
  awk -F, 'NR > 1 { print $1, $5 }' "$here/coefficients.csv" > "$tmp/cur"
  n=$(wc -l < "$tmp/cur")
  best=$(objective "$tmp/cur" "$sid")
  echo "fit $sid: start $best" >&2
  for pass in $(seq 1 "$passes"); do
    for i in $(seq 1 "$n"); do
      IFS=, read -r key scale lo hi _ < <(sed -n "$((i + 1))p" "$here/coefficients.csv")
      for dir in up down; do
        moved=1
        while [ $moved = 1 ]; do
          moved=0
          x=$(awk -v k="$key" '$1 == k { print $2 }' "$tmp/cur")
          cand=$(awk -v x="$x" -v s="$scale" -v lo="$lo" -v hi="$hi" -v p="$pass" -v d="$dir" 'BEGIN {
            if (s == "log") { f = 2 ^ (1 / 2 ^ (p - 1)); c = (d == "up") ? x * f : x / f }
            else { st = (hi - lo) / 4 / 2 ^ (p - 1); c = (d == "up") ? x + st : x - st }
            if (c < lo) c = lo; if (c > hi) c = hi; printf "%.3g\n", c }')
          [ "$(sig3 "$x")" = "$cand" ] && break
          awk -v k="$key" -v c="$cand" '$1 == k { $2 = c } { print }' "$tmp/cur" > "$tmp/try"
          o=$(objective "$tmp/try" "$sid")
          if awk -v o="$o" -v b="$best" 'BEGIN { exit !(o < b - 1e-6) }'; then
            mv "$tmp/try" "$tmp/cur"; best=$o; moved=1
            echo "fit $sid: pass $pass $key=$cand -> $best" >&2
          fi
        done
      done
    done
  done
  echo "fit $sid: end $best" >&2
  cat "$tmp/cur"
}

sids=$(awk -F, 'NR > 1 && !seen[$2]++ { print $2 }' "$here/measured.csv")
[ ${#folds[@]} -gt 0 ] || folds=(all $sids)
new=$tmp/fitted.csv
echo "fold,key,value" > "$new"
[ -f "$out" ] && awk -F, -v keep=" ${folds[*]} " 'NR > 1 && index(keep, " " $1 " ") == 0' \
  "$out" >> "$new"
for f in "${folds[@]}"; do
  fit "$( [ "$f" = all ] && echo - || echo "$f")" | awk -v f="$f" '{ printf "%s,%s,%s\n", f, $1, $2 }' >> "$new"
done
# folds in measured.csv's order, "all" first
{ head -1 "$new"
  awk -F, 'NR == FNR { if (FNR > 1 && !seen[$2]++) o[$2] = ++n; next } FNR > 1 {
    printf "%d,%s\n", ($1 == "all" ? 0 : o[$1]), $0 }' "$here/measured.csv" "$new" |
    sort -t, -k1,1n -s | cut -d, -f2-; } > "$out"
