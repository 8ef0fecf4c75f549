#!/usr/bin/env bash
# Checks the facts README.md and docs/ state in prose against the code and
# the tree, so none can drift: the GPU profiles (count and names, from
# `kvsim list devices`), the meson options (meson_options.txt), the unit
# suites (count and names, tests/meson.build), the example and sweep files
# of workloads/, the command lines of "Using it" (each command's usage
# line in its --help), the scheduler and cache tables and the engines named
# (`kvsim list`), the golden digest and run counts (tests/golden.sha256),
# and that every repository file the docs name in backticks exists.
# Prints one line per fact; exits 1 naming each that differs.  docs/figures.sh
# runs it (with or without --check: prose is checked, never rewritten).
# usage: docs/facts.sh KVSIM
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
kvsim=$1
cd "$root"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
for k in devices schedulers caches engines; do
  "$kvsim" list "$k" | sed -n 's/^  \([a-z0-9][-a-z0-9.]*\) .*/\1/p' > "$tmp/$k"
done
for c in run list sweep sweep-merge plot calibrate validate trace-stats gpu; do
  "$kvsim" "$c" --help | sed -n 's/^usage: //p'
done > "$tmp/usage"
for c in calibrate validate; do
  "$kvsim" "$c" --from-run --help | sed -n 's/^usage: //p'
done >> "$tmp/usage"
"$kvsim" help | sed -n '/^commands:/,/^$/s/^  \([a-z][-a-z]*\) .*/\1/p' > "$tmp/commands"
# the quick start's run, small: the files its manifest lists
# (skipped without ../shared/traces, whose ShareGPT lengths it reads)
if [ -d "$root/../shared/traces" ]; then
  "$kvsim" run -q workloads/default.yaml -o "$tmp/run" --set workload.requests=50 > /dev/null
  sed -n 's/^file //p' "$tmp/run/manifest.txt" > "$tmp/run-files"
fi

python3 - "$tmp" <<'PY'
import glob, os, re, sys
tmp = sys.argv[1]
lines = lambda f: [l for l in open(os.path.join(tmp, f)).read().split("\n") if l]
readme = open("README.md").read()
flat = re.sub(r"\s+", " ", readme)
bad = 0

def fact(name, got, want, where):
    """got: what the doc says; want: what the code or tree says."""
    global bad
    if got == want:
        print("facts.sh: %s: up to date" % name)
    else:
        bad = 1
        print("facts.sh: %s in %s says %s; the code says %s" % (name, where, got, want))

def ticks(text):
    return re.findall(r"`([^`]+)`", text)

# GPU profiles: "N GPU profiles ship (`a`, `b`, ...; `kvsim list devices`)"
m = re.search(r"(\S+) GPU profiles ship \(([^;]*);", flat)
dev = lines("devices")
fact("gpu-profiles", m and (m.group(1), sorted(ticks(m.group(2)))), (str(len(dev)), sorted(dev)), "README.md")

# meson options: "options a, b, c" on the meson_options.txt line of the layout
m = re.search(r"meson_options\.txt +build \([^)]*\); options ([a-z, ]+)", readme)
opts = re.findall(r"option\('([^']+)'", open("meson_options.txt").read())
fact("meson-options", m and sorted(m.group(1).replace(" ", "").split(",")), sorted(opts), "README.md")

# unit suites: "`unit` (N tests: M Check suites, one per module: a, b, ...; `x`, ...; `y`, ...)"
mb = open("tests/meson.build").read()
mods = re.findall(r"'([a-z]+)'", re.search(r"unit_tests = \[([^]]*)\]", mb).group(1))
others = [t for t, s in re.findall(r"test\('([-a-z]+)',[^)]*?suite : (\[[^]]*\]|'[a-z]+')", mb)
          if "'unit'" in s and t != "name"]
m = re.search(r"`unit` \((\d+) tests: (\d+) Check suites, one per module: ([^;]*);(.*?)\), `gpu`", flat)
got = m and (m.group(1), m.group(2), sorted(m.group(3).replace(" ", "").split(",")),
             sorted(t for t in ticks(m.group(4)) if not t.startswith("tests/")))
fact("unit-suites", got, (str(len(mods) + len(others)), str(len(mods)), sorted(mods), sorted(others)),
     "README.md")

# workloads/: every example is in the README's table, every sweep file in its list and in docs/sweeps.md
files = sorted(os.path.basename(f) for f in glob.glob("workloads/*.yaml"))
sweeps = [f for f in files if re.search(r"^axes:", open("workloads/" + f).read(), re.M)]
m = re.search(r"Sweep files \(`kvsim sweep`.*?in `workloads/`:\s(.*?)\.\n\n", readme, re.S)
fact("sweep-files", m and sorted(ticks(m.group(1))), sweeps, "README.md")
table = re.search(r"\| file \| what \|\n(.*?)\n\n", readme, re.S).group(1)
fact("example-workloads", sorted(t for t in ticks(table) if t.endswith(".yaml")),
     [f for f in files if f not in sweeps], "README.md")
sw = open("docs/sweeps.md").read()
fact("sweep-files-docs", sorted(f for f in sweeps if "workloads/" + f in sw), sweeps, "docs/sweeps.md")
# each example's point count in docs/sweeps.md: the product of its axes' lengths and its seeds
try:
    import yaml
    said, want = {}, {}
    for f, n in re.findall(r"- `workloads/(sweep-[\w-]+\.yaml)`:.*?\((\d+) points", sw, re.S):
        y = yaml.safe_load(open("workloads/" + f))
        if y.get("zip"):
            continue
        seeds = y.get("seeds", 1)
        k = seeds if isinstance(seeds, int) else len(seeds)
        for v in y["axes"].values():
            k *= len(v)
        said[f], want[f] = int(n), k
    fact("sweep-points", said, want, "docs/sweeps.md (Examples)")
except ImportError:
    print("facts.sh: sweep-points: skipped (no python3 yaml)")

# "Using it": each command line is that command's usage line
usage = lines("usage")
block = re.search(r"## Using it\n\n```sh\n(.*?)```", readme, re.S).group(1)
said = [re.sub(r"\s+#.*", "", l).replace("build/src/", "").strip() for l in block.split("\n")
        if l.startswith("build/src/kvsim ") and "COMMAND" not in l]
fact("usage-lines", [u for u in said if u not in usage], [], "README.md (Using it; the --help usage lines)")

# every command of `kvsim help` has its line in "Using it"
fact("commands", sorted({u.split()[1] for u in said}), sorted(lines("commands")),
     "README.md (Using it; kvsim help)")

# the quick start's files (run.png only where gnuplot drew it)
if os.path.exists(os.path.join(tmp, "run-files")):
    m = re.search(r"writes `out/default/` with (.*?)\. The second", flat)
    files = lines("run-files")
    got = m and sorted(t for t in ticks(m.group(1)) if t != "run.png" or "run.png" in files)
    fact("quickstart-files", got, sorted(files), "README.md (Quick start; a run's manifest.txt)")
else:
    print("facts.sh: quickstart-files: skipped (no ../shared/traces)")

# exit statuses: "N meaning" for each of src/status.h's table
codes = re.findall(r"X\(\w+, (\d+),", open("src/status.h").read())
m = re.search(r"Exit statuses, the same for every command \(one table, `src/status.h`\): (.*?)\n\n", readme, re.S)
said_codes = m and re.sub(r"\s+", " ", re.sub(r"\([^()]*(\([^()]*\)[^()]*)*\)", "", m.group(1)))
got = m and sorted(c for c in codes if re.search(r"(^|, )%s " % c, said_codes))
fact("exit-statuses", got, sorted(codes), "README.md")

# the scheduler and cache tables, the count of cache models, the engines
def table_names(head):
    t = re.search(r"\| %s \| [^|]+ \|\n\|---\|---\|\n(.*?)\n\n" % head, readme, re.S).group(1)
    return sorted(n for row in t.split("\n") for n in ticks(row.split("|")[1]))
fact("schedulers", table_names("scheduler"), sorted(lines("schedulers")), "README.md")
fact("caches", table_names("cache"), sorted(lines("caches")), "README.md")
words = "zero one two three four five six seven eight nine ten eleven twelve".split()
m = re.search(r"all (\w+) cache models", flat)
fact("cache-count", m and m.group(1), words[len(lines("caches"))], "README.md")
m = re.search(r"\(`engine:` ([^)]*)\)", flat)
fact("engines", m and sorted(re.findall(r"([a-z][-a-z0-9]+)(?: V1 by default)?(?:,|$)", m.group(1))),
     sorted(lines("engines")), "README.md")

# the golden outputs: digests and runs (the directories they sit in)
g = [l.split()[1] for l in open("tests/golden.sha256") if l.strip()]
m = re.search(r"\((\d+) digests, (\d+) runs\)", open("docs/reliability.md").read())
fact("golden-counts", m and (m.group(1), m.group(2)),
     (str(len(g)), str(len({os.path.dirname(p) for p in g}))), "docs/reliability.md")
m = re.search(r"under all (\w+) schedulers \(\d+ digests", open("docs/reliability.md").read())
fact("golden-schedulers", m and m.group(1), words[len(lines("schedulers"))], "docs/reliability.md")
# every repository path the docs name in backticks (scripts, workloads, sources) exists: from
# the root, the doc's folder, tests/data/ or tests/fuzz/corpus/; placeholders (NAME) and the
# fuzz targets' virtual file names aside
virtual = {"workloads/fuzz-sweep.yaml", "workloads/fuzz.yaml"}
missing = []
for doc in ["README.md"] + sorted(glob.glob("docs/*.md")):
    for tok in sorted(set(re.findall(r"`([\w./-]+/[\w.-]+\.(?:sh|yaml|c|h|cu))`", open(doc).read()))):
        if tok in virtual or re.search(r"[A-Z]", tok) or tok.startswith(("out/", "build", "/")):
            continue
        if not any(os.path.exists(os.path.join(d, tok))
                   for d in (".", os.path.dirname(doc), "tests/data", "tests/fuzz/corpus")):
            missing.append("%s: %s" % (doc, tok))
fact("paths", missing, [], "README.md and docs/ (files named that do not exist)")
# the Layout block's source files exist (src/, src/lib/, sim/, gpu/, tests/)
layout = re.search(r"## Layout\n\n```\n(.*?)```", readme, re.S).group(1)
fact("layout-files", sorted(f for f in re.findall(r"\b(\w+\.(?:c|h|cu))\b", layout)
                            if not any(os.path.exists(os.path.join(d, f))
                                       for d in ("src", "src/lib", "sim", "gpu", "tests"))),
     [], "README.md (Layout; files named that do not exist)")
sys.exit(bad)
PY
