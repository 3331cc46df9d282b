# Shared by the CUDA ISA gates (isa_gate_sm80/sm90/sm100.sh, build_sm100_emu.sh); sourced, not run.
#   isa_setup WHAT NVCC SRC WORK     finds ptxas beside nvcc (exit 77 without nvcc), makes WORK,
#                                    sets NVCC SRC WORK BIN PTXAS fail, defines bad()
#   isa_compile CU GENCODE ARCH      nvcc --ptx then ptxas -v, appended to WORK/all.ptx, ptxas.txt
#   isa_count FILE WIDTH PATTERN...  prints each fixed-string pattern's count, bad() when 0
#   isa_expect FILE WIDTH OP N LABEL REGEX
#                                    prints LABEL and the count of lines matching REGEX (grep -E),
#                                    bad() unless the count OP N holds (OP: -eq, -gt, -ge, ...)
#   isa_ptxas_table MIN WHAT [ALLOW BYTES]...
#                                    per-kernel registers/stack/spills; bad when a kernel spills or
#                                    fewer than MIN kernels were compiled (WHAT names them); kernels
#                                    whose "name [arch]" matches a regex ALLOW may spill up to its BYTES
#   isa_sass WIDTH CUBIN...          with cuobjdump: the cubins' SASS into WORK/all.sass, checked for
#                                    local memory outside the functions matching $SASS_LOCAL_OK (the
#                                    ptxas allowances), return 0; without: says the SASS check did not run,
#                                    return 1
isa_setup() {
  local what=$1
  NVCC=${2:-}; SRC=${3:?source dir}; WORK=${4:?work dir}
  if [ -z "$NVCC" ] || ! [ -x "$(command -v "$NVCC")" ]; then
    echo "SKIP: no CUDA compiler (nvcc) to build the $what kernels"
    exit 77
  fi
  BIN=$(dirname "$(command -v "$NVCC")")
  PTXAS=$BIN/ptxas; [ -x "$PTXAS" ] || PTXAS=$(command -v ptxas || true)
  [ -x "$PTXAS" ] || { echo "FAIL: ptxas not found beside $NVCC"; exit 1; }
  mkdir -p "$WORK"
  fail=0
  : > "$WORK/all.ptx"; : > "$WORK/ptxas.txt"
}

bad() { echo "FAIL: $*"; fail=1; }

isa_compile() {
  local cu=$1 gencode=$2 arch=$3 n
  n=$(basename "$cu" .cu)
  "$NVCC" -std=c++17 -O3 $INC "$gencode" --ptx -o "$WORK/$n.ptx" "$cu" > "$WORK/$n.nvcc.log" 2>&1 ||
    { cat "$WORK/$n.nvcc.log"; bad "$n: nvcc --ptx"; return 1; }
  "$PTXAS" -arch="$arch" -O3 -v -o "$WORK/$n.cubin" "$WORK/$n.ptx" > "$WORK/$n.ptxas.log" 2>&1 ||
    { cat "$WORK/$n.ptxas.log"; bad "$n: ptxas"; return 1; }
  cat "$WORK/$n.ptx" >> "$WORK/all.ptx"; cat "$WORK/$n.ptxas.log" >> "$WORK/ptxas.txt"
}

isa_count() {
  local file=$1 width=$2 pat c; shift 2
  for pat in "$@"; do
    c=$(grep -c -F "$pat" "$file")
    printf "  %-${width}s %6d\n" "$pat" "$c"
    [ "$c" -gt 0 ] || bad "$(basename "$file") lacks $pat"
  done
}

isa_expect() {
  local file=$1 width=$2 op=$3 n=$4 label=$5 re=$6 c
  c=$(grep -c -E -- "$re" "$file")
  printf "  %-${width}s %6d\n" "$label" "$c"
  [ "$c" "$op" "$n" ] || bad "$(basename "$file"): $label: $c, expected $op $n"
}

isa_ptxas_table() {
  local min=$1 what=$2 allow="" ; shift 2
  while [ $# -ge 2 ]; do allow="$allow$1"$'\t'"$2"$'\n'; shift 2; done
  awk -v min="$min" -v what="$what" -v allow="$allow" '
    BEGIN { na = split(allow, al, "\n"); for (i = 1; i <= na; i++) if (al[i] != "") { split(al[i], f, "\t"); re[i] = f[1]; by[i] = f[2] } }
    /Compiling entry function/ { match($0, /'"'"'[^'"'"']*'"'"'/); k = substr($0, RSTART + 1, RLENGTH - 2)
      if (match($0, /for '"'"'sm_[0-9a-z]+'"'"'/)) k = k " [" substr($0, RSTART + 5, RLENGTH - 6) "]" }
    /bytes stack frame/ { st = $1; ss = $5; sl = $9 }
    /Used [0-9]+ registers/ { match($0, /Used [0-9]+ registers/); r = substr($0, RSTART + 5, RLENGTH - 15);
      n++; ok = 0
      for (i in re) if (k ~ re[i] && st <= by[i] && ss <= by[i] && sl <= by[i]) ok = 1
      printf "  %-80s regs %3d  stack %s  spill st %s ld %s%s\n", k, r, st, ss, sl,
             (st != 0 || ss != 0 || sl != 0) && ok ? "  (allowed)" : "";
      if ((st != 0 || ss != 0 || sl != 0) && !ok) bad++ }
    END { print "  kernels: " n; if (n < min) { print "FAIL: expected " min " kernels (" what ")"; exit 1 }
          if (bad) { print "FAIL: " bad " kernel(s) with stack frame or spills"; exit 1 } }' "$WORK/ptxas.txt" || fail=1
}

isa_sass() {
  local width=$1 c cub; shift
  c=$(command -v cuobjdump || true)
  [ -n "$c" ] || { [ -x "$BIN/cuobjdump" ] && c=$BIN/cuobjdump; }
  if [ -z "$c" ]; then
    echo "  SASS check NOT RUN: cuobjdump not found (PTX and ptxas checks above only)"
    return 1
  fi
  : > "$WORK/all.sass"
  for cub in "$@"; do "$c" --dump-sass "$cub" >> "$WORK/all.sass" 2>&1; done
  # Local memory only in the functions ptxas was allowed to spill in (SASS_LOCAL_OK, a regex over the
  # mangled names cuobjdump prints after "Function : "; empty: none).
  awk -v ok="${SASS_LOCAL_OK:-}" '/Function : / { f = $NF; skip = ok != "" && f ~ ok }
    /(^|[^A-Za-z0-9_])(LDL|STL)([. ;]|$)/ && !skip' "$WORK/all.sass" > "$WORK/local.sass"
  isa_expect "$WORK/local.sass" "$width" -eq 0 "LDL/STL (local memory) outside the allowed spills" '\b(LDL|STL)(\.|\b)'
}
