# test_nn_quant.py — wick.nn (softmax, log_softmax, rms_norm and its Gemma
# and residual forms, layer_norm, silu_mul, linear_silu_mul, the three ropes, rope tables,
# attention with its options) and quantized tensors (quantize, dequantize,
# qmatmul, qgather, raw GGUF bytes) against numpy float64 references.
import math

import numpy as np
import pytest

import wick
from conftest import TOL, check, rand_np, ref32

NN_DT = ["f32", "f64", "f16", "bf16"]


def _tol(dt, k=4):
    return TOL[dt] * k


@pytest.mark.parametrize("dt", NN_DT)
@pytest.mark.parametrize("dim", [-1, 0, 1])
def test_softmax_log_softmax(dt, dim, rng):
    a = rand_np((5, 9, 3), dt, rng, -4, 4)
    x = ref32(a)
    e = np.exp(x - x.max(axis=dim, keepdims=True))
    sm = e / e.sum(axis=dim, keepdims=True)
    t = wick.asarray(a)
    check(wick.nn.softmax(t, dim), sm, dt, tol=_tol(dt))
    check(t.softmax(dim=dim), sm, dt, tol=_tol(dt))
    check(wick.nn.log_softmax(t, dim=dim), np.log(sm), dt, tol=_tol(dt))


def test_softmax_all_neg_inf_row_is_nan():
    t = wick.tensor([[float("-inf")] * 3, [0.0, 0.0, 0.0]])
    r = wick.softmax(t).numpy()
    assert np.isnan(r[0]).all() and np.allclose(r[1], 1 / 3)


@pytest.mark.parametrize("dt", NN_DT)
def test_norms(dt, rng):
    a = rand_np((3, 4, 16), dt, rng)
    w = rand_np((16,), dt, rng)
    b = rand_np((16,), dt, rng)
    x, wx, bx = ref32(a), ref32(w), ref32(b)
    rms = x / np.sqrt((x**2).mean(-1, keepdims=True) + 1e-6)
    check(wick.nn.rms_norm(wick.asarray(a), wick.asarray(w), 1e-6), rms * wx, dt, tol=_tol(dt))
    check(wick.nn.rms_norm(wick.asarray(a)), rms, dt, tol=_tol(dt))
    check(wick.nn.rms_norm(wick.asarray(a), wick.asarray(w), gemma=True), rms * (1 + wx), dt, tol=_tol(dt))
    r = rand_np((3, 4, 16), dt, rng)
    out, s = wick.nn.add_rms_norm(wick.asarray(a), wick.asarray(r), wick.asarray(w))
    sref = (wick.asarray(a) + wick.asarray(r))   # the sum rounded to dt, then normalised
    np.testing.assert_array_equal(s.numpy().view(np.uint8), sref.numpy().view(np.uint8))
    check(out, wick.nn.rms_norm(sref, wick.asarray(w)).to("f64").numpy(), dt, tol=_tol(dt))
    mu = x.mean(-1, keepdims=True)
    var = ((x - mu) ** 2).mean(-1, keepdims=True)
    ln = (x - mu) / np.sqrt(var + 1e-5)
    check(wick.nn.layer_norm(wick.asarray(a), wick.asarray(w), wick.asarray(b)), ln * wx + bx, dt, tol=_tol(dt))
    check(wick.nn.layer_norm(wick.asarray(a), None, None, 1e-5), ln, dt, tol=_tol(dt))


@pytest.mark.parametrize("dt", NN_DT)
def test_silu_mul(dt, rng):
    a, b = rand_np((4, 1, 8), dt, rng), rand_np((3, 8), dt, rng)
    x, y = ref32(a), ref32(b)
    check(wick.nn.silu_mul(wick.asarray(a), wick.asarray(b)), x / (1 + np.exp(-x)) * y, dt, tol=_tol(dt))


@pytest.mark.parametrize("dt", NN_DT)
def test_linear_silu_mul(dt, rng):
    # w stacks the gate's 5 rows, then the up projection's 5
    a, w = rand_np((3, 16), dt, rng), rand_np((10, 16), dt, rng)
    x, wx = ref32(a), ref32(w)
    r = wick.nn.linear_silu_mul(wick.asarray(a), wick.asarray(w))
    g, u = [wick.asarray(x @ wx[s].T).to(dt).to("f64").numpy() for s in (slice(0, 5), slice(5, 10))]
    check(r, g / (1 + np.exp(-g)) * u, dt, tol=_tol(dt, 16))
    with pytest.raises(ValueError, match=r"\[2F, K\]"):
        wick.nn.linear_silu_mul(wick.asarray(a), wick.asarray(rand_np((9, 16), dt, rng)))


def _rope_ref(x, cos, sin, off, interleaved, thd):
    x = x.copy()
    D = x.shape[-1]
    T = x.shape[2] if not thd else x.shape[1]
    out = x.copy()
    for t in range(T):
        c, s = cos[t + off], sin[t + off]
        sl = (slice(None), slice(None), t) if not thd else (slice(None), t)
        xt = x[sl]
        if interleaved:
            x0, x1 = xt[..., 0::2], xt[..., 1::2]
            o = out[sl]
            o[..., 0::2] = x0 * c - x1 * s
            o[..., 1::2] = x0 * s + x1 * c
        else:
            x0, x1 = xt[..., : D // 2], xt[..., D // 2:]
            o = out[sl]
            o[..., : D // 2] = x0 * c - x1 * s
            o[..., D // 2:] = x0 * s + x1 * c
    return out


@pytest.mark.parametrize("dt", NN_DT)
@pytest.mark.parametrize("kind", ["rope", "rope_i", "rope_thd"])
def test_rope(dt, kind, rng):
    B, H, T, D, npos, off = 2, 3, 5, 8, 16, 4
    shape = (B, H, T, D) if kind != "rope_thd" else (B, T, H, D)
    a = rand_np(shape, dt, rng)
    cos, sin = wick.nn.rope_tables(D, 10000.0, npos)
    assert cos.shape == (npos, D // 2) and cos.dtype == "f32"
    inv = 10000.0 ** (-np.arange(0, D, 2) / D)
    ang = np.arange(npos)[:, None] * inv[None]
    np.testing.assert_allclose(cos.numpy(), np.cos(ang), rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(sin.numpy(), np.sin(ang), rtol=1e-6, atol=1e-6)
    # the tables are f32 and used as f32: the reference takes them as stored
    ref = _rope_ref(ref32(a), ref32(cos.numpy()), ref32(sin.numpy()), off, kind == "rope_i", kind == "rope_thd")
    r = getattr(wick.nn, kind)(wick.asarray(a), cos, sin, pos_offset=off)
    check(r, ref, dt, tol=_tol(dt))


@pytest.mark.parametrize("dt", NN_DT)
@pytest.mark.parametrize("interleaved", [False, True])
@pytest.mark.parametrize("devpos", [False, True])
def test_rope_kv(dt, interleaved, devpos, rng):
    B, T, Hq, Hkv, D, C, off = 1, 3, 4, 2, 8, 9, 5
    npos = C + 2
    qkv = rand_np((B, T, Hq + 2 * Hkv, D), dt, rng)
    cos, sin = wick.nn.rope_tables(D, 10000.0, npos)
    k0, v0 = rand_np((B, Hkv, C, D), dt, rng), rand_np((B, Hkv, C, D), dt, rng)
    kc, vc = wick.asarray(k0), wick.asarray(v0)
    pos = wick.asarray(np.array([off], dtype=np.uint32)) if devpos else None
    q = wick.nn.rope_kv(wick.asarray(qkv), Hq, cos, sin, kc, vc, pos_offset=0 if devpos else off, pos=pos,
                        interleaved=interleaved)
    x = ref32(qkv)
    rot = _rope_ref(x[:, :, : Hq + Hkv], ref32(cos.numpy()), ref32(sin.numpy()), off, interleaved, True)
    check(q, rot[:, :, :Hq], dt, tol=_tol(dt))
    kref, vref = ref32(k0).copy(), ref32(v0).copy()
    kref[:, :, off:off + T] = rot[:, :, Hq:].transpose(0, 2, 1, 3)
    vref[:, :, off:off + T] = x[:, :, Hq + Hkv:].transpose(0, 2, 1, 3)
    check(kc, kref, dt, tol=_tol(dt))
    check(vc, vref, dt, tol=_tol(dt))
    with pytest.raises(IndexError):
        wick.nn.rope_kv(wick.asarray(qkv), Hq, cos, sin, kc, vc, pos_offset=C)   # rows past the cache


@pytest.mark.parametrize("dt", NN_DT)
def test_linear_rope_kv(dt, rng):
    T, Hq, Hkv, D, K, C, off = 1, 4, 2, 8, 32, 9, 5
    x = rand_np((T, K), dt, rng)
    w = rand_np(((Hq + 2 * Hkv) * D, K), dt, rng)
    cos, sin = wick.nn.rope_tables(D, 10000.0, C + 2)
    k0, v0 = rand_np((1, Hkv, C, D), dt, rng), rand_np((1, Hkv, C, D), dt, rng)
    kc, vc, kc2, vc2 = wick.asarray(k0), wick.asarray(v0), wick.asarray(k0), wick.asarray(v0)
    q = wick.nn.linear_rope_kv(wick.asarray(x), wick.asarray(w), Hq, cos, sin, kc, vc, pos_offset=off)
    qkv = wick.asarray((ref32(x) @ ref32(w).T).reshape(1, T, Hq + 2 * Hkv, D)).to(q.dtype)
    q2 = wick.nn.rope_kv(qkv, Hq, cos, sin, kc2, vc2, pos_offset=off)
    check(q, ref32(q2.numpy()), dt, tol=_tol(dt))
    check(kc, ref32(kc2.numpy()), dt, tol=_tol(dt))
    check(vc, ref32(vc2.numpy()), dt, tol=_tol(dt))
    with pytest.raises(ValueError):
        wick.nn.linear_rope_kv(wick.asarray(x), wick.asarray(w[:-1]), Hq, cos, sin, kc, vc)   # not whole heads


def test_rope_tables_scaling():
    c, s = wick.nn.rope_tables(8, 10000.0, 4, "linear", factor=2.0)
    inv = 10000.0 ** (-np.arange(0, 8, 2) / 8)
    np.testing.assert_allclose(c.numpy(), np.cos(np.arange(4)[:, None] / 2.0 * inv), rtol=1e-6, atol=1e-6)
    c3, _ = wick.nn.rope_tables(128, 500000.0, 8, "llama3", factor=8.0, low_freq_factor=1.0, high_freq_factor=4.0,
                                original_max_position=8192)
    assert c3.shape == (8, 64)
    with pytest.raises(ValueError):
        wick.nn.rope_tables(8, 10000.0, 4, "yarn")
    with pytest.raises(ValueError):
        wick.nn.rope_tables(7, 10000.0, 4)


def _attn_ref(q, k, v, scale=None, causal=False, window=0, softcap=0.0, mask=None):
    B, Hq, Tq, D = q.shape
    Hk, Tk = k.shape[1], k.shape[2]
    scale = 1 / math.sqrt(D) if scale is None else scale
    k = np.repeat(k, Hq // Hk, axis=1)
    v = np.repeat(v, Hq // Hk, axis=1)
    s = scale * q @ np.swapaxes(k, -1, -2)
    if softcap:
        s = softcap * np.tanh(s / softcap)
    if mask is not None:
        s = s + mask
    i = np.arange(Tq)[:, None]
    j = np.arange(Tk)[None]
    allowed = np.ones((Tq, Tk), bool)
    if causal:
        allowed &= j <= i + Tk - Tq
    if window:
        allowed &= j > i + Tk - Tq - window
    s = np.where(allowed, s, -np.inf)
    m = s.max(-1, keepdims=True)
    e = np.where(np.isfinite(m), np.exp(s - np.where(np.isfinite(m), m, 0)), 0)
    den = e.sum(-1, keepdims=True)
    p = np.where(den > 0, e / np.where(den > 0, den, 1), 0)
    return p @ v


@pytest.mark.parametrize("dt", NN_DT)
@pytest.mark.parametrize("opts", [{}, {"causal": True}, {"causal": True, "window": 3}, {"softcap": 5.0}, {"scale": 0.3},
                                  {"mask": True}], ids=repr)
def test_attention(dt, opts, rng):
    B, Hq, Hk, Tq, Tk, D = 2, 4, 2, 5, 7, 16
    q, k, v = rand_np((B, Hq, Tq, D), dt, rng), rand_np((B, Hk, Tk, D), dt, rng), rand_np((B, Hk, Tk, D), dt, rng)
    o = dict(opts)
    mask_np = None
    if o.pop("mask", False):
        mask_np = rng.standard_normal((1, 1, Tq, Tk)).astype(np.float32)
        o["mask"] = wick.asarray(mask_np)
    r = wick.nn.attention(wick.asarray(q), wick.asarray(k), wick.asarray(v), **o)
    ref_opts = {kk: vv for kk, vv in opts.items() if kk != "mask"}
    ref = _attn_ref(ref32(q), ref32(k), ref32(v), mask=mask_np, **ref_opts)
    check(r, ref, dt, tol=_tol(dt, 6))


@pytest.mark.parametrize("n", [0, 3, 7, 20])
def test_attention_kv_len(n, rng):
    # a count of keys read on the device: the first min(n, Tk) keys, aligned to the queries' end
    B, Hq, Hk, Tq, Tk, D = 1, 4, 2, 2, 7, 16
    q, k, v = rand_np((B, Hq, Tq, D), "f32", rng), rand_np((B, Hk, Tk, D), "f32", rng), rand_np((B, Hk, Tk, D), "f32", rng)
    r = wick.nn.attention(wick.asarray(q), wick.asarray(k), wick.asarray(v), causal=True,
                          kv_len=wick.asarray(np.array([n], dtype=np.uint32)))
    m = min(n, Tk)
    ref = _attn_ref(ref32(q), ref32(k)[:, :, :m], ref32(v)[:, :, :m], causal=True) if m else np.zeros(q.shape)
    check(r, ref, "f32", tol=1e-5)
    with pytest.raises(TypeError):
        wick.nn.attention(wick.asarray(q), wick.asarray(k), wick.asarray(v), kv_len=wick.asarray(np.zeros(1, np.float32)))


def test_attention_views_of_bthd(rng):
    # [B, T, H, D] transposed into [B, H, T, D] goes in without a copy
    q = rng.standard_normal((1, 6, 2, 8)).astype(np.float32)
    t = wick.asarray(q).transpose(1, 2)
    r = wick.nn.attention(t, t, t, causal=True)
    x = ref32(q).transpose(0, 2, 1, 3)
    check(r, _attn_ref(x, x, x, causal=True), "f32", tol=1e-5)


@pytest.mark.parametrize("q", ["q4_0", "q4_1", "q5_0", "q5_1", "q8_0", "q2_k", "q3_k", "q4_k", "q5_k", "q6_k", "q8_k"])
def test_quantize_round_trip(q, rng):
    bs = wick.dtype_info(q)["block_size"]
    a = rng.standard_normal((4, 2 * bs)).astype(np.float32)
    t = wick.quantize(wick.asarray(a), q)
    assert t.dtype == q and t.is_quantized and t.shape == a.shape
    assert t.nbytes == 4 * 2 * wick.dtype_info(q)["block_bytes"]
    d = wick.dequantize(t)
    err = np.sqrt(((d.numpy() - a) ** 2).mean() / (a**2).mean())
    assert err < {"q2_k": 0.5, "q3_k": 0.3}.get(q, 0.2), err
    # raw bytes round-trip
    raw = t.tobytes()
    assert len(raw) == t.nbytes
    t2 = wick.frombuffer(raw, q, a.shape)
    np.testing.assert_array_equal(wick.dequantize(t2).numpy(), d.numpy())
    assert t.dequantize("bf16").dtype == "bf16"
    # qmatmul: x . w^T against the dequantized weights
    x = rng.standard_normal((3, 2 * bs)).astype(np.float32)
    y = wick.qmatmul(wick.asarray(x), t)
    np.testing.assert_allclose(y.numpy(), x.astype(np.float64) @ d.numpy().astype(np.float64).T, rtol=1e-4, atol=1e-3)
    # qgather: rows by id
    g = wick.qgather(t, [3, 0, 3])
    np.testing.assert_array_equal(g.numpy(), d.numpy()[[3, 0, 3]])
    # rows of a quantized tensor are views
    np.testing.assert_array_equal(wick.dequantize(t[1:3]).numpy(), d.numpy()[1:3])


@pytest.mark.parametrize("wdt", ["f16", "bf16"])
def test_qmatmul_dense_half_weight(wdt, rng):
    # a dense f16/bf16 w (a model file's matrix kept as stored) under f32 x, on the cpu:
    # exact products, f32 sums; the same bits for a row alone and in a batch
    w = wick.asarray(rng.standard_normal((37, 70)).astype(np.float32)).to(wdt)
    wv = w.to("f32").numpy().astype(np.float64)
    x = rng.standard_normal((9, 70)).astype(np.float32)
    y = wick.qmatmul(wick.asarray(x), w)
    assert y.dtype == "f32" and y.shape == (9, 37)
    np.testing.assert_allclose(y.numpy(), x.astype(np.float64) @ wv.T, rtol=1e-5, atol=1e-5)
    one = wick.qmatmul(wick.asarray(x[4:5]), w).numpy()
    np.testing.assert_array_equal(one, y.numpy()[4:5])
    with pytest.raises(Exception):
        wick.qmatmul(wick.asarray(x), w.to("f32"))   # a dense f32 w: refused (matmul's job)


def test_quant_errors():
    t = wick.quantize(wick.ones((2, 32)), "q8_0")
    with pytest.raises(TypeError):
        t.tolist()
    with pytest.raises(TypeError):
        t.numpy()
    with pytest.raises((TypeError, NotImplementedError)):
        t.exp()
    with pytest.raises(ValueError):
        wick.quantize(wick.ones((2, 31)), "q8_0")
    with pytest.raises(IndexError):
        wick.qgather(t, [2])
    with pytest.raises(ValueError):
        wick.frombuffer(b"\x00" * 10, "q8_0", (1, 32))
    with pytest.raises((ValueError, IndexError)):
        t[:, ::2]
