#!/usr/bin/env bash
# Installs the Debian packages collsim needs (only those missing) and builds the Release preset.
# Idempotent: a second run installs nothing and rebuilds only what changed.
set -euo pipefail
cd "$(dirname "$0")/.."

packages=(build-essential cmake ninja-build pkg-config libsimgrid-dev libeigen3-dev
          libyaml-cpp-dev libfmt-dev libgtest-dev python3-matplotlib libopenmpi-dev openmpi-bin
          libjemalloc-dev)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "setup: installing ${missing[*]}"
  sudo_cmd=()
  [ "$(id -u)" -eq 0 ] || sudo_cmd=(sudo)
  "${sudo_cmd[@]}" apt-get update -qq
  DEBIAN_FRONTEND=noninteractive "${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

preset="${COLLSIM_PRESET:-release}"
cmake --preset "$preset" -G Ninja >/dev/null
cmake --build --preset "$preset"
