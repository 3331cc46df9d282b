#!/usr/bin/env bash
# First run on a machine with an AMD GPU (MI250/MI250X gfx90a, MI300X/MI300A/MI325X gfx942, RX 7900
# gfx1100): nothing in portattn's AMD path has run on AMD hardware before. In order, each step logged:
#   1. build with the HIP backends for the GPU found (cmake, ninja; scripts/deps.sh for Debian's tools);
#   2. the instruction probes (tests/probes/amd_probe.sh): every MFMA/WMMA/cross-lane instruction the
#      kernels use, on random operands with subnormals, bit for bit against the emulation (hip_wave.h)
#      that all AMD T3 results rest on;
#   3. the whole CTest suite, here on the GPU (test_cases/test_numerics/test_concurrency hip-cdna or
#      hip-rdna3 run for real instead of skipping);
#   4. portattn-bench's prefill sweep on the AMD backend, and the peer harness (tools/peer_bench.py)
#      beside PyTorch SDPA when a ROCm PyTorch is installed (the vendor's attention: CK flash attention
#      or AOTriton);
#   5. OUT/summary.md: GPU, commit, probe verdicts, suite counts, where the logs and JSON are.
# Exit 77 (nothing built or run) where there is no AMD GPU; else 0 when the probes and the suite pass.
# usage: scripts/first-run-amd.sh [OUT_DIR]   (default results/first-run-amd-<host>-<date>)
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
arch=""
[ -e /dev/kfd ] && arch=$(rocminfo 2>/dev/null | grep -om1 'gfx[0-9a-f]*')
if [ -z "$arch" ]; then
  echo "SKIP: no AMD GPU here (no /dev/kfd, or rocminfo lists no gfx agent)"
  exit 77
fi
out=${1:-$root/results/first-run-amd-$(hostname -s)-$(date -u +%Y-%m-%d)}
build=$root/build-first-run-amd
mkdir -p "$out" || exit 1
gpu=$(rocminfo 2>/dev/null | grep -m1 -A4 "Name:.*$arch" | grep -m1 "Marketing Name" | sed 's/.*Marketing Name:[[:space:]]*//')
echo "AMD GPU: ${gpu:-unknown} ($arch); results in $out"
case $arch in
  gfx9*) family=(-DPORTATTN_HIP_CDNA_ARCHS="$arch" -DPORTATTN_HIP_RDNA3_ARCHS=""); be=hip-cdna ;;
  gfx11*) family=(-DPORTATTN_HIP_CDNA_ARCHS="" -DPORTATTN_HIP_RDNA3_ARCHS="$arch"); be=hip-rdna3 ;;
  *) echo "$arch: portattn has no AMD kernel for it (CDNA gfx9 or RDNA3 gfx11); building the rest"; family=(); be="" ;;
esac
step() { echo "== $1"; echo "== $1" >> "$out/steps.log"; }
# the peer harness: tools/peer_bench.py (python/compare_sdpa.py in older trees)
peers=$root/tools/peer_bench.py
[ -f "$peers" ] || peers=$root/python/compare_sdpa.py

step "build"
bash "$root/scripts/deps.sh" > "$out/deps.log" 2>&1
cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DPORTATTN_ENABLE_HIP=ON "${family[@]}" \
  > "$out/configure.log" 2>&1 && cmake --build "$build" > "$out/build.log" 2>&1 ||
  { tail -20 "$out/configure.log" "$out/build.log"; echo "build failed (logs in $out)"; exit 1; }

step "instruction probes"
bash "$root/tests/probes/amd_probe.sh" "$root" "$build/probes" "$out/probes.txt" | tee "$out/probes.log"
probe_rc=${PIPESTATUS[0]}

step "CTest suite"
ctest --test-dir "$build" --output-on-failure > "$out/ctest.log" 2>&1
suite_rc=$?
tail -3 "$out/ctest.log"

if [ -n "$be" ]; then
  step "benchmark ($be, prefill sweep)"
  "$build/tools/portattn-bench" --backend "$be" --sweep prefill --dtype bf16,f16 --json "$out/portattn-bench.json" \
    > "$out/bench.log" 2>&1 || echo "portattn-bench failed (bench.log)"
  if python3 -c 'import torch, sys; sys.exit(0 if torch.cuda.is_available() and torch.version.hip else 1)' 2>/dev/null; then
    step "PyTorch SDPA on ROCm beside portattn"
    PORTATTN_LIBRARY=$build python3 "$peers" --json "$out/peers.json" \
      > "$out/peers.log" 2>&1 || echo "the peer harness reported a failure (peers.log)"
  else
    echo "no ROCm PyTorch: the vendor comparison is not run" | tee "$out/peers.log"
  fi
fi

{
  echo "# portattn first run on ${gpu:-an AMD GPU} ($arch)"
  echo
  echo "date $(date -u +%Y-%m-%dT%H:%MZ), host $(hostname -s), commit $(git -C "$root" rev-parse --short HEAD 2>/dev/null)"
  echo "ROCm: $(cat /opt/rocm/.info/version 2>/dev/null || echo unknown), compilers: $(grep -m1 'HIP code objects' "$out/configure.log")"
  echo
  echo "## instruction probes (exit $probe_rc: 0 every result bit-exact with the emulation)"
  echo; sed 's/^/    /' "$out/probes.log"; echo
  echo "## CTest (exit $suite_rc)"
  echo; tail -3 "$out/ctest.log" | sed 's/^/    /'; echo
  echo "Logs: steps.log, configure.log, build.log, probes.txt, ctest.log, bench.log, portattn-bench.json,"
  echo "peers.log/json. Send this folder back: it is the first T2 evidence for $be on $arch."
} > "$out/summary.md"
echo "wrote $out/summary.md"
[ "$probe_rc" -eq 0 ] && [ "$suite_rc" -eq 0 ]
