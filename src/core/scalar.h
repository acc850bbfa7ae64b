/* scalar.h — per-element conversions between wick's dtypes, shared by the
 * CPU backend (C) and the GPU kernels (HIP/CUDA device code): one
 * implementation of the rounding rules of docs/semantics.md.
 *
 *  - f16, bf16, f8e4m3 round to nearest even from any source in ONE
 *    rounding: wk_pack_narrow() rounds an exact (sign, 64-bit significand,
 *    power of two) value, so f64 -> f16 and i64 -> bf16 do not go through
 *    f32. f32 -> bf16 / f16 have bit-trick fast paths that agree with it.
 *  - f8e4m3 is OCP E4M3FN: bias 7, 3 mantissa bits, no Inf, 0x7F/0xFF NaN,
 *    max 448; |x| > 448 and +-Inf saturate to +-448; NaN stays NaN.
 *  - float -> integer truncates toward zero, saturates, NaN -> 0.
 *  - integer -> integer wraps (two's complement).
 *
 * Narrow floats are stored as uint16_t (f16, bf16) and uint8_t (f8e4m3).
 */
#ifndef WICK_SCALAR_H
#define WICK_SCALAR_H

#include <stdint.h>

#if defined(__CUDACC__) || defined(__HIPCC__)
#define WK_HD __host__ __device__ __forceinline__
#else
#define WK_HD static inline
#endif

#if defined(__CUDA_ARCH__)
#define WK_CLZ64(x) __clzll((long long)(x))
#else
#define WK_CLZ64(x) __builtin_clzll(x)
#endif

typedef union { float f; uint32_t u; } wk_f32u_;
typedef union { double f; uint64_t u; } wk_f64u_;

WK_HD uint32_t wk_f32_bits(float f) { wk_f32u_ v; v.f = f; return v.u; }
WK_HD float wk_bits_f32(uint32_t u) { wk_f32u_ v; v.u = u; return v.f; }
WK_HD uint64_t wk_f64_bits(double f) { wk_f64u_ v; v.f = f; return v.u; }
WK_HD double wk_bits_f64(uint64_t u) { wk_f64u_ v; v.u = u; return v.f; }

/* ---- narrow formats ---------------------------------------------- */

enum { WK_NARROW_F16 = 0, WK_NARROW_BF16 = 1, WK_NARROW_F8E4M3 = 2 };

/* Round sig * 2^exp2 (sig < 2^64, exact) to the narrow format, to nearest
 * even; return its bits with the sign. Overflow gives Inf (f16, bf16) or
 * saturates to 448 (f8e4m3). */
WK_HD uint32_t wk_pack_narrow(int fmt, uint32_t sign, uint64_t sig, int exp2)
{
    const int M = fmt == WK_NARROW_F16 ? 10 : fmt == WK_NARROW_BF16 ? 7 : 3;
    const int B = fmt == WK_NARROW_F16 ? 15 : fmt == WK_NARROW_BF16 ? 127 : 7;
    const uint32_t sbit = fmt == WK_NARROW_F8E4M3 ? 0x80u : 0x8000u;
    const uint32_t maxfin = fmt == WK_NARROW_F16 ? 0x7BFFu : fmt == WK_NARROW_BF16 ? 0x7F7Fu : 0x7Eu;
    const uint32_t inf = fmt == WK_NARROW_F16 ? 0x7C00u : fmt == WK_NARROW_BF16 ? 0x7F80u : 0x7Eu;
    const int emin = 1 - B;
    uint32_t s = sign ? sbit : 0u;
    if (sig == 0) return s;
    int p = 63 - WK_CLZ64(sig);          /* msb position                 */
    int E = p + exp2;                     /* unbiased exponent of value   */
    int Eq = E > emin ? E : emin;         /* exponent of the quantum      */
    if (Eq > B + 2) return s | inf;       /* far above the largest finite */
    int shift = (Eq - M) - exp2;          /* value / quantum = sig >> shift */
    uint64_t q;
    if (shift <= 0) {
        q = sig << (-shift);              /* exact (small values only)    */
    } else if (shift >= 64) {
        q = 0;                            /* < half a quantum             */
    } else {
        q = sig >> shift;
        uint64_t rem = sig & ((((uint64_t)1) << shift) - 1);
        uint64_t half = ((uint64_t)1) << (shift - 1);
        if (rem > half || (rem == half && (q & 1))) q++;
    }
    uint64_t bits = ((uint64_t)(Eq + B - 1) << M) + q;
    if (bits > maxfin) return s | inf;
    return s | (uint32_t)bits;
}

/* f64 -> narrow, in one rounding. */
WK_HD uint32_t wk_f64_to_narrow(int fmt, double d)
{
    uint64_t u = wk_f64_bits(d);
    uint32_t sign = (uint32_t)(u >> 63);
    uint32_t e = (uint32_t)(u >> 52) & 0x7FF;
    uint64_t m = u & 0xFFFFFFFFFFFFFull;
    if (e == 0x7FF) {
        if (m != 0) {                                    /* NaN           */
            if (fmt == WK_NARROW_F8E4M3) return (sign ? 0x80u : 0u) | 0x7Fu;
            return (sign ? 0x8000u : 0u) | (fmt == WK_NARROW_F16 ? 0x7E00u : 0x7FC0u);
        }
        return wk_pack_narrow(fmt, sign, 1, 2000);      /* Inf: overflow */
    }
    if (e == 0) return wk_pack_narrow(fmt, sign, m, -1074);
    return wk_pack_narrow(fmt, sign, m | (1ull << 52), (int)e - 1075);
}

WK_HD uint16_t wk_f64_to_f16(double d) { return (uint16_t)wk_f64_to_narrow(WK_NARROW_F16, d); }
WK_HD uint16_t wk_f64_to_bf16(double d) { return (uint16_t)wk_f64_to_narrow(WK_NARROW_BF16, d); }
WK_HD uint8_t wk_f64_to_f8e4m3(double d) { return (uint8_t)wk_f64_to_narrow(WK_NARROW_F8E4M3, d); }

/* f32 -> bf16, round to nearest even; NaN stays a quiet NaN. */
WK_HD uint16_t wk_f32_to_bf16(float f)
{
    uint32_t x = wk_f32_bits(f);
    if ((x & 0x7FFFFFFFu) > 0x7F800000u) return (uint16_t)((x >> 16) | 0x0040u);
    x += 0x7FFFu + ((x >> 16) & 1u);
    return (uint16_t)(x >> 16);
}

/* f32 -> f16, round to nearest even (integer only, no FP mode reliance). */
WK_HD uint16_t wk_f32_to_f16(float f)
{
    uint32_t x = wk_f32_bits(f);
    uint32_t sign = (x >> 16) & 0x8000u;
    x &= 0x7FFFFFFFu;
    if (x >= 0x7F800000u) return (uint16_t)(sign | (x > 0x7F800000u ? 0x7E00u : 0x7C00u));
    if (x >= 0x477FF000u) return (uint16_t)(sign | 0x7C00u);      /* >= 65520 */
    if (x >= 0x38800000u) {                                         /* normal   */
        x += 0xC8000FFFu + ((x >> 13) & 1u);                        /* rebias + round */
        return (uint16_t)(sign | (x >> 13));
    }
    /* subnormal or zero in f16 */
    uint32_t e = x >> 23;
    if (e < 102) return (uint16_t)sign;                             /* < 2^-25  */
    uint32_t m = (x & 0x7FFFFFu) | 0x800000u;
    uint32_t shift = 126 - e;                                       /* 14..24   */
    uint32_t q = m >> shift, rem = m & ((1u << shift) - 1), half = 1u << (shift - 1);
    if (rem > half || (rem == half && (q & 1u))) q++;
    return (uint16_t)(sign | q);
}

WK_HD uint8_t wk_f32_to_f8e4m3(float f) { return wk_f64_to_f8e4m3((double)f); }

WK_HD float wk_bf16_to_f32(uint16_t h) { return wk_bits_f32((uint32_t)h << 16); }

WK_HD float wk_f16_to_f32(uint16_t h)
{
    uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
    uint32_t e = (h >> 10) & 0x1Fu, m = h & 0x3FFu;
    if (e == 0x1F) return wk_bits_f32(sign | 0x7F800000u | (m << 13));
    if (e != 0) return wk_bits_f32(sign | ((e + 112) << 23) | (m << 13));
    if (m == 0) return wk_bits_f32(sign);
    /* subnormal: m * 2^-24, exact in f32 */
    float v = (float)m * 5.9604644775390625e-08f;
    return sign ? -v : v;
}

WK_HD float wk_f8e4m3_to_f32(uint8_t b)
{
    uint32_t sign = b >> 7, e = (b >> 3) & 0xFu, m = b & 7u;
    float v;
    if (e == 0xF && m == 7) v = wk_bits_f32(0x7FC00000u);          /* NaN */
    else if (e == 0) v = (float)m * 0.001953125f;                    /* m * 2^-9 */
    else v = wk_bits_f32(((e + 120) << 23) | (m << 20));
    return sign ? -v : v;
}

/* integers -> narrow floats in one rounding */
WK_HD uint32_t wk_i64_to_narrow(int fmt, int64_t v)
{
    uint32_t sign = v < 0;
    uint64_t mag = sign ? (uint64_t)0 - (uint64_t)v : (uint64_t)v;
    return wk_pack_narrow(fmt, sign, mag, 0);
}
WK_HD uint32_t wk_u64_to_narrow(int fmt, uint64_t v) { return wk_pack_narrow(fmt, 0, v, 0); }

/* ---- float -> integer: truncate, saturate, NaN -> 0 --------------- */

WK_HD int64_t wk_f64_to_i64(double d)
{
    if (d != d) return 0;
    if (d >= 9223372036854775808.0) return INT64_MAX;
    if (d <= -9223372036854775808.0) return INT64_MIN;
    return (int64_t)d;
}
WK_HD int32_t wk_f64_to_i32(double d)
{
    if (d != d) return 0;
    if (d >= 2147483647.0) return INT32_MAX;
    if (d <= -2147483648.0) return INT32_MIN;
    return (int32_t)d;
}
WK_HD int16_t wk_f64_to_i16(double d)
{
    if (d != d) return 0;
    if (d >= 32767.0) return INT16_MAX;
    if (d <= -32768.0) return INT16_MIN;
    return (int16_t)d;
}
WK_HD uint32_t wk_f64_to_u32(double d)
{
    if (d != d || d <= 0.0) return 0;
    if (d >= 4294967295.0) return UINT32_MAX;
    return (uint32_t)d;
}
WK_HD uint8_t wk_f64_to_u8(double d)
{
    if (d != d || d <= 0.0) return 0;
    if (d >= 255.0) return 255;
    return (uint8_t)d;
}

/* f32 variants (exact via f64; f32 -> f64 is exact) */
WK_HD int64_t wk_f32_to_i64(float f) { return wk_f64_to_i64((double)f); }
WK_HD int32_t wk_f32_to_i32(float f) { return wk_f64_to_i32((double)f); }
WK_HD int16_t wk_f32_to_i16(float f) { return wk_f64_to_i16((double)f); }
WK_HD uint32_t wk_f32_to_u32(float f) { return wk_f64_to_u32((double)f); }
WK_HD uint8_t wk_f32_to_u8(float f) { return wk_f64_to_u8((double)f); }

/* ---- i64 -> f64 / f32 exactly rounded (one rounding) -------------- */
/* (int64_t)->double is one rounding already on every target we build;
 * (int64_t)->float in C is also a single correctly rounded conversion. */

#endif /* WICK_SCALAR_H */
