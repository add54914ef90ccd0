#!/usr/bin/env bash
# scripts/trace_divergence.py finds where two runs of one schedule drift apart: a trace against
# itself differs nowhere, a run whose arrivals moved by up to 1 us differs from some round on,
# and traces of two different schedules are refused.
# Usage: trace_divergence_test.sh COLLSIM SCRIPT SCRATCH. Exit 0 pass, 1 fail, 77 skip (no python3).
set -euo pipefail
collsim=$1
script=$2
scratch=$3
[ -x /usr/bin/python3 ] || exit 77
rm -rf "$scratch"
mkdir -p "$scratch"
run() {  # run NAME N [more simulate options]
  local name=$1 n=$2
  shift 2
  "$collsim" simulate --algo stragglar -n "$n" --topology cluster_h100_1024_2to1 --delay 1ms --trace "$scratch/$name.json" "$@" > /dev/null
}
run a 64
run moved 64 --jitter uniform:min=0,max=1us --seed 3
run other 32
fail() { echo "FAIL: $1"; cat "$scratch/out"; exit 1; }

/usr/bin/python3 "$script" "$scratch/a.json" "$scratch/a.json" > "$scratch/out" || fail "a trace against itself"
grep -q "first round past 1e-06 us: never" "$scratch/out" || fail "a trace against itself differs"

/usr/bin/python3 "$script" "$scratch/a.json" "$scratch/moved.json" > "$scratch/out" || fail "moved arrivals"
grep -q "first round past 1e-06 us: never" "$scratch/out" && fail "arrivals moved by up to 1 us made no difference"
grep -q "first round past 1e-06 us: reduce_scatter round 0" "$scratch/out" || fail "the first round should differ"

status=0
/usr/bin/python3 "$script" "$scratch/a.json" "$scratch/other.json" > "$scratch/out" || status=$?
[ "$status" -eq 1 ] || fail "traces of different schedules: exit $status, expected 1"
grep -q "different transfers" "$scratch/out" || fail "no reason given for different schedules"
echo "trace_divergence: 3 checks passed"
