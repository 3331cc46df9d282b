#!/usr/bin/env bash
# T1 ISA gate for cuda-sm100 (no GPU needed): compiles the sm100 kernel files for sm_100a and
# sm_103a (PTX, then ptxas -v). Fails unless the PTX holds the tcgen05 MMA in both forms (A from
# shared memory and A from TMEM), TMEM alloc/relinquish/dealloc, tcgen05.ld/st and their waits,
# tcgen05.commit, the tcgen05 fences, TMA tensor loads and the mbarrier operations (plus
# tcgen05.ld.red in the sm_103a code only), and ptxas reports no stack frame, spills or local
# memory. Prints registers per kernel. With cuobjdump it also checks the SASS (a UTC*MMA
# instruction, UTMALDG; no LDL/STL); without it says so. The release compile must not read the
# emulation (backends/cuda/sm100/emu/, sm100_tc_emu.h) and its kernels take exactly the 5
# parameters tq, tk, tv, to, a (nothing for an emulation).
# usage: isa_gate_sm100.sh NVCC SOURCE_DIR WORK_DIR   exit 0 pass, 1 fail, 77 no (new enough) nvcc
set -uo pipefail
. "$(dirname "$0")/isa_cuda_lib.sh"
isa_setup sm100 "${1:-}" "${2:-}" "${3:-}"
ver=$("$NVCC" --version | sed -n 's/.*release \([0-9]*\)\.\([0-9]*\).*/\1 \2/p')
read -r vmaj vmin <<< "${ver:-0 0}"
if [ "$vmaj" -lt 12 ] || { [ "$vmaj" -eq 12 ] && [ "$vmin" -lt 9 ]; }; then
  echo "SKIP: nvcc $vmaj.$vmin is older than 12.9 (sm_103a); the gate checks sm_100a and sm_103a"
  exit 77
fi
INC="-I$SRC/include -I$SRC/common -I$SRC/backends/cuda/common -I$SRC/backends/cuda/sm100"

mkdir -p "$WORK/src"
for arch in 100a 103a; do
  : > "$WORK/arch_$arch.ptx"
  for cu in "$SRC"/backends/cuda/sm100/sm100_fwd_d*.cu; do
    n=$(basename "$cu" .cu)_sm$arch
    cp "$cu" "$WORK/src/$n.cu"
    isa_compile "$WORK/src/$n.cu" -gencode=arch=compute_$arch,code=compute_$arch sm_$arch &&
      cat "$WORK/$n.ptx" >> "$WORK/arch_$arch.ptx"
  done
done

for arch in 100a 103a; do
  echo "== PTX instructions (sm_$arch)"
  isa_count "$WORK/arch_$arch.ptx" 64 'tcgen05.mma.cta_group::1.kind::f16' 'tcgen05.alloc.cta_group::1.sync.aligned' \
    'tcgen05.relinquish_alloc_permit.cta_group::1' 'tcgen05.dealloc.cta_group::1' \
    'tcgen05.ld.sync.aligned.32x32b.x32.b32' 'tcgen05.st.sync.aligned.32x32b.x32.b32' 'tcgen05.wait::ld' \
    'tcgen05.wait::st' 'tcgen05.commit.cta_group::1.mbarrier::arrive::one' 'tcgen05.fence::before_thread_sync' \
    'tcgen05.fence::after_thread_sync' 'cp.async.bulk.tensor.4d.shared::cluster.global.mbarrier::complete_tx::bytes' \
    'mbarrier.try_wait.parity.shared::cta.b64' 'mbarrier.arrive.expect_tx' 'mbarrier.init.shared::cta.b64' \
    'cp.async.bulk.tensor.4d.global.shared::cta.bulk_group' 'cp.async.bulk.wait_group.read' 'fence.proxy.async.shared::cta'
  isa_expect "$WORK/arch_$arch.ptx" 64 -gt 0 "tcgen05.mma with A from TMEM (P V, TS form)" \
    'tcgen05\.mma\.cta_group::1\.kind::f16 \[%r[0-9]+\], \[%r[0-9]+\]'
  isa_expect "$WORK/arch_$arch.ptx" 64 -gt 0 "tcgen05.mma with A from shared memory (Q K^T, SS form)" \
    'tcgen05\.mma\.cta_group::1\.kind::f16 \[%r[0-9]+\], %rd[0-9]+'
done
isa_expect "$WORK/arch_100a.ptx" 64 -eq 0 "tcgen05.ld.red in sm_100a PTX (must be 0: sm_103 only)" 'tcgen05\.ld\.red'
isa_expect "$WORK/arch_103a.ptx" 64 -gt 0 "tcgen05.ld.red in sm_103a PTX (row max with the S load)" 'tcgen05\.ld\.red'
# sm_100a moves part of the exponentials to the FMA pipe (sm100_exp2_fma); sm_103a keeps them on the SFU
e100=$(grep -c 'ex2.approx' "$WORK/arch_100a.ptx"); e103=$(grep -c 'ex2.approx' "$WORK/arch_103a.ptx")
printf '  %-64s %6s\n' "ex2.approx, sm_100a / sm_103a (fewer on sm_100a: FMA-pipe exp2)" "$e100/$e103"
[ "$e100" -lt "$e103" ] || bad "sm_100a PTX has as many ex2.approx as sm_103a: no exponentials on the FMA pipe"

echo "== kernel parameters (sm_100a and sm_103a)"
cat "$WORK"/arch_*.ptx > "$WORK/release.ptx"
isa_expect "$WORK/release.ptx" 64 -eq 8 "kernel parameter 4 (a), d64/d128 x f16/bf16 x 2 arches" '\.param .*sm100_fwd[A-Za-z0-9_]*_param_4'
isa_expect "$WORK/release.ptx" 64 -eq 0 "kernel parameters past a (must be 0)" 'sm100_fwd[A-Za-z0-9_]*_param_[5-9]'

echo "== headers of the sm_100a/sm_103a compile (nvcc -M, both device passes)"
: > "$WORK/deps.txt"
for cu in "$SRC"/backends/cuda/sm100/sm100_fwd_d*.cu "$SRC"/backends/cuda/sm100/sm100_launch.cu; do
  "$NVCC" -std=c++17 $INC -gencode=arch=compute_100a,code=compute_100a -gencode=arch=compute_103a,code=compute_103a \
    -M "$cu" 2>> "$WORK/deps.log" | tr ' \\' '\n\n' | grep -v '^$' >> "$WORK/deps.txt" || bad "$(basename "$cu"): nvcc -M"
done
isa_expect "$WORK/deps.txt" 64 -gt 0 "sm100_ptx.cuh read (the check sees the kernel's headers)" 'sm100/sm100_ptx\.cuh$'
isa_expect "$WORK/deps.txt" 64 -eq 0 "emulation headers read (sm100/emu/, sm100_tc_emu.h; must be 0)" 'sm100/emu/|sm100_tc_emu\.h'

echo "== ptxas -v, sm_100a and sm_103a (per kernel: registers, stack frame, spill stores/loads)"
isa_ptxas_table 8 "d64, d128 x f16/bf16 x sm_100a/sm_103a"
isa_expect "$WORK/ptxas.txt" 64 -eq 0 "ptxas notes on local memory" '[Ll]mem|[Ll]ocal memory'
echo "  dynamic shared memory per CTA (sm100_desc.h PA_SM100_SMEM): d64 99464 B, d128 197768 B (limit 232448)"

echo "== SASS (sm_100a/sm_103a cubins)"
if isa_sass 64 "$WORK"/sm100_fwd_d*.cubin; then
  for pat in 'UTC[A-Z]*MMA' 'UTMALDG'; do isa_expect "$WORK/all.sass" 64 -gt 0 "$pat" "$pat"; done
fi
[ $fail -eq 0 ] && echo "ISA gate sm100: PASS" || echo "ISA gate sm100: FAIL"
exit $fail
