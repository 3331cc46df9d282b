"""FlashAttention-2's private surface on portattn (portattn.flash_attn_compat), under pytest.

  PORTATTN_LIBRARY=build/libportattn.so python3 -m pytest python/tests/test_flash_attn_compat.py -s [-m cuda]

The forwards against portattn's own flash_attn_func / flash_attn_varlen_func (bitwise: the same library
call), the backwards against autograd through those functions (dq, dk, dv written into poisoned buffers of
the caller's), softmax_d against rowsum(dout * out) in FlashAttention's layouts (dense padded to 128 rows;
varlen with 128 columns after each sequence), FlashAttention 2.6's forms (portattn.flash_attn_compat_v26)
against them, and the arguments refused. CPU tensors here; the same checks
on CUDA tensors are marked cuda. Fresh random inputs each run; the seed is printed.
"""
import glob

import pytest

torch = pytest.importorskip("torch")

import portattn  # noqa: E402
from portattn import flash_attn_compat as fa  # noqa: E402


pytestmark = pytest.mark.usefixtures("torch_seed")  # conftest.py: fresh inputs, the seed printed


@pytest.fixture(params=["cpu", pytest.param("cuda", marks=pytest.mark.cuda)])
def device(request):
    if request.param == "cuda":
        if not (glob.glob("/proc/driver/nvidia/gpus/*") or glob.glob("/dev/nvidia[0-9]*")):
            pytest.skip("no CUDA device on this machine")
        assert torch.cuda.is_available(), "a CUDA device exists but PyTorch cannot use it"
    return request.param


def dtype_for(device):
    return torch.bfloat16 if device == "cuda" else torch.float32


def poisoned(*tensors):
    return [torch.full_like(t, float("nan")) for t in tensors]


DENSE = [  # B, Sq, Sk, H, Hk, D, causal, window, softcap, scale
    (2, 37, 37, 4, 2, 64, True, (-1, -1), 0.0, None),
    (1, 20, 45, 4, 4, 64, False, (8, 3), 0.0, 0.2),
    (2, 33, 33, 2, 1, 128, False, (-1, -1), 4.0, None),
]


def test_forward_matches_flash_attn_func(device):
    dt = dtype_for(device)
    for B, sq, sk, H, Hk, D, causal, window, softcap, scale in DENSE:
        q = torch.randn(B, sq, H, D, device=device, dtype=dt)
        k, v = (torch.randn(B, sk, Hk, D, device=device, dtype=dt) for _ in range(2))
        out, lse, s_dmask, rng = fa._flash_attn_forward(q, k, v, 0.0, scale, causal, window[0], window[1], softcap,
                                                        None, False)
        ref, ref_lse = portattn.flash_attn_func(q, k, v, 0.0, scale, causal, window, softcap, return_lse=True)
        assert torch.equal(out, ref) and torch.equal(lse, ref_lse), (B, sq, sk, H, Hk, D, causal, window)
        assert lse.shape == (B, H, sq) and s_dmask.numel() == 0 and rng.shape == (2,) and rng.dtype == torch.int64


def test_backward_writes_callers_buffers(device):
    dt = dtype_for(device)
    for B, sq, sk, H, Hk, D, causal, window, softcap, scale in DENSE:
        q = torch.randn(B, sq, H, D, device=device, dtype=dt)
        k, v = (torch.randn(B, sk, Hk, D, device=device, dtype=dt) for _ in range(2))
        dout = torch.randn(B, sq, H, D, device=device, dtype=dt)
        out, lse, _, rng = fa._flash_attn_forward(q, k, v, 0.0, scale, causal, window[0], window[1], softcap, None,
                                                  False)
        dq, dk, dv = poisoned(q, k, v)
        d = fa._flash_attn_backward(dout, q, k, v, out, lse, dq, dk, dv, 0.0, scale, causal, window[0], window[1],
                                    softcap, None, True, rng)
        xs = [t.clone().requires_grad_(True) for t in (q, k, v)]
        portattn.flash_attn_func(*xs, 0.0, scale, causal, window, softcap, deterministic=True).backward(dout)
        for name, got, x in zip(("dq", "dk", "dv"), (dq, dk, dv), xs):  # the same deterministic library call
            assert torch.equal(got, x.grad), (name, (got - x.grad).abs().max())
        rows = (sq + 127) // 128 * 128
        assert d.shape == (B, H, rows) and d.dtype == torch.float32
        want = (dout.float() * out.float()).sum(-1).transpose(1, 2)
        assert torch.allclose(d[:, :, :sq], want, rtol=1e-5, atol=1e-5) and (d[:, :, sq:] == 0).all()


def test_varlen_forward_and_backward(device):
    dt = dtype_for(device)
    cu_q = torch.tensor([0, 17, 17, 40], dtype=torch.int32, device=device)  # an empty sequence
    cu_k = torch.tensor([0, 25, 31, 60], dtype=torch.int32, device=device)
    q = torch.randn(40, 4, 64, device=device, dtype=dt)
    k, v = (torch.randn(60, 2, 64, device=device, dtype=dt) for _ in range(2))
    dout = torch.randn(40, 4, 64, device=device, dtype=dt)
    out, lse, s_dmask, rng = fa._flash_attn_varlen_forward(q, k, v, cu_q, cu_k, 23, 29, 0.0, None, True)
    ref, ref_lse = portattn.flash_attn_varlen_func(q, k, v, cu_q, cu_k, 23, 29, causal=True, return_lse=True)
    assert torch.equal(out, ref) and torch.equal(lse, ref_lse) and lse.shape == (4, 40)
    dq, dk, dv = poisoned(q, k, v)
    d = fa._flash_attn_varlen_backward(dout, q, k, v, out, lse, dq, dk, dv, cu_q, cu_k, 23, 29, 0.0, None, True,
                                       -1, -1, 0.0, None, True, rng)
    xs = [t.clone().requires_grad_(True) for t in (q, k, v)]
    portattn.flash_attn_varlen_func(*xs, cu_q, cu_k, 23, 29, causal=True, deterministic=True).backward(dout)
    for name, got, x in zip(("dq", "dk", "dv"), (dq, dk, dv), xs):
        assert torch.equal(got, x.grad), (name, (got - x.grad).abs().max())
    assert d.shape == (4, 40 + 3 * 128)
    rowdot = (dout.float() * out.float()).sum(-1).transpose(0, 1)
    want = torch.zeros_like(d)
    offsets = cu_q.tolist()
    for b in range(3):
        n = offsets[b + 1] - offsets[b]
        want[:, offsets[b] + 128 * b: offsets[b] + 128 * b + n] = rowdot[:, offsets[b]:offsets[b + 1]]
    assert torch.allclose(d, want, rtol=1e-5, atol=1e-5)


def test_refused_arguments():
    q, k, v = (torch.randn(1, 8, 2, 16) for _ in range(3))
    with pytest.raises(ValueError, match="dropout"):
        fa._flash_attn_forward(q, k, v, 0.1, None, False, -1, -1, 0.0, None, False)
    with pytest.raises(NotImplementedError, match="ALiBi"):
        fa._flash_attn_forward(q, k, v, 0.0, None, False, -1, -1, 0.0, torch.ones(2), False)
    cu = torch.tensor([0, 8], dtype=torch.int32)
    for name in ("block_table", "leftpad_k", "seqused_k"):
        with pytest.raises(NotImplementedError, match=name):
            fa._flash_attn_varlen_forward(q[0], k[0], v[0], cu, cu, 8, 8, 0.0, None, False,
                                          **{name: torch.zeros(1, dtype=torch.int32)})
    out, lse, _, _ = fa._flash_attn_forward(q, k, v, 0.0, None, False, -1, -1, 0.0, None, False)
    with pytest.raises(ValueError, match="dropout"):
        fa._flash_attn_backward(q, q, k, v, out, lse, None, None, None, 0.1, None, False, -1, -1, 0.0, None, False)


def test_flash_attn_2_6_forms(device):
    """portattn.flash_attn_compat_v26: the same results in FlashAttention 2.6's shapes of call."""
    from portattn import flash_attn_compat_v26 as fa26
    dt = dtype_for(device)
    q = torch.randn(2, 29, 4, 64, device=device, dtype=dt)
    k, v = (torch.randn(2, 29, 2, 64, device=device, dtype=dt) for _ in range(2))
    dout = torch.randn_like(q)
    res = fa26._flash_attn_forward(q, k, v, 0.0, None, True, (7, 0), 0.0, None, False)
    out, lse = fa._flash_attn_forward(q, k, v, 0.0, None, True, 7, 0, 0.0, None, False)[:2]
    assert len(res) == 8 and res[1] is q and res[2] is k and res[3] is v and res[4] is res[0]
    assert torch.equal(res[0], out) and torch.equal(res[5], lse)
    dq, dk, dv, d = fa26._flash_attn_backward(dout, q, k, v, out, lse, None, None, None, 0.0, None, True, (7, 0),
                                              0.0, None, True)
    want = poisoned(q, k, v)
    want_d = fa._flash_attn_backward(dout, q, k, v, out, lse, *want, 0.0, None, True, 7, 0, 0.0, None, True)
    for got, w in zip((dq, dk, dv, d), want + [want_d]):
        assert torch.equal(got, w)

    cu = torch.tensor([0, 11, 29], dtype=torch.int32, device=device)
    qp, kp, vp, dp = (t[0] for t in (q, k, v, dout))
    res = fa26._flash_attn_varlen_forward(qp, kp, vp, cu, cu, 18, 18, 0.0, None, False, (-1, -1), 2.0)
    out, lse = fa._flash_attn_varlen_forward(qp, kp, vp, cu, cu, 18, 18, 0.0, None, False, -1, -1, 2.0)[:2]
    assert len(res) == 8 and torch.equal(res[0], out) and torch.equal(res[5], lse)
    got = fa26._flash_attn_varlen_backward(dp, qp, kp, vp, out, lse, None, None, None, cu, cu, 18, 18, 0.0, None,
                                           False, (-1, -1), 2.0, None, True)
    want = poisoned(qp, kp, vp)
    want_d = fa._flash_attn_varlen_backward(dp, qp, kp, vp, out, lse, *want, cu, cu, 18, 18, 0.0, None, False, -1,
                                            -1, 2.0, None, True)
    for g, w in zip(got, want + [want_d]):
        assert torch.equal(g, w)
    with pytest.raises(NotImplementedError, match="block_table"):
        fa26._flash_attn_varlen_forward(qp, kp, vp, cu, cu, 18, 18, 0.0, None, False,
                                        block_table=torch.zeros(2, 1, dtype=torch.int32, device=device))
