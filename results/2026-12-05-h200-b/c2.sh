#!/usr/bin/env bash
# Call 2: cuda-sm80's backward with dQ in 16-column passes (-DPA_SM80_BWD_DQ_PASS=16, "dq16": one
# pass's fp32 reductions drain while the next pass's MMAs run; at d64/128 rows ptxas also drops the
# 8-byte spill) against this tree ("new"): test_cases_bwd cuda-sm80 and test_large on dq16, then
# bwd_bench beside FA2 at d64/d128, s 2k/4k, causal and not, builds interleaved, 2 rounds.
set -uo pipefail
export PYTHONUNBUFFERED=1
W=$OUT/w; mkdir -p $W; D=results/2026-12-05-h200-b
S=$(date +%s); t() { echo "[$(( $(date +%s) - S ))s]"; }
pack() { tar czf $OUT/c2.tgz -C $OUT w; }
{ nvidia-smi -L; git log --oneline -1 | cut -c1-100; git status --short | head; date -u; } > $W/env.txt
cfg() { cmake -S . -B $1 -G Ninja -DCMAKE_BUILD_TYPE=Release -DPORTATTN_CUDA_ARCHS="90" -DPORTATTN_WITH_SM100=OFF -DPORTATTN_ENABLE_HIP=OFF "${@:5}" > $W/build_$2.log 2>&1 &&
  cmake --build $1 -j $3 --target $4 >> $W/build_$2.log 2>&1 || { grep -E "error|FAILED" $W/build_$2.log | head; echo "BUILD $2 FAILED"; }; }
cfg build-h new 8 "portattn test_cases_bwd" &
cfg /tmp/build-dq16 dq16 8 "portattn test_cases_bwd test_large" -DCMAKE_CUDA_FLAGS=-DPA_SM80_BWD_DQ_PASS=16 &
wait; echo "== built $(t)"
grep -h "spill" $W/build_dq16.log | sort | uniq -c | head
run() { local L=$1; shift; echo "--- $*" >> $L; local s=$(date +%s); timeout ${TO:-120} "$@" >> $L 2>&1; echo "exit $? ($(( $(date +%s) - s ))s): $*" | tee -a $L; }
X=/tmp/build-dq16/tests
run $W/dq16.log $X/test_cases_bwd cuda-sm80; run $W/dq16.log $X/test_large cuda-sm80
grep -hE "cases ran|passed,|^FAIL|^fail" $W/dq16.log
pack; echo "== tests $(t)"
lib() { case $1 in new) echo $PWD/build-h/libportattn.so;; dq16) echo /tmp/build-dq16/libportattn.so;; esac; }
for r in 1 2; do for v in new dq16; do [ $(( $(date +%s) - S )) -lt 520 ] || break
  PORTATTN_LIBRARY=$(lib $v) timeout 100 python3 tools/bwd_bench.py --backend cuda-sm80 --d 64 128 --s 2048 4096 --causal both > $W/bwd_${v}$r.txt 2>&1 || echo "bwd $v$r failed"
done; done
python3 results/2026-12-05-h200/summ.py bwd $W bwd new dq16
pack; echo "== done $(t)"
