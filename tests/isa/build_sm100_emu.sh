#!/usr/bin/env bash
# T0 of cuda-sm100's emulation build (no GPU needed): the sm100 kernel files compiled for sm_90a
# with -DPA_SM100_EMULATE (tcgen05 emulated by emu/sm100_emu_ptx.cuh, TMA and mbarriers native).
# Fails unless nvcc and ptxas accept them, the PTX keeps the native TMA loads and mbarrier waits,
# no tcgen05 instruction is left (sm_90 has none), each instance module holds its emulated TMEM
# pool with the slot claim and release (atomics), the kernels keep the release build's 5
# parameters (the emulation passes nothing through them), and the instances also compile as
# objects (the host pass, whose registration stub names the pool). Spills are reported, not
# gated: the emulation is a correctness build. Running it (T3) needs an sm_90 GPU and
# -DPORTATTN_SM100_EMULATION=ON.
# usage: build_sm100_emu.sh NVCC SOURCE_DIR WORK_DIR      exit 0 pass, 1 fail, 77 no CUDA compiler
set -uo pipefail
. "$(dirname "$0")/isa_cuda_lib.sh"
isa_setup sm100-emulation "${1:-}" "${2:-}" "${3:-}"
INC="-I$SRC/include -I$SRC/common -I$SRC/backends/cuda/common -I$SRC/backends/cuda/sm100 -DPA_SM100_EMULATE"
for cu in "$SRC"/backends/cuda/sm100/sm100_fwd_d*.cu "$SRC"/backends/cuda/sm100/sm100_launch.cu; do
  isa_compile "$cu" -gencode=arch=compute_90a,code=compute_90a sm_90a
done
for cu in "$SRC"/backends/cuda/sm100/sm100_fwd_d*.cu; do # host pass too (PTX embedded: no second ptxas run)
  n=$(basename "$cu" .cu)
  "$NVCC" -std=c++17 -O3 $INC -gencode=arch=compute_90a,code=compute_90a -c -o "$WORK/$n.o" "$cu" \
    > "$WORK/$n.obj.log" 2>&1 || { cat "$WORK/$n.obj.log"; bad "$n: nvcc -c (host pass)"; }
done
echo "== PTX (sm_90a, emulated tcgen05)"
isa_count "$WORK/all.ptx" 76 'cp.async.bulk.tensor.4d.shared::cluster.global.mbarrier::complete_tx::bytes' \
  'mbarrier.try_wait.parity.shared::cta.b64' 'mbarrier.arrive.shared::cta.b64'
isa_expect "$WORK/all.ptx" 76 -eq 0 "tcgen05 instructions left (must be 0)" 'tcgen05'
isa_expect "$WORK/all.ptx" 76 -ge 4 "kernel entries (d64, d128 x f16/bf16)" '^\.(visible )?\.?entry|\.entry'
isa_expect "$WORK/all.ptx" 76 -eq 2 "emulated TMEM pools (one per instance module)" '^\.global .* sm100_emu_pool\['
isa_expect "$WORK/all.ptx" 76 -ge 4 "TMEM slot claims (atom.global.cas)" 'atom\.global\.cas\.b32'
isa_expect "$WORK/all.ptx" 76 -eq 4 "TMEM slot releases (atom.global.exch, one per kernel)" 'atom\.global\.exch\.b32'
isa_expect "$WORK/all.ptx" 76 -eq 0 "kernel parameters past a (must be 0, as in the release build)" 'sm100_fwd[A-Za-z0-9_]*_param_[5-9]'
echo "== ptxas -v (sm_90a; spills allowed in the emulation build)"
grep -E 'Compiling entry|registers|spill' "$WORK/ptxas.txt" | sed 's/^/  /'
[ $fail -eq 0 ] && echo "sm100 emulation build (T0): PASS" || echo "sm100 emulation build (T0): FAIL"
exit $fail
