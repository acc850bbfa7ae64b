# test_errors.py — wick's errors as Python exceptions with wick's message
# (the op and the values at fault), and bad input of every kind: none may
# crash the interpreter.
import numpy as np
import pytest

import wick


def test_error_classes_and_messages():
    a = wick.zeros((2, 3))
    with pytest.raises(ValueError, match="add.*broadcast"):
        a + wick.zeros((4,))
    with pytest.raises(TypeError, match="add"):
        a + wick.zeros((2, 3), dtype="f64")
    with pytest.raises(IndexError):
        a.transpose(0, 5)
    with pytest.raises(IndexError, match="index_select"):
        a.index_select(0, [7])
    with pytest.raises(ValueError, match="matmul"):
        a @ a
    with pytest.raises(ValueError):
        wick.zeros((-1, 2))
    with pytest.raises(ValueError):
        wick.zeros((1,) * 9)
    with pytest.raises(MemoryError):
        wick.zeros((1 << 40, 1 << 30))
    with pytest.raises(TypeError):
        wick.zeros((2,), dtype="complex64")
    with pytest.raises(ValueError, match="cuda"):
        wick.zeros((2,), device="cuda:7")
    with pytest.raises(ValueError):
        wick.zeros((2,), device="tpu")
    with pytest.raises(NotImplementedError, match="exp.*u8"):
        wick.zeros((2,), dtype="u8").exp()
    with pytest.raises(TypeError):
        wick.rand((2,), dtype="i32")


def test_bad_arguments_never_crash():
    t = wick.ones((2, 2))
    bad_calls = [
        lambda: t.reshape(3), lambda: t.reshape("a"), lambda: t.narrow(0, 1, 5), lambda: t.narrow(3, 0, 1),
        lambda: t.permute(0, 0), lambda: t.permute(0), lambda: t.squeeze(0), lambda: t.unsqueeze(5),
        lambda: t.flatten(1, 0), lambda: t.chunk(0), lambda: t.broadcast_to(3, 3), lambda: t.gather(0, [0]),
        lambda: t.to(None, None, device=3), lambda: t.sum(dim=(0, 0)), lambda: t.sum(dim="x"),
        lambda: wick.cat([]), lambda: wick.cat([t, wick.ones(3)]), lambda: wick.stack([t, 3]),
        lambda: wick.where(t, t, t), lambda: wick.nn.softmax(t, 4), lambda: wick.nn.rms_norm(t, wick.ones(3)),
        lambda: wick.nn.layer_norm(t, t), lambda: wick.nn.rope(t, t, t), lambda: wick.nn.attention(t, t, t),
        lambda: wick.nn.attention(t, t, t, scale=0), lambda: wick.qmatmul(t, t), lambda: wick.dequantize(t),
        lambda: wick.quantize(t, "f32"), lambda: wick.copy2d(t, t, 5, 5, 2, 2, 0, 0), lambda: wick.tensor(object()),
        lambda: wick.asarray(np.array(["a"])), lambda: wick.asarray(np.zeros(2, complex)),
        lambda: wick.frombuffer(b"abc", "f32", (1,)), lambda: wick.from_dlpack(object()),
        lambda: wick.arange(0, 10, 0), lambda: t.__dlpack__(dl_device=(99, 0)),
        lambda: t.__dlpack__(dl_device=(1, 0), copy=False) if False else t.__dlpack__(stream="x"),
        lambda: wick._wick._from_capsule(3), lambda: wick.tensor([[1], [2, 3]]),
        lambda: wick.zeros(2) @ 1, lambda: t.index_add_(0, [0], wick.ones((1, 3))), lambda: t.fill_("x"),
        lambda: t[1:2:0], lambda: t.to("f99"), lambda: wick.supports("nope", "f99"),
    ]
    for i, f in enumerate(bad_calls):
        with pytest.raises((ValueError, TypeError, IndexError, MemoryError, RuntimeError, BufferError)):
            f()
            raise AssertionError("call %d did not fail" % i)


def test_error_state_is_clean_after_failure():
    with pytest.raises(ValueError):
        wick.zeros(2) + wick.zeros(3)
    assert (wick.zeros(2) + wick.ones(2)).tolist() == [1.0, 1.0]


def test_unsupported_is_not_implemented_and_runtime_error():
    assert issubclass(NotImplementedError, RuntimeError)
    t = wick.quantize(wick.ones((1, 32)), "q4_0")
    with pytest.raises(RuntimeError):
        wick.cat([t, t], dim=1) if False else t.exp()
