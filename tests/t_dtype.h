/* t_dtype.h — the tests' own host-side dtype codecs and random generator,
 * written independently of src/ (the library's conversions are what the
 * tests check, so they may not be used as references). Shared by
 * build/wick-tests and build/wick-parity; header-only.
 *
 * Decoding a narrow float builds its value from the fields with ldexp.
 * Encoding (rounding to f16/bf16/f8e4m3) splits |x| into a multiple of
 * the format's quantum at |x|'s exponent and an exact remainder in long
 * double (which holds every i64 and every f64 exactly), and rounds half to
 * even once from the exact source value. These codecs are checked against numpy/ml_dtypes
 * data (tests/data/dtype_ref.h) by the ref/ cases of test_dtype.c.
 */
#ifndef WICK_TEST_DTYPE_H
#define WICK_TEST_DTYPE_H

#include <math.h>
#include <stdint.h>
#include <string.h>
#include "wick.h"

/* ---- random numbers: splitmix64 ----------------------------------- */

typedef struct t_rng { uint64_t s; } t_rng;

static inline uint64_t t_rng_next(t_rng *r)
{
    uint64_t z = (r->s += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}
/* uniform double in [0, 1) */
static inline double t_rng_unit(t_rng *r) { return (double)(t_rng_next(r) >> 11) * 0x1p-53; }
static inline double t_rng_range(t_rng *r, double lo, double hi) { return lo + (hi - lo) * t_rng_unit(r); }
/* uniform integer in [lo, hi] */
static inline int64_t t_rng_int(t_rng *r, int64_t lo, int64_t hi)
{
    uint64_t span = (uint64_t)hi - (uint64_t)lo + 1;
    if (span == 0) return (int64_t)t_rng_next(r);
    return (int64_t)((uint64_t)lo + t_rng_next(r) % span);
}

static inline uint64_t t_hash_str(const char *s)
{
    uint64_t h = 0xCBF29CE484222325ull;
    for (; *s; s++) { h ^= (unsigned char)*s; h *= 0x100000001B3ull; }
    return h;
}

/* ---- dtype facts --------------------------------------------------- */

static inline size_t t_size(wk_dtype dt)
{
    switch (dt) {
    case WK_U8: case WK_F8E4M3: return 1;
    case WK_I16: case WK_F16: case WK_BF16: return 2;
    case WK_U32: case WK_I32: case WK_F32: return 4;
    case WK_I64: case WK_F64: return 8;
    default: return 0;
    }
}
static inline int t_is_float(wk_dtype dt)
{
    return dt == WK_F16 || dt == WK_BF16 || dt == WK_F32 || dt == WK_F64 || dt == WK_F8E4M3;
}
static inline int t_is_narrow(wk_dtype dt) { return dt == WK_F16 || dt == WK_BF16 || dt == WK_F8E4M3; }
static inline const char *t_dt_name(wk_dtype dt)
{
    static const char *n[] = { "u8", "u32", "i16", "i32", "i64", "bf16", "f16", "f32", "f64", "f8e4m3" };
    return (unsigned)dt < 10 ? n[dt] : "?";
}
/* integer range */
static inline int64_t t_int_min(wk_dtype dt)
{
    switch (dt) {
    case WK_I16: return INT16_MIN;
    case WK_I32: return INT32_MIN;
    case WK_I64: return INT64_MIN;
    default: return 0;
    }
}
static inline int64_t t_int_max(wk_dtype dt)
{
    switch (dt) {
    case WK_U8: return 255;
    case WK_U32: return UINT32_MAX;
    case WK_I16: return INT16_MAX;
    case WK_I32: return INT32_MAX;
    case WK_I64: return INT64_MAX;
    default: return 0;
    }
}
/* wrap an integer to dt (two's complement) */
static inline int64_t t_wrap(wk_dtype dt, uint64_t v)
{
    switch (dt) {
    case WK_U8: return (int64_t)(v & 0xFF);
    case WK_U32: return (int64_t)(v & 0xFFFFFFFFu);
    case WK_I16: { uint16_t x = (uint16_t)v; return x >= 0x8000u ? (int64_t)x - 0x10000 : (int64_t)x; }
    case WK_I32: { uint32_t x = (uint32_t)v; return x >= 0x80000000u ? (int64_t)x - 0x100000000ll : (int64_t)x; }
    default: { int64_t x; memcpy(&x, &v, 8); return x; }
    }
}

/* ---- narrow float decoding ----------------------------------------- */

static inline double t_f16_value(uint16_t h)
{
    int s = h >> 15, e = (h >> 10) & 31, m = h & 1023;
    double v;
    if (e == 31) v = m ? NAN : INFINITY;
    else if (e == 0) v = ldexp((double)m, -24);
    else v = ldexp((double)(1024 + m), e - 25);
    return s ? -v : v;
}
static inline double t_bf16_value(uint16_t h)
{
    int s = h >> 15, e = (h >> 7) & 255, m = h & 127;
    double v;
    if (e == 255) v = m ? NAN : INFINITY;
    else if (e == 0) v = ldexp((double)m, -133);
    else v = ldexp((double)(128 + m), e - 134);
    return s ? -v : v;
}
static inline double t_f8_value(uint8_t b)
{
    int s = b >> 7, e = (b >> 3) & 15, m = b & 7;
    double v;
    if (e == 15 && m == 7) v = NAN;
    else if (e == 0) v = ldexp((double)m, -9);
    else v = ldexp((double)(8 + m), e - 10);
    return s ? -v : v;
}

/* ---- narrow float encoding (one rounding, half to even) ------------ */

/* fmt: WK_F16, WK_BF16 or WK_F8E4M3. Returns the bit pattern. The value
 * |x| = k * q + r with q the quantum (2^(exponent - mantissa bits), the
 * exponent clamped to the subnormal range); k and r are exact in long
 * double, so comparing r with q/2 rounds x exactly once. */
#define T_ROUND_NARROW_BODY(FT, FREXP, LDEXP, FLOOR, FMOD, FABS)                               \
    const int M = fmt == WK_F16 ? 10 : fmt == WK_BF16 ? 7 : 3;                                  \
    const int B = fmt == WK_F16 ? 15 : fmt == WK_BF16 ? 127 : 7;                                \
    const FT maxval = fmt == WK_F16 ? (FT)65504.0 : fmt == WK_BF16 ? (FT)0x1.FEp127 : (FT)448.0; \
    const uint32_t s = signbit(x) ? (fmt == WK_F8E4M3 ? 0x80u : 0x8000u) : 0u;                 \
    if (x != x) return s | (fmt == WK_F16 ? 0x7E00u : fmt == WK_BF16 ? 0x7FC0u : 0x7Fu);      \
    FT a = FABS(x);                                                                             \
    if (a == 0) return s;                                                                       \
    uint32_t over = fmt == WK_F8E4M3 ? 0x7Eu : fmt == WK_F16 ? 0x7C00u : 0x7F80u;               \
    if (isinf(a) || a > 2 * maxval) return s | over;                                            \
    int e;                                                                                      \
    FREXP(a, &e);                     /* a in [2^(e-1), 2^e) */                                 \
    int E = e - 1 < 1 - B ? 1 - B : e - 1;                                                      \
    FT q = LDEXP((FT)1, E - M);                                                                 \
    FT k = FLOOR(a / q), r = a - k * q;                                                         \
    if (r > q / 2 || (r == q / 2 && FMOD(k, (FT)2) == 1)) k += 1;                               \
    FT v = k * q;                                                                               \
    if (v > maxval) return s | over;  /* f16/bf16: Inf; f8e4m3 saturates */                     \
    if (v < LDEXP((FT)1, 1 - B))      /* subnormal: a multiple of the smallest */               \
        return s | (uint32_t)(v / LDEXP((FT)1, 1 - B - M));                                     \
    int ev;                                                                                     \
    FT f = FREXP(v, &ev);             /* v = f * 2^ev, f in [0.5, 1) */                         \
    return s | ((uint32_t)(ev - 1 + B) << M) | (uint32_t)LDEXP(f * 2 - 1, M);

/* double sources: the same steps with exact powers of two built from
 * bits (every k, r and q is exact in double) — the fast path, since the
 * tests round millions of values */
static inline double t_pow2(int e)
{
    uint64_t b = (uint64_t)(e + 1023) << 52;
    double d;
    memcpy(&d, &b, 8);
    return d;
}
static inline uint32_t t_round_narrow_d(wk_dtype fmt, double x)
{
    const int M = fmt == WK_F16 ? 10 : fmt == WK_BF16 ? 7 : 3;
    const int B = fmt == WK_F16 ? 15 : fmt == WK_BF16 ? 127 : 7;
    const double maxval = fmt == WK_F16 ? 65504.0 : fmt == WK_BF16 ? 0x1.FEp127 : 448.0;
    uint64_t xb;
    memcpy(&xb, &x, 8);
    const uint32_t s = (xb >> 63) ? (fmt == WK_F8E4M3 ? 0x80u : 0x8000u) : 0u;
    if (x != x) return s | (fmt == WK_F16 ? 0x7E00u : fmt == WK_BF16 ? 0x7FC0u : 0x7Fu);
    double a = fabs(x);
    if (a == 0) return s;
    uint32_t over = fmt == WK_F8E4M3 ? 0x7Eu : fmt == WK_F16 ? 0x7C00u : 0x7F80u;
    if (a > 2 * maxval) return s | over;                    /* also Inf */
    int E = (int)((xb >> 52) & 0x7FF) - 1023;               /* a in [2^E, 2^(E+1)) */
    if (E < 1 - B) E = 1 - B;                               /* subnormal quantum   */
    double q = t_pow2(E - M), k = floor(a * t_pow2(M - E)), r = a - k * q;
    if (r > q / 2 || (r == q / 2 && ((int64_t)k & 1))) k += 1;
    double v = k * q;
    if (v > maxval) return s | over;                        /* f16/bf16: Inf; f8e4m3 saturates */
    if (v < t_pow2(1 - B)) return s | (uint32_t)(v * t_pow2(B - 1 + M));   /* subnormal */
    uint64_t vb;
    memcpy(&vb, &v, 8);
    int ev = (int)((vb >> 52) & 0x7FF) - 1023;
    return s | ((uint32_t)(ev + B) << M) | (uint32_t)((vb >> (52 - M)) & ((1u << M) - 1));
}
static inline uint32_t t_round_narrow_ld(wk_dtype fmt, long double x) { T_ROUND_NARROW_BODY(long double, frexpl, ldexpl, floorl, fmodl, fabsl) }
static inline uint32_t t_round_narrow(wk_dtype fmt, long double x)
{
    double d = (double)x;
    if ((long double)d == x || x != x) return t_round_narrow_d(fmt, d);
    return t_round_narrow_ld(fmt, x);
}

/* ---- element access on raw host buffers ----------------------------- */

static inline double t_get(wk_dtype dt, const void *p, int64_t i)
{
    const unsigned char *b = (const unsigned char *)p;
    switch (dt) {
    case WK_U8: return b[i];
    case WK_U32: { uint32_t v; memcpy(&v, b + 4 * i, 4); return v; }
    case WK_I16: { int16_t v; memcpy(&v, b + 2 * i, 2); return v; }
    case WK_I32: { int32_t v; memcpy(&v, b + 4 * i, 4); return v; }
    case WK_I64: { int64_t v; memcpy(&v, b + 8 * i, 8); return (double)v; }
    case WK_BF16: { uint16_t v; memcpy(&v, b + 2 * i, 2); return t_bf16_value(v); }
    case WK_F16: { uint16_t v; memcpy(&v, b + 2 * i, 2); return t_f16_value(v); }
    case WK_F32: { float v; memcpy(&v, b + 4 * i, 4); return v; }
    case WK_F64: { double v; memcpy(&v, b + 8 * i, 8); return v; }
    case WK_F8E4M3: return t_f8_value(b[i]);
    default: return 0;
    }
}
/* integer element (exact for i64) */
static inline int64_t t_geti(wk_dtype dt, const void *p, int64_t i)
{
    if (dt == WK_I64) { int64_t v; memcpy(&v, (const char *)p + 8 * i, 8); return v; }
    return (int64_t)t_get(dt, p, i);
}
/* raw bits of element i (zero-extended) */
static inline uint64_t t_bits(wk_dtype dt, const void *p, int64_t i)
{
    uint64_t v = 0;
    size_t sz = t_size(dt);
    memcpy(&v, (const char *)p + sz * (size_t)i, sz);
    return v;
}
static inline void t_put_bits(wk_dtype dt, void *p, int64_t i, uint64_t bits)
{
    size_t sz = t_size(dt);
    memcpy((char *)p + sz * (size_t)i, &bits, sz);
}

/* float->int cast rule: truncate toward zero, saturate, NaN -> 0 */
static inline int64_t t_f2i(wk_dtype dt, long double v)
{
    if (v != v) return 0;
    long double lo = (long double)t_int_min(dt), hi = (long double)t_int_max(dt);
    if (v <= lo) return t_int_min(dt);
    if (v >= hi) return t_int_max(dt);
    return (int64_t)truncl(v);
}

/* The bits dt gives to the exact value v under wick's cast rules (float
 * targets: one rounding; integer targets: the float->int rule). */
static inline uint64_t t_encode(wk_dtype dt, long double v)
{
    switch (dt) {
    case WK_F16: case WK_BF16: case WK_F8E4M3: return t_round_narrow(dt, v);
    case WK_F32: { float f = (float)v; uint32_t u; memcpy(&u, &f, 4); return u; }
    case WK_F64: { double d = (double)v; uint64_t u; memcpy(&u, &d, 8); return u; }
    default: { int64_t i = t_f2i(dt, v); uint64_t u; memcpy(&u, &i, 8); return u & (t_size(dt) == 8 ? ~0ull : ((1ull << (8 * t_size(dt))) - 1)); }
    }
}
/* Store v into element i with the cast rules. */
static inline void t_put(wk_dtype dt, void *p, int64_t i, long double v) { t_put_bits(dt, p, i, t_encode(dt, v)); }
/* Store an integer with wrap-around for integer dtypes (one rounding for floats). */
static inline void t_puti(wk_dtype dt, void *p, int64_t i, int64_t v)
{
    if (t_is_float(dt)) t_put(dt, p, i, (long double)v);
    else t_put_bits(dt, p, i, (uint64_t)v);
}
/* v rounded to dt and read back (the value dt can hold nearest v) */
static inline double t_round_to(wk_dtype dt, double v)
{
    unsigned char buf[8];
    t_put(dt, buf, 0, v);
    return t_get(dt, buf, 0);
}

#endif /* WICK_TEST_DTYPE_H */
