#!/usr/bin/env bash
# The model table of docs/models.md (docs/figures.sh writes and checks it): every
# profile under configs/models as `kvsim list models` derives it (resident
# and active parameters, weight bytes M at the profile's dtype, KV per token,
# attention kind).  Nothing is typed in: rerun after changing a profile.
# usage: configs/models/table.sh [KVSIM]   (default build/src/kvsim)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
kvsim=${1:-$here/../../build/src/kvsim}
echo "| model | layers | hidden | heads (KV) x dim | params | active | experts | M (GB) | KV/token | attention | context |"
echo "|---|---|---|---|---|---|---|---|---|---|---|"
"$kvsim" list models | awk '
  /^  [^ ]+ +[0-9]+ layers/ {
    name = $1; line = $0
    match(line, /[0-9]+ layers/); layers = substr(line, RSTART, RLENGTH - 7)
    match(line, /hidden [0-9]+/); hidden = substr(line, RSTART + 7, RLENGTH - 7)
    match(line, /[0-9]+ heads \([0-9]+ KV\) x [0-9]+/); heads = substr(line, RSTART, RLENGTH)
    sub(/ heads \(/, " (", heads); sub(/ KV\)/, ")", heads)
    match(line, /[0-9.]+B params/); params = substr(line, RSTART, RLENGTH - 7)
    match(line, /M = [0-9.]+ GB/); m = substr(line, RSTART + 4, RLENGTH - 7)
    match(line, /KV [0-9]+ KiB\/token/); kv = substr(line, RSTART + 3, RLENGTH - 13) " KiB"
    match(line, /context [0-9]+/); ctx = substr(line, RSTART + 8, RLENGTH - 8)
    split(heads, hv, /[ ()]+/); attn = hv[1] == hv[2] ? "MHA" : "GQA"; active = params; moe = "-"
    if (match(line, /[0-9.]+B active/)) active = substr(line, RSTART, RLENGTH - 7)
    if (match(line, /MoE [0-9]+ experts top-[0-9]+ \(\+[0-9]+ shared/)) {
      moe = substr(line, RSTART + 4, RLENGTH - 4); sub(/ experts top-/, " top-", moe)
      sub(/ \(\+/, " + ", moe)
    }
    if (match(line, /MLA latent [0-9]+ \+ rope [0-9]+, KV [0-9]+ B/)) {
      attn = "MLA " substr(line, RSTART + 11, RLENGTH - 11)
      match(attn, /KV [0-9]+ B/); kv = substr(attn, RSTART + 3, RLENGTH - 5) " B"
      sub(/, KV [0-9]+ B/, "", attn)
    }
    if (match(line, /window [0-9]+ on [0-9]+ of [0-9]+ layers/))
      attn = attn ", " substr(line, RSTART, RLENGTH)
    printf "| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n", name, layers, hidden, heads, params, active, moe, m, kv, attn, ctx
  }'
