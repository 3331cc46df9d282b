#!/usr/bin/env bash
# Installs what is missing, builds every backend this machine can compile, runs the whole CTest
# suite (GPU tests are skipped, not passed, without a GPU), then the CPU suite again under
# AddressSanitizer + UndefinedBehaviorSanitizer.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/deps.sh
. scripts/env.sh
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release
cmake --build build -j "$JOBS"
ctest --test-dir build --output-on-failure -j "$JOBS"

cmake --preset asan                       # CMakePresets.json: CPU only, build-asan/
cmake --build --preset asan -j "$JOBS"
ASAN_OPTIONS=detect_leaks=1 ctest --preset asan -j "$JOBS"

cmake --preset fuzz                       # clang + libFuzzer + ASan/UBSan over the public API, build-fuzz/
cmake --build --preset fuzz -j "$JOBS"
ctest --preset fuzz
