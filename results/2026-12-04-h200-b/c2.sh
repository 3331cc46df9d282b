#!/usr/bin/env bash
# Call 2: cuda-sm80's forward, four variants of the tile loop against the landed kernel (A/B, sm80 forced,
# beside FA2 in each process, 2 interleaved rounds): v10 = the V wait before the softmax; v01 = O rescaled
# before the exponentials; v11 = both; u10 = v10 with d96's Q K^T loop unrolled whole. One build dir; each
# variant is the kernel header edited and an incremental build; test_cases cuda-sm80 on each variant.
set -uo pipefail
export PYTHONUNBUFFERED=1
W=$OUT/w; mkdir -p $W
S=$(date +%s); t() { echo "[$(( $(date +%s) - S ))s]"; }
K=backends/cuda/sm80/sm80_fwd_kernel.cuh
cp .device/orig_fwd_kernel.cuh $K
cmake -S . -B build-h -G Ninja -DCMAKE_BUILD_TYPE=Release -DPORTATTN_CUDA_ARCHS="90" -DPORTATTN_WITH_SM100=OFF \
  -DPORTATTN_ENABLE_HIP=OFF > $W/build.log 2>&1 && cmake --build build-h -j 16 --target portattn test_cases >> $W/build.log 2>&1 ||
  { grep -E "error|FAILED" $W/build.log | head; echo BUILD FAILED; }
mkdir -p /tmp/libs; cp build-h/libportattn.so /tmp/libs/base.so; echo "== base built $(t)"
for v in "v10 1 0 64" "v01 0 1 64" "v11 1 1 64" "u10 1 0 96"; do
  set -- $v
  sed "s/^#define PA_SM80_EARLY_V .*/#define PA_SM80_EARLY_V $2/; s/^#define PA_SM80_RESCALE_FIRST .*/#define PA_SM80_RESCALE_FIRST $3/; s/^#define PA_SM80_QK_FULL_MAX .*/#define PA_SM80_QK_FULL_MAX $4/" .device/new_fwd_kernel.cuh > $K
  cmake --build build-h -j 16 --target portattn test_cases >> $W/build_$1.log 2>&1 || { grep -E "error" $W/build_$1.log | head -5; echo "BUILD $1 FAILED"; }
  echo "$1 spill warnings: $(grep -ci spill $W/build_$1.log)"
  cp build-h/libportattn.so /tmp/libs/$1.so
  timeout 60 build-h/tests/test_cases cuda-sm80 > $W/tests_$1.txt 2>&1; echo "$1 test_cases exit $? $(grep -E 'passed,' $W/tests_$1.txt)"
  echo "== $1 built+tested $(t)"
done
for r in 1 2; do for v in base v10 v01 v11 u10; do
  PORTATTN_LIBRARY=/tmp/libs/$v.so timeout 100 python3 results/2026-12-04-h200-b/ab_fwd.py $v $W/ab_${v}_$r.json cuda-sm80 > $W/ab_${v}_$r.txt 2>&1 || echo "ab $v $r failed: $(tail -2 $W/ab_${v}_$r.txt)"
done; echo "== round $r $(t)"; done
python3 - $W <<'PY'
import json, sys, glob, statistics
W = sys.argv[1]; vs = ["base", "v10", "v01", "v11", "u10"]
d = {v: [json.load(open(f"{W}/ab_{v}_{r}.json")) for r in (1, 2) if glob.glob(f"{W}/ab_{v}_{r}.json")] for v in vs}
names = list(d["base"][0])
print("shape         base_TF  x_fa2 | " + " | ".join(f"{v}/base (r1 r2)" for v in vs[1:]))
for n in names:
    bm = statistics.mean(x[n]["ms"] for x in d["base"])
    row = f"{n:12s} {statistics.mean(x[n]['tflops'] for x in d['base']):7.1f} {statistics.mean(x[n]['x_fa2'] for x in d['base']):6.3f} |"
    for v in vs[1:]:
        row += " " + " ".join(f"{bm / x[n]['ms']:.3f}" for x in d[v]) + " |"
    print(row)
PY
echo "base spill warnings: $(grep -ci spill $W/build.log)"
tar czf $OUT/c2.tgz -C $OUT w; echo "== done $(t)"
