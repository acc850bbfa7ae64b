# test_ops.py — every op of the bindings against numpy on the cpu, in every
# dtype it takes (f16 through numpy, bf16 through ml_dtypes): unary and
# binary ops with broadcasting and scalars, comparisons, where, reductions
# with dim/keepdim, matmul, views and indexing, index ops, in-place writes,
# cat/stack/chunk and casts. Inputs are drawn by numpy; references are
# computed by numpy in float64 from the inputs as stored.
import math

import numpy as np
import pytest

import wick
from conftest import FLOATS, INTS, NP, TOL, check, np_dtype, rand_np, ref32

_erf = np.vectorize(math.erf)


def _gelu(x):
    return 0.5 * x * (1 + np.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x**3)))


UNARY = {
    "exp": np.exp, "log": np.log, "sin": np.sin, "cos": np.cos, "tanh": np.tanh, "abs": np.abs,
    "neg": np.negative, "recip": lambda x: 1 / x, "sqr": np.square, "sqrt": np.sqrt, "gelu": _gelu,
    "gelu_erf": lambda x: 0.5 * x * (1 + _erf(x / math.sqrt(2))), "erf": _erf, "relu": lambda x: np.maximum(x, 0),
    "silu": lambda x: x / (1 + np.exp(-x)), "floor": np.floor, "ceil": np.ceil, "round": np.round,
    "sign": np.sign, "sigmoid": lambda x: 1 / (1 + np.exp(-x)),
}
POSITIVE = {"log", "sqrt", "recip"}


@pytest.mark.parametrize("dt", FLOATS)
@pytest.mark.parametrize("op", sorted(UNARY))
def test_unary(op, dt, rng):
    lo, hi = (0.1, 4.0) if op in POSITIVE else (-3.0, 3.0)
    a = rand_np((7, 33), dt, rng, lo, hi)
    t = wick.asarray(a)
    r = getattr(t, op)()
    assert r.dtype == dt and r.shape == a.shape
    check(r, UNARY[op](ref32(a)), dt)
    # through a transposed view too
    check(getattr(t.T, op)(), UNARY[op](ref32(a).T), dt)


@pytest.mark.parametrize("dt", INTS)
def test_unary_ints(dt, rng):
    a = rand_np((5, 6), dt, rng)
    t = wick.asarray(a)
    check(abs(t), np.abs(a.astype(np.int64)).astype(a.dtype), dt)
    check(t.sqr(), (a.astype(np.int64) ** 2).astype(a.dtype), dt)


def test_unary_methods_and_operators(rng):
    a = rand_np((4, 5), "f32", rng)
    t = wick.asarray(a)
    check(-t, -ref32(a), "f32")
    check(+t, ref32(a), "f32")
    check(t.affine(2.0, 1.0), ref32(a) * 2 + 1, "f32")
    check(abs(t) ** 1.5, np.abs(ref32(a)) ** 1.5, "f32", tol=1e-5)
    check(t.pow(2), ref32(a) ** 2, "f32")
    check(t.elu(0.5), np.where(ref32(a) > 0, ref32(a), 0.5 * (np.exp(ref32(a)) - 1)), "f32", tol=1e-5)
    check(t.reciprocal(), 1 / ref32(a), "f32", tol=1e-5)
    with pytest.raises(TypeError):
        t ** t


BINARY = {"add": np.add, "sub": np.subtract, "mul": np.multiply, "div": np.divide,
          "minimum": np.minimum, "maximum": np.maximum}
OPERATOR = {"add": lambda a, b: a + b, "sub": lambda a, b: a - b, "mul": lambda a, b: a * b,
            "div": lambda a, b: a / b}


@pytest.mark.parametrize("dt", FLOATS + INTS)
@pytest.mark.parametrize("op", sorted(BINARY))
def test_binary_broadcast(op, dt, rng):
    a = rand_np((3, 1, 5), dt, rng)
    b = rand_np((4, 1), dt, rng)
    if op == "div" and dt in INTS:
        b[0, 0] = 0   # integer division by zero gives 0
    ta, tb = wick.asarray(a), wick.asarray(b)
    r = getattr(ta, op)(tb)
    assert r.shape == (3, 4, 5) and r.dtype == dt
    if dt in INTS:
        x, y = a.astype(np.int64), b.astype(np.int64)
        if op == "div":
            with np.errstate(divide="ignore"):
                ref = np.where(y == 0, 0, np.trunc(x / np.where(y == 0, 1, y))).astype(np.int64)
        else:
            ref = BINARY[op](x, y)
        ref = ref.astype(a.dtype)   # wraps, as wick does
        check(r, ref, dt)
    else:
        ref = BINARY[op](ref32(a), ref32(b))
        check(r, ref, dt)
    if op in OPERATOR:
        np.testing.assert_array_equal(OPERATOR[op](ta, tb).numpy().view(np.uint8), r.numpy().view(np.uint8))


@pytest.mark.parametrize("dt", ["f32", "f16", "bf16", "i32"])
def test_scalars_both_sides(dt, rng):
    a = rand_np((3, 4), dt, rng, 1.0, 3.0)
    t = wick.asarray(a)
    x = ref32(a)
    check(t + 2, x + 2, dt)
    check(2 + t, x + 2, dt)
    check(t - 1, x - 1, dt)
    check(10 - t, 10 - x, dt)
    check(t * 3, x * 3, dt)
    check(3 * t, x * 3, dt)
    if dt != "i32":
        check(t / 2, x / 2, dt)
        check(1 / t, 1 / x, dt, tol=TOL[dt] * 2)
        check(t * 0.5, x * 0.5, dt)
        check(t + np.float32(1.5), x + 1.5, dt)
    else:
        with pytest.raises(TypeError):
            t + 0.5
    check(t + [1, 2, 3, 4], x + np.array([1, 2, 3, 4]), dt)


def test_inplace_operators_write_through_views():
    base = wick.zeros((2, 3))
    row = base[1]
    row += 1
    row *= 4
    assert base.tolist() == [[0, 0, 0], [4, 4, 4]]
    base[0] -= wick.tensor([1.0, 2.0, 3.0])
    base /= 2
    assert base.tolist() == [[-0.5, -1, -1.5], [2, 2, 2]]


CMP = {"eq": (np.equal, lambda a, b: a == b), "ne": (np.not_equal, lambda a, b: a != b),
       "lt": (np.less, lambda a, b: a < b), "le": (np.less_equal, lambda a, b: a <= b),
       "gt": (np.greater, lambda a, b: a > b), "ge": (np.greater_equal, lambda a, b: a >= b)}


@pytest.mark.parametrize("dt", FLOATS + INTS)
@pytest.mark.parametrize("op", sorted(CMP))
def test_comparisons(op, dt, rng):
    a = rand_np((4, 6), dt, rng)
    b = a.copy()
    b[::2] = rand_np((2, 6), dt, rng)
    ta, tb = wick.asarray(a), wick.asarray(b)
    ref = CMP[op][0](ref32(a), ref32(b)).astype(np.uint8)
    r = getattr(ta, op)(tb)
    assert r.dtype == "u8"
    check(r, ref, "u8")
    check(CMP[op][1](ta, tb), ref, "u8")
    check(CMP[op][1](ta, 0), CMP[op][0](ref32(a), 0).astype(np.uint8), "u8")


def test_eq_with_non_tensors():
    t = wick.tensor([1.0])
    assert (t == None) is False  # noqa: E711
    assert (t != "x") is True


@pytest.mark.parametrize("dt", ["f32", "bf16", "i64"])
def test_where(dt, rng):
    c = rng.integers(0, 2, size=(3, 1)).astype(np.uint8)
    a = rand_np((3, 4), dt, rng)
    b = rand_np((4,), dt, rng)
    r = wick.where(wick.asarray(c), wick.asarray(a), wick.asarray(b))
    check(r, np.where(c != 0, ref32(a), ref32(b)), dt, exact=True)
    check(wick.where(wick.asarray(c), wick.asarray(a), 0), np.where(c != 0, ref32(a), 0), dt, exact=True)


@pytest.mark.parametrize("dt", FLOATS + INTS)
@pytest.mark.parametrize("dims", [None, 0, 1, -1, (0, 2), (1, 2)])
@pytest.mark.parametrize("keepdim", [False, True])
def test_reductions(dt, dims, keepdim, rng):
    a = rand_np((3, 5, 7), dt, rng)
    t = wick.asarray(a)
    ax = dims if not isinstance(dims, list) else tuple(dims)
    x = ref32(a)
    tol = None if dt not in ("f16", "bf16") else TOL[dt] * 4
    if dt in INTS:
        s = a.astype(np.int64).sum(axis=ax, keepdims=keepdim).astype(a.dtype)
        check(t.sum(dim=dims, keepdim=keepdim), s, dt)
    else:
        check(t.sum(dim=dims, keepdim=keepdim), x.sum(axis=ax, keepdims=keepdim), dt, tol=tol)
        check(t.mean(dim=dims, keepdim=keepdim), x.mean(axis=ax, keepdims=keepdim), dt, tol=tol)
    check(t.max(dim=dims, keepdim=keepdim), x.max(axis=ax, keepdims=keepdim), dt, exact=True)
    check(t.min(dim=dims, keepdim=keepdim), x.min(axis=ax, keepdims=keepdim), dt, exact=True)
    if dims is None or isinstance(dims, int):
        r = t.argmax(dim=dims, keepdim=keepdim)
        assert r.dtype == "u32"
        ref = np.argmax(x, axis=dims, keepdims=keepdim) if dims is not None else np.argmax(x)
        if dims is None and keepdim:
            ref = np.reshape(ref, (1, 1, 1))
        check(r, np.asarray(ref).astype(np.uint32), "u32")
        ref = np.argmin(x, axis=dims, keepdims=keepdim) if dims is not None else np.argmin(x)
        if dims is None and keepdim:
            ref = np.reshape(ref, (1, 1, 1))
        check(t.argmin(dim=dims, keepdim=keepdim), np.asarray(ref).astype(np.uint32), "u32")


def test_reduction_errors():
    t = wick.zeros((2, 0))
    assert t.sum().item() == 0
    with pytest.raises(ValueError):
        t.max(dim=1)
    with pytest.raises(IndexError):
        wick.zeros((2, 3)).sum(dim=5)
    with pytest.raises(ValueError):
        wick.zeros((2, 3)).argmax(dim=(0, 1))


@pytest.mark.parametrize("dt", ["f32", "f64", "f16", "bf16"])
def test_matmul(dt, rng):
    a = rand_np((2, 1, 5, 7), dt, rng)
    b = rand_np((3, 7, 4), dt, rng)
    ta, tb = wick.asarray(a), wick.asarray(b)
    ref = np.matmul(ref32(a), ref32(b))
    tol = {"f32": 1e-5, "f64": 1e-12, "f16": 4e-3, "bf16": 3e-2}[dt]
    check(ta @ tb, ref, dt, tol=tol)
    check(ta.matmul(tb), ref, dt, tol=tol)
    check(tb.mT @ tb, np.matmul(np.swapaxes(ref32(b), -1, -2), ref32(b)), dt, tol=tol * 2)
    with pytest.raises(ValueError):
        ta @ ta


def test_views_share_storage(rng):
    a = rng.standard_normal((4, 6)).astype(np.float32)
    t = wick.asarray(a)
    for v, ref in [
        (t.reshape(2, 12), a.reshape(2, 12)), (t.reshape((3, -1)), a.reshape(3, -1)),
        (t.view(24), a.reshape(24)), (t.narrow(1, 2, 3), a[:, 2:5]), (t.transpose(0, 1), a.T),
        (t.permute(1, 0), a.T), (t.T, a.T), (t.unsqueeze(0), a[None]), (t.unsqueeze(-1), a[..., None]),
        (t[None].squeeze(0), a), (t.flatten(), a.ravel()), (t.broadcast_to(3, 4, 6), np.broadcast_to(a, (3, 4, 6))),
        (t.expand((2, 4, 6)), np.broadcast_to(a, (2, 4, 6))),
    ]:
        assert v.same_storage(t)
        np.testing.assert_array_equal(v.numpy(), ref)
    assert t.T.reshape(24).same_storage(t) is False   # a copy: strides forbid a view
    np.testing.assert_array_equal(t.T.reshape(24).numpy(), a.T.reshape(24))
    c = t.chunk(4, dim=1)
    assert len(c) == 3 and all(x.same_storage(t) for x in c)
    np.testing.assert_array_equal(c[2].numpy(), a[:, 4:])
    assert wick.ones((1, 3, 1)).squeeze().shape == (3,)
    assert wick.tensor(1.0).flatten().shape == (1,)
    cc = t.T.contiguous()
    assert cc.is_contiguous() and not cc.same_storage(t)
    assert t.contiguous().same_storage(t) and not t.copy().same_storage(t) and not t.clone().same_storage(t)


INDEX_KEYS = [
    1, -1, (1, 2), (slice(None), 2), (slice(1, 3),), (slice(None, None, 2),), (slice(1, None, 3), slice(None, None, 2)),
    (Ellipsis, 1), (None,), (None, Ellipsis, None), (1, None, slice(2, 5)), (Ellipsis,), (slice(-3, -1), -2),
    (slice(5, 2),), (slice(None), slice(None), None), (0, 0, 0), (slice(None, None, 4), 0, slice(1, None, 2)),
]


@pytest.mark.parametrize("key", INDEX_KEYS, ids=[repr(k) for k in INDEX_KEYS])
def test_basic_indexing_is_a_view(key, rng):
    a = rng.standard_normal((4, 5, 6)).astype(np.float32)
    t = wick.asarray(a)
    v = t[key]
    ref = a[key]
    np.testing.assert_array_equal(v.numpy(), ref)
    if v.numel():
        assert np.shares_memory(v.numpy(), a)
    # and writes go through
    if isinstance(ref, np.ndarray) and ref.size:
        t[key] = 7.0
        assert (a[key] == 7.0).all()


@pytest.mark.parametrize("key", [(slice(None, None, -1),), (slice(4, 0, -2), 1), [2, 0, 3], (slice(None), [4, 4, 0])],
                         ids=repr)
def test_copying_indexing(key, rng):
    a = rng.standard_normal((5, 6)).astype(np.float32)
    t = wick.asarray(a)
    np.testing.assert_array_equal(t[key].numpy(), a[key])
    np.testing.assert_array_equal(t[wick.tensor([3, 1])].numpy(), a[[3, 1]])
    with pytest.raises(IndexError):
        t[key] = 1.0


def test_index_errors():
    t = wick.zeros((3, 4))
    for bad in [3, -4, (0, 4), (0, 0, 0), (Ellipsis, Ellipsis), "a", 1.5, ([0], [1])]:
        with pytest.raises(IndexError):
            t[bad]
    with pytest.raises(IndexError):
        t[[0, 5]]


def test_setitem_values(rng):
    a = np.zeros((3, 4), np.float32)
    t = wick.asarray(a)
    t[0] = wick.tensor([1.0, 2.0, 3.0, 4.0])
    t[1, 1:3] = [5, 6]
    t[2] = np.arange(4, dtype=np.float64)
    t[:, 3] = 9
    np.testing.assert_array_equal(a, [[1, 2, 3, 9], [0, 5, 6, 9], [0, 1, 2, 9]])
    with pytest.raises(ValueError):
        t[0] = [1, 2]
    with pytest.raises(TypeError):
        del t[0]


@pytest.mark.parametrize("dt", ["f32", "bf16", "i64", "u8"])
@pytest.mark.parametrize("idt", ["u8", "u32", "i64"])
def test_index_ops(dt, idt, rng):
    a = rand_np((5, 4), dt, rng)
    t = wick.asarray(a)
    ids = np.array([4, 0, 2, 2], dtype=NP[idt])
    ti = wick.asarray(ids)
    check(t.index_select(0, ti), a[ids.astype(np.int64)].astype(np.float64) if dt not in INTS else a[ids.astype(np.int64)], dt, exact=True)
    check(t.index_select(1, [3, 1]), ref32(a)[:, [3, 1]], dt, exact=True)
    g = rng.integers(0, 4, size=(5, 3)).astype(NP[idt])
    check(t.gather(1, wick.asarray(g)), np.take_along_axis(ref32(a), g.astype(np.int64), 1), dt, exact=True)
    # scatter_ / scatter_add_ / index_add_ in place
    dst = np.zeros((5, 4), dtype=a.dtype)
    td = wick.asarray(dst)
    src = rand_np((1, 4), dt, rng)
    sid = np.array([[3, 1, 0, 4]], dtype=NP[idt])
    assert td.scatter_(0, wick.asarray(sid), wick.asarray(src)) is td
    ref = np.zeros((5, 4))
    ref[sid.astype(np.int64)[0], np.arange(4)] = ref32(src)[0]
    check(td, ref, dt, exact=True)
    td.scatter_add_(0, wick.asarray(sid), wick.asarray(src))
    ref[sid.astype(np.int64)[0], np.arange(4)] += ref32(src)[0]
    if dt in INTS:
        check(td, ref.astype(a.dtype), dt)
    else:
        check(td, ref, dt)
    z = wick.zeros((3, 4), dtype=dt)
    s = wick.asarray(rand_np((2, 4), dt, rng))
    z.index_add_(0, wick.asarray(np.array([2, 2], dtype=NP[idt])), s)
    r = np.zeros((3, 4))
    r[2] = ref32(s.numpy()).sum(0)
    if dt in INTS:
        check(z, r.astype(a.dtype), dt)
    else:
        check(z, r, dt, tol=TOL[dt] * 2)


def test_index_ops_bad_ids_leave_destination_unchanged():
    t = wick.ones((3, 2))
    with pytest.raises(IndexError):
        t.index_select(0, [0, 3])
    with pytest.raises(IndexError):
        t.scatter_(0, wick.tensor([[5, 0]]), wick.zeros((1, 2)))
    assert t.tolist() == [[1, 1]] * 3
    with pytest.raises(TypeError):
        t.index_select(0, wick.tensor([0.0]))


def test_fill_copy_cat_stack(rng):
    a = np.zeros((2, 3), np.float32)
    t = wick.asarray(a)
    t[:, 1].fill_(2)
    assert (a[:, 1] == 2).all()
    t.copy_(wick.tensor([1.0, 2.0, 3.0], dtype="f64"))   # broadcast + cast
    assert a.tolist() == [[1, 2, 3], [1, 2, 3]]
    with pytest.raises(ValueError):
        t.broadcast_to(2, 2, 3).fill_(0)   # overlapping destination
    x, y = rand_np((2, 3), "f32", rng), rand_np((2, 3), "f32", rng)
    np.testing.assert_array_equal(wick.cat([wick.asarray(x), wick.asarray(y)], dim=1).numpy(), np.concatenate([x, y], 1))
    np.testing.assert_array_equal(wick.stack((wick.asarray(x), wick.asarray(y))).numpy(), np.stack([x, y]))
    with pytest.raises(TypeError):
        wick.cat([wick.asarray(x), x])


@pytest.mark.parametrize("src", INTS + FLOATS)
@pytest.mark.parametrize("dst", INTS + FLOATS)
def test_casts(src, dst, rng):
    a = rand_np((3, 7), src, rng, -40, 40)
    t = wick.asarray(a)
    r = t.to(dst)
    assert r.dtype == dst
    x = ref32(a)
    if dst in INTS and src in INTS:
        check(r, a.astype(NP[dst]), dst)   # integers wrap (two's complement)
    elif dst in INTS:
        info = np.iinfo(NP[dst])
        ref = np.clip(np.trunc(x), info.min, info.max)   # truncate, saturate
        check(r, ref.astype(NP[dst]), dst)
    else:
        check(r, x.astype(np_dtype(dst)).astype(np.float64), dst, exact=True)


def test_empty_and_rank0_ops():
    e = wick.zeros((0, 3))
    assert (e + 1).shape == (0, 3) and e.sum(dim=0).tolist() == [0, 0, 0]
    s = wick.tensor(2.0)
    assert (s * s).item() == 4.0 and s.exp().shape == ()
    assert (wick.zeros((2, 0)) @ wick.zeros((0, 3))).tolist() == [[0, 0, 0]] * 2


def test_numpy_and_tensor_ints_index():
    t = wick.arange(10)
    assert t[np.int64(3)].item() == 3 and t[wick.tensor(2)].item() == 2
    assert [t[i].item() for i in np.arange(3)] == [0, 1, 2]
    assert t[np.array([1, 4])].tolist() == [1, 4] and t[wick.tensor([5, 6])].tolist() == [5, 6]
