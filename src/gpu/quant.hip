/* quant.hip — GGUF's block-quantized types on the GPU: dequantize (to f32,
 * f16 or bf16), the quantized row gather (qgather) and the quantized
 * matrix product (qmatmul) for all 21 block types (the twelve q types and
 * the nine IQ types, whose tables src/iq_tables.h shares with the cpu);
 * the families QCONVERT
 * (DEQUANTIZE only: quantize stays on the cpu), QMATMUL and QGATHER of
 * src/backend.h. docs/quantization.md has the layouts and the figures.
 *
 * Exactness. The decoders (qd_group) compute every value with the float
 * operations, in the order, of ggml's dequantize_row_* (and of
 * src/cpu/cpu_quant.c), and this file is compiled without contraction of
 * a*b+c into an fma (gpu.mk: -fmad=false / -ffp-contract=off), so
 * dequantize and qgather give the cpu's bits. The dot products of
 * qmatmul use explicit fmaf (never affected by that switch).
 *
 * dequantize / qgather: one thread per 32 values (a block of the 32-value
 * types, an eighth of a 256-value super-block), decoded from the block's
 * bytes and written as 16-byte vectors.
 *
 * qmatmul, m <= 8 rows of x (qmatvec): qmv_kernel, blocks of 256 threads,
 * TR threads per weight row and 256 / TR rows per block (TR chosen on the
 * host so the grid has several blocks per multiprocessor). k is walked in
 * chunks: each chunk of x (all m rows, converted to f32) is staged in
 * shared memory, laid out so that the threads of a row, which take
 * consecutive units of the weight row, read consecutive 16-byte words
 * (conflict-free); the weights are read straight from global memory and
 * dequantized in registers. A unit is what one thread decodes at a time:
 * a block (32 values) for q4_0/q8_0, 64 values for q4_k/q5_k, 128 for
 * q6_k (fast decoders: word loads, codes turned into exact floats by
 * placing them in the mantissa of 2^23 (one byte permute) and subtracting
 * 2^23 plus the code's offset, mins and scales applied once per group
 * through per-group sums of x); the other types (seven q, nine IQ) take a generic
 * decoder (qd_group on byte loads, 32 values per unit). Partial sums are
 * reduced through shared memory (qmvq_kernel below: shuffles within
 * groups of at most 32 lanes), so no kernel here depends on the warp size
 * (one instantiation serves wave32 and wave64). Accumulation in f32.
 *
 * qmatmul, m > 8 (prefill): W dequantized to x's dtype (f16/bf16; f32 for
 * f32 x) into scratch, then the device's MATMUL op through the op table
 * (matmul.hip: cuBLAS, rocBLAS or the tiled GEMM) on x . W^T (W^T a
 * transposed view: no copy). The same path serves every m when
 * WICK_QMATMUL=dequant (for measurements).
 *
 * qmvq_kernel also serves plain f16/bf16 rows: gemv.hip's dense matvec
 * runs products of 2 to 8 rows on it (wk_gpu_qmvq_dense).
 *
 * qmatmul, m <= 8, q4_0/q8_0/q4_k/q5_k/q6_k (the default for these
 * types): qmvq_kernel, x rounded to 8 bits once per call and integer dot
 * products (dp4a / sdot4); see the section "qmatvec with 8-bit
 * activations" below. The kernel above stays for the other seven types
 * and for every type under WICK_QMATVEC=f32.
 *
 * Not done here (docs/quantization.md, "what is left"): a matrix-core
 * qmatvec for m = 2..8 (int8 mma / MFMA), which m = 8 <= 1.5x m = 1 needs
 * for the 4-bit types.
 */
#include "gpu_internal.h"
#include <stdlib.h>
#include <string.h>
/* the IQ types' grids, signs and values, in device memory (global, read
 * through the caches: the codes index them at random, which the constant
 * cache would serialize) */
#define WK_IQ_TABLE(type, decl) static __device__ const type decl
#include "../iq_tables.h"

#define QK_K 256

/* ------------------------------------------------------------------ */
/* Byte access                                                         */

WK_DEV uint32_t q_u16(const uint8_t *p) { return *(const uint16_t *)p; }              /* p 2-aligned */
WK_DEV float q_h(const uint8_t *p) { return wk_fast_f16_to_f32((uint16_t)q_u16(p)); }  /* f16 at p   */
WK_DEV uint32_t q_u32b(const uint8_t *p)                                              /* any p      */
{
    return (uint32_t)p[0] | ((uint32_t)p[1] << 8) | ((uint32_t)p[2] << 16) | ((uint32_t)p[3] << 24);
}
/* bits [s, s + 32) of hi:lo, s in 0..32 */
WK_DEV uint32_t q_fsr(uint32_t lo, uint32_t hi, uint32_t s)
{
    return (uint32_t)((((uint64_t)hi << 32) | lo) >> s);
}
/* NB bytes (NB % 4 == 2) at a 2-aligned p as NB/4 + 1 words (the last
 * one's upper half 0 when NB % 4 == 2), never reading past p + NB or
 * before p - 2: word loads from p rounded down, the tail by a 16-bit load
 * when p is 4-aligned, then shifted into place. */
template <int NB> WK_DEV void q_load2(const uint8_t *p, uint32_t (&o)[(NB + 3) / 4])
{
    static_assert(NB % 4 == 2, "q_load2 takes 4k+2 bytes");
    constexpr int NW = (NB + 2) / 4 + 0;          /* words of [p - 2, p + NB) when p % 4 == 2 */
    const uintptr_t a = (uintptr_t)p & ~(uintptr_t)3;
    const bool odd = ((uintptr_t)p & 3) != 0;
    const uint32_t *w = (const uint32_t *)a;
    uint32_t v[NW + 1];
#pragma unroll
    for (int i = 0; i < NW - 1; i++) v[i] = w[i];
    v[NW - 1] = odd ? w[NW - 1] : q_u16((const uint8_t *)(w + NW - 1));
    v[NW] = 0;
    const uint32_t s = odd ? 16u : 0u;
#pragma unroll
    for (int i = 0; i < (NB + 3) / 4; i++) o[i] = q_fsr(v[i], v[i + 1], s);
}
/* an exact float of the byte b (0..255) of w, plus 2^23 */
WK_DEV float q_mag(uint32_t w, int b) { return __int_as_float((int)__byte_perm(w, 0x4B000000u, 0x7540u | (unsigned)b)); }

/* ------------------------------------------------------------------ */
/* Exact decoders: 32 values of group g of a block (ggml's order)       */

WK_DEV void q3k_scales(const uint8_t *s12, int8_t *scales)
{
    const uint32_t kmask1 = 0x03030303, kmask2 = 0x0f0f0f0f;
    uint32_t aux[4];
    aux[0] = q_u32b(s12);
    aux[1] = q_u32b(s12 + 4);
    aux[2] = q_u32b(s12 + 8);
    uint32_t tmp = aux[2];
    aux[2] = ((aux[0] >> 4) & kmask2) | (((tmp >> 4) & kmask1) << 4);
    aux[3] = ((aux[1] >> 4) & kmask2) | (((tmp >> 6) & kmask1) << 4);
    aux[0] = (aux[0] & kmask2) | (((tmp >> 0) & kmask1) << 4);
    aux[1] = (aux[1] & kmask2) | (((tmp >> 2) & kmask1) << 4);
    memcpy(scales, aux, 16);
}

WK_DEV void q_scale_min_k4(int j, const uint8_t *q, int *d, int *m)
{
    if (j < 4) {
        *d = q[j] & 63;
        *m = q[j + 4] & 63;
    } else {
        *d = (q[j + 4] & 0xF) | ((q[j - 4] >> 6) << 4);
        *m = (q[j + 4] >> 4) | ((q[j - 0] >> 6) << 4);
    }
}

template <int QT> WK_DEV void qd_group(const uint8_t *b, int g, float *y)
{
    if constexpr (QT == WK_Q4_0) {
        const float d = q_h(b);
        const uint8_t *qs = b + 2;
        for (int j = 0; j < 16; ++j) {
            y[j] = (float)((qs[j] & 0x0F) - 8) * d;
            y[j + 16] = (float)((qs[j] >> 4) - 8) * d;
        }
    } else if constexpr (QT == WK_Q4_1) {
        const float d = q_h(b), m = q_h(b + 2);
        const uint8_t *qs = b + 4;
        for (int j = 0; j < 16; ++j) {
            y[j] = (float)(qs[j] & 0x0F) * d + m;
            y[j + 16] = (float)(qs[j] >> 4) * d + m;
        }
    } else if constexpr (QT == WK_Q5_0 || QT == WK_Q5_1) {
        const bool one = QT == WK_Q5_1;
        const float d = q_h(b), m = one ? q_h(b + 2) : 0.0f;
        const uint32_t qh = q_u32b(b + (one ? 4 : 2));
        const uint8_t *qs = b + (one ? 8 : 6);
        for (int j = 0; j < 16; ++j) {
            const int xh_0 = ((qh >> (j + 0)) << 4) & 0x10;
            const int xh_1 = ((qh >> (j + 12))) & 0x10;
            if (one) {
                y[j] = (float)((qs[j] & 0x0F) | xh_0) * d + m;
                y[j + 16] = (float)((qs[j] >> 4) | xh_1) * d + m;
            } else {
                y[j] = (float)(((qs[j] & 0x0F) | xh_0) - 16) * d;
                y[j + 16] = (float)(((qs[j] >> 4) | xh_1) - 16) * d;
            }
        }
    } else if constexpr (QT == WK_Q8_0 || QT == WK_Q8_1) {
        const float d = q_h(b);
        const int8_t *qs = (const int8_t *)(b + (QT == WK_Q8_0 ? 2 : 4));
        for (int j = 0; j < 32; ++j) y[j] = (float)qs[j] * d;
    } else if constexpr (QT == WK_Q2_K) {
        const int n = g / 4, j = g % 4, shift = 2 * j;
        const uint8_t *q = b + 16 + 32 * n;
        const float d = q_h(b + 80), mn = q_h(b + 82);
        for (int h = 0; h < 2; h++) {
            const int sc = b[8 * n + 2 * j + h];
            const float dl = d * (float)(sc & 0xF), ml = mn * (float)(sc >> 4);
            for (int l = 0; l < 16; ++l) y[16 * h + l] = dl * (float)((q[16 * h + l] >> shift) & 3) - ml;
        }
    } else if constexpr (QT == WK_Q3_K) {
        const int n = g / 4, j = g % 4, shift = 2 * j;
        const float d_all = q_h(b + 108);
        const uint8_t *q = b + 32 + 32 * n, *hm = b;
        const int m = 1 << (4 * n + j);
        int8_t scales[16];
        q3k_scales(b + 96, scales);
        for (int h = 0; h < 2; h++) {
            const float dl = d_all * (float)(scales[8 * n + 2 * j + h] - 32);
            for (int l = 0; l < 16; ++l)
                y[16 * h + l] = dl * (float)((int)((q[16 * h + l] >> shift) & 3) - ((hm[16 * h + l] & m) ? 0 : 4));
        }
    } else if constexpr (QT == WK_Q4_K || QT == WK_Q5_K) {
        const int j = g / 2, h = g % 2;
        const float d = q_h(b), mn = q_h(b + 2);
        int sc, m;
        q_scale_min_k4(2 * j + h, b + 4, &sc, &m);
        const float d1 = d * (float)sc, m1 = mn * (float)m;
        if constexpr (QT == WK_Q4_K) {
            const uint8_t *q = b + 16 + 32 * j;
            for (int l = 0; l < 32; ++l) y[l] = d1 * (float)(h ? q[l] >> 4 : q[l] & 0xF) - m1;
        } else {
            const uint8_t *ql = b + 48 + 32 * j, *qh = b + 16;
            const int u = 1 << (2 * j + h);
            for (int l = 0; l < 32; ++l)
                y[l] = d1 * (float)((h ? ql[l] >> 4 : ql[l] & 0xF) + (qh[l] & u ? 16 : 0)) - m1;
        }
    } else if constexpr (QT == WK_Q6_K) {
        const int n = g / 4, qq = g % 4;
        const float d = q_h(b + 208);
        const uint8_t *ql = b + 64 * n + (qq & 1) * 32, *qh = b + 128 + 32 * n;
        const int8_t *sc = (const int8_t *)(b + 192 + 8 * n);
        for (int l = 0; l < 32; ++l) {
            const int lo = qq < 2 ? ql[l] & 0xF : ql[l] >> 4;
            const int8_t q = (int8_t)(lo | (((qh[l] >> (2 * qq)) & 3) << 4)) - 32;
            y[l] = d * (float)sc[l / 16 + 2 * qq] * (float)q;
        }
    } else if constexpr (QT == WK_Q8_K) {
        float d;
        memcpy(&d, b, 4);
        const int8_t *qs = (const int8_t *)(b + 4 + 32 * g);
        for (int j = 0; j < 32; ++j) y[j] = d * (float)qs[j];
    } else if constexpr (QT == WK_IQ4_NL || QT == WK_IQ4_XS) {
        /* layouts: src/cpu/cpu_iq.c; the same float operations */
        float dl;
        const uint8_t *qs;
        if constexpr (QT == WK_IQ4_NL) {
            dl = q_h(b);
            qs = b + 2;
        } else {
            const int ls = ((b[4 + g / 2] >> (4 * (g % 2))) & 0xF) | ((int)((q_u16(b + 2) >> (2 * g)) & 3) << 4);
            dl = q_h(b) * (float)(ls - 32);
            qs = b + 8 + 16 * g;
        }
        for (int j = 0; j < 16; ++j) {
            y[j] = dl * (float)wk_iq4nl_values[qs[j] & 0xF];
            y[j + 16] = dl * (float)wk_iq4nl_values[qs[j] >> 4];
        }
    } else if constexpr (QT == WK_IQ2_XXS) {
        const uint8_t *gp = b + 2 + 8 * g;
        const uint32_t aux = q_u32b(gp + 4);
        const float db = q_h(b) * (0.5f + (float)(aux >> 28)) * 0.25f;
        for (int l = 0; l < 4; ++l) {
            const uint64_t pt = wk_iq2xxs_grid[gp[l]];
            const uint32_t s = wk_iq_ksigns[(aux >> (7 * l)) & 127];
            for (int j = 0; j < 8; ++j) y[8 * l + j] = db * (float)(int)((pt >> (8 * j)) & 0xFF) * ((s >> j) & 1 ? -1.f : 1.f);
        }
    } else if constexpr (QT == WK_IQ2_XS || QT == WK_IQ2_S) {
        const float d = q_h(b);
        const int sc = QT == WK_IQ2_XS ? b[66 + g] : b[74 + g];
        const float db[2] = { d * (0.5f + (float)(sc & 0xF)) * 0.25f, d * (0.5f + (float)(sc >> 4)) * 0.25f };
        for (int l = 0; l < 4; ++l) {
            uint64_t pt;
            uint32_t s;
            if constexpr (QT == WK_IQ2_XS) {
                const uint32_t q = q_u16(b + 2 + 2 * (4 * g + l));
                pt = wk_iq2xs_grid[q & 511];
                s = wk_iq_ksigns[q >> 9];
            } else {
                pt = wk_iq2s_grid[b[2 + 4 * g + l] | (((uint32_t)b[66 + g] >> (2 * l) & 3) << 8)];
                s = b[34 + 4 * g + l];
            }
            for (int j = 0; j < 8; ++j)
                y[8 * l + j] = db[l / 2] * (float)(int)((pt >> (8 * j)) & 0xFF) * ((s >> j) & 1 ? -1.f : 1.f);
        }
    } else if constexpr (QT == WK_IQ3_XXS || QT == WK_IQ3_S) {
        const uint8_t *qs = b + 2 + 8 * g;
        float db;
        uint32_t aux = 0;
        if constexpr (QT == WK_IQ3_XXS) {
            aux = q_u32b(b + 66 + 4 * g);
            db = q_h(b) * (0.5f + (float)(aux >> 28)) * 0.5f;
        } else {
            db = q_h(b) * (float)(1 + 2 * ((b[106 + g / 2] >> (4 * (g % 2))) & 0xF));
        }
        for (int l = 0; l < 4; ++l) {
            uint32_t p1, p2, s;
            if constexpr (QT == WK_IQ3_XXS) {
                p1 = wk_iq3xxs_grid[qs[2 * l]];
                p2 = wk_iq3xxs_grid[qs[2 * l + 1]];
                s = wk_iq_ksigns[(aux >> (7 * l)) & 127];
            } else {
                const uint32_t qh = b[66 + g];   /* bit i: the 9th bit of index 8g + i */
                p1 = wk_iq3s_grid[qs[2 * l] | ((qh >> (2 * l) & 1) << 8)];
                p2 = wk_iq3s_grid[qs[2 * l + 1] | ((qh >> (2 * l + 1) & 1) << 8)];
                s = b[74 + 4 * g + l];
            }
            for (int j = 0; j < 4; ++j) {
                y[8 * l + j] = db * (float)(int)((p1 >> (8 * j)) & 0xFF) * ((s >> j) & 1 ? -1.f : 1.f);
                y[8 * l + j + 4] = db * (float)(int)((p2 >> (8 * j)) & 0xFF) * ((s >> (j + 4)) & 1 ? -1.f : 1.f);
            }
        }
    } else if constexpr (QT == WK_IQ1_S || QT == WK_IQ1_M) {
        const float delta_pos = 0.125f;
        if constexpr (QT == WK_IQ1_S) {
            const uint32_t qh = q_u16(b + 34 + 2 * g);
            const float dl = q_h(b) * (float)(2 * ((qh >> 12) & 7) + 1);
            const float delta = qh & 0x8000 ? -delta_pos : delta_pos;
            for (int l = 0; l < 4; ++l) {
                const uint64_t pt = wk_iq1s_grid[b[2 + 4 * g + l] | (((qh >> (3 * l)) & 7) << 8)];
                for (int j = 0; j < 8; ++j) y[8 * l + j] = dl * ((float)(int8_t)((pt >> (8 * j)) & 0xFF) + delta);
            }
        } else {
            const uint32_t s0 = q_u16(b + 48), s1 = q_u16(b + 50), s2 = q_u16(b + 52), s3 = q_u16(b + 54);
            const uint16_t dbits = (uint16_t)((s0 >> 12) | ((s1 >> 8) & 0x00F0) | ((s2 >> 4) & 0x0F00) | (s3 & 0xF000));
            const float d = wk_fast_f16_to_f32(dbits);
            const uint32_t w = q_u16(b + 48 + 2 * (g / 2));
            const float dl[2] = { d * (float)(2 * ((w >> (6 * (g % 2))) & 7) + 1),
                                  d * (float)(2 * ((w >> (6 * (g % 2) + 3)) & 7) + 1) };
            for (int l = 0; l < 4; ++l) {
                const uint32_t h = (uint32_t)b[32 + 2 * g + l / 2] >> (4 * (l % 2));
                const uint64_t pt = wk_iq1s_grid[b[4 * g + l] | ((h & 7) << 8)];
                const float delta = h & 8 ? -delta_pos : delta_pos;
                for (int j = 0; j < 8; ++j) y[8 * l + j] = dl[l / 2] * ((float)(int8_t)((pt >> (8 * j)) & 0xFF) + delta);
            }
        }
    }
}

/* 32 floats to dst (16-byte aligned when vec) */
template <typename O> WK_DEV void q_store32(O *dst, const float *y, bool vec)
{
    if constexpr (std::is_same<O, float>::value) {
        if (vec) {
#pragma unroll
            for (int c = 0; c < 8; c++)
                ((float4 *)dst)[c] = make_float4(y[4 * c], y[4 * c + 1], y[4 * c + 2], y[4 * c + 3]);
            return;
        }
        for (int j = 0; j < 32; j++) dst[j] = y[j];
    } else {
        wk_vec<O, 8> v[4];
#pragma unroll
        for (int j = 0; j < 32; j += 2) {
            if constexpr (std::is_same<O, wk_bf16_t>::value) wk_fast_f32x2_to_bf16x2(y[j], y[j + 1], &v[j / 8].v[j % 8]);
            else {
                v[j / 8].v[j % 8] = wk_to<O>(y[j]);
                v[j / 8].v[j % 8 + 1] = wk_to<O>(y[j + 1]);
            }
        }
        if (vec) {
#pragma unroll
            for (int c = 0; c < 4; c++) ((wk_vec<O, 8> *)dst)[c] = v[c];
            return;
        }
        for (int j = 0; j < 32; j++) dst[j] = v[j / 8].v[j % 8];
    }
}

/* ------------------------------------------------------------------ */
/* dequantize and qgather                                               */

struct qd_params {
    const uint8_t *src;       /* block 0 of the source view            */
    int64_t row_blocks;       /* source row stride in blocks           */
    int64_t rows, gpr;        /* rows out, 32-value groups per row     */
    const void *ids;          /* qgather: ids (element 0), else NULL   */
    int ids_dt;
    int64_t ids_st, limit;    /* id stride; rows of the table          */
    unsigned long long *bad;  /* first out-of-range position           */
    void *dst;                /* [rows, gpr * 32] contiguous           */
    bool vec;
};

template <int QT, typename O> __global__ void qd_kernel(qd_params p)
{
    const int64_t B = wk_dt_block((wk_dtype)QT), BB = wk_dt_block_bytes((wk_dtype)QT), GPB = B / 32;
    WK_GPU_FOR(i, p.rows * p.gpr) {
        const int64_t r = i / p.gpr, gg = i - r * p.gpr;
        int64_t sr = r;
        float y[32];
        if (p.ids) {
            const int64_t o = r * p.ids_st;
            sr = p.ids_dt == WK_U8 ? (int64_t)((const uint8_t *)p.ids)[o]
               : p.ids_dt == WK_U32 ? (int64_t)((const uint32_t *)p.ids)[o] : ((const int64_t *)p.ids)[o];
            if ((uint64_t)sr >= (uint64_t)p.limit) {
                if (gg == 0 && p.bad) atomicMin(p.bad, (unsigned long long)r);
                for (int j = 0; j < 32; j++) y[j] = 0.0f;
                q_store32<O>((O *)p.dst + i * 32, y, p.vec);
                continue;
            }
        }
        qd_group<QT>(p.src + (sr * p.row_blocks + gg / GPB) * BB, (int)(gg % GPB), y);
        q_store32<O>((O *)p.dst + i * 32, y, p.vec);
    }
}

/* QT as a template argument: BODY with `constexpr int QT_` */
#define Q_DISPATCH(qt, ...)                                                         \
    switch (qt) {                                                                   \
    case WK_Q4_0: { constexpr int QT_ = WK_Q4_0; __VA_ARGS__; } break;                     \
    case WK_Q4_1: { constexpr int QT_ = WK_Q4_1; __VA_ARGS__; } break;                     \
    case WK_Q5_0: { constexpr int QT_ = WK_Q5_0; __VA_ARGS__; } break;                     \
    case WK_Q5_1: { constexpr int QT_ = WK_Q5_1; __VA_ARGS__; } break;                     \
    case WK_Q8_0: { constexpr int QT_ = WK_Q8_0; __VA_ARGS__; } break;                     \
    case WK_Q8_1: { constexpr int QT_ = WK_Q8_1; __VA_ARGS__; } break;                     \
    case WK_Q2_K: { constexpr int QT_ = WK_Q2_K; __VA_ARGS__; } break;                     \
    case WK_Q3_K: { constexpr int QT_ = WK_Q3_K; __VA_ARGS__; } break;                     \
    case WK_Q4_K: { constexpr int QT_ = WK_Q4_K; __VA_ARGS__; } break;                     \
    case WK_Q5_K: { constexpr int QT_ = WK_Q5_K; __VA_ARGS__; } break;                     \
    case WK_Q6_K: { constexpr int QT_ = WK_Q6_K; __VA_ARGS__; } break;                     \
    case WK_Q8_K: { constexpr int QT_ = WK_Q8_K; __VA_ARGS__; } break;                     \
    case WK_IQ4_NL: { constexpr int QT_ = WK_IQ4_NL; __VA_ARGS__; } break;                 \
    case WK_IQ4_XS: { constexpr int QT_ = WK_IQ4_XS; __VA_ARGS__; } break;                 \
    case WK_IQ3_XXS: { constexpr int QT_ = WK_IQ3_XXS; __VA_ARGS__; } break;               \
    case WK_IQ3_S: { constexpr int QT_ = WK_IQ3_S; __VA_ARGS__; } break;                   \
    case WK_IQ2_XXS: { constexpr int QT_ = WK_IQ2_XXS; __VA_ARGS__; } break;               \
    case WK_IQ2_XS: { constexpr int QT_ = WK_IQ2_XS; __VA_ARGS__; } break;                 \
    case WK_IQ2_S: { constexpr int QT_ = WK_IQ2_S; __VA_ARGS__; } break;                   \
    case WK_IQ1_S: { constexpr int QT_ = WK_IQ1_S; __VA_ARGS__; } break;                   \
    case WK_IQ1_M: { constexpr int QT_ = WK_IQ1_M; __VA_ARGS__; } break;                   \
    default: break;                                                                 \
    }

static wk_status qd_launch(wk_gpu_ctx *c, wk_dtype qt, wk_dtype odt, const qd_params &p, const char *what)
{
    const int bs = 256;
    const unsigned grid = wk_gpu_grid(c, p.rows * p.gpr, bs, 8);
    bool ok = false;
    Q_DISPATCH(qt, {
        ok = true;
        if (odt == WK_F32) qd_kernel<QT_, float><<<grid, bs, 0, c->stream>>>(p);
        else if (odt == WK_F16) qd_kernel<QT_, wk_f16_t><<<grid, bs, 0, c->stream>>>(p);
        else qd_kernel<QT_, wk_bf16_t><<<grid, bs, 0, c->stream>>>(p);
    });
    if (!ok) return wk_gpu_host->set_error(WK_ERR_DTYPE, "%s is not a block-quantized dtype", wk_dt_name(qt));
    return wk_gpu_launched(c, what, __FILE__, __LINE__);
}

/* the source view's block 0 and row stride in blocks */
static void q_src(const wk_view *s, const uint8_t **base, int64_t *row_blocks)
{
    const int64_t B = wk_dt_block(s->dtype), BB = wk_dt_block_bytes(s->dtype);
    *base = (const uint8_t *)s->base + s->offset / B * BB;
    *row_blocks = s->strides[0] / B;
}

/* dequantize src [rows, cols] (a block dtype) into dst (contiguous, odt) */
static wk_status q_dequant(wk_gpu_ctx *c, const wk_view *src, void *dst, wk_dtype odt)
{
    qd_params p;
    memset(&p, 0, sizeof p);
    q_src(src, &p.src, &p.row_blocks);
    p.rows = src->dims[0];
    p.gpr = src->dims[1] / 32;
    p.dst = dst;
    p.vec = wk_gpu_aligned(dst, 16);
    if (p.rows * p.gpr == 0) return WK_OK;
    return qd_launch(c, src->dtype, odt, p, "dequantize");
}

extern "C" wk_status wk_gpu_qconvert(void *ctx, const wk_op_args *a)
{
    wk_gpu_ctx *c = (wk_gpu_ctx *)ctx;
    if (a->op != WK_OP_DEQUANTIZE)
        return wk_gpu_host->set_error(WK_ERR_UNSUPPORTED, "quantize runs on the cpu only");
    const wk_view *d = a->dst, *s = a->src[0];
    WK_GPU_ENTER(c);
    return q_dequant(c, s, wk_gpu_view_ptr(d), d->dtype);
}

/* id i of a 1-d id view, read back to the host */
static wk_status q_id_at(wk_gpu_ctx *c, const wk_view *ids, int64_t i, int64_t *id)
{
    const size_t es = wk_gpu_dtype_size(ids->dtype);
    uint8_t buf[8] = { 0 };
    wk_status st = wk_gpu_read(c, buf, wk_gpu_view_ptr(ids) + i * ids->strides[0] * (int64_t)es, es);
    if (ids->dtype == WK_U8) *id = buf[0];
    else if (ids->dtype == WK_U32) { uint32_t v; memcpy(&v, buf, 4); *id = v; }
    else memcpy(id, buf, 8);
    return st;
}

extern "C" wk_status wk_gpu_qgather(void *ctx, const wk_op_args *a)
{
    wk_gpu_ctx *c = (wk_gpu_ctx *)ctx;
    const wk_view *d = a->dst, *t = a->src[0], *ids = a->src[1];
    WK_GPU_ENTER(c);
    const int64_t n = ids->dims[0], limit = t->dims[0];
    if (n == 0) return WK_OK;
    wk_status st = WK_OK;
    int64_t id = 0;
    if (t->dims[1] == 0) {
        /* no columns: nothing to write, the ids are still checked (here) */
        for (int64_t i = 0; i < n && st == WK_OK; i++) {
            st = q_id_at(c, ids, i, &id);
            if (st == WK_OK && (id < 0 || id >= limit)) break;
        }
        if (st != WK_OK || (id >= 0 && id < limit)) return st;
    } else {
        qd_params p;
        memset(&p, 0, sizeof p);
        q_src(t, &p.src, &p.row_blocks);
        p.rows = n;
        p.gpr = t->dims[1] / 32;
        p.dst = wk_gpu_view_ptr(d);
        p.vec = wk_gpu_aligned(p.dst, 16);
        p.ids = wk_gpu_view_ptr(ids);
        p.ids_dt = ids->dtype;
        p.ids_st = n > 1 ? ids->strides[0] : 0;
        p.limit = limit;
        /* recording a graph, or ids the caller checked (WK_OPF_IDS_CHECKED):
           no check (a host wait); a bad id gives zeros */
        if (c->recording || (a->flags & WK_OPF_IDS_CHECKED)) return qd_launch(c, t->dtype, d->dtype, p, "qgather");
        /* the kernel writes zeros for a bad id and keeps the first bad
         * position in a device word, read back here: qgather waits for its
         * kernel (embedding lookups are small) */
        unsigned long long *bad = NULL, pos = ~0ull;
        st = wk_gpu_scratch_alloc(c, sizeof *bad, (void **)&bad);
        if (st != WK_OK) return st;
        p.bad = bad;
        hipError_t e = hipMemsetAsync(bad, 0xFF, sizeof *bad, c->stream);
        if (e != hipSuccess) st = wk_gpu_fail(c, e, "hipMemsetAsync(qgather check)", __FILE__, __LINE__);
        if (st == WK_OK) st = qd_launch(c, t->dtype, d->dtype, p, "qgather");
        if (st == WK_OK) st = wk_gpu_read(c, &pos, bad, sizeof pos);
        wk_gpu_scratch_free(c, bad);
        if (st != WK_OK || pos == ~0ull) return st;
        st = q_id_at(c, ids, (int64_t)pos, &id);
        if (st != WK_OK) return st;
    }
    return wk_gpu_host->set_error(WK_ERR_INDEX, "id %lld is out of range for a table of %lld rows", (long long)id,
                                  (long long)limit);
}

/* ------------------------------------------------------------------ */
/* qmatvec: the unit decoders                                          */

/* Each decoder: U values per unit; SUMS: needs per-32 sums of x; NB:
 * units a thread loads before it computes any (loads in flight); load()
 * reads unit u of the weight row wr into registers (D); dot<M>() adds to
 * acc[i] the dot product of the unit with x row i, whose float4 c
 * (values 4c..4c+3 of the unit) is xs[i * xr + c * cs] and whose per-32
 * sums are sm[i * sr + h]. */

/* generic: any type, 32 values per unit through qd_group */
template <int QT> struct qu_generic {
    static constexpr int U = 32, SUMS = 0, NB = 1;
    struct D { const uint8_t *b; int g; };
    static WK_DEV void load(const uint8_t *wr, int64_t u, D &d)
    {
        const int64_t BB = wk_dt_block_bytes((wk_dtype)QT), GPB = wk_dt_block((wk_dtype)QT) / 32;
        d.b = wr + (u / GPB) * BB;
        d.g = (int)(u % GPB);
    }
    template <int M>
    static WK_DEV void dot(const D &d, const float4 *xs, int xr, int cs, const float *, int, float (&acc)[M])
    {
        float y[32];
        qd_group<QT>(d.b, d.g, y);
#pragma unroll
        for (int c = 0; c < 8; c++)
#pragma unroll
            for (int i = 0; i < M; i++) {
                const float4 x = xs[i * xr + c * cs];
                float s = acc[i];
                s = fmaf(x.x, y[4 * c], s);
                s = fmaf(x.y, y[4 * c + 1], s);
                s = fmaf(x.z, y[4 * c + 2], s);
                s = fmaf(x.w, y[4 * c + 3], s);
                acc[i] = s;
            }
    }
};

/* dense bf16 / f16 rows (the dense matvec of gemv.hip): 32 values,
 * four 16-byte loads */
template <bool BF> struct qu_dense {
    static constexpr int U = 32, SUMS = 0, NB = 2;
    struct D { uint4 q[4]; };
    static WK_DEV void load(const uint8_t *wr, int64_t u, D &d)
    {
        const uint4 *p = (const uint4 *)(wr + u * 64);
#pragma unroll
        for (int j = 0; j < 4; j++) d.q[j] = p[j];
    }
    static WK_DEV float lo(uint32_t w) { return BF ? __int_as_float((int)(w << 16)) : wk_fast_f16_to_f32((uint16_t)(w & 0xFFFF)); }
    static WK_DEV float hi(uint32_t w) { return BF ? __int_as_float((int)(w & 0xFFFF0000u)) : wk_fast_f16_to_f32((uint16_t)(w >> 16)); }
    template <int M>
    static WK_DEV void dot(const D &d, const float4 *xs, int xr, int cs, const float *, int, float (&acc)[M])
    {
#pragma unroll
        for (int c = 0; c < 8; c++) {
            const uint4 q = d.q[c / 2];
            const uint32_t w0 = c % 2 ? q.z : q.x, w1 = c % 2 ? q.w : q.y;
            const float y0 = lo(w0), y1 = hi(w0), y2 = lo(w1), y3 = hi(w1);
#pragma unroll
            for (int i = 0; i < M; i++) {
                const float4 x = xs[i * xr + c * cs];
                float s = acc[i];
                s = fmaf(x.x, y0, s);
                s = fmaf(x.y, y1, s);
                s = fmaf(x.z, y2, s);
                s = fmaf(x.w, y3, s);
                acc[i] = s;
            }
        }
    }
};

/* s += x . (the 4 bytes of w as floats, each + 2^23 - off) */
WK_DEV float q_dot4(float4 x, uint32_t w, float off, float s)
{
    s = fmaf(x.x, q_mag(w, 0) - off, s);
    s = fmaf(x.y, q_mag(w, 1) - off, s);
    s = fmaf(x.z, q_mag(w, 2) - off, s);
    s = fmaf(x.w, q_mag(w, 3) - off, s);
    return s;
}

struct qu_q4_0 {
    static constexpr int U = 32, SUMS = 0, NB = 4;
    struct D { uint32_t b[5]; };
    static WK_DEV void load(const uint8_t *wr, int64_t u, D &d) { q_load2<18>(wr + u * 18, d.b); }
    template <int M>
    static WK_DEV void dot(const D &dd, const float4 *xs, int xr, int cs, const float *, int, float (&acc)[M])
    {
        const float d = wk_fast_f16_to_f32((uint16_t)(dd.b[0] & 0xFFFF));
        float s[M];
#pragma unroll
        for (int i = 0; i < M; i++) s[i] = 0.0f;
#pragma unroll
        for (int j = 0; j < 4; j++) {
            const uint32_t q = q_fsr(dd.b[j], dd.b[j + 1], 16);
            const uint32_t lo = q & 0x0F0F0F0Fu, hi = (q >> 4) & 0x0F0F0F0Fu;
#pragma unroll
            for (int i = 0; i < M; i++) {
                s[i] = q_dot4(xs[i * xr + j * cs], lo, 8388616.0f, s[i]);
                s[i] = q_dot4(xs[i * xr + (4 + j) * cs], hi, 8388616.0f, s[i]);
            }
        }
#pragma unroll
        for (int i = 0; i < M; i++) acc[i] = fmaf(d, s[i], acc[i]);
    }
};

struct qu_q8_0 {
    static constexpr int U = 32, SUMS = 0, NB = 4;
    struct D { uint32_t b[9]; };
    static WK_DEV void load(const uint8_t *wr, int64_t u, D &d) { q_load2<34>(wr + u * 34, d.b); }
    template <int M>
    static WK_DEV void dot(const D &dd, const float4 *xs, int xr, int cs, const float *, int, float (&acc)[M])
    {
        const float d = wk_fast_f16_to_f32((uint16_t)(dd.b[0] & 0xFFFF));
        float s[M];
#pragma unroll
        for (int i = 0; i < M; i++) s[i] = 0.0f;
#pragma unroll
        for (int j = 0; j < 8; j++) {
            const uint32_t q = q_fsr(dd.b[j], dd.b[j + 1], 16) ^ 0x80808080u;   /* codes + 128 */
#pragma unroll
            for (int i = 0; i < M; i++) s[i] = q_dot4(xs[i * xr + j * cs], q, 8388736.0f, s[i]);
        }
#pragma unroll
        for (int i = 0; i < M; i++) acc[i] = fmaf(d, s[i], acc[i]);
    }
};

/* byte t (0..11) of the 12 scale bytes held in words s0, s1, s2 */
WK_DEV int q_sb(uint32_t s0, uint32_t s1, uint32_t s2, int t)
{
    const uint32_t w = t < 4 ? s0 : t < 8 ? s1 : s2;
    return (int)((w >> (8 * (t & 3))) & 0xFF);
}
WK_DEV void q_sm_k4(int j, uint32_t s0, uint32_t s1, uint32_t s2, int *d, int *m)
{
    if (j < 4) {
        *d = q_sb(s0, s1, s2, j) & 63;
        *m = q_sb(s0, s1, s2, j + 4) & 63;
    } else {
        *d = (q_sb(s0, s1, s2, j + 4) & 0xF) | ((q_sb(s0, s1, s2, j - 4) >> 6) << 4);
        *m = (q_sb(s0, s1, s2, j + 4) >> 4) | ((q_sb(s0, s1, s2, j) >> 6) << 4);
    }
}

/* q4_k and q5_k: units of 64 (two groups of 32 with a scale and a min) */
template <bool FIVE> struct qu_qk45 {
    static constexpr int U = 64, SUMS = 1, NB = FIVE ? 2 : 4;
    struct D { uint4 h, q0, q1, h0, h1; int j; };
    static WK_DEV void load(const uint8_t *wr, int64_t u, D &d)
    {
        constexpr int SB = FIVE ? 176 : 144;
        const uint8_t *sb = wr + (u >> 2) * SB;
        d.j = (int)(u & 3);
        d.h = *(const uint4 *)sb;                                  /* d, dmin, scales[12] */
        const uint4 *qp = (const uint4 *)(sb + (FIVE ? 48 : 16) + 32 * d.j);
        d.q0 = qp[0];
        d.q1 = qp[1];
        if (FIVE) {
            d.h0 = ((const uint4 *)(sb + 16))[0];
            d.h1 = ((const uint4 *)(sb + 16))[1];
        }
    }
    template <int M>
    static WK_DEV void dot(const D &dd, const float4 *xs, int xr, int cs, const float *sm, int sr, float (&acc)[M])
    {
        const int j = dd.j;
        const uint32_t qw[8] = { dd.q0.x, dd.q0.y, dd.q0.z, dd.q0.w, dd.q1.x, dd.q1.y, dd.q1.z, dd.q1.w };
        const uint32_t hw[8] = { dd.h0.x, dd.h0.y, dd.h0.z, dd.h0.w, dd.h1.x, dd.h1.y, dd.h1.z, dd.h1.w };
        const float d = wk_fast_f16_to_f32((uint16_t)(dd.h.x & 0xFFFF)), dmin = wk_fast_f16_to_f32((uint16_t)(dd.h.x >> 16));
        int sc1, m1, sc2, m2;
        q_sm_k4(2 * j, dd.h.y, dd.h.z, dd.h.w, &sc1, &m1);
        q_sm_k4(2 * j + 1, dd.h.y, dd.h.z, dd.h.w, &sc2, &m2);
        const float d1 = d * (float)sc1, d2 = d * (float)sc2, mm1 = dmin * (float)m1, mm2 = dmin * (float)m2;
        float s1[M], s2[M];
#pragma unroll
        for (int i = 0; i < M; i++) s1[i] = s2[i] = 0.0f;
#pragma unroll
        for (int c = 0; c < 8; c++) {
            uint32_t lo = qw[c] & 0x0F0F0F0Fu, hi = (qw[c] >> 4) & 0x0F0F0F0Fu;
            if (FIVE) {
                lo |= ((hw[c] >> (2 * j)) & 0x01010101u) << 4;
                hi |= ((hw[c] >> (2 * j + 1)) & 0x01010101u) << 4;
            }
#pragma unroll
            for (int i = 0; i < M; i++) {
                s1[i] = q_dot4(xs[i * xr + c * cs], lo, 8388608.0f, s1[i]);
                s2[i] = q_dot4(xs[i * xr + (8 + c) * cs], hi, 8388608.0f, s2[i]);
            }
        }
#pragma unroll
        for (int i = 0; i < M; i++) {
            float a = acc[i];
            a = fmaf(d1, s1[i], a);
            a = fmaf(-mm1, sm[i * sr], a);
            a = fmaf(d2, s2[i], a);
            a = fmaf(-mm2, sm[i * sr + 1], a);
            acc[i] = a;
        }
    }
};

/* q6_k: units of 128 (half a super-block; 8 groups of 16 with a scale) */
struct qu_q6_k {
    static constexpr int U = 128, SUMS = 0, NB = 2;
    struct D { uint32_t ql[17], qh[9], sc[3]; uint32_t d; };
    static WK_DEV void load(const uint8_t *wr, int64_t u, D &d)
    {
        const uint8_t *sb = wr + (u >> 1) * 210;
        const int n = (int)(u & 1);
        q_load2<66>(sb + 64 * n, d.ql);         /* ql[64n .. 64n + 63] (+2 bytes of the next field) */
        q_load2<34>(sb + 128 + 32 * n, d.qh);   /* qh[32n .. 32n + 31] (+2)                          */
        q_load2<10>(sb + 192 + 8 * n, d.sc);    /* scales[8n .. 8n + 7] (+2)                         */
        d.d = q_u16(sb + 208);
    }
    template <int M>
    static WK_DEV void dot(const D &dd, const float4 *xs, int xr, int cs, const float *, int, float (&acc)[M])
    {
        const float d = wk_fast_f16_to_f32((uint16_t)dd.d);
#pragma unroll
        for (int g = 0; g < 8; g++) {
            const int qq = g / 2, half = g % 2;
            const int8_t scg = (int8_t)((dd.sc[g / 4] >> (8 * (g % 4))) & 0xFF);
            const float dg = d * (float)scg;
            float s[M];
#pragma unroll
            for (int i = 0; i < M; i++) s[i] = 0.0f;
#pragma unroll
            for (int cc = 0; cc < 4; cc++) {
                const int c = 4 * half + cc;                /* byte word of l = 4c..4c+3 */
                const uint32_t A = dd.ql[c], Bw = dd.ql[c + 8], H = dd.qh[c];
                uint32_t q;
                if (qq == 0) q = (A & 0x0F0F0F0Fu) | ((H << 4) & 0x30303030u);
                else if (qq == 1) q = (Bw & 0x0F0F0F0Fu) | ((H << 2) & 0x30303030u);
                else if (qq == 2) q = ((A >> 4) & 0x0F0F0F0Fu) | (H & 0x30303030u);
                else q = ((Bw >> 4) & 0x0F0F0F0Fu) | ((H >> 2) & 0x30303030u);
#pragma unroll
                for (int i = 0; i < M; i++) s[i] = q_dot4(xs[i * xr + (8 * qq + c) * cs], q, 8388640.0f, s[i]);
            }
#pragma unroll
            for (int i = 0; i < M; i++) acc[i] = fmaf(dg, s[i], acc[i]);
        }
    }
};

template <int QT> struct qu_of { typedef qu_generic<QT> T; };
template <> struct qu_of<WK_Q4_0> { typedef qu_q4_0 T; };
template <> struct qu_of<WK_Q8_0> { typedef qu_q8_0 T; };
template <> struct qu_of<WK_Q4_K> { typedef qu_qk45<false> T; };
template <> struct qu_of<WK_Q5_K> { typedef qu_qk45<true> T; };
template <> struct qu_of<WK_Q6_K> { typedef qu_q6_k T; };
template <> struct qu_of<WK_BF16> { typedef qu_dense<true> T; };
template <> struct qu_of<WK_F16> { typedef qu_dense<false> T; };

/* ------------------------------------------------------------------ */
/* qmatvec: the kernel                                                  */

#define QMV_BLOCK 256
#define QMVQ_LOCAL_MAX 32768   /* bytes of 8-bit x a qmvq block may make for itself */

struct qmv_params {
    const uint8_t *w;         /* row 0 of W                            */
    int64_t w_rs;             /* W row stride, bytes                   */
    int64_t n, k;
    const void *x;            /* element 0 of x                        */
    int x_dt;
    int64_t x_s0, x_s1;       /* x strides (elements)                  */
    void *y;                  /* [m, n] contiguous                     */
    int m, tr, kc;            /* rows of x; threads per row; chunk     */
};

WK_DEV float qmv_ld(const void *x, int dt, int64_t o)
{
    if (dt == WK_F32) return ((const float *)x)[o];
    const uint16_t h = ((const uint16_t *)x)[o];
    return dt == WK_F16 ? wk_fast_f16_to_f32(h) : wk_bf16_to_f32(h);
}

template <int QT, int M> __global__ __launch_bounds__(QMV_BLOCK) void qmv_kernel(qmv_params p)
{
    typedef typename qu_of<QT>::T QU;
    constexpr int U = QU::U;
    extern __shared__ float4 qmv_smem[];
    const int tid = (int)threadIdx.x, tr = p.tr, nr = QMV_BLOCK / tr;
    const int rl = tid / tr, lr = tid - rl * tr;
    const int64_t row = (int64_t)blockIdx.x * nr + rl;
    const bool live = row < p.n;
    const uint8_t *wr = p.w + (live ? row : 0) * p.w_rs;
    const int xr = p.kc / 4, sr = p.kc / 32;               /* per x row: float4s, sums */
    float4 *xs = qmv_smem;
    float *sm = (float *)(qmv_smem + M * xr);
    float acc[M];
#pragma unroll
    for (int i = 0; i < M; i++) acc[i] = 0.0f;
    const bool unit = p.x_s1 == 1;
    for (int64_t k0 = 0; k0 < p.k; k0 += p.kc) {
        const int kc = (int)(p.k - k0 < p.kc ? p.k - k0 : p.kc), upc = kc / U, f4 = kc / 4;
        __syncthreads();                                    /* the last chunk is done */
        for (int f = tid; f < M * f4; f += QMV_BLOCK) {
            const int i = f / f4, e = 4 * (f - i * f4);
            const int64_t o = i * p.x_s0 + (k0 + e) * p.x_s1;
            float4 v;
            if (i >= p.m) {                               /* rows past m: zeros */
                v = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
            } else if (unit && p.x_dt == WK_F32) {
                const float *xp = (const float *)p.x + o;
                v = make_float4(xp[0], xp[1], xp[2], xp[3]);
            } else {
                v.x = qmv_ld(p.x, p.x_dt, o);
                v.y = qmv_ld(p.x, p.x_dt, o + p.x_s1);
                v.z = qmv_ld(p.x, p.x_dt, o + 2 * p.x_s1);
                v.w = qmv_ld(p.x, p.x_dt, o + 3 * p.x_s1);
            }
            const int uu = e / U, c = (e - uu * U) / 4;
            xs[i * xr + c * upc + uu] = v;
        }
        if (QU::SUMS) {
            __syncthreads();
            for (int s = tid; s < M * (kc / 32); s += QMV_BLOCK) {
                const int i = s / (kc / 32), g = s - i * (kc / 32), uu = (32 * g) / U, h = (32 * g - uu * U) / 32;
                float t = 0.0f;
                for (int c = 8 * h; c < 8 * h + 8; c++) {
                    const float4 v = xs[i * xr + c * upc + uu];
                    t += (v.x + v.y) + (v.z + v.w);
                }
                sm[i * sr + uu * (U / 32) + h] = t;
            }
        }
        __syncthreads();
        if (live)
            for (int u0 = lr; u0 < upc; u0 += QU::NB * tr) {
                typename QU::D dd[QU::NB];                  /* NB units' loads in flight */
#pragma unroll
                for (int b = 0; b < QU::NB; b++)
                    if (u0 + b * tr < upc) QU::load(wr, k0 / U + u0 + b * tr, dd[b]);
#pragma unroll
                for (int b = 0; b < QU::NB; b++) {
                    const int uu = u0 + b * tr;
                    if (uu < upc) QU::template dot<M>(dd[b], xs + uu, xr, upc, sm + uu * (U / 32), sr, acc);
                }
            }
    }
    /* reduce the tr partial sums of each row through shared memory */
    __syncthreads();
    float *red = (float *)qmv_smem;                         /* [M][QMV_BLOCK] */
#pragma unroll
    for (int i = 0; i < M; i++) red[i * QMV_BLOCK + tid] = acc[i];
    __syncthreads();
    for (int s = tr / 2; s > 0; s /= 2) {
        if (lr < s)
#pragma unroll
            for (int i = 0; i < M; i++) red[i * QMV_BLOCK + tid] += red[i * QMV_BLOCK + tid + s];
        __syncthreads();
    }
    if (live && lr == 0)
        for (int i = 0; i < p.m; i++) {
            const float v = red[i * QMV_BLOCK + tid];
            const int64_t o = i * p.n + row;
            if (p.x_dt == WK_F32) ((float *)p.y)[o] = v;
            else if (p.x_dt == WK_F16) ((uint16_t *)p.y)[o] = wk_fast_f32_to_f16(v);
            else ((uint16_t *)p.y)[o] = wk_fast_f32_to_bf16(v);
        }
}

/* shared memory of a qmv launch */
static size_t qmv_smem_bytes(int M, int kc)
{
    size_t x = (size_t)M * (size_t)kc * 4 + (size_t)M * (size_t)(kc / 32) * 4;
    size_t red = (size_t)M * QMV_BLOCK * 4;
    return x > red ? x : red;
}

template <int QT, int M> static void qmv_go(wk_gpu_ctx *c, const qmv_params &p, unsigned grid, size_t smem)
{
    void (*kern)(qmv_params) = qmv_kernel<QT, M>;
    if (smem > 48 * 1024)
        (void)hipFuncSetAttribute((const void *)kern, hipFuncAttributeMaxDynamicSharedMemorySize, (int)smem);
    qmv_kernel<QT, M><<<grid, QMV_BLOCK, smem, c->stream>>>(p);
}

/* y [m, n] = x [m, k] . W^T, W [n, k] of type qt (a block dtype, or
 * bf16/f16 for the dense matvec) at w with row stride w_rs bytes */
static wk_status qmv_run(wk_gpu_ctx *c, wk_dtype qt, const uint8_t *w, int64_t w_rs, int64_t n, int64_t k,
                         const wk_view *d, const wk_view *x)
{
    const int64_t m = d->dims[0];
    const int M = m <= 1 ? 1 : m <= 2 ? 2 : m <= 4 ? 4 : 8;
    int U = 32;
    Q_DISPATCH(qt, U = qu_of<QT_>::T::U);
    qmv_params p;
    memset(&p, 0, sizeof p);
    p.w = w;
    p.w_rs = w_rs;
    p.n = n;
    p.k = k;
    p.x = wk_gpu_view_ptr(x);
    p.x_dt = x->dtype;
    p.x_s0 = x->strides[0];
    p.x_s1 = x->strides[1];
    p.y = wk_gpu_view_ptr(d);
    p.m = (int)m;
    /* chunk of x in shared memory: WICK_QMV_X floats (all rows), a
     * multiple of 256 values per row */
    int64_t kc = wk_gpu_env.qmv_x / M;
    kc = kc / 256 * 256;
    if (kc < 256) kc = 256;
    if (kc > k) kc = k;
    p.kc = (int)kc;
    /* threads per row: enough for the row's units, then halved while the
     * grid keeps WICK_QMV_BPS blocks per multiprocessor: 2 for k < 8192,
     * 1 for longer rows (whose x chunks cost more to stage per block): the
     * best of 1, 2, 4 and 16 for the rows of docs/quantization.md (H100) */
    const int64_t units = k / U;
    int tr = 1;
    while (tr < QMV_BLOCK && tr < units) tr *= 2;
    const int64_t want = (int64_t)c->sm_count * (wk_gpu_env.qmv_bps_set ? wk_gpu_env.qmv_bps : k >= 8192 ? 1 : 2);
    while (tr > 1 && (n + 2 * (QMV_BLOCK / tr) - 1) / (2 * (QMV_BLOCK / tr)) >= want) tr /= 2;
    const int force = wk_gpu_env.qmv_tr;
    if (force >= 1 && force <= QMV_BLOCK && (force & (force - 1)) == 0) tr = force;
    p.tr = tr;
    const int64_t nr = QMV_BLOCK / tr;
    const int64_t g = (n + nr - 1) / nr;
    if (g > 0x7FFFFFFF) return wk_gpu_host->set_error(WK_ERR_SHAPE, "qmatmul: %lld rows of w are too many", (long long)n);
    const size_t smem = qmv_smem_bytes(M, p.kc);
#define QMV_GO_(QT)                                                                \
    {                                                                              \
        if (M == 1) qmv_go<QT, 1>(c, p, (unsigned)g, smem);                        \
        else if (M == 2) qmv_go<QT, 2>(c, p, (unsigned)g, smem);                   \
        else if (M == 4) qmv_go<QT, 4>(c, p, (unsigned)g, smem);                   \
        else qmv_go<QT, 8>(c, p, (unsigned)g, smem);                               \
    }
    Q_DISPATCH(qt, QMV_GO_(QT_));
#undef QMV_GO_
    return wk_gpu_launched(c, "qmatmul (qmatvec)", __FILE__, __LINE__);
}

/* ------------------------------------------------------------------ */
/* qmatvec with 8-bit activations (the default for q4_0, q8_0, q4_k,    */
/* q5_k, q6_k) and the dense f16/bf16 matvec                            */
/*
 * x (m <= 8 rows, any dtype and strides) is first turned, by qx_kernel,
 * into a contiguous scratch copy in ggml's q8_1 activation format, with
 * the scale and the sum kept in f32: per 32 values of a row, d = amax /
 * 127, q = rint(x / d) (int8) and s = d * (the sum of the 32 q), so that
 * the offsets and mins of W meet the same rounded x as its codes and the
 * result is W . (x rounded), to f32 rounding. Rows m..M-1 (M = m rounded
 * up to 1, 2, 4, 8) are zeros. For one row (decode) of at most 32 KB in
 * that format (k up to 26214), each block of qmvq_kernel makes the same
 * copy in its shared memory instead (qx_group, the same code; every
 * block reads x, from L2): no first kernel, one launch per product, which
 * is what a decode step bound by the host's launches needs
 * (WICK_QMVQ_LOCAL=0: the first kernel again). The dense matvec reads x
 * (16-bit, the format of W) in place: no first kernel.
 *
 * qmvq_kernel<type, M, R> then reads W once for all M rows of x: blocks
 * of 256 threads, TR threads per group of R consecutive weight rows,
 * 256 / TR groups per block. A thread takes units u = lr, lr + TR, ... of
 * its rows (U values each; consecutive threads, consecutive units: the
 * loads of a warp are contiguous), loads the unit of its R rows (NB units
 * each, when NB > 1, before it computes any), and for each x row loads
 * that row's slice of x once (int4 words from the L1-resident scratch)
 * and uses it for all R weight rows: R > 1 is what keeps the x traffic
 * under the L1 rate at M = 8. Dot products of codes and x bytes are 32-bit
 * integer dot products of four byte pairs (q_dot4i: dp4a on NVIDIA,
 * sdot4 on AMD targets that have it, a portable twin elsewhere, forced by
 * WK_QDOT_PORTABLE and in the virtual-wave64 build); the block scales of
 * W and x are applied once per 16 or 32 values in f32. The TR partial sums
 * of a row are added by shuffles within groups of min(TR, 32) lanes (a
 * group never crosses a warp of 32 or 64 lanes: the same code for wave32
 * and wave64) and, for TR > 32, through shared memory.
 *
 * WICK_QMATVEC=f32 takes the f32-activation kernel above (qmv_kernel) for
 * every type: x is not rounded to 8 bits there. docs/quantization.md has
 * the error of each path.
 */

/* c + the dot product of the four signed bytes of a and of b */
WK_DEV int q_dot4i_portable(int a, int b, int c)
{
#pragma unroll
    for (int j = 0; j < 4; j++) c += (int)(int8_t)(a >> (8 * j)) * (int)(int8_t)(b >> (8 * j));
    return c;
}
WK_DEV int q_dot4i(int a, int b, int c)
{
#if defined(WK_QDOT_PORTABLE) || defined(WK_VIRTUAL_WAVE64)
    return q_dot4i_portable(a, b, c);          /* the AMD sdot4 emulated (virtual wave64) */
#elif defined(WK_GPU_CUDA)
    return __dp4a(a, b, c);
#elif defined(__gfx906__) || defined(__gfx908__) || defined(__gfx90a__) || defined(__gfx940__) || \
    defined(__gfx941__) || defined(__gfx942__) || defined(__gfx1030__) || defined(__gfx1031__) ||  \
    defined(__gfx1032__) || defined(__gfx1034__) || defined(__gfx1035__) || defined(__gfx1036__)
    return __builtin_amdgcn_sdot4(a, b, c, false);   /* v_dot4_i32_i8, no clamp */
#else
    return q_dot4i_portable(a, b, c);
#endif
}

/* x as the kernel reads it: xq [M][k] int8, xd [M][k / 32] (d, d * the
 * sum of the 32 codes) for the quantized types; the dense rows read x in
 * place (xh: row i at xh + i * xh_s0, 16-bit values of W's format, rows
 * 16-byte aligned, m rows) */
struct qx_ref {
    const int8_t *xq;
    const float2 *xd;
    const uint16_t *xh;
    int64_t k, xh_s0;
    int m;
};

/* 4 words of x row i, values [v, v + 16) (v a multiple of 16) */
WK_DEV int4 q_xw(const qx_ref &x, int i, int64_t v) { return *(const int4 *)(x.xq + i * x.k + v); }
WK_DEV float2 q_xs(const qx_ref &x, int i, int64_t blk) { return x.xd[i * (x.k / 32) + blk]; }
WK_DEV int q_w4(const int4 &a, int c) { return c == 0 ? a.x : c == 1 ? a.y : c == 2 ? a.z : a.w; }

/* Each decoder: U values per unit, NB units per row a thread loads before
 * it computes (R = 1; NB / R for R rows), load(), and dot<M, R>() adding
 * to acc[r][i] unit u of weight row r against x row i. */

struct qq_q4_0 {
    static constexpr int U = 32, NB = 4;
    struct D { uint32_t b[5]; };
    static WK_DEV void load(const uint8_t *wr, int64_t u, D &d) { q_load2<18>(wr + u * 18, d.b); }
    template <int M, int R> static WK_DEV void dot(const D *dd, const qx_ref &x, int64_t u, float (&acc)[R][M])
    {
        uint32_t lo[R][4], hi[R][4];
        float d[R];
#pragma unroll
        for (int r = 0; r < R; r++) {
            d[r] = wk_fast_f16_to_f32((uint16_t)(dd[r].b[0] & 0xFFFF));
#pragma unroll
            for (int j = 0; j < 4; j++) {
                const uint32_t q = q_fsr(dd[r].b[j], dd[r].b[j + 1], 16);
                lo[r][j] = q & 0x0F0F0F0Fu;
                hi[r][j] = (q >> 4) & 0x0F0F0F0Fu;
            }
        }
#pragma unroll
        for (int i = 0; i < M; i++) {
            const int4 a = q_xw(x, i, u * 32), b = q_xw(x, i, u * 32 + 16);
            const float2 e = q_xs(x, i, u);
#pragma unroll
            for (int r = 0; r < R; r++) {
                int s = 0;
#pragma unroll
                for (int j = 0; j < 4; j++) {
                    s = q_dot4i((int)lo[r][j], q_w4(a, j), s);
                    s = q_dot4i((int)hi[r][j], q_w4(b, j), s);
                }
                acc[r][i] = fmaf(d[r], fmaf(e.x, (float)s, -8.0f * e.y), acc[r][i]);
            }
        }
    }
};

struct qq_q8_0 {
    static constexpr int U = 32, NB = 4;
    struct D { uint32_t b[9]; };
    static WK_DEV void load(const uint8_t *wr, int64_t u, D &d) { q_load2<34>(wr + u * 34, d.b); }
    template <int M, int R> static WK_DEV void dot(const D *dd, const qx_ref &x, int64_t u, float (&acc)[R][M])
    {
#pragma unroll
        for (int i = 0; i < M; i++) {
            const int4 a = q_xw(x, i, u * 32), b = q_xw(x, i, u * 32 + 16);
            const float2 e = q_xs(x, i, u);
#pragma unroll
            for (int r = 0; r < R; r++) {
                int s = 0;
#pragma unroll
                for (int j = 0; j < 8; j++)
                    s = q_dot4i((int)q_fsr(dd[r].b[j], dd[r].b[j + 1], 16), q_w4(j < 4 ? a : b, j & 3), s);
                const float d = wk_fast_f16_to_f32((uint16_t)(dd[r].b[0] & 0xFFFF));
                acc[r][i] = fmaf(d * e.x, (float)s, acc[r][i]);
            }
        }
    }
};

/* q4_k / q5_k: units of 64 values (sub-blocks 2j and 2j + 1 of a
 * super-block, each with a 6-bit scale and min) */
template <bool FIVE> struct qq_qk45 {
    static constexpr int U = 64, NB = FIVE ? 2 : 2;
    struct D { uint4 h, q0, q1, h0, h1; };
    static WK_DEV void load(const uint8_t *wr, int64_t u, D &d)
    {
        constexpr int SB = FIVE ? 176 : 144;
        const uint8_t *sb = wr + (u >> 2) * SB;
        const int j = (int)(u & 3);
        d.h = *(const uint4 *)sb;
        const uint4 *qp = (const uint4 *)(sb + (FIVE ? 48 : 16) + 32 * j);
        d.q0 = qp[0];
        d.q1 = qp[1];
        if (FIVE) {
            d.h0 = ((const uint4 *)(sb + 16))[0];
            d.h1 = ((const uint4 *)(sb + 16))[1];
        }
    }
    template <int M, int R> static WK_DEV void dot(const D *dd, const qx_ref &x, int64_t u, float (&acc)[R][M])
    {
        const int j = (int)(u & 3);
        uint32_t lo[R][8], hi[R][8];
        float k1[R], k2[R], n1[R], n2[R];
#pragma unroll
        for (int r = 0; r < R; r++) {
            const uint4 &h = dd[r].h;
            const float d = wk_fast_f16_to_f32((uint16_t)(h.x & 0xFFFF)), dmin = wk_fast_f16_to_f32((uint16_t)(h.x >> 16));
            int sc1, m1, sc2, m2;
            q_sm_k4(2 * j, h.y, h.z, h.w, &sc1, &m1);
            q_sm_k4(2 * j + 1, h.y, h.z, h.w, &sc2, &m2);
            k1[r] = d * (float)sc1;
            k2[r] = d * (float)sc2;
            n1[r] = dmin * (float)m1;
            n2[r] = dmin * (float)m2;
            const uint32_t qw[8] = { dd[r].q0.x, dd[r].q0.y, dd[r].q0.z, dd[r].q0.w,
                                     dd[r].q1.x, dd[r].q1.y, dd[r].q1.z, dd[r].q1.w };
            const uint32_t hw[8] = { dd[r].h0.x, dd[r].h0.y, dd[r].h0.z, dd[r].h0.w,
                                     dd[r].h1.x, dd[r].h1.y, dd[r].h1.z, dd[r].h1.w };
#pragma unroll
            for (int c = 0; c < 8; c++) {
                lo[r][c] = qw[c] & 0x0F0F0F0Fu;
                hi[r][c] = (qw[c] >> 4) & 0x0F0F0F0Fu;
                if (FIVE) {
                    lo[r][c] |= ((hw[c] >> (2 * j)) & 0x01010101u) << 4;
                    hi[r][c] |= ((hw[c] >> (2 * j + 1)) & 0x01010101u) << 4;
                }
            }
        }
#pragma unroll
        for (int i = 0; i < M; i++) {
            const int4 a0 = q_xw(x, i, u * 64), a1 = q_xw(x, i, u * 64 + 16);
            const int4 b0 = q_xw(x, i, u * 64 + 32), b1 = q_xw(x, i, u * 64 + 48);
            const float2 e1 = q_xs(x, i, 2 * u), e2 = q_xs(x, i, 2 * u + 1);
#pragma unroll
            for (int r = 0; r < R; r++) {
                int s1 = 0, s2 = 0;
#pragma unroll
                for (int c = 0; c < 8; c++) {
                    s1 = q_dot4i((int)lo[r][c], q_w4(c < 4 ? a0 : a1, c & 3), s1);
                    s2 = q_dot4i((int)hi[r][c], q_w4(c < 4 ? b0 : b1, c & 3), s2);
                }
                float t = acc[r][i];
                t = fmaf(k1[r] * e1.x, (float)s1, t);
                t = fmaf(k2[r] * e2.x, (float)s2, t);
                t = fmaf(-n1[r], e1.y, t);
                t = fmaf(-n2[r], e2.y, t);
                acc[r][i] = t;
            }
        }
    }
};

/* q6_k: units of 128 values (half a super-block: 8 groups of 16 values,
 * each with a signed 8-bit scale) */
struct qq_q6_k {
    static constexpr int U = 128, NB = 2;
    typedef qu_q6_k::D D;
    static WK_DEV void load(const uint8_t *wr, int64_t u, D &d) { qu_q6_k::load(wr, u, d); }
    template <int M, int R> static WK_DEV void dot(const D *dd, const qx_ref &x, int64_t u, float (&acc)[R][M])
    {
#pragma unroll
        for (int qq = 0; qq < 4; qq++) {                /* x block 4u + qq: values 32qq .. 32qq + 31 */
            uint32_t q[R][8];
#pragma unroll
            for (int r = 0; r < R; r++)
#pragma unroll
                for (int c = 0; c < 8; c++) {
                    const uint32_t A = dd[r].ql[c], Bw = dd[r].ql[c + 8], H = dd[r].qh[c];
                    uint32_t v;
                    if (qq == 0) v = (A & 0x0F0F0F0Fu) | ((H << 4) & 0x30303030u);
                    else if (qq == 1) v = (Bw & 0x0F0F0F0Fu) | ((H << 2) & 0x30303030u);
                    else if (qq == 2) v = ((A >> 4) & 0x0F0F0F0Fu) | (H & 0x30303030u);
                    else v = ((Bw >> 4) & 0x0F0F0F0Fu) | ((H >> 2) & 0x30303030u);
                    q[r][c] = ((v | 0x80808080u) - 0x20202020u) ^ 0x80808080u;   /* codes - 32, signed bytes */
                }
#pragma unroll
            for (int i = 0; i < M; i++) {
                const int4 a = q_xw(x, i, u * 128 + 32 * qq), b = q_xw(x, i, u * 128 + 32 * qq + 16);
                const float2 e = q_xs(x, i, 4 * u + qq);
#pragma unroll
                for (int r = 0; r < R; r++) {
                    int s0 = 0, s1 = 0;
#pragma unroll
                    for (int c = 0; c < 4; c++) {
                        s0 = q_dot4i((int)q[r][c], q_w4(a, c), s0);
                        s1 = q_dot4i((int)q[r][4 + c], q_w4(b, c), s1);
                    }
                    const int g0 = 2 * qq, g1 = 2 * qq + 1;
                    const int sc0 = (int)(int8_t)((dd[r].sc[g0 / 4] >> (8 * (g0 % 4))) & 0xFF);
                    const int sc1 = (int)(int8_t)((dd[r].sc[g1 / 4] >> (8 * (g1 % 4))) & 0xFF);
                    const float d = wk_fast_f16_to_f32((uint16_t)dd[r].d);
                    acc[r][i] = fmaf(d * e.x, (float)(sc0 * s0 + sc1 * s1), acc[r][i]);
                }
            }
        }
    }
};

/* dense bf16 / f16 rows: 32 values (four 16-byte loads), x (the same
 * format) read in place, 8 bytes at a time */
template <bool BF> struct qq_dense {
    static constexpr int U = 32, NB = 2;
    typedef typename qu_dense<BF>::D D;
    static WK_DEV void load(const uint8_t *wr, int64_t u, D &d) { qu_dense<BF>::load(wr, u, d); }
    template <int M, int R> static WK_DEV void dot(const D *dd, const qx_ref &x, int64_t u, float (&acc)[R][M])
    {
#pragma unroll
        for (int c = 0; c < 8; c++) {
            float y[R][4];
#pragma unroll
            for (int r = 0; r < R; r++) {
                const uint4 q = dd[r].q[c / 2];
                const uint32_t w0 = c % 2 ? q.z : q.x, w1 = c % 2 ? q.w : q.y;
                y[r][0] = qu_dense<BF>::lo(w0);
                y[r][1] = qu_dense<BF>::hi(w0);
                y[r][2] = qu_dense<BF>::lo(w1);
                y[r][3] = qu_dense<BF>::hi(w1);
            }
#pragma unroll
            for (int i = 0; i < M; i++) {
                const int ii = i < x.m ? i : x.m - 1;        /* rows past m: any row (not stored) */
                const uint2 h = *(const uint2 *)(x.xh + ii * x.xh_s0 + u * 32 + 4 * c);
                const float v0 = qu_dense<BF>::lo(h.x), v1 = qu_dense<BF>::hi(h.x);
                const float v2 = qu_dense<BF>::lo(h.y), v3 = qu_dense<BF>::hi(h.y);
#pragma unroll
                for (int r = 0; r < R; r++) {
                    float s = acc[r][i];
                    s = fmaf(v0, y[r][0], s);
                    s = fmaf(v1, y[r][1], s);
                    s = fmaf(v2, y[r][2], s);
                    s = fmaf(v3, y[r][3], s);
                    acc[r][i] = s;
                }
            }
        }
    }
};

template <int QT> struct qq_of { typedef void T; };
template <> struct qq_of<WK_Q4_0> { typedef qq_q4_0 T; };
template <> struct qq_of<WK_Q8_0> { typedef qq_q8_0 T; };
template <> struct qq_of<WK_Q4_K> { typedef qq_qk45<false> T; };
template <> struct qq_of<WK_Q5_K> { typedef qq_qk45<true> T; };
template <> struct qq_of<WK_Q6_K> { typedef qq_q6_k T; };
template <> struct qq_of<WK_BF16> { typedef qq_dense<true> T; };
template <> struct qq_of<WK_F16> { typedef qq_dense<false> T; };

/* the types with an 8-bit-activation kernel */
static bool qq_has(wk_dtype qt)
{
    return qt == WK_Q4_0 || qt == WK_Q8_0 || qt == WK_Q4_K || qt == WK_Q5_K || qt == WK_Q6_K;
}

/* x [m, k] (any dtype, strides) -> the scratch of qx_ref, rows m..M-1
 * zero; one thread per 32 values, read with 16-byte loads when vec (x
 * contiguous along k, rows 16-byte aligned) */
struct qx_params {
    const void *x;
    int x_dt, m, M;
    int64_t x_s0, x_s1, k;
    int8_t *xq;
    float2 *xd;
    bool vec;
};

/* values [32 b, 32 b + 32) of x's row i into xq (row stride k) and xd
 * (row stride k / 32) */
WK_DEV void qx_group(const qx_params &p, int64_t i, int64_t b, int8_t *xq, float2 *xd)
{
    const int64_t nb = p.k / 32;
    float v[32];
    if (i >= p.m) {
#pragma unroll
        for (int j = 0; j < 32; j++) v[j] = 0.0f;
    } else if (p.vec && p.x_dt == WK_F32) {
        const float4 *src = (const float4 *)((const float *)p.x + i * p.x_s0 + 32 * b);
        float4 f[8];
#pragma unroll
        for (int c = 0; c < 8; c++) f[c] = src[c];
#pragma unroll
        for (int c = 0; c < 8; c++) {
            v[4 * c] = f[c].x;
            v[4 * c + 1] = f[c].y;
            v[4 * c + 2] = f[c].z;
            v[4 * c + 3] = f[c].w;
        }
    } else if (p.vec) {
        const uint4 *src = (const uint4 *)((const uint16_t *)p.x + i * p.x_s0 + 32 * b);
        uint4 h[4];
#pragma unroll
        for (int c = 0; c < 4; c++) h[c] = src[c];
        const bool bf = p.x_dt == WK_BF16;
#pragma unroll
        for (int c = 0; c < 4; c++) {
            const uint32_t w[4] = { h[c].x, h[c].y, h[c].z, h[c].w };
#pragma unroll
            for (int e = 0; e < 4; e++) {
                v[8 * c + 2 * e] = bf ? qu_dense<true>::lo(w[e]) : qu_dense<false>::lo(w[e]);
                v[8 * c + 2 * e + 1] = bf ? qu_dense<true>::hi(w[e]) : qu_dense<false>::hi(w[e]);
            }
        }
    } else {
#pragma unroll
        for (int j = 0; j < 32; j++) v[j] = qmv_ld(p.x, p.x_dt, i * p.x_s0 + (32 * b + j) * p.x_s1);
    }
    float amax = 0.0f;
#pragma unroll
    for (int j = 0; j < 32; j++) amax = fmaxf(amax, fabsf(v[j]));
    const float d = amax / 127.0f, id = d != 0.0f ? 1.0f / d : 0.0f;
    uint32_t w[8];
    int qsum = 0;
#pragma unroll
    for (int c = 0; c < 8; c++) {
        uint32_t o = 0;
#pragma unroll
        for (int j = 0; j < 4; j++) {
            int q = (int)rintf(v[4 * c + j] * id);
            q = q > 127 ? 127 : q < -127 ? -127 : q;
            qsum += q;
            o |= ((uint32_t)q & 0xFFu) << (8 * j);
        }
        w[c] = o;
    }
    uint4 *dst = (uint4 *)(xq + i * p.k + 32 * b);
    dst[0] = make_uint4(w[0], w[1], w[2], w[3]);
    dst[1] = make_uint4(w[4], w[5], w[6], w[7]);
    /* the sum of the rounded values, so that the offsets and mins of W
     * (q4_0's 8, the k types' mins) meet the same x as its codes: the
     * result is then exactly W . (x rounded) up to f32 rounding */
    xd[i * nb + b] = make_float2(d, d * (float)qsum);
}

__global__ void qx_kernel(qx_params p)
{
    const int64_t nb = p.k / 32;
    WK_GPU_FOR(t, (int64_t)p.M * nb) {
        const int64_t i = t / nb;
        qx_group(p, i, t - i * nb, p.xq, p.xd);
    }
}

struct qmvq_params {
    const uint8_t *w;        /* row 0 of W */
    int64_t w_rs;            /* W row stride, bytes */
    int64_t n;
    qx_ref x;
    void *y;                 /* [m, n] contiguous, x's dtype */
    int y_dt, m, tr;
    int local;               /* x quantized by each block into shared memory, from xin */
    qx_params xin;
};

template <int QT, int M, int R> __global__ __launch_bounds__(QMV_BLOCK) void qmvq_kernel(qmvq_params p)
{
    typedef typename qq_of<QT>::T QU;
    constexpr int U = QU::U, NB = QU::NB / R > 1 ? QU::NB / R : 1;
    __shared__ float red[QMV_BLOCK / 32 * R * M];          /* TR > 32: per 32-lane group */
    const int tid = (int)threadIdx.x, tr = p.tr;
    const int rl = tid / tr, lr = tid - rl * tr;
    const int64_t row0 = ((int64_t)blockIdx.x * (QMV_BLOCK / tr) + rl) * R;
    if (p.local) {   /* the block's own copy of x in 8 bits: no launch before this one */
        extern __shared__ float4 qmv_smem[];
        int8_t *xq = (int8_t *)qmv_smem;
        float2 *xd = (float2 *)(xq + (int64_t)M * p.x.k);
        const int64_t nb = p.x.k / 32;
        for (int64_t t = tid; t < (int64_t)M * nb; t += QMV_BLOCK) {
            const int64_t i = t / nb;
            qx_group(p.xin, i, t - i * nb, xq, xd);
        }
        __syncthreads();
        p.x.xq = xq;
        p.x.xd = xd;
    }
    const uint8_t *wr[R];
#pragma unroll
    for (int r = 0; r < R; r++) wr[r] = p.w + (row0 + r < p.n ? row0 + r : p.n - 1) * p.w_rs;
    float acc[R][M];
#pragma unroll
    for (int r = 0; r < R; r++)
#pragma unroll
        for (int i = 0; i < M; i++) acc[r][i] = 0.0f;
    const int64_t units = p.x.k / U;
    if (row0 < p.n)
        for (int64_t u0 = lr; u0 < units; u0 += NB * tr) {
            typename QU::D dd[NB][R];
#pragma unroll
            for (int b = 0; b < NB; b++)
                if (u0 + b * tr < units)
#pragma unroll
                    for (int r = 0; r < R; r++) QU::load(wr[r], u0 + b * tr, dd[b][r]);
#pragma unroll
            for (int b = 0; b < NB; b++)
                if (u0 + b * tr < units) QU::template dot<M, R>(dd[b], p.x, u0 + b * tr, acc);
        }
    /* sums over the tr lanes of a row group: shuffles within groups of
     * g = min(tr, 32) lanes (never across a warp), then shared memory */
    const int g = tr < 32 ? tr : 32;
#pragma unroll
    for (int r = 0; r < R; r++)
#pragma unroll
        for (int i = 0; i < M; i++)
            for (int s = g / 2; s > 0; s /= 2) acc[r][i] += wk_shfl_xor<32>(acc[r][i], s, g);
    if (tr > 32) {
        const int ng = tr / 32;                               /* 32-lane groups per row group */
        if ((lr & 31) == 0)
#pragma unroll
            for (int r = 0; r < R; r++)
#pragma unroll
                for (int i = 0; i < M; i++) red[((rl * ng + lr / 32) * R + r) * M + i] = acc[r][i];
        __syncthreads();
        if (lr == 0)
#pragma unroll
            for (int r = 0; r < R; r++)
#pragma unroll
                for (int i = 0; i < M; i++) {
                    float t = 0.0f;
                    for (int q = 0; q < ng; q++) t += red[((rl * ng + q) * R + r) * M + i];
                    acc[r][i] = t;
                }
    }
    if (lr == 0)
#pragma unroll
        for (int r = 0; r < R; r++)
            if (row0 + r < p.n)
#pragma unroll
                for (int i = 0; i < M; i++)
                    if (i < p.m) {
                        const float v = acc[r][i];
                        const int64_t o = i * p.n + row0 + r;
                        if (p.y_dt == WK_F32) ((float *)p.y)[o] = v;
                        else if (p.y_dt == WK_F16) ((uint16_t *)p.y)[o] = wk_fast_f32_to_f16(v);
                        else ((uint16_t *)p.y)[o] = wk_fast_f32_to_bf16(v);
                    }
}

/* y [m, n] = x [m, k] . W^T through qx_kernel + qmvq_kernel (qt one of
 * qq_has's types), or qmvq_kernel alone for the dense matvec (qt bf16 or
 * f16; x of the same format, contiguous along k, rows 8-byte aligned) */
static wk_status qmvq_run(wk_gpu_ctx *c, wk_dtype qt, const uint8_t *w, int64_t w_rs, int64_t n, int64_t k,
                          const wk_view *d, const wk_view *x)
{
    const int64_t m = d->dims[0];
    const int M = m <= 1 ? 1 : m <= 2 ? 2 : m <= 4 ? 4 : 8;
    const bool dense = qt == WK_BF16 || qt == WK_F16;
    int U = 32;
    if (qt == WK_Q4_K || qt == WK_Q5_K) U = 64;
    else if (qt == WK_Q6_K) U = 128;
    qmvq_params p;
    memset(&p, 0, sizeof p);
    p.w = w;
    p.w_rs = w_rs;
    p.n = n;
    p.x.k = k;
    p.x.m = (int)m;
    p.y = wk_gpu_view_ptr(d);
    p.y_dt = d->dtype;
    p.m = (int)m;
    void *buf = NULL;
    size_t smem = 0;
    wk_status st = WK_OK;
    if (dense) {
        p.x.xh = (const uint16_t *)wk_gpu_view_ptr(x);
        p.x.xh_s0 = x->strides[0];
    } else {
        /* int8 x, then (d, d * sum) per 32 values: for one row of at most
         * QMVQ_LOCAL_MAX bytes in each block's shared memory (made by the
         * block: one launch, where the host's cost per launch sets a
         * decode step's time; WICK_QMVQ_LOCAL=0 turns it off), else in
         * scratch by qx_kernel first */
        const size_t xq_bytes = (size_t)M * (size_t)k, x_bytes = xq_bytes + (size_t)M * (size_t)(k / 32) * 8;
        const bool local = M == 1 && x_bytes <= QMVQ_LOCAL_MAX && wk_gpu_env.qmvq_local != 0;
        if (!local) st = wk_gpu_scratch_alloc(c, x_bytes, &buf);
        if (st != WK_OK) return st;
        qx_params xp;
        memset(&xp, 0, sizeof xp);
        xp.x = wk_gpu_view_ptr(x);
        xp.x_dt = x->dtype;
        xp.m = (int)m;
        xp.M = M;
        xp.x_s0 = x->strides[0];
        xp.x_s1 = x->strides[1];
        xp.k = k;
        xp.xq = (int8_t *)buf;
        xp.xd = (float2 *)((uint8_t *)buf + xq_bytes);
        const int64_t es = x->dtype == WK_F32 ? 4 : 2;
        xp.vec = x->strides[1] == 1 && (m == 1 || (x->strides[0] * es) % 16 == 0) && wk_gpu_aligned(xp.x, 16);
        p.xin = xp;
        if (local) {
            p.local = 1;
            smem = x_bytes;
        }
    }
    if (!dense && !p.local) {
        const qx_params &xp = p.xin;
        qx_kernel<<<wk_gpu_grid(c, (int64_t)M * (k / 32), 64, 8), 64, 0, c->stream>>>(xp);
        st = wk_gpu_launched(c, "qmatmul (qmatvec x to q8)", __FILE__, __LINE__);
        if (st != WK_OK) {
            wk_gpu_scratch_free(c, buf);
            return st;
        }
        p.x.xq = xp.xq;
        p.x.xd = xp.xd;
    }
    /* rows per thread R: 2 for m <= 2, 4 beyond (the x slice of a unit
     * is read once for R weight rows); WICK_QMVQ_R overrides (1, 2, 4).
     * Threads per row group TR: 32 for m <= 2; beyond, the power of two
     * nearest (geometrically) to the row's bytes / 320, 4..256 (8 for the
     * 4096-wide rows of 2.3-4.4 KB, 32-64 for the 14336-wide ones); then
     * doubled while the grid has fewer blocks than half the
     * multiprocessors. WICK_QMV_TR overrides. Each the best or near it in
     * the sweep of docs/quantization.md (H100) */
    int R = M <= 2 ? 2 : 4;
    const int fr = wk_gpu_env.qmvq_r;
    if (fr == 1 || fr == 2 || fr == 4) R = fr;
    if (M == 2 && R == 4) R = 2;                       /* instantiated: M 2 with R 1, 2; M 4 with R 2, 4 */
    if (M == 4 && R == 1) R = 2;
    const int64_t units = k / U;
    int tr = 4;
    if (M <= 2) tr = 32;
    else
        while (tr < QMV_BLOCK && (double)tr * 1.41421356 * 320.0 < (double)w_rs) tr *= 2;
    while (tr < QMV_BLOCK && tr < units &&
           2 * ((n + (int64_t)R * (QMV_BLOCK / tr) - 1) / ((int64_t)R * (QMV_BLOCK / tr))) < c->sm_count)
        tr *= 2;
    const int force = wk_gpu_env.qmv_tr;
    if (force >= 1 && force <= QMV_BLOCK && (force & (force - 1)) == 0) tr = force;
    p.tr = tr;
    const int64_t rpb = (int64_t)R * (QMV_BLOCK / tr);
    const int64_t g = (n + rpb - 1) / rpb;
    if (g > 0x7FFFFFFF) {
        wk_gpu_scratch_free(c, buf);
        return wk_gpu_host->set_error(WK_ERR_SHAPE, "qmatmul: %lld rows of w are too many", (long long)n);
    }
#define QMVQ_GO_(QT)                                                                                   \
    {                                                                                                  \
        if (M == 1) {                                                                                  \
            if (R == 1) qmvq_kernel<QT, 1, 1><<<(unsigned)g, QMV_BLOCK, smem, c->stream>>>(p);            \
            else if (R == 2) qmvq_kernel<QT, 1, 2><<<(unsigned)g, QMV_BLOCK, smem, c->stream>>>(p);       \
            else qmvq_kernel<QT, 1, 4><<<(unsigned)g, QMV_BLOCK, smem, c->stream>>>(p);                   \
        } else if (M == 2) {                                                                           \
            if (R == 1) qmvq_kernel<QT, 2, 1><<<(unsigned)g, QMV_BLOCK, smem, c->stream>>>(p);            \
            else qmvq_kernel<QT, 2, 2><<<(unsigned)g, QMV_BLOCK, smem, c->stream>>>(p);                   \
        } else if (M == 4) {                                                                           \
            if (R == 2) qmvq_kernel<QT, 4, 2><<<(unsigned)g, QMV_BLOCK, smem, c->stream>>>(p);            \
            else qmvq_kernel<QT, 4, 4><<<(unsigned)g, QMV_BLOCK, smem, c->stream>>>(p);                   \
        } else {                                                                                       \
            if (R == 1) qmvq_kernel<QT, 8, 1><<<(unsigned)g, QMV_BLOCK, smem, c->stream>>>(p);            \
            else if (R == 2) qmvq_kernel<QT, 8, 2><<<(unsigned)g, QMV_BLOCK, smem, c->stream>>>(p);       \
            else qmvq_kernel<QT, 8, 4><<<(unsigned)g, QMV_BLOCK, smem, c->stream>>>(p);                   \
        }                                                                                              \
    }
    switch (qt) {
    case WK_Q4_0: QMVQ_GO_(WK_Q4_0) break;
    case WK_Q8_0: QMVQ_GO_(WK_Q8_0) break;
    case WK_Q4_K: QMVQ_GO_(WK_Q4_K) break;
    case WK_Q5_K: QMVQ_GO_(WK_Q5_K) break;
    case WK_Q6_K: QMVQ_GO_(WK_Q6_K) break;
    case WK_BF16: QMVQ_GO_(WK_BF16) break;
    default: QMVQ_GO_(WK_F16) break;
    }
#undef QMVQ_GO_
    st = wk_gpu_launched(c, dense ? "matmul (matvec)" : "qmatmul (qmatvec)", __FILE__, __LINE__);
    if (buf) wk_gpu_scratch_free(c, buf);
    return st;
}

/* The dense matvec's kernel for m <= 8 rows (gemv.hip's
 * wk_gpu_dense_matvec): qmvq_kernel on plain f16/bf16 rows (dt), W at w
 * with rows w_rs bytes apart, x (dt) read in place: contiguous along k,
 * rows 8-byte aligned. */
extern "C" wk_status wk_gpu_qmvq_dense(void *ctx, wk_dtype dt, const uint8_t *w, int64_t w_rs, int64_t n, int64_t k,
                                       const wk_view *d, const wk_view *x)
{
    return qmvq_run((wk_gpu_ctx *)ctx, dt, w, w_rs, n, k, d, x);
}

/* m > 8: W dequantized to x's dtype, then matmul (x . W^T) */
static wk_status qmm_dequant(wk_gpu_ctx *c, const wk_view *d, const wk_view *w, const wk_view *x)
{
    const int64_t n = w->dims[0], k = w->dims[1];
    const wk_dtype dt = x->dtype;
    void *buf = NULL;
    wk_status st = wk_gpu_scratch_alloc(c, (size_t)(n * k) * wk_gpu_dtype_size(dt), &buf);
    if (st != WK_OK) return st;
    st = q_dequant(c, w, buf, dt);
    if (st == WK_OK) {
        wk_view wt;
        memset(&wt, 0, sizeof wt);
        wt.base = buf;
        wt.dtype = dt;
        wt.rank = 2;
        wt.dims[0] = k;
        wt.dims[1] = n;
        wt.strides[0] = 1;
        wt.strides[1] = k;
        /* the device's MATMUL op, through the op table (this file calls
         * no other file's kernels but through it) */
        wk_op_args mm;
        memset(&mm, 0, sizeof mm);
        mm.op = WK_OP_MATMUL;
        mm.dst = d;
        mm.src[0] = x;
        mm.src[1] = &wt;
        st = wk_gpu_op_table()[WK_OP_MATMUL].run(c, &mm);
    }
    wk_gpu_scratch_free(c, buf);
    return st;
}

extern "C" wk_status wk_gpu_qmatmul(void *ctx, const wk_op_args *a)
{
    wk_gpu_ctx *c = (wk_gpu_ctx *)ctx;
    const wk_view *d = a->dst, *w = a->src[0], *x = a->src[1];
    if (d->dtype != WK_F32 && d->dtype != WK_F16 && d->dtype != WK_BF16)
        return wk_gpu_host->set_error(WK_ERR_DTYPE, "qmatmul: x must be f32, f16 or bf16");
    WK_GPU_ENTER(c);
    const int64_t m = d->dims[0], n = d->dims[1];
    if (m == 0 || n == 0) return WK_OK;
    const bool deq = wk_gpu_env.qmatmul_dequant;   /* WICK_QMATMUL=dequant */
    if (m <= 8 && !deq) {
        const int64_t B = wk_dt_block(w->dtype), BB = wk_dt_block_bytes(w->dtype);
        const uint8_t *wb = (const uint8_t *)w->base + w->offset / B * BB;
        if (qq_has(w->dtype) && !wk_gpu_env.qmatvec_f32)   /* WICK_QMATVEC=f32: qmv_run for all */
            return qmvq_run(c, w->dtype, wb, w->strides[0] / B * BB, n, w->dims[1], d, x);
        return qmv_run(c, w->dtype, wb, w->strides[0] / B * BB, n, w->dims[1], d, x);
    }
    return qmm_dequant(c, d, w, x);
}
