"""portattn's forward as PyTorch custom operators (torch.library.custom_op, PyTorch 2.4 and newer),
so that torch.compile(fullgraph=True) traces through a call instead of breaking the graph at the
ctypes call: under compilation flash_attn_func and flash_attn_with_kvcache go through
torch.ops.portattn.fwd / torch.ops.portattn.fwd_kvcache, whose fake implementations give the output
shapes. Eager calls keep the direct path. The operators are inference-only: they have no autograd
formula, so a compiled call whose inputs require grad raises.
"""

__all__ = ["available", "compiling", "dense", "kvcache"]

_ops = {}
_ready = False  # the operators exist (a plain bool: what dynamo reads while it traces)


def _define(torch):
    from typing import Optional, Tuple

    from ._kvcache import flash_attn_with_kvcache
    from ._torch import _dense

    Tensor = torch.Tensor

    @torch.library.custom_op("portattn::fwd", mutates_args=())
    def fwd(q: Tensor, k: Tensor, v: Tensor, softmax_scale: Optional[float], causal: bool, window_left: int,
            window_right: int, softcap: float) -> Tuple[Tensor, Tensor]:
        out, lse = _dense(q, k, v, 0.0, softmax_scale, causal, (window_left, window_right), softcap, return_lse=True)
        return out, lse

    @fwd.register_fake
    def _(q, k, v, softmax_scale, causal, window_left, window_right, softcap):
        B, Sq, H, _ = q.shape
        return q.new_empty((B, Sq, H, v.shape[3])), q.new_empty((B, H, Sq), dtype=torch.float32)

    @torch.library.custom_op("portattn::fwd_kvcache", mutates_args=("k_cache", "v_cache"))
    def fwd_kvcache(q: Tensor, k_cache: Tensor, v_cache: Tensor, k: Optional[Tensor], v: Optional[Tensor],
                    cache_seqlens: Tensor, block_table: Optional[Tensor], softmax_scale: Optional[float],
                    causal: bool, window_left: int, window_right: int, softcap: float,
                    num_splits: int) -> Tuple[Tensor, Tensor]:
        out, lse = flash_attn_with_kvcache(q, k_cache, v_cache, k, v, cache_seqlens=cache_seqlens,
                                           block_table=block_table, softmax_scale=softmax_scale, causal=causal,
                                           window_size=(window_left, window_right), softcap=softcap,
                                           num_splits=num_splits, return_softmax_lse=True)
        return out, lse

    @fwd_kvcache.register_fake
    def _(q, k_cache, v_cache, k, v, cache_seqlens, block_table, softmax_scale, causal, window_left, window_right,
          softcap, num_splits):
        B, Sq, H, _ = q.shape
        return q.new_empty((B, Sq, H, v_cache.shape[3])), q.new_empty((B, H, Sq), dtype=torch.float32)

    _ops.update(fwd=fwd, fwd_kvcache=fwd_kvcache)


def available(torch):
    """True when this PyTorch has torch.library.custom_op (the operators are then defined once; a
    second copy of this package in the process uses the operators the first one defined)."""
    global _ready
    if not _ready and hasattr(torch, "library") and hasattr(torch.library, "custom_op"):
        try:
            _define(torch)
        except RuntimeError:
            if hasattr(torch.ops, "portattn") and hasattr(torch.ops.portattn, "fwd"):
                _ops.update(fwd=torch.ops.portattn.fwd, fwd_kvcache=torch.ops.portattn.fwd_kvcache)
        _ready = "fwd" in _ops
    return _ready


def compiling(torch):
    """True while torch.compile traces (dynamo), where a ctypes call would break the graph."""
    compiler = getattr(torch, "compiler", None)
    return bool(compiler is not None and hasattr(compiler, "is_compiling") and compiler.is_compiling())


def _window(window_size):
    left, right = (int(x) for x in window_size)
    return left, right


def dense(torch, q, k, v, softmax_scale, causal, window_size, softcap, return_lse):
    """flash_attn_func's call through torch.ops.portattn.fwd."""
    left, right = _window(window_size)
    out, lse = _ops["fwd"](q, k, v, None if softmax_scale is None else float(softmax_scale), bool(causal), left,
                           right, float(softcap or 0.0))
    return (out, lse) if return_lse else out


def kvcache(torch, q, k_cache, v_cache, k, v, cache_seqlens, block_table, softmax_scale, causal, window_size,
            softcap, num_splits, return_lse):
    """flash_attn_with_kvcache's call through torch.ops.portattn.fwd_kvcache (an int cache_seqlens
    becomes a tensor first: the operator's schema takes tensors)."""
    if not isinstance(cache_seqlens, torch.Tensor):
        n = k_cache.shape[1] if cache_seqlens is None and block_table is None else cache_seqlens
        if n is None:
            n = block_table.shape[1] * k_cache.shape[1]
        cache_seqlens = torch.full((q.shape[0],), int(n), dtype=torch.int32, device=q.device)
    left, right = _window(window_size)
    out, lse = _ops["fwd_kvcache"](q, k_cache, v_cache, k, v, cache_seqlens, block_table,
                                   None if softmax_scale is None else float(softmax_scale), bool(causal), left, right,
                                   float(softcap or 0.0), int(num_splits))
    return (out, lse) if return_lse else out
