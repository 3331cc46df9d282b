#!/usr/bin/env bash
# Call 1: the landed tree d1d0316 (one forward argument struct, never run on a GPU) and a variant "var"
# (cuda-sm90's narrow instances take varlen calls; cuda-sm80's d192 forward at 128 x 64 with 8 warps;
# built with -DPA_SM80_BWD_ROWS128=1, the d64 backward's 128-row shape). select_dump against 2cb7224
# (the last tree run on the H200); case tables, numerics, concurrency, test_large on both; A/B of the
# variant's changes beside FlashAttention-2 (backward d64, forward d192), interleaved, 2 rounds.
set -uo pipefail
export PYTHONUNBUFFERED=1
W=$OUT/w; mkdir -p $W; D=results/2026-12-05-h200
S=$(date +%s); t() { echo "[$(( $(date +%s) - S ))s]"; }
{ nvidia-smi -L; git log --oneline -1; date -u; } > $W/env.txt
mkdir -p /tmp/base /tmp/var && tar xf .device/base.tar -C /tmp/base && tar xf .device/var.tar -C /tmp/var
cfg() { cmake -S $1 -B $2 -G Ninja -DCMAKE_BUILD_TYPE=Release -DPORTATTN_CUDA_ARCHS="90" -DPORTATTN_WITH_SM100=OFF \
  -DPORTATTN_ENABLE_HIP=OFF "${@:6}" > $W/build_$3.log 2>&1 && cmake --build $2 -j $4 --target $5 >> $W/build_$3.log 2>&1 ||
  { grep -E "error|FAILED" $W/build_$3.log | head; echo "BUILD $3 FAILED"; }; }
cfg $PWD build-h new 8 "portattn select_dump test_cases test_cases_bwd test_numerics test_concurrency test_large" &
cfg /tmp/var /tmp/build-var var 6 "portattn test_cases test_cases_bwd test_large" -DCMAKE_CUDA_FLAGS=-DPA_SM80_BWD_ROWS128=1 &
cfg /tmp/base /tmp/build-base base 2 "portattn select_dump" &
wait; echo "== built $(t)"
grep -h -A2 "sm80_fwd.*192\|_Z.*sm80_fwd_main.*Li192E" $W/build_var.log | grep -iE "registers|spill" | head -4
unset PORTATTN_BACKEND
timeout 60 build-h/tests/select_dump > $W/sel_new.txt 2>&1; echo "sel new exit $?"
timeout 60 /tmp/build-base/tests/select_dump > $W/sel_base.txt 2>&1; echo "sel base exit $?"
diff $W/sel_base.txt $W/sel_new.txt > $W/sel_diff.txt && echo "select_dump: IDENTICAL ($(wc -l < $W/sel_new.txt) lines)" ||
  { echo "select_dump: $(grep -c '^<' $W/sel_diff.txt) lines differ"; head -c 1500 $W/sel_diff.txt; }
rm -f $W/sel_base.txt; gzip $W/sel_new.txt
L=$W/tests.log; : > $L
run() { echo "--- $*" >> $L; local s=$(date +%s); timeout ${TO:-100} "$@" >> $L 2>&1; echo "exit $? ($(( $(date +%s) - s ))s): $*"; }
for b in cuda-sm90 cuda-sm80; do run build-h/tests/test_cases $b; done
run /tmp/build-var/tests/test_cases cuda-sm90
run /tmp/build-var/tests/test_cases cuda-sm80
run build-h/tests/test_cases_bwd cuda-sm80
run /tmp/build-var/tests/test_cases_bwd cuda-sm80
for b in cuda-sm90 cuda-sm80; do run build-h/tests/test_numerics $b; run build-h/tests/test_concurrency $b; done
TO=150 run build-h/tests/test_cases cuda-generic
echo "== tests $(t)"
lib() { case $1 in new) echo $PWD/build-h/libportattn.so;; var) echo /tmp/build-var/libportattn.so;; esac; }
for r in 1 2; do for v in new var; do
  PORTATTN_LIBRARY=$(lib $v) timeout 100 python3 tools/bwd_bench.py --d 64 --s 2048 4096 --causal both > $W/bwd_${v}$r.txt 2>&1 || echo "bwd $v$r failed"
  PORTATTN_LIBRARY=$(lib $v) timeout 100 python3 $D/ab_fwd.py $v $W/fwd_${v}_$r.json cuda-sm80 bfloat16 \
    "192,1024,0;192,4096,0;192,4096,1;192,16384,0;192,16384,1" > $W/fwd_${v}_$r.txt 2>&1 || echo "fwd $v$r failed"
done; done
python3 $D/summ.py bwd $W bwd new var; python3 $D/summ.py fwd $W fwd new var
echo "== ab $(t)"
for v in new var; do
  PORTATTN_LIBRARY=$(lib $v) timeout 100 python3 tools/varlen_bench.py --d 32 96 160 --causal both --json $W/varlen_$v.json > $W/varlen_$v.txt 2>&1
  echo "varlen $v exit $?"; grep -E "portattn" $W/varlen_$v.txt | head -8
done
echo "== varlen $(t)"
[ $(( $(date +%s) - S )) -lt 470 ] && { run build-h/tests/test_large cuda-sm80; run /tmp/build-var/tests/test_large cuda-sm80; run build-h/tests/test_large cuda-sm90; }
TO=60 run build-h/tests/test_cases_bwd cuda-generic
grep -E "cases ran|passed,|COVERAGE|^FAIL|^fail" $L | head -40
tar czf $OUT/c1.tgz -C $OUT w; echo "== done $(t)"
