#!/usr/bin/env bash
# One full session on a CUDA machine (the H200 of the device tool): build, the case table on the
# chosen backends, compute-sanitizer on a subset, the ISA gates, then portattn-bench beside the
# PyTorch peers in the same call. The peers are measured by tools/peer_bench.py: portattn (through the
# Python binding, on this build's library) and SDPA's FlashAttention-2 and cuDNN backends in ONE
# process under one protocol (do_bench's: time-based reps, L2 flush, median; torch.randn inputs),
# so its rows compare like with like; portattn-bench's rows sit beside them.
# The device returns at most 8 files from $OUT, so logs are few; the summary goes to stdout.
#
# Environment:
#   BACKENDS  backends to test and bench (default "cuda-generic"), e.g. "cuda-sm80"
#   DTYPES    bench dtypes, portattn names (default bf16), e.g. bf16,f16
#   DIMS      bench head dims (default 64,128)      SEQS  bench seqlens (default 1024,4096,16384)
#   ARCHS     PORTATTN_CUDA_ARCHS for the build (default "80;90")
#   CTEST=all run the whole CTest suite, CTEST=none none of it (default: the cuda-labelled tests only)
#   BENCH_SRC a portattn-bench source folder (or older single file) to build and time with instead of
#             tools/bench/ (pins the bench)
#   SKIP_SANITIZER=1, SKIP_BENCH=1 leave those steps out; the sanitizer runs last (it is the slowest)
#   SANITIZE_CASES  space-separated tool:case entries, e.g. "racecheck:d256_causal memcheck:varlen"
#   DECODE=1  decode sweeps of the first backend (cold = K/V cycled through 256 MiB of copies, warm =
#             one copy as the peers, bhsd = the peers' layout, no-workspace = the library allocating
#             its split scratch per call, paged 16/64/256) beside peer_bench.py --sweep decode and the measured
#             device-to-device copy bandwidth: decode.md (tools/decode_table.py) + decode.tgz
#   REPORT=1  also the decode sweep + peers, tools/report.py over everything, python/peer_bench.py;
#             JSON/CSV/report go into one report.tgz (the device returns at most 8 files)
#   HIP_EMU=1 also build hip-cdna's kernel under the nvcc wave emulation (-DPORTATTN_HIP_EMULATION=ON)
#             and run the case table and test_numerics on it (T3)
#   NCU="args"  profile one forward call with Nsight Compute: stall reasons, shared-memory bank
#             conflicts, tensor pipe use (args: portattn-bench shape flags; the first backend)
set -uo pipefail
OUT=${OUT:-out}
mkdir -p "$OUT"
B=build-dev
BACKENDS=${BACKENDS:-cuda-generic}
DTYPES=${DTYPES:-bf16}
DIMS=${DIMS:-64,128}
SEQS=${SEQS:-1024,4096,16384}
S=$(date +%s)
t() { echo "[$(( $(date +%s) - S ))s]"; }
# peers JSON [peer_bench args]: tools/peer_bench.py on this build's library, its log into bench.log
peers() {
  local json=$1; shift
  PYTHONUNBUFFERED=1 PORTATTN_LIBRARY=$B/libportattn.so python3 tools/peer_bench.py "$@" --json "$json" \
    >> "$OUT/bench.log" 2>&1
  echo "peer_bench $* exit $?"
}

{ nvidia-smi; nvcc --version; git log -1 --format='commit %H %cd' 2>/dev/null; git status --short 2>/dev/null; date -u; } \
  > "$OUT/build.log" 2>&1
echo "== build $(t)"
cmake -S . -B $B -G Ninja -DCMAKE_BUILD_TYPE=Release -DPORTATTN_CUDA_ARCHS="${ARCHS:-80;90}" \
  -DPORTATTN_HIP_EMULATION=$([ -n "${HIP_EMU:-}" ] && echo ON || echo OFF) >> "$OUT/build.log" 2>&1 &&
  cmake --build $B -j 16 --target portattn test_cases test_cuda_select >> "$OUT/build.log" 2>&1 ||
  { tail -40 "$OUT/build.log"; exit 1; }
cmake --build $B -j 16 >> "$OUT/build.log" 2>&1 || echo "full build failed (tail of build.log below); going on with what built" &&
  grep -E "error|FAILED" "$OUT/build.log" | tail -5
BENCH=$B/tools/portattn-bench
if [ -n "${BENCH_SRC:-}" ]; then # a pinned portattn-bench source (e.g. the last commit's), built against this library
  BENCH=$B/portattn-bench-pinned
  bench_srcs=("$BENCH_SRC") # a folder (tools/bench/ of a commit) or one file (older commits' portattn_bench.c)
  [ -d "$BENCH_SRC" ] && bench_srcs=("$BENCH_SRC"/*.c)
  cc -O2 -std=c11 -D_POSIX_C_SOURCE=200809L -DPORTATTN_HAVE_CUDA -Iinclude -Icommon -Itools -Itests/support "${bench_srcs[@]}" -o $BENCH \
    $B/tests/support/libportattn_devmem.a -L$B -lportattn -L"$(dirname "$(command -v nvcc)")/../lib64" -lcudart_static \
    -ldl -lrt -lpthread -lm -Wl,-rpath,"$PWD/$B" >> "$OUT/build.log" 2>&1 || { echo "pinned bench build failed"; exit 1; }
  echo "bench: $BENCH_SRC (pinned)"
fi

echo "== ctest $(t)"
if [ "${CTEST:-cuda}" = none ]; then : > "$OUT/ctest.tmp"
elif [ "${CTEST:-cuda}" = all ]; then ctest --test-dir $B -j 8 --output-on-failure > "$OUT/ctest.tmp" 2>&1
else ctest --test-dir $B -L cuda -E 'test_cases|isa_gate' --output-on-failure > "$OUT/ctest.tmp" 2>&1; fi
grep -E "tests passed|tests failed|Failed|\*\*\*" "$OUT/ctest.tmp" | tail -6; cat "$OUT/ctest.tmp" >> "$OUT/build.log"; rm -f "$OUT/ctest.tmp"

for be in $BACKENDS; do
  echo "== case table on $be $(t)"
  $B/tests/test_cases "$be" > "$OUT/cases_$be.log" 2>&1; echo "exit $?"
  grep -E "^FAIL|cases ran|passed" "$OUT/cases_$be.log" | tail -12
done

if [ -n "${HIP_EMU:-}" ] && [ "${CTEST:-cuda}" != all ]; then # CTEST=all already ran both
  echo "== hip-cdna under the wave emulation (T3) $(t)"
  timeout 600 $B/tests/test_cases hip-cdna > "$OUT/cases_hip-cdna.log" 2>&1; echo "exit $?"
  grep -E "^FAIL|cases ran|passed" "$OUT/cases_hip-cdna.log" | tail -12
  timeout 300 $B/tests/test_numerics hip-cdna 2>&1 | tail -n 3
fi

echo "== ISA gates $(t)"
ctest --test-dir $B -L isa -V > "$OUT/isa.log" 2>&1
grep -E "^[0-9]+: " "$OUT/isa.log" | sed 's/^[0-9]*: //' | grep -v -E "^(Test command|Working Directory|Test timeout)" | tail -40
grep -E "tests passed|tests failed" "$OUT/isa.log"

if [ -z "${SKIP_BENCH:-}" ]; then
echo "== bench $(t)"
: > "$OUT/bench.log"
for be in $BACKENDS; do
  $BENCH --backend "$be" --sweep --sweep-dims "$DIMS" --sweep-seqlens "$SEQS" --dtype "$DTYPES" \
    --no-check --json "$OUT/bench_$be.json" >> "$OUT/bench.log" 2>&1
done
grep -E "^# (host time|one empty-kernel launch)" "$OUT/bench.log" # host cost beside the floor, per backend
echo "== peers (tools/peer_bench.py, in-process) $(t)"
peers "$OUT/peers.json" --d ${DIMS//,/ } --s ${SEQS//,/ } --dtype "$(echo "$DTYPES" | sed 's/\bf16\b/fp16/g')"
: > "$OUT/summary.md"
for be in $BACKENDS; do # report.py maps the dtype names (peer_bench says fp16, portattn-bench f16)
  python3 tools/compare_peers.py "$OUT/bench_$be.json" "$OUT/peers.json" --title "$be" >> "$OUT/summary.md"
  echo >> "$OUT/summary.md"
done
cat "$OUT/summary.md"
fi

if [ -n "${DECODE:-}" ]; then # decode latency beside peer_bench.py --sweep decode, cold and warm, contiguous and paged
  echo "== decode sweeps and peers $(t)"
  be=${BACKENDS%% *}
  for v in "cold:" "warm:--kv-copies 1" "bhsd:--layout bhsd" "nows:--no-workspace" "paged64:--page-size 64" \
           "paged16:--page-size 16" "paged256:--page-size 256"; do
    $BENCH --backend "$be" --sweep decode --no-check ${v#*:} --json "$OUT/dec_${v%%:*}.json" > "$OUT/dec.tmp" 2>&1
    echo "${v%%:*}: $(grep -E "^# (host time|one empty-kernel launch)" "$OUT/dec.tmp" | tr '\n' ' ')"
    cat "$OUT/dec.tmp" >> "$OUT/bench.log"
  done
  rm -f "$OUT/dec.tmp"
  peers "$OUT/peers_decode.json" --sweep decode
  copy=$(python3 -c '
import torch
from triton.testing import do_bench
x = torch.empty(1 << 30, dtype=torch.uint8, device="cuda"); y = torch.empty_like(x)
ms = do_bench(lambda: y.copy_(x), warmup=25, rep=100, return_mode="median")
print(round(2 * x.numel() / ms / 1e9, 3))' 2>> "$OUT/bench.log")
  echo "device-to-device copy (read + write): ${copy:-?} TB/s" | tee "$OUT/decode.md"
  python3 tools/decode_table.py cold="$OUT/dec_cold.json" warm="$OUT/dec_warm.json" bhsd="$OUT/dec_bhsd.json" \
    no-workspace="$OUT/dec_nows.json" paged64="$OUT/dec_paged64.json" paged16="$OUT/dec_paged16.json" \
    paged256="$OUT/dec_paged256.json" --peers "$OUT/peers_decode.json" --copy-tbps "${copy:-0}" >> "$OUT/decode.md" 2>&1
  cat "$OUT/decode.md"
  tar czf "$OUT/decode.tgz" -C "$OUT" $(cd "$OUT" && ls dec_*.json peers_decode.json) && rm -f "$OUT"/dec_*.json "$OUT/peers_decode.json"
fi

if [ -n "${REPORT:-}" ]; then # the porting-study flow of docs/porting-study.md, plus the Python comparison
  echo "== decode sweep and peers $(t)"
  $BENCH --sweep decode --no-check --json "$OUT/bench_decode.json" --csv "$OUT/bench_decode.csv" >> "$OUT/bench.log" 2>&1
  peers "$OUT/peers_decode.json" --sweep decode
  for be in $BACKENDS; do $BENCH --backend "$be" --sweep --sweep-dims "$DIMS" --sweep-seqlens "$SEQS" --dtype "$DTYPES" \
    --rep-ms 20 --no-check --csv "$OUT/bench_$be.csv" > /dev/null 2>&1; done # the CSV form of the same sweep
  python3 tools/report.py $OUT/bench_*.json "$OUT/peers.json" "$OUT/peers_decode.json" --out "$OUT/report" \
    >> "$OUT/bench.log" 2>&1; echo "report.py exit $?"
  echo "== python peer_bench $(t)"
  PYTHONUNBUFFERED=1 PORTATTN_LIBRARY=$B/libportattn.so python3 tools/peer_bench.py --json "$OUT/peer_bench.json" \
    > "$OUT/peer_bench.log" 2>&1; echo "peer_bench exit $?"
  tail -25 "$OUT/peer_bench.log"; cat "$OUT/peer_bench.log" >> "$OUT/bench.log"; rm -f "$OUT/peer_bench.log"
  tar czf "$OUT/report.tgz" -C "$OUT" report $(cd "$OUT" && ls *.json *.csv 2>/dev/null) && rm -rf "$OUT/report" "$OUT"/*.json "$OUT"/*.csv
fi

if [ -z "${SKIP_SANITIZER:-}" ]; then
  echo "== compute-sanitizer $(t)"
  : > "$OUT/sanitizer.log"
  for be in $BACKENDS; do
    for tc in ${SANITIZE_CASES:-memcheck:varlen_causal memcheck:window_all racecheck:sq7_sk17 \
              racecheck:s127_d128_causal racecheck:d256_causal synccheck:sk1}; do
      set -- "${tc%%:*}" "${tc#*:}" # entries are tool:case
      echo "### $be $1 $2" >> "$OUT/sanitizer.log"
      timeout ${SANITIZE_TIMEOUT:-60} compute-sanitizer --tool $1 --error-exitcode 9 $B/tests/test_cases "$be" $2 > "$OUT/san.tmp" 2>&1
      rc=$?; cat "$OUT/san.tmp" >> "$OUT/sanitizer.log"
      echo "$be $1 on '$2': rc=$rc $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' "$OUT/san.tmp" | tail -1) $(grep -E '^[0-9]+ passed' "$OUT/san.tmp")"
    done
  done
  rm -f "$OUT/san.tmp"
fi

if [ -n "${NCU:-}" ]; then
  be=${BACKENDS%% *}
  echo "== ncu on $be: $NCU $(t)"
  echo "### ncu $be $NCU" >> "$OUT/sanitizer.log"
  timeout ${NCU_TIMEOUT:-60} ncu --clock-control none -k regex:"${NCU_KERNEL:-fwd}" --launch-skip 2 --launch-count 1 \
    --section SpeedOfLight \
    --metrics 'regex:^smsp__average_warps_issue_stalled_.*_per_issue_active\.ratio$,regex:^l1tex__data_bank_conflicts_pipe_lsu_mem_shared.*\.sum$,regex:^l1tex__data_pipe_lsu_wavefronts_mem_shared.*\.sum$,regex:^sm__pipe_tensor_op_hmma_cycles_active\.avg\.pct_of_peak_sustained_active$' \
    $BENCH --backend "$be" $NCU --no-check --burst --warmup 1 --reps 3 > "$OUT/ncu.tmp" 2>&1
  echo "rc=$?"; cat "$OUT/ncu.tmp" >> "$OUT/sanitizer.log"
  grep -E "sm80|Throughput|Duration|bank_conflicts|wavefronts|hmma|stalled" "$OUT/ncu.tmp" | grep -v -E " 0$| 0\.0*$" | head -50
  rm -f "$OUT/ncu.tmp"
fi

echo "== done $(t)"
