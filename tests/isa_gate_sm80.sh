#!/usr/bin/env bash
# T1 ISA gate for cuda-sm80 (no GPU needed): compiles every sm80 kernel file (prefill and decode) to PTX and assembles
# it for sm_80 with ptxas -v. Fails unless the PTX holds mma.sync.aligned.m16n8k16, ldmatrix (plain
# and .trans) and cp.async, and ptxas reports 0 bytes of stack frame and spills for every kernel.
# Prints registers and shared memory per kernel. With cuobjdump on PATH (or beside nvcc) it also
# checks the SASS (HMMA.16816, LDSM, LDGSTS; no LDL/STL); without it says that part did not run.
# usage: isa_gate_sm80.sh NVCC SOURCE_DIR WORK_DIR      exit 0 pass, 1 fail, 77 no CUDA compiler
set -uo pipefail
NVCC=${1:-}
SRC=${2:?source dir}
WORK=${3:?work dir}
if [ -z "$NVCC" ] || ! [ -x "$(command -v "$NVCC")" ]; then
  echo "SKIP: no CUDA compiler (nvcc) to build the sm80 kernels"
  exit 77
fi
BIN=$(dirname "$(command -v "$NVCC")")
PTXAS=$BIN/ptxas; [ -x "$PTXAS" ] || PTXAS=$(command -v ptxas || true)
[ -x "$PTXAS" ] || { echo "FAIL: ptxas not found beside $NVCC"; exit 1; }
mkdir -p "$WORK"
fail=0
bad() { echo "FAIL: $*"; fail=1; }
INC="-I$SRC/include -I$SRC/common -I$SRC/backends/cuda -I$SRC/backends/cuda/sm80"

: > "$WORK/all.ptx"; : > "$WORK/ptxas.txt"; : > "$WORK/smem.txt"
for cu in "$SRC"/backends/cuda/sm80/sm80_fwd_d*.cu "$SRC"/backends/cuda/sm80/sm80_decode_d*.cu; do
  n=$(basename "$cu" .cu)
  "$NVCC" -std=c++17 -O3 $INC -gencode=arch=compute_80,code=compute_80 --ptx -o "$WORK/$n.ptx" "$cu" \
    > "$WORK/$n.nvcc.log" 2>&1 || { cat "$WORK/$n.nvcc.log"; bad "$n: nvcc --ptx"; continue; }
  "$PTXAS" -arch=sm_80 -O3 -v -o "$WORK/$n.cubin" "$WORK/$n.ptx" > "$WORK/$n.ptxas.log" 2>&1 \
    || { cat "$WORK/$n.ptxas.log"; bad "$n: ptxas"; continue; }
  cat "$WORK/$n.ptx" >> "$WORK/all.ptx"; cat "$WORK/$n.ptxas.log" >> "$WORK/ptxas.txt"
  # the instance's dynamic shared memory, as the kernel file states it in a PTX global
  grep -o 'pa_sm80_smem_d[0-9]* = [0-9]*' "$WORK/$n.ptx" >> "$WORK/smem.txt" || true
done

echo "== PTX instructions (sm_80)"
for pat in 'mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32' 'mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32' \
           'ldmatrix.sync.aligned.m8n8.x4.shared.b16' 'ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16' \
           'cp.async.cg.shared.global' 'cp.async.wait_group'; do
  c=$(grep -c -F "$pat" "$WORK/all.ptx")
  printf '  %-58s %6d\n' "$pat" "$c"
  [ "$c" -gt 0 ] || bad "PTX lacks $pat"
done

echo "== ptxas -v, sm_80 (per kernel: registers, stack frame, spill stores/loads; dynamic smem per head dim)"
cat "$WORK/smem.txt" 2>/dev/null | sed 's/^/  dynamic shared memory: /'
awk '
  /Compiling entry function/ { match($0, /'"'"'[^'"'"']*'"'"'/); k = substr($0, RSTART + 1, RLENGTH - 2) }
  /bytes stack frame/ { st = $1; ss = $5; sl = $9 }
  /Used [0-9]+ registers/ { match($0, /Used [0-9]+ registers/); r = substr($0, RSTART + 5, RLENGTH - 15);
    n++; printf "  %-62s regs %3d  stack %s  spill st %s ld %s\n", k, r, st, ss, sl;
    if (st != 0 || ss != 0 || sl != 0) bad++ }
  END { print "  kernels: " n; if (n < 22) { print "FAIL: expected 22 kernels (prefill: 5 shapes, decode: 3 head dims with combine; x f16/bf16)"; exit 1 }
        if (bad) { print "FAIL: " bad " kernel(s) with stack frame or spills"; exit 1 } }' "$WORK/ptxas.txt" || fail=1

echo "== SASS (sm_80 cubins)"
CUOBJDUMP=$(command -v cuobjdump || true)
[ -n "$CUOBJDUMP" ] || { [ -x "$BIN/cuobjdump" ] && CUOBJDUMP=$BIN/cuobjdump; }
if [ -z "$CUOBJDUMP" ]; then
  echo "  SASS check NOT RUN: cuobjdump not found (PTX and ptxas checks above only)"
else
  : > "$WORK/all.sass"
  for c in "$WORK"/sm80_fwd_d*.cubin "$WORK"/sm80_decode_d*.cubin; do "$CUOBJDUMP" --dump-sass "$c" >> "$WORK/all.sass" 2>&1; done
  for pat in 'HMMA.16816.F32.BF16' 'HMMA.16816.F32' 'LDSM.16.M88.4' 'LDSM.16.MT88.4' 'LDGSTS'; do
    c=$(grep -c -F "$pat" "$WORK/all.sass")
    printf '  %-58s %6d\n' "$pat" "$c"
    [ "$c" -gt 0 ] || bad "SASS lacks $pat"
  done
  c=$(grep -c -E '\b(LDL|STL)(\.|\b)' "$WORK/all.sass")
  printf '  %-58s %6d\n' "LDL/STL (local memory)" "$c"
  [ "$c" -eq 0 ] || bad "SASS uses local memory"
fi
[ $fail -eq 0 ] && echo "ISA gate sm80: PASS" || echo "ISA gate sm80: FAIL"
exit $fail
