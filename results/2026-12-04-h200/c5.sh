#!/usr/bin/env bash
# Call 5: the backward as it lands (v5: items walked by (head, first row) counters, d256's depth loop in
# groups of 4) against call 3's v3 and the landed base: backward case table, numerics, concurrency,
# test_large, compute-sanitizer memcheck/racecheck on subsets; bwd_bench A/B new/v3/base interleaved
# (2 rounds, bf16), then the new build alone in fp16 and with --deterministic.
set -uo pipefail
export PYTHONUNBUFFERED=1
W=$OUT/w; mkdir -p $W
S=$(date +%s); t() { echo "[$(( $(date +%s) - S ))s]"; }
mkdir -p /tmp/base /tmp/v3 && tar xf .device/base.tar -C /tmp/base && tar xf .device/base.tar -C /tmp/v3 &&
  cp .device/k_v3.cuh /tmp/v3/backends/cuda/sm80/sm80_bwd_kernel.cuh
cfg() { cmake -S $1 -B $2 -G Ninja -DCMAKE_BUILD_TYPE=Release -DPORTATTN_CUDA_ARCHS="80;90" -DPORTATTN_WITH_SM100=OFF \
  -DPORTATTN_ENABLE_HIP=OFF > $W/build_$3.log 2>&1 && cmake --build $2 -j $4 --target $5 >> $W/build_$3.log 2>&1 ||
  { grep -E "error|FAILED" $W/build_$3.log | head; echo "BUILD $3 FAILED"; }; }
cfg $PWD build-h new 8 "portattn test_cases_bwd test_numerics test_concurrency test_large" &
cfg /tmp/base /tmp/build-base base 4 portattn &
cfg /tmp/v3 /tmp/build-v3 v3 4 portattn &
wait; echo "== built $(t)"
L=$W/tests.log; : > $L
run() { echo "--- $*" >> $L; timeout ${TO:-120} "$@" >> $L 2>&1; echo "exit $?: $*"; }
run build-h/tests/test_cases_bwd cuda-sm80
run build-h/tests/test_cases_bwd cuda-sm80
run build-h/tests/test_numerics cuda-sm80
run build-h/tests/test_concurrency cuda-sm80
TO=150 run build-h/tests/test_large cuda-sm80
run compute-sanitizer --tool memcheck --error-exitcode 9 build-h/tests/test_cases_bwd cuda-sm80 varlen
TO=150 run compute-sanitizer --tool racecheck --racecheck-report hazard --error-exitcode 9 build-h/tests/test_cases_bwd cuda-sm80 causal
grep -E "cases ran|passed,|COVERAGE|ERROR SUMMARY|RACECHECK SUMMARY|^FAIL|^fail" $L | head -30
echo "== tests $(t)"
lib() { case $1 in new) echo $PWD/build-h/libportattn.so;; base) echo /tmp/build-base/libportattn.so;; v3) echo /tmp/build-v3/libportattn.so;; esac; }
for r in 1 2; do for v in new v3 base; do
  PORTATTN_LIBRARY=$(lib $v) timeout 100 python3 tools/bwd_bench.py --d 64 96 128 256 --s 2048 4096 --causal both > $W/ab_${v}$r.txt 2>&1; echo "ab $v$r exit $?"
done; done
python3 - $W <<'PY'
import sys, re, os
W = sys.argv[1]; R = {}
for f in sorted(os.listdir(W)):
    m = re.match(r"ab_(new|base|v3)(\d)\.txt", f)
    if not m: continue
    for l in open(os.path.join(W, f)):
        x = re.match(r"(d\d+\s+s\d+\s+b\d+\s+h\d+\s+\w+)\s+portattn\s+([\d.]+) ms.*FA2\s+([\d.]+) ms", l)
        if x: R.setdefault(x.group(1), {}).setdefault(m.group(1), []).append((float(x.group(2)), float(x.group(3))))
mean = lambda v: sum(v) / len(v)
print(f"{'point':32s} {'base':>7s} {'v3':>7s} {'new':>7s} {'FA2':>7s} {'v3/FA2':>7s} {'new/FA2':>7s} {'new/v3':>7s} {'new/base':>8s}")
for k, v in R.items():
    if not all(x in v for x in ('base', 'v3', 'new')): continue
    b, v3, n = (mean([x[0] for x in v[y]]) for y in ('base', 'v3', 'new'))
    fa = mean([x[1] for y in v for x in v[y]])
    sp = max(100 * (max(x[0] for x in v[y]) - min(x[0] for x in v[y])) / mean([x[0] for x in v[y]]) for y in v)
    print(f"{k:32s} {b:7.3f} {v3:7.3f} {n:7.3f} {fa:7.3f} {fa / v3:7.3f} {fa / n:7.3f} {v3 / n:7.3f} {b / n:8.3f}  max spread {sp:.1f}%")
PY
echo "== bwd ab $(t)"
export PORTATTN_LIBRARY=$(lib new)
timeout 60 python3 tools/bwd_bench.py --d 64 128 256 --s 2048 4096 --causal both --dtype fp16 > $W/new_fp16.txt 2>&1; echo "fp16 exit $?"
timeout 60 python3 tools/bwd_bench.py --d 64 128 256 --s 4096 --causal both --deterministic > $W/new_det.txt 2>&1; echo "det exit $?"
cat $W/new_fp16.txt $W/new_det.txt | grep -E "^d" | sed -E 's/ +\| max.*//'
tar czf $OUT/c5.tgz -C $OUT w; echo "== done $(t)"
