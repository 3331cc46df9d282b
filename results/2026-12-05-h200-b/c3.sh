#!/usr/bin/env bash
# Call 3: two cuda-sm90 build switches against this tree ("new"), each checked on the CPU simulation
# first (test_sm90_sim_switches): "lazy" (-DPA_SM90_LAZY_RESCALE=1: the base max moves only past 2^8, a
# warp none of whose rows moved skips the O multiplies) and "pp" (-DPA_SM90_PINGPONG=1: the consumer
# warpgroups issue their wgmmas in turns, for items of one or two key tiles). Case table and numerics on
# both, then builds interleaved, 2 rounds: the encoder shapes beside FA2 and cuDNN (peer_bench) and seven
# B*S = 16k shapes beside FA2 (ab_fwd.py: d64 s1k, d128 s1k/4k, d256 s4k/16k, causal and not).
set -uo pipefail
export PYTHONUNBUFFERED=1
W=$OUT/w; mkdir -p $W
S=$(date +%s); t() { echo "[$(( $(date +%s) - S ))s]"; }
pack() { tar czf $OUT/c3.tgz -C $OUT w; }
{ nvidia-smi -L; git log --oneline -1 | cut -c1-100; git status --short | head; date -u; } > $W/env.txt
cfg() { cmake -S . -B $1 -G Ninja -DCMAKE_BUILD_TYPE=Release -DPORTATTN_CUDA_ARCHS="90" -DPORTATTN_WITH_SM100=OFF -DPORTATTN_ENABLE_HIP=OFF "${@:5}" > $W/build_$2.log 2>&1 &&
  cmake --build $1 -j $3 --target $4 >> $W/build_$2.log 2>&1 || { grep -E "error|FAILED" $W/build_$2.log | head; echo "BUILD $2 FAILED"; }; }
cfg build-h new 6 "portattn" &
cfg /tmp/build-lazy lazy 5 "portattn test_cases test_numerics" -DCMAKE_CUDA_FLAGS=-DPA_SM90_LAZY_RESCALE=1 &
cfg /tmp/build-pp pp 5 "portattn test_cases test_numerics" -DCMAKE_CUDA_FLAGS=-DPA_SM90_PINGPONG=1 &
wait; echo "== built $(t)"
run() { local L=$1; shift; echo "--- $*" >> $L; local s=$(date +%s); timeout ${TO:-120} "$@" >> $L 2>&1; echo "exit $? ($(( $(date +%s) - s ))s): $*" | tee -a $L; }
for v in lazy pp; do X=/tmp/build-$v/tests; run $W/$v.log $X/test_cases cuda-sm90; run $W/$v.log $X/test_numerics cuda-sm90; done
grep -hE "cases ran|passed,|^FAIL|^fail" $W/lazy.log $W/pp.log | head
pack; echo "== tests $(t)"
lib() { case $1 in new) echo $PWD/build-h/libportattn.so;; *) echo /tmp/build-$1/libportattn.so;; esac; }
SH="64,1024,0;64,1024,1;128,1024,1;128,4096,0;128,4096,1;256,4096,0;256,16384,0"
for r in 1 2; do for v in new lazy pp; do [ $(( $(date +%s) - S )) -lt 510 ] || break
  export PORTATTN_LIBRARY=$(lib $v)
  timeout 40 python3 tools/peer_bench.py --sweep encoder --dtype bf16 --json $W/enc_${v}$r.json > $W/enc_${v}$r.txt 2>&1 || echo "enc $v$r failed"
  timeout 40 python3 results/2026-12-05-h200/ab_fwd.py $v $W/ab_${v}$r.json cuda-sm90 bfloat16 "$SH" > $W/ab_${v}$r.txt 2>&1 || echo "ab $v$r failed"
done; done; unset PORTATTN_LIBRARY
for v in lazy pp; do python3 results/2026-12-05-h200/summ.py pb $W enc new $v; python3 results/2026-12-05-h200/summ.py fwd $W ab new $v; done
pack; echo "== done $(t)"
