/* elementwise.hip — unary ops (incl. affine, powf, elu), binary ops (incl.
 * silu_mul: silu(a) * b, float dtypes), comparisons and where_cond on the
 * GPU, every dtype.
 *
 * One templated body per op family: typed load -> compute (f32 for the
 * narrow floats, the dtype itself otherwise) -> typed store. Kernels are
 * templated on the dtype only; the op is a kernel argument switched on
 * once per thread OUTSIDE the element loop (each case is its own
 * specialised loop), so the count stays near families x dtypes x 2.
 *
 * How it is made fast: the contiguous path moves 16-byte units (wk_vec:
 * 4 x f32, 8 x bf16, ...) through wk_gpu_stream: each thread loads
 * wk_gpu_stream_units of its block's tile (gpu_internal.h: one unit for
 * f32, two for bf16) before computing and storing any, one
 * tile per block, so the grid
 * covers the tensor in one pass; the heavy math (sin, log, erf, pow, ...)
 * takes 4 elements and one unit at a time. Elements past the last whole
 * vector go one by one; a pointer not 16-byte aligned sends the whole op
 * through the same stream one element at a time. Rank-2 broadcast
 * arithmetic ([R, C] with a row [C] or a column [R, 1], the bias and
 * per-row scale of model code) streams dst in 16-byte units too, the
 * unit's row found by one multiply-high division (ew_bcast_run). A
 * transposed or permuted input reaches the contiguous path as well: the
 * core gives the result the input's dense layout and orders the dims by
 * the destination's strides (src/core/layout.c). The strided path (any
 * strides, stride 0 for broadcast) computes offsets with 32-bit multiply-high
 * division when the launch is under 2^32 elements (wk_gpu_offsets), after
 * the host merged every dim the operands allow; there the op is switched
 * per element (a uniform branch) so the offset code exists once. Contiguous
 * launches of at most EW_SMALL_N elements take a kernel of one element per
 * thread and no loop (ew_unary_small, ew_arith_small), launched through
 * WK_LAUNCH_LIGHT (compat.h): chains of small dependent ops cost the
 * host's time per launch and each kernel's own time. Block size is 8 warps
 * (256 threads on wave32, 512 on wave64). affine uses __fmul_rn/__dmul_rn
 * so that x*mul+add is never contracted into an fma (the CPU rounds the
 * product). gelu is computed as x / (1 + exp(-2u)), which equals
 * 0.5 x (1 + tanh u) and costs what silu costs. The narrow dtypes (whose
 * kernels must move twice the elements per byte of f32) use the
 * hardware's approximate f32 exp and division for exp, silu and gelu: a
 * few f32 ulp, far below the half ulp of bf16/f16/f8 their result is
 * rounded to.
 */
#include "gpu_internal.h"
#include <math.h>

/* ---- math by compute type (f32 or f64) ------------------------------------ */

#define EW_MATH1_(name, f32, f64)                                                  \
    WK_DEV float name(float x) { return f32(x); }                                  \
    WK_DEV double name(double x) { return f64(x); }
EW_MATH1_(ew_expm1, expm1f, expm1)
EW_MATH1_(ew_log, logf, log)
EW_MATH1_(ew_sin, sinf, sin)
EW_MATH1_(ew_cos, cosf, cos)
EW_MATH1_(ew_tanh, tanhf, tanh)
EW_MATH1_(ew_sqrt, sqrtf, sqrt)
EW_MATH1_(ew_erf, erff, erf)
EW_MATH1_(ew_fabs, fabsf, fabs)
EW_MATH1_(ew_floor, floorf, floor)
EW_MATH1_(ew_ceil, ceilf, ceil)
EW_MATH1_(ew_rint, rintf, rint)
#undef EW_MATH1_
WK_DEV float ew_pow(float x, float e) { return powf(x, e); }
WK_DEV double ew_pow(double x, double e) { return pow(x, e); }
WK_DEV float ew_mul_rn(float a, float b) { return __fmul_rn(a, b); }
WK_DEV double ew_mul_rn(double a, double b) { return __dmul_rn(a, b); }

/* Integer helpers: arithmetic modulo 2^bits, no signed overflow. */
template <typename T> WK_DEV T ew_wrap(uint64_t v) { return (T)(typename std::make_unsigned<T>::type)v; }
template <typename T> WK_DEV uint64_t ew_u64(T v) { return (uint64_t)(typename std::make_unsigned<T>::type)v; }

/* ---- unary ------------------------------------------------------------------ */

struct ew_params {
    double p0, p1;     /* affine: mul, add; powf: exponent; elu: alpha */
};

/* the ops integers take: those whose op_list.h dtypes include them */
template <typename T> __host__ __device__ constexpr bool ew_unary_ok(int op)
{
    return wk_type<T>::is_float || (wk_op_dtypes(op) & WK_DT_INTS) != 0;
}

/* exp and x / y for the narrow dtypes: the hardware's approximate f32
 * forms (a few ulp of f32, far below half an ulp of bf16/f16/f8, whose
 * rounding follows); full-precision library calls otherwise. They keep
 * the narrow kernels memory bound (twice the elements per byte of f32). */
template <bool FAST> WK_DEV float ew_exp_n(float x) { if constexpr (FAST) return __expf(x); else return expf(x); }
template <bool FAST> WK_DEV double ew_exp_n(double x) { return exp(x); }
template <bool FAST> WK_DEV float ew_div_n(float x, float y)
{
    if constexpr (FAST) return __fdividef(x, y);
    else return x / y;
}
template <bool FAST> WK_DEV double ew_div_n(double x, double y) { return x / y; }

/* OP on the compute value x (f32 or f64); FAST for narrow dtypes. */
template <int OP, bool FAST, typename C> WK_DEV C ew_unary_float(C x, ew_params p)
{
    const C one = (C)1, zero = (C)0, half = (C)0.5;
    if constexpr (OP == WK_OP_EXP) return ew_exp_n<FAST>(x);
    else if constexpr (OP == WK_OP_LOG) return ew_log(x);
    else if constexpr (OP == WK_OP_SIN) return ew_sin(x);
    else if constexpr (OP == WK_OP_COS) return ew_cos(x);
    else if constexpr (OP == WK_OP_TANH) return ew_tanh(x);
    else if constexpr (OP == WK_OP_ABS) return ew_fabs(x);
    else if constexpr (OP == WK_OP_NEG) return -x;
    else if constexpr (OP == WK_OP_RECIP) return one / x;
    else if constexpr (OP == WK_OP_SQR) return x * x;
    else if constexpr (OP == WK_OP_SQRT) return ew_sqrt(x);
    else if constexpr (OP == WK_OP_GELU) {
        /* 0.5 x (1 + tanh u) = x / (1 + exp(-2u)): the same function
         * without tanh's cost or the cancellation of 1 + tanh u near -1 */
        const C k2 = (C)1.5957691216057307117597842397375, a = (C)0.044715;   /* 2 sqrt(2/pi) */
        return ew_div_n<FAST>(x, one + ew_exp_n<FAST>(-k2 * (x + a * x * x * x)));
    } else if constexpr (OP == WK_OP_GELU_ERF) {
        return half * x * (one + ew_erf(x * (C)0.70710678118654752440084436210485));
    } else if constexpr (OP == WK_OP_ERF) return ew_erf(x);
    else if constexpr (OP == WK_OP_RELU) return x < zero ? zero : x;       /* NaN stays NaN */
    else if constexpr (OP == WK_OP_SILU) return ew_div_n<FAST>(x, one + ew_exp_n<FAST>(-x));
    else if constexpr (OP == WK_OP_FLOOR) return ew_floor(x);
    else if constexpr (OP == WK_OP_CEIL) return ew_ceil(x);
    else if constexpr (OP == WK_OP_ROUND) return ew_rint(x);               /* half to even */
    else if constexpr (OP == WK_OP_SIGN) return x > zero ? one : x < zero ? -one : x;
    else if constexpr (OP == WK_OP_AFFINE) return ew_mul_rn(x, (C)p.p0) + (C)p.p1;
    else if constexpr (OP == WK_OP_POWF) return ew_pow(x, (C)p.p0);
    else if constexpr (OP == WK_OP_ELU) return x > zero ? x : (C)p.p0 * ew_expm1(x);
    else if constexpr (OP == WK_OP_SIGMOID) return ew_div_n<FAST>(one, one + ew_exp_n<FAST>(-x));
    else {
        static_assert(OP < 0, "a unary op of src/op_list.h has no float kernel body here");
        return x;
    }
}

template <int OP, typename T> WK_DEV T ew_unary_int(T x, ew_params p)
{
    constexpr bool sgn = std::is_signed<T>::value;
    if constexpr (OP == WK_OP_ABS) {
        if constexpr (sgn) return x < (T)0 ? ew_wrap<T>((uint64_t)0 - ew_u64(x)) : x;
        else return x;
    }
    else if constexpr (OP == WK_OP_NEG) return ew_wrap<T>((uint64_t)0 - ew_u64(x));
    else if constexpr (OP == WK_OP_SQR) return ew_wrap<T>(ew_u64(x) * ew_u64(x));
    else if constexpr (OP == WK_OP_RELU) {
        if constexpr (sgn) return x < (T)0 ? (T)0 : x;
        else return x;
    } else if constexpr (OP == WK_OP_SIGN) {
        if constexpr (sgn) return x > (T)0 ? (T)1 : x < (T)0 ? (T)-1 : (T)0;
        else return x > (T)0 ? (T)1 : (T)0;
    }
    else if constexpr (OP == WK_OP_AFFINE) return wk_to<T>(__dmul_rn((double)x, p.p0) + p.p1);
    else if constexpr (OP == WK_OP_FLOOR || OP == WK_OP_CEIL || OP == WK_OP_ROUND) return x;
    else {
        static_assert(OP < 0, "a unary op that op_list.h gives integer dtypes has no integer kernel body here");
        return x;
    }
}

template <int OP, typename T> WK_DEV T ew_unary_elem(T x, ew_params p)
{
    if constexpr (wk_type<T>::is_float) {
        typedef typename wk_type<T>::C C;
        return wk_to<T>(ew_unary_float<OP, wk_type<T>::is_narrow, C>(wk_load_c(x), p));
    } else {
        return ew_unary_int<OP, T>(x, p);
    }
}

/* Elements per thread-step of the contiguous path: a 16-byte unit for the
 * ops that must run at memory speed; at most 4 for the heavier math (sin,
 * cos, log, pow, erf, ...), whose bodies unrolled 8 or 16 times would
 * bloat the narrow-dtype kernels for no gain (they are compute bound). */
template <typename T> __host__ __device__ constexpr int ew_unary_width(int op)
{
    return (op == WK_OP_EXP || op == WK_OP_SILU || op == WK_OP_SIGMOID || op == WK_OP_GELU || op == WK_OP_AFFINE || op == WK_OP_NEG ||
            op == WK_OP_ABS || op == WK_OP_RELU || op == WK_OP_SQR || op == WK_OP_RECIP || op == WK_OP_SQRT ||
            !wk_type<T>::is_float || wk_vec_width<T> < 4)
               ? wk_vec_width<T>
               : 4;
}

/* Units in flight per thread: wk_gpu_stream_units for the memory-bound ops
 * (those taking a whole 16-byte unit), 1 for the heavy math. */
template <typename T> __host__ __device__ constexpr int ew_unary_unroll(int op)
{
    return ew_unary_width<T>(op) == wk_vec_width<T> ? wk_gpu_stream_units(wk_vec_width<T>, (int)sizeof(T)) : 1;
}

template <int OP, typename T>
WK_DEV void ew_unary_contig_run(const T *__restrict__ src, T *__restrict__ dst, int64_t n, int vec, ew_params p)
{
    constexpr int V = ew_unary_width<T>(OP), U = ew_unary_unroll<T>(OP);
    if (vec) {
        const int64_t nv = n / V;
        const wk_vec<T, V> *s = (const wk_vec<T, V> *)src;
        wk_vec<T, V> *d = (wk_vec<T, V> *)dst;
        wk_gpu_stream<U>(nv, [&](int64_t i) { return s[i]; }, [&](int64_t i, const wk_vec<T, V> &x) {
            wk_vec<T, V> y;
            if constexpr (std::is_same<T, wk_bf16_t>::value && V % 2 == 0) {   /* bf16: round in pairs */
#pragma unroll
                for (int k = 0; k < V; k += 2)
                    wk_fast_f32x2_to_bf16x2(ew_unary_float<OP, true, float>(wk_load_c(x.v[k]), p),
                                            ew_unary_float<OP, true, float>(wk_load_c(x.v[k + 1]), p), &y.v[k]);
            } else {
#pragma unroll
                for (int k = 0; k < V; k++) y.v[k] = ew_unary_elem<OP>(x.v[k], p);
            }
            d[i] = y;
        });
        WK_GPU_FOR(i, n - nv * V) {
            const int64_t j = nv * V + i;
            dst[j] = ew_unary_elem<OP>(src[j], p);
        }
    } else {
        wk_gpu_stream<U>(n, [&](int64_t i) { return src[i]; },
                         [&](int64_t i, T x) { dst[i] = ew_unary_elem<OP>(x, p); });
    }
}

/* The case list of the unary family, from src/op_list.h (kinds U and P):
 * EW_RUN_(op), defined by the user of the list, runs one op. An op whose
 * kernel body is missing from ew_unary_float / ew_unary_int falls into
 * their static_assert. */
#define EW_UCASE_(K, N, S, P, D) EW_UCASE_##K(N)
#define EW_UCASE_U(N)                                                                \
    case WK_OP_##N:                                                                  \
        if constexpr (ew_unary_ok<T>(WK_OP_##N)) EW_RUN_(WK_OP_##N);                 \
        break;
#define EW_UCASE_P(N) EW_UCASE_U(N)
#define EW_UCASE_B(N)
#define EW_UCASE_C(N)
#define EW_UCASE_R(N)
#define EW_UCASE_O(N)
#define EW_UNARY_CASES WK_OP_LIST(EW_UCASE_)

template <typename T>
__global__ void __launch_bounds__(WK_GPU_EW_MAX_BLOCK)
ew_unary_contig(const T *src, T *dst, int64_t n, int op, int vec, ew_params p)
{
#define EW_RUN_(OP) ew_unary_contig_run<OP, T>(src, dst, n, vec, p)
    switch (op) { EW_UNARY_CASES default: break; }
#undef EW_RUN_
}

/* strided: offsets once per element, then the op (a uniform branch) */
template <typename T>
__global__ void __launch_bounds__(WK_GPU_EW_MAX_BLOCK)
ew_unary_strided(wk_gpu_layout<2> L, const T *src, T *dst, int op, ew_params p)
{
    WK_GPU_FOR(i, L.d.n) {
        int64_t o[2];
        wk_gpu_offsets(L, i, o);
        T x = src[o[1]], y = x;
#define EW_RUN_(OP) y = ew_unary_elem<OP>(x, p)
        switch (op) { EW_UNARY_CASES default: break; }
#undef EW_RUN_
        dst[o[0]] = y;
    }
}

/* Small contiguous launches (n <= EW_SMALL_N): one element per thread, no
 * vector units, no loop: the least code a kernel can run, since for
 * chains of small dependent ops (scalars, decode-time vectors) the
 * kernel's own time on the device is what the next op waits for. */
#define EW_SMALL_N 4096

template <typename T>
__global__ void __launch_bounds__(WK_GPU_EW_MAX_BLOCK)
ew_unary_small(const T *src, T *dst, int n, int op, ew_params p)
{
    const int i = (int)(blockIdx.x * blockDim.x + threadIdx.x);
    if (i >= n) return;
    T x = src[i], y = x;
#define EW_RUN_(OP) y = ew_unary_elem<OP>(x, p)
    switch (op) { EW_UNARY_CASES default: break; }
#undef EW_RUN_
    dst[i] = y;
}

/* threads per block of a small launch: n rounded up to whole warps */
static int ew_small_block(const wk_gpu_ctx *c, int64_t n)
{
    const int w = c->warp_size, b = (int)((n + w - 1) / w) * w;
    return b < wk_gpu_stream_block(c) ? b : wk_gpu_stream_block(c);
}

/* Blocks for a contiguous launch of n elements, V per unit, U units per
 * thread (wk_gpu_stream). */
static unsigned ew_grid(int64_t n, int v, int block, int u)
{
    return wk_gpu_stream_grid((n + v - 1) / v, block, u);
}

/* The streaming block for n elements (v a unit, u units a thread): the
 * tuned block, halved (down to one warp) while the tiles would not reach
 * every multiprocessor. A decode step's silu_mul of 14336 bf16 made 7
 * tiles of 128 threads: 7 of 132 multiprocessors working, each thread
 * through 16 elements one after another. */
static int ew_stream_block(const wk_gpu_ctx *c, int64_t n, int v, int u)
{
    int b = wk_gpu_stream_block(c);
    while (b > c->warp_size && (int64_t)ew_grid(n, v, b, u) < c->sm_count) b /= 2;
    return b;
}

static wk_status ew_bad(const char *what, wk_op op, wk_dtype dt)
{
    return wk_gpu_host->set_error(WK_ERR_UNSUPPORTED, "%s: op %d is not supported for %s on %s", what, (int)op,
                                  wk_gpu_dtype_name(dt), WK_GPU_PLATFORM);
}

wk_status wk_gpu_unary(void *ctx, wk_op op, const wk_view *dst, const wk_view *src, double p0, double p1)
{
    wk_gpu_ctx *c = (wk_gpu_ctx *)ctx;
    if (!wk_gpu_op_takes(op, dst->dtype) || src->dtype != dst->dtype)
        return ew_bad("unary", op, dst->dtype);
    int64_t n = wk_gpu_numel(dst);
    if (n == 0) return WK_OK;
    WK_GPU_ENTER(c);
    const int block = wk_gpu_ew_block(c);
    ew_params p = { p0, p1 };
    if (wk_gpu_is_contiguous(dst) && wk_gpu_is_contiguous(src)) {
        void *d = wk_gpu_view_ptr(dst);
        const void *s = wk_gpu_view_ptr(src);
        int vec = wk_gpu_aligned(d, 16) && wk_gpu_aligned(s, 16);
        if (n <= EW_SMALL_N) {
            const int b = ew_small_block(c, n);
            WK_GPU_DISPATCH_ALL(dst->dtype, T, {
                WK_LAUNCH_LIGHT(ew_unary_small<T>, (unsigned)((n + b - 1) / b), b, c->stream, (const T *)s, (T *)d,
                                (int)n, (int)op, p);
            })
        } else {
            WK_GPU_DISPATCH_ALL(dst->dtype, T, {
                const int V = ew_unary_width<T>(op);
                const int sblock = ew_stream_block(c, n, vec ? V : 1, ew_unary_unroll<T>(op));
                ew_unary_contig<T><<<ew_grid(n, vec ? V : 1, sblock, ew_unary_unroll<T>(op)), sblock, 0,
                                     c->stream>>>((const T *)s, (T *)d, n, (int)op, vec, p);
            })
        }
    } else {
        wk_gpu_layout<2> L;
        const wk_view *v[2] = { dst, src };
        wk_gpu_layout_make<2>(&L, v);
        WK_GPU_DISPATCH_ALL(dst->dtype, T, {
            ew_unary_strided<T><<<wk_gpu_grid(c, n, block, 4), block, 0, c->stream>>>(
                L, (const T *)src->base, (T *)dst->base, (int)op, p);
        })
    }
    WK_GPU_LAUNCH_CHECK(c, "unary");
    return WK_OK;
}

/* ---- binary and cmp ----------------------------------------------------------- */

template <int OP, typename T> WK_DEV T ew_arith_elem(T a, T b)
{
    if constexpr (wk_type<T>::is_float) {
        typedef typename wk_type<T>::C C;
        C x = wk_load_c(a), y = wk_load_c(b), r;
        if constexpr (OP == WK_OP_ADD) r = x + y;
        else if constexpr (OP == WK_OP_SUB) r = x - y;
        else if constexpr (OP == WK_OP_MUL) r = x * y;
        else if constexpr (OP == WK_OP_DIV) r = x / y;
        else if constexpr (OP == WK_OP_MINIMUM) r = x != x ? x : y != y ? y : (y < x ? y : x);
        else if constexpr (OP == WK_OP_MAXIMUM) r = x != x ? x : y != y ? y : (y > x ? y : x);
        else {                                                             /* silu_mul */
            static_assert(OP == WK_OP_SILU_MUL, "an arithmetic op of EW_ARITH_CASES has no float body");
            constexpr bool FAST = wk_type<T>::is_narrow;                   /* as unary silu */
            r = ew_div_n<FAST>(x, (C)1 + ew_exp_n<FAST>(-x)) * y;
        }
        return wk_to<T>(r);
    } else if constexpr (OP == WK_OP_SILU_MUL) {
        return a;                        /* float dtypes only (op_list.h): never launched */
    } else {
        if constexpr (OP == WK_OP_ADD) return ew_wrap<T>(ew_u64(a) + ew_u64(b));
        else if constexpr (OP == WK_OP_SUB) return ew_wrap<T>(ew_u64(a) - ew_u64(b));
        else if constexpr (OP == WK_OP_MUL) return ew_wrap<T>(ew_u64(a) * ew_u64(b));
        else if constexpr (OP == WK_OP_DIV) {
            if (b == (T)0) return (T)0;                                  /* x / 0 = 0   */
            if (std::is_signed<T>::value && b == (T)-1) return ew_wrap<T>((uint64_t)0 - ew_u64(a));
            return (T)(a / b);
        } else if constexpr (OP == WK_OP_MINIMUM) return b < a ? b : a;
        else return b > a ? b : a;
    }
}

template <int OP, typename T> WK_DEV uint8_t ew_cmp_elem(T a, T b)
{
    auto x = wk_load_c(a), y = wk_load_c(b);
    if constexpr (OP == WK_OP_EQ) return x == y;
    else if constexpr (OP == WK_OP_NE) return x != y;
    else if constexpr (OP == WK_OP_LT) return x < y;
    else if constexpr (OP == WK_OP_LE) return x <= y;
    else if constexpr (OP == WK_OP_GT) return x > y;
    else return x >= y;
}

/* out = f(a, b) over contiguous data; D is T (arith) or uint8_t (cmp). */
template <bool CMP, int OP, typename T> WK_DEV auto ew_binary_elem(T a, T b)
{
    if constexpr (CMP) return ew_cmp_elem<OP, T>(a, b);
    else return ew_arith_elem<OP, T>(a, b);
}

template <bool CMP, int OP, typename T, typename D>
WK_DEV void ew_binary_contig_run(const T *__restrict__ a, const T *__restrict__ b, D *__restrict__ dst, int64_t n,
                                 int vec)
{
    constexpr int V = wk_vec_width<T>, U = wk_gpu_stream_units(V, (int)sizeof(T));
    struct pair { wk_vec<T, V> x, y; };
    struct pair1 { T x, y; };
    if (vec) {
        const int64_t nv = n / V;
        const wk_vec<T, V> *va = (const wk_vec<T, V> *)a, *vb = (const wk_vec<T, V> *)b;
        wk_vec<D, V> *vd = (wk_vec<D, V> *)dst;
        wk_gpu_stream<U>(nv, [&](int64_t i) { return pair{ va[i], vb[i] }; }, [&](int64_t i, const pair &q) {
            wk_vec<D, V> r;
#pragma unroll
            for (int k = 0; k < V; k++) r.v[k] = ew_binary_elem<CMP, OP>(q.x.v[k], q.y.v[k]);
            vd[i] = r;
        });
        WK_GPU_FOR(i, n - nv * V) {
            const int64_t j = nv * V + i;
            dst[j] = ew_binary_elem<CMP, OP>(a[j], b[j]);
        }
    } else {
        wk_gpu_stream<U>(n, [&](int64_t i) { return pair1{ a[i], b[i] }; },
                         [&](int64_t i, const pair1 &q) { dst[i] = ew_binary_elem<CMP, OP>(q.x, q.y); });
    }
}

/* Rank-2 broadcast: dst and the full operand f are contiguous [R, C]; the
 * other operand g is a row (g[c], stride 1, repeated over rows: ROW) or a
 * column (g[r * g_rs], one value per row: !ROW). Streams over dst in
 * 16-byte units when C is a multiple of the unit (a unit never straddles
 * two rows); the unit's row comes from one multiply-high division. g is
 * small and stays in the caches. SWAP: g is the left operand. */
template <bool CMP, bool ROW, bool SWAP, int OP, typename T, typename D>
WK_DEV void ew_bcast_run(const T *__restrict__ f, const T *__restrict__ g, D *__restrict__ dst, int64_t n, int64_t C,
                         int64_t g_rs, wk_divmod32 units_per_row, int vec)
{
    constexpr int V = wk_vec_width<T>, U = wk_gpu_stream_units(V, (int)sizeof(T));
    auto op = [](T x, T y) { return SWAP ? ew_binary_elem<CMP, OP>(y, x) : ew_binary_elem<CMP, OP>(x, y); };
    if (vec) {
        struct unit { wk_vec<T, V> x, y; };
        const int64_t nv = n / V;
        const wk_vec<T, V> *vf = (const wk_vec<T, V> *)f;
        wk_vec<D, V> *vd = (wk_vec<D, V> *)dst;
        wk_gpu_stream<U>(nv, [&](int64_t i) {
            unit u;
            u.x = vf[i];
            const uint32_t r = wk_divmod32_div(units_per_row, (uint32_t)i);
            if constexpr (ROW) {
                u.y = ((const wk_vec<T, V> *)g)[i - (int64_t)r * units_per_row.d];
            } else {
                const T gv = g[(int64_t)r * g_rs];
#pragma unroll
                for (int k = 0; k < V; k++) u.y.v[k] = gv;
            }
            return u;
        }, [&](int64_t i, const unit &u) {
            wk_vec<D, V> o;
#pragma unroll
            for (int k = 0; k < V; k++) o.v[k] = op(u.x.v[k], u.y.v[k]);
            vd[i] = o;
        });
    } else {
        WK_GPU_FOR(i, n) {
            const int64_t r = i / C, cc = i - r * C;
            dst[i] = op(f[i], ROW ? g[cc] : g[r * g_rs]);
        }
    }
}

/* case lists of the arithmetic and comparison families; C(op) expands
 * to one case */
#define EW_ARITH_CASES(C) C(WK_OP_ADD) C(WK_OP_SUB) C(WK_OP_MUL) C(WK_OP_DIV) C(WK_OP_MINIMUM) C(WK_OP_MAXIMUM) \
                          C(WK_OP_SILU_MUL)
#define EW_CMP_CASES(C) C(WK_OP_EQ) C(WK_OP_NE) C(WK_OP_LT) C(WK_OP_LE) C(WK_OP_GT) C(WK_OP_GE)
static_assert(WK_OP_MAXIMUM - WK_OP_ADD == 5 && WK_OP_GE - WK_OP_EQ == 5, "binary and cmp cases list every op");

template <typename T>
__global__ void __launch_bounds__(WK_GPU_EW_MAX_BLOCK)
ew_arith_contig(const T *a, const T *b, T *dst, int64_t n, int op, int vec)
{
    wk_pdl_wait();
    switch (op) {
#define EW_C_(OP) case OP: ew_binary_contig_run<false, OP, T, T>(a, b, dst, n, vec); break;
    EW_ARITH_CASES(EW_C_)
#undef EW_C_
    default: break;
    }
}

/* small contiguous arithmetic (see ew_unary_small) */
template <typename T>
__global__ void __launch_bounds__(WK_GPU_EW_MAX_BLOCK)
ew_arith_small(const T *a, const T *b, T *dst, int n, int op)
{
    const int i = (int)(blockIdx.x * blockDim.x + threadIdx.x);
    if (i >= n) return;
    const T x = a[i], y = b[i];
    T r = x;
    switch (op) {
#define EW_C_(OP) case OP: r = ew_arith_elem<OP, T>(x, y); break;
    EW_ARITH_CASES(EW_C_)
#undef EW_C_
    default: break;
    }
    dst[i] = r;
}

/* rank-2 broadcast arithmetic (ew_bcast_run); ROW and SWAP as above */
template <typename T, bool ROW, bool SWAP>
__global__ void __launch_bounds__(WK_GPU_EW_MAX_BLOCK)
ew_arith_bcast(const T *f, const T *g, T *dst, int64_t n, int64_t C, int64_t g_rs,
                               wk_divmod32 units_per_row, int op, int vec)
{
    switch (op) {
#define EW_C_(OP) case OP: ew_bcast_run<false, ROW, SWAP, OP, T, T>(f, g, dst, n, C, g_rs, units_per_row, vec); break;
    EW_ARITH_CASES(EW_C_)
#undef EW_C_
    default: break;
    }
}

template <typename T>
__global__ void __launch_bounds__(WK_GPU_EW_MAX_BLOCK)
ew_cmp_contig(const T *a, const T *b, uint8_t *dst, int64_t n, int op, int vec)
{
    switch (op) {
#define EW_C_(OP) case OP: ew_binary_contig_run<true, OP, T, uint8_t>(a, b, dst, n, vec); break;
    EW_CMP_CASES(EW_C_)
#undef EW_C_
    default: break;
    }
}

template <typename T>
__global__ void __launch_bounds__(WK_GPU_EW_MAX_BLOCK)
ew_arith_strided(wk_gpu_layout<3> L, const T *a, const T *b, T *dst, int op)
{
    WK_GPU_FOR(i, L.d.n) {
        int64_t o[3];
        wk_gpu_offsets(L, i, o);
        T x = a[o[1]], y = b[o[2]], r = x;
        switch (op) {
#define EW_C_(OP) case OP: r = ew_arith_elem<OP, T>(x, y); break;
        EW_ARITH_CASES(EW_C_)
#undef EW_C_
        default: break;
        }
        dst[o[0]] = r;
    }
}

template <typename T>
__global__ void __launch_bounds__(WK_GPU_EW_MAX_BLOCK)
ew_cmp_strided(wk_gpu_layout<3> L, const T *a, const T *b, uint8_t *dst, int op)
{
    WK_GPU_FOR(i, L.d.n) {
        int64_t o[3];
        wk_gpu_offsets(L, i, o);
        T x = a[o[1]], y = b[o[2]];
        uint8_t r = 0;
        switch (op) {
#define EW_C_(OP) case OP: r = ew_cmp_elem<OP, T>(x, y); break;
        EW_CMP_CASES(EW_C_)
#undef EW_C_
        default: break;
        }
        dst[o[0]] = r;
    }
}

/* The rank-2 broadcast fast path: true when it launched. dst contiguous
 * [R, C] (C > 1, under 2^32 elements); one operand the same, the other a
 * row ([R, C] strides {0, 1}) or a column (strides {g_rs, 0}). Anything
 * else goes to the strided kernel. */
static bool ew_bcast_launch(wk_gpu_ctx *c, wk_op op, const wk_view *dst, const wk_view *a, const wk_view *b,
                            int64_t n, int block)
{
    if (n > (int64_t)UINT32_MAX || !wk_gpu_is_contiguous(dst)) return false;
    if (dst->rank != 2 && dst->rank != 1) return false;
    const int64_t C = dst->dims[dst->rank - 1];
    /* strides of a rank-1 view as [1, C]: a column of one row */
    auto st = [&](const wk_view *v, int d) { return dst->rank == 2 ? v->strides[d] : (d == 0 ? 0 : v->strides[0]); };
    const bool a_full = wk_gpu_is_contiguous(a), b_full = wk_gpu_is_contiguous(b);
    if (a_full == b_full) return false;
    const wk_view *f = a_full ? a : b, *g = a_full ? b : a;
    bool row;
    if (st(g, 0) == 0 && st(g, 1) == 1 && dst->rank == 2) row = true;
    else if (st(g, 1) == 0) row = false;
    else return false;
    const bool swap = !a_full;
    const void *pf = wk_gpu_view_ptr(f), *pg = wk_gpu_view_ptr(g);
    void *d = wk_gpu_view_ptr(dst);
    const int64_t g_rs = st(g, 0);
    bool launched = false;
    WK_GPU_DISPATCH_ALL(dst->dtype, T, {
        constexpr int V = wk_vec_width<T>;
        const int vec = C % V == 0 && wk_gpu_aligned(pf, 16) && wk_gpu_aligned(d, 16) &&
                        (!row || wk_gpu_aligned(pg, 16));
        const wk_divmod32 upr = wk_divmod32_make((uint32_t)(vec ? C / V : C));
        const int sblock = wk_gpu_stream_block(c), bb = vec ? sblock : block;
        const unsigned grid =
            vec ? ew_grid(n, V, sblock, wk_gpu_stream_units(V, (int)sizeof(T))) : wk_gpu_grid(c, n, block, 4);
        const T *F = (const T *)pf, *G = (const T *)pg;
        if (row && !swap)
            ew_arith_bcast<T, true, false><<<grid, bb, 0, c->stream>>>(F, G, (T *)d, n, C, g_rs, upr, (int)op, vec);
        else if (row)
            ew_arith_bcast<T, true, true><<<grid, bb, 0, c->stream>>>(F, G, (T *)d, n, C, g_rs, upr, (int)op, vec);
        else if (!swap)
            ew_arith_bcast<T, false, false><<<grid, bb, 0, c->stream>>>(F, G, (T *)d, n, C, g_rs, upr, (int)op, vec);
        else
            ew_arith_bcast<T, false, true><<<grid, bb, 0, c->stream>>>(F, G, (T *)d, n, C, g_rs, upr, (int)op, vec);
        launched = true;
    })
    return launched;
}

wk_status wk_gpu_binary(void *ctx, wk_op op, const wk_view *dst, const wk_view *a, const wk_view *b)
{
    wk_gpu_ctx *c = (wk_gpu_ctx *)ctx;
    const bool cmp = op >= WK_OP_EQ && op <= WK_OP_GE;
    const wk_dtype dt = a->dtype;
    const bool silu_mul = op == WK_OP_SILU_MUL;   /* silu(a) * b: float dtypes only */
    if ((!cmp && !silu_mul && (op < WK_OP_ADD || op > WK_OP_MAXIMUM)) || (unsigned)dt >= WK_DTYPE_COUNT ||
        b->dtype != dt || dst->dtype != (cmp ? WK_U8 : dt) || (silu_mul && !wk_gpu_op_takes(op, dt)))
        return ew_bad("binary", op, dt);
    int64_t n = wk_gpu_numel(dst);
    if (n == 0) return WK_OK;
    WK_GPU_ENTER(c);
    const int block = wk_gpu_ew_block(c);
    const bool contig = wk_gpu_is_contiguous(dst) && wk_gpu_is_contiguous(a) && wk_gpu_is_contiguous(b);
    if (contig && !cmp && n <= EW_SMALL_N) {
        const int sb = ew_small_block(c, n);
        WK_GPU_DISPATCH_ALL(dt, T, {
            WK_LAUNCH_LIGHT(ew_arith_small<T>, (unsigned)((n + sb - 1) / sb), sb, c->stream,
                            (const T *)wk_gpu_view_ptr(a), (const T *)wk_gpu_view_ptr(b), (T *)wk_gpu_view_ptr(dst),
                            (int)n, (int)op);
        })
    } else if (contig) {
        void *d = wk_gpu_view_ptr(dst);
        const void *pa = wk_gpu_view_ptr(a), *pb = wk_gpu_view_ptr(b);
        WK_GPU_DISPATCH_ALL(dt, T, {
            constexpr int V = wk_vec_width<T>;
            int vec = wk_gpu_aligned(pa, 16) && wk_gpu_aligned(pb, 16) &&
                      wk_gpu_aligned(d, (cmp ? 1 : sizeof(T)) * V);
            const int sblock = ew_stream_block(c, n, vec ? V : 1, wk_gpu_stream_units(V, (int)sizeof(T)));
            unsigned grid = ew_grid(n, vec ? V : 1, sblock, wk_gpu_stream_units(V, (int)sizeof(T)));
            if (cmp)
                ew_cmp_contig<T><<<grid, sblock, 0, c->stream>>>((const T *)pa, (const T *)pb, (uint8_t *)d, n,
                                                                 (int)op, vec);
            else
                WK_LAUNCH_PDL(c->cc_major >= 9, ew_arith_contig<T>, grid, sblock, 0, c->stream, (const T *)pa,
                              (const T *)pb, (T *)d, n, (int)op, vec);
        })
    } else if (!cmp && ew_bcast_launch(c, op, dst, a, b, n, block)) {
        /* launched */
    } else {
        wk_gpu_layout<3> L;
        const wk_view *v[3] = { dst, a, b };
        wk_gpu_layout_make<3>(&L, v);
        unsigned grid = wk_gpu_grid(c, n, block, 4);
        WK_GPU_DISPATCH_ALL(dt, T, {
            if (cmp)
                ew_cmp_strided<T><<<grid, block, 0, c->stream>>>(L, (const T *)a->base, (const T *)b->base,
                                                                 (uint8_t *)dst->base, (int)op);
            else
                ew_arith_strided<T><<<grid, block, 0, c->stream>>>(L, (const T *)a->base, (const T *)b->base,
                                                                   (T *)dst->base, (int)op);
        })
    }
    WK_GPU_LAUNCH_CHECK(c, cmp ? "cmp" : "binary");
    return WK_OK;
}

/* ---- where_cond ------------------------------------------------------------------ */
/* A pure select: the value dtype matters only by its size (E: uintN_t);
 * the condition is u8, u32 or i64 (K). */

template <typename K, typename E>
__global__ void __launch_bounds__(WK_GPU_EW_MAX_BLOCK)
ew_where_contig(const K *__restrict__ cond, const E *__restrict__ a, const E *__restrict__ b,
                                E *__restrict__ dst, int64_t n, int vec)
{
    constexpr int V = wk_vec_width<K, E>;
    const int64_t nv = vec ? n / V : 0;
    const wk_vec<K, V> *vc = (const wk_vec<K, V> *)cond;
    const wk_vec<E, V> *va = (const wk_vec<E, V> *)a, *vb = (const wk_vec<E, V> *)b;
    wk_vec<E, V> *vd = (wk_vec<E, V> *)dst;
    WK_GPU_FOR(i, nv) {
        wk_vec<K, V> k = vc[i];
        wk_vec<E, V> x = va[i], y = vb[i], r;
#pragma unroll
        for (int j = 0; j < V; j++) r.v[j] = k.v[j] != (K)0 ? x.v[j] : y.v[j];
        vd[i] = r;
    }
    WK_GPU_FOR(i, n - nv * V) {
        int64_t j = nv * V + i;
        dst[j] = cond[j] != (K)0 ? a[j] : b[j];
    }
}

template <typename K, typename E>
__global__ void __launch_bounds__(WK_GPU_EW_MAX_BLOCK)
ew_where_strided(wk_gpu_layout<4> L, const K *cond, const E *a, const E *b, E *dst)
{
    WK_GPU_FOR(i, L.d.n) {
        int64_t o[4];
        wk_gpu_offsets(L, i, o);
        dst[o[0]] = cond[o[1]] != (K)0 ? a[o[2]] : b[o[3]];
    }
}

template <typename K>
static wk_status ew_where_k(wk_gpu_ctx *c, const wk_view *dst, const wk_view *cond, const wk_view *a,
                            const wk_view *b, int64_t n)
{
    const int block = wk_gpu_ew_block(c);
    const size_t esz = wk_gpu_dtype_size(dst->dtype);
    if (wk_gpu_is_contiguous(dst) && wk_gpu_is_contiguous(cond) && wk_gpu_is_contiguous(a) &&
        wk_gpu_is_contiguous(b)) {
        void *d = wk_gpu_view_ptr(dst);
        const void *pc = wk_gpu_view_ptr(cond), *pa = wk_gpu_view_ptr(a), *pb = wk_gpu_view_ptr(b);
        WK_GPU_DISPATCH_SIZE(esz, E, {
            constexpr int V = wk_vec_width<K, E>;
            int vec = wk_gpu_aligned(pc, sizeof(K) * V) && wk_gpu_aligned(pa, sizeof(E) * V) &&
                      wk_gpu_aligned(pb, sizeof(E) * V) && wk_gpu_aligned(d, sizeof(E) * V);
            ew_where_contig<K, E><<<ew_grid(n, vec ? V : 1, block, 1), block, 0, c->stream>>>(
                (const K *)pc, (const E *)pa, (const E *)pb, (E *)d, n, vec);
        })
    } else {
        wk_gpu_layout<4> L;
        const wk_view *v[4] = { dst, cond, a, b };
        wk_gpu_layout_make<4>(&L, v);
        WK_GPU_DISPATCH_SIZE(esz, E, {
            ew_where_strided<K, E><<<wk_gpu_grid(c, n, block, 4), block, 0, c->stream>>>(
                L, (const K *)cond->base, (const E *)a->base, (const E *)b->base, (E *)dst->base);
        })
    }
    WK_GPU_LAUNCH_CHECK(c, "where_cond");
    return WK_OK;
}

wk_status wk_gpu_where_cond(void *ctx, const wk_view *dst, const wk_view *cond, const wk_view *a, const wk_view *b)
{
    wk_gpu_ctx *c = (wk_gpu_ctx *)ctx;
    if ((unsigned)dst->dtype >= WK_DTYPE_COUNT || a->dtype != dst->dtype || b->dtype != dst->dtype)
        return ew_bad("where_cond", WK_OP_WHERE, dst->dtype);
    int64_t n = wk_gpu_numel(dst);
    if (n == 0) return WK_OK;
    WK_GPU_ENTER(c);
    switch (cond->dtype) {
    case WK_U8: return ew_where_k<uint8_t>(c, dst, cond, a, b, n);
    case WK_U32: return ew_where_k<uint32_t>(c, dst, cond, a, b, n);
    case WK_I64: return ew_where_k<int64_t>(c, dst, cond, a, b, n);
    default:
        return wk_gpu_host->set_error(WK_ERR_DTYPE, "where_cond: condition dtype %s is not u8, u32 or i64",
                                      wk_gpu_dtype_name(cond->dtype));
    }
}
