#!/usr/bin/env bash
# Call 1: the landed tree (48605b8): racecheck probe, sm90/generic/sm80 checks, racecheck on the item
# ring, serving parts re-timed under the compact schedule.
set -uo pipefail
export PYTHONUNBUFFERED=1
W=$OUT/w; mkdir -p $W
S=$(date +%s); t() { echo "[$(( $(date +%s) - S ))s]"; }
{ nvidia-smi -L; git log --oneline -1; git status --short | head; date -u; } > $W/build.log
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release -DPORTATTN_CUDA_ARCHS="80;90" -DPORTATTN_WITH_SM100=OFF \
  -DPORTATTN_ENABLE_HIP=OFF >> $W/build.log 2>&1 && cmake --build build -j 16 --target portattn portattn-bench \
  test_cases test_numerics test_concurrency test_batch_invariance test_graph test_cuda_select test_large >> $W/build.log 2>&1 \
  || { grep -E "error|FAILED" $W/build.log | head; echo BUILD FAILED; }
echo "== built $(t)"
L=$W/tests.log; : > $L
run() { echo "--- $*" >> $L; timeout ${TO:-60} "$@" >> $L 2>&1; echo "exit $?: $*"; }
bash tests/probes/racecheck_probe.sh $(command -v nvcc) $PWD /tmp/rcp 2>&1 | tee $W/probe.log
cp /tmp/rcp/rc_*.log $W/ 2>/dev/null
run build/tests/test_cuda_select
run build/tests/test_cases cuda-sm90
TO=120 run build/tests/test_cases cuda-generic
run build/tests/test_cases cuda-sm80 serve
run build/tests/test_numerics cuda-sm90
run compute-sanitizer --tool racecheck --racecheck-report hazard --error-exitcode 9 build/tests/test_cases cuda-sm90 many_seqs
run compute-sanitizer --tool racecheck --racecheck-report hazard --error-exitcode 9 build/tests/test_cases cuda-sm90 varlen_causal
grep -E "cases ran|passed,|ERROR SUMMARY|RACECHECK SUMMARY|^FAIL" $L | sort | uniq -c | head -30
grep -B2 -A12 "Error: Race\|Warning: Race\|hazard" $L | head -60 > $W/race_excerpt.txt
echo "== tests $(t)"
for r in 1 2; do
  timeout 90 build/tools/portattn-bench --no-check --sweep-file results/2026-12-02-h200/mixed.txt --json $W/mixed$r.json > $W/mixed$r.log 2>&1
  echo "mixed $r exit $?"; grep -E "^cuda" $W/mixed$r.log | cut -c1-200
done
echo "== done $(t)"
tar czf $OUT/c1.tgz -C $OUT w
