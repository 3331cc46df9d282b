#!/usr/bin/env bash
# Call 1: (a) cuda-sm100's emulation build on the H200 (tcgen05 emulated) on this tree: case table,
# numerics, concurrency; (b) this tree's GPU case tables (cuda-sm90, cuda-sm80 and its backward: the
# sharded test_cases and the faster CPU oracle, bitwise the same, had only run on the CPU); (c) deeper
# K/V rings on cuda-sm90 ("deep": -DPA_SM90_STAGES_D128=3 for d96/d128, -DPA_SM90_STAGES_D64=5 for
# d64) against this tree ("new"): case table and numerics, then peer_bench beside FA2 and cuDNN at d64/
# d96/d128 s 512-4096 causal and not, and the encoder shapes, builds interleaved, 2 rounds; (d) ncu on
# ViT-B/16 (256, 197, 12, 64), portattn beside cuDNN, with the SASS source page.
set -uo pipefail
export PYTHONUNBUFFERED=1
W=$OUT/w; mkdir -p $W; D=results/2026-12-05-h200-b
S=$(date +%s); t() { echo "[$(( $(date +%s) - S ))s]"; }
pack() { tar czf $OUT/c1.tgz -C $OUT w; }
{ nvidia-smi -L; git log --oneline -1 | cut -c1-100; git status --short | head; date -u; } > $W/env.txt
cfg() { cmake -S . -B $1 -G Ninja -DCMAKE_BUILD_TYPE=Release -DPORTATTN_CUDA_ARCHS="90" -DPORTATTN_ENABLE_HIP=OFF "${@:5}" > $W/build_$2.log 2>&1 &&
  cmake --build $1 -j $3 --target $4 >> $W/build_$2.log 2>&1 || { grep -E "error|FAILED" $W/build_$2.log | head; echo "BUILD $2 FAILED"; }; }
DF="-DPA_SM90_STAGES_D128=3 -DPA_SM90_STAGES_D64=5"
cfg build-h new 6 "portattn portattn-bench test_cases test_cases_bwd" -DPORTATTN_WITH_SM100=OFF &
cfg /tmp/build-emu emu 5 "test_cases test_numerics test_concurrency" -DPORTATTN_SM80_GENCODE=-gencode=arch=compute_90,code=sm_90 -DPORTATTN_SM100_EMULATION=ON &
cfg /tmp/build-deep deep 5 "portattn test_cases test_numerics" -DPORTATTN_WITH_SM100=OFF "-DCMAKE_C_FLAGS=$DF" "-DCMAKE_CUDA_FLAGS=$DF" &
wait; echo "== built $(t)"
run() { local L=$1; shift; echo "--- $*" >> $L; local s=$(date +%s); timeout ${TO:-120} "$@" >> $L 2>&1; echo "exit $? ($(( $(date +%s) - s ))s): $*" | tee -a $L; }
( E=/tmp/build-emu/tests; TO=200 run $W/emu.log $E/test_cases cuda-sm100; run $W/emu.log $E/test_numerics cuda-sm100
  run $W/emu.log $E/test_concurrency cuda-sm100 ) > $W/emu.sum 2>&1 &
N=build-h/tests X=/tmp/build-deep/tests
run $W/new.log $N/test_cases cuda-sm90; run $W/new.log $N/test_cases cuda-sm80; run $W/new.log $N/test_cases_bwd cuda-sm80
run $W/deep.log $X/test_cases cuda-sm90; run $W/deep.log $X/test_numerics cuda-sm90
wait; cat $W/emu.sum; grep -hE "cases ran|passed,|^FAIL|^fail" $W/emu.log $W/new.log $W/deep.log | head -40
pack; echo "== tests $(t)"
lib() { case $1 in new) echo $PWD/build-h/libportattn.so;; deep) echo /tmp/build-deep/libportattn.so;; esac; }
for r in 1 2; do for v in new deep; do [ $(( $(date +%s) - S )) -lt 440 ] || break
  export PORTATTN_LIBRARY=$(lib $v)
  timeout 60 python3 tools/peer_bench.py --backend cuda-sm90 --dtype bf16 --d 64 96 128 --s 512 1024 2048 4096 \
    --causal both --json $W/sw_${v}$r.json > $W/sw_${v}$r.txt 2>&1 || echo "sw $v$r failed"
  timeout 40 python3 tools/peer_bench.py --sweep encoder --dtype bf16 --json $W/enc_${v}$r.json > $W/enc_${v}$r.txt 2>&1 || echo "enc $v$r failed"
done; done; unset PORTATTN_LIBRARY
python3 results/2026-12-05-h200/summ.py pb $W sw new deep; python3 results/2026-12-05-h200/summ.py pb $W enc new deep
pack; echo "== ab $(t)"
[ $(( $(date +%s) - S )) -lt 500 ] || { echo "no time for ncu"; exit 0; }
SEC="--section SpeedOfLight --section WarpStateStats --section SchedulerStats --section InstructionStats --section MemoryWorkloadAnalysis --section SourceCounters"
M="--metrics sm__pipe_tensor_op_gmma_cycles_active.avg.pct_of_peak_sustained_elapsed,sm__inst_executed_pipe_xu.avg.pct_of_peak_sustained_active,smsp__inst_executed.sum"
timeout 40 ncu --clock-control none -k regex:sm90_fwd --launch-skip 2 --launch-count 1 $SEC $M -o $W/ncu_pa -f build-h/tools/portattn-bench \
  --batch 256 --seqlen 197 --heads-q 12 --head-dim 64 --no-check --burst --warmup 1 --reps 3 > $W/ncu_pa.log 2>&1; echo "ncu pa rc=$?"
timeout 40 ncu --clock-control none -k regex:cudnn --launch-skip 2 --launch-count 1 $SEC $M -o $W/ncu_cudnn -f \
  python3 $D/sdpa_one.py 256 197 12 64 cudnn > $W/ncu_cudnn.log 2>&1; echo "ncu cudnn rc=$?"
for n in pa cudnn; do ncu --import $W/ncu_$n.ncu-rep --print-details all > $W/ncu_$n.txt 2>&1
  ncu --import $W/ncu_$n.ncu-rep --page source --csv --print-source sass > $W/ncu_${n}_sass.csv 2>&1; done
rm -f $W/*.ncu-rep; python3 results/2026-12-04-h200/sass_mix.py $W/ncu_pa_sass.csv $W/ncu_cudnn_sass.csv 2>&1 | head -70
grep -E "Duration|Warp Cycles Per Issued|Issue Slots Busy|gmma_cycles|xu\.|Registers Per|Stall" $W/ncu_pa.txt $W/ncu_cudnn.txt | cut -c1-160 | head -40
pack; echo "== done $(t)"
