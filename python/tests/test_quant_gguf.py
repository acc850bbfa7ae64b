# test_quant_gguf.py — wick's GGUF block formats against the `gguf` package
# (PyPI), live, on fresh random data: dequantize bit for bit for every type
# the package dequantizes (all but q8_1 and q8_k), quantize byte for byte
# for the types it quantizes (q4_0, q4_1, q5_0, q5_1, q8_0). The committed
# vectors of tests/data/quant_vectors.bin check the same on fixed data
# without the package; this file checks new data each run (the seed is in
# the test's name and printed on failure). Skipped when gguf is missing.
import os

import numpy as np
import pytest

import wick

gguf = pytest.importorskip("gguf")
from gguf import quants  # noqa: E402

T = gguf.GGMLQuantizationType

# block size, bytes per block and where the f16 scale fields sit (ggml-common.h)
LAYOUT = {
    "q4_0": (32, 18, [0]),
    "q4_1": (32, 20, [0, 2]),
    "q5_0": (32, 22, [0]),
    "q5_1": (32, 24, [0, 2]),
    "q8_0": (32, 34, [0]),
    "q2_K": (256, 84, [80, 82]),
    "q3_K": (256, 110, [108]),
    "q4_K": (256, 144, [0, 2]),
    "q5_K": (256, 176, [0, 2]),
    "q6_K": (256, 210, [208]),
}
GGUF_TYPE = {"q4_0": T.Q4_0, "q4_1": T.Q4_1, "q5_0": T.Q5_0, "q5_1": T.Q5_1, "q8_0": T.Q8_0,
             "q2_K": T.Q2_K, "q3_K": T.Q3_K, "q4_K": T.Q4_K, "q5_K": T.Q5_K, "q6_K": T.Q6_K}
SEED0 = int(os.environ.get("WICK_TEST_SEED", np.random.SeedSequence().entropy % 100000))


def wick_name(q):
    return q.lower()


def random_blocks(rng, q, rows, blocks_per_row):
    """Random bytes; every f16 scale finite, drawn over the whole range
    (zero and subnormals included), so every code meets every scale."""
    qk, size, f16_at = LAYOUT[q]
    raw = rng.integers(0, 256, size=(rows, blocks_per_row, size), dtype=np.uint8)
    for off in f16_at:
        bits = rng.integers(0, 0x7C00, size=(rows, blocks_per_row), dtype=np.uint16)  # finite magnitudes
        bits |= (rng.integers(0, 2, size=bits.shape, dtype=np.uint16) << 15)
        special = rng.random(bits.shape)
        bits[special < 0.03] = 0                      # zero scale
        bits[(special >= 0.03) & (special < 0.06)] &= 0x83FF  # subnormal
        raw[:, :, off] = (bits & 0xFF).astype(np.uint8)
        raw[:, :, off + 1] = (bits >> 8).astype(np.uint8)
    return raw.reshape(rows, blocks_per_row * size), rows, blocks_per_row * qk


@pytest.mark.parametrize("seed", [SEED0, SEED0 + 1])
@pytest.mark.parametrize("q", sorted(LAYOUT))
def test_dequantize_matches_gguf(q, seed):
    rng = np.random.default_rng(seed)
    raw, rows, cols = random_blocks(rng, q, 7, 3)
    want = quants.dequantize(raw, GGUF_TYPE[q]).astype(np.float32).reshape(rows, cols)
    t = wick.frombuffer(raw.tobytes(), wick_name(q), (rows, cols))
    got = wick.dequantize(t).numpy()
    # bit for bit (the same signed zeros too)
    bad = np.nonzero(got.view(np.uint32) != want.view(np.uint32))
    assert bad[0].size == 0, (f"seed {seed}: {q} differs from gguf at {len(bad[0])} values, first "
                              f"[{bad[0][0]}, {bad[1][0]}]: wick {got[bad][0]!r}, gguf {want[bad][0]!r}")


def random_rows(rng, rows, cols):
    kinds = [
        lambda: rng.standard_normal(cols),
        lambda: rng.uniform(-1, 1, cols) * 10.0 ** rng.integers(-6, 6),
        lambda: rng.standard_cauchy(cols),
        lambda: np.abs(rng.standard_normal(cols)),
        lambda: np.zeros(cols),
        lambda: np.full(cols, rng.standard_normal()),
        lambda: np.where(rng.random(cols) < 0.02, rng.standard_normal(cols) * 100, 0.0),
    ]
    return np.stack([kinds[i % len(kinds)]() for i in range(rows)]).astype(np.float32)


@pytest.mark.parametrize("seed", [SEED0, SEED0 + 1])
@pytest.mark.parametrize("q", ["q4_0", "q4_1", "q5_0", "q5_1", "q8_0"])
def test_quantize_matches_gguf(q, seed):
    rng = np.random.default_rng(seed)
    rows = random_rows(rng, 14, 32 * 9)
    want = quants.quantize(rows, GGUF_TYPE[q]).tobytes()
    got = wick.quantize(wick.asarray(rows), wick_name(q)).tobytes()
    assert len(got) == len(want)
    if got != want:
        diff = np.nonzero(np.frombuffer(got, np.uint8) != np.frombuffer(want, np.uint8))[0]
        size = LAYOUT[q][1]
        raise AssertionError(f"seed {seed}: {q} bytes differ from gguf in {diff.size} places, first at block "
                             f"{diff[0] // size} (row {diff[0] // (size * 9)}) byte {diff[0] % size}")
