#!/usr/bin/env bash
# Call 1: last session's three unmeasured mends (registry zeroing, table macros, store_pair) on the H200:
# select_dump against d06c963 (4000 seeded calls, outputs diffed), the case tables forward and backward,
# test_numerics, racecheck on a backward subset; then Nsight Compute on cuda-sm80's forward at d96 and
# d192 beside FlashAttention-2's (bf16 s4096 non-causal), and the SASS of those instances.
set -uo pipefail
export PYTHONUNBUFFERED=1
W=$OUT/w; mkdir -p $W
S=$(date +%s); t() { echo "[$(( $(date +%s) - S ))s]"; }
{ nvidia-smi -L; git log --oneline -1; date -u; } > $W/env.txt
mkdir -p /tmp/base && tar xf .device/base.tar -C /tmp/base && cp .device/select_dump.c /tmp/base/tests/ &&
  echo 'portattn_test(select_dump LABELS "cpu;api" ARGS 300 SOURCES select_dump.c)' >> /tmp/base/tests/CMakeLists.txt
cfg() { cmake -S $1 -B $2 -G Ninja -DCMAKE_BUILD_TYPE=Release -DPORTATTN_CUDA_ARCHS="80;90" -DPORTATTN_WITH_SM100=OFF \
  -DPORTATTN_ENABLE_HIP=OFF > $W/build_$3.log 2>&1 && cmake --build $2 -j $4 --target $5 >> $W/build_$3.log 2>&1 ||
  { grep -E "error|FAILED" $W/build_$3.log | head; echo "BUILD $3 FAILED"; }; }
cfg $PWD build-h new 10 "portattn select_dump test_cases test_cases_bwd test_numerics" &
cfg /tmp/base /tmp/build-base base 6 "portattn select_dump" &
wait; echo "== built $(t)"
unset PORTATTN_BACKEND
timeout 60 build-h/tests/select_dump > $W/sel_new.txt 2>&1; echo "sel new exit $?"
timeout 60 /tmp/build-base/tests/select_dump > $W/sel_base.txt 2>&1; echo "sel base exit $?"
diff $W/sel_base.txt $W/sel_new.txt > $W/sel_diff.txt && echo "select_dump: IDENTICAL ($(wc -l < $W/sel_new.txt) lines)" ||
  { echo "select_dump: $(grep -c '^<' $W/sel_diff.txt) lines differ"; head -c 2000 $W/sel_diff.txt; }
rm -f $W/sel_base.txt; gzip $W/sel_new.txt
echo "== select $(t)"
L=$W/tests.log; : > $L
run() { echo "--- $*" >> $L; timeout ${TO:-100} "$@" >> $L 2>&1; echo "exit $?: $*"; }
run build-h/tests/test_cases cuda-sm90
run build-h/tests/test_cases cuda-sm80
run build-h/tests/test_cases_bwd cuda-sm80
run build-h/tests/test_numerics cuda-sm90
run build-h/tests/test_numerics cuda-sm80
TO=120 run build-h/tests/test_cases cuda-generic
TO=90 run compute-sanitizer --tool racecheck --racecheck-report hazard --error-exitcode 9 build-h/tests/test_cases_bwd cuda-sm80 s127
grep -E "cases ran|passed,|COVERAGE|^FAIL|^fail|ERROR SUMMARY|RACECHECK SUMMARY" $L | head -30
echo "== tests $(t)"
for d in 96 192; do
  o=$(find build-h -name "sm80_fwd_d$d.cu.o" | head -1); cuobjdump -sass "$o" > $W/sass_fwd_d$d.txt 2>&1; echo "sass d$d $(wc -l < $W/sass_fwd_d$d.txt)"
done
export PORTATTN_LIBRARY=$PWD/build-h/libportattn.so
SEC="--section SpeedOfLight --section WarpStateStats --section InstructionStats --section LaunchStats --section Occupancy --section SourceCounters"
MET="--metrics l1tex__data_pipe_lsu_wavefronts_mem_shared_cmd_read.sum,l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum,sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active,sm__inst_executed_pipe_tensor_op_hmma.sum,smsp__inst_executed.sum,sm__cycles_elapsed.max"
for d in 96 192; do for k in pa:sm80_fwd fa2:flash_fwd_kernel; do
  n=${k%%:*}_d$d; re=${k#*:}
  timeout 100 ncu --clock-control none -k regex:$re --launch-skip 1 --launch-count 1 $SEC $MET -o $W/ncu_$n -f \
    python3 tools/peer_bench.py --backend cuda-sm80 --no-auto --d $d --s 4096 --causal no --warmup 1 --rep 3 > $W/ncu_$n.log 2>&1; echo "ncu $n exit $?"
  ncu --import $W/ncu_$n.ncu-rep --print-details all > $W/ncu_$n.txt 2>&1
  ncu --import $W/ncu_$n.ncu-rep --page source --csv --print-source sass > $W/ncu_${n}_sass.csv 2>&1
  grep -E "^  [a-z_]+ |Duration|Registers Per|Executed Ipc A|hmma|inst_executed.sum|Warp Cycles Per Issued" $W/ncu_$n.txt | head -12
done; done
echo "== ncu $(t)"
rm -f $W/*.ncu-rep; gzip $W/*_sass.csv $W/sass_*.txt
tar czf $OUT/c1.tgz -C $OUT w; echo "== done $(t)"
