#!/usr/bin/env bash
# Call 1: GQA packing in cuda-sm90's KV instances (build a) against none (build b,
# -DPA_SM90_KV_PACK_GQA=0); cuda-generic's phase-split forward rechecked on the GPU.
set -uo pipefail
export PYTHONUNBUFFERED=1
W=$OUT/w; mkdir -p $W
S=$(date +%s); t() { echo "[$(( $(date +%s) - S ))s]"; }
{ nvidia-smi -L; git log -1 --format='commit %H %s' | cut -c1-80; git status --short | head; date -u; } | tee $W/build.log
cfg() { cmake -S . -B $1 -G Ninja -DCMAKE_BUILD_TYPE=Release -DPORTATTN_CUDA_ARCHS="80;90" -DPORTATTN_WITH_SM100=OFF \
  -DPORTATTN_ENABLE_HIP=OFF "${@:3}" > $W/build_$1.log 2>&1 && cmake --build $1 -j $2 $T >> $W/build_$1.log 2>&1 ||
  { grep -E "error|FAILED" $W/build_$1.log | head; echo "BUILD $1 FAILED"; }; }
T=""; cfg build-a 12 &
T="--target portattn portattn-bench"; cfg build-b 4 -DCMAKE_CUDA_FLAGS=-DPA_SM90_KV_PACK_GQA=0 &
wait
echo "== built $(t)"
[ -f build-a/libportattn.so ] || exit 1
L=$W/tests.log; : > $L
run() { echo "--- $*" >> $L; timeout ${TO:-120} "$@" >> $L 2>&1; echo "exit $?: $*"; }
run build-a/tests/test_cases cuda-sm90
run build-a/tests/test_cases cuda-generic
run build-a/tests/test_numerics cuda-generic
run build-a/tests/test_numerics cuda-sm90
run build-a/tests/test_cuda_select
run build-a/tests/test_batch_invariance cuda-sm90
run build-a/tests/test_concurrency cuda-sm90
run build-a/tests/test_cases cuda-sm80 serve
run compute-sanitizer --tool racecheck --error-exitcode 9 build-a/tests/test_cases cuda-sm90 serve_mix_paged32_gqa3
run compute-sanitizer --tool memcheck --error-exitcode 9 build-a/tests/test_cases cuda-sm90 serve_mix_paged16_mqa32
run compute-sanitizer --tool synccheck --error-exitcode 9 build-a/tests/test_cases cuda-sm90 kvprefill_gqa5
TO=150 run build-a/tests/test_large cuda-generic
grep -E "cases ran|passed,|ERROR SUMMARY|RACECHECK SUMMARY|^FAIL|off the pinned" $L | sort | uniq -c | head -30
echo "== tests $(t)"
for r in 1 2; do for v in a b; do
  timeout 100 build-$v/tools/portattn-bench --sweep-file results/2026-12-02-h200/mixed.txt --json $W/mixed_${v}$r.json > $W/mixed_${v}$r.log 2>&1
  echo "mixed $v$r exit $?"; grep -E "^cuda" $W/mixed_${v}$r.log | cut -c1-40,90-200
done; done
echo "== mixed $(t)"
for v in a b; do
  PORTATTN_LIBRARY=build-$v/libportattn.so timeout 120 python3 tools/peer_bench.py --sweep serve --serve-pages 16 64 \
    --json $W/serve_${v}.json > $W/serve_${v}.log 2>&1; echo "serve $v exit $?"
  grep -E "^\| bf16" $W/serve_${v}.log
done
echo "== serve $(t)"
TO=200 run ctest --test-dir build-a -L cuda -E 'test_cases|isa_gate|test_large|test_numerics' -j 4 --output-on-failure
grep -E "tests passed|tests failed|\(Failed|Timeout|Not Run" $L | tail -8
echo "== done $(t)"
tar czf $OUT/c1.tgz -C $OUT w
