#!/usr/bin/env bash
# Call 3: cuda-sm80 d192 at 64-key tiles (b: working tree + sm80b.patch) against 32-key tiles (c: 48605b8),
# sm80 forced, 2 interleaved rounds; then b beside FA2/cuDNN at d80/96/192 (peer_bench, one process).
set -uo pipefail
export PYTHONUNBUFFERED=1
W=$OUT/w; mkdir -p $W
S=$(date +%s); t() { echo "[$(( $(date +%s) - S ))s]"; }
pack() { tar czf $OUT/c3.tgz -C $OUT w; }
{ nvidia-smi -L; git log --oneline -1; date -u; } > $W/build.log
mkdir -p /tmp/c && git archive 48605b8 | tar x -C /tmp/c
mkdir -p /tmp/b && tar c --exclude=./build --exclude=./.git . | tar x -C /tmp/b && (cd /tmp/b && patch -p1 < .device/s1/sm80b.patch > $W/patch.log 2>&1) || echo PATCH FAILED
cfg() { cmake -S $3 -B $1 -G Ninja -DCMAKE_BUILD_TYPE=Release -DPORTATTN_CUDA_ARCHS="80;90" -DPORTATTN_WITH_SM100=OFF \
  -DPORTATTN_ENABLE_HIP=OFF > $W/build_$(basename $1).log 2>&1 && cmake --build $1 -j $2 --target portattn portattn-bench >> $W/build_$(basename $1).log 2>&1 ||
  { grep -E "error|FAILED" $W/build_$(basename $1).log | head; echo "BUILD $1 FAILED"; }; }
cfg /tmp/build-b 8 /tmp/b & cfg /tmp/build-c 8 /tmp/c &
wait
echo "== built $(t)"
for r in 1 2; do for v in b c; do
  timeout 60 /tmp/build-$v/tools/portattn-bench --no-check --backend cuda-sm80 --sweep-file .device/s1/ab_sm80_d192.txt --json $W/d192_${v}$r.json > $W/d192_${v}$r.log 2>&1
  echo "d192 $v$r exit $?"; grep -E "^cuda" $W/d192_${v}$r.log | cut -c1-44,86-150
done; done
pack; echo "== ab $(t)"
PORTATTN_LIBRARY=/tmp/build-b/libportattn.so timeout 240 python3 tools/peer_bench.py --dtype bf16 --d 80 96 192 \
  --s 1024 4096 16384 --causal both --backend cuda-sm80 --no-auto --json $W/peers_b.json > $W/peers_b.log 2>&1; echo "peers exit $?"
grep -E "^\|" $W/peers_b.log | head -30
pack; echo "== done $(t)"
