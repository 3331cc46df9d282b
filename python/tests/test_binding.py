"""Tests of the portattn Python binding, under pytest (conftest.py says which portattn is tested).

  PORTATTN_LIBRARY=build/libportattn.so python3 -m pytest python/tests [-m "not cuda"] [-s]

Without PyTorch: the raw path (forward_raw on ctypes/array buffers, CPU backend) against a
pure-Python reference, errors, struct layout, backends(). With PyTorch: flash_attn_func,
flash_attn_varlen_func and the packed variants on CPU tensors against a float64 reference. The
tests marked cuda run on GPU tensors: they skip only where the machine has no CUDA device.
Without a loadable library every test skips (fails where PORTATTN_LIBRARY names one).
"""
import array
import ctypes
import glob
import math
import os
import random
import struct

import pytest

import portattn
from portattn import Backend, DType, PortattnError, Status

INF = float("inf")
NAN = float("nan")


def expect_raises(exc, fn, *contains):
    try:
        fn()
    except exc as e:
        for c in contains:
            assert c in str(e), "%r not in %r" % (c, str(e))
        return e
    raise AssertionError("%s not raised" % exc.__name__)


# ---- the pure-Python reference and dtype codecs ----------------------------------------------

def ref_seq(Q, K, V, H, Hk, Dv, scale, causal, window, softcap):
    """One sequence: Q[i][h][d], K[j][hk][d], V[j][hk][e] -> O[i][h][e], L[h][i] (bottom-right masks)."""
    sq, sk, g = len(Q), len(K), H // Hk
    wl, wr = window[0], 0 if causal else window[1]
    O = [[[0.0] * Dv for _ in range(H)] for _ in range(sq)]
    L = [[-INF] * sq for _ in range(H)]
    for h in range(H):
        hk = h // g
        for i in range(sq):
            lo = 0 if wl < 0 else max(0, i + sk - sq - wl)
            hi = sk - 1 if wr < 0 else min(sk - 1, i + sk - sq + wr)
            if lo > hi:
                continue
            s = []
            for j in range(lo, hi + 1):
                x = sum(a * b for a, b in zip(Q[i][h], K[j][hk])) * scale
                s.append(softcap * math.tanh(x / softcap) if softcap else x)
            m = max(s)
            w = [math.exp(x - m) for x in s]
            tot = sum(w)
            O[i][h] = [sum(w[j - lo] * V[j][hk][e] for j in range(lo, hi + 1)) / tot for e in range(Dv)]
            L[h][i] = m + math.log(tot)
    return O, L


def f32_round(x):
    return struct.unpack("<f", struct.pack("<f", x))[0]


def enc(dtype, x):
    """Python float -> the stored element (float for F32, uint16 bits for F16/BF16)."""
    if dtype == DType.F32:
        return x
    if dtype == DType.F16:
        return struct.unpack("<H", struct.pack("<e", x))[0]
    bits = struct.unpack("<I", struct.pack("<f", x))[0]
    if math.isnan(x):
        return 0x7FC0
    return ((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16) & 0xFFFF


def dec(dtype, x):
    if dtype == DType.F32:
        return x
    if dtype == DType.F16:
        return struct.unpack("<e", struct.pack("<H", x))[0]
    return struct.unpack("<f", struct.pack("<I", x << 16))[0]


def buffer(dtype, n, fill=NAN, kind="ctypes"):
    if dtype == DType.F32:
        return array.array("f", [fill] * n) if kind == "array" else (ctypes.c_float * n)(*([fill] * n))
    return (ctypes.c_uint16 * n)(*([enc(dtype, fill)] * n))


def rand4(rnd, d0, d1, d2, d3, dtype):
    """Random nested list [d0][d1][d2][d3] of values exactly representable in dtype."""
    return [[[[dec(dtype, enc(dtype, rnd.gauss(0, 1))) for _ in range(d3)] for _ in range(d2)] for _ in range(d1)]
            for _ in range(d0)]


def extent(dims, strides):
    return 1 + sum((n - 1) * s for n, s in zip(dims, strides)) if all(dims) else 0


def store(buf, dtype, T, strides):
    for b, x0 in enumerate(T):
        for s, x1 in enumerate(x0):
            for h, x2 in enumerate(x1):
                for d, x in enumerate(x2):
                    buf[b * strides[0] + s * strides[1] + h * strides[2] + d * strides[3]] = enc(dtype, x)


def load4(buf, dtype, dims, strides):
    return [[[[dec(dtype, buf[b * strides[0] + s * strides[1] + h * strides[2] + d * strides[3]])
               for d in range(dims[3])] for h in range(dims[2])] for s in range(dims[1])] for b in range(dims[0])]


def close(got, want, atol, rtol):
    if math.isinf(want) or math.isnan(want):
        return got == want or (math.isnan(got) and math.isnan(want))
    return abs(got - want) <= atol + rtol * abs(want)


def flat(x):
    if isinstance(x, list):
        for y in x:
            yield from flat(y)
    else:
        yield x


# ---- library, structs, backends --------------------------------------------------------------

def test_struct_layout():
    lib = portattn.load()
    p = portattn.FwdParams()
    lib.portattn_fwd_params_init(ctypes.byref(p))
    assert p.struct_size == ctypes.sizeof(portattn.FwdParams), (p.struct_size, ctypes.sizeof(portattn.FwdParams))
    assert (p.dtype, p.window_left, p.window_right, p.backend, p.softmax_scale) == (DType.BF16, -1, -1, 0, 0.0)
    if ctypes.sizeof(ctypes.c_void_p) == 8:  # LP64: the offsets the C compiler gives (offsetof)
        want = {"dtype": 8, "batch": 16, "q": 72, "k": 112, "v": 152, "o": 192, "lse": 232, "lse_stride": 240,
                "cu_seqlens_q": 264, "cu_seqlens_k": 272, "max_seqlen_q": 280, "softmax_scale": 296,
                "softcap": 300, "causal": 304, "window_left": 312, "window_right": 320, "backend": 328,
                "seqused_k": 336, "block_table": 344, "block_table_stride": 352, "page_size": 360, "num_pages": 368,
                "k_new": 376, "v_new": 416, "seqlen_new": 456, "workspace": 464, "workspace_size": 472,
                "num_splits": 480}
        got = {f: getattr(portattn.FwdParams, f).offset for f in want}
        assert got == want, got
        sizes = [ctypes.sizeof(t) for t in (portattn.FwdParams, portattn.Tensor, portattn.Selection,
                                            portattn.BackendInfo)]
        assert sizes == [488, 40, 644, 184], sizes
    t = lib.portattn_tensor_bhsd(ctypes.c_void_p(64), 3, 5, 7)
    assert t.data == 64 and list(t.stride) == [105, 7, 21, 1], list(t.stride)
    expect_raises(portattn.PortattnLoadError, lambda: portattn.load("/nonexistent/libportattn.so"), "does not exist")
    assert portattn.load() is lib  # a failed explicit load keeps the loaded library


def test_backends_and_version():
    v = portattn.version()
    assert len(v.split(".")) == 3 and v.startswith("0."), v
    assert v == portattn.__version__, "library %s, binding %s" % (v, portattn.__version__)
    bes = portattn.backends()
    assert [b["id"] for b in bes] == list(range(1, 8)), bes
    names = [b["name"] for b in bes]
    assert names == ["cuda-sm100", "cuda-sm90", "cuda-sm80", "hip-cdna", "hip-rdna3", "cuda-generic", "cpu"], names
    cpu = bes[-1]
    assert cpu["compiled"] and cpu["available"] and cpu["detail"], cpu
    for b in bes:
        assert not b["available"] or b["compiled"], b
        assert b["detail"], b
    assert portattn.backend_id("cpu") == Backend.CPU and portattn.backend_id(None) == Backend.AUTO
    assert portattn.backend_id("auto") == Backend.AUTO and portattn.backend_id(6) == Backend.CUDA_GENERIC
    expect_raises(ValueError, lambda: portattn.backend_id("tpu"), "unknown portattn backend", "cpu")
    for b in bes:
        print("   ", b)


def run_raw_case(rnd, dtype=DType.F32, B=2, Sq=5, Sk=7, H=4, Hk=2, D=8, Dv=None, causal=False, window=(-1, -1),
                 softcap=0.0, scale=None, layout="bshd", with_lse=True, kind="ctypes"):
    Dv = D if Dv is None else Dv
    dtype = portattn.dtype_id(dtype)
    Q, K, V = rand4(rnd, B, Sq, H, D, dtype), rand4(rnd, B, Sk, Hk, D, dtype), rand4(rnd, B, Sk, Hk, Dv, dtype)
    if layout == "bshd":
        st = lambda s, h, d: (s * h * d, h * d, d, 1)  # noqa: E731
    elif layout == "bhsd":
        st = lambda s, h, d: (h * s * d, d, s * d, 1)  # noqa: E731
    else:  # padded: gaps between heads and rows, reversed-order batch stride
        st = lambda s, h, d: ((s + 1) * h * (d + 3) + 5, h * (d + 3) + 1, d + 3, 1)  # noqa: E731
    sq_, sk_, sv_, so_ = st(Sq, H, D), st(Sk, Hk, D), st(Sk, Hk, Dv), st(Sq, H, Dv)
    bufs = []
    for T, dims, strides in ((Q, (B, Sq, H, D), sq_), (K, (B, Sk, Hk, D), sk_), (V, (B, Sk, Hk, Dv), sv_)):
        buf = buffer(dtype, extent(dims, strides), 0.0, kind)
        store(buf, dtype, T, strides)
        bufs.append(buf)
    n_o = extent((B, Sq, H, Dv), so_)
    o = buffer(dtype, n_o, NAN, kind)
    lse_stride = (H * (Sq + 2), Sq + 2, 1)
    lse = (ctypes.c_float * (B * H * (Sq + 2)))(*([NAN] * (B * H * (Sq + 2)))) if with_lse else None
    portattn.forward_raw(bufs[0], bufs[1], bufs[2], o, dtype=dtype, batch=B, seqlen_q=Sq, seqlen_k=Sk, heads_q=H,
                         heads_kv=Hk, head_dim_qk=D, head_dim_v=Dv, q_stride=sq_, k_stride=sk_, v_stride=sv_,
                         o_stride=so_, lse=lse, lse_stride=lse_stride if with_lse else None, softmax_scale=scale,
                         softcap=softcap, causal=causal, window_size=window, backend="cpu")
    sc = scale if scale is not None else 1.0 / math.sqrt(D)
    tol = {DType.F32: 2e-6, DType.F16: 2e-3, DType.BF16: 1.6e-2}[dtype]
    got = load4(o, dtype, (B, Sq, H, Dv), so_)
    for b in range(B):
        O, L = ref_seq(Q[b], K[b], V[b], H, Hk, Dv, sc, causal, window, softcap)
        for i in range(Sq):
            for h in range(H):
                for e in range(Dv):
                    assert close(got[b][i][h][e], O[i][h][e], tol, tol), (b, i, h, e, got[b][i][h][e], O[i][h][e])
                if with_lse:
                    g = lse[b * lse_stride[0] + h * lse_stride[1] + i]
                    assert close(g, L[h][i], 1e-5, 1e-5), ("lse", b, h, i, g, L[h][i])
    # Elements outside the strided output (padding) stay poisoned.
    touched = {b * so_[0] + s * so_[1] + h * so_[2] + e for b in range(B) for s in range(Sq) for h in range(H)
               for e in range(Dv)}
    for idx in range(n_o):
        if idx not in touched:
            assert math.isnan(dec(dtype, o[idx])), ("padding written", idx)
    if with_lse:
        for b in range(B):
            for h in range(H):
                for i in range(Sq, Sq + 2):
                    assert math.isnan(lse[b * lse_stride[0] + h * lse_stride[1] + i]), "lse padding written"


def test_raw_cpu_f32():
    rnd = random.Random(1)
    run_raw_case(rnd)  # GQA 4/2, Sq != Sk
    run_raw_case(rnd, kind="array", with_lse=False)
    run_raw_case(rnd, Sq=7, Sk=5, causal=True)  # bottom-right: rows 0 and 1 see no key -> 0, -inf
    run_raw_case(rnd, B=1, Sq=9, Sk=9, H=3, Hk=1, window=(2, 1))  # MQA, sliding window
    run_raw_case(rnd, D=8, Dv=5, softcap=5.0, scale=0.3, layout="bhsd")
    run_raw_case(rnd, Sq=6, Sk=6, causal=True, window=(3, -1), layout="padded")


def test_raw_cpu_f16_bf16():
    rnd = random.Random(2)
    run_raw_case(rnd, dtype=DType.F16, causal=True, Sq=5, Sk=7)
    run_raw_case(rnd, dtype=DType.BF16, layout="bhsd", window=(1, 1))
    run_raw_case(rnd, dtype="bfloat16", layout="padded", with_lse=False)


def test_raw_varlen():
    rnd = random.Random(3)
    cu_q, cu_k = [0, 3, 3, 8, 10], [0, 4, 6, 6, 9]  # seq 1 has no queries, seq 2 no keys
    H, Hk, D = 4, 1, 6
    Tq, Tk = cu_q[-1], cu_k[-1]
    Q, K, V = rand4(rnd, 1, Tq, H, D, DType.F32)[0], rand4(rnd, 1, Tk, Hk, D, DType.F32)[0], \
        rand4(rnd, 1, Tk, Hk, D, DType.F32)[0]
    q, k, v = (buffer(DType.F32, n * h * D, 0.0) for n, h in ((Tq, H), (Tk, Hk), (Tk, Hk)))
    for buf, T in ((q, Q), (k, K), (v, V)):
        store(buf, DType.F32, [T], (0, len(T[0]) * D, D, 1))
    o = buffer(DType.F32, Tq * H * D)
    lse = (ctypes.c_float * (H * Tq))(*([NAN] * (H * Tq)))
    cq, ck = (ctypes.c_int32 * 5)(*cu_q), (ctypes.c_int32 * 5)(*cu_k)
    for causal in (False, True):
        portattn.forward_raw(q, k, v, o, dtype="f32", batch=4, seqlen_q=Tq, seqlen_k=Tk, heads_q=H, heads_kv=Hk,
                             head_dim_qk=D, lse=lse, cu_seqlens_q=cq, cu_seqlens_k=ck, max_seqlen_q=5,
                             max_seqlen_k=4, causal=causal, backend=Backend.CPU)
        got = load4(o, DType.F32, (1, Tq, H, D), (0, H * D, D, 1))[0]
        for b in range(4):
            O, L = ref_seq(Q[cu_q[b]:cu_q[b + 1]], K[cu_k[b]:cu_k[b + 1]], V[cu_k[b]:cu_k[b + 1]], H, Hk, D,
                           1 / math.sqrt(D), causal, (-1, -1), 0.0)
            for i in range(cu_q[b + 1] - cu_q[b]):
                t = cu_q[b] + i
                for h in range(H):
                    assert all(close(x, y, 2e-6, 2e-6) for x, y in zip(got[t][h], O[i][h])), (b, i, h)
                    assert close(lse[h * Tq + t], L[h][i], 1e-5, 1e-5), (b, i, h, lse[h * Tq + t], L[h][i])
    assert all(x == 0.0 for x in flat(got[3:8])) and all(lse[h * Tq + t] == -INF for h in range(H) for t in range(3, 8))


def small_call(**over):
    """Arguments of a valid 1x3x3 (H 2) f32 call on fresh buffers, with overrides."""
    n = 1 * 3 * 2 * 4
    bufs = [buffer(DType.F32, n, 0.5) for _ in range(4)]
    kw = dict(dtype="f32", batch=1, seqlen_q=3, seqlen_k=3, heads_q=2, heads_kv=2, head_dim_qk=4, backend="cpu")
    kw.update(over)
    return bufs, kw


def test_raw_errors():
    bufs, kw = small_call(heads_q=3, heads_kv=2)
    e = expect_raises(PortattnError, lambda: portattn.forward_raw(*bufs, **kw), "PORTATTN_ERROR_INVALID_ARGUMENT",
                      "heads_q = 3 is not a multiple of heads_kv = 2")
    assert e.status == Status.ERROR_INVALID_ARGUMENT and e.status_name == "PORTATTN_ERROR_INVALID_ARGUMENT"
    assert "heads_q = 3" in e.message and e.message == portattn.last_error()
    bufs, kw = small_call()
    expect_raises(PortattnError, lambda: portattn.forward_raw(bufs[0], bufs[1], bufs[2], bufs[0], **kw),
                  "o overlaps q")
    bufs, kw = small_call(q_stride=(24, 8, 4, -1))
    expect_raises(PortattnError, lambda: portattn.forward_raw(*bufs, **kw), "q.stride[3] = -1 is negative")
    bufs, kw = small_call()
    portattn.forward_raw(*bufs, **kw)
    assert portattn.last_error() == ""
    expect_raises(ValueError, lambda: portattn.forward_raw(*bufs, **dict(kw, backend="gpu9000")), "unknown")
    expect_raises(ValueError, lambda: portattn.forward_raw(*bufs, **dict(kw, softmax_scale=0.0)), "softmax_scale")
    expect_raises(TypeError, lambda: portattn.forward_raw(*bufs, **dict(kw, dtype="int8")), "not supported")
    expect_raises(TypeError, lambda: portattn.forward_raw(*bufs[:3], "oops", **kw), "address")
    absent = [b for b in portattn.backends() if not b["available"]]
    if absent:
        e = expect_raises(PortattnError, lambda: portattn.forward_raw(*bufs, **dict(kw, backend=absent[0]["name"])),
                          absent[0]["name"])
        assert e.status == Status.ERROR_BACKEND_UNAVAILABLE, e
    gen = [b for b in portattn.backends() if b["name"] == "cuda-generic" and b["available"]]
    if gen:  # host buffers cannot run on a GPU backend: refused, never a silent fallback
        e = expect_raises(PortattnError, lambda: portattn.forward_raw(*bufs, **dict(kw, backend="cuda-generic")),
                          "host memory")
        assert e.status == Status.ERROR_NOT_SUPPORTED


def test_query_raw():
    bufs, kw = small_call(backend=None)
    sel = portattn.query_raw(*bufs, **kw)
    assert sel["backend"] == "cpu" and sel["backend_id"] == Backend.CPU and sel["kernel"] == "cpu-ref<f32>", sel
    assert "cuda-sm100" in sel["reason"], sel  # every faster backend says why it was passed over
    sel = portattn.query_raw(*bufs, **dict(kw, backend="cpu"))
    assert sel["backend"] == "cpu" and "forced" in sel["reason"], sel
    p = portattn.make_params(*bufs, **kw)
    assert portattn.query(p)["backend"] == "cpu"
    portattn.forward(p)
    print("   ", sel)


# ---- PyTorch ---------------------------------------------------------------------------------

def torch_ref(torch, q, k, v, causal=False, window=(-1, -1), softcap=0.0, scale=None):
    """float64 reference on (B, S, H, D) tensors: (out (B, Sq, H, Dv), lse (B, H, Sq))."""
    q, k, v = (t.detach().to("cpu", torch.float64) for t in (q, k, v))
    B, Sq, H, D = q.shape
    Sk, Hk = k.shape[1], k.shape[2]
    k, v = k.repeat_interleave(H // Hk, dim=2), v.repeat_interleave(H // Hk, dim=2)
    s = torch.einsum("bqhd,bkhd->bhqk", q, k) * (scale if scale is not None else D ** -0.5)
    if softcap:
        s = softcap * torch.tanh(s / softcap)
    i = torch.arange(Sq).view(-1, 1)
    j = torch.arange(Sk).view(1, -1)
    wl, wr = window[0], 0 if causal else window[1]
    ok = torch.ones(Sq, Sk, dtype=torch.bool)
    if wl >= 0:
        ok &= j >= i + Sk - Sq - wl
    if wr >= 0:
        ok &= j <= i + Sk - Sq + wr
    s = s.masked_fill(~ok, -INF)
    lse = torch.logsumexp(s, dim=-1)
    p = torch.nan_to_num(torch.exp(s - lse.unsqueeze(-1)), nan=0.0)
    return torch.einsum("bhqk,bkhd->bqhd", p, v), lse


def rel_l2(torch, got, want):
    got, want = got.detach().to("cpu", torch.float64), want.detach().to("cpu", torch.float64)
    if not torch.isfinite(got).all():
        return INF
    return ((got - want).norm() / want.norm().clamp_min(1e-30)).item()


def check_lse(torch, got, want, tol):
    got = got.detach().to("cpu", torch.float64)
    assert got.shape == want.shape, (got.shape, want.shape)
    inf = torch.isinf(want)
    assert torch.equal(torch.isinf(got), inf), "lse -inf rows differ"
    assert torch.equal(got[inf], want[inf])
    err = ((got - want).abs() / (1 + want.abs()))[~inf]
    assert err.numel() == 0 or err.max().item() <= tol, err.max().item()


TOL = {"float32": 1e-5, "float16": 5e-3, "bfloat16": 1.5e-2}


def unsupported(e, backend, sel):
    """A forced backend may refuse a shape or dtype it does not take: the case is then not run. Only
    NOT_SUPPORTED naming that backend counts, and only where the automatic choice `sel` for the same
    call is another backend (a backend that auto would pick must not refuse when forced)."""
    if backend is None or e.status != Status.ERROR_NOT_SUPPORTED:
        return False
    assert backend in e.message, (backend, e.message)
    assert sel["backend"] != backend, ("auto picks %s, which refuses when forced: %s" % (backend, e.message))
    return True


DENSE_CASES = [dict(B=2, Sq=37, Sk=53, H=4, Hk=2, D=32),
               dict(B=1, Sq=53, Sk=37, H=6, Hk=1, D=64, causal=True),  # MQA; rows with no key
               dict(B=3, Sq=64, Sk=64, H=2, Hk=2, D=16, window=(5, 3)),
               dict(B=2, Sq=19, Sk=29, H=4, Hk=4, D=40, Dv=24, softcap=7.5, scale=0.2, causal=True, window=(7, -1)),
               dict(B=2, Sq=33, Sk=33, H=8, Hk=2, D=64, layout="bhsd", causal=True),
               dict(B=2, Sq=130, Sk=70, H=4, Hk=2, D=128, causal=True, softcap=10.0),
               dict(B=1, Sq=17, Sk=40, H=2, Hk=1, D=24, layout="sliced")]


def dense_cases(torch, device, dtypes, backend):
    """flash_attn_func on `device`: GQA, causal/window/softcap, LSE, strided views, out=.
    Returns (cases run, cases the forced backend refused)."""
    g = torch.Generator().manual_seed(4)
    ran = refused = 0
    for dt in dtypes:
        dtype = getattr(torch, dt)
        for c in DENSE_CASES:
            B, Sq, Sk, H, Hk, D = (c[x] for x in ("B", "Sq", "Sk", "H", "Hk", "D"))
            Dv = c.get("Dv", D)
            layout = c.get("layout", "bshd")

            def make(S, Hh, Dd):
                if layout == "bhsd":  # (B, H, S, D) storage, transposed view
                    return torch.randn(B, Hh, S, Dd, generator=g).to(device, dtype).transpose(1, 2)
                if layout == "sliced":  # a view into a wider tensor: every stride is unusual
                    return torch.randn(B, S, Hh + 1, Dd + 8, generator=g).to(device, dtype)[:, :, 1:, 3:3 + Dd]
                return torch.randn(B, S, Hh, Dd, generator=g).to(device, dtype)

            q, k, v = make(Sq, H, D), make(Sk, Hk, D), make(Sk, Hk, Dv)
            kw = dict(causal=c.get("causal", False), window_size=c.get("window", (-1, -1)),
                      softcap=c.get("softcap", 0.0), softmax_scale=c.get("scale"))
            try:
                out, lse = portattn.flash_attn_func(q, k, v, return_lse=True, backend=backend, **kw)
            except PortattnError as e:
                if not unsupported(e, backend, portattn.which(q, k, v, **kw)):
                    raise
                refused += 1
                continue
            want, want_lse = torch_ref(torch, q, k, v, kw["causal"], kw["window_size"], kw["softcap"],
                                       kw["softmax_scale"])
            assert out.shape == (B, Sq, H, Dv) and out.dtype == dtype and out.device == q.device, out.shape
            assert lse.shape == (B, H, Sq) and lse.dtype == torch.float32, lse.shape
            err = rel_l2(torch, out, want)
            assert err <= TOL[dt], (backend, dt, c, err)
            check_lse(torch, lse, want_lse, 1e-4 if dt == "float32" else 1e-3)
            # out= into a strided buffer, no LSE (a forced fast backend may refuse its strides)
            buf = torch.full((B, H, Sq, Dv + 2), NAN, dtype=dtype, device=device)
            o2 = buf[..., :Dv].transpose(1, 2)
            try:
                r = portattn.flash_attn_func(q, k, v, out=o2, backend=backend, **kw)
            except PortattnError as e:
                if not unsupported(e, backend, portattn.which(q, k, v, out=o2, **kw)):
                    raise
                refused += 1
                continue
            assert r is o2
            assert rel_l2(torch, o2, want) <= TOL[dt], (backend, dt, c, "out=")
            assert torch.isnan(buf[..., Dv:]).all(), "padding of out= written"
            ran += 1
    return ran, refused


def varlen_cases(torch, device, dtypes, backend):
    """flash_attn_varlen_func with empty sequences, causal and window, LSE. Returns (ran, refused)."""
    g = torch.Generator().manual_seed(5)
    cu_q_l, cu_k_l = [0, 17, 17, 40, 41], [0, 30, 35, 35, 70]  # an empty query seq and an empty key seq
    H, Hk = 4, 2
    ran = refused = 0
    for D in (32, 128):
        for dt in dtypes:
            dtype = getattr(torch, dt)
            ran_dt = 0  # the extra calls below only where this dtype ran (a forced backend may refuse it)
            q = torch.randn(cu_q_l[-1], H, D, generator=g).to(device, dtype)
            k = torch.randn(cu_k_l[-1], Hk, D, generator=g).to(device, dtype)
            v = torch.randn(cu_k_l[-1], Hk, D, generator=g).to(device, dtype)
            cu_q = torch.tensor(cu_q_l, dtype=torch.int32, device=device)
            cu_k = torch.tensor(cu_k_l, dtype=torch.int32, device=device)
            for causal, window in ((False, (-1, -1)), (True, (-1, -1)), (False, (4, 2))):
                try:
                    out, lse = portattn.flash_attn_varlen_func(q, k, v, cu_q, cu_k, 23, 35, causal=causal,
                                                               window_size=window, return_lse=True, backend=backend)
                except PortattnError as e:
                    sel = portattn.which(q, k, v, cu_seqlens_q=cu_q, cu_seqlens_k=cu_k, max_seqlen_q=23,
                                         max_seqlen_k=35, causal=causal, window_size=window)
                    if not unsupported(e, backend, sel):
                        raise
                    refused += 1
                    continue
                assert out.shape == q.shape and lse.shape == (H, cu_q_l[-1]) and lse.dtype == torch.float32
                for b in range(4):
                    a, z, ka, kz = cu_q_l[b], cu_q_l[b + 1], cu_k_l[b], cu_k_l[b + 1]
                    if a == z:
                        continue
                    if kz == ka:  # no keys: zeros and -inf
                        assert (out[a:z].float() == 0).all() and torch.isinf(lse[:, a:z]).all()
                        continue
                    want, want_lse = torch_ref(torch, q[None, a:z], k[None, ka:kz], v[None, ka:kz], causal, window)
                    assert rel_l2(torch, out[None, a:z], want) <= TOL[dt], (backend, dt, D, b, causal, window)
                    check_lse(torch, lse[:, a:z], want_lse[0], 1e-4 if dt == "float32" else 1e-3)
                ran += 1
                ran_dt += 1
            if ran_dt:
                # max_seqlen above the totals (flash_attn allows generous bounds) is clamped, not refused
                portattn.flash_attn_varlen_func(q, k, v, cu_q, cu_k, 10 ** 6, 10 ** 6, backend=backend)
                # a batch of zero sequences is a no-op
                z = torch.zeros(1, dtype=torch.int32, device=device)
                portattn.flash_attn_varlen_func(q, k, v, z, z, 0, 0, backend=backend)
    return ran, refused


def torch_error_cases(torch, device):
    q = torch.randn(1, 8, 4, 16, device=device)
    k = torch.randn(1, 8, 2, 16, device=device)
    expect_raises(ValueError, lambda: portattn.flash_attn_func(q, k, k, dropout_p=0.1), "dropout")
    expect_raises(NotImplementedError, lambda: portattn.flash_attn_func(q, k, k, alibi_slopes=q), "ALiBi")
    expect_raises(ValueError, lambda: portattn.flash_attn_func(q, k[:, :, :, :8], k), "shapes")
    expect_raises(ValueError, lambda: portattn.flash_attn_func(q, torch.randn(2, 8, 2, 16, device=device), k), "shapes")
    expect_raises(ValueError, lambda: portattn.flash_attn_func(q, k.half(), k), "float16")
    expect_raises(TypeError, lambda: portattn.flash_attn_func(q.double(), k.double(), k.double()), "float64")
    expect_raises(TypeError, lambda: portattn.flash_attn_func(q.int(), k.int(), k.int()), "int32")
    expect_raises(ValueError, lambda: portattn.flash_attn_func(q[0], k, k), "4 dimensions")
    expect_raises(ValueError, lambda: portattn.flash_attn_func(q, k, k, out=torch.empty(1, 8, 4, 8, device=device)),
                  "out is")
    k3 = torch.randn(1, 8, 3, 16, device=device)
    e = expect_raises(PortattnError, lambda: portattn.flash_attn_func(q, k3, k3), "not a multiple of heads_kv")
    assert e.status == Status.ERROR_INVALID_ARGUMENT
    expect_raises(PortattnError, lambda: portattn.flash_attn_func(q, k, k, out=q), "o overlaps q")
    qv, kv = q[0], k[0]
    cu = torch.tensor([0, 8], dtype=torch.int32, device=device)
    expect_raises(TypeError, lambda: portattn.flash_attn_varlen_func(qv, kv, kv, cu.long(), cu, 8, 8), "int32")
    expect_raises(ValueError, lambda: portattn.flash_attn_varlen_func(
        qv, kv, kv, cu, torch.tensor([0, 4, 8], dtype=torch.int32, device=device), 8, 8), "entries")
    if device == "cpu":  # host cu_seqlens are validated in full by the library
        bad = torch.tensor([0, 9], dtype=torch.int32)
        expect_raises(PortattnError, lambda: portattn.flash_attn_varlen_func(qv, kv, kv, bad, cu, 8, 8), "exceeds")


def test_torch_cpu():
    torch = pytest.importorskip("torch")
    n, _ = dense_cases(torch, "cpu", ["float32", "bfloat16", "float16"], "cpu")
    varlen_cases(torch, "cpu", ["float32", "bfloat16"], "cpu")
    torch_error_cases(torch, "cpu")
    # CPU tensors are differentiable (test_autograd.py); the guard below covers devices without a backward
    plan_cases(torch, "cpu")
    kvcache_cases(torch, "cpu")
    fa2_habit_cases(torch, "cpu")
    q = torch.randn(2, 16, 4, 32)
    sel = portattn.which(q, q, q, causal=True)
    assert sel["backend"] == "cpu" and sel["kernel"] == "cpu-ref<f32>", sel
    cu = torch.tensor([0, 16, 32], dtype=torch.int32)
    sel = portattn.which(q.view(32, 4, 32), q.view(32, 4, 32), q.view(32, 4, 32), cu_seqlens_q=cu, cu_seqlens_k=cu,
                         max_seqlen_q=16, max_seqlen_k=16)
    assert sel["backend"] == "cpu", sel
    out = portattn.flash_attn_func(q, q, q)  # auto picks the CPU for host tensors, on GPU machines too
    assert rel_l2(torch, out, torch_ref(torch, q, q, q)[0]) <= 1e-5
    assert n == 3 * len(DENSE_CASES), n


def kvcache_cases(torch, device):
    """flash_attn_with_kvcache against the float64 reference over the keys each sequence holds:
    contiguous and paged caches (a shuffled page table), decode and chunked prefill, GQA, causal,
    append in place (the new rows written, every other row of the cache untouched), LSE."""
    dt = torch.bfloat16 if device == "cuda" else torch.float32
    tol = TOL["bfloat16" if device == "cuda" else "float32"]
    g = torch.Generator().manual_seed(11)
    B, H, Hk, D, page, per_seq = 3, 8, 2, 64, 16, 4
    cap = page * per_seq
    used = torch.tensor([5, 30, 47], dtype=torch.int32)
    for paged in (False, True):
        for sq, snew, causal in ((1, 0, False), (1, 1, True), (6, 0, True), (5, 3, True)):
            shape = (B * per_seq + 2, page, Hk, D) if paged else (B, cap, Hk, D)
            kc, vc = (torch.randn(shape, generator=g).to(device, dt) for _ in range(2))
            q = torch.randn(B, sq, H, D, generator=g).to(device, dt)
            kn, vn = (torch.randn(B, snew, Hk, D, generator=g).to(device, dt) for _ in range(2)) if snew else (None, None)
            table = torch.randperm(B * per_seq + 2, generator=g)[:B * per_seq].view(B, per_seq).to(torch.int32)
            before = (kc.clone(), vc.clone())
            with torch.no_grad():
                out, lse = portattn.flash_attn_with_kvcache(
                    q, kc, vc, kn, vn, cache_seqlens=used.to(device), block_table=table.to(device) if paged else None,
                    causal=causal, return_softmax_lse=True)
            for b in range(B):
                rows = [(int(table[b, j // page]), j % page) if paged else (b, j) for j in range(cap)]
                n = int(used[b]) + snew
                keys = torch.stack([kc[r] for r in rows[:n]])[None]
                vals = torch.stack([vc[r] for r in rows[:n]])[None]
                want, want_lse = torch_ref(torch, q[b:b + 1], keys, vals, causal=causal)
                assert rel_l2(torch, out[b:b + 1], want) <= tol, (device, paged, sq, snew, b)
                check_lse(torch, lse[b:b + 1], want_lse, 1e-4 if dt == torch.float32 else 1e-3)
                for j in range(snew):  # the appended rows hold k/v, nothing else moved
                    r = rows[int(used[b]) + j]
                    assert torch.equal(kc[r], kn[b, j]) and torch.equal(vc[r], vn[b, j]), (paged, b, j)
                    before[0][r], before[1][r] = kn[b, j], vn[b, j]
            assert torch.equal(kc, before[0]) and torch.equal(vc, before[1]), ("cache rows changed", paged, sq)
    q = torch.randn(B, 1, H, D).to(device, dt)
    kc = torch.randn(B, cap, Hk, D).to(device, dt)
    with torch.no_grad():
        full = portattn.flash_attn_with_kvcache(q, kc, kc)  # no cache_seqlens: the whole cache
        assert rel_l2(torch, full, torch_ref(torch, q, kc, kc)[0]) <= tol
        expect_raises(NotImplementedError, lambda: portattn.flash_attn_with_kvcache(q, kc, kc, rotary_cos=kc),
                      "rotary_cos")
        expect_raises(ValueError, lambda: portattn.flash_attn_with_kvcache(q, kc, kc, k=kc), "k and v")
        expect_raises(ValueError, lambda: portattn.flash_attn_with_kvcache(q, kc, kc, cache_seqlens=cap + 1),
                      "capacity")
    e = expect_raises(PortattnError, lambda: portattn.flash_attn_with_kvcache(
        q, kc, kc, cache_seqlens=torch.full((B,), cap, dtype=torch.int32, device=device), k=q[:, :, :Hk],
        v=q[:, :, :Hk]))  # no room to append: the library refuses and writes nothing
    assert e.status == Status.ERROR_INVALID_ARGUMENT, e


def plan_cases(torch, device):
    """A repeated call shape takes the planned path: fresh data each call gives fresh results, out=
    and return_lse work, the library's per-call checks still refuse (out aliasing q), a varlen plan
    reads the offsets of each call."""
    dt = torch.bfloat16 if device == "cuda" else torch.float32
    tol = TOL["bfloat16" if device == "cuda" else "float32"]
    shape = (2, 24, 4, 32)
    for rep in range(3):
        q, k, v = (torch.randn(shape, device=device).to(dt) for _ in range(3))
        out, lse = portattn.flash_attn_func(q, k, v, causal=True, return_lse=True)
        want, want_lse = torch_ref(torch, q, k, v, causal=True)
        assert rel_l2(torch, out, want) <= tol, (device, rep)
        check_lse(torch, lse, want_lse, 1e-4 if dt == torch.float32 else 1e-3)
        buf = torch.full(shape, NAN, device=device, dtype=dt)
        assert portattn.flash_attn_func(q, k, v, causal=True, out=buf) is buf
        assert rel_l2(torch, buf, want) <= tol, (device, rep, "out=")
        e = expect_raises(PortattnError, lambda: portattn.flash_attn_func(q, k, v, causal=True, out=q))
        assert e.status == Status.ERROR_INVALID_ARGUMENT, e
        g = q.clone().requires_grad_(True)
        # differentiable on both devices: a planned shape must not bypass autograd
        assert portattn.flash_attn_func(g, k, v, causal=True).grad_fn is not None
    for rep in range(3):
        lens = [3 + rep, 11, 7 - rep]
        cu = torch.tensor([0] + [sum(lens[:i + 1]) for i in range(3)], dtype=torch.int32, device=device)
        q, k, v = (torch.randn(21, 4, 32, device=device).to(dt) for _ in range(3))
        out = portattn.flash_attn_varlen_func(q, k, v, cu, cu, 11, 11, causal=True)
        for b in range(3):
            a, z = int(cu[b]), int(cu[b + 1])
            want = torch_ref(torch, q[None, a:z], k[None, a:z], v[None, a:z], causal=True)[0]
            assert rel_l2(torch, out[None, a:z], want) <= tol, (device, rep, b)


def graph_cases(torch):
    """flash_attn_func captured with torch.cuda.graph and replayed on new inputs (copied into the
    captured tensors) gives the uncaptured call's result bit for bit: prefill and a split-KV decode
    whose workspace comes from torch's allocator (the graph's pool)."""
    for shape_q, shape_kv, causal in (((2, 256, 8, 64), (2, 256, 8, 64), True),
                                      ((4, 1, 32, 128), (4, 4096, 8, 128), False)):
        q = torch.randn(shape_q, device="cuda", dtype=torch.bfloat16)
        k, v = (torch.randn(shape_kv, device="cuda", dtype=torch.bfloat16) for _ in range(2))
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):  # warm-up off the capture stream, as torch.cuda.graph asks
            portattn.flash_attn_func(q, k, v, causal=causal)
        torch.cuda.current_stream().wait_stream(side)
        g = torch.cuda.CUDAGraph()
        with torch.cuda.graph(g):
            out = portattn.flash_attn_func(q, k, v, causal=causal)
        for _ in range(3):
            for t in (q, k, v):
                t.copy_(torch.randn_like(t))
            g.replay()
            want = portattn.flash_attn_func(q, k, v, causal=causal)
            torch.cuda.synchronize()
            assert torch.equal(out, want), ("graph replay differs", shape_q)
            assert rel_l2(torch, out, torch_ref(torch, q, k, v, causal=causal)[0]) <= TOL["bfloat16"]


def fa2_habit_cases(torch, device):
    """What FlashAttention-2 code does: return_attn_probs=True for the LSE, and the packed entry
    points (strided views of qkv / kv), on fresh inputs into poisoned outputs."""
    seed = int(os.environ.get("PORTATTN_TEST_SEED") or int.from_bytes(os.urandom(4), "little"))
    print("fa2_habit_cases(%s) seed %d (PORTATTN_TEST_SEED repeats it)" % (device, seed))
    g = torch.Generator().manual_seed(seed)
    rnd = lambda *shape: torch.randn(*shape, generator=g).to(device)  # noqa: E731
    poison = lambda *shape: torch.full(shape, NAN, device=device)  # noqa: E731
    B, S, Sk, H, Hk, D = 2, 19, 23, 4, 2, 32
    q, k, v = rnd(B, S, H, D), rnd(B, Sk, Hk, D), rnd(B, Sk, Hk, D)
    want, want_lse = torch_ref(torch, q, k, v, causal=True)
    res = portattn.flash_attn_func(q, k, v, causal=True, return_attn_probs=True, out=poison(B, S, H, D))
    assert isinstance(res, tuple) and len(res) == 3 and res[2] is None, type(res)
    assert rel_l2(torch, res[0], want) <= TOL["float32"]
    check_lse(torch, res[1], want_lse, 1e-4)
    out, lse = portattn.flash_attn_func(q, k, v, causal=True, return_lse=True)
    assert torch.equal(out, res[0]) and torch.equal(lse, res[1])
    assert len(portattn.flash_attn_func(q, k, v, return_lse=True, return_attn_probs=True)) == 3

    qkv = rnd(B, S, 3, H, D)
    o = poison(B, S, H, D)
    out, lse, none = portattn.flash_attn_qkvpacked_func(qkv, 0.0, 0.3, False, (5, 2), return_attn_probs=True, out=o)
    want, want_lse = torch_ref(torch, qkv[:, :, 0], qkv[:, :, 1], qkv[:, :, 2], window=(5, 2), scale=0.3)
    assert out is o and none is None and rel_l2(torch, out, want) <= TOL["float32"]
    check_lse(torch, lse, want_lse, 1e-4)
    kv = rnd(B, Sk, 2, Hk, D)
    out = portattn.flash_attn_kvpacked_func(q, kv, causal=True, softcap=4.0)
    want = torch_ref(torch, q, kv[:, :, 0], kv[:, :, 1], causal=True, softcap=4.0)[0]
    assert rel_l2(torch, out, want) <= TOL["float32"]

    cu_l, cuk_l = [0, 7, 7, 19], [0, 9, 12, 23]
    cu, cuk = (torch.tensor(c, dtype=torch.int32, device=device) for c in (cu_l, cuk_l))
    qkv3, q3, kv3 = rnd(19, 3, H, D), rnd(19, H, D), rnd(23, 2, Hk, D)
    out, lse, none = portattn.flash_attn_varlen_qkvpacked_func(qkv3, cu, 12, causal=True, return_attn_probs=True)
    out2, lse2 = portattn.flash_attn_varlen_kvpacked_func(q3, kv3, cu, cuk, 12, 11, return_lse=True)
    assert none is None and lse.shape == (H, 19) and lse2.shape == (H, 19)
    for b in (0, 2):
        a, z, ka, kz = cu_l[b], cu_l[b + 1], cuk_l[b], cuk_l[b + 1]
        want = torch_ref(torch, qkv3[None, a:z, 0], qkv3[None, a:z, 1], qkv3[None, a:z, 2], causal=True)[0]
        assert rel_l2(torch, out[None, a:z], want) <= TOL["float32"], b
        want = torch_ref(torch, q3[None, a:z], kv3[None, ka:kz, 0], kv3[None, ka:kz, 1])[0]
        assert rel_l2(torch, out2[None, a:z], want) <= TOL["float32"], b

    expect_raises(ValueError, lambda: portattn.flash_attn_qkvpacked_func(rnd(B, S, 2, H, D)), "qkv must have shape")
    expect_raises(ValueError, lambda: portattn.flash_attn_kvpacked_func(q, rnd(B, Sk, Hk, D)), "kv must have shape")
    expect_raises(TypeError, lambda: portattn.flash_attn_varlen_kvpacked_func(q3, [1], cu, cuk, 12, 11), "torch.Tensor")
    expect_raises(ValueError, lambda: portattn.flash_attn_qkvpacked_func(qkv, dropout_p=0.5), "dropout")
    # differentiable: the gradient reaches the packed tensor through its views (the same bits on the CPU;
    # on a GPU the strided and the contiguous call may take different forward kernels)
    packed = qkv.clone().requires_grad_(True)
    portattn.flash_attn_qkvpacked_func(packed, causal=True).sum().backward()
    q1, k1, v1 = (qkv[:, :, i].clone().requires_grad_(True) for i in range(3))
    portattn.flash_attn_func(q1, k1, v1, causal=True).sum().backward()
    want = torch.stack([q1.grad, k1.grad, v1.grad], 2)
    assert torch.equal(packed.grad, want) if device == "cpu" else rel_l2(torch, packed.grad, want) <= TOL["float32"]


def grad_guard_cases(torch, device, backend):
    """`backend` forced with inputs that require grad in grad mode: either a working gradient, or (a
    backend without a backward pass) NotImplementedError instead of a result with no autograd history,
    while no_grad, inference_mode and detached inputs run. Returns 1 when the guard was checked, 0 when
    the backend has a backward or does not take the shape."""
    q = torch.randn(1, 128, 2, 64, device=device, dtype=torch.bfloat16)
    k, v = torch.randn_like(q), torch.randn_like(q)
    cu = torch.tensor([0, 128], dtype=torch.int32, device=device)
    varlen = lambda q, k, v: portattn.flash_attn_varlen_func(  # noqa: E731
        q.view(128, 2, 64), k.view(128, 2, 64), v.view(128, 2, 64), cu, cu, 128, 128, backend=backend)
    dense = lambda q, k, v: portattn.flash_attn_func(q, k, v, backend=backend)  # noqa: E731
    try:
        with torch.no_grad():
            dense(q, k, v), varlen(q, k, v)
    except PortattnError:
        return 0  # the forward declines the shape: nothing to guard here
    g = q.clone().requires_grad_(True)
    try:
        out = dense(g, k, v)
    except NotImplementedError as e:
        assert "no backward pass" in str(e) and backend in str(e), e
    else:  # a backward exists: the gradient must arrive
        out.float().sum().backward()
        assert g.grad is not None and torch.isfinite(g.grad).all() and g.grad.abs().sum() > 0, backend
        return 0
    for name in ("q", "k", "v"):
        args = dict(q=q, k=k, v=v)
        args[name] = args[name].clone().requires_grad_(True)
        e = expect_raises(NotImplementedError, lambda: dense(args["q"], args["k"], args["v"]),
                          "no backward pass", name + " requires grad")
        assert "no_grad" in str(e), e
        expect_raises(NotImplementedError, lambda: varlen(args["q"], args["k"], args["v"]), "no backward pass")
        with torch.no_grad():
            out = dense(args["q"], args["k"], args["v"])
        assert not out.requires_grad
        with torch.inference_mode():
            varlen(args["q"], args["k"], args["v"])
        dense(*(args[n].detach() for n in ("q", "k", "v")))
        assert portattn.which(args["q"], args["k"], args["v"], backend=backend)["backend"] == backend
    expect_raises(NotImplementedError, lambda: dense(g, g, g), "q, k, v require grad")
    return 1


def cuda_device_present():
    """Whether the machine has an NVIDIA GPU, from the driver's own files: neither PyTorch nor the
    library decides whether the CUDA tests run."""
    return bool(glob.glob("/proc/driver/nvidia/gpus/*") or glob.glob("/dev/nvidia[0-9]*"))


@pytest.mark.cuda
def test_torch_cuda():
    if not cuda_device_present():
        pytest.skip("no CUDA device on this machine")
    import torch  # a CUDA machine without PyTorch fails here: these tests need it
    assert torch.cuda.is_available(), "a CUDA device exists but PyTorch %s cannot use it" % torch.__version__
    gpu = [b["name"] for b in portattn.backends() if b["available"] and b["name"].startswith(("cuda", "hip"))]
    assert gpu, "a CUDA device exists but %s has no GPU backend available: %s" % (
        portattn.library_path(), portattn.backends())
    q = torch.randn(2, 128, 8, 64, device="cuda", dtype=torch.bfloat16)
    sel = portattn.which(q, q, q, causal=True)
    assert sel["backend"] in gpu, sel
    print("    auto on %s: %s %s" % (torch.cuda.get_device_name(), sel["backend"], sel["kernel"]), flush=True)
    for be in [None] + gpu:
        dense = dense_cases(torch, "cuda", ["bfloat16", "float16", "float32"], be)
        varlen = varlen_cases(torch, "cuda", ["bfloat16", "float16", "float32"], be)
        print("    %s: dense %d ran, %d refused; varlen %d ran, %d refused"
              % (be or "auto", dense[0], dense[1], varlen[0], varlen[1]), flush=True)
        assert be is not None or (dense[0] and varlen[0]), "auto ran no case"
        assert dense[0] + varlen[0] > 0, "forced %s refused every case: nothing of it was tested" % be
        torch.cuda.synchronize()
    torch_error_cases(torch, "cuda")
    guarded = [be for be in gpu if grad_guard_cases(torch, "cuda", be)]
    print("    grad guard checked on the backends without a backward pass: %s" % (guarded or "none"), flush=True)
    plan_cases(torch, "cuda")
    kvcache_cases(torch, "cuda")
    graph_cases(torch)
    fa2_habit_cases(torch, "cuda")
    # A side stream: the launch goes on the current stream, ordered after the inputs were written.
    s = torch.cuda.Stream()
    x = torch.randn(4, 256, 8, 64, device="cuda", dtype=torch.bfloat16)
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        y = x * 2
        out = portattn.flash_attn_func(y, y, y, causal=True)
    torch.cuda.current_stream().wait_stream(s)
    torch.cuda.synchronize()
    assert rel_l2(torch, out, torch_ref(torch, y, y, y, causal=True)[0]) <= TOL["bfloat16"]
    if torch.cuda.device_count() > 1:  # a tensor on another device than the current one
        x1 = x.to("cuda:1")
        out = portattn.flash_attn_func(x1, x1, x1)
        torch.cuda.synchronize(1)
        assert out.device == x1.device and rel_l2(torch, out, torch_ref(torch, x1, x1, x1)[0]) <= TOL["bfloat16"]
