"""Gradients for flash_attn_func / flash_attn_varlen_func: a torch.autograd.Function whose forward runs
portattn's forward (keeping O and the LSE) and whose backward runs portattn_backward into fresh
dq, dk, dv, on CPU tensors (the CPU backend) and on GPU tensors (the backend the library's selector
picks; scratch from torch's allocator, launched on the current stream). _torch.py sends a call here
when grad mode is on and an input requires grad. A call that no backend can differentiate (a forced
backend without a backward pass, a GPU whose backends have none) raises NotImplementedError in the
forward: a result without autograd history would let a model train with no gradient through it."""
import ctypes

from ._core import _check, _text, backend_id
from ._lib import BwdParams, DType, Selection, Status, _state, load

__all__ = ["attention"]


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


# Whether a call shape has a backward: key -> None (it has) or the library's reason (it has not).
# The answer depends on shapes, strides, dtypes, device, options and how the inputs are aligned (a
# vectorised kernel may need 16 bytes), never on the data.
_verdicts = {}
_MAX_VERDICTS = 4096


def _verdict_key(spec, q, k, v):
    cu = spec["cu_seqlens"]
    try:
        key = (_state["lib"], q.device, q.dtype, q.shape, q.stride(), k.shape, k.stride(), v.shape, v.stride(),
               spec["softmax_scale"], spec["softcap"], bool(spec["causal"]), tuple(spec["window_size"]),
               bool(spec["deterministic"]), spec["backend"], q.data_ptr() % 16, k.data_ptr() % 16, v.data_ptr() % 16,
               None if cu is None else (cu[0].shape, cu[1].shape, tuple(int(m) for m in spec["max_seqlen"])))
        hash(key)
        return key
    except TypeError:  # an option that cannot be a key: ask every time
        return None


def _no_backward_reason(torch, spec, q, k, v, out, lse):
    """None when portattn_backward can run this call, else the library's reason. Asked with the
    forward's own O and LSE and scratch gradients (the query reads no data; pointers and strides
    are what the backends judge), once per call shape."""
    key = _verdict_key(spec, q, k, v)
    if key is not None and key in _verdicts:
        return _verdicts[key]
    params = _backward_params(spec, q, k, v, out, lse, out, torch.empty_like(q), torch.empty_like(k),
                              torch.empty_like(v))
    sel = Selection()
    st = load().portattn_backward_query(ctypes.byref(params), ctypes.byref(sel))
    if st == Status.ERROR_NOT_SUPPORTED:
        reason = _text(load().portattn_last_error())
    else:
        _check(st)  # the forward accepted these arguments: anything else is the library's error to report
        reason = None
    if key is not None:
        if len(_verdicts) >= _MAX_VERDICTS:
            _verdicts.clear()
        _verdicts[key] = reason
    return reason


def _refuse(device, reason, needs):
    names = [n for n, need in zip("qkv", needs) if need]
    raise NotImplementedError(
        "portattn has no backward pass for this call on %s tensors (%s), and %s require%s grad: the result "
        "would carry no gradient. Run under torch.no_grad() / torch.inference_mode(), or pass detached tensors, "
        "for inference" % (device.type, reason, ", ".join(names), "s" if len(names) == 1 else ""))


def _run_backward(torch, params, device):
    """portattn_backward on the current stream of `device` (the stream autograd runs this node's
    backward on), with its workspace from torch's allocator; CPU tensors run synchronously."""
    lib = load()
    if device.type != "cuda":
        _check(lib.portattn_backward(ctypes.byref(params), None))
        return
    with torch.cuda.device(device):
        size = ctypes.c_size_t(0)
        _check(lib.portattn_backward_workspace_size(ctypes.byref(params), ctypes.byref(size)))
        ws = torch.empty(size.value, dtype=torch.uint8, device=device) if size.value else None
        if ws is not None:  # freed after the launch: the allocator reuses it in stream order
            params.workspace, params.workspace_size = ws.data_ptr(), size.value
        stream = torch.cuda.current_stream(device).cuda_stream
        _check(lib.portattn_backward(ctypes.byref(params), ctypes.c_void_p(stream or None)))


_FUNCTION = {}


def _function(torch):
    """The autograd.Function, defined once PyTorch is imported (the binding works without it)."""
    if "fn" in _FUNCTION:
        return _FUNCTION["fn"]

    class PortattnAttention(torch.autograd.Function):
        @staticmethod
        def forward(ctx, run, spec, q, k, v):
            out, lse = run(q, k, v)  # grad mode is off in here: portattn's plain forward
            reason = _no_backward_reason(torch, spec, q, k, v, out, lse)
            if reason is not None:
                _refuse(q.device, reason, ctx.needs_input_grad[2:])
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
            _run_backward(torch, _backward_params(ctx.spec, q, k, v, out, lse, dout, dq, dk, dv), q.device)
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
