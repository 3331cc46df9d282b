#!/usr/bin/env bash
# Call 1: the landed tree (d06c963) on the H200: case tables (forward sm90/sm80/generic, backward sm80),
# test_numerics; the backward beside FA2 (bwd_bench); Nsight Compute on cuda-sm80's backward and FA2's
# at d128 s4096 (limiter, stall reasons, per-SASS-instruction stall samples).
set -uo pipefail
export PYTHONUNBUFFERED=1
W=$OUT/w; mkdir -p $W
S=$(date +%s); t() { echo "[$(( $(date +%s) - S ))s]"; }
{ nvidia-smi -L; git log --oneline -1; git status --short | head; date -u; } > $W/build.log
cmake -S . -B build-h -G Ninja -DCMAKE_BUILD_TYPE=Release -DPORTATTN_CUDA_ARCHS="80;90" -DPORTATTN_WITH_SM100=OFF \
  -DPORTATTN_ENABLE_HIP=OFF >> $W/build.log 2>&1 &&
  cmake --build build-h -j 16 --target portattn test_cases test_cases_bwd test_numerics >> $W/build.log 2>&1 ||
  { grep -E "error|FAILED" $W/build.log | head; echo BUILD FAILED; }
echo "== built $(t)"
L=$W/tests.log; : > $L
run() { echo "--- $*" >> $L; timeout ${TO:-120} "$@" >> $L 2>&1; echo "exit $?: $*"; }
run build-h/tests/test_cases cuda-sm90
run build-h/tests/test_cases cuda-sm80
TO=200 run build-h/tests/test_cases cuda-generic
run build-h/tests/test_cases_bwd cuda-sm80
run build-h/tests/test_numerics cuda-sm90
grep -E "cases ran|passed,|COVERAGE|^FAIL|^fail" $L | head -30
echo "== tests $(t)"
export PORTATTN_LIBRARY=$PWD/build-h/libportattn.so
timeout 150 python3 tools/bwd_bench.py --d 64 128 --s 2048 4096 --causal both > $W/bwd_bench.txt 2>&1; echo "bwd_bench exit $?"
cat $W/bwd_bench.txt
echo "== bwd_bench $(t)"
SEC="--section SpeedOfLight --section ComputeWorkloadAnalysis --section MemoryWorkloadAnalysis --section WarpStateStats --section SchedulerStats --section InstructionStats --section LaunchStats --section Occupancy --section SourceCounters"
MET="--metrics l1tex__data_pipe_lsu_wavefronts_mem_shared_cmd_read.sum,l1tex__data_pipe_lsu_wavefronts_mem_shared_cmd_write.sum,l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum,l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum,sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active,sm__inst_executed_pipe_tensor_op_hmma.sum,smsp__inst_executed.sum,lts__t_sectors_srcunit_tex_op_red.sum"
for k in pa:sm80_bwd_main fa2:flash_bwd_dq_dk_dv; do
  n=${k%%:*}; re=${k#*:}
  timeout 150 ncu --clock-control none -k regex:$re --launch-skip 2 --launch-count 1 $SEC $MET -o $W/ncu_$n -f \
    python3 tools/bwd_bench.py --d 128 --s 4096 --causal no --warmup 1 --rep 3 > $W/ncu_$n.log 2>&1; echo "ncu $n exit $?"
  ncu --import $W/ncu_$n.ncu-rep --print-details all > $W/ncu_$n.txt 2>&1
  ncu --import $W/ncu_$n.ncu-rep --page source --csv --print-source sass > $W/ncu_${n}_sass.csv 2>&1; echo "sass csv $n $(wc -l < $W/ncu_${n}_sass.csv)"
done
grep -E "Duration|Warp Cycles Per Issued|Issue Slots Busy|hmma_cycles_active|Registers Per|Stall|stall" $W/ncu_pa.txt | head -40
echo "== ncu $(t)"
rm -f $W/*.ncu-rep
tar czf $OUT/c1.tgz -C $OUT w; echo "== done $(t)"
