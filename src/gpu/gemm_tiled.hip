/* gemm_tiled.hip — wick's own batched GEMM kernel, portable (no vendor
 * intrinsics): d[b] [m, n] = a[b] [m, k] x b[b] [k, n] for any strides of
 * the three operands and any batch layout (stride 0 broadcasts included),
 * f16/bf16/f32 accumulating in f32 and f64 in f64. It is the matmul of
 * the AMD build when rocBLAS is absent, and on NVIDIA runs when
 * WICK_GEMM=tiled (so the same code is tested there).
 *
 * How it is made fast: 128 x 128 output tiles per block of 256 threads,
 * each thread owning an 8 x 8 register block (two 4 x 4 quarters 64 rows
 * and 64 columns apart, so its shared-memory reads are 16-byte vectors
 * without bank conflicts); k advances 8 at a time through double-buffered
 * shared memory (the next slice is fetched into registers while the
 * current one is multiplied, one barrier per slice); operands are stored
 * in shared memory k-major in the compute type (narrow floats converted
 * once, on the way in). Global reads use 4-element vector loads along
 * whichever dim of an operand has stride 1 (k or the row/column dim; a
 * run-time choice per operand, so transposed operands need no copy), with
 * a bounds-checked scalar path for edges, misalignment and general
 * strides. Tiles are visited in groups of 8 tile-rows for L2 reuse.
 * No warp-level operations: the same shape is right for wave32 and wave64.
 */
#include "gpu_internal.h"

#define GT_BM 128
#define GT_BN 128
#define GT_BK 8
#define GT_PAD 4
#define GT_THREADS 256
#define GT_GROUP 8

enum { GT_KVEC = 0, GT_PVEC = 1, GT_ANY = 2 };

/* accumulation type: f64 for f64, f32 otherwise */
/* accumulation type, and blocks per multiprocessor the registers allow */
template <typename T> struct gt_acc {
    typedef float type;
    static constexpr int min_blocks = 2;
};
template <> struct gt_acc<double> {
    typedef double type;
    static constexpr int min_blocks = 1;
};

/* 4 consecutive elements, loaded or stored as one vector */
template <typename T> struct alignas(4 * sizeof(T) > 16 ? 16 : 4 * sizeof(T)) gt_vec4 {
    T e[4];
};
template <typename A> struct alignas(16) gt_quad {
    A e[4];
};

template <typename A> struct gt_smem {
    alignas(16) A a[2][GT_BK][GT_BM + GT_PAD];   /* a tile, k-major: [k][m] */
    alignas(16) A b[2][GT_BK][GT_BN + GT_PAD];   /* b tile, k-major: [k][n] */
};

template <typename T> struct gt_params {
    const T *a;
    const T *b;
    T *d;
    int64_t m, n, k;
    int64_t a_sm, a_sk, b_sk, b_sn, d_sm, d_sn;
    int64_t tiles_m, tiles_n, batch0;
    wk_gpu_layout<3> batch;  /* batch index -> element offsets of a, b, d */
    int a_mode, b_mode;
};

WK_DEV float gt_fma(float x, float y, float z) { return fmaf(x, y, z); }
WK_DEV double gt_fma(double x, double y, double z) { return fma(x, y, z); }

template <typename T> WK_DEV bool gt_aligned(const T *q)
{
    return ((uintptr_t)q % alignof(gt_vec4<T>)) == 0;
}

/* A thread's cursor over one operand: the 4 elements it fetches per k
 * slice lie at q + i*se, se the stride along k (GT_KVEC mode: 4 k values
 * of one row) or along rows (else: 4 rows at one k); koff is the k of
 * element 0 within the slice. Strides come from the kernel parameters
 * (uniform), so a cursor holds only a pointer and two small ints. */
template <typename T> struct gt_cursor {
    const T *q;
    int koff;
    int nvalid;       /* rows in range: KVEC 0 or 4, else 0..4 */
};

template <typename T>
WK_DEV gt_cursor<T> gt_cursor_make(const T *x, int64_t sp, int64_t sk, int mode, int64_t p0, int64_t P, int tid)
{
    gt_cursor<T> c;
    if (mode == GT_KVEC) {
        const int64_t p = p0 + (tid >> 1);
        c.koff = (tid & 1) * 4;
        c.q = x + p * sp + c.koff * sk;
        c.nvalid = p < P ? 4 : 0;
    } else {
        const int64_t p = p0 + (tid & 31) * 4;
        const int64_t left = P - p;
        c.koff = tid >> 5;
        c.q = x + p * sp + c.koff * sk;
        c.nvalid = left <= 0 ? 0 : left >= 4 ? 4 : (int)left;
    }
    return c;
}

/* Fetch the cursor's 4 elements of the slice at k0 (zeros outside the
 * matrix) into registers, then advance it by one slice. */
template <typename T, typename A>
WK_DEV void gt_fetch(gt_cursor<T> &c, int kvec, int64_t sp, int64_t sk, int64_t k0, int64_t K, A r[4])
{
    const int64_t kb = k0 + c.koff;
    const int64_t se = kvec ? sk : sp;
    const bool full = c.nvalid == 4 && (kvec ? kb + 3 < K : kb < K);
    if (full && se == 1 && gt_aligned(c.q)) {
        const gt_vec4<T> v = *(const gt_vec4<T> *)c.q;
#pragma unroll
        for (int i = 0; i < 4; i++) r[i] = (A)wk_load_c(v.e[i]);
    } else {
#pragma unroll
        for (int i = 0; i < 4; i++) {
            const bool ok = kvec ? (c.nvalid > 0 && kb + i < K) : (i < c.nvalid && kb < K);
            r[i] = ok ? (A)wk_load_c(c.q[i * se]) : (A)0;
        }
    }
    c.q += GT_BK * sk;
}

/* Store the fetched registers into the k-major shared tile s[k][p]. */
template <typename A>
WK_DEV void gt_put(A (*s)[GT_BM + GT_PAD], int mode, int tid, const A r[4])
{
    if (mode == GT_KVEC) {
        const int p = tid >> 1, kk = (tid & 1) * 4;
#pragma unroll
        for (int i = 0; i < 4; i++) s[kk + i][p] = r[i];
    } else {
        gt_quad<A> v;
#pragma unroll
        for (int i = 0; i < 4; i++) v.e[i] = r[i];
        *(gt_quad<A> *)&s[tid >> 5][(tid & 31) * 4] = v;
    }
}

template <typename T>
__global__ __launch_bounds__(GT_THREADS, gt_acc<T>::min_blocks) void gt_gemm_kernel(gt_params<T> p)
{
    typedef typename gt_acc<T>::type A;
    __shared__ gt_smem<A> sm;
    const int tid = (int)threadIdx.x;
    const int tx = tid % 16, ty = tid / 16;

    /* tile (tm, tn) of this block, grouped by GT_GROUP tile-rows */
    const int64_t t = blockIdx.x;
    const int64_t gsz = GT_GROUP * p.tiles_n;
    const int64_t fm = (t / gsz) * GT_GROUP;
    const int64_t grows = p.tiles_m - fm < GT_GROUP ? p.tiles_m - fm : GT_GROUP;
    const int64_t tm = fm + (t % gsz) % grows, tn = (t % gsz) / grows;
    const int64_t m0 = tm * GT_BM, n0 = tn * GT_BN;

    {
        const int64_t bi = p.batch0 + blockIdx.y;   /* one batch per block row */
        int64_t off[3];
        wk_gpu_offsets<3>(p.batch, bi, off);
        const T *a = p.a + off[0];
        const T *b = p.b + off[1];
        T *d = p.d + off[2];

        A acc[8][8];
#pragma unroll
        for (int i = 0; i < 8; i++)
#pragma unroll
            for (int j = 0; j < 8; j++) acc[i][j] = (A)0;

        A ra[4], rb[4];
        gt_cursor<T> ca = gt_cursor_make<T>(a, p.a_sm, p.a_sk, p.a_mode, m0, p.m, tid);
        gt_cursor<T> cb = gt_cursor_make<T>(b, p.b_sn, p.b_sk, p.b_mode, n0, p.n, tid);
        gt_fetch<T, A>(ca, p.a_mode == GT_KVEC, p.a_sm, p.a_sk, 0, p.k, ra);
        gt_fetch<T, A>(cb, p.b_mode == GT_KVEC, p.b_sn, p.b_sk, 0, p.k, rb);
        gt_put<A>(sm.a[0], p.a_mode, tid, ra);
        gt_put<A>(sm.b[0], p.b_mode, tid, rb);
        __syncthreads();

        int buf = 0;
        for (int64_t k0 = 0; k0 < p.k; k0 += GT_BK) {
            const bool more = k0 + GT_BK < p.k;
            if (more) {
                gt_fetch<T, A>(ca, p.a_mode == GT_KVEC, p.a_sm, p.a_sk, k0 + GT_BK, p.k, ra);
                gt_fetch<T, A>(cb, p.b_mode == GT_KVEC, p.b_sn, p.b_sk, k0 + GT_BK, p.k, rb);
            }
#pragma unroll
            for (int kk = 0; kk < GT_BK; kk++) {
                const gt_quad<A> a0 = *(const gt_quad<A> *)&sm.a[buf][kk][ty * 4];
                const gt_quad<A> a1 = *(const gt_quad<A> *)&sm.a[buf][kk][64 + ty * 4];
                const gt_quad<A> b0 = *(const gt_quad<A> *)&sm.b[buf][kk][tx * 4];
                const gt_quad<A> b1 = *(const gt_quad<A> *)&sm.b[buf][kk][64 + tx * 4];
                A av[8], bv[8];
#pragma unroll
                for (int i = 0; i < 4; i++) {
                    av[i] = a0.e[i];
                    av[4 + i] = a1.e[i];
                    bv[i] = b0.e[i];
                    bv[4 + i] = b1.e[i];
                }
#pragma unroll
                for (int i = 0; i < 8; i++)
#pragma unroll
                    for (int j = 0; j < 8; j++) acc[i][j] = gt_fma(av[i], bv[j], acc[i][j]);
            }
            if (more) {
                gt_put<A>(sm.a[buf ^ 1], p.a_mode, tid, ra);
                gt_put<A>(sm.b[buf ^ 1], p.b_mode, tid, rb);
            }
            __syncthreads();
            buf ^= 1;
        }

        /* epilogue: rows ty*4+i and 64+ty*4+i, columns tx*4+j and 64+tx*4+j */
#pragma unroll
        for (int i = 0; i < 8; i++) {
            const int64_t row = m0 + (i < 4 ? ty * 4 + i : 64 + ty * 4 + (i - 4));
            if (row >= p.m) continue;
#pragma unroll
            for (int h = 0; h < 2; h++) {
                const int64_t col = n0 + h * 64 + tx * 4;
                T *q = d + row * p.d_sm + col * p.d_sn;
                if (p.d_sn == 1 && col + 3 < p.n && gt_aligned(q)) {
                    gt_vec4<T> v;
#pragma unroll
                    for (int j = 0; j < 4; j++) v.e[j] = wk_to<T>(acc[i][h * 4 + j]);
                    *(gt_vec4<T> *)q = v;
                } else {
#pragma unroll
                    for (int j = 0; j < 4; j++)
                        if (col + j < p.n) d[row * p.d_sm + (col + j) * p.d_sn] = wk_to<T>(acc[i][h * 4 + j]);
                }
            }
        }
    }
}

template <typename T>
static wk_status gt_run(wk_gpu_ctx *c, int64_t m, int64_t n, int64_t k, int nb, const int64_t *bdims,
                        const int64_t *bsa, const int64_t *bsb, const int64_t *bsd, const void *a, int64_t a_sm,
                        int64_t a_sk, const void *b, int64_t b_sk, int64_t b_sn, void *d, int64_t d_sm, int64_t d_sn)
{
    gt_params<T> p;
    memset(&p, 0, sizeof p);
    p.a = (const T *)a;
    p.b = (const T *)b;
    p.d = (T *)d;
    p.m = m;
    p.n = n;
    p.k = k;
    p.a_sm = a_sm;
    p.a_sk = a_sk;
    p.b_sk = b_sk;
    p.b_sn = b_sn;
    p.d_sm = d_sm;
    p.d_sn = d_sn;
    p.a_mode = a_sk == 1 ? GT_KVEC : a_sm == 1 ? GT_PVEC : GT_ANY;
    p.b_mode = b_sn == 1 ? GT_PVEC : b_sk == 1 ? GT_KVEC : GT_ANY;
    p.tiles_m = (m + GT_BM - 1) / GT_BM;
    p.tiles_n = (n + GT_BN - 1) / GT_BN;
    int64_t nbatch = 1;
    p.batch.d.rank = nb;
    for (int i = 0; i < nb; i++) {
        nbatch *= bdims[i];
        p.batch.d.dims[i] = bdims[i];
        p.batch.d.div[i] = wk_divmod32_make(bdims[i] <= (int64_t)UINT32_MAX ? (uint32_t)bdims[i] : 1u);
        p.batch.st[0][i] = bsa[i];
        p.batch.st[1][i] = bsb[i];
        p.batch.st[2][i] = bsd[i];
    }
    p.batch.d.n = nbatch;
    const int64_t tiles = p.tiles_m * p.tiles_n;
    if (tiles > 0x7FFFFFFF)
        return wk_gpu_host->set_error(WK_ERR_SHAPE, "matmul of %lld x %lld is too large for one launch",
                                      (long long)m, (long long)n);
    /* gridDim.y is at most 65535: larger batches take several launches */
    for (int64_t b0 = 0; b0 < nbatch; b0 += 65535) {
        p.batch0 = b0;
        dim3 grid((unsigned)tiles, (unsigned)(nbatch - b0 < 65535 ? nbatch - b0 : 65535));
        gt_gemm_kernel<T><<<grid, GT_THREADS, 0, c->stream>>>(p);
        wk_status st = wk_gpu_launched(c, "matmul (tiled)", __FILE__, __LINE__);
        if (st != WK_OK) return st;
    }
    return WK_OK;
}

/* Called by matmul.hip (declared there). Pointers are at element 0 of
 * each view; strides in elements; bdims/bs*: nb batch dims (outer first). */
wk_status wk_gpu_gemm_tiled(wk_gpu_ctx *c, wk_dtype dt, int64_t m, int64_t n, int64_t k, int nb,
                            const int64_t *bdims, const int64_t *bsa, const int64_t *bsb, const int64_t *bsd,
                            const void *a, int64_t a_sm, int64_t a_sk, const void *b, int64_t b_sk, int64_t b_sn,
                            void *d, int64_t d_sm, int64_t d_sn)
{
    switch (dt) {
    case WK_F32:
        return gt_run<float>(c, m, n, k, nb, bdims, bsa, bsb, bsd, a, a_sm, a_sk, b, b_sk, b_sn, d, d_sm, d_sn);
    case WK_F64:
        return gt_run<double>(c, m, n, k, nb, bdims, bsa, bsb, bsd, a, a_sm, a_sk, b, b_sk, b_sn, d, d_sm, d_sn);
    case WK_F16:
        return gt_run<wk_f16_t>(c, m, n, k, nb, bdims, bsa, bsb, bsd, a, a_sm, a_sk, b, b_sk, b_sn, d, d_sm, d_sn);
    case WK_BF16:
        return gt_run<wk_bf16_t>(c, m, n, k, nb, bdims, bsa, bsb, bsd, a, a_sm, a_sk, b, b_sk, b_sn, d, d_sm, d_sn);
    default:
        return wk_gpu_host->set_error(WK_ERR_UNSUPPORTED, "matmul takes f16, bf16, f32 or f64");
    }
}
