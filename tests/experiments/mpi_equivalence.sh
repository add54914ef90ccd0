#!/usr/bin/env bash
# Runs a small study in one process and under `mpirun -np 2 --oversubscribe`, and checks that
# results.csv and summary.csv are byte-identical. Exit 77 (CTest SKIP_RETURN_CODE) when mpirun is
# missing or the binary was built without MPI.
# usage: mpi_equivalence.sh COLLSIM_BINARY SPEC WORK_DIR
set -euo pipefail
collsim="$1" spec="$2" work="$3"

if ! command -v mpirun >/dev/null 2>&1; then
  echo "SKIP: mpirun not found"
  exit 77
fi
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
# Open MPI's own allocations are not ours to leak-check in sanitizer builds.
export ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0"

rm -rf "$work"
mkdir -p "$work"
"$collsim" run "$spec" --out "$work/single" --quiet
mpirun -np 2 --oversubscribe "$collsim" run "$spec" --out "$work/mpi" > "$work/mpi.log" 2>&1 || {
  cat "$work/mpi.log"
  echo "FAIL: mpirun -np 2 collsim run exited with an error"
  exit 1
}
if ! grep -q "on 2 processes" "$work/mpi.log"; then
  echo "SKIP: this collsim was built without MPI (COLLSIM_MPI=OFF), so both runs were single-process"
  exit 77
fi
status=0
for f in results.csv summary.csv config.resolved.yaml; do
  if cmp -s "$work/single/$f" "$work/mpi/$f"; then
    echo "same: $f"
  else
    echo "DIFFERENT: $f"
    diff "$work/single/$f" "$work/mpi/$f" | head -20 || true
    status=1
  fi
done
[ -f "$work/mpi/timing.csv" ] || { echo "FAIL: timing.csv missing"; status=1; }
rm -rf "$work"
exit $status
