#!/usr/bin/env bash
# Installs the Debian packages the build needs when they are missing (root or sudo required then).
# The CUDA toolkit is optional: with nvcc on PATH (or at /usr/local/cuda/bin) the CUDA backends
# are built too. The AMD toolchain (Debian's hipcc 5.2.3 with clang-15, libamdhip64-dev,
# rocm-device-libs, and clang-19 for gfx942) is installed when the archive has it, for the HIP code
# objects + ISA gate; where it cannot be installed that test is skipped, nothing else depends on it.
set -euo pipefail
need=()
command -v cmake >/dev/null || need+=(cmake)
command -v ninja >/dev/null || need+=(ninja-build)
command -v cc >/dev/null || need+=(gcc)
command -v c++ >/dev/null || need+=(g++)
command -v pkg-config >/dev/null || need+=(pkg-config)
# clang with libFuzzer and its sanitizer runtimes (Debian 12: clang 14 + libclang-rt-14-dev)
if ! command -v clang >/dev/null || ! echo 'int LLVMFuzzerTestOneInput(const char*d,long n){(void)d;(void)n;return 0;}' |
     clang -x c -fsanitize=fuzzer,address - -o /dev/null 2>/dev/null; then
  need+=(clang libclang-rt-14-dev)
fi
# PyTorch for the binding's torch tests on the CPU (Debian 12: torch 1.13 under /usr/bin/python3)
if [ "${PORTATTN_SKIP_TORCH_DEPS:-0}" != 1 ] && [ -x /usr/bin/python3 ] &&
   ! /usr/bin/python3 -c 'import torch' 2>/dev/null; then
  need+=(python3-torch)
fi
# The Python tests (pytest), the wheel (scripts/wheel.sh: python3-build, python3-wheel; pip installs it
# in the wheel_install test) and the Debian packages' library dependencies (dpkg-shlibdeps)
if [ -x /usr/bin/python3 ]; then
  /usr/bin/python3 -c 'import pytest' 2>/dev/null || need+=(python3-pytest)
  /usr/bin/python3 -c 'import build, wheel' 2>/dev/null || need+=(python3-build python3-wheel)
  /usr/bin/python3 -c 'import pip' 2>/dev/null || need+=(python3-pip)
fi
command -v dpkg-shlibdeps >/dev/null || need+=(dpkg-dev)
if ((${#need[@]})); then
  echo "deps: installing ${need[*]}"
  sudo=""; [ "$(id -u)" = 0 ] || sudo="sudo"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${need[@]}"
fi
if ! command -v hipcc >/dev/null && [ "${PORTATTN_SKIP_HIP_DEPS:-0}" != 1 ]; then
  echo "deps: installing the HIP toolchain (hipcc libamdhip64-dev rocm-device-libs)"
  sudo=""; [ "$(id -u)" = 0 ] || sudo="sudo"
  { $sudo apt-get update -qq &&
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends hipcc libamdhip64-dev rocm-device-libs; } ||
    echo "deps: HIP toolchain not installed; isa_gate_hip will be skipped"
fi
# gfx942 (MI300X/MI300A/MI325X) needs clang 17+ (hipcc 5.2.3's clang-15 does not know it): Debian 12
# ships clang-19; its amdgcn code objects are linked by ld.lld (lld-19), the ISA-version device
# library Debian lacks is made with llvm-15's llvm-dis/llvm-as (cmake/hip_devlibs.sh), and a whole
# HIP program (the instruction probe, tests/probes/amd_probe.sh) needs clang-offload-bundler (clang-tools-19)
if command -v hipcc >/dev/null && [ "${PORTATTN_SKIP_HIP_DEPS:-0}" != 1 ] &&
   ! { command -v clang++-19 >/dev/null && command -v ld.lld-19 >/dev/null && command -v llvm-dis-15 >/dev/null &&
       [ -x /usr/lib/llvm-19/bin/clang-offload-bundler ]; }; then
  echo "deps: installing clang-19 lld-19 llvm-15 clang-tools-19 (hip-cdna code objects for gfx942)"
  sudo=""; [ "$(id -u)" = 0 ] || sudo="sudo"
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends clang-19 lld-19 llvm-15 clang-tools-19 ||
    echo "deps: clang-19 not installed; hip-cdna is built without gfx942"
fi
