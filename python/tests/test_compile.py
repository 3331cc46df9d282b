"""torch.compile(fullgraph=True) through portattn (custom operators, PyTorch 2.4+) on a CUDA device:
a small attention module and a decode step over a paged KV cache compile without a graph break and
give the eager results; torch.library.opcheck passes on both operators."""
import pytest

import portattn
from portattn import _ops

torch = pytest.importorskip("torch")
pytestmark = pytest.mark.cuda


def need_compile():
    if not torch.cuda.is_available():
        pytest.skip("no CUDA device visible to PyTorch")
    if not _ops.available(torch):
        pytest.skip("PyTorch %s has no torch.library.custom_op" % torch.__version__)


class Attention(torch.nn.Module):
    def __init__(self, dim=256, heads=4, kv_heads=2):
        super().__init__()
        self.h, self.hk, self.d = heads, kv_heads, dim // heads
        self.q = torch.nn.Linear(dim, dim, bias=False)
        self.kv = torch.nn.Linear(dim, 2 * kv_heads * self.d, bias=False)
        self.o = torch.nn.Linear(dim, dim, bias=False)

    def forward(self, x):
        B, S, _ = x.shape
        q = self.q(x).view(B, S, self.h, self.d)
        k, v = self.kv(x).view(B, S, 2, self.hk, self.d).unbind(2)
        return self.o(portattn.flash_attn_func(q, k, v, causal=True).reshape(B, S, -1))


def test_compile_fullgraph_module():
    need_compile()
    m = Attention().cuda().to(torch.bfloat16)
    x = torch.randn(2, 128, 256, device="cuda", dtype=torch.bfloat16)
    with torch.no_grad():
        eager = m(x)
        got = torch.compile(m, fullgraph=True)(x)
    torch.cuda.synchronize()
    assert (got.float() - eager.float()).abs().max().item() <= 2e-2 * (1 + eager.float().abs().max().item())


def test_compile_fullgraph_kvcache_decode():
    need_compile()
    B, H, Hk, D, page, per_seq = 3, 8, 2, 64, 16, 4
    kc, vc = (torch.randn(B * per_seq, page, Hk, D, device="cuda", dtype=torch.bfloat16) for _ in range(2))
    table = torch.randperm(B * per_seq, device="cuda").view(B, per_seq).to(torch.int32)
    lens = torch.tensor([5, 30, 47], dtype=torch.int32, device="cuda")
    q = torch.randn(B, 1, H, D, device="cuda", dtype=torch.bfloat16)
    kn, vn = (torch.randn(B, 1, Hk, D, device="cuda", dtype=torch.bfloat16) for _ in range(2))

    def step(q, kc, vc, kn, vn):
        return portattn.flash_attn_with_kvcache(q, kc, vc, kn, vn, cache_seqlens=lens, block_table=table,
                                                causal=True)

    kc2, vc2 = kc.clone(), vc.clone()
    with torch.no_grad():
        eager = step(q, kc, vc, kn, vn)
        got = torch.compile(step, fullgraph=True)(q, kc2, vc2, kn, vn)
    torch.cuda.synchronize()
    assert torch.equal(got, eager)
    assert torch.equal(kc2, kc) and torch.equal(vc2, vc)  # the append happened in place in both


def test_opcheck():
    need_compile()
    q = torch.randn(2, 64, 4, 64, device="cuda", dtype=torch.bfloat16)
    k, v = (torch.randn(2, 64, 2, 64, device="cuda", dtype=torch.bfloat16) for _ in range(2))
    torch.library.opcheck(torch.ops.portattn.fwd.default, (q, k, v, None, True, -1, -1, 0.0),
                          test_utils=("test_schema", "test_faketensor"))
    kc, vc = (torch.randn(2, 96, 2, 64, device="cuda", dtype=torch.bfloat16) for _ in range(2))
    lens = torch.tensor([10, 70], dtype=torch.int32, device="cuda")
    torch.library.opcheck(torch.ops.portattn.fwd_kvcache.default,
                          (q[:, :1], kc, vc, None, None, lens, None, None, False, -1, -1, 0.0, 0),
                          test_utils=("test_schema", "test_faketensor"))
