"""Gradients for flash_attn_func / flash_attn_varlen_func: a torch.autograd.Function whose forward runs
portattn's forward (keeping O and the LSE) and whose backward runs portattn_backward into fresh
dq, dk, dv. _torch.py sends a call here when grad mode is on, an input requires grad and the
tensors' device has a backward pass."""
import ctypes

from ._core import _check, backend_id
from ._lib import BwdParams, DType, load

__all__ = ["has_backward", "attention"]


def has_backward(device):
    """Whether tensors on `device` have a backward pass. The CPU backend's is the verified one;
    cuda-generic's has not run on a GPU yet, so GPU tensors are refused by the caller until it has."""
    return device.type == "cpu"


def _set_tensor(field, t, strides):
    field.data = t.data_ptr() or None
    field.stride[:] = strides


def _backward_params(spec, q, k, v, out, lse, dout, dq, dk, dv):
    """The BwdParams of one call; spec holds the forward's non-tensor arguments."""
    lib = load()
    p = BwdParams()
    lib.portattn_bwd_params_init(ctypes.byref(p))
    p.dtype = {"torch.float16": DType.F16, "torch.bfloat16": DType.BF16, "torch.float32": DType.F32}[str(q.dtype)]
    varlen = spec["cu_seqlens"] is not None
    # Varlen tensors are packed (total, H, D): a batch of one with an ignored batch stride.
    lead = (lambda t: (0,) + t.stride()) if varlen else (lambda t: t.stride())
    if varlen:
        cu_q, cu_k = spec["cu_seqlens"]  # contiguous int32, as the forward checked and used them
        p.batch, p.seqlen_q, p.seqlen_k = cu_q.numel() - 1, q.shape[0], k.shape[0]
        p.cu_seqlens_q, p.cu_seqlens_k = cu_q.data_ptr(), cu_k.data_ptr()
        # the forward's clamp: flash_attn callers pass generous bounds
        p.max_seqlen_q, p.max_seqlen_k = (min(int(m), n) for m, n in zip(spec["max_seqlen"], (q.shape[0], k.shape[0])))
    else:
        p.batch, p.seqlen_q, p.seqlen_k = q.shape[0], q.shape[1], k.shape[1]
    p.heads_q, p.heads_kv, p.head_dim_qk, p.head_dim_v = q.shape[-2], k.shape[-2], q.shape[-1], v.shape[-1]
    for name, t in (("q", q), ("k", k), ("v", v), ("o", out), ("dout", dout), ("dq", dq), ("dk", dk), ("dv", dv)):
        _set_tensor(getattr(p, name), t, lead(t))
    p.lse = lse.data_ptr()
    p.lse_stride[:] = lead(lse)
    if spec["softmax_scale"] is not None:
        p.softmax_scale = float(spec["softmax_scale"])
    p.softcap = float(spec["softcap"] or 0.0)
    p.causal = 1 if spec["causal"] else 0
    p.window_left, p.window_right = (int(x) for x in spec["window_size"])
    p.deterministic = 1 if spec["deterministic"] else 0
    p.backend = backend_id(spec["backend"])
    return p


_FUNCTION = {}


def _function(torch):
    """The autograd.Function, defined once PyTorch is imported (the binding works without it)."""
    if "fn" in _FUNCTION:
        return _FUNCTION["fn"]

    class PortattnAttention(torch.autograd.Function):
        @staticmethod
        def forward(ctx, run, spec, q, k, v):
            out, lse = run(q, k, v)  # grad mode is off in here: portattn's plain forward
            ctx.spec = spec
            ctx.save_for_backward(q, k, v, out, lse)
            ctx.mark_non_differentiable(lse)
            return out, lse

        @staticmethod
        def backward(ctx, dout, _dlse):  # the LSE is an output without a gradient, as in flash_attn
            q, k, v, out, lse = ctx.saved_tensors
            # Rows outside every varlen sequence are not written by the backward: start them at 0.
            alloc = torch.zeros_like if ctx.spec["cu_seqlens"] is not None else torch.empty_like
            dq, dk, dv = alloc(q), alloc(k), alloc(v)
            dout = dout.contiguous()  # autograd may hand over an expanded (stride 0) or strided view
            params = _backward_params(ctx.spec, q, k, v, out, lse, dout, dq, dk, dv)
            if q.device.type == "cuda":  # on the current stream, as the forward
                with torch.cuda.device(q.device):
                    stream = torch.cuda.current_stream(q.device).cuda_stream
                    _check(load().portattn_backward(ctypes.byref(params), ctypes.c_void_p(stream or None)))
            else:
                _check(load().portattn_backward(ctypes.byref(params), None))
            need = ctx.needs_input_grad
            return None, None, dq if need[2] else None, dk if need[3] else None, dv if need[4] else None

    _FUNCTION["fn"] = PortattnAttention
    return PortattnAttention


def attention(torch, run, q, k, v, *, softmax_scale, causal, window_size, softcap, deterministic, backend,
              return_lse, out, cu_seqlens=None, max_seqlen=None):
    """Differentiable attention: run(q, k, v) is the plain forward returning (out, lse)."""
    if out is not None:
        raise ValueError("out= cannot be used when q, k or v require grad (autograd needs its own output)")
    if cu_seqlens is not None:
        # kept alive with the graph for the backward; run() checks them (type, dtype, device)
        cu_seqlens = tuple(c.contiguous() if isinstance(c, torch.Tensor) else c for c in cu_seqlens)
    spec = {"softmax_scale": softmax_scale, "causal": causal, "window_size": window_size, "softcap": softcap,
            "deterministic": deterministic, "backend": backend, "cu_seqlens": cu_seqlens, "max_seqlen": max_seqlen}
    o, lse = _function(torch).apply(run, spec, q, k, v)
    return (o, lse) if return_lse else o
