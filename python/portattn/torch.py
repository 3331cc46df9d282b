"""portattn as PyTorch's flash attention (PyTorch 2.11+: torch.nn.attention's flash implementation
registry, the way FlashAttention-3/4 plug in).

    import portattn.torch
    portattn.torch.activate()        # SDPA's FLASH backend, torch.compile and context_parallel run on portattn
    ...
    portattn.torch.restore()         # PyTorch as it was (the implementation active before, if any)

While active, portattn computes the CUDA kernels of aten::_scaled_dot_product_flash_attention,
aten::_flash_attention_forward and their two backward operators. A call portattn does not take
(dropout, a debug mask, ALiBi, seqused_k, a backward only portattn's cuda-generic oracle has, ...)
runs on PyTorch's own kernel, the one that was registered before activation; last_fallback_reason()
says why and counts() how often. activate(fallback=False) raises RuntimeError with the reason
instead; activate(slow_backward=True) runs such backwards on cuda-generic.
On a PyTorch without the registry (before 2.11) activate() raises RuntimeError.
"""

import contextlib
import warnings

from . import _aten_flash
from ._torch import _check_gpu_build

__all__ = ["NAME", "activate", "restore", "is_active", "activated", "last_fallback_reason", "counts"]

NAME = "portattn"

# (aten operator, portattn's kernel, position of its logsumexp argument in a backward call)
_OPS = (("_scaled_dot_product_flash_attention", _aten_flash.sdpa_forward, None),
        ("_flash_attention_forward", _aten_flash.flash_forward, None),
        ("_scaled_dot_product_flash_attention_backward", _aten_flash.sdpa_backward, 5),
        ("_flash_attention_backward", _aten_flash.flash_backward, 5))

_state = {"fallback": True, "previous": None, "reason": None, "portattn": 0, "pytorch": 0}


def _api():
    """torch.nn.attention's registry functions, or RuntimeError naming what is missing."""
    import torch
    att = getattr(getattr(torch, "nn", None), "attention", None)
    needed = ("register_flash_attention_impl", "activate_flash_attention_impl", "restore_flash_attention_impl")
    missing = [n for n in needed if not hasattr(att, n)]
    if missing:
        raise RuntimeError("PyTorch %s has no torch.nn.attention.%s (the flash attention registry came with "
                           "PyTorch 2.11): portattn cannot be activated here; call portattn.flash_attn_func "
                           "directly" % (torch.__version__, missing[0]))
    return att


def _current(att):
    fn = getattr(att, "current_flash_attention_impl", None)
    if fn is None:
        from torch.nn.attention import _registry
        fn = _registry.current_flash_attention_impl
    return fn()


def _registered(att):
    fn = getattr(att, "list_flash_attention_impls", None)
    return NAME in fn() if fn is not None else False


def _original_kernel(torch, op):
    """The CUDA kernel registered for aten::op now (before portattn's): the fallback."""
    get = getattr(getattr(torch, "library", None), "get_kernel", None)
    if get is not None:
        return get("aten::" + op, "CUDA")
    return torch._C._dispatch_get_computed_kernel_for_dispatch_key("aten::" + op, torch._C.DispatchKey.CUDA)


def _dispatching(op, kernel, original, lse_at):
    """The function registered for `op`: portattn's kernel, or `original` with the reason kept."""
    def run(keyset, *args, **kwargs):
        try:
            result = kernel(*args, **kwargs)
        except _aten_flash.Declined as e:
            reason = "%s: %s" % (op, e)
            _state["reason"] = reason
            if not _state["fallback"]:
                raise RuntimeError("portattn declined %s (activated with fallback=False)" % reason) from None
            _state["pytorch"] += 1
            if lse_at is not None:
                args = args[:lse_at] + (_aten_flash.lse_for_pytorch(args[lse_at]),) + args[lse_at + 1:]
            return original.call_boxed(keyset, *args, **kwargs)
        _state["portattn"] += 1
        return result
    run.__name__ = "portattn_" + op
    return run


class _Handle:
    """What torch.nn.attention keeps while portattn is active; remove() takes the kernels out of the
    dispatcher, which then dispatches to the kernels registered before."""

    def __init__(self, library):
        self.library = library

    def remove(self):
        lib, self.library = self.library, None
        if lib is not None and hasattr(lib, "_destroy"):
            lib._destroy()


def _register():
    import torch
    originals = {op: _original_kernel(torch, op) for op, _, _ in _OPS}
    lib = torch.library.Library("aten", "IMPL", "CUDA")  # noqa: TOR901
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=".*Overriding a previously registered kernel.*")
        for op, kernel, lse_at in _OPS:
            lib.impl(op, _dispatching(op, kernel, originals[op], lse_at), "CUDA", with_keyset=True)
    return _Handle(lib)


def activate(*, fallback=True, slow_backward=False):
    """Make portattn PyTorch's flash attention. fallback=True: calls portattn does not take run on
    PyTorch's own kernel (last_fallback_reason() says why); False: they raise RuntimeError.
    slow_backward=True: backwards that only cuda-generic (correct, far slower) has run on it.
    Raises RuntimeError on a PyTorch without the registry, PortattnError when the loaded library has
    no GPU backend."""
    att = _api()
    _check_gpu_build("cuda")
    _state["fallback"] = bool(fallback)
    _aten_flash.options["slow_backward"] = bool(slow_backward)
    current = _current(att)
    if current != NAME:
        _state["previous"] = current
    if not _registered(att):
        att.register_flash_attention_impl(NAME, register_fn=_register)
    att.activate_flash_attention_impl(NAME)


def restore():
    """PyTorch's flash attention as before activate(): the default kernels, or the implementation
    that was active then. Does nothing when portattn is not the active implementation."""
    att = _api()
    if _current(att) != NAME:
        return
    att.restore_flash_attention_impl()
    previous, _state["previous"] = _state["previous"], None
    if previous is not None:
        att.activate_flash_attention_impl(previous)


def is_active():
    try:
        return _current(_api()) == NAME
    except RuntimeError:
        return False


@contextlib.contextmanager
def activated(*, fallback=True, slow_backward=False):
    """with portattn.torch.activated(): ... -- activate() on entry, restore() on exit."""
    activate(fallback=fallback, slow_backward=slow_backward)
    try:
        yield
    finally:
        restore()


def last_fallback_reason():
    """Why the last call portattn declined ran on PyTorch's kernel (or raised): None if none has."""
    return _state["reason"]


def counts():
    """Calls computed by portattn and calls given back to PyTorch's kernel since import."""
    return {"portattn": _state["portattn"], "pytorch": _state["pytorch"]}
