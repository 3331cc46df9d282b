"""PyTorch's four flash-attention operators computed by portattn: the kernels portattn.torch installs
for aten::_scaled_dot_product_flash_attention, aten::_flash_attention_forward and their backward
operators. Each takes and returns exactly what PyTorch's own CUDA kernel does (argument lists and
result tuples of PyTorch 2.11's schemas), with no copies of the inputs: SDPA hands over (B, H, S, D)
views, and their (B, S, H, D) transposes are strided tensors portattn reads in place.

A call portattn does not take raises Declined with the reason; portattn.torch then runs PyTorch's own
kernel (or raises, when activated with fallback=False). The functions take CPU tensors too, which is
how the tests check them where PyTorch has no registration API."""

import ctypes

from . import _autograd
from ._core import _check, _text
from ._lib import PortattnError, Selection, Status, load
from ._torch import _dense, _varlen

__all__ = ["Declined", "sdpa_forward", "sdpa_backward", "flash_forward", "flash_backward"]


class Declined(Exception):
    """portattn does not take this call; the message says why."""


def _torch():
    import torch
    return torch


def _refuse_common(dropout_p, return_debug_mask=False, alibi_slopes=None, extra=None):
    if float(dropout_p) != 0.0:
        raise Declined("dropout_p=%r: portattn has no dropout" % (dropout_p,))
    if return_debug_mask:
        raise Declined("return_debug_mask=True: portattn keeps no attention probabilities")
    if alibi_slopes is not None:
        raise Declined("alibi_slopes: portattn has no ALiBi")
    for name, value in (extra or {}).items():  # arguments a later PyTorch may add (block_table, ...)
        if value is not None:
            raise Declined("%s is not taken by portattn here" % name)


def _window(left, right):
    return (-1 if left is None else int(left), -1 if right is None else int(right))


def _attempt(fn, *args, **kwargs):
    """Run a portattn entry point with autograd out of the way (these are kernels below autograd);
    the binding's refusals become Declined."""
    torch = _torch()
    try:
        with torch.no_grad():
            return fn(*args, **kwargs)
    except (PortattnError, ValueError, TypeError, NotImplementedError) as e:
        raise Declined("%s: %s" % (type(e).__name__, e)) from e


def _rng_outputs(torch, q):
    """What PyTorch's kernel returns for its dropout state when there is no dropout (rng_state,
    unused) and for the debug mask it was not asked for."""
    u64 = getattr(torch, "uint64", torch.int64)
    return (torch.zeros((2,), dtype=u64, device=q.device), torch.zeros((), dtype=u64, device=q.device),
            torch.empty((0,), dtype=q.dtype, device=q.device))


def flash_forward(query, key, value, cum_seq_q, cum_seq_k, max_q, max_k, dropout_p, is_causal,
                  return_debug_mask, *, scale=None, window_size_left=None, window_size_right=None,
                  seqused_k=None, alibi_slopes=None, **extra):
    """aten::_flash_attention_forward: (B, S, H, D) tensors, or packed (total, H, D) ones with
    cum_seq_q/k. Returns (output, logsumexp, rng_state, unused, debug_attn_mask); logsumexp is
    (B, H, Sq), or (H, total_q) for packed calls, float32."""
    torch = _torch()
    _refuse_common(dropout_p, return_debug_mask, alibi_slopes, extra)
    if seqused_k is not None:
        raise Declined("seqused_k: portattn takes it only in its KV-cache form")
    window = _window(window_size_left, window_size_right)
    # The output's layout is the query's, as PyTorch's kernel and its meta function (which compiled
    # graphs trust) make it.
    out = torch.empty_like(query) if value.shape[-1] == query.shape[-1] else None
    if cum_seq_q is None and cum_seq_k is None:
        out, lse = _attempt(_dense, query, key, value, 0.0, scale, bool(is_causal), window, 0.0, return_lse=True,
                            out=out)
    elif cum_seq_q is None or cum_seq_k is None:
        raise Declined("cum_seq_q and cum_seq_k must be given together")
    else:
        out, lse = _attempt(_varlen, query, key, value, cum_seq_q, cum_seq_k, int(max_q), int(max_k), 0.0, scale,
                            bool(is_causal), window, 0.0, return_lse=True, out=out)
    return (out, lse) + _rng_outputs(torch, query)


def sdpa_forward(query, key, value, dropout_p=0.0, is_causal=False, return_debug_mask=False, *, scale=None):
    """aten::_scaled_dot_product_flash_attention on (B, H, S, D) tensors. Returns (output, logsumexp,
    cum_seq_q, cum_seq_k, max_q, max_k, rng_state, unused, debug_attn_mask) as PyTorch's kernel:
    output (B, H, Sq, Dv) laid out as the query, logsumexp (B, H, Sq) float32, no cum_seq."""
    if query.dim() != 4:
        raise Declined("SDPA query must have 4 dimensions, got %d" % query.dim())
    out, lse, rng, unused, mask = flash_forward(query.transpose(1, 2), key.transpose(1, 2), value.transpose(1, 2),
                                                None, None, query.shape[2], key.shape[2], dropout_p, is_causal,
                                                return_debug_mask, scale=scale)
    return out.transpose(1, 2), lse, None, None, query.shape[2], key.shape[2], rng, unused, mask


# Backends whose backward is an oracle rather than a fast path: taken only with slow_backward=True.
SLOW_BACKWARDS = ("cuda-generic",)
options = {"slow_backward": False}
_backends = {}  # backward call shape -> (backend name or None, the library's reason)


def _backward_backend(torch, spec, q, k, v, out, lse):
    """Which backend portattn_backward would run this call on, and the library's reason (why faster
    ones were passed over, or why none can). Asked once per call shape, as _autograd asks."""
    key = _autograd._verdict_key(spec, q, k, v)
    if key is not None and key in _backends:
        return _backends[key]
    params = _autograd._backward_params(spec, q, k, v, out, lse, out, torch.empty_like(q), torch.empty_like(k),
                                        torch.empty_like(v))
    sel = Selection()
    st = load().portattn_backward_query(ctypes.byref(params), ctypes.byref(sel))
    if st == Status.ERROR_NOT_SUPPORTED:
        answer = (None, _text(load().portattn_last_error()))
    else:
        _check(st)
        answer = (_text(sel.backend_name), _text(sel.reason))
    if key is not None:
        if len(_backends) >= 4096:
            _backends.clear()
        _backends[key] = answer
    return answer


def flash_backward(grad_out, query, key, value, out, logsumexp, cum_seq_q, cum_seq_k, max_q, max_k, dropout_p,
                   is_causal, rng_state, unused, *, scale=None, window_size_left=None, window_size_right=None,
                   **extra):
    """aten::_flash_attention_backward through portattn_backward, where a fast backend has the call
    (the library's selector decides: cuda-sm80 for its head dims; cpu for CPU tensors). A call only
    cuda-generic takes is declined unless options["slow_backward"] (activate(slow_backward=True)).
    Returns (grad_query, grad_key, grad_value) in the layouts of query, key and value."""
    torch = _torch()
    _refuse_common(dropout_p, extra=extra)
    packed = cum_seq_q is not None
    if packed != (cum_seq_k is not None):
        raise Declined("cum_seq_q and cum_seq_k must be given together")
    cu = (cum_seq_q.contiguous(), cum_seq_k.contiguous()) if packed else None
    spec = {"softmax_scale": scale, "causal": bool(is_causal), "window_size": _window(window_size_left,
            window_size_right), "softcap": 0.0, "backend": None, "cu_seqlens": cu,
            "deterministic": torch.are_deterministic_algorithms_enabled(),
            "max_seqlen": (int(max_q), int(max_k)) if packed else None}
    if 0 in grad_out.stride():  # autograd may hand over an expanded gradient
        grad_out = grad_out.contiguous()
    try:
        backend, reason = _backward_backend(torch, spec, query, key, value, out, logsumexp)
    except (PortattnError, ValueError, TypeError) as e:
        raise Declined("%s: %s" % (type(e).__name__, e)) from e
    if backend is None:
        raise Declined("no portattn backward for this call: %s" % reason)
    if backend in SLOW_BACKWARDS and not options["slow_backward"]:
        raise Declined("portattn's backward for this call is %s, a correctness oracle far slower than PyTorch's "
                       "kernel (faster ones passed over: %s)" % (backend, reason))
    # rows outside every packed sequence are not written by the backward: they start at 0
    alloc = torch.zeros_like if packed else torch.empty_like
    dq, dk, dv = alloc(query), alloc(key), alloc(value)
    params = _autograd._backward_params(spec, query, key, value, out, logsumexp, grad_out, dq, dk, dv)
    try:
        _autograd._run_backward(torch, params, query.device)
    except PortattnError as e:
        raise Declined("PortattnError: %s" % e) from e
    return dq, dk, dv


def sdpa_backward(grad_out, query, key, value, out, logsumexp, cum_seq_q, cum_seq_k, max_q, max_k, dropout_p,
                  is_causal, philox_seed, philox_offset, *, scale=None):
    """aten::_scaled_dot_product_flash_attention_backward on (B, H, S, D) tensors: flash_backward on
    their (B, S, H, D) transposes, the gradients handed back as (B, H, S, D) views."""
    t = [x.transpose(1, 2) for x in (grad_out, query, key, value, out)]
    dq, dk, dv = flash_backward(t[0], t[1], t[2], t[3], t[4], logsumexp, None, None, max_q, max_k, dropout_p,
                                is_causal, philox_seed, philox_offset, scale=scale)
    return dq.transpose(1, 2), dk.transpose(1, 2), dv.transpose(1, 2)


def lse_for_pytorch(lse):
    """portattn gives a row that sees no key LSE = -inf; PyTorch's flash kernels use +inf, which their
    backward needs to give such rows zero probability. Used when a portattn forward's LSE goes to
    PyTorch's backward."""
    torch = _torch()
    if not torch.is_tensor(lse):
        return lse
    return lse.masked_fill(torch.isneginf(lse), float("inf"))
