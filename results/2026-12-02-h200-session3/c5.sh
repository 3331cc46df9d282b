#!/usr/bin/env bash
# Call 5: (r) the working tree: sm80_fwd in named phases; (h) HEAD 4fb1097 (base.tar); (e) r plus
# sm80c.patch (d96 one K/V slot; d192 as 64 rows x 4 warps, two CTAs per SM). Case table on r and e,
# A/B r vs h (2 rounds) and e vs r (1 round), sm80 forced.
set -uo pipefail
export PYTHONUNBUFFERED=1
W=$OUT/w; mkdir -p $W
S=$(date +%s); t() { echo "[$(( $(date +%s) - S ))s]"; }
pack() { tar czf $OUT/c5.tgz -C $OUT w; }
{ nvidia-smi -L; date -u; } > $W/build.log
mkdir -p /tmp/h && tar xf .device/s1/base.tar -C /tmp/h
mkdir -p /tmp/e && tar c --exclude=./build --exclude=./.git . | tar x -C /tmp/e && (cd /tmp/e && patch -p1 < .device/s1/sm80c.patch > $W/patch.log 2>&1) || echo PATCH FAILED
cfg() { cmake -S $3 -B $1 -G Ninja -DCMAKE_BUILD_TYPE=Release -DPORTATTN_CUDA_ARCHS="80;90" -DPORTATTN_WITH_SM100=OFF \
  -DPORTATTN_ENABLE_HIP=OFF > $W/build_$(basename $1).log 2>&1 && cmake --build $1 -j $2 $T >> $W/build_$(basename $1).log 2>&1 ||
  { grep -E "error|FAILED" $W/build_$(basename $1).log | head; echo "BUILD $1 FAILED"; }; }
T="--target portattn portattn-bench test_cases"; cfg $PWD/build-r 6 $PWD &
T="--target portattn portattn-bench"; cfg /tmp/build-h 5 /tmp/h &
T="--target portattn portattn-bench test_cases"; cfg /tmp/build-e 5 /tmp/e &
wait
echo "== built $(t)"
timeout 90 build-r/tests/test_cases cuda-sm80 > $W/cases_r.log 2>&1; echo "cases r exit $?"; grep -E "cases ran|passed,|^FAIL" $W/cases_r.log
for c in d96 d192; do timeout 40 /tmp/build-e/tests/test_cases cuda-sm80 $c > $W/cases_e_$c.log 2>&1; echo "cases e $c exit $?"; grep -E "passed,|^FAIL" $W/cases_e_$c.log; done
pack
B() { timeout 45 $1/tools/portattn-bench --no-check --backend cuda-sm80 --sweep-file $2 --json $W/$3.json > $W/$3.log 2>&1; echo "$3 exit $?"; grep -E "^cuda" $W/$3.log | cut -c1-44,86-150; }
for r in 1 2; do B build-r .device/s1/ab_r.txt r$r; B /tmp/build-h .device/s1/ab_r.txt h$r; done
pack; echo "== ab r/h $(t)"
B /tmp/build-e .device/s1/ab_sm80_e.txt e1; B build-r .device/s1/ab_sm80_e.txt re1
pack; echo "== done $(t)"
