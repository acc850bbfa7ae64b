/* conv.hip — the CONV family on the GPU: conv1d, conv2d and their
 * transposed forms (a 1-d op is the 2-d one with H = 1, as backend.h
 * passes it), for f16, bf16 and f32 (accumulating in f32) and f64, on
 * inputs of any strides; dst is contiguous.
 *
 * Two paths, both wick's own kernels:
 *
 *  - GEMM (the default): the weight is packed into a contiguous [G, Cout/G,
 *    Kp] matrix of the op's dtype (K = Cin/G * kh * kw, rows (ci, ki, kj)),
 *    the input is unfolded (im2col) into columns [nb, G, Kp, Ho * Wo], and
 *    one batched matmul (matmul.hip: cuBLAS / rocBLAS when present, else
 *    gemm_tiled.hip) writes dst [nb, G, Cout/G, Ho * Wo] directly. The bias
 *    rides in the GEMM: it is column K of the packed weight and row K of
 *    the columns is 1, so each output is rounded once, from the f32 (f64)
 *    accumulator, bias included. Kp is K (+ 1 with a bias) rounded up to
 *    a multiple of 8 (zero-filled), which keeps the packed rows 16-byte
 *    aligned for the BLAS. The transposed forms use the same GEMM with
 *    their own unfolding: output (oh, ow) takes input (ih, iw) through
 *    kernel tap (ki, kj) when oh + padding - ki * dilation is ih * stride,
 *    so the column entry is that input or 0 (with stride s, about
 *    1 - 1/s^2 of the entries are 0; no col2im, no atomics, one rounding).
 *    Samples are unfolded in blocks whose columns stay near CV_COL_BYTES
 *    (24 MiB), so that the GEMM finds them in L2.
 *
 *  - direct: one thread per output element, summing Cin/G * kh * kw
 *    products in f32 (f64); taken when Cout/G <= 4 (depthwise and
 *    grouped convolutions with few output channels per group, where a
 *    GEMM of so few rows wastes its tiles) or when K is 0.
 *
 * WICK_CONV=direct or WICK_CONV=gemm forces one path for every call (so
 * the tests run both on the same cases).
 */
#include "gpu_internal.h"
#include <stdlib.h>
#include <string.h>

#define CV_THREADS 256
/* bytes of columns unfolded at once (whole samples; at least one): about
 * half an H100's L2, so that the GEMM reads the columns the unfold just
 * wrote while they are still in L2; WICK_CONV_COL_MB overrides it */
#define CV_COL_BYTES ((int64_t)24 << 20)

/* the geometry of one call, as the kernels see it */
struct cv_args {
    int64_t N, Cin, H, W, Cout, Ho, Wo, kh, kw;
    int64_t G, Cig, Cog, K, Kp;
    int64_t s0, s1, p0, p1, d0, d1;
    int tr;                        /* transposed                               */
    int bias;                      /* a bias (GEMM: row/column K)              */
    int64_t xo, xsn, xsc, xsh, xsw;    /* x: offset and strides                */
    int64_t wo, ws0, ws1, wsh, wsw;    /* w: offset and strides                */
    int64_t bo, bs;                    /* bias: offset and stride              */
    wk_divmod32 dWo;                   /* position l -> (l / Wo, l % Wo)        */
    int iH, iW, is0, is1, ip0, ip1, id0, id1;   /* 32-bit copies for cv_src    */
};

/* the input row (or column) that output position o reads through kernel
 * tap q, or -1 when it reads padding (or, transposed, no input); every
 * size, option and position is below 2^28 and o * s too (checked on the host) */
WK_DEV int cv_src(int o, int q, int in, int s, int p, int d, int tr)
{
    if (!tr) {
        const int i = o * s - p + q * d;
        return i >= 0 && i < in ? i : -1;
    }
    const int t = o + p - q * d;
    if (t < 0) return -1;
    const int i = t / s;
    return i * s == t && i < in ? i : -1;
}

/* weight element of output channel co and input channel ci_l (within the
 * group) at tap (ki, kj) */
WK_DEV int64_t cv_woff(const cv_args &A, int64_t co, int64_t ci_l, int64_t ki, int64_t kj)
{
    if (!A.tr) return A.wo + co * A.ws0 + ci_l * A.ws1 + ki * A.wsh + kj * A.wsw;
    const int64_t g = co / A.Cog, co_l = co - g * A.Cog;
    return A.wo + (g * A.Cig + ci_l) * A.ws0 + co_l * A.ws1 + ki * A.wsh + kj * A.wsw;
}

/* ---- direct path ----------------------------------------------------------- */

/* one block per (n, co) plane at a time (the plane's sample, channel,
 * group, weights and bias computed once), its threads over the plane's
 * outputs */
template <typename T>
__global__ WK_LAUNCH_BOUNDS(CV_THREADS) void cv_direct(const T *__restrict__ x, const T *__restrict__ w,
                                                        const T *__restrict__ b, T *__restrict__ y, cv_args A)
{
    typedef typename wk_type<T>::C C;
    const int64_t planes = A.N * A.Cout;
    const int L = (int)(A.Ho * A.Wo), kh = (int)A.kh, kw = (int)A.kw, cig = (int)A.Cig;
    for (int64_t pl = blockIdx.x; pl < planes; pl += gridDim.x) {
        const int64_t n = pl / A.Cout, co = pl - n * A.Cout, g = co / A.Cog;
        const T *xg = x + A.xo + n * A.xsn + g * A.Cig * A.xsc;
        const T *wc = w + A.wo + (A.tr ? g * A.Cig * A.ws0 + (co - g * A.Cog) * A.ws1 : co * A.ws0);
        const int64_t wci = A.tr ? A.ws0 : A.ws1;
        const C bias = b ? (C)wk_load_c(b[A.bo + co * A.bs]) : (C)0;
        T *yp = y + pl * L;
        for (int l = threadIdx.x; l < L; l += blockDim.x) {
            const int oh = (int)wk_divmod32_div(A.dWo, (uint32_t)l), ow = l - oh * (int)A.dWo.d;
            C acc = 0;
            for (int ci = 0; ci < cig; ci++) {
                const T *xc = xg + ci * A.xsc, *wk = wc + ci * wci;
                for (int ki = 0; ki < kh; ki++) {
                    const int ih = cv_src(oh, ki, A.iH, A.is0, A.ip0, A.id0, A.tr);
                    if (ih < 0) continue;
                    const T *xr = xc + ih * A.xsh, *wr = wk + ki * A.wsh;
                    for (int kj = 0; kj < kw; kj++) {
                        const int iw = cv_src(ow, kj, A.iW, A.is1, A.ip1, A.id1, A.tr);
                        if (iw < 0) continue;
                        acc += (C)wk_load_c(xr[iw * A.xsw]) * (C)wk_load_c(wr[kj * A.wsw]);
                    }
                }
            }
            yp[l] = wk_to<T>(acc + bias);
        }
    }
}

/* ---- GEMM path --------------------------------------------------------------- */

/* wp [Cout, Kp]: row co is output channel co's weights (ci_l, ki, kj),
 * then its bias (column K, when there is one), then zeros */
template <typename T>
__global__ WK_LAUNCH_BOUNDS(CV_THREADS) void cv_pack_w(const T *__restrict__ w, const T *__restrict__ b,
                                                        T *__restrict__ wp, cv_args A)
{
    const int64_t kk = A.kh * A.kw, total = A.Cout * A.Kp;
    WK_GPU_FOR(i, total) {
        const int64_t co = i / A.Kp, r = i - co * A.Kp;
        T v;
        if (r < A.K) {
            const int64_t ci_l = r / kk, q = r - ci_l * kk, ki = q / A.kw, kj = q - ki * A.kw;
            v = w[cv_woff(A, co, ci_l, ki, kj)];
        } else if (r == A.K && A.bias) {
            v = b[A.bo + co * A.bs];
        } else {
            v = wk_to<T>(0.0f);
        }
        wp[i] = v;
    }
}

/* col [nb, G, Kp, L] for samples n0 .. n0 + nb - 1: one block per row
 * (n, g, r) at a time (its channel and tap computed once), its threads
 * over the output positions */
template <typename T>
__global__ WK_LAUNCH_BOUNDS(CV_THREADS) void cv_im2col(const T *__restrict__ x, T *__restrict__ col, cv_args A,
                                                        int64_t n0, int64_t nb)
{
    const int64_t kk = A.kh * A.kw, rows = nb * A.G * A.Kp;
    const int L = (int)(A.Ho * A.Wo);
    const T zero = wk_to<T>(0.0f), one = wk_to<T>(1.0f);
    for (int64_t R = blockIdx.x; R < rows; R += gridDim.x) {
        const int64_t nl = R / (A.G * A.Kp), rem = R - nl * (A.G * A.Kp), g = rem / A.Kp, r = rem - g * A.Kp;
        T *out = col + R * L;
        if (r >= A.K) {
            const T v = r == A.K && A.bias ? one : zero;
            for (int l = threadIdx.x; l < L; l += blockDim.x) out[l] = v;
            continue;
        }
        const int64_t ci = g * A.Cig + r / kk;
        const int q = (int)(r % kk), ki = q / (int)A.kw, kj = q - ki * (int)A.kw;
        const T *xc = x + A.xo + (n0 + nl) * A.xsn + ci * A.xsc;
        for (int l = threadIdx.x; l < L; l += blockDim.x) {
            const int oh = (int)wk_divmod32_div(A.dWo, (uint32_t)l), ow = l - oh * (int)A.dWo.d;
            const int ih = cv_src(oh, ki, A.iH, A.is0, A.ip0, A.id0, A.tr);
            const int iw = ih < 0 ? -1 : cv_src(ow, kj, A.iW, A.is1, A.ip1, A.id1, A.tr);
            out[l] = iw < 0 ? zero : xc[ih * A.xsh + iw * A.xsw];
        }
    }
}

static wk_view cv_mat(void *base, wk_dtype dt, int64_t offset, const int64_t *dims, const int64_t *strides)
{
    wk_view v;
    memset(&v, 0, sizeof v);
    v.base = base;
    v.dtype = dt;
    v.rank = 4;
    v.offset = offset;
    for (int i = 0; i < 4; i++) {
        v.dims[i] = dims[i];
        v.strides[i] = strides[i];
    }
    return v;
}

/* blocks of a launch over `rows` (one row per block at a time), and
 * threads for rows of L positions (a multiple of 64 up to CV_THREADS) */
static unsigned cv_blocks(int64_t rows)
{
    const int64_t cap = (int64_t)1 << 24;
    return (unsigned)(rows < 1 ? 1 : rows < cap ? rows : cap);
}
static int cv_threads(int64_t L)
{
    return L >= CV_THREADS ? CV_THREADS : (int)((L + 63) / 64 * 64);
}

template <typename T>
static wk_status cv_run(wk_gpu_ctx *c, const wk_op_args *a, const cv_args &A, bool direct)
{
    const wk_view *d = a->dst;
    const T *x = (const T *)a->src[0]->base, *w = (const T *)a->src[1]->base;
    const T *b = a->src[2] ? (const T *)a->src[2]->base : NULL;
    T *y = (T *)d->base + d->offset;
    const char *name = wk_gpu_op_name(a->op);
    const int64_t L = A.Ho * A.Wo;
    if (direct) {
        cv_direct<T><<<cv_blocks(A.N * A.Cout), cv_threads(L), 0, c->stream>>>(x, w, b, y, A);
        WK_GPU_LAUNCH_CHECK(c, name);
        return WK_OK;
    }
    const int64_t es = (int64_t)sizeof(T);
    const int64_t per = A.G * A.Kp * L * es;
    const char *mb = getenv("WICK_CONV_COL_MB");
    const int64_t budget = mb && atoll(mb) > 0 ? atoll(mb) << 20 : CV_COL_BYTES;
    int64_t nb = per > 0 ? budget / per : A.N;
    if (nb < 1) nb = 1;
    if (nb > A.N) nb = A.N;
    void *wp = NULL, *col = NULL;
    wk_status st = wk_gpu_scratch_alloc(c, (size_t)(A.Cout * A.Kp * es), &wp);
    if (st == WK_OK) st = wk_gpu_scratch_alloc(c, (size_t)(nb * per), &col);
    if (st == WK_OK) {
        cv_pack_w<T><<<wk_gpu_grid(c, A.Cout * A.Kp, CV_THREADS, 4), CV_THREADS, 0, c->stream>>>(w, b, (T *)wp, A);
        st = wk_gpu_launched(c, name, __FILE__, __LINE__);
    }
    for (int64_t n0 = 0; n0 < A.N && st == WK_OK; n0 += nb) {
        const int64_t m = A.N - n0 < nb ? A.N - n0 : nb;
        cv_im2col<T><<<cv_blocks(m * A.G * A.Kp), cv_threads(L), 0, c->stream>>>(x, (T *)col, A, n0, m);
        st = wk_gpu_launched(c, name, __FILE__, __LINE__);
        if (st != WK_OK) break;
        /* batch dims [samples, groups], the larger one innermost (one
         * strided-batched BLAS call; the other loops on the host) */
        const bool g_in = A.G >= m;
        const int64_t B0 = g_in ? m : A.G, B1 = g_in ? A.G : m;
        const int64_t sw_n = 0, sw_g = A.Cog * A.Kp, sc_n = A.G * A.Kp * L, sc_g = A.Kp * L;
        const int64_t sd_n = A.Cout * L, sd_g = A.Cog * L;
        const int64_t ad[4] = { B0, B1, A.Cog, A.Kp }, as[4] = { g_in ? sw_n : sw_g, g_in ? sw_g : sw_n, A.Kp, 1 };
        const int64_t bd[4] = { B0, B1, A.Kp, L }, bs[4] = { g_in ? sc_n : sc_g, g_in ? sc_g : sc_n, L, 1 };
        const int64_t dd[4] = { B0, B1, A.Cog, L }, ds[4] = { g_in ? sd_n : sd_g, g_in ? sd_g : sd_n, L, 1 };
        wk_view va = cv_mat(wp, d->dtype, 0, ad, as), vb = cv_mat(col, d->dtype, 0, bd, bs),
                vd = cv_mat(d->base, d->dtype, d->offset + n0 * A.Cout * L, dd, ds);
        st = wk_gpu_matmul(c, &vd, &va, &vb);
    }
    if (col) wk_gpu_scratch_free(c, col);
    if (wp) wk_gpu_scratch_free(c, wp);
    return st;
}

wk_status wk_gpu_conv(void *ctx, const wk_op_args *a)
{
    wk_gpu_ctx *c = (wk_gpu_ctx *)ctx;
    const wk_conv_params *P = (const wk_conv_params *)a->params;
    const wk_view *d = a->dst, *x = a->src[0], *w = a->src[1], *bv = a->src[2];
    const wk_dtype dt = d->dtype;
    if (!P || !x || !w || (P->nsp != 1 && P->nsp != 2) || x->rank != P->nsp + 2 || w->rank != P->nsp + 2 ||
        d->rank != P->nsp + 2)
        return wk_gpu_host->set_error(WK_ERR_ARGUMENT, "%s: bad arguments", wk_gpu_op_name(a->op));
    if (dt != WK_F16 && dt != WK_BF16 && dt != WK_F32 && dt != WK_F64)
        return wk_gpu_host->set_error(WK_ERR_DTYPE, "%s: dtype %s is not one of f16, bf16, f32, f64",
                                      wk_gpu_op_name(a->op), wk_gpu_dtype_name(dt));
    const int nsp = P->nsp;
    cv_args A;
    memset(&A, 0, sizeof A);
    A.tr = a->op == WK_OP_CONV_TRANSPOSE1D || a->op == WK_OP_CONV_TRANSPOSE2D;
    A.N = x->dims[0];
    A.Cin = x->dims[1];
    A.H = nsp == 2 ? x->dims[2] : 1;
    A.W = x->dims[nsp + 1];
    A.Cout = d->dims[1];
    A.Ho = nsp == 2 ? d->dims[2] : 1;
    A.Wo = d->dims[nsp + 1];
    A.kh = nsp == 2 ? w->dims[2] : 1;
    A.kw = w->dims[nsp + 1];
    A.G = P->groups;
    A.Cig = A.Cin / A.G;
    A.Cog = A.Cout / A.G;
    A.K = A.Cig * A.kh * A.kw;
    A.bias = bv != NULL;
    A.Kp = (A.K + A.bias + 7) / 8 * 8;
    A.s0 = P->stride[0], A.s1 = P->stride[1];
    A.p0 = P->padding[0], A.p1 = P->padding[1];
    A.d0 = P->dilation[0], A.d1 = P->dilation[1];
    A.xo = x->offset, A.xsn = x->strides[0], A.xsc = x->strides[1];
    A.xsh = nsp == 2 ? x->strides[2] : 0, A.xsw = x->strides[nsp + 1];
    A.wo = w->offset, A.ws0 = w->strides[0], A.ws1 = w->strides[1];
    A.wsh = nsp == 2 ? w->strides[2] : 0, A.wsw = w->strides[nsp + 1];
    if (bv) A.bo = bv->offset, A.bs = bv->strides[0];
    if (A.N * A.Cout * A.Ho * A.Wo == 0) return WK_OK;
    const int64_t lim = (int64_t)1 << 28;   /* every cv_src term stays far from 2^31 */
    if (A.Ho * A.Wo >= 4 * lim || A.H >= lim || A.W >= lim || A.Ho >= lim || A.Wo >= lim || A.kh * A.kw >= lim ||
        A.s0 >= lim || A.s1 >= lim || A.p0 >= lim || A.p1 >= lim || A.d0 * A.kh >= lim || A.d1 * A.kw >= lim ||
        A.Ho * A.s0 >= lim || A.Wo * A.s1 >= lim || A.Cig >= lim)
        return wk_gpu_host->set_error(WK_ERR_SHAPE, "%s: a size or option reaches 2^30 (the GPU kernels take less)",
                                      wk_gpu_op_name(a->op));
    A.iH = (int)A.H, A.iW = (int)A.W, A.is0 = (int)A.s0, A.is1 = (int)A.s1;
    A.ip0 = (int)A.p0, A.ip1 = (int)A.p1, A.id0 = (int)A.d0, A.id1 = (int)A.d1;
    A.dWo = wk_divmod32_make((uint32_t)A.Wo);
    WK_GPU_ENTER(c);
    const char *mode = getenv("WICK_CONV");
    bool direct = A.Cog <= 4 || A.K == 0;
    if (mode && !strcmp(mode, "direct")) direct = true;
    else if (mode && !strcmp(mode, "gemm") && A.K > 0) direct = false;
    wk_status st = WK_OK;
    switch (dt) {
    WK_GPU_CASE_(WK_BF16, wk_bf16_t, T, st = cv_run<T>(c, a, A, direct))
    WK_GPU_CASE_(WK_F16, wk_f16_t, T, st = cv_run<T>(c, a, A, direct))
    WK_GPU_CASE_(WK_F32, float, T, st = cv_run<T>(c, a, A, direct))
    WK_GPU_CASE_(WK_F64, double, T, st = cv_run<T>(c, a, A, direct))
    default: break;
    }
    return st;
}
