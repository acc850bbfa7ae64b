/* cpu_conv.c — the CONV family on the CPU: conv1d, conv2d and their
 * transposed forms (a 1-d op is the 2-d one with H = 1).
 *
 * Inputs (any strides) are first read into contiguous buffers of the
 * compute type (f32 for f16, bf16 and f32; f64 for f64). Then, for a
 * block of samples sized to keep the column buffer near COL_BYTES:
 *   conv:       im2col (rows (c, ki, kj), columns output positions), then
 *               one batched wk_cpu_matmul, [G, Cout/G, K] x [nb, G, K, L]
 *               -> [nb, Cout, L] (the weight broadcast over samples);
 *   transposed: [G, Cout/G * kh * kw, Cin/G] (the weight, transposed by
 *               its strides) x [nb, G, Cin/G, H * W] -> columns, then
 *               col2im adds every column into the output plane it hits.
 * The matmul is the threaded one of cpu_matmul.c (BLAS when loaded);
 * im2col, col2im, bias and the final rounding run on the thread pool.
 * f16/bf16 results are rounded once from the f32 accumulators.
 */
#include <stdlib.h>
#include "cpu_internal.h"

/* bytes of column buffer per block of samples (a -D override lets the
 * tests run the blocking with small tensors) */
#ifndef WK_CONV_COL_BYTES
#define WK_CONV_COL_BYTES ((int64_t)64 << 20)
#endif
#define COL_BYTES ((int64_t)(WK_CONV_COL_BYTES))

/* spatial geometry of a view ([N, C, L] as H = 1, W = L) */
typedef struct geo {
    int64_t n, c, h, w;
    int64_t sn, sc, sh, sw;
} geo;

static geo geo_of(const wk_view *v, int nsp)
{
    geo g = { v->dims[0], v->dims[1], nsp == 2 ? v->dims[2] : 1, v->dims[nsp + 1],
              v->strides[0], v->strides[1], nsp == 2 ? v->strides[2] : 0, v->strides[nsp + 1] };
    return g;
}

typedef struct conv_job {
    const wk_op_args *a;
    const wk_conv_params *P;
    bool f64;
    size_t esz;
    geo x, w, o;                /* input, weight, output geometry        */
    int64_t kh, kw;
    void *X, *Wb, *B;           /* contiguous compute-type copies         */
    void *col;                  /* column buffer                          */
    void *Y;                    /* compute-type output block              */
    int64_t n0, nb;             /* the block of samples                   */
} conv_job;

/* a contiguous compute-type copy of a strided [n, c, h, w] view: one task
 * per row of w elements */
typedef struct load_job { const wk_view *v; geo g; void *out; bool f64; } load_job;

static void load_rows(void *arg, int64_t r0, int64_t r1)
{
    const load_job *L = arg;
    for (int64_t r = r0; r < r1; r++) {
        int64_t h = r % L->g.h, c = (r / L->g.h) % L->g.c, n = r / (L->g.h * L->g.c);
        int64_t off = L->v->offset + n * L->g.sn + c * L->g.sc + h * L->g.sh;
        if (L->f64) wk_cpu_ld_row_d(L->v->base, L->v->dtype, off, L->g.sw, L->g.w, (double *)L->out + r * L->g.w);
        else wk_cpu_ld_row_f(L->v->base, L->v->dtype, off, L->g.sw, L->g.w, (float *)L->out + r * L->g.w);
    }
}

static void *load_view(const wk_view *v, geo g, bool f64)
{
    int64_t rows = g.n * g.c * g.h;
    void *out = malloc((size_t)(rows * g.w) * (f64 ? 8 : 4) + 8);
    if (!out) return NULL;
    load_job L = { v, g, out, f64 };
    wk_parallel_tasks(rows, (double)g.w, load_rows, &L);
    return out;
}

/* ---- im2col, col2im, output (one body per compute type) ---------------- */

#define CONV_BODIES(T, SFX)                                                                        \
    static void im2col_##SFX(void *arg, int64_t r0, int64_t r1)                                    \
    {                                                                                              \
        const conv_job *J = arg;                                                                   \
        const wk_conv_params *P = J->P;                                                            \
        int64_t kk = J->kh * J->kw, L = J->o.h * J->o.w, C = J->x.c;                               \
        for (int64_t r = r0; r < r1; r++) {                                                        \
            int64_t q = r % kk, c = (r / kk) % C, n = J->n0 + r / (kk * C);                        \
            int64_t ki = q / J->kw, kj = q % J->kw;                                                \
            const T *xp = (const T *)J->X + (n * C + c) * J->x.h * J->x.w;                         \
            T *cp = (T *)J->col + r * L;                                                           \
            for (int64_t oh = 0; oh < J->o.h; oh++) {                                              \
                int64_t ih = oh * P->stride[0] - P->padding[0] + ki * P->dilation[0];              \
                T *row = cp + oh * J->o.w;                                                         \
                if (ih < 0 || ih >= J->x.h) {                                                      \
                    memset(row, 0, (size_t)J->o.w * sizeof(T));                                    \
                    continue;                                                                      \
                }                                                                                  \
                const T *xr = xp + ih * J->x.w;                                                    \
                /* iw from ow, not stepped: a step past the last one may pass 2^63 */               \
                int64_t s = P->stride[1], iw0 = kj * P->dilation[1] - P->padding[1];               \
                for (int64_t ow = 0; ow < J->o.w; ow++) {                                          \
                    const int64_t iw = iw0 + ow * s;                                               \
                    row[ow] = iw >= 0 && iw < J->x.w ? xr[iw] : (T)0;                              \
                }                                                                                  \
            }                                                                                      \
        }                                                                                          \
    }                                                                                              \
    /* one output plane (n, co) of a transposed conv from the columns */                           \
    static void col2im_##SFX(void *arg, int64_t p0, int64_t p1)                                    \
    {                                                                                              \
        const conv_job *J = arg;                                                                   \
        const wk_conv_params *P = J->P;                                                            \
        int64_t kk = J->kh * J->kw, HW = J->x.h * J->x.w, Co = J->o.c, Lo = J->o.h * J->o.w;       \
        for (int64_t pl = p0; pl < p1; pl++) {                                                     \
            int64_t co = pl % Co, nl = pl / Co;                                                    \
            T *acc = (T *)J->Y + pl * Lo;                                                          \
            T b = J->B ? ((const T *)J->B)[co] : (T)0;                                             \
            for (int64_t i = 0; i < Lo; i++) acc[i] = 0;                                           \
            for (int64_t q = 0; q < kk; q++) {                                                     \
                int64_t ki = q / J->kw, kj = q % J->kw;                                            \
                const T *cr = (const T *)J->col + ((nl * Co + co) * kk + q) * HW;                  \
                for (int64_t ih = 0; ih < J->x.h; ih++) {                                          \
                    int64_t oh = ih * P->stride[0] - P->padding[0] + ki * P->dilation[0];          \
                    if (oh < 0 || oh >= J->o.h) continue;                                          \
                    T *ar = acc + oh * J->o.w;                                                     \
                    const T *cw = cr + ih * J->x.w;                                                \
                    const int64_t ow0 = kj * P->dilation[1] - P->padding[1];                       \
                    for (int64_t iw = 0; iw < J->x.w; iw++) {                                      \
                        const int64_t ow = ow0 + iw * P->stride[1];                                \
                        if (ow >= 0 && ow < J->o.w) ar[ow] += cw[iw];                              \
                    }                                                                              \
                }                                                                                  \
            }                                                                                      \
            for (int64_t i = 0; i < Lo; i++) acc[i] += b;                                          \
        }                                                                                          \
    }                                                                                              \
    /* bias of a forward conv, in place on its compute-type block */                               \
    static void bias_##SFX(void *arg, int64_t p0, int64_t p1)                                      \
    {                                                                                              \
        const conv_job *J = arg;                                                                   \
        int64_t Lo = J->o.h * J->o.w;                                                              \
        for (int64_t pl = p0; pl < p1; pl++) {                                                     \
            T b = ((const T *)J->B)[pl % J->o.c], *y = (T *)J->Y + pl * Lo;                        \
            for (int64_t i = 0; i < Lo; i++) y[i] += b;                                            \
        }                                                                                          \
    }

CONV_BODIES(float, f)
CONV_BODIES(double, d)

/* compute-type block -> dst's dtype (planes of the block) */
static void store_planes(void *arg, int64_t p0, int64_t p1)
{
    const conv_job *J = arg;
    const wk_view *d = J->a->dst;
    int64_t Lo = J->o.h * J->o.w, off = d->offset + J->n0 * J->o.c * Lo;
    for (int64_t pl = p0; pl < p1; pl++) {
        if (J->f64) wk_cpu_st_row_d(d->base, d->dtype, off + pl * Lo, 1, Lo, (const double *)J->Y + pl * Lo);
        else wk_cpu_st_row_f(d->base, d->dtype, off + pl * Lo, 1, Lo, (const float *)J->Y + pl * Lo);
    }
}

static wk_view mat_view(void *base, wk_dtype dt, int64_t offset, const int64_t *dims, const int64_t *strides)
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

wk_status wk_cpu_conv(void *ctx, const wk_op_args *a)
{
    const wk_conv_params *P = a->params;
    const wk_view *d = a->dst;
    const bool tr = a->op == WK_OP_CONV_TRANSPOSE1D || a->op == WK_OP_CONV_TRANSPOSE2D;
    conv_job J = { .a = a, .P = P, .f64 = d->dtype == WK_F64 };
    J.esz = J.f64 ? 8 : 4;
    const wk_dtype ct = J.f64 ? WK_F64 : WK_F32;
    J.x = geo_of(a->src[0], P->nsp);
    J.w = geo_of(a->src[1], P->nsp);
    J.o = geo_of(d, P->nsp);
    J.kh = J.w.h;
    J.kw = J.w.w;
    const int64_t N = J.x.n, Cin = J.x.c, Cout = J.o.c, G = P->groups, kk = J.kh * J.kw;
    const int64_t Lo = J.o.h * J.o.w, HW = J.x.h * J.x.w;
    wk_status st = WK_OK;
    J.X = load_view(a->src[0], J.x, J.f64);
    J.Wb = load_view(a->src[1], J.w, J.f64);
    if (a->src[2]) {
        const wk_view *b = a->src[2];
        J.B = malloc((size_t)Cout * J.esz + 8);
        if (J.B) {
            if (J.f64) wk_cpu_ld_row_d(b->base, b->dtype, b->offset, b->strides[0], Cout, J.B);
            else wk_cpu_ld_row_f(b->base, b->dtype, b->offset, b->strides[0], Cout, J.B);
        }
    }
    /* samples per block: the column buffer near COL_BYTES (at least one) */
    int64_t per = (tr ? Cout * kk * HW : Cin * kk * Lo) * (int64_t)J.esz;
    int64_t nb = per > 0 ? COL_BYTES / per : N;
    if (nb < 1) nb = 1;
    if (nb > N) nb = N;
    J.col = malloc((size_t)(nb * (per / (int64_t)J.esz)) * J.esz + 8);
    bool direct = d->dtype == ct && !tr;   /* the matmul writes dst itself */
    J.Y = direct ? NULL : malloc((size_t)(nb * Cout * Lo) * J.esz + 8);
    if (!J.X || !J.Wb || (a->src[2] && !J.B) || !J.col || (!direct && !J.Y)) {
        st = WK_CPU_ERROR(WK_ERR_MEMORY, "out of memory for the buffers of a convolution");
        goto done;
    }
    for (J.n0 = 0; J.n0 < N && st == WK_OK; J.n0 += nb) {
        J.nb = N - J.n0 < nb ? N - J.n0 : nb;
        if (direct) J.Y = (char *)d->base + (size_t)(d->offset + J.n0 * Cout * Lo) * J.esz;
        if (!tr) {
            const int64_t K = Cin / G * kk, Cog = Cout / G;
            if (K == 0) {
                memset(J.Y, 0, (size_t)(J.nb * Cout * Lo) * J.esz);
            } else {
                wk_parallel_tasks(J.nb * Cin * kk, (double)Lo, J.f64 ? im2col_d : im2col_f, &J);
                const int64_t dd[4] = { J.nb, G, Cog, Lo }, ds[4] = { Cout * Lo, Cog * Lo, Lo, 1 };
                const int64_t ad[4] = { J.nb, G, Cog, K }, as[4] = { 0, Cog * K, K, 1 };
                const int64_t bd[4] = { J.nb, G, K, Lo }, bs[4] = { G * K * Lo, K * Lo, Lo, 1 };
                wk_view vd = mat_view(J.Y, ct, 0, dd, ds), va = mat_view(J.Wb, ct, 0, ad, as),
                        vb = mat_view(J.col, ct, 0, bd, bs);
                st = wk_cpu_matmul(ctx, &vd, &va, &vb);
                if (st != WK_OK) break;
            }
            if (J.B) wk_parallel_tasks(J.nb * Cout, (double)Lo, J.f64 ? bias_d : bias_f, &J);
        } else {
            const int64_t Cig = Cin / G, Kc = Cout / G * kk;
            if (Cig == 0) {
                memset(J.col, 0, (size_t)(J.nb * Cout * kk * HW) * J.esz);
            } else {
                const int64_t dd[4] = { J.nb, G, Kc, HW }, ds[4] = { G * Kc * HW, Kc * HW, HW, 1 };
                const int64_t ad[4] = { J.nb, G, Kc, Cig }, as[4] = { 0, Cig * Kc, 1, Kc };
                const int64_t bd[4] = { J.nb, G, Cig, HW }, bs[4] = { Cin * HW, Cig * HW, HW, 1 };
                wk_view vd = mat_view(J.col, ct, 0, dd, ds), va = mat_view(J.Wb, ct, 0, ad, as),
                        vb = mat_view(J.X, ct, J.n0 * Cin * HW, bd, bs);
                st = wk_cpu_matmul(ctx, &vd, &va, &vb);
                if (st != WK_OK) break;
            }
            wk_parallel_tasks(J.nb * Cout, (double)(kk * HW + Lo), J.f64 ? col2im_d : col2im_f, &J);
        }
        if (!direct) wk_parallel_tasks(J.nb * Cout, (double)Lo, store_planes, &J);
    }
done:
    free(J.X);
    free(J.Wb);
    free(J.B);
    free(J.col);
    if (!direct) free(J.Y);
    return st;
}
