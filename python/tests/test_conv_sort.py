# test_conv_sort.py — wick.nn's convolutions (1-d, 2-d and transposed:
# stride, padding, dilation, groups, output_padding, bias), pools (avg
# with and without the padding counted, max with indices, ceil_mode),
# upsampling (nearest 1-d and 2-d, bilinear with and without
# align_corners; by size and by scale factor) and wick.sort / argsort /
# topk (any dim, both directions, stable) against numpy float64
# references written here from PyTorch's definitions (docs/conv.md), so
# that they run without torch; where torch is installed, the same cases
# against torch.nn.functional too.
import math

import numpy as np
import pytest

import wick
import wick.nn as nn
from conftest import TOL, check, rand_np, ref32

try:
    import torch
    import torch.nn.functional as F
except ImportError:  # pragma: no cover - depends on the environment
    torch = None

DT = ["f32", "f64", "f16", "bf16"]


def _tol(dt, k=8):
    return TOL[dt] * k


def _pair(v):
    return (v, v) if isinstance(v, int) else tuple(v)


# ---- numpy references ------------------------------------------------------------


def ref_conv2d(x, w, b, stride, padding, dilation, groups):
    """x [N, Cin, H, W], w [Cout, Cin/groups, kh, kw] (float64)"""
    (sh, sw), (ph, pw), (dh, dw) = _pair(stride), _pair(padding), _pair(dilation)
    n, cin, h, wd = x.shape
    cout, cg, kh, kw = w.shape
    xp = np.zeros((n, cin, h + 2 * ph, wd + 2 * pw))
    xp[:, :, ph:ph + h, pw:pw + wd] = x
    oh = (h + 2 * ph - dh * (kh - 1) - 1) // sh + 1
    ow = (wd + 2 * pw - dw * (kw - 1) - 1) // sw + 1
    out = np.zeros((n, cout, oh, ow))
    og = cout // groups
    for g in range(groups):
        xs = xp[:, g * cg:(g + 1) * cg]
        ws = w[g * og:(g + 1) * og]
        for i in range(kh):
            for j in range(kw):
                patch = xs[:, :, i * dh:i * dh + (oh - 1) * sh + 1:sh, j * dw:j * dw + (ow - 1) * sw + 1:sw]
                out[:, g * og:(g + 1) * og] += np.einsum("nchw,oc->nohw", patch, ws[:, :, i, j])
    if b is not None:
        out += b[None, :, None, None]
    return out


def ref_conv_transpose2d(x, w, b, stride, padding, output_padding, groups, dilation):
    """x [N, Cin, H, W], w [Cin, Cout/groups, kh, kw]: the gradient of conv2d
    with respect to its input"""
    (sh, sw), (ph, pw), (dh, dw) = _pair(stride), _pair(padding), _pair(dilation)
    oph, opw = _pair(output_padding)
    n, cin, h, wd = x.shape
    _, og, kh, kw = w.shape
    full_h = (h - 1) * sh + dh * (kh - 1) + 1 + oph
    full_w = (wd - 1) * sw + dw * (kw - 1) + 1 + opw
    full = np.zeros((n, og * groups, full_h, full_w))
    cg = cin // groups
    for g in range(groups):
        xs = x[:, g * cg:(g + 1) * cg]
        ws = w[g * cg:(g + 1) * cg]
        for i in range(kh):
            for j in range(kw):
                full[:, g * og:(g + 1) * og, i * dh:i * dh + (h - 1) * sh + 1:sh, j * dw:j * dw + (wd - 1) * sw + 1:sw] += \
                    np.einsum("nchw,co->nohw", xs, ws[:, :, i, j])
    oh = (h - 1) * sh - 2 * ph + dh * (kh - 1) + oph + 1
    ow = (wd - 1) * sw - 2 * pw + dw * (kw - 1) + opw + 1
    out = full[:, :, ph:ph + oh, pw:pw + ow]
    if b is not None:
        out = out + b[None, :, None, None]
    return out


def _pool_size(n, k, s, p, ceil_mode):
    o = (n + 2 * p - k + (s - 1 if ceil_mode else 0)) // s + 1
    if ceil_mode and (o - 1) * s >= n + p:
        o -= 1
    return o


def ref_pool2d(x, kernel, stride, padding, ceil_mode, mode, count_include_pad=True):
    """avg (PyTorch's divisor rules) or max (with h * W + w of the first maximum)"""
    (kh, kw), (ph, pw) = _pair(kernel), _pair(padding)
    sh, sw = _pair(stride) if stride is not None else (kh, kw)
    n, c, h, wd = x.shape
    oh, ow = _pool_size(h, kh, sh, ph, ceil_mode), _pool_size(wd, kw, sw, pw, ceil_mode)
    out = np.zeros((n, c, oh, ow))
    idx = np.zeros((n, c, oh, ow), dtype=np.int64)
    for i in range(oh):
        for j in range(ow):
            h0, w0 = i * sh - ph, j * sw - pw
            h1, w1 = min(h0 + kh, h + ph), min(w0 + kw, wd + pw)
            area = (h1 - h0) * (w1 - w0)
            h0c, w0c, h1c, w1c = max(h0, 0), max(w0, 0), min(h1, h), min(w1, wd)
            win = x[:, :, h0c:h1c, w0c:w1c]
            if mode == "avg":
                div = area if count_include_pad else (h1c - h0c) * (w1c - w0c)
                out[:, :, i, j] = win.sum(axis=(2, 3)) / div
            else:
                flat = win.reshape(n, c, -1)
                a = flat.argmax(axis=2)
                out[:, :, i, j] = np.take_along_axis(flat, a[..., None], 2)[..., 0]
                idx[:, :, i, j] = (h0c + a // (w1c - w0c)) * wd + w0c + a % (w1c - w0c)
    return out, idx


def _src_scale(n_in, n_out, scale_factor, align_corners=False, f64=False):
    """the source step, in f32 (in f64 for the bilinear form of f64 data), as PyTorch computes it"""
    if align_corners:
        return (n_in - 1) / (n_out - 1) if n_out > 1 else 0.0
    r = 1.0 / scale_factor if scale_factor else n_in / n_out
    return r if f64 else float(np.float32(r))


def ref_nearest(x, sizes, scales):
    """x [N, C, *spatial]: output index o reads min(floor(o * scale), in - 1), scale in f32"""
    out = x
    for d, (n_out, s) in enumerate(zip(sizes, scales)):
        axis = 2 + d
        n_in = x.shape[axis]
        sc = np.float32(_src_scale(n_in, n_out, s))
        src = np.minimum(np.floor(np.arange(n_out, dtype=np.float32) * sc).astype(np.int64), n_in - 1)
        out = np.take(out, src, axis=axis)
    return out


def ref_bilinear(x, size, scales, align_corners, f64=False):
    out = x
    for d, (n_out, s) in enumerate(zip(size, scales)):
        axis = 2 + d
        n_in = x.shape[axis]
        sc = _src_scale(n_in, n_out, s, align_corners, f64)
        o = np.arange(n_out, dtype=np.float64)
        src = sc * o if align_corners else np.maximum(sc * (o + 0.5) - 0.5, 0.0)
        i0 = np.minimum(np.floor(src).astype(np.int64), n_in - 1)
        i1 = np.minimum(i0 + 1, n_in - 1)
        lam = src - i0
        shape = [1] * out.ndim
        shape[axis] = n_out
        lam = lam.reshape(shape)
        out = np.take(out, i0, axis=axis) * (1 - lam) + np.take(out, i1, axis=axis) * lam
    return out


# ---- convolutions ----------------------------------------------------------------

CONV2D = [   # (N, Cin, H, W), (Cout, kh, kw), stride, padding, dilation, groups
    ((2, 3, 9, 8), (4, 3, 3), 1, 0, 1, 1),
    ((1, 4, 10, 7), (6, 3, 2), (2, 1), (1, 2), 1, 2),
    ((2, 2, 11, 9), (2, 3, 3), 2, 2, (2, 1), 1),
    ((1, 6, 7, 7), (6, 3, 3), 1, 1, 1, 6),   # depthwise
    ((3, 1, 5, 6), (2, 1, 1), 1, 0, 1, 1),   # 1x1
]


@pytest.mark.parametrize("dt", DT)
@pytest.mark.parametrize("case", range(len(CONV2D)))
@pytest.mark.parametrize("bias", [False, True])
def test_conv2d(dt, case, bias, rng):
    xs, (cout, kh, kw), stride, padding, dilation, groups = CONV2D[case]
    x = rand_np(xs, dt, rng)
    w = rand_np((cout, xs[1] // groups, kh, kw), dt, rng, -0.5, 0.5)
    b = rand_np((cout,), dt, rng) if bias else None
    ref = ref_conv2d(ref32(x), ref32(w), None if b is None else ref32(b), stride, padding, dilation, groups)
    got = nn.conv2d(wick.asarray(x), wick.asarray(w), None if b is None else wick.asarray(b), stride=stride,
                    padding=padding, dilation=dilation, groups=groups)
    check(got, ref, dt, tol=_tol(dt))


@pytest.mark.parametrize("dt", DT)
def test_conv1d(dt, rng):
    x = rand_np((2, 4, 13), dt, rng)
    w = rand_np((6, 2, 3), dt, rng, -0.5, 0.5)
    b = rand_np((6,), dt, rng)
    ref = ref_conv2d(ref32(x)[:, :, None], ref32(w)[:, :, None], ref32(b), (1, 2), (0, 1), (1, 2), 2)[:, :, 0]
    check(nn.conv1d(wick.asarray(x), wick.asarray(w), wick.asarray(b), 2, 1, 2, 2), ref, dt, tol=_tol(dt))
    check(nn.conv1d(wick.asarray(x), wick.asarray(w), stride=(2,), padding=(1,), dilation=(2,), groups=2),
          ref - ref32(b)[None, :, None], dt, tol=_tol(dt))


CONVT2D = [   # (N, Cin, H, W), (Cout, kh, kw), stride, padding, output_padding, groups, dilation
    ((2, 3, 5, 4), (4, 3, 3), 1, 0, 0, 1, 1),
    ((1, 4, 4, 5), (6, 3, 2), 2, 1, 1, 2, 1),
    ((2, 2, 3, 3), (3, 2, 3), (2, 3), (0, 1), (1, 2), 1, (1, 2)),
]


@pytest.mark.parametrize("dt", DT)
@pytest.mark.parametrize("case", range(len(CONVT2D)))
def test_conv_transpose2d(dt, case, rng):
    xs, (cout, kh, kw), stride, padding, opad, groups, dilation = CONVT2D[case]
    x = rand_np(xs, dt, rng)
    w = rand_np((xs[1], cout // groups, kh, kw), dt, rng, -0.5, 0.5)
    b = rand_np((cout // groups * groups,), dt, rng)
    ref = ref_conv_transpose2d(ref32(x), ref32(w), ref32(b), stride, padding, opad, groups, dilation)
    got = nn.conv_transpose2d(wick.asarray(x), wick.asarray(w), wick.asarray(b), stride, padding, opad, groups, dilation)
    check(got, ref, dt, tol=_tol(dt))


@pytest.mark.parametrize("dt", DT)
def test_conv_transpose1d(dt, rng):
    x = rand_np((2, 4, 6), dt, rng)
    w = rand_np((4, 3, 3), dt, rng, -0.5, 0.5)
    ref = ref_conv_transpose2d(ref32(x)[:, :, None], ref32(w)[:, :, None], None, (1, 2), (0, 1), (0, 1), 1, (1, 1))[:, :, 0]
    got = nn.conv_transpose1d(wick.asarray(x), wick.asarray(w), stride=2, padding=1, output_padding=1)
    check(got, ref, dt, tol=_tol(dt))


def test_conv_views_and_errors(rng):
    x = rand_np((2, 8, 6, 3), "f32", rng)          # channels last, seen as NCHW
    w = rand_np((5, 3, 3, 3), "f32", rng)
    xt = wick.asarray(x).permute(0, 3, 1, 2)
    ref = ref_conv2d(ref32(x).transpose(0, 3, 1, 2), ref32(w), None, 1, 1, 1, 1)
    check(nn.conv2d(xt, wick.asarray(w), padding=1), ref, "f32", tol=_tol("f32"))
    with pytest.raises(ValueError, match="stride 0"):
        nn.conv2d(xt, wick.asarray(w), stride=0)
    with pytest.raises(TypeError, match="tuple of 2 ints"):
        nn.conv2d(xt, wick.asarray(w), padding=(1, 2, 3))
    with pytest.raises(ValueError, match="groups"):
        nn.conv2d(xt, wick.asarray(w), groups=0)
    with pytest.raises(ValueError):
        nn.conv2d(xt, wick.asarray(rand_np((5, 2, 3, 3), "f32", rng)))   # Cin/groups wrong
    with pytest.raises(TypeError):
        nn.conv2d(xt, wick.asarray(w).to("f64"))                         # two dtypes


# ---- pools -----------------------------------------------------------------------

POOLS = [   # (N, C, H, W), kernel, stride, padding, ceil_mode
    ((2, 3, 8, 8), 2, None, 0, False),
    ((1, 2, 9, 7), 3, 2, 1, False),
    ((1, 2, 9, 7), 3, 2, 1, True),
    ((2, 1, 10, 11), (3, 2), (2, 3), (1, 1), True),
    ((1, 3, 5, 5), 5, 1, 2, False),
]


@pytest.mark.parametrize("dt", DT)
@pytest.mark.parametrize("case", range(len(POOLS)))
def test_pools(dt, case, rng):
    xs, k, s, p, ceil = POOLS[case]
    x = rand_np(xs, dt, rng)
    t = wick.asarray(x)
    for include in (True, False):
        ref, _ = ref_pool2d(ref32(x), k, s, p, ceil, "avg", include)
        check(nn.avg_pool2d(t, k, s, p, ceil, include), ref, dt, tol=_tol(dt))
    ref, idx = ref_pool2d(ref32(x), k, s, p, ceil, "max")
    check(nn.max_pool2d(t, k, s, p, ceil), ref, dt, exact=True)
    v, i = nn.max_pool2d(t, k, stride=s, padding=p, ceil_mode=ceil, return_indices=True)
    check(v, ref, dt, exact=True)
    assert i.dtype == "u32"
    np.testing.assert_array_equal(i.numpy().astype(np.int64), idx)


def test_max_pool_nan_and_ties():
    x = np.array([[[[1.0, 3.0, 3.0, 0.0], [2.0, np.nan, -1.0, 5.0]]]], dtype=np.float32)
    v, i = nn.max_pool2d(wick.asarray(x), 2, return_indices=True)
    assert np.isnan(v.numpy()[0, 0, 0, 0]) and v.numpy()[0, 0, 0, 1] == 5.0
    assert i.numpy().tolist() == [[[[5, 7]]]]
    v, i = nn.max_pool2d(wick.asarray(x[:, :, :1]), (1, 2), return_indices=True)
    assert i.numpy().tolist() == [[[[1, 2]]]]   # the first of equal maxima


# ---- upsampling ------------------------------------------------------------------


@pytest.mark.parametrize("dt", DT)
def test_upsample_nearest(dt, rng):
    x = rand_np((2, 3, 5, 7), dt, rng)
    t = wick.asarray(x)
    for size, scale in [((10, 14), None), ((3, 9), None), (None, 2.0), (None, (1.5, 0.75)), (None, 1.7)]:
        if size is None:
            sc = scale if isinstance(scale, tuple) else (scale, scale)
            sizes = tuple(int(math.floor(n * s)) for n, s in zip(x.shape[2:], sc))
            ref = ref_nearest(ref32(x), sizes, sc)
        else:
            ref = ref_nearest(ref32(x), size, (None, None))
        check(nn.upsample_nearest2d(t, size, scale), ref, dt, exact=True)
        check(nn.interpolate(t, size=size, scale_factor=scale), ref, dt, exact=True)
    x1 = rand_np((2, 3, 6), dt, rng)
    check(nn.upsample_nearest1d(wick.asarray(x1), 13), ref_nearest(ref32(x1), (13,), (None,)), dt, exact=True)
    check(nn.interpolate(wick.asarray(x1), scale_factor=2.5), ref_nearest(ref32(x1), (15,), (2.5,)), dt, exact=True)


@pytest.mark.parametrize("dt", DT)
@pytest.mark.parametrize("align", [False, True])
def test_upsample_bilinear(dt, align, rng):
    x = rand_np((2, 2, 4, 6), dt, rng)
    t = wick.asarray(x)
    for size, scale in [((8, 12), None), ((3, 7), None), ((1, 1), None), (None, 2.0), (None, (1.5, 0.5))]:
        if size is None:
            sc = scale if isinstance(scale, tuple) else (scale, scale)
            out = tuple(int(math.floor(n * s)) for n, s in zip(x.shape[2:], sc))
            ref = ref_bilinear(ref32(x), out, sc, align, dt == "f64")
        else:
            ref = ref_bilinear(ref32(x), size, (None, None), align, dt == "f64")
        check(nn.upsample_bilinear2d(t, size, scale, align_corners=align), ref, dt, tol=_tol(dt))
        check(nn.interpolate(t, size, scale, mode="bilinear", align_corners=align), ref, dt, tol=_tol(dt))


def test_upsample_errors():
    t = wick.zeros((1, 1, 2, 2))
    with pytest.raises(ValueError, match="one of the two"):
        nn.upsample_nearest2d(t)
    with pytest.raises(ValueError, match="one of the two"):
        nn.upsample_nearest2d(t, 4, 2.0)
    with pytest.raises(ValueError, match="scale_factor"):
        nn.upsample_bilinear2d(t, scale_factor=-1.0)
    with pytest.raises(ValueError, match="expected 3"):
        nn.upsample_nearest1d(t, 4)
    with pytest.raises(ValueError, match="mode"):
        nn.interpolate(t, 4, mode="bicubic")


# ---- sorting ---------------------------------------------------------------------

SORT_DT = ["f32", "f64", "f16", "bf16", "i32", "i64", "u8", "u32", "i16"]


def _ref_argsort(a, axis, descending):
    a = ref32(a)
    return np.argsort(-a if descending else a, axis=axis, kind="stable")


@pytest.mark.parametrize("dt", SORT_DT)
@pytest.mark.parametrize("dim", [-1, 0, 1])
@pytest.mark.parametrize("desc", [False, True])
def test_sort_argsort(dt, dim, desc, rng):
    a = rand_np((5, 37, 3), dt, rng) if dt not in ("u8", "u32") else rng.integers(0, 9, (5, 37, 3)).astype(np.uint32 if dt == "u32" else np.uint8)
    t = wick.asarray(a)
    ids = _ref_argsort(a, dim, desc)   # ties (many in the ints): stable order
    vals = np.take_along_axis(ref32(a), ids, axis=dim)
    v, i = wick.sort(t, dim=dim, descending=desc)
    check(v, vals, dt, exact=True)
    assert i.dtype == "u32"
    np.testing.assert_array_equal(i.numpy().astype(np.int64), ids)
    np.testing.assert_array_equal(wick.argsort(t, dim, desc).numpy().astype(np.int64), ids)
    np.testing.assert_array_equal(t.argsort(dim=dim, descending=desc).numpy().astype(np.int64), ids)
    check(t.sort(dim, desc)[0], vals, dt, exact=True)


def test_sort_nan_and_views():
    x = np.array([3.0, np.nan, -np.inf, 1.0, np.inf, -0.0, 0.0], dtype=np.float32)
    v, i = wick.sort(wick.asarray(x))
    assert i.numpy().tolist() == [2, 5, 6, 3, 0, 4, 1]     # NaN above +inf; -0 equals +0 (stable)
    assert wick.argsort(wick.asarray(x), descending=True).numpy().tolist() == [1, 4, 0, 3, 5, 6, 2]
    m = np.arange(12, dtype=np.float64)[::-1].reshape(3, 4)
    t = wick.asarray(m).T                                   # a transposed view
    np.testing.assert_array_equal(wick.sort(t)[0].numpy(), np.sort(m.T, axis=-1))
    np.testing.assert_array_equal(wick.sort(t, dim=0)[0].numpy(), np.sort(m.T, axis=0))


@pytest.mark.parametrize("dt", ["f32", "f64", "f16", "bf16", "i32", "i64"])
@pytest.mark.parametrize("dim", [-1, 0])
@pytest.mark.parametrize("largest", [True, False])
def test_topk(dt, dim, largest, rng):
    a = rand_np((6, 50), dt, rng, -100, 100) if dt.startswith("i") else rng.permutation(300).reshape(6, 50).astype(rand_np((1,), dt, rng).dtype)
    t = wick.asarray(a)
    for k in (0, 1, 5, a.shape[dim]):
        ids = np.take(_ref_argsort(a, dim, largest), np.arange(k), axis=dim)
        vals = np.take_along_axis(ref32(a), ids, axis=dim)
        v, i = wick.topk(t, k, dim=dim, largest=largest)
        check(v, vals, dt, exact=True)
        if not dt.startswith("i"):   # no ties: the indices too
            np.testing.assert_array_equal(i.numpy().astype(np.int64), ids)
        else:                        # ties: indices of those values
            np.testing.assert_array_equal(np.take_along_axis(ref32(a), i.numpy().astype(np.int64), axis=dim), vals)
        check(t.topk(k, dim, largest)[0], vals, dt, exact=True)
    with pytest.raises(ValueError, match="more than"):
        wick.topk(t, a.shape[dim] + 1, dim=dim)
    with pytest.raises(ValueError, match="at least 0"):
        t.topk(-1)
    with pytest.raises(IndexError):
        wick.sort(t, dim=2)


# ---- the same against PyTorch, where it is installed ----------------------------------

needs_torch = pytest.mark.skipif(torch is None, reason="torch not installed (the numpy references above stand in)")


def _to_torch(a):
    return torch.from_numpy(np.ascontiguousarray(a).astype(np.float64))


@needs_torch
def test_against_torch(rng):
    x = rng.uniform(-2, 2, (2, 4, 9, 8))
    w = rng.uniform(-0.5, 0.5, (6, 2, 3, 2))
    b = rng.uniform(-1, 1, (6,))
    tx, tw, tb = _to_torch(x), _to_torch(w), _to_torch(b)
    X, W, B = wick.asarray(x), wick.asarray(w), wick.asarray(b)

    def same(got, want, exact=False):
        check(got, want.numpy(), "f64", exact=exact)

    same(nn.conv2d(X, W, B, (2, 1), (1, 2), (1, 2), 2), F.conv2d(tx, tw, tb, (2, 1), (1, 2), (1, 2), 2))
    wt = rng.uniform(-0.5, 0.5, (4, 3, 3, 2))
    same(nn.conv_transpose2d(X, wick.asarray(wt), None, 2, 1, 1, 1, (1, 2)),
         F.conv_transpose2d(tx, _to_torch(wt), None, 2, 1, 1, 1, (1, 2)))
    x1, w1 = rng.uniform(-1, 1, (2, 4, 11)), rng.uniform(-1, 1, (4, 2, 3))
    same(nn.conv1d(wick.asarray(x1), wick.asarray(w1), None, 2, 1, 2, 2), F.conv1d(_to_torch(x1), _to_torch(w1), None, 2, 1, 2, 2))
    same(nn.conv_transpose1d(wick.asarray(x1), wick.asarray(w1), None, 2, 1, 1, 2),
         F.conv_transpose1d(_to_torch(x1), _to_torch(w1), None, 2, 1, 1, 2))
    for ceil in (False, True):
        for inc in (False, True):
            same(nn.avg_pool2d(X, 3, 2, 1, ceil, inc), F.avg_pool2d(tx, 3, 2, 1, ceil, inc))
        v, i = nn.max_pool2d(X, (3, 2), (2, 3), 1, ceil, return_indices=True)
        tv, ti = F.max_pool2d(tx, (3, 2), (2, 3), 1, 1, ceil, True)
        same(v, tv, exact=True)
        np.testing.assert_array_equal(i.numpy().astype(np.int64), ti.numpy())
    for size, scale in [((13, 5), None), (None, 1.75), (None, (2.0, 0.5))]:
        same(nn.interpolate(X, size, scale), F.interpolate(tx, size, scale, mode="nearest"), exact=True)
        for align in (False, True):
            same(nn.interpolate(X, size, scale, "bilinear", align), F.interpolate(tx, size, scale, mode="bilinear", align_corners=align))
    x3 = rng.uniform(-1, 1, (2, 3, 7))
    same(nn.interpolate(wick.asarray(x3), scale_factor=2.5), F.interpolate(_to_torch(x3), scale_factor=2.5), exact=True)
    s = rng.integers(0, 5, (4, 33)).astype(np.float64)
    for desc in (False, True):
        v, i = wick.sort(wick.asarray(s), dim=0, descending=desc)
        tv, ti = torch.sort(_to_torch(s), dim=0, descending=desc, stable=True)
        same(v, tv, exact=True)
        np.testing.assert_array_equal(i.numpy().astype(np.int64), ti.numpy())
    u = rng.permutation(132).reshape(4, 33).astype(np.float64)
    for largest in (False, True):
        v, i = wick.topk(wick.asarray(u), 7, dim=1, largest=largest)
        tv, ti = torch.topk(_to_torch(u), 7, dim=1, largest=largest)
        same(v, tv, exact=True)
        np.testing.assert_array_equal(i.numpy().astype(np.int64), ti.numpy())
