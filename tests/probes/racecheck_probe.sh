#!/usr/bin/env bash
# Builds racecheck_probe.cu for sm_90 and runs each of its handoffs under compute-sanitizer's
# racecheck: "none" must be flagged (else the probe has no teeth and fails); the lines for the others
# ("mbarrier", "named", "warp", "threads") say whether the tool sees that ordering. On other machines
# the build is the check and the run skips.
# usage: racecheck_probe.sh NVCC SOURCE_DIR WORK_DIR
# exit: 0 (the report printed), 1 a build failure, a wrong result or an unflagged "none", 77 no nvcc,
#       no compute-sanitizer or no GPU of compute capability 9.0+
set -uo pipefail
NVCC=${1:-}
SRC=${2:?source dir}
WORK=${3:?work dir}
[ -n "$NVCC" ] && command -v "$NVCC" >/dev/null || { echo "SKIP: no nvcc"; exit 77; }
mkdir -p "$WORK" && cd "$WORK" || exit 1
"$NVCC" -std=c++17 -O2 -gencode=arch=compute_90,code=sm_90 "$SRC/tests/probes/racecheck_probe.cu" \
  -o racecheck_probe > build.log 2>&1 || { tail -20 build.log; echo "FAIL: building racecheck_probe"; exit 1; }
echo "racecheck_probe built for sm_90"
./racecheck_probe; rc=$?
[ $rc -eq 0 ] || exit $rc
CS=$(command -v compute-sanitizer || echo "$(dirname "$(command -v "$NVCC")")/compute-sanitizer")
[ -x "$CS" ] || { echo "SKIP: no compute-sanitizer"; exit 77; }
for m in none mbarrier named warp threads; do
  "$CS" --tool racecheck --racecheck-report hazard ./racecheck_probe $m > rc_$m.log 2>&1
  n=$(grep -oE "RACECHECK SUMMARY: [0-9]+ hazard" rc_$m.log | grep -oE "[0-9]+" || echo "?")
  echo "racecheck, $m handoff: $n hazards"
  if [ $m = none ] && [ "$n" = 0 ]; then echo "FAIL: the unsynchronized handoff was not flagged"; exit 1; fi
done
exit 0
