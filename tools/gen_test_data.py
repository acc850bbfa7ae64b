#!/usr/bin/env python3
"""gen_test_data.py — writes tests/data/dtype_ref.h, the reference values the
dtype tests compare wick against. Nothing here shares code with wick.

Sources of truth:
  * decoding every f16 / bf16 / f8e4m3 bit pattern: numpy (float16) and
    ml_dtypes (bfloat16, float8_e4m3fn). f16 and bf16 are checked in as a
    64-bit FNV-1a checksum over the f32 bit pattern of every value (the
    tests recompute it from their own decoder and from wick), plus a sample
    of explicit values; f8e4m3 is checked in whole.
  * rounding to f16 / bf16 / f8e4m3 / f32: an exact rational implementation
    below (fractions.Fraction, round half to even, one rounding from the
    exact source value). It is cross-checked here against numpy (f64 and
    f32 -> f16 are single roundings in numpy) and ml_dtypes (f32 ->
    bf16/f8e4m3 for values inside the f8 range). ml_dtypes is NOT used for
    f64 -> bf16/f8e4m3 (it rounds through f32, a double rounding) nor for
    f8e4m3 saturation (it gives NaN where wick's E4M3FN saturates to 448).

Usage: python3 tools/gen_test_data.py > tests/data/dtype_ref.h
"""
import math
import random
import struct
import sys
from fractions import Fraction

import ml_dtypes as md
import numpy as np

# ---------------------------------------------------------------- formats
# (mantissa bits, exponent bias, max finite bits, overflow behaviour)
FMT = {
    "f16": dict(m=10, e=5, bias=15, maxbits=0x7BFF, sat=False, nan=0x7E00, inf=0x7C00),
    "bf16": dict(m=7, e=8, bias=127, maxbits=0x7F7F, sat=False, nan=0x7FC0, inf=0x7F80),
    "f8e4m3": dict(m=3, e=4, bias=7, maxbits=0x7E, sat=True, nan=0x7F, inf=None),
    "f32": dict(m=23, e=8, bias=127, maxbits=0x7F7FFFFF, sat=False, nan=0x7FC00000, inf=0x7F800000),
}


def sign_bit(fmt):
    return 1 << (FMT[fmt]["m"] + FMT[fmt]["e"])


def decode_exact(fmt, bits):
    """Exact Fraction value of a finite, non-negative pattern."""
    f = FMT[fmt]
    m = bits & ((1 << f["m"]) - 1)
    e = bits >> f["m"]
    if e == 0:
        return Fraction(m, 1) * Fraction(2) ** (1 - f["bias"] - f["m"])
    return Fraction((1 << f["m"]) + m) * Fraction(2) ** (e - f["bias"] - f["m"])


def round_exact(fmt, x):
    """Round x (Fraction, float inf/nan allowed) to fmt, half to even, one
    rounding. Returns the bit pattern."""
    f = FMT[fmt]
    if isinstance(x, float):
        if math.isnan(x):
            return f["nan"] | (sign_bit(fmt) if math.copysign(1, x) < 0 else 0)
        if math.isinf(x):
            s = sign_bit(fmt) if x < 0 else 0
            return s | (f["maxbits"] if f["sat"] else f["inf"])
        neg = math.copysign(1, x) < 0
        x = Fraction(x)
    else:
        neg = x < 0
    s = sign_bit(fmt) if neg else 0
    a = abs(x)
    # largest pattern p with value <= a (binary search over monotone patterns)
    lo, hi = 0, f["maxbits"]
    if a >= decode_exact(fmt, f["maxbits"]):
        top = decode_exact(fmt, f["maxbits"])
        if f["sat"]:
            return s | f["maxbits"]
        ulp = top - decode_exact(fmt, f["maxbits"] - 1)
        # values at or above max + ulp/2 overflow (the tie goes to the even "next", Inf)
        return s | (f["inf"] if a >= top + ulp / 2 else f["maxbits"])
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if decode_exact(fmt, mid) <= a:
            lo = mid
        else:
            hi = mid - 1
    p = lo
    v0, v1 = decode_exact(fmt, p), decode_exact(fmt, p + 1)
    half = (v0 + v1) / 2
    if a < half:
        r = p
    elif a > half:
        r = p + 1
    else:
        r = p if p % 2 == 0 else p + 1
    return s | r


def f64_bits(x):
    return struct.unpack("<Q", struct.pack("<d", x))[0]


def f32_exact(x):
    return float(np.float32(x)) == x or math.isnan(x)


def fnv1a(words):
    h = 0xCBF29CE484222325
    for w in words:
        for k in range(4):
            h ^= (w >> (8 * k)) & 0xFF
            h = (h * 0x100000001B3) & 0xFFFFFFFFFFFFFFFF
    return h


def table_words(fmt_np, n):
    vals = np.arange(n, dtype=np.uint16 if n > 256 else np.uint8).view(fmt_np).astype(np.float32)
    words = []
    for v in vals:
        if np.isnan(v):
            words.append(0x7FC00000)        # every NaN counts as one canonical word
        else:
            words.append(int(np.array([v], dtype=np.float32).view(np.uint32)[0]))
    return words


# ---------------------------------------------------------------- cases
def rounding_inputs(rng):
    xs = set()
    for fmt in ("f16", "bf16", "f8e4m3"):
        f = FMT[fmt]
        pats = list(range(0, 8)) + list(range(f["maxbits"] - 8, f["maxbits"]))
        pats += [rng.randrange(0, f["maxbits"]) for _ in range(40)]
        pats += [(e << f["m"]) + d for e in (1, 2) for d in (0, 1)]      # normal/subnormal edge
        for p in pats:
            v0, v1 = decode_exact(fmt, p), decode_exact(fmt, p + 1)
            mid = (v0 + v1) / 2
            for v in (v0, v1, mid):
                fv = float(v)
                xs.add(fv)
                xs.add(-fv)
                # just above / below the midpoint, by one f64 and one f32 ulp
                xs.add(float(np.nextafter(fv, np.inf)))
                xs.add(float(np.nextafter(fv, -np.inf)))
                f32 = np.float32(fv)
                if float(f32) == fv:
                    xs.add(float(np.nextafter(f32, np.float32(np.inf))))
                    xs.add(float(np.nextafter(f32, np.float32(-np.inf))))
            # a value a hair above the midpoint that rounds to the midpoint in
            # f32: only one rounding from f64 gets it right
            fmid = float(mid)
            for eps in (Fraction(1, 2 ** 40), Fraction(-1, 2 ** 40)):
                y = float(mid * (1 + eps))
                if y != fmid and float(np.float32(y)) == fmid:
                    xs.add(y)
    # overflow, saturation, underflow, specials
    xs.update([65504.0, 65519.0, 65519.99, 65520.0, 65536.0, 1e10, -1e10,
               448.0, 449.0, 463.99, 464.0, 465.0, 480.0, 500.0, -500.0, 1e30,
               3.3895313892515355e38, 3.4e38, 1e300, -1e300,
               2.0 ** -24, 2.0 ** -25, 2.0 ** -25 * 1.0000001, 2.0 ** -26, 2.0 ** -133,
               2.0 ** -134, 2.0 ** -10, 2.0 ** -11 * 1.5, 1e-300, 5e-324,
               0.0, -0.0, math.inf, -math.inf, math.nan, 1.0 / 3, 0.1, -0.1, math.pi])
    for _ in range(300):
        xs.add(rng.uniform(-1, 1) * 2.0 ** rng.randint(-30, 20))
    return sorted(xs, key=lambda v: (math.isnan(v), v))


def int_inputs():
    vals = [0, 1, -1, 255, 256, 257, 2047, 2049, 4097, 65504, 65519, 65520, 65536,
            448, 449, 464, 465, 500, -500, 2 ** 24 + 1, 2 ** 24 + 3, 2 ** 31 - 1, -2 ** 31,
            2 ** 53 + 1, 2 ** 62 + 2 ** 38 + 1, 2 ** 62 + 2 ** 38, 2 ** 62 + 2 ** 54 + 1,
            2 ** 62 + 2 ** 54, -(2 ** 62 + 2 ** 54 + 1), 2 ** 63 - 1, -2 ** 63,
            0x0123456789ABCDEF, -0x0123456789ABCDEF]
    return vals


def main():
    np.seterr(all="ignore")
    rng = random.Random(20240601)
    out = []
    w = out.append
    w("/* dtype_ref.h — reference values for wick's dtype tests, generated by")
    w(" * tools/gen_test_data.py from numpy %s / ml_dtypes %s and an exact" % (np.__version__, md.__version__))
    w(" * rational rounding (see the script). Do not edit by hand. */")
    w("#ifndef WICK_TEST_DTYPE_REF_H")
    w("#define WICK_TEST_DTYPE_REF_H")
    w("#include <stdint.h>")
    w("")
    f16w = table_words(np.float16, 65536)
    bf16w = table_words(md.bfloat16, 65536)
    w("/* FNV-1a 64 over the little-endian f32 bit pattern of the value of every")
    w(" * pattern 0..65535 (every NaN hashed as 0x7FC00000). */")
    w("static const uint64_t ref_f16_table_fnv = 0x%016XULL;" % fnv1a(f16w))
    w("static const uint64_t ref_bf16_table_fnv = 0x%016XULL;" % fnv1a(bf16w))
    w("")
    w("/* explicit samples: pattern, f32 bits of its value */")
    w("static const uint32_t ref_f16_samples[][2] = {")
    picks = sorted(set(list(range(0, 65536, 251)) + [0x0001, 0x03FF, 0x0400, 0x3C00, 0x7BFF, 0x7C00, 0x8001, 0xFBFF, 0xFC00]))
    items = ["{0x%04X, 0x%08X}" % (p, f16w[p]) for p in picks]
    for i in range(0, len(items), 6):
        w("    " + ", ".join(items[i:i + 6]) + ",")
    w("};")
    w("static const uint32_t ref_bf16_samples[][2] = {")
    picks = sorted(set(list(range(0, 65536, 251)) + [0x0001, 0x007F, 0x0080, 0x3F80, 0x7F7F, 0x7F80, 0x8001, 0xFF7F, 0xFF80]))
    items = ["{0x%04X, 0x%08X}" % (p, bf16w[p]) for p in picks]
    for i in range(0, len(items), 6):
        w("    " + ", ".join(items[i:i + 6]) + ",")
    w("};")
    w("")
    f8 = np.arange(256, dtype=np.uint8).view(md.float8_e4m3fn).astype(np.float64)
    w("/* the value of every f8e4m3 pattern as f64 bits (NaN as 0x7FF8000000000000) */")
    w("static const uint64_t ref_f8e4m3_values[256] = {")
    row = []
    for b in range(256):
        v = f8[b]
        row.append("0x7FF8000000000000ULL" if np.isnan(v) else "0x%016XULL" % f64_bits(float(v)))
    for i in range(0, 256, 4):
        w("    " + ", ".join(row[i:i + 4]) + ",")
    w("};")
    w("")

    # rounding of f64 / f32 sources
    xs = rounding_inputs(rng)
    checked = 0
    w("/* rounding of a float source: f64 bits, 1 if exact in f32, then the")
    w(" * expected f16, bf16, f8e4m3 and f32 patterns (one rounding from the")
    w(" * exact value; NaN: the canonical positive/negative quiet NaN). */")
    w("typedef struct ref_round_case { uint64_t src; int f32_exact; uint16_t f16, bf16; uint8_t f8; uint32_t f32; } ref_round_case;")
    w("static const ref_round_case ref_round_cases[] = {")
    for x in xs:
        h = round_exact("f16", x)
        b = round_exact("bf16", x)
        e = round_exact("f8e4m3", x)
        s = round_exact("f32", x)
        # cross-checks with numpy / ml_dtypes
        if not math.isnan(x):
            assert h == int(np.array([x]).astype(np.float16).view(np.uint16)[0]), x
            assert s == int(np.array([x]).astype(np.float32).view(np.uint32)[0]), x
            if f32_exact(x):
                x32 = np.array([x], dtype=np.float32)
                assert h == int(x32.astype(np.float16).view(np.uint16)[0]), x
                assert b == int(x32.astype(md.bfloat16).view(np.uint16)[0]), x
                if abs(x) <= 448:
                    assert e == int(x32.astype(md.float8_e4m3fn).view(np.uint8)[0]), x
                checked += 1
        w("    {0x%016XULL, %d, 0x%04X, 0x%04X, 0x%02X, 0x%08XU}," % (
            f64_bits(x), 1 if f32_exact(x) else 0, h, b, e, s))
    w("};")
    w("")
    w("/* rounding of an i64 source to f16, bf16, f8e4m3, f32 (one rounding) */")
    w("typedef struct ref_int_case { int64_t src; uint16_t f16, bf16; uint8_t f8; uint32_t f32; uint64_t f64; } ref_int_case;")
    w("static const ref_int_case ref_int_cases[] = {")
    for v in int_inputs():
        fr = Fraction(v)
        d = float(fr)     # Python int -> float is correctly rounded
        w("    {%s, 0x%04X, 0x%04X, 0x%02X, 0x%08XU, 0x%016XULL}," % (
            ("%dLL" % v) if v != -2 ** 63 else "(-9223372036854775807LL - 1)",
            round_exact("f16", fr), round_exact("bf16", fr), round_exact("f8e4m3", fr),
            round_exact("f32", fr), f64_bits(d)))
    w("};")
    w("")
    w("#endif")
    sys.stdout.write("\n".join(out) + "\n")
    sys.stderr.write("%d float cases (%d cross-checked in f32), %d int cases\n" % (len(xs), checked, len(int_inputs())))


if __name__ == "__main__":
    main()
