#!/usr/bin/env bash
# Call 6 (the session's last minutes of device time): a cuda-sm90 d48 instance (d40 and d48 ran on d64; P V of
# N = 48, the epilogue's last group of 8-column tiles half empty). Case table and test_numerics on cuda-sm90,
# then peer_bench at d40/d48 (this build only; d40 on d64 was measured in call 4).
set -uo pipefail
export PYTHONUNBUFFERED=1
W=$OUT/w; mkdir -p $W
S=$(date +%s); t() { echo "[$(( $(date +%s) - S ))s]"; }
cmake -S . -B build-h -G Ninja -DCMAKE_BUILD_TYPE=Release -DPORTATTN_CUDA_ARCHS="90" -DPORTATTN_WITH_SM100=OFF \
  -DPORTATTN_ENABLE_HIP=OFF > $W/build.log 2>&1 && cmake --build build-h -j 16 --target portattn test_cases test_numerics >> $W/build.log 2>&1 ||
  { grep -E "error|FAILED" $W/build.log | head; echo BUILD FAILED; }
echo "== built $(t)"
timeout 60 build-h/tests/test_cases cuda-sm90 > $W/tests.log 2>&1; echo "test_cases exit $?"; grep -E "cases ran|passed,|^FAIL" $W/tests.log | head -5
timeout 60 build-h/tests/test_numerics cuda-sm90 >> $W/tests.log 2>&1; echo "test_numerics exit $?"; tail -1 $W/tests.log
echo "== tests $(t)"
PORTATTN_LIBRARY=$PWD/build-h/libportattn.so timeout 90 python3 tools/peer_bench.py --d 40 48 --s 1024 4096 16384 --causal both \
  --json $W/peers.json > $W/peers.txt 2>&1; echo "peer_bench exit $?"
grep -E '^\| ' $W/peers.txt
echo "== done $(t)"
