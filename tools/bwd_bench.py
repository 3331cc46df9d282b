#!/usr/bin/env python3
"""portattn's backward beside PyTorch SDPA FLASH_ATTENTION's (FlashAttention-2) on the same GPU, in one
process, with peer_bench.py's timing protocol (do_bench: warm-up and repetitions by time, an
L2-flushing write before each timed call, the median and the 20th/80th percentiles).

Timed: the backward alone. portattn: portattn_backward on O and the LSE of its own forward, params
and workspace made once. SDPA: torch.autograd.grad of the FLASH_ATTENTION output (graph kept).
TFLOPS by FlashAttention's convention: backward FLOPs = 2.5 x the forward's 4*B*H*S*S*D, halved when
causal. Also prints the max-abs difference of portattn's dq, dk, dv from SDPA's, and which backend and
kernel portattn ran (portattn_backward_query).

  PORTATTN_LIBRARY=build/libportattn.so python3 tools/bwd_bench.py --d 64 128 --s 2048 4096 8192
  python3 tools/bwd_bench.py --backend cuda-sm80 --deterministic --causal yes

Exit status: 0 ran, 2 cannot run (no PyTorch, no CUDA device, no library)."""
import argparse
import ctypes
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import peer_bench  # noqa: E402  (its import also puts the repository's binding on the path)


def parse_args(argv):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--d", type=int, nargs="+", default=[64, 128], help="head dims (default 64 128)")
    p.add_argument("--s", type=int, nargs="+", default=[2048, 4096, 8192], help="seqlens (default 2048 4096 8192)")
    p.add_argument("--dtype", default="bf16", choices=["bf16", "fp16"])
    p.add_argument("--causal", default="both", choices=["no", "yes", "both"])
    p.add_argument("--tokens", type=int, default=16384, help="batch * seqlen (default 16384)")
    p.add_argument("--hidden", type=int, default=2048, help="heads * head_dim (default 2048)")
    p.add_argument("--backend", default=None, help="force a portattn backend (default: auto)")
    p.add_argument("--deterministic", action="store_true", help="portattn's deterministic mode")
    p.add_argument("--warmup", type=int, default=25)
    p.add_argument("--rep", type=int, default=100)
    return p.parse_args(argv)


def point(torch, portattn, bench, ctx, args, d, s, causal):
    from portattn import _autograd, _core, _lib
    dtype = torch.bfloat16 if args.dtype == "bf16" else torch.float16
    b, h = max(1, args.tokens // s), max(1, args.hidden // d)
    q, k, v, dout = (torch.randn(b, s, h, d, dtype=dtype, device="cuda") for _ in range(4))
    o, lse = portattn.flash_attn_func(q, k, v, causal=causal, return_lse=True, backend=args.backend)
    dq, dk, dv = torch.empty_like(q), torch.empty_like(k), torch.empty_like(v)
    spec = {"softmax_scale": None, "causal": causal, "window_size": (-1, -1), "softcap": 0.0,
            "deterministic": args.deterministic, "backend": args.backend, "cu_seqlens": None, "max_seqlen": None}
    prm = _autograd._backward_params(spec, q, k, v, o, lse, dout, dq, dk, dv)
    lib = _lib.load()
    size = ctypes.c_size_t(0)
    _core._check(lib.portattn_backward_workspace_size(ctypes.byref(prm), ctypes.byref(size)))
    ws = torch.empty(size.value, dtype=torch.uint8, device="cuda") if size.value else None
    if ws is not None:
        prm.workspace, prm.workspace_size = ws.data_ptr(), size.value
    sel = _lib.Selection()
    _core._check(lib.portattn_backward_query(ctypes.byref(prm), ctypes.byref(sel)))
    stream = ctypes.c_void_p(torch.cuda.current_stream().cuda_stream or None)

    def pa_bwd():
        _core._check(lib.portattn_backward(ctypes.byref(prm), stream))

    # SDPA on (B, H, S, D) views of the same inputs
    qt, kt, vt = (x.transpose(1, 2).detach().requires_grad_(True) for x in (q, k, v))
    with ctx("FLASH_ATTENTION"):
        ot = torch.nn.functional.scaled_dot_product_attention(qt, kt, vt, is_causal=causal)
    dot = dout.transpose(1, 2)

    def sdpa_bwd():
        return torch.autograd.grad(ot, (qt, kt, vt), dot, retain_graph=True)

    pa_bwd()
    ref = sdpa_bwd()
    diff = max(float((x - r.transpose(1, 2)).abs().max()) for x, r in zip((dq, dk, dv), ref))
    flops = 2.5 * 4.0 * b * h * s * s * d * (0.5 if causal else 1.0)
    t_pa, t_fa = bench(pa_bwd)[0], bench(sdpa_bwd)[0]
    print("d%-4d s%-6d b%-3d h%-3d %-6s portattn %7.3f ms %6.1f TFLOPS | FA2 %7.3f ms %6.1f TFLOPS | %.2fx | "
          "max|diff| %.2e | %s %s" % (d, s, b, h, "causal" if causal else "full", t_pa, flops / t_pa / 1e9, t_fa,
                                      flops / t_fa / 1e9, t_fa / t_pa, diff, sel.backend_name.decode(),
                                      sel.kernel.decode()))
    sys.stdout.flush()


def main(argv=None):
    args = parse_args(sys.argv[1:] if argv is None else argv)
    try:
        import torch
        import portattn
    except ImportError as e:
        print("cannot run: %s" % e)
        return 2
    if not torch.cuda.is_available():
        print("cannot run: no CUDA device")
        return 2
    bench, ctx = peer_bench.make_bench(torch, args.warmup, args.rep), peer_bench.sdpa_context(torch)
    print("%s, %s, %s, timing: %s" % (torch.cuda.get_device_name(), args.dtype,
                                       "deterministic" if args.deterministic else "default mode", bench.name))
    for d in args.d:
        for s in args.s:
            for causal in {"no": [False], "yes": [True], "both": [False, True]}[args.causal]:
                point(torch, portattn, bench, ctx, args, d, s, causal)
    return 0


if __name__ == "__main__":
    sys.exit(main())
