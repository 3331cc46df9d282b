# portattn alone on a list of shapes, do_bench protocol (peer_bench's make_bench): one build per
# process (PORTATTN_LIBRARY), rounds interleaved by the caller. Prints one line per shape, JSON too.
import json, os, sys
sys.path.insert(0, "tools"); sys.path.insert(0, "python")
import torch
import peer_bench as pb
import portattn
SH = [  # name, B, S, H, D, causal
    ("vitb", 256, 197, 12, 64, 0), ("vitl", 128, 257, 16, 64, 0), ("bert", 128, 512, 12, 64, 0),
    ("bert128", 512, 128, 12, 64, 0), ("clip", 512, 77, 8, 64, 0), ("llama512", 16, 512, 32, 128, 0),
    ("s64d64", 512, 64, 32, 64, 0), ("s256d64", 128, 256, 32, 64, 0), ("s384d64", 85, 384, 32, 64, 0),
    ("s128d128", 256, 128, 16, 128, 0), ("s256d128", 128, 256, 16, 128, 0),
    ("s128d64c", 256, 128, 32, 64, 1), ("s256d64c", 128, 256, 32, 64, 1),
    ("d64s512", 32, 512, 32, 64, 0), ("d64s512c", 32, 512, 32, 64, 1), ("d64s1k", 16, 1024, 32, 64, 0),
    ("d64s1kc", 16, 1024, 32, 64, 1), ("d64s2kc", 8, 2048, 32, 64, 1), ("d64s16k", 1, 16384, 32, 64, 0),
    ("d128s512", 32, 512, 16, 128, 0), ("d128s512c", 32, 512, 16, 128, 1), ("d128s1kc", 16, 1024, 16, 128, 1),
    ("d128s2k", 8, 2048, 16, 128, 0), ("d128s4kc", 4, 4096, 16, 128, 1),
]
bench = pb.make_bench(torch, 25, 100)
out, tag = {}, sys.argv[1]
for name, b, s, h, d, c in SH:
    q, k, v = (torch.randn(b, s, h, d, device="cuda", dtype=torch.bfloat16) for _ in range(3))
    ms, p20, p80 = bench(lambda: portattn.flash_attn_func(q, k, v, causal=bool(c)))
    fl = 4 * b * h * s * s * d / (2 if c else 1)
    out[name] = dict(ms=ms, p20=p20, p80=p80, tflops=fl / ms / 1e9)
    print(f"{tag} {name:10s} {ms:8.4f} ms {fl / ms / 1e9:7.1f} TFLOPS", flush=True)
    del q, k, v
json.dump(out, open(sys.argv[2], "w"), indent=1)
