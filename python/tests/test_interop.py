# test_interop.py — DLPack both ways (numpy's from_dlpack and __dlpack__,
# legacy and versioned capsules, views with strides and offsets, every
# dtype DLPack names) and PyTorch on the cpu when it is installed: the
# same memory, a write on one side seen on the other, lifetimes.
import gc

import numpy as np
import pytest

import wick
from conftest import INTS, FLOATS, np_dtype, needs_ml

try:
    import torch
except ImportError:  # pragma: no cover
    torch = None

needs_torch = pytest.mark.skipif(torch is None, reason="torch not installed")


def ptr(a):
    return a.__array_interface__["data"][0]


@pytest.mark.parametrize("dt", INTS + ["f16", "f32", "f64"])
def test_numpy_from_dlpack_shares(dt, rng):
    t = wick.asarray(rng.uniform(0, 9, size=(3, 4)).astype(np_dtype(dt)))
    a = np.from_dlpack(t)
    assert ptr(a) == t.data_ptr() and a.dtype == np_dtype(dt)
    np.testing.assert_array_equal(a, t.numpy())
    if a.flags.writeable:   # numpy before 2.1 makes DLPack imports read-only
        a[0, 0] = 5
        assert t[0, 0].item() == 5
    t[0, 1] = 6
    assert a[0, 1] == 6
    assert t.__dlpack_device__() == (1, 0)


def test_dlpack_views():
    base = wick.arange(24, dtype="f32").reshape(2, 3, 4)
    for v in [base.transpose(0, 2), base[1], base[:, 1:, ::2], base[..., 3], base.broadcast_to(5, 2, 3, 4)]:
        a = np.from_dlpack(v)
        np.testing.assert_array_equal(a, v.numpy())
        assert ptr(a) == v.data_ptr()


def test_capsules_legacy_and_versioned():
    t = wick.arange(6, dtype="f64")
    c0 = t.__dlpack__()
    c1 = t.__dlpack__(max_version=(1, 0))
    assert "dltensor" in repr(c0) and "dltensor_versioned" in repr(c1)
    a = wick.from_dlpack(c0)
    b = wick.from_dlpack(c1)
    assert a.data_ptr() == b.data_ptr() == t.data_ptr()
    with pytest.raises(TypeError):   # a capsule is used once
        wick.from_dlpack(c0)
    del t, c0, c1
    gc.collect()
    assert a.tolist() == [0, 1, 2, 3, 4, 5]   # the capsule's owner lives on
    cp = wick.arange(3, dtype="f32").__dlpack__(copy=True)
    assert wick.from_dlpack(cp).tolist() == [0, 1, 2]
    with pytest.raises(BufferError):
        wick.quantize(wick.ones((1, 32)), "q8_0").__dlpack__()


def test_wick_from_numpy_dlpack_shares(rng):
    a = rng.standard_normal((4, 5))
    v = a[1:, ::2]
    t = wick.from_dlpack(v)
    assert t.data_ptr() == ptr(v)
    np.testing.assert_array_equal(t.numpy(), v)
    v[0, 0] = 123
    assert t[0, 0].item() == 123
    t2 = wick.from_dlpack(a, copy=True)
    assert t2.data_ptr() != ptr(a)
    del a, v
    gc.collect()
    assert t.shape == (3, 3) and t[0, 0].item() == 123
    with pytest.raises(TypeError):
        wick.from_dlpack([1, 2])
    with pytest.raises(BufferError):
        wick.from_dlpack(np.arange(4.0)[::-1])   # negative strides


@needs_ml
def test_dlpack_bf16_f8_dtype_codes():
    t = wick.tensor([1.0, 2.0], dtype="bf16")
    u = wick.from_dlpack(t.__dlpack__())
    assert u.dtype == "bf16" and u.data_ptr() == t.data_ptr()
    f = wick.tensor([1.0, 2.0], dtype="f8e4m3")
    assert wick.from_dlpack(f.__dlpack__(max_version=(1, 0))).dtype == "f8e4m3"


@needs_torch
@pytest.mark.parametrize("dt", ["u8", "i16", "i32", "i64", "f16", "bf16", "f32", "f64"])
def test_torch_cpu_round_trip(dt):
    t = wick.arange(12, dtype=dt).reshape(3, 4)
    x = torch.from_dlpack(t)
    assert x.data_ptr() == t.data_ptr() and tuple(x.shape) == (3, 4)
    x[0, 1] = 9
    assert t[0, 1].item() == 9
    y = torch.arange(10, dtype=torch.float32)[2:8:2]
    w = wick.from_dlpack(y)
    assert w.data_ptr() == y.data_ptr() and w.tolist() == [2.0, 4.0, 6.0]
    w[1] = -1
    assert y[1].item() == -1
    assert wick.asarray(y).data_ptr() == y.data_ptr()


@needs_torch
def test_torch_ops_agree_on_cpu(rng):
    a = rng.standard_normal((8, 16)).astype(np.float32)
    t = wick.asarray(a)
    x = torch.from_numpy(a)
    np.testing.assert_allclose((t @ t.T).numpy(), (x @ x.T).numpy(), rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(wick.nn.softmax(t).numpy(), torch.softmax(x, -1).numpy(), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(t.gelu_erf().numpy(), torch.nn.functional.gelu(x).numpy(), rtol=1e-5, atol=1e-6)


def test_read_only_dlpack_is_copied():
    a = np.arange(4.0)
    a.flags.writeable = False
    try:
        w = wick.from_dlpack(a)
    except BufferError:   # numpy before 2.1 exports no read-only arrays
        return
    assert w.tolist() == [0, 1, 2, 3]
    if w.data_ptr() != ptr(a):   # a producer that flags read-only memory gets a copy
        w[0] = 5
        assert a[0] == 0


def test_to_torch_needs_torch():
    import sys
    if "torch" in sys.modules:
        pytest.skip("torch is imported here; test_gpu.py covers wick.to_torch")
    with pytest.raises(ImportError, match="torch"):
        wick.to_torch(wick.ones((2,)))


def test_torch_fast_path_plumbing(monkeypatch):
    # wick.from_dlpack's way for torch GPU tensors, run with a stand-in for
    # torch (no GPU here): the capsule comes from torch's C exporter, the
    # stream from torch's current-stream query of the tensor's device, and
    # anything the exporter would not take goes the protocol's way
    import sys
    import types

    calls = []

    class FakeTensor:
        is_cuda, requires_grad, layout = True, False, "strided"

        def __init__(self, a, grad=False):
            self.a, self.requires_grad = a, grad

        def is_conj(self):
            return False

        def is_neg(self):
            return False

        def get_device(self):
            return 3

    def export(x):
        calls.append("export")
        return x.a.__dlpack__()

    def current(i):
        calls.append(("stream", i))
        return 12345

    fake = types.SimpleNamespace(Tensor=FakeTensor, strided="strided",
                                 _C=types.SimpleNamespace(_to_dlpack=export, _cuda_getCurrentRawStream=current))
    monkeypatch.setitem(sys.modules, "torch", fake)
    a = np.arange(6.0)
    w = wick.from_dlpack(FakeTensor(a))
    assert calls == ["export", ("stream", 3)] and w.tolist() == a.tolist()
    a[2] = 40.0
    assert w.tolist()[2] == 40.0               # shared, not copied
    calls.clear()
    with pytest.raises(TypeError, match="DLPack"):   # needs gradients: the protocol's way (the stand-in has none)
        wick.from_dlpack(FakeTensor(a, grad=True))
    assert calls == []


def test_torch_c_paths_decline(monkeypatch):
    # the C ways for PyTorch tensors answer None for what they do not take
    # (anything but a plain torch GPU tensor; a cpu wick tensor), so that
    # the protocol's way runs instead
    import sys
    import types

    from wick import _wick

    assert _wick._from_torch(np.arange(3.0)) is None
    with pytest.raises(TypeError):
        _wick._to_torch(3)
    fake = types.SimpleNamespace(Tensor=type("T", (), {}), strided="strided",
                                 _C=types.SimpleNamespace(_from_dlpack=lambda c: c,
                                                          _cuda_getCurrentRawStream=lambda i: 0))
    monkeypatch.setitem(sys.modules, "torch", fake)
    assert _wick._to_torch(wick.ones(3)) is None      # a cpu tensor
    assert _wick._from_torch(np.arange(3.0)) is None  # not torch's Tensor type
