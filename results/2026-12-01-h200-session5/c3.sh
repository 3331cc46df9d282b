#!/usr/bin/env bash
# Call 3: KV d128 with three K/V slots (A); A/B against lane 0 issuing every page box (C); tests on A;
# ncu of the KV kernel at pages 16 and 256; the producer's SASS.
set -uo pipefail
export PYTHONUNBUFFERED=1
W=$OUT/w; mkdir -p $W
S=$(date +%s); t() { echo "[$(( $(date +%s) - S ))s]"; }
cfg() { cmake -S . -B $1 -G Ninja -DCMAKE_BUILD_TYPE=Release -DPORTATTN_CUDA_ARCHS="80;90" -DPORTATTN_WITH_SM100=OFF \
  -DPORTATTN_ENABLE_HIP=OFF "${@:2}" >> $W/build.log 2>&1 && cmake --build $1 -j 16 >> $W/build.log 2>&1 ||
  { grep -E "error|FAILED" $W/build.log | head; exit 1; }; }
cfg build-a
cfg build-c -DCMAKE_CUDA_FLAGS=-DPA_SM90_PAGE_ONE_ISSUER=1
echo "== built $(t)"
L=$W/tests.log; : > $L
run() { echo "--- $*" >> $L; "$@" >> $L 2>&1; echo "exit $?: $*"; }
run build-a/tests/test_cases cuda-sm90
grep -E "cases ran|passed," $L | tail -2
run build-a/tests/test_batch_invariance cuda-sm90
run build-a/tests/test_numerics cuda-sm90
run build-a/tests/test_concurrency cuda-sm90
run build-a/tests/test_cuda_select
run build-a/tests/test_cases cuda-sm80 serve
run compute-sanitizer --tool racecheck --error-exitcode 9 build-a/tests/test_cases cuda-sm90 kvprefill_paged16
run compute-sanitizer --tool synccheck --error-exitcode 9 build-a/tests/test_cases cuda-sm90 serve_mix_paged16_gqa4
grep -E "ERROR SUMMARY|RACECHECK SUMMARY|^FAIL" $L | sort | uniq -c
echo "== tests $(t)"
for r in 1 2; do for v in a c; do
  PORTATTN_LIBRARY=build-$v/libportattn.so python3 tools/peer_bench.py --sweep serve --serve-pages 16 32 64 256 \
    --json $W/serve_${v}$r.json > $W/serve_${v}$r.log 2>&1; echo "serve $v$r exit $?"
  grep -E "^\| bf16" $W/serve_${v}$r.log
done; done
echo "== serve $(t)"
for pg in 16 256; do
  timeout 90 ncu --clock-control none -k regex:sm90_fwd --launch-skip 2 --launch-count 1 --section SpeedOfLight \
    --metrics 'regex:^smsp__average_warps_issue_stalled_.*_per_issue_active\.ratio$,regex:^sm__pipe_tensor_op_gmma_cycles_active\.avg\.pct_of_peak_sustained_active$,dram__bytes_read.sum,lts__t_sectors_srcunit_tex_op_read.sum' \
    build-a/tools/portattn-bench --serve 2048 --seqlen-k 16384 --heads-q 32 --heads-kv 8 --head-dim 128 --causal \
    --page-size $pg --no-check --burst --warmup 1 --reps 3 > $W/ncu_$pg.log 2>&1; echo "ncu page $pg rc=$?"
  grep -E "Duration|Throughput|gmma|dram__bytes|lts__t_sectors|stalled" $W/ncu_$pg.log | grep -v -E " 0$| 0\.0*$" | head -30
done
echo "== ncu $(t)"
cuobjdump --dump-sass build-a/backends/cuda/CMakeFiles/portattn_cuda_sm90_fwd_kv_d128.dir/sm90/sm90_fwd_kv_d128.cu.o > $W/kv128.sass 2>&1
echo "UTMALDG lines: $(grep -c UTMALDG $W/kv128.sass)"
echo "== done $(t)"
tar czf $OUT/c3.tgz -C $OUT w
