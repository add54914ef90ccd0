#!/usr/bin/env bash
# Under `mpirun -np 2 collsim run`, bad input every rank meets is reported once, by rank 0
# (not "collsim: error: collsim: error: ..." from both), with exit code 2. Exit 77 (CTest
# SKIP_RETURN_CODE) when mpirun is missing or collsim was built without MPI.
# usage: mpi_error_once.sh COLLSIM_BINARY WORK_DIR
set -uo pipefail
collsim="$1" work="$2"

if ! command -v mpirun >/dev/null 2>&1; then
  echo "SKIP: mpirun not found"
  exit 77
fi
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0"
rm -rf "$work"
mkdir -p "$work"

fail=0
for args in "run $work/no_such_spec.yaml" "run --bogus-flag x.yaml"; do
  # shellcheck disable=SC2086
  mpirun -np 2 --oversubscribe "$collsim" $args >"$work/out.log" 2>"$work/err.log"
  code=$?
  count=$(grep -o 'collsim: error' "$work/err.log" | wc -l)
  if [[ $count -ne 1 ]]; then
    echo "FAIL: 'collsim $args' under mpirun printed the error $count times:"
    cat "$work/err.log"
    fail=1
  elif [[ $code -ne 2 ]]; then
    echo "FAIL: 'collsim $args' under mpirun exited $code, expected 2"
    cat "$work/err.log"
    fail=1
  else
    echo "ok: 'collsim $args' under mpirun: one error line, exit 2"
  fi
done
exit $fail
