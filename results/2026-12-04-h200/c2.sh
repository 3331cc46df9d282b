#!/usr/bin/env bash
# Call 2: cuda-sm80's backward with swizzle-free fragment addressing (the working tree) against the
# landed base (.device/base.tar): backward case table, then bwd_bench A/B interleaved (2 rounds), then
# Nsight Compute's instruction count and tensor-pipe use of the new kernel at d128 s4096.
set -uo pipefail
export PYTHONUNBUFFERED=1
W=$OUT/w; mkdir -p $W
S=$(date +%s); t() { echo "[$(( $(date +%s) - S ))s]"; }
mkdir -p /tmp/base && tar xf .device/base.tar -C /tmp/base
cfg() { cmake -S $1 -B $2 -G Ninja -DCMAKE_BUILD_TYPE=Release -DPORTATTN_CUDA_ARCHS="80;90" -DPORTATTN_WITH_SM100=OFF \
  -DPORTATTN_ENABLE_HIP=OFF > $W/build_$3.log 2>&1 && cmake --build $2 -j $4 --target $5 >> $W/build_$3.log 2>&1 ||
  { grep -E "error|FAILED" $W/build_$3.log | head; echo "BUILD $3 FAILED"; }; }
cfg $PWD build-h new 10 "portattn test_cases_bwd test_numerics test_concurrency" &
cfg /tmp/base /tmp/build-base base 6 portattn &
wait; echo "== built $(t)"
L=$W/tests.log; : > $L
run() { echo "--- $*" >> $L; timeout ${TO:-120} "$@" >> $L 2>&1; echo "exit $?: $*"; }
run build-h/tests/test_cases_bwd cuda-sm80
run build-h/tests/test_numerics cuda-sm80
run build-h/tests/test_concurrency cuda-sm80
grep -E "cases ran|passed,|COVERAGE|^FAIL|^fail" $L | head -20
echo "== tests $(t)"
for r in 1 2; do for v in new base; do
  B=$PWD/build-h; [ $v = base ] && B=/tmp/build-base
  PORTATTN_LIBRARY=$B/libportattn.so timeout 100 python3 tools/bwd_bench.py --d 64 96 128 256 --s 2048 4096 --causal both > $W/ab_${v}$r.txt 2>&1; echo "ab $v$r exit $?"
done; done
python3 - $W <<'PY'
import sys, re, os
W = sys.argv[1]; R = {}
for f in sorted(os.listdir(W)):
    m = re.match(r"ab_(new|base)(\d)\.txt", f)
    if not m: continue
    for l in open(os.path.join(W, f)):
        x = re.match(r"(d\d+\s+s\d+\s+b\d+\s+h\d+\s+\w+)\s+portattn\s+([\d.]+) ms.*FA2\s+([\d.]+) ms", l)
        if x: R.setdefault(x.group(1), {}).setdefault(m.group(1), []).append((float(x.group(2)), float(x.group(3))))
print(f"{'point':32s} {'base ms':>9s} {'new ms':>9s} {'new/base':>8s} {'FA2 ms':>8s} {'base/FA2':>8s} {'new/FA2':>8s}")
for k, v in R.items():
    b = [x[0] for x in v.get('base', [])]; n = [x[0] for x in v.get('new', [])]; fa = [x[1] for x in v.get('base', []) + v.get('new', [])]
    if not b or not n: continue
    mb, mn, mf = sum(b) / len(b), sum(n) / len(n), sum(fa) / len(fa)
    print(f"{k:32s} {mb:9.3f} {mn:9.3f} {mb / mn:8.3f} {mf:8.3f} {mf / mb:8.3f} {mf / mn:8.3f}   spread new {100 * (max(n) - min(n)) / mn:.1f}% base {100 * (max(b) - min(b)) / mb:.1f}%")
PY
echo "== ab $(t)"
export PORTATTN_LIBRARY=$PWD/build-h/libportattn.so
MET="--metrics l1tex__data_pipe_lsu_wavefronts_mem_shared_cmd_read.sum,sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active,sm__inst_executed_pipe_tensor_op_hmma.sum,smsp__inst_executed.sum,gpu__time_duration.sum"
timeout 120 ncu --clock-control none -k regex:sm80_bwd_main --launch-skip 2 --launch-count 1 --section WarpStateStats --section SourceCounters $MET -o $W/ncu_new -f \
  python3 tools/bwd_bench.py --d 128 --s 4096 --causal no --warmup 1 --rep 3 > $W/ncu_new.log 2>&1; echo "ncu exit $?"
ncu --import $W/ncu_new.ncu-rep --print-details all > $W/ncu_new.txt 2>&1
ncu --import $W/ncu_new.ncu-rep --page source --csv --print-source sass > $W/ncu_new_sass.csv 2>&1
grep -E "inst_executed|hmma|gpu__time|wavefronts|Stall (Wait|Short|Long|Math|No Inst|Barrier|MIO)|Warp Cycles Per Issued" $W/ncu_new.txt | head -20
rm -f $W/*.ncu-rep; tar czf $OUT/c2.tgz -C $OUT w; echo "== done $(t)"
