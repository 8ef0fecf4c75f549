#!/usr/bin/env bash
# Measures the shape of kvsim's sources: lines per file of sim/ and src/, the
# longest functions, the file-level call graph of the kvsim binary (from nm
# over its object files) with its circles, and the include graph with its
# cycles and the includes that run up a layer (docs/design.md, "Layers").
# usage: bench/codestats.sh [--check] [BUILD_DIR]     (BUILD_DIR: default build)
#   --check  exit 1 if the call graph has a circle (two files that call each
#            other, directly or round a loop), the include graph a cycle, or an
#            include or a call runs up a layer; 0 otherwise.
# Exit 2: usage, or BUILD_DIR holds no built kvsim (run ninja -C BUILD_DIR).
# Needs bash, awk (POSIX; mawk will do), nm (NM=... to pick another, e.g.
# gcc-nm for an LTO build's objects), realpath.  Reads the sources, and of the
# build only build.ninja, compile_commands.json and the object files.
set -euo pipefail

usage() { sed -n '6,9p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2; }
check=0
build=
for a in "$@"; do
  case $a in
    --check) check=1 ;;
    -h|--help) usage ;;
    -*) echo "codestats: unknown option $a" >&2; usage ;;
    *) [ -z "$build" ] || usage; build=$a ;;
  esac
done
root=$(cd "$(dirname "$0")/.." && pwd -P)
build=${build:-$root/build}
if [ ! -f "$build/build.ninja" ] || [ ! -f "$build/compile_commands.json" ]; then
  echo "codestats: $build is not a configured build directory (meson setup $build)" >&2
  exit 2
fi
build=$(cd "$build" && pwd -P)
cd "$root"
NM=${NM:-nm}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# Folder of a source path, longest prefix first: sim/, src/lib/, src/, gpu/.
FOLDER_AWK='function folder(p) {
  if (p ~ /^src\/lib\//) return "src/lib/"
  if (p ~ /^src\//) return "src/"
  if (p ~ /^sim\//) return "sim/"
  if (p ~ /^gpu\//) return "gpu/"
  return "other/"
}'

# Reads edge lines "FROM TO ..." (extra fields ignored) and prints each
# strongly connected component of two or more nodes as one line of its
# members, sorted; a node reachable from itself alone is not a component
# here.  Reachability by a search from every node: O(n (n + e)).
scc() {
  awk '
    { if (!($1 in id)) { id[$1] = ++n; name[n] = $1 }
      if (!($2 in id)) { id[$2] = ++n; name[n] = $2 }
      a = id[$1]; b = id[$2]
      if (a != b && !((a, b) in adj)) { adj[a, b] = 1; out[a, ++deg[a]] = b } }
    END {
      for (s = 1; s <= n; s++) {            # reach[s, t]: t reachable from s
        head = 1; tail = 0; q[++tail] = s; seen[s, s] = 1
        while (head <= tail) {
          u = q[head++]
          for (k = 1; k <= deg[u]; k++) {
            v = out[u, k]
            if (!((s, v) in seen)) { seen[s, v] = 1; q[++tail] = v }
          }
        }
      }
      for (s = 1; s <= n; s++) {
        if (s in done) continue
        m = 0
        for (t = 1; t <= n; t++)
          if (((s, t) in seen) && ((t, s) in seen)) { done[t] = 1; mem[++m] = name[t] }
        if (m < 2) continue
        for (i = 2; i <= m; i++)             # insertion sort of the members
          for (j = i; j > 1 && mem[j - 1] > mem[j]; j--) { x = mem[j]; mem[j] = mem[j - 1]; mem[j - 1] = x }
        line = mem[1]
        for (i = 2; i <= m; i++) line = line " " mem[i]
        print line
      }
    }' "$@" | sort
}

# --- 1. lines per file -----------------------------------------------------
echo "== 1. lines per file (sim/, src/, src/lib/: *.c and *.h) =="
total=0
for d in sim src src/lib; do
  wc -l "$d"/*.c "$d"/*.h | grep -v ' total$' | sort -k1,1nr -k2,2 > "$tmp/wc"
  n=$(wc -l < "$tmp/wc")
  t=$(awk '{ s += $1 } END { print s + 0 }' "$tmp/wc")
  total=$((total + t))
  printf '%s/  %d files, %d lines\n' "$d" "$n" "$t"
  awk '{ printf "  %6d  %s\n", $1, $2 }' "$tmp/wc"
done
printf 'total sim/ + src/ + src/lib/: %d lines\n\n' "$total"

# --- 2. function lengths -----------------------------------------------------
# A definition starts at column 0 with a line naming `identifier(` before any
# `=` or `;` (an attribute line alone does not count), its signature runs on
# over indented lines, its body opens with `{` in column 0 (or at the end of
# the signature) and ends at the next `}` in column 0.  A signature that ends
# in `;` was a prototype.  Length: signature's first line to the closing
# brace, both included.
funcfiles=$(ls sim/*.c sim/*.h src/*.c src/*.h src/lib/*.c src/lib/*.h gpu/*.c gpu/*.h)
# shellcheck disable=SC2086
awk "$FOLDER_AWK"'
  function fname(s,    t) {
    t = s
    gsub(/__attribute__[ \t]*\(\([^()]*(\([^()]*\)[^()]*)*\)\)/, "", t)
    if (!match(t, /[A-Za-z_][A-Za-z_0-9]*[ \t]*\(/)) return ""
    t = substr(t, RSTART, RLENGTH - 1)
    sub(/[ \t]+$/, "", t)
    return t
  }
  function candidate(line) {
    if (line !~ /^[A-Za-z_][^=;(]*[A-Za-z_0-9][ \t]*\(/ || line ~ /^typedef/) return 0
    if (line ~ /;[ \t]*$/) return 0
    name = fname(line)
    if (name == "" || name == "__attribute__" || name == "defined") return 0
    return 1
  }
  function done(endline) {
    print endline - start + 1, FILENAME ":" start, name, folder(FILENAME)
    state = 0
  }
  FNR == 1 { state = 0 }                # 0 outside, 1 in a signature, 2 in a body
  state == 2 { if ($0 ~ /^}/) done(FNR); next }
  state == 1 {
    if ($0 ~ /^\{/) { state = 2; if ($0 ~ /^\{.*\}[ \t]*$/) done(FNR); next }
    if ($0 ~ /^[ \t]/) {
      if ($0 ~ /;[ \t]*$/) state = 0
      else if ($0 ~ /\{[ \t]*$/) state = 2
      next
    }
    state = 0                           # column 0 again: not a definition; retry as a start
  }
  state == 0 && candidate($0) {
    start = FNR
    if ($0 ~ /\{.*\}[ \t]*$/) done(FNR)
    else if ($0 ~ /\{[ \t]*$/) state = 2
    else state = 1
  }' $funcfiles | sort -k1,1nr -k2,2 > "$tmp/funcs"
echo "== 2. the 15 longest functions (sim/, src/, src/lib/, gpu/: *.c and *.h; lines) =="
head -n 15 "$tmp/funcs" | awk '{ printf "  %5d  %-34s %s\n", $1, $2, $3 }'
echo "per folder: functions, median length, longest, over 40 lines, over 100 lines"
for f in sim/ src/ src/lib/ gpu/; do
  awk -v f="$f" '$4 == f { print $1 }' "$tmp/funcs" | sort -n | awk -v f="$f" '
    { v[++n] = $1; if ($1 > 40) o40++; if ($1 > 100) o100++ }
    END { if (!n) { printf "  %-9s none\n", f; exit }
          med = (n % 2) ? v[(n + 1) / 2] : (v[n / 2] + v[n / 2 + 1]) / 2
          printf "  %-9s %4d functions, median %g, longest %d, >40: %d, >100: %d\n", f, n, med, v[n], o40, o100 }'
done
echo

# --- 3. call graph -------------------------------------------------------------
# The kvsim binary's objects: build.ninja's link edge for src/kvsim names its
# own objects and, after `|`, the project archives it links; an archive
# X.a's objects are those compile_commands.json places under X.a.p/.
awk '/^build src\/kvsim:/ {
       for (i = 3; i <= NF; i++) {
         if ($i == "|" || $i == "||") continue
         if ($i ~ /\.o$/) print "obj", $i
         else if ($i ~ /\.a$/ && $i !~ /^\//) print "lib", $i
       }
       exit
     }' "$build/build.ninja" > "$tmp/link"
awk -v dir="$build" '
  /"directory":/ { d = $0; sub(/^[^:]*: *"/, "", d); sub(/",?[ \t]*$/, "", d) }
  /"file":/ { f = $0; sub(/^[^:]*: *"/, "", f); sub(/",?[ \t]*$/, "", f) }
  /"output":/ { o = $0; sub(/^[^:]*: *"/, "", o); sub(/",?[ \t]*$/, "", o)
                if (f !~ /^\//) f = d "/" f
                print o, f }' "$build/compile_commands.json" > "$tmp/cc"
awk 'NR == FNR { if ($1 == "obj") want[$2] = 1; else lib[$2 ".p/"] = 1; next }
     { ok = ($1 in want)
       for (p in lib) if (index($1, p) == 1) ok = 1
       if (ok && $1 ~ /\.c\.o$/) print }' "$tmp/link" "$tmp/cc" > "$tmp/objs"
if [ ! -s "$tmp/objs" ]; then
  echo "codestats: no objects of src/kvsim found in $build (is it built? ninja -C $build)" >&2
  exit 2
fi
# shellcheck disable=SC2046
realpath -m --relative-to="$root" $(awk '{ print $2 }' "$tmp/objs") > "$tmp/srcs"
paste -d' ' <(awk '{ print $1 }' "$tmp/objs") "$tmp/srcs" > "$tmp/map"
missing=0
while read -r o _; do [ -f "$build/$o" ] || missing=1; done < "$tmp/map"
if [ "$missing" = 1 ]; then
  echo "codestats: objects of src/kvsim missing in $build (ninja -C $build)" >&2
  exit 2
fi
# shellcheck disable=SC2046
(cd "$build" && "$NM" -o $(awk '{ print $1 }' "$tmp/map")) > "$tmp/nm" 2>/dev/null
# Edges "A B n sym sym ...": A's undefined symbols that B defines.
awk 'NR == FNR { src[$1] = $2; next }
     { i = index($0, ":"); o = substr($0, 1, i - 1)
       n = split(substr($0, i + 1), a, " "); t = a[n - 1]; s = a[n]
       if (!(o in src)) next
       if (t == "U") und[src[o], s] = 1
       else if (t ~ /^[TDBRCGSVW]$/) def[s] = (s in def) ? def[s] SUBSEP src[o] : src[o] }
     END { for (k in und) {
             split(k, p, SUBSEP); nd = split(def[p[2]], b, SUBSEP)
             for (j = 1; j <= nd; j++) if (b[j] != "" && b[j] != p[1]) e[p[1] " " b[j]] = e[p[1] " " b[j]] " " p[2]
           }
           for (x in e) {                    # symbols in order, for a stable output
             m = split(e[x], ss, " ")
             for (i = 2; i <= m; i++)
               for (j = i; j > 1 && ss[j - 1] > ss[j]; j--) { t = ss[j]; ss[j] = ss[j - 1]; ss[j - 1] = t }
             line = x " " m
             for (i = 1; i <= m; i++) line = line " " ss[i]
             print line
           } }' "$tmp/map" "$tmp/nm" |
  sort > "$tmp/calls"
nfiles=$(wc -l < "$tmp/map")
nedges=$(wc -l < "$tmp/calls")
echo "== 3. call graph of src/kvsim ($nfiles object files, $nedges file -> file edges; from $NM) =="
echo "a circle: files that reach each other through calls or data references (A -> B: A uses a symbol B defines)"
# Prints the circles of the edges in $1, each with its edges and up to 4 of their symbols.
circles() {
  scc "$1" > "$tmp/scc"
  if [ ! -s "$tmp/scc" ]; then echo "  no circle"; return; fi
  while read -r line; do
    echo "  circle of $(echo "$line" | wc -w): $line"
    awk -v mem=" $line " 'index(mem, " " $1 " ") && index(mem, " " $2 " ") {
        s = ""; for (i = 4; i <= NF && i < 8; i++) s = s " " $i
        if (NF > 7) s = s " ..."
        printf "      %s -> %s  (%d:%s)\n", $1, $2, $3, s }' "$1"
  done < "$tmp/scc"
}
ncircles=0
for f in sim/ src/ src/lib/ gpu/; do
  awk "$FOLDER_AWK"' folder($1) == f && folder($2) == f' f="$f" "$tmp/calls" > "$tmp/calls_f"
  echo "$f"
  circles "$tmp/calls_f"
done
echo "overall"
circles "$tmp/calls"
ncircles=$(wc -l < "$tmp/scc")
# A call runs up a layer where the include rules below would forbid the include.
LAYER_AWK="$FOLDER_AWK"'
function up(a, b,    fa, fb) {
  fa = folder(a); fb = folder(b)
  if (fa == "sim/") return fb != "sim/"
  if (fa == "gpu/") return fb == "src/" || fb == "src/lib/" ||
    (fb == "sim/" && b !~ /^sim\/(kv_common|profile)\.[ch]$/)
  if (fa == "src/lib/") return fb == "src/"
  return 0
}'
awk "$LAYER_AWK"' up($1, $2) { print }' "$tmp/calls" > "$tmp/callup"
ncallup=$(wc -l < "$tmp/callup")
echo "calls up a layer: $ncallup"
awk '{ s = ""; for (i = 4; i <= NF && i < 8; i++) s = s " " $i; if (NF > 7) s = s " ..."
       printf "  %s -> %s  (%d:%s)\n", $1, $2, $3, s }' "$tmp/callup"
echo

# --- 4. include graph -----------------------------------------------------------
# Every #include "..." of sim/, src/, src/lib/, gpu/ (*.c, *.h, *.cu), resolved
# against the including file's folder, then sim/, src/, src/lib/, gpu/ (the
# build's include directories); includes of files outside those folders
# (generated headers) are listed as unresolved.
incfiles=$(ls sim/*.[ch] src/*.[ch] src/lib/*.[ch] gpu/*.[ch] gpu/*.cu 2>/dev/null)
echo "$incfiles" > "$tmp/incfiles"
# shellcheck disable=SC2086
grep -H '^[ \t]*#[ \t]*include[ \t]*"' $incfiles | awk '
  function norm(p,    n, a, i, k, st, r) {
    n = split(p, a, "/"); k = 0
    for (i = 1; i <= n; i++) {
      if (a[i] == "." || a[i] == "") continue
      if (a[i] == ".." && k > 0 && st[k] != "..") k--
      else st[++k] = a[i]
    }
    r = st[1]; for (i = 2; i <= k; i++) r = r "/" st[i]
    return r
  }
  NR == FNR { have[$0] = 1; next }
  { i = index($0, ":"); f = substr($0, 1, i - 1); inc = substr($0, i + 1)
    sub(/^[^"]*"/, "", inc); sub(/".*/, "", inc)
    d = f; sub(/[^\/]*$/, "", d)
    split(d " sim/ src/ src/lib/ gpu/", dirs, " "); r = ""
    for (j = 1; j <= 5 && r == ""; j++) if (norm(dirs[j] inc) in have) r = norm(dirs[j] inc)
    if (r == "") print f, inc > "/dev/stderr"; else print f, r }' "$tmp/incfiles" - \
  2> "$tmp/unresolved" | sort -u > "$tmp/incs"
echo "== 4. include graph ($(wc -l < "$tmp/incfiles") files, $(wc -l < "$tmp/incs") #include \"...\" edges) =="
scc "$tmp/incs" > "$tmp/incscc"
awk '$1 == $2' "$tmp/incs" >> "$tmp/incscc"
nincscc=$(wc -l < "$tmp/incscc")
if [ "$nincscc" = 0 ]; then echo "include cycles: none"; else echo "include cycles: $nincscc"; sed 's/^/  /' "$tmp/incscc"; fi
awk "$LAYER_AWK"' up($1, $2) { print }' "$tmp/incs" > "$tmp/incup"
nincup=$(wc -l < "$tmp/incup")
echo "includes up a layer: $nincup"
awk '{ printf "  %s includes %s\n", $1, $2 }' "$tmp/incup"
if [ -s "$tmp/unresolved" ]; then
  echo "unresolved (not a file of these folders):"
  sort -u "$tmp/unresolved" | awk '{ printf "  %s: \"%s\"\n", $1, $2 }'
fi
echo
bad=$((ncircles + nincscc + ncallup + nincup))
echo "summary: $ncircles call circle(s), $nincscc include cycle(s), $ncallup call(s) and $nincup include(s) up a layer"
if [ "$check" = 1 ] && [ "$bad" -gt 0 ]; then exit 1; fi
exit 0
