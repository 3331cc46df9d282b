#!/bin/sh
# The repository stands on its own: no file in it names a file that lives outside it (the early
# design brief and its reference notes) or one that was renamed away, and every "docs/design.md
# section N" it cites exists; source comments do not cite tracker issues; and no test reads a dated
# file under results/.
# Plain grep over the source folders, so it works the same in a git checkout and in a tarball.
# usage: self_contained.sh SOURCE_DIR
set -u
src=${1:?usage: self_contained.sh SOURCE_DIR}
cd "$src" || exit 1
design=docs/design.md
if [ ! -f "$design" ]; then
    echo "FAIL: $design is missing"
    exit 1
fi

paths=""
for p in README.md CHANGELOG.md CMakeLists.txt CMakePresets.json include common backends cmake tests \
         tools scripts python examples docs .ci; do
    [ -e "$p" ] && paths="$paths $p"
done

fail=0
# Names spelled in two pieces so that this script does not match itself.
for name in "DESIGN"".md" "amd-anchors"".md" "cdna_backend"".c" "fwd_args"".c"; do
    hits=$(grep -rnIwF --exclude-dir=__pycache__ -e "$name" $paths)
    if [ -n "$hits" ]; then
        echo "FAIL: '$name' is not in the repository but is named here:"
        echo "$hits"
        fail=1
    fi
done

# Source comments speak about the code: which issue asked for it belongs in the history, not here.
code=""
for p in include common backends cmake tests tools scripts python examples; do [ -e "$p" ] && code="$code $p"; done
hits=$(grep -rnIE --exclude-dir=__pycache__ --exclude-dir=corpus --exclude="*.md" "[Ii]ssue"" [0-9]+" $code)
if [ -n "$hits" ]; then
    echo "FAIL: source comments name tracker issues:"
    echo "$hits"
    fail=1
fi

# Tests read only what the tree keeps for them: a dated measurement under results/ may be moved or
# pruned, so no test names one (fixed copies live in tests/data/); the binding's pytest files too.
hits=$(grep -rnIE --exclude-dir=__pycache__ --exclude-dir=corpus --exclude-dir=data "results/[0-9]{4}-[0-9]{2}-" \
       tests python/tests)
if [ -n "$hits" ]; then
    echo "FAIL: tests read dated files under results/:"
    echo "$hits"
    fail=1
fi

cited=$(grep -rhoIE --exclude-dir=__pycache__ 'design\.md\)? section [0-9]+' $paths | sed 's/.* //' | sort -un)
for n in $cited; do
    if ! grep -qE "^## $n\. " "$design"; then
        echo "FAIL: 'docs/design.md section $n' is cited, but $design has no section $n:"
        grep -rnIE "design\.md\)? section $n([^0-9]|\$)" $paths
        fail=1
    fi
done

[ $fail -eq 0 ] && echo "OK: no outside references; cited design sections: $(echo $cited)"
exit $fail
