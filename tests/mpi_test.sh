#!/usr/bin/env bash
# `mpirun -n 2 kvsim sweep` must write the sweep.csv a single process writes.
# Exits 77 (skipped) without mpirun or when kvsim was built without MPI.
set -u
kvsim=$1
src=$2
command -v mpirun >/dev/null || { echo "no mpirun: skipped"; exit 77; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
export OMPI_MCA_mpi_warn_on_fork=0 OMPI_MCA_btl_vader_single_copy_mechanism=none
mpi=(mpirun --oversubscribe -n 2)
[ "$(id -u)" -eq 0 ] && mpi=(mpirun --allow-run-as-root --oversubscribe -n 2)
"${mpi[@]}" "$kvsim" sweep -q "$src/tests/data/sweep/grid.yaml" -o "$tmp/mpi" -j 1 \
  >"$tmp/out" 2>"$tmp/err"; st=$?
if grep -q "built without MPI" "$tmp/err"; then echo "kvsim built without MPI: skipped"; exit 77; fi
pass=0 fail=0
[ $st -eq 0 ] && pass=$((pass + 1)) || { fail=$((fail + 1)); echo "FAIL: mpirun sweep exit $st: $(cat "$tmp/err")"; }
"$kvsim" sweep -q "$src/tests/data/sweep/grid.yaml" -o "$tmp/one" -j 2 >/dev/null 2>&1
cmp -s "$tmp/mpi/sweep.csv" "$tmp/one/sweep.csv" && pass=$((pass + 1)) || { fail=$((fail + 1)); echo "FAIL: two ranks and one process differ"; }
[ "$(grep -c capacity "$tmp/out")" -eq 1 ] && pass=$((pass + 1)) || { fail=$((fail + 1)); echo "FAIL: expected one report line from rank 0"; }
"${mpi[@]}" "$kvsim" sweep -q --shard 1/2 "$src/tests/data/sweep/grid.yaml" -o "$tmp/x" >/dev/null 2>&1
[ $? -eq 2 ] && pass=$((pass + 1)) || { fail=$((fail + 1)); echo "FAIL: --shard under mpirun accepted"; }
echo "$pass passed, $fail failed"
[ $fail -eq 0 ]
