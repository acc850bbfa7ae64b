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
        /* every step checked: options near 2^63 must be an error, not a wrapped size */
        int64_t ext, out = 0, t;
        bool over = __builtin_mul_overflow(P.dilation[i], k - 1, &ext) || __builtin_add_overflow(ext, 1, &ext);
        if (!transposed) {   /* (in + 2p - ext) / s + 1 */
            over = over || __builtin_mul_overflow(P.padding[i], 2, &t) || __builtin_add_overflow(in, t, &t);
            if (!over) out = t - ext < 0 ? 0 : (t - ext) / P.stride[i] + 1;
        } else if (in >= 1) {   /* (in - 1) s - 2p + ext + output_padding */
            int64_t p2;
            over = over || __builtin_mul_overflow(in - 1, P.stride[i], &t) ||
                   __builtin_mul_overflow(P.padding[i], 2, &p2) || __builtin_sub_overflow(t, p2, &t) ||
                   __builtin_add_overflow(t, ext, &t) || __builtin_add_overflow(t, P.output_padding[i], &out);
        }
        if (over) {
            wk_error(WK_ERR_SHAPE,
                     "the output's %s size overflows 64 bits (input %lld, kernel %lld, stride %lld, padding %lld, "
                     "dilation %lld, output_padding %lld)",
                     dn[i], (long long)in, (long long)k, (long long)P.stride[i], (long long)P.padding[i],
                     (long long)P.dilation[i], (long long)P.output_padding[i]);
            return NULL;
        }
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
        /* p <= k / 2: in + 2p - k <= in cannot overflow; the rounding term can.
         * out = floor or ceil of (in + 2p - k) / s, plus one */
        const int64_t num = in + (2 * p - k);
        int64_t out = num < 0 ? -(-num / s) : num / s;   /* toward zero */
        if (num < 0 && !o->ceil_mode && -num % s) out--;     /* floor */
        if (num > 0 && o->ceil_mode && num % s) out++;       /* ceil */
        out++;
        /* ceil_mode: the last window must start inside x or its left
         * padding, (out - 1) s < in + p */
        int64_t m;
        const bool mbig = __builtin_add_overflow(in, p, &m);
        if (o->ceil_mode && out > 0 && !mbig && (m <= 0 || out - 1 > (m - 1) / s)) out--;
        if (out < 1) {
            wk_error(WK_ERR_SHAPE, "the output's %s size would be %lld (input %lld, kernel %lld, stride %lld, padding %lld): too small",
                     dn[i], (long long)out, (long long)in, (long long)k, (long long)s, (long long)p);
            return NULL;
        }
        int64_t e;
        if (__builtin_add_overflow(in, p, &e) || __builtin_add_overflow(e, k, &e)) {
            wk_error(WK_ERR_SHAPE, "input %lld, padding %lld and kernel %lld on %s overflow 64 bits", (long long)in,
                     (long long)p, (long long)k, dn[i]);
            return NULL;
        }
        P.kernel[i] = k;
        P.stride[i] = s;
        P.padding[i] = p;
        od[2 + i] = out;
    }
    int64_t cells;   /* the window's cells, avg's divisor */
    if (__builtin_mul_overflow(P.kernel[0], P.kernel[1], &cells)) {
        wk_error(WK_ERR_SHAPE, "a window of %lld x %lld cells overflows 64 bits", (long long)P.kernel[0],
                 (long long)P.kernel[1]);
        return NULL;
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

/* One run of an upsampling op: x to od with the scales as given. */
static wk_tensor *upsample_run(wk_op op, int nsp, const wk_tensor *x, const int64_t *od, bool align, double sh,
                               double sw)
{
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

/* Bilinear without align_corners, a scale given: the first output index
 * whose source position, as the kernels compute it (scale (o + 0.5) - 0.5
 * in f32, f64 for f64), is past the last input cell by one or more. From
 * there on PyTorch clamps the weight to 1 and gives the last cell's value
 * (the output of that dim is constant); the kernels would extrapolate with
 * weights past 1, or convert a position past 2^63 to an integer. out when
 * no position is that far. */
static int64_t bilin_clamp_from(double user, bool f64, int64_t in, int64_t out)
{
    if (!(user > 0)) return out;   /* in / out: every position is inside */
    const double s = f64 ? 1.0 / user : (double)(float)(1.0 / user);
    int64_t lo = 0, hi = out;
    while (lo < hi) {   /* the positions grow with o */
        const int64_t mid = lo + (hi - lo) / 2;
        const double r = f64 ? s * ((double)mid + 0.5) - 0.5 : (double)((float)s * ((float)mid + 0.5f) - 0.5f);
        if (r >= (double)in) hi = mid;
        else lo = mid + 1;
    }
    return lo;
}

/* Bilinear whose source positions pass the input (bilin_clamp_from): the
 * output in up to four blocks. Rows [0, ch) x columns [0, cw) run with the
 * scales as given (every position inside); the rows from ch on are the
 * last input row (x narrowed to it, upsampled to one row with no scale,
 * which is exact, then broadcast), the columns from cw on likewise. */
static wk_tensor *bilinear_clamped(const wk_tensor *x, const int64_t *od, const int64_t *cut, const double *sc)
{
    wk_tensor *out = wk_tensor_alloc(x->st->dev, x->dtype, 4, od);
    if (!out) return NULL;
    wk_status st = WK_OK;
    for (int q = 0; q < 4 && st == WK_OK; q++) {
        const bool qh = q & 2, qw = q & 1;   /* the clamped part of H, of W */
        const int64_t hn = qh ? od[2] - cut[0] : cut[0], wn = qw ? od[3] - cut[1] : cut[1];
        if (hn == 0 || wn == 0 || od[0] == 0 || od[1] == 0) continue;
        int64_t xd[4] = { x->dims[0], x->dims[1], qh ? 1 : x->dims[2], qw ? 1 : x->dims[3] };
        int64_t xoff = x->offset + (qh ? (x->dims[2] - 1) * x->strides[2] : 0) +
                       (qw ? (x->dims[3] - 1) * x->strides[3] : 0);
        wk_tensor *xs = wk_tensor_view(x, 4, xd, x->strides, xoff);
        int64_t pd[4] = { od[0], od[1], qh ? 1 : cut[0], qw ? 1 : cut[1] };
        wk_tensor *part = xs ? upsample_run(WK_OP_UPSAMPLE_BILINEAR2D, 2, xs, pd, false, qh ? 0 : sc[0], qw ? 0 : sc[1])
                             : NULL;
        int64_t rd[4] = { od[0], od[1], hn, wn };
        wk_tensor *region = part ? wk_tensor_view(out, 4, rd, out->strides,
                                                  (qh ? cut[0] * out->strides[2] : 0) + (qw ? cut[1] * out->strides[3] : 0))
                                 : NULL;
        st = region ? wk_copy_raw(region, part) : wk_last_status();
        wk_release(region);
        wk_release(part);
        wk_release(xs);
    }
    return wk_finish(st, out);
}

static wk_tensor *upsample_impl(wk_op op, int nsp, const wk_tensor *x, int64_t oh, int64_t ow, bool align,
                                double sh, double sw)
{
    if (!cv_check_x(x, op, nsp + 2, "x")) return NULL;
    const int64_t want[2] = { oh, ow };
    double sc[2] = { sh, sw };
    static const char *const dn2[2] = { "H", "W" };
    int64_t od[4] = { x->dims[0], x->dims[1], 0, 0 }, cut[2] = { 0, 0 };
    const bool bilinear = op == WK_OP_UPSAMPLE_BILINEAR2D;
    bool clamped = false;
    for (int i = 0; i < nsp; i++) {
        const char *dn = nsp == 1 ? "L" : dn2[i];
        int j = nsp == 1 ? 1 : i;
        const int64_t in = x->dims[2 + i], out = want[j];
        if (out < 1 || in < 1) {
            wk_error(WK_ERR_SHAPE, "input and output sizes must be >= 1, got input %s %lld, output %lld", dn,
                     (long long)in, (long long)out);
            return NULL;
        }
        if (isnan(sc[j]) || isinf(sc[j])) {
            wk_error(WK_ERR_ARGUMENT, "the %s scale must be finite (or <= 0 for none), got %g", dn, sc[j]);
            return NULL;
        }
        /* nearest with a scale reads floor(o * s) with s < 2 in (below):
         * keep that inside int64 */
        if (!bilinear && sc[j] > 0 && (double)out * (double)in >= 0x1p61) {
            wk_error(WK_ERR_SHAPE, "input %s %lld and output %lld are too large together (their product passes 2^61)",
                     dn, (long long)in, (long long)out);
            return NULL;
        }
        od[2 + i] = out;
        if (!bilinear) {
            /* nearest reads min(floor(o * s), in - 1), s = 1 / scale in f32:
             * with s >= in every o > 0 reads in - 1, so any such s gives the
             * same cells; 2 in keeps o * s inside int64 (s from a tiny scale
             * can pass 2^63, or be infinite) */
            if (sc[j] > 0 && !((float)(1.0 / sc[j]) < (float)in)) sc[j] = 1.0 / (2.0 * (double)in);
        } else if (!align) {
            if (out == in) sc[j] = 0;   /* as PyTorch: the same size is a copy, whatever the scale */
            cut[i] = bilin_clamp_from(sc[j], x->dtype == WK_F64, in, out);
            clamped |= cut[i] < out;
        }
    }
    if (clamped) return bilinear_clamped(x, od, cut, sc);
    return upsample_run(op, nsp, x, od, align, sc[0], sc[1]);
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
