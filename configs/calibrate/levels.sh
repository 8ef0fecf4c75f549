# configs/calibrate/levels.sh -- sourced by host-levels.sh and host-levels-cpu.sh:
# the replay of every load level with the start and the fitted profiles, as the
# markdown table docs/calibration.md quotes, and the fitted coefficients' lines.

# levels_table KVSIM SETTINGS RUN_PRE RUN_SUF FIT_RATE CAL PREC START_LABEL [START_ARG...]
#   replays level r's run RUN_PRE r RUN_SUF (r = 2, 4, 6, 8) through `validate
#   --from-run` with SETTINGS and START_ARGs ("start"), then with the profiles
#   calibrate wrote to CAL.yaml and CAL-host.yaml ("fitted"); one row a level and
#   profile of TTFT, TPOT and E2E mean errors at PREC decimals, FIT_RATE marked
#   in-sample and the others held out.
levels_table() {
	local kvsim=$1 settings=$2 pre=$3 suf=$4 fit_rate=$5 cal=$6 prec=$7 start=$8 r prof
	shift 8
	local -a first=("$@") args
	local col=" "
	[ "$start" = start ] && col=" profile "
	echo "| level (req/s) |$col| TTFT mean | TPOT mean | E2E mean |"
	echo "|---|---|---|---|---|"
	for r in 2 4 6 8; do
		for prof in start fitted; do
			args=("${first[@]}")
			[ $prof = fitted ] && args=(--profile "$cal.yaml" --set host="$cal-host.yaml")
			"$kvsim" validate --from-run "$pre$r$suf" "$settings" "${args[@]}" -o "$cal-v.csv" \
				--quiet
			awk -F, -v r="$r" -v p=$prof -v fr="$fit_rate" -v pr="$prec" -v st="$start" '
			$3 == "mean" { e[$2] = sprintf("%+." pr "f%%", $6) }
			END { printf "| %s%s | %s | %s | %s | %s |\n", r,
			      (r == fr ? " (fitted, in-sample)" : " (held out)"),
			      p == "start" ? st : "fitted", e["ttft"], e["tpot"], e["e2e"] }' "$cal-v.csv"
		done
	done
}

# levels_fitted CAL: the fitted coefficients with their intervals, from CAL-fit.csv.
levels_fitted() {
	awk -F, 'NR > 1 && $6 != "" {
		printf "- %s %.4g %s [%.4g, %.4g]\n", $1, $3, $6, $4, $5 }' "$1-fit.csv"
}
