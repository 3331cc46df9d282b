"""flash_attn_with_kvcache: decode and chunked prefill against a KV cache, contiguous or paged, with
new tokens appended in place, as FlashAttention-2's function of that name (on PyTorch tensors)."""

from . import _ops
from ._torch import _bshd_call, _check_tensors, _launch, _torch, _traced

__all__ = ["flash_attn_with_kvcache"]


def _refuse(**args):
    for name, value in args.items():
        if value is not None:
            raise NotImplementedError("portattn's flash_attn_with_kvcache does not take %s yet: pass None" % name)


def _int32_rows(torch, t, name, device, rows=None):
    """A contiguous int32 tensor on `device` with `rows` entries on its first axis."""
    if not isinstance(t, torch.Tensor) or t.dtype != torch.int32:
        raise TypeError("%s must be a torch.int32 tensor" % name)
    if t.device != device:
        raise ValueError("%s is on %s but q is on %s" % (name, t.device, device))
    if rows is not None and (t.dim() < 1 or t.shape[0] != rows):
        raise ValueError("%s has shape %s, needs %d rows (the batch)" % (name, tuple(t.shape), rows))
    return t.contiguous()


def _cache_lengths(torch, cache_seqlens, batch, capacity, device):
    if cache_seqlens is None:
        cache_seqlens = capacity  # a full cache, as flash_attn without cache_seqlens
    if isinstance(cache_seqlens, int):
        if not 0 <= cache_seqlens <= capacity:
            raise ValueError("cache_seqlens = %d outside [0, %d] (the cache's capacity)" % (cache_seqlens, capacity))
        return torch.full((batch,), cache_seqlens, dtype=torch.int32, device=device)
    t = _int32_rows(torch, cache_seqlens, "cache_seqlens", device, batch)
    if t.dim() != 1:
        raise ValueError("cache_seqlens must be 1-D (batch,), got shape %s" % (tuple(t.shape),))
    return t


def flash_attn_with_kvcache(q, k_cache, v_cache, k=None, v=None, rotary_cos=None, rotary_sin=None,
                            cache_seqlens=None, cache_batch_idx=None, cache_leftpad=None, block_table=None,
                            softmax_scale=None, causal=False, window_size=(-1, -1), softcap=0.0,
                            rotary_interleaved=True, alibi_slopes=None, num_splits=0, return_softmax_lse=False, *,
                            backend=None, out=None):
    """Attention of q (B, Sq, H, D) over a KV cache, as flash_attn.flash_attn_with_kvcache.

    k_cache/v_cache: (B, capacity, Hk, D/Dv), or page pools (num_pages, page_size, Hk, D/Dv) read
    through block_table (B, pages per sequence) int32. cache_seqlens: int or (B,) int32, the keys
    present per sequence (default: the whole capacity). k/v (B, Snew, Hk, D/Dv): new tokens written
    into the cache in place at cache_seqlens[b] before the attention, which then sees
    cache_seqlens[b] + Snew keys (cache_seqlens itself is not advanced). Queries align bottom-right
    (causal, window_size). num_splits: 0 heuristic, 1 no split, n at most n split-KV parts; the
    split workspace comes from torch's allocator. Returns out (B, Sq, H, Dv), or (out, lse) with
    lse float32 (B, H, Sq). Rotary embedding, cache_batch_idx, cache_leftpad and ALiBi raise
    NotImplementedError; there is no backward pass for this call."""
    torch = _torch()
    if _traced(backend=backend, out=out) and rotary_cos is None and rotary_sin is None and cache_batch_idx is None \
            and cache_leftpad is None and alibi_slopes is None:
        return _ops.kvcache(torch, q, k_cache, v_cache, k, v, cache_seqlens, block_table, softmax_scale, causal,
                            window_size, softcap, num_splits, return_softmax_lse)
    _refuse(rotary_cos=rotary_cos, rotary_sin=rotary_sin, cache_batch_idx=cache_batch_idx,
            cache_leftpad=cache_leftpad, alibi_slopes=alibi_slopes)
    news = {} if k is None and v is None else {"k": k, "v": v}
    if len(news) and (k is None or v is None):
        raise ValueError("k and v (new tokens) go together: give both or neither")
    dtype, device = _check_tensors(torch, 4, q=q, k_cache=k_cache, v_cache=v_cache, **news)
    if torch.is_grad_enabled() and any(t.requires_grad for t in [q, k_cache, v_cache] + list(news.values())):
        raise NotImplementedError("flash_attn_with_kvcache has no backward pass: call it under torch.no_grad() "
                                  "or torch.inference_mode()")
    B, D = q.shape[0], q.shape[3]
    Dv = v_cache.shape[3]
    if k_cache.shape[3] != D or tuple(v_cache.shape[:3]) != tuple(k_cache.shape[:3]):
        raise ValueError("k_cache %s and v_cache %s do not fit q %s: (.., .., Hk, D) and (.., .., Hk, Dv)"
                         % (tuple(k_cache.shape), tuple(v_cache.shape), tuple(q.shape)))
    Hk = k_cache.shape[2]
    if block_table is not None:
        table = _int32_rows(torch, block_table, "block_table", device, B)
        if table.dim() != 2:
            raise ValueError("block_table must be 2-D (batch, pages per sequence), got %s" % (tuple(table.shape),))
        num_pages, page = k_cache.shape[0], k_cache.shape[1]
        capacity = table.shape[1] * page
    else:
        table = None
        if k_cache.shape[0] != B:
            raise ValueError("k_cache holds %d sequences, q %d (cache_batch_idx is not supported)"
                             % (k_cache.shape[0], B))
        capacity = k_cache.shape[1]
    used = _cache_lengths(torch, cache_seqlens, B, capacity, device)
    if news and (tuple(k.shape) != (B, k.shape[1], Hk, D) or tuple(v.shape) != (B, k.shape[1], Hk, Dv)):
        raise ValueError("k %s and v %s must be (B, Snew, Hk, D) and (B, Snew, Hk, Dv) with B=%d Hk=%d D=%d Dv=%d"
                         % (tuple(k.shape), tuple(v.shape), B, Hk, D, Dv))
    out, lse, p = _bshd_call(torch, dtype, q, k_cache, v_cache, out, return_softmax_lse, capacity, softmax_scale,
                             softcap, causal, window_size, backend)
    p.seqused_k = used.data_ptr()
    if table is not None:
        p.block_table, p.block_table_stride = table.data_ptr(), table.stride(0)
        p.page_size, p.num_pages = page, num_pages
    if news:
        p.k_new.data, p.v_new.data = k.data_ptr(), v.data_ptr()
        p.k_new.stride[:], p.v_new.stride[:] = k.stride(), v.stride()
        p.seqlen_new = k.shape[1]
    p.num_splits = int(num_splits)
    _launch(torch, p, device, False)
    return (out, lse) if return_softmax_lse else out
