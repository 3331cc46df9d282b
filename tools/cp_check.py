#!/usr/bin/env python3
"""PyTorch context parallelism (ring attention over NCCL, torch.distributed.tensor.experimental's
context_parallel) with portattn as PyTorch's flash attention, beside PyTorch's own flash kernel.

  torchrun --nproc-per-node 2 tools/cp_check.py --json cp.json          # 32k and 128k, causal and not
  torchrun --nproc-per-node 2 tools/cp_check.py --seqlen 32768 --backward

For each implementation (portattn active through portattn.torch, then PyTorch's default FLASH kernel),
each sequence length and each mask (causal with the load balancer on; non-causal with it off, as
PyTorch's ring needs): B1, --heads, --dim, bf16, SDPA under the FLASH backend,
  - one GPU: the whole sequence on this rank's GPU (every rank runs it on its own GPU, same inputs);
  - ring: context_parallel over all ranks, the output gathered back with context_parallel_unshard;
  - errors on --rows random query rows (all heads) against an fp32 reference over all keys:
    max |ring - ref|, max |one GPU - ref|, and the same-precision (bf16) math attention's error; the
    ring passes when its error is at most 3x the bf16 math attention's (FlashAttention's rule);
    max |ring - one GPU| is printed beside it;
  - time: median of --iters calls, events around each, the slowest rank's; TFLOPS in total for the
    ring (FLOPs 4*B*H*S*S*D, halved when causal; x3.5 with --backward) and for one GPU, their ratio.
With --backward the timed step is forward+backward and the gradients' max |ring - one GPU| goes into
the rows beside PyTorch's own kernel's. Calls portattn declines run on PyTorch's kernel: each row
counts them and keeps the reason. NVLink multicast (NCCL_NVLS_ENABLE) is left as the environment sets it.
Exit status: 0 every ring output passes, 1 one fails, 2 cannot run (no CUDA, no process group,
PyTorch without context_parallel or the flash registry).
"""
import argparse
import importlib.util
import json
import os
import statistics
import sys

if importlib.util.find_spec("portattn") is None:  # an installed portattn (a wheel) first, else the repository's
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "python"))


def parse_args(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__)
    ap.add_argument("--seqlen", type=int, nargs="+", default=[32768, 131072], help="total tokens (default 32k 128k)")
    ap.add_argument("--heads", type=int, default=16)
    ap.add_argument("--dim", type=int, default=128)
    ap.add_argument("--mask", choices=["causal", "full", "both"], default="both")
    ap.add_argument("--impl", choices=["portattn", "pytorch", "both"], default="both")
    ap.add_argument("--backward", action="store_true", help="time and check forward+backward")
    ap.add_argument("--iters", type=int, default=10)
    ap.add_argument("--rows", type=int, default=256, help="query rows checked against the fp32 reference")
    ap.add_argument("--json", help="write the rows here (rank 0)")
    return ap.parse_args(argv)


def flops(S, H, D, causal, backward):
    f = 4.0 * H * S * S * D * (0.5 if causal else 1.0)
    return f * (3.5 if backward else 1.0)


def cp_modules():
    """context_parallel, context_parallel_unshard and the options holding the load balancer switch
    (torch.distributed.tensor.experimental._context_parallel in newer PyTorch, ._attention before)."""
    from torch.distributed.tensor.experimental import context_parallel, context_parallel_unshard
    try:
        from torch.distributed.tensor.experimental._context_parallel._attention import _cp_options
    except ImportError:
        from torch.distributed.tensor.experimental._attention import _cp_options
    return context_parallel, context_parallel_unshard, _cp_options


def reference_rows(torch, q, k, v, rows, causal):
    """fp32 attention and bf16 math attention of the chosen query rows over all keys: (ref, bf16)."""
    S = k.shape[2]
    qr = q[:, :, rows]
    outs = []
    for dt in (torch.float32, torch.bfloat16):
        s = (qr.to(dt) @ k.to(dt).transpose(-1, -2)) * (q.shape[-1] ** -0.5)
        if causal:
            s = s.masked_fill(torch.arange(S, device=q.device)[None, :] > rows[:, None], float("-inf"))
        outs.append(torch.softmax(s, -1) @ v.to(dt))
        del s
    return outs


def timed(torch, fn, iters):
    times = []
    for _ in range(iters + 2):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        fn()
        b.record()
        b.synchronize()
        times.append(a.elapsed_time(b))
    return statistics.median(times[2:])  # two warm-up calls


def run_config(torch, dist, mesh, impl, S, causal, args):
    import torch.nn.functional as F
    from torch.nn.attention import SDPBackend, sdpa_kernel
    context_parallel, unshard, cp_options = cp_modules()
    import portattn.torch as pt
    dev = torch.device("cuda", torch.cuda.current_device())
    gen = torch.Generator(device=dev).manual_seed(1000 + S)  # every rank draws the same inputs
    shape = (1, args.heads, S, args.dim)
    q, k, v, dout = (torch.randn(shape, device=dev, dtype=torch.bfloat16, generator=gen) for _ in range(4))
    rows = torch.randperm(S, device=dev, generator=gen)[:args.rows].sort().values
    if impl == "portattn":
        pt.activate()  # a declined call runs on PyTorch's kernel; the row counts them and keeps the reason
    else:
        pt.restore()
    calls = pt.counts()
    cp_options.enable_load_balance = causal

    def step(q, k, v, dout):
        """One forward (+ backward); returns the output and fresh gradients."""
        for t in (q, k, v):
            t.grad = None
        with sdpa_kernel(SDPBackend.FLASH_ATTENTION):
            out = F.scaled_dot_product_attention(q, k, v, is_causal=causal)
        if args.backward:
            out.backward(dout)
        return out.detach(), [t.grad for t in (q, k, v)] if args.backward else []

    one_in = [t.detach().clone().requires_grad_(args.backward) for t in (q, k, v)]
    one, one_grads = step(*one_in, dout)
    t_one = timed(torch, lambda: step(*one_in, dout), args.iters)

    ring_in = [t.detach().clone().requires_grad_(args.backward) for t in (q, k, v)]
    ring_dout = dout.clone()
    with context_parallel(mesh, buffers=ring_in + [ring_dout], buffer_seq_dims=[2, 2, 2, 2],
                          no_restore_buffers={ring_dout}):
        ring_local, grads_local = step(*ring_in, ring_dout)  # later steps leave these tensors alone
        t_ring = timed(torch, lambda: step(*ring_in, ring_dout), args.iters)
    gathered = unshard(mesh, [ring_local] + grads_local, [2] * (1 + len(grads_local)))
    ring, ring_grads = gathered[0], list(gathered[1:])
    t = torch.tensor([t_one, t_ring], device=dev)
    dist.all_reduce(t, op=dist.ReduceOp.MAX)
    t_one, t_ring = t.tolist()

    ref, low = reference_rows(torch, q.float(), k.float(), v.float(), rows, causal)
    err = lambda x: (x[:, :, rows].float() - ref).abs().max().item()  # noqa: E731
    row = {"impl": impl, "seqlen": S, "causal": causal, "heads": args.heads, "dim": args.dim,
           "backward": args.backward, "ranks": dist.get_world_size(),
           "err_ring": err(ring), "err_one_gpu": err(one), "err_bf16_math": (low.float() - ref).abs().max().item(),
           "ring_vs_one_gpu": (ring.float() - one.float()).abs().max().item(),
           "ms_one_gpu": t_one, "ms_ring": t_ring}
    for name, g1, gr in zip(("dq", "dk", "dv"), one_grads, ring_grads):
        row[name + "_ring_vs_one_gpu"] = (gr.float() - g1.float()).abs().max().item()
    f = flops(S, args.heads, args.dim, causal, args.backward)
    row["tflops_one_gpu"] = f / t_one / 1e9
    row["tflops_ring_total"] = f / t_ring / 1e9
    row["ring_over_one_gpu"] = t_one / t_ring
    now = pt.counts()
    row["portattn_calls"] = now["portattn"] - calls["portattn"]
    row["pytorch_fallbacks"] = now["pytorch"] - calls["pytorch"]
    row["fallback_reason"] = pt.last_fallback_reason() if row["pytorch_fallbacks"] else None
    row["pass"] = row["err_ring"] <= 3 * row["err_bf16_math"]
    pt.restore()
    return row


def main(argv=None):
    args = parse_args(argv)
    try:
        import torch
        import torch.distributed as dist
        from torch.distributed.device_mesh import init_device_mesh
        cp_modules()
        import portattn.torch as pt
        pt._api()
    except (ImportError, RuntimeError) as e:
        print("cp_check: cannot run: %s" % e, file=sys.stderr)
        return 2
    if not torch.cuda.is_available() or "LOCAL_RANK" not in os.environ:
        print("cp_check: cannot run: needs CUDA and torchrun (--nproc-per-node N)", file=sys.stderr)
        return 2
    torch.cuda.set_device(int(os.environ["LOCAL_RANK"]))
    dist.init_process_group("nccl")
    mesh = init_device_mesh("cuda", (dist.get_world_size(),))
    rank0 = dist.get_rank() == 0
    if rank0:
        print("PyTorch %s, %d x %s, NCCL_NVLS_ENABLE=%s" % (torch.__version__, dist.get_world_size(),
              torch.cuda.get_device_name(), os.environ.get("NCCL_NVLS_ENABLE", "(unset)")), flush=True)
    impls = ["portattn", "pytorch"] if args.impl == "both" else [args.impl]
    masks = {"causal": [True], "full": [False], "both": [True, False]}[args.mask]
    rows, failed = [], False
    for S in args.seqlen:
        for causal in masks:
            for impl in impls:
                row = run_config(torch, dist, mesh, impl, S, causal, args)
                rows.append(row)
                failed |= not row["pass"]
                if rank0:
                    print("%-8s S=%-6d %-6s ring %.1f TFLOPS total (%.2fx one GPU's %.1f) err ring %.2e one-GPU "
                          "%.2e bf16-math %.2e |ring-one| %.2e %s" % (
                              impl, S, "causal" if causal else "full", row["tflops_ring_total"],
                              row["ring_over_one_gpu"], row["tflops_one_gpu"], row["err_ring"], row["err_one_gpu"],
                              row["err_bf16_math"], row["ring_vs_one_gpu"], "ok" if row["pass"] else "FAIL"),
                          flush=True)
                    if row["pytorch_fallbacks"]:
                        print("    %d calls ran on PyTorch's kernel: %s" % (row["pytorch_fallbacks"],
                                                                        row["fallback_reason"]), flush=True)
                torch.cuda.empty_cache()
    if rank0 and args.json:
        with open(args.json, "w") as f:
            json.dump({"tool": "cp_check", "rows": rows}, f, indent=1)
    dist.destroy_process_group()
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
