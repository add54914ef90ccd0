#!/usr/bin/env bash
# The default study: sets up (packages + Release build), then runs studies 1-3 and 7 of
# configs/experiments at small scale (the StragglAR speedup curve up to n = 1024, and the
# 8-GPU delay sweep, buffer sweep and winner heat map), plots them and says where they are.
set -euo pipefail
cd "$(dirname "$0")/.."

scripts/setup.sh
collsim=build/release/experiments/collsim
# The plots that `collsim run` starts take the algorithm table (legend order) from this binary.
export COLLSIM_BIN="$PWD/$collsim"
out="${COLLSIM_RESULTS_DIR:-results}"

start=$(date +%s)
for spec in default_speedup_curve default_delay_sweep default_buffer_sweep default_winner_heatmap; do
  echo
  echo "== $spec"
  "$collsim" run "configs/experiments/default/$spec.yaml" --out "$out/$spec"
done
echo
echo "default study done in $(( $(date +%s) - start )) s; results and plots:"
for spec in default_speedup_curve default_delay_sweep default_buffer_sweep default_winner_heatmap; do
  ls "$out/$spec"/*.png 2>/dev/null | sed 's/^/  /'
done
