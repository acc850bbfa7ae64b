#!/usr/bin/env python3
"""gen_quant_vectors.py — writes tests/data/quant_vectors.bin, the reference
vectors of wick's block-quantized ops (tests/test_quant_ops.c loads it).
Nothing here shares code with wick.

Sources of truth:
  * quantize: llama.cpp's own reference quantizers, quantize_row_<type>_ref
    of ggml-quants.c (what writes a GGUF file without an importance
    matrix), called through ctypes in the libggml-base shared library that
    PyPI's llama-cpp-python builds and ships (or any libggml-base given
    with --ggml), for the twelve q types and iq4_nl, iq4_xs; and the gguf package's quantize for
    q4_0, q4_1, q5_0, q5_1, q8_0 (the types it quantizes).
  * dequantize: the gguf package's dequantize for every type it takes (all
    but q8_1 and q8_k; the nine IQ types included), on random blocks; q8_1 and q8_k from their
    definition in ggml-common.h (value = d * q, d an f16 for q8_1 and an
    f32 for q8_k), cross-checked against ggml's dequantize_row_q8_K. ggml's
    dequantize_row_* are cross-checked against gguf for the other types.

The input rows of the quantize vectors are random f32 rows from fixed seeds:
normal, uniform, heavy-tailed, one-signed, sub-blocks of very different
scales, zero rows, constant rows, single spikes, zero sub-blocks, grid ties,
tiny (down to subnormal) and huge (up to 1e38) magnitudes. The random
blocks of the dequantize vectors have random quants and scale bytes (every
code occurs) and their f16/f32 scales drawn over the whole finite range
(zero, subnormals and the largest values included; no Inf or NaN).

File format (little-endian): "WKQVEC01", u32 section count, then per
section: char type[8], char kind[8] (NUL-padded), u32 rows, u32 cols,
u64 nbytes, nbytes of data. Sections:
  type "txt"  kind "meta"       provenance (versions), text
  type "f32"  kind "rows"       the quantize inputs, [rows, cols] f32
  type <q>    kind "q_ggml"     llama.cpp's quantization of those rows
  type <q>    kind "q_gguf"     the gguf package's (q4_0 .. q8_0 only)
  type <q>    kind "blocks"     random blocks, [rows, cols] of type q
  type <q>    kind "deq"        their values, f32 (gguf, or the definition)

Usage: python3 tools/gen_quant_vectors.py [--ggml PATH/libggml-base.so]
           [--out tests/data/quant_vectors.bin]
Needs numpy, gguf (0.19) and llama-cpp-python (or --ggml).
"""
import argparse
import ctypes
import glob
import os
import struct
import sys

import numpy as np
import gguf
from gguf import GGMLQuantizationType as GT

# wick name -> (gguf/ggml type, block elements, block bytes, gguf quantizes, gguf dequantizes)
TYPES = [
    ("q4_0", GT.Q4_0, 32, 18, True, True),
    ("q4_1", GT.Q4_1, 32, 20, True, True),
    ("q5_0", GT.Q5_0, 32, 22, True, True),
    ("q5_1", GT.Q5_1, 32, 24, True, True),
    ("q8_0", GT.Q8_0, 32, 34, True, True),
    ("q8_1", GT.Q8_1, 32, 36, False, False),
    ("q2_k", GT.Q2_K, 256, 84, False, True),
    ("q3_k", GT.Q3_K, 256, 110, False, True),
    ("q4_k", GT.Q4_K, 256, 144, False, True),
    ("q5_k", GT.Q5_K, 256, 176, False, True),
    ("q6_k", GT.Q6_K, 256, 210, False, True),
    ("q8_k", GT.Q8_K, 256, 292, False, False),
    # the IQ types: gguf dequantizes all nine; llama.cpp's reference
    # quantizer without an importance matrix exists for iq4_nl and iq4_xs
    ("iq4_nl", GT.IQ4_NL, 32, 18, False, True),
    ("iq4_xs", GT.IQ4_XS, 256, 136, False, True),
    ("iq3_xxs", GT.IQ3_XXS, 256, 98, False, True),
    ("iq3_s", GT.IQ3_S, 256, 110, False, True),
    ("iq2_xxs", GT.IQ2_XXS, 256, 66, False, True),
    ("iq2_xs", GT.IQ2_XS, 256, 74, False, True),
    ("iq2_s", GT.IQ2_S, 256, 82, False, True),
    ("iq1_s", GT.IQ1_S, 256, 50, False, True),
    ("iq1_m", GT.IQ1_M, 256, 56, False, True),
]
# the types whose llama.cpp reference quantizer wick matches (quantize_row_<type>_ref)
GGML_QUANTIZES = {"q4_0", "q4_1", "q5_0", "q5_1", "q8_0", "q8_1", "q2_k", "q3_k", "q4_k", "q5_k", "q6_k", "q8_k",
                  "iq4_nl", "iq4_xs"}
# byte offsets of the f16 scale fields (d, dmin, m, s) of each block; q8_k's d is an f32 at 0
F16_FIELDS = {
    "q4_0": [0], "q4_1": [0, 2], "q5_0": [0], "q5_1": [0, 2], "q8_0": [0], "q8_1": [0, 2],
    "q2_k": [80, 82], "q3_k": [108], "q4_k": [0, 2], "q5_k": [0, 2], "q6_k": [208], "q8_k": [],
    "iq4_nl": [0], "iq4_xs": [0], "iq3_xxs": [0], "iq3_s": [0], "iq2_xxs": [0], "iq2_xs": [0], "iq2_s": [0],
    "iq1_s": [0], "iq1_m": [],   # iq1_m's d is spread over the top nibbles of its scale words (random_blocks)
}


def find_ggml(given):
    if given:
        return given
    try:
        import llama_cpp
        d = os.path.dirname(llama_cpp.__file__)
    except ImportError:
        sys.exit("gen_quant_vectors: llama-cpp-python is not installed; pass --ggml PATH/libggml-base.so")
    for pat in ("lib/libggml-base.so*", "lib*/libggml-base.so*", "**/libggml-base.so*"):
        hits = sorted(glob.glob(os.path.join(d, pat), recursive=True))
        if hits:
            return hits[0]
    sys.exit("gen_quant_vectors: no libggml-base.so inside %s" % d)


def load_ggml(path):
    lib = ctypes.CDLL(path, mode=ctypes.RTLD_GLOBAL)
    fns = {}
    for name, *_ in TYPES:
        ggml_name = name.replace("_k", "_K")
        if name in GGML_QUANTIZES:
            f = getattr(lib, "quantize_row_%s_ref" % ggml_name)
            f.restype = None
            f.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int64]
            fns["q_" + name] = f
        if name != "q8_1":  # ggml has no dequantize_row_q8_1
            g = getattr(lib, "dequantize_row_%s" % ggml_name)
            g.restype = None
            g.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int64]
            fns["d_" + name] = g
    return fns


def ggml_quantize(fns, name, rows, bb, B):
    rows = np.ascontiguousarray(rows, dtype=np.float32)
    n, cols = rows.shape
    out = np.zeros((n, cols // B * bb), dtype=np.uint8)   # zeroed: q8_k leaves bsums of a zero block alone
    for r in range(n):
        fns["q_" + name](rows[r].ctypes.data, out[r].ctypes.data, cols)
    return out


def ggml_dequantize(fns, name, blocks, cols):
    n = blocks.shape[0]
    out = np.zeros((n, cols), dtype=np.float32)
    for r in range(n):
        b = np.ascontiguousarray(blocks[r])
        fns["d_" + name](b.ctypes.data, out[r].ctypes.data, cols)
    return out


# ---------------------------------------------------------------- inputs


def quant_rows(cols=512):
    rng = np.random.default_rng(20261125)
    R = []
    f = lambda a: R.append(np.asarray(a, dtype=np.float32))
    for _ in range(12):
        f(rng.standard_normal(cols))
    for _ in range(4):
        f(rng.uniform(-1, 1, cols))
    for _ in range(4):   # sub-blocks of 16 with scales from 1e-3 to 1e3
        f(rng.standard_normal(cols) * np.repeat(10.0 ** rng.uniform(-3, 3, cols // 16), 16))
    for _ in range(3):
        f(rng.standard_t(2, cols))
    f(np.abs(rng.standard_normal(cols)) + 0.5)
    f(np.abs(rng.standard_normal(cols)) * 3 + 100)
    f(-np.abs(rng.standard_normal(cols)) - 0.25)
    f(-np.abs(rng.standard_normal(cols)) * 2)
    f(np.zeros(cols))
    f(np.full(cols, 1.0))
    f(np.full(cols, -3.5))
    f(np.full(cols, 1e-3))
    spike = np.zeros(cols); spike[37] = 1000.0; f(spike)
    spike = rng.standard_normal(cols) * 1e-3; spike[300] = -50.0; f(spike)
    z = rng.standard_normal(cols); z[:16] = 0; z[64:96] = 0; z[256:512:2] = 0; f(z)
    f(rng.integers(-8, 9, cols) * 0.5)                          # ties on the grid
    f(rng.integers(-16, 17, cols) * 0.25)
    f(rng.choice([-1.0, 1.0], cols) * (rng.uniform(size=cols) < 0.1))   # sparse +-1
    for s in (1e-20, 1e-30, 1e-37, 1e-39):                      # tiny, down to subnormal f32
        f(rng.standard_normal(cols) * s)
    for s in (1e4, 1e5, 1e6, 1e30, 1e37):                       # huge: f16 scales overflow
        f(rng.standard_normal(cols) * s)
    f(np.linspace(-1, 1, cols))
    f(np.arange(cols) % 17 - 8.0)
    return np.stack(R).astype(np.float32)


def f16_scales(rng, n):
    """n finite f16 bit patterns over the whole range: random exponents
    (subnormals, the largest values), zeros, both signs."""
    bits = rng.integers(0, 1 << 16, n).astype(np.uint16)
    exp = (bits >> 10) & 0x1F
    bits = np.where(exp == 0x1F, bits & np.uint16(0x83FF) | np.uint16(0x7800), bits)  # no Inf/NaN: exponent 30
    special = np.array([0x0000, 0x8000, 0x0001, 0x03FF, 0x0400, 0x7BFF, 0xFBFF, 0x3C00, 0xBC00], dtype=np.uint16)
    k = min(len(special), n)
    bits[:k] = special[:k]
    return bits


def random_blocks(rng, name, B, bb, rows, cols):
    nblk = rows * cols // B
    b = rng.integers(0, 256, (nblk, bb)).astype(np.uint8)
    if name == "q8_k":
        # f32 d over a wide finite range, a few zeros; random quants and bsums
        e = rng.integers(-60, 40, nblk).astype(np.float64)
        d = (rng.uniform(-1, 1, nblk) * 2.0 ** e).astype(np.float32)
        d[:4] = [0.0, -0.0, 1.0, np.float32(3.4e38) / 127]
        b[:, 0:4] = d.view(np.uint8).reshape(nblk, 4)
    elif name == "iq1_m":
        # the f16 d is the top nibble of each of the four scale words
        # (bytes 48..55): write a finite d there, keep the 3-bit scales random
        s = f16_scales(rng, nblk)
        w = b[:, 48:56].copy().view(np.uint16).reshape(nblk, 4)
        for i in range(4):
            w[:, i] = (w[:, i] & np.uint16(0x0FFF)) | (((s >> np.uint16(4 * i)) & np.uint16(0xF)) << np.uint16(12))
        b[:, 48:56] = w.view(np.uint8).reshape(nblk, 8)
    else:
        offs = F16_FIELDS[name]
        # the first blocks of each field take the special values in turn;
        # a few blocks have every quant byte = its index (codes in order)
        for i, o in enumerate(offs):
            s = f16_scales(rng, nblk)
            s = np.roll(s, i * 3)
            b[:, o:o + 2] = s.view(np.uint8).reshape(nblk, 2)
        for k in range(min(4, nblk)):
            mask = np.ones(bb, dtype=bool)
            for o in offs:
                mask[o:o + 2] = False
            b[nblk - 1 - k, mask] = (np.arange(mask.sum()) * (k + 1) + k) & 0xFF
    return b.reshape(rows, cols // B * bb)


def deq_definition(name, blocks, B, bb):
    """q8_1 and q8_k from ggml-common.h: value = d * q"""
    b = blocks.reshape(-1, bb)
    if name == "q8_1":
        d = b[:, 0:2].copy().view(np.float16).astype(np.float32)
        q = b[:, 4:36].view(np.int8).astype(np.float32)
    else:
        d = b[:, 0:4].copy().view(np.float32)
        q = b[:, 4:260].view(np.int8).astype(np.float32)
    return (d * q).astype(np.float32)


def same_bits(a, b):
    a = np.asarray(a, np.float32).view(np.uint32)
    b = np.asarray(b, np.float32).view(np.uint32)
    return a.shape == b.shape and bool(np.all(a == b))


# ---------------------------------------------------------------- main


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--ggml", help="path of libggml-base.so (default: the one llama-cpp-python ships)")
    ap.add_argument("--desc", help="what the --ggml library is (recorded in the file's provenance)")
    ap.add_argument("--out", default="tests/data/quant_vectors.bin")
    args = ap.parse_args()
    path = find_ggml(args.ggml)
    fns = load_ggml(path)
    try:
        import llama_cpp
        lcp = "llama-cpp-python %s" % llama_cpp.__version__
    except ImportError:
        lcp = "ggml library given with --ggml"
    if args.ggml:
        lcp = args.desc or "ggml library given with --ggml"
    meta = "generated by tools/gen_quant_vectors.py; quantize reference: %s (%s); gguf %s; numpy %s" % (
        lcp, os.path.basename(path), getattr(gguf, "__version__", None) or _gguf_version(), np.__version__)
    sections = [("txt", "meta", 0, 0, meta.encode())]
    rows = quant_rows()
    sections.append(("f32", "rows", rows.shape[0], rows.shape[1], rows.tobytes()))
    report = []
    rng = np.random.default_rng(7)
    for name, gt, B, bb, gq, gd in TYPES:
        if name in GGML_QUANTIZES:
            q = ggml_quantize(fns, name, rows, bb, B)
            sections.append((name, "q_ggml", rows.shape[0], rows.shape[1], q.tobytes()))
        if gq:
            with np.errstate(all="ignore"):
                g = np.asarray(gguf.quants.quantize(rows, gt), dtype=np.uint8)
            sections.append((name, "q_gguf", rows.shape[0], rows.shape[1], g.tobytes()))
            diff = [r for r in range(rows.shape[0]) if not np.array_equal(g[r], q[r])]
            report.append("%s: quantize gguf vs llama.cpp: %s" % (name, "identical" if not diff else
                          "rows differ: %s" % diff))
        r_, c_ = (8, 1024) if B == 32 else (4, 4096)
        blk = random_blocks(rng, name, B, bb, r_, c_)
        if gd:
            with np.errstate(all="ignore"):
                deq = np.asarray(gguf.quants.dequantize(blk, gt), dtype=np.float32).reshape(r_, c_)
            src = "gguf"
        else:
            with np.errstate(all="ignore"):
                deq = deq_definition(name, blk, B, bb).reshape(r_, c_)
            src = "definition"
        if "d_" + name in fns:
            with np.errstate(all="ignore"):
                dg = ggml_dequantize(fns, name, blk, c_)
            report.append("%s: dequantize %s vs ggml: %s" % (name, src, "identical" if same_bits(dg, deq)
                          else "DIFFER"))
        sections.append((name, "blocks", r_, c_, blk.tobytes()))
        sections.append((name, "deq", r_, c_, deq.tobytes()))
    with open(args.out, "wb") as fh:
        fh.write(b"WKQVEC01")
        fh.write(struct.pack("<I", len(sections)))
        for t, k, r, c, data in sections:
            fh.write(t.encode().ljust(8, b"\0") + k.encode().ljust(8, b"\0"))
            fh.write(struct.pack("<IIQ", r, c, len(data)))
            fh.write(data)
    print(meta)
    print("\n".join(report))
    print("wrote %s (%d bytes, %d sections)" % (args.out, os.path.getsize(args.out), len(sections)))


def _gguf_version():
    try:
        from importlib.metadata import version
        return version("gguf")
    except Exception:
        return "?"


if __name__ == "__main__":
    main()
