#!/usr/bin/env bash
# Call 4: where the chained-items build lost: (e) the macro (pre-struct) chained version, GS off;
# (d) the struct version, GS off; (c) base. Interleaved, 2 rounds.
set -uo pipefail
W=$OUT/w; mkdir -p $W
S=$(date +%s); t() { echo "[$(( $(date +%s) - S ))s]"; }
for x in c d e; do mkdir -p /tmp/$x; done
[ -f /tmp/c/CMakeLists.txt ] || tar xf .device/s1/base.tar -C /tmp/c
tar xf .device/s1/a.tar -C /tmp/d; tar xf .device/s1/e.tar -C /tmp/e
cfg() { cmake -S /tmp/$1 -B /tmp/build-$1 -G Ninja -DCMAKE_BUILD_TYPE=Release -DPORTATTN_CUDA_ARCHS="80;90" -DPORTATTN_WITH_SM100=OFF \
  -DPORTATTN_ENABLE_HIP=OFF -DCMAKE_CUDA_FLAGS=-DPA_SM90_GROUP_SKIP=0 > $W/build_$1.log 2>&1 && cmake --build /tmp/build-$1 -j $2 --target portattn >> $W/build_$1.log 2>&1 || echo "BUILD $1 FAILED"; }
[ -f /tmp/build-c/libportattn.so ] || cfg c 5 &
[ -f /tmp/build-d/libportattn.so ] || cfg d 5 &
cfg e 6 &
wait; echo "== built $(t)"
for r in 1 2; do for v in e d c; do
  PORTATTN_LIBRARY=/tmp/build-$v/libportattn.so timeout 60 python3 .device/s1/ab.py $v$r $W/ab_$v$r.json > $W/ab_$v$r.log 2>&1; echo "ab $v$r exit $?"
done; done
python3 - $W <<'PY'
import json, sys, os
W = sys.argv[1]; R = {}
for f in sorted(os.listdir(W)):
    if f.startswith("ab_") and f.endswith(".json"): R[f[3:-5]] = json.load(open(os.path.join(W, f)))
names = list(R.get("c1", {}).keys())
print("shape       " + " ".join(f"{k:>7s}" for k in sorted(R)) + "   e/c    d/c")
for n in names:
    v = {k: R[k][n]["tflops"] for k in R if n in R[k]}
    m = lambda p: sum(v.get(p + r, 0) for r in "12") / max(1, sum(1 for r in "12" if p + r in v))
    print(f"{n:11s} " + " ".join(f"{v.get(k, 0):7.1f}" for k in sorted(R)) + f"  {m('e') / max(m('c'), 1e-9):.3f}  {m('d') / max(m('c'), 1e-9):.3f}")
PY
tar czf $OUT/c4.tgz -C $OUT w; echo "== done $(t)"
