#!/usr/bin/env bash
# One full session on a CUDA machine (the H200 of the device tool): build, the whole suite, the
# compute-sanitizer tools on a subset, the SASS check, then portattn-bench beside the PyTorch
# peers (.anchors/sdpa.py, a copy of shared/anchors/sdpa.py) in the same call. Logs go to $OUT.
set -uo pipefail
OUT=${OUT:-out}
mkdir -p "$OUT"
B=build-dev
DIMS=${DIMS:-64,128}
SEQS=${SEQS:-1024,4096,16384}
{ nvidia-smi; nvcc --version; git log -1 --format='commit %H %cd' 2>/dev/null; date -u; } > "$OUT/env.txt" 2>&1
cmake -S . -B $B -G Ninja -DCMAKE_BUILD_TYPE=Release -DPORTATTN_CUDA_ARCHS="${ARCHS:-80;90}" > "$OUT/build.log" 2>&1 &&
  cmake --build $B -j 16 >> "$OUT/build.log" 2>&1 || { tail -40 "$OUT/build.log"; exit 1; }

echo "== ctest"; ctest --test-dir $B -j 8 --output-on-failure > "$OUT/ctest.log" 2>&1; tail -12 "$OUT/ctest.log"
echo "== case table on cuda-generic"; $B/tests/test_cases cuda-generic > "$OUT/cases_cuda_generic.log" 2>&1
grep -E "FAIL|cases ran|passed" "$OUT/cases_cuda_generic.log" | tail -8

echo "== compute-sanitizer"
for t in "memcheck varlen" "memcheck d256" "racecheck window_16" "racecheck d59" "synccheck causal" "initcheck sk0"; do
  set -- $t
  compute-sanitizer --tool $1 --error-exitcode 9 $B/tests/test_cases cuda-generic $2 > "$OUT/sanitizer_$1_$2.log" 2>&1
  echo "$1 on '$2': rc=$? $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' "$OUT/sanitizer_$1_$2.log" | tail -1) $(grep -E '^[0-9]+ passed' "$OUT/sanitizer_$1_$2.log")"
done

echo "== SASS"
obj=$(find $B -name 'generic_fwd.cu.o' | head -1)
cuobjdump --dump-sass "$obj" > "$OUT/generic.sass" 2>&1
echo "local memory instructions (LDL/STL) in generic kernels: $(grep -c -E '\b(LDL|STL)\b' "$OUT/generic.sass")"

echo "== bench"
$B/tools/portattn-bench --backend cuda-generic --seqlen 2048 --batch 2 --heads-q 16 --head-dim 128 --causal --lse \
  --check-limit 1e12 2>&1 | tee "$OUT/bench_check.log"
$B/tools/portattn-bench --backend cuda-generic --sweep --sweep-dims $DIMS --sweep-seqlens $SEQS \
  --dtype bf16 --reps 10 --warmup 3 --no-check --json "$OUT/bench_generic.json" > "$OUT/bench_generic.log" 2>&1
cat "$OUT/bench_generic.log"
PYTHONUNBUFFERED=1 python3 .anchors/sdpa.py --d ${DIMS//,/ } --s ${SEQS//,/ } --dtype bf16 --json "$OUT/peers.json" \
  > "$OUT/peers.log" 2>&1
cat "$OUT/peers.log"
