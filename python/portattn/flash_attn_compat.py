"""FlashAttention-2's private functions on portattn, for engines written against them (ring and
zigzag attention, USP, TransformerEngine's P2P path), which call these instead of flash_attn_func to
get the LSE and to accumulate gradients into buffers of their own:

    from portattn import flash_attn_compat as fa
    out, lse, _, _ = fa._flash_attn_forward(q, k, v, 0.0, scale, causal, -1, -1, 0.0, None, False)
    fa._flash_attn_backward(dout, q, k, v, out, lse, dq, dk, dv, 0.0, scale, causal, -1, -1, 0.0, None, False)

Argument lists and results are those of flash_attn.flash_attn_interface in FlashAttention 2.7-2.8
(window_size_left/right as two integers; the forward returns (out, softmax_lse, S_dmask, rng_state),
the backward writes dq, dk, dv and returns softmax_d); FlashAttention 2.6's forms are in
portattn.flash_attn_compat_v26. What differs: dropout_p must be 0 and alibi_slopes None (ValueError /
NotImplementedError); S_dmask is an empty tensor (it is the dropout pattern, and there is none);
rng_state is zeros; a query row that sees no key has LSE -inf (FlashAttention: +inf). The varlen
forward's block_table, leftpad_k and seqused_k raise NotImplementedError (portattn.flash_attn_varlen_func
has a KV-cache form). The backward runs portattn_backward on the backend the library picks and raises
NotImplementedError with the library's reason where none has the call. These functions carry no
autograd history, as FlashAttention's do not.
"""

from . import _autograd
from ._torch import _dense, _varlen

__all__ = ["_flash_attn_forward", "_flash_attn_varlen_forward", "_flash_attn_backward",
           "_flash_attn_varlen_backward"]


def _torch():
    import torch
    return torch


def _extras(torch, q):
    """S_dmask (there is no dropout pattern) and rng_state (no dropout state), as FlashAttention
    returns them without dropout."""
    return torch.empty((0,), dtype=q.dtype, device=q.device), torch.zeros((2,), dtype=torch.int64, device=q.device)


def _flash_attn_forward(q, k, v, dropout_p, softmax_scale, causal, window_size_left, window_size_right, softcap,
                        alibi_slopes, return_softmax):
    """q (B, Sq, H, D), k/v (B, Sk, Hk, D/Dv). Returns (out, softmax_lse (B, H, Sq) float32, S_dmask,
    rng_state)."""
    torch = _torch()
    with torch.no_grad():
        out, lse = _dense(q, k, v, dropout_p, softmax_scale, causal, (window_size_left, window_size_right), softcap,
                          alibi_slopes=alibi_slopes, return_lse=True)
    return (out, lse) + _extras(torch, q)


def _flash_attn_varlen_forward(q, k, v, cu_seqlens_q, cu_seqlens_k, max_seqlen_q, max_seqlen_k, dropout_p,
                               softmax_scale, causal, window_size_left=-1, window_size_right=-1, softcap=0.0,
                               alibi_slopes=None, return_softmax=False, block_table=None, leftpad_k=None,
                               seqused_k=None):
    """Packed q (total_q, H, D), k/v (total_k, Hk, D/Dv), int32 offsets. Returns (out, softmax_lse
    (H, total_q) float32, S_dmask, rng_state)."""
    torch = _torch()
    for name, value in (("block_table", block_table), ("leftpad_k", leftpad_k), ("seqused_k", seqused_k)):
        if value is not None:
            raise NotImplementedError("%s is not taken by portattn's _flash_attn_varlen_forward; "
                                      "portattn.flash_attn_varlen_func has a KV-cache form" % name)
    with torch.no_grad():
        out, lse = _varlen(q, k, v, cu_seqlens_q, cu_seqlens_k, max_seqlen_q, max_seqlen_k, dropout_p, softmax_scale,
                           causal, (window_size_left, window_size_right), softcap, alibi_slopes=alibi_slopes,
                           return_lse=True)
    return (out, lse) + _extras(torch, q)


def _backward(torch, spec, dout, q, k, v, out, softmax_lse, dq, dk, dv, dropout_p, alibi_slopes):
    if float(dropout_p) != 0.0:
        raise ValueError("portattn has no dropout: dropout_p must be 0.0, got %r" % (dropout_p,))
    if alibi_slopes is not None:
        raise NotImplementedError("portattn has no ALiBi: alibi_slopes must be None")
    if 0 in dout.stride():
        dout = dout.contiguous()
    reason = _autograd._no_backward_reason(torch, spec, q, k, v, out, softmax_lse)
    if reason is not None:
        raise NotImplementedError("portattn has no backward pass for this call on %s tensors: %s"
                                  % (q.device.type, reason))
    dq, dk, dv = _fill(q, k, v, dq, dk, dv)
    _autograd._run_backward(torch, _autograd._backward_params(spec, q, k, v, out, softmax_lse, dout, dq, dk, dv),
                            q.device)
    return dout


def _fill(q, k, v, dq, dk, dv):
    """The gradient buffers, allocated where the caller gave None (as FlashAttention does)."""
    return tuple(x.new_empty(x.shape) if g is None else g for x, g in ((q, dq), (k, dk), (v, dv)))


def _row_dot(torch, dout, out):
    """softmax_d's values, rowsum(dO * O) in float32, (..., S, H) -> per row and head."""
    return (dout.float() * out.float()).sum(-1)


def _flash_attn_backward(dout, q, k, v, out, softmax_lse, dq, dk, dv, dropout_p, softmax_scale, causal,
                         window_size_left, window_size_right, softcap, alibi_slopes, deterministic, rng_state=None):
    """Writes dq, dk, dv (allocated when None, as FlashAttention does, though the caller then cannot
    see them). Returns softmax_d (B, H, Sq rounded up to 128) float32: rowsum(dout * out), 0 past Sq."""
    torch = _torch()
    spec = {"softmax_scale": softmax_scale, "causal": causal, "window_size": (window_size_left, window_size_right),
            "softcap": softcap, "deterministic": deterministic, "backend": None, "cu_seqlens": None,
            "max_seqlen": None}
    dout = _backward(torch, spec, dout, q, k, v, out, softmax_lse, dq, dk, dv, dropout_p, alibi_slopes)
    B, Sq, H = q.shape[0], q.shape[1], q.shape[2]
    d = torch.zeros((B, H, (Sq + 127) // 128 * 128), dtype=torch.float32, device=q.device)
    d[:, :, :Sq] = _row_dot(torch, dout, out).transpose(1, 2)
    return d


def _flash_attn_varlen_backward(dout, q, k, v, out, softmax_lse, dq, dk, dv, cu_seqlens_q, cu_seqlens_k,
                                max_seqlen_q, max_seqlen_k, dropout_p, softmax_scale, causal, window_size_left,
                                window_size_right, softcap, alibi_slopes, deterministic, rng_state=None):
    """Packed tensors as in the varlen forward. Writes dq, dk, dv (rows outside every sequence are left
    as they were). Returns softmax_d (H, total_q + 128 * batch) float32 in FlashAttention's layout:
    sequence b's rows start at column cu_seqlens_q[b] + 128 * b; other columns 0."""
    torch = _torch()
    cu = tuple(c.contiguous() for c in (cu_seqlens_q, cu_seqlens_k))
    spec = {"softmax_scale": softmax_scale, "causal": causal, "window_size": (window_size_left, window_size_right),
            "softcap": softcap, "deterministic": deterministic, "backend": None, "cu_seqlens": cu,
            "max_seqlen": (max_seqlen_q, max_seqlen_k)}
    dout = _backward(torch, spec, dout, q, k, v, out, softmax_lse, dq, dk, dv, dropout_p, alibi_slopes)
    total, H, batch = q.shape[0], q.shape[1], cu[0].numel() - 1
    d = torch.zeros((H, total + 128 * batch), dtype=torch.float32, device=q.device)
    rows = torch.arange(total, device=q.device)
    seq = torch.searchsorted(cu[0][1:].long(), rows, right=True)  # the sequence each packed row is in
    inside = seq < batch  # rows past the last offset belong to no sequence
    col = rows + 128 * seq
    d[:, col[inside]] = _row_dot(torch, dout, out)[inside].transpose(0, 1)
    return d
