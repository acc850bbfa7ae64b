# conftest.py — shared helpers of the Python binding tests: numpy
# references for every dtype (bf16/f8e4m3 through ml_dtypes), tolerances
# per dtype, and random inputs drawn by numpy (never by wick).
import os

import numpy as np
import pytest

# The cpu's quantized products take the exact path in these tests (their
# references are sums of the decoded weights), as in the C test runner;
# the library's default is the integer path (docs/cpu-qdot.md).
os.environ.setdefault("WICK_CPU_QDOT", "0")

import wick  # noqa: E402

try:
    import ml_dtypes
except ImportError:  # pragma: no cover
    ml_dtypes = None

FLOATS = ["f32", "f64", "f16", "bf16"]
INTS = ["u8", "u32", "i16", "i32", "i64"]
NP = {"u8": np.uint8, "u32": np.uint32, "i16": np.int16, "i32": np.int32, "i64": np.int64,
      "f16": np.float16, "f32": np.float32, "f64": np.float64}
if ml_dtypes is not None:
    NP["bf16"] = ml_dtypes.bfloat16
    NP["f8e4m3"] = ml_dtypes.float8_e4m3fn
TOL = {"f64": 1e-12, "f32": 2e-6, "f16": 2e-3, "bf16": 1.6e-2, "f8e4m3": 1.3e-1}

needs_ml = pytest.mark.skipif(ml_dtypes is None, reason="ml_dtypes not installed")


def np_dtype(dt):
    if dt not in NP:
        pytest.skip("numpy has no %s without ml_dtypes" % dt)
    return NP[dt]


def rand_np(shape, dt, rng, lo=-2.0, hi=2.0):
    """numpy data of dtype dt (values exact in dt)."""
    if dt in INTS:
        info = np.iinfo(NP[dt])
        return rng.integers(max(info.min, -50), min(info.max, 50) + 1, size=shape).astype(NP[dt])
    return rng.uniform(lo, hi, size=shape).astype(np_dtype(dt))


def ref32(a):
    """a as float64 for computing references."""
    return np.asarray(a).astype(np.float64)


def check(t, ref, dt, tol=None, exact=False):
    """t (a wick tensor) against ref (float64 numpy), within dt's tolerance."""
    assert isinstance(t, wick.Tensor)
    got = np.asarray(t.to("f64").numpy()) if t.dtype not in ("u8", "u32", "i16", "i32", "i64") else t.numpy()
    ref = np.asarray(ref)
    assert got.shape == ref.shape, (got.shape, ref.shape)
    if exact or dt in INTS:
        np.testing.assert_array_equal(got, ref)
    else:
        r = TOL[dt] if tol is None else tol
        np.testing.assert_allclose(got, ref.astype(np.float64), rtol=r, atol=r, equal_nan=True)


@pytest.fixture
def rng():
    return np.random.default_rng(1234)
