#!/usr/bin/env bash
# Call 4: varlen batches (256 x U[16, 512], 16 heads) beside FA2's varlen kernel and the padded peers.
set -uo pipefail
export PYTHONUNBUFFERED=1
W=$OUT/w; mkdir -p $W
S=$(date +%s); t() { echo "[$(( $(date +%s) - S ))s]"; }
{ nvidia-smi -L; git log --oneline -1; git status --short | head; date -u; } > $W/build.log
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release -DPORTATTN_CUDA_ARCHS="80;90" -DPORTATTN_WITH_SM100=OFF \
  -DPORTATTN_ENABLE_HIP=OFF >> $W/build.log 2>&1 && cmake --build build -j 16 --target portattn >> $W/build.log 2>&1 \
  || { grep -E "error|FAILED" $W/build.log | head; echo BUILD FAILED; }
echo "== built $(t)"
PORTATTN_LIBRARY=build/libportattn.so timeout 200 python3 tools/varlen_bench.py --dtype bf16 fp16 --d 64 128 --causal both \
  --json $W/varlen.json > $W/varlen.log 2>&1; echo "varlen exit $?"
cat $W/varlen.log | tail -20
echo "== done $(t)"
