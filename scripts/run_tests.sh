#!/usr/bin/env bash
# Sets up (packages + Release build) and runs every test: the Release suite, then the
# AddressSanitizer + UBSan build of the suite. .ci/run calls exactly this script.
set -euo pipefail
cd "$(dirname "$0")/.."
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1

scripts/setup.sh
ctest --preset release -j2

echo "== sanitizer build (ASan + UBSan) =="
COLLSIM_PRESET=asan scripts/setup.sh
ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 ctest --preset asan -j2
