/* cpu_nn.c — the cpu's fused NN ops on f16, bf16, f32 and f64:
 *   softmax / log_softmax (family SOFTMAX): src [outer, n, inner] any
 *     strides, dst contiguous; along n, max subtracted first; a row whose
 *     values are all -inf gives NaN (as PyTorch), NaN propagates.
 *   rms_norm (plain, Gemma (1 + w)), layer_norm (biased variance) and
 *     add_rms_norm (family NORM): rows [rows, D] with strides [rs, 1];
 *     add_rms_norm writes x + residual rounded to the dtype into src[3]
 *     and normalises that rounded sum, as a separate add then rms_norm.
 *   rope_kv (q and k rotated as rope_thd / rope_i, k and v written to the
 *     caches at the position: one row of qkv per task item)
 *   rope (halves, [B, H, T, D]), rope_i (interleaved pairs) and rope_thd
 *     (halves, [B, T, H, D]) (family ROPE): f32 [n_pos, D/2] tables, row
 *     t + p[0] for position t.
 * f16/bf16/f32 load into f32 and compute there (one rounding on store),
 * f64 in double. Every kernel is written once as a macro over the compute
 * type (f: float, d: double) and instantiated twice.
 *
 * How it is made fast: rows are spread over the thread pool
 * (wk_parallel_tasks, several rows per chunk); each chunk converts a row
 * (or, for softmax with inner > 1, a tile of up to 64 neighbouring
 * columns, so that a transposed or mid-dim softmax reads whole cache
 * lines) into a buffer of the compute type once, and the passes over it
 * are plain loops with several independent accumulators, which the
 * compiler vectorizes. The softmax of contiguous rows (inner == 1) has its
 * own loop.
 */
#include <math.h>
#include <stdatomic.h>
#include <stdlib.h>
#include "cpu_internal.h"

/* ---- rows of elements in and out of the compute type (cpu_internal.h;
 * cpu_attention.c uses them too) ------------------------------------------- */

/* n elements of dt from base[off + i * st] as float */
void wk_cpu_ld_row_f(const void *base, wk_dtype dt, int64_t off, int64_t st, int64_t n, float *out)
{
    switch (dt) {
    case WK_F32: {
        const float *p = (const float *)base + off;
        if (st == 1) memcpy(out, p, (size_t)n * sizeof(float));
        else for (int64_t i = 0; i < n; i++) out[i] = p[i * st];
        break;
    }
    case WK_F16: { const uint16_t *p = (const uint16_t *)base + off; for (int64_t i = 0; i < n; i++) out[i] = wk_f16_to_f32(p[i * st]); break; }
    case WK_BF16: { const uint16_t *p = (const uint16_t *)base + off; for (int64_t i = 0; i < n; i++) out[i] = wk_bf16_to_f32(p[i * st]); break; }
    default: for (int64_t i = 0; i < n; i++) out[i] = (float)wk_cpu_load_f64(base, dt, off + i * st); break;
    }
}

/* n floats into dt at base[off + i * st], rounded once */
void wk_cpu_st_row_f(void *base, wk_dtype dt, int64_t off, int64_t st, int64_t n, const float *in)
{
    switch (dt) {
    case WK_F32: {
        float *p = (float *)base + off;
        if (st == 1) memcpy(p, in, (size_t)n * sizeof(float));
        else for (int64_t i = 0; i < n; i++) p[i * st] = in[i];
        break;
    }
    case WK_F16: { uint16_t *p = (uint16_t *)base + off; for (int64_t i = 0; i < n; i++) p[i * st] = wk_f32_to_f16(in[i]); break; }
    case WK_BF16: { uint16_t *p = (uint16_t *)base + off; for (int64_t i = 0; i < n; i++) p[i * st] = wk_f32_to_bf16(in[i]); break; }
    default: for (int64_t i = 0; i < n; i++) wk_cpu_store_f64(base, dt, off + i * st, in[i]); break;
    }
}

/* the f64 twins (dt is always f64 there) */
void wk_cpu_ld_row_d(const void *base, wk_dtype dt, int64_t off, int64_t st, int64_t n, double *out)
{
    (void)dt;
    const double *p = (const double *)base + off;
    if (st == 1) memcpy(out, p, (size_t)n * sizeof(double));
    else for (int64_t i = 0; i < n; i++) out[i] = p[i * st];
}
void wk_cpu_st_row_d(void *base, wk_dtype dt, int64_t off, int64_t st, int64_t n, const double *in)
{
    (void)dt;
    double *p = (double *)base + off;
    if (st == 1) memcpy(p, in, (size_t)n * sizeof(double));
    else for (int64_t i = 0; i < n; i++) p[i * st] = in[i];
}

#define LANES 8

/* sum of v[0..n) and of v^2 with LANES independent accumulators */
#define DEF_SUMS(S, CT)                                                        \
    static CT sum_##S(const CT *v, int64_t n)                                  \
    {                                                                          \
        CT acc[LANES] = { 0 };                                                 \
        int64_t i = 0;                                                         \
        for (; i + LANES <= n; i += LANES)                                     \
            for (int l = 0; l < LANES; l++) acc[l] += v[i + l];                \
        CT s = 0;                                                              \
        for (; i < n; i++) s += v[i];                                          \
        for (int l = 0; l < LANES; l++) s += acc[l];                           \
        return s;                                                              \
    }                                                                          \
    static CT sumsq_##S(const CT *v, CT shift, int64_t n)                      \
    {                                                                          \
        CT acc[LANES] = { 0 };                                                 \
        int64_t i = 0;                                                         \
        for (; i + LANES <= n; i += LANES)                                     \
            for (int l = 0; l < LANES; l++) {                                  \
                CT t = v[i + l] - shift;                                       \
                acc[l] += t * t;                                               \
            }                                                                  \
        CT s = 0;                                                              \
        for (; i < n; i++) s += (v[i] - shift) * (v[i] - shift);               \
        for (int l = 0; l < LANES; l++) s += acc[l];                           \
        return s;                                                              \
    }
DEF_SUMS(f, float)
DEF_SUMS(d, double)

/* ======================================================================
 * softmax / log_softmax
 * ==================================================================== */

typedef struct sm_job {
    const wk_view *src, *dst;
    wk_dtype dt;
    bool log;
    int64_t n, inner, ib, nblk;   /* ib columns per tile, nblk tiles per outer index */
    atomic_int oom;
} sm_job;

#define DEF_SOFTMAX(S, CT, EXP, LOG)                                           \
    /* one contiguous-in-the-buffer row of n values, in place */               \
    static void sm_row_##S(CT *b, int64_t n, bool lg)                          \
    {                                                                          \
        CT m = -INFINITY;                                                      \
        for (int64_t k = 0; k < n; k++) m = b[k] > m ? b[k] : m;               \
        CT acc[LANES] = { 0 }, s = 0;                                          \
        int64_t k = 0;                                                         \
        if (lg) {                                                              \
            for (; k + LANES <= n; k += LANES)                                 \
                for (int l = 0; l < LANES; l++) acc[l] += EXP(b[k + l] - m);   \
            for (; k < n; k++) s += EXP(b[k] - m);                             \
            for (int l = 0; l < LANES; l++) s += acc[l];                       \
            CT ls = LOG(s);                                                    \
            for (k = 0; k < n; k++) b[k] = (b[k] - m) - ls;                    \
        } else {                                                               \
            for (k = 0; k < n; k++) b[k] = EXP(b[k] - m);                      \
            s = sum_##S(b, n);                                                 \
            for (k = 0; k < n; k++) b[k] = b[k] / s;                           \
        }                                                                      \
    }                                                                          \
    static void sm_chunk_##S(void *arg, int64_t begin, int64_t end)            \
    {                                                                          \
        sm_job *j = arg;                                                       \
        const wk_view *sv = j->src, *dv = j->dst;                              \
        const int64_t n = j->n, inner = j->inner, ib = j->ib;                  \
        CT *buf = malloc((size_t)(n * ib + 3 * ib) * sizeof(CT));             \
        if (!buf) {                                                            \
            atomic_store(&j->oom, 1);                                          \
            return;                                                            \
        }                                                                      \
        CT *mx = buf + n * ib, *sm = mx + ib, *ls = sm + ib;                   \
        for (int64_t t = begin; t < end; t++) {                                \
            const int64_t o = t / j->nblk, c0 = (t % j->nblk) * ib;            \
            const int64_t w = ib < inner - c0 ? ib : inner - c0;               \
            const int64_t so = sv->offset + o * sv->strides[0] + c0 * sv->strides[2]; \
            const int64_t dof = dv->offset + o * n * inner + c0;               \
            if (inner == 1) {                                                  \
                wk_cpu_ld_row_##S(sv->base, j->dt, so, sv->strides[1], n, buf);       \
                sm_row_##S(buf, n, j->log);                                    \
                wk_cpu_st_row_##S(dv->base, j->dt, dof, 1, n, buf);                   \
                continue;                                                      \
            }                                                                  \
            /* a tile [n, w]: columns c0 .. c0 + w - 1 */                      \
            for (int64_t k = 0; k < n; k++)                                    \
                wk_cpu_ld_row_##S(sv->base, j->dt, so + k * sv->strides[1], sv->strides[2], w, buf + k * w); \
            for (int64_t c = 0; c < w; c++) mx[c] = -INFINITY, sm[c] = 0;      \
            for (int64_t k = 0; k < n; k++)                                    \
                for (int64_t c = 0; c < w; c++) {                              \
                    CT x = buf[k * w + c];                                     \
                    mx[c] = x > mx[c] ? x : mx[c];                             \
                }                                                              \
            if (j->log) {                                                      \
                for (int64_t k = 0; k < n; k++)                                \
                    for (int64_t c = 0; c < w; c++) sm[c] += EXP(buf[k * w + c] - mx[c]); \
                for (int64_t c = 0; c < w; c++) ls[c] = LOG(sm[c]);            \
                for (int64_t k = 0; k < n; k++)                                \
                    for (int64_t c = 0; c < w; c++) buf[k * w + c] = (buf[k * w + c] - mx[c]) - ls[c]; \
            } else {                                                           \
                for (int64_t k = 0; k < n; k++)                                \
                    for (int64_t c = 0; c < w; c++) {                          \
                        CT e = EXP(buf[k * w + c] - mx[c]);                    \
                        buf[k * w + c] = e;                                    \
                        sm[c] += e;                                            \
                    }                                                          \
                for (int64_t k = 0; k < n; k++)                                \
                    for (int64_t c = 0; c < w; c++) buf[k * w + c] /= sm[c];   \
            }                                                                  \
            for (int64_t k = 0; k < n; k++)                                    \
                wk_cpu_st_row_##S(dv->base, j->dt, dof + k * inner, 1, w, buf + k * w); \
        }                                                                      \
        free(buf);                                                             \
    }
DEF_SOFTMAX(f, float, expf, logf)
DEF_SOFTMAX(d, double, exp, log)

wk_status wk_cpu_softmax(void *ctx, const wk_op_args *a)
{
    (void)ctx;
    const wk_view *s = a->src[0], *d = a->dst;
    if (a->op != WK_OP_SOFTMAX && a->op != WK_OP_LOG_SOFTMAX)
        return WK_CPU_ERROR(WK_ERR_UNSUPPORTED, "op %s is not softmax or log_softmax", wk_op_name(a->op));
    if (s->dtype != d->dtype || !(WK_DT_NN & WK_DT_BIT(s->dtype)))
        return WK_CPU_ERROR(WK_ERR_DTYPE, "%s takes f16, bf16, f32 or f64 (src %s, dst %s)", wk_op_name(a->op),
                            wk_dtype_name(s->dtype), wk_dtype_name(d->dtype));
    if (s->rank != 3 || d->rank != 3)
        return WK_CPU_ERROR(WK_ERR_SHAPE, "%s expects [outer, n, inner] views, got ranks %d and %d",
                            wk_op_name(a->op), s->rank, d->rank);
    const int64_t outer = s->dims[0], n = s->dims[1], inner = s->dims[2];
    if (outer == 0 || n == 0 || inner == 0) return WK_OK;
    sm_job j = { .src = s, .dst = d, .dt = s->dtype, .log = a->op == WK_OP_LOG_SOFTMAX, .n = n, .inner = inner };
    /* tiles of up to 64 columns holding about 32K values */
    int64_t ib = 32768 / n;
    ib = ib < 1 ? 1 : ib > 64 ? 64 : ib;
    j.ib = inner == 1 ? 1 : ib < inner ? ib : inner;
    j.nblk = (inner + j.ib - 1) / j.ib;
    atomic_init(&j.oom, 0);
    wk_parallel_tasks(outer * j.nblk, (double)(n * j.ib) * 8, s->dtype == WK_F64 ? sm_chunk_d : sm_chunk_f, &j);
    if (atomic_load(&j.oom))
        return WK_CPU_ERROR(WK_ERR_MEMORY, "%s: out of memory for a row buffer of %lld values", wk_op_name(a->op),
                            (long long)(n * j.ib));
    return WK_OK;
}

/* ======================================================================
 * rms_norm, layer_norm, add_rms_norm
 * ==================================================================== */

typedef struct norm_job {
    wk_op op;
    const wk_view *x, *r, *sum, *dst;
    wk_dtype dt;
    int64_t D;
    double eps;
    const void *w, *b;      /* weight (already 1 + w for Gemma) and bias in the compute type, or NULL */
    atomic_int oom;
} norm_job;

#define DEF_NORM(S, CT, SQRT)                                                  \
    static void norm_chunk_##S(void *arg, int64_t begin, int64_t end)          \
    {                                                                          \
        norm_job *j = arg;                                                     \
        const int64_t D = j->D;                                                \
        const bool add = j->op == WK_OP_ADD_RMS_NORM;                          \
        CT *xb = malloc((size_t)(add ? 2 : 1) * (size_t)D * sizeof(CT));       \
        if (!xb) {                                                             \
            atomic_store(&j->oom, 1);                                          \
            return;                                                            \
        }                                                                      \
        CT *rb = xb + D;                                                       \
        const CT *w = j->w, *bias = j->b;                                      \
        const CT eps = (CT)j->eps;                                             \
        for (int64_t row = begin; row < end; row++) {                          \
            wk_cpu_ld_row_##S(j->x->base, j->dt, j->x->offset + row * j->x->strides[0], 1, D, xb); \
            if (add) {                                                         \
                wk_cpu_ld_row_##S(j->r->base, j->dt, j->r->offset + row * j->r->strides[0], 1, D, rb); \
                for (int64_t i = 0; i < D; i++) xb[i] += rb[i];                \
                const int64_t so = j->sum->offset + row * j->sum->strides[0];  \
                wk_cpu_st_row_##S(j->sum->base, j->dt, so, 1, D, xb);                 \
                /* normalise the sum as stored (rounded to the dtype) */       \
                if (j->dt == WK_F16 || j->dt == WK_BF16) wk_cpu_ld_row_##S(j->sum->base, j->dt, so, 1, D, xb); \
            }                                                                  \
            if (j->op == WK_OP_LAYER_NORM) {                                   \
                const CT mean = sum_##S(xb, D) / (CT)D;                        \
                const CT inv = (CT)1 / SQRT(sumsq_##S(xb, mean, D) / (CT)D + eps); \
                for (int64_t i = 0; i < D; i++) {                              \
                    CT y = (xb[i] - mean) * inv;                               \
                    if (w) y *= w[i];                                          \
                    if (bias) y += bias[i];                                    \
                    xb[i] = y;                                                 \
                }                                                              \
            } else {                                                           \
                const CT inv = (CT)1 / SQRT(sumsq_##S(xb, 0, D) / (CT)D + eps); \
                if (w) for (int64_t i = 0; i < D; i++) xb[i] = xb[i] * inv * w[i]; \
                else for (int64_t i = 0; i < D; i++) xb[i] = xb[i] * inv;      \
            }                                                                  \
            wk_cpu_st_row_##S(j->dst->base, j->dt, j->dst->offset + row * j->dst->strides[0], 1, D, xb); \
        }                                                                      \
        free(xb);                                                              \
    }                                                                          \
    /* a weight or bias vector in the compute type (gemma: 1 + w) */           \
    static CT *norm_param_##S(const wk_view *p, wk_dtype dt, int64_t D, bool gemma) \
    {                                                                          \
        CT *v = malloc((size_t)D * sizeof(CT));                                \
        if (!v) return NULL;                                                   \
        wk_cpu_ld_row_##S(p->base, dt, p->offset, D > 1 ? p->strides[0] : 1, D, v);   \
        if (gemma) for (int64_t i = 0; i < D; i++) v[i] = 1 + v[i];            \
        return v;                                                              \
    }
DEF_NORM(f, float, sqrtf)
DEF_NORM(d, double, sqrt)

wk_status wk_cpu_norm(void *ctx, const wk_op_args *a)
{
    (void)ctx;
    const wk_view *x = a->src[0], *d = a->dst;
    const wk_op op = a->op;
    if (op != WK_OP_RMS_NORM && op != WK_OP_LAYER_NORM && op != WK_OP_ADD_RMS_NORM)
        return WK_CPU_ERROR(WK_ERR_UNSUPPORTED, "op %s is not a norm", wk_op_name(op));
    const wk_dtype dt = x->dtype;
    if (d->dtype != dt || !(WK_DT_NN & WK_DT_BIT(dt)))
        return WK_CPU_ERROR(WK_ERR_DTYPE, "%s takes f16, bf16, f32 or f64 (x %s, dst %s)", wk_op_name(op),
                            wk_dtype_name(dt), wk_dtype_name(d->dtype));
    const wk_view *wv = op == WK_OP_ADD_RMS_NORM ? a->src[2] : a->src[1];
    const wk_view *bv = op == WK_OP_LAYER_NORM ? a->src[2] : NULL;
    const wk_view *rv = op == WK_OP_ADD_RMS_NORM ? a->src[1] : NULL, *sv = op == WK_OP_ADD_RMS_NORM ? a->src[3] : NULL;
    if (op == WK_OP_ADD_RMS_NORM && (!rv || !sv))
        return WK_CPU_ERROR(WK_ERR_ARGUMENT, "add_rms_norm needs the residual and the sum destination");
    const wk_view *all[4] = { wv, bv, rv, sv };
    for (int i = 0; i < 4; i++)
        if (all[i] && all[i]->dtype != dt)
            return WK_CPU_ERROR(WK_ERR_DTYPE, "%s: every tensor must be %s, one is %s", wk_op_name(op),
                                wk_dtype_name(dt), wk_dtype_name(all[i]->dtype));
    if (x->rank != 2 || d->rank != 2)
        return WK_CPU_ERROR(WK_ERR_SHAPE, "%s expects [rows, D] views, got ranks %d and %d", wk_op_name(op), x->rank,
                            d->rank);
    const int64_t rows = x->dims[0], D = x->dims[1];
    if (rows == 0 || D == 0) return WK_OK;
    const bool gemma = op != WK_OP_LAYER_NORM && a->p[1] != 0;
    norm_job j = { .op = op, .x = x, .r = rv, .sum = sv, .dst = d, .dt = dt, .D = D, .eps = a->p[0] };
    atomic_init(&j.oom, 0);
    void *w = NULL, *b = NULL;
    const bool f64 = dt == WK_F64;
    if (wv) w = f64 ? (void *)norm_param_d(wv, dt, D, gemma) : (void *)norm_param_f(wv, dt, D, gemma);
    if (bv) b = f64 ? (void *)norm_param_d(bv, dt, D, false) : (void *)norm_param_f(bv, dt, D, false);
    if ((wv && !w) || (bv && !b)) {
        free(w);
        free(b);
        return WK_CPU_ERROR(WK_ERR_MEMORY, "%s: out of memory for the weights (%lld values)", wk_op_name(op),
                            (long long)D);
    }
    j.w = w;
    j.b = b;
    wk_parallel_tasks(rows, (double)D * (op == WK_OP_ADD_RMS_NORM ? 8 : 5), f64 ? norm_chunk_d : norm_chunk_f, &j);
    free(w);
    free(b);
    if (atomic_load(&j.oom))
        return WK_CPU_ERROR(WK_ERR_MEMORY, "%s: out of memory for a row buffer of %lld values", wk_op_name(op),
                            (long long)D);
    return WK_OK;
}

/* ======================================================================
 * rope, rope_i, rope_thd
 * ==================================================================== */

typedef struct rope_job {
    wk_op op;
    const wk_view *x, *c, *s, *dst;
    wk_dtype dt;
    int64_t pos;
    atomic_int oom;
} rope_job;

/* A task's two row buffers (x's row, then y's: 2 D values of es bytes),
 * or NULL with *oom set. */
static void *rope_rows(int64_t D, size_t es, atomic_int *oom)
{
    void *p = malloc((size_t)(2 * D) * es);
    if (!p) atomic_store(oom, 1);
    return p;
}

/* y = x rotated: the pairs (x[i], x[i + half]) or, interleaved,
 * (x[2i], x[2i + 1]) by the table row's angles (strides cs, ss) */
#define DEF_ROPE_PAIRS(S, CT)                                                  \
    static void rope_pairs_##S(const CT *xb, CT *yb, const float *cr, int64_t cs, const float *sr, int64_t ss, \
                               int64_t half, bool inter)                       \
    {                                                                          \
        for (int64_t i = 0; i < half; i++) {                                   \
            const CT c = (CT)cr[i * cs], s = (CT)sr[i * ss];                   \
            const int64_t i0 = inter ? 2 * i : i, i1 = inter ? 2 * i + 1 : i + half; \
            const CT a0 = xb[i0], a1 = xb[i1];                                 \
            yb[i0] = a0 * c - a1 * s;                                          \
            yb[i1] = a0 * s + a1 * c;                                          \
        }                                                                      \
    }
DEF_ROPE_PAIRS(f, float)
DEF_ROPE_PAIRS(d, double)

#define DEF_ROPE(S, CT)                                                        \
    static void rope_chunk_##S(void *arg, int64_t begin, int64_t end)          \
    {                                                                          \
        rope_job *j = arg;                                                     \
        const wk_view *x = j->x, *o = j->dst, *cv = j->c, *sv = j->s;          \
        const int64_t d1 = x->dims[1], d2 = x->dims[2], D = x->dims[3], half = D / 2; \
        CT *xb = rope_rows(D, sizeof(CT), &j->oom);                            \
        if (!xb) return;                                                       \
        CT *yb = xb + D;                                                       \
        const float *cb = (const float *)cv->base, *sb = (const float *)sv->base; \
        const int64_t cs1 = half > 1 ? cv->strides[1] : 1, ss1 = half > 1 ? sv->strides[1] : 1; \
        for (int64_t r = begin; r < end; r++) {                                \
            const int64_t i0 = r / (d1 * d2), i1 = (r / d2) % d1, i2 = r % d2; \
            const int64_t t = (j->op == WK_OP_ROPE_THD ? i1 : i2) + j->pos;    \
            const float *cr = cb + cv->offset + t * cv->strides[0];            \
            const float *sr = sb + sv->offset + t * sv->strides[0];            \
            wk_cpu_ld_row_##S(x->base, j->dt, x->offset + i0 * x->strides[0] + i1 * x->strides[1] + i2 * x->strides[2], \
                       D > 1 ? x->strides[3] : 1, D, xb);                      \
            rope_pairs_##S(xb, yb, cr, cs1, sr, ss1, half, j->op == WK_OP_ROPE_I); \
            wk_cpu_st_row_##S(o->base, j->dt, o->offset + i0 * o->strides[0] + i1 * o->strides[1] + i2 * o->strides[2], 1, D, \
                       yb);                                                    \
        }                                                                      \
        free(xb);                                                              \
    }
DEF_ROPE(f, float)
DEF_ROPE(d, double)

wk_status wk_cpu_rope(void *ctx, const wk_op_args *a)
{
    (void)ctx;
    const wk_view *x = a->src[0], *c = a->src[1], *s = a->src[2], *d = a->dst;
    if (a->op != WK_OP_ROPE && a->op != WK_OP_ROPE_I && a->op != WK_OP_ROPE_THD)
        return WK_CPU_ERROR(WK_ERR_UNSUPPORTED, "op %s is not a rope", wk_op_name(a->op));
    if (d->dtype != x->dtype || !(WK_DT_NN & WK_DT_BIT(x->dtype)) || !c || !s || c->dtype != WK_F32 ||
        s->dtype != WK_F32)
        return WK_CPU_ERROR(WK_ERR_DTYPE, "%s takes x of f16, bf16, f32 or f64 (x %s, dst %s) and f32 tables",
                            wk_op_name(a->op), wk_dtype_name(x->dtype), wk_dtype_name(d->dtype));
    if (x->rank != 4 || d->rank != 4 || x->dims[3] % 2)
        return WK_CPU_ERROR(WK_ERR_SHAPE, "%s expects rank-4 x with an even last dim (rank %d)", wk_op_name(a->op),
                            x->rank);
    const int64_t rows = x->dims[0] * x->dims[1] * x->dims[2], D = x->dims[3];
    if (rows == 0 || D == 0) return WK_OK;
    const int64_t T = x->dims[a->op == WK_OP_ROPE_THD ? 1 : 2], pos = (int64_t)a->p[0];
    if (pos < 0 || pos + T > c->dims[0] || pos + T > s->dims[0] || c->dims[1] != D / 2 || s->dims[1] != D / 2)
        return WK_CPU_ERROR(WK_ERR_INDEX, "%s: positions %lld .. %lld are not all in the tables", wk_op_name(a->op),
                            (long long)pos, (long long)(pos + T - 1));
    rope_job j = { .op = a->op, .x = x, .c = c, .s = s, .dst = d, .dt = x->dtype, .pos = pos };
    atomic_init(&j.oom, 0);
    wk_parallel_tasks(rows, (double)D * 3, x->dtype == WK_F64 ? rope_chunk_d : rope_chunk_f, &j);
    if (atomic_load(&j.oom))
        return WK_CPU_ERROR(WK_ERR_MEMORY, "%s: out of memory for a row buffer of %lld values", wk_op_name(a->op),
                            (long long)D);
    return WK_OK;
}

/* ======================================================================
 * rope_kv
 * ==================================================================== */

typedef struct rope_kv_job {
    const wk_op_args *a;
    int64_t pos, Hkv;
    atomic_int oom;
} rope_kv_job;

#define DEF_ROPE_KV(S, CT)                                                     \
    static void rope_kv_chunk_##S(void *arg, int64_t begin, int64_t end)       \
    {                                                                          \
        rope_kv_job *j = arg;                                                  \
        const wk_op_args *a = j->a;                                            \
        const wk_rope_kv_params *rp = a->params;                               \
        const wk_view *x = a->src[0], *cv = a->src[1], *sv = a->src[2], *o = a->dst; \
        const int64_t T = x->dims[1], HH = x->dims[2], D = x->dims[3], half = D / 2; \
        const int64_t nq = rp->n_q, Hkv = j->Hkv, C = rp->k_cache->dims[2]; \
        CT *xb = rope_rows(D, sizeof(CT), &j->oom);                            \
        if (!xb) return;                                                       \
        CT *yb = xb + D;                                                       \
        const float *cb = (const float *)cv->base, *sb = (const float *)sv->base; \
        for (int64_t r = begin; r < end; r++) {                                \
            const int64_t b = r / (T * HH), t = (r / HH) % T, h = r % HH, p = j->pos + t; \
            const bool in = p >= 0 && p < cv->dims[0] && p < C && p < rp->v_cache->dims[2]; \
            const wk_view *to = h < nq ? o : h < nq + Hkv ? rp->k_cache : rp->v_cache; \
            const int64_t hh = h < nq ? h : h < nq + Hkv ? h - nq : h - nq - Hkv; \
            const int64_t off = h < nq ? to->offset + b * to->strides[0] + t * to->strides[1] + hh * to->strides[2] \
                                       : to->offset + b * to->strides[0] + hh * to->strides[1] + p * to->strides[2]; \
            if (!in) {                                                         \
                if (h < nq) {                                                  \
                    for (int64_t i = 0; i < D; i++) yb[i] = 0;                 \
                    wk_cpu_st_row_##S(to->base, a->dst->dtype, off, 1, D, yb); \
                }                                                              \
                continue;                                                      \
            }                                                                  \
            wk_cpu_ld_row_##S(x->base, x->dtype, x->offset + b * x->strides[0] + t * x->strides[1] + h * x->strides[2], \
                              1, D, xb);                                       \
            if (h >= nq + Hkv) {                                               \
                wk_cpu_st_row_##S(to->base, to->dtype, off, 1, D, xb);         \
                continue;                                                      \
            }                                                                  \
            const float *cr = cb + cv->offset + p * cv->strides[0], *sr = sb + sv->offset + p * sv->strides[0]; \
            rope_pairs_##S(xb, yb, cr, half > 1 ? cv->strides[1] : 1, sr, half > 1 ? sv->strides[1] : 1, half, \
                           rp->interleaved != 0);                              \
            wk_cpu_st_row_##S(to->base, to->dtype, off, 1, D, yb);             \
        }                                                                      \
        free(xb);                                                              \
    }
DEF_ROPE_KV(f, float)
DEF_ROPE_KV(d, double)

wk_status wk_cpu_rope_kv(void *ctx, const wk_op_args *a)
{
    (void)ctx;
    const wk_view *x = a->src[0], *c = a->src[1], *s = a->src[2], *pv = a->src[3], *d = a->dst;
    const wk_rope_kv_params *rp = a->params;
    if (a->op != WK_OP_ROPE_KV || !rp || !rp->k_cache || !rp->v_cache)
        return WK_CPU_ERROR(WK_ERR_UNSUPPORTED, "op %s is not rope_kv (or has no caches)", wk_op_name(a->op));
    if (d->dtype != x->dtype || !(WK_DT_NN & WK_DT_BIT(x->dtype)) || rp->k_cache->dtype != x->dtype ||
        rp->v_cache->dtype != x->dtype || c->dtype != WK_F32 || s->dtype != WK_F32)
        return WK_CPU_ERROR(WK_ERR_DTYPE, "rope_kv takes qkv, caches and result of one of f16, bf16, f32, f64 and f32 tables");
    if (x->rank != 4 || x->dims[3] % 2 || (x->dims[3] > 1 && x->strides[3] != 1) || c->dims[1] != x->dims[3] / 2 ||
        s->dims[1] != x->dims[3] / 2)
        return WK_CPU_ERROR(WK_ERR_SHAPE, "rope_kv expects qkv [B, T, H, D] (D even, last stride 1) and tables [n, D/2]");
    int64_t pos = (int64_t)a->p[0];
    if (pv) {
        if (pv->dtype == WK_U32) pos = ((const uint32_t *)pv->base)[pv->offset];
        else if (pv->dtype == WK_I64) pos = ((const int64_t *)pv->base)[pv->offset];
        else return WK_CPU_ERROR(WK_ERR_DTYPE, "rope_kv: pos must be u32 or i64");
    }
    const int64_t rows = x->dims[0] * x->dims[1] * x->dims[2];
    if (rows == 0 || x->dims[3] == 0) return WK_OK;
    rope_kv_job j = { .a = a, .pos = pos, .Hkv = (x->dims[2] - rp->n_q) / 2 };
    atomic_init(&j.oom, 0);
    wk_parallel_tasks(rows, (double)x->dims[3] * 3, x->dtype == WK_F64 ? rope_kv_chunk_d : rope_kv_chunk_f, &j);
    if (atomic_load(&j.oom))
        return WK_CPU_ERROR(WK_ERR_MEMORY, "rope_kv: out of memory for a row buffer of %lld values", (long long)x->dims[3]);
    return WK_OK;
}
