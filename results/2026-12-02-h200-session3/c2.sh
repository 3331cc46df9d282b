#!/usr/bin/env bash
# Call 2: (a) the working tree: item slots given back by every consumer thread, the racecheck probe's
# write-after-read handoffs; (b) a plus cuda-sm80 d96 instance and d192 at 64-key tiles (sm80b.patch);
# (c) the landed 48605b8. racecheck on a; A/B a vs c (varlen/serving), b vs a (sm80 forced).
set -uo pipefail
export PYTHONUNBUFFERED=1
W=$OUT/w; mkdir -p $W
S=$(date +%s); t() { echo "[$(( $(date +%s) - S ))s]"; }
{ nvidia-smi -L; git log --oneline -1; git status --short | head; date -u; } > $W/build.log
mkdir -p /tmp/c && git archive 48605b8 | tar x -C /tmp/c
mkdir -p /tmp/b && tar c --exclude=./build --exclude=./build-a --exclude=./.git . | tar x -C /tmp/b && (cd /tmp/b && patch -p1 < .device/s1/sm80b.patch > $W/patch.log 2>&1) || echo PATCH FAILED
cfg() { cmake -S $3 -B $1 -G Ninja -DCMAKE_BUILD_TYPE=Release -DPORTATTN_CUDA_ARCHS="80;90" -DPORTATTN_WITH_SM100=OFF \
  -DPORTATTN_ENABLE_HIP=OFF > $W/build_$(basename $1).log 2>&1 && cmake --build $1 -j $2 $T >> $W/build_$(basename $1).log 2>&1 ||
  { grep -E "error|FAILED" $W/build_$(basename $1).log | head; echo "BUILD $1 FAILED"; }; }
T="--target portattn portattn-bench test_cases test_numerics test_batch_invariance test_concurrency"
cfg $PWD/build-a 6 $PWD &
T="--target portattn portattn-bench test_cases test_numerics test_large"; cfg /tmp/build-b 6 /tmp/b &
T="--target portattn portattn-bench"; cfg /tmp/build-c 4 /tmp/c &
wait
echo "== built $(t)"
L=$W/tests.log; : > $L
run() { echo "--- $*" >> $L; timeout ${TO:-60} "$@" >> $L 2>&1; echo "exit $?: $*"; }
bash tests/probes/racecheck_probe.sh $(command -v nvcc) $PWD /tmp/rcp 2>&1 | tee $W/probe.log
RC="compute-sanitizer --tool racecheck --racecheck-report hazard --error-exitcode 9"
run $RC build-a/tests/test_cases cuda-sm90 many_seqs
run $RC build-a/tests/test_cases cuda-sm90 varlen_causal
run $RC build-a/tests/test_cases cuda-sm90 serve_many
run $RC build-a/tests/test_cases cuda-sm90 serve_mix
run compute-sanitizer --tool synccheck --error-exitcode 9 build-a/tests/test_cases cuda-sm90 varlen_causal
run build-a/tests/test_cases cuda-sm90
run build-a/tests/test_batch_invariance cuda-sm90
run build-a/tests/test_concurrency cuda-sm90
run /tmp/build-b/tests/test_cases cuda-sm80
run /tmp/build-b/tests/test_numerics cuda-sm80
TO=120 run /tmp/build-b/tests/test_large cuda-sm80
run $RC /tmp/build-b/tests/test_cases cuda-sm80 d192
grep -E "cases ran|passed,|ERROR SUMMARY|RACECHECK SUMMARY|^FAIL|^fail" $L | sort | uniq -c | head -40
grep -E "hazard detected|Read Thread|Write Thread" $L | sed -E 's/block \([0-9,]+\)/block/; s/Thread \([0-9]+,0,0\)/Thread/; s/0x[0-9a-f]+ in/ADDR in/' | cut -c1-160 | sort | uniq -c | sort -rn | head
echo "== tests $(t)"
for r in 1 2; do for v in a c; do
  B=build-a; [ $v = c ] && B=/tmp/build-c
  timeout 75 $B/tools/portattn-bench --no-check --sweep-file .device/s1/ab_sm90.txt --json $W/ab90_${v}$r.json > $W/ab90_${v}$r.log 2>&1
  echo "ab90 $v$r exit $?"; grep -E "^cuda" $W/ab90_${v}$r.log | cut -c1-44,86-200
done; done
echo "== ab90 $(t)"
for r in 1 2; do for v in b a; do
  B=build-a; [ $v = b ] && B=/tmp/build-b
  timeout 75 $B/tools/portattn-bench --no-check --backend cuda-sm80 --sweep-file .device/s1/ab_sm80.txt --json $W/ab80_${v}$r.json > $W/ab80_${v}$r.log 2>&1
  echo "ab80 $v$r exit $?"; grep -E "^cuda" $W/ab80_${v}$r.log | cut -c1-44,86-200
done; done
echo "== ab80 $(t)"
PORTATTN_LIBRARY=/tmp/build-b/libportattn.so timeout 150 python3 tools/peer_bench.py --dtype bf16 --d 80 96 192 \
  --s 1024 4096 16384 --causal both --backend cuda-sm80 --json $W/peers_b.json > $W/peers_b.log 2>&1; echo "peers exit $?"
grep -E "^\|" $W/peers_b.log | head -30
echo "== done $(t)"
cp /tmp/rcp/rc_*.log $W/ 2>/dev/null
tar czf $OUT/c2.tgz -C $OUT w
