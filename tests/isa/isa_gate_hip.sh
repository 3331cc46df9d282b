#!/usr/bin/env bash
# T0/T1 for the HIP kernels (no AMD GPU needed): compiles backends/hip/cdna_fwd.hip with hipcc for
# gfx90a and with CLANG (17+) for gfx942, and backends/hip/rdna3_fwd.hip with CLANG for gfx1100
# (wave32), and gates the code objects' assembly: the 32x32x8 MFMA (CDNA) or 16x16x16 WMMA (RDNA3)
# of f16 and bf16 present for each target, no scratch (CDNA VGPRs spilled into AGPRs stay in
# registers: reported, not failed; RDNA3 has no AGPRs, so any spill fails), no calls (s_swappc), LDS
# within 64 KiB; prints VGPRs/AGPRs/occupancy per kernel. Debian's rocm-device-libs 5.2.3 lack the
# gfx942 and gfx1100 ISA-version bitcode: cmake/hip_devlibs.sh makes it; a ROCm that ships it is used
# as is. With nvcc it also compiles both kernel sources against the wave emulation (cdna_fwd_emu.cu,
# rdna3_fwd_emu.cu) for sm_90, and prints tools/hip_estimate.py's static model on MI250X, MI300X and
# RX 7900 XTX. hip-cdna's decode kernels (cdna_decode.hip) are gated the same way for the CDNA targets,
# and hip-generic (hipgen.hip) for every target (no scratch, no calls, LDS, wave width).
# Neither kernel has run on AMD hardware (T3 on the CPU: tests/sim/hip_fake; checks: tests/sim/hip_sim/).
# usage: isa_gate_hip.sh HIPCC NVCC SOURCE_DIR WORK_DIR [CLANG]     exit 0 pass, 1 fail, 77 no hipcc
set -uo pipefail
HIPCC=${1:-}
NVCC=${2:-}
SRC=${3:?source dir}
WORK=${4:?work dir}
CLANG=${5:-}
if [ -z "$HIPCC" ] || ! [ -x "$(command -v "$HIPCC")" ]; then
  echo "SKIP: no hipcc (Debian: apt-get install hipcc libamdhip64-dev rocm-device-libs)"
  exit 77
fi
mkdir -p "$WORK" && cd "$WORK" || exit 1
rm -f ./*.s
fail=0
bad() { echo "FAIL: $*"; fail=1; }

# One CDNA assembly file: each MFMA pattern in $pats present, no calls, at least $min kernels, none with
# scratch (memory spills; spills into AGPRs are shown, not failed) or LDS over 64 KiB.
# usage: cdna_asm_check FILE LABEL MIN "WHAT THE KERNELS ARE"   (reads $pats)
cdna_asm_check() {
  local s=$1 label=$2 min=$3 what=$4 p c
  for p in $pats; do
    c=$(grep -c -E "^[[:space:]]*$p\b" "$s"); printf '  %-40s %6d\n' "$p" "$c"
    [ "$c" -gt 0 ] || bad "$label lacks $p"
  done
  c=$(grep -c -E '^[[:space:]]*s_swappc' "$s"); printf '  %-40s %6d\n' "s_swappc (calls)" "$c"; [ "$c" -eq 0 ] || bad "$label: calls"
  awk -v t="$label" -v min="$min" -v what="$what" '
    /^[[:space:]]*\.name:[[:space:]]+(_Z|pa_)/ { k = $2 }
    /\.group_segment_fixed_size:/ { lds = $2 }
    /\.private_segment_fixed_size:/ { scr = $2 }
    /\.vgpr_count:/ { v = $2 }
    /\.vgpr_spill_count:/ { sp = $2 }
    /\.agpr_count:/ { ag = $NF }
    /\.wavefront_size:/ { n++; printf "  %-46s VGPR %3d AGPR %3d LDS %6d scratch %d spills %d%s\n", k, v, ag, lds, scr, sp,
                                 sp && !scr ? " (into AGPRs)" : "";
                          if (scr != 0 || lds > 65536) bad++ }
    END { if (n < min) { print "FAIL: " t ": expected " min " kernels (" what "), found " n; exit 1 }
          if (bad) { print "FAIL: " t ": " bad " kernel(s) with scratch (memory spills) or LDS over 64 KiB"; exit 1 } }' "$s" || fail=1
  grep -E "; Occupancy:" "$s" | sort | uniq -c | sed 's/^/  /'
}
"$HIPCC" --offload-arch=gfx90a -O3 -std=c++17 --save-temps -I"$SRC/backends/hip" -I"$SRC/common" \
  -c "$SRC/backends/hip/cdna_fwd.hip" -o cdna_fwd.o > hipcc.log 2>&1 || { tail -20 hipcc.log; bad "hipcc"; }
# gfx942 (MI300X/MI300A/MI325X): hipcc 5.2.3's clang-15 does not know it; clang 17+ with the same HIP
# headers and device libraries (plus a generated oclc_isa_version_942.bc) builds it
cdna_targets="gfx90a"
rocm=""
for d in /opt/rocm /usr; do [ -f "$d/include/hip/hip_runtime.h" ] && { rocm=$d; break; }; done
if [ -n "$CLANG" ] && [ -x "$(command -v "$CLANG")" ] && [ -n "$rocm" ] &&
   flag=$(bash "$SRC/cmake/hip_devlibs.sh" "$WORK/devlib-gfx942" gfx942); then
  "$CLANG" -x hip --rocm-path="$rocm" $flag --offload-arch=gfx942 --cuda-device-only -S -O3 -std=c++17 \
    -I"$SRC/backends/hip" -I"$SRC/common" "$SRC/backends/hip/cdna_fwd.hip" -o cdna_fwd-hip-amdgcn-amd-amdhsa-gfx942.s \
    > clang_gfx942.log 2>&1 || { tail -20 clang_gfx942.log; bad "$CLANG gfx942"; }
  cdna_targets="gfx90a gfx942"
else
  echo "== gfx942: NOT BUILT (needs clang 17+, e.g. Debian's clang-19: scripts/deps.sh)"
fi
for t in $cdna_targets; do
  s=$(ls ./*-hip-amdgcn-amd-amdhsa-$t.s 2>/dev/null | head -1)
  [ -n "$s" ] || { bad "$t: no assembly"; continue; }
  echo "== $t"
  if [ $t = gfx90a ]; then pats="v_mfma_f32_32x32x8f16 v_mfma_f32_32x32x8bf16_1k"; else pats="v_mfma_f32_32x32x8_f16 v_mfma_f32_32x32x8_bf16"; fi
  cdna_asm_check "$s" "$t" 16 "d32, d64, d96, d128, d160, d192, d256 lo/hi x f16, bf16"
done
# ---- gfx1100 (RDNA3, wave32, WMMA) ----
# gfx1100 needs an ISA-version device library Debian's 5.2.3 lacks: cmake/hip_devlibs.sh makes it.
gfx11_flags=()
if flag=$(bash "$SRC/cmake/hip_devlibs.sh" "$WORK/devlib-gfx1100" gfx1100); then
  [ -n "$flag" ] && gfx11_flags=("$flag") && echo "== gfx1100: device libraries plus a generated oclc_isa_version_1100.bc"
else
  bad "gfx1100: cannot make oclc_isa_version_1100.bc"
fi
# built by clang 17+ (as cmake/portattn_hip.cmake does): clang-15's 128-VGPR cap spills the retuned kernel
# (Q in registers, 32-key tiles, d256 in one launch at 256 VGPRs)
if [ -n "$CLANG" ] && [ -x "$(command -v "$CLANG")" ] && [ -n "$rocm" ]; then
  "$CLANG" -x hip --rocm-path="$rocm" "${gfx11_flags[@]}" --offload-arch=gfx1100 --cuda-device-only -S -O3 -std=c++17 \
    -I"$SRC/backends/hip" -I"$SRC/common" "$SRC/backends/hip/rdna3_fwd.hip" -o rdna3_fwd-hip-amdgcn-amd-amdhsa-gfx1100.s \
    > clang_gfx1100.log 2>&1 || { tail -20 clang_gfx1100.log; bad "$CLANG gfx1100"; }
else
  echo "== gfx1100: NOT BUILT (needs clang 17+, e.g. Debian's clang-19: scripts/deps.sh)"
fi
s=$(ls ./rdna3_fwd-hip-amdgcn-amd-amdhsa-gfx1100.s 2>/dev/null | head -1)
rdna3_s=$s
if [ -z "$s" ]; then
  [ -n "$CLANG" ] && bad "gfx1100: no assembly"
else
  echo "== gfx1100"
  for p in v_wmma_f32_16x16x16_f16 v_wmma_f32_16x16x16_bf16; do
    c=$(grep -c -E "^[[:space:]]*$p\b" "$s"); printf '  %-40s %6d\n' "$p" "$c"
    [ "$c" -gt 0 ] || bad "gfx1100 lacks $p"
  done
  c=$(grep -c -E '^[[:space:]]*s_swappc' "$s"); printf '  %-40s %6d\n' "s_swappc (calls)" "$c"; [ "$c" -eq 0 ] || bad "gfx1100: calls"
  awk '
    /^[[:space:]]*\.name:[[:space:]]+(_Z|pa_)/ { k = $2 }
    /\.group_segment_fixed_size:/ { lds = $2 }
    /\.private_segment_fixed_size:/ { scr = $2 }
    /\.sgpr_count:/ { sg = $2 }
    /\.vgpr_count:/ { v = $2 }
    /\.vgpr_spill_count:/ { sp = $2 }
    /\.wavefront_size:/ { n++; w = $2; printf "  %-46s VGPR %3d SGPR %3d LDS %6d scratch %d spills %d wave%d\n", k, v, sg, lds, scr, sp, w;
                          if (scr != 0 || sp != 0 || lds > 65536 || w != 32) bad++ }
    END { if (n < 16) { print "FAIL: gfx1100: expected 16 kernels (d32 to d256 in steps of 32 x f16, bf16), found " n; exit 1 }
          if (bad) { print "FAIL: gfx1100: " bad " kernel(s) with scratch, spills, LDS over 64 KiB or not wave32"; exit 1 } }' "$s" || fail=1
  grep -E "; Occupancy:" "$s" | sort | uniq -c | sed 's/^/  /'
fi
# hip_asm TARGET SOURCE OUT LOG: the device assembly of backends/hip/SOURCE for one target, compiled
# as the build compiles it (hipcc for gfx90a, CLANG with the device libraries hip_devlibs.sh makes for
# the others); prints the log's tail and fails when the compiler does.
hip_asm() {
  local t=$1 src=$SRC/backends/hip/$2 out=$3 log=$4 inc=(-I"$SRC/backends/hip" -I"$SRC/common" -I"$SRC/include")
  if [ "$t" = gfx90a ]; then
    "$HIPCC" --offload-arch=gfx90a --cuda-device-only -S -O3 -std=c++17 "${inc[@]}" "$src" -o "$out" > "$log" 2>&1
  else
    "$CLANG" -x hip --rocm-path="$rocm" $(bash "$SRC/cmake/hip_devlibs.sh" "$WORK/devlib-$t" "$t") --offload-arch="$t" \
      --cuda-device-only -S -O3 -std=c++17 "${inc[@]}" "$src" -o "$out" > "$log" 2>&1
  fi || { tail -20 "$log"; return 1; }
}
# ---- hip-cdna's split-KV decode (cdna_decode.hip), the same targets, in dec/ (the static model below
# reads the prefill's assembly only): MFMA of both dtypes, no scratch, no calls, 11 kernels (8 attention
# instances, 2 combines, the append) ----
mkdir -p dec
for t in $cdna_targets; do
  s=dec/cdna_decode-$t.s
  hip_asm $t cdna_decode.hip $s dec/$t.log || { bad "decode: $t"; continue; }
  if [ $t = gfx90a ]; then pats="v_mfma_f32_32x32x8f16 v_mfma_f32_32x32x8bf16_1k"; else pats="v_mfma_f32_32x32x8_f16 v_mfma_f32_32x32x8_bf16"; fi
  echo "== $t decode"
  cdna_asm_check "$s" "$t decode" 11 "8 attention instances, 2 combines, the append"
done
# ---- hip-generic (hipgen.hip), every target of both families, in gen/: no scratch, no calls, LDS
# within 64 KiB, the target's wave width, 5 kernels (the forward in 3 dtypes, 2 appends) ----
mkdir -p gen
gen_targets="$cdna_targets"
[ -n "$rdna3_s" ] && gen_targets="$gen_targets gfx1100"
for t in $gen_targets; do
  g=gen/hipgen-$t.s
  hip_asm $t hipgen.hip $g gen/$t.log || { bad "generic: $t"; continue; }
  want=64; case $t in gfx1*) want=32 ;; esac
  echo "== $t generic"
  c=$(grep -c -E '^[[:space:]]*s_swappc' "$g"); printf '  %-40s %6d\n' "s_swappc (calls)" "$c"; [ "$c" -eq 0 ] || bad "$t generic: calls"
  awk -v t="$t" -v want="$want" '
    /^[[:space:]]*\.name:[[:space:]]+pa_/ { k = $2 }
    /\.group_segment_fixed_size:/ { lds = $2 }
    /\.private_segment_fixed_size:/ { scr = $2 }
    /\.vgpr_count:/ { v = $2 }
    /\.wavefront_size:/ { n++; w = $2; printf "  %-46s VGPR %3d LDS %6d scratch %d wave%d\n", k, v, lds, scr, w;
                          if (scr != 0 || lds > 65536 || w != want) bad++ }
    END { if (n < 5) { print "FAIL: " t " generic: expected 5 kernels (3 dtypes, 2 appends), found " n; exit 1 }
          if (bad) { print "FAIL: " t " generic: " bad " kernel(s) with scratch, LDS over 64 KiB or not wave" want; exit 1 } }' "$g" || fail=1
done
# the static model for porting studies (prints only; a model, not a measurement)
# (estimate_<target>.json for tools/report.py, which must take them as labelled estimates)
if command -v python3 >/dev/null; then
  python3 "$SRC/tools/hip_estimate.py" --json estimate ./*-hip-amdgcn-amd-amdhsa-gfx90a.s \
    ./*-hip-amdgcn-amd-amdhsa-gfx942.s ./*-hip-amdgcn-amd-amdhsa-gfx1100.s 2>&1 | sed 's/^/  /'
  python3 "$SRC/tools/report.py" estimate/estimate_*.json --out estimate/report > report.log 2>&1 &&
    grep -q "static estimate" estimate/report/summary.md || { cat report.log; bad "report.py on the estimates"; }
fi
# The emulated builds are checked to compile, not for their code: device optimisation at -O1 (cicc and
# ptxas). At -O3 cicc unrolls the emulated MFMA loops of 16 kernels into 30 MB of PTX, 185 s of this
# gate's 250 (the optimised emulation is what -DPORTATTN_HIP_EMULATION=ON builds on a GPU machine).
EMU_OPT=(-Xcicc -O1 -Xptxas -O1)
if [ -n "$NVCC" ] && [ -x "$(command -v "$NVCC")" ]; then
  "$NVCC" -std=c++17 -O3 "${EMU_OPT[@]}" -gencode=arch=compute_90,code=sm_90 -I"$SRC/backends/hip" -I"$SRC/common" -c "$SRC/backends/hip/cdna_fwd_emu.cu" \
    -o cdna_fwd_emu.o > nvcc.log 2>&1 && echo "== emulated build cdna (nvcc, sm_90): compiles" || { tail -20 nvcc.log; bad "nvcc emulated build"; }
  "$NVCC" -std=c++17 -O3 "${EMU_OPT[@]}" -gencode=arch=compute_90,code=sm_90 -I"$SRC/backends/hip" -I"$SRC/common" -c "$SRC/backends/hip/rdna3_fwd_emu.cu" \
    -o rdna3_fwd_emu.o > nvcc_rdna3.log 2>&1 && echo "== emulated build rdna3 (nvcc, sm_90): compiles" || { tail -20 nvcc_rdna3.log; bad "nvcc emulated build rdna3"; }
else
  echo "== emulated build: NOT RUN (no nvcc)"
fi
[ $fail -eq 0 ] && echo "ISA gate hip-cdna + hip-rdna3: PASS" || echo "ISA gate hip-cdna + hip-rdna3: FAIL"
exit $fail
