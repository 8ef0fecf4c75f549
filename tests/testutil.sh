# testutil.sh -- sourced by the end-to-end scripts (tests/*_test.sh): a
# temporary directory $tmp, removed at exit, and the tally of checks: `ok`
# counts a pass, `bad MESSAGE` a failure (printed).  The script ends with its
# own summary line and exit status from $pass and $fail.
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
pass=0 fail=0
ok() { pass=$((pass + 1)); }
bad() { fail=$((fail + 1)); echo "FAIL: $*"; }
