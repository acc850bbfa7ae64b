/* ops_elementwise.c — front-end of the elementwise ops: unary (and affine,
 * powf, elu), binary with broadcasting, comparisons, where; creation fills
 * (zeros, ones, full, arange); in-place const_set, copy_into, copy2d.
 * Each op: validate, compute the output shape, allocate, express inputs
 * as views broadcast to the output's dims, coalesce, call the backend. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "core.h"

wk_tensor *wk_finish(wk_status st, wk_tensor *out)
{
    if (st != WK_OK) {
        wk_release(out);
        return NULL;
    }
    return out;
}

bool wk_check_tensors(int n, const wk_tensor *const *ts, const char *const *names)
{
    for (int i = 0; i < n; i++) {
        if (!ts[i]) {
            wk_error(WK_ERR_ARGUMENT, "%s is NULL", names[i]);
            return false;
        }
    }
    for (int i = 1; i < n; i++) {
        if (ts[i]->st->dev != ts[0]->st->dev) {
            wk_error(WK_ERR_DEVICE, "%s is on %s but %s is on %s", names[0], ts[0]->st->dev->name,
                     names[i], ts[i]->st->dev->name);
            return false;
        }
    }
    return true;
}

#ifdef WK_FAULT_INJECT
void wk_fault_perturb(wk_op op, wk_tensor *out)
{
    if (op != WK_FAULT_INJECT || !out || !wk_dtype_is_float(out->dtype)) return;
    wk_view v = wk_view_of(out);
    wk_device *dev = out->st->dev;
    if (wk_numel(out->rank, out->dims) > 0) dev->be->unary(dev->ctx, WK_OP_AFFINE, &v, &v, 1.001, 0.0);
}
#endif

/* ---- output layout -------------------------------------------------------- */

/* An elementwise result whose inputs are all laid out densely in one
 * order other than row-major (a transposed or permuted tensor, with no
 * broadcast) takes that layout too, as in PyTorch: the op then streams
 * through memory instead of transposing. out is fresh (row-major) with
 * the inputs' dims; b may be NULL. */
static void keep_dense_layout(wk_tensor *out, const wk_tensor *a, const wk_tensor *b)
{
    int64_t st[WK_MAX_RANK];
    if (a->rank != out->rank || memcmp(a->dims, out->dims, (size_t)out->rank * sizeof(int64_t)) != 0) return;
    if (!wk_layout_dense_permuted(a->rank, a->dims, a->strides, st)) return;
    if (b && (b->rank != a->rank || memcmp(b->dims, a->dims, (size_t)a->rank * sizeof(int64_t)) != 0 ||
              memcmp(b->strides, a->strides, (size_t)a->rank * sizeof(int64_t)) != 0))
        return;
    memcpy(out->strides, st, (size_t)out->rank * sizeof(int64_t));
}

/* ---- unary -------------------------------------------------------------- */

static wk_tensor *unary_impl(wk_op op, const wk_tensor *t, double p0, double p1)
{
    if (!WK_CHECK_T(t)) return NULL;
    wk_device *dev = t->st->dev;
    if (!wk_check_supported(dev, op, t->dtype)) return NULL;
    wk_tensor *out = wk_tensor_alloc(dev, t->dtype, t->rank, t->dims);
    if (!out) return NULL;
    keep_dense_layout(out, t, NULL);
    wk_status st = WK_OK;
    if (wk_numel(t->rank, t->dims) > 0) {
        wk_view d = wk_view_of(out), s = wk_view_of(t);
        wk_view *vs[2] = { &d, &s };
        wk_views_coalesce(2, vs);
        st = dev->be->unary(dev->ctx, op, &d, &s, p0, p1);
    }
    if (st == WK_OK) WK_FAULT(op, out);
    return wk_finish(st, out);
}

static wk_tensor *unary_entry(wk_op op, const wk_tensor *t, double p0, double p1)
{
    WK_ENTER(wk_op_name(op));
    wk_tensor *r = unary_impl(op, t, p0, p1);
    WK_LEAVE();
    return r;
}

wk_tensor *wk_unary(wk_unary_op op, const wk_tensor *t)
{
    if ((unsigned)op >= WK_UNARY_COUNT) {
        wk_error(WK_ERR_ARGUMENT, "unary: invalid op %d", (int)op);
        return NULL;
    }
    return unary_entry((wk_op)(WK_OP_UNARY_FIRST + op), t, 0, 0);
}

#define UNARY_FN(name, OP) \
    wk_tensor *wk_##name(const wk_tensor *t) { return unary_entry(OP, t, 0, 0); }
UNARY_FN(exp, WK_OP_EXP)
UNARY_FN(log, WK_OP_LOG)
UNARY_FN(sin, WK_OP_SIN)
UNARY_FN(cos, WK_OP_COS)
UNARY_FN(tanh, WK_OP_TANH)
UNARY_FN(abs, WK_OP_ABS)
UNARY_FN(neg, WK_OP_NEG)
UNARY_FN(recip, WK_OP_RECIP)
UNARY_FN(sqr, WK_OP_SQR)
UNARY_FN(sqrt, WK_OP_SQRT)
UNARY_FN(gelu, WK_OP_GELU)
UNARY_FN(gelu_erf, WK_OP_GELU_ERF)
UNARY_FN(erf, WK_OP_ERF)
UNARY_FN(relu, WK_OP_RELU)
UNARY_FN(silu, WK_OP_SILU)
UNARY_FN(floor, WK_OP_FLOOR)
UNARY_FN(ceil, WK_OP_CEIL)
UNARY_FN(round, WK_OP_ROUND)
UNARY_FN(sign, WK_OP_SIGN)

wk_tensor *wk_affine(const wk_tensor *t, double mul, double add) { return unary_entry(WK_OP_AFFINE, t, mul, add); }
wk_tensor *wk_powf(const wk_tensor *t, double e) { return unary_entry(WK_OP_POWF, t, e, 0); }
wk_tensor *wk_elu(const wk_tensor *t, double alpha) { return unary_entry(WK_OP_ELU, t, alpha, 0); }

/* ---- binary and cmp --------------------------------------------------------- */

static wk_tensor *binary_impl(wk_op op, const wk_tensor *a, const wk_tensor *b)
{
    const wk_tensor *ts[2] = { a, b };
    static const char *const names[2] = { "a", "b" };
    if (!wk_check_tensors(2, ts, names)) return NULL;
    if (a->dtype != b->dtype) {
        wk_error(WK_ERR_DTYPE, "dtypes differ: a is %s, b is %s", wk_dtype_name(a->dtype), wk_dtype_name(b->dtype));
        return NULL;
    }
    wk_device *dev = a->st->dev;
    if (!wk_check_supported(dev, op, a->dtype)) return NULL;
    int rank;
    int64_t dims[WK_MAX_RANK];
    if (!wk_broadcast_shapes(a->rank, a->dims, b->rank, b->dims, &rank, dims)) return NULL;
    bool cmp = op >= WK_OP_EQ && op <= WK_OP_GE;
    wk_tensor *out = wk_tensor_alloc(dev, cmp ? WK_U8 : a->dtype, rank, dims);
    if (!out) return NULL;
    keep_dense_layout(out, a, b);
    wk_status st = WK_OK;
    if (wk_numel(rank, dims) > 0) {
        wk_view d = wk_view_of(out), va = wk_view_of(a), vb = wk_view_of(b);
        va.rank = vb.rank = rank;
        memcpy(va.dims, dims, sizeof va.dims);
        memcpy(vb.dims, dims, sizeof vb.dims);
        wk_broadcast_strides(a, rank, dims, va.strides);
        wk_broadcast_strides(b, rank, dims, vb.strides);
        wk_view *vs[3] = { &d, &va, &vb };
        wk_views_coalesce(3, vs);
        st = dev->be->binary(dev->ctx, op, &d, &va, &vb);
    }
    if (st == WK_OK) WK_FAULT(op, out);
    return wk_finish(st, out);
}

static wk_tensor *binary_entry(wk_op op, const wk_tensor *a, const wk_tensor *b)
{
    WK_ENTER(wk_op_name(op));
    wk_tensor *r = binary_impl(op, a, b);
    WK_LEAVE();
    return r;
}

wk_tensor *wk_binary(wk_binary_op op, const wk_tensor *a, const wk_tensor *b)
{
    if ((unsigned)op >= WK_BINARY_COUNT) {
        wk_error(WK_ERR_ARGUMENT, "binary: invalid op %d", (int)op);
        return NULL;
    }
    return binary_entry((wk_op)(WK_OP_BINARY_FIRST + op), a, b);
}

wk_tensor *wk_cmp(wk_cmp_op op, const wk_tensor *a, const wk_tensor *b)
{
    if ((unsigned)op >= WK_CMP_COUNT) {
        wk_error(WK_ERR_ARGUMENT, "cmp: invalid op %d", (int)op);
        return NULL;
    }
    return binary_entry((wk_op)(WK_OP_CMP_FIRST + op), a, b);
}

wk_tensor *wk_add(const wk_tensor *a, const wk_tensor *b) { return binary_entry(WK_OP_ADD, a, b); }
wk_tensor *wk_sub(const wk_tensor *a, const wk_tensor *b) { return binary_entry(WK_OP_SUB, a, b); }
wk_tensor *wk_mul(const wk_tensor *a, const wk_tensor *b) { return binary_entry(WK_OP_MUL, a, b); }
wk_tensor *wk_div(const wk_tensor *a, const wk_tensor *b) { return binary_entry(WK_OP_DIV, a, b); }
wk_tensor *wk_minimum(const wk_tensor *a, const wk_tensor *b) { return binary_entry(WK_OP_MINIMUM, a, b); }
wk_tensor *wk_maximum(const wk_tensor *a, const wk_tensor *b) { return binary_entry(WK_OP_MAXIMUM, a, b); }

/* ---- where ------------------------------------------------------------------- */

static wk_tensor *where_impl(const wk_tensor *cond, const wk_tensor *a, const wk_tensor *b)
{
    const wk_tensor *ts[3] = { cond, a, b };
    static const char *const names[3] = { "cond", "a", "b" };
    if (!wk_check_tensors(3, ts, names)) return NULL;
    if (cond->dtype != WK_U8 && cond->dtype != WK_U32 && cond->dtype != WK_I64) {
        wk_error(WK_ERR_DTYPE, "cond must be u8, u32 or i64, not %s", wk_dtype_name(cond->dtype));
        return NULL;
    }
    if (a->dtype != b->dtype) {
        wk_error(WK_ERR_DTYPE, "dtypes differ: a is %s, b is %s", wk_dtype_name(a->dtype), wk_dtype_name(b->dtype));
        return NULL;
    }
    wk_device *dev = a->st->dev;
    if (!wk_check_supported(dev, WK_OP_WHERE, a->dtype)) return NULL;
    int r1, rank;
    int64_t d1[WK_MAX_RANK], dims[WK_MAX_RANK];
    if (!wk_broadcast_shapes(a->rank, a->dims, b->rank, b->dims, &r1, d1)) return NULL;
    if (!wk_broadcast_shapes(cond->rank, cond->dims, r1, d1, &rank, dims)) return NULL;
    wk_tensor *out = wk_tensor_alloc(dev, a->dtype, rank, dims);
    if (!out) return NULL;
    wk_status st = WK_OK;
    if (wk_numel(rank, dims) > 0) {
        wk_view d = wk_view_of(out), vc = wk_view_of(cond), va = wk_view_of(a), vb = wk_view_of(b);
        wk_view *vs[4] = { &d, &vc, &va, &vb };
        for (int k = 1; k < 4; k++) {
            vs[k]->rank = rank;
            memcpy(vs[k]->dims, dims, sizeof dims);
            wk_broadcast_strides(ts[k - 1], rank, dims, vs[k]->strides);
        }
        wk_views_coalesce(4, vs);
        st = dev->be->where_cond(dev->ctx, &d, &vc, &va, &vb);
    }
    return wk_finish(st, out);
}

wk_tensor *wk_where(const wk_tensor *cond, const wk_tensor *a, const wk_tensor *b)
{
    WK_ENTER("where_cond");
    wk_tensor *r = where_impl(cond, a, b);
    WK_LEAVE();
    return r;
}

/* ---- copies and fills --------------------------------------------------------- */

wk_status wk_copy_raw(wk_tensor *dst, const wk_tensor *src)
{
    if (wk_numel(dst->rank, dst->dims) == 0) return WK_OK;
    wk_device *dev = dst->st->dev;
    if (!wk_check_supported(dev, WK_OP_COPY, src->dtype)) return wk_last_status();
    wk_view d = wk_view_of(dst), s = wk_view_of(src);
    s.rank = d.rank;
    memcpy(s.dims, d.dims, sizeof s.dims);
    if (!wk_broadcast_strides(src, dst->rank, dst->dims, s.strides)) return wk_last_status();
    wk_view *vs[2] = { &d, &s };
    wk_views_coalesce(2, vs);
    return dev->be->copy(dev->ctx, &d, &s);
}

static wk_status const_set_impl(wk_tensor *dst, double value)
{
    if (!WK_CHECK_T(dst)) return wk_last_status();
    wk_device *dev = dst->st->dev;
    if (!wk_check_supported(dev, WK_OP_CONST_SET, dst->dtype)) return wk_last_status();
    if (wk_view_overlaps(dst->rank, dst->dims, dst->strides))
        return wk_error(WK_ERR_SHAPE, "destination has overlapping elements (a broadcast view)");
    if (wk_numel(dst->rank, dst->dims) == 0) return WK_OK;
    unsigned char buf[8];
    wk_scalar_to_bytes(value, dst->dtype, buf);
    wk_view d = wk_view_of(dst);
    wk_view *vs[1] = { &d };
    wk_views_coalesce(1, vs);
    return dev->be->const_set(dev->ctx, &d, buf);
}

wk_status wk_const_set(wk_tensor *dst, double value)
{
    WK_ENTER("const_set");
    wk_status st = const_set_impl(dst, value);
    WK_LEAVE();
    return st;
}

static wk_tensor *filled(wk_device *dev, wk_dtype dt, wk_shape shape, double value)
{
    if (!wk_shape_valid("shape", shape)) return NULL;
    wk_tensor *t = wk_tensor_alloc(dev, dt, shape.rank, shape.dims);
    return t ? wk_finish(const_set_impl(t, value), t) : NULL;
}

wk_tensor *wk_zeros(wk_device *dev, wk_dtype dt, wk_shape shape)
{
    WK_ENTER("zeros");
    wk_tensor *t = filled(dev, dt, shape, 0.0);
    WK_LEAVE();
    return t;
}

wk_tensor *wk_ones(wk_device *dev, wk_dtype dt, wk_shape shape)
{
    WK_ENTER("ones");
    wk_tensor *t = filled(dev, dt, shape, 1.0);
    WK_LEAVE();
    return t;
}

wk_tensor *wk_full(wk_device *dev, wk_dtype dt, wk_shape shape, double value)
{
    WK_ENTER("full");
    wk_tensor *t = filled(dev, dt, shape, value);
    WK_LEAVE();
    return t;
}

static wk_tensor *arange_impl(wk_device *dev, wk_dtype dt, double start, double end, double step)
{
    if (!dev) {
        wk_error(WK_ERR_ARGUMENT, "NULL device");
        return NULL;
    }
    if (!wk_dtype_valid(dt)) {
        wk_error(WK_ERR_DTYPE, "invalid dtype %d", (int)dt);
        return NULL;
    }
    if (!isfinite(start) || !isfinite(end) || !isfinite(step) || step == 0) {
        wk_error(WK_ERR_ARGUMENT, "start %g, end %g, step %g: need finite values and a non-zero step", start, end, step);
        return NULL;
    }
    double count = ceil((end - start) / step);
    if (count < 0) count = 0;
    if (count > 1e15) {
        wk_error(WK_ERR_MEMORY, "arange of %g elements", count);
        return NULL;
    }
    int64_t n = (int64_t)count;
    size_t sz = wk_dtype_size(dt);
    unsigned char *host = malloc(n ? (size_t)n * sz : 1);
    if (!host) {
        wk_error(WK_ERR_MEMORY, "out of memory for %lld elements", (long long)n);
        return NULL;
    }
    for (int64_t i = 0; i < n; i++) wk_scalar_to_bytes(start + (double)i * step, dt, host + (size_t)i * sz);
    wk_tensor *t = wk_from_host(dev, dt, WK_SHAPE(n), host);
    free(host);
    return t;
}

wk_tensor *wk_arange(wk_device *dev, wk_dtype dt, double start, double end, double step)
{
    WK_ENTER("arange");
    wk_tensor *t = arange_impl(dev, dt, start, end, step);
    WK_LEAVE();
    return t;
}

static wk_status copy_into_impl(wk_tensor *dst, const wk_tensor *src)
{
    const wk_tensor *ts[2] = { dst, src };
    static const char *const names[2] = { "dst", "src" };
    if (!wk_check_tensors(2, ts, names)) return wk_last_status();
    if (wk_view_overlaps(dst->rank, dst->dims, dst->strides))
        return wk_error(WK_ERR_SHAPE, "destination has overlapping elements (a broadcast view)");
    int64_t strides[WK_MAX_RANK];
    if (!wk_broadcast_strides(src, dst->rank, dst->dims, strides)) return wk_last_status();
    if (src->st == dst->st && wk_numel(dst->rank, dst->dims) > 0) {
        /* src may alias dst: read it whole before writing */
        wk_tensor *tmp = wk_copy(src);
        if (!tmp) return wk_last_status();
        wk_status st = wk_copy_raw(dst, tmp);
        wk_release(tmp);
        return st;
    }
    return wk_copy_raw(dst, src);
}

wk_status wk_copy_into(wk_tensor *dst, const wk_tensor *src)
{
    WK_ENTER("copy_into");
    wk_status st = copy_into_impl(dst, src);
    WK_LEAVE();
    return st;
}

static wk_status copy2d_impl(wk_tensor *dst, const wk_tensor *src, int64_t rows, int64_t cols, int64_t ss,
                             int64_t ds, int64_t so, int64_t dof)
{
    const wk_tensor *ts[2] = { dst, src };
    static const char *const names[2] = { "dst", "src" };
    if (!wk_check_tensors(2, ts, names)) return wk_last_status();
    if (dst->dtype != src->dtype)
        return wk_error(WK_ERR_DTYPE, "dst is %s, src is %s", wk_dtype_name(dst->dtype), wk_dtype_name(src->dtype));
    if (rows < 0 || cols < 0 || ss < 0 || ds < 0 || so < 0 || dof < 0)
        return wk_error(WK_ERR_ARGUMENT, "negative rows %lld, cols %lld, strides or offsets", (long long)rows, (long long)cols);
    if (rows == 0 || cols == 0) return WK_OK;
    int64_t sz = (int64_t)wk_dtype_size(src->dtype);
    int64_t s_need, d_need;
    if (__builtin_mul_overflow(rows - 1, ss, &s_need) || __builtin_add_overflow(s_need, so, &s_need) ||
        __builtin_add_overflow(s_need, cols, &s_need) || __builtin_mul_overflow(rows - 1, ds, &d_need) ||
        __builtin_add_overflow(d_need, dof, &d_need) || __builtin_add_overflow(d_need, cols, &d_need))
        return wk_error(WK_ERR_INDEX, "rows, strides and offsets overflow");
    if (s_need > (int64_t)src->st->bytes / sz)
        return wk_error(WK_ERR_INDEX, "src storage has %lld elements, the copy reads up to %lld",
                        (long long)(src->st->bytes / sz), (long long)s_need);
    if (d_need > (int64_t)dst->st->bytes / sz)
        return wk_error(WK_ERR_INDEX, "dst storage has %lld elements, the copy writes up to %lld",
                        (long long)(dst->st->bytes / sz), (long long)d_need);
    if (ds < cols && rows > 1)
        return wk_error(WK_ERR_SHAPE, "dst stride %lld < cols %lld: rows would overlap", (long long)ds, (long long)cols);
    wk_device *dev = dst->st->dev;
    if (!wk_check_supported(dev, WK_OP_COPY2D, src->dtype)) return wk_last_status();
    return dev->be->copy2d(dev->ctx, dst->st->ptr, src->st->ptr, src->dtype, rows, cols, ds, ss, dof, so);
}

wk_status wk_copy2d(wk_tensor *dst, const wk_tensor *src, int64_t rows, int64_t cols, int64_t src_stride,
                    int64_t dst_stride, int64_t src_offset, int64_t dst_offset)
{
    WK_ENTER("copy2d");
    wk_status st = copy2d_impl(dst, src, rows, cols, src_stride, dst_stride, src_offset, dst_offset);
    WK_LEAVE();
    return st;
}
