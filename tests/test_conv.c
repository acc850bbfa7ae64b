/* test_conv.c — convolutions, pools and upsampling (docs/conv.md) on f16,
 * bf16, f32 and f64 against naive double-precision loops written here:
 * conv1d, conv2d and their transposed forms over a sweep of strides,
 * paddings, dilations, groups (depthwise included), output paddings, 1x1
 * and 7x7 kernels, odd sizes (1, 7, 33), channels 3 and batch 1 and 17,
 * with and without bias; avg_pool2d (ceil_mode, both divisor rules) and
 * max_pool2d (indices, NaN and -inf windows); nearest 1-d/2-d and
 * bilinear upsampling by sizes and scale factors, align_corners both
 * ways. Inputs come contiguous and as transposed, reversed and narrowed
 * views; outputs are allocated over freed memory filled with NaN (a
 * cell the kernel forgets shows). The conv/torch/ cases check the ops
 * (and the naive references) once more against PyTorch's float64 values
 * in data/conv_ref.h (tools/gen_conv_ref.py). conv/errors/ cases: every
 * bad argument fails with its status and a message naming the problem.
 *
 * Inputs are random from the case's seed (printed on failure; --seed
 * replays). Results must match the reference rounded to the dtype within
 * the accumulating bound (t_bound_acc), NaN and Inf in the same places.
 *
 * Case names: conv/<op>/<dtype>/<case>.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "test.h"
#include "data/conv_ref.h"

static const wk_dtype cv_dts[4] = { WK_F16, WK_BF16, WK_F32, WK_F64 };
#define N_(a) ((int)(sizeof(a) / sizeof((a)[0])))

static const char *const op_names[9] = { "conv1d", "conv_transpose1d", "conv2d", "conv_transpose2d", "avg_pool2d",
                                         "max_pool2d", "upsample_nearest1d", "upsample_nearest2d",
                                         "upsample_bilinear2d" };

/* ---- helpers -------------------------------------------------------------- */

static double *as_doubles(const t_arr *a)
{
    double *d = t_mem((size_t)a->n * sizeof(double) + 8);
    for (int64_t i = 0; i < a->n; i++) d[i] = t_get(a->dt, a->p, i);
    return d;
}

static wk_tensor *mk(wk_dtype dt, t_layout_kind kind, wk_shape s, double **v)
{
    t_arr a;
    wk_tensor *t = t_make(dt, kind, s, T_GEN(G_UNIFORM, -2, 2), &a);
    if (t && v) *v = as_doubles(&a);
    return t;
}

static wk_tensor *from_vals(wk_dtype dt, wk_shape s, const double *vals)
{
    t_arr a = t_arr_new(dt, s);
    for (int64_t i = 0; i < a.n; i++) t_put(dt, a.p, i, vals[i]);
    return T_NEED(wk_from_host(t_dev(), dt, s, a.p));
}

/* Fill freed heap memory of about the result's size with NaN, so that an
 * output the kernel leaves partly unwritten is caught. */
static void poison(int64_t n, wk_dtype dt)
{
    wk_tensor *p = wk_full(t_dev(), dt, WK_SHAPE(n > 0 ? n : 1), NAN);
    wk_release(p);
}

static wk_shape shp(int r, const int64_t *d)
{
    wk_shape s = { r, { 0 } };
    for (int i = 0; i < r; i++) s.dims[i] = d[i];
    return s;
}

/* ---- references (naive, double) ------------------------------------------------- */

/* conv (nsp 1 or 2 spatial dims; tr: transposed) of x [N, Ci, H, W] with
 * w, b (or NULL) into y [N, Co, Ho, Wo]; 1-d as H = 1 */
typedef struct cgeo {
    int nsp; bool tr;
    int64_t N, Ci, H, W, Co, Ho, Wo, kh, kw, G;
    int64_t s[2], p[2], d[2];
} cgeo;

static void ref_conv(const cgeo *g, const double *x, const double *w, const double *b, double *y)
{
    int64_t Cig = g->Ci / g->G, Cog = g->Co / g->G;
    for (int64_t i = 0; i < g->N * g->Co * g->Ho * g->Wo; i++) y[i] = b ? b[(i / (g->Ho * g->Wo)) % g->Co] : 0;
    for (int64_t n = 0; n < g->N; n++)
        for (int64_t gr = 0; gr < g->G; gr++)
            for (int64_t ci = 0; ci < Cig; ci++)
                for (int64_t co = 0; co < Cog; co++)
                    for (int64_t ki = 0; ki < g->kh; ki++)
                        for (int64_t kj = 0; kj < g->kw; kj++) {
                            int64_t cin = gr * Cig + ci, cout = gr * Cog + co;
                            double wv = g->tr ? w[((cin * Cog + co) * g->kh + ki) * g->kw + kj]
                                              : w[((cout * Cig + ci) * g->kh + ki) * g->kw + kj];
                            if (!g->tr) {
                                for (int64_t oh = 0; oh < g->Ho; oh++)
                                    for (int64_t ow = 0; ow < g->Wo; ow++) {
                                        int64_t ih = oh * g->s[0] - g->p[0] + ki * g->d[0];
                                        int64_t iw = ow * g->s[1] - g->p[1] + kj * g->d[1];
                                        if (ih < 0 || ih >= g->H || iw < 0 || iw >= g->W) continue;
                                        y[((n * g->Co + cout) * g->Ho + oh) * g->Wo + ow] +=
                                            wv * x[((n * g->Ci + cin) * g->H + ih) * g->W + iw];
                                    }
                            } else {
                                for (int64_t ih = 0; ih < g->H; ih++)
                                    for (int64_t iw = 0; iw < g->W; iw++) {
                                        int64_t oh = ih * g->s[0] - g->p[0] + ki * g->d[0];
                                        int64_t ow = iw * g->s[1] - g->p[1] + kj * g->d[1];
                                        if (oh < 0 || oh >= g->Ho || ow < 0 || ow >= g->Wo) continue;
                                        y[((n * g->Co + cout) * g->Ho + oh) * g->Wo + ow] +=
                                            wv * x[((n * g->Ci + cin) * g->H + ih) * g->W + iw];
                                    }
                            }
                        }
}

/* pools over planes [P, H, W]: windows of kernel k, stride s, padding p;
 * ceil mode has already set Ho, Wo; idx (max) may be NULL */
static void ref_pool(bool mx, int64_t P, int64_t H, int64_t W, int64_t Ho, int64_t Wo, const int64_t *k,
                     const int64_t *s, const int64_t *p, bool include_pad, const double *x, double *y, double *idx)
{
    for (int64_t pl = 0; pl < P; pl++)
        for (int64_t oh = 0; oh < Ho; oh++)
            for (int64_t ow = 0; ow < Wo; ow++) {
                double acc = mx ? -INFINITY : 0;
                int64_t cnt = 0, best = -1, padcnt = 0;
                for (int64_t i = 0; i < k[0]; i++)
                    for (int64_t j = 0; j < k[1]; j++) {
                        int64_t h = oh * s[0] - p[0] + i, w = ow * s[1] - p[1] + j;
                        if (h < H + p[0] && w < W + p[1]) padcnt++;
                        if (h < 0 || h >= H || w < 0 || w >= W) continue;
                        double v = x[(pl * H + h) * W + w];
                        cnt++;
                        if (!mx) acc += v;
                        else if (best < 0) best = h * W + w;   /* the first cell inside x */
                        if (mx && (v > acc || isnan(v))) {     /* a NaN wins, the last one */
                            acc = v;
                            best = h * W + w;
                        }
                    }
                int64_t o = (pl * Ho + oh) * Wo + ow;
                if (mx) {
                    y[o] = acc;
                    if (idx) idx[o] = (double)best;
                } else {
                    y[o] = acc / (double)(include_pad ? padcnt : cnt);
                }
            }
}

/* nearest: PyTorch's f32 index rule, written out independently */
static int64_t ref_near(int64_t o, int64_t in, int64_t out, double scale)
{
    float sc = scale > 0 ? (float)(1.0 / scale) : (float)in / (float)out;
    if (in == out) return o;
    int64_t i = (int64_t)floorf((float)o * sc);
    return i > in - 1 ? in - 1 : i;
}

static void ref_bilin_src(int64_t o, int64_t in, int64_t out, bool align, double scale, int64_t *i0, int64_t *i1,
                          double *l)
{
    double sc = align ? (out > 1 ? (double)(in - 1) / (double)(out - 1) : 0)
                      : scale > 0 ? 1.0 / scale : (double)in / (double)out;
    double r = align ? sc * (double)o : fmax(sc * ((double)o + 0.5) - 0.5, 0);
    *i0 = (int64_t)r < in - 1 ? (int64_t)r : in - 1;
    *i1 = *i0 < in - 1 ? *i0 + 1 : *i0;
    *l = r - (double)*i0;
}

/* upsampling of planes [P, H, W] to [P, Ho, Wo] (1-d: H = Ho = 1) */
static void ref_upsample(bool bil, int64_t P, int64_t H, int64_t W, int64_t Ho, int64_t Wo, bool align,
                         const double *sc, const double *x, double *y)
{
    for (int64_t pl = 0; pl < P; pl++)
        for (int64_t oh = 0; oh < Ho; oh++)
            for (int64_t ow = 0; ow < Wo; ow++) {
                const double *xp = x + pl * H * W;
                double v;
                if (!bil) {
                    v = xp[ref_near(oh, H, Ho, sc[0]) * W + ref_near(ow, W, Wo, sc[1])];
                } else {
                    int64_t h0, h1, w0, w1;
                    double lh, lw;
                    ref_bilin_src(oh, H, Ho, align, sc[0], &h0, &h1, &lh);
                    ref_bilin_src(ow, W, Wo, align, sc[1], &w0, &w1, &lw);
                    v = (1 - lh) * ((1 - lw) * xp[h0 * W + w0] + lw * xp[h0 * W + w1]) +
                        lh * ((1 - lw) * xp[h1 * W + w0] + lw * xp[h1 * W + w1]);
                }
                y[(pl * Ho + oh) * Wo + ow] = v;
            }
}

/* ---- random conv cases ------------------------------------------------------------- */

typedef struct ccase {
    const char *name;
    int nsp; bool tr;
    int64_t N, Ci, H, W, Co, kh, kw, G;
    int64_t s[2], p[2], d[2], op[2];
    bool bias;
} ccase;

static const ccase ccases[] = {
    { "basic", 2, false, 2, 3, 7, 7, 4, 3, 3, 1, { 1, 1 }, { 1, 1 }, { 1, 1 }, { 0, 0 }, true },
    { "stride2_pad0", 2, false, 1, 3, 8, 9, 5, 3, 2, 1, { 2, 2 }, { 0, 0 }, { 1, 1 }, { 0, 0 }, false },
    { "dil2_groups3", 2, false, 2, 6, 9, 8, 9, 2, 3, 3, { 1, 2 }, { 2, 1 }, { 2, 2 }, { 0, 0 }, true },
    { "depthwise", 2, false, 1, 8, 7, 6, 8, 3, 3, 8, { 1, 1 }, { 1, 1 }, { 1, 1 }, { 0, 0 }, true },
    { "1x1", 2, false, 3, 5, 4, 6, 7, 1, 1, 1, { 1, 1 }, { 0, 0 }, { 1, 1 }, { 0, 0 }, false },
    { "7x7_s2_p3", 2, false, 1, 3, 33, 33, 4, 7, 7, 1, { 2, 2 }, { 3, 3 }, { 1, 1 }, { 0, 0 }, true },
    { "size1", 2, false, 1, 1, 1, 1, 1, 1, 1, 1, { 1, 1 }, { 0, 0 }, { 1, 1 }, { 0, 0 }, false },
    { "batch17", 2, false, 17, 2, 5, 4, 3, 3, 2, 1, { 1, 1 }, { 1, 0 }, { 1, 1 }, { 0, 0 }, true },
    { "big_pad", 2, false, 1, 2, 3, 3, 2, 2, 2, 2, { 3, 2 }, { 4, 3 }, { 1, 1 }, { 0, 0 }, true },
    { "1d_basic", 1, false, 2, 3, 1, 33, 4, 1, 5, 1, { 1, 1 }, { 2, 0 }, { 1, 1 }, { 0, 0 }, true },
    { "1d_s3_d2_g2", 1, false, 3, 4, 1, 7, 6, 1, 3, 2, { 3, 1 }, { 1, 0 }, { 2, 1 }, { 0, 0 }, false },
    { "t_basic", 2, true, 2, 3, 5, 4, 4, 3, 3, 1, { 1, 1 }, { 1, 1 }, { 1, 1 }, { 0, 0 }, true },
    { "t_s2_op1", 2, true, 1, 4, 4, 5, 6, 3, 2, 2, { 2, 2 }, { 1, 0 }, { 1, 1 }, { 1, 1 }, true },
    { "t_dil2_groups", 2, true, 2, 6, 3, 4, 3, 2, 3, 3, { 2, 3 }, { 0, 1 }, { 2, 2 }, { 1, 2 }, false },
    { "t_depthwise", 2, true, 1, 5, 6, 6, 5, 3, 3, 5, { 1, 1 }, { 1, 1 }, { 1, 1 }, { 0, 0 }, true },
    { "t_1d", 1, true, 2, 3, 1, 7, 2, 1, 4, 1, { 3, 1 }, { 1, 0 }, { 1, 1 }, { 2, 0 }, true },
    { "t_1d_groups", 1, true, 1, 4, 1, 33, 6, 1, 3, 2, { 2, 1 }, { 2, 0 }, { 3, 1 }, { 1, 0 }, false },
    { "c512_3x3", 2, false, 1, 512, 5, 4, 6, 3, 3, 1, { 1, 1 }, { 1, 1 }, { 1, 1 }, { 0, 0 }, true },
    { "t_c512", 2, true, 1, 512, 3, 3, 4, 2, 2, 2, { 2, 2 }, { 0, 0 }, { 1, 1 }, { 1, 0 }, true },
};

/* A sampled sweep: random valid options (stride 1-3, padding 0-3,
 * dilation 1-3, groups dividing both channel counts, output_padding below
 * stride or dilation, kernels 1-4, sizes 1-9), as PyTorch accepts them. */
static bool sweep_case(int i, ccase *C)
{
    t_rng *r = t_r();
    C->name = "sweep";
    C->nsp = 1 + (int)t_rng_int(r, 0, 1);
    C->tr = (i & 1) != 0;
    C->G = t_rng_int(r, 1, 3);
    C->Ci = C->G * t_rng_int(r, 1, 3);
    C->Co = C->G * t_rng_int(r, 1, 3);
    C->N = t_rng_int(r, 1, 3);
    C->bias = t_rng_int(r, 0, 1) != 0;
    const int64_t in[2] = { C->nsp == 2 ? t_rng_int(r, 1, 9) : 0, t_rng_int(r, 1, 9) };
    int64_t k[2];
    for (int d = 0; d < 2; d++) {
        k[d] = t_rng_int(r, 1, 4);
        C->s[d] = t_rng_int(r, 1, 3);
        C->p[d] = t_rng_int(r, 0, 3);
        C->d[d] = t_rng_int(r, 1, 3);
        int64_t lim = C->s[d] > C->d[d] ? C->s[d] : C->d[d];
        C->op[d] = C->tr ? t_rng_int(r, 0, lim - 1) : 0;
    }
    /* a 1-d case keeps its L options in index 0 */
    C->H = C->nsp == 2 ? in[0] : 1;
    C->W = in[1];
    C->kh = C->nsp == 2 ? k[0] : 1;
    C->kw = k[1];
    if (C->nsp == 1) k[0] = k[1];
    for (int d = 0; d < C->nsp; d++) {
        int64_t n = C->nsp == 2 ? (d ? C->W : C->H) : C->W, kk = C->nsp == 2 ? (d ? C->kw : C->kh) : C->kw;
        int64_t o = C->tr ? (n - 1) * C->s[d] - 2 * C->p[d] + C->d[d] * (kk - 1) + C->op[d] + 1
                          : (n + 2 * C->p[d] - C->d[d] * (kk - 1) - 1) / C->s[d] + 1;
        if (o < 1 || (!C->tr && n + 2 * C->p[d] - C->d[d] * (kk - 1) - 1 < 0)) return false;
    }
    return true;
}

static const t_layout_kind in_kinds[4] = { LK_CONTIG, LK_TRANSPOSED, LK_REVERSED, LK_NARROWED };
static const char *const in_names[4] = { "contig", "transposed", "reversed", "narrowed" };

static void conv_case(wk_dtype dt, const ccase *C, int lay)
{
    /* per-dim options as 2-d ones (a 1-d case gives its L options in index 0) */
    const bool one = C->nsp == 1;
    const int64_t S[2] = { one ? 1 : C->s[0], one ? C->s[0] : C->s[1] };
    const int64_t Pd[2] = { one ? 0 : C->p[0], one ? C->p[0] : C->p[1] };
    const int64_t D[2] = { one ? 1 : C->d[0], one ? C->d[0] : C->d[1] };
    const int64_t OP[2] = { one ? 0 : C->op[0], one ? C->op[0] : C->op[1] };
    cgeo g = { C->nsp, C->tr, C->N, C->Ci, C->H, C->W, C->Co, 0, 0, C->kh, C->kw, C->G,
               { S[0], S[1] }, { Pd[0], Pd[1] }, { D[0], D[1] } };
    int64_t ho[2];
    const int64_t in[2] = { C->H, C->W }, kk[2] = { C->kh, C->kw };
    for (int i = 0; i < 2; i++)
        ho[i] = C->tr ? (in[i] - 1) * S[i] - 2 * Pd[i] + D[i] * (kk[i] - 1) + OP[i] + 1
                      : (in[i] + 2 * Pd[i] - D[i] * (kk[i] - 1) - 1) / S[i] + 1;
    g.Ho = ho[0];
    g.Wo = ho[1];
    int r = C->nsp + 2;
    int64_t xd[4] = { C->N, C->Ci, C->H, C->W }, wd[4], od[4] = { C->N, C->Co, g.Ho, g.Wo };
    if (C->tr) { wd[0] = C->Ci; wd[1] = C->Co / C->G; }
    else { wd[0] = C->Co; wd[1] = C->Ci / C->G; }
    wd[2] = C->kh;
    wd[3] = C->kw;
    if (C->nsp == 1) { xd[2] = C->W; wd[2] = C->kw; od[2] = g.Wo; }
    double *x, *w, *b = NULL;
    wk_tensor *tx = mk(dt, in_kinds[lay], shp(r, xd), &x);
    wk_tensor *tw = mk(dt, lay == 1 ? LK_NARROWED : LK_CONTIG, shp(r, wd), &w);
    wk_tensor *tb = C->bias ? mk(dt, LK_NARROWED, WK_SHAPE(C->Co), &b) : NULL;
    if (!tx || !tw || (C->bias && !tb)) return;
    wk_conv_opts o = { .groups = C->G };
    for (int i = 0; i < C->nsp; i++) {
        o.stride[i] = C->s[i];
        o.padding[i] = C->p[i];
        o.dilation[i] = C->d[i];
        o.output_padding[i] = C->op[i];
    }
    int64_t n = C->N * C->Co * g.Ho * g.Wo;
    double *ref = t_mem((size_t)n * sizeof(double) + 8);
    ref_conv(&g, x, w, b, ref);
    poison(n, dt);
    wk_tensor *y = C->nsp == 1 ? (C->tr ? wk_conv_transpose1d(tx, tw, tb, &o) : wk_conv1d(tx, tw, tb, &o))
                               : (C->tr ? wk_conv_transpose2d(tx, tw, tb, &o) : wk_conv2d(tx, tw, tb, &o));
    y = T_NEED(y);
    if (y) t_check_close(op_names[(C->nsp == 2) * 2 + C->tr], y, shp(r, od), dt, ref, t_bound_acc(dt));
}

/* ---- random pool and upsample cases -------------------------------------------------- */

typedef struct pcase {
    const char *name;
    int64_t N, C, H, W, k[2], s[2], p[2];
    bool ceil, exclude;
} pcase;

static const pcase pcases[] = {
    { "k2s2", 2, 3, 8, 8, { 2, 2 }, { 2, 2 }, { 0, 0 }, false, false },
    { "k3s2p1", 1, 4, 7, 9, { 3, 3 }, { 2, 2 }, { 1, 1 }, false, false },
    { "k3s2p1_ceil", 1, 4, 7, 8, { 3, 3 }, { 2, 2 }, { 1, 1 }, true, false },
    { "k3s2p1_ceil_excl", 2, 2, 33, 7, { 3, 3 }, { 2, 2 }, { 1, 1 }, true, true },
    { "k2x3_s1x2_p1", 1, 3, 5, 7, { 2, 3 }, { 1, 2 }, { 1, 1 }, false, true },
    { "k1", 1, 2, 3, 3, { 1, 1 }, { 1, 1 }, { 0, 0 }, false, false },
    { "k4_s3_ceil", 17, 1, 10, 11, { 4, 4 }, { 3, 3 }, { 2, 1 }, true, false },
};

static int64_t pool_out(int64_t in, int64_t k, int64_t s, int64_t p, bool ceil)
{
    int64_t num = in + 2 * p - k + (ceil ? s - 1 : 0);
    int64_t o = num / s + 1;
    if (ceil && (o - 1) * s >= in + p) o--;
    return o;
}

static void pool_case(wk_dtype dt, bool mx, const pcase *P, int lay)
{
    int64_t Ho = pool_out(P->H, P->k[0], P->s[0], P->p[0], P->ceil);
    int64_t Wo = pool_out(P->W, P->k[1], P->s[1], P->p[1], P->ceil);
    double *x;
    wk_tensor *tx = mk(dt, in_kinds[lay], WK_SHAPE(P->N, P->C, P->H, P->W), &x);
    if (!tx) return;
    if (mx && P->H * P->W > 4) {   /* a NaN and a -inf in the first plane */
        x[1] = NAN;
        x[3] = -INFINITY;
        tx = from_vals(dt, WK_SHAPE(P->N, P->C, P->H, P->W), x);
        if (!tx) return;
    }
    int64_t n = P->N * P->C * Ho * Wo;
    double *ref = t_mem((size_t)n * 8 + 8), *ri = t_mem((size_t)n * 8 + 8);
    ref_pool(mx, P->N * P->C, P->H, P->W, Ho, Wo, P->k, P->s, P->p, !P->exclude, x, ref, ri);
    wk_pool_opts o = { { P->k[0], P->k[1] }, { P->s[0], P->s[1] }, { P->p[0], P->p[1] }, P->ceil, P->exclude };
    poison(n, dt);
    wk_tensor *idx = NULL;
    wk_tensor *y = T_NEED(mx ? wk_max_pool2d(tx, &o, &idx) : wk_avg_pool2d(tx, &o));
    t_own(idx);
    if (!y) return;
    wk_shape so = WK_SHAPE(P->N, P->C, Ho, Wo);
    t_check_close(mx ? "max_pool2d" : "avg_pool2d", y, so, dt, ref, mx ? 0 : t_bound_acc(dt));
    if (mx) {
        if (!idx) t_fail("max_pool2d gave no indices");
        else t_check_close("max_pool2d indices", idx, so, WK_U32, ri, 0);
        wk_tensor *y2 = T_NEED(wk_max_pool2d(tx, &o, NULL));
        if (y2) t_check_close("max_pool2d without indices", y2, so, dt, ref, 0);
    }
}

typedef struct ucase {
    int kind;   /* 0 nearest1d, 1 nearest2d, 2 bilinear */
    const char *name;
    int64_t N, C, H, W, Ho, Wo;
    double sc[2];
    bool align;
} ucase;

static const ucase ucases[] = {
    { 0, "up3", 2, 3, 1, 7, 1, 21, { 0, 0 }, false },
    { 0, "down", 1, 2, 1, 33, 1, 7, { 0, 0 }, false },
    { 0, "scale2.5", 1, 2, 1, 6, 1, 15, { 0, 2.5 }, false },
    { 1, "x2", 2, 3, 4, 5, 8, 10, { 0, 0 }, false },
    { 1, "odd", 1, 2, 7, 3, 33, 5, { 0, 0 }, false },
    { 1, "scales", 1, 1, 5, 6, 8, 10, { 1.7, 1.75 }, false },
    { 1, "size1", 1, 1, 1, 1, 3, 4, { 0, 0 }, false },
    { 2, "up", 2, 2, 4, 5, 9, 13, { 0, 0 }, false },
    { 2, "up_align", 2, 2, 4, 5, 9, 13, { 0, 0 }, true },
    { 2, "down", 1, 3, 33, 7, 5, 3, { 0, 0 }, false },
    { 2, "down_align", 1, 3, 33, 7, 5, 3, { 0, 0 }, true },
    { 2, "scales", 1, 2, 3, 4, 7, 6, { 2.5, 1.6 }, false },
    { 2, "to1x1_align", 1, 2, 3, 4, 1, 1, { 0, 0 }, true },
    { 2, "from1", 1, 1, 1, 1, 4, 3, { 0, 0 }, false },
};

static void upsample_case(wk_dtype dt, const ucase *U, int lay)
{
    double *x;
    wk_shape sx = U->kind == 0 ? WK_SHAPE(U->N, U->C, U->W) : WK_SHAPE(U->N, U->C, U->H, U->W);
    wk_tensor *tx = mk(dt, in_kinds[lay], sx, &x);
    if (!tx) return;
    int64_t n = U->N * U->C * U->Ho * U->Wo;
    double *ref = t_mem((size_t)n * 8 + 8);
    ref_upsample(U->kind == 2, U->N * U->C, U->H, U->W, U->Ho, U->Wo, U->align, U->sc, x, ref);
    poison(n, dt);
    wk_tensor *y = U->kind == 0   ? wk_upsample_nearest1d(tx, U->Wo, U->sc[1])
                   : U->kind == 1 ? wk_upsample_nearest2d(tx, U->Ho, U->Wo, U->sc[0], U->sc[1])
                                  : wk_upsample_bilinear2d(tx, U->Ho, U->Wo, U->align, U->sc[0], U->sc[1]);
    y = T_NEED(y);
    wk_shape so = U->kind == 0 ? WK_SHAPE(U->N, U->C, U->Wo) : WK_SHAPE(U->N, U->C, U->Ho, U->Wo);
    if (y) t_check_close(op_names[6 + U->kind], y, so, dt, ref, U->kind == 2 ? t_bound_acc(dt) : 0);
}

/* ---- PyTorch's values (data/conv_ref.h) -------------------------------------------------- */

static void torch_case(wk_dtype dt, const cref_case *c)
{
    wk_shape sx = shp(c->xr, c->xs), sy = shp(c->yr, c->ys);
    wk_tensor *x = from_vals(dt, sx, c->x), *w = c->w ? from_vals(dt, shp(c->wr, c->ws), c->w) : NULL;
    wk_tensor *b = c->b ? from_vals(dt, WK_SHAPE(c->ys[1]), c->b) : NULL;
    if (!x || (c->w && !w) || (c->b && !b)) return;
    int nsp = c->op == 0 || c->op == 1 || c->op == 6 ? 1 : 2;
    int64_t ny = t_numel(sy);
    double *mine = t_mem((size_t)ny * 8 + 8), *mi = t_mem((size_t)ny * 8 + 8);
    wk_tensor *y = NULL, *idx = NULL;
    if (c->op <= 3) {
        wk_conv_opts o = { .groups = c->groups };
        for (int i = 0; i < 2; i++) {
            o.stride[i] = c->stride[i];
            o.padding[i] = c->padding[i];
            o.dilation[i] = c->dilation[i];
            o.output_padding[i] = c->output_padding[i];
        }
        y = c->op == 0 ? wk_conv1d(x, w, b, &o) : c->op == 1 ? wk_conv_transpose1d(x, w, b, &o)
            : c->op == 2 ? wk_conv2d(x, w, b, &o) : wk_conv_transpose2d(x, w, b, &o);
        bool tr = c->op & 1;
        cgeo g = { nsp, tr, c->xs[0], c->xs[1], nsp == 2 ? c->xs[2] : 1, c->xs[nsp + 1], c->ys[1],
                   nsp == 2 ? c->ys[2] : 1, c->ys[nsp + 1], nsp == 2 ? c->ws[2] : 1, c->ws[nsp + 1], c->groups,
                   { nsp == 2 ? (c->stride[0] ? c->stride[0] : 1) : 1, c->stride[nsp - 1] ? c->stride[nsp - 1] : 1 },
                   { nsp == 2 ? c->padding[0] : 0, c->padding[nsp - 1] },
                   { nsp == 2 ? (c->dilation[0] ? c->dilation[0] : 1) : 1,
                     c->dilation[nsp - 1] ? c->dilation[nsp - 1] : 1 } };
        ref_conv(&g, c->x, c->w, c->b, mine);
    } else if (c->op <= 5) {
        wk_pool_opts o = { { c->kernel[0], c->kernel[1] }, { c->stride[0], c->stride[1] },
                           { c->padding[0], c->padding[1] }, c->ceil_mode != 0, c->exclude_pad != 0 };
        y = c->op == 4 ? wk_avg_pool2d(x, &o) : wk_max_pool2d(x, &o, &idx);
        ref_pool(c->op == 5, c->xs[0] * c->xs[1], c->xs[2], c->xs[3], c->ys[2], c->ys[3], c->kernel, c->stride,
                 c->padding, !c->exclude_pad, c->x, mine, mi);
    } else {
        int64_t H = nsp == 2 ? c->xs[2] : 1, W = c->xs[nsp + 1], Ho = nsp == 2 ? c->ys[2] : 1, Wo = c->ys[nsp + 1];
        y = c->op == 6   ? wk_upsample_nearest1d(x, Wo, c->scale[1])
            : c->op == 7 ? wk_upsample_nearest2d(x, Ho, Wo, c->scale[0], c->scale[1])
                         : wk_upsample_bilinear2d(x, Ho, Wo, c->align != 0, c->scale[0], c->scale[1]);
        ref_upsample(c->op == 8, c->xs[0] * c->xs[1], H, W, Ho, Wo, c->align != 0, c->scale, c->x, mine);
    }
    t_own(idx);
    y = T_NEED(y);
    if (!y) return;
    t_check_close(c->name, y, sy, dt, c->y, dt == WK_F64 ? 1e-24 : t_bound_acc(dt));
    t_cmp_values("naive reference against PyTorch", WK_F64, mine, c->y, ny, 1e-26);
    if (c->idx) {
        if (!idx) t_fail("max_pool2d gave no indices");
        else t_check_close("max_pool2d indices", idx, sy, WK_U32, c->idx, 0);
        t_cmp_values("naive indices against PyTorch", WK_F64, mi, c->idx, ny, 0);
    }
}

/* ---- errors ------------------------------------------------------------------------------------ */

#define ANY WK_STATUS_COUNT
#define NUL(expr, want, w1, w2) t_check_null(#expr, (expr), (want), (w1), (w2), NULL)

static void errors(void)
{
    wk_device *dev = t_dev();
    if (t_case("conv/errors/conv")) {
        wk_tensor *x = T_NEED(wk_zeros(dev, WK_F32, WK_SHAPE(2, 4, 5, 5)));
        wk_tensor *w = T_NEED(wk_zeros(dev, WK_F32, WK_SHAPE(6, 2, 3, 3)));
        wk_tensor *w16 = T_NEED(wk_zeros(dev, WK_F16, WK_SHAPE(6, 2, 3, 3)));
        wk_tensor *xi = T_NEED(wk_zeros(dev, WK_I32, WK_SHAPE(2, 4, 5, 5)));
        wk_tensor *x1 = T_NEED(wk_zeros(dev, WK_F32, WK_SHAPE(2, 4, 5)));
        wk_tensor *b5 = T_NEED(wk_zeros(dev, WK_F32, WK_SHAPE(5)));
        if (x && w && w16 && xi && x1 && b5) {
            wk_conv_opts g2 = { .groups = 2 }, g3 = { .groups = 3 };
            NUL(wk_conv2d(NULL, w, NULL, &g2), WK_ERR_ARGUMENT, "conv2d", "NULL");
            NUL(wk_conv2d(x, NULL, NULL, &g2), WK_ERR_ARGUMENT, "conv2d", "NULL");
            NUL(wk_conv2d(x, w, NULL, NULL), WK_ERR_SHAPE, "conv2d", "Cin/groups");
            NUL(wk_conv2d(x, w, NULL, &g3), WK_ERR_SHAPE, "groups (3)", "channels (4)");
            NUL(wk_conv2d(x, w16, NULL, &g2), WK_ERR_DTYPE, "f32", "f16");
            NUL(wk_conv2d(xi, w, NULL, &g2), ANY, "conv2d", "i32");
            NUL(wk_conv2d(x1, w, NULL, &g2), WK_ERR_SHAPE, "rank 4", "rank 3");
            NUL(wk_conv1d(x, w, NULL, &g2), WK_ERR_SHAPE, "rank 3", "rank 4");
            NUL(wk_conv2d(x, w, b5, &g2), WK_ERR_SHAPE, "bias", "(6)");
            wk_conv_opts bad = { .groups = 2, .stride = { -1, 1 } };
            NUL(wk_conv2d(x, w, NULL, &bad), WK_ERR_ARGUMENT, "stride", "-1");
            wk_conv_opts pad = { .groups = 2, .padding = { 0, -2 } };
            NUL(wk_conv2d(x, w, NULL, &pad), WK_ERR_ARGUMENT, "padding", "-2");
            wk_conv_opts gn = { .groups = -2 };
            NUL(wk_conv2d(x, w, NULL, &gn), WK_ERR_ARGUMENT, "groups", "-2");
            wk_conv_opts dil = { .groups = 2, .dilation = { 3, 3 } };
            NUL(wk_conv2d(x, w, NULL, &dil), WK_ERR_SHAPE, "too small", "dilation 3");
            wk_conv_opts op = { .groups = 2, .output_padding = { 1, 0 } };
            NUL(wk_conv2d(x, w, NULL, &op), WK_ERR_ARGUMENT, "output_padding", "transposed");
            wk_tensor *wt = T_NEED(wk_zeros(dev, WK_F32, WK_SHAPE(4, 3, 3, 3)));
            wk_conv_opts op2 = { .stride = { 2, 2 }, .output_padding = { 2, 0 } };
            if (wt) {
                NUL(wk_conv_transpose2d(x, wt, NULL, &op2), WK_ERR_ARGUMENT, "output_padding (2", "stride (2)");
                NUL(wk_conv_transpose2d(x, w, NULL, NULL), WK_ERR_SHAPE, "conv_transpose2d", "channels (4)");
            }
        }
    }
    if (t_case("conv/errors/pool")) {
        wk_tensor *x = T_NEED(wk_zeros(dev, WK_F32, WK_SHAPE(1, 2, 4, 4)));
        wk_tensor *x3 = T_NEED(wk_zeros(dev, WK_F32, WK_SHAPE(2, 4, 4)));
        wk_tensor *xu = T_NEED(wk_zeros(dev, WK_U8, WK_SHAPE(1, 2, 4, 4)));
        if (x && x3 && xu) {
            wk_pool_opts k0 = { .kernel = { 0, 2 } }, kp = { .kernel = { 2, 2 }, .stride = { 1, 1 }, .padding = { 2, 0 } };
            wk_pool_opts k5 = { .kernel = { 5, 5 } }, ok = { .kernel = { 2, 2 } };
            wk_tensor *idx = (wk_tensor *)1;
            NUL(wk_avg_pool2d(x, NULL), WK_ERR_ARGUMENT, "avg_pool2d", "NULL");
            NUL(wk_avg_pool2d(NULL, &ok), WK_ERR_ARGUMENT, "avg_pool2d", "NULL");
            NUL(wk_avg_pool2d(x, &k0), WK_ERR_ARGUMENT, "kernel 0", "on H");
            NUL(wk_max_pool2d(x, &kp, &idx), WK_ERR_ARGUMENT, "padding (2 on H)", "half");
            if (idx) t_fail("max_pool2d left *indices set on error");
            NUL(wk_max_pool2d(x, &k5, NULL), WK_ERR_SHAPE, "too small", "kernel 5");
            NUL(wk_avg_pool2d(x3, &ok), WK_ERR_SHAPE, "rank 4", "rank 3");
            NUL(wk_max_pool2d(xu, &ok, NULL), ANY, "max_pool2d", "u8");
        }
    }
    if (t_case("conv/errors/upsample")) {
        wk_tensor *x = T_NEED(wk_zeros(dev, WK_F32, WK_SHAPE(1, 2, 4, 4)));
        wk_tensor *x3 = T_NEED(wk_zeros(dev, WK_F32, WK_SHAPE(1, 2, 4)));
        if (x && x3) {
            NUL(wk_upsample_nearest2d(x, 0, 4, 0, 0), WK_ERR_SHAPE, "upsample_nearest2d", "output 0");
            NUL(wk_upsample_nearest1d(x, 4, 0), WK_ERR_SHAPE, "rank 3", "rank 4");
            NUL(wk_upsample_bilinear2d(x3, 4, 4, false, 0, 0), WK_ERR_SHAPE, "rank 4", "rank 3");
            NUL(wk_upsample_bilinear2d(x, 4, 4, false, NAN, 0), WK_ERR_ARGUMENT, "scale", "finite");
            NUL(wk_upsample_nearest1d(NULL, 4, 0), WK_ERR_ARGUMENT, "upsample_nearest1d", "NULL");
        }
    }
}

T_SUITE(conv)
{
    for (int di = 0; di < N_(cv_dts); di++) {
        const wk_dtype dt = cv_dts[di];
        const char *dn = t_dt_name(dt);
        for (int c = 0; c < N_(ccases); c++) {
            const ccase *C = &ccases[c];
            const char *op = op_names[(C->nsp == 2) * 2 + C->tr];
            for (int lay = 0; lay < 4; lay++)
                if (t_case("conv/%s/%s/%s/%s", op, dn, C->name, in_names[lay])) {
                    t_cover(op, dt);
                    conv_case(dt, C, lay);
                }
        }
        for (int mx = 0; mx < 2; mx++)
            for (int p = 0; p < N_(pcases); p++)
                for (int lay = 0; lay < 4; lay += 1 + (p % 2))
                    if (t_case("conv/%s/%s/%s/%s", op_names[4 + mx], dn, pcases[p].name, in_names[lay])) {
                        t_cover(op_names[4 + mx], dt);
                        pool_case(dt, mx, &pcases[p], lay);
                    }
        for (int u = 0; u < N_(ucases); u++)
            for (int lay = 0; lay < 4; lay += 2)
                if (t_case("conv/%s/%s/%s/%s", op_names[6 + ucases[u].kind], dn, ucases[u].name, in_names[lay])) {
                    t_cover(op_names[6 + ucases[u].kind], dt);
                    upsample_case(dt, &ucases[u], lay);
                }
    }
    for (int i = 0; i < 96; i++) {
        const wk_dtype dt = cv_dts[i % 4];
        if (t_case("conv/sweep/%s/%d", t_dt_name(dt), i)) {
            ccase C;
            memset(&C, 0, sizeof C);
            if (!sweep_case(i, &C)) continue;   /* an output below 1: PyTorch refuses it too */
            t_cover(op_names[(C.nsp == 2) * 2 + C.tr], dt);
            conv_case(dt, &C, i % 4);
        }
    }
    for (int d = 0; d < 2; d++) {
        const wk_dtype dt = d ? WK_F64 : WK_F32;
        for (int c = 0; c < CREF_NCASES; c++)
            if (t_case("conv/torch/%s/%s/%s", t_dt_name(dt), op_names[cref_cases[c].op], cref_cases[c].name)) {
                t_cover(op_names[cref_cases[c].op], dt);
                torch_case(dt, &cref_cases[c]);
            }
    }
    if (t_case("conv/edge/f32/empty")) {
        /* no input channels: the output is the bias; no samples: an empty result */
        wk_device *dev = t_dev();
        wk_tensor *x = T_NEED(wk_zeros(dev, WK_F32, WK_SHAPE(2, 0, 5, 5)));
        wk_tensor *w = T_NEED(wk_zeros(dev, WK_F32, WK_SHAPE(3, 0, 3, 3)));
        wk_tensor *wt = T_NEED(wk_zeros(dev, WK_F32, WK_SHAPE(0, 3, 3, 3)));
        wk_tensor *b = T_NEED(wk_full(dev, WK_F32, WK_SHAPE(3), 1.5));
        wk_tensor *x0 = T_NEED(wk_zeros(dev, WK_F32, WK_SHAPE(0, 3, 5, 5)));
        wk_tensor *w3 = T_NEED(wk_zeros(dev, WK_F32, WK_SHAPE(4, 3, 3, 3)));
        if (x && w && wt && b && x0 && w3) {
            double *ref = t_mem(2 * 3 * 7 * 7 * sizeof(double));
            for (int i = 0; i < 2 * 3 * 7 * 7; i++) ref[i] = 1.5;
            wk_tensor *y = T_NEED(wk_conv2d(x, w, b, NULL));
            if (y) t_check_close("conv2d without input channels", y, WK_SHAPE(2, 3, 3, 3), WK_F32, ref, 0);
            y = T_NEED(wk_conv_transpose2d(x, wt, b, NULL));
            if (y) t_check_close("conv_transpose2d without input channels", y, WK_SHAPE(2, 3, 7, 7), WK_F32, ref, 0);
            const wk_pool_opts po = { .kernel = { 2, 2 } };
            wk_tensor *r[4] = { wk_conv2d(x0, w3, NULL, NULL), wk_max_pool2d(x0, &po, NULL), wk_avg_pool2d(x0, &po),
                                wk_upsample_bilinear2d(x0, 3, 3, false, 0, 0) };
            for (int i = 0; i < 4; i++)
                if (!T_NEED(r[i]) || wk_tensor_numel(r[i]) != 0) t_fail("result %d of an empty batch is not empty", i);
        }
    }
    errors();
}
