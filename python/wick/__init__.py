"""wick — a tensor library in C for CPUs, AMD GPUs (ROCm) and NVIDIA GPUs (CUDA).

    >>> import wick
    >>> x = wick.randn((4, 8), seed=42)             # f32 on the cpu
    >>> w = wick.tensor([[1.0], [2.0]] * 4)         # a copy of Python data
    >>> y = (x @ w).silu().sum(dim=0)
    >>> y.numpy()                                   # shares memory on the cpu

Tensors live on a device ("cpu", "cuda:N", "rocm:N"); ops take any strided
view and return new tensors. numpy arrays and any buffer come in without a
copy (wick.asarray), tensors go out without one (.numpy(), np.asarray, the
buffer protocol); DLPack (wick.from_dlpack, Tensor.__dlpack__) shares memory
with PyTorch and others on the cpu and on GPUs. wick's errors are Python
exceptions carrying wick's message: ValueError (bad argument, shape or
device), TypeError (dtype), IndexError, MemoryError, NotImplementedError (a
RuntimeError: the device lacks the op), RuntimeError (a GPU runtime call).

Submodules: wick.nn (functional NN ops), wick.model (language models,
tokenizers, chat formats, text generation and the batched engine; its main
names are here too: wick.load_model, wick.Model, wick.Tokenizer,
wick.Engine).
"""
import sys as _sys

from . import _wick
from ._wick import (  # noqa: F401
    Comm,
    Event,
    Graph,
    Tensor,
    add_rms_norm,
    arange,
    attention,
    build_info,
    cat,
    comm_available,
    comm_from_env,
    comm_init_all,
    comm_unique_id,
    copy2d,
    dequantize,
    device_count,
    device_info,
    device_stream,
    dtype_info,
    dtypes,
    empty,
    env_refresh,
    frombuffer,
    full,
    layer_norm,
    linear_rope_kv,
    linear_silu_mul,
    log_softmax,
    manual_seed,
    ones,
    op_names,
    pinned_empty,
    plugin_status,
    argsort,
    qgather,
    qmatmul,
    quantize,
    rand,
    randn,
    rms_norm,
    rope,
    rope_i,
    rope_kv,
    rope_tables,
    rope_thd,
    silu_mul,
    softmax,
    sort,
    stack,
    supports,
    synchronize,
    topk,
    where,
    zeros,
)

__version__ = "%d.%d.%d" % (_wick.VERSION_MAJOR, _wick.VERSION_MINOR, _wick.VERSION_PATCH)

# dtype names: wick's own ('f32') and the numpy/torch spellings below are
# accepted wherever a dtype is, as are numpy dtypes and torch dtypes.
u8, u32, i16, i32, i64 = "u8", "u32", "i16", "i32", "i64"
bf16, f16, f32, f64, f8e4m3 = "bf16", "f16", "f32", "f64", "f8e4m3"
uint8, uint32, int16, int32, int64 = u8, u32, i16, i32, i64
bfloat16, float16, float32, float64, float8_e4m3fn = bf16, f16, f32, f64, f8e4m3
q4_0, q4_1, q5_0, q5_1, q8_0, q8_1 = "q4_0", "q4_1", "q5_0", "q5_1", "q8_0", "q8_1"
q2_k, q3_k, q4_k, q5_k, q6_k, q8_k = "q2_k", "q3_k", "q4_k", "q5_k", "q6_k", "q8_k"
iq4_nl, iq4_xs, iq3_xxs, iq3_s = "iq4_nl", "iq4_xs", "iq3_xxs", "iq3_s"
iq2_xxs, iq2_xs, iq2_s, iq1_s, iq1_m = "iq2_xxs", "iq2_xs", "iq2_s", "iq1_s", "iq1_m"

_ML_NAMES = {"bf16": "bfloat16", "f8e4m3": "float8_e4m3fn"}
_RAW = {"bf16": "uint16", "f8e4m3": "uint8"}


def _ml_dtypes():
    try:
        import ml_dtypes
    except ImportError:  # pragma: no cover - depends on the environment
        return None
    return ml_dtypes


def _np():
    try:
        import numpy
    except ImportError as e:  # pragma: no cover
        raise ImportError("this needs numpy (pip install numpy)") from e
    return numpy


def _numpy(t, dtype=None, copy=None):
    """Tensor.numpy() and Tensor.__array__: a view of a cpu tensor's memory
    (bf16 and f8e4m3 through ml_dtypes), a copy of a GPU tensor's."""
    np = _np()
    if t.is_quantized:
        raise TypeError("a %s tensor has no numpy dtype: t.dequantize() first" % t.dtype)
    copied = False
    if t.device != "cpu":
        if copy is False:
            raise ValueError("a tensor on %s cannot become a numpy array without a copy" % t.device)
        t = t.cpu()
        copied = True
    if t.dtype in _RAW:
        ml = _ml_dtypes()
        if ml is None:
            raise TypeError("numpy has no %s: pip install ml_dtypes (or t.to('f32').numpy())" % t.dtype)
        a = np.asarray(memoryview(t._raw())).view(getattr(ml, _ML_NAMES[t.dtype]))
    else:
        a = np.asarray(memoryview(t))
    if dtype is not None and np.dtype(dtype) != a.dtype:
        if copy is False:
            raise ValueError("a cast to %s needs a copy" % np.dtype(dtype))
        return a.astype(dtype)
    if copy and not copied:
        return a.copy()
    return a


def _repr(t):
    dev = "" if t.device == "cpu" else ", device='%s'" % t.device
    if t.is_quantized:
        return "tensor(<%s blocks>, shape=%s, dtype=%s%s)" % (t.dtype, t.shape, t.dtype, dev)
    try:
        np = _np()
    except ImportError:
        return "tensor(%r, dtype=%s%s)" % (t.tolist(), t.dtype, dev)
    src = t
    if t.dtype in _RAW and _ml_dtypes() is None:
        src = t.to("f32")
    a = _numpy(src)
    body = np.array2string(a, separator=", ", prefix="tensor(", threshold=1000)
    shape = ", shape=%s" % (a.shape,) if a.size == 0 and a.ndim != 1 else ""
    return "tensor(%s%s, dtype=%s%s)" % (body, shape, t.dtype, dev)


_wick._set_hooks(_numpy, _repr)


def _from_ml_array(data):
    """A numpy array of an ml_dtypes dtype as (raw view, wick dtype), else None."""
    np = __import__("sys").modules.get("numpy")
    if np is None or not isinstance(data, np.ndarray):
        return None
    name = data.dtype.name
    for wk, ml in _ML_NAMES.items():
        if name == ml:
            return data.view(_RAW[wk]), wk
    return None


def _is_dlpack_only(data):
    return hasattr(data, "__dlpack__") and not isinstance(data, Tensor) and not _has_buffer(data)


def _has_buffer(data):
    try:
        memoryview(data).release()
        return True
    except TypeError:
        return False
    except Exception:  # a buffer exporter that refuses (a GPU array): no buffer
        return False


def tensor(data, dtype=None, device=None):
    """A new tensor holding a copy of data: nested lists/tuples of numbers, a
    number, a numpy array or any buffer, a DLPack exporter, or a Tensor.
    Without dtype: the buffer's dtype; for Python data u8 for bools, i64
    for ints, f32 otherwise. device: 'cpu' (default), 'cuda:0', ..."""
    ml = _from_ml_array(data)
    if ml is not None:
        raw, wk = ml
        t = _wick.asarray(raw, wk, None, copy=None, _bits=True)
        return t.to(device=device or "cpu", dtype=dtype, copy=True)
    if _is_dlpack_only(data):
        t = from_dlpack(data)
        return t.to(device=device or t.device, dtype=dtype, copy=True)
    return _wick.tensor(data, dtype, device)


def asarray(data, dtype=None, device=None, *, copy=None):
    """data as a tensor, sharing memory where it can: a numpy array or any
    buffer on the cpu (the tensor keeps it alive; writes are seen both
    ways), a Tensor as is, a DLPack exporter through from_dlpack. copy=True
    always copies; copy=False raises instead of copying."""
    ml = _from_ml_array(data)
    if ml is not None:
        raw, wk = ml
        t = _wick.asarray(raw, wk, None, copy=copy, _bits=True)
        return t if dtype is None and device is None else t.to(device=device, dtype=dtype)
    if _is_dlpack_only(data):
        t = from_dlpack(data, copy=copy)
        if device is not None or dtype is not None:
            if copy is False and ((device is not None and device != t.device) or dtype is not None):
                raise ValueError("copy=False: the device or dtype asked for needs a copy")
            t = t.to(device=device, dtype=dtype)
        return t
    return _wick.asarray(data, dtype, device, copy=copy)


def from_numpy(a):
    """A cpu tensor sharing a numpy array's memory (never a copy)."""
    return asarray(a, copy=False)


_DL_CPU, _DL_CUDA, _DL_CUDA_HOST, _DL_ROCM = 1, 2, 3, 10


def to_torch(t):
    """A torch.Tensor sharing t's memory (no copy), through DLPack: the
    same exchange as torch.from_dlpack(t), with torch's current stream on
    t's GPU made to wait for wick's queued work on the device, but without
    torch.from_dlpack's Python-level stream objects (about half of that
    call's cost). Needs torch imported."""
    torch = _sys.modules.get("torch")
    if torch is None:
        raise ImportError("wick.to_torch needs torch imported first")
    r = _wick._to_torch(t)   # C: torch's current stream waits, torch's C importer takes the capsule
    return torch.from_dlpack(t) if r is None else r


def from_dlpack(x, *, device=None, copy=None):
    """A tensor sharing the memory of any DLPack exporter (a torch tensor, a
    numpy array, a CuPy array, a capsule) on the cpu or a GPU, without a
    copy. wick's GPU work runs on its own stream (wick.device_stream): it
    is handed to the producer as DLPack's stream argument, and the
    producer makes it wait for its pending work on the device, without
    blocking the host (PyTorch waits on its current stream's work). A
    plain PyTorch GPU tensor takes a shorter way to the same order: its
    capsule from torch's C exporter, then wick's stream made to wait for
    torch's current stream by wick itself."""
    t = x if isinstance(x, Tensor) else _wick._from_torch(x)   # C: None unless a plain torch GPU tensor
    if t is None and type(x).__name__ == "PyCapsule":
        t = _wick._from_capsule(x)
    elif t is None:
        if not hasattr(x, "__dlpack__"):
            raise TypeError("%s does not support DLPack (no __dlpack__)" % type(x).__name__)
        dev_type, dev_id = x.__dlpack_device__()
        stream = None
        if dev_type in (_DL_CUDA, _DL_ROCM):
            # the consumer's stream: the producer orders its work before it
            stream = _wick.device_stream("%s:%d" % ("cuda" if dev_type == _DL_CUDA else "rocm", int(dev_id)))
        try:
            cap = x.__dlpack__(stream=stream, max_version=(1, 0))
        except TypeError:
            cap = x.__dlpack__(stream=stream) if stream is not None else x.__dlpack__()
        t = _wick._from_capsule(cap)
    if device is not None and device != t.device:
        if copy is False:
            raise ValueError("copy=False: moving to %s needs a copy" % device)
        return t.to(device)
    return t.copy() if copy else t


from .model import (  # noqa: E402,F401
    Engine,
    EngineRequest,
    Generation,
    Model,
    Tokenizer,
    TokenStream,
    chat_apply,
    chat_format_detect,
    load_model,
)

__all__ = [n for n in dir() if not n.startswith("_")]

from . import nn  # noqa: E402,F401  (after the names nn re-exports)
