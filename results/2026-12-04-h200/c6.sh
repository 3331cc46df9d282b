#!/usr/bin/env bash
# Call 6: the tree as it lands (instance lists, pa_choice, the emulation test hook; the kernels in phases;
# the faster backward) on the H200: the selector call by call against the landed base d06c963
# (tests/select_dump.c built in both trees, 4000 seeded calls through portattn_forward_query and
# portattn_forward_workspace_size, outputs diffed), then the case tables forward and backward.
set -uo pipefail
W=$OUT/w; mkdir -p $W
S=$(date +%s); t() { echo "[$(( $(date +%s) - S ))s]"; }
mkdir -p /tmp/base && tar xf .device/base.tar -C /tmp/base && cp .device/select_dump.c /tmp/base/tests/ &&
  echo 'portattn_test(select_dump LABELS "cpu;api" ARGS 300 SOURCES select_dump.c)' >> /tmp/base/tests/CMakeLists.txt
cfg() { cmake -S $1 -B $2 -G Ninja -DCMAKE_BUILD_TYPE=Release -DPORTATTN_CUDA_ARCHS="80;90" -DPORTATTN_WITH_SM100=OFF \
  -DPORTATTN_ENABLE_HIP=OFF > $W/build_$3.log 2>&1 && cmake --build $2 -j $4 --target $5 >> $W/build_$3.log 2>&1 ||
  { grep -E "error|FAILED" $W/build_$3.log | head; echo "BUILD $3 FAILED"; }; }
cfg $PWD build-h new 9 "portattn select_dump test_cases test_cases_bwd test_numerics" &
cfg /tmp/base /tmp/build-base base 7 "portattn select_dump" &
wait; echo "== built $(t)"
unset PORTATTN_BACKEND
timeout 60 build-h/tests/select_dump > $W/sel_new.txt 2>&1; echo "sel new exit $?"
timeout 60 /tmp/build-base/tests/select_dump > $W/sel_base.txt 2>&1; echo "sel base exit $?"
wc -l $W/sel_new.txt $W/sel_base.txt | head -2
diff $W/sel_base.txt $W/sel_new.txt > $W/sel_diff.txt && echo "select_dump: IDENTICAL" || { echo "select_dump: $(grep -c '^<' $W/sel_diff.txt) lines differ"; head -c 3000 $W/sel_diff.txt; }
awk -F' \\| ' '{print $3}' $W/sel_new.txt | sort | uniq -c | sort -rn | head -8
gzip -k $W/sel_new.txt; rm -f $W/sel_base.txt
echo "== select $(t)"
L=$W/tests.log; : > $L
run() { echo "--- $*" >> $L; timeout ${TO:-100} "$@" >> $L 2>&1; echo "exit $?: $*"; }
run build-h/tests/test_cases cuda-sm90
run build-h/tests/test_cases cuda-sm80
run build-h/tests/test_cases_bwd cuda-sm80
run build-h/tests/test_numerics cuda-sm90
TO=120 run build-h/tests/test_cases cuda-generic
grep -E "cases ran|passed,|COVERAGE|^FAIL|^fail" $L | head -20
echo "== done $(t)"
