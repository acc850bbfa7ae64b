/* pool.hip — the POOL and UPSAMPLE families on the GPU: avg_pool2d,
 * max_pool2d (with its u32 indices), upsample_nearest1d/2d and
 * upsample_bilinear2d, for f16, bf16, f32 and f64 on inputs of any
 * strides, with the cpu backend's rules (src/cpu/cpu_pool.c,
 * docs/conv.md), which are PyTorch's. Each thread makes a strip of
 * 16 bytes of consecutive outputs of one row (pl_strip); dst (and the
 * indices) contiguous.
 *
 * Pools read in the compute type (f32 for f16/bf16/f32, f64 for f64) and
 * sum there; max_pool keeps the first maximum and lets a NaN win (the
 * last NaN of a window). Upsampling computes source positions and
 * weights exactly as the cpu does (nearest in f32, bilinear in f32, f64
 * for f64): this file is compiled without a*b+c contraction (gpu.mk), so
 * every index comes out the same on both.
 *
 * The generic kernels (pl_avg, pl_max, pl_nearest, pl_bilinear) take any
 * strides with 64-bit positions. The common shapes on contiguous rows
 * have their own, with the same results: avg_pool2d 3x3 stride 1 or 2
 * and 2x2 stride 2 (pl_avg_k, and pl_avg_k2 with two output rows a
 * thread where windows overlap), and nearest upsampling that doubles the
 * rows (pl_nearest_x2). WICK_POOL_GENERIC=1 keeps the generic ones.
 * Measurements and what limits each: bench/RESULTS-conv-sort.md.
 */
#include "gpu_internal.h"
#include <math.h>
#include <stdlib.h>

#define PL_THREADS 256

struct pl_args {
    int64_t C, H, W, Ho, Wo;
    int64_t xo, sn, sc, sh, sw;        /* input offset and strides (sh 0 for 1-d) */
    int64_t kh, kw, s0, s1, p0, p1;    /* pools                                   */
    int cip;                           /* avg: padded cells count in the divisor  */
    int64_t Ws;                        /* strips per output row (set at launch)   */
    int small;                         /* under 2^32 strips: fast dividers        */
    int vec;                           /* dst rows are whole aligned vectors      */
    int vin;                           /* x rows are whole aligned vectors (some kernels) */
    wk_divmod32 dHp;                   /* output row pairs (pl_avg_k2)            */
    wk_divmod32 dWs, dHo, dC;
};

/* Each thread makes a strip of V consecutive outputs of one output row
 * (V = 16 bytes of T), so that the row's sample, channel, input row and
 * window rows are worked out once per V outputs and the strip is stored
 * as one 16-byte vector when the rows allow (A.vec). Strip s is
 * (n, c, oh, ow0): multiply-high division below 2^32 strips (A.small),
 * 64-bit division beyond. */
WK_DEV void pl_strip(const pl_args &A, int64_t s, int V, int64_t *n, int64_t *c, int64_t *oh, int64_t *ow0)
{
    if (A.small) {
        uint32_t r = (uint32_t)s, q = wk_divmod32_div(A.dWs, r);
        *ow0 = (int64_t)(r - q * A.dWs.d) * V;
        r = q;
        q = wk_divmod32_div(A.dHo, r);
        *oh = r - q * A.dHo.d;
        r = q;
        q = wk_divmod32_div(A.dC, r);
        *c = r - q * A.dC.d;
        *n = q;
        return;
    }
    const int64_t t = s / A.Ws, pl = t / A.Ho;
    *ow0 = (s - t * A.Ws) * V;
    *oh = t - pl * A.Ho;
    *n = pl / A.C;
    *c = pl - *n * A.C;
}

/* store the strip o[0..V) at row[ow0..]: one vector, or the outputs
 * inside the row one by one */
template <typename T, int V> WK_DEV void pl_put(T *row, int64_t ow0, int64_t Wo, bool vec, const T (&o)[V])
{
    if (vec) {
        wk_vec<T, V> u;
#pragma unroll
        for (int j = 0; j < V; j++) u.v[j] = o[j];
        *(wk_vec<T, V> *)(row + ow0) = u;
        return;
    }
#pragma unroll
    for (int j = 0; j < V; j++)
        if (ow0 + j < Wo) row[ow0 + j] = o[j];
}

#define PL_STRIPS(s, total) for (int64_t s = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; s < (total); s += (int64_t)gridDim.x * blockDim.x)

template <typename T>
__global__ WK_LAUNCH_BOUNDS(PL_THREADS) void pl_avg(const T *__restrict__ x, T *__restrict__ y, pl_args A, int64_t total)
{
    typedef typename wk_type<T>::C C;
    constexpr int V = 16 / sizeof(T);
    PL_STRIPS(s, total) {
        int64_t n, c, oh, ow0;
        pl_strip(A, s, V, &n, &c, &oh, &ow0);
        const T *xp = x + A.xo + n * A.sn + c * A.sc;
        const int64_t hs = oh * A.s0 - A.p0, he = hs + A.kh;
        const int64_t phe = he < A.H + A.p0 ? he : A.H + A.p0;
        const int64_t h0 = hs < 0 ? 0 : hs, h1 = he < A.H ? he : A.H;
        T o[V];
#pragma unroll
        for (int j = 0; j < V; j++) {
            const int64_t ow = ow0 + j < A.Wo ? ow0 + j : A.Wo - 1;
            const int64_t ws = ow * A.s1 - A.p1, we = ws + A.kw;
            const int64_t pwe = we < A.W + A.p1 ? we : A.W + A.p1;
            const int64_t w0 = ws < 0 ? 0 : ws, w1 = we < A.W ? we : A.W;
            C sum = 0;
            for (int64_t h = h0; h < h1; h++) {
                const T *xr = xp + h * A.sh;
                for (int64_t w = w0; w < w1; w++) sum += (C)wk_load_c(xr[w * A.sw]);
            }
            const int64_t div = A.cip ? (phe - hs) * (pwe - ws) : (h1 - h0) * (w1 - w0);
            o[j] = wk_to<T>(div > 0 ? sum / (C)div : (C)NAN);
        }
        pl_put<T, V>(y + ((n * A.C + c) * A.Ho + oh) * A.Wo, ow0, A.Wo, A.vec != 0, o);
    }
}

/* one window row of a strip, SPAN inputs from column iw0 = ow0 * S - P
 * into xv (0 outside the row); as 16-byte vectors when A.vin (chunks
 * from column iw0 - OFF, whole vectors inside or outside the row) */
template <typename T, int V, int SPAN, int P>
WK_DEV void pl_row_span(const pl_args &A, const T *xr, int iw0, int W, typename wk_type<T>::C (&xv)[SPAN])
{
    typedef typename wk_type<T>::C C;
    constexpr int OFF = P ? V - P : 0, NC = (OFF + SPAN + V - 1) / V;
    if (A.vin) {
        wk_vec<T, V> ch[NC];
        const int c0 = iw0 - OFF;
#pragma unroll
        for (int q = 0; q < NC; q++) {
            const int cs = c0 + q * V;
            if (cs >= 0 && cs + V <= W) ch[q] = *(const wk_vec<T, V> *)(xr + cs);
            else
#pragma unroll
                for (int e = 0; e < V; e++) ch[q].v[e] = wk_to<T>(0.0f);
        }
#pragma unroll
        for (int t = 0; t < SPAN; t++) xv[t] = (C)wk_load_c(ch[(OFF + t) / V].v[(OFF + t) % V]);
    } else {
#pragma unroll
        for (int t = 0; t < SPAN; t++) {
            const int w = iw0 + t;
            xv[t] = w >= 0 && w < W ? (C)wk_load_c(xr[w]) : (C)0;
        }
    }
}

/* the V outputs of a strip from their window sums (PyTorch's divisor) */
template <typename T, int V, int K, int S, int P>
WK_DEV void pl_avg_out(const pl_args &A, int hs, int ow0, int H, int W, int Wo, const typename wk_type<T>::C (&sum)[V],
                       T (&o)[V])
{
    typedef typename wk_type<T>::C C;
    const int p0 = (int)A.p0, he = hs + K;
    const int phe = he < H + p0 ? he : H + p0, h0 = hs < 0 ? 0 : hs, h1 = he < H ? he : H;
#pragma unroll
    for (int j = 0; j < V; j++) {
        const int ow = ow0 + j < Wo ? ow0 + j : Wo - 1;
        const int ws = ow * S - P, we = ws + K;
        const int pwe = we < W + P ? we : W + P, w0 = ws < 0 ? 0 : ws, w1 = we < W ? we : W;
        const int div = A.cip ? (phe - hs) * (pwe - ws) : (h1 - h0) * (w1 - w0);
        o[j] = wk_to<T>(div > 0 ? sum[j] / (C)div : (C)NAN);
    }
}

/* avg_pool2d of a K x K window, stride S in both dims, column padding P
 * (0 or 1: PyTorch allows at most K / 2), rows of contiguous elements
 * (sw 1), sizes under 2^30 and 2^32 strips (A.small): pl_avg with the
 * window unrolled, 32-bit positions (the generic kernel spends most of its
 * issue slots on 64-bit index arithmetic: bench/RESULTS-conv-sort.md), and
 * each window row of the strip read once into registers (the V windows of
 * a strip overlap): as 16-byte vectors when every row starts on one and W
 * is a multiple of V (A.vin), else element by element. Padding cells are
 * read as 0, and x + 0 is x, so the sum is the generic kernel's to the bit
 * (same order: rows, then columns). */
template <typename T, int K, int S, int P>
__global__ WK_LAUNCH_BOUNDS(PL_THREADS) void pl_avg_k(const T *__restrict__ x, T *__restrict__ y, pl_args A,
                                                       int64_t total)
{
    typedef typename wk_type<T>::C C;
    constexpr int V = 16 / sizeof(T), SPAN = (V - 1) * S + K;
    const int H = (int)A.H, W = (int)A.W, Wo = (int)A.Wo, p0 = (int)A.p0;
    PL_STRIPS(s, total) {
        int64_t n, c, oh, ow0;
        pl_strip(A, s, V, &n, &c, &oh, &ow0);
        const T *xp = x + A.xo + n * A.sn + c * A.sc;
        const int hs = (int)oh * S - p0, iw0 = (int)ow0 * S - P;
        C sum[V];
#pragma unroll
        for (int j = 0; j < V; j++) sum[j] = 0;
#pragma unroll
        for (int dh = 0; dh < K; dh++) {
            const int h = hs + dh;
            if (h < 0 || h >= H) continue;
            C xv[SPAN];
            pl_row_span<T, V, SPAN, P>(A, xp + (int64_t)h * A.sh, iw0, W, xv);
#pragma unroll
            for (int j = 0; j < V; j++)
#pragma unroll
                for (int dw = 0; dw < K; dw++) sum[j] += xv[j * S + dw];
        }
        T o[V];
        pl_avg_out<T, V, K, S, P>(A, hs, (int)ow0, H, W, Wo, sum, o);
        pl_put<T, V>(y + ((n * A.C + c) * A.Ho + oh) * A.Wo, ow0, A.Wo, A.vec != 0, o);
    }
}

/* pl_avg_k for two output rows a thread (oh = 2 r and 2 r + 1; strips
 * over row pairs, A.dHp): the S + K input rows of both windows read once,
 * the rows they share added to both sums (each sum still in row order,
 * so the result is pl_avg_k's) */
template <typename T, int K, int S, int P>
__global__ WK_LAUNCH_BOUNDS(PL_THREADS) void pl_avg_k2(const T *__restrict__ x, T *__restrict__ y, pl_args A,
                                                        int64_t total)
{
    typedef typename wk_type<T>::C C;
    constexpr int V = 16 / sizeof(T), SPAN = (V - 1) * S + K;
    const int H = (int)A.H, W = (int)A.W, Wo = (int)A.Wo, Ho = (int)A.Ho, p0 = (int)A.p0;
    PL_STRIPS(s, total) {
        /* s = ((n * C + c) * Hp + r) * Ws + strip (A.small: 32-bit) */
        uint32_t q = wk_divmod32_div(A.dWs, (uint32_t)s);
        const int ow0 = (int)((uint32_t)s - q * A.dWs.d) * V;
        uint32_t q2 = wk_divmod32_div(A.dHp, q);
        const int oh = (int)(q - q2 * A.dHp.d) * 2;
        const uint32_t nc = q2;   /* n * C + c */
        const uint32_t n = wk_divmod32_div(A.dC, nc), c = nc - n * A.dC.d;
        const T *xp = x + A.xo + (int64_t)n * A.sn + (int64_t)c * A.sc;
        const int hs = oh * S - p0, iw0 = ow0 * S - P;
        C sum0[V], sum1[V];
#pragma unroll
        for (int j = 0; j < V; j++) sum0[j] = sum1[j] = 0;
#pragma unroll
        for (int r = 0; r < S + K; r++) {
            const int h = hs + r;
            if (h < 0 || h >= H) continue;
            C xv[SPAN];
            pl_row_span<T, V, SPAN, P>(A, xp + (int64_t)h * A.sh, iw0, W, xv);
            if (r < K)
#pragma unroll
                for (int j = 0; j < V; j++)
#pragma unroll
                    for (int dw = 0; dw < K; dw++) sum0[j] += xv[j * S + dw];
            if (r >= S)
#pragma unroll
                for (int j = 0; j < V; j++)
#pragma unroll
                    for (int dw = 0; dw < K; dw++) sum1[j] += xv[j * S + dw];
        }
        T o[V];
        T *yr = y + ((int64_t)nc * Ho + oh) * Wo;
        pl_avg_out<T, V, K, S, P>(A, hs, ow0, H, W, Wo, sum0, o);
        pl_put<T, V>(yr, ow0, Wo, A.vec != 0, o);
        if (oh + 1 < Ho) {
            pl_avg_out<T, V, K, S, P>(A, hs + S, ow0, H, W, Wo, sum1, o);
            pl_put<T, V>(yr + Wo, ow0, Wo, A.vec != 0, o);
        }
    }
}

template <typename T>
__global__ WK_LAUNCH_BOUNDS(PL_THREADS) void pl_max(const T *__restrict__ x, T *__restrict__ y,
                                                     uint32_t *__restrict__ idx, pl_args A, int64_t total)
{
    typedef typename wk_type<T>::C C;
    constexpr int V = 16 / sizeof(T);
    PL_STRIPS(s, total) {
        int64_t n, c, oh, ow0;
        pl_strip(A, s, V, &n, &c, &oh, &ow0);
        const T *xp = x + A.xo + n * A.sn + c * A.sc;
        const int64_t hs = oh * A.s0 - A.p0, he = hs + A.kh;
        const int64_t h0 = hs < 0 ? 0 : hs, h1 = he < A.H ? he : A.H;
        const int64_t orow = ((n * A.C + c) * A.Ho + oh) * A.Wo;
        T o[V];
#pragma unroll
        for (int j = 0; j < V; j++) {
            const int64_t ow = ow0 + j < A.Wo ? ow0 + j : A.Wo - 1;
            const int64_t ws = ow * A.s1 - A.p1, we = ws + A.kw;
            const int64_t w0 = ws < 0 ? 0 : ws, w1 = we < A.W ? we : A.W;
            C m = (C)-INFINITY;
            int64_t mi = h0 * A.W + w0;
            for (int64_t h = h0; h < h1; h++) {
                const T *xr = xp + h * A.sh;
                for (int64_t w = w0; w < w1; w++) {
                    const C v = (C)wk_load_c(xr[w * A.sw]);
                    if (v > m || isnan(v)) {
                        m = v;
                        mi = h * A.W + w;
                    }
                }
            }
            o[j] = wk_to<T>(m);
            if (idx && ow0 + j < A.Wo) idx[orow + ow0 + j] = (uint32_t)mi;
        }
        pl_put<T, V>(y + orow, ow0, A.Wo, A.vec != 0, o);
    }
}

/* PyTorch's nearest source index (scale in f32) */
WK_DEV int64_t pl_nearest_src(float scale, int64_t o, int64_t in, int64_t out)
{
    if (out == in) return o;
    if (out == 2 * in) return o >> 1;
    const int64_t i = (int64_t)floorf((float)o * scale);
    return i < in - 1 ? i : in - 1;
}

template <typename T>
__global__ WK_LAUNCH_BOUNDS(PL_THREADS) void pl_nearest(const T *__restrict__ x, T *__restrict__ y, pl_args A,
                                                         float sh, float sw, int one, int64_t total)
{
    constexpr int V = 16 / sizeof(T);
    PL_STRIPS(s, total) {
        int64_t n, c, oh, ow0;
        pl_strip(A, s, V, &n, &c, &oh, &ow0);
        const int64_t ih = one ? 0 : pl_nearest_src(sh, oh, A.H, A.Ho);
        const T *xr = x + A.xo + n * A.sn + c * A.sc + ih * A.sh;
        T o[V];
#pragma unroll
        for (int j = 0; j < V; j++) {
            const int64_t ow = ow0 + j < A.Wo ? ow0 + j : A.Wo - 1;
            o[j] = xr[pl_nearest_src(sw, ow, A.W, A.Wo) * A.sw];
        }
        pl_put<T, V>(y + ((n * A.C + c) * A.Ho + oh) * A.Wo, ow0, A.Wo, A.vec != 0, o);
    }
}

/* upsample_nearest by exactly 2 along the rows (Wo = 2 W; the row
 * index as pl_nearest_src gives it) on contiguous rows, sizes under 2^30
 * and 2^32 strips: each strip of V outputs copies V / 2 consecutive
 * inputs twice (read as one 8-byte vector when every row starts on one
 * and W is a multiple of V / 2: A.vin), with 32-bit positions (the
 * generic kernel's per-output source index and 64-bit arithmetic bound
 * it on issue) */
template <typename T>
__global__ WK_LAUNCH_BOUNDS(PL_THREADS) void pl_nearest_x2(const T *__restrict__ x, T *__restrict__ y, pl_args A,
                                                            float sh, int one, int64_t total)
{
    constexpr int V = 16 / sizeof(T);
    const int W = (int)A.W;
    PL_STRIPS(s, total) {
        int64_t n, c, oh, ow0;
        pl_strip(A, s, V, &n, &c, &oh, &ow0);
        const int64_t ih = one ? 0 : pl_nearest_src(sh, oh, A.H, A.Ho);
        const T *xr = x + A.xo + n * A.sn + c * A.sc + ih * A.sh;
        const int iw0 = (int)ow0 >> 1;
        T o[V];
        if (A.vin) {   /* V / 2 inputs as one vector (iw0 + V / 2 <= W) */
            const wk_vec<T, V / 2> u = *(const wk_vec<T, V / 2> *)(xr + iw0);
#pragma unroll
            for (int j = 0; j < V / 2; j++) o[2 * j] = o[2 * j + 1] = u.v[j];
        } else {
#pragma unroll
            for (int j = 0; j < V / 2; j++) {
                const T v = xr[iw0 + j < W ? iw0 + j : W - 1];
                o[2 * j] = v;
                o[2 * j + 1] = v;
            }
        }
        pl_put<T, V>(y + ((n * A.C + c) * A.Ho + oh) * A.Wo, ow0, A.Wo, A.vec != 0, o);
    }
}

/* source index, its neighbour and the neighbour's weight (PyTorch's
 * area_pixel_compute_source_index), in C */
template <typename C>
WK_DEV void pl_bilin_src(C scale, bool align, int64_t o, int64_t in, int64_t *i0, int64_t *i1, C *l1)
{
    C r;
    if (align) r = scale * (C)o;
    else {
        r = scale * ((C)o + (C)0.5) - (C)0.5;
        if (r < 0) r = 0;
    }
    int64_t i = (int64_t)r;
    if (i > in - 1) i = in - 1;
    *i0 = i;
    *i1 = i + (i < in - 1 ? 1 : 0);
    *l1 = r - (C)i;
}

template <typename T>
__global__ WK_LAUNCH_BOUNDS(PL_THREADS) void pl_bilinear(const T *__restrict__ x, T *__restrict__ y, pl_args A,
                                                          typename wk_type<T>::C sh, typename wk_type<T>::C sw,
                                                          int align, int64_t total)
{
    typedef typename wk_type<T>::C C;
    constexpr int V = 16 / sizeof(T);
    PL_STRIPS(s, total) {
        int64_t n, c, oh, ow0;
        pl_strip(A, s, V, &n, &c, &oh, &ow0);
        int64_t h0, h1;
        C l1;
        pl_bilin_src<C>(sh, align != 0, oh, A.H, &h0, &h1, &l1);
        const C l0 = 1 - l1;
        const T *xp = x + A.xo + n * A.sn + c * A.sc;
        const T *r0 = xp + h0 * A.sh, *r1 = xp + h1 * A.sh;
        T o[V];
#pragma unroll
        for (int j = 0; j < V; j++) {
            const int64_t ow = ow0 + j < A.Wo ? ow0 + j : A.Wo - 1;
            int64_t w0, w1;
            C m1;
            pl_bilin_src<C>(sw, align != 0, ow, A.W, &w0, &w1, &m1);
            const C m0 = 1 - m1;
            const C v00 = (C)wk_load_c(r0[w0 * A.sw]), v01 = (C)wk_load_c(r0[w1 * A.sw]);
            const C v10 = (C)wk_load_c(r1[w0 * A.sw]), v11 = (C)wk_load_c(r1[w1 * A.sw]);
            o[j] = wk_to<T>(l0 * (m0 * v00 + m1 * v01) + l1 * (m0 * v10 + m1 * v11));
        }
        pl_put<T, V>(y + ((n * A.C + c) * A.Ho + oh) * A.Wo, ow0, A.Wo, A.vec != 0, o);
    }
}

/* pl_avg_k for window kind kern (1: 3x3 stride 2, 2: 2x2 stride 2, 3: 3x3
 * stride 1) and column padding p (0 or 1); f16, bf16 and f32 only (kern
 * is 0 for f64) */
#define PL_AVGK_(K_, S_)                                                                                     \
    do {                                                                                                     \
        if (rows2 && p) pl_avg_k2<T, K_, S_, 1><<<grid, PL_THREADS, 0, c->stream>>>(x, y, A, total);         \
        else if (rows2) pl_avg_k2<T, K_, S_, 0><<<grid, PL_THREADS, 0, c->stream>>>(x, y, A, total);         \
        else if (p) pl_avg_k<T, K_, S_, 1><<<grid, PL_THREADS, 0, c->stream>>>(x, y, A, total);              \
        else pl_avg_k<T, K_, S_, 0><<<grid, PL_THREADS, 0, c->stream>>>(x, y, A, total);                     \
    } while (0)
template <typename T>
static void pl_avg_k_go(wk_gpu_ctx *c, int kern, int p, bool rows2, unsigned grid, const T *x, T *y,
                        const pl_args &A, int64_t total)
{
    if constexpr (sizeof(T) <= 4) {
        if (kern == 1) PL_AVGK_(3, 2);
        else if (kern == 2) PL_AVGK_(2, 2);
        else PL_AVGK_(3, 1);
    }
}
#undef PL_AVGK_

/* every row of x starts on a whole vector of g elements, and W is a
 * multiple of g (rows of x read as vectors) */
static bool pl_rows_aligned(const wk_view *x, int nsp, int64_t g)
{
    const int64_t W = x->dims[nsp + 1], esz = (int64_t)wk_gpu_dtype_size(x->dtype);
    if (x->strides[nsp + 1] != 1 || W % g || x->offset % g || !wk_gpu_aligned(x->base, (size_t)(g * esz)))
        return false;
    for (int i = 0; i <= nsp; i++)
        if (x->dims[i] > 1 && x->strides[i] % g) return false;
    return true;
}

static pl_args pl_args_of(const wk_op_args *a, int nsp)
{
    const wk_view *x = a->src[0], *d = a->dst;
    pl_args A;
    memset(&A, 0, sizeof A);
    A.C = x->dims[1];
    A.H = nsp == 2 ? x->dims[2] : 1;
    A.W = x->dims[nsp + 1];
    A.Ho = nsp == 2 ? d->dims[2] : 1;
    A.Wo = d->dims[nsp + 1];
    A.xo = x->offset;
    A.sn = x->strides[0];
    A.sc = x->strides[1];
    A.sh = nsp == 2 ? x->strides[2] : 0;
    A.sw = x->strides[nsp + 1];
    /* strips of V = 16 / element size outputs */
    const int V = 16 / (int)wk_gpu_dtype_size(d->dtype);
    A.Ws = (A.Wo + V - 1) / V;
    const int64_t strips = A.Ws * A.Ho * x->dims[0] * A.C;
    A.small = strips <= (int64_t)UINT32_MAX;
    if (A.small) {
        A.dWs = wk_divmod32_make((uint32_t)A.Ws);
        A.dHo = wk_divmod32_make((uint32_t)A.Ho);
        A.dC = wk_divmod32_make((uint32_t)A.C);
    }
    A.vec = A.Wo % V == 0 && wk_gpu_aligned(wk_gpu_view_ptr(d), 16);
    return A;
}

static bool pl_dtype_ok(wk_dtype dt) { return dt == WK_F16 || dt == WK_BF16 || dt == WK_F32 || dt == WK_F64; }

#define PL_DISPATCH(dt, T, ...)                                              \
    switch (dt) {                                                            \
    WK_GPU_CASE_(WK_BF16, wk_bf16_t, T, __VA_ARGS__)                         \
    WK_GPU_CASE_(WK_F16, wk_f16_t, T, __VA_ARGS__)                           \
    WK_GPU_CASE_(WK_F32, float, T, __VA_ARGS__)                              \
    WK_GPU_CASE_(WK_F64, double, T, __VA_ARGS__)                             \
    default: break;                                                          \
    }

wk_status wk_gpu_pool2d(void *ctx, const wk_op_args *a)
{
    wk_gpu_ctx *c = (wk_gpu_ctx *)ctx;
    const wk_pool_params *P = (const wk_pool_params *)a->params;
    const wk_view *x = a->src[0], *d = a->dst, *iv = a->src[1];
    if (!P || !x || x->rank != 4 || d->rank != 4)
        return wk_gpu_host->set_error(WK_ERR_ARGUMENT, "%s: bad arguments", wk_gpu_op_name(a->op));
    if (!pl_dtype_ok(d->dtype))
        return wk_gpu_host->set_error(WK_ERR_DTYPE, "%s: dtype %s is not one of f16, bf16, f32, f64",
                                      wk_gpu_op_name(a->op), wk_gpu_dtype_name(d->dtype));
    pl_args A = pl_args_of(a, 2);
    A.kh = P->kernel[0], A.kw = P->kernel[1];
    A.s0 = P->stride[0], A.s1 = P->stride[1];
    A.p0 = P->padding[0], A.p1 = P->padding[1];
    A.cip = P->count_include_pad;
    if (wk_gpu_numel(d) == 0) return WK_OK;
    WK_GPU_ENTER(c);
    const int64_t total = A.Ws * A.Ho * x->dims[0] * A.C;   /* strips */
    const unsigned grid = wk_gpu_grid(c, total, PL_THREADS, 4);
    const bool mx = a->op == WK_OP_MAX_POOL2D;
    uint32_t *ip = mx && iv ? (uint32_t *)iv->base + iv->offset : NULL;
    /* avg_pool's unrolled kernels (pl_avg_k): 3x3 stride 2, 2x2 stride 2,
     * 3x3 stride 1; f16, bf16, f32; contiguous rows; sizes under 2^30
     * (WICK_POOL_GENERIC=1 keeps the generic kernel, for comparison) */
    int kern = 0;
    const int64_t big = (int64_t)1 << 30;
    if (!mx && d->dtype != WK_F64 && A.sw == 1 && A.small && A.kh == A.kw && A.s0 == A.s1 && A.H < big &&
        A.W < big && A.p0 < big && A.p1 < big && A.Wo < big && A.Ho < big && !wk_gpu_env.pool_generic)
        kern = A.kh == 3 && A.s0 == 2 ? 1 : A.kh == 2 && A.s0 == 2 ? 2 : A.kh == 3 && A.s0 == 1 ? 3 : 0;
    if (A.p1 > 1 || A.H < 1 || A.W < 1) kern = 0;
    A.vin = kern && pl_rows_aligned(x, 2, 16 / (int64_t)wk_gpu_dtype_size(d->dtype));
    /* two output rows a thread where the windows of neighbouring rows
     * overlap (3x3 stride 1 or 2): H200, 3x3/2 bf16 row, 0.094-0.095 ms
     * against 0.096 for one row a thread, 14% fewer instructions */
    const bool rows2 = kern && kern != 2;
    int64_t total2 = total;
    unsigned grid2 = grid;
    if (rows2) {
        const int64_t Hp = (A.Ho + 1) / 2;
        A.dHp = wk_divmod32_make((uint32_t)Hp);
        total2 = A.Ws * Hp * x->dims[0] * A.C;
        grid2 = wk_gpu_grid(c, total2, PL_THREADS, 4);
    }
    PL_DISPATCH(d->dtype, T, {
        const T *px = (const T *)x->base;
        T *py = (T *)d->base + d->offset;
        if (mx) pl_max<T><<<grid, PL_THREADS, 0, c->stream>>>(px, py, ip, A, total);
        else if (kern) pl_avg_k_go<T>(c, kern, (int)A.p1, rows2, grid2, px, py, A, total2);
        else pl_avg<T><<<grid, PL_THREADS, 0, c->stream>>>(px, py, A, total);
    });
    WK_GPU_LAUNCH_CHECK(c, wk_gpu_op_name(a->op));
    return WK_OK;
}

/* the scales as the cpu computes them (cpu_pool.c) */
static float pl_nearest_scale(double user, int64_t in, int64_t out)
{
    return user > 0 ? (float)(1.0 / user) : (float)in / (float)out;
}
static double pl_bilin_scale(double user, bool align, int64_t in, int64_t out, bool f64)
{
    if (align)
        return out > 1 ? (f64 ? (double)(in - 1) / (double)(out - 1) : (double)((float)(in - 1) / (float)(out - 1))) : 0;
    if (user > 0) return f64 ? 1.0 / user : (double)(float)(1.0 / user);
    return f64 ? (double)in / (double)out : (double)((float)in / (float)out);
}

wk_status wk_gpu_upsample(void *ctx, const wk_op_args *a)
{
    wk_gpu_ctx *c = (wk_gpu_ctx *)ctx;
    const wk_view *x = a->src[0], *d = a->dst;
    const int nsp = a->op == WK_OP_UPSAMPLE_NEAREST1D ? 1 : 2;
    if (!x || x->rank != nsp + 2 || d->rank != nsp + 2)
        return wk_gpu_host->set_error(WK_ERR_ARGUMENT, "%s: bad arguments", wk_gpu_op_name(a->op));
    if (!pl_dtype_ok(d->dtype))
        return wk_gpu_host->set_error(WK_ERR_DTYPE, "%s: dtype %s is not one of f16, bf16, f32, f64",
                                      wk_gpu_op_name(a->op), wk_gpu_dtype_name(d->dtype));
    pl_args A = pl_args_of(a, nsp);
    if (wk_gpu_numel(d) == 0) return WK_OK;
    WK_GPU_ENTER(c);
    const int64_t total = A.Ws * A.Ho * x->dims[0] * A.C;   /* strips */
    const unsigned grid = wk_gpu_grid(c, total, PL_THREADS, 4);
    const bool align = a->p[2] != 0, f64 = d->dtype == WK_F64;
    /* nearest, rows doubled exactly, contiguous: pl_nearest_x2
     * (WICK_POOL_GENERIC=1 keeps the generic kernel) */
    const bool x2 = a->op != WK_OP_UPSAMPLE_BILINEAR2D && A.Wo == 2 * A.W && A.sw == 1 && A.small &&
                    A.W < ((int64_t)1 << 29) && !wk_gpu_env.pool_generic;
    A.vin = x2 && pl_rows_aligned(x, nsp, 8 / (int64_t)wk_gpu_dtype_size(d->dtype));
    PL_DISPATCH(d->dtype, T, {
        typedef typename wk_type<T>::C C;
        const T *px = (const T *)x->base;
        T *py = (T *)d->base + d->offset;
        if (a->op == WK_OP_UPSAMPLE_BILINEAR2D) {
            const C sh = (C)pl_bilin_scale(a->p[0], align, A.H, A.Ho, f64);
            const C sw = (C)pl_bilin_scale(a->p[1], align, A.W, A.Wo, f64);
            pl_bilinear<T><<<grid, PL_THREADS, 0, c->stream>>>(px, py, A, sh, sw, align ? 1 : 0, total);
        } else {
            const float sh = nsp == 1 ? 0.0f : pl_nearest_scale(a->p[0], A.H, A.Ho);
            const float sw = pl_nearest_scale(a->p[1], A.W, A.Wo);
            if (x2) pl_nearest_x2<T><<<grid, PL_THREADS, 0, c->stream>>>(px, py, A, sh, nsp == 1 ? 1 : 0, total);
            else pl_nearest<T><<<grid, PL_THREADS, 0, c->stream>>>(px, py, A, sh, sw, nsp == 1 ? 1 : 0, total);
        }
    });
    WK_GPU_LAUNCH_CHECK(c, wk_gpu_op_name(a->op));
    return WK_OK;
}
