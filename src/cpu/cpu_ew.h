/* cpu_ew.h — what the CPU elementwise files (cpu_elementwise.c,
 * cpu_copy.c; the driver itself is cpu_ew.c) share: the strided multi-operand row driver, run-time CPU
 * feature dispatch, and branch-free narrow-float conversions that the
 * compiler can vectorize.
 *
 * Kernels are written as "row functions": fn(p, st, n, params) processes n
 * elements of each operand, operand k starting at p[k] (a byte pointer to
 * its first element) with element stride st[k]; operand 0 is the
 * destination. wk_ew_run coalesces the views' dims, splits the elements
 * over the thread pool in chunks of >= WK_CPU_GRAIN and calls the row
 * function once per innermost-dim run of each chunk, so a contiguous op is
 * one call per chunk with every stride 1.
 */
#ifndef WICK_CPU_EW_H
#define WICK_CPU_EW_H

#include "cpu_internal.h"

typedef void (*wk_ew_row_fn)(char *const *p, const int64_t *st, int64_t n, const void *params);

/* Runs fn over every element of views[0..nops-1] (nops <= 4), which share
 * views[0]'s dims. Nothing happens when there are no elements. */
void wk_ew_run(int nops, const wk_view *const *views, wk_ew_row_fn fn, const void *params);

/* ---- run-time dispatch (x86-64: AVX2 + FMA + F16C variants) ----------- */

#if (defined(__x86_64__) || defined(__i386__)) && (defined(__GNUC__) || defined(__clang__))
#define WK_EW_X86 1
#define WK_TARGET_AVX2 __attribute__((target("avx2,fma,f16c")))
/* true when the CPU has AVX2, FMA and F16C (checked once) */
bool wk_ew_have_avx2(void);
/* AVX-512 (F, VL, BW, DQ) with 512-bit vectors, for the hottest unary
 * loops; true only when the OS saves the 512-bit state (checked once). */
#if defined(__clang__)
#define WK_TARGET_AVX512 __attribute__((target("avx512f,avx512vl,avx512bw,avx512dq,avx2,fma,f16c")))
#else
#define WK_TARGET_AVX512 __attribute__((target("avx512f,avx512vl,avx512bw,avx512dq,avx2,fma,f16c,prefer-vector-width=512")))
#endif
bool wk_ew_have_avx512(void);
/* the above plus AVX512-VNNI (8-bit dot products) and BITALG (bit
 * shuffles): the integer qmatmul's widest kernels (cpu_qdot_vnni.c) */
#define WK_TARGET_VNNI \
    __attribute__((target("avx512f,avx512vl,avx512bw,avx512dq,avx512vnni,avx512bitalg,avx2,fma,f16c")))
bool wk_ew_have_avx512vnni(void);
#else
#define WK_EW_X86 0
#endif

/* ---- narrow floats, branch-free ----------------------------------------
 * Bit-identical to scalar.h's conversions (an exhaustive test checks this)
 * in the default floating-point environment; written with selects instead
 * of branches so that loops using them vectorize. */

static inline float wk_ew_f16_to_f32(uint16_t h)
{
    uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
    uint32_t em = h & 0x7FFFu;
    uint32_t nrm = (em << 13) + (112u << 23);                    /* rebias   */
    uint32_t inf = (em << 13) | 0x7F800000u;                     /* Inf/NaN  */
    uint32_t sub = wk_f32_bits((float)(int32_t)em * 0x1p-24f);   /* exact    */
    uint32_t r = em >= 0x7C00u ? inf : em >= 0x0400u ? nrm : sub;
    return wk_bits_f32(sign | r);
}

static inline uint16_t wk_ew_f32_to_f16(float f)
{
    uint32_t u = wk_f32_bits(f);
    uint32_t sign = (u >> 16) & 0x8000u;
    uint32_t x = u & 0x7FFFFFFFu;
    uint32_t nrm = (x + 0xC8000FFFu + ((x >> 13) & 1u)) >> 13;  /* rebias + round */
    /* below 2^-14: adding 0.5 (ulp 2^-24) rounds to the f16 quantum */
    uint32_t sub = wk_f32_bits(wk_bits_f32(x) + 0.5f) - 0x3F000000u;
    uint32_t r = x < 0x38800000u ? sub : nrm;
    r = x >= 0x477FF000u ? 0x7C00u : r;                          /* Inf, overflow */
    r = x > 0x7F800000u ? 0x7E00u : r;                           /* NaN      */
    return (uint16_t)(sign | r);
}

static inline uint16_t wk_ew_f32_to_bf16(float f)
{
    uint32_t x = wk_f32_bits(f);
    uint32_t r = (x + 0x7FFFu + ((x >> 16) & 1u)) >> 16;
    uint32_t q = (x >> 16) | 0x0040u;                            /* quiet NaN */
    return (uint16_t)((x & 0x7FFFFFFFu) > 0x7F800000u ? q : r);
}

static inline float wk_ew_f8_to_f32(uint8_t b)
{
    uint32_t sign = (uint32_t)(b & 0x80u) << 24;
    uint32_t em = b & 0x7Fu;
    uint32_t nrm = (em << 20) + (120u << 23);
    uint32_t sub = wk_f32_bits((float)(int32_t)em * 0x1p-9f);
    uint32_t r = em == 0x7Fu ? 0x7FC00000u : em >= 0x08u ? nrm : sub;
    return wk_bits_f32(sign | r);
}

static inline uint8_t wk_ew_f32_to_f8(float f)
{
    uint32_t u = wk_f32_bits(f);
    uint32_t sign = (u >> 24) & 0x80u;
    uint32_t x = u & 0x7FFFFFFFu;
    uint32_t nrm = (x - (120u << 23) + 0x7FFFFu + ((x >> 20) & 1u)) >> 20;
    /* below 2^-6: adding 2^14 (ulp 2^-9) rounds to the f8 quantum */
    uint32_t sub = wk_f32_bits(wk_bits_f32(x) + 16384.0f) - 0x46800000u;
    uint32_t r = x < 0x3C800000u ? sub : nrm;
    r = x >= 0x43E80000u ? 0x7Eu : r;                            /* >= 464: saturate */
    r = x > 0x7F800000u ? 0x7Fu : r;                             /* NaN      */
    return (uint8_t)(sign | r);
}

#endif /* WICK_CPU_EW_H */
