# test_tensor.py — wick.Tensor from Python: creation (lists, numbers,
# buffers, fills, arange, seeded random), properties, tolist/item, casts
# and moves, repr, the buffer protocol and .numpy() without copies.
import array
import gc
import sys

import numpy as np
import pytest

import wick
from conftest import FLOATS, INTS, NP, needs_ml, np_dtype


def test_from_nested_lists():
    t = wick.tensor([[1, 2, 3], [4, 5, 6]])
    assert t.shape == (2, 3) and t.dtype == "i64" and t.device == "cpu"
    assert t.tolist() == [[1, 2, 3], [4, 5, 6]]
    f = wick.tensor([[1.5, 2], (3, 4)])
    assert f.dtype == "f32" and f.tolist() == [[1.5, 2.0], [3.0, 4.0]]
    b = wick.tensor([True, False, True])
    assert b.dtype == "u8" and b.tolist() == [1, 0, 1]
    s = wick.tensor(2.5)
    assert s.shape == () and s.ndim == 0 and s.item() == 2.5
    e = wick.tensor([])
    assert e.shape == (0,) and e.numel() == 0
    assert wick.tensor([[1, 2]], dtype="bf16").dtype == "bf16"
    assert wick.tensor([1, 2], dtype=np.float64).dtype == "f64"
    assert wick.tensor([1, 2], dtype="float16").dtype == "f16"


def test_large_ints_are_exact():
    big = 2**62 + 1
    t = wick.tensor([big, -big])
    assert t.tolist() == [big, -big]
    assert t[0].item() == big


@pytest.mark.parametrize("bad", [[[1, 2], [3]], [[1, 2], 3], [1, [2]], ["a"], [1, None]])
def test_ragged_or_bad_lists(bad):
    with pytest.raises((ValueError, TypeError)):
        wick.tensor(bad)


def test_fills_and_arange():
    z = wick.zeros((2, 3))
    assert z.shape == (2, 3) and z.dtype == "f32" and z.tolist() == [[0.0] * 3] * 2
    assert wick.ones(4, dtype="i32").tolist() == [1, 1, 1, 1]
    assert wick.full((2,), 7.5, dtype="f64").tolist() == [7.5, 7.5]
    assert wick.empty((3, 0)).shape == (3, 0)
    np.testing.assert_array_equal(wick.arange(5).numpy(), np.arange(5))
    assert wick.arange(5).dtype == "i64"
    np.testing.assert_allclose(wick.arange(0.0, 1.0, 0.25).numpy(), np.arange(0.0, 1.0, 0.25))
    np.testing.assert_array_equal(wick.arange(10, 0, -3).numpy(), np.arange(10, 0, -3))
    assert wick.arange(3, dtype="f16").dtype == "f16"


def test_random_is_seeded():
    a = wick.rand((3, 4), seed=7)
    b = wick.rand((3, 4), seed=7)
    c = wick.rand((3, 4), seed=8)
    np.testing.assert_array_equal(a.numpy(), b.numpy())
    assert not np.array_equal(a.numpy(), c.numpy())
    u = wick.rand((10000,), seed=1, low=2.0, high=3.0).numpy()
    assert u.min() >= 2.0 and u.max() < 3.0 and abs(u.mean() - 2.5) < 0.02
    n = wick.randn((20000,), seed=2, mean=1.0, std=2.0).numpy()
    assert abs(n.mean() - 1.0) < 0.06 and abs(n.std() - 2.0) < 0.06
    wick.manual_seed(5)
    x = wick.randn(8)
    wick.manual_seed(5)
    np.testing.assert_array_equal(x.numpy(), wick.randn(8).numpy())
    assert wick.randn((2, 2), dtype="bf16", seed=3).dtype == "bf16"


def test_properties():
    t = wick.zeros((2, 3, 4), dtype="f16")
    assert t.shape == (2, 3, 4) and t.strides == (12, 4, 1) and t.ndim == 3
    assert t.itemsize == 2 and t.nbytes == 48 and t.size == 24 and len(t) == 2
    assert t.offset == 0 and t.is_contiguous() and not t.is_quantized
    v = t.transpose(0, 2)
    assert v.shape == (4, 3, 2) and v.strides == (1, 4, 12) and not v.is_contiguous()
    assert v.same_storage(t)
    assert t[1].offset == 12
    with pytest.raises(TypeError):
        len(wick.tensor(1.0))
    with pytest.raises(TypeError):
        hash(t)


def test_to_and_casts():
    t = wick.tensor([1.7, -2.5, 3.0])
    assert t.to("i32").tolist() == [1, -2, 3]
    assert t.to(dtype="f64").dtype == "f64"
    assert t.astype("bf16").dtype == "bf16"
    assert t.to("cpu") is not None and t.to("cpu").same_storage(t)
    c = t.to("cpu", copy=True)
    assert not c.same_storage(t)
    assert t.cpu() is t
    with pytest.raises(ValueError):
        t.to("nosuchdevice:0")
    with pytest.raises(TypeError):
        t.to("f32", dtype="f64")


@pytest.mark.parametrize("dt", INTS + FLOATS + ["f8e4m3"])
def test_numpy_round_trip_every_dtype(dt, rng):
    npdt = np_dtype(dt)
    a = (rng.uniform(-4, 4, size=(3, 5)) if dt not in INTS else rng.integers(0, 50, size=(3, 5))).astype(npdt)
    t = wick.asarray(a)
    assert t.dtype == dt and t.shape == a.shape
    b = t.numpy()
    assert b.dtype == a.dtype
    np.testing.assert_array_equal(b.view(np.uint8), a.view(np.uint8))
    # zero-copy both ways
    assert b.__array_interface__["data"][0] == t.data_ptr() == a.__array_interface__["data"][0]
    c = wick.tensor(a)
    assert c.data_ptr() != a.__array_interface__["data"][0]
    np.testing.assert_array_equal(c.numpy().view(np.uint8), a.view(np.uint8))


def test_numpy_shares_memory_both_ways():
    a = np.arange(12, dtype=np.float32).reshape(3, 4)
    t = wick.asarray(a)
    a[0, 0] = 100
    assert t[0, 0].item() == 100
    t[1, 1] = -5
    assert a[1, 1] == -5
    n = t.numpy()
    n[2, 3] = 42
    assert a[2, 3] == 42
    assert np.shares_memory(np.asarray(t), a)
    assert wick.from_numpy(a).data_ptr() == a.__array_interface__["data"][0]


def test_strided_numpy_views_come_in_without_copy():
    a = np.arange(60, dtype=np.float64).reshape(3, 4, 5)
    v = a[:, 1:, ::2].transpose(2, 0, 1)
    t = wick.asarray(v)
    np.testing.assert_array_equal(t.numpy(), v)
    assert t.data_ptr() == v.__array_interface__["data"][0]
    np.testing.assert_array_equal((t * 2).numpy(), v * 2)
    # negative strides: copied
    r = a[::-1]
    np.testing.assert_array_equal(wick.asarray(r).numpy(), r)
    with pytest.raises(ValueError):
        wick.asarray(r, copy=False)


def test_buffer_protocol_exports():
    t = wick.arange(6, dtype="f32").reshape(2, 3)
    m = memoryview(t)
    assert m.format == "f" and m.shape == (2, 3) and m.strides == (12, 4) and not m.readonly
    assert m.tolist() == [[0, 1, 2], [3, 4, 5]]
    m.release()
    tv = t.T
    mv = memoryview(tv)
    assert mv.strides == (4, 12)
    mv.release()
    bc = wick.tensor([1.0, 2.0]).broadcast_to(3, 2)
    assert memoryview(bc).readonly
    assert bytes(wick.tensor([1, 2], dtype="u8")) == b"\x01\x02"
    assert wick.tensor([1, 2], dtype="i16").tobytes() == np.array([1, 2], np.int16).tobytes()


def test_other_buffers():
    assert wick.asarray(array.array("d", [1, 2, 3])).tolist() == [1.0, 2.0, 3.0]
    assert wick.asarray(array.array("i", [1, 2])).dtype == "i32"
    assert wick.asarray(bytearray(b"\x00\x05")).tolist() == [0, 5]
    with pytest.raises(ValueError):   # bytes are read-only: no sharing
        wick.asarray(b"\x01", copy=False)
    assert wick.asarray(b"\x01\x02").tolist() == [1, 2]
    with pytest.raises(TypeError):
        wick.asarray(np.zeros(3, np.int8))   # no i8 in wick
    ba = bytearray(8)
    t = wick.asarray(ba)
    t.fill_(3)
    assert bytes(ba) == b"\x03" * 8
    assert wick.asarray(ba, dtype="f32").tolist() == [3.0] * 8   # a cast, as numpy's asarray
    raw = wick.frombuffer(np.ones(2, np.float32).tobytes(), "f32", (2,))
    assert raw.tolist() == [1.0, 1.0]


def test_buffer_kept_alive_by_tensor():
    a = np.arange(1000, dtype=np.float32)
    t = wick.asarray(a)
    ref = sys.getrefcount(a)
    del a
    gc.collect()
    assert t.sum().item() == sum(range(1000))
    base = np.arange(10, dtype=np.float32)
    r0 = sys.getrefcount(base)
    x = wick.asarray(base)
    assert sys.getrefcount(base) == r0 + 1
    del x
    assert sys.getrefcount(base) == r0
    assert ref > 1


@needs_ml
def test_bf16_numpy_is_ml_dtypes():
    import ml_dtypes
    t = wick.tensor([1.0, 2.5, -3.0], dtype="bf16")
    a = t.numpy()
    assert a.dtype == ml_dtypes.bfloat16 and a.tolist() == [1.0, 2.5, -3.0]
    assert np.asarray(t).dtype == ml_dtypes.bfloat16
    assert np.asarray(t, dtype=np.float32).dtype == np.float32
    a[0] = 8
    assert t[0].item() == 8.0
    f8 = wick.tensor([1.0, 500.0, -0.5], dtype="f8e4m3")
    assert f8.numpy().dtype == ml_dtypes.float8_e4m3fn
    assert f8.to("f32").tolist() == [1.0, 448.0, -0.5]


def test_tolist_item_scalars():
    t = wick.tensor([[1, 2], [3, 4]], dtype="u8")
    assert t.tolist() == [[1, 2], [3, 4]]
    assert isinstance(t[0, 1].item(), int)
    assert float(wick.tensor(2.0)) == 2.0 and int(wick.tensor(3)) == 3
    assert bool(wick.tensor(1)) and not bool(wick.tensor(0.0))
    with pytest.raises(ValueError):
        bool(wick.tensor([1, 2]))
    with pytest.raises(ValueError):
        wick.tensor([1, 2]).item()
    assert [1, 2, 3][wick.tensor(1)] == 2
    assert [x.item() for x in wick.tensor([5, 6, 7])] == [5, 6, 7]


def test_repr_like_numpy():
    t = wick.tensor([[1.0, 2.0], [3.0, 4.0]])
    assert repr(t) == "tensor([[1., 2.],\n        [3., 4.]], dtype=f32)"
    assert repr(wick.tensor([1, 2])) == "tensor([1, 2], dtype=i64)"
    assert repr(wick.tensor(1.5)) == "tensor(1.5, dtype=f32)"
    assert "shape=(2, 0)" in repr(wick.zeros((2, 0)))
    assert "bf16" in repr(wick.ones(2, dtype="bf16"))
    assert "q4_0" in repr(wick.quantize(wick.ones((1, 32)), "q4_0"))
    assert str(t) == repr(t)


def test_info_functions():
    assert wick.device_count("cpu") == 1
    assert "cpu" in wick.device_info()["name"]
    assert "f32" in wick.dtypes() and "q4_k" in wick.dtypes()
    assert wick.dtype_info("q4_0")["block_bytes"] == 18
    assert wick.supports("add", "f32") and "matmul" in wick.op_names()
    assert wick.supports("linear_silu_mul", "bf16") and "linear_rope_kv" in wick.op_names()
    assert wick.env_refresh() is None
    assert isinstance(wick.build_info(), str) and wick.__version__.count(".") == 2
    wick.synchronize()


def test_events_and_pinned_memory():
    a, b = wick.Event(), wick.Event("cpu")
    a.record()
    x = wick.rand((256, 256), seed=1)
    _ = x @ x
    b.record()
    b.synchronize()
    assert a.elapsed_ms(b) >= 0
    with pytest.raises(ValueError):
        wick.Event().elapsed_ms(b)   # never recorded
    with pytest.raises(TypeError):
        a.elapsed_ms(3)
    p = wick.pinned_empty((4, 8), dtype="f16", device="cpu")
    assert p.device == "cpu" and p.shape == (4, 8) and p.dtype == "f16"
    p.fill_(2)
    assert p.numpy().sum() == 64
    with pytest.raises(ValueError):
        wick.pinned_empty((-1,))
