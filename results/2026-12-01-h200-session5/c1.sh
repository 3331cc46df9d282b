#!/usr/bin/env bash
# Call 1: build (sm80+sm90), cuda-sm90 KV instances: case table, selection, sanitizers, numerics,
# concurrency; then the serving speed beside the contiguous kernels and the peers.
set -uo pipefail
export PYTHONUNBUFFERED=1
B=build-dev; S=$(date +%s); t() { echo "[$(( $(date +%s) - S ))s]"; }
{ nvidia-smi -L; git log -1 --format='commit %H' 2>/dev/null; date -u; } | tee $OUT/build.log
cmake -S . -B $B -G Ninja -DCMAKE_BUILD_TYPE=Release -DPORTATTN_CUDA_ARCHS="80;90" -DPORTATTN_WITH_SM100=OFF \
  -DPORTATTN_ENABLE_HIP=OFF >> $OUT/build.log 2>&1 && cmake --build $B -j 16 >> $OUT/build.log 2>&1 ||
  { grep -E "error|FAILED" $OUT/build.log | head; tail -20 $OUT/build.log; exit 1; }
echo "== built $(t)"
L=$OUT/tests.log; : > $L
run() { echo "--- $*" >> $L; "$@" >> $L 2>&1; local r=$?; echo "exit $r: $*"; return 0; }
run $B/tests/test_cases cuda-sm90
grep -E "^FAIL|COVERAGE|cases|passed" $L | tail -5
run $B/tests/test_cases cuda-sm90 serve
run $B/tests/test_cases cuda-sm90 kvprefill
run $B/tests/test_cases cuda-sm80 serve
run $B/tests/test_cases cuda-sm80 kvprefill
run $B/tests/test_cuda_select
grep -E "^serving" $L
run $B/tests/test_numerics cuda-sm90
run $B/tests/test_concurrency cuda-sm90
run $B/tests/test_batch_invariance cuda-sm90
echo "== tests $(t)"
CS=compute-sanitizer
run $CS --tool memcheck --error-exitcode 9 $B/tests/test_cases cuda-sm90 serve
run $CS --tool racecheck --error-exitcode 9 $B/tests/test_cases cuda-sm90 serve_mix_paged16_gqa4
run $CS --tool synccheck --error-exitcode 9 $B/tests/test_cases cuda-sm90 kvprefill_paged16
run $CS --tool memcheck --error-exitcode 9 $B/tests/test_cases cuda-sm90 kvprefill
grep -E "ERROR SUMMARY|RACECHECK SUMMARY|hazard" $L | sort | uniq -c | head
echo "== sanitizers $(t)"
grep -E "^FAIL" $L | head -20
PORTATTN_LIBRARY=$B/libportattn.so python3 tools/peer_bench.py --sweep serve --dtype bf16 --serve-pages 16 64 256 \
  --json $OUT/peers_serve.json > $OUT/peers_serve.log 2>&1; echo "peer_bench serve exit $?"
tail -25 $OUT/peers_serve.log
echo "== peers $(t)"
$B/tools/portattn-bench --sweep-file tools/serving_shapes.txt --json $OUT/bench_serve.json > $OUT/bench_serve.log 2>&1
echo "bench exit $?"; tail -22 $OUT/bench_serve.log
echo "== done $(t)"
