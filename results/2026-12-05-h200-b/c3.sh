#!/usr/bin/env bash
# Call 3: cuda-sm90 with the lazy rescale ("lazy": -DPA_SM90_LAZY_RESCALE=1, the base max moves only when
# a row's max grows past 2^8, and a warp none of whose rows moved skips the D/2 O multiplies per tile)
# against this tree ("new"): case table and numerics on lazy, then peer_bench beside FA2 and cuDNN at
# d64/d128/d256, s 1k/4k/16k, causal and not, and the encoder shapes, builds interleaved, 2 rounds.
set -uo pipefail
export PYTHONUNBUFFERED=1
W=$OUT/w; mkdir -p $W
S=$(date +%s); t() { echo "[$(( $(date +%s) - S ))s]"; }
pack() { tar czf $OUT/c3.tgz -C $OUT w; }
{ nvidia-smi -L; git log --oneline -1 | cut -c1-100; git status --short | head; date -u; } > $W/env.txt
cfg() { cmake -S . -B $1 -G Ninja -DCMAKE_BUILD_TYPE=Release -DPORTATTN_CUDA_ARCHS="90" -DPORTATTN_WITH_SM100=OFF -DPORTATTN_ENABLE_HIP=OFF "${@:5}" > $W/build_$2.log 2>&1 &&
  cmake --build $1 -j $3 --target $4 >> $W/build_$2.log 2>&1 || { grep -E "error|FAILED" $W/build_$2.log | head; echo "BUILD $2 FAILED"; }; }
cfg build-h new 8 "portattn" &
cfg /tmp/build-lazy lazy 8 "portattn test_cases test_numerics" -DCMAKE_CUDA_FLAGS=-DPA_SM90_LAZY_RESCALE=1 &
wait; echo "== built $(t)"
run() { local L=$1; shift; echo "--- $*" >> $L; local s=$(date +%s); timeout ${TO:-120} "$@" >> $L 2>&1; echo "exit $? ($(( $(date +%s) - s ))s): $*" | tee -a $L; }
X=/tmp/build-lazy/tests
run $W/lazy.log $X/test_cases cuda-sm90; run $W/lazy.log $X/test_numerics cuda-sm90
grep -hE "cases ran|passed,|^FAIL|^fail" $W/lazy.log | head
pack; echo "== tests $(t)"
lib() { case $1 in new) echo $PWD/build-h/libportattn.so;; lazy) echo /tmp/build-lazy/libportattn.so;; esac; }
for r in 1 2; do for v in new lazy; do [ $(( $(date +%s) - S )) -lt 480 ] || break
  export PORTATTN_LIBRARY=$(lib $v)
  timeout 80 python3 tools/peer_bench.py --backend cuda-sm90 --dtype bf16 --d 64 128 256 --s 1024 4096 16384 \
    --causal both --json $W/sw_${v}$r.json > $W/sw_${v}$r.txt 2>&1 || echo "sw $v$r failed"
  timeout 40 python3 tools/peer_bench.py --sweep encoder --dtype bf16 --json $W/enc_${v}$r.json > $W/enc_${v}$r.txt 2>&1 || echo "enc $v$r failed"
done; done; unset PORTATTN_LIBRARY
python3 results/2026-12-05-h200/summ.py pb $W sw new lazy; python3 results/2026-12-05-h200/summ.py pb $W enc new lazy
pack; echo "== done $(t)"
