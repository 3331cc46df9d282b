"""portattn as PyTorch's flash attention (portattn.torch), under pytest.

  PORTATTN_LIBRARY=build/libportattn.so python3 -m pytest python/tests/test_torch_registration.py -s [-m cuda]

CPU (any PyTorch): the four aten kernels portattn installs (portattn._aten_flash) called directly on CPU
tensors against a float64 math attention -- outputs, LSE, gradients, the layouts and result tuples PyTorch's
schemas give -- the calls they decline and why, the fallback to the kernel registered before (a stand-in
kernel here), and activate()'s error on a PyTorch without the registry.
CUDA (marked cuda; PyTorch 2.11+ with torch.nn.attention's registry and an NVIDIA GPU, else skipped):
SDPA's FLASH backend with portattn active against the math backend (FlashAttention's rule: at most 3x the
error of the same-precision math attention, against float64), forward and backward, GQA; dropout falling
back with its reason; fallback=False raising; restore() giving PyTorch's own results back bitwise;
torch.compile(fullgraph=True); an implementation active before portattn coming back on restore().
Fresh random inputs each run; the seed is printed (PORTATTN_TEST_SEED repeats it).
"""
import glob
import os

import pytest

torch = pytest.importorskip("torch")

import portattn.torch as pt  # noqa: E402
from portattn import _aten_flash as af  # noqa: E402


pytestmark = pytest.mark.usefixtures("torch_seed")  # conftest.py: fresh inputs, the seed printed


def math_bhsd(q, k, v, causal=False, scale=None):
    """Attention on (B, H, S, D) tensors in their own dtype, bottom-right causal, GQA by repetition.
    Returns (out, lse); rows that see no key give out 0."""
    g = q.shape[1] // k.shape[1]
    k, v = k.repeat_interleave(g, dim=1), v.repeat_interleave(g, dim=1)
    s = (q @ k.transpose(-1, -2)) * (scale if scale is not None else q.shape[-1] ** -0.5)
    sq, sk = q.shape[2], k.shape[2]
    if causal:
        i, j = torch.arange(sq, device=q.device)[:, None], torch.arange(sk, device=q.device)[None, :]
        s = s.masked_fill(j > i + sk - sq, float("-inf"))
    lse = torch.logsumexp(s, -1)
    p = torch.exp(s - lse[..., None]).nan_to_num(0.0)
    return p @ v, lse


def bhsd(B, H, S, D, dtype=torch.float32, device="cpu", amp=1.0):
    """A (B, H, S, D) view over (B, S, H, D) memory, as SDPA callers usually hold it."""
    return (torch.randn(B, S, H, D, device=device) * amp).to(dtype).transpose(1, 2)


def check_close(name, got, ref, tol):
    err = (got.double() - ref.double()).abs().max().item()
    mag = ref.double().abs().max().item()
    assert mag > 0 and err <= tol * (1 + mag), "%s: max err %.2e (max |ref| %.2e)" % (name, err, mag)


SDPA_CASES = [  # B, Hq, Hk, Sq, Sk, D, Dv, causal, scale
    (2, 4, 4, 13, 13, 16, 16, True, None),
    (1, 6, 2, 9, 21, 8, 12, False, 0.3),
    (2, 4, 1, 11, 5, 16, 16, True, None),  # bottom-right: the first rows see no key
]


def test_sdpa_forward_kernel_cpu():
    for B, H, Hk, sq, sk, D, Dv, causal, scale in SDPA_CASES:
        q, k, v = bhsd(B, H, sq, D), bhsd(B, Hk, sk, D), bhsd(B, Hk, sk, Dv)
        res = af.sdpa_forward(q, k, v, 0.0, causal, False, scale=scale)
        assert len(res) == 9 and res[2] is None and res[3] is None and res[4:6] == (sq, sk), res[2:6]
        out, lse = res[0], res[1]
        assert out.shape == (B, H, sq, Dv), out.shape
        if D == Dv:  # laid out as the query, as PyTorch's kernel and meta function make it
            assert out.stride() == q.stride(), (out.stride(), q.stride())
            dense = af.sdpa_forward(q.contiguous(), k, v, 0.0, causal, False, scale=scale)[0]
            assert dense.is_contiguous() and torch.equal(dense, out)
        assert lse.shape == (B, H, sq) and lse.dtype == torch.float32
        assert res[6].shape == (2,) and res[7].shape == () and res[8].numel() == 0
        ref, ref_lse = math_bhsd(q.double(), k.double(), v.double(), causal, scale)
        check_close("sdpa out %s" % ((B, H, Hk, sq, sk, D, Dv, causal),), out, ref, 2e-5)
        seen = torch.isfinite(ref_lse)
        assert torch.equal(torch.isneginf(lse), ~seen), "rows that see no key have LSE -inf"
        check_close("sdpa lse", lse[seen], ref_lse[seen], 2e-5)


def test_flash_forward_kernel_packed_cpu():
    cu_q = torch.tensor([0, 5, 5, 12], dtype=torch.int32)  # an empty query sequence
    cu_k = torch.tensor([0, 7, 10, 19], dtype=torch.int32)
    q, k, v = torch.randn(12, 4, 16), torch.randn(19, 2, 16), torch.randn(19, 2, 16)
    out, lse, rng, unused, mask = af.flash_forward(q, k, v, cu_q, cu_k, 7, 9, 0.0, True, False)
    assert out.shape == (12, 4, 16) and lse.shape == (4, 12) and mask.numel() == 0
    for b in range(3):
        qs, ks = slice(int(cu_q[b]), int(cu_q[b + 1])), slice(int(cu_k[b]), int(cu_k[b + 1]))
        if qs.start == qs.stop:
            continue
        r, rl = math_bhsd(*(t[None, s].transpose(1, 2).double() for t, s in ((q, qs), (k, ks), (v, ks))), causal=True)
        check_close("packed out %d" % b, out[qs], r[0].transpose(0, 1), 2e-5)
        check_close("packed lse %d" % b, lse[:, qs], rl[0], 2e-5)


def test_sdpa_backward_kernel_cpu():
    for B, H, Hk, sq, sk, D, Dv, causal, scale in SDPA_CASES[:2]:
        q, k, v = bhsd(B, H, sq, D), bhsd(B, Hk, sk, D), bhsd(B, Hk, sk, Dv)
        dout = bhsd(B, H, sq, Dv)
        res = af.sdpa_forward(q, k, v, 0.0, causal, False, scale=scale)
        got = af.sdpa_backward(dout, q, k, v, res[0], res[1], None, None, sq, sk, 0.0, causal, res[6], res[7],
                               scale=scale)
        xs = [t.detach().double().requires_grad_(True) for t in (q, k, v)]
        math_bhsd(*xs, causal=causal, scale=scale)[0].backward(dout.double())
        for name, g, x in zip(("dq", "dk", "dv"), got, xs):
            assert g.shape == x.shape and g.dtype == torch.float32, (name, g.shape, x.shape)
            check_close("sdpa %s" % name, g, x.grad, 2e-5)


def test_flash_backward_kernel_packed_cpu():
    cu_q = torch.tensor([0, 6, 14], dtype=torch.int32)
    cu_k = torch.tensor([0, 8, 17], dtype=torch.int32)
    q, k, v, dout = torch.randn(14, 4, 8), torch.randn(17, 2, 8), torch.randn(17, 2, 8), torch.randn(14, 4, 8)
    out, lse = af.flash_forward(q, k, v, cu_q, cu_k, 8, 9, 0.0, False, False)[:2]
    got = af.flash_backward(dout, q, k, v, out, lse, cu_q, cu_k, 8, 9, 0.0, False, None, None)
    want = [torch.zeros(t.shape, dtype=torch.float64) for t in (q, k, v)]
    for b in range(2):
        qs, ks = slice(int(cu_q[b]), int(cu_q[b + 1])), slice(int(cu_k[b]), int(cu_k[b + 1]))
        xs = [t[None, s].transpose(1, 2).double().requires_grad_(True) for t, s in ((q, qs), (k, ks), (v, ks))]
        math_bhsd(*xs)[0].backward(dout[None, qs].transpose(1, 2).double())
        for w, x, s in zip(want, xs, (qs, ks, ks)):
            w[s] = x.grad[0].transpose(0, 1)
    for name, g, w in zip(("dq", "dk", "dv"), got, want):
        check_close("packed %s" % name, g, w, 2e-5)


def test_declined_calls():
    q, k, v = bhsd(1, 2, 8, 16), bhsd(1, 2, 8, 16), bhsd(1, 2, 8, 16)
    t = [x.transpose(1, 2) for x in (q, k, v)]
    cu = torch.tensor([0, 8], dtype=torch.int32)
    cases = [
        ("dropout", lambda: af.sdpa_forward(q, k, v, 0.1)),
        ("debug_mask", lambda: af.sdpa_forward(q, k, v, 0.0, False, True)),
        ("ALiBi", lambda: af.flash_forward(*t, None, None, 8, 8, 0.0, False, False, alibi_slopes=torch.ones(2))),
        ("seqused_k", lambda: af.flash_forward(*t, None, None, 8, 8, 0.0, False, False,
                                               seqused_k=torch.ones(1, dtype=torch.int32))),
        ("block_table", lambda: af.flash_forward(*t, None, None, 8, 8, 0.0, False, False,
                                                 block_table=torch.zeros(1, 1, dtype=torch.int32))),
        ("together", lambda: af.flash_forward(t[0][0], t[1][0], t[2][0], cu, None, 8, 8, 0.0, False, False)),
        ("float16, bfloat16 or float32", lambda: af.sdpa_forward(q.double(), k.double(), v.double())),
        ("dropout", lambda: af.sdpa_backward(q, q, k, v, q, torch.zeros(1, 2, 8), None, None, 8, 8, 0.5, False,
                                             None, None)),
    ]
    for word, call in cases:
        with pytest.raises(af.Declined) as e:
            call()
        assert word in str(e.value), (word, str(e.value))


def test_slow_backward_declined_unless_asked(monkeypatch):
    """A backward only an oracle backend has goes to PyTorch's kernel unless slow_backward; the CPU
    backend stands in for cuda-generic here."""
    q, k, v, dout = (bhsd(1, 2, 8, 16) for _ in range(4))
    res = af.sdpa_forward(q, k, v)
    args = (dout, q, k, v, res[0], res[1], None, None, 8, 8, 0.0, False, res[6], res[7])
    monkeypatch.setattr(af, "SLOW_BACKWARDS", ("cpu",))
    with pytest.raises(af.Declined, match="oracle"):
        af.sdpa_backward(*args)
    monkeypatch.setitem(af.options, "slow_backward", True)
    assert af.sdpa_backward(*args)[0].shape == q.shape


class FakeKernel:
    """Stands in for the PyTorch kernel registered before portattn's."""

    def __init__(self):
        self.calls = []

    def call_boxed(self, keyset, *args, **kwargs):
        self.calls.append((keyset, args, kwargs))
        return "pytorch's result"


def test_dispatch_falls_back_with_reason():
    q, k, v = bhsd(1, 2, 8, 16), bhsd(1, 2, 8, 16), bhsd(1, 2, 8, 16)
    orig = FakeKernel()
    fwd = pt._dispatching("_scaled_dot_product_flash_attention", af.sdpa_forward, orig, None)
    before = pt.counts()
    assert fwd("keys", q, k, v, 0.25, True, scale=0.5) == "pytorch's result"
    assert orig.calls == [("keys", (q, k, v, 0.25, True), {"scale": 0.5})], orig.calls
    assert "dropout" in pt.last_fallback_reason() and "_scaled_dot_product_flash_attention" in pt.last_fallback_reason()
    res = fwd("keys", q, k, v, 0.0, True)
    assert len(orig.calls) == 1 and len(res) == 9
    after = pt.counts()
    assert (after["pytorch"] - before["pytorch"], after["portattn"] - before["portattn"]) == (1, 1), (before, after)

    bwd = pt._dispatching("_flash_attention_backward", af.flash_backward, orig, 5)
    lse = torch.tensor([[[float("-inf"), 1.5]]])
    bwd("keys", q, q, k, v, q, lse, None, None, 8, 8, 0.3, False, None, None)
    passed = orig.calls[-1][1][5]
    assert passed[0, 0, 0].item() == float("inf") and passed[0, 0, 1].item() == 1.5, passed

    pt._state["fallback"] = False
    try:
        with pytest.raises(RuntimeError, match="dropout"):
            fwd("keys", q, k, v, 0.25)
    finally:
        pt._state["fallback"] = True
    assert len(orig.calls) == 2


def test_activate_needs_the_registry():
    if hasattr(torch.nn, "attention") and hasattr(torch.nn.attention, "register_flash_attention_impl"):
        pytest.skip("PyTorch %s has the registry (the cuda tests activate portattn)" % torch.__version__)
    with pytest.raises(RuntimeError, match="2.11"):
        pt.activate()
    assert not pt.is_active()


def test_tools_say_why_they_cannot_run():
    """tools/cp_check.py and tools/hf_check.py load and exit with their cannot-run / skip status."""
    import importlib.util
    if hasattr(torch.nn, "attention") and hasattr(torch.nn.attention, "register_flash_attention_impl"):
        pytest.skip("PyTorch %s has the registry: the tools run on a GPU" % torch.__version__)
    tools = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))), "tools")
    for name, status in (("cp_check", 2), ("hf_check", 77)):
        spec = importlib.util.spec_from_file_location(name, os.path.join(tools, name + ".py"))
        mod = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(mod)
        assert mod.main([]) == status, name


# ---- CUDA tensors through SDPA (PyTorch 2.11+) --------------------------------------------------

@pytest.fixture
def registry():
    if not (glob.glob("/proc/driver/nvidia/gpus/*") or glob.glob("/dev/nvidia[0-9]*")):
        pytest.skip("no CUDA device on this machine")
    assert torch.cuda.is_available(), "a CUDA device exists but PyTorch %s cannot use it" % torch.__version__
    try:
        pt._api()
    except RuntimeError as e:
        pytest.skip(str(e))
    yield
    pt.restore()


def flash_sdpa(*args, **kwargs):
    from torch.nn.attention import SDPBackend, sdpa_kernel
    with sdpa_kernel(SDPBackend.FLASH_ATTENTION):
        return torch.nn.functional.scaled_dot_product_attention(*args, **kwargs)


def fa_rule(name, got, same_precision, ref):
    """FlashAttention's rule: at most 3x the max error of the same-precision math attention."""
    err = (got.double() - ref).abs().max().item()
    base = (same_precision.double() - ref).abs().max().item()
    assert err <= 3 * base + 1e-6, "%s: max err %.3e, math attention's %.3e" % (name, err, base)


GPU_CASES = [  # B, Hq, Hk, S_q, S_k, D, causal
    (2, 16, 16, 1024, 1024, 128, True),
    (2, 16, 16, 1000, 1000, 64, False),
    (1, 32, 8, 2048, 2048, 128, True),
    (2, 8, 8, 512, 1536, 128, False),
]


@pytest.mark.cuda
def test_sdpa_flash_on_portattn(registry):
    pt.activate(fallback=False)
    for dtype in (torch.bfloat16, torch.float16):
        for B, H, Hk, sq, sk, D, causal in GPU_CASES:
            q = bhsd(B, H, sq, D, dtype, "cuda")
            k, v = bhsd(B, Hk, sk, D, dtype, "cuda"), bhsd(B, Hk, sk, D, dtype, "cuda")
            dout = bhsd(B, H, sq, D, dtype, "cuda")
            gqa = {"enable_gqa": True} if H != Hk else {}
            xs = [t.detach().requires_grad_(True) for t in (q, k, v)]
            before = pt.counts()["portattn"]
            try:
                out = flash_sdpa(*xs, is_causal=causal, **gqa)
            except RuntimeError as e:
                if gqa and "No available kernel" in str(e):  # this PyTorch's FLASH backend has no GQA
                    print("    skipped GQA case: %s" % str(e).splitlines()[0])
                    continue
                raise
            out.backward(dout)
            assert pt.counts()["portattn"] - before >= 2, "portattn ran neither the forward nor the backward"
            refs = [t.detach().double().requires_grad_(True) for t in (q, k, v)]
            ref = math_bhsd(*refs, causal=causal)[0]
            ref.backward(dout.double())
            # the same-precision math attention computes in the input dtype (SDPA's MATH backend may
            # upcast half types, which would make it a near-exact reference instead)
            low = [t.detach().requires_grad_(True) for t in (q, k, v)]
            same = math_bhsd(*low, causal=causal)[0]
            same.backward(dout)
            name = "%s %s" % (dtype, (B, H, Hk, sq, sk, D, causal))
            fa_rule(name + " out", out, same, ref.detach())
            for gname, x, lo, r in zip(("dq", "dk", "dv"), xs, low, refs):
                fa_rule(name + " " + gname, x.grad, lo.grad, r.grad)


@pytest.mark.cuda
def test_fallback_and_restore(registry):
    q, k, v = (bhsd(2, 8, 512, 128, torch.bfloat16, "cuda") for _ in range(3))
    before = flash_sdpa(q, k, v, is_causal=True)  # PyTorch's own kernel
    pt.activate()
    assert pt.is_active()
    n = pt.counts()
    ours = flash_sdpa(q, k, v, is_causal=True)
    assert pt.counts()["portattn"] == n["portattn"] + 1
    assert (ours.float() - before.float()).abs().max().item() < 2e-2  # two bf16 kernels, one result
    n = pt.counts()
    flash_sdpa(q, k, v, dropout_p=0.2)
    # PyTorch's SDPA kernel calls aten::_flash_attention_forward, which portattn declines as well
    assert pt.counts()["pytorch"] > n["pytorch"] and "dropout" in pt.last_fallback_reason()
    pt.activate(fallback=False)
    with pytest.raises(RuntimeError, match="dropout"):
        flash_sdpa(q, k, v, dropout_p=0.2)
    pt.restore()
    assert not pt.is_active()
    n = pt.counts()
    again = flash_sdpa(q, k, v, is_causal=True)
    assert pt.counts() == n, "a call reached portattn after restore()"
    assert torch.equal(again, before), "restore() did not give PyTorch's own kernel back"


@pytest.mark.cuda
def test_compile_fullgraph(registry):
    from torch.nn.attention import SDPBackend, sdpa_kernel

    class Attn(torch.nn.Module):
        def forward(self, q, k, v):
            return torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True)

    q, k, v = (bhsd(1, 8, 1024, 128, torch.bfloat16, "cuda") for _ in range(3))
    pt.activate(fallback=False)
    with sdpa_kernel(SDPBackend.FLASH_ATTENTION):  # outside the graph: the trace picks the FLASH operator
        eager = Attn()(q, k, v)
        n = pt.counts()["portattn"]
        compiled = torch.compile(Attn(), fullgraph=True)(q, k, v)
    assert pt.counts()["portattn"] > n, "the compiled graph did not run portattn"
    # the compiled graph may hand over other layouts, and a layout may pick another portattn kernel
    assert (compiled.float() - eager.float()).abs().max().item() < 2e-2


@pytest.mark.cuda
def test_restore_brings_back_the_previous_implementation(registry):
    import torch.nn.attention as att
    removed = []

    class Handle:
        def remove(self):
            removed.append(True)

    att.register_flash_attention_impl("portattn-test-other", register_fn=Handle)
    att.activate_flash_attention_impl("portattn-test-other")
    try:
        pt.activate()
        assert removed == [True] and pt.is_active()
        pt.restore()
        assert pt._current(att) == "portattn-test-other"
    finally:
        att.restore_flash_attention_impl()
