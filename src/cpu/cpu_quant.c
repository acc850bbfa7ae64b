/* cpu_quant.c — GGUF's block-quantized types on the CPU: dequantize
 * (block -> f32, then f16/bf16 by one rounding), quantize (f32 -> block),
 * the quantized matrix product and the quantized row gather. The
 * families are QCONVERT, QMATMUL and QGATHER of src/backend.h;
 * docs/quantization.md describes the layouts and what each op computes.
 *
 * Exactness. The decoders compute each value with the float operations,
 * in the order, of ggml's dequantize_row_* (which the gguf Python
 * package's numpy code repeats), so the results are theirs bit for bit.
 * The quantizers are ports of llama.cpp's reference quantizers
 * (quantize_row_*_ref of ggml-quants.c and their helpers nearest_int,
 * make_qx_quants, make_q3_quants, make_qkx2_quants), statement for
 * statement: the same float operations in the same order give the same
 * bytes. That needs IEEE single precision without contraction of a*b+c
 * into an fma: -std=c11 keeps GCC from contracting, and the pragma below
 * keeps clang from it. The float -> small integer conversions of the
 * 32-element quantizers, undefined in C outside the integer's range,
 * are written as the x86 conversion llama.cpp and numpy compile to
 * (to_i32 below), so a block of huge, tiny or non-finite values gives
 * the same bytes and never undefined behaviour.
 *
 * Every block is coded on its own, so the kernels split their work over
 * the thread pool by block (rows x blocks per row), or by weight rows
 * for qmatmul: a task dequantizes 8 or 32 rows of the weight into f32
 * and takes their dot products with every row of x (8 partial sums in
 * f32 per dot product): the exact path, taken with WICK_CPU_QDOT=0. By
 * default the product takes the integer path of cpu_qdot.c instead (x
 * quantized to q8 blocks, integer dot products, as llama.cpp's CPU
 * kernels).
 *
 * Multi-byte fields are little-endian, as GGUF stores them (this file
 * assumes a little-endian host, as the rest of wick does).
 */
#if defined(__clang__)
#pragma STDC FP_CONTRACT OFF
#endif
#include <math.h>
#include <float.h>
#include <stdatomic.h>
#include <stdlib.h>
#include "cpu_internal.h"

#define QK_K 256
#define GROUP_MAX_EPS 1e-15f

/* ---- helpers ------------------------------------------------------------- */

static inline float ld_h(const uint8_t *p)
{
    uint16_t h;
    memcpy(&h, p, 2);
    return wk_f16_to_f32(h);
}
static inline void st_h(uint8_t *p, float f)
{
    uint16_t h = wk_f32_to_f16(f);
    memcpy(p, &h, 2);
}

/* float -> int32 as x86's cvttss2si: truncation, INT32_MIN for NaN and
 * out-of-range values. (int8_t)/(uint8_t) of it is what a C cast of the
 * float to those types compiles to on x86-64 in llama.cpp and numpy. */
static inline int32_t to_i32(float v)
{
    return v > -2147483648.0f && v < 2147483648.0f ? (int32_t)v : INT32_MIN;
}

/* ggml's nearest_int: round to nearest even through the float's bits
 * (exact for |fval| <= 4194303; beyond, the same bits as ggml's). */
static inline int nearest_int(float fval)
{
    float val = fval + 12582912.f;
    int i;
    memcpy(&i, &val, sizeof(int));
    return (i & 0x007fffff) - 0x00400000;
}

#define QMIN(a, b) ((a) < (b) ? (a) : (b))
#define QMAX(a, b) ((a) > (b) ? (a) : (b))

/* ---- decoders: one block -> its values in f32 ------------------------------ */

static void deq_q4_0(const uint8_t *b, float *y)
{
    const float d = ld_h(b);
    const uint8_t *qs = b + 2;
    for (int j = 0; j < 16; ++j) {
        const int x0 = (qs[j] & 0x0F) - 8;
        const int x1 = (qs[j] >> 4) - 8;
        y[j] = x0 * d;
        y[j + 16] = x1 * d;
    }
}

static void deq_q4_1(const uint8_t *b, float *y)
{
    const float d = ld_h(b), m = ld_h(b + 2);
    const uint8_t *qs = b + 4;
    for (int j = 0; j < 16; ++j) {
        const int x0 = qs[j] & 0x0F;
        const int x1 = qs[j] >> 4;
        y[j] = x0 * d + m;
        y[j + 16] = x1 * d + m;
    }
}

static void deq_q5_0(const uint8_t *b, float *y)
{
    const float d = ld_h(b);
    uint32_t qh;
    memcpy(&qh, b + 2, 4);
    const uint8_t *qs = b + 6;
    for (int j = 0; j < 16; ++j) {
        const uint8_t xh_0 = ((qh >> (j + 0)) << 4) & 0x10;
        const uint8_t xh_1 = ((qh >> (j + 12))) & 0x10;
        const int32_t x0 = ((qs[j] & 0x0F) | xh_0) - 16;
        const int32_t x1 = ((qs[j] >> 4) | xh_1) - 16;
        y[j] = x0 * d;
        y[j + 16] = x1 * d;
    }
}

static void deq_q5_1(const uint8_t *b, float *y)
{
    const float d = ld_h(b), m = ld_h(b + 2);
    uint32_t qh;
    memcpy(&qh, b + 4, 4);
    const uint8_t *qs = b + 8;
    for (int j = 0; j < 16; ++j) {
        const uint8_t xh_0 = ((qh >> (j + 0)) << 4) & 0x10;
        const uint8_t xh_1 = ((qh >> (j + 12))) & 0x10;
        const int x0 = (qs[j] & 0x0F) | xh_0;
        const int x1 = (qs[j] >> 4) | xh_1;
        y[j] = x0 * d + m;
        y[j + 16] = x1 * d + m;
    }
}

static void deq_q8_0(const uint8_t *b, float *y)
{
    const float d = ld_h(b);
    const int8_t *qs = (const int8_t *)(b + 2);
    for (int j = 0; j < 32; ++j) y[j] = qs[j] * d;
}

/* q8_1: d, s (= d * sum of qs, unused here), qs */
static void deq_q8_1(const uint8_t *b, float *y)
{
    const float d = ld_h(b);
    const int8_t *qs = (const int8_t *)(b + 4);
    for (int j = 0; j < 32; ++j) y[j] = qs[j] * d;
}

/* q2_k: scales[16], qs[64], d, dmin */
static void deq_q2_k(const uint8_t *b, float *y)
{
    const uint8_t *sc8 = b, *q = b + 16;
    const float d = ld_h(b + 80), min = ld_h(b + 82);
    int is = 0;
    float dl, ml;
    for (int n = 0; n < QK_K; n += 128) {
        int shift = 0;
        for (int j = 0; j < 4; ++j) {
            uint8_t sc = sc8[is++];
            dl = d * (sc & 0xF);
            ml = min * (sc >> 4);
            for (int l = 0; l < 16; ++l) *y++ = dl * ((int8_t)((q[l] >> shift) & 3)) - ml;
            sc = sc8[is++];
            dl = d * (sc & 0xF);
            ml = min * (sc >> 4);
            for (int l = 0; l < 16; ++l) *y++ = dl * ((int8_t)((q[l + 16] >> shift) & 3)) - ml;
            shift += 2;
        }
        q += 32;
    }
}

/* the 16 6-bit scales of a q3_k block (12 bytes), as signed values - 32 */
static void q3k_scales(const uint8_t *s12, int8_t *scales)
{
    const uint32_t kmask1 = 0x03030303, kmask2 = 0x0f0f0f0f;
    uint32_t aux[4];
    memcpy(aux, s12, 12);
    uint32_t tmp = aux[2];
    aux[2] = ((aux[0] >> 4) & kmask2) | (((tmp >> 4) & kmask1) << 4);
    aux[3] = ((aux[1] >> 4) & kmask2) | (((tmp >> 6) & kmask1) << 4);
    aux[0] = (aux[0] & kmask2) | (((tmp >> 0) & kmask1) << 4);
    aux[1] = (aux[1] & kmask2) | (((tmp >> 2) & kmask1) << 4);
    memcpy(scales, aux, 16);
}

/* q3_k: hmask[32], qs[64], scales[12], d */
static void deq_q3_k(const uint8_t *b, float *y)
{
    const float d_all = ld_h(b + 108);
    const uint8_t *q = b + 32, *hm = b;
    int8_t scales[16];
    q3k_scales(b + 96, scales);
    uint8_t m = 1;
    int is = 0;
    float dl;
    for (int n = 0; n < QK_K; n += 128) {
        int shift = 0;
        for (int j = 0; j < 4; ++j) {
            dl = d_all * (scales[is++] - 32);
            for (int l = 0; l < 16; ++l) *y++ = dl * ((int8_t)((q[l + 0] >> shift) & 3) - ((hm[l + 0] & m) ? 0 : 4));
            dl = d_all * (scales[is++] - 32);
            for (int l = 0; l < 16; ++l) *y++ = dl * ((int8_t)((q[l + 16] >> shift) & 3) - ((hm[l + 16] & m) ? 0 : 4));
            shift += 2;
            m <<= 1;
        }
        q += 32;
    }
}

/* scale and min j of the 12 packed 6-bit values of q4_k/q5_k */
static inline void get_scale_min_k4(int j, const uint8_t *q, uint8_t *d, uint8_t *m)
{
    if (j < 4) {
        *d = q[j] & 63;
        *m = q[j + 4] & 63;
    } else {
        *d = (q[j + 4] & 0xF) | ((q[j - 4] >> 6) << 4);
        *m = (q[j + 4] >> 4) | ((q[j - 0] >> 6) << 4);
    }
}

/* q4_k: d, dmin, scales[12], qs[128] */
static void deq_q4_k(const uint8_t *b, float *y)
{
    const float d = ld_h(b), min = ld_h(b + 2);
    const uint8_t *scales = b + 4, *q = b + 16;
    int is = 0;
    uint8_t sc, m;
    for (int j = 0; j < QK_K; j += 64) {
        get_scale_min_k4(is + 0, scales, &sc, &m);
        const float d1 = d * sc, m1 = min * m;
        get_scale_min_k4(is + 1, scales, &sc, &m);
        const float d2 = d * sc, m2 = min * m;
        for (int l = 0; l < 32; ++l) *y++ = d1 * (q[l] & 0xF) - m1;
        for (int l = 0; l < 32; ++l) *y++ = d2 * (q[l] >> 4) - m2;
        q += 32;
        is += 2;
    }
}

/* q5_k: d, dmin, scales[12], qh[32], qs[128] */
static void deq_q5_k(const uint8_t *b, float *y)
{
    const float d = ld_h(b), min = ld_h(b + 2);
    const uint8_t *scales = b + 4, *qh = b + 16, *ql = b + 48;
    int is = 0;
    uint8_t sc, m, u1 = 1, u2 = 2;
    for (int j = 0; j < QK_K; j += 64) {
        get_scale_min_k4(is + 0, scales, &sc, &m);
        const float d1 = d * sc, m1 = min * m;
        get_scale_min_k4(is + 1, scales, &sc, &m);
        const float d2 = d * sc, m2 = min * m;
        for (int l = 0; l < 32; ++l) *y++ = d1 * ((ql[l] & 0xF) + (qh[l] & u1 ? 16 : 0)) - m1;
        for (int l = 0; l < 32; ++l) *y++ = d2 * ((ql[l] >> 4) + (qh[l] & u2 ? 16 : 0)) - m2;
        ql += 32;
        is += 2;
        u1 <<= 2;
        u2 <<= 2;
    }
}

/* q6_k: ql[128], qh[64], scales[16] (int8), d */
static void deq_q6_k(const uint8_t *b, float *y)
{
    const float d = ld_h(b + 208);
    const uint8_t *ql = b, *qh = b + 128;
    const int8_t *sc = (const int8_t *)(b + 192);
    for (int n = 0; n < QK_K; n += 128) {
        for (int l = 0; l < 32; ++l) {
            int is = l / 16;
            const int8_t q1 = (int8_t)((ql[l + 0] & 0xF) | (((qh[l] >> 0) & 3) << 4)) - 32;
            const int8_t q2 = (int8_t)((ql[l + 32] & 0xF) | (((qh[l] >> 2) & 3) << 4)) - 32;
            const int8_t q3 = (int8_t)((ql[l + 0] >> 4) | (((qh[l] >> 4) & 3) << 4)) - 32;
            const int8_t q4 = (int8_t)((ql[l + 32] >> 4) | (((qh[l] >> 6) & 3) << 4)) - 32;
            y[l + 0] = d * sc[is + 0] * q1;
            y[l + 32] = d * sc[is + 2] * q2;
            y[l + 64] = d * sc[is + 4] * q3;
            y[l + 96] = d * sc[is + 6] * q4;
        }
        y += 128;
        ql += 64;
        qh += 32;
        sc += 8;
    }
}

/* q8_k: d (f32), qs[256], bsums[16] (int16, unused here) */
static void deq_q8_k(const uint8_t *b, float *y)
{
    float d;
    memcpy(&d, b, 4);
    const int8_t *qs = (const int8_t *)(b + 4);
    for (int j = 0; j < QK_K; ++j) y[j] = d * qs[j];
}

/* ---- quantizers: llama.cpp's reference, one block at a time --------------- */

static void q_q4_0(const float *x, uint8_t *b)
{
    const int qk = 32;
    float amax = 0.0f, max = 0.0f;
    for (int j = 0; j < qk; j++) {
        const float v = x[j];
        if (amax < fabsf(v)) {
            amax = fabsf(v);
            max = v;
        }
    }
    const float d = max / -8;
    const float id = d ? 1.0f / d : 0.0f;
    st_h(b, d);
    uint8_t *qs = b + 2;
    for (int j = 0; j < qk / 2; ++j) {
        const float x0 = x[0 + j] * id;
        const float x1 = x[qk / 2 + j] * id;
        const uint8_t xi0 = (uint8_t)QMIN(15, (int8_t)to_i32(x0 + 8.5f));
        const uint8_t xi1 = (uint8_t)QMIN(15, (int8_t)to_i32(x1 + 8.5f));
        qs[j] = (uint8_t)(xi0 | (xi1 << 4));
    }
}

static void q_q4_1(const float *x, uint8_t *b)
{
    const int qk = 32;
    float min = FLT_MAX, max = -FLT_MAX;
    for (int j = 0; j < qk; j++) {
        const float v = x[j];
        if (v < min) min = v;
        if (v > max) max = v;
    }
    const float d = (max - min) / ((1 << 4) - 1);
    const float id = d ? 1.0f / d : 0.0f;
    st_h(b, d);
    st_h(b + 2, min);
    uint8_t *qs = b + 4;
    for (int j = 0; j < qk / 2; ++j) {
        const float x0 = (x[0 + j] - min) * id;
        const float x1 = (x[qk / 2 + j] - min) * id;
        const uint8_t xi0 = (uint8_t)QMIN(15, (int8_t)to_i32(x0 + 0.5f));
        const uint8_t xi1 = (uint8_t)QMIN(15, (int8_t)to_i32(x1 + 0.5f));
        qs[j] = (uint8_t)(xi0 | (xi1 << 4));
    }
}

static void q_q5_0(const float *x, uint8_t *b)
{
    const int qk = 32;
    float amax = 0.0f, max = 0.0f;
    for (int j = 0; j < qk; j++) {
        const float v = x[j];
        if (amax < fabsf(v)) {
            amax = fabsf(v);
            max = v;
        }
    }
    const float d = max / -16;
    const float id = d ? 1.0f / d : 0.0f;
    st_h(b, d);
    uint32_t qh = 0;
    uint8_t *qs = b + 6;
    for (int j = 0; j < qk / 2; ++j) {
        const float x0 = x[0 + j] * id;
        const float x1 = x[qk / 2 + j] * id;
        const uint8_t xi0 = (uint8_t)QMIN(31, (int8_t)to_i32(x0 + 16.5f));
        const uint8_t xi1 = (uint8_t)QMIN(31, (int8_t)to_i32(x1 + 16.5f));
        qs[j] = (uint8_t)((xi0 & 0x0F) | ((xi1 & 0x0F) << 4));
        qh |= ((xi0 & 0x10u) >> 4) << (j + 0);
        qh |= ((xi1 & 0x10u) >> 4) << (j + qk / 2);
    }
    memcpy(b + 2, &qh, 4);
}

static void q_q5_1(const float *x, uint8_t *b)
{
    const int qk = 32;
    float min = FLT_MAX, max = -FLT_MAX;
    for (int j = 0; j < qk; j++) {
        const float v = x[j];
        if (v < min) min = v;
        if (v > max) max = v;
    }
    const float d = (max - min) / ((1 << 5) - 1);
    const float id = d ? 1.0f / d : 0.0f;
    st_h(b, d);
    st_h(b + 2, min);
    uint32_t qh = 0;
    uint8_t *qs = b + 8;
    for (int j = 0; j < qk / 2; ++j) {
        const float x0 = (x[0 + j] - min) * id;
        const float x1 = (x[qk / 2 + j] - min) * id;
        const uint8_t xi0 = (uint8_t)to_i32(x0 + 0.5f);
        const uint8_t xi1 = (uint8_t)to_i32(x1 + 0.5f);
        qs[j] = (uint8_t)((xi0 & 0x0F) | ((xi1 & 0x0F) << 4));
        qh |= ((xi0 & 0x10u) >> 4) << (j + 0);
        qh |= ((xi1 & 0x10u) >> 4) << (j + qk / 2);
    }
    memcpy(b + 4, &qh, 4);
}

static void q_q8_0(const float *x, uint8_t *b)
{
    float amax = 0.0f;
    for (int j = 0; j < 32; j++) amax = QMAX(amax, fabsf(x[j]));
    const float d = amax / ((1 << 7) - 1);
    const float id = d ? 1.0f / d : 0.0f;
    st_h(b, d);
    int8_t *qs = (int8_t *)(b + 2);
    for (int j = 0; j < 32; ++j) qs[j] = (int8_t)to_i32(roundf(x[j] * id));
}

static void q_q8_1(const float *x, uint8_t *b)
{
    float amax = 0.0f;
    for (int j = 0; j < 32; j++) amax = QMAX(amax, fabsf(x[j]));
    const float d = amax / ((1 << 7) - 1);
    const float id = d ? 1.0f / d : 0.0f;
    st_h(b, d);
    int8_t *qs = (int8_t *)(b + 4);
    int sum = 0;
    for (int j = 0; j < 16; ++j) {
        const float v0 = x[j] * id;
        const float v1 = x[16 + j] * id;
        qs[j] = (int8_t)to_i32(roundf(v0));
        qs[16 + j] = (int8_t)to_i32(roundf(v1));
        sum += qs[j];
        sum += qs[16 + j];
    }
    st_h(b + 2, sum * d);
}

/* ggml's make_qx_quants (qw NULL, as the reference quantizers call it) */
static float make_qx_quants(int n, int nmax, const float *x, int8_t *L, int rmse_type, const float *qw)
{
    float max = 0, amax = 0;
    for (int i = 0; i < n; ++i) {
        float ax = fabsf(x[i]);
        if (ax > amax) {
            amax = ax;
            max = x[i];
        }
    }
    if (amax < GROUP_MAX_EPS) {
        for (int i = 0; i < n; ++i) L[i] = 0;
        return 0.f;
    }
    float iscale = -nmax / max;
    if (rmse_type == 0) {
        for (int i = 0; i < n; ++i) {
            int l = nearest_int(iscale * x[i]);
            L[i] = (int8_t)(nmax + QMAX(-nmax, QMIN(nmax - 1, l)));
        }
        return 1 / iscale;
    }
    bool return_early = false;
    if (rmse_type < 0) {
        rmse_type = -rmse_type;
        return_early = true;
    }
    float sumlx = 0, suml2 = 0;
    for (int i = 0; i < n; ++i) {
        int l = nearest_int(iscale * x[i]);
        l = QMAX(-nmax, QMIN(nmax - 1, l));
        L[i] = (int8_t)(l + nmax);
        float w = qw ? qw[i] : rmse_type == 1 ? x[i] * x[i] : rmse_type == 2 ? 1 : rmse_type == 3 ? fabsf(x[i]) : sqrtf(fabsf(x[i]));
        sumlx += w * x[i] * l;
        suml2 += w * l * l;
    }
    float scale = suml2 ? sumlx / suml2 : 0.0f;
    if (return_early) return suml2 > 0 ? 0.5f * (scale + 1 / iscale) : 1 / iscale;
    float best = scale * sumlx;
    for (int is = -9; is <= 9; ++is) {
        if (is == 0) continue;
        iscale = -(nmax + 0.1f * is) / max;
        sumlx = suml2 = 0;
        for (int i = 0; i < n; ++i) {
            int l = nearest_int(iscale * x[i]);
            l = QMAX(-nmax, QMIN(nmax - 1, l));
            float w = qw ? qw[i] : rmse_type == 1 ? x[i] * x[i] : rmse_type == 2 ? 1 : rmse_type == 3 ? fabsf(x[i]) : sqrtf(fabsf(x[i]));
            sumlx += w * x[i] * l;
            suml2 += w * l * l;
        }
        if (suml2 > 0 && sumlx * sumlx > best * suml2) {
            for (int i = 0; i < n; ++i) {
                int l = nearest_int(iscale * x[i]);
                L[i] = (int8_t)(nmax + QMAX(-nmax, QMIN(nmax - 1, l)));
            }
            scale = sumlx / suml2;
            best = scale * sumlx;
        }
    }
    return scale;
}

/* ggml's make_q3_quants */
static float make_q3_quants(int n, int nmax, const float *x, int8_t *L, bool do_rmse)
{
    float max = 0, amax = 0;
    for (int i = 0; i < n; ++i) {
        float ax = fabsf(x[i]);
        if (ax > amax) {
            amax = ax;
            max = x[i];
        }
    }
    if (amax < GROUP_MAX_EPS) {
        for (int i = 0; i < n; ++i) L[i] = 0;
        return 0.f;
    }
    float iscale = -nmax / max;
    if (do_rmse) {
        float sumlx = 0, suml2 = 0;
        for (int i = 0; i < n; ++i) {
            int l = nearest_int(iscale * x[i]);
            l = QMAX(-nmax, QMIN(nmax - 1, l));
            L[i] = (int8_t)l;
            float w = x[i] * x[i];
            sumlx += w * x[i] * l;
            suml2 += w * l * l;
        }
        for (int itry = 0; itry < 5; ++itry) {
            int n_changed = 0;
            for (int i = 0; i < n; ++i) {
                float w = x[i] * x[i];
                float slx = sumlx - w * x[i] * L[i];
                if (slx > 0) {
                    float sl2 = suml2 - w * L[i] * L[i];
                    int new_l = nearest_int(x[i] * sl2 / slx);
                    new_l = QMAX(-nmax, QMIN(nmax - 1, new_l));
                    if (new_l != L[i]) {
                        slx += w * x[i] * new_l;
                        sl2 += w * new_l * new_l;
                        if (sl2 > 0 && slx * slx * suml2 > sumlx * sumlx * sl2) {
                            L[i] = (int8_t)new_l;
                            sumlx = slx;
                            suml2 = sl2;
                            ++n_changed;
                        }
                    }
                }
            }
            if (!n_changed) break;
        }
        for (int i = 0; i < n; ++i) L[i] = (int8_t)(L[i] + nmax);
        return suml2 > 0.0f ? sumlx / suml2 : 0.0f;
    }
    for (int i = 0; i < n; ++i) {
        int l = nearest_int(iscale * x[i]);
        l = QMAX(-nmax, QMIN(nmax - 1, l));
        L[i] = (int8_t)(l + nmax);
    }
    return 1 / iscale;
}

/* ggml's make_qkx2_quants */
static float make_qkx2_quants(int n, int nmax, const float *x, const float *weights, uint8_t *L, float *the_min,
                              uint8_t *Laux, float rmin, float rdelta, int nstep, bool use_mad)
{
    float min = x[0], max = x[0];
    float sum_w = weights[0];
    float sum_x = sum_w * x[0];
    for (int i = 1; i < n; ++i) {
        if (x[i] < min) min = x[i];
        if (x[i] > max) max = x[i];
        float w = weights[i];
        sum_w += w;
        sum_x += w * x[i];
    }
    if (min > 0) min = 0;
    if (max == min) {
        for (int i = 0; i < n; ++i) L[i] = 0;
        *the_min = -min;
        return 0.f;
    }
    float iscale = nmax / (max - min);
    float scale = 1 / iscale;
    float best_error = 0;
    for (int i = 0; i < n; ++i) {
        int l = nearest_int(iscale * (x[i] - min));
        L[i] = (uint8_t)QMAX(0, QMIN(nmax, l));
        float diff = scale * L[i] + min - x[i];
        diff = use_mad ? fabsf(diff) : diff * diff;
        float w = weights[i];
        best_error += w * diff;
    }
    if (nstep < 1) {
        *the_min = -min;
        return scale;
    }
    for (int is = 0; is <= nstep; ++is) {
        iscale = (rmin + rdelta * is + nmax) / (max - min);
        float sum_l = 0, sum_l2 = 0, sum_xl = 0;
        for (int i = 0; i < n; ++i) {
            int l = nearest_int(iscale * (x[i] - min));
            l = QMAX(0, QMIN(nmax, l));
            Laux[i] = (uint8_t)l;
            float w = weights[i];
            sum_l += w * l;
            sum_l2 += w * l * l;
            sum_xl += w * l * x[i];
        }
        float D = sum_w * sum_l2 - sum_l * sum_l;
        if (D > 0) {
            float this_scale = (sum_w * sum_xl - sum_x * sum_l) / D;
            float this_min = (sum_l2 * sum_x - sum_l * sum_xl) / D;
            if (this_min > 0) {
                this_min = 0;
                this_scale = sum_xl / sum_l2;
            }
            float cur_error = 0;
            for (int i = 0; i < n; ++i) {
                float diff = this_scale * Laux[i] + this_min - x[i];
                diff = use_mad ? fabsf(diff) : diff * diff;
                float w = weights[i];
                cur_error += w * diff;
            }
            if (cur_error < best_error) {
                for (int i = 0; i < n; ++i) L[i] = Laux[i];
                best_error = cur_error;
                scale = this_scale;
                min = this_min;
            }
        }
    }
    *the_min = -min;
    return scale;
}

/* q2_k: scales[16], qs[64], d, dmin */
static void q_q2_k(const float *x, uint8_t *b)
{
    uint8_t L[QK_K], Laux[16];
    float weights[16], mins[QK_K / 16], scales[QK_K / 16];
    const float q4scale = 15.f;
    uint8_t *ysc = b, *yqs = b + 16;
    float max_scale = 0, max_min = 0;
    for (int j = 0; j < QK_K / 16; ++j) {
        for (int l = 0; l < 16; ++l) weights[l] = fabsf(x[16 * j + l]);
        scales[j] = make_qkx2_quants(16, 3, x + 16 * j, weights, L + 16 * j, &mins[j], Laux, -0.5f, 0.1f, 15, true);
        float scale = scales[j];
        if (scale > max_scale) max_scale = scale;
        float min = mins[j];
        if (min > max_min) max_min = min;
    }
    if (max_scale > 0) {
        float iscale = q4scale / max_scale;
        for (int j = 0; j < QK_K / 16; ++j) {
            int l = nearest_int(iscale * scales[j]);
            ysc[j] = (uint8_t)l;
        }
        st_h(b + 80, max_scale / q4scale);
    } else {
        for (int j = 0; j < QK_K / 16; ++j) ysc[j] = 0;
        st_h(b + 80, 0.f);
    }
    if (max_min > 0) {
        float iscale = q4scale / max_min;
        for (int j = 0; j < QK_K / 16; ++j) {
            int l = nearest_int(iscale * mins[j]);
            ysc[j] |= (uint8_t)((unsigned)l << 4);   /* ggml's l << 4, defined for l < 0 (non-finite mins) */
        }
        st_h(b + 82, max_min / q4scale);
    } else {
        st_h(b + 82, 0.f);
    }
    for (int j = 0; j < QK_K / 16; ++j) {
        const float d = ld_h(b + 80) * (ysc[j] & 0xF);
        if (!d) continue;
        const float dm = ld_h(b + 82) * (ysc[j] >> 4);
        for (int ii = 0; ii < 16; ++ii) {
            int l = nearest_int((x[16 * j + ii] + dm) / d);
            l = QMAX(0, QMIN(3, l));
            L[16 * j + ii] = (uint8_t)l;
        }
    }
    for (int j = 0; j < QK_K; j += 128)
        for (int l = 0; l < 32; ++l)
            yqs[j / 4 + l] = (uint8_t)(L[j + l] | (L[j + l + 32] << 2) | (L[j + l + 64] << 4) | (L[j + l + 96] << 6));
}

/* q3_k: hmask[32], qs[64], scales[12], d */
static void q_q3_k(const float *x, uint8_t *b)
{
    int8_t L[QK_K];
    float scales[QK_K / 16];
    uint8_t *hmask = b, *yqs = b + 32, *ysc = b + 96;
    float max_scale = 0, amax = 0;
    for (int j = 0; j < QK_K / 16; ++j) {
        scales[j] = make_q3_quants(16, 4, x + 16 * j, L + 16 * j, true);
        float scale = fabsf(scales[j]);
        if (scale > amax) {
            amax = scale;
            max_scale = scales[j];
        }
    }
    memset(ysc, 0, 12);
    if (max_scale) {
        float iscale = -32.f / max_scale;
        for (int j = 0; j < QK_K / 16; ++j) {
            int8_t l = (int8_t)nearest_int(iscale * scales[j]);
            l = (int8_t)(QMAX(-32, QMIN(31, l)) + 32);
            if (j < 8) ysc[j] = (uint8_t)(l & 0xF);
            else ysc[j - 8] |= (uint8_t)((l & 0xF) << 4);
            l >>= 4;
            ysc[j % 4 + 8] |= (uint8_t)(l << (2 * (j / 4)));
        }
        st_h(b + 108, 1 / iscale);
    } else {
        st_h(b + 108, 0.f);
    }
    int8_t sc;
    for (int j = 0; j < QK_K / 16; ++j) {
        sc = (int8_t)(j < 8 ? ysc[j] & 0xF : ysc[j - 8] >> 4);
        sc = (int8_t)((sc | (((ysc[8 + j % 4] >> (2 * (j / 4))) & 3) << 4)) - 32);
        float d = ld_h(b + 108) * sc;
        if (!d) continue;
        for (int ii = 0; ii < 16; ++ii) {
            int l = nearest_int(x[16 * j + ii] / d);
            l = QMAX(-4, QMIN(3, l));
            L[16 * j + ii] = (int8_t)(l + 4);
        }
    }
    memset(hmask, 0, QK_K / 8);
    int m = 0;
    uint8_t hm = 1;
    for (int j = 0; j < QK_K; ++j) {
        if (L[j] > 3) {
            hmask[m] |= hm;
            L[j] -= 4;
        }
        if (++m == QK_K / 8) {
            m = 0;
            hm <<= 1;
        }
    }
    for (int j = 0; j < QK_K; j += 128)
        for (int l = 0; l < 32; ++l)
            yqs[j / 4 + l] = (uint8_t)(L[j + l] | (L[j + l + 32] << 2) | (L[j + l + 64] << 4) | (L[j + l + 96] << 6));
}

/* the 8 scales and 8 mins of q4_k/q5_k (x [256]): the common first half
 * of both quantizers; nmax 15 or 31, rmin and nstep as each calls it */
static void qk_scales_mins(const float *x, uint8_t *b, uint8_t *L, int nmax, float rmin, int nstep)
{
    uint8_t Laux[32];
    float weights[32], mins[QK_K / 32], scales[QK_K / 32];
    uint8_t *ysc = b + 4;
    float max_scale = 0, max_min = 0;
    for (int j = 0; j < QK_K / 32; ++j) {
        float sum_x2 = 0;
        for (int l = 0; l < 32; ++l) sum_x2 += x[32 * j + l] * x[32 * j + l];
        float av_x = sqrtf(sum_x2 / 32);
        for (int l = 0; l < 32; ++l) weights[l] = av_x + fabsf(x[32 * j + l]);
        scales[j] = make_qkx2_quants(32, nmax, x + 32 * j, weights, L + 32 * j, &mins[j], Laux, rmin, 0.1f, nstep, false);
        float scale = scales[j];
        if (scale > max_scale) max_scale = scale;
        float min = mins[j];
        if (min > max_min) max_min = min;
    }
    float inv_scale = max_scale > 0 ? 63.f / max_scale : 0.f;
    float inv_min = max_min > 0 ? 63.f / max_min : 0.f;
    for (int j = 0; j < QK_K / 32; ++j) {
        uint8_t ls = (uint8_t)nearest_int(inv_scale * scales[j]);
        uint8_t lm = (uint8_t)nearest_int(inv_min * mins[j]);
        ls = QMIN(63, ls);
        lm = QMIN(63, lm);
        if (j < 4) {
            ysc[j] = ls;
            ysc[j + 4] = lm;
        } else {
            ysc[j + 4] = (uint8_t)((ls & 0xF) | ((lm & 0xF) << 4));
            ysc[j - 4] |= (uint8_t)((ls >> 4) << 6);
            ysc[j - 0] |= (uint8_t)((lm >> 4) << 6);
        }
    }
    st_h(b, max_scale / 63.f);
    st_h(b + 2, max_min / 63.f);
    uint8_t sc, m;
    for (int j = 0; j < QK_K / 32; ++j) {
        get_scale_min_k4(j, ysc, &sc, &m);
        const float d = ld_h(b) * sc;
        if (!d) continue;
        const float dm = ld_h(b + 2) * m;
        for (int ii = 0; ii < 32; ++ii) {
            int l = nearest_int((x[32 * j + ii] + dm) / d);
            l = QMAX(0, QMIN(nmax, l));
            L[32 * j + ii] = (uint8_t)l;
        }
    }
}

/* q4_k: d, dmin, scales[12], qs[128] */
static void q_q4_k(const float *x, uint8_t *b)
{
    uint8_t L[QK_K];
    qk_scales_mins(x, b, L, 15, -1.f, 20);
    uint8_t *q = b + 16;
    for (int j = 0; j < QK_K; j += 64) {
        for (int l = 0; l < 32; ++l) q[l] = (uint8_t)(L[j + l] | (L[j + l + 32] << 4));
        q += 32;
    }
}

/* q5_k: d, dmin, scales[12], qh[32], qs[128] */
static void q_q5_k(const float *x, uint8_t *b)
{
    uint8_t L[QK_K];
    qk_scales_mins(x, b, L, 31, -0.5f, 15);
    uint8_t *qh = b + 16, *ql = b + 48;
    memset(qh, 0, QK_K / 8);
    uint8_t m1 = 1, m2 = 2;
    for (int n = 0; n < QK_K; n += 64) {
        for (int j = 0; j < 32; ++j) {
            int l1 = L[n + j];
            if (l1 > 15) {
                l1 -= 16;
                qh[j] |= m1;
            }
            int l2 = L[n + j + 32];
            if (l2 > 15) {
                l2 -= 16;
                qh[j] |= m2;
            }
            ql[j] = (uint8_t)(l1 | (l2 << 4));
        }
        m1 <<= 2;
        m2 <<= 2;
        ql += 32;
    }
}

/* q6_k: ql[128], qh[64], scales[16] (int8), d */
static void q_q6_k(const float *x, uint8_t *b)
{
    int8_t L[QK_K];
    float scales[QK_K / 16];
    float max_scale = 0, max_abs_scale = 0;
    for (int ib = 0; ib < QK_K / 16; ++ib) {
        const float scale = make_qx_quants(16, 32, x + 16 * ib, L + 16 * ib, 1, NULL);
        scales[ib] = scale;
        const float abs_scale = fabsf(scale);
        if (abs_scale > max_abs_scale) {
            max_abs_scale = abs_scale;
            max_scale = scale;
        }
    }
    if (max_abs_scale < GROUP_MAX_EPS) {
        memset(b, 0, 210);
        st_h(b + 208, 0.f);
        return;
    }
    int8_t *ysc = (int8_t *)(b + 192);
    float iscale = -128.f / max_scale;
    st_h(b + 208, 1 / iscale);
    for (int ib = 0; ib < QK_K / 16; ++ib) ysc[ib] = (int8_t)QMIN(127, nearest_int(iscale * scales[ib]));
    for (int j = 0; j < QK_K / 16; ++j) {
        float d = ld_h(b + 208) * ysc[j];
        if (!d) continue;
        for (int ii = 0; ii < 16; ++ii) {
            int l = nearest_int(x[16 * j + ii] / d);
            l = QMAX(-32, QMIN(31, l));
            L[16 * j + ii] = (int8_t)(l + 32);
        }
    }
    uint8_t *ql = b, *qh = b + 128;
    for (int j = 0; j < QK_K; j += 128) {
        for (int l = 0; l < 32; ++l) {
            const uint8_t q1 = L[j + l + 0] & 0xF;
            const uint8_t q2 = L[j + l + 32] & 0xF;
            const uint8_t q3 = L[j + l + 64] & 0xF;
            const uint8_t q4 = L[j + l + 96] & 0xF;
            ql[l + 0] = (uint8_t)(q1 | (q3 << 4));
            ql[l + 32] = (uint8_t)(q2 | (q4 << 4));
            qh[l] = (uint8_t)((L[j + l] >> 4) | ((L[j + l + 32] >> 4) << 2) | ((L[j + l + 64] >> 4) << 4) |
                              ((L[j + l + 96] >> 4) << 6));
        }
        ql += 64;
        qh += 32;
    }
}

/* q8_k: d (f32), qs[256], bsums[16] (int16) */
static void q_q8_k(const float *x, uint8_t *b)
{
    int8_t *qs = (int8_t *)(b + 4);
    float max = 0, amax = 0;
    for (int j = 0; j < QK_K; ++j) {
        float ax = fabsf(x[j]);
        if (ax > amax) {
            amax = ax;
            max = x[j];
        }
    }
    if (!amax) {
        const float zero = 0;
        memcpy(b, &zero, 4);
        memset(qs, 0, QK_K);
        /* ggml leaves bsums as they were; wick writes zeros (the sums of the zero quants) */
        memset(b + 260, 0, 32);
        return;
    }
    const float iscale = -127.f / max;
    for (int j = 0; j < QK_K; ++j) {
        int v = nearest_int(iscale * x[j]);
        qs[j] = (int8_t)QMIN(127, v);
    }
    for (int j = 0; j < QK_K / 16; ++j) {
        int sum = 0;
        for (int ii = 0; ii < 16; ++ii) sum += qs[j * 16 + ii];
        int16_t s = (int16_t)sum;
        memcpy(b + 260 + 2 * j, &s, 2);
    }
    const float d = 1 / iscale;
    memcpy(b, &d, 4);
}

/* ---- per-type tables ---------------------------------------------------- */

typedef void (*deq_fn)(const uint8_t *b, float *y);
typedef void (*q_fn)(const float *x, uint8_t *b);

static deq_fn deq_of(wk_dtype dt)
{
    switch (dt) {
    case WK_Q4_0: return deq_q4_0;
    case WK_Q4_1: return deq_q4_1;
    case WK_Q5_0: return deq_q5_0;
    case WK_Q5_1: return deq_q5_1;
    case WK_Q8_0: return deq_q8_0;
    case WK_Q8_1: return deq_q8_1;
    case WK_Q2_K: return deq_q2_k;
    case WK_Q3_K: return deq_q3_k;
    case WK_Q4_K: return deq_q4_k;
    case WK_Q5_K: return deq_q5_k;
    case WK_Q6_K: return deq_q6_k;
    case WK_Q8_K: return deq_q8_k;
    default: return wk_cpu_iq_dequantizer(dt);   /* the IQ types (cpu_iq.c) */
    }
}

static q_fn q_of(wk_dtype dt)
{
    switch (dt) {
    case WK_Q4_0: return q_q4_0;
    case WK_Q4_1: return q_q4_1;
    case WK_Q5_0: return q_q5_0;
    case WK_Q5_1: return q_q5_1;
    case WK_Q8_0: return q_q8_0;
    case WK_Q8_1: return q_q8_1;
    case WK_Q2_K: return q_q2_k;
    case WK_Q3_K: return q_q3_k;
    case WK_Q4_K: return q_q4_k;
    case WK_Q5_K: return q_q5_k;
    case WK_Q6_K: return q_q6_k;
    case WK_Q8_K: return q_q8_k;
    default: return wk_cpu_iq_quantizer(dt);     /* iq4_nl, iq4_xs (cpu_iq.c) */
    }
}

wk_cpu_qblock_fn wk_cpu_quantizer(wk_dtype dt) { return q_of(dt); }

/* n f32 values to dst (f32, f16 or bf16) at element index i */
static void store_row(void *dst, wk_dtype dt, int64_t i, const float *v, int64_t n)
{
    if (dt == WK_F32) {
        memcpy((float *)dst + i, v, (size_t)n * sizeof(float));
    } else if (dt == WK_F16) {
        uint16_t *d = (uint16_t *)dst + i;
        for (int64_t j = 0; j < n; j++) d[j] = wk_f32_to_f16(v[j]);
    } else {
        uint16_t *d = (uint16_t *)dst + i;
        for (int64_t j = 0; j < n; j++) d[j] = wk_f32_to_bf16(v[j]);
    }
}

/* byte address of block c of row r of a quantized [rows, cols] view */
static inline const uint8_t *qrow(const wk_view *v, int64_t r)
{
    const int64_t B = wk_dt_block(v->dtype), BB = wk_dt_block_bytes(v->dtype);
    return (const uint8_t *)v->base + (v->offset + r * v->strides[0]) / B * BB;
}

/* ---- QCONVERT: dequantize and quantize, by blocks ------------------------ */

typedef struct conv_job {
    const wk_view *dst, *src;
    int64_t bpr;              /* blocks per row                        */
    int64_t B, BB;            /* block elements, block bytes           */
    deq_fn deq;
    q_fn q;
} conv_job;

static void deq_range(void *arg, int64_t begin, int64_t end)
{
    const conv_job *j = arg;
    float y[QK_K];
    for (int64_t i = begin; i < end; i++) {
        const int64_t r = i / j->bpr, c = i % j->bpr;
        j->deq(qrow(j->src, r) + c * j->BB, y);
        store_row(j->dst->base, j->dst->dtype, j->dst->offset + i * j->B, y, j->B);
    }
}

static void q_range(void *arg, int64_t begin, int64_t end)
{
    const conv_job *j = arg;
    const wk_view *s = j->src, *d = j->dst;
    uint8_t *out = (uint8_t *)d->base + d->offset / j->B * j->BB;
    for (int64_t i = begin; i < end; i++) {
        const int64_t r = i / j->bpr, c = i % j->bpr;
        const float *x = (const float *)s->base + s->offset + r * s->strides[0] + c * j->B;
        j->q(x, out + i * j->BB);
    }
}

wk_status wk_cpu_qconvert(void *ctx, const wk_op_args *a)
{
    (void)ctx;
    const wk_view *d = a->dst, *s = a->src[0];
    const bool deq = a->op == WK_OP_DEQUANTIZE;
    const wk_dtype qt = deq ? s->dtype : d->dtype;
    conv_job j = { .dst = d, .src = s, .B = wk_dt_block(qt), .BB = wk_dt_block_bytes(qt), .deq = deq_of(qt),
                   .q = q_of(qt) };
    if (deq ? !j.deq : !j.q)
        return WK_CPU_ERROR(WK_ERR_DTYPE, "%s: no %s for %s on the cpu", deq ? "dequantize" : "quantize",
                            deq ? "decoder" : "quantizer", wk_dt_name(qt));
    const int64_t rows = d->dims[0], cols = d->dims[1];
    j.bpr = cols / j.B;
    const int64_t n = rows * j.bpr;
    if (n == 0) return WK_OK;
    /* elementary steps per block: a decode is a few per value; the K
     * quantizers search scales (~20 passes over each sub-block) */
    const double work = deq ? 2.0 * (double)j.B : (j.B == QK_K ? 60.0 : 6.0) * (double)j.B;
    wk_parallel_tasks(n, work, deq ? deq_range : q_range, &j);
    return WK_OK;
}

/* ---- QMATMUL --------------------------------------------------------------- */

wk_status wk_cpu_rows_f32(const wk_view *x, int64_t m, int64_t k, const float **rows, int64_t *stride, float **owned)
{
    *owned = NULL;
    if (x->dtype == WK_F32 && (x->strides[1] == 1 || k == 1)) {   /* in place */
        *rows = (const float *)x->base + x->offset;
        *stride = x->strides[0];
        return WK_OK;
    }
    float *b = malloc((size_t)(m * k) * sizeof(float) + 1);
    if (!b) return WK_CPU_ERROR(WK_ERR_MEMORY, "out of memory for x as f32 (%lld x %lld)", (long long)m, (long long)k);
    for (int64_t i = 0; i < m; i++)
        for (int64_t c = 0; c < k; c++)
            b[i * k + c] = (float)wk_cpu_load_f64(x->base, x->dtype, x->offset + i * x->strides[0] + c * x->strides[1]);
    *rows = b, *stride = k, *owned = b;
    return WK_OK;
}

/* weight rows a task dequantizes at once: 8 for a few rows of x (decode:
 * many small tasks), 32 for many (prefill: each pass over x serves more
 * weight rows) */
#define QM_ROWS_FEW 8
#define QM_ROWS_MANY 32

typedef struct qmm_job {
    const wk_view *dst, *w;
    const float *x;           /* f32 rows of x, row stride xs           */
    int64_t xs, m, n, k;
    int64_t nb;               /* weight rows per task                   */
    deq_fn deq;
    int64_t B, BB;
    atomic_int failed;
} qmm_job;

/* dot product of n floats: 8 partial sums, combined pairwise */
static inline float dot_f32(const float *a, const float *b, int64_t n)
{
    float acc[8] = { 0, 0, 0, 0, 0, 0, 0, 0 };
    int64_t i = 0;
    for (; i + 8 <= n; i += 8)
        for (int l = 0; l < 8; l++) acc[l] += a[i + l] * b[i + l];
    for (int l = 0; i < n; i++, l++) acc[l] += a[i] * b[i];
    return ((acc[0] + acc[4]) + (acc[1] + acc[5])) + ((acc[2] + acc[6]) + (acc[3] + acc[7]));
}

static void qmm_range(void *arg, int64_t begin, int64_t end)
{
    qmm_job *j = arg;
    const int64_t k = j->k, bpr = k / j->B;
    const int64_t nb = j->nb;
    float *wbuf = malloc((size_t)(nb * k) * sizeof(float));
    if (!wbuf) {
        atomic_store(&j->failed, 1);
        return;
    }
    const wk_view *d = j->dst;
    for (int64_t t = begin; t < end; t++) {
        const int64_t n0 = t * nb, nr = j->n - n0 < nb ? j->n - n0 : nb;
        for (int64_t r = 0; r < nr; r++) {
            const uint8_t *src = qrow(j->w, n0 + r);
            for (int64_t c = 0; c < bpr; c++) j->deq(src + c * j->BB, wbuf + r * k + c * j->B);
        }
        float y[QM_ROWS_MANY];
        for (int64_t i = 0; i < j->m; i++) {
            const float *xr = j->x + i * j->xs;
            for (int64_t r = 0; r < nr; r++) y[r] = dot_f32(xr, wbuf + r * k, k);
            store_row(d->base, d->dtype, d->offset + i * j->n + n0, y, nr);
        }
    }
    free(wbuf);
}

wk_status wk_cpu_qmatmul(void *ctx, const wk_op_args *a)
{
    (void)ctx;
    const wk_view *d = a->dst, *w = a->src[0], *x = a->src[1];
    const int64_t m = d->dims[0], n = d->dims[1], k = w->dims[1];
    const int qdot = wk_cpu_env.qdot;
    if (w->dtype == WK_F16 || w->dtype == WK_BF16) return wk_cpu_qmatmul_half(a);
    if (qdot != WK_QDOT_OFF && wk_cpu_qdot_supports(w->dtype)) return wk_cpu_qmatmul_qdot(a, qdot);
    qmm_job j = { .dst = d, .w = w, .m = m, .n = n, .k = k, .deq = deq_of(w->dtype), .B = wk_dt_block(w->dtype),
                  .BB = wk_dt_block_bytes(w->dtype) };
    atomic_init(&j.failed, 0);
    if (!j.deq) return WK_CPU_ERROR(WK_ERR_DTYPE, "%s is not a block-quantized dtype", wk_dt_name(w->dtype));
    if (m == 0 || n == 0) return WK_OK;
    float *xbuf = NULL;
    const wk_status xst = wk_cpu_rows_f32(x, m, k, &j.x, &j.xs, &xbuf);
    if (xst != WK_OK) return xst;
    j.nb = m > 8 ? QM_ROWS_MANY : QM_ROWS_FEW;
    const int64_t ntasks = (n + j.nb - 1) / j.nb;
    wk_parallel_tasks(ntasks, (double)j.nb * (double)k * (2.0 + 2.0 * (double)m), qmm_range, &j);
    free(xbuf);
    if (atomic_load(&j.failed))
        return WK_CPU_ERROR(WK_ERR_MEMORY, "out of memory for %lld dequantized rows of %lld", (long long)j.nb,
                            (long long)k);
    return WK_OK;
}

/* ---- QGATHER --------------------------------------------------------------- */

typedef struct qg_job {
    const wk_view *dst, *table, *ids;
    int64_t bpr, B, BB;
    deq_fn deq;
} qg_job;

static inline int64_t qg_id(const wk_view *ids, int64_t i)
{
    return wk_cpu_load_i64(ids->base, ids->dtype, ids->offset + i * ids->strides[0]);
}

static void qg_range(void *arg, int64_t begin, int64_t end)
{
    const qg_job *j = arg;
    float y[QK_K];
    for (int64_t t = begin; t < end; t++) {
        const int64_t i = t / j->bpr, c = t % j->bpr;
        j->deq(qrow(j->table, qg_id(j->ids, i)) + c * j->BB, y);
        store_row(j->dst->base, j->dst->dtype, j->dst->offset + t * j->B, y, j->B);
    }
}

wk_status wk_cpu_qgather(void *ctx, const wk_op_args *a)
{
    (void)ctx;
    const wk_view *d = a->dst, *t = a->src[0], *ids = a->src[1];
    qg_job j = { .dst = d, .table = t, .ids = ids, .B = wk_dt_block(t->dtype), .BB = wk_dt_block_bytes(t->dtype),
                 .deq = deq_of(t->dtype) };
    if (!j.deq) return WK_CPU_ERROR(WK_ERR_DTYPE, "%s is not a block-quantized dtype", wk_dt_name(t->dtype));
    const int64_t n = ids->dims[0], rows = t->dims[0];
    for (int64_t i = 0; i < n; i++) {
        const int64_t id = qg_id(ids, i);
        if (id < 0 || id >= rows)
            return WK_CPU_ERROR(WK_ERR_INDEX, "id %lld is out of range for a table of %lld rows", (long long)id,
                                (long long)rows);
    }
    j.bpr = t->dims[1] / j.B;
    if (n == 0 || j.bpr == 0) return WK_OK;
    wk_parallel_tasks(n * j.bpr, 2.0 * (double)j.B, qg_range, &j);
    return WK_OK;
}
