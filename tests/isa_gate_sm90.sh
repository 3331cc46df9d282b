#!/usr/bin/env bash
# T1 ISA gate for cuda-sm90 (no GPU needed): compiles the sm90 kernel files for sm_90a (PTX, then
# ptxas -v). Fails unless the PTX holds wgmma.mma_async (shared-memory and register-A forms),
# cp.async.bulk.tensor (TMA), mbarrier waits and setmaxnreg, ptxas reports no stack frame or spills,
# and ptxas does not serialize the wgmmas (its C7513/C7514 "Potential Performance Loss" notes: a
# register written inside a wgmma stage costs more than the kernel's whole overlap). With cuobjdump
# it also checks the SASS (HGMMA, UTMALDG, SYNCS; no LDL/STL); without it says that part did not run.
# usage: isa_gate_sm90.sh NVCC SOURCE_DIR WORK_DIR      exit 0 pass, 1 fail, 77 no CUDA compiler
set -uo pipefail
NVCC=${1:-}
SRC=${2:?source dir}
WORK=${3:?work dir}
if [ -z "$NVCC" ] || ! [ -x "$(command -v "$NVCC")" ]; then
  echo "SKIP: no CUDA compiler (nvcc) to build the sm90 kernels"
  exit 77
fi
BIN=$(dirname "$(command -v "$NVCC")")
PTXAS=$BIN/ptxas; [ -x "$PTXAS" ] || PTXAS=$(command -v ptxas || true)
[ -x "$PTXAS" ] || { echo "FAIL: ptxas not found beside $NVCC"; exit 1; }
mkdir -p "$WORK"
fail=0
bad() { echo "FAIL: $*"; fail=1; }
INC="-I$SRC/include -I$SRC/common -I$SRC/backends/cuda -I$SRC/backends/cuda/sm80 -I$SRC/backends/cuda/sm90"

: > "$WORK/all.ptx"; : > "$WORK/ptxas.txt"
for cu in "$SRC"/backends/cuda/sm90/sm90_fwd_d*.cu; do
  n=$(basename "$cu" .cu)
  "$NVCC" -std=c++17 -O3 $INC -gencode=arch=compute_90a,code=compute_90a --ptx -o "$WORK/$n.ptx" "$cu" \
    > "$WORK/$n.nvcc.log" 2>&1 || { cat "$WORK/$n.nvcc.log"; bad "$n: nvcc --ptx"; continue; }
  "$PTXAS" -arch=sm_90a -O3 -v -o "$WORK/$n.cubin" "$WORK/$n.ptx" > "$WORK/$n.ptxas.log" 2>&1 \
    || { cat "$WORK/$n.ptxas.log"; bad "$n: ptxas"; continue; }
  cat "$WORK/$n.ptx" >> "$WORK/all.ptx"; cat "$WORK/$n.ptxas.log" >> "$WORK/ptxas.txt"
done

echo "== PTX instructions (sm_90a)"
for pat in 'wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16' 'wgmma.mma_async.sync.aligned.m64n128k16.f32.f16.f16' \
           'cp.async.bulk.tensor.4d.shared::cluster.global.mbarrier::complete_tx::bytes' \
           'mbarrier.try_wait.parity.shared::cta.b64' 'mbarrier.arrive.expect_tx' 'setmaxnreg.inc.sync.aligned.u32' \
           'setmaxnreg.dec.sync.aligned.u32' 'wgmma.wait_group.sync.aligned 1'; do
  c=$(grep -c -F "$pat" "$WORK/all.ptx")
  printf '  %-76s %6d\n' "$pat" "$c"
  [ "$c" -gt 0 ] || bad "PTX lacks $pat"
done
c=$(grep -c -E '^wgmma.mma_async.* \{%r[0-9]+, %r[0-9]+, %r[0-9]+, %r[0-9]+\}' "$WORK/all.ptx")
printf '  %-76s %6d\n' "wgmma with the A operand in registers (P V)" "$c"
[ "$c" -gt 0 ] || bad "PTX lacks the register-A wgmma"

echo "== ptxas -v, sm_90a (per kernel: registers at entry, stack frame, spill stores/loads)"
awk '
  /Compiling entry function/ { match($0, /'"'"'[^'"'"']*'"'"'/); k = substr($0, RSTART + 1, RLENGTH - 2) }
  /bytes stack frame/ { st = $1; ss = $5; sl = $9 }
  /Used [0-9]+ registers/ { match($0, /Used [0-9]+ registers/); r = substr($0, RSTART + 5, RLENGTH - 15);
    n++; printf "  %-70s regs %3d  stack %s  spill st %s ld %s\n", k, r, st, ss, sl;
    if (st != 0 || ss != 0 || sl != 0) bad++ }
  END { print "  kernels: " n; if (n < 6) { print "FAIL: expected 6 kernels (d64, d128, d256 x f16/bf16)"; exit 1 }
        if (bad) { print "FAIL: " bad " kernel(s) with stack frame or spills"; exit 1 } }' "$WORK/ptxas.txt" || fail=1
echo "  registers after setmaxnreg (launch.h): producer/consumers $(grep -o 'PA_SM90_PRODUCER_REGS(d) .*' "$SRC/backends/cuda/sm90/sm90_launch.h" | sed 's/.*? //; s/)$//') / $(grep -o 'PA_SM90_CONSUMER_REGS(d) .*' "$SRC/backends/cuda/sm90/sm90_launch.h" | sed 's/.*? //; s/)$//') (3 consumers : 2 consumers)"
c=$(grep -c -E 'C751[34]|wgmma.mma_async instructions are serialized' "$WORK/ptxas.txt")
printf '  %-76s %6d\n' "ptxas notes: wgmma serialized (C7513/C7514)" "$c"
[ "$c" -eq 0 ] || { grep -E 'C751[34]' "$WORK/ptxas.txt" | head -4; bad "ptxas serializes wgmmas"; }
c=$(grep -c -E 'C7508|setmaxnreg.*ignored' "$WORK/ptxas.txt")
printf '  %-76s %6d\n' "ptxas notes: setmaxnreg ignored (C7508)" "$c"
[ "$c" -eq 0 ] || bad "ptxas ignores setmaxnreg"

echo "== SASS (sm_90a cubins)"
CUOBJDUMP=$(command -v cuobjdump || true)
[ -n "$CUOBJDUMP" ] || { [ -x "$BIN/cuobjdump" ] && CUOBJDUMP=$BIN/cuobjdump; }
if [ -z "$CUOBJDUMP" ]; then
  echo "  SASS check NOT RUN: cuobjdump not found (PTX and ptxas checks above only)"
else
  : > "$WORK/all.sass"
  for c in "$WORK"/sm90_fwd_d*.cubin; do "$CUOBJDUMP" --dump-sass "$c" >> "$WORK/all.sass" 2>&1; done
  for pat in 'HGMMA.64x128x16.F32.BF16' 'HGMMA.64x128x16.F32' 'UTMALDG.4D' 'SYNCS'; do
    c=$(grep -c -F "$pat" "$WORK/all.sass")
    printf '  %-58s %6d\n' "$pat" "$c"
    [ "$c" -gt 0 ] || bad "SASS lacks $pat"
  done
  c=$(grep -c -E '\b(LDL|STL)(\.|\b)' "$WORK/all.sass")
  printf '  %-58s %6d\n' "LDL/STL (local memory)" "$c"
  [ "$c" -eq 0 ] || bad "SASS uses local memory"
fi
[ $fail -eq 0 ] && echo "ISA gate sm90: PASS" || echo "ISA gate sm90: FAIL"
exit $fail
