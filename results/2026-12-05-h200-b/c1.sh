#!/usr/bin/env bash
# Call 1: (a) cuda-sm100's emulation build on the H200 (tcgen05 emulated) on this tree: case table,
# numerics, concurrency; (b) this tree's GPU case tables (the sharded test_cases, the simulation
# runtime changes of the last session had only run on the CPU); (c) cuda-sm90 d96/d128 with three K/V
# slots (-DPA_SM90_STAGES_D128=3, "s3") against this tree ("new"): case table and numerics, then
# peer_bench beside FA2 and cuDNN at s 512-4096, causal and not, builds interleaved, 2 rounds.
set -uo pipefail
export PYTHONUNBUFFERED=1
W=$OUT/w; mkdir -p $W; D=results/2026-12-05-h200-b
S=$(date +%s); t() { echo "[$(( $(date +%s) - S ))s]"; }
pack() { tar czf $OUT/c1.tgz -C $OUT w; }
{ nvidia-smi -L; git log --oneline -1 | cut -c1-100; git status --short | head; date -u; } > $W/env.txt
cfg() { cmake -S . -B $1 -G Ninja -DCMAKE_BUILD_TYPE=Release -DPORTATTN_CUDA_ARCHS="90" -DPORTATTN_ENABLE_HIP=OFF "${@:5}" > $W/build_$2.log 2>&1 &&
  cmake --build $1 -j $3 --target $4 >> $W/build_$2.log 2>&1 || { grep -E "error|FAILED" $W/build_$2.log | head; echo "BUILD $2 FAILED"; }; }
cfg build-h new 6 "portattn portattn-bench test_cases test_cases_bwd test_numerics test_concurrency test_large" -DPORTATTN_WITH_SM100=OFF &
cfg /tmp/build-emu emu 6 "test_cases test_numerics test_concurrency" -DPORTATTN_SM80_GENCODE=-gencode=arch=compute_90,code=sm_90 -DPORTATTN_SM100_EMULATION=ON &
cfg /tmp/build-s3 s3 4 "portattn test_cases test_numerics" -DPORTATTN_WITH_SM100=OFF -DCMAKE_C_FLAGS=-DPA_SM90_STAGES_D128=3 -DCMAKE_CUDA_FLAGS=-DPA_SM90_STAGES_D128=3 &
wait; echo "== built $(t)"
run() { local L=$1; shift; echo "--- $*" >> $L; local s=$(date +%s); timeout ${TO:-120} "$@" >> $L 2>&1; echo "exit $? ($(( $(date +%s) - s ))s): $*" | tee -a $L; }
( E=/tmp/build-emu/tests; TO=200 run $W/emu.log $E/test_cases cuda-sm100; run $W/emu.log $E/test_numerics cuda-sm100
  run $W/emu.log $E/test_concurrency cuda-sm100 ) > $W/emu.sum 2>&1 &
N=build-h/tests
for be in cuda-sm90 cuda-sm80 cuda-generic; do run $W/new.log $N/test_cases $be; done
run $W/new.log $N/test_cases_bwd cuda-sm80; run $W/new.log $N/test_cases_bwd cuda-generic
for be in cuda-sm90 cuda-sm80; do run $W/new.log $N/test_numerics $be; run $W/new.log $N/test_concurrency $be; done
run $W/new.log $N/test_large cuda-sm80
run $W/s3.log /tmp/build-s3/tests/test_cases cuda-sm90; run $W/s3.log /tmp/build-s3/tests/test_numerics cuda-sm90
wait; cat $W/emu.sum; grep -hE "cases ran|passed,|^FAIL|^fail|ok$" $W/emu.log $W/new.log $W/s3.log | sort | uniq -c | head -40
pack; echo "== tests $(t)"
# ncu on ViT-B/16 (256, 197, 12, 64): portattn's cuda-sm90 beside cuDNN, sections and the SASS source page
SEC="--section SpeedOfLight --section WarpStateStats --section SchedulerStats --section InstructionStats --section MemoryWorkloadAnalysis --section SourceCounters"
M="--metrics sm__pipe_tensor_op_gmma_cycles_active.avg.pct_of_peak_sustained_elapsed,sm__inst_executed_pipe_xu.avg.pct_of_peak_sustained_active,smsp__inst_executed.sum"
timeout 90 ncu --clock-control none -k regex:sm90_fwd --launch-skip 2 --launch-count 1 $SEC $M -o $W/ncu_pa -f build-h/tools/portattn-bench \
  --batch 256 --seqlen 197 --heads-q 12 --head-dim 64 --no-check --burst --warmup 1 --reps 3 > $W/ncu_pa.log 2>&1; echo "ncu pa rc=$?"
timeout 90 ncu --clock-control none -k regex:cudnn --launch-skip 2 --launch-count 1 $SEC $M -o $W/ncu_cudnn -f \
  python3 $D/sdpa_one.py 256 197 12 64 cudnn > $W/ncu_cudnn.log 2>&1; echo "ncu cudnn rc=$?"
for n in pa cudnn; do ncu --import $W/ncu_$n.ncu-rep --print-details all > $W/ncu_$n.txt 2>&1
  ncu --import $W/ncu_$n.ncu-rep --page source --csv --print-source sass > $W/ncu_${n}_sass.csv 2>&1; done
rm -f $W/*.ncu-rep; python3 results/2026-12-04-h200/sass_mix.py $W/ncu_pa_sass.csv $W/ncu_cudnn_sass.csv 2>&1 | head -70
grep -E "Duration|Warp Cycles Per Issued|Issue Slots Busy|gmma_cycles|xu\.|Registers Per|Stall" $W/ncu_pa.txt $W/ncu_cudnn.txt | cut -c1-160 | head -40
pack; echo "== ncu $(t)"
lib() { case $1 in new) echo $PWD/build-h/libportattn.so;; s3) echo /tmp/build-s3/libportattn.so;; esac; }
for r in 1 2; do for v in new s3; do [ $(( $(date +%s) - S )) -lt 500 ] || break
  PORTATTN_LIBRARY=$(lib $v) timeout 90 python3 tools/peer_bench.py --backend cuda-sm90 --dtype bf16 --d 96 128 --s 512 1024 2048 4096 \
    --causal both --json $W/s3ab_${v}$r.json > $W/s3ab_${v}$r.txt 2>&1 || echo "s3ab $v$r failed"
done; done
python3 results/2026-12-05-h200/summ.py pb $W s3ab new s3
pack; echo "== done $(t)"
