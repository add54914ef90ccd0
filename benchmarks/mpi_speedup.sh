#!/usr/bin/env bash
# MPI speedup of `collsim run`: the same sweep in one process and under `mpirun -np K`
# (default 2), wall time of each, the ratio, and a byte comparison of results.csv and summary.csv
# (the split must not change a result).
# usage: benchmarks/mpi_speedup.sh [COLLSIM_BINARY] [SPEC] [K]
set -euo pipefail
cd "$(dirname "$0")/.."
collsim="${1:-build/release/experiments/collsim}"
spec="${2:-benchmarks/mpi_sweep.yaml}"
procs="${3:-2}"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

seconds() { date +%s.%N; }
t0=$(seconds)
"$collsim" run "$spec" --out "$work/single" --quiet --no-plot > /dev/null
t1=$(seconds)
mpirun -np "$procs" --oversubscribe "$collsim" run "$spec" --out "$work/mpi" --quiet --no-plot > /dev/null
t2=$(seconds)
single=$(echo "$t1 - $t0" | bc -l)
multi=$(echo "$t2 - $t1" | bc -l)
printf 'spec %s: one process %.1f s, mpirun -np %s %.1f s, speedup %.2fx\n' "$spec" "$single" "$procs" "$multi" \
  "$(echo "$single / $multi" | bc -l)"
for f in results.csv summary.csv; do
  if cmp -s "$work/single/$f" "$work/mpi/$f"; then echo "identical: $f"; else echo "DIFFERENT: $f"; exit 1; fi
done
