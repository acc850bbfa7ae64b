/* cpu_copy.c — the CPU backend's copies: strided copy with dtype
 * conversion (wk_cpu_copy, every pair of the 10 dtypes), copy2d and
 * const_set (the row driver they run on, wk_ew_run, is in cpu_ew.c).
 *
 * How it is made fast: dims are coalesced so contiguous views become one
 * row per thread-pool chunk, and views transposed in their last two dims
 * are walked in cache-sized tiles; a same-dtype contiguous copy is memcpy per
 * chunk; conversions are one macro-generated row function per (src, dst)
 * pair whose contiguous loop the compiler vectorizes (narrow floats go
 * through the branch-free conversions of cpu_ew.h); on x86-64 the hot
 * f32 <-> f16/bf16 loops also have AVX2/F16C variants picked at run time.
 * Every conversion follows scalar.h: float -> narrow in one rounding,
 * int -> int wraps, float -> int truncates/saturates/NaN -> 0, int ->
 * narrow in one rounding.
 */
#include <stdlib.h>
#include "cpu_ew.h"
#include <stdatomic.h>
#if WK_EW_X86
#include <cpuid.h>
#include <immintrin.h>
#endif

#ifdef __clang__
#pragma STDC FP_CONTRACT OFF
#endif

/* ======================================================================
 * Same-dtype copies and fills: by element size, bits unchanged
 * ==================================================================== */

#define DEF_COPY_BITS(NAME, T)                                                  \
    static void NAME(char *const *p, const int64_t *st, int64_t n, const void *prm) \
    {                                                                           \
        (void)prm;                                                              \
        T *d = (T *)p[0];                                                       \
        const T *s = (const T *)p[1];                                           \
        const int64_t ds = st[0], ss = st[1];                                   \
        if (ds == 1 && ss == 1) {                                               \
            memcpy(d, s, (size_t)n * sizeof(T));                                \
        } else if (ds == 1 && ss == 0) {                                        \
            const T v = s[0];                                                   \
            for (int64_t i = 0; i < n; i++) d[i] = v;                           \
        } else {                                                                \
            for (int64_t i = 0; i < n; i++) d[i * ds] = s[i * ss];              \
        }                                                                       \
    }

#define DEF_FILL(NAME, T)                                                       \
    static void NAME(char *const *p, const int64_t *st, int64_t n, const void *prm) \
    {                                                                           \
        T v;                                                                    \
        memcpy(&v, prm, sizeof v);                                              \
        T *d = (T *)p[0];                                                       \
        const int64_t ds = st[0];                                               \
        if (ds == 1)                                                            \
            for (int64_t i = 0; i < n; i++) d[i] = v;                           \
        else                                                                    \
            for (int64_t i = 0; i < n; i++) d[i * ds] = v;                      \
    }

DEF_COPY_BITS(copy_b1, uint8_t)
DEF_COPY_BITS(copy_b2, uint16_t)
DEF_COPY_BITS(copy_b4, uint32_t)
DEF_COPY_BITS(copy_b8, uint64_t)
DEF_FILL(fill_b1, uint8_t)
DEF_FILL(fill_b2, uint16_t)
DEF_FILL(fill_b4, uint32_t)
DEF_FILL(fill_b8, uint64_t)

static wk_ew_row_fn copy_bits_fn(size_t esz)
{
    return esz == 1 ? copy_b1 : esz == 2 ? copy_b2 : esz == 4 ? copy_b4 : copy_b8;
}

/* ======================================================================
 * Conversions: one row function per (src, dst) pair
 *
 * A source is read as a value of one of three kinds: I (its own integer
 * type), F (float: f32 and the narrow floats, exactly) or D (double); a
 * destination stores a value of each kind with the cast rules.
 * ==================================================================== */

/* dtype list: name, storage type, kind, load */
#define CVT_DTYPES(X, ...)                                   \
    X(u8, uint8_t, I, LDI, __VA_ARGS__)                      \
    X(u32, uint32_t, I, LDI, __VA_ARGS__)                    \
    X(i16, int16_t, I, LDI, __VA_ARGS__)                     \
    X(i32, int32_t, I, LDI, __VA_ARGS__)                     \
    X(i64, int64_t, I, LDI, __VA_ARGS__)                     \
    X(bf16, uint16_t, F, wk_bf16_to_f32, __VA_ARGS__)        \
    X(f16, uint16_t, F, wk_ew_f16_to_f32, __VA_ARGS__)       \
    X(f32, float, F, LDI, __VA_ARGS__)                       \
    X(f64, double, D, LDI, __VA_ARGS__)                      \
    X(f8, uint8_t, F, wk_ew_f8_to_f32, __VA_ARGS__)

/* the same list, for the inner (destination) loop of the pair tables */
#define CVT_DTYPES_D(X, ...)                                 \
    X(u8, __VA_ARGS__) X(u32, __VA_ARGS__) X(i16, __VA_ARGS__) \
    X(i32, __VA_ARGS__) X(i64, __VA_ARGS__) X(bf16, __VA_ARGS__) \
    X(f16, __VA_ARGS__) X(f32, __VA_ARGS__) X(f64, __VA_ARGS__) X(f8, __VA_ARGS__)

#define LDI(v) (v)

/* value type of each kind, for a source of storage type TS */
#define KT_I(TS) TS
#define KT_F(TS) float
#define KT_D(TS) double

/* store a kind-I value (any integer type) */
#define SV_I_u8(v) ((uint8_t)(v))
#define SV_I_u32(v) ((uint32_t)(v))
#define SV_I_i16(v) ((int16_t)(v))
#define SV_I_i32(v) ((int32_t)(v))
#define SV_I_i64(v) ((int64_t)(v))
#define SV_I_bf16(v) ((uint16_t)wk_i64_to_narrow(WK_NARROW_BF16, (int64_t)(v)))
#define SV_I_f16(v) ((uint16_t)wk_i64_to_narrow(WK_NARROW_F16, (int64_t)(v)))
#define SV_I_f32(v) ((float)(v))
#define SV_I_f64(v) ((double)(v))
#define SV_I_f8(v) ((uint8_t)wk_i64_to_narrow(WK_NARROW_F8E4M3, (int64_t)(v)))
/* store a float */
#define SV_F_u8(v) wk_f32_to_u8(v)
#define SV_F_u32(v) wk_f32_to_u32(v)
#define SV_F_i16(v) wk_f32_to_i16(v)
#define SV_F_i32(v) wk_f32_to_i32(v)
#define SV_F_i64(v) wk_f32_to_i64(v)
#define SV_F_bf16(v) wk_ew_f32_to_bf16(v)
#define SV_F_f16(v) wk_ew_f32_to_f16(v)
#define SV_F_f32(v) (v)
#define SV_F_f64(v) ((double)(v))
#define SV_F_f8(v) wk_ew_f32_to_f8(v)
/* store a double */
#define SV_D_u8(v) wk_f64_to_u8(v)
#define SV_D_u32(v) wk_f64_to_u32(v)
#define SV_D_i16(v) wk_f64_to_i16(v)
#define SV_D_i32(v) wk_f64_to_i32(v)
#define SV_D_i64(v) wk_f64_to_i64(v)
#define SV_D_bf16(v) wk_f64_to_bf16(v)
#define SV_D_f16(v) wk_f64_to_f16(v)
#define SV_D_f32(v) ((float)(v))
#define SV_D_f64(v) (v)
#define SV_D_f8(v) wk_f64_to_f8e4m3(v)

#define DEF_CVT(NAME, TS, TD, KT, LD, SV)                                       \
    static void NAME(char *const *p, const int64_t *st, int64_t n, const void *prm) \
    {                                                                           \
        (void)prm;                                                              \
        TD *d = (TD *)p[0];                                                     \
        const TS *s = (const TS *)p[1];                                         \
        const int64_t ds = st[0], ss = st[1];                                   \
        if (ds == 1 && ss == 1) {                                               \
            for (int64_t i = 0; i < n; i++) {                                   \
                KT v = LD(s[i]);                                                \
                d[i] = SV(v);                                                   \
            }                                                                   \
        } else {                                                                \
            for (int64_t i = 0; i < n; i++) {                                   \
                KT v = LD(s[i * ss]);                                           \
                d[i * ds] = SV(v);                                              \
            }                                                                   \
        }                                                                       \
    }

/* storage type of each dst dtype */
#define TD_u8 uint8_t
#define TD_u32 uint32_t
#define TD_i16 int16_t
#define TD_i32 int32_t
#define TD_i64 int64_t
#define TD_bf16 uint16_t
#define TD_f16 uint16_t
#define TD_f32 float
#define TD_f64 double
#define TD_f8 uint8_t

#define CVT_ONE(DN, SN, TS, K, LD) \
    DEF_CVT(cvt_##SN##_##DN, TS, TD_##DN, KT_##K(TS), LD, SV_##K##_##DN)
#define CVT_ROW(SN, TS, K, LD, unused) CVT_DTYPES_D(CVT_ONE, SN, TS, K, LD)
CVT_DTYPES(CVT_ROW, 0)

#define CVT_TBL_ONE(DN, SN) cvt_##SN##_##DN,
#define CVT_TBL_ROW(SN, TS, K, LD, unused) { CVT_DTYPES_D(CVT_TBL_ONE, SN) },
/* cvt_table[src][dst], in wk_dtype order */
static const wk_ew_row_fn cvt_table[WK_DENSE_DTYPE_COUNT][WK_DENSE_DTYPE_COUNT] = { CVT_DTYPES(CVT_TBL_ROW, 0) };
_Static_assert(WK_DENSE_DTYPE_COUNT == 10, "cvt_table lists the 10 dense dtypes");
_Static_assert(WK_U8 == 0 && WK_U32 == 1 && WK_I16 == 2 && WK_I32 == 3 && WK_I64 == 4 && WK_BF16 == 5 &&
                   WK_F16 == 6 && WK_F32 == 7 && WK_F64 == 8 && WK_F8E4M3 == 9,
               "CVT_DTYPES follows wk_dtype order");

/* ---- hot contiguous conversions with AVX2/F16C variants ---------------- */

#if WK_EW_X86
WK_TARGET_AVX2 static void f32_to_f16_f16c(uint16_t *d, const float *s, int64_t n)
{
    const __m256 sign = _mm256_castsi256_ps(_mm256_set1_epi32((int)0x80000000u));
    const __m256 qnan = _mm256_castsi256_ps(_mm256_set1_epi32(0x7FC00000));
    int64_t i = 0;
    for (; i + 8 <= n; i += 8) {
        __m256 x = _mm256_loadu_ps(s + i);
        /* every NaN becomes sign | quiet NaN, as wk_f32_to_f16 gives */
        __m256 isnan = _mm256_cmp_ps(x, x, _CMP_UNORD_Q);
        x = _mm256_blendv_ps(x, _mm256_or_ps(_mm256_and_ps(x, sign), qnan), isnan);
        __m128i h = _mm256_cvtps_ph(x, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
        _mm_storeu_si128((__m128i *)(d + i), h);
    }
    for (; i < n; i++) d[i] = wk_ew_f32_to_f16(s[i]);
}

WK_TARGET_AVX2 static void f32_to_bf16_avx2(uint16_t *d, const float *s, int64_t n)
{
    for (int64_t i = 0; i < n; i++) d[i] = wk_ew_f32_to_bf16(s[i]);
}

WK_TARGET_AVX2 static void f16_to_f32_avx2(float *d, const uint16_t *s, int64_t n)
{
    for (int64_t i = 0; i < n; i++) d[i] = wk_ew_f16_to_f32(s[i]);
}

WK_TARGET_AVX2 static void bf16_to_f32_avx2(float *d, const uint16_t *s, int64_t n)
{
    for (int64_t i = 0; i < n; i++) d[i] = wk_bf16_to_f32(s[i]);
}
#endif

#if WK_EW_X86
#define HOT_CVT(NAME, TS, TD, FAST)                                             \
    static void NAME(char *const *p, const int64_t *st, int64_t n, const void *prm) \
    {                                                                           \
        if (st[0] == 1 && st[1] == 1 && wk_ew_have_avx2())                      \
            FAST((TD *)p[0], (const TS *)p[1], n);                              \
        else                                                                    \
            cvt_##NAME(p, st, n, prm);                                          \
    }
HOT_CVT(f32_f16, float, uint16_t, f32_to_f16_f16c)
HOT_CVT(f32_bf16, float, uint16_t, f32_to_bf16_avx2)
HOT_CVT(f16_f32, uint16_t, float, f16_to_f32_avx2)
HOT_CVT(bf16_f32, uint16_t, float, bf16_to_f32_avx2)
#endif

static wk_ew_row_fn cvt_fn(wk_dtype s, wk_dtype d)
{
#if WK_EW_X86
    if (s == WK_F32 && d == WK_F16) return f32_f16;
    if (s == WK_F32 && d == WK_BF16) return f32_bf16;
    if (s == WK_F16 && d == WK_F32) return f16_f32;
    if (s == WK_BF16 && d == WK_F32) return bf16_f32;
#endif
    return cvt_table[s][d];
}

/* ======================================================================
 * Entry points
 * ==================================================================== */

static wk_status check_dtype(wk_dtype dt, const char *what)
{
    if ((unsigned)dt >= WK_DENSE_DTYPE_COUNT)
        return WK_CPU_ERROR(WK_ERR_DTYPE, "%s has a dtype the cpu cannot copy (%d)", what, (int)dt);
    return WK_OK;
}

wk_status wk_cpu_copy(void *ctx, const wk_view *dst, const wk_view *src)
{
    (void)ctx;
    wk_status st;
    if ((st = check_dtype(dst->dtype, "copy destination")) != WK_OK) return st;
    if ((st = check_dtype(src->dtype, "copy source")) != WK_OK) return st;
    if (src->rank != dst->rank)
        return WK_CPU_ERROR(WK_ERR_SHAPE, "copy of a rank-%d view into a rank-%d view", src->rank, dst->rank);
    const wk_view *views[2] = { dst, src };
    wk_ew_row_fn fn = dst->dtype == src->dtype ? copy_bits_fn(wk_cpu_dtype_size(dst->dtype))
                                               : cvt_fn(src->dtype, dst->dtype);
    wk_ew_run(2, views, fn, NULL);
    return WK_OK;
}

typedef struct copy2d_job {
    char *dst;
    const char *src;
    size_t row_bytes;
    int64_t dst_stride, src_stride;  /* bytes */
} copy2d_job;

static void copy2d_rows(void *arg, int64_t begin, int64_t end)
{
    const copy2d_job *j = arg;
    for (int64_t r = begin; r < end; r++)
        memcpy(j->dst + r * j->dst_stride, j->src + r * j->src_stride, j->row_bytes);
}

wk_status wk_cpu_copy2d(void *ctx, void *dst_base, const void *src_base, wk_dtype dtype,
                        int64_t rows, int64_t cols, int64_t dst_stride, int64_t src_stride,
                        int64_t dst_offset, int64_t src_offset)
{
    (void)ctx;
    wk_status st;
    if ((st = check_dtype(dtype, "copy2d")) != WK_OK) return st;
    if (rows < 0 || cols < 0)
        return WK_CPU_ERROR(WK_ERR_SHAPE, "copy2d of %lld rows of %lld elements", (long long)rows, (long long)cols);
    if (rows == 0 || cols == 0) return WK_OK;
    const int64_t es = (int64_t)wk_cpu_dtype_size(dtype);
    copy2d_job j = {
        .dst = (char *)dst_base + dst_offset * es,
        .src = (const char *)src_base + src_offset * es,
        .row_bytes = (size_t)(cols * es),
        .dst_stride = dst_stride * es,
        .src_stride = src_stride * es,
    };
    int64_t grain = WK_CPU_GRAIN / cols;
    wk_parallel_for(rows, grain > 0 ? grain : 1, copy2d_rows, &j);
    return WK_OK;
}

wk_status wk_cpu_const_set(void *ctx, const wk_view *dst, const void *value)
{
    (void)ctx;
    wk_status st;
    if ((st = check_dtype(dst->dtype, "const_set destination")) != WK_OK) return st;
    size_t es = wk_cpu_dtype_size(dst->dtype);
    const wk_view *views[1] = { dst };
    wk_ew_run(1, views, es == 1 ? fill_b1 : es == 2 ? fill_b2 : es == 4 ? fill_b4 : fill_b8, value);
    return WK_OK;
}
