/* ops_reduce.c — front-end of the reductions: sum, min, max, argmin,
 * argmax over any set of dims, and mean. */
#include <string.h>
#include "core.h"

/* Drops size-1 dims and merges neighbours of one class (reduced or kept)
 * that are contiguous in src; fills the backend's src and dst views. */
static uint32_t reduce_views(const wk_tensor *t, uint32_t mask, const wk_tensor *out, wk_view *vs, wk_view *vd)
{
    int64_t dims[WK_MAX_RANK], strides[WK_MAX_RANK];
    bool red[WK_MAX_RANK];
    int r = 0;
    for (int d = 0; d < t->rank; d++) {
        if (t->dims[d] == 1) continue;
        bool rd = (mask >> d) & 1;
        if (r > 0 && red[r - 1] == rd && strides[r - 1] == t->strides[d] * t->dims[d]) {
            dims[r - 1] *= t->dims[d];
            strides[r - 1] = t->strides[d];
        } else {
            dims[r] = t->dims[d];
            strides[r] = t->strides[d];
            red[r++] = rd;
        }
    }
    *vs = wk_view_of(t);
    *vd = wk_view_of(out);
    vs->rank = vd->rank = r;
    uint32_t m = 0;
    for (int d = 0; d < WK_MAX_RANK; d++) {
        vs->dims[d] = d < r ? dims[d] : 0;
        vs->strides[d] = d < r ? strides[d] : 0;
        vd->dims[d] = d < r ? (red[d] ? 1 : dims[d]) : 0;
        if (d < r && red[d]) m |= 1u << d;
    }
    wk_contiguous_strides(r, vd->dims, vd->strides);
    return m;
}

static wk_tensor *reduce_impl(wk_op op, const wk_tensor *t, const int *dims, int ndims, bool keepdim)
{
    if (!WK_CHECK_T(t)) return NULL;
    uint32_t mask = 0;
    if (!dims) {
        mask = t->rank ? (1u << t->rank) - 1 : 0;
    } else {
        if (ndims < 0 || ndims > t->rank) {
            wk_error(WK_ERR_ARGUMENT, "%d dims given for a rank-%d tensor", ndims, t->rank);
            return NULL;
        }
        for (int i = 0; i < ndims; i++) {
            int d = wk_norm_dim(dims[i], t->rank);
            if (d < 0) return NULL;
            if (mask & (1u << d)) {
                wk_error(WK_ERR_ARGUMENT, "dim %d is listed twice", dims[i]);
                return NULL;
            }
            mask |= 1u << d;
        }
    }
    wk_device *dev = t->st->dev;
    if (!wk_check_supported(dev, op, t->dtype)) return NULL;
    int64_t odims[WK_MAX_RANK], extent = 1;
    for (int d = 0; d < t->rank; d++) {
        odims[d] = (mask >> d) & 1 ? 1 : t->dims[d];
        if ((mask >> d) & 1) extent *= t->dims[d];
    }
    bool arg = op == WK_OP_ARGMIN || op == WK_OP_ARGMAX;
    int64_t on = wk_numel(t->rank, odims);
    if (extent == 0 && on > 0 && op != WK_OP_SUM) {
        wk_error(WK_ERR_SHAPE, "cannot take %s over an empty extent", wk_op_name(op));
        return NULL;
    }
    if (arg && extent > (int64_t)UINT32_MAX) {
        wk_error(WK_ERR_SHAPE, "reduced extent %lld does not fit u32 indices", (long long)extent);
        return NULL;
    }
    wk_tensor *out = wk_tensor_alloc(dev, arg ? WK_U32 : t->dtype, t->rank, odims);
    if (!out) return NULL;
    wk_status st = WK_OK;
    if (on > 0) {
        if (extent == 0) {
            st = wk_fill_zero(out);
        } else {
            wk_view vs, vd;
            wk_op_args a = { .op = op, .dst = &vd, .src = { &vs } };
            a.dim_mask = reduce_views(t, mask, out, &vs, &vd);
            st = wk_run(dev, &a);
        }
    }
    if (st == WK_OK) WK_FAULT(op, out);
    if (st == WK_OK && !keepdim && mask) {
        int64_t kd[WK_MAX_RANK], ks[WK_MAX_RANK];
        int r = 0;
        for (int d = 0; d < t->rank; d++)
            if (!((mask >> d) & 1)) kd[r++] = t->dims[d];
        wk_contiguous_strides(r, kd, ks);
        wk_tensor *v = wk_tensor_view(out, r, kd, ks, 0);
        wk_release(out);
        return v;
    }
    return wk_finish(st, out);
}

wk_tensor *wk_reduce(wk_reduce_op op, const wk_tensor *t, const int *dims, int ndims, bool keepdim)
{
    if ((unsigned)op >= WK_REDUCE_COUNT) {
        wk_error(WK_ERR_ARGUMENT, "reduce: invalid op %d", (int)op);
        return NULL;
    }
    wk_op o = wk_op_of_reduce(op);
    WK_ENTER(wk_op_name(o));
    wk_tensor *r = reduce_impl(o, t, dims, ndims, keepdim);
    WK_LEAVE();
    return r;
}

wk_tensor *wk_sum(const wk_tensor *t, const int *dims, int ndims, bool keepdim) { return wk_reduce(WK_SUM, t, dims, ndims, keepdim); }
wk_tensor *wk_max(const wk_tensor *t, const int *dims, int ndims, bool keepdim) { return wk_reduce(WK_MAX, t, dims, ndims, keepdim); }
wk_tensor *wk_min(const wk_tensor *t, const int *dims, int ndims, bool keepdim) { return wk_reduce(WK_MIN, t, dims, ndims, keepdim); }
wk_tensor *wk_argmax(const wk_tensor *t, int dim, bool keepdim) { return wk_reduce(WK_ARGMAX, t, &dim, 1, keepdim); }
wk_tensor *wk_argmin(const wk_tensor *t, int dim, bool keepdim) { return wk_reduce(WK_ARGMIN, t, &dim, 1, keepdim); }

wk_tensor *wk_mean(const wk_tensor *t, const int *dims, int ndims, bool keepdim)
{
    WK_ENTER("mean");
    wk_tensor *r = NULL;
    if (WK_CHECK_T(t)) {
        if (!wk_dtype_is_float(t->dtype)) {
            wk_error(WK_ERR_DTYPE, "mean needs a float dtype, not %s", wk_dtype_name(t->dtype));
        } else {
            /* narrow floats: sum and divide in f32, round once at the end */
            bool narrow = t->dtype != WK_F32 && t->dtype != WK_F64;
            wk_tensor *wide = narrow ? wk_to_dtype(t, WK_F32) : NULL;
            wk_tensor *s = (!narrow || wide) ? reduce_impl(WK_OP_SUM, narrow ? wide : t, dims, ndims, keepdim) : NULL;
            if (s) {
                int64_t n = wk_numel(t->rank, t->dims), m = wk_numel(s->rank, s->dims);
                double count = m ? (double)n / (double)m : 0.0;
                wk_tensor *q = wk_affine(s, count > 0 ? 1.0 / count : 0.0 / 0.0, 0.0);
                r = narrow && q ? wk_to_dtype(q, t->dtype) : wk_retain(q);
                wk_release(q);
                wk_release(s);
            }
            wk_release(wide);
        }
    }
    WK_LEAVE();
    return r;
}

