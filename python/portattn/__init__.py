"""portattn for Python: a ctypes binding to libportattn (no compiler needed).

    import portattn
    out = portattn.flash_attn_func(q, k, v, causal=True)          # PyTorch (B, S, H, D) tensors
    out, lse = portattn.flash_attn_varlen_func(q, k, v, cu_q, cu_k, max_q, max_k, return_lse=True)
    out, lse, _ = portattn.flash_attn_func(q, k, v, return_attn_probs=True)   # as flash_attn: (out, lse, None)
    out = portattn.flash_attn_qkvpacked_func(qkv)    # also kvpacked, varlen_qkvpacked, varlen_kvpacked
    out = portattn.flash_attn_with_kvcache(q, k_cache, v_cache, k, v, cache_seqlens=lens, block_table=bt)
    portattn.which(q, k, v, causal=True)   # {'backend': 'cuda-generic', 'kernel': ..., 'reason': ...}
    portattn.merge(out, lse, out_part, lse_part)   # in place: attention over both key sets (ring steps)
    portattn.backends(), portattn.version()
    portattn.forward_raw(q_ptr, k_ptr, v_ptr, o_ptr, dtype="f32", batch=..., ...)  # no PyTorch

The library is found through $PORTATTN_LIBRARY (a file or folder), then the copy bundled in this
package (wheels from scripts/wheel.sh carry one), then the repository's build/ and build-*/
folders, then the system search path (the libportattn0 package); portattn.load() loads it
explicitly. Its struct layout is checked against this binding's when it is loaded.
"""
from ._lib import (Backend, BackendInfo, DType, FwdParams, PortattnError, PortattnLoadError, Selection, Status,
                   Tensor, library_path, load)
from ._core import (address, backend_id, backends, dtype_id, forward, forward_raw, last_error, make_params, query,
                    query_raw, version)
from ._torch import (flash_attn_func, flash_attn_kvpacked_func, flash_attn_qkvpacked_func, flash_attn_varlen_func,
                     flash_attn_varlen_kvpacked_func, flash_attn_varlen_qkvpacked_func, which)
from ._kvcache import flash_attn_with_kvcache
from ._merge import merge
from ._version import __version__


def _define_ops():
    """The torch.compile operators, defined at import where PyTorch is already loaded (not while a
    compilation traces the first call)."""
    import sys
    torch = sys.modules.get("torch")
    if torch is not None:
        from . import _ops
        _ops.available(torch)


_define_ops()

__all__ = ["flash_attn_func", "flash_attn_varlen_func", "flash_attn_with_kvcache", "merge", "flash_attn_qkvpacked_func", "flash_attn_kvpacked_func",
           "flash_attn_varlen_qkvpacked_func", "flash_attn_varlen_kvpacked_func", "which", "backends", "version",
           "forward_raw", "query_raw", "make_params", "forward", "query", "load", "library_path", "last_error",
           "address", "backend_id", "dtype_id", "PortattnError", "PortattnLoadError", "Status", "DType", "Backend",
           "Tensor", "FwdParams", "Selection", "BackendInfo", "__version__"]
