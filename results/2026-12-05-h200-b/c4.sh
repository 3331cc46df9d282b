#!/usr/bin/env bash
# Call 4: the cuda-sm90 backward (wgmma + TMA, sm90_bwd_kernel.cuh) on a GPU for the first time: its case
# table (forced: test_cases_bwd cuda-sm90; the deterministic mode is declined, so the harness checks the
# default mode), racecheck and synccheck on two cases, then the backward beside FlashAttention-2 and
# cuda-sm80's backward (bwd_bench.py, one process per backend, interleaved, 2 rounds) at d64/d128,
# s 2k/4k, causal and not. Before it: only the CPU simulation (test_sm90_bwd_sim) had run it.
set -uo pipefail
export PYTHONUNBUFFERED=1
W=$OUT/w; mkdir -p $W
S=$(date +%s); t() { echo "[$(( $(date +%s) - S ))s]"; }
pack() { tar czf $OUT/c4.tgz -C $OUT w; }
{ nvidia-smi -L; git log --oneline -1 | cut -c1-100; git status --short | head; date -u; } > $W/env.txt
cmake -S . -B build-h -G Ninja -DCMAKE_BUILD_TYPE=Release -DPORTATTN_CUDA_ARCHS="90" -DPORTATTN_WITH_SM100=OFF \
  -DPORTATTN_ENABLE_HIP=OFF > $W/build.log 2>&1 && cmake --build build-h -j 16 --target portattn test_cases_bwd >> $W/build.log 2>&1 \
  || { grep -E "error|FAILED" $W/build.log | head -20; pack; exit 1; }
echo "== built $(t)"
run() { local L=$1; shift; echo "--- $*" >> $L; local s=$(date +%s); timeout ${TO:-150} "$@" >> $L 2>&1; echo "exit $? ($(( $(date +%s) - s ))s): $*" | tee -a $L; }
X=build-h/tests
run $W/cases.log $X/test_cases_bwd cuda-sm90
grep -E "^FAIL|COVERAGE|cases ran|passed," $W/cases.log | head -40
grep -E "^ok " $W/cases.log | head -5
TO=120 run $W/san.log compute-sanitizer --tool racecheck $X/test_cases_bwd cuda-sm90 d128_causal
TO=120 run $W/san.log compute-sanitizer --tool synccheck $X/test_cases_bwd cuda-sm90 gqa
grep -E "ERROR SUMMARY|hazard|RACECHECK SUMMARY|^FAIL" $W/san.log | head
pack; echo "== tests $(t)"
for r in 1 2; do for be in cuda-sm90 cuda-sm80; do [ $(( $(date +%s) - S )) -lt 500 ] || break
  PORTATTN_LIBRARY=$PWD/build-h/libportattn.so timeout 100 python3 tools/bwd_bench.py --backend $be --d 64 128 \
    --s 2048 4096 --causal both > $W/bwd_${be#cuda-}$r.txt 2>&1 || echo "bwd $be$r failed"
done; done
python3 results/2026-12-05-h200/summ.py bwd $W bwd sm80 sm90
grep -h "kernel\|sm90-bwd\|max" $W/bwd_sm901.txt | head -12
pack; echo "== done $(t)"
