"""portattn.merge: forward results over disjoint key sets, merged, against one forward over all the
keys (float64 reference): keys dealt at random to 2 or 3 parts, causal chunks with rows that see no
key, float16/bfloat16/float32 outputs, float32 partials into a float32 ring accumulator, the packed
(varlen) layout, and bad arguments. The cuda-marked test runs the same on the current GPU."""
import math

import pytest

import portattn
from portattn import PortattnError

torch = pytest.importorskip("torch")

UNIT = {torch.bfloat16: 2.0 ** -8, torch.float16: 2.0 ** -11, torch.float32: 1e-5}  # 1e-5: fp32 rule


def reference(q, k, v, window_right=None):
    """float64 attention over all keys, bottom-right causal when window_right is 0: (out, lse)."""
    q, k, v = (t.to("cpu", torch.float64) for t in (q, k, v))
    s = torch.einsum("bqhd,bkhd->bhqk", q, k) / math.sqrt(q.shape[-1])
    if window_right is not None:
        sq, sk = q.shape[1], k.shape[1]
        i = torch.arange(sq).view(-1, 1)
        j = torch.arange(sk).view(1, -1)
        s = s.masked_fill(j > i + sk - sq + window_right, -math.inf)
    lse = torch.logsumexp(s, dim=-1)
    p = torch.exp(s - lse.unsqueeze(-1)).nan_to_num(0.0)  # rows that see no key: 0
    return torch.einsum("bhqk,bkhd->bqhd", p, v), lse


def parts_of(sk, nparts, causal, gen):
    """Key index lists: contiguous chunks (causal) or keys dealt at random (some part may be empty)."""
    if causal:
        cuts = sorted(torch.randperm(sk - 1, generator=gen)[:nparts - 1].add(1).tolist())
        bounds = [0] + cuts + [sk]
        return [list(range(bounds[i], bounds[i + 1])) for i in range(nparts)]
    owner = torch.randint(0, nparts, (sk,), generator=gen)
    return [torch.nonzero(owner == p).flatten().tolist() for p in range(nparts)]


def part_forward(q, k, v, idx, causal, dtype):
    """Forward of q over the keys idx (a chunk under the full causal mask: window_right = Sk - end)."""
    sk = k.shape[1]
    kp, vp = k[:, idx].to(dtype), v[:, idx].to(dtype)
    window = (-1, sk - idx[-1] - 1) if causal and idx else (-1, -1)
    out, lse, _ = portattn.flash_attn_func(q.to(dtype), kp, vp, window_size=window, return_attn_probs=True)
    return out, lse


def check(out, lse, want_out, want_lse, tol):
    out, lse = out.to("cpu", torch.float64), lse.to("cpu", torch.float64)
    empty = torch.isinf(want_lse)
    assert torch.equal(torch.isinf(lse), empty) and not torch.isnan(out).any() and not torch.isnan(lse).any()
    assert torch.all(out.permute(0, 2, 1, 3)[empty] == 0), "rows that see no key must be exactly 0"
    err = (out - want_out).abs().max().item()
    assert err <= tol, (err, tol)
    fin = ~empty
    assert torch.allclose(lse[fin], want_lse[fin], rtol=1e-5, atol=1e-5)
    return err


def run_merge_case(device, dtype, nparts, causal, sq, sk, seed):
    gen = torch.Generator().manual_seed(seed)
    B, H, D = 2, 3, 32
    q = torch.randn(B, sq, H, D, generator=gen).to(dtype).to(device)
    k = torch.randn(B, sk, H, D, generator=gen).to(dtype).to(device)
    v = torch.randn(B, sk, H, D, generator=gen).to(dtype).to(device)
    want_out, want_lse = reference(q, k, v, 0 if causal else None)
    one, _ = part_forward(q, k, v, list(range(sk)), causal, dtype)
    scale = want_out.abs().max().item()
    err_one = (one.to("cpu", torch.float64) - want_out).abs().max().item()
    parts = [p for p in parts_of(sk, nparts, causal, gen)]

    # Partials in the output dtype, merged into the first part's own result.
    out, lse = part_forward(q, k, v, parts[0], causal, dtype)
    for idx in parts[1:]:
        portattn.merge(out, lse, *part_forward(q, k, v, idx, causal, dtype))
    check(out, lse, want_out, want_lse, 2 * err_one + UNIT[dtype] * scale)

    # A float32 ring accumulator that starts empty over NaN, float32 partials: only fp32 rounding.
    acc = torch.full((B, sq, H, D), math.nan, dtype=torch.float32, device=device)
    acc_lse = torch.full((B, H, sq), -math.inf, dtype=torch.float32, device=device)
    for idx in parts:
        portattn.merge(acc, acc_lse, *part_forward(q, k, v, idx, causal, torch.float32))
    check(acc, acc_lse, want_out, want_lse, 1e-5 * scale)
    return err_one


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16, torch.float32])
@pytest.mark.parametrize("nparts,causal,sq,sk", [(2, False, 17, 40), (3, False, 9, 2), (2, True, 24, 24),
                                                 (3, True, 30, 12)])
def test_merge_cpu(dtype, nparts, causal, sq, sk):
    run_merge_case("cpu", dtype, nparts, causal, sq, sk, seed=torch.seed() % 2 ** 31)


def test_merge_packed_layout():
    """The varlen layout: out (T, H, D), lse (H, T), merged as one batch of T rows."""
    q, k, v = (torch.randn(1, n, 2, 16) for n in (11, 30, 30))
    want_out, want_lse = reference(q, k, v)
    a, la = part_forward(q, k, v, list(range(0, 13)), False, torch.float32)
    b, lb = part_forward(q, k, v, list(range(13, 30)), False, torch.float32)
    out, lse = portattn.merge(a[0], la[0], b[0], lb[0])
    check(out.unsqueeze(0), lse.unsqueeze(0), want_out, want_lse, 1e-5 * want_out.abs().max().item())


def test_merge_bad_arguments():
    out, part = torch.randn(1, 4, 2, 8), torch.randn(1, 4, 2, 8)
    lse, lse_part = torch.randn(1, 2, 4), torch.randn(1, 2, 4)
    before = out.clone(), lse.clone()
    with pytest.raises(ValueError, match="out_part has shape"):
        portattn.merge(out, lse, part[:, :3], lse_part)
    with pytest.raises(ValueError, match="expected"):
        portattn.merge(out, lse.transpose(1, 2), part, lse_part)
    with pytest.raises(TypeError, match="float32"):
        portattn.merge(out, lse.double(), part, lse_part)
    with pytest.raises(TypeError, match="float16, bfloat16 or float32"):
        portattn.merge(out, lse, part.double(), lse_part)
    with pytest.raises(PortattnError, match="overlaps"):
        portattn.merge(out, lse, out, lse_part)
    with pytest.raises(PortattnError, match="cannot show"):
        portattn.merge(out.expand(1, 4, 2, 8)[:, :, :1].expand(1, 4, 2, 8), lse, part, lse_part)
    assert torch.equal(out, before[0]) and torch.equal(lse, before[1])  # refused calls write nothing
    with pytest.raises(NotImplementedError, match="no_grad"):
        portattn.merge(out.requires_grad_(), lse, part, lse_part)


@pytest.mark.cuda
@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
@pytest.mark.parametrize("nparts,causal,sq,sk", [(3, False, 64, 200), (3, True, 96, 80)])
def test_merge_cuda(dtype, nparts, causal, sq, sk):
    if not torch.cuda.is_available():
        pytest.skip("no CUDA device")
    err_one = run_merge_case("cuda", dtype, nparts, causal, sq, sk, seed=torch.seed() % 2 ** 31)
    assert err_one > 0  # the one-shot really ran in reduced precision on the GPU
