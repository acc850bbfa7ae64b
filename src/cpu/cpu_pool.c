/* cpu_pool.c — the POOL and UPSAMPLE families on the CPU: avg_pool2d,
 * max_pool2d (with its u32 indices), upsample_nearest1d/2d and
 * upsample_bilinear2d, on inputs of any strides, with PyTorch's rules
 * (docs/conv.md). One task per (n, c) plane on the thread pool.
 *
 * Pools read the input as doubles (exact for every dtype) and sum in
 * double; max_pool keeps the first maximum and lets a NaN win (the last
 * NaN of a window), as PyTorch's cpu kernel does. Upsampling computes
 * source positions and weights as PyTorch does: nearest in f32
 * (floor(dst * scale) with scale = 1 / scale_factor or in / out, in
 * f32), bilinear in f32 (f64 for f64).
 */
#include <math.h>
#include "cpu_internal.h"

typedef struct plane_job {
    const wk_op_args *a;
    int64_t C, H, W, Ho, Wo;
    int64_t sn, sc, sh, sw;     /* input strides (sh 0 for 1-d)         */
} plane_job;

static plane_job plane_job_of(const wk_op_args *a, int nsp)
{
    const wk_view *x = a->src[0], *d = a->dst;
    plane_job J = { a, x->dims[1], nsp == 2 ? x->dims[2] : 1, x->dims[nsp + 1], nsp == 2 ? d->dims[2] : 1,
                    d->dims[nsp + 1], x->strides[0], x->strides[1], nsp == 2 ? x->strides[2] : 0,
                    x->strides[nsp + 1] };
    return J;
}

/* ---- pools --------------------------------------------------------------- */

static void pool_planes(void *arg, int64_t p0, int64_t p1)
{
    const plane_job *J = arg;
    const wk_op_args *a = J->a;
    const wk_pool_params *P = a->params;
    const wk_view *x = a->src[0], *d = a->dst, *iv = a->src[1];
    const bool mx = a->op == WK_OP_MAX_POOL2D;
    for (int64_t pl = p0; pl < p1; pl++) {
        int64_t n = pl / J->C, c = pl % J->C;
        int64_t xo = x->offset + n * J->sn + c * J->sc, oo = pl * J->Ho * J->Wo;
        for (int64_t oh = 0; oh < J->Ho; oh++)
            for (int64_t ow = 0; ow < J->Wo; ow++) {
                int64_t hs = oh * P->stride[0] - P->padding[0], ws = ow * P->stride[1] - P->padding[1];
                int64_t he = hs + P->kernel[0], we = ws + P->kernel[1];
                int64_t o = oo + oh * J->Wo + ow;
                if (!mx) {
                    /* the divisor counts the padded window, clipped to x plus its padding */
                    int64_t phe = he < J->H + P->padding[0] ? he : J->H + P->padding[0];
                    int64_t pwe = we < J->W + P->padding[1] ? we : J->W + P->padding[1];
                    int64_t pool = (phe - hs) * (pwe - ws);
                    int64_t h0 = hs < 0 ? 0 : hs, w0 = ws < 0 ? 0 : ws;
                    int64_t h1 = he < J->H ? he : J->H, w1 = we < J->W ? we : J->W;
                    double s = 0;
                    for (int64_t h = h0; h < h1; h++)
                        for (int64_t w = w0; w < w1; w++)
                            s += wk_cpu_load_f64(x->base, x->dtype, xo + h * J->sh + w * J->sw);
                    int64_t div = P->count_include_pad ? pool : (h1 - h0) * (w1 - w0);
                    wk_cpu_store_f64(d->base, d->dtype, d->offset + o, div > 0 ? s / (double)div : NAN);
                } else {
                    int64_t h0 = hs < 0 ? 0 : hs, w0 = ws < 0 ? 0 : ws;
                    int64_t h1 = he < J->H ? he : J->H, w1 = we < J->W ? we : J->W;
                    double m = -INFINITY;
                    int64_t mi = h0 * J->W + w0;
                    for (int64_t h = h0; h < h1; h++)
                        for (int64_t w = w0; w < w1; w++) {
                            double v = wk_cpu_load_f64(x->base, x->dtype, xo + h * J->sh + w * J->sw);
                            if (v > m || isnan(v)) {
                                m = v;
                                mi = h * J->W + w;
                            }
                        }
                    wk_cpu_store_f64(d->base, d->dtype, d->offset + o, m);
                    if (iv) ((uint32_t *)iv->base)[iv->offset + o] = (uint32_t)mi;
                }
            }
    }
}

wk_status wk_cpu_pool(void *ctx, const wk_op_args *a)
{
    (void)ctx;
    plane_job J = plane_job_of(a, 2);
    const wk_pool_params *P = a->params;
    int64_t planes = a->dst->dims[0] * J.C;
    /* the work per plane: its windows, clipped to x (a kernel may be far larger) */
    const double kh = (double)(P->kernel[0] < J.H ? P->kernel[0] : J.H), kw = (double)(P->kernel[1] < J.W ? P->kernel[1] : J.W);
    wk_parallel_tasks(planes, (double)J.Ho * (double)J.Wo * kh * kw, pool_planes, &J);
    return WK_OK;
}

/* ---- upsampling -------------------------------------------------------------- */

/* PyTorch's compute_scales_value in f32 (nearest) */
static float nearest_scale(double user, int64_t in, int64_t out)
{
    return user > 0 ? (float)(1.0 / user) : (float)in / (float)out;
}

static int64_t nearest_src(float scale, int64_t o, int64_t in, int64_t out)
{
    if (out == in) return o;
    if (out == 2 * in) return o >> 1;
    int64_t i = (int64_t)floorf((float)o * scale);
    return i < in - 1 ? i : in - 1;
}

/* source index, its neighbour and the neighbour's weight for output o of
 * a bilinear dim (area_pixel_compute_source_index), in T */
#define BILIN_SRC(T)                                                                        \
    static void bilin_src_##T(T scale, bool align, int64_t o, int64_t in, int64_t *i0, int64_t *i1, T *l1) \
    {                                                                                               \
        T r;                                                                                        \
        if (align) r = scale * (T)o;                                                                \
        else {                                                                                      \
            r = scale * ((T)o + (T)0.5) - (T)0.5;                                                   \
            if (r < 0) r = 0;                                                                       \
        }                                                                                           \
        int64_t i = (int64_t)r;                                                                     \
        if (i > in - 1) i = in - 1;                                                                 \
        *i0 = i;                                                                                    \
        *i1 = i + (i < in - 1 ? 1 : 0);                                                             \
        *l1 = r - (T)i;                                                                             \
    }
BILIN_SRC(float)
BILIN_SRC(double)

static double bilin_scale(double user, bool align, int64_t in, int64_t out, bool f64)
{
    if (align) return out > 1 ? (f64 ? (double)(in - 1) / (double)(out - 1) : (double)((float)(in - 1) / (float)(out - 1))) : 0;
    if (user > 0) return f64 ? 1.0 / user : (double)(float)(1.0 / user);
    return f64 ? (double)in / (double)out : (double)((float)in / (float)out);
}

static void upsample_planes(void *arg, int64_t p0, int64_t p1)
{
    const plane_job *J = arg;
    const wk_op_args *a = J->a;
    const wk_view *x = a->src[0], *d = a->dst;
    const bool bil = a->op == WK_OP_UPSAMPLE_BILINEAR2D, align = a->p[2] != 0, f64 = x->dtype == WK_F64;
    const bool one = a->op == WK_OP_UPSAMPLE_NEAREST1D;
    for (int64_t pl = p0; pl < p1; pl++) {
        int64_t n = pl / J->C, c = pl % J->C;
        int64_t xo = x->offset + n * J->sn + c * J->sc, oo = d->offset + pl * J->Ho * J->Wo;
        if (!bil) {
            float sh = one ? 0 : nearest_scale(a->p[0], J->H, J->Ho), sw = nearest_scale(a->p[1], J->W, J->Wo);
            for (int64_t oh = 0; oh < J->Ho; oh++) {
                int64_t ih = one ? 0 : nearest_src(sh, oh, J->H, J->Ho);
                for (int64_t ow = 0; ow < J->Wo; ow++) {
                    int64_t iw = nearest_src(sw, ow, J->W, J->Wo);
                    double v = wk_cpu_load_f64(x->base, x->dtype, xo + ih * J->sh + iw * J->sw);
                    wk_cpu_store_f64(d->base, d->dtype, oo + oh * J->Wo + ow, v);
                }
            }
            continue;
        }
        double sh = bilin_scale(a->p[0], align, J->H, J->Ho, f64), sw = bilin_scale(a->p[1], align, J->W, J->Wo, f64);
        for (int64_t oh = 0; oh < J->Ho; oh++) {
            int64_t h0, h1, w0, w1;
            if (f64) {
                double l1;
                bilin_src_double(sh, align, oh, J->H, &h0, &h1, &l1);
                double l0 = 1 - l1;
                for (int64_t ow = 0; ow < J->Wo; ow++) {
                    double m1;
                    bilin_src_double(sw, align, ow, J->W, &w0, &w1, &m1);
                    double m0 = 1 - m1;
                    const double *xb = (const double *)x->base + xo;
                    double v = l0 * (m0 * xb[h0 * J->sh + w0 * J->sw] + m1 * xb[h0 * J->sh + w1 * J->sw]) +
                               l1 * (m0 * xb[h1 * J->sh + w0 * J->sw] + m1 * xb[h1 * J->sh + w1 * J->sw]);
                    ((double *)d->base)[oo + oh * J->Wo + ow] = v;
                }
            } else {
                float l1;
                bilin_src_float((float)sh, align, oh, J->H, &h0, &h1, &l1);
                float l0 = 1 - l1;
                for (int64_t ow = 0; ow < J->Wo; ow++) {
                    float m1;
                    bilin_src_float((float)sw, align, ow, J->W, &w0, &w1, &m1);
                    float m0 = 1 - m1;
                    float v00 = (float)wk_cpu_load_f64(x->base, x->dtype, xo + h0 * J->sh + w0 * J->sw);
                    float v01 = (float)wk_cpu_load_f64(x->base, x->dtype, xo + h0 * J->sh + w1 * J->sw);
                    float v10 = (float)wk_cpu_load_f64(x->base, x->dtype, xo + h1 * J->sh + w0 * J->sw);
                    float v11 = (float)wk_cpu_load_f64(x->base, x->dtype, xo + h1 * J->sh + w1 * J->sw);
                    float v = l0 * (m0 * v00 + m1 * v01) + l1 * (m0 * v10 + m1 * v11);
                    wk_cpu_store_f64(d->base, d->dtype, oo + oh * J->Wo + ow, v);
                }
            }
        }
    }
}

wk_status wk_cpu_upsample(void *ctx, const wk_op_args *a)
{
    (void)ctx;
    int nsp = a->op == WK_OP_UPSAMPLE_NEAREST1D ? 1 : 2;
    plane_job J = plane_job_of(a, nsp);
    int64_t planes = a->dst->dims[0] * J.C;
    wk_parallel_tasks(planes, (double)(J.Ho * J.Wo) * 4, upsample_planes, &J);
    return WK_OK;
}
