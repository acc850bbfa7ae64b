# test_gpu.py — the bindings on cuda:0 against PyTorch on the same GPU:
# elementwise, comparisons, reductions, matmul, views and indexing, casts,
# index ops and the NN ops, inputs shared from torch through DLPack and
# results read back through DLPack; DLPack sharing (the same pointer, no
# copy, a write on one side seen on the other after the stream contract's
# synchronisation, lifetimes) and its cost. Skipped without a CUDA device
# in wick (the plugin: `make cuda` before `pip install ./python`, or
# WICK_PLUGIN_DIR=build) or without torch with CUDA.
import gc
import math
import threading
import time

import numpy as np
import pytest

import wick

torch = pytest.importorskip("torch")
F = torch.nn.functional

DEV = "cuda:0"
pytestmark = pytest.mark.skipif(
    not torch.cuda.is_available() or wick.device_count("cuda") == 0,
    reason="needs a CUDA GPU seen by both wick (%s) and torch" % (wick.plugin_status("cuda") or "no devices"),
)

TD = {"f32": torch.float32, "f64": torch.float64, "f16": torch.float16, "bf16": torch.bfloat16, "u8": torch.uint8,
      "i16": torch.int16, "i32": torch.int32, "i64": torch.int64}
TOL = {"f32": 2e-5, "f64": 1e-12, "f16": 2e-3, "bf16": 1.6e-2}
FLOATS = ["f32", "f16", "bf16", "f64"]


def W(x):
    """a torch tensor on the GPU as a wick tensor (shared through DLPack)"""
    return wick.from_dlpack(x)


def T(t):
    """a wick tensor as a torch tensor (shared through DLPack)"""
    return torch.from_dlpack(t)


def close(got, ref, dt, k=1.0):
    assert isinstance(got, wick.Tensor) and got.device == DEV
    g = T(got)
    assert g.device.type == "cuda" and g.shape == ref.shape and g.dtype == ref.dtype, (g.shape, ref.shape, g.dtype)
    if dt in TOL:
        r = TOL[dt] * k
        torch.testing.assert_close(g.double(), ref.double(), rtol=r, atol=r, equal_nan=True)
    else:
        torch.testing.assert_close(g, ref, rtol=0, atol=0)


def rnd(shape, dt, lo=-2.0, hi=2.0, seed=0):
    g = torch.Generator(device=DEV).manual_seed(seed)
    if dt in ("u8", "i16", "i32", "i64"):
        return torch.randint(0 if dt == "u8" else -50, 50, shape, generator=g, device=DEV, dtype=TD[dt])
    return (torch.rand(shape, generator=g, device=DEV, dtype=torch.float64) * (hi - lo) + lo).to(TD[dt])


UNARY = {
    "exp": torch.exp, "log": torch.log, "sin": torch.sin, "cos": torch.cos, "tanh": torch.tanh, "abs": torch.abs,
    "neg": torch.neg, "recip": torch.reciprocal, "sqr": torch.square, "sqrt": torch.sqrt,
    "gelu": lambda x: F.gelu(x, approximate="tanh"), "gelu_erf": F.gelu, "erf": torch.erf, "relu": torch.relu,
    "silu": F.silu, "floor": torch.floor, "ceil": torch.ceil, "round": torch.round, "sign": torch.sign,
    "sigmoid": torch.sigmoid,
}


@pytest.mark.parametrize("dt", FLOATS)
@pytest.mark.parametrize("op", sorted(UNARY))
def test_unary(op, dt):
    lo, hi = (0.1, 4.0) if op in ("log", "sqrt", "recip") else (-3.0, 3.0)
    x = rnd((33, 65), dt, lo, hi)
    ref = UNARY[op](x.double()).to(x.dtype)
    close(getattr(W(x), op)(), ref, dt, k=2)
    close(getattr(W(x.T), op)(), ref.T.contiguous(), dt, k=2)


BINARY = {"add": torch.add, "sub": torch.sub, "mul": torch.mul, "div": torch.div, "minimum": torch.minimum,
          "maximum": torch.maximum}


@pytest.mark.parametrize("dt", FLOATS + ["i32", "i64", "u8"])
@pytest.mark.parametrize("op", sorted(BINARY))
def test_binary_broadcast(op, dt):
    a, b = rnd((3, 1, 129), dt, seed=1), rnd((7, 1), dt, seed=2)
    if dt in ("i32", "i64", "u8"):
        b = torch.where(b == 0, torch.ones_like(b), b)
        f = (lambda x, y: torch.div(x, y, rounding_mode="trunc")) if op == "div" else BINARY[op]
        close(getattr(W(a), op)(W(b)), f(a, b), dt)
    else:
        close(getattr(W(a), op)(W(b)), BINARY[op](a.double(), b.double()).to(a.dtype), dt)
    if op in ("add", "mul"):
        close(W(a) + 2 if op == "add" else W(a) * 2, a + 2 if op == "add" else a * 2, dt)


@pytest.mark.parametrize("dt", ["f32", "bf16", "i64"])
def test_comparisons_where(dt):
    a, b = rnd((5, 40), dt, seed=3), rnd((5, 40), dt, seed=4)
    b[::2] = a[::2]
    for name, f in [("eq", torch.eq), ("ne", torch.ne), ("lt", torch.lt), ("le", torch.le), ("gt", torch.gt),
                    ("ge", torch.ge)]:
        close(getattr(W(a), name)(W(b)), f(a, b).to(torch.uint8), "u8")
    c = (a > b).to(torch.uint8)
    close(wick.where(W(c), W(a), W(b)), torch.where(c.bool(), a, b), dt)


@pytest.mark.parametrize("dt", FLOATS)
@pytest.mark.parametrize("dim", [None, 0, 1, (0, 2)])
def test_reductions(dt, dim):
    x = rnd((6, 33, 17), dt, seed=5)
    xd = x.double()
    kw = {} if dim is None else {"dim": dim}
    close(W(x).sum(dim=dim), (xd.sum(**kw)).to(x.dtype), dt, k=8)
    close(W(x).mean(dim=dim, keepdim=True), xd.mean(**(kw or {"dim": (0, 1, 2)}), keepdim=True).to(x.dtype), dt, k=8)
    close(W(x).max(dim=dim), (xd.amax(**kw) if kw else xd.max()).to(x.dtype), dt)
    close(W(x).min(dim=dim), (xd.amin(**kw) if kw else xd.min()).to(x.dtype), dt)
    if dim is None or isinstance(dim, int):
        ref = torch.argmax(x, dim=dim) if dim is not None else torch.argmax(x)
        got = T(W(x).argmax(dim=dim).to("i64"))   # u32 indices, widened for torch
        assert torch.equal(got, ref)


@pytest.mark.parametrize("dt", ["f32", "f16", "bf16"])
def test_matmul(dt):
    a, b = rnd((2, 1, 65, 129), dt, seed=6), rnd((3, 129, 33), dt, seed=7)
    ref = torch.matmul(a.double(), b.double()).to(a.dtype)
    close(W(a) @ W(b), ref, dt, k={"f32": 100, "f16": 4, "bf16": 4}[dt])
    close(W(b).mT @ W(b), (b.double().mT @ b.double()).to(b.dtype), dt, k={"f32": 100, "f16": 4, "bf16": 4}[dt])


def test_views_indexing_casts_index_ops():
    x = rnd((8, 12, 6), "f32", seed=8)
    w = W(x)
    for key in [1, (slice(None), 3), (slice(1, 7, 2), Ellipsis, None), (Ellipsis, slice(None, None, 3))]:
        close(w[key].contiguous(), x[key].contiguous(), "f32")
    close(w.transpose(0, 2).contiguous(), x.transpose(0, 2).contiguous(), "f32")
    close(w.reshape(96, 6), x.reshape(96, 6), "f32")
    close(w.to("bf16"), x.to(torch.bfloat16), "bf16", k=0)
    close(w.to("i32"), x.to(torch.int32), "i32")
    ids = torch.tensor([7, 0, 3], device=DEV)
    close(w.index_select(0, W(ids)), x.index_select(0, ids), "f32")
    g = torch.randint(0, 12, (8, 5, 6), device=DEV)
    close(w.gather(1, W(g)), x.gather(1, g), "f32")
    d = torch.zeros(8, 12, 6, device=DEV)
    s = rnd((8, 5, 6), "f32", seed=9)
    W(d).scatter_add_(1, W(g), W(s))
    wick.synchronize(DEV)
    torch.testing.assert_close(d, torch.zeros(8, 12, 6, device=DEV).scatter_add_(1, g, s), rtol=1e-5, atol=1e-5)
    c = wick.cat([w, w], dim=1)
    close(c, torch.cat([x, x], 1), "f32")


@pytest.mark.parametrize("dt", ["f32", "f16", "bf16"])
def test_nn_ops(dt):
    x = rnd((4, 7, 64), dt, seed=10)
    wt, bs = rnd((64,), dt, seed=11), rnd((64,), dt, seed=12)
    xd = x.double()
    close(wick.nn.softmax(W(x)), torch.softmax(xd, -1).to(x.dtype), dt, k=4)
    close(wick.nn.log_softmax(W(x), 1), torch.log_softmax(xd, 1).to(x.dtype), dt, k=4)
    rms = xd / torch.sqrt((xd**2).mean(-1, keepdim=True) + 1e-6)
    close(wick.nn.rms_norm(W(x), W(wt), 1e-6), (rms * wt.double()).to(x.dtype), dt, k=4)
    close(wick.nn.layer_norm(W(x), W(wt), W(bs), 1e-5), F.layer_norm(xd, (64,), wt.double(), bs.double(), 1e-5).to(x.dtype),
          dt, k=4)
    close(wick.nn.silu_mul(W(x), W(x)), (F.silu(xd) * xd).to(x.dtype), dt, k=4)


@pytest.mark.parametrize("dt", ["f32", "f16", "bf16"])
@pytest.mark.parametrize("causal", [False, True])
def test_attention(dt, causal):
    B, Hq, Hk, T_, D = 2, 8, 2, 37, 64
    q, k, v = rnd((B, Hq, T_, D), dt, seed=13), rnd((B, Hk, T_, D), dt, seed=14), rnd((B, Hk, T_, D), dt, seed=15)
    kk, vv = k.repeat_interleave(Hq // Hk, 1), v.repeat_interleave(Hq // Hk, 1)
    ref = F.scaled_dot_product_attention(q.double(), kk.double(), vv.double(), is_causal=causal).to(q.dtype)
    close(wick.nn.attention(W(q), W(k), W(v), causal=causal), ref, dt, k=6)


@pytest.mark.parametrize("kind", ["rope", "rope_thd"])
def test_rope(kind):
    B, H, T_, D = 1, 4, 9, 32
    x = rnd((B, H, T_, D) if kind == "rope" else (B, T_, H, D), "f32", seed=16)
    cos, sin = wick.nn.rope_tables(D, 10000.0, 16, device=DEV)
    c, s = T(cos).double(), T(sin).double()
    xd = x.double() if kind == "rope" else x.double().transpose(1, 2)
    x0, x1 = xd[..., : D // 2], xd[..., D // 2:]
    cc, ss = c[2:2 + T_], s[2:2 + T_]
    ref = torch.cat([x0 * cc - x1 * ss, x0 * ss + x1 * cc], -1)
    if kind == "rope_thd":
        ref = ref.transpose(1, 2).contiguous()
    close(getattr(wick.nn, kind)(W(x), cos, sin, pos_offset=2), ref.float(), "f32", k=4)


def test_quantized_on_gpu():
    if not wick.supports("qmatmul", "q8_0", DEV):
        pytest.skip("qmatmul not on %s yet" % DEV)
    w = wick.quantize(wick.randn((64, 128), seed=1), "q8_0")
    x = wick.randn((5, 128), seed=2)
    ref = wick.qmatmul(x, w).numpy()
    got = wick.qmatmul(x.to(DEV), w.to(DEV)).numpy()
    # the GPU's qmatvec (m <= 8) rounds x to 8 bits per block of 32, as the
    # format's reference does for its activations (docs/quantization.md):
    # each x_k moves by at most half its block's step max|x_blk| / 127, so
    # |got - ref| <= sum over blocks of step/2 * sum |w| (and a little for
    # the f16 block scale and f32 sums)
    xv = x.numpy().reshape(5, 4, 32)
    wv = np.abs(wick.dequantize(w, "f32").numpy()).reshape(64, 4, 32).sum(axis=2)
    step = np.abs(xv).max(axis=2) / 127.0
    bound = 0.5 * step @ wv.T * 1.01 + 1e-4 * np.abs(ref).max()
    assert np.all(np.abs(got - ref) <= bound), (np.abs(got - ref) / bound).max()


def test_dlpack_torch_to_wick_shares_memory():
    x = torch.arange(16, dtype=torch.float32, device=DEV)
    w = W(x)
    assert w.device == DEV and w.data_ptr() == x.data_ptr() and w.__dlpack_device__() == (2, 0)
    x[3] = 100.0                  # torch writes on its stream
    torch.cuda.synchronize()
    assert w[3].item() == 100.0   # wick sees it
    w[4] = -7.0                   # wick writes on its stream
    wick.synchronize(DEV)
    assert x[4].item() == -7.0    # torch sees it
    v = x.view(4, 4)[:, 1::2]     # a strided view
    wv = W(v)
    assert wv.data_ptr() == v.data_ptr() and wv.strides == tuple(v.stride())
    np.testing.assert_array_equal(wv.numpy(), v.cpu().numpy())
    del x, v
    gc.collect()
    torch.cuda.empty_cache()
    assert w[3].item() == 100.0   # the memory lives while wick holds it


def test_dlpack_wick_to_torch_shares_memory():
    t = wick.arange(12, dtype="f32", device=DEV).reshape(3, 4)
    y = T(t)
    assert y.device == torch.device(DEV) and y.data_ptr() == t.data_ptr()
    y.add_(1)
    torch.cuda.synchronize()
    assert t.tolist()[0] == [1.0, 2.0, 3.0, 4.0]
    t.fill_(2.0)
    wick.synchronize(DEV)
    assert y.sum().item() == 24.0
    z = T(t.T)
    assert z.data_ptr() == t.data_ptr() and tuple(z.stride()) == (1, 4)
    bf = wick.ones((5,), dtype="bf16", device=DEV)
    assert T(bf).dtype == torch.bfloat16 and T(bf).data_ptr() == bf.data_ptr()
    del t
    gc.collect()
    assert y.sum().item() == 24.0   # torch keeps wick's memory alive


def test_dlpack_stream_order_without_host_sync():
    # DLPack's stream contract, with no host synchronisation anywhere: work
    # queued on one side is done before the other side's next work reads it
    assert wick.device_stream(DEV) not in (0, torch.cuda.current_stream().cuda_stream)
    n = 1 << 24                   # f64: every partial sum exact
    x = torch.zeros(n, dtype=torch.float64, device=DEV)
    for _ in range(200):          # ~20 ms queued on torch's stream
        x.add_(1)
    w = W(x)                      # wick's stream waits for it on the device
    s = (w * 1.0).sum()           # wick ops reading x at once
    assert T(s).item() == 200.0 * n
    t = wick.zeros((n,), dtype="f64", device=DEV)
    for _ in range(200):          # queued on wick's stream
        t = t + 1.0
    y = T(t)                      # torch's current stream waits for it
    assert y.sum().item() == 200.0 * n
    # a side stream of torch's as the consumer
    side = torch.cuda.Stream()
    t2 = t * 2.0
    with torch.cuda.stream(side):
        z = torch.from_dlpack(t2)
        total = z.sum()
    side.synchronize()
    assert total.item() == 400.0 * n


def test_to_torch_shares_memory_in_stream_order():
    n = 1 << 22
    t = wick.zeros((n,), dtype="f64", device=DEV)
    for _ in range(100):          # queued on wick's stream
        t = t + 1.0
    y = wick.to_torch(t)          # torch's current stream waits for it
    assert y.data_ptr() == t.data_ptr() and y.sum().item() == 100.0 * n
    side = torch.cuda.Stream()
    t2 = t * 2.0
    with torch.cuda.stream(side):  # the current stream then: the side one waits
        total = wick.to_torch(t2).sum()
    side.synchronize()
    assert total.item() == 200.0 * n
    x = torch.zeros(n, dtype=torch.float64, device=DEV)
    with torch.cuda.stream(side):  # torch -> wick: wick waits for torch's current (side) stream
        for _ in range(100):
            x.add_(1)
        w = W(x)
    assert T((w * 1.0).sum()).item() == 100.0 * n


def test_dlpack_exchange_cost():
    x = torch.ones(1024, device=DEV)
    t = wick.ones(1024, device=DEV)
    for _ in range(100):
        W(x), T(t)
    n = 2000
    t0 = time.perf_counter()
    for _ in range(n):
        W(x)
    imp = (time.perf_counter() - t0) / n * 1e6
    t0 = time.perf_counter()
    for _ in range(n):
        T(t)
    exp = (time.perf_counter() - t0) / n * 1e6
    t0 = time.perf_counter()
    for _ in range(n):
        wick.to_torch(t)
    tt = (time.perf_counter() - t0) / n * 1e6
    print("\nDLPack on %s: torch -> wick %.2f us, wick -> torch %.2f us (wick.to_torch %.2f us)"
          % (torch.cuda.get_device_name(0), imp, exp, tt))
    assert imp < 100 and exp < 100 and tt < 100


def test_numpy_of_gpu_tensor_copies():
    t = wick.arange(6, dtype="f32", device=DEV)
    a = t.numpy()
    assert a.tolist() == [0, 1, 2, 3, 4, 5]
    assert np.asarray(t).tolist() == a.tolist()
    with pytest.raises(BufferError):
        memoryview(t)
    with pytest.raises(ValueError):
        np.asarray(t, copy=False) if np.__version__ >= "2" else (_ for _ in ()).throw(ValueError())
    back = wick.asarray(a, device=DEV)
    assert back.device == DEV and back.tolist() == a.tolist()


def test_threads_on_gpu():
    a = wick.randn((256, 256), seed=4, device=DEV)
    ref = (a @ a).sum().item()
    out, errs = [], []

    def run():
        try:
            for _ in range(10):
                out.append((a @ a).sum().item())
        except Exception as e:   # pragma: no cover
            errs.append(e)

    ths = [threading.Thread(target=run) for _ in range(8)]
    for th in ths:
        th.start()
    for th in ths:
        th.join()
    assert not errs and all(math.isclose(v, ref, rel_tol=1e-6) for v in out)


def test_devices_mismatch_is_value_error():
    with pytest.raises(ValueError):
        wick.ones(2) + wick.ones(2, device=DEV)


def test_pinned_memory_and_events_on_gpu():
    h = wick.pinned_empty((1 << 20,), dtype="f32", device=DEV)
    h.copy_(wick.arange(1 << 20, dtype="f32"))
    a, b = wick.Event(DEV), wick.Event(DEV)
    a.record()
    d = h.to(DEV)
    b.record()
    assert a.elapsed_ms(b) >= 0
    back = wick.pinned_empty((1 << 20,), device=DEV)
    back.copy_(d)   # device to pinned host
    np.testing.assert_array_equal(back.numpy(), np.arange(1 << 20, dtype=np.float32))
