/* cpu_qdot_vnni.c — the integer qmatmul's AVX-512 VNNI kernels: 16 rows
 * of the weight a vector, one lane each, against up to 8 rows of x.
 *
 * cpu_qdot.c sends a call here when the cpu has AVX512 F/BW/VL/DQ, VNNI
 * and BITALG (checked once by CPUID), the weight's type has kernels here
 * (q4_0, q4_1, q5_0, q5_1, q8_0, q4_K, q5_K, q6_K, iq4_nl, iq4_xs) and WICK_CPU_QDOT is
 * not "avx2" or "portable" (docs/cpu-qdot.md). Decode (one row of x) and
 * prefill (many) take the same kernels, so a row of x gets the same bits
 * whatever the rows around it (the order is cpu_qdot.h's).
 *
 * How a block is read: the 16 rows' bytes of one block are loaded 16 at
 * a time and transposed (tr16x4: lane r of the result's vector c holds
 * row r's dword c), so that lane r of vector c holds 4 consecutive values
 * of row r. The values are made unsigned (the nibbles as they are, q5's
 * fifth bit added, q8_0's bytes + 128) and go to vpdpbusd against 4
 * bytes of x broadcast to every lane; the offset that made them unsigned
 * comes back as the offset times x's sum over the block (or, for q6_K's
 * 16-value groups, its scaled sums, through vpmaddwd). Scales and d's of
 * the 16 rows come by gathers of one dword each. Every integer sum is
 * exact (bounds beside each kernel); only the float factors round.
 */
#include "cpu_qdot.h"

#include <string.h>

#include "cpu_ew.h"
#include "../iq_tables.h"

#if WK_EW_X86
#include <immintrin.h>

#define QK_K 256
#define VN_R 8   /* rows of x a pass */

bool wk_qdot_vnni_ok(wk_dtype dt, int64_t row_bytes)
{
    switch (dt) {
    case WK_Q4_0: case WK_Q4_1: case WK_Q5_0: case WK_Q5_1: case WK_Q8_0:
    case WK_Q4_K: case WK_Q5_K: case WK_Q6_K: case WK_IQ4_NL: case WK_IQ4_XS: break;
    default: return false;
    }
    /* the gathers' offsets (15 rows) are int32 */
    return row_bytes > 0 && row_bytes <= (int64_t)(INT32_MAX / 16) && wk_ew_have_avx512vnni();
}

static inline int32_t ld32(const void *p)
{
    int32_t v;
    memcpy(&v, p, 4);
    return v;
}

/* lane r of o[c]: dword c of the 16 bytes at p[r] + off */
WK_TARGET_VNNI static inline void tr16x4(const uint8_t *const *p, int64_t off, __m512i *o)
{
    __m512i q[4];
    for (int g = 0; g < 4; g++) {
        __m512i v = _mm512_castsi128_si512(_mm_loadu_si128((const __m128i *)(p[4 * g] + off)));
        v = _mm512_inserti32x4(v, _mm_loadu_si128((const __m128i *)(p[4 * g + 1] + off)), 1);
        v = _mm512_inserti32x4(v, _mm_loadu_si128((const __m128i *)(p[4 * g + 2] + off)), 2);
        q[g] = _mm512_inserti32x4(v, _mm_loadu_si128((const __m128i *)(p[4 * g + 3] + off)), 3);
    }
    /* rows 0-7 (from q[0], q[1]): dwords 0 and 1, then 2 and 3 */
    const __m512i i0 = _mm512_setr_epi32(0, 4, 8, 12, 16, 20, 24, 28, 1, 5, 9, 13, 17, 21, 25, 29);
    const __m512i i1 = _mm512_setr_epi32(2, 6, 10, 14, 18, 22, 26, 30, 3, 7, 11, 15, 19, 23, 27, 31);
    const __m512i x0 = _mm512_permutex2var_epi32(q[0], i0, q[1]), x1 = _mm512_permutex2var_epi32(q[0], i1, q[1]);
    const __m512i y0 = _mm512_permutex2var_epi32(q[2], i0, q[3]), y1 = _mm512_permutex2var_epi32(q[2], i1, q[3]);
    o[0] = _mm512_shuffle_i64x2(x0, y0, 0x44);
    o[1] = _mm512_shuffle_i64x2(x0, y0, 0xEE);
    o[2] = _mm512_shuffle_i64x2(x1, y1, 0x44);
    o[3] = _mm512_shuffle_i64x2(x1, y1, 0xEE);
}

/* lane r: the dword at p[r] + off (gi: p[r] - p[0]) */
WK_TARGET_VNNI static inline __m512i gather(const uint8_t *const *p, __m512i gi, int64_t off)
{
    return _mm512_i32gather_epi32(gi, (const void *)(p[0] + off), 1);
}

WK_TARGET_VNNI static inline __m512 h_lo(__m512i g) { return _mm512_cvtph_ps(_mm512_cvtepi32_epi16(g)); }
WK_TARGET_VNNI static inline __m512 h_hi(__m512i g) { return h_lo(_mm512_srli_epi32(g, 16)); }

/* the nibbles of n[0..3]: low ones to v[0..3], high ones to v[4..7] */
WK_TARGET_VNNI static inline void nibbles(const __m512i *n, __m512i *v)
{
    const __m512i m = _mm512_set1_epi8(0x0F);
    for (int c = 0; c < 4; c++) {
        v[c] = _mm512_and_si512(n[c], m);
        v[c + 4] = _mm512_and_si512(_mm512_srli_epi16(n[c], 4), m);
    }
}

/* iq4_nl / iq4_xs: each value byte (a 4-bit code) to its table value
 * + 128, unsigned (vpshufb looks the 16 entries up in each 128-bit lane) */
WK_TARGET_VNNI static inline void iq4_values(__m512i *v, int n)
{
    const __m512i tab = _mm512_xor_si512(_mm512_broadcast_i32x4(_mm_loadu_si128((const __m128i *)wk_iq4nl_values)),
                                         _mm512_set1_epi8((char)0x80));   /* + 128 */
    for (int c = 0; c < n; c++) v[c] = _mm512_shuffle_epi8(tab, v[c]);
}

/* q5_0 / q5_1: bit l of a lane's qh (l = 4c + t) is the fifth bit of
 * value l: 0x10 into byte t of v[c] */
WK_TARGET_VNNI static inline void fifth_bits(__m512i qh, __m512i *v)
{
    for (int c = 0; c < 8; c++) {
        const uint64_t lo = 0x03020100u + 0x04040404u * (uint64_t)c;
        const __m512i ctl = _mm512_set1_epi64((long long)(lo | (lo + 0x20202020u) << 32));
        const __mmask64 k = _mm512_bitshuffle_epi64_mask(qh, ctl);
        v[c] = _mm512_or_si512(v[c], _mm512_maskz_mov_epi8(k, _mm512_set1_epi8(0x10)));
    }
}

/* lines [b pfl / nbk, (b + 1) pfl / nbk) of pf into L2 (rows that come
 * later: the hardware's stream prefetch does not keep up with 16 rows read
 * side by side; decode is bound by memory and ran ~1.4x faster with it) */
static inline void prefetch(const uint8_t *pf, int64_t pfl, int64_t b, int64_t nbk)
{
    if (!pf) return;
    for (int64_t l = b * pfl / nbk; l < (b + 1) * pfl / nbk; l++) __builtin_prefetch(pf + 64 * l, 0, 2);
}

/* row i of the tile's results: y[i ys .. i ys + nr) */
WK_TARGET_VNNI static inline void store_rows(const __m512 *acc, int mi, float *y, int64_t ys, int nr)
{
    const __mmask16 k = (__mmask16)((1u << nr) - 1);
    for (int i = 0; i < mi; i++) _mm512_mask_storeu_ps(y + i * ys, k, acc[i]);
}

/* ---- 32-value blocks ---------------------------------------------------------------
 * |isum| <= 255 x 127 x 32 + 128 x 127 x 32 (q8_0 with its offset) */
WK_TARGET_VNNI static inline void load32(wk_dtype dt, const uint8_t *const *p, __m512i gi, int64_t o, __m512i *v, __m512 *d,
                                         __m512 *m)
{
    __m512i n[4], g;
    switch (dt) {
    case WK_Q8_0:
        tr16x4(p, o + 2, v);
        tr16x4(p, o + 18, v + 4);
        for (int c = 0; c < 8; c++) v[c] = _mm512_xor_si512(v[c], _mm512_set1_epi8((char)0x80));
        *d = h_lo(gather(p, gi, o));
        break;
    case WK_Q4_0:
        tr16x4(p, o + 2, n);
        nibbles(n, v);
        *d = h_lo(gather(p, gi, o));
        break;
    case WK_Q4_1:
        tr16x4(p, o + 4, n);
        nibbles(n, v);
        g = gather(p, gi, o);
        *d = h_lo(g), *m = h_hi(g);
        break;
    case WK_Q5_0:
        tr16x4(p, o + 6, n);
        nibbles(n, v);
        fifth_bits(gather(p, gi, o + 2), v);
        *d = h_lo(gather(p, gi, o));
        break;
    case WK_IQ4_NL:
        tr16x4(p, o + 2, n);
        nibbles(n, v);
        iq4_values(v, 8);
        *d = h_lo(gather(p, gi, o));
        break;
    default:   /* WK_Q5_1 */
        tr16x4(p, o + 8, n);
        nibbles(n, v);
        fifth_bits(gather(p, gi, o + 4), v);
        g = gather(p, gi, o);
        *d = h_lo(g), *m = h_hi(g);
        break;
    }
}

/* the vectors of one block, packed for the passes after the first: v[8], d, m */
#define PK32 10

WK_TARGET_VNNI static void pack32(wk_dtype dt, int BB, const uint8_t *const *p, __m512i gi, int64_t nbk, const uint8_t *pf,
                                  int64_t pfl, __m512i *pk)
{
    for (int64_t b = 0; b < nbk; b++) {
        __m512 d, m = _mm512_setzero_ps();
        prefetch(pf, pfl, b, nbk);
        load32(dt, p, gi, b * BB, pk + PK32 * b, &d, &m);
        pk[PK32 * b + 8] = _mm512_castps_si512(d), pk[PK32 * b + 9] = _mm512_castps_si512(m);
    }
}

WK_TARGET_VNNI static inline __attribute__((always_inline)) void
tile32(wk_dtype dt, int BB, int off, bool mins, const uint8_t *const *p, __m512i gi, int64_t nbk, const qd_rows *a,
       int64_t k, int64_t i0, const int mi, float *y, int64_t ys, int nr, const uint8_t *pf, int64_t pfl, const __m512i *pk)
{
    __m512 acc[VN_R];
    for (int i = 0; i < mi; i++) acc[i] = _mm512_setzero_ps();
    for (int64_t b = 0; b < nbk; b++) {
        __m512i v[8];
        __m512 d, m = _mm512_setzero_ps();
        if (pk) {   /* the blocks as pack32 left them */
            for (int c = 0; c < 8; c++) v[c] = pk[PK32 * b + c];
            d = _mm512_castsi512_ps(pk[PK32 * b + 8]), m = _mm512_castsi512_ps(pk[PK32 * b + 9]);
        } else {
            prefetch(pf, pfl, b, nbk);
            load32(dt, p, gi, b * BB, v, &d, &m);
        }
        __m512i is[VN_R];
        for (int i = 0; i < mi; i++) is[i] = _mm512_set1_epi32(-off * a->xs[(i0 + i) * nbk + b]);
        for (int c = 0; c < 8; c++)
            for (int i = 0; i < mi; i++)
                is[i] = _mm512_dpbusd_epi32(is[i], v[c], _mm512_set1_epi32(ld32(a->q + (i0 + i) * k + 32 * b + 4 * c)));
        for (int i = 0; i < mi; i++) {
            const __m512 s = _mm512_mul_ps(d, _mm512_set1_ps(a->d[(i0 + i) * nbk + b]));
            acc[i] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(is[i]), s, acc[i]);
            if (mins) acc[i] = _mm512_fmadd_ps(m, _mm512_set1_ps(a->dm[(i0 + i) * nbk + b]), acc[i]);
        }
    }
    store_rows(acc, mi, y, ys, nr);
}

/* ---- 256-value blocks ---------------------------------------------------------------
 * q4_K / q5_K: 8 sub-blocks of 32 with 6-bit scales and mins;
 * |isum| <= 63 x 31 x 127 x 32 x 8, |msum| <= 63 x 127 x 256.
 * q6_K: 16 groups of 16 with int8 scales, values - 32;
 * |isum| <= 127 x 63 x 127 x 16 x 16 + 32 x 127 x 127 x 256. */

/* the 6-bit scales (sc[8]) and mins as int16 pairs (mn, mn) (mnp[8]) of
 * a q4_K / q5_K block's 16 rows */
WK_TARGET_VNNI static inline void scales_k4(const uint8_t *const *p, int64_t o, __m512i *sc, __m512i *mnp)
{
    __m512i s[4];
    tr16x4(p, o + 4, s);
    const __m512i m6 = _mm512_set1_epi8(0x3F), m4 = _mm512_set1_epi8(0x0F), hi2 = _mm512_set1_epi8((char)0xC0);
    const __m512i sl = _mm512_and_si512(s[0], m6), ml = _mm512_and_si512(s[1], m6);
    const __m512i sh = _mm512_or_si512(_mm512_and_si512(s[2], m4), _mm512_srli_epi32(_mm512_and_si512(s[0], hi2), 2));
    const __m512i mh = _mm512_or_si512(_mm512_and_si512(_mm512_srli_epi32(s[2], 4), m4),
                                       _mm512_srli_epi32(_mm512_and_si512(s[1], hi2), 2));
    const __m512i ff = _mm512_set1_epi32(0xFF);
    const __m512i vs[2] = { sl, sh }, vm[2] = { ml, mh };
    for (int j = 0; j < 8; j++) {
        const __m512i cnt = _mm512_set1_epi32(8 * (j % 4));
        sc[j] = _mm512_and_si512(_mm512_srlv_epi32(vs[j / 4], cnt), ff);
        const __m512i mn = _mm512_and_si512(_mm512_srlv_epi32(vm[j / 4], cnt), ff);
        mnp[j] = _mm512_or_si512(mn, _mm512_slli_epi32(mn, 16));
    }
}

/* the int8 scales of a q6_K block's 16 rows: sc[16] (int32), and as
 * int16 pairs (sc[2p], sc[2p + 1]) in scp[8] */
WK_TARGET_VNNI static inline void scales_k6(const uint8_t *const *p, int64_t o, __m512i *sc, __m512i *scp)
{
    __m512i s[4];
    tr16x4(p, o + 192, s);
    for (int g = 0; g < 16; g++)
        sc[g] = _mm512_srai_epi32(_mm512_sllv_epi32(s[g / 4], _mm512_set1_epi32(24 - 8 * (g % 4))), 24);
    const __m512i lo16 = _mm512_set1_epi32(0xFFFF);
    for (int q = 0; q < 8; q++)
        scp[q] = _mm512_or_si512(_mm512_and_si512(sc[2 * q], lo16), _mm512_slli_epi32(sc[2 * q + 1], 16));
}

/* the 4 x 32 values of half h (0, 1) of a q6_K block: v[8 q + c] for
 * chunk q (values 128 h + 32 q + 4 c ..) */
WK_TARGET_VNNI static inline void values_k6(const uint8_t *const *p, int64_t o, int h, __m512i *v)
{
    __m512i la[8], lb[8], qh[8];
    tr16x4(p, o + 64 * h, la);
    tr16x4(p, o + 64 * h + 16, la + 4);
    tr16x4(p, o + 64 * h + 32, lb);
    tr16x4(p, o + 64 * h + 48, lb + 4);
    tr16x4(p, o + 128 + 32 * h, qh);
    tr16x4(p, o + 128 + 32 * h + 16, qh + 4);
    const __m512i m4 = _mm512_set1_epi8(0x0F);
    for (int c = 0; c < 8; c++) {
        const __m512i ha = _mm512_and_si512(_mm512_srli_epi16(la[c], 4), m4), hb = _mm512_and_si512(_mm512_srli_epi16(lb[c], 4), m4);
        v[c] = _mm512_or_si512(_mm512_and_si512(la[c], m4),
                               _mm512_slli_epi32(_mm512_and_si512(qh[c], _mm512_set1_epi8(0x03)), 4));
        v[8 + c] = _mm512_or_si512(_mm512_and_si512(lb[c], m4),
                                   _mm512_slli_epi32(_mm512_and_si512(qh[c], _mm512_set1_epi8(0x0C)), 2));
        v[16 + c] = _mm512_or_si512(ha, _mm512_and_si512(qh[c], _mm512_set1_epi8(0x30)));
        v[24 + c] = _mm512_or_si512(hb, _mm512_srli_epi32(_mm512_and_si512(qh[c], _mm512_set1_epi8((char)0xC0)), 2));
    }
}

/* A 256-block's vectors for 16 rows: the values of its 8 chunks of 32
 * (v[8 s + c]), the scale of each half chunk (sc[2 s], sc[2 s + 1]: q6_K's
 * 16-value groups; q4_K / q5_K's sub-block scale twice), the int16 pairs
 * that meet x's sums of 16 (aux: q4_K / q5_K's mins (mn, mn), q6_K's scales
 * (sc, sc')), d and dmin. */
#define PKK 90
#define PKK_SC 64
#define PKK_AUX 80
#define PKK_D 88

static int bytesk(wk_dtype dt)
{
    return dt == WK_Q4_K ? 144 : dt == WK_Q5_K ? 176 : dt == WK_IQ4_XS ? 136 : 210;
}

WK_TARGET_VNNI static void loadk(wk_dtype dt, const uint8_t *const *p, __m512i gi, int64_t o, __m512i *pk)
{
    __m512i *v = pk, *sc = pk + PKK_SC, *aux = pk + PKK_AUX;
    if (dt == WK_Q6_K) {
        scales_k6(p, o, sc, aux);
        pk[PKK_D] = _mm512_castps_si512(h_hi(gather(p, gi, o + 206)));
        pk[PKK_D + 1] = _mm512_setzero_si512();
        values_k6(p, o, 0, v);
        values_k6(p, o, 1, v + 32);
        return;
    }
    if (dt == WK_IQ4_XS) {   /* d, scales_h (16 bits), scales_l (8 nibbles), qs[128] */
        const __m512i g = gather(p, gi, o), sl = gather(p, gi, o + 4);
        pk[PKK_D] = _mm512_castps_si512(h_lo(g)), pk[PKK_D + 1] = _mm512_setzero_si512();
        const __m512i sh = _mm512_srli_epi32(g, 16);
        for (int s = 0; s < 8; s++) {   /* 6-bit ls - 32, and as the pair (sc, sc) */
            const __m512i ls = _mm512_or_si512(_mm512_and_si512(_mm512_srli_epi32(sl, 4 * s), _mm512_set1_epi32(0xF)),
                                               _mm512_slli_epi32(_mm512_and_si512(_mm512_srli_epi32(sh, 2 * s),
                                                                                  _mm512_set1_epi32(3)), 4));
            const __m512i sc1 = _mm512_sub_epi32(ls, _mm512_set1_epi32(32));
            sc[2 * s] = sc[2 * s + 1] = sc1;
            aux[s] = _mm512_or_si512(_mm512_and_si512(sc1, _mm512_set1_epi32(0xFFFF)), _mm512_slli_epi32(sc1, 16));
            __m512i n[4];
            tr16x4(p, o + 8 + 16 * s, n);
            nibbles(n, v + 8 * s);
            iq4_values(v + 8 * s, 8);
        }
        return;
    }
    __m512i s8[8], qh[8];
    scales_k4(p, o, s8, aux);
    for (int s = 0; s < 8; s++) sc[2 * s] = sc[2 * s + 1] = s8[s];
    const __m512i g = gather(p, gi, o);
    pk[PKK_D] = _mm512_castps_si512(h_lo(g)), pk[PKK_D + 1] = _mm512_castps_si512(h_hi(g));
    const bool five = dt == WK_Q5_K;
    if (five) tr16x4(p, o + 16, qh), tr16x4(p, o + 32, qh + 4);
    const int64_t qs = five ? 48 : 16;
    const __m512i m4 = _mm512_set1_epi8(0x0F);
    for (int j = 0; j < 4; j++) {
        __m512i n[8];
        tr16x4(p, o + qs + 32 * j, n);
        tr16x4(p, o + qs + 32 * j + 16, n + 4);
        for (int half = 0; half < 2; half++) {
            const int s = 2 * j + half;
            for (int c = 0; c < 8; c++) {
                __m512i x = _mm512_and_si512(half ? _mm512_srli_epi16(n[c], 4) : n[c], m4);
                if (five)
                    x = _mm512_or_si512(x, _mm512_slli_epi32(_mm512_and_si512(_mm512_srli_epi32(qh[c], s), _mm512_set1_epi8(1)), 4));
                v[8 * s + c] = x;
            }
        }
    }
}

WK_TARGET_VNNI static inline __attribute__((always_inline)) void
tilek(wk_dtype dt, const uint8_t *const *p, __m512i gi, int64_t nbk, const qd_rows *a, int64_t k, int64_t i0, const int mi,
      float *y, int64_t ys, int nr, const uint8_t *pf, int64_t pfl, const __m512i *pkall)
{
    const int BB = bytesk(dt);
    const bool six = dt == WK_Q6_K, xs4 = dt == WK_IQ4_XS;
    const int64_t ng = k / 16;
    __m512 acc[VN_R];
    for (int i = 0; i < mi; i++) acc[i] = _mm512_setzero_ps();
    __m512i own[PKK];
    for (int64_t b = 0; b < nbk; b++) {
        const __m512i *pk = pkall ? pkall + PKK * b : own;
        if (!pkall) {
            prefetch(pf, pfl, b, nbk);
            loadk(dt, p, gi, b * BB, own);
        }
        __m512i is[VN_R];
        for (int i = 0; i < mi; i++) is[i] = _mm512_setzero_si512();
        for (int s = 0; s < 8; s++) {
            const __m512i sa = pk[PKK_SC + 2 * s], sb = pk[PKK_SC + 2 * s + 1];
            for (int i = 0; i < mi; i++) {
                const int8_t *x = a->q + (i0 + i) * k + QK_K * b + 32 * s;
                __m512i da = _mm512_setzero_si512(), db = _mm512_setzero_si512();
                for (int c = 0; c < 4; c++) {
                    da = _mm512_dpbusd_epi32(da, pk[8 * s + c], _mm512_set1_epi32(ld32(x + 4 * c)));
                    db = _mm512_dpbusd_epi32(db, pk[8 * s + 4 + c], _mm512_set1_epi32(ld32(x + 16 + 4 * c)));
                }
                is[i] = six ? _mm512_add_epi32(is[i], _mm512_add_epi32(_mm512_mullo_epi32(da, sa), _mm512_mullo_epi32(db, sb)))
                            : _mm512_add_epi32(is[i], _mm512_mullo_epi32(_mm512_add_epi32(da, db), sa));
            }
        }
        const __m512 d = _mm512_castsi512_ps(pk[PKK_D]), dmin = _mm512_castsi512_ps(pk[PKK_D + 1]);
        for (int i = 0; i < mi; i++) {
            /* q6_K: - 32 sum_g sc_g bsum_g; iq4_xs: - 128 sum_s sc_s (bsum_2s +
               bsum_2s+1); q4_K / q5_K: sum_s mn_s (bsum_2s + bsum_2s+1) */
            const int16_t *bs = a->bs + (i0 + i) * ng + 16 * b;
            __m512i cs = _mm512_setzero_si512();
            for (int q = 0; q < 8; q++) cs = _mm512_add_epi32(cs, _mm512_madd_epi16(pk[PKK_AUX + q], _mm512_set1_epi32(ld32(bs + 2 * q))));
            if (six) is[i] = _mm512_sub_epi32(is[i], _mm512_slli_epi32(cs, 5));
            if (xs4) is[i] = _mm512_sub_epi32(is[i], _mm512_slli_epi32(cs, 7));
            const __m512 dx = _mm512_set1_ps(a->d[(i0 + i) * nbk + b]);
            acc[i] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(is[i]), _mm512_mul_ps(d, dx), acc[i]);
            if (!six && !xs4) acc[i] = _mm512_fnmadd_ps(_mm512_cvtepi32_ps(cs), _mm512_mul_ps(dmin, dx), acc[i]);
        }
    }
    store_rows(acc, mi, y, ys, nr);
}

/* one pass of mi (1..8) rows of x, mi a constant in each case */
#define VN_CASES(CALL) \
    switch (mi) {      \
    case 1: CALL(1); break; \
    case 2: CALL(2); break; \
    case 3: CALL(3); break; \
    case 4: CALL(4); break; \
    case 5: CALL(5); break; \
    case 6: CALL(6); break; \
    case 7: CALL(7); break; \
    default: CALL(8); break; \
    }

static int bytes32(wk_dtype dt)
{
    return dt == WK_Q4_0 || dt == WK_IQ4_NL ? 18 : dt == WK_Q4_1 ? 20 : dt == WK_Q5_0 ? 22 : dt == WK_Q5_1 ? 24 : 34;
}

WK_TARGET_VNNI static void pass32(wk_dtype dt, const uint8_t *const *p, __m512i gi, int64_t nbk, const qd_rows *a, int64_t k,
                                  int64_t i0, int mi, float *y, int64_t ys, int nr, const uint8_t *pf, int64_t pfl,
                                  const __m512i *pk)
{
    const int BB = bytes32(dt);
    const int off = dt == WK_Q4_0 ? 8 : dt == WK_Q5_0 ? 16 : dt == WK_Q8_0 || dt == WK_IQ4_NL ? 128 : 0;
    const bool mins = dt == WK_Q4_1 || dt == WK_Q5_1;
#define CALL32(M) tile32(dt, BB, off, mins, p, gi, nbk, a, k, i0, M, y, ys, nr, pf, pfl, pk)
    VN_CASES(CALL32)
#undef CALL32
}

WK_TARGET_VNNI static void passk(wk_dtype dt, const uint8_t *const *p, __m512i gi, int64_t nbk, const qd_rows *a, int64_t k,
                                 int64_t i0, int mi, float *y, int64_t ys, int nr, const uint8_t *pf, int64_t pfl,
                                 const __m512i *pk)
{
#define CALLK(M) tilek(dt, p, gi, nbk, a, k, i0, M, y, ys, nr, pf, pfl, pk)
    VN_CASES(CALLK)
#undef CALLK
}

WK_TARGET_VNNI static void tile_vnni(wk_dtype dt, const uint8_t *w, int64_t rs, int nr, int64_t nbk, const qd_rows *a,
                                     int64_t k, int64_t i0, int64_t mi, float *y, int64_t ys, void *scratch)
{
    const uint8_t *p[16];
    int32_t off[16];
    for (int r = 0; r < 16; r++) {   /* rows past nr repeat the last one; their lanes are not stored */
        const int rr = r < nr ? r : nr - 1;
        p[r] = w + rr * rs;
        off[r] = (int32_t)(rr * rs);
    }
    const __m512i gi = _mm512_loadu_si512(off);
    const bool K = dt == WK_Q4_K || dt == WK_Q5_K || dt == WK_Q6_K || dt == WK_IQ4_XS;
    /* more than one pass: the blocks' vectors made once, read by each */
    __m512i *pk = NULL;
    if (mi > VN_R && scratch) {
        pk = scratch;
        const uint8_t *pf = nr == 16 ? w + 32 * rs : NULL;
        if (K) {
            const int BB = bytesk(dt);
            for (int64_t b = 0; b < nbk; b++) {
                prefetch(pf, 16 * rs / 64, b, nbk);
                loadk(dt, p, gi, b * BB, pk + PKK * b);
            }
        } else {
            pack32(dt, bytes32(dt), p, gi, nbk, pf, 16 * rs / 64, pk);
        }
    }
    for (int64_t i = 0; i < mi; i += VN_R) {
        const int n = mi - i < VN_R ? (int)(mi - i) : VN_R;
        /* the first pass fetches the 16 rows after the next 16 (16 rs
           contiguous bytes) into L2, a share of their lines with each block */
        const uint8_t *pf = i == 0 && nr == 16 && !pk ? w + 32 * rs : NULL;
        if (K) passk(dt, p, gi, nbk, a, k, i0 + i, n, y + i * ys, ys, nr, pf, 16 * rs / 64, pk);
        else pass32(dt, p, gi, nbk, a, k, i0 + i, n, y + i * ys, ys, nr, pf, 16 * rs / 64, pk);
    }
}

void wk_qdot_vnni_tile(wk_dtype dt, const uint8_t *w, int64_t rs, int nr, int64_t nbk, const qd_rows *a, int64_t k,
                       int64_t i0, int64_t mi, float *y, int64_t ys, void *scratch)
{
    tile_vnni(dt, w, rs, nr, nbk, a, k, i0, mi, y, ys, scratch);
}

size_t wk_qdot_vnni_scratch(wk_dtype dt, int64_t nbk)
{
    return (size_t)nbk * (dt == WK_Q4_K || dt == WK_Q5_K || dt == WK_Q6_K || dt == WK_IQ4_XS ? PKK : PK32) * 64;
}

/* ---- x to q8 blocks, 16 values a vector ----------------------------------------------
 * The bits of cpu_quant.c's reference quantizers (ggml's _ref ones), for
 * blocks of finite values whose scale is a normal float: roundf as trunc
 * plus one away from zero where the dropped part is at least a half; the
 * q8_K rounding (nearest_int) as the default MXCSR rounding, exact for
 * these magnitudes. Other blocks: false, and the caller takes the
 * reference. */
WK_TARGET_VNNI static bool quant_block_avx512(wk_dtype act, const float *x, int8_t *q, float *d, int32_t *xs, int16_t *bs)
{
    const int n = act == WK_Q8_K ? QK_K : 32;
    const __m512 absm = _mm512_castsi512_ps(_mm512_set1_epi32(0x7FFFFFFF));
    __m512 amax = _mm512_setzero_ps();
    __mmask16 bad = 0;
    for (int c = 0; c < n; c += 16) {
        const __m512 a = _mm512_and_ps(_mm512_loadu_ps(x + c), absm);
        bad |= _mm512_cmp_ps_mask(a, _mm512_set1_ps(3.4028234664e38f), _CMP_NLE_UQ);   /* inf or NaN */
        amax = _mm512_max_ps(amax, a);
    }
    const float am = _mm512_reduce_max_ps(amax);
    if (bad || !(am >= 1.17549435e-38f)) return false;
    if (act != WK_Q8_K) {
        const float dd = am / ((1 << 7) - 1);
        if (!(dd >= 1.17549435e-38f)) return false;
        const float id = 1.0f / dd;
        const uint16_t h = (uint16_t)_mm_extract_epi16(_mm_cvtps_ph(_mm_set_ss(dd), _MM_FROUND_TO_NEAREST_INT), 0);
        *d = _mm_cvtss_f32(_mm_cvtph_ps(_mm_cvtsi32_si128(h)));
        __m512i sum = _mm512_setzero_si512();
        for (int c = 0; c < 32; c += 16) {
            const __m512 v = _mm512_mul_ps(_mm512_loadu_ps(x + c), _mm512_set1_ps(id));
            __m512 t = _mm512_roundscale_ps(v, _MM_FROUND_TO_ZERO | _MM_FROUND_NO_EXC);
            const __mmask16 up = _mm512_cmp_ps_mask(_mm512_and_ps(_mm512_sub_ps(v, t), absm), _mm512_set1_ps(0.5f), _CMP_GE_OQ);
            const __m512 one = _mm512_or_ps(_mm512_set1_ps(1.0f), _mm512_andnot_ps(absm, v));
            t = _mm512_mask_add_ps(t, up, t, one);
            const __m512i iv = _mm512_cvttps_epi32(t);
            sum = _mm512_add_epi32(sum, iv);
            _mm_storeu_si128((__m128i *)(q + c), _mm512_cvtepi32_epi8(iv));
        }
        *xs = _mm512_reduce_add_epi32(sum);
        return true;
    }
    /* q8_K: the scale from the first value of the largest magnitude */
    float mx = 0;
    for (int c = 0; c < QK_K; c += 16) {
        const __m512 v = _mm512_loadu_ps(x + c);
        const __mmask16 k = _mm512_cmp_ps_mask(_mm512_and_ps(v, absm), _mm512_set1_ps(am), _CMP_EQ_OQ);
        if (k) {
            mx = x[c + __builtin_ctz(k)];
            break;
        }
    }
    const float iscale = -127.f / mx;
    for (int c = 0; c < QK_K; c += 16) {
        const __m512i iv = _mm512_min_epi32(_mm512_cvtps_epi32(_mm512_mul_ps(_mm512_set1_ps(iscale), _mm512_loadu_ps(x + c))),
                                            _mm512_set1_epi32(127));
        _mm_storeu_si128((__m128i *)(q + c), _mm512_cvtepi32_epi8(iv));
        bs[c / 16] = (int16_t)_mm512_reduce_add_epi32(iv);
    }
    *d = 1 / iscale;
    return true;
}

bool wk_qdot_quant_block(wk_dtype act, const float *x, int8_t *q, float *d, int32_t *xs, int16_t *bs)
{
    return wk_ew_have_avx512() && quant_block_avx512(act, x, q, d, xs, bs);
}

#else   /* not x86: no VNNI kernels */

bool wk_qdot_vnni_ok(wk_dtype dt, int64_t row_bytes)
{
    (void)dt, (void)row_bytes;
    return false;
}

bool wk_qdot_quant_block(wk_dtype act, const float *x, int8_t *q, float *d, int32_t *xs, int16_t *bs)
{
    (void)act, (void)x, (void)q, (void)d, (void)xs, (void)bs;
    return false;
}

void wk_qdot_vnni_tile(wk_dtype dt, const uint8_t *w, int64_t rs, int nr, int64_t nbk, const qd_rows *a, int64_t k,
                       int64_t i0, int64_t mi, float *y, int64_t ys, void *scratch)
{
    (void)dt, (void)w, (void)rs, (void)nr, (void)nbk, (void)a, (void)k, (void)i0, (void)mi, (void)y, (void)ys, (void)scratch;
}

size_t wk_qdot_vnni_scratch(wk_dtype dt, int64_t nbk)
{
    (void)dt, (void)nbk;
    return 0;
}
#endif
