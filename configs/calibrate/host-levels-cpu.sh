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
#   quotes: the other levels held out, the fitted level in-sample beside them.
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
