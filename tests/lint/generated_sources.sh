#!/bin/sh
# Committed generated sources are what their generators write today: each generator is run and its
# output compared byte for byte with the file in the tree, so a hand edit of the output or a change
# to the generator without regenerating fails here. Skips (77) only when no python3 exists at all.
# usage: generated_sources.sh SOURCE_DIR [PYTHON]
set -u
src=${1:?usage: generated_sources.sh SOURCE_DIR [PYTHON]}
py=${2:-}
[ -n "$py" ] && [ -x "$py" ] || py=$(command -v python3 || true)
if [ -z "$py" ]; then
    echo "SKIP: no python3 to run the generators"
    exit 77
fi
cd "$src" || exit 1

# generator | output | a line the output must hold (so that an empty generator and an empty file
# cannot agree)
pairs="tools/gen_sm90_wgmma.py|backends/cuda/sm90/sm90_wgmma.cuh|wgmma.mma_async.sync.aligned.m64n"

tmp=$(mktemp) || exit 1
trap 'rm -f "$tmp"' EXIT
fail=0
for pair in $pairs; do
    gen=${pair%%|*}
    rest=${pair#*|}
    out=${rest%%|*}
    must=${rest#*|}
    if ! "$py" "$gen" > "$tmp"; then
        echo "FAIL: $gen exited with an error"
        fail=1
        continue
    fi
    if ! grep -qF "$must" "$tmp"; then
        echo "FAIL: $gen wrote no line with '$must'"
        fail=1
    elif ! diff -u "$out" "$tmp" > /dev/null; then
        echo "FAIL: $out differs from what $gen writes (regenerate: $py $gen > $out):"
        diff -u "$out" "$tmp" | head -40
        fail=1
    else
        echo "OK: $out matches $gen"
    fi
done
exit $fail
