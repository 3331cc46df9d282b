#!/usr/bin/env bash
# Builds tcgen05_probe.cu for sm_100a and sm_103a (nvcc 12.9+) and runs it: on a B200/B300 it compares
# every tcgen05 operation cuda-sm100 uses with the model of sm100_tc_emu.h, bit for bit; elsewhere the
# build is the check and the run skips.
# usage: tcgen05_probe.sh NVCC SOURCE_DIR WORK_DIR [RESULTS_FILE]
# exit: tcgen05_probe's (0 bit-exact, 1 a difference), 1 a build failure, 77 no nvcc or no B200/B300
set -uo pipefail
NVCC=${1:-}
SRC=${2:?source dir}
WORK=${3:?work dir}
RES=${4:-}
[ -n "$NVCC" ] && command -v "$NVCC" >/dev/null || { echo "SKIP: no nvcc"; exit 77; }
mkdir -p "$WORK" && cd "$WORK" || exit 1
"$NVCC" -std=c++17 -O2 -gencode=arch=compute_100a,code=sm_100a -gencode=arch=compute_103a,code=sm_103a \
  -I"$SRC/backends/cuda/sm100" -I"$SRC/backends/cuda/common" -I"$SRC/common" -I"$SRC/include" \
  "$SRC/tests/probes/tcgen05_probe.cu" -o tcgen05_probe > build.log 2>&1 ||
  { tail -20 build.log; echo "FAIL: building tcgen05_probe (needs nvcc 12.9+)"; exit 1; }
echo "tcgen05_probe built for sm_100a and sm_103a"
./tcgen05_probe ${RES:+"$RES"}
