#!/usr/bin/env bash
# Call 6: the renovation (shared vocabulary out of sm80) A/B: A = before (HEAD~ tree from before.tgz),
# B = after (this tree); case tables on B; peer_bench dense rows, cuda-sm90 auto and cuda-sm80 forced.
set -uo pipefail
export PYTHONUNBUFFERED=1
W=$OUT/w; mkdir -p $W; S=$(date +%s); t() { echo "[$(( $(date +%s) - S ))s]"; }
mkdir -p /tmp/before && tar xzf .device/before.tgz -C /tmp/before
cfg() { cmake -S $1 -B $2 -G Ninja -DCMAKE_BUILD_TYPE=Release -DPORTATTN_CUDA_ARCHS="80;90" -DPORTATTN_WITH_SM100=OFF \
  -DPORTATTN_ENABLE_HIP=OFF >> $W/build.log 2>&1 && cmake --build $2 -j 16 --target portattn ${3:-} >> $W/build.log 2>&1 ||
  { grep -E "error|FAILED" $W/build.log | head; exit 1; }; }
cfg /tmp/before /tmp/build-a &
cfg . build-b test_cases
wait; echo "== built $(t)"
for be in cuda-sm90 cuda-sm80; do build-b/tests/test_cases $be > $W/cases_$be.log 2>&1; echo "cases $be exit $?"; grep -E "cases ran|passed," $W/cases_$be.log; done
echo "== cases $(t)"
for r in 1 2; do for v in a b; do L=/tmp/build-$v/libportattn.so; [ $v = b ] && L=build-b/libportattn.so
  PORTATTN_LIBRARY=$L timeout 100 python3 tools/peer_bench.py --d 64 128 --s 1024 4096 --causal both --backend cuda-sm80 \
    --json $W/ab_$v$r.json > $W/ab_$v$r.log 2>&1; echo "ab $v$r exit $?"
  grep -E "^\| bf16" $W/ab_$v$r.log | awk -F'|' '{print $3,$4,$5,$6,$8}'
done; done
echo "== done $(t)"
tar czf $OUT/c6.tgz -C $OUT w
