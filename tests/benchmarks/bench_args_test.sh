#!/usr/bin/env bash
# The benchmark executables take arguments as collsim does: --help prints the usage and exits 0
# without measuring; a bad value or an unknown flag is one line on stderr and exit code 2.
# usage: bench_args_test.sh BENCH_REPLAY BENCH_SCHEDULE [BENCH_SIMGRID]
set -uo pipefail

fail=0
check() {  # check EXPECTED_CODE MUST_CONTAIN STREAM(out|err) COMMAND...
  local want=$1 text=$2 stream=$3
  shift 3
  local out err code
  out=$(timeout 20 "$@" 2>/tmp/bench_args_err.$$)
  code=$?
  err=$(cat /tmp/bench_args_err.$$)
  rm -f /tmp/bench_args_err.$$
  local shown=$out
  [[ $stream == err ]] && shown=$err
  if [[ $code -ne $want ]]; then
    echo "FAIL: $* exited $code, expected $want (stderr: $err)"
    fail=1
  elif [[ $shown != *"$text"* ]]; then
    echo "FAIL: $* did not print '$text' on std$stream: $shown"
    fail=1
  elif [[ $want -eq 2 && $(printf '%s\n' "$err" | wc -l) -ne 1 ]]; then
    echo "FAIL: $* printed more than one line on stderr: $err"
    fail=1
  else
    echo "ok: $* -> $code"
  fi
}

for bench in "$@"; do
  name=$(basename "$bench")
  check 0 "usage: $name" out "$bench" --help
  check 2 "$name: error: unknown option '--bogus'" err "$bench" --bogus
done
# Per-benchmark options (the loop above covers --help and unknown flags for every one).
check 2 "--max-n: 'abc' is not a non-negative integer" err "$1" --max-n abc
check 2 "--max-n 100 is not in 256.." err "$1" --max-n 100
check 2 "--n: 'abc' is not a rank count" err "$2" --n abc
check 2 "--reps 0 is not in 1.." err "$2" --reps 0
if [[ $# -ge 3 ]]; then
  check 2 "--max-n: 'abc' is not a non-negative integer" err "$3" --max-n abc
  check 2 "--min-n 512 is above --max-n 256" err "$3" --min-n 512 --max-n 256
  check 2 "unknown algorithm 'rnig'" err "$3" --algorithm rnig
fi
exit $fail
