#!/usr/bin/env bash
# T1 ISA gate for cuda-sm90 (no GPU needed): compiles the sm90 kernel files (forward and backward) for sm_90a (PTX, then
# ptxas -v). Fails unless the PTX holds wgmma.mma_async (shared-memory and register-A forms),
# cp.async.bulk.tensor (TMA), mbarrier waits and setmaxnreg, ptxas reports no stack frame or spills,
# and ptxas does not serialize the wgmmas (its C7513/C7514 "Potential Performance Loss" notes: a
# register written inside a wgmma stage costs more than the kernel's whole overlap). With cuobjdump
# it also checks the SASS (HGMMA, UTMALDG, SYNCS; no LDL/STL); without it says that part did not run.
# usage: isa_gate_sm90.sh NVCC SOURCE_DIR WORK_DIR      exit 0 pass, 1 fail, 77 no CUDA compiler
set -uo pipefail
. "$(dirname "$0")/isa_cuda_lib.sh"
isa_setup sm90 "${1:-}" "${2:-}" "${3:-}"
INC="-I$SRC/include -I$SRC/common -I$SRC/backends/cuda/common -I$SRC/backends/cuda/sm90"

for cu in "$SRC"/backends/cuda/sm90/sm90_fwd_*.cu "$SRC"/backends/cuda/sm90/sm90_bwd_d*.cu; do
  isa_compile "$cu" -gencode=arch=compute_90a,code=compute_90a sm_90a
done

echo "== PTX instructions (sm_90a)"
isa_count "$WORK/all.ptx" 76 'wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16' \
  'wgmma.mma_async.sync.aligned.m64n128k16.f32.f16.f16' \
  'cp.async.bulk.tensor.4d.shared::cluster.global.mbarrier::complete_tx::bytes' \
  'mbarrier.try_wait.parity.shared::cta.b64' 'mbarrier.arrive.expect_tx' 'setmaxnreg.inc.sync.aligned.u32' \
  'setmaxnreg.dec.sync.aligned.u32' 'wgmma.wait_group.sync.aligned 1'
isa_expect "$WORK/all.ptx" 76 -gt 0 "wgmma with the A operand in registers (P V)" \
  '^wgmma.mma_async.* \{%r[0-9]+, %r[0-9]+, %r[0-9]+, %r[0-9]+\}'
isa_count "$WORK/all.ptx" 76 'fence.proxy.async.shared::cta' # varlen: V rows zeroed before P V; the backward's dS^T
isa_count "$WORK/all.ptx" 76 'wgmma.mma_async.sync.aligned.m64n32k16.f32.bf16.bf16' # the backward's d64 dQ (MN-major A and B)
isa_expect "$WORK/all.ptx" 76 -gt 0 "wgmma with both operands MN-major (the backward's dQ)" '^wgmma.mma_async.*, p, 1, 1, 1, 1;$'


echo "== ptxas -v, sm_90a (per kernel: registers at entry, stack frame, spill stores/loads)"
isa_ptxas_table 64 "d32, d48 and d64 (192 and 128 rows), d96, d128, d160, d192, d224, d256, KV-cache d64/d128/d256 x f16/bf16 x dense/varlen; backward d64/d128 x f16/bf16"
echo "  registers after setmaxnreg (launch.h): producer/consumers $(grep -o 'PA_SM90_PRODUCER_REGS_NC(nc) .*' "$SRC/backends/cuda/sm90/sm90_launch.h" | sed 's/.*? //; s/)$//') / $(grep -o 'PA_SM90_CONSUMER_REGS_NC(nc) .*' "$SRC/backends/cuda/sm90/sm90_launch.h" | sed 's/.*? //; s/)$//') (3 consumers : 2 consumers)"
grep -E 'C751[34]' "$WORK/ptxas.txt" | head -4
isa_expect "$WORK/ptxas.txt" 76 -eq 0 "ptxas notes: wgmma serialized (C7513/C7514)" 'C751[34]|wgmma.mma_async instructions are serialized'
isa_expect "$WORK/ptxas.txt" 76 -eq 0 "ptxas notes: setmaxnreg ignored (C7508)" 'C7508|setmaxnreg.*ignored'

echo "== SASS (sm_90a cubins)"
if isa_sass 58 "$WORK"/sm90_fwd_*.cubin; then
  isa_count "$WORK/all.sass" 58 'HGMMA.64x128x16.F32.BF16' 'HGMMA.64x128x16.F32' 'UTMALDG.4D' 'SYNCS'
fi
[ $fail -eq 0 ] && echo "ISA gate sm90: PASS" || echo "ISA gate sm90: FAIL"
exit $fail
