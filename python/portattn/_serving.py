"""The serving form of flash_attn_varlen_func: packed queries over a KV cache (seqused_k and/or
block_table, cu_seqlens_k None), one call for a batch of decodes and prompt chunks, as the
FlashAttention backends of serving engines call it."""

from ._core import make_params
from ._kvcache import _int32_rows
from ._torch import _check_tensors, _launch, _output


def _check_cache(torch, q, k_cache, v_cache):
    """q (total_q, H, D), k_cache/v_cache 4-D, one dtype and device. Returns (dtype, device)."""
    dtype, device = _check_tensors(torch, 3, q=q)
    if _check_tensors(torch, 4, k=k_cache, v=v_cache) != (dtype, device):
        raise ValueError("k/v are %s on %s but q is %s on %s" % (k_cache.dtype, k_cache.device, q.dtype, q.device))
    D = q.shape[2]
    if k_cache.shape[3] != D or tuple(v_cache.shape[:3]) != tuple(k_cache.shape[:3]):
        raise ValueError("k %s and v %s do not fit q %s: (.., .., Hk, D) and (.., .., Hk, Dv)"
                         % (tuple(k_cache.shape), tuple(v_cache.shape), tuple(q.shape)))
    return dtype, device


def varlen_over_cache(torch, q, k_cache, v_cache, cu_seqlens_q, cu_seqlens_k, max_seqlen_q, max_seqlen_k, seqused_k,
                      block_table, softmax_scale, causal, window_size, softcap, return_lse, backend, out, query):
    """Sequence b's queries (cu_seqlens_q) are the last tokens of its seqused_k[b] keys (all of its
    cache's capacity without seqused_k). Returns out (total_q, H, Dv), or (out, lse (H, total_q)), or
    with `query` the selection."""
    if cu_seqlens_k is not None:
        raise ValueError("cu_seqlens_k must be None with seqused_k/block_table: over a KV cache the key lengths "
                         "come from seqused_k (or the cache's capacity)")
    dtype, device = _check_cache(torch, q, k_cache, v_cache)
    if torch.is_grad_enabled() and any(t.requires_grad for t in (q, k_cache, v_cache)):
        raise NotImplementedError("attention over a KV cache has no backward pass: call it under torch.no_grad() "
                                  "or torch.inference_mode()")
    cu = _int32_rows(torch, cu_seqlens_q, "cu_seqlens_q", device)
    if cu.dim() != 1 or cu.numel() < 1:
        raise TypeError("cu_seqlens_q must be a 1-D torch.int32 tensor of batch + 1 offsets")
    B = cu.numel() - 1
    Tq, H, D = q.shape
    Hk, Dv = k_cache.shape[2], v_cache.shape[3]
    if block_table is not None:
        table = _int32_rows(torch, block_table, "block_table", device, B)
        if table.dim() != 2:
            raise ValueError("block_table must be 2-D (batch, pages per sequence), got %s" % (tuple(table.shape),))
        capacity = table.shape[1] * k_cache.shape[1]
    else:
        table = None
        if k_cache.shape[0] != B:
            raise ValueError("k holds %d sequences but cu_seqlens_q gives %d (without block_table k and v are "
                             "(batch, capacity, Hk, D))" % (k_cache.shape[0], B))
        capacity = k_cache.shape[1]
    used = None
    if seqused_k is not None:
        used = _int32_rows(torch, seqused_k, "seqused_k", device, B)
        if used.dim() != 1:
            raise ValueError("seqused_k must be 1-D (batch,), got shape %s" % (tuple(used.shape),))
    out = _output(torch, out, (Tq, H, Dv), q)
    lse = torch.empty((H, Tq), dtype=torch.float32, device=device) if return_lse else None
    p = make_params(
        q.data_ptr(), k_cache.data_ptr(), v_cache.data_ptr(), out.data_ptr(), dtype=dtype, batch=B, seqlen_q=Tq,
        seqlen_k=capacity, heads_q=H, heads_kv=Hk, head_dim_qk=D, head_dim_v=Dv, q_stride=(0,) + q.stride(),
        k_stride=k_cache.stride(), v_stride=v_cache.stride(), o_stride=(0,) + out.stride(),
        lse=lse.data_ptr() if lse is not None else None, lse_stride=(0,) + lse.stride() if lse is not None else None,
        cu_seqlens_q=cu.data_ptr(), max_seqlen_q=min(int(max_seqlen_q), Tq),
        # a bound on the cache lengths; without seqused_k every sequence holds the whole capacity
        max_seqlen_k=min(int(max_seqlen_k), capacity) if used is not None else 0,
        softmax_scale=softmax_scale, softcap=softcap, causal=causal, window_size=window_size, backend=backend)
    if used is not None:
        p.seqused_k = used.data_ptr()
    if table is not None:
        p.block_table, p.block_table_stride = table.data_ptr(), table.stride(0)
        p.page_size, p.num_pages = k_cache.shape[1], k_cache.shape[0]
    sel = _launch(torch, p, device, query)
    if query:
        return sel
    return (out, lse) if return_lse else out
