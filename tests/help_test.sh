#!/usr/bin/env bash
# Help comes from the option tables (src/opts.h), for every command and sub-mode:
#  1. the commands are those `kvsim help` lists, the sub-modes those its
#     "==== kvsim CMD MODE ====" sections name (both from main.c's table);
#  2. `kvsim CMD [MODE] --help` and -h exit 0 and print "usage: kvsim CMD [MODE]",
#     the same text as `kvsim help CMD [MODE]`;
#  3. every option of the command's own table (the hidden `kvsim help --options
#     CMD [MODE]`, printed by the parser from the table it parses with) appears
#     in that help with its short letter and a help text;
#  4. an unknown option is one stderr line starting "kvsim: CMD:" that names it
#     and points to `kvsim CMD [MODE] --help`, exit 2; so is a missing value;
#  5. run, sweep, calibrate and validate (and their sub-modes) take --progress.
# Usage: help_test.sh KVSIM
set -u
kvsim=$1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
pass=0 fail=0
ok() { pass=$((pass + 1)); }
bad() { echo "FAIL: $*"; fail=$((fail + 1)); }

"$kvsim" help > "$tmp/all" || bad "kvsim help: exit $?"
cmds=$(awk '/^commands:$/ { on = 1; next } on && /^$/ { exit } on && /^  [a-z]/ { print $1 }' "$tmp/all")
[ "$(wc -w <<<"$cmds")" -ge 8 ] && ok || bad "kvsim help lists only: $cmds"
modes=$(sed -n 's/^==== kvsim \([a-z-]*\) \(--[a-z-]*\) ====$/\1 \2/p' "$tmp/all")
grep -qx "calibrate --from-run" <<<"$modes" && ok || bad "no calibrate --from-run section in kvsim help"

# has_option HELPFILE LONG SHORT: the option's line ("  -s, --long ARG" or "      --long
# ARG"), then its help text after two spaces or on the next, indented line
has_option() {
  local head="      --$2"
  [ -z "$3" ] || head="  -$3, --$2"
  awk -v h="$head" '
    pending { found = $0 ~ /^        +[^ ]/; exit }
    index($0, h) == 1 {
      rest = substr($0, length(h) + 1)
      if (rest ~ /^( [^ ]+)?  +[^ ]/) { found = 1; exit }
      if (rest ~ /^( [^ ]+)?$/) pending = 1
    }
    END { exit !found }' "$1"
}

while read -r c mode; do
  [ -n "$c" ] || continue
  what="kvsim $c${mode:+ $mode}"
  # 2. --help, -h, help CMD [MODE]
  "$kvsim" $c $mode --help > "$tmp/h" 2> "$tmp/e"; s=$?
  [ $s = 0 ] && [ ! -s "$tmp/e" ] && ok || bad "$what --help: exit $s, stderr: $(head -1 "$tmp/e")"
  head -1 "$tmp/h" | grep -q "^usage: $what " && ok || bad "$what --help: first line $(head -1 "$tmp/h")"
  "$kvsim" $c $mode -h > "$tmp/h2" && cmp -s "$tmp/h" "$tmp/h2" && ok || bad "$what -h differs from --help"
  "$kvsim" help $c $mode > "$tmp/h2" && cmp -s "$tmp/h" "$tmp/h2" && ok || bad "kvsim help $c $mode differs"
  # 3. every option of the table in the help
  "$kvsim" help --options $c $mode > "$tmp/o" || bad "kvsim help --options $c $mode: exit $?"
  grep -qx -- "--help -h" "$tmp/o" && ok || bad "$what: --help missing from the option list"
  while read -r long short; do
    has_option "$tmp/h" "${long#--}" "${short#-}" && ok ||
      bad "$what --help lacks $long${short:+ ($short)} or its help text"
  done < "$tmp/o"
  # 4. an unknown option, a missing value (the mode's selector takes a value)
  "$kvsim" $c --no-such-option $mode ${mode:+x} > /dev/null 2> "$tmp/e"; s=$?
  [ $s = 2 ] && [ "$(wc -l < "$tmp/e")" = 1 ] && grep -q "^kvsim: $c: .*--no-such-option.*'$what --help'" "$tmp/e" &&
    ok || bad "$what --no-such-option: exit $s, stderr: $(cat "$tmp/e")"
  "$kvsim" $c -Q $mode ${mode:+x} > /dev/null 2> "$tmp/e"; s=$?
  [ $s = 2 ] && [ "$(wc -l < "$tmp/e")" = 1 ] && grep -q "^kvsim: $c: .*'-Q'" "$tmp/e" &&
    ok || bad "$what -Q: exit $s, stderr: $(cat "$tmp/e")"
  needs=$(awk '$1 != "--help" { print $1; exit }' "$tmp/o")
  if [ -n "$needs" ] && grep -q -- "^  \(-., \)\?$needs [A-Z]" "$tmp/h"; then
    "$kvsim" $c $mode ${mode:+x} "$needs" > /dev/null 2> "$tmp/e"; s=$?
    [ $s = 2 ] && [ "$(wc -l < "$tmp/e")" = 1 ] && grep -q "^kvsim: $c: option '$needs' needs a value" "$tmp/e" &&
      ok || bad "$what $needs (no value): exit $s, stderr: $(cat "$tmp/e")"
  fi
done < <(for c in $cmds; do echo "$c"; done; echo "$modes")

# a value given to a flag, an abbreviation of two options
"$kvsim" run --quiet=3 x.yaml 2> "$tmp/e"; [ $? = 2 ] && grep -qx "kvsim: run: option '--quiet' takes no value; see 'kvsim run --help'" "$tmp/e" &&
  ok || bad "run --quiet=3: $(cat "$tmp/e")"
"$kvsim" run --tr x x.yaml 2> "$tmp/e"; [ $? = 2 ] && grep -qx "kvsim: run: ambiguous option '--tr'; see 'kvsim run --help'" "$tmp/e" &&
  ok || bad "run --tr: $(cat "$tmp/e")"

# a path option followed by another option: its value was forgotten
"$kvsim" calibrate --from-run --profile x 2> "$tmp/e"; [ $? = 2 ] &&
  grep -qx "kvsim: calibrate: --from-run: bad value '--profile': expected a run file" "$tmp/e" &&
  ok || bad "calibrate --from-run --profile x: $(cat "$tmp/e")"

# the commands that can run for minutes take --progress (and so KVSIM_PROGRESS=1)
for c in run sweep calibrate "calibrate --from-run" validate "validate --from-run"; do
  "$kvsim" help --options $c | grep -qx -- "--progress" && ok || bad "kvsim $c has no --progress"
done

"$kvsim" help --options nope 2> "$tmp/e"; [ $? = 2 ] && grep -q "^kvsim: help: unknown command 'nope'" "$tmp/e" &&
  ok || bad "kvsim help --options nope"

echo "help: $pass passed, $fail failed"
[ "$pass" -gt 100 ] || { echo "FAIL: only $pass checks ran"; fail=$((fail + 1)); }
[ "$fail" = 0 ]
