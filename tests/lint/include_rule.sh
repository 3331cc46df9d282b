#!/bin/sh
# The include rule: a kernel family's folder includes only its own headers, the vendor-neutral
# common/ (and include/), and, for the CUDA families, backends/cuda/common/. What two families share
# lives in a common folder, never in one family's room. backends/cuda/common/ itself includes only
# common/ and include/. hip-cdna's nvcc emulation files (cdna_*emu*) are the one seam between the
# HIP folder and CUDA's common folder. backends/hip/emu/ (the emulated wave primitives, which no AMD
# build compiles) may include the HIP folder's headers, and backends/cuda/sm100/emu/ (the emulated
# tcgen05, which no release build compiles) cuda-sm100's.
# usage: include_rule.sh SOURCE_DIR      exit 0 pass, 1 fail
SRC=${1:?source dir}
fail=0
check() { # folder, allowed folders...
  dir=$1; shift
  for f in "$SRC/$dir"/*; do
    case "$f" in *.c|*.h|*.cu|*.cuh|*.cpp|*.hip) ;; *) continue ;; esac
    extra=""
    case "$(basename "$f")" in cdna_*emu*) extra="backends/cuda/common" ;; esac
    for inc in $(sed -n 's/^[[:space:]]*#[[:space:]]*include[[:space:]]*"\([^"]*\)".*/\1/p' "$f"); do
      ok=0
      for d in "$dir" "$@" $extra; do [ -f "$SRC/$d/$inc" ] && ok=1; done
      if [ $ok -eq 0 ]; then
        echo "FAIL: $dir/$(basename "$f") includes \"$inc\", which is not in $dir/ or ${*:-nothing else}${extra:+ or $extra}"
        fail=1
      fi
    done
  done
}
check backends/cuda/common common include
for fam in generic sm80 sm90 sm100; do check backends/cuda/$fam backends/cuda/common common include; done
check backends/cuda/sm100/emu backends/cuda/sm100 backends/cuda/common common include
check backends/hip common include
check backends/hip/emu backends/hip common include
check common include
[ $fail -eq 0 ] && echo "include rule: PASS (each family includes only its own folder and the common ones)"
exit $fail
