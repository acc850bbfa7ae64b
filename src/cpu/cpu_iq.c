/* cpu_iq.c — GGUF's IQ block types on the CPU: one block -> f32 for
 * iq4_nl, iq4_xs, iq3_xxs, iq3_s, iq2_xxs, iq2_xs, iq2_s, iq1_s, iq1_m,
 * and f32 -> one block for iq4_nl and iq4_xs. cpu_quant.c calls these
 * through its per-type tables (dequantize, qgather, the exact qmatmul
 * path); cpu_qdot.c has the integer dot products of iq4_nl / iq4_xs.
 *
 * Layouts (bytes; multi-byte fields little-endian; d an f16):
 *   iq4_nl   d, qs[16]: value j = d * V[code], codes 0..15 in the low
 *            nibbles of qs for values 0..15, high nibbles for 16..31;
 *            V = wk_iq4nl_values (a nonlinear list from -127 to 113)
 *   iq4_xs   d, scales_h (u16: 2 high bits per 32 values), scales_l[4]
 *            (4 low bits per 32 values), qs[128] (iq4_nl's nibble order
 *            per 32 values): value = d * (ls - 32) * V[code]
 *   iq2_xxs  d, 8 x (4 grid bytes, u32: 4 x 7-bit sign index, 4-bit scale
 *            in the top bits); per 8 values a point of wk_iq2xxs_grid
 *   iq2_xs   d, qs u16[32] (9-bit grid index, 7-bit sign index), scales[8]
 *            (a nibble per 16 values)
 *   iq2_s    d, qs[32] (low 8 bits of a 10-bit index), signs[32] (a bit
 *            per value), qh[8] (2 high bits per index), scales[8]
 *   iq3_xxs  d, qs[64] (a wk_iq3xxs_grid point per 4 values), u32[8]
 *            (sign indices and a 4-bit scale per 32 values)
 *   iq3_s    d, qs[64], qh[8] (9th index bit), signs[32], scales[4]
 *   iq1_s    d, qs[32], qh u16[8]: per 32 values 4 x 3 high index bits,
 *            a 3-bit scale (bits 12-14) and the sign of the shift (bit 15)
 *   iq1_m    qs[32], qh[16] (per 8 values 3 high index bits and the
 *            shift's sign), scales u16[4]: 3-bit scales per 16 values in
 *            bits 0-11, the f16 d in the top nibbles of the four words
 * The sign index s of the xxs/xs types selects wk_iq_ksigns[s], whose
 * bit j makes value j negative.
 *
 * Exactness: each value is computed with the float operations, in the
 * order, of the gguf Python package's dequantize (and ggml's
 * dequantize_row_iq*), so the f32 results are theirs bit for bit. The
 * quantizers follow llama.cpp's quantize_row_iq4_nl_ref /
 * quantize_row_iq4_xs_ref (no importance matrix), operation for operation, without
 * contraction into fma (the pragma below; -std=c11 keeps GCC from it),
 * so they write the same bytes.
 */
#if defined(__clang__)
#pragma STDC FP_CONTRACT OFF
#endif
#include <math.h>
#include "cpu_internal.h"
#include "../iq_tables.h"

#define QK_K 256
#define IQ_GROUP_MAX_EPS 1e-15f
#define IQ1_DELTA 0.125f

static inline float ld_f16(const uint8_t *p)
{
    uint16_t h;
    memcpy(&h, p, 2);
    return wk_f16_to_f32(h);
}
static inline uint16_t ld_u16(const uint8_t *p)
{
    uint16_t v;
    memcpy(&v, p, 2);
    return v;
}
static inline uint32_t ld_u32(const uint8_t *p)
{
    uint32_t v;
    memcpy(&v, p, 4);
    return v;
}
/* coordinate j of a grid point (byte j of its integer) */
static inline int pt8(uint64_t g, int j) { return (int)((g >> (8 * j)) & 0xFF); }
static inline int pt4(uint32_t g, int j) { return (int)((g >> (8 * j)) & 0xFF); }
static inline float sgn(unsigned bits, int j) { return (bits >> j) & 1 ? -1.f : 1.f; }

/* ---- decoders ------------------------------------------------------------- */

static void deq_iq4_nl(const uint8_t *b, float *y)
{
    const float d = ld_f16(b);
    const uint8_t *qs = b + 2;
    for (int j = 0; j < 16; ++j) {
        y[j] = d * (float)wk_iq4nl_values[qs[j] & 0xF];
        y[j + 16] = d * (float)wk_iq4nl_values[qs[j] >> 4];
    }
}

static void deq_iq4_xs(const uint8_t *b, float *y)
{
    const float d = ld_f16(b);
    const unsigned sh = ld_u16(b + 2);
    const uint8_t *sl = b + 4, *qs = b + 8;
    for (int ib = 0; ib < 8; ++ib, qs += 16, y += 32) {
        const int ls = ((sl[ib / 2] >> (4 * (ib % 2))) & 0xF) | (((sh >> (2 * ib)) & 3) << 4);
        const float dl = d * (float)(ls - 32);
        for (int j = 0; j < 16; ++j) {
            y[j] = dl * (float)wk_iq4nl_values[qs[j] & 0xF];
            y[j + 16] = dl * (float)wk_iq4nl_values[qs[j] >> 4];
        }
    }
}

static void deq_iq2_xxs(const uint8_t *b, float *y)
{
    const float d = ld_f16(b);
    for (int ib = 0; ib < 8; ++ib) {
        const uint8_t *g = b + 2 + 8 * ib;
        const uint32_t aux = ld_u32(g + 4);
        const float db = d * (0.5f + (float)(aux >> 28)) * 0.25f;
        for (int l = 0; l < 4; ++l, y += 8) {
            const uint64_t pt = wk_iq2xxs_grid[g[l]];
            const unsigned s = wk_iq_ksigns[(aux >> (7 * l)) & 127];
            for (int j = 0; j < 8; ++j) y[j] = db * (float)pt8(pt, j) * sgn(s, j);
        }
    }
}

static void deq_iq2_xs(const uint8_t *b, float *y)
{
    const float d = ld_f16(b);
    const uint8_t *sc = b + 66;
    for (int ib = 0; ib < 8; ++ib) {
        const float db[2] = { d * (0.5f + (float)(sc[ib] & 0xF)) * 0.25f, d * (0.5f + (float)(sc[ib] >> 4)) * 0.25f };
        for (int l = 0; l < 4; ++l, y += 8) {
            const unsigned q = ld_u16(b + 2 + 2 * (4 * ib + l));
            const uint64_t pt = wk_iq2xs_grid[q & 511];
            const unsigned s = wk_iq_ksigns[q >> 9];
            for (int j = 0; j < 8; ++j) y[j] = db[l / 2] * (float)pt8(pt, j) * sgn(s, j);
        }
    }
}

static void deq_iq2_s(const uint8_t *b, float *y)
{
    const float d = ld_f16(b);
    const uint8_t *qs = b + 2, *signs = b + 34, *qh = b + 66, *sc = b + 74;
    for (int ib = 0; ib < 8; ++ib) {
        const float db[2] = { d * (0.5f + (float)(sc[ib] & 0xF)) * 0.25f, d * (0.5f + (float)(sc[ib] >> 4)) * 0.25f };
        for (int l = 0; l < 4; ++l, y += 8) {
            const unsigned idx = qs[4 * ib + l] | (((unsigned)qh[ib] >> (2 * l) & 3) << 8);
            const uint64_t pt = wk_iq2s_grid[idx];
            const unsigned s = signs[4 * ib + l];
            for (int j = 0; j < 8; ++j) y[j] = db[l / 2] * (float)pt8(pt, j) * sgn(s, j);
        }
    }
}

static void deq_iq3_xxs(const uint8_t *b, float *y)
{
    const float d = ld_f16(b);
    const uint8_t *qs = b + 2;
    for (int ib = 0; ib < 8; ++ib) {
        const uint32_t aux = ld_u32(b + 66 + 4 * ib);
        const float db = d * (0.5f + (float)(aux >> 28)) * 0.5f;
        for (int l = 0; l < 4; ++l, y += 8) {
            const unsigned s = wk_iq_ksigns[(aux >> (7 * l)) & 127];
            const uint32_t p1 = wk_iq3xxs_grid[qs[8 * ib + 2 * l]], p2 = wk_iq3xxs_grid[qs[8 * ib + 2 * l + 1]];
            for (int j = 0; j < 4; ++j) {
                y[j] = db * (float)pt4(p1, j) * sgn(s, j);
                y[j + 4] = db * (float)pt4(p2, j) * sgn(s, j + 4);
            }
        }
    }
}

static void deq_iq3_s(const uint8_t *b, float *y)
{
    const float d = ld_f16(b);
    const uint8_t *qs = b + 2, *qh = b + 66, *signs = b + 74, *sc = b + 106;
    for (int ib = 0; ib < 8; ++ib) {
        const float db = d * (float)(1 + 2 * ((sc[ib / 2] >> (4 * (ib % 2))) & 0xF));
        for (int l = 0; l < 4; ++l, y += 8) {
            const int i1 = 8 * ib + 2 * l, i2 = i1 + 1;
            const uint32_t p1 = wk_iq3s_grid[qs[i1] | (((unsigned)qh[i1 / 8] >> (i1 % 8) & 1) << 8)];
            const uint32_t p2 = wk_iq3s_grid[qs[i2] | (((unsigned)qh[i2 / 8] >> (i2 % 8) & 1) << 8)];
            const unsigned s = signs[4 * ib + l];
            for (int j = 0; j < 4; ++j) {
                y[j] = db * (float)pt4(p1, j) * sgn(s, j);
                y[j + 4] = db * (float)pt4(p2, j) * sgn(s, j + 4);
            }
        }
    }
}

static void deq_iq1_s(const uint8_t *b, float *y)
{
    const float d = ld_f16(b);
    const uint8_t *qs = b + 2;
    for (int ib = 0; ib < 8; ++ib) {
        const unsigned qh = ld_u16(b + 34 + 2 * ib);
        const float dl = d * (float)(2 * ((qh >> 12) & 7) + 1);
        const float delta = qh & 0x8000 ? -IQ1_DELTA : IQ1_DELTA;
        for (int l = 0; l < 4; ++l, y += 8) {
            const uint64_t pt = wk_iq1s_grid[qs[4 * ib + l] | (((qh >> (3 * l)) & 7) << 8)];
            for (int j = 0; j < 8; ++j) y[j] = dl * ((float)(int8_t)pt8(pt, j) + delta);
        }
    }
}

static void deq_iq1_m(const uint8_t *b, float *y)
{
    const uint8_t *qs = b, *qh = b + 32;
    uint16_t sc[4];
    for (int i = 0; i < 4; ++i) sc[i] = ld_u16(b + 48 + 2 * i);
    const uint16_t dbits = (uint16_t)((sc[0] >> 12) | ((sc[1] >> 8) & 0x00F0) | ((sc[2] >> 4) & 0x0F00) | (sc[3] & 0xF000));
    const float d = wk_f16_to_f32(dbits);
    for (int ib = 0; ib < 8; ++ib) {
        const unsigned w = sc[ib / 2];
        const float dl[2] = { d * (float)(2 * ((w >> (6 * (ib % 2))) & 7) + 1),
                              d * (float)(2 * ((w >> (6 * (ib % 2) + 3)) & 7) + 1) };
        for (int l = 0; l < 4; ++l, y += 8) {
            const unsigned h = (unsigned)qh[2 * ib + l / 2] >> (4 * (l % 2));
            const uint64_t pt = wk_iq1s_grid[qs[4 * ib + l] | ((h & 7) << 8)];
            const float delta = h & 8 ? -IQ1_DELTA : IQ1_DELTA;
            for (int j = 0; j < 8; ++j) y[j] = dl[l / 2] * ((float)(int8_t)pt8(pt, j) + delta);
        }
    }
}

/* ---- quantizers: iq4_nl and iq4_xs ------------------------------------------ */
/* llama.cpp's quantize_row_iq4_xs_ref tries 7 scales on each side of its
 * first guess; quantize_row_iq4_nl_ref none (its llama-quantize path,
 * quantize_iq4_nl, tries 7: wick follows the reference function). */

/* index of the value of V nearest x (the upper one on a tie; NaN: 15) */
static inline int nearest_value(float x)
{
    const int8_t *v = wk_iq4nl_values;
    if (x <= v[0]) return 0;
    if (x >= v[15]) return 15;
    int lo = 0, hi = 15;
    while (hi - lo > 1) {
        const int mid = (lo + hi) / 2;
        if (x < v[mid]) hi = mid;
        else lo = mid;
    }
    return x - v[hi - 1] < v[hi] - x ? hi - 1 : hi;
}

/* ggml's nearest_int (round half to even through the float's bits) */
static inline int iq_nearest_int(float fval)
{
    float val = fval + 12582912.f;
    int i;
    memcpy(&i, &val, sizeof(int));
    return (i & 0x007fffff) - 0x00400000;
}

/* the scale of 32 values xb for the value list, weights x^2 (max: the
 * value of largest magnitude): the codes of a first guess (-max / V[0]
 * when ntry > 0, max / V[0] otherwise) and their least-squares scale;
 * then, for ntry > 0, the trials (t + V[0]) / max for t = -ntry .. ntry,
 * each followed by the least-squares scale of its codes, keeping the one
 * of the largest sum(w q x)^2 / sum(w q q). The first guess's codes go
 * to L. 0 (L untouched) when the largest magnitude is below 1e-15. */
static float iq4_block_scale(const float *xb, uint8_t *L, int ntry)
{
    const int8_t *v = wk_iq4nl_values;
    float w[32];
    for (int j = 0; j < 32; ++j) w[j] = xb[j] * xb[j];
    float amax = 0, max = 0;
    for (int j = 0; j < 32; ++j) {
        const float ax = fabsf(xb[j]);
        if (ax > amax) {
            amax = ax;
            max = xb[j];
        }
    }
    if (amax < IQ_GROUP_MAX_EPS) return 0;
    float d = ntry > 0 ? -max / (float)v[0] : max / (float)v[0];
    float id = 1 / d;
    float sumqx = 0, sumq2 = 0;
    for (int j = 0; j < 32; ++j) {
        const int l = nearest_value(id * xb[j]);
        L[j] = (uint8_t)l;
        const float q = (float)v[l];
        sumqx += w[j] * q * xb[j];
        sumq2 += w[j] * q * q;
    }
    d = sumqx / sumq2;
    float best = d * sumqx;
    for (int t = -ntry; t <= ntry; ++t) {
        id = (float)(t + v[0]) / max;
        sumqx = sumq2 = 0;
        for (int j = 0; j < 32; ++j) {
            const int l = nearest_value(id * xb[j]);
            const float q = (float)v[l];
            sumqx += w[j] * q * xb[j];
            sumq2 += w[j] * q * q;
        }
        if (sumq2 > 0 && sumqx * sumqx > best * sumq2) {
            d = sumqx / sumq2;
            best = d * sumqx;
        }
    }
    return d;
}

static void pack_nibbles(const uint8_t *L, uint8_t *qs, int n)
{
    for (int i = 0; i < n / 32; ++i)
        for (int j = 0; j < 16; ++j) qs[16 * i + j] = (uint8_t)(L[32 * i + j] | (L[32 * i + 16 + j] << 4));
}

static void st_f16(uint8_t *p, float f)
{
    const uint16_t h = wk_f32_to_f16(f);
    memcpy(p, &h, 2);
}

/* llama.cpp's quantize_row_iq4_nl_ref: no trials; the codes of the first
 * guess with their least-squares scale. A block whose largest magnitude
 * is below 1e-15 gets d = 0 and codes 8 (the value nearest 0: llama.cpp
 * leaves them as its previous block's; they decode to 0 either way). */
static void q_iq4_nl(const float *x, uint8_t *b)
{
    uint8_t L[32];
    memset(L, 8, sizeof L);
    const float d = iq4_block_scale(x, L, -1);
    st_f16(b, d);
    pack_nibbles(L, b + 2, 32);
}

static void q_iq4_xs(const float *x, uint8_t *b)
{
    uint8_t L[QK_K] = { 0 };
    float scales[8];
    float max_scale = 0, amax_scale = 0;
    for (int ib = 0; ib < 8; ++ib) {
        scales[ib] = iq4_block_scale(x + 32 * ib, L + 32 * ib, 7);
        const float a = fabsf(scales[ib]);
        if (a > amax_scale) {
            amax_scale = a;
            max_scale = scales[ib];
        }
    }
    const float d = -max_scale / 32;
    st_f16(b, d);
    const float id = d ? 1 / d : 0.f;
    uint16_t sh = 0;
    uint8_t *sl = b + 4;
    for (int ib = 0; ib < 8; ++ib) {
        int l = iq_nearest_int(id * scales[ib]);
        l = l < -32 ? -32 : l > 31 ? 31 : l;
        const float dl = d * (float)l;
        const float idl = dl ? 1 / dl : 0.f;
        for (int j = 0; j < 32; ++j) L[32 * ib + j] = (uint8_t)nearest_value(idl * x[32 * ib + j]);
        l += 32;
        if (ib % 2 == 0) sl[ib / 2] = (uint8_t)(l & 0xF);
        else sl[ib / 2] |= (uint8_t)((l & 0xF) << 4);
        sh |= (uint16_t)((l >> 4) << (2 * ib));
    }
    memcpy(b + 2, &sh, 2);
    pack_nibbles(L, b + 8, QK_K);
}

/* ---- the tables cpu_quant.c reads ---------------------------------------------- */

wk_cpu_dblock_fn wk_cpu_iq_dequantizer(wk_dtype dt)
{
    switch (dt) {
    case WK_IQ4_NL: return deq_iq4_nl;
    case WK_IQ4_XS: return deq_iq4_xs;
    case WK_IQ3_XXS: return deq_iq3_xxs;
    case WK_IQ3_S: return deq_iq3_s;
    case WK_IQ2_XXS: return deq_iq2_xxs;
    case WK_IQ2_XS: return deq_iq2_xs;
    case WK_IQ2_S: return deq_iq2_s;
    case WK_IQ1_S: return deq_iq1_s;
    case WK_IQ1_M: return deq_iq1_m;
    default: return NULL;
    }
}

wk_cpu_qblock_fn wk_cpu_iq_quantizer(wk_dtype dt)
{
    switch (dt) {
    case WK_IQ4_NL: return q_iq4_nl;
    case WK_IQ4_XS: return q_iq4_xs;
    default: return NULL;
    }
}
