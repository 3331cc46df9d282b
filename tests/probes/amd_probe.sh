#!/usr/bin/env bash
# Builds and runs amd_probe (amd_probe.hip + its emulated side amd_probe_emu.cpp): hipcc for the AMD GPU
# of this machine, or, without one, for gfx90a and gfx1100 as a compile check before the skip.
# usage: amd_probe.sh SOURCE_DIR WORK_DIR [RESULTS_FILE]   (PA_PROBE_TARGETS="gfx..." overrides the targets)
# exit: amd_probe's (0 all bit-exact, 1 a difference), 1 a build failure, 77 no hipcc or no AMD GPU
set -uo pipefail
SRC=${1:?source dir}
WORK=${2:?work dir}
RES=${3:-}
HIPCC=${HIPCC:-hipcc}
mkdir -p "$WORK" && cd "$WORK" || exit 1
arch=$(rocminfo 2>/dev/null | grep -om1 'gfx[0-9a-f]*')
read -ra targets <<< "${PA_PROBE_TARGETS:-${arch:-gfx90a gfx1100}}"
flags=()
for t in "${targets[@]}"; do
  f=$(bash "$SRC/cmake/hip_devlibs.sh" "$WORK/devlib-$t" "$t") || { echo "FAIL: no device libraries for $t"; exit 1; }
  [ -n "$f" ] && flags=("$f")   # one generated directory serves (only the ISA-version file differs)
  flags+=("--offload-arch=$t")
done
# hipcc, or where its clang does not know a target (Debian's 5.2.3 and gfx942) a clang 17+ with the same
# HIP headers, linked against libamdhip64 itself
rocm=""
for d in /opt/rocm /usr; do [ -f "$d/include/hip/hip_runtime.h" ] && { rocm=$d; break; }; done
compilers=()
command -v "$HIPCC" >/dev/null && compilers+=("$HIPCC")
for c in clang++-19 clang++-18 clang++-17; do command -v $c >/dev/null && [ -n "$rocm" ] && { compilers+=("$c"); break; }; done
((${#compilers[@]})) || { echo "SKIP: no hipcc or clang 17+ (scripts/deps.sh installs Debian's)"; exit 77; }
inc=(-I"$SRC/tests/probes" -I"$SRC/backends/hip" -I"$SRC/common" -I"$SRC/include")
shim=(-D__CUDACC__ -include "$SRC/tests/sim/hip_sim/shim/pre.h" -I"$SRC/tests/sim/hip_sim/shim" -I"$SRC/tests/sim/sim_shim")
c++ -std=c++17 -O2 "${shim[@]}" "${inc[@]}" -c "$SRC/tests/probes/amd_probe_emu.cpp" -o amd_probe_emu.o &&
  c++ -std=c++17 -O2 -I"$SRC/tests/sim/sim_shim" -c "$SRC/tests/sim/sim_shim/sim_fiber.cpp" -o sim_fiber.o ||
  { echo "FAIL: building the emulated side"; exit 1; }
built=""
: > build.log
for cc in "${compilers[@]}"; do
  if [ "$cc" = "$HIPCC" ]; then
    "$cc" -std=c++17 -O2 "${flags[@]}" "${inc[@]}" -c "$SRC/tests/probes/amd_probe.hip" -o amd_probe.o >> build.log 2>&1 &&
      "$cc" amd_probe.o amd_probe_emu.o sim_fiber.o -o amd_probe >> build.log 2>&1 && built=$cc
  else
    "$cc" -x hip --rocm-path="$rocm" -std=c++17 -O2 "${flags[@]}" "${inc[@]}" -c "$SRC/tests/probes/amd_probe.hip" \
      -o amd_probe.o >> build.log 2>&1 &&
      "$cc" amd_probe.o amd_probe_emu.o sim_fiber.o -L"$rocm/lib" -lamdhip64 -o amd_probe >> build.log 2>&1 && built=$cc
  fi
  [ -n "$built" ] && break
done
[ -n "$built" ] || { tail -30 build.log; echo "FAIL: building amd_probe"; exit 1; }
echo "amd_probe built for ${targets[*]} by $built"
./amd_probe ${RES:+"$RES"}
