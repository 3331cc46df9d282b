"""The call path without PyTorch: parameters from plain ints, forward, query, backends, version."""
import ctypes
import math
import operator

from ._lib import Backend, BackendInfo, BACKEND_COUNT, DType, FwdParams, PortattnError, Selection, Status, load

__all__ = ["make_params", "forward", "query", "forward_raw", "query_raw", "backends", "version",
           "backend_id", "dtype_id", "last_error", "address"]

_DTYPE_NAMES = {"f16": DType.F16, "fp16": DType.F16, "float16": DType.F16, "half": DType.F16,
                "bf16": DType.BF16, "bfloat16": DType.BF16,
                "f32": DType.F32, "fp32": DType.F32, "float32": DType.F32, "float": DType.F32}


def _text(b):
    return b.decode("utf-8", "replace") if b else ""


def last_error():
    """portattn_last_error() of this thread."""
    return _text(load().portattn_last_error())


def _check(status):
    if status != Status.SUCCESS:
        lib = load()
        raise PortattnError(status, last_error(), _text(lib.portattn_status_string(status)))


def dtype_id(dtype):
    """A DType from a DType/int, a name ("bf16", "fp16", "float32", ...) or a torch dtype."""
    if isinstance(dtype, DType):
        return dtype
    if isinstance(dtype, int) and not isinstance(dtype, bool):
        return DType(dtype)
    name = str(dtype).lower()
    name = name[len("torch."):] if name.startswith("torch.") else name
    if name not in _DTYPE_NAMES:
        raise TypeError("dtype %r is not supported by portattn (float16, bfloat16, float32)" % (dtype,))
    return _DTYPE_NAMES[name]


def backend_id(backend):
    """A Backend from None/"auto", a name ("cpu", "cuda-generic", ...), a Backend or an int."""
    if backend is None:
        return Backend.AUTO
    if isinstance(backend, str):
        ok = ctypes.c_int(0)
        bid = load().portattn_backend_from_name(backend.encode(), ctypes.byref(ok))
        if not ok.value:
            names = ", ".join(["auto"] + [b["name"] for b in backends()])
            raise ValueError("unknown portattn backend %r (one of: %s)" % (backend, names))
        return Backend(bid)
    bid = operator.index(backend)
    if not 0 <= bid < BACKEND_COUNT:
        raise ValueError("backend id %d out of range" % bid)
    return Backend(bid)


def address(obj):
    """The address of a buffer as an int: None, an int, a ctypes object, an array.array, a numpy
    array or anything with data_ptr(). The caller keeps the object alive during the call."""
    if obj is None:
        return None
    if isinstance(obj, bool):
        raise TypeError("a pointer cannot be a bool")
    if isinstance(obj, int):
        return obj or None
    if isinstance(obj, ctypes._SimpleCData) and isinstance(obj, ctypes.c_void_p):
        return obj.value
    if isinstance(obj, ctypes._Pointer):
        return ctypes.cast(obj, ctypes.c_void_p).value
    if isinstance(obj, (ctypes.Array, ctypes.Structure, ctypes._SimpleCData)):
        return ctypes.addressof(obj)
    if hasattr(obj, "buffer_info"):  # array.array
        return obj.buffer_info()[0]
    if hasattr(obj, "data_ptr"):  # torch.Tensor
        return obj.data_ptr() or None
    if hasattr(obj, "__array_interface__"):  # numpy
        return obj.__array_interface__["data"][0] or None
    raise TypeError("cannot take the address of %s" % type(obj).__name__)


def _strides(given, s, h, d, name, n=4):
    if given is None:
        return (s * h * d, h * d, d, 1)
    st = tuple(int(x) for x in given)
    if len(st) != n:
        raise ValueError("%s must have %d strides, got %r" % (name, n, given))
    return st


def make_params(q, k, v, o, *, dtype, batch, seqlen_q, seqlen_k, heads_q, heads_kv, head_dim_qk,
                head_dim_v=None, q_stride=None, k_stride=None, v_stride=None, o_stride=None,
                lse=None, lse_stride=None, cu_seqlens_q=None, cu_seqlens_k=None, max_seqlen_q=0,
                max_seqlen_k=0, softmax_scale=None, softcap=0.0, causal=False, window_size=(-1, -1),
                backend=None):
    """A FwdParams (portattn_fwd_params_init, then the fields). Pointers: see address(). Strides are
    element strides (batch, seq, heads, dim); default contiguous BSHD (varlen: packed, stride[0]
    ignored). lse_stride: (batch, head, seq), default contiguous [B, Hq, Sq] (varlen [Hq, total]).
    softmax_scale None = 1/sqrt(head_dim_qk)."""
    lib = load()
    p = FwdParams()
    lib.portattn_fwd_params_init(ctypes.byref(p))
    head_dim_v = head_dim_qk if head_dim_v is None else head_dim_v
    p.dtype = dtype_id(dtype)
    p.batch, p.seqlen_q, p.seqlen_k = int(batch), int(seqlen_q), int(seqlen_k)
    p.heads_q, p.heads_kv = int(heads_q), int(heads_kv)
    p.head_dim_qk, p.head_dim_v = int(head_dim_qk), int(head_dim_v)
    for field, ptr, stride, s, h, d in (
            ("q", q, q_stride, p.seqlen_q, p.heads_q, p.head_dim_qk),
            ("k", k, k_stride, p.seqlen_k, p.heads_kv, p.head_dim_qk),
            ("v", v, v_stride, p.seqlen_k, p.heads_kv, p.head_dim_v),
            ("o", o, o_stride, p.seqlen_q, p.heads_q, p.head_dim_v)):
        t = getattr(p, field)
        t.data = address(ptr)
        t.stride[:] = _strides(stride, s, h, d, field + "_stride")
    p.lse = address(lse)
    if p.lse:
        varlen = cu_seqlens_q is not None
        default = (0, p.seqlen_q, 1) if varlen else (p.heads_q * p.seqlen_q, p.seqlen_q, 1)
        p.lse_stride[:] = default if lse_stride is None else _strides(lse_stride, 0, 0, 0, "lse_stride", 3)
    p.cu_seqlens_q, p.cu_seqlens_k = address(cu_seqlens_q), address(cu_seqlens_k)
    p.max_seqlen_q, p.max_seqlen_k = int(max_seqlen_q), int(max_seqlen_k)
    if softmax_scale is not None:
        softmax_scale = float(softmax_scale)
        if softmax_scale == 0.0 or not math.isfinite(softmax_scale):
            raise ValueError("softmax_scale = %r: must be finite and nonzero (None = 1/sqrt(head_dim))"
                             % softmax_scale)
        p.softmax_scale = softmax_scale
    p.softcap = float(softcap or 0.0)
    p.causal = 1 if causal else 0
    try:
        left, right = (int(x) for x in window_size)
    except (TypeError, ValueError):
        raise ValueError("window_size must be a pair (left, right), got %r" % (window_size,)) from None
    p.window_left, p.window_right = left, right
    p.backend = backend_id(backend)
    return p


def forward(params, stream=None):
    """portattn_forward(params, stream); raises PortattnError on failure. stream: a
    cudaStream_t/hipStream_t as an int (None/0 = the default stream)."""
    _check(load().portattn_forward(ctypes.byref(params), ctypes.c_void_p(stream or None)))


def query(params):
    """portattn_forward_query: dict(backend, backend_id, kernel, reason) for what forward would run."""
    sel = Selection()
    _check(load().portattn_forward_query(ctypes.byref(params), ctypes.byref(sel)))
    return {"backend": _text(sel.backend_name), "backend_id": int(sel.backend),
            "kernel": _text(sel.kernel), "reason": _text(sel.reason)}


def forward_raw(q, k, v, o, *, stream=None, **kwargs):
    """Attention on raw pointers (ints, ctypes buffers, array.array, ...): make_params() then
    forward(). Works without PyTorch; host buffers run on the CPU backend."""
    forward(make_params(q, k, v, o, **kwargs), stream)


def query_raw(q, k, v, o, **kwargs):
    """query() for make_params(q, k, v, o, **kwargs)."""
    return query(make_params(q, k, v, o, **kwargs))


def backends():
    """Every backend id with portattn_backend_get_info: dicts of id, name, compiled, available, detail."""
    lib = load()
    out = []
    for bid in range(1, BACKEND_COUNT):
        info = BackendInfo()
        _check(lib.portattn_backend_get_info(bid, ctypes.byref(info)))
        out.append({"id": int(info.backend), "name": _text(info.name), "compiled": bool(info.compiled),
                    "available": bool(info.available), "detail": _text(info.detail)})
    return out


def version():
    """The loaded library's version, "major.minor.patch"."""
    v = load().portattn_version()
    return "%d.%d.%d" % (v // 10000, v // 100 % 100, v % 100)
