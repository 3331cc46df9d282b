#!/bin/sh
# A product build's library carries no emulation code: no symbol or string of cuda-sm100's emulated
# tcgen05 (sm100/emu/, sm100_tc_emu.h), the emulated AMD wave primitives (hip/emu/) or the emulation
# backends, which only test builds (PORTATTN_SM100_EMULATION, PORTATTN_HIP_EMULATION) compile. The
# pattern is first shown to find such a symbol in a scratch object, so that the check can fail.
# usage: product_symbols.sh LIBRARY [C compiler]; exit 77 without nm/strings.
set -eu
lib=$1
cc=${2:-cc}
command -v nm >/dev/null && command -v strings >/dev/null || { echo "skip: no nm/strings"; exit 77; }
pat='sm100_emu_|hip_wave_emu|hipgen_vocab_emu|cdna_emu|pa_backend_[a-z_0-9]*_emu|PA_SM100_EMULATE'
hits() { { nm -A "$1" 2>/dev/null || true; strings -a "$1"; } | grep -E "$pat" || true; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
printf 'int sm100_emu_probe(int x) { return x + 1; }\n' > "$tmp/probe.c"
"$cc" -c -o "$tmp/probe.o" "$tmp/probe.c"
[ -n "$(hits "$tmp/probe.o")" ] || { echo "FAIL: the pattern misses an emulation symbol in a scratch object"; exit 1; }
found=$(hits "$lib")
[ -z "$found" ] || { echo "FAIL: emulation code in $lib:"; echo "$found" | head -20; exit 1; }
echo "ok: no emulation symbol or string in $lib"
