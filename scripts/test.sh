#!/usr/bin/env bash
# Installs what is missing, builds every backend this machine can compile, runs the whole CTest
# suite (GPU tests are skipped, not passed, without a GPU), then the CPU suite again under
# AddressSanitizer + UndefinedBehaviorSanitizer, the threaded API test under ThreadSanitizer, and the
# libFuzzer target for PORTATTN_FUZZ_SECONDS.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/deps.sh
. scripts/env.sh
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release
cmake --build build -j "$JOBS"
ctest --test-dir build --output-on-failure -j "$JOBS"

cmake --preset asan                       # CMakePresets.json: CPU only, build-asan/; the simulators
                                          # (label emulation) ran above and are left out here
cmake --build --preset asan -j "$JOBS"
ASAN_OPTIONS=detect_leaks=1 ctest --preset asan -j "$JOBS"

cmake --preset tsan                       # ThreadSanitizer over the multi-threaded API test, build-tsan/
cmake --build --preset tsan -j "$JOBS" --target test_concurrency
TSAN_OPTIONS=halt_on_error=1 ctest --preset tsan

cmake --preset fuzz                       # clang + libFuzzer + ASan/UBSan over the public API, build-fuzz/
cmake --build --preset fuzz -j "$JOBS"
ctest --preset fuzz -j "$JOBS"
