/* cpu_qmatmul_half.c — QMATMUL of a dense f16 or bf16 weight on the cpu:
 * y[i, j] = sum_k x[i, k] w[j, k] for x in f32 (other float dtypes are
 * widened to f32 first) and w [n, k] in its file's half precision, each
 * product exact in f32 (an f16 or bf16 value widens exactly) and summed in
 * f32. What it is for: a model stored in f16/bf16 run with f32 activations
 * reads its matrices as they are, half the bytes of widening them to f32
 * at load (decode is bound by those bytes), and prefill runs on the same
 * kernels.
 *
 * One summation order for every (row of x, row of w) pair, whatever m and
 * the tiling: the pair's own accumulator vector takes k in steps of the
 * vector width (the tail masked), then one fixed horizontal sum. A tile of
 * R rows of x by C rows of w holds R C accumulators; the tile shapes (4 x
 * 4 and the edges) only choose which pairs run together. So a token's
 * logits are the same bits alone or in any batch (batch invariance by
 * construction, as the integer path's kernels in cpu_qdot.h).
 *
 * Kernels: AVX-512 (16 lanes; f16 by vcvtph2ps, bf16 by a shift), AVX2 (8
 * lanes, F16C), and plain C (16 lanes, fmaf) where neither is there; the
 * set is picked once by what the cpu has (WICK_CPU_QDOT=avx2 or portable
 * holds it to those, as for the integer kernels: the tests run each).
 * Tasks: blocks of 16 weight rows; within a task, 64 rows of x at a time
 * so that they stay in L2 while the block's weight rows meet each of them.
 * On AVX-512, decode (one row of x) reads the half rows directly, four at
 * a time, the next four prefetched; prefill widens the task's rows to f32
 * once, and its 4 x 4 tiles run their whole steps of 16 unmasked and the
 * tail masked (the same products in the same order). */
#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include "cpu_ew.h"
#include "cpu_internal.h"
#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#include <immintrin.h>
#define HQ_X86 1
#endif

#define HQ_WROWS 16   /* weight rows a task                        */
#define HQ_XROWS 64   /* rows of x a pass over the task's rows     */
#define HQ_R 4        /* rows of x a tile                          */
#define HQ_C 4        /* rows of w a tile                          */

/* tile: rows x[0..r) (stride xs) against w rows w[0..c) (stride ws, in
 * elements), k columns; y[i * ys + j] */
typedef void (*hq_tile_fn)(bool bf16, const float *x, int64_t xs, int r, const uint16_t *w, int64_t ws, int c,
                           int64_t k, float *y, int64_t ys);

/* ---- plain C: 16 lanes a pair, fmaf, the same tree for every pair ---- */

static inline float hq_widen(bool bf16, uint16_t h)
{
    if (bf16) {
        const uint32_t u = (uint32_t)h << 16;
        float f;
        memcpy(&f, &u, 4);
        return f;
    }
    return wk_f16_to_f32(h);
}

static void hq_tile_plain(bool bf16, const float *x, int64_t xs, int r, const uint16_t *w, int64_t ws, int c,
                          int64_t k, float *y, int64_t ys)
{
    for (int i = 0; i < r; i++)
        for (int j = 0; j < c; j++) {
            float acc[16] = { 0 };
            const float *xr = x + i * xs;
            const uint16_t *wr = w + j * ws;
            for (int64_t p = 0; p < k; p += 16) {
                const int n = k - p < 16 ? (int)(k - p) : 16;
                for (int l = 0; l < n; l++) acc[l] = fmaf(xr[p + l], hq_widen(bf16, wr[p + l]), acc[l]);
            }
            for (int s = 8; s >= 1; s /= 2)
                for (int l = 0; l < s; l++) acc[l] += acc[l + s];
            y[i * ys + j] = acc[0];
        }
}

#ifdef HQ_X86
/* ---- AVX2: 8 lanes a pair ---- */

__attribute__((target("avx2,fma,f16c"))) static inline __m256 hq_ld8(bool bf16, const uint16_t *p, int n)
{
    __m128i h;
    if (n >= 8) h = _mm_loadu_si128((const __m128i *)p);
    else {
        uint16_t t[8] = { 0 };
        memcpy(t, p, (size_t)n * 2);
        h = _mm_loadu_si128((const __m128i *)t);
    }
    if (!bf16) return _mm256_cvtph_ps(h);
    return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16));
}

__attribute__((target("avx2,fma,f16c"))) static inline __m256 hq_ldx8(const float *p, int n)
{
    if (n >= 8) return _mm256_loadu_ps(p);
    float t[8] = { 0 };
    memcpy(t, p, (size_t)n * 4);
    return _mm256_loadu_ps(t);
}

__attribute__((target("avx2,fma,f16c"))) static inline float hq_sum8(__m256 v)
{
    const __m128 a = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    const __m128 b = _mm_add_ps(a, _mm_movehl_ps(a, a));
    return _mm_cvtss_f32(_mm_add_ss(b, _mm_movehdup_ps(b)));
}

__attribute__((target("avx2,fma,f16c")))
static void hq_tile_avx2(bool bf16, const float *x, int64_t xs, int r, const uint16_t *w, int64_t ws, int c,
                         int64_t k, float *y, int64_t ys)
{
    __m256 acc[HQ_R][HQ_C];
    for (int i = 0; i < r; i++)
        for (int j = 0; j < c; j++) acc[i][j] = _mm256_setzero_ps();
    for (int64_t p = 0; p < k; p += 8) {
        const int n = k - p < 8 ? (int)(k - p) : 8;
        __m256 wv[HQ_C];
        for (int j = 0; j < c; j++) wv[j] = hq_ld8(bf16, w + j * ws + p, n);
        for (int i = 0; i < r; i++) {
            const __m256 xv = hq_ldx8(x + i * xs + p, n);
            for (int j = 0; j < c; j++) acc[i][j] = _mm256_fmadd_ps(xv, wv[j], acc[i][j]);
        }
    }
    for (int i = 0; i < r; i++)
        for (int j = 0; j < c; j++) y[i * ys + j] = hq_sum8(acc[i][j]);
}

/* ---- AVX-512: 16 lanes a pair ---- */

#define HQ_T512 __attribute__((target("avx512f,avx512bw,avx512vl,avx2,fma,f16c")))

HQ_T512 static inline __m512 hq_ld16(bool bf16, const uint16_t *p, __mmask16 m)
{
    const __m256i h = _mm256_maskz_loadu_epi16(m, p);
    if (!bf16) return _mm512_cvtph_ps(h);
    return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16));
}

/* A pair's 16 lanes to its sum, in one tree written here (not the
 * compiler's reduce, whose order is its own): lanes e + e+8, then e + e+4,
 * e + e+2, e + e+1. hq_sum4x4 makes the same sums for the 16 pairs of a
 * tile at once (the vectors transposed as they are added: a quarter of
 * the shuffles), so a tile's results have the bits of hq_hsum16's. */
HQ_T512 static inline float hq_hsum16(__m512 v)
{
    const __m256 t1 = _mm256_add_ps(_mm512_castps512_ps256(v),
                                    _mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(v), 1)));
    const __m128 t2 = _mm_add_ps(_mm256_castps256_ps128(t1), _mm256_extractf128_ps(t1, 1));
    const __m128 t3 = _mm_add_ps(t2, _mm_permute_ps(t2, _MM_SHUFFLE(1, 0, 3, 2)));
    const __m128 t4 = _mm_add_ps(t3, _mm_permute_ps(t3, _MM_SHUFFLE(2, 3, 0, 1)));
    return _mm_cvtss_f32(t4);
}

/* (a, b): a's lanes e + e+8 in lanes 0..7, b's in 8..15 */
HQ_T512 static inline __m512 hq_fold8(__m512 a, __m512 b)
{
    return _mm512_add_ps(_mm512_shuffle_f32x4(a, b, _MM_SHUFFLE(1, 0, 1, 0)), _mm512_shuffle_f32x4(a, b, _MM_SHUFFLE(3, 2, 3, 2)));
}

/* (x, z) of hq_fold8 (a|b, c|d): each 128-bit lane one pair's e + e+4 */
HQ_T512 static inline __m512 hq_fold4(__m512 x, __m512 z)
{
    return _mm512_add_ps(_mm512_shuffle_f32x4(x, z, _MM_SHUFFLE(2, 0, 2, 0)), _mm512_shuffle_f32x4(x, z, _MM_SHUFFLE(3, 1, 3, 1)));
}

/* a<i><j> (row i of x, row j of w) to y[i * ys + j] */
HQ_T512 static inline void hq_sum4x4(__m512 a00, __m512 a01, __m512 a02, __m512 a03, __m512 a10, __m512 a11,
                                     __m512 a12, __m512 a13, __m512 a20, __m512 a21, __m512 a22, __m512 a23,
                                     __m512 a30, __m512 a31, __m512 a32, __m512 a33, float *y, int64_t ys)
{
    /* r<i>'s lane j: pair (i, j)'s four partial sums */
    const __m512 r0 = hq_fold4(hq_fold8(a00, a01), hq_fold8(a02, a03));
    const __m512 r1 = hq_fold4(hq_fold8(a10, a11), hq_fold8(a12, a13));
    const __m512 r2 = hq_fold4(hq_fold8(a20, a21), hq_fold8(a22, a23));
    const __m512 r3 = hq_fold4(hq_fold8(a30, a31), hq_fold8(a32, a33));
    /* e + e+2, then e + e+1 */
    const __m512 z01 = _mm512_add_ps(_mm512_shuffle_ps(r0, r1, _MM_SHUFFLE(1, 0, 1, 0)),
                                     _mm512_shuffle_ps(r0, r1, _MM_SHUFFLE(3, 2, 3, 2)));
    const __m512 z23 = _mm512_add_ps(_mm512_shuffle_ps(r2, r3, _MM_SHUFFLE(1, 0, 1, 0)),
                                     _mm512_shuffle_ps(r2, r3, _MM_SHUFFLE(3, 2, 3, 2)));
    const __m512 f = _mm512_add_ps(_mm512_shuffle_ps(z01, z23, _MM_SHUFFLE(2, 0, 2, 0)),
                                   _mm512_shuffle_ps(z01, z23, _MM_SHUFFLE(3, 1, 3, 1)));
    float t[16];   /* lane j, element i: pair (i, j) */
    _mm512_storeu_ps(t, f);
    for (int i = 0; i < 4; i++)
        for (int j = 0; j < 4; j++) y[i * ys + j] = t[4 * j + i];
}

/* r and c at their largest, so that the accumulators live in registers;
 * W16(ptr, mask) loads 16 of w's values as f32 (widened as read, or from
 * a row block widened once: the same values, so the same bits) */
#define HQ_TILE512_STEP(W16, XL, m)                                                                              \
    {                                                                                                            \
        const __m512 w0 = W16(w + p, m), w1 = W16(w + ws + p, m);                                                \
        const __m512 w2 = W16(w + 2 * ws + p, m), w3 = W16(w + 3 * ws + p, m);                                   \
        __m512 xv = XL(x + p, m);                                                                                \
        a00 = _mm512_fmadd_ps(xv, w0, a00), a01 = _mm512_fmadd_ps(xv, w1, a01);                                  \
        a02 = _mm512_fmadd_ps(xv, w2, a02), a03 = _mm512_fmadd_ps(xv, w3, a03);                                  \
        xv = XL(x + xs + p, m);                                                                                  \
        a10 = _mm512_fmadd_ps(xv, w0, a10), a11 = _mm512_fmadd_ps(xv, w1, a11);                                  \
        a12 = _mm512_fmadd_ps(xv, w2, a12), a13 = _mm512_fmadd_ps(xv, w3, a13);                                  \
        xv = XL(x + 2 * xs + p, m);                                                                              \
        a20 = _mm512_fmadd_ps(xv, w0, a20), a21 = _mm512_fmadd_ps(xv, w1, a21);                                  \
        a22 = _mm512_fmadd_ps(xv, w2, a22), a23 = _mm512_fmadd_ps(xv, w3, a23);                                  \
        xv = XL(x + 3 * xs + p, m);                                                                              \
        a30 = _mm512_fmadd_ps(xv, w0, a30), a31 = _mm512_fmadd_ps(xv, w1, a31);                                  \
        a32 = _mm512_fmadd_ps(xv, w2, a32), a33 = _mm512_fmadd_ps(xv, w3, a33);                                  \
    }
/* whole steps of 16 unmasked, then the tail masked: the same products in
 * the same order as a masked step each */
#define HQ_TILE512_BODY(WT, W16, W16FULL)                                                                        \
    __m512 a00 = _mm512_setzero_ps(), a01 = a00, a02 = a00, a03 = a00, a10 = a00, a11 = a00, a12 = a00, a13 = a00; \
    __m512 a20 = a00, a21 = a00, a22 = a00, a23 = a00, a30 = a00, a31 = a00, a32 = a00, a33 = a00;                  \
    int64_t p = 0;                                                                                               \
    for (; p + 16 <= k; p += 16) HQ_TILE512_STEP(W16FULL, HQ_XFULL, 0)                                            \
    if (p < k) {                                                                                                 \
        const __mmask16 m = (__mmask16)((1u << (k - p)) - 1);                                                   \
        HQ_TILE512_STEP(W16, HQ_XMASK, m)                                                                        \
    }                                                                                                            \
    hq_sum4x4(a00, a01, a02, a03, a10, a11, a12, a13, a20, a21, a22, a23, a30, a31, a32, a33, y, ys);
#define HQ_XFULL(ptr, m) _mm512_loadu_ps(ptr)
#define HQ_XMASK(ptr, m) _mm512_maskz_loadu_ps((m), (ptr))

#define HQ_W16_HALF(ptr, m) hq_ld16(bf16, (ptr), (m))
#define HQ_W16_F32(ptr, m) _mm512_maskz_loadu_ps((m), (ptr))
#define HQ_W16_HALF_FULL(ptr, m) hq_ld16(bf16, (ptr), (__mmask16)0xFFFF)
#define HQ_W16_F32_FULL(ptr, m) _mm512_loadu_ps(ptr)

HQ_T512 static inline void hq_tile512_full(bool bf16, const float *x, int64_t xs, const uint16_t *w, int64_t ws,
                                           int64_t k, float *y, int64_t ys)
{
    HQ_TILE512_BODY(uint16_t, HQ_W16_HALF, HQ_W16_HALF_FULL)
}

/* the same on w rows widened to f32 beforehand (prefill: a task's rows
 * widened once serve every row of x) */
HQ_T512 static void hq_tile512_wf32(const float *x, int64_t xs, const float *w, int64_t ws, int64_t k, float *y,
                                    int64_t ys)
{
    HQ_TILE512_BODY(float, HQ_W16_F32, HQ_W16_F32_FULL)
}

/* rows [0, nr) of a half w (row stride ws) into f32 rows of k (stride ks) */
HQ_T512 static void hq_widen_rows(bool bf16, const uint16_t *w, int64_t ws, int64_t nr, int64_t k, float *out,
                                  int64_t ks)
{
    for (int64_t r = 0; r < nr; r++)
        for (int64_t p = 0; p < k; p += 16) {
            const __mmask16 m = k - p >= 16 ? (__mmask16)0xFFFF : (__mmask16)((1u << (k - p)) - 1);
            _mm512_mask_storeu_ps(out + r * ks + p, m, hq_ld16(bf16, w + r * ws + p, m));
        }
}

/* one row of x against c <= 4 rows of w (decode), the weight rows of the
 * next tile asked into L2 as this one is read */
HQ_T512 static inline void hq_row512(bool bf16, const float *x, const uint16_t *w, int64_t ws, int c, int64_t k,
                                     float *y, const uint16_t *next)
{
    __m512 a0 = _mm512_setzero_ps(), a1 = a0, a2 = a0, a3 = a0;
    for (int64_t p = 0; p < k; p += 16) {
        const __mmask16 m = k - p >= 16 ? (__mmask16)0xFFFF : (__mmask16)((1u << (k - p)) - 1);
        const __m512 xv = _mm512_maskz_loadu_ps(m, x + p);
        if (next && (p & 31) == 0)
            for (int j = 0; j < HQ_C; j++) _mm_prefetch((const char *)(next + j * ws + p), _MM_HINT_T1);
        a0 = _mm512_fmadd_ps(xv, hq_ld16(bf16, w + p, m), a0);
        if (c > 1) a1 = _mm512_fmadd_ps(xv, hq_ld16(bf16, w + ws + p, m), a1);
        if (c > 2) a2 = _mm512_fmadd_ps(xv, hq_ld16(bf16, w + 2 * ws + p, m), a2);
        if (c > 3) a3 = _mm512_fmadd_ps(xv, hq_ld16(bf16, w + 3 * ws + p, m), a3);
    }
    y[0] = hq_hsum16(a0);
    if (c > 1) y[1] = hq_hsum16(a1);
    if (c > 2) y[2] = hq_hsum16(a2);
    if (c > 3) y[3] = hq_hsum16(a3);
}

HQ_T512 static void hq_tile_avx512(bool bf16, const float *x, int64_t xs, int r, const uint16_t *w, int64_t ws, int c,
                                   int64_t k, float *y, int64_t ys)
{
    if (r == HQ_R && c == HQ_C) {
        hq_tile512_full(bf16, x, xs, w, ws, k, y, ys);
        return;
    }
    for (int i = 0; i < r; i++) hq_row512(bf16, x + i * xs, w, ws, c, k, y + i * ys, NULL);
}
#endif

static struct {
    pthread_once_t once;
    hq_tile_fn tile;
    bool avx512;
} hq = { PTHREAD_ONCE_INIT, hq_tile_plain, false };

static void hq_pick(void)
{
#ifdef HQ_X86
    __builtin_cpu_init();
    unsigned eax, ebx, ecx = 0, edx;
    const bool f16c = __get_cpuid(1, &eax, &ebx, &ecx, &edx) && (ecx & (1u << 29));
    if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") && f16c) hq.tile = hq_tile_avx2;
    if (hq.tile == hq_tile_avx2 && wk_ew_have_avx512()) hq.tile = hq_tile_avx512, hq.avx512 = true;
#endif
}

typedef struct hq_job {
    bool bf16, avx512;
    hq_tile_fn tile;
    const float *x;          /* f32 rows, stride xs */
    int64_t xs, m, n, k;
    const uint16_t *w;       /* row j at w + j * ws */
    int64_t ws;
    const wk_view *d;        /* [m, n] rows from d->offset */
} hq_job;

static void hq_store(const wk_view *d, int64_t i0, int64_t j0, int r, int c, const float *y, int64_t ys, int64_t n)
{
    for (int i = 0; i < r; i++) {
        const int64_t at = d->offset + (i0 + i) * n + j0;
        for (int j = 0; j < c; j++) {
            const float v = y[i * ys + j];
            if (d->dtype == WK_F32) ((float *)d->base)[at + j] = v;
            else if (d->dtype == WK_F16) ((uint16_t *)d->base)[at + j] = wk_f32_to_f16(v);
            else ((uint16_t *)d->base)[at + j] = wk_f32_to_bf16(v);
        }
    }
}

static void hq_range(void *arg, int64_t begin, int64_t end)
{
    hq_job *J = arg;
    float y[HQ_XROWS * HQ_WROWS];
#ifdef HQ_X86
    /* prefill on AVX-512: a task's weight rows widened to f32 once */
    const int64_t kp = (J->k + 15) / 16 * 16;
    float *wf = J->avx512 && J->m >= 2 * HQ_R ? malloc((size_t)(HQ_WROWS * kp) * sizeof(float)) : NULL;
#endif
    for (int64_t t = begin; t < end; t++) {
        const int64_t j0 = t * HQ_WROWS, nj = J->n - j0 < HQ_WROWS ? J->n - j0 : HQ_WROWS;
        const uint16_t *wb = J->w + j0 * J->ws;
#ifdef HQ_X86
        if (wf) hq_widen_rows(J->bf16, wb, J->ws, nj, J->k, wf, kp);
#endif
        for (int64_t i0 = 0; i0 < J->m; i0 += HQ_XROWS) {
            const int64_t ni = J->m - i0 < HQ_XROWS ? J->m - i0 : HQ_XROWS;
            for (int64_t jj = 0; jj < nj; jj += HQ_C) {
                const int c = nj - jj < HQ_C ? (int)(nj - jj) : HQ_C;
#ifdef HQ_X86
                if (J->avx512 && ni == 1) {   /* decode: the next rows asked for meanwhile */
                    const int64_t nx = j0 + jj + HQ_C;
                    hq_row512(J->bf16, J->x + i0 * J->xs, wb + jj * J->ws, J->ws, c, J->k, y + jj,
                              nx + HQ_C <= J->n ? J->w + nx * J->ws : NULL);
                    continue;
                }
#endif
                for (int64_t ii = 0; ii < ni; ii += HQ_R) {
                    const int r = ni - ii < HQ_R ? (int)(ni - ii) : HQ_R;
#ifdef HQ_X86
                    if (wf && r == HQ_R && c == HQ_C) {
                        hq_tile512_wf32(J->x + (i0 + ii) * J->xs, J->xs, wf + jj * kp, kp, J->k,
                                        y + ii * HQ_WROWS + jj, HQ_WROWS);
                        continue;
                    }
#endif
                    J->tile(J->bf16, J->x + (i0 + ii) * J->xs, J->xs, r, wb + jj * J->ws, J->ws, c, J->k,
                            y + ii * HQ_WROWS + jj, HQ_WROWS);
                }
            }
            hq_store(J->d, i0, j0, (int)ni, (int)nj, y, HQ_WROWS, J->n);
        }
    }
#ifdef HQ_X86
    free(wf);
#endif
}

wk_status wk_cpu_qmatmul_half(const wk_op_args *a)
{
    const wk_view *d = a->dst, *w = a->src[0], *x = a->src[1];
    const int64_t m = d->dims[0], n = d->dims[1], k = w->dims[1];
    if (m == 0 || n == 0) return WK_OK;
    if (w->strides[1] != 1 && k > 1)
        return WK_CPU_ERROR(WK_ERR_ARGUMENT, "a dense weight's rows must be contiguous along k");
    pthread_once(&hq.once, hq_pick);
    hq_job J = { .bf16 = w->dtype == WK_BF16, .avx512 = hq.avx512, .tile = hq.tile, .m = m, .n = n, .k = k, .d = d,
                 .w = (const uint16_t *)w->base + w->offset, .ws = w->strides[0] };
    if (wk_cpu_env.qdot == WK_QDOT_PORTABLE) J.tile = hq_tile_plain, J.avx512 = false;
#ifdef HQ_X86
    if (wk_cpu_env.qdot == WK_QDOT_AVX2 && hq.tile != hq_tile_plain) J.tile = hq_tile_avx2, J.avx512 = false;
#endif
    float *xbuf = NULL;
    const wk_status xst = wk_cpu_rows_f32(x, m, k, &J.x, &J.xs, &xbuf);
    if (xst != WK_OK) return xst;
    const int64_t ntasks = (n + HQ_WROWS - 1) / HQ_WROWS;
    wk_parallel_tasks(ntasks, 2.0 * (double)HQ_WROWS * (double)k * (double)m + 2.0 * HQ_WROWS * (double)k, hq_range, &J);
    free(xbuf);
    return WK_OK;
}
