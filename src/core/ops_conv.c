/* ops_conv.c — front-ends of the convolutions (conv1d, conv2d and their
 * transposed forms), the 2-d pools (avg, max with indices) and the
 * upsampling ops (nearest 1-d/2-d, bilinear 2-d). Each checks its
 * arguments against PyTorch's rules, computes the output shape and runs
 * the op of its family (backend.h: CONV, POOL, UPSAMPLE) on views of its
 * inputs as they are (any strides). docs/conv.md has the semantics. */
#include <math.h>
#include <string.h>
#include "core.h"

/* x is a float tensor of rank `rank` whose dtype dev implements op for */
static bool cv_check_x(const wk_tensor *x, wk_op op, int rank, const char *what)
{
    if (!WK_CHECK_T(x)) return false;
    if (x->rank != rank) {
        wk_error(WK_ERR_SHAPE, "%s must have rank %d (%s), got rank %d", what, rank,
                 rank == 3 ? "[N, C, L]" : "[N, C, H, W]", x->rank);
        return false;
    }
    return wk_check_supported(x->st->dev, op, x->dtype);
}

/* p is on x's device, of x's dtype */
static bool cv_same(const wk_tensor *x, const wk_tensor *p, const char *name)
{
    const wk_tensor *ts[2] = { x, p };
    const char *const names[2] = { "x", name };
    return wk_check_tensors(2, ts, names) && wk_check_same_dtype(x, p, "x", name);
}

/* ---- convolutions --------------------------------------------------------- */

static wk_tensor *conv_impl(wk_op op, int nsp, bool transposed, const wk_tensor *x, const wk_tensor *w,
                            const wk_tensor *bias, const wk_conv_opts *opts)
{
    static const wk_conv_opts none;
    const wk_conv_opts *o = opts ? opts : &none;
    const char *dn[2] = { nsp == 1 ? "L" : "H", "W" };
    if (!cv_check_x(x, op, nsp + 2, "x") || !cv_same(x, w, "w")) return NULL;
    if (bias && !cv_same(x, bias, "bias")) return NULL;
    if (w->rank != nsp + 2) {
        wk_error(WK_ERR_SHAPE, "w must have rank %d, got rank %d", nsp + 2, w->rank);
        return NULL;
    }
    wk_conv_params P = { .nsp = nsp, .groups = o->groups ? o->groups : 1 };
    if (P.groups < 1) {
        wk_error(WK_ERR_ARGUMENT, "groups must be >= 1, got %lld", (long long)o->groups);
        return NULL;
    }
    for (int i = 0; i < nsp; i++) {
        P.stride[i] = o->stride[i] ? o->stride[i] : 1;
        P.dilation[i] = o->dilation[i] ? o->dilation[i] : 1;
        P.padding[i] = o->padding[i];
        P.output_padding[i] = o->output_padding[i];
        if (P.stride[i] < 1 || P.dilation[i] < 1 || P.padding[i] < 0 || P.output_padding[i] < 0) {
            wk_error(WK_ERR_ARGUMENT,
                     "stride and dilation must be >= 1, padding and output_padding >= 0; got stride %lld, "
                     "dilation %lld, padding %lld, output_padding %lld on %s",
                     (long long)o->stride[i], (long long)o->dilation[i], (long long)P.padding[i],
                     (long long)P.output_padding[i], dn[i]);
            return NULL;
        }
        if (!transposed && P.output_padding[i] != 0) {
            wk_error(WK_ERR_ARGUMENT, "output_padding is for the transposed forms only, got %lld on %s",
                     (long long)P.output_padding[i], dn[i]);
            return NULL;
        }
        if (transposed && P.output_padding[i] >= P.stride[i] && P.output_padding[i] >= P.dilation[i]) {
            wk_error(WK_ERR_ARGUMENT, "output_padding (%lld on %s) must be smaller than stride (%lld) or dilation (%lld)",
                     (long long)P.output_padding[i], dn[i], (long long)P.stride[i], (long long)P.dilation[i]);
            return NULL;
        }
    }
    int64_t N = x->dims[0], Cin = x->dims[1], G = P.groups, Cout;
    if (Cin % G) {
        wk_error(WK_ERR_SHAPE, "groups (%lld) must divide x's channels (%lld)", (long long)G, (long long)Cin);
        return NULL;
    }
    if (!transposed) {
        Cout = w->dims[0];
        if (Cout % G || w->dims[1] != Cin / G) {
            wk_error(WK_ERR_SHAPE, "w is [%lld, %lld, ..]: it must be [Cout, Cin/groups = %lld, ..] with groups (%lld) dividing Cout",
                     (long long)w->dims[0], (long long)w->dims[1], (long long)(Cin / G), (long long)G);
            return NULL;
        }
    } else {
        if (w->dims[0] != Cin) {
            wk_error(WK_ERR_SHAPE, "w is [%lld, %lld, ..]: its first dim must be x's channels (%lld)",
                     (long long)w->dims[0], (long long)w->dims[1], (long long)Cin);
            return NULL;
        }
        Cout = w->dims[1] * G;
    }
    if (bias && (bias->rank != 1 || bias->dims[0] != Cout)) {
        wk_error(WK_ERR_SHAPE, "bias must be 1-d of the output channels (%lld), got rank %d [%lld%s]",
                 (long long)Cout, bias->rank, bias->rank ? (long long)bias->dims[0] : 0LL,
                 bias->rank > 1 ? ", .." : "");
        return NULL;
    }
    int64_t od[4] = { N, Cout, 0, 0 };
    for (int i = 0; i < nsp; i++) {
        int64_t in = x->dims[2 + i], k = w->dims[2 + i];
        if (k < 1) {
            wk_error(WK_ERR_SHAPE, "the kernel's %s size must be >= 1, got %lld", dn[i], (long long)k);
            return NULL;
        }
        int64_t ext = P.dilation[i] * (k - 1) + 1, out;
        if (!transposed) out = (in + 2 * P.padding[i] - ext) < 0 ? 0 : (in + 2 * P.padding[i] - ext) / P.stride[i] + 1;
        else out = (in - 1) * P.stride[i] - 2 * P.padding[i] + ext + P.output_padding[i];
        if (out < 1 || in < 1) {
            wk_error(WK_ERR_SHAPE,
                     "the output's %s size would be %lld (input %lld, kernel %lld, stride %lld, padding %lld, "
                     "dilation %lld): too small",
                     dn[i], (long long)out, (long long)in, (long long)k, (long long)P.stride[i],
                     (long long)P.padding[i], (long long)P.dilation[i]);
            return NULL;
        }
        od[2 + i] = out;
    }
    if (nsp == 1) {   /* the backend sees a 1-d op as 2-d with H = 1: L's options go to index 1 */
        P.stride[1] = P.stride[0], P.dilation[1] = P.dilation[0];
        P.padding[1] = P.padding[0], P.output_padding[1] = P.output_padding[0];
        P.stride[0] = P.dilation[0] = 1;
        P.padding[0] = P.output_padding[0] = 0;
    }
    wk_device *dev = x->st->dev;
    wk_tensor *out = wk_tensor_alloc(dev, x->dtype, nsp + 2, od);
    if (!out) return NULL;
    if (wk_numel(nsp + 2, od) == 0) return out;
    wk_view vd = wk_view_of(out), vx = wk_view_of(x), vw = wk_view_of(w), vb;
    if (bias) vb = wk_view_of(bias);
    wk_op_args a = { .op = op, .dst = &vd, .src = { &vx, &vw, bias ? &vb : NULL }, .params = &P };
    wk_status st = wk_run(dev, &a);
    if (st == WK_OK) WK_FAULT(op, out);
    return wk_finish(st, out);
}

wk_tensor *wk_conv1d(const wk_tensor *x, const wk_tensor *w, const wk_tensor *bias, const wk_conv_opts *opts)
    WK_API(wk_tensor *, "conv1d", conv_impl(WK_OP_CONV1D, 1, false, x, w, bias, opts))
wk_tensor *wk_conv2d(const wk_tensor *x, const wk_tensor *w, const wk_tensor *bias, const wk_conv_opts *opts)
    WK_API(wk_tensor *, "conv2d", conv_impl(WK_OP_CONV2D, 2, false, x, w, bias, opts))
wk_tensor *wk_conv_transpose1d(const wk_tensor *x, const wk_tensor *w, const wk_tensor *bias,
                               const wk_conv_opts *opts)
    WK_API(wk_tensor *, "conv_transpose1d", conv_impl(WK_OP_CONV_TRANSPOSE1D, 1, true, x, w, bias, opts))
wk_tensor *wk_conv_transpose2d(const wk_tensor *x, const wk_tensor *w, const wk_tensor *bias,
                               const wk_conv_opts *opts)
    WK_API(wk_tensor *, "conv_transpose2d", conv_impl(WK_OP_CONV_TRANSPOSE2D, 2, true, x, w, bias, opts))

/* ---- pools ------------------------------------------------------------------ */

static wk_tensor *pool_impl(wk_op op, const wk_tensor *x, const wk_pool_opts *o, wk_tensor **indices)
{
    if (indices) *indices = NULL;
    if (!cv_check_x(x, op, 4, "x")) return NULL;
    if (!o) {
        wk_error(WK_ERR_ARGUMENT, "opts is NULL (the kernel size is needed)");
        return NULL;
    }
    static const char *const dn[2] = { "H", "W" };
    wk_pool_params P = { .count_include_pad = !o->exclude_pad };
    int64_t od[4] = { x->dims[0], x->dims[1], 0, 0 };
    for (int i = 0; i < 2; i++) {
        int64_t k = o->kernel[i], s = o->stride[i] ? o->stride[i] : k, p = o->padding[i], in = x->dims[2 + i];
        if (k < 1 || s < 1 || p < 0) {
            wk_error(WK_ERR_ARGUMENT, "kernel and stride must be >= 1 and padding >= 0; got kernel %lld, stride %lld, padding %lld on %s",
                     (long long)k, (long long)o->stride[i], (long long)p, dn[i]);
            return NULL;
        }
        if (p > k / 2) {
            wk_error(WK_ERR_ARGUMENT, "padding (%lld on %s) must be at most half the kernel (%lld)", (long long)p,
                     dn[i], (long long)k);
            return NULL;
        }
        int64_t num = in + 2 * p - k + (o->ceil_mode ? s - 1 : 0);
        int64_t out = num < 0 ? -((-num + s - 1) / s) + 1 : num / s + 1;
        if (o->ceil_mode && out > 0 && (out - 1) * s >= in + p) out--;
        if (out < 1) {
            wk_error(WK_ERR_SHAPE, "the output's %s size would be %lld (input %lld, kernel %lld, stride %lld, padding %lld): too small",
                     dn[i], (long long)out, (long long)in, (long long)k, (long long)s, (long long)p);
            return NULL;
        }
        P.kernel[i] = k;
        P.stride[i] = s;
        P.padding[i] = p;
        od[2 + i] = out;
    }
    wk_device *dev = x->st->dev;
    wk_tensor *out = wk_tensor_alloc(dev, x->dtype, 4, od), *idx = NULL;
    if (!out) return NULL;
    if (indices && !(idx = wk_tensor_alloc(dev, WK_U32, 4, od))) return wk_finish(WK_ERR_MEMORY, out);
    wk_status st = WK_OK;
    if (wk_numel(4, od) > 0) {
        wk_view vd = wk_view_of(out), vx = wk_view_of(x), vi;
        if (idx) vi = wk_view_of(idx);
        wk_op_args a = { .op = op, .dst = &vd, .src = { &vx, idx ? &vi : NULL }, .params = &P };
        st = wk_run(dev, &a);
    }
    if (st != WK_OK) {
        wk_release(idx);
        return wk_finish(st, out);
    }
    WK_FAULT(op, out);
    if (indices) *indices = idx;
    return wk_finish(st, out);
}

wk_tensor *wk_avg_pool2d(const wk_tensor *x, const wk_pool_opts *opts)
    WK_API(wk_tensor *, "avg_pool2d", pool_impl(WK_OP_AVG_POOL2D, x, opts, NULL))
wk_tensor *wk_max_pool2d(const wk_tensor *x, const wk_pool_opts *opts, wk_tensor **indices)
    WK_API(wk_tensor *, "max_pool2d", pool_impl(WK_OP_MAX_POOL2D, x, opts, indices))

/* ---- upsampling ----------------------------------------------------------- */

static wk_tensor *upsample_impl(wk_op op, int nsp, const wk_tensor *x, int64_t oh, int64_t ow, bool align,
                                double sh, double sw)
{
    if (!cv_check_x(x, op, nsp + 2, "x")) return NULL;
    const int64_t want[2] = { oh, ow };
    const double sc[2] = { sh, sw };
    static const char *const dn2[2] = { "H", "W" };
    int64_t od[4] = { x->dims[0], x->dims[1], 0, 0 };
    for (int i = 0; i < nsp; i++) {
        const char *dn = nsp == 1 ? "L" : dn2[i];
        int j = nsp == 1 ? 1 : i;
        if (want[j] < 1 || x->dims[2 + i] < 1) {
            wk_error(WK_ERR_SHAPE, "input and output sizes must be >= 1, got input %s %lld, output %lld", dn,
                     (long long)x->dims[2 + i], (long long)want[j]);
            return NULL;
        }
        if (isnan(sc[j]) || isinf(sc[j])) {
            wk_error(WK_ERR_ARGUMENT, "the %s scale must be finite (or <= 0 for none), got %g", dn, sc[j]);
            return NULL;
        }
        od[2 + i] = want[j];
    }
    wk_device *dev = x->st->dev;
    wk_tensor *out = wk_tensor_alloc(dev, x->dtype, nsp + 2, od);
    if (!out) return NULL;
    if (wk_numel(nsp + 2, od) == 0) return out;
    wk_view vd = wk_view_of(out), vx = wk_view_of(x);
    wk_op_args a = { .op = op, .dst = &vd, .src = { &vx }, .p = { sh, sw, align ? 1.0 : 0.0 } };
    wk_status st = wk_run(dev, &a);
    if (st == WK_OK) WK_FAULT(op, out);
    return wk_finish(st, out);
}

wk_tensor *wk_upsample_nearest1d(const wk_tensor *x, int64_t out_l, double scale)
    WK_API(wk_tensor *, "upsample_nearest1d", upsample_impl(WK_OP_UPSAMPLE_NEAREST1D, 1, x, 0, out_l, false, 0, scale))
wk_tensor *wk_upsample_nearest2d(const wk_tensor *x, int64_t out_h, int64_t out_w, double scale_h, double scale_w)
    WK_API(wk_tensor *, "upsample_nearest2d",
           upsample_impl(WK_OP_UPSAMPLE_NEAREST2D, 2, x, out_h, out_w, false, scale_h, scale_w))
wk_tensor *wk_upsample_bilinear2d(const wk_tensor *x, int64_t out_h, int64_t out_w, bool align_corners,
                                  double scale_h, double scale_w)
    WK_API(wk_tensor *, "upsample_bilinear2d",
           upsample_impl(WK_OP_UPSAMPLE_BILINEAR2D, 2, x, out_h, out_w, align_corners, scale_h, scale_w))
