#!/usr/bin/env bash
# configs/calibrate/host-levels.sh [KVSIM] -- `calibrate --from-run --fit-host`
# on a run recorded at several load levels: fit on one level, score the others.
#
# The runs are simulated (tests/data/fromrun/host-gen.yaml: Llama-2-7B on one
# A100-80GB, vllm v1, the known host true-host.yaml and device
# true-device.yaml; 400 requests, gamma arrivals cv 2) at 2, 4, 6 and 8 req/s.
# The fit starts from the version's host defaults and the true device
# (host-settings.yaml) and sees the 4 req/s run only; every other level is
# replayed with the fitted profiles (validate --from-run, all requests scored).
# Prints a markdown table of TTFT/TPOT/E2E mean errors (hold-out levels, and
# the fitted level in-sample beside them); docs/calibration.md quotes it.
set -euo pipefail
. "$(dirname "$0")/levels.sh"
KVSIM=${1:-build/src/kvsim}
D=tests/data/fromrun
FIT_RATE=4
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
for r in 2 4 6 8; do
	"$KVSIM" run "$D/host-gen.yaml" --set workload.arrival.rate=$r -o "$T/g$r" --quiet 2> /dev/null
	awk -F, 'NR == 1 { print "arrival_s,prompt_tokens,output_tokens,ttft_ms,e2e_ms"; next }
		 $4 == "completed" { printf "%s,%s,%s,%.6f,%.6f\n", $5, $8, $9, $10 * 1e3, $12 * 1e3 }' \
		"$T/g$r/requests.csv" > "$T/run$r.csv"
done
"$KVSIM" calibrate --from-run "$T/run$FIT_RATE.csv" "$D/host-settings.yaml" --fit-host --holdout 0 \
	-o "$T/cal/p.yaml" --quiet
levels_table "$KVSIM" "$D/host-settings.yaml" "$T/run" .csv $FIT_RATE "$T/cal/p" 2 "version defaults"
echo
echo "fitted on $FIT_RATE req/s (\`kvsim calibrate --from-run --fit-host --holdout 0\`):"
levels_fitted "$T/cal/p"
