#!/usr/bin/env bash
# First run on a machine with an NVIDIA B200 (sm_100) or B300 (sm_103): cuda-sm100 has only run under
# emulation on an H200 (T3), so the selector never picks it. In order, each step logged:
#   1. build with the CUDA backends (default archs include 100a/103a; scripts/deps.sh for the rest);
#   2. the instruction probe (tests/probes/tcgen05_probe.sh): TMEM alloc, tcgen05.st/ld, MMA SS and
#      TS in f16/bf16 (and ld.red max on sm_103) bit for bit against sm100_tc_emu.h, the model behind
#      every cuda-sm100 T3 result;
#   3. the whole CTest suite on the GPU (test_cases/test_numerics/test_concurrency/test_large
#      cuda-sm100 and the ISA gate's SASS half run for real);
#   4. portattn-bench's prefill sweep forced to cuda-sm100 and to the automatic choice, and the peer
#      harness (tools/peer_bench.py) beside PyTorch SDPA's cuDNN and FlashAttention-2 when a CUDA
#      PyTorch is installed (the vendor's attention);
#   5. OUT/summary.md: GPU, driver, commit, probe verdict, suite counts, where the logs and JSON are.
# Exit 77 (nothing built or run) without a B200/B300; else 0 when the probe and the suite pass.
# usage: scripts/first-run-blackwell.sh [OUT_DIR]   (default results/first-run-blackwell-<host>-<date>)
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cap=$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader 2>/dev/null | head -1 | tr -d ' ')
if [ "$cap" != 10.0 ] && [ "$cap" != 10.3 ]; then
  echo "SKIP: no B200/B300 here (nvidia-smi reports compute capability '${cap:-none}', not 10.0 or 10.3)"
  exit 77
fi
gpu=$(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | head -1)
out=${1:-$root/results/first-run-blackwell-$(hostname -s)-$(date -u +%Y-%m-%d)}
build=$root/build-first-run-blackwell
mkdir -p "$out" || exit 1
echo "GPU: $gpu (sm_${cap/./}); results in $out"
step() { echo "== $1"; echo "== $1" >> "$out/steps.log"; }
# the peer harness: tools/peer_bench.py (python/compare_sdpa.py in older trees)
peers=$root/tools/peer_bench.py
[ -f "$peers" ] || peers=$root/python/compare_sdpa.py

step "build"
PORTATTN_SKIP_HIP_DEPS=1 bash "$root/scripts/deps.sh" > "$out/deps.log" 2>&1
cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DPORTATTN_ENABLE_CUDA=ON -DPORTATTN_ENABLE_HIP=OFF \
  > "$out/configure.log" 2>&1 && cmake --build "$build" > "$out/build.log" 2>&1 ||
  { tail -20 "$out/configure.log" "$out/build.log"; echo "build failed (logs in $out)"; exit 1; }
nvcc=$(grep -m1 'CMAKE_CUDA_COMPILER:' "$build/CMakeCache.txt" | cut -d= -f2)

step "instruction probe (tcgen05)"
bash "$root/tests/probes/tcgen05_probe.sh" "$nvcc" "$root" "$build/probes" "$out/probes.txt" | tee "$out/probes.log"
probe_rc=${PIPESTATUS[0]}

step "CTest suite"
ctest --test-dir "$build" --output-on-failure > "$out/ctest.log" 2>&1
suite_rc=$?
tail -3 "$out/ctest.log"

step "benchmark (cuda-sm100 forced, then the automatic choice)"
"$build/tools/portattn-bench" --backend cuda-sm100 --sweep prefill --dtype bf16,f16 --json "$out/bench-sm100.json" \
  > "$out/bench-sm100.log" 2>&1 || echo "portattn-bench cuda-sm100 failed (bench-sm100.log)"
"$build/tools/portattn-bench" --sweep prefill --dtype bf16 --json "$out/bench-auto.json" > "$out/bench-auto.log" 2>&1 ||
  echo "portattn-bench failed (bench-auto.log)"
if python3 -c 'import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)' 2>/dev/null; then
  step "PyTorch SDPA (cuDNN, FlashAttention-2) beside portattn (cuda-sm100 forced)"
  PORTATTN_LIBRARY=$build python3 "$peers" --backend cuda-sm100 --json "$out/peers.json" \
    > "$out/peers.log" 2>&1 || echo "the peer harness reported a failure (peers.log)"
else
  echo "no CUDA PyTorch: the vendor comparison is not run" | tee "$out/peers.log"
fi

{
  echo "# portattn first run on $gpu"
  echo
  echo "date $(date -u +%Y-%m-%dT%H:%MZ), host $(hostname -s), commit $(git -C "$root" rev-parse --short HEAD 2>/dev/null),"
  echo "$("$nvcc" --version | tail -1)"
  echo
  echo "## tcgen05 probe (exit $probe_rc: 0 every result bit-exact with sm100_tc_emu.h)"
  echo; sed 's/^/    /' "$out/probes.log"; echo
  echo "## CTest (exit $suite_rc)"
  echo; tail -3 "$out/ctest.log" | sed 's/^/    /'; echo
  echo "Logs: steps.log, configure.log, build.log, probes.txt, ctest.log, bench-*.log/json, peers.log/json."
  echo "Send this folder back: it is the first T2 evidence for cuda-sm100."
} > "$out/summary.md"
echo "wrote $out/summary.md"
[ "$probe_rc" -eq 0 ] && [ "$suite_rc" -eq 0 ]
