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
 *    Samples are unfolded in blocks whose columns stay near CV_COL_BYTES.
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
/* bytes of columns unfolded at once (whole samples; at least one) */
#define CV_COL_BYTES ((int64_t)256 << 20)

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
};

/* output position l (< 2^31, checked) as (oh, ow) */
WK_DEV void cv_pos(const cv_args &A, int64_t l, int64_t *oh, int64_t *ow)
{
    const uint32_t q = wk_divmod32_div(A.dWo, (uint32_t)l);
    *oh = q;
    *ow = (uint32_t)l - q * A.dWo.d;
}

/* the input row (or column) that output position o reads through kernel
 * tap q, or -1 when it reads padding (or, transposed, no input) */
WK_DEV int64_t cv_src(int64_t o, int64_t q, int64_t in, int64_t s, int64_t p, int64_t d, int tr)
{
    if (!tr) {
        const int64_t i = o * s - p + q * d;
        return i >= 0 && i < in ? i : -1;
    }
    const int64_t t = o + p - q * d;
    if (t < 0) return -1;
    const int64_t i = t / s;
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

/* blockIdx.y strides over the (n, co) planes, x over the plane's outputs */
template <typename T>
__global__ WK_LAUNCH_BOUNDS(CV_THREADS) void cv_direct(const T *__restrict__ x, const T *__restrict__ w,
                                                        const T *__restrict__ b, T *__restrict__ y, cv_args A)
{
    typedef typename wk_type<T>::C C;
    const int64_t planes = A.N * A.Cout, L = A.Ho * A.Wo;
    for (int64_t pl = blockIdx.y; pl < planes; pl += gridDim.y) {
        const int64_t n = pl / A.Cout, co = pl - n * A.Cout, g = co / A.Cog;
        const T *xn = x + A.xo + n * A.xsn;
        for (int64_t l = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; l < L; l += (int64_t)gridDim.x * blockDim.x) {
            int64_t oh, ow;
            cv_pos(A, l, &oh, &ow);
            C acc = 0;
            for (int64_t ci_l = 0; ci_l < A.Cig; ci_l++) {
                const T *xc = xn + (g * A.Cig + ci_l) * A.xsc;
                for (int64_t ki = 0; ki < A.kh; ki++) {
                    const int64_t ih = cv_src(oh, ki, A.H, A.s0, A.p0, A.d0, A.tr);
                    if (ih < 0) continue;
                    for (int64_t kj = 0; kj < A.kw; kj++) {
                        const int64_t iw = cv_src(ow, kj, A.W, A.s1, A.p1, A.d1, A.tr);
                        if (iw < 0) continue;
                        acc += (C)wk_load_c(xc[ih * A.xsh + iw * A.xsw]) * (C)wk_load_c(w[cv_woff(A, co, ci_l, ki, kj)]);
                    }
                }
            }
            if (b) acc += (C)wk_load_c(b[A.bo + co * A.bs]);
            y[pl * L + l] = wk_to<T>(acc);
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

/* col [nb, G, Kp, L] for samples n0 .. n0 + nb - 1; blockIdx.y strides
 * over the rows (n, g, r), x over the output positions */
template <typename T>
__global__ WK_LAUNCH_BOUNDS(CV_THREADS) void cv_im2col(const T *__restrict__ x, T *__restrict__ col, cv_args A,
                                                        int64_t n0, int64_t nb)
{
    const int64_t kk = A.kh * A.kw, L = A.Ho * A.Wo, rows = nb * A.G * A.Kp;
    const T zero = wk_to<T>(0.0f), one = wk_to<T>(1.0f);
    for (int64_t R = blockIdx.y; R < rows; R += gridDim.y) {
        const int64_t nl = R / (A.G * A.Kp), rem = R - nl * (A.G * A.Kp), g = rem / A.Kp, r = rem - g * A.Kp;
        T *out = col + R * L;
        const int64_t l0 = (int64_t)blockIdx.x * blockDim.x + threadIdx.x, ls = (int64_t)gridDim.x * blockDim.x;
        if (r >= A.K) {
            const T v = r == A.K && A.bias ? one : zero;
            for (int64_t l = l0; l < L; l += ls) out[l] = v;
            continue;
        }
        const int64_t ci = g * A.Cig + r / kk, q = r % kk, ki = q / A.kw, kj = q - ki * A.kw;
        const T *xc = x + A.xo + (n0 + nl) * A.xsn + ci * A.xsc;
        for (int64_t l = l0; l < L; l += ls) {
            int64_t oh, ow;
            cv_pos(A, l, &oh, &ow);
            const int64_t ih = cv_src(oh, ki, A.H, A.s0, A.p0, A.d0, A.tr);
            const int64_t iw = ih < 0 ? -1 : cv_src(ow, kj, A.W, A.s1, A.p1, A.d1, A.tr);
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

/* grid of a (positions x rows) launch: x covers the positions, y the rows
 * (striding beyond 65535) */
static dim3 cv_grid(int64_t positions, int64_t rows)
{
    int64_t gx = (positions + CV_THREADS - 1) / CV_THREADS;
    if (gx > 65535) gx = 65535;
    if (gx < 1) gx = 1;
    int64_t gy = rows < 65535 ? rows : 65535;
    if (gy < 1) gy = 1;
    return dim3((unsigned)gx, (unsigned)gy, 1);
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
        cv_direct<T><<<cv_grid(L, A.N * A.Cout), CV_THREADS, 0, c->stream>>>(x, w, b, y, A);
        WK_GPU_LAUNCH_CHECK(c, name);
        return WK_OK;
    }
    const int64_t es = (int64_t)sizeof(T);
    const int64_t per = A.G * A.Kp * L * es;
    int64_t nb = per > 0 ? CV_COL_BYTES / per : A.N;
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
        cv_im2col<T><<<cv_grid(L, m * A.G * A.Kp), CV_THREADS, 0, c->stream>>>(x, (T *)col, A, n0, m);
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
    if (A.Ho * A.Wo > (int64_t)INT32_MAX)
        return wk_gpu_host->set_error(WK_ERR_SHAPE, "%s: %lld output positions per plane (at most 2^31 - 1)",
                                      wk_gpu_op_name(a->op), (long long)(A.Ho * A.Wo));
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
