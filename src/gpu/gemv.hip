/* gemv.hip — the dense product of one row: y [1, n] = x [1, k] . W^T with
 * W [n, k] row-major f16/bf16, as a decode step makes it for every
 * projection, and the dense matvec that matmul.hip tries first for every
 * 2-d f16/bf16 product of m <= 8 rows (wk_gpu_dense_matvec: this kernel
 * for one row, quant.hip's qmvq_kernel for 2 to 8). Also the fused
 * products of one row (backend.h's LINEAR family, wk_gpu_linear): the
 * gate/up product with its SwiGLU gate and the q/k/v product with its
 * rope and cache writes, each one launch summing as this kernel does, or
 * else the device's two ops (src/fused.h).
 *
 * What a decode step needs from it is the device's read rate on matrices
 * of 16 to 120 MB, where the general kernels lose most: on an H200 the
 * BLAS reads a 25 MB W [3072, 4096] at 2.3 TB/s and a 17 MB one at 2.5
 * (split-K and its reduce kernel, a grid of a few dozen tiles), against
 * 4.3 for the 235 MB gate/up matrix. Here one warp owns one row: its
 * lanes read the row in 16-byte vectors, GV_UNROLL loads each in flight
 * before any is used, each beside the same 16 bytes of x (read through
 * the caches: every warp of a multiprocessor reads the same x), f32 sums
 * folded across the warp at the end. Every row's reads are issued at
 * once across the device (a 3072-row W is one wave of blocks), so the
 * time is the bytes over the read rate plus one memory latency, with no
 * second kernel. Staging x in shared memory first (one block-wide wait
 * before the first load of W) measured slower on every shape but the
 * 14336-wide ones (H200, in a graph: W [3072, 4096] 8.1 us staged, 7.6
 * read beside; [4096, 2048] 6.1 and 5.6; [4096, 7168] 16.3 and 16.6;
 * the 8B decode split in two 314 and 321 tokens/s).
 *
 * Launched for programmatic dependent launch (compat.h): the first
 * instruction waits for the work before it.
 *
 * Wave64: W (32 or 64) is the warp of the device; a warp's lanes all take
 * part in the final fold (a whole warp skips a row past n, never part of
 * one). Sums are per lane in order, then a butterfly: the result does not
 * depend on the grid, so every run gives the same bits. */
#include "gpu_internal.h"
#include "../fused.h"
#include <stdlib.h>
#include <string.h>

#define GV_BLOCK 256
#define GV_UNROLL 8

template <typename T> WK_DEV float gv_dot8(const uint4 &a, const uint4 &b)
{
    const T *pa = (const T *)&a, *pb = (const T *)&b;
    float s = 0.0f;
#pragma unroll
    for (int j = 0; j < 8; j++) s += wk_load_c(pa[j]) * wk_load_c(pb[j]);
    return s;
}

/* A warp's sums of N rows of W (r[0..N-1]) beside x, k / 8 16-byte
 * vectors each: a lane adds its vectors of a row in order (lane, lane +
 * W, ...), GV_UNROLL / N loads of each row in flight before any is used,
 * then the warp folds the lanes' sums. Every kernel here sums through
 * it, so a row's sum has the same bits whichever kernel made it. */
template <typename T, int W, int N>
WK_DEV void gv_sums(const uint4 *const (&r)[N], const uint4 *__restrict__ xv, int64_t k, float (&acc)[N])
{
    enum { U = GV_UNROLL / N };
    const int64_t kv = k / 8;
    const int lane = (int)threadIdx.x % W;
#pragma unroll
    for (int j = 0; j < N; j++) acc[j] = 0.0f;
    for (int64_t base = 0; base < kv; base += (int64_t)W * U) {
        uint4 v[N][U], xs[U];
#pragma unroll
        for (int u = 0; u < U; u++) {
            const int64_t i = base + u * W + lane;
            if (i < kv) {
#pragma unroll
                for (int j = 0; j < N; j++) v[j][u] = r[j][i];
                xs[u] = xv[i];
            }
        }
#pragma unroll
        for (int u = 0; u < U; u++) {
            const int64_t i = base + u * W + lane;
            if (i < kv) {
#pragma unroll
                for (int j = 0; j < N; j++) acc[j] += gv_dot8<T>(v[j][u], xs[u]);
            }
        }
    }
#pragma unroll
    for (int j = 0; j < N; j++) acc[j] = wk_warp_sum<W>(acc[j]);
}

template <typename T, int W>
__global__ void __launch_bounds__(GV_BLOCK)
gv_kernel(const T *__restrict__ w, int64_t w_rs, const T *__restrict__ x, T *__restrict__ y, int64_t n, int64_t k)
{
    wk_pdl_wait();
    const int64_t row = (int64_t)blockIdx.x * (GV_BLOCK / W) + (int)threadIdx.x / W;
    if (row >= n) return;                      /* the whole warp */
    const uint4 *const r[1] = { (const uint4 *)(w + row * w_rs) };
    float acc[1];
    gv_sums<T, W, 1>(r, (const uint4 *)x, k, acc);
    if (threadIdx.x % W == 0) y[row] = wk_to<T>(acc[0]);
}

/* whether the kernels here take n rows of W (w_rs elements apart) and x:
 * f16/bf16, W's rows and x 16-byte aligned, k a multiple of 8 */
static bool gv_fits(wk_dtype dt, const void *w, int64_t w_rs, const void *x, int64_t n, int64_t k)
{
    return (dt == WK_BF16 || dt == WK_F16) && k >= 8 && k % 8 == 0 && n >= 1 && (w_rs * 2) % 16 == 0 &&
           wk_gpu_aligned(w, 16) && wk_gpu_aligned(x, 16) && n <= (int64_t)INT32_MAX * (GV_BLOCK / 64);
}

/* GO(T, W) for the dtype (bf16 or f16) and c's warp width */
#define GV_DISPATCH(c, dt, GO)                                                                               \
    do {                                                                                                     \
        if ((dt) == WK_BF16) {                                                                               \
            if ((c)->warp_size == 64) GO(wk_bf16_t, 64);                                                     \
            else GO(wk_bf16_t, 32);                                                                          \
        } else {                                                                                             \
            if ((c)->warp_size == 64) GO(wk_f16_t, 64);                                                      \
            else GO(wk_f16_t, 32);                                                                           \
        }                                                                                                    \
    } while (0)

/* false with WICK_GEMV=0 or WICK_MATVEC=blas (gpu_env.h) */
static bool gv_on(void) { return !wk_gpu_env.gemv_off && wk_gpu_env.matvec != WK_MATVEC_BLAS; }

/* y = x . W^T for one row x when gv_fits (y contiguous); *done false
 * otherwise (nothing launched). w_rs: W's row stride in elements. */
static wk_status gv_gemv(wk_gpu_ctx *c, wk_dtype dt, const void *w, int64_t w_rs, const void *x, void *y, int64_t n,
                         int64_t k, bool *done)
{
    *done = gv_fits(dt, w, w_rs, x, n, k);
    if (!*done) return WK_OK;
    const int rows = GV_BLOCK / c->warp_size;
    const unsigned grid = (unsigned)((n + rows - 1) / rows);
#define GV_GO_(T_, W_)                                                                                      \
    WK_LAUNCH_PDL(c->cc_major >= 9, (gv_kernel<T_, W_>), grid, GV_BLOCK, 0, c->stream, (const T_ *)w, w_rs, \
                  (const T_ *)x, (T_ *)y, n, k)
    GV_DISPATCH(c, dt, GV_GO_);
#undef GV_GO_
    return wk_gpu_launched(c, "matmul (gemv)", __FILE__, __LINE__);
}

/* ---- the dense matvec --------------------------------------------------------
 * What matmul.hip tries first for every 2-d product: dst [m, n] = a [m,
 * k] . b [k, n] for f16/bf16 with m <= 8 and b the transposed view of a
 * row-major W [n, k] (b's strides (1, row stride)), a contiguous along k.
 * One row: gv_kernel above, any size. Else (rows 16-byte aligned, k a
 * multiple of 32) quant.hip's qmvq_kernel with plain 16-bit rows, x read
 * in place, by default only for W of at most 8 MiB (below): on an H100 it
 * reads large W at 84-86% of the copy rate at best, cuBLAS at 86-92%
 * (docs/quantization.md), but a small W's product is bound by the host,
 * where a launch costs less than a BLAS call. *done false: not taken. */
extern "C" wk_status wk_gpu_dense_matvec(void *ctx, const wk_view *dst, const wk_view *a, const wk_view *b, bool *done)
{
    wk_gpu_ctx *c = (wk_gpu_ctx *)ctx;
    *done = false;
    const wk_dtype dt = dst->dtype;
    if ((dt != WK_BF16 && dt != WK_F16) || dst->rank != 2) return WK_OK;
    const int64_t m = dst->dims[0], n = dst->dims[1], k = a->dims[1];
    /* WICK_MATVEC=wick: every such product; auto (the default): those
     * whose W is at most WICK_MATVEC_MAX_KIB KiB (8192), where a BLAS
     * call's host cost outweighs its kernel's edge, as in a small model's
     * decode step (SmolLM2-135M on an H200: 623-657 tokens/s against
     * 391-482 with the BLAS; the 8B's matrices are all larger);
     * WICK_MATVEC=blas: the BLAS for every product */
    /* one row: gemv.hip's kernel, at every size (not with WICK_GEMV=0 or WICK_MATVEC=blas) */
    if (m == 1 && gv_on() && a->dtype == dt && a->strides[1] == 1 && b->strides[0] == 1 &&
        dst->strides[1] == 1) {
        wk_status st = gv_gemv(c, dt, wk_gpu_view_ptr(b), b->strides[1], wk_gpu_view_ptr(a), wk_gpu_view_ptr(dst), n, k,
                               done);
        if (*done || st != WK_OK) return st;
    }
    if (m < 1 || m > 8 || n < 1 || k < 32 || k % 32 != 0) return WK_OK;
    if (wk_gpu_env.matvec == WK_MATVEC_AUTO) {   /* gpu_bench's sweeps set it (and refresh) */
        const long long kib = wk_gpu_env.matvec_max_kib;
        if ((double)n * (double)k * 2.0 > (double)kib * 1024.0) return WK_OK;
    } else if (wk_gpu_env.matvec != WK_MATVEC_WICK) {
        return WK_OK;
    }
    if (b->strides[0] != 1 || ((b->strides[1] * 2) % 16) != 0) return WK_OK;
    const uint8_t *w = (const uint8_t *)wk_gpu_view_ptr(b);
    if (!wk_gpu_aligned(w, 16)) return WK_OK;
    /* x read in place: contiguous along k, rows 8-byte aligned */
    if (a->dtype != dt || a->strides[1] != 1 || (m > 1 && (a->strides[0] * 2) % 8 != 0) ||
        !wk_gpu_aligned(wk_gpu_view_ptr(a), 8))
        return WK_OK;
    *done = true;
    return wk_gpu_qmvq_dense(c, dt, w, b->strides[1] * 2, n, k, dst, a);
}

/* ---- the gate/up product with its gate ---------------------------------------
 * y [F] = silu(x . W[:F]^T) * (x . W[F:]^T) (wk_linear_silu_mul, one row):
 * a warp owns output j and sums rows j and F + j of W (gv_sums: as many
 * loads in flight as gv_kernel's), so each half's sum, rounded to T, has
 * the bits of gv_kernel's product of that half; the gate then as
 * elementwise.hip's silu_mul computes it for T (the device's approximate
 * exp and division for f16/bf16). One launch instead of the product and
 * the silu_mul after it. */
template <typename T, int W>
__global__ void __launch_bounds__(GV_BLOCK)
gv_glu_kernel(const T *__restrict__ w, int64_t w_rs, const T *__restrict__ x, T *__restrict__ y, int64_t F, int64_t k)
{
    wk_pdl_wait();
    const int64_t j = (int64_t)blockIdx.x * (GV_BLOCK / W) + (int)threadIdx.x / W;
    if (j >= F) return;                        /* the whole warp */
    const uint4 *const r[2] = { (const uint4 *)(w + j * w_rs), (const uint4 *)(w + (F + j) * w_rs) };
    float acc[2];
    gv_sums<T, W, 2>(r, (const uint4 *)x, k, acc);
    if (threadIdx.x % W == 0) {
        const float g = wk_load_c(wk_to<T>(acc[0])), u = wk_load_c(wk_to<T>(acc[1]));
        y[j] = wk_to<T>(__fdividef(g, 1.0f + __expf(-g)) * u);
    }
}

/* LINEAR_SILU_MUL in one launch where wk_gpu_dense_matvec would send the
 * product of these operands to gv_kernel (gv_on, gv_fits), so that the
 * bits are the product's and silu_mul's; *done false (nothing launched)
 * otherwise, and with WICK_GPU_GLU=0 (the two launches, for
 * comparisons). */
static wk_status gv_silu_mul(wk_gpu_ctx *c, const wk_op_args *a, bool *done)
{
    const bool off = wk_gpu_env.glu_off;
    const wk_dtype dt = a->dst->dtype;
    const void *x = wk_gpu_view_ptr(a->src[0]), *w = wk_gpu_view_ptr(a->src[1]);
    const int64_t w_rs = a->src[1]->strides[a->src[1]->rank - 1], k = a->src[0]->dims[a->src[0]->rank - 1];
    const int64_t F = wk_view_numel(a->dst);   /* dst [F], coalesced (rank 0 when F is 1) */
    void *y = wk_gpu_view_ptr(a->dst);
    *done = !off && gv_on() && gv_fits(dt, w, w_rs, x, F, k);
    if (!*done) return WK_OK;
    WK_GPU_ENTER(c);
    const int rows = GV_BLOCK / c->warp_size;
    const unsigned grid = (unsigned)((F + rows - 1) / rows);
#define GV_GLU_(T_, W_)                                                                                       \
    WK_LAUNCH_PDL(c->cc_major >= 9, (gv_glu_kernel<T_, W_>), grid, GV_BLOCK, 0, c->stream, (const T_ *)w, w_rs, \
                  (const T_ *)x, (T_ *)y, F, k)
    GV_DISPATCH(c, dt, GV_GLU_);
#undef GV_GLU_
    return wk_gpu_launched(c, "linear_silu_mul", __FILE__, __LINE__);
}

/* ---- the q/k/v product with its rope and cache writes -----------------------
 * wk_linear_rope_kv for one row: qkv [H, D] = x . W^T (H = nq + 2 hkv
 * heads) then rope_kv of it, in one launch. A warp owns one pair of a
 * head and sums its rows (i, i + D/2) or (2i, 2i + 1) of W (gv_sums),
 * each sum rounded to T as gv_kernel rounds it; then as nn.hip's
 * nn_rope_kv: a query pair
 * turned into q, a key pair turned into row p of the key cache, a value
 * pair as it is into the value cache's (p = pos0 + the position in
 * device memory when ppos is set; a query at p past the tables or caches
 * is zeros and its keys and values are not written). */
struct gv_rope_args {
    int64_t half, nq, hkv;
    int64_t kh, kp, vh, vp;            /* the caches' strides of head and position */
    int64_t rows;                      /* positions of the tables and both caches  */
    int64_t pos0;
    const void *ppos;
    int pos64, inter;
};

template <typename T, int W>
__global__ void __launch_bounds__(GV_BLOCK)
gv_rope_kernel(const T *__restrict__ w, int64_t w_rs, const T *__restrict__ x, T *__restrict__ q, T *__restrict__ kc,
               T *__restrict__ vc, const float *__restrict__ ctab, const float *__restrict__ stab, int64_t k,
               gv_rope_args a)
{
    typedef typename wk_type<T>::C C;
    wk_pdl_wait();
    const int64_t e = (int64_t)blockIdx.x * (GV_BLOCK / W) + (int)threadIdx.x / W;
    if (e >= (a.nq + 2 * a.hkv) * a.half) return;   /* the whole warp */
    const int64_t h = e / a.half, i = e % a.half, D = 2 * a.half;
    const int64_t i0 = a.inter ? 2 * i : i, i1 = a.inter ? 2 * i + 1 : i + a.half;
    const uint4 *const r[2] = { (const uint4 *)(w + (h * D + i0) * w_rs), (const uint4 *)(w + (h * D + i1) * w_rs) };
    float s[2];
    gv_sums<T, W, 2>(r, (const uint4 *)x, k, s);
    if (threadIdx.x % W != 0) return;
    int64_t p = a.pos0;
    if (a.ppos) p += a.pos64 ? *(const int64_t *)a.ppos : (int64_t)*(const uint32_t *)a.ppos;
    const bool in = p >= 0 && p < a.rows;
    T *o;
    if (h < a.nq) o = q + h * D;
    else if (!in) return;
    else if (h < a.nq + a.hkv) o = kc + (h - a.nq) * a.kh + p * a.kp;
    else o = vc + (h - a.nq - a.hkv) * a.vh + p * a.vp;
    if (!in) {
        o[i0] = wk_to<T>((C)0);
        o[i1] = wk_to<T>((C)0);
        return;
    }
    C y0 = (C)wk_load_c(wk_to<T>(s[0])), y1 = (C)wk_load_c(wk_to<T>(s[1]));
    if (h < a.nq + a.hkv) wk_rope_turn<C>(y0, y1, (C)ctab[p * a.half + i], (C)stab[p * a.half + i]);
    o[i0] = wk_to<T>(y0);
    o[i1] = wk_to<T>(y1);
}

/* LINEAR_ROPE_KV in one launch where wk_gpu_dense_matvec would send the
 * product of these operands to gv_kernel (gv_on, gv_fits) and rope_kv's
 * operands are a single row (B = T = 1) with f32 tables; *done false
 * (nothing launched) otherwise, and with WICK_GPU_ROPE_FUSE=0 (the two
 * launches, for comparisons). */
static wk_status gv_rope_kv(wk_gpu_ctx *c, const wk_op_args *a, bool *done)
{
    const bool off = wk_gpu_env.rope_fuse_off;
    *done = false;
    const wk_op_args *r = wk_linear_then(a);
    const void *x = wk_gpu_view_ptr(a->src[0]), *w = wk_gpu_view_ptr(a->src[1]);
    const int64_t w_rs = a->src[1]->strides[a->src[1]->rank - 1], k = a->src[0]->dims[a->src[0]->rank - 1];
    const wk_rope_kv_params *rp = (const wk_rope_kv_params *)r->params;
    if (off || !gv_on() || r->op != WK_OP_ROPE_KV || !rp || !rp->k_cache || !rp->v_cache) return WK_OK;
    const wk_view *qv = r->src[0], *d = r->dst, *cv = r->src[1], *sv = r->src[2], *pv = r->src[3];
    const wk_view *kv = rp->k_cache, *vv = rp->v_cache;
    const wk_dtype dt = qv->dtype;
    if (qv->rank != 4 || qv->dims[0] != 1 || qv->dims[1] != 1 || kv->rank != 4 || vv->rank != 4 ||
        !wk_gpu_is_contiguous(d) || d->dtype != dt || kv->dtype != dt || vv->dtype != dt)
        return WK_OK;
    const int64_t H = qv->dims[2], D = qv->dims[3], half = D / 2;
    if (D % 2 || D < 2 || kv->strides[3] != 1 || vv->strides[3] != 1 || cv->dtype != WK_F32 || sv->dtype != WK_F32 ||
        cv->dims[1] != half || !wk_gpu_is_contiguous(cv) || !wk_gpu_is_contiguous(sv) ||
        (pv && pv->dtype != WK_U32 && pv->dtype != WK_I64) || !gv_fits(dt, w, w_rs, x, H * D, k))
        return WK_OK;
    *done = true;
    WK_GPU_ENTER(c);
    gv_rope_args ga;
    memset(&ga, 0, sizeof ga);
    ga.half = half, ga.nq = rp->n_q, ga.hkv = (H - rp->n_q) / 2;
    ga.kh = kv->strides[1], ga.kp = kv->strides[2], ga.vh = vv->strides[1], ga.vp = vv->strides[2];
    int64_t rows = cv->dims[0] < sv->dims[0] ? cv->dims[0] : sv->dims[0];
    if (kv->dims[2] < rows) rows = kv->dims[2];
    if (vv->dims[2] < rows) rows = vv->dims[2];
    ga.rows = rows;
    ga.pos0 = (int64_t)r->p[0];
    ga.ppos = pv ? (const void *)wk_gpu_view_ptr(pv) : NULL;
    ga.pos64 = pv && pv->dtype == WK_I64;
    ga.inter = rp->interleaved != 0;
    const int per = GV_BLOCK / c->warp_size;
    const unsigned grid = (unsigned)((H * half + per - 1) / per);
    const float *pc = (const float *)wk_gpu_view_ptr(cv), *ps = (const float *)wk_gpu_view_ptr(sv);
#define GV_ROPE_(T_, W_)                                                                                        \
    WK_LAUNCH_PDL(c->cc_major >= 9, (gv_rope_kernel<T_, W_>), grid, GV_BLOCK, 0, c->stream, (const T_ *)w, w_rs, \
                  (const T_ *)x, (T_ *)wk_gpu_view_ptr(d), (T_ *)wk_gpu_view_ptr(kv), (T_ *)wk_gpu_view_ptr(vv), pc, \
                  ps, k, ga)
    GV_DISPATCH(c, dt, GV_ROPE_);
#undef GV_ROPE_
    return wk_gpu_launched(c, "linear_rope_kv", __FILE__, __LINE__);
}

/* ---- the LINEAR family's entry point ----------------------------------------
 * One launch where the kernels above take the operands; otherwise the two
 * ops the fused one stands for (fused.h): the device's MATMUL into
 * scratch, then the op that follows, through the op table. */
extern "C" wk_status wk_gpu_linear(void *ctx, const wk_op_args *a)
{
    wk_gpu_ctx *c = (wk_gpu_ctx *)ctx;
    bool done = false;
    wk_status st = a->op == WK_OP_LINEAR_SILU_MUL ? gv_silu_mul(c, a, &done)
                 : a->op == WK_OP_LINEAR_ROPE_KV  ? gv_rope_kv(c, a, &done)
                                                  : WK_OK;
    if (done || st != WK_OK) return st;
    void *y = NULL;
    st = wk_gpu_scratch_alloc(c, wk_linear_y_bytes(a), &y);
    if (st != WK_OK) return st;
    st = wk_linear_composed(wk_gpu_op_table(), c, a, y);
    wk_gpu_scratch_free(c, y);
    return st;
}
