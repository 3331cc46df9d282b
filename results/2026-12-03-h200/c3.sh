#!/usr/bin/env bash
# Call 3: cuda-sm100's emulation build at T3 (tcgen05 emulated on the H200) after the emulation seam
# change; the short-sequence sweep (S 64..384 and the encoder shapes) beside FA2/cuDNN on the tree.
set -uo pipefail
export PYTHONUNBUFFERED=1
W=$OUT/w; mkdir -p $W
S=$(date +%s); t() { echo "[$(( $(date +%s) - S ))s]"; }
pack() { tar czf $OUT/c3.tgz -C $OUT w; }
{ nvidia-smi -L; git log --oneline -1; git status --short | head; date -u; } > $W/build.log
mkdir -p /tmp/a && tar xf .device/s1/base.tar -C /tmp/a
( cmake -S . -B build-emu -G Ninja -DCMAKE_BUILD_TYPE=Release -DPORTATTN_CUDA_ARCHS=90 \
    -DPORTATTN_SM80_GENCODE=-gencode=arch=compute_90,code=sm_90 -DPORTATTN_SM100_EMULATION=ON -DPORTATTN_ENABLE_HIP=OFF > $W/build_emu.log 2>&1 &&
  cmake --build build-emu -j 12 --target test_cases test_numerics test_concurrency >> $W/build_emu.log 2>&1 || { grep -E "error|FAILED" $W/build_emu.log | head; echo "BUILD emu FAILED"; } ) &
( cmake -S /tmp/a -B /tmp/build-a -G Ninja -DCMAKE_BUILD_TYPE=Release -DPORTATTN_CUDA_ARCHS="80;90" -DPORTATTN_WITH_SM100=OFF \
    -DPORTATTN_ENABLE_HIP=OFF > $W/build_a.log 2>&1 && cmake --build /tmp/build-a -j 4 --target portattn portattn-bench >> $W/build_a.log 2>&1 || echo "BUILD a FAILED" ) &
wait
echo "== built $(t)"
L=$W/emu.log
{ timeout 150 build-emu/tests/test_cases cuda-sm100 | tail -3; timeout 60 build-emu/tests/test_numerics cuda-sm100 | tail -2;
  timeout 60 build-emu/tests/test_concurrency cuda-sm100 | tail -2; } > $L 2>&1
cat $L
pack; echo "== emu $(t)"
PORTATTN_LIBRARY=/tmp/build-a/libportattn.so timeout 200 python3 tools/peer_bench.py --dtype bf16,fp16 --d 64 128 \
  --s 64 128 197 256 384 --tokens 32768 --causal both --json $W/short.json > $W/short.log 2>&1; echo "short exit $?"
grep -E "^\|" $W/short.log | head -50
pack; echo "== short $(t)"
PORTATTN_LIBRARY=/tmp/build-a/libportattn.so timeout 90 python3 tools/peer_bench.py --sweep encoder --dtype bf16 \
  --json $W/encoder.json > $W/encoder.log 2>&1; echo "encoder exit $?"
grep -E "^\|" $W/encoder.log | head -12
pack; echo "== done $(t)"
M='regex:^smsp__average_warps_issue_stalled_.*_per_issue_active\.ratio$,sm__pipe_tensor_op_gmma_cycles_active.avg.pct_of_peak_sustained_elapsed,sm__inst_executed_pipe_xu.avg.pct_of_peak_sustained_active,smsp__inst_executed.sum,sm__throughput.avg.pct_of_peak_sustained_elapsed'
timeout 60 ncu --clock-control none -k regex:sm90_fwd --launch-skip 2 --launch-count 1 --section SpeedOfLight --section WarpStateStats \
  --metrics "$M" /tmp/build-a/tools/portattn-bench --batch 256 --seqlen 197 --heads-q 12 --head-dim 64 --no-check --burst --warmup 1 --reps 3 > $W/ncu_pa_vitb.txt 2>&1; echo "ncu pa rc=$?"
timeout 60 ncu --clock-control none -k regex:cudnn --launch-skip 2 --launch-count 1 --section SpeedOfLight --section WarpStateStats \
  --metrics "$M" python3 .device/s1/sdpa_one.py 256 197 12 64 cudnn > $W/ncu_cudnn_vitb.txt 2>&1; echo "ncu cudnn rc=$?"
grep -E "Duration|gmma|xu|stalled_(wait|long|barrier|math|mio|short|not_sel|selected|dispatch|gmma)|Issue Slots Busy|Compute \(SM\)" $W/ncu_pa_vitb.txt $W/ncu_cudnn_vitb.txt | grep -v " 0$" | cut -c1-150 | head -40
pack; echo "== ncu $(t)"
