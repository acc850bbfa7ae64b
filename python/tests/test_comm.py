# test_comm.py — collectives from Python (wick.Comm, wick.comm_init_all):
# the cpu communicator's ranks as Python threads (the collectives let the
# GIL go), all_reduce / all_gather / broadcast / all_reduce_add_rms_norm
# against numpy, and a model
# split over 2 and 4 ranks (wick.load_model(..., comm=c)) against the whole
# model: logits within 1e-5, every rank's identical, the same greedy text;
# a split that does not divide is refused; errors; a rank that aborts
# (Comm.abort) makes the others' waiting collectives raise at once.
import threading
import time

import numpy as np
import pytest

import wick

import tiny_llm as T


def run_ranks(n, fn):
    """fn(comm) on n threads, one per rank of a cpu communicator; their results in rank order."""
    comms = wick.comm_init_all(["cpu"] * n)
    out, errs = [None] * n, [None] * n

    def body(i):
        try:
            out[i] = fn(comms[i])
        except Exception as e:  # noqa: BLE001 - reported below
            errs[i] = e

    th = [threading.Thread(target=body, args=(i,)) for i in range(n)]
    for t in th:
        t.start()
    for t in th:
        t.join()
    for c in comms:
        c.close()
    for e in errs:
        if e is not None:
            raise e
    return out


@pytest.mark.parametrize("n", [1, 2, 3, 4])
def test_collectives_against_numpy(n):
    rng = np.random.default_rng(n)
    xs = [rng.integers(-50, 50, size=(5, 7)).astype(np.float32) for _ in range(n)]

    def fn(c):
        assert c.size == n and c.device == "cpu" and repr(c).startswith("Comm(rank %d of %d" % (c.rank, n))
        r = c.rank
        s = wick.asarray(xs[r].copy())
        assert c.all_reduce(s) is s
        g = c.all_gather(wick.asarray(xs[r]), dim=1)
        b = wick.asarray(xs[r].copy())
        c.broadcast(b, root=n - 1)
        return s.numpy(), g.numpy(), b.numpy()

    for s, g, b in run_ranks(n, fn):
        np.testing.assert_array_equal(s, np.sum(xs, axis=0))
        np.testing.assert_array_equal(g, np.concatenate(xs, axis=1))
        np.testing.assert_array_equal(b, xs[n - 1])


@pytest.mark.parametrize("n", [2, 3])
def test_abort_ends_the_others_waits(n, monkeypatch):
    # a long timeout: the waits must end by the abort, not by giving up
    monkeypatch.setenv("WICK_COMM_TIMEOUT", "120")

    def fn(c):
        x = wick.asarray(np.ones(4, dtype=np.float32))
        c.all_reduce(x)
        if c.rank == n - 1:
            c.abort()   # this rank failed: it makes no more calls
            return "aborted", c.aborted
        with pytest.raises(Exception, match="aborted"):
            c.all_reduce(x)
        with pytest.raises(Exception, match="aborted"):
            c.all_gather(x)
        return "raised", c.aborted

    t0 = time.monotonic()
    out = run_ranks(n, fn)
    assert time.monotonic() - t0 < 60
    assert out == [("raised", True)] * (n - 1) + [("aborted", True)]


@pytest.mark.parametrize("n", [1, 3])
@pytest.mark.parametrize("gemma", [False, True])
def test_all_reduce_add_rms_norm(n, gemma):
    rng = np.random.default_rng(10 + n)
    xs = [rng.standard_normal((4, 48)).astype(np.float32) for _ in range(n)]
    res = rng.standard_normal((4, 48)).astype(np.float32)
    w = rng.standard_normal(48).astype(np.float32)

    def fn(c):
        x = wick.asarray(xs[c.rank].copy())
        h, s = c.all_reduce_add_rms_norm(x, wick.asarray(res), wick.asarray(w), eps=1e-5, gemma=gemma)
        return x.numpy(), h.numpy(), s.numpy()

    x64 = np.sum(np.array(xs, np.float64), axis=0)
    s64 = x64 + res
    h64 = s64 / np.sqrt((s64 * s64).mean(axis=1, keepdims=True) + 1e-5) * ((1 + w) if gemma else w)
    outs = run_ranks(n, fn)
    for x, h, s in outs:
        np.testing.assert_allclose(x, x64, rtol=1e-5, atol=1e-5)
        np.testing.assert_allclose(s, s64, rtol=1e-5, atol=1e-5)
        np.testing.assert_allclose(h, h64, rtol=1e-4, atol=1e-4)
        np.testing.assert_array_equal(h, outs[0][1])
    with pytest.raises(ValueError, match="one shape"):
        run_ranks(1, lambda c: c.all_reduce_add_rms_norm(wick.ones((2, 3)), wick.ones((2, 4))))


def test_comm_errors():
    assert wick.comm_available("cpu")
    (c,) = wick.comm_init_all(["cpu"])
    with pytest.raises(TypeError):
        c.all_reduce(np.zeros(3))
    with pytest.raises(TypeError):
        c.all_reduce(wick.ones((3,), dtype="u8"))      # u8 does not sum
    with pytest.raises(ValueError):
        c.broadcast(wick.ones((3,)), root=1)           # a root outside the ranks
    c.close()
    with pytest.raises(ValueError):
        c.all_reduce(wick.ones((3,)))                  # closed
    with pytest.raises(Exception):
        wick.comm_unique_id("cpu")                     # the cpu's ranks are threads of one process
    with pytest.raises(ValueError):
        wick.comm_init_all([])
    with pytest.raises(TypeError):
        wick.load_model("x.gguf", comm="not a comm")


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    path = str(tmp_path_factory.mktemp("tp") / "tiny.gguf")
    T.write_model(path, 3)
    return path


@pytest.mark.parametrize("n", [2, 4])
def test_model_split_over_ranks(tiny, n):
    ids = [T.BOS] + [T.token_id(ch) for ch in "hello.world"]
    whole = wick.load_model(tiny)
    ref = whole.logits(ids, all_logits=True).numpy()
    ref_text = "".join(whole.generate(ids, max_tokens=12, temperature=0, ignore_eos=True))
    whole.close()

    def fn(c):
        m = wick.load_model(tiny, comm=c)
        assert m.info["tp_size"] == n and m.info["tp_rank"] == c.rank
        lg = m.logits(ids, all_logits=True).numpy()
        text = "".join(m.generate(ids, max_tokens=12, temperature=0, ignore_eos=True))
        m.close()
        return lg, text

    res = run_ranks(n, fn)
    for lg, text in res:
        assert np.abs(lg - ref).max() <= 1e-5 * np.abs(ref).max()
        np.testing.assert_array_equal(lg, res[0][0])    # every rank the same bits
        assert text == ref_text


def test_model_split_refused(tiny):
    def fn(c):
        with pytest.raises(ValueError, match="query heads"):
            wick.load_model(tiny, comm=c)                # 4 query heads over 3 ranks
        return True

    assert all(run_ranks(3, fn))
