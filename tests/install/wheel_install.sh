#!/usr/bin/env bash
# Builds the wheel with scripts/wheel.sh (a CPU-only library, to stay quick), installs it into an
# empty folder with pip --target, and checks from outside the repository, with no PORTATTN_LIBRARY:
# the package loads the library it carries, its version is the library's, and the CPU binding
# tests pass against the installed package (pytest --installed).
# usage: wheel_install.sh SOURCE_DIR WORK_DIR [PYTHON]     exit 0 pass, 1 fail, 77 no python3-build/wheel
set -uo pipefail
src=$1 work=$2 py=${3:-}
rm -rf "$work" && mkdir -p "$work"
for cand in $py python3 /usr/bin/python3; do
  if command -v "$cand" >/dev/null && "$cand" -c 'import build, wheel, setuptools, pip' 2>/dev/null; then
    py=$cand; break
  fi
  py=""
done
if [ -z "$py" ]; then
  echo "SKIP: no python3 with build, wheel, setuptools and pip (apt-get install python3-build python3-wheel python3-pip)"
  exit 77
fi

whl=$(PORTATTN_SKIP_DEPS=1 PORTATTN_WHEEL_PYTHON=$py PORTATTN_WHEEL_BUILD_DIR="$work/build" \
      PORTATTN_WHEEL_CMAKE_ARGS="-DPORTATTN_ENABLE_CUDA=OFF -DPORTATTN_ENABLE_HIP=OFF" "$src/scripts/wheel.sh" | tail -1)
case "$whl" in
  */portattn-*-py3-none-manylinux_2_*_"$(uname -m)".whl) echo "built $whl" ;;
  *) echo "FAIL: scripts/wheel.sh made no py3-none-manylinux wheel: '$whl'"; exit 1 ;;
esac
"$py" -m pip install --quiet --no-deps --no-index --target "$work/target" "$whl" || { echo "FAIL: pip install --target"; exit 1; }

cd "$work" || exit 1
run() { env -u PORTATTN_LIBRARY -u PORTATTN_BACKEND PYTHONPATH="$work/target" PYTHONDONTWRITEBYTECODE=1 "$py" "$@"; }
run - "$work/target" <<'PY' || { echo "FAIL: the installed wheel"; exit 1; }
import os, sys
import portattn
target = os.path.realpath(sys.argv[1])
assert os.path.realpath(portattn.__file__).startswith(target + os.sep), portattn.__file__
lib = os.path.realpath(portattn.library_path())
assert lib == os.path.join(target, "portattn", "libportattn.so.0"), lib
assert portattn.version() == portattn.__version__, (portattn.version(), portattn.__version__)
cpu = [b for b in portattn.backends() if b["name"] == "cpu"]
assert cpu and cpu[0]["available"], portattn.backends()
print("installed portattn %s loads %s" % (portattn.__version__, lib))
PY
if run -c 'import pytest' 2>/dev/null; then
  run -m pytest -p no:cacheprovider -q --installed -m "not cuda" "$src/python/tests" || { echo "FAIL: binding tests on the wheel"; exit 1; }
else
  echo "pytest missing: the binding tests were not run on the wheel"
fi
echo "1 passed, 0 failed"
