# test_graph.py — Tensor.write (host data into a tensor in place, any
# view) on the cpu, and wick.Graph: refused on the cpu; on cuda:0 (skipped
# without a CUDA device in wick) a recording replayed after new inputs
# are written, checked against numpy, the tensors made while recording
# kept alive by the Graph, a failed recording dropped, the misuses refused.
import gc
import weakref

import numpy as np
import pytest

import wick


def test_write_fills_in_place():
    t = wick.zeros((2, 3), dtype="f32")
    t.write(np.arange(6, dtype=np.float32).reshape(2, 3))
    np.testing.assert_array_equal(t.numpy(), np.arange(6, dtype=np.float32).reshape(2, 3))
    t.write(np.full(6, 7, np.float32).tobytes())   # raw bytes are taken as they are
    assert float(t.numpy().sum()) == 42.0


def test_write_into_a_view():
    t = wick.zeros((2, 3), dtype="f32")
    t.transpose(0, 1).write(np.array([[10, 11], [12, 13], [14, 15]], dtype=np.float32))
    np.testing.assert_array_equal(t.numpy(), [[10, 12, 14], [11, 13, 15]])
    t.narrow(1, 1, 1).write(np.array([[-1], [-2]], dtype=np.float32))
    np.testing.assert_array_equal(t.numpy(), [[10, -1, 14], [11, -2, 15]])


def test_write_refuses_bad_data():
    t = wick.zeros((2, 3), dtype="f32")
    with pytest.raises(ValueError, match="20 bytes given"):
        t.write(np.zeros(5, np.float32))
    with pytest.raises(TypeError, match="elements of 8 bytes"):
        t.write(np.zeros(3, np.float64))        # the same bytes, the wrong element size
    with pytest.raises(ValueError):
        t.write(np.zeros((3, 2), np.float32).T)  # not C-contiguous
    with pytest.raises(TypeError):
        t.write(3.0)
    np.testing.assert_array_equal(t.numpy(), np.zeros((2, 3), np.float32))   # nothing written


def test_graph_refused_on_cpu():
    with pytest.raises(NotImplementedError, match="does not record graphs"):
        wick.Graph("cpu")


DEV = "cuda:0"
gpu = pytest.mark.skipif(not (wick.device_count("cuda") > 0 and wick.supports("graph", "f32", DEV)),
                         reason="needs a CUDA device in wick (%s)" % (wick.plugin_status("cuda") or "none"))


@gpu
def test_graph_replays_with_new_inputs():
    seed = 1234
    rng = np.random.default_rng(seed)
    print("seed", seed)
    wv = rng.standard_normal(1000).astype(np.float32)
    x = wick.zeros((1000,), dtype="f32", device=DEV)
    w = wick.tensor(wv, device=DEV)
    g = wick.Graph(DEV)
    assert not g.recorded
    with g:
        y = x * w + x
        s = y.sum()
    assert g.recorded and g.device == DEV
    for _ in range(3):
        xv = rng.standard_normal(1000).astype(np.float32)
        x.write(xv)
        g.launch()
        np.testing.assert_allclose(y.numpy(), xv * wv + xv, rtol=1e-6, atol=1e-6)
        np.testing.assert_allclose(s.item(), float(np.sum(xv * wv + xv, dtype=np.float64)), rtol=1e-4, atol=1e-3)
    g.free()
    assert not g.recorded


@gpu
def test_graph_keeps_what_it_made():
    x = wick.ones((4096,), dtype="f32", device=DEV)
    g = wick.Graph(DEV)
    with g:
        y = x + 1.0
    ref = weakref.ref(y)
    del y
    gc.collect()
    assert ref() is not None          # the graph writes into it on every replay
    others = [wick.full((4096,), 9.0, dtype="f32", device=DEV) for _ in range(8)]   # the cache's blocks go elsewhere
    g.launch()
    np.testing.assert_array_equal(ref().numpy(), np.full(4096, 2.0, np.float32))
    for o in others:
        np.testing.assert_array_equal(o.numpy(), np.full(4096, 9.0, np.float32))
    g.free()
    gc.collect()
    assert ref() is None


@gpu
def test_graph_misuse_refused():
    x = wick.ones((16,), dtype="f32", device=DEV)
    g = wick.Graph(DEV)
    with pytest.raises(RuntimeError, match="nothing recorded"):
        g.launch()
    with pytest.raises(ValueError, match="records a graph"):
        with g:
            y = x * 2.0
            y.numpy()                 # a host read inside a recording is refused
    assert not g.recorded             # the failed recording was dropped
    g2 = wick.Graph(DEV)
    with g2:
        with pytest.raises(RuntimeError, match="another graph"):
            with wick.Graph(DEV):
                pass
        z = x * 3.0
    g2.launch()
    np.testing.assert_array_equal(z.numpy(), np.full(16, 3.0, np.float32))
    with pytest.raises(RuntimeError, match="already recorded"):
        with g2:
            pass
