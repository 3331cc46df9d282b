"""Finding and loading libportattn, and its C types (a mirror of include/portattn.h)."""
import ctypes
import ctypes.util
import enum
import glob
import os
import threading

__all__ = ["Status", "DType", "Backend", "Tensor", "FwdParams", "BwdParams", "MergeParams", "Selection", "BackendInfo",
           "PortattnError", "PortattnLoadError", "load", "library_path", "candidates"]

# ---- enums ----------------------------------------------------------------------------------


class Status(enum.IntEnum):
    """portattn_status_t."""
    SUCCESS = 0
    ERROR_INVALID_ARGUMENT = 1
    ERROR_NOT_SUPPORTED = 2
    ERROR_BACKEND_UNAVAILABLE = 3
    ERROR_OUT_OF_MEMORY = 4
    ERROR_DEVICE = 5
    ERROR_INTERNAL = 6


class DType(enum.IntEnum):
    """portattn_dtype_t."""
    F16 = 1
    BF16 = 2
    F32 = 3


class Backend(enum.IntEnum):
    """portattn_backend_t, in the selector's order of preference."""
    AUTO = 0
    CUDA_SM100 = 1
    CUDA_SM90 = 2
    CUDA_SM80 = 3
    HIP_CDNA = 4
    HIP_RDNA3 = 5
    CUDA_GENERIC = 6
    CPU = 7


BACKEND_COUNT = 8

# ---- structs (C enums are int-sized on every ABI portattn targets) ---------------------------


class Tensor(ctypes.Structure):
    """portattn_tensor_t: a pointer and int64 element strides for (batch, seq, heads, head_dim)."""
    _fields_ = [("data", ctypes.c_void_p), ("stride", ctypes.c_int64 * 4)]


class FwdParams(ctypes.Structure):
    """portattn_fwd_params_t. Create with portattn.make_params() or init with the library."""
    _fields_ = [
        ("struct_size", ctypes.c_size_t),
        ("dtype", ctypes.c_int),
        ("batch", ctypes.c_int64),
        ("seqlen_q", ctypes.c_int64),
        ("seqlen_k", ctypes.c_int64),
        ("heads_q", ctypes.c_int64),
        ("heads_kv", ctypes.c_int64),
        ("head_dim_qk", ctypes.c_int64),
        ("head_dim_v", ctypes.c_int64),
        ("q", Tensor),
        ("k", Tensor),
        ("v", Tensor),
        ("o", Tensor),
        ("lse", ctypes.c_void_p),  # float *
        ("lse_stride", ctypes.c_int64 * 3),
        ("cu_seqlens_q", ctypes.c_void_p),  # const int32_t *
        ("cu_seqlens_k", ctypes.c_void_p),
        ("max_seqlen_q", ctypes.c_int64),
        ("max_seqlen_k", ctypes.c_int64),
        ("softmax_scale", ctypes.c_float),
        ("softcap", ctypes.c_float),
        ("causal", ctypes.c_int),
        ("window_left", ctypes.c_int64),
        ("window_right", ctypes.c_int64),
        ("backend", ctypes.c_int),
        ("seqused_k", ctypes.c_void_p),
        ("block_table", ctypes.c_void_p),
        ("block_table_stride", ctypes.c_int64),
        ("page_size", ctypes.c_int64),
        ("num_pages", ctypes.c_int64),
        ("k_new", Tensor),
        ("v_new", Tensor),
        ("seqlen_new", ctypes.c_int64),
        ("workspace", ctypes.c_void_p),
        ("workspace_size", ctypes.c_size_t),
        ("num_splits", ctypes.c_int),
    ]


class BwdParams(ctypes.Structure):
    """portattn_bwd_params_t: the forward's problem (no KV cache), O, dO, the forward's LSE, and the
    gradients dq, dk, dv to write."""
    _fields_ = [
        ("struct_size", ctypes.c_size_t),
        ("dtype", ctypes.c_int),
        ("batch", ctypes.c_int64),
        ("seqlen_q", ctypes.c_int64),
        ("seqlen_k", ctypes.c_int64),
        ("heads_q", ctypes.c_int64),
        ("heads_kv", ctypes.c_int64),
        ("head_dim_qk", ctypes.c_int64),
        ("head_dim_v", ctypes.c_int64),
        ("q", Tensor),
        ("k", Tensor),
        ("v", Tensor),
        ("o", Tensor),
        ("dout", Tensor),
        ("lse", ctypes.c_void_p),  # const float *
        ("lse_stride", ctypes.c_int64 * 3),
        ("dq", Tensor),
        ("dk", Tensor),
        ("dv", Tensor),
        ("cu_seqlens_q", ctypes.c_void_p),
        ("cu_seqlens_k", ctypes.c_void_p),
        ("max_seqlen_q", ctypes.c_int64),
        ("max_seqlen_k", ctypes.c_int64),
        ("softmax_scale", ctypes.c_float),
        ("softcap", ctypes.c_float),
        ("causal", ctypes.c_int),
        ("window_left", ctypes.c_int64),
        ("window_right", ctypes.c_int64),
        ("deterministic", ctypes.c_int),
        ("backend", ctypes.c_int),
        ("workspace", ctypes.c_void_p),
        ("workspace_size", ctypes.c_size_t),
    ]


class MergeParams(ctypes.Structure):
    """portattn_merge_params_t: two (O, LSE) results of the same queries, merged into the first."""
    _fields_ = [
        ("struct_size", ctypes.c_size_t),
        ("dtype", ctypes.c_int),
        ("dtype_part", ctypes.c_int),
        ("batch", ctypes.c_int64),
        ("seqlen_q", ctypes.c_int64),
        ("heads_q", ctypes.c_int64),
        ("head_dim_v", ctypes.c_int64),
        ("o", Tensor),
        ("lse", ctypes.c_void_p),  # float *
        ("lse_stride", ctypes.c_int64 * 3),
        ("o_part", Tensor),
        ("lse_part", ctypes.c_void_p),  # const float *
        ("lse_part_stride", ctypes.c_int64 * 3),
        ("backend", ctypes.c_int),
    ]


class Selection(ctypes.Structure):
    """portattn_selection_t."""
    _fields_ = [("backend", ctypes.c_int), ("backend_name", ctypes.c_char * 32),
                ("kernel", ctypes.c_char * 96), ("reason", ctypes.c_char * 512)]


class BackendInfo(ctypes.Structure):
    """portattn_backend_info_t."""
    _fields_ = [("backend", ctypes.c_int), ("name", ctypes.c_char_p), ("compiled", ctypes.c_int),
                ("available", ctypes.c_int), ("detail", ctypes.c_char * 160)]


# ---- errors ---------------------------------------------------------------------------------


class PortattnError(RuntimeError):
    """A failed portattn call: `status` (Status), `status_name` ("PORTATTN_ERROR_..."), `message`
    (portattn_last_error(): which argument, which value, which backend refused and why)."""

    def __init__(self, status, message, description=None):
        try:
            status = Status(status)
            name = "PORTATTN_" + status.name
        except ValueError:
            name = "PORTATTN_STATUS_%d" % int(status)
        self.status = status
        self.status_name = name
        self.message = message
        self.description = description
        text = name if not description else "%s (%s)" % (name, description)
        super().__init__("%s: %s" % (text, message) if message else text)

    def __reduce__(self):  # picklable (multiprocessing)
        return (type(self), (int(self.status), self.message, self.description))


class PortattnLoadError(OSError):
    """libportattn could not be found or loaded, or does not match this binding."""


# ---- loading --------------------------------------------------------------------------------

_PKG_DIR = os.path.dirname(os.path.abspath(__file__))
_REPO_DIR = os.path.dirname(os.path.dirname(_PKG_DIR))  # <repo>/python/portattn -> <repo>
_NAMES = ("libportattn.so", "libportattn.so.0", "libportattn.dylib")
_lock = threading.Lock()
_state = {"lib": None, "path": None}


def _in_dir(d):
    return [os.path.join(d, n) for n in _NAMES if os.path.isfile(os.path.join(d, n))]


def candidates():
    """Library files in search order (after $PORTATTN_LIBRARY): the copy inside the package first
    (a wheel from scripts/wheel.sh carries portattn/libportattn.so.0), then one beside it, then the
    repository's build/ and build-*/ folders (newest library first), as (path, origin) pairs."""
    found = [(p, "bundled in the package") for p in _in_dir(_PKG_DIR)]
    found += [(p, "next to the package") for p in _in_dir(os.path.dirname(_PKG_DIR))]
    builds = []
    for d in [os.path.join(_REPO_DIR, "build")] + sorted(glob.glob(os.path.join(_REPO_DIR, "build-*"))):
        for p in _in_dir(d):
            try:
                builds.append((os.path.getmtime(p), p))
            except OSError:
                pass
    builds.sort(key=lambda t: -t[0])
    return found + [(p, "build folder") for _, p in builds]


def _sanitizer_of(path):
    """The sanitizer runtime a library needs loaded first (ASan/TSan/...), or None. Such a library
    cannot be dlopen'ed into a plain Python: the runtime would abort the process."""
    cache = os.path.join(os.path.dirname(path), "CMakeCache.txt")
    try:
        with open(cache, errors="replace") as f:
            for line in f:
                if line.startswith("PORTATTN_SANITIZE:") and line.split("=", 1)[1].strip():
                    val = line.split("=", 1)[1].strip()
                    if any(s in val for s in ("address", "thread", "memory")):
                        return "the build's PORTATTN_SANITIZE=" + val
    except OSError:
        pass
    try:
        with open(path, "rb") as f:
            head = f.read(8 << 20)  # .dynstr (DT_NEEDED names) sits near the start
    except OSError:
        return None
    for rt in (b"libasan.so", b"libtsan.so", b"libhwasan.so", b"libmsan.so"):
        if rt in head:
            return rt.decode()
    return None


def _sanitizer_runtime_loaded():
    try:
        with open("/proc/self/maps") as f:
            return any(rt in line for line in f for rt in ("libasan", "libtsan", "libhwasan", "libmsan"))
    except OSError:
        return False


class _AbiMismatch(PortattnLoadError):
    """The library's structs differ from the binding's: never skipped in the search."""


def _declare(lib):
    c_int, c_i64, c_vp, c_cp = ctypes.c_int, ctypes.c_int64, ctypes.c_void_p, ctypes.c_char_p
    sig = {
        "portattn_status_string": (c_cp, [c_int]),
        "portattn_last_error": (c_cp, []),
        "portattn_fwd_params_init": (None, [ctypes.POINTER(FwdParams)]),
        "portattn_tensor_bshd": (Tensor, [c_vp, c_i64, c_i64, c_i64]),
        "portattn_tensor_bhsd": (Tensor, [c_vp, c_i64, c_i64, c_i64]),
        "portattn_forward": (c_int, [ctypes.POINTER(FwdParams), c_vp]),
        "portattn_forward_query": (c_int, [ctypes.POINTER(FwdParams), ctypes.POINTER(Selection)]),
        "portattn_forward_workspace_size": (c_int, [ctypes.POINTER(FwdParams), ctypes.POINTER(ctypes.c_size_t)]),
        "portattn_bwd_params_init": (None, [ctypes.POINTER(BwdParams)]),
        "portattn_backward": (c_int, [ctypes.POINTER(BwdParams), c_vp]),
        "portattn_backward_query": (c_int, [ctypes.POINTER(BwdParams), ctypes.POINTER(Selection)]),
        "portattn_backward_workspace_size": (c_int, [ctypes.POINTER(BwdParams), ctypes.POINTER(ctypes.c_size_t)]),
        "portattn_merge_params_init": (None, [ctypes.POINTER(MergeParams)]),
        "portattn_merge": (c_int, [ctypes.POINTER(MergeParams), c_vp]),
        "portattn_backend_get_info": (c_int, [c_int, ctypes.POINTER(BackendInfo)]),
        "portattn_backend_name": (c_cp, [c_int]),
        "portattn_backend_from_name": (c_int, [c_cp, ctypes.POINTER(c_int)]),
        "portattn_version": (c_int, []),
    }
    for name, (res, args) in sig.items():
        try:
            fn = getattr(lib, name)
        except AttributeError:
            raise PortattnLoadError("%s has no symbol %s: not a portattn library, or an incompatible "
                                    "version" % (lib._name, name)) from None
        fn.restype, fn.argtypes = res, args


def _check_abi(lib, path):
    """Refuses a library whose structs differ from this binding's."""
    p = FwdParams()
    ctypes.memset(ctypes.byref(p), 0x5A, ctypes.sizeof(p))
    lib.portattn_fwd_params_init(ctypes.byref(p))
    if p.struct_size != ctypes.sizeof(FwdParams):
        raise _AbiMismatch(
            "%s: portattn_fwd_params_t is %d bytes in the library but %d in this Python binding "
            "(library version %d): use the binding from the same portattn source as the library"
            % (path, p.struct_size, ctypes.sizeof(FwdParams), lib.portattn_version()))
    if (p.dtype, p.window_left, p.window_right, p.backend, p.batch, p.causal) != (DType.BF16, -1, -1, 0, 0, 0):
        raise _AbiMismatch("%s: portattn_fwd_params_init's defaults land on the wrong fields: the "
                                "struct layout differs from this binding's" % path)
    b = BwdParams()
    ctypes.memset(ctypes.byref(b), 0x5A, ctypes.sizeof(b))
    lib.portattn_bwd_params_init(ctypes.byref(b))
    if b.struct_size != ctypes.sizeof(BwdParams) or (b.window_left, b.window_right, b.backend, b.deterministic) != (
            -1, -1, 0, 0):
        raise _AbiMismatch("%s: portattn_bwd_params_t is %d bytes in the library but %d in this Python binding, "
                           "or its defaults land on the wrong fields" % (path, b.struct_size, ctypes.sizeof(BwdParams)))
    m = MergeParams()
    ctypes.memset(ctypes.byref(m), 0x5A, ctypes.sizeof(m))
    lib.portattn_merge_params_init(ctypes.byref(m))
    if m.struct_size != ctypes.sizeof(MergeParams) or (m.dtype, m.dtype_part, m.batch, m.backend) != (DType.BF16, 0, 0, 0):
        raise _AbiMismatch("%s: portattn_merge_params_t is %d bytes in the library but %d in this Python binding, "
                           "or its defaults land on the wrong fields" % (path, m.struct_size, ctypes.sizeof(MergeParams)))
    t = lib.portattn_tensor_bshd(ctypes.c_void_p(0x1000), 3, 5, 7)
    if t.data != 0x1000 or list(t.stride) != [105, 35, 7, 1]:
        raise _AbiMismatch("%s: portattn_tensor_t layout differs from this binding's" % path)


def _open(path):
    rt = _sanitizer_of(path) if os.path.sep in path else None
    if rt and not _sanitizer_runtime_loaded():
        raise PortattnLoadError("%s is built with a sanitizer (%s) and would abort this process; use "
                                "a build without PORTATTN_SANITIZE, or LD_PRELOAD the sanitizer runtime"
                                % (path, rt))
    try:
        lib = ctypes.CDLL(path)
    except OSError as e:
        raise PortattnLoadError("cannot load %s: %s" % (path, e)) from None
    _declare(lib)
    _check_abi(lib, path)
    return lib


def load(path=None):
    """Loads libportattn once and returns the ctypes library. `path` (or $PORTATTN_LIBRARY, a file
    or a folder) names it exactly; otherwise the copy bundled in the package, the repository's
    build folders, then the system search path (ctypes.util.find_library("portattn"))."""
    with _lock:
        if path is None and _state["lib"] is not None:
            return _state["lib"]
        explicit = path or os.environ.get("PORTATTN_LIBRARY")
        if explicit:
            p = os.path.abspath(os.path.expanduser(explicit))
            if os.path.isdir(p):
                files = _in_dir(p)
                if not files:
                    raise PortattnLoadError("no libportattn in folder %s (from %s)"
                                            % (p, "load()" if path else "$PORTATTN_LIBRARY"))
                p = files[0]
            elif not os.path.isfile(p):
                raise PortattnLoadError("%s does not exist (from %s)" % (p, "load()" if path else "$PORTATTN_LIBRARY"))
            lib = _open(p)
        else:
            lib, tried = None, []
            for p, origin in candidates():
                try:
                    lib = _open(p)
                    break
                except PortattnLoadError as e:
                    if isinstance(e, _AbiMismatch):
                        raise  # a version mismatch is the user's to resolve, not to skip
                    tried.append("  %s (%s): %s" % (p, origin, e))
            if lib is None:
                name = ctypes.util.find_library("portattn")
                if name:
                    try:
                        lib, p = _open(name), name
                    except PortattnLoadError as e:
                        tried.append("  %s (system search path): %s" % (name, e))
            if lib is None:
                raise PortattnLoadError(
                    "libportattn not found. Install a wheel that carries it (scripts/wheel.sh), the "
                    "libportattn0 package, or build it (cmake -S . -B build && cmake --build build) and set "
                    "PORTATTN_LIBRARY=/path/to/libportattn.so." + ("\nTried:\n" + "\n".join(tried) if tried else ""))
        _state["lib"], _state["path"] = lib, p
        return lib


def library_path():
    """The path (or name) of the loaded library; loads it if needed."""
    load()
    return _state["path"]
