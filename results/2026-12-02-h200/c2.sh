#!/usr/bin/env bash
# Call 2: the compact varlen schedule with the producer's item handoff (build a, the working tree)
# against the GQA-packing commit before it (build b, 4fdc377).
set -uo pipefail
export PYTHONUNBUFFERED=1
W=$OUT/w; mkdir -p $W
S=$(date +%s); t() { echo "[$(( $(date +%s) - S ))s]"; }
{ nvidia-smi -L; git log -1 --format='commit %H %s' | cut -c1-80; git status --short | head; date -u; } | tee $W/build.log
git worktree add -f /tmp/base 4fdc377 > /dev/null 2>&1 || echo "worktree failed"
cfg() { cmake -S $3 -B $1 -G Ninja -DCMAKE_BUILD_TYPE=Release -DPORTATTN_CUDA_ARCHS="80;90" -DPORTATTN_WITH_SM100=OFF \
  -DPORTATTN_ENABLE_HIP=OFF > $W/build_$(basename $1).log 2>&1 && cmake --build $1 -j $2 $T >> $W/build_$(basename $1).log 2>&1 ||
  { grep -E "error|FAILED" $W/build_$(basename $1).log | head; echo "BUILD $1 FAILED"; }; }
T=""; cfg $PWD/build-a 12 $PWD &
T="--target portattn portattn-bench"; cfg /tmp/build-b 4 /tmp/base &
wait
echo "== built $(t)"
[ -f build-a/libportattn.so ] || exit 1
L=$W/tests.log; : > $L
run() { echo "--- $*" >> $L; timeout ${TO:-120} "$@" >> $L 2>&1; echo "exit $?: $*"; }
run build-a/tests/test_cases cuda-sm90
run build-a/tests/test_numerics cuda-sm90
run build-a/tests/test_cuda_select
run build-a/tests/test_batch_invariance cuda-sm90
run build-a/tests/test_concurrency cuda-sm90
run build-a/tests/test_graph cuda-sm90
TO=150 run build-a/tests/test_large cuda-sm90
run compute-sanitizer --tool racecheck --error-exitcode 9 build-a/tests/test_cases cuda-sm90 varlen
run compute-sanitizer --tool racecheck --error-exitcode 9 build-a/tests/test_cases cuda-sm90 serve_mix_paged16
run compute-sanitizer --tool synccheck --error-exitcode 9 build-a/tests/test_cases cuda-sm90 many_items_varlen
run compute-sanitizer --tool memcheck --error-exitcode 9 build-a/tests/test_cases cuda-sm90 serve
run ctest --test-dir build-a -R 'isa_gate_sm90|python_cuda' --output-on-failure
grep -E "cases ran|passed,|ERROR SUMMARY|RACECHECK SUMMARY|^FAIL|off the pinned|tests passed|tests failed" $L | sort | uniq -c | head -30
echo "== tests $(t)"
for r in 1 2; do for v in a b; do
  B=build-a; [ $v = b ] && B=/tmp/build-b
  timeout 120 $B/tools/portattn-bench --no-check --sweep-file results/2026-12-02-h200/c2_ab.txt --json $W/ab_${v}$r.json > $W/ab_${v}$r.log 2>&1
  echo "ab $v$r exit $?"; grep -E "^cuda" $W/ab_${v}$r.log | cut -c1-44,86-200
done; done
echo "== ab $(t)"
PORTATTN_LIBRARY=build-a/libportattn.so timeout 100 python3 tools/peer_bench.py --sweep serve --serve-pages 16 64 \
    --json $W/serve_a.json > $W/serve_a.log 2>&1; echo "serve a exit $?"; grep -E "^\| bf16" $W/serve_a.log
echo "== done $(t)"
tar czf $OUT/c2.tgz -C $OUT w
