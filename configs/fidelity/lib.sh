# Shared by configs/fidelity/run.sh and fit.sh (sourced): the fidelity rows, the
# coefficients applied to a workload, and cached runs through run1.sh.
#
# Set before sourcing: here (this directory).  fid_options then sets kvsim, cache and the
# scripts' options, and tmp (scratch, removed on exit).
# Files: measured.csv (workload,sid,source,setup,tp,metric,measured,citation; rows of one
# publication share a sid, the unit of cross-validation), coefficients.csv (key, scale lin|log,
# lower, upper, initial, unit, scope, source: a --set key of kvsim, or device.perf.KEY written
# into the device profile, optionally KEY@TAG so that one key has a value per scope; scope an awk
# regex over fid_init's descriptor that selects the workloads the coefficient applies to), fitted.csv (fold,key,value: fold "all" is
# the fit to every row, fold S the fit to every row whose sid is not S).

# fid_options SPEC USAGE ARGS...: parses ARGS with getopts SPEC (a subset of k:c:f:o:p:w:s:),
# prints "usage: USAGE" and exits 2 on a bad option, and sets
#   kvsim (-k, absolute; default build/src/kvsim), cache (-c; default build/fidelity-cache),
#   folds (-f, array), out (-o; default fitted.csv), passes (-p; default 2),
#   only (-w, array), sets (-s, array),
# and tmp, a scratch directory removed when the script exits.
fid_options() {
  local spec=$1 usage=$2 opt OPTIND=1
  shift 2
  kvsim=$here/../../build/src/kvsim
  cache=$here/../../build/fidelity-cache
  out=$here/fitted.csv
  passes=2
  folds=() only=() sets=()
  while getopts "$spec" opt; do
    case $opt in
      k) kvsim=$OPTARG ;;
      c) cache=$OPTARG ;;
      f) folds+=("$OPTARG") ;;
      o) out=$OPTARG ;;
      p) passes=$OPTARG ;;
      w) only+=("$OPTARG") ;;
      s) sets+=("$OPTARG") ;;
      *) echo "usage: $usage" >&2; exit 2 ;;
    esac
  done
  kvsim=$(cd "$(dirname "$kvsim")" && pwd)/$(basename "$kvsim")
  tmp=$(mktemp -d)
  trap 'rm -rf "$tmp"' EXIT
}

# A stamp that changes whenever kvsim, a profile or a workload changes: runs are cached in
# $cache/STAMP/.
fid_stamp() {
  cat "$kvsim" "$here"/*.yaml "$here"/../devices/*.yaml "$here"/../models/*.yaml "$here"/models/*.yaml |
    md5sum | cut -c1-32
}

# fid_init: the workloads of measured.csv with their descriptors, in $tmp/desc:
# "WORKLOAD engine=E version=V device=D tp=N model=M name=WORKLOAD " (V the engine's default
# version when the workload names none: vllm v1, vllm-v0 legacy, sglang 0.4).
fid_init() {
  stamp=$(fid_stamp)
  cache=$cache/$stamp
  mkdir -p "$cache"
  local w
  for w in $(awk -F, 'NR > 1 && !seen[$1]++ { print $1 }' "$here/measured.csv"); do
    [ -f "$here/$w.yaml" ] || { echo "fidelity: $w.yaml: no such workload" >&2; return 1; }
    awk -v w="$w" '/^engine:/ { sub(/ *#.*/, ""); e = $2; v = ""
        if (e == "{name:") { e = $3; sub(/,$/, "", e); sub(/}$/, "", e)
          if (match($0, /version: *"?[^",}]+/)) { v = substr($0, RSTART, RLENGTH); sub(/version: *"?/, "", v) } } }
      /^device:/ { d = $2 } /^model:/ { m = $2 }
      /^  tensor_parallel:/ { t = $2 }
      END { if (t == "") t = 1
        if (v == "") v = (e == "vllm-v0") ? "legacy" : (e == "sglang" ? "0.4" : "v1")
        printf "%s engine=%s version=%s device=%s tp=%s model=%s name=%s \n", w, e, v, d, t, m, w }' \
      "$here/$w.yaml"
  done > "$tmp/desc"
}

# fid_lines VALUES [WORKLOAD...]: run1.sh's line for each workload (all when none named) with
# the coefficients in VALUES ("key value" lines; an empty file: the stock profiles).
fid_lines() {
  local vals=$1; shift
  printf '%s\n' "$@" > "$tmp/only"
  awk -v nonly=$# 'FILENAME == ARGV[1] { only[$1] = 1; next }
    FILENAME == ARGV[2] { v[$1] = $2; next }
    FILENAME == ARGV[3] { if (FNR > 1) { split($0, f, ","); n++
        key[n] = f[1]; unit[n] = f[6]; scope[n] = f[7] } next }
    nonly && !($1 in only) { next }
    { w = $1; d = substr($0, length(w) + 2); split(d, p, "[ =]"); dev = p[6]   # "engine E version V device D ..."
      perf = ""; sets = ""
      for (i = 1; i <= n; i++) {
        if (!(key[i] in v) || d !~ scope[i]) continue
        val = v[key[i]] unit[i]; k = key[i]; sub(/@.*/, "", k)   # KEY@TAG: KEY in a scope of its own
        if (k ~ /^device\.perf\./) perf = perf substr(k, 13) "=" val ";"
        else sets = sets (sets == "" ? "" : " ") k "=" val
      }
      printf "%s|%s|%s|%s\n", w, dev, perf, sets }' "$tmp/only" "$vals" "$here/coefficients.csv" "$tmp/desc"
}

# fid_run LINES: runs each line not cached yet, FID_JOBS (default 2) at a time.
fid_run() {
  local line
  while IFS= read -r line; do
    [ -s "$cache/${line//[|\/ ;]/+}.m" ] || printf '%s\0' "$line"
  done < "$1" | xargs -0 -r -P"${FID_JOBS:-2}" -n1 bash "$here/run1.sh" "$kvsim" "$cache"
}

# fid_metrics LINES: "workload metric value" for each line (run by fid_run), "workload failed x"
# for a failed run.
fid_metrics() {
  local line files=()
  while IFS= read -r line; do files+=("$cache/${line//[|\/ ;]/+}.m"); done < "$1"
  awk 'FNR == 1 { w = substr(FILENAME, length(c) + 2); sub(/\+.*/, "", w) }
    { print w, $1, ($2 == "" ? "x" : $2) }' c="$cache" "${files[@]}"
}

# fid_values FOLD: the "key value" lines of fitted.csv's fold FOLD.
fid_values() {
  awk -F, -v f="$1" 'NR > 1 && $1 == f { print $2, $3 }' "$here/fitted.csv"
}
