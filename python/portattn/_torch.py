"""FlashAttention-style entry points on PyTorch tensors: no copies (data_ptr and element strides),
launched on the current CUDA stream (CPU tensors run synchronously on the CPU backend)."""

from . import _autograd, _ops, _plan
from ._core import _check, backends, forward, make_params, query
from ._lib import DType, PortattnError, Status, library_path

__all__ = ["flash_attn_func", "flash_attn_varlen_func", "flash_attn_qkvpacked_func", "flash_attn_kvpacked_func",
           "flash_attn_varlen_qkvpacked_func", "flash_attn_varlen_kvpacked_func", "which"]


def _torch():
    try:
        import torch
    except ImportError:
        raise ImportError("portattn.flash_attn_func needs PyTorch; without it use portattn.forward_raw") from None
    return torch


def _dtype(torch, t):
    m = {torch.float16: DType.F16, torch.bfloat16: DType.BF16, torch.float32: DType.F32}
    if t.dtype not in m:
        raise TypeError("portattn takes float16, bfloat16 or float32 tensors, not %s" % t.dtype)
    return m[t.dtype]


def _check_tensors(torch, dim, **tensors):
    """Same kind, dtype and device for all; `dim` dimensions each. Returns (DType, device)."""
    first = None
    for name, t in tensors.items():
        if not isinstance(t, torch.Tensor):
            raise TypeError("%s must be a torch.Tensor, not %s" % (name, type(t).__name__))
        if t.layout != torch.strided:
            raise TypeError("%s must be a strided (dense) tensor, not %s" % (name, t.layout))
        if t.dim() != dim:
            raise ValueError("%s must have %d dimensions, got shape %s" % (name, dim, tuple(t.shape)))
        if first is None:
            first = (name, t)
            if t.device.type not in ("cuda", "cpu"):
                raise TypeError("portattn runs on CPU and CUDA/ROCm tensors, not on %s" % t.device)
        elif t.dtype != first[1].dtype or t.device != first[1].device:
            raise ValueError("%s is %s on %s but %s is %s on %s" % (name, t.dtype, t.device, first[0],
                                                                  first[1].dtype, first[1].device))
    return _dtype(torch, first[1]), first[1].device


def _check_flash_args(dropout_p, alibi_slopes, return_attn_probs):
    """return_attn_probs is the public functions' business (_with_probs): accepted here."""
    if float(dropout_p) != 0.0:
        raise ValueError("portattn has no dropout: dropout_p must be 0.0, got %r" % (dropout_p,))
    if alibi_slopes is not None:
        raise NotImplementedError("portattn has no ALiBi: alibi_slopes must be None")


def _needs_autograd(torch, **tensors):
    """True when grad mode is on and an input requires grad: the call then goes through _autograd,
    which refuses (NotImplementedError) a call that no backend can differentiate, never returning a
    result without autograd history."""
    if not torch.is_grad_enabled():
        return False
    return any(isinstance(t, torch.Tensor) and t.requires_grad for t in tensors.values())


def _output(torch, out, shape, like, name="out"):
    if out is None:
        return torch.empty(shape, dtype=like.dtype, device=like.device)
    if not isinstance(out, torch.Tensor) or out.layout != torch.strided:
        raise TypeError("%s must be a strided torch.Tensor" % name)
    if tuple(out.shape) != tuple(shape) or out.dtype != like.dtype or out.device != like.device:
        raise ValueError("%s is %s %s on %s, expected %s %s on %s" % (name, tuple(out.shape), out.dtype, out.device,
                                                                     tuple(shape), like.dtype, like.device))
    return out


_GPU_BUILD = {}  # library path -> has a GPU backend compiled in


def _check_gpu_build(device):
    """A library without GPU backends cannot tell device pointers from host ones: refuse here."""
    path = library_path()
    if path not in _GPU_BUILD:
        _GPU_BUILD[path] = any(b["compiled"] and b["name"].startswith(("cuda", "hip")) for b in backends())
    if not _GPU_BUILD[path]:
        raise PortattnError(Status.ERROR_BACKEND_UNAVAILABLE,
                            "%s has no GPU backend compiled in, so it cannot take tensors on %s (use a CUDA "
                            "build of portattn, e.g. through PORTATTN_LIBRARY)" % (path, device))


def _launch(torch, params, device, query_only):
    """Query or run `params` (the first call of a shape); returns the selection, or the workspace
    size the call took from torch's allocator."""
    if device.type != "cuda":
        if query_only:
            return query(params)
        forward(params, None)
        return 0
    _check_gpu_build(device)
    with torch.cuda.device(device):
        if query_only:
            return query(params)
        size = _plan.workspace_size(params)
        ws = torch.empty(size, dtype=torch.uint8, device=device) if size else None
        if ws is not None:
            params.workspace, params.workspace_size = ws.data_ptr(), size
        forward(params, torch.cuda.current_stream(device).cuda_stream)
    return size


def _needs_autograd_planned(torch, q, k, v):
    """_needs_autograd on a planned call, asked only when an input requires grad (the common
    inference call pays one attribute read per tensor): True sends the call down the full path."""
    return (q.requires_grad or k.requires_grad or v.requires_grad) and torch.is_grad_enabled()


def _planned(torch, plan, q, k, v, out, return_lse, pointers):
    """A later call of a planned shape: the outputs, this call's pointers into the plan's struct,
    the launch. `pointers` holds the call's other addresses (varlen offsets)."""
    device = q.device
    out = out if out is not None else torch.empty(plan.out_shape, dtype=q.dtype, device=device)
    pointers.update(q=q.data_ptr(), k=k.data_ptr(), v=v.data_ptr(), o=out.data_ptr())
    lse = None
    if return_lse:
        lse = torch.empty(plan.lse_shape, dtype=torch.float32, device=device)
        pointers["lse"] = lse.data_ptr()
    idx = plan.device_index
    if idx is None:
        st = _plan.launch(plan, pointers, None, None)
    else:
        ws = torch.empty(plan.workspace, dtype=torch.uint8, device=device) if plan.workspace else None
        if torch._C._cuda_getDevice() == idx:
            st = _plan.launch(plan, pointers, ws, _plan.current_stream(torch, idx))
        else:
            with torch.cuda.device(idx):
                st = _plan.launch(plan, pointers, ws, _plan.current_stream(torch, idx))
    if st:
        _check(st)
    return (out, lse) if return_lse else out


def _remember(key, params, out, lse, device, workspace):
    if key is not None:
        _plan.store(key, _plan.Plan(params, tuple(out.shape), None if lse is None else tuple(lse.shape), workspace,
                                    device.index if device.type == "cuda" else None, _plan._state["lib"]))


def _call_key(kind, q, k, v, out, *rest):
    """What decides a call's struct and Python-side checks besides its pointers: shapes, strides and
    dtypes of every tensor, q's device, the options. Other tensors' devices are left out: the library
    refuses a pointer the call's device cannot use, on every call. None when the call cannot be keyed
    (a non-tensor argument: the full path then says what is wrong)."""
    try:
        return (kind, q.device, q.shape, q.stride(), q.dtype, k.shape, k.stride(), k.dtype, v.shape, v.stride(),
                v.dtype, None if out is None else (out.shape, out.stride(), out.dtype)) + rest
    except Exception:
        return None


def _cu_key(cu):
    try:
        return (cu.shape, cu.stride(), cu.dtype, cu.device)
    except Exception:
        return id(cu)  # not a tensor: never planned, the full path raises


def _lookup(key):
    try:
        return _plan.lookup(key) if key is not None else None
    except TypeError:  # an unhashable option (a list window_size): no plan
        return None


def _bshd_call(torch, dtype, q, k, v, out, return_lse, seqlen_k, softmax_scale, softcap, causal, window_size,
               backend):
    """out (B, Sq, H, Dv), the optional LSE (B, H, Sq) and the params of a call on (B, S, H, D) q and
    k/v whose key count is seqlen_k (a KV cache passes its capacity)."""
    B, Sq, H, D = q.shape
    Hk, Dv = k.shape[2], v.shape[3]
    out = _output(torch, out, (B, Sq, H, Dv), q)
    lse = torch.empty((B, H, Sq), dtype=torch.float32, device=q.device) if return_lse else None
    params = make_params(
        q.data_ptr(), k.data_ptr(), v.data_ptr(), out.data_ptr(), dtype=dtype, batch=B, seqlen_q=Sq,
        seqlen_k=seqlen_k, heads_q=H, heads_kv=Hk, head_dim_qk=D, head_dim_v=Dv, q_stride=q.stride(),
        k_stride=k.stride(), v_stride=v.stride(), o_stride=out.stride(),
        lse=lse.data_ptr() if lse is not None else None, lse_stride=lse.stride() if lse is not None else None,
        softmax_scale=softmax_scale, softcap=softcap, causal=causal, window_size=window_size, backend=backend)
    return out, lse, params


def _dense(q, k, v, dropout_p=0.0, softmax_scale=None, causal=False, window_size=(-1, -1), softcap=0.0, *,
           alibi_slopes=None, deterministic=False, return_attn_probs=False, return_lse=False, backend=None,
           out=None, _query=False):
    torch = _torch()
    key = None
    if not _query:
        key = _call_key("dense", q, k, v, out, dropout_p, alibi_slopes is None, return_attn_probs, softmax_scale,
                        causal, window_size, softcap, return_lse, backend)
        plan = _lookup(key)
        if plan is not None and not _needs_autograd_planned(torch, q, k, v):
            return _planned(torch, plan, q, k, v, out, return_lse, {})
    _check_flash_args(dropout_p, alibi_slopes, return_attn_probs)
    dtype, device = _check_tensors(torch, 4, q=q, k=k, v=v)
    if not _query and _needs_autograd(torch, q=q, k=k, v=v):
        def run(*qkv):
            return _dense(*qkv, 0.0, softmax_scale, causal, window_size, softcap, backend=backend, return_lse=True)
        return _autograd.attention(torch, run, q, k, v, softmax_scale=softmax_scale, causal=causal,
                                   window_size=window_size, softcap=softcap, deterministic=deterministic,
                                   backend=backend, return_lse=return_lse, out=out)
    B, D, Sk = q.shape[0], q.shape[3], k.shape[1]
    if k.shape[0] != B or k.shape[3] != D or tuple(v.shape[:3]) != tuple(k.shape[:3]):
        raise ValueError("shapes q %s, k %s, v %s do not fit q (B, Sq, H, D), k (B, Sk, Hk, D), v (B, Sk, Hk, Dv)"
                         % (tuple(q.shape), tuple(k.shape), tuple(v.shape)))
    out, lse, params = _bshd_call(torch, dtype, q, k, v, out, return_lse, Sk, softmax_scale, softcap, causal,
                                  window_size, backend)
    sel = _launch(torch, params, device, _query)
    if _query:
        return sel
    _remember(key, params, out, lse, device, sel)
    return (out, lse) if return_lse else out


def _varlen(q, k, v, cu_seqlens_q, cu_seqlens_k, max_seqlen_q, max_seqlen_k, dropout_p=0.0, softmax_scale=None,
            causal=False, window_size=(-1, -1), softcap=0.0, *, alibi_slopes=None, deterministic=False,
            return_attn_probs=False, return_lse=False, backend=None, out=None, block_table=None, seqused_k=None,
            _query=False):
    torch = _torch()
    if block_table is not None or seqused_k is not None:
        _check_flash_args(dropout_p, alibi_slopes, return_attn_probs)
        from ._serving import varlen_over_cache  # imports this module
        return varlen_over_cache(torch, q, k, v, cu_seqlens_q, cu_seqlens_k, max_seqlen_q, max_seqlen_k, seqused_k,
                                 block_table, softmax_scale, causal, window_size, softcap, return_lse, backend, out,
                                 _query)
    key = None
    if not _query:
        key = _call_key("varlen", q, k, v, out, _cu_key(cu_seqlens_q), _cu_key(cu_seqlens_k), max_seqlen_q,
                        max_seqlen_k, dropout_p, alibi_slopes is None, return_attn_probs, softmax_scale, causal,
                        window_size, softcap, return_lse, backend)
        plan = _lookup(key)
        if plan is not None and not _needs_autograd_planned(torch, q, k, v):
            return _planned(torch, plan, q, k, v, out, return_lse,
                            {"cu_seqlens_q": cu_seqlens_q.data_ptr(), "cu_seqlens_k": cu_seqlens_k.data_ptr()})
    _check_flash_args(dropout_p, alibi_slopes, return_attn_probs)
    dtype, device = _check_tensors(torch, 3, q=q, k=k, v=v)
    if not _query and _needs_autograd(torch, q=q, k=k, v=v):
        def run(*qkv):
            return _varlen(*qkv, cu_seqlens_q, cu_seqlens_k, max_seqlen_q, max_seqlen_k, 0.0, softmax_scale, causal,
                           window_size, softcap, backend=backend, return_lse=True)
        return _autograd.attention(torch, run, q, k, v, softmax_scale=softmax_scale, causal=causal,
                                   window_size=window_size, softcap=softcap, deterministic=deterministic,
                                   backend=backend, return_lse=return_lse, out=out,
                                   cu_seqlens=(cu_seqlens_q, cu_seqlens_k), max_seqlen=(max_seqlen_q, max_seqlen_k))
    Tq, H, D = q.shape
    Tk, Hk, _ = k.shape
    Dv = v.shape[2]
    if k.shape[2] != D or tuple(v.shape[:2]) != tuple(k.shape[:2]):
        raise ValueError("shapes q %s, k %s, v %s do not fit q (total_q, H, D), k (total_k, Hk, D), "
                         "v (total_k, Hk, Dv)" % (tuple(q.shape), tuple(k.shape), tuple(v.shape)))
    cus = []
    for name, cu in (("cu_seqlens_q", cu_seqlens_q), ("cu_seqlens_k", cu_seqlens_k)):
        if not isinstance(cu, torch.Tensor) or cu.dtype != torch.int32 or cu.dim() != 1 or cu.numel() < 1:
            raise TypeError("%s must be a 1-D torch.int32 tensor of batch + 1 offsets" % name)
        if cu.device != device:
            raise ValueError("%s is on %s but q is on %s" % (name, cu.device, device))
        cus.append(cu.contiguous())
    if cus[0].numel() != cus[1].numel():
        raise ValueError("cu_seqlens_q has %d entries, cu_seqlens_k %d" % (cus[0].numel(), cus[1].numel()))
    out = _output(torch, out, (Tq, H, Dv), q)
    lse = torch.empty((H, Tq), dtype=torch.float32, device=device) if return_lse else None
    params = make_params(
        q.data_ptr(), k.data_ptr(), v.data_ptr(), out.data_ptr(), dtype=dtype, batch=cus[0].numel() - 1,
        seqlen_q=Tq, seqlen_k=Tk, heads_q=H, heads_kv=Hk, head_dim_qk=D, head_dim_v=Dv,
        q_stride=(0,) + q.stride(), k_stride=(0,) + k.stride(), v_stride=(0,) + v.stride(),
        o_stride=(0,) + out.stride(), lse=lse.data_ptr() if lse is not None else None,
        lse_stride=(0,) + lse.stride() if lse is not None else None,
        cu_seqlens_q=cus[0].data_ptr(), cu_seqlens_k=cus[1].data_ptr(),
        # No sequence is longer than the packed total: clamping keeps flash_attn's generous bounds valid.
        max_seqlen_q=min(int(max_seqlen_q), Tq), max_seqlen_k=min(int(max_seqlen_k), Tk),
        softmax_scale=softmax_scale, softcap=softcap, causal=causal, window_size=window_size, backend=backend)
    sel = _launch(torch, params, device, _query)
    if _query:
        return sel
    if cus[0].data_ptr() == cu_seqlens_q.data_ptr() and cus[1].data_ptr() == cu_seqlens_k.data_ptr():
        _remember(key, params, out, lse, device, sel)  # a plan reads the caller's own offsets
    return (out, lse) if return_lse else out


def _traced(dropout_p=0.0, alibi_slopes=None, backend=None, out=None):
    """Under torch.compile, calls the custom operator takes (no out=, no forced backend, the
    defaults flash_attn_func refuses left alone) go through torch.ops.portattn; others graph-break."""
    torch = _torch()
    return (_ops.compiling(torch) and out is None and backend is None and alibi_slopes is None and not dropout_p
            and _ops.available(torch))


def flash_attn_func(q, k, v, dropout_p=0.0, softmax_scale=None, causal=False, window_size=(-1, -1), softcap=0.0,
                    *, alibi_slopes=None, deterministic=False, return_attn_probs=False, return_lse=False,
                    backend=None, out=None):
    """Attention forward like flash_attn.flash_attn_func, on q (B, Sq, H, D), k (B, Sk, Hk, D),
    v (B, Sk, Hk, Dv) of one dtype (float16, bfloat16, float32) and device, any strides; H a
    multiple of Hk (GQA/MQA). Causal and windows are aligned bottom-right; window_size (-1 =
    unbounded); softcap 0 = off. dropout_p must be 0 (portattn has no dropout) and alibi_slopes
    None; deterministic asks for a bitwise reproducible backward (the forward always is). Differentiable
    (portattn_backward on the backend the library picks: cpu for CPU tensors, cuda-generic for CUDA
    tensors today); a call that no backend can differentiate raises NotImplementedError when an input
    requires grad in grad mode (no silent loss of gradients).

    backend: None/"auto", or a name ("cpu", "cuda-generic", ...) to force one. out: optional
    (B, Sq, H, Dv) tensor to write into. Returns out, or (out, lse) with return_lse, lse float32
    (B, H, Sq) as flash_attn's softmax_lse, or (out, lse, None) with return_attn_probs as
    flash_attn returns (out, softmax_lse, S_dmask) (S_dmask exists only with dropout). Raises
    PortattnError when portattn refuses the call."""
    if _traced(dropout_p, alibi_slopes, backend, out):
        res = _ops.dense(_torch(), q, k, v, softmax_scale, causal, window_size, softcap,
                         return_lse or return_attn_probs)
        return _with_probs(res, return_attn_probs)
    res = _dense(q, k, v, dropout_p, softmax_scale, causal, window_size, softcap, alibi_slopes=alibi_slopes,
                 deterministic=deterministic, return_lse=return_lse or return_attn_probs, backend=backend, out=out)
    return _with_probs(res, return_attn_probs)


def flash_attn_varlen_func(q, k, v, cu_seqlens_q, cu_seqlens_k, max_seqlen_q, max_seqlen_k, dropout_p=0.0,
                           softmax_scale=None, causal=False, window_size=(-1, -1), softcap=0.0, *,
                           alibi_slopes=None, deterministic=False, return_attn_probs=False, return_lse=False,
                           backend=None, out=None, block_table=None, seqused_k=None):
    """Variable-length attention like flash_attn.flash_attn_varlen_func: packed q (total_q, H, D),
    k (total_k, Hk, D), v (total_k, Hk, Dv); cu_seqlens_q/k int32 (batch + 1) offsets on the same
    device; max_seqlen_q/k bound the sequence lengths. Returns out (total_q, H, Dv), or (out, lse)
    with return_lse, lse float32 (H, total_q) as flash_attn's varlen softmax_lse, or
    (out, lse, None) with return_attn_probs.

    Over a KV cache (the serving call), cu_seqlens_k None: seqused_k int32 (batch,) keys per
    sequence and/or block_table int32 (batch, pages per sequence), k/v then page pools
    (num_pages, page_size, Hk, D/Dv), or (batch, capacity, Hk, D/Dv) without block_table. Sequence
    b's queries are the last tokens of its seqused_k[b] keys (bottom-right causal and windows);
    0, 1 or many per sequence. max_seqlen_k bounds seqused_k. Inference only (no backward)."""
    res = _varlen(q, k, v, cu_seqlens_q, cu_seqlens_k, max_seqlen_q, max_seqlen_k, dropout_p, softmax_scale,
                  causal, window_size, softcap, alibi_slopes=alibi_slopes, deterministic=deterministic,
                  return_lse=return_lse or return_attn_probs, backend=backend, out=out, block_table=block_table,
                  seqused_k=seqused_k)
    return _with_probs(res, return_attn_probs)


def _with_probs(res, return_attn_probs):
    """flash_attn's return_attn_probs=True gives (out, softmax_lse, S_dmask); S_dmask is the dropout
    pattern, and portattn has no dropout, so it is None. Code written for FlashAttention-2/3 asks
    for it to get the LSE."""
    if not return_attn_probs:
        return res
    out, lse = res
    return out, lse, None


def _unpack(packed, name, axis, count, shape):
    """The `count` tensors packed along `axis` of `packed`, as strided views (no copy)."""
    torch = _torch()
    if not isinstance(packed, torch.Tensor):
        raise TypeError("%s must be a torch.Tensor, not %s" % (name, type(packed).__name__))
    if packed.dim() != axis + 3 or packed.shape[axis] != count:
        raise ValueError("%s must have shape %s, got %s" % (name, shape, tuple(packed.shape)))
    return packed.unbind(axis)


def flash_attn_qkvpacked_func(qkv, dropout_p=0.0, softmax_scale=None, causal=False, window_size=(-1, -1),
                              softcap=0.0, **kwargs):
    """flash_attn.flash_attn_qkvpacked_func: qkv (B, S, 3, H, D); flash_attn_func on its three
    strided views (same keyword arguments and results)."""
    q, k, v = _unpack(qkv, "qkv", 2, 3, "(batch, seqlen, 3, heads, head_dim)")
    return flash_attn_func(q, k, v, dropout_p, softmax_scale, causal, window_size, softcap, **kwargs)


def flash_attn_kvpacked_func(q, kv, dropout_p=0.0, softmax_scale=None, causal=False, window_size=(-1, -1),
                             softcap=0.0, **kwargs):
    """flash_attn.flash_attn_kvpacked_func: q (B, Sq, H, D), kv (B, Sk, 2, Hk, D); flash_attn_func
    on q and the two strided views of kv."""
    k, v = _unpack(kv, "kv", 2, 2, "(batch, seqlen_k, 2, heads_k, head_dim)")
    return flash_attn_func(q, k, v, dropout_p, softmax_scale, causal, window_size, softcap, **kwargs)


def flash_attn_varlen_qkvpacked_func(qkv, cu_seqlens, max_seqlen, dropout_p=0.0, softmax_scale=None, causal=False,
                                     window_size=(-1, -1), softcap=0.0, **kwargs):
    """flash_attn.flash_attn_varlen_qkvpacked_func: qkv (total, 3, H, D), one cu_seqlens and
    max_seqlen for queries and keys; flash_attn_varlen_func on the three strided views."""
    q, k, v = _unpack(qkv, "qkv", 1, 3, "(total, 3, heads, head_dim)")
    return flash_attn_varlen_func(q, k, v, cu_seqlens, cu_seqlens, max_seqlen, max_seqlen, dropout_p, softmax_scale,
                                  causal, window_size, softcap, **kwargs)


def flash_attn_varlen_kvpacked_func(q, kv, cu_seqlens_q, cu_seqlens_k, max_seqlen_q, max_seqlen_k, dropout_p=0.0,
                                    softmax_scale=None, causal=False, window_size=(-1, -1), softcap=0.0, **kwargs):
    """flash_attn.flash_attn_varlen_kvpacked_func: q (total_q, H, D), kv (total_k, 2, Hk, D);
    flash_attn_varlen_func on q and the two strided views of kv."""
    k, v = _unpack(kv, "kv", 1, 2, "(total_k, 2, heads_k, head_dim)")
    return flash_attn_varlen_func(q, k, v, cu_seqlens_q, cu_seqlens_k, max_seqlen_q, max_seqlen_k, dropout_p,
                                  softmax_scale, causal, window_size, softcap, **kwargs)


def which(q, k, v, *args, **kwargs):
    """Which backend and kernel flash_attn_func (4-D q) or flash_attn_varlen_func (3-D q, or
    cu_seqlens_q given) would run with these arguments, and why faster backends were passed over:
    dict(backend, backend_id, kernel, reason). Launches nothing (allocates out/lse if needed)."""
    varlen = "cu_seqlens_q" in kwargs or getattr(q, "dim", lambda: 0)() == 3
    return (_varlen if varlen else _dense)(q, k, v, *args, _query=True, **kwargs)
