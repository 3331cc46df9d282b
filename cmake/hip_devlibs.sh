#!/usr/bin/env bash
# The AMD device libraries for one gfx target. hipcc and clang link oclc_isa_version_<N>.bc of the
# target they build; Debian's rocm-device-libs 5.2.3 stop at gfx940 (no gfx942, no gfx11). The file
# holds only the ISA version constant (major * 1000 + minor * 100 + stepping, the last two digits of the
# name in hex), so it is made from another one in OUTDIR, beside links to the other device libraries.
# Prints the compiler flag to use (--rocm-device-lib-path=OUTDIR), or nothing when the installed device
# libraries have the file; exit 1 when it cannot be made. Used by CMake (cmake/portattn_hip.cmake) and
# tests/isa/isa_gate_hip.sh.
# usage: hip_devlibs.sh OUTDIR gfxNNN
set -uo pipefail
out=${1:?output dir}
arch=${2:?gfx target}
name=${arch#gfx}
devlib=""
for d in /usr/lib/x86_64-linux-gnu/amdgcn/bitcode /usr/lib/amdgcn/bitcode /opt/rocm/amdgcn/bitcode \
         /opt/rocm/lib/llvm/lib/clang/*/lib/amdgcn/bitcode; do
  [ -f "$d/ocml.bc" ] && { devlib=$d; break; }
done
[ -n "$devlib" ] || { echo "no AMD device libraries found (rocm-device-libs)" >&2; exit 1; }
[ -f "$devlib/oclc_isa_version_$name.bc" ] && exit 0
isa_value() { local n=$1; echo $((${n:0:${#n}-2} * 1000 + 0x${n: -2:1} * 100 + 0x${n: -1})); }
[[ $name =~ ^[0-9]+[0-9a-f][0-9a-f]$ ]] || { echo "not a gfx target: $arch" >&2; exit 1; }
src=""
for s in "$devlib"/oclc_isa_version_940.bc "$devlib"/oclc_isa_version_1036.bc "$devlib"/oclc_isa_version_*.bc; do
  [ -f "$s" ] && { src=$s; break; }
done
[ -n "$src" ] || { echo "no oclc_isa_version file in $devlib" >&2; exit 1; }
from=$(basename "$src" .bc); from=${from#oclc_isa_version_}
dis=""; as=""
for v in 15 16 17 18 19 ""; do
  if command -v "llvm-dis${v:+-$v}" >/dev/null && command -v "llvm-as${v:+-$v}" >/dev/null; then
    dis="llvm-dis${v:+-$v}"; as="llvm-as${v:+-$v}"; break
  fi
done
[ -n "$dis" ] || { echo "llvm-dis/llvm-as not found (Debian: llvm-15)" >&2; exit 1; }
old=$(isa_value "$from") new=$(isa_value "$name")
rm -rf "$out" && mkdir -p "$out" && ln -s "$devlib"/*.bc "$out"/ || exit 1
"$dis" "$src" -o - | sed "s/i32 $old\b/i32 $new/" | "$as" -o "$out/oclc_isa_version_$name.bc" &&
  "$dis" "$out/oclc_isa_version_$name.bc" -o - | grep -q "i32 $new\b" ||
  { echo "could not make oclc_isa_version_$name.bc from $src" >&2; exit 1; }
echo "--rocm-device-lib-path=$out"
