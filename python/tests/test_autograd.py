"""Gradients through portattn.flash_attn_func / flash_attn_varlen_func, under pytest.

  PORTATTN_LIBRARY=build/libportattn.so python3 -m pytest python/tests/test_autograd.py -s [-m cuda]

CPU tensors: against autograd through a float64 PyTorch math attention (GQA, MQA, Dqk != Dv, causal with
rows that see no key, windows, softcap, scale, varlen with an empty sequence; f32 and bf16),
torch.autograd.gradcheck on a tiny f32 call, the autograd contract (which inputs get gradients, LSE, out=,
plans, determinism), and a two-layer attention model trained for 300 steps beside the same model on
PyTorch's attention (SDPA where this PyTorch has it, else the math attention), in f32 and in bf16.
CUDA tensors (marked cuda; skipped without an NVIDIA GPU): FlashAttention's rule for gradients (the max
error of dq, dk, dv at most 3x that of the same-precision PyTorch math attention, against float64) for
the CUDA path and the CPU path on the same inputs, in bf16, f16 and f32; bitwise determinism, the
current stream, the contract, and the training loop.
Fresh random inputs each run; the seed is printed (PORTATTN_TEST_SEED repeats it). Skips without PyTorch.
"""
import glob
import time

import pytest

import portattn

torch = pytest.importorskip("torch")


pytestmark = pytest.mark.usefixtures("torch_seed")  # conftest.py: fresh inputs, the seed printed


def ref_attention(torch, q, k, v, causal=False, window=(-1, -1), softcap=0.0, scale=None):
    """Math attention on (B, S, H, D) tensors with PyTorch ops (bottom-right masks, GQA by repetition);
    rows that see no key give 0, with no NaN anywhere in the graph."""
    sq, sk, g = q.shape[1], k.shape[1], q.shape[2] // k.shape[2]
    k, v = k.repeat_interleave(g, dim=2), v.repeat_interleave(g, dim=2)
    s = torch.einsum("bqhd,bkhd->bhqk", q, k) * (scale if scale is not None else q.shape[3] ** -0.5)
    if softcap:
        s = softcap * torch.tanh(s / softcap)
    i, j = torch.arange(sq, device=q.device)[:, None], torch.arange(sk, device=q.device)[None, :]
    wl, wr = window[0], 0 if causal else window[1]
    seen = torch.ones(sq, sk, dtype=torch.bool, device=q.device)
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


def contract_cases(device):
    """Which inputs get gradients, the LSE, out=, planned shapes, deterministic, on `device`."""
    rnd = lambda *shape: torch.randn(*shape, device=device)  # noqa: E731
    q, k, v = rnd(2, 8, 4, 16), rnd(2, 8, 2, 16), rnd(2, 8, 2, 16)
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
    dout, runs = rnd(2, 8, 4, 16), []
    for _ in range(3):
        xs = [x.clone().requires_grad_(True) for x in (q, k, v)]
        portattn.flash_attn_func(*xs, causal=True, deterministic=True).backward(dout)
        runs.append([x.grad for x in xs])
    assert all(torch.equal(a, b) for r in runs[1:] for a, b in zip(runs[0], r))


def test_autograd_contract():
    contract_cases("cpu")
    # a forced backend that cannot run the call is an error with the reason, never a silent CPU run
    q, k, v = torch.randn(2, 8, 4, 16), torch.randn(2, 8, 2, 16), torch.randn(2, 8, 2, 16)
    try:
        portattn.flash_attn_func(q.requires_grad_(True), k, v, backend="cuda-generic").sum().backward()
        raise AssertionError("a forced backend without a backward did not raise")
    except portattn.PortattnError as e:
        assert "cuda-generic" in str(e), e


class TwoLayerAttention:
    """Two pre-norm attention blocks (GQA: 4 query heads, 2 KV heads, causal) and a linear head; the
    model computes in f32 and hands attn() q, k, v in f32 (attn casts them as it likes)."""

    def __init__(self, torch, attn, dim=32, heads=4, kv_heads=2, seed=0, device="cpu"):
        g = torch.Generator().manual_seed(seed)
        self.torch, self.attn, self.heads, self.kv_heads, self.hd = torch, attn, heads, kv_heads, dim // heads
        w = lambda i, o: (torch.randn(i, o, generator=g) / i ** 0.5).to(device).requires_grad_(True)  # noqa: E731
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


def torch_attention(q, k, v):
    """PyTorch's causal attention on (B, S, H, D), S the same for queries and keys (so top-left and
    bottom-right causal agree): SDPA, with K/V heads repeated for GQA, where this PyTorch has it
    (2.0+), else the math attention (1.13)."""
    sdpa = getattr(torch.nn.functional, "scaled_dot_product_attention", None)
    if sdpa is None:
        return ref_attention(torch, q, k, v, causal=True)
    g = q.shape[2] // k.shape[2]
    k, v = k.repeat_interleave(g, dim=2), v.repeat_interleave(g, dim=2)
    return sdpa(q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2), is_causal=True).transpose(1, 2)


def portattn_attention(q, k, v):
    return portattn.flash_attn_func(q, k, v, causal=True)


def in_dtype(attn, dtype):
    """attn on q, k, v cast to dtype, its output cast back: attention in dtype inside an f32 model, as
    mixed-precision training runs it."""
    return lambda q, k, v: attn(q.to(dtype), k.to(dtype), v.to(dtype)).to(q.dtype)


def train(attn, x, y, steps=300):
    """Adam on MSE for `steps` steps from fixed initial weights: the losses and the final weights."""
    model = TwoLayerAttention(torch, attn, device=x.device)
    opt = torch.optim.Adam(model.params, lr=1e-3)
    losses = []
    for _ in range(steps):
        opt.zero_grad()
        loss = torch.nn.functional.mse_loss(model(x), y)
        loss.backward()
        opt.step()
        losses.append(loss.item())
    return losses, model.params


def gap(a, b):
    """Worst relative gap between two loss curves, and the step where it is."""
    gaps = [abs(x - z) / z for x, z in zip(a, b)]
    worst = max(gaps)
    return worst, gaps.index(worst)


def training_f32(device, tol, ptol=2e-3):
    """The loss curves within tol (relative), the final weights within ptol of the largest weight. Adam
    scales each step by the gradient's running RMS, so a weight whose gradient sits at rounding level
    moves by up to lr (1e-3) a step in a direction rounding picks: the weights can part by O(lr) where
    the curves agree to 1e-6 (seed 1367357417 on the CPU: curves 1.4e-6, weights 3.0e-4; most seeds
    5e-7 both). A wrong gradient moves the curves first (a dk scaled by 0.7 fails both checks)."""
    x, y = torch.randn(8, 16, 32, device=device), torch.randn(8, 16, 32, device=device)
    t0 = time.time()
    (lp, pp), (lt, pt) = train(portattn_attention, x, y), train(torch_attention, x, y)
    worst, at = gap(lp, lt)
    pmax = max((a - b).abs().max().item() / (b.abs().max().item() + 1e-12) for a, b in zip(pp, pt))
    print("    f32 on %s: loss %.4f -> %.4f (portattn) vs %.4f (torch), worst relative gap %.1e at step %d, "
          "params %.1e, %.1f s" % (device, lp[0], lp[-1], lt[-1], worst, at, pmax, time.time() - t0), flush=True)
    assert lp[-1] < 0.5 * lp[0], "portattn model did not train"
    assert worst <= tol and pmax <= ptol, (worst, pmax)


def training_bf16(device):
    """Attention in bf16 through portattn and through PyTorch, and the same loop with attention in f32
    (the curve bf16 training approximates). The tolerance of bf16 training: portattn's curve may be at
    most 3x as far from the f32 curve as PyTorch's bf16 curve is (FlashAttention's rule, on the losses),
    with a floor of 2e-3 relative (bf16's unit roundoff is 3.9e-3: two bf16 runs of one loop differ by
    about that much at worst). Measured on CPU: 4e-4 to 8e-4 for portattn, 5e-4 to 1.2e-3 for the math
    attention in bf16."""
    x, y = torch.randn(8, 16, 32, device=device), torch.randn(8, 16, 32, device=device)
    t0 = time.time()
    lp, _ = train(in_dtype(portattn_attention, torch.bfloat16), x, y)
    lt, _ = train(in_dtype(torch_attention, torch.bfloat16), x, y)
    lf, _ = train(torch_attention, x, y)
    (gp, at), (gt, _), (pt, _) = gap(lp, lf), gap(lt, lf), gap(lp, lt)
    print("    bf16 on %s: loss %.4f -> %.4f (portattn) vs %.4f (torch bf16), %.4f (torch f32); worst relative gap "
          "to f32 %.1e at step %d (torch bf16 %.1e), portattn to torch bf16 %.1e, %.1f s"
          % (device, lp[0], lp[-1], lt[-1], lf[-1], gp, at, gt, pt, time.time() - t0), flush=True)
    assert lp[-1] < 0.5 * lp[0], "portattn model did not train"
    assert gp <= max(3 * gt, 2e-3), (gp, gt)


def test_training_loop():
    # f32 both ways on the CPU backend (computed in double, rounded once): the curves agree to f32
    # rounding (about 1e-7 measured); a wrong gradient shows at once
    training_f32("cpu", 1e-4)


def test_training_loop_bf16():
    training_bf16("cpu")


# ---- CUDA tensors ------------------------------------------------------------------------------

@pytest.fixture
def cuda():
    """Skip without an NVIDIA GPU (the driver's files decide, not PyTorch or the library); with one,
    PyTorch must see it."""
    if not (glob.glob("/proc/driver/nvidia/gpus/*") or glob.glob("/dev/nvidia[0-9]*")):
        pytest.skip("no CUDA device on this machine")
    assert torch.cuda.is_available(), "a CUDA device exists but PyTorch %s cannot use it" % torch.__version__
    sel = portattn.which(*(torch.randn(1, 16, 2, 64, device="cuda", dtype=torch.bfloat16) for _ in range(3)))
    print("    forward on %s: %s %s" % (torch.cuda.get_device_name(), sel["backend"], sel["kernel"]), flush=True)
    return "cuda"


UNIT = {torch.bfloat16: 2.0 ** -8, torch.float16: 2.0 ** -11, torch.float32: 0.0}


def rule_check(label, got, ref, naive, dtype):
    """FlashAttention's rule for one gradient: max error against the float64 reference at most 3x that
    of the same-precision PyTorch math attention, with a floor for the rounding of the gradient to the
    dtype (2 units of the largest reference value; f32: 1e-5 relative). Returns the error line."""
    ref, naive = ref.to(got.device), naive.to(got.device)
    err = (got.double() - ref).abs().max().item()
    base = (naive.double() - ref).abs().max().item()
    mag = ref.abs().max().item()
    u = UNIT[dtype]
    bound = max(3 * base, 2 * u * mag if u else 1e-5 * max(1.0, mag))
    assert got.dtype == dtype and got.shape == ref.shape, (label, got.dtype, got.shape, ref.shape)
    assert mag > 0 and torch.isfinite(got).all(), "%s: max |ref| %.2e, finite %s" % (label, mag,
                                                                                   torch.isfinite(got).all().item())
    assert err <= bound, "%s: max err %.2e > bound %.2e (PyTorch same precision %.2e, max |ref| %.2e)" % (
        label, err, bound, base, mag)
    return "%s %.1e/%.1e" % (label, err, bound)


CUDA_DENSE = [  # (name, B, Sq, Sk, H, Hk, D, Dv, kwargs, amplitude of q and k)
    ("gqa8_2_causal_d64", 2, 128, 128, 8, 2, 64, 64, dict(causal=True), 1),
    ("mqa_d128_dv64_window", 1, 96, 160, 4, 1, 128, 64, dict(window_size=(32, 8)), 1),
    ("causal_sq100_sk40_nokey_rows", 2, 100, 40, 4, 4, 96, 96, dict(causal=True), 1),
    ("softcap10_amp3_causal_d128", 1, 80, 80, 4, 2, 128, 128, dict(softcap=10.0, causal=True), 3),
    ("scale0.2_d256", 1, 64, 72, 2, 1, 256, 256, dict(softmax_scale=0.2), 1),
]


CUDA_DTYPES = (torch.bfloat16, torch.float16, torch.float32)


@pytest.mark.cuda
def test_cuda_dense_grads(cuda):
    for dtype in CUDA_DTYPES:
        for name, B, sq, sk, H, Hk, D, Dv, kw, amp in CUDA_DENSE:
            q = (torch.randn(B, sq, H, D, device=cuda) * amp).to(dtype)
            k = (torch.randn(B, sk, Hk, D, device=cuda) * amp).to(dtype)
            v = torch.randn(B, sk, Hk, Dv, device=cuda).to(dtype)
            dout = torch.randn(B, sq, H, Dv, device=cuda).to(dtype)
            fn = lambda q, k, v: portattn.flash_attn_func(q, k, v, **kw)  # noqa: E731
            math = lambda q, k, v: ref_attention(torch, q, k, v, **kwargs_ref(kw))  # noqa: E731
            _, got = grads(torch, fn, (q, k, v), dout)
            _, cpu = grads(torch, fn, (q.cpu(), k.cpu(), v.cpu()), dout.cpu())
            _, naive = grads(torch, math, (q, k, v), dout)
            _, ref = grads(torch, math, (q.double(), k.double(), v.double()), dout.double())
            lines = []
            for gname, g, c, n, r in zip(("dq", "dk", "dv"), got, cpu, naive, ref):
                lines.append(rule_check("%s %s %s cuda" % (name, dtype, gname), g, r, n, dtype))
                lines.append(rule_check("%s %s %s cpu" % (name, dtype, gname), c, r.cpu(), n, dtype))
            print("    " + "; ".join(line.split(" ", 2)[2] for line in lines), flush=True)
            if "nokey" in name:  # rows that see no key (i < Sq - Sk): exactly zero gradient
                assert (got[0][:, :sq - sk] == 0).all()


@pytest.mark.cuda
def test_cuda_varlen_grads(cuda):
    cu_q_l, cu_k_l = [0, 50, 50, 177, 200], [0, 70, 90, 90, 260]  # an empty query sequence; queries without keys
    cu_q, cu_k = (torch.tensor(c, dtype=torch.int32, device=cuda) for c in (cu_q_l, cu_k_l))
    for dtype in CUDA_DTYPES[:2]:
        for kw in (dict(causal=True), dict(window_size=(16, 4), softcap=5.0)):
            q, k = torch.randn(200, 8, 64, device=cuda).to(dtype), torch.randn(260, 2, 64, device=cuda).to(dtype)
            v, dout = torch.randn(260, 2, 32, device=cuda).to(dtype), torch.randn(200, 8, 32, device=cuda).to(dtype)
            _, got = grads(torch, lambda q, k, v: portattn.flash_attn_varlen_func(q, k, v, cu_q, cu_k, 127, 170, **kw),
                           (q, k, v), dout)
            math = lambda q, k, v: ref_varlen(torch, q, k, v, cu_q_l, cu_k_l, **kwargs_ref(kw))  # noqa: E731
            _, naive = grads(torch, math, (q, k, v), dout)
            _, ref = grads(torch, math, (q.double(), k.double(), v.double()), dout.double())
            lines = [rule_check("varlen %s %s %s" % (kw, dtype, gname), g, r, n, dtype)
                     for gname, g, n, r in zip(("dq", "dk", "dv"), got, naive, ref)]
            print("    " + "; ".join(lines), flush=True)
            assert (got[0][50:177] == 0).all(), "queries of a sequence without keys: dq must be 0"


@pytest.mark.cuda
def test_cuda_deterministic_and_stream(cuda):
    """deterministic=True: two backward runs give the same bits; a run on a side stream (the forward
    and its backward there) gives the same bits as the default stream's."""
    q = torch.randn(2, 512, 8, 128, device=cuda, dtype=torch.bfloat16)
    k, v = (torch.randn(2, 512, 2, 128, device=cuda, dtype=torch.bfloat16) for _ in range(2))
    dout = torch.randn_like(q)

    def run():
        xs = [x.clone().requires_grad_(True) for x in (q, k, v)]
        portattn.flash_attn_func(*xs, causal=True, deterministic=True).backward(dout)
        return [x.grad for x in xs]

    first, second = run(), run()
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        third = run()
    torch.cuda.current_stream().wait_stream(side)
    torch.cuda.synchronize()
    for name, a, b, c in zip(("dq", "dk", "dv"), first, second, third):
        assert a.abs().sum() > 0 and torch.isfinite(a).all(), name
        assert torch.equal(a, b), "%s differs between two deterministic runs" % name
        assert torch.equal(a, c), "%s differs on a side stream" % name


@pytest.mark.cuda
def test_cuda_contract(cuda):
    contract_cases(cuda)


@pytest.mark.cuda
def test_cuda_training_loop(cuda):
    # f32 kernels on both sides, accumulating in different orders: the curves agree to about f32
    # rounding grown over 300 steps, far below what a wrong gradient gives
    training_f32(cuda, 1e-3)
    training_bf16(cuda)
