#!/usr/bin/env bash
# Call 4: the working tree (backward: dQ before the other half's dV/dK; cuda-sm80's decode, cuda-sm100
# and hip-rdna3 kernels in named phases) against the landed base and against call 3's backward (v3):
# sm80 case tables forward and backward, numerics, concurrency; backward A/B new/v3/base and the decode
# sweep new/base, interleaved, 2 rounds.
set -uo pipefail
export PYTHONUNBUFFERED=1
W=$OUT/w; mkdir -p $W
S=$(date +%s); t() { echo "[$(( $(date +%s) - S ))s]"; }
mkdir -p /tmp/base /tmp/v3 && tar xf .device/base.tar -C /tmp/base && tar xf .device/base.tar -C /tmp/v3 &&
  cp .device/k_v3.cuh /tmp/v3/backends/cuda/sm80/sm80_bwd_kernel.cuh
cfg() { cmake -S $1 -B $2 -G Ninja -DCMAKE_BUILD_TYPE=Release -DPORTATTN_CUDA_ARCHS="80;90" -DPORTATTN_WITH_SM100=OFF \
  -DPORTATTN_ENABLE_HIP=OFF > $W/build_$3.log 2>&1 && cmake --build $2 -j $4 --target $5 >> $W/build_$3.log 2>&1 ||
  { grep -E "error|FAILED" $W/build_$3.log | head; echo "BUILD $3 FAILED"; }; }
cfg $PWD build-h new 8 "portattn test_cases test_cases_bwd test_numerics test_concurrency" &
cfg /tmp/base /tmp/build-base base 4 portattn &
cfg /tmp/v3 /tmp/build-v3 v3 4 portattn &
wait; echo "== built $(t)"
L=$W/tests.log; : > $L
run() { echo "--- $*" >> $L; timeout ${TO:-120} "$@" >> $L 2>&1; echo "exit $?: $*"; }
run build-h/tests/test_cases cuda-sm80
run build-h/tests/test_cases_bwd cuda-sm80
run build-h/tests/test_numerics cuda-sm80
run build-h/tests/test_concurrency cuda-sm80
grep -E "cases ran|passed,|COVERAGE|^FAIL|^fail" $L | head -20
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
print(f"{'point':32s} {'base':>7s} {'v3':>7s} {'new':>7s} {'FA2':>7s} {'v3/FA2':>7s} {'new/FA2':>7s} {'new/v3':>7s}")
for k, v in R.items():
    if not all(x in v for x in ('base', 'v3', 'new')): continue
    b, v3, n = (mean([x[0] for x in v[y]]) for y in ('base', 'v3', 'new'))
    fa = mean([x[1] for y in v for x in v[y]])
    sp = max(100 * (max(x[0] for x in v[y]) - min(x[0] for x in v[y])) / mean([x[0] for x in v[y]]) for y in v)
    print(f"{k:32s} {b:7.3f} {v3:7.3f} {n:7.3f} {fa:7.3f} {fa / v3:7.3f} {fa / n:7.3f} {v3 / n:7.3f}  max spread {sp:.1f}%")
PY
echo "== bwd ab $(t)"
for r in 1 2; do for v in new base; do
  PORTATTN_LIBRARY=$(lib $v) timeout 100 python3 tools/peer_bench.py --sweep decode --json $W/dec_${v}$r.json > $W/dec_${v}$r.log 2>&1; echo "dec $v$r exit $?"
done; done
python3 - $W <<'PY'
import sys, json, os
W = sys.argv[1]; R = {}
for v in ("new", "base"):
    for r in "12":
        f = os.path.join(W, f"dec_{v}{r}.json")
        if not os.path.exists(f): continue
        for row in json.load(open(f))["rows"]:
            r = row["impls"].get("portattn", {})
            key = "b%d skv%d d%d" % (row["b"], row["skv"], row["d"])
            R.setdefault(key, {}).setdefault(v, []).append(r.get("ms"))
            R[key].setdefault("cudnn_" + v, []).append(row["impls"].get("cuDNN", {}).get("ms"))
for k, v in R.items():
    if "new" in v and "base" in v:
        n, b = sum(v["new"]) / len(v["new"]), sum(v["base"]) / len(v["base"])
        c = [x for y in ("cudnn_new", "cudnn_base") for x in v.get(y, []) if x]
        print(k, f"base {b * 1000:.1f} us new {n * 1000:.1f} us new/base time {n / b:.3f}" + (f" cuDNN {1000 * sum(c) / len(c):.1f} us" if c else ""))
if not R: print("decode json layout not recognised; see dec_*.log")
PY
grep -hE "^\|? *(1|8|32) x" $W/dec_new1.log | head -3
tar czf $OUT/c4.tgz -C $OUT w; echo "== done $(t)"
