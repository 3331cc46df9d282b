#!/usr/bin/env bash
# Call 4: two producer warps in the KV instances (A) against one (B: -DPA_SM90_KV_PRODUCER_WARPS=1)

set -uo pipefail
export PYTHONUNBUFFERED=1
W=$OUT/w; mkdir -p $W
S=$(date +%s); t() { echo "[$(( $(date +%s) - S ))s]"; }
cfg() { cmake -S . -B $1 -G Ninja -DCMAKE_BUILD_TYPE=Release -DPORTATTN_CUDA_ARCHS="80;90" -DPORTATTN_WITH_SM100=OFF \
  -DPORTATTN_ENABLE_HIP=OFF "${@:2}" >> $W/build.log 2>&1 && cmake --build $1 -j 16 >> $W/build.log 2>&1 ||
  { grep -E "error|FAILED" $W/build.log | head; exit 1; }; }
cfg build-a
cfg build-b -DCMAKE_CUDA_FLAGS=-DPA_SM90_KV_PRODUCER_WARPS=1
echo "== built $(t)"
L=$W/tests.log; : > $L
run() { echo "--- $*" >> $L; "$@" >> $L 2>&1; echo "exit $?: $*"; }
run build-a/tests/test_cases cuda-sm90
grep -E "cases ran|passed," $L | tail -2
run build-a/tests/test_batch_invariance cuda-sm90
run build-a/tests/test_numerics cuda-sm90
run build-a/tests/test_concurrency cuda-sm90
run build-a/tests/test_cuda_select
run build-a/tests/test_cases cuda-sm80 serve
run compute-sanitizer --tool racecheck --error-exitcode 9 build-a/tests/test_cases cuda-sm90 kvprefill_paged16
run compute-sanitizer --tool synccheck --error-exitcode 9 build-a/tests/test_cases cuda-sm90 serve_mix_paged16_gqa4
grep -E "ERROR SUMMARY|RACECHECK SUMMARY|^FAIL" $L | sort | uniq -c
echo "== tests $(t)"
for r in 1 2; do for v in a b; do
  PORTATTN_LIBRARY=build-$v/libportattn.so python3 tools/peer_bench.py --sweep serve --serve-pages 16 32 64 256 \
    --json $W/serve_${v}$r.json > $W/serve_${v}$r.log 2>&1; echo "serve $v$r exit $?"
  grep -E "^\| bf16" $W/serve_${v}$r.log
done; done
echo "== serve $(t)"
echo "== done $(t)"
tar czf $OUT/c4.tgz -C $OUT w
