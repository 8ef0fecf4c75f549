#!/usr/bin/env bash
# configs/calibrate/host-levels-cpu.sh [record] [KVSIM] -- `calibrate --from-run
# --fit-host --steps` on a real run recorded at four load levels: fit on one,
# predict the others.
#
# record: runs configs/calibrate/host-levels-cpu.yaml (the tiny model on the
#   CPU backend, vLLM V1 engine, 120 short requests) through `kvsim validate
#   --backend cpu` at 2, 4, 6 and 8 req/s and keeps each level's measured
#   requests (requests-measured.csv) and steps (iterations.csv) in
#   configs/calibrate/cpu-runs/ (about 4 minutes on a quiet core; committed).
# otherwise: from those records, fits eff_bw, eff_flops, eff_attn (--fit-attn:
#   attention is a third of a 256-token chunk's time here) and the host terms to
#   the 4 req/s level's steps (from cpu-start.yaml and the version's host
#   defaults), then replays every level with the start and the fitted
#   profiles (`validate --from-run`, every request scored) and prints the
#   markdown table of TTFT, TPOT and E2E mean errors that docs/calibration.md
#   quotes: the other levels held out, the fitted level in-sample beside them;
#   then the fitted rows and coefficients of the same fit with eff_attn held at
#   the start's (without --fit-attn), and both fits' error on the fitted
#   level's steps by kind and prefill chunk size (calibrate's -steps.csv).
set -euo pipefail
. "$(dirname "$0")/levels.sh"
MODE=table
[ "${1:-}" = record ] && { MODE=record; shift; }
KVSIM=${1:-build/src/kvsim}
C=configs/calibrate
R=$C/cpu-runs
FIT_RATE=4
if [ $MODE = record ]; then
	mkdir -p "$R"
	T=$(mktemp -d)
	trap 'rm -rf "$T"' EXIT
	for r in 2 4 6 8; do
		"$KVSIM" validate --backend cpu "$C/host-levels-cpu.yaml" --set workload.arrival.rate=$r \
			-o "$T/r$r" --quiet
		cp "$T/r$r/requests-measured.csv" "$R/requests-$r.csv"
		cp "$T/r$r/iterations.csv" "$R/steps-$r.csv"
	done
	exit 0
fi
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
S=(--set device="$C/cpu-start.yaml")
"$KVSIM" calibrate --from-run "$R/requests-$FIT_RATE.csv" "$C/host-levels-cpu.yaml" "${S[@]}" \
	--fit-host --steps "$R/steps-$FIT_RATE.csv" --fit-attn --holdout 0 --max-evals 1000 \
	-o "$T/cal/p.yaml" --quiet
levels_table "$KVSIM" "$C/host-levels-cpu.yaml" "$R/requests-" .csv $FIT_RATE "$T/cal/p" 1 start "${S[@]}"
echo
echo "fitted to the $FIT_RATE req/s level's steps:"
levels_fitted "$T/cal/p"
# the same fit with eff_attn held at the start's (no --fit-attn): its fitted rows
"$KVSIM" calibrate --from-run "$R/requests-$FIT_RATE.csv" "$C/host-levels-cpu.yaml" "${S[@]}" \
	--fit-host --steps "$R/steps-$FIT_RATE.csv" --holdout 0 --max-evals 1000 -o "$T/held/p.yaml" \
	--quiet
echo
echo "the same fit with eff_attn held at the start's (without --fit-attn):"
echo
levels_table "$KVSIM" "$C/host-levels-cpu.yaml" "$R/requests-" .csv $FIT_RATE "$T/held/p" 1 start \
	"${S[@]}" | awk -F' [|] ' 'NR <= 2 || $2 == "fitted" { sub(/[|] fitted [|]/, "| eff_attn held |"); print }'
echo
levels_fitted "$T/held/p"
# the 4 req/s level's steps by kind and prefill tokens: each fit's error on their summed time
echo
echo "the $FIT_RATE req/s level's steps, fitted time over measured, summed by sequences (decode) and prefill tokens:"
echo
echo "| steps | count | measured mean | eff_attn held | eff_attn fitted |"
echo "|---|---|---|---|---|"
paste -d, "$T/held/p-steps.csv" "$T/cal/p-steps.csv" | awk -F, '
NR > 1 { k = $1 == "decode" ? ($2 < 5 ? $2 : 5) : ($4 <= 64 ? 6 : $4 <= 128 ? 7 : $4 <= 192 ? 8 : 9)
	 n[k]++; m[k] += $8; h[k] += $9; f[k] += $19 }
END { split("decode of 1 sequence,decode of 2,decode of 3,decode of 4,decode of 5 or more," \
	    "with 1-64 prefill tokens,with 65-128,with 129-192,with 193-256", lab, ",")
      for (k = 1; k <= 9; k++) if (n[k])
	printf "| %s | %d | %.1f ms | %+.1f%% | %+.1f%% |\n", lab[k], n[k], m[k] / n[k],
	       100 * (h[k] / m[k] - 1), 100 * (f[k] / m[k] - 1) }'
