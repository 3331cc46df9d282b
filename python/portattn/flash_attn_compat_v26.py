"""FlashAttention 2.6's private functions on portattn (flash_attn 2.6.0-2.6.3): the argument lists
and results of portattn.flash_attn_compat (FlashAttention 2.7-2.8) in their earlier forms, for
engines that branch on the FlashAttention version (ring-flash-attention and others call the 2.6
forms when flash_attn.__version__ <= 2.6.3):

  - the window is one window_size pair (2.7 split it into window_size_left, window_size_right);
  - the forwards return (out, q, k, v, out_padded, softmax_lse, S_dmask, rng_state): q, k, v are
    the inputs and out_padded is out (portattn pads nothing);
  - the backwards return (dq, dk, dv, softmax_d);
  - the varlen forward's last argument is block_table (NotImplementedError when given).

Everything else (what is refused, S_dmask, rng_state, LSE of rows without keys, softmax_d's
layout) is as documented in portattn.flash_attn_compat.
"""

from . import flash_attn_compat as _fa

__all__ = ["_flash_attn_forward", "_flash_attn_varlen_forward", "_flash_attn_backward",
           "_flash_attn_varlen_backward"]


def _flash_attn_forward(q, k, v, dropout_p, softmax_scale, causal, window_size, softcap, alibi_slopes,
                        return_softmax):
    out, lse, s_dmask, rng = _fa._flash_attn_forward(q, k, v, dropout_p, softmax_scale, causal, window_size[0],
                                                     window_size[1], softcap, alibi_slopes, return_softmax)
    return out, q, k, v, out, lse, s_dmask, rng


def _flash_attn_varlen_forward(q, k, v, cu_seqlens_q, cu_seqlens_k, max_seqlen_q, max_seqlen_k, dropout_p,
                               softmax_scale, causal, window_size=(-1, -1), softcap=0.0, alibi_slopes=None,
                               return_softmax=False, block_table=None):
    out, lse, s_dmask, rng = _fa._flash_attn_varlen_forward(
        q, k, v, cu_seqlens_q, cu_seqlens_k, max_seqlen_q, max_seqlen_k, dropout_p, softmax_scale, causal,
        window_size[0], window_size[1], softcap, alibi_slopes, return_softmax, block_table=block_table)
    return out, q, k, v, out, lse, s_dmask, rng


def _flash_attn_backward(dout, q, k, v, out, softmax_lse, dq, dk, dv, dropout_p, softmax_scale, causal,
                         window_size, softcap, alibi_slopes, deterministic, rng_state=None):
    dq, dk, dv = _fa._fill(q, k, v, dq, dk, dv)
    d = _fa._flash_attn_backward(dout, q, k, v, out, softmax_lse, dq, dk, dv, dropout_p, softmax_scale, causal,
                                 window_size[0], window_size[1], softcap, alibi_slopes, deterministic, rng_state)
    return dq, dk, dv, d


def _flash_attn_varlen_backward(dout, q, k, v, out, softmax_lse, dq, dk, dv, cu_seqlens_q, cu_seqlens_k,
                                max_seqlen_q, max_seqlen_k, dropout_p, softmax_scale, causal, window_size, softcap,
                                alibi_slopes, deterministic, rng_state=None):
    dq, dk, dv = _fa._fill(q, k, v, dq, dk, dv)
    d = _fa._flash_attn_varlen_backward(dout, q, k, v, out, softmax_lse, dq, dk, dv, cu_seqlens_q, cu_seqlens_k,
                                        max_seqlen_q, max_seqlen_k, dropout_p, softmax_scale, causal,
                                        window_size[0], window_size[1], softcap, alibi_slopes, deterministic,
                                        rng_state)
    return dq, dk, dv, d
