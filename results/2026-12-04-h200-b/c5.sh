#!/usr/bin/env bash
# Call 5: cuda-sm90 instances for d160 and d224 (as d32/d96 in call 4: Q K^T D/16 steps deep, P V N = D) in
# d192's and d256's shared layout. Case table, numerics, batch invariance, concurrency, test_large on
# cuda-sm90; peer_bench at d160/d224 for the new build and HEAD; d32/d96 fp16 (new build only).
set -uo pipefail
export PYTHONUNBUFFERED=1
W=$OUT/w; mkdir -p $W
S=$(date +%s); t() { echo "[$(( $(date +%s) - S ))s]"; }
mkdir -p /tmp/base && tar xf .device/head.tar -C /tmp/base
cfg() { cmake -S $1 -B $2 -G Ninja -DCMAKE_BUILD_TYPE=Release -DPORTATTN_CUDA_ARCHS="80;90" -DPORTATTN_WITH_SM100=OFF \
  -DPORTATTN_ENABLE_HIP=OFF $6 > $W/build_$3.log 2>&1 && cmake --build $2 -j $4 --target $5 >> $W/build_$3.log 2>&1 ||
  { grep -E "error|FAILED" $W/build_$3.log | head; echo "BUILD $3 FAILED"; }; }
T="portattn test_cases test_numerics test_batch_invariance test_concurrency test_large"
cfg $PWD build-h new 11 "$T" "" &
cfg /tmp/base /tmp/build-base base 5 "portattn" "-DPORTATTN_CUDA_ARCHS=90" &
wait; echo "== built $(t)"; grep -ci 'C751\|spill' $W/build_new.log
L=$W/tests.log; : > $L
run() { echo "--- $*" >> $L; timeout ${TO:-100} "$@" >> $L 2>&1; echo "exit $?: $*"; }
run build-h/tests/test_cases cuda-sm90; rc=$?
grep -E "cases ran|passed,|^FAIL" $L | tail -3
LIB=$PWD/build-h/libportattn.so
run build-h/tests/test_numerics cuda-sm90
run build-h/tests/test_batch_invariance cuda-sm90
run build-h/tests/test_concurrency cuda-sm90
TO=150 run build-h/tests/test_large cuda-sm90
grep -E "cases ran|passed,|^FAIL|^fail" $L | head -12
echo "== tests $(t)"
for v in new base; do
  lib=$LIB; [ $v = base ] && lib=/tmp/build-base/libportattn.so
  PORTATTN_LIBRARY=$lib timeout 200 python3 tools/peer_bench.py --d 160 224 --s 1024 4096 16384 --causal both \
    --json $W/peers_$v.json > $W/peers_$v.txt 2>&1; echo "peer_bench $v exit $?"
done
PORTATTN_LIBRARY=$LIB timeout 150 python3 tools/peer_bench.py --d 32 96 --s 1024 4096 16384 --causal both --dtype fp16 \
  --json $W/peers_new_f16.json > $W/peers_new_f16.txt 2>&1; echo "peer_bench f16 exit $?"
echo "== bench $(t)"
for v in new base new_f16; do echo "== $v"; grep -E '^\| ' $W/peers_$v.txt; done
tar czf $OUT/c5.tgz -C $OUT w; echo "== done $(t)"
