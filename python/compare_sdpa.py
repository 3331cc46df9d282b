#!/usr/bin/env python3
"""portattn beside PyTorch scaled_dot_product_attention on the same GPU, in one run.

Correctness: rel-L2 and max-abs error of every implementation against an fp32 reference (torch
math on the upcast inputs, TF32 off). A portattn run fails when its rel-L2 is NaN/inf or above
max(--tol-factor x the worse peer's rel-L2, --tol-floor); the peers are SDPA FLASH_ATTENTION
(FA2) and CUDNN_ATTENTION (cuDNN); where neither runs, SDPA MATH in the input dtype stands in.
Speed: triton.testing.do_bench median (CUDA events if triton is absent); TFLOPS by the
FlashAttention convention: batch*seqlen = --tokens, heads*head_dim = --hidden, forward FLOPs =
4*B*H*S*S*D, halved when causal. Ratios are portattn TFLOPS / peer TFLOPS from this run.
Default points: bf16, head dim 64 and 128, seqlen 1024 and 4096, causal no and yes; portattn's
automatic choice plus every --backend.

  PORTATTN_LIBRARY=build/libportattn.so python3 python/compare_sdpa.py --json compare.json
  python3 python/compare_sdpa.py --backend cuda-sm80 --d 128 --s 8192 16384 --causal yes

SDPA takes (B, H, S, D) and portattn (B, S, H, D): both see the same memory through transposed
views (--layout says which one is the contiguous storage). Exit status: 0 every portattn run
correct, 1 a correctness failure, 2 cannot run (no PyTorch, no CUDA device, no library).
"""
import argparse
import inspect
import json
import math
import os
import statistics
import sys
import time
import warnings

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

PEERS = (("FA2", "FLASH_ATTENTION"), ("cuDNN", "CUDNN_ATTENTION"))
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
    """bench(fn) -> median milliseconds per call."""
    try:
        from triton.testing import do_bench
        params = inspect.signature(do_bench).parameters
    except Exception:
        do_bench, params = None, {}

    def events(fn):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        for _ in range(3):
            fn()
        end.record()
        torch.cuda.synchronize()
        est = max(start.elapsed_time(end) / 3, 1e-3)
        for _ in range(max(1, int(warmup / est))):
            fn()
        pairs = []
        for _ in range(max(1, int(rep / est))):
            s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            s.record()
            fn()
            e.record()
            pairs.append((s, e))
        torch.cuda.synchronize()
        return statistics.median(s.elapsed_time(e) for s, e in pairs)

    def bench(fn):
        fn()
        torch.cuda.synchronize()
        if do_bench is None:
            return float(events(fn))
        if "return_mode" in params:
            r = do_bench(fn, warmup=warmup, rep=rep, return_mode="median")
        elif "quantiles" in params:
            r = do_bench(fn, warmup=warmup, rep=rep, quantiles=[0.5])
        elif "percentiles" in params:
            r = do_bench(fn, warmup=warmup, rep=rep, percentiles=(0.5,))
        else:
            r = do_bench(fn, warmup=warmup, rep=rep)
        return float(r[0] if isinstance(r, (list, tuple)) else r)

    bench.name = "triton.testing.do_bench median" if do_bench else "CUDA events median (triton not found)"
    return bench


def reference(torch, q, k, v, causal):
    """fp32 attention on (B, H, S, D) inputs, in head chunks of at most 2^28 scores."""
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

def run_point(torch, F, portattn, pt, args, ctx, bench, variants):
    """Runs the peers and every portattn variant on one shape; returns the row."""
    dt, d, s, causal = pt
    dtype = getattr(torch, DTYPES[dt])
    h, b = args.hidden // d, max(1, args.tokens // s)
    flops = 4.0 * b * h * s * s * d / (2 if causal else 1)
    row = {"dtype": dt, "d": d, "s": s, "b": b, "h": h, "causal": causal, "layout": args.layout, "flops": flops,
           "impls": {}}
    torch.manual_seed(args.seed)
    shape = (b, h, s, d) if args.layout == "bhsd" else (b, s, h, d)
    q, k, v = (torch.randn(shape, device="cuda", dtype=dtype) for _ in range(3))
    if args.layout == "bhsd":  # SDPA's own layout; portattn gets (B, S, H, D) views
        qs, ks, vs = q, k, v
        qp, kp, vp = (t.transpose(1, 2) for t in (q, k, v))
    else:  # FlashAttention's layout; SDPA gets (B, H, S, D) views
        qp, kp, vp = q, k, v
        qs, ks, vs = (t.transpose(1, 2) for t in (q, k, v))
    t0 = time.time()
    ref = reference(torch, qs, ks, vs, causal)
    torch.cuda.synchronize()
    row["ref_s"] = round(time.time() - t0, 2)

    def sdpa():
        return F.scaled_dot_product_attention(qs, ks, vs, is_causal=causal)

    def run_peer(name):
        res = {}
        try:
            with ctx(name):
                o = sdpa()
                torch.cuda.synchronize()
                res.update(errors(torch, o, ref))
                del o
                if not args.no_bench:
                    ms = bench(sdpa)
                    res.update(ms=ms, tflops=flops / ms / 1e9)
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

    for variant in variants:
        label = "portattn" if variant is None else "portattn[%s]" % variant
        res = {"forced": variant}
        row["impls"][label] = res
        try:
            sel = portattn.which(qp, kp, vp, causal=causal, backend=variant)
            res.update(backend=sel["backend"], kernel=sel["kernel"], reason=sel["reason"])
            o = portattn.flash_attn_func(qp, kp, vp, causal=causal, backend=variant)
            torch.cuda.synchronize()
            res.update(errors(torch, o.transpose(1, 2), ref))
            res["check"] = "PASS" if finite(res["rel_l2"]) and res["rel_l2"] <= row["bound"] else "FAIL"
            if not args.no_bench:
                ob = torch.empty_like(o)
                del o
                ms = bench(lambda: portattn.flash_attn_func(qp, kp, vp, causal=causal, backend=variant, out=ob))
                res.update(ms=ms, tflops=flops / ms / 1e9)
                for plabel, _ in PEERS:
                    pt_ = row["impls"][plabel].get("tflops")
                    res["vs_" + plabel] = res["tflops"] / pt_ if pt_ else None
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
    return row


# ---- output -----------------------------------------------------------------------------------

def fmt_e(x):
    return "%.2e" % x if isinstance(x, float) else "n/a"


def fmt_f(x, spec="%.1f"):
    return spec % x if finite(x) else "n/a"


def print_point(row):
    say("  %-24s %-16s %-16s %11s %9s  %s" % ("implementation", "rel-L2", "max-abs", "ms", "TFLOPS", "notes"))
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
        if r.get("error"):
            notes.append("n/a: " + r["error"] if "rel_l2" not in r else "error: " + r["error"])
        say("  %-24s %-16s %-16s %11s %9s  %s" % (label, fmt_e(r.get("rel_l2")), fmt_e(r.get("max_abs")),
                                                fmt_f(r.get("ms"), "%.3f"), fmt_f(r.get("tflops")),
                                                "  ".join(notes)))


def print_table(rows, variants):
    say("\n| dtype | d | seqlen | causal | portattn | kernel | rel-L2 portattn | FA2 | cuDNN | bound | "
        "TFLOPS portattn | FA2 | cuDNN | vs FA2 | vs cuDNN | check |")
    say("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for row in rows:
        fa, cu = row["impls"].get("FA2", {}), row["impls"].get("cuDNN", {})
        for variant in variants:
            r = row["impls"].get("portattn" if variant is None else "portattn[%s]" % variant, {})
            ratio = lambda x: "%.3fx" % x if finite(x) else "n/a"  # noqa: E731
            say("| %s | %d | %d | %s | %s | %s | %s | %s | %s | %.2e | %s | %s | %s | %s | %s | %s |" % (
                row["dtype"], row["d"], row["s"], "yes" if row["causal"] else "no", variant or "auto",
                r.get("kernel", "-"), fmt_e(r.get("rel_l2")), fmt_e(fa.get("rel_l2")), fmt_e(cu.get("rel_l2")),
                row["bound"], fmt_f(r.get("tflops")), fmt_f(fa.get("tflops")), fmt_f(cu.get("tflops")),
                ratio(r.get("vs_FA2")), ratio(r.get("vs_cuDNN")), r.get("check", "?")))


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
    p.add_argument("--json", help="write the device, settings and every row to this file")
    args = p.parse_args(argv)
    args.dtypes = [x.strip().lower() for x in args.dtype.split(",") if x.strip()]
    for x in args.dtypes:
        if x not in DTYPES:
            p.error("unknown dtype %r (bf16, fp16, fp32)" % x)
    args.backends = [x.strip() for b in args.backend for x in b.split(",") if x.strip() and x.strip() != "auto"]
    if args.no_auto and not args.backends:
        p.error("--no-auto needs --backend")
    return args


def main(argv=None):
    args = parse_args(argv)
    try:
        import torch
        import torch.nn.functional as F
    except ImportError as e:
        say("compare_sdpa: needs PyTorch (%s)" % e)
        return 2
    if not torch.cuda.is_available():
        say("compare_sdpa: no CUDA device visible to PyTorch")
        return 2
    import portattn
    try:
        portattn.load(args.library)
        bes = portattn.backends()
        for be in args.backends:
            portattn.backend_id(be)  # an unknown name is a usage error, before any work
    except (portattn.PortattnLoadError, ValueError) as e:
        say("compare_sdpa: %s" % e)
        return 2
    if not any(b["available"] and b["name"].startswith(("cuda", "hip")) for b in bes):
        say("compare_sdpa: %s has no usable GPU backend:\n  %s" % (portattn.library_path(), "\n  ".join(
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
            "date": time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime())}
    say("compare_sdpa: %s, torch %s (CUDA %s, cuDNN %s), triton %s" % (info["device"], info["torch"],
                                                                     info["cuda"], cudnn, triton_version))
    say("portattn %s from %s; available: %s" % (info["portattn"]["version"], info["portattn"]["library"],
                                                ", ".join(b["name"] for b in bes if b["available"]) or "none"))
    say("timer: %s; TFLOPS = 4*B*H*S^2*D / time (halved when causal); tokens %d, hidden %d, layout %s"
        % (info["timer"] or "none (--no-bench)", args.tokens, args.hidden, args.layout))

    points = [(dt, d, s, c) for dt in args.dtypes for d in args.d for s in args.s
              for c in {"no": [False], "yes": [True], "both": [False, True]}[args.causal]]
    rows, failures, notes = [], [], []
    try:
        for i, pt in enumerate(points):
            dt, d, s, c = pt
            if d <= 0 or s <= 0 or args.hidden % d:
                notes.append("skipped %s d=%d s=%d: hidden %d is not a multiple of d" % (dt, d, s, args.hidden))
                say(notes[-1])
                continue
            say("\n[%d/%d] %s d=%d s=%d b=%d h=%d causal=%s" % (i + 1, len(points), dt, d, s,
                                                              max(1, args.tokens // s), args.hidden // d,
                                                              "yes" if c else "no"))
            try:
                row = run_point(torch, F, portattn, pt, args, ctx, bench, variants)
            except CudaLost:
                raise
            except Exception as e:  # the reference or the set-up failed (out of memory, ...)
                failures.append("%s d=%d s=%d causal=%s: %s" % (dt, d, s, "yes" if c else "no", first_line(e)))
                say("FAIL: " + failures[-1])
                if not cuda_alive(torch):
                    raise CudaLost(failures[-1])
                torch.cuda.empty_cache()
                continue
            torch.cuda.empty_cache()  # the point's tensors are gone: give the memory back for the next
            rows.append(row)
            print_point(row)
            for label, r in row["impls"].items():
                if label.startswith("portattn") and r.get("check") == "FAIL":
                    failures.append("%s d=%d s=%d causal=%s %s: rel-L2 %s > bound %.2e%s" % (
                        dt, d, s, "yes" if c else "no", label, fmt_e(r.get("rel_l2")), row["bound"],
                        " (%s)" % r["error"] if r.get("error") else ""))
    except CudaLost as e:
        failures.append("CUDA context lost, run stopped: %s" % e)
    except KeyboardInterrupt:
        failures.append("interrupted")
    finally:
        if rows:
            print_table(rows, variants)
        runs = [r for row in rows for lab, r in row["impls"].items() if lab.startswith("portattn")]
        n_pass = sum(r.get("check") == "PASS" for r in runs)
        n_na = sum(r.get("check") == "n/a" for r in runs)
        n_fail = len(runs) - n_pass - n_na
        if args.json:
            d = os.path.dirname(os.path.abspath(args.json))
            os.makedirs(d, exist_ok=True)
            with open(args.json, "w") as f:
                json.dump(clean(dict(info, rows=rows, failures=failures, notes=notes,
                                     passed=not failures and n_fail == 0)), f, indent=1)
            say("\nwrote %s" % args.json)
        say("")
        for f_ in failures:
            say("FAIL: " + f_)
        say("compare_sdpa: %d passed, %d failed, %d skipped" % (n_pass, max(n_fail, len(failures)), n_na))
    return 1 if failures or n_fail else 0


if __name__ == "__main__":
    sys.exit(main())
