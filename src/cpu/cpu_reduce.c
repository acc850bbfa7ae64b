/* cpu_reduce.c — sum / min / max / argmin / argmax over any set of dims
 * (a dim mask) of any strided view, on the CPU.
 *
 * Semantics (docs in backend.h): sums keep the dtype (integers wrap; float
 * sums accumulate in f32, f64 for f64, and narrow floats round the f32
 * result once); max/argmax treat NaN as larger than everything, min/argmin
 * as smaller; arg* give the first index of the extremum, as u32, into the
 * reduced dims flattened row-major.
 *
 * How it is made fast: the dims are first normalised (size-1 dims dropped,
 * sorted by source stride so the innermost memory dim comes last, adjacent
 * dims merged when their strides allow). Then one of two kernels runs:
 *  - row: the innermost dim is reduced: each output reduces contiguous
 *    segments with many independent accumulators (32 lanes for sums,
 *    vectorised by the compiler; SSE max/min and a one-pass SSE4.1 arg
 *    kernel that keeps a best value and position per lane), outputs
 *    spread over the thread pool; when there are fewer outputs than
 *    threads the reduced range itself is split and the partial results
 *    combined in order (ties keep the smaller index).
 *  - column: the innermost dim is kept: a 16 KiB strip of outputs is
 *    accumulated across the reduced rows (sums four rows per pass),
 *    vectorised along the contiguous inner dim; strips are spread over the
 *    pool, or, when there are too few, the reduced rows are cut among the
 *    threads and the partial strips merged.
 * The sum over the last dim of a large f32 matrix is bound by memory
 * bandwidth: the pool's threads together read it near the memory's rate.
 * Narrow floats and small integers are widened chunk by chunk into an f32 /
 * i64 buffer and reduced by the same kernels.
 */
#include <math.h>
#include <stdatomic.h>
#include <stdlib.h>
#if defined(__SSE2__)
#include <emmintrin.h>
#endif
#include "cpu_internal.h"

enum { ACC_F32, ACC_F64, ACC_I64 };

/* elements widened per step by the kernels */
#define CHUNK 512

typedef struct rdim { int64_t n, ss, ds, w; bool red; } rdim;

typedef struct rplan {
    wk_op op;
    wk_dtype dt, ddt;         /* src dtype, dst dtype                   */
    int acc;                  /* ACC_*                                  */
    const char *src;          /* src element 0 (offset applied)         */
    char *dst;                /* dst element 0 (offset applied)         */
    int nk, nr;
    rdim K[WK_MAX_RANK + 1];  /* kept dims, outer to inner              */
    rdim R[WK_MAX_RANK + 1];  /* reduced dims, outer to inner           */
    int64_t n_out, n_red;
} rplan;

/* a partial result */
typedef struct part {
    float f;
    double d;
    uint64_t u;               /* integer sum (wraps) or value (as i64)   */
    int64_t idx;              /* arg*: flat index of the best so far     */
    bool any;
} part;

/* ---- coarse parallel tasks -------------------------------------------- */

#define par_tasks(n, w, fn, arg) wk_parallel_tasks((n), (double)(w), (fn), (arg))

/* ---- odometer over a list of dims ----------------------------------- */

typedef struct odo {
    int n;
    const rdim *d;
    int64_t idx[WK_MAX_RANK + 1];
    int64_t ss, ds, w;        /* current offsets                        */
} odo;

static void odo_seek(odo *o, const rdim *d, int n, int64_t linear)
{
    o->n = n;
    o->d = d;
    o->ss = o->ds = o->w = 0;
    for (int k = n - 1; k >= 0; k--) {
        int64_t i = linear % d[k].n;
        linear /= d[k].n;
        o->idx[k] = i;
        o->ss += i * d[k].ss;
        o->ds += i * d[k].ds;
        o->w += i * d[k].w;
    }
}

static void odo_next(odo *o)
{
    for (int k = o->n - 1; k >= 0; k--) {
        const rdim *d = &o->d[k];
        if (++o->idx[k] < d->n) {
            o->ss += d->ss; o->ds += d->ds; o->w += d->w;
            return;
        }
        o->idx[k] = 0;
        o->ss -= (d->n - 1) * d->ss; o->ds -= (d->n - 1) * d->ds; o->w -= (d->n - 1) * d->w;
    }
}

/* ---- widening loads ------------------------------------------------- */

static void load_f32(const char *p, wk_dtype dt, int64_t s, int64_t n, float *out)
{
    switch (dt) {
    case WK_F32: { const float *q = (const float *)p; for (int64_t i = 0; i < n; i++) out[i] = q[i * s]; break; }
    case WK_BF16: { const uint16_t *q = (const uint16_t *)p; for (int64_t i = 0; i < n; i++) out[i] = wk_bf16_to_f32(q[i * s]); break; }
    case WK_F16: { const uint16_t *q = (const uint16_t *)p; for (int64_t i = 0; i < n; i++) out[i] = wk_f16_to_f32(q[i * s]); break; }
    case WK_F8E4M3: { const uint8_t *q = (const uint8_t *)p; for (int64_t i = 0; i < n; i++) out[i] = wk_f8e4m3_to_f32(q[i * s]); break; }
    default: break;
    }
}

static void load_f64(const char *p, int64_t s, int64_t n, double *out)
{
    const double *q = (const double *)p;
    for (int64_t i = 0; i < n; i++) out[i] = q[i * s];
}

static void load_i64(const char *p, wk_dtype dt, int64_t s, int64_t n, int64_t *out)
{
    switch (dt) {
    case WK_U8: { const uint8_t *q = (const uint8_t *)p; for (int64_t i = 0; i < n; i++) out[i] = q[i * s]; break; }
    case WK_U32: { const uint32_t *q = (const uint32_t *)p; for (int64_t i = 0; i < n; i++) out[i] = q[i * s]; break; }
    case WK_I16: { const int16_t *q = (const int16_t *)p; for (int64_t i = 0; i < n; i++) out[i] = q[i * s]; break; }
    case WK_I32: { const int32_t *q = (const int32_t *)p; for (int64_t i = 0; i < n; i++) out[i] = q[i * s]; break; }
    case WK_I64: { const int64_t *q = (const int64_t *)p; for (int64_t i = 0; i < n; i++) out[i] = q[i * s]; break; }
    default: break;
    }
}

/* ---- contiguous-segment kernels -------------------------------------- */

/* Sum with 32 independent lanes (the compiler keeps them in vector
 * registers), then a pairwise fold of the lanes. */
#define DEF_SUM(T, SFX)                                                      \
    static T seg_sum_##SFX(const T *p, int64_t n)                            \
    {                                                                        \
        T a[32];                                                             \
        for (int j = 0; j < 32; j++) a[j] = 0;                               \
        int64_t i = 0;                                                       \
        for (; i + 32 <= n; i += 32)                                         \
            for (int j = 0; j < 32; j++) a[j] += p[i + j];                   \
        for (int j = 0; i < n; i++, j++) a[j] += p[i];                       \
        for (int w = 16; w > 0; w /= 2)                                      \
            for (int j = 0; j < w; j++) a[j] += a[j + w];                    \
        return a[0];                                                         \
    }
DEF_SUM(float, f32)
DEF_SUM(double, f64)

static uint64_t seg_sum_i64(const int64_t *p, int64_t n)
{
    uint64_t a[8] = { 0 };
    int64_t i = 0;
    for (; i + 8 <= n; i += 8)
        for (int j = 0; j < 8; j++) a[j] += (uint64_t)p[i + j];
    for (; i < n; i++) a[0] += (uint64_t)p[i];
    uint64_t s = 0;
    for (int j = 0; j < 8; j++) s += a[j];
    return s;
}

/* Max / min of a segment (n >= 1); *nan is set when a NaN is seen, and
 * the value is then meaningless. Floats use the compilers' vector
 * extensions (4 vectors of independent lanes, compare + select), which
 * the auto-vectoriser does not produce from the scalar form. */
#define VSEL(VF, VI, m, a, b) ((VF)(((VI)(a) & (m)) | ((VI)(b) & ~(m))))

#define DEF_EXT_VEC(T, VF, VI, W, SFX)                                       \
    static inline VF vld_##SFX(const T *p) { VF v; memcpy(&v, p, sizeof v); return v; } \
    static inline bool vany_##SFX(VI m)                                      \
    {                                                                        \
        uint64_t u[2];                                                       \
        memcpy(u, &m, sizeof u);                                             \
        return (u[0] | u[1]) != 0;                                           \
    }                                                                        \
    static T seg_ext_##SFX(const T *p, int64_t n, bool is_max, int *nan)     \
    {                                                                        \
        T r = p[0];                                                          \
        int z = 0;                                                           \
        int64_t i = 0;                                                       \
        if (n >= 4 * W) {                                                    \
            VF m0 = vld_##SFX(p), m1 = vld_##SFX(p + W), m2 = vld_##SFX(p + 2 * W), m3 = vld_##SFX(p + 3 * W); \
            VI zz = m0 != m0;                                                \
            zz |= (m1 != m1) | (m2 != m2) | (m3 != m3);                      \
            for (i = 4 * W; i + 4 * W <= n; i += 4 * W) {                    \
                VF v0 = vld_##SFX(p + i), v1 = vld_##SFX(p + i + W);         \
                VF v2 = vld_##SFX(p + i + 2 * W), v3 = vld_##SFX(p + i + 3 * W); \
                zz |= (v0 != v0) | (v1 != v1) | (v2 != v2) | (v3 != v3);     \
                if (is_max) {                                                \
                    m0 = VMAX_##SFX(v0, m0); m1 = VMAX_##SFX(v1, m1);        \
                    m2 = VMAX_##SFX(v2, m2); m3 = VMAX_##SFX(v3, m3);        \
                } else {                                                     \
                    m0 = VMIN_##SFX(v0, m0); m1 = VMIN_##SFX(v1, m1);        \
                    m2 = VMIN_##SFX(v2, m2); m3 = VMIN_##SFX(v3, m3);        \
                }                                                            \
            }                                                                \
            z = vany_##SFX(zz);                                              \
            T l[4 * W];                                                      \
            memcpy(l, &m0, sizeof m0); memcpy(l + W, &m1, sizeof m1);        \
            memcpy(l + 2 * W, &m2, sizeof m2); memcpy(l + 3 * W, &m3, sizeof m3); \
            r = l[0];                                                        \
            for (int j = 1; j < 4 * W; j++) r = (is_max ? l[j] > r : l[j] < r) ? l[j] : r; \
        }                                                                    \
        for (; i < n; i++) {                                                 \
            T v = p[i];                                                      \
            z |= v != v;                                                     \
            r = (is_max ? v > r : v < r) ? v : r;                            \
        }                                                                    \
        *nan |= z;                                                           \
        return r;                                                            \
    }                                                                        \
    /* first position of the max (is_max) or min; NaN counts as the        \
     * extremum. */                                                          \
    static int64_t seg_arg_##SFX(const T *p, int64_t n, bool is_max, T *best) \
    {                                                                        \
        int nan = 0;                                                         \
        T m = seg_ext_##SFX(p, n, is_max, &nan);                             \
        int64_t i = 0;                                                       \
        if (!nan) {                                                          \
            T mb[W];                                                         \
            for (int j = 0; j < W; j++) mb[j] = m;                           \
            VF mm = vld_##SFX(mb);                                           \
            for (; i + 2 * W <= n; i += 2 * W)                               \
                if (vany_##SFX((vld_##SFX(p + i) == mm) | (vld_##SFX(p + i + W) == mm))) break; \
            while (p[i] != m) i++;                                           \
        } else {                                                             \
            while (p[i] == p[i]) i++;                                        \
        }                                                                    \
        *best = p[i];                                                        \
        return i;                                                            \
    }
typedef float wk_v4f __attribute__((vector_size(16)));
typedef int32_t wk_v4i __attribute__((vector_size(16)));
typedef double wk_v2d __attribute__((vector_size(16)));
typedef int64_t wk_v2l __attribute__((vector_size(16)));
/* VMAX(v, m) = v > m ? v : m per lane (m when either is NaN), which is
 * exactly SSE's maxps/minps. */
#if defined(__SSE2__)
#define VMAX_f32(v, m) ((wk_v4f)_mm_max_ps((__m128)(v), (__m128)(m)))
#define VMIN_f32(v, m) ((wk_v4f)_mm_min_ps((__m128)(v), (__m128)(m)))
#define VMAX_f64(v, m) ((wk_v2d)_mm_max_pd((__m128d)(v), (__m128d)(m)))
#define VMIN_f64(v, m) ((wk_v2d)_mm_min_pd((__m128d)(v), (__m128d)(m)))
#else
#define VMAX_f32(v, m) VSEL(wk_v4f, wk_v4i, (v) > (m), v, m)
#define VMIN_f32(v, m) VSEL(wk_v4f, wk_v4i, (v) < (m), v, m)
#define VMAX_f64(v, m) VSEL(wk_v2d, wk_v2l, (v) > (m), v, m)
#define VMIN_f64(v, m) VSEL(wk_v2d, wk_v2l, (v) < (m), v, m)
#endif
DEF_EXT_VEC(float, wk_v4f, wk_v4i, 4, f32)
DEF_EXT_VEC(double, wk_v2d, wk_v2l, 2, f64)

#if defined(__SSE4_1__)
#include <smmintrin.h>
/* One-pass arg max/min of f32 (SSE4.1): 8 lanes keep their best value
 * and its position (strict compare: the first occurrence per lane); the
 * lanes are folded by value, then smallest position. A NaN anywhere sends
 * the segment to the first-NaN scan. n < 2^31. */
#define ARG_LOOP(CMP)                                                        \
    for (; i + 8 <= n; i += 8) {                                             \
        __m128 v0 = _mm_loadu_ps(p + i), v1 = _mm_loadu_ps(p + i + 4);      \
        c0 = _mm_add_epi32(c0, eight); c1 = _mm_add_epi32(c1, eight);        \
        un = _mm_or_ps(un, _mm_cmpunord_ps(v0, v1));                         \
        __m128 g0 = CMP(v0, m0), g1 = CMP(v1, m1);                           \
        m0 = _mm_blendv_ps(m0, v0, g0); m1 = _mm_blendv_ps(m1, v1, g1);      \
        i0 = _mm_blendv_epi8(i0, c0, _mm_castps_si128(g0));                  \
        i1 = _mm_blendv_epi8(i1, c1, _mm_castps_si128(g1));                  \
    }
static int64_t seg_arg1_f32(const float *p, int64_t n, bool is_max, float *best)
{
    if (n < 16 || n >= ((int64_t)1 << 31)) return seg_arg_f32(p, n, is_max, best);
    __m128 m0 = _mm_loadu_ps(p), m1 = _mm_loadu_ps(p + 4);
    __m128i c0 = _mm_setr_epi32(0, 1, 2, 3), c1 = _mm_setr_epi32(4, 5, 6, 7);
    __m128i i0 = c0, i1 = c1, eight = _mm_set1_epi32(8);
    __m128 un = _mm_cmpunord_ps(m0, m1);
    int64_t i = 8;
    if (is_max) { ARG_LOOP(_mm_cmpgt_ps) } else { ARG_LOOP(_mm_cmplt_ps) }
    float mv[8];
    int32_t iv[8];
    _mm_storeu_ps(mv, m0); _mm_storeu_ps(mv + 4, m1);
    _mm_storeu_si128((__m128i *)iv, i0); _mm_storeu_si128((__m128i *)(iv + 4), i1);
    bool nan = _mm_movemask_ps(un) != 0;
    float b = mv[0];
    int64_t bi = iv[0];
    for (int j = 1; j < 8; j++)
        if ((is_max ? mv[j] > b : mv[j] < b) || (mv[j] == b && iv[j] < bi)) { b = mv[j]; bi = iv[j]; }
    for (; i < n; i++) {
        nan |= p[i] != p[i];
        if (is_max ? p[i] > b : p[i] < b) { b = p[i]; bi = i; }
    }
    if (nan) return seg_arg_f32(p, n, is_max, best);
    *best = b;
    return bi;
}
#undef ARG_LOOP
#else
#define seg_arg1_f32 seg_arg_f32
#endif

static int64_t seg_ext_i64(const int64_t *p, int64_t n, bool is_max, int *nan)
{
    (void)nan;
    int64_t m[8];
    for (int j = 0; j < 8; j++) m[j] = p[0];
    int64_t i = 0;
    for (; i + 8 <= n; i += 8)
        for (int j = 0; j < 8; j++) m[j] = (is_max ? p[i + j] > m[j] : p[i + j] < m[j]) ? p[i + j] : m[j];
    for (; i < n; i++) m[0] = (is_max ? p[i] > m[0] : p[i] < m[0]) ? p[i] : m[0];
    int64_t r = m[0];
    for (int j = 1; j < 8; j++) r = (is_max ? m[j] > r : m[j] < r) ? m[j] : r;
    return r;
}

static int64_t seg_arg_i64(const int64_t *p, int64_t n, bool is_max, int64_t *best)
{
    int nan = 0;
    int64_t m = seg_ext_i64(p, n, is_max, &nan), i = 0;
    while (p[i] != m) i++;
    *best = m;
    return i;
}

/* ---- combining partial results --------------------------------------- */

/* v beats b for max (is_max) or min, NaN counting as the extremum */
static bool beats_f(double v, double b, bool is_max)
{
    if (v != v) return b == b;
    if (b != b) return false;
    return is_max ? v > b : v < b;
}
static bool ties_f(double v, double b) { return v == b || (v != v && b != b); }

/* fold a segment result into a partial */
static void part_add_f(part *pt, int acc, wk_op op, double v, int64_t idx)
{
    bool is_max = op == WK_OP_MAX || op == WK_OP_ARGMAX;
    if (!pt->any || beats_f(v, acc == ACC_F32 ? pt->f : pt->d, is_max) ||
        ((op == WK_OP_ARGMAX || op == WK_OP_ARGMIN) && ties_f(v, acc == ACC_F32 ? pt->f : pt->d) && idx < pt->idx)) {
        if (acc == ACC_F32) pt->f = (float)v; else pt->d = v;
        pt->idx = idx;
    }
    pt->any = true;
}

static void part_add_i(part *pt, wk_op op, int64_t v, int64_t idx)
{
    bool is_max = op == WK_OP_MAX || op == WK_OP_ARGMAX;
    int64_t b = (int64_t)pt->u;
    if (!pt->any || (is_max ? v > b : v < b) ||
        ((op == WK_OP_ARGMAX || op == WK_OP_ARGMIN) && v == b && idx < pt->idx)) {
        pt->u = (uint64_t)v;
        pt->idx = idx;
    }
    pt->any = true;
}

static void part_merge(const rplan *P, part *into, const part *from)
{
    if (!from->any) return;
    if (P->op == WK_OP_SUM) {
        into->f += from->f; into->d += from->d; into->u += from->u;
        into->any = true;
        return;
    }
    if (P->acc == ACC_I64) part_add_i(into, P->op, (int64_t)from->u, from->idx);
    else part_add_f(into, P->acc, P->op, P->acc == ACC_F32 ? (double)from->f : from->d, from->idx);
}

static void part_init(part *pt)
{
    pt->f = 0; pt->d = 0; pt->u = 0; pt->idx = 0; pt->any = false;
}

static void part_store(const rplan *P, int64_t off, const part *pt)
{
    if (P->op == WK_OP_ARGMIN || P->op == WK_OP_ARGMAX) {
        ((uint32_t *)P->dst)[off] = (uint32_t)pt->idx;
        return;
    }
    switch (P->ddt) {
    case WK_F32: ((float *)P->dst)[off] = pt->f; break;
    case WK_BF16: ((uint16_t *)P->dst)[off] = wk_f32_to_bf16(pt->f); break;
    case WK_F16: ((uint16_t *)P->dst)[off] = wk_f32_to_f16(pt->f); break;
    case WK_F8E4M3: ((uint8_t *)P->dst)[off] = wk_f32_to_f8e4m3(pt->f); break;
    case WK_F64: ((double *)P->dst)[off] = pt->d; break;
    default: wk_cpu_store_i64(P->dst, P->ddt, off, (int64_t)pt->u); break;
    }
}

/* ---- row kernel: innermost dim reduced -------------------------------- */

/* Reduce a segment of c elements (src stride s, flat index of the first
 * idx0, index step wi) into pt. */
static void row_segment(const rplan *P, part *pt, const char *p, int64_t s, int64_t c, int64_t idx0, int64_t wi)
{
    size_t es = wk_cpu_dtype_size(P->dt);
    bool arg = P->op == WK_OP_ARGMIN || P->op == WK_OP_ARGMAX;
    bool is_max = P->op == WK_OP_MAX || P->op == WK_OP_ARGMAX;
    union { float f[CHUNK]; double d[CHUNK]; int64_t i[CHUNK]; } buf;
    /* native contiguous data is reduced in place: float sums in blocks of
     * 8192 (a two-level sum keeps the f32 rounding error small), the rest
     * in one piece */
    bool native = s == 1 && (P->dt == WK_F32 || P->dt == WK_F64 || P->dt == WK_I64);
    int64_t step = !native ? CHUNK : (P->op == WK_OP_SUM && P->acc != ACC_I64) ? 8192 : c;
    for (int64_t j0 = 0; j0 < c; j0 += step) {
        int64_t cn = c - j0 < step ? c - j0 : step;
        const char *q = p + (size_t)(j0 * s) * es;
        int64_t ib = idx0 + j0 * wi;
        if (P->acc == ACC_F32) {
            const float *v = (const float *)q;
            if (P->dt != WK_F32 || s != 1) { load_f32(q, P->dt, s, cn, buf.f); v = buf.f; }
            if (P->op == WK_OP_SUM) { pt->f += seg_sum_f32(v, cn); pt->any = true; }
            else if (arg) { float b; int64_t k = seg_arg1_f32(v, cn, is_max, &b); part_add_f(pt, ACC_F32, P->op, b, ib + k * wi); }
            else { int nan = 0; float m = seg_ext_f32(v, cn, is_max, &nan); part_add_f(pt, ACC_F32, P->op, nan ? NAN : m, 0); }
        } else if (P->acc == ACC_F64) {
            const double *v = (const double *)q;
            if (s != 1) { load_f64(q, s, cn, buf.d); v = buf.d; }
            if (P->op == WK_OP_SUM) { pt->d += seg_sum_f64(v, cn); pt->any = true; }
            else if (arg) { double b; int64_t k = seg_arg_f64(v, cn, is_max, &b); part_add_f(pt, ACC_F64, P->op, b, ib + k * wi); }
            else { int nan = 0; double m = seg_ext_f64(v, cn, is_max, &nan); part_add_f(pt, ACC_F64, P->op, nan ? NAN : m, 0); }
        } else {
            const int64_t *v = (const int64_t *)q;
            if (P->dt != WK_I64 || s != 1) { load_i64(q, P->dt, s, cn, buf.i); v = buf.i; }
            if (P->op == WK_OP_SUM) { pt->u += seg_sum_i64(v, cn); pt->any = true; }
            else if (arg) { int64_t b; int64_t k = seg_arg_i64(v, cn, is_max, &b); part_add_i(pt, P->op, b, ib + k * wi); }
            else { int nan = 0; int64_t m = seg_ext_i64(v, cn, is_max, &nan); part_add_i(pt, P->op, m, 0); }
        }
    }
}

/* Reduce positions [t0, t1) of the reduced space (row-major over R in
 * plan order) for the output whose src offset is sb. */
static void row_range(const rplan *P, part *pt, int64_t sb, int64_t t0, int64_t t1)
{
    const rdim *in = &P->R[P->nr - 1];
    size_t es = wk_cpu_dtype_size(P->dt);
    int64_t L = in->n;
    odo o;
    odo_seek(&o, P->R, P->nr - 1, t0 / L);
    int64_t j = t0 % L;
    int64_t t = t0;
    while (t < t1) {
        int64_t c = L - j < t1 - t ? L - j : t1 - t;
        const char *p = P->src + (size_t)(sb + o.ss + j * in->ss) * es;
        row_segment(P, pt, p, in->ss, c, o.w + j * in->w, in->w);
        t += c;
        j = 0;
        odo_next(&o);
    }
}

static void row_task(void *arg, int64_t begin, int64_t end)
{
    const rplan *P = (const rplan *)arg;
    odo o;
    odo_seek(&o, P->K, P->nk, begin);
    for (int64_t i = begin; i < end; i++) {
        part pt;
        part_init(&pt);
        row_range(P, &pt, o.ss, 0, P->n_red);
        part_store(P, o.ds, &pt);
        odo_next(&o);
    }
}

typedef struct split_job {
    const rplan *P;
    int64_t sb, nparts;
    part *parts;
} split_job;

static void split_task(void *arg, int64_t begin, int64_t end)
{
    const split_job *S = (const split_job *)arg;
    int64_t n = S->P->n_red;
    for (int64_t k = begin; k < end; k++) {
        part_init(&S->parts[k]);
        row_range(S->P, &S->parts[k], S->sb, n * k / S->nparts, n * (k + 1) / S->nparts);
    }
}

static void run_rows(rplan *P)
{
    int nt = wk_cpu_num_threads();
    if (P->n_out < nt && P->n_red >= 4 * WK_CPU_GRAIN && nt > 1) {
        /* few outputs, long reductions: split each reduction */
        enum { MAXPARTS = 256 };
        part parts[MAXPARTS];
        int64_t np = P->n_red / WK_CPU_GRAIN;
        if (np > 4 * nt) np = 4 * nt;
        if (np > MAXPARTS) np = MAXPARTS;
        odo o;
        odo_seek(&o, P->K, P->nk, 0);
        for (int64_t i = 0; i < P->n_out; i++) {
            split_job S = { P, o.ss, np, parts };
            par_tasks(np, P->n_red / np, split_task, &S);
            part total;
            part_init(&total);
            for (int64_t k = 0; k < np; k++) part_merge(P, &total, &parts[k]);
            part_store(P, o.ds, &total);
            odo_next(&o);
        }
        return;
    }
    par_tasks(P->n_out, P->n_red, row_task, P);
}

/* ---- column kernel: innermost dim kept -------------------------------- */

/* Outputs handled together: a 16 KiB strip of accumulators, long enough
 * that each reduced row is read as a few whole pages. */
#define COLW_BYTES 16384

#define DEF_COL_SUM(T, SFX)                                                  \
    static void col_sum_##SFX(T *acc, const T *v, int64_t n)                 \
    {                                                                        \
        for (int64_t j = 0; j < n; j++) acc[j] += v[j];                      \
    }
DEF_COL_SUM(float, f32)
DEF_COL_SUM(double, f64)

static void col_sum_u64(int64_t *acc, const int64_t *v, int64_t n)
{
    for (int64_t j = 0; j < n; j++) acc[j] = (int64_t)((uint64_t)acc[j] + (uint64_t)v[j]);
}

/* four rows at once: a quarter of the accumulator traffic */
#define DEF_COL_SUM4(T, SFX)                                                 \
    static void col_sum4_##SFX(T *acc, const T *const *v, int64_t n)         \
    {                                                                        \
        const T *v0 = v[0], *v1 = v[1], *v2 = v[2], *v3 = v[3];              \
        for (int64_t j = 0; j < n; j++) acc[j] += (v0[j] + v1[j]) + (v2[j] + v3[j]); \
    }
DEF_COL_SUM4(float, f32)
DEF_COL_SUM4(double, f64)

static void col_sum4_u64(int64_t *acc, const int64_t *const *v, int64_t n)
{
    const int64_t *v0 = v[0], *v1 = v[1], *v2 = v[2], *v3 = v[3];
    for (int64_t j = 0; j < n; j++)
        acc[j] = (int64_t)((uint64_t)acc[j] + (uint64_t)v0[j] + (uint64_t)v1[j] + (uint64_t)v2[j] + (uint64_t)v3[j]);
}

/* max/min keep NaN once seen (NaN is the extremum both ways); arg keeps
 * the best value and its index, the smaller index on ties. */
#define DEF_COL(T, SFX)                                                      \
    static void col_ext_##SFX(T *acc, const T *v, int64_t n, bool is_max)    \
    {                                                                        \
        if (is_max)                                                          \
            for (int64_t j = 0; j < n; j++) acc[j] = (v[j] > acc[j] || v[j] != v[j]) ? v[j] : acc[j]; \
        else                                                                 \
            for (int64_t j = 0; j < n; j++) acc[j] = (v[j] < acc[j] || v[j] != v[j]) ? v[j] : acc[j]; \
    }                                                                        \
    static void col_arg_##SFX(T *acc, int64_t *ai, const T *v, const int64_t *vi, \
                              int64_t idx, int64_t n, bool is_max)           \
    {                                                                        \
        for (int64_t j = 0; j < n; j++) {                                    \
            T x = v[j], b = acc[j];                                          \
            int64_t xi = vi ? vi[j] : idx;                                   \
            bool better = x != x ? b == b : (b == b && (is_max ? x > b : x < b)); \
            bool tie = x == b || (x != x && b != b);                         \
            if (better || (tie && xi < ai[j])) { acc[j] = x; ai[j] = xi; }   \
        }                                                                    \
    }
DEF_COL(float, f32)
DEF_COL(double, f64)
DEF_COL(int64_t, i64)

/* scratch of one column job: accumulators, their indices, a widening
 * buffer (each COLW_BYTES / 4 elements of up to 8 bytes) */
typedef struct col_buf { void *acc; int64_t *ai; void *tmp; } col_buf;

static bool col_buf_alloc(col_buf *b, int64_t w)
{
    b->acc = malloc((size_t)w * 8);
    b->ai = (int64_t *)malloc((size_t)w * 8);
    b->tmp = malloc((size_t)w * 8);
    return b->acc && b->ai && b->tmp;
}

static void col_buf_free(col_buf *b)
{
    free(b->acc); free(b->ai); free(b->tmp);
}

/* Fold reduced positions [t0, t1) into b->acc / b->ai for cn outputs
 * whose first element is at src offset sb (initialises at t0). */
static void col_accum(const rplan *P, const col_buf *b, int64_t sb, int64_t cn, int64_t t0, int64_t t1)
{
    const rdim *in = &P->K[P->nk - 1];
    size_t es = wk_cpu_dtype_size(P->dt);
    bool arg_op = P->op == WK_OP_ARGMIN || P->op == WK_OP_ARGMAX;
    bool is_max = P->op == WK_OP_MAX || P->op == WK_OP_ARGMAX;
    size_t ts = P->acc == ACC_F32 ? sizeof(float) : 8;
    odo ro;
    odo_seek(&ro, P->R, P->nr, t0);
    if (P->op == WK_OP_SUM && in->ss == 1 && (P->dt == WK_F32 || P->dt == WK_F64 || P->dt == WK_I64)) {
        /* native rows: sum four at a time, in place */
        memset(b->acc, 0, (size_t)cn * ts);
        int64_t t = t0;
        for (; t + 4 <= t1; t += 4) {
            const void *v[4];
            for (int r = 0; r < 4; r++, odo_next(&ro)) v[r] = P->src + (size_t)(sb + ro.ss) * es;
            if (P->acc == ACC_F32) col_sum4_f32((float *)b->acc, (const float *const *)v, cn);
            else if (P->acc == ACC_F64) col_sum4_f64((double *)b->acc, (const double *const *)v, cn);
            else col_sum4_u64((int64_t *)b->acc, (const int64_t *const *)v, cn);
        }
        for (; t < t1; t++, odo_next(&ro)) {
            const void *v = P->src + (size_t)(sb + ro.ss) * es;
            if (P->acc == ACC_F32) col_sum_f32((float *)b->acc, (const float *)v, cn);
            else if (P->acc == ACC_F64) col_sum_f64((double *)b->acc, (const double *)v, cn);
            else col_sum_u64((int64_t *)b->acc, (const int64_t *)v, cn);
        }
        return;
    }
    for (int64_t t = t0; t < t1; t++, odo_next(&ro)) {
        const char *q = P->src + (size_t)(sb + ro.ss) * es;
        const void *v = q;
        if (P->acc == ACC_F32 && (P->dt != WK_F32 || in->ss != 1)) { load_f32(q, P->dt, in->ss, cn, (float *)b->tmp); v = b->tmp; }
        if (P->acc == ACC_F64 && in->ss != 1) { load_f64(q, in->ss, cn, (double *)b->tmp); v = b->tmp; }
        if (P->acc == ACC_I64 && (P->dt != WK_I64 || in->ss != 1)) { load_i64(q, P->dt, in->ss, cn, (int64_t *)b->tmp); v = b->tmp; }
        if (t == t0) {
            if (P->op == WK_OP_SUM) { memset(b->acc, 0, (size_t)cn * ts); }
            else {
                memcpy(b->acc, v, (size_t)cn * ts);
                for (int64_t j = 0; j < cn; j++) b->ai[j] = ro.w;
                continue;
            }
        }
        if (P->acc == ACC_F32) {
            if (P->op == WK_OP_SUM) col_sum_f32((float *)b->acc, (const float *)v, cn);
            else if (arg_op) col_arg_f32((float *)b->acc, b->ai, (const float *)v, NULL, ro.w, cn, is_max);
            else col_ext_f32((float *)b->acc, (const float *)v, cn, is_max);
        } else if (P->acc == ACC_F64) {
            if (P->op == WK_OP_SUM) col_sum_f64((double *)b->acc, (const double *)v, cn);
            else if (arg_op) col_arg_f64((double *)b->acc, b->ai, (const double *)v, NULL, ro.w, cn, is_max);
            else col_ext_f64((double *)b->acc, (const double *)v, cn, is_max);
        } else {
            if (P->op == WK_OP_SUM) col_sum_u64((int64_t *)b->acc, (const int64_t *)v, cn);
            else if (arg_op) col_arg_i64((int64_t *)b->acc, b->ai, (const int64_t *)v, NULL, ro.w, cn, is_max);
            else col_ext_i64((int64_t *)b->acc, (const int64_t *)v, cn, is_max);
        }
    }
}

/* into = merge(into, from), from covering later reduced positions */
static void col_merge(const rplan *P, const col_buf *into, const col_buf *from, int64_t cn)
{
    bool arg_op = P->op == WK_OP_ARGMIN || P->op == WK_OP_ARGMAX;
    bool is_max = P->op == WK_OP_MAX || P->op == WK_OP_ARGMAX;
    if (P->acc == ACC_F32) {
        if (P->op == WK_OP_SUM) col_sum_f32((float *)into->acc, (const float *)from->acc, cn);
        else if (arg_op) col_arg_f32((float *)into->acc, into->ai, (const float *)from->acc, from->ai, 0, cn, is_max);
        else col_ext_f32((float *)into->acc, (const float *)from->acc, cn, is_max);
    } else if (P->acc == ACC_F64) {
        if (P->op == WK_OP_SUM) col_sum_f64((double *)into->acc, (const double *)from->acc, cn);
        else if (arg_op) col_arg_f64((double *)into->acc, into->ai, (const double *)from->acc, from->ai, 0, cn, is_max);
        else col_ext_f64((double *)into->acc, (const double *)from->acc, cn, is_max);
    } else {
        if (P->op == WK_OP_SUM) col_sum_u64((int64_t *)into->acc, (const int64_t *)from->acc, cn);
        else if (arg_op) col_arg_i64((int64_t *)into->acc, into->ai, (const int64_t *)from->acc, from->ai, 0, cn, is_max);
        else col_ext_i64((int64_t *)into->acc, (const int64_t *)from->acc, cn, is_max);
    }
}

static void col_store(const rplan *P, const col_buf *b, int64_t db, int64_t cn)
{
    const rdim *in = &P->K[P->nk - 1];
    for (int64_t j = 0; j < cn; j++) {
        part pt;
        part_init(&pt);
        if (P->acc == ACC_F32) pt.f = ((const float *)b->acc)[j];
        else if (P->acc == ACC_F64) pt.d = ((const double *)b->acc)[j];
        else pt.u = (uint64_t)((const int64_t *)b->acc)[j];
        pt.idx = b->ai[j];
        part_store(P, db + j * in->ds, &pt);
    }
}

typedef struct col_job {
    const rplan *P;
    int64_t w;                /* outputs per strip                      */
    int64_t nstrips;          /* strips of the inner dim per outer output */
    /* split mode: one strip, reduced range cut into nparts */
    int64_t sb, cn, nparts;
    col_buf *parts;
    atomic_bool failed;
} col_job;

/* strip bounds of task t: src and dst offsets of its first output, count */
static void col_strip(const col_job *C, int64_t t, int64_t *sb, int64_t *db, int64_t *cn)
{
    const rplan *P = C->P;
    const rdim *in = &P->K[P->nk - 1];
    int64_t outer = t / C->nstrips, j0 = (t % C->nstrips) * C->w;
    odo ko;
    odo_seek(&ko, P->K, P->nk - 1, outer);
    *sb = ko.ss + j0 * in->ss;
    *db = ko.ds + j0 * in->ds;
    *cn = in->n - j0 < C->w ? in->n - j0 : C->w;
}

static void col_task(void *arg, int64_t begin, int64_t end)
{
    col_job *C = (col_job *)arg;
    col_buf b;
    if (!col_buf_alloc(&b, C->w)) { atomic_store(&C->failed, true); col_buf_free(&b); return; }
    for (int64_t t = begin; t < end; t++) {
        int64_t sb, db, cn;
        col_strip(C, t, &sb, &db, &cn);
        col_accum(C->P, &b, sb, cn, 0, C->P->n_red);
        col_store(C->P, &b, db, cn);
    }
    col_buf_free(&b);
}

static void col_part_task(void *arg, int64_t begin, int64_t end)
{
    const col_job *C = (const col_job *)arg;
    int64_t n = C->P->n_red;
    for (int64_t k = begin; k < end; k++)
        col_accum(C->P, &C->parts[k], C->sb, C->cn, n * k / C->nparts, n * (k + 1) / C->nparts);
}

static wk_status run_cols(rplan *P)
{
    const rdim *in = &P->K[P->nk - 1];
    col_job C;
    memset(&C, 0, sizeof C);
    atomic_init(&C.failed, false);
    C.P = P;
    C.w = COLW_BYTES / (P->acc == ACC_F32 ? 4 : 8);
    if (C.w > in->n) C.w = in->n;
    C.nstrips = (in->n + C.w - 1) / C.w;
    int64_t tasks = (P->n_out / in->n) * C.nstrips;
    int nt = wk_cpu_num_threads();
    if (tasks < nt && nt > 1 && C.w * P->n_red >= 4 * WK_CPU_GRAIN) {
        /* few strips, many reduced rows: cut the rows among the threads */
        enum { MAXPARTS = 64 };
        col_buf parts[MAXPARTS];
        int64_t np = C.w * P->n_red / WK_CPU_GRAIN;
        if (np > 4 * nt) np = 4 * nt;
        if (np > MAXPARTS) np = MAXPARTS;
        if (np > P->n_red) np = P->n_red;
        bool ok = true;
        for (int64_t k = 0; k < np; k++) ok &= col_buf_alloc(&parts[k], C.w);
        if (ok) {
            C.parts = parts;
            C.nparts = np;
            for (int64_t t = 0; t < tasks; t++) {
                int64_t db;
                col_strip(&C, t, &C.sb, &db, &C.cn);
                par_tasks(np, C.cn * P->n_red / np, col_part_task, &C);
                for (int64_t k = 1; k < np; k++) col_merge(P, &parts[0], &parts[k], C.cn);
                col_store(P, &parts[0], db, C.cn);
            }
        }
        for (int64_t k = 0; k < np; k++) col_buf_free(&parts[k]);
        if (!ok) return WK_CPU_ERROR(WK_ERR_MEMORY, "reduce: out of memory for scratch");
        return WK_OK;
    }
    par_tasks(tasks, C.w * P->n_red, col_task, &C);
    if (atomic_load(&C.failed)) return WK_CPU_ERROR(WK_ERR_MEMORY, "reduce: out of memory for scratch");
    return WK_OK;
}

/* ---- planning --------------------------------------------------------- */

static int64_t sort_key(const rdim *d) { return d->ss == 0 ? INT64_MAX : d->ss; }

wk_status wk_cpu_reduce(void *ctx, wk_op op, const wk_view *dst, const wk_view *src, uint32_t dim_mask)
{
    (void)ctx;
    if (op < WK_OP_SUM || op > WK_OP_ARGMAX)
        return WK_CPU_ERROR(WK_ERR_UNSUPPORTED, "reduce: op %d is not a reduction", (int)op);
    rplan P;
    memset(&P, 0, sizeof P);
    P.op = op;
    P.dt = src->dtype;
    P.ddt = dst->dtype;
    switch (P.dt) {
    case WK_F32: case WK_BF16: case WK_F16: case WK_F8E4M3: P.acc = ACC_F32; break;
    case WK_F64: P.acc = ACC_F64; break;
    default: P.acc = ACC_I64; break;
    }
    int64_t n_out = wk_view_numel(dst);
    if (n_out == 0) return WK_OK;
    P.src = (const char *)src->base + (size_t)src->offset * wk_cpu_dtype_size(P.dt);
    P.dst = (char *)dst->base + (size_t)dst->offset * wk_cpu_dtype_size(P.ddt);

    /* weights of the reduced dims: row-major over the reduced dims */
    int64_t w[WK_MAX_RANK];
    int64_t n_red = 1;
    for (int d = src->rank - 1; d >= 0; d--) {
        bool red = (dim_mask >> d) & 1u;
        w[d] = red ? n_red : 0;
        if (red) n_red *= src->dims[d];
    }
    if (n_red == 0) {
        /* empty reduction: the sum is 0 (min/max/arg* never get here) */
        odo o;
        rdim kd[WK_MAX_RANK];
        int nk = 0;
        for (int d = 0; d < dst->rank; d++) {
            kd[nk].n = dst->dims[d]; kd[nk].ss = 0; kd[nk].ds = dst->strides[d]; kd[nk].w = 0; kd[nk].red = false;
            nk++;
        }
        odo_seek(&o, kd, nk, 0);
        for (int64_t i = 0; i < n_out; i++, odo_next(&o)) {
            if (op == WK_OP_ARGMIN || op == WK_OP_ARGMAX) ((uint32_t *)P.dst)[o.ds] = 0;
            else wk_cpu_store_i64(P.dst, P.ddt, o.ds, 0);
        }
        return WK_OK;
    }

    /* dims without size-1 ones, sorted outermost (largest stride) first */
    rdim d[WK_MAX_RANK + 1];
    int nd = 0;
    for (int k = 0; k < src->rank; k++) {
        if (src->dims[k] == 1) continue;
        bool red = (dim_mask >> k) & 1u;
        rdim x = { src->dims[k], src->strides[k], red ? 0 : dst->strides[k], w[k], red };
        int pos = nd;
        while (pos > 0 && sort_key(&d[pos - 1]) < sort_key(&x)) { d[pos] = d[pos - 1]; pos--; }
        d[pos] = x;
        nd++;
    }
    /* nothing reduced: a pseudo reduced dim of 1, outermost (column path) */
    bool any_red = false;
    for (int k = 0; k < nd; k++) any_red |= d[k].red;
    if (!any_red) {
        memmove(&d[1], &d[0], (size_t)nd * sizeof d[0]);
        d[0] = (rdim){ 1, 0, 0, 0, true };
        nd++;
    }
    /* merge adjacent dims of one kind whose strides chain */
    int m = 0;
    for (int k = 0; k < nd; k++) {
        if (m > 0) {
            rdim *a = &d[m - 1];
            const rdim *b = &d[k];
            if (a->red == b->red && a->ss == b->ss * b->n && a->ds == b->ds * b->n && a->w == b->w * b->n) {
                a->n *= b->n; a->ss = b->ss; a->ds = b->ds; a->w = b->w;
                continue;
            }
        }
        d[m++] = d[k];
    }
    nd = m;
    for (int k = 0; k < nd; k++) {
        if (d[k].red) P.R[P.nr++] = d[k];
        else P.K[P.nk++] = d[k];
    }
    P.n_out = n_out;
    P.n_red = n_red;
    if (nd > 0 && !d[nd - 1].red) return run_cols(&P);
    run_rows(&P);
    return WK_OK;
}
