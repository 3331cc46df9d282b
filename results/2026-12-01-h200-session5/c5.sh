#!/usr/bin/env bash
# Call 5 (the commit under test): ctest -L cuda; the serving sweep (bf16/fp16, chunks of 512/2048 over
# 4k/16k, pages 16/64) beside the peers; portattn-bench over tools/serving_shapes.txt (mixed batch).
set -uo pipefail
export PYTHONUNBUFFERED=1
W=$OUT/w; mkdir -p $W
S=$(date +%s); t() { echo "[$(( $(date +%s) - S ))s]"; }
{ nvidia-smi -L; git log -1 --format='commit %H %s' | cut -c1-80; date -u; } | tee $W/build.log
B=build-a
cmake -S . -B $B -G Ninja -DCMAKE_BUILD_TYPE=Release -DPORTATTN_CUDA_ARCHS="80;90" -DPORTATTN_WITH_SM100=OFF \
  -DPORTATTN_ENABLE_HIP=OFF >> $W/build.log 2>&1 && cmake --build $B -j 16 >> $W/build.log 2>&1 ||
  { grep -E "error|FAILED" $W/build.log | head; exit 1; }
echo "== built $(t)"
timeout 290 ctest --test-dir $B -L cuda -j 3 --output-on-failure > $W/ctest.log 2>&1; echo "ctest exit $?"
grep -E "tests passed|tests failed|Failed|\(Failed|Timeout|Not Run" $W/ctest.log | tail -12
echo "== ctest $(t)"
PORTATTN_LIBRARY=$B/libportattn.so python3 tools/peer_bench.py --sweep serve --dtype bf16,fp16 --serve-q 512 2048 \
  --serve-kv 4096 16384 --serve-pages 16 64 --json $W/peers_serve.json > $W/peers_serve.log 2>&1; echo "serve exit $?"
grep -E "^\| (bf16|fp16)" $W/peers_serve.log
echo "== serve $(t)"
timeout 120 $B/tools/portattn-bench --sweep-file tools/serving_shapes.txt --json $W/bench_serve.json > $W/bench_serve.log 2>&1
echo "bench exit $?"; grep -E "ms|us " $W/bench_serve.log | cut -c1-60,100-200
echo "== done $(t)"
tar czf $OUT/c5.tgz -C $OUT w
