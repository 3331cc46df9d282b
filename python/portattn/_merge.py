"""portattn.merge: attention results of the same queries over disjoint key sets, combined in place."""
import ctypes

from ._core import _check, backend_id
from ._lib import DType, MergeParams, Tensor, load
from ._torch import _check_gpu_build, _torch

__all__ = ["merge"]


def _torch_dtype(torch, t, name):
    m = {torch.float16: DType.F16, torch.bfloat16: DType.BF16, torch.float32: DType.F32}
    if t.dtype not in m:
        raise TypeError("%s must be float16, bfloat16 or float32, not %s" % (name, t.dtype))
    return m[t.dtype]


def _check_args(torch, out, lse, out_part, lse_part):
    tensors = (("out", out), ("lse", lse), ("out_part", out_part), ("lse_part", lse_part))
    for name, t in tensors:
        if not isinstance(t, torch.Tensor):
            raise TypeError("%s must be a torch.Tensor, not %s" % (name, type(t).__name__))
        if t.layout != torch.strided:
            raise TypeError("%s must be a strided (dense) tensor, not %s" % (name, t.layout))
        if t.device != out.device:
            raise ValueError("%s is on %s but out is on %s" % (name, t.device, out.device))
    if out.dim() not in (3, 4):
        raise ValueError("out must be (batch, seqlen, heads, headdim) or packed (total, heads, headdim), got shape %s"
                         % (tuple(out.shape),))
    if out_part.shape != out.shape:
        raise ValueError("out_part has shape %s, out %s" % (tuple(out_part.shape), tuple(out.shape)))
    want = (out.shape[0], out.shape[2], out.shape[1]) if out.dim() == 4 else (out.shape[1], out.shape[0])
    for name, t in (("lse", lse), ("lse_part", lse_part)):
        if t.dtype != torch.float32:
            raise TypeError("%s must be float32, not %s" % (name, t.dtype))
        if tuple(t.shape) != want:
            raise ValueError("%s has shape %s, expected %s for out of shape %s" % (name, tuple(t.shape), want,
                                                                                  tuple(out.shape)))
    if torch.is_grad_enabled() and any(t.requires_grad for _, t in tensors):
        raise NotImplementedError("portattn.merge has no autograd formula: call it under torch.no_grad()")


def _lse_strides(t, packed):
    """(batch, head, seq) element strides of an LSE (B, H, S), or of a packed (H, T) as batch 1."""
    return (0,) + tuple(t.stride()) if packed else tuple(t.stride())


def merge(out, lse, out_part, lse_part, *, backend=None):
    """Merges (out_part, lse_part) into (out, lse) in place and returns (out, lse).

    Both pairs are attention results of the same queries over disjoint key sets, as flash_attn_func
    returns them with return_lse (out (B, S, H, D), lse float32 (B, H, S)), or packed as
    flash_attn_varlen_func returns them (out (T, H, D), lse (H, T)). Afterwards (out, lse) is the
    attention over the union of the keys; weights and sums in fp32. out and out_part may each be
    float16, bfloat16 or float32 (keep a float32 accumulator and float32 partials to lose nothing
    between ring steps). A row with lse -inf saw no key and its out is not read; both -inf gives
    out 0 and lse -inf. CUDA tensors run on the current stream; CPU tensors on the host.
    """
    torch = _torch()
    _check_args(torch, out, lse, out_part, lse_part)
    packed = out.dim() == 3
    p = MergeParams()
    lib = load()
    lib.portattn_merge_params_init(ctypes.byref(p))
    p.dtype, p.dtype_part = _torch_dtype(torch, out, "out"), _torch_dtype(torch, out_part, "out_part")
    p.batch, p.seqlen_q, p.heads_q, p.head_dim_v = (1,) + tuple(out.shape) if packed else tuple(out.shape)
    for field, t in (("o", out), ("o_part", out_part)):
        setattr(p, field, Tensor(t.data_ptr(), ((0,) if packed else ()) + tuple(t.stride())))
    p.lse, p.lse_part = lse.data_ptr(), lse_part.data_ptr()
    p.lse_stride[:], p.lse_part_stride[:] = _lse_strides(lse, packed), _lse_strides(lse_part, packed)
    p.backend = backend_id(backend)
    if out.device.type != "cuda":
        _check(lib.portattn_merge(ctypes.byref(p), None))
        return out, lse
    _check_gpu_build(out.device)  # a CPU-only library would take device pointers for host ones
    with torch.cuda.device(out.device):
        _check(lib.portattn_merge(ctypes.byref(p), ctypes.c_void_p(torch.cuda.current_stream(out.device).cuda_stream)))
    return out, lse
