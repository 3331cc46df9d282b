#!/usr/bin/env bash
# Call 5 (inline, on the machine call 1 left warm): cuda-sm100's emulation build's case table, in 8 shards
# run side by side (call 1 ran it as one process and stopped it at 200 s, a quarter through, every
# case so far passing); its test_numerics and test_concurrency had passed in call 1.
W=$OUT/w; mkdir -p $W; S=$(date +%s)
cmake -S . -B /tmp/build-emu -G Ninja -DCMAKE_BUILD_TYPE=Release -DPORTATTN_CUDA_ARCHS="90" -DPORTATTN_ENABLE_HIP=OFF \
  -DPORTATTN_SM80_GENCODE=-gencode=arch=compute_90,code=sm_90 -DPORTATTN_SM100_EMULATION=ON > $W/b.log 2>&1 &&
  cmake --build /tmp/build-emu -j 16 --target test_cases >> $W/b.log 2>&1 || { tail -5 $W/b.log; exit 1; }
for k in 1 2 3 4 5 6 7 8; do
  ( timeout 270 /tmp/build-emu/tests/test_cases cuda-sm100 $k/8 > $W/s$k.log 2>&1; echo "shard $k exit $? $(( $(date +%s) - S ))s" >> $W/sum.txt ) &
done; wait; cat $W/sum.txt; grep -h "cases ran\|passed,\|^FAIL\|COVERAGE" $W/s*.log
