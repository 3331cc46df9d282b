# portattn (one build per process, PORTATTN_LIBRARY) beside SDPA FLASH (FlashAttention-2) on a list of
# shapes, by peer_bench's do_bench protocol; the caller interleaves builds and rounds.
# usage: ab_fwd.py TAG OUT.json BACKEND DTYPE SHAPES; SHAPES "d,s,causal;..." (B*S = 16k tokens,
# H = 2048 // D), or "all" for the 13 shapes of the 2026-12-04 A/Bs.
import json, sys
sys.path.insert(0, "tools"); sys.path.insert(0, "python")
import torch
import peer_bench as pb
import portattn
from torch.nn.attention import sdpa_kernel, SDPBackend
ALL = "64,4096,0;64,4096,1;96,1024,0;96,4096,0;96,4096,1;96,16384,0;128,4096,0;128,4096,1;192,4096,0;" \
      "192,4096,1;256,4096,0;32,4096,0;160,4096,0"
tag, path, be, dt = sys.argv[1], sys.argv[2], sys.argv[3], getattr(torch, sys.argv[4])
SH = [tuple(int(x) for x in t.split(",")) for t in (ALL if sys.argv[5] == "all" else sys.argv[5]).split(";")]
bench = pb.make_bench(torch, 25, 100)
out = {}
for d, s, c in SH:
    b, h = max(1, 16384 // s), 2048 // d
    q, k, v = (torch.randn(b, s, h, d, device="cuda", dtype=dt) for _ in range(3))
    fl = 4 * b * h * s * s * d / (2 if c else 1)
    ms = bench(lambda: portattn.flash_attn_func(q, k, v, causal=bool(c), backend=be))[0]
    qt, kt, vt = (x.transpose(1, 2) for x in (q, k, v))
    with sdpa_kernel(SDPBackend.FLASH_ATTENTION):
        fa = bench(lambda: torch.nn.functional.scaled_dot_product_attention(qt, kt, vt, is_causal=bool(c)))[0]
    name = f"d{d}s{s}{'c' if c else ''}"
    out[name] = dict(ms=ms, fa2_ms=fa, tflops=fl / ms / 1e9, x_fa2=fa / ms)
    print(f"{tag} {name:12s} {fl / ms / 1e9:7.1f} TFLOPS  FA2 {fl / fa / 1e9:7.1f}  x{fa / ms:.3f}", flush=True)
    del q, k, v
json.dump(out, open(path, "w"), indent=1)
