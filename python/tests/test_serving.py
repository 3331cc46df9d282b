"""flash_attn_varlen_func over a KV cache, the serving call: packed queries (cu_seqlens_q, cu_seqlens_k
None) with seqused_k and/or block_table, decodes, chunks and idle sequences in one batch. Each
sequence is checked against the float64 reference over the keys its cache holds."""
import pytest

import portattn
from portattn import PortattnError, Status
from test_binding import TOL, check_lse, cuda_device_present, expect_raises, rel_l2, torch_ref

H, HK, D, DV, PAGE, PER_SEQ = 8, 2, 32, 16, 16, 4
CAP = PAGE * PER_SEQ
NQ = [9, 1, 0, 1, 5]       # a chunk, a decode over an empty cache, an idle sequence, a decode, a chunk
USED = [40, 0, 17, 63, 12]


def serving_batch(torch, g, device, dt, paged):
    """q packed, the caches (page pools with a shuffled table, a shared prefix page and unused pages;
    or (B, CAP, Hk, D)), cu_seqlens_q, seqused_k, the table, and each sequence's cache rows."""
    B = len(NQ)
    cu = torch.tensor([0] + NQ, dtype=torch.int32).cumsum(0).to(torch.int32)
    q = torch.randn(int(cu[-1]), H, D, generator=g).to(device, dt)
    n_pages = B * PER_SEQ + 3
    shape = (n_pages, PAGE) if paged else (B, CAP)
    kc = torch.randn(shape + (HK, D), generator=g).to(device, dt)
    vc = torch.randn(shape + (HK, DV), generator=g).to(device, dt)
    table = torch.randperm(n_pages, generator=g)[:B * PER_SEQ].view(B, PER_SEQ).to(torch.int32)
    table[3, 0] = table[0, 0]  # a prefix page two sequences share; sequence 3's own first page goes unused
    rows = [[(int(table[b, j // PAGE]), j % PAGE) if paged else (b, j) for j in range(CAP)] for b in range(B)]
    return q, kc, vc, cu, torch.tensor(USED, dtype=torch.int32), table, rows


def serving_cases(torch, device, dt, backend=None):
    g = torch.Generator().manual_seed(7)
    tol = TOL[str(dt).split(".")[1]]
    #          paged  seqused causal window    softcap
    for paged, with_used, causal, window, softcap in ((True, True, True, (-1, -1), 0.0),
                                                     (True, True, False, (7, 2), 5.0),
                                                     (True, False, True, (-1, -1), 0.0),
                                                     (False, True, True, (20, -1), 0.0)):
        q, kc, vc, cu, used, table, rows = serving_batch(torch, g, device, dt, paged)
        with torch.no_grad():
            out, lse = portattn.flash_attn_varlen_func(
                q, kc, vc, cu.to(device), None, max(NQ), CAP, causal=causal, window_size=window, softcap=softcap,
                seqused_k=used.to(device) if with_used else None, block_table=table.to(device) if paged else None,
                return_lse=True, backend=backend)
        assert out.shape == (q.shape[0], H, DV) and lse.shape == (H, q.shape[0])
        for b, nq in enumerate(NQ):
            if not nq:
                continue
            n = USED[b] if with_used else CAP
            keys = torch.stack([kc[r] for r in rows[b][:n]]) if n else kc.new_zeros(0, HK, D)
            vals = torch.stack([vc[r] for r in rows[b][:n]]) if n else vc.new_zeros(0, HK, DV)
            lo, hi = int(cu[b]), int(cu[b + 1])
            want, want_lse = torch_ref(torch, q[None, lo:hi], keys[None], vals[None], causal=causal, window=window,
                                       softcap=softcap)
            if n:
                assert rel_l2(torch, out[lo:hi][None], want) <= tol, (device, paged, with_used, b)
            else:  # no key to see: O = 0 exactly
                assert torch.equal(out[lo:hi].cpu(), torch.zeros_like(out[lo:hi].cpu())), (paged, b)
            check_lse(torch, lse[:, lo:hi][None], want_lse, 1e-4 if dt == torch.float32 else 1e-3)


def serving_error_cases(torch, device):
    dt = torch.float32 if device == "cpu" else torch.bfloat16
    q, kc, vc, cu, used, table, _ = serving_batch(torch, torch.Generator().manual_seed(3), device, dt, True)
    cu, used, table = cu.to(device), used.to(device), table.to(device)
    with torch.no_grad():
        expect_raises(ValueError, lambda: portattn.flash_attn_varlen_func(
            q, kc, vc, cu, cu, 9, CAP, seqused_k=used, block_table=table), "cu_seqlens_k must be None")
        expect_raises(ValueError, lambda: portattn.flash_attn_varlen_func(
            q, kc, vc, cu, None, 9, CAP, seqused_k=used, block_table=table[:2]), "block_table")
        expect_raises(ValueError, lambda: portattn.flash_attn_varlen_func(
            q, kc, vc, cu, None, 9, CAP, seqused_k=used), "sequences")  # page pools without a table
        expect_raises(TypeError, lambda: portattn.flash_attn_varlen_func(
            q, kc, vc, cu, None, 9, CAP, seqused_k=used.long(), block_table=table), "int32")
    if device == "cpu":  # host-readable lengths are checked by the library
        over = used.clone()
        over[2] = CAP + 1
        e = expect_raises(PortattnError, lambda: portattn.flash_attn_varlen_func(
            q, kc, vc, cu, None, 9, CAP, seqused_k=over, block_table=table), "seqused_k[2]")
        assert e.status == Status.ERROR_INVALID_ARGUMENT
        e = expect_raises(PortattnError, lambda: portattn.flash_attn_varlen_func(
            q, kc, vc, cu, None, 9, 20, seqused_k=used, block_table=table), "max_seqlen_k")
        assert e.status == Status.ERROR_INVALID_ARGUMENT
    qg = q.detach().clone().requires_grad_(True)
    expect_raises(NotImplementedError, lambda: portattn.flash_attn_varlen_func(
        qg, kc, vc, cu, None, 9, CAP, seqused_k=used, block_table=table), "no backward")


def test_serving_cpu():
    torch = pytest.importorskip("torch")
    for dt in (torch.float32, torch.bfloat16, torch.float16):
        serving_cases(torch, "cpu", dt, "cpu")
    serving_error_cases(torch, "cpu")
    q, kc, vc, cu, used, table, _ = serving_batch(torch, torch.Generator().manual_seed(1), "cpu", torch.float32, True)
    sel = portattn.which(q, kc, vc, cu_seqlens_q=cu, cu_seqlens_k=None, max_seqlen_q=9, max_seqlen_k=CAP,
                         seqused_k=used, block_table=table)
    assert sel["backend"] == "cpu", sel


@pytest.mark.cuda
def test_serving_cuda():
    if not cuda_device_present():
        pytest.skip("no CUDA device on this machine")
    import torch
    q, kc, vc, cu, used, table, _ = serving_batch(torch, torch.Generator().manual_seed(1), "cuda", torch.bfloat16,
                                                  True)
    sel = portattn.which(q, kc, vc, cu_seqlens_q=cu.cuda(), cu_seqlens_k=None, max_seqlen_q=9, max_seqlen_k=CAP,
                         seqused_k=used.cuda(), block_table=table.cuda())
    print("    serving on %s: %s %s (skipped: %s)" % (torch.cuda.get_device_name(), sel["backend"], sel["kernel"],
                                                      sel["reason"]), flush=True)
    # compute capability 8.0+: cuda-sm80's paged prefill (head dims 32/16 run on its d64 instance)
    if torch.cuda.get_device_capability() >= (8, 0):
        assert sel["backend"] == "cuda-sm80" and sel["kernel"].startswith("sm80-paged"), sel
    else:
        assert sel["backend"] == "cuda-generic", sel
    for dt in (torch.bfloat16, torch.float16, torch.float32):
        serving_cases(torch, "cuda", dt)
    serving_error_cases(torch, "cuda")
    torch.cuda.synchronize()
