#!/usr/bin/env python3
"""A static performance model of the HIP kernels for porting studies: from the assembly
hipcc or clang writes (--save-temps, -S), per kernel, the body of its key-tile loop (the backward branch whose
region holds the most matrix instructions) is counted: MFMAs (CDNA) or WMMAs (RDNA3), other vector
ALU instructions, LDS bytes. With the per-architecture matrix-instruction cycles and peaks of
docs/design.md section 9 it prints an upper bound in TFLOPS beside
the peak.

It is a MODEL, not a measurement: no memory latency, no instruction-issue limits beyond the counts,
LDS at 128 bytes/clock/CU, a VALU instruction = 4 cycles of its SIMD for wave64 on CDNA and 1 for
wave32 on RDNA3 (no dual issue), matrix and VALU work of different waves fully overlapped when a
SIMD holds two or more waves (occupancy), serialized with one. gfx1100 (RX 7900 XTX): WMMA
16x16x16 at 32 cycles per SIMD, 2 SIMDs per CU, 96 CUs at 2.5 GHz give the 122.9 TFLOPS peak used.

usage: hip_estimate.py [--json DIR] FILE-gfx90a.s [FILE-gfx942.s FILE-gfx1100.s ...]
  --json DIR  also writes DIR/estimate_<target>.json: the prefill sweep's shapes (B*S = 16k tokens,
              H*D = 2048, s 512..16k, causal or not) at the model's bound, as portattn-bench rows
              marked "estimate": true, for tools/report.py (which keeps them apart from measurements)
"""
import json
import os
import re
import sys

# arch -> (GPU, cycles of its 16-bit matrix instruction (MFMA 32x32x8 / WMMA 16x16x16), CUs, clock GHz,
#          peak dense fp16 TFLOPS as AMD counts it, wave size, cycles per VALU instruction)
ARCH = {
    "gfx90a": ("MI250X, one GCD (of 2)", 64, 110, 1.7, 191.5, 64, 4),
    "gfx942": ("MI300X", 32, 304, 2.1, 1307.4, 64, 4),
    "gfx1100": ("RX 7900 XTX", 32, 96, 2.5, 122.9, 32, 1),
}
DEVICE = {"gfx90a": "AMD Instinct MI250X (one GCD)", "gfx942": "AMD Instinct MI300X",
          "gfx1100": "AMD Radeon RX 7900 XTX"}
# the extern "C" entry points of cdna_fwd.hip and rdna3_fwd.hip (CDNA runs d256 as two launches, _lo and
# _hi, of 128 output columns; RDNA3 runs every head dim as one launch)
KERNEL_CDNA = re.compile(r"pa_(cdna)_fwd_(bf16|f16)_d(\d+)(_lo|_hi)?$")
KERNEL_RDNA3 = re.compile(r"pa_(rdna3)_fwd_(bf16|f16)_d(\d+)(_lo|_hi)?$")
MATRIX = re.compile(r"^\s+v_(?:mfma|wmma)")
LDS_BYTES = {"b128": 16, "b96": 12, "b64": 8, "b32": 4, "u16": 2, "b16": 2, "i16": 2, "u8": 1, "b8": 1, "i8": 1}


def kernels(lines):
    """(name, first line, last line) of each kernel in a .s file."""
    out, name, start = [], None, 0
    for i, l in enumerate(lines):
        m = re.match(r"^(pa_\w+|_Z\w+):", l)
        if m:
            name, start = m.group(1), i
        elif name and l.startswith(".Lfunc_end"):
            out.append((name, start, i))
            name = None
    return out


def loop_body(lines, a, b):
    """The region [label, backward branch] inside [a, b) holding the most MFMAs."""
    labels = {}
    best = (0, a, a)
    for i in range(a, b):
        m = re.match(r"^(\.LBB\w+):", lines[i])
        if m:
            labels[m.group(1)] = i
        m = re.match(r"^\s+s_(?:c?branch)\w*\s+(\.LBB\w+)", lines[i])
        if m and m.group(1) in labels:
            lo = labels[m.group(1)]
            n = sum(1 for j in range(lo, i) if MATRIX.match(lines[j]))
            if n > best[0]:
                best = (n, lo, i)
    return best


def lds_bytes(op):
    """Bytes per lane of a ds_read/ds_write (gfx9) or ds_load/ds_store (gfx11) mnemonic."""
    for tok in op.split("_")[2:]:
        tok = tok.replace("2st64", "").replace("2", "") if tok.startswith(("read2", "write2")) else tok
        if tok in LDS_BYTES:
            return LDS_BYTES[tok]
    return 4


def count(lines, lo, hi, wave):
    mfma = valu = lds = 0
    for l in lines[lo:hi]:
        m = re.match(r"^\s+([a-z_0-9]+)", l)
        if not m:
            continue
        op = m.group(1)
        if op.startswith(("v_mfma", "v_wmma")):
            mfma += 1
        elif op.startswith("v_"):
            valu += 1
        elif op.startswith(("ds_read", "ds_write", "ds_load", "ds_store")):
            pair = any(x in op for x in ("read2", "write2", "load_2", "store_2"))
            lds += wave * lds_bytes(op.replace("_2addr", "")) * (2 if pair else 1)
    return mfma, valu, lds


def sweep_rows(name, bound):
    """The prefill sweep's shapes for one kernel instance at the model's bound."""
    m = KERNEL_CDNA.search(name) or KERNEL_RDNA3.search(name)
    if not m:
        return []
    dtype = m.group(2) if m.group(2) in ("f16", "bf16") else ("bf16" if m.group(2) == "1" else "f16")
    backend, d = "hip-" + m.group(1), int(m.group(3))
    half = m.group(4)
    if half == "_hi":
        return []  # the call's row comes from its first launch
    if half == "_lo":
        bound *= 2 / 3  # both launches compute all of Q K^T: 4 S^2 d useful of 2 x (2 S^2 d + 2 S^2 d/2) done
    rows = []
    for s in (512, 1024, 2048, 4096, 8192, 16384):
        for causal in (False, True):
            rows.append({"backend": backend, "kernel": f"{m.group(1)}<{dtype},d{d}> (model)", "dtype": dtype,
                         "batch": 16384 // s, "seqlen_q": s, "seqlen_k": s, "heads_q": 2048 // d,
                         "heads_kv": 2048 // d, "head_dim_qk": d, "head_dim_v": d, "causal": causal,
                         "tflops": round(bound, 1), "estimate": True})
    return rows


def main(args):
    out_dir = None
    if args[:1] == ["--json"]:
        out_dir, args = args[1], args[2:]
    print("static model (not a measurement): key-tile loop body per wave, upper bound per GPU")
    for f in args:
        arch = next((a for a in ARCH if f.endswith(a + ".s")), None)
        if not arch:
            print(f"  {f}: unknown target, skipped")
            continue
        gpu, cyc, cus, ghz, peak, wave, valu_cyc = ARCH[arch]
        unit = "WMMA 16x16x16" if arch.startswith("gfx11") else "MFMA 32x32x8"
        lines = open(f).read().splitlines()
        occ = [int(x) for x in re.findall(r"; Occupancy: (\d+)", "\n".join(lines))]
        print(f"  {arch} = {gpu}: peak {peak:.1f} TFLOPS, {unit} {cyc} cycles")
        rows = []
        for k, (name, a, b) in enumerate(kernels(lines)):
            n, lo, hi = loop_body(lines, a, b)
            if not n:
                print(f"    {name}: no matrix-instruction loop found")
                continue
            mfma, valu, lds = count(lines, lo, hi, wave)
            occ_k = occ[k] if k < len(occ) else 1
            c_mfma, c_valu, c_lds = mfma * cyc, valu * valu_cyc, lds / 32.0  # cycles of one SIMD per wave-tile
            t = max(c_mfma, c_valu, c_lds) if occ_k >= 2 else c_mfma + c_valu + c_lds
            eff = c_mfma / t
            print(f"    {name:44s} loop: {mfma:3d} {unit[:4]} {valu:4d} VALU {lds // 1024:3d} KB LDS, occupancy {occ_k}"
                  f" -> matrix pipe busy {100 * eff:4.1f}%: <= {eff * peak:6.1f} TFLOPS (model)")
            rows += sweep_rows(name, eff * peak)
        if out_dir and rows:
            os.makedirs(out_dir, exist_ok=True)
            path = os.path.join(out_dir, f"estimate_{arch}.json")
            with open(path, "w") as fh:
                json.dump({"tool": "portattn-bench", "device": DEVICE[arch], "estimate": True,
                           "note": "static model of the HIP kernels (tools/hip_estimate.py), not a measurement",
                           "rows": rows}, fh, indent=1)
            print(f"  wrote {path}")


if __name__ == "__main__":
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    main(sys.argv[1:])
