"""Call plans: what a PyTorch call of a given shape needs, worked out once and reused.

The first call of a shape runs every Python-side check, builds the parameter struct with
make_params() and asks the library for the split-KV workspace size; the plan keeps the struct's
bytes, the output shapes and that size. A later call with the same shapes, strides, dtypes,
devices and options copies the bytes, writes this call's pointers into them and launches: the
library still validates every call (pointers, aliasing, residency), so no check that protects the
user is skipped, only Python work whose answer cannot have changed.
"""
import ctypes
import struct
import threading

from ._lib import FwdParams, Tensor, _state, load

__all__ = ["Plan", "lookup", "store", "launch", "current_stream"]

_PTR = struct.Struct("P")
_SIZE = struct.Struct("N")
_OFF = {name: getattr(FwdParams, name).offset + (Tensor.data.offset if name in "qkvo" else 0)
        for name in ("q", "k", "v", "o", "lse", "cu_seqlens_q", "cu_seqlens_k", "workspace")}
_OFF_WS_SIZE = FwdParams.workspace_size.offset
_MAX_PLANS = 4096

_plans = {}
_lock = threading.Lock()


class Plan:
    """One call shape: the struct bytes (pointers filled in per call), output shapes, workspace."""
    __slots__ = ("params", "out_shape", "lse_shape", "workspace", "device_index", "lib")

    def __init__(self, params, out_shape, lse_shape, workspace, device_index, lib):
        self.params = bytes(params)
        self.out_shape, self.lse_shape = out_shape, lse_shape
        self.workspace, self.device_index, self.lib = workspace, device_index, lib


def lookup(key):
    """The plan of `key`, or None. A plan made for another loaded library is not reused."""
    plan = _plans.get(key)
    return plan if plan is not None and plan.lib is _state["lib"] else None


def store(key, plan):
    with _lock:
        if len(_plans) >= _MAX_PLANS:  # shapes that never repeat: start afresh rather than grow
            _plans.clear()
        _plans[key] = plan


def workspace_size(params):
    """portattn_forward_workspace_size for these params (0 when the library takes none)."""
    lib = load()
    size = ctypes.c_size_t(0)
    st = lib.portattn_forward_workspace_size(ctypes.byref(params), ctypes.byref(size))
    return size.value if st == 0 else 0


def current_stream(torch, index):
    """The raw cudaStream_t of the current stream of device `index` (the private accessor is what
    torch's own extensions use; the public one builds a Stream object per call)."""
    raw = _raw_stream[0]
    if raw is None:
        raw = _raw_stream[0] = getattr(torch._C, "_cuda_getCurrentRawStream", False)
    return raw(index) if raw else torch.cuda.current_stream(index).cuda_stream


_raw_stream = [None]


def launch(plan, pointers, workspace, stream):
    """portattn_forward on the plan's struct with `pointers` ({field: address}) and an optional
    workspace tensor; returns the status."""
    p = FwdParams.from_buffer_copy(plan.params)
    for name, addr in pointers.items():
        _PTR.pack_into(p, _OFF[name], addr)
    if workspace is not None:
        _PTR.pack_into(p, _OFF["workspace"], workspace.data_ptr())
        _SIZE.pack_into(p, _OFF_WS_SIZE, plan.workspace)
    return plan.lib.portattn_forward(ctypes.byref(p), stream)
