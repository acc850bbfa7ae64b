/* random_golden.h — expected outputs of wick's random numbers
 * (docs/random.md), computed by tools/gen_random_golden.py, an
 * implementation in pure Python that shares no code with wick and that
 * checks its Philox4x32-10 against Random123's known-answer vectors.
 *
 * Uniform cases: exact bit patterns in the dtype (f32 as uint32 bits,
 * f64 as uint64 bits, f16/bf16 as uint16, f8e4m3 as uint8), to match bit
 * for bit. Normal cases: doubles, to match within |got - want| <=
 * atol + rtol * |want| (platform logf/cosf/sinf and the rounding to the
 * dtype). `blocks` is how far the call advances the generator's offset.
 *
 * Do not edit; regenerate with
 *     python3 tools/gen_random_golden.py > tests/data/random_golden.h
 */
#ifndef WICK_RANDOM_GOLDEN_H
#define WICK_RANDOM_GOLDEN_H

#include <stdint.h>
#include "wick.h"

typedef struct wk_rand_golden {
    const char *name;
    int normal;              /* 0: uniform(lo = p0, hi = p1); 1: normal(mean = p0, std = p1) */
    wk_dtype dtype;
    uint64_t seed, offset;   /* generator state before the call */
    double p0, p1;
    int64_t n;               /* elements */
    uint64_t blocks;         /* offset advance of the call */
    const uint64_t *bits;    /* uniform: n bit patterns; NULL for normal */
    const double *values;    /* normal: n values; NULL for uniform */
    double rtol, atol;       /* normal: tolerance */
} wk_rand_golden;

static const uint64_t wk_rand_golden_uniform_f32_seed0[10] = {
    0x3ecc4fd0u, 0x3f6169c5u, 0x3f3c57acu, 0x3f1b00dbu, 0x3f78e4ccu, 0x3eb96400u, 0x3f31a574u, 0x3d17eff0u,
    0x3c9f5460u, 0x3ea38e64u,
};
static const uint64_t wk_rand_golden_uniform_f32_next[6] = {
    0x3f4990efu, 0x3ed488e8u, 0x3f1ac913u, 0x3eda827cu, 0x3f6f3dc3u, 0x3f3193f1u,
};
static const uint64_t wk_rand_golden_uniform_f32_range[13] = {
    0xbf1f4fccu, 0x3ffecc08u, 0x3fe173f7u, 0x402149dau, 0xbee250edu, 0x40389901u, 0xbf907dd0u, 0x3f60c2e4u,
    0x3f10314au, 0x3fbb8dceu, 0x4012956eu, 0xbf2b90e1u, 0x4011de6du,
};
static const uint64_t wk_rand_golden_uniform_f32_hi_offset[12] = {
    0x3c5cbd00u, 0x3eb22010u, 0x3e317440u, 0xbef91320u, 0xbe0edf70u, 0xbef8ac50u, 0xbf2c4584u, 0x3ebb55b0u,
    0xbef47d20u, 0xbc9028c0u, 0xbf20318eu, 0xbe2a87e8u,
};
static const uint64_t wk_rand_golden_uniform_f32_wrap[8] = {
    0x42c84d19u, 0x42c8430bu, 0x42c8bd30u, 0x42c80afbu, 0x42c872a4u, 0x42c81547u, 0x42c89f42u, 0x42c8227au,
};
static const uint64_t wk_rand_golden_uniform_f64[9] = {
    0x3fd5d786d5dd6380u, 0xbfcef1980869e1b0u, 0x3fe5b2ebad54e408u, 0xbfe0e9f7602b582eu,
    0xbfda6fa516d7b314u, 0xbfed66b2fe3caf94u, 0x3fdf1f21151cdc98u, 0xbfe451d59b61550cu,
    0xbfc787b37aa44280u,
};
static const uint64_t wk_rand_golden_uniform_f64_range[7] = {
    0x406df6eff38ee380u, 0x4071982a3feaefdfu, 0x40861eb35589a393u, 0x404861532c446f7du,
    0x407d91c27e8fefd2u, 0x407a15875c75f335u, 0x408a85b4fe33e264u,
};
static const uint64_t wk_rand_golden_uniform_bf16[17] = {
    0xc03du, 0xc03cu, 0x405eu, 0x4073u, 0x3df9u, 0xbf80u, 0xbfe9u, 0xbff2u,
    0xbf2eu, 0x409du, 0x4025u, 0x3fafu, 0xbe95u, 0xbe9fu, 0x4085u, 0x4030u,
    0x405bu,
};
static const uint64_t wk_rand_golden_uniform_f16[15] = {
    0x4adbu, 0x4c4cu, 0x4c07u, 0x4c88u, 0x4a13u, 0x4acau, 0x4b13u, 0x4b7du,
    0x4adfu, 0x49bcu, 0x4ca9u, 0x49e4u, 0x497au, 0x4a2eu, 0x4cc5u,
};
static const uint64_t wk_rand_golden_uniform_f16_small[9] = {
    0x0505u, 0x0075u, 0x0672u, 0x0654u, 0x0247u, 0x0106u, 0x03c4u, 0x00c8u,
    0x0651u,
};
static const uint64_t wk_rand_golden_uniform_f8e4m3[11] = {
    0x3eu, 0x34u, 0x40u, 0x44u, 0xadu, 0x3au, 0xbfu, 0xa6u,
    0x41u, 0x3eu, 0x3eu,
};
static const double wk_rand_golden_normal_f32[11] = {
    -0.97018974175582895, 0.19401885898614937, -1.2356200979038416, 1.923927027928974,
    -0.07318132384498055, 0.13913722660396063, -1.1066649166538887, 0.32668314564205592,
    -0.33696192508554251, -0.51874852015255679, 0.14856720440192467,
};
static const double wk_rand_golden_normal_f32_scaled[10] = {
    3.4907126573954583, 2.5807747364183329, 3.2307114896883307, 4.2061326079230215,
    2.723154228617358, 2.7219271557334768, 3.6623483289016079, 2.6322047608244454,
    2.5219949187828323, 3.4385712824751349,
};
static const double wk_rand_golden_normal_f64[9] = {
    -1.4467526451065216, 0.68889737509702353, 1.0491397204453872, 0.1415446338146682,
    1.6396247172167886, 2.7054578700356844, 2.4257956849906579, -0.61683034336647413,
    0.86936619289253847,
};
static const double wk_rand_golden_normal_f64_seed0[6] = {
    -0.39766753844418223, -0.31039547880173801, 1.3868444271028377, 0.32921320019214323,
    -0.2057862889642241, 1.4966587865707792,
};
static const double wk_rand_golden_normal_bf16[12] = {
    8.5710499514006084, -0.49118182754106432, 0.13940146673967102, -2.5959091708505535,
    -1.0033218188281168, 3.1157933199299288, 2.7671373636986214, 3.4973135635659514,
    3.7107344778255307, -1.3084586190753384, -3.4413759822783039, -1.7263369398686124,
};
static const double wk_rand_golden_normal_f16[10] = {
    -0.27654452746343544, -1.3802635099349267, 0.37670772650152773, -0.91969380878403506,
    -1.102423704040068, 1.3642102952578219, -1.325924469064059, 0.018541509286963513,
    0.84589603306566463, 1.1185651003342518,
};
static const double wk_rand_golden_normal_f8e4m3[8] = {
    0.94510820750116731, 0.85268897364614482, 0.17546389677892232, -1.8279366705653175,
    -3.0760008875293647, -1.0323174646572213, -2.6954264344169667, -2.1656035552477677,
};

static const wk_rand_golden wk_rand_goldens[] = {
    { "uniform_f32_seed0", 0, WK_F32, 0x0ull, 0x0ull, 0.0, 1.0, 10, 3, wk_rand_golden_uniform_f32_seed0, NULL, 0.0, 0.0 },
    { "uniform_f32_next", 0, WK_F32, 0x0ull, 0x3ull, 0.0, 1.0, 6, 2, wk_rand_golden_uniform_f32_next, NULL, 0.0, 0.0 },
    { "uniform_f32_range", 0, WK_F32, 0x123456789abcdefull, 0x5ull, -2.5, 3.0, 13, 4, wk_rand_golden_uniform_f32_range, NULL, 0.0, 0.0 },
    { "uniform_f32_hi_offset", 0, WK_F32, 0x2aull, 0xfffffffeull, -1.0, 1.0, 12, 3, wk_rand_golden_uniform_f32_hi_offset, NULL, 0.0, 0.0 },
    { "uniform_f32_wrap", 0, WK_F32, 0xffffffffffffffffull, 0xffffffffffffffffull, 100.0, 100.5, 8, 2, wk_rand_golden_uniform_f32_wrap, NULL, 0.0, 0.0 },
    { "uniform_f64", 0, WK_F64, 0x2aull, 0x3ull, -1.0, 1.0, 9, 5, wk_rand_golden_uniform_f64, NULL, 0.0, 0.0 },
    { "uniform_f64_range", 0, WK_F64, 0xdeadbeefcafef00dull, 0x10000000000ull, 0.001, 1000.0, 7, 4, wk_rand_golden_uniform_f64_range, NULL, 0.0, 0.0 },
    { "uniform_bf16", 0, WK_BF16, 0x7ull, 0x2ull, -3.0, 5.0, 17, 5, wk_rand_golden_uniform_bf16, NULL, 0.0, 0.0 },
    { "uniform_f16", 0, WK_F16, 0x7e8ull, 0xbull, 10.0, 20.0, 15, 4, wk_rand_golden_uniform_f16, NULL, 0.0, 0.0 },
    { "uniform_f16_small", 0, WK_F16, 0x5ull, 0x0ull, 0.0, 0.0001, 9, 3, wk_rand_golden_uniform_f16_small, NULL, 0.0, 0.0 },
    { "uniform_f8e4m3", 0, WK_F8E4M3, 0x63ull, 0x1ull, -4.0, 4.0, 11, 3, wk_rand_golden_uniform_f8e4m3, NULL, 0.0, 0.0 },
    { "normal_f32", 1, WK_F32, 0x2aull, 0x0ull, 0.0, 1.0, 11, 3, NULL, wk_rand_golden_normal_f32, 1.19e-07, 2e-06 },
    { "normal_f32_scaled", 1, WK_F32, 0x123456789abcdefull, 0x9ull, 3.0, 0.5, 10, 3, NULL, wk_rand_golden_normal_f32_scaled, 1.19e-07, 1e-06 },
    { "normal_f64", 1, WK_F64, 0x1ull, 0x7ull, 1.0, 2.0, 9, 5, NULL, wk_rand_golden_normal_f64, 1e-13, 2e-13 },
    { "normal_f64_seed0", 1, WK_F64, 0x0ull, 0x0ull, 0.0, 1.0, 6, 3, NULL, wk_rand_golden_normal_f64_seed0, 1e-13, 1e-13 },
    { "normal_bf16", 1, WK_BF16, 0x7ull, 0x2ull, -1.0, 3.0, 12, 3, NULL, wk_rand_golden_normal_bf16, 0.00781, 6e-06 },
    { "normal_f16", 1, WK_F16, 0x7e8ull, 0xbull, 0.0, 1.0, 10, 3, NULL, wk_rand_golden_normal_f16, 0.000977, 2.06e-06 },
    { "normal_f8e4m3", 1, WK_F8E4M3, 0x3ull, 0x0ull, 0.0, 2.0, 8, 2, NULL, wk_rand_golden_normal_f8e4m3, 0.125, 0.00196 },
};
#define WK_RAND_GOLDEN_COUNT ((int)(sizeof wk_rand_goldens / sizeof wk_rand_goldens[0]))

#endif /* WICK_RANDOM_GOLDEN_H */
