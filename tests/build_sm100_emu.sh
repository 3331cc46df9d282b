#!/usr/bin/env bash
# T0 of cuda-sm100's emulation build (no GPU needed): the sm100 kernel files compiled for sm_90a
# with -DPA_SM100_EMULATE (tcgen05 emulated by sm100_emu_ptx.cuh, TMA and mbarriers native).
# Fails unless nvcc and ptxas accept them, the PTX keeps the native TMA loads and mbarrier waits,
# and no tcgen05 instruction is left (sm_90 has none). Spills are reported, not gated: the
# emulation is a correctness build. Running it (T3) needs an sm_90 GPU and -DPORTATTN_SM100_EMULATION=ON.
# usage: build_sm100_emu.sh NVCC SOURCE_DIR WORK_DIR      exit 0 pass, 1 fail, 77 no CUDA compiler
set -uo pipefail
. "$(dirname "$0")/isa_cuda_lib.sh"
isa_setup sm100-emulation "${1:-}" "${2:-}" "${3:-}"
INC="-I$SRC/include -I$SRC/common -I$SRC/backends/cuda/common -I$SRC/backends/cuda/sm100 -DPA_SM100_EMULATE"
for cu in "$SRC"/backends/cuda/sm100/sm100_fwd_d*.cu "$SRC"/backends/cuda/sm100/sm100_launch.cu; do
  isa_compile "$cu" -gencode=arch=compute_90a,code=compute_90a sm_90a
done
echo "== PTX (sm_90a, emulated tcgen05)"
isa_count "$WORK/all.ptx" 76 'cp.async.bulk.tensor.4d.shared::cluster.global.mbarrier::complete_tx::bytes' \
  'mbarrier.try_wait.parity.shared::cta.b64' 'mbarrier.arrive.shared::cta.b64'
isa_expect "$WORK/all.ptx" 76 -eq 0 "tcgen05 instructions left (must be 0)" 'tcgen05'
isa_expect "$WORK/all.ptx" 76 -ge 4 "kernel entries (d64, d128 x f16/bf16)" '^\.(visible )?\.?entry|\.entry'
echo "== ptxas -v (sm_90a; spills allowed in the emulation build)"
grep -E 'Compiling entry|registers|spill' "$WORK/ptxas.txt" | sed 's/^/  /'
[ $fail -eq 0 ] && echo "sm100 emulation build (T0): PASS" || echo "sm100 emulation build (T0): FAIL"
exit $fail
