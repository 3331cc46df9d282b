#!/usr/bin/env bash
# Call 6 (next session): Nsight Compute on cuda-sm90's backward main kernel (sm90_bwd) beside
# FlashAttention-2's backward and cuda-sm80's (bwd_bench.py, d128 s4096 non-causal, bf16): limiter,
# stall reasons, tensor-pipe activity and the SASS instruction mix (sass_mix.py), to direct its second
# version (overlap of the next item's S^T/dP^T, dQ by TMA reduce-add). About 5 minutes.
set -uo pipefail
export PYTHONUNBUFFERED=1
W=$OUT/w; mkdir -p $W
S=$(date +%s); t() { echo "[$(( $(date +%s) - S ))s]"; }
pack() { tar czf $OUT/c6.tgz -C $OUT w; }
cmake -S . -B build-h -G Ninja -DCMAKE_BUILD_TYPE=Release -DPORTATTN_CUDA_ARCHS="90" -DPORTATTN_WITH_SM100=OFF \
  -DPORTATTN_ENABLE_HIP=OFF > $W/build.log 2>&1 && cmake --build build-h -j 16 --target portattn >> $W/build.log 2>&1 \
  || { grep -E "error|FAILED" $W/build.log | head; exit 1; }
echo "== built $(t)"
export PORTATTN_LIBRARY=$PWD/build-h/libportattn.so
SEC="--section SpeedOfLight --section ComputeWorkloadAnalysis --section MemoryWorkloadAnalysis --section WarpStateStats --section SchedulerStats --section InstructionStats --section Occupancy --section SourceCounters"
MET="--metrics sm__pipe_tensor_op_gmma_cycles_active.avg.pct_of_peak_sustained_active,sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active,smsp__inst_executed.sum,lts__t_sectors_srcunit_tex_op_red.sum"
for k in sm90:cuda-sm90:sm90_bwd sm80:cuda-sm80:sm80_bwd_main fa2:cuda-sm80:flash_bwd_dq_dk_dv; do
  n=${k%%:*}; r=${k#*:}; be=${r%%:*}; re=${r#*:}
  timeout 120 ncu --clock-control none -k regex:$re --launch-skip 2 --launch-count 1 $SEC $MET -o $W/ncu_$n -f \
    python3 tools/bwd_bench.py --backend $be --d 128 --s 4096 --causal no --warmup 1 --rep 3 > $W/ncu_$n.log 2>&1; echo "ncu $n exit $?"
  ncu --import $W/ncu_$n.ncu-rep --print-details all > $W/ncu_$n.txt 2>&1
  ncu --import $W/ncu_$n.ncu-rep --page source --csv --print-source sass > $W/ncu_${n}_sass.csv 2>&1
done
rm -f $W/*.ncu-rep
python3 results/2026-12-04-h200/sass_mix.py $W/ncu_sm90_sass.csv $W/ncu_fa2_sass.csv 2>&1 | head -60
grep -E "Duration|Warp Cycles Per Issued|Issue Slots Busy|gmma_cycles|hmma_cycles|Stall (Wait|Long|Barrier|MIO|Short|Math|GMMA|LG)" $W/ncu_sm90.txt $W/ncu_fa2.txt | cut -c1-150
gzip -9 $W/*_sass.csv; pack; echo "== done $(t)"
