/* nn.hip — the GPU's fused NN ops: softmax and log_softmax along any dim,
 * rms_norm (plain, Gemma's (1 + w), and fused with the residual add),
 * layer_norm, and the three rotary embeddings (rope: halves on
 * [B, H, T, D]; rope_i: interleaved pairs; rope_thd: halves on
 * [B, T, H, D]), for f16, bf16, f32 (computed in f32) and f64 (computed in
 * double). The views each op receives are described in src/backend.h
 * (families SOFTMAX, NORM, ROPE); docs/nn.md has the semantics.
 *
 * How they are made fast. Every op here moves each byte once: the row
 * kernels (softmax along the last dim, the norms) read a row once into
 * registers, reduce it across the threads that hold it, and write the
 * result; the rope kernel streams x once and reads each table row once
 * per chunk of heads.
 *   rows  G threads per row (a power of two: 1..W lanes of one warp, or
 *         several warps; G = the fewest threads that hold the row in
 *         NN_UNITS 16-byte units each, doubled while the rows alone
 *         cannot fill the device); thread t of a row holds units t, t + G,
 *         t + 2G, .. (each load instruction of a warp is coalesced), up to
 *         NN_CACHE of them in registers; a row longer than G x NN_CACHE
 *         units (more than 32768 f32 / 65536 bf16 elements with 1024
 *         threads) re-reads the rest from memory in each pass, so every
 *         length works. Groups reduce with warp butterflies (compat.h)
 *         and, when a row spans warps, one step through shared memory.
 *         softmax: max, then the sum of exp(x - max) (f32 and f64 keep the
 *         exponentials in the registers of the row, so each is computed
 *         once; f16/bf16 recompute them with the hardware's approximate
 *         exp, a few f32 ulp), then exp(x - max) / sum or (x - max) -
 *         log(sum). rms_norm: the sum of squares; layer_norm: the mean,
 *         then the sum of squared deviations from the cached row (two
 *         passes over registers: no cancellation); add_rms_norm: the sum
 *         x + residual rounded to the dtype, written out, and normed. The
 *         16-byte path needs the row length a multiple of the unit and
 *         every row start 16-byte aligned; anything else takes the same
 *         kernel with one element per unit (and any column stride).
 *   cols  softmax along a dim that is not the last (inner > 1): a block
 *         of bx threads across inner (coalesced) by `by` threads along
 *         the dim; each thread keeps an online (max, sum) over its slice,
 *         the slices are combined in shared memory, and a second pass
 *         writes (two reads, one write).
 *   rope  one thread per 16-byte unit of a (b, t) row, looping over a
 *         chunk of heads so that its cos/sin values are loaded once for
 *         every head of the chunk (chunks only as many as the device needs
 *         to be full, each a whole number of 4-head rounds; the chunks of
 *         one row are neighbouring threads, so a table row is read from
 *         memory once, not once per chunk: 15% more bytes otherwise at
 *         [1, 32, 16384, 128] bf16); the halves form loads the unit and its
 *         partner D/2 later, the interleaved form one unit of pairs.
 * Warp width: the row kernels take W (32 or 64) as a template parameter;
 * both are instantiated in every build and the host picks the device's
 * (c->warp_size; 64 in the virtual-wave64 build, whose blocks stay at 512
 * threads, under its 960-thread limit). Every lane of a warp reaches
 * every warp operation (rows past the end carry identities). cols and
 * rope use no warp operations.
 * Numerics: softmax subtracts the row max; a row of -inf only gives NaN
 * (0 / 0), as PyTorch does, and so does a row holding a NaN or +inf.
 * Norm statistics accumulate in f32 (double for f64); 1/sqrt is rsqrtf
 * (2 ulp) in f32.
 */
#include "gpu_internal.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

/* ---- tuning knobs -------------------------------------------------------- */

/* 16-byte units a row thread keeps in registers (elements on the
 * one-element path: NN_CACHE1). With __launch_bounds__(1024) a thread has
 * 64 registers; the cache takes 32. */
#ifndef NN_CACHE
#define NN_CACHE 8
#endif
#ifndef NN_CACHE1
#define NN_CACHE1 16
#endif
/* units per thread the host aims for when it picks G (at most the cache):
 * fewer threads per row mean fewer reduction steps and more bytes in
 * flight per thread. The environment variable WICK_GPU_NN_UNITS (1..the
 * cache) overrides it for tuning runs. */
#ifndef NN_UNITS
#define NN_UNITS 8
#endif
#define NN_MAX_BLOCK 1024
#define NN_MAX_WARPS (NN_MAX_BLOCK / 32)
#define NN_COLS_THREADS 256
#define NN_ROPE_BLOCK 256

enum { NN_RMS = 0, NN_LAYER = 1, NN_ADD_RMS = 2 };   /* the norm kernels' ops */

template <typename T, int V> __host__ __device__ constexpr int nn_cache(void) { return V > 1 ? NN_CACHE : NN_CACHE1; }
/* add_rms_norm loads two units for each one it keeps: half the cache, so
 * that all its loads are in flight within the registers */
template <typename T, int V, int OP> __host__ __device__ constexpr int nn_norm_cache(void)
{
    return OP == NN_ADD_RMS ? nn_cache<T, V>() / 2 : nn_cache<T, V>();
}

/* ---- math by compute type ------------------------------------------------- */

/* exp: f16/bf16 take the hardware's approximate f32 exp (FAST), f32 the
 * library's, f64 double */
template <bool FAST> WK_DEV float nn_exp(float x)
{
    if constexpr (FAST) return __expf(x);
    else return expf(x);
}
template <bool FAST> WK_DEV double nn_exp(double x) { return exp(x); }
WK_DEV float nn_log(float x) { return logf(x); }
WK_DEV double nn_log(double x) { return log(x); }
WK_DEV float nn_rsqrt(float x) { return rsqrtf(x); }
WK_DEV double nn_rsqrt(double x) { return 1.0 / sqrt(x); }
WK_DEV float nn_fmax(float a, float b) { return fmaxf(a, b); }
WK_DEV double nn_fmax(double a, double b) { return fmax(a, b); }
template <typename C> WK_DEV C nn_ninf(void) { return -(C)INFINITY; }

struct nn_max_op {
    template <typename C> WK_DEV C operator()(C a, C b) const { return nn_fmax(a, b); }
};
struct nn_sum_op {
    template <typename C> WK_DEV C operator()(C a, C b) const { return a + b; }
};

/* ---- 16-byte units ------------------------------------------------------- */

/* storage -> compute value. f16 through the hardware conversion without
 * gpu_types.h's NaN branch (that branch keeps a NaN's payload bits, which
 * only copies need; any NaN here gives NaN results) */
template <typename T> WK_DEV typename wk_type<T>::C nn_c(T x) { return wk_load_c(x); }
template <> WK_DEV float nn_c(wk_f16_t x)
{
#if defined(__CUDA_ARCH__)
    float f;
    asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(x.bits));
    return f;
#elif defined(__HIP_DEVICE_COMPILE__)
    _Float16 v;
    memcpy(&v, &x.bits, 2);
    return (float)v;
#else
    return wk_load_c(x);
#endif
}

/* compute values -> a unit of T (bf16 rounded in pairs) */
template <typename T, int V, typename C> WK_DEV wk_vec<T, V> nn_pack(const C (&y)[V])
{
    wk_vec<T, V> r;
    if constexpr (std::is_same<T, wk_bf16_t>::value && V % 2 == 0) {
#pragma unroll
        for (int k = 0; k < V; k += 2) wk_fast_f32x2_to_bf16x2(y[k], y[k + 1], &r.v[k]);
    } else {
#pragma unroll
        for (int k = 0; k < V; k++) r.v[k] = wk_to<T>(y[k]);
    }
    return r;
}

/* ---- reductions over a row's G threads ------------------------------------ */

/* Every thread of the group gets op over the group's values. G is a power
 * of two, uniform over the block: G <= W, lanes of one warp (groups
 * aligned to G); G > W, G / W whole warps, then one step through shared
 * memory (sh: one slot per warp of the block). Every lane of the block
 * calls it. */
template <int W, typename C, typename Op> WK_DEV C nn_reduce(C v, int G, C *sh, Op op)
{
    if (G <= W) {
        for (int m = G / 2; m > 0; m /= 2) v = op(v, wk_shfl_xor<W>(v, m));
        return v;
    }
    for (int m = W / 2; m > 0; m /= 2) v = op(v, wk_shfl_xor<W>(v, m));
    const int nw = G / W, wid = wk_warp_id<W>(), lane = wk_lane<W>();
    if (lane == 0) sh[wid] = v;
    __syncthreads();
    v = sh[(wid & ~(nw - 1)) + (lane & (nw - 1))];
    for (int m = nw / 2; m > 0; m /= 2) v = op(v, wk_shfl_xor<W>(v, m));
    __syncthreads();                       /* sh is free for the next reduction */
    return v;
}

/* ---- softmax along the last dim (rows) -------------------------------------- */

/* Thread t's view of a row: its first unit (unit t) and the distance to
 * its next one (G units); in-register units k < nk (nk <= the cache) are
 * t + k G, with 32-bit offsets (k G < 2^31); units past the cache go on
 * at 64 bits. Keeping one base pointer and a count keeps the cache loop
 * from holding a 64-bit address and a predicate per unit. */
template <typename T, int V> struct nn_rowp {
    const T *p;      /* element of unit t                                 */
    int64_t step;    /* elements between units u and u + 1 (V, or cs)     */
    WK_DEV wk_vec<T, V> at(int64_t k, int G) const     /* unit t + k G */
    {
        if constexpr (V == 1) {
            wk_vec<T, 1> r;
            r.v[0] = p[k * G * step];
            return r;
        } else {
            return ((const wk_vec<T, V> *)p)[k * G];
        }
    }
};

/* units of a row held by thread t in registers (nu units, G threads) */
WK_DEV int nn_held(bool live, int64_t nu, int t, int G, int cache)
{
    if (!live || nu <= t) return 0;
    const int64_t k = (nu - t + G - 1) / G;
    return k < cache ? (int)k : cache;
}

/* src rows of n elements at row stride rs (column stride cs; 1 when
 * V > 1), dst contiguous [rows, n]; G threads per row, blockDim.x / G
 * rows per block; the blocks stride over the rows. */
template <typename T, int W, int V>
__global__ void __launch_bounds__(NN_MAX_BLOCK)
nn_softmax_rows(const T *__restrict__ src, T *__restrict__ dst, int64_t rows, int64_t n, int64_t rs, int64_t cs,
                int G, int logsm)
{
    typedef typename wk_type<T>::C C;
    typedef wk_vec<T, V> U;
    constexpr bool FAST = wk_type<T>::is_narrow;
    constexpr int NV = nn_cache<T, V>();
    __shared__ C sh[NN_MAX_WARPS];
    const int tid = (int)threadIdx.x, t = tid % G, R = (int)blockDim.x / G;
    const int64_t nu = n / V, es = V == 1 ? cs : V;
    for (int64_t base = (int64_t)blockIdx.x * R; base < rows; base += (int64_t)gridDim.x * R) {
        const int64_t row = base + tid / G;
        const bool live = row < rows;
        const int nk = nn_held(live, nu, t, G, NV);
        const nn_rowp<T, V> rp = { src + (live ? row : 0) * rs + t * es, es };
        U *__restrict__ q = (U *)(dst + (live ? row : 0) * n) + t;   /* unit t; next G on */
        const bool more = live && nu > (int64_t)NV * G;              /* units past the cache */
        U x[NV];
#pragma unroll
        for (int k = 0; k < NV; k++)
            if (k < nk) x[k] = rp.at(k, G);
        C m = nn_ninf<C>();
#pragma unroll
        for (int k = 0; k < NV; k++)
            if (k < nk) {
#pragma unroll
                for (int j = 0; j < V; j++) m = nn_fmax(m, nn_c(x[k].v[j]));
            }
        if (more)
            for (int64_t k = NV; t + k * G < nu; k++) {
                const U y = rp.at(k, G);
#pragma unroll
                for (int j = 0; j < V; j++) m = nn_fmax(m, nn_c(y.v[j]));
            }
        m = nn_reduce<W>(m, G, sh, nn_max_op());

        C s = 0;
#pragma unroll
        for (int k = 0; k < NV; k++)
            if (k < nk) {
#pragma unroll
                for (int j = 0; j < V; j++) {
                    const C e = nn_exp<FAST>(nn_c(x[k].v[j]) - m);
                    s += e;
                    if constexpr (!wk_type<T>::is_narrow) {
                        if (!logsm) x[k].v[j] = e;       /* f32/f64: keep it */
                    }
                }
            }
        if (more)
            for (int64_t k = NV; t + k * G < nu; k++) {
                const U y = rp.at(k, G);
#pragma unroll
                for (int j = 0; j < V; j++) s += nn_exp<FAST>(nn_c(y.v[j]) - m);
            }
        s = nn_reduce<W>(s, G, sh, nn_sum_op());

        const C r = (C)1 / s, ls = nn_log(s);
        /* y: the unit as loaded, or (f32/f64 softmax, cached) its exponentials */
        auto out = [&](const U &y, bool cached) {
            C o[V];
#pragma unroll
            for (int j = 0; j < V; j++) {
                const C v = nn_c(y.v[j]);
                if (logsm) o[j] = (v - m) - ls;
                else if (!wk_type<T>::is_narrow && cached) o[j] = v * r;
                else o[j] = nn_exp<FAST>(v - m) * r;
            }
            return nn_pack<T, V>(o);
        };
#pragma unroll
        for (int k = 0; k < NV; k++)
            if (k < nk) q[k * G] = out(x[k], true);
        if (more)
            for (int64_t k = NV; t + k * G < nu; k++) q[k * G] = out(rp.at(k, G), false);
    }
}

/* ---- softmax along another dim (cols) ---------------------------------------- */

/* (m, s): the running max and the sum of exp(x - m). While every value
 * seen is -inf, m is -inf and s 0 (a NaN seen then is kept in s); a NaN
 * or +inf makes s NaN, and the row's results NaN. */
template <typename C> WK_DEV void nn_online(C &m, C &s, C x)
{
    const C nm = nn_fmax(m, x);
    if (nm == nn_ninf<C>()) {
        if (x != x) s = x;
        return;
    }
    s = s * nn_exp<false>(m - nm) + nn_exp<false>(x - nm);
    m = nm;
}
template <typename C> WK_DEV void nn_online_merge(C &m, C &s, C m2, C s2)
{
    const C nm = nn_fmax(m, m2);
    if (nm == nn_ninf<C>()) {
        s = s + s2;
        return;
    }
    s = s * nn_exp<false>(m - nm) + s2 * nn_exp<false>(m2 - nm);
    m = nm;
}

/* src [outer, n, inner] (strides os, sn, is), dst contiguous; block
 * (bx, by): bx consecutive i of inner, by slices of n (a power of two);
 * item = (o, block of inner), nib blocks of inner per o. */
template <typename T>
__global__ void __launch_bounds__(NN_COLS_THREADS)
nn_softmax_cols(const T *__restrict__ src, T *__restrict__ dst, int64_t outer, int64_t n, int64_t inner, int64_t os,
                int64_t sn, int64_t is, int64_t nib, int logsm)
{
    typedef typename wk_type<T>::C C;
    __shared__ C shm[NN_COLS_THREADS], shs[NN_COLS_THREADS];
    const int bx = (int)blockDim.x, by = (int)blockDim.y, tx = (int)threadIdx.x, ty = (int)threadIdx.y;
    const int me = ty * bx + tx;
    for (int64_t item = blockIdx.x; item < outer * nib; item += gridDim.x) {
        const int64_t o = item / nib, i = (item - o * nib) * bx + tx;
        const bool live = i < inner;
        const T *__restrict__ p = src + o * os + (live ? i : 0) * is;
        C m = nn_ninf<C>(), s = 0;
        if (live)
            for (int64_t j = ty; j < n; j += by) nn_online(m, s, nn_c(p[j * sn]));
        shm[me] = m;
        shs[me] = s;
        __syncthreads();
        for (int h = by / 2; h > 0; h /= 2) {
            if (ty < h) {
                C a = shm[me], b = shs[me];
                nn_online_merge(a, b, shm[me + h * bx], shs[me + h * bx]);
                shm[me] = a;
                shs[me] = b;
            }
            __syncthreads();
        }
        m = shm[tx];
        s = shs[tx];
        __syncthreads();                   /* shm/shs free for the next item */
        if (live) {
            const C r = (C)1 / s, ls = nn_log(s);
            T *__restrict__ q = dst + o * n * inner + i;
            for (int64_t j = ty; j < n; j += by) {
                const C d = nn_c(p[j * sn]) - m;
                q[j * inner] = wk_to<T>(logsm ? d - ls : nn_exp<false>(d) * r);
            }
        }
    }
}

/* ---- norms (rows) ---------------------------------------------------------------- */

template <typename T> struct nn_norm_args {
    const T *x;        /* [rows, D], row stride xs                         */
    const T *r;        /* ADD_RMS: residual [rows, D], row stride rs       */
    const T *w, *b;    /* [D] or NULL                                      */
    T *dst;            /* [rows, D] contiguous                             */
    T *sum;            /* ADD_RMS: x + residual, [rows, D] contiguous      */
    int64_t rows, D, xs, rs;
    double eps;
    int gemma;         /* RMS, ADD_RMS: weight applied as (1 + w)          */
    int G;
};

template <typename T, int W, int V, int OP>
__global__ void __launch_bounds__(NN_MAX_BLOCK) nn_norm_rows(nn_norm_args<T> a)
{
    typedef typename wk_type<T>::C C;
    typedef wk_vec<T, V> U;
    constexpr int NV = nn_norm_cache<T, V, OP>();
    __shared__ C sh[NN_MAX_WARPS];
    wk_pdl_wait();
    const int G = a.G, tid = (int)threadIdx.x, t = tid % G, R = (int)blockDim.x / G;
    const int64_t nu = a.D / V;
    const C invD = (C)1 / (C)a.D, eps = (C)a.eps;
    /* every operand's unit t; unit t + k G is k G units on */
    const U *__restrict__ wt = a.w ? (const U *)a.w + t : NULL;
    const U *__restrict__ bt = a.b ? (const U *)a.b + t : NULL;
    for (int64_t base = (int64_t)blockIdx.x * R; base < a.rows; base += (int64_t)gridDim.x * R) {
        const int64_t row = base + tid / G;
        const bool live = row < a.rows;
        const int64_t rr = live ? row : 0;
        const int nk = nn_held(live, nu, t, G, NV);
        const bool more = live && nu > (int64_t)NV * G;
        const U *__restrict__ xt = (const U *)(a.x + rr * a.xs) + t;
        const U *__restrict__ rt = OP == NN_ADD_RMS ? (const U *)(a.r + rr * a.rs) + t : NULL;
        U *__restrict__ st = OP == NN_ADD_RMS ? (U *)(a.sum + rr * a.D) + t : NULL;
        U *__restrict__ q = (U *)(a.dst + rr * a.D) + t;
        /* unit t + k G of the row normed (ADD_RMS: the rounded sum, written
         * in the first pass and read back by the same thread after it) */
        auto first = [&](int64_t k) {
            U v = xt[k * G];
            if constexpr (OP == NN_ADD_RMS) {
                const U y = rt[k * G];
                C z[V];
#pragma unroll
                for (int j = 0; j < V; j++) z[j] = nn_c(v.v[j]) + nn_c(y.v[j]);
                v = nn_pack<T, V>(z);
                st[k * G] = v;
            }
            return v;
        };
        auto again = [&](int64_t k) {
            if constexpr (OP == NN_ADD_RMS) return (U)st[k * G];
            else return (U)xt[k * G];
        };
        U x[NV];
#pragma unroll
        for (int k = 0; k < NV; k++)
            if (k < nk) x[k] = first(k);
        C s1 = 0;
        auto acc1 = [&](const U &v) {
#pragma unroll
            for (int j = 0; j < V; j++) {
                const C c = nn_c(v.v[j]);
                s1 += OP == NN_LAYER ? c : c * c;
            }
        };
#pragma unroll
        for (int k = 0; k < NV; k++)
            if (k < nk) acc1(x[k]);
        if (more)
            for (int64_t k = NV; t + k * G < nu; k++) acc1(first(k));
        s1 = nn_reduce<W>(s1, G, sh, nn_sum_op());
        C mean = 0, inv;
        if constexpr (OP == NN_LAYER) {
            mean = s1 * invD;
            C s2 = 0;
            auto acc2 = [&](const U &v) {
#pragma unroll
                for (int j = 0; j < V; j++) {
                    const C d = nn_c(v.v[j]) - mean;
                    s2 += d * d;
                }
            };
#pragma unroll
            for (int k = 0; k < NV; k++)
                if (k < nk) acc2(x[k]);
            if (more)
                for (int64_t k = NV; t + k * G < nu; k++) acc2(again(k));
            s2 = nn_reduce<W>(s2, G, sh, nn_sum_op());
            inv = nn_rsqrt(s2 * invD + eps);
        } else {
            inv = nn_rsqrt(s1 * invD + eps);
        }
        auto out = [&](int64_t k, const U &v) {
            C o[V];
#pragma unroll
            for (int j = 0; j < V; j++) o[j] = (nn_c(v.v[j]) - mean) * inv;
            if (wt) {
                const U wv = wt[k * G];
#pragma unroll
                for (int j = 0; j < V; j++) {
                    const C w = nn_c(wv.v[j]);
                    o[j] *= (OP != NN_LAYER && a.gemma) ? (C)1 + w : w;
                }
            }
            if constexpr (OP == NN_LAYER) {
                if (bt) {
                    const U bv = bt[k * G];
#pragma unroll
                    for (int j = 0; j < V; j++) o[j] += nn_c(bv.v[j]);
                }
            }
            q[k * G] = nn_pack<T, V>(o);
        };
#pragma unroll
        for (int k = 0; k < NV; k++)
            if (k < nk) out(k, x[k]);
        if (more)
            for (int64_t k = NV; t + k * G < nu; k++) out(k, again(k));
    }
}

/* ---- rotary embeddings ---------------------------------------------------------- */

/* x rank 4 with a t dim and a head dim among dims 1, 2 (ROPE, ROPE_I:
 * [B, H, T, D]; ROPE_THD: [B, T, H, D]); dst contiguous, x's dims. An
 * item is P pairs of one (b, t) row: halves, the pairs (i, i + D/2) for
 * i in [u P, u P + P); interleaved, (2i, 2i + 1). Items are ordered u
 * fastest, then the chunk of heads, then t, then b (the chunks of one
 * row run side by side, so each table row comes from memory once); a
 * thread does its item for the HP heads of its chunk. */
struct nn_rope_args {
    int64_t n_items;                 /* B * HC * T * U                        */
    int64_t U, T, HC, HP, H, half;   /* half = D / 2                          */
    int64_t xb, xt, xh;              /* x strides of b, t, head               */
    int64_t ob, ot, oh;              /* dst strides of b, t, head             */
    int64_t pos0;
    wk_divmod32 du, dt, dhc;         /* for n_items < 2^32                    */
};

/* N elements at p as one unit: a 16-byte load when VEC, else one by one */
template <typename T, int N, bool VEC> WK_DEV wk_vec<T, N> nn_ld(const T *__restrict__ p)
{
    if constexpr (VEC) return *(const wk_vec<T, N> *)p;
    else {
        wk_vec<T, N> r;
#pragma unroll
        for (int k = 0; k < N; k++) r.v[k] = p[k];
        return r;
    }
}
template <typename T, int N, bool VEC> WK_DEV void nn_st(T *__restrict__ p, const wk_vec<T, N> &v)
{
    if constexpr (VEC) *(wk_vec<T, N> *)p = v;
    else {
#pragma unroll
        for (int k = 0; k < N; k++) p[k] = v.v[k];
    }
}
/* N f32 of a table row: 16-byte loads where N allows (VEC) */
template <int N, bool VEC> WK_DEV void nn_ld_f32(const float *__restrict__ p, float (&o)[N])
{
    if constexpr (VEC && N % 4 == 0) {
#pragma unroll
        for (int k = 0; k < N; k += 4) {
            const wk_vec<float, 4> v = *(const wk_vec<float, 4> *)(p + k);
#pragma unroll
            for (int j = 0; j < 4; j++) o[k + j] = v.v[j];
        }
    } else if constexpr (VEC && N == 2) {
        const wk_vec<float, 2> v = *(const wk_vec<float, 2> *)p;
        o[0] = v.v[0];
        o[1] = v.v[1];
    } else {
#pragma unroll
        for (int k = 0; k < N; k++) o[k] = p[k];
    }
}

/* heads loaded before any is computed and stored */
#define NN_ROPE_HEADS 4

template <typename T, int P, bool VEC, bool INTERLEAVED>
__global__ void __launch_bounds__(NN_ROPE_BLOCK)
nn_rope(const T *__restrict__ x, T *__restrict__ dst, const float *__restrict__ ctab,
        const float *__restrict__ stab, nn_rope_args a)
{
    typedef typename wk_type<T>::C C;
    constexpr int E = INTERLEAVED ? 2 * P : P;      /* elements per load */
    constexpr int NL = INTERLEAVED ? 1 : 2;         /* loads per head    */
    WK_GPU_FOR(i, a.n_items) {
        int64_t u, t, hc, b;
        if (a.n_items <= (int64_t)UINT32_MAX) {
            uint32_t r = (uint32_t)i, q = wk_divmod32_div(a.du, r);
            u = r - q * a.du.d;
            r = q;
            q = wk_divmod32_div(a.dhc, r);
            hc = r - q * a.dhc.d;
            r = q;
            q = wk_divmod32_div(a.dt, r);
            t = r - q * a.dt.d;
            b = q;
        } else {
            int64_t r = i;
            u = r % a.U, r /= a.U;
            hc = r % a.HC, r /= a.HC;
            t = r % a.T, b = r / a.T;
        }
        float c[P], s[P];
        const int64_t prow = (t + a.pos0) * a.half + u * P;
        nn_ld_f32<P, VEC>(ctab + prow, c);
        nn_ld_f32<P, VEC>(stab + prow, s);
        const int64_t col = INTERLEAVED ? 2 * u * P : u * P;
        const T *__restrict__ px = x + b * a.xb + t * a.xt + col;
        T *__restrict__ po = dst + b * a.ob + t * a.ot + col;
        const int64_t h0 = hc * a.HP, h1 = h0 + a.HP < a.H ? h0 + a.HP : a.H;
        for (int64_t h = h0; h < h1; h += NN_ROPE_HEADS) {
            wk_vec<T, E> in[NN_ROPE_HEADS][NL];
#pragma unroll
            for (int k = 0; k < NN_ROPE_HEADS; k++) {
                if (h + k < h1) {
#pragma unroll
                    for (int l = 0; l < NL; l++) in[k][l] = nn_ld<T, E, VEC>(px + (h + k) * a.xh + l * a.half);
                }
            }
#pragma unroll
            for (int k = 0; k < NN_ROPE_HEADS; k++) {
                if (h + k < h1) {
                    if constexpr (INTERLEAVED) {
                        C o[E];
#pragma unroll
                        for (int j = 0; j < P; j++) {
                            const C x0 = nn_c(in[k][0].v[2 * j]), x1 = nn_c(in[k][0].v[2 * j + 1]);
                            o[2 * j] = x0 * (C)c[j] - x1 * (C)s[j];
                            o[2 * j + 1] = x0 * (C)s[j] + x1 * (C)c[j];
                        }
                        nn_st<T, E, VEC>(po + (h + k) * a.oh, nn_pack<T, E>(o));
                    } else {
                        C lo[P], hi[P];
#pragma unroll
                        for (int j = 0; j < P; j++) {
                            const C x0 = nn_c(in[k][0].v[j]), x1 = nn_c(in[k][1].v[j]);
                            lo[j] = x0 * (C)c[j] - x1 * (C)s[j];
                            hi[j] = x0 * (C)s[j] + x1 * (C)c[j];
                        }
                        nn_st<T, E, VEC>(po + (h + k) * a.oh, nn_pack<T, E>(lo));
                        nn_st<T, E, VEC>(po + (h + k) * a.oh + a.half, nn_pack<T, E>(hi));
                    }
                }
            }
        }
    }
}

/* rope_kv: one thread per pair (i, i + D/2) or (2i, 2i + 1) of a head of
 * a (b, t) row of qkv; query pairs go to dst, key pairs (rotated) and
 * value pairs (as they are) to row p = pos + t of the caches. The
 * position is read from device memory when ppos is set (a recorded
 * graph's). A decode step's qkv is a few thousand pairs: the launch, not
 * the bytes, is its cost, which is what doing the three moves in one
 * launch saves. */
struct nn_rope_kv_args {
    int64_t n;                        /* B * T * H * half                      */
    int64_t T, H, half, nq, hkv;
    int64_t xb, xt, xh;               /* qkv strides                           */
    int64_t kb, kh, kp, vb, vh, vp;   /* cache strides of b, head, position    */
    int64_t rows;                     /* positions below: table rows and both caches' */
    int64_t pos0;
    const void *ppos;                 /* the position (u32 or i64) or NULL      */
    int pos64, inter;
};

template <typename T>
__global__ void __launch_bounds__(NN_ROPE_BLOCK)
nn_rope_kv(const T *__restrict__ x, T *__restrict__ q, T *__restrict__ kc, T *__restrict__ vc,
           const float *__restrict__ ctab, const float *__restrict__ stab, nn_rope_kv_args a)
{
    typedef typename wk_type<T>::C C;
    wk_pdl_wait();
    int64_t p0 = a.pos0;
    if (a.ppos) p0 += a.pos64 ? *(const int64_t *)a.ppos : (int64_t)*(const uint32_t *)a.ppos;
    WK_GPU_FOR(e, a.n) {
        int64_t r = e / a.half;
        const int64_t i = e - r * a.half, h = r % a.H;
        r /= a.H;
        const int64_t t = r % a.T, b = r / a.T, p = p0 + t;
        const bool in = p >= 0 && p < a.rows;
        const int64_t i0 = a.inter ? 2 * i : i, i1 = a.inter ? 2 * i + 1 : i + a.half;
        T *o;
        if (h < a.nq) o = q + ((b * a.T + t) * a.nq + h) * 2 * a.half;
        else if (!in) continue;
        else if (h < a.nq + a.hkv) o = kc + b * a.kb + (h - a.nq) * a.kh + p * a.kp;
        else o = vc + b * a.vb + (h - a.nq - a.hkv) * a.vh + p * a.vp;
        if (!in) {   /* a query past the tables or the caches: zeros */
            o[i0] = wk_to<T>((C)0);
            o[i1] = wk_to<T>((C)0);
            continue;
        }
        const T *xr = x + b * a.xb + t * a.xt + h * a.xh;
        C x0 = nn_c(xr[i0]), x1 = nn_c(xr[i1]);
        if (h < a.nq + a.hkv) wk_rope_turn<C>(x0, x1, (C)ctab[p * a.half + i], (C)stab[p * a.half + i]);
        o[i0] = wk_to<T>(x0);
        o[i1] = wk_to<T>(x1);
    }
}

/* ------------------------------------------------------------------ */
/* Host                                                                */

/* the four dtypes of the NN ops (f8 has no kernels here) */
#define NN_DISPATCH(dt, T, ...)                                              \
    switch (dt) {                                                            \
    WK_GPU_CASE_(WK_BF16, wk_bf16_t, T, __VA_ARGS__)                         \
    WK_GPU_CASE_(WK_F16, wk_f16_t, T, __VA_ARGS__)                           \
    WK_GPU_CASE_(WK_F32, float, T, __VA_ARGS__)                              \
    WK_GPU_CASE_(WK_F64, double, T, __VA_ARGS__)                             \
    default: break;                                                          \
    }

static bool nn_dtype_ok(wk_dtype dt) { return dt == WK_BF16 || dt == WK_F16 || dt == WK_F32 || dt == WK_F64; }

static wk_status nn_bad(const wk_op_args *a, const char *what)
{
    return wk_gpu_host->set_error(WK_ERR_BACKEND, "%s: %s (the core should have caught this)", wk_gpu_op_name(a->op),
                                  what);
}

static int64_t nn_cdiv(int64_t a, int64_t b) { return (a + b - 1) / b; }
static int64_t nn_pow2_ceil(int64_t x)
{
    int64_t p = 1;
    while (p < x) p *= 2;
    return p;
}

/* threads per block at most: 1024, 512 in the virtual-wave64 build (its
 * named barriers serve 960 threads) */
static int nn_max_block(const wk_gpu_ctx *c)
{
    int m = c->max_threads_per_block < NN_MAX_BLOCK ? c->max_threads_per_block : NN_MAX_BLOCK;
    if (c->warp_size > c->hw_warp_size && m > 512) m = 512;
    return m;
}

/* units per thread aimed at (NN_UNITS; WICK_GPU_NN_UNITS for tuning) */
static int nn_units_target(void)
{
    const int x = wk_gpu_env.nn_units;
    return x >= 1 && x <= 64 ? x : NN_UNITS;
}

/* The launch shape of a rows kernel: rows of nu units, `cache` units per
 * thread in registers. */
struct nn_rows_plan {
    int G, block;
    unsigned grid;
};
static nn_rows_plan nn_plan_rows(const wk_gpu_ctx *c, int64_t rows, int64_t nu, int cache)
{
    const int W = c->warp_size, maxb = nn_max_block(c);
    int64_t per = nn_units_target();
    if (per > cache) per = cache;
    int64_t g = 1;
    while (g < maxb && g * per < nu) g *= 2;
    /* few rows: more threads per row (down to one unit each) while the
     * rows alone cannot fill the device */
    const int64_t full = (int64_t)c->sm_count * (c->max_threads_per_sm > 0 ? c->max_threads_per_sm : 2048);
    while (g < maxb && g < nu && rows * g * 2 <= full) g *= 2;
    nn_rows_plan p;
    p.G = (int)g;
    p.block = g > 4 * W ? (int)g : 4 * W;
    if (p.block > maxb) p.block = maxb;
    int64_t blocks = nn_cdiv(rows, p.block / p.G);
    if (blocks > ((int64_t)1 << 20)) blocks = (int64_t)1 << 20;
    p.grid = (unsigned)(blocks < 1 ? 1 : blocks);
    return p;
}

/* ---- softmax ---- */

template <typename T, int W>
static void nn_softmax_rows_launch(wk_gpu_ctx *c, const T *s, T *d, int64_t rows, int64_t n, int64_t rs, int64_t cs,
                                   bool vec, int logsm)
{
    constexpr int V = wk_vec_width<T>;
    if (vec) {
        const nn_rows_plan p = nn_plan_rows(c, rows, n / V, nn_cache<T, V>());
        nn_softmax_rows<T, W, V><<<p.grid, p.block, 0, c->stream>>>(s, d, rows, n, rs, 1, p.G, logsm);
    } else {
        const nn_rows_plan p = nn_plan_rows(c, rows, n, nn_cache<T, 1>());
        nn_softmax_rows<T, W, 1><<<p.grid, p.block, 0, c->stream>>>(s, d, rows, n, rs, cs, p.G, logsm);
    }
}

template <typename T>
static void nn_softmax_cols_launch(wk_gpu_ctx *c, const T *s, T *d, int64_t outer, int64_t n, int64_t inner,
                                   int64_t os, int64_t sn, int64_t is, int logsm)
{
    int64_t bx = nn_pow2_ceil(inner < 64 ? inner : 64);
    int64_t by = NN_COLS_THREADS / bx;
    while (by > 1 && by / 2 >= n) by /= 2;
    const int64_t nib = nn_cdiv(inner, bx);
    int64_t blocks = outer * nib;
    if (blocks > ((int64_t)1 << 20)) blocks = (int64_t)1 << 20;
    nn_softmax_cols<T><<<(unsigned)blocks, dim3((unsigned)bx, (unsigned)by), 0, c->stream>>>(s, d, outer, n, inner, os,
                                                                                         sn, is, nib, logsm);
}

wk_status wk_gpu_softmax(void *ctx, const wk_op_args *a)
{
    wk_gpu_ctx *c = (wk_gpu_ctx *)ctx;
    if (a->op != WK_OP_SOFTMAX && a->op != WK_OP_LOG_SOFTMAX) return nn_bad(a, "not a softmax op");
    const wk_view *d = a->dst, *s = a->src[0];
    if (!d || !s) return nn_bad(a, "missing dst or src");
    if (!nn_dtype_ok(s->dtype) || d->dtype != s->dtype)
        return wk_gpu_host->set_error(WK_ERR_DTYPE, "%s: dtype %s (dst %s) is not one of f16, bf16, f32, f64",
                                      wk_gpu_op_name(a->op), wk_gpu_dtype_name(s->dtype), wk_gpu_dtype_name(d->dtype));
    if (s->rank != 3 || d->rank != 3 || memcmp(s->dims, d->dims, 3 * sizeof s->dims[0]) != 0)
        return nn_bad(a, "src and dst must be [outer, n, inner] of one shape");
    const int64_t outer = s->dims[0], n = s->dims[1], inner = s->dims[2];
    if (outer == 0 || n == 0 || inner == 0) return WK_OK;
    if (d->strides[2] != 1 || d->strides[1] != inner || (outer > 1 && d->strides[0] != n * inner))
        return nn_bad(a, "dst must be contiguous");
    WK_GPU_ENTER(c);
    const int logsm = a->op == WK_OP_LOG_SOFTMAX;
    const void *sp = wk_gpu_view_ptr(s);
    void *dp = wk_gpu_view_ptr(d);
    const int64_t os = s->strides[0], sn = s->strides[1], is = s->strides[2];
    NN_DISPATCH(s->dtype, T, {
        if (inner == 1) {
            constexpr int V = wk_vec_width<T>;
            const bool vec = (sn == 1 || n == 1) && n % V == 0 && (outer == 1 || os % V == 0) &&
                             wk_gpu_aligned(sp, 16) && wk_gpu_aligned(dp, 16);
            if (c->warp_size == 64)
                nn_softmax_rows_launch<T, 64>(c, (const T *)sp, (T *)dp, outer, n, os, sn, vec, logsm);
            else
                nn_softmax_rows_launch<T, 32>(c, (const T *)sp, (T *)dp, outer, n, os, sn, vec, logsm);
        } else {
            nn_softmax_cols_launch<T>(c, (const T *)sp, (T *)dp, outer, n, inner, os, sn, is, logsm);
        }
    })
    WK_GPU_LAUNCH_CHECK(c, inner == 1 ? "softmax (rows)" : "softmax (cols)");
    return WK_OK;
}

/* ---- norms ---- */

template <typename T, int W, int OP>
static void nn_norm_launch(wk_gpu_ctx *c, nn_norm_args<T> args, bool vec)
{
    constexpr int V = wk_vec_width<T>;
    if (vec) {
        const nn_rows_plan p = nn_plan_rows(c, args.rows, args.D / V, nn_norm_cache<T, V, OP>());
        args.G = p.G;
        WK_LAUNCH_PDL(c->cc_major >= 9, (nn_norm_rows<T, W, V, OP>), p.grid, p.block, 0, c->stream, args);
    } else {
        const nn_rows_plan p = nn_plan_rows(c, args.rows, args.D, nn_norm_cache<T, 1, OP>());
        args.G = p.G;
        WK_LAUNCH_PDL(c->cc_major >= 9, (nn_norm_rows<T, W, 1, OP>), p.grid, p.block, 0, c->stream, args);
    }
}

template <typename T, int OP> static void nn_norm_launch_w(wk_gpu_ctx *c, const nn_norm_args<T> &args, bool vec)
{
    if (c->warp_size == 64) nn_norm_launch<T, 64, OP>(c, args, vec);
    else nn_norm_launch<T, 32, OP>(c, args, vec);
}

/* a [D] parameter view (weight, bias): contiguous, x's dtype */
static wk_status nn_check_param(const wk_op_args *a, const wk_view *p, int64_t D, wk_dtype dt, const char *name)
{
    if (!p) return WK_OK;
    if (p->dtype != dt || p->rank != 1 || p->dims[0] != D || (D > 1 && p->strides[0] != 1)) {
        char what[96];
        snprintf(what, sizeof what, "%s must be a contiguous [%lld] of x's dtype", name, (long long)D);
        return nn_bad(a, what);
    }
    return WK_OK;
}

/* a [rows, D] view with strides [row stride, 1] */
static bool nn_rows_view(const wk_view *v, int64_t rows, int64_t D, wk_dtype dt)
{
    return v && v->dtype == dt && v->rank == 2 && v->dims[0] == rows && v->dims[1] == D &&
           (D <= 1 || v->strides[1] == 1);
}

wk_status wk_gpu_norm(void *ctx, const wk_op_args *a)
{
    wk_gpu_ctx *c = (wk_gpu_ctx *)ctx;
    const wk_op op = a->op;
    if (op != WK_OP_RMS_NORM && op != WK_OP_LAYER_NORM && op != WK_OP_ADD_RMS_NORM) return nn_bad(a, "not a norm");
    const wk_view *x = a->src[0], *d = a->dst;
    if (!x || !d) return nn_bad(a, "missing dst or x");
    const wk_dtype dt = x->dtype;
    if (!nn_dtype_ok(dt))
        return wk_gpu_host->set_error(WK_ERR_DTYPE, "%s: dtype %s is not one of f16, bf16, f32, f64", wk_gpu_op_name(op),
                                      wk_gpu_dtype_name(dt));
    if (x->rank != 2) return nn_bad(a, "x must be [rows, D]");
    const int64_t rows = x->dims[0], D = x->dims[1];
    if (!nn_rows_view(x, rows, D, dt) || !nn_rows_view(d, rows, D, dt) || (rows > 1 && d->strides[0] != D))
        return nn_bad(a, "x must be [rows, D] with unit column stride and dst contiguous of x's dims and dtype");
    const wk_view *r = NULL, *w = NULL, *b = NULL, *sum = NULL;
    if (op == WK_OP_ADD_RMS_NORM) {
        r = a->src[1], w = a->src[2], sum = a->src[3];
        if (!nn_rows_view(r, rows, D, dt) || !nn_rows_view(sum, rows, D, dt) || (rows > 1 && sum->strides[0] != D))
            return nn_bad(a, "residual and sum must be [rows, D] of x's dtype, sum contiguous");
    } else {
        w = a->src[1];
        if (op == WK_OP_LAYER_NORM) b = a->src[2];
    }
    wk_status st = nn_check_param(a, w, D, dt, "weight");
    if (st == WK_OK) st = nn_check_param(a, b, D, dt, "bias");
    if (st != WK_OK) return st;
    if (!(a->p[0] >= 0) || !isfinite(a->p[0])) return nn_bad(a, "eps must be finite and >= 0");
    if (rows == 0 || D == 0) return WK_OK;
    WK_GPU_ENTER(c);
    const void *px = wk_gpu_view_ptr(x), *pr = r ? wk_gpu_view_ptr(r) : NULL;
    const void *pw = w ? wk_gpu_view_ptr(w) : NULL, *pb = b ? wk_gpu_view_ptr(b) : NULL;
    void *pd = wk_gpu_view_ptr(d), *ps = sum ? wk_gpu_view_ptr(sum) : NULL;
    const int64_t xs = rows > 1 ? x->strides[0] : D, rs = r && rows > 1 ? r->strides[0] : D;
    NN_DISPATCH(dt, T, {
        constexpr int V = wk_vec_width<T>;
        const bool vec = D % V == 0 && xs % V == 0 && rs % V == 0 && wk_gpu_aligned(px, 16) &&
                         wk_gpu_aligned(pd, 16) && (!pr || wk_gpu_aligned(pr, 16)) &&
                         (!ps || wk_gpu_aligned(ps, 16)) && (!pw || wk_gpu_aligned(pw, 16)) &&
                         (!pb || wk_gpu_aligned(pb, 16));
        nn_norm_args<T> args;
        args.x = (const T *)px;
        args.r = (const T *)pr;
        args.w = (const T *)pw;
        args.b = (const T *)pb;
        args.dst = (T *)pd;
        args.sum = (T *)ps;
        args.rows = rows;
        args.D = D;
        args.xs = xs;
        args.rs = rs;
        args.eps = a->p[0];
        args.gemma = a->p[1] != 0;
        args.G = 1;
        if (op == WK_OP_RMS_NORM) nn_norm_launch_w<T, NN_RMS>(c, args, vec);
        else if (op == WK_OP_LAYER_NORM) nn_norm_launch_w<T, NN_LAYER>(c, args, vec);
        else nn_norm_launch_w<T, NN_ADD_RMS>(c, args, vec);
    })
    WK_GPU_LAUNCH_CHECK(c, wk_gpu_op_name(op));
    return WK_OK;
}

/* ---- ropes ---- */

template <typename T, int P, bool VEC>
static void nn_rope_launch(wk_gpu_ctx *c, bool interleaved, const T *x, T *d, const float *ct, const float *stab,
                           nn_rope_args ra, int64_t B)
{
    /* items without splitting the heads, then as many chunks of heads as
     * fill the device twice over */
    const int64_t per_b = ra.T * ra.U;
    const int64_t target = 2 * (int64_t)c->sm_count * (c->max_threads_per_sm > 0 ? c->max_threads_per_sm : 2048);
    int64_t hc = nn_cdiv(target, B * per_b > 0 ? B * per_b : 1);
    if (hc > ra.H) hc = ra.H;
    if (hc < 1) hc = 1;
    ra.HP = nn_cdiv(ra.H, hc);
    if (ra.HP > NN_ROPE_HEADS) ra.HP = nn_cdiv(ra.HP, NN_ROPE_HEADS) * NN_ROPE_HEADS;   /* whole rounds */
    ra.HC = nn_cdiv(ra.H, ra.HP);
    ra.n_items = B * ra.HC * per_b;
    const bool small = ra.n_items <= (int64_t)UINT32_MAX;
    ra.du = wk_divmod32_make(small ? (uint32_t)ra.U : 1u);
    ra.dt = wk_divmod32_make(small ? (uint32_t)ra.T : 1u);
    ra.dhc = wk_divmod32_make(small ? (uint32_t)ra.HC : 1u);
    int64_t blocks = nn_cdiv(ra.n_items, NN_ROPE_BLOCK);
    if (blocks > ((int64_t)1 << 20)) blocks = (int64_t)1 << 20;
    if (interleaved) nn_rope<T, P, VEC, true><<<(unsigned)blocks, NN_ROPE_BLOCK, 0, c->stream>>>(x, d, ct, stab, ra);
    else nn_rope<T, P, VEC, false><<<(unsigned)blocks, NN_ROPE_BLOCK, 0, c->stream>>>(x, d, ct, stab, ra);
}

wk_status wk_gpu_rope(void *ctx, const wk_op_args *a)
{
    wk_gpu_ctx *c = (wk_gpu_ctx *)ctx;
    const wk_op op = a->op;
    if (op != WK_OP_ROPE && op != WK_OP_ROPE_I && op != WK_OP_ROPE_THD) return nn_bad(a, "not a rope");
    const wk_view *x = a->src[0], *d = a->dst, *cv = a->src[1], *sv = a->src[2];
    if (!x || !d || !cv || !sv) return nn_bad(a, "missing dst, x, cos or sin");
    const wk_dtype dt = x->dtype;
    if (!nn_dtype_ok(dt) || d->dtype != dt)
        return wk_gpu_host->set_error(WK_ERR_DTYPE, "%s: dtype %s (dst %s) is not one of f16, bf16, f32, f64",
                                      wk_gpu_op_name(op), wk_gpu_dtype_name(dt), wk_gpu_dtype_name(d->dtype));
    if (x->rank != 4 || d->rank != 4 || memcmp(x->dims, d->dims, 4 * sizeof x->dims[0]) != 0)
        return nn_bad(a, "x and dst must be rank 4 of one shape");
    const int64_t D = x->dims[3], half = D / 2;
    if (D % 2) return nn_bad(a, "the head dim must be even");
    if (!wk_gpu_is_contiguous(d)) return nn_bad(a, "dst must be contiguous");
    if (D > 1 && x->strides[3] != 1) return nn_bad(a, "x's last stride must be 1");
    const int tdim = op == WK_OP_ROPE_THD ? 1 : 2, hdim = 3 - tdim;
    const int64_t B = x->dims[0], T = x->dims[tdim], H = x->dims[hdim];
    const int64_t pos0 = (int64_t)a->p[0];
    const wk_view *tabs[2] = { cv, sv };
    for (const wk_view *tv : tabs) {
        if (tv->dtype != WK_F32 || tv->rank != 2 || tv->dims[1] != half || !wk_gpu_is_contiguous(tv))
            return nn_bad(a, "cos and sin must be contiguous f32 [n_pos, D/2]");
        if (pos0 < 0 || pos0 + T > tv->dims[0]) return nn_bad(a, "positions outside the tables");
    }
    if (wk_gpu_numel(x) == 0) return WK_OK;
    WK_GPU_ENTER(c);
    const void *px = wk_gpu_view_ptr(x);
    void *pd = wk_gpu_view_ptr(d);
    const float *pc = (const float *)wk_gpu_view_ptr(cv), *ps = (const float *)wk_gpu_view_ptr(sv);
    nn_rope_args ra;
    memset(&ra, 0, sizeof ra);
    ra.T = T, ra.H = H, ra.half = half, ra.pos0 = pos0;
    ra.xb = x->strides[0], ra.xt = x->strides[tdim], ra.xh = x->strides[hdim];
    ra.ob = d->dims[1] * d->dims[2] * D;
    ra.ot = tdim == 2 ? D : d->dims[2] * D;
    ra.oh = tdim == 2 ? d->dims[2] * D : D;
    const bool inter = op == WK_OP_ROPE_I;
    NN_DISPATCH(dt, T_, {
        constexpr int V = wk_vec_width<T_>;
        /* pairs per item: halves V (a unit and its partner), interleaved V / 2 */
        constexpr int PV = V / 2 > 0 ? V / 2 : 1;
        const int64_t unit = inter ? V : 2 * V;     /* D a multiple: whole units */
        const int tab_align = (inter ? PV : V) >= 4 ? 16 : (inter ? PV : V) * 4;
        const bool vec = D % unit == 0 && ra.xb % V == 0 && ra.xt % V == 0 && ra.xh % V == 0 &&
                         wk_gpu_aligned(px, 16) && wk_gpu_aligned(pd, 16) && wk_gpu_aligned(pc, (size_t)tab_align) &&
                         wk_gpu_aligned(ps, (size_t)tab_align);
        const T_ *X = (const T_ *)px;
        T_ *O = (T_ *)pd;
        if (vec) {
            ra.U = inter ? half / PV : half / V;
            if (inter) nn_rope_launch<T_, PV, true>(c, true, X, O, pc, ps, ra, B);
            else nn_rope_launch<T_, V, true>(c, false, X, O, pc, ps, ra, B);
        } else {
            ra.U = half;
            nn_rope_launch<T_, 1, false>(c, inter, X, O, pc, ps, ra, B);
        }
    })
    WK_GPU_LAUNCH_CHECK(c, wk_gpu_op_name(op));
    return WK_OK;
}

wk_status wk_gpu_rope_kv(void *ctx, const wk_op_args *a)
{
    wk_gpu_ctx *c = (wk_gpu_ctx *)ctx;
    const wk_rope_kv_params *rp = (const wk_rope_kv_params *)a->params;
    if (a->op != WK_OP_ROPE_KV || !rp || !rp->k_cache || !rp->v_cache) return nn_bad(a, "not a rope_kv with caches");
    const wk_view *x = a->src[0], *d = a->dst, *cv = a->src[1], *sv = a->src[2], *pv = a->src[3];
    const wk_view *kv = rp->k_cache, *vv = rp->v_cache;
    const wk_dtype dt = x->dtype;
    if (!nn_dtype_ok(dt) || d->dtype != dt || kv->dtype != dt || vv->dtype != dt)
        return wk_gpu_host->set_error(WK_ERR_DTYPE, "rope_kv: dtype %s is not one of f16, bf16, f32, f64 (or the "
                                                    "caches and result differ)", wk_gpu_dtype_name(dt));
    if (x->rank != 4 || kv->rank != 4 || vv->rank != 4 || !wk_gpu_is_contiguous(d)) return nn_bad(a, "shapes");
    const int64_t B = x->dims[0], T = x->dims[1], H = x->dims[2], D = x->dims[3], half = D / 2, nq = rp->n_q;
    const int64_t hkv = (H - nq) / 2;
    if (D % 2 || (D > 1 && (x->strides[3] != 1 || kv->strides[3] != 1 || vv->strides[3] != 1)))
        return nn_bad(a, "the head dim must be even, with last strides 1");
    if (cv->dtype != WK_F32 || sv->dtype != WK_F32 || cv->dims[1] != half || !wk_gpu_is_contiguous(cv) ||
        !wk_gpu_is_contiguous(sv))
        return nn_bad(a, "cos and sin must be contiguous f32 [n_pos, D/2]");
    if (pv && pv->dtype != WK_U32 && pv->dtype != WK_I64) return nn_bad(a, "pos must be u32 or i64");
    const int64_t n = B * T * H * half;
    if (n == 0) return WK_OK;
    WK_GPU_ENTER(c);
    nn_rope_kv_args ra;
    memset(&ra, 0, sizeof ra);
    ra.n = n, ra.T = T, ra.H = H, ra.half = half, ra.nq = nq, ra.hkv = hkv;
    ra.xb = x->strides[0], ra.xt = x->strides[1], ra.xh = x->strides[2];
    ra.kb = kv->strides[0], ra.kh = kv->strides[1], ra.kp = kv->strides[2];
    ra.vb = vv->strides[0], ra.vh = vv->strides[1], ra.vp = vv->strides[2];
    int64_t rows = cv->dims[0] < sv->dims[0] ? cv->dims[0] : sv->dims[0];
    if (kv->dims[2] < rows) rows = kv->dims[2];
    if (vv->dims[2] < rows) rows = vv->dims[2];
    ra.rows = rows;
    ra.pos0 = (int64_t)a->p[0];
    ra.ppos = pv ? (const void *)wk_gpu_view_ptr(pv) : NULL;
    ra.pos64 = pv && pv->dtype == WK_I64;
    ra.inter = rp->interleaved != 0;
    const unsigned grid = wk_gpu_grid(c, n, NN_ROPE_BLOCK, 4);
    const float *pc = (const float *)wk_gpu_view_ptr(cv), *ps = (const float *)wk_gpu_view_ptr(sv);
    NN_DISPATCH(dt, T_, {
        WK_LAUNCH_PDL(c->cc_major >= 9, nn_rope_kv<T_>, grid, NN_ROPE_BLOCK, 0, c->stream, (const T_ *)wk_gpu_view_ptr(x),
                      (T_ *)wk_gpu_view_ptr(d), (T_ *)wk_gpu_view_ptr(kv), (T_ *)wk_gpu_view_ptr(vv), pc, ps, ra);
    })
    WK_GPU_LAUNCH_CHECK(c, "rope_kv");
    return WK_OK;
}
