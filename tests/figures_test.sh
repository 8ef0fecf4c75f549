#!/usr/bin/env bash
# The docs' generated tables match what is committed: docs/figures.sh --check
# (the kvsim list metrics page, the fairness and preempt-attribution tables;
# the last two skipped without ../shared/traces), the README's and docs' counts
# and lists against the code (docs/facts.sh), and docs/charts.sh --check (the
# chart gallery's text, its PNGs present, every plots/*.gp in it).  The tables
# whose script is a test of its own (fidelity, chunking-overhead, kv-capacity,
# tp-scaling: `docs/figures.sh --check --only=NAME` in tests/meson.build) are
# skipped here, so no script runs twice.
# Usage: figures_test.sh KVSIM SOURCE_DIR
set -u
bash "$2/docs/figures.sh" --check --skip=fidelity,chunking-overhead,kv-capacity,tp-scaling "$1"
tables=$?
bash "$2/docs/charts.sh" --check "$1"
charts=$?
[ $tables = 0 ] && [ $charts = 0 ]
