#!/usr/bin/env bash
# The main job: build (Release) and run portattn-bench on the best backend present, with --check
# against the reference. On a machine without a GPU that is the CPU reference on a small shape.
# Extra arguments go to portattn-bench (see --help), e.g. scripts/demo.sh --sweep.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/deps.sh
. scripts/env.sh
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build build -j "$JOBS"
build/tools/portattn-bench --list-backends
exec build/tools/portattn-bench "$@"
