#!/usr/bin/env bash
# `collsim run` gives the plot scripts it starts the algorithm table without COLLSIM_BIN in the
# environment: study 2 run directly (not through scripts/run_default_study.sh, which exports it)
# must report the critical delay of StragglAR against the best algorithm that is not studied
# (2.03 ms against NVLS), not against stragglar_online (2.04 ms before the fix).
# Usage: run_plot_table_test.sh COLLSIM SPEC SCRATCH. Exit 0 pass, 1 fail, 77 skip (no matplotlib).
set -euo pipefail
collsim=$1
spec=$2
scratch=$3
/usr/bin/python3 -c "import matplotlib" 2>/dev/null || exit 77
rm -rf "$scratch"
mkdir -p "$scratch"
if ! env -u COLLSIM_BIN "$collsim" run "$spec" --out "$scratch/out" > "$scratch/log" 2>&1; then
  cat "$scratch/log"
  exit 1
fi
if ! grep -q "critical delay 2.03 ms (barrier and eager start" "$scratch/log"; then
  echo "expected 'critical delay 2.03 ms' in:"
  cat "$scratch/log"
  exit 1
fi
