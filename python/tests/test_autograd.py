"""Gradients through portattn.flash_attn_func / flash_attn_varlen_func on CPU tensors, under pytest.

  PORTATTN_LIBRARY=build/libportattn.so python3 -m pytest python/tests/test_autograd.py -s

Against autograd through a float64 PyTorch math attention (GQA, MQA, Dqk != Dv, causal with rows that
see no key, windows, softcap, scale, varlen with an empty sequence; f32 and bf16), torch.autograd.gradcheck
on a tiny f32 call, the autograd contract (which inputs get gradients, LSE, out=, plans, determinism), and
a two-layer attention model trained for 300 steps beside the same model on the math attention.
Fresh random inputs each run; the seed is printed (PORTATTN_TEST_SEED repeats it). Skips without PyTorch.
"""
import os
import time

import pytest

import portattn

torch = pytest.importorskip("torch")


@pytest.fixture(autouse=True)
def seed():
    """Fresh random inputs for every test, the seed printed so that a failure can be repeated."""
    value = int(os.environ.get("PORTATTN_TEST_SEED") or time.time_ns() % (1 << 31))
    print("seed %d (rerun with PORTATTN_TEST_SEED=%d)" % (value, value))
    torch.manual_seed(value)


def ref_attention(torch, q, k, v, causal=False, window=(-1, -1), softcap=0.0, scale=None):
    """Math attention on (B, S, H, D) tensors with PyTorch ops (bottom-right masks, GQA by repetition);
    rows that see no key give 0, with no NaN anywhere in the graph."""
    sq, sk, g = q.shape[1], k.shape[1], q.shape[2] // k.shape[2]
    k, v = k.repeat_interleave(g, dim=2), v.repeat_interleave(g, dim=2)
    s = torch.einsum("bqhd,bkhd->bhqk", q, k) * (scale if scale is not None else q.shape[3] ** -0.5)
    if softcap:
        s = softcap * torch.tanh(s / softcap)
    i, j = torch.arange(sq)[:, None], torch.arange(sk)[None, :]
    wl, wr = window[0], 0 if causal else window[1]
    seen = torch.ones(sq, sk, dtype=torch.bool)
    if wl >= 0:
        seen &= j >= i + sk - sq - wl
    if wr >= 0:
        seen &= j <= i + sk - sq + wr
    none = ~seen.any(-1, keepdim=True)
    p = torch.softmax(s.masked_fill(~seen, float("-inf")).masked_fill(none, 0.0), -1).masked_fill(~seen, 0.0)
    return torch.einsum("bhqk,bkhd->bqhd", p, v)


def ref_varlen(torch, q, k, v, cu_q, cu_k, **kw):
    outs = []
    for b in range(len(cu_q) - 1):
        qs, ks = slice(cu_q[b], cu_q[b + 1]), slice(cu_k[b], cu_k[b + 1])
        outs.append(ref_attention(torch, q[None, qs], k[None, ks], v[None, ks], **kw)[0])
    return torch.cat(outs)


def grads(torch, fn, inputs, dout):
    xs = [x.detach().clone().requires_grad_(True) for x in inputs]
    out = fn(*xs)
    out.backward(dout)
    return out.detach(), [x.grad for x in xs]


def max_err(torch, got, ref):
    return (got.double() - ref).abs().max().item(), ref.abs().max().item()


DENSE = [  # (name, B, Sq, Sk, H, Hk, D, Dv, kwargs, amplitude of q and k)
    ("gqa4_2_causal", 2, 13, 13, 4, 2, 16, 16, dict(causal=True), 1),
    ("mqa_dqk16_dv8_window", 1, 11, 17, 3, 1, 16, 8, dict(window_size=(3, 1)), 1),
    ("causal_sq9_sk5_nokey_rows", 2, 9, 5, 2, 2, 8, 8, dict(causal=True), 1),
    ("softcap5", 2, 10, 12, 2, 1, 8, 8, dict(softcap=5.0), 4),
    ("scale0.3_window_left", 1, 16, 16, 2, 2, 8, 12, dict(softmax_scale=0.3, window_size=(4, -1)), 1),
]


def kwargs_ref(kw):
    return dict(causal=kw.get("causal", False), window=kw.get("window_size", (-1, -1)), softcap=kw.get("softcap", 0.0),
                scale=kw.get("softmax_scale"))


def test_dense_grads():
    for dtype, tol in ((torch.float32, 2e-5), (torch.bfloat16, 1.5e-2)):
        for name, B, sq, sk, H, Hk, D, Dv, kw, amp in DENSE:
            q = (torch.randn(B, sq, H, D) * amp).to(dtype)
            k = (torch.randn(B, sk, Hk, D) * amp).to(dtype)
            v, dout = torch.randn(B, sk, Hk, Dv).to(dtype), torch.randn(B, sq, H, Dv).to(dtype)
            _, got = grads(torch, lambda q, k, v: portattn.flash_attn_func(q, k, v, **kw), (q, k, v), dout)
            _, ref = grads(torch, lambda q, k, v: ref_attention(torch, q, k, v, **kwargs_ref(kw)),
                           (q.double(), k.double(), v.double()), dout.double())
            for gname, g, r in zip(("dq", "dk", "dv"), got, ref):
                assert g.dtype == dtype and g.shape == r.shape, (g.dtype, g.shape, r.shape)
                err, mag = max_err(torch, g, r)
                assert mag > 0 and err <= tol * (1 + mag), "%s %s %s: max err %.2e (max |ref| %.2e)" % (
                    name, dtype, gname, err, mag)
            if "nokey" in name:  # rows that see no key: exactly zero gradient
                assert (got[0][:, :4] == 0).all(), got[0][:, :4]


def test_varlen_grads():
    cu_q = torch.tensor([0, 7, 7, 16, 19], dtype=torch.int32)  # an empty query sequence
    cu_k = torch.tensor([0, 9, 12, 12, 20], dtype=torch.int32)  # a sequence whose queries see no key
    for kw in (dict(causal=True), dict(window_size=(2, 3), softcap=3.0)):
        q, k, v = torch.randn(19, 4, 8), torch.randn(20, 2, 8), torch.randn(20, 2, 6)
        dout = torch.randn(19, 4, 6)
        _, got = grads(torch, lambda q, k, v: portattn.flash_attn_varlen_func(q, k, v, cu_q, cu_k, 9, 9, **kw),
                       (q, k, v), dout)
        _, ref = grads(torch, lambda q, k, v: ref_varlen(torch, q, k, v, cu_q.tolist(), cu_k.tolist(),
                                                        **kwargs_ref(kw)), (q.double(), k.double(), v.double()),
                       dout.double())
        for gname, g, r in zip(("dq", "dk", "dv"), got, ref):
            err, mag = max_err(torch, g, r)
            assert mag > 0 and err <= 2e-5 * (1 + mag), "varlen %s %s: max err %.2e" % (kw, gname, err)


@pytest.mark.filterwarnings("ignore:Input #")  # f32 on purpose: portattn takes no float64
def test_gradcheck():
    q, k, v = (torch.randn(1, 4, 2, 4, requires_grad=True) for _ in range(3))
    kv = [torch.randn(1, 5, 1, 4, requires_grad=True) for _ in range(2)]
    # f32 through portattn: central differences with eps 1e-2 carry about 1e-3 of truncation error
    assert torch.autograd.gradcheck(lambda q, k, v: portattn.flash_attn_func(q, k, v, causal=True), (q, k, v),
                                    eps=1e-2, atol=5e-3, rtol=1e-2)
    assert torch.autograd.gradcheck(lambda q, k, v: portattn.flash_attn_func(q, k, v, softcap=2.0), (q, *kv),
                                    eps=1e-2, atol=5e-3, rtol=1e-2)


def test_autograd_contract():
    q, k, v = torch.randn(2, 8, 4, 16), torch.randn(2, 8, 2, 16), torch.randn(2, 8, 2, 16)
    kr = k.clone().requires_grad_(True)  # only k requires grad: only k gets one
    out, lse = portattn.flash_attn_func(q, kr, v, causal=True, return_lse=True)
    assert out.requires_grad and not lse.requires_grad and lse.shape == (2, 4, 8)
    out.sum().backward()  # dO is an expanded (stride 0) tensor here
    assert kr.grad is not None and kr.grad.abs().sum() > 0 and q.grad is None and v.grad is None
    with torch.no_grad():
        ref = portattn.flash_attn_func(q, k, v, causal=True)
    assert torch.equal(out.detach(), ref)
    qr = q.clone().requires_grad_(True)
    try:
        portattn.flash_attn_func(qr, k, v, out=torch.empty_like(q))
        raise AssertionError("out= with grad did not raise")
    except ValueError as e:
        assert "out=" in str(e), e
    # a shape the binding has already planned (grad-free calls) still goes through autograd
    for _ in range(2):
        portattn.flash_attn_func(q, k, v, causal=True)
    kr2 = k.clone().requires_grad_(True)
    portattn.flash_attn_func(q, kr2, v, causal=True).sum().backward()
    assert torch.equal(kr2.grad, kr.grad), "planned call lost or changed the gradient"
    # deterministic: bitwise identical gradients run to run
    dout, runs = torch.randn(2, 8, 4, 16), []
    for _ in range(3):
        xs = [x.clone().requires_grad_(True) for x in (q, k, v)]
        portattn.flash_attn_func(*xs, causal=True, deterministic=True).backward(dout)
        runs.append([x.grad for x in xs])
    assert all(torch.equal(a, b) for r in runs[1:] for a, b in zip(runs[0], r))
    # a forced backend without a backward pass is an error with the reason, never a silent CPU run
    try:
        portattn.flash_attn_func(qr, k, v, backend="cuda-generic").sum().backward()
        raise AssertionError("a forced backend without a backward did not raise")
    except portattn.PortattnError as e:
        assert "cuda-generic" in str(e), e


class TwoLayerAttention:
    """Two pre-norm attention blocks (GQA: 4 query heads, 2 KV heads, causal) and a linear head."""

    def __init__(self, torch, attn, dim=32, heads=4, kv_heads=2, seed=0):
        g = torch.Generator().manual_seed(seed)
        self.torch, self.attn, self.heads, self.kv_heads, self.hd = torch, attn, heads, kv_heads, dim // heads
        w = lambda i, o: (torch.randn(i, o, generator=g) / i ** 0.5).requires_grad_(True)  # noqa: E731
        self.params = []
        for _ in range(2):
            self.params += [w(dim, (heads + 2 * kv_heads) * self.hd), w(heads * self.hd, dim)]
        self.params.append(w(dim, dim))

    def __call__(self, x):
        torch, B, S, _ = self.torch, x.shape[0], x.shape[1], x.shape[2]
        for layer in range(2):
            wqkv, wo = self.params[2 * layer], self.params[2 * layer + 1]
            h = torch.nn.functional.layer_norm(x, x.shape[-1:]) @ wqkv
            q, k, v = h.split([self.heads * self.hd, self.kv_heads * self.hd, self.kv_heads * self.hd], -1)
            o = self.attn(q.view(B, S, self.heads, self.hd), k.reshape(B, S, self.kv_heads, self.hd),
                          v.reshape(B, S, self.kv_heads, self.hd))
            x = x + o.reshape(B, S, -1) @ wo
        return x @ self.params[-1]


def test_training_loop():
    x, y = torch.randn(8, 16, 32), torch.randn(8, 16, 32)
    models = [TwoLayerAttention(torch, lambda q, k, v: portattn.flash_attn_func(q, k, v, causal=True)),
              TwoLayerAttention(torch, lambda q, k, v: ref_attention(torch, q, k, v, causal=True))]
    opts = [torch.optim.Adam(m.params, lr=1e-3) for m in models]
    losses = [[], []]
    t0 = time.time()
    for step in range(300):
        for m, opt, ls in zip(models, opts, losses):
            opt.zero_grad()
            loss = torch.nn.functional.mse_loss(m(x), y)
            loss.backward()
            opt.step()
            ls.append(loss.item())
    gaps = [abs(a - b) / b for a, b in zip(*losses)]
    worst = max(gaps)
    pmax = max((a - b).abs().max().item() / (b.abs().max().item() + 1e-12)
               for a, b in zip(models[0].params, models[1].params))
    print("    loss %.4f -> %.4f (portattn) vs %.4f (math), worst relative gap %.1e at step %d, gap at 50/100/200/300:"
          " %s, params %.1e, %.1f s" % (losses[0][0], losses[0][-1], losses[1][-1], worst, gaps.index(worst),
                                         ["%.1e" % gaps[i] for i in (49, 99, 199, 299)], pmax, time.time() - t0),
          flush=True)
    assert losses[0][-1] < 0.5 * losses[0][0], "portattn model did not train"
    # f32 both ways: the curves agree to rounding (about 1e-7 measured); a wrong gradient shows at once
    assert worst <= 1e-4 and pmax <= 1e-4, (worst, pmax)
