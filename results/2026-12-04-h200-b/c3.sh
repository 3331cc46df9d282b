#!/usr/bin/env bash
# Call 3: cuda-sm80's forward with per-head-dim schedule flags (sm80_instances.h) against the landed kernel
# (HEAD): outputs bitwise equal on 72 seeded calls; test_cases, test_numerics, test_batch_invariance and
# test_concurrency on cuda-sm80; A/B beside FA2 (3 interleaved rounds bf16, 1 fp16).
set -uo pipefail
export PYTHONUNBUFFERED=1
W=$OUT/w; mkdir -p $W
S=$(date +%s); t() { echo "[$(( $(date +%s) - S ))s]"; }
mkdir -p /tmp/base && tar xf .device/head.tar -C /tmp/base
cfg() { cmake -S $1 -B $2 -G Ninja -DCMAKE_BUILD_TYPE=Release -DPORTATTN_CUDA_ARCHS="90" -DPORTATTN_WITH_SM100=OFF \
  -DPORTATTN_ENABLE_HIP=OFF > $W/build_$3.log 2>&1 && cmake --build $2 -j $4 --target $5 >> $W/build_$3.log 2>&1 ||
  { grep -E "error|FAILED" $W/build_$3.log | head; echo "BUILD $3 FAILED"; }; }
cfg $PWD build-h new 10 "portattn test_cases test_numerics test_batch_invariance test_concurrency" &
cfg /tmp/base /tmp/build-base base 6 "portattn" &
wait; echo "== built $(t)"; grep -i 'spill' $W/build_new.log | grep sm80_fwd | sed 's/.*function//' | head
L=$W/tests.log; : > $L
run() { echo "--- $*" >> $L; timeout ${TO:-100} "$@" >> $L 2>&1; echo "exit $?: $*"; }
run build-h/tests/test_cases cuda-sm80
run build-h/tests/test_numerics cuda-sm80
run build-h/tests/test_batch_invariance cuda-sm80
run build-h/tests/test_concurrency cuda-sm80
grep -E "cases ran|passed,|^FAIL|^fail" $L | head
echo "== tests $(t)"
PORTATTN_LIBRARY=/tmp/build-base/libportattn.so python3 results/2026-12-04-h200-b/same_out.py /tmp/base.pt
PORTATTN_LIBRARY=$PWD/build-h/libportattn.so python3 results/2026-12-04-h200-b/same_out.py /tmp/new.pt
python3 - <<'PY'
import torch
a, b = torch.load("/tmp/base.pt"), torch.load("/tmp/new.pt")
bad = [k for k in a if not (torch.equal(a[k][0], b[k][0]) and torch.equal(a[k][1], b[k][1]))]
print("bitwise:", len(a) - len(bad), "of", len(a), "calls equal;", "differ:", bad[:8])
PY
echo "== bitwise $(t)"
for r in 1 2 3; do for v in base new; do
  lib=/tmp/build-base/libportattn.so; [ $v = new ] && lib=$PWD/build-h/libportattn.so
  PORTATTN_LIBRARY=$lib timeout 100 python3 results/2026-12-04-h200-b/ab_fwd.py $v $W/ab_${v}_$r.json cuda-sm80 > $W/ab_${v}_$r.txt 2>&1 || echo "ab $v $r failed"
done; done; echo "== bf16 $(t)"
for v in base new; do
  lib=/tmp/build-base/libportattn.so; [ $v = new ] && lib=$PWD/build-h/libportattn.so
  PORTATTN_LIBRARY=$lib timeout 100 python3 results/2026-12-04-h200-b/ab_fwd.py $v $W/ab_${v}_h.json cuda-sm80 float16 > $W/ab_${v}_h.txt 2>&1 || echo "ab $v fp16 failed"
done; echo "== fp16 $(t)"
python3 - $W <<'PY'
import json, sys, statistics as st
W = sys.argv[1]; L = lambda v, r: json.load(open(f"{W}/ab_{v}_{r}.json"))
for rs, lab in (((1, 2, 3), "bf16"), (("h",), "fp16")):
    b = [L("base", r) for r in rs]; n = [L("new", r) for r in rs]
    print(f"{lab}: shape  new TFLOPS  new/base per round  | x FA2 base -> new (mean)")
    for k in b[0]:
        print(f"  {k:12s} {st.mean(x[k]['tflops'] for x in n):7.1f}  " + " ".join(f"{bb[k]['ms'] / nn[k]['ms']:.3f}" for bb, nn in zip(b, n))
              + f"  | {st.mean(x[k]['x_fa2'] for x in b):.3f} -> {st.mean(x[k]['x_fa2'] for x in n):.3f}")
PY
tar czf $OUT/c3.tgz -C $OUT w; echo "== done $(t)"
