/* cpu_qdot.c — the cpu's integer path of wk_qmatmul: quantized
 * activations and integer dot products, as llama.cpp's CPU kernels do.
 *
 * wk_cpu_qmatmul (cpu_quant.c) sends a call here unless the exact path is
 * asked for (wk_cpu_env.qdot: the WICK_CPU_QDOT environment variable, "0"
 * for the exact path, read when the backend is made and by
 * wk_env_refresh; docs/cpu-qdot.md). The exact path decodes the weights
 * to f32 and sums in f32: its logits match transformers'.
 *
 * What it computes (ggml's ggml_vec_dot_<w>_<a>, their generic C):
 *   - each row of x is quantized once per call, by llama.cpp's reference
 *     quantizers of cpu_quant.c, to the activation type ggml pairs with
 *     the weight type: q8_0 for q4_0, q5_0 and q8_0; q8_1 for q4_1 and
 *     q5_1 (q8_0 plus s = d * sum of the quants: ggml stores it as f16,
 *     which overflows for blocks of x beyond about 2000; here it is the
 *     exact product in f32); q8_K for
 *     q2_K, q3_K, q4_K, q5_K and q6_K (d in f32, bsums: sums of 16 quants);
 *     q8_0 for iq4_nl, q8_K for iq4_xs (as ggml pairs them);
 *   - each weight block is unpacked to signed 8-bit values q (q4_0:
 *     -8..7, q4_1: 0..15, q5_0: -16..15, q5_1: 0..31, q8_0: the bytes,
 *     q2_K: 0..3, q3_K: -4..3, q4_K: 0..15, q5_K: 0..31, q6_K: -32..31,
 *     iq4_nl/iq4_xs: the code's value in wk_iq4nl_values, -127..113;
 *     iq4_xs's scale is its 6-bit value - 32),
 *     one integer scale sc and min mn per 16 values (K types; q3_K's
 *     scale is its 6-bit value - 32, q2_K's min is the high nibble) and
 *     the block's float factors d (and m or dmin);
 *   - 32-blocks: y += (d_w d_a) * sum(q_w q_a) [+ m_w s_a];
 *     256-blocks: y += (d_w d_a) * sum_g sc_g sum(q_w q_a over g)
 *                      [- (dmin_w d_a) * sum_g mn_g bsum_g].
 *   The integer sums are exact (int32 cannot overflow: at most 16 x 128 x
 *   127 x 128 per group, 16 groups); only the float factors and the
 *   float sum over blocks round.
 *
 * Two sets of kernels compute the same integer sums: portable C, and
 * AVX2 (_mm256_maddubs_epi16 on |w| and sign(a, w), as ggml does; on w
 * itself for the types with a min, whose quants are unsigned), chosen at
 * run time by CPUID (cpu_ew.c) so one binary runs everywhere;
 * WICK_CPU_QDOT=portable forces the C ones. Float accumulation order
 * differs between them (AVX2 keeps 8 lanes). The AVX2 side also has
 * vector unpackers, a 4-rows-of-x kernel (prefill) and, for up to 4 rows
 * of x, kernels that read the 32-blocks and q4_K/q6_K in place (decode).
 *
 * File map: selection; weight blocks unpacked (C per block, AVX2 per row)
 * and the type table; dot products (C, AVX2, AVX2 x 4 rows, AVX2 in
 * place); the product (x quantized, tasks, the entry point).
 *
 * Threads: as the f32 path, tasks of 8 (decode) or 32 (prefill) weight
 * rows; a task unpacks its rows once (into a buffer per thread, kept for
 * the call) and takes their dot products with every quantized row of x,
 * or reads them in place for few rows of x. The rows of x are quantized
 * in parallel first.
 */
#if defined(__clang__)
#pragma STDC FP_CONTRACT OFF   /* (gcc: -std=c11 does not contract) the kernels' float sums as written */
#endif
#include <stdatomic.h>
#include <stdlib.h>
#include "cpu_internal.h"
#include "cpu_qdot.h"
#include "cpu_ew.h"
#include "../iq_tables.h"
#if WK_EW_X86
#include <immintrin.h>
#endif

#define QK_K 256

static inline float ld_h(const uint8_t *p)
{
    uint16_t h;
    memcpy(&h, p, 2);
    return wk_f16_to_f32(h);
}

/* ---- selection ---------------------------------------------------------------- */

int wk_cpu_qdot_mode(void)
{
    /* the integer path by default; "0" (or "exact"): the f32 path */
    const char *e = getenv("WICK_CPU_QDOT");
    if (e && (!strcmp(e, "0") || !strcmp(e, "exact"))) return WK_QDOT_OFF;
    if (e && !strcmp(e, "portable")) return WK_QDOT_PORTABLE;
    if (e && !strcmp(e, "avx2")) return WK_QDOT_AVX2;
    return WK_QDOT_ON;
}

/* ---- weight blocks unpacked ------------------------------------------------------
 * One block to q[B] (int8), and for 256-blocks sc[16], mn[16] (per 16
 * values); d[0] and dm[0]: the float factors. */

static void up_q4_0(const uint8_t *b, int8_t *q, int16_t *sc, int16_t *mn, float *d, float *dm)
{
    (void)sc, (void)mn;
    *d = ld_h(b);
    *dm = 0;
    const uint8_t *qs = b + 2;
    for (int j = 0; j < 16; j++) {
        q[j] = (int8_t)((qs[j] & 0x0F) - 8);
        q[j + 16] = (int8_t)((qs[j] >> 4) - 8);
    }
}

static void up_q4_1(const uint8_t *b, int8_t *q, int16_t *sc, int16_t *mn, float *d, float *dm)
{
    (void)sc, (void)mn;
    *d = ld_h(b);
    *dm = ld_h(b + 2);
    const uint8_t *qs = b + 4;
    for (int j = 0; j < 16; j++) {
        q[j] = (int8_t)(qs[j] & 0x0F);
        q[j + 16] = (int8_t)(qs[j] >> 4);
    }
}

static void up_q5_0(const uint8_t *b, int8_t *q, int16_t *sc, int16_t *mn, float *d, float *dm)
{
    (void)sc, (void)mn;
    *d = ld_h(b);
    *dm = 0;
    uint32_t qh;
    memcpy(&qh, b + 2, 4);
    const uint8_t *qs = b + 6;
    for (int j = 0; j < 16; j++) {
        const int h0 = (int)((qh >> j) & 1u) << 4, h1 = (int)((qh >> (j + 16)) & 1u) << 4;
        q[j] = (int8_t)(((qs[j] & 0x0F) | h0) - 16);
        q[j + 16] = (int8_t)(((qs[j] >> 4) | h1) - 16);
    }
}

static void up_q5_1(const uint8_t *b, int8_t *q, int16_t *sc, int16_t *mn, float *d, float *dm)
{
    (void)sc, (void)mn;
    *d = ld_h(b);
    *dm = ld_h(b + 2);
    uint32_t qh;
    memcpy(&qh, b + 4, 4);
    const uint8_t *qs = b + 8;
    for (int j = 0; j < 16; j++) {
        const int h0 = (int)((qh >> j) & 1u) << 4, h1 = (int)((qh >> (j + 16)) & 1u) << 4;
        q[j] = (int8_t)((qs[j] & 0x0F) | h0);
        q[j + 16] = (int8_t)((qs[j] >> 4) | h1);
    }
}

static void up_q8_0(const uint8_t *b, int8_t *q, int16_t *sc, int16_t *mn, float *d, float *dm)
{
    (void)sc, (void)mn;
    *d = ld_h(b);
    *dm = 0;
    memcpy(q, b + 2, 32);
}

/* q2_K: scales[16] (low nibble scale, high nibble min), qs[64], d, dmin */
static void up_q2_k(const uint8_t *b, int8_t *q, int16_t *sc, int16_t *mn, float *d, float *dm)
{
    *d = ld_h(b + 80);
    *dm = ld_h(b + 82);
    for (int g = 0; g < 16; g++) {
        sc[g] = b[g] & 0xF;
        mn[g] = b[g] >> 4;
    }
    const uint8_t *qs = b + 16;
    for (int h = 0; h < 2; h++, qs += 32)
        for (int j = 0; j < 4; j++)
            for (int l = 0; l < 32; l++) q[128 * h + 32 * j + l] = (int8_t)((qs[l] >> (2 * j)) & 3);
}

/* q3_K: hmask[32], qs[64], scales[12] (16 6-bit values), d */
static void up_q3_k(const uint8_t *b, int8_t *q, int16_t *sc, int16_t *mn, float *d, float *dm)
{
    *d = ld_h(b + 108);
    *dm = 0;
    const uint8_t *s = b + 96;
    for (int g = 0; g < 16; g++) {
        /* low 4 bits: byte g % 8, nibble g / 8; high 2 bits: byte 8 + g % 4, bits 2 (g / 4) */
        const int lo = (s[g % 8] >> (4 * (g / 8))) & 0xF, hi = (s[8 + g % 4] >> (2 * (g / 4))) & 3;
        sc[g] = (int16_t)((lo | (hi << 4)) - 32);
        mn[g] = 0;
    }
    const uint8_t *hm = b, *qs = b + 32;
    for (int h = 0; h < 2; h++, qs += 32)
        for (int j = 0; j < 4; j++) {
            const int bit = 4 * h + j;
            for (int l = 0; l < 32; l++)
                q[128 * h + 32 * j + l] = (int8_t)(((qs[l] >> (2 * j)) & 3) - ((hm[l] >> bit) & 1 ? 0 : 4));
        }
}

/* the 6-bit scale and min of sub-block j (32 values) of q4_K/q5_K */
static inline void scale_min_k4(int j, const uint8_t *s, int *sc, int *m)
{
    if (j < 4) {
        *sc = s[j] & 63;
        *m = s[j + 4] & 63;
    } else {
        *sc = (s[j + 4] & 0xF) | ((s[j - 4] >> 6) << 4);
        *m = (s[j + 4] >> 4) | ((s[j] >> 6) << 4);
    }
}

/* q4_K: d, dmin, scales[12], qs[128] */
static void up_q4_k(const uint8_t *b, int8_t *q, int16_t *sc, int16_t *mn, float *d, float *dm)
{
    *d = ld_h(b);
    *dm = ld_h(b + 2);
    for (int j = 0; j < 8; j++) {
        int s, m;
        scale_min_k4(j, b + 4, &s, &m);
        sc[2 * j] = sc[2 * j + 1] = (int16_t)s;
        mn[2 * j] = mn[2 * j + 1] = (int16_t)m;
    }
    const uint8_t *qs = b + 16;
    for (int j = 0; j < 4; j++, qs += 32)
        for (int l = 0; l < 32; l++) {
            q[64 * j + l] = (int8_t)(qs[l] & 0xF);
            q[64 * j + 32 + l] = (int8_t)(qs[l] >> 4);
        }
}

/* q5_K: d, dmin, scales[12], qh[32], qs[128] */
static void up_q5_k(const uint8_t *b, int8_t *q, int16_t *sc, int16_t *mn, float *d, float *dm)
{
    *d = ld_h(b);
    *dm = ld_h(b + 2);
    for (int j = 0; j < 8; j++) {
        int s, m;
        scale_min_k4(j, b + 4, &s, &m);
        sc[2 * j] = sc[2 * j + 1] = (int16_t)s;
        mn[2 * j] = mn[2 * j + 1] = (int16_t)m;
    }
    const uint8_t *qh = b + 16, *qs = b + 48;
    for (int j = 0; j < 4; j++, qs += 32)
        for (int l = 0; l < 32; l++) {
            q[64 * j + l] = (int8_t)((qs[l] & 0xF) | (((qh[l] >> (2 * j)) & 1) << 4));
            q[64 * j + 32 + l] = (int8_t)((qs[l] >> 4) | (((qh[l] >> (2 * j + 1)) & 1) << 4));
        }
}

/* q6_K: ql[128], qh[64], scales[16] (int8), d */
static void up_q6_k(const uint8_t *b, int8_t *q, int16_t *sc, int16_t *mn, float *d, float *dm)
{
    *d = ld_h(b + 208);
    *dm = 0;
    for (int g = 0; g < 16; g++) {
        sc[g] = (int8_t)b[192 + g];
        mn[g] = 0;
    }
    const uint8_t *ql = b, *qh = b + 128;
    for (int h = 0; h < 2; h++, ql += 64, qh += 32, q += 128)
        for (int l = 0; l < 32; l++) {
            q[l] = (int8_t)(((ql[l] & 0xF) | (((qh[l] >> 0) & 3) << 4)) - 32);
            q[l + 32] = (int8_t)(((ql[l + 32] & 0xF) | (((qh[l] >> 2) & 3) << 4)) - 32);
            q[l + 64] = (int8_t)(((ql[l] >> 4) | (((qh[l] >> 4) & 3) << 4)) - 32);
            q[l + 96] = (int8_t)(((ql[l + 32] >> 4) | (((qh[l] >> 6) & 3) << 4)) - 32);
        }
}

/* iq4_nl: d, qs[16]: the codes' values in wk_iq4nl_values (-127 .. 113) */
static void up_iq4_nl(const uint8_t *b, int8_t *q, int16_t *sc, int16_t *mn, float *d, float *dm)
{
    (void)sc, (void)mn;
    *d = ld_h(b);
    *dm = 0;
    const uint8_t *qs = b + 2;
    for (int j = 0; j < 16; j++) {
        q[j] = wk_iq4nl_values[qs[j] & 0xF];
        q[j + 16] = wk_iq4nl_values[qs[j] >> 4];
    }
}

/* iq4_xs: d, scales_h, scales_l[4], qs[128]: per 32 values a 6-bit scale
 * - 32 (both of its groups of 16) and iq4_nl's codes */
static void up_iq4_xs(const uint8_t *b, int8_t *q, int16_t *sc, int16_t *mn, float *d, float *dm)
{
    *d = ld_h(b);
    *dm = 0;
    uint16_t sh;
    memcpy(&sh, b + 2, 2);
    for (int ib = 0; ib < 8; ib++) {
        const int ls = ((b[4 + ib / 2] >> (4 * (ib % 2))) & 0xF) | (((sh >> (2 * ib)) & 3) << 4);
        sc[2 * ib] = sc[2 * ib + 1] = (int16_t)(ls - 32);
        mn[2 * ib] = mn[2 * ib + 1] = 0;
        const uint8_t *qs = b + 8 + 16 * ib;
        for (int j = 0; j < 16; j++) {
            q[32 * ib + j] = wk_iq4nl_values[qs[j] & 0xF];
            q[32 * ib + j + 16] = wk_iq4nl_values[qs[j] >> 4];
        }
    }
}

/* nb blocks of a row: the block function over each (portable), or one
 * loop of vector code (AVX2, for the types the models in use have) */
typedef void (*unpack_row_fn)(const uint8_t *b, int64_t nb, int8_t *q, int16_t *sc, int16_t *mn, float *d, float *dm);

#define UNPACK_ROW(T, B, BB)                                                                                       \
    static void upr_##T(const uint8_t *b, int64_t nb, int8_t *q, int16_t *sc, int16_t *mn, float *d, float *dm) \
    {                                                                                                          \
        for (int64_t c = 0; c < nb; c++)                                                                       \
            up_##T(b + c * (BB), q + c * (B), (B) == QK_K ? sc + c * 16 : NULL, (B) == QK_K ? mn + c * 16 : NULL, \
                   d + c, dm + c);                                                                             \
    }
UNPACK_ROW(q4_0, 32, 18)
UNPACK_ROW(q4_1, 32, 20)
UNPACK_ROW(q5_0, 32, 22)
UNPACK_ROW(q5_1, 32, 24)
UNPACK_ROW(q8_0, 32, 34)
UNPACK_ROW(q2_k, QK_K, 84)
UNPACK_ROW(q3_k, QK_K, 110)
UNPACK_ROW(q4_k, QK_K, 144)
UNPACK_ROW(q5_k, QK_K, 176)
UNPACK_ROW(q6_k, QK_K, 210)
UNPACK_ROW(iq4_nl, 32, 18)
UNPACK_ROW(iq4_xs, QK_K, 136)

#if WK_EW_X86
WK_TARGET_AVX2 static inline float ld_h_f16c(const uint8_t *p)
{
    uint16_t h;
    memcpy(&h, p, 2);
    return _cvtsh_ss(h);
}

/* 16 bytes of nibbles -> 32 values: low nibbles, then high ones, minus off */
WK_TARGET_AVX2 static inline void nibbles32(const uint8_t *qs, int8_t *q, int off)
{
    const __m128i b = _mm_loadu_si128((const __m128i *)qs), m4 = _mm_set1_epi8(0x0F), o = _mm_set1_epi8((char)off);
    _mm_storeu_si128((__m128i *)q, _mm_sub_epi8(_mm_and_si128(b, m4), o));
    _mm_storeu_si128((__m128i *)(q + 16), _mm_sub_epi8(_mm_and_si128(_mm_srli_epi16(b, 4), m4), o));
}

WK_TARGET_AVX2 static void upr_q4_0_avx2(const uint8_t *b, int64_t nb, int8_t *q, int16_t *sc, int16_t *mn, float *d,
                                         float *dm)
{
    (void)sc, (void)mn;
    for (int64_t c = 0; c < nb; c++, b += 18, q += 32) {
        d[c] = ld_h_f16c(b);
        dm[c] = 0;
        nibbles32(b + 2, q, 8);
    }
}

WK_TARGET_AVX2 static void upr_q4_1_avx2(const uint8_t *b, int64_t nb, int8_t *q, int16_t *sc, int16_t *mn, float *d,
                                         float *dm)
{
    (void)sc, (void)mn;
    for (int64_t c = 0; c < nb; c++, b += 20, q += 32) {
        d[c] = ld_h_f16c(b);
        dm[c] = ld_h_f16c(b + 2);
        nibbles32(b + 4, q, 0);
    }
}

WK_TARGET_AVX2 static void upr_q8_0_avx2(const uint8_t *b, int64_t nb, int8_t *q, int16_t *sc, int16_t *mn, float *d,
                                         float *dm)
{
    (void)sc, (void)mn;
    for (int64_t c = 0; c < nb; c++, b += 34, q += 32) {
        d[c] = ld_h_f16c(b);
        dm[c] = 0;
        _mm256_storeu_si256((__m256i *)q, _mm256_loadu_si256((const __m256i *)(b + 2)));
    }
}

/* 32 bits -> 32 bytes: 0xFF where the bit is set (ggml's bytes_from_bits_32) */
WK_TARGET_AVX2 static inline __m256i bits_to_bytes(const uint8_t *p)
{
    uint32_t x32;
    memcpy(&x32, p, 4);
    const __m256i shuf = _mm256_set_epi64x(0x0303030303030303, 0x0202020202020202, 0x0101010101010101, 0);
    const __m256i bytes = _mm256_shuffle_epi8(_mm256_set1_epi32((int)x32), shuf);
    return _mm256_cmpeq_epi8(_mm256_or_si256(bytes, _mm256_set1_epi64x(0x7fbfdfeff7fbfdfe)), _mm256_set1_epi64x(-1));
}

/* the 32 values of a q5_0 block (-16..15: the nibble, or nibble - 16 where
 * the high bit is clear) and of a q5_1 block (0..31), from qh and qs */
WK_TARGET_AVX2 static inline __m256i q5_0_values(const uint8_t *qh, const uint8_t *qs)
{
    const __m128i t = _mm_loadu_si128((const __m128i *)qs);
    const __m256i nib = _mm256_and_si256(_mm256_inserti128_si256(_mm256_castsi128_si256(t), _mm_srli_epi16(t, 4), 1),
                                         _mm256_set1_epi8(0x0F));
    return _mm256_or_si256(nib, _mm256_andnot_si256(bits_to_bytes(qh), _mm256_set1_epi8((char)0xF0)));
}
WK_TARGET_AVX2 static inline __m256i q5_1_values(const uint8_t *qh, const uint8_t *qs)
{
    const __m128i t = _mm_loadu_si128((const __m128i *)qs);
    const __m256i nib = _mm256_and_si256(_mm256_inserti128_si256(_mm256_castsi128_si256(t), _mm_srli_epi16(t, 4), 1),
                                         _mm256_set1_epi8(0x0F));
    return _mm256_or_si256(nib, _mm256_and_si256(bits_to_bytes(qh), _mm256_set1_epi8(0x10)));
}

WK_TARGET_AVX2 static void upr_q5_0_avx2(const uint8_t *b, int64_t nb, int8_t *q, int16_t *sc, int16_t *mn, float *d,
                                         float *dm)
{
    (void)sc, (void)mn;
    for (int64_t c = 0; c < nb; c++, b += 22, q += 32) {
        d[c] = ld_h_f16c(b);
        dm[c] = 0;
        _mm256_storeu_si256((__m256i *)q, q5_0_values(b + 2, b + 6));
    }
}

WK_TARGET_AVX2 static void upr_q5_1_avx2(const uint8_t *b, int64_t nb, int8_t *q, int16_t *sc, int16_t *mn, float *d,
                                         float *dm)
{
    (void)sc, (void)mn;
    for (int64_t c = 0; c < nb; c++, b += 24, q += 32) {
        d[c] = ld_h_f16c(b);
        dm[c] = ld_h_f16c(b + 2);
        _mm256_storeu_si256((__m256i *)q, q5_1_values(b + 4, b + 8));
    }
}

WK_TARGET_AVX2 static void upr_q4_k_avx2(const uint8_t *b, int64_t nb, int8_t *q, int16_t *sc, int16_t *mn, float *d,
                                         float *dm)
{
    const __m256i m4 = _mm256_set1_epi8(0x0F);
    for (int64_t c = 0; c < nb; c++, b += 144, q += QK_K, sc += 16, mn += 16) {
        d[c] = ld_h_f16c(b);
        dm[c] = ld_h_f16c(b + 2);
        for (int j = 0; j < 8; j++) {
            int s, m;
            scale_min_k4(j, b + 4, &s, &m);
            sc[2 * j] = sc[2 * j + 1] = (int16_t)s;
            mn[2 * j] = mn[2 * j + 1] = (int16_t)m;
        }
        for (int j = 0; j < 4; j++) {
            const __m256i v = _mm256_loadu_si256((const __m256i *)(b + 16 + 32 * j));
            _mm256_storeu_si256((__m256i *)(q + 64 * j), _mm256_and_si256(v, m4));
            _mm256_storeu_si256((__m256i *)(q + 64 * j + 32), _mm256_and_si256(_mm256_srli_epi16(v, 4), m4));
        }
    }
}

WK_TARGET_AVX2 static void upr_q6_k_avx2(const uint8_t *b, int64_t nb, int8_t *q, int16_t *sc, int16_t *mn, float *d,
                                         float *dm)
{
    const __m256i m4 = _mm256_set1_epi8(0x0F), m3 = _mm256_set1_epi8(3), m30 = _mm256_set1_epi8(0x30),
                  o = _mm256_set1_epi8(32);
    for (int64_t c = 0; c < nb; c++, b += 210, q += QK_K, sc += 16, mn += 16) {
        d[c] = ld_h_f16c(b + 208);
        dm[c] = 0;
        for (int g = 0; g < 16; g++) {
            sc[g] = (int8_t)b[192 + g];
            mn[g] = 0;
        }
        for (int h = 0; h < 2; h++) {
            const __m256i A = _mm256_loadu_si256((const __m256i *)(b + 64 * h)),
                          B = _mm256_loadu_si256((const __m256i *)(b + 64 * h + 32)),
                          H = _mm256_loadu_si256((const __m256i *)(b + 128 + 32 * h));
            const __m256i h0 = _mm256_slli_epi16(_mm256_and_si256(H, m3), 4);
            const __m256i h1 = _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(H, 2), m3), 4);
            const __m256i h2 = _mm256_and_si256(H, m30);
            const __m256i h3 = _mm256_and_si256(_mm256_srli_epi16(H, 2), m30);
            int8_t *qq = q + 128 * h;
            _mm256_storeu_si256((__m256i *)qq, _mm256_sub_epi8(_mm256_or_si256(_mm256_and_si256(A, m4), h0), o));
            _mm256_storeu_si256((__m256i *)(qq + 32), _mm256_sub_epi8(_mm256_or_si256(_mm256_and_si256(B, m4), h1), o));
            _mm256_storeu_si256((__m256i *)(qq + 64),
                                _mm256_sub_epi8(_mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(A, 4), m4), h2), o));
            _mm256_storeu_si256((__m256i *)(qq + 96),
                                _mm256_sub_epi8(_mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(B, 4), m4), h3), o));
        }
    }
}
/* 16 bytes of iq4 codes -> their 32 values (a table lookup per nibble) */
WK_TARGET_AVX2 static inline void iq4_values32(const uint8_t *qs, int8_t *q)
{
    const __m128i tbl = _mm_loadu_si128((const __m128i *)wk_iq4nl_values), m4 = _mm_set1_epi8(0x0F);
    const __m128i b = _mm_loadu_si128((const __m128i *)qs);
    _mm_storeu_si128((__m128i *)q, _mm_shuffle_epi8(tbl, _mm_and_si128(b, m4)));
    _mm_storeu_si128((__m128i *)(q + 16), _mm_shuffle_epi8(tbl, _mm_and_si128(_mm_srli_epi16(b, 4), m4)));
}

WK_TARGET_AVX2 static void upr_iq4_nl_avx2(const uint8_t *b, int64_t nb, int8_t *q, int16_t *sc, int16_t *mn, float *d,
                                           float *dm)
{
    (void)sc, (void)mn;
    for (int64_t c = 0; c < nb; c++, b += 18, q += 32) {
        d[c] = ld_h_f16c(b);
        dm[c] = 0;
        iq4_values32(b + 2, q);
    }
}

WK_TARGET_AVX2 static void upr_iq4_xs_avx2(const uint8_t *b, int64_t nb, int8_t *q, int16_t *sc, int16_t *mn, float *d,
                                           float *dm)
{
    for (int64_t c = 0; c < nb; c++, b += 136, q += QK_K, sc += 16, mn += 16) {
        d[c] = ld_h_f16c(b);
        dm[c] = 0;
        uint16_t sh;
        memcpy(&sh, b + 2, 2);
        for (int ib = 0; ib < 8; ib++) {
            const int ls = ((b[4 + ib / 2] >> (4 * (ib % 2))) & 0xF) | (((sh >> (2 * ib)) & 3) << 4);
            sc[2 * ib] = sc[2 * ib + 1] = (int16_t)(ls - 32);
            mn[2 * ib] = mn[2 * ib + 1] = 0;
            iq4_values32(b + 8 + 16 * ib, q + 32 * ib);
        }
    }
}
#define AVX2_UP(T) upr_##T##_avx2
#else
#define AVX2_UP(T) NULL
#endif

typedef struct qd_type {
    wk_dtype dt;
    int B, BB;          /* block values, bytes                              */
    wk_dtype act;       /* WK_Q8_0, WK_Q8_1 or WK_Q8_K                      */
    bool mins;          /* a min term (m s, or dmin sum mn bsum)            */
    unpack_row_fn unpack, unpack_avx2;   /* the second NULL: none         */
} qd_type;


static const qd_type QD_TYPES[] = {
    { WK_Q4_0, 32, 18, WK_Q8_0, false, upr_q4_0, AVX2_UP(q4_0) },
    { WK_Q4_1, 32, 20, WK_Q8_1, true, upr_q4_1, AVX2_UP(q4_1) },
    { WK_Q5_0, 32, 22, WK_Q8_0, false, upr_q5_0, AVX2_UP(q5_0) },
    { WK_Q5_1, 32, 24, WK_Q8_1, true, upr_q5_1, AVX2_UP(q5_1) },
    { WK_Q8_0, 32, 34, WK_Q8_0, false, upr_q8_0, AVX2_UP(q8_0) },
    { WK_Q2_K, 256, 84, WK_Q8_K, true, upr_q2_k, NULL },
    { WK_Q3_K, 256, 110, WK_Q8_K, false, upr_q3_k, NULL },
    { WK_Q4_K, 256, 144, WK_Q8_K, true, upr_q4_k, AVX2_UP(q4_k) },
    { WK_Q5_K, 256, 176, WK_Q8_K, true, upr_q5_k, NULL },
    { WK_Q6_K, 256, 210, WK_Q8_K, false, upr_q6_k, AVX2_UP(q6_k) },
    { WK_IQ4_NL, 32, 18, WK_Q8_0, false, upr_iq4_nl, AVX2_UP(iq4_nl) },
    { WK_IQ4_XS, 256, 136, WK_Q8_K, false, upr_iq4_xs, AVX2_UP(iq4_xs) },
};

static const qd_type *qd_type_of(wk_dtype dt)
{
    for (size_t i = 0; i < sizeof QD_TYPES / sizeof QD_TYPES[0]; i++)
        if (QD_TYPES[i].dt == dt) return &QD_TYPES[i];
    return NULL;
}

bool wk_cpu_qdot_supports(wk_dtype dt) { return qd_type_of(dt) != NULL; }

/* ---- dot products of one unpacked weight row with one quantized x row ------------ */


typedef float (*dot_fn)(const qd_rows *w, int64_t wr, const qd_rows *a, int64_t ar, int64_t k, bool mins);

static inline int32_t dot_i8(const int8_t *a, const int8_t *b, int n)
{
    int32_t s = 0;
    for (int i = 0; i < n; i++) s += a[i] * b[i];
    return s;
}

static float dot32_c(const qd_rows *w, int64_t wr, const qd_rows *a, int64_t ar, int64_t k, bool mins)
{
    const int64_t nb = k / 32;
    const int8_t *wq = w->q + wr * k, *aq = a->q + ar * k;
    const float *wd = w->d + wr * nb, *wm = w->dm + wr * nb, *ad = a->d + ar * nb, *as = a->dm + ar * nb;
    float acc = 0;
    for (int64_t b = 0; b < nb; b++) {
        const int32_t s = dot_i8(wq + 32 * b, aq + 32 * b, 32);
        acc += (wd[b] * ad[b]) * (float)s;
        if (mins) acc += wm[b] * as[b];
    }
    return acc;
}

static float dotk_c(const qd_rows *w, int64_t wr, const qd_rows *a, int64_t ar, int64_t k, bool mins)
{
    const int64_t nb = k / QK_K, ng = k / 16;
    const int8_t *wq = w->q + wr * k, *aq = a->q + ar * k;
    const int16_t *sc = w->sc + wr * ng, *mn = w->mn + wr * ng, *bs = a->bs + ar * ng;
    const float *wd = w->d + wr * nb, *wm = w->dm + wr * nb, *ad = a->d + ar * nb;
    float acc = 0;
    for (int64_t b = 0; b < nb; b++) {
        int32_t isum = 0, msum = 0;
        for (int g = 0; g < 16; g++) isum += sc[16 * b + g] * dot_i8(wq + QK_K * b + 16 * g, aq + QK_K * b + 16 * g, 16);
        acc += (wd[b] * ad[b]) * (float)isum;
        if (mins) {
            for (int g = 0; g < 16; g++) msum += mn[16 * b + g] * bs[16 * b + g];
            acc -= (wm[b] * ad[b]) * (float)msum;
        }
    }
    return acc;
}

#if WK_EW_X86
/* 16 sums of adjacent pairs of products of signed bytes: |x| * sign(y, x)
 * (ggml's mul_sum_i8_pairs before its madd) */
WK_TARGET_AVX2 static inline __m256i mul_pairs_i8(__m256i x, __m256i y)
{
    return _mm256_maddubs_epi16(_mm256_sign_epi8(x, x), _mm256_sign_epi8(y, x));
}

/* the same for weights in 0..127 (the types with a min: q4_1, q5_1,
 * q2_K, q4_K, q5_K), which maddubs takes as they are */
WK_TARGET_AVX2 static inline __m256i mul_pairs_w(__m256i x, __m256i y, bool uns)
{
    return uns ? _mm256_maddubs_epi16(x, y) : mul_pairs_i8(x, y);
}

WK_TARGET_AVX2 static inline float hsum_ps(__m256 v)
{
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    s = _mm_add_ss(s, _mm_movehdup_ps(s));
    return _mm_cvtss_f32(s);
}

/* the sum of 8 int32 lanes (exact) */
WK_TARGET_AVX2 static inline int32_t hsum_epi32(__m256i v)
{
    __m128i s = _mm_add_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
    s = _mm_add_epi32(s, _mm_unpackhi_epi64(s, s));
    s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 1));
    return _mm_cvtsi128_si32(s);
}

WK_TARGET_AVX2 static float dot32_avx2(const qd_rows *w, int64_t wr, const qd_rows *a, int64_t ar, int64_t k, bool mins)
{
    const int64_t nb = k / 32;
    const int8_t *wq = w->q + wr * k, *aq = a->q + ar * k;
    const float *wd = w->d + wr * nb, *wm = w->dm + wr * nb, *ad = a->d + ar * nb, *as = a->dm + ar * nb;
    const __m256i ones = _mm256_set1_epi16(1);
    __m256 acc0 = _mm256_setzero_ps(), acc1 = _mm256_setzero_ps();
    float macc = 0;
    int64_t b = 0;
    for (; b + 2 <= nb; b += 2) {
        const __m256i p0 = _mm256_madd_epi16(
            mul_pairs_w(_mm256_loadu_si256((const __m256i *)(wq + 32 * b)), _mm256_loadu_si256((const __m256i *)(aq + 32 * b)),
                        mins),
            ones);
        const __m256i p1 = _mm256_madd_epi16(mul_pairs_w(_mm256_loadu_si256((const __m256i *)(wq + 32 * b + 32)),
                                                         _mm256_loadu_si256((const __m256i *)(aq + 32 * b + 32)), mins),
                                             ones);
        acc0 = _mm256_fmadd_ps(_mm256_cvtepi32_ps(p0), _mm256_set1_ps(wd[b] * ad[b]), acc0);
        acc1 = _mm256_fmadd_ps(_mm256_cvtepi32_ps(p1), _mm256_set1_ps(wd[b + 1] * ad[b + 1]), acc1);
    }
    for (; b < nb; b++) {
        const __m256i p0 = _mm256_madd_epi16(
            mul_pairs_w(_mm256_loadu_si256((const __m256i *)(wq + 32 * b)), _mm256_loadu_si256((const __m256i *)(aq + 32 * b)),
                        mins),
            ones);
        acc0 = _mm256_fmadd_ps(_mm256_cvtepi32_ps(p0), _mm256_set1_ps(wd[b] * ad[b]), acc0);
    }
    if (mins)
        for (b = 0; b < nb; b++) macc += wm[b] * as[b];
    return hsum_ps(_mm256_add_ps(acc0, acc1)) + macc;
}

WK_TARGET_AVX2 static float dotk_avx2(const qd_rows *w, int64_t wr, const qd_rows *a, int64_t ar, int64_t k, bool mins)
{
    const int64_t nb = k / QK_K, ng = k / 16;
    const int8_t *wq = w->q + wr * k, *aq = a->q + ar * k;
    const int16_t *sc = w->sc + wr * ng, *mn = w->mn + wr * ng, *bs = a->bs + ar * ng;
    const float *wd = w->d + wr * nb, *wm = w->dm + wr * nb, *ad = a->d + ar * nb;
    float acc = 0;
    for (int64_t b = 0; b < nb; b++) {
        const int8_t *x = wq + QK_K * b, *y = aq + QK_K * b;
        const int16_t *s = sc + 16 * b;
        __m256i isum = _mm256_setzero_si256();
        for (int c = 0; c < 8; c++) {
            const __m256i p = mul_pairs_w(_mm256_loadu_si256((const __m256i *)(x + 32 * c)),
                                          _mm256_loadu_si256((const __m256i *)(y + 32 * c)), mins);
            const __m256i sv = _mm256_inserti128_si256(_mm256_castsi128_si256(_mm_set1_epi16(s[2 * c])),
                                                       _mm_set1_epi16(s[2 * c + 1]), 1);
            isum = _mm256_add_epi32(isum, _mm256_madd_epi16(p, sv));
        }
        acc += (wd[b] * ad[b]) * (float)hsum_epi32(isum);
        if (mins) {   /* 16 products of int16 in pairs: exact in int32 */
            const __m256i mp = _mm256_madd_epi16(_mm256_loadu_si256((const __m256i *)(mn + 16 * b)),
                                                 _mm256_loadu_si256((const __m256i *)(bs + 16 * b)));
            acc -= (wm[b] * ad[b]) * (float)hsum_epi32(mp);
        }
    }
    return acc;
}

/* One unpacked weight row against 4 rows of x (ar .. ar + 3): each weight
 * vector is loaded once for the four (prefill) */
typedef void (*dot4_fn)(const qd_rows *w, int64_t wr, const qd_rows *a, int64_t ar, int64_t k, bool mins, float *y);

WK_TARGET_AVX2 static void dot32_x4_avx2(const qd_rows *w, int64_t wr, const qd_rows *a, int64_t ar, int64_t k, bool mins,
                                         float *y)
{
    const int64_t nb = k / 32;
    const int8_t *wq = w->q + wr * k, *aq = a->q + ar * k;
    const float *wd = w->d + wr * nb, *wm = w->dm + wr * nb, *ad = a->d + ar * nb, *as = a->dm + ar * nb;
    const __m256i ones = _mm256_set1_epi16(1);
    /* even blocks into acc[0], odd ones into acc[1] (a last odd-numbered
       count's tail into acc[0]), as dot32_avx2 sums them */
    __m256 acc[2][4];
    for (int h = 0; h < 2; h++)
        for (int i = 0; i < 4; i++) acc[h][i] = _mm256_setzero_ps();
    for (int64_t b = 0; b < nb; b++) {
        const int h = (b % 2 == 1) ? 1 : 0;
        const __m256i x = _mm256_loadu_si256((const __m256i *)(wq + 32 * b)), ax = mins ? x : _mm256_sign_epi8(x, x);
        for (int i = 0; i < 4; i++) {
            const __m256i v = _mm256_loadu_si256((const __m256i *)(aq + i * k + 32 * b));
            const __m256i p = _mm256_madd_epi16(_mm256_maddubs_epi16(ax, mins ? v : _mm256_sign_epi8(v, x)), ones);
            acc[h][i] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(p), _mm256_set1_ps(wd[b] * ad[i * nb + b]), acc[h][i]);
        }
    }
    for (int i = 0; i < 4; i++) {
        float macc = 0;
        if (mins)
            for (int64_t b = 0; b < nb; b++) macc += wm[b] * as[i * nb + b];
        y[i] = hsum_ps(_mm256_add_ps(acc[0][i], acc[1][i])) + macc;
    }
}

WK_TARGET_AVX2 static void dotk_x4_avx2(const qd_rows *w, int64_t wr, const qd_rows *a, int64_t ar, int64_t k, bool mins,
                                        float *y)
{
    const int64_t nb = k / QK_K, ng = k / 16;
    const int8_t *wq = w->q + wr * k, *aq = a->q + ar * k;
    const int16_t *sc = w->sc + wr * ng, *mn = w->mn + wr * ng;
    const float *wd = w->d + wr * nb, *wm = w->dm + wr * nb, *ad = a->d + ar * nb;
    float acc[4] = { 0, 0, 0, 0 };
    for (int64_t b = 0; b < nb; b++) {
        const int8_t *x = wq + QK_K * b;
        const int16_t *s = sc + 16 * b;
        __m256i isum[4] = { _mm256_setzero_si256(), _mm256_setzero_si256(), _mm256_setzero_si256(), _mm256_setzero_si256() };
        for (int c = 0; c < 8; c++) {
            const __m256i xv = _mm256_loadu_si256((const __m256i *)(x + 32 * c)), ax = mins ? xv : _mm256_sign_epi8(xv, xv);
            const __m256i sv = _mm256_inserti128_si256(_mm256_castsi128_si256(_mm_set1_epi16(s[2 * c])),
                                                       _mm_set1_epi16(s[2 * c + 1]), 1);
            for (int i = 0; i < 4; i++) {
                const __m256i v = _mm256_loadu_si256((const __m256i *)(aq + i * k + QK_K * b + 32 * c));
                isum[i] = _mm256_add_epi32(isum[i],
                                           _mm256_madd_epi16(_mm256_maddubs_epi16(ax, mins ? v : _mm256_sign_epi8(v, xv)), sv));
            }
        }
        for (int i = 0; i < 4; i++) {   /* as dotk_avx2 (and dotk_c) sum them */
            acc[i] += (wd[b] * ad[i * nb + b]) * (float)hsum_epi32(isum[i]);
            if (mins) {   /* 16 products of int16 in pairs: exact in int32 */
                const __m256i mp = _mm256_madd_epi16(_mm256_loadu_si256((const __m256i *)(mn + 16 * b)),
                                                     _mm256_loadu_si256((const __m256i *)(a->bs + (ar + i) * ng + 16 * b)));
                acc[i] -= (wm[b] * ad[i * nb + b]) * (float)hsum_epi32(mp);
            }
        }
    }
    for (int i = 0; i < 4; i++) y[i] = acc[i];
}

/* Few rows of x (decode): the weight's blocks straight from its bytes,
 * without the unpacked copy (ggml's AVX2 vec_dot of these types). */
typedef float (*direct_fn)(const uint8_t *w, int64_t nb, const qd_rows *a, int64_t ar, int64_t k);

WK_TARGET_AVX2 static inline __m256i nib_expand(const uint8_t *qs)
{
    const __m128i t = _mm_loadu_si128((const __m128i *)qs);
    return _mm256_and_si256(_mm256_inserti128_si256(_mm256_castsi128_si256(t), _mm_srli_epi16(t, 4), 1),
                            _mm256_set1_epi8(0x0F));
}

WK_TARGET_AVX2 static inline uint16_t ld_u16(const uint8_t *p)
{
    uint16_t h;
    memcpy(&h, p, 2);
    return h;
}

/* q4_1 and q5_1 (unsigned values, a min): maddubs on the values as they are */
#define DIRECT_MIN(NAME, BB, LOADW)                                                                                 \
    WK_TARGET_AVX2 static float NAME(const uint8_t *w, int64_t nb, const qd_rows *a, int64_t ar, int64_t k)     \
    {                                                                                                          \
        const int8_t *aq = a->q + ar * k;                                                                      \
        const float *ad = a->d + ar * nb, *as = a->dm + ar * nb;                                               \
        const __m256i ones = _mm256_set1_epi16(1);                                                             \
        __m256 acc0 = _mm256_setzero_ps(), acc1 = _mm256_setzero_ps();                                         \
        float macc = 0;                                                                                        \
        int64_t b = 0;                                                                                         \
        for (; b + 2 <= nb; b += 2, w += 2 * (BB)) {                                                           \
            const __m256i p0 = _mm256_madd_epi16(                                                              \
                _mm256_maddubs_epi16(LOADW(w), _mm256_loadu_si256((const __m256i *)(aq + 32 * b))), ones);     \
            const __m256i p1 = _mm256_madd_epi16(                                                              \
                _mm256_maddubs_epi16(LOADW(w + (BB)), _mm256_loadu_si256((const __m256i *)(aq + 32 * b + 32))), \
                ones);                                                                                         \
            acc0 = _mm256_fmadd_ps(_mm256_cvtepi32_ps(p0), _mm256_set1_ps(_cvtsh_ss(ld_u16(w)) * ad[b]), acc0); \
            acc1 = _mm256_fmadd_ps(_mm256_cvtepi32_ps(p1), _mm256_set1_ps(_cvtsh_ss(ld_u16(w + (BB))) * ad[b + 1]), \
                                   acc1);                                                                      \
            macc += _cvtsh_ss(ld_u16(w + 2)) * as[b];                                                          \
            macc += _cvtsh_ss(ld_u16(w + (BB) + 2)) * as[b + 1];                                               \
        }                                                                                                      \
        for (; b < nb; b++, w += (BB)) {                                                                       \
            const __m256i p0 = _mm256_madd_epi16(                                                              \
                _mm256_maddubs_epi16(LOADW(w), _mm256_loadu_si256((const __m256i *)(aq + 32 * b))), ones);     \
            acc0 = _mm256_fmadd_ps(_mm256_cvtepi32_ps(p0), _mm256_set1_ps(_cvtsh_ss(ld_u16(w)) * ad[b]), acc0); \
            macc += _cvtsh_ss(ld_u16(w + 2)) * as[b];                                                          \
        }                                                                                                      \
        return hsum_ps(_mm256_add_ps(acc0, acc1)) + macc;                                                      \
    }
#define LOADW_Q4_1(p) nib_expand((p) + 4)
#define LOADW_Q5_1(p) q5_1_values((p) + 4, (p) + 8)
DIRECT_MIN(direct_q4_1_avx2, 20, LOADW_Q4_1)
DIRECT_MIN(direct_q5_1_avx2, 24, LOADW_Q5_1)

/* q4_0 (nibbles - 8) and q8_0 (the bytes): signed, through mul_pairs_i8 */
#define DIRECT_SIGNED(NAME, BB, LOADW)                                                                              \
    WK_TARGET_AVX2 static float NAME(const uint8_t *w, int64_t nb, const qd_rows *a, int64_t ar, int64_t k)     \
    {                                                                                                          \
        const int8_t *aq = a->q + ar * k;                                                                      \
        const float *ad = a->d + ar * nb;                                                                      \
        const __m256i ones = _mm256_set1_epi16(1);                                                             \
        __m256 acc0 = _mm256_setzero_ps(), acc1 = _mm256_setzero_ps();                                         \
        int64_t b = 0;                                                                                         \
        for (; b + 2 <= nb; b += 2, w += 2 * (BB)) {                                                           \
            const __m256i p0 = _mm256_madd_epi16(                                                              \
                mul_pairs_i8(LOADW(w), _mm256_loadu_si256((const __m256i *)(aq + 32 * b))), ones);             \
            const __m256i p1 = _mm256_madd_epi16(                                                              \
                mul_pairs_i8(LOADW(w + (BB)), _mm256_loadu_si256((const __m256i *)(aq + 32 * b + 32))), ones); \
            acc0 = _mm256_fmadd_ps(_mm256_cvtepi32_ps(p0), _mm256_set1_ps(_cvtsh_ss(ld_u16(w)) * ad[b]), acc0); \
            acc1 = _mm256_fmadd_ps(_mm256_cvtepi32_ps(p1), _mm256_set1_ps(_cvtsh_ss(ld_u16(w + (BB))) * ad[b + 1]), \
                                   acc1);                                                                      \
        }                                                                                                      \
        for (; b < nb; b++, w += (BB)) {                                                                       \
            const __m256i p0 = _mm256_madd_epi16(                                                              \
                mul_pairs_i8(LOADW(w), _mm256_loadu_si256((const __m256i *)(aq + 32 * b))), ones);             \
            acc0 = _mm256_fmadd_ps(_mm256_cvtepi32_ps(p0), _mm256_set1_ps(_cvtsh_ss(ld_u16(w)) * ad[b]), acc0); \
        }                                                                                                      \
        return hsum_ps(_mm256_add_ps(acc0, acc1));                                                             \
    }
#define LOADW_Q4_0(p) _mm256_sub_epi8(nib_expand((p) + 2), _mm256_set1_epi8(8))
#define LOADW_Q8_0(p) _mm256_loadu_si256((const __m256i *)((p) + 2))
DIRECT_SIGNED(direct_q4_0_avx2, 18, LOADW_Q4_0)
DIRECT_SIGNED(direct_q8_0_avx2, 34, LOADW_Q8_0)
#define LOADW_Q5_0(p) q5_0_values((p) + 2, (p) + 6)
DIRECT_SIGNED(direct_q5_0_avx2, 22, LOADW_Q5_0)

/* q4_K: per 64 values, 32 bytes of nibbles (low: sub-block 2j, high:
 * 2j + 1); the 6-bit scales go to madd, the mins meet the bsums */
WK_TARGET_AVX2 static float direct_q4_k_avx2(const uint8_t *w, int64_t nb, const qd_rows *a, int64_t ar, int64_t k)
{
    const int8_t *aq = a->q + ar * k;
    const float *ad = a->d + ar * nb;
    const int16_t *bs = a->bs + ar * (k / 16);
    const __m256i m4 = _mm256_set1_epi8(0x0F);
    float acc = 0;
    for (int64_t b = 0; b < nb; b++, w += 144) {
        const int8_t *y = aq + QK_K * b;
        /* the 8 scales to bytes 0-7 of u, the 8 mins to bytes 8-15 (ggml's kmask shuffle) */
        uint32_t u[4];
        memcpy(u, w + 4, 12);
        u[3] = ((u[2] >> 4) & 0x0f0f0f0f) | (((u[1] >> 6) & 0x03030303) << 4);
        const uint32_t t1 = u[1] & 0x3f3f3f3f;
        u[1] = (u[2] & 0x0f0f0f0f) | (((u[0] >> 6) & 0x03030303) << 4);
        u[2] = t1;
        u[0] &= 0x3f3f3f3f;
        uint8_t sc[16];
        memcpy(sc, u, 16);
        /* mins . (bsums in pairs): 8 products, exact in int32 */
        const __m256i bv = _mm256_loadu_si256((const __m256i *)(bs + 16 * b));
        const __m128i pairs = _mm_hadd_epi16(_mm256_castsi256_si128(bv), _mm256_extracti128_si256(bv, 1));
        __m128i mp = _mm_madd_epi16(_mm_cvtepu8_epi16(_mm_loadl_epi64((const __m128i *)(sc + 8))), pairs);
        mp = _mm_add_epi32(mp, _mm_unpackhi_epi64(mp, mp));
        mp = _mm_add_epi32(mp, _mm_shuffle_epi32(mp, 1));
        const int32_t msum = _mm_cvtsi128_si32(mp);
        __m256i isum = _mm256_setzero_si256();
        for (int j = 0; j < 4; j++) {
            const __m256i q = _mm256_loadu_si256((const __m256i *)(w + 16 + 32 * j));
            const __m256i lo = _mm256_maddubs_epi16(_mm256_and_si256(q, m4), _mm256_loadu_si256((const __m256i *)(y + 64 * j)));
            const __m256i hi = _mm256_maddubs_epi16(_mm256_and_si256(_mm256_srli_epi16(q, 4), m4),
                                                    _mm256_loadu_si256((const __m256i *)(y + 64 * j + 32)));
            isum = _mm256_add_epi32(isum, _mm256_add_epi32(_mm256_madd_epi16(lo, _mm256_set1_epi16(sc[2 * j])),
                                                           _mm256_madd_epi16(hi, _mm256_set1_epi16(sc[2 * j + 1]))));
        }
        /* as dotk_avx2 (and dotk_c) sum them */
        acc += (_cvtsh_ss(ld_u16(w)) * ad[b]) * (float)hsum_epi32(isum);
        acc -= (_cvtsh_ss(ld_u16(w + 2)) * ad[b]) * (float)msum;
    }
    return acc;
}

/* q6_K: the 6-bit values 0..63 to maddubs, the - 32 as 32 sum_g sc_g bsum_g */
WK_TARGET_AVX2 static float direct_q6_k_avx2(const uint8_t *w, int64_t nb, const qd_rows *a, int64_t ar, int64_t k)
{
    const int8_t *aq = a->q + ar * k;
    const float *ad = a->d + ar * nb;
    const int16_t *bs = a->bs + ar * (k / 16);
    const __m256i m4 = _mm256_set1_epi8(0x0F), m3 = _mm256_set1_epi8(3), m30 = _mm256_set1_epi8(0x30);
    float acc = 0;
    for (int64_t b = 0; b < nb; b++, w += 210) {
        const int8_t *y = aq + QK_K * b, *sc = (const int8_t *)(w + 192);
        const int16_t *s16 = bs + 16 * b;
        __m256i isum = _mm256_setzero_si256();
        int32_t corr = 0;
        for (int g = 0; g < 16; g++) corr += sc[g] * s16[g];
        for (int h = 0; h < 2; h++) {
            const __m256i A = _mm256_loadu_si256((const __m256i *)(w + 64 * h)),
                          B = _mm256_loadu_si256((const __m256i *)(w + 64 * h + 32)),
                          H = _mm256_loadu_si256((const __m256i *)(w + 128 + 32 * h));
            __m256i q[4];
            q[0] = _mm256_or_si256(_mm256_and_si256(A, m4), _mm256_slli_epi16(_mm256_and_si256(H, m3), 4));
            q[1] = _mm256_or_si256(_mm256_and_si256(B, m4),
                                   _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(H, 2), m3), 4));
            q[2] = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(A, 4), m4), _mm256_and_si256(H, m30));
            q[3] = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(B, 4), m4),
                                   _mm256_and_si256(_mm256_srli_epi16(H, 2), m30));
            for (int t = 0; t < 4; t++) {
                const int g = 8 * h + 2 * t;
                const __m256i sv = _mm256_inserti128_si256(_mm256_castsi128_si256(_mm_set1_epi16(sc[g])),
                                                           _mm_set1_epi16(sc[g + 1]), 1);
                const __m256i p =
                    _mm256_maddubs_epi16(q[t], _mm256_loadu_si256((const __m256i *)(y + 128 * h + 32 * t)));
                isum = _mm256_add_epi32(isum, _mm256_madd_epi16(p, sv));
            }
        }
        /* exact; then as dotk_avx2 (and dotk_c) sum them */
        acc += (_cvtsh_ss(ld_u16(w + 208)) * ad[b]) * (float)(hsum_epi32(isum) - 32 * corr);
    }
    return acc;
}
#endif

/* ---- the product ------------------------------------------------------------------ */
#if WK_EW_X86
static direct_fn direct_avx2_of(wk_dtype dt)
{
    switch (dt) {
    case WK_Q4_0: return direct_q4_0_avx2;
    case WK_Q4_1: return direct_q4_1_avx2;
    case WK_Q5_0: return direct_q5_0_avx2;
    case WK_Q5_1: return direct_q5_1_avx2;
    case WK_Q8_0: return direct_q8_0_avx2;
    case WK_Q4_K: return direct_q4_k_avx2;
    case WK_Q6_K: return direct_q6_k_avx2;
    default: return NULL;
    }
}
#endif

#define QD_ROWS_FEW 8
#define QD_DIRECT_MAX_M 4   /* rows of x up to which blocks are read in place */
#define QD_ROWS_MANY 32
#define QD_VNNI_CHUNK 64   /* rows of x a VNNI tile call (its packed blocks serve them all) */

typedef struct qd_job {
    const wk_view *dst, *w, *x;
    const qd_type *t;
    int64_t m, n, k, nb;
    wk_cpu_qblock_fn quant;   /* x's blocks: q8_0, q8_1 or q8_K         */
    qd_rows a;                /* x quantized                            */
    dot_fn dot;
    unpack_row_fn unpack;
#if WK_EW_X86
    direct_fn direct;         /* few rows of x: from the weight's bytes */
    dot4_fn dot4;             /* 4 rows of x at once, or NULL           */
#endif
    bool vnni;                /* cpu_qdot_vnni.c's kernels              */
    int64_t rsb;              /* the weight's row stride in bytes       */
    atomic_int failed;
    /* unpacked-row buffers, one per thread that runs tasks at once: a
       task range claims a free one (malloc and free per range made page
       faults that cost more than the products) */
    int nslots;
    struct qd_slot {
        atomic_int busy;
        qd_rows w;
        void *scratch;                      /* VNNI: the weight's vectors    */
        float y[QD_VNNI_CHUNK * 16];        /* VNNI: a tile's results        */
    } *slots;
} qd_job;

/* rows [begin, end) of x: to f32, then to the activation blocks, unpacked
 * to the rows of j->a */
static void qd_quant_x(void *arg, int64_t begin, int64_t end)
{
    qd_job *j = arg;
    const wk_view *x = j->x;
    const int64_t k = j->k, B = j->t->B;
    float *row = NULL;
    const bool direct = x->dtype == WK_F32 && (x->strides[1] == 1 || k == 1);
    if (!direct && !(row = malloc((size_t)k * sizeof *row))) {
        atomic_store(&j->failed, 1);
        return;
    }
    uint8_t blk[292];
    for (int64_t i = begin; i < end; i++) {
        const float *xr;
        if (direct) xr = (const float *)x->base + x->offset + i * x->strides[0];
        else {
            for (int64_t c = 0; c < k; c++)
                row[c] = (float)wk_cpu_load_f64(x->base, x->dtype, x->offset + i * x->strides[0] + c * x->strides[1]);
            xr = row;
        }
        for (int64_t b = 0; b < k / B; b++) {
            int8_t *q = j->a.q + i * k + b * B;
            const int64_t bi = i * (k / B) + b;
            if (wk_qdot_quant_block(j->t->act, xr + b * B, q, &j->a.d[bi], j->a.xs ? &j->a.xs[bi] : NULL,
                                    j->a.bs ? j->a.bs + i * (k / 16) + b * 16 : NULL)) {
                if (j->t->act == WK_Q8_1) j->a.dm[bi] = j->a.d[bi] * (float)j->a.xs[bi];
                else if (j->t->act == WK_Q8_0) j->a.dm[bi] = 0;
                continue;
            }
            j->quant(xr + b * B, blk);
            if (j->t->act == WK_Q8_K) {
                memcpy(&j->a.d[bi], blk, 4);
                memcpy(q, blk + 4, QK_K);
                memcpy(j->a.bs + i * (k / 16) + b * 16, blk + 260, 32);
            } else if (j->t->act == WK_Q8_1) {
                j->a.d[bi] = ld_h(blk);
                int sum = 0;
                for (int c = 0; c < 32; c++) sum += (int8_t)blk[4 + c];
                j->a.dm[bi] = j->a.d[bi] * (float)sum;   /* exact: 11 x 12 bits */
                j->a.xs[bi] = sum;
                memcpy(q, blk + 4, 32);
            } else {
                j->a.d[bi] = ld_h(blk);
                j->a.dm[bi] = 0;
                int sum = 0;
                for (int c = 0; c < 32; c++) sum += (int8_t)blk[2 + c];
                j->a.xs[bi] = sum;
                memcpy(q, blk + 2, 32);
            }
        }
    }
    free(row);
}

static void st_vals(const wk_view *d, int64_t i, const float *v, int64_t n)
{
    if (d->dtype == WK_F32) memcpy((float *)d->base + i, v, (size_t)n * sizeof *v);
    else if (d->dtype == WK_F16)
        for (int64_t r = 0; r < n; r++) ((uint16_t *)d->base)[i + r] = wk_f32_to_f16(v[r]);
    else
        for (int64_t r = 0; r < n; r++) ((uint16_t *)d->base)[i + r] = wk_f32_to_bf16(v[r]);
}

/* a free buffer slot (there are as many as threads run tasks at once) */
static struct qd_slot *claim_slot(qd_job *j)
{
    for (int i = 0;; i = (i + 1) % j->nslots)
        if (!atomic_exchange(&j->slots[i].busy, 1)) return &j->slots[i];
}

static void qd_range(void *arg, int64_t begin, int64_t end)
{
    qd_job *j = arg;
    const qd_type *t = j->t;
    const int64_t k = j->k, nb = j->nb, bpr = k / t->B, gpr = k / 16;
    const wk_view *wv = j->w, *d = j->dst;
    const int64_t WB = wk_dt_block(wv->dtype);
    if (j->vnni) {   /* 16 weight rows at a time, 8 rows of x a pass */
        struct qd_slot *slot = claim_slot(j);
        const size_t sb = wk_qdot_vnni_scratch(t->dt, bpr);
        if (j->m > QD_VNNI_CHUNK && sb && !slot->scratch)
            slot->scratch = aligned_alloc(64, (sb + 63) / 64 * 64);   /* NULL: each pass reads the blocks */
        float *y = slot->y;
        const bool f32 = d->dtype == WK_F32;   /* the tile writes the output rows itself */
        for (int64_t task = begin; task < end; task++)
            for (int64_t n0 = task * nb; n0 < j->n && n0 < (task + 1) * nb; n0 += 16) {
                const int nr = (int)(j->n - n0 < 16 ? j->n - n0 : 16);
                const uint8_t *w0 = (const uint8_t *)wv->base + (wv->offset + n0 * wv->strides[0]) / WB * t->BB;
                for (int64_t i = 0; i < j->m; i += QD_VNNI_CHUNK) {
                    const int64_t mi = j->m - i < QD_VNNI_CHUNK ? j->m - i : QD_VNNI_CHUNK;
                    if (f32) {
                        wk_qdot_vnni_tile(t->dt, w0, j->rsb, nr, bpr, &j->a, k, i, mi,
                                          (float *)d->base + d->offset + i * j->n + n0, j->n, slot->scratch);
                        continue;
                    }
                    wk_qdot_vnni_tile(t->dt, w0, j->rsb, nr, bpr, &j->a, k, i, mi, y, 16, slot->scratch);
                    for (int64_t ii = 0; ii < mi; ii++) st_vals(d, d->offset + (i + ii) * j->n + n0, y + ii * 16, nr);
                }
            }
        atomic_store(&slot->busy, 0);
        return;
    }
#if WK_EW_X86
    if (j->direct) {
        for (int64_t task = begin; task < end; task++) {
            const int64_t n0 = task * nb, nr = j->n - n0 < nb ? j->n - n0 : nb;
            float y[QD_ROWS_MANY];
            for (int64_t i = 0; i < j->m; i++) {
                for (int64_t r = 0; r < nr; r++)
                    y[r] = j->direct((const uint8_t *)wv->base + (wv->offset + (n0 + r) * wv->strides[0]) / WB * t->BB, bpr,
                                     &j->a, i, k);
                st_vals(d, d->offset + i * j->n + n0, y, nr);
            }
        }
        return;
    }
#endif
    struct qd_slot *slot = claim_slot(j);
    qd_rows w = slot->w;
    if (!w.q) {
        w.q = malloc((size_t)(nb * k));
        w.d = malloc((size_t)(nb * bpr) * sizeof(float));
        w.dm = malloc((size_t)(nb * bpr) * sizeof(float));
        if (t->B == QK_K) {
            w.sc = malloc((size_t)(nb * gpr) * sizeof(int16_t));
            w.mn = malloc((size_t)(nb * gpr) * sizeof(int16_t));
        }
        slot->w = w;
    }
    if (!w.q || !w.d || !w.dm || (t->B == QK_K && (!w.sc || !w.mn))) {
        atomic_store(&j->failed, 1);
        goto out;
    }
    for (int64_t task = begin; task < end; task++) {
        const int64_t n0 = task * nb, nr = j->n - n0 < nb ? j->n - n0 : nb;
        for (int64_t r = 0; r < nr; r++) {
            const uint8_t *src = (const uint8_t *)wv->base + (wv->offset + (n0 + r) * wv->strides[0]) / WB * t->BB;
            j->unpack(src, bpr, w.q + r * k, w.sc ? w.sc + r * gpr : NULL, w.mn ? w.mn + r * gpr : NULL, w.d + r * bpr,
                      w.dm + r * bpr);
        }
        float y[QD_ROWS_MANY];
        int64_t i = 0;
#if WK_EW_X86
        if (j->dot4)
            for (; i + 4 <= j->m; i += 4) {
                float y4[QD_ROWS_MANY][4];
                for (int64_t r = 0; r < nr; r++) j->dot4(&w, r, &j->a, i, k, t->mins, y4[r]);
                for (int ii = 0; ii < 4; ii++) {
                    for (int64_t r = 0; r < nr; r++) y[r] = y4[r][ii];
                    st_vals(d, d->offset + (i + ii) * j->n + n0, y, nr);
                }
            }
#endif
        for (; i < j->m; i++) {
            for (int64_t r = 0; r < nr; r++) y[r] = j->dot(&w, r, &j->a, i, k, t->mins);
            st_vals(d, d->offset + i * j->n + n0, y, nr);
        }
    }
out:
    atomic_store(&slot->busy, 0);
}

wk_status wk_cpu_qmatmul_qdot(const wk_op_args *a, int mode)
{
    const wk_view *d = a->dst, *w = a->src[0], *x = a->src[1];
    const qd_type *t = qd_type_of(w->dtype);
    if (!t) return WK_CPU_ERROR(WK_ERR_DTYPE, "the integer qmatmul path does not take %s", wk_dt_name(w->dtype));
    const int64_t m = d->dims[0], n = d->dims[1], k = w->dims[1];
    if (m == 0 || n == 0) return WK_OK;
    qd_job j = { .dst = d, .w = w, .x = x, .t = t, .m = m, .n = n, .k = k, .quant = wk_cpu_quantizer(t->act) };
    atomic_init(&j.failed, 0);
    const bool K = t->B == QK_K;
    j.dot = K ? dotk_c : dot32_c;
    j.unpack = t->unpack;
    j.rsb = w->strides[0] / wk_dt_block(w->dtype) * t->BB;
    j.vnni = mode == WK_QDOT_ON && w->strides[0] % wk_dt_block(w->dtype) == 0 && wk_qdot_vnni_ok(t->dt, j.rsb);
#if WK_EW_X86
    if (!j.vnni && mode != WK_QDOT_PORTABLE && wk_ew_have_avx2()) {
        j.dot = K ? dotk_avx2 : dot32_avx2;
        if (t->unpack_avx2) j.unpack = t->unpack_avx2;
        if (m <= QD_DIRECT_MAX_M) j.direct = direct_avx2_of(t->dt);
        j.dot4 = K ? dotk_x4_avx2 : dot32_x4_avx2;
    }
#else
    (void)mode;
#endif
    const int64_t bpr = k / t->B;
    j.a.q = malloc((size_t)(m * k));
    j.a.d = malloc((size_t)(m * bpr) * sizeof(float));
    j.a.dm = malloc((size_t)(m * bpr) * sizeof(float));
    if (K) j.a.bs = malloc((size_t)(m * (k / 16)) * sizeof(int16_t));
    else j.a.xs = malloc((size_t)(m * bpr) * sizeof(int32_t));
    wk_status st = WK_OK;
    if (!j.a.q || !j.a.d || !j.a.dm || (K ? !j.a.bs : !j.a.xs)) {
        st = WK_CPU_ERROR(WK_ERR_MEMORY, "out of memory for x quantized (%lld x %lld)", (long long)m, (long long)k);
        goto out;
    }
    wk_parallel_tasks(m, 8.0 * (double)k, qd_quant_x, &j);
    if (atomic_load(&j.failed)) {
        st = WK_CPU_ERROR(WK_ERR_MEMORY, "out of memory for a row of x (%lld)", (long long)k);
        goto out;
    }
    j.nb = m > 8 || j.vnni ? QD_ROWS_MANY : QD_ROWS_FEW;
    j.nslots = wk_cpu_num_threads();
    if (!(j.slots = calloc((size_t)j.nslots, sizeof *j.slots))) {
        st = WK_CPU_ERROR(WK_ERR_MEMORY, "out of memory for %d buffers", j.nslots);
        goto out;
    }
    for (int i = 0; i < j.nslots; i++) atomic_init(&j.slots[i].busy, 0);
    wk_parallel_tasks((n + j.nb - 1) / j.nb, (double)j.nb * (double)k * (2.0 + 0.5 * (double)m), qd_range, &j);
    if (atomic_load(&j.failed))
        st = WK_CPU_ERROR(WK_ERR_MEMORY, "out of memory for %lld unpacked rows of %lld", (long long)j.nb, (long long)k);
out:
    for (int i = 0; j.slots && i < j.nslots; i++) {
        qd_rows *b = &j.slots[i].w;
        free(b->q), free(b->d), free(b->dm), free(b->sc), free(b->mn);
        free(j.slots[i].scratch);
    }
    free(j.slots);
    free(j.a.q), free(j.a.d), free(j.a.dm), free(j.a.bs), free(j.a.xs);
    return st;
}
