#!/usr/bin/env python3
"""gen_random_golden.py - golden vectors for wick's random numbers.

An implementation of docs/random.md in pure Python (integers and
fractions, no numpy) that shares no code with wick. It first checks its
Philox4x32-10 against Random123's published known-answer vectors, then
writes tests/data/random_golden.h: for a few (seed, offset, n, dtype,
parameters) cases, the values every backend must produce.

  uniform: exact bit patterns in the dtype (every backend matches them
           bit for bit; the fma and every rounding are done exactly here)
  normal:  doubles with a tolerance (logf/cosf/sinf differ by an ulp or so
           between platforms; the tolerance also covers the final rounding
           to a narrow dtype)

Regenerate:  python3 tools/gen_random_golden.py > tests/data/random_golden.h
Check only:  python3 tools/gen_random_golden.py --check
"""
import math
import sys
from fractions import Fraction

MASK32 = 0xFFFFFFFF
MASK64 = 0xFFFFFFFFFFFFFFFF

# ---------------------------------------------------------------- Philox


def philox4x32_10(ctr, key):
    """Random123's philox4x32 with 10 rounds; ctr: 4 words, key: 2 words."""
    m0, m1 = 0xD2511F53, 0xCD9E8D57
    w0, w1 = 0x9E3779B9, 0xBB67AE85
    x = list(ctr)
    k = list(key)
    for rnd in range(10):
        if rnd:
            k = [(k[0] + w0) & MASK32, (k[1] + w1) & MASK32]
        prod0 = m0 * x[0]
        prod1 = m1 * x[2]
        x = [
            ((prod1 >> 32) ^ x[1] ^ k[0]) & MASK32,
            prod1 & MASK32,
            ((prod0 >> 32) ^ x[3] ^ k[1]) & MASK32,
            prod0 & MASK32,
        ]
    return x


# Random123 tests/kat_vectors, the "philox4x32 10" lines:
# counter (4 words), key (2 words), expected (4 words).
KAT = [
    ([0x00000000, 0x00000000, 0x00000000, 0x00000000], [0x00000000, 0x00000000],
     [0x6627E8D5, 0xE169C58D, 0xBC57AC4C, 0x9B00DBD8]),
    ([0xFFFFFFFF, 0xFFFFFFFF, 0xFFFFFFFF, 0xFFFFFFFF], [0xFFFFFFFF, 0xFFFFFFFF],
     [0x408F276D, 0x41C83B0E, 0xA20BC7C6, 0x6D5451FD]),
    ([0x243F6A88, 0x85A308D3, 0x13198A2E, 0x03707344], [0xA4093822, 0x299F31D0],
     [0xD16CFE09, 0x94FDCCEB, 0x5001E420, 0x24126EA1]),
]


def check_kat():
    for ctr, key, want in KAT:
        got = philox4x32_10(ctr, key)
        if got != want:
            raise SystemExit("philox4x32-10 known-answer test failed: ctr %s key %s: got %s want %s" % (
                " ".join("%08x" % v for v in ctr), " ".join("%08x" % v for v in key),
                " ".join("%08x" % v for v in got), " ".join("%08x" % v for v in want)))


def block(seed, j):
    j &= MASK64
    return philox4x32_10([j & MASK32, j >> 32, 0, 0], [seed & MASK32, (seed >> 32) & MASK32])


# ------------------------------------------------------ exact float rounding

# (precision in bits with the implicit one, minimum normal exponent,
#  exponent bias, bits of exponent field, saturate instead of Inf)
FORMATS = {
    "f64": (53, -1022, 1023, 11, False),
    "f32": (24, -126, 127, 8, False),
    "bf16": (8, -126, 127, 8, False),
    "f16": (11, -14, 15, 5, False),
    "f8e4m3": (4, -6, 7, 4, True),
}
MAXFINITE = {
    "f64": Fraction((2 ** 53 - 1) * 2 ** 971),
    "f32": Fraction((2 ** 24 - 1) * 2 ** 104),
    "bf16": Fraction((2 ** 8 - 1) * 2 ** 120),
    "f16": Fraction(65504),
    "f8e4m3": Fraction(448),
}


def floor_log2(x):
    """floor(log2(x)) of a positive Fraction, exactly."""
    e = x.numerator.bit_length() - x.denominator.bit_length()
    if Fraction(2) ** e > x:
        e -= 1
    elif Fraction(2) ** (e + 1) <= x:
        e += 1
    return e


def round_to(fmt, x):
    """Round a Fraction to the format, to nearest even. Returns a Fraction,
    or the string 'inf' / '-inf' on overflow (saturating formats clamp)."""
    prec, emin, _, _, sat = FORMATS[fmt]
    if x == 0:
        return Fraction(0)
    sign = -1 if x < 0 else 1
    a = abs(x)
    e = max(floor_log2(a), emin)
    quantum = Fraction(2) ** (e - prec + 1)
    q = a / quantum
    n = q.numerator // q.denominator
    rem = q - n
    if rem > Fraction(1, 2) or (rem == Fraction(1, 2) and n % 2 == 1):
        n += 1
    r = n * quantum
    if sat and a > MAXFINITE[fmt]:
        r = MAXFINITE[fmt]
    if r > MAXFINITE[fmt]:
        return "inf" if sign > 0 else "-inf"
    return sign * r


def encode(fmt, v, negzero=False):
    """Bits of a value already representable in the format."""
    prec, emin, bias, ebits, _ = FORMATS[fmt]
    mbits = prec - 1
    if v in ("inf", "-inf"):
        s = 1 if v == "-inf" else 0
        return (s << (ebits + mbits)) | (((1 << ebits) - 1) << mbits)
    s = 1 if (v < 0 or (v == 0 and negzero)) else 0
    a = abs(v)
    if a == 0:
        return s << (ebits + mbits)
    e = floor_log2(a)
    if e < emin:
        m = a / Fraction(2) ** (emin - mbits)
        assert m.denominator == 1
        return (s << (ebits + mbits)) | int(m)
    m = a / Fraction(2) ** (e - mbits)
    assert m.denominator == 1
    return (s << (ebits + mbits)) | ((e + bias) << mbits) | (int(m) - (1 << mbits))


def f32(x):
    """Round a double (or Fraction) to f32 (as a Fraction)."""
    r = round_to("f32", Fraction(x))
    assert not isinstance(r, str)
    return r


# --------------------------------------------------------- element values


def uniform_values(dtype, seed, offset, n, lo, hi):
    """Exact bit patterns of a uniform call."""
    out = []
    if dtype == "f64":
        span = Fraction(hi - lo)               # hi - lo in double, as C does
        for i in range(n):
            w = block(seed, offset + i // 2)
            k = 2 * (i % 2)
            x = ((w[k + 1] << 32) | w[k]) >> 11
            u = Fraction(x, 2 ** 53)
            exact = u * span + Fraction(lo)
            v = round_to("f64", exact)                      # fma: one rounding
            out.append(encode("f64", v, negzero=exact < 0))
        return out
    span = f32(hi - lo)
    lo32 = f32(lo)
    for i in range(n):
        w = block(seed, offset + i // 4)[i % 4]
        u = Fraction(w >> 8, 2 ** 24)
        exact = u * span + lo32
        v = round_to("f32", exact)                          # fmaf: one rounding
        if dtype != "f32":
            v = round_to(dtype, v)
        # a result that underflows to zero keeps the sign of the exact sum
        # (the parameters here never make an exact zero from a -0 term)
        out.append(encode(dtype, v, negzero=exact < 0))
    return out


def normal_values(dtype, seed, offset, n, mean, std):
    """Expected values of a normal call (before rounding to the dtype)."""
    out = []
    if dtype == "f64":
        for i in range(n):
            p = i // 2
            w = block(seed, offset + p)
            x1 = ((w[1] << 32) | w[0]) >> 11
            x2 = ((w[3] << 32) | w[2]) >> 11
            u1 = (x1 + 1) / 2.0 ** 53
            u2 = x2 / 2.0 ** 53
            r = math.sqrt(-2.0 * math.log(u1))
            t = 2.0 * math.pi * u2
            z = r * (math.cos(t) if i % 2 == 0 else math.sin(t))
            out.append(z * std + mean)
        return out
    mean32 = float(f32(mean))
    std32 = float(f32(std))
    two_pi32 = 2 * f32(math.pi)
    for i in range(n):
        p = i // 2
        w = block(seed, offset + p // 2)
        k = 2 * (p % 2)
        a, b = w[k], w[k + 1]
        u1 = ((a >> 8) + 1) / 2.0 ** 24
        u2 = Fraction(b >> 8, 2 ** 24)
        t = float(f32(two_pi32 * u2))                      # t in f32
        r = math.sqrt(-2.0 * math.log(u1))
        z = r * (math.cos(t) if i % 2 == 0 else math.sin(t))
        out.append(z * std32 + mean32)
    return out


def blocks_used(dtype, n):
    if n <= 0:
        return 0
    return (n + 1) // 2 if dtype == "f64" else (n + 3) // 4


# ------------------------------------------------------------------ cases

# (name, kind, dtype, seed, offset, n, p0, p1)
CASES = [
    ("uniform_f32_seed0", "uniform", "f32", 0, 0, 10, 0.0, 1.0),
    ("uniform_f32_next", "uniform", "f32", 0, 3, 6, 0.0, 1.0),   # the call after the first
    ("uniform_f32_range", "uniform", "f32", 0x0123456789ABCDEF, 5, 13, -2.5, 3.0),
    ("uniform_f32_hi_offset", "uniform", "f32", 42, 0xFFFFFFFE, 12, -1.0, 1.0),
    ("uniform_f32_wrap", "uniform", "f32", 0xFFFFFFFFFFFFFFFF, 0xFFFFFFFFFFFFFFFF, 8, 100.0, 100.5),
    ("uniform_f64", "uniform", "f64", 42, 3, 9, -1.0, 1.0),
    ("uniform_f64_range", "uniform", "f64", 0xDEADBEEFCAFEF00D, 1 << 40, 7, 1e-3, 1e3),
    ("uniform_bf16", "uniform", "bf16", 7, 2, 17, -3.0, 5.0),
    ("uniform_f16", "uniform", "f16", 2024, 11, 15, 10.0, 20.0),
    ("uniform_f16_small", "uniform", "f16", 5, 0, 9, 0.0, 1e-4),
    ("uniform_f8e4m3", "uniform", "f8e4m3", 99, 1, 11, -4.0, 4.0),
    ("normal_f32", "normal", "f32", 42, 0, 11, 0.0, 1.0),
    ("normal_f32_scaled", "normal", "f32", 0x0123456789ABCDEF, 9, 10, 3.0, 0.5),
    ("normal_f64", "normal", "f64", 1, 7, 9, 1.0, 2.0),
    ("normal_f64_seed0", "normal", "f64", 0, 0, 6, 0.0, 1.0),
    ("normal_bf16", "normal", "bf16", 7, 2, 12, -1.0, 3.0),
    ("normal_f16", "normal", "f16", 2024, 11, 10, 0.0, 1.0),
    ("normal_f8e4m3", "normal", "f8e4m3", 3, 0, 8, 0.0, 2.0),
]

DTYPE_ENUM = {"f32": "WK_F32", "f64": "WK_F64", "bf16": "WK_BF16", "f16": "WK_F16", "f8e4m3": "WK_F8E4M3"}


def tolerance(dtype, std):
    """(rtol, atol) for normal cases: |got - want| <= atol + rtol * |want|."""
    if dtype == "f64":
        return 1e-13, 1e-13 * abs(std)
    prec = FORMATS[dtype][0]
    atol = 2e-6 * abs(std)                 # f32 log/cos/sin differences
    if dtype == "f16":
        atol += 2.0 ** -24                  # subnormal spacing
    if dtype == "f8e4m3":
        atol += 2.0 ** -9
    return 2.0 ** (1 - prec), atol          # one ulp of the dtype


def cdouble(v):
    r = repr(float(v))
    if "e" not in r and "." not in r and "inf" not in r and "nan" not in r:
        r += ".0"
    return r


def render():
    lines = []
    add = lines.append
    add("/* random_golden.h — expected outputs of wick's random numbers")
    add(" * (docs/random.md), computed by tools/gen_random_golden.py, an")
    add(" * implementation in pure Python that shares no code with wick and that")
    add(" * checks its Philox4x32-10 against Random123's known-answer vectors.")
    add(" *")
    add(" * Uniform cases: exact bit patterns in the dtype (f32 as uint32 bits,")
    add(" * f64 as uint64 bits, f16/bf16 as uint16, f8e4m3 as uint8), to match bit")
    add(" * for bit. Normal cases: doubles, to match within |got - want| <=")
    add(" * atol + rtol * |want| (platform logf/cosf/sinf and the rounding to the")
    add(" * dtype). `blocks` is how far the call advances the generator's offset.")
    add(" *")
    add(" * Do not edit; regenerate with")
    add(" *     python3 tools/gen_random_golden.py > tests/data/random_golden.h")
    add(" */")
    add("#ifndef WICK_RANDOM_GOLDEN_H")
    add("#define WICK_RANDOM_GOLDEN_H")
    add("")
    add("#include <stdint.h>")
    add('#include "wick.h"')
    add("")
    add("typedef struct wk_rand_golden {")
    add("    const char *name;")
    add("    int normal;              /* 0: uniform(lo = p0, hi = p1); 1: normal(mean = p0, std = p1) */")
    add("    wk_dtype dtype;")
    add("    uint64_t seed, offset;   /* generator state before the call */")
    add("    double p0, p1;")
    add("    int64_t n;               /* elements */")
    add("    uint64_t blocks;         /* offset advance of the call */")
    add("    const uint64_t *bits;    /* uniform: n bit patterns; NULL for normal */")
    add("    const double *values;    /* normal: n values; NULL for uniform */")
    add("    double rtol, atol;       /* normal: tolerance */")
    add("} wk_rand_golden;")
    add("")
    table = []
    for name, kind, dtype, seed, offset, n, p0, p1 in CASES:
        if kind == "uniform":
            vals = uniform_values(dtype, seed, offset, n, p0, p1)
            width = {"f64": 16, "f32": 8, "bf16": 4, "f16": 4, "f8e4m3": 2}[dtype]
            add("static const uint64_t wk_rand_golden_%s[%d] = {" % (name, n))
            items = ["0x%0*xu" % (width, v) for v in vals]
            per = 4 if width == 16 else 8
            for k in range(0, len(items), per):
                add("    " + ", ".join(items[k:k + per]) + ",")
            add("};")
            table.append("    { \"%s\", 0, %s, 0x%xull, 0x%xull, %s, %s, %d, %d, wk_rand_golden_%s, NULL, 0.0, 0.0 }," % (
                name, DTYPE_ENUM[dtype], seed, offset, cdouble(p0), cdouble(p1), n, blocks_used(dtype, n), name))
        else:
            vals = normal_values(dtype, seed, offset, n, p0, p1)
            rtol, atol = tolerance(dtype, p1)
            add("static const double wk_rand_golden_%s[%d] = {" % (name, n))
            items = ["%.17g" % v for v in vals]
            for k in range(0, len(items), 4):
                add("    " + ", ".join(items[k:k + 4]) + ",")
            add("};")
            table.append("    { \"%s\", 1, %s, 0x%xull, 0x%xull, %s, %s, %d, %d, NULL, wk_rand_golden_%s, %.3g, %.3g }," % (
                name, DTYPE_ENUM[dtype], seed, offset, cdouble(p0), cdouble(p1), n, blocks_used(dtype, n), name,
                rtol, atol))
    add("")
    add("static const wk_rand_golden wk_rand_goldens[] = {")
    lines.extend(table)
    add("};")
    add("#define WK_RAND_GOLDEN_COUNT ((int)(sizeof wk_rand_goldens / sizeof wk_rand_goldens[0]))")
    add("")
    add("#endif /* WICK_RANDOM_GOLDEN_H */")
    return "\n".join(lines) + "\n"


def self_test():
    check_kat()
    # the rounding helpers against cases worked by hand
    assert encode("f32", f32(1.0)) == 0x3F800000
    assert encode("f32", f32(0.1)) == 0x3DCCCCCD
    assert encode("f16", round_to("f16", Fraction(65519))) == 0x7BFF
    assert encode("f16", round_to("f16", Fraction(65520))) == 0x7C00
    assert encode("f16", round_to("f16", Fraction(1, 2 ** 24))) == 0x0001
    assert encode("f16", round_to("f16", Fraction(1, 2 ** 25))) == 0x0000           # tie to even
    assert encode("bf16", round_to("bf16", Fraction(1) + Fraction(1, 256))) == 0x3F80   # tie to even
    assert encode("bf16", round_to("bf16", Fraction(1) + Fraction(3, 256))) == 0x3F82
    assert encode("f8e4m3", round_to("f8e4m3", Fraction(1000))) == 0x7E
    assert encode("f8e4m3", round_to("f8e4m3", Fraction(-1, 512))) == 0x81
    assert encode("f64", round_to("f64", Fraction(1, 3))) == 0x3FD5555555555555


def main():
    self_test()
    if "--check" in sys.argv[1:]:
        print("philox4x32-10 known-answer vectors: ok")
        return
    sys.stdout.write(render())


if __name__ == "__main__":
    main()
