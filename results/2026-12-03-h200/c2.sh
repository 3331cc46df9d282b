#!/usr/bin/env bash
# Call 2: (a) the working tree: cuda-sm90 chains consecutive items (d64 two-slot instances);
# (b) a with two Q slots for d128 (-DPA_SM90_Q_SLOTS_D128=2: d128 chains too); (c) the landed base;
# (d) a without the skipped exponentials of masked column groups (-DPA_SM90_GROUP_SKIP=0).
# Correctness on a and b; racecheck/synccheck on a; A/B a, c, b interleaved, 2 rounds.
set -uo pipefail
export PYTHONUNBUFFERED=1
W=$OUT/w; mkdir -p $W
S=$(date +%s); t() { echo "[$(( $(date +%s) - S ))s]"; }
pack() { tar czf $OUT/c2.tgz -C $OUT w; }
{ nvidia-smi -L; git log --oneline -1; git status --short | head; date -u; } > $W/build.log
mkdir -p /tmp/c && tar xf .device/s1/base.tar -C /tmp/c
mkdir -p /tmp/a /tmp/b /tmp/d && for x in a b d; do tar xf .device/s1/a.tar -C /tmp/$x; done
cfg() { cmake -S $3 -B $1 -G Ninja -DCMAKE_BUILD_TYPE=Release -DPORTATTN_CUDA_ARCHS="80;90" -DPORTATTN_WITH_SM100=OFF \
  -DPORTATTN_ENABLE_HIP=OFF $X > $W/build_$(basename $1).log 2>&1 && cmake --build $1 -j $2 $T >> $W/build_$(basename $1).log 2>&1 ||
  { grep -E "error|FAILED" $W/build_$(basename $1).log | head; echo "BUILD $1 FAILED"; }; }
X=""; T="--target portattn test_cases test_numerics test_batch_invariance test_concurrency test_large"; cfg $PWD/build-a 7 /tmp/a &
X="-DCMAKE_C_FLAGS=-DPA_SM90_Q_SLOTS_D128=2 -DCMAKE_CUDA_FLAGS=-DPA_SM90_Q_SLOTS_D128=2"; T="--target portattn test_cases test_numerics"; cfg /tmp/build-b 5 /tmp/b &
X=""; T="--target portattn"; cfg /tmp/build-c 2 /tmp/c &
X="-DCMAKE_CUDA_FLAGS=-DPA_SM90_GROUP_SKIP=0"; T="--target portattn"; cfg /tmp/build-d 2 /tmp/d &
wait
echo "== built $(t)"
L=$W/tests.log; : > $L
run() { echo "--- $*" >> $L; timeout ${TO:-90} "$@" >> $L 2>&1; echo "exit $?: $*"; }
run build-a/tests/test_cases cuda-sm90
run /tmp/build-b/tests/test_cases cuda-sm90
run build-a/tests/test_numerics cuda-sm90
run /tmp/build-b/tests/test_numerics cuda-sm90
run build-a/tests/test_batch_invariance cuda-sm90
run build-a/tests/test_concurrency cuda-sm90
RC="compute-sanitizer --tool racecheck --racecheck-report hazard --error-exitcode 9"
run $RC build-a/tests/test_cases cuda-sm90 chain
run $RC /tmp/build-b/tests/test_cases cuda-sm90 chain_varlen
run compute-sanitizer --tool synccheck --error-exitcode 9 build-a/tests/test_cases cuda-sm90 chain
grep -E "cases ran|passed,|ERROR SUMMARY|RACECHECK SUMMARY|^FAIL|^fail" $L | sort | uniq -c | head -40
pack; echo "== tests $(t)"
for r in 1 2; do for v in a c b d; do
  B=$PWD/build-a; [ $v = c ] && B=/tmp/build-c; [ $v = b ] && B=/tmp/build-b; [ $v = d ] && B=/tmp/build-d
  PORTATTN_LIBRARY=$B/libportattn.so timeout 60 python3 .device/s1/ab.py $v$r $W/ab_$v$r.json > $W/ab_$v$r.log 2>&1; echo "ab $v$r exit $?"
done; done
python3 - $W <<'PY'
import json, sys, os
W = sys.argv[1]; R = {}
for f in sorted(os.listdir(W)):
    if f.startswith("ab_") and f.endswith(".json"): R[f[3:-5]] = json.load(open(os.path.join(W, f)))
names = list(R.get("a1", {}).keys())
print("shape       " + " ".join(f"{k:>7s}" for k in sorted(R)) + "   a/c    b/c    d/c")
for n in names:
    v = {k: R[k][n]["tflops"] for k in R if n in R[k]}
    m = lambda p: sum(v.get(p + r, 0) for r in "12") / max(1, sum(1 for r in "12" if p + r in v))
    print(f"{n:11s} " + " ".join(f"{v.get(k, 0):7.1f}" for k in sorted(R)) + f"  {m('a') / max(m('c'), 1e-9):.3f}  {m('b') / max(m('c'), 1e-9):.3f}  {m('d') / max(m('c'), 1e-9):.3f}")
PY
pack; echo "== ab $(t)"
TO=100 run build-a/tests/test_large cuda-sm90
grep -E "cases ran|passed,|^FAIL|^fail" $L | tail -3
PORTATTN_LIBRARY=build-a/libportattn.so timeout 100 python3 tools/varlen_bench.py --dtype bf16 --json $W/varlen.json > $W/varlen.log 2>&1; echo "varlen exit $?"
grep -E "^\|" $W/varlen.log | head -8
pack; echo "== done $(t)"
