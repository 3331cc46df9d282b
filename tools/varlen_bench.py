#!/usr/bin/env python3
"""A packed batch of sequences of random lengths (BERT-style varlen), portattn beside FlashAttention-2's
varlen kernel and the padded dense peers, in one process with peer_bench.py's protocol (do_bench:
>= 100 ms of timed calls, an L2-flushing write before each, the median and the 20th/80th
percentiles; torch.randn inputs).

Implementations, all on the same packed tokens:
  portattn       portattn.flash_attn_varlen_func (cu_seqlens)
  FA2-varlen     torch.ops.aten._flash_attention_forward with cu_seqlens: the FlashAttention-2
                 varlen kernel PyTorch ships (SDPA's nested-jagged path calls it)
  FA2-padded, cuDNN-padded
                 SDPA FLASH / CUDNN_ATTENTION on (B, H, max_len, D), every sequence padded to the
                 longest: what a caller without a varlen kernel runs (more work than the others)
TFLOPS count the real tokens only, by FlashAttention's convention: sum over sequences of
4 * H * len^2 * D, halved when causal; the padded peers' figures are therefore the useful rate.
portattn's output is checked against an fp32 reference computed once per point, sequence by sequence
(rel-L2 within --tol-factor x FA2-varlen's, or --tol-floor); exit 1 on a failure, 2 when it cannot run.

  PORTATTN_LIBRARY=build/libportattn.so python3 tools/varlen_bench.py --json varlen.json
"""
import argparse
import json
import math
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
try:
    import portattn  # noqa: F401
except ImportError:
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "python"))


def parse(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--batch", type=int, default=256)
    p.add_argument("--min-len", type=int, default=16)
    p.add_argument("--max-len", type=int, default=512)
    p.add_argument("--heads", type=int, default=16)
    p.add_argument("--d", type=int, nargs="+", default=[64, 128])
    p.add_argument("--dtype", nargs="+", default=["bf16"], choices=["bf16", "fp16"])
    p.add_argument("--causal", default="both", choices=["no", "yes", "both"])
    p.add_argument("--seed", type=int, default=0, help="lengths and inputs")
    p.add_argument("--warmup", type=float, default=25.0)
    p.add_argument("--rep", type=float, default=100.0)
    p.add_argument("--tol-factor", type=float, default=3.0)
    p.add_argument("--tol-floor", type=float, default=1e-2)
    p.add_argument("--json")
    return p.parse_args(argv)


def lengths(torch, args):
    g = torch.Generator().manual_seed(args.seed)
    return torch.randint(args.min_len, args.max_len + 1, (args.batch,), generator=g).tolist()


def reference(torch, pb_ref, q, k, v, lens, causal):
    """fp32 attention of the packed batch (total, H, D), sequence by sequence (peer_bench.reference on
    each sequence's (1, H, len, D) view), packed the same way."""
    out, off = [], 0
    for n in lens:
        qs, ks, vs = (t[off:off + n].transpose(0, 1).unsqueeze(0) for t in (q, k, v))
        out.append(pb_ref(torch, qs, ks, vs, causal)[0].transpose(0, 1))
        off += n
    return torch.cat(out)


def run_point(torch, F, pb, peer, bench, ctx, args, dtype, d, causal, lens):
    dev, h, b = "cuda", args.heads, len(lens)
    total, smax = sum(lens), max(lens)
    dt = torch.bfloat16 if dtype == "bf16" else torch.float16
    q, k, v = (torch.randn(total, h, d, device=dev, dtype=dt) for _ in range(3))
    cu = torch.zeros(b + 1, dtype=torch.int32)
    cu[1:] = torch.tensor(lens).cumsum(0)
    cu = cu.to(dev)
    flops = sum(4.0 * h * n * n * d for n in lens) / (2 if causal else 1)
    row = dict(dtype=dtype, d=d, causal=causal, batch=b, heads=h, tokens=total, max_len=smax,
               min_len=min(lens), flops=flops, impls={})

    def timed(name, fn):
        row["impls"][name] = {}
        try:
            peer.timed(row["impls"][name], bench, fn, flops=flops)
        except Exception as e:  # a peer that cannot run this point says why
            row["impls"][name] = dict(error=str(e).splitlines()[0][:200] if str(e) else type(e).__name__)

    out = torch.full_like(q, float("nan"))
    ours = lambda: pb.flash_attn_varlen_func(q, k, v, cu, cu, smax, smax, causal=causal, out=out)  # noqa: E731
    timed("portattn", ours)
    sel = pb.which(q, k, v, cu, cu, smax, smax, causal=causal)
    row["impls"]["portattn"].update(backend=sel["backend"], kernel=sel["kernel"])
    fa2 = lambda: torch.ops.aten._flash_attention_forward(q, k, v, cu, cu, smax, smax, 0.0, causal, False)  # noqa: E731
    timed("FA2-varlen", fa2)
    # padded peers: (B, H, S, D) views of padded storage, as SDPA takes them
    qp, kp, vp = (torch.randn(b, smax, h, d, device=dev, dtype=dt).transpose(1, 2) for _ in range(3))
    for name, be in (("FA2-padded", "FLASH_ATTENTION"), ("cuDNN-padded", "CUDNN_ATTENTION")):
        def padded(be=be):
            with ctx(be):
                return F.scaled_dot_product_attention(qp, kp, vp, is_causal=causal)
        timed(name, padded)

    ours()
    torch.cuda.synchronize()
    ref = reference(torch, peer.reference, q, k, v, lens, causal)
    row["impls"]["portattn"].update(peer.errors(torch, out, ref))
    err = row["impls"]["portattn"]["rel_l2"]
    bound = args.tol_floor
    if "ms" in row["impls"].get("FA2-varlen", {}):
        row["impls"]["FA2-varlen"].update(peer.errors(torch, fa2()[0], ref))
        bound = max(bound, args.tol_factor * row["impls"]["FA2-varlen"]["rel_l2"])
    row["bound"] = bound
    row["check"] = "PASS" if math.isfinite(err) and err <= bound else "FAIL"
    return row


def fmt(row, name):
    r = row["impls"].get(name, {})
    return "%.1f" % r["tflops"] if "tflops" in r else "n/a"


def main(argv=None):
    args = parse(argv)
    try:
        import torch
        import torch.nn.functional as F
        import portattn as pb
        import peer_bench as peer
    except Exception as e:
        print("varlen_bench: cannot run: %s" % e)
        return 2
    if not torch.cuda.is_available():
        print("varlen_bench: cannot run: no CUDA device")
        return 2
    torch.manual_seed(args.seed)
    bench, ctx = peer.make_bench(torch, args.warmup, args.rep), peer.sdpa_context(torch)
    lens = lengths(torch, args)
    causals = {"no": [False], "yes": [True], "both": [False, True]}[args.causal]
    rows = [run_point(torch, F, pb, peer, bench, ctx, args, dt, d, c, lens)
            for dt in args.dtype for d in args.d for c in causals]
    names = ("portattn", "FA2-varlen", "FA2-padded", "cuDNN-padded")
    print("%d sequences of U[%d, %d] tokens (%d in all, longest %d), %d heads; TFLOPS on the real tokens"
          % (len(lens), args.min_len, args.max_len, sum(lens), max(lens), args.heads))
    print("| dtype | d | causal | " + " | ".join(names) + " | / FA2-varlen | / cuDNN-padded | spread p20-p80 | rel-L2 | check |")
    print("|---|---|---|" + "---|" * (len(names) + 5))
    for r in rows:
        o = r["impls"]["portattn"]
        rat = lambda n: ("%.2fx" % (o["tflops"] / r["impls"][n]["tflops"])  # noqa: E731
                         if "tflops" in o and "tflops" in r["impls"].get(n, {}) else "n/a")
        sp = "%.1f%%" % (100 * (o["ms_p80"] - o["ms_p20"]) / o["ms"]) if "ms" in o else "n/a"
        print("| %s | %d | %s | %s | %s | %s | %s | %.2e | %s |" % (
            r["dtype"], r["d"], "yes" if r["causal"] else "no", " | ".join(fmt(r, n) for n in names),
            rat("FA2-varlen"), rat("cuDNN-padded"), sp, o.get("rel_l2", float("nan")), r["check"]))
    for r in rows:
        for n in names:
            if "error" in r["impls"].get(n, {}):
                print("note: %s d%d %s: %s did not run: %s" % (r["dtype"], r["d"], "causal" if r["causal"] else "",
                                                              n, r["impls"][n]["error"]))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(dict(tool="varlen_bench.py", protocol=bench.name, torch=torch.__version__,
                           device=torch.cuda.get_device_name(), lengths=lens, rows=rows), f, indent=1)
    return 1 if any(r["check"] != "PASS" for r in rows) else 0


if __name__ == "__main__":
    sys.exit(main())
