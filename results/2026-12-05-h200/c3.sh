#!/usr/bin/env bash
# Call 3 (call 2 never got a machine; this is it with the family check added): (a) the kernel families'
# limits as data: select_dump, a forward-limits and a backward-selection dump, test_cuda_select and
# test_cuda_errors, with the library before (d1d0316) and after (family-desc) that change, built on
# the CPU machine (.device/fam; family_cmp.py reads the dumps); (b) the tree cb408a9 ("new"): case
# tables and numerics; (c) the renovation's A/B, 2cb7224 ("base") against new: cuda-sm80 and cuda-sm90
# forward beside FA2 (8 shapes each), the split-KV decode sweep beside cuDNN, builds interleaved, 2
# rounds. (Three K/V slots at d96/d128, call 2's last part, left for a later session: device time.)
set -uo pipefail
export PYTHONUNBUFFERED=1
W=$OUT/w; mkdir -p $W/fam; D=results/2026-12-05-h200
S=$(date +%s); t() { echo "[$(( $(date +%s) - S ))s]"; }
{ nvidia-smi -L; git log --oneline -1 | cut -c1-100; date -u; } > $W/env.txt
mkdir -p /tmp/base && tar xf .device/base.tar -C /tmp/base
cfg() { cmake -S $1 -B $2 -G Ninja -DCMAKE_BUILD_TYPE=Release -DPORTATTN_CUDA_ARCHS="90" -DPORTATTN_WITH_SM100=OFF \
  -DPORTATTN_ENABLE_HIP=OFF "${@:6}" > $W/build_$3.log 2>&1 && cmake --build $2 -j $4 --target $5 >> $W/build_$3.log 2>&1 ||
  { grep -E "error|FAILED" $W/build_$3.log | head; echo "BUILD $3 FAILED"; }; }
cfg $PWD build-h new 10 "portattn test_cases test_cases_bwd" &
cfg /tmp/base /tmp/build-base base 6 portattn &
( F=.device/fam; cd $F && mkdir -p base new && xz -dc base-lib.xz > base/libportattn.so.0 && xz -dc new-lib.xz > new/libportattn.so.0
  for L in base new; do export LD_LIBRARY_PATH=$PWD/$L
    timeout 60 ./select_dump 4000 > $W/fam/sd-$L.txt 2>&1; for s in 1 2; do timeout 60 ./select_dump 4000 $s > $W/fam/sd$s-$L.txt 2>&1; done
    timeout 60 ./fwd_limits 6000 > $W/fam/fl-$L.txt 2>&1; timeout 60 ./bwd_dump 4000 > $W/fam/bd-$L.txt 2>&1; done
  export LD_LIBRARY_PATH=$PWD/new
  for x in "test_cuda_select" "test_cuda_errors cuda-sm80" "test_cuda_errors cuda-sm90"; do
    timeout 70 ./$x > $W/fam/$(echo $x | tr ' ' '_').log 2>&1; echo "fam $x exit $?"; done ) &
wait; echo "== built, family dumps done $(t)"
python3 $D/family_cmp.py $W/fam | tail -25; tar czf $OUT/c3.tgz -C $OUT w
L=$W/tests.log; : > $L
run() { echo "--- $*" >> $L; local s=$(date +%s); timeout ${TO:-100} "$@" >> $L 2>&1; echo "exit $? ($(( $(date +%s) - s ))s): $*"; }
run build-h/tests/test_cases cuda-sm90
run build-h/tests/test_cases cuda-sm80
run build-h/tests/test_cases_bwd cuda-sm80
grep -E "cases ran|passed,|^FAIL|^fail" $L
echo "== tests $(t)"; tar czf $OUT/c3.tgz -C $OUT w
lib() { case $1 in new) echo $PWD/build-h/libportattn.so;; base) echo /tmp/build-base/libportattn.so;; esac; }
SH="64,4096,0;64,4096,1;96,4096,0;128,1024,1;128,4096,0;128,4096,1;192,4096,0;256,4096,0"
for r in 1 2; do for v in base new; do for be in cuda-sm80 cuda-sm90; do
  PORTATTN_LIBRARY=$(lib $v) timeout 100 python3 $D/ab_fwd.py $v $W/${be}_${v}_$r.json $be bfloat16 "$SH" > $W/${be}_${v}_$r.txt 2>&1 || echo "$be $v$r failed"
done; done; done
for be in cuda-sm80 cuda-sm90; do echo "$be:"; python3 $D/summ.py fwd $W $be base new; done
echo "== fwd ab $(t)"; tar czf $OUT/c3.tgz -C $OUT w
for r in 1 2; do for v in base new; do
  PORTATTN_LIBRARY=$(lib $v) timeout 100 python3 tools/peer_bench.py --sweep decode --json $W/dec_${v}$r.json > $W/dec_${v}$r.txt 2>&1 || echo "dec $v$r failed"
done; done
python3 $D/summ.py pb $W dec base new
echo "== decode ab $(t)"
tar czf $OUT/c3.tgz -C $OUT w; echo "== done $(t)"
