/* reduce.hip — sum / min / max / argmin / argmax of any strided src over
 * any set of dims (dim_mask), every dtype, into a contiguous dst.
 *
 * Semantics (docs): sums keep the dtype (integers wrap; they accumulate in
 * a 32- or 64-bit unsigned word and are truncated once), float sums
 * accumulate in f32 (f64 for f64); min/max/arg* compare in the compute
 * type; NaN wins every comparison for both max and min (so it propagates)
 * and argmin/argmax give the FIRST index of the extremum, as u32, counting
 * the reduced dims flattened row-major. min/argmin are computed as
 * max/argmax of order-reversed values (-x for floats, ~x for integers), so
 * every kernel compares one way. A thread folds its elements in index
 * order (a tie keeps the earlier one); states of different threads merge
 * with a total order (NaN, then larger value, then smaller index), so
 * results do not depend on the order in which threads meet; float sums use
 * a fixed tree for a given launch shape, so they are deterministic run to
 * run (no float atomics anywhere).
 *
 * How it is made fast. The host drops size-1 dims and merges adjacent
 * kept dims and adjacent reduced dims where the strides allow, leaving M
 * outputs (kept dims) and a reduction of N elements (reduced dims), then
 * picks one of two kernels:
 *   rows  the reduced elements of an output lie along the smallest stride
 *         (the common "last dim" case). A group of G threads per output
 *         (G = 1..W lanes of one warp, or the whole block for long rows);
 *         when the reduced run is contiguous each row is read with 16-byte
 *         vector loads (a scalar head up to 16-byte alignment, 4 vectors
 *         in flight per thread (2 for 1-byte types), a scalar tail);
 *         groups reduce with warp butterflies (compat.h) and, for
 *         whole-block groups, one shared memory step across warps. The
 *         per-element work is kept to a few operations, so narrow types
 *         stay memory-bound: min reversal is one XOR per 32-bit word; max
 *         is a max instruction plus a NaN flag; argmax takes each vector's
 *         max, then the first element equal to it, as one candidate.
 *   cols  the kept dims have the smaller stride (e.g. a sum over dim 0):
 *         threads run across consecutive outputs, so each step of the
 *         reduction is one coalesced row read; a block is bx outputs x by
 *         slices of the reduction, combined in shared memory; 8 loads in
 *         flight per thread (16 for types under 4 bytes).
 * When M alone cannot fill the device, both kernels split the reduction
 * into chunks over blockIdx.y, write per-chunk partial states to scratch
 * and a second small kernel combines the chunks in order (two passes,
 * deterministic).
 * Warp width: the rows kernel takes W (32 or 64) as a template parameter;
 * the host picks the device's (never 32 fixed). The AMD build has both;
 * NVIDIA builds only the one their warps can be (see RED_HAVE_W32).
 * Kernel count: 3 op kinds (sum, min/max, argmin/argmax; max vs min is a
 * run-time flag) x 10 dtypes x (2 widths for rows + cols + finish).
 */
#include "gpu_internal.h"

/* ------------------------------------------------------------------ */
/* Reduction states                                                    */

enum { RED_SUM = 0, RED_MINMAX = 1, RED_ARG = 2 };

/* The per-thread arithmetic below is __host__ __device__ (so it can be
 * checked on the host); only device passes see its unroll hints. */
#if defined(__CUDA_ARCH__) || defined(__HIP_DEVICE_COMPILE__)
#define RED_UNROLL _Pragma("unroll")
#else
#define RED_UNROLL
#endif

/* limits of a compute type (device and host) */
template <typename C> struct red_lim;
template <> struct red_lim<uint8_t> { static WK_HD uint8_t lo() { return 0; } static WK_HD uint8_t hi() { return 0xFF; } };
template <> struct red_lim<uint32_t> { static WK_HD uint32_t lo() { return 0; } static WK_HD uint32_t hi() { return 0xFFFFFFFFu; } };
template <> struct red_lim<int16_t> { static WK_HD int16_t lo() { return -32768; } static WK_HD int16_t hi() { return 32767; } };
template <> struct red_lim<int32_t> { static WK_HD int32_t lo() { return (int32_t)0x80000000u; } static WK_HD int32_t hi() { return 0x7FFFFFFF; } };
template <> struct red_lim<int64_t> {
    static WK_HD int64_t lo() { return (int64_t)0x8000000000000000ull; }
    static WK_HD int64_t hi() { return 0x7FFFFFFFFFFFFFFFll; }
};
template <> struct red_lim<float> {
    static WK_HD float lo() { return wk_bits_f32(0xFF800000u); }
    static WK_HD float hi() { return wk_bits_f32(0x7F800000u); }
};
template <> struct red_lim<double> {
    static WK_HD double lo() { return wk_bits_f64(0xFFF0000000000000ull); }
    static WK_HD double hi() { return wk_bits_f64(0x7FF0000000000000ull); }
};

template <typename C> WK_HD bool red_isnan(C x)
{
    if constexpr (std::is_floating_point<C>::value) return x != x;
    else return false;
}

/* accumulator of a sum: the compute float, or an unsigned word that wraps */
template <typename T> struct red_sum_acc { typedef typename wk_type<T>::C type; };
template <> struct red_sum_acc<uint8_t> { typedef uint32_t type; };
template <> struct red_sum_acc<int16_t> { typedef uint32_t type; };
template <> struct red_sum_acc<int32_t> { typedef uint32_t type; };
template <> struct red_sum_acc<uint32_t> { typedef uint32_t type; };
template <> struct red_sum_acc<int64_t> { typedef uint64_t type; };

/* max/min state: the running max of the non-NaN values and whether a NaN
 * was seen (a max instruction ignores NaN; a flag is one compare) */
template <typename C> struct red_mm {
    C v;
    uint32_t nan;
};

/* argmin/argmax state: value in the compute type and its reduced index */
template <typename C> struct red_pair {
    C v;
    uint32_t i;
};

template <typename C> WK_HD C red_max(C a, C b)
{
    if constexpr (std::is_same<C, float>::value) return fmaxf(a, b);
    else if constexpr (std::is_same<C, double>::value) return fmax(a, b);
    else return b > a ? b : a;
}

template <typename C> WK_HD C red_nan_value(void)
{
    if constexpr (std::is_same<C, float>::value) return wk_bits_f32(0x7FC00000u);
    else if constexpr (std::is_same<C, double>::value) return wk_bits_f64(0x7FF8000000000000ull);
    else return (C)0;
}

/* min and argmin run as max and argmax of order-reversed values: -x for
 * floats (NaN stays NaN, so it still wins), ~x for integers (signed or
 * not; no overflow). Kernels then have one comparison direction. On the
 * vector path the reversal is one XOR per 32-bit word (red_flipmask). */
template <typename C> WK_HD C red_flip(C v, int mx)
{
    if constexpr (std::is_floating_point<C>::value) return mx ? v : -v;
    else return mx ? v : (C)~v;
}

/* Each op kind: identity; step(s, x, j, mx) folds element x of index j into
 * a thread's state, elements arriving in increasing j (so a tie keeps the
 * state); vec(s, e, j) folds V already order-reversed elements of indices
 * j.. (the 16-byte vector path); combine(a, b) merges two states in any
 * order. */
template <typename T, int K> struct red_k;

template <typename T> struct red_k<T, RED_SUM> {
    typedef typename red_sum_acc<T>::type S;
    static WK_HD S identity() { return (S)0; }
    static WK_HD S step(S s, T x, uint32_t, int) { return s + (S)wk_load_c(x); }
    template <int V> static WK_HD S vec(S s, const T (&e)[V], uint32_t)
    {
RED_UNROLL
        for (int k = 0; k < V; k++) s += (S)wk_load_c(e[k]);
        return s;
    }
    static WK_HD S combine(S a, S b) { return a + b; }
    template <int W> static WK_DEV S shfl_xor(S s, int m) { return wk_shfl_xor<W>(s, m); }
    static WK_HD void store(void *out, int64_t o, S s, int) { ((T *)out)[o] = wk_to<T>(s); }
};

template <typename T> struct red_k<T, RED_MINMAX> {
    typedef typename wk_type<T>::C C;
    typedef red_mm<C> S;
    static WK_HD S identity()
    {
        S s;
        s.v = red_lim<C>::lo();
        s.nan = 0;
        return s;
    }
    static WK_HD S fold(S s, C v)
    {
        s.v = red_max(s.v, v);
        s.nan |= red_isnan(v);
        return s;
    }
    static WK_HD S step(S s, T x, uint32_t, int mx) { return fold(s, red_flip<C>(wk_load_c(x), mx)); }
    template <int V> static WK_HD S vec(S s, const T (&e)[V], uint32_t)
    {
RED_UNROLL
        for (int k = 0; k < V; k++) s = fold(s, wk_load_c(e[k]));
        return s;
    }
    static WK_HD S combine(S a, S b)
    {
        a.v = red_max(a.v, b.v);
        a.nan |= b.nan;
        return a;
    }
    template <int W> static WK_DEV S shfl_xor(S s, int m)
    {
        S r;
        r.v = wk_shfl_xor<W>(s.v, m);
        r.nan = wk_shfl_xor<W>(s.nan, m);
        return r;
    }
    static WK_HD void store(void *out, int64_t o, S s, int mx)
    {
        const C v = s.nan ? red_nan_value<C>() : red_flip<C>(s.v, mx);
        ((T *)out)[o] = wk_to<T>(v);
    }
};

template <typename T> struct red_k<T, RED_ARG> {
    typedef typename wk_type<T>::C C;
    typedef red_pair<C> S;
    static WK_HD S identity()
    {
        S s;
        s.v = red_lim<C>::lo();
        s.i = 0xFFFFFFFFu;   /* no element yet */
        return s;
    }
    /* in index order: a strictly larger value, or the first NaN */
    static WK_HD S fold(S s, C v, uint32_t j)
    {
        const bool sn = red_isnan(s.v);
        if ((!sn && (v > s.v || red_isnan(v))) || s.i == 0xFFFFFFFFu) {
            s.v = v;
            s.i = j;
        }
        return s;
    }
    static WK_HD S step(S s, T x, uint32_t j, int mx) { return fold(s, red_flip<C>(wk_load_c(x), mx), j); }
    /* the vector's max (NaN if it holds one), then the first element equal
     * to it (or the first NaN), folded as one candidate: branch-free, about
     * five operations per element */
    template <int V> static WK_HD S vec(S s, const T (&e)[V], uint32_t j)
    {
        C x[V];
RED_UNROLL
        for (int k = 0; k < V; k++) x[k] = wk_load_c(e[k]);
        C vm = x[0];
        bool vn = red_isnan(x[0]);
RED_UNROLL
        for (int k = 1; k < V; k++) {
            vm = red_max(vm, x[k]);
            vn = vn || red_isnan(x[k]);
        }
        if (vn) vm = red_nan_value<C>();
        uint32_t at = V - 1;
RED_UNROLL
        for (int k = V - 2; k >= 0; k--)
            if (x[k] == vm || red_isnan(x[k])) at = (uint32_t)k;
        return fold(s, vm, j + at);
    }
    /* total order: NaN first, then the larger value, then the smaller index */
    static WK_HD S combine(S a, S b)
    {
        const bool an = red_isnan(a.v), bn = red_isnan(b.v);
        bool take;
        if (an || bn) take = (an && bn) ? b.i < a.i : bn;
        else if (b.v == a.v) take = b.i < a.i;
        else take = b.v > a.v;
        return take ? b : a;
    }
    template <int W> static WK_DEV S shfl_xor(S s, int m)
    {
        S r;
        r.v = wk_shfl_xor<W>(s.v, m);
        r.i = wk_shfl_xor<W>(s.i, m);
        return r;
    }
    static WK_HD void store(void *out, int64_t o, S s, int) { ((uint32_t *)out)[o] = s.i; }
};

/* ------------------------------------------------------------------ */
/* Launch parameters                                                   */

struct red_params {
    wk_gpu_layout<1> kept;   /* output o -> src element offset (incl. view offset) */
    wk_gpu_layout<1> red;    /* reduced index j -> element offset (from 0)         */
    int64_t M, N;            /* outputs, reduced elements                          */
    int64_t chunk;           /* reduced elements per blockIdx.y (N when unsplit)   */
    int64_t part_so, part_sc;/* partial state index = o * so + chunk * sc          */
    int contig;              /* reduction is one run of stride 1                   */
    int group;               /* rows: threads per output (<= W, or blockDim.x)     */
    int is_max;              /* max/argmax (1) or min/argmin (0)                   */
    int partial;             /* write partial states instead of dst                */
};

/* 16 bytes moved by one vector load */
struct alignas(16) red_v16 {
    uint32_t w[4];
};

#define RED_COLS_THREADS 256
#define RED_COLS_UNROLL 8

/* ------------------------------------------------------------------ */
/* rows: G threads per output along a contiguous or decoded reduction   */

/* 16 bytes XOR this order-reverse every element (min/argmin; zero for
 * max/argmax and sums): the sign bit of each float, every bit of an int */
template <typename T> WK_HD red_v16 red_flipmask(int K, int mx)
{
    red_v16 m;
    uint64_t pat = 0;
    if (K != RED_SUM && !mx) {
        if (!wk_type<T>::is_float) pat = ~0ull;
        else if (sizeof(T) == 1) pat = 0x8080808080808080ull;
        else if (sizeof(T) == 2) pat = 0x8000800080008000ull;
        else if (sizeof(T) == 4) pat = 0x8000000080000000ull;
        else pat = 0x8000000000000000ull;
    }
    m.w[0] = m.w[2] = (uint32_t)pat;
    m.w[1] = m.w[3] = (uint32_t)(pat >> 32);
    return m;
}

template <typename T, int K>
WK_HD typename red_k<T, K>::S red_vec(typename red_k<T, K>::S s, red_v16 x, const red_v16 &fm, int64_t j)
{
    constexpr int V = 16 / (int)sizeof(T);
    if constexpr (K != RED_SUM) {
RED_UNROLL
        for (int i = 0; i < 4; i++) x.w[i] ^= fm.w[i];
    }
    T e[V];
    memcpy(e, &x, sizeof e);
    return red_k<T, K>::template vec<V>(s, e, (uint32_t)j);
}

/* 16-byte vectors in flight per thread in the rows kernel (1-byte types:
 * RED_ROWS_U1); the -D overrides are for tuning builds */
#ifndef RED_ROWS_U
#define RED_ROWS_U 4
#endif
#ifndef RED_ROWS_U1
#define RED_ROWS_U1 2
#endif

/* One group member's share of a contiguous run p[0, len) whose first
 * element has reduced index jb. */
template <typename T, int K>
WK_HD typename red_k<T, K>::S red_run(typename red_k<T, K>::S s, const T *__restrict__ p, int64_t len,
                                       int64_t jb, int t, int G, int mx)
{
    typedef red_k<T, K> R;
    constexpr int V = 16 / (int)sizeof(T);
    int64_t head = (int64_t)((16u - (unsigned)((uintptr_t)p & 15u)) & 15u) / (int64_t)sizeof(T);
    if (head > len) head = len;
    for (int64_t j = t; j < head; j += G) s = R::step(s, p[j], (uint32_t)(jb + j), mx);
    const red_v16 *__restrict__ pv = (const red_v16 *)(p + head);
    const int64_t nv = (len - head) / V;
    const int64_t jv = jb + head;
    const red_v16 fm = red_flipmask<T>(K, mx);
    /* U vectors in flight per thread (2 for 1-byte types: 32 elements) */
    constexpr int U = V >= 16 ? RED_ROWS_U1 : RED_ROWS_U;
    int64_t v = t;
    for (; v + (U - 1) * (int64_t)G < nv; v += U * (int64_t)G) {
        red_v16 x[U];
RED_UNROLL
        for (int u = 0; u < U; u++) x[u] = pv[v + u * (int64_t)G];
RED_UNROLL
        for (int u = 0; u < U; u++) s = red_vec<T, K>(s, x[u], fm, jv + (v + u * (int64_t)G) * V);
    }
    for (; v < nv; v += G) s = red_vec<T, K>(s, pv[v], fm, jv + v * V);
    for (int64_t j = head + nv * V + t; j < len; j += G) s = R::step(s, p[j], (uint32_t)(jb + j), mx);
    return s;
}

/* grid: x = ceil(M / (blockDim.x / G)), y = chunks. Every lane reaches the
 * warp operations (rows past M carry the identity). */
template <typename T, int K, int W>
__global__ void red_rows_kernel(const T *__restrict__ src, void *__restrict__ out, red_params p)
{
    typedef red_k<T, K> R;
    typedef typename R::S S;
    const int G = p.group;
    const int tid = (int)threadIdx.x;
    const int t = tid % G;
    const int64_t row = (int64_t)blockIdx.x * (int64_t)(blockDim.x / G) + tid / G;
    const int64_t j0 = (int64_t)blockIdx.y * p.chunk;
    const int64_t j1 = j0 + p.chunk < p.N ? j0 + p.chunk : p.N;
    const int mx = p.is_max;
    S s = R::identity();
    if (row < p.M) {
        int64_t o[1];
        wk_gpu_offsets<1>(p.kept, row, o);
        if (p.contig) {
            s = red_run<T, K>(s, src + o[0] + j0, j1 - j0, j0, t, G, mx);
        } else {
            for (int64_t j = j0 + t; j < j1; j += G) {
                int64_t q[1];
                wk_gpu_offsets<1>(p.red, j, q);
                s = R::step(s, src[o[0] + q[0]], (uint32_t)j, mx);
            }
        }
    }
    if (G <= W) {
        for (int m = G / 2; m > 0; m /= 2) s = R::combine(s, R::template shfl_xor<W>(s, m));
    } else {
        /* whole block: warps, then the first warp over the warps' results */
        __shared__ S red_sh[1024 / W];
        for (int m = W / 2; m > 0; m /= 2) s = R::combine(s, R::template shfl_xor<W>(s, m));
        const int nw = (int)blockDim.x / W;
        if (wk_lane<W>() == 0) red_sh[wk_warp_id<W>()] = s;
        __syncthreads();
        if (wk_warp_id<W>() == 0) {
            s = wk_lane<W>() < nw ? red_sh[wk_lane<W>()] : R::identity();
            for (int m = W / 2; m > 0; m /= 2) s = R::combine(s, R::template shfl_xor<W>(s, m));
        }
    }
    if (t == 0 && row < p.M) {
        if (p.partial) ((S *)out)[row * p.part_so + (int64_t)blockIdx.y * p.part_sc] = s;
        else R::store(out, row, s, mx);
    }
}

/* ------------------------------------------------------------------ */
/* cols: threads across consecutive outputs, blockDim = (bx, by)        */

template <typename T, int K>
__global__ void red_cols_kernel(const T *__restrict__ src, void *__restrict__ out, red_params p)
{
    typedef red_k<T, K> R;
    typedef typename R::S S;
    __shared__ S red_csh[RED_COLS_THREADS];
    const int bx = (int)blockDim.x, by = (int)blockDim.y;
    const int tx = (int)threadIdx.x, ty = (int)threadIdx.y;
    const int64_t o = (int64_t)blockIdx.x * bx + tx;
    const int64_t j0 = (int64_t)blockIdx.y * p.chunk;
    const int64_t j1 = j0 + p.chunk < p.N ? j0 + p.chunk : p.N;
    const int mx = p.is_max;
    S s = R::identity();
    if (o < p.M) {
        int64_t b[1];
        wk_gpu_offsets<1>(p.kept, o, b);
        if (p.red.d.rank <= 1) {
            const int64_t rs = p.red.d.rank ? p.red.st[0][0] : 0;
            const T *__restrict__ q = src + b[0];
            /* U loads in flight per thread: 8, or 16 for types under 4 bytes */
            constexpr int U = sizeof(T) >= 4 ? RED_COLS_UNROLL : 2 * RED_COLS_UNROLL;
            int64_t j = j0 + ty;
            for (; j + (U - 1) * (int64_t)by < j1; j += U * (int64_t)by) {
                T x[U];
#pragma unroll
                for (int u = 0; u < U; u++) x[u] = q[(j + u * (int64_t)by) * rs];
#pragma unroll
                for (int u = 0; u < U; u++) s = R::step(s, x[u], (uint32_t)(j + u * (int64_t)by), mx);
            }
            for (; j < j1; j += by) s = R::step(s, q[j * rs], (uint32_t)j, mx);
        } else {
            for (int64_t j = j0 + ty; j < j1; j += by) {
                int64_t q[1];
                wk_gpu_offsets<1>(p.red, j, q);
                s = R::step(s, src[b[0] + q[0]], (uint32_t)j, mx);
            }
        }
    }
    red_csh[ty * bx + tx] = s;
    __syncthreads();
    for (int h = by / 2; h > 0; h /= 2) {
        if (ty < h) red_csh[ty * bx + tx] = R::combine(red_csh[ty * bx + tx], red_csh[(ty + h) * bx + tx]);
        __syncthreads();
    }
    if (ty == 0 && o < p.M) {
        s = red_csh[tx];
        if (p.partial) ((S *)out)[o * p.part_so + (int64_t)blockIdx.y * p.part_sc] = s;
        else R::store(out, o, s, mx);
    }
}

/* ------------------------------------------------------------------ */
/* finish: combine the chunks' partial states in chunk order            */

template <typename T, int K>
__global__ void red_finish_kernel(const void *__restrict__ part, void *__restrict__ out, int64_t M, int64_t nchunks,
                                  int64_t so, int64_t sc, int mx)
{
    typedef red_k<T, K> R;
    typedef typename R::S S;
    const S *P = (const S *)part;
    WK_GPU_FOR(o, M) {
        S s = R::identity();
        for (int64_t c = 0; c < nchunks; c++) s = R::combine(s, P[o * so + c * sc]);
        R::store(out, o, s, mx);
    }
}

/* ------------------------------------------------------------------ */
/* Host                                                                */

static int64_t red_pow2_ceil(int64_t x)
{
    int64_t p = 1;
    while (p < x) p *= 2;
    return p;
}

static int64_t red_cdiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

/* Build a one-operand layout over dims/strides (already merged). */
static void red_layout(wk_gpu_layout<1> *L, int rank, const int64_t *dims, const int64_t *st, int64_t off)
{
    memset(L, 0, sizeof *L);
    int64_t n = 1;
    for (int d = 0; d < rank; d++) n *= dims[d];
    L->d.rank = rank;
    L->d.n = n;
    for (int d = 0; d < rank; d++) {
        L->d.dims[d] = dims[d];
        L->d.div[d] = wk_divmod32_make(dims[d] <= (int64_t)UINT32_MAX ? (uint32_t)dims[d] : 1u);
        L->st[0][d] = st[d];
    }
    L->off[0] = off;
}

/* Append dim (e, s) to a list, merging with the previous one when the
 * previous stride is s * e (row-major order of indices is preserved). */
static void red_push(int *r, int64_t *dims, int64_t *st, int64_t e, int64_t s)
{
    if (*r > 0 && st[*r - 1] == s * e) {
        dims[*r - 1] *= e;
        st[*r - 1] = s;
    } else {
        dims[*r] = e;
        st[*r] = s;
        (*r)++;
    }
}

template <typename T, int K, int W>
static wk_status red_launch(wk_gpu_ctx *c, const T *src, void *dst, red_params p, bool rows)
{
    typedef typename red_k<T, K>::S S;
    const int64_t target = (int64_t)c->sm_count * (c->max_threads_per_sm > 0 ? c->max_threads_per_sm : 2048);
    int64_t nchunks = 1;
    dim3 grid, block;
    if (rows) {
        const int bt = wk_gpu_ew_block(c);
        const int V = 16 / (int)sizeof(T);
        int64_t G;
        if (!p.contig) G = p.N >= 4 * W ? bt : red_pow2_ceil(p.N < W ? p.N : W);
        else if (p.N > (int64_t)32 * W * V) G = bt;
        else G = red_pow2_ceil(red_cdiv(p.N, 4 * V)) < W ? red_pow2_ceil(red_cdiv(p.N, 4 * V)) : W;
        if (G < 1) G = 1;
        p.group = (int)G;
        const int64_t min_chunk = G * V * 8 > 2048 ? G * V * 8 : 2048;
        if (p.M * G < target && p.N >= 2 * min_chunk) {
            nchunks = red_cdiv(target, p.M * G);
            if (nchunks > red_cdiv(p.N, min_chunk)) nchunks = red_cdiv(p.N, min_chunk);
            if (nchunks > 1024) nchunks = 1024;
        }
        block = dim3((unsigned)bt);
        grid = dim3((unsigned)red_cdiv(p.M, bt / G));
    } else {
        int64_t bx = red_pow2_ceil(p.M < RED_COLS_THREADS ? p.M : RED_COLS_THREADS);
        int64_t by = RED_COLS_THREADS / bx;
        while (by > 1 && by / 2 >= p.N) by /= 2;    /* no idle slices */
        const int64_t gx = red_cdiv(p.M, bx);
        const int64_t min_chunk = by * RED_COLS_UNROLL * 4;
        if (gx * RED_COLS_THREADS < 2 * target && p.N >= 2 * min_chunk) {
            nchunks = red_cdiv(2 * target, gx * RED_COLS_THREADS);
            if (nchunks > red_cdiv(p.N, min_chunk)) nchunks = red_cdiv(p.N, min_chunk);
            if (nchunks > 1024) nchunks = 1024;
        }
        block = dim3((unsigned)bx, (unsigned)by);
        grid = dim3((unsigned)gx);
    }
    p.chunk = red_cdiv(p.N, nchunks);
    if (nchunks > 1) p.chunk = red_cdiv(p.chunk, 64) * 64;
    nchunks = p.N ? red_cdiv(p.N, p.chunk) : 1;
    grid.y = (unsigned)nchunks;

    void *part = NULL;
    if (nchunks > 1) {
        wk_status st = wk_gpu_scratch_alloc(c, (size_t)(p.M * nchunks) * sizeof(S), &part);
        if (st != WK_OK) return st;
        p.partial = 1;
        /* rows: [M, chunks]; cols: [chunks, M] (coalesced either way) */
        p.part_so = rows ? nchunks : 1;
        p.part_sc = rows ? 1 : p.M;
    }
    if (rows) red_rows_kernel<T, K, W><<<grid, block, 0, c->stream>>>(src, part ? part : dst, p);
    else red_cols_kernel<T, K><<<grid, block, 0, c->stream>>>(src, part ? part : dst, p);
    wk_status st = wk_gpu_launched(c, rows ? "reduce (rows)" : "reduce (cols)", __FILE__, __LINE__);
    if (st == WK_OK && part) {
        const int fb = 256;
        red_finish_kernel<T, K><<<wk_gpu_grid(c, p.M, fb, 4), fb, 0, c->stream>>>(part, dst, p.M, nchunks, p.part_so,
                                                                                 p.part_sc, p.is_max);
        st = wk_gpu_launched(c, "reduce (finish)", __FILE__, __LINE__);
    }
    if (part) wk_gpu_scratch_free(c, part);
    return st;
}

/* Both warp widths are instantiated in every build, so the CUDA and ROCm
 * plugins hold the same list of kernels (tools/compare-kernel-lists).
 * The host launches the one matching the device's warp size: 32 or 64 on
 * AMD, 32 on NVIDIA, 64 in the virtual-wave64 build; on plain NVIDIA the
 * 64-wide code is never launched (compat.h traps if it were). */
#define RED_HAVE_W32 1
#define RED_HAVE_W64 1

template <typename T, int K>
static wk_status red_dispatch_w(wk_gpu_ctx *c, const T *src, void *dst, const red_params &p, bool rows)
{
#if RED_HAVE_W64
    if (c->warp_size == 64) return red_launch<T, K, 64>(c, src, dst, p, rows);
#endif
#if RED_HAVE_W32
    if (c->warp_size == 32) return red_launch<T, K, 32>(c, src, dst, p, rows);
#endif
    return wk_gpu_host->set_error(WK_ERR_BACKEND, "reduce: no kernels for warp size %d in this build", c->warp_size);
}

wk_status wk_gpu_reduce(void *ctx, wk_op op, const wk_view *dst, const wk_view *src, uint32_t dim_mask)
{
    wk_gpu_ctx *c = (wk_gpu_ctx *)ctx;
    if (!wk_gpu_op_takes(op, src->dtype))
        return wk_gpu_host->set_error(WK_ERR_UNSUPPORTED, "reduce op %d on dtype %d is not supported by the %s backend",
                                      (int)op, (int)src->dtype, WK_GPU_PLATFORM);
    WK_GPU_ENTER(c);

    /* kept dims (the outputs, row-major) and reduced dims, merged */
    int ko = 0, ro = 0;
    int64_t kd[WK_MAX_RANK] = { 0 }, ks[WK_MAX_RANK] = { 0 }, rd[WK_MAX_RANK] = { 0 }, rs[WK_MAX_RANK] = { 0 };
    int64_t M = 1, N = 1;
    for (int d = 0; d < src->rank; d++) {
        const int64_t e = src->dims[d];
        if (dim_mask & (1u << d)) N *= e;
        else M *= e;
        if (e == 1) continue;
        if (dim_mask & (1u << d)) red_push(&ro, rd, rs, e, src->strides[d]);
        else red_push(&ko, kd, ks, e, src->strides[d]);
    }
    if (M == 0) return WK_OK;
    if (N == 0) {
        if (op != WK_OP_SUM)
            return wk_gpu_host->set_error(WK_ERR_SHAPE, "min/max/argmin/argmax over an empty extent");
        WK_GPU_CHECK_C(c, hipMemsetAsync(wk_gpu_view_ptr(dst), 0, (size_t)M * wk_gpu_dtype_size(dst->dtype), c->stream));
        return WK_OK;
    }
    if ((op == WK_OP_ARGMIN || op == WK_OP_ARGMAX) && N >= (int64_t)UINT32_MAX)
        return wk_gpu_host->set_error(WK_ERR_SHAPE, "arg reduction over %lld elements does not fit a u32 index",
                                      (long long)N);

    red_params p;
    memset(&p, 0, sizeof p);
    red_layout(&p.kept, ko, kd, ks, src->offset);
    red_layout(&p.red, ro, rd, rs, 0);
    p.M = M;
    p.N = N;
    p.contig = ro == 1 && rs[0] == 1;
    p.is_max = op == WK_OP_MAX || op == WK_OP_ARGMAX;

    /* rows when the reduction runs along the smaller stride */
    bool rows;
    if (p.contig) rows = true;
    else if (ro == 0) rows = false;
    else if (ko == 0) rows = true;
    else {
        int64_t rmin = INT64_MAX, kmin = INT64_MAX;
        for (int d = 0; d < ro; d++) rmin = rs[d] < rmin ? rs[d] : rmin;
        for (int d = 0; d < ko; d++) kmin = ks[d] < kmin ? ks[d] : kmin;
        rows = rmin < kmin;
    }

    const void *sp = src->base;
    void *dp = wk_gpu_view_ptr(dst);
    wk_status st = WK_OK;
    switch (op) {
    case WK_OP_SUM:
        WK_GPU_DISPATCH_ALL(src->dtype, T, st = red_dispatch_w<T, RED_SUM>(c, (const T *)sp, dp, p, rows));
        break;
    case WK_OP_MIN: case WK_OP_MAX:
        WK_GPU_DISPATCH_ALL(src->dtype, T, st = red_dispatch_w<T, RED_MINMAX>(c, (const T *)sp, dp, p, rows));
        break;
    default:
        WK_GPU_DISPATCH_ALL(src->dtype, T, st = red_dispatch_w<T, RED_ARG>(c, (const T *)sp, dp, p, rows));
        break;
    }
    return st;
}
