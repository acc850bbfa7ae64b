/* conv.hip — the CONV family on the GPU: conv1d, conv2d and their
 * transposed forms (a 1-d op is the 2-d one with H = 1, as backend.h
 * passes it), for f16, bf16 and f32 (accumulating in f32) and f64, on
 * inputs of any strides; dst is contiguous.
 *
 * Three paths, all wick's own kernels:
 *
 *  - implicit GEMM (f16/bf16, groups 1, not transposed, Cin a multiple
 *    of 32; NVIDIA sm_80+ in the plain CUDA build, AMD GPUs with MFMA:
 *    gfx90a/gfx94x): the input copied once to channels-last, each block
 *    gathering its slice of the unfolded columns straight into shared
 *    memory; mma.sync tensor-core tiles (cv_mma_igemm) or MFMA steps
 *    (cv_igemm_mfma, which the virtual-wave64 build runs through
 *    compat.h's software MFMA). The 3x3 C=256 row of
 *    bench/RESULTS-conv-sort.md went from 1.15 ms (im2col + cuBLAS) to
 *    0.49-0.51 ms on H200s (0.52-0.61x cuDNN).
 *
 *  - GEMM (every other case with more than 4 output channels a group,
 *    and every case on gfx1030): the weight is packed into a contiguous [G, Cout/G,
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
 *    GEMM of so few rows wastes its tiles) or when K is 0. Depthwise 3x3
 *    convolutions of stride 1 or 2 on contiguous rows take an unrolled
 *    form (cv_dw3: 4 outputs a thread; WICK_CONV_DW3=0 keeps the generic
 *    kernel).
 *
 * WICK_CONV=direct or WICK_CONV=gemm forces one path for every call (so
 * the tests run each on the same cases; gemm is im2col + matmul, the
 * implicit GEMM being the default where it applies).
 */
#include "gpu_internal.h"
#include "mma.h"
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

/* depthwise 3x3 (one input and one output channel a group, stride S in
 * both dims, dilation 1, input rows contiguous): the direct path with the
 * taps unrolled and the plane's 9 weights in registers; each thread makes
 * V consecutive outputs of a row from one register copy of the inputs
 * they share. The same sum in the same order as cv_direct (rows, then
 * columns, the padding skipped), so the same result. */
#define CV_DW_V 4
template <typename T, int S>
__global__ WK_LAUNCH_BOUNDS(CV_THREADS) void cv_dw3(const T *__restrict__ x, const T *__restrict__ w,
                                                     const T *__restrict__ b, T *__restrict__ y, cv_args A)
{
    typedef typename wk_type<T>::C C;
    constexpr int V = CV_DW_V, SPAN = (V - 1) * S + 3;
    const int64_t planes = A.N * A.Cout;
    const int Ho = (int)A.Ho, Wo = (int)A.Wo, H = A.iH, W = A.iW, p0 = A.ip0, p1 = A.ip1;
    const int Ws = (Wo + V - 1) / V, L = Ho * Ws;
    for (int64_t pl = blockIdx.x; pl < planes; pl += gridDim.x) {
        const int64_t n = pl / A.Cout, co = pl - n * A.Cout;
        const T *xc = x + A.xo + n * A.xsn + co * A.xsc;
        const T *wc = w + A.wo + co * A.ws0;
        C wt[9];
#pragma unroll
        for (int q = 0; q < 9; q++) wt[q] = (C)wk_load_c(wc[(q / 3) * A.wsh + (q % 3) * A.wsw]);
        const C bias = b ? (C)wk_load_c(b[A.bo + co * A.bs]) : (C)0;
        T *yp = y + pl * (int64_t)Ho * Wo;
        for (int l = threadIdx.x; l < L; l += blockDim.x) {
            const int oh = l / Ws, ow0 = (l - oh * Ws) * V, iw0 = ow0 * S - p1;
            C acc[V];
#pragma unroll
            for (int j = 0; j < V; j++) acc[j] = 0;
#pragma unroll
            for (int ki = 0; ki < 3; ki++) {
                const int ih = oh * S - p0 + ki;
                if (ih < 0 || ih >= H) continue;
                const T *xr = xc + (int64_t)ih * A.xsh;
                C xv[SPAN];
#pragma unroll
                for (int t = 0; t < SPAN; t++) {
                    const int iw = iw0 + t;
                    xv[t] = iw >= 0 && iw < W ? (C)wk_load_c(xr[iw]) : (C)0;
                }
#pragma unroll
                for (int j = 0; j < V; j++)
#pragma unroll
                    for (int kj = 0; kj < 3; kj++) {
                        const int iw = iw0 + j * S + kj;
                        if (iw >= 0 && iw < W) acc[j] += xv[j * S + kj] * wt[ki * 3 + kj];
                    }
            }
#pragma unroll
            for (int j = 0; j < V; j++)
                if (ow0 + j < Wo) yp[oh * Wo + ow0 + j] = wk_to<T>(acc[j] + bias);
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

/* ---- implicit GEMM path (f16 and bf16; NVIDIA sm_80+, AMD MFMA) ----------------------- */

/* D [Cout, P] = W [Cout, K] x X [K, P], P = N * Ho * Wo output positions,
 * K = kh * kw * Cin ordered (ki, kj, ci): the weight is packed to rows of
 * K (cv_pack_w_hwc) and the input is copied once to channels-last [N, H,
 * W, Cin], so that for one position and one tap the Cin inputs are
 * contiguous: the columns of X are never written, each block gathers its
 * [BN positions, BK] slice straight from the input, 16 bytes (8 channels)
 * per cp.async, padding zero-filled by the copy itself. With Cin a
 * multiple of BK, a k slice lies within one tap.
 *
 * Block tile BM (output channels) x BN (positions) x BK. NVIDIA
 * (cv_mma_igemm): 8 warps each 64 x 32, mma.sync m16n8k16 with f32
 * accumulators fed by ldmatrix from shared rows padded to 16 bytes
 * (conflict-free), NS k slices in flight (cp.async groups, one barrier
 * per slice). AMD (cv_igemm_mfma, below): 4 waves each 64 x 64. Both
 * add the bias in f32 in the epilogue and round each output once. */
#if defined(WK_MMA_SM80) || defined(WK_GPU_HIP) || defined(WK_VIRTUAL_WAVE64)
#define CV_HAVE_IGEMM 1
#define CV_IG_BM 128
#define CV_IG_BN 128
#define CV_IG_BK 32            /* the smallest k slice: Cin must be a multiple */
#define CV_IG_THREADS 256
/* shared memory of a kernel with k slices of BK and NS stages */
#define CV_IG_SMEM(BK, NS) ((size_t)(NS) * (CV_IG_BM + CV_IG_BN) * ((BK) + 8) * 2)

struct cv_ig_args {
    const void *x;              /* channels-last input [N, H, W, Cin]       */
    const void *w;              /* packed weight [Cout, K]                   */
    const void *b;              /* bias (b[bo + co * bs]) or NULL            */
    void *y;                    /* dst [N, Cout, Ho * Wo] at its offset      */
    int H, W, Cin, Cout, L, kw, K, P, mtiles;
    int s0, s1, p0, p1, d0, d1;
    int64_t bo, bs;
    wk_divmod32 dL, dWo;        /* p -> (n, l), l -> (oh, ow)                */
};

extern __shared__ uint4 cv_dsmem[];

/* the thread's part of loading a k slice: rows r0 + RPI i of the weight
 * tile and positions n0 + r0 + RPI i of the column tile, 16-byte chunk
 * ck of each; the next slice's tap (ki, kj) and channels ci.. */
template <int BK> struct cv_ig_loader {
    enum { CPR = BK / 8, RPI = CV_IG_THREADS / CPR, NIT = CV_IG_BM / RPI };
    int r0, ck, m0;
    const uint16_t *wrow0;
    int64_t wstep;
    const uint16_t *xb[NIT];
    int ih0[NIT], iw0[NIT];
    bool pok[NIT];
    int kt, ki, kj, ci;

    WK_DEV void init(const cv_ig_args &A, int m0_, int n0, int tid)
    {
        r0 = tid / CPR, ck = (tid % CPR) * 8, m0 = m0_;
        /* weight rows m0 + r0 + RPI i: from one pointer (registers are tight) */
        wrow0 = (const uint16_t *)A.w + (int64_t)(m0 + r0) * A.K + ck;
        wstep = (int64_t)RPI * A.K;
#pragma unroll
        for (int i = 0; i < NIT; i++) {
            const int p = n0 + r0 + RPI * i;
            pok[i] = p < A.P;
            const uint32_t pp = (uint32_t)(pok[i] ? p : 0), n = wk_divmod32_div(A.dL, pp), l = pp - n * A.dL.d;
            const uint32_t oh = wk_divmod32_div(A.dWo, l), ow = l - oh * A.dWo.d;
            xb[i] = (const uint16_t *)A.x + (int64_t)n * A.H * A.W * A.Cin + ck;
            ih0[i] = (int)oh * A.s0 - A.p0;
            iw0[i] = (int)ow * A.s1 - A.p1;
        }
        kt = ki = kj = ci = 0;
    }
    /* chunk i of the weight tile (NULL: zeros) */
    WK_DEV const uint16_t *wsrc(const cv_ig_args &A, int i) const
    {
        return m0 + r0 + RPI * i < A.Cout ? wrow0 + i * wstep + kt * BK : NULL;
    }
    /* chunk i of the column tile (NULL: padding or past the positions) */
    WK_DEV const uint16_t *xsrc(const cv_ig_args &A, int i) const
    {
        const int ih = ih0[i] + ki * A.d0, iw = iw0[i] + kj * A.d1;
        const bool ok = pok[i] && ih >= 0 && ih < A.H && iw >= 0 && iw < A.W;
        return ok ? xb[i] + ((int64_t)ih * A.W + iw) * A.Cin + ci : NULL;
    }
    WK_DEV void next(const cv_ig_args &A)
    {
        kt++;
        ci += BK;
        if (ci == A.Cin) {
            ci = 0;
            if (++kj == A.kw) {
                kj = 0;
                ki++;
            }
        }
    }
};
#endif /* CV_HAVE_IGEMM */

#if defined(WK_MMA_SM80)
template <typename T, int BK, int NS>
__global__ __launch_bounds__(CV_IG_THREADS, 2) void cv_mma_igemm(cv_ig_args A)
{
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
    enum { BM = CV_IG_BM, BN = CV_IG_BN, LDS = BK + 8, CPR = BK / 8, RPI = CV_IG_THREADS / CPR, NIT = BM / RPI };
    uint16_t *As = (uint16_t *)cv_dsmem, *Bs = As + NS * BM * LDS;
    const uint32_t sA = wk_smem_u32(As), sB = wk_smem_u32(Bs);
    const int tid = threadIdx.x, warp = tid >> 5, lane = tid & 31, g = lane >> 2, t = lane & 3;
    const int wm = warp & 1, wn = warp >> 1;
    const int m0 = (int)(blockIdx.x % (unsigned)A.mtiles) * BM, n0 = (int)(blockIdx.x / (unsigned)A.mtiles) * BN;
    cv_ig_loader<BK> ld;
    ld.init(A, m0, n0, tid);
    const int KT = A.K / BK;
    auto load = [&](int stage) {
#pragma unroll
        for (int i = 0; i < NIT; i++) {
            const int r = ld.r0 + RPI * i;
            const uint16_t *ws = ld.wsrc(A, i), *xs = ld.xsrc(A, i);
            wk_cp16(sA + (uint32_t)(((stage * BM + r) * LDS + ld.ck) * 2), ws ? ws : (const uint16_t *)A.w, ws ? 16 : 0);
            wk_cp16(sB + (uint32_t)(((stage * BN + r) * LDS + ld.ck) * 2), xs ? xs : (const uint16_t *)A.x, xs ? 16 : 0);
        }
        ld.next(A);
    };

    float acc[4][4][4];
#pragma unroll
    for (int i = 0; i < 4; i++)
#pragma unroll
        for (int j = 0; j < 4; j++)
#pragma unroll
            for (int e = 0; e < 4; e++) acc[i][j][e] = 0.0f;

#pragma unroll
    for (int s = 0; s < NS - 1; s++) {
        if (ld.kt < KT) load(s);
        wk_cp_commit();
    }
    for (int kt = 0; kt < KT; kt++) {
        wk_cp_wait<NS - 2>();
        __syncthreads();
        if (ld.kt < KT) load((kt + NS - 1) % NS);
        wk_cp_commit();
        const int st = kt % NS;
#pragma unroll
        for (int kk = 0; kk < BK / 16; kk++) {
            uint32_t af[4][4], bf[2][4];
#pragma unroll
            for (int mt = 0; mt < 4; mt++) {
                const int row = wm * 64 + mt * 16 + (lane & 15), col = kk * 16 + (lane >> 4) * 8;
                wk_ldsm4(af[mt], sA + (uint32_t)(((st * BM + row) * LDS + col) * 2));
            }
#pragma unroll
            for (int np = 0; np < 2; np++) {
                const int row = wn * 32 + np * 16 + (lane & 7) + ((lane >> 4) << 3);
                const int col = kk * 16 + ((lane >> 3) & 1) * 8;
                wk_ldsm4(bf[np], sB + (uint32_t)(((st * BN + row) * LDS + col) * 2));
            }
#pragma unroll
            for (int mt = 0; mt < 4; mt++)
#pragma unroll
                for (int nt = 0; nt < 4; nt++)
                    wk_mma<T>(acc[mt][nt], af[mt], bf[nt >> 1][(nt & 1) * 2], bf[nt >> 1][(nt & 1) * 2 + 1]);
        }
    }
    wk_cp_wait_all();

    /* epilogue: y[n, co, l] for p = n * L + l */
    int64_t yo[4][2];
#pragma unroll
    for (int nt = 0; nt < 4; nt++)
#pragma unroll
        for (int j = 0; j < 2; j++) {
            const int p = n0 + wn * 32 + nt * 8 + 2 * t + j;
            const uint32_t n = wk_divmod32_div(A.dL, (uint32_t)p), l = (uint32_t)p - n * A.dL.d;
            yo[nt][j] = p < A.P ? (int64_t)n * A.Cout * A.L + l : -1;
        }
    T *y = (T *)A.y;
    const T *bias = (const T *)A.b;
#pragma unroll
    for (int mt = 0; mt < 4; mt++)
#pragma unroll
        for (int h = 0; h < 2; h++) {
            const int co = m0 + wm * 64 + mt * 16 + g + 8 * h;
            if (co >= A.Cout) continue;
            const float bv = bias ? (float)wk_load_c(bias[A.bo + co * A.bs]) : 0.0f;
            const int64_t cof = (int64_t)co * A.L;
#pragma unroll
            for (int nt = 0; nt < 4; nt++)
#pragma unroll
                for (int j = 0; j < 2; j++)
                    if (yo[nt][j] >= 0) y[yo[nt][j] + cof] = wk_to<T>(acc[mt][nt][2 * h + j] + bv);
        }
#endif
}
#endif /* WK_MMA_SM80 */

#if !defined(WK_MMA_SM80) && defined(CV_HAVE_IGEMM)
/* The implicit GEMM on AMD's matrix cores (gfx90a, gfx94x; and in the
 * virtual-wave64 build on NVIDIA, through compat.h's software MFMA, which
 * is how it is tested): the same block tile, loader and epilogue as
 * cv_mma_igemm; 4 waves of 64 lanes, each a 64 x 64 quarter of the tile in
 * 4 x 4 MFMA 16x16x16 steps per 16 of k. Lane l holds row l % 16 of its
 * A (weights) and column l % 16 of its B (positions), each at k = 4 (l /
 * 16) .. + 3: 8-byte reads of rows of shared memory, both operands being
 * k-contiguous there. No cp.async on AMD: each k slice is read into
 * registers while the previous one is multiplied, then stored to the
 * other of two shared buffers (one barrier a slice). */
template <typename T>
__global__ __launch_bounds__(CV_IG_THREADS) void cv_igemm_mfma(cv_ig_args A)
{
#if defined(WK_MFMA_DEVICE)
    enum { BM = CV_IG_BM, BN = CV_IG_BN, BK = CV_IG_BK, LDS = BK + 8, RPI = cv_ig_loader<BK>::RPI,
           NIT = cv_ig_loader<BK>::NIT };
    uint16_t *As = (uint16_t *)cv_dsmem, *Bs = As + 2 * BM * LDS;
    const int tid = threadIdx.x, wave = tid / 64, lane = tid % 64, c16 = lane % 16, g = lane / 16;
    const int wm = wave & 1, wn = wave >> 1;
    const int m0 = (int)(blockIdx.x % (unsigned)A.mtiles) * BM, n0 = (int)(blockIdx.x / (unsigned)A.mtiles) * BN;
    cv_ig_loader<BK> ld;
    ld.init(A, m0, n0, tid);
    const int KT = A.K / BK;
    uint4 ra[NIT], rb[NIT];
    auto fetch = [&]() {
#pragma unroll
        for (int i = 0; i < NIT; i++) {
            const uint16_t *ws = ld.wsrc(A, i), *xs = ld.xsrc(A, i);
            ra[i] = ws ? *(const uint4 *)ws : make_uint4(0u, 0u, 0u, 0u);
            rb[i] = xs ? *(const uint4 *)xs : make_uint4(0u, 0u, 0u, 0u);
        }
        ld.next(A);
    };
    auto put = [&](int buf) {
#pragma unroll
        for (int i = 0; i < NIT; i++) {
            const int r = ld.r0 + RPI * i;
            *(uint4 *)(As + (buf * BM + r) * LDS + ld.ck) = ra[i];
            *(uint4 *)(Bs + (buf * BN + r) * LDS + ld.ck) = rb[i];
        }
    };
    wk_f32x4 acc[4][4];
#pragma unroll
    for (int mt = 0; mt < 4; mt++)
#pragma unroll
        for (int nt = 0; nt < 4; nt++) acc[mt][nt] = wk_f32x4{ 0.0f, 0.0f, 0.0f, 0.0f };
    fetch();
    put(0);
    __syncthreads();
    for (int kt = 0; kt < KT; kt++) {
        const int buf = kt & 1;
        if (kt + 1 < KT) fetch();               /* in flight while this slice is multiplied */
#pragma unroll
        for (int kk = 0; kk < BK / 16; kk++) {
            uint64_t af[4], bf[4];
#pragma unroll
            for (int mt = 0; mt < 4; mt++)
                af[mt] = *(const uint64_t *)(As + (buf * BM + wm * 64 + mt * 16 + c16) * LDS + kk * 16 + 4 * g);
#pragma unroll
            for (int nt = 0; nt < 4; nt++)
                bf[nt] = *(const uint64_t *)(Bs + (buf * BN + wn * 64 + nt * 16 + c16) * LDS + kk * 16 + 4 * g);
#pragma unroll
            for (int mt = 0; mt < 4; mt++)
#pragma unroll
                for (int nt = 0; nt < 4; nt++) acc[mt][nt] = wk_mfma16<T>(af[mt], bf[nt], acc[mt][nt]);
        }
        if (kt + 1 < KT) put(buf ^ 1);
        __syncthreads();
    }

    /* epilogue: lane l has position column l % 16 and output channels
     * 4 (l / 16) .. + 3 of each 16 x 16 tile */
    T *y = (T *)A.y;
    const T *bias = (const T *)A.b;
#pragma unroll
    for (int nt = 0; nt < 4; nt++) {
        const int p = n0 + wn * 64 + nt * 16 + c16;
        if (p >= A.P) continue;
        const uint32_t n = wk_divmod32_div(A.dL, (uint32_t)p), l = (uint32_t)p - n * A.dL.d;
        const int64_t yo = (int64_t)n * A.Cout * A.L + l;
#pragma unroll
        for (int mt = 0; mt < 4; mt++)
#pragma unroll
            for (int r = 0; r < 4; r++) {
                const int co = m0 + wm * 64 + mt * 16 + 4 * g + r;
                if (co >= A.Cout) continue;
                const float bv = bias ? (float)wk_load_c(bias[A.bo + co * A.bs]) : 0.0f;
                y[yo + (int64_t)co * A.L] = wk_to<T>(acc[mt][nt][r] + bv);
            }
    }
#else
    (void)A;
#if defined(__HIP_DEVICE_COMPILE__)
    __builtin_trap();                            /* the host launches it where wk_mfma_arch says only */
#endif
#endif
}
#endif

/* wp [Cout, K], K = kh * kw * Cin ordered (ki, kj, ci): the implicit
 * GEMM's weight rows */
template <typename T>
__global__ WK_LAUNCH_BOUNDS(CV_THREADS) void cv_pack_w_hwc(const T *__restrict__ w, T *__restrict__ wp, cv_args A)
{
    const int64_t total = A.Cout * A.K;
    WK_GPU_FOR(i, total) {
        const int64_t co = i / A.K, r = i - co * A.K, q = r / A.Cin, ci = r - q * A.Cin;
        const int64_t ki = q / A.kw, kj = q - ki * A.kw;
        wp[i] = w[cv_woff(A, co, ci, ki, kj)];
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

#if defined(WK_MMA_SM80)
template <typename T, int BK, int NS> static wk_status cv_igemm_go(wk_gpu_ctx *c, const cv_ig_args &G, unsigned blocks)
{
    static unsigned smem_done;
    const wk_status st = wk_gpu_smem_limit(c, cv_mma_igemm<T, BK, NS>, CV_IG_SMEM(BK, NS), &smem_done);
    if (st == WK_OK) cv_mma_igemm<T, BK, NS><<<blocks, CV_IG_THREADS, CV_IG_SMEM(BK, NS), c->stream>>>(G);
    return st;
}

#endif

#if defined(CV_HAVE_IGEMM)
/* the implicit GEMM for f16/bf16 (the caller checked cv_igemm_ok) */
template <typename T> static wk_status cv_run_igemm(wk_gpu_ctx *c, const wk_op_args *a, const cv_args &A)
{
    const wk_view *d = a->dst, *x = a->src[0];
    const char *name = wk_gpu_op_name(a->op);
    const int64_t es = (int64_t)sizeof(T);
    void *xt = NULL, *wp = NULL;
    wk_status st = wk_gpu_scratch_alloc(c, (size_t)(A.N * A.H * A.W * A.Cin * es), &xt);
    if (st == WK_OK) st = wk_gpu_scratch_alloc(c, (size_t)(A.Cout * A.K * es), &wp);
    if (st == WK_OK) {
        /* the input, channels last: a batched transpose [C, H * W] -> [H * W, C]
         * when each channel's plane is one run (copy.hip's tiled path), else
         * the strided copy */
        wk_view dv, sv;
        memset(&dv, 0, sizeof dv);
        dv.base = xt;
        dv.dtype = d->dtype;
        sv = dv;
        sv.base = x->base;
        sv.offset = x->offset;
        const bool flat = A.xsw == 1 && (A.xsh == A.W || A.H == 1);
        dv.rank = sv.rank = flat ? 3 : 4;
        const int64_t dd3[3] = { A.N, A.H * A.W, A.Cin }, ds3[3] = { A.H * A.W * A.Cin, A.Cin, 1 },
                      ss3[3] = { A.xsn, 1, A.xsc };
        const int64_t dd4[4] = { A.N, A.H, A.W, A.Cin }, ds4[4] = { A.H * A.W * A.Cin, A.W * A.Cin, A.Cin, 1 },
                      ss4[4] = { A.xsn, A.xsh, A.xsw, A.xsc };
        for (int i = 0; i < dv.rank; i++) {
            dv.dims[i] = sv.dims[i] = flat ? dd3[i] : dd4[i];
            dv.strides[i] = flat ? ds3[i] : ds4[i];
            sv.strides[i] = flat ? ss3[i] : ss4[i];
        }
        st = wk_gpu_copy(c, &dv, &sv);
    }
    if (st == WK_OK) {
        cv_pack_w_hwc<T><<<wk_gpu_grid(c, A.Cout * A.K, CV_THREADS, 4), CV_THREADS, 0, c->stream>>>(
            (const T *)a->src[1]->base, (T *)wp, A);
        st = wk_gpu_launched(c, name, __FILE__, __LINE__);
    }
    if (st == WK_OK) {
        cv_ig_args G;
        memset(&G, 0, sizeof G);
        G.x = xt;
        G.w = wp;
        G.b = a->src[2] ? a->src[2]->base : NULL;
        G.y = (T *)d->base + d->offset;
        G.H = (int)A.H, G.W = (int)A.W, G.Cin = (int)A.Cin, G.Cout = (int)A.Cout;
        G.L = (int)(A.Ho * A.Wo), G.kw = (int)A.kw, G.K = (int)A.K, G.P = (int)(A.N * A.Ho * A.Wo);
        G.mtiles = (int)((A.Cout + CV_IG_BM - 1) / CV_IG_BM);
        G.s0 = A.is0, G.s1 = A.is1, G.p0 = A.ip0, G.p1 = A.ip1, G.d0 = A.id0, G.d1 = A.id1;
        G.bo = A.bo, G.bs = A.bs;
        G.dL = wk_divmod32_make((uint32_t)G.L);
        G.dWo = A.dWo;
        const unsigned blocks = (unsigned)((int64_t)G.mtiles * ((G.P + CV_IG_BN - 1) / CV_IG_BN));
        /* k slices of 64 in 3 stages where Cin allows (H200: 0.49 ms against
         * 0.54 for slices of 32 in 4 stages, the 3x3 C=256 row; 5 or 3
         * stages of 32 and 2 of 64 were no faster) */
#if defined(WK_MMA_SM80)
        if (A.Cin % 64 == 0) st = cv_igemm_go<T, 64, 3>(c, G, blocks);
        else st = cv_igemm_go<T, 32, 4>(c, G, blocks);
#else
        cv_igemm_mfma<T><<<blocks, CV_IG_THREADS, 2 * (CV_IG_BM + CV_IG_BN) * (CV_IG_BK + 8) * 2, c->stream>>>(G);
#endif
        if (st == WK_OK) st = wk_gpu_launched(c, name, __FILE__, __LINE__);
    }
    if (wp) wk_gpu_scratch_free(c, wp);
    if (xt) wk_gpu_scratch_free(c, xt);
    return st;
}
#endif

#if defined(CV_HAVE_IGEMM)
/* the implicit GEMM takes the call: the plain CUDA build on sm_80+, or
 * an AMD GPU with MFMA (and the virtual-wave64 build), f16/bf16, no groups, not transposed, Cin a multiple of its k slice
 * (32), the positions and the sizes it indexes in 32 bits, the blocks
 * in one grid dim */
static bool cv_igemm_ok(const wk_gpu_ctx *c, wk_dtype dt, const cv_args &A)
{
    const int64_t lim = (int64_t)1 << 30;
#if defined(WK_MMA_SM80)
    const bool mc = c->cc_major >= 8;
#else
    const bool mc = c->warp_size == 64 && wk_mfma_arch(c->arch);
#endif
    return (dt == WK_BF16 || dt == WK_F16) && mc && !A.tr && A.G == 1 && A.Cin % CV_IG_BK == 0 &&
           A.N * A.Ho * A.Wo < lim && A.K < lim && A.Cout < lim && A.N * A.H * A.W < lim &&
           (A.Cout + CV_IG_BM - 1) / CV_IG_BM * ((A.N * A.Ho * A.Wo + CV_IG_BN - 1) / CV_IG_BN) < lim;
}
#endif

template <typename T>
static wk_status cv_run(wk_gpu_ctx *c, const wk_op_args *a, const cv_args &A, bool direct)
{
    const wk_view *d = a->dst;
    const T *x = (const T *)a->src[0]->base, *w = (const T *)a->src[1]->base;
    const T *b = a->src[2] ? (const T *)a->src[2]->base : NULL;
    T *y = (T *)d->base + d->offset;
    const char *name = wk_gpu_op_name(a->op);
    const int64_t L = A.Ho * A.Wo;
    /* depthwise 3x3, stride 1 or 2, contiguous rows: the unrolled kernel
     * (f16, bf16, f32; WICK_CONV_DW3=0 keeps the generic one) */
    const bool dw3 = direct && sizeof(T) <= 4 && !A.tr && A.Cig == 1 && A.Cog == 1 && A.kh == 3 && A.kw == 3 &&
                     A.d0 == 1 && A.d1 == 1 && A.s0 == A.s1 && (A.s0 == 1 || A.s0 == 2) && A.xsw == 1 &&
                     !wk_gpu_env.conv_dw3_off;
    if (dw3) {
        const int64_t Ls = A.Ho * ((A.Wo + CV_DW_V - 1) / CV_DW_V);
        if (A.s0 == 1) cv_dw3<T, 1><<<cv_blocks(A.N * A.Cout), cv_threads(Ls), 0, c->stream>>>(x, w, b, y, A);
        else cv_dw3<T, 2><<<cv_blocks(A.N * A.Cout), cv_threads(Ls), 0, c->stream>>>(x, w, b, y, A);
        WK_GPU_LAUNCH_CHECK(c, name);
        return WK_OK;
    }
    if (direct) {
        cv_direct<T><<<cv_blocks(A.N * A.Cout), cv_threads(L), 0, c->stream>>>(x, w, b, y, A);
        WK_GPU_LAUNCH_CHECK(c, name);
        return WK_OK;
    }
    const int64_t es = (int64_t)sizeof(T);
    const int64_t per = A.G * A.Kp * L * es;
    const long long mb = wk_gpu_env.conv_col_mb;   /* WICK_CONV_COL_MB */
    const int64_t budget = mb > 0 ? (int64_t)mb << 20 : CV_COL_BYTES;
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
    const int mode = wk_gpu_env.conv;   /* WICK_CONV */
    bool direct = A.Cog <= 4 || A.K == 0;
    if (mode == WK_CONV_ENV_DIRECT) direct = true;
    else if (mode == WK_CONV_ENV_GEMM && A.K > 0) direct = false;
    wk_status st = WK_OK;
#if defined(CV_HAVE_IGEMM)
    if (!direct && mode != WK_CONV_ENV_GEMM && cv_igemm_ok(c, dt, A)) {
        if (dt == WK_BF16) return cv_run_igemm<wk_bf16_t>(c, a, A);
        return cv_run_igemm<wk_f16_t>(c, a, A);
    }
#endif
    switch (dt) {
    WK_GPU_CASE_(WK_BF16, wk_bf16_t, T, st = cv_run<T>(c, a, A, direct))
    WK_GPU_CASE_(WK_F16, wk_f16_t, T, st = cv_run<T>(c, a, A, direct))
    WK_GPU_CASE_(WK_F32, float, T, st = cv_run<T>(c, a, A, direct))
    WK_GPU_CASE_(WK_F64, double, T, st = cv_run<T>(c, a, A, direct))
    default: break;
    }
    return st;
}
