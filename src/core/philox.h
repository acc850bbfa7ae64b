/* philox.h — wick's random-number generator: Philox4x32-10 and the
 * per-element mapping of docs/random.md, shared by the CPU backend (C) and
 * the GPU kernels (HIP/CUDA device code), so that one seed gives the same
 * tensor on every device.
 *
 * Everything here is WK_HD inline and uses no libc beyond the math
 * functions device code also has (logf cosf sinf sqrtf fmaf, log cos sin
 * sqrt fma). The 32x32->64 products are plain 64-bit multiplies, which
 * every target lowers to its mul-hi instruction.
 *
 * Element i of a call with generator state (seed, offset):
 *   not f64, uniform: block offset + i/4, word i%4
 *   not f64, normal:  pair p = i/2 uses block offset + p/2, words 2(p%2), 2(p%2)+1
 *   f64, uniform:     block offset + i/2, words 2(i%2) (low), 2(i%2)+1 (high)
 *   f64, normal:      pair p = i/2 uses block offset + p: words w0,w1 and w2,w3
 * Fillers that walk blocks should use the block functions below, which
 * produce all the values of one block at once.
 */
#ifndef WICK_PHILOX_H
#define WICK_PHILOX_H

#include <stdint.h>
#include <math.h>
#include "scalar.h"

#define WK_PHILOX_M0 0xD2511F53u
#define WK_PHILOX_M1 0xCD9E8D57u
#define WK_PHILOX_W0 0x9E3779B9u
#define WK_PHILOX_W1 0xBB67AE85u

/* Philox4x32-10 of counter c with key (k0, k1); result in out (may be c). */
WK_HD void wk_philox4x32_10(const uint32_t c[4], uint32_t k0, uint32_t k1, uint32_t out[4])
{
    uint32_t c0 = c[0], c1 = c[1], c2 = c[2], c3 = c[3];
    for (int r = 0; r < 10; r++) {
        if (r > 0) { k0 += WK_PHILOX_W0; k1 += WK_PHILOX_W1; }
        uint64_t p0 = (uint64_t)WK_PHILOX_M0 * c0;
        uint64_t p1 = (uint64_t)WK_PHILOX_M1 * c2;
        uint32_t n0 = (uint32_t)(p1 >> 32) ^ c1 ^ k0;
        uint32_t n1 = (uint32_t)p1;
        uint32_t n2 = (uint32_t)(p0 >> 32) ^ c3 ^ k1;
        uint32_t n3 = (uint32_t)p0;
        c0 = n0; c1 = n1; c2 = n2; c3 = n3;
    }
    out[0] = c0; out[1] = c1; out[2] = c2; out[3] = c3;
}

/* The four words of block j for a seed: counter (lo32(j), hi32(j), 0, 0),
 * key (lo32(seed), hi32(seed)). */
WK_HD void wk_philox_block(uint64_t seed, uint64_t j, uint32_t w[4])
{
    uint32_t c[4];
    c[0] = (uint32_t)j; c[1] = (uint32_t)(j >> 32); c[2] = 0; c[3] = 0;
    wk_philox4x32_10(c, (uint32_t)seed, (uint32_t)(seed >> 32), w);
}

/* ---- float mapping -------------------------------------------------- */

/* [0, 1) with 24 bits: (w >> 8) * 2^-24, exact. */
WK_HD float wk_rand_u24(uint32_t w) { return (float)(w >> 8) * 5.9604644775390625e-08f; }
/* (0, 1] with 24 bits: ((w >> 8) + 1) * 2^-24, exact. */
WK_HD float wk_rand_u24_open0(uint32_t w) { return (float)((w >> 8) + 1u) * 5.9604644775390625e-08f; }
/* 53 bits from two words (low, high): x = ((high << 32) | low) >> 11. */
WK_HD uint64_t wk_rand_x53(uint32_t low, uint32_t high) { return (((uint64_t)high << 32) | low) >> 11; }
/* [0, 1) with 53 bits: x * 2^-53, exact. */
WK_HD double wk_rand_u53(uint64_t x) { return (double)x * 1.1102230246251565404236316680908203125e-16; }

/* Parameters of a call, rounded as docs/random.md says: for not-f64
 * dtypes uniform uses (float)lo and (float)(hi - lo) (difference in
 * double), normal uses (float)mean and (float)std. */
typedef struct wk_rand_params_f32 { float a, b; } wk_rand_params_f32;

WK_HD wk_rand_params_f32 wk_rand_uniform_params_f32(double lo, double hi)
{
    wk_rand_params_f32 p;
    p.a = (float)lo;          /* lo           */
    p.b = (float)(hi - lo);   /* span         */
    return p;
}

WK_HD wk_rand_params_f32 wk_rand_normal_params_f32(double mean, double std)
{
    wk_rand_params_f32 p;
    p.a = (float)mean;
    p.b = (float)std;
    return p;
}

/* Uniform value (f32) of one word: fmaf(u, span, lo). */
WK_HD float wk_rand_uniform_word_f32(uint32_t w, wk_rand_params_f32 p)
{
    return fmaf(wk_rand_u24(w), p.b, p.a);
}

/* Box-Muller pair (f32) from words a, b: out0 = r cos t, out1 = r sin t,
 * each scaled as fmaf(., std, mean). */
WK_HD void wk_rand_normal_pair_f32(uint32_t a, uint32_t b, wk_rand_params_f32 p, float out[2])
{
    const float two_pi = 2.0f * 3.14159265358979323846f;
    float u1 = wk_rand_u24_open0(a);
    float u2 = wk_rand_u24(b);
    float r = sqrtf(-2.0f * logf(u1));
    float t = two_pi * u2;
    out[0] = fmaf(r * cosf(t), p.b, p.a);
    out[1] = fmaf(r * sinf(t), p.b, p.a);
}

/* Uniform value (f64) of a word pair: fma(u, hi - lo, lo). */
WK_HD double wk_rand_uniform_pair_f64(uint32_t low, uint32_t high, double lo, double span)
{
    return fma(wk_rand_u53(wk_rand_x53(low, high)), span, lo);
}

/* Box-Muller pair (f64) from one block's four words. */
WK_HD void wk_rand_normal_block_f64(const uint32_t w[4], double mean, double std, double out[2])
{
    const double two_pi = 2.0 * 3.14159265358979323846;
    double u1 = (double)(wk_rand_x53(w[0], w[1]) + 1u) * 1.1102230246251565404236316680908203125e-16;
    double u2 = wk_rand_u53(wk_rand_x53(w[2], w[3]));
    double r = sqrt(-2.0 * log(u1));
    double t = two_pi * u2;
    out[0] = fma(r * cos(t), std, mean);
    out[1] = fma(r * sin(t), std, mean);
}

/* ---- whole blocks ---------------------------------------------------- */

/* The 4 f32 uniforms of block `offset + b` (elements 4b .. 4b+3). */
WK_HD void wk_rand_uniform_block_f32(uint64_t seed, uint64_t offset, uint64_t b, wk_rand_params_f32 p, float out[4])
{
    uint32_t w[4];
    wk_philox_block(seed, offset + b, w);
    for (int k = 0; k < 4; k++) out[k] = wk_rand_uniform_word_f32(w[k], p);
}

/* The 4 f32 normals of block `offset + b` (elements 4b .. 4b+3). */
WK_HD void wk_rand_normal_block_f32(uint64_t seed, uint64_t offset, uint64_t b, wk_rand_params_f32 p, float out[4])
{
    uint32_t w[4];
    wk_philox_block(seed, offset + b, w);
    wk_rand_normal_pair_f32(w[0], w[1], p, out);
    wk_rand_normal_pair_f32(w[2], w[3], p, out + 2);
}

/* The 2 f64 uniforms of block `offset + b` (elements 2b, 2b+1). */
WK_HD void wk_rand_uniform_block_f64(uint64_t seed, uint64_t offset, uint64_t b, double lo, double hi, double out[2])
{
    uint32_t w[4];
    double span = hi - lo;
    wk_philox_block(seed, offset + b, w);
    out[0] = wk_rand_uniform_pair_f64(w[0], w[1], lo, span);
    out[1] = wk_rand_uniform_pair_f64(w[2], w[3], lo, span);
}

/* The 2 f64 normals of block `offset + b` (elements 2b, 2b+1). */
WK_HD void wk_rand_normal_block_f64x2(uint64_t seed, uint64_t offset, uint64_t b, double mean, double std, double out[2])
{
    uint32_t w[4];
    wk_philox_block(seed, offset + b, w);
    wk_rand_normal_block_f64(w, mean, std, out);
}

/* ---- one element ----------------------------------------------------- */

/* Element i of a not-f64 uniform call, in f32 (round to the dtype after). */
WK_HD float wk_rand_uniform_elem_f32(uint64_t seed, uint64_t offset, uint64_t i, wk_rand_params_f32 p)
{
    uint32_t w[4];
    wk_philox_block(seed, offset + i / 4, w);
    return wk_rand_uniform_word_f32(w[i % 4], p);
}

/* Element i of a not-f64 normal call, in f32. */
WK_HD float wk_rand_normal_elem_f32(uint64_t seed, uint64_t offset, uint64_t i, wk_rand_params_f32 p)
{
    uint32_t w[4];
    float v[2];
    uint64_t pr = i / 2;
    wk_philox_block(seed, offset + pr / 2, w);
    int k = (int)(pr % 2) * 2;
    wk_rand_normal_pair_f32(w[k], w[k + 1], p, v);
    return v[i % 2];
}

/* Element i of an f64 uniform call. */
WK_HD double wk_rand_uniform_elem_f64(uint64_t seed, uint64_t offset, uint64_t i, double lo, double hi)
{
    uint32_t w[4];
    wk_philox_block(seed, offset + i / 2, w);
    int k = (int)(i % 2) * 2;
    return wk_rand_uniform_pair_f64(w[k], w[k + 1], lo, hi - lo);
}

/* Element i of an f64 normal call. */
WK_HD double wk_rand_normal_elem_f64(uint64_t seed, uint64_t offset, uint64_t i, double mean, double std)
{
    uint32_t w[4];
    double v[2];
    wk_philox_block(seed, offset + i / 2, w);
    wk_rand_normal_block_f64(w, mean, std, v);
    return v[i % 2];
}

#endif /* WICK_PHILOX_H */
