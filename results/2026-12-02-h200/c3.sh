#!/usr/bin/env bash
# Call 3: the compact varlen schedule with the item ring (build a, the working tree) against the
# GQA-packing commit 4fdc377 (build b, a git archive of it); sanitizers on the varlen paths.
set -uo pipefail
export PYTHONUNBUFFERED=1
W=$OUT/w; mkdir -p $W
S=$(date +%s); t() { echo "[$(( $(date +%s) - S ))s]"; }
{ nvidia-smi -L; git status --short | head; date -u; } > $W/build.log
mkdir -p /tmp/base && git archive 4fdc377 | tar x -C /tmp/base
cfg() { cmake -S $3 -B $1 -G Ninja -DCMAKE_BUILD_TYPE=Release -DPORTATTN_CUDA_ARCHS="80;90" -DPORTATTN_WITH_SM100=OFF \
  -DPORTATTN_ENABLE_HIP=OFF > $W/build_$(basename $1).log 2>&1 && cmake --build $1 -j $2 $T >> $W/build_$(basename $1).log 2>&1 ||
  { grep -E "error|FAILED" $W/build_$(basename $1).log | head; echo "BUILD $1 FAILED"; }; }
T="--target portattn portattn-bench test_cases test_numerics test_concurrency test_batch_invariance test_graph test_cuda_select"
cfg $PWD/build-a 12 $PWD &
T="--target portattn portattn-bench"; cfg /tmp/build-b 4 /tmp/base &
wait
echo "== built $(t)"
[ -f build-a/libportattn.so ] || exit 1
L=$W/tests.log; : > $L
run() { echo "--- $*" >> $L; timeout ${TO:-60} "$@" >> $L 2>&1; echo "exit $?: $*"; }
run build-a/tests/test_cases cuda-sm90
run build-a/tests/test_numerics cuda-sm90
run build-a/tests/test_concurrency cuda-sm90
run build-a/tests/test_batch_invariance cuda-sm90
run build-a/tests/test_graph cuda-sm90
run build-a/tests/test_cuda_select
run compute-sanitizer --tool racecheck --error-exitcode 9 build-a/tests/test_cases cuda-sm90 many_seqs
run compute-sanitizer --tool racecheck --error-exitcode 9 build-a/tests/test_cases cuda-sm90 serve_many
run compute-sanitizer --tool racecheck --error-exitcode 9 build-a/tests/test_cases cuda-sm90 varlen_causal
run compute-sanitizer --tool synccheck --error-exitcode 9 build-a/tests/test_cases cuda-sm90 many_seqs
grep -E "cases ran|passed,|ERROR SUMMARY|RACECHECK SUMMARY|^FAIL|Error: Race" $L | sort | uniq -c | head -30
echo "== tests $(t)"
for r in 1 2; do for v in a b; do
  B=build-a; [ $v = b ] && B=/tmp/build-b
  [ $(( $(date +%s) - S )) -gt 400 ] && break 2
  timeout 75 $B/tools/portattn-bench --no-check --sweep-file results/2026-12-02-h200/c3_ab.txt --json $W/ab_${v}$r.json > $W/ab_${v}$r.log 2>&1
  echo "ab $v$r exit $?"; grep -E "^cuda" $W/ab_${v}$r.log | cut -c1-44,86-200
done; done
echo "== done $(t)"
tar czf $OUT/c3.tgz -C $OUT w
