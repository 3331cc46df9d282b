#!/usr/bin/env bash
# gfx1100 with Debian's rocm-device-libs 5.2.3: hipcc needs oclc_isa_version_1100.bc, which that
# package lacks. It only holds the ISA version constant, so it is made from the 1036 file
# (shared/reference/amd-anchors.md section 5.1) in OUTDIR beside links to the other device libraries.
# Prints the hipcc flag to use (--rocm-device-lib-path=OUTDIR), or nothing when the installed device
# libraries already have the file; exit 1 when it cannot be made. Used by CMake (backends/hip) and
# tests/isa_gate_hip.sh.
# usage: hip_gfx11_devlibs.sh OUTDIR
set -uo pipefail
out=${1:?output dir}
devlib=""
for d in /usr/lib/x86_64-linux-gnu/amdgcn/bitcode /usr/lib/amdgcn/bitcode /opt/rocm/amdgcn/bitcode \
         /opt/rocm/lib/llvm/lib/clang/*/lib/amdgcn/bitcode; do
  [ -f "$d/ocml.bc" ] && { devlib=$d; break; }
done
[ -n "$devlib" ] || { echo "no AMD device libraries found (rocm-device-libs)" >&2; exit 1; }
[ -f "$devlib/oclc_isa_version_1100.bc" ] && exit 0
dis=""; as=""
for v in 15 16 17 18 19 ""; do
  if command -v "llvm-dis${v:+-$v}" >/dev/null && command -v "llvm-as${v:+-$v}" >/dev/null; then
    dis="llvm-dis${v:+-$v}"; as="llvm-as${v:+-$v}"; break
  fi
done
[ -n "$dis" ] || { echo "llvm-dis/llvm-as not found (Debian: llvm-15)" >&2; exit 1; }
rm -rf "$out" && mkdir -p "$out" && ln -s "$devlib"/*.bc "$out"/ || exit 1
"$dis" "$devlib/oclc_isa_version_1036.bc" -o - | sed 's/i32 10306/i32 11000/' | "$as" -o "$out/oclc_isa_version_1100.bc" &&
  "$dis" "$out/oclc_isa_version_1100.bc" -o - | grep -q "i32 11000" ||
  { echo "could not make oclc_isa_version_1100.bc from $devlib" >&2; exit 1; }
echo "--rocm-device-lib-path=$out"
