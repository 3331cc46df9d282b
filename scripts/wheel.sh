#!/usr/bin/env bash
# Builds a wheel of the Python binding that carries the library:
#   <out>/portattn-<version>-py3-none-manylinux_2_<N>_<arch>.whl
# The binding is ctypes, so one py3-none wheel serves every Python 3 and torch version. Inside it,
# portattn/libportattn.so.0 is a Release build of every CUDA and HIP backend this toolchain can
# build (CMake's AUTO detection); the platform tag names the oldest glibc the library can run on:
# the highest GLIBC_ symbol version it references (read with objdump, as auditwheel would).
# Prints the wheel's path last.
#   PORTATTN_WHEEL_CMAKE_ARGS  extra CMake arguments, e.g. "-DPORTATTN_ENABLE_CUDA=OFF"
#   PORTATTN_WHEEL_LIBRARY     package this libportattn.so.0 instead of building one (a Release build
#                              made already, e.g. the CUDA build of a GPU session)
#   PORTATTN_WHEEL_BUILD_DIR   build folder (default: build-wheel)
#   PORTATTN_WHEEL_OUT         folder for the wheel (default: <build folder>/dist)
#   PORTATTN_WHEEL_PYTHON      interpreter with the build (or pip), wheel and setuptools modules
#                              (default: python3 or /usr/bin/python3, whichever has them: Debian's
#                              python3-build, python3-wheel; pip wheel is used where build is missing)
#   PORTATTN_SKIP_DEPS=1       do not run scripts/deps.sh first
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
[ "${PORTATTN_SKIP_DEPS:-0}" = 1 ] || scripts/deps.sh
. scripts/env.sh
build=${PORTATTN_WHEEL_BUILD_DIR:-$root/build-wheel}
out=${PORTATTN_WHEEL_OUT:-$build/dist}

die() { echo "wheel.sh: $*" >&2; exit 1; }

pick_python() {
  local py
  for py in ${PORTATTN_WHEEL_PYTHON:-python3 /usr/bin/python3}; do
    if command -v "$py" >/dev/null && "$py" -c 'import wheel, setuptools' 2>/dev/null &&
       { "$py" -c 'import build' 2>/dev/null || "$py" -c 'import pip' 2>/dev/null; }; then
      echo "$py"; return 0
    fi
  done
  die "no python3 with the build (or pip), wheel and setuptools modules (apt-get install python3-build python3-wheel)"
}

# The pure-Python wheel of a source folder, with its setup.cfg's tags, into $2.
build_wheel() {
  if "$py" -c 'import build' 2>/dev/null; then
    (cd "$1" && "$py" -m build --wheel --no-isolation --outdir "$2" .)
  else
    "$py" -m pip wheel --no-deps --no-build-isolation --wheel-dir "$2" "$1"
  fi
}

# The highest GLIBC_2.x a library references, as the manylinux_2_x tag.
glibc_tag() {
  local v
  v=$(objdump -T "$1" | grep -o 'GLIBC_2\.[0-9]*' | sort -t. -k2 -n | tail -1)
  [ -n "$v" ] || die "$1 references no GLIBC_2.x symbol version"
  echo "manylinux_2_${v#GLIBC_2.}_$(uname -m)"
}

# A manylinux library may need only what every glibc system has (PEP 600's baseline); this also
# refuses a sanitizer build (libasan, libtsan), which a plain Python cannot load.
check_needed() {
  local lib
  for lib in $(readelf -d "$1" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p'); do
    case "$lib" in
      libc.so.6|libm.so.6|libpthread.so.0|libdl.so.2|librt.so.1|libgcc_s.so.1|libstdc++.so.6|ld-linux*) ;;
      *) die "$1 needs $lib, which a manylinux wheel may not assume" ;;
    esac
  done
}

py=$(pick_python)
if [ -n "${PORTATTN_WHEEL_LIBRARY:-}" ]; then
  lib=$PORTATTN_WHEEL_LIBRARY
  [ -f "$lib" ] || die "PORTATTN_WHEEL_LIBRARY=$lib does not exist"
  mkdir -p "$build"
else
  # shellcheck disable=SC2086  # the extra arguments are meant to split
  cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DBUILD_SHARED_LIBS=ON -DPORTATTN_SANITIZE= \
        -DPORTATTN_BUILD_TESTS=OFF -DPORTATTN_BUILD_TOOLS=OFF ${PORTATTN_WHEEL_CMAKE_ARGS:-} >/dev/null
  cmake --build "$build" -j "$JOBS" --target portattn
  lib="$build/libportattn.so.0"
  [ -f "$lib" ] || die "the build made no $lib"
fi
check_needed "$lib"
plat=$(glibc_tag "$lib")

# A staging copy of python/ with the library inside the package and the platform tag set.
stage="$build/wheel-stage"
rm -rf "$stage"
mkdir -p "$stage/portattn" "$out"
cp python/pyproject.toml LICENSE "$stage/"
cp python/portattn/*.py "$stage/portattn/"
cp -L "$lib" "$stage/portattn/libportattn.so.0"
printf '[bdist_wheel]\npython_tag = py3\nplat_name = %s\n' "$plat" > "$stage/setup.cfg"
version=$("$py" -c 'import sys; sys.path.insert(0, sys.argv[1]); import _version; print(_version.__version__)' \
          "$stage/portattn")
whl="$out/portattn-$version-py3-none-$plat.whl"
rm -f "$whl"
build_wheel "$stage" "$out" >"$build/wheel-build.log" 2>&1 ||
  { tail -30 "$build/wheel-build.log" >&2; die "building the wheel failed (log: $build/wheel-build.log)"; }
[ -f "$whl" ] || die "expected $whl; $out holds: $(ls "$out")"
"$py" - "$whl" <<'EOF' || die "$whl does not carry the library"
import sys, zipfile
names = zipfile.ZipFile(sys.argv[1]).namelist()
sys.exit(0 if "portattn/libportattn.so.0" in names and "portattn/_version.py" in names else 1)
EOF
compiled=$(cd / && env -u PORTATTN_LIBRARY PYTHONPATH="$stage" "$py" -c \
  'import portattn; print(" ".join(b["name"] for b in portattn.backends() if b["compiled"]))') ||
  die "the staged package cannot load its library"
echo "wheel: $plat, backends compiled in: $compiled"
echo "$whl"
