/* gpu_types.h — element types for device code: storage types of the narrow
 * floats, compute-type traits, fast exact f16/bf16/f8e4m3 conversions, the
 * cast rules (wk_to, wk_cast) and 16-byte vector units.
 * Part of the GPU backend's shared headers: include gpu_internal.h. */
#ifndef WICK_GPU_GPU_TYPES_H
#define WICK_GPU_GPU_TYPES_H

#include "compat.h"
#include <math.h>
#include <stdint.h>
#include <type_traits>
#include "../backend.h"
#include "../core/scalar.h"

/* ------------------------------------------------------------------ */
/* Element types for device code                                       */

/* Storage types: narrow floats are bit patterns in distinct structs so
 * that templates tell f16 from bf16. */
struct wk_bf16_t { uint16_t bits; };
struct wk_f16_t { uint16_t bits; };
struct wk_f8_t { uint8_t bits; };

/* Traits: C is the compute type (f32 for narrow floats, else itself). */
template <typename T> struct wk_type;
#define WK_GPU_TYPE_(T_, C_, ID_, FLOAT_, NARROW_, SIGNED_)                  \
    template <> struct wk_type<T_> {                                         \
        typedef C_ C;                                                        \
        static constexpr wk_dtype id = ID_;                                  \
        static constexpr bool is_float = FLOAT_;                             \
        static constexpr bool is_narrow = NARROW_;                           \
        static constexpr bool is_signed = SIGNED_;                           \
    };
WK_GPU_TYPE_(uint8_t, uint8_t, WK_U8, false, false, false)
WK_GPU_TYPE_(uint32_t, uint32_t, WK_U32, false, false, false)
WK_GPU_TYPE_(int16_t, int16_t, WK_I16, false, false, true)
WK_GPU_TYPE_(int32_t, int32_t, WK_I32, false, false, true)
WK_GPU_TYPE_(int64_t, int64_t, WK_I64, false, false, true)
WK_GPU_TYPE_(wk_bf16_t, float, WK_BF16, true, true, true)
WK_GPU_TYPE_(wk_f16_t, float, WK_F16, true, true, true)
WK_GPU_TYPE_(float, float, WK_F32, true, false, true)
WK_GPU_TYPE_(double, double, WK_F64, true, false, true)
WK_GPU_TYPE_(wk_f8_t, float, WK_F8E4M3, true, true, true)
#undef WK_GPU_TYPE_

/* ---- f32 <-> f16 / f8e4m3 on the device ---------------------------- */
/* Same results as scalar.h, in fewer instructions: f16 through the
 * hardware conversions (exact widening; IEEE round to nearest even, with
 * subnormals) except NaN, which takes scalar.h's path so its bits match;
 * f32 -> f8e4m3 by an f32-only routine (scalar.h goes through f64). The
 * host side of each is scalar.h itself. */

/* NaN as scalar.h converts it (payload kept f16 -> f32; f32 -> f16 gives
 * the quiet NaN 0x7E00 with the sign). */
WK_HD float wk_f16_nan_(uint16_t h)
{
    return wk_bits_f32(((uint32_t)(h & 0x8000u) << 16) | 0x7F800000u | ((uint32_t)(h & 0x3FFu) << 13));
}
WK_HD uint16_t wk_f32_nan_f16_(float f) { return (uint16_t)(((wk_f32_bits(f) >> 16) & 0x8000u) | 0x7E00u); }

WK_HD float wk_fast_f16_to_f32(uint16_t h)
{
#if defined(__CUDA_ARCH__)
    if ((h & 0x7FFFu) > 0x7C00u) return wk_f16_nan_(h);
    float f;
    asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(h));
    return f;
#elif defined(__HIP_DEVICE_COMPILE__)
    if ((h & 0x7FFFu) > 0x7C00u) return wk_f16_nan_(h);
    _Float16 v;
    memcpy(&v, &h, 2);
    return (float)v;
#else
    return wk_f16_to_f32(h);
#endif
}

WK_HD uint16_t wk_fast_f32_to_f16(float f)
{
#if defined(__CUDA_ARCH__)
    if (f != f) return wk_f32_nan_f16_(f);
    uint16_t h;
    asm("cvt.rn.f16.f32 %0, %1;" : "=h"(h) : "f"(f));
    return h;
#elif defined(__HIP_DEVICE_COMPILE__)
    if (f != f) return wk_f32_nan_f16_(f);
    _Float16 v = (_Float16)f;
    uint16_t h;
    memcpy(&h, &v, 2);
    return h;
#else
    return wk_f32_to_f16(f);
#endif
}

/* f32 -> bf16, round to nearest even, NaN as scalar.h (quieted, payload
 * kept). WK_GPU_HW_BF16 picks how NVIDIA sm_80+ rounds (AMD always takes
 * the integer sequence; every choice gives the same bits, NaN always
 * takes the integer path):
 *   0  the integer sequence everywhere;
 *   1  one cvt.rn.bf16.f32 per element: 4-8% slower bf16 streaming
 *      kernels than 0 on an H200;
 *   2  (default) the integer sequence per element, and one
 *      cvt.rn.bf16x2.f32 per pair where a kernel rounds pairs
 *      (wk_fast_f32x2_to_bf16x2: the unary kernels): silu and gelu bf16
 *      10% faster than 0, the others unchanged (bench/TUNING-gpu.md). */
#ifndef WK_GPU_HW_BF16
#define WK_GPU_HW_BF16 2
#endif
WK_HD uint16_t wk_fast_f32_to_bf16(float f)
{
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800 && WK_GPU_HW_BF16 == 1
    if (f != f) return wk_f32_to_bf16(f);
    uint16_t h;
    asm("cvt.rn.bf16.f32 %0, %1;" : "=h"(h) : "f"(f));
    return h;
#else
    return wk_f32_to_bf16(f);
#endif
}

/* Two f32 -> two bf16 (lo at the lower address), as wk_fast_f32_to_bf16
 * each; with WK_GPU_HW_BF16 == 2 NVIDIA sm_80+ rounds both with one
 * cvt.rn.bf16x2.f32. */
WK_HD void wk_fast_f32x2_to_bf16x2(float lo, float hi, wk_bf16_t *out)
{
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800 && WK_GPU_HW_BF16 == 2
    if (lo == lo && hi == hi) {
        uint32_t r;
        asm("cvt.rn.bf16x2.f32 %0, %1, %2;" : "=r"(r) : "f"(hi), "f"(lo));
        out[0].bits = (uint16_t)(r & 0xFFFFu);
        out[1].bits = (uint16_t)(r >> 16);
        return;
    }
#endif
    out[0].bits = wk_f32_to_bf16(lo);
    out[1].bits = wk_f32_to_bf16(hi);
}

/* OCP E4M3FN from f32, round to nearest even, |x| >= 448 and Inf -> 448,
 * NaN -> 0x7F with the sign (as scalar.h). */
WK_HD uint8_t wk_fast_f32_to_f8e4m3(float f)
{
    uint32_t u = wk_f32_bits(f);
    uint32_t sign = (u >> 24) & 0x80u, a = u & 0x7FFFFFFFu;
    if (a > 0x7F800000u) return (uint8_t)(sign | 0x7Fu);          /* NaN           */
    if (a >= 0x43E00000u) return (uint8_t)(sign | 0x7Eu);         /* >= 448: 448   */
    if (a >= 0x3C800000u) {                                        /* >= 2^-6: normal */
        a += 0x7FFFFu + ((a >> 20) & 1u);                          /* round at bit 20 */
        return (uint8_t)(sign | ((a >> 20) - (120u << 3)));
    }
    /* subnormal: m * 2^-9, m = 0..8 (8 is the smallest normal, 0x08) */
    float q = rintf(wk_bits_f32(a) * 512.0f);
    return (uint8_t)(sign | (uint32_t)q);
}

/* f8e4m3 -> f32: the 7 magnitude bits placed at f32 bit 20 read as an f32
 * (a subnormal one when the f8 exponent is 0) times 2^120 is the value
 * exactly; 0x7F is NaN. Needs f32 subnormals (wick never builds with
 * flush-to-zero). */
WK_HD float wk_fast_f8e4m3_to_f32(uint8_t b)
{
    uint32_t a = b & 0x7Fu;
    float f = wk_bits_f32(a << 20) * 1.329227995784915872903807060280344576e36f;   /* 2^120 */
    uint32_t r = a == 0x7Fu ? 0x7FC00000u : wk_f32_bits(f);
    return wk_bits_f32(r | ((uint32_t)(b & 0x80u) << 24));
}

/* Storage -> compute type (exact). */
WK_HD float wk_load_c(wk_bf16_t x) { return wk_bf16_to_f32(x.bits); }
WK_HD float wk_load_c(wk_f16_t x) { return wk_fast_f16_to_f32(x.bits); }
WK_HD float wk_load_c(wk_f8_t x) { return wk_fast_f8e4m3_to_f32(x.bits); }
template <typename T> WK_HD T wk_load_c(T x) { return x; }

/* ---- conversion to D from an exact value (integer or float) -------- */
/* wk_to<D>(v): the cast rules of docs: integer -> integer wraps; float ->
 * integer truncates, saturates, NaN -> 0; anything -> narrow float rounds
 * to nearest even in one rounding; -> f32/f64 one rounding. */

template <typename D> struct wk_to_;

template <> struct wk_to_<double> {
    template <typename V> static WK_HD double from(V v) { return (double)v; }
};
template <> struct wk_to_<float> {
    template <typename V> static WK_HD float from(V v) { return (float)v; }
};

#define WK_GPU_TO_INT_(D_, F64_)                                             \
    template <> struct wk_to_<D_> {                                          \
        static WK_HD D_ from(float v) { return F64_((double)v); }            \
        static WK_HD D_ from(double v) { return F64_(v); }                   \
        template <typename V> static WK_HD D_ from(V v)                      \
        {                                                                    \
            static_assert(std::is_integral<V>::value, "integer source");     \
            return (D_)(std::make_unsigned<D_>::type)v;                      \
        }                                                                    \
    };
WK_GPU_TO_INT_(uint8_t, wk_f64_to_u8)
WK_GPU_TO_INT_(uint32_t, wk_f64_to_u32)
WK_GPU_TO_INT_(int16_t, wk_f64_to_i16)
WK_GPU_TO_INT_(int32_t, wk_f64_to_i32)
WK_GPU_TO_INT_(int64_t, wk_f64_to_i64)
#undef WK_GPU_TO_INT_

/* narrow: FMT_ is the scalar.h format; F32_ the fast f32 path */
#define WK_GPU_TO_NARROW_(D_, FMT_, F32_)                                    \
    template <> struct wk_to_<D_> {                                          \
        static WK_HD D_ from(float v) { D_ r; r.bits = F32_(v); return r; }  \
        static WK_HD D_ from(double v)                                       \
        { D_ r; r.bits = (decltype(r.bits))wk_f64_to_narrow(FMT_, v); return r; } \
        template <typename V> static WK_HD D_ from(V v)                      \
        {                                                                    \
            static_assert(std::is_integral<V>::value, "integer source");     \
            D_ r;                                                            \
            if (sizeof(V) <= 2) r.bits = F32_((float)v); /* exact in f32 */  \
            else if (std::is_signed<V>::value)                               \
                r.bits = (decltype(r.bits))wk_i64_to_narrow(FMT_, (int64_t)v); \
            else r.bits = (decltype(r.bits))wk_u64_to_narrow(FMT_, (uint64_t)v); \
            return r;                                                        \
        }                                                                    \
    };
WK_GPU_TO_NARROW_(wk_bf16_t, WK_NARROW_BF16, wk_fast_f32_to_bf16)
WK_GPU_TO_NARROW_(wk_f16_t, WK_NARROW_F16, wk_fast_f32_to_f16)
WK_GPU_TO_NARROW_(wk_f8_t, WK_NARROW_F8E4M3, wk_fast_f32_to_f8e4m3)
#undef WK_GPU_TO_NARROW_

/* Compute value -> storage type D (wk_to<wk_bf16_t>(1.5f), ...). */
template <typename D, typename V> WK_HD D wk_to(V v) { return wk_to_<D>::from(v); }

/* Storage S -> storage D with the cast rules (copy/to_dtype). */
template <typename D, typename S> WK_HD D wk_cast(S s)
{
    if constexpr (std::is_same<D, S>::value) return s;
    else return wk_to<D>(wk_load_c(s));
}

/* N elements of T as one aligned unit, for wide (16-byte) loads and
 * stores on contiguous data: wk_vec<float, 4>, wk_vec<wk_bf16_t, 8>. */
template <typename T, int N> struct alignas(sizeof(T) * N) wk_vec {
    T v[N];
};

/* Elements per 16-byte unit of the widest of the types:
 * wk_vec_width<float, uint8_t> == 4. */
template <typename... T> struct wk_maxsize_;
template <typename T> struct wk_maxsize_<T> { static constexpr size_t v = sizeof(T); };
template <typename T, typename... R> struct wk_maxsize_<T, R...> {
    static constexpr size_t v = sizeof(T) > wk_maxsize_<R...>::v ? sizeof(T) : wk_maxsize_<R...>::v;
};
template <typename... T> constexpr int wk_vec_width = (int)(16 / wk_maxsize_<T...>::v);

/* A rope pair (x0, x1) turned by the angle whose cosine and sine are
 * (c, s), in the compute type: one expression for every kernel that
 * applies it (nn.hip's rope_kv, gemv.hip's product with its rope), so
 * the compiler contracts it alike and they give the same bits. */
template <typename C> WK_DEV void wk_rope_turn(C &x0, C &x1, C c, C s)
{
    const C y0 = x0 * c - x1 * s, y1 = x0 * s + x1 * c;
    x0 = y0, x1 = y1;
}

/* true when p is a multiple of `bytes` (a power of two) */
static inline bool wk_gpu_aligned(const void *p, size_t bytes)
{
    return ((uintptr_t)p & (bytes - 1)) == 0;
}
#endif /* WICK_GPU_GPU_TYPES_H */
