/* matmul.hip — batched strided matmul: dst [B.., m, n] = a [B.., m, k] x
 * b [B.., k, n] for f16, bf16 (both accumulating in f32), f32 (no TF32)
 * and f64, with any strides of a and b (stride 0 on broadcast batch
 * dims) and a contiguous dst.
 *
 * Vendor BLAS: cuBLAS on NVIDIA, rocBLAS on AMD when its header exists at
 * build time. Both are opened at run time (dlopen), so the plugin still
 * needs nothing but the GPU driver: without the library, matmul runs on
 * wick's own tiled kernel (gemm_tiled.hip), which is also what
 * WICK_GEMM=tiled selects, and what the AMD build uses when there is no
 * rocBLAS (Debian 12 has none). One BLAS handle per context, bound to the
 * context's stream, made on first use and destroyed with the context.
 *
 * Mapping: row-major C = A B is column-major C^T = B^T A^T, so the BLAS
 * sees m' = n, n' = m, A' = b, B' = a. A row-major operand whose last
 * stride is 1 is a plain column-major matrix (op N, ld = its row stride);
 * one whose next-to-last stride is 1 (a transposed view) is the transpose
 * of one (op T, ld = its column stride): neither is copied. Batch dims are
 * merged where every operand allows; the innermost merged batch dim is
 * one strided-batched call (stride 0 broadcasts), outer ones loop on the
 * host. Only a matrix layout with no unit stride (or overlapping rows) is
 * first copied to a contiguous buffer (broadcast batch dims stay
 * broadcast, not materialised). The tiled kernel takes every layout as it
 * is.
 *
 * Dense matvec: a 2-d f16/bf16 product whose b is the transposed view of
 * a row-major W (x . W^T, decode's weight matvec), x contiguous along k
 * (wk_gpu_dense_matvec in gemv.hip): one row (m = 1) runs on gemv.hip's
 * kernel at every size (it reads W faster than cuBLAS's split-K on the
 * 16-120 MB matrices of a decode step; WICK_GEMV=0 or WICK_MATVEC=blas
 * turn it off); m <= 8 with W of at most 8 MiB on quant.hip's
 * qmvq_kernel, x read in place, where a BLAS call's host cost outweighs
 * its kernel's edge. Larger W go to the BLAS (cuBLAS 86-92% of the copy
 * rate on an H100, qmvq 84-86%: docs/quantization.md). WICK_MATVEC=wick|blas
 * takes one side for every size, WICK_MATVEC_MAX_KIB moves the line.
 */
#include "gpu_internal.h"
#include <dlfcn.h>
#include <limits.h>
#include <mutex>
#include <stdlib.h>
#include <string.h>

#if defined(WK_GPU_CUDA)
#include <cublas_v2.h>
#define MM_BLAS 1
#elif defined(WK_GPU_HIP) && __has_include(<rocblas/rocblas.h>)
#include <rocblas/rocblas.h>
#define MM_BLAS 2
#else
#define MM_BLAS 0
#endif

/* gemm_tiled.hip */
wk_status wk_gpu_gemm_tiled(wk_gpu_ctx *c, wk_dtype dt, int64_t m, int64_t n, int64_t k, int nb,
                            const int64_t *bdims, const int64_t *bsa, const int64_t *bsb, const int64_t *bsd,
                            const void *a, int64_t a_sm, int64_t a_sk, const void *b, int64_t b_sk, int64_t b_sn,
                            void *d, int64_t d_sm, int64_t d_sn);


/* ------------------------------------------------------------------ */
/* The vendor library, opened once per process                          */

#if MM_BLAS == 1
typedef cublasHandle_t mm_handle_t;
typedef cublasStatus_t mm_status_t;
#define MM_OK CUBLAS_STATUS_SUCCESS
typedef cublasStatus_t (*mm_gemm_fn)(cublasHandle_t, cublasOperation_t, cublasOperation_t, int, int, int,
                                     const void *, const void *, cudaDataType, int, long long, const void *,
                                     cudaDataType, int, long long, const void *, void *, cudaDataType, int,
                                     long long, int, cublasComputeType_t, cublasGemmAlgo_t);
struct mm_lib_t {
    cublasStatus_t (*create)(cublasHandle_t *);
    cublasStatus_t (*destroy)(cublasHandle_t);
    cublasStatus_t (*set_stream)(cublasHandle_t, cudaStream_t);
    cublasStatus_t (*set_math)(cublasHandle_t, cublasMath_t);
    const char *(*status_string)(cublasStatus_t);
    mm_gemm_fn gemm;
};
#define MM_STR_(x) #x
#define MM_STR(x) MM_STR_(x)
static const char *const mm_lib_names[] = { "libcublas.so." MM_STR(CUBLAS_VER_MAJOR), "libcublas.so" };
#define MM_SYMS(X)                                                                 \
    X(create, "cublasCreate_v2") X(destroy, "cublasDestroy_v2")                    \
    X(set_stream, "cublasSetStream_v2") X(set_math, "cublasSetMathMode")           \
    X(status_string, "cublasGetStatusString") X(gemm, "cublasGemmStridedBatchedEx")
#elif MM_BLAS == 2
typedef rocblas_handle mm_handle_t;
typedef rocblas_status mm_status_t;
#define MM_OK rocblas_status_success
struct mm_lib_t {
    decltype(&rocblas_create_handle) create;
    decltype(&rocblas_destroy_handle) destroy;
    decltype(&rocblas_set_stream) set_stream;
    decltype(&rocblas_status_to_string) status_string;
    decltype(&rocblas_gemm_strided_batched_ex) gemm;
};
static const char *const mm_lib_names[] = { "librocblas.so.4", "librocblas.so" };
#define MM_SYMS(X)                                                                 \
    X(create, "rocblas_create_handle") X(destroy, "rocblas_destroy_handle")        \
    X(set_stream, "rocblas_set_stream") X(status_string, "rocblas_status_to_string") \
    X(gemm, "rocblas_gemm_strided_batched_ex")
#endif

#if MM_BLAS
static std::mutex mm_mutex;
static mm_lib_t mm_lib;
static int mm_lib_state;   /* 0 not tried, 1 loaded, -1 absent */

/* The library's functions, or NULL when it is absent. */
static const mm_lib_t *mm_lib_get(void)
{
    std::lock_guard<std::mutex> lock(mm_mutex);
    if (mm_lib_state == 0) {
        mm_lib_state = -1;
        void *dl = NULL;
        for (size_t i = 0; i < sizeof mm_lib_names / sizeof mm_lib_names[0] && !dl; i++)
            dl = dlopen(mm_lib_names[i], RTLD_NOW | RTLD_LOCAL);
        if (dl) {
            bool ok = true;
#define MM_SYM_(field, name)                                                       \
            {                                                                      \
                void *f_ = dlsym(dl, name);                                        \
                if (!f_) ok = false;                                               \
                memcpy(&mm_lib.field, &f_, sizeof f_);                             \
            }
            MM_SYMS(MM_SYM_)
#undef MM_SYM_
            if (ok) mm_lib_state = 1;
            else dlclose(dl);
        }
    }
    return mm_lib_state == 1 ? &mm_lib : NULL;
}

static wk_status mm_fail(const mm_lib_t *L, const char *call, mm_status_t s, int line)
{
    return wk_gpu_fail_lib(call, L->status_string(s), (long)s, __FILE__, line);
}
#define MM_CHECK(L, call)                                                          \
    do {                                                                           \
        mm_status_t mm_s_ = (call);                                                \
        if (mm_s_ != MM_OK) return mm_fail((L), #call, mm_s_, __LINE__);           \
    } while (0)

static void mm_handle_free(wk_gpu_ctx *c, void *h)
{
    (void)c;
    const mm_lib_t *L = mm_lib_get();
    if (L && h) L->destroy((mm_handle_t)h);
}

/* The context's handle, made on first use (bound to its stream). */
static wk_status mm_handle(wk_gpu_ctx *c, const mm_lib_t *L, mm_handle_t *out)
{
    std::lock_guard<std::mutex> lock(mm_mutex);
    if (!c->ext[WK_GPU_EXT_BLAS]) {
        mm_handle_t h;
        MM_CHECK(L, L->create(&h));
        mm_status_t s = L->set_stream(h, c->stream);
#if MM_BLAS == 1
        /* f32 without TF32 (the default math with CUBLAS_COMPUTE_32F);
         * f16/bf16 products reduced in f32, never in the narrow type */
        if (s == MM_OK) s = L->set_math(h, (cublasMath_t)(CUBLAS_DEFAULT_MATH | CUBLAS_MATH_DISALLOW_REDUCED_PRECISION_REDUCTION));
#endif
        if (s != MM_OK) {
            L->destroy(h);
            return mm_fail(L, "binding the BLAS handle to the context's stream", s, __LINE__);
        }
        c->ext[WK_GPU_EXT_BLAS] = (void *)h;
        c->ext_free[WK_GPU_EXT_BLAS] = mm_handle_free;
    }
    *out = (mm_handle_t)c->ext[WK_GPU_EXT_BLAS];
    return WK_OK;
}
#endif /* MM_BLAS */

/* ------------------------------------------------------------------ */
/* Layout analysis                                                     */

/* The operand views a gemm call sees (pointers at element 0). */
struct mm_desc {
    int64_t m, n, k;
    int nb;                                  /* merged batch dims, outer first */
    int64_t bd[WK_MAX_RANK], bsa[WK_MAX_RANK], bsb[WK_MAX_RANK], bsd[WK_MAX_RANK];
    const char *a, *b;
    char *d;
    int64_t a_sm, a_sk, b_sk, b_sn, d_sm, d_sn;
};

static void mm_describe(mm_desc *D, const wk_view *dst, const wk_view *a, const wk_view *b)
{
    const int r = dst->rank;
    D->m = dst->dims[r - 2];
    D->n = dst->dims[r - 1];
    D->k = a->dims[r - 1];
    D->nb = 0;
    for (int d = 0; d < r - 2; d++) {
        const int64_t e = dst->dims[d];
        if (e == 1) continue;
        const int64_t sa = a->strides[d], sb = b->strides[d], sd = dst->strides[d];
        const int q = D->nb - 1;
        if (q >= 0 && D->bsa[q] == sa * e && D->bsb[q] == sb * e && D->bsd[q] == sd * e) {
            D->bd[q] *= e;
            D->bsa[q] = sa;
            D->bsb[q] = sb;
            D->bsd[q] = sd;
        } else {
            D->bd[D->nb] = e;
            D->bsa[D->nb] = sa;
            D->bsb[D->nb] = sb;
            D->bsd[D->nb] = sd;
            D->nb++;
        }
    }
    D->a = wk_gpu_view_ptr(a);
    D->b = wk_gpu_view_ptr(b);
    D->d = wk_gpu_view_ptr(dst);
    D->a_sm = a->strides[r - 2];
    D->a_sk = a->strides[r - 1];
    D->b_sk = b->strides[r - 2];
    D->b_sn = b->strides[r - 1];
    D->d_sm = dst->strides[r - 2];
    D->d_sn = dst->strides[r - 1];
}

#if MM_BLAS
/* A column-major view of a rows x cols matrix whose element (i, j) lies at
 * i*si + j*sj: op N with ld = sj, or op T with ld = si; false when neither
 * (no unit stride, or rows that overlap). */
static bool mm_blas_operand(int64_t rows, int64_t cols, int64_t si, int64_t sj, bool *trans, int64_t *ld)
{
    const int64_t mr = rows > 1 ? rows : 1, mc = cols > 1 ? cols : 1;
    if (si == 1 || rows == 1) {
        const int64_t l = cols == 1 ? mr : sj;
        if (l >= mr && l <= INT_MAX) {
            *trans = false;
            *ld = l;
            return true;
        }
    }
    if (sj == 1 || cols == 1) {
        const int64_t l = rows == 1 ? mc : si;
        if (l >= mc && l <= INT_MAX) {
            *trans = true;
            *ld = l;
            return true;
        }
    }
    return false;
}

/* Copy the operand v into a fresh contiguous buffer; broadcast batch dims
 * are kept broadcast (copied once). out: v's dims over the copy. */
static wk_status mm_make_contiguous(wk_gpu_ctx *c, const wk_view *v, wk_view *out, void **buf)
{
    wk_view src = *v, dv;
    for (int d = 0; d < v->rank - 2; d++)
        if (v->strides[d] == 0) src.dims[d] = 1;
    dv = src;
    int64_t s = 1;
    for (int d = v->rank - 1; d >= 0; d--) {
        dv.strides[d] = s;
        s *= src.dims[d];
    }
    wk_status st = wk_gpu_scratch_alloc(c, (size_t)s * wk_gpu_dtype_size(v->dtype), buf);
    if (st != WK_OK) return st;
    dv.base = *buf;
    dv.offset = 0;
    st = wk_gpu_copy(c, &dv, &src);
    if (st != WK_OK) return st;
    *out = *v;
    out->base = *buf;
    out->offset = 0;
    for (int d = 0; d < v->rank; d++) out->strides[d] = src.dims[d] != v->dims[d] ? 0 : dv.strides[d];
    return WK_OK;
}

/* The BLAS path; *done = false (and WK_OK) when it cannot take the call
 * and the tiled kernel should. */
static wk_status mm_blas(wk_gpu_ctx *c, const wk_view *dst, const wk_view *a0, const wk_view *b0, bool *done)
{
    *done = false;
    const mm_lib_t *L = mm_lib_get();
    if (!L) return WK_OK;
    const int r = dst->rank;
    const int64_t m = dst->dims[r - 2], n = dst->dims[r - 1], k = a0->dims[r - 1];
    if (m > INT_MAX || n > INT_MAX || k > INT_MAX) return WK_OK;

    /* dst must be a plain column-major n x m matrix (it is contiguous) */
    bool tc;
    int64_t ldc;
    if (!mm_blas_operand(n, m, dst->strides[r - 1], dst->strides[r - 2], &tc, &ldc) || tc) return WK_OK;

    /* a' = b as an n x k matrix, b' = a as a k x m matrix; copy if needed */
    wk_view av = *a0, bv = *b0;
    void *abuf = NULL, *bbuf = NULL;
    bool ta = false, tb = false;
    int64_t lda = 1, ldb = 1;
    wk_status st = WK_OK;
    if (!mm_blas_operand(n, k, bv.strides[r - 1], bv.strides[r - 2], &ta, &lda)) {
        st = mm_make_contiguous(c, b0, &bv, &bbuf);
        if (st == WK_OK && !mm_blas_operand(n, k, bv.strides[r - 1], bv.strides[r - 2], &ta, &lda))
            st = wk_gpu_host->set_error(WK_ERR_BACKEND, "matmul: contiguous b has no BLAS layout");
    }
    if (st == WK_OK && !mm_blas_operand(k, m, av.strides[r - 1], av.strides[r - 2], &tb, &ldb)) {
        st = mm_make_contiguous(c, a0, &av, &abuf);
        if (st == WK_OK && !mm_blas_operand(k, m, av.strides[r - 1], av.strides[r - 2], &tb, &ldb))
            st = wk_gpu_host->set_error(WK_ERR_BACKEND, "matmul: contiguous a has no BLAS layout");
    }
    mm_handle_t h = NULL;
    if (st == WK_OK) st = mm_handle(c, L, &h);
    if (st != WK_OK) {
        if (abuf) wk_gpu_scratch_free(c, abuf);
        if (bbuf) wk_gpu_scratch_free(c, bbuf);
        return st;
    }

    mm_desc D;
    mm_describe(&D, dst, &av, &bv);
    const int64_t es = (int64_t)wk_gpu_dtype_size(dst->dtype);
    /* innermost merged batch dim: one strided-batched call; the rest loop */
    int64_t inner = 1, sa = 0, sb = 0, sd = 0, outer = 1;
    if (D.nb > 0) {
        inner = D.bd[D.nb - 1];
        sa = D.bsa[D.nb - 1];
        sb = D.bsb[D.nb - 1];
        sd = D.bsd[D.nb - 1];
        for (int i = 0; i < D.nb - 1; i++) outer *= D.bd[i];
    }
    const float one32 = 1.0f, zero32 = 0.0f;
    const double one64 = 1.0, zero64 = 0.0;
    const bool f64 = dst->dtype == WK_F64;
    const void *alpha = f64 ? (const void *)&one64 : (const void *)&one32;
    const void *beta = f64 ? (const void *)&zero64 : (const void *)&zero32;
#if MM_BLAS == 1
    const cudaDataType ty = dst->dtype == WK_F16 ? CUDA_R_16F : dst->dtype == WK_BF16 ? CUDA_R_16BF
                          : dst->dtype == WK_F32 ? CUDA_R_32F : CUDA_R_64F;
    const cublasComputeType_t ct = f64 ? CUBLAS_COMPUTE_64F : CUBLAS_COMPUTE_32F;
    const cublasOperation_t opa = ta ? CUBLAS_OP_T : CUBLAS_OP_N, opb = tb ? CUBLAS_OP_T : CUBLAS_OP_N;
#else
    const rocblas_datatype ty = dst->dtype == WK_F16 ? rocblas_datatype_f16_r
                              : dst->dtype == WK_BF16 ? rocblas_datatype_bf16_r
                              : dst->dtype == WK_F32 ? rocblas_datatype_f32_r : rocblas_datatype_f64_r;
    const rocblas_datatype ct = f64 ? rocblas_datatype_f64_r : rocblas_datatype_f32_r;
    const rocblas_operation opa = ta ? rocblas_operation_transpose : rocblas_operation_none;
    const rocblas_operation opb = tb ? rocblas_operation_transpose : rocblas_operation_none;
#endif
    for (int64_t o = 0; o < outer && st == WK_OK; o++) {
        /* offsets of outer batch o (row-major over the outer merged dims) */
        int64_t rem = o, oa = 0, ob = 0, od = 0;
        for (int i = D.nb - 2; i >= 0; i--) {
            const int64_t idx = rem % D.bd[i];
            rem /= D.bd[i];
            oa += idx * D.bsa[i];
            ob += idx * D.bsb[i];
            od += idx * D.bsd[i];
        }
        for (int64_t b0i = 0; b0i < inner && st == WK_OK; b0i += INT_MAX) {
            const int cnt = (int)(inner - b0i < INT_MAX ? inner - b0i : INT_MAX);
            const char *pa = D.a + (oa + b0i * sa) * es;
            const char *pb = D.b + (ob + b0i * sb) * es;
            char *pd = D.d + (od + b0i * sd) * es;
#if MM_BLAS == 1
            mm_status_t s = L->gemm(h, opa, opb, (int)n, (int)m, (int)k, alpha, pb, ty, (int)lda, (long long)sb, pa, ty,
                                    (int)ldb, (long long)sa, beta, pd, ty, (int)ldc, (long long)sd, cnt, ct,
                                    CUBLAS_GEMM_DEFAULT);
            if (s != MM_OK) st = mm_fail(L, "cublasGemmStridedBatchedEx", s, __LINE__);
#else
            mm_status_t s = L->gemm(h, opa, opb, (rocblas_int)n, (rocblas_int)m, (rocblas_int)k, alpha, pb, ty,
                                    (rocblas_int)lda, (rocblas_stride)sb, pa, ty, (rocblas_int)ldb,
                                    (rocblas_stride)sa, beta, pd, ty, (rocblas_int)ldc, (rocblas_stride)sd, pd, ty,
                                    (rocblas_int)ldc, (rocblas_stride)sd, (rocblas_int)cnt, ct,
                                    rocblas_gemm_algo_standard, 0, 0);
            if (s != MM_OK) st = mm_fail(L, "rocblas_gemm_strided_batched_ex", s, __LINE__);
#endif
        }
    }
    if (st == WK_OK) st = wk_gpu_launched(c, "matmul (blas)", __FILE__, __LINE__);
    if (abuf) wk_gpu_scratch_free(c, abuf);
    if (bbuf) wk_gpu_scratch_free(c, bbuf);
    *done = true;
    return st;
}
#endif /* MM_BLAS */

/* ------------------------------------------------------------------ */

wk_status wk_gpu_matmul(void *ctx, const wk_view *dst, const wk_view *a, const wk_view *b)
{
    wk_gpu_ctx *c = (wk_gpu_ctx *)ctx;
    if (!wk_gpu_op_takes(WK_OP_MATMUL, dst->dtype))
        return wk_gpu_host->set_error(WK_ERR_UNSUPPORTED, "matmul takes f16, bf16, f32 or f64 (dtype %d given)",
                                      (int)dst->dtype);
    if (dst->rank < 2) return wk_gpu_host->set_error(WK_ERR_SHAPE, "matmul needs rank >= 2");
    WK_GPU_ENTER(c);
    if (wk_gpu_numel(dst) == 0) return WK_OK;
    const int r = dst->rank;
    if (a->dims[r - 1] == 0) {
        const uint64_t zero = 0;
        return wk_gpu_const_set(ctx, dst, &zero);
    }
    if (r == 2) {   /* f16/bf16 matvec, m <= 8, x . W^T (gemv.hip) */
        bool mv = false;
        wk_status mst = wk_gpu_dense_matvec(c, dst, a, b, &mv);
        if (mv || mst != WK_OK) return mst;
    }
#if MM_BLAS
    if (!wk_gpu_env.gemm_tiled) {   /* WICK_GEMM=tiled: wick's kernel */
        bool done;
        wk_status st = mm_blas(c, dst, a, b, &done);
        if (done || st != WK_OK) return st;
    }
#endif
    mm_desc D;
    mm_describe(&D, dst, a, b);
    return wk_gpu_gemm_tiled(c, dst->dtype, D.m, D.n, D.k, D.nb, D.bd, D.bsa, D.bsb, D.bsd, D.a, D.a_sm, D.a_sk, D.b,
                             D.b_sk, D.b_sn, D.d, D.d_sm, D.d_sn);
}
