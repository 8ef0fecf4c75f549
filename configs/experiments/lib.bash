# lib.bash -- sourced by the experiment scripts in this directory (not a *.sh:
# tests/golden.sh runs every *.sh here as an experiment): $out, a temporary
# directory removed at exit, and `col RUN_DIR NAME`, the value of column NAME
# in RUN_DIR/summary.csv.
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
col() { awk -F, -v n="$2" 'NR==1{for(i=1;i<=NF;i++) if($i==n) c=i} NR==2{print $c}' "$1/summary.csv"; }
