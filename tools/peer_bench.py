#!/usr/bin/env python3
"""portattn beside PyTorch scaled_dot_product_attention on the same GPU, in one process, one protocol.

Every implementation is timed the same way, triton.testing.do_bench's way (the peers' own): warm-up
and repetitions by time (--warmup 25 ms, --rep 100 ms of timed calls), a 256 MiB L2-flushing write
before every timed call, events around each call, the median (with the 20th and 80th percentiles
as the spread); inputs torch.randn. TFLOPS by the FlashAttention convention: batch*seqlen = --tokens,
heads = --hidden // head_dim (FlashAttention's benchmark), forward FLOPs = 4*B*H*S*S*D, halved when causal. Peers: SDPA
FLASH_ATTENTION (FA2) and CUDNN_ATTENTION (cuDNN). Ratios are portattn / peer from this run.

Correctness too: rel-L2 and max-abs of every implementation against an fp32 reference (torch math on
the upcast inputs, TF32 off). A portattn run fails when its rel-L2 is NaN/inf or above
max(--tol-factor x the worse peer's rel-L2, --tol-floor); where neither peer runs, SDPA MATH in the
input dtype stands in.

  PORTATTN_LIBRARY=build/libportattn.so python3 tools/peer_bench.py --json peers.json   # 8 points
  python3 tools/peer_bench.py --sweep standard --json h200.json   # the README's tables
  python3 tools/peer_bench.py --sweep decode                      # one query token, GQA 32/8, d128
  python3 tools/peer_bench.py --sweep serve --backend cuda-sm80    # 2048-token chunk over 16k, pages 16/64
  python3 tools/peer_bench.py --host-cost                         # host time per call, tiny shape
  python3 tools/peer_bench.py --backend cuda-sm80 --d 128 --s 8192 16384 --causal yes
  python3 tools/peer_bench.py --sweep standard --sdpa-portattn    # also SDPA FLASH running on portattn

Sweeps: prefill = bf16 and fp16, d 64/128/256, s 512..16384, causal no and yes; decode = batch 1/8/32
x KV 4k/16k/64k, Hq 32, Hkv 8, d128, bf16; standard = both; encoder = six model shapes (ViT-B/16,
ViT-L/14, BERT-base, BERT at 128 tokens, CLIP text, a Llama prefill of 512), non-causal, --dtype's
dtypes; serve = a chunk of --serve-q tokens over --serve-kv cached tokens (GQA 32/8, d128, causal
bottom-right), portattn contiguous and as a serving call over a shuffled page table of each
--serve-pages size, SDPA with a lower-right causal mask. --shape B,S,H,D times one model's shape
instead of the FlashAttention benchmark's points.
SDPA takes (B, H, S, D) and portattn (B, S, H, D): both see the same memory through transposed views (--layout says which one is the
contiguous storage). --sdpa-portattn (PyTorch 2.11+) adds to every point the row "SDPA-FLASH[portattn]":
F.scaled_dot_product_attention under SDPBackend.FLASH_ATTENTION with portattn.torch active (fallback off:
a call portattn declines fails), checked by the same rule, timed by the same protocol on the same inputs,
its speed beside the direct portattn call's (direct time / SDPA time, and whether the two medians differ
by less than the wider p20-p80 spread); PyTorch is restored after each point. tools/report.py reads the
--json file. Exit status: 0 every portattn run correct, 1 a correctness failure, 2 cannot run (no
PyTorch, no CUDA device, no library, --sdpa-portattn on a PyTorch without the registry).
"""
import argparse
import contextlib
import inspect
import json
import math
import os
import statistics
import sys
import time
import warnings

try:  # an installed portattn (a wheel) first, else the repository's binding
    import portattn  # noqa: F401
except ImportError:
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "python"))

PEERS = (("FA2", "FLASH_ATTENTION"), ("cuDNN", "CUDNN_ATTENTION"))
SDPA_PORTATTN = "SDPA-FLASH[portattn]"  # not "portattn...": tools/report.py keeps its series to direct calls
# Encoder, vision and text-encoder shapes (batch, seqlen, heads, head dim): ViT-B/16, ViT-L/14, BERT-base,
# BERT at 128 tokens, CLIP's text encoder, and a Llama prefill of 512 tokens for comparison.
ENCODER_SHAPES = ["256,197,12,64", "128,257,16,64", "128,512,12,64", "512,128,12,64", "512,77,8,64",
                  "16,512,32,128"]
DTYPES = {"bf16": "bfloat16", "bfloat16": "bfloat16", "fp16": "float16", "f16": "float16", "float16": "float16",
          "fp32": "float32", "f32": "float32", "float32": "float32"}


def say(*a):
    print(*a, flush=True)


def finite(x):
    return isinstance(x, float) and math.isfinite(x)


class CudaLost(Exception):
    """The CUDA context is unusable (an illegal address, ...): nothing after this can be trusted."""


def cuda_alive(torch):
    try:
        torch.cuda.synchronize()
        return torch.ones(1, device="cuda").add_(1).item() == 2.0
    except Exception:
        return False


def first_line(e):
    text = str(e).strip().splitlines()
    return "%s: %s" % (type(e).__name__, text[0] if text else "")[:300]


# ---- PyTorch pieces ---------------------------------------------------------------------------

def sdpa_context(torch):
    """ctx(name) -> a context manager restricting SDPA to SDPBackend.<name>; raises if unknown."""
    try:
        from torch.nn.attention import SDPBackend, sdpa_kernel
    except ImportError:  # PyTorch < 2.3
        flags = {"FLASH_ATTENTION": dict(enable_flash=True, enable_math=False, enable_mem_efficient=False),
                 "MATH": dict(enable_flash=False, enable_math=True, enable_mem_efficient=False)}

        def ctx(name):
            if name not in flags:
                raise RuntimeError("SDPBackend.%s needs PyTorch >= 2.3" % name)
            return torch.backends.cuda.sdp_kernel(**flags[name])
        return ctx

    def ctx(name):
        be = getattr(SDPBackend, name, None)
        if be is None:
            raise RuntimeError("SDPBackend.%s is not in PyTorch %s" % (name, torch.__version__))
        return sdpa_kernel([be])
    return ctx


def make_bench(torch, warmup, rep):
    """bench(fn) -> (median, 20th, 80th percentile) milliseconds per call, by do_bench's protocol."""
    try:
        from triton.testing import do_bench
        params = inspect.signature(do_bench).parameters
    except Exception:
        do_bench, params = None, {}
    flush = []

    def events(fn):  # do_bench's loop, for machines without triton
        if not flush:
            flush.append(torch.empty(64 << 20, dtype=torch.int32, device="cuda"))
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        for _ in range(5):
            flush[0].zero_()
            fn()
        end.record()
        torch.cuda.synchronize()
        est = max(start.elapsed_time(end) / 5, 1e-3)
        for _ in range(max(1, int(warmup / est))):
            fn()
        pairs = []
        for _ in range(max(1, int(rep / est))):
            s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            flush[0].zero_()
            s.record()
            fn()
            e.record()
            pairs.append((s, e))
        torch.cuda.synchronize()
        t = sorted(s.elapsed_time(e) for s, e in pairs)
        return [statistics.median(t), t[int(0.2 * (len(t) - 1))], t[int(0.8 * (len(t) - 1))]]

    def bench(fn):
        fn()
        torch.cuda.synchronize()
        if do_bench is None:
            r = events(fn)
        elif "quantiles" in params:
            r = do_bench(fn, warmup=warmup, rep=rep, quantiles=[0.5, 0.2, 0.8])
        else:
            r = [do_bench(fn, warmup=warmup, rep=rep)] * 3
        return tuple(float(x) for x in r)

    bench.name = "triton.testing.do_bench" if do_bench else "do_bench's loop with CUDA events (triton not found)"
    return bench


def timed(res, bench, fn, flops=None, kv_bytes=None):
    """Times fn into res: ms (median), ms_p20, ms_p80, and TFLOPS or KV TB/s."""
    ms, p20, p80 = bench(fn)
    res.update(ms=ms, ms_p20=p20, ms_p80=p80)
    if flops is not None:
        res["tflops"] = flops / ms / 1e9
    if kv_bytes is not None:
        res["us"] = ms * 1e3
        res["kv_TBps"] = kv_bytes / ms / 1e9


def reference(torch, q, k, v, causal):
    """fp32 attention on (B, H, S, D) inputs (K/V heads shared by groups of query heads), in head
    chunks of at most 2^28 scores."""
    if k.shape[1] != q.shape[1]:
        k, v = (t.repeat_interleave(q.shape[1] // k.shape[1], dim=1) for t in (k, v))
    B, H, Sq, D = q.shape
    Sk, Dv = k.shape[2], v.shape[3]
    out = torch.empty(B, H, Sq, Dv, dtype=torch.float32, device=q.device)
    keep = torch.ones(Sq, Sk, dtype=torch.bool, device=q.device).tril(diagonal=Sk - Sq) if causal else None
    chunk = max(1, (1 << 28) // max(1, Sq * Sk))
    scale = 1.0 / math.sqrt(D)
    for b in range(B):
        for h in range(0, H, chunk):
            s = torch.matmul(q[b, h:h + chunk].float(), k[b, h:h + chunk].float().transpose(-1, -2)) * scale
            if keep is not None:
                s.masked_fill_(~keep, float("-inf"))
            p = torch.nan_to_num(torch.softmax(s, dim=-1), nan=0.0)  # a row with no key gives 0
            out[b, h:h + chunk] = torch.matmul(p, v[b, h:h + chunk].float())
            del s, p
    return out


def errors(torch, o, ref):
    """rel-L2 and max-abs of o against ref (both (B, H, S, D)); NaN/inf when o is not finite."""
    o = o.float()
    if not bool(torch.isfinite(o).all()):
        bad = float("nan") if bool(torch.isnan(o).any()) else float("inf")
        return {"rel_l2": bad, "max_abs": bad}
    d = o - ref
    rel = torch.linalg.vector_norm(d, dtype=torch.float64) / torch.linalg.vector_norm(ref, dtype=torch.float64)
    return {"rel_l2": float(rel.item()), "max_abs": float(d.abs().max().item())}


# ---- one point --------------------------------------------------------------------------------

def inputs(torch, args, layout, b, sq, sk, hq, hk, d, dtype):
    """torch.randn q, k, v stored in `layout`; returns the SDPA (B, H, S, D) and portattn (B, S, H, D)
    views of the same memory."""
    def make(s, h):
        return torch.randn((b, h, s, d) if layout == "bhsd" else (b, s, h, d), device="cuda", dtype=dtype)
    q, k, v = make(sq, hq), make(sk, hk), make(sk, hk)
    flip = tuple(t.transpose(1, 2) for t in (q, k, v))
    return ((q, k, v), flip) if layout == "bhsd" else (flip, (q, k, v))


def prefill_point(torch, args, pt):
    dt, d, s, causal, b, h = pt
    if b is None:  # FlashAttention's benchmark: nheads = dim // headdim, batch = tokens // seqlen
        h, b = args.hidden // d, max(1, args.tokens // s)
    row = {"mode": "prefill", "dtype": dt, "d": d, "s": s, "b": b, "h": h, "causal": causal, "layout": args.layout,
           "flops": 4.0 * b * h * s * s * d / (2 if causal else 1), "impls": {}}
    return row, inputs(torch, args, args.layout, b, s, s, h, h, d, getattr(torch, DTYPES[dt]))


def decode_point(torch, args, pt):
    """One query token per sequence against a KV cache of skv tokens, GQA 32/8, d128 (the decode sweep)."""
    dt, b, skv = pt
    hq, hk, d = 32, 8, 128
    row = {"mode": "decode", "dtype": dt, "d": d, "b": b, "skv": skv, "hq": hq, "hk": hk, "causal": False,
           "layout": args.layout, "kv_bytes": 2.0 * b * hk * skv * d * 2, "impls": {}}
    return row, inputs(torch, args, args.layout, b, 1, skv, hq, hk, d, getattr(torch, DTYPES[dt]))


def serve_point(torch, args, pt):
    """A chunk of sq query tokens over a cache of skv tokens (the last sq of them), GQA 32/8, d128,
    causal bottom-right: portattn's contiguous call and the same keys through a shuffled page table
    (a serving call, --serve-pages), beside SDPA with a lower-right causal mask (K/V heads expanded:
    PyTorch has no flash_attn_with_kvcache form, so the contiguous chunk is the yardstick)."""
    dt, sq, skv = pt
    hq, hk, d = 32, 8, 128
    pairs = sq * (skv - sq) + sq * (sq + 1) / 2.0
    row = {"mode": "serve", "dtype": dt, "d": d, "sq": sq, "skv": skv, "hq": hq, "hk": hk, "causal": True,
           "layout": "bshd", "flops": 4.0 * hq * pairs * d, "impls": {}}
    return row, inputs(torch, args, "bshd", 1, sq, skv, hq, hk, d, getattr(torch, DTYPES[dt]))


def serve_paged(torch, portattn, row, qp, kp, vp, page, variants, run_ours):
    """The serving form of a serve point: K/V copied into a pool of pages in a shuffled order, one
    sequence (cu_seqlens_q [0, sq], seqused_k [skv]), the packed queries."""
    sq, skv = qp.shape[1], kp.shape[1]
    n = -(-skv // page)
    perm = torch.randperm(n, generator=torch.Generator().manual_seed(page)).cuda()
    pools = []
    for t in (kp, vp):
        pool = torch.zeros((n, page) + tuple(t.shape[2:]), dtype=t.dtype, device=t.device)
        flat = torch.zeros((n * page,) + tuple(t.shape[2:]), dtype=t.dtype, device=t.device)
        flat[:skv] = t[0]
        pool[perm] = flat.view(pool.shape)
        pools.append(pool)
    table = perm.to(torch.int32).view(1, n)
    cu = torch.tensor([0, sq], dtype=torch.int32, device="cuda")
    used = torch.tensor([skv], dtype=torch.int32, device="cuda")
    q = qp[0]
    kw = dict(causal=True, seqused_k=used, block_table=table)
    for variant in variants:
        run_ours("portattn%s[paged %d]" % ("" if variant is None else "[%s]" % variant, page), variant,
                 lambda be: portattn.which(q, pools[0], pools[1], cu_seqlens_q=cu, cu_seqlens_k=None,
                                           max_seqlen_q=sq, max_seqlen_k=skv, backend=be, **kw),
                 lambda be, out: portattn.flash_attn_varlen_func(q, pools[0], pools[1], cu, None, sq, skv,
                                                                 backend=be, out=out, **kw),
                 lambda o: o.unsqueeze(0))


def run_point(torch, F, portattn, row, tensors, args, ctx, bench, variants):
    """Runs the peers and every portattn variant on one point; fills and returns the row."""
    (qs, ks, vs), (qp, kp, vp) = tensors
    causal, flops, kv_bytes = row["causal"], row.get("flops"), row.get("kv_bytes")
    gqa = {"enable_gqa": True} if ks.shape[1] != qs.shape[1] else {}
    t0 = time.time()
    ref = reference(torch, qs, ks, vs, causal)
    torch.cuda.synchronize()
    row["ref_s"] = round(time.time() - t0, 2)

    if row["mode"] == "serve":  # queries bottom-right: SDPA's is_causal is top-left, so a CausalBias
        from torch.nn.attention.bias import causal_lower_right
        mask = causal_lower_right(qs.shape[2], ks.shape[2])
        kx, vx = (t.repeat_interleave(qs.shape[1] // ks.shape[1], dim=1) for t in (ks, vs))

        def sdpa():
            return F.scaled_dot_product_attention(qs, kx, vx, attn_mask=mask)
    else:
        def sdpa():
            return F.scaled_dot_product_attention(qs, ks, vs, is_causal=causal, **gqa)

    def run_peer(name):
        res = {}
        try:
            with ctx(name):
                o = sdpa()
                torch.cuda.synchronize()
                res.update(errors(torch, o, ref))
                del o
                if not args.no_bench:
                    timed(res, bench, sdpa, flops, kv_bytes)
        except Exception as e:
            res["error"] = first_line(e)
            if not cuda_alive(torch):
                raise CudaLost("SDPA %s: %s" % (name, res["error"]))
        return res

    for label, name in PEERS:
        row["impls"][label] = run_peer(name)
    worst = [row["impls"][lab].get("rel_l2") for lab, _ in PEERS]
    worst = [x for x in worst if finite(x)]
    if worst:
        row["bound_from"] = "peers"
    else:  # neither peer ran: the naive same-dtype implementation stands in
        row["impls"]["math"] = run_peer("MATH")
        m = row["impls"]["math"].get("rel_l2")
        worst = [m] if finite(m) else []
        row["bound_from"] = "SDPA MATH" if worst else "floor"
    row["bound"] = max(args.tol_factor * max(worst), args.tol_floor) if worst else args.tol_floor

    def run_ours(label, variant, which, call, as4d):
        """One portattn form: which(variant) names the kernel, call(variant, out) runs it (out=None:
        allocate), as4d maps its output to (B, S, H, D)."""
        res = {"forced": variant}
        row["impls"][label] = res
        try:
            sel = which(variant)
            res.update(backend=sel["backend"], kernel=sel["kernel"], reason=sel["reason"])
            o = call(variant, None)
            torch.cuda.synchronize()
            res.update(errors(torch, as4d(o).transpose(1, 2), ref))
            res["check"] = "PASS" if finite(res["rel_l2"]) and res["rel_l2"] <= row["bound"] else "FAIL"
            if not args.no_bench:
                ob = torch.empty_like(o)
                del o
                timed(res, bench, lambda: call(variant, ob), flops, kv_bytes)
                for plabel, _ in PEERS:  # speed ratio: peer time / portattn time
                    pms = row["impls"][plabel].get("ms")
                    res["vs_" + plabel] = pms / res["ms"] if pms else None
        except portattn.PortattnError as e:
            res["error"] = str(e)
            refused = e.status in (portattn.Status.ERROR_NOT_SUPPORTED, portattn.Status.ERROR_BACKEND_UNAVAILABLE)
            # A forced backend may decline a shape; the automatic choice must always run.
            res.setdefault("check", "n/a" if variant is not None and refused else "FAIL")
        except Exception as e:
            res["error"] = first_line(e)
            res.setdefault("check", "FAIL")
            if not cuda_alive(torch):
                raise CudaLost("%s: %s" % (label, res["error"]))

    for variant in variants:
        run_ours("portattn" if variant is None else "portattn[%s]" % variant, variant,
                 lambda be: portattn.which(qp, kp, vp, causal=causal, backend=be),
                 lambda be, out: portattn.flash_attn_func(qp, kp, vp, causal=causal, backend=be, out=out),
                 lambda o: o)
    for page in (args.serve_pages if row["mode"] == "serve" else []):
        serve_paged(torch, portattn, row, qp, kp, vp, page, variants, run_ours)
    if args.sdpa_portattn:
        row["impls"][SDPA_PORTATTN] = sdpa_on_portattn(torch, sdpa, row, ref, args, ctx, bench)
    return row


def sdpa_on_portattn(torch, sdpa, row, ref, args, ctx, bench):
    """The point's SDPA call under the FLASH backend with portattn.torch active (fallback off), checked
    and timed as the direct call; PyTorch's own flash kernel is back on return."""
    import portattn.torch as pa_torch
    res = {}
    try:
        with on_portattn_ctx(True), ctx("FLASH_ATTENTION"):
            n = pa_torch.counts()["portattn"]
            o = sdpa()
            torch.cuda.synchronize()
            res["portattn_calls"] = pa_torch.counts()["portattn"] - n
            res.update(errors(torch, o, ref))
            del o
            if not args.no_bench:
                timed(res, bench, sdpa, row.get("flops"), row.get("kv_bytes"))
    except Exception as e:
        res["error"] = first_line(e)
        if not cuda_alive(torch):
            raise CudaLost("%s: %s" % (SDPA_PORTATTN, res["error"]))
    res["check"] = sdpa_check(res, row)
    res.update(beside(res, row["impls"]))
    return res


def sdpa_check(res, row):
    """PASS: portattn computed the call and its rel-L2 is within the point's bound. n/a: PyTorch's FLASH
    backend itself does not take this point (the FA2 peer did not run either)."""
    if "rel_l2" not in res:
        return "n/a" if "rel_l2" not in row["impls"].get("FA2", {}) else "FAIL"
    if not res.get("portattn_calls"):
        res.setdefault("error", "SDPA ran without calling portattn")
        return "FAIL"
    return "PASS" if finite(res["rel_l2"]) and res["rel_l2"] <= row["bound"] else "FAIL"


def beside(res, impls):
    """Speed against the direct portattn call (its time / this one's: 1 is the same speed) and whether
    the medians differ by less than the wider of the two p20-p80 spreads; the peers' ratios too."""
    out = {}
    for label, key in [("portattn", "vs_direct")] + [(p, "vs_" + p) for p, _ in PEERS]:
        other = impls.get(label, {})
        if finite(other.get("ms")) and finite(res.get("ms")):
            out[key] = other["ms"] / res["ms"]
            if label == "portattn":
                width = max(r["ms_p80"] - r["ms_p20"] for r in (res, other))
                out["within_spread"] = abs(res["ms"] - other["ms"]) <= width
    return out


# ---- output -----------------------------------------------------------------------------------

def fmt_e(x):
    return "%.2e" % x if isinstance(x, float) else "n/a"


def fmt_f(x, spec="%.1f"):
    return spec % x if finite(x) else "n/a"


def spread(r):
    """The run's spread: (p80 - p20) / median of the timed calls, in percent."""
    return 100.0 * (r["ms_p80"] - r["ms_p20"]) / r["ms"] if finite(r.get("ms")) and r.get("ms_p80") else None


def print_point(row):
    tf = row["mode"] in ("prefill", "serve")
    unit = "TFLOPS" if tf else "KV TB/s"
    say("  %-24s %-10s %-10s %11s %8s %9s  %s" % ("implementation", "rel-L2", "max-abs", "ms", "spread", unit, "notes"))
    for label, r in row["impls"].items():
        notes = []
        if label.startswith("portattn"):
            for plabel, _ in PEERS:
                if r.get("vs_" + plabel):
                    notes.append("%.3fx %s" % (r["vs_" + plabel], plabel))
            if r.get("check") != "n/a":
                notes.append("%s (bound %.2e from %s)" % (r.get("check", "?"), row["bound"], row["bound_from"]))
            if r.get("kernel"):
                notes.append("%s %s" % (r.get("backend"), r["kernel"]))
        elif label == SDPA_PORTATTN:
            notes.append(sdpa_notes(r, row))
        if r.get("error"):
            notes.append("n/a: " + r["error"] if "rel_l2" not in r else "error: " + r["error"])
        say("  %-24s %-10s %-10s %11s %8s %9s  %s" % (
            label, fmt_e(r.get("rel_l2")), fmt_e(r.get("max_abs")), fmt_f(r.get("ms"), "%.4f"),
            fmt_f(spread(r), "%.1f%%"), fmt_f(r.get("tflops" if tf else "kv_TBps"), "%.2f"),
            "  ".join(notes)))


def ratio(x):
    return "%.2fx" % x if finite(x) else "n/a"


def ours(label):
    """Rows that run portattn (directly, or through SDPA) and must pass the check."""
    return label.startswith("portattn") or label == SDPA_PORTATTN


def sdpa_notes(r, row):
    speed = "time of direct portattn / this %s (%s)" % (ratio(r.get("vs_direct")), {
        True: "the same within the spread", False: "outside the spread", None: "not compared"}[r.get("within_spread")])
    check = r.get("check", "?") if r.get("check") == "n/a" else "%s (bound %.2e from %s)" % (
        r.get("check", "?"), row["bound"], row["bound_from"])
    return "%s  %s  %s portattn calls" % (speed, check, r.get("portattn_calls", 0))


def print_sdpa_table(rows):
    """Markdown: SDPA FLASH running on portattn beside the direct portattn call, every point."""
    pts = [r for r in rows if SDPA_PORTATTN in r["impls"]]
    if not pts:
        return
    say("\n| point | ms portattn | ms SDPA FLASH on portattn | direct / SDPA | same within spread | rel-L2 | "
        "bound | check |")
    say("|---|---|---|---|---|---|---|---|")
    for row in pts:
        d, r = row["impls"].get("portattn", {}), row["impls"][SDPA_PORTATTN]
        same = {True: "yes", False: "no"}.get(r.get("within_spread"), "-")
        say("| %s | %s | %s | %s | %s | %s | %.2e | %s |" % (
            point_name(row), fmt_f(d.get("ms"), "%.4f"), fmt_f(r.get("ms"), "%.4f"), ratio(r.get("vs_direct")),
            same, fmt_e(r.get("rel_l2")), row["bound"], r.get("check", "?")))
    speeds = sorted(r["impls"][SDPA_PORTATTN]["vs_direct"] for r in pts
                    if finite(r["impls"][SDPA_PORTATTN].get("vs_direct")))
    outside = sum(r["impls"][SDPA_PORTATTN].get("within_spread") is False for r in pts)
    if speeds:
        say("\nSDPA FLASH on portattn: %d points timed, direct / SDPA median %.3f (min %.3f, max %.3f), %d outside "
            "the spread" % (len(speeds), statistics.median(speeds), speeds[0], speeds[-1], outside))


def print_table(rows, variants):
    """Markdown: prefill TFLOPS, then decode latency; "vs" = the peer's time / portattn's (> 1: faster)."""
    pre = [r for r in rows if r["mode"] == "prefill"]
    dec = [r for r in rows if r["mode"] == "decode"]
    srv = [r for r in rows if r["mode"] == "serve"]
    if srv:
        say("\n| dtype | chunk | KV tokens | portattn | kernel | ms | TFLOPS | vs contiguous | vs FA2 | check |")
        say("|---|---|---|---|---|---|---|---|---|---|")
    for row in srv:
        for label, r in row["impls"].items():
            if not ours(label) or label == SDPA_PORTATTN:
                continue
            base = row["impls"].get(label.split("[paged")[0], {}) if "[paged" in label else {}
            vs = base.get("ms") / r["ms"] if base.get("ms") and r.get("ms") else None
            say("| %s | %d | %d | %s | %s | %s | %s | %s | %s | %s |" % (
                row["dtype"], row["sq"], row["skv"], label, r.get("kernel", "-"), fmt_f(r.get("ms"), "%.4f"),
                fmt_f(r.get("tflops")), ratio(vs), ratio(r.get("vs_FA2")), r.get("check", "?")))
    if pre:
        say("\n| dtype | d | seqlen | causal | portattn | kernel | TFLOPS portattn | FA2 | cuDNN | vs FA2 | "
            "vs cuDNN | rel-L2 portattn | bound | check |")
        say("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for row in pre:
        fa, cu = row["impls"].get("FA2", {}), row["impls"].get("cuDNN", {})
        for variant in variants:
            r = row["impls"].get("portattn" if variant is None else "portattn[%s]" % variant, {})
            say("| %s | %d | %d | %s | %s | %s | %s | %s | %s | %s | %s | %s | %.2e | %s |" % (
                row["dtype"], row["d"], row["s"], "yes" if row["causal"] else "no", variant or "auto",
                r.get("kernel", "-"), fmt_f(r.get("tflops")), fmt_f(fa.get("tflops")), fmt_f(cu.get("tflops")),
                ratio(r.get("vs_FA2")), ratio(r.get("vs_cuDNN")), fmt_e(r.get("rel_l2")), row["bound"],
                r.get("check", "?")))
    if dec:
        say("\n| batch | KV tokens | portattn | kernel | us portattn | FA2 | cuDNN | vs FA2 | vs cuDNN | "
            "KV TB/s portattn | check |")
        say("|---|---|---|---|---|---|---|---|---|---|---|")
    for row in dec:
        fa, cu = row["impls"].get("FA2", {}), row["impls"].get("cuDNN", {})
        for variant in variants:
            r = row["impls"].get("portattn" if variant is None else "portattn[%s]" % variant, {})
            say("| %d | %d | %s | %s | %s | %s | %s | %s | %s | %s | %s |" % (
                row["b"], row["skv"], variant or "auto", r.get("kernel", "-"), fmt_f(r.get("us")),
                fmt_f(fa.get("us")), fmt_f(cu.get("us")), ratio(r.get("vs_FA2")), ratio(r.get("vs_cuDNN")),
                fmt_f(r.get("kv_TBps"), "%.2f"), r.get("check", "?")))


def clean(x):
    """JSON-safe: non-finite floats become strings."""
    if isinstance(x, float) and not math.isfinite(x):
        return str(x)
    if isinstance(x, dict):
        return {k: clean(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [clean(v) for v in x]
    return x


# ---- main -------------------------------------------------------------------------------------

def parse_args(argv):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--d", type=int, nargs="+", default=[64, 128], help="head dims (default 64 128)")
    p.add_argument("--s", type=int, nargs="+", default=[1024, 4096], help="seqlens (default 1024 4096)")
    p.add_argument("--dtype", default="bf16", help="comma list of bf16, fp16, fp32 (default bf16)")
    p.add_argument("--causal", default="both", choices=["no", "yes", "both"])
    p.add_argument("--tokens", type=int, default=16384, help="batch * seqlen (default 16384)")
    p.add_argument("--hidden", type=int, default=2048, help="heads * head_dim (default 2048)")
    p.add_argument("--backend", action="append", default=[],
                   help="also run portattn forced to this backend (repeat or comma list), e.g. cuda-sm80")
    p.add_argument("--no-auto", action="store_true", help="leave out portattn's automatic choice")
    p.add_argument("--layout", default="bhsd", choices=["bhsd", "bshd"],
                   help="contiguous storage: bhsd (SDPA's, default) or bshd (FlashAttention's)")
    p.add_argument("--warmup", type=int, default=25, help="do_bench warmup, ms (default 25)")
    p.add_argument("--rep", type=int, default=100, help="do_bench repetitions, ms (default 100)")
    p.add_argument("--no-bench", action="store_true", help="correctness only")
    p.add_argument("--tol-factor", type=float, default=2.0, help="bound = max(F x worse peer, floor); F=2")
    p.add_argument("--tol-floor", type=float, default=1e-3, help="bound floor (default 1e-3)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--library", help="libportattn to load (default: $PORTATTN_LIBRARY, then the search)")
    p.add_argument("--json", help="write the device, settings, protocol and every row to this file")
    p.add_argument("--sweep", choices=["prefill", "decode", "standard", "encoder", "serve"],
                   help="the standard points (see above) instead of --d/--s/--dtype/--causal")
    p.add_argument("--shape", action="append", default=[], metavar="B,S,H,D",
                   help="a model's shape (batch, seqlen, heads, head dim) instead of --d/--s/--tokens/--hidden; "
                        "repeat for more (the dtypes and --causal still apply)")
    p.add_argument("--decode-batch", type=int, nargs="+", default=[1, 8, 32], help="decode sweep batches")
    p.add_argument("--decode-kv", type=int, nargs="+", default=[4096, 16384, 65536], help="decode sweep KV lengths")
    p.add_argument("--serve-q", type=int, nargs="+", default=[2048], help="serve sweep: query tokens of the chunk")
    p.add_argument("--serve-kv", type=int, nargs="+", default=[16384], help="serve sweep: cached tokens")
    p.add_argument("--serve-pages", type=int, nargs="+", default=[16, 64], help="serve sweep: page sizes")
    p.add_argument("--host-cost", action="store_true",
                   help="only the host time per call on a tiny shape (portattn and SDPA, --host-calls each)")
    p.add_argument("--host-calls", type=int, default=2000)
    p.add_argument("--sdpa-portattn", action="store_true",
                   help="also SDPA FLASH with portattn.torch active, beside the direct call (PyTorch 2.11+)")
    args = p.parse_args(argv)
    if args.sweep in ("prefill", "standard"):
        args.d, args.s, args.dtype, args.causal = [64, 128, 256], [512, 1024, 2048, 4096, 8192, 16384], "bf16,fp16", "both"
    args.shapes = []
    for x in args.shape + (ENCODER_SHAPES if args.sweep == "encoder" else []):
        try:
            b, s_, h, d = (int(v) for v in x.split(","))
        except ValueError:
            p.error("--shape %r: expected B,S,H,D (four integers)" % x)
        if min(b, s_, h, d) <= 0:
            p.error("--shape %r: every value must be positive" % x)
        args.shapes.append((b, s_, h, d))
    if args.sweep == "encoder":
        args.causal = "no"
    args.dtypes = [x.strip().lower() for x in args.dtype.split(",") if x.strip()]
    for x in args.dtypes:
        if x not in DTYPES:
            p.error("unknown dtype %r (bf16, fp16, fp32)" % x)
    args.backends = [x.strip() for b in args.backend for x in b.split(",") if x.strip() and x.strip() != "auto"]
    if args.no_auto and not args.backends:
        p.error("--no-auto needs --backend")
    return args


def git_commit():
    """The repository's commit (with "+dirty" for local changes), or None outside a checkout."""
    here = os.path.dirname(os.path.abspath(__file__))
    try:
        import subprocess
        rev = subprocess.run(["git", "-C", here, "rev-parse", "--short=12", "HEAD"], capture_output=True, text=True,
                             timeout=10).stdout.strip()
        dirty = subprocess.run(["git", "-C", here, "status", "--porcelain", "--untracked-files=no"],
                               capture_output=True, text=True, timeout=10).stdout.strip()
        return (rev + ("+dirty" if dirty else "")) if rev else None
    except Exception:
        return None


def point_name(row):
    if row["mode"] == "serve":
        return "serve %s chunk=%d kv=%d hq=%d hk=%d d=%d causal" % (row["dtype"], row["sq"], row["skv"], row["hq"],
                                                                   row["hk"], row["d"])
    if row["mode"] == "prefill":
        return "%s d=%d s=%d b=%d h=%d causal=%s" % (row["dtype"], row["d"], row["s"], row["b"], row["h"],
                                                    "yes" if row["causal"] else "no")
    return "decode %s b=%d kv=%d hq=%d hk=%d d=%d" % (row["dtype"], row["b"], row["skv"], row["hq"], row["hk"], row["d"])


def on_portattn_ctx(on):
    """portattn.torch active (fallback off) inside, when `on`."""
    if not on:
        return contextlib.nullcontext()
    import portattn.torch as pa_torch
    return pa_torch.activated(fallback=False)


def host_cost(torch, F, portattn, ctx, args, info):
    """Host time per call on a tiny shape: n calls back to back, one sync, wall time / n. The GPU work of
    one call takes a few microseconds, so the host is the bottleneck and this is its cost per call."""
    q, k, v = (torch.randn(1, 8, 2, 64, device="cuda", dtype=torch.bfloat16) for _ in range(3))
    qs, ks, vs = (t.transpose(1, 2) for t in (q, k, v))
    def sdpa():
        return F.scaled_dot_product_attention(qs, ks, vs)

    impls = [("portattn flash_attn_func", None, lambda: portattn.flash_attn_func(q, k, v), False)]
    impls += [("SDPA " + label, name, sdpa, False) for label, name in PEERS]
    if args.sdpa_portattn:
        impls.append(("SDPA FLASH on portattn", "FLASH_ATTENTION", sdpa, True))
    rows = []
    for label, backend, fn, on_portattn in impls:
        try:
            per = []
            with ctx(backend) if backend else contextlib.nullcontext(), on_portattn_ctx(on_portattn):
                for _ in range(3):
                    fn()
                    torch.cuda.synchronize()
                    t0 = time.perf_counter()
                    for _ in range(args.host_calls):
                        fn()
                    torch.cuda.synchronize()
                    per.append((time.perf_counter() - t0) / args.host_calls * 1e6)
            rows.append({"impl": label, "us_per_call": statistics.median(per), "runs_us": per})
        except Exception as e:
            rows.append({"impl": label, "error": first_line(e)})
        r = rows[-1]
        say("  %-28s %s" % (label, "%.1f us per call (3 runs: %s)" % (r["us_per_call"], ", ".join(
            "%.1f" % x for x in r["runs_us"])) if "us_per_call" in r else r["error"]))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(clean(dict(info, tool="peer_bench", mode="host_cost", shape="q, k, v (1, 8, 2, 64) bf16",
                                 calls=args.host_calls, rows=rows)), f, indent=1)
    return 0 if all("us_per_call" in r for r in rows[:1]) else 1


def main(argv=None):
    args = parse_args(argv)
    try:
        import torch
        import torch.nn.functional as F
    except ImportError as e:
        say("peer_bench: needs PyTorch (%s)" % e)
        return 2
    if args.sdpa_portattn:  # asked before the device: a PyTorch that cannot do it says so anywhere
        import portattn.torch as pa_torch
        try:
            pa_torch._api()
        except RuntimeError as e:
            say("peer_bench: --sdpa-portattn: %s" % e)
            return 2
    if not torch.cuda.is_available():
        say("peer_bench: no CUDA device visible to PyTorch")
        return 2
    import portattn
    try:
        portattn.load(args.library)
        bes = portattn.backends()
        for be in args.backends:
            portattn.backend_id(be)  # an unknown name is a usage error, before any work
    except (portattn.PortattnLoadError, ValueError) as e:
        say("peer_bench: %s" % e)
        return 2
    if not any(b["available"] and b["name"].startswith(("cuda", "hip")) for b in bes):
        say("peer_bench: %s has no usable GPU backend:\n  %s" % (portattn.library_path(), "\n  ".join(
            "%s: %s" % (b["name"], b["detail"]) for b in bes if b["name"].startswith(("cuda", "hip")))))
        return 2
    warnings.filterwarnings("ignore")
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False

    ctx = sdpa_context(torch)
    bench = make_bench(torch, args.warmup, args.rep)
    variants = ([] if args.no_auto else [None]) + list(dict.fromkeys(args.backends))
    try:
        import triton
        triton_version = triton.__version__
    except Exception:
        triton_version = None
    cudnn = torch.backends.cudnn.version() if torch.backends.cudnn.is_available() else None
    info = {"device": torch.cuda.get_device_name(), "torch": torch.__version__, "cuda": torch.version.cuda,
            "cudnn": cudnn, "triton": triton_version, "timer": None if args.no_bench else bench.name,
            "portattn": {"version": portattn.version(), "library": portattn.library_path(), "backends": bes},
            "settings": {k: v for k, v in vars(args).items() if k not in ("backend", "dtype")},
            "date": time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime()), "commit": git_commit()}
    say("peer_bench: %s, torch %s (CUDA %s, cuDNN %s), triton %s" % (info["device"], info["torch"],
                                                                     info["cuda"], cudnn, triton_version))
    say("portattn %s from %s; available: %s" % (info["portattn"]["version"], info["portattn"]["library"],
                                                ", ".join(b["name"] for b in bes if b["available"]) or "none"))
    say("timer: %s; TFLOPS = 4*B*H*S^2*D / time (halved when causal); tokens %d, hidden %d, layout %s"
        % (info["timer"] or "none (--no-bench)", args.tokens, args.hidden, args.layout))

    info["protocol"] = {"timer": info["timer"], "warmup_ms": args.warmup, "rep_ms": args.rep, "flush_mib": 256,
                        "statistic": "median (p20, p80 kept as the spread)", "inputs": "torch.randn",
                        "layout": args.layout, "flops": "FlashAttention: 4*B*H*S^2*D, halved when causal"}
    if args.host_cost:
        return host_cost(torch, F, portattn, ctx, args, info)

    points = []
    masks = {"no": [False], "yes": [True], "both": [False, True]}[args.causal]
    if args.sweep == "serve":
        points += [("serve", (dt, q, kv)) for dt in args.dtypes for q in args.serve_q for kv in args.serve_kv if q <= kv]
    elif args.shapes:
        points += [("prefill", (dt, d, s, c, b, h)) for dt in args.dtypes for (b, s, h, d) in args.shapes
                   for c in masks]
    elif args.sweep != "decode":
        points += [("prefill", (dt, d, s, c, None, None)) for dt in args.dtypes for d in args.d for s in args.s
                   for c in masks]
    if args.sweep in ("decode", "standard"):
        points += [("decode", ("bf16", b, kv)) for b in args.decode_batch for kv in args.decode_kv]
    rows, failures, notes = [], [], []
    try:
        for i, (mode, pt) in enumerate(points):
            if mode == "prefill" and pt[4] is None and (pt[1] <= 0 or pt[2] <= 0 or args.hidden < pt[1]):
                notes.append("skipped %s d=%d s=%d: hidden %d is below d" % (pt[0], pt[1], pt[2], args.hidden))
                say(notes[-1])
                continue
            torch.manual_seed(args.seed)
            row, tensors = {"prefill": prefill_point, "decode": decode_point, "serve": serve_point}[mode](torch, args, pt)
            name = point_name(row)
            say("\n[%d/%d] %s" % (i + 1, len(points), name))
            try:
                run_point(torch, F, portattn, row, tensors, args, ctx, bench, variants)
                del tensors
            except CudaLost:
                raise
            except Exception as e:  # the reference or the set-up failed (out of memory, ...)
                del tensors
                failures.append("%s: %s" % (name, first_line(e)))
                say("FAIL: " + failures[-1])
                if not cuda_alive(torch):
                    raise CudaLost(failures[-1])
                torch.cuda.empty_cache()
                continue
            torch.cuda.empty_cache()  # the point's tensors are gone: give the memory back for the next
            rows.append(row)
            print_point(row)
            for label, r in row["impls"].items():
                if ours(label) and r.get("check") == "FAIL":
                    failures.append("%s %s: rel-L2 %s > bound %.2e%s" % (
                        name, label, fmt_e(r.get("rel_l2")), row["bound"], " (%s)" % r["error"] if r.get("error") else ""))
    except CudaLost as e:
        failures.append("CUDA context lost, run stopped: %s" % e)
    except KeyboardInterrupt:
        failures.append("interrupted")
    finally:
        if rows:
            print_table(rows, variants)
            print_sdpa_table(rows)
        runs = [r for row in rows for lab, r in row["impls"].items() if ours(lab)]
        n_pass = sum(r.get("check") == "PASS" for r in runs)
        n_na = sum(r.get("check") == "n/a" for r in runs)
        n_fail = len(runs) - n_pass - n_na
        if args.json:
            d = os.path.dirname(os.path.abspath(args.json))
            os.makedirs(d, exist_ok=True)
            with open(args.json, "w") as f:
                json.dump(clean(dict(info, tool="peer_bench", format=1, rows=rows, failures=failures, notes=notes,
                                     passed=not failures and n_fail == 0)), f, indent=1)
            say("\nwrote %s" % args.json)
        say("")
        for f_ in failures:
            say("FAIL: " + f_)
        say("peer_bench: %d passed, %d failed, %d skipped" % (n_pass, max(n_fail, len(failures)), n_na))
    return 1 if failures or n_fail else 0


if __name__ == "__main__":
    sys.exit(main())
